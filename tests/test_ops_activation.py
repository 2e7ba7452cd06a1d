"""Activations (ops/activation.py) against two oracles: references computed here element by element
with Python's decimal module at 40 digits (math.erf/erfc for Gelu), rounded to the output type by
the helpers of test_ops_elementwise and compared to the ulp; and OpenVINO (tests/support/ovcheck.py) on
seeded random shapes, values, bounds and slopes, static and with dynamic dims.

OpenVINO's CPU plugin differs from its reference kernels (the contract) on NaN and infinities
(ReLU, Clamp and HSigmoid give numbers for NaN, Gelu NaN for +inf) and its Gelu is within ~2e-4
only: the OpenVINO cases use finite inputs and a looser tolerance for Gelu, Mish and Swish;
the edge values are checked against the reference's results in `SPECIALS`.
"""

from __future__ import annotations

import decimal
import math

import numpy as np
import pytest

import irexec
from irexec.ops.single import infer_op, run_op
from irexec.shapes import TensorSpec
from tests.support import irbuild
from tests.support import ovcheck as oc
from tests.test_ops_elementwise import as_type, assert_ulps, round_to

OPS_TESTED = [
    ("ReLU", "opset1"),
    ("Clamp", "opset1"),
    ("Elu", "opset1"),
    ("Gelu", "opset2"),
    ("Gelu", "opset7"),
    ("Sigmoid", "opset1"),
    ("Tanh", "opset1"),
    ("Swish", "opset4"),
    ("HSwish", "opset4"),
    ("HSigmoid", "opset5"),
    ("Mish", "opset4"),
    ("SoftPlus", "opset4"),
    ("SoftSign", "opset9"),
    ("PRelu", "opset1"),
    ("HardSigmoid", "opset1"),
    ("Selu", "opset1"),
]

SEED = 20260612
D = decimal.Context(prec=60)


def dec(v: float) -> decimal.Decimal:
    return decimal.Decimal(v)


def dexp(d: decimal.Decimal) -> decimal.Decimal:
    return D.exp(d)


def dtanh(d: decimal.Decimal) -> decimal.Decimal:
    if abs(d) < decimal.Decimal("1e-5"):
        return d - d**3 / 3 + 2 * d**5 / 15  # the next term is below 1e-35 relative
    if abs(d) > 200:
        return decimal.Decimal(1).copy_sign(d)
    e = D.exp(2 * d)
    return D.divide(e - 1, e + 1)


def dsigmoid(d: decimal.Decimal) -> decimal.Decimal:
    if d < -5000:
        return decimal.Decimal(0)
    return D.divide(1, 1 + D.exp(-d))


def dsoftplus(d: decimal.Decimal) -> decimal.Decimal:
    if d > 5000:
        return d
    t = D.exp(d)
    return t - t * t / 2 if t < decimal.Decimal("1e-15") else D.ln(1 + t)


def _gelu_erf(v: float) -> float:
    # math.erf for x > -1; below, 1 + erf cancels and math.erfc keeps the digits
    return 0.5 * v * (1 + math.erf(v / math.sqrt(2))) if v > -1 else 0.5 * v * math.erfc(-v / math.sqrt(2))


def _gelu_tanh(v: float) -> float:
    # 0.5 x (1 + tanh(u)) = x sigmoid(2u), evaluated at 60 digits
    d = dec(v)
    u = dec(math.sqrt(2 / math.pi)) * (d + dec(0.044715) * d**3)
    return float(d * dsigmoid(2 * u))


