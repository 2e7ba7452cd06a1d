"""Activations with OpenVINO semantics, element-wise on numpy: Relu, Clamp, Elu, Gelu-2/7,
Sigmoid, Tanh, Swish-4, HSwish-4, HSigmoid-5, Mish-4, SoftPlus-4, PRelu-1, HardSigmoid-1,
Selu-1, SoftSign-9.

Float math runs in the input's type (float16 in float32), except where float32 would lose
accuracy: Gelu's erf runs in float64. Results are rounded once to the output type.
"""

from __future__ import annotations

import math

import numpy as np

from ..dtypes import FLOAT_TYPES, NUMERIC_TYPES
from ..errors import FormatError, ShapeInferenceError
from ..shapes import TensorSpec
from ._math import erf
from .attrs import Attr
from .base import Op
from .elementwise import _finish
from .registry import register


class Activation(Op):
    """One input, same shape and type out; subclasses define `f(x)` on a float array."""

    VERSIONS = (1,)
    SAME_SHAPE = True
    DTYPES = FLOAT_TYPES

    def infer(self, inputs):
        self.require_dtype(inputs[0], self.DTYPES)
        return [TensorSpec(inputs[0].dtype, inputs[0].shape)]

    def compute(self, inputs, sig):
        x = inputs[0]
        if x.dtype == np.float16:
            x = x.astype(np.float32)
        return [_finish(np.asarray(self.f(x, inputs[1:])), sig.outs[0])]

    def f(self, x, extra):
        raise NotImplementedError


@register
class Relu(Activation):
    TYPE = "ReLU"
    DTYPES = NUMERIC_TYPES

    def compute(self, inputs, sig):
        x = inputs[0]
        return [np.maximum(x, x.dtype.type(0))]


@register
class Clamp(Activation):
    """Clamp-1: min(max(x, min), max); for integers the bounds are rounded inward (ceil of min,
    floor of max), as OpenVINO's reference does."""

    TYPE = "Clamp"
    DTYPES = NUMERIC_TYPES
    min = Attr("float")
    max = Attr("float")

    def __init__(self, layer, context=None):
        super().__init__(layer, context)
        if self.min > self.max:
            raise FormatError(f"min {self.min} is above max {self.max}", self.where)

    def compute(self, inputs, sig):
        x = inputs[0]
        if x.dtype.kind in "iu":
            info = np.iinfo(x.dtype)
            lo = max(info.min, math.ceil(self.min)) if math.isfinite(self.min) else info.min
            hi = min(info.max, math.floor(self.max)) if math.isfinite(self.max) else info.max
            return [np.clip(x, x.dtype.type(lo), x.dtype.type(hi))]
        lo = np.float32(self.min) if x.dtype != np.float64 else self.min
        hi = np.float32(self.max) if x.dtype != np.float64 else self.max
        return [_finish(np.clip(x, lo, hi).astype(x.dtype), sig.outs[0])]


@register
class Elu(Activation):
    TYPE = "Elu"
    alpha = Attr("float")

    def f(self, x, extra):
        return np.where(x > 0, x, self.alpha * np.expm1(np.minimum(x, 0)))


def _gelu_erf(x):
    v = x.astype(np.float64)
    return 0.5 * v * (1.0 + erf(v / math.sqrt(2.0), exact=x.dtype == np.float64))


def _gelu_tanh(x):
    v = x.astype(np.float64)
    return 0.5 * v * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (v + 0.044715 * v**3)))


@register
class Gelu2(Activation):
    """Gelu-2: x * Phi(x) with the exact (erf) form."""

    TYPE = "Gelu"
    VERSIONS = (2,)

    def f(self, x, extra):
        return _gelu_erf(x)


@register
class Gelu7(Activation):
    """Gelu-7: approximation_mode erf (exact) or tanh."""

    TYPE = "Gelu"
    VERSIONS = (7,)
    approximation_mode = Attr("str", "erf", choices=("erf", "tanh"))

    def f(self, x, extra):
        return _gelu_erf(x) if self.approximation_mode == "erf" else _gelu_tanh(x)


def _sigmoid(x):
    # exp of -|x| never overflows; the two halves are the same function
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


