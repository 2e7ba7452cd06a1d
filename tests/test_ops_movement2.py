"""Embedding bags (ops/embedding.py), BatchToSpace/SpaceToBatch, Roll, SliceScatter, Col2Im,
ExtractImagePatches (ops/movement.py) and ScatterElementsUpdate (ops/indexing.py) against
OpenVINO: graphs built with OpenVINO's opset API, static and with dynamic dims, written by
`ov.save_model`; irexec's inferred shapes and types must equal `read_model`'s, `validate` must be
clean and the values must equal OpenVINO CPU's (tests/support/ovcheck.py).

Where the CPU plugin departs from the reference or the spec (each op module's docstring lists
where), the CPU cases avoid the difference and irexec's choice is checked on its own against a
numpy float64 reference written out here.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from irexec.errors import ExecutionError, FormatError, ShapeInferenceError, UnsupportedDtypeError
from irexec.ops.base import Sig
from irexec.ops.single import make_op, run_op
from tests.support import ovcheck as oc

OPS_TESTED = [
    ("EmbeddingBagOffsetsSum", "opset3"),
    ("EmbeddingBagPackedSum", "opset3"),
    ("EmbeddingSegmentsSum", "opset3"),
    ("EmbeddingBagOffsets", "opset15"),
    ("EmbeddingBagPacked", "opset15"),
    ("ScatterElementsUpdate", "opset3"),
    ("ScatterElementsUpdate", "opset12"),
    ("Roll", "opset7"),
    ("BatchToSpace", "opset2"),
    ("SpaceToBatch", "opset2"),
    ("SliceScatter", "opset15"),
    ("ExtractImagePatches", "opset3"),
    ("Col2Im", "opset15"),
]

R = np.random.default_rng(20261125)
DYN = pytest.mark.parametrize("dyn", [False, True], ids=["static", "dynamic"])


def ops(v=16):
    return importlib.import_module(f"openvino.opset{v}")


def P(name, shape, dtype=np.float32):
    return oc.param(name, shape, dtype)


def C(value):
    return ops().constant(np.asarray(value))


def dims(shape, dyn, which=None):
    """shape with the listed axes (default: all) dynamic when `dyn`."""
    return tuple(None if dyn and (which is None or i in which) else d for i, d in enumerate(shape))


def check_dynamic_by_static(tmp_path, build, dyn, **tol):
    """OpenVINO's CPU plugin cannot compile some of these graphs with dynamic shapes (weighted
    embedding bags with dynamic indices: "to_shape was called on a dynamic shape"): a dynamic
    graph is checked for shapes and types against read_model, and its values must equal those of
    the same graph with static shapes, which are checked against the CPU."""
    static = oc.check(tmp_path, *build(False), name="static", **tol)
    if not dyn:
        return static
    got = oc.check(tmp_path, *build(True), name="dynamic", values=False)
    for a, b in zip(got.values(), static.values()):
        np.testing.assert_array_equal(a, b)
    return got


def normal(*shape, dtype=np.float32):
    return R.normal(size=shape).astype(dtype)


def table(rows, *depth, dtype=np.float32):
    if np.dtype(dtype).kind == "f":
        return normal(rows, *depth, dtype=dtype)
    info = np.iinfo(dtype)
    return R.integers(max(info.min, -50), min(info.max, 50), (rows, *depth), endpoint=True).astype(dtype)


# ---- embeddings ---------------------------------------------------------------------------------

OFFSETS = np.array([0, 3, 3, 4, 8], np.int32)  # bags of 3, 0, 1, 4 and the rest (2) of 10 indices
INDICES = np.array([1, 5, 5, 0, 7, 2, 3, 3, 6, 0], np.int32)


@DYN
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.int8, np.uint8, np.float64])
def test_embedding_bag_offsets_sum_3(tmp_path, dtype, dyn):
    o3 = ops(3)
    feeds = {"t": table(8, 2, 3, dtype=dtype), "i": INDICES, "f": OFFSETS, "w": table(10, dtype=dtype)}

    def build(dyn):
        t = P("t", dims((8, 2, 3), dyn, (0, 2)), dtype)
        i = P("i", dims((10,), dyn), np.int32)
        f = P("f", dims((5,), dyn), np.int32)
        w = P("w", dims((10,), dyn), dtype)
        outs = [
            o3.embedding_bag_offsets_sum(t, i, f),
            o3.embedding_bag_offsets_sum(t, i, f, C(np.int32(4))),  # empty bag -> row 4
            o3.embedding_bag_offsets_sum(t, i, f, C(np.int32(-1)), w),  # -1: zeros
            # indices 0 and 1 belong to no bag
            o3.embedding_bag_offsets_sum(t, i, C(np.array([2, 2, 9], np.int32)), C(np.int32(6)), w),
        ]
        return [t, i, f, w], outs, feeds

    tol = 2e-3 if dtype == np.float16 else 1e-5
    check_dynamic_by_static(tmp_path, build, dyn, rtol=tol, atol=tol)


@DYN
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int16])
def test_embedding_bag_offsets_15(tmp_path, dtype, dyn):
    o = ops(15)
    feeds = {"t": table(8, 4, dtype=dtype), "i": INDICES.astype(np.int64), "f": OFFSETS.astype(np.int64)}
    feeds["w"] = table(10, dtype=dtype)

    def build(dyn):
        t = P("t", dims((8, 4), dyn, (0,)), dtype)
        i = P("i", dims((10,), dyn), np.int64)
        f = P("f", dims((5,), dyn), np.int64)
        w = P("w", dims((10,), dyn), dtype)
        outs = [
            o.embedding_bag_offsets(t, i, f, reduction="mean"),
            o.embedding_bag_offsets(t, i, f, C(np.int64(2)), reduction="mean"),
            o.embedding_bag_offsets(t, i, f, C(np.int64(-1)), reduction="mean"),
            o.embedding_bag_offsets(t, i, f, C(np.int64(3)), w, reduction="sum"),
            o.embedding_bag_offsets(t, i, f),
        ]
        return [t, i, f, w], outs, feeds

    check_dynamic_by_static(tmp_path, build, dyn)


@DYN
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8])
def test_embedding_bag_packed(tmp_path, dtype, dyn):
    o3, o15 = ops(3), ops(15)
    idx = R.integers(0, 7, (4, 3)).astype(np.int32)
    feeds = {"t": table(7, 3, dtype=dtype), "i": idx, "w": table(4, 3, dtype=dtype)}

    def build(dyn):
        t = P("t", dims((7, 3), dyn, (0,)), dtype)
        i = P("i", dims((4, 3), dyn), np.int32)
        w = P("w", dims((4, 3), dyn), dtype)
        outs = [
            o3.embedding_bag_packed_sum(t, i),
            o3.embedding_bag_packed_sum(t, i, w),
            o15.embedding_bag_packed(t, i, reduction="mean"),
            o15.embedding_bag_packed(t, i, w, reduction="sum"),
            o15.embedding_bag_packed(t, i),
        ]
        return [t, i, w], outs, feeds

    check_dynamic_by_static(tmp_path, build, dyn)


@DYN
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_embedding_segments_sum(tmp_path, dtype, dyn):
    o3 = ops(3)
    feeds = {
        "t": table(8, 2, 2, dtype=dtype),
        "i": np.array([7, 1, 1, 0, 4, 2], np.int32),
        "s": np.array([0, 0, 2, 2, 2, 3], np.int32),  # sorted, as the spec asks (the CPU relies on it)
        "w": table(6, dtype=dtype),
        "n": np.array(4, np.int32),
    }

    def build(dyn):
        t = P("t", dims((8, 2, 2), dyn, (0, 1)), dtype)
        i = P("i", dims((6,), dyn), np.int32)
        s = P("s", dims((6,), dyn), np.int32)
        w = P("w", dims((6,), dyn), dtype)
        n = P("n", (), np.int32)  # num_segments known only at run time: a dynamic first dim
        outs = [
            o3.embedding_segments_sum(t, i, s, C(np.int32(5))),
            o3.embedding_segments_sum(t, i, s, C(np.int32(6)), C(np.int32(3))),  # segments 1, 4, 5 empty
            o3.embedding_segments_sum(t, i, s, C(np.int32(5)), C(np.int32(0)), w),
            o3.embedding_segments_sum(t, i, s, n),
        ]
        return [t, i, s, w, n], outs, feeds

    check_dynamic_by_static(tmp_path, build, dyn)


def test_embedding_table_from_compressed_weights(tmp_path):
    """The usual deployed form: the table a Const that `save_model` compresses to f16 (a Convert
    decompresses it), bags from run-time indices and offsets."""
    o15 = ops(15)
    tab = normal(30, 8)
    i = P("i", (None,), np.int32)
    f = P("f", (None,), np.int32)
    outs = [o15.embedding_bag_offsets(C(tab), i, f, reduction="mean"), o15.embedding_bag_offsets(C(tab), i, f)]
    feeds = {"i": R.integers(0, 30, 40).astype(np.int32), "f": np.array([0, 7, 7, 20, 39], np.int32)}
    oc.check(tmp_path, [i, f], outs, feeds, compress=True)


def test_embedding_bf16_rounds_once():
    tab = normal(10, 4).astype(np.float32)
    from irexec.dtypes import round_bf16

    tab = round_bf16(tab)
    idx = np.array([1, 2, 3, 9, 9], np.int32)
    (got,) = run_op("EmbeddingBagPackedSum", "opset3", [tab, idx[:4].reshape(2, 2)], types=["bf16", "i32"])
    want = tab[idx[:4]].astype(np.float64).reshape(2, 2, 4).sum(1)
    np.testing.assert_array_equal(got, round_bf16(want.astype(np.float32)))


def _bags_f64(tab, idx, bounds, w=None, mean=False, default=None):
    """numpy float64 reference: one bag at a time."""
    out = []
    for b in range(len(bounds) - 1):
        sel = idx[bounds[b] : bounds[b + 1]]
        if sel.size == 0:
            out.append(tab[default].astype(np.float64) if default is not None else np.zeros(tab.shape[1:]))
            continue
        rows = tab[sel].astype(np.float64)
        if w is not None:
            rows = rows * w[bounds[b] : bounds[b + 1]].astype(np.float64)[:, None]
        out.append(rows.mean(0) if mean else rows.sum(0))
    return np.array(out)


def test_embedding_segments_unsorted_ids_follow_the_reference():
    """Unsorted segment ids: the reference sums each segment's rows whatever their order; the CPU
    plugin assumes sorted ids (the spec says they should be) and gave another answer. irexec
    computes the reference's sums, checked here against numpy float64."""
    tab = normal(6, 3)
    idx = np.array([0, 2, 3, 5, 1], np.int64)
    seg = np.array([2, 0, 3, 0, 2], np.int64)
    (got,) = run_op("EmbeddingSegmentsSum", "opset3", [tab, idx, seg, np.int64(5), np.int64(4)])
    want = np.zeros((5, 3))
    for j, s in zip(idx, seg):
        want[s] += tab[j]
    want[[1, 4]] = tab[4]
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=1e-6)


