"""Softmax and moment kernels with the reduction family's accumulation rules, in numpy: sums
(of exponentials, of values, of squared deviations) accumulate in float64 whatever the input
type, the max for softmax is exact, NaN propagates, and each result is rounded once.

The variance is two-pass (the mean first, then the mean of squared deviations), so it is not
destroyed by cancellation when the mean is large against the spread.
"""

from __future__ import annotations

import numpy as np


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
