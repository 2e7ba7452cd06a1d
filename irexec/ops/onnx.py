"""ONNX-semantics layers (version="onnx"): the ONNX Reduce* family and the variadic `Mean`.

SPEC §2.2: `keepdims` (default 1), `noop_with_empty_axes` (default 0), axes from the `axes`
attribute (ONNX <= 17) or from input 1 (ONNX 18), or absent. No/empty axes reduce everything
unless noop_with_empty_axes=1: then the reduction is the identity but the op's elementwise step
still applies (ReduceLogSum takes the log, ReduceSumSquare squares...).
"""

from __future__ import annotations

import numpy as np

from ..dtypes import FLOAT_TYPES
from ..errors import FormatError
from ..kernels.plan import mean_broadcast, reduce_array
from ..shapes import TensorSpec, broadcast_shapes, normalize_axes
from .base import Attr, Op
from .reduce import ReduceBase, reduced_shape
from .registry import register

ONNX_TYPES = frozenset({"bf16", "f16", "f32", "f64", "i32", "i64", "u32", "u64"})
MINMAX_TYPES = ONNX_TYPES | {"boolean", "i8", "u8"}


class OnnxReduceBase(ReduceBase):
    VERSIONS = ("onnx",)
    INPUTS = (1, 2)
    DTYPES = ONNX_TYPES
    ATTRS = {
        "keepdims": Attr("int", 1),
        "noop_with_empty_axes": Attr("int", 0),
        "axes": Attr("ints", None),
    }

    def __init__(self, layer, context=None):
        super().__init__(layer, context)
        for name in ("keepdims", "noop_with_empty_axes"):
            if self.attrs[name] not in (0, 1):
                raise FormatError(f"attribute {name}={self.attrs[name]} must be 0 or 1", self.where)
        if self.attrs["axes"] is not None and len(layer.inputs) == 2:
            raise FormatError("axes are given both as an attribute and as input 1", self.where)

    def _axes(self, data_rank: int, axes_value) -> tuple[int, ...] | None:
        """Normalized axes to reduce; None means the identity (noop with empty axes)."""
        if axes_value is None or np.asarray(axes_value).size == 0:
            if self.attrs["noop_with_empty_axes"]:
                return None
            return tuple(range(data_rank))
        return normalize_axes(axes_value, data_rank)

    def infer(self, inputs):
        data = inputs[0]
        self.require_dtype(data, self.DTYPES, "data")
        keep = bool(self.attrs["keepdims"])
        if len(inputs) == 2:
            self.check_axes_spec(inputs[1])
            axes_value = inputs[1].value
            known = axes_value is not None
        else:
            axes_value = self.attrs["axes"]
            known = True
        if data.shape is None:
            return [TensorSpec(data.dtype, None)]
        rank = len(data.shape)
        if known:
            axes = self._axes(rank, axes_value)
            if axes is None:
                return [TensorSpec(data.dtype, data.shape)]
            return [TensorSpec(data.dtype, reduced_shape(data.shape, axes, keep))]
        if keep:
            return [TensorSpec(data.dtype, (None,) * rank)]
        ashape = inputs[1].shape
        if ashape is not None and ashape in ((), (1,)) and rank >= 1:
            return [TensorSpec(data.dtype, (None,) * (rank - 1))]
        return [TensorSpec(data.dtype, None)]

    def compute(self, inputs):
        data = inputs[0]
        axes_value = inputs[1] if len(inputs) == 2 else self.attrs["axes"]
        axes = self._axes(data.ndim, axes_value)
        if axes is None and self.OP in ("sum", "mean", "max", "min", "prod"):
            return [data]  # noop_with_empty_axes: nothing to reduce, no elementwise step
        return [reduce_array(data, axes or (), self.OP, bool(self.attrs["keepdims"]), self.in_types[0])]


def _make(type_name: str, op: str, dtypes=ONNX_TYPES):
    cls = type(type_name, (OnnxReduceBase,), {"TYPE": type_name, "OP": op, "DTYPES": dtypes})
    cls.__doc__ = f"ONNX {type_name} (ONNX semantics): the {op} over axes."
    return register(cls)


OnnxReduceSum = _make("ReduceSum", "sum")
OnnxReduceMean = _make("ReduceMean", "mean")
OnnxReduceProd = _make("ReduceProd", "prod")
OnnxReduceMax = _make("ReduceMax", "max", MINMAX_TYPES)
OnnxReduceMin = _make("ReduceMin", "min", MINMAX_TYPES)
OnnxReduceL1 = _make("ReduceL1", "l1")
OnnxReduceL2 = _make("ReduceL2", "l2")
OnnxReduceLogSum = _make("ReduceLogSum", "logsum")
OnnxReduceLogSumExp = _make("ReduceLogSumExp", "logsumexp")
OnnxReduceSumSquare = _make("ReduceSumSquare", "sumsq")


@register
class Mean(Op):
    """ONNX Mean-13: element-wise mean of 1..N inputs with numpy broadcasting, float types only."""

    TYPE = "Mean"
    VERSIONS = ("onnx",)
    INPUTS = (1, None)

    def infer(self, inputs):
        first = inputs[0]
        for i, spec in enumerate(inputs):
            self.require_dtype(spec, FLOAT_TYPES, f"input {i}")
            if spec.dtype != first.dtype:
                raise FormatError(
                    f"input {i} has element type {spec.dtype}, input 0 has {first.dtype}", self.where
                )
        return [TensorSpec(first.dtype, broadcast_shapes([s.shape for s in inputs]))]

    def compute(self, inputs):
        self.check_output(np.broadcast_shapes(*(x.shape for x in inputs)), self.out_types[0])
        return [mean_broadcast(list(inputs), self.out_types[0])]


