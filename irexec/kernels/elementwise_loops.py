"""@njit exp-based activations over flat float32 arrays, in float64 with the vectorized `vexp`
(within 2 ulps of libm's exp) and rounded once on store: the numpy path's formulas, which run
libm's exp element by element (5-12 ns) in float64 blocks. Erf and Gelu's erf mode take erfc as
exp(-x^2) (the float32 input's square is exact in float64) times a degree-14 polynomial for
erfcx (`special.ERFCX_P`, 2.4e-12 relative): one exp and one division where Cody's three
intervals (the numpy path) cost four exps and three divisions; the float32 result stays within
one ulp of the exact value rounded (tests/test_activation_kernels.py sweeps float32 inputs).
Serial and nogil, `jit.parallel_for` tasks of BLOCK elements.

Measured on 1.2 M float32 elements, one thread, CPU time (the loaded 2-core machine; medians of
40): sigmoid 1.0 ms, swish 1.1, Gelu-tanh 1.3, Erf and Gelu-erf 1.8 (with Cody's erfc, the
numpy path's, Gelu-erf was 15 ms and Erf 77 ms through numpy); OpenVINO's CPU plugin
1.6-1.9 ms for each (`python3 -m tools.bench_ops --group act --threads 1 --cpu`). The loops
vectorize to 8 float64 lanes and are bound by their instruction count: Estrin's scheme instead
of Horner's and float32 reciprocals instead of vdivpd measured no faster.

The exceptions are Swish with beta 1 (`swish_f32`: EfficientNet's activation, 38% of its time
at 224x224 with the float64 formula), Gelu's erf mode (`gelu_erf_f32`: 21% of ConvNeXt's) and
Erf (`erf_f32`): float32 arithmetic on 16 lanes, 3x, 2.7x and 2.9x faster, within 3.35, 5.9 and
1.92 ulps of the exact value over all 2^32 float32 inputs (tools/sweep_f32.py; OpenVINO's CPU
plugin is off by 4.4 ulps on a sample of 1.2 M for Swish, by up to 2e-4 relative for Gelu)."""

from __future__ import annotations

import math

import numpy as np

from .. import special
from .jit import njit
from .normalize_loops import EXP_LOW_F, exp_neg_short, vexp_neg_f32
from .normalize_loops import exp_neg as _exp_neg
from .simd import (
    LANES,
    fma_f64,
    vadd,
    vany_below,
    vdiv,
    vfma,
    vfma_exact,
    vfnma,
    vlesser,
    vload,
    vmul,
    vneg_abs,
    vrelu,
    vsplat,
    vstore,
    vsub,
    vwhere_below,
    vwhere_nonneg,
    vzero,
)

BLOCK = 1 << 14
_FM = {"contract", "nsz", "arcp"}  # no reassoc: vexp's steps stay in order


@njit(inline="always")
def _block(x, out, t):
    """Task t's elements of x and out."""
    lo = t * BLOCK
    hi = min(x.size, lo + BLOCK)
    return x[lo:hi], out[lo:hi]


@njit(fastmath=_FM, error_model="numpy", inline="always")
def _recip(d):
    """1 / d (float32's division and a Newton step measured 10% slower: the exp's multiply-adds
    and the memory bound these kernels, not vdivpd)."""
    return 1.0 / d


@njit(fastmath=_FM, error_model="numpy", inline="always")
def _sigmoid(s):
    """1 / (1 + exp(-s)) as r = 1 / (1 + e) for s >= 0, e r below, e = exp(-|s|) <= 1: the
    divisor stays in [1, 2] (no overflow, whatever s); NaN gives NaN. exp is `exp_neg_short`
    (1e-11 relative, where `exp_neg` has 9e-15): the float32 results are the float64 formula's
    rounded but for near ties, as before, and Swish takes 0.78-0.84 ns an element, not 0.90."""
    e = exp_neg_short(-abs(s))
    r = _recip(1.0 + e)
    return r if s >= 0 else e * r


@njit(fastmath=_FM, error_model="numpy")  # no ZeroDivisionError branch: it stops the vectorizer
def swish(t_lo, t_hi, x, out, beta):
    """out = x / (1 + exp(-beta x)), as x sigmoid(beta x)."""
    for t in range(t_lo, t_hi):
        src, dst = _block(x, out, t)
        for j in range(src.size):
            v = np.float64(src[j])
            r = v * _sigmoid(beta * v)
            dst[j] = r if v == v else v


_ONE_F = np.float32(1.0)