def test_embedding_integer_mean_uses_the_wide_sum():
    """Integer mean: OpenVINO divides the sum wrapped to the table's type (i8 rows 100, 100 give
    -28); irexec divides the 64-bit sum with truncation toward zero (SPEC's rule for sums)."""
    tab = np.array([[100, -100, 7], [100, -100, -8], [1, 1, 0]], np.int8)
    idx = np.array([0, 1, 2], np.int32)
    (got,) = run_op("EmbeddingBagOffsets", "opset15", [tab, idx, np.array([0, 2], np.int32)], reduction="mean")
    np.testing.assert_array_equal(got, np.array([[100, -100, 0], [1, 1, 0]], np.int8))
    (got,) = run_op("EmbeddingBagPacked", "opset15", [tab, idx.reshape(1, 3)], reduction="mean")
    np.testing.assert_array_equal(got, np.array([[67, -66, 0]], np.int8))


def test_embedding_float64_accumulation_against_numpy():
    """Long bags of float32: irexec's float64 sum rounded once equals numpy's float64 reference."""
    tab = normal(50, 8)
    idx = R.integers(0, 50, 400).astype(np.int32)
    bounds = np.array([0, 150, 150, 151, 400])
    w = normal(400)
    (got,) = run_op("EmbeddingBagOffsetsSum", "opset3", [tab, idx, bounds[:-1].astype(np.int32), np.int32(7), w])
    np.testing.assert_array_equal(got, _bags_f64(tab, idx, bounds, w, default=7).astype(np.float32))
    (got,) = run_op("EmbeddingBagOffsets", "opset15", [tab, idx, bounds[:-1].astype(np.int32)], reduction="mean")
    np.testing.assert_array_equal(got, _bags_f64(tab, idx, bounds, mean=True).astype(np.float32))


