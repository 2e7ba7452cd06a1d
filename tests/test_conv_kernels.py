"""The depthwise convolution kernel's unit-stride path (irexec/kernels/conv_loops.py: one flat
loop per tap over rows as wide as the padded input) gives the numpy path's bits, signed zeros
included: 7x7 and 3x3, dilations, asymmetric and zero pads (applied plane by plane in the
kernel), rectangular maps, one output column, mixed and stride-2 strides (the phase planes),
and 3x3 windows without dilation at strides 1 and 2 (the nine taps at once), over several
blocks of rows. Dense convolutions by tiles of columns, and those of few input and output
channels summed straight from the input's stride phases, against the numpy path and a
float64 sum."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from irexec import config
from irexec.ops.single import run_op

pytest.importorskip("numba")

R = np.random.default_rng(11)


@pytest.fixture
def kernels(monkeypatch):
    monkeypatch.setattr(config, "JIT", "always")


@pytest.fixture
def no_simd(monkeypatch):
    """float32 dense convolutions take `conv._simd` first; the tests of the paths it goes before
    (tiles of columns, `_direct`, the runs' columns: float64's, and float32's where `_simd` does
    not go) turn it off, so they keep testing those paths in float32 too."""
    from irexec.kernels import conv as kc

    monkeypatch.setattr(kc, "_simd", lambda *a: None)


CASES = [
    # (shape, kernel, strides, dilations, pads_begin, pads_end)
    ((1, 6, 20, 17), (7, 7), (1, 1), (1, 1), (3, 3), (3, 3)),
    ((2, 5, 9, 12), (3, 3), (1, 1), (2, 3), (2, 1), (0, 3)),
    ((1, 3, 8, 8), (3, 5), (1, 1), (1, 1), (0, 0), (0, 0)),
    ((1, 4, 6, 5), (3, 5), (1, 1), (1, 1), (1, 0), (1, 0)),  # one output column
    ((1, 4, 11, 10), (3, 3), (1, 2), (1, 1), (1, 1), (1, 1)),  # mixed strides: the row loop
    ((1, 4, 11, 10), (3, 3), (2, 1), (1, 1), (1, 1), (1, 1)),
    ((1, 4, 13, 13), (5, 5), (2, 2), (1, 1), (2, 2), (2, 2)),  # stride 2 over a padded scratch plane
    ((2, 3, 7, 9), (3, 3), (2, 2), (1, 1), (0, 0), (1, 1)),  # pads at the end only
    # 3x3 without dilation: the nine taps at once (_unit33, _stride2_33)
    ((1, 5, 12, 14), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1)),
    ((1, 3, 9, 8), (3, 3), (1, 1), (1, 1), (0, 0), (0, 0)),
    ((1, 2, 40, 300), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1)),  # several blocks of rows a plane
    ((1, 4, 30, 31), (3, 3), (2, 2), (1, 1), (1, 1), (1, 1)),
    ((2, 3, 8, 8), (3, 3), (2, 2), (1, 1), (1, 0), (0, 1)),
    # 16 planes and more: `depthwise_lanes`' transposed blocks, blocks across batch items, a part block
    ((2, 20, 9, 11), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1)),
    ((1, 33, 14, 14), (3, 3), (2, 2), (1, 1), (1, 1), (1, 1)),
    ((1, 16, 7, 7), (5, 5), (1, 1), (1, 2), (2, 4), (2, 4)),
    ((1, 21, 12, 12), (5, 5), (1, 1), (1, 1), (2, 2), (2, 2)),  # the rest by depthwise_simd
]


@pytest.mark.parametrize("dtype,lanes", [(np.float32, True), (np.float32, False), (np.float64, False)])
@pytest.mark.parametrize("case", CASES, ids=[str(c[:2]) for c in CASES])
def test_depthwise_kernel_is_the_numpy_paths_bits(kernels, monkeypatch, dtype, case, lanes):
    """The depthwise kernels (`depthwise_lanes`, 16 planes a vector, for float32 but over large
    planes at unit strides, which `lanes` False stands for: there `depthwise_simd`, 16 outputs in
    registers, for windows above 3x3; `depthwise2d` otherwise and for float64) give the numpy
    path's bits, signs of zero included, and a float64 sum's values."""
    from irexec.kernels import conv as kc

    shape, k, s, d, pb, pe = case
    monkeypatch.setattr(kc, "LANES_MAX_UNIT_OUT", 1 << 30 if lanes else -1)
    x = R.standard_normal(shape).astype(dtype)
    x[..., ::5, ::3] = -0.0  # zero products: the sums from 0 keep numpy's signs
    w = R.standard_normal((shape[1], 1, 1, *k)).astype(dtype)
    attrs = dict(strides=list(s), dilations=list(d), pads_begin=list(pb), pads_end=list(pe), auto_pad="explicit")
    from irexec.kernels import conv_loops, jit

    ran = []
    for name in ("depthwise_simd", "depthwise2d", "depthwise_lanes"):
        real = getattr(conv_loops, name)
        monkeypatch.setattr(conv_loops, name, lambda *a, real=real, name=name: ran.append(name) or real(*a))
    (got,) = run_op("GroupConvolution", "opset1", [x, w], **attrs)
    assert jit.ready("conv")
    unit = s == (1, 1)
    planes = shape[0] * shape[1]
    by_plane = "depthwise_simd" if dtype == np.float32 and unit and k[0] * k[1] > 9 else "depthwise2d"
    expect = {by_plane}
    if dtype == np.float32 and (lanes or not unit):  # other strides take the lanes whatever the planes
        expect = {name for name, runs in (("depthwise_lanes", planes >= 16), (by_plane, planes % 16)) if runs}
    assert set(ran) == expect
    config.JIT = "never"
    (want,) = run_op("GroupConvolution", "opset1", [x, w], **attrs)
    config.JIT = "always"
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    # and the float64 sums agree with a direct one (the numpy path is not wrong in the same way)
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (pb[0], pe[0]), (pb[1], pe[1])])
    ref = np.zeros(want.shape)
    for a in range(k[0]):
        for b in range(k[1]):
            view = xp[:, :, a * d[0] :, b * d[1] :][:, :, :: s[0], :: s[1]][:, :, : want.shape[2], : want.shape[3]]
            ref += view * w[:, 0, 0, a, b].astype(np.float64)[None, :, None, None]
    np.testing.assert_allclose(got, ref, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)


DENSE = [
    # (shape, filters, strides, dilations, pads_begin, pads_end): columns over 1 MB go by tiles
    ((2, 3, 64, 64), (24, 3, 7, 7), (2, 2), (1, 1), (3, 3), (3, 3)),  # a ResNet stem (above 16 filters)
    ((1, 8, 91, 77), (20, 8, 3, 3), (1, 1), (2, 1), (1, 0), (2, 1)),  # dilated, asymmetric pads
]


@pytest.mark.parametrize("tile", [None, 20000])  # the default tile, and tiles of a few rows with a short last one
@pytest.mark.parametrize("case", DENSE, ids=[str(c[:2]) for c in DENSE])
def test_dense_convolution_by_tiles_matches_the_numpy_path(kernels, no_simd, monkeypatch, tile, case):
    """A convolution whose columns outgrow the L2 cache runs by tiles of output rows (im2col
    per tile, one product per tile, on the kernel threads): the numpy path's result to float32
    rounding, and a float64 direct sum's."""
    from irexec.kernels import conv as kc

    if tile:
        monkeypatch.setattr(kc, "TILE_BYTES", tile)
    shape, wshape, s, d, pb, pe = case
    x = R.standard_normal(shape).astype(np.float32)
    w = R.standard_normal(wshape).astype(np.float32)
    attrs = dict(strides=list(s), dilations=list(d), pads_begin=list(pb), pads_end=list(pe), auto_pad="explicit")
    calls = []
    real = kc._tiled
    monkeypatch.setattr(kc, "_tiled", lambda *a: calls.append(1) or real(*a))
    (got,) = run_op("Convolution", "opset1", [x, w], **attrs)
    assert calls and real(x, w, _window(shape, wshape, s, d, pb, pe)) is not None  # the tiled path ran
    config.JIT = "never"
    (want,) = run_op("Convolution", "opset1", [x, w], **attrs)
    config.JIT = "always"
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (pb[0], pe[0]), (pb[1], pe[1])])
    ref = np.zeros(want.shape)
    for a in range(wshape[2]):
        for b in range(wshape[3]):
            view = xp[:, :, a * d[0] :, b * d[1] :][:, :, :: s[0], :: s[1]][:, :, : want.shape[2], : want.shape[3]]
            ref += np.einsum("nchw,oc->nohw", view, w[:, :, a, b].astype(np.float64))
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def _window(shape, wshape, s, d, pb, pe):
    from irexec.geometry import Window

    out = tuple(
        (n + b + e - dl * (k - 1) - 1) // st + 1 for n, k, st, dl, b, e in zip(shape[2:], wshape[2:], s, d, pb, pe)
    )
    return Window(tuple(wshape[2:]), tuple(s), tuple(d), tuple(zip(pb, pe)), out)


