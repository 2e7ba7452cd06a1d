"""Graph plumbing ops: Parameter, Const, Result, Convert, ConvertLike, Squeeze, Unsqueeze, Reshape,
ShapeOf, Range-4, Identity-16. All with OpenVINO semantics; all fold when their inputs are constant.
"""

from __future__ import annotations

import math

import numpy as np

from ..dtypes import ELEMENT_TYPES, FLOAT_TYPES, bits, cast, numpy_dtype
from ..errors import FormatError, ShapeInferenceError
from ..shapes import (
    TensorSpec,
    format_shape,
    normalize_axes,
    parse_partial_shape,
    parse_static_shape,
)
from .base import Attr, Op
from .reduce import AXES_TYPES
from .registry import parse_version, register


@register
class Parameter(Op):
    """A model input: `shape` is a partial shape ('?', 'a..b', '...'), `element_type` its type."""

    TYPE = "Parameter"
    VERSIONS = (1,)
    INPUTS = (0, 0)
    ATTRS = {"shape": Attr("str"), "element_type": Attr("etype")}
    FOLDABLE = False

    def __init__(self, layer, context=None):
        super().__init__(layer, context)
        try:
            self.bounds = parse_partial_shape(self.attrs["shape"])
        except FormatError as e:
            raise FormatError(e.message, self.where) from None
        if self.attrs["element_type"] in ("u1", "u4", "i4"):
            raise FormatError(f"Parameter of element type {self.attrs['element_type']} is not supported", self.where)

    def infer(self, inputs):
        if self.bounds is None:
            return [TensorSpec(self.attrs["element_type"], None)]
        shape = tuple(b.static for b in self.bounds)
        bounds = tuple(None if b.static is not None or (b.lo == 0 and b.hi is None) else b for b in self.bounds)
        return [TensorSpec(self.attrs["element_type"], shape, bounds=bounds if any(bounds) else None)]


@register
class Const(Op):
    """A constant read from the .bin: element_type, shape, offset, size (all mandatory)."""

    TYPE = "Const"
    VERSIONS = (1,)
    INPUTS = (0, 0)
    ATTRS = {
        "element_type": Attr("etype"),
        "shape": Attr("str"),
        "offset": Attr("int"),
        "size": Attr("int"),
    }

    def infer(self, inputs):
        try:
            shape = parse_static_shape(self.attrs["shape"])
        except FormatError as e:
            raise FormatError(e.message, self.where) from None
        et = self.attrs["element_type"]
        limits = self.context.limits
        limits.check_tensor(shape, bits(et) / 8, "Const", self.where)
        value = self.context.weights.read(et, shape, self.attrs["offset"], self.attrs["size"], self.where)
        return [TensorSpec(et, shape, value)]


@register
class Result(Op):
    """A model output: its value is its input's."""

    TYPE = "Result"
    SAME_SHAPE = True
    VERSIONS = (1,)
    OUTPUTS = 0
    FOLDABLE = False

    def infer(self, inputs):
        return [TensorSpec(inputs[0].dtype, inputs[0].shape)]

    def compute(self, inputs):
        return [inputs[0]]


@register
class Identity(Op):
    TYPE = "Identity"
    SAME_SHAPE = True
    VERSIONS = (16,)

    def infer(self, inputs):
        return [TensorSpec(inputs[0].dtype, inputs[0].shape)]

    def compute(self, inputs):
        return [inputs[0]]


@register
class Convert(Op):
    """Element type conversion; float -> integer truncates toward zero."""

    TYPE = "Convert"
    SAME_SHAPE = True
    VERSIONS = (1,)
    ATTRS = {"destination_type": Attr("etype")}

    def infer(self, inputs):
        et = self.attrs["destination_type"]
        if et in ("u1", "u4", "i4"):
            raise FormatError(f"Convert to {et} is not supported", self.where)
        return [TensorSpec(et, inputs[0].shape)]

    def compute(self, inputs):
        return [cast(inputs[0], self.out_types[0])]


@register
class ConvertLike(Op):
    TYPE = "ConvertLike"
    SAME_SHAPE = True
    VERSIONS = (1,)
    INPUTS = (2, 2)

    def infer(self, inputs):
        return [TensorSpec(inputs[1].dtype, inputs[0].shape)]

    def compute(self, inputs):
        return [cast(inputs[0], self.out_types[0])]


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
    ATTRS = {"allow_axis_skip": Attr("bool", False)}

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
        if self.attrs["allow_axis_skip"] and any(
            data.shape[a] is None for a in normalize_axes(axes, len(data.shape))
        ):
            return [TensorSpec(data.dtype, None)]
        return [self._out(data, axes)]

    def compute(self, inputs):
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

    def compute(self, inputs):
        return [inputs[0].reshape(self._unsqueezed(inputs[0].shape, inputs[1]))]


