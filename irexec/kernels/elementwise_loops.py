"""@njit exp-based activations over flat float32 arrays, in float64 with the vectorized `vexp`
(within 2 ulps of libm's exp) and rounded once on store: the numpy path's formulas, which run
libm's exp element by element (5-12 ns) in float64 blocks. Serial and nogil, `jit.parallel_for`
tasks of BLOCK elements."""

from __future__ import annotations

import numpy as np

from .jit import njit
from .normalize_loops import vexp

BLOCK = 1 << 14
_FM = {"contract", "nsz", "arcp"}  # no reassoc: vexp's steps stay in order


@njit(fastmath=_FM, error_model="numpy")  # no ZeroDivisionError branch: it stops the vectorizer
def swish(t_lo, t_hi, x, out, beta):
    """out = x / (1 + exp(-beta x))."""
    n = x.size
    for t in range(t_lo, t_hi):
        lo = t * BLOCK
        src = x[lo:min(n, lo + BLOCK)]
        dst = out[lo:min(n, lo + BLOCK)]
        for j in range(src.size):
            v = np.float64(src[j])
            dst[j] = v / (1.0 + vexp(-beta * v))


@njit(fastmath=_FM, error_model="numpy")  # no ZeroDivisionError branch: it stops the vectorizer
def sigmoid(t_lo, t_hi, x, out):
    """out = 1 / (1 + e) for x >= 0, e / (1 + e) otherwise, e = exp(-|x|); NaN stays NaN."""
    n = x.size
    for t in range(t_lo, t_hi):
        lo = t * BLOCK
        src = x[lo:min(n, lo + BLOCK)]
        dst = out[lo:min(n, lo + BLOCK)]
        for j in range(src.size):
            v = np.float64(src[j])
            e = vexp(-abs(v))
            r = 1.0 / (1.0 + e) if v >= 0 else e / (1.0 + e)
            dst[j] = r if v == v else v


def run(kernel, x: np.ndarray, *args) -> np.ndarray:
    """kernel over the flat float32 x into a new float32 array of its shape."""
    from . import jit

    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty_like(flat)
    jit.parallel_for(kernel, -(-flat.size // BLOCK), jit.threads_for(flat.nbytes, 12.0), flat, out, *args)
    return out.reshape(x.shape)


def warm() -> None:
    x = np.linspace(-3, 3, 8, dtype=np.float32)
    swish(0, 1, x, np.empty_like(x), 1.0)
    sigmoid(0, 1, x, np.empty_like(x))
