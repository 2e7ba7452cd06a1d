"""Plan once per model (which layers run, in what order, when each value dies), then a short loop.

Folded constants are not recomputed; values that depend only on the feeds' shapes are
remembered per feed signature (`Memo`); every intermediate is dropped right after its last use.
Every output is an array the caller owns: a folded constant, a feed, a view of either, or a
value returned twice is copied on the way out, so no later `infer` and no other thread sees a
caller's writes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .dtypes import numpy_dtype
from .errors import ExecutionError, InputError, IRExecError, LimitError
from .ir.graph import Graph, ValueKey
from .loader import Inferred, attach
from .ops.base import Op, Sig
from .shapes import TensorSpec, format_shape


@dataclass(frozen=True)
class Step:
    layer_id: int
    op: Op
    sig: Sig
    operands: tuple[ValueKey, ...]
    outputs: tuple[ValueKey, ...]
    release: tuple[ValueKey, ...]  # values whose last use is this step
    expect: tuple = ()  # per output (numpy dtype, static shape or None): the fast output check


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
        and not all(specs[(lid, i)].value is not None for i in range(len(graph.layers[lid].outputs)))
    ]
    results = tuple(graph.operands[r][0] for r in graph.results)
    releases = _releases(
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
            tuple(releases.get(i, ())),
            tuple(expect((lid, j)) for j in range(len(graph.layers[lid].outputs))),
        )
        for i, lid in enumerate(run)
    )
    read = {k for s in steps for k in s.operands} | set(results)
    constants = {k: specs[k].value for k in read if specs[k].value is not None}
    from .fusion import fuse

    run_steps = fuse(steps, specs, results)
    return Plan(
        steps,
        constants,
        results,
        frozenset(id(_root(v)) for v in constants.values()),
        _make_memo(run_steps, specs, results),
        run_steps,
    )


def _releases(steps, results) -> dict[int, list[ValueKey]]:
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
    releases = _releases([(s.operands, s.outputs) for s in data], results)
    data_steps = tuple(
        Step(s.layer_id, s.op, s.sig, s.operands, s.outputs, tuple(releases.get(i, ())), s.expect)
        for i, s in enumerate(data)
    )
    capture = frozenset(i for i in shape_steps if any(k in frontier for k in steps[i].outputs))
    return Memo(data_steps, frozenset(frontier), capture, {})


def _check_output(value: np.ndarray, spec: TensorSpec, step: Step) -> None:
    if value.dtype != numpy_dtype(spec.dtype):
        raise ExecutionError(f"produced {value.dtype} where {spec.dtype} was inferred (an irexec bug)", step.op.where)
    if spec.shape is not None and (
        len(spec.shape) != value.ndim or any(d is not None and d != n for d, n in zip(spec.shape, value.shape))
    ):
        raise ExecutionError(
            f"produced shape {format_shape(value.shape)} where {format_shape(spec.shape)} was inferred",
            step.op.where,
        )


def run_step(step: Step, args: list[np.ndarray]) -> list[np.ndarray]:
    """One layer's compute, with every failure turned into an IRExecError naming the layer."""
    try:
        return step.op.compute(args, step.sig)
    except (InputError, LimitError) as e:
        raise attach(e, step.op.where) from None
    except IRExecError as e:
        raise attach(e, step.op.where, ExecutionError) from None
    except MemoryError:
        raise LimitError("out of memory while computing this layer", step.op.where) from None
    except (ValueError, TypeError, ArithmeticError, IndexError) as e:
        raise ExecutionError(f"failed: {e}", step.op.where) from None