@pytest.mark.parametrize(
    "offsets, default, message",
    [
        ([0, 2, 4], None, "offset 4 of bag 2"),  # not below the 4 indices (an empty last bag): OV refuses it
        ([0, 3, 1], None, "offsets decrease at bag 2"),
        ([-1, 2], None, "offset -1 of bag 0"),
        ([0, 2, 2], -2, "default_index -2"),
        ([0, 2, 2], 6, "default_index 6"),
    ],
)
def test_embedding_offsets_errors(offsets, default, message):
    tab = normal(6, 2)
    args = [tab, np.array([0, 2, 3, 5], np.int32), np.array(offsets, np.int32)]
    if default is not None:
        args.append(np.int32(default))
    with pytest.raises(ExecutionError, match=message):
        run_op("EmbeddingBagOffsetsSum", "opset3", args)


def test_embedding_errors():
    tab = normal(6, 2)
    with pytest.raises(ExecutionError, match="index 6 is out of the range"):
        run_op("EmbeddingBagPackedSum", "opset3", [tab, np.array([[0, 6]], np.int32)])
    with pytest.raises(ExecutionError, match="index -1 is out of the range"):
        run_op("EmbeddingBagOffsets", "opset15", [tab, np.array([0, -1], np.int32), np.array([0], np.int32)])
    seg = [tab, np.array([0, 1], np.int32), np.array([0, 3], np.int32), np.int32(3)]
    with pytest.raises(ExecutionError, match="segment id 3 is out of the range"):
        run_op("EmbeddingSegmentsSum", "opset3", seg)
    seg[2] = np.array([0, 1], np.int32)
    with pytest.raises(ExecutionError, match="default_index -1"):  # the CPU plugin refuses -1 here too
        run_op("EmbeddingSegmentsSum", "opset3", seg + [np.int32(-1)])
    with pytest.raises(FormatError, match="only allowed with reduction=sum"):
        run_op(
            "EmbeddingBagPacked",
            "opset15",
            [tab, np.zeros((1, 2), np.int32), np.ones((1, 2), np.float32)],
            reduction="mean",
        )
    with pytest.raises(FormatError, match="reduction"):
        run_op("EmbeddingBagPacked", "opset15", [tab, np.zeros((1, 2), np.int32)], reduction="max")
    with pytest.raises(FormatError, match="input 2 has element type i64, input 1 has i32"):
        run_op("EmbeddingBagOffsetsSum", "opset3", [tab, np.zeros(2, np.int32), np.zeros(1, np.int64)])
    with pytest.raises(UnsupportedDtypeError, match="boolean"):
        run_op("EmbeddingBagPackedSum", "opset3", [tab > 0, np.zeros((1, 2), np.int32)])
    with pytest.raises(UnsupportedDtypeError, match="f32"):
        run_op("EmbeddingBagPackedSum", "opset3", [tab, np.zeros((1, 2), np.float32)])
    with pytest.raises(ShapeInferenceError, match="rank 1 is required"):
        run_op("EmbeddingBagOffsetsSum", "opset3", [tab, np.zeros((2, 1), np.int32), np.zeros(1, np.int32)])
    with pytest.raises(ShapeInferenceError, match="must be equal"):
        run_op("EmbeddingBagPackedSum", "opset3", [tab, np.zeros((1, 2), np.int32), np.ones((2, 1), np.float32)])
    with pytest.raises(FormatError, match="per_sample_weights have element type f16"):
        run_op("EmbeddingBagPackedSum", "opset3", [tab, np.zeros((1, 2), np.int32), np.ones((1, 2), np.float16)])


# ---- ScatterElementsUpdate ----------------------------------------------------------------------

SEU_DATA = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7
# along axis 1 of (2, 3, 4): duplicates (two 0s in a column), negative indices, a narrower last dim
SEU_IDX = np.array([[[0, 2, -1], [0, 1, 0]], [[-3, -3, 2], [1, 1, 1]]], np.int32)


@DYN
def test_scatter_elements_update_3(tmp_path, dyn):
    o3 = ops(3)
    d = P("d", dims((2, 3, 4), dyn, (0, 2)))
    i = P("i", dims((2, 2, 3), dyn), np.int32)
    u = P("u", dims((2, 2, 3), dyn))
    outs = [
        o3.scatter_elements_update(d, i, u, C(np.int32(1))),
        o3.scatter_elements_update(d, i, u, C(np.int64(-2))),
        o3.scatter_elements_update(d, C(np.array([[[1, 0, 1]]], np.int64)), C(normal(1, 1, 3)), C(np.int32(0))),
    ]
    feeds = {"d": SEU_DATA, "i": SEU_IDX, "u": normal(2, 2, 3)}
    oc.check(tmp_path, [d, i, u], outs, feeds)