@njit(inline="always")
def _tail_in(x, pad, lo, hi):
    """x[lo:hi] (fewer than 16) as the first lanes of a vector, through the scratch `pad`
    (zeros past them): a task's last partial vector, read without reading past x."""
    for i in range(lo, hi):
        pad[i - lo] = x[i]
    return vload(pad, 0)


@njit(inline="always")
def _tail_out(out, padded, lo, hi, value):
    """out[lo:hi] = value's first hi - lo lanes, through the scratch `padded`."""
    vstore(padded, 0, value)
    for i in range(lo, hi):
        out[i] = padded[i - lo]


@njit(inline="always")
def _swish_lanes(v, one):
    """v / (1 + e) for v >= 0, v e / (1 + e) below, e = exp(-|v|) in float32 (`vexp_neg_f32`,
    0 below -87), 16 lanes: one float32 rounding per step."""
    e = vexp_neg_f32(vneg_abs(v))
    return vdiv(vwhere_nonneg(v, v, vmul(v, e)), vadd(one, e))


@njit(error_model="numpy", inline="always")
def _swish_far(x, out, lo, hi):
    """out[i] = x e^x rounded once for the x[lo:hi] below -87, whose e^x float32 lacks (1 + e^x
    is 1 in float64 there): x e^x is a normal float32 down to -88.7 and a subnormal one to -103."""
    for i in range(lo, hi):
        v = np.float64(x[i])
        if v < EXP_LOW_F:
            out[i] = v * _exp_neg(v)


@njit(fastmath=_FM, error_model="numpy")
def swish_f32(t_lo, t_hi, x, out):
    """out = x / (1 + exp(-x)) (Swish with beta 1) in float32 arithmetic, 16 lanes a step:
    `_swish_lanes`, within 3.35 ulps of the exact value for every float32 input (tools/sweep_f32.py
    checks all 2^32; OpenVINO's CPU plugin: 4.4 on a sample), at 0.35 ns an element on one
    thread where `swish`'s float64 formula takes 1.0. Inputs below -87 (rare: a task holding one
    looks for them after its vectors) take x e^x in float64. A task's last partial vector goes
    through a padded one, so every element's bits depend on its value only."""
    one = vsplat(_ONE_F)
    low = vsplat(EXP_LOW_F)
    pad = np.zeros(LANES, np.float32)
    padded = np.empty(LANES, np.float32)
    for t in range(t_lo, t_hi):
        lo = t * BLOCK
        hi = min(x.size, lo + BLOCK)
        j = lo
        lowest = one
        while j + LANES <= hi:
            v = vload(x, j)
            vstore(out, j, _swish_lanes(v, one))
            lowest = vlesser(v, lowest)
            j += LANES
        if vany_below(lowest, low):
            _swish_far(x, out, lo, j)
        if j < hi:
            v = _tail_in(x, pad, j, hi)
            _tail_out(out, padded, j, hi, _swish_lanes(v, one))
            if vany_below(v, low):
                _swish_far(x, out, j, hi)


@njit(fastmath=_FM, error_model="numpy")  # no ZeroDivisionError branch: it stops the vectorizer
def sigmoid(t_lo, t_hi, x, out):
    """out = 1 / (1 + exp(-x)) (`_sigmoid`); NaN stays NaN."""
    for t in range(t_lo, t_hi):
        src, dst = _block(x, out, t)
        for j in range(src.size):
            v = np.float64(src[j])
            r = _sigmoid(v)
            dst[j] = r if v == v else v


_L = special.ERFCX_L
_C = special.ERFCX_P
_RSQRT2 = 1.0 / math.sqrt(2.0)
_TANH_SCALE = 2.0 * math.sqrt(2.0 / math.pi)
# erf(z) = 2/sqrt(pi) (z - z^3/3 + z^5/10 - z^7/42 + z^9/216 - z^11/1320 + ...) for |z| < 1/8:
# the next term is below 2e-15 of the sum there
_K = 2.0 / math.sqrt(math.pi)
_E = (_K, -_K / 3.0, _K / 10.0, -_K / 42.0, _K / 216.0, -_K / 1320.0)
_ERF_SMALL = 0.125


