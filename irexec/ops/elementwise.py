"""Element-wise ops with OpenVINO semantics, on numpy: binary arithmetic (Add Subtract Multiply
Divide Maximum Minimum Power Mod FloorMod SquaredDifference), comparisons, logical and bitwise ops,
Select, the bit shifts BitwiseLeftShift/BitwiseRightShift-15, unary math (Abs Negative Exp Log
Sqrt Erf Sin Cos Tan Sinh Cosh Asin Acos Atan Acosh Asinh Atanh ErfInv Floor Ceiling Sign Round),
the float predicates IsNaN IsInf IsFinite, and the ONNX-semantics variadic `Mean` (one fused
broadcasting pass, float64 accumulation).

Broadcasting follows `auto_broadcast` as the IR carries it: numpy (numpy's rule), none (equal
shapes) or pdpd (the other operands broadcast into the target, the first operand (Select: `then`):
rank not above it, aligned to its LEADING dims, every dim 1 or equal. The IR carries no pdpd axis
and OpenVINO's reader takes axis 0, not PaddlePaddle's -1: [2,3,4] + [2,1] is valid, [2,3,4] +
[3,4] is not, checked against OpenVINO 2026.4). One rule serves load time (dims may be dynamic)
and run time.

Integers wrap on overflow as in C; integer Divide is floor division when `m_pythondiv` is true
(the default) and truncation otherwise; an integer Divide, Mod or FloorMod by zero is an error,
never a value. Float math of integer operands (Exp, Sin, Erf...) runs in float64 and converts back
as OpenVINO's reference does for that op: truncated (Exp Log Sin Asin) or rounded half away from
zero (Sqrt Erf Cos Tan Sinh Cosh Acos Atan Asinh), saturating where C would overflow. f16 and bf16
are computed in float32 (or float64) and rounded once.

Acosh-4 / Asinh-4 / Atanh-4 on integers follow OpenVINO's reference (checked for i32 and i64):
Asinh rounds asinh(x) half away from zero; Acosh rounds acosh(x) likewise, and x < 1 (NaN) gives
the type's minimum, as the reference's C cast of NaN does on x86; Atanh gives the type's maximum
for x > 0, its minimum for x < 0 and 0 for 0. The CPU plugin computes integers in float32 and
converts with saturation instead (Atanh(1) = 2147483520, Acosh(0) of u8 = 255): irexec follows
the reference. ErfInv-17 (float types only) is Giles' single-precision rational approximation
("Approximating the erfinv function", 2011), the formula of OpenVINO's reference, evaluated in
float64 and rounded once: within 1.7e-7 relative of the true erfinv for |x| <= 1 - 5e-8 (all of
float32; f64 inputs closer to +-1 lose accuracy, as the reference's would). OpenVINO's reference
source carries -0.00943887047 for the seventh coefficient of the tail (w >= 5, |x| > 0.9966),
where Giles' published one is +0.00943887047; with it the tail is up to 0.5% off (erfinv(-0.997)
= -2.0985, the reference's formula gives -2.0883), and OpenVINO's CPU plugin shows the same error
(-3.44977 for -0.999999, true -3.45707). irexec uses the published coefficient (the op's
definition is the inverse of erf). The CPU plugin also evaluates the central part differently (up
to 1e-4 relative away: 8.8613e-9 for erfinv(1e-8), true 8.8623e-9) and keeps the sign of -0.0,
where the reference (and irexec) gives +0.0.

BitwiseLeftShift-15 / BitwiseRightShift-15 (integer types of one kind, numpy broadcasting): the
shift of C on the promoted operand, as OpenVINO's CPU plugin computes it: types up to 32 bits are
shifted as 32-bit integers by the count modulo 32 and truncated back (i8: 1 << 8 is 0, -3 << 32 is
-3, a count of -1 shifts by 31), 64-bit types by the count modulo 64. Right shifts are
arithmetic for signed types, logical for unsigned. Where the CPU plugin departs from C (and
irexec follows C, the reference's `a << b` / `a >> b`): it shifts u32 right arithmetically, as a
signed i32 (4291558153 >> 4 for 0xFFCC_2209 comes out with its top bits set), and it narrows
i64/u64 to i32 (its u64 200 << 24 is 2^64 - 939524096): irexec shifts u32 logically and 64-bit
types in 64 bits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..dtypes import FLOAT_TYPES, INT_TYPES, NUMERIC_TYPES, SUB_BYTE_TYPES, cast, numpy_dtype
from ..errors import ExecutionError, FormatError, ShapeInferenceError
from ..kernels.elementwise import activation_call, activation_f32
from ..kernels.reduce import mean_broadcast
from ..shapes import Shape, TensorSpec, broadcast_dims, broadcast_shapes, format_shape
from ..special import erf
from .attrs import Attr
from .base import Op, Sig
from .common import finish
from .registry import register

# ---- broadcasting -------------------------------------------------------------------------------

AUTO_BROADCAST = ("numpy", "none", "pdpd")


def _merge(a: Shape, b: Shape) -> Shape:
    """auto_broadcast=none: equal ranks and dims (a dynamic dim takes the other's)."""
    if a is None:
        return b
    if b is None:
        return a
    if len(a) != len(b) or any(x is not None and y is not None and x != y for x, y in zip(a, b)):
        raise ShapeInferenceError(
            f"auto_broadcast=none needs equal shapes, got {format_shape(a)} and {format_shape(b)}"
        )
    return tuple(y if x is None else x for x, y in zip(a, b))


def _pdpd(a: Shape, b: Shape) -> Shape:
    """auto_broadcast=pdpd: b broadcasts into a, aligned to a's leading dims (OpenVINO's
    broadcast_merge_into with the axis 0 its IR reader sets)."""
    if a is None or b is None:
        return None
    bad = ShapeInferenceError(
        f"auto_broadcast=pdpd: {format_shape(b)} does not broadcast into {format_shape(a)} (aligned to its first dims)"
    )
    if len(b) > len(a):
        raise bad
    out = list(a)
    for i, s in enumerate(b):
        d = a[i]
        if d is not None and s is not None and s > d:
            raise bad
        try:
            out[i] = broadcast_dims(d, s)
        except ShapeInferenceError:
            raise bad from None
    return tuple(out)


def broadcast_rule(mode: str, shapes: list[Shape]) -> Shape:
    """The result shape of operands broadcast by `mode`; for pdpd the first operand is the target."""
    if mode == "numpy":
        return broadcast_shapes(shapes)
    merge = _merge if mode == "none" else _pdpd
    out = shapes[0]
    for s in shapes[1:]:
        out = merge(out, s)
    return out


class Broadcasting(Op):
    """Operands broadcast together as `auto_broadcast` says (the shape rule, its run-time check,
    and the pdpd alignment)."""

    VERSIONS = (1,)
    auto_broadcast = Attr("str", "numpy", choices=AUTO_BROADCAST)
    TARGET = 0  # the operand pdpd broadcasts the others into

    def aligned(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """The operands as numpy broadcasts them: for pdpd, trailing 1s make the others' dims
        line up with the target's first dims."""
        if self.auto_broadcast != "pdpd":
            return arrays
        rank = arrays[self.TARGET].ndim
        return [a if a.ndim == rank else a.reshape(a.shape + (1,) * (rank - a.ndim)) for a in arrays]

    def result_shape(self, shapes: list[Shape]) -> Shape:
        return broadcast_rule(self.auto_broadcast, shapes)

    def check_run_shape(self, arrays: list[np.ndarray], sig: Sig) -> None:
        """Operand shapes known only at run time: they must broadcast, and the result fit the limits
        (static shapes were checked at load)."""
        if sig.static:
            return
        shapes = tuple(a.shape for a in arrays)
        self.remembered("checked", (shapes, sig.outs[0]), lambda: self._check_shapes(shapes, sig))

    def _check_shapes(self, shapes: tuple[tuple[int, ...], ...], sig: Sig) -> bool:
        """The run-time check (raises); remembered once passed: the limits do not change."""
        try:
            shape = self.result_shape(list(shapes))
        except ShapeInferenceError as e:
            raise ExecutionError(e.message, self.where) from None
        self.check_output(shape, sig.outs[0], sig)
        return True


class Binary(Broadcasting):
    """Two operands of one element type; the result is `fn(a, b)` in that type (or RESULT)."""

    INPUTS = (2, 2)
    DTYPES = NUMERIC_TYPES
    RESULT: str | None = None  # the result's element type when it is not the operands'
    INT_DIVISOR = False  # an integer zero in the second operand is an error
    INT_BY_VALUE = False  # apply's integer result type depends on the values (Power)

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        self.require_dtype(inputs[0], self.DTYPES, "input 0")
        et = self.require_same_dtype(inputs)
        return [TensorSpec(self.RESULT or et, self.result_shape([s.shape for s in inputs]))]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        a, b = inputs
        key = (a.shape, b.shape, a.dtype, b.dtype)
        call = self.steady(key)
        if call is not None:
            return [call(a, b)]
        self.check_run_shape(inputs, sig)
        a, b = self.aligned(inputs)
        by_value = (self.INT_DIVISOR or self.INT_BY_VALUE) and a.dtype.kind in "iu"
        if self.INT_DIVISOR and by_value and np.any(b == 0):
            raise ExecutionError(f"integer {self.TYPE} by zero", self.where)
        # floating-point warnings are off around every compute (executor, shape inference)
        raw = np.asarray(self.apply(a, b))
        y = finish(raw, sig.outs[0])
        if y is raw and raw.ndim and not by_value and self.auto_broadcast != "pdpd":
            # the operands checked, aligned as they are, the result already of its type: from
            # now on `apply` alone (Add of (1, 128, 32): 7 -> 4 us a call inside BERT)
            self.settle(key, lambda: self.apply)
        return [y]

    def apply(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self.fn(a, b)


def _binary(type_name: str, fn, base=Binary, versions=(1,), doc: str = "with numpy broadcasting", **attrs):
    cls = type(type_name, (base,), {"TYPE": type_name, "VERSIONS": versions, "fn": staticmethod(fn), **attrs})
    cls.__doc__ = f"OpenVINO {type_name}-{versions[0]}: element-wise, {doc}."
    return register(cls)


Add = _binary("Add", np.add)
Subtract = _binary("Subtract", np.subtract)
Multiply = _binary("Multiply", np.multiply)
Maximum = _binary("Maximum", np.maximum)
Minimum = _binary("Minimum", np.minimum)
SquaredDifference = _binary("SquaredDifference", lambda a, b: np.square(np.subtract(a, b)), doc="(a - b)^2")


@register
class Divide(Binary):
    """OpenVINO Divide-1; integers: floor division (m_pythondiv=true) or truncation."""

    TYPE = "Divide"
    INT_DIVISOR = True
    m_pythondiv = Attr("bool", True)

    def apply(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if a.dtype.kind not in "iu":
            return np.divide(a, b)
        if self.m_pythondiv:
            return np.floor_divide(a, b)
        q = np.abs(a.astype(np.int64)) // np.abs(b.astype(np.int64))
        neg = (a < 0) != (b < 0)
        return np.where(neg, -q, q).astype(a.dtype)


@register
class Power(Binary):
    """OpenVINO Power-1; integer powers with a negative exponent follow C: 1/x truncated."""

    TYPE = "Power"
    INT_BY_VALUE = True

    def apply(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if a.dtype.kind in "iu" and np.any(b < 0):
            return np.trunc(np.power(a.astype(np.float64), b.astype(np.float64)))  # converted by finish
        return np.power(a, b)


@register
class Mod(Binary):
    """Mod-1: the truncated remainder, with the sign of the dividend (C's fmod and %), computed
    exactly (OpenVINO's reference computes x - trunc(x / y) * y in the type, which can be off by
    a whole y when x / y rounds to an integer)."""

    TYPE = "Mod"
    INT_DIVISOR = True
    fn = staticmethod(np.fmod)


@register
class FloorMod(Binary):
    """FloorMod-1: the floored remainder, with the sign of the divisor (Python's %), computed exactly."""

    TYPE = "FloorMod"
    INT_DIVISOR = True
    fn = staticmethod(np.mod)


class Compare(Binary):
    """A comparison: operands of any one type (boolean too), a boolean result."""

    DTYPES = NUMERIC_TYPES | {"boolean"}
    RESULT = "boolean"


Equal = _binary("Equal", np.equal, Compare, doc="comparison, boolean result")
NotEqual = _binary("NotEqual", np.not_equal, Compare, doc="comparison, boolean result")
Less = _binary("Less", np.less, Compare, doc="comparison, boolean result")
LessEqual = _binary("LessEqual", np.less_equal, Compare, doc="comparison, boolean result")
Greater = _binary("Greater", np.greater, Compare, doc="comparison, boolean result")
GreaterEqual = _binary("GreaterEqual", np.greater_equal, Compare, doc="comparison, boolean result")


class Logical(Binary):
    """Boolean operands, boolean result."""

    DTYPES = frozenset({"boolean"})


class Bitwise(Binary):
    """Integer or boolean operands, the result in their type."""

    DTYPES = (INT_TYPES - SUB_BYTE_TYPES) | {"boolean"}


LogicalAnd = _binary("LogicalAnd", np.logical_and, Logical)
LogicalOr = _binary("LogicalOr", np.logical_or, Logical)
LogicalXor = _binary("LogicalXor", np.logical_xor, Logical, (2,))  # LogicalXor-1: OpenVINO writes opset2
BitwiseAnd = _binary("BitwiseAnd", np.bitwise_and, Bitwise, (13,))
BitwiseOr = _binary("BitwiseOr", np.bitwise_or, Bitwise, (13,))
BitwiseXor = _binary("BitwiseXor", np.bitwise_xor, Bitwise, (13,))


class _Shift(Binary):
    """A bit shift (module doc): the count modulo 32 on 32-bit promoted values for types up to
    32 bits, modulo 64 for 64-bit types."""

    VERSIONS = (15,)
    DTYPES = INT_TYPES - SUB_BYTE_TYPES
    LEFT = True

    def apply(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        wide = a.dtype.itemsize == 8
        count = np.bitwise_and(b, 63 if wide else 31).astype(a.dtype if wide else np.int64)
        x = a if wide else a.astype(np.int64)
        y = np.left_shift(x, count) if self.LEFT else np.right_shift(x, count)
        return y.astype(a.dtype)


@register
class BitwiseLeftShift(_Shift):
    TYPE = "BitwiseLeftShift"


@register
class BitwiseRightShift(_Shift):
    TYPE = "BitwiseRightShift"
    LEFT = False


@register
class Select(Broadcasting):
    """Select-1: where(cond, then, else). numpy: all three broadcast together; none: equal shapes;
    pdpd: else, then cond, broadcast into then's shape (OpenVINO's Select shape rule)."""

    TYPE = "Select"
    INPUTS = (3, 3)
    TARGET = 1
    UNIFORM_MIN = 1 << 14  # conditions of this many elements are checked for one value first

    def result_shape(self, shapes: list[Shape]) -> Shape:
        cond, then, other = shapes
        return broadcast_rule(self.auto_broadcast, [then, other, cond])

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        cond, a, b = inputs
        if cond.dtype != "boolean":
            raise FormatError(f"condition has element type {cond.dtype}; boolean is required", self.where)
        if a.dtype != b.dtype:
            raise FormatError(f"then/else have element types {a.dtype} and {b.dtype}; they must match", self.where)
        return [TensorSpec(a.dtype, self.result_shape([s.shape for s in inputs]))]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        self.check_run_shape(inputs, sig)
        cond, a, b = self.aligned(inputs)
        if cond.size >= self.UNIFORM_MIN:
            # a condition true (or false) everywhere, as an attention mask without padding: the
            # chosen operand itself, or broadcast (a 512x512 mask over 4 heads: np.where 1.7 ms in
            # T5's encoder, 14 us to find the mask uniform)
            side = a if cond.all() else b if not cond.any() else None
            if side is not None:
                shape = np.broadcast_shapes(cond.shape, a.shape, b.shape)
                if side.shape == shape and side.flags.c_contiguous:
                    return [side]
                # a view in another order is copied here, once, not by each of its readers that
                # take rows (T5's position bias, a (1, 4, L, L) transposed view read by every
                # attention layer of a stack: 0.7 ms a copy at 512 tokens)
                return [_broadcast_copy(side, shape)]
        return [_select(cond, a, b)]


def _broadcast_copy(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """x broadcast to `shape` as a new C-ordered array: assigned into an empty one, which took
    half the time of np.ascontiguousarray(np.broadcast_to(...)) on a (1, 4, 64, 64) transposed
    view (8.8 against 18 us; 30 against 41 at 128)."""
    out = np.empty(shape, x.dtype)
    out[...] = x
    return out


def _select(cond: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """np.where(cond, a, b) into a C-ordered array. np.where keeps its operands' memory order, so
    T5's masked position bias (a transposed view) came out in that order and every attention
    layer reading it copied it again; and when one operand has the result's shape, copying it
    whole and then the other where the condition picks it is faster than np.where (a (1, 4, L,
    L) transposed view against a (1, 1, L, L) condition and a scalar, medians of 3000 calls, us:
    L = 64 36 -> 24, L = 128 233 -> 82). The same values bit for bit: both are copies."""
    shape = np.broadcast_shapes(cond.shape, a.shape, b.shape)
    if a.shape == b.shape == shape:  # (then and else have one type: Select's shape rule)
        y = np.where(cond, a, b)
        return y if y.flags.c_contiguous else y.copy()  # (ascontiguousarray makes a 0-d array 1-d)
    full, other, pick = (a, b, ~cond) if a.shape == shape else (b, a, cond)
    out = _broadcast_copy(full, shape)
    np.copyto(out, other, where=pick)
    return out


# ---- unary ----------------------------------------------------------------------------------------


def round_half_away(x: np.ndarray) -> np.ndarray:
    """C's round: halves away from zero, exactly (adding 0.5 first would round 0.49999997 up);
    -0.3 gives -0.0, NaN and infinities stay."""
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


_INT_ROUNDING = {"trunc": np.trunc, "round": round_half_away, "rint": np.rint}


_BLOCK = 32768  # elements per float64 pass: temporaries stay in cache (2-3x faster than whole arrays)


def kernel_activation(op: Op, inputs: list[np.ndarray], kernel_call) -> np.ndarray | None:
    """The float32 activation of inputs[0] by the element-wise kernels, `kernel_call(inputs)`
    naming the kernel and its arguments after (x, out) (its name None: there is none); by its
    steady call once the operands' signature repeats (`Op.steady`). None when numpy should
    compute it."""
    x = inputs[0]
    key = (x.shape, x.dtype) if len(inputs) == 1 else (x.shape, x.dtype, tuple(a.tobytes() for a in inputs[1:]))
    call = op.steady(key)
    y = None if call is None else call(x)
    if y is not None:
        return y
    name, args = kernel_call(inputs)
    y = None if name is None else activation_f32(name, x, *args)
    if y is not None:
        op.settle(key, lambda: activation_call(name, x, *args))
    return y


class Unary(Op):
    """One operand, the result of `f` in its shape and type.

    INT says how integer (and boolean) operands are computed: "native" (f on the integers),
    "same" (returned as they are), or f in float64, then "trunc", "round" (half away from zero)
    or "rint" (half to even), converted back with saturation. F64: float32 operands are computed
    in float64 (where float32 numpy is more than ~2 ulp off, or the formula cancels); f16 and bf16
    are always computed in float32 at least, then rounded once. f must work element by element
    (float64 work runs in blocks).
    """

    VERSIONS = (1,)
    SAME_SHAPE = True
    DTYPES = NUMERIC_TYPES
    INT = "native"
    F64 = False

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        self.require_dtype(inputs[0], self.DTYPES)
        return [TensorSpec(inputs[0].dtype, inputs[0].shape)]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        x = inputs[0]
        et = sig.outs[0]
        extra = inputs[1:]
        if x.dtype.kind in "iub":
            if self.INT == "same":
                return [x]
            if self.INT == "native":
                return [finish(np.asarray(self.f(x, extra)), et)]
            y = np.asarray(self.f(x.astype(np.float64), extra), np.float64)
            return [cast(_INT_ROUNDING[self.INT](y), et)]
        return [self.evaluate(lambda v: self.f(v, extra), x, et)]

    def evaluate(self, fn: Callable[[np.ndarray], np.ndarray], x: np.ndarray, et: str) -> np.ndarray:
        """fn on float x in the working precision, rounded once to et."""
        work = np.float64 if (self.F64 or x.dtype == np.float64) else np.float32
        if work is np.float32 or x.size <= _BLOCK:
            return finish(np.asarray(fn(x.astype(work, copy=False))), et)
        flat = x.reshape(-1)
        out = np.empty(flat.shape, numpy_dtype(et))
        for i in range(0, flat.size, _BLOCK):
            out[i : i + _BLOCK] = finish(np.asarray(fn(flat[i : i + _BLOCK].astype(np.float64))), et)
        return out.reshape(x.shape)

    def f(self, x: np.ndarray, extra: Sequence[np.ndarray]) -> np.ndarray:
        """The function on a float64/float32 array (or the integers, for INT "native"); `extra`
        holds the operands after the first."""
        return self.fn(x)


def _unary(type_name: str, fn, integers: str, f64: bool = False, versions=(1,), dtypes=NUMERIC_TYPES):
    cls = type(
        type_name,
        (Unary,),
        {
            "TYPE": type_name,
            "VERSIONS": versions,
            "fn": staticmethod(fn),
            "INT": integers,
            "F64": f64,
            "DTYPES": dtypes,
        },
    )
    cls.__doc__ = f"OpenVINO {type_name}-{versions[0]}, element-wise (integers: {integers})."
    return register(cls)


# float64 where numpy's float32 loop measured more than 2 ulp off (tan 3, asin 3, log 4)
Abs = _unary("Abs", np.abs, "native")
Negative = _unary("Negative", np.negative, "native")
Exp = _unary("Exp", np.exp, "trunc")
Log = _unary("Log", np.log, "trunc", f64=True)
Sqrt = _unary("Sqrt", np.sqrt, "round")


@register
class Erf(Unary):
    """Erf-1 (integers: erf rounded half away from zero); float32 data takes the element-wise
    family's float32 kernel once it runs (`kernels/elementwise_loops.erf_f32`: within 1.92
    ulps of the exact value, 2.9x faster than the float64 formula), else Cody's erf of
    `irexec.special` in float64 blocks, rounded once."""

    TYPE = "Erf"
    INT = "round"
    F64 = True
    fn = staticmethod(erf)
    KERNELS = ("elementwise",)

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        if sig.outs[0] == "f32":
            y = kernel_activation(self, inputs, lambda _: ("erf_f32", ()))
            if y is not None:
                return [y]
        return super().compute(inputs, sig)


Sin = _unary("Sin", np.sin, "trunc")
Cos = _unary("Cos", np.cos, "round")
Tan = _unary("Tan", np.tan, "round", f64=True)
Sinh = _unary("Sinh", np.sinh, "round")
Cosh = _unary("Cosh", np.cosh, "round")
Asin = _unary("Asin", np.arcsin, "trunc", f64=True)
Acos = _unary("Acos", np.arccos, "round")
Atan = _unary("Atan", np.arctan, "round")
Asinh = _unary("Asinh", np.arcsinh, "round", f64=True, versions=(4,))
Floor = _unary("Floor", np.floor, "same")
Ceiling = _unary("Ceiling", np.ceil, "same")
Sign = _unary("Sign", np.sign, "native")  # NaN stays NaN, -0.0 gives +0.0, as OpenVINO's reference
# OpenVINO's LogicalNot accepts numbers too: 1 where x == 0, else 0, in x's type
LogicalNot = _unary("LogicalNot", lambda x: (x == 0).astype(x.dtype), "native", dtypes=NUMERIC_TYPES | {"boolean"})
BitwiseNot = _unary("BitwiseNot", np.invert, "native", versions=(13,), dtypes=Bitwise.DTYPES)


@register
class Round(Unary):
    """Round-5: half_to_even (banker's) or half_away_from_zero; integers are returned as they are."""

    TYPE = "Round"
    VERSIONS = (5,)
    DTYPES = NUMERIC_TYPES | {"boolean"}
    INT = "same"
    mode = Attr("str", "half_to_even", choices=("half_to_even", "half_away_from_zero"))

    def f(self, x: np.ndarray, extra: Sequence[np.ndarray]) -> np.ndarray:
        return np.rint(x) if self.mode == "half_to_even" else round_half_away(x)


@register
class Acosh(Unary):
    """Acosh-4; integers: acosh rounded half away from zero, x < 1 gives the type's minimum."""

    TYPE = "Acosh"
    VERSIONS = (4,)
    F64 = True
    fn = staticmethod(np.arccosh)

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        x = inputs[0]
        if x.dtype.kind not in "iu":
            return super().compute(inputs, sig)
        y = round_half_away(np.arccosh(x.astype(np.float64)))
        out = cast(y, sig.outs[0])
        out[np.isnan(y)] = np.iinfo(x.dtype).min
        return [out]


@register
class Atanh(Unary):
    """Atanh-4; integers: the type's maximum for x > 0, its minimum for x < 0, 0 for 0."""

    TYPE = "Atanh"
    VERSIONS = (4,)
    F64 = True
    fn = staticmethod(np.arctanh)

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        x = inputs[0]
        if x.dtype.kind not in "iu":
            return super().compute(inputs, sig)
        info = np.iinfo(x.dtype)
        return [np.where(x > 0, info.max, np.where(x < 0, info.min, 0)).astype(x.dtype)]


# Giles' single-precision erfinv (OpenVINO's reference, one tail sign corrected: module doc): w = -log((1 - x)(1 + x)); a polynomial in
# w - 2.5 below w = 5, in sqrt(w) - 3 above; highest power first
_ERFINV_CENTRAL = (
    2.81022636e-08,
    3.43273939e-07,
    -3.5233877e-06,
    -4.39150654e-06,
    0.00021858087,
    -0.00125372503,
    -0.00417768164,
    0.246640727,
    1.50140941,
)
_ERFINV_TAIL = (
    -0.000200214257,
    0.000100950558,
    0.00134934322,
    -0.00367342844,
    0.00573950773,
    -0.0076224613,
    0.00943887047,
    1.00167406,
    2.83297682,
)


def erfinv_giles(x: np.ndarray) -> np.ndarray:
    """OpenVINO's reference ErfInv on float64 x: 0 at 0 (+0.0 for -0.0), +-inf at +-1, NaN
    beyond."""
    with np.errstate(all="ignore"):
        w = -np.log((1.0 - x) * (1.0 + x))
        central = np.full(x.shape, _ERFINV_CENTRAL[0])
        tail = np.full(x.shape, _ERFINV_TAIL[0])
        s1, s2 = w - 2.5, np.sqrt(w) - 3.0
        for c in _ERFINV_CENTRAL[1:]:
            central = c + central * s1
        for c in _ERFINV_TAIL[1:]:
            tail = c + tail * s2
        r = np.where(w < 5.0, central, tail) * x
    r = np.where(np.abs(x) == 1.0, np.copysign(np.inf, x), r)
    r = np.where(np.abs(x) > 1.0, np.nan, r)
    return np.where(x == 0.0, 0.0, r)


@register
class ErfInv(Unary):
    """ErfInv-17: the inverse error function (float types), as OpenVINO's reference computes it."""

    TYPE = "ErfInv"
    VERSIONS = (17,)
    DTYPES = FLOAT_TYPES
    F64 = True
    fn = staticmethod(erfinv_giles)


class _Predicate(Unary):
    """A test of float values with a boolean result (OpenVINO takes float types only)."""

    DTYPES = FLOAT_TYPES

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        self.require_dtype(inputs[0], self.DTYPES)
        return [TensorSpec("boolean", inputs[0].shape)]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        return [np.asarray(self.f(inputs[0], ()))]


@register
class IsNaN(_Predicate):
    TYPE = "IsNaN"
    VERSIONS = (10,)
    fn = staticmethod(np.isnan)


@register
class IsFinite(_Predicate):
    TYPE = "IsFinite"
    VERSIONS = (10,)
    fn = staticmethod(np.isfinite)


@register
class IsInf(_Predicate):
    TYPE = "IsInf"
    VERSIONS = (10,)
    detect_negative = Attr("bool", True)
    detect_positive = Attr("bool", True)

    def f(self, x: np.ndarray, extra: Sequence[np.ndarray]) -> np.ndarray:
        out = np.zeros(x.shape, bool)
        if self.detect_positive:
            out |= x == np.inf
        if self.detect_negative:
            out |= x == -np.inf
        return out


# ---- variadic -------------------------------------------------------------------------------------


@register
class Mean(Op):
    """ONNX Mean-13: element-wise mean of 1..N inputs with numpy broadcasting, float types only."""

    KERNELS = ("reduce",)

    TYPE = "Mean"
    VERSIONS = ("onnx",)
    INPUTS = (1, None)

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        for i, spec in enumerate(inputs):
            self.require_dtype(spec, FLOAT_TYPES, f"input {i}")
        et = self.require_same_dtype(inputs)
        return [TensorSpec(et, broadcast_shapes([s.shape for s in inputs]))]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        self.check_output(np.broadcast_shapes(*(x.shape for x in inputs)), sig.outs[0], sig)
        return [mean_broadcast(list(inputs), sig.outs[0])]