# name -> (op, version, attrs, extra inputs, float64 reference of one finite value). Attributes are
# float64 (alpha, min, max); inputs (slope, beta, HardSigmoid's and Selu's parameters) hold the
# values p_alpha and p_beta as the type rounds them; Clamp rounds its bounds to the type.
def _refs(alpha=0.7, beta=1.3, p_alpha=0.7, p_beta=1.3, lo=-0.75, hi=1.25):
    return {
        "relu": ("ReLU", "opset1", {}, None, lambda v: 0.0 if v < 0 else v),
        "clamp": (
            "Clamp",
            "opset1",
            {"min": -0.75, "max": 1.25},
            None,
            lambda v: lo if v < lo else hi if v > hi else v,
        ),
        "elu": ("Elu", "opset1", {"alpha": alpha}, None, lambda v: alpha * math.expm1(v) if v < 0 else v),
        "gelu2": ("Gelu", "opset2", {}, None, _gelu_erf),
        "gelu7": ("Gelu", "opset7", {"approximation_mode": "erf"}, None, _gelu_erf),
        "gelu7_tanh": ("Gelu", "opset7", {"approximation_mode": "tanh"}, None, _gelu_tanh),
        "sigmoid": ("Sigmoid", "opset1", {}, None, lambda v: float(dsigmoid(dec(v)))),
        "tanh": ("Tanh", "opset1", {}, None, lambda v: float(dtanh(dec(v)))),
        "swish": ("Swish", "opset4", {}, None, lambda v: float(dec(v) * dsigmoid(dec(v)))),
        "swish_beta": ("Swish", "opset4", {}, [beta], lambda v: float(dec(v) * dsigmoid(dec(p_beta) * dec(v)))),
        "hswish": ("HSwish", "opset4", {}, None, lambda v: v * min(max(v + 3, 0), 6) / 6),
        "hsigmoid": ("HSigmoid", "opset5", {}, None, lambda v: min(max(v + 3, 0), 6) / 6),
        "mish": ("Mish", "opset4", {}, None, lambda v: float(dec(v) * dtanh(dsoftplus(dec(v))))),
        "softplus": ("SoftPlus", "opset4", {}, None, lambda v: float(dsoftplus(dec(v)))),
        "softsign": ("SoftSign", "opset9", {}, None, lambda v: float(D.divide(dec(v), 1 + abs(dec(v))))),
        "prelu": ("PRelu", "opset1", {}, [alpha], lambda v: p_alpha * v if v < 0 else v),
        "hardsigmoid": ("HardSigmoid", "opset1", {}, [alpha, beta], lambda v: min(1.0, max(0.0, p_alpha * v + p_beta))),
        "selu": ("Selu", "opset1", {}, [alpha, beta], lambda v: p_beta * (v if v > 0 else p_alpha * math.expm1(v))),
    }


def refs_for(et: str) -> dict:
    def held(v):
        return float(np.asarray(as_type(np.array(v), et), np.float64))

    return _refs(p_alpha=held(0.7), p_beta=held(1.3), lo=held(-0.75), hi=held(1.25))


REFS = _refs()
# f32 ulps allowed (float64 math rounded once: 1; Tanh runs numpy's float32 tanh; Swish with beta 1
# and Gelu's erf mode compute in float32 once the kernels are loaded, at most 3 and 6 floats
# from the exact value rounded over all float32 inputs: tools/sweep_f32.py)
ULPS32 = {"tanh": 2, "relu": 0, "clamp": 0, "prelu": 0, "swish": 3, "gelu2": 6, "gelu7": 6}
# float64 results: a few ulps, more where exp gets a large computed argument whose own rounding
# (|argument| x 2^-53) shows: Swish with beta at x = -88 (e^114), Gelu-tanh at x = -20 (e^602)
ULPS64 = {"gelu2": 8, "gelu7": 8, "swish_beta": 32, "gelu7_tanh": 512}


def _extra(values, et):
    return [as_type(np.array(v), et) for v in values or ()]


def _finite_values(rng):
    return np.concatenate(
        [
            [
                0.0,
                1e-40,
                -1e-40,
                0.5,
                -0.5,
                1.0,
                -1.0,
                3.0,
                -3.0,
                2.999,
                -3.001,
                6.0,
                20.0,
                -20.0,
                11.1,
                88.0,
                -88.0,
                30.0,
                -30.0,
                1e-7,
                -1e-7,
                1e-20,
            ],
            rng.uniform(-8, 8, 300),
            rng.standard_normal(100) * 0.05,
        ]
    )


