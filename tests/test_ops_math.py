"""Math, type and random ops: Acosh/Asinh/Atanh-4, ErfInv-17, BitwiseLeftShift/RightShift-15,
ConvertPromoteTypes-14, Inverse-14, Eye-9, GroupedMatMul-17, RandomUniform-8, Multinomial-13.

Oracles: OpenVINO (tests/support/ovcheck.py: every layer's shape and type as read_model infers
them, static and dynamic inputs, validate clean, values as the CPU plugin computes them, bit for
bit where the test says rtol=0), OpenVINO's reference implementation (Node.evaluate) where the
CPU plugin departs, and float64 numpy / Python's math / Python integers where neither can run (ErfInv's
reference, GroupedMatMul, 64-bit shifts). The departures are listed in the modules' docstrings
(irexec/ops/mathx.py, elementwise.py, linalg.py).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import irexec
from irexec.errors import ExecutionError, FormatError, ShapeInferenceError, UnsupportedDtypeError
from irexec.kernels import random as rnd
from irexec.ops.single import infer_op, run_op
from irexec.shapes import TensorSpec
from tests.support import ov_corpus as corpus
from tests.support import ovcheck as oc

OPS_TESTED = [
    ("Acosh", "opset4"),
    ("Asinh", "opset4"),
    ("Atanh", "opset4"),
    ("ErfInv", "opset17"),
    ("BitwiseLeftShift", "opset15"),
    ("BitwiseRightShift", "opset15"),
    ("ConvertPromoteTypes", "opset14"),
    ("Inverse", "opset14"),
    ("Eye", "opset9"),
    ("GroupedMatMul", "opset17"),
    ("RandomUniform", "opset8"),
    ("Multinomial", "opset13"),
]

SEED = 20261125


def ops(v):
    return oc.ops(v)


def dyn(shape, dynamic):
    return tuple(None for _ in shape) if dynamic else shape


def cpu_once(model_outputs, params=(), feeds=None, n=1):
    """OpenVINO CPU's outputs for `n` inferences of one compiled model (f32 precision)."""
    ovm = oc.ov()
    model = ovm.Model([o if hasattr(o, "get_node") else o.output(0) for o in model_outputs], list(params))
    compiled = ovm.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    req = compiled.create_infer_request()
    runs = []
    for _ in range(n):
        req.infer(feeds or {})
        runs.append([req.get_output_tensor(i).data.copy() for i in range(len(model_outputs))])
    return runs


# ---- Acosh / Asinh / Atanh ------------------------------------------------------------------------------


@pytest.mark.parametrize("dynamic", [False, True])
def test_hyperbolic_float_against_openvino(tmp_path, dynamic):
    o = ops(4)
    rng = np.random.default_rng(SEED)
    shape = (3, 17)
    x = oc.param("x", dyn(shape, dynamic))
    u = oc.param("u", dyn(shape, dynamic))
    xs = rng.uniform(-30, 30, shape).astype(np.float32)
    xs.reshape(-1)[:6] = [0.0, -0.0, 1.0, np.inf, -np.inf, np.nan]
    us = rng.uniform(-1.2, 1.2, shape).astype(np.float32)
    us.reshape(-1)[:5] = [1.0, -1.0, 0.0, 0.999999, np.nan]
    feeds = {"x": xs, "u": us}
    oc.check(tmp_path, [x, u], [o.acosh(x), o.asinh(x), o.atanh(u), o.acosh(o.abs(u))], feeds, rtol=3e-7, atol=0)


@pytest.mark.parametrize("et", ["f64", "f16"])
def test_hyperbolic_against_float64(et):
    dtype = {"f64": np.float64, "f16": np.float16}[et]
    x = np.linspace(-5, 5, 201).astype(dtype)
    for op, fn in (("Acosh", np.arccosh), ("Asinh", np.arcsinh), ("Atanh", np.arctanh)):
        got = run_op(op, "opset4", [x])[0]
        with np.errstate(all="ignore"):
            want = fn(x.astype(np.float64)).astype(dtype)  # float64, rounded once
        np.testing.assert_array_equal(got, want, err_msg=op)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_hyperbolic_integers_follow_the_reference(tmp_path, dtype):
    """The CPU plugin converts float results with saturation; the reference rounds half away,
    gives the minimum for NaN (acosh of x < 1) and +-max for atanh: irexec is checked against
    the reference, and for shapes against OpenVINO."""
    o = ops(4)
    xs = np.array([-100, -5, -2, -1, 0, 1, 2, 3, 10, 54, 100, 2**30], dtype)
    x = oc.param("x", xs.shape, dtype)
    nodes = [o.acosh(x), o.asinh(x), o.atanh(x)]
    oc.check(tmp_path, [x], nodes, {"x": xs}, values=False)
    for node, name in zip(nodes, ("Acosh", "Asinh", "Atanh")):
        want = oc.reference(node, {"x": xs})
        np.testing.assert_array_equal(run_op(name, "opset4", [xs])[0], want, err_msg=name)


# ---- ErfInv ------------------------------------------------------------------------------------------------