@pytest.mark.parametrize(
    "groups,cin,cout,k,stride,pads",
    [
        (4, 32, 32, 16, 1, (8, 7)),  # wav2vec2's positional convolution, scaled down
        (1, 6, 5, 5, 2, (2, 2)),
        (6, 6, 6, 7, 1, (3, 3)),  # depthwise
        (3, 6, 9, 3, 3, (0, 2)),
    ],
)
def test_one_dimensional_convolutions_go_as_height_one_maps(kernels, groups, cin, cout, k, stride, pads):
    """1-D (grouped, depthwise) convolutions run as 2-D convolutions of height-1 maps (the 2-D
    kernels and tiles): a float64 direct sum's values."""
    x = R.standard_normal((2, cin, 41)).astype(np.float32)
    w = R.standard_normal((groups, cout // groups, cin // groups, k)).astype(np.float32)
    attrs = dict(strides=[stride], dilations=[1], pads_begin=[pads[0]], pads_end=[pads[1]], auto_pad="explicit")
    if groups == 1:
        (got,) = run_op("Convolution", "opset1", [x, w[0]], **attrs)
    else:
        (got,) = run_op("GroupConvolution", "opset1", [x, w], **attrs)
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), pads])
    out = (xp.shape[2] - k) // stride + 1
    ref = np.zeros((2, cout, out))
    og, ig = cout // groups, cin // groups
    for g in range(groups):
        for t in range(k):
            view = xp[:, g * ig : (g + 1) * ig, t : t + (out - 1) * stride + 1 : stride]
            ref[:, g * og : (g + 1) * og] += np.einsum("ncl,oc->nol", view, w[g, :, :, t].astype(np.float64))
    assert got.shape == ref.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def _numpy_path_agrees(op: str, inputs: list, attrs: dict, got: np.ndarray, dtype) -> tuple[np.ndarray, float]:
    """(the op by the numpy path, the tolerance): its shape, type and NaNs are `got`'s (which
    has some NaN), its values `got`'s to the data type's rounding."""
    config.JIT = "never"
    try:
        (want,) = run_op(op, "opset1", inputs, **attrs)
    finally:
        config.JIT = "always"
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert np.isnan(got).any()
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    return want, tol


