"""Normalizations with OpenVINO semantics: Softmax-1/8, LogSoftmax-5, MVN-1/6,
GroupNormalization-12, NormalizeL2-1, BatchNormInference-1/5, LRN-1, GRN-1.

They are reductions under other names (OpenVINO writes LayerNorm as MVN-6 + Multiply + Add),
and follow the reduction family's rules (`kernels.normalize`): float64 accumulation, exact max,
NaN propagates, one rounding to the output type.

Where OpenVINO's CPU plugin departs from its reference (OpenVINO 2026.4), irexec follows the
reference:
- LRN over axes other than {1} (across channels) and {2, 3} (across the spatial dims of 4-D
  data): the CPU plugin refuses some ({3}: "Supports only across channels or across spatial
  reduction") and computes {1, 2, 3} as {2, 3} (the channel axis dropped, the scale still
  alpha / size^2). The reference sums over the box along every listed axis with scale
  alpha / size^len(axes); so does irexec. An even size covers size - 1 positions per axis in
  both (the box is i - (size-1)//2 .. i + (size-1)//2).
"""

from __future__ import annotations

import math

import numpy as np

from ..dtypes import FLOAT_TYPES, numpy_dtype
from ..errors import FormatError, ShapeInferenceError
from ..kernels.normalize import (
    NORMALIZE_COST,
    RMS_NORM_COST,
    SOFTMAX_COST,
    group_norm_out,
    mvn,
    normalize_last_out,
    rms_norm_out,
    rows_call,
    softmax,
    softmax_out,
)
from ..kernels.reduce import reduce_array
from ..shapes import TensorSpec, format_shape, normalize_axes
from .attrs import Attr
from .base import Op, Sig, Steady
from .common import check_axis, const_ints, finish
from .registry import register


class _SameShape(Op):
    SAME_SHAPE = True
    DTYPES = FLOAT_TYPES

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        self.require_dtype(inputs[0], self.DTYPES)
        return [TensorSpec(inputs[0].dtype, inputs[0].shape)]


@register
class Softmax1(_SameShape):
    """Softmax-1: `axis` must be non-negative."""

    KERNELS = ("normalize",)

    TYPE = "Softmax"
    VERSIONS = (1,)
    axis = Attr("int", 1)
    LOG = False

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        out = super().infer(inputs)
        if inputs[0].shape is not None:
            if self.VERSIONS == (1,) and self.axis < 0:
                raise ShapeInferenceError(f"Softmax-1 axis {self.axis} must be non-negative", self.where)
            check_axis(self, self.axis, len(inputs[0].shape))
        return out

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        x = inputs[0]
        key = (x.shape, x.dtype)
        call = self.steady(key)
        fast = None if call is None else call(x)
        if fast is not None:
            return [fast]
        a = check_axis(self, self.axis, x.ndim)
        fast = softmax_out(x, a, self.LOG, x.dtype) if sig.outs[0] in ("f32", "f64") else None
        if fast is not None:
            self.settle(key, lambda: rows_call("softmax_rows", x, x.shape[-1], x.dtype, SOFTMAX_COST, self.LOG))
            return [fast]
        return [finish(softmax(x, a, self.LOG, _rounded_type(sig.outs[0])), sig.outs[0])]


@register
class Softmax8(Softmax1):
    TYPE = "Softmax"
    VERSIONS = (8,)


@register
class LogSoftmax(Softmax8):
    TYPE = "LogSoftmax"
    VERSIONS = (5,)
    LOG = True


def _rounded_type(et: str):
    """The dtype the numpy paths round their float64 values into: the output's own for
    f16/f32/f64 (one numpy cast, as `finish` does), float64 for bf16 (finish rounds it)."""
    return numpy_dtype(et) if et in ("f16", "f32", "f64") else np.float64


