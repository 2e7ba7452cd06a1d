"""Attention written as separate layers (ONNX exports of BERT-like models): MatMul(q, k) [->
Multiply or Divide by a constant] [-> Add(mask)] -> Softmax -> [Select(IsNaN(p), 0, p)] ->
MatMul(p, v) runs as one step (`irexec.fusion`, `ops.attention.DecomposedAttention`). Checked
against a float64 oracle and against the layers run one by one (`infer(outputs="all")`): within
float32 roundings with the kernels, the same bits without them, and the layers' own values
wherever a row has no key left (NaN, or the guard's zeros) or a large finite mask value hides
every key (each score plus -1e9 rounds to -1e9 in float32: a uniform row)."""

from __future__ import annotations

import numpy as np
import pytest

import irexec
from irexec import config
from irexec.ops.attention import DecomposedAttention
from tests.support.irbuild import Net

B, H, L, S, E = 2, 3, 20, 20, 16


def _model(
    tmp_path, *, scale=None, divide=False, mask=True, guard=False, kt=True, extra_reader=False, axis=-1, mask_shape=None
):
    """A decomposed attention over q (B, H, L, E), k (B, H, E, S) (kt) or (B, H, S, E), v (B, H, S,
    E) and an additive mask (B, 1, 1, S) or of mask_shape."""
    n = Net("attn")
    q = n.param("q", "f32", (B, H, L, E))
    k = n.param("k", "f32", (B, H, E, S) if kt else (B, H, S, E))
    v = n.param("v", "f32", (B, H, S, E))
    scores = n.op("MatMul", [q, k], {"transpose_b": str(not kt).lower()}, out_dims=[B, H, L, S])
    if scale is not None:
        c = n.const(np.float32(scale).reshape(1, 1, 1, 1))
        scores = n.op("Divide" if divide else "Multiply", [scores, c], out_dims=[B, H, L, S])
    if mask:
        m = n.param("mask", "f32", mask_shape or (B, 1, 1, S))
        scores = n.op("Add", [m, scores], out_dims=[B, H, L, S])  # the mask first: either order
    p = n.op("SoftMax", [scores], {"axis": str(axis)}, version="opset8", out_dims=[B, H, L, S])
    if extra_reader:
        n.result(p, "probabilities")
    if guard:
        nan = n.op("IsNaN", [p], version="opset10", out_et="boolean", out_dims=[B, H, L, S])
        p = n.op("Select", [nan, n.const(np.zeros(1, np.float32)), p], out_dims=[B, H, L, S])
    n.result(n.op("MatMul", [p, v], out_dims=[B, H, L, E]), "y")
    return irexec.load(n.save(tmp_path / "attn.xml"))


def _feeds(seed=0, mask_value=-np.inf, hide_all=False):
    rng = np.random.default_rng(seed)
    feeds = {
        "q": rng.standard_normal((B, H, L, E)).astype(np.float32),
        "k": rng.standard_normal((B, H, E, S)).astype(np.float32),
        "v": rng.standard_normal((B, H, S, E)).astype(np.float32),
        "mask": np.zeros((B, 1, 1, S), np.float32),
    }
    feeds["mask"][0, ..., 13:] = mask_value  # padding: the first item keeps its first 13 keys
    if hide_all:
        feeds["mask"][1] = mask_value  # the second keeps none
    return feeds


def _oracle(feeds, scale, divide, mask, kt):
    """float64 attention of the float32 inputs."""
    q = feeds["q"].astype(np.float64)
    k = feeds["k"].astype(np.float64)
    s = q @ (k if kt else np.swapaxes(k, -1, -2))
    if scale is not None:
        s = s / scale if divide else s * scale
    if mask:
        s = s + feeds["mask"].astype(np.float64)
    with np.errstate(invalid="ignore"):  # a row hiding every key: NaN
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
    return p @ feeds["v"].astype(np.float64)


def _fused(m) -> list:
    return [s.op for s in m._plan.run_steps if isinstance(s.op, DecomposedAttention)]


@pytest.fixture(params=["never", "always"])
def jit_mode(request, monkeypatch):
    monkeypatch.setattr(config, "JIT", request.param)
    monkeypatch.setattr(config, "SMALL_ELEMENTS", 0)
    return request.param


@pytest.fixture
def kernel_calls(monkeypatch):
    """Whether each call of the fused step's kernel answered (not None)."""
    from irexec.ops import attention as module

    calls: list[bool] = []
    real = module.decomposed_attention

    def spy(*args):
        y = real(*args)
        calls.append(y is not None)
        return y

    monkeypatch.setattr(module, "decomposed_attention", spy)
    return calls


@pytest.mark.parametrize(
    "scale,divide,mask,guard,kt",
    [
        (None, False, True, True, True),  # bert_onnx: q and k scaled before, the NaN guard
        (8.0, True, True, False, True),  # BERT's Div by sqrt(64)
        (0.17677669, False, False, False, True),  # no mask, 1/sqrt(32) rounded to float32
        (3.0, True, True, True, False),  # a quotient that rounds; k (.., S, E) by transpose_b
    ],
)
def test_decomposed_attention_is_fused_and_matches(tmp_path, jit_mode, kernel_calls, scale, divide, mask, guard, kt):
    m = _model(tmp_path, scale=scale, divide=divide, mask=mask, guard=guard, kt=kt)
    (op,) = _fused(m)
    assert len(m._plan.run_steps) == len(m._plan.steps) - (3 + (scale is not None) + mask + 2 * guard) + 1
    feeds = _feeds()
    if not kt:
        feeds["k"] = np.ascontiguousarray(np.swapaxes(feeds["k"], -1, -2))
    if not mask:
        del feeds["mask"]
    got = m.infer(feeds)["y"]
    layers = m.infer(feeds, outputs="all")["y"]
    assert kernel_calls == ([True] if jit_mode == "always" else [False])
    if jit_mode == "never":  # the layers themselves
        np.testing.assert_array_equal(got, layers)
    want = _oracle({**feeds, "k": feeds["k"] if kt else np.swapaxes(feeds["k"], -1, -2)}, scale, divide, mask, True)
    # float32 scores (E = 16 products) then a softmax: a few ulps of the scores' size, and
    # probabilities within float32 rounding, weighing values of size ~3
    for y in (got, layers):
        np.testing.assert_allclose(y, want, rtol=0, atol=2e-6)
    np.testing.assert_allclose(got, layers, rtol=0, atol=2e-6)