def execute(plan: Plan, specs: dict[ValueKey, TensorSpec], feeds: dict[ValueKey, np.ndarray]) -> list[np.ndarray]:
    """The run loop: a few microseconds per layer (tools/bench_models.py --overhead measures it).
    Floating-point warnings are off for the whole run (IEEE results, as OpenVINO gives them).
    With a memo, the shape-only values of a feed signature seen before are taken from it."""
    env: dict[ValueKey, np.ndarray] = dict(plan.constants)
    env.update(feeds)
    memo = plan.memo
    if memo is None:
        _run(plan.run_steps or plan.steps, env, specs)
        return owned_outputs([env[key] for key in plan.results], plan, feeds)
    signature = tuple(sorted((k, v.shape, v.dtype.char) for k, v in feeds.items()))
    hit = memo.cache.get(signature)
    if hit is not None:
        env.update(hit[0])
        _run(memo.data_steps, env, specs)
        return owned_outputs([env[key] for key in plan.results], plan, feeds, hit[1])
    captured: dict[ValueKey, np.ndarray] = {}
    _run(plan.run_steps or plan.steps, env, specs, memo, captured)
    roots = frozenset(id(_root(v)) for v in captured.values())
    if sum(v.nbytes for v in captured.values()) <= MEMO_BYTES:
        if len(memo.cache) >= MEMO_SIGNATURES:
            memo.cache.pop(next(iter(memo.cache)), None)
        memo.cache[signature] = (captured, roots)
    return owned_outputs([env[key] for key in plan.results], plan, feeds, roots)


def _run(steps, env, specs, memo: Memo | None = None, captured: dict | None = None) -> None:
    with np.errstate(all="ignore"):
        for i, step in enumerate(steps):
            values = run_step(step, [env[k] for k in step.operands])
            for key, value, (dt, shape) in zip(step.outputs, values, step.expect):
                if value.dtype is not dt or (shape is not None and value.shape != shape):
                    _check_output(value, specs[key], step)
                env[key] = value
            if captured is not None and i in memo.capture:
                for key in step.outputs:
                    if key in memo.frontier:
                        captured[key] = env[key]
            for key in step.release:
                del env[key]


def _root(a: np.ndarray):
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def owned_outputs(
    values: list[np.ndarray], plan: Plan, feeds: dict, remembered: frozenset = frozenset()
) -> list[np.ndarray]:
    """The values, each an array no one else holds: a value whose memory belongs to a constant,
    a feed or a remembered shape-only value, to a buffer that is not a numpy array (a memory
    map), or to another returned value is copied; a fresh result (or a view of one no one else
    returns) is returned as it is."""
    external = plan.const_roots | remembered | {id(_root(v)) for v in feeds.values()}
    seen: set[int] = set()
    out = []
    for value in values:
        root = _root(value)
        if (
            id(root) in external
            or id(root) in seen
            or root.base is not None
            or not value.flags.writeable
            or not root.flags.owndata
        ):
            value = value.copy()
            root = value
        seen.add(id(root))
        out.append(value)
    return out


def execute_traced(
    plan: Plan,
    specs: dict[ValueKey, TensorSpec],
    feeds: dict[ValueKey, np.ndarray],
    keep: set[ValueKey] | None = None,
    clock=None,
) -> tuple[list[np.ndarray], dict[ValueKey, np.ndarray], list[tuple[Step, float]]]:
    """The run loop for debugging: also returns the values of `keep` (every value when None),
    and with `clock` (e.g. time.perf_counter) each step's time. Kept values are copies the
    caller owns; the plain `execute` stays free of these checks."""
    env: dict[ValueKey, np.ndarray] = dict(plan.constants)
    env.update(feeds)
    kept: dict[ValueKey, np.ndarray] = {}
    times: list[tuple[Step, float]] = []
    for key, value in env.items():
        if keep is None or key in keep:
            kept[key] = value
    for step in plan.steps:
        args = [env[k] for k in step.operands]
        with np.errstate(all="ignore"):
            t0 = clock() if clock is not None else 0.0
            values = run_step(step, args)
            if clock is not None:
                times.append((step, clock() - t0))
        for key, value in zip(step.outputs, values):
            _check_output(value, specs[key], step)
            env[key] = value
            if keep is None or key in keep:
                kept[key] = value
        for key in step.release:
            env.pop(key, None)
    outputs = owned_outputs([env[key] for key in plan.results], plan, feeds)
    kept = {k: np.array(v, copy=True) for k, v in kept.items()}
    return outputs, kept, times
