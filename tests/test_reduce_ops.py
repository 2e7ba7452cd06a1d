"""Table-driven: every OpenVINO and ONNX-semantics reduction x dtype x axes pattern, run through
real IR files, against the numpy float64 oracle in tests/support/oracle.py. Edge cases included."""

from __future__ import annotations

import itertools
import math
import zlib

import numpy as np
import pytest

import irexec
from irexec import config
from irexec.dtypes import cast, numpy_dtype, round_bf16
from irexec.kernels import jit
from irexec.kernels.reduce import numpy_path
from irexec.kernels.reduce.plan import reduce_array
from tests.support.irbuild import Net
from tests.support.oracle import reduce_ref

OV_OPS = {
    "ReduceSum": "sum",
    "ReduceMean": "mean",
    "ReduceProd": "prod",
    "ReduceMax": "max",
    "ReduceMin": "min",
    "ReduceL1": "l1",
    "ReduceL2": "l2",
    "ReduceLogicalAnd": "and",
    "ReduceLogicalOr": "or",
}
ONNX_OPS = {
    "ReduceSum": "sum",
    "ReduceMean": "mean",
    "ReduceProd": "prod",
    "ReduceMax": "max",
    "ReduceMin": "min",
    "ReduceL1": "l1",
    "ReduceL2": "l2",
    "ReduceLogSum": "logsum",
    "ReduceLogSumExp": "logsumexp",
    "ReduceSumSquare": "sumsq",
}
FLOATS = ["f32", "f64", "f16", "bf16"]
INTS = ["i8", "u8", "i32", "i64", "u32", "u64"]
SHAPE = (3, 4, 5, 6)
AXES = [(0,), (1,), (3,), (-1,), (0, 2), (1, 3), (1, 2), (0, 1, 2, 3), (2, 2, -2), (0, 3)]


@pytest.fixture(autouse=True, params=["kernels", "numpy"])
def reduce_path(request, monkeypatch):
    """Every case runs through the numba kernels and through the small-tensor numpy path."""
    monkeypatch.setattr(config, "SMALL_ELEMENTS", 0 if request.param == "kernels" else 1 << 62)
    monkeypatch.setattr(config, "JIT", "always" if request.param == "kernels" else "never")
    return request.param


def sample(shape, et, rng, op=None):
    dt = numpy_dtype(et)
    if et == "boolean":
        return rng.random(shape) < 0.6
    if dt.kind == "f":
        lo = 0.5 if op in ("logsum",) else -2.0
        x = rng.uniform(lo, 2.0, shape)
        if op == "prod":
            x = rng.uniform(0.5, 1.5, shape) * rng.choice([-1, 1], shape)
        x = x.astype(np.float32) if et == "bf16" else x.astype(dt)
        return round_bf16(x) if et == "bf16" else x
    info = np.iinfo(dt)
    if op == "prod":
        return rng.integers(max(info.min, -3), min(info.max, 3), shape, endpoint=True).astype(dt)
    return rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(dt)


def seed_of(*key) -> int:
    return zlib.crc32(repr(key).encode())


def norm(axes, rank):
    return tuple(sorted({a + rank if a < 0 else a for a in axes}))


def tolerance(et):
    return {"f32": 2e-6, "f64": 1e-12, "f16": 1e-3, "bf16": 8e-3}.get(et, 0)


def run_one(tmp_path, type_, version, x, et, axes, attrs, axes_as_input=True, runtime_axes=False):
    net = Net()
    data = net.param("data", et, x.shape)
    inputs = [data]
    feeds = {"data": x}
    if axes_as_input:
        if runtime_axes:
            inputs.append(net.param("axes", "i64", (len(axes),)))
            feeds["axes"] = np.array(axes, np.int64)
        else:
            inputs.append(net.const(np.array(axes, np.int64)))
    out = net.op(type_, inputs, attrs, version=version)
    net.result(out, "y")
    model = irexec.load(net.save(tmp_path / "m.xml"))
    return model.infer(feeds)["y"], model