@njit(fastmath=_FM, error_model="numpy", inline="always")
def _erfc_of(z, e):
    """erfc(z) for z >= 0 given e = exp(-z^2) (computed by the caller from the float32 input,
    whose square is exact in float64): e erfcx(z), erfcx by `special.ERFCX_P` (2.4e-12
    relative). z is capped at 30 (erfc(27) is below the smallest float64), so y stays in [-1, 1)."""
    zc = min(z, 30.0)
    y = (zc - _L) * _recip(zc + _L)
    p = _C[0] * y + _C[1]
    p = p * y + _C[2]
    p = p * y + _C[3]
    p = p * y + _C[4]
    p = p * y + _C[5]
    p = p * y + _C[6]
    p = p * y + _C[7]
    p = p * y + _C[8]
    p = p * y + _C[9]
    p = p * y + _C[10]
    p = p * y + _C[11]
    p = p * y + _C[12]
    p = p * y + _C[13]
    p = p * y + _C[14]
    return e * p * ((1.0 - y) * (0.5 / _L))


@njit(fastmath=_FM, error_model="numpy")
def gelu_erf(t_lo, t_hi, x, out):
    """out = x Phi(x), Phi(x) = erfc(-x / sqrt 2) / 2, for float32 x (Gelu-2/7's erf mode): for
    x < 0, Phi = erfc(|x| / sqrt 2) / 2 keeps its relative accuracy in the tail (1 + erf
    cancels); for x >= 0, 1 - erfc(x / sqrt 2) / 2. exp(-x^2 / 2) takes the exact square."""
    for t in range(t_lo, t_hi):
        src, dst = _block(x, out, t)
        for j in range(src.size):
            v = np.float64(src[j])
            half = 0.5 * _erfc_of(abs(v) * _RSQRT2, _exp_neg(-0.5 * (v * v)))
            r = v * (half if v < 0 else 1.0 - half)
            # below 1e-20, x Phi(x) = x / 2 + x^2 / sqrt(2 pi) is x / 2 in float64 (the numpy path's
            # value, a tie for float32's subnormals): the fit's 1e-12 would break the tie
            r = r if abs(v) >= 1e-20 else 0.5 * v
            dst[j] = r if v == v else v


# erfcx(z) (z + L) on y = (z - L) / (z + L) in [-1, 0.52] (z up to 13 / sqrt 2): degree 9,
# Chebyshev least squares relative to the function (4.7e-9), in monomials rounded to float32
# (`python3 -m tools.sweep_f32 --fit` prints them again), highest degree first
_ERFCX_F32 = (
    np.float32(-0.0003335238),
    np.float32(-0.0004987294),
    np.float32(0.003076889),
    np.float32(-0.0012188551),
    np.float32(-0.026836896),
    np.float32(0.11952786),
    np.float32(-0.31046644),
    np.float32(0.5902284),
    np.float32(-0.8833945),
    np.float32(1.0740069),
)
_L_F = np.float32(_L)
_HALF_F = np.float32(0.5)
_RSQRT2_F = np.float32(_RSQRT2)
_GELU_FAR_F = np.float32(-13.0)  # |x| beyond: exp(-x^2 / 2) leaves float32's normals
_GELU_SMALL_F = np.float32(-0.5)  # |x| within: Phi by its Taylor series
_PHI_F = tuple(
    np.float32(c / math.sqrt(2.0 * math.pi)) for c in (1.0, -1.0 / 6.0, 1.0 / 40.0, -1.0 / 336.0, 1.0 / 3456.0)
)


@njit(inline="always")
def _erfc_f32(z, a, a_lo, one):
    """(e, t) with erfc(z) = e t on 16 lanes, z >= 0 and z^2 = a + a_lo exactly (a_lo within
    half an ulp of a): e = exp(-a) (1 - a_lo) (`vexp_neg_f32`, 0 past a = 87), t = erfcx(z) as
    `_ERFCX_F32`'s p(y) / (z + L), y = (z - L) / (z + L) (z up to 9.5)."""
    e0 = vexp_neg_f32(vsub(vzero(), a))
    e = vfnma(e0, a_lo, e0)
    r = vdiv(one, vadd(z, vsplat(_L_F)))
    y = vmul(vsub(z, vsplat(_L_F)), r)
    p = vsplat(_ERFCX_F32[0])
    p = vfma(p, y, vsplat(_ERFCX_F32[1]))
    p = vfma(p, y, vsplat(_ERFCX_F32[2]))
    p = vfma(p, y, vsplat(_ERFCX_F32[3]))
    p = vfma(p, y, vsplat(_ERFCX_F32[4]))
    p = vfma(p, y, vsplat(_ERFCX_F32[5]))
    p = vfma(p, y, vsplat(_ERFCX_F32[6]))
    p = vfma(p, y, vsplat(_ERFCX_F32[7]))
    p = vfma(p, y, vsplat(_ERFCX_F32[8]))
    p = vfma(p, y, vsplat(_ERFCX_F32[9]))
    return e, vmul(p, r)