def _trailing_kernel(
    x: np.ndarray, axes: tuple[int, ...], eps: float, inside: bool, normalize_variance: bool, sig: Sig
) -> np.ndarray | None:
    """MVN over trailing axes (LayerNorm's last axis, (C,H,W) of NCHW, ...) as rows of the
    kernels, when they pay; None otherwise."""
    k = x.ndim - len(axes)
    if not axes or tuple(sorted(axes)) != tuple(range(k, x.ndim)) or sig.outs[0] not in ("f32", "f64"):
        return None
    if x.size == 0:
        return None
    rows = x.reshape(x.shape[:k] + (-1,)) if k else x.reshape(1, -1)
    fast = normalize_last_out(rows, eps, inside, normalize_variance, x.dtype)
    return None if fast is None else fast.reshape(x.shape)


def _trailing_call(x: np.ndarray, axes: tuple[int, ...], eps: float, inside: bool, normalize_variance: bool):
    """`_trailing_kernel`'s kernel call for arrays of x's shape and type (`Op.steady`), or None."""
    last = math.prod(x.shape[x.ndim - len(axes) :])
    return rows_call("normalize_rows", x, last, x.dtype, NORMALIZE_COST, float(eps), inside, normalize_variance)


def _mvn_trailing(op, x: np.ndarray, key, axes_of, inside: bool, sig: Sig) -> tuple[np.ndarray | None, tuple]:
    """MVN over trailing axes by the kernels (their steady call once x's signature repeats), or
    None when the numpy path should run; and the axes (`axes_of()`, () when the steady call ran)."""
    call = op.steady(key)
    y = None if call is None else call(x)
    if y is not None:
        return y, ()
    axes = axes_of()
    y = _trailing_kernel(x, axes, op.eps, inside, op.normalize_variance, sig)
    if y is not None:
        op.settle(key, lambda: _trailing_call(x, axes, op.eps, inside, op.normalize_variance))
    return y, axes


@register
class MVN1(_SameShape):
    """MVN-0 (opset2): over dims 1.. (across_channels) or 2.. (or `reduction_axes`); eps inside the sqrt."""

    KERNELS = ("normalize",)

    TYPE = "MVN"
    VERSIONS = (2,)  # MVN-0, in opset2: OpenVINO writes it as opset2
    across_channels = Attr("bool", False)
    normalize_variance = Attr("bool", True)
    eps = Attr("float")
    reduction_axes = Attr("ints", None)

    def _axes(self, rank: int) -> tuple[int, ...]:
        if self.reduction_axes is not None:
            return normalize_axes(self.reduction_axes, rank)
        return tuple(range(1 if self.across_channels else 2, rank))

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        x = inputs[0]
        fast, axes = _mvn_trailing(self, x, (x.shape, x.dtype), lambda: self._axes(x.ndim), True, sig)
        if fast is not None:
            return [fast]
        out = mvn(x, axes, self.normalize_variance, self.eps, True, _rounded_type(sig.outs[0]))
        return [finish(out, sig.outs[0])]


@register
class MVN6(_SameShape):
    """MVN-6: over the axes input; eps_mode inside_sqrt or outside_sqrt."""

    KERNELS = ("normalize",)

    TYPE = "MVN"
    VERSIONS = (6,)
    INPUTS = (2, 2)
    normalize_variance = Attr("bool")
    eps = Attr("float")
    eps_mode = Attr("str", choices=("inside_sqrt", "outside_sqrt"))

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        out = super().infer(inputs[:1])
        axes = const_ints(self, inputs[1], "axes")
        if axes is not None and inputs[0].shape is not None:
            normalize_axes(axes, len(inputs[0].shape))
        return out

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        x, axes = inputs
        key = (x.ndim, axes.dtype.char, axes.tobytes())
        inside = self.eps_mode == "inside_sqrt"

        def axes_of() -> tuple[int, ...]:
            return self.remembered("axes", key, lambda: normalize_axes(axes, x.ndim))

        fast, norm = _mvn_trailing(self, x, (x.shape, x.dtype, key), axes_of, inside, sig)
        if fast is not None:
            return [fast]
        out = mvn(x, norm, self.normalize_variance, self.eps, inside, _rounded_type(sig.outs[0]))
        return [finish(out, sig.outs[0])]


