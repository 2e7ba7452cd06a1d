"""ROI pooling ops (ops/roi.py, kernels/roi.py) against OpenVINO: graphs built with OpenVINO's
opset API, static and with dynamic dims, written by `ov.save_model`; irexec's inferred shapes and
types must equal `read_model`'s, `validate` must be clean and the values must equal OpenVINO
CPU's (tests/support/ovcheck.py). ROIAlign-3 is also checked against OpenVINO's reference
implementation (`Node.evaluate`, the only ROI op that has one reachable from Python).

Where the CPU plugin and the reference differ (ops/roi.py's docstring) the CPU cases avoid the
difference and the behaviour irexec chose is checked on its own, against what the reference
sources compute (written out in each test).

The ROIs mix the cases the formulas treat apart: inside the map, across its edges, entirely
outside, degenerate (a point), reversed (end before start), fractional coordinates.
"""

from __future__ import annotations

import numpy as np
import pytest

import irexec
from irexec.ops.single import infer_op, run_op
from irexec.shapes import TensorSpec
from tests.support import ovcheck as oc

OPS_TESTED = [
    ("ROIPooling", "opset2"),
    ("ROIAlign", "opset3"),
    ("ROIAlign", "opset9"),
    ("ROIAlignRotated", "opset15"),
    ("PSROIPooling", "opset1"),
    ("DeformablePSROIPooling", "opset1"),
]

R = np.random.default_rng(20261125)


def normal(*shape, dtype=np.float32):
    return R.normal(size=shape).astype(dtype)


def ops(v=16):
    import importlib

    return importlib.import_module(f"openvino.opset{v}")


def P(name, shape, dtype=np.float32):
    return oc.param(name, shape, dtype)


def dims(shape, dyn, which):
    """shape with the listed axes dynamic when `dyn`."""
    return tuple(None if dyn and i in which else d for i, d in enumerate(shape))


def check_dynamic_by_static(tmp_path, build, dyn):
    """OpenVINO's CPU plugin cannot compile PSROIPooling and DeformablePSROIPooling with dynamic
    shapes: a dynamic graph is checked for shapes and types against read_model, and its values
    must equal those of the same graph with static shapes, which are checked against the CPU."""
    static = oc.check(tmp_path, *build(False), name="static")
    if not dyn:
        return static
    got = oc.check(tmp_path, *build(True), name="dynamic", values=False)
    for a, b in zip(got.values(), static.values()):
        np.testing.assert_array_equal(a, b)
    return got


# [x1, y1, x2, y2] boxes in pixels of a 9 x 10 map: inside, across the edges, outside, a point,
# reversed, fractional
BOXES = np.array(
    [
        [0, 0, 9, 8],
        [1, 1, 5, 6],
        [2.5, 0.3, 3.7, 7.9],
        [-2, -2, 3, 3],
        [20, 20, 30, 30],
        [3, 3, 3, 3],
        [6, 5, 1.5, 2],
        [1.2, 3.3, 17, 2.4],
        [-0.5, 1.5, 12, 14],
        [7.49, 2.5, 9.5, 6.51],
    ],
    np.float32,
)
BATCH = np.array([0, 1, 0, 1, 0, 1, 0, 1, 1, 0], np.int32)
ROIS5 = np.concatenate([BATCH[:, None].astype(np.float32), BOXES], axis=1)  # [batch, x1, y1, x2, y2]


# ---- ROIAlign-3/9 -------------------------------------------------------------------------------


