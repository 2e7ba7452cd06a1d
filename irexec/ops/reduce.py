"""The reduction family, both dialects, one kind record each (`kernels.reduce.kinds`).

OpenVINO (SPEC §2.1): opset1 Reduce{Mean,Sum,Prod,Max,Min,LogicalAnd,LogicalOr}, opset4
Reduce{L1,L2}; `keep_dims`; negative axes + rank, duplicates once, empty axes = identity (L1/L2
keep their |x|); axes from a runtime input give partially dynamic shapes at load.

ONNX semantics, version="onnx" (SPEC §2.2): the ONNX Reduce* family with `keepdims`,
`noop_with_empty_axes` and axes from the attribute (ONNX <= 17), input 1 (ONNX 18) or absent.
No/empty axes reduce everything unless noop_with_empty_axes=1: then nothing is reduced but the
op's elementwise step still applies (ReduceLogSum takes the log, ReduceSumSquare squares...).
"""

from __future__ import annotations

import numpy as np

from ..dtypes import COMPUTE_TYPES
from ..errors import FormatError, ShapeInferenceError, UnsupportedDtypeError
from ..kernels.reduce import KINDS, ReduceKind, reduce_array, reduce_call
from ..shapes import Dim, TensorSpec, normalize_axes
from .attrs import Attr
from .base import Op, Sig
from .common import AXES_TYPES, finish
from .registry import register

ONNX_TYPES = frozenset({"bf16", "f16", "f32", "f64", "i32", "i64", "u32", "u64"})
ONNX_MINMAX_TYPES = ONNX_TYPES | {"boolean", "i8", "u8"}


def reduced_shape(shape: tuple[Dim, ...], axes: tuple[int, ...], keep_dims: bool) -> tuple[Dim, ...]:
    return tuple(1 if i in axes else d for i, d in enumerate(shape) if keep_dims or i not in axes)


def check_axes_spec(op: Op, axes: TensorSpec) -> None:
    if axes.dtype not in AXES_TYPES:
        raise UnsupportedDtypeError(f"axes have element type {axes.dtype}; an integer type is required", op.where)
    if axes.rank is not None and axes.rank > 1:
        raise ShapeInferenceError(f"axes must be a scalar or 1-D, got rank {axes.rank}", op.where)


def runtime_axes_shape(data: TensorSpec, axes: TensorSpec, keep: bool) -> TensorSpec:
    """The output spec when the axes are only known at run time (SPEC §2.1)."""
    if data.shape is None:
        return TensorSpec(data.dtype, None)
    if keep:
        return TensorSpec(data.dtype, (None,) * len(data.shape))
    if axes.shape is not None and axes.shape in ((), (1,)) and len(data.shape) >= 1:
        return TensorSpec(data.dtype, (None,) * (len(data.shape) - 1))
    return TensorSpec(data.dtype, None)


def steady_reduce(op: Op, key, data: np.ndarray) -> np.ndarray | None:
    """The reduction's steady call for operands of `key` (`Op.steady`: data's shape and type,
    the axes' bytes), or None: the usual path runs."""
    call = op.steady(key)
    return None if call is None else call(data)


def reduce_settled(op, key, data: np.ndarray, axes: tuple[int, ...], keep: bool, et: str) -> np.ndarray:
    """reduce_array's result; the family's kernel call is kept for `key` once it repeats
    (`reduce_call`: one finished pass on the calling thread)."""
    y = reduce_array(data, axes, op.KIND, keep, et)
    op.settle(key, lambda: reduce_call(data, axes, op.KIND, keep, et))
    return y


class ReduceBase(Op):
    """OpenVINO reductions: subclasses set TYPE, KIND and VERSIONS."""

    KERNELS = ("reduce",)

    KIND: ReduceKind = KINDS["sum"]
    VERSIONS = (1,)
    INPUTS = (2, 2)
    keep_dims = Attr("bool", False)

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        data, axes = inputs
        self.require_dtype(data, self.KIND.dtypes, "data")
        check_axes_spec(self, axes)
        if axes.value is None:
            return [runtime_axes_shape(data, axes, self.keep_dims)]
        if data.shape is None:
            return [TensorSpec(data.dtype, None)]
        norm = normalize_axes(axes.value, len(data.shape))
        if not norm:
            return [TensorSpec(data.dtype, data.shape)]
        return [TensorSpec(data.dtype, reduced_shape(data.shape, norm, self.keep_dims))]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        data, axes = inputs
        key = (data.shape, data.dtype, axes.tobytes(), axes.dtype.char)
        y = steady_reduce(self, key, data)
        if y is not None:
            return [y]
        norm = normalize_axes(axes, data.ndim)
        if not norm:
            # Nothing to reduce: the identity, but L1 and L2 still take |x| (OpenVINO's
            # reference and CPU plugin do; so does the ONNX form).
            return [np.abs(data) if self.KIND.name in ("l1", "l2") else data]
        return [reduce_settled(self, key, data, norm, self.keep_dims, sig.ins[0])]


