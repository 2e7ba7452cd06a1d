"""@njit reduction kernels over canonical C-contiguous views. They see arrays and integers only.

Two shapes cover every reduction (the planner reduces one group of axes per pass):
  rows:    x (M, N)    -> out (M,)     the reduced axis is innermost (contiguous)
  columns: x (M, R, N) -> out (M, N)   the reduced axis has N contiguous kept elements inside it
`out` arrives filled with the combine step's identity and holds the accumulator type
(float64 for floats, int64/uint64 for integers), so every pass accumulates in 64 bits.

Step codes (a runtime argument, so one compiled kernel serves every op):
  ADD, ADD_ABS, ADD_SQ, MUL, MAX, MIN. MAX/MIN propagate NaN (numpy's rule).
"""

from __future__ import annotations

import numba as nb
import numpy as np
from numba import prange

ADD, ADD_ABS, ADD_SQ, MUL, MAX, MIN = range(6)

# reassoc lets LLVM vectorize the sums; no 'nnan'/'ninf', NaN and inf must propagate.
_FM = {"reassoc", "contract", "nsz", "arcp"}
# Reduced elements per parallel chunk when a few long rows are split across threads.
ROW_CHUNK = 1 << 16
# Kept elements per column tile: a float64 accumulator tile of 8 KiB stays in L1.
COL_TILE = 1024


@nb.njit(fastmath=_FM, inline="always")
def _seg(x, lo, hi, code, acc):
    """Fold x[lo:hi] (1-D) into acc with step `code`; the branch sits outside the loops."""
    if code == ADD:
        for i in range(lo, hi):
            acc += x[i]
    elif code == ADD_ABS:
        for i in range(lo, hi):
            acc += abs(x[i])
    elif code == ADD_SQ:
        for i in range(lo, hi):
            v = x[i]
            acc += v * v
    elif code == MUL:
        for i in range(lo, hi):
            acc *= x[i]
    elif code == MAX:
        for i in range(lo, hi):
            v = x[i]
            if v > acc or v != v:
                acc = v
    else:
        for i in range(lo, hi):
            v = x[i]
            if v < acc or v != v:
                acc = v
    return acc


@nb.njit(fastmath=_FM, inline="always")
def _tile(acc, row, lo, hi, code):
    """acc[j] (+)= row[j] for j in [lo, hi): one input row folded into an accumulator tile."""
    if code == ADD:
        for j in range(lo, hi):
            acc[j] += row[j]
    elif code == ADD_ABS:
        for j in range(lo, hi):
            acc[j] += abs(row[j])
    elif code == ADD_SQ:
        for j in range(lo, hi):
            v = row[j]
            acc[j] += v * v
    elif code == MUL:
        for j in range(lo, hi):
            acc[j] *= row[j]
    elif code == MAX:
        for j in range(lo, hi):
            v = row[j]
            if v > acc[j] or v != v:
                acc[j] = v
    else:
        for j in range(lo, hi):
            v = row[j]
            if v < acc[j] or v != v:
                acc[j] = v


@nb.njit(parallel=True, fastmath=_FM, cache=True)
def reduce_rows(x, partial, code, chunk):
    """partial[m, c] = fold of x[m, c*chunk:(c+1)*chunk] (partial is pre-filled)."""
    m_count, n = x.shape
    p = partial.shape[1]
    for t in prange(m_count * p):
        m = t // p
        c = t - m * p
        lo = c * chunk
        hi = min(n, lo + chunk)
        partial[m, c] = _seg(x[m], lo, hi, code, partial[m, c])


@nb.njit(parallel=True, fastmath=_FM, cache=True)
def reduce_columns(x, out, code, tile):
    """out[m, :] = fold over r of x[m, r, :] (out is pre-filled), tiled along the kept axis."""
    m_count, r_count, n = x.shape
    tiles = (n + tile - 1) // tile
    for t in prange(m_count * tiles):
        m = t // tiles
        lo = (t - m * tiles) * tile
        hi = min(n, lo + tile)
        acc = out[m]
        for r in range(r_count):
            _tile(acc, x[m, r], lo, hi, code)
