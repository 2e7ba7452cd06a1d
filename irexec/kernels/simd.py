"""Sixteen float32 lanes as one numba value (`F32x16`): load, store, broadcast, multiply-add. For
kernels whose accumulators must stay in registers, which numba's loop vectorizer does not give:
it vectorizes one innermost loop and keeps what spans the outer loops in memory (the direct
convolution's accumulators were loaded and stored around every four taps).

A value is LLVM's <16 x float>. numba's CPU target prefers 256-bit vectors on AVX-512 machines
(LLVM's `prefer-256-bit` tuning), which splits such a value into two ymm registers; a function
that loads one is marked `"min-legal-vector-width"="512"`, as clang marks functions that use
512-bit intrinsics, so there it takes one zmm register (a 3x3 convolution of 16 channels over
28x28: 49 -> 24 us on one core, with two ymm against one zmm). Where AVX-512 is missing, LLVM
splits the value into what the machine has: the same results. The multiply-add is `fmul` and
`fadd` allowed to contract, as `fastmath={"contract"}` gives the other kernels: one fused
multiply-add where the machine has it. The lane-wise steps of an exponential (`vfma_exact`,
`vfnma`, `vsub`, `vabove`, `vzero_below`, `vpow2_bits`) let `normalize_loops.vexp_neg_f32`
repeat the scalar `exp_neg_f32` on 16 lanes, its bits. `vfma2` and `vfma4` are the unrolled
register kernels' common step: one scalar against two vectors, one vector against four.

Kernels that keep several rows in one flat buffer address them by offsets: `vsplat_at` and `at`
read (`put`: write) one element without numba's fix-up for negative indices (which an index computed in the
loop keeps there), so no view of a row is made. A view costs two atomic reference counts, and
a small helper inlined into a loop that takes arrays can keep them in the loop; the attention
rows spent 12% of their time in them. `hmax`, `hsum` and `vfirst` reduce a vector in registers
and mask a row's last partial vector."""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic, models, register_model

from .jit import njit

LANES = 16
_VEC = ir.VectorType(ir.FloatType(), LANES)
_CONTRACT = ("contract",)
_DVEC = ir.VectorType(ir.DoubleType(), LANES)


class F32x16(types.Type):
    def __init__(self) -> None:
        super().__init__(name="F32x16")


f32x16 = F32x16()


@register_model(F32x16)
class _Model(models.PrimitiveModel):
    def __init__(self, dmm, fe_type) -> None:
        super().__init__(dmm, fe_type, _VEC)


def _wide(builder) -> None:
    """Mark the function being built as needing 512-bit vectors (llvmlite's attribute set
    accepts only keyword attributes: the string attribute goes in as the set's item)."""
    attrs = builder.function.attributes
    set.add(attrs, '"min-legal-vector-width"="512"')


def _element(context, builder, array_type, array, index):
    """The address of a 1-D contiguous array's element `index` (no bounds check, no
    wraparound)."""
    data = context.make_array(array_type)(context, builder, array).data
    return builder.gep(data, [index])


def _splat(builder, x, vec=_VEC):
    """Sixteen lanes of the value x, a vector of type `vec` (float32's, or float64's `_DVEC`)."""
    one = builder.insert_element(ir.Constant(vec, ir.Undefined), x, ir.Constant(ir.IntType(32), 0))
    lanes = ir.Constant(ir.VectorType(ir.IntType(32), LANES), [0] * LANES)
    return builder.shuffle_vector(one, ir.Constant(vec, ir.Undefined), lanes)


def _address(context, builder, array_type, array, index):
    return builder.bitcast(_element(context, builder, array_type, array, index), _VEC.as_pointer())


def _is_f32_vector(array) -> bool:
    """A 1-D contiguous float32 array: lanes are consecutive elements."""
    return isinstance(array, types.Array) and array.dtype == types.float32 and array.ndim == 1 and array.layout == "C"


