"""The OpenVINO reduction family (opset1 Reduce{Mean,Sum,Prod,Max,Min,LogicalAnd,LogicalOr}, opset4
Reduce{L1,L2}): one base class holding the axes rule, one small subclass per op.

SPEC §2.1: negative axes + rank, duplicates once, empty axes = identity; axes from a runtime
input give partially dynamic shapes at load and the real shape at run time.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import COMPUTE_TYPES, INT_TYPES, SUB_BYTE_TYPES
from ..errors import ShapeInferenceError, UnsupportedDtypeError
from ..kernels.plan import reduce_array
from ..shapes import TensorSpec, normalize_axes
from .base import Attr, Op
from .registry import register

AXES_TYPES = INT_TYPES - SUB_BYTE_TYPES


def reduced_shape(shape, axes, keep_dims: bool):
    return tuple(1 if i in axes else d for i, d in enumerate(shape) if keep_dims or i not in axes)


class ReduceBase(Op):
    """Shared axes logic for the OpenVINO reductions; subclasses set OP and DTYPES."""

    OP = ""
    DTYPES = COMPUTE_TYPES
    VERSIONS = (1,)
    INPUTS = (2, 2)
    ATTRS = {"keep_dims": Attr("bool", False)}

    def check_axes_spec(self, axes: TensorSpec) -> None:
        if axes.dtype not in AXES_TYPES:
            raise UnsupportedDtypeError(f"axes have element type {axes.dtype}; an integer type is required", self.where)
        if axes.rank is not None and axes.rank > 1:
            raise ShapeInferenceError(f"axes must be a scalar or 1-D, got rank {axes.rank}", self.where)

    def infer(self, inputs):
        data, axes = inputs
        self.require_dtype(data, self.DTYPES, "data")
        self.check_axes_spec(axes)
        keep = self.attrs["keep_dims"]
        if axes.value is not None:
            if data.shape is None:
                return [TensorSpec(data.dtype, None)]
            norm = normalize_axes(axes.value, len(data.shape))
            if not norm:
                return [TensorSpec(data.dtype, data.shape)]
            return [TensorSpec(data.dtype, reduced_shape(data.shape, norm, keep))]
        if data.shape is None:
            return [TensorSpec(data.dtype, None)]
        if keep:
            return [TensorSpec(data.dtype, (None,) * len(data.shape))]
        if axes.shape is not None and (axes.shape == () or axes.shape == (1,)) and len(data.shape) >= 1:
            return [TensorSpec(data.dtype, (None,) * (len(data.shape) - 1))]
        return [TensorSpec(data.dtype, None)]

    def compute(self, inputs):
        data, axes = inputs
        norm = normalize_axes(axes, data.ndim)
        if not norm:
            # Nothing to reduce: the identity, but L1 and L2 still take |x| (OpenVINO's
            # reference and CPU plugin do; so does the ONNX form).
            return [np.abs(data) if self.OP in ("l1", "l2") else data]
        return [reduce_array(data, norm, self.OP, self.attrs["keep_dims"], self.in_types[0])]


def _make(type_name: str, op: str, versions=(1,), dtypes=COMPUTE_TYPES):
    cls = type(type_name, (ReduceBase,), {"TYPE": type_name, "OP": op, "VERSIONS": versions, "DTYPES": dtypes})
    cls.__doc__ = f"OpenVINO {type_name}: the {op} of data over axes."
    return register(cls)


ReduceSum = _make("ReduceSum", "sum")
ReduceMean = _make("ReduceMean", "mean")
ReduceProd = _make("ReduceProd", "prod")
ReduceMax = _make("ReduceMax", "max")
ReduceMin = _make("ReduceMin", "min")
ReduceL1 = _make("ReduceL1", "l1", versions=(4,))
ReduceL2 = _make("ReduceL2", "l2", versions=(4,))
ReduceLogicalAnd = _make("ReduceLogicalAnd", "and", dtypes=frozenset({"boolean"}))
ReduceLogicalOr = _make("ReduceLogicalOr", "or", dtypes=frozenset({"boolean"}))
