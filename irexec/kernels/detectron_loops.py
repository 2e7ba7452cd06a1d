"""@njit ROIAlign over one pyramid level for ExperimentalDetectronROIFeatureExtractor
(`kernels/detectron.py`): one ROI per task, each bin's samples' four corners (float32 weights,
OpenVINO's corner order) times the level's channel rows, summed in float64 one term after
another and divided by the number of samples. And ROIAlign-3/9's bins (`kernels/roi.py`): each
bin's terms (a pixel's channel row and its float64 weight) summed the same way. Serial and nogil,
run on `jit.parallel_for`'s threads; float32 and float64 feature rows (two specializations
each)."""

from __future__ import annotations

import numpy as np

from .jit import njit


@njit(error_model="numpy")
def align_rois(lo, hi, rows, width, ys, wys, yin, xs, wxs, xin, idx, count, out):
    """out[idx[t], :, ph, pw] for ROIs t in [lo, hi). ys (n, pooled, grid, 2): the low and high
    row of each sample, wys their float32 weights, yin whether it lies inside; xs likewise. A
    sample outside reads position 0 with weight 0 (a NaN there reaches the bin, as in OpenVINO)."""
    pooled = ys.shape[1]
    gh = ys.shape[2]
    gw = xs.shape[2]
    channels = rows.shape[1]
    acc = np.empty(channels)
    for t in range(lo, hi):
        target = out[idx[t]]
        for ph in range(pooled):
            for pw in range(pooled):
                acc[:] = 0.0
                for iy in range(gh):
                    for ix in range(gw):
                        inside = yin[t, ph, iy] and xin[t, pw, ix]
                        for a in range(2):
                            for b in range(2):
                                if inside:
                                    pos = ys[t, ph, iy, a] * width + xs[t, pw, ix, b]
                                    w = np.float64(wys[t, ph, iy, a] * wxs[t, pw, ix, b])
                                else:
                                    pos = 0
                                    w = 0.0
                                src = rows[pos]
                                for ch in range(channels):
                                    acc[ch] += w * np.float64(src[ch])
                for ch in range(channels):
                    target[ch, ph, pw] = acc[ch] / count


@njit(error_model="numpy")
def weighted_rows(lo, hi, rows, idx, wts, count, out):
    """out[b // P, :, b % P] = (sum over j, in order, of wts[b, j] * rows[idx[b, j]]) / count, in
    float64, for the bins b in [lo, hi) (rows: a pixel's channels side by side; out (R, C, P): a
    ROI's channels, each its P bins)."""
    channels = rows.shape[1]
    per_roi = out.shape[2]
    acc = np.empty(channels)
    for b in range(lo, hi):
        acc[:] = 0.0
        for j in range(idx.shape[1]):
            src = rows[idx[b, j]]
            w = wts[b, j]
            for ch in range(channels):
                acc[ch] += w * np.float64(src[ch])
        dst = out[b // per_roi]
        p = b % per_roi
        for ch in range(channels):
            dst[ch, p] = acc[ch] / count


def warm() -> None:
    ys = np.zeros((1, 1, 1, 2), np.int64)
    ws = np.full((1, 1, 1, 2), 0.5, np.float32)
    inside = np.ones((1, 1, 1), np.bool_)
    idx = np.zeros(1, np.int64)
    for dtype in (np.float32, np.float64):
        rows = np.ones((4, 3), dtype)
        align_rois(0, 1, rows, 2, ys, ws, inside, ys, ws, inside, idx, 1.0, np.empty((1, 3, 1, 1)))
        weighted_rows(0, 1, rows, np.zeros((1, 4), np.int64), np.ones((1, 4)), 4.0, np.empty((1, 3, 1)))
