"""Softmax and normalization with the reduction family's accumulation rules: sums
(of exponentials, of values, of squared deviations) accumulate in float64 whatever the input
type, the max for softmax is exact, NaN propagates, and each result is rounded once.

The variance is two-pass (the mean first, then the mean of squared deviations), so it is not
destroyed by cancellation when the mean is large against the spread.

Large inputs over the last (contiguous) axis run the numba kernels of `normalize_loops` (one
row per task, on `jit.parallel_for`'s threads, when `jit.use` says loading them pays); the
rest, and small inputs, run these numpy float64 paths with the same results.
"""

from __future__ import annotations

import numpy as np

from .. import config
from . import jit


def _rows_path(x: np.ndarray, axis: int) -> bool:
    return (axis in (-1, x.ndim - 1) and x.ndim >= 1 and x.size >= config.SMALL_ELEMENTS
            and x.dtype in (np.float32, np.float64) and x.shape[-1] > 0 and jit.use(x.nbytes))


def softmax_out(x: np.ndarray, axis: int, log: bool, out_dtype) -> np.ndarray | None:
    """The kernels' softmax straight into `out_dtype` (float32/float64), or None when the
    numpy path should run."""
    if not _rows_path(x, axis) or np.dtype(out_dtype) not in (np.float32, np.float64):
        return None
    from . import normalize_loops as k

    rows = np.ascontiguousarray(x).reshape(-1, x.shape[-1])
    out = np.empty(rows.shape, out_dtype)
    jit.parallel_for(k.softmax_rows, rows.shape[0], jit.threads_for(x.nbytes), rows, out, log)
    return out.reshape(x.shape)


def normalize_last_out(x: np.ndarray, eps: float, inside: bool, normalize_variance: bool, out_dtype):
    """MVN over the last axis by the kernels, or None when the numpy path should run."""
    if not _rows_path(x, -1) or np.dtype(out_dtype) not in (np.float32, np.float64):
        return None
    from . import normalize_loops as k

    rows = np.ascontiguousarray(x).reshape(-1, x.shape[-1])
    out = np.empty(rows.shape, out_dtype)
    jit.parallel_for(k.normalize_rows, rows.shape[0], jit.threads_for(x.nbytes), rows, out, float(eps), inside,
                     normalize_variance)
    return out.reshape(x.shape)


def softmax(x: np.ndarray, axis: int, log: bool = False) -> np.ndarray:
    """softmax (or log-softmax) along `axis` as float64 values (the caller rounds once): the
    shift by the max, the exponentials and their sum are all float64, so a float32 result is
    within one rounding of the exact value (a float32 shift alone costs up to 2e-6 relative)."""
    v = x.astype(np.float64)
    m = np.max(v, axis=axis, keepdims=True)
    m = np.where(np.isinf(m), 0.0, m)  # a row of -inf (or +inf) gives NaN below, as the definition does
    shifted = v - m
    e = np.exp(shifted)
    s = np.sum(e, axis=axis, keepdims=True)
    if log:
        return shifted - np.log(s)
    return e / s


def moments(x: np.ndarray, axes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(mean, variance) over `axes`, keepdims, in float64 (two-pass)."""
    mean = np.mean(x, axis=axes, keepdims=True, dtype=np.float64)
    d = x - mean
    var = np.mean(d * d, axis=axes, keepdims=True)
    return mean, var