DIRECT = [
    # (shape, filters, strides, dilations, pads_begin, pads_end): few input and output channels
    ((2, 3, 40, 37), (8, 3, 7, 7), (2, 2), (1, 1), (3, 3), (3, 3)),  # a ResNet stem: 4 + 3 taps a row
    ((1, 3, 33, 30), (6, 3, 3, 3), (2, 2), (1, 1), (1, 1), (1, 1)),  # 3 taps; 6 channels, a block of 4 padded
    ((1, 3, 12, 70), (5, 3, 3, 3), (1, 1), (1, 1), (0, 0), (0, 0)),  # unit strides, no pads, 5 channels
    ((1, 2, 21, 19), (7, 2, 5, 6), (3, 2), (2, 1), (2, 0), (1, 3)),  # dilated, mixed strides, asymmetric pads
    ((1, 1, 60, 300), (4, 1, 2, 5), (1, 1), (1, 1), (1, 2), (0, 2)),  # 4 + 1 taps, several row blocks
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", DIRECT, ids=[str(c[:2]) for c in DIRECT])
def test_dense_convolution_of_few_channels_sums_its_taps_directly(kernels, no_simd, monkeypatch, dtype, case):
    """A dense convolution of few input and output channels (an image stem) sums its taps
    straight from the input's stride phases (`conv_loops.dense_phased`): the numpy path's
    values to the data type's rounding, a float64 sum's, the right shape and type, NaN
    where an input is NaN (a padded cell never is), and the same bits with its tasks on two
    threads."""
    from irexec.kernels import conv as kc

    shape, wshape, s, d, pb, pe = case
    x = R.standard_normal(shape).astype(dtype)
    x[0, 0, 1, 1] = np.nan
    w = R.standard_normal(wshape).astype(dtype)
    attrs = dict(strides=list(s), dilations=list(d), pads_begin=list(pb), pads_end=list(pe), auto_pad="explicit")
    calls = []
    real = kc._direct
    monkeypatch.setattr(kc, "_direct", lambda *a: calls.append(1) or real(*a))
    (got,) = run_op("Convolution", "opset1", [x, w], **attrs)
    assert calls and real(x, w, _window(shape, wshape, s, d, pb, pe)) is not None  # the direct path ran
    monkeypatch.setattr(config, "THREAD_MIN_BYTES", 1)  # its tasks on two threads: the same bits
    monkeypatch.setattr(config, "NUM_THREADS", 2)
    (split,) = run_op("Convolution", "opset1", [x, w], **attrs)
    np.testing.assert_array_equal(split, got)
    want, tol = _numpy_path_agrees("Convolution", [x, w], attrs, got, dtype)
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (pb[0], pe[0]), (pb[1], pe[1])])
    ref = np.zeros(want.shape)
    for a in range(wshape[2]):
        for b in range(wshape[3]):
            view = xp[:, :, a * d[0] :, b * d[1] :][:, :, :: s[0], :: s[1]][:, :, : want.shape[2], : want.shape[3]]
            ref += np.einsum("nchw,oc->nohw", view, w[:, :, a, b].astype(np.float64))
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)


GROUPED_DIRECT = [
    # (shape, filters (G*Cout/G, C/G, kh, kw), groups, strides, pads_begin, pads_end)
    ((1, 32, 1, 99), (32, 8, 1, 16), 4, (1, 1), (0, 8), (0, 8)),  # wav2vec2's positional convolution
    ((2, 6, 17, 15), (8, 3, 3, 3), 2, (2, 1), (1, 0), (1, 2)),  # 2-D, two batch items
    ((1, 12, 9, 10), (12, 2, 3, 3), 6, (1, 1), (1, 1), (1, 1)),  # six groups of 2 in, 2 out
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", GROUPED_DIRECT, ids=[str(c[:3]) for c in GROUPED_DIRECT])
def test_grouped_convolution_of_few_channels_a_group_sums_its_taps_directly(kernels, no_simd, monkeypatch, dtype, case):
    """A grouped convolution whose groups are each a convolution of few channels runs group by
    group without columns (`conv._direct_groups`): the numpy path's values to the data type's
    rounding and a float64 sum's, NaN where an input is NaN."""
    from irexec.kernels import conv as kc

    shape, wshape, groups, s, pb, pe = case
    x = R.standard_normal(shape).astype(dtype)
    x[0, -1, 0, 3] = np.nan
    w = R.standard_normal(wshape).astype(dtype)
    wg = w.reshape(groups, wshape[0] // groups, *wshape[1:])
    attrs = dict(strides=list(s), dilations=[1, 1], pads_begin=list(pb), pads_end=list(pe), auto_pad="explicit")
    calls = []
    real = kc._direct_groups
    monkeypatch.setattr(kc, "_direct_groups", lambda *a: calls.append(real(*a) is not None) or real(*a))
    (got,) = run_op("GroupConvolution", "opset1", [x, wg], **attrs)
    assert calls == [True]  # the grouped direct path ran
    want, tol = _numpy_path_agrees("GroupConvolution", [x, wg], attrs, got, dtype)
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (pb[0], pe[0]), (pb[1], pe[1])])
    ref = np.zeros(want.shape)
    og, ig = wshape[0] // groups, shape[1] // groups
    for g in range(groups):
        for a in range(wshape[2]):
            for b in range(wshape[3]):
                view = xp[:, g * ig : (g + 1) * ig, a:, b:][:, :, :: s[0], :: s[1]][
                    :, :, : want.shape[2], : want.shape[3]
                ]
                ref[:, g * og : (g + 1) * og] += np.einsum("nchw,oc->nohw", view, w[g * og : (g + 1) * og, :, a, b])
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)