@register
class Reshape(Op):
    """Reshape to input 1's value: -1 is inferred, 0 copies the input dim when special_zero."""

    TYPE = "Reshape"
    VERSIONS = (1,)
    INPUTS = (2, 2)
    ATTRS = {"special_zero": Attr("bool", False)}

    def _target(self, shape, target):
        t = [int(v) for v in np.asarray(target).reshape(-1).tolist()]
        out: list = []
        minus = [i for i, v in enumerate(t) if v == -1]
        if len(minus) > 1:
            raise ShapeInferenceError(f"target shape {t} has more than one -1", self.where)
        for i, v in enumerate(t):
            if v == 0 and self.attrs["special_zero"]:
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
        if tv is None and target.partial is not None and not self.attrs["special_zero"]:
            # Elements known while others are not (ShapeOf of a dynamic shape): known elements
            # are dims, -1 or unknown ones are dynamic.
            return [TensorSpec(data.dtype, tuple(None if v is None or v == -1 else v for v in target.partial))]
        if tv is None:
            if target.shape is not None and len(target.shape) == 1 and target.shape[0] is not None:
                return [TensorSpec(data.dtype, (None,) * target.shape[0])]
            return [TensorSpec(data.dtype, None)]
        return [TensorSpec(data.dtype, self._target(data.shape, tv))]

    def compute(self, inputs):
        data, target = inputs
        return [data.reshape(self._target(data.shape, target))]


@register
class ShapeOf(Op):
    """The input's shape as a 1-D tensor (opset1: i64; opset3: `output_type`)."""

    TYPE = "ShapeOf"
    VERSIONS = (1, 3)
    ATTRS = {"output_type": Attr("etype", "i64")}

    def __init__(self, layer, context=None):
        super().__init__(layer, context)
        if self.attrs["output_type"] not in ("i32", "i64"):
            raise FormatError(f"output_type={self.attrs['output_type']} must be i32 or i64", self.where)

    def infer(self, inputs):
        et = self.attrs["output_type"]
        shape = inputs[0].shape
        if shape is None:
            return [TensorSpec(et, (None,))]
        if all(d is not None for d in shape):
            return [TensorSpec(et, (len(shape),), np.array(shape, numpy_dtype(et)))]
        return [TensorSpec(et, (len(shape),), partial=tuple(shape))]

    def compute(self, inputs):
        return [np.array(inputs[0].shape, numpy_dtype(self.out_types[0]))]


@register
class Range(Op):
    """Range-4: start, stop, step scalars; length max(ceil((stop - start) / step), 0)."""

    TYPE = "Range"
    VERSIONS = (4,)
    INPUTS = (3, 3)
    ATTRS = {"output_type": Attr("etype")}

    def infer(self, inputs):
        et = self.attrs["output_type"]
        if et == "boolean" or et not in ELEMENT_TYPES:
            raise FormatError(f"output_type={et} is not numeric", self.where)
        for i, s in enumerate(inputs):
            if s.rank not in (None, 0):
                raise ShapeInferenceError(f"input {i} must be a scalar, got {format_shape(s.shape)}", self.where)
        if all(s.value is not None for s in inputs):
            n = self._length(*(s.value for s in inputs))
            self.context.limits.check_tensor((n,), bits(et) / 8, "Range output", self.where)
            return [TensorSpec(et, (n,))]
        return [TensorSpec(et, (None,))]

    def _length(self, start, stop, step) -> int:
        et = self.attrs["output_type"]
        vals = [np.asarray(v).reshape(()).item() for v in (start, stop, step)]
        if et not in FLOAT_TYPES:
            vals = [int(v) for v in vals]
        start, stop, step = vals
        if step == 0:
            raise ShapeInferenceError("step is 0", self.where)
        n = math.ceil((stop - start) / step)
        return max(int(n), 0)

    def compute(self, inputs):
        n = self._length(*inputs)
        et = self.out_types[0]
        self.check_output((n,), et)
        start, _, step = (np.asarray(v).reshape(()).item() for v in inputs)
        if et not in FLOAT_TYPES:
            start, step = int(start), int(step)
        values = start + step * np.arange(n, dtype=np.float64 if et in FLOAT_TYPES else np.int64)
        return [cast(values, et)]
