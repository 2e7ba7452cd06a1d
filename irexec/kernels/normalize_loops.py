"""@njit kernels for softmax and moments over the last axis of a (rows, n) contiguous view: one
row per task, float64 accumulation, the exact max, NaN propagates. Serial and nogil (run on
`jit.parallel_for`'s threads); the inputs arrive as float32 or float64 (float16 widened first),
so each kernel has two specializations."""

from __future__ import annotations

import math

import numpy as np

from .jit import njit


@njit(fastmath={"reassoc", "contract", "nsz", "arcp"}, error_model="numpy")
def softmax_rows(t_lo, t_hi, x, out, log):
    n = x.shape[1]
    e = np.empty(n)
    for r in range(t_lo, t_hi):
        row = x[r]
        m = -np.inf
        nan = False
        for j in range(n):
            v = row[j]
            if v != v:
                nan = True
            elif v > m:
                m = v
        dst = out[r]
        if nan:
            for j in range(n):
                dst[j] = np.nan
            continue
        if m == np.inf or m == -np.inf:
            m = 0.0  # as the numpy path: the infinities then give NaN where the definition does
        s = 0.0
        for j in range(n):
            t = math.exp(np.float64(row[j]) - m)
            e[j] = t
            s += t
        if log:
            ls = math.log(s)
            for j in range(n):
                dst[j] = np.float64(row[j]) - m - ls
        else:
            inv = 1.0 / s
            for j in range(n):
                dst[j] = e[j] * inv


@njit(fastmath={"reassoc", "contract", "nsz", "arcp"}, error_model="numpy")
def normalize_rows(t_lo, t_hi, x, out, eps, inside, normalize_variance):
    """(x - mean) / sqrt(var + eps) (inside) or / (sqrt(var) + eps), two-pass, per row."""
    n = x.shape[1]
    for r in range(t_lo, t_hi):
        row = x[r]
        s = 0.0
        for j in range(n):
            s += np.float64(row[j])
        mean = s / n
        q = 0.0
        for j in range(n):
            d = np.float64(row[j]) - mean
            q += d * d
        dst = out[r]
        if normalize_variance:
            var = q / n
            den = math.sqrt(var + eps) if inside else math.sqrt(var) + eps
            inv = 1.0 / den
        else:
            inv = 1.0
        for j in range(n):
            dst[j] = (np.float64(row[j]) - mean) * inv


def warm() -> None:
    for dt in (np.float32, np.float64):
        x = np.ones((2, 8), dt)
        out = np.empty((2, 8), dt)
        softmax_rows(0, 2, x, out, False)
        normalize_rows(0, 2, x, out, 1e-5, True, True)
