"""The element-wise family's float32 kernels (irexec/kernels/elementwise_loops.py) against float64
references over a dense sweep of float32 inputs: every 1031st float32 of [0, 32] with both signs
(the tails where Gelu's erfc underflows included), and the largest values. Each kernel also writes
float64 (the same code, rounded later): its own error is bounded there, and the float32 results
are within one ulp of the reference rounded, equal but for rare near-ties.

References: Cody's erf/erfc of irexec/special.py (within 7 float64 ulps, an independent
approximation), and numpy's float64 exp for the sigmoid forms."""

from __future__ import annotations

import math

import numpy as np
import pytest

from irexec import config, special
from irexec.ops.single import run_op

k = pytest.importorskip("irexec.kernels.elementwise_loops")


def _sweep() -> np.ndarray:
    top = int(np.float32(32.0).view(np.int32))
    pos = np.arange(0, top, 1031, dtype=np.int32).view(np.float32)
    big = np.array([40.0, 100.0, 1e4, 1e20, 3.4e38, 1e-30, 1e-40, 1e-45], np.float32)
    return np.concatenate([pos, big, -pos, -big])


X = _sweep()
X64 = X.astype(np.float64)
TANH_SCALE = 2.0 * math.sqrt(2.0 / math.pi)


def _sigmoid64(s):
    e = np.exp(-np.abs(s))
    return np.where(s >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _refs():
    with np.errstate(all="ignore"):
        return {
            "erf": (special.erf(X64), 1e-11),
            "gelu_erf": (0.5 * X64 * special.erfc(-X64 / math.sqrt(2.0)), 1e-11),
            # the sigmoid forms take a degree-9 exp (normalize_loops.exp_neg_short): its
            # remainder, 0.3466^10 / 10! e^0.3466, is below 1e-11
            "gelu_tanh": (X64 * _sigmoid64(TANH_SCALE * (X64 + 0.044715 * X64**3)), 1e-11),
            "sigmoid": (_sigmoid64(X64), 1e-11),
            "swish": (X64 * _sigmoid64(X64), 1e-11),
        }


REFS = _refs()


def _run(name, out_dtype):
    out = np.empty(X.shape, out_dtype)
    args = (1.0,) if name == "swish" else ()
    getattr(k, name)(0, -(-X.size // k.BLOCK), X, out, *args)
    return out


@pytest.mark.parametrize("name", sorted(REFS))
def test_float64_values_within_the_bound(name):
    """The kernel's value before rounding: relative error below the bound wherever the
    reference is a normal float64 (erfcx's fit: 2.4e-12; the sigmoid forms' degree-9 exp:
    1e-11), and for Gelu's erf mode where its
    fit holds (|x| / sqrt 2 <= 12; beyond, past x = -17, the values are below 1e-60, far below
    float32's smallest)."""
    want, bound = REFS[name]
    got = _run(name, np.float64)
    normal = np.abs(want) > 1e-300
    # where the reference underflows, so does the kernel (below float32's range anyway)
    assert np.all(np.abs(got[~normal]) < 1e-290), name
    if name == "gelu_erf":
        far = X64 < -12.0 * math.sqrt(2.0)
        assert np.all(np.abs(got[far]) < 1e-60)
        normal &= ~far
    rel = np.abs(got[normal] / want[normal] - 1.0)
    worst = int(np.argmax(rel))
    assert rel[worst] <= bound, (name, float(X[normal][worst]), float(rel[worst]))


@pytest.mark.parametrize("name", sorted(REFS))
def test_float32_results_within_one_ulp(name):
    want, _ = REFS[name]
    want32 = want.astype(np.float32)
    got = _run(name, np.float32)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want32), err_msg=name)
    d = np.abs(got.view(np.int32).astype(np.int64) - want32.view(np.int32))
    assert d.max() <= 1, (name, float(X[np.argmax(d)]))
    assert (d == 0).mean() > 0.9999, (name, int((d != 0).sum()))


def test_specials():
    x = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0], np.float32)
    want = {
        "erf": [np.nan, -1.0, 1.0, -0.0, 0.0],
        "gelu_erf": [np.nan, np.nan, np.inf, -0.0, 0.0],
        "gelu_tanh": [np.nan, np.nan, np.inf, -0.0, 0.0],
        "sigmoid": [np.nan, 0.0, 1.0, 0.5, 0.5],
        "swish": [np.nan, np.nan, np.inf, -0.0, 0.0],
    }
    for name, values in want.items():
        out = np.empty_like(x)
        getattr(k, name)(0, 1, x, out, *((1.0,) if name == "swish" else ()))
        np.testing.assert_array_equal(out, np.float32(values), err_msg=name)
        zero = np.float32(values) == 0
        np.testing.assert_array_equal(np.signbit(out[zero]), np.signbit(np.float32(values)[zero]), err_msg=name)


