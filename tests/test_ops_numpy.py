"""The new ops against numpy in float64, one op at a time (`irexec.ops.single.run_op`, no XML):
the numerics (float64 accumulation, NaN, overflow-safe softmax, f16/bf16 rounding) and the edge
cases OpenVINO's CPU plugin cannot be the oracle for."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import irexec
from irexec import config
from irexec.dtypes import round_bf16
from irexec.kernels import jit, normalize
from irexec.ops import linalg
from irexec.ops.common import finish
from irexec.ops.single import run_op

R = np.random.default_rng(7)


def close(got, want, rtol=1e-6, atol=1e-7):
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=rtol, atol=atol, equal_nan=True)


def softmax64(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("dtype,rtol", [(np.float32, 0), (np.float64, 1e-14), (np.float16, 0)])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_and_log_softmax(dtype, rtol, axis):
    x = (R.standard_normal((4, 5, 6)) * 30).astype(dtype)
    x[0, 0, 0] = 1000 if dtype != np.float16 else 60000  # no overflow: the max is subtracted first
    x64 = x.astype(np.float64)
    ref = softmax64(x64, axis)
    (y,) = run_op("Softmax", "opset8", [x], axis=axis)
    assert y.dtype == dtype
    close(y, ref.astype(dtype), rtol=rtol, atol=0)  # the exact value, rounded once
    m = x64.max(axis=axis, keepdims=True)
    # log of the sum as log1p of the sum without the maximum's 1: exact near 0, where the
    # dominant maximum's outputs are -tiny (log(sum) would keep only ~1e-16 absolute)
    rest = np.where(x64 == m, 0.0, np.exp(x64 - m)).sum(axis=axis, keepdims=True)
    log_ref = (x64 - m) - np.log1p(rest + ((x64 == m).sum(axis=axis, keepdims=True) - 1))
    (ly,) = run_op("LogSoftmax", "opset5", [x], axis=axis)
    close(ly, log_ref.astype(dtype), rtol=rtol, atol=0)


def test_softmax_nan_and_minus_infinity():
    x = np.array([[1.0, np.nan, 2.0], [-np.inf, 0.0, 1.0], [-np.inf, -np.inf, -np.inf]], np.float32)
    (y,) = run_op("Softmax", "opset8", [x], axis=1)
    assert np.isnan(y[0]).all()
    close(y[1], [0.0, 1 / (1 + math.e), math.e / (1 + math.e)])
    assert np.isnan(y[2]).all()


def test_softmax1_refuses_negative_axis():
    with pytest.raises(irexec.ShapeInferenceError):
        run_op("Softmax", "opset1", [np.ones((2, 3), np.float32)], axis=-1)


def _mvn64(x, axes, eps, inside, norm=True):
    m = x.mean(axis=axes, keepdims=True)
    v = ((x - m) ** 2).mean(axis=axes, keepdims=True)
    if not norm:
        return x - m
    return (x - m) / (np.sqrt(v + eps) if inside else np.sqrt(v) + eps)


@pytest.mark.parametrize("axes,mode", [((2,), "inside_sqrt"), ((1, 2), "outside_sqrt"), ((-1,), "inside_sqrt")])
def test_mvn6(axes, mode):
    x = (R.standard_normal((3, 4, 50)) + 1e4).astype(np.float32)  # a large mean: two-pass variance
    (y,) = run_op("MVN", "opset6", [x, np.array(axes, np.int64)], normalize_variance=True, eps=1e-5, eps_mode=mode)
    close(
        y, _mvn64(x.astype(np.float64), tuple(a % 3 for a in axes), 1e-5, mode == "inside_sqrt"), rtol=1e-5, atol=2e-5
    )


def test_mvn1_group_norm_normalize_l2_batchnorm():
    x = R.standard_normal((2, 6, 4, 5)).astype(np.float32)
    x64 = x.astype(np.float64)
    (y,) = run_op("MVN", "opset2", [x], across_channels=True, normalize_variance=True, eps=1e-9)
    close(y, _mvn64(x64, (1, 2, 3), 1e-9, True), rtol=1e-5, atol=1e-6)
    scale, bias = R.standard_normal(6).astype(np.float32), R.standard_normal(6).astype(np.float32)
    (g,) = run_op("GroupNormalization", "opset12", [x, scale, bias], num_groups=3, epsilon=1e-5)
    ref = _mvn64(x64.reshape(2, 3, -1), (2,), 1e-5, True).reshape(x.shape) * scale.reshape(1, 6, 1, 1) + bias.reshape(
        1, 6, 1, 1
    )
    close(g, ref, rtol=1e-5, atol=1e-6)
    (n,) = run_op("NormalizeL2", "opset1", [x, np.array([1], np.int64)], eps=1e-6, eps_mode="max")
    close(n, x64 / np.sqrt(np.maximum((x64**2).sum(axis=1, keepdims=True), 1e-6)), rtol=1e-6)
    gm, bt, mu, var = (R.uniform(0.5, 1.5, 6).astype(np.float32) for _ in range(4))
    (b,) = run_op("BatchNormInference", "opset5", [x, gm, bt, mu, var], epsilon=1e-3)
    sh = (1, 6, 1, 1)
    close(b, gm.reshape(sh) * (x64 - mu.reshape(sh)) / np.sqrt(var.reshape(sh) + 1e-3) + bt.reshape(sh), rtol=1e-6)


@pytest.mark.parametrize("causal,mask", [(False, None), (True, None), (False, "bool"), (False, "float")])
def test_scaled_dot_product_attention(causal, mask):
    q, k, v = (R.standard_normal(s).astype(np.float32) for s in ((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 4)))
    s = (q.astype(np.float64) @ np.swapaxes(k, -1, -2)) / math.sqrt(8)
    inputs = [q, k, v]
    if causal:
        s = np.where(np.tril(np.ones((5, 7), bool)), s, -np.inf)
    elif mask == "bool":
        m = R.random((5, 7)) < 0.7
        m[:, 0] = True
        s = np.where(m, s, -np.inf)
        inputs.append(m)
    elif mask == "float":
        m = R.standard_normal((1, 1, 5, 7)).astype(np.float32)
        s = s + m
        inputs.append(m)
    (y,) = run_op("ScaledDotProductAttention", "opset13", inputs, const=(), causal=causal)
    close(y, softmax64(s, -1) @ v, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "sa,sb,ta,tb",
    [
        ((3, 4), (4, 5), False, False),
        ((4,), (4, 5), False, False),
        ((3, 4), (4,), False, False),
        ((2, 1, 4, 3), (5, 4, 6), True, False),
        ((2, 3, 4), (5, 4), False, True),
    ],
)
def test_matmul_shapes_and_values(sa, sb, ta, tb):
    a, b = R.standard_normal(sa).astype(np.float32), R.standard_normal(sb).astype(np.float32)
    (y,) = run_op("MatMul", "opset1", [a, b], const=(), transpose_a=ta, transpose_b=tb)
    a64 = np.swapaxes(a, -1, -2) if ta and a.ndim > 1 else a
    b64 = np.swapaxes(b, -1, -2) if tb and b.ndim > 1 else b
    close(y, np.matmul(a64.astype(np.float64), b64), rtol=1e-5, atol=1e-5)
    with pytest.raises(irexec.ShapeInferenceError):
        run_op("MatMul", "opset1", [np.ones((2, 3), np.float32), np.ones((4, 2), np.float32)], const=())


def per_batch_matmul(a, b):
    """The product one 2-D slice of a at a time against the same (broadcast) slice of b."""
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    out = np.empty(batch + (a.shape[-2], b.shape[-1]), np.result_type(a, b))
    for i in np.ndindex(*batch):
        out[i] = np.matmul(a[i], b[i])
    return out


@pytest.fixture(params=["default", "merge every size"])
def small_product(request, monkeypatch):
    """The default size rule, and the rows merged whatever the size (small test shapes)."""
    if request.param != "default":
        monkeypatch.setattr(linalg, "SMALL_PRODUCT", 0)


@pytest.mark.parametrize(
    "sa,sb,ta,tb",
    [
        ((2, 3, 5, 7), (7, 9), False, False),  # batch dims against a matrix: one product
        ((2, 3, 5, 7), (9, 7), False, True),  # ... with b transposed
        ((2, 3, 7, 5), (7, 9), True, False),  # a transposed: no copy-free rows, batched
        ((3, 5, 7), (1, 1, 7, 9), False, False),  # b's batch of ones broadcasts a's up a rank
        ((16, 1, 40), (40, 30), False, False),  # single-row batches
        ((2, 1, 4, 3), (5, 3, 6), False, False),  # broadcast batch dims: never merged
        ((4, 5, 7), (4, 7, 9), False, False),  # batched b
        ((7,), (2, 7, 9), False, False),  # 1-D a
        ((2, 3, 7), (7,), False, False),  # 1-D b
        ((0, 5, 7), (7, 9), False, False),  # zero-size batch
        ((2, 5, 0), (0, 9), False, False),  # empty inner dim
        ((1, 56, 56, 96), (96, 384), False, False),  # ConvNeXt's pointwise layer
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32])
def test_matmul_merges_batch_rows_against_a_matrix(small_product, sa, sb, ta, tb, dtype):
    """A batched a against a 2-D b runs as one (rows, K) @ (K, N) product where a's rows merge
    without a copy. Against the per-batch products: equal for integers; for floats within the
    rounding of a K-long float32 (float64) dot product, as BLAS may sum in another order when
    the merged shape takes other kernels (single-row batches: a matrix-vector product each
    before; threads splitting a float64 product's K blocks differently). Where both shapes run
    the same packed kernels the bits are the same (measured on OpenBLAS: every float32 case)."""
    if dtype == np.float64 and math.prod(sa) > 10000:
        return
    if dtype == np.int32:
        a, b = R.integers(-9, 9, sa).astype(dtype), R.integers(-9, 9, sb).astype(dtype)
    else:
        a, b = R.standard_normal(sa).astype(dtype), R.standard_normal(sb).astype(dtype)
    (y,) = run_op("MatMul", "opset1", [a, b], const=(), transpose_a=ta, transpose_b=tb)
    aa = np.swapaxes(a, -1, -2) if ta and a.ndim > 1 else a
    bb = np.swapaxes(b, -1, -2) if tb and b.ndim > 1 else b
    wide = np.float32 if dtype == np.float16 else dtype
    a2 = aa[None, :] if aa.ndim == 1 else aa
    b2 = bb[:, None] if bb.ndim == 1 else bb
    want = per_batch_matmul(a2.astype(wide), b2.astype(wide))
    if aa.ndim == 1:
        want = want[..., 0, :]
    if bb.ndim == 1:
        want = want[..., 0]
    assert y.dtype == dtype and y.shape == want.shape
    if dtype == np.int32:
        np.testing.assert_array_equal(y, want)
        return
    k = a2.shape[-1]
    eps = np.finfo(wide).eps
    bound = 2 * k * eps * per_batch_matmul(np.abs(a2.astype(np.float64)), np.abs(b2.astype(np.float64)))
    if aa.ndim == 1:
        bound = bound[..., 0, :]
    if bb.ndim == 1:
        bound = bound[..., 0]
    if dtype == np.float16:
        want, bound = want.astype(np.float16), bound + np.spacing(np.abs(want).astype(np.float16))
    assert np.all(np.abs(y.astype(np.float64) - want.astype(np.float64)) <= bound)


def test_matmul_of_a_strided_a_stays_batched():
    """A non-contiguous a (a slice with a step) cannot merge its rows without a copy."""
    base = R.standard_normal((4, 10, 120)).astype(np.float32)
    a, b = base[:, ::2, :], R.standard_normal((120, 130)).astype(np.float32)
    (y,) = run_op("MatMul", "opset1", [a, b], const=())
    np.testing.assert_array_equal(y, np.matmul(a, b))


def conv_ref(x, w, stride, pad, dil, groups=1):
    """Direct nested-loop 2-D convolution in float64."""
    n, c, h, wd = x.shape
    co, cg, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    oh = (h + 2 * pad[0] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * pad[1] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, co, oh, ow))
    og = co // groups
    for b, o, i, j in itertools.product(range(n), range(co), range(oh), range(ow)):
        g = o // og
        for ci, p, q in itertools.product(range(cg), range(kh), range(kw)):
            out[b, o, i, j] += (
                xp[b, g * cg + ci, i * stride[0] + p * dil[0], j * stride[1] + q * dil[1]] * w[o, ci, p, q]
            )
    return out


@pytest.mark.parametrize("stride,pad,dil", [((1, 1), (1, 1), (1, 1)), ((2, 1), (0, 2), (1, 2))])
def test_convolution_and_depthwise_against_loops(stride, pad, dil):
    x = R.standard_normal((2, 4, 7, 6)).astype(np.float32)
    w = R.standard_normal((3, 4, 3, 2)).astype(np.float32)
    kw = dict(strides=stride, pads_begin=pad, pads_end=pad, dilations=dil)
    (y,) = run_op("Convolution", "opset1", [x, w], **kw)
    close(y, conv_ref(x, w, stride, pad, dil), rtol=1e-5, atol=1e-5)
    dw = R.standard_normal((4, 1, 1, 3, 3)).astype(np.float32)
    (z,) = run_op("GroupConvolution", "opset1", [x, dw], **kw)
    close(z, conv_ref(x, dw.reshape(4, 1, 3, 3), stride, pad, dil, groups=4), rtol=1e-5, atol=1e-5)


def test_pooling_nan_global_and_ceil_torch():
    x = R.standard_normal((1, 2, 7, 7)).astype(np.float32)
    x[0, 0, 3, 3] = np.nan
    (m,) = run_op("MaxPool", "opset1", [x], strides=(2, 2), pads_begin=(0, 0), pads_end=(0, 0), kernel=(3, 3))
    assert np.isnan(m[0, 0, 1, 1]) and not np.isnan(m[0, 1]).any()  # NaN propagates, as numpy's max
    (g,) = run_op(
        "AvgPool",
        "opset1",
        [x[:, 1:]],
        strides=(1, 1),
        pads_begin=(0, 0),
        pads_end=(0, 0),
        kernel=(7, 7),
        **{"exclude-pad": True},
    )
    close(g.reshape(-1), [x[0, 1].astype(np.float64).mean()], rtol=1e-6)
    # ceil_torch: the last window may not start in the padding (PyTorch's rule); count = in + pads
    y = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    (a,) = run_op(
        "AvgPool",
        "opset14",
        [y],
        strides=(2, 2),
        pads_begin=(1, 1),
        pads_end=(1, 1),
        kernel=(3, 3),
        rounding_type="ceil_torch",
        **{"exclude-pad": True},
    )
    assert a.shape == (1, 1, 3, 3)
    yp = np.pad(y[0, 0].astype(np.float64), 1)
    valid = np.pad(np.ones((5, 5)), 1)
    ref = [
        [
            yp[i * 2 : i * 2 + 3, j * 2 : j * 2 + 3].sum() / valid[i * 2 : i * 2 + 3, j * 2 : j * 2 + 3].sum()
            for j in range(3)
        ]
        for i in range(3)
    ]
    close(a[0, 0], ref, rtol=1e-6)


def test_gelu_and_erf_against_math_erf():
    x = np.concatenate([np.linspace(-6, 6, 1001), [0.0, 1e-6, -1e-6]]).astype(np.float32)
    ref_erf = np.array([math.erf(v) for v in x.astype(np.float64)])
    (e,) = run_op("Erf", "opset1", [x])
    # the numpy path rounds once; the float32 kernel (once loaded) is within 1.92 ulps
    # (tools/sweep_f32.py)
    spacing = np.spacing(np.abs(ref_erf).astype(np.float32)).astype(np.float64)
    assert (np.abs(e - ref_erf) / spacing).max() <= 1.92
    (g,) = run_op("Gelu", "opset7", [x], approximation_mode="erf")
    v = x.astype(np.float64)
    want = 0.5 * v * (1 + np.array([math.erf(t / math.sqrt(2)) for t in v]))
    # the numpy path rounds once; the float32 kernel (once loaded) is within 5.9 ulps of the
    # exact value for every float32 input (tools/sweep_f32.py)
    ulps = np.abs(g - want) / np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    assert ulps.max() <= 5.9, float(ulps.max())
    (e64,) = run_op("Erf", "opset1", [x.astype(np.float64)])
    close(e64, ref_erf, rtol=1e-15, atol=1e-300)


def test_cumsum_gather8_topk_interpolate():
    x = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    (c,) = run_op("CumSum", "opset3", [x, np.int64(1)], exclusive=True, reverse=True)
    close(c, [[5, 3, 0], [11, 6, 0]])
    (gz,) = run_op("Gather", "opset8", [x, np.array([2, -1, 7], np.int64), np.int64(1)])
    close(gz, [[3, 3, 0], [6, 6, 0]])  # Gather-8: out of range gives 0
    with pytest.raises(irexec.ExecutionError):
        run_op("Gather", "opset7", [x, np.array([7], np.int64), np.int64(1)])
    t = np.array([[3, 1, 3, 2]], np.float32)
    vals, idx = run_op(
        "TopK",
        "opset11",
        [t, np.int64(2)],
        n_outputs=2,
        axis=1,
        mode="max",
        sort="value",
        index_element_type="i64",
        stable=True,
    )
    close(vals, [[3, 3]])
    assert idx.tolist() == [[0, 2]]
    img = R.standard_normal((1, 1, 2, 3)).astype(np.float32)
    (up,) = run_op(
        "Interpolate",
        "opset11",
        [img, np.float32([2, 2]), np.array([2, 3], np.int64)],
        mode="nearest",
        shape_calculation_mode="scales",
        coordinate_transformation_mode="asymmetric",
        nearest_mode="floor",
    )
    close(up, img.repeat(2, axis=2).repeat(2, axis=3))


@pytest.mark.parametrize("et", ["f16", "bf16"])
def test_half_types_round_once(et):
    x = R.standard_normal((3, 8)).astype(np.float32)
    xin = x.astype(np.float16) if et == "f16" else irexec.dtypes.round_bf16(x)
    (y,) = run_op("Softmax", "opset8", [xin], types=[et], axis=1)
    ref = softmax64(xin.astype(np.float64), 1)
    want = ref.astype(np.float16) if et == "f16" else irexec.dtypes.round_bf16(ref.astype(np.float32))
    close(y, want, rtol=0, atol=0)


def test_bad_attributes_and_shapes_are_errors():
    x = np.ones((2, 4), np.float32)
    with pytest.raises(irexec.FormatError):
        run_op("Clamp", "opset1", [x], min=2.0, max=1.0)
    with pytest.raises(irexec.FormatError):
        run_op("MVN", "opset6", [x, np.array([1], np.int64)], normalize_variance=True, eps=1e-5, eps_mode="sideways")
    with pytest.raises(irexec.ShapeInferenceError):
        run_op("Concat", "opset1", [x, np.ones((3, 5), np.float32)], const=(), axis=0)
    with pytest.raises(irexec.ShapeInferenceError):
        run_op("Split", "opset1", [np.ones((5, 2), np.float32), np.int64(0)], n_outputs=2, num_splits=2)


@pytest.fixture
def kernels(monkeypatch):
    monkeypatch.setattr(config, "JIT", "always")
    monkeypatch.setattr(config, "SMALL_ELEMENTS", 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_and_layer_norm_kernels_match_the_numpy_path(kernels, dtype):
    x = (R.standard_normal((6, 7, 33)) * 20 + 3).astype(dtype)
    x[0, 0, 3] = np.nan
    x[1, 2, :] = -np.inf
    x[2, 3, 5] = np.inf
    x64 = x.astype(np.float64)
    for op, version, extra in (("Softmax", "opset8", {}), ("LogSoftmax", "opset5", {})):
        (y,) = run_op(op, version, [x], axis=-1, **extra)
        config.JIT = "never"
        (ref,) = run_op(op, version, [x], axis=-1, **extra)
        config.JIT = "always"
        np.testing.assert_array_equal(np.isnan(y), np.isnan(ref))
        # the same float64 sums in another order, exponentials within 2 ulps: log-softmax too,
        # near 0 (both take log1p of the sum without the maximum)
        close(y, ref, rtol=2e-7 if dtype == np.float32 else 1e-14, atol=0)
    finite = x64[3:]
    (n,) = run_op(
        "MVN", "opset6", [x[3:], np.array([-1], np.int64)], normalize_variance=True, eps=1e-5, eps_mode="inside_sqrt"
    )
    close(n, _mvn64(finite, (2,), 1e-5, True), rtol=2e-6 if dtype == np.float32 else 1e-12, atol=1e-6)
    from irexec.kernels import jit

    assert jit.ready()


def test_float32_softmax_kernel_is_the_float64_formula_rounded_once(kernels):
    """Float32 rows take `exp_neg` (9e-15 relative, without vexp's range fix-ups): on 131 K
    elements of rows of 512 (a generator of its own: the data do not depend on which tests ran
    before) every output is the float64 formula's value rounded once, and the rows with a NaN,
    an infinity or every score -inf keep the numpy path's answers."""
    from irexec.kernels.normalize import softmax_out

    rng = np.random.default_rng(5)
    x = (rng.standard_normal((256, 512)) * 8).astype(np.float32)
    x[:, 7] = -np.inf  # an argument of -inf: exp_neg gives 0
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=-1, keepdims=True))
    want = (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)
    got = softmax_out(x, -1, False, np.float32)
    assert got is not None and np.array_equal(got.view(np.int32), want.view(np.int32))
    odd = x[:4].copy()
    odd[0, 3], odd[1, 5], odd[2, :] = np.nan, np.inf, -np.inf
    (y,) = run_op("Softmax", "opset8", [odd], axis=-1)
    config.JIT = "never"
    (ref,) = run_op("Softmax", "opset8", [odd], axis=-1)
    np.testing.assert_array_equal(y, ref)