def check(got, want, et, scale=None):
    """got equals want: exactly for integers and booleans; for floats within the output's own
    rounding (rtol) plus, where `scale` (sum |x| over each reduced set) is given, 4 eps32 *
    sum|x|: SPEC §2.1's accuracy class for float32 sums ("as accurate as numpy's pairwise sum
    or better"; numpy's bound is about log2(n) eps32 * sum|x|)."""
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    tol = tolerance(et)
    if not tol:
        np.testing.assert_array_equal(got, want)
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
    finite = np.isfinite(w)
    np.testing.assert_array_equal(g[~finite], w[~finite])
    bound = tol * np.abs(w) + tol * 1e-3
    if scale is not None and et == "f32":
        bound = bound + 4 * 2.0**-24 * np.broadcast_to(scale, w.shape)
    with np.errstate(invalid="ignore"):
        err = np.abs(g - w)
    assert np.all(err[finite] <= bound[finite]), f"max excess {np.max((err - bound)[finite])}"


def sum_abs(x, axes, op, keep):
    """sum |x| (|x|^2 for squares) over each reduced set: the scale of a sum's rounding error."""
    if x.dtype.kind != "f" or op not in ("sum", "mean", "l1", "l2", "sumsq"):
        return None
    v = np.abs(x.astype(np.float64))
    v = v * v if op in ("l2", "sumsq") else v
    s = v.sum(axis=axes, keepdims=keep)
    if op == "mean":
        s = s / max(1, int(np.prod([x.shape[a] for a in axes])))
    if op == "l2":
        s = np.sqrt(s)
    return s


def ov_cases():
    for type_, op in OV_OPS.items():
        dts = ["boolean"] if op in ("and", "or") else FLOATS + INTS
        for et in dts:
            for axes, keep in itertools.product(AXES, (False, True)):
                if et not in ("f32", "i32", "boolean") and axes not in ((1,), (0, 2), (0, 1, 2, 3)):
                    continue
                yield type_, op, et, axes, keep


@pytest.mark.parametrize("type_,op,et,axes,keep", list(ov_cases()))
def test_openvino_reduction(tmp_path, type_, op, et, axes, keep):
    rng = np.random.default_rng(seed_of(type_, et, axes, keep))
    x = sample(SHAPE, et, rng, op)
    version = "opset4" if op in ("l1", "l2") else "opset1"
    got, _ = run_one(tmp_path, type_, version, x, et, axes, {"keep_dims": str(keep).lower()})
    n = norm(axes, 4)
    check(got, reduce_ref(x, n, op, keep, et), et, sum_abs(x, n, op, keep))


@pytest.mark.parametrize("type_", ["ReduceMean", "ReduceL1", "ReduceL2", "ReduceMax"])
@pytest.mark.parametrize("keep", [False, True])
def test_empty_axes_is_identity(tmp_path, type_, keep):
    x = sample(SHAPE, "f32", np.random.default_rng(1))
    version = "opset4" if type_ in ("ReduceL1", "ReduceL2") else "opset1"
    got, model = run_one(tmp_path, type_, version, x, "f32", (), {"keep_dims": str(keep).lower()})
    # the reduction is the identity; L1 and L2 keep their |x| step, as OpenVINO computes them
    np.testing.assert_array_equal(got, np.abs(x) if type_ in ("ReduceL1", "ReduceL2") else x)
    assert model.outputs[0].shape == SHAPE


@pytest.mark.parametrize("axes", [(0,), (-1,), ()])
def test_rank0_data(tmp_path, axes):
    x = np.array(3.5, np.float32)
    got, model = run_one(tmp_path, "ReduceSum", "opset1", x, "f32", axes, {"keep_dims": "false"})
    assert got.shape == () and got == np.float32(3.5)
    assert model.outputs[0].shape == ()