FLAT_CASES = [
    # (shape, out channels, groups, kernel, dilations, pads_begin, pads_end)
    ((1, 20, 12, 11), 12, 1, (3, 3), (1, 1), (1, 1), (1, 1)),  # ResNet's 3x3 at a small size
    ((2, 18, 9, 13), 10, 1, (3, 5), (2, 1), (2, 0), (1, 3)),  # dilations, asymmetric pads
    ((1, 20, 7, 7), 16, 1, (3, 3), (1, 1), (0, 0), (0, 0)),  # no pads
    ((1, 16, 10, 8), 40, 4, (3, 3), (1, 1), (1, 1), (1, 1)),  # groups (of 10 outputs): one product per group
    ((1, 24, 6, 30), 9, 1, (1, 7), (1, 1), (0, 3), (0, 3)),  # a row kernel
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", FLAT_CASES, ids=[str(c[:3]) for c in FLAT_CASES])
def test_unit_stride_convolution_columns_as_runs_of_the_padded_plane(kernels, no_simd, monkeypatch, dtype, case):
    """A unit-stride convolution's columns are whole runs of the padded plane, one copy per tap,
    with output rows as wide as the padded input's; the product's extra columns are cropped
    away: the numpy path's bits (it builds the same columns), and a float64 direct sum's."""
    from irexec.kernels import conv as kc

    shape, cout, groups, k, d, pb, pe = case
    cin = shape[1]
    x = R.standard_normal(shape).astype(dtype)
    w = R.standard_normal((cout, cin // groups, *k)).astype(dtype)
    attrs = dict(strides=[1, 1], dilations=list(d), pads_begin=list(pb), pads_end=list(pe), auto_pad="explicit")
    op, weights = (
        ("Convolution", w) if groups == 1 else ("GroupConvolution", w.reshape(groups, cout // groups, *w.shape[1:]))
    )
    calls = []
    real = kc._flat_columns
    monkeypatch.setattr(kc, "_flat_columns", lambda *a: calls.append(real(*a) is not None) or real(*a))
    (got,) = run_op(op, "opset1", [x, weights], **attrs)
    assert calls == [True]  # the runs' columns were the ones used
    config.JIT = "never"
    (want,) = run_op(op, "opset1", [x, weights], **attrs)
    config.JIT = "always"
    assert got.shape == want.shape and got.dtype == want.dtype == dtype
    np.testing.assert_array_equal(got, want)  # the same columns in numpy: the same product
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (pb[0], pe[0]), (pb[1], pe[1])])
    ref = np.zeros(want.shape)
    og, ig = cout // groups, cin // groups
    for a in range(k[0]):
        for b in range(k[1]):
            view = xp[:, :, a * d[0] :, b * d[1] :][:, :, : want.shape[2], : want.shape[3]]
            for gi in range(groups):
                ref[:, gi * og : (gi + 1) * og] += np.einsum(
                    "nchw,oc->nohw",
                    view[:, gi * ig : (gi + 1) * ig],
                    w[gi * og : (gi + 1) * og, :, a, b].astype(np.float64),
                )
    np.testing.assert_allclose(
        got, ref, rtol=1e-4 if dtype == np.float32 else 1e-11, atol=1e-4 if dtype == np.float32 else 1e-11
    )


SIMD_CASES = [
    # (shape, filters, groups, strides, dilations, pads_begin, pads_end)
    ((1, 8, 56, 56), (8, 8, 3, 3), 1, (1, 1), (1, 1), (1, 1), (1, 1)),  # ResNet-18's first stage
    ((2, 16, 14, 14), (24, 16, 3, 3), 1, (2, 2), (1, 1), (1, 1), (1, 1)),  # a downsampling 3x3, two items
    ((1, 64, 7, 7), (64, 64, 3, 3), 1, (1, 1), (1, 1), (1, 1), (1, 1)),  # 576 terms a sum, rows of 9
    ((1, 3, 40, 37), (8, 3, 7, 7), 1, (2, 2), (1, 1), (3, 3), (3, 3)),  # a stem
    ((1, 5, 19, 23), (11, 5, 3, 5), 1, (1, 2), (2, 3), (2, 0), (1, 3)),  # 11 channels: a block of 3
    ((1, 7, 9, 10), (9, 7, 5, 5), 1, (4, 4), (1, 1), (0, 0), (0, 0)),  # 16 phase planes
    ((1, 12, 9, 10), (12, 4, 3, 3), 3, (1, 1), (1, 1), (1, 1), (1, 1)),  # three groups in one call
    ((2, 40, 11, 9), (60, 2, 3, 3), 20, (2, 2), (1, 1), (1, 1), (1, 1)),  # 20 groups of 3 filters, 2 items
    ((1, 48, 10, 10), (96, 8, 3, 3), 6, (1, 1), (1, 1), (1, 1), (1, 1)),  # groups of two blocks of 8
    ((1, 2, 4, 4), (3, 2, 3, 3), 1, (2, 2), (1, 1), (3, 3), (3, 3)),  # windows of padding only
]


@pytest.mark.parametrize("case", SIMD_CASES, ids=[str(c[:3]) for c in SIMD_CASES])
def test_float32_convolution_accumulates_in_registers(kernels, monkeypatch, case):
    """A float32 2-D convolution runs `conv._simd` (`conv_loops.dense_simd`: 8 output channels
    by 32 positions in registers, every tap a contiguous run of the padded phase planes): a
    float64 sum's values within float32's error bound for sums of that many terms, the numpy
    path's to the same bound, NaN exactly where a window holds an input NaN (never from the
    rows past the output's width that the tiles compute and drop), and the path asserted."""
    from irexec.kernels import conv as kc

    shape, wshape, groups, s, d, pb, pe = case
    x = R.standard_normal(shape).astype(np.float32)
    x[0, -1, 2, 4 % shape[3]] = np.nan
    x[0, 0, 4 % shape[2], 0] = np.nan  # a row's first column: the dropped columns of the rows above wrap onto it
    w = R.standard_normal(wshape).astype(np.float32)
    attrs = dict(strides=list(s), dilations=list(d), pads_begin=list(pb), pads_end=list(pe), auto_pad="explicit")
    op, weights = (
        ("Convolution", w) if groups == 1 else ("GroupConvolution", w.reshape(groups, wshape[0] // groups, *wshape[1:]))
    )
    ran = []
    real = kc._simd
    monkeypatch.setattr(kc, "_simd", lambda *a: ran.append(real(*a) is not None) or real(*a))
    (got,) = run_op(op, "opset1", [x, weights], **attrs)
    assert ran == [True]  # the register tiles ran, every group in one call
    assert got.dtype == np.float32
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (pb[0], pe[0]), (pb[1], pe[1])])
    og, ig = wshape[0] // groups, shape[1] // groups
    ref = np.zeros((shape[0], wshape[0], *got.shape[2:]))
    size = np.zeros_like(ref)  # the sum of |terms|: float32's bound is (terms) 2^-24 of it
    for g in range(groups):
        for a in range(wshape[2]):
            for b in range(wshape[3]):
                view = xp[:, g * ig : (g + 1) * ig, a * d[0] :, b * d[1] :][:, :, :: s[0], :: s[1]]
                view = view[:, :, : got.shape[2], : got.shape[3]]
                wt = w[g * og : (g + 1) * og, :, a, b].astype(np.float64)
                ref[:, g * og : (g + 1) * og] += np.einsum("nchw,oc->nohw", view, wt)
                size[:, g * og : (g + 1) * og] += np.einsum("nchw,oc->nohw", np.abs(view), np.abs(wt))
    assert got.shape == ref.shape
    nan = np.isnan(ref)
    assert nan.any() and not nan.all()
    np.testing.assert_array_equal(np.isnan(got), nan)
    terms = ig * wshape[2] * wshape[3]
    bound = terms * 2.0**-24 * size[~nan] + 2.0**-24 * np.abs(ref[~nan])  # the sums, then the rounding
    assert np.all(np.abs(got[~nan] - ref[~nan]) <= bound)
    config.JIT = "never"
    (want,) = run_op(op, "opset1", [x, weights], **attrs)
    config.JIT = "always"
    np.testing.assert_array_equal(np.isnan(want), nan)
    assert np.all(np.abs(got[~nan] - want[~nan]) <= 2 * bound)  # each within the bound of the exact sum
    # AVX2's tiles (`dense_narrow`: 4 channels by 16 positions) sum in the same order: the same bits
    from irexec.kernels import jit

    monkeypatch.setattr(jit, "wide_vectors", lambda: False)
    ran.clear()
    (narrow,) = run_op(op, "opset1", [x, weights], **attrs)
    assert ran == [True]
    np.testing.assert_array_equal(narrow.view(np.int32), got.view(np.int32))


def _two_threads(monkeypatch, rule: str) -> list[int]:
    """Two kernel threads from the smallest work on (the conv family's `rule` of multiply-adds
    included); the thread count of each `jit.parallel_for` call from now on."""
    from irexec.kernels import conv as kc
    from irexec.kernels import jit

    used = []
    real = jit.parallel_for
    monkeypatch.setattr(jit, "parallel_for", lambda k, n, t, *a: used.append(t) or real(k, n, t, *a))
    monkeypatch.setattr(kc, rule, 1)
    monkeypatch.setattr(jit.config, "THREAD_MIN_BYTES", 1 << 10)
    monkeypatch.setattr(jit.config, "NUM_THREADS", 2)
    return used


def test_register_tiles_on_two_threads_give_one_threads_bits(kernels, monkeypatch):
    """From SIMD_THREAD_FMAS multiply-adds `conv._simd` puts its tiles (8 output channels of a
    batch item a task; 4 with AVX2's narrow tiles) on two threads: each output the same sum in
    the same order, so the same bits as on one thread, for two batch items, 22 output channels
    (a part block either way) and stride 2."""
    from irexec.kernels import conv as kc
    from irexec.kernels import jit

    x = R.standard_normal((2, 5, 19, 23)).astype(np.float32)
    w = R.standard_normal((22, 5, 3, 3)).astype(np.float32)
    win = _window(x.shape, w.shape, (2, 1), (1, 1), (1, 0), (1, 2))
    one = kc._simd(x, w, win)
    used = _two_threads(monkeypatch, "SIMD_THREAD_FMAS")
    two = kc._simd(x, w, win)
    monkeypatch.setattr(jit, "wide_vectors", lambda: False)
    narrow = kc._simd(x, w, win)
    assert used == [2, 2]
    np.testing.assert_array_equal(one.view(np.int32), two.view(np.int32))
    np.testing.assert_array_equal(one.view(np.int32), narrow.view(np.int32))


@pytest.mark.parametrize("wide", [True, False])
def test_narrow_tiles_leave_long_sums_over_larger_maps_to_blas(kernels, monkeypatch, wide):
    """Where vectors hold 8 floats `conv._simd` takes sums of at most NARROW_MAX_TERMS terms, and
    longer ones only over small maps (NARROW_SMALL_FMAS multiply-adds); the columns path
    computes the others. With 512-bit vectors the tiles take every size."""
    from irexec.kernels import conv as kc
    from irexec.kernels import jit

    monkeypatch.setattr(jit, "wide_vectors", lambda: wide)
    long_large = (R.standard_normal((1, 48, 28, 28)), R.standard_normal((48, 48, 3, 3)))  # 432 terms, 16 M
    long_small = (R.standard_normal((1, 64, 7, 7)), R.standard_normal((64, 64, 3, 3)))  # 576 terms, 1.8 M
    short_large = (R.standard_normal((1, 32, 40, 40)), R.standard_normal((40, 32, 3, 3)))  # 288 terms, 18 M
    for (x, w), long, taken in ((long_large, True, wide), (long_small, True, True), (short_large, False, True)):
        x, w = x.astype(np.float32), w.astype(np.float32)
        win = _window(x.shape, w.shape, (1, 1), (1, 1), (1, 1), (1, 1))
        assert (w[0].size > kc.NARROW_MAX_TERMS) == long
        assert (kc._simd(x, w, win) is not None) == taken
        (got,) = run_op(
            "Convolution", "opset1", [x, w], strides=[1, 1], dilations=[1, 1], pads_begin=[1, 1], pads_end=[1, 1]
        )
        xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (1, 1), (1, 1)])
        h, wd = x.shape[2:]
        ref = sum(
            np.einsum("oc,nchw->nohw", w[:, :, a, b].astype(np.float64), xp[:, :, a : a + h, b : b + wd])
            for a in range(3)
            for b in range(3)
        )
        size = sum(
            np.einsum(
                "oc,nchw->nohw", np.abs(w[:, :, a, b]).astype(np.float64), np.abs(xp[:, :, a : a + h, b : b + wd])
            )
            for a in range(3)
            for b in range(3)
        )
        assert np.all(np.abs(got - ref) <= w[0].size * 2.0**-24 * size + 2.0**-24 * np.abs(ref))


@pytest.mark.parametrize("k,s", [((2, 2), (2, 2)), ((1, 1), (2, 2)), ((4, 4), (4, 4)), ((1, 1), (1, 1))])
def test_windows_that_do_not_overlap_keep_the_columns(kernels, k, s):
    """Windows no larger than their strides (patches, 1x1) copy each input once into columns:
    `conv._simd` leaves them to the product (the register tiles measured slower there)."""
    from irexec.kernels import conv as kc

    x = R.standard_normal((1, 4, 8, 8)).astype(np.float32)
    w = R.standard_normal((5, 4, *k)).astype(np.float32)
    assert kc._simd(x, w, _window(x.shape, w.shape, s, (1, 1), (0, 0), (0, 0))) is None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "shape,k",
    [
        ((1, 3, 32, 32), (16, 16)),  # ViT's patch embedding
        ((2, 3, 30, 37), (4, 8)),  # two items, a partial patch cropped at the bottom and right
        ((1, 5, 18, 27), (2, 9)),
    ],
)
def test_patches_tiling_the_input_are_rows_of_their_pixels(kernels, monkeypatch, dtype, shape, k):
    """Windows that tile the input (strides equal to the kernel, no pads) run as the patches'
    rows times the filters (`conv._patches`), with the kernels and in numpy: the same bits both
    ways, the float64 oracle's values within the data type's rounding, NaN where a patch has one.
    Narrower patches keep the columns path."""
    from irexec.kernels import conv as kc

    calls = []
    real = kc._patches
    monkeypatch.setattr(kc, "_patches", lambda *a: calls.append(1) or real(*a))
    x = R.standard_normal(shape).astype(dtype)
    x[0, 1, 2, 3] = np.nan
    w = R.standard_normal((6, shape[1], *k)).astype(dtype)
    attrs = {"strides": list(k), "dilations": [1, 1], "pads_begin": [0, 0], "pads_end": [0, 0]}
    (got,) = run_op("Convolution", "opset1", [x, w], **attrs)
    want, _ = _numpy_path_agrees("Convolution", [x, w], attrs, got, dtype)
    np.testing.assert_array_equal(got, want)
    assert len(calls) == 2
    oh, ow = shape[2] // k[0], shape[3] // k[1]
    crop = x[:, :, : oh * k[0], : ow * k[1]].astype(np.float64).reshape(shape[0], shape[1], oh, k[0], ow, k[1])
    oracle = np.einsum("ncxayb,ocab->noxy", crop, w.astype(np.float64))
    # a dot product of K terms in the data type: within K eps of the sum of its terms' sizes
    bound = w[0].size * np.finfo(dtype).eps * np.einsum("ncxayb,ocab->noxy", np.abs(crop), np.abs(w))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(oracle))
    finite = ~np.isnan(oracle)
    assert np.isnan(oracle).any() and np.all(np.abs(got - oracle)[finite] <= bound[finite])
    assert (
        kc._patches(x, w[..., :, :4], _window(x.shape, (6, shape[1], k[0], 4), (k[0], 4), (1, 1), (0, 0), (0, 0)))
        is None
    )