@register
class GroupNormalization(_SameShape):
    """GroupNormalization-12: (N, C, ...) normalized per group of C / num_groups channels,
    then scale[c] * y + bias[c]."""

    KERNELS = ("normalize",)

    TYPE = "GroupNormalization"
    VERSIONS = (12,)
    INPUTS = (3, 3)
    num_groups = Attr("int")
    epsilon = Attr("float")

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        x = inputs[0]
        if self.num_groups < 1:
            raise FormatError(f"num_groups={self.num_groups} must be positive", self.where)
        if x.shape is not None and len(x.shape) >= 2 and x.shape[1] is not None and x.shape[1] % self.num_groups:
            raise ShapeInferenceError(f"{x.shape[1]} channels do not split into {self.num_groups} groups", self.where)
        return super().infer(inputs[:1])

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        x, scale, bias = inputs
        n, c = x.shape[0], x.shape[1]
        if sig.outs[0] in ("f32", "f64") and x.size:
            fast = group_norm_out(x, self.num_groups, self.epsilon, scale, bias, x.dtype)
            if fast is not None:
                return [fast]
        g = x.reshape(n, self.num_groups, -1)
        y = mvn(g, (2,), True, self.epsilon, True).reshape(x.shape)
        shape = (1, c) + (1,) * (x.ndim - 2)
        y = y * scale.astype(np.float64).reshape(shape) + bias.astype(np.float64).reshape(shape)
        return [finish(y, sig.outs[0])]


@register
class NormalizeL2(_SameShape):
    """NormalizeL2-1: x / sqrt(sum over axes of x^2 (+ or max) eps)."""

    TYPE = "NormalizeL2"
    VERSIONS = (1,)
    INPUTS = (2, 2)
    eps = Attr("float")
    eps_mode = Attr("str", choices=("add", "max"))

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        x, axes = inputs
        norm = normalize_axes(axes, x.ndim)
        v = x.astype(np.float64)
        s = np.sum(v * v, axis=norm, keepdims=True) if norm else v * v
        s = s + self.eps if self.eps_mode == "add" else np.maximum(s, self.eps)
        return [finish(v / np.sqrt(s), sig.outs[0])]


class _BatchNorm(_SameShape):
    INPUTS = (5, 5)
    epsilon = Attr("float")
    ORDER = (0, 1, 2, 3, 4)  # positions of data, gamma, beta, mean, variance

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        return super().infer([inputs[self.ORDER[0]]])

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        x, gamma, beta, mean, var = (inputs[i] for i in self.ORDER)
        shape = (1, -1) + (1,) * (x.ndim - 2)
        v = [np.asarray(t, np.float64).reshape(shape) for t in (gamma, beta, mean, var)]
        y = v[0] * (x - v[2]) / np.sqrt(v[3] + self.epsilon) + v[1]
        return [finish(y, sig.outs[0])]


@register
class BatchNormInference5(_BatchNorm):
    """BatchNormInference-5: inputs data, gamma, beta, mean, variance; channels on dim 1."""

    TYPE = "BatchNormInference"
    VERSIONS = (5,)


@register
class BatchNormInference1(_BatchNorm):
    """BatchNormInference-1: inputs gamma, beta, data, mean, variance."""

    TYPE = "BatchNormInference"
    VERSIONS = (1,)
    ORDER = (2, 0, 1, 3, 4)


