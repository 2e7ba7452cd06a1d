"""Activations with OpenVINO semantics, element-wise on numpy: ReLU, Clamp, Elu, Gelu-2/7, Sigmoid,
Tanh, Swish-4, HSwish-4, HSigmoid-5, Mish-4, SoftPlus-4, SoftSign-9, PRelu-1, HardSigmoid-1, Selu-1.

They share `Unary` (ops/elementwise.py): composite float formulas run in float64 (float32 loses up
to 3 ulps on them; ReLU, Clamp, PRelu and Tanh stay in the input's type) and are rounded once to
the output type; Gelu uses erfc from irexec/special.py so that it stays accurate where 1 + erf(x)
cancels. Formulas follow OpenVINO's reference kernels, including what they give at the edges:
NaN stays NaN (HardSigmoid maps it to 1, through std::min), Gelu/Swish/Mish/HSwish give NaN at
-inf. One exception: ReLU gives +0.0 for -0.0, as the CPU plugin does (the reference keeps -0.0).

Integer inputs, where OpenVINO accepts them: ReLU, Clamp and HardSigmoid compute on the integers;
Sigmoid follows the reference's integer formula (1 for x >= 1, else 0); Tanh rounds half away from
zero (the reference); Elu, HSwish and HSigmoid, which have no integer reference kernel, round to
nearest even as OpenVINO's CPU plugin does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from ..dtypes import FLOAT_TYPES, NUMERIC_TYPES, SUB_BYTE_TYPES, cast, from_numpy, round_bf16
from ..errors import ExecutionError, FormatError, ShapeInferenceError
from ..kernels.elementwise import relu_f32_inplace, relu_inplace_call
from ..shapes import Shape, TensorSpec, format_shape
from ..special import erfc
from .attrs import Attr
from .base import Op, Sig, Steady
from .common import array_root, finish
from .elementwise import Unary, kernel_activation
from .registry import register

_NUMBERS = NUMERIC_TYPES - SUB_BYTE_TYPES


class Activation(Unary):
    """Float inputs only unless a subclass says otherwise; float math in float64. KERNEL names
    the numba kernel of `kernels/elementwise_loops.py` that float32 inputs take when their
    family (`kernels/elementwise.py`) decides to run kernels: the same float64 formula (a
    vectorized exp where there is one), rounded once; libm's exp costs 5-12 ns an element (70%
    of EfficientNet's time), Gelu's numpy path makes ~60 array passes per block, the hard ones save the float64 round trip's temporaries."""

    DTYPES = FLOAT_TYPES
    F64 = True
    KERNEL: str | None = None

    def kernel(self) -> str | None:
        return self.KERNEL

    def kernel_call(self, inputs: list[np.ndarray]) -> tuple[str | None, tuple]:
        """The kernel these operands take and its arguments after (x, out)."""
        return self.kernel(), ()

    def kernel_families(self) -> tuple[str, ...]:
        return ("elementwise",) if self.kernel() else ()

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        if sig.outs[0] == "f32":
            y = kernel_activation(self, inputs, self.kernel_call)
            if y is not None:
                return [y]
        return super().compute(inputs, sig)


@register
class Relu(Activation):
    """ReLU-1 (IR type "ReLU"): max(x, 0); NaN stays NaN. -0.0 gives +0.0 as in OpenVINO's CPU
    plugin (the reference keeps -0.0; numpy's maximum is 5x faster than a select)."""

    TYPE = "ReLU"
    DTYPES = _NUMBERS
    F64 = False
    KERNEL = "relu"  # float32: 16 lanes a step, 5x numpy's maximum (which keeps NaN with a slower loop)

    def f(self, x: np.ndarray, extra: Sequence[np.ndarray]) -> np.ndarray:
        return np.maximum(x, x.dtype.type(0))


def _int_bound(value: float, rounding: Callable[[float], int], info: np.iinfo) -> int:
    """A float bound as an integer of the type: rounded (ceil for min, floor for max), saturated."""
    if value <= info.min:
        return int(info.min)
    if value >= info.max:
        return int(info.max)
    return rounding(value)