@pytest.mark.parametrize("et", ["f32", "f64", "f16", "bf16"])
@pytest.mark.parametrize("name", sorted(REFS))
def test_against_decimal_reference(name, et):
    op, version, attrs, extra, ref = refs_for(et)[name]
    rng = np.random.default_rng(SEED)
    x = as_type(_finite_values(rng), et)
    x64 = np.asarray(x, np.float64)
    with decimal.localcontext(D):  # Decimal operators too work at 60 digits
        want = np.array([ref(float(v)) for v in x64])
    ets = [et] * (1 + len(extra or ()))
    got = run_op(op, version, [x, *_extra(extra, et)], types=ets, **attrs)[0]
    ulps = {"f32": ULPS32.get(name, 1), "f64": ULPS64.get(name, 4), "f16": 1, "bf16": 1}[et]
    assert_ulps(got, want, et, ulps, name)


@pytest.mark.parametrize("name,low", [("swish", -110.0), ("gelu7", -15.0)])
def test_float32_kernels_against_decimal_reference(name, low):
    """Swish with beta 1 and Gelu's erf mode on float32 by their float32 kernels (the kernels
    loaded whatever the test order): within their swept bounds of the 40-digit value rounded,
    over the same values and a dense run from where the result leaves float32's normals
    (Swish's x e^x at -88.7, Gelu's x Phi(x) at -13.2) to 30."""
    from irexec.kernels import jit

    op, version, attrs, _, ref = REFS[name]
    rng = np.random.default_rng(SEED)
    x = np.concatenate([_finite_values(rng), np.linspace(low, 30.0, 2801)]).astype(np.float32)
    with decimal.localcontext(D):
        want = np.array([ref(float(v)) for v in np.asarray(x, np.float64)])
    with jit.forced(True):
        got = run_op(op, version, [x], **attrs)[0]
    assert_ulps(got, want, "f32", ULPS32[name], name)


SPECIAL_X = [np.nan, -np.inf, np.inf, -0.0]
# OpenVINO's reference kernels at NaN, -inf, +inf, -0.0 (checked with Node.evaluate, OpenVINO 2026.4);
# one documented exception
SPECIALS = {
    "relu": [np.nan, 0.0, np.inf, 0.0],  # -0.0 gives +0.0 as the CPU plugin (the reference keeps -0.0)
    "clamp": [np.nan, -0.75, 1.25, -0.0],
    "elu": [np.nan, -0.7, np.inf, -0.0],
    "gelu2": [np.nan, np.nan, np.inf, -0.0],
    "gelu7": [np.nan, np.nan, np.inf, -0.0],
    "gelu7_tanh": [np.nan, np.nan, np.inf, -0.0],
    "sigmoid": [np.nan, 0.0, 1.0, 0.5],
    "tanh": [np.nan, -1.0, 1.0, -0.0],
    "swish": [np.nan, np.nan, np.inf, -0.0],
    "swish_beta": [np.nan, np.nan, np.inf, -0.0],
    "hswish": [np.nan, np.nan, np.inf, -0.0],
    "hsigmoid": [np.nan, 0.0, 1.0, 0.5],
    "mish": [np.nan, np.nan, np.inf, -0.0],
    "softplus": [np.nan, 0.0, np.inf, math.log(2)],
    "softsign": [np.nan, np.nan, np.nan, -0.0],
    "prelu": [np.nan, -np.inf, np.inf, -0.0],
    "hardsigmoid": [1.0, 0.0, 1.0, 1.0],  # NaN: std::min(1, NaN) is 1
    "selu": [np.nan, -0.7 * 1.3, np.inf, 0.0],
}


@pytest.mark.parametrize("et", ["f32", "f64", "f16", "bf16"])
@pytest.mark.parametrize("name", sorted(REFS))
def test_nan_infinities_and_negative_zero(name, et):
    op, version, attrs, extra, _ = REFS[name]
    x = as_type(np.array(SPECIAL_X), et)
    got = run_op(op, version, [x, *_extra(extra, et)], types=[et] * (1 + len(extra or ())), **attrs)[0]
    want = round_to(np.asarray(SPECIALS[name]), et)
    if name == "selu":  # lambda alpha (e^-inf - 1), with the parameters as the type holds them
        held = [float(np.asarray(v, np.float64)) for v in _extra([0.7, 1.3], et)]
        want[1] = round_to(-held[0] * held[1], et)
    np.testing.assert_array_equal(got, want.astype(got.dtype), err_msg=f"{name} {et}")
    zero = want == 0
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(want[zero]), err_msg=f"{name} {et}: zeros")