def erfinv_reference(x: np.ndarray) -> np.ndarray:
    """erfinv by bisection on Python's float64 erf (erfc of 1 - |x| near 1, where erf saturates):
    an oracle independent of any erfinv approximation."""

    def one(v: float) -> float:
        if v == 0:
            return v
        a, b = 0.0, 6.0
        target, tail = abs(v), abs(v) > 0.5
        for _ in range(200):
            mid = (a + b) / 2
            above = math.erfc(mid) < 1 - target if tail else math.erf(mid) > target
            a, b = (a, mid) if above else (mid, b)
        return math.copysign((a + b) / 2, v)

    return np.array([one(float(v)) for v in np.ravel(x)]).reshape(np.shape(x))


def test_erfinv_against_a_bisection_of_erf_and_special_values():
    erfinv = erfinv_reference
    rng = np.random.default_rng(SEED + 1)
    near_one = 1 - np.logspace(-7.3, -1, 300)
    x = np.concatenate([rng.uniform(-1, 1, 3000), np.linspace(-0.5, 0.5, 101), [1e-30, -1e-8], near_one, -near_one])
    got = run_op("ErfInv", "opset17", [x])[0]
    # Giles' single-precision approximation: below 2e-7 relative of the true erfinv over float32's
    # range (OpenVINO's tail coefficient sign error would be 5e-3 off above |x| = 0.9966)
    np.testing.assert_allclose(got, erfinv(x), rtol=2e-7, atol=0)
    x32 = rng.uniform(-1, 1, 2000).astype(np.float32)
    got32 = run_op("ErfInv", "opset17", [x32])[0]
    np.testing.assert_array_equal(got32, run_op("ErfInv", "opset17", [x32.astype(np.float64)])[0].astype(np.float32))
    sp = np.array([0.0, -0.0, 1.0, -1.0, 1.5, -2.0, np.inf, -np.inf, np.nan], np.float32)
    got = run_op("ErfInv", "opset17", [sp])[0]
    np.testing.assert_array_equal(got, [0, 0, np.inf, -np.inf, np.nan, np.nan, np.nan, np.nan, np.nan])
    assert not np.signbit(got[1])  # the reference returns T{0} for +-0
    assert run_op("ErfInv", "opset17", [np.float16([0.5])])[0].dtype == np.float16


@pytest.mark.parametrize("dynamic", [False, True])
def test_erfinv_shapes_against_openvino(tmp_path, dynamic):
    """OpenVINO's CPU plugin evaluates another approximation (1e-4 relative away near 0) and
    its reference cannot run from Python: shapes and types only."""
    x = oc.param("x", dyn((2, 5), dynamic))
    xs = np.linspace(-0.9, 0.9, 10).astype(np.float32).reshape(2, 5)
    oc.check(tmp_path, [x], [ops(17).erfinv(x)], {"x": xs}, values=False)


def test_erfinv_refuses_integers():
    with pytest.raises(UnsupportedDtypeError, match="i32"):
        run_op("ErfInv", "opset17", [np.int32([1])])


# ---- bit shifts --------------------------------------------------------------------------------------------

SMALL_INTS = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32]


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("dtype", SMALL_INTS, ids=lambda d: np.dtype(d).name)
def test_shifts_against_openvino(tmp_path, dtype, dynamic):
    o = ops(15)
    rng = np.random.default_rng(SEED + 2)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, (4, 1, 6), dtype=dtype, endpoint=True)
    counts = np.array([0, 1, 3, 7, 8, 15, 16, 31, 32, 33, 40, 63, 64, 100, 255], np.int64)
    if info.min < 0:
        counts = np.concatenate([counts, [-1, -8, -33]])
    b = np.resize(counts, (3, 6)).astype(dtype)
    pa, pb = oc.param("a", dyn(a.shape, dynamic), dtype), oc.param("b", dyn(b.shape, dynamic), dtype)
    # the CPU plugin shifts u32 right as a signed i32 (arithmetically); the reference shifts C's
    # unsigned int logically: u32 values are checked against Python's integers here
    values = dtype != np.uint32
    got = oc.check(
        tmp_path,
        [pa, pb],
        [o.bitwise_left_shift(pa, pb), o.bitwise_right_shift(pa, pb)],
        {"a": a, "b": b},
        values=values,
    )
    left, right = got.values()
    wide_a, wide_b = np.broadcast_arrays(a.astype(object), b.astype(np.int64))
    for x, c, l_, r_ in zip(wide_a.reshape(-1), wide_b.reshape(-1), left.reshape(-1), right.reshape(-1)):
        count = int(c) % 32
        want_l = (int(x) << count) & (2 ** (8 * a.itemsize) - 1)
        if info.min < 0 and want_l > info.max:
            want_l -= 2 ** (8 * a.itemsize)
        assert int(l_) == want_l and int(r_) == int(x) >> count, (int(x), int(c))


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_shifts_64_bit_against_python_integers(dtype):
    """The CPU plugin narrows 64-bit integers to 32 bits; the reference shifts in C: 64-bit
    shifts with the count modulo 64 (x86), checked with Python's integers."""
    rng = np.random.default_rng(SEED + 3)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, 40, dtype=dtype, endpoint=True)
    b = np.resize(np.array([0, 1, 31, 32, 33, 63, 64, 65, 127, 200], dtype), 40)
    bits = 64
    left = run_op("BitwiseLeftShift", "opset15", [a, b], const=[])[0]
    right = run_op("BitwiseRightShift", "opset15", [a, b], const=[])[0]
    for i in range(a.size):
        x, c = int(a[i]), int(b[i]) % bits
        want_left = (x << c) & (2**bits - 1)
        if info.min < 0 and want_left >= 2**63:
            want_left -= 2**bits
        assert int(left[i]) == want_left, (x, int(b[i]))
        assert int(right[i]) == x >> c, (x, int(b[i]))


