"""@njit 2-D convolution helpers: im2col straight from unpadded planes (the padding written as
zeros), and depthwise convolution over padded planes: (N*C, Hp, Wp) -> (N*C, OH, OW), one plane
per task. Each plane accumulates tap by tap in the data's type (float32 or float64): the same
products and sums, in the same order, as the numpy path's shifted-view loop, so the two agree
to the bit. The window comes as one `geometry.Window2d` record. Serial and nogil, run on
`jit.parallel_for`'s threads."""

from __future__ import annotations

import numpy as np

from ..geometry import Window2d
from . import jit
from .jit import njit
from .simd import LANES, transpose16, vadd, vclip, vfma, vfma2, vload, vload_even, vmul, vrelu, vsplat, vstore, vzero

# accumulator elements per block of output rows: 8 KiB of float32, in the L1 cache with the rows
# the taps read (the whole plane's accumulator, 50 KB at 112x112, went through L2 once per tap:
# 3x3 over 1x32x112x112 0.42 -> 0.35 ms)
ACC_BLOCK = 2048


@njit(error_model="numpy", inline="always")
def _block_rows(width):
    """Output rows per accumulator block, for rows `width` elements apart."""
    return max(1, ACC_BLOCK // width)


@njit(error_model="numpy", inline="always")
def _into_padded(plane, flat, pt, pl, wp):
    """The plane (H, W) into the flat padded plane (rows wp wide) from row pt, column pl: the
    borders are left as they are (zeros, never written)."""
    h, wd = plane.shape
    for i in range(h):
        d = flat[(pt + i) * wp + pl :]
        s = plane[i]
        for j in range(wd):
            d[j] = s[j]


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


@njit(error_model="numpy", inline="always")
def _phase_cols(f, pl, sw, wd, width):
    """(k_lo, k_hi, first): the columns k_lo..k_hi of phase f (X % sw == f) that fall inside
    the unpadded row, the first of them at its column `first`."""
    k_lo = max(0, (pl - f + sw - 1) // sw)
    k_hi = min(width, (wd + pl - f + sw - 1) // sw)
    return k_lo, k_hi, k_lo * sw + f - pl


@njit(error_model="numpy")
def _deal(src, phases, pt, pl, sh, sw):
    """phases[Y % sh, X % sw, Y // sh, X // sw] = xpad[Y, X], xpad being src padded by pt rows
    and pl columns: the plane dealt into sh x sw phase planes (the cells in the padding are
    never written: they stay 0)."""
    h, wd = src.shape
    width = phases.shape[3]
    for f in range(sw):
        k_lo, k_hi, first = _phase_cols(f, pl, sw, wd, width)
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


@njit(error_model="numpy", inline="always")
def _dw_vectors4(flat, wk, offs, base, step):
    """Sixteen outputs of four rows (starts base, base + step, ...: four independent sums, whose
    additions overlap): each the sum over taps k, in order, of wk[k] times the padded plane from
    start + offs[k], from +0.0, each product rounded, then each sum (the numpy path's
    operations)."""
    a0, a1, a2, a3 = vzero(), vzero(), vzero(), vzero()
    for k in range(wk.size):
        a0, a1, a2, a3 = _add_products4(flat, base + offs[k], step, vsplat(wk[k]), a0, a1, a2, a3)
    return a0, a1, a2, a3


@njit(error_model="numpy", inline="always")
def _add_products4(src, at, step, s, a0, a1, a2, a3):
    """a0..a3 plus s times the vectors of src at at, at + step, at + 2 step, at + 3 step: each
    product rounded, then each sum."""
    return (
        vadd(a0, vmul(vload(src, at), s)),
        vadd(a1, vmul(vload(src, at + step), s)),
        vadd(a2, vmul(vload(src, at + 2 * step), s)),
        vadd(a3, vmul(vload(src, at + 3 * step), s)),
    )


@njit(error_model="numpy", inline="always")
def _dw_vector(flat, wk, offs, base):
    """`_dw_vectors4` for one row."""
    acc = vzero()
    for k in range(wk.size):
        acc = vadd(acc, vmul(vload(flat, base + offs[k]), vsplat(wk[k])))
    return acc


@njit(error_model="numpy", inline="always")
def _dw_put(dst, j0, ow, v, tail):
    """dst[j0:j0 + 16] = v, or as much of it as the row holds."""
    if j0 + LANES <= ow:
        vstore(dst, j0, v)
    else:
        vstore(tail, 0, v)
        for j in range(ow - j0):
            dst[j0 + j] = tail[j]


@njit(error_model="numpy")
def depthwise_simd(t_lo, t_hi, x, w, out, channels, g):
    """depthwise2d for float32 at unit strides, in registers: plane p is copied into a zeroed
    scratch plane with its pads (the borders never written), then sixteen outputs of four rows
    at a time sum their taps straight from its rows. The same products and sums, in the same
    order, as the numpy path: its bits. (Windows above 3x3 over planes too large for
    `depthwise_lanes`.)"""
    dh, dw = g.dh, g.dw
    pt, pl = g.pt, g.pl
    _, kh, kw = w.shape
    _, oh, ow = out.shape
    _, h, wd = x.shape
    wp = wd + pl + g.pr
    # a row's last vector reads up to 2 * LANES elements past its start
    flat = np.zeros((h + pt + g.pb) * wp + 2 * LANES + kw * dw, np.float32)
    tail = np.empty(LANES, np.float32)
    offs = np.empty(kh * kw, np.int64)  # where each tap starts from a window's corner
    for a in range(kh):
        for b in range(kw):
            offs[a * kw + b] = a * dh * wp + b * dw
    for p in range(t_lo, t_hi):
        _into_padded(x[p], flat, pt, pl, wp)
        wk = w[p % channels].reshape(kh * kw)
        dst = out[p]
        i = 0
        while i + 4 <= oh:
            for j0 in range(0, ow, LANES):
                v0, v1, v2, v3 = _dw_vectors4(flat, wk, offs, i * wp + j0, wp)
                _dw_put(dst[i], j0, ow, v0, tail)
                _dw_put(dst[i + 1], j0, ow, v1, tail)
                _dw_put(dst[i + 2], j0, ow, v2, tail)
                _dw_put(dst[i + 3], j0, ow, v3, tail)
            i += 4
        for r in range(i, oh):
            for j0 in range(0, ow, LANES):
                _dw_put(dst[r], j0, ow, _dw_vector(flat, wk, offs, r * wp + j0), tail)


@njit(error_model="numpy", inline="always")
def _dw_lanes4(buf, wv, offs, at, step):
    """Four outputs of 16 planes, `step` apart in the interleaved padded planes `buf` (16 lanes an
    element): each the sum over taps k, in order, of wv's 16 weights of tap k times the 16 inputs
    from at + offs[k], from +0.0, each product rounded, then each sum (the numpy path's
    operations, lane by lane: its bits). Four independent sums overlap their additions."""
    a0, a1, a2, a3 = vzero(), vzero(), vzero(), vzero()
    for k in range(offs.size):
        a0, a1, a2, a3 = _add_products4(buf, at + offs[k], step, vload(wv, k * LANES), a0, a1, a2, a3)
    return a0, a1, a2, a3


@njit(error_model="numpy", inline="always")
def _lanes_in(xs, p0, m0):
    """The 16 planes from p0 of xs (planes, H W) at positions m0..m0 + 16, as 16 vectors of the
    16 planes at one position each."""
    return transpose16(
        vload(xs[p0], m0), vload(xs[p0 + 1], m0), vload(xs[p0 + 2], m0), vload(xs[p0 + 3], m0),
        vload(xs[p0 + 4], m0), vload(xs[p0 + 5], m0), vload(xs[p0 + 6], m0), vload(xs[p0 + 7], m0),
        vload(xs[p0 + 8], m0), vload(xs[p0 + 9], m0), vload(xs[p0 + 10], m0), vload(xs[p0 + 11], m0),
        vload(xs[p0 + 12], m0), vload(xs[p0 + 13], m0), vload(xs[p0 + 14], m0), vload(xs[p0 + 15], m0),
    )  # fmt: skip


@njit(error_model="numpy", inline="always")
def _lane_put(buf, v, i, j, wd, wp, pt, pl):
    """Store the 16 planes' element (i, j) into the interleaved padded scratch; the next
    position's (i, j)."""
    vstore(buf, ((i + pt) * wp + j + pl) * LANES, v)
    j += 1
    if j == wd:
        return i + 1, 0
    return i, j


@njit(error_model="numpy")
def _lanes_fill(xs, p0, buf, wd, wp, pt, pl):
    """Planes p0..p0 + 16 of xs (planes, H W) into the interleaved padded scratch: 16 positions
    a transposition in registers (`simd.transpose16`), the last few one by one."""
    hw = xs.shape[1]
    m0 = 0
    while m0 + LANES <= hw:
        t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11, t12, t13, t14, t15 = _lanes_in(xs, p0, m0)
        i, j = m0 // wd, m0 % wd
        i, j = _lane_put(buf, t0, i, j, wd, wp, pt, pl)
        i, j = _lane_put(buf, t1, i, j, wd, wp, pt, pl)
        i, j = _lane_put(buf, t2, i, j, wd, wp, pt, pl)
        i, j = _lane_put(buf, t3, i, j, wd, wp, pt, pl)
        i, j = _lane_put(buf, t4, i, j, wd, wp, pt, pl)
        i, j = _lane_put(buf, t5, i, j, wd, wp, pt, pl)
        i, j = _lane_put(buf, t6, i, j, wd, wp, pt, pl)
        i, j = _lane_put(buf, t7, i, j, wd, wp, pt, pl)
        i, j = _lane_put(buf, t8, i, j, wd, wp, pt, pl)
        i, j = _lane_put(buf, t9, i, j, wd, wp, pt, pl)
        i, j = _lane_put(buf, t10, i, j, wd, wp, pt, pl)
        i, j = _lane_put(buf, t11, i, j, wd, wp, pt, pl)
        i, j = _lane_put(buf, t12, i, j, wd, wp, pt, pl)
        i, j = _lane_put(buf, t13, i, j, wd, wp, pt, pl)
        i, j = _lane_put(buf, t14, i, j, wd, wp, pt, pl)
        _lane_put(buf, t15, i, j, wd, wp, pt, pl)
        m0 += LANES
    for k in range(LANES):
        src = xs[p0 + k]
        for m in range(m0, hw):
            buf[((m // wd + pt) * wp + m % wd + pl) * LANES + k] = src[m]


@njit(error_model="numpy")
def _lanes_out(res, outs, p0):
    """The interleaved results (OH OW positions of 16 lanes) dealt into planes p0..p0 + 16 of
    outs (planes, OH OW): 16 positions a transposition in registers, the last few one by one."""
    m_n = outs.shape[1]
    m0 = 0
    while m0 + LANES <= m_n:
        at = m0 * LANES
        t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11, t12, t13, t14, t15 = transpose16(
            vload(res, at), vload(res, at + 16), vload(res, at + 32), vload(res, at + 48),
            vload(res, at + 64), vload(res, at + 80), vload(res, at + 96), vload(res, at + 112),
            vload(res, at + 128), vload(res, at + 144), vload(res, at + 160), vload(res, at + 176),
            vload(res, at + 192), vload(res, at + 208), vload(res, at + 224), vload(res, at + 240),
        )  # fmt: skip
        vstore(outs[p0], m0, t0)
        vstore(outs[p0 + 1], m0, t1)
        vstore(outs[p0 + 2], m0, t2)
        vstore(outs[p0 + 3], m0, t3)
        vstore(outs[p0 + 4], m0, t4)
        vstore(outs[p0 + 5], m0, t5)
        vstore(outs[p0 + 6], m0, t6)
        vstore(outs[p0 + 7], m0, t7)
        vstore(outs[p0 + 8], m0, t8)
        vstore(outs[p0 + 9], m0, t9)
        vstore(outs[p0 + 10], m0, t10)
        vstore(outs[p0 + 11], m0, t11)
        vstore(outs[p0 + 12], m0, t12)
        vstore(outs[p0 + 13], m0, t13)
        vstore(outs[p0 + 14], m0, t14)
        vstore(outs[p0 + 15], m0, t15)
        m0 += LANES
    for k in range(LANES):
        dst = outs[p0 + k]
        for m in range(m0, m_n):
            dst[m] = res[m * LANES + k]


@njit(error_model="numpy")
def depthwise_lanes(t_lo, t_hi, x, w, out, channels, g):
    """depthwise2d for float32 by blocks of 16 planes, one plane a lane: planes p0..p0 + 16 of x
    are interleaved into a zeroed padded scratch (16 floats an element: the borders never
    written; `_lanes_fill`), every output of the 16 sums its taps with whole vectors
    (`_dw_lanes4`), and the results are dealt back into their planes (`_lanes_out`). For small
    planes, where the plane-by-plane kernels' short rows cost more than the sums. A task is a
    block of 16 planes: x holds a multiple of 16."""
    sh, sw, dh, dw = g.sh, g.sw, g.dh, g.dw
    pt, pl = g.pt, g.pl
    _, kh, kw = w.shape
    _, oh, ow = out.shape
    planes, h, wd = x.shape
    wp = wd + pl + g.pr
    xs = x.reshape(planes, h * wd)
    outs = out.reshape(planes, oh * ow)
    buf = np.zeros((h + pt + g.pb) * wp * LANES, np.float32)
    res = np.empty(oh * ow * LANES, np.float32)
    wv = np.empty(kh * kw * LANES, np.float32)
    offs = np.empty(kh * kw, np.int64)  # each tap's start from a window's corner, in floats
    for a in range(kh):
        for b in range(kw):
            offs[a * kw + b] = (a * dh * wp + b * dw) * LANES
    step = sw * LANES
    for t in range(t_lo, t_hi):
        p0 = t * LANES
        for k in range(LANES):
            wk = w[(p0 + k) % channels]
            for a in range(kh):
                for b in range(kw):
                    wv[(a * kw + b) * LANES + k] = wk[a, b]
        _lanes_fill(xs, p0, buf, wd, wp, pt, pl)
        for i in range(oh):
            at = i * sh * wp * LANES
            o = i * ow * LANES
            j = 0
            while j + 4 <= ow:
                v0, v1, v2, v3 = _dw_lanes4(buf, wv, offs, at + j * step, step)
                vstore(res, o + j * LANES, v0)
                vstore(res, o + (j + 1) * LANES, v1)
                vstore(res, o + (j + 2) * LANES, v2)
                vstore(res, o + (j + 3) * LANES, v3)
                j += 4
            for jj in range(j, ow):
                acc = vzero()
                for k in range(offs.size):
                    acc = vadd(acc, vmul(vload(buf, at + jj * step + offs[k]), vload(wv, k * LANES)))
                vstore(res, o + jj * LANES, acc)
        _lanes_out(res, outs, p0)


def lanes_tasks(planes):
    """The number of tasks of `depthwise_lanes` (planes a multiple of 16)."""
    return planes // LANES


@njit(error_model="numpy")
def deal_planes(t_lo, t_hi, x, phases, g):
    """phases[p] = plane p of x padded by the window's top and left pads and dealt into its
    stride phases (`_deal`); `phases` must come zeroed (the padding is never written)."""
    for p in range(t_lo, t_hi):
        _deal(x[p], phases[p], g.pt, g.pl, g.sh, g.sw)


@njit(error_model="numpy", fastmath={"contract"}, inline="always")
def _taps4x4(acc, n, f0, f1, f2, f3, o0, o1, o2, o3, w, o, c, a, b):
    """Four taps (a, b..b+3) into the accumulators of output channels o..o+3 (acc rows 0..3):
    each source element loaded once for the four."""
    a0, a1, a2, a3 = acc[0], acc[1], acc[2], acc[3]
    # the weights in locals: read in the loop, they were loaded again every iteration (the
    # stores to acc might alias them)
    w00, w01, w02, w03 = w[o, c, a, b], w[o, c, a, b + 1], w[o, c, a, b + 2], w[o, c, a, b + 3]
    w10, w11, w12, w13 = w[o + 1, c, a, b], w[o + 1, c, a, b + 1], w[o + 1, c, a, b + 2], w[o + 1, c, a, b + 3]
    w20, w21, w22, w23 = w[o + 2, c, a, b], w[o + 2, c, a, b + 1], w[o + 2, c, a, b + 2], w[o + 2, c, a, b + 3]
    w30, w31, w32, w33 = w[o + 3, c, a, b], w[o + 3, c, a, b + 1], w[o + 3, c, a, b + 2], w[o + 3, c, a, b + 3]
    for m in range(n):
        x0 = f0[np.uintp(o0 + m)]
        x1 = f1[np.uintp(o1 + m)]
        x2 = f2[np.uintp(o2 + m)]
        x3 = f3[np.uintp(o3 + m)]
        a0[m] = (((a0[m] + x0 * w00) + x1 * w01) + x2 * w02) + x3 * w03
        a1[m] = (((a1[m] + x0 * w10) + x1 * w11) + x2 * w12) + x3 * w13
        a2[m] = (((a2[m] + x0 * w20) + x1 * w21) + x2 * w22) + x3 * w23
        a3[m] = (((a3[m] + x0 * w30) + x1 * w31) + x2 * w32) + x3 * w33


@njit(error_model="numpy", fastmath={"contract"}, inline="always")
def _taps3x4(acc, n, f0, f1, f2, o0, o1, o2, w, o, c, a, b):
    """`_taps4x4` for three taps (a 3-wide window, or a wider one's last three)."""
    a0, a1, a2, a3 = acc[0], acc[1], acc[2], acc[3]
    w00, w01, w02 = w[o, c, a, b], w[o, c, a, b + 1], w[o, c, a, b + 2]
    w10, w11, w12 = w[o + 1, c, a, b], w[o + 1, c, a, b + 1], w[o + 1, c, a, b + 2]
    w20, w21, w22 = w[o + 2, c, a, b], w[o + 2, c, a, b + 1], w[o + 2, c, a, b + 2]
    w30, w31, w32 = w[o + 3, c, a, b], w[o + 3, c, a, b + 1], w[o + 3, c, a, b + 2]
    for m in range(n):
        x0 = f0[np.uintp(o0 + m)]
        x1 = f1[np.uintp(o1 + m)]
        x2 = f2[np.uintp(o2 + m)]
        a0[m] = ((a0[m] + x0 * w00) + x1 * w01) + x2 * w02
        a1[m] = ((a1[m] + x0 * w10) + x1 * w11) + x2 * w12
        a2[m] = ((a2[m] + x0 * w20) + x1 * w21) + x2 * w22
        a3[m] = ((a3[m] + x0 * w30) + x1 * w31) + x2 * w32


@njit(error_model="numpy", fastmath={"contract"}, inline="always")
def _tap1x4(acc, n, f, off, w, o, c, a, b):
    """One tap into the four channels' accumulators."""
    a0, a1, a2, a3 = acc[0], acc[1], acc[2], acc[3]
    w0, w1, w2, w3 = w[o, c, a, b], w[o + 1, c, a, b], w[o + 2, c, a, b], w[o + 3, c, a, b]
    for m in range(n):
        x = f[np.uintp(off + m)]
        a0[m] += x * w0
        a1[m] += x * w1
        a2[m] += x * w2
        a3[m] += x * w3


@njit(error_model="numpy", fastmath={"contract"})
def dense_phased(t_lo, t_hi, phases, w, out, g):
    """A dense 2-D convolution of few input channels (an image stem: 3) without im2col's
    columns: out[n, o, i, j] = sum over input channels c and taps (a, b) of w[o, c, a, b] *
    xpad[n, c, a*dh + i*sh, b*dw + j*sw], from the input planes' stride phases (`deal_planes`,
    phases (N, C, sh, sw, H', W')). A task is four output channels and a block of output rows
    (`dense_tasks`; w holds a multiple of four channels, zeros past out's). As in
    `_depthwise_phased`, a tap is one flat loop over the block's rows; four or three taps go in
    one loop for the four channels, each element read once for them (ResNet's 7x7 stem: 0.99 ->
    0.42 ms against one tap and one channel a loop). Each output is summed over c, then a,
    then b, from 0, in the data's type (contracted to fused multiply-adds)."""
    sh, sw, dh, dw = g.sh, g.sw, g.dh, g.dw
    n_w, c_in, kh, kw = w.shape
    _, n_out, oh, ow = out.shape
    hh, width = phases.shape[4], phases.shape[5]
    rows = _block_rows(width)
    blocks = n_w // 4
    row_blocks = (oh + rows - 1) // rows
    acc = np.empty((4, min(oh, rows) * width + width), out.dtype)
    for t in range(t_lo, t_hi):
        b_i = t // (blocks * row_blocks)
        rem = t - b_i * blocks * row_blocks
        o = rem // row_blocks * 4
        i0 = (rem % row_blocks) * rows
        i1 = min(oh, i0 + rows)
        n = (i1 - 1 - i0) * width + ow
        acc[:, :n] = 0
        for c in range(c_in):
            for a in range(kh):
                row = (i0 + (a * dh) // sh) * width
                ph = phases[b_i, c, (a * dh) % sh]
                b = 0
                while b < kw:
                    f0 = ph[(b * dw) % sw].reshape(hh * width)
                    o0 = row + (b * dw) // sw
                    if kw - b >= 3:
                        f1 = ph[((b + 1) * dw) % sw].reshape(hh * width)
                        f2 = ph[((b + 2) * dw) % sw].reshape(hh * width)
                        o1 = row + ((b + 1) * dw) // sw
                        o2 = row + ((b + 2) * dw) // sw
                        if kw - b >= 4:
                            f3 = ph[((b + 3) * dw) % sw].reshape(hh * width)
                            _taps4x4(acc, n, f0, f1, f2, f3, o0, o1, o2, row + ((b + 3) * dw) // sw, w, o, c, a, b)
                            b += 4
                        else:
                            _taps3x4(acc, n, f0, f1, f2, o0, o1, o2, w, o, c, a, b)
                            b += 3
                    else:
                        _tap1x4(acc, n, f0, o0, w, o, c, a, b)
                        b += 1
        for q in range(min(4, n_out - o)):
            _rows_out(acc[q], out[b_i, o + q], i0, i1, width)


@njit(error_model="numpy", inline="always")
def _deal_row2(src, first, dst, base, n):
    """dst[base + k] = src[first + 2 k] for k < n, sixteen at a time by two loads and a shuffle
    (the rows of 3x224x224 into stride-2 phases: 50 -> 31 us), then one by one."""
    k = 0
    while k + LANES <= n and first + 2 * (k + LANES) <= src.size:
        vstore(dst, base + k, vload_even(src, first + 2 * k))
        k += LANES
    for kk in range(k, n):
        dst[np.uintp(base + kk)] = src[np.uintp(first + 2 * kk)]


@njit(error_model="numpy")
def deal_flat(t_lo, t_hi, x, buf, g, width):
    """buf[p, (Y % sh) sw + X % sw, (Y // sh) width + X // sw] = xpad[p, Y, X]: `_deal` into flat
    phase planes `width` wide, each as long as buf's last axis (`dense_simd` reads past a plane's
    rows); buf must come zeroed (the padding is never written)."""
    sh, sw, pt, pl = g.sh, g.sw, g.pt, g.pl
    _, h, wd = x.shape
    for p in range(t_lo, t_hi):
        for f in range(sw):
            k_lo, k_hi, first = _phase_cols(f, pl, sw, wd, width)
            for y in range(h):
                dst = buf[p, ((pt + y) % sh) * sw + f]
                base = ((pt + y) // sh) * width + k_lo
                src = x[p, y]
                if sw == 2:
                    _deal_row2(src, first, dst, base, k_hi - k_lo)
                else:
                    for k in range(k_hi - k_lo):
                        dst[np.uintp(base + k)] = src[np.uintp(first + k * sw)]


# output positions a `dense_simd` tile: two vectors, so each tap's eight filter values load once
# for 32 multiply-adds (16 accumulators of 16 lanes and the two input vectors: 18 of the 32 zmm
# registers)
TILE = 2 * LANES


@njit(inline="always")
def _channel_block(t, c_out, groups, size):
    """Task t's block of `size` output channels in the register tiles (`dense_simd`,
    `dense_narrow`): (its batch item, the group's first filter, the block's first filter, the
    block's real channels, the group's last filter: a block of fewer repeats its last one,
    computed and not stored)."""
    og = c_out // groups
    blocks = (og + size - 1) // size
    b_i = t // blocks
    first = b_i % groups * og
    o = first + t % blocks * size
    return b_i, first, o, min(size, first + og - o), first + og - 1


@njit(error_model="numpy")
def dense_simd(t_lo, t_hi, buf, w, taps, out, groups):
    """A dense float32 2-D convolution with its accumulators in registers: out[n, o, m] = sum
    over c, then taps k, of w[o, c, k] * buf[n, c, m + taps[k]], from 0, one multiply-add each
    (the order of `dense_phased`). buf[n, c] holds input plane c padded and dealt into its
    stride phases (`deal_flat`), one after another, rows `width` wide; taps[k] is where tap
    (a, b) starts: its phase plane's start plus (a dh // sh) width + b dw // sw. So output
    m = i width + j is a flat position in a plane as wide as a phase plane (columns j >= OW are
    thrown away: `crop_rows`), and every tap reads a contiguous run. A tile is 8 output
    channels (one broadcast filter value each) by TILE positions (two vectors of `simd.LANES`);
    a task is one batch item's 8 channels (`simd_tasks`). out's last axis is a multiple of
    TILE; buf's planes reach the last tile's last tap. Grouped: buf (N groups, C/groups, .) and
    out (N groups, Cout/groups, .), each group's input and output channels a batch item of
    their own, whose filters are w's rows of that group."""
    c_in = buf.shape[1]
    k_n = w.shape[2]
    tiles = out.shape[2] // TILE
    for t in range(t_lo, t_hi):
        b_i, first, o, q_n, last = _channel_block(t, w.shape[0], groups, 8)
        o1, o2, o3 = min(o + 1, last), min(o + 2, last), min(o + 3, last)
        o4, o5, o6, o7 = min(o + 4, last), min(o + 5, last), min(o + 6, last), min(o + 7, last)
        for tile in range(tiles):
            m0 = tile * TILE
            a0, a1, a2, a3, a4, a5, a6, a7 = vzero(), vzero(), vzero(), vzero(), vzero(), vzero(), vzero(), vzero()
            b0, b1, b2, b3, b4, b5, b6, b7 = vzero(), vzero(), vzero(), vzero(), vzero(), vzero(), vzero(), vzero()
            for c in range(c_in):
                src = buf[b_i, c]
                w0, w1, w2, w3 = w[o, c], w[o1, c], w[o2, c], w[o3, c]
                w4, w5, w6, w7 = w[o4, c], w[o5, c], w[o6, c], w[o7, c]
                for k in range(k_n):
                    i = m0 + taps[k]
                    x0 = vload(src, i)
                    x1 = vload(src, i + LANES)
                    a0, b0 = vfma2(x0, x1, w0[k], a0, b0)
                    a1, b1 = vfma2(x0, x1, w1[k], a1, b1)
                    a2, b2 = vfma2(x0, x1, w2[k], a2, b2)
                    a3, b3 = vfma2(x0, x1, w3[k], a3, b3)
                    a4, b4 = vfma2(x0, x1, w4[k], a4, b4)
                    a5, b5 = vfma2(x0, x1, w5[k], a5, b5)
                    a6, b6 = vfma2(x0, x1, w6[k], a6, b6)
                    a7, b7 = vfma2(x0, x1, w7[k], a7, b7)
            dst = out[b_i]
            _store2(dst[o - first], m0, a0, b0, True)
            _store2(dst[o1 - first], m0, a1, b1, q_n > 1)
            _store2(dst[o2 - first], m0, a2, b2, q_n > 2)
            _store2(dst[o3 - first], m0, a3, b3, q_n > 3)
            _store2(dst[o4 - first], m0, a4, b4, q_n > 4)
            _store2(dst[o5 - first], m0, a5, b5, q_n > 5)
            _store2(dst[o6 - first], m0, a6, b6, q_n > 6)
            _store2(dst[o7 - first], m0, a7, b7, q_n > 7)


@njit(error_model="numpy")
def dense_narrow(t_lo, t_hi, buf, w, taps, out, groups):
    """`dense_simd` for vectors of 8 floats (AVX2: 16 ymm registers, where its 16 accumulators of
    16 floats spill): a tile is 4 output channels by `simd.LANES` positions, 8 ymm accumulators,
    and a task one batch item's 4 channels (`narrow_tasks`). The same sums in the same order,
    so the same bits. (One thread on a Zen 3, us, against `dense_simd` and the columns on BLAS:
    3x3 8 -> 8 over 56x56 64 / 209 / 111, 3 -> 16 at stride 2 over 224x224 222 / 439 / 353,
    7x7 3 -> 8 at stride 2 477 / 1169 / 723, 64 -> 64 over 7x7 112 / 243 / 206; 64 -> 64 over
    56x56 4.8 ms / 10.3 ms / 2.6 ms, that last on two threads.)"""
    c_in = buf.shape[1]
    k_n = w.shape[2]
    tiles = out.shape[2] // LANES
    for t in range(t_lo, t_hi):
        b_i, first, o, q_n, last = _channel_block(t, w.shape[0], groups, 4)
        o1, o2, o3 = min(o + 1, last), min(o + 2, last), min(o + 3, last)
        dst = out[b_i]
        for tile in range(tiles):
            m0 = tile * LANES
            a0, a1, a2, a3 = vzero(), vzero(), vzero(), vzero()
            for c in range(c_in):
                src = buf[b_i, c]
                w0, w1, w2, w3 = w[o, c], w[o1, c], w[o2, c], w[o3, c]
                for k in range(k_n):
                    x = vload(src, m0 + taps[k])
                    a0 = vfma(x, vsplat(w0[k]), a0)
                    a1 = vfma(x, vsplat(w1[k]), a1)
                    a2 = vfma(x, vsplat(w2[k]), a2)
                    a3 = vfma(x, vsplat(w3[k]), a3)
            vstore(dst[o - first], m0, a0)
            if q_n > 1:
                vstore(dst[o1 - first], m0, a1)
            if q_n > 2:
                vstore(dst[o2 - first], m0, a2)
            if q_n > 3:
                vstore(dst[o3 - first], m0, a3)


@njit(inline="always")
def _store2(row, m0, a, b, real):
    """row[m0:m0 + 32] = a, b when `real` (a channel past the last is not stored)."""
    if real:
        vstore(row, m0, a)
        vstore(row, m0 + LANES, b)


@njit(error_model="numpy")
def crop_rows(t_lo, t_hi, src, dst, width):
    """dst[p, i, j] = src[p, i width + j]: rows `width` apart cropped to dst's width, one plane a
    task."""
    for p in range(t_lo, t_hi):
        _rows_out(src[p], dst[p], 0, dst.shape[1], width)


# output positions a `pointwise_simd` task: 8 tiles, so each output row takes 1 KiB runs (a task
# of one 32-position tile wrote 96 rows 128 bytes each: 16 -> 96 channels over 112x112 0.65 ms
# on one thread, 0.45 with 8 tiles; BLAS 0.51)
POINT_SPAN = 8 * TILE


@njit(error_model="numpy", inline="always")
def _point8(src, base, step, w, o, c_in, last):
    """Eight output channels from o (the last repeated past c_out) by TILE positions: the sums over
    c of w[o, c] src[base + c step:][:TILE], from 0, one multiply-add each."""
    o1, o2, o3 = min(o + 1, last), min(o + 2, last), min(o + 3, last)
    o4, o5, o6, o7 = min(o + 4, last), min(o + 5, last), min(o + 6, last), min(o + 7, last)
    a0, a1, a2, a3, a4, a5, a6, a7 = vzero(), vzero(), vzero(), vzero(), vzero(), vzero(), vzero(), vzero()
    b0, b1, b2, b3, b4, b5, b6, b7 = vzero(), vzero(), vzero(), vzero(), vzero(), vzero(), vzero(), vzero()
    for c in range(c_in):
        x0 = vload(src, base + c * step)
        x1 = vload(src, base + c * step + LANES)
        a0, b0 = vfma2(x0, x1, w[o, c], a0, b0)
        a1, b1 = vfma2(x0, x1, w[o1, c], a1, b1)
        a2, b2 = vfma2(x0, x1, w[o2, c], a2, b2)
        a3, b3 = vfma2(x0, x1, w[o3, c], a3, b3)
        a4, b4 = vfma2(x0, x1, w[o4, c], a4, b4)
        a5, b5 = vfma2(x0, x1, w[o5, c], a5, b5)
        a6, b6 = vfma2(x0, x1, w[o6, c], a6, b6)
        a7, b7 = vfma2(x0, x1, w[o7, c], a7, b7)
    return a0, a1, a2, a3, a4, a5, a6, a7, b0, b1, b2, b3, b4, b5, b6, b7


@njit(error_model="numpy", inline="always")
def _activated(v, mode, lo, hi):
    """v as `ops.activation.ThenRelu` leaves it: 0 as it is, 1 ReLU, 2 clipped to [lo, hi]."""
    if mode == 1:
        return vrelu(v)
    if mode == 2:
        return vclip(v, lo, hi)
    return v


@njit(error_model="numpy", inline="always")
def _put_tile(row, m0, a, b, real, mode, lo, hi):
    """row[m0:m0 + TILE] = the activated (a, b) when `real`."""
    if real:
        vstore(row, m0, _activated(a, mode, lo, hi))
        vstore(row, m0 + LANES, _activated(b, mode, lo, hi))


@njit(error_model="numpy", inline="always")
def _point_tile(src, base, step, w, dst, o, m0, c_in, mode, lo, hi):
    """`_point8`'s tile stored into dst's channels o..o + 8 from position m0."""
    last = w.shape[0] - 1
    q = w.shape[0] - o
    a0, a1, a2, a3, a4, a5, a6, a7, b0, b1, b2, b3, b4, b5, b6, b7 = _point8(src, base, step, w, o, c_in, last)
    _put_tile(dst[o], m0, a0, b0, True, mode, lo, hi)
    _put_tile(dst[min(o + 1, last)], m0, a1, b1, q > 1, mode, lo, hi)
    _put_tile(dst[min(o + 2, last)], m0, a2, b2, q > 2, mode, lo, hi)
    _put_tile(dst[min(o + 3, last)], m0, a3, b3, q > 3, mode, lo, hi)
    _put_tile(dst[min(o + 4, last)], m0, a4, b4, q > 4, mode, lo, hi)
    _put_tile(dst[min(o + 5, last)], m0, a5, b5, q > 5, mode, lo, hi)
    _put_tile(dst[min(o + 6, last)], m0, a6, b6, q > 6, mode, lo, hi)
    _put_tile(dst[min(o + 7, last)], m0, a7, b7, q > 7, mode, lo, hi)


@njit(error_model="numpy")
def _point_short(flat, row0, m, w, dst, mode, lo, hi):
    """The last tile of rows of m positions when it is shorter than TILE: its inputs copied
    zero-padded, every channel's tile computed into a scratch row, its first positions stored.
    (Apart from `pointwise_simd`'s loop: its scalar copies there cost the full tiles 2.5x.)"""
    c_in = w.shape[1]
    c_out = w.shape[0]
    m0 = m // TILE * TILE
    r = m - m0
    xt = np.zeros(c_in * TILE, np.float32)
    for c in range(c_in):
        for j in range(r):
            xt[c * TILE + j] = flat[row0 + c * m + m0 + j]
    scratch = np.empty((8, TILE), np.float32)
    vlo, vhi = vsplat(lo), vsplat(hi)
    for o in range(0, c_out, 8):
        q = min(8, c_out - o)
        _point_tile(xt, 0, TILE, w[o : o + q], scratch, 0, 0, c_in, mode, vlo, vhi)
        for i in range(q):
            for j in range(r):
                dst[o + i, m0 + j] = scratch[i, j]


@njit(error_model="numpy")
def pointwise_simd(t_lo, t_hi, x, w, out, mode, lo, hi):
    """A pointwise float32 convolution with its accumulators in registers: out[n, o, m] = the
    activation (`_activated`: mode, lo, hi) of the sum over c of w[o, c] x[n, c, m], from 0, one
    multiply-add each. A tile is 8 output channels by TILE positions; a task is POINT_SPAN
    positions of one batch item, every 8 channels over them in turn (the inputs stay in the L1
    cache, and each output row takes runs of POINT_SPAN). A last tile shorter than TILE goes
    through `_point_short`. x (N, C, M), w (O, C), out (N, O, M)."""
    _, c_in, m = x.shape
    c_out = w.shape[0]
    chunks = -(-m // POINT_SPAN)
    flat = x.reshape(-1)
    vlo, vhi = vsplat(lo), vsplat(hi)
    m_full = m // TILE * TILE
    for t in range(t_lo, t_hi):
        b_i = t // chunks
        p0 = t % chunks * POINT_SPAN
        p1 = min(p0 + POINT_SPAN, m_full)
        dst = out[b_i]
        row0 = b_i * c_in * m
        for o in range(0, c_out, 8):
            for m0 in range(p0, p1, TILE):
                _point_tile(flat, row0 + m0, m, w, dst, o, m0, c_in, mode, vlo, vhi)
        if p0 + POINT_SPAN >= m and m_full < m:
            _point_short(flat, row0, m, w, dst, mode, lo, hi)


def pointwise_tasks(n, m):
    """The number of tasks of `pointwise_simd`."""
    return n * -(-m // POINT_SPAN)


def simd_tasks(n, c_out, groups=1):
    """The number of tasks of `dense_simd`."""
    return n * groups * -(-c_out // groups // 8)


def narrow_tasks(n, c_out, groups=1):
    """The number of tasks of `dense_narrow`."""
    return n * groups * -(-c_out // groups // 4)


def dense_tasks(n, c_out, oh, width):
    """The number of tasks of `dense_phased`."""
    return n * -(-c_out // 4) * -(-oh // max(1, ACC_BLOCK // width))


@njit(error_model="numpy")
def patch_rows(t_lo, t_hi, x, rows, kh, kw):
    """rows[p, i * ow + j, (c * kh + a) * kw + b] = x[p, c, i * kh + a, j * kw + b]: the patches
    of windows that tile the input (strides equal to the kernel, no pads), one row of patch
    pixels per output position, for items t_lo..t_hi; each run of kw pixels is contiguous on
    both sides (one vector copy for 16)."""
    _, c, _, _ = x.shape
    for p in range(t_lo, t_hi):
        ow = x.shape[3] // kw
        oh = rows.shape[1] // ow
        for i in range(oh):
            for j in range(ow):
                dst = rows[p, i * ow + j]
                for ch in range(c):
                    for a in range(kh):
                        src = x[p, ch, i * kh + a]
                        o = (ch * kh + a) * kw
                        s0 = j * kw
                        for b in range(kw):
                            dst[o + b] = src[s0 + b]


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


@njit(error_model="numpy")
def im2col_flat(t_lo, t_hi, x, cols, g):
    """cols[p, a, b, m] = xpad[p].flat[a*dh*wp + b*dw + m] for m < cols.shape[3] (oh * wp), xpad
    being plane p padded by the window's pads (>= 0) and wp its width: the columns of a
    unit-stride convolution as whole runs of the padded plane, one copy per tap, with output rows
    as wide as the padded input's (the product's last wp - ow columns of each row are thrown
    away). The plane is padded once, in a zeroed scratch plane (its borders never written), so
    each tap is one contiguous copy: for 3x3 over 1x16x28x28, 52 -> 9 us against `im2col2d`'s
    row pieces of 28."""
    pt, pl, dh, dw = g.pt, g.pl, g.dh, g.dw
    _, h, w = x.shape
    _, kh, kw, n = cols.shape
    wp = w + pl + g.pr
    # every tap's run ends inside: (kh - 1) dh wp + (kw - 1) dw + n <= hp wp + (kw - 1) dw
    flat = np.zeros((h + pt + g.pb) * wp + (kw - 1) * dw, x.dtype)
    for p in range(t_lo, t_hi):
        _into_padded(x[p], flat, pt, pl, wp)
        for a in range(kh):
            for b in range(kw):
                run = flat[a * dh * wp + b * dw :]
                dst = cols[p, a, b]
                for m in range(n):
                    dst[m] = run[m]


@njit(error_model="numpy")
def winograd_input(t_lo, t_hi, xp, v, th, tw):
    """Winograd F(2x2, 3x3)'s input tiles: v[i * 4 + j, c, b T + ti tw + tj] = (B^T d B)[i, j] for
    d the 4x4 patch of plane xp[b, c] (padded) from row 2 ti, column 2 tj; T = th tw. The rows'
    step first, along whole rows (d0 - d2, d1 + d2, d2 - d1, d1 - d3), its even and odd columns
    kept apart, then the columns' step on those (contiguous runs: stride-2 reads do not
    vectorize); indexed without views (a view costs as much as a run's arithmetic). Float32, one
    rounding per addition. A task is one input channel of every batch item."""
    nb = xp.shape[0]
    wp = xp.shape[3]
    t_n = th * tw
    half = wp // 2
    ev = np.empty((4, half), np.float32)
    od = np.empty((4, half), np.float32)
    for c in range(t_lo, t_hi):
        for b in range(nb):
            plane = xp[b, c]
            for ti in range(th):
                y = 2 * ti
                for q in range(half):
                    for f in range(2):
                        x = 2 * q + f
                        d0, d1, d2, d3 = plane[y, x], plane[y + 1, x], plane[y + 2, x], plane[y + 3, x]
                        if f == 0:
                            ev[0, q], ev[1, q], ev[2, q], ev[3, q] = d0 - d2, d1 + d2, d2 - d1, d1 - d3
                        else:
                            od[0, q], od[1, q], od[2, q], od[3, q] = d0 - d2, d1 + d2, d2 - d1, d1 - d3
                base = b * t_n + ti * tw
                for i in range(4):
                    for tj in range(tw):
                        v[i * 4, c, base + tj] = ev[i, tj] - ev[i, tj + 1]
                        v[i * 4 + 1, c, base + tj] = od[i, tj] + ev[i, tj + 1]
                        v[i * 4 + 2, c, base + tj] = ev[i, tj + 1] - od[i, tj]
                        v[i * 4 + 3, c, base + tj] = od[i, tj] - od[i, tj + 1]


@njit(error_model="numpy")
def winograd_output(t_lo, t_hi, m, out, th, tw):
    """Winograd F(2x2, 3x3)'s output tiles: out[b, o, 2 ti + a, 2 tj + e] = (A^T M A)[a, e] for
    M[i, j] = m[i * 4 + j, o, b T + ti tw + tj], cropped to out's size; the rows' step (m0 + m1
    + m2, m1 - m2 - m3) then the columns', along runs of tiles, indexed without views. Float32,
    one rounding per addition. A task is one output channel of every batch item."""
    nb, _, oh, ow = out.shape
    t_n = th * tw
    s = np.empty((8, tw), np.float32)
    for o in range(t_lo, t_hi):
        for b in range(nb):
            for ti in range(th):
                base = b * t_n + ti * tw
                for j in range(4):
                    for tj in range(tw):
                        m1, m2 = m[4 + j, o, base + tj], m[8 + j, o, base + tj]
                        s[j, tj] = m[j, o, base + tj] + m1 + m2
                        s[4 + j, tj] = m1 - m2 - m[12 + j, o, base + tj]
                for a in range(2):
                    y = 2 * ti + a
                    if y >= oh:
                        break
                    r = 4 * a
                    for tj in range(ow // 2):
                        q1, q2 = s[r + 1, tj], s[r + 2, tj]
                        out[b, o, y, 2 * tj] = s[r, tj] + q1 + q2
                        out[b, o, y, 2 * tj + 1] = q1 - q2 - s[r + 3, tj]
                    if ow % 2:
                        tj = ow // 2
                        out[b, o, y, ow - 1] = s[r, tj] + s[r + 1, tj] + s[r + 2, tj]


def warm() -> None:
    winograd_input(0, 2, np.ones((1, 2, 6, 6), np.float32), np.empty((16, 2, 4), np.float32), 2, 2)
    winograd_output(0, 2, np.ones((16, 2, 4), np.float32), np.empty((1, 2, 3, 3), np.float32), 2, 2)
    for dt in (np.float32, np.float64):
        patch_rows(0, 1, np.ones((1, 2, 6, 6), dt), np.empty((1, 4, 18), dt), 3, 3)
        xp = np.ones((2, 6, 6), dt)
        for w in (np.ones((2, 3, 3), dt), jit.read_only(np.ones((2, 3, 3), dt))):  # filters computed, or a model's
            for s in (1, 2, 3):
                o = (6 - 3) // s + 1
                g = Window2d(3, 3, s, s, 1, 1, 0, 0, 0, 0)
                depthwise2d(0, 2, xp, w, np.empty((2, o, o), dt), 2, g)
                if dt == np.float32:
                    xl = np.ones((LANES, 6, 6), dt)
                    depthwise_lanes(0, 1, xl, w, np.empty((LANES, o, o), dt), 2, g)
                    if s == 1:
                        depthwise_simd(0, 2, xp, w, np.empty((2, o, o), dt), 2, g)
        for s in (1, 2, 3):
            o = (6 - 3) // s + 1
            im2col2d(0, 2, xp, np.empty((2, 3, 3, o + 1, o + 1), dt), Window2d(3, 3, s, s, 1, 1, 1, 1, 1, 1), 0)
            if s == 1:
                im2col_flat(0, 2, xp, np.empty((2, 3, 3, 6 * 8), dt), Window2d(3, 3, 1, 1, 1, 1, 1, 1, 1, 1))
            g = Window2d(3, 3, s, s, 1, 1, 1, 1, 1, 1)
            phases = np.zeros((2, s, s, -(-8 // s), -(-8 // s)), dt)
            deal_planes(0, 2, xp, phases, g)
            oo = (8 - 3) // s + 1  # padded by 1 all round
            dense_phased(
                0, 1, phases.reshape(1, *phases.shape), np.ones((4, 2, 3, 3), dt), np.empty((1, 2, oo, oo), dt), g
            )
            if dt == np.float32:
                buf = np.zeros((2, s * s, 8 * 8 + 2 * TILE), dt)
                deal_flat(0, 2, xp, buf, g, -(-8 // s))
                out = np.empty((1, 3, TILE), dt)
                dense_tile = dense_simd if jit.wide_vectors() else dense_narrow  # the one the machine runs
                crop_rows(0, 3, out.reshape(3, TILE), np.empty((3, 2, 3), dt), 4)
                one = np.float32(0)
                for made in (np.asarray, jit.read_only):  # filters computed, or a model's
                    dense_tile(0, 1, buf.reshape(1, 2, -1), made(np.ones((3, 2, 9), dt)), np.zeros(9, np.int64), out, 1)
                    x1, out1 = np.ones((1, 2, 40), dt), np.empty((1, 3, 40), dt)
                    pointwise_simd(0, 1, x1, made(np.ones((3, 2), dt)), out1, 1, one, one)