@register
class Clamp(Activation):
    """Clamp-1: min where x < min, max where x > max, else x (NaN stays). The bounds are converted
    to x's type first: floats round to it; integers take ceil(min) and floor(max), saturated to the
    type's range, so that min 0.2 max 0.8 maps x < 1 to 1 and every other x to 0 (the reference)."""

    TYPE = "Clamp"
    DTYPES = _NUMBERS
    min = Attr("float")
    max = Attr("float")

    def __init__(self, layer, context=None):
        super().__init__(layer, context)
        if not self.min <= self.max:
            raise FormatError(f"min {self.min} must not be above max {self.max}", self.where)

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        x = inputs[0]
        if x.dtype.kind in "iu":
            info = np.iinfo(x.dtype)
            lo = x.dtype.type(_int_bound(self.min, math.ceil, info))
            hi = x.dtype.type(_int_bound(self.max, math.floor, info))
        elif sig.ins[0] == "bf16":
            lo, hi = round_bf16(np.array([self.min, self.max], np.float32))
        else:
            lo, hi = np.array([self.min, self.max]).astype(x.dtype)
        if lo <= hi:  # numpy's clip keeps NaN and -0.0, as the reference
            return [np.clip(x, lo, hi)]
        return [np.where(x < lo, lo, np.where(x > hi, hi, x))]


@register
class Elu(Activation):
    """Elu-1: alpha (e^x - 1) where x < 0, else x; integers: that rounded, unsigned unchanged."""

    TYPE = "Elu"
    DTYPES = _NUMBERS
    INT = "native"
    alpha = Attr("float")

    def f(self, x: np.ndarray, extra: Sequence[np.ndarray]) -> np.ndarray:
        if x.dtype.kind in "iu":
            neg = np.rint(self.alpha * np.expm1(np.minimum(x, 0).astype(np.float64)))
            return np.where(x < 0, cast(neg, from_numpy(x.dtype)), x)
        return np.where(x < 0, self.alpha * np.expm1(x), x)


_SQRT2 = math.sqrt(2.0)
_TANH_SCALE = 2.0 * math.sqrt(2.0 / math.pi)


@register
class Gelu2(Activation):
    """Gelu-2: x Phi(x) = 0.5 x (1 + erf(x / sqrt 2)), computed as 0.5 x erfc(-x / sqrt 2) so that
    large negative x keep their tiny values (1 + erf cancels). float32 takes the kernels
    `gelu_erf_f32` (erfc as exp(-x^2 / 2) times a float32 fit of erfcx, in float32 arithmetic:
    within 5.9 ulps of the exact value, 2.7x faster than the float64 formula) and
    `gelu_tanh` (the tanh mode's formula as x sigmoid(u) in float64: within one ulp of the
    exact value rounded)."""

    TYPE = "Gelu"
    VERSIONS = (2,)
    approximation_mode = "erf"

    def kernel(self) -> str | None:
        return "gelu_erf_f32" if self.approximation_mode == "erf" else "gelu_tanh"

    def f(self, x: np.ndarray, extra: Sequence[np.ndarray]) -> np.ndarray:
        if self.approximation_mode == "tanh":
            # 0.5 x (1 + tanh(u)) = x / (1 + e^(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3): no cancellation
            return x / (1.0 + np.exp(-_TANH_SCALE * (x + 0.044715 * (x * x * x))))
        return 0.5 * x * erfc(-x / _SQRT2)


@register
class Gelu7(Gelu2):
    """Gelu-7: approximation_mode erf (Gelu-2's) or tanh."""

    VERSIONS = (7,)
    approximation_mode = Attr("str", "erf", choices=("erf", "tanh"))


@register
class Sigmoid(Activation):
    """Sigmoid-1: 1 / (1 + e^-x) without overflow; integers: the reference computes
    1 / (1 + trunc(e^-x)) in integer arithmetic, 1 for x >= 1 and 0 otherwise."""

    TYPE = "Sigmoid"
    DTYPES = _NUMBERS
    INT = "native"
    KERNEL = "sigmoid"

    def f(self, x: np.ndarray, extra: Sequence[np.ndarray]) -> np.ndarray:
        if x.dtype.kind in "iu":
            return (x > 0).astype(x.dtype)
        e = np.exp(-np.abs(x))
        return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


