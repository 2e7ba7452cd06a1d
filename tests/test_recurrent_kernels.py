"""The LSTM sequence's time loop by the numba kernel (irexec/kernels/recurrent_loops.py): against
the numpy steps (the same float64 gates from float32 weights and states; only the recurrent
product's order of additions differs, so equal or a float32 unit apart), against the float64
reference of tests/test_ops_recurrent.py (states rounded to float32 every step), and against
OpenVINO on IR with the weights as constants (the packed weights remembered by identity). Also
which cases stay on the numpy steps."""

from __future__ import annotations

import numpy as np
import pytest

import irexec
from irexec import config
from irexec.ops.single import run_op
from tests import test_ops_recurrent as tr
from tests.support import ovcheck as oc

pytest.importorskip("numba")


@pytest.fixture
def ran(monkeypatch):
    """The calls of the kernel, counted."""
    from irexec.kernels import recurrent_loops

    calls = []
    real = recurrent_loops.lstm_steps
    monkeypatch.setattr(recurrent_loops, "lstm_steps", lambda *a: calls.append(a[0].shape) or real(*a))
    return calls


def _lstm(x, h, c, w, r, b, direction, clip=0.0, acts=None, lens=None):
    batch, steps = x.shape[:2]
    lens = np.full(batch, steps, np.int32) if lens is None else lens
    kw = {} if acts is None else {"activations": ",".join(acts)}
    return run_op(
        "LSTMSequence",
        "opset5",
        [x, h, c, lens, w, r, b],
        n_outputs=3,
        hidden_size=r.shape[2],
        direction=direction,
        clip=clip,
        **kw,
    )


CASES = [
    # batch, steps, input, hidden, direction, clip
    (1, 9, 3, 5, "forward", 0.0),  # 20 gate rows: one part panel
    (3, 7, 4, 40, "reverse", 0.0),  # 160: two panels and a part one
    (2, 6, 8, 16, "bidirectional", 0.0),  # 64: one whole panel
    (2, 5, 3, 24, "forward", 0.4),
]


@pytest.mark.parametrize("batch,steps,i,n,direction,clip", CASES)
def test_kernel_against_numpy_steps_and_reference(monkeypatch, ran, batch, steps, i, n, direction, clip):
    dirs = 2 if direction == "bidirectional" else 1
    w, r, b = tr.weights("lstm", n, i, dirs)
    r *= 0.5  # contracting: a float64 unit of difference is not amplified over the steps
    x, h, c = tr.rnd(batch, steps, i, scale=2), tr.rnd(batch, dirs, n), tr.rnd(batch, dirs, n)
    monkeypatch.setattr(config, "JIT", "always")
    got = _lstm(x, h, c, w, r, b, direction, clip)
    assert ran == [(batch, steps, 4 * n)] * dirs
    monkeypatch.setattr(config, "JIT", "never")
    want = _lstm(x, h, c, w, r, b, direction, clip)
    assert len(ran) == dirs  # the numpy steps ran
    ref = tr.ref_sequence("lstm", x, h, c, [steps] * batch, w, r, b, direction, clip=clip)
    for g, nw, rf in zip(got, want, ref):
        assert g.dtype == nw.dtype == np.float32 and g.shape == nw.shape
        np.testing.assert_array_max_ulp(g, nw, maxulp=1)
        np.testing.assert_allclose(g, rf, rtol=1e-6, atol=1e-6)


