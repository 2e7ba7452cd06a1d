"""Element-wise ops with OpenVINO semantics: binary arithmetic with numpy broadcasting
(Add Subtract Multiply Divide Maximum Minimum Power), unary math (Abs Exp Log Sqrt Negative), and
the ONNX-semantics variadic `Mean` (one fused broadcasting pass, float64 accumulation).

Integers wrap on overflow as in C; integer Divide is floor division when `m_pythondiv` is true
(the default) and truncation otherwise; division of an integer by zero is an error, never a value.
bf16 is computed in float32 and rounded once.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import FLOAT_TYPES, INT_TYPES, NUMERIC_TYPES, SUB_BYTE_TYPES, cast, numpy_dtype, round_bf16
from ..errors import ExecutionError, FormatError
from ..kernels.reduce import mean_broadcast
from ..shapes import TensorSpec, broadcast_shapes, format_shape
from .attrs import Attr
from .base import Op
from .registry import register


def _finish(result: np.ndarray, et: str) -> np.ndarray:
    if et == "bf16":
        return round_bf16(result)
    dt = numpy_dtype(et)
    return result if result.dtype is dt else cast(result, et)


class Binary(Op):
    """Two operands of one element type, broadcast as `auto_broadcast` says."""

    VERSIONS = (1,)
    INPUTS = (2, 2)
    auto_broadcast = Attr("str", "numpy", choices=("numpy", "none", "pdpd"))
    DTYPES = NUMERIC_TYPES

    def infer(self, inputs):
        a, b = inputs
        self.require_dtype(a, self.DTYPES, "input 0")
        if b.dtype != a.dtype:
            raise FormatError(f"operands have element types {a.dtype} and {b.dtype}; they must match", self.where)
        if self.auto_broadcast == "none" and a.shape is not None and b.shape is not None:
            if len(a.shape) != len(b.shape) or any(
                x is not None and y is not None and x != y for x, y in zip(a.shape, b.shape)
            ):
                raise FormatError(
                    f"auto_broadcast=none needs equal shapes, got {format_shape(a.shape)} and "
                    f"{format_shape(b.shape)}",
                    self.where,
                )
        return [TensorSpec(a.dtype, broadcast_shapes([a.shape, b.shape]))]

    def compute(self, inputs, sig):
        a, b = inputs
        if not sig.static:
            self.check_output(np.broadcast_shapes(a.shape, b.shape), sig.outs[0], sig)
        # floating-point warnings are off around every compute (executor, loader)
        return [_finish(np.asarray(self.fn(a, b)), sig.outs[0])]


def _binary(type_name: str, fn):
    cls = type(type_name, (Binary,), {"TYPE": type_name, "fn": staticmethod(fn)})
    cls.__doc__ = f"OpenVINO {type_name}-1 with numpy broadcasting."
    return register(cls)


Add = _binary("Add", np.add)
Subtract = _binary("Subtract", np.subtract)
Multiply = _binary("Multiply", np.multiply)
Maximum = _binary("Maximum", np.maximum)
Minimum = _binary("Minimum", np.minimum)


@register
class Divide(Binary):
    """OpenVINO Divide-1; integers: floor division (m_pythondiv=true) or truncation."""

    TYPE = "Divide"
    m_pythondiv = Attr("bool", True)

    def compute(self, inputs, sig):
        a, b = inputs
        self.check_output(np.broadcast_shapes(a.shape, b.shape), sig.outs[0], sig)
        if a.dtype.kind in "iu":
            if np.any(b == 0):
                raise ExecutionError("integer division by zero", self.where)
            with np.errstate(all="ignore"):
                if self.m_pythondiv:
                    return [np.floor_divide(a, b)]
                q = np.abs(a.astype(np.int64)) // np.abs(b.astype(np.int64))
                neg = (a < 0) != (b < 0)
                return [np.where(neg, -q, q).astype(a.dtype)]
        with np.errstate(all="ignore"):
            return [_finish(np.asarray(np.divide(a, b)), sig.outs[0])]


@register
class Power(Binary):
    """OpenVINO Power-1; integer powers with a negative exponent follow C: 1/x truncated."""

    TYPE = "Power"

    def compute(self, inputs, sig):
        a, b = inputs
        self.check_output(np.broadcast_shapes(a.shape, b.shape), sig.outs[0], sig)
        if a.dtype.kind in "iu":
            if np.any(b < 0):
                with np.errstate(all="ignore"):
                    r = np.trunc(np.power(a.astype(np.float64), b.astype(np.float64)))
                return [cast(r, sig.outs[0])]
        with np.errstate(all="ignore"):
            return [_finish(np.asarray(np.power(a, b)), sig.outs[0])]


class Unary(Op):
    VERSIONS = (1,)
    SAME_SHAPE = True
    DTYPES = NUMERIC_TYPES
    FLOAT_MATH = False  # integer inputs computed in float64, then converted back

    def infer(self, inputs):
        self.require_dtype(inputs[0], self.DTYPES)
        return [TensorSpec(inputs[0].dtype, inputs[0].shape)]

    def compute(self, inputs, sig):
        (x,) = inputs
        if self.FLOAT_MATH and x.dtype.kind in "iu":
            x = x.astype(np.float64)
        return [_finish(np.asarray(self.fn(x)), sig.outs[0])]


def _unary(type_name: str, fn, float_math: bool):
    cls = type(type_name, (Unary,), {"TYPE": type_name, "fn": staticmethod(fn), "FLOAT_MATH": float_math})
    cls.__doc__ = f"OpenVINO {type_name}-1, element-wise."
    return register(cls)


Abs = _unary("Abs", np.abs, False)
Negative = _unary("Negative", np.negative, False)
Exp = _unary("Exp", np.exp, True)
Log = _unary("Log", np.log, True)
Sqrt = _unary("Sqrt", np.sqrt, True)


@register
class Mean(Op):
    """ONNX Mean-13: element-wise mean of 1..N inputs with numpy broadcasting, float types only."""

    TYPE = "Mean"
    VERSIONS = ("onnx",)
    INPUTS = (1, None)

    def infer(self, inputs):
        for i, spec in enumerate(inputs):
            self.require_dtype(spec, FLOAT_TYPES, f"input {i}")
        et = self.require_same_dtype(inputs)
        return [TensorSpec(et, broadcast_shapes([s.shape for s in inputs]))]

    def compute(self, inputs, sig):
        self.check_output(np.broadcast_shapes(*(x.shape for x in inputs)), sig.outs[0], sig)
        return [mean_broadcast(list(inputs), sig.outs[0])]


# ---- more unary math ----------------------------------------------------------------------------


def _erf_op(x):
    from ._math import erf

    return erf(x, exact=x.dtype == np.float64)


def _round_even(x):
    return np.round(x)


Erf = _unary("Erf", _erf_op, True)
Sin = _unary("Sin", np.sin, True)
Cos = _unary("Cos", np.cos, True)
Tan = _unary("Tan", np.tan, True)
Sinh = _unary("Sinh", np.sinh, True)
Cosh = _unary("Cosh", np.cosh, True)
Asin = _unary("Asin", np.arcsin, True)
Acos = _unary("Acos", np.arccos, True)
Atan = _unary("Atan", np.arctan, True)
Floor = _unary("Floor", np.floor, False)
Ceiling = _unary("Ceiling", np.ceil, False)
Sign = _unary("Sign", np.sign, False)


@register
class Round(Unary):
    """Round-5: half_to_even (banker's) or half_away_from_zero; integers are returned as they are."""

    TYPE = "Round"
    VERSIONS = (5,)
    mode = Attr("str", "half_to_even", choices=("half_to_even", "half_away_from_zero"))

    def compute(self, inputs, sig):
        (x,) = inputs
        if x.dtype.kind in "iu":
            return [x.copy()]
        if self.mode == "half_to_even":
            return [_finish(np.round(x), sig.outs[0])]
        return [_finish(np.sign(x) * np.floor(np.abs(x) + x.dtype.type(0.5)), sig.outs[0])]


class _Predicate(Unary):
    """A float test with a boolean result (integers are never NaN or infinite)."""

    DTYPES = NUMERIC_TYPES

    def infer(self, inputs):
        self.require_dtype(inputs[0], self.DTYPES)
        return [TensorSpec("boolean", inputs[0].shape)]


@register
class IsNaN(_Predicate):
    TYPE = "IsNaN"
    VERSIONS = (10,)

    def compute(self, inputs, sig):
        (x,) = inputs
        return [np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.shape, bool)]