@njit(inline="always")
def _gelu_lanes(v, one, half):
    """x Phi(x) on 16 float32 lanes, Phi = erfc(-x / sqrt 2) / 2 as the float64 kernel
    (`gelu_erf`) takes it: exp(-x^2 / 2) from x^2 split exactly in two floats (h + l, one
    fused multiply-add: the rounding of x^2 would cost |x|^2 / 2 ulps), erfcx(|x| / sqrt 2) by
    `_ERFCX_F32`; Phi = erfc / 2 below zero, 1 - erfc / 2 above."""
    h = vmul(v, v)
    lo = vfma_exact(v, v, vsub(vzero(), h))
    z = vmul(vsub(vzero(), vneg_abs(v)), vsplat(_RSQRT2_F))
    e, pr = _erfc_f32(z, vmul(h, half), vmul(lo, half), one)
    # erfc / 2 = e (p r / 2); below zero x e first, so that no product but the last leaves
    # float32's normals (Phi(x) itself is subnormal below -12.9, x Phi(x) only below -13.2)
    t = vmul(pr, half)
    big = vwhere_nonneg(v, vmul(v, vsub(one, vmul(e, t))), vmul(vmul(v, e), t))
    # |x| <= 0.5: Phi = 1/2 + x (1 - x^2/6 + x^4/40 - x^6/336 + x^8/3456) / sqrt(2 pi), whose
    # next term is below 2e-8 of Phi there (1 - erfc / 2 would cancel to 0.5)
    q = vfma(vsplat(_PHI_F[4]), h, vsplat(_PHI_F[3]))
    q = vfma(q, h, vsplat(_PHI_F[2]))
    q = vfma(q, h, vsplat(_PHI_F[1]))
    q = vfma(q, h, vsplat(_PHI_F[0]))
    small = vmul(v, vfma(v, q, half))
    return vwhere_below(vneg_abs(v), vsplat(_GELU_SMALL_F), big, small)


@njit(fastmath=_FM, error_model="numpy", inline="always")
def _gelu_far(x, out, lo, hi):
    """out[i] = `gelu_erf`'s float64 value for the x[lo:hi] beyond +-13 (infinities included)."""
    for i in range(lo, hi):
        v = np.float64(x[i])
        if abs(v) > 13.0:
            half = 0.5 * _erfc_of(abs(v) * _RSQRT2, _exp_neg(-0.5 * (v * v)))
            out[i] = v * (half if v < 0 else 1.0 - half)


@njit(fastmath=_FM, error_model="numpy")
def gelu_erf_f32(t_lo, t_hi, x, out):
    """out = x Phi(x) (Gelu's erf mode) in float32 arithmetic, 16 lanes a step: `_gelu_lanes`,
    within 5.9 ulps of the exact value for every float32 input (tools/sweep_f32.py checks all
    2^32; OpenVINO's CPU plugin is within ~2e-4 only). Inputs beyond +-13 (rare) take the float64
    formula; a task's last partial vector goes through a padded one."""
    one = vsplat(_ONE_F)
    half = vsplat(_HALF_F)
    far = vsplat(_GELU_FAR_F)
    pad = np.zeros(LANES, np.float32)
    padded = np.empty(LANES, np.float32)
    for t in range(t_lo, t_hi):
        lo = t * BLOCK
        hi = min(x.size, lo + BLOCK)
        j = lo
        lowest = one
        while j + LANES <= hi:
            v = vload(x, j)
            vstore(out, j, _gelu_lanes(v, one, half))
            lowest = vlesser(vneg_abs(v), lowest)
            j += LANES
        if vany_below(lowest, far):
            _gelu_far(x, out, lo, j)
        if j < hi:
            v = _tail_in(x, pad, j, hi)
            _tail_out(out, padded, j, hi, _gelu_lanes(v, one, half))
            if vany_below(vneg_abs(v), far):
                _gelu_far(x, out, j, hi)


# erf(x) = 2/sqrt(pi) sum (-1)^n x^(2n+1) / (n! (2n + 1)), n = 0..8, for |x| < 3/4: the next
# term is below 1e-9 of erf there
_ERF_TAYLOR_F = tuple(
    np.float32(2.0 / math.sqrt(math.pi) * (-1.0) ** n / (math.factorial(n) * (2 * n + 1))) for n in range(9)
)
_ERF_SMALL_F = np.float32(-0.75)  # |x| within: erf by its Taylor series
_ERF_C0_HI = np.float32(2.0 / math.sqrt(math.pi))
_ERF_C0_LO = np.float32(2.0 / math.sqrt(math.pi) - float(_ERF_C0_HI))
_ERF_ONE_F = np.float32(-9.0)  # |x| beyond: erf is +-1 in float32 (erfc(9) = 4e-37)