def test_gelu_large_negative_inputs_keep_their_digits():
    """0.5 x (1 + erf(x / sqrt 2)) cancels below x ~ -5; irexec keeps the relative accuracy (float32:
    within the float32 kernel's swept bound when the kernels are loaded, see ULPS32)."""
    x = -np.linspace(5, 37, 200)
    want = np.array([0.5 * v * math.erfc(-v / math.sqrt(2)) for v in x])
    (g,) = run_op("Gelu", "opset7", [x])
    nz = want != 0
    np.testing.assert_allclose(g[nz], want[nz], rtol=1e-13)
    (g32,) = run_op("Gelu", "opset2", [x.astype(np.float32)])
    assert_ulps(g32, [_gelu_erf(float(v)) for v in x.astype(np.float32)], "f32", ULPS32["gelu2"], "gelu f32")


def test_softplus_threshold():
    """x itself from ln(max of the type) on: f16 from ln(65504) rounded to f16 = 11.09375."""
    x = np.float16([11.0, 11.09375, 12.0, 65504.0, -20.0])
    (y,) = run_op("SoftPlus", "opset4", [x])
    np.testing.assert_array_equal(y, np.float16([11.0, 11.09375, 12.0, 65504.0, 2.0611537e-09]))
    (y,) = run_op("SoftPlus", "opset4", [np.float32([88.72283, 100.0, 3.4e38])])
    np.testing.assert_array_equal(y, np.float32([88.72283, 100.0, 3.4e38]))


# ---- integers ----------------------------------------------------------------------------------------

INT_VALUES = [-100, -7, -3, -2, -1, 0, 1, 2, 3, 4, 7, 100]


def _round_half_away(v: float) -> int:
    return int(decimal.Decimal(v).quantize(decimal.Decimal(1), rounding=decimal.ROUND_HALF_UP))


def _rint(v: float) -> int:
    return int(decimal.Decimal(v).quantize(decimal.Decimal(1), rounding=decimal.ROUND_HALF_EVEN))


INT_REFS = {  # (op, version, attrs, extra, reference on Python ints)
    "relu": ("ReLU", "opset1", {}, None, lambda v: max(v, 0)),
    "sigmoid": ("Sigmoid", "opset1", {}, None, lambda v: 1 if v > 0 else 0),  # 1 / (1 + trunc(e^-x)), in integers
    "tanh": ("Tanh", "opset1", {}, None, lambda v: _round_half_away(math.tanh(v))),
    "elu": ("Elu", "opset1", {"alpha": 3.0}, None, lambda v: _rint(3.0 * math.expm1(v)) if v < 0 else v),
    "hswish": ("HSwish", "opset4", {}, None, lambda v: _rint(v * min(max(v + 3, 0), 6) / 6)),
    "hsigmoid": ("HSigmoid", "opset5", {}, None, lambda v: _rint(min(max(v + 3, 0), 6) / 6)),
    "hardsigmoid": ("HardSigmoid", "opset1", {}, [2, 1], lambda v: min(1, max(0, 2 * v + 1))),
    "prelu": ("PRelu", "opset1", {}, [3], lambda v: 3 * v if v < 0 else v),
    "clamp": ("Clamp", "opset1", {"min": -2.5, "max": 3.5}, None, lambda v: min(max(v, -2), 3)),
}


@pytest.mark.parametrize("dt", [np.int32, np.int8, np.int64, np.uint8])
@pytest.mark.parametrize("name", sorted(INT_REFS))
def test_integer_inputs(name, dt):
    op, version, attrs, extra, ref = INT_REFS[name]
    info = np.iinfo(dt)
    x = np.array([v for v in INT_VALUES if info.min <= v <= info.max and (dt != np.int8 or abs(v) < 50)], dt)
    want = np.array([ref(int(v)) for v in x]).astype(dt)  # no intermediate wraps or saturates
    got = run_op(op, version, [x, *(np.array(v, dt) for v in extra or ())], **attrs)[0]
    assert got.dtype == dt
    np.testing.assert_array_equal(got, want, err_msg=f"{name} {dt.__name__}")