@register
class Tanh(Activation):
    """Tanh-1 (numpy's float32 tanh is within 1 ulp); integers: rounded, as the reference."""

    TYPE = "Tanh"
    DTYPES = _NUMBERS
    INT = "round"
    F64 = False
    fn = staticmethod(np.tanh)


@register
class Swish(Activation):
    """Swish-4: x / (1 + e^(-beta x)); beta is the optional second input, a scalar (rank 0) of x's
    type, default 1."""

    TYPE = "Swish"
    VERSIONS = (4,)
    INPUTS = (1, 2)
    KERNEL = "swish"

    def kernel_call(self, inputs: list[np.ndarray]) -> tuple[str | None, tuple]:
        """beta 1 (EfficientNet's, LLaMA's SiLU) takes the float32 kernel, `swish_f32` (within
        3.35 ulps, 3x faster); another beta the float64 formula rounded once (beta x rounded to
        float32 would move exp(-beta x) by up to 88 ulps)."""
        beta = float(np.asarray(inputs[1], np.float64).reshape(())) if len(inputs) > 1 else 1.0
        return ("swish_f32", ()) if beta == 1.0 else ("swish", (beta,))

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        if len(inputs) == 2:
            x, beta = inputs
            if beta.dtype != x.dtype:
                raise FormatError(f"beta has element type {beta.dtype}, x has {x.dtype}; they must match", self.where)
            if beta.shape is not None and len(beta.shape) != 0:
                raise ShapeInferenceError(
                    f"beta must be a scalar (rank 0), got shape {format_shape(beta.shape)}", self.where
                )
        return super().infer(inputs[:1])

    def f(self, x: np.ndarray, extra: Sequence[np.ndarray]) -> np.ndarray:
        beta = np.asarray(extra[0], np.float64).reshape(()) if extra else 1.0
        return x / (1.0 + np.exp(-beta * x))


@register
class HSwish(Activation):
    """HSwish-4: x min(max(x + 3, 0), 6) / 6."""

    TYPE = "HSwish"
    VERSIONS = (4,)
    DTYPES = _NUMBERS
    INT = "rint"
    KERNEL = "hswish"

    def f(self, x: np.ndarray, extra: Sequence[np.ndarray]) -> np.ndarray:
        return x * np.clip(x + 3.0, 0.0, 6.0) / 6.0


@register
class HSigmoid(Activation):
    """HSigmoid-5: min(max(x + 3, 0), 6) / 6."""

    TYPE = "HSigmoid"
    VERSIONS = (5,)
    DTYPES = _NUMBERS
    INT = "rint"
    KERNEL = "hsigmoid"

    def f(self, x: np.ndarray, extra: Sequence[np.ndarray]) -> np.ndarray:
        return np.clip(x + 3.0, 0.0, 6.0) / 6.0


def _softplus(x: np.ndarray) -> np.ndarray:
    """ln(1 + e^x) without overflow (and 1.5x faster than numpy's logaddexp)."""
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0.0)


@register
class Mish(Activation):
    """Mish-4: x tanh(ln(1 + e^x))."""

    TYPE = "Mish"
    VERSIONS = (4,)

    def f(self, x: np.ndarray, extra: Sequence[np.ndarray]) -> np.ndarray:
        return x * np.tanh(_softplus(x))


# ln(largest finite value) in each type, rounded to it: the reference returns x from there on
_SOFTPLUS_FROM = {
    "f64": math.log(np.finfo(np.float64).max),
    "f32": float(np.float32(math.log(np.finfo(np.float32).max))),
    "f16": float(np.float16(math.log(np.finfo(np.float16).max))),
    "bf16": float(round_bf16(np.float32(math.log(3.3895313892515355e38)))),
}


@register
class SoftPlus(Activation):
    """SoftPlus-4: ln(1 + e^x), and x itself from ln(max of the type) on, as the reference (where
    the two agree after rounding anyway)."""

    TYPE = "SoftPlus"
    VERSIONS = (4,)

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        start = _SOFTPLUS_FROM[sig.ins[0]]
        return [self.evaluate(lambda v: np.where(v < start, _softplus(v), v), inputs[0], sig.outs[0])]


