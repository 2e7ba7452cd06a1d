"""@njit FakeQuantize over flat float32/float64 arrays: OpenVINO's formula in float64, each
element rounded once on store, bit for bit the numpy path of `kernels/quantize.py`.

The ranges arrive as a table of float64 constants per row (`quantize.CONSTANTS` gives the
columns), computed once by the dispatch: the kernels read x, select and store. `rows` serves
ranges that are constant over runs of `inner` contiguous elements (per tensor, per channel of
NCHW); `period` serves ranges that change along the innermost axes (a (1, C) range on (N, C)),
where the constants repeat every `period` elements. Serial and nogil, `jit.parallel_for` tasks of
BLOCK elements (rows) or of whole periods.

The level index is rounded half to even as std::nearbyint does, by LLVM's rint (`_rint`), which
vectorizes to one rounding instruction (vroundpd) where numba's np.rint is a call per element.
(|q| + 2^52) - 2^52 with q's sign, the same bits in eight instructions and more registers, ran at
1.27 ns an element against 0.91 on one core of a Zen 3, per-tensor ranges on 800K float32.
A float64 division costs as much as reading the element
(the exact formula ran at 3.8 GB/s of float32 on one core, this one at 6, a streaming read at 30), so the index
comes from (v - il) * (L / d) instead of (v - il) / d * L: both are within two roundings of the
same real number, 4 units of 2^-53 relative, so they round to the same integer unless it lies
within 2^-48 of a half-way point. A run of elements with such an index inside the interval (a
tie, a non-finite index) is computed again with the exact formula (`_quantize`): the bits never
depend on the shortcut. Inside the interval |index| < L + 1, so the runs test |index - n| against
one bound per call, 0.5 - (L + 1) 2^-47 (`_near_bound`), a little wider than "within 2^-48 of a
half-way point"; flags counted in an integer, which the loop keeps in vector lanes where a boolean
or-reduction kept it from vectorizing whole (per-tensor ranges on 200K-800K float32 elements, one
core of a Zen 3: 0.90-0.98 -> 0.74-0.82 ns an element).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from .jit import njit

BLOCK = 1 << 14


@intrinsic
def _rint(typingctx, q):
    """np.rint(q) (half to even in the default rounding mode, -0.0 kept, NaN and infinities
    unchanged): LLVM's llvm.rint."""
    if not isinstance(q, types.Float):
        return None

    def codegen(context, builder, signature, args):
        ty = context.get_value_type(signature.return_type)
        fn = builder.module.declare_intrinsic("llvm.rint", [ty], ir.FunctionType(ty, [ty]))
        return builder.call(fn, [args[0]])

    return q(q), codegen


@njit(inline="always")
def _quantize(v, lo, hi, il, d, ol, do, oh, steps):
    """out_low at or below the lower bound, out_high above the upper, else the level's value."""
    q = _rint((v - il) / d * steps) / steps * do + ol
    r = oh if v > hi else q
    return ol if v <= lo else r


@njit(inline="always")
def _near_bound(steps):
    """|index - n| above which an index inside the interval (|index| < steps + 1) may lie within
    2^-48 of a half-way point, relative: a bound below 0.5 - (steps + 1) * 2^-48."""
    return 0.5 - (steps + 1.0) * 2.0**-47


@njit(inline="always")
def _shortcut(v, lo, hi, il, s, ol, do, oh, steps, bound):
    """(value, unsure): `_quantize` with the index from (v - il) * s, s = steps / d; unsure (1)
    when v is inside the interval and that index's distance to its nearest integer is not at
    most `bound` (`_near_bound`; not finite: not at most either)."""
    qa = (v - il) * s
    n = _rint(qa)
    q = n / steps * do + ol
    r = oh if v > hi else q
    return (ol if v <= lo else r), np.int32((v > lo) & (v <= hi) & (not (abs(qa - n) <= bound)))


@njit(error_model="numpy")  # IEEE division: the lanes a select discards may divide by zero
def rows(t_lo, t_hi, x, out, table, inner, mid, steps):
    """Flat elements of tasks t_lo..t_hi; element j takes table row (j // inner) % mid."""
    n = x.size
    bound = _near_bound(steps)
    for t in range(t_lo, t_hi):
        j = t * BLOCK
        end = min(n, j + BLOCK)
        while j < end:
            row = j // inner
            stop = min(end, (row + 1) * inner)
            c = table[row % mid]
            lo, hi, il, d, ol, do, oh = c[0], c[1], c[2], c[3], c[4], c[5], c[6]
            s = steps / d
            src, dst = x[j:stop], out[j:stop]  # slices: 1.4x faster than indexing x from j
            unsure = 0
            for k in range(src.size):
                r, u = _shortcut(np.float64(src[k]), lo, hi, il, s, ol, do, oh, steps, bound)
                dst[k] = r
                unsure += u
            if unsure:
                for k in range(src.size):
                    dst[k] = _quantize(np.float64(src[k]), lo, hi, il, d, ol, do, oh, steps)
            j = stop


@njit(error_model="numpy")
def period(t_lo, t_hi, x, out, columns, per_task, steps):
    """Periods per_task * t_lo .. of x; element k of a period takes column k of the (8, period)
    constants (CONSTANTS, then steps / d)."""
    size = columns.shape[1]
    count = x.size // size
    lo, hi, il, d = columns[0], columns[1], columns[2], columns[3]
    ol, do, oh, s = columns[4], columns[5], columns[6], columns[7]
    bound = _near_bound(steps)
    for p in range(t_lo * per_task, min(count, t_hi * per_task)):
        src = x[p * size : (p + 1) * size]
        dst = out[p * size : (p + 1) * size]
        unsure = 0
        for k in range(size):
            r, u = _shortcut(np.float64(src[k]), lo[k], hi[k], il[k], s[k], ol[k], do[k], oh[k], steps, bound)
            dst[k] = r
            unsure += u
        if unsure:
            for k in range(size):
                dst[k] = _quantize(np.float64(src[k]), lo[k], hi[k], il[k], d[k], ol[k], do[k], oh[k], steps)


def warm() -> None:
    for dtype in (np.float32, np.float64):
        x = np.linspace(-2, 2, 12).astype(dtype)
        table = np.array([[-1.0, 1.0, -1.0, 2.0, 0.0, 1.0, 1.0]])
        rows(0, 1, x, np.empty_like(x), table, 3, 1, 255.0)
        columns = np.repeat(np.concatenate([table, 255.0 / table[:, 3:4]], axis=1), 4, 0).T
        period(0, 1, x, np.empty_like(x), np.ascontiguousarray(columns), 3, 255.0)