POINT_CASES = [
    # (x shape, output channels)
    ((1, 16, 12, 12), 24),  # 144 positions: four tiles and a short one of 16
    ((2, 5, 7, 7), 13),  # two items, a tile shorter than 32 only, a block of 5 channels
    ((1, 3, 40, 40), 8),  # several tasks of 256 positions
    ((1, 7, 33), 9),  # one spatial dim
    ((1, 4, 2, 3, 5), 3),  # three
]


@pytest.mark.parametrize("wide", [True, False])
def test_register_tiles_need_wide_vectors(kernels, monkeypatch, wide):
    """Where vectors hold 8 floats (AVX2: `jit.wide_vectors` False) the 16-by-16 register tiles
    would spill: a loaded conv family runs dense float32 convolutions on tiles of 4 channels by
    16 positions (`dense_narrow`), leaves pointwise ones to BLAS's products (the same values to
    float32 rounding), and depthwise ones over 56x56 planes go plane by plane instead of 16 a
    vector."""
    from irexec.kernels import conv_loops, jit

    monkeypatch.setattr(jit, "wide_vectors", lambda: wide)
    ran = []
    for name in ("dense_simd", "dense_narrow", "pointwise_simd", "depthwise_lanes"):
        real = getattr(conv_loops, name)
        monkeypatch.setattr(conv_loops, name, lambda *a, real=real, name=name: ran.append(name) or real(*a))
    x = R.standard_normal((1, 16, 56, 56)).astype(np.float32)
    w3 = R.standard_normal((24, 16, 3, 3)).astype(np.float32)
    w1 = R.standard_normal((24, 16, 1, 1)).astype(np.float32)
    wd = R.standard_normal((16, 1, 1, 3, 3)).astype(np.float32)
    pads = dict(strides=[1, 1], dilations=[1, 1], pads_begin=[1, 1], pads_end=[1, 1], auto_pad="explicit")
    none = dict(strides=[1, 1], dilations=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], auto_pad="explicit")
    run_op("Convolution", "opset1", [x, w1], **none)  # loads the family
    assert jit.ready("conv")
    ran.clear()
    (dense,) = run_op("Convolution", "opset1", [x, w3], **pads)
    (point,) = run_op("Convolution", "opset1", [x, w1], **none)
    (depth,) = run_op("GroupConvolution", "opset1", [x, wd], **pads)
    assert ran == (["dense_simd", "pointwise_simd", "depthwise_lanes"] if wide else ["dense_narrow"])
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(
        point, np.einsum("oc,nchw->nohw", w1[:, :, 0, 0].astype(np.float64), x64), rtol=1e-4, atol=1e-4
    )
    xp = np.pad(x64, [(0, 0), (0, 0), (1, 1), (1, 1)])
    ref = sum(
        np.einsum("oc,nchw->nohw", w3[:, :, a, b].astype(np.float64), xp[:, :, a : a + 56, b : b + 56])
        for a in range(3)
        for b in range(3)
    )
    np.testing.assert_allclose(dense, ref, rtol=1e-4, atol=1e-4)
    ref_d = sum(
        wd[:, 0, 0, a, b, None, None].astype(np.float64) * xp[0, :, a : a + 56, b : b + 56]
        for a in range(3)
        for b in range(3)
    )
    np.testing.assert_allclose(depth[0], ref_d, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", POINT_CASES, ids=[str(c) for c in POINT_CASES])
def test_pointwise_convolution_accumulates_in_registers(kernels, monkeypatch, case):
    """A float32 1x1 convolution of few input channels runs `conv_loops.pointwise_simd` (8
    output channels by 32 positions in registers; a short last tile from a zero-padded copy):
    a float64 sum's values within float32's bound for sums of that many terms, NaN and
    infinities where the inputs put them, the path asserted; float64 keeps the product, and so
    do maps of fewer than POINT_MIN_POSITIONS positions (unless lowered, as here for the tails)."""
    from irexec.kernels import conv as kc
    from irexec.kernels import conv_loops

    shape, c_out = case
    x = R.standard_normal(shape).astype(np.float32)
    x.reshape(-1)[[3, -1]] = np.nan, np.inf  # the first tile, and the last position's
    w = R.standard_normal((c_out, shape[1]) + (1,) * (len(shape) - 2)).astype(np.float32)
    w[0, 0] = 0.0  # NaN times zero is NaN; inf times zero too
    spatial = len(shape) - 2
    attrs = dict(strides=[1] * spatial, dilations=[1] * spatial, pads_begin=[0] * spatial, pads_end=[0] * spatial)
    ran = []
    real = conv_loops.pointwise_simd
    monkeypatch.setattr(conv_loops, "pointwise_simd", lambda *a: ran.append(1) or real(*a))
    (blas,) = run_op("Convolution", "opset1", [x, w], **attrs)
    assert bool(ran) == (x[0, 0].size >= kc.POINT_MIN_POSITIONS and x.size * c_out >= kc.POINT_MIN_FMAS)
    ran.clear()
    monkeypatch.setattr(kc, "POINT_MIN_POSITIONS", 1)
    monkeypatch.setattr(kc, "POINT_MIN_FMAS", 1)
    (got,) = run_op("Convolution", "opset1", [x, w], **attrs)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(blas))
    assert ran and got.dtype == np.float32 and got.shape == (shape[0], c_out, *shape[2:])
    x64, w64 = x.astype(np.float64), w.reshape(c_out, -1).astype(np.float64)
    with np.errstate(invalid="ignore"):
        ref = np.einsum("nc...,oc->no...", x64, w64)
    size = np.einsum("nc...,oc->no...", np.abs(np.nan_to_num(x64, posinf=0.0)), np.abs(w64))
    nan, inf = np.isnan(ref), np.isinf(ref)
    assert nan.any() and inf.any()
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[inf], ref[inf])
    ok = ~(nan | inf)
    bound = shape[1] * 2.0**-24 * size[ok] + 2.0**-24 * np.abs(ref[ok])
    assert np.all(np.abs(got[ok] - ref[ok]) <= bound)
    ran.clear()
    (wide,) = run_op("Convolution", "opset1", [x.astype(np.float64), w.astype(np.float64)], **attrs)
    assert not ran and wide.dtype == np.float64


