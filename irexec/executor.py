"""The run loop over a plan (`irexec/plan.py`): a few microseconds per layer.

Folded constants are not recomputed; values that depend only on the feeds' shapes are
remembered per feed signature (`Memo`); every intermediate is dropped right after its last use.
Every output is an array the caller owns: a folded constant, a feed, a view of either, or a
value returned twice is copied on the way out, so no later `infer` and no other thread sees a
caller's writes.
"""

from __future__ import annotations

import numpy as np

from .dtypes import numpy_dtype
from .errors import ExecutionError, InputError, IRExecError, LimitError, plain_message
from .ir.graph import ValueKey
from .ops.common import array_root
from .plan import MEMO_BYTES, MEMO_SIGNATURES, Memo, Plan
from .shape_inference import attach
from .shapes import TensorSpec, format_shape
from .steps import Step


def check_output(value: np.ndarray, spec: TensorSpec, step: Step) -> np.ndarray:
    """The value, checked against its spec; an f16 value where f32 was inferred is widened (an
    op whose output type is its own attribute, under "f32" precision: irexec/precision.py)."""
    if value.dtype != numpy_dtype(spec.dtype):
        if spec.dtype == "f32" and value.dtype == np.float16:
            value = value.astype(np.float32)
        else:
            raise ExecutionError(
                f"produced {value.dtype} where {spec.dtype} was inferred (an irexec bug)", step.op.where
            )
    if spec.shape is not None and (
        len(spec.shape) != value.ndim or any(d is not None and d != n for d, n in zip(spec.shape, value.shape))
    ):
        raise ExecutionError(
            f"produced shape {format_shape(value.shape)} where {format_shape(spec.shape)} was inferred",
            step.op.where,
        )
    return value


def run_step(step: Step, args: list[np.ndarray]) -> list[np.ndarray]:
    """One layer's compute, with every failure turned into an IRExecError naming the layer."""
    try:
        return step.op.compute(args, step.sig)
    except Exception as e:
        raise step_error(step, e) from None


def step_error(step: Step, e: Exception) -> Exception:
    """A failure of a step's compute as the IRExecError naming its layer (the exception itself
    when it is not one that a compute may raise for its inputs: an irexec bug surfaces as is)."""
    if isinstance(e, (InputError, LimitError)):
        return attach(e, step.op.where)
    if isinstance(e, IRExecError):
        return attach(e, step.op.where, ExecutionError)
    if isinstance(e, MemoryError):
        return LimitError("out of memory while computing this layer", step.op.where)
    if isinstance(e, (ValueError, TypeError, ArithmeticError, IndexError)):
        return ExecutionError(f"failed: {plain_message(e)}", step.op.where)
    return e


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
    roots = frozenset(id(array_root(v)) for v in captured.values())
    if sum(v.nbytes for v in captured.values()) <= MEMO_BYTES:
        if len(memo.cache) >= MEMO_SIGNATURES:
            memo.cache.pop(next(iter(memo.cache)), None)
        memo.cache[signature] = (captured, roots)
    return owned_outputs([env[key] for key in plan.results], plan, feeds, roots)


def _run(steps, env, specs, memo: Memo | None = None, captured: dict | None = None) -> None:
    """The steps in order, `run_step`'s compute inlined, one output without the zip: 100 steps
    of a no-op op 0.81 -> 0.60 us each (the loop's own cost)."""
    capture = memo.capture if captured is not None else ()
    with np.errstate(all="ignore"):
        for i, step in enumerate(steps):
            try:
                values = step.op.compute([env[k] for k in step.operands], step.sig)
            except Exception as e:
                raise step_error(step, e) from None
            if len(values) == 1 and len(step.outputs) == 1:
                value = values[0]
                dt, shape = step.expect[0]
                if value.dtype is not dt or (shape is not None and value.shape != shape):
                    value = check_output(value, specs[step.outputs[0]], step)
                env[step.outputs[0]] = value
            else:
                for key, value, (dt, shape) in zip(step.outputs, values, step.expect):
                    if value.dtype is not dt or (shape is not None and value.shape != shape):
                        value = check_output(value, specs[key], step)
                    env[key] = value
            if i in capture:
                for key in step.outputs:
                    if key in memo.frontier:
                        captured[key] = env[key]
            for key in step.release:
                del env[key]


def owned_outputs(
    values: list[np.ndarray], plan: Plan, feeds: dict, remembered: frozenset = frozenset()
) -> list[np.ndarray]:
    """The values, each an array no one else holds: a value whose memory belongs to a constant,
    a feed or a remembered shape-only value, to a buffer that is not a numpy array (a memory
    map), or to another returned value is copied; a fresh result (or a view of one no one else
    returns) is returned as it is."""
    external = plan.const_roots | remembered | {id(array_root(v)) for v in feeds.values()}
    seen: set[int] = set()
    out = []
    for value in values:
        root = array_root(value)
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
            value = check_output(value, specs[key], step)
            env[key] = value
            if keep is None or key in keep:
                kept[key] = value
        for key in step.release:
            env.pop(key, None)
    outputs = owned_outputs([env[key] for key in plan.results], plan, feeds)
    kept = {k: np.array(v, copy=True) for k, v in kept.items()}
    return outputs, kept, times
