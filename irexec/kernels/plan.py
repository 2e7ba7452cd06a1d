"""Reduction planning: axes -> canonical groups -> a sequence of kernel passes, then the epilogue.

Size-1 dims are dropped and adjacent kept/reduced dims merged, so any reduction becomes a
sequence of (M, R, N) blocks: each pass removes one reduced group (the largest first, so the
intermediate is as small as possible) with the rows kernel (N == 1) or the columns kernel.
The first pass applies the op's map step (|x|, x^2); later passes combine accumulators.
Policy lives here, in Python; the kernels see contiguous arrays and integers only.
"""

from __future__ import annotations

import math

import numpy as np

from ..dtypes import numpy_dtype, round_bf16

# op -> (first step, combine step); codes as in kernels.reduce, repeated to keep numba unimported
_ADD, _ADD_ABS, _ADD_SQ, _MUL, _MAX, _MIN = range(6)
_STEPS = {
    "sum": (_ADD, _ADD),
    "mean": (_ADD, _ADD),
    "prod": (_MUL, _MUL),
    "max": (_MAX, _MAX),
    "min": (_MIN, _MIN),
    "l1": (_ADD_ABS, _ADD),
    "l2": (_ADD_SQ, _ADD),
    "sumsq": (_ADD_SQ, _ADD),
    "logsum": (_ADD, _ADD),
    "and": (_MIN, _MIN),
    "or": (_MAX, _MAX),
}
OPS = tuple(_STEPS) + ("logsumexp",)


def empty_value(op: str, et: str):
    """The value of a reduction over an empty set (SPEC §2.1 table)."""
    dt = numpy_dtype(et)
    is_float = dt.kind == "f"
    if op in ("sum", "l1", "l2", "sumsq"):
        return 0
    if op == "mean":
        return np.nan if is_float else 0
    if op == "prod":
        return 1
    if op in ("logsum", "logsumexp"):
        return -np.inf if is_float else 0
    if op == "and":
        return True
    if op == "or":
        return False
    if dt.kind == "b":
        return op == "min"
    if op == "max":
        return -np.inf if is_float else np.iinfo(dt).min
    return np.inf if is_float else np.iinfo(dt).max


def _acc_dtype(x: np.ndarray) -> tuple[np.ndarray, np.dtype]:
    """The array the kernels read and the accumulator type (64-bit for every input)."""
    k = x.dtype.kind
    if k == "f":
        if x.dtype == np.float16:
            x = x.astype(np.float32)
        return x, np.dtype(np.float64)
    if x.dtype == np.uint64:
        return x, np.dtype(np.uint64)
    if x.dtype != np.int64:
        x = x.astype(np.int64)
    return x, np.dtype(np.int64)


def _identity(code: int, dt: np.dtype):
    if code in (_ADD, _ADD_ABS, _ADD_SQ):
        return 0
    if code == _MUL:
        return 1
    if dt.kind == "f":
        return -np.inf if code == _MAX else np.inf
    info = np.iinfo(dt)
    return info.min if code == _MAX else info.max


def _groups(shape: tuple[int, ...], axes: tuple[int, ...]) -> list[list]:
    groups: list[list] = []
    for i, n in enumerate(shape):
        if n == 1:
            continue
        red = i in axes
        if groups and groups[-1][1] == red:
            groups[-1][0] *= n
        else:
            groups.append([n, red])
    return groups


def _threads() -> int:
    import numba

    return numba.get_num_threads()


def _pass(cur: np.ndarray, m: int, r: int, n: int, code: int, combine: int, acc_dt: np.dtype) -> np.ndarray:
    from . import reduce as k

    if n == 1:
        p = 1
        if m < 4 * _threads() and r >= 2 * k.ROW_CHUNK:
            p = min(math.ceil(r / k.ROW_CHUNK), 256)
        chunk = math.ceil(r / p)
        partial = np.full((m, p), _identity(code, acc_dt), acc_dt)
        k.reduce_rows(cur.reshape(m, r), partial, code, chunk)
        if p == 1:
            return partial.reshape(m)
        out = np.full((m, 1), _identity(combine, acc_dt), acc_dt)
        k.reduce_rows(partial, out, combine, p)
        return out.reshape(m)
    out = np.full((m, n), _identity(code, acc_dt), acc_dt)
    k.reduce_columns(cur.reshape(m, r, n), out, code, k.COL_TILE)
    return out.reshape(m * n)