@pytest.mark.parametrize("type_,op", list(OV_OPS.items()))
@pytest.mark.parametrize("keep", [False, True])
def test_empty_set_values(tmp_path, type_, op, keep):
    et = "boolean" if op in ("and", "or") else "f32"
    x = sample((2, 0, 3), et, np.random.default_rng(2))
    version = "opset4" if op in ("l1", "l2") else "opset1"
    got, _ = run_one(tmp_path, type_, version, x, et, (1,), {"keep_dims": str(keep).lower()})
    check(got, reduce_ref(x, (1,), op, keep, et), et)


@pytest.mark.parametrize("et", ["i8", "u8", "i32", "i64", "u64"])
@pytest.mark.parametrize("op", ["max", "min", "mean"])
def test_empty_set_integers(tmp_path, et, op):
    x = np.zeros((0, 4), numpy_dtype(et))
    got, _ = run_one(tmp_path, "Reduce" + op.capitalize(), "opset1", x, et, (0,), {"keep_dims": "false"})
    check(got, reduce_ref(x, (0,), op, False, et), et)


def test_zero_size_kept_dim(tmp_path):
    x = np.zeros((0, 4), np.float32)
    got, _ = run_one(tmp_path, "ReduceSum", "opset1", x, "f32", (1,), {"keep_dims": "false"})
    assert got.shape == (0,) and got.dtype == np.float32


@pytest.mark.parametrize("type_", ["ReduceMax", "ReduceMin", "ReduceSum", "ReduceMean", "ReduceProd"])
@pytest.mark.parametrize("axes", [(1,), (0,), (0, 1)])
def test_nan_propagates(tmp_path, type_, axes):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    x[1, 2] = np.nan
    got, _ = run_one(tmp_path, type_, "opset1", x, "f32", axes, {"keep_dims": "false"})
    want = reduce_ref(x, axes, type_[6:].lower(), False, "f32")
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert np.isnan(want).any()


@pytest.mark.parametrize("et", ["i8", "u8", "i32", "u32", "i64", "u64"])
def test_integer_overflow_wraps_once(tmp_path, et):
    dt = numpy_dtype(et)
    info = np.iinfo(dt)
    x = np.full((4, 3), info.max, dt)
    x[0, 0] = info.max - 1
    got, _ = run_one(tmp_path, "ReduceSum", "opset1", x, et, (0,), {"keep_dims": "false"})
    check(got, reduce_ref(x, (0,), "sum", False, et), et)


def test_integer_mean_truncates_toward_zero(tmp_path):
    x = np.array([[-1, -2], [1, 2], [-3, 2]], np.int32)
    got, _ = run_one(tmp_path, "ReduceMean", "opset1", x, "i32", (1,), {"keep_dims": "false"})
    np.testing.assert_array_equal(got, np.array([-1, 1, 0], np.int32))


