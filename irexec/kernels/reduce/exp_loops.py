"""@njit kernels for ReduceLogSumExp's pass of shifted exponentials: float64 sums of
exp(x - shift) over the canonical 5-D view of `loops` (A, B, C, D, E; A, C, E kept), one shift
per output: the max of its values (`plan._logsumexp`'s first pass) where finite, else 0.

The exponentials are normalize_loops' `vexp` (float64, within 2 ulps of libm's exp, in code
LLVM vectorizes; for a float32 result and finite shifts its `exp_neg`, 7e-15, a third
cheaper), where the numpy path (`numpy_path.exp_sum`) calls libm's exp element by
element in float64 blocks: measured on (64,256,64,64) float32 at 2 GB/s over every axes
pattern. Their loops are compiled without `reassoc` (it would fold vexp's argument reduction);
the row sums then add a buffer of exponentials with it. Float32 and float64 input only."""

from __future__ import annotations

import numpy as np

from ..jit import njit
from ..normalize_loops import exp_neg, vexp
from .loops import row_task

_SUM_FM = {"reassoc", "contract", "nsz", "arcp"}
_EXACT_FM = {"contract", "nsz", "arcp"}
BLOCK = 8192  # exponentials computed per call (64 KiB of float64, with as many shifts: L2)
TILE = 8192  # kept elements per column tile: its sums and shifts (128 KiB) stay in L2


@njit(fastmath=_EXACT_FM)
def _exp_store(src, shift, dst, fast):
    """dst[j] = exp(src[j] - shift[j]) in float64, element by element (no reassociation); NaN
    stays NaN (the exps' clamps would drop it). `fast`: every argument is <= 0 (each shift is
    its values' finite max) and the result goes to float32, so `exp_neg` (7e-15, no overflow
    fix-ups, a third cheaper) serves; else `vexp` (2 ulps)."""
    if fast:
        for j in range(src.size):
            v = np.float64(src[j]) - shift[j]
            dst[j] = exp_neg(v) if v == v else v
    else:
        for j in range(src.size):
            v = np.float64(src[j]) - shift[j]
            dst[j] = vexp(v) if v == v else v


@njit(fastmath=_EXACT_FM)
def _exp_add(src, shift, acc, fast):
    """acc[j] += exp(src[j] - shift[j]) in float64, as `_exp_store`."""
    if fast:
        for j in range(src.size):
            v = np.float64(src[j]) - shift[j]
            acc[j] += exp_neg(v) if v == v else v
    else:
        for j in range(src.size):
            v = np.float64(src[j]) - shift[j]
            acc[j] += vexp(v) if v == v else v


@njit(fastmath=_SUM_FM, inline="always")
def _finite(top):
    return top > -np.inf and top < np.inf


@njit(fastmath=_SUM_FM, inline="always")
def _shift_of(top):
    """The shift of an output whose values' max is `top`: top where finite, else 0."""
    return top if _finite(top) else 0.0


@njit(fastmath=_SUM_FM)
def exp_sum_rows(t_lo, t_hi, x, peak, part, splits, per, f32):
    """x (A, B, C, D): part[a*C + c, s] = sum over b and split s of d of exp(x[a, b, c, d] -
    shift), the shift being peak[a*C + c] (the values' max) where finite, else 0. A task takes
    `per` consecutive c of one split and walks b outside c, so it reads memory in order. The
    exponentials go by blocks of BLOCK (whole short rows together, each element with its row's
    shift): a call of `_exp_store` per short row cost twice the exponentials themselves
    (measured). `f32`: the result goes to float32 (`_exp_store`'s `fast`)."""
    _, b_n, c_n, d_n = x.shape
    buf = np.empty(BLOCK)
    sh = np.empty(BLOCK)
    for t in range(t_lo, t_hi):  # of a_n * ceil(c_n / per) * splits tasks
        a, s, lo, hi, c0, c1 = row_task(t, c_n, d_n, splits, per)
        acc = np.zeros(c1 - c0)
        width = hi - lo
        rows = BLOCK // width if splits == 1 else 0  # whole rows per block (contiguous)
        for b in range(b_n):
            xb = x[a, b]
            if rows > 1:
                for r0 in range(c0, c1, rows):
                    r1 = min(c1, r0 + rows)
                    n = (r1 - r0) * width
                    fast = f32
                    for c in range(r0, r1):
                        top = peak[a * c_n + c]
                        fast = fast and _finite(top)
                        sh[(c - r0) * width : (c - r0 + 1) * width] = _shift_of(top)
                    _exp_store(xb[r0:r1].reshape(n), sh[:n], buf[:n], fast)
                    for c in range(r0, r1):
                        seg = buf[(c - r0) * width : (c - r0 + 1) * width]
                        total = 0.0
                        for j in range(width):
                            total += seg[j]
                        acc[c - c0] += total
                continue
            for c in range(c0, c1):
                top = peak[a * c_n + c]
                fast = f32 and _finite(top)
                row = xb[c]
                for k in range(lo, hi, BLOCK):
                    n = min(hi, k + BLOCK) - k
                    sh[:n] = _shift_of(top)
                    _exp_store(row[k : k + n], sh[:n], buf[:n], fast)
                    total = 0.0
                    for j in range(n):
                        total += buf[j]
                    acc[c - c0] += total
        for c in range(c0, c1):
            part[a * c_n + c, s] = acc[c - c0]


@njit(fastmath=_EXACT_FM)
def exp_sum_columns(t_lo, t_hi, x, peak, out, tile, f32):
    """x (A, B, C, D, E): out[(a*C + c)*E + e] = sum over b and d of exp(x[a, b, c, d, e] -
    shift), the shift being peak[(a*C + c)*E + e] where finite, else 0; by tiles of `tile` kept
    elements (the tile of sums stays in L2). `f32`: the result goes to float32 (`_exp_store`'s
    `fast`, for tiles whose peaks are all finite)."""
    a_n, b_n, c_n, d_n, e_n = x.shape
    tiles = (e_n + tile - 1) // tile
    for t in range(t_lo, t_hi):  # of a_n * c_n * tiles tasks
        ac = t // tiles
        lo = (t - ac * tiles) * tile
        hi = min(e_n, lo + tile)
        a = ac // c_n
        c = ac - a * c_n
        base = ac * e_n
        top = peak[base + lo : base + hi]
        sh = np.empty(hi - lo)
        fast = f32
        for j in range(sh.size):
            sh[j] = _shift_of(top[j])
            fast = fast and _finite(top[j])
        acc = out[base + lo : base + hi]
        acc[:] = 0.0
        for b in range(b_n):
            for d in range(d_n):
                _exp_add(x[a, b, c, d, lo:hi], sh, acc, fast)


def warm() -> None:
    """Compile the specializations `plan._logsumexp` calls (float32 and float64 input)."""
    for dt in (np.float32, np.float64):
        x = np.ones((1, 2, 2, 3), dt)
        part = np.empty((2, 1))
        exp_sum_rows(0, 1, x, np.zeros(2), part, 1, 2, dt == np.float32)
        y = np.ones((1, 2, 1, 2, 3), dt)
        exp_sum_columns(0, 1, y, np.zeros(3), np.empty(3), 8, dt == np.float32)