# indices constant off the axis (torch's scatter of whole slices): by axis, index per slice
SEU_SLICES = [
    (0, [2, 0, -1, 2]),  # duplicates (the last wins) and a negative index
    (1, [1, -3]),
    (2, [3, 0, 3]),
]


@pytest.mark.parametrize("axis,rows", SEU_SLICES)
def test_scatter_elements_whole_slices(tmp_path, monkeypatch, axis, rows):
    """Indices that hold one index per slice along the axis (over a region narrower than data
    off the axis) take the slice path; the same bits as the element-wise path (which a changed
    element sends them to), and OpenVINO's values."""
    from irexec.ops import indexing

    data = normal(4, 3, 5)
    shape = [3, 2, 4]
    shape[axis] = len(rows)
    view = [1, 1, 1]
    view[axis] = len(rows)
    idx = np.broadcast_to(np.array(rows, np.int64).reshape(view), shape).copy()
    upd = normal(*shape)
    o12 = ops(12)
    d, i, u = P("d", data.shape), P("i", idx.shape, np.int64), P("u", shape)
    got = oc.check(
        tmp_path, [d, i, u], [o12.scatter_elements_update(d, i, u, C(np.int32(axis)))], {"d": data, "i": idx, "u": upd}
    )
    calls = []
    real = indexing._ScatterElementsBase._whole_slices
    monkeypatch.setattr(indexing._ScatterElementsBase, "_whole_slices", lambda *a: calls.append(1) or real(*a))
    (fast,) = run_op("ScatterElementsUpdate", "opset12", [data, idx, upd, np.int32(axis)])
    np.testing.assert_array_equal(fast, list(got.values())[0])
    monkeypatch.setattr(indexing._ScatterElementsBase, "_whole_slices", lambda *a: None)
    (slow,) = run_op("ScatterElementsUpdate", "opset12", [data, idx, upd, np.int32(axis)])
    np.testing.assert_array_equal(fast, slow)
    assert calls == [1]
    # one element off the pattern: the element-wise path, which the slice path refuses
    idx2 = idx.copy()
    idx2.reshape(-1)[-1] = (idx2.reshape(-1)[-1] + 1) % data.shape[axis]
    assert real(make_op("ScatterElementsUpdate", "opset12", 4), data, idx2, upd, axis) is None
    with pytest.raises(ExecutionError, match="out of the range"):
        bad = idx.copy()
        bad[...] = data.shape[axis]
        run_op("ScatterElementsUpdate", "opset12", [data, bad, upd, np.int32(axis)])


@DYN
@pytest.mark.parametrize("init", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.uint8])
def test_scatter_elements_update_12(tmp_path, dtype, init, dyn):
    o12 = ops(12)
    d = P("d", dims((2, 3, 4), dyn, (0, 2)), dtype)
    i = P("i", dims((2, 2, 3), dyn), np.int64)
    u = P("u", dims((2, 2, 3), dyn), dtype)
    modes = ["none", "sum", "prod", "min", "max"]
    if dtype != np.int32:  # integer mean: the CPU plugin truncates, the reference floors (test below)
        modes.append("mean")
    outs = [o12.scatter_elements_update(d, i, u, C(np.int32(1)), m, init) for m in modes]
    data = SEU_DATA if dtype != np.uint8 else SEU_DATA + 7
    feeds = {"d": data.astype(dtype), "i": SEU_IDX.astype(np.int64)}
    feeds["u"] = (np.array([[[2, -3, 4], [1, 5, -2]], [[3, 3, -1], [2, 6, 1]]]) + (dtype == np.uint8) * 3).astype(dtype)
    tol = 2e-3 if dtype == np.float16 else 1e-6
    oc.check(tmp_path, [d, i, u], outs, feeds, rtol=tol, atol=tol)


def test_scatter_elements_update_bool(tmp_path):
    o12 = ops(12)
    d = P("d", (2, 3), np.bool_)
    u = P("u", (2, 2), np.bool_)
    idx = C(np.array([[0, 0], [1, 2]], np.int32))
    outs = [
        o12.scatter_elements_update(d, idx, u, C(np.int32(1)), m, init)
        for m in ("none", "sum", "prod", "max", "min")
        for init in (True, False)
    ]
    feeds = {"d": np.eye(2, 3, dtype=bool), "u": np.array([[1, 0], [1, 1]], bool)}
    oc.check(tmp_path, [d, u], outs, feeds)


