"""IR corpora written by OpenVINO itself, for the oracle tests (test_openvino_shapes.py, test_conformance.py).

Two corpora, each built once per test session into a pytest temporary directory:

* **opset13**: small graphs made with ``openvino.opset13`` and written with ``ov.save_model``
  (default ``compress_to_fp16=True``; graphs holding f32 constants are written a second time with
  ``compress_to_fp16=False``). They cover every OpenVINO reduction x axes patterns x keep_dims on
  static, partially dynamic (``-1``, intervals) and rank-0 data, axes from runtime Parameters, axes
  through ShapeOf/Range/Squeeze/Convert/... chains of constants, and the glue ops of SPEC §2.3.
  Each graph is built twice at once: as OpenVINO nodes, and as a numpy float64 reference computed
  here, independently of irexec (floats in float64, integers in int64, booleans as bool).
* **onnx**: the ONNX backend node tests of the reduction family and Mean
  (``onnx.backend.test.case.node.collect_testcases``, names ``test_reduce_*`` and ``test_mean_*``),
  each converted by ``ov.convert_model`` and written by ``ov.save_model``, with the ONNX inputs and
  expected outputs kept beside.

Nothing here imports irexec: the corpus and its reference are the oracle.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import warnings
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

# ---------------------------------------------------------------------------------------------
# OpenVINO access
# ---------------------------------------------------------------------------------------------


class OpenVINOCPUDisagreement(UserWarning):
    """OpenVINO's CPU plugin disagrees with the oracle (or refuses the model). Reported, not asserted."""


def ov_module():
    import openvino as ov

    return ov


def opset13():
    try:
        import openvino.opset13 as ops
    except ImportError:  # older layouts
        import openvino.runtime.opset13 as ops
    return ops


@contextlib.contextmanager
def no_telemetry():
    """`ov.convert_model` starts OpenVINO telemetry, which forks a process from a worker thread
    (numba's TBB layer then warns the child may be broken) and talks to the network. Telemetry is
    off in CI (`CI=true`); the flag is read when the telemetry singleton is first made."""
    old = os.environ.get("CI")
    os.environ["CI"] = "true"
    try:
        yield
    finally:
        if old is None:
            del os.environ["CI"]
        else:
            os.environ["CI"] = old


def ov_shape(pshape) -> tuple | None:
    """An OpenVINO PartialShape in irexec's terms: None for a dynamic rank, None per dynamic or
    interval dim."""
    if pshape.rank.is_dynamic:
        return None
    return tuple(int(d.get_length()) if d.is_static else None for d in pshape)


def ov_etype(t) -> str:
    """OpenVINO element type name as irexec spells it ('f32', 'boolean', ...)."""
    return t.get_type_name()


# ---------------------------------------------------------------------------------------------
# Element types, tolerances, the reference's value conventions
# ---------------------------------------------------------------------------------------------

FLOAT = ("f64", "f32", "f16", "bf16")
INTS = ("i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64")

# numpy dtype of the arrays irexec returns (bf16 surfaces as float32, SPEC §5)
NUMPY = {
    "f64": np.dtype(np.float64),
    "f32": np.dtype(np.float32),
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(np.float32),
    "i8": np.dtype(np.int8),
    "u8": np.dtype(np.uint8),
    "i16": np.dtype(np.int16),
    "u16": np.dtype(np.uint16),
    "i32": np.dtype(np.int32),
    "u32": np.dtype(np.uint32),
    "i64": np.dtype(np.int64),
    "u64": np.dtype(np.uint64),
    "boolean": np.dtype(np.bool_),
}

# (rtol, atol) of a float result against the float64 reference: about one unit in the last place
# of the result type (one final rounding, a few roundings for glue chains); integers and booleans
# are compared exactly.
TOLERANCE = {"f64": (1e-12, 1e-12), "f32": (1e-5, 1e-6), "f16": (1e-3, 0.0), "bf16": (8e-3, 0.0)}


def round_to(value: np.ndarray, et: str) -> np.ndarray:
    """A float64 array rounded to the values element type `et` can hold (still float64)."""
    v = np.asarray(value, np.float64)
    if et == "f32":
        return v.astype(np.float32).astype(np.float64)
    if et == "f16":
        return v.astype(np.float16).astype(np.float64)
    if et == "bf16":
        f = np.ascontiguousarray(v.astype(np.float32))
        bits = f.view(np.uint32).astype(np.uint64)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000  # round to nearest even
        out = bits.astype(np.uint32).view(np.float32)
        return np.where(np.isnan(f), f, out).astype(np.float64)
    return v


def ref_value(arr: np.ndarray, et: str) -> np.ndarray:
    """How the reference holds a tensor of element type `et`."""
    if et in FLOAT:
        return np.asarray(arr, np.float64)
    if et == "boolean":
        return np.asarray(arr, np.bool_)
    return np.asarray(arr).astype(np.int64)


def compare(got: np.ndarray, want: np.ndarray, et: str) -> str | None:
    """None when `got` (an irexec or OpenVINO result of element type `et`) matches the reference
    `want`; else a one-paragraph description of the difference."""
    got = np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    try:
        if et in FLOAT:
            rtol, atol = TOLERANCE[et]
            with np.errstate(over="ignore"):  # rounded once to the result type (f16 may overflow)
                want = round_to(want, et)
            np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol, atol=atol, equal_nan=True)
        else:
            np.testing.assert_array_equal(ref_value(got, et), want)
    except AssertionError as e:
        return str(e).strip()
    return None


# ---------------------------------------------------------------------------------------------
# A dual graph builder: OpenVINO nodes + a numpy float64 reference, node by node
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class V:
    """One tensor: its OpenVINO output, element type and reference (feeds -> value)."""

    out: Any
    et: str
    ref: Callable[[dict], np.ndarray]


@dataclass
class InputSpec:
    """A model input and how to feed it: random values in [low, high] of `run_shape`, or fixed
    `values` (one per data set, cycled)."""

    name: str
    et: str
    run_shape: tuple[int, ...]
    low: float = -2.0
    high: float = 2.0
    values: tuple = ()


def normalize(axes, rank: int) -> tuple[int, ...]:
    out = set()
    for a in np.asarray(axes).reshape(-1).tolist():
        a = int(a)
        out.add(a + rank if a < 0 else a)
    return tuple(sorted(out)) if rank > 0 else ()


