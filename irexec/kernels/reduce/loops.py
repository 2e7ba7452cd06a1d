"""@njit reduction kernels over a canonical C-contiguous 5-D view. They see arrays and integers only.

The planner maps any reduction with at most five alternating kept/reduced groups onto
x (A, B, C, D, E) with A, C, E kept and B, D reduced:
  rows     (E == 1): value[a, c]    = fold over b and d of x[a, b, c, d]
  columns  (E > 1):  value[a, c, :] = fold over b and d of x[a, b, c, d, :]
With one split the kernels finish each value themselves (the epilogue: Mean's division, L2's
sqrt, LogSum's log) and store it rounded once into `out`, which has the output's element type
(float32 or float64; integers and float16/bf16 keep the 64-bit accumulator for the planner).
With S > 1 splits of d (few outputs, many threads) they store raw accumulators into `part`,
which the planner combines and finishes.

Step codes (runtime arguments, so one compiled kernel serves every op):
  ADD, ADD_ABS, ADD_SQ, MUL, MAX, MIN; epilogues NONE, DIVIDE, SQRT, LOG.
Every sum accumulates in float64 (int64/uint64 for integers): with two threads the row kernels
are memory-bound in float64 lanes too (measured: 46.8 GB/s against 46.8 for float32 lanes); the
column kernels add four rows pairwise in float32 before each float64 flush (see `_tile4`). MAX/MIN use LLVM's maximum/minimum intrinsics, which
propagate NaN and vectorize.
Loops index zero-based slices: a loop from an arbitrary `lo` keeps numba's negative-index
wraparound check in the loop and LLVM then refuses to vectorize it (measured 4.5 vs 40 GB/s).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np
from llvmlite import ir
from llvmlite.binding import get_host_cpu_name
from numba.core import cgutils, types
from numba.core.extending import intrinsic

from ..jit import njit
from .kinds import ADD, ADD_ABS, ADD_SQ, DIVIDE, LOG, MAX, MIN, MUL, NONE, SQRT  # noqa: F401

# reassoc lets LLVM vectorize the sums; no 'nnan'/'ninf': NaN and inf must propagate.
_FM = {"reassoc", "contract", "nsz", "arcp"}
# kept elements per column tile: its float64 and float32 tiles (192 KiB) stay in L2. Measured
# on (64,256,64,64) float32, mean over (0,): 8192 gave 27.5 GB/s on two threads (13.6-14.4 on
# one), 16384 30.4-31.5 (15.5-15.7): fewer, longer row segments per tile
TILE = 16384
FLUSH = 8  # rows summed in a column tile's element-type lanes before a float64 flush
_ZNVER = get_host_cpu_name().startswith("znver")  # an AMD EPYC's cores (below)
# longest rows folded two at a time (`_fold2`); longer ones go one at a time, a single stream.
# The best split depends on the processor's prefetchers, so it is chosen by the processor LLVM
# compiles for. On an AMD EPYC (znver4), rows of 96-4096 float32 summed in float64 from memory
# on one thread read 10-21 GB/s two at a time against 25-30 one at a time, and rows of 32-64 as
# fast or a little faster two at a time: the mean over (2, 3) of (64,256,64,64) on two threads
# went from 0.83-0.91 of OpenVINO's speed to 0.99-1.06 with single streams past 64. An Intel Xeon
# (emeraldrapids) is the other way round: rows of 4096 two at a time 15.5 -> 17.8 GB/s on one
# thread, and the mean over (2, 3) on two 0.69 -> 0.87 of the streaming limit (0.69 -> 1.02 of
# OpenVINO) with pairs at every length. numba's cache is keyed by the processor too.
PAIR_MAX = 64 if _ZNVER else 1 << 30
# Rows are folded by chunks of CHUNK elements, each chunk first asking for the cache lines
# AHEAD bytes further on (a software prefetch): on the Intel Xeon (emeraldrapids), one thread
# summing float32 rows in float64 read memory at 9.5 GB/s on rows of 64 and 10.1 on rows of
# 4096 against a float32 streaming read's 14.1; with the prefetch 13.0 and 13.7 (4 or 8 KiB
# ahead alike; the whole next row asked for at once, 6.5 on long rows). The AMD EPYC's single
# streams read at the streaming limit without it (above): there AHEAD is 0 and the loops are
# the plain ones.
AHEAD = 0 if _ZNVER else 4096
CHUNK = 64


def _minmax(name: str, signed_cmp: str):
    @intrinsic
    def impl(typingctx, a, b):
        if not isinstance(a, (types.Float, types.Integer)) or not isinstance(b, (types.Float, types.Integer)):
            return None

        def codegen(context, builder, signature, args):
            ty = signature.return_type
            lhs = args[0]
            rhs = context.cast(builder, args[1], signature.args[1], ty)
            lty = context.get_value_type(ty)
            if isinstance(ty, types.Float):
                fn = builder.module.declare_intrinsic(name, [lty], ir.FunctionType(lty, [lty, lty]))
                return builder.call(fn, [lhs, rhs])
            cmp = builder.icmp_signed if ty.signed else builder.icmp_unsigned
            return builder.select(cmp(signed_cmp, lhs, rhs), lhs, rhs)

        return a(a, b), codegen

    return impl


maximum = _minmax("llvm.maximum", ">")
minimum = _minmax("llvm.minimum", "<")


@intrinsic
def widen(typingctx, v):
    """An element as the kernels compute with it: uint16 words are float16 bits (the planner
    passes float16 data as a uint16 view; integer data arrives as int64/uint64), widened to
    float32 in-register (vcvtph2ps), so float16 is read once at 2 bytes per element."""
    if isinstance(v, types.Integer) and v.bitwidth == 16 and not v.signed:

        def half(context, builder, signature, args):
            return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())

        return types.float32(v), half

    def same(context, builder, signature, args):
        return args[0]

    return v(v), same


@intrinsic
def like(typingctx, value, ref):
    """`value` converted to the type of `ref` (an element read, widened to the accumulator's
    type before any arithmetic, so float32 pairs and squares are never rounded to float32)."""
    if not isinstance(value, (types.Float, types.Integer)) or not isinstance(ref, (types.Float, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        return context.cast(builder, args[0], value, ref)

    return ref(value, ref), codegen


@intrinsic
def _prefetch(typingctx, arr, i, byte):
    """Ask for the cache line `byte` bytes past arr[i] (1-D): a hint, never a fault, so it may
    point past the array's end."""
    if not isinstance(arr, types.Array) or arr.ndim != 1:
        return None

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        idx = context.cast(builder, args[1], signature.args[1], types.intp)
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [idx], wraparound=False, boundscheck=False)
        i8p = ir.IntType(8).as_pointer()
        off = context.cast(builder, args[2], signature.args[2], types.int64)
        addr = builder.gep(builder.bitcast(ptr, i8p), [off])
        i32 = ir.IntType(32)
        fn = builder.module.declare_intrinsic(
            "llvm.prefetch", [i8p], ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        )
        # read, keep in every cache level, data
        builder.call(fn, [addr, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return types.none(arr, i, byte), codegen


@nb.njit(inline="always")
def _ahead(y, i):
    """Prefetch the lines of chunk y[i:i + CHUNK] moved AHEAD bytes on."""
    for line in range(0, CHUNK * y.itemsize, 64):
        _prefetch(y, i, AHEAD + line)


@nb.njit(fastmath=_FM, inline="always")
def _fold(y, code, acc):
    """Fold the 1-D contiguous y into acc with step `code` (`_fold_run`), by chunks that each
    prefetch AHEAD first when AHEAD is set."""
    if AHEAD == 0:
        return _fold_run(y, code, acc)
    n = y.size
    for i in range(0, n, CHUNK):
        _ahead(y, i)
        acc = _fold_run(y[i : min(n, i + CHUNK)], code, acc)
    return acc


@nb.njit(fastmath=_FM, inline="always")
def _fold_run(y, code, acc):
    """Fold the 1-D contiguous y into acc with step `code`; the branch sits outside the loops."""
    n = y.size
    if code == ADD:
        for i in range(n):
            acc += widen(y[i])
    elif code == ADD_ABS:
        for i in range(n):
            acc += abs(widen(y[i]))
    elif code == ADD_SQ:
        for i in range(n):
            v = like(widen(y[i]), acc)
            acc += v * v
    elif code == MUL:
        for i in range(n):
            acc *= widen(y[i])
    elif code == MAX:
        for i in range(n):
            acc = maximum(acc, widen(y[i]))
    else:
        for i in range(n):
            acc = minimum(acc, widen(y[i]))
    return acc


@nb.njit(fastmath=_FM, inline="always")
def _tile(acc, row, code):
    """acc[j] = step(acc[j], row[j]) for the whole (equal-length, contiguous) tile."""
    n = acc.size
    if code == ADD:
        for j in range(n):
            acc[j] += widen(row[j])
    elif code == ADD_ABS:
        for j in range(n):
            acc[j] += abs(widen(row[j]))
    elif code == ADD_SQ:
        for j in range(n):
            v = like(widen(row[j]), acc[j])
            acc[j] += v * v
    elif code == MUL:
        for j in range(n):
            acc[j] *= widen(row[j])
    elif code == MAX:
        for j in range(n):
            acc[j] = maximum(acc[j], widen(row[j]))
    else:
        for j in range(n):
            acc[j] = minimum(acc[j], widen(row[j]))


@nb.njit(fastmath=_FM, inline="always")
def _tile4(acc, r0, r1, r2, r3, code):
    """Four input rows folded into the tile per pass: a quarter of the accumulator loads and
    stores of four `_tile` calls (measured 26 -> 42 GB/s on a column reduction). The four are
    combined pairwise in the element type (float32 lanes, the issue's "blocks of rows") and
    flushed to the float64 tile: the error stays below 2 eps32 * sum|x| per element, inside
    numpy's pairwise bound; converting each element first costs ~12% (measured 30 vs 34 GB/s)."""
    n = acc.size
    if code == ADD:
        for j in range(n):
            acc[j] += (widen(r0[j]) + widen(r1[j])) + (widen(r2[j]) + widen(r3[j]))
    elif code == ADD_ABS:
        for j in range(n):
            acc[j] += (abs(widen(r0[j])) + abs(widen(r1[j]))) + (abs(widen(r2[j])) + abs(widen(r3[j])))
    elif code == ADD_SQ:
        for j in range(n):
            v0 = widen(r0[j])
            v1 = widen(r1[j])
            v2 = widen(r2[j])
            v3 = widen(r3[j])
            acc[j] += (v0 * v0 + v1 * v1) + (v2 * v2 + v3 * v3)
    elif code == MUL:
        for j in range(n):
            a = acc[j]  # products in the accumulator's type: four float32 factors overflow early
            acc[j] = a * (
                (like(widen(r0[j]), a) * like(widen(r1[j]), a)) * (like(widen(r2[j]), a) * like(widen(r3[j]), a))
            )
    elif code == MAX:
        for j in range(n):
            acc[j] = maximum(acc[j], maximum(maximum(widen(r0[j]), widen(r1[j])), maximum(widen(r2[j]), widen(r3[j]))))
    else:
        for j in range(n):
            acc[j] = minimum(acc[j], minimum(minimum(widen(r0[j]), widen(r1[j])), minimum(widen(r2[j]), widen(r3[j]))))


@nb.njit(fastmath=_FM, inline="always")
def _finish(acc, epi, count):
    """The epilogue, in float64 (only called with epi != NONE: an integer accumulator must not
    pass through a float)."""
    if epi == DIVIDE:
        return acc / count
    if epi == SQRT:
        return math.sqrt(acc)
    return math.log(acc)


@nb.njit(fastmath=_FM, inline="always")
def _store(out, o, v, epi, count):
    """out[o] = finish(v), rounded once to out's element type."""
    if epi == NONE:
        out[o] = as_element(v, out)
    else:
        out[o] = as_element(_finish(v, epi, count), out)


@nb.njit(fastmath=_FM, inline="always")
def _fold2(y, z, code, s, t):
    """`_fold` of two equal-length rows into s and t, in one loop (`_fold2_run`), by chunks
    that each prefetch AHEAD first when AHEAD is set."""
    if AHEAD == 0:
        return _fold2_run(y, z, code, s, t)
    n = y.size
    for i in range(0, n, CHUNK):
        _ahead(y, i)
        _ahead(z, i)
        j = min(n, i + CHUNK)
        s, t = _fold2_run(y[i:j], z[i:j], code, s, t)
    return s, t


@nb.njit(fastmath=_FM, inline="always")
def _fold2_run(y, z, code, s, t):
    """Two equal-length rows folded into s and t in one loop: two independent streams (rows
    of 4096 float32 summed in float64 one after another read 15.5 GB/s on one thread, two at a
    time 17.8, as fast as one long row; measured)."""
    n = y.size
    if code == ADD:
        for i in range(n):
            s += widen(y[i])
            t += widen(z[i])
    elif code == ADD_ABS:
        for i in range(n):
            s += abs(widen(y[i]))
            t += abs(widen(z[i]))
    elif code == ADD_SQ:
        for i in range(n):
            v = like(widen(y[i]), s)
            w = like(widen(z[i]), t)
            s += v * v
            t += w * w
    elif code == MUL:
        for i in range(n):
            s *= widen(y[i])
            t *= widen(z[i])
    elif code == MAX:
        for i in range(n):
            s = maximum(s, widen(y[i]))
            t = maximum(t, widen(z[i]))
    else:
        for i in range(n):
            s = minimum(s, widen(y[i]))
            t = minimum(t, widen(z[i]))
    return s, t


@nb.njit(fastmath=_FM, inline="always")
def _rows_pairs(xb, c0, c1, out, o0, code, init, epi, count):
    """out[o0 + c] = finish(fold of the whole row xb[c]) for c in c0..c1, two rows per loop
    (`_fold2`) when rows are short (PAIR_MAX), one at a time otherwise; `code` is a constant
    at each call (`_rows_out`), so its branch folds away."""
    c = c0
    if xb.shape[1] <= PAIR_MAX:
        while c + 1 < c1:
            s, t = _fold2(xb[c], xb[c + 1], code, init, init)
            _store(out, o0 + c, s, epi, count)
            _store(out, o0 + c + 1, t, epi, count)
            c += 2
    for r in range(c, c1):  # long rows, or the odd one left
        _store(out, o0 + r, _fold(xb[r], code, init), epi, count)


@nb.njit(fastmath=_FM, inline="always")
def _rows_out(xb, c0, c1, out, o0, code, init, epi, count):
    """out[o0 + c] = finish(fold of the whole row xb[c]) for c in c0..c1: the rows of a
    trailing-axes reduction, register accumulators and the step's branch outside the rows (an
    accumulator array and a branch per row cost a third of the speed on rows of 64)."""
    if code == ADD:
        _rows_pairs(xb, c0, c1, out, o0, ADD, init, epi, count)
    elif code == ADD_ABS:
        _rows_pairs(xb, c0, c1, out, o0, ADD_ABS, init, epi, count)
    elif code == ADD_SQ:
        _rows_pairs(xb, c0, c1, out, o0, ADD_SQ, init, epi, count)
    elif code == MUL:
        _rows_pairs(xb, c0, c1, out, o0, MUL, init, epi, count)
    elif code == MAX:
        _rows_pairs(xb, c0, c1, out, o0, MAX, init, epi, count)
    else:
        _rows_pairs(xb, c0, c1, out, o0, MIN, init, epi, count)


@nb.njit(fastmath=_FM, inline="always")
def _pairs_into_acc(xb, c0, c1, lo, hi, acc, code):
    """acc[c - c0] = step-fold of xb[c, lo:hi] into it, for c in c0..c1, two rows per loop
    (`_fold2`) when the segments are short (PAIR_MAX), one at a time otherwise; `code` is a
    constant at each call (`_rows_into_acc`)."""
    c = c0
    if hi - lo <= PAIR_MAX:
        while c + 1 < c1:
            acc[c - c0], acc[c + 1 - c0] = _fold2(xb[c, lo:hi], xb[c + 1, lo:hi], code, acc[c - c0], acc[c + 1 - c0])
            c += 2
    for r in range(c, c1):  # long segments, or the odd one left
        acc[r - c0] = _fold(xb[r, lo:hi], code, acc[r - c0])


@nb.njit(fastmath=_FM, inline="always")
def _rows_into_acc(xb, c0, c1, lo, hi, acc, code):
    """acc[c - c0] = step-fold of xb[c, lo:hi] into it, for c in c0..c1 (branch outside the rows)."""
    if code == ADD:
        _pairs_into_acc(xb, c0, c1, lo, hi, acc, ADD)
    elif code == ADD_ABS:
        _pairs_into_acc(xb, c0, c1, lo, hi, acc, ADD_ABS)
    elif code == ADD_SQ:
        _pairs_into_acc(xb, c0, c1, lo, hi, acc, ADD_SQ)
    elif code == MUL:
        _pairs_into_acc(xb, c0, c1, lo, hi, acc, MUL)
    elif code == MAX:
        _pairs_into_acc(xb, c0, c1, lo, hi, acc, MAX)
    else:
        _pairs_into_acc(xb, c0, c1, lo, hi, acc, MIN)


@nb.njit(inline="always")
def row_task(t, c_n, d_n, splits, per):
    """Task t of a rows pass over (A, B, C, D) by `per` consecutive c and `splits` parts of d
    (a_n * ceil(C / per) * splits tasks): (a, split, d range lo..hi, c range c0..c1)."""
    chunk = (d_n + splits - 1) // splits
    c_tasks = (c_n + per - 1) // per
    a = t // (c_tasks * splits)
    rem = t - a * c_tasks * splits
    ct = rem // splits
    s = rem - ct * splits
    lo = s * chunk
    c0 = ct * per
    return a, s, lo, min(d_n, lo + chunk), c0, min(c_n, c0 + per)


@njit(fastmath=_FM)
def reduce_rows(t_lo, t_hi, x, splits, part, out, code, init, epi, count, per):
    """x (A, B, C, D): with one split out[a*C + c] = finish(fold over b, d); else
    part[a, c, s] = fold over b and split s of d. `init` is the step's identity, typed as the
    accumulator. A task takes `per` consecutive c and walks b outside c, so it reads memory in
    order (x[a, b] is contiguous) into `per` accumulators; with B == 1 and one split each row
    is folded in a register and stored finished."""
    _, b_n, c_n, d_n = x.shape
    for t in range(t_lo, t_hi):  # of a_n * ceil(c_n / per) * splits tasks
        a, s, lo, hi, c0, c1 = row_task(t, c_n, d_n, splits, per)
        if b_n == 1 and splits == 1:
            _rows_out(x[a, 0], c0, c1, out, a * c_n, code, init, epi, count)
            continue
        acc = np.full(c1 - c0, init)
        if lo < hi:
            for b in range(b_n):
                _rows_into_acc(x[a, b], c0, c1, lo, hi, acc, code)
        for c in range(c0, c1):
            v = acc[c - c0]
            if splits > 1:
                part[a, c, s] = v
            else:
                _store(out, a * c_n + c, v, epi, count)


@njit(fastmath=_FM)
def reduce_columns(t_lo, t_hi, x, splits, part, out, code, init, epi, count, tile, zero, back_k, back_e, combine):
    """x (A, B, C, D, E): with one split out[(a*C + c)*E + e] = finish(fold over b, d); else
    part[a, c, s, e] = fold over b and split s of d. Tiled along e.

    `back_k` > 1 (one split, tiles of whole groups): E is G groups of back_k rows of back_e
    elements (a narrow kept group folded into a wide one, `plan._fold_narrow`), and each tile's
    values are folded back over those rows with step `combine` before they are finished:
    out[(a*C + c)*G*back_e + g*back_e + m] = finish(fold over r of value[g, r, m]), in order of
    r, in the accumulator's type. (A second pass over the float64 intermediate wrote and read
    1/B of the input again.)

    Sums go four rows per pass into a tile typed like `zero` (float32 for float32 and float16
    input: the issue's float32 lanes), flushed into the float64 tile every FLUSH rows; at
    most four rounding levels in float32, so the error stays under 4 eps32 * sum|x|
    (measured 38 -> 45 GB/s against float64-only tiles, at the streaming limit)."""
    a_n, b_n, c_n, d_n, e_n = x.shape
    chunk = (d_n + splits - 1) // splits
    tiles = (e_n + tile - 1) // tile
    per_a = c_n * splits * tiles
    sums = code == ADD or code == ADD_ABS or code == ADD_SQ
    for t in range(t_lo, t_hi):  # of a_n * per_a tasks
        a = t // per_a
        rem = t - a * per_a
        c = rem // (splits * tiles)
        rem -= c * splits * tiles
        s = rem // tiles
        lo = (rem - s * tiles) * tile
        hi = min(e_n, lo + tile)
        d_lo = s * chunk
        d_hi = min(d_n, d_lo + chunk)
        if sums and b_n == 1 and splits == 1 and back_k == 1 and d_hi - d_lo <= FLUSH:
            _few_rows_out(x[a, 0, c], d_lo, d_hi, lo, hi, out[(a * c_n + c) * e_n + lo :], code, init, epi, count, zero)
            continue
        acc = np.full(hi - lo, init)
        if sums:
            tmp = np.full(hi - lo, zero)
            for b in range(b_n):
                xb = x[a, b, c]
                for d0 in range(d_lo, d_hi, FLUSH):
                    _rows_into(tmp, xb, d0, min(d_hi, d0 + FLUSH), lo, hi, code)
                    _flush(acc, tmp, zero)
        else:
            for b in range(b_n):
                _rows_into(acc, x[a, b, c], d_lo, d_hi, lo, hi, code)
        if splits > 1:
            part[a, c, s, lo:hi] = acc
        elif back_k > 1:
            width = e_n // back_k  # kept elements per (a, c) after the fold back
            _fold_back(acc, back_k, back_e, out[(a * c_n + c) * width + lo // back_k :], combine, epi, count)
        else:
            dst_out = out[(a * c_n + c) * e_n + lo : (a * c_n + c) * e_n + hi]
            if epi == NONE:
                for j in range(hi - lo):
                    dst_out[j] = as_element(acc[j], dst_out)
            else:
                for j in range(hi - lo):
                    dst_out[j] = as_element(_finish(acc[j], epi, count), dst_out)


@nb.njit(fastmath=_FM, inline="always")
def _fold_back(acc, k, e, dst, combine, epi, count):
    """dst[g*e + m] = finish(fold over r < k of acc[(g*k + r)*e + m]) for a tile acc of whole
    groups of k rows of e values: each group's rows folded into its first row in order by
    `combine` (`_tile`, contiguous loops), then finished and stored once."""
    for g in range(acc.size // (k * e)):
        first = acc[g * k * e : g * k * e + e]
        for r in range(1, k):
            _tile(first, acc[(g * k + r) * e : (g * k + r + 1) * e], combine)
        for m in range(e):
            _store(dst, g * e + m, first[m], epi, count)


@nb.njit(fastmath=_FM, inline="always")
def _few_rows_out(xb, d_lo, d_hi, lo, hi, dst_out, code, init, epi, count, zero):
    """`reduce_columns`' tile when its rows fit one flush (at most FLUSH reduced rows, e.g.
    a mean over a batch of 2-8): the float64 tile would hold the element-type tile exactly
    (0 + tmp), so the values are finished and stored from that tile itself, with the same
    numbers. Filling, flushing and reading the float64 tile had cost more than reading the rows
    (measured on (2,256,64,64) float32 over axis 0: 6.3 GB/s)."""
    tmp = np.full(hi - lo, zero)
    _rows_into(tmp, xb, d_lo, d_hi, lo, hi, code)
    if epi == NONE:
        for j in range(hi - lo):
            dst_out[j] = as_element(like(tmp[j], init), dst_out)
    else:
        for j in range(hi - lo):
            dst_out[j] = as_element(_finish(like(tmp[j], init), epi, count), dst_out)


@nb.njit(fastmath=_FM)
def _rows_into(dst, xb, d_lo, d_hi, lo, hi, code):
    """Fold rows d_lo..d_hi of xb (columns lo..hi) into the tile dst, four per pass."""
    d = d_lo
    while d + 4 <= d_hi:
        _tile4(dst, xb[d, lo:hi], xb[d + 1, lo:hi], xb[d + 2, lo:hi], xb[d + 3, lo:hi], code)
        d += 4
    while d < d_hi:
        _tile(dst, xb[d, lo:hi], code)
        d += 1


@nb.njit(fastmath=_FM, inline="always")
def _flush(acc, tmp, zero):
    for j in range(acc.size):
        acc[j] += tmp[j]
        tmp[j] = zero


@intrinsic
def as_element(typingctx, value, arr):
    """`value` converted to arr's element type, rounded once (float16 output is written as
    float64 and rounded by numpy: double -> half needs a runtime helper LLVM's JIT lacks)."""
    if not isinstance(value, (types.Float, types.Integer)) or not isinstance(arr, types.Array):
        return None
    target = arr.dtype

    def codegen(context, builder, signature, args):
        return context.cast(builder, args[0], value, target)

    return target(value, arr), codegen


def array_list(arrays):
    """A numba typed List of 1-D arrays: one compiled kernel for any number of inputs (a tuple
    would be unpacked into the parallel region, one specialization per length)."""
    out = nb.typed.List()
    for a in arrays:
        out.append(a)
    return out


@njit(fastmath=_FM)
def mean_rows(t_lo, t_hi, xs, offsets, steps, out, rows_per_task):
    """out[o, j] = mean over k of xs[k][offsets[k, o] + j * steps[k]]; steps are 1 or 0 (broadcast).

    One pass over every input into a float64 tile of rows (it stays in L2), divided and
    rounded once on store. Inputs are taken one at a time per tile: fetching an array out of
    the typed List costs reference counting, so it happens once per tile, not per row.
    """
    n_in = len(xs)
    outer, inner = out.shape
    for t in range(t_lo, t_hi):  # of ceil(outer / rows_per_task) tasks
        first = t * rows_per_task
        last = min(outer, first + rows_per_task)
        acc = np.zeros((last - first, inner))
        for k in range(n_in):
            x = xs[k]
            step = steps[k]
            for o in range(first, last):
                base = offsets[k, o]
                a = acc[o - first]
                if step == 1:
                    row = x[base : base + inner]
                    for j in range(inner):
                        a[j] += widen(row[j])
                else:
                    v = widen(x[base])
                    for j in range(inner):
                        a[j] += v
        for o in range(first, last):
            a = acc[o - first]
            dst = out[o]
            for j in range(inner):
                dst[j] = as_element(a[j] / n_in, dst)