def _scatter_f64(data, idx, upd, axis, reduction, init):
    """numpy reference: one update at a time in row-major order, float64 (floor for integer mean)."""
    out = data.astype(np.float64).copy()
    seen = {}
    for p in np.ndindex(idx.shape):
        q = list(p)
        q[axis] = idx[p] % data.shape[axis]
        q = tuple(q)
        if q not in seen:
            seen[q] = [out[q]] if init else []
        seen[q].append(float(upd[p]))
    for q, vals in seen.items():
        out[q] = {"sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max, "mean": np.mean}[reduction](vals)
        if reduction == "mean" and data.dtype.kind in "iu":
            out[q] = np.floor(np.sum(vals) / len(vals))
    return out


@pytest.mark.parametrize("init", [True, False])
def test_scatter_elements_integer_mean_floors_as_the_reference(init):
    """Integer mean rounds toward minus infinity as OpenVINO's reference does (checked with
    Node.evaluate), where its CPU plugin truncates (-5 / 3: -2 here and in the reference, -1 on
    the CPU)."""
    o12 = ops(12)
    data = np.arange(12, dtype=np.int32).reshape(3, 4) - 6
    idx = np.array([[0, 0, 1], [2, 2, 2]], np.int32)
    upd = np.array([[-3, 4, -7], [5, -1, 2]], np.int32)
    (got,) = run_op(
        "ScatterElementsUpdate", "opset12", [data, idx, upd, np.int32(1)], reduction="mean", use_init_val=init
    )
    node = o12.scatter_elements_update(C(data), C(idx), C(upd), C(np.int32(1)), "mean", init)
    np.testing.assert_array_equal(got, oc.reference(node, {}))
    np.testing.assert_array_equal(got, _scatter_f64(data, idx, upd, 1, "mean", init).astype(np.int32))


def test_scatter_elements_nan_and_wide_sums():
    """min/max propagate NaN (the CPU compares in sequence and drops it); an integer mean divides
    the 64-bit sum (OpenVINO the sum wrapped to i8: 14 for 100, 100, 100)."""
    data = np.array([[1.0, 2.0, 3.0]], np.float32)
    upd = np.array([[np.nan, 5.0]], np.float32)
    idx = np.array([[0, 0]], np.int32)
    (got,) = run_op("ScatterElementsUpdate", "opset12", [data, idx, upd, np.int32(1)], reduction="max")
    assert np.isnan(got[0, 0]) and got[0, 1] == 2 and got[0, 2] == 3
    data8 = np.full((1, 2), 100, np.int8)
    (got,) = run_op("ScatterElementsUpdate", "opset12", [data8, idx, data8, np.int32(1)], reduction="mean")
    np.testing.assert_array_equal(got, [[100, 100]])
    (got,) = run_op("ScatterElementsUpdate", "opset12", [data8, idx, data8, np.int32(1)], reduction="sum")
    np.testing.assert_array_equal(got, [[44, 100]])  # 300 wraps to 44, as in OpenVINO
    big = R.normal(size=(5, 40)).astype(np.float32)
    bidx = R.integers(-5, 5, (30, 40)).astype(np.int64)
    bupd = R.normal(size=(30, 40)).astype(np.float32)
    for red in ("sum", "prod", "mean", "min", "max"):
        for init in (True, False):
            (got,) = run_op(
                "ScatterElementsUpdate", "opset12", [big, bidx, bupd, np.int64(0)], reduction=red, use_init_val=init
            )
            want = _scatter_f64(big, bidx, bupd, 0, red, init).astype(np.float32)
            np.testing.assert_array_equal(got, want, err_msg=f"{red} init={init}")


def test_scatter_elements_errors():
    data = np.zeros((3, 4), np.float32)
    upd = np.ones((2, 3), np.float32)
    with pytest.raises(ExecutionError, match="index 3 is out of the range"):
        run_op("ScatterElementsUpdate", "opset3", [data, np.array([[0, 3, 1], [0, 0, 0]], np.int32), upd, np.int32(0)])
    with pytest.raises(ShapeInferenceError, match="exceed data"):
        run_op(
            "ScatterElementsUpdate",
            "opset3",
            [data, np.zeros((1, 5), np.int32), np.ones((1, 5), np.float32), np.int32(0)],
        )
    with pytest.raises(ShapeInferenceError, match="must have one shape"):
        run_op("ScatterElementsUpdate", "opset3", [data, np.zeros((2, 2), np.int32), upd, np.int32(0)])
    with pytest.raises(ShapeInferenceError, match="axis 2 is out of the range"):
        run_op("ScatterElementsUpdate", "opset12", [data, np.zeros((2, 3), np.int32), upd, np.int32(2)])
    with pytest.raises(FormatError, match="reduction=mean does not accept boolean"):
        run_op(
            "ScatterElementsUpdate",
            "opset12",
            [data > 0, np.zeros((2, 3), np.int32), upd > 0, np.int32(0)],
            reduction="mean",
        )
    with pytest.raises(FormatError, match="reduction"):
        run_op(
            "ScatterElementsUpdate", "opset12", [data, np.zeros((2, 3), np.int32), upd, np.int32(0)], reduction="sub"
        )
    with pytest.raises(UnsupportedDtypeError, match="indices"):
        run_op("ScatterElementsUpdate", "opset12", [data, np.zeros((2, 3), np.float32), upd, np.int32(0)])
    with pytest.raises(FormatError, match="input 2 has element type f16"):
        run_op(
            "ScatterElementsUpdate", "opset12", [data, np.zeros((2, 3), np.int32), upd.astype(np.float16), np.int32(0)]
        )


# ---- Roll ---------------------------------------------------------------------------------------


@DYN
@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.bool_])
def test_roll(tmp_path, dtype, dyn):
    o7 = ops(7)
    x = P("x", dims((3, 4, 5), dyn, (0, 2)), dtype)
    shift = P("shift", (2,), np.int64)
    axes = P("axes", (2,), np.int32)
    outs = [
        o7.roll(x, C(np.int32(2)), C(np.int32(0))),
        o7.roll(x, C(np.int64(-7)), C(np.array([2], np.int64))),
        o7.roll(x, C(np.array([1, -2, 9], np.int32)), C(np.array([-1, 1, 2], np.int32))),  # axis 2 twice
        o7.roll(x, C(np.array([3], np.int64)), C(np.array([1], np.int64))),
        o7.roll(x, shift, axes),  # shift and axes from run-time inputs
    ]
    data = (R.normal(size=(3, 4, 5)) * 10).astype(dtype)
    feeds = {"x": data, "shift": np.array([-4, 11], np.int64), "axes": np.array([2, -3], np.int32)}
    oc.check(tmp_path, [x, shift, axes], outs, feeds)


def test_roll_scalar_shift_applies_to_every_axis():
    """A scalar shift with several axes rolls each by it (the spec; OpenVINO's CPU plugin refuses
    the graph): numpy's roll is the reference."""
    x = normal(3, 4, 5)
    (got,) = run_op("Roll", "opset7", [x, np.int64(-7), np.array([0, 2, -1])])
    np.testing.assert_array_equal(got, np.roll(x, (-7, -14), (0, 2)))


