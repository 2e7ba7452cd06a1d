"""Reduction planning: axes -> canonical groups -> a sequence of kernel passes, then the epilogue.

Size-1 dims are dropped and adjacent kept/reduced dims merged, so any reduction becomes a
sequence of (M, R, N) blocks: each pass removes one reduced group (the largest first, so the
intermediate is as small as possible) with the rows kernel (N == 1) or the columns kernel.
The first pass applies the op's map step (|x|, x^2); later passes combine accumulators.
Two layouts take two passes on purpose: a narrow trailing kept group is folded into a wide one
and back (`_fold_narrow`), and a short trailing reduced group under a long one is folded last,
from the float64 intermediate (`_defer_short`), so the big pass is a columns pass.
Policy lives here, in Python; the kernels see contiguous arrays and integers only.
"""

from __future__ import annotations

import contextlib
import functools
import math
from dataclasses import dataclass

import numpy as np

from ... import config
from ...dtypes import numpy_dtype, round_bf16
from .. import jit
from .kinds import ADD as _ADD
from .kinds import ADD_ABS as _ADD_ABS
from .kinds import ADD_SQ as _ADD_SQ
from .kinds import DIVIDE, KINDS, LOG, SQRT, ReduceKind
from .kinds import MAX as _MAX
from .kinds import MIN as _MIN
from .kinds import MUL as _MUL
from .numpy_path import accumulate as accumulate_numpy
from .numpy_path import exp_sum
from .numpy_path import groups as merged_groups

FAMILY = "reduce"  # its name in jit.FAMILIES


def _acc_dtype(x: np.ndarray) -> tuple[np.ndarray, np.dtype]:
    """The array the kernels read and the 64-bit accumulator type."""
    k = x.dtype.kind
    if k == "f":
        if x.dtype == np.float16:
            x = np.ascontiguousarray(x).view(np.uint16)  # widened inside the kernels
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


def canonical_5d(groups: list[list]) -> tuple[int, int, int, int, int] | None:
    """(A, B, C, D, E): kept, reduced, kept, reduced, kept, right-aligned; None if > 5 groups."""
    sizes = [g[0] for g in groups]
    if not groups or groups[-1][1]:
        sizes.append(1)  # end on a kept group (E == 1: the rows kernel)
    if len(sizes) % 2 == 0:
        sizes.insert(0, 1)  # start on a kept group
    if len(sizes) > 5:
        return None
    return tuple([1] * (5 - len(sizes)) + sizes)


def _combine(part: np.ndarray, code: int) -> np.ndarray:
    """Combine the splits (axis 2) of a kernel's partial results."""
    if part.shape[2] == 1:
        return part[:, :, 0]
    if code == _MUL:
        return part.prod(axis=2)
    if code == _MAX:
        return part.max(axis=2)
    if code == _MIN:
        return part.min(axis=2)
    return part.sum(axis=2)


@dataclass(frozen=True)
class Fused:
    """What the kernels finish themselves: the output dtype, epilogue code and reduced count."""

    dtype: np.dtype
    epilogue: int
    count: int