def reduce_reference(kind: str, x: np.ndarray, axes, keep: bool, et: str) -> np.ndarray:
    """The reduction, the obvious way, in float64 / int64 / bool. Reducing over no axis leaves each
    element alone as its own one-element set (so L1/L2 give |x|, the others x)."""
    ax = normalize(axes, x.ndim)
    if kind in ("and", "or"):
        f = np.all if kind == "and" else np.any
        return np.asarray(f(x, axis=ax, keepdims=keep))
    n = math.prod(x.shape[a] for a in ax)
    if kind == "sum":
        r = np.sum(x, axis=ax, keepdims=keep)
    elif kind == "mean":
        s = np.sum(x, axis=ax, keepdims=keep)
        if et in FLOAT:
            r = s / n if n else np.full_like(s, np.nan)
        elif n == 0:  # integer mean of nothing: 0 (SPEC §2.1)
            r = np.zeros_like(s)
        else:  # integer mean: the exact sum divided with truncation toward zero
            q = np.abs(s) // n
            r = np.where(s < 0, -q, q)
    elif kind == "prod":
        r = np.prod(x, axis=ax, keepdims=keep)
    elif kind in ("max", "min") and n == 0:  # empty set: the identity of max / min (ONNX's rule)
        shape = tuple(1 if i in ax else d for i, d in enumerate(x.shape) if keep or i not in ax)
        if et in FLOAT:
            fill = -np.inf if kind == "max" else np.inf
        else:
            info = np.iinfo(NUMPY[et])
            fill = info.min if kind == "max" else info.max
        r = np.full(shape, fill, np.float64 if et in FLOAT else np.int64)
    elif kind == "max":
        r = np.max(x, axis=ax, keepdims=keep)
    elif kind == "min":
        r = np.min(x, axis=ax, keepdims=keep)
    elif kind == "l1":
        r = np.sum(np.abs(x), axis=ax, keepdims=keep)
    elif kind == "l2":
        r = np.sqrt(np.sum(x * x, axis=ax, keepdims=keep).astype(np.float64))
        if et not in FLOAT:
            r = np.trunc(r).astype(np.int64)
    else:
        raise ValueError(kind)
    return np.asarray(r)


REDUCE_TYPES = {
    "mean": "ReduceMean",
    "sum": "ReduceSum",
    "prod": "ReduceProd",
    "max": "ReduceMax",
    "min": "ReduceMin",
    "l1": "ReduceL1",
    "l2": "ReduceL2",
    "and": "ReduceLogicalAnd",
    "or": "ReduceLogicalOr",
}