def test_roll_errors():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(ShapeInferenceError, match="axis 2 is out of the range"):
        run_op("Roll", "opset7", [x, np.int32(1), np.int32(2)])
    with pytest.raises(ShapeInferenceError, match="shift has 2 values and axes 3"):
        run_op("Roll", "opset7", [x, np.array([1, 2]), np.array([0, 1, 1])])
    with pytest.raises(ShapeInferenceError, match="scalar or 1-D"):
        run_op("Roll", "opset7", [x, np.ones((1, 1), np.int32), np.int32(0)])
    with pytest.raises(ShapeInferenceError, match="shift has 1 values and axes 2"):  # OpenVINO refuses it too
        run_op("Roll", "opset7", [x, np.array([1]), np.array([0, 1])])
    with pytest.raises(FormatError, match="integer type"):
        run_op("Roll", "opset7", [x, np.float32(1), np.int32(0)])
    (got,) = run_op("Roll", "opset7", [np.zeros((0, 3), np.float32), np.int32(2), np.int32(0)])  # zero-size dim
    assert got.shape == (0, 3)


# ---- BatchToSpace / SpaceToBatch ----------------------------------------------------------------


@DYN
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_batch_to_space(tmp_path, dtype, dyn):
    o2 = ops(2)
    x = P("x", dims((12, 2, 3, 2), dyn, (0, 2)), dtype)
    block, cb, ce = P("block", (4,), np.int64), P("cb", (4,), np.int64), P("ce", (4,), np.int64)
    outs = [
        o2.batch_to_space(x, C(i64(1, 2, 3, 2)), C(i64(0, 0, 0, 0)), C(i64(0, 0, 0, 0))),
        o2.batch_to_space(x, C(i64(1, 2, 3, 2)), C(i64(0, 1, 2, 0)), C(i64(0, 2, 1, 3))),
        o2.batch_to_space(x, C(i64(1, 1, 4, 1)), C(i64(0, 0, 1, 0)), C(i64(0, 1, 0, 0))),
        o2.batch_to_space(x, C(i64(1, 2, 3, 2)), cb, ce),  # crops at run time
        o2.batch_to_space(x, block, cb, ce),  # everything at run time
    ]
    feeds = {
        "x": table(12, 2, 3, 2, dtype=dtype),
        "block": i64(1, 2, 3, 2),
        "cb": i64(0, 0, 1, 1),
        "ce": i64(0, 1, 2, 0),
    }
    oc.check(tmp_path, [x, block, cb, ce], outs, feeds)


@DYN
@pytest.mark.parametrize("dtype", [np.float32, np.uint8])
def test_space_to_batch(tmp_path, dtype, dyn):
    o2 = ops(2)
    x = P("x", dims((2, 3, 4, 3), dyn, (0, 1)), dtype)
    block, pb, pe = P("block", (4,), np.int32), P("pb", (4,), np.int32), P("pe", (4,), np.int32)
    i32 = lambda *v: C(np.array(v, np.int32))  # noqa: E731
    outs = [
        o2.space_to_batch(x, i32(1, 3, 2, 3), i32(0, 0, 0, 0), i32(0, 0, 0, 0)),
        o2.space_to_batch(x, i32(1, 2, 3, 5), i32(0, 1, 1, 2), i32(0, 0, 1, 0)),
        o2.space_to_batch(x, i32(1, 1, 2, 1), i32(0, 0, 2, 0), i32(0, 0, 0, 1)),
        o2.space_to_batch(x, i32(1, 3, 2, 3), pb, pe),
        o2.space_to_batch(x, block, pb, pe),
    ]
    feeds = {
        "x": table(2, 3, 4, 3, dtype=dtype),
        "block": np.array([1, 3, 2, 2], np.int32),
        "pb": np.array([0, 0, 1, 3], np.int32),
        "pe": np.array([0, 0, 1, 0], np.int32),
    }
    oc.check(tmp_path, [x, block, pb, pe], outs, feeds)


def i64(*values):
    return np.array(values, np.int64)


def test_batch_space_errors():
    x = np.zeros((4, 2, 3), np.float32)
    with pytest.raises(ShapeInferenceError, match="batch 4 is not divisible by the product 3"):
        run_op("BatchToSpace", "opset2", [x, i64(1, 3, 1), i64(0, 0, 0), i64(0, 0, 0)])
    with pytest.raises(ShapeInferenceError, match="block_shape"):
        run_op("BatchToSpace", "opset2", [x, i64(2, 1, 2), i64(0, 0, 0), i64(0, 0, 0)])
    with pytest.raises(ShapeInferenceError, match="crops 3 \\+ 2 exceed dim 2"):
        run_op("BatchToSpace", "opset2", [x, i64(1, 2, 2), i64(0, 3, 0), i64(0, 2, 0)])
    with pytest.raises(ShapeInferenceError, match="has 2 values for data of rank 3"):
        run_op("BatchToSpace", "opset2", [x, i64(1, 2), i64(0, 0), i64(0, 0)])
    with pytest.raises(ShapeInferenceError, match="padded to 5 is not divisible by block 2"):
        run_op("SpaceToBatch", "opset2", [x, i64(1, 1, 2), i64(0, 0, 1), i64(0, 0, 1)])
    with pytest.raises(ShapeInferenceError, match="must be non-negative"):
        run_op("SpaceToBatch", "opset2", [x, i64(1, 1, 1), i64(0, -1, 0), i64(0, 0, 0)])
    with pytest.raises(ShapeInferenceError, match="pads of the batch dim must be 0, got 1 / 0"):
        run_op("SpaceToBatch", "opset2", [x, i64(1, 1, 1), i64(1, 0, 0), i64(0, 0, 0)])
    with pytest.raises(ShapeInferenceError, match="crops of the batch dim must be 0, got 0 / 2"):
        run_op("BatchToSpace", "opset2", [x, i64(1, 1, 1), i64(0, 0, 0), i64(2, 0, 0)])
    with pytest.raises(ExecutionError, match="batch 4 is not divisible"):  # values known only at run time
        run_op("BatchToSpace", "opset2", [x, i64(1, 3, 1), i64(0, 0, 0), i64(0, 0, 0)], const=[])
    with pytest.raises(FormatError, match="input 2 has element type i32"):
        run_op("BatchToSpace", "opset2", [x, i64(1, 1, 1), np.zeros(3, np.int32), i64(0, 0, 0)])
    # SpaceToBatch takes mixed integer types, as OpenVINO does
    (got,) = run_op("SpaceToBatch", "opset2", [x, i64(1, 1, 1), np.zeros(3, np.int32), i64(0, 0, 0)])
    np.testing.assert_array_equal(got, x)
    # values whose lengths only run time shows (dynamic shapes at load): compute checks them
    sig = Sig(("f32", "i64", "i64", "i64"), ("f32",))
    with pytest.raises(ExecutionError, match="block_shape \\[1, 2\\] has 2 values for data of rank 3"):
        make_op("SpaceToBatch", "opset2", 4).compute([x, i64(1, 2), i64(0, 0), i64(0, 0)], sig)
    with pytest.raises(ExecutionError, match="differ in length"):
        make_op("BatchToSpace", "opset2", 4).compute([x, i64(1, 1, 1), i64(0, 0), i64(0, 0, 0)], sig)


