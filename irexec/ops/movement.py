"""Data movement with OpenVINO semantics: ops that only rearrange elements (Reshape, Squeeze,
Unsqueeze, ...). Shapes are checked by pure rules; computes return views where numpy can.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import FormatError, ShapeInferenceError
from ..shapes import TensorSpec, format_shape, normalize_axes
from .attrs import Attr
from .base import Op
from .reduce import AXES_TYPES
from .registry import parse_version, register


def _axes_value(op: Op, spec: TensorSpec):
    if spec.dtype not in AXES_TYPES:
        raise FormatError(f"axes have element type {spec.dtype}; an integer type is required", op.where)
    if spec.rank is not None and spec.rank > 1:
        raise ShapeInferenceError(f"axes must be a scalar or 1-D, got rank {spec.rank}", op.where)
    return spec.value


@register
class Squeeze(Op):
    """Remove size-1 dims: the listed axes, or every size-1 dim when there is no axes input."""

    TYPE = "Squeeze"
    VERSIONS = (1, 15)
    INPUTS = (1, 2)
    allow_axis_skip = Attr("bool", False)

    def _kept(self, spec: TensorSpec, axes_value) -> list[int]:
        """The dims that stay. An axis whose dim cannot be 1 is ignored and the dim copied as is
        (OpenVINO Squeeze-1 and Squeeze-15 since 2024.3); a dynamic dim at a listed axis counts
        as 1 unless its interval excludes 1."""
        if axes_value is None:
            return [i for i, d in enumerate(spec.shape) if d != 1]
        gone = {i for i in normalize_axes(axes_value, len(spec.shape)) if spec.may_be_one(i)}
        return [i for i in range(len(spec.shape)) if i not in gone]

    def _out(self, data: TensorSpec, axes_value) -> TensorSpec:
        kept = self._kept(data, axes_value)
        bounds = None if data.bounds is None else tuple(data.bounds[i] for i in kept)
        return TensorSpec(data.dtype, tuple(data.shape[i] for i in kept), bounds=bounds)

    def infer(self, inputs):
        data = inputs[0]
        if data.shape is None:
            return [TensorSpec(data.dtype, None)]
        if len(inputs) == 1:
            if any(d is None for d in data.shape):
                return [TensorSpec(data.dtype, None)]
            return [self._out(data, None)]
        axes = _axes_value(self, inputs[1])
        if axes is None:
            # One runtime axis (OpenVINO's rule): nothing can be squeezed when no dim may be 1;
            # else Squeeze-1 removes one dim (rank - 1, all dynamic) and Squeeze-15 gives a
            # dynamic rank.
            ashape = inputs[1].shape
            if data.shape and ashape is not None and all(d is not None for d in ashape) and math.prod(ashape) == 1:
                if not any(data.may_be_one(i) for i in range(len(data.shape))):
                    return [TensorSpec(data.dtype, data.shape)]
                if (parse_version(self.layer.version) or 0) < 15:
                    return [TensorSpec(data.dtype, (None,) * (len(data.shape) - 1))]
            return [TensorSpec(data.dtype, None)]
        if np.asarray(axes).size == 0:
            return [TensorSpec(data.dtype, None) if any(d is None for d in data.shape) else self._out(data, None)]
        if self.allow_axis_skip and any(
            data.shape[a] is None for a in normalize_axes(axes, len(data.shape))
        ):
            return [TensorSpec(data.dtype, None)]
        return [self._out(data, axes)]

    def compute(self, inputs, sig):
        data = inputs[0]
        axes = None if len(inputs) == 1 or inputs[1].size == 0 else inputs[1]
        kept = self._kept(TensorSpec("f32", data.shape), axes)
        return [data.reshape(tuple(data.shape[i] for i in kept))]


@register
class Unsqueeze(Op):
    """Insert size-1 dims at the listed axes (normalized against the output rank)."""

    TYPE = "Unsqueeze"
    VERSIONS = (1,)
    INPUTS = (2, 2)

    def _unsqueezed(self, shape, axes_value):
        out_rank = len(shape) + len(set(np.asarray(axes_value).reshape(-1).tolist()))
        axes = normalize_axes(axes_value, out_rank)
        if len(axes) + len(shape) != out_rank:
            raise ShapeInferenceError(f"axes {np.asarray(axes_value).tolist()} repeat an axis", self.where)
        it = iter(shape)
        return tuple(1 if i in axes else next(it) for i in range(out_rank))

    def infer(self, inputs):
        data = inputs[0]
        axes = _axes_value(self, inputs[1])
        if data.shape is None or axes is None:
            return [TensorSpec(data.dtype, None)]
        return [TensorSpec(data.dtype, self._unsqueezed(data.shape, axes))]

    def compute(self, inputs, sig):
        return [inputs[0].reshape(self._unsqueezed(inputs[0].shape, inputs[1]))]


@register
class Reshape(Op):
    """Reshape to input 1's value: -1 is inferred, 0 copies the input dim when special_zero."""

    TYPE = "Reshape"
    VERSIONS = (1,)
    INPUTS = (2, 2)
    special_zero = Attr("bool", False)

    def _target(self, shape, target):
        t = [int(v) for v in np.asarray(target).reshape(-1).tolist()]
        out: list = []
        minus = [i for i, v in enumerate(t) if v == -1]
        if len(minus) > 1:
            raise ShapeInferenceError(f"target shape {t} has more than one -1", self.where)
        for i, v in enumerate(t):
            if v == 0 and self.special_zero:
                if shape is None or i >= len(shape):
                    if shape is None:
                        out.append(None)
                        continue
                    raise ShapeInferenceError(f"target shape {t}: 0 at {i} copies a dim the input lacks", self.where)
                out.append(shape[i])
            elif v < -1:
                raise ShapeInferenceError(f"target shape {t} has negative dim {v}", self.where)
            else:
                out.append(v)
        known_in = None if shape is None or any(d is None for d in shape) else math.prod(shape)
        if minus:
            i = minus[0]
            rest = [d for j, d in enumerate(out) if j != i]
            if known_in is None or any(d is None for d in rest):
                out[i] = None
            else:
                p = math.prod(rest)
                if p == 0 or known_in % p:
                    raise ShapeInferenceError(
                        f"cannot reshape {format_shape(shape)} to {t}", self.where
                    )
                out[i] = known_in // p
        elif known_in is not None and all(d is not None for d in out) and math.prod(out) != known_in:
            raise ShapeInferenceError(f"cannot reshape {format_shape(shape)} to {t}", self.where)
        return tuple(out)

    def infer(self, inputs):
        data, target = inputs
        tv = _axes_value(self, target)
        if tv is None and target.partial is not None and not self.special_zero:
            # Elements known while others are not (ShapeOf of a dynamic shape): known elements
            # are dims, -1 or unknown ones are dynamic.
            return [TensorSpec(data.dtype, tuple(None if v is None or v == -1 else v for v in target.partial))]
        if tv is None:
            if target.shape is not None and len(target.shape) == 1 and target.shape[0] is not None:
                return [TensorSpec(data.dtype, (None,) * target.shape[0])]
            return [TensorSpec(data.dtype, None)]
        return [TensorSpec(data.dtype, self._target(data.shape, tv))]

    def compute(self, inputs, sig):
        data, target = inputs
        return [data.reshape(self._target(data.shape, target))]
