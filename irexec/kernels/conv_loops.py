"""@njit 2-D convolution helpers: im2col straight from unpadded planes (the padding written as
zeros), and depthwise convolution over padded planes: (N*C, Hp, Wp) -> (N*C, OH, OW), one plane
per task. Each plane accumulates tap by tap in the data's type (float32 or float64): the same
products and sums, in the same order, as the numpy path's shifted-view loop, so the two agree
to the bit. Serial and nogil, run on `jit.parallel_for`'s threads."""

from __future__ import annotations

import numpy as np

from .jit import njit


@njit(inline="always")
def _tap_row(src, dst, wv, stride):
    """dst[j] += src[j * stride] * wv; with a literal stride LLVM vectorizes it (src and dst are
    zero-based slices, so no index can be negative)."""
    for j in range(dst.size):
        dst[j] += src[j * stride] * wv


@njit(error_model="numpy")
def depthwise2d(t_lo, t_hi, xp, w, out, channels, sh, sw, dh, dw):
    """out[p] = sum over taps (a, b) of w[p % channels, a, b] * xp[p, a*dh + i*sh, b*dw + j*sw]."""
    _, kh, kw = w.shape
    _, oh, ow = out.shape
    for p in range(t_lo, t_hi):
        plane = xp[p]
        dst = out[p]
        dst[:, :] = 0
        c = p % channels
        for a in range(kh):
            for b in range(kw):
                wv = w[c, a, b]
                for i in range(oh):
                    src = plane[a * dh + i * sh, b * dw:]
                    if sw == 1:
                        _tap_row(src, dst[i], wv, 1)
                    elif sw == 2:
                        _tap_row(src, dst[i], wv, 2)
                    else:
                        _tap_row(src, dst[i], wv, sw)


@njit(inline="always")
def _copy(src, dst, stride):
    for j in range(dst.size):
        dst[j] = src[j * stride]


@njit(error_model="numpy")
def im2col2d(t_lo, t_hi, x, cols, sh, sw, dh, dw, pt, pl):
    """cols[p, a, b, i, j] = x[p, i*sh - pt + a*dh, j*sw - pl + b*dw], 0 where that falls in the
    padding: the columns of a padded convolution straight from the unpadded planes (pads >= 0),
    one plane per task."""
    _, h, w = x.shape
    _, kh, kw, oh, ow = cols.shape
    for p in range(t_lo, t_hi):
        plane = x[p]
        for a in range(kh):
            for b in range(kw):
                off = b * dw - pl
                j_lo = 0 if off >= 0 else min(ow, (-off + sw - 1) // sw)
                j_hi = max(j_lo, min(ow, (w - 1 - off) // sw + 1))
                for i in range(oh):
                    y = i * sh - pt + a * dh
                    dst = cols[p, a, b, i]
                    if y < 0 or y >= h:
                        dst[:] = 0
                        continue
                    dst[:j_lo] = 0
                    dst[j_hi:] = 0
                    if j_hi > j_lo:
                        src = plane[y, j_lo * sw + off:]
                        part = dst[j_lo:j_hi]
                        if sw == 1:
                            _copy(src, part, 1)
                        elif sw == 2:
                            _copy(src, part, 2)
                        else:
                            _copy(src, part, sw)


def warm() -> None:
    for dt in (np.float32, np.float64):
        xp = np.ones((2, 6, 6), dt)
        w = np.ones((2, 3, 3), dt)
        for s in (1, 2, 3):
            o = (6 - 3) // s + 1
            depthwise2d(0, 2, xp, w, np.empty((2, o, o), dt), 2, s, s, 1, 1)
            im2col2d(0, 2, xp, np.empty((2, 3, 3, o + 1, o + 1), dt), s, s, 1, 1, 1, 1)