@pytest.fixture
def kernels(monkeypatch):
    monkeypatch.setattr(config, "JIT", "always")


@pytest.mark.parametrize(
    "op,version,attrs",
    [("Gelu", "opset7", {"approximation_mode": "tanh"}), ("Sigmoid", "opset1", {})],
)
def test_ops_take_the_kernel_and_match_the_numpy_path(kernels, op, version, attrs):
    """Gelu's tanh mode and Sigmoid run the kernels once loaded: equal to the numpy path's
    float64 formula rounded once but for rare near-ties, never more than one ulp. (Erf and
    Gelu's erf mode compute in float32: below.)"""
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.standard_normal(100_000) * 4, np.linspace(-20, 20, 4001)]).astype(np.float32)
    (got,) = run_op(op, version, [x], **attrs)
    from irexec.kernels import jit

    assert jit.ready("elementwise")
    config.JIT = "never"
    (want,) = run_op(op, version, [x], **attrs)
    config.JIT = "always"
    assert got.dtype == want.dtype == np.float32
    d = np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32))
    assert d.max() <= 1 and (d == 0).mean() > 0.9999, (op, int(d.max()), int((d != 0).sum()))


@pytest.mark.parametrize("op,version", [("HSwish", "opset4"), ("HSigmoid", "opset5")])
def test_hard_activations_are_the_numpy_paths_bits(kernels, op, version):
    """HSwish and HSigmoid divide by 6 with multiplications corrected by fused multiply-adds
    (`_div6`): the numpy path's float64 division rounded once, to the bit, on every 257th float32
    of [-6, 6] (where the division matters: elsewhere the result is 0, 1 or x), the dense sweep,
    specials and -0.0 (tools/sweep_f32.py --bits checks all 2^32 inputs)."""
    top = int(np.float32(6.0).view(np.int32))
    near = np.arange(0, top, 257, dtype=np.int32).view(np.float32)
    x = np.concatenate([near, -near, X, np.float32([np.nan, np.inf, -np.inf, -0.0, 3.0, -3.0, 0.5, 1.5])])
    (got,) = run_op(op, version, [x])
    from irexec.kernels import jit

    assert jit.ready("elementwise")
    config.JIT = "never"
    (want,) = run_op(op, version, [x])
    config.JIT = "always"
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_array_equal(got.view(np.uint32)[~np.isnan(want)], want.view(np.uint32)[~np.isnan(want)])
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))


@pytest.mark.parametrize("bounds", [None, (0.0, 6.0), (-1.5, 0.25)])
def test_relu_and_clamp_in_place_are_numpys_bits(kernels, bounds):
    """The fused ReLU / Clamp (`ThenRelu`) on a float32 result, in place by the kernels: numpy's
    np.maximum(y, 0) (-0.0 gives +0.0) or np.clip(y, lo, hi) (-0.0 stays at lo = 0) to the bit,
    NaN and infinities included, over more than one task's block."""
    from irexec.kernels import jit
    from irexec.kernels.elementwise import relu_f32_inplace

    rng = np.random.default_rng(5)
    y = (rng.standard_normal(3 * k.BLOCK + 77) * 4).astype(np.float32)
    y[::7] = -0.0
    y[1::11] = 0.0
    y[:6] = [np.nan, np.inf, -np.inf, 6.0, 0.25, -1.5]
    lo_hi = None if bounds is None else tuple(np.float32(b) for b in bounds)
    want = np.maximum(y, np.float32(0)) if bounds is None else np.clip(y, *lo_hi)
    got = y.copy()
    assert relu_f32_inplace(got, lo_hi) and jit.ready("elementwise")
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    strided = y.copy()[::2]  # not contiguous: left to numpy
    assert not relu_f32_inplace(strided, lo_hi)


