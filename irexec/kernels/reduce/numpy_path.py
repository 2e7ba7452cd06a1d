"""The reductions' numpy path, used while the numba kernels are not loaded: the kernels'
accumulation rules (floats in float64, integers in int64 or uint64, NaN propagates) in numpy.

Large inputs are read in blocks: each block is cast into a float64 (or 64-bit integer) buffer
that stays in the L2 cache, mapped there (|x|, x^2, exp(x - shift)), reduced there and added
into the output. numpy's own reductions with `dtype=float64` cast in small buffers as they go,
which serves a plain sum over wide innermost rows well, but they call their inner loop once per
short row and do poorly on reduced axes that are not innermost; a cast of the whole tensor
writes twice its size; a product with ones runs on BLAS threads, which a busy machine stalls
(measured 0.3 to 20 ms for the same (1024, 1024) sum over axis 0). Max and Min are exact in
any type: they reduce the input as it is.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .kinds import ADD, ADD_ABS, ADD_SQ, MAX, MIN, MUL

# elements per block: the float64 buffer (512 KiB) and the input block stay in a 2 MiB L2
# (measured on (64, 256, 64, 64) float32, seven axes patterns: 36-50 ms with 64K blocks, 44-53
# with 32K, 45-58 with 128K). Two threads (numpy releases the GIL in its casts and sums) gained
# from nothing to 25% on a quiet machine and lost 20% on a busy one: the blocks run serially.
BLOCK = 1 << 16
# sums of inputs up to this size are numpy's own (one call: 2 against 4 us on (1, 8, 64))
TINY = 2048
# inputs up to this size are cast whole (a 2 MiB float64 copy): the block loop's bookkeeping
# costs more than it saves below it (measured ~20 us a call)
WHOLE = 1 << 18
# innermost reduced rows at least this wide are summed by numpy itself (numpy's reduction calls
# its inner loop once a row: 35 against 22 us per 64K elements on rows of 64, cast + einsum)
WIDE_ROWS = 256
# a map step of this path: exp(x - shift), LogSumExp's second pass (the kernels' is exp_loops.py)
EXP = -1


def groups(shape: tuple[int, ...], axes: tuple[int, ...]) -> list[list]:
    """[size, reduced] of shape's dims with size-1 dims dropped and adjacent kept or reduced
    dims merged."""
    found: list[list] = []
    for i, n in enumerate(shape):
        if n == 1:
            continue
        red = i in axes
        if found and found[-1][1] == red:
            found[-1][0] *= n
        else:
            found.append([n, red])
    return found


def _wide_rows(merged: list[list]) -> bool:
    """One reduced group, innermost and wide: numpy's own float64 sum, which casts in small
    buffers as it goes, is then one pass with no block bookkeeping (measured on (64, 256, 64,
    64) over (2, 3): 31 against 36 ms in blocks)."""
    return 0 < len(merged) <= 2 and merged[-1][1] and merged[-1][0] >= WIDE_ROWS


def _reduce_block(b: np.ndarray, axes: tuple[int, ...], first: int, shift: np.ndarray | None) -> np.ndarray:
    """Map and reduce the block `b` (a 64-bit buffer, changed in place) over `axes`; `shift`
    (b's shape with 1 on `axes`) is subtracted first."""
    if shift is not None:
        np.subtract(b, shift, out=b)
    if first == ADD_ABS:
        np.abs(b, out=b)
    elif first == ADD_SQ:
        np.multiply(b, b, out=b)
    elif first == EXP:
        np.exp(b, out=b)
    if not axes:
        return b
    if first == MUL:
        return np.multiply.reduce(b, axis=axes)
    leading = axes == tuple(range(len(axes))) and math.prod(b.shape[len(axes) :]) >= WIDE_ROWS
    if b.dtype.kind == "f" and not leading:
        # einsum's float sums are several times faster than np.add.reduce over short rows
        # (measured 10 against 25 us on (1024, 64), 52 against 202 on (16384, 4)); numpy adds
        # wide rows into each other a little faster (11 against 13 us on (16, 4096) over axis 0)
        return np.einsum(b, list(range(b.ndim)), [i for i in range(b.ndim) if i not in axes])
    return np.add.reduce(b, axis=axes)


def _blocked(x: np.ndarray, merged: list[list], first: int, acc_dt: np.dtype, shift: np.ndarray | None) -> np.ndarray:
    """x (reshaped to the `merged` dims) reduced over the merged reduced dims, block by block:
    the dims after `j` make up a block whole, dim j is cut into `step`-sized slices. Blocks are
    visited kept index first, so each output block takes all its contributions while it is in
    cache. `shift` has the output's size."""
    dims = [n for n, _ in merged]
    red = [r for _, r in merged]
    j = len(dims) - 1
    while j > 0 and math.prod(dims[j:]) <= BLOCK:
        j -= 1
    step = max(1, BLOCK // math.prod(dims[j + 1 :]))
    ranges = [range(n) for n in dims[:j]] + [range(0, dims[j], step)]
    order = [i for i in range(j + 1) if not red[i]] + [i for i in range(j + 1) if red[i]]
    inside = tuple(i - j for i in range(j, len(dims)) if red[i])
    out_dims = [n for n, r in merged if not r]
    out = np.full(out_dims, 1 if first == MUL else 0, acc_dt)
    if shift is not None:
        shift = shift.reshape(out_dims)
    combine = np.multiply if first == MUL else np.add
    v = x.reshape(dims)
    buf = np.empty([min(step, dims[j])] + dims[j + 1 :], acc_dt)
    # blocks with no reduced dim of their own (sums over leading axes, axis 0 among them) need
    # no map and no reduction: each is one mixed-type add into the output (measured 14 against
    # 20-24 ms on (8, 256, 64, 64) over axis 0, the copy into a buffer saved)
    direct = not inside and first in (ADD, MUL) and shift is None
    for picked in itertools.product(*(ranges[i] for i in order)):
        at = dict(zip(order, picked))
        lo = at[j]
        hi = min(lo + step, dims[j])
        where = tuple(at[i] for i in range(j)) + (slice(lo, hi),)
        # the trailing Ellipsis makes the target a view, also when it is 0-d
        target = tuple(w for i, w in enumerate(where) if not red[i]) + (Ellipsis,)
        if direct:  # x's block added (multiplied) into the output as numpy casts it, no buffer
            combine(out[target], v[where], out=out[target], casting="unsafe")
            continue
        b = buf[: hi - lo]
        np.copyto(b, v[where], casting="unsafe")
        block_shift = None if shift is None else np.expand_dims(shift[target], inside)
        combine(out[target], _reduce_block(b, inside, first, block_shift), out=out[target])
    return out.reshape(-1)


def accumulate(
    x: np.ndarray, axes: tuple[int, ...], first: int, acc_dt: np.dtype, shift: np.ndarray | None = None
) -> np.ndarray:
    """x reduced over `axes` with step `first` (a kind's step code, or EXP): the flat 64-bit
    accumulators, kept dims in C order. `shift` (the flat output's size) is subtracted from
    each element first. Integer |x| and x^2 are taken after widening (|-128| does not wrap in
    int8)."""
    with np.errstate(all="ignore"):
        if first in (MAX, MIN):
            ufunc = np.maximum if first == MAX else np.minimum
            merged = groups(x.shape, axes)
            if x.size > TINY and len(merged) == 2 and merged[1][1] and merged[1][0] < WIDE_ROWS:
                return _short_rows(ufunc, x.reshape(merged[0][0], merged[1][0])).astype(acc_dt)
            return np.asarray(ufunc.reduce(x, axis=axes)).astype(acc_dt).reshape(-1)
        if first == ADD and shift is None and (x.size <= TINY or _wide_rows(groups(x.shape, axes))):
            return np.asarray(np.add.reduce(x, axis=axes, dtype=acc_dt)).reshape(-1)
        if x.size <= WHOLE:
            if shift is not None:
                shift = shift.reshape([1 if i in axes else n for i, n in enumerate(x.shape)])
            return np.asarray(_reduce_block(x.astype(acc_dt), axes, first, shift)).reshape(-1)
        return _blocked(x, groups(x.shape, axes), first, acc_dt, shift)


def _short_rows(ufunc, v: np.ndarray) -> np.ndarray:
    """ufunc (np.maximum, np.minimum) over each short row of the 2-D v, block by block: each
    block transposed into a buffer whose rows numpy combines element-wise (its reduction over
    the innermost axis calls its inner loop once a row: measured 67 against ~10 ms for rows of
    64 in (8, 256, 64, 64)). Exact in any type; NaN propagates."""
    rows, n = v.shape
    out = np.empty(rows, v.dtype)
    step = max(1, BLOCK // n)
    buf = np.empty((n, min(step, rows)), v.dtype)
    for lo in range(0, rows, step):
        hi = min(lo + step, rows)
        b = buf[:, : hi - lo]
        np.copyto(b, v[lo:hi].T)
        ufunc.reduce(b, axis=0, out=out[lo:hi])
    return out


def exp_sum(x: np.ndarray, axes: tuple[int, ...], shift: np.ndarray) -> np.ndarray:
    """The float64 sums of exp(x - shift) over `axes` (flat, kept dims in C order), block by
    block: no float64 copy of x, no tensor of exponentials."""
    return accumulate(x, axes, EXP, np.dtype(np.float64), shift)