def test_vexp_within_two_ulps_and_zero_past_its_underflow(kernels):
    """The kernels' float64 exp (`normalize_loops.vexp`) within 2 ulps of numpy's over its whole
    range, denormal results included, and exactly 0 below -745.2 (computed without denormal
    products since masks of -1e4 or float32's lowest made those slow), +inf above 710; and a
    softmax whose masked scores are -1e4 or float32's lowest: exact zeros there, the numpy
    path's values elsewhere."""
    pytest.importorskip("numba")
    from irexec.kernels import normalize_loops as nl
    from irexec.kernels.jit import njit

    @njit(fastmath=nl._EXACT_FM, cache=False)
    def exps(x, out):
        for j in range(x.size):
            out[j] = nl.vexp(x[j])

    x = np.concatenate(
        [np.linspace(-800.0, 709.0, 300_001), [-745.21, -745.2, -745.13, -744.4, -708.5, -1e300, -np.inf]]
    )
    got = np.empty_like(x)
    exps(x, got)
    with np.errstate(under="ignore"):
        want = np.exp(x)
    assert np.abs(got.view(np.int64) - want.view(np.int64)).max() <= 2
    assert np.all(got[x < -745.2] == 0) and np.all(got[x >= -744.4] > 0)
    big = np.array([710.5, 1e300, np.inf])
    out = np.empty_like(big)
    exps(big, out)
    assert np.all(out == np.inf)
    scores = (R.standard_normal((3, 64)) * 3).astype(np.float32)
    scores[0, 40:] -= 1e4
    scores[1, 10:] = np.finfo(np.float32).min
    (y,) = run_op("Softmax", "opset8", [scores], axis=-1)
    config.JIT = "never"
    (ref,) = run_op("Softmax", "opset8", [scores], axis=-1)
    config.JIT = "always"
    assert np.all(y[0, 40:] == 0) and np.all(y[1, 10:] == 0)
    close(y, ref, rtol=2e-7, atol=0)