@register
class IsFinite(_Predicate):
    TYPE = "IsFinite"
    VERSIONS = (10,)

    def compute(self, inputs, sig):
        (x,) = inputs
        return [np.isfinite(x) if x.dtype.kind == "f" else np.ones(x.shape, bool)]


@register
class IsInf(_Predicate):
    TYPE = "IsInf"
    VERSIONS = (10,)
    detect_negative = Attr("bool", True)
    detect_positive = Attr("bool", True)

    def compute(self, inputs, sig):
        (x,) = inputs
        if x.dtype.kind != "f":
            return [np.zeros(x.shape, bool)]
        out = np.zeros(x.shape, bool)
        if self.detect_positive:
            out |= x == np.inf
        if self.detect_negative:
            out |= x == -np.inf
        return [out]


# ---- binary: remainders, comparisons, logic, bits ---------------------------------------------------


@register
class Mod(Binary):
    """Mod-1: truncated remainder (the sign of the dividend), as C's fmod."""

    TYPE = "Mod"

    def compute(self, inputs, sig):
        a, b = inputs
        if a.dtype.kind in "iu" and np.any(b == 0):
            raise ExecutionError("integer Mod by zero", self.where)
        return [_finish(np.asarray(np.fmod(a, b)), sig.outs[0])]