@intrinsic
def vload(typingctx, array, index):
    """array[index:index + 16] of a 1-D float32 array (contiguous; no bounds check)."""
    if not (_is_f32_vector(array) and isinstance(index, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        _wide(builder)
        return builder.load(_address(context, builder, sig.args[0], args[0], args[1]), align=4)

    return f32x16(array, index), codegen


@intrinsic
def vstore(typingctx, array, index, value):
    """array[index:index + 16] = value (no bounds check)."""
    if not (_is_f32_vector(array) and isinstance(index, types.Integer) and value == f32x16):
        return None

    def codegen(context, builder, sig, args):
        _wide(builder)
        builder.store(args[2], _address(context, builder, sig.args[0], args[0], args[1]), align=4)
        return context.get_dummy_value()

    return types.none(array, index, value), codegen


@intrinsic
def vsplat(typingctx, x):
    """Sixteen lanes of the float32 x."""
    if x != types.float32:
        return None

    def codegen(context, builder, sig, args):
        return _splat(builder, args[0])

    return f32x16(x), codegen


@intrinsic
def vzero(typingctx):
    """Sixteen lanes of +0.0."""

    def codegen(context, builder, sig, args):
        return ir.Constant(_VEC, [0.0] * LANES)

    return f32x16(), codegen


@intrinsic
def vfma(typingctx, a, b, c):
    """a * b + c lane by lane, fused where the machine has fused multiply-adds."""
    if not (a == b == c == f32x16):
        return None

    def codegen(context, builder, sig, args):
        return builder.fadd(builder.fmul(args[0], args[1], flags=_CONTRACT), args[2], flags=_CONTRACT)

    return f32x16(a, b, c), codegen


@intrinsic
def vload_even(typingctx, array, index):
    """array[index], array[index + 2], ..., array[index + 30]: a stride-2 load, as two vector
    loads and one shuffle (no bounds check)."""
    if not (_is_f32_vector(array) and isinstance(index, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        _wide(builder)
        lo = builder.load(_address(context, builder, sig.args[0], args[0], args[1]), align=4)
        second = builder.add(args[1], ir.Constant(args[1].type, LANES))
        hi = builder.load(_address(context, builder, sig.args[0], args[0], second), align=4)
        evens = ir.Constant(ir.VectorType(ir.IntType(32), LANES), list(range(0, 2 * LANES, 2)))
        return builder.shuffle_vector(lo, hi, evens)

    return f32x16(array, index), codegen


@intrinsic
def vmul(typingctx, a, b):
    """a * b lane by lane, rounded (never fused with an addition)."""
    if not (a == b == f32x16):
        return None

    def codegen(context, builder, sig, args):
        return builder.fmul(args[0], args[1])

    return f32x16(a, b), codegen


@intrinsic
def vadd(typingctx, a, b):
    """a + b lane by lane."""
    if not (a == b == f32x16):
        return None

    def codegen(context, builder, sig, args):
        return builder.fadd(args[0], args[1])

    return f32x16(a, b), codegen


def _call(builder, name: str, args):
    """A call of the LLVM intrinsic `name` on <16 x float> values (llvmlite names no vector
    overloads: the suffix is spelled here)."""
    full = f"{name}.v16f32"
    fn = builder.module.globals.get(full) or ir.Function(
        builder.module, ir.FunctionType(_VEC, [_VEC] * len(args)), full
    )
    return builder.call(fn, args)


@intrinsic
def vfma_exact(typingctx, a, b, c):
    """a * b + c lane by lane with one rounding (llvm.fma), as `fma_f32`."""
    if not (a == b == c == f32x16):
        return None

    def codegen(context, builder, sig, args):
        return _call(builder, "llvm.fma", args)

    return f32x16(a, b, c), codegen


@intrinsic
def vfnma(typingctx, a, b, c):
    """c - a * b lane by lane, fused where the machine has fused multiply-adds (as a scalar
    `c - a * b` compiled with `contract`)."""
    if not (a == b == c == f32x16):
        return None

    def codegen(context, builder, sig, args):
        return builder.fsub(args[2], builder.fmul(args[0], args[1], flags=_CONTRACT), flags=_CONTRACT)

    return f32x16(a, b, c), codegen


@intrinsic
def vsub(typingctx, a, b):
    """a - b lane by lane."""
    if not (a == b == f32x16):
        return None

    def codegen(context, builder, sig, args):
        return builder.fsub(args[0], args[1])

    return f32x16(a, b), codegen


@intrinsic
def vabove(typingctx, a, low):
    """a where a > low, else low, lane by lane (a scalar `max(a, low)` for a not NaN)."""
    if not (a == low == f32x16):
        return None

    def codegen(context, builder, sig, args):
        return builder.select(builder.fcmp_ordered(">", args[0], args[1]), args[0], args[1])

    return f32x16(a, low), codegen


@intrinsic
def vzero_below(typingctx, a, low, x):
    """0.0 where a < low, else x, lane by lane."""
    if not (a == low == x == f32x16):
        return None

    def codegen(context, builder, sig, args):
        below = builder.fcmp_ordered("<", args[0], args[1])
        return builder.select(below, ir.Constant(_VEC, [0.0] * LANES), args[2])

    return f32x16(a, low, x), codegen


@intrinsic
def vpow2_bits(typingctx, kb, bias):
    """The float32 lanes whose bits are (bits(kb) - bias) << 23: 2^k for a kb whose low
    mantissa bits hold k + bias - 127 (the shift trick of `normalize_loops.exp_neg_f32`)."""
    if not (kb == f32x16 and isinstance(bias, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        i32 = ir.IntType(32)
        ints = builder.bitcast(args[0], ir.VectorType(i32, LANES))
        b = builder.trunc(args[1], i32) if sig.args[1].bitwidth > 32 else args[1]
        splat = builder.shuffle_vector(
            builder.insert_element(ir.Constant(ir.VectorType(i32, LANES), ir.Undefined), b, ir.Constant(i32, 0)),
            ir.Constant(ir.VectorType(i32, LANES), ir.Undefined),
            ir.Constant(ir.VectorType(i32, LANES), [0] * LANES),
        )
        shifted = builder.shl(builder.sub(ints, splat), ir.Constant(ir.VectorType(i32, LANES), [23] * LANES))
        return builder.bitcast(shifted, _VEC)

    return f32x16(kb, bias), codegen


@intrinsic
def vdiv(typingctx, a, b):
    """a / b lane by lane (IEEE division, correctly rounded)."""
    if not (a == b == f32x16):
        return None

    def codegen(context, builder, sig, args):
        return builder.fdiv(args[0], args[1])

    return f32x16(a, b), codegen


@intrinsic
def vneg_abs(typingctx, a):
    """-|a| lane by lane (the sign bit set: NaN stays NaN)."""
    if a != f32x16:
        return None

    def codegen(context, builder, sig, args):
        ints = ir.VectorType(ir.IntType(32), LANES)
        sign = ir.Constant(ints, [-(1 << 31)] * LANES)
        return builder.bitcast(builder.or_(builder.bitcast(args[0], ints), sign), _VEC)

    return f32x16(a), codegen


@intrinsic
def vwhere_nonneg(typingctx, v, a, b):
    """a where v >= 0 (-0.0 included), else b (NaN lanes included), lane by lane."""
    if not (v == a == b == f32x16):
        return None

    def codegen(context, builder, sig, args):
        nonneg = builder.fcmp_ordered(">=", args[0], ir.Constant(_VEC, [0.0] * LANES))
        return builder.select(nonneg, args[1], args[2])

    return f32x16(v, a, b), codegen


@intrinsic
def vwhere_below(typingctx, v, low, a, b):
    """a where v < low (ordered: not for NaN), else b, lane by lane."""
    if not (v == low == a == b == f32x16):
        return None

    def codegen(context, builder, sig, args):
        return builder.select(builder.fcmp_ordered("<", args[0], args[1]), args[2], args[3])

    return f32x16(v, low, a, b), codegen


@intrinsic
def vlesser(typingctx, a, b):
    """a where a < b, else b, lane by lane (a NaN in a leaves b)."""
    if not (a == b == f32x16):
        return None

    def codegen(context, builder, sig, args):
        return builder.select(builder.fcmp_ordered("<", args[0], args[1]), args[0], args[1])

    return f32x16(a, b), codegen


@intrinsic
def vrelu(typingctx, v):
    """v where v > 0 or NaN, else +0.0, lane by lane (`elementwise_loops.relu`, numpy's
    maximum(v, 0): -0.0 gives +0.0, NaN stays). A NaN lane is v + v (the same NaN, quiet), not
    v itself: stored back where v was read, a lane kept as read let LLVM's x86 back end turn the
    store into a masked store of the others (vmaskmovps, microcoded on AMD's cores: 8x slower)."""
    if v != f32x16:
        return None

    def codegen(context, builder, sig, args):
        (v,) = args
        zero = ir.Constant(_VEC, [0.0] * LANES)
        positive = builder.select(builder.fcmp_ordered(">", v, zero), v, zero)
        return builder.select(builder.fcmp_unordered("uno", v, v), builder.fadd(v, v), positive)

    return f32x16(v), codegen


@intrinsic
def vclip(typingctx, v, lo, hi):
    """lo where v < lo, hi where v > hi, else v, lane by lane (`elementwise_loops.clip_inplace`,
    numpy's clip for lo <= hi: NaN stays)."""
    if not (v == lo == hi == f32x16):
        return None

    def codegen(context, builder, sig, args):
        v, lo, hi = args
        upper = builder.select(builder.fcmp_ordered(">", v, hi), hi, v)
        return builder.select(builder.fcmp_ordered("<", v, lo), lo, upper)

    return f32x16(v, lo, hi), codegen


def _zip(half: int):
    @intrinsic
    def zip_half(typingctx, a, b):
        if not (a == b == f32x16):
            return None

        def codegen(context, builder, sig, args):
            first = half * LANES // 2
            lanes = [i for j in range(LANES // 2) for i in (first + j, LANES + first + j)]
            return builder.shuffle_vector(args[0], args[1], ir.Constant(ir.VectorType(ir.IntType(32), LANES), lanes))

        return f32x16(a, b), codegen

    return zip_half


vzip_lo = _zip(0)
vzip_lo.__doc__ = "a0, b0, a1, b1, ..., a7, b7: the low halves of a and b interleaved."
vzip_hi = _zip(1)
vzip_hi.__doc__ = "a8, b8, ..., a15, b15: the high halves interleaved."


@intrinsic
def vany_below(typingctx, v, low):
    """Whether some lane of v is below low's (ordered: NaN lanes are not)."""
    if not (v == low == f32x16):
        return None

    def codegen(context, builder, sig, args):
        below = builder.fcmp_ordered("<", args[0], args[1])
        bits = builder.bitcast(below, ir.IntType(LANES))
        return builder.icmp_unsigned("!=", bits, ir.Constant(ir.IntType(LANES), 0))

    return types.boolean(v, low), codegen


@intrinsic
def vsplat_at(typingctx, array, index):
    """Sixteen lanes of array[index] (a 1-D float32 array; no bounds check, no wraparound): a
    broadcast from memory, where `vsplat(array[index])` of an offset index keeps numba's
    negative-index fix-up in the loop."""
    if not (_is_f32_vector(array) and isinstance(index, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        _wide(builder)
        return _splat(builder, builder.load(_element(context, builder, sig.args[0], args[0], args[1]), align=4))

    return f32x16(array, index), codegen


def _is_row(array) -> bool:
    """A 1-D contiguous array of numbers or booleans (`at`, `put`: a mask's rows may be float32,
    float64 or boolean)."""
    return (
        isinstance(array, types.Array)
        and isinstance(array.dtype, (types.Float, types.Integer, types.Boolean))
        and array.ndim == 1
        and array.layout == "C"
    )


@intrinsic
def at(typingctx, array, index):
    """array[index] of a 1-D contiguous array, no bounds check, no wraparound (see
    `vsplat_at`)."""
    if not (_is_row(array) and isinstance(index, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        ptr = _element(context, builder, sig.args[0], args[0], args[1])
        return context.unpack_value(builder, sig.args[0].dtype, ptr)

    return array.dtype(array, index), codegen


@intrinsic
def put(typingctx, array, index, value):
    """array[index] = value for a 1-D contiguous array, the value cast to its type as numba's
    setitem casts it; no bounds check, no wraparound (`at`)."""
    if not (_is_row(array) and isinstance(index, types.Integer) and isinstance(value, (types.Number, types.Boolean))):
        return None

    def codegen(context, builder, sig, args):
        ptr = _element(context, builder, sig.args[0], args[0], args[1])
        dtype = sig.args[0].dtype
        context.pack_value(builder, dtype, context.cast(builder, args[2], sig.args[2], dtype), ptr)
        return context.get_dummy_value()

    return types.none(array, index, value), codegen


def _halving(builder, v, step):
    """v's lanes combined by `step` in halves (lane i with lane i + 8, then i + 4, ...): lane 0."""
    n = LANES
    while n > 1:
        n //= 2
        upper = ir.Constant(ir.VectorType(ir.IntType(32), LANES), [i + n if i < n else i for i in range(LANES)])
        v = step(v, builder.shuffle_vector(v, ir.Constant(v.type, ir.Undefined), upper))
    return builder.extract_element(v, ir.Constant(ir.IntType(32), 0))


@intrinsic
def hmax(typingctx, v):
    """The largest lane by ordered compares in halves (exact for lanes that are not NaN; the
    sign of a zero maximum is either zero's)."""
    if v != f32x16:
        return None

    def codegen(context, builder, sig, args):
        return _halving(builder, args[0], lambda a, b: builder.select(builder.fcmp_ordered(">", a, b), a, b))

    return types.float32(v), codegen


@intrinsic
def hsum(typingctx, v):
    """The float32 sum of the lanes in halves (lane i + lane i + 8, then i + 4, ...)."""
    if v != f32x16:
        return None

    def codegen(context, builder, sig, args):
        return _halving(builder, args[0], builder.fadd)

    return types.float32(v), codegen


@intrinsic
def vfirst(typingctx, v, count, fill):
    """v's lanes below count, fill's from there."""
    if not (v == fill == f32x16 and isinstance(count, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        i32 = ir.IntType(32)
        c = builder.trunc(args[1], i32) if sig.args[1].bitwidth > 32 else args[1]
        ints = ir.VectorType(i32, LANES)
        bound = builder.shuffle_vector(
            builder.insert_element(ir.Constant(ints, ir.Undefined), c, ir.Constant(i32, 0)),
            ir.Constant(ints, ir.Undefined),
            ir.Constant(ints, [0] * LANES),
        )
        below = builder.icmp_signed("<", ir.Constant(ints, list(range(LANES))), bound)
        return builder.select(below, args[0], args[2])

    return f32x16(v, count, fill), codegen


@njit(inline="always")
def _zip_round(r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12, r13, r14, r15):
    return (
        vzip_lo(r0, r8), vzip_hi(r0, r8), vzip_lo(r1, r9), vzip_hi(r1, r9),
        vzip_lo(r2, r10), vzip_hi(r2, r10), vzip_lo(r3, r11), vzip_hi(r3, r11),
        vzip_lo(r4, r12), vzip_hi(r4, r12), vzip_lo(r5, r13), vzip_hi(r5, r13),
        vzip_lo(r6, r14), vzip_hi(r6, r14), vzip_lo(r7, r15), vzip_hi(r7, r15),
    )  # fmt: skip


@njit(inline="always")
def transpose16(r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12, r13, r14, r15):
    """The 16 columns of the 16 x 16 matrix whose rows are r0..r15: four rounds of zipping row
    i with row i + 8 (64 two-vector shuffles)."""
    for _ in range(4):
        r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12, r13, r14, r15 = _zip_round(
            r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12, r13, r14, r15
        )
    return r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12, r13, r14, r15


@njit(inline="always")
def vfma2(x0, x1, w, a, b):
    """(a + x0 w, b + x1 w) for the float32 w broadcast: one scalar against two vectors."""
    s = vsplat(w)
    return vfma(x0, s, a), vfma(x1, s, b)


@njit(inline="always")
def vfma4(w, x0, x1, x2, x3, a, b, c, d):
    """(a, b, c, d) + w (x0, x1, x2, x3) lane by lane, w a vector."""
    return vfma(w, x0, a), vfma(w, x1, b), vfma(w, x2, c), vfma(w, x3, d)


class F64x16(types.Type):
    """Sixteen float64 lanes: LLVM's <16 x double>, two zmm registers."""

    def __init__(self) -> None:
        super().__init__(name="F64x16")


f64x16 = F64x16()


@register_model(F64x16)
class _DModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type) -> None:
        super().__init__(dmm, fe_type, _DVEC)


@intrinsic
def dwiden(typingctx, v):
    """The sixteen float32 lanes of v as float64 (exact)."""
    if v != f32x16:
        return None

    def codegen(context, builder, sig, args):
        return builder.fpext(args[0], _DVEC)

    return f64x16(v), codegen


@intrinsic
def dnarrow(typingctx, v):
    """The sixteen float64 lanes of v rounded to float32 (to nearest, as a scalar cast)."""
    if v != f64x16:
        return None

    def codegen(context, builder, sig, args):
        return builder.fptrunc(args[0], _VEC)

    return f32x16(v), codegen


@intrinsic
def dsplat(typingctx, x):
    """Sixteen lanes of the float64 x."""
    if x != types.float64:
        return None

    def codegen(context, builder, sig, args):
        return _splat(builder, args[0], _DVEC)

    return f64x16(x), codegen


@intrinsic
def dstore(typingctx, array, index, value):
    """array[index:index + 16] = value for a 1-D contiguous float64 array (no bounds check)."""
    f64_row = isinstance(array, types.Array) and array.dtype == types.float64 and array.ndim == 1
    if not (f64_row and array.layout == "C" and isinstance(index, types.Integer) and value == f64x16):
        return None

    def codegen(context, builder, sig, args):
        _wide(builder)
        ptr = builder.bitcast(_element(context, builder, sig.args[0], args[0], args[1]), _DVEC.as_pointer())
        builder.store(args[2], ptr, align=8)
        return context.get_dummy_value()

    return types.none(array, index, value), codegen


@intrinsic
def dfma(typingctx, a, b, c):
    """a * b + c in float64 lane by lane, fused where the machine has fused multiply-adds (as a
    scalar `a * b + c` compiled with `contract`)."""
    if not (a == b == c == f64x16):
        return None

    def codegen(context, builder, sig, args):
        return builder.fadd(builder.fmul(args[0], args[1], flags=_CONTRACT), args[2], flags=_CONTRACT)

    return f64x16(a, b, c), codegen


@intrinsic
def dsub(typingctx, a, b):
    """a - b in float64 lane by lane."""
    if not (a == b == f64x16):
        return None

    def codegen(context, builder, sig, args):
        return builder.fsub(args[0], args[1])

    return f64x16(a, b), codegen


def _max_nan(builder, x, m):
    """x where x > m or x is NaN, else m (float64 lanes)."""
    take = builder.or_(builder.fcmp_ordered(">", x, m), builder.fcmp_unordered("uno", x, x))
    return builder.select(take, x, m)


@intrinsic
def dmax_nan(typingctx, x, m):
    """x where x > m or x is NaN, else m, lane by lane: a lane of m that turned NaN stays NaN
    (a running `maximum` whose NaNs propagate)."""
    if not (x == m == f64x16):
        return None

    def codegen(context, builder, sig, args):
        return _max_nan(builder, args[0], args[1])

    return f64x16(x, m), codegen


@intrinsic
def dhmax_nan(typingctx, v):
    """The largest lane by `dmax_nan` in halves: NaN when a lane is NaN."""
    if v != f64x16:
        return None

    def codegen(context, builder, sig, args):
        return _halving(builder, args[0], lambda a, b: _max_nan(builder, a, b))

    return types.float64(v), codegen


def _scalar_fma(name: str, ty, llvm_type, doc: str):
    """An intrinsic `name`(a, b, c): a * b + c of the scalar type ty with one rounding
    (llvm.fma: vfmadd where the machine has it)."""

    def fma(typingctx, a, b, c):
        if not (a == b == c == ty):
            return None

        def codegen(context, builder, sig, args):
            fn = builder.module.declare_intrinsic("llvm.fma", [llvm_type], ir.FunctionType(llvm_type, [llvm_type] * 3))
            return builder.call(fn, args)

        return ty(a, b, c), codegen

    fma.__name__ = fma.__qualname__ = name
    fma.__doc__ = doc
    return intrinsic(fma)


fma_f32 = _scalar_fma("fma_f32", types.float32, ir.FloatType(), "a * b + c in float32, rounded once.")
fma_f64 = _scalar_fma(
    "fma_f64",
    types.float64,
    ir.DoubleType(),
    "a * b + c in float64, rounded once (LLVM vectorizes it with the loop around it).",
)