def accumulate(x: np.ndarray, axes: tuple[int, ...], first: int, combine: int) -> np.ndarray:
    """The 64-bit accumulator of reducing x over `axes`, flat, kept dims in C order."""
    work, acc_dt = _acc_dtype(x)
    work = np.ascontiguousarray(work)
    groups = _groups(work.shape, axes)
    if not any(red for _, red in groups):
        return _pass(work, work.size, 1, 1, first, combine, acc_dt)
    cur, code = work, first
    while any(red for _, red in groups):
        i = max((g for g in range(len(groups)) if groups[g][1]), key=lambda g: groups[g][0])
        m = math.prod(g[0] for g in groups[:i])
        n = math.prod(g[0] for g in groups[i + 1 :])
        cur = _pass(cur, m, groups[i][0], n, code, combine, acc_dt)
        code = combine
        del groups[i]
        if 0 < i < len(groups) and not groups[i - 1][1] and not groups[i][1]:
            groups[i - 1][0] *= groups[i][0]
            del groups[i]
    return cur


def _finish(acc: np.ndarray, op: str, count: int, et: str) -> np.ndarray:
    """Epilogue: mean's division, L2's sqrt, LogSum's log, then one cast to the output type."""
    out_dt = numpy_dtype(et)
    if out_dt.kind == "f":
        with np.errstate(all="ignore"):
            if op == "mean":
                acc = acc / count
            elif op == "l2":
                acc = np.sqrt(acc)
            elif op == "logsum":
                acc = np.log(acc)
            if et == "bf16":
                return round_bf16(acc.astype(np.float32))
            return acc.astype(out_dt)
    if out_dt.kind == "b":
        return acc != 0
    if op == "mean":
        if acc.dtype == np.uint64:
            acc = acc // np.uint64(count)
        else:
            q = np.abs(acc) // count
            acc = np.where(acc < 0, -q, q)
    elif op == "l2":
        with np.errstate(all="ignore"):
            acc = np.trunc(np.sqrt(acc.astype(np.float64)))
    elif op == "logsum":
        with np.errstate(all="ignore"):
            acc = np.trunc(np.log(acc.astype(np.float64)))
    with np.errstate(all="ignore"):
        return acc.astype(out_dt)


def reduce_array(x: np.ndarray, axes: tuple[int, ...], op: str, keep_dims: bool, et: str) -> np.ndarray:
    """Reduce `x` (storage dtype of element type `et`) over normalized, sorted, unique `axes`."""
    shape = x.shape
    out_shape = tuple(1 if i in axes else n for i, n in enumerate(shape) if keep_dims or i not in axes)
    count = math.prod(shape[a] for a in axes)
    out_dt = numpy_dtype(et)
    if math.prod(out_shape) == 0:
        return np.empty(out_shape, out_dt)
    if count == 0:
        return np.full(out_shape, empty_value(op, et), out_dt)
    if op == "logsumexp":
        return _logsumexp(x, axes, et).reshape(out_shape)
    first, combine = _STEPS[op]
    acc = accumulate(x, axes, first, combine)
    return _finish(acc, op, count, et).reshape(out_shape)


def _logsumexp(x: np.ndarray, axes: tuple[int, ...], et: str) -> np.ndarray:
    """log(sum(exp(x))) computed stably: shifted by the max, which is finite or replaced by 0."""
    kept = tuple(1 if i in axes else n for i, n in enumerate(x.shape))
    xf = x.astype(np.float64) if x.dtype != np.float64 else x
    m = accumulate(xf, axes, _MAX, _MAX).reshape(kept)
    shift = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(all="ignore"):
        t = np.exp(xf - shift)
        s = accumulate(t, axes, _ADD, _ADD).reshape(kept)
        acc = (np.log(s) + shift).reshape(-1)
    if numpy_dtype(et).kind == "f":
        return _finish(acc, "sum", 1, et)
    with np.errstate(all="ignore"):
        return np.trunc(acc).astype(numpy_dtype(et))