@pytest.mark.parametrize("shape", [(1, 1, L, S), (B, H, L, S), (L, 1)])
def test_masks_of_every_row_and_scattered_hidden_keys(tmp_path, jit_mode, kernel_calls, shape):
    """Masks per query row, per head, or per query broadcast over the keys, hiding keys here and
    there (-inf) and adding finite values elsewhere: the layers' values within float32
    roundings, the oracle's too."""
    m = _model(tmp_path, scale=0.25, mask_shape=shape)
    feeds = _feeds(3)
    rng = np.random.default_rng(5)
    feeds["mask"] = rng.standard_normal(shape).astype(np.float32)
    feeds["mask"][rng.random(shape) < 0.3] = -np.inf
    if shape[-1] == S:
        feeds["mask"][..., 0] = 0.0  # every row keeps a key
    got = m.infer(feeds)["y"]
    layers = m.infer(feeds, outputs="all")["y"]
    assert kernel_calls == ([True] if jit_mode == "always" else [False])
    want = _oracle(feeds, 0.25, False, True, True)
    want[np.isnan(layers)] = np.nan  # a row (L, 1) hides whole: NaN in both
    np.testing.assert_allclose(layers, want, rtol=0, atol=2e-6)
    np.testing.assert_allclose(got, layers, rtol=0, atol=2e-6)


def test_a_mask_that_widens_the_scores_runs_the_layers(tmp_path, jit_mode, kernel_calls):
    """A mask with batch items of its own (the scores' batch is 1) widens the Add's result: the
    layers broadcast it, and the fused step runs them."""
    n = Net("wide")
    q = n.param("q", "f32", (1, H, L, E))
    k = n.param("k", "f32", (1, H, E, S))
    v = n.param("v", "f32", (1, H, S, E))
    mask = n.param("mask", "f32", (B, 1, 1, S))
    scores = n.op("Add", [n.op("MatMul", [q, k], out_dims=[1, H, L, S]), mask], out_dims=[B, H, L, S])
    p = n.op("SoftMax", [scores], {"axis": "3"}, version="opset8", out_dims=[B, H, L, S])
    n.result(n.op("MatMul", [p, v], out_dims=[B, H, L, E]), "y")
    m = irexec.load(n.save(tmp_path / "wide.xml"))
    assert _fused(m)
    feeds = {name: value[:1] for name, value in _feeds(4).items() if name != "mask"}
    feeds["mask"] = _feeds(4)["mask"]
    got = m.infer(feeds)["y"]
    np.testing.assert_array_equal(got, m.infer(feeds, outputs="all")["y"])
    assert got.shape == (B, H, L, E) and kernel_calls == [False]


@pytest.mark.parametrize("guard", [True, False])
def test_a_row_without_keys_gives_the_layers_values(tmp_path, jit_mode, kernel_calls, guard):
    """The second batch item's mask hides every key: its softmax rows are NaN, which the guard
    turns into zeros; the fused step gives the layers' values, NaN or zeros, for the whole
    result, and the kernel's values where it ran."""
    m = _model(tmp_path, scale=4.0, divide=True, guard=guard)
    feeds = _feeds(1, hide_all=True)
    got = m.infer(feeds)["y"]
    layers = m.infer(feeds, outputs="all")["y"]
    np.testing.assert_array_equal(got, layers)  # the kernel's result had a NaN: the layers ran
    if guard:
        assert not np.isnan(got).any() and not got[1].any()
    else:
        assert np.isnan(got[1]).all() and not np.isnan(got[0]).any()
    assert kernel_calls == ([True] if jit_mode == "always" else [False])


@pytest.mark.parametrize("value", [-1e9, np.finfo(np.float32).min])
def test_a_large_mask_hiding_every_key_gives_uniform_rows(tmp_path, jit_mode, kernel_calls, value):
    """Exports mask with a large finite value (-1e9, -10000, float32's lowest): every score
    plus -1e9 rounds to -1e9 in float32, so a row whose keys are all hidden is uniform (the mean
    of the values), as the layers compute it, not the softmax of the scores that a float64 sum
    would keep."""
    m = _model(tmp_path, scale=8.0, divide=True)
    feeds = _feeds(2, mask_value=value, hide_all=True)
    got = m.infer(feeds)["y"]
    layers = m.infer(feeds, outputs="all")["y"]
    mean = feeds["v"][1].astype(np.float64).mean(axis=-2, keepdims=True)
    np.testing.assert_allclose(layers[1], np.broadcast_to(mean, layers[1].shape), rtol=0, atol=1e-6)
    np.testing.assert_allclose(got[1], layers[1], rtol=0, atol=1e-6)
    np.testing.assert_allclose(got[0], layers[0], rtol=0, atol=2e-6)
    assert kernel_calls == ([True] if jit_mode == "always" else [False])


def test_what_is_not_the_pattern_stays_layers(tmp_path):
    """Probabilities that are also an output, and a softmax over another axis, are not fused."""
    assert not _fused(_model(tmp_path, extra_reader=True))
    assert not _fused(_model(tmp_path, axis=2))
