"""Graph-wide shape inference: instantiate every layer's op, run its shape rule in topological
order, and fold what is constant (so axes arriving through Const/ShapeOf/Range chains are known).
"""

from __future__ import annotations

from dataclasses import dataclass

from .dtypes import bits
from .errors import IRExecError, LimitError, ShapeInferenceError
from .ir.graph import Graph, ValueKey
from .ir.weights import Weights
from .limits import Limits
from .ops import lookup
from .ops.base import Op
from .shapes import TensorSpec, format_shape


@dataclass
class Context:
    """What ops may need while loading: the weights and the limits."""

    weights: Weights
    limits: Limits


def attach(e: IRExecError, where, cls=None) -> IRExecError:
    """The same error with the layer named, when it did not name one itself."""
    if e.where is not None and str(e.where):
        return e if cls is None else cls(e.message, e.where)
    return (cls or type(e))(e.message, where)


def _check_spec(spec: TensorSpec, limits: Limits, where) -> None:
    if spec.shape is not None and all(d is not None for d in spec.shape):
        limits.check_tensor(spec.shape, bits(spec.dtype) / 8, "output", where)


def infer_graph(graph: Graph, context: Context) -> tuple[dict[int, Op], dict[ValueKey, TensorSpec]]:
    ops: dict[int, Op] = {}
    specs: dict[ValueKey, TensorSpec] = {}
    folded_bytes = 0
    for lid in graph.order:
        layer = graph.layers[lid]
        where = layer.where
        op = lookup(layer.type, layer.version, where)(layer, context)
        ins = [specs[k] for k in graph.operands[lid]]
        try:
            outs = op.infer(ins)
        except IRExecError as e:
            raise attach(e, where) from None
        except (ValueError, TypeError, ArithmeticError, IndexError) as e:
            raise ShapeInferenceError(f"shape rule failed: {e}", where) from None
        if op.SAME_SHAPE and ins[0].bounds is not None and outs[0].shape == ins[0].shape:
            outs[0] = TensorSpec(outs[0].dtype, outs[0].shape, outs[0].value, ins[0].bounds)
        op.in_types = tuple(s.dtype for s in ins)
        op.out_types = tuple(s.dtype for s in outs)
        for s in outs:
            _check_spec(s, context.limits, where)
        op.static_outputs = all(s.is_static for s in outs)
        if op.FOLDABLE and ins and all(s.value is not None for s in ins) and all(s.is_static for s in outs):
            outs = _fold(op, ins, outs, where)
            folded_bytes += sum(s.value.nbytes for s in outs)
            if folded_bytes > context.limits.max_total_bytes:
                raise LimitError(
                    f"constant folding needs {folded_bytes} bytes, above the limit "
                    f"{context.limits.max_total_bytes}",
                    where,
                )
        ops[lid] = op
        for i, s in enumerate(outs):
            specs[(lid, i)] = s
    return ops, specs


def _fold(op: Op, ins: list[TensorSpec], outs: list[TensorSpec], where) -> list[TensorSpec]:
    try:
        values = op.compute([s.value for s in ins])
    except IRExecError as e:
        raise attach(e, where) from None
    except (ValueError, TypeError, ArithmeticError, IndexError, MemoryError) as e:
        raise ShapeInferenceError(f"constant folding failed: {e}", where) from None
    folded = []
    for s, v in zip(outs, values):
        if tuple(v.shape) != s.shape:
            raise ShapeInferenceError(
                f"folded value has shape {format_shape(v.shape)}, the shape rule said {format_shape(s.shape)}",
                where,
            )
        folded.append(s.with_value(v))
    return folded