def test_clamp_integer_bounds():
    """Integers: ceil(min), floor(max), saturated to the type; min 0.2 max 0.8 gives 1 below 1, else 0."""
    x = np.array([-128, -1, 0, 1, 2, 127], np.int8)
    for (lo, hi), want in [
        ((0.2, 0.8), [1, 1, 1, 0, 0, 0]),
        ((-1e10, 1e10), x),
        ((-math.inf, math.inf), x),
        ((-300.5, -200.5), [-128] * 6),
        ((200.0, 300.0), [127] * 6),
        ((-0.5, 1.5), [0, 0, 0, 1, 1, 1]),
    ]:
        (y,) = run_op("Clamp", "opset1", [x], min=lo, max=hi)
        np.testing.assert_array_equal(y, np.array(want, np.int8), err_msg=f"{lo}..{hi}")
    (y,) = run_op("Clamp", "opset1", [np.uint64([0, 2**63, 2**64 - 1])], min=-5.0, max=2.0**70)
    np.testing.assert_array_equal(y, np.uint64([0, 2**63, 2**64 - 1]))
    (y,) = run_op("Clamp", "opset1", [np.int64([-(2**62), 2**62])], min=-(2.0**61), max=2.0**61)
    np.testing.assert_array_equal(y, np.int64([-(2**61), 2**61]))


def test_prelu_integers_wrap_and_unsigned_pass():
    (y,) = run_op("PRelu", "opset1", [np.int8([-100, 5]), np.int8([3])])
    np.testing.assert_array_equal(y, np.int8([-100 * 3 + 256, 5]))  # -300 wraps as in C
    (y,) = run_op("PRelu", "opset1", [np.uint8([0, 200]), np.uint8([3])])
    np.testing.assert_array_equal(y, np.uint8([0, 200]))


# ---- PRelu's slope, Swish's beta, attributes ----------------------------------------------------------


@pytest.mark.parametrize(
    "xshape,sshape,along",
    [
        ((2, 3, 4), (3,), (1, 3, 1)),  # channel dim
        ((2, 3, 3), (3,), (1, 3, 1)),  # channel and last dim both 3: the channel wins (OpenVINO's reference)
        ((2, 3, 4), (4,), (4,)),  # numpy: the last dim
        ((2, 3, 4), (3, 4), (3, 4)),
        ((2, 3, 4), (1, 3, 1), (1, 3, 1)),
        ((5,), (5,), (5,)),
        ((2, 3, 4), (), ()),
        ((2, 3, 4), (1,), (1,)),
        ((2, 0, 4), (4,), (4,)),
    ],
)
def test_prelu_slope_broadcast(xshape, sshape, along):
    rng = np.random.default_rng(SEED + 1)
    x = rng.standard_normal(xshape).astype(np.float32)
    s = rng.uniform(0.1, 2, sshape).astype(np.float32)
    (y,) = run_op("PRelu", "opset1", [x, s])
    np.testing.assert_array_equal(y, np.where(x < 0, x * s.reshape(along), x))
    (y16,) = run_op("PRelu", "opset1", [x, s.astype(np.float16)])  # another slope type: converted to x's
    np.testing.assert_array_equal(y16, np.where(x < 0, x * s.astype(np.float16).astype(np.float32).reshape(along), x))


def test_prelu_bad_slopes():
    x = np.ones((2, 3), np.float32)
    for s in [np.ones(5, np.float32), np.ones((2, 2, 3), np.float32), np.ones((3, 3), np.float32)]:
        with pytest.raises(irexec.ShapeInferenceError, match="slope"):
            run_op("PRelu", "opset1", [x, s])
    with pytest.raises(irexec.ShapeInferenceError, match="slope"):
        run_op("PRelu", "opset1", [np.float32(-1), np.float32([0.5])])
    (out,) = infer_op("PRelu", "opset1", [TensorSpec("f32", (None, 3)), TensorSpec("f32", (None,))])
    assert out.shape == (None, 3)


