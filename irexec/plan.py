"""Plan once per model: which layers run, in what order, when each value dies, which values
depend on the feeds' shapes only (remembered per feed signature), and the run order with exact
multi-layer patterns fused (`irexec/fusion.py`). The run loop is `irexec/executor.py`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .dtypes import numpy_dtype
from .fusion import fuse
from .ir.graph import Graph, ValueKey
from .ops.common import array_root
from .shape_inference import Inferred
from .steps import Step, releases


@dataclass
class Memo:
    """The values that depend on the feeds' shapes and dtypes only (ShapeOf and what is computed
    from it and from constants: position ids, masks built from lengths, T5's relative position
    buckets...), remembered per feed signature: a model with dynamic inputs recomputes them
    only when a new shape arrives. `data_steps` are the steps left to run then, with their own
    release schedule; `frontier` the remembered values they (or the results) read."""

    data_steps: tuple[Step, ...]
    frontier: frozenset
    capture: frozenset  # indices in Plan.steps whose outputs include frontier values
    cache: dict  # feed signature -> ({frontier key: value}, ids of the values' memory)


MEMO_SIGNATURES = 16  # feed signatures remembered per model (then the oldest is dropped)
MEMO_BYTES = 64 << 20  # a signature whose remembered values take more is not remembered


@dataclass(frozen=True)
class Plan:
    steps: tuple[Step, ...]
    constants: dict[ValueKey, np.ndarray]  # folded values some step reads
    results: tuple[ValueKey, ...]  # the value each Result returns, in Result order
    const_roots: frozenset = frozenset()  # ids of the arrays that own the constants' memory
    memo: Memo | None = None
    run_steps: tuple[Step, ...] = ()  # `steps` with exact multi-layer patterns fused (irexec.fusion)


def make_plan(graph: Graph, found: Inferred) -> Plan:
    specs = found.specs
    run = [
        lid
        for lid in graph.order
        if lid in graph.needed
        and lid not in graph.parameters
        and not graph.layers[lid].type.lower() == "result"
        and not _folded(graph.layers[lid], lid, specs)
    ]
    results = tuple(graph.operands[r][0] for r in graph.results)
    last_uses = releases(
        [(graph.operands[lid], [(lid, j) for j in range(len(graph.layers[lid].outputs))]) for lid in run], results
    )

    def expect(key):
        spec = specs[key]
        if spec.dtype is None:
            return (None, None)
        return (numpy_dtype(spec.dtype), spec.shape if spec.is_static else None)

    steps = tuple(
        Step(
            lid,
            found.ops.get(lid),
            found.sigs.get(lid),
            graph.operands[lid],
            tuple((lid, j) for j in range(len(graph.layers[lid].outputs))),
            tuple(last_uses.get(i, ())),
            tuple(expect((lid, j)) for j in range(len(graph.layers[lid].outputs))),
        )
        for i, lid in enumerate(run)
    )
    read = {k for s in steps for k in s.operands} | set(results)
    constants = {k: specs[k].value for k in read if specs[k].value is not None}
    for value in constants.values():
        # no step writes into a constant: read-only, as the .bin's mapped weights are, so an op
        # may remember what it derives from one by identity (a folded f16 -> f32 Convert's
        # result is a fresh, writeable array otherwise); a folded numpy scalar is immutable
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
    run_steps = fuse(steps, specs, results)
    return Plan(
        steps,
        constants,
        results,
        frozenset(id(array_root(v)) for v in constants.values()),
        _make_memo(run_steps, specs, results),
        run_steps,
    )


def _folded(layer, lid: int, specs) -> bool:
    """Every output of the layer is a folded constant (a sink with no output port, an Assign
    written without one, is not)."""
    return bool(layer.outputs) and all(specs[(lid, i)].value is not None for i in range(len(layer.outputs)))


def _make_memo(steps: tuple[Step, ...], specs, results) -> Memo | None:
    """Which steps compute from the feeds' shapes only, and the schedule of the others."""
    shape_only: set[ValueKey] = set()
    shape_steps = set()
    for i, step in enumerate(steps):
        if step.op is None or not step.op.FOLDABLE:
            continue
        if step.op.TYPE == "ShapeOf" or all(k in shape_only or specs[k].value is not None for k in step.operands):
            shape_only.update(step.outputs)
            shape_steps.add(i)
    if not shape_steps:
        return None
    data = [s for i, s in enumerate(steps) if i not in shape_steps]
    frontier = {k for s in data for k in s.operands if k in shape_only} | {k for k in results if k in shape_only}
    last_uses = releases([(s.operands, s.outputs) for s in data], results)
    data_steps = tuple(
        Step(s.layer_id, s.op, s.sig, s.operands, s.outputs, tuple(last_uses.get(i, ())), s.expect)
        for i, s in enumerate(data)
    )
    capture = frozenset(i for i in shape_steps if any(k in frontier for k in steps[i].outputs))
    return Memo(data_steps, frozenset(frontier), capture, {})
