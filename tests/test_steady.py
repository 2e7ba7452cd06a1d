"""Steady calls (`Op.steady`, `jit.one_call`, `blas.product_call`): once a layer has seen one
operand signature twice in a row, it calls its kernel or its product straight away. Each must
give the bits the usual path gives, step aside for a new signature, for a thread that forces or
records the paths, and for operands whose layout or values the decision did not cover."""

from __future__ import annotations

import numpy as np
import pytest

import irexec
from irexec import config
from irexec.kernels import jit
from tests.support.irbuild import Net

pytest.importorskip("numba")

R = np.random.default_rng(11)
D, H = 32, 48


@pytest.fixture
def kernels(monkeypatch):
    monkeypatch.setattr(config, "JIT", "always")


W1 = R.standard_normal((D, H)).astype(np.float32)
BIAS = R.standard_normal(H).astype(np.float32)
W2 = R.standard_normal((D, H)).astype(np.float32)


def _model(tmp_path) -> irexec.Model:
    """LayerNorm, products (plain, transposed, of merged single rows), a bias, activations with
    and without an extra input, Erf, Softmax and Power over a (1, L, 32) input of any L."""
    n = Net("steady")
    x = n.param("x", "f32", (1, None, D))
    ln = dict(normalize_variance="true", eps=1e-5, eps_mode="inside_sqrt")
    m = n.op("MVN", [x, n.const(np.array([-1], np.int64))], ln, version="opset6")
    n.result(m, "mvn")
    h = n.op("Add", [n.op("MatMul", [m, n.const(W1)]), n.const(BIAS)])
    n.result(n.op("Gelu", [h], dict(approximation_mode="ERF"), version="opset7"), "gelu")
    n.result(n.op("Swish", [h, n.const(np.array(1.5, np.float32))], version="opset4"), "swish")
    n.result(n.op("Sigmoid", [h]), "sigmoid")
    n.result(n.op("Erf", [h]), "erf")
    n.result(n.op("Softmax", [h], dict(axis=-1), version="opset8"), "softmax")
    n.result(n.op("Power", [h, n.const(np.array(2.0, np.float32))]), "power")
    n.result(n.op("MatMul", [x, x], dict(transpose_b="true")), "gram")
    rows = n.op("Reshape", [m, n.const(np.array([-1, 1, D], np.int64))], dict(special_zero="false"))
    n.result(n.op("MatMul", [rows, n.const(W2)]), "rows")
    return irexec.load(n.save(tmp_path / "steady.xml"))


def _same_bits_again(m, feed: dict, calls: int) -> dict:
    """The first call's results (the usual paths) against `calls` more (the steady calls once
    the signature repeats): the same types and bits. Returns the last call's."""
    first = m.infer(feed)
    for _ in range(calls):
        again = m.infer(feed)
        for name, want in first.items():
            assert again[name].dtype == want.dtype, name
            np.testing.assert_array_equal(again[name], want, err_msg=name)
    return again


def _steady_layers(m) -> int:
    return sum(1 for s in m._plan.steps if s.op is not None and getattr(s.op, "_steady", None) is not None)