def test_shift_errors():
    with pytest.raises(FormatError, match="i16"):
        run_op("BitwiseLeftShift", "opset15", [np.int32([1]), np.int16([1])], const=[])
    with pytest.raises(UnsupportedDtypeError, match="f32"):
        run_op("BitwiseRightShift", "opset15", [np.float32([1]), np.float32([1])], const=[])
    with pytest.raises(ShapeInferenceError, match="broadcast"):
        run_op("BitwiseLeftShift", "opset15", [np.int32([1, 2]), np.int32([1, 2, 3])], const=[])


# ---- ConvertPromoteTypes -----------------------------------------------------------------------------------

PROMO_TYPES = ["boolean", "u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "f16", "bf16", "f32", "f64"]
NP_OF = {"boolean": np.bool_, "bf16": np.float32}


def _ov_type(et):
    ovm = oc.ov()
    return getattr(ovm.Type, et)


@pytest.mark.parametrize("unsafe", [False, True])
@pytest.mark.parametrize("pytorch", [False, True])
@pytest.mark.parametrize("target", ["f32", "i64"])
def test_promotion_table_against_openvino(unsafe, pytorch, target):
    """Every pair of types, scalar or not, as OpenVINO's shape inference decides: the same
    common type, or an error where OpenVINO refuses."""
    o = ops(14)
    ovm = oc.ov()
    for t0 in PROMO_TYPES:
        for t1 in PROMO_TYPES:
            for s0, s1 in ((False, False), (True, False), (False, True)):
                sh0, sh1 = ([] if s0 else [2]), ([] if s1 else [2])
                p0 = o.parameter(ovm.PartialShape(sh0), _ov_type(t0))
                p1 = o.parameter(ovm.PartialShape(sh1), _ov_type(t1))
                specs = [TensorSpec(t0, tuple(sh0)), TensorSpec(t1, tuple(sh1))]
                attrs = dict(
                    promote_unsafe=unsafe, pytorch_scalar_promotion=pytorch, u64_integer_promotion_target=target
                )
                try:
                    node = o.convert_promote_types(p0, p1, unsafe, pytorch, target)
                    want = node.get_output_element_type(0).get_type_name()
                except RuntimeError:
                    want = None
                what = (t0, t1, s0, s1)
                if want is None:
                    with pytest.raises(FormatError, match=t0):
                        infer_op("ConvertPromoteTypes", "opset14", specs, 2, **attrs)
                    continue
                got = infer_op("ConvertPromoteTypes", "opset14", specs, 2, **attrs)
                want = {"boolean": "boolean", "f16": "f16"}.get(want, want)
                assert [g.dtype for g in got] == [want, want], what
                assert [g.shape for g in got] == [tuple(sh0), tuple(sh1)], what


@pytest.mark.parametrize("dynamic", [False, True])
def test_promotion_values_against_openvino(tmp_path, dynamic):
    o = ops(14)
    rng = np.random.default_rng(SEED + 4)
    cases = [
        (np.int8, np.float32, {}),
        (np.uint8, np.int16, {}),
        (np.uint32, np.int8, {"promote_unsafe": True}),
        (np.float32, np.int32, {"promote_unsafe": True}),
        (np.float32, np.int16, {}),
        (np.bool_, np.int16, {}),
        (np.uint64, np.int32, {"promote_unsafe": True, "u64_integer_promotion_target": "i64"}),
        (np.float16, np.float32, {}),
    ]
    params, outs, feeds = [], [], {}
    for i, (d0, d1, attrs) in enumerate(cases):
        a = oc.param(f"a{i}", dyn((2, 3), dynamic), d0)
        b = oc.param(f"b{i}", dyn((3,), dynamic), d1)
        node = o.convert_promote_types(
            a,
            b,
            attrs.get("promote_unsafe", False),
            False,
            attrs.get("u64_integer_promotion_target", "f32"),
        )
        params += [a, b]
        outs += [node.output(0), node.output(1)]
        for name, d, shape in ((f"a{i}", d0, (2, 3)), (f"b{i}", d1, (3,))):
            if np.dtype(d).kind == "f":
                feeds[name] = rng.uniform(-100, 100, shape).astype(d)
            elif np.dtype(d).kind == "b":
                feeds[name] = rng.random(shape) < 0.5
            else:
                info = np.iinfo(d)
                feeds[name] = rng.integers(max(info.min, -1000), min(info.max, 1000), shape, dtype=d)
    oc.check(tmp_path, params, outs, feeds, rtol=0, atol=0)


def test_promotion_f64_converts_exactly():
    """The CPU plugin runs f64 as f32; irexec converts to f64 exactly (Convert's rules)."""
    a = np.array([2**31 - 1, -(2**31), 7], np.int32)
    b = np.array([0.1, -2.5], np.float64)
    x, y = run_op("ConvertPromoteTypes", "opset14", [a, b], const=[], n_outputs=2)
    assert x.dtype == y.dtype == np.float64
    np.testing.assert_array_equal(x, [2147483647.0, -2147483648.0, 7.0])
    np.testing.assert_array_equal(y, b)
    f, i = run_op(
        "ConvertPromoteTypes", "opset14", [np.float16([1.5]), np.int64([3])], const=[], n_outputs=2, promote_unsafe=True
    )
    assert f.dtype == i.dtype == np.float16 and i[0] == 3


def test_promotion_scalar_rule_needs_a_static_scalar():
    """pytorch_scalar_promotion looks at static scalars only: a dynamic-rank input is not one."""
    specs = [TensorSpec("i8", ()), TensorSpec("i32", None)]
    got = infer_op("ConvertPromoteTypes", "opset14", specs, 2, pytorch_scalar_promotion=True)
    assert got[0].dtype == "i32"
    specs = [TensorSpec("i32", ()), TensorSpec("i8", (4,))]
    with pytest.raises(FormatError, match="PyTorch-like"):
        infer_op("ConvertPromoteTypes", "opset14", specs, 2, pytorch_scalar_promotion=True)
    got = infer_op("ConvertPromoteTypes", "opset14", specs, 2, pytorch_scalar_promotion=True, promote_unsafe=True)
    assert got[0].dtype == "i8"
    with pytest.raises(FormatError, match="u64"):
        infer_op("ConvertPromoteTypes", "opset14", [TensorSpec("u64", (1,)), TensorSpec("i8", (1,))], 2)


# ---- Inverse -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("adjoint", [False, True])
@pytest.mark.parametrize("dynamic", [False, True])
def test_inverse_against_openvino_bit_for_bit(tmp_path, adjoint, dynamic):
    o = ops(14)
    rng = np.random.default_rng(SEED + 5)
    shapes = {"a": (2, 3, 5, 5), "b": (1, 1), "c": (3, 3)}
    params = {k: oc.param(k, dyn(s, dynamic)) for k, s in shapes.items()}
    feeds = {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    feeds["c"] = np.array([[1, 2, 3], [2, 4, 6], [7, 8, 10]], np.float32)  # singular: OpenVINO's inf/NaN
    outs = [o.inverse(p, adjoint) for p in params.values()]
    oc.check(tmp_path, list(params.values()), outs, feeds, rtol=0, atol=0)


def test_inverse_singular_patterns_against_openvino(tmp_path):
    o = ops(14)
    mats = {
        "z": np.zeros((3, 3), np.float32),
        "s": np.array([[1, 2], [2, 4]], np.float32),
        "p": np.array([[0, 1], [1, 0]], np.float32),
        "n": np.array([[np.nan, 1], [1, 2]], np.float32),
    }
    params = [oc.param(k, v.shape) for k, v in mats.items()]
    oc.check(tmp_path, params, [o.inverse(p) for p in params], mats, rtol=0, atol=0)


def test_inverse_f64_and_f16():
    rng = np.random.default_rng(SEED + 6)
    x = rng.standard_normal((4, 6, 6)) + 3 * np.eye(6)
    np.testing.assert_allclose(run_op("Inverse", "opset14", [x])[0], np.linalg.inv(x), rtol=1e-12, atol=1e-13)
    adj = run_op("Inverse", "opset14", [x], adjoint=True)[0]
    np.testing.assert_allclose(adj, np.linalg.inv(np.swapaxes(x, 1, 2)), rtol=1e-12, atol=1e-13)
    h = (rng.standard_normal((3, 3)) + 3 * np.eye(3)).astype(np.float16)
    got = run_op("Inverse", "opset14", [h])[0]
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, np.linalg.inv(h.astype(np.float64)), rtol=2e-3, atol=2e-3)
    assert run_op("Inverse", "opset14", [np.zeros((0, 2, 2), np.float32)])[0].shape == (0, 2, 2)


def test_inverse_errors():
    with pytest.raises(ShapeInferenceError, match=r"\[2,3\]"):
        infer_op("Inverse", "opset14", [TensorSpec("f32", (2, 3))])
    with pytest.raises(ShapeInferenceError, match="rank 2"):
        infer_op("Inverse", "opset14", [TensorSpec("f32", (3,))])
    with pytest.raises(UnsupportedDtypeError, match="i32"):
        infer_op("Inverse", "opset14", [TensorSpec("i32", (2, 2))])
    op_input = TensorSpec("f32", (None, None))
    assert infer_op("Inverse", "opset14", [op_input])[0].shape == (None, None)


# ---- Eye ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("et", ["f32", "i8", "i64", "boolean", "f16"])
def test_eye_constants_against_openvino(tmp_path, et):
    o = ops(9)
    c = o.constant
    outs = []
    for rows, cols, diag, batch in [
        (3, 4, 0, None),
        (4, 3, -1, [2]),
        (3, 4, 2, [2, 1]),
        (2, 2, 7, None),
        (3, 5, -5, None),
    ]:
        args = [c(np.int32(rows)), c(np.int64([cols])), c(np.int32(diag))]
        outs.append(o.eye(*args, et, None if batch is None else c(np.int64(batch))))
    x = oc.param("x", (1,))  # the graph needs one Parameter to save
    outs.append(o.add(x, x))
    oc.check(tmp_path, [x], outs, {"x": np.ones(1, np.float32)}, rtol=0, atol=0)


@pytest.mark.parametrize("dynamic", [False, True])
def test_eye_runtime_counts_against_openvino(tmp_path, dynamic):
    o = ops(9)
    r, k, d = oc.param("r", (), np.int64), oc.param("k", (1,), np.int32), oc.param("d", (), np.int64)
    b = oc.param("b", (None,) if dynamic else (2,), np.int64)
    feeds = {"r": np.int64(3), "k": np.int32([5]), "d": np.int64(-1), "b": np.int64([2, 3])}
    # a batch_shape of unknown length gives a dynamic rank, which the CPU plugin cannot run
    got = oc.check(
        tmp_path,
        [r, k, d, b],
        [o.eye(r, k, d, "f32", b), o.eye(r, k, d, "i32")],
        feeds,
        rtol=0,
        atol=0,
        values=not dynamic,
    )
    first, second = got.values()
    np.testing.assert_array_equal(first, np.broadcast_to(np.eye(3, 5, -1, dtype=np.float32), (2, 3, 3, 5)))
    np.testing.assert_array_equal(second, np.eye(3, 5, -1, dtype=np.int32))


def test_eye_errors():
    i = TensorSpec("i32", (), np.int32(3))
    with pytest.raises(ShapeInferenceError, match="-2"):
        infer_op("Eye", "opset9", [TensorSpec("i32", (), np.int32(-2)), i, i], output_type="f32")
    with pytest.raises(FormatError, match="f32"):
        infer_op("Eye", "opset9", [TensorSpec("f32", ()), i, i], output_type="f32")
    with pytest.raises(ShapeInferenceError, match="one-element"):
        infer_op("Eye", "opset9", [TensorSpec("i32", (2,)), i, i], output_type="f32")
    with pytest.raises(ShapeInferenceError, match="negative"):
        infer_op("Eye", "opset9", [i, i, i, TensorSpec("i64", (2,), np.int64([2, -1]))], output_type="f32")
    with pytest.raises(ExecutionError, match="-4"):
        run_op("Eye", "opset9", [np.int32(-4), np.int32(2), np.int32(0)], const=[], output_type="f32")


# ---- GroupedMatMul -----------------------------------------------------------------------------------------


def _grouped_want(a, b, offsets):
    out = np.zeros((a.shape[0], b.shape[1]))
    start = 0
    for g, end in enumerate(offsets):
        out[start:end] = a[start:end].astype(np.float64) @ b[g].astype(np.float64).T
        start = end
    return out


@pytest.mark.parametrize("dynamic", [False, True])
def test_grouped_matmul(tmp_path, dynamic):
    """OpenVINO infers GroupedMatMul's shapes but cannot run it: shapes against read_model,
    values against a float64 product."""
    o = ops(17)
    rng = np.random.default_rng(SEED + 7)
    a2 = rng.standard_normal((10, 4)).astype(np.float32)
    b = rng.standard_normal((3, 5, 4)).astype(np.float32)
    a3 = rng.standard_normal((3, 2, 4)).astype(np.float32)
    off = np.array([3, 3, 8], np.int32)
    pa2, pb = oc.param("a2", dyn(a2.shape, dynamic)), oc.param("b", dyn(b.shape, dynamic))
    pa3, po = oc.param("a3", dyn(a3.shape, dynamic)), oc.param("off", dyn(off.shape, dynamic), np.int32)
    feeds = {"a2": a2, "b": b, "a3": a3, "off": off}
    got = oc.check(
        tmp_path, [pa2, pb, pa3, po], [o.grouped_matmul(pa2, pb, po), o.grouped_matmul(pa3, pb)], feeds, values=False
    )
    first, second = got.values()
    np.testing.assert_allclose(first, _grouped_want(a2, b, off), rtol=1e-5, atol=1e-5)
    assert not first[8:].any()  # rows after the last offset belong to no group
    np.testing.assert_allclose(second, a3.astype(np.float64) @ np.swapaxes(b, 1, 2), rtol=1e-5, atol=1e-5)


def test_grouped_matmul_errors():
    a, b = np.zeros((4, 2), np.float32), np.zeros((2, 3, 2), np.float32)
    with pytest.raises(ExecutionError, match=r"\[3, 1\]"):
        run_op("GroupedMatMul", "opset17", [a, b, np.int32([3, 1])], const=[])
    with pytest.raises(ExecutionError, match="3 elements for 2 groups"):
        run_op("GroupedMatMul", "opset17", [a, b, np.int32([1, 2, 4])], const=[])
    with pytest.raises(FormatError, match="offsets"):
        run_op("GroupedMatMul", "opset17", [a, b], const=[])
    with pytest.raises(ShapeInferenceError, match="inner"):
        run_op("GroupedMatMul", "opset17", [np.zeros((2, 2, 3), np.float32), b], const=[])


# ---- RandomUniform -----------------------------------------------------------------------------------------

TYPES = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "i32": np.int32, "i64": np.int64}
# (type, bounds, alignment, which OpenVINO implementation irexec follows there)
RU_CASES = [
    ("f32", (-2.5, 7.25), "tensorflow", "cpu"),
    ("f32", (0.0, 1.0), "tensorflow", "cpu"),
    ("f16", (-2.5, 7.1), "tensorflow", "cpu"),
    ("f16", (-60000.0, 60000.0), "tensorflow", "cpu"),  # a range beyond f16: the CPU computes in f32
    ("f32", (-1e30, 1e30), "tensorflow", "cpu"),
    # hi - lo wraps in C's int: the reference computes with the unsigned range 2^32 - 1, the CPU
    # plugin gives the minimum everywhere
    ("i32", (-(2**31), 2**31 - 1), "tensorflow", "reference"),
    ("i32", (-7, 1000), "tensorflow", "cpu"),
    ("f64", (-3.0, 11.5), "tensorflow", "reference"),
    ("i64", (-7, 10**12), "tensorflow", "reference"),
    ("f32", (-2.5, 7.25), "pytorch", "cpu"),
    ("f16", (-2.5, 7.1), "pytorch", "cpu"),
    ("f32", (-1e30, 1e30), "pytorch", "cpu"),
    ("i32", (-7, 1000), "pytorch", "cpu"),
    ("f64", (-3.0, 11.5), "pytorch", "reference"),
    ("i64", (-7, 300), "pytorch", "reference"),
    ("i64", (-7, 10**12), "pytorch", "reference"),
]