@register
class Sigmoid(Activation):
    TYPE = "Sigmoid"

    def f(self, x, extra):
        return _sigmoid(x)


@register
class Tanh(Activation):
    TYPE = "Tanh"
    DTYPES = NUMERIC_TYPES

    def compute(self, inputs, sig):
        x = inputs[0]
        if x.dtype.kind in "iu":  # OpenVINO rounds the float result for integer types
            return [np.rint(np.tanh(x.astype(np.float64))).astype(x.dtype)]
        return super().compute(inputs, sig)

    def f(self, x, extra):
        return np.tanh(x)


@register
class Swish(Activation):
    """Swish-4: x * sigmoid(beta * x), beta from the optional second input (default 1)."""

    TYPE = "Swish"
    VERSIONS = (4,)
    INPUTS = (1, 2)

    def infer(self, inputs):
        if len(inputs) == 2 and inputs[1].shape is not None and any(d not in (1, None) for d in inputs[1].shape):
            raise ShapeInferenceError("beta must be a scalar", self.where)
        return super().infer(inputs[:1])

    def f(self, x, extra):
        beta = x.dtype.type(np.asarray(extra[0]).reshape(-1)[0]) if extra else x.dtype.type(1)
        return x * _sigmoid(beta * x)


@register
class HSwish(Activation):
    TYPE = "HSwish"
    VERSIONS = (4,)

    def f(self, x, extra):
        return x * np.clip(x + 3, 0, 6) / 6


@register
class HSigmoid(Activation):
    TYPE = "HSigmoid"
    VERSIONS = (5,)

    def f(self, x, extra):
        return np.clip(x + 3, 0, 6) / 6


@register
class Mish(Activation):
    TYPE = "Mish"
    VERSIONS = (4,)

    def f(self, x, extra):
        v = x.astype(np.float64)
        return v * np.tanh(np.logaddexp(0.0, v))


@register
class SoftPlus(Activation):
    """SoftPlus-4: ln(1 + e^x), x itself above the threshold where that is exact in the type."""

    TYPE = "SoftPlus"
    VERSIONS = (4,)

    def f(self, x, extra):
        threshold = {np.dtype(np.float32): 20.0, np.dtype(np.float64): 40.0}.get(x.dtype, 20.0)
        return np.where(x > threshold, x, np.logaddexp(0, x))


@register
class SoftSign(Activation):
    TYPE = "SoftSign"
    VERSIONS = (9,)

    def f(self, x, extra):
        return x / (1 + np.abs(x))


@register
class PRelu(Op):
    """PRelu-1: x where x >= 0, slope * x elsewhere. A 1-D slope whose length is the channel
    count (dim 1) applies per channel; otherwise it broadcasts numpy-style."""

    TYPE = "PRelu"
    VERSIONS = (1,)
    INPUTS = (2, 2)
    SAME_SHAPE = True

    def infer(self, inputs):
        x, slope = inputs
        self.require_dtype(x, NUMERIC_TYPES)
        return [TensorSpec(x.dtype, x.shape)]

    def compute(self, inputs, sig):
        x, slope = inputs
        if slope.ndim == 1 and x.ndim >= 2 and slope.size == x.shape[1] and slope.size != x.shape[-1]:
            slope = slope.reshape((1, -1) + (1,) * (x.ndim - 2))
        return [_finish(np.where(x < 0, x * slope, x), sig.outs[0])]


@register
class HardSigmoid(Activation):
    """HardSigmoid-1: max(0, min(1, alpha * x + beta)), alpha and beta as scalar inputs."""

    TYPE = "HardSigmoid"
    INPUTS = (3, 3)

    def f(self, x, extra):
        alpha, beta = (np.asarray(v).reshape(()) for v in extra)
        return np.clip(alpha * x + beta, 0, 1)


@register
class Selu(Activation):
    """Selu-1: lambda * (x if x > 0 else alpha * (e^x - 1)), alpha and lambda as inputs."""

    TYPE = "Selu"
    INPUTS = (3, 3)

    def f(self, x, extra):
        alpha, lam = (np.asarray(v, np.float64).reshape(()) for v in extra)
        v = x.astype(np.float64)
        return lam * np.where(v > 0, v, alpha * np.expm1(np.minimum(v, 0)))