def test_steady_calls_give_the_usual_paths_bits(kernels, tmp_path):
    m = _model(tmp_path)
    x = R.standard_normal((1, 20, D)).astype(np.float32)
    first = m.infer({"x": x})  # the usual paths
    assert _steady_layers(m) == 0
    m.infer({"x": x})  # the signature seen twice: the steady calls are made
    assert _steady_layers(m) >= 10
    for _ in range(2):
        again = m.infer({"x": x})
        for name, want in first.items():
            assert again[name].dtype == want.dtype, name
            np.testing.assert_array_equal(again[name], want, err_msg=name)
    # and against float64: the LayerNorm and the products
    x64 = x.astype(np.float64)
    norm = (x64 - x64.mean(-1, keepdims=True)) / np.sqrt(x64.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(again["mvn"], norm, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(again["gram"], x64 @ x64.transpose(0, 2, 1), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(again["rows"], norm.reshape(-1, 1, D) @ W2, rtol=1e-4, atol=1e-4)


def test_a_new_signature_takes_the_usual_path_again(kernels, tmp_path):
    m = _model(tmp_path)
    a = R.standard_normal((1, 24, D)).astype(np.float32)
    b = R.standard_normal((1, 5, D)).astype(np.float32)
    want_a, want_b = m.infer({"x": a}), irexec.load(m.path).infer({"x": b})
    for _ in range(3):
        m.infer({"x": a})
    got_b = m.infer({"x": b})  # every layer's steady call is for (1, 24, 32)
    got_a = m.infer({"x": a})
    for name in want_a:
        np.testing.assert_array_equal(got_a[name], want_a[name], err_msg=name)
        np.testing.assert_array_equal(got_b[name], want_b[name], err_msg=name)


def test_forced_and_recorded_paths_bypass_the_steady_calls(kernels, tmp_path):
    m = _model(tmp_path)
    x = R.standard_normal((1, 16, D)).astype(np.float32)
    for _ in range(3):
        m.infer({"x": x})
    assert _steady_layers(m) >= 9
    with jit.recording() as log:
        m.infer({"x": x})
    assert log and all(path == "numba" for _, path in log)  # asked, not skipped by the steady calls
    with jit.forced(False), jit.recording() as log:
        numpy_path = m.infer({"x": x})
    assert log and all(path == "numpy" for _, path in log)
    kernel_path = m.infer({"x": x})
    for name in kernel_path:
        np.testing.assert_allclose(numpy_path[name], kernel_path[name], rtol=2e-6, atol=2e-6, err_msg=name)


def test_merged_rows_step_aside_for_a_strided_operand(kernels, tmp_path):
    """A product that merges a's rows decided so on a contiguous a; a strided a of the same shape
    (a feed that is a transposed view) takes the batched product instead of a copy."""
    n = Net("rows")
    a = n.param("a", "f32", (24, 1, D))
    w = R.standard_normal((D, H)).astype(np.float32)
    n.result(n.op("MatMul", [a, n.const(w)]), "y")
    m = irexec.load(n.save(tmp_path / "rows.xml"))
    x = R.standard_normal((24, 1, D)).astype(np.float32)
    for _ in range(3):
        want = m.infer({"a": x})["y"]
    strided = np.lib.stride_tricks.as_strided(
        np.repeat(x, 2, axis=0), shape=x.shape, strides=(2 * x.strides[0],) + x.strides[1:]
    )
    np.testing.assert_array_equal(strided, x)
    got = m.infer({"a": strided})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(got, x.astype(np.float64) @ w, rtol=1e-5, atol=1e-4)


def test_integer_power_keeps_its_type_when_the_exponent_turns_negative(tmp_path):
    """Power's integer result type depends on the exponents' signs (C's truncated 1/x for a
    negative one): it never takes a steady call."""
    n = Net("power")
    a, b = n.param("a", "i32", (4,)), n.param("b", "i32", (4,))
    n.result(n.op("Power", [a, b]), "y")
    m = irexec.load(n.save(tmp_path / "power.xml"))
    base = np.array([2, -3, 1, 5], np.int32)
    for _ in range(3):
        y = m.infer({"a": base, "b": np.array([2, 3, 0, 1], np.int32)})["y"]
    np.testing.assert_array_equal(y, [4, -27, 1, 5])
    y = m.infer({"a": base, "b": np.array([-1, -1, -2, 2], np.int32)})["y"]
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, [0, 0, 1, 25])


def _sdpa_ref(q, k, v, mask, causal):
    s = q.astype(np.float64) @ k.astype(np.float64).swapaxes(-1, -2) / np.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    elif mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == np.bool_ else s + mask
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v.astype(np.float64)


def _padding(length: int, kept: list[int]) -> np.ndarray:
    return (np.arange(length)[None, :] < np.array(kept)[:, None])[:, None, None, :].repeat(length, axis=2)


MASKS = {
    "none": None,
    "causal": None,
    "padding": lambda n: _padding(n, [n - 3, n]),  # each row keeps a prefix of the keys
    "holes": lambda n: R.random((2, 1, n, n)) < 0.7,  # not prefixes: the rows do not take it
    "float": lambda n: R.standard_normal((2, 2, n, n)).astype(np.float32),
    "zero": lambda n: np.zeros((), np.float32),  # one zero adds nothing: no mask
}


@pytest.mark.parametrize("case", list(MASKS))
def test_attention_steady_calls_give_the_usual_paths_bits(kernels, tmp_path, case):
    length, e = 24, 16
    n = Net("sdpa")
    q, k, v = (n.param(name, "f32", (2, 2, None, e)) for name in "qkv")
    make = MASKS[case]
    mask = None if make is None else make(length)
    ins = [q, k, v]
    if mask is not None:
        et = "boolean" if mask.dtype == np.bool_ else "f32"
        ins.append(n.param("mask", et, tuple(None if d == length else d for d in mask.shape)))
    attrs = dict(causal="true" if case == "causal" else "false")
    n.result(n.op("ScaledDotProductAttention", ins, attrs, version="opset13"), "y")
    m = irexec.load(n.save(tmp_path / "sdpa.xml"))
    feeds = {name: R.standard_normal((2, 2, length, e)).astype(np.float32) for name in "qkv"}
    if mask is not None:
        feeds["mask"] = mask
    first = m.infer(feeds)["y"]
    for _ in range(3):
        np.testing.assert_array_equal(m.infer(feeds)["y"], first)
    if case in ("none", "causal", "padding", "float", "zero"):
        sdpa = next(s.op for s in m._plan.steps if s.op is not None and s.op.TYPE == "ScaledDotProductAttention")
        assert sdpa._steady[1] is not None
    ref_mask = None if mask is None or case == "zero" else mask
    want = _sdpa_ref(feeds["q"], feeds["k"], feeds["v"], ref_mask, case == "causal")
    np.testing.assert_allclose(first, want, rtol=2e-5, atol=2e-6)
    if case == "float":  # the same shapes, another mask: prepared again, not the first one's rows
        feeds["mask"] = make(length)
        want = _sdpa_ref(feeds["q"], feeds["k"], feeds["v"], feeds["mask"], False)
        np.testing.assert_allclose(m.infer(feeds)["y"], want, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("case", ["mask", "no mask", "divide", "hidden rows"])
def test_decomposed_attention_steady_calls_give_the_usual_paths_bits(kernels, tmp_path, case):
    from tests import test_attention_fusion as fusion

    scale = 8.0 if case == "divide" else 0.25
    m = fusion._model(tmp_path, scale=scale, divide=case == "divide", mask=case != "no mask")
    (op,) = fusion._fused(m)
    feeds = fusion._feeds(hide_all=case == "hidden rows")
    if case == "no mask":
        del feeds["mask"]
    first = m.infer(feeds)["y"]
    for _ in range(3):
        np.testing.assert_array_equal(m.infer(feeds)["y"], first)
    assert op._steady[1] is not None
    want = fusion._oracle(feeds, scale, case == "divide", case != "no mask", True)
    if case == "hidden rows":  # the layers' NaN where a row keeps no key, from the steady call too
        assert np.isnan(first[1]).all() and not np.isnan(first[0]).any()
        first, want = first[0], want[0]
    np.testing.assert_allclose(first, want, rtol=0, atol=2e-6)


def _conv_ref(x, w, stride=1, pad=0, groups=1):
    """float64 convolution, NCHW, square kernels."""
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    co, cg, k, _ = w.shape
    oh, ow = (h - k) // stride + 1, (wd - k) // stride + 1
    out = np.zeros((n, co, oh, ow))
    per = co // groups
    for o in range(co):
        g = o // per
        for i in range(k):
            for j in range(k):
                patch = x[:, g * cg : (g + 1) * cg, i : i + stride * oh : stride, j : j + stride * ow : stride]
                out[:, o] += np.einsum("nchw,c->nhw", patch, w[o, :, i, j].astype(np.float64))
    return out


@pytest.mark.parametrize("wide", [False, True], ids=["8-float vectors", "16-float vectors"])
def test_convolution_steady_calls_give_the_usual_paths_bits(kernels, tmp_path, monkeypatch, wide):
    """Pointwise products (on BLAS where vectors hold 8 floats, as `convolution` runs them),
    strided pointwise, dense 3x3 register tiles, depthwise and grouped convolutions."""
    monkeypatch.setattr(jit, "wide_vectors", lambda: wide)
    w1 = R.standard_normal((16, 8, 1, 1)).astype(np.float32)
    w2 = R.standard_normal((16, 16, 1, 1)).astype(np.float32)
    w3 = R.standard_normal((16, 16, 3, 3)).astype(np.float32)
    wd = R.standard_normal((16, 1, 1, 3, 3)).astype(np.float32)
    wg = R.standard_normal((4, 4, 4, 3, 3)).astype(np.float32)
    n = Net("conv")
    x = n.param("x", "f32", (1, 8, None, None))

    def conv(src, w, stride, pad, kind="Convolution"):
        attrs = dict(strides=f"{stride},{stride}", dilations="1,1", pads_begin=f"{pad},{pad}", pads_end=f"{pad},{pad}")
        return n.op(kind, [src, n.const(w)], attrs)

    a = conv(x, w1, 1, 0)
    b = conv(a, w2, 2, 0)
    c = conv(b, w3, 1, 1)
    d = conv(c, wd, 1, 1, "GroupConvolution")
    e = conv(d, wg, 1, 1, "GroupConvolution")
    for ref, name in ((a, "a"), (b, "b"), (c, "c"), (d, "d"), (e, "e")):
        n.result(ref, name)
    m = irexec.load(n.save(tmp_path / "conv.xml"))
    feed = {"x": R.standard_normal((1, 8, 30, 30)).astype(np.float32)}
    again = _same_bits_again(m, feed, 3)
    convs = [s.op for s in m._plan.steps if s.op is not None and "Convolution" in s.op.TYPE]
    steady = [op._steady is not None and op._steady[1] is not None for op in convs]
    # every path here is one a steady call takes, but the pointwise products where the
    # register tiles run them (16-float vectors)
    assert steady == ([False, False, True, True, True] if wide else [True] * 5)
    want = _conv_ref(feed["x"], w1)
    want = _conv_ref(want, w2, stride=2)
    np.testing.assert_allclose(again["b"], want, rtol=1e-4, atol=1e-4)
    want = _conv_ref(want, w3, pad=1)
    np.testing.assert_allclose(again["c"], want, rtol=1e-4, atol=1e-3)
    want = _conv_ref(want, wd.reshape(16, 1, 3, 3), pad=1, groups=16)
    np.testing.assert_allclose(again["d"], want, rtol=1e-4, atol=1e-3)
    want = _conv_ref(want, wg.reshape(16, 4, 3, 3), pad=1, groups=4)
    np.testing.assert_allclose(again["e"], want, rtol=1e-4, atol=5e-3)
    # another size: the usual paths again, then steady calls for it
    other = {"x": R.standard_normal((1, 8, 18, 22)).astype(np.float32)}
    fresh = irexec.load(m.path).infer(other)
    for _ in range(3):
        got = m.infer(other)
        for name, want in fresh.items():
            np.testing.assert_array_equal(got[name], want, err_msg=name)


def test_a_call_that_could_not_be_made_yet_is_asked_again(kernels, tmp_path, monkeypatch):
    """A convolution seen twice while the kernels were off (loading, or forced off) keeps its
    usual path, and makes its steady call a few calls after they are on."""
    monkeypatch.setattr(jit, "wide_vectors", lambda: False)
    w = R.standard_normal((8, 8, 3, 3)).astype(np.float32)
    n = Net("late")
    x = n.param("x", "f32", (1, 8, 12, 12))
    attrs = dict(strides="1,1", dilations="1,1", pads_begin="1,1", pads_end="1,1")
    n.result(n.op("Convolution", [x, n.const(w)], attrs), "y")
    m = irexec.load(n.save(tmp_path / "late.xml"))
    (conv,) = [s.op for s in m._plan.steps if s.op is not None and s.op.TYPE == "Convolution"]
    feed = {"x": R.standard_normal((1, 8, 12, 12)).astype(np.float32)}
    with jit.forced(False):
        for _ in range(2):
            m.infer(feed)
    assert conv._steady[1] is None
    want = irexec.load(m.path).infer(feed)["y"]  # the kernels' path
    for _ in range(4):
        got = m.infer(feed)["y"]
    assert conv._steady[1] is not None
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, _conv_ref(feed["x"], w, pad=1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("wide", [False, True], ids=["8-float vectors", "16-float vectors"])
def test_relu_after_steady_calls_give_the_usual_paths_bits(kernels, tmp_path, monkeypatch, wide):
    """A ReLU or a clip fused after a convolution (pointwise, 3x3) or an Add: the in-place kernel
    call kept once the producer's own pass cannot take it; where it can (the pointwise register
    tiles on 16-float vectors), that pass keeps running."""
    monkeypatch.setattr(jit, "wide_vectors", lambda: wide)
    w1 = R.standard_normal((16, 8, 1, 1)).astype(np.float32)
    w3 = R.standard_normal((16, 16, 3, 3)).astype(np.float32)
    n = Net("relu")
    x = n.param("x", "f32", (1, 8, 24, 24))
    attrs = dict(strides="1,1", dilations="1,1", pads_begin="0,0", pads_end="0,0")
    a = n.op("ReLU", [n.op("Convolution", [x, n.const(w1)], attrs)])
    attrs3 = dict(attrs, pads_begin="1,1", pads_end="1,1")
    b = n.op("Clamp", [n.op("Convolution", [a, n.const(w3)], attrs3)], dict(min="0", max="6"))
    c = n.op("ReLU", [n.op("Add", [a, b])])
    for ref, name in ((a, "a"), (b, "b"), (c, "c")):
        n.result(ref, name)
    m = irexec.load(n.save(tmp_path / "relu.xml"))
    fused = [s.op for s in m._plan.run_steps if s.op is not None and s.op.TYPE == "ReLU after"]
    assert len(fused) == 3
    feed = {"x": R.standard_normal((1, 8, 24, 24)).astype(np.float32) * 4}
    again = _same_bits_again(m, feed, 4)
    kept = [op._steady is not None and op._steady[1] is not None for op in fused]
    # 16-float vectors: the pointwise convolution applies its ReLU as it stores (no steady call)
    assert kept == [not wide, True, True]
    assert (again["a"] >= 0).all() and (again["b"] >= 0).all() and (again["b"] <= 6).all()
    np.testing.assert_array_equal(again["c"], np.maximum(again["a"] + again["b"], 0))


def test_reduction_patch_and_gather_steady_calls_give_the_usual_paths_bits(kernels, tmp_path):
    """Reductions (rows, columns, a narrow kept group folded back in the pass, the ONNX form;
    axes that need a transposed copy keep their usual path), ViT's patch embedding and a
    Gather of one index (a copy of the basic index, negative in Gather-8)."""
    wp = R.standard_normal((16, 3, 8, 8)).astype(np.float32)
    n = Net("reduce")
    x = n.param("x", "f32", (1, 3, None, None))

    def reduce(kind, axes, keep="true"):
        version = "opset4" if kind == "ReduceL2" else "opset1"
        return n.op(kind, [x, n.const(np.array(axes, np.int64))], dict(keep_dims=keep), version=version)

    n.result(reduce("ReduceMean", [2, 3]), "pool")
    n.result(reduce("ReduceSum", [-1], "false"), "rows")
    n.result(reduce("ReduceMax", [1]), "columns")
    n.result(reduce("ReduceL2", [2]), "narrow")
    # a long reduced group, a kept one, short rows: a second pass over the first's float64 values
    folded = n.op("Reshape", [x, n.const(np.array([3, 32, -1, 8], np.int64))], dict(special_zero="false"))
    n.result(n.op("ReduceMin", [folded, n.const(np.array([1, 3], np.int64))], dict(keep_dims="true")), "apart")
    onnx = n.op("ReduceMean", [x], dict(axes="1,2", keepdims="0"), version="onnx")
    n.result(onnx, "onnx")
    attrs = dict(strides="8,8", dilations="1,1", pads_begin="0,0", pads_end="0,0")
    n.result(n.op("Convolution", [x, n.const(wp)], attrs), "patches")
    n.result(n.op("Gather", [x, n.const(np.array(2, np.int64)), n.const(np.array(2, np.int64))]), "row")
    g8 = [x, n.const(np.array(-1, np.int32)), n.const(np.array(1, np.int64))]
    n.result(n.op("Gather", g8, dict(batch_dims="0"), version="opset8"), "last")
    m = irexec.load(n.save(tmp_path / "reduce.xml"))
    feed = {"x": R.standard_normal((1, 3, 32, 40)).astype(np.float32)}
    again = _same_bits_again(m, feed, 3)
    kept = {s.op.layer.name: s.op._steady[1] is not None for s in m._plan.steps if s.op._steady is not None}
    assert sorted(name.split("_")[0] for name, made in kept.items() if made) == [
        "Convolution",
        *["ReduceL2", "ReduceMax", "ReduceMean", "ReduceMean", "ReduceSum"],
    ]
    assert [made for name, made in kept.items() if name.startswith("ReduceMin")] == [False]
    x64 = feed["x"].astype(np.float64)
    np.testing.assert_allclose(again["pool"], x64.mean((2, 3), keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(again["rows"], x64.sum(-1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(again["columns"], feed["x"].max(1, keepdims=True))
    np.testing.assert_allclose(again["narrow"], np.sqrt((x64**2).sum(2, keepdims=True)), rtol=1e-6)
    np.testing.assert_array_equal(again["apart"], feed["x"].reshape(3, 32, 5, 8).min((1, 3), keepdims=True))
    np.testing.assert_allclose(again["onnx"], x64.mean((1, 2)), rtol=1e-6)
    patches = x64.reshape(1, 3, 4, 8, 5, 8).transpose(0, 2, 4, 1, 3, 5).reshape(20, -1) @ wp.reshape(16, -1).T
    np.testing.assert_allclose(again["patches"], patches.T.reshape(1, 16, 4, 5), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(again["row"], feed["x"][:, :, 2])
    np.testing.assert_array_equal(again["last"], feed["x"][:, -1])
    assert again["last"].flags.c_contiguous and again["row"].flags.c_contiguous
