"""Softmax and moment kernels with the reduction family's accumulation rules, in numpy: sums
(of exponentials, of values, of squared deviations) accumulate in float64 whatever the input
type, the max for softmax is exact, NaN propagates, and each result is rounded once.

The variance is two-pass (the mean first, then the mean of squared deviations), so it is not
destroyed by cancellation when the mean is large against the spread.
"""

from __future__ import annotations

import numpy as np


def softmax(x: np.ndarray, axis: int, log: bool = False) -> np.ndarray:
    """softmax (or log-softmax) along `axis`, as float64 values (the caller rounds once)."""
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, np.where(np.isnan(m), m, 0))  # a row of -inf stays NaN below
    shifted = x - m.astype(x.dtype) if x.dtype != np.float64 else x - m
    e = np.exp(shifted)
    s = np.sum(e, axis=axis, keepdims=True, dtype=np.float64)
    if log:
        return shifted.astype(np.float64) - np.log(s)
    return e / s


def moments(x: np.ndarray, axes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(mean, variance) over `axes`, keepdims, in float64 (two-pass)."""
    mean = np.mean(x, axis=axes, keepdims=True, dtype=np.float64)
    d = x - mean
    var = np.mean(d * d, axis=axes, keepdims=True)
    return mean, var