@pytest.mark.parametrize("dyn", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("mode", ["avg", "max"])
def test_roi_align_3(tmp_path, mode, dyn):
    o3 = ops(3)
    x = P("x", dims((2, 5, 9, 10), dyn, (0, 2, 3)))
    rois = P("rois", dims((10, 4), dyn, (0,)))
    idx = P("idx", dims((10,), dyn, (0,)), np.int32)
    outs = [
        o3.roi_align(x, rois, idx, 3, 2, 2, 1.0, mode),
        o3.roi_align(x, rois, idx, 2, 3, 0, 0.55, mode),  # adaptive sampling
        o3.roi_align(x, rois, idx, 1, 1, 3, 0.25, mode),
    ]
    oc.check(tmp_path, [x, rois, idx], outs, {"x": normal(2, 5, 9, 10), "rois": BOXES, "idx": BATCH})


@pytest.mark.parametrize("dyn", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("aligned", ["asymmetric", "half_pixel_for_nn", "half_pixel"])
def test_roi_align_9(tmp_path, aligned, dyn):
    o9 = ops(9)
    x = P("x", dims((2, 5, 9, 10), dyn, (1, 2)))
    rois = P("rois", dims((10, 4), dyn, (0,)))
    idx = P("idx", (10,), np.int64)
    outs = [o9.roi_align(x, rois, idx, 3, 2, 2, 1.0, m, aligned) for m in ("avg", "max")]
    # adaptive sampling: the CPU plugin gives NaN to a bin with no samples (a half_pixel ROI of
    # width 0, or reversed), the reference 0 (test_roi_align_without_samples): the degenerate
    # and reversed ROIs stay out of these
    keep = [0, 1, 2, 3, 4, 8, 9] if aligned != "asymmetric" else list(range(10))
    rois2 = P("rois2", (len(keep), 4))
    idx2 = P("idx2", (len(keep),), np.int64)
    outs += [o9.roi_align(x, rois2, idx2, 2, 3, 0, 0.55, m, aligned) for m in ("avg", "max")]
    feeds = {
        "x": normal(2, 5, 9, 10),
        "rois": BOXES,
        "idx": BATCH.astype(np.int64),
        "rois2": BOXES[keep],
        "idx2": BATCH[keep].astype(np.int64),
    }
    oc.check(tmp_path, [x, rois, idx, rois2, idx2], outs, feeds)


def reference(node, feeds: list) -> np.ndarray:
    """OpenVINO's reference kernel (Node.evaluate) of a node with static output shape: as
    ovcheck.reference, with the output tensor sized by the node's output (not its first input)."""
    import openvino as ov

    out = [ov.Tensor(node.get_output_element_type(0), node.get_output_shape(0))]
    assert node.evaluate(out, [ov.Tensor(np.ascontiguousarray(a)) for a in feeds])
    return out[0].data.copy()


def test_roi_align_3_against_the_reference():
    """OpenVINO's reference kernel (Node.evaluate), which ROIAlign-3 has: all-negative data
    shows max mode's floor at 0 (the reference's running maximum starts at 0)."""
    o3 = ops(3)
    for data in (normal(2, 3, 9, 10), -np.abs(normal(2, 3, 9, 10)) - 1):
        for mode, ratio in (("avg", 0), ("max", 2), ("max", 0)):
            x = P("x", data.shape)
            rois = P("rois", BOXES.shape)
            idx = P("idx", BATCH.shape, np.int32)
            node = o3.roi_align(x, rois, idx, 3, 4, ratio, 0.7, mode)
            want = reference(node, [data, BOXES, BATCH])
            got = run_op(
                "ROIAlign",
                "opset3",
                [data, BOXES, BATCH],
                pooled_h=3,
                pooled_w=4,
                sampling_ratio=ratio,
                spatial_scale=0.7,
                mode=mode,
            )[0]
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert (got == 0).all()  # all-negative data, max mode


@pytest.mark.parametrize("jit", ["never", "always"])
@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("aligned", ["asymmetric", "half_pixel", "half_pixel_for_nn"])
def test_roi_align_fixed_ratio_blocks_against_the_per_roi_loop(monkeypatch, jit, mode, aligned):
    """A fixed sampling_ratio pools blocks of ROIs at once (kernels/roi.py `_align_fixed`); bins 1
    to 2 pixels wide take 2 adaptive samples too, which the per-ROI loop pools: the same bits,
    over two images, with boxes reaching past the map. With the kernels, the averages' sums run
    in order on the detectron family's kernel: equal or one float32 unit apart."""
    from irexec import config
    from irexec.kernels import detectron_loops

    monkeypatch.setattr(config, "JIT", jit)
    calls = []
    if jit == "always":
        real = detectron_loops.weighted_rows
        monkeypatch.setattr(detectron_loops, "weighted_rows", lambda *a: calls.append(1) or real(*a))
    rng = np.random.default_rng(5)
    data = normal(2, 6, 11, 13)
    n = 40
    x0, y0 = rng.uniform(-3, 10, n), rng.uniform(-3, 8, n)
    boxes = np.stack([x0, y0, x0 + rng.uniform(4.2, 7.8, n), y0 + rng.uniform(3.2, 5.8, n)], 1).astype(np.float32)
    batch = rng.integers(0, 2, n).astype(np.int32)
    attrs = dict(pooled_h=3, pooled_w=4, spatial_scale=1.0, mode=mode, aligned_mode=aligned)
    fixed = run_op("ROIAlign", "opset9", [data, boxes, batch], sampling_ratio=2, **attrs)[0]
    adaptive = run_op("ROIAlign", "opset9", [data, boxes, batch], sampling_ratio=0, **attrs)[0]
    assert bool(calls) == (jit == "always" and mode == "avg")
    if calls:
        np.testing.assert_array_max_ulp(fixed, adaptive, maxulp=1)
    else:
        np.testing.assert_array_equal(fixed, adaptive)
    assert np.abs(fixed).max() > 0


def test_roi_align_without_samples():
    """A half_pixel ROI of width 0 with adaptive sampling has ceil(0) = 0 samples per bin: the
    reference sums nothing and writes 0 (the CPU plugin NaN); a reversed ROI whose bins are
    between -1 and 0 pixels wide likewise. Other bins of the same op are unaffected."""
    data = normal(1, 2, 9, 10)
    boxes = np.array([[3, 3, 3, 3], [5, 5, 4.6, 4.6], [1, 1, 6, 6]], np.float32)
    for mode in ("avg", "max"):
        got = run_op(
            "ROIAlign",
            "opset9",
            [data, boxes, np.zeros(3, np.int32)],
            pooled_h=2,
            pooled_w=2,
            sampling_ratio=0,
            spatial_scale=1.0,
            mode=mode,
            aligned_mode="half_pixel",
        )[0]
        assert (got[:2] == 0).all()
        assert np.isfinite(got[2]).all() and (got[2] != 0).any()


def test_roi_align_f16(tmp_path):
    """f16 data runs in float32 as the CPU plugin runs it (SPEC §6), rounded once to f16."""
    o9 = ops(9)
    x = P("x", (2, 4, 9, 10), np.float16)
    rois = P("rois", (10, 4), np.float16)
    idx = P("idx", (10,), np.int32)
    outs = [o9.roi_align(x, rois, idx, 2, 2, 2, 0.5, "avg", "half_pixel")]
    feeds = {"x": normal(2, 4, 9, 10, dtype=np.float16), "rois": BOXES.astype(np.float16), "idx": BATCH}
    oc.check(tmp_path, [x, rois, idx], outs, feeds, rtol=2e-3, atol=2e-3)


# ---- ROIAlignRotated-15 -------------------------------------------------------------------------

ROTATED = np.array(
    [
        [3, 3, 4, 2, 0.3],
        [1, 5, 6, 3, -1.2],
        [4, 4, 20, 20, 2.0],
        [0, 0, 1, 1, 0],
        [3, 4, 0.5, 7.5, 3.14159],
        [6, 2, 3, 3, -0.7],
        [3.5, 4.5, 2, 2, 0],
        [12, 11, 2, 2, 0.5],
    ],
    np.float32,
)


@pytest.mark.parametrize("dyn", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("clockwise", [False, True], ids=["ccw", "cw"])
def test_roi_align_rotated(tmp_path, clockwise, dyn):
    o15 = ops(15)
    x = P("x", dims((2, 3, 9, 7), dyn, (0, 1, 3)))
    rois = P("rois", dims((8, 5), dyn, (0,)))
    idx = P("idx", dims((8,), dyn, (0,)), np.int32)
    outs = [
        o15.roi_align_rotated(x, rois, idx, 3, 2, 2, 1.0, clockwise),
        o15.roi_align_rotated(x, rois, idx, 2, 2, 0, 0.6, clockwise),
    ]
    feeds = {"x": normal(2, 3, 9, 7), "rois": ROTATED, "idx": np.array([0, 1, 0, 1, 0, 1, 0, 1], np.int32)}
    oc.check(tmp_path, [x, rois, idx], outs, feeds)


def test_roi_align_rotated_angle_convention():
    """A quarter turn of a 1-pixel-tall, 4-pixel-wide ROI counterclockwise (OpenVINO's image
    axes: x right, y down) lays its width along y; clockwise_mode turns the other way; a zero
    angle samples as ROIAlign half_pixel_for_nn does with the same box."""
    data = np.arange(2 * 81, dtype=np.float32).reshape(1, 2, 9, 9)
    idx = np.zeros(1, np.int32)
    box = np.array([[4.5, 4.5, 4, 1, np.pi / 2]], np.float32)
    common = dict(pooled_h=1, pooled_w=4, sampling_ratio=1, spatial_scale=1.0)
    ccw = run_op("ROIAlignRotated", "opset15", [data, box, idx], clockwise_mode=False, **common)[0]
    cw = run_op("ROIAlignRotated", "opset15", [data, box, idx], clockwise_mode=True, **common)[0]
    # the reference maps a grid point (px, py) about the center (cx, cy) = (4, 4) to
    # y = py*cos(a) - px*sin(a) + cy, x = py*sin(a) + px*cos(a) + cx, a = angle (counterclockwise)
    # or -angle (clockwise): the samples px = -1.5 + k, py = 0 land on column 4, rows 4 -+ px;
    # the data is linear (9*row + col), so interpolation is exact
    px = -1.5 + np.arange(4)
    np.testing.assert_allclose(ccw[0, 0, 0], 9 * (4 - px) + 4, atol=1e-4)
    np.testing.assert_allclose(cw[0, 0, 0], 9 * (4 + px) + 4, atol=1e-4)
    flat = np.array([[4.5, 4, 4, 1, 0]], np.float32)  # center (4, 3.5) after the -0.5 shift
    rot = run_op("ROIAlignRotated", "opset15", [data, flat, idx], **common)[0]
    box = np.array([[2.5, 3.5, 6.5, 4.5]], np.float32)  # the same pixels for half_pixel_for_nn
    aligned = run_op("ROIAlign", "opset9", [data, box, idx], mode="avg", aligned_mode="half_pixel_for_nn", **common)[0]
    np.testing.assert_allclose(rot, aligned, rtol=1e-6)


# ---- ROIPooling-2 -------------------------------------------------------------------------------


@pytest.mark.parametrize("dyn", [False, True], ids=["static", "dynamic"])
def test_roi_pooling_max(tmp_path, dyn):
    o = ops()
    x = P("x", dims((2, 4, 9, 10), dyn, (0, 1, 2)))
    rois = P("rois", dims((10, 5), dyn, (0,)))
    outs = [
        o.roi_pooling(x, rois, output_roi=[3, 2], spatial_scale=1.0, method="max"),
        o.roi_pooling(x, rois, output_roi=[1, 1], spatial_scale=0.5, method="max"),
        o.roi_pooling(x, rois, output_roi=[4, 5], spatial_scale=0.37, method="max"),
    ]
    oc.check(tmp_path, [x, rois], outs, {"x": normal(2, 4, 9, 10), "rois": ROIS5})


NORMALIZED = np.array(
    [
        [0, 0, 0, 1, 1],
        [1, 0.1, 0.2, 0.7, 0.9],
        [0, 0.5, 0.5, 0.5, 0.5],
        [1, -0.2, 0.1, 1.3, 0.8],
        [0, 0.9, 0.8, 0.1, 0.2],
    ],
    np.float32,
)


@pytest.mark.parametrize("dyn", [False, True], ids=["static", "dynamic"])
def test_roi_pooling_bilinear(tmp_path, dyn):
    o = ops()
    x = P("x", dims((2, 3, 6, 7), dyn, (0, 3)))
    rois = P("rois", dims((5, 5), dyn, (0,)))
    outs = [
        o.roi_pooling(x, rois, output_roi=shape, spatial_scale=scale, method="bilinear")
        for shape, scale in (([3, 2], 1.0), ([1, 1], 1.0), ([2, 1], 0.5), ([4, 4], 2.0))
    ]
    oc.check(tmp_path, [x, rois], outs, {"x": normal(2, 3, 6, 7), "rois": NORMALIZED})


def test_roi_pooling_max_propagates_nan():
    data = normal(1, 1, 4, 4)
    data[0, 0, 1, 1] = np.nan
    rois = np.array([[0, 0, 0, 3, 3]], np.float32)
    got = run_op("ROIPooling", "opset2", [data, rois], pooled_h=2, pooled_w=2, spatial_scale=1.0)[0]
    assert np.isnan(got[0, 0, 0, 0]) and not np.isnan(got[0, 0, 1:, :]).any() and not np.isnan(got[0, 0, 0, 1])


def test_roi_pooling_output_size_attribute():
    """OpenVINO writes output_size beside pooled_h/pooled_w and reads all three (pooled_* last)."""
    data, rois = normal(1, 2, 6, 6), np.array([[0, 0, 0, 5, 5]], np.float32)
    a = run_op("ROIPooling", "opset2", [data, rois], output_size=[2, 3], spatial_scale=1.0)[0]
    b = run_op("ROIPooling", "opset2", [data, rois], pooled_h=2, pooled_w=3, spatial_scale=1.0)[0]
    c = run_op("ROIPooling", "opset2", [data, rois], output_size=[4, 4], pooled_h=2, pooled_w=3, spatial_scale=1.0)[0]
    assert a.shape == (1, 2, 2, 3)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)


# ---- PSROIPooling-1 -----------------------------------------------------------------------------


@pytest.mark.parametrize("dyn", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("group,out_dim", [(2, 3), (3, 2), (1, 4)])
def test_psroi_pooling_average(tmp_path, group, out_dim, dyn):
    o = ops()
    c = out_dim * group * group
    feeds = {"x": normal(2, c, 9, 10), "rois": ROIS5}

    def build(dyn):
        x = P("x", dims((2, c, 9, 10), dyn, (0, 2, 3)))
        rois = P("rois", dims((10, 5), dyn, (0,)))
        outs = [o.psroi_pooling(x, rois, out_dim, group, scale, 1, 1, "average") for scale in (1.0, 0.5, 0.37)]
        return [x, rois], outs, feeds

    check_dynamic_by_static(tmp_path, build, dyn)


@pytest.mark.parametrize("dyn", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("group,out_dim,bins", [(2, 3, (2, 2)), (3, 2, (1, 2)), (1, 4, (3, 1))])
def test_psroi_pooling_bilinear(tmp_path, group, out_dim, bins, dyn):
    o = ops()
    c = out_dim * bins[0] * bins[1]
    boxes = np.concatenate([NORMALIZED, [[1, -0.3, -0.2, 0.5, 0.5]]]).astype(np.float32)
    feeds = {"x": normal(2, c, 8, 9), "rois": boxes}

    def build(dyn):
        x = P("x", dims((2, c, 8, 9), dyn, (0, 2)))
        rois = P("rois", dims((6, 5), dyn, (0,)))
        outs = [o.psroi_pooling(x, rois, out_dim, group, scale, *bins, "bilinear") for scale in (1.0, 0.5)]
        return [x, rois], outs, feeds

    check_dynamic_by_static(tmp_path, build, dyn)


def test_psroi_pooling_average_outside_the_map():
    """Bins outside the map are empty: 0 (the CPU plugin's and R-FCN's rule; the reference would
    average the border pixel). A bin clipped by the map averages the pixels inside."""
    data = normal(1, 4, 5, 5)
    rois = np.array([[0, 10, 10, 14, 14], [0, 3, 3, 6, 6]], np.float32)
    got = run_op("PSROIPooling", "opset1", [data, rois], output_dim=1, group_size=2, spatial_scale=1.0)[0]
    assert (got[0] == 0).all()
    # ROI 1: x, y in [3, 7) split in 2 x 2 bins [3, 5) and [5, 7): only [3, 5) is inside
    np.testing.assert_allclose(got[1, 0, 0, 0], data[0, 0, 3:5, 3:5].astype(np.float64).mean(), rtol=1e-6)
    assert (got[1, 0, 0, 1] == 0) and (got[1, 0, 1, 0] == 0) and (got[1, 0, 1, 1] == 0)


# ---- DeformablePSROIPooling-1 -------------------------------------------------------------------

DEFORM = [(2, 4, (1, 1), 2, 1), (3, 2, (2, 3), 3, 2), (1, 4, (3, 1), 1, 4), (2, 4, (2, 2), 1, 2)]


@pytest.mark.parametrize("dyn", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("group,out_dim,bins,part,classes", DEFORM)
def test_deformable_psroi_pooling(tmp_path, group, out_dim, bins, part, classes, dyn):
    o = ops()
    c = out_dim * group * group
    feeds = {"x": normal(2, c, 9, 10), "rois": ROIS5, "off": normal(10, 2 * classes, part, part)}

    def build(dyn):
        x = P("x", dims((2, c, 9, 10), dyn, (0, 2, 3)))
        rois = P("rois", dims((10, 5), dyn, (0,)))
        off = P("off", dims((10, 2 * classes, part, part), dyn, (0,)))
        outs = [
            o.deformable_psroi_pooling(x, rois, out_dim, 1.0, group, "bilinear_deformable", *bins, 0.1, part, off),
            o.deformable_psroi_pooling(x, rois, out_dim, 0.37, group, "bilinear_deformable", *bins, 1.0, part, off),
            o.deformable_psroi_pooling(x, rois, out_dim, 0.5, group, "bilinear_deformable", *bins, 0.1, part),
        ]
        return [x, rois, off], outs, feeds

    check_dynamic_by_static(tmp_path, build, dyn)


def test_deformable_psroi_negative_batch_gives_zeros(tmp_path):
    """The ROIs from the first -1 batch index on give zeros (the reference skips each negative
    ROI; the CPU plugin and irexec stop at the first -1 and zero-fill the rest)."""
    o = ops()
    x = P("x", (2, 8, 9, 10))
    rois = P("rois", (4, 5))
    outs = [o.deformable_psroi_pooling(x, rois, 2, 0.5, 2, "bilinear_deformable", 2, 2)]
    boxes = np.array([[1, 1, 1, 8, 7], [0, 2, 3, 9, 9], [-1, 1, 1, 8, 7], [-1, 0, 0, 5, 5]], np.float32)
    got = oc.check(tmp_path, [x, rois], outs, {"x": normal(2, 8, 9, 10), "rois": boxes})
    value = next(iter(got.values()))
    assert (value[2:] == 0).all() and (value[:2] != 0).any()


def test_minus_one_ends_the_rois(tmp_path):
    """Proposal pads its output with a -1 batch index in the first padding row and zeros after:
    the ROI ops stop there and give zeros for the rest, as OpenVINO's CPU plugin does (its
    ROIAlign leaves those rows unwritten: only the rows before are compared for it). Rows after
    the marker are not checked (a batch index 7 of 2 images there is ignored)."""
    o = ops()
    rois5 = np.concatenate([ROIS5[:4], [[-1, 0, 0, 0, 0], [0, 0, 0, 0, 0], [7, 1, 1, 4, 4]]]).astype(np.float32)
    x = P("x", (2, 8, 9, 10))
    rois = P("rois", (7, 5))
    outs = [
        o.roi_pooling(x, rois, output_roi=[2, 2], spatial_scale=0.5, method="max"),
        o.roi_pooling(x, rois, output_roi=[2, 2], spatial_scale=0.5, method="bilinear"),
        o.psroi_pooling(x, rois, 2, 2, 0.5, 1, 1, "average"),
        o.psroi_pooling(x, rois, 2, 2, 0.5, 2, 2, "bilinear"),
        o.deformable_psroi_pooling(x, rois, 2, 0.5, 2, "bilinear_deformable", 2, 2),
    ]
    got = oc.check(tmp_path, [x, rois], outs, {"x": normal(2, 8, 9, 10), "rois": rois5})
    for value in got.values():
        assert (value[4:] == 0).all() and (value[:4] != 0).any()
    import openvino as ov

    o9 = ops(9)
    x = P("x", (2, 8, 9, 10))
    box = P("box", (7, 4))
    idx = P("idx", (7,), np.int32)
    feeds = {"x": normal(2, 8, 9, 10), "box": BOXES[:7], "idx": np.array([0, 1, 0, 1, -1, 0, 7], np.int32)}
    node = o9.roi_align(x, box, idx, 2, 2, 2, 0.5, "avg", "asymmetric")
    got = next(iter(oc.check(tmp_path, [x, box, idx], [node], feeds, name="align", values=False).values()))
    compiled = ov.Core().compile_model(
        ov.Model([o.result(node)], [x, box, idx]), "CPU", {"INFERENCE_PRECISION_HINT": "f32"}
    )
    want = compiled([feeds["x"], feeds["box"], feeds["idx"]])[compiled.outputs[0]]
    np.testing.assert_allclose(got[:4], want[:4], rtol=1e-5, atol=1e-6)
    assert (got[4:] == 0).all() and (got[:4] != 0).any()


# ---- a Faster R-CNN-sized head -----------------------------------------------------------------


def test_many_rois(tmp_path):
    """Hundreds of ROIs over a 64-channel map, as a detection head runs them."""
    o9 = ops(9)
    n = 300
    x = P("x", (1, 64, 38, 50))
    rois = P("rois", (n, 4))
    idx = P("idx", (n,), np.int32)
    corner = R.uniform(0, 700, (n, 2))
    size = R.uniform(8, 300, (n, 2))
    boxes = np.concatenate([corner, corner + size], axis=1).astype(np.float32)
    outs = [o9.roi_align(x, rois, idx, 7, 7, 2, 1 / 16, "avg", "half_pixel")]
    feeds = {"x": normal(1, 64, 38, 50), "rois": boxes, "idx": np.zeros(n, np.int32)}
    oc.check(tmp_path, [x, rois, idx], outs, feeds)


# ---- shape rules and errors ---------------------------------------------------------------------


def spec(shape, dtype="f32"):
    return TensorSpec(dtype, shape)


ALIGN = dict(pooled_h=2, pooled_w=3, sampling_ratio=2, spatial_scale=0.5, mode="avg")


def test_shape_rules_with_dynamic_inputs():
    out = infer_op("ROIAlign", "opset9", [spec(None), spec((None, 4)), spec((7,), "i32")], **ALIGN)[0]
    assert out.shape == (7, None, 2, 3) and out.dtype == "f32"
    out = infer_op(
        "ROIPooling", "opset2", [spec((1, 5, None, None)), spec(None)], pooled_h=2, pooled_w=2, spatial_scale=1.0
    )
    assert out[0].shape == (None, 5, 2, 2)
    out = infer_op(
        "PSROIPooling",
        "opset1",
        [spec(None, "f16"), spec((3, 5), "f16")],
        output_dim=2,
        group_size=3,
        spatial_scale=1.0,
    )
    assert out[0].shape == (3, 2, 3, 3) and out[0].dtype == "f16"
    attrs = dict(output_dim=2, group_size=2, spatial_scale=1.0, part_size=2)
    out = infer_op(
        "DeformablePSROIPooling", "opset1", [spec((1, 8, 5, 5)), spec((None, 5)), spec((6, 2, 2, 2))], **attrs
    )
    assert out[0].shape == (None, 2, 2, 2)  # the ROI count comes from the ROIs alone, as in OpenVINO


@pytest.mark.parametrize(
    "type_name,version,specs,attrs,error,text",
    [
        ("ROIAlign", "opset3", None, dict(ALIGN, pooled_h=0), irexec.FormatError, "pooled_h=0"),
        ("ROIAlign", "opset3", None, dict(ALIGN, sampling_ratio=-1), irexec.FormatError, "sampling_ratio=-1"),
        ("ROIAlign", "opset3", None, dict(ALIGN, spatial_scale=0), irexec.FormatError, "spatial_scale=0"),
        ("ROIAlign", "opset3", None, dict(ALIGN, spatial_scale="inf"), irexec.FormatError, "spatial_scale=inf"),
        ("ROIAlign", "opset3", None, dict(ALIGN, mode="mean"), irexec.FormatError, "mode='mean'"),
        ("ROIAlign", "opset9", None, dict(ALIGN, aligned_mode="pixel"), irexec.FormatError, "aligned_mode"),
        ("ROIAlign", "opset3", [(1, 2, 5, 5), (3, 5), (3,)], ALIGN, irexec.ShapeInferenceError, r"\[3,5\]"),
        ("ROIAlign", "opset3", [(1, 2, 5, 5), (3, 4), (4,)], ALIGN, irexec.ShapeInferenceError, "4 values"),
        ("ROIAlign", "opset3", [(2, 5, 5), (3, 4), (3,)], ALIGN, irexec.ShapeInferenceError, r"\[2,5,5\]"),
        ("ROIAlign", "opset3", [(1, 2, 5, 5), (3, 4), (3, 1)], ALIGN, irexec.ShapeInferenceError, "batch_indices"),
        ("ROIAlignRotated", "opset15", [(1, 2, 5, 5), (3, 4), (3,)], dict(ALIGN, mode=None), irexec.ShapeInferenceError, r"\[3,4\]"),
        ("ROIPooling", "opset2", None, dict(pooled_h=2, pooled_w=-1, spatial_scale=1.0), irexec.FormatError, "pooled_w=-1"),
        ("ROIPooling", "opset2", None, dict(pooled_h=2, spatial_scale=1.0), irexec.FormatError, "pooled_w"),
        ("ROIPooling", "opset2", None, dict(pooled_h=2, pooled_w=2, spatial_scale=1, method="avg"), irexec.FormatError, "method"),
        ("PSROIPooling", "opset1", [(1, 7, 5, 5), (3, 5)], dict(output_dim=2, group_size=2, spatial_scale=1.0), irexec.ShapeInferenceError, "7 channels"),
        ("PSROIPooling", "opset1", [(1, 8, 5, 5), (3, 5)], dict(output_dim=2, group_size=0, spatial_scale=1.0), irexec.FormatError, "group_size=0"),
        ("PSROIPooling", "opset1", [(1, 8, 5, 5), (3, 5)], dict(output_dim=2, spatial_scale=1.0, mode="bilinear", spatial_bins_x=0), irexec.FormatError, "spatial_bins_x=0"),
        ("DeformablePSROIPooling", "opset1", [(1, 8, 5, 5), (3, 5), (3, 2, 3, 3)], dict(output_dim=2, group_size=2, spatial_scale=1.0, part_size=2), irexec.ShapeInferenceError, "offsets"),
        ("DeformablePSROIPooling", "opset1", [(1, 8, 5, 5), (3, 5), (4, 2, 2, 2)], dict(output_dim=2, group_size=2, spatial_scale=1.0, part_size=2), irexec.ShapeInferenceError, "offsets"),
        ("DeformablePSROIPooling", "opset1", [(1, 8, 5, 5), (3, 5), (3, 6, 2, 2)], dict(output_dim=2, group_size=2, spatial_scale=1.0, part_size=2), irexec.ShapeInferenceError, "k dividing"),
        ("DeformablePSROIPooling", "opset1", [(1, 6, 5, 5), (3, 5)], dict(output_dim=2, group_size=2, spatial_scale=1.0), irexec.ShapeInferenceError, "6 channels"),
        ("DeformablePSROIPooling", "opset1", [(1, 8, 5, 5), (3, 5)], dict(output_dim=0, spatial_scale=1.0), irexec.FormatError, "output_dim=0"),
        ("DeformablePSROIPooling", "opset1", [(1, 8, 5, 5), (3, 5)], dict(output_dim=2, group_size=2, spatial_scale=1.0, mode="bilinear"), irexec.FormatError, "mode"),
    ],
)  # fmt: skip
def test_bad_attributes_and_shapes(type_name, version, specs, attrs, error, text):
    if specs is None:
        specs = [(1, 2, 5, 5), (3, 4), (3,)] if type_name == "ROIAlign" else [(1, 2, 5, 5), (3, 5)]
    typed = [spec(s, "i32" if (type_name.startswith("ROIAlign") and i == 2) else "f32") for i, s in enumerate(specs)]
    attrs = {k: v for k, v in attrs.items() if v is not None}
    with pytest.raises(error, match=text):
        infer_op(type_name, version, typed, **attrs)


def test_element_types_are_checked():
    with pytest.raises(irexec.UnsupportedDtypeError, match="i32"):
        infer_op("ROIAlign", "opset3", [spec((1, 2, 5, 5), "i32"), spec((3, 4), "i32"), spec((3,), "i32")], **ALIGN)
    with pytest.raises(irexec.FormatError, match="must match"):
        infer_op("ROIAlign", "opset3", [spec((1, 2, 5, 5)), spec((3, 4), "f16"), spec((3,), "i32")], **ALIGN)
    with pytest.raises(irexec.FormatError, match="batch_indices"):
        infer_op("ROIAlign", "opset3", [spec((1, 2, 5, 5)), spec((3, 4)), spec((3,), "f32")], **ALIGN)


@pytest.mark.parametrize("bad", [2, -2])
def test_batch_index_out_of_range(bad):
    data = normal(2, 8, 5, 5)
    boxes = np.array([[0, 0, 3, 3], [1, 1, 4, 4]], np.float32)
    with pytest.raises(irexec.ExecutionError, match=f"ROI 1 has batch index {bad}"):
        run_op("ROIAlign", "opset3", [data, boxes, np.array([0, bad], np.int32)], **ALIGN)
    rois = np.array([[0, 0, 0, 3, 3], [bad, 1, 1, 4, 4]], np.float32)
    with pytest.raises(irexec.ExecutionError, match=f"ROI 1 has batch index {bad}"):
        run_op("ROIPooling", "opset2", [data, rois], pooled_h=2, pooled_w=2, spatial_scale=1.0)
    with pytest.raises(irexec.ExecutionError, match=f"ROI 1 has batch index {bad}"):
        run_op("PSROIPooling", "opset1", [data, rois], output_dim=2, group_size=2, spatial_scale=1.0)
    with pytest.raises(irexec.ExecutionError, match=f"ROI 1 has batch index {bad}"):
        run_op("DeformablePSROIPooling", "opset1", [data, rois], output_dim=2, group_size=2, spatial_scale=1.0)
    rois[1, 0] = np.nan
    with pytest.raises(irexec.ExecutionError, match="ROI 1 has batch index nan"):
        run_op("ROIPooling", "opset2", [data, rois], pooled_h=2, pooled_w=2, spatial_scale=1.0)


def test_run_time_shapes_are_checked(tmp_path):
    """Dims known only at run time: the channel count and the ROIs/batch_indices lengths."""
    o = ops()
    x = P("x", (1, None, 5, 5))
    rois = P("rois", (None, 5))
    outs = [o.psroi_pooling(x, rois, 2, 2, 1.0, 1, 1, "average")]
    xml = tmp_path / "m.xml"
    import openvino as ov

    ov.save_model(ov.Model([o.result(outs[0])], [x, rois]), str(xml))
    model = irexec.load(xml)
    with pytest.raises(irexec.ExecutionError, match="7 channels"):
        model.infer({"x": normal(1, 7, 5, 5), "rois": np.zeros((1, 5), np.float32)})
    o3 = ops(3)
    x = P("x", (1, 2, 5, 5))
    rois = P("rois", (None, 4))
    idx = P("idx", (None,), np.int32)
    xml = tmp_path / "a.xml"
    ov.save_model(ov.Model([o.result(o3.roi_align(x, rois, idx, 2, 2, 2, 1.0, "avg"))], [x, rois, idx]), str(xml))
    model = irexec.load(xml)
    with pytest.raises(irexec.ExecutionError, match="batch_indices"):
        model.infer({"x": normal(1, 2, 5, 5), "rois": np.zeros((3, 4), np.float32), "idx": np.zeros(2, np.int32)})


# ---- edges: no ROIs, non-finite values, blocks -------------------------------------------------

PSROI = dict(output_dim=2, group_size=2, spatial_scale=1.0)


def all_ops(data8, rois4, rot, rois5, idx):
    """Every op once on the same inputs (8 channels; boxes for ROIAlign, rotated boxes, ROIs
    with their batch index first for the others)."""
    yield run_op("ROIAlign", "opset3", [data8, rois4, idx], **ALIGN)[0]
    yield run_op("ROIAlign", "opset9", [data8, rois4, idx], aligned_mode="half_pixel", **ALIGN)[0]
    yield run_op(
        "ROIAlignRotated", "opset15", [data8, rot, idx], pooled_h=2, pooled_w=2, sampling_ratio=0, spatial_scale=1.0
    )[0]
    yield run_op("ROIPooling", "opset2", [data8, rois5], pooled_h=2, pooled_w=2, spatial_scale=1.0)[0]
    yield run_op("ROIPooling", "opset2", [data8, rois5], pooled_h=2, pooled_w=2, spatial_scale=1.0, method="bilinear")[
        0
    ]
    yield run_op("PSROIPooling", "opset1", [data8, rois5], **PSROI)[0]
    yield run_op(
        "PSROIPooling", "opset1", [data8, rois5], mode="bilinear", spatial_bins_x=2, spatial_bins_y=2, **PSROI
    )[0]
    yield run_op("DeformablePSROIPooling", "opset1", [data8, rois5], spatial_bins_x=2, **PSROI)[0]


def test_no_rois():
    """Zero ROIs give an empty output of the right shape (OpenVINO's CPU plugin refuses to run
    ROIAlign on zero ROIs)."""
    data = normal(1, 8, 5, 6)
    none4, none5 = np.zeros((0, 4), np.float32), np.zeros((0, 5), np.float32)
    outs = list(all_ops(data, none4, none5, none5, np.zeros(0, np.int32)))
    assert all(o.shape[0] == 0 and o.ndim == 4 for o in outs)


def test_nan_coordinates():
    """A NaN coordinate: NaN from the ops that interpolate it (ROIAlign), 0 where the position
    tests fail (DeformablePSROIPooling, bilinear ROIPooling and PSROIPooling), an error where it
    must become a pixel index (max ROIPooling, average PSROIPooling); never a crash."""
    data = normal(1, 8, 5, 6)
    box = np.array([[1, np.nan, 3, 4]], np.float32)
    rois = np.array([[0, 1, np.nan, 3, 4]], np.float32)
    idx = np.zeros(1, np.int32)
    assert np.isnan(run_op("ROIAlign", "opset3", [data, box, idx], **ALIGN)[0]).all()
    got = run_op("DeformablePSROIPooling", "opset1", [data, rois], **PSROI)[0]
    assert (got == 0).all()
    for method in ("max", "bilinear"):
        attrs = dict(pooled_h=2, pooled_w=2, spatial_scale=1.0, method=method)
        if method == "max":
            with pytest.raises(irexec.ExecutionError, match="ROI 0 has a non-finite coordinate"):
                run_op("ROIPooling", "opset2", [data, rois], **attrs)
        else:
            assert (run_op("ROIPooling", "opset2", [data, rois], **attrs)[0] == 0).all()
    with pytest.raises(irexec.ExecutionError, match="ROI 0 has a non-finite coordinate"):
        run_op("PSROIPooling", "opset1", [data, rois], **PSROI)
    wide = np.array([[0, 0, np.inf, 4]], np.float32)
    with pytest.raises(irexec.ExecutionError, match="ROI 0 has bins inf pixels wide"):
        run_op("ROIAlign", "opset3", [data, wide, idx], **dict(ALIGN, sampling_ratio=0))


def test_psroi_average_with_an_infinite_pixel():
    """An infinity in the data reaches only the bins that read it (the summed-area table is not
    used then; elsewhere both paths agree)."""
    data = normal(1, 8, 6, 6)
    rois = np.array([[0, 0, 0, 5, 5], [0, 1, 1, 3, 4], [0, 2, 0, 5, 2]], np.float32)
    finite = run_op("PSROIPooling", "opset1", [data, rois], **PSROI)[0]
    data[0, 0, 0, 0] = np.inf  # channel 0 feeds bin (0, 0) of output channel 0
    got = run_op("PSROIPooling", "opset1", [data, rois], **PSROI)[0]
    assert np.isinf(got[0, 0, 0, 0]) and np.isinf(got[1:, 0, 0, 0]).sum() == 0
    mask = np.ones(got.shape, bool)
    mask[0, 0, 0, 0] = False
    np.testing.assert_allclose(got[mask], finite[mask], rtol=1e-6)


def test_empty_map_is_refused():
    with pytest.raises(irexec.ShapeInferenceError, match="no pixel"):
        infer_op("ROIAlign", "opset3", [spec((1, 2, 0, 5)), spec((3, 4)), spec((3,), "i32")], **ALIGN)
    from irexec.ops.base import Sig
    from irexec.ops.single import make_op

    op = make_op("ROIPooling", "opset2", 2, pooled_h=2, pooled_w=2, spatial_scale=1.0)
    with pytest.raises(irexec.ExecutionError, match="no pixel"):  # a dynamic dim that was 0 at run time
        op.compute([normal(1, 2, 4, 0), ROIS5[:1]], Sig(("f32", "f32"), ("f32",)))


def test_blocks_give_the_same_numbers(monkeypatch):
    """Working arrays are cut in blocks (of ROIs, bin rows, sample rows) above kernels/roi.CHUNK
    elements: with a tiny CHUNK every op computes the same values."""
    from irexec.kernels import roi as family

    data = normal(2, 8, 9, 10)
    rois5 = np.concatenate([BATCH[:, None].astype(np.float32), BOXES], axis=1)
    rot = np.concatenate([BOXES[:, :2] + 1, np.abs(BOXES[:, 2:4] - BOXES[:, :2]) + 1, BOXES[:, :1] / 7], axis=1)
    whole = list(all_ops(data, BOXES, rot, rois5, BATCH))
    monkeypatch.setattr(family, "CHUNK", 16)
    cut = list(all_ops(data, BOXES, rot, rois5, BATCH))
    assert len(cut) == 8
    for a, b in zip(whole, cut):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_f64(tmp_path):
    """f64 data: positions in float64 for ROIAlign and ROIPooling (the reference computes in the
    data's type); OpenVINO's CPU plugin runs f64 in float32, hence the tolerance."""
    o9 = ops(9)
    x = P("x", (2, 8, 9, 10), np.float64)
    box = P("box", (10, 4), np.float64)
    idx = P("idx", (10,), np.int32)
    rois = P("rois", (10, 5), np.float64)
    outs = [
        o9.roi_align(x, box, idx, 3, 2, 2, 0.7, "avg", "half_pixel"),
        ops().roi_pooling(x, rois, output_roi=[2, 3], spatial_scale=0.5, method="max"),
        ops().psroi_pooling(x, rois, 2, 2, 0.5, 1, 1, "average"),
        ops().deformable_psroi_pooling(x, rois, 2, 0.5, 2, "bilinear_deformable", 2, 2),
    ]
    feeds = {"x": normal(2, 8, 9, 10, dtype=np.float64), "box": BOXES.astype(np.float64), "idx": BATCH}
    feeds["rois"] = ROIS5.astype(np.float64)
    got = oc.check(tmp_path, [x, box, idx, rois], outs, feeds, rtol=1e-6, atol=1e-6)
    assert all(v.dtype == np.float64 for v in got.values())


def test_bf16():
    """bf16 data (held in float32 arrays) is computed as float32 data is and rounded once to
    bf16: within half a bf16 unit of the f32 result (checked against OpenVINO above)."""
    from irexec.dtypes import round_bf16

    data = round_bf16(normal(2, 8, 9, 10))
    box, rois = round_bf16(BOXES), round_bf16(ROIS5)
    cases = [
        ("ROIAlign", "opset9", [data, box, BATCH], dict(ALIGN, aligned_mode="half_pixel")),
        ("ROIPooling", "opset2", [data, rois], dict(pooled_h=2, pooled_w=2, spatial_scale=0.5, method="max")),
        ("PSROIPooling", "opset1", [data, rois], PSROI),
        ("DeformablePSROIPooling", "opset1", [data, rois], dict(PSROI, spatial_bins_x=2)),
    ]
    for type_name, version, inputs, attrs in cases:
        types = ["bf16", "bf16", "i32"][: len(inputs)]
        got = run_op(type_name, version, inputs, types=types, **attrs)[0]
        f32 = run_op(type_name, version, inputs, **attrs)[0].astype(np.float64)
        assert got.dtype == np.float32 and (round_bf16(got) == got).all()
        np.testing.assert_array_less(np.abs(got - f32), np.abs(f32) * 2.0**-8 + 1e-30)


def test_huge_coordinates():
    """Finite but huge coordinates read nothing (bins outside the map), without overflow."""
    data = normal(1, 8, 5, 6)
    rois = np.array([[0, -3e38, -3e38, 3e38, 3e38], [0, 1e30, 1e30, 2e30, 2e30]], np.float32)
    for out in all_ops(data, rois[:, 1:], np.zeros((2, 5), np.float32), rois, np.zeros(2, np.int32)):
        assert out.shape[0] == 2
    got = run_op("ROIPooling", "opset2", [data, rois], pooled_h=2, pooled_w=2, spatial_scale=1.0)[0]
    assert (got[1] == 0).all()


@pytest.mark.parametrize("scale", [1 / 16, 0.37, 0.6])
def test_random_rois_against_openvino(tmp_path, scale):
    """Many random ROIs (fractional, some across the edges) at several scales: the integer bin
    bounds of max ROIPooling and average PSROIPooling and the sample grids of ROIAlign land near
    pixel boundaries often enough to catch a rounding that differs from OpenVINO's."""
    o, o9 = ops(), ops(9)
    n, h, w = 200, 12, 14
    corner = R.uniform(-20, 16 / scale, (n, 2))
    boxes = np.concatenate([corner, corner + R.uniform(0, 12 / scale, (n, 2))], axis=1).astype(np.float32)
    batch = R.integers(0, 2, n).astype(np.int32)
    rois5 = np.concatenate([batch[:, None], boxes], axis=1).astype(np.float32)
    x = P("x", (2, 18, h, w))
    rois = P("rois", (n, 5))
    box = P("box", (n, 4))
    idx = P("idx", (n,), np.int32)
    outs = [
        o.roi_pooling(x, rois, output_roi=[7, 5], spatial_scale=scale, method="max"),
        o.psroi_pooling(x, rois, 2, 3, scale, 1, 1, "average"),
        o.deformable_psroi_pooling(x, rois, 2, scale, 3, "bilinear_deformable", 2, 2),
        o9.roi_align(x, box, idx, 3, 3, 0, scale, "avg", "asymmetric"),
        o9.roi_align(x, box, idx, 2, 3, 2, scale, "max", "half_pixel"),
    ]
    feeds = {"x": normal(2, 18, h, w), "rois": rois5, "box": boxes, "idx": batch}
    oc.check(tmp_path, [x, rois, box, idx], outs, feeds)