def test_prelu_slope_checked_at_run_time(tmp_path):
    """Dynamic dims: the channel rule and the broadcast check happen at run time."""
    net = irbuild.Net("prelu")
    x, s = net.param("x", "f32", (2, None, 2)), net.param("s", "f32", (None,))
    net.result(net.op("PRelu", [x, s]), "y")
    m = irexec.load(net.save(tmp_path / "m.xml"))
    xv = -np.ones((2, 3, 2), np.float32)
    y = m.infer({"x": xv, "s": np.float32([1, 2, 3])})["y"]  # 3 = channel count: per channel
    np.testing.assert_array_equal(y, -np.float32([1, 2, 3])[None, :, None] * np.ones((2, 3, 2)))
    y = m.infer({"x": xv, "s": np.float32([5, 7])})["y"]  # else numpy's rule: the last dim
    np.testing.assert_array_equal(y, -np.float32([5, 7]) * np.ones((2, 3, 2)))
    with pytest.raises(irexec.ExecutionError, match="slope"):
        m.infer({"x": xv, "s": np.float32([1, 2, 3, 4])})


def test_swish_beta():
    x = np.float32([-2, -0.5, 0, 1, 30])
    (y,) = run_op("Swish", "opset4", [x, np.float32(0.0)])
    np.testing.assert_array_equal(y, x / 2)
    with pytest.raises(irexec.ShapeInferenceError, match="scalar"):
        run_op("Swish", "opset4", [x, np.float32([1.0])])
    with pytest.raises(irexec.FormatError, match="must match"):
        run_op("Swish", "opset4", [x, np.float16(1.0)])
    with pytest.raises(irexec.UnsupportedDtypeError):
        run_op("Swish", "opset4", [np.int32([1]), np.int32(1)])


def test_attribute_and_type_errors():
    x = np.ones(3, np.float32)
    for bad in [{"min": 2.0, "max": 1.0}, {"min": float("nan"), "max": 1.0}, {"min": 1.0}]:
        with pytest.raises(irexec.FormatError):
            run_op("Clamp", "opset1", [x], **bad)
    with pytest.raises(irexec.FormatError):
        run_op("Gelu", "opset7", [x], approximation_mode="sigmoid")
    with pytest.raises(irexec.FormatError):
        run_op("Elu", "opset1", [x])  # alpha is required
    for op, version in [
        ("Gelu", "opset7"),
        ("Gelu", "opset2"),
        ("Mish", "opset4"),
        ("SoftPlus", "opset4"),
        ("SoftSign", "opset9"),
    ]:
        with pytest.raises(irexec.UnsupportedDtypeError):
            run_op(op, version, [np.int32([1])])
    with pytest.raises(irexec.UnsupportedDtypeError):
        run_op("ReLU", "opset1", [np.array([True])])
    with pytest.raises(irexec.ShapeInferenceError, match="scalar"):
        run_op("HardSigmoid", "opset1", [x, np.float32([0.2]), np.float32(0.5)])
    with pytest.raises(irexec.FormatError, match="must match"):
        run_op("HardSigmoid", "opset1", [x, np.float16(0.2), np.float32(0.5)])
    (y,) = run_op("relu", "opset3", [x])  # type names match case-insensitively; opset3 finds ReLU-1
    assert y.dtype == np.float32


def test_shape_rules_with_dynamic_dims_and_rank():
    for shape in [None, (None, 3), (2, None, None), ()]:
        x = TensorSpec("f32", shape)
        for op, version, extra, attrs in [
            ("ReLU", "opset1", [], {}),
            ("Clamp", "opset1", [], {"min": 0.0, "max": 1.0}),
            ("Gelu", "opset7", [], {}),
            ("Swish", "opset4", [TensorSpec("f32", ())], {}),
            ("PRelu", "opset1", [TensorSpec("f32", None)], {}),
            ("PRelu", "opset1", [TensorSpec("f32", (None,))], {}),
            ("HardSigmoid", "opset1", [TensorSpec("f32", ())] * 2, {}),
            ("Selu", "opset1", [TensorSpec("f32", (None,))] * 2, {}),
        ]:
            if shape == () and op == "PRelu" and extra[0].shape is not None:
                continue  # a 1-D slope for 0-d data widens it: an error (test_prelu_bad_slopes)
            (out,) = infer_op(op, version, [x, *extra], **attrs)
            assert out.shape == shape and out.dtype == "f32", (op, shape)
    (out,) = infer_op("Sigmoid", "opset1", [TensorSpec("i64", (None, 2))])
    assert out.dtype == "i64"


