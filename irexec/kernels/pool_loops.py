"""@njit 2-D pooling over a (planes, H, W) contiguous view: one plane per task, windows clipped
to the input (padded positions are absent), Max with NaN propagation and the index of the first
maximum, Avg summed in float64 and divided by the window's count. Serial and nogil, run on
`jit.parallel_for`'s threads; float32 and float64 inputs only (two specializations)."""

from __future__ import annotations

import numpy as np

from .jit import njit

# count modes for Avg: positions inside the input; the whole kernel; positions inside input + pads
INSIDE, KERNEL, PADDED = 0, 1, 2


@njit(error_model="numpy")
def max_pool2d(t_lo, t_hi, x, out, idx, kh, kw, sh, sw, dh, dw, pt, pl):
    _, h, w = x.shape
    _, oh, ow = out.shape
    for p in range(t_lo, t_hi):
        plane = x[p]
        for i in range(oh):
            y0 = i * sh - pt
            for j in range(ow):
                x0 = j * sw - pl
                best = -np.inf
                where = -1
                nan = False
                for a in range(kh):
                    y = y0 + a * dh
                    if y < 0 or y >= h:
                        continue
                    for b in range(kw):
                        xx = x0 + b * dw
                        if xx < 0 or xx >= w:
                            continue
                        v = plane[y, xx]
                        if nan:
                            continue
                        if v != v:
                            nan = True
                            best = v
                            where = y * w + xx
                        elif v > best or where < 0:
                            best = v
                            where = y * w + xx
                out[p, i, j] = best
                idx[p, i, j] = where


@njit(error_model="numpy")
def avg_pool2d(t_lo, t_hi, x, out, kh, kw, sh, sw, pt, pl, pb, pr, mode):
    _, h, w = x.shape
    _, oh, ow = out.shape
    for p in range(t_lo, t_hi):
        plane = x[p]
        for i in range(oh):
            y0 = i * sh - pt
            for j in range(ow):
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
                if mode == 1:
                    n = kh * kw
                elif mode == 2:
                    ys = max(y0, -pt)
                    ye = min(y0 + kh, h + pb)
                    xs = max(x0, -pl)
                    xe = min(x0 + kw, w + pr)
                    n = max(0, ye - ys) * max(0, xe - xs)
                out[p, i, j] = s / n


def warm() -> None:
    for dt in (np.float32, np.float64):
        x = np.ones((1, 4, 4), dt)
        out = np.empty((1, 2, 2), dt)
        max_pool2d(0, 1, x, out, np.empty((1, 2, 2), np.int64), 2, 2, 2, 2, 1, 1, 0, 0)
        avg_pool2d(0, 1, x, out, 2, 2, 2, 2, 0, 0, 0, 0, 0)