def test_kernel_keeps_nan_and_saturates(monkeypatch, ran):
    """A NaN input reaches the outputs as the numpy steps carry it; huge pre-activations saturate
    the gates (exp overflowing to inf gives a sigmoid of 0) without warnings."""
    n = 4
    w, r, b = tr.weights("lstm", n, 2, 1)
    x = tr.rnd(2, 3, 2) * 1e30
    x[1, 1, 0] = np.nan
    h, c = tr.rnd(2, 1, n), tr.rnd(2, 1, n)
    monkeypatch.setattr(config, "JIT", "always")
    got = _lstm(x, h, c, w, r, b, "forward")
    monkeypatch.setattr(config, "JIT", "never")
    want = _lstm(x, h, c, w, r, b, "forward")
    assert len(ran) == 1
    for g, nw in zip(got, want):
        np.testing.assert_array_equal(np.isnan(g), np.isnan(nw))
        np.testing.assert_array_max_ulp(np.nan_to_num(g), np.nan_to_num(nw), maxulp=1)
    assert np.isnan(got[0][1, 0, 1:]).all() and not np.isnan(got[0][0]).any()


@pytest.mark.parametrize(
    "what",
    ["lengths", "activations", "f16", "f64"],
)
def test_cases_the_kernel_leaves_to_numpy(monkeypatch, ran, what):
    """Masked sequence lengths, other activations and other data types run the numpy steps."""
    n = 6
    w, r, b = tr.weights("lstm", n, 3, 1)
    x, h, c = tr.rnd(2, 4, 3), tr.rnd(2, 1, n), tr.rnd(2, 1, n)
    lens, acts = None, None
    if what == "lengths":
        lens = np.array([4, 2], np.int32)
    elif what == "activations":
        acts = ("tanh", "sigmoid", "relu")
    else:
        dt = np.float16 if what == "f16" else np.float64
        x, h, c, w, r, b = (a.astype(dt) for a in (x, h, c, w, r, b))
    monkeypatch.setattr(config, "JIT", "always")
    got = _lstm(x, h, c, w, r, b, "forward", acts=acts, lens=lens)
    assert ran == []
    monkeypatch.setattr(config, "JIT", "never")
    want = _lstm(x, h, c, w, r, b, "forward", acts=acts, lens=lens)
    for g, nw in zip(got, want):
        np.testing.assert_array_equal(g, nw)


@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_kernel_against_openvino_with_constant_weights(tmp_path, monkeypatch, ran, direction):
    """W, R, B as Const layers, as a converted network holds them (R read-only: its panels are
    packed once and remembered), 60 steps of hidden 70 against OpenVINO's CPU plugin; then the
    same model run twice more packs nothing again."""
    o = tr.ops()
    batch, steps, i, n = 2, 60, 5, 70
    dirs = 2 if direction == "bidirectional" else 1
    x, h, c = oc.param("x", (batch, steps, i)), oc.param("h", (batch, dirs, n)), oc.param("c", (batch, dirs, n))
    lens = o.constant(np.array([steps] * batch, np.int64))
    w, r, b = tr.weights("lstm", n, i, dirs)
    r *= 0.3
    node = tr.seq_node(o, "lstm", x, h, c, lens, w, r, b, n, direction)
    feeds = {"x": tr.rnd(batch, steps, i, scale=2), "h": tr.rnd(batch, dirs, n), "c": tr.rnd(batch, dirs, n)}
    monkeypatch.setattr(config, "JIT", "always")
    got = list(oc.check(tmp_path, [x, h, c], tr.outs_of(node), feeds, rtol=1e-5, atol=2e-6).values())
    assert len(ran) == dirs
    want = tr.ref_sequence("lstm", feeds["x"], feeds["h"], feeds["c"], [steps] * batch, w, r, b, direction)
    for g, wv in zip(got, want):
        np.testing.assert_allclose(g, wv, rtol=1e-6, atol=1e-6)
    from irexec.kernels import recurrent_loops

    packs = []
    real = recurrent_loops.pack
    monkeypatch.setattr(recurrent_loops, "pack", lambda r: packs.append(r.shape) or real(r))
    m = irexec.load(tmp_path / "m.xml")
    for _ in range(2):
        again = list(m.infer(feeds).values())
        for g, a in zip(got, again):
            np.testing.assert_array_equal(g, a)
    assert packs == [(4 * n, n)] * dirs and len(ran) == 3 * dirs