def test_rank0_zero_size_and_non_contiguous():
    x = np.float32(-1.5)
    for op, version, attrs in [
        ("ReLU", "opset1", {}),
        ("Gelu", "opset7", {}),
        ("SoftPlus", "opset4", {}),
        ("Clamp", "opset1", {"min": -1.0, "max": 1.0}),
    ]:
        (y,) = run_op(op, version, [x], **attrs)
        assert y.shape == () and y.dtype == np.float32
        (z,) = run_op(op, version, [np.zeros((0, 4), np.float32)], **attrs)
        assert z.shape == (0, 4)
    base = np.random.default_rng(SEED + 2).standard_normal((6, 8)).astype(np.float32)
    view = base.T[::2]
    for op, version in [("Sigmoid", "opset1"), ("Mish", "opset4"), ("HSwish", "opset4")]:
        (a,) = run_op(op, version, [view])
        (b,) = run_op(op, version, [np.ascontiguousarray(view)])
        np.testing.assert_array_equal(a, b)
    (s,) = run_op("Selu", "opset1", [base, np.float32([1.5, 2.0]), np.float32(1.0)])  # alpha[i % 2]
    alpha = np.resize(np.float32([1.5, 2.0]), base.size).reshape(base.shape).astype(np.float64)
    want = np.where(base > 0, base, alpha * np.expm1(base.astype(np.float64)))
    assert_ulps(s, want, "f32", 1, "selu cyclic alpha")


@pytest.mark.parametrize("et", ["f32", "bf16", "f64"])
def test_large_inputs_run_in_blocks_with_the_same_results(et):
    """Float64 work on more than 32768 elements runs in cache-sized blocks: the same values as
    the small arrays give."""
    rng = np.random.default_rng(SEED + 3)
    x = as_type(rng.uniform(-10, 10, (3, 5, 4001)), et)
    for name in ("gelu7", "gelu7_tanh", "sigmoid", "mish", "softplus", "swish_beta", "selu", "elu"):
        op, version, attrs, extra, _ = REFS[name]
        ex = _extra(extra, et)
        types = [et] * (1 + len(ex))
        (big,) = run_op(op, version, [x[:, ::-1], *ex], types=types, **attrs)  # non-contiguous too
        parts = [
            run_op(op, version, [np.ascontiguousarray(x[i, ::-1]), *ex], types=types, **attrs)[0] for i in range(3)
        ]
        np.testing.assert_array_equal(big, np.stack(parts), err_msg=f"{name} {et}")
    (e,) = run_op("Erf", "opset1", [x], types=[et])
    np.testing.assert_array_equal(e[1], run_op("Erf", "opset1", [x[1]], types=[et])[0])


# ---- OpenVINO as the oracle ---------------------------------------------------------------------------

RNG_CASES = 12


def _shape(rng, min_rank=0, max_rank=4):
    return tuple(int(d) for d in rng.integers(1, 5, int(rng.integers(min_rank, max_rank + 1))))


def _dyn(rng, shape, dynamic):
    return tuple(None if dynamic and rng.random() < 0.5 else d for d in shape)


def _x(rng, shape):
    x = rng.uniform(-6, 6, shape).astype(np.float32)
    if x.size > 4:  # finite edge values: the CPU plugin differs from the reference on NaN and inf
        x.reshape(-1)[:4] = [-0.0, 3.0, -3.0, 25.0]
    return x


@pytest.mark.parametrize("case", range(RNG_CASES))
def test_activations_against_openvino(tmp_path, case):
    o = oc.ops()
    o2 = oc.ops(2)
    rng = np.random.default_rng(SEED + 100 + case)
    shape = _shape(rng)
    x = oc.param("x", _dyn(rng, shape, case % 2 == 1))
    b = oc.param("b", ())
    lo = float(np.float32(rng.uniform(-3, 0)))
    hi = float(np.float32(lo + rng.uniform(0, 4)))
    alpha, beta = (float(np.float32(v)) for v in rng.uniform(0.1, 2, 2))
    C = o.constant
    precise = [
        o.relu(x),
        o.clamp(x, lo, hi),
        o.elu(x, alpha),
        o.sigmoid(x),
        o.tanh(x),
        o.hswish(x),
        o.hsigmoid(x),
        o.softplus(x),
        o.softsign(x),
        o.hard_sigmoid(x, C(np.float32(alpha)), C(np.float32(-beta / 4))),
        o.selu(x, C(np.float32(alpha)), C(np.float32(beta))),
    ]
    feeds = {"x": _x(rng, shape), "b": np.float32(rng.uniform(-2, 2))}
    oc.check(tmp_path, [x, b], precise, feeds, rtol=1e-5, atol=1e-6, name="precise")
    # the CPU plugin's Gelu (erf and tanh), Mish and Swish are within ~2e-4 relative only
    loose = [
        o.gelu(x, "erf"),
        o.gelu(x, "tanh"),
        o2.gelu(x),
        o.mish(x),
        o.swish(x),
        o.swish(x, b),
        o.swish(x, C(np.float32(beta))),
    ]
    oc.check(tmp_path, [x, b], loose, feeds, rtol=5e-4, atol=2e-5, name="loose")


