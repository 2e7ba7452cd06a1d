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

from . import jit

FAMILY = "normalize"  # its name in jit.FAMILIES
# work per byte against a streaming read (jit.threads_for): measured single-threaded on 6 MB,
# softmax 5.4 ms (an exp per element), MVN rows ~1 ms (three passes), a streaming read 0.4 ms
SOFTMAX_COST = 12.0
NORMALIZE_COST = 3.0


# the numpy paths' fixed cost per call (measured: 40-60 us for MVN over a (1, 8, 64) input,
# against a few us for the kernel); small inputs take the kernels once they are loaded
SMALL_CALL_SAVING = 30e-6


def _rows_path(x: np.ndarray) -> bool:
    """Whether rows of x's last axis go to the kernels (loaded, or loading them pays)."""
    return (
        x.ndim >= 1
        and x.size > 0
        and x.dtype in (np.float32, np.float64)
        and jit.use(x.nbytes, SMALL_CALL_SAVING, FAMILY)
    )


def _over_rows(kernel_name: str, x: np.ndarray, out_dtype, cost: float, *args) -> np.ndarray | None:
    """kernel(t_lo, t_hi, rows, out, *args) over the rows of x's last axis into `out_dtype`
    (float32/float64), or None when the numpy path should run."""
    if not _rows_path(x) or np.dtype(out_dtype) not in (np.float32, np.float64):
        return None
    from . import normalize_loops as k

    rows = np.ascontiguousarray(x).reshape(-1, x.shape[-1])
    out = np.empty(rows.shape, out_dtype)
    jit.parallel_for(getattr(k, kernel_name), rows.shape[0], jit.threads_for(x.nbytes, cost), rows, out, *args)
    return out.reshape(x.shape)


def softmax_out(x: np.ndarray, axis: int, log: bool, out_dtype) -> np.ndarray | None:
    """The kernels' softmax over the last axis straight into `out_dtype` (float32/float64), or
    None when the numpy path should run."""
    if x.ndim == 0 or axis not in (-1, x.ndim - 1):
        return None
    return _over_rows("softmax_rows", x, out_dtype, SOFTMAX_COST, log)


def attention_softmax_out(scores: np.ndarray, scale: float, causal: bool, out_dtype) -> np.ndarray | None:
    """softmax(scores * scale, causal mask) over the last axis by one kernel pass, or None when
    the numpy path should run. scores (..., L, S) float32/float64."""
    return _over_rows(
        "attention_softmax_rows", scores, out_dtype, SOFTMAX_COST, float(scale), bool(causal), max(1, scores.shape[-2])
    )


def normalize_last_out(x: np.ndarray, eps: float, inside: bool, normalize_variance: bool, out_dtype):
    """MVN over the last axis by the kernels, or None when the numpy path should run."""
    return _over_rows("normalize_rows", x, out_dtype, NORMALIZE_COST, float(eps), inside, normalize_variance)


def group_norm_out(x: np.ndarray, groups: int, eps: float, scale: np.ndarray, bias: np.ndarray, out_dtype):
    """GroupNormalization of x (N, C, ...) by the kernels, or None when the numpy path should run."""
    if not _rows_path(x) or np.dtype(out_dtype) not in (np.float32, np.float64):
        return None
    from . import normalize_loops as k

    n, c = x.shape[:2]
    rows = np.ascontiguousarray(x).reshape(n * groups, c // groups, -1)
    out = np.empty(rows.shape, out_dtype)
    sc = scale.astype(np.float64).reshape(groups, c // groups)
    bi = bias.astype(np.float64).reshape(groups, c // groups)
    jit.parallel_for(
        k.group_norm_rows, rows.shape[0], jit.threads_for(x.nbytes, NORMALIZE_COST), rows, out, float(eps), sc, bi
    )
    return out.reshape(x.shape)


# the fused RMSNorm's numpy path costs six ufunc passes and a reduction per call
RMS_NORM_CALL_SAVING = 60e-6
RMS_NORM_COST = 2.0


def rms_norm_out(x: np.ndarray, eps: np.float32) -> np.ndarray | None:
    """The fused RMSNorm of float32 x over its last axis by the kernel (rounding where the six
    layers round), or None when the numpy path should run."""
    if x.ndim == 0 or x.shape[-1] == 0 or x.size == 0 or x.dtype != np.float32:
        return None
    if not jit.use(x.nbytes, RMS_NORM_CALL_SAVING, FAMILY):
        return None
    from . import normalize_loops as k

    rows = np.ascontiguousarray(x).reshape(-1, x.shape[-1])
    out = np.empty_like(rows)
    jit.parallel_for(k.rms_norm_rows, rows.shape[0], jit.threads_for(rows.nbytes, RMS_NORM_COST), rows, out, eps)
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
    if log:
        # log(sum e) as log1p of the sum without one maximum's 1: near 0 (a dominant maximum)
        # log(sum) would keep only the sum's absolute precision, ~1e-16, not the value's
        top = shifted == 0
        rest = np.sum(np.where(top, 0.0, e), axis=axis, keepdims=True)
        return shifted - np.log1p(rest + (np.sum(top, axis=axis, keepdims=True) - 1.0))
    s = np.sum(e, axis=axis, keepdims=True)
    return e / s


def moments(x: np.ndarray, axes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(mean, variance) over `axes`, keepdims, in float64 (two-pass)."""
    mean = np.mean(x, axis=axes, keepdims=True, dtype=np.float64)
    d = x - mean
    var = np.mean(d * d, axis=axes, keepdims=True)
    return mean, var