def test_relu_op_takes_the_kernel_with_numpys_bits(kernels, monkeypatch):
    """A ReLU layer of float32 (not fused into its producer) runs the `relu` kernel, 16 lanes at a
    time and the tail one by one: np.maximum(x, 0)'s bits, -0.0 to +0.0, NaN and infinities."""
    from irexec.kernels import jit

    calls = []
    kernel = k.relu
    monkeypatch.setattr(k, "relu", lambda *a: calls.append(a[:2]) or kernel(*a))

    rng = np.random.default_rng(6)
    x = (rng.standard_normal(2 * k.BLOCK + 29) * 4).astype(np.float32)
    x[::5] = -0.0
    x[:5] = [np.nan, np.inf, -np.inf, 0.0, -np.nan]
    x[-3:] = [-np.nan, -0.0, -1.0]  # in the scalar tail
    (got,) = run_op("ReLU", "opset1", [x])
    assert jit.ready("elementwise") and calls
    want = np.maximum(x, np.float32(0))
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


# ---- float32 arithmetic: Swish with beta 1 and Gelu's erf mode (swish_f32, gelu_erf_f32) ------------

# tools/sweep_f32.py over all 2^32 float32 inputs: the worst error in ulps of the exact value,
# and how many floats from the exact value rounded a result can be
F32_BOUNDS = {"swish_f32": (3.35, 3), "gelu_erf_f32": (5.9, 6), "erf_f32": (1.92, 2)}
F32_REFS = {
    "swish_f32": lambda x: x * _sigmoid64(x),
    "gelu_erf_f32": lambda x: 0.5 * x * special.erfc(-x / math.sqrt(2.0)),
    "erf_f32": special.erf,
}
# inputs where each kernel leaves float32's exp, to x e^x (Swish: normal down to -88.7,
# subnormal down to -103), to Phi's tail (Gelu: x Phi(x) subnormal from -13.2, 0 below -14.3),
# or to -1 (Erf, from -9)
F32_FAR = {"swish_f32": (-110.0, -80.0), "gelu_erf_f32": (-15.0, -12.0), "erf_f32": (-10.0, -8.0)}
# NaN, -inf, inf, -0.0, 0.0: as the float64 kernels (Swish and Gelu: -inf times a zero)
F32_SPECIALS = {
    "swish_f32": [np.nan, np.nan, np.inf, -0.0, 0.0],
    "gelu_erf_f32": [np.nan, np.nan, np.inf, -0.0, 0.0],
    "erf_f32": [np.nan, -1.0, 1.0, -0.0, 0.0],
}


