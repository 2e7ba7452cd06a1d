"""Softmax and normalization with the reduction family's accumulation rules: sums
(of exponentials, of values, of squared deviations) accumulate in float64 whatever the input
type, the max for softmax is exact, NaN propagates, and each result is rounded once.

The variance is two-pass (the mean first, then the mean of squared deviations), so it is not
destroyed by cancellation when the mean is large against the spread.

Large inputs over the last (contiguous) axis run the numba kernels of `normalize_loops` (one
row per task, on `jit.parallel_for`'s threads, when `jit.use` says loading them pays); the
rest, and small inputs, run these numpy float64 paths with the same results, block by block.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .. import config
from . import jit

FAMILY = "normalize"  # its name in jit.FAMILIES
# work per byte against a streaming read (jit.threads_for): measured single-threaded on 6 MB,
# softmax 5.4 ms (an exp per element), MVN rows ~1 ms (three passes), a streaming read 0.4 ms
SOFTMAX_COST = 12.0
NORMALIZE_COST = 3.0


# the numpy paths' fixed cost per call (measured: 40-60 us for MVN over a (1, 8, 64) input,
# against a few us for the kernel); small inputs take the kernels once they are loaded
SMALL_CALL_SAVING = 30e-6


def loops():
    """The kernels' module, imported once the kernels run (a function-level import statement
    costs 0.4 us a call, where this costs 0.03)."""
    global _kernel_module
    if _kernel_module is None:
        from . import normalize_loops

        _kernel_module = normalize_loops
    return _kernel_module


_kernel_module = None


def rows_path(x: np.ndarray) -> bool:
    """Whether rows of x's last axis go to the kernels (loaded, or loading them pays)."""
    return (
        x.ndim >= 1
        and x.size > 0
        and x.dtype in (np.float32, np.float64)
        and jit.use(x.nbytes, SMALL_CALL_SAVING, FAMILY)
    )


def over_rows(kernel_name: str, x: np.ndarray, out_dtype, cost: float, *args) -> np.ndarray | None:
    """kernel(t_lo, t_hi, rows, out, *args) over the rows of x's last axis into `out_dtype`
    (float32/float64), or None when the numpy path should run."""
    if not rows_path(x) or np.dtype(out_dtype) not in (np.float32, np.float64):
        return None
    k = loops()

    rows = np.ascontiguousarray(x).reshape(-1, x.shape[-1])
    out = np.empty(rows.shape, out_dtype)
    jit.parallel_for(getattr(k, kernel_name), rows.shape[0], jit.threads_for(x.nbytes, cost), rows, out, *args)
    return out.reshape(x.shape)