class OnnxReduceBase(Op):
    """ONNX-semantics reductions: subclasses set TYPE, KIND and DTYPES."""

    KERNELS = ("reduce",)

    KIND: ReduceKind = KINDS["sum"]
    DTYPES = ONNX_TYPES
    VERSIONS = ("onnx",)
    INPUTS = (1, 2)
    keepdims = Attr("int", 1)
    noop_with_empty_axes = Attr("int", 0)
    axes = Attr("ints", None)

    def __init__(self, layer, context=None):
        super().__init__(layer, context)
        for name in ("keepdims", "noop_with_empty_axes"):
            if getattr(self, name) not in (0, 1):
                raise FormatError(f"attribute {name}={getattr(self, name)} must be 0 or 1", self.where)
        if self.axes is not None and len(layer.inputs) == 2:
            raise FormatError("axes are given both as an attribute and as input 1", self.where)

    def _axes(self, data_rank: int, axes_value: np.ndarray | tuple[int, ...] | None) -> tuple[int, ...] | None:
        """Normalized axes to reduce; None means the identity (noop with empty axes)."""
        if axes_value is None or np.asarray(axes_value).size == 0:
            if self.noop_with_empty_axes:
                return None
            return tuple(range(data_rank))
        return normalize_axes(axes_value, data_rank)

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        data = inputs[0]
        self.require_dtype(data, self.DTYPES, "data")
        keep = bool(self.keepdims)
        if len(inputs) == 2:
            check_axes_spec(self, inputs[1])
            if inputs[1].value is None:
                return [runtime_axes_shape(data, inputs[1], keep)]
            axes_value = inputs[1].value
        else:
            axes_value = self.axes
        if data.shape is None:
            return [TensorSpec(data.dtype, None)]
        axes = self._axes(len(data.shape), axes_value)
        if axes is None:
            return [TensorSpec(data.dtype, data.shape)]
        return [TensorSpec(data.dtype, reduced_shape(data.shape, axes, keep))]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        data = inputs[0]
        key = (data.shape, data.dtype) + ((inputs[1].tobytes(), inputs[1].dtype.char) if len(inputs) == 2 else ())
        y = steady_reduce(self, key, data)
        if y is not None:
            return [y]
        axes_value = inputs[1] if len(inputs) == 2 else self.axes
        axes = self._axes(data.ndim, axes_value)
        if axes is None and self.KIND.is_pure:
            return [data]  # noop_with_empty_axes: nothing to reduce, no elementwise step
        return [reduce_settled(self, key, data, axes or (), bool(self.keepdims), sig.ins[0])]


def _make(base, type_name: str, kind: str, **extra):
    cls = type(type_name, (base,), {"TYPE": type_name, "KIND": KINDS[kind], **extra})
    dialect = "ONNX-semantics" if base is OnnxReduceBase else "OpenVINO"
    cls.__doc__ = f"{dialect} {type_name}: the {kind} of data over axes."
    cls.__qualname__ = cls.__name__ = ("Onnx" if base is OnnxReduceBase else "") + type_name
    return register(cls)


ReduceSum = _make(ReduceBase, "ReduceSum", "sum")
ReduceMean = _make(ReduceBase, "ReduceMean", "mean")
ReduceProd = _make(ReduceBase, "ReduceProd", "prod")
ReduceMax = _make(ReduceBase, "ReduceMax", "max")
ReduceMin = _make(ReduceBase, "ReduceMin", "min")
ReduceL1 = _make(ReduceBase, "ReduceL1", "l1", VERSIONS=(4,))
ReduceL2 = _make(ReduceBase, "ReduceL2", "l2", VERSIONS=(4,))
ReduceLogicalAnd = _make(ReduceBase, "ReduceLogicalAnd", "and")
ReduceLogicalOr = _make(ReduceBase, "ReduceLogicalOr", "or")

OnnxReduceSum = _make(OnnxReduceBase, "ReduceSum", "sum")
OnnxReduceMean = _make(OnnxReduceBase, "ReduceMean", "mean")
OnnxReduceProd = _make(OnnxReduceBase, "ReduceProd", "prod")
OnnxReduceMax = _make(OnnxReduceBase, "ReduceMax", "max", DTYPES=ONNX_MINMAX_TYPES)
OnnxReduceMin = _make(OnnxReduceBase, "ReduceMin", "min", DTYPES=ONNX_MINMAX_TYPES)
OnnxReduceL1 = _make(OnnxReduceBase, "ReduceL1", "l1")
OnnxReduceL2 = _make(OnnxReduceBase, "ReduceL2", "l2")
OnnxReduceLogSum = _make(OnnxReduceBase, "ReduceLogSum", "logsum")
OnnxReduceLogSumExp = _make(OnnxReduceBase, "ReduceLogSumExp", "logsumexp")
OnnxReduceSumSquare = _make(OnnxReduceBase, "ReduceSumSquare", "sumsq")


@register
class CumSum(Op):
    """CumSum-3: running sum along the axis input (`exclusive` shifts by one, `reverse` runs
    from the end). Floats accumulate in float64 and round once; integers wrap as C does."""

    TYPE = "CumSum"
    VERSIONS = (3,)
    INPUTS = (1, 2)
    SAME_SHAPE = True
    exclusive = Attr("bool", False)
    reverse = Attr("bool", False)

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        self.require_dtype(inputs[0], COMPUTE_TYPES | {"boolean"}, "data")
        if len(inputs) > 1:
            check_axes_spec(self, inputs[1])
        return [TensorSpec(inputs[0].dtype, inputs[0].shape)]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        x = inputs[0]
        if x.ndim == 0:
            return [np.zeros_like(x) if self.exclusive else x.copy()]
        axis = int(np.asarray(inputs[1]).reshape(-1)[0]) if len(inputs) > 1 else 0
        (a,) = normalize_axes(axis, x.ndim)
        # booleans sum as integers and turn back into booleans (non-zero: true), as OpenVINO does
        acc_dt = np.float64 if x.dtype.kind == "f" else (np.uint64 if x.dtype.kind == "u" else np.int64)
        v = np.flip(x, a) if self.reverse else x
        s = np.cumsum(v, axis=a, dtype=acc_dt)
        if self.exclusive:
            s = np.concatenate([np.zeros_like(np.take(s, [0], axis=a)), np.delete(s, -1, axis=a)], axis=a)
        if self.reverse:
            s = np.flip(s, a)

        return [s != 0 if x.dtype == np.bool_ else finish(s, sig.outs[0])]