@njit(inline="always")
def _erf_lanes(v, one):
    """erf(x) on 16 float32 lanes: its Taylor series in x^2 within 3/4, else +-(1 - erfc(|x|))
    by `_erfc_f32` (erfc <= 0.29 there: the subtraction loses under 2 bits), +-1 beyond 9."""
    h = vmul(v, v)
    lo = vfma_exact(v, v, vsub(vzero(), h))
    z = vsub(vzero(), vneg_abs(v))
    e, t = _erfc_f32(z, h, lo, one)
    big = vsub(one, vmul(e, t))
    q = vsplat(_ERF_TAYLOR_F[8])
    q = vfma(q, h, vsplat(_ERF_TAYLOR_F[7]))
    q = vfma(q, h, vsplat(_ERF_TAYLOR_F[6]))
    q = vfma(q, h, vsplat(_ERF_TAYLOR_F[5]))
    q = vfma(q, h, vsplat(_ERF_TAYLOR_F[4]))
    q = vfma(q, h, vsplat(_ERF_TAYLOR_F[3]))
    q = vfma(q, h, vsplat(_ERF_TAYLOR_F[2]))
    q = vfma(q, h, vsplat(_ERF_TAYLOR_F[1]))
    # x (c0 + x^2 q) with c0 = 2 / sqrt(pi) in two floats: x c0's one rounding, so that small x
    # (the most float32 values) give 2x / sqrt(pi) rounded, where one float32 c0 (off by 0.27
    # ulps) moved a third of them
    small = vfma_exact(v, vsplat(_ERF_C0_HI), vmul(v, vfma(q, h, vsplat(_ERF_C0_LO))))
    nz = vneg_abs(v)
    small = vwhere_below(nz, vzero(), small, v)  # a zero keeps its sign (-0 c0 + -0 c0_lo is +0)
    big = vwhere_below(nz, vsplat(_ERF_ONE_F), one, big)
    return vwhere_below(nz, vsplat(_ERF_SMALL_F), vwhere_nonneg(v, big, vsub(vzero(), big)), small)


@njit(fastmath=_FM, error_model="numpy")
def erf_f32(t_lo, t_hi, x, out):
    """out = erf(x) in float32 arithmetic, 16 lanes a step (`_erf_lanes`): within 1.92 ulps of
    the exact value for every float32 input (tools/sweep_f32.py checks all 2^32). A task's last
    partial vector goes through a padded one."""
    one = vsplat(_ONE_F)
    pad = np.zeros(LANES, np.float32)
    padded = np.empty(LANES, np.float32)
    for t in range(t_lo, t_hi):
        lo = t * BLOCK
        hi = min(x.size, lo + BLOCK)
        j = lo
        while j + LANES <= hi:
            vstore(out, j, _erf_lanes(vload(x, j), one))
            j += LANES
        if j < hi:
            _tail_out(out, padded, j, hi, _erf_lanes(_tail_in(x, pad, j, hi), one))


@njit(fastmath=_FM, error_model="numpy")
def erf(t_lo, t_hi, x, out):
    """out = erf(x) for float32 x: its Taylor series below 1/8 (the sign of -0.0 kept), else
    +-(1 - erfc(|x|)) (erfc >= 0.86 there: the subtraction loses under 3 bits)."""
    for t in range(t_lo, t_hi):
        src, dst = _block(x, out, t)
        for j in range(src.size):
            v = np.float64(src[j])
            s = v * v
            small = v * (_E[0] + s * (_E[1] + s * (_E[2] + s * (_E[3] + s * (_E[4] + s * _E[5])))))
            big = 1.0 - _erfc_of(abs(v), _exp_neg(-s))
            r = small if abs(v) < _ERF_SMALL else (big if v > 0 else -big)
            dst[j] = r if v == v else v


@njit(fastmath=_FM, error_model="numpy")
def gelu_tanh(t_lo, t_hi, x, out):
    """out = x / (1 + exp(-2 sqrt(2/pi) (x + 0.044715 x^3))) = 0.5 x (1 + tanh(...)), the numpy
    path's float64 formula (no cancellation) as x sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3))."""
    for t in range(t_lo, t_hi):
        src, dst = _block(x, out, t)
        for j in range(src.size):
            v = np.float64(src[j])
            r = v * _sigmoid(_TANH_SCALE * (v + 0.044715 * (v * v * v)))
            dst[j] = r if v == v else v