def test_integer_mean_of_the_int64_minimum(tmp_path):
    """A sum that is (or wraps to) the int64 minimum, whose np.abs is itself, keeps its sign."""
    lo = np.iinfo(np.int64).min
    x = np.array([[lo, 0, 0], [lo, lo, lo], [1, 2, 3]], np.int64)  # the middle row wraps to the minimum
    got, _ = run_one(tmp_path, "ReduceMean", "opset1", x, "i64", (1,), {"keep_dims": "false"})
    np.testing.assert_array_equal(got, np.array([-(2**63 // 3), -(2**63 // 3), 2], np.int64))


def test_float16_sum_accumulates_wide(tmp_path):
    x = np.full(1 << 15, 1.0, np.float16)
    got, _ = run_one(tmp_path, "ReduceSum", "opset1", x, "f16", (0,), {"keep_dims": "false"})
    # 32768 is exactly representable in f16; a float16 accumulator would stop at 2048.
    assert got == np.float16(32768)


@pytest.mark.parametrize("axes", [(2,), (0, 2), (1, 3), (0, 1, 2, 3)])
@pytest.mark.parametrize("keep", [False, True])
def test_runtime_axes(tmp_path, axes, keep):
    x = sample(SHAPE, "f32", np.random.default_rng(3))
    got, model = run_one(
        tmp_path, "ReduceL1", "opset4", x, "f32", axes, {"keep_dims": str(keep).lower()}, runtime_axes=True
    )
    check(got, reduce_ref(x, axes, "l1", keep, "f32"), "f32", sum_abs(x, axes, "l1", keep))
    shape = model.outputs[0].shape
    if keep:
        assert shape == (None,) * 4
    elif len(axes) == 1:
        assert shape == (None,) * 3
    else:
        assert shape is None


def test_runtime_axis_out_of_range_is_execution_error(tmp_path):
    x = sample(SHAPE, "f32", np.random.default_rng(3))
    with pytest.raises(irexec.ExecutionError, match="out of the range"):
        run_one(tmp_path, "ReduceSum", "opset1", x, "f32", (7,), {"keep_dims": "false"}, runtime_axes=True)


def test_non_contiguous_feed(tmp_path):
    base = sample((6, 4, 10), "f32", np.random.default_rng(4))
    x = base[::2, :, ::3]
    got, _ = run_one(tmp_path, "ReduceSum", "opset1", x, "f32", (1,), {"keep_dims": "false"})
    x = np.ascontiguousarray(x)
    check(got, reduce_ref(x, (1,), "sum", False, "f32"), "f32", sum_abs(x, (1,), "sum", False))


# ---- ONNX-semantics reductions -------------------------------------------------------------


def onnx_cases():
    for type_, op in ONNX_OPS.items():
        for et in ["f32", "f64", "f16", "bf16", "i32", "i64", "u32", "u64"]:
            if op in ("logsum", "logsumexp") and et not in FLOATS:
                continue
            for axes in [(1,), (0, 2), (-1, 1), None, ()]:
                for keep in (0, 1):
                    if et not in ("f32", "i64") and (axes not in ((0, 2), None) or keep == 0):
                        continue
                    yield type_, op, et, axes, keep


@pytest.mark.parametrize("type_,op,et,axes,keep", list(onnx_cases()))
@pytest.mark.parametrize("form", ["input", "attribute"])
def test_onnx_reduction(tmp_path, type_, op, et, axes, keep, form):
    rng = np.random.default_rng(seed_of(type_, et, axes, keep))
    x = sample(SHAPE, et, rng, op)
    attrs = {"keepdims": keep}
    if form == "attribute" and axes is not None:
        attrs["axes"] = ",".join(map(str, axes))
    got, _ = run_one(
        tmp_path,
        type_,
        "onnx",
        x,
        et,
        axes or (),
        attrs,
        axes_as_input=form == "input" and axes is not None,
    )
    reduce_axes = norm(axes, 4) if axes else (0, 1, 2, 3)
    check(got, reduce_ref(x, reduce_axes, op, bool(keep), et), et, sum_abs(x, reduce_axes, op, bool(keep)))


@pytest.mark.parametrize("type_,op", list(ONNX_OPS.items()))
def test_onnx_noop_with_empty_axes_applies_elementwise_step(tmp_path, type_, op):
    x = sample((2, 3), "f64", np.random.default_rng(5), "logsum")
    got, model = run_one(tmp_path, type_, "onnx", x, "f64", (), {"noop_with_empty_axes": 1}, axes_as_input=False)
    want = {
        "l1": np.abs(x),
        "l2": np.abs(x),
        "sumsq": x * x,
        "logsum": np.log(x),
        "logsumexp": x,
    }.get(op, x)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert model.outputs[0].shape == (2, 3)


def test_onnx_logsumexp_is_stable(tmp_path):
    x = np.array([[1000.0, 1000.0], [-1000.0, -np.inf], [np.inf, 1.0]], np.float32)
    got, _ = run_one(tmp_path, "ReduceLogSumExp", "onnx", x, "f32", (1,), {"keepdims": 0})
    np.testing.assert_allclose(got, [1000 + np.log(2), -1000, np.inf], rtol=1e-6)


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
def test_onnx_minmax_boolean(tmp_path, op):
    x = np.array([[True, False], [True, True]])
    got, _ = run_one(tmp_path, op, "onnx", x, "boolean", (1,), {"keepdims": 0})
    np.testing.assert_array_equal(got, x.any(axis=1) if op == "ReduceMax" else x.all(axis=1))


# ---- Mean --------------------------------------------------------------------------------


@pytest.mark.parametrize("et", FLOATS)
@pytest.mark.parametrize(
    "shapes",
    [
        [(3, 1, 4)],
        [(3, 1, 4), (1, 5, 1), (4,)],
        [(2, 3), (2, 3)],
        [(), (2,)],
        # vector-length rows: the fused broadcasting kernel
        [(3, 1, 40), (1, 5, 40), (40,)],
        [(2, 3, 33), (2, 1, 1), (1, 3, 1), ()],
        [(4, 64)] * 5,
    ],
)
def test_mean_broadcasts(tmp_path, et, shapes):
    rng = np.random.default_rng(6)
    xs = [sample(s, et, rng) for s in shapes]
    net = Net()
    params = [net.param(f"x{i}", et, s) for i, s in enumerate(shapes)]
    net.result(net.op("Mean", params, version="onnx"), "y")
    model = irexec.load(net.save(tmp_path / "m.xml"))
    got = model.infer(xs)["y"]
    want = sum(x.astype(np.float64) for x in xs) / len(xs)
    want = round_bf16(want.astype(np.float32)) if et == "bf16" else want.astype(numpy_dtype(et))
    assert model.outputs[0].shape == np.broadcast_shapes(*shapes)
    check(got, want, et)


@pytest.mark.parametrize("axes", [(0, 2, 4, 6), (1, 3, 5), (0, 1, 3, 6)])
@pytest.mark.parametrize("op", ["sum", "max", "l2"])
def test_many_alternating_groups(tmp_path, axes, op):
    """More than five kept/reduced groups: the planner transposes once, then one pass."""
    x = sample((2, 3, 4, 5, 2, 3, 4), "f32", np.random.default_rng(7))
    type_ = {"sum": "ReduceSum", "max": "ReduceMax", "l2": "ReduceL2"}[op]
    got, _ = run_one(tmp_path, type_, "opset4", x, "f32", axes, {"keep_dims": "true"})
    check(got, reduce_ref(x, axes, op, True, "f32"), "f32", sum_abs(x, axes, op, True))


@pytest.mark.parametrize(
    "shape,axes", [((1000, 3), (0,)), ((5, 4000, 6), (1,)), ((3, 50, 4, 30, 5), (1, 3)), ((64, 40, 64), (0,))]
)
@pytest.mark.parametrize("op", ["sum", "max", "mean"])
def test_narrow_inner_fold(tmp_path, shape, axes, op):
    """A narrow innermost kept group: folded into a wide vector, then back."""
    x = sample(shape, "f32", np.random.default_rng(8))
    type_ = {"sum": "ReduceSum", "max": "ReduceMax", "mean": "ReduceMean"}[op]
    got, _ = run_one(tmp_path, type_, "opset1", x, "f32", axes, {"keep_dims": "false"})
    check(got, reduce_ref(x, axes, op, False, "f32"), "f32", sum_abs(x, axes, op, False))


@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("et", ["f32", "f64", "i32"])
@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "prod", "l2"])
def test_narrow_fold_back_in_the_main_pass_or_apart(monkeypatch, split, et, op):
    """The kernels fold a narrow group back inside the columns pass (tiles of whole groups),
    and apart, in a second pass, when the main pass splits its reduced sets (few outputs,
    long sets: SPLIT_MIN made small here); both give the oracle's values, finished and of
    the output type, keep_dims or not. (300, 2, 16, 4) over (0, 2): 16 rows of 4 kept folded
    into a kept group of 128, with the other reduced axis in the main pass."""
    if split:
        monkeypatch.setattr(config, "SPLIT_MIN", 16)
        monkeypatch.setattr(jit, "threads_for", lambda nbytes, cost=1.0: 2)  # parts need threads
    x = sample((300, 2, 16, 4), et, np.random.default_rng(9), op)
    for keep in (False, True):
        got = reduce_array(x, (0, 2), op, keep, et, force=True)
        check(got, reduce_ref(x, (0, 2), op, keep, et), et, sum_abs(x, (0, 2), op, keep))


@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize(
    "et,op",
    [
        (et, op)
        for et in ("f32", "f64", "f16", "i32")
        for op in ("sum", "mean", "max", "min", "prod", "l1", "l2", "sumsq", "logsum")
        if not (op == "logsum" and et == "i32")  # ReduceLogSum is defined on floats
    ],
)
def test_short_trailing_rows_folded_in_a_second_pass(monkeypatch, split, et, op):
    """A short trailing reduced group under a kept group and a long reduced group: the columns
    pass keeps both trailing groups, a second pass folds the short rows of its intermediate
    (`plan._defer_short`). (3, 20, 5, 6) over (1, 3) and (0, 1, 3): rows of 6 under 20 or 60
    reduced rows; split (SPLIT_MIN made small) the columns pass cuts its reduced sets into
    parts. Both give the oracle's values, finished and of the output type, keep_dims or not,
    with NaN and infinities propagated."""
    from irexec.kernels.reduce import plan

    assert plan.plan_layout((3, 20, 5, 6), (1, 3))[3] == 6
    assert plan.plan_layout((3, 20, 5, 6), (0, 1, 3))[3] == 6
    assert plan.plan_layout((3, 8, 5, 6), (1, 3))[3] == 0  # a short reduced group above: rows
    if split:
        monkeypatch.setattr(config, "SPLIT_MIN", 16)
        monkeypatch.setattr(jit, "threads_for", lambda nbytes, cost=1.0: 2)  # parts need threads
    x = blocked_sample((3, 20, 5, 6), et, op, 10)
    for axes in ((1, 3), (0, 1, 3)):
        for keep in (False, True):
            got = reduce_array(x, axes, op, keep, et, force=True)
            check(got, reduce_ref(x, axes, op, keep, et), et, sum_abs(x, axes, op, keep))


@pytest.mark.parametrize("threads", [1, 2])
def test_one_wide_column_tile_is_split_over_its_rows(monkeypatch, threads):
    """Few, wide column tiles over many rows (a mean over (0, 1) of (128, 64, 512)): one tile
    reads 4M elements, so on two threads its reduced rows are cut into parts, even though each
    column's reduced set is short of SPLIT_MIN; one thread reads it in one task, finished by
    the kernel."""
    from irexec.kernels.reduce import loops

    seen = []
    real = jit.parallel_for
    monkeypatch.setattr(jit, "threads_for", lambda nbytes, cost=1.0: threads)
    monkeypatch.setattr(jit, "parallel_for", lambda k, n, t, *a: (seen.append((k, n)), real(k, n, t, *a)))
    x = sample((128, 64, 512), "f32", np.random.default_rng(11))
    got = reduce_array(x, (0, 1), "mean", False, "f32", force=True)
    check(got, reduce_ref(x, (0, 1), "mean", False, "f32"), "f32", sum_abs(x, (0, 1), "mean", False))
    assert [k for k, _ in seen] == [loops.reduce_columns]
    assert (seen[0][1] > 1) == (threads == 2)


# ---- the numpy path in blocks ------------------------------------------------------------


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of a few elements, so small inputs take the numpy path's blocked loop (blocks cut
    inside a dim, remainders, shifted exponentials); the kernels case is unaffected and checks
    the same values."""
    monkeypatch.setattr(numpy_path, "BLOCK", 7)
    monkeypatch.setattr(numpy_path, "WHOLE", 7)
    monkeypatch.setattr(numpy_path, "TINY", 0)


BLOCKED_OPS = ["sum", "mean", "prod", "max", "min", "l1", "l2", "sumsq", "logsum", "logsumexp"]
BLOCKED_AXES = [(), (0,), (1,), (3,), (0, 2), (1, 3), (1, 2), (0, 1, 2, 3), (0, 3)]


def blocked_sample(shape, et, op, seed):
    """sample() with NaN, +-inf and values near the integer limits mixed in (seeded per case)."""
    rng = np.random.default_rng(seed)
    x = sample(shape, et, rng, op)
    if x.size and numpy_dtype(et).kind == "f" and op != "prod":
        flat = x.reshape(-1)
        flat[rng.integers(0, x.size, 3)] = [np.nan, np.inf, -np.inf]
    return x


@pytest.mark.parametrize("op", BLOCKED_OPS)
@pytest.mark.parametrize("et", ["f32", "f64", "f16", "bf16", "i8", "i32", "u64"])
@pytest.mark.parametrize("axes", BLOCKED_AXES)
def test_blocked_numpy_path(small_blocks, op, et, axes):
    """Every kind and element type through the blocked loop, against the float64 oracle (the
    kernels case checks the same inputs): NaN propagates, inf - inf is NaN, empty axes are the
    identity (with the map step)."""
    if op in ("logsum", "logsumexp") and numpy_dtype(et).kind != "f":
        return
    shape = (3, 4, 5, 6)
    x = sample(shape, et, np.random.default_rng(seed_of(op, et, axes)), op)
    if numpy_dtype(et).kind == "f" and op not in ("prod", "logsum"):
        x = blocked_sample(shape, et, op, seed_of(op, et, axes, "nan"))
    got = reduce_array(x, axes, op, True, et)
    if axes == ():
        want = reduce_ref(x, (), op, True, et) if op not in ("l1", "l2", "sumsq") else None
        if want is None:
            v = np.abs(x.astype(np.float64 if numpy_dtype(et).kind == "f" else np.int64))
            want = cast(v * v if op == "sumsq" else v, et)
    else:
        want = reduce_ref(x, axes, op, True, et)
    check(got, want, et, sum_abs(x, axes, op, True) if axes and op != "logsumexp" else None)


@pytest.mark.parametrize(
    "shape,axes",
    [((1, 40, 1, 3), (1,)), ((40, 1), (0, 1)), ((2, 0, 30), (0,)), ((2, 0, 30), (1,)), ((5, 8), (0, 1)), ((9,), ())],
)
@pytest.mark.parametrize("op", ["sum", "mean", "prod", "max", "l2", "logsumexp"])
def test_blocked_numpy_path_size_one_and_zero_size_dims(small_blocks, shape, axes, op):
    x = sample(shape, "f32", np.random.default_rng(seed_of(shape, axes, op)), op)
    got = reduce_array(x, axes, op, False, "f32")
    if axes == () and op == "l2":
        want = np.abs(x)
    else:
        want = reduce_ref(x, axes, op, False, "f32")
    check(got, want, "f32", sum_abs(x, axes, op, False) if axes and x.size else None)


@pytest.mark.parametrize("et", ["i8", "i32", "i64", "u32", "u64"])
@pytest.mark.parametrize("op", ["sum", "sumsq", "l1", "prod", "mean"])
def test_blocked_numpy_path_wraps_integers_once(small_blocks, et, op):
    """Values at the type's limits: 64-bit accumulation wraps once, |x| is taken after
    widening (|-128| is 128 in int8), the result wraps once to the output type."""
    info = np.iinfo(numpy_dtype(et))
    x = np.full((4, 5, 3), info.max, numpy_dtype(et))
    x[1, :, 1] = info.min
    x[2, 3] = info.max - 1
    for axes in [(0,), (1,), (2,), (0, 2), (0, 1, 2)]:
        check(reduce_array(x, axes, op, False, et), reduce_ref(x, axes, op, False, et), et)


def test_blocked_numpy_path_float16_sum_stays_wide(small_blocks):
    x = np.full((64, 2, 512), 1.0, np.float16)
    got = reduce_array(x, (0, 2), "sum", False, "f16")
    # 32768 is exactly representable in f16; a float16 accumulator would stop at 2048.
    np.testing.assert_array_equal(got, np.full(2, 32768, np.float16))


def test_blocked_numpy_path_logsumexp_is_stable(small_blocks):
    x = np.array([[1000.0, 1000.0, 1.0], [-1000.0, -np.inf, -1000.0], [np.inf, 1.0, 2.0]], np.float32)
    got = reduce_array(np.repeat(x, 4, axis=1), (1,), "logsumexp", False, "f32")
    np.testing.assert_allclose(got, [1000 + np.log(8), -1000 + np.log(8), np.inf], rtol=1e-6)


def test_numpy_path_matches_kernels_on_a_large_input(monkeypatch):
    """The default blocks (no patching) over inputs larger than one block: the numpy path and
    the kernels both within their float32 rounding of the float64 reference."""
    x = sample((8, 96, 33, 40), "f32", np.random.default_rng(11))
    for axes in [(0,), (1,), (3,), (0, 2), (1, 3), (0, 1, 2, 3)]:
        for op in ("sum", "l2", "logsumexp"):
            monkeypatch.setattr(config, "JIT", "never")
            numpy_result = reduce_array(x, axes, op, False, "f32")
            monkeypatch.setattr(config, "JIT", "always")
            kernel_result = reduce_array(x, axes, op, False, "f32", force=True)
            scale = sum_abs(x, axes, op, False) if op != "logsumexp" else None
            check(numpy_result, reduce_ref(x, axes, op, False, "f32"), "f32", scale)
            check(kernel_result, reduce_ref(x, axes, op, False, "f32"), "f32", scale)


@pytest.mark.parametrize("et", ["f32", "f64"])
@pytest.mark.parametrize(
    "shape,axes",
    [
        ((6, 50, 7), (1,)),  # columns
        ((6, 50, 7), (2,)),  # rows
        ((6, 50, 7), (0, 2)),  # rows folded into accumulators, walking the middle axis
        ((2, 40000), (1,)),  # few outputs, long rows: the rows split, then combined
        ((40000, 2), (0,)),  # few outputs, long columns
        ((2, 3, 4, 5, 6, 7), (0, 2, 4)),  # six groups: one transposed copy first
    ],
)
def test_logsumexp_kernels_match_the_reference(monkeypatch, et, shape, axes):
    """ReduceLogSumExp's exponentials by the kernels (`reduce/exp_loops.py`): within the
    output's rounding of the float64 oracle and equal in NaN and infinities, with outputs whose
    values hold NaN, +inf, -inf, only -inf (the shift falls back to 0), and large magnitudes
    (the shift keeps exp finite)."""
    rng = np.random.default_rng(seed_of(et, shape, axes))
    x = (rng.standard_normal(shape) * 40).astype(numpy_dtype(et))
    flat = x.reshape(-1)
    flat[rng.integers(0, x.size, 6)] = [np.nan, np.inf, -np.inf, 900.0, -900.0, np.nan]
    first = np.moveaxis(x, axes, range(len(axes))).reshape(-1, x.size // math.prod(x.shape[a] for a in axes))
    assert first.shape[1] > 1
    x_all_neg_inf = x.copy()
    idx = np.moveaxis(np.arange(x.size).reshape(shape), axes, range(len(axes))).reshape(first.shape[0], -1)[:, 1]
    x_all_neg_inf.reshape(-1)[idx] = -np.inf  # one output's values all -inf
    from irexec.kernels.reduce import exp_loops

    monkeypatch.setattr(config, "JIT", "always")
    calls = []
    for name in ("exp_sum_rows", "exp_sum_columns"):
        real = getattr(exp_loops, name)
        monkeypatch.setattr(exp_loops, name, lambda *a, real=real: calls.append(1) or real(*a))
    for v in (x, x_all_neg_inf):
        calls.clear()
        got = reduce_array(v, axes, "logsumexp", False, et, force=True)
        assert calls  # the kernels ran
        check(got, reduce_ref(v, axes, "logsumexp", False, et), et)
