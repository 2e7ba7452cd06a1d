"""Helpers every op family uses, at the bottom of `ops/` (family files import these, never each
other's privates): the numeric finish (round once to the output element type), the integer
types an axes or shape input may have, the constant integers of such an input, and the check
that an axis lies in a rank, and the array that owns a view's memory.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import INT_TYPES, SUB_BYTE_TYPES, cast, numpy_dtype, round_bf16
from ..errors import FormatError, ShapeInferenceError
from ..shapes import TensorSpec
from .base import Op

AXES_TYPES = INT_TYPES - SUB_BYTE_TYPES  # the element types an axes, shape or index input may have


def f64_to_f32_for_bf16(result: np.ndarray) -> np.ndarray:
    """float64 -> float32 rounded so that a later bf16 rounding gives the correctly rounded bf16:
    a float32 that lands exactly halfway between two bf16 values but is not exact is nudged one
    float32 ulp toward the true value (rounding twice would otherwise pick the even neighbour)."""
    with np.errstate(over="ignore"):  # beyond float32: infinity, as bf16 gives
        f = result.astype(np.float32)
    bits = f.view(np.uint32)
    tie = ((bits & 0xFFFF) == 0x8000) & (f != result) & np.isfinite(result)
    if tie.any():
        f = f.copy()
        f[tie] = np.nextafter(f[tie], np.where(result[tie] > f[tie], np.inf, -np.inf).astype(np.float32))
    return f


def finish(result: np.ndarray, et: str) -> np.ndarray:
    """The computed array as element type `et`: rounded once to f16/bf16, converted otherwise."""
    if et == "bf16":
        if result.dtype == np.float64:
            result = f64_to_f32_for_bf16(np.asarray(result))
        return round_bf16(result)
    dt = numpy_dtype(et)
    return result if result.dtype is dt else cast(result, et)


def const_ints(op: Op, spec: TensorSpec, what: str) -> list[int] | None:
    """The constant integer values of an auxiliary input (None when only known at run time)."""
    if spec.dtype not in AXES_TYPES:
        raise FormatError(f"{what} has element type {spec.dtype}; an integer type is required", op.where)
    if spec.value is None:
        return None
    return [int(v) for v in np.asarray(spec.value).reshape(-1).tolist()]


def check_axis(op: Op, axis: int, rank: int) -> int:
    """`axis` in [-rank, rank) as a non-negative index; a ShapeInferenceError naming the layer
    otherwise."""
    if not -rank <= axis < rank:
        raise ShapeInferenceError(f"axis {axis} is out of the range [{-rank}, {rank - 1}]", op.where)
    return axis + rank if axis < 0 else axis


def array_root(a: np.ndarray) -> np.ndarray:
    """The array that owns the memory of `a` (`a` itself, or the base of its chain of views)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a