@njit(inline="always")
def _clip06(t):
    """min(max(t, 0), 6) as np.clip: NaN stays NaN."""
    return 0.0 if t < 0.0 else (6.0 if t > 6.0 else t)


_THIRD = 1.0 / 3.0


@njit(error_model="numpy", inline="always")
def _div6(p):
    """p / 6 in float64 for the float32 results of HSwish and HSigmoid, by multiplications: q =
    (p / 2) * RN(1/3), the remainder r = p / 2 - 3 q exactly (a fused multiply-add), then q +
    r RN(1/3) fused, Markstein's correction of a quotient to the correctly rounded one. Its
    float32 rounding equals that of p / 6.0 for every float32 input of both ops (tools/
    sweep_f32.py --bits checks all 2^32); vdivpd had bound the loops (0.67 ns an element, 0.31
    so). r zero or NaN keeps q: the exact quotient with its sign (-0.0 / 6), or an infinity's."""
    h = p * 0.5
    q = h * _THIRD
    r = fma_f64(-q, 3.0, h)
    c = fma_f64(r, _THIRD, q)
    return c if (r != 0.0) & (r == r) else q


@njit(error_model="numpy")
def hswish(t_lo, t_hi, x, out):
    """out = x * clip(x + 3, 0, 6) / 6 in float64 (IEEE, no contraction), rounded once: the numpy
    path's bits (the division by `_div6`)."""
    for t in range(t_lo, t_hi):
        src, dst = _block(x, out, t)
        for j in range(src.size):
            v = np.float64(src[j])
            dst[j] = _div6(v * _clip06(v + 3.0))


@njit(error_model="numpy")
def hsigmoid(t_lo, t_hi, x, out):
    """out = clip(x + 3, 0, 6) / 6 in float64, rounded once: the numpy path's bits (`_div6`)."""
    for t in range(t_lo, t_hi):
        src, dst = _block(x, out, t)
        for j in range(src.size):
            dst[j] = _div6(_clip06(np.float64(src[j]) + 3.0))


@njit(error_model="numpy")
def relu(t_lo, t_hi, x, out):
    """out = np.maximum(x, 0): NaN stays, -0.0 becomes +0.0 (numpy's maximum); out may be x (in
    place). 16 lanes at a time (`simd.vrelu`, whose stores are whole vectors: in place, the
    scalar select, which writes back what it read where it keeps it, LLVM turned into masked
    stores of the zeros, vmaskmovps, microcoded on AMD's cores: 200 K float32 130 -> 16 us,
    numpy's maximum 100)."""
    zero = np.float32(0.0)
    for t in range(t_lo, t_hi):
        src, dst = _block(x, out, t)
        whole = src.size - src.size % LANES
        for j in range(0, whole, LANES):
            vstore(dst, j, vrelu(vload(src, j)))
        for j in range(whole, src.size):
            v = src[j]
            dst[j] = zero if v <= zero else v


@njit(error_model="numpy")
def clip_inplace(t_lo, t_hi, x, lo, hi):
    """x = np.clip(x, lo, hi) in place (lo <= hi): NaN stays, and so does -0.0 at lo = 0."""
    for t in range(t_lo, t_hi):
        blk, _ = _block(x, x, t)
        for j in range(blk.size):
            v = blk[j]
            blk[j] = lo if v < lo else (hi if v > hi else v)


def warm() -> None:
    x = np.linspace(-3, 3, 8, dtype=np.float32)
    swish(0, 1, x, np.empty_like(x), 1.0)
    swish_f32(0, 1, x, np.empty_like(x))
    sigmoid(0, 1, x, np.empty_like(x))
    gelu_erf(0, 1, x, np.empty_like(x))
    gelu_erf_f32(0, 1, x, np.empty_like(x))
    gelu_tanh(0, 1, x, np.empty_like(x))
    erf(0, 1, x, np.empty_like(x))
    erf_f32(0, 1, x, np.empty_like(x))
    hswish(0, 1, x, np.empty_like(x))
    hsigmoid(0, 1, x, np.empty_like(x))
    relu(0, 1, x, np.empty_like(x))
    clip_inplace(0, 1, x.copy(), np.float32(0.0), np.float32(6.0))