class RMSNorm(Steady):
    """A fused step (`irexec/fusion.py`): x (..., n) float32 -> x / sqrt(mean(x^2, last axis) +
    eps), OpenVINO's Power -> ReduceMean -> Add -> Sqrt -> Divide -> Multiply chain computed as
    the six layers compute it, rounding where they round (x*x, the mean, + eps, sqrt, 1/s and
    x*d each to float32; the mean's sum in float64), by the normalization family's kernel or
    the same numpy ops."""

    TYPE = "RMSNorm (fused)"
    FOLDABLE = False
    KERNELS = ("normalize", "reduce")

    def kernel_families(self) -> tuple[str, ...]:
        return self.KERNELS

    def __init__(self, eps: np.float32, where: str, layers: tuple[int, ...]):
        self.eps = np.float32(eps)
        self.where = where
        self.layers = layers  # the fused layers' ids, in order

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        x = inputs[0]
        key = (x.shape, x.dtype)
        call = self.steady(key)
        y = None if call is None else call(x)
        if y is not None:
            return [y]
        y = rms_norm_out(x, self.eps)
        if y is None:
            return [self._numpy(x)]
        self.settle(key, lambda: rows_call("rms_norm_rows", x, x.shape[-1], x.dtype, RMS_NORM_COST, self.eps))
        return [y]

    def _numpy(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            p = x * x
            m = reduce_array(p, (x.ndim - 1,), "mean", True, "f32") if x.ndim else p
            d = np.float32(1) / np.sqrt(m + self.eps)
            return x * d


def _box_sums(v: np.ndarray, axes: tuple[int, ...], half: int) -> np.ndarray:
    """The sum of v over the box [i - half, i + half] (clipped to the tensor) along each of
    `axes`, for every position: a running sum per axis, differenced."""
    for a in axes:
        n = v.shape[a]
        run = np.concatenate([np.zeros_like(np.take(v, [0], axis=a)), np.cumsum(v, axis=a)], axis=a)
        i = np.arange(n)
        v = np.take(run, np.minimum(i + half + 1, n), axis=a) - np.take(run, np.maximum(i - half, 0), axis=a)
    return v


@register
class LRN(_SameShape):
    """LRN-1: x / (bias + alpha / size^len(axes) * sum of x^2 over the box of `size` around each
    position along the axes)^beta, as OpenVINO's reference computes it: the box runs from
    i - (size-1)//2 to i + (size-1)//2 (so an even size covers size - 1 positions), clipped to
    the tensor. float64, rounded once."""

    TYPE = "LRN"
    VERSIONS = (1,)
    INPUTS = (2, 2)
    alpha = Attr("float")
    beta = Attr("float")
    bias = Attr("float")
    size = Attr("int")

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        if self.size <= 0:
            raise FormatError(f"size={self.size} must be positive", self.where)
        axes = const_ints(self, inputs[1], "axes")
        x = inputs[0]
        if inputs[1].shape is not None and len(inputs[1].shape) != 1:
            raise ShapeInferenceError(f"axes has shape {format_shape(inputs[1].shape)}; it must be 1-D", self.where)
        if axes is not None and x.shape is not None:
            self._axes(axes, len(x.shape))
        return super().infer(inputs)

    def _axes(self, axes: list[int], rank: int) -> tuple[int, ...]:
        for a in axes:
            if not 0 <= a < rank:
                raise ShapeInferenceError(f"axis {a} is out of the range [0, {rank - 1}]", self.where)
        if len(set(axes)) != len(axes):
            raise ShapeInferenceError(f"axes {axes} repeat an axis", self.where)
        return tuple(sorted(axes))

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        x, axes = inputs
        norm = self._axes([int(a) for a in axes.reshape(-1)], x.ndim)
        v = x.astype(np.float64)
        sums = _box_sums(v * v, norm, (self.size - 1) // 2)
        scale = self.alpha / float(self.size) ** len(norm)
        with np.errstate(all="ignore"):
            return [finish(v / (self.bias + scale * sums) ** self.beta, sig.outs[0])]


@register
class GRN(_SameShape):
    """GRN-1: x / sqrt(sum over the channels (dim 1) of x^2 + bias), data of rank 2 to 4."""

    TYPE = "GRN"
    VERSIONS = (1,)
    bias = Attr("float")

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        x = inputs[0]
        if x.shape is not None and not 2 <= len(x.shape) <= 4:
            raise ShapeInferenceError(f"data has rank {len(x.shape)}; GRN takes rank 2, 3 or 4", self.where)
        return super().infer(inputs)

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        v = inputs[0].astype(np.float64)
        s = np.sum(v * v, axis=1, keepdims=True) + self.bias
        with np.errstate(all="ignore"):
            return [finish(v / np.sqrt(s), sig.outs[0])]