@register
class SoftSign(Activation):
    """SoftSign-9: x / (1 + |x|)."""

    TYPE = "SoftSign"
    VERSIONS = (9,)

    def f(self, x: np.ndarray, extra: Sequence[np.ndarray]) -> np.ndarray:
        return x / (1.0 + np.abs(x))


def _slope_shape(xs: Shape, ss: Shape) -> Shape:
    """The shape PRelu's slope takes against data of shape xs: a 1-D slope as long as the channel
    dim (dim 1, or dim 0 of 1-D data) lies along it; otherwise numpy's alignment, and the slope may
    only broadcast into xs, not widen it. Unknown dims pass (checked at run time)."""
    if xs is None or ss is None:
        return ss
    if len(ss) == 1 and xs:
        c = 1 if len(xs) > 1 else 0
        if xs[c] is not None and xs[c] == ss[0]:
            return tuple(ss[0] if i == c else 1 for i in range(len(xs)))
    bad = len(ss) > len(xs) or any(
        s is not None and d is not None and s != 1 and s != d for s, d in zip(reversed(ss), reversed(xs))
    )
    if bad:
        raise ShapeInferenceError(f"slope of shape {format_shape(ss)} does not broadcast into data {format_shape(xs)}")
    return ss


@register
class PRelu(Op):
    """PRelu-1: slope x where x < 0, else x (NaN, -0.0 and unsigned x stay); see `_slope_shape`
    for how the slope lies. A slope of another element type is converted to x's, as OpenVINO's CPU
    plugin does."""

    TYPE = "PRelu"
    VERSIONS = (1,)
    INPUTS = (2, 2)
    SAME_SHAPE = True

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        x, slope = inputs
        self.require_dtype(x, _NUMBERS, "data")
        self.require_dtype(slope, _NUMBERS, "slope")
        try:
            _slope_shape(x.shape, slope.shape)
        except ShapeInferenceError as e:
            raise ShapeInferenceError(e.message, self.where) from None
        return [TensorSpec(x.dtype, x.shape)]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        x, slope = inputs
        et = sig.outs[0]
        if sig.ins[1] != sig.ins[0]:
            slope = cast(slope, et)
        try:
            slope = slope.reshape(_slope_shape(x.shape, slope.shape))
        except ShapeInferenceError as e:
            raise ExecutionError(e.message, self.where) from None
        if x.dtype.kind == "u":
            return [x]
        if x.dtype == np.float16:
            x, slope = x.astype(np.float32), slope.astype(np.float32)
        return [finish(np.where(x < 0, x * slope, x), et)]


@register
class HardSigmoid(Activation):
    """HardSigmoid-1: max(0, min(1, alpha x + beta)) with C++'s std::min/max, so NaN gives 1 (the
    reference); alpha and beta are scalar inputs of x's type. Integers compute in integers."""

    TYPE = "HardSigmoid"
    DTYPES = _NUMBERS
    INPUTS = (3, 3)

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        x = inputs[0]
        for name, spec in zip(("alpha", "beta"), inputs[1:]):
            if spec.dtype != x.dtype:
                raise FormatError(f"{name} has element type {spec.dtype}, x has {x.dtype}; they must match", self.where)
            if spec.shape is not None and len(spec.shape) != 0:
                raise ShapeInferenceError(
                    f"{name} must be a scalar (rank 0), got shape {format_shape(spec.shape)}", self.where
                )
        return super().infer(inputs[:1])

    def f(self, x: np.ndarray, extra: Sequence[np.ndarray]) -> np.ndarray:
        alpha, beta = (np.asarray(v).reshape(()).astype(x.dtype) for v in extra)
        v = alpha * x + beta
        m = np.where(v < 1, v, x.dtype.type(1))
        return np.where(m > 0, m, x.dtype.type(0))


