"""Run one op on arrays without writing XML: `run_op("Softmax", "opset8", [x], axis=1)`.

For tests and experiments: it builds the layer record the reader would, runs the op's shape rule
(inputs listed in `const` are known values, as Consts would be), checks the inferred specs
against what `compute` returns, and returns the outputs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..dtypes import from_numpy, numpy_dtype
from ..errors import ExecutionError
from ..ir.reader import LayerRecord, PortRecord
from ..limits import DEFAULT_LIMITS
from ..shapes import TensorSpec, format_shape
from .base import Op, Sig
from .registry import lookup


def _attr_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple, np.ndarray)):
        return ",".join(_attr_text(v) for v in np.asarray(value).reshape(-1).tolist())
    return str(value)


class _Context:
    weights = None
    limits = DEFAULT_LIMITS


def make_op(type_name: str, version: str, n_inputs: int, n_outputs: int = 1, **attrs) -> Op:
    """The op object for a layer of this type with these attributes (strings or Python values)."""
    ports_in = tuple(PortRecord(i, None, (), ()) for i in range(n_inputs))
    ports_out = tuple(PortRecord(n_inputs + j, None, (), ()) for j in range(n_outputs))
    layer = LayerRecord(
        0, type_name, type_name, version, {k: _attr_text(v) for k, v in attrs.items()}, ports_in, ports_out
    )
    return lookup(type_name, version, layer.where)(layer, _Context())


def run_op(
    type_name: str,
    version: str,
    inputs: Sequence[np.ndarray],
    *,
    const: Sequence[int] | None = None,
    types: Sequence[str] | None = None,
    n_outputs: int = 1,
    **attrs,
) -> list[np.ndarray]:
    """Infer and compute one op. `const`: indices of inputs whose values shape inference may use
    (default: every input but the first); `types`: element types of the inputs when the numpy
    dtype does not say (bf16)."""
    arrays = [np.asarray(x) for x in inputs]
    ets = list(types) if types is not None else [from_numpy(a.dtype) for a in arrays]
    known = set(range(1, len(arrays)) if const is None else const)
    specs = [TensorSpec(et, tuple(a.shape), a if i in known else None) for i, (a, et) in enumerate(zip(arrays, ets))]
    op = make_op(type_name, version, len(arrays), n_outputs, **attrs)
    outs = op.infer(specs)
    sig = Sig(tuple(ets), tuple(s.dtype for s in outs), all(s.is_static for s in outs))
    with np.errstate(all="ignore"):  # as the executor runs every compute
        values = op.compute(arrays, sig)
    for i, (v, s) in enumerate(zip(values, outs)):
        if v.dtype != numpy_dtype(s.dtype):
            raise ExecutionError(f"output {i} is {v.dtype}, the shape rule said {s.dtype}")
        if s.shape is not None and (
            len(s.shape) != v.ndim or any(d is not None and d != n for d, n in zip(s.shape, v.shape))
        ):
            raise ExecutionError(
                f"output {i} has shape {format_shape(v.shape)}, the shape rule said {format_shape(s.shape)}"
            )
    return values


def infer_op(
    type_name: str, version: str, specs: Sequence[TensorSpec], n_outputs: int = 1, **attrs
) -> list[TensorSpec]:
    """The shape rule alone, on specs (dims may be None)."""
    op = make_op(type_name, version, len(specs), n_outputs, **attrs)
    return op.infer(list(specs))
