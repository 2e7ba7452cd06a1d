"""@njit exp-based activations over flat float32 arrays, in float64 with the vectorized `vexp`
(within 2 ulps of libm's exp) and rounded once on store: the numpy path's formulas, which run
libm's exp element by element (5-12 ns) in float64 blocks. Serial and nogil, `jit.parallel_for`
tasks of BLOCK elements."""

from __future__ import annotations

import math

import numpy as np

from .. import special
from .jit import njit
from .normalize_loops import vexp

BLOCK = 1 << 14
_FM = {"contract", "nsz", "arcp"}  # no reassoc: vexp's steps stay in order


@njit(inline="always")
def _block(x, out, t):
    """Task t's elements of x and out."""
    lo = t * BLOCK
    hi = min(x.size, lo + BLOCK)
    return x[lo:hi], out[lo:hi]


@njit(fastmath=_FM, error_model="numpy")  # no ZeroDivisionError branch: it stops the vectorizer
def swish(t_lo, t_hi, x, out, beta):
    """out = x / (1 + exp(-beta x))."""
    for t in range(t_lo, t_hi):
        src, dst = _block(x, out, t)
        for j in range(src.size):
            v = np.float64(src[j])
            dst[j] = v / (1.0 + vexp(-beta * v))


@njit(fastmath=_FM, error_model="numpy")  # no ZeroDivisionError branch: it stops the vectorizer
def sigmoid(t_lo, t_hi, x, out):
    """out = 1 / (1 + e) for x >= 0, e / (1 + e) otherwise, e = exp(-|x|); NaN stays NaN."""
    for t in range(t_lo, t_hi):
        src, dst = _block(x, out, t)
        for j in range(src.size):
            v = np.float64(src[j])
            e = vexp(-abs(v))
            r = 1.0 / (1.0 + e) if v >= 0 else e / (1.0 + e)
            dst[j] = r if v == v else v


_P1, _Q1, _P2, _Q2, _P3, _Q3 = (
    special.ERF_P1,
    special.ERF_Q1,
    special.ERF_P2,
    special.ERF_Q2,
    special.ERF_P3,
    special.ERF_Q3,
)
_SMALL = special.ERF_SMALL
_RSQRTPI = special.RSQRTPI
_SQRT2 = math.sqrt(2.0)


@njit(inline="always")
def _exp_minus_square(z):
    """exp(-z^2) as exp(-r^2) exp(-(z - r)(z + r)), r = z truncated to 1/16 (as `irexec.special`)."""
    r = np.trunc(z * 16.0) / 16.0
    return vexp(-(r * r)) * vexp(-((z - r) * (z + r)))


@njit(fastmath=_FM, error_model="numpy", inline="always")
def erfc(v):
    """Cody's erfc of `irexec.special`, every interval computed and the right one selected (straight-line
    code: LLVM vectorizes it), with the vectorized exp."""
    z = abs(v)
    s = min(max(v, -_SMALL), _SMALL)
    s2 = s * s
    p1 = (((_P1[0] * s2 + _P1[1]) * s2 + _P1[2]) * s2 + _P1[3]) * s2 + _P1[4]
    q1 = (((_Q1[0] * s2 + _Q1[1]) * s2 + _Q1[2]) * s2 + _Q1[3]) * s2 + _Q1[4]
    small = 1.0 - s * p1 / q1
    zm = min(z, 4.0)
    p2 = _P2[0] * zm + _P2[1]
    q2 = _Q2[0] * zm + _Q2[1]
    p2 = ((((((p2 * zm + _P2[2]) * zm + _P2[3]) * zm + _P2[4]) * zm + _P2[5]) * zm + _P2[6]) * zm + _P2[7]) * zm + _P2[
        8
    ]
    q2 = ((((((q2 * zm + _Q2[2]) * zm + _Q2[3]) * zm + _Q2[4]) * zm + _Q2[5]) * zm + _Q2[6]) * zm + _Q2[7]) * zm + _Q2[
        8
    ]
    mid = _exp_minus_square(zm) * p2 / q2
    zb = min(max(z, 4.0), 28.0)
    t = 1.0 / (zb * zb)
    p3 = ((((_P3[0] * t + _P3[1]) * t + _P3[2]) * t + _P3[3]) * t + _P3[4]) * t + _P3[5]
    q3 = ((((_Q3[0] * t + _Q3[1]) * t + _Q3[2]) * t + _Q3[3]) * t + _Q3[4]) * t + _Q3[5]
    far = (_RSQRTPI - t * p3 / q3) / zb * _exp_minus_square(zb)
    tail = mid if z <= 4.0 else (far if z < 28.0 else 0.0)
    out = small if z <= _SMALL else (2.0 - tail if v < 0 else tail)
    return out if v == v else v


@njit(fastmath=_FM, error_model="numpy")
def gelu_erf(t_lo, t_hi, x, out):
    """out = 0.5 x erfc(-x / sqrt 2) (Gelu-2/7's erf mode, as the numpy path computes it)."""
    for t in range(t_lo, t_hi):
        src, dst = _block(x, out, t)
        for j in range(src.size):
            v = np.float64(src[j])
            dst[j] = 0.5 * v * erfc(-v / _SQRT2)


@njit(inline="always")
def _clip06(t):
    """min(max(t, 0), 6) as np.clip: NaN stays NaN."""
    return 0.0 if t < 0.0 else (6.0 if t > 6.0 else t)


@njit(error_model="numpy")
def hswish(t_lo, t_hi, x, out):
    """out = x * clip(x + 3, 0, 6) / 6 in float64 (IEEE, no contraction: the numpy path's bits)."""
    for t in range(t_lo, t_hi):
        src, dst = _block(x, out, t)
        for j in range(src.size):
            v = np.float64(src[j])
            dst[j] = v * _clip06(v + 3.0) / 6.0


@njit(error_model="numpy")
def hsigmoid(t_lo, t_hi, x, out):
    """out = clip(x + 3, 0, 6) / 6 in float64."""
    for t in range(t_lo, t_hi):
        src, dst = _block(x, out, t)
        for j in range(src.size):
            dst[j] = _clip06(np.float64(src[j]) + 3.0) / 6.0


def warm() -> None:
    x = np.linspace(-3, 3, 8, dtype=np.float32)
    swish(0, 1, x, np.empty_like(x), 1.0)
    sigmoid(0, 1, x, np.empty_like(x))
    gelu_erf(0, 1, x, np.empty_like(x))
    hswish(0, 1, x, np.empty_like(x))
    hsigmoid(0, 1, x, np.empty_like(x))