@register
class Selu(Activation):
    """Selu-1: lambda x where x > 0, else lambda alpha (e^x - 1); alpha and lambda are inputs of
    x's type, applied cyclically over the flat elements when they hold more than one value (the
    reference's alpha[i % size])."""

    TYPE = "Selu"
    INPUTS = (3, 3)

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        self.require_same_dtype(inputs)
        return super().infer(inputs[:1])

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        x, alpha, lam = inputs
        if alpha.size == 1 and lam.size == 1:
            return super().compute(inputs, sig)
        v = x.astype(np.float64)  # parameters cycle over the flat elements: no blocks
        return [finish(self.f(v, (_cyclic(alpha, x.shape), _cyclic(lam, x.shape))), sig.outs[0])]

    def f(self, x: np.ndarray, extra: Sequence[np.ndarray]) -> np.ndarray:
        alpha, lam = (np.asarray(v, np.float64) for v in extra)
        alpha, lam = (v.reshape(()) if v.size == 1 else v for v in (alpha, lam))
        # + 0.0: the reference's e^x - 1 is +0.0 at x = -0.0, expm1 gives -0.0
        return lam * np.where(x > 0, x, alpha * np.expm1(x) + 0.0)


def _cyclic(values: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """values[i % size] over the flat elements of a tensor of `shape`."""
    if values.size == 0:
        raise ExecutionError("Selu's alpha and lambda must not be empty")
    return np.resize(values.reshape(-1), int(np.prod(shape, dtype=np.int64))).reshape(shape)


class ThenRelu(Steady):
    """A fused step (`irexec/fusion.py`): a layer whose only reader is a ReLU, or a float Clamp
    with min <= max (MobileNet's ReLU6), applied in place on its fresh result: the values of
    the activation layer's np.maximum or np.clip (float32 by the element-wise kernels once
    loaded: `kernels.elementwise.relu_f32_inplace`), without its dispatch and its array. A
    producer with `compute_then` (a pointwise Convolution) applies it as it stores its result,
    where its kernel takes the case."""

    TYPE = "ReLU after"
    FOLDABLE = False

    def kernel_families(self) -> tuple[str, ...]:
        return self.op.kernel_families()

    def __init__(self, op: Op, sig: Sig, relu_layer: int, bounds: tuple[float, float] | None = None):
        self.op = op
        self.inner_sig = sig
        self.where = op.where
        self.layers = (relu_layer,)
        self.bounds = bounds  # a Clamp's (min, max); None: ReLU
        # Clamp.compute's float path: the bounds in the result's type (fused on float32 only)
        self.lo_hi = None if bounds is None else tuple(np.array(bounds).astype(np.float32))

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        key = (inputs[0].shape, inputs[0].dtype)
        relu = self.steady(key)  # the in-place kernel call, the producer's fused pass ruled out
        if relu is None:
            then = getattr(self.op, "compute_then", None)  # the activation in the producer's own pass
            done = None if then is None else then(inputs, self.inner_sig, self.lo_hi)
            if done is not None:
                return done
        (y,) = self.op.compute(inputs, self.inner_sig)
        root = array_root(y)
        # in place when the producer's result (often a reshaped view) is its own fresh memory
        fresh = (
            root.flags.owndata
            and root.flags.writeable
            and y.flags.writeable
            and all(array_root(a) is not root for a in inputs)
        )
        if fresh and relu is not None and relu(y):
            return [y]
        if fresh and relu_f32_inplace(y, self.lo_hi):
            self.settle(key, lambda: self._relu_call(inputs, y.shape))
            return [y]
        if self.lo_hi is not None:
            lo, hi = self.lo_hi
            return [np.clip(y, lo, hi, out=y) if fresh else np.clip(y, lo, hi)]
        zero = y.dtype.type(0)
        return [np.maximum(y, zero, out=y) if fresh else np.maximum(y, zero)]

    def _relu_call(self, inputs: list[np.ndarray], shape: tuple):
        """The in-place kernel call as the steady call, once the producer's own pass cannot take
        the activation for these operands: it has none, or its steady call is the usual path
        (`then_settled`); None until then (`Op.settle` asks again later)."""
        then, settled = getattr(self.op, "compute_then", None), getattr(self.op, "then_settled", None)
        if then is not None and (settled is None or not settled(inputs)):
            return None
        return relu_inplace_call(shape, self.lo_hi)