@pytest.mark.parametrize("case", range(RNG_CASES))
def test_prelu_against_openvino(tmp_path, case):
    o = oc.ops()
    rng = np.random.default_rng(SEED + 200 + case)
    shape = _shape(rng, 1, 4)
    if case % 3 == 0 and len(shape) >= 2:
        shape = shape[:-1] + (shape[1],)  # channel and last dims alike: the channel rule decides
    kinds = [
        (),
        (1,),
        (shape[1 if len(shape) > 1 else 0],),
        (shape[-1],),
        tuple(1 if rng.random() < 0.5 else d for d in shape[-2:]),
    ]
    x = oc.param("x", _dyn(rng, shape, case % 2 == 1))
    s_param = oc.param("s", kinds[case % len(kinds)])
    outs = [o.prelu(x, o.constant(rng.uniform(0.05, 2, k).astype(np.float32))) for k in kinds]
    outs.append(o.prelu(x, s_param))
    feeds = {"x": _x(rng, shape), "s": rng.uniform(0.05, 2, kinds[case % len(kinds)]).astype(np.float32)}
    oc.check(tmp_path, [x, s_param], outs, feeds, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("case", range(6))
def test_integer_activations_against_openvino(tmp_path, case):
    o = oc.ops()
    rng = np.random.default_rng(SEED + 300 + case)
    shape = _shape(rng, 1, 3)
    x = oc.param("x", _dyn(rng, shape, case % 2 == 1), np.int32)
    C = o.constant
    outs = [
        o.relu(x),
        o.clamp(x, -2.5, 3.5),
        o.sigmoid(x),
        o.tanh(x),
        o.elu(x, 2.5),
        o.hswish(x),
        o.hsigmoid(x),
        o.hard_sigmoid(x, C(np.int32(2)), C(np.int32(1))),
        o.prelu(x, C(np.int32([3]))),
    ]
    feeds = {"x": rng.integers(-20, 20, shape).astype(np.int32)}
    oc.check(tmp_path, [x], outs, feeds)
    # bounds that round past each other (ceil 0.2 = 1 > floor 0.8 = 0): the reference gives 1 below 1
    # and 0 elsewhere (test_clamp_integer_bounds), the CPU plugin 0 everywhere: shapes only here
    oc.check(tmp_path, [x], [o.clamp(x, 0.2, 0.8)], feeds, values=False, name="crossed")


@pytest.mark.parametrize("et", [np.float16, np.float64])
def test_other_float_types_against_openvino(tmp_path, et):
    o = oc.ops()
    rng = np.random.default_rng(SEED + 400)
    x = oc.param("x", (None, 6), et)
    C = o.constant
    outs = [
        o.relu(x),
        o.clamp(x, -0.3, 0.6),
        o.elu(x, 0.5),
        o.gelu(x, "erf"),
        o.sigmoid(x),
        o.tanh(x),
        o.swish(x, C(et(0.8))),
        o.hswish(x),
        o.hsigmoid(x),
        o.mish(x),
        o.softplus(x),
        o.softsign(x),
        o.prelu(x, C(np.array([0.25], et))),
        o.selu(x, C(et(1.6)), C(et(1.05))),
    ]
    tol = 2e-3 if et == np.float16 else 5e-4
    oc.check(tmp_path, [x], outs, {"x": rng.uniform(-5, 5, (4, 6)).astype(et)}, rtol=tol, atol=tol)
