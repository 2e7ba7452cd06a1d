"""A step of a plan: one layer (or one fused pattern of layers) to run, its operands, its
outputs, the values whose last use it is, and the expected dtype and shape of each output; and
the rule that decides those last uses. Below the planner, the fusion rules and the run loop,
which all build or read steps."""

from __future__ import annotations

from dataclasses import dataclass

from .ir.graph import ValueKey
from .ops.base import Op, Sig


@dataclass(frozen=True)
class Step:
    """One entry of a plan's run order (`op` may be a fused step's op, see irexec/fusion.py)."""

    layer_id: int
    op: Op
    sig: Sig
    operands: tuple[ValueKey, ...]
    outputs: tuple[ValueKey, ...]
    release: tuple[ValueKey, ...]  # values whose last use is this step
    expect: tuple = ()  # per output (numpy dtype, static shape or None): the fast output check


def releases(steps, results) -> dict[int, list[ValueKey]]:
    """Per step index, the values whose last use it is: the last reader of each value, or its
    producer when nothing reads it (MaxPool's unused indices, ShapeOf's operand once the shape
    is remembered). `steps` are (operands, outputs) pairs; results are kept."""
    last: dict[ValueKey, int] = {}
    for i, (operands, _) in enumerate(steps):
        for key in operands:
            last[key] = i
    for i, (_, outputs) in enumerate(steps):
        for key in outputs:
            last.setdefault(key, i)
    keep = set(results)
    releases: dict[int, list[ValueKey]] = {}
    for key, i in last.items():
        if key not in keep:
            releases.setdefault(i, []).append(key)
    return releases