class Graph:
    """Builds one opset13 model and its reference together."""

    def __init__(self, name: str, ov_cpu: bool = True):
        self.name = name
        self.ov_cpu = ov_cpu
        self.ov = ov_module()
        self.ops = opset13()
        self.params: list = []
        self.inputs: list[InputSpec] = []
        self.outputs: list[tuple[str, V]] = []

    # -- leaves ---------------------------------------------------------------------------
    def param(self, name, shape, et, run_shape, low=-2.0, high=2.0, values=()) -> V:
        ov = self.ov
        dims = [d if isinstance(d, ov.Dimension) else ov.Dimension(d) for d in shape]
        p = self.ops.parameter(ov.PartialShape(dims), getattr(ov.Type, et), name=name)
        p.output(0).get_tensor().set_names({name})
        self.params.append(p)
        self.inputs.append(InputSpec(name, et, tuple(run_shape), low, high, tuple(values)))
        return V(p.output(0), et, lambda f, name=name, et=et: ref_value(f[name], et))

    def const(self, value, dtype=np.int64) -> V:
        arr = np.array(value, dtype)
        et = {
            np.dtype(np.float32): "f32",
            np.dtype(np.float16): "f16",
            np.dtype(np.float64): "f64",
            np.dtype(np.int32): "i32",
            np.dtype(np.int64): "i64",
            np.dtype(np.bool_): "boolean",
        }[arr.dtype]
        node = self.ops.constant(arr)
        val = ref_value(arr, et)
        return V(node.output(0), et, lambda f, val=val: val)

    def axes(self, value, dtype=np.int64) -> V:
        return self.const(value, dtype)

    # -- reductions -----------------------------------------------------------------------
    def reduce(self, kind: str, x: V, axes: V, keep: bool) -> V:
        fn = {
            "mean": self.ops.reduce_mean,
            "sum": self.ops.reduce_sum,
            "prod": self.ops.reduce_prod,
            "max": self.ops.reduce_max,
            "min": self.ops.reduce_min,
            "l1": self.ops.reduce_l1,
            "l2": self.ops.reduce_l2,
            "and": self.ops.reduce_logical_and,
            "or": self.ops.reduce_logical_or,
        }[kind]
        node = fn(x.out, axes.out, keep)
        return V(node.output(0), x.et, lambda f: reduce_reference(kind, x.ref(f), axes.ref(f), keep, x.et))

    # -- element-wise ---------------------------------------------------------------------
    def binary(self, kind: str, a: V, b: V, pythondiv: bool = True) -> V:
        o = self.ops
        node = {
            "add": o.add,
            "sub": o.subtract,
            "mul": o.multiply,
            "div": o.divide,
            "max": o.maximum,
            "min": o.minimum,
            "pow": o.power,
        }[kind](a.out, b.out)
        if kind == "div" and not pythondiv:
            node.set_attribute("m_pythondiv", False)
        is_float = a.et in FLOAT

        def ref(f):
            x, y = a.ref(f), b.ref(f)
            if kind == "add":
                return x + y
            if kind == "sub":
                return x - y
            if kind == "mul":
                return x * y
            if kind == "max":
                return np.maximum(x, y)
            if kind == "min":
                return np.minimum(x, y)
            if kind == "pow":
                return np.power(x, y)
            if is_float:
                return x / y
            if pythondiv:
                return np.floor_divide(x, y)
            q = np.abs(x) // np.abs(y)
            return np.where((x < 0) != (y < 0), -q, q)

        return V(node.output(0), a.et, ref)

    def unary(self, kind: str, a: V) -> V:
        o = self.ops
        node = {"abs": o.abs, "exp": o.exp, "log": o.log, "sqrt": o.sqrt, "neg": o.negative}[kind](a.out)
        fn = {"abs": np.abs, "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "neg": np.negative}[kind]
        return V(node.output(0), a.et, lambda f: fn(a.ref(f)))

    # -- conversions ----------------------------------------------------------------------
    @staticmethod
    def _convert_ref(value: np.ndarray, src: str, dst: str) -> np.ndarray:
        if dst == "boolean":
            return value != 0
        if dst in FLOAT:
            return round_to(np.asarray(value, np.float64), dst)
        if src in FLOAT:
            return np.trunc(value).astype(np.int64)
        return np.asarray(value).astype(np.int64)

    def convert(self, a: V, dst: str) -> V:
        node = self.ops.convert(a.out, dst)
        return V(node.output(0), dst, lambda f: self._convert_ref(a.ref(f), a.et, dst))

    def convert_like(self, a: V, like: V) -> V:
        node = self.ops.convert_like(a.out, like.out)
        return V(node.output(0), like.et, lambda f: self._convert_ref(a.ref(f), a.et, like.et))

    # -- shapes ---------------------------------------------------------------------------
    def squeeze(self, a: V, axes: V) -> V:
        node = self.ops.squeeze(a.out, axes.out)

        def ref(f):
            x = a.ref(f)
            ax = normalize(axes.ref(f), x.ndim)
            if not ax:
                return np.squeeze(x)
            # a listed axis whose dim is not 1 is ignored (OpenVINO Squeeze-1 since 2024.3)
            return np.squeeze(x, axis=tuple(a for a in ax if x.shape[a] == 1))

        return V(node.output(0), a.et, ref)

    def unsqueeze(self, a: V, axes: V) -> V:
        node = self.ops.unsqueeze(a.out, axes.out)

        def ref(f):
            x = a.ref(f)
            av = np.asarray(axes.ref(f)).reshape(-1)
            return np.expand_dims(x, normalize(av, x.ndim + len(set(av.tolist()))))

        return V(node.output(0), a.et, ref)

    def reshape(self, a: V, target: V, special_zero: bool) -> V:
        node = self.ops.reshape(a.out, target.out, special_zero)

        def ref(f):
            x = a.ref(f)
            t = [int(v) for v in np.asarray(target.ref(f)).reshape(-1)]
            if special_zero:
                t = [x.shape[i] if v == 0 else v for i, v in enumerate(t)]
            return x.reshape(t)

        return V(node.output(0), a.et, ref)

    def shape_of(self, a: V, et: str = "i64") -> V:
        node = self.ops.shape_of(a.out, et)
        return V(node.output(0), et, lambda f: np.array(a.ref(f).shape, np.int64))

    def range(self, start: V, stop: V, step: V, et: str) -> V:
        node = self.ops.range(start.out, stop.out, step.out, et)

        def ref(f):
            s0, s1, st = (np.asarray(v.ref(f)).reshape(()).item() for v in (start, stop, step))
            if et not in FLOAT:
                s0, s1, st = int(s0), int(s1), int(st)
            n = max(math.ceil((s1 - s0) / st), 0)
            vals = s0 + st * np.arange(n, dtype=np.float64 if et in FLOAT else np.int64)
            return round_to(vals, et) if et in FLOAT else vals

        return V(node.output(0), et, ref)

    # -- outputs --------------------------------------------------------------------------
    def output(self, name: str, v: V) -> None:
        assert all(name != n for n, _ in self.outputs), name
        v.out.get_tensor().set_names({name})
        self.outputs.append((name, v))

    def model(self):
        results = [self.ops.result(v.out) for _, v in self.outputs]
        return self.ov.Model(results, self.params, self.name)


# ---------------------------------------------------------------------------------------------
# The opset13 corpus
# ---------------------------------------------------------------------------------------------

KEEP = (True, False)
# name -> axes value for rank-3 data; every one is accepted by OpenVINO's shape inference
AXES_PATTERNS = {
    "ax1": [1],
    "neg": [-1],
    "dup": [1, 1],
    "dupneg": [0, -3],
    "multi": [0, 2],
    "all": [0, 1, 2],
    "allneg": [-3, -2, -1],
    "scalar": 1,  # rank-0 axes
}
# Empty axes are in models of their own: OpenVINO's CPU plugin refuses a whole model holding one
# ("gets incorrect number of input/output dimensions"), which would hide its other answers.
# rank-0 data: OpenVINO refuses keep_dims=true with a non-empty axes list ("out-of-range dimension")
RANK0_PATTERNS = [
    ("ax0", [0], False),
    ("neg", [-1], False),
    ("scalar", 0, False),
    ("scalarneg", -1, False),
    ("dup", [0, 0], False),
    ("empty_keep", [], True),
    ("empty", [], False),
]


def _data(g: Graph, kind: str, name: str, shape, run_shape) -> V:
    if kind in ("and", "or"):
        return g.param(name, shape, "boolean", run_shape)
    return g.param(name, shape, "f32", run_shape)


def _reduce_patterns(g: Graph, kind: str, x: V) -> None:
    for pname, ax in AXES_PATTERNS.items():
        for keep in KEEP:
            g.output(f"{pname}_{'keep' if keep else 'drop'}", g.reduce(kind, x, g.axes(ax), keep))
    # the axes may be any integer type
    g.output("i32axes_keep", g.reduce(kind, x, g.axes([0, 2], np.int32), True))
    g.output("i32axes_drop", g.reduce(kind, x, g.axes([-1], np.int32), False))


def _reduce_static(kind: str) -> Graph:
    g = Graph(f"reduce_{kind}_static")
    _reduce_patterns(g, kind, _data(g, kind, "x", [2, 3, 4], (2, 3, 4)))
    return g


def _reduce_dynamic(kind: str) -> Graph:
    ov = ov_module()
    g = Graph(f"reduce_{kind}_dynamic")
    x = _data(g, kind, "x", [-1, ov.Dimension(2, 5), 4], (3, 4, 4))
    _reduce_patterns(g, kind, x)
    # open-ended intervals: "3.." and "..6"
    y = _data(g, kind, "y", [ov.Dimension(3, -1), 2, ov.Dimension(0, 6)], (3, 2, 5))
    for keep in KEEP:
        tag = "keep" if keep else "drop"
        g.output(f"y0_{tag}", g.reduce(kind, y, g.axes([0]), keep))
        g.output(f"y12_{tag}", g.reduce(kind, y, g.axes([-1, 1]), keep))
    return g


def _reduce_empty_axes(kind: str) -> Graph:
    """Empty axes: the identity, whatever keep_dims (SPEC §2.1), on static and dynamic data."""
    ov = ov_module()
    g = Graph(f"reduce_{kind}_empty_axes")
    x = _data(g, kind, "x", [2, 3, 4], (2, 3, 4))
    y = _data(g, kind, "y", [-1, ov.Dimension(2, 5), 4], (3, 2, 4))
    for keep in KEEP:
        tag = "keep" if keep else "drop"
        g.output(f"x_{tag}", g.reduce(kind, x, g.axes([]), keep))
        g.output(f"y_{tag}", g.reduce(kind, y, g.axes([]), keep))
        g.output(f"x_i32_{tag}", g.reduce(kind, x, g.axes([], np.int32), keep))
    return g


def _reduce_rank0(kind: str) -> Graph:
    g = Graph(f"reduce_{kind}_rank0")
    if kind in ("and", "or"):
        x = g.param("x", [], "boolean", (), values=(np.array(True), np.array(False)))
    else:
        x = g.param("x", [], "f32", (), values=(np.array(-1.25, np.float32), np.array(0.75, np.float32)))
    for pname, ax, keep in RANK0_PATTERNS:
        g.output(pname, g.reduce(kind, x, g.axes(ax), keep))
    return g


def _reduce_runtime(kind: str, which: str) -> Graph:
    """Axes from Parameters. `which`: keep (keep_dims=true, every axes shape); single (keep_dims=false,
    scalar and 1-element axes: OpenVINO infers rank-1 dynamic dims); multi (keep_dims=false with
    2-element and dynamic-length axes: dynamic rank, which OpenVINO's CPU plugin refuses)."""
    ov = ov_module()
    g = Graph(f"reduce_{kind}_runtime_{which}")
    x = _data(g, kind, "x", [2, 3, 4], (2, 3, 4))
    y = _data(g, kind, "y", [-1, 3, ov.Dimension(1, 8)], (4, 3, 5))
    axes = []
    if which in ("keep", "single"):
        axes.append(g.param("a_scalar", [], "i64", (), values=(np.array(-1), np.array(0))))
        axes.append(g.param("a_one", [1], "i64", (1,), values=(np.array([1]), np.array([-3]))))
    if which in ("keep", "multi"):
        two = (np.array([0, 2], np.int32), np.array([2, -2], np.int32))
        axes.append(g.param("a_two", [2], "i32", (2,), values=two))
        axes.append(g.param("a_dyn", [-1], "i64", (3,), values=(np.array([2, 0, -3]), np.array([], np.int64))))
    keep = which == "keep"
    for a in axes:
        name = a.out.get_node().get_friendly_name()
        g.output(f"x_{name}", g.reduce(kind, x, a, keep))
        g.output(f"y_{name}", g.reduce(kind, y, a, keep))
    return g


def _axes_chains(dynamic: bool) -> Graph:
    """Axes computed by chains of constants and shapes: irexec folds them at load (SPEC §3)."""
    g = Graph(f"axes_chains_{'dynamic' if dynamic else 'static'}")
    x = g.param("x", [-1, 3, -1] if dynamic else [2, 3, 4], "f32", (2, 3, 4))
    rank_vec = g.shape_of(g.shape_of(x))  # [3], constant even for dynamic dims
    rank = g.squeeze(rank_vec, g.axes([0]))  # 3 (scalar)
    all_axes = g.range(g.const(0), rank, g.const(1), "i64")  # [0, 1, 2]
    g.output("range_all", g.reduce("sum", x, all_axes, False))
    last = g.binary("sub", rank_vec, g.const([1]))  # [2]
    g.output("shape_minus_1", g.reduce("max", x, last, True))
    g.output("convert_f32", g.reduce("mean", x, g.convert(g.const([0.0, 2.0], np.float32), "i64"), False))
    g.output("squeeze_const", g.reduce("l1", x, g.squeeze(g.const([[1]]), g.axes([0])), True))
    g.output("unsqueeze_const", g.reduce("min", x, g.unsqueeze(g.const(1), g.axes([0])), False))
    g.output("reshape_const", g.reduce("l2", x, g.reshape(g.const([[0, 2]]), g.const([-1]), False), False))
    one = g.shape_of(g.const(np.zeros((1,), np.float32), np.float32))  # [1]
    g.output("shapeof_const", g.reduce("prod", x, one, True))
    i32 = functools.partial(g.const, dtype=np.int32)
    g.output("range_i32", g.reduce("sum", x, g.range(i32(2), i32(-1), i32(-2), "i32"), True))  # [2, 0]
    g.output("convert_like", g.reduce("sum", x, g.convert_like(g.const([1.0], np.float32), i32([0])), False))
    one_i32 = g.binary("sub", g.shape_of(rank_vec, "i32"), g.const([2], np.int32))  # [1] - [2] = [-1]
    g.output("shapeof_i32", g.reduce("mean", x, one_i32, True))
    return g


def _glue_binary(dynamic: bool) -> Graph:
    ov = ov_module()
    g = Graph(f"glue_binary_{'dynamic' if dynamic else 'static'}")
    if dynamic:
        a = g.param("a", [-1, 3, ov.Dimension(2, 6)], "f32", (2, 3, 4))
        b = g.param("b", [3, -1], "f32", (3, 1), low=1.0, high=2.0)
    else:
        a = g.param("a", [2, 3, 4], "f32", (2, 3, 4))
        b = g.param("b", [3, 1], "f32", (3, 1), low=1.0, high=2.0)
    for kind in ("add", "sub", "mul", "div", "max", "min"):
        g.output(kind, g.binary(kind, a, b))
    g.output("pow", g.binary("pow", b, g.const([0.5, 2.0, -1.0, 3.0], np.float32)))
    # f32 constants, exactly representable in f16 (so compress_to_fp16 keeps their values)
    g.output("mul_const", g.binary("mul", a, g.const([0.5, 1.5, -2.0, 0.25], np.float32)))
    g.output("add_scalar", g.binary("add", g.const(0.75, np.float32), a))
    return g


def _glue_unary() -> Graph:
    g = Graph("glue_unary")
    a = g.param("a", [2, 3, 4], "f32", (2, 3, 4))
    g.output("abs", g.unary("abs", a))
    g.output("neg", g.unary("neg", a))
    g.output("exp", g.unary("exp", a))
    pos = g.binary("add", g.unary("abs", a), g.const(0.5, np.float32))
    g.output("log", g.unary("log", pos))
    g.output("sqrt", g.unary("sqrt", pos))
    g.output("pow_pos", g.binary("pow", pos, a))
    return g


def _glue_int(et: str) -> Graph:
    g = Graph(f"glue_{et}")
    dt = NUMPY[et]
    a = g.param("a", [2, 3, 4], et, (2, 3, 4), low=-9, high=9)
    b = g.param("b", [3, 4], et, (3, 4), values=(np.array([[1, 2, -3, 4], [-1, 7, -2, 3], [5, -5, 2, -4]], dt),))
    e = g.param("e", [4], et, (4,), values=(np.array([0, 1, 2, 3], dt),))
    for kind in ("add", "sub", "mul", "max", "min"):
        g.output(kind, g.binary(kind, a, b))
    g.output("div_floor", g.binary("div", a, b))
    g.output("div_trunc", g.binary("div", a, b, pythondiv=False))
    g.output("pow", g.binary("pow", a, e))
    g.output("abs", g.unary("abs", a))
    g.output("neg", g.unary("neg", a))
    for kind in ("sum", "mean", "prod", "max", "min", "l1", "l2"):
        g.output(f"reduce_{kind}", g.reduce(kind, a, g.axes([0, 2]), kind in ("mean", "l2")))
    g.output("reduce_mean_all", g.reduce("mean", a, g.axes([0, 1, 2]), False))
    return g


def _glue_convert() -> Graph:
    g = Graph("glue_convert")
    a = g.param("a", [2, 3, 4], "f32", (2, 3, 4), low=-9.0, high=9.0)
    i = g.param("i", [2, 3], "i32", (2, 3), low=-100, high=100)
    q = g.param("q", [2, 3], "i64", (2, 3), low=-100, high=100)
    b = g.param("b", [5], "boolean", (5,))
    g.output("f32_to_i32", g.convert(a, "i32"))
    g.output("f32_to_i64", g.convert(a, "i64"))
    g.output("f32_to_f16", g.convert(a, "f16"))
    g.output("f32_to_f64", g.convert(a, "f64"))
    g.output("f32_to_bool", g.convert(g.convert(a, "i32"), "boolean"))
    g.output("i32_to_f32", g.convert(i, "f32"))
    g.output("i64_to_i32", g.convert(q, "i32"))
    g.output("bool_to_f32", g.convert(b, "f32"))
    g.output("bool_to_i64", g.convert(b, "i64"))
    g.output("like_i64", g.convert_like(a, q))
    g.output("like_f32", g.convert_like(i, a))
    g.output("f16_roundtrip_sum", g.reduce("sum", g.convert(g.convert(a, "f16"), "f32"), g.axes([1]), False))
    return g


def _glue_shapes(dynamic: bool) -> Graph:
    ov = ov_module()
    g = Graph(f"glue_shapes_{'dynamic' if dynamic else 'static'}")
    x = g.param("x", [-1, 1, ov.Dimension(2, 6)] if dynamic else [2, 1, 4], "f32", (2, 1, 4))
    g.output("squeeze_1", g.squeeze(x, g.axes([1])))
    g.output("squeeze_neg", g.squeeze(x, g.axes([-2])))
    g.output("squeeze_scalar", g.squeeze(x, g.axes(1)))
    if not dynamic:
        g.output("squeeze_ignored", g.squeeze(x, g.axes([1, 2])))  # dim 2 is not 1: kept
    sq_axis = g.param("sq_axis", [1], "i64", (1,), values=(np.array([1]), np.array([-2])))
    g.output("squeeze_runtime", g.squeeze(x, sq_axis))
    g.output("unsqueeze", g.unsqueeze(x, g.axes([0, -1])))
    g.output("unsqueeze_scalar", g.unsqueeze(x, g.axes(2)))
    g.output("reshape_zero", g.reshape(x, g.const([0, -1]), True))
    g.output("reshape_flat", g.reshape(x, g.const([-1]), False))
    g.output("reshape_split", g.reshape(x, g.const([-1, 2, 2]), False))
    g.output("reshape_zero_keep", g.reshape(x, g.const([0, 0, 2, 2]), True))
    g.output("shapeof_i64", g.shape_of(x))
    g.output("shapeof_i32", g.shape_of(x, "i32"))
    # Range: constants (folded) and a stop computed from the (possibly dynamic) input shape
    g.output("range_f32", g.range(g.const(0.5, np.float32), g.const(3.0, np.float32), g.const(0.75, np.float32), "f32"))
    g.output("range_down", g.range(g.const(5, np.int32), g.const(-2, np.int32), g.const(-2, np.int32), "i32"))
    g.output("range_empty", g.range(g.const(5), g.const(7), g.const(-2), "i64"))
    numel = g.reduce("prod", g.shape_of(x), g.axes([0]), False)
    g.output("range_numel", g.range(g.const(0), numel, g.const(1), "i64"))
    if not dynamic:
        g.output("reshape_to_shape", g.reshape(g.unary("neg", x), g.shape_of(x), False))
    return g


def _interval_dims() -> Graph:
    """Where OpenVINO's shape inference uses more than "dynamic": interval bounds (2..6 is never 1,
    so Squeeze keeps it) and ShapeOf's per-element values (a Reshape to ShapeOf(x) has x's shape)."""
    ov = ov_module()
    g = Graph("interval_dims")
    x = g.param("x", [-1, 1, ov.Dimension(2, 6)], "f32", (2, 1, 4))
    g.output("squeeze_interval", g.squeeze(x, g.axes([1, 2])))
    g.output("reshape_to_shapeof", g.reshape(g.unary("neg", x), g.shape_of(x), False))
    return g


def _lse_and_mean() -> Graph:
    """What OpenVINO's ONNX converter writes for ReduceLogSumExp and Mean, made by hand."""
    g = Graph("lse_and_mean")
    x = g.param("x", [2, 3, 4], "f32", (2, 3, 4), low=-4.0, high=4.0)
    m = g.reduce("max", x, g.axes([1]), True)
    s = g.reduce("sum", g.unary("exp", g.binary("sub", x, m)), g.axes([1]), True)
    g.output("logsumexp", g.binary("add", g.unary("log", s), m))
    ins = [g.param(f"m{i}", [2, 3, 4] if i < 2 else [4], "f32", (2, 3, 4) if i < 2 else (4,)) for i in range(4)]
    acc = ins[0]
    for v in ins[1:]:
        acc = g.binary("add", acc, v)
    g.output("mean4", g.binary("mul", acc, g.const(0.25, np.float32)))
    return g


def _reduce_dtype(et: str) -> Graph:
    g = Graph(f"reduce_{et}", ov_cpu=et != "bf16")
    x = g.param("x", [2, 3, 5], et, (2, 3, 5), low=-4.0, high=4.0)
    kinds = ("sum", "mean", "prod", "max", "min", "l1", "l2")
    for kind in kinds:
        g.output(f"{kind}_1", g.reduce(kind, x, g.axes([1]), False))
        g.output(f"{kind}_all", g.reduce(kind, x, g.axes([0, 1, 2]), True))
    return g


def _reduce_nan_inf() -> Graph:
    """NaN propagates through every float reduction, Max and Min included (numpy's rule); inf too."""
    g = Graph("reduce_nan_inf")
    v = np.array([[1.0, np.nan, 3.0], [-np.inf, 1.0, 2.0], [np.inf, -2.0, 0.5]], np.float32)
    x = g.param("x", [3, 3], "f32", (3, 3), values=(v, v.T.copy()))
    for kind in ("sum", "mean", "prod", "max", "min", "l1", "l2"):
        g.output(f"{kind}_rows", g.reduce(kind, x, g.axes([1]), False))
        g.output(f"{kind}_cols", g.reduce(kind, x, g.axes([0]), True))
    return g


def _reduce_empty_set() -> Graph:
    """Reducing zero-size dims: the empty-set values of SPEC §2.1 (static and dynamic zero dims)."""
    g = Graph("reduce_empty_set")
    x = g.param("x", [2, 0, 4], "f32", (2, 0, 4))
    y = g.param("y", [2, -1], "f32", (2, 0))
    i = g.param("i", [2, 0], "i32", (2, 0))
    b = g.param("b", [0, 3], "boolean", (0, 3))
    for kind in ("sum", "mean", "prod", "max", "min", "l1", "l2"):
        g.output(f"x_{kind}", g.reduce(kind, x, g.axes([1]), True))
        g.output(f"x_{kind}_all", g.reduce(kind, x, g.axes([0, 1, 2]), False))
        g.output(f"y_{kind}", g.reduce(kind, y, g.axes([1]), False))
        g.output(f"i_{kind}", g.reduce(kind, i, g.axes([-1]), False))
    for kind in ("and", "or"):
        g.output(f"b_{kind}", g.reduce(kind, b, g.axes([0]), False))
    return g


def _reduce_large() -> Graph:
    """Long reductions (the kernels' parallel row split and column tiles) against float64."""
    g = Graph("reduce_large")
    rows = g.param("rows", [3, 200003], "f32", (3, 200003), low=0.0, high=1.0)
    cols = g.param("cols", [70001, 5], "f32", (70001, 5), low=0.0, high=1.0)
    for kind in ("sum", "mean", "l2", "max"):
        g.output(f"rows_{kind}", g.reduce(kind, rows, g.axes([1]), False))
        g.output(f"cols_{kind}", g.reduce(kind, cols, g.axes([0]), True))
    return g


REDUCE_KINDS = tuple(REDUCE_TYPES)


def _builders() -> dict[str, Callable[[], Graph]]:
    b: dict[str, Callable[[], Graph]] = {}
    for kind in REDUCE_KINDS:
        b[f"reduce_{kind}_static"] = functools.partial(_reduce_static, kind)
        b[f"reduce_{kind}_dynamic"] = functools.partial(_reduce_dynamic, kind)
        b[f"reduce_{kind}_empty_axes"] = functools.partial(_reduce_empty_axes, kind)
        b[f"reduce_{kind}_rank0"] = functools.partial(_reduce_rank0, kind)
        for which in ("keep", "single", "multi"):
            b[f"reduce_{kind}_runtime_{which}"] = functools.partial(_reduce_runtime, kind, which)
    for dyn in (False, True):
        tag = "dynamic" if dyn else "static"
        b[f"axes_chains_{tag}"] = functools.partial(_axes_chains, dyn)
        b[f"glue_binary_{tag}"] = functools.partial(_glue_binary, dyn)
        b[f"glue_shapes_{tag}"] = functools.partial(_glue_shapes, dyn)
    b["glue_unary"] = _glue_unary
    b["glue_i32"] = functools.partial(_glue_int, "i32")
    b["glue_i64"] = functools.partial(_glue_int, "i64")
    b["glue_convert"] = _glue_convert
    b["lse_and_mean"] = _lse_and_mean
    b["interval_dims"] = _interval_dims
    for et in ("f16", "f64", "bf16"):
        b[f"reduce_{et}"] = functools.partial(_reduce_dtype, et)
    b["reduce_nan_inf"] = _reduce_nan_inf
    b["reduce_empty_set"] = _reduce_empty_set
    b["reduce_large"] = _reduce_large
    return b


BUILDERS = _builders()


@dataclass
class CorpusModel:
    """One IR file of the opset13 corpus and everything needed to check it."""

    name: str  # builder name + "-fp16c" (compress_to_fp16=True) or "-fp32" (False)
    xml: Path
    compressed: bool
    inputs: list[InputSpec]
    outputs: list[tuple[str, V]]
    ov_cpu: bool = True
    has_f32_consts: bool = False

    def data_sets(self) -> list[dict[str, np.ndarray]]:
        """Seeded random feeds (one dict per data set), same for both compression variants."""
        base = self.name.rsplit("-", 1)[0]
        rng = np.random.default_rng(zlib.crc32(base.encode()))
        n = max([len(s.values) for s in self.inputs if s.values] or [1])
        random = {}
        for s in self.inputs:
            if s.values:
                continue
            if s.et == "boolean":
                random[s.name] = rng.random(s.run_shape) < 0.5
            elif s.et in INTS:
                random[s.name] = rng.integers(int(s.low), int(s.high) + 1, s.run_shape).astype(NUMPY[s.et])
            elif s.et in ("f16", "bf16"):
                # multiples of 1/64: exact in f16 and bf16 for |v| < 4
                v = rng.integers(int(s.low * 64), int(s.high * 64) + 1, s.run_shape) / 64.0
                random[s.name] = v.astype(NUMPY[s.et])
            else:
                random[s.name] = rng.uniform(s.low, s.high, s.run_shape).astype(NUMPY[s.et])
        sets = []
        for i in range(n):
            feeds = {}
            for s in self.inputs:
                feeds[s.name] = np.asarray(s.values[i % len(s.values)], NUMPY[s.et]) if s.values else random[s.name]
            sets.append(feeds)
        return sets

    def expected(self, feeds: dict[str, np.ndarray]) -> list[tuple[str, str, np.ndarray]]:
        """(output name, element type, reference value) per output, in Result order."""
        with np.errstate(all="ignore"):
            return [(name, v.et, v.ref(feeds)) for name, v in self.outputs]


def _has_f32_consts(model) -> bool:
    ov = ov_module()
    return any(
        op.get_type_name() == "Constant" and op.get_output_element_type(0) == ov.Type.f32
        for op in model.get_ordered_ops()
    )


@functools.lru_cache(maxsize=1)
def _graphs() -> tuple[tuple[Graph, Any, bool], ...]:
    """Every opset13 graph once per process: (builder, ov.Model, holds f32 constants)."""
    out = []
    for name, build in BUILDERS.items():
        g = build()
        assert g.name == name, (g.name, name)
        model = g.model()
        out.append((g, model, _has_f32_consts(model)))
    return tuple(out)


def _variants(has_f32_consts: bool) -> tuple[bool, ...]:
    """compress_to_fp16 values to write: both when there are f32 constants to compress."""
    return (True, False) if has_f32_consts else (True,)


def _model_id(name: str, compress: bool) -> str:
    return f"{name}-{'fp16c' if compress else 'fp32'}"


@functools.cache
def _opset13_corpus_in(directory: str) -> tuple[CorpusModel, ...]:
    ov = ov_module()
    root = Path(directory)
    out = []
    for g, model, f32c in _graphs():
        for compress in _variants(f32c):
            mid = _model_id(g.name, compress)
            xml = root / f"{mid}.xml"
            ov.save_model(model, str(xml), compress_to_fp16=compress)
            out.append(CorpusModel(mid, xml, compress, g.inputs, g.outputs, g.ov_cpu, f32c))
    return tuple(out)


def opset13_model_ids() -> list[str]:
    """The ids of the opset13 corpus (for parametrize); without OpenVINO, the builder names (the
    tests then skip on importorskip)."""
    try:
        import openvino  # noqa: F401
    except ImportError:
        return [_model_id(name, True) for name in BUILDERS]
    return [_model_id(g.name, c) for g, _, f32c in _graphs() for c in _variants(f32c)]


_DIRS: dict[str, Path] = {}


def _session_dir(tmp_path_factory, key: str) -> Path:
    if key not in _DIRS:
        _DIRS[key] = tmp_path_factory.mktemp(key)
    return _DIRS[key]


def opset13_corpus(tmp_path_factory) -> dict[str, CorpusModel]:
    """Build (once per session) and return the opset13 corpus by id."""
    models = _opset13_corpus_in(str(_session_dir(tmp_path_factory, "ov_opset13")))
    return {m.name: m for m in models}


# ---------------------------------------------------------------------------------------------
# The ONNX corpus
# ---------------------------------------------------------------------------------------------

ONNX_PREFIXES = ("test_reduce_", "test_mean_")


@functools.lru_cache(maxsize=1)
def onnx_testcases() -> tuple:
    """The ONNX backend node test cases of the reduction family and Mean."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        cases = collect_testcases(None)
    return tuple(c for c in cases if c.name.startswith(ONNX_PREFIXES))


def onnx_case_names() -> list[str]:
    return [c.name for c in onnx_testcases()]


@dataclass
class OnnxCase:
    name: str
    onnx_path: Path
    xml: Path | None
    convert_error: str | None
    input_names: list[str]
    output_names: list[str]
    data_sets: list = field(default_factory=list)  # [(inputs, expected outputs)]
    op_types: tuple[str, ...] = ()


@functools.cache
def _onnx_corpus_in(directory: str) -> tuple[OnnxCase, ...]:
    import onnx

    ov = ov_module()
    root = Path(directory)
    out = []
    for case in onnx_testcases():
        onnx_path = root / f"{case.name}.onnx"
        onnx.save(case.model, str(onnx_path))
        xml, err = root / f"{case.name}.xml", None
        try:
            with no_telemetry():
                model = ov.convert_model(str(onnx_path))
            ov.save_model(model, str(xml))
        except Exception as e:  # the converter's refusal is recorded, not hidden
            xml, err = None, f"{type(e).__name__}: {str(e).strip()}"
        out.append(
            OnnxCase(
                case.name,
                onnx_path,
                xml,
                err,
                [i.name for i in case.model.graph.input],
                [o.name for o in case.model.graph.output],
                [(list(ins), list(outs)) for ins, outs in case.data_sets],
                tuple(n.op_type for n in case.model.graph.node),
            )
        )
    return tuple(out)


def onnx_corpus(tmp_path_factory) -> dict[str, OnnxCase]:
    cases = _onnx_corpus_in(str(_session_dir(tmp_path_factory, "ov_onnx")))
    return {c.name: c for c in cases}


def onnx_feeds(case: OnnxCase, inputs: list[np.ndarray], ov_model) -> tuple[list[np.ndarray], list[str]]:
    """The ONNX inputs in the IR's input order (matched through each OpenVINO input's tensor names,
    as a tensor may carry several); and the ONNX inputs the converter dropped."""
    by_name = dict(zip(case.input_names, inputs))
    feeds, used = [], set()
    for port in ov_model.inputs:
        names = [n for n in port.get_names() if n in by_name]
        if len(names) != 1:
            raise AssertionError(f"IR input {sorted(port.get_names())} matches ONNX inputs {names}")
        feeds.append(by_name[names[0]])
        used.add(names[0])
    return feeds, [n for n in case.input_names if n not in used]


# ---------------------------------------------------------------------------------------------
# Comparing IR files: irexec's per-layer inference against OpenVINO's
# ---------------------------------------------------------------------------------------------


def _folded_ops(xml: Path) -> tuple[dict[str, Any], Any]:
    """OpenVINO's ops by friendly name after its own ConstantFolding pass (a folded op becomes a
    Constant keeping its name)."""
    from openvino import passes

    model = ov_core().read_model(str(xml))
    manager = passes.Manager()
    manager.register_pass(passes.ConstantFolding())
    manager.run_passes(model)
    return {op.get_friendly_name(): op for op in model.get_ordered_ops()}, model


def shape_mismatches(irexec_model, xml: Path) -> list[str]:
    """Every layer whose irexec-inferred output shape or element type differs from OpenVINO's
    (``read_model`` of the same file), and every model input/output whose name, shape or type differs.

    OpenVINO's shape inference does not evaluate some constant subgraphs (ConvertLike, the f16
    decompression Convert that compress_to_fp16 writes) while irexec folds every constant chain
    (SPEC §3). Where irexec is more static than ``read_model``, the shape is accepted only if it is
    exactly what OpenVINO itself infers once its ConstantFolding pass has run on the same model."""
    ovm = ov_core().read_model(str(xml))
    ov_ops = list(ovm.get_ordered_ops())
    folded: list = []

    def folded_shape(name: str, i: int, result_index: int | None = None):
        if not folded:
            folded.append(_folded_ops(xml))
        ops, model = folded[0]
        if result_index is not None:
            return ov_shape(model.get_results()[result_index].get_output_partial_shape(0))
        op = ops.get(name)
        return None if op is None or i >= op.get_output_size() else ("ok", ov_shape(op.get_output_partial_shape(i)))

    names = [op.get_friendly_name() for op in ov_ops]
    problems = []
    if len(set(names)) != len(names):
        problems.append(f"OpenVINO friendly names repeat: {sorted(n for n in set(names) if names.count(n) > 1)}")
    layers = {info.name: info for info in irexec_model.layer_infos()}
    if set(layers) != set(names):
        problems.append(
            f"layer names differ: only irexec {sorted(set(layers) - set(names))}, only OpenVINO "
            f"{sorted(set(names) - set(layers))}"
        )
    for op in ov_ops:
        info = layers.get(op.get_friendly_name())
        if info is None:
            continue
        where = f"{op.get_type_name()}-{op.get_type_info().version_id} {op.get_friendly_name()!r}"
        if info.type.lower() != op.get_type_name().lower() and not (
            info.type == "Const" and op.get_type_name() == "Constant"
        ):
            problems.append(f"{where}: irexec type {info.type}")
        if op.get_type_name() == "Result":
            continue
        if len(info.outputs) != op.get_output_size():
            problems.append(f"{where}: irexec has {len(info.outputs)} outputs, OpenVINO {op.get_output_size()}")
            continue
        for i in range(op.get_output_size()):
            want = ov_shape(op.get_output_partial_shape(i))
            want_et = ov_etype(op.get_output_element_type(i))
            got = info.outputs[i]
            if got.shape != want and folded_shape(op.get_friendly_name(), i) != ("ok", got.shape):
                problems.append(
                    f"{where} output {i}: irexec shape {got.shape}, OpenVINO {want} ({op.get_output_partial_shape(i)})"
                )
            if got.element_type != want_et:
                problems.append(f"{where} output {i}: irexec element type {got.element_type}, OpenVINO {want_et}")
    # model outputs, in Result order
    if len(ovm.get_results()) != len(irexec_model.outputs):
        problems.append(f"{len(irexec_model.outputs)} irexec outputs, {len(ovm.get_results())} OpenVINO Results")
    for k, (r, out, port) in enumerate(zip(ovm.get_results(), irexec_model.outputs, ovm.outputs)):
        want = ov_shape(r.get_output_partial_shape(0))
        if out.shape != want and folded_shape("", 0, result_index=k) != out.shape:
            problems.append(f"output {out.name!r}: irexec shape {out.shape}, OpenVINO {want}")
        if out.element_type != ov_etype(r.get_output_element_type(0)):
            problems.append(
                f"output {out.name!r}: irexec element type {out.element_type}, OpenVINO "
                f"{ov_etype(r.get_output_element_type(0))}"
            )
        if port.get_names() and out.name not in port.get_names():
            problems.append(f"output {out.name!r} is none of OpenVINO's names {sorted(port.get_names())}")
    # model inputs, in Parameter order
    if len(ovm.inputs) != len(irexec_model.inputs):
        problems.append(f"{len(irexec_model.inputs)} irexec inputs, OpenVINO {len(ovm.inputs)}")
    for port, inp in zip(ovm.inputs, irexec_model.inputs):
        want = ov_shape(port.get_partial_shape())
        if inp.shape != want:
            problems.append(f"input {inp.name!r}: irexec shape {inp.shape}, OpenVINO {want}")
        if inp.name not in port.get_names():
            problems.append(f"input {inp.name!r} is none of OpenVINO's names {sorted(port.get_names())}")
    return problems


def layer_types(xml: Path) -> set[tuple[str, str]]:
    """(type, version) of every layer of an IR file, straight from the XML."""
    from lxml import etree

    tree = etree.parse(str(xml), etree.XMLParser(resolve_entities=False, no_network=True))
    return {(el.get("type"), el.get("version")) for el in tree.iter("layer")}


# ---------------------------------------------------------------------------------------------
# OpenVINO CPU runs (reported, never asserted)
# ---------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def ov_core():
    return ov_module().Core()


def cpu_has_bf16() -> bool:
    """Whether OpenVINO's CPU plugin computes bf16 natively on this CPU (AVX512-BF16, AMX). Where
    it does not, it runs a model's bf16 layers in f32 and its outputs are no oracle for them."""
    return "BF16" in ov_core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")


