"""@njit 2-D pooling over a (planes, H, W) contiguous view: one plane per task, windows clipped
to the input (padded positions are absent), Max with NaN propagation and the index of the first
maximum, Avg summed in float64 and divided by the window's count. The window comes as one
`geometry.Window2d` record. Serial and nogil, run on
`jit.parallel_for`'s threads; float32 and float64 inputs only (two specializations)."""

from __future__ import annotations

import numpy as np

from ..geometry import Window2d
from .jit import njit
from .windows import KERNEL, PADDED


@njit(inline="always")
def _cols(w, ow, kw, sw, dw, pl):
    """Output columns [j_lo, j_hi) whose whole window lies inside the row (no clipping)."""
    j_lo = min(ow, max(0, -(-pl // sw)))
    j_hi = max(j_lo, min(ow, (w - 1 - (kw - 1) * dw + pl) // sw + 1))
    return j_lo, j_hi


@njit(inline="always")
def _other_col(jx, j_lo, skip):
    """The jx-th output column of a row whose `skip` unrolled columns from j_lo on were taken:
    the border loops run over the rest instead of testing every column (such a test in the loop
    cost as much as the unrolled rows themselves: 3.8 -> 1.8 ns an output, measured)."""
    return jx + skip if jx >= j_lo else jx


@njit(inline="always")
def _taps_inside(start, k, d, size):
    """The taps [lo, hi) of a window from `start` (k taps, dilation d) that fall inside 0..size."""
    lo = 0
    while lo < k and start + lo * d < 0:
        lo += 1
    hi = k
    while hi > lo and start + (hi - 1) * d >= size:
        hi -= 1
    return lo, hi


@njit(inline="always")
def _step(v, pos, best, where):
    """v replaces best when greater, or when it is the window's first NaN."""
    take = (v > best) | ((v != v) & (best == best))  # bitwise: no short-circuit branches
    return (v if take else best), (pos if take else where)


@njit(inline="always")
def _row33(plane, y0, w, orow, irow, j_lo, j_hi, stride, pl):
    """Output columns j_lo..j_hi of a 3x3 window row wholly inside the plane, unrolled. With a
    literal stride (1, 2) LLVM vectorizes it across j; the compares become selects. The loop
    indexes zero-based slices: an index that might be negative keeps numba's wraparound check,
    which stops the vectorizer (measured 61 vs 9.6 ms on (512,112,112))."""
    base = j_lo * stride - pl
    r0 = plane[y0, base:]
    r1 = plane[y0 + 1, base:]
    r2 = plane[y0 + 2, base:]
    o = orow[j_lo:j_hi]
    ii = irow[j_lo:j_hi]
    q0 = y0 * w + base
    for jj in range(j_hi - j_lo):
        x0 = jj * stride
        q = q0 + x0
        best = r0[x0]
        where = q
        best, where = _step(r0[x0 + 1], q + 1, best, where)
        best, where = _step(r0[x0 + 2], q + 2, best, where)
        best, where = _step(r1[x0], q + w, best, where)
        best, where = _step(r1[x0 + 1], q + w + 1, best, where)
        best, where = _step(r1[x0 + 2], q + w + 2, best, where)
        best, where = _step(r2[x0], q + 2 * w, best, where)
        best, where = _step(r2[x0 + 1], q + 2 * w + 1, best, where)
        best, where = _step(r2[x0 + 2], q + 2 * w + 2, best, where)
        o[jj] = best
        ii[jj] = where


@njit(inline="always")
def _clamped33(plane, y0, x0, h, w):
    ya = min(max(y0, 0), h - 1)
    yb = min(max(y0 + 1, 0), h - 1)
    yc = min(max(y0 + 2, 0), h - 1)
    xa = min(max(x0, 0), w - 1)
    xb = min(max(x0 + 1, 0), w - 1)
    xc = min(max(x0 + 2, 0), w - 1)
    best = plane[ya, xa]
    where = ya * w + xa
    best, where = _step(plane[ya, xb], ya * w + xb, best, where)
    best, where = _step(plane[ya, xc], ya * w + xc, best, where)
    best, where = _step(plane[yb, xa], yb * w + xa, best, where)
    best, where = _step(plane[yb, xb], yb * w + xb, best, where)
    best, where = _step(plane[yb, xc], yb * w + xc, best, where)
    best, where = _step(plane[yc, xa], yc * w + xa, best, where)
    best, where = _step(plane[yc, xb], yc * w + xb, best, where)
    best, where = _step(plane[yc, xc], yc * w + xc, best, where)
    return best, where


@njit(error_model="numpy")
def max_pool2d(t_lo, t_hi, x, out, idx, g, planes_per, plane_step):
    """The first maximum of each window in row-major order (the first NaN, if any), and its flat
    position: in the plane, plus (p % planes_per) * plane_step (MaxPool-8's `axis`). Windows are
    clipped to the plane (padding is absent); 3x3 windows inside the plane take `_row33`
    (measured 8x faster than the general loop on random data), those on its border
    `_clamped33`."""
    kh, kw, sh, sw, dh, dw, pt, pl = g.kh, g.kw, g.sh, g.sw, g.dh, g.dw, g.pt, g.pl
    _, h, w = x.shape
    _, oh, ow = out.shape
    j_lo, j_hi = _cols(w, ow, kw, sw, dw, pl)
    k33 = kh == 3 and kw == 3 and dh == 1 and dw == 1
    for p in range(t_lo, t_hi):
        plane = x[p]
        for i in range(oh):
            y0 = i * sh - pt
            a_lo, a_hi = _taps_inside(y0, kh, dh, h)
            orow = out[p, i]
            irow = idx[p, i]
            fast = k33 and a_lo == 0 and a_hi == 3
            if fast:
                if sw == 2:
                    _row33(plane, y0, w, orow, irow, j_lo, j_hi, 2, pl)
                elif sw == 1:
                    _row33(plane, y0, w, orow, irow, j_lo, j_hi, 1, pl)
                else:
                    _row33(plane, y0, w, orow, irow, j_lo, j_hi, sw, pl)
            rows_in = k33 and y0 + 2 >= 0 and y0 < h  # a 3x3 window with a row inside the plane
            skip = j_hi - j_lo if fast else 0
            for jx in range(ow - skip):
                j = _other_col(jx, j_lo, skip)
                x0 = j * sw - pl
                if rows_in and x0 + 2 >= 0 and x0 < w:
                    # a border window, as 3x3 with its outside rows and columns clamped onto the
                    # nearest inside one: that one is in the window and is met again right
                    # before or after itself in row-major order, so the first maximum (or NaN)
                    # and its position are the clipped window's; no branch mispredicts
                    best, where = _clamped33(plane, y0, x0, h, w)
                    orow[j] = best
                    irow[j] = where
                    continue
                b_lo, b_hi = _taps_inside(x0, kw, dw, w)
                y = y0 + a_lo * dh
                xx = x0 + b_lo * dw
                best = plane[y, xx]
                where = y * w + xx
                for a in range(a_lo, a_hi):
                    y = y0 + a * dh
                    row = plane[y]
                    for b in range(b_lo, b_hi):
                        xx = x0 + b * dw
                        best, where = _step(row[xx], y * w + xx, best, where)
                orow[j] = best
                irow[j] = where
            if plane_step:
                shift = (p % planes_per) * plane_step
                for j in range(ow):
                    irow[j] += shift


@njit(inline="always")
def _vmax(v, best):
    """v when greater, or when NaN: a NaN, once taken, stays (nothing compares greater)."""
    return v if (v > best) | (v != v) else best


@njit(inline="always")
def _max_row33(plane, y0, orow, j_lo, j_hi, stride, pl, col):
    """Output columns j_lo..j_hi of a 3x3 window row wholly inside the plane, separably: the
    three rows' maxima column by column into `col` (contiguous: vectorized), then three of those
    per output. Measured 2.6 -> 1.2 ns an output on (64,112,112) float32 at stride 2 against
    nine selects per output. The maximum is the window's (NaN when it holds one); of a zero
    maximum held as +0 and -0 it is the first in column order, where the indexed kernel takes
    the first in row order (the two compare equal)."""
    base = j_lo * stride - pl
    n = j_hi - j_lo
    span = (n - 1) * stride + 3
    r0 = plane[y0, base : base + span]
    r1 = plane[y0 + 1, base : base + span]
    r2 = plane[y0 + 2, base : base + span]
    v = col[:span]
    for xx in range(span):
        v[xx] = _vmax(r2[xx], _vmax(r1[xx], r0[xx]))
    o = orow[j_lo:j_hi]
    if stride == 2:
        # the even and odd columns apart first, so that each output reads three contiguous
        # runs (the stride-2 reads did not vectorize): ResNet's 3x3/2 pooling of (8, 112, 112)
        # float32, one thread, 81 -> 49 us
        ev = col[span : span + n + 1]
        od = col[span + n + 1 : span + 2 * n + 1]
        for jj in range(n):
            ev[jj] = v[2 * jj]
            od[jj] = v[2 * jj + 1]
        ev[n] = v[2 * n]
        for jj in range(n):
            o[jj] = _vmax(ev[jj + 1], _vmax(od[jj], ev[jj]))
        return
    for jj in range(n):
        x0 = jj * stride
        o[jj] = _vmax(v[x0 + 2], _vmax(v[x0 + 1], v[x0]))


@njit(error_model="numpy")
def max_pool2d_values(t_lo, t_hi, x, out, g):
    """`max_pool2d`'s values alone, for a MaxPool whose indices nothing reads (ResNet's): the
    maximum of each window clipped to the plane, NaN when the window holds one."""
    kh, kw, sh, sw, dh, dw, pt, pl = g.kh, g.kw, g.sh, g.sw, g.dh, g.dw, g.pt, g.pl
    _, h, w = x.shape
    _, oh, ow = out.shape
    j_lo, j_hi = _cols(w, ow, kw, sw, dw, pl)
    k33 = kh == 3 and kw == 3 and dh == 1 and dw == 1
    col = np.empty(2 * w + 4, x.dtype)  # `_max_row33`'s column maxima, then their two phases
    for p in range(t_lo, t_hi):
        plane = x[p]
        for i in range(oh):
            y0 = i * sh - pt
            a_lo, a_hi = _taps_inside(y0, kh, dh, h)
            orow = out[p, i]
            fast = k33 and a_lo == 0 and a_hi == 3
            if fast and j_hi > j_lo:
                if sw == 2:
                    _max_row33(plane, y0, orow, j_lo, j_hi, 2, pl, col)
                elif sw == 1:
                    _max_row33(plane, y0, orow, j_lo, j_hi, 1, pl, col)
                else:
                    _max_row33(plane, y0, orow, j_lo, j_hi, sw, pl, col)
            skip = j_hi - j_lo if fast else 0
            for jx in range(ow - skip):
                j = _other_col(jx, j_lo, skip)
                x0 = j * sw - pl
                b_lo, b_hi = _taps_inside(x0, kw, dw, w)
                best = plane[y0 + a_lo * dh, x0 + b_lo * dw]
                for a in range(a_lo, a_hi):
                    row = plane[y0 + a * dh]
                    for b in range(b_lo, b_hi):
                        best = _vmax(row[x0 + b * dw], best)
                orow[j] = best


@njit(inline="always")
def _avg_row33(plane, y0, orow, j_lo, j_hi, stride, pl):
    """Output columns j_lo..j_hi of a 3x3 window row wholly inside the plane: the nine values
    summed in float64 in row-major order (as the general loop does), divided by 9."""
    base = j_lo * stride - pl
    r0 = plane[y0, base:]
    r1 = plane[y0 + 1, base:]
    r2 = plane[y0 + 2, base:]
    o = orow[j_lo:j_hi]
    for jj in range(j_hi - j_lo):
        x0 = jj * stride
        s = 0.0
        s += r0[x0]
        s += r0[x0 + 1]
        s += r0[x0 + 2]
        s += r1[x0]
        s += r1[x0 + 1]
        s += r1[x0 + 2]
        s += r2[x0]
        s += r2[x0 + 1]
        s += r2[x0 + 2]
        o[jj] = s / 9


@njit(error_model="numpy")
def avg_pool2d(t_lo, t_hi, x, out, g, mode):
    kh, kw, sh, sw, pt, pl, pb, pr = g.kh, g.kw, g.sh, g.sw, g.pt, g.pl, g.pb, g.pr
    _, h, w = x.shape
    _, oh, ow = out.shape
    j_lo, j_hi = _cols(w, ow, kw, sw, 1, pl)
    k33 = kh == 3 and kw == 3
    for p in range(t_lo, t_hi):
        plane = x[p]
        for i in range(oh):
            y0 = i * sh - pt
            fast = k33 and y0 >= 0 and y0 + 2 < h
            if fast:  # every count mode counts 9 inside the plane
                if sw == 2:
                    _avg_row33(plane, y0, out[p, i], j_lo, j_hi, 2, pl)
                elif sw == 1:
                    _avg_row33(plane, y0, out[p, i], j_lo, j_hi, 1, pl)
                else:
                    _avg_row33(plane, y0, out[p, i], j_lo, j_hi, sw, pl)
            skip = j_hi - j_lo if fast else 0
            for jx in range(ow - skip):
                j = _other_col(jx, j_lo, skip)
                x0 = j * sw - pl
                s = 0.0
                n = 0
                for a in range(kh):
                    y = y0 + a
                    if y < 0 or y >= h:
                        continue
                    for b in range(kw):
                        xx = x0 + b
                        if xx < 0 or xx >= w:
                            continue
                        s += plane[y, xx]
                        n += 1
                if mode == KERNEL:
                    n = kh * kw
                elif mode == PADDED:
                    ys = max(y0, -pt)
                    ye = min(y0 + kh, h + pb)
                    xs = max(x0, -pl)
                    xe = min(x0 + kw, w + pr)
                    n = max(0, ye - ys) * max(0, xe - xs)
                out[p, i, j] = s / n


def warm() -> None:
    g = Window2d(2, 2, 2, 2, 1, 1, 0, 0, 0, 0)
    for dt in (np.float32, np.float64):
        x = np.ones((1, 4, 4), dt)
        out = np.empty((1, 2, 2), dt)
        max_pool2d(0, 1, x, out, np.empty((1, 2, 2), np.int64), g, 1, 0)
        max_pool2d_values(0, 1, x, out, g)
        avg_pool2d(0, 1, x, out, g, 0)