@register
class FloorMod(Binary):
    """FloorMod-1: remainder with the sign of the divisor (Python's %)."""

    TYPE = "FloorMod"

    def compute(self, inputs, sig):
        a, b = inputs
        if a.dtype.kind in "iu" and np.any(b == 0):
            raise ExecutionError("integer FloorMod by zero", self.where)
        return [_finish(np.asarray(np.mod(a, b)), sig.outs[0])]


SquaredDifference = _binary("SquaredDifference", lambda a, b: np.square(np.subtract(a, b)))


class Compare(Binary):
    """A comparison with numpy broadcasting and a boolean result."""

    DTYPES = NUMERIC_TYPES | {"boolean"}

    def infer(self, inputs):
        (out,) = super().infer(inputs)
        return [TensorSpec("boolean", out.shape)]

    def compute(self, inputs, sig):
        return [np.asarray(self.fn(inputs[0], inputs[1]))]


def _compare(type_name: str, fn):
    cls = type(type_name, (Compare,), {"TYPE": type_name, "fn": staticmethod(fn)})
    cls.__doc__ = f"OpenVINO {type_name}-1: element-wise comparison, boolean result."
    return register(cls)


Equal = _compare("Equal", np.equal)
NotEqual = _compare("NotEqual", np.not_equal)
Less = _compare("Less", np.less)
LessEqual = _compare("LessEqual", np.less_equal)
Greater = _compare("Greater", np.greater)
GreaterEqual = _compare("GreaterEqual", np.greater_equal)


class Logical(Binary):
    DTYPES = frozenset({"boolean"})

    def compute(self, inputs, sig):
        return [np.asarray(self.fn(inputs[0], inputs[1]))]


def _logical(type_name: str, fn, base=Logical, versions=(1,), dtypes=None):
    attrs = {"TYPE": type_name, "fn": staticmethod(fn), "VERSIONS": versions}
    if dtypes is not None:
        attrs["DTYPES"] = dtypes
    cls = type(type_name, (base,), attrs)
    cls.__doc__ = f"OpenVINO {type_name}: element-wise, with numpy broadcasting."
    return register(cls)


LogicalAnd = _logical("LogicalAnd", np.logical_and)
LogicalOr = _logical("LogicalOr", np.logical_or)
LogicalXor = _logical("LogicalXor", np.logical_xor)
_BITS = (INT_TYPES - SUB_BYTE_TYPES) | {"boolean"}
BitwiseAnd = _logical("BitwiseAnd", np.bitwise_and, versions=(13,), dtypes=_BITS)
BitwiseOr = _logical("BitwiseOr", np.bitwise_or, versions=(13,), dtypes=_BITS)
BitwiseXor = _logical("BitwiseXor", np.bitwise_xor, versions=(13,), dtypes=_BITS)


@register
class LogicalNot(Unary):
    TYPE = "LogicalNot"
    DTYPES = frozenset({"boolean"})
    fn = staticmethod(np.logical_not)


@register
class BitwiseNot(Unary):
    TYPE = "BitwiseNot"
    VERSIONS = (13,)
    DTYPES = _BITS
    fn = staticmethod(np.invert)


@register
class Select(Op):
    """Select-1: where(cond, then, else) with numpy broadcasting of all three (auto_broadcast
    numpy), or equal shapes (none)."""

    TYPE = "Select"
    VERSIONS = (1,)
    INPUTS = (3, 3)
    auto_broadcast = Attr("str", "numpy", choices=("numpy", "none", "pdpd"))

    def infer(self, inputs):
        cond, a, b = inputs
        if cond.dtype != "boolean":
            raise FormatError(f"condition has element type {cond.dtype}; boolean is required", self.where)
        if a.dtype != b.dtype:
            raise FormatError(f"then/else have element types {a.dtype} and {b.dtype}; they must match", self.where)
        return [TensorSpec(a.dtype, broadcast_shapes([cond.shape, a.shape, b.shape]))]

    def compute(self, inputs, sig):
        cond, a, b = inputs
        if not sig.static:
            self.check_output(np.broadcast_shapes(cond.shape, a.shape, b.shape), sig.outs[0], sig)
        return [np.where(cond, a, b)]