@pytest.mark.parametrize("bounds", [None, (0.0, 6.0), (-1.5, 0.25)])
def test_pointwise_activation_as_it_stores_is_the_separate_passes_bits(kernels, monkeypatch, bounds):
    """`conv.pointwise_then` (ReLU or a clip as the kernel stores) gives the bits of the
    convolution followed by np.maximum(., 0) or np.clip, NaN and infinities included, on one
    thread and on two; more than POINT_MAX_CIN input channels are left to the caller."""
    from irexec.kernels import conv as kc

    monkeypatch.setattr(kc, "POINT_MIN_POSITIONS", 17 * 19)
    monkeypatch.setattr(kc, "POINT_MIN_FMAS", 1)
    x = (R.standard_normal((2, 12, 17, 19)) * 3).astype(np.float32)
    x[0, 2, 3, 4], x[1, 5, 16, 18] = np.nan, -np.inf
    w = R.standard_normal((21, 12, 1, 1)).astype(np.float32)
    win = _window(x.shape, w.shape, (1, 1), (1, 1), (0, 0), (0, 0))
    lo_hi = None if bounds is None else tuple(np.float32(b) for b in bounds)
    y = kc.convolution(x, w, win)
    want = np.maximum(y, np.float32(0)) if bounds is None else np.clip(y, *lo_hi)
    assert np.isnan(want).any() and np.isinf(y).any()
    got = kc.pointwise_then(x, w, win, lo_hi)
    np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))
    used = _two_threads(monkeypatch, "POINT_THREAD_FMAS")
    two = kc.pointwise_then(x, w, win, lo_hi)
    assert used == [2]
    np.testing.assert_array_equal(two.view(np.int32), want.view(np.int32))
    monkeypatch.setattr(kc, "POINT_MAX_CIN", 11)
    assert kc.pointwise_then(x, w, win, lo_hi) is None
    monkeypatch.setattr(kc, "POINT_MAX_CIN", 12)
    monkeypatch.setattr(kc, "POINT_MIN_POSITIONS", 17 * 19 + 1)
    assert kc.pointwise_then(x, w, win, lo_hi) is None


