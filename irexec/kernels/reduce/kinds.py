"""One record per reduction kind, shared by the ops, the planner, the kernels and the test oracle.

A reduction is: a map step on each element (none, |x|, x^2) fused with an accumulation (add,
multiply, max, min) into a 64-bit accumulator, a combine step for partial accumulators (splits,
later passes), a finish on the accumulated value (divide by the count, sqrt, log) and the value of
an empty set (SPEC §2.1 table). Step and finish codes are the kernels' runtime arguments (see
`loops`), repeated here so that planning never imports numba.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...dtypes import COMPUTE_TYPES, numpy_dtype

# step codes (kernels.reduce.loops): map + accumulate
ADD, ADD_ABS, ADD_SQ, MUL, MAX, MIN = range(6)
# finish codes (kernels.reduce.loops): applied once to the accumulated value
NONE, DIVIDE, SQRT, LOG = range(4)


@dataclass(frozen=True)
class ReduceKind:
    """name: the op's short name; first/combine: step codes of the first pass and of combining
    partial results; finish: the epilogue code; dtypes: element types OpenVINO's op accepts;
    ref: the float64 numpy reference f(x, axes, keepdims) (the test oracle's)."""

    name: str
    first: int
    combine: int
    finish: int
    dtypes: frozenset
    ref: Callable

    @property
    def is_pure(self) -> bool:
        """No map step and no finish but Mean's: reducing nothing (a noop) is the identity."""
        return self.first == self.combine and self.finish in (NONE, DIVIDE)

    def empty(self, et: str):
        """The value over an empty set (SPEC §2.1 table)."""
        dt = numpy_dtype(et)
        is_float = dt.kind == "f"
        if self.name == "mean":
            return np.nan if is_float else 0
        if self.name in ("logsum", "logsumexp"):
            return -np.inf if is_float else 0
        if self.first in (ADD, ADD_ABS, ADD_SQ):
            return 0
        if self.first == MUL:
            return 1
        if dt.kind == "b":
            return self.first == MIN
        if self.first == MAX:
            return -np.inf if is_float else np.iinfo(dt).min
        return np.inf if is_float else np.iinfo(dt).max


def _lse(v, axes, keepdims):
    m = v.max(axis=axes, keepdims=True)
    shift = np.where(np.isfinite(m), m, 0.0)
    r = np.log(np.exp(v - shift).sum(axis=axes, keepdims=True)) + shift
    return r if keepdims else np.squeeze(r, axis=axes)


_BOOL = frozenset({"boolean"})

KINDS: dict[str, ReduceKind] = {
    k.name: k
    for k in (
        ReduceKind("sum", ADD, ADD, NONE, COMPUTE_TYPES, lambda v, a, k: v.sum(axis=a, keepdims=k)),
        ReduceKind("mean", ADD, ADD, DIVIDE, COMPUTE_TYPES, lambda v, a, k: v.mean(axis=a, keepdims=k)),
        ReduceKind("prod", MUL, MUL, NONE, COMPUTE_TYPES, lambda v, a, k: v.prod(axis=a, keepdims=k)),
        ReduceKind("max", MAX, MAX, NONE, COMPUTE_TYPES, lambda v, a, k: v.max(axis=a, keepdims=k)),
        ReduceKind("min", MIN, MIN, NONE, COMPUTE_TYPES, lambda v, a, k: v.min(axis=a, keepdims=k)),
        ReduceKind("l1", ADD_ABS, ADD, NONE, COMPUTE_TYPES, lambda v, a, k: np.abs(v).sum(axis=a, keepdims=k)),
        ReduceKind("l2", ADD_SQ, ADD, SQRT, COMPUTE_TYPES, lambda v, a, k: np.sqrt((v * v).sum(axis=a, keepdims=k))),
        ReduceKind("sumsq", ADD_SQ, ADD, NONE, COMPUTE_TYPES, lambda v, a, k: (v * v).sum(axis=a, keepdims=k)),
        ReduceKind("logsum", ADD, ADD, LOG, COMPUTE_TYPES, lambda v, a, k: np.log(v.sum(axis=a, keepdims=k))),
        # log-sum-exp is two passes (max, then the shifted sum); its codes describe the second
        ReduceKind("logsumexp", ADD, ADD, LOG, COMPUTE_TYPES, _lse),
        ReduceKind("and", MIN, MIN, NONE, _BOOL, lambda v, a, k: v.all(axis=a, keepdims=k)),
        ReduceKind("or", MAX, MAX, NONE, _BOOL, lambda v, a, k: v.any(axis=a, keepdims=k)),
    )
}