def rows_call(kernel_name: str, x: np.ndarray, last: int, out_dtype, cost: float, *args):
    """`over_rows`'s call over x seen as rows of `last` elements, as a function of an array of
    x's shape and type alone (`jit.one_call`), when it runs the kernels on the calling thread;
    None otherwise."""
    work = int(x.nbytes * cost)
    if not rows_path(x) or np.dtype(out_dtype) not in (np.float32, np.float64) or work >= config.THREAD_MIN_BYTES:
        return None
    view = (x.size // last, last)
    return jit.one_call(getattr(loops(), kernel_name), view, view[0], out_dtype, args, x.shape, work)


def softmax_out(x: np.ndarray, axis: int, log: bool, out_dtype) -> np.ndarray | None:
    """The kernels' softmax over the last axis straight into `out_dtype` (float32/float64), or
    None when the numpy path should run."""
    if x.ndim == 0 or axis not in (-1, x.ndim - 1):
        return None
    return over_rows("softmax_rows", x, out_dtype, SOFTMAX_COST, log)


def normalize_last_out(x: np.ndarray, eps: float, inside: bool, normalize_variance: bool, out_dtype):
    """MVN over the last axis by the kernels, or None when the numpy path should run."""
    return over_rows("normalize_rows", x, out_dtype, NORMALIZE_COST, float(eps), inside, normalize_variance)


def group_norm_out(x: np.ndarray, groups: int, eps: float, scale: np.ndarray, bias: np.ndarray, out_dtype):
    """GroupNormalization of x (N, C, ...) by the kernels, or None when the numpy path should run."""
    if not rows_path(x) or np.dtype(out_dtype) not in (np.float32, np.float64):
        return None
    k = loops()

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
    k = loops()

    rows = np.ascontiguousarray(x).reshape(-1, x.shape[-1])
    out = np.empty_like(rows)
    jit.parallel_for(k.rms_norm_rows, rows.shape[0], jit.threads_for(rows.nbytes, RMS_NORM_COST), rows, out, eps)
    return out.reshape(x.shape)


# elements of a numpy path's float64 block (512 KiB, in the L2 cache); a block holds whole
# reduced sets, so a set larger than this is a block of its own. Whole-tensor float64 copies and
# temporaries cost more than the arithmetic (float32, whole tensor against blocks rounded into
# the output: Softmax over the last axis of (8, 12, 512, 512) 258 against 101 ms, over axis 1
# of (64, 256, 64, 64) 676 against 286; LogSoftmax over (64, 256, 4096) 1960 against 275; MVN
# over (2, 3) of (64, 256, 64, 64) 710 against 228)
BLOCK = 1 << 16


def _around(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, int, int] | None:
    """x's shape as (outer, n, inner) around the reduced `axes` (sorted, unique), or None when
    a kept dim larger than 1 lies between them (or there are none)."""
    if not axes or any(shape[i] > 1 for i in range(axes[0], axes[-1] + 1) if i not in axes):
        return None
    n = math.prod(shape[a] for a in axes)
    return math.prod(shape[: axes[0]]), n, math.prod(shape[axes[-1] + 1 :])


def _blockwise(x: np.ndarray, dims: tuple[int, int, int], step, out_dtype) -> np.ndarray:
    """x viewed as (outer, n, inner), each block of whole reduced sets (axis 1) cast to float64,
    changed in place by `step(block)`, and rounded once into the result of type `out_dtype`."""
    outer, n, inner = dims
    v = x.reshape(dims)
    out = np.empty(dims, out_dtype)
    if n * inner <= BLOCK:
        per = max(1, BLOCK // (n * inner))
        blocks = [(slice(o, o + per), slice(None)) for o in range(0, outer, per)]
    else:
        width = max(1, BLOCK // n)
        blocks = [(slice(o, o + 1), slice(c, c + width)) for o in range(outer) for c in range(0, inner, width)]
    with np.errstate(all="ignore"):
        for rows, cols in blocks:
            b = v[rows, :, cols].astype(np.float64)
            step(b)
            out[rows, :, cols] = b
    return out.reshape(x.shape)


def _softmax_block(v: np.ndarray, log: bool) -> None:
    """softmax (or log-softmax) of the float64 block v along its axis 1, in place."""
    m = np.max(v, axis=1, keepdims=True)
    m[np.isinf(m)] = 0.0  # a row of -inf (or +inf) gives NaN below, as the definition does
    np.subtract(v, m, out=v)
    if log:
        # log(sum e) as log1p of the sum without one maximum's 1: near 0 (a dominant maximum)
        # log(sum) would keep only the sum's absolute precision, ~1e-16, not the value's
        top = v == 0
        e = np.exp(v)
        e[top] = 0.0
        rest = np.sum(e, axis=1, keepdims=True)
        np.subtract(v, np.log1p(rest + (np.sum(top, axis=1, keepdims=True) - 1.0)), out=v)
        return
    np.exp(v, out=v)
    np.divide(v, np.sum(v, axis=1, keepdims=True), out=v)


def softmax(x: np.ndarray, axis: int, log: bool = False, out_dtype=np.float64) -> np.ndarray:
    """softmax (or log-softmax) along `axis`: the shift by the max, the exponentials and their
    sum are all float64 and each value is rounded once to `out_dtype` (float64: the caller
    rounds), so a float32 result is within one rounding of the exact value (a float32 shift
    alone costs up to 2e-6 relative). Computed block by block."""
    axis = axis % x.ndim
    dims = (math.prod(x.shape[:axis]), x.shape[axis], math.prod(x.shape[axis + 1 :]))
    if x.size == 0:
        return np.empty(x.shape, out_dtype)
    return _blockwise(x, dims, functools.partial(_softmax_block, log=log), out_dtype)


def moments(x: np.ndarray, axes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(mean, variance) over `axes`, keepdims, in float64 (two-pass)."""
    mean = np.mean(x, axis=axes, keepdims=True, dtype=np.float64)
    d = x - mean
    var = np.mean(d * d, axis=axes, keepdims=True)
    return mean, var


def _mvn_block(v: np.ndarray, normalize_variance: bool, eps: float, inside: bool) -> None:
    """(v - mean) / sd along the float64 block v's axis 1, in place."""
    np.subtract(v, np.mean(v, axis=1, keepdims=True), out=v)
    if normalize_variance:
        var = np.mean(v * v, axis=1, keepdims=True)
        np.divide(v, np.sqrt(var + eps) if inside else np.sqrt(var) + eps, out=v)


# columns per task of the column kernel: its two float64 rows of sums stay in L1, and its
# loops stay longer than LLVM's unrolled vector body
MVN_COLUMNS = 256


def _mvn_columns(x: np.ndarray, dims, normalize_variance: bool, eps: float, inside: bool, out_dtype):
    """MVN over the middle of x viewed as (outer, n, inner > 1) by the column kernel, or None
    when the numpy path should run. Over 96 channels of 1x96x56x56 float32: 0.97 ms on the
    numpy path (float64 blocks), OpenVINO 0.69 ms (one thread, CPU time)."""
    outer, n, inner = dims
    if inner <= 1 or x.dtype not in (np.float32, np.float64) or np.dtype(out_dtype) not in (np.float32, np.float64):
        return None
    if not jit.use(x.nbytes, SMALL_CALL_SAVING, FAMILY):
        return None
    k = loops()

    v = np.ascontiguousarray(x).reshape(dims)
    out = np.empty(dims, out_dtype)
    tasks = outer * -(-inner // MVN_COLUMNS)
    threads = jit.threads_for(x.nbytes, NORMALIZE_COST)
    jit.parallel_for(k.normalize_cols, tasks, threads, v, out, float(eps), inside, normalize_variance, MVN_COLUMNS)
    return out.reshape(x.shape)


def mvn(
    x: np.ndarray, axes: tuple[int, ...], normalize_variance: bool, eps: float, inside: bool, out_dtype=np.float64
) -> np.ndarray:
    """MVN's numpy path: (x - mean) / sqrt(var + eps) (eps `inside` the sqrt, else added to it)
    over `axes` (sorted, unique), or x - mean, with the moments and the result in float64,
    rounded once to `out_dtype`. Axes that make one run (kept dims of 1 between them allowed)
    go block by block; others take whole-tensor float64 temporaries."""
    dims = _around(x.shape, axes)
    if dims is not None and x.size:
        fast = _mvn_columns(x, dims, normalize_variance, eps, inside, out_dtype)
        if fast is not None:
            return fast
        step = functools.partial(_mvn_block, normalize_variance=normalize_variance, eps=eps, inside=inside)
        return _blockwise(x, dims, step, out_dtype)
    mean, var = moments(x, axes)
    d = x - mean
    if normalize_variance:
        d = d / (np.sqrt(var + eps) if inside else np.sqrt(var) + eps)
    return d.astype(out_dtype, copy=False)
