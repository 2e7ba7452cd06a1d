"""@njit 2-D convolution helpers: im2col straight from unpadded planes (the padding written as
zeros), and depthwise convolution over padded planes: (N*C, Hp, Wp) -> (N*C, OH, OW), one plane
per task. Each plane accumulates tap by tap in the data's type (float32 or float64): the same
products and sums, in the same order, as the numpy path's shifted-view loop, so the two agree
to the bit. The window comes as one `geometry.Window2d` record. Serial and nogil, run on
`jit.parallel_for`'s threads."""

from __future__ import annotations

import numpy as np

from ..geometry import Window2d
from .jit import njit

# accumulator elements per block of output rows: 8 KiB of float32, in the L1 cache with the rows
# the taps read (the whole plane's accumulator, 50 KB at 112x112, went through L2 once per tap:
# 3x3 over 1x32x112x112 0.42 -> 0.35 ms)
ACC_BLOCK = 2048


@njit(error_model="numpy", inline="always")
def _block_rows(width):
    """Output rows per accumulator block, for rows `width` elements apart."""
    return max(1, ACC_BLOCK // width)


@njit(error_model="numpy", inline="always")
def _rows_out(acc, dst, i0, i1, width):
    """dst's rows i0..i1 from a block's accumulator, rows `width` apart (row by row through 1-D
    views: 2-D indexing in the loop kept it from vectorizing, 2.4 us of a 112x112 plane's 9.7)."""
    ow = dst.shape[1]
    for i in range(i0, i1):
        d = dst[i]
        a = acc[(i - i0) * width :]
        for j in range(ow):
            d[j] = a[j]


@njit(error_model="numpy")
def _depthwise_unit(src, wc, dst, dh, dw, acc):
    """One plane of depthwise2d for unit strides, by blocks of output rows (`ACC_BLOCK`): each
    tap adds its weighted plane to rows as wide as the padded input's, so one tap is one flat
    loop over a block's rows (the last kw - 1 of each row are thrown away). Per output element
    the same products and sums in the same order; but long loops: a 56-wide row was shorter
    than LLVM's unrolled vector body (4 x 16 lanes) and ran scalar (7x7 over 1x96x56x56: 1.9 ->
    0.6 ms)."""
    hp, wp = src.shape
    kh, kw = wc.shape
    oh, ow = dst.shape
    flat = src.reshape(hp * wp)
    rows = _block_rows(wp)
    for i0 in range(0, oh, rows):
        i1 = min(oh, i0 + rows)
        n = (i1 - 1 - i0) * wp + ow  # a block's last row needs only its ow elements: reads stay inside the plane
        for m in range(n):
            acc[m] = 0
        for a in range(kh):
            for b in range(kw):
                wv = wc[a, b]
                off = (i0 + a * dh) * wp + b * dw
                for m in range(n):
                    acc[m] += flat[np.uintp(off + m)] * wv
        _rows_out(acc, dst, i0, i1, wp)


@njit(error_model="numpy")
def _deal(src, phases, pt, pl, sh, sw):
    """phases[Y % sh, X % sw, Y // sh, X // sw] = xpad[Y, X], xpad being src padded by pt rows
    and pl columns: the plane dealt into sh x sw phase planes (the cells in the padding are
    never written: they stay 0)."""
    h, wd = src.shape
    width = phases.shape[3]
    for f in range(sw):
        k_lo = max(0, (pl - f + sw - 1) // sw)
        k_hi = min(width, (wd + pl - f + sw - 1) // sw)
        first = k_lo * sw + f - pl
        for y in range(h):
            dst = phases[(pt + y) % sh, f, (pt + y) // sh]
            for k in range(k_hi - k_lo):
                dst[np.uintp(k_lo + k)] = src[y, np.uintp(first + k * sw)]


@njit(error_model="numpy")
def _depthwise_phased(phases, wc, dst, sh, sw, dh, dw, acc):
    """One plane of depthwise2d for strides above 1 from its phase planes (`_deal`): tap (a, b)
    reads phase plane ((a dh) % sh, (b dw) % sw) from row (a dh) // sh and column (b dw) // sw,
    so, as in `_depthwise_unit`, each tap is one flat loop over a block of rows as wide as a
    phase plane (a stride-2 gather ran scalar: 3x3 stride 2 over 1x48x112x112 took 0.42 ms)."""
    _, _, hh, width = phases.shape
    kh, kw = wc.shape
    oh, ow = dst.shape
    rows = _block_rows(width)
    for i0 in range(0, oh, rows):
        i1 = min(oh, i0 + rows)
        n = (i1 - 1 - i0) * width + ow
        for m in range(n):
            acc[m] = 0
        for a in range(kh):
            for b in range(kw):
                wv = wc[a, b]
                flat = phases[(a * dh) % sh, (b * dw) % sw].reshape(hh * width)
                off = (i0 + (a * dh) // sh) * width + (b * dw) // sw
                for m in range(n):
                    acc[m] += flat[np.uintp(off + m)] * wv
        _rows_out(acc, dst, i0, i1, width)


_ZERO = np.float32(0.0)  # exact in float64 too: float64 planes add in float64


@njit(error_model="numpy", inline="always")
def _taps33(r0, r1, r2, c, w):
    """The nine taps of a 3x3 window at column c of rows r0..r2, added in the order the
    tap-by-tap loop adds them, from 0 (the same bits, the sign of a zero included): in
    registers, where that loop loads and stores its accumulator once per tap."""
    v = _ZERO + r0[c] * w[0, 0]
    v = v + r0[c + 1] * w[0, 1]
    v = v + r0[c + 2] * w[0, 2]
    v = v + r1[c] * w[1, 0]
    v = v + r1[c + 1] * w[1, 1]
    v = v + r1[c + 2] * w[1, 2]
    v = v + r2[c] * w[2, 0]
    v = v + r2[c + 1] * w[2, 1]
    return v + r2[c + 2] * w[2, 2]


@njit(error_model="numpy")
def _unit33(src, wc, dst, acc):
    """`_depthwise_unit` for a 3x3 window without dilation: each element of a block's rows
    takes its nine taps at once (`_taps33`). 1x112x112: 9.1 -> 5.0 us a plane."""
    hp, wp = src.shape
    oh, ow = dst.shape
    flat = src.reshape(hp * wp)
    rows = _block_rows(wp)
    for i0 in range(0, oh, rows):
        i1 = min(oh, i0 + rows)
        n = (i1 - 1 - i0) * wp + ow
        r0 = flat[i0 * wp :]
        r1 = flat[(i0 + 1) * wp :]
        r2 = flat[(i0 + 2) * wp :]
        for m in range(n):
            acc[m] = _taps33(r0, r1, r2, m, wc)
        _rows_out(acc, dst, i0, i1, wp)


@njit(error_model="numpy")
def _stride2_33(src, wc, dst, acc):
    """A 3x3 window without dilation at strides 2 over the padded plane src: per output row,
    the unit-stride sums of its three input rows at every column up to the last window
    (`_taps33`), then every other one (stride-2 loads ran scalar, and dealing the plane into
    phases cost as much as the sums: 1x112x112 -> 56x56 9.3 -> 5.5 us a plane)."""
    oh, ow = dst.shape
    span = 2 * (ow - 1) + 1
    for i in range(oh):
        r0 = src[2 * i]
        r1 = src[2 * i + 1]
        r2 = src[2 * i + 2]
        for c in range(span):
            acc[c] = _taps33(r0, r1, r2, c, wc)
        d = dst[i]
        for j in range(ow):
            d[j] = acc[2 * j]


@njit(error_model="numpy")
def depthwise2d(t_lo, t_hi, x, w, out, channels, g):
    """out[p] = sum over taps (a, b) of w[p % channels, a, b] * xpad[p, a*dh + i*sh, b*dw + j*sw],
    xpad being plane p of x padded by the window's pads (>= 0), built one plane at a time in
    scratch planes (the L1/L2 cache) instead of a padded copy of the whole input: as it is for
    unit strides and for 3x3 windows at strides 2 (`_unit33`, `_stride2_33`: the nine taps at
    once), dealt into stride phases for others."""
    sh, sw, dh, dw = g.sh, g.sw, g.dh, g.dw
    pt, pl, pb, pr = g.pt, g.pl, g.pb, g.pr
    _, kh, kw = w.shape
    _, oh, ow = out.shape
    _, h, wd = x.shape
    hp, wp = h + pt + pb, wd + pl + pr
    unit = sh == 1 and sw == 1
    k33 = kh == 3 and kw == 3 and dh == 1 and dw == 1
    direct = unit or (k33 and sh == 2 and sw == 2)
    padded = direct and (pt or pl or pb or pr)
    scratch = np.zeros((hp, wp) if padded else (1, 1), x.dtype)
    width = (wp + sw - 1) // sw
    phases = np.zeros((1, 1, 1, 1) if direct else (sh, sw, (hp + sh - 1) // sh, width), x.dtype)
    row_width = wp if direct else width
    acc = np.empty(min(oh, _block_rows(row_width)) * row_width + wp, out.dtype)
    for p in range(t_lo, t_hi):
        if not direct:
            _deal(x[p], phases, pt, pl, sh, sw)
            _depthwise_phased(phases, w[p % channels], out[p], sh, sw, dh, dw, acc)
            continue
        src = x[p]
        if padded:
            for i in range(h):  # the borders stay 0
                d = scratch[pt + i, pl:]
                s = x[p, i]
                for j in range(wd):
                    d[j] = s[j]
            src = scratch
        if not unit:
            _stride2_33(src, w[p % channels], out[p], acc)
        elif k33:
            _unit33(src, w[p % channels], out[p], acc)
        else:
            _depthwise_unit(src, w[p % channels], out[p], dh, dw, acc)


@njit(error_model="numpy")
def im2col2d(t_lo, t_hi, x, cols, g, i0):
    """cols[p, a, b, i, j] = x[p, (i0 + i)*sh - pt + a*dh, j*sw - pl + b*dw], 0 where that falls
    in the padding: the columns of a padded convolution straight from the unpadded planes
    (pads >= 0), for the output rows from i0 on (as many as cols holds), one plane per task. Direct unsigned indexing, and the divisions once per call: views and
    divisions per row cost 3x the copying on small maps (8x8: 9 -> 3 us; 56x56: 3x too)."""
    sh, sw, dh, dw, pt, pl = g.sh, g.sw, g.dh, g.dw, g.pt, g.pl
    _, h, w = x.shape
    _, kh, kw, oh, ow = cols.shape
    lo = np.empty(kw, np.int64)
    hi = np.empty(kw, np.int64)
    for b in range(kw):  # the output columns whose tap b lands inside the row
        off = b * dw - pl
        lo[b] = 0 if off >= 0 else min(ow, (-off + sw - 1) // sw)
        hi[b] = max(lo[b], min(ow, (w - 1 - off) // sw + 1))
    for p in range(t_lo, t_hi):
        for a in range(kh):
            for b in range(kw):
                j_lo = lo[b]
                j_hi = hi[b]
                base = j_lo * sw + b * dw - pl  # >= 0
                for i in range(oh):
                    y = (i0 + i) * sh - pt + a * dh
                    if y < 0 or y >= h:
                        for j in range(ow):
                            cols[p, a, b, i, j] = 0
                        continue
                    for j in range(j_lo):
                        cols[p, a, b, i, j] = 0
                    for j in range(j_hi, ow):
                        cols[p, a, b, i, j] = 0
                    if sw == 1:
                        for j in range(j_hi - j_lo):
                            cols[p, a, b, i, np.uintp(j_lo + j)] = x[p, y, np.uintp(base + j)]
                    elif sw == 2:
                        for j in range(j_hi - j_lo):
                            cols[p, a, b, i, np.uintp(j_lo + j)] = x[p, y, np.uintp(base + 2 * j)]
                    else:
                        for j in range(j_hi - j_lo):
                            cols[p, a, b, i, np.uintp(j_lo + j)] = x[p, y, np.uintp(base + sw * j)]


def warm() -> None:
    for dt in (np.float32, np.float64):
        xp = np.ones((2, 6, 6), dt)
        w = np.ones((2, 3, 3), dt)
        for s in (1, 2, 3):
            o = (6 - 3) // s + 1
            depthwise2d(0, 2, xp, w, np.empty((2, o, o), dt), 2, Window2d(3, 3, s, s, 1, 1, 0, 0, 0, 0))
            im2col2d(0, 2, xp, np.empty((2, 3, 3, o + 1, o + 1), dt), Window2d(3, 3, s, s, 1, 1, 1, 1, 1, 1), 0)