STRIDED_1X1 = [
    # (shape, output channels, strides): 1x1 windows at strides > 1 without pads
    ((1, 8, 56, 56), 16, (2, 2)),  # ResNet's projection shortcut, the pointwise kernel's size
    ((2, 5, 13, 11), 7, (2, 2)),  # odd sizes: the last row and column are read
    ((1, 6, 9, 10), 4, (3, 1)),
    ((1, 4, 7, 8, 9), 5, (2, 3, 2)),  # 3-D
    ((2, 3, 17), 6, (4,)),  # 1-D
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", STRIDED_1X1, ids=[str(c) for c in STRIDED_1X1])
def test_strided_pointwise_convolution_reads_its_positions_once(kernels, monkeypatch, dtype, case):
    """A 1x1 window at strides > 1 without pads is the pointwise convolution of the positions it
    reads (`conv._subsampled`), without columns: a float64 sum's values within the type's bound,
    NaN where the inputs put one; fused with ReLU (`pointwise_then`) the separate passes' bits."""
    from irexec.kernels import conv as kc

    shape, c_out, strides = case
    x = R.standard_normal(shape).astype(dtype)
    x.reshape(-1)[0] = np.nan
    w = R.standard_normal((c_out, shape[1]) + (1,) * (len(shape) - 2)).astype(dtype)
    spatial = len(shape) - 2
    attrs = dict(strides=list(strides), dilations=[1] * spatial, pads_begin=[0] * spatial, pads_end=[0] * spatial)
    columns = []
    for name in ("_kernel_columns", "_numpy_columns", "_flat_columns", "_numpy_flat_columns"):
        monkeypatch.setattr(kc, name, lambda *a, name=name: columns.append(name))
    (got,) = run_op("Convolution", "opset1", [x, w], **attrs)
    assert not columns and got.dtype == dtype
    sub = x[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in strides)].astype(np.float64)
    w64 = w.reshape(c_out, -1).astype(np.float64)
    ref = np.einsum("nc...,oc->no...", sub, w64)
    size = np.einsum("nc...,oc->no...", np.abs(np.nan_to_num(sub)), np.abs(w64))
    assert got.shape == ref.shape
    nan = np.isnan(ref)
    assert nan.any()
    np.testing.assert_array_equal(np.isnan(got), nan)
    eps = float(np.finfo(dtype).eps)
    bound = shape[1] * eps * size[~nan] + eps * np.abs(ref[~nan])
    assert np.all(np.abs(got[~nan].astype(np.float64) - ref[~nan]) <= bound)
    if dtype == np.float32 and spatial == 2:
        monkeypatch.setattr(kc, "POINT_MIN_POSITIONS", 1)
        monkeypatch.setattr(kc, "POINT_MIN_FMAS", 1)
        win = _window(shape, w.shape, strides, (1, 1), (0, 0), (0, 0))
        y = kc.convolution(x, w, win)
        fused = kc.pointwise_then(x, w, win, None)
        np.testing.assert_array_equal(fused.view(np.int32), np.maximum(y, np.float32(0)).view(np.int32))