def run_ov_cpu(xml: Path, feeds: list[np.ndarray]) -> tuple[list[np.ndarray] | None, str | None]:
    """OpenVINO CPU results in Result order (f32 inference precision), or the plugin's refusal."""
    core = ov_core()
    try:
        compiled = core.compile_model(str(xml), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        res = compiled(feeds)
        return [np.asarray(res[o]) for o in compiled.outputs], None
    except Exception as e:  # report what the plugin says
        lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
        return None, lines[-1] if lines else repr(e)


def report_ov(message: str) -> None:
    warnings.warn(OpenVINOCPUDisagreement(message), stacklevel=2)


def onnx_ids() -> list[str]:
    """Test ids of the ONNX node cases (one placeholder id when onnx is not installed)."""
    try:
        import onnx  # noqa: F401
    except ImportError:
        return ["onnx-not-installed"]
    return onnx_case_names()


def load_or_fail(xml, **options):
    """irexec.load, failing the test (not erroring) when irexec refuses OpenVINO-written IR."""
    import irexec

    try:
        return irexec.load(xml, **options)
    except irexec.IRExecError as e:
        pytest.fail(f"irexec refuses OpenVINO-written IR {xml.name}: {type(e).__name__}: {e}")


def converted_case(onnx_cases, case_name):
    """An ONNX node case OpenVINO converted to IR, and irexec's model of it (a case the
    converter refused is an expected failure naming the converter's error)."""
    case = onnx_cases[case_name]
    if case.xml is None:
        pytest.xfail(f"OpenVINO's ONNX converter refuses {case_name}: {case.convert_error}")
    return case, load_or_fail(case.xml)