def test_attention_exponentials_in_vectors_give_the_scalar_bits(kernels):
    """The register rows' exponentials 16 lanes a step (`_attention_exps_simd` given the row's
    `_finite_max_f32`) give the scalar kernel's bits (`_attention_exps_f32`) and the same
    reciprocal sum, from -100 to 0 and for rows of 1 to 70 scores (whole vectors and a tail
    computed past the row's end, never summed), at offset 0 and inside a buffer of rows; a NaN
    or an infinity anywhere, or a max past float32 (its arguments in float64), sends the row to
    the scalar kernel (0.0, then the scalar kernel's own answer: 0.0 but for -inf, whose rows
    it takes)."""
    pytest.importorskip("numba")
    from irexec.kernels import normalize_loops as nl
    from irexec.kernels.jit import njit

    @njit(fastmath=nl._EXACT_FM, error_model="numpy", cache=False)
    def both(buf, off, keep, scale, e1, e2):
        row = buf[off : off + keep]
        vector = nl._attention_exps_simd(buf, e2, off, keep, scale, nl._finite_max_f32(buf, off, keep))
        taken = vector != 0.0
        if not taken:
            vector = nl._attention_exps_f32(row, keep, scale, True, e2[off : off + keep])
        return nl._attention_exps_f32(row, keep, scale, True, e1[off : off + keep]), vector, taken

    sweep = np.linspace(-100.0, 0.0, 160_000).astype(np.float32)
    e1, e2 = np.empty_like(sweep), np.empty_like(sweep)
    a, b, taken = both(sweep, 0, sweep.size, 1.0, e1, e2)
    assert taken and a == b and np.array_equal(e1.view(np.int32), e2.view(np.int32))
    for keep in (1, 15, 16, 17, 64, 70):
        for off in (0, 96):
            buf = np.full(off + 80, 7.0, np.float32)  # the rows around it: never read as its scores
            row = buf[off : off + keep]
            row[:] = R.standard_normal(keep) * 4
            buf[off + keep :] = 1e3  # past the row: computed (e overflows there), never summed
            e1, e2 = np.zeros_like(buf), np.zeros_like(buf)
            a, b, taken = both(buf, off, keep, 0.3, e1, e2)
            assert taken and a == b > 0
            assert np.array_equal(e1[off : off + keep].view(np.int32), e2[off : off + keep].view(np.int32))
            for bad in (np.nan, np.inf, -np.inf):
                spoiled = buf.copy()
                spoiled[off + keep // 2] = bad
                a, b, taken = both(spoiled, off, keep, 0.3, e1, e2)
                assert not taken and a == b and (a == 0.0) == (bad != -np.inf or keep == 1)
    big = np.full(16, 3e38, np.float32)  # -max past float32: the arguments in float64
    assert both(big, 0, 16, 1.5, e1, e2) == (1 / 16, 1 / 16, False)


@pytest.fixture(params=[12, 1 << 16], ids=["blocks of 12", "default blocks"])
def numpy_blocks(request, monkeypatch):
    """The numpy paths of softmax and MVN, in blocks of 12 elements (many blocks, column
    chunks, reduced sets larger than a block) and of the default size."""
    monkeypatch.setattr(config, "JIT", "never")
    monkeypatch.setattr(normalize, "BLOCK", request.param)


def softmax_whole(x, axis, log):
    """The float64 formulas over the whole tensor at once (the numpy path before blocks)."""
    v = x.astype(np.float64)
    m = np.max(v, axis=axis, keepdims=True)
    shifted = v - np.where(np.isinf(m), 0.0, m)
    e = np.exp(shifted)
    if not log:
        return e / np.sum(e, axis=axis, keepdims=True)
    top = shifted == 0
    rest = np.sum(np.where(top, 0.0, e), axis=axis, keepdims=True)
    return shifted - np.log1p(rest + (np.sum(top, axis=axis, keepdims=True) - 1.0))


@pytest.mark.parametrize(
    "shape,axis", [((4, 5, 6), 0), ((4, 5, 6), 1), ((4, 5, 6), -1), ((2, 40, 3), 1), ((3, 30), 1), ((3, 0, 4), 2)]
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_numpy_path_in_blocks_gives_the_whole_tensor_bits(numpy_blocks, shape, axis, dtype, log):
    """Each block holds whole rows along the axis, so every value comes from the same float64
    operations as over the whole tensor, its sum at most in another order (numpy sums a
    one-column block, contiguous, pairwise): two sums of the same n positive terms differ by
    at most 2 (n - 1) u of the sum (u = 2^-53), which moves a softmax that much relatively
    (and its division's rounding) and a log-softmax that much absolutely (log1p of the sum);
    the rounded float32 and float16 results are the same bits; NaN, inf and -inf rows
    included. (A flat 5e-16 failed by 5.7e-16 on 40-term sums under another test order: the
    bound is the sum's, not two ulps.)"""
    x = (R.standard_normal(shape) * 20).astype(dtype)
    if x.size:
        x[(0,) * x.ndim] = np.nan
        x[(1,) * x.ndim] = np.inf
        x[(-1,) * x.ndim] = -np.inf
    (y,) = run_op("LogSoftmax" if log else "Softmax", "opset5" if log else "opset8", [x], axis=axis)
    assert y.dtype == dtype
    with np.errstate(all="ignore"):
        want = softmax_whole(x, axis, log).astype(dtype)
    if dtype == np.float64:
        np.testing.assert_array_equal(np.isnan(y), np.isnan(want))
        sums = 2 * max(0, x.shape[axis] - 1) * 2.0**-53
        rtol, atol = (4 * 2.0**-53, sums) if log else (sums + 4 * 2.0**-53, 0)
        close(y[~np.isnan(y)], want[~np.isnan(want)], rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(y, want)


def test_softmax_numpy_path_in_blocks_rounds_bf16_once(numpy_blocks):
    x = round_bf16((R.standard_normal((3, 7, 5)) * 4).astype(np.float32))
    (y,) = run_op("Softmax", "opset8", [x], types=["bf16"], axis=1)
    np.testing.assert_array_equal(y, round_bf16(softmax_whole(x, 1, False).astype(np.float32)))


@pytest.mark.parametrize(
    "shape,axes",
    [((3, 4, 50), (2,)), ((3, 4, 50), (1, 2)), ((3, 4, 50), (0, 1, 2)), ((3, 4, 50), (1,)), ((3, 1, 5, 4), (0, 2))]
    + [((3, 4, 5), (0, 2)), ((2, 0, 5), (2,))],  # not one run: whole-tensor temporaries; zero-size
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("mode", ["inside_sqrt", "outside_sqrt", "no variance"])
def test_mvn_numpy_path_in_blocks(numpy_blocks, shape, axes, dtype, mode):
    x = (R.standard_normal(shape) + 1e3).astype(dtype)  # a large mean: two-pass variance
    if x.size:
        x[(0,) * x.ndim] = np.nan
    attrs = dict(
        normalize_variance=mode != "no variance", eps=1e-5, eps_mode=mode.replace("no variance", "inside_sqrt")
    )
    (y,) = run_op("MVN", "opset6", [x, np.array(axes, np.int64)], **attrs)
    x64 = x.astype(np.float64)
    want = (
        _mvn64(x64, axes, 1e-5, mode == "inside_sqrt") if mode != "no variance" else x64 - x64.mean(axes, keepdims=True)
    )
    assert y.dtype == dtype
    np.testing.assert_array_equal(np.isnan(y), np.isnan(want))
    rtol = {np.float32: 2e-6, np.float64: 1e-12, np.float16: 1e-3}[dtype]
    close(y[~np.isnan(y)], want[~np.isnan(want)], rtol=rtol, atol=rtol * 10)


def test_group_norm_numpy_path_in_blocks(numpy_blocks):
    x = (R.standard_normal((2, 8, 6, 5)) * 3 + 50).astype(np.float32)
    scale, bias = R.standard_normal(8).astype(np.float32), R.standard_normal(8).astype(np.float32)
    (y,) = run_op("GroupNormalization", "opset12", [x, scale, bias], num_groups=4, epsilon=1e-5)
    g = x.astype(np.float64).reshape(2, 4, -1)
    want = _mvn64(g, (2,), 1e-5, True).reshape(x.shape) * scale.reshape(1, 8, 1, 1) + bias.reshape(1, 8, 1, 1)
    close(y, want, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pooling_kernels_match_the_numpy_path(kernels, dtype):
    x = R.standard_normal((2, 3, 11, 10)).astype(dtype)
    x[0, 1, 4, 4] = np.nan
    cases = [
        (
            "MaxPool",
            "opset8",
            dict(
                strides=(2, 2),
                pads_begin=(1, 0),
                pads_end=(1, 1),
                kernel=(3, 3),
                dilations=(1, 2),
                rounding_type="ceil",
                axis=0,
            ),
            2,
        ),
        (
            "MaxPool",
            "opset14",
            dict(
                strides=(2, 1),
                pads_begin=(1, 1),
                pads_end=(1, 1),
                kernel=(3, 2),
                dilations=(1, 1),
                rounding_type="ceil_torch",
                axis=2,
            ),
            2,
        ),
        (
            "AvgPool",
            "opset1",
            {
                "strides": (2, 2),
                "pads_begin": (1, 1),
                "pads_end": (1, 1),
                "kernel": (3, 3),
                "rounding_type": "ceil",
                "exclude-pad": False,
            },
            1,
        ),
        (
            "AvgPool",
            "opset1",
            {"strides": (2, 2), "pads_begin": (1, 1), "pads_end": (1, 1), "kernel": (3, 3), "exclude-pad": True},
            1,
        ),
        (
            "AvgPool",
            "opset14",
            {
                "strides": (2, 2),
                "pads_begin": (1, 1),
                "pads_end": (1, 1),
                "kernel": (3, 3),
                "rounding_type": "ceil_torch",
                "exclude-pad": False,
            },
            1,
        ),
    ]
    for op, version, attrs, n_out in cases:
        got = run_op(op, version, [x], n_outputs=n_out, **attrs)
        config.JIT = "never"
        want = run_op(op, version, [x], n_outputs=n_out, **attrs)
        config.JIT = "always"
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype, (op, attrs)
            if g.dtype.kind == "f":
                # float64 sums of the window in another order: ~1 ulp of the terms, not of the result
                close(g, w, rtol=1e-6 if dtype == np.float32 else 1e-14, atol=0 if dtype == np.float32 else 1e-15)
            else:
                np.testing.assert_array_equal(g, w, err_msg=f"{op} {attrs}")


def test_convert_saturates_at_the_64_bit_limits():
    x = np.array([2.0**63, 1e30, -1e30, np.inf, -np.inf, np.nan, 2.0**64, 5.9], np.float64)
    (i,) = run_op("Convert", "opset1", [x], destination_type="i64")
    info = np.iinfo(np.int64)
    assert i.tolist() == [info.max, info.max, info.min, info.max, info.min, 0, info.max, 5]
    (u,) = run_op("Convert", "opset1", [x], destination_type="u64")
    umax = int(np.iinfo(np.uint64).max)
    assert u.tolist() == [2**63, umax, 0, umax, 0, 0, umax, 5]


@pytest.mark.parametrize("et", ["i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_convert_to_integers_truncates_and_saturates(et, dtype):
    """Float to integer truncates toward zero; values past the type's ends saturate and NaN
    gives 0. An array whose values all fit takes the plain cast (dtypes.cast), one with a value
    that does not the saturating way: both against the rule computed value by value."""
    from irexec.dtypes import numpy_dtype

    info = np.iinfo(numpy_dtype(et))
    lo, hi = max(float(info.min), -6e4), min(float(info.max), 6e4)  # float16 holds up to 65504
    fits = np.concatenate([R.uniform(lo, hi, 2000), [lo, hi, -0.99, 0.99, -0.0, 1.5, -1.5]]).astype(dtype)
    fits = fits[(fits.astype(np.float64) >= float(info.min)) & (fits.astype(np.float64) < float(info.max) + 1.0)]
    with np.errstate(over="ignore"):
        spill = np.concatenate([fits[:50].astype(np.float64), [float(info.max) * 4.0 + 8.0, np.nan]]).astype(dtype)

    def rule(v: float) -> int:
        if math.isnan(v):
            return 0
        return int(min(max(math.trunc(v) if math.isfinite(v) else v, info.min), info.max))

    for x in (fits, spill):
        (y,) = run_op("Convert", "opset1", [x], destination_type=et)
        assert y.dtype == numpy_dtype(et)
        assert y.tolist() == [rule(float(v)) for v in x]


def test_vectorized_exp_is_within_two_ulps_of_libm(kernels):
    from irexec.kernels import normalize_loops as k

    x = np.concatenate(
        [
            np.linspace(-760, 720, 400_001),
            R.uniform(-40, 5, 100_000),
            [-np.inf, np.inf, 0.0, -0.0, 709.78, 709.79, -708.4, -745.13, -745.14, -1e-300, 1e-300],
        ]
    )
    got = np.empty_like(x)
    k.scaled_exp(x, 1.0, 0.0, got, False)  # vexp (short: exp_neg, for float32 softmax rows)
    with np.errstate(over="ignore"):
        want = np.array([math.exp(v) if v < 709.782712893384 else math.inf for v in x])
    special = ~np.isfinite(want) | (want == 0)
    np.testing.assert_array_equal(got[special], want[special])  # inf and 0 exactly, subnormals below
    ulps = np.abs(got[~special] - want[~special]) / np.spacing(want[~special])
    assert ulps.max() <= 2.0, ulps.max()
    k.scaled_exp(np.float32([-1.5, 0.25]), 1.0, -0.5, got[:2], False)  # float32 input, shifted by the max
    np.testing.assert_allclose(got[:2], np.exp([-1.0, 0.75]), rtol=4e-16)
    # short (float32 softmax rows, arguments <= 0 but for a fused product's half ulp): exp_neg,
    # within its Taylor remainder (ln2/2)^12 / 12! e^(ln2/2) = 8.9e-15 and a few ulps of rounding
    # (1e-14) down to -700, 0 below
    neg = np.concatenate([np.linspace(-700, 0, 200_001), R.uniform(-30, 0, 50_000), [1e-17, -0.0, -701.0, -np.inf]])
    short = np.empty_like(neg)
    k.scaled_exp(neg, 1.0, 0.0, short, True)
    np.testing.assert_allclose(short[:-2], np.exp(neg[:-2]), rtol=1e-14, atol=0)
    assert short[-2] == short[-1] == 0.0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mvn_over_trailing_axes_and_group_norm_kernels_match_the_numpy_path(kernels, dtype):
    x = (R.standard_normal((3, 8, 6, 5)) * 3 + 50).astype(dtype)
    tol = dict(rtol=2e-6, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    runs = [
        (
            "MVN",
            "opset6",
            [x, np.array([1, 2, 3], np.int64)],
            dict(normalize_variance=True, eps=1e-5, eps_mode="outside_sqrt"),
        ),
        (
            "MVN",
            "opset6",
            [x, np.array([-1, -2], np.int64)],
            dict(normalize_variance=False, eps=1e-5, eps_mode="inside_sqrt"),
        ),
        ("MVN", "opset2", [x], dict(across_channels=False, normalize_variance=True, eps=1e-9)),
        (
            "GroupNormalization",
            "opset12",
            [x, R.standard_normal(8).astype(dtype), R.standard_normal(8).astype(dtype)],
            dict(num_groups=4, epsilon=1e-5),
        ),
    ]
    from irexec.kernels import jit

    for op, version, inputs, attrs in runs:
        (got,) = run_op(op, version, inputs, **attrs)
        config.JIT = "never"
        (want,) = run_op(op, version, inputs, **attrs)
        config.JIT = "always"
        assert got.dtype == want.dtype == dtype
        close(got, want.astype(np.float64), **tol)
    assert jit.ready()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_3x3_pooling_fast_paths_match_the_numpy_path(kernels, dtype):
    """Windows wholly inside the plane take the unrolled 3x3 rows (strides 1, 2 and 3), the
    borders the general loop; integer-valued data makes ties, so the first maximum's index is
    checked, and a NaN sits inside the interior."""
    x = R.integers(-4, 5, (2, 3, 13, 12)).astype(dtype)
    x[1, 2, 6, 6] = np.nan
    for s, pad, axis in itertools.product((1, 2, 3), (0, 1), (0, 1, 2)):
        attrs = dict(
            strides=(s, s),
            pads_begin=(pad, pad),
            pads_end=(pad, pad),
            kernel=(3, 3),
            dilations=(1, 1),
            rounding_type="floor",
            axis=axis,
        )
        got = run_op("MaxPool", "opset8", [x], n_outputs=2, **attrs)
        config.JIT = "never"
        want = run_op("MaxPool", "opset8", [x], n_outputs=2, **attrs)
        config.JIT = "always"
        np.testing.assert_array_equal(got[0], want[0], err_msg=str(attrs))
        np.testing.assert_array_equal(got[1], want[1], err_msg=str(attrs))
        (values,) = run_op(
            "MaxPool", "opset1", [x], strides=(s, s), pads_begin=(pad, pad), pads_end=(pad, pad), kernel=(3, 3)
        )  # the values-only kernel
        np.testing.assert_array_equal(values, want[0], err_msg=str(attrs))
        for exclude in (True, False):
            avg = {
                "strides": (s, s),
                "pads_begin": (pad, pad),
                "pads_end": (pad, pad),
                "kernel": (3, 3),
                "exclude-pad": exclude,
            }
            (g,) = run_op("AvgPool", "opset1", [x], **avg)
            config.JIT = "never"
            (w,) = run_op("AvgPool", "opset1", [x], **avg)
            config.JIT = "always"
            close(g, w.astype(np.float64), rtol=1e-6 if dtype == np.float32 else 1e-15, atol=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_pool_values_kernel_is_the_indexed_kernels_values(kernels, dtype):
    """The values-only MaxPool kernel (MaxPool-1, and MaxPool-8/14 whose indices nothing reads)
    gives the indexed kernel's values: every window geometry, NaN inside and on borders (a zero
    maximum held as both +0 and -0 may take the other sign: the two compare equal)."""
    from irexec.geometry import Window2d
    from irexec.kernels import pool_loops as k

    x = R.standard_normal((3, 12, 11)).astype(dtype)
    x[0, 5, 5] = np.nan
    x[1, 0, 0] = np.nan
    x[2, 11, 10] = np.nan
    for kh, kw, s, d, pt, pl in itertools.product((2, 3), (1, 3), (1, 2, 3), (1, 2), (0, 1), (0, 2)):
        oh = (12 + 2 * pt - d * (kh - 1) - 1) // s + 1
        ow = (11 + 2 * pl - d * (kw - 1) - 1) // s + 1
        want = np.empty((3, oh, ow), dtype)
        g = Window2d(kh, kw, s, s, d, d, pt, pl, pt, pl)
        k.max_pool2d(0, 3, x, want, np.empty((3, oh, ow), np.int64), g, 1, 0)
        got = np.full((3, oh, ow), 7.0, dtype)
        k.max_pool2d_values(0, 3, x, got, g)
        np.testing.assert_array_equal(got, want, err_msg=str((kh, kw, s, d, pt, pl)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "mask_kind,mask_shape",
    [
        ("bool", (6, 9)),  # a causal-like mask: the masked tail is not computed
        ("bool_inf", (6, 9)),  # the same, with infinite scores in rows it keeps a prefix of
        ("bool", (2, 1, 6, 9)),  # one mask per batch, broadcast over the heads
        ("bool", (9,)),  # one row for every query
        ("float", (1, 1, 6, 9)),
        ("float", (6, 1)),  # one value per query, broadcast over the keys
        ("float16", (3, 6, 9)),  # per head, widened to float32
        ("float", ()),  # one value for every score (wav2vec2's zero mask)
    ],
)
def test_attention_masked_softmax_kernel_matches_the_numpy_path(kernels, dtype, mask_kind, mask_shape):
    """Scale, an attention mask and softmax fused in one kernel pass give the numpy path's
    numbers, with broadcast masks, -inf in a float mask, a fully masked row (NaN, as numpy) and
    a NaN score."""
    q, k, v = (R.standard_normal(s).astype(dtype) for s in ((2, 3, 6, 8), (2, 3, 9, 8), (2, 3, 9, 5)))
    q[1, 2, 0, 0] = np.nan
    if mask_kind == "bool_inf":  # one -inf and one +inf score among the kept ones, one -inf query
        k[0, 1, 1, 0] = -np.inf
        q[0, 1, 4] = -np.inf
    if mask_kind.startswith("bool"):
        mask = R.random(mask_shape) < 0.6
        if len(mask_shape) == 2:
            mask = np.tril(np.ones(mask_shape, bool), 2)
            mask[3] = False  # a fully masked row
    else:
        mask = R.standard_normal(mask_shape).astype(np.float16 if mask_kind == "float16" else dtype)
        if mask.ndim:
            mask.reshape(-1)[::4] = -np.inf
    inputs = [q, k, v, mask, np.array(0.3, dtype)]
    (got,) = run_op("ScaledDotProductAttention", "opset13", inputs, const=())
    config.JIT = "never"
    (want,) = run_op("ScaledDotProductAttention", "opset13", inputs, const=())
    config.JIT = "always"
    assert got.dtype == want.dtype == dtype
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    # both against a float64 softmax: each output sums its rows' weighted values, so a few
    # roundings of the type (the scores, exp, the normalization, the sum) relative to the terms'
    # magnitudes, sum |p| |v|, bound its error (the two paths' orders differ: their difference
    # is up to twice that, above a fixed atol of 1e-7 at outputs near 0.5 on some machines)
    q64, k64, v64 = (a.astype(np.float64) for a in (q, k, v))
    with np.errstate(invalid="ignore"):  # inf - inf in the scores of the infinite cases
        scores = q64 @ np.swapaxes(k64, -1, -2) * 0.3
        scores = np.where(mask, scores, -np.inf) if mask.dtype == bool else scores + mask.astype(np.float64)
        e = np.exp(scores - scores.max(-1, keepdims=True))
        p = e / e.sum(-1, keepdims=True)
    ref, size = p @ v64, np.nan_to_num(p) @ np.abs(v64)
    bound = 8 * np.finfo(dtype).eps * size
    known = np.isfinite(ref)
    assert known.sum() >= ref.size // 2  # the NaN rows (masked, NaN or infinite scores) are the fewer
    for path in (got, want):
        assert (np.abs(path.astype(np.float64) - ref)[known] <= bound[known]).all()
    assert (np.abs(got.astype(np.float64) - want)[known] <= 2 * bound[known]).all()


@pytest.mark.parametrize("length", [6, 150])  # the register rows' case; the query blocks'
def test_attention_mask_with_batch_items_of_its_own_broadcasts(kernels, length):
    """A mask whose batch dims widen the scores' ((3, 1, L, L) against (1, 2, L, L)) is left to
    the whole-tensor paths, which broadcast it: the numpy path's result, (3, 2, L, 5) (the
    kernels' mask rows had raised a broadcast error)."""
    q, k, v = (
        R.standard_normal(s).astype(np.float32) for s in ((1, 2, length, 8), (1, 2, length, 8), (1, 2, length, 5))
    )
    mask = R.standard_normal((3, 1, length, length)).astype(np.float32)
    (got,) = run_op("ScaledDotProductAttention", "opset13", [q, k, v, mask], const=())
    config.JIT = "never"
    (want,) = run_op("ScaledDotProductAttention", "opset13", [q, k, v, mask], const=())
    config.JIT = "always"
    assert got.shape == want.shape == (3, 2, length, 5)
    close(got, want.astype(np.float64), rtol=1e-6, atol=1e-7)


def test_large_float_mask_in_another_order_gives_the_contiguous_masks_bits(kernels):
    """A float mask above the memo's size (`FLOAT_MEMO_MAX_BYTES`: its rows taken afresh each
    call) given as a transposed view, as T5's position bias arrives: the bits of the same mask
    contiguous, a second call with other values in the same buffer included (nothing of the
    first call's mask is remembered); and a Select whose condition is uniform hands such a view
    on as a C-contiguous array of the same values."""
    from irexec.kernels import attention as ka

    length = 128  # a condition of UNIFORM_MIN elements: Select checks it for one value
    q, k, v = (R.standard_normal((1, 4, length, 8)).astype(np.float32) for _ in range(3))
    base = R.standard_normal((1, length, length, 4)).astype(np.float32)
    base[..., ::5, :] = -np.inf
    view = base.transpose(0, 3, 1, 2)
    assert view.nbytes > ka.FLOAT_MEMO_MAX_BYTES and not view.flags.c_contiguous
    for _ in range(2):
        (got,) = run_op("ScaledDotProductAttention", "opset13", [q, k, v, view], const=())
        (want,) = run_op("ScaledDotProductAttention", "opset13", [q, k, v, np.ascontiguousarray(view)], const=())
        np.testing.assert_array_equal(got, want)
        base *= np.float32(1.5)
    keep = np.ones((1, 1, length, length), bool)
    (picked,) = run_op("Select", "opset1", [keep, view, np.array(-np.inf, np.float32)], const=())
    assert picked.flags.c_contiguous
    np.testing.assert_array_equal(picked, view)


def _answers(monkeypatch, target: str, real) -> list[bool]:
    """Replace `target` (real) with a spy: the list of whether each call answered (not None)."""
    calls: list[bool] = []

    def spy(*args):
        y = real(*args)
        calls.append(y is not None)
        return y

    monkeypatch.setattr(target, spy)
    return calls


@pytest.mark.parametrize("block", [None, 2048])  # one block per batch item; blocks of 15-16 queries
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "lq,lk,mask_kind",
    [
        (150, 130, None),
        (150, 130, "causal"),  # L > S: the last queries keep every key
        (120, 170, "causal"),  # L < S: no query keeps the last keys (they are not computed)
        (150, 130, "tril"),  # a boolean causal mask, one fully masked row
        (150, 130, "bool"),
        (150, 130, "float"),  # per batch item, with -inf
        (150, 130, "zero"),  # a 0-d float mask
    ],
)
def test_blocked_attention_matches_the_numpy_path(kernels, monkeypatch, block, dtype, lq, lk, mask_kind):
    """Long sequences go by query blocks (scores, fused softmax and weighted sum per block, the
    keys no query of a block keeps skipped), with the kernels and in numpy: the whole-tensor
    numpy path's numbers, NaN included."""
    from irexec.kernels import attention as ka

    if block:
        monkeypatch.setattr(ka, "BLOCK_SCORES", block)
        monkeypatch.setattr(ka, "NUMPY_BLOCK_SCORES", block // 2)
        # the float32 rows' exponentials unnormalized, each block's product scaled after
        monkeypatch.setattr(ka, "UNNORMALIZED_MIN_SCORES", 1)
    # the BLAS blocks: the register rows, which float32 heads this narrow take, turned off
    # (test_register_attention_rows_against_float64 has them)
    monkeypatch.setattr(ka, "SIMD_MAX_E", 0)
    q, k, v = (R.standard_normal(s).astype(dtype) for s in ((2, 3, lq, 24), (2, 3, lk, 24), (2, 3, lk, 5)))
    q[1, 2, 7, 0] = np.nan
    inputs = [q, k, v]
    if mask_kind == "tril":
        m = np.tril(np.ones((lq, lk), bool))
        m[20] = False
        inputs.append(m[None, None])
    elif mask_kind == "bool":
        inputs.append(R.random((2, 1, lq, lk)) < 0.5)
    elif mask_kind == "float":
        m = R.standard_normal((2, 1, lq, lk)).astype(dtype)
        m[..., ::3] = -np.inf
        inputs.append(m)
    elif mask_kind == "zero":
        inputs.append(np.zeros((), dtype))
    if len(inputs) == 4:
        inputs.append(np.array(0.3, dtype))
    causal = mask_kind == "causal"
    calls = _answers(monkeypatch, "irexec.ops.attention.attention", ka.attention)
    (got,) = run_op("ScaledDotProductAttention", "opset13", inputs, const=(), causal=causal)
    assert calls == [True]  # the blocked path ran
    config.JIT = "never"
    numpy_calls = []
    real_numpy = ka.attention_numpy
    monkeypatch.setattr("irexec.ops.attention.attention_numpy", lambda *a: numpy_calls.append(1) or real_numpy(*a))
    (got_numpy,) = run_op("ScaledDotProductAttention", "opset13", inputs, const=(), causal=causal)
    assert numpy_calls and real_numpy(*inputs[:3], 0.3, causal, None, dtype) is not None  # it ran
    monkeypatch.setattr("irexec.ops.attention.attention_numpy", lambda *a: None)
    (want,) = run_op("ScaledDotProductAttention", "opset13", inputs, const=(), causal=causal)
    config.JIT = "always"
    for y in (got, got_numpy):
        assert y.dtype == want.dtype == dtype
        np.testing.assert_array_equal(np.isnan(y), np.isnan(want))
        close(y, want.astype(np.float64), rtol=1e-6 if dtype == np.float32 else 1e-13, atol=1e-6)


def _attention64(q, k, v, scale, keep, added=None, bound=False):
    """softmax(q k^T * scale [+ added]) v in float64, row r of batch item b keeping its first
    keep[b, r] keys (the oracle of the register rows). With `bound`, also the most that
    float32 scores can move each output: a score of E products rounded in float32 is within
    E 2^-24 sum_d |q_d k_d| |scale| of q.k * scale, and softmax moves p_j by p_j (ds_j -
    sum_i p_i ds_i) under such errors, so an output by at most 2 max_j ds_j sum_j p_j |v_j|."""
    kept = np.arange(k.shape[-2]) < keep[..., None]
    s = np.einsum("...le,...se->...ls", q.astype(np.float64), k.astype(np.float64)) * scale
    with np.errstate(invalid="ignore"):  # the NaN and infinite rows (inf + -inf: NaN)
        if added is not None:
            s = s + added.astype(np.float64)
        s = np.where(kept, s, -np.inf)
        p = softmax64(s, -1)
        y = np.einsum("...ls,...se->...le", p, v.astype(np.float64))
        if not bound:
            return y
        a = np.einsum("...le,...se->...ls", np.abs(q.astype(np.float64)), np.abs(k.astype(np.float64)))
        ds = np.where(kept & (s > -np.inf), a, 0.0).max(-1) * abs(scale) * q.shape[-1] * 2.0**-24
        return y, 2 * ds[..., None] * np.einsum("...ls,...se->...le", p, np.abs(v.astype(np.float64)))


def _close_but_for_scores(got, want, moved, times):
    """got within 1e-5 |want| + 2e-6 of want, plus `times` x `moved` (what float32 scores can
    move an output: `_attention64`'s bound) where that is finite."""
    allowed = 1e-5 * np.abs(want) + 2e-6 + times * np.nan_to_num(moved, nan=0.0, posinf=0.0)
    ok = np.isnan(want) | (np.abs(got - want) <= allowed)
    assert ok.all(), (np.argwhere(~ok)[:5], got[~ok][:5], want[~ok][:5], allowed[~ok][:5])


@pytest.mark.parametrize("e,ev", [(8, 8), (16, 16), (12, 13), (3, 5), (32, 5), (64, 64), (33, 48)])
@pytest.mark.parametrize("mask_kind", [None, "causal", "causal_wide", "padding", "float"])
def test_register_attention_rows_against_float64(kernels, monkeypatch, e, ev, mask_kind):
    """float32 heads of up to 64 embeddings go by the register rows (eight query rows at a
    time: scores, softmax and the weighted values with their sums in 16-lane registers): no
    mask, causal with more queries than keys and fewer, a boolean padding mask (a different
    prefix per batch item) and a float mask with -inf keys and a row of them; query and value
    widths that fill no whole 16 lanes, 64 values a tile and the rest 16 at a time, a last
    group of 6 rows and of 2 (150 and 130 queries); against float64 and against the numpy
    path, a NaN query row and an infinite key included (their rows take the general softmax:
    NaN, as numpy)."""
    from irexec.kernels import attention as ka

    lq, lk = (130, 150) if mask_kind == "causal_wide" else (150, 130)
    q, k, v = (R.standard_normal(s).astype(np.float32) for s in ((2, 3, lq, e), (2, 3, lk, e), (2, 3, lk, ev)))
    q[1, 2, 7, 0] = np.nan
    k[0, 1, 100, 0] = np.inf  # the rows keeping key 100: +-inf scores
    inputs = [q, k, v]
    keep = np.broadcast_to(np.int64(lk), (2, 3, lq))
    added = None
    if mask_kind in ("causal", "causal_wide"):
        keep = np.broadcast_to(np.minimum(lk, np.arange(1, lq + 1)), (2, 3, lq))
    elif mask_kind == "padding":
        lengths = np.array([lk, 37])
        inputs += [(np.arange(lk) < lengths[:, None])[:, None, None, :], np.array(0.3, np.float32)]
        keep = np.broadcast_to(lengths[:, None, None], (2, 3, lq))
    elif mask_kind == "float":
        added = R.standard_normal((2, 1, lq, lk)).astype(np.float32)
        added[..., ::3] = -np.inf
        added[0, 0, 5] = -np.inf  # a row of -inf everywhere: NaN
        added[1, 0, 9, 120:] = -np.inf  # a masked tail
        inputs += [added, np.array(0.3, np.float32)]
    scale = 0.3 if mask_kind in ("padding", "float") else 1 / math.sqrt(e)
    calls = _answers(monkeypatch, "irexec.kernels.attention._simd", ka._simd)
    causal = mask_kind in ("causal", "causal_wide")
    (got,) = run_op("ScaledDotProductAttention", "opset13", inputs, const=(), causal=causal)
    assert calls == [True]  # the register rows ran
    # the sums sized for AVX2 (`jit.wide_vectors` False: eight registers each) add the same
    # products in the same order: the same bits
    monkeypatch.setattr(jit, "wide_vectors", lambda: False)
    (narrow,) = run_op("ScaledDotProductAttention", "opset13", inputs, const=(), causal=causal)
    assert calls == [True, True]
    np.testing.assert_array_equal(narrow, got)
    want, moved = _attention64(q, k, v, scale, keep, added, bound=True)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    _close_but_for_scores(got, want, moved, 1)
    config.JIT = "never"
    (numpy_path,) = run_op("ScaledDotProductAttention", "opset13", inputs, const=(), causal=causal)
    config.JIT = "always"
    np.testing.assert_array_equal(np.isnan(got), np.isnan(numpy_path))
    # both round their scores in float32, each within the bound
    _close_but_for_scores(got, numpy_path.astype(np.float64), moved, 2)


def test_warm_calls_the_attention_kernels_with_a_models_constants(kernels, monkeypatch, tmp_path):
    """A model's constant float mask reaches the attention kernels read-only (the plan's
    constants are; above FLOAT_MEMO_MAX_BYTES it is not copied), a type numba compiles apart:
    warm() (what `irexec warmup` compiles) calls the register rows and the masked softmax rows
    with it too, and a constant query (and a single causal head's key counts, computed per
    call) reach the register rows writable, so a model's run loads them from the cache instead
    of compiling (a Swin's shifted windows compiled for 9 s on their first call). Recorded
    without compiling: the kernels replaced by recorders during warm(), then a model of the
    four cases."""
    from irexec.kernels import attention as ka
    from irexec.kernels import normalize_loops as nl
    from tests.support.irbuild import Net
    from tests.support.recorders import writability

    names = ("attention_simd_rows", "attention_masked_rows")
    seen, phase = writability(monkeypatch, nl, names)
    nl.warm()
    phase[0] = "model"
    n = Net("attention")
    big = R.standard_normal((1, 2, 64, 64)).astype(np.float32)
    assert big.nbytes > ka.FLOAT_MEMO_MAX_BYTES
    for e, q_const in ((16, False), (80, False), (16, True)):  # register rows; whole scores; a constant q
        q = (
            n.const(R.standard_normal((1, 2, 64, e)).astype(np.float32))
            if q_const
            else n.param(f"q{e}", "f32", (1, 2, 64, e))
        )
        k, v = (n.param(f"{t}{e}{q_const}", "f32", (1, 2, 64, e)) for t in "kv")
        y = n.op(
            "ScaledDotProductAttention",
            [q, k, v, n.const(big)],
            {"causal": "false"},
            version="opset13",
            out_dims=[1, 2, 64, e],
        )
        n.result(y, f"y{e}{q_const}")
    # one head, causal: each row's count of keys kept, computed per call, reaches the kernel too
    qkv = [n.param(f"{t}1", "f32", (1, 1, 64, 16)) for t in "qkv"]
    y = n.op("ScaledDotProductAttention", qkv, {"causal": "true"}, version="opset13", out_dims=[1, 1, 64, 16])
    n.result(y, "causal")
    m = irexec.load(n.save(tmp_path / "attention.xml"))
    feeds = {i.name: R.standard_normal(i.shape).astype(np.float32) for i in m.inputs}
    m.infer(feeds)
    assert {name for name, _ in seen["model"]} == set(names)
    assert any(not all(flags) for _, flags in seen["model"])  # the read-only mask did reach them
    assert seen["model"] <= seen["warm"], seen["model"] - seen["warm"]


@pytest.mark.parametrize("causal", [False, True])
def test_register_attention_splits_few_heads_among_threads(kernels, causal):
    """One head on two threads: each takes every other group of eight query rows (its own copy
    of the transposed keys); the same numbers as float64 gives, and as one thread."""
    from irexec.kernels import attention as ka

    q, k, v = (R.standard_normal((1, 67, 16)).astype(np.float32) for _ in range(3))
    keep = np.minimum(67, np.arange(1, 68))[None] if causal else np.full((1, 67), 67)
    want = _attention64(q, k, v, 0.25, keep)
    two = ka._simd(q, k, v, 0.25, causal, None, None, 2)
    close(two, want, rtol=1e-5, atol=2e-6)
    np.testing.assert_array_equal(two, ka._simd(q, k, v, 0.25, causal, None, None, 1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_attention_softmax_kernel_matches_the_numpy_path(kernels, dtype):
    """Scale, causal mask and softmax fused in one kernel pass give the numpy path's numbers
    (the same float64 operations), with a scale input, causal L < S and L > S, and a NaN score."""
    for lq, lk, causal, with_scale in ((6, 9, True, False), (9, 6, True, True), (7, 7, False, True)):
        q, k, v = (R.standard_normal(s).astype(dtype) for s in ((2, 3, lq, 8), (2, 3, lk, 8), (2, 3, lk, 5)))
        inputs = [q, k, v]
        if with_scale:
            inputs += [np.zeros((), dtype), np.array(0.3, dtype)]  # a float mask of zeros, then the scale
            if causal:
                inputs[3] = np.zeros((lq, lk), dtype)
        q[1, 2, 0, 0] = np.nan
        (got,) = run_op("ScaledDotProductAttention", "opset13", inputs, const=(), causal=causal)
        config.JIT = "never"
        (want,) = run_op("ScaledDotProductAttention", "opset13", inputs, const=(), causal=causal)
        config.JIT = "always"
        assert got.dtype == want.dtype == dtype
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        close(got, want.astype(np.float64), rtol=1e-6 if dtype == np.float32 else 1e-13, atol=1e-7)


def test_attention_mask_bounds_against_a_scan(kernels):
    """Each boolean mask row's one-past-last kept key and, for a row that keeps exactly its
    first keys, that count (-1 otherwise), against numpy's scan of the row: causal and padding
    masks, rows keeping nothing or everything, a key kept past a masked one, random rows, and
    lengths that are not whole 8-byte words (the kernel reads words)."""
    from irexec.kernels.attention import MaskRows, _bounds

    def want(rows):
        kept = [np.flatnonzero(r) for r in rows]
        last = np.array([k[-1] + 1 if k.size else 0 for k in kept])
        prefix = np.array([k.size if np.array_equal(k, np.arange(k.size)) else -1 for k in kept])
        return prefix, last

    causal = np.tril(np.ones((70, 70), bool))
    causal[5, 69] = True  # a key kept after the masked ones
    causal[9, 2] = False  # a hole in the kept prefix
    padding = np.ones((6, 21), bool)
    padding[:, 13:] = False
    padding[2, 20] = True
    cases = [causal, padding, np.zeros((3, 16), bool), np.ones((3, 9), bool), R.random((50, 37)) > 0.5]
    cases += [np.tril(np.ones((64, 64), bool)), R.random((8, 64)) > 0.9]
    for rows in cases:
        prefix, last = _bounds(MaskRows(rows, np.arange(rows.shape[0]), True))
        want_prefix, want_last = want(rows)
        np.testing.assert_array_equal(prefix, want_prefix, err_msg=str(rows.shape))
        np.testing.assert_array_equal(last, want_last, err_msg=str(rows.shape))


def test_attention_prepared_masks_follow_the_masks_bytes(kernels):
    """A mask prepared once serves a later mask of the same shape, type and bytes (another array
    too); a mask written in place, or of other bytes, is prepared again; the prepared rows
    never alias the caller's array; each score row's kept prefix is there when every row keeps
    one; a mask that is not contiguous is served by its bytes too. SDPA on each mask gives the
    numpy path's values."""
    from irexec.kernels import attention as A

    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((1, 4, 64, 8)).astype(np.float32) for _ in range(3))
    mask = np.tril(np.ones((1, 1, 64, 64), bool))
    first = A.prepared_mask(mask, (1, 4), 64, 64)
    assert not np.may_share_memory(first[0].rows, mask)
    # a causal mask: every row a prefix, each score row's own for the register rows
    np.testing.assert_array_equal(first.keep, np.tile(np.arange(1, 65), 4))
    again = A.prepared_mask(mask.copy(), (1, 4), 64, 64)  # another array, the same bytes
    assert all(x is y for x, y in zip(first, again))
    mask[0, 0, 10, 30:39] = True  # written in place: no longer the prepared mask
    changed = A.prepared_mask(mask, (1, 4), 64, 64)
    assert changed[0] is not first[0] and changed.keep is None  # row 10 is no prefix now
    np.testing.assert_array_equal(changed[0].rows, mask.reshape(64, 64))
    fresh = A.mask_rows(mask, (1, 4), 64, 64)
    for got, want in zip(changed[1:], A._bounds(fresh)):
        np.testing.assert_array_equal(got, want)
    # not contiguous: prepared from a copy, then served by the copy's bytes; the rows never
    # alias the caller's array, which may change
    wide = np.ones((1, 1, 64, 128), bool)
    strided = wide[..., ::2]
    once = A.prepared_mask(strided, (1, 4), 64, 64)
    assert once[0] is A.prepared_mask(strided, (1, 4), 64, 64)[0]
    assert not np.may_share_memory(once[0].rows, wide)
    wide[0, 0, 5, 60:] = False  # columns 30.. of the view: its row 5 keeps 30 keys now
    again = A.prepared_mask(strided, (1, 4), 64, 64)
    assert again[0] is not once[0] and again.keep[5] == 30 and once.keep[5] == 64
    for m in (np.tril(np.ones((1, 1, 64, 64), bool)), mask, rng.random((1, 1, 64, 64)) > 0.3):
        for _ in range(2):  # prepared, then served from the memo
            (got,) = run_op("ScaledDotProductAttention", "opset13", [q, k, v, m])
            config.JIT = "never"
            (want,) = run_op("ScaledDotProductAttention", "opset13", [q, k, v, m])
            config.JIT = "always"
            close(got, want.astype(np.float64), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("scale", [-0.7, 0.0, 0.3, float(np.float32(-0.7)), float(np.float32(0.3)), 1.0])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_float32_softmax_against_float64(kernels, scale, causal):
    """The float32 attention softmax (float32 exponentials, the max taken on the raw scores and
    scaled once, the minimum for a negative scale) against the float64 softmax, with large score
    magnitudes and a zero scale (every score equal); scales that are float32 values take the
    arguments by a float32 multiply-add (`attention.fma_scale`), the others in float64. Each
    probability p = exp(a) / sum, a the score minus the max, is within 3 float32 ulps plus the
    rounding of a to float32 (relative |a| 2^-24: 40 ulps of a probability near e^-80, 2e-8 at
    most in absolute terms); below e^-87 of the max a probability is 0 (an absolute error under
    1.7e-38)."""
    from irexec.kernels import normalize_loops as kl
    from irexec.kernels.attention import fma_scale

    rows = (R.standard_normal((40, 300)) * 60).astype(np.float32)
    length = rows.shape[0]
    out = np.empty_like(rows)
    fma = fma_scale(rows, scale)
    assert fma == (scale != 0.0 and scale in (float(np.float32(-0.7)), float(np.float32(0.3)), 1.0))
    kl.attention_softmax_rows(0, length, rows, out, scale, causal, length, 0, True, fma, np.empty(0))
    s = rows.astype(np.float64) * scale
    if causal:  # row r is query r: it keeps keys up to r
        s[np.arange(300)[None, :] > np.arange(length)[:, None]] = -np.inf
    want = softmax64(s, -1)
    arg = s - s.max(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        rounding = np.where(np.isfinite(arg), np.abs(arg), 0.0) * 2.0**-24 * want
    ulp = np.spacing(want.astype(np.float32)).astype(np.float64)
    assert np.all(np.abs(out.astype(np.float64) - want) <= 3 * ulp + rounding + 1.7e-38)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_depthwise_convolution_kernel_is_bit_identical_to_the_numpy_path(kernels, dtype):
    """The kernel accumulates tap by tap in the data's type, as the shifted-view loop does:
    strides 1, 2 and 3, dilation, padding, 3x3 and 5x5, batch > 1."""
    for shape, k, s, p, d in (((2, 8, 13, 11), 3, 1, 1, 1), ((1, 12, 9, 9), 5, 2, 2, 1), ((2, 4, 14, 12), 3, 3, 1, 2)):
        x = R.standard_normal(shape).astype(dtype)
        w = R.standard_normal((shape[1], 1, 1, k, k)).astype(dtype)
        attrs = dict(strides=[s, s], dilations=[d, d], pads_begin=[p, p], pads_end=[p, p], auto_pad="explicit")
        (got,) = run_op("GroupConvolution", "opset1", [x, w], **attrs)
        config.JIT = "never"
        (want,) = run_op("GroupConvolution", "opset1", [x, w], **attrs)
        config.JIT = "always"
        np.testing.assert_array_equal(got, want, err_msg=str((shape, k, s, p, d)))
    from irexec.kernels import jit

    assert jit.ready()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_im2col_kernel_gives_the_padded_paths_convolution(kernels, monkeypatch, dtype):
    """Columns written straight from the unpadded input (zeros for the padding) are the padded
    path's columns: the same BLAS product, the same bits. Strides 1-3, dilation, asymmetric
    pads, groups, a 1x1 strided kernel, and a window that reaches only padding. (Convolutions
    this small would sum their taps without columns, `conv._direct`, and float32 ones in
    registers, `conv._simd`: those paths are held off here, and have their own tests in
    tests/test_conv_kernels.py.)"""
    from irexec.kernels import conv

    monkeypatch.setattr(conv, "DIRECT_MAX_OUT", 0)
    monkeypatch.setattr(conv, "_simd", lambda *a: None)
    cases = [
        ((2, 6, 11, 9), (8, 6, 3, 3), dict(strides=[1, 1], dilations=[1, 1], pads_begin=[1, 1], pads_end=[1, 1])),
        ((1, 4, 12, 10), (6, 4, 5, 3), dict(strides=[2, 3], dilations=[1, 2], pads_begin=[2, 0], pads_end=[1, 3])),
        ((1, 3, 7, 7), (5, 3, 1, 1), dict(strides=[2, 2], dilations=[1, 1], pads_begin=[0, 0], pads_end=[0, 0])),
        ((1, 2, 4, 4), (3, 2, 3, 3), dict(strides=[3, 3], dilations=[1, 1], pads_begin=[3, 3], pads_end=[3, 3])),
    ]
    for xs, ws, attrs in cases:
        x, w = R.standard_normal(xs).astype(dtype), R.standard_normal(ws).astype(dtype)
        (got,) = run_op("Convolution", "opset1", [x, w], auto_pad="explicit", **attrs)
        config.JIT = "never"
        (want,) = run_op("Convolution", "opset1", [x, w], auto_pad="explicit", **attrs)
        config.JIT = "always"
        np.testing.assert_array_equal(got, want, err_msg=str(attrs))
    x = R.standard_normal((2, 8, 9, 9)).astype(dtype)
    w = R.standard_normal((2, 3, 4, 3, 3)).astype(dtype)
    attrs = dict(strides=[2, 1], dilations=[1, 1], pads_begin=[1, 1], pads_end=[0, 1], auto_pad="explicit")
    (got,) = run_op("GroupConvolution", "opset1", [x, w], **attrs)
    config.JIT = "never"
    (want,) = run_op("GroupConvolution", "opset1", [x, w], **attrs)
    config.JIT = "always"
    np.testing.assert_array_equal(got, want)


def test_swish_sigmoid_and_gelu_kernels_match_the_numpy_path(kernels):
    """float32 Swish (beta 0.7), Sigmoid, HSwish and HSigmoid: the same float64 formulas with the
    vectorized exp, rounded once; equal to the numpy path's bits but for a rare tie, never more
    than 1 ulp. (Swish with beta 1 and Gelu's erf mode compute in float32, within their swept
    bounds: tests/test_activation_kernels.py.)"""
    x = np.concatenate(
        [
            R.standard_normal(200_000) * 10,
            np.linspace(-110, 110, 20_001),
            [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, 88.0, -88.0, -104.0],
        ]
    ).astype(np.float32)
    runs = [
        ("Sigmoid", "opset1", [x], {}),
        ("Swish", "opset4", [x, np.float32(0.7)], {}),
        ("HSwish", "opset4", [x], {}),
        ("HSigmoid", "opset5", [x], {}),
    ]
    for op, version, inputs, attrs in runs:
        (got,) = run_op(op, version, inputs, **attrs)
        config.JIT = "never"
        (want,) = run_op(op, version, inputs, **attrs)
        config.JIT = "always"
        assert got.dtype == want.dtype == np.float32
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=op)
        both = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got[both]), np.signbit(want[both]), err_msg=op)
        diff = np.abs(got[both].view(np.int32).astype(np.int64) - want[both].view(np.int32))
        assert diff.max() <= 1 and (diff == 0).mean() > 0.9999, (op, diff.max(), (diff != 0).sum())


# ---- FakeQuantize and FakeConvert ------------------------------------------------------------


def fake_quantize64(x, il, ih, ol, oh, levels):
    """FakeQuantize-1 as OpenVINO's reference writes it (fake_quantize.hpp), in Python floats
    (IEEE float64), one element at a time: std::min/std::max bounds, std::nearbyint (half to even,
    Python's round), then n / (levels - 1) * (oh - ol) + ol."""
    arrays = np.broadcast_arrays(*(np.asarray(a, np.float64) for a in (x, il, ih, ol, oh)))
    steps = float(levels - 1)
    out = np.empty(arrays[0].shape)
    for i, (v, lo_in, hi_in, lo_out, hi_out) in enumerate(zip(*(a.reshape(-1).tolist() for a in arrays))):
        low = hi_in if hi_in < lo_in else lo_in  # std::min(il, ih)
        high = hi_in if lo_in < hi_in else lo_in  # std::max(il, ih)
        if v <= low:
            out.flat[i] = lo_out
        elif v > high:
            out.flat[i] = hi_out
        elif v != v:  # NaN: every step gives NaN (also the 0 / 0 of input_low == input_high)
            out.flat[i] = math.nan
        else:
            n = float(round((v - lo_in) / (hi_in - lo_in) * steps))
            out.flat[i] = n / steps * (hi_out - lo_out) + lo_out
    return out


def _fq_case(shape, range_shape, r):
    x = r.uniform(-3, 3, shape)
    il = r.uniform(-2.0, -0.5, range_shape)
    ih = r.uniform(0.5, 2.0, range_shape)
    ol = r.uniform(-5.0, 0.0, range_shape)
    oh = r.uniform(0.1, 5.0, range_shape)
    # input_low > input_high and input_low == input_high in some of the ranges
    flip = r.random(range_shape) < 0.3
    il, ih = np.where(flip, ih, il), np.where(flip, il, ih)
    il = np.where(r.random(range_shape) < 0.15, ih, il)
    # values on the bounds, NaN and infinities
    x.reshape(-1)[:4] = [np.nan, np.inf, -np.inf, 0.0]
    b = np.broadcast_to(il, shape).reshape(-1)
    x.reshape(-1)[4:40:2], x.reshape(-1)[5:41:2] = b[4:40:2], np.broadcast_to(ih, shape).reshape(-1)[5:41:2]
    return x, il, ih, ol, oh


@pytest.mark.parametrize("et", ["f32", "f64", "f16", "bf16"])
@pytest.mark.parametrize("levels", [2, 16, 255, 256, 65536])
def test_fake_quantize_is_the_float64_formula_rounded_once(et, levels):
    """irexec equals the float64 reference exactly: it evaluates the same float64 operations in
    the same order and rounds once to the output type (SPEC). OpenVINO's reference computes in the
    data's type (float32 for f32): it is within a few float32 roundings of this, and can take the
    neighbouring level where float32 lands within its rounding of a half-way point
    (tests/test_ops_openvino.py compares the two)."""
    r = np.random.default_rng(levels)
    dtype = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": np.float32}[et]

    def held(a):
        a = np.asarray(a).astype(dtype)
        return irexec.dtypes.round_bf16(a) if et == "bf16" else a

    for shape, range_shape in (((2, 3, 4, 5), (1, 3, 1, 1)), ((6, 7), ()), ((4, 6), (1, 6)), ((3, 4, 5), (4, 1))):
        x, *ranges = (held(a) for a in _fq_case(shape, range_shape, r))
        (got,) = run_op("FakeQuantize", "opset1", [x, *ranges], types=[et] * 5, levels=levels)
        want = finish(fake_quantize64(x, *ranges, levels), et)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8), err_msg=str((shape, range_shape)))


def test_fake_quantize_ties_bounds_and_specials():
    """The level index rounds half to even; output_low up to min(il, ih), output_high above
    max(il, ih), whichever is input_low; NaN stays NaN."""
    ties = np.float32([0.5, 1.5, 2.5, 3.5, 253.5, 254.5])
    (y,) = run_op("FakeQuantize", "opset1", [ties, *np.float32([0, 255, 0, 255])], levels=256)
    np.testing.assert_array_equal(y, [0, 2, 2, 4, 254, 254])
    x = np.float32([np.nan, np.inf, -np.inf, -1.0, 0.0, 0.25, 0.5, 0.75, 1.0, 1.5])
    (up,) = run_op("FakeQuantize", "opset1", [x, *np.float32([0, 1, -3, 5])], levels=5)
    np.testing.assert_array_equal(up, [np.nan, 5, -3, -3, -3, -1, 1, 3, 5, 5])
    (down,) = run_op("FakeQuantize", "opset1", [x, *np.float32([1, 0, -3, 5])], levels=5)
    np.testing.assert_array_equal(down, [np.nan, 5, -3, -3, -3, 3, 1, -1, -3, 5])
    (flat,) = run_op("FakeQuantize", "opset1", [x, *np.float32([0.5, 0.5, -3, 5])], levels=5)
    np.testing.assert_array_equal(flat, [np.nan, 5, -3, -3, -3, -3, -3, 5, 5, 5])


def test_fake_quantize_kernels_remember_the_table_of_equal_ranges(kernels):
    """The kernels' table of the ranges' constants is remembered by the ranges' values (a
    network's ranges are constants): equal ranges take the same table, other values (the same
    shapes) and other levels their own, each call the numpy path's bits."""
    from irexec.kernels import quantize as kq

    r = np.random.default_rng(8)
    x = r.standard_normal((2, 3, 9, 10)).astype(np.float32)
    per_channel = [np.float32(v) * np.ones((1, 3, 1, 1), np.float32) for v in (-1.0, 1.0, -2.0, 2.0)]
    cases = [
        ([np.float32(v) for v in (-1.0, 1.0, -1.0, 1.0)], 256),
        ([np.float32(v) for v in (-1.5, 0.5, -1.0, 1.0)], 256),  # other values, the same shapes
        ([np.float32(v) for v in (-1.5, 0.5, -1.0, 1.0)], 16),  # other levels
        (per_channel, 256),
        ([p.copy() for p in per_channel], 256),  # equal values, other arrays: the table again
    ]
    kq._operands.clear()
    tables = []
    for ranges, levels in cases:
        (got,) = run_op("FakeQuantize", "opset1", [x, *ranges], levels=levels)
        config.JIT = "never"
        (want,) = run_op("FakeQuantize", "opset1", [x, *ranges], levels=levels)
        config.JIT = "always"
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
        tables.append(list(kq._operands.values())[-1][1])
    assert len(kq._operands) == 4 and tables[4] is tables[3]
    assert len({id(t) for t in tables[:4]}) == 4 and not tables[0].flags.writeable


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fake_quantize_kernels_match_the_numpy_path(kernels, dtype):
    """Both paths compute the same constants and the same float64 operations: the same bits, for
    ranges per tensor, per channel (the rows kernel), along the last axes (the period kernel),
    across several axes, and on a tensor large enough for threads."""
    r = np.random.default_rng(5)
    layouts = [
        ((2, 3, 9, 10), ()),
        ((2, 3, 9, 10), (1, 3, 1, 1)),
        ((2, 3, 9, 10), (3, 1, 1)),
        ((5, 40), (1, 40)),
        ((4, 6, 3), (6, 3)),
        ((4, 6, 3), (1, 6, 1)),
        ((2, 3, 4, 5), (1, 3, 1, 5)),
        ((3, 7), (3, 1)),
        ((1, 64, 112, 112), (1, 64, 1, 1)),
    ]
    for shape, range_shape in layouts:
        x, *ranges = (np.asarray(a).astype(dtype) for a in _fq_case(shape, range_shape, r))
        for levels in (2, 256):
            (got,) = run_op("FakeQuantize", "opset1", [x, *ranges], levels=levels)
            config.JIT = "never"
            (want,) = run_op("FakeQuantize", "opset1", [x, *ranges], levels=levels)
            config.JIT = "always"
            np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8), err_msg=str((shape, range_shape)))
    # every index half-way between two levels: the kernels' shortcut defers to the exact formula
    ties = (np.arange(3 * 40) % 255 + 0.5).astype(dtype)
    bounds = [np.full((1, 3, 1), v, dtype) for v in (0.0, 255.0, -1.0, 1.0)]
    for x in (ties.reshape(1, 3, 40), ties.reshape(10, 3, 4)):
        (got,) = run_op("FakeQuantize", "opset1", [x, *bounds], levels=256)
        config.JIT = "never"
        (want,) = run_op("FakeQuantize", "opset1", [x, *bounds], levels=256)
        config.JIT = "always"
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
        k = np.floor(x.astype(np.float64))
        even = np.where(k % 2 == 0, k, k + 1)  # half to even
        np.testing.assert_array_equal(got, (even / 255 * 2.0 - 1.0).astype(dtype))
    # indices a few units of 2^-53 to 2^-40 from half-way points (where the shortcut's index may
    # round the other way: its bound hands them to the exact formula), and a float64 range so
    # narrow that steps / d is infinite (a non-finite index inside the interval)
    il, d = dtype(-0.75), dtype(2.5)
    half = (np.arange(64) % 255 + 0.5) / 255 * np.float64(d) + np.float64(il)
    offsets = np.float64(d) * np.concatenate([[0.0], 2.0 ** -np.arange(40, 54), -(2.0 ** -np.arange(40, 54))])
    near = (half[:, None] + offsets[None, : 64 // 2]).reshape(-1).astype(dtype)
    cases = [(near.reshape(4, -1), [np.full((4, 1), v, dtype) for v in (il, il + d, -2.0, 3.0)])]
    if dtype == np.float64:
        tiny = np.float64(5e-324)
        cases.append((np.float64([0.0, tiny, 2 * tiny, -tiny, np.nan]), [np.float64(v) for v in (0, tiny, -1, 1)]))
    for x, ranges in cases:
        for levels in (256, 16):
            (got,) = run_op("FakeQuantize", "opset1", [x, *ranges], levels=levels)
            want = fake_quantize64(x, *ranges, levels).astype(dtype)
            np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    from irexec.kernels import jit

    assert jit.ready()


def test_fake_convert_values():
    """OpenVINO's reference rules (kernels/quantize.py): nearest even on the f8 mantissa,
    saturation (f8e4m3 at 448, f8e5m2 at 57344, infinities too), f8e4m3's flush below 2^-9 to +0
    and its truncated subnormals, NaN (f8e5m2 keeps it, f8e4m3 saturates it)."""
    x = np.float32([1.0625, 1.1875, 460.0, -1e6, np.inf, np.nan, -0.0, 0.0019, 0.0029296875, 2.0**-8 * 1.75])
    (e4,) = run_op("FakeConvert", "opset13", [x, np.float32(1.0)], destination_type="f8e4m3")
    np.testing.assert_array_equal(e4, [1.0, 1.25, 448, -448, 448, 448, 0.0, 0.0, 2.0**-9, 2.0**-8 * 1.5])
    assert not np.signbit(e4[6])
    x = np.float32([1.125, 1.375, 60000.0, -np.inf, np.nan, -0.0, 2.0**-16 * 1.5])
    (e5,) = run_op("FakeConvert", "opset13", [x, np.float32(1.0)], destination_type="f8e5m2")
    np.testing.assert_array_equal(e5, [1.0, 1.5, 57344, -57344, np.nan, 0.0, 2.0**-15])
    # scale and shift: (round(x * s - o) + o) / s, in the data's type
    x, s, o = np.float32([3.0]), np.float32(2.0), np.float32(0.5)
    (y,) = run_op("FakeConvert", "opset13", [x, s, o], destination_type="f8e4m3")
    np.testing.assert_array_equal(y, [(5.5 + 0.5) / 2.0])


def test_fake_convert_half_types_round_each_step():
    """f16 rounds every step to f16 (OpenVINO's float16 arithmetic); bf16 to bf16, nearest even."""
    r = np.random.default_rng(6)
    x = r.standard_normal(2000).astype(np.float32) * 4
    for et, held, to in (
        ("f16", lambda a: np.asarray(a, np.float16), lambda a: np.asarray(a, np.float16)),
        ("bf16", irexec.dtypes.round_bf16, irexec.dtypes.round_bf16),
    ):
        xs, s, o = held(x), held(np.float32(1.7)), held(np.float32(0.3))
        (got,) = run_op("FakeConvert", "opset13", [xs, s, o], types=[et] * 3, destination_type="f8e5m2")
        y = to(to(xs.astype(np.float32) * np.float32(s)) - np.float32(o)).astype(np.float32)
        (z,) = run_op("FakeConvert", "opset13", [y, np.float32(1.0)], destination_type="f8e5m2")
        want = to(to(z + np.float32(o)) / np.float32(s))
        np.testing.assert_array_equal(np.asarray(got, np.float32), np.asarray(want, np.float32), err_msg=et)


def test_quantize_shape_rules_and_errors():
    x = np.ones((2, 3, 4), np.float32)
    r = np.float32(0.0), np.float32(1.0), np.float32(0.0), np.float32(1.0)
    for levels in (0, 1):
        with pytest.raises(irexec.FormatError, match="levels"):
            run_op("FakeQuantize", "opset1", [x, *r], levels=levels)
    with pytest.raises(irexec.ShapeInferenceError, match="input_high"):  # would enlarge the output
        run_op("FakeQuantize", "opset1", [x, r[0], np.ones((5, 1, 1, 1), np.float32), *r[2:]], levels=3)
    with pytest.raises(irexec.ShapeInferenceError):
        run_op("FakeQuantize", "opset1", [x, np.zeros((1, 3), np.float32), *r[1:]], levels=3)
    with pytest.raises(irexec.UnsupportedDtypeError):
        run_op("FakeQuantize", "opset1", [x.astype(np.int32), *r], levels=3)
    (pd,) = run_op("FakeQuantize", "opset1", [x, np.zeros((2, 3), np.float32), *r[1:]], levels=3, auto_broadcast="pdpd")
    (nn,) = run_op("FakeQuantize", "opset1", [x, *(np.full(x.shape, v) for v in r)], levels=3, auto_broadcast="none")
    np.testing.assert_array_equal(pd, nn)
    with pytest.raises(irexec.ShapeInferenceError):
        run_op("FakeQuantize", "opset1", [x, *r], levels=3, auto_broadcast="none")
    s = np.float32(2.0)
    with pytest.raises(irexec.FormatError):  # a destination OpenVINO does not define for it
        run_op("FakeConvert", "opset13", [x, s], destination_type="f8e8m0")
    with pytest.raises(irexec.FormatError):  # mixed element types
        run_op("FakeConvert", "opset13", [x, np.float16(2.0)], destination_type="f8e4m3")
    with pytest.raises(irexec.UnsupportedDtypeError):
        run_op("FakeConvert", "opset13", [x.astype(np.float64), np.float64(2.0)], destination_type="f8e4m3")
    with pytest.raises(irexec.ShapeInferenceError, match="one shape"):
        run_op("FakeConvert", "opset13", [x, np.ones(4, np.float32), np.float32(0)], destination_type="f8e4m3")
    with pytest.raises(irexec.ShapeInferenceError):
        run_op("FakeConvert", "opset13", [x, np.ones((1, 2, 3, 4), np.float32)], destination_type="f8e4m3")