# ---- SliceScatter -------------------------------------------------------------------------------


@DYN
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_slice_scatter(tmp_path, dtype, dyn):
    o15 = ops(15)
    x = P("x", dims((5, 6, 4), dyn, (0, 1)), dtype)
    u1 = P("u1", dims((2, 6, 4), dyn, (1,)), dtype)
    u2 = P("u2", (5, 3, 2), dtype)
    u3 = P("u3", (3, 6, 1), dtype)
    outs = [
        o15.slice_scatter(x, u1, C(i64(1)), C(i64(4)), C(i64(2))),  # axis 0, no axes input
        o15.slice_scatter(x, u2, C(i64(-1, 0)), C(i64(-6, 4)), C(i64(-2, 3)), C(i64(1, 2))),  # negative step
        o15.slice_scatter(x, u3, C(i64(0, 3)), C(i64(9999, -5)), C(i64(2, -9)), C(i64(0, -1))),  # clamped
    ]
    feeds = {
        "x": table(5, 6, 4, dtype=np.int8).astype(dtype),
        "u1": table(2, 6, 4, dtype=np.int8).astype(dtype),
        "u2": table(5, 3, 2, dtype=np.int8).astype(dtype),
        "u3": table(3, 6, 1, dtype=np.int8).astype(dtype),
    }
    oc.check(tmp_path, [x, u1, u2, u3], outs, feeds)


@DYN
def test_slice_scatter_runtime_slice(tmp_path, dyn):
    """start, stop and step from run-time inputs: OpenVINO's CPU plugin crashed (SIGSEGV) running
    this graph, so shapes and types are checked against read_model and values against numpy."""
    o15 = ops(15)
    x = P("x", dims((5, 6, 4), dyn, (0, 1)))
    u = P("u", dims((2, 6, 4), dyn, (0, 2)))
    start, stop, step = P("start", (1,), np.int32), P("stop", (1,), np.int32), P("step", (1,), np.int32)
    outs = [o15.slice_scatter(x, u, start, stop, step, C(np.array([0], np.int32)))]
    feeds = {
        "x": normal(5, 6, 4),
        "u": normal(2, 6, 4),
        "start": np.array([-2], np.int32),
        "stop": np.array([10], np.int32),
        "step": np.array([1], np.int32),
    }
    (got,) = oc.check(tmp_path, [x, u, start, stop, step], outs, feeds, values=False).values()
    want = feeds["x"].copy()
    want[-2:10:1] = feeds["u"]
    np.testing.assert_array_equal(got, want)


def test_slice_scatter_errors():
    x = np.zeros((4, 3), np.float32)
    args = [i64(0), i64(2), i64(1)]
    with pytest.raises(ShapeInferenceError, match="updates \\[3,3\\] do not match the slice \\[2,3\\]"):
        run_op("SliceScatter", "opset15", [x, np.ones((3, 3), np.float32), *args])
    with pytest.raises(ExecutionError, match="do not match the slice"):
        run_op("SliceScatter", "opset15", [x, np.ones((3, 3), np.float32), *args], const=[])
    with pytest.raises(ShapeInferenceError, match="step 0"):
        run_op("SliceScatter", "opset15", [x, np.ones((2, 3), np.float32), i64(0), i64(2), i64(0)])
    with pytest.raises(FormatError, match="updates have element type f16"):
        run_op("SliceScatter", "opset15", [x, np.ones((2, 3), np.float16), *args])
    with pytest.raises(ShapeInferenceError, match="axis 2 is out of the range"):
        run_op("SliceScatter", "opset15", [x, np.ones((2, 3), np.float32), *args, i64(2)])


# ---- ExtractImagePatches ------------------------------------------------------------------------


@DYN
@pytest.mark.parametrize("pad", ["valid", "same_upper", "same_lower"])
@pytest.mark.parametrize(
    "sizes, strides, rates",
    [([2, 2], [1, 1], [1, 1]), ([3, 2], [2, 3], [1, 2]), ([2, 3], [3, 2], [2, 1]), ([1, 4], [4, 1], [1, 1])],
)
def test_extract_image_patches(tmp_path, sizes, strides, rates, pad, dyn):
    o3 = ops(3)
    x = P("x", dims((2, 3, 7, 8), dyn, (0, 2, 3)))
    outs = [o3.extract_image_patches(x, sizes, strides, rates, pad)]
    oc.check(tmp_path, [x], outs, {"x": normal(2, 3, 7, 8)})


@pytest.mark.parametrize(
    "sizes, strides, rates, pad, shape",
    [
        ([4, 2], [2, 1], [1, 1], "valid", (1, 2, 3, 5)),  # a patch taller than the image: no rows
        ([5, 1], [1, 1], [1, 1], "valid", (1, 1, 2, 3)),
        ([4, 4], [3, 3], [1, 1], "same_lower", (1, 1, 2, 2)),  # patches mostly padding
        ([2, 2], [5, 5], [3, 3], "same_upper", (1, 2, 6, 7)),
    ],
)
def test_extract_image_patches_edges(tmp_path, sizes, strides, rates, pad, shape):
    x = P("x", shape)
    outs = [ops(3).extract_image_patches(x, sizes, strides, rates, pad)]
    oc.check(tmp_path, [x], outs, {"x": normal(*shape)})