def _f32_kernel(name: str, x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    getattr(k, name)(0, -(-x.size // k.BLOCK), x, out)
    return out


@pytest.mark.parametrize("name", sorted(F32_BOUNDS))
def test_float32_kernels_within_their_swept_bounds(name):
    """Against the float64 formula (numpy's exp, Cody's erfc): the dense sweep, and every 7th
    float32 of the range where the kernel takes its float64 path for the far inputs."""
    lo, hi = (np.float32(v).view(np.int32) for v in F32_FAR[name])
    far = np.arange(int(hi), int(lo), 7, dtype=np.int32).view(np.float32)
    x = np.concatenate([X, far])
    got = _f32_kernel(name, x)
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        want = F32_REFS[name](x64)
    fin = np.isfinite(want)
    ulp = np.spacing(np.abs(want[fin]).astype(np.float32)).astype(np.float64)
    err = np.abs(got[fin].astype(np.float64) - want[fin]) / ulp
    worst = int(np.argmax(err))
    ulps, steps = F32_BOUNDS[name]
    assert err[worst] <= ulps, (float(x[fin][worst]), float(err[worst]))
    rounded = want[fin].astype(np.float32)
    apart = np.abs(got[fin].view(np.int32).astype(np.int64) - rounded.view(np.int32))
    assert apart.max() <= steps
    assert (apart == 0).mean() > 0.7  # most results are the exact value rounded
    np.testing.assert_array_equal(np.signbit(got[fin]), np.signbit(rounded))
    # the far inputs are computed, not flushed to zero
    near = (x64 > F32_FAR[name][0] + 1.0) & (x64 < F32_FAR[name][1]) & (np.abs(want) > 1e-44)
    assert near.any() and np.all(got[near] != 0)


@pytest.mark.parametrize("name", sorted(F32_BOUNDS))
def test_float32_kernels_specials_and_positions(name):
    """NaN, infinities and zeros give the float64 kernels' values (`F32_SPECIALS`), zeros their
    sign; and a value's result does not depend on where it sits: arrays of every length from 1
    to 40 (a last partial vector padded) and at odd offsets give the bits of one long array,
    far inputs among them."""
    x = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0], np.float32)
    got = _f32_kernel(name, x)
    want = np.array(F32_SPECIALS[name], np.float32)
    base = name.removesuffix("_f32")
    float64_kernel = np.empty_like(x)
    getattr(k, base)(0, 1, x, float64_kernel, *((1.0,) if base == "swish" else ()))
    np.testing.assert_array_equal(float64_kernel, want)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got[3:]), np.signbit(want[3:]))
    rng = np.random.default_rng(11)
    y = (rng.standard_normal(3 * k.BLOCK + 29) * 30).astype(np.float32)
    y[::97] = F32_FAR[name][0] + 5.0
    whole = _f32_kernel(name, y)
    for n in range(1, 41):
        start = int(rng.integers(0, y.size - n))
        np.testing.assert_array_equal(_f32_kernel(name, y[start : start + n].copy()), whole[start : start + n])


def test_swish_op_takes_the_float32_kernel_for_beta_one_only(kernels):
    """Swish without beta, or beta 1, takes `swish_f32` once the kernels are loaded (its bits);
    another beta the float64 formula rounded once (the numpy path's value but for rare near
    ties), since beta x rounded to float32 would move exp(-beta x) by up to 88 ulps."""
    rng = np.random.default_rng(4)
    x = (rng.standard_normal(50_000) * 6).astype(np.float32)
    (plain,) = run_op("Swish", "opset4", [x])
    (one,) = run_op("Swish", "opset4", [x, np.float32(1.0)])
    np.testing.assert_array_equal(plain, _f32_kernel("swish_f32", x))
    np.testing.assert_array_equal(one, plain)
    (other,) = run_op("Swish", "opset4", [x, np.float32(0.7)])
    config.JIT = "never"
    (want,) = run_op("Swish", "opset4", [x, np.float32(0.7)])
    config.JIT = "always"
    d = np.abs(other.view(np.int32).astype(np.int64) - want.view(np.int32))
    assert d.max() <= 1 and (d == 0).mean() > 0.9999


def test_erf_op_takes_the_float32_kernel(kernels):
    """Erf on float32 takes `erf_f32` once the kernels are loaded (its bits), within its bound of
    the numpy path's value (Cody's erf in float64 rounded once)."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(50_000) * 3).astype(np.float32)
    (got,) = run_op("Erf", "opset1", [x])
    np.testing.assert_array_equal(got, _f32_kernel("erf_f32", x))
    config.JIT = "never"
    (want,) = run_op("Erf", "opset1", [x])
    config.JIT = "always"
    d = np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32))
    assert d.max() <= F32_BOUNDS["erf_f32"][1]


@pytest.mark.parametrize("version", ["opset2", "opset7"])
def test_gelu_erf_op_takes_the_float32_kernel(kernels, version):
    """Gelu-2 and Gelu-7's erf mode take `gelu_erf_f32` once the kernels are loaded (its bits),
    within its bound of the numpy path's value (the float64 formula rounded once)."""
    rng = np.random.default_rng(6)
    x = (rng.standard_normal(50_000) * 4).astype(np.float32)
    (got,) = run_op("Gelu", version, [x])
    np.testing.assert_array_equal(got, _f32_kernel("gelu_erf_f32", x))
    config.JIT = "never"
    (want,) = run_op("Gelu", version, [x])
    config.JIT = "always"
    d = np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32))
    assert d.max() <= F32_BOUNDS["gelu_erf_f32"][1]