def _ru(o, shape_node, et, bounds, seeds, alignment):
    t = TYPES[et]
    return o.random_uniform(
        shape_node, o.constant(np.array(bounds[0], t)), o.constant(np.array(bounds[1], t)), et, *seeds, alignment
    )


@pytest.mark.parametrize("et,bounds,alignment,oracle", RU_CASES)
def test_random_uniform_bit_exact(tmp_path, et, bounds, alignment, oracle):
    o = ops(8)
    seeds = (150, 10)
    shape = np.array([3, 13], np.int64)
    s = oc.param("s", (2,), np.int64)
    node = _ru(o, s, et, bounds, seeds, alignment)
    m = _save_load(tmp_path, [s], [node])
    got = list(m.infer({"s": shape}).values())[0]
    if oracle == "cpu":
        want = cpu_once([node], [s], {"s": shape})[0][0]
    else:
        c = o.constant(shape)
        ref_node = _ru(o, c, et, bounds, seeds, alignment)
        want = oc.reference(ref_node, {})
        want = want.reshape(3, 13)
    assert got.dtype == want.dtype and got.shape == (3, 13)
    np.testing.assert_array_equal(got, want)
    lo, hi = bounds
    assert (got >= lo).all() and (got <= hi).all()


def _save_load(tmp_path, params, outputs, name="m"):
    """The graph saved by OpenVINO and loaded by irexec, shapes checked against read_model."""
    ovm = oc.ov()
    model = ovm.Model([ops(8).result(x) for x in outputs], list(params), name)
    xml = tmp_path / f"{name}.xml"
    with corpus.no_telemetry():
        ovm.save_model(model, str(xml), compress_to_fp16=False)
    m = irexec.load(xml)
    assert not corpus.shape_mismatches(m, xml)
    assert m.validate().ok
    return m