def test_extract_image_patches_types(tmp_path):
    o3 = ops(3)
    x = P("x", (1, 2, 5, 5), np.int16)
    outs = [o3.extract_image_patches(x, [3, 3], [2, 2], [1, 1], "same_upper")]
    oc.check(tmp_path, [x], outs, {"x": table(1, 2, 5, 5, dtype=np.int16)})


def test_extract_image_patches_errors():
    x = np.zeros((1, 1, 4, 4), np.float32)
    kw = dict(strides=[1, 1], rates=[1, 1], auto_pad="valid")
    with pytest.raises(FormatError, match="sizes=\\[0, 2\\]"):
        run_op("ExtractImagePatches", "opset3", [x], sizes=[0, 2], **kw)
    with pytest.raises(FormatError, match="auto_pad"):
        run_op("ExtractImagePatches", "opset3", [x], sizes=[2, 2], strides=[1, 1], rates=[1, 1], auto_pad="explicit")
    with pytest.raises(ShapeInferenceError, match="rank 4 is required"):
        run_op("ExtractImagePatches", "opset3", [x[0]], sizes=[2, 2], **kw)
    with pytest.raises(FormatError, match="missing attribute 'rates'"):
        run_op("ExtractImagePatches", "opset3", [x], sizes=[2, 2], strides=[1, 1], auto_pad="valid")


# ---- Col2Im -------------------------------------------------------------------------------------


def _col2im_case(batched, size, kernel, strides, dilations, pb, pe):
    blocks = [(size[d] + pb[d] + pe[d] - dilations[d] * (kernel[d] - 1) - 1) // strides[d] + 1 for d in range(2)]
    return (
        (2, 3 * kernel[0] * kernel[1], blocks[0] * blocks[1])
        if batched
        else (3 * kernel[0] * kernel[1], blocks[0] * blocks[1])
    )


COL2IM = [
    ([4, 5], [2, 2], [1, 1], [1, 1], [0, 0], [0, 0]),
    ([6, 7], [3, 2], [2, 1], [1, 2], [1, 0], [2, 1]),
    ([5, 5], [2, 3], [3, 2], [2, 1], [0, 2], [1, 0]),
]


@DYN
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("case", range(len(COL2IM)))
def test_col2im(tmp_path, case, batched, dyn):
    o15 = ops(15)
    size, kernel, strides, dilations, pb, pe = COL2IM[case]
    shape = _col2im_case(batched, *COL2IM[case])
    x = P("x", dims(shape, dyn))
    osize = P("osize", (2,), np.int64)
    attrs = dict(strides=strides, dilations=dilations, pads_begin=pb, pads_end=pe)
    outs = [
        o15.col2im(x, C(i64(*size)), C(i64(*kernel)), **attrs),
        o15.col2im(x, osize, C(i64(*kernel)), **attrs),  # output size at run time
    ]
    oc.check(tmp_path, [x, osize], outs, {"x": normal(*shape), "osize": i64(*size)})


def test_col2im_kernel_beyond_the_image(tmp_path):
    """A kernel taller than the padded image: no blocks (L = 0), so a sum over nothing: zeros.
    OpenVINO's shape rule agrees (L must be 0); its CPU plugin returned uninitialised memory
    (5e19) and Col2Im has no reference evaluate, so the values are checked against zeros."""
    o15 = ops(15)
    x = P("x", (1, 6, 0))
    outs = [o15.col2im(x, C(i64(2, 5)), C(i64(3, 2)), strides=[2, 1])]
    (got,) = oc.check(tmp_path, [x], outs, {"x": np.zeros((1, 6, 0), np.float32)}, values=False).values()
    np.testing.assert_array_equal(got, np.zeros((1, 1, 2, 5), np.float32))


def test_col2im_integers(tmp_path):
    o15 = ops(15)
    x = P("x", (1, 4, 9), np.int32)
    outs = [o15.col2im(x, C(i64(4, 4)), C(i64(2, 2)))]
    oc.check(tmp_path, [x], outs, {"x": table(1, 4, 9, dtype=np.int32)})


def test_col2im_errors():
    x = np.zeros((1, 12, 12), np.float32)
    with pytest.raises(
        ShapeInferenceError, match="data has 12 blocks; output_size \\[4, 4\\] and kernel_size \\[2, 2\\] give 3 x 3"
    ):
        run_op("Col2Im", "opset15", [x, i64(4, 4), i64(2, 2)])
    with pytest.raises(ShapeInferenceError, match="dim 12 is not divisible by the kernel's 3 x 3"):
        run_op("Col2Im", "opset15", [x, i64(4, 4), i64(3, 3)])
    with pytest.raises(ExecutionError, match="data has 12 blocks"):
        run_op("Col2Im", "opset15", [x, i64(4, 4), i64(2, 2)], const=[])
    with pytest.raises(FormatError, match="strides=\\[0, 1\\]"):
        run_op("Col2Im", "opset15", [x, i64(4, 5), i64(2, 2)], strides=[0, 1])
    with pytest.raises(ShapeInferenceError, match="rank 2 or 3 is required"):
        run_op("Col2Im", "opset15", [x[None], i64(4, 5), i64(2, 2)])
    with pytest.raises(UnsupportedDtypeError, match="boolean"):
        run_op("Col2Im", "opset15", [x > 0, i64(4, 4), i64(2, 2)])
    with pytest.raises(ShapeInferenceError, match="kernel_size has shape \\[3\\]"):
        run_op("Col2Im", "opset15", [x, i64(4, 5), i64(2, 2, 1)])