def test_warm_calls_the_kernels_with_a_models_read_only_filters(kernels, monkeypatch, tmp_path):
    """A model's constant filters reach the conv kernels read-only (the plan's constants are),
    a type numba compiles apart from a writable array's: the family's warm() (what `irexec
    warmup` compiles) calls every kernel with the writability a model's run gives its
    arguments, so that run loads them from the cache instead of compiling. Recorded without
    compiling: the kernels replaced by recorders during warm(), then the model's dense,
    pointwise and depthwise convolutions (16 planes a vector, and plane by plane)."""
    import irexec
    from irexec.kernels import conv as kc
    from irexec.kernels import conv_loops as k
    from tests.support.irbuild import Net
    from tests.support.recorders import writability

    names = ("dense_simd", "dense_narrow", "depthwise_lanes", "depthwise2d", "depthwise_simd", "pointwise_simd")
    names += ("crop_rows", "deal_flat")
    seen, phase = writability(monkeypatch, k, names)
    k.warm()
    phase[0] = "model"
    monkeypatch.setattr(kc, "POINT_MIN_POSITIONS", 1)
    monkeypatch.setattr(kc, "POINT_MIN_FMAS", 1)
    n = Net("filters")
    x = n.param("x", "f32", (1, 20, 12, 12))
    pads = {"strides": "1,1", "dilations": "1,1", "pads_begin": "1,1", "pads_end": "1,1"}
    none = {"strides": "1,1", "dilations": "1,1", "pads_begin": "0,0", "pads_end": "0,0"}
    dense = n.op("Convolution", [x, n.const(R.standard_normal((6, 20, 3, 3)).astype(np.float32))], pads)
    n.result(n.op("ReLU", [dense], out_dims=[1, 6, 12, 12]), "dense")
    point = n.op("Convolution", [x, n.const(R.standard_normal((5, 20, 1, 1)).astype(np.float32))], none)
    n.result(point, "point")
    for c, kh, pad in ((20, 3, 1), (8, 5, 2), (8, 3, 1)):  # 16 lanes and 4 planes; 8 planes of 5x5, of 3x3
        xi = x if c == 20 else n.op("Convolution", [x, n.const(np.ones((8, 20, 1, 1), np.float32))], none)
        wd = n.const(R.standard_normal((c, 1, 1, kh, kh)).astype(np.float32))
        p = f"{pad},{pad}"
        attrs = {"strides": "1,1", "dilations": "1,1", "pads_begin": p, "pads_end": p}
        n.result(n.op("GroupConvolution", [xi, wd], attrs, out_dims=[1, c, 12, 12]), f"depthwise{c}_{kh}")
    m = irexec.load(n.save(tmp_path / "filters.xml"))
    m.infer({"x": R.standard_normal((1, 20, 12, 12)).astype(np.float32)})
    used = {name for name, _ in seen["model"]}
    assert {"dense_simd", "pointwise_simd", "depthwise_lanes", "depthwise2d", "depthwise_simd"} <= used
    assert any(not all(flags) for _, flags in seen["model"])  # read-only filters did reach kernels
    assert seen["model"] <= seen["warm"], seen["model"] - seen["warm"]


WINOGRAD = [
    # (shape, filters, pads_begin, pads_end): 3x3 at stride 1 over 32+ channels, sums too long for
    # the narrow register tiles, columns over 1 MB
    ((1, 64, 24, 24), (32, 64, 3, 3), (1, 1), (1, 1)),
    ((2, 40, 19, 23), (36, 40, 3, 3), (1, 0), (0, 2)),  # a batch, odd outputs, asymmetric pads
    ((1, 48, 30, 30), (33, 48, 3, 3), (0, 0), (0, 0)),  # no pads
]


@pytest.mark.parametrize("case", WINOGRAD, ids=[str(c[:2]) for c in WINOGRAD])
def test_winograd_convolution_is_the_direct_sum_to_a_few_roundings(kernels, monkeypatch, case):
    """A 3x3 convolution at stride 1 of a model's (read-only) filters over 32 or more channels,
    whose columns outgrow the cache, runs as Winograd's F(2x2, 3x3): within a few float32
    roundings of each output's terms (|w| * |x| summed) of a float64 direct sum, as close as
    the columns' path, and the filters' transform is kept for them. Writeable filters (computed
    by the graph) keep the columns."""
    from irexec.kernels import conv as kc
    from irexec.kernels import jit

    monkeypatch.setattr(jit, "wide_vectors", lambda: False)  # `_simd` leaves these to the columns
    shape, wshape, pb, pe = case
    x = R.standard_normal(shape).astype(np.float32)
    w = R.standard_normal(wshape).astype(np.float32)
    win = _window(shape, wshape, (1, 1), (1, 1), pb, pe)
    calls = []
    real = kc._winograd
    monkeypatch.setattr(kc, "_winograd", lambda *a: calls.append(real(*a)) or calls[-1])
    assert kc.convolution(x, w, win) is not None and calls[-1] is None  # writeable filters: the columns
    columns = kc._tiled(x, w, win)
    w.flags.writeable = False
    got = kc.convolution(x, w, win)
    assert calls[-1] is got and got.dtype == np.float32 and got.shape == columns.shape
    assert kc._winograd_filters(w) is kc._winograd_filters(w)
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (pb[0], pe[0]), (pb[1], pe[1])])
    oh, ow = got.shape[2:]
    ref = size = 0.0
    for a in range(3):
        for b in range(3):
            view = xp[:, :, a : a + oh, b : b + ow]
            ref = ref + np.einsum("nchw,oc->nohw", view, w[:, :, a, b].astype(np.float64))
            size = size + np.einsum("nchw,oc->nohw", np.abs(view), np.abs(w[:, :, a, b]).astype(np.float64))
    err, err_columns = np.abs(got - ref) / size, np.abs(columns - ref) / size
    assert err.max() <= 4 * 2.0**-24 and err.max() <= 2 * err_columns.max()
    key = id(w)  # the kept transform goes with its filters
    assert key in kc._WINOGRAD_FILTERS
    del w
    gc.collect()
    assert key not in kc._WINOGRAD_FILTERS