@pytest.mark.parametrize("alignment", ["tensorflow", "pytorch"])
def test_random_uniform_static_and_dynamic_shapes_against_openvino(tmp_path, alignment):
    o = ops(8)
    s_dyn = oc.param("s", (2,), np.int32)  # its values unknown at load: dynamic dims
    const_node = _ru(o, o.constant(np.int32([2, 1, 5])), "f32", (0.0, 1.0), (7, 9), alignment)
    dyn_node = _ru(o, s_dyn, "i32", (0, 50), (7, 9), alignment)
    shape = np.int32([4, 6])
    oc.check(tmp_path, [s_dyn], [const_node, dyn_node], {"s": shape}, rtol=0, atol=0)


def _bf16_tensor(ovm, value) -> object:
    """A bf16 scalar tensor of the float32 value's upper half (the value is a bf16 one)."""
    t = ovm.Tensor(ovm.Type.bf16, [])
    t.data.view(np.uint16)[...] = np.float32(value).view(np.uint32) >> 16
    return t


def test_random_uniform_bf16_tensorflow_against_openvino(tmp_path):
    """bf16 (tensorflow alignment): 7 random bits, the CPU plugin's fused float32 step, rounded
    to bf16: its bits where the CPU computes bf16. Elsewhere the CPU plugin runs the graph in f32
    (other numbers); there OpenVINO's reference (Node.evaluate), whose multiply and add round
    separately, is within one bf16 unit."""
    o = ops(8)
    if corpus.cpu_has_bf16():
        lo = o.convert(o.constant(np.float32(-2.5)), "bf16")
        hi = o.convert(o.constant(np.float32(7.1)), "bf16")
        node = o.convert(o.random_uniform(o.constant(np.int64([1500])), lo, hi, "bf16", 77, 5, "tensorflow"), "f32")
        x = oc.param("x", (1,))
        oc.check(tmp_path, [x], [node, o.add(x, x)], {"x": np.ones(1, np.float32)}, rtol=0, atol=0)
        return
    from irexec.dtypes import round_bf16

    ovm = oc.ov()
    lo, hi = round_bf16(np.float32(-2.5)), round_bf16(np.float32(7.1))
    node = o.random_uniform(
        o.constant(np.int64([1500])), o.parameter([], ovm.Type.bf16), o.parameter([], ovm.Type.bf16), "bf16", 77, 5,
        "tensorflow",
    )  # fmt: skip
    out = [ovm.Tensor(ovm.Type.bf16, [1500])]
    assert node.evaluate(out, [ovm.Tensor(np.int64([1500])), _bf16_tensor(ovm, lo), _bf16_tensor(ovm, hi)])
    ref = (out[0].data.view(np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)
    (got,) = run_op(
        "RandomUniform", "opset8", [np.int64([1500]), lo, hi], types=["i64", "bf16", "bf16"], output_type="bf16",
        global_seed=77, op_seed=5, alignment="tensorflow",
    )  # fmt: skip
    got = np.asarray(got, np.float32)
    # the reference rounds x * span and then + lo to bf16, each at the operands' magnitude
    # (up to |hi|): two bf16 units there; the same words: most numbers equal
    unit = np.ldexp(np.float32(1), np.frexp(np.float32(max(abs(lo), abs(hi))))[1] - 8)
    assert np.abs(got - ref).max() <= 2 * unit and (got == ref).mean() > 0.3
    assert (got >= lo).all() and (got < hi).all()


def test_random_uniform_bf16_pytorch_range(tmp_path):
    """bf16 with the pytorch alignment: OpenVINO's values differ from its reference formula in
    the last bit (module doc): only the range and the shape are compared."""
    got = run_op(
        "RandomUniform",
        "opset8",
        [np.int64([500]), np.float32(-2.5), np.float32(7.0)],
        types=["i64", "bf16", "bf16"],
        output_type="bf16",
        global_seed=77,
        op_seed=5,
        alignment="pytorch",
    )[0]
    assert got.shape == (500,) and (got >= -2.5).all() and (got <= 7.0).all()
    assert np.array_equal(got, got.astype(np.float32).view(np.uint32).__and__(0xFFFF0000).view(np.float32))


def test_random_uniform_later_runs_follow_the_cpu_counter():
    """OpenVINO's CPU plugin gives new numbers on each inference of one compiled model: its Philox
    counter advances by 256 per element; irexec's kernel reproduces runs 2 and 3 from that
    counter (irexec's op itself gives run 1 every time: no per-request state)."""
    o = ops(8)
    count = 10
    node = _ru(o, o.constant(np.int64([count])), "f32", (-2.0, 3.0), (150, 10), "tensorflow")
    runs = cpu_once([node], n=3)
    for k, run in enumerate(runs):
        want = run[0]
        got = rnd.random_uniform(count, "f32", np.float32(-2), np.float32(3), "tensorflow", (150, 10), k * count * 256)
        np.testing.assert_array_equal(got, want, err_msg=f"run {k + 1}")
    same = run_op(
        "RandomUniform",
        "opset8",
        [np.int64([count]), np.float32(-2), np.float32(3)],
        output_type="f32",
        global_seed=150,
        op_seed=10,
    )[0]
    np.testing.assert_array_equal(same, runs[0][0])
    pt = _ru(o, o.constant(np.int64([count])), "f32", (-2.0, 3.0), (150, 10), "pytorch")
    runs = cpu_once([pt], n=2)
    np.testing.assert_array_equal(runs[0][0], runs[1][0])  # the pytorch alignment repeats itself


def test_random_uniform_zero_seeds_change_and_stay_in_range():
    args = [np.int64([64]), np.float32(1.0), np.float32(2.0)]
    a = run_op("RandomUniform", "opset8", args, output_type="f32")[0]
    b = run_op("RandomUniform", "opset8", args, output_type="f32")[0]
    assert ((a >= 1) & (a < 2)).all() and ((b >= 1) & (b < 2)).all()
    assert not np.array_equal(a, b)  # fresh entropy each run (OpenVINO: the clock's second)


def test_random_uniform_long_mersenne_sequence_against_openvino():
    """Beyond one Mersenne state (624 words) and with 64-bit pairs."""
    o = ops(8)
    node = _ru(o, o.constant(np.int64([2000])), "i32", (0, 2**31 - 1), (123456789, 1), "pytorch")
    got = run_op(
        "RandomUniform",
        "opset8",
        [np.int64([2000]), np.int32(0), np.int32(2**31 - 1)],
        output_type="i32",
        global_seed=123456789,
        op_seed=1,
        alignment="pytorch",
    )[0]
    np.testing.assert_array_equal(got, cpu_once([node])[0][0])


def test_random_uniform_errors():
    sh = np.int64([2])

    def run(lo, hi, **attrs):
        attrs = {"output_type": "f32", "global_seed": 1, **attrs}
        return run_op("RandomUniform", "opset8", [sh, lo, hi], **attrs)

    with pytest.raises(ShapeInferenceError, match="min 2.0 must be less than max 1.0"):
        run(np.float32(2), np.float32(1))
    with pytest.raises(FormatError, match="f64"):
        run(np.float64(0), np.float64(1))
    with pytest.raises(UnsupportedDtypeError, match="u8"):
        run(np.uint8(0), np.uint8(1), output_type="u8")
    with pytest.raises(FormatError, match="-1"):
        run(np.float32(0), np.float32(1), global_seed=-1)
    with pytest.raises(FormatError, match="alignment"):
        run(np.float32(0), np.float32(1), alignment="numpy")
    with pytest.raises(ShapeInferenceError, match="one-element"):
        run(np.float32([0, 1]), np.float32(1))
    with pytest.raises(ShapeInferenceError, match="-3"):
        run_op(
            "RandomUniform",
            "opset8",
            [np.int64([2, -3]), np.float32(0), np.float32(1)],
            const=[0, 1, 2],
            output_type="f32",
        )
    with pytest.raises(ExecutionError, match="-3"):
        run_op("RandomUniform", "opset8", [np.int64([2, -3]), np.float32(0), np.float32(1)], output_type="f32")
    with pytest.raises(ExecutionError, match="less than"):
        run_op("RandomUniform", "opset8", [sh, np.float32(1), np.float32(1)], const=[0], output_type="f32")


# ---- Multinomial -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", range(8))
def test_multinomial_against_openvino(tmp_path, case):
    o = ops(13)
    rng = np.random.default_rng(SEED + 10 + case)
    batch, classes = int(rng.integers(1, 5)), int(rng.integers(2, 9))
    replace, log = case % 2 == 0, case % 4 >= 2
    probs = rng.uniform(0.05, 1, (batch, classes)).astype(np.float32)
    if replace and case % 3 == 0:
        probs[:, 0] = 0  # a class that is never drawn
    if log:
        probs = np.log(probs + 0.01).astype(np.float32)
    n = int(rng.integers(1, 30)) if replace else int(rng.integers(1, classes + 1))
    seeds = (int(rng.integers(1, 2**40)), int(rng.integers(0, 2**20)))
    p = oc.param("p", dyn(probs.shape, case % 2 == 1))
    k = oc.param("k", (), np.int64)
    et = "i32" if case % 3 else "i64"
    node = o.multinomial(p, k, et, replace, log, *seeds)
    oc.check(tmp_path, [p, k], [node], {"p": probs, "k": np.int64(n)}, rtol=0, atol=0)


def test_multinomial_large_batch_against_openvino(tmp_path):
    o = ops(13)
    rng = np.random.default_rng(SEED + 20)
    probs = rng.uniform(0, 1, (40, 30)).astype(np.float32)
    p = oc.param("p", probs.shape)
    outs = [o.multinomial(p, o.constant(np.int32([50])), "i64", True, False, 3, 4)]
    outs.append(o.multinomial(p, o.constant(np.int32(30)), "i32", False, False, 5, 0))
    oc.check(tmp_path, [p], outs, {"p": probs}, rtol=0, atol=0)


def test_multinomial_errors():
    p = np.float32([[0.2, 0.8]])

    def run(probs, n, **attrs):
        attrs = {"convert_type": "i64", "with_replacement": True, "log_probs": False, "global_seed": 1, **attrs}
        return run_op("Multinomial", "opset13", [probs, n], **attrs)

    with pytest.raises(ShapeInferenceError, match="2-D"):
        run(np.float32([0.5, 0.5]), np.int64(2))
    with pytest.raises(UnsupportedDtypeError, match="i32"):
        run(np.int32([[1, 2]]), np.int64(2))
    with pytest.raises(FormatError, match="f32"):
        run(p, np.float32(2))
    with pytest.raises(UnsupportedDtypeError, match="convert_type=f32"):
        run(p, np.int64(2), convert_type="f32")
    with pytest.raises(ExecutionError, match="beyond every class"):
        run(np.float32([[0.0, 0.0]]), np.int64(2))
    with pytest.raises(ExecutionError, match="3 samples without replacement from 2 classes"):
        run(p, np.int64(3), with_replacement=False)
    with pytest.raises(ExecutionError, match="negative"):
        run_op(
            "Multinomial",
            "opset13",
            [p, np.int64(-1)],
            const=[],
            convert_type="i64",
            with_replacement=True,
            log_probs=False,
        )