def _splits(outputs: int, b: int, d: int, threads: int, width: int = 1, split_min: int | None = None) -> int:
    """Parts the reduced axis D is split into, so that few outputs still give every thread
    tasks: 1 on one thread, or unless outputs (rows, or the columns pass's tiles of `width` kept
    elements) are fewer than 4 per thread and each reads much (SPLIT_MIN elements a part at
    least). A tile reads b * d * width elements: the mean over (0, 1) of (64,256,64,64) float32
    is one tile of 4096 columns over 16384 rows, which ran on one thread (20 GB/s) while its rows
    were counted alone. One thread gains nothing from parts, and pays for combining them and
    finishing in numpy."""
    split_min = config.SPLIT_MIN if split_min is None else split_min
    work = b * d * width
    if threads > 1 and outputs < 4 * threads and work >= 2 * split_min:
        return max(1, min(d, 8 * threads, work // split_min))
    return 1


def _back_tile(e: int, narrow: tuple[int, int] | None, tile: int) -> int:
    """The columns pass's tile when it folds the narrow group back itself (`narrow` (k, E'),
    whole groups of k * E' per tile), else 0."""
    if narrow is None:
        return 0
    group = narrow[0] * narrow[1]
    if e % group:
        return 0
    return max(1, tile // group) * group


@dataclass(frozen=True)
class _Pass:
    """One kernel pass's integers and types, derived once per layout (`_pass`)."""

    rows: bool  # the rows kernel (E == 1), else the columns kernel
    view: tuple  # x reshaped for the kernel: (A, B, C, D) or (A, B, C, D, E)
    splits: int
    finished: bool  # the kernel finishes the values (one split, a fused epilogue)
    out_dt: np.dtype
    epi: int
    count: int
    init: object  # the step's identity, typed as the accumulator
    part_shape: tuple
    out_size: int
    tasks: int
    per: int  # rows per task (rows), or the tile (columns)
    zero: object  # the columns' element-type lanes' zero
    back_k: int
    back_e: int


@functools.lru_cache(maxsize=1024)
def _pass(
    dims, code: int, acc_dt: np.dtype, fused: Fused | None, narrow, threads: int, x_dtype: np.dtype, split_min: int
):
    """The `_Pass` of `_run5`, or None when a narrow fold cannot be done in it (splits). Cached:
    a model's reductions plan once, and a small one's Python work is most of its time (a mean
    over (2, 3) of (1, 72, 28, 28) float32, a MobileNet's squeeze-and-excite: 18.0 -> 12.7 us a call;
    medians, the two alternated in one process)."""
    from . import loops as k

    a, b, c, d, e = dims
    tile = _back_tile(e, narrow, k.TILE) if e > 1 else 0
    width = 1 if e == 1 else min(e, tile or k.TILE)
    splits = _splits(a * c * (1 if e == 1 else math.ceil(e / (tile or k.TILE))), b, d, threads, width, split_min)
    if narrow is not None and (not tile or splits > 1):
        return None
    back_k, back_e = narrow if narrow is not None else (1, 1)
    fused = fused if splits == 1 else None
    out_dt, epi, count = (fused.dtype, fused.epilogue, fused.count) if fused else (acc_dt, 0, 1)
    init = acc_dt.type(_identity(code, acc_dt))
    part_shape = (a, c, splits) if e == 1 else (a, c, splits, e)
    part_shape = part_shape if splits > 1 else (1,) * len(part_shape)
    out_size = a * c * e // back_k if splits == 1 else 1
    if e == 1:
        # Rows per task: enough that short rows share the task bookkeeping, few enough that
        # every thread gets several tasks, at most 8192 accumulators.
        row = math.ceil(d / splits)
        per = max(1 << 14 // max(row, 1), c // max(1, math.ceil(8 * threads / (a * splits))))
        per = max(1, min(per, c, 8192))
        tasks = a * math.ceil(c / per) * splits
        view, zero = (a, b, c, d), None
    else:
        # column sums run in the element's lanes between flushes: float32 for float32 and
        # float16 (widened) input, the accumulator's type otherwise
        zero = np.float32(0) if x_dtype in (np.float32, np.uint16) else acc_dt.type(0)
        per = tile or k.TILE
        tasks = a * c * splits * math.ceil(e / per)
        view = (a, b, c, d, e)
    return _Pass(
        e == 1,
        view,
        splits,
        fused is not None,
        out_dt,
        epi,
        count,
        init,
        part_shape,
        out_size,
        tasks,
        per,
        zero,
        back_k,
        back_e,
    )


def _run5(x: np.ndarray, dims, code: int, combine: int, acc_dt: np.dtype, fused: Fused | None, narrow=None):
    """One kernel pass. Returns (values, finished): finished values have the output type. With
    `narrow` (k, E') a columns pass also folds its kept group back (`reduce_columns`' back_k),
    or returns None when it cannot (splits): the caller then runs the fold back itself."""
    threads = jit.threads_for(x.nbytes)
    p = _pass(dims, code, acc_dt, fused, narrow, threads, x.dtype, config.SPLIT_MIN)
    if p is None:
        return None
    part = np.empty(p.part_shape, acc_dt)
    out = np.empty(p.out_size, p.out_dt)
    kernel, tail = _kernel_call(p, code, combine)
    jit.parallel_for(kernel, p.tasks, threads, x.reshape(p.view), p.splits, part, out, *tail)
    if p.splits == 1:
        return out, p.finished
    with np.errstate(all="ignore"):
        return _combine(part, combine).reshape(-1), False


def _kernel_call(p: _Pass, code: int, combine: int) -> tuple:
    """(kernel, its arguments after out) for a pass: the rows or the columns kernel."""
    from . import loops as k

    if p.rows:
        return k.reduce_rows, (code, p.init, p.epi, p.count, p.per)
    return k.reduce_columns, (code, p.init, p.epi, p.count, p.per, p.zero, p.back_k, p.back_e, combine)


# An innermost kept group this narrow would make the columns kernel fold rows of a few
# elements each; the reduced group above it is then folded in two steps instead (below).
_NARROW = 128
_WIDE_MAX = 1 << 16


def _fold_narrow(groups: list[list]) -> tuple[list[list], tuple[int, int] | None]:
    """Fold into a wider vector, then fold back: for groups ending in (reduced D, kept E) with
    a narrow E, the main pass keeps k rows of E as one wide kept group (k divides D; k = D when
    another reduced group leaves the main pass work to do), and folds each tile's k rows back to
    E itself (`reduce_columns`' back_k), or, when it cannot (split reduced sets), a second, small
    pass folds the k rows of the float64 intermediate back. Returns the main pass's groups and
    (k, E)."""
    if len(groups) < 2 or groups[-1][1] or not groups[-2][1] or groups[-1][0] >= _NARROW:
        return groups, None
    d, e = groups[-2][0], groups[-1][0]
    if any(g[1] for g in groups[:-2]) and d * e <= _WIDE_MAX:
        k = d
    else:
        k = next((k for k in range(min(d - 1, 8192 // e), 7, -1) if d % k == 0), None)
        if k is None:
            return groups, None
    main = [list(g) for g in groups[:-2]]
    if d // k > 1:
        main.append([d // k, True])
    if main and not main[-1][1]:
        main[-1][0] *= k * e
    else:
        main.append([k * e, False])
    return main, (k, e)


# A trailing reduced group this short, under a kept group and another reduced group, is
# folded in a second pass (`_defer_short`) ...
_SHORT = 128
# ... when the reduced group above is at least this long, so the intermediate is small
_DEFER_MIN_B = 16


def _defer_short(groups: list[list]) -> tuple[list[list], int]:
    """For groups ending in (reduced B, kept C, reduced D) with a short D and a long B, the
    main pass keeps C and D as one kept group (the columns kernel over B, which reads at the
    streaming speed) and a second pass folds the rows of D of its float64 intermediate (1/B of
    the input, twice the element size). Folded in the rows kernel instead, every row of D is a
    short sum and a horizontal add: the mean over (1, 3) of (64,256,64,64) float32 read 0.68-0.77
    of the streaming limit. Returns the main pass's groups and D (0: no second pass)."""
    if len(groups) < 3 or not groups[-1][1] or groups[-2][1] or not groups[-3][1]:
        return groups, 0
    b, c, d = (g[0] for g in groups[-3:])
    if d > _SHORT or b < _DEFER_MIN_B:
        return groups, 0
    return [list(g) for g in groups[:-2]] + [[c * d, False]], d


@functools.lru_cache(maxsize=1024)
def plan_layout(shape: tuple[int, ...], axes: tuple[int, ...], fold: bool = True):
    """(5-D dims, narrow fold or None, transpose or None, deferred short rows or 0) for reducing
    `shape` over `axes`; cached, so a model run again pays no planning. `fold=False`: neither
    the narrow fold nor the deferred rows (the exponentials' pass, compute-bound, reads narrow
    columns and short rows as fast)."""
    groups, narrow, short = merged_groups(shape, axes), None, 0
    if fold:
        groups, narrow = _fold_narrow(groups)
        groups, short = _defer_short(groups)
    dims = canonical_5d(groups)
    if dims is not None:
        return dims, narrow, None, short
    # More than five alternating groups: one transposed copy puts kept dims first.
    kept = [i for i in range(len(shape)) if i not in axes]
    n_kept = math.prod(shape[i] for i in kept)
    return (1, 1, n_kept, math.prod(shape) // max(n_kept, 1), 1), None, tuple(kept + list(axes)), 0


def accumulate(
    x: np.ndarray, axes: tuple[int, ...], first: int, combine: int, fused: Fused | None = None, force: bool = False
):
    """Reduce x over `axes`: (flat values with kept dims in C order, finished). Unfinished
    values are the 64-bit accumulators; finished ones went through `fused` in the kernel.
    Small inputs while the kernels are not loaded, and inputs for which loading numba does not
    pay yet (kernels.jit), take the numpy path (once loaded, the kernels are faster at every
    size: 11 against 15 us on (1, 8, 64)); `force` takes the kernels whatever the size."""
    if not force and not jit.use(x.nbytes, 0.0, FAMILY, small=x.size < config.SMALL_ELEMENTS):
        acc_dt = (
            np.dtype(np.float64) if x.dtype.kind == "f" else np.dtype(np.uint64 if x.dtype == np.uint64 else np.int64)
        )
        return accumulate_numpy(x, axes, first, acc_dt), False
    work, acc_dt = _acc_dtype(x)
    work = np.ascontiguousarray(work)
    dims, narrow, transpose, short = plan_layout(work.shape, axes)
    if transpose is not None:
        work = np.ascontiguousarray(work.transpose(transpose))
    if short:
        values, _ = _run5(work, dims, first, combine, acc_dt, None)
        return _run5(values, (1, 1, values.size // short, short, 1), combine, combine, acc_dt, fused)
    if narrow is None:
        return _run5(work, dims, first, combine, acc_dt, fused)
    done = _run5(work, dims, first, combine, acc_dt, fused, narrow)
    if done is not None:
        return done
    values, _ = _run5(work, dims, first, combine, acc_dt, None)
    k, e = narrow
    # The fold back apart: a small columns pass over the float64 intermediate (1/B of the
    # input), which also applies the epilogue. Folded in the main pass instead, the mean over
    # (0, 2) of (64,256,64,64) float32 went from 0.75-0.79 of the streaming limit to 0.91.
    return _run5(values, (1, 1, values.size // (k * e), k, e), combine, combine, acc_dt, fused)


def _finish(acc: np.ndarray, finish: int, count: int, et: str) -> np.ndarray:
    """Epilogue: Mean's division, L2's sqrt, LogSum's log, then one cast to the output type."""
    out_dt = numpy_dtype(et)
    if out_dt.kind == "f":
        with np.errstate(all="ignore"):
            if finish == DIVIDE:
                acc = acc / count
            elif finish == SQRT:
                acc = np.sqrt(acc)
            elif finish == LOG:
                acc = np.log(acc)
            if et == "bf16":
                return round_bf16(acc.astype(np.float32))
            return acc.astype(out_dt)
    if out_dt.kind == "b":
        return acc != 0
    if finish == DIVIDE:
        if acc.dtype == np.uint64:
            acc = acc // np.uint64(count)
        else:
            # |acc| as uint64: np.abs of the int64 minimum is the minimum itself
            with np.errstate(all="ignore"):
                mag = np.where(acc < 0, np.uint64(0) - acc.view(np.uint64), acc.view(np.uint64))
                q = (mag // np.uint64(count)).view(np.int64)
                acc = np.where(acc < 0, -q, q)
    elif finish == SQRT:
        with np.errstate(all="ignore"):
            acc = np.trunc(np.sqrt(acc.astype(np.float64)))
    elif finish == LOG:
        with np.errstate(all="ignore"):
            acc = np.trunc(np.log(acc.astype(np.float64)))
    with np.errstate(all="ignore"):
        return acc.astype(out_dt)


@functools.lru_cache(maxsize=1024)
def _output(shape: tuple[int, ...], axes: tuple[int, ...], keep_dims: bool, finish: int, et: str):
    """(output shape, reduced count, output dtype, the kernels' Fused or None), once per layout."""
    out_shape = tuple(1 if i in axes else n for i, n in enumerate(shape) if keep_dims or i not in axes)
    count = math.prod(shape[a] for a in axes)
    out_dt = numpy_dtype(et)
    return out_shape, count, out_dt, Fused(out_dt, finish, count) if et in ("f32", "f64") else None


def reduce_array(
    x: np.ndarray, axes: tuple[int, ...], kind: ReduceKind | str, keep_dims: bool, et: str, force: bool = False
) -> np.ndarray:
    """Reduce `x` (storage dtype of element type `et`) over normalized, sorted, unique `axes`."""
    if isinstance(kind, str):
        kind = KINDS[kind]
    out_shape, count, out_dt, fused = _output(x.shape, axes, keep_dims, kind.finish, et)
    if math.prod(out_shape) == 0:
        return np.empty(out_shape, out_dt)
    if count == 0:
        return np.full(out_shape, kind.empty(et), out_dt)
    if kind.name == "logsumexp":
        return _logsumexp(x, axes, et, force).reshape(out_shape)
    values, finished = accumulate(x, axes, kind.first, kind.combine, fused, force)
    if finished:
        return values.reshape(out_shape)
    return _finish(values, kind.finish, count, et).reshape(out_shape)


def reduce_call(x: np.ndarray, axes: tuple[int, ...], kind: ReduceKind, keep_dims: bool, et: str):
    """`reduce_array`'s kernel pass for arrays of x's shape and type as a function of x alone
    (`Op.steady`), where one pass on the calling thread finishes the values itself (float32 or
    float64 in and out, a layout of one pass: no transposed copy, deferred rows or fold back
    apart); None otherwise. The function answers None while a thread forces or records the
    paths, or once the pass would take threads (`jit.still_one_call`). A MobileNet-V3's global
    pooling, a mean over (2, 3) of (1, 96, 7, 7), spent most of its time in the planner's Python."""
    if x.dtype not in (np.float32, np.float64) or et not in ("f32", "f64") or kind.name == "logsumexp" or not axes:
        return None
    if not jit.ready(FAMILY) or x.nbytes >= config.THREAD_MIN_BYTES:
        return None
    out_shape, count, _, fused = _output(x.shape, axes, keep_dims, kind.finish, et)
    if math.prod(out_shape) == 0 or count == 0:
        return None
    dims, narrow, transpose, short = plan_layout(x.shape, axes)
    acc_dt = np.dtype(np.float64)
    p = (
        None
        if transpose is not None or short
        else _pass(dims, kind.first, acc_dt, fused, narrow, 1, x.dtype, config.SPLIT_MIN)
    )
    if p is None or not p.finished:  # finished: one split, the epilogue fused
        return None
    part = np.empty(p.part_shape, acc_dt)  # not written with one split
    view, work = p.view, x.nbytes
    kernel, tail = _kernel_call(p, kind.first, kind.combine)

    def run(x: np.ndarray) -> np.ndarray | None:
        if not jit.still_one_call(work):
            return None
        out = np.empty(p.out_size, p.out_dt)
        kernel(0, p.tasks, np.ascontiguousarray(x).reshape(view), p.splits, part, out, *tail)
        return out.reshape(out_shape)

    return run


def _logsumexp(x: np.ndarray, axes: tuple[int, ...], et: str, force: bool = False) -> np.ndarray:
    """log(sum(exp(x))) computed stably: shifted by the max (exact in x's own type), which is
    finite or replaced by 0; the shifted exponentials are summed in float64, by the kernels
    (`exp_loops`) or block by block in numpy."""
    m = accumulate(x, axes, _MAX, _MAX, force=force)[0].astype(np.float64)
    shift = np.where(np.isfinite(m), m, 0.0)
    sums = _exp_sums(x, axes, m, numpy_dtype(et), force)
    with np.errstate(all="ignore"):
        acc = np.log(exp_sum(x, axes, shift) if sums is None else sums) + shift
    if numpy_dtype(et).kind == "f":
        return _finish(acc, 0, 1, et)
    with np.errstate(all="ignore"):
        return np.trunc(acc).astype(numpy_dtype(et))


# work per byte of the exponentials' pass against a streaming read (jit.threads_for): an exp
# per element, as softmax's (kernels/normalize.py)
EXP_COST = 12.0


def _exp_sums(x: np.ndarray, axes: tuple[int, ...], peak: np.ndarray, out_dtype, force: bool) -> np.ndarray | None:
    """The float64 sums of exp(x - shift) over `axes` by the kernels (flat, kept dims in C
    order, as `peak`, the max of each output's values: the shift where finite, else 0), or None
    when the numpy path should run (other types, kernels that do not pay yet)."""
    if x.dtype not in (np.float32, np.float64):
        return None
    if not force and not jit.use(x.nbytes, 0.0, FAMILY, small=x.size < config.SMALL_ELEMENTS):
        return None
    from . import exp_loops as k

    work = np.ascontiguousarray(x)
    (a, b, c, d, e), _, transpose, _ = plan_layout(work.shape, axes, fold=False)
    if transpose is not None:
        work = np.ascontiguousarray(work.transpose(transpose))
    peak = np.ascontiguousarray(peak, np.float64).reshape(-1)
    threads = jit.threads_for(work.nbytes, EXP_COST)
    f32 = out_dtype == np.float32  # the result's type: float32 allows the cheaper exp
    if e > 1:
        out = np.empty(a * c * e)
        tasks = a * c * math.ceil(e / k.TILE)
        jit.parallel_for(k.exp_sum_columns, tasks, threads, work.reshape(a, b, c, d, e), peak, out, k.TILE, f32)
        return out
    splits = _splits(a * c, b, d, threads)
    # rows per task: every thread gets several tasks (an exponential costs more than a row's
    # bookkeeping)
    per = max(1, min(c, 8192, c // max(1, math.ceil(8 * threads / (a * splits)))))
    part = np.empty((a * c, splits))
    tasks = a * math.ceil(c / per) * splits
    jit.parallel_for(k.exp_sum_rows, tasks, threads, work.reshape(a, b, c, d), peak, part, splits, per, f32)
    return part[:, 0] if splits == 1 else part.sum(axis=1)


def _merged_layout(shapes: list[tuple[int, ...]], out_shape: tuple[int, ...]):
    """Per-input element strides in the output's index space (0 where broadcast), with adjacent
    dims merged wherever every input allows it. Returns (dims, strides per input)."""
    rank = max(len(out_shape), 1)
    out = (1,) * (rank - len(out_shape)) + tuple(out_shape)
    strides = []
    for s in shapes:
        s = (1,) * (rank - len(s)) + tuple(s)
        st, acc = [0] * rank, 1
        for d in range(rank - 1, -1, -1):
            st[d] = 0 if s[d] == 1 and out[d] != 1 else acc
            acc *= s[d]
        strides.append(st)
    dims = [out[0]]
    merged = [[st[0]] for st in strides]
    for d in range(1, rank):
        if all(m[-1] == st[d] * out[d] for m, st in zip(merged, strides)):
            dims[-1] *= out[d]
            for m, st in zip(merged, strides):
                m[-1] = st[d]
        else:
            dims.append(out[d])
            for m, st in zip(merged, strides):
                m.append(st[d])
    return dims, merged


def mean_broadcast(xs: list[np.ndarray], et: str, force: bool = False) -> np.ndarray:
    """ONNX Mean: element-wise mean of broadcast inputs, one fused pass, float64 accumulation."""
    out_shape = np.broadcast_shapes(*(x.shape for x in xs))
    out_dt = numpy_dtype(et)
    n = math.prod(out_shape)
    dims, strides = _merged_layout([x.shape for x in xs], out_shape)
    # The fused kernel pays off on vector-length rows; float16 output needs numpy's one-step
    # double -> half rounding after it, which costs more than the fusion saves (measured).
    nbytes = sum(x.nbytes for x in xs)
    small = not force and not jit.use(nbytes, 0.0, FAMILY, small=n * len(xs) < config.SMALL_ELEMENTS)
    if n == 0 or small or dims[-1] < 16 or out_dt == np.float16:
        acc = np.zeros(out_shape, np.float64)
        with np.errstate(all="ignore"):
            for x in xs:
                acc += x
            acc /= len(xs)
        return _finish(acc, 0, 1, et).reshape(out_shape)
    from . import loops as k

    inner = dims[-1]
    outer_dims = dims[:-1]
    outer = math.prod(outer_dims)
    offsets = np.zeros((len(xs), outer), np.int64)
    if outer_dims:
        grids = np.indices(outer_dims, dtype=np.int64).reshape(len(outer_dims), -1)
        for i, st in enumerate(strides):
            offsets[i] = np.asarray(st[:-1], np.int64) @ grids
    steps = np.array([st[-1] for st in strides], np.int64)
    flat = [np.ascontiguousarray(x).reshape(-1) for x in xs]
    out = np.empty((outer, inner), np.float32 if et == "bf16" else out_dt)
    per = max(1, 16384 // inner)
    jit.parallel_for(
        k.mean_rows, math.ceil(outer / per), jit.threads_for(nbytes), k.array_list(flat), offsets, steps, out, per
    )
    if et == "bf16":
        out = round_bf16(out)
    return out.reshape(out_shape)


# the reduction family is most of the compile time (7 element types): `irexec warmup` runs its
# element types in this many processes, so two cores share it
WARM_PARTS = 3
_WARM_TYPES = ("f32", "f64", "f16", "bf16", "i32", "i64", "u64")


@contextlib.contextmanager
def _threads(n: int):
    """n threads for any size while warming: one reads whole passes (fused epilogues), two cut
    few outputs' reduced sets into parts (unfused, float64 out): specializations of their own."""
    saved = config.THREAD_MIN_BYTES, config.NUM_THREADS
    config.THREAD_MIN_BYTES, config.NUM_THREADS = 0, n
    try:
        yield
    finally:
        config.THREAD_MIN_BYTES, config.NUM_THREADS = saved


def warm(part: int | None = None, types: tuple[str, ...] = _WARM_TYPES) -> None:
    """Compile (or load from the cache) every specialization the planner calls: each input
    element type the kernels read, rows and columns, with and without splits, fused epilogues.
    `part` (0..WARM_PARTS-1) takes only every WARM_PARTS-th element type; `types` only these
    (the others have no kernels of their own)."""
    types = tuple(t for t in _WARM_TYPES if t in types)
    for et in types if part is None else types[part::WARM_PARTS]:
        dt = np.float32 if et == "bf16" else numpy_dtype(et)
        x = np.ones((2, 8, 2, 8200), dt)
        # columns, rows, everything: on one thread whole (fused), on two in parts (float64 out)
        for n in (1, 2):
            with _threads(n):
                for axes in ((1,), (1, 3), (0, 1, 2, 3)):
                    reduce_array(x, axes, "sum", False, et, force=True)
        # a narrow kept group: an unfused columns pass, then the fold back in float64
        reduce_array(np.ones((64, 64, 64), dt), (1,), "mean", False, et, force=True)
        # short trailing rows: a columns pass, then the rows of its float64 intermediate
        reduce_array(np.ones((2, _DEFER_MIN_B, 2, 8), dt), (1, 3), "mean", False, et, force=True)
        if et in ("f32", "f64", "f16", "bf16"):
            mean_broadcast([x[:1, :1], x[:1, :1, :1]], et, force=True)
        if et in ("f32", "f64"):  # the exponentials' pass: rows, columns, everything (split)
            for n in (1, 2):
                with _threads(n):
                    for axes in ((1,), (1, 3), (0, 1, 2, 3)):
                        reduce_array(x, axes, "logsumexp", False, et, force=True)
