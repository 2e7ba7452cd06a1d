"""Element-wise ops (ops/elementwise.py): unary math, remainders, comparisons, logical and bitwise
ops, Select, the float predicates, and the three auto_broadcast rules.

Two oracles: float64 references computed here element by element with Python and numpy (results
rounded to the output type by this file's own rounding, so that irexec's single rounding is
checked to the ulp), and OpenVINO (tests/support/ovcheck.py: shapes and types of every layer as
read_model infers them, values as the CPU plugin computes them) on seeded random shapes, values
and dynamic dims.

OpenVINO's CPU plugin rounds integer Sin/Exp/Log/Asin results where the reference kernels (the
contract) truncate; those are checked against the reference rule here and only for shapes
against OpenVINO.
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

OPS_TESTED = (
    [
        (t, "opset1")
        for t in (
            "Add",
            "Subtract",
            "Multiply",
            "Divide",
            "Maximum",
            "Minimum",
            "Power",
            "Mod",
            "FloorMod",
            "SquaredDifference",
            "Equal",
            "NotEqual",
            "Less",
            "LessEqual",
            "Greater",
            "GreaterEqual",
            "LogicalAnd",
            "LogicalOr",
            "LogicalNot",
            "Select",
            "Abs",
            "Negative",
            "Exp",
            "Log",
            "Sqrt",
            "Erf",
            "Sin",
            "Cos",
            "Tan",
            "Sinh",
            "Cosh",
            "Asin",
            "Acos",
            "Atan",
            "Floor",
            "Ceiling",
            "Sign",
        )
    ]
    + [(t, "opset13") for t in ("BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot")]
    + [("LogicalXor", "opset2")]  # LogicalXor-1 carries the label opset2
    + [("Round", "opset5"), ("IsNaN", "opset10"), ("IsInf", "opset10"), ("IsFinite", "opset10")]
)

SEED = 20260611
FLOATS = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "bf16": np.float32}
INTS = {"i8": np.int8, "u8": np.uint8, "i16": np.int16, "i32": np.int32, "u32": np.uint32, "i64": np.int64}


# ---- the oracle's own rounding and ulp distance --------------------------------------------------


def to_bf16(v: np.ndarray) -> np.ndarray:
    """float64 -> the nearest bf16 (ties to even), held in float32: the bf16 neighbours of the
    value are compared in float64 (independent of irexec's rounding). Finite values only go to
    finite results here (the tests stay far below bf16's largest value)."""
    v = np.asarray(v, np.float64)
    out = np.empty(v.shape, np.float32)
    for idx, x in np.ndenumerate(v):
        if not math.isfinite(x) or abs(x) >= 3.4e38:  # (above bf16's largest value: infinity)
            out[idx] = x if math.isfinite(x) is False else math.copysign(math.inf, x)
            continue
        bits = int(np.array(np.float32(x)).view(np.uint32))  # float32 is within one of its ulps of x
        lo = bits & 0xFFFF0000
        cands = []
        for c in (lo - 0x10000, lo, lo + 0x10000):
            val = float(np.array(c & 0xFFFFFFFF, np.uint32).view(np.float32))
            if math.isfinite(val) and math.copysign(1.0, val) == math.copysign(1.0, x):
                cands.append((abs(val - x), (c >> 16) & 1, val))
        out[idx] = min(cands)[2]
    return out


def round_to(v, et: str) -> np.ndarray:
    v = np.asarray(v, np.float64)
    if et == "bf16":
        return to_bf16(v)
    with np.errstate(over="ignore"):  # beyond the type's range: infinity, as the ops give
        return v.astype(FLOATS[et])


def ordered(a: np.ndarray, et: str) -> np.ndarray:
    """Float values as (Python) integers whose difference counts ulps of type et."""
    if et == "bf16":
        bits, width = (np.asarray(a, np.float32).view(np.uint32) >> 16), 16
    else:
        a = np.asarray(a, FLOATS[et])
        width = a.dtype.itemsize * 8
        bits = a.view({16: np.uint16, 32: np.uint32, 64: np.uint64}[width])
    top = 1 << (width - 1)
    return np.array([-(b - top) if b >= top else b for b in map(int, bits.reshape(-1))], dtype=object)


def assert_ulps(got: np.ndarray, want64, et: str, ulps: int, what: str = "") -> None:
    """got (irexec, type et) is within `ulps` of the float64 reference rounded to et; NaN where
    the reference is NaN, the same infinities."""
    want = round_to(want64, et)
    got = np.asarray(got)
    assert got.dtype == np.dtype(FLOATS[et]), (what, got.dtype)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan, err_msg=f"{what}: NaN positions")
    d = np.abs(ordered(got[~nan], et) - ordered(want[~nan], et)).astype(np.float64)
    if d.size:
        worst = int(np.argmax(d))
        assert d[worst] <= ulps, (
            f"{what} {et}: {d[worst]:.0f} ulps at x-index {worst}: got {got[~nan][worst]!r}, "
            f"want {want[~nan][worst]!r} (float64 {np.asarray(want64)[~nan][worst]!r})"
        )


def as_type(x64: np.ndarray, et: str) -> np.ndarray:
    """Inputs of type et made from float64 values (bf16: rounded to bf16, in float32)."""
    return round_to(x64, et)


def run1(op, version, x, et=None, **attrs):
    return run_op(op, version, [x], types=[et] if et else None, **attrs)[0]


# ---- unary float math ---------------------------------------------------------------------------

EDGE = [
    0.0,
    -0.0,
    np.nan,
    np.inf,
    -np.inf,
    1e-40,
    -1e-40,
    0.5,
    -0.5,
    1.5,
    2.5,
    -2.5,
    1.0,
    -1.0,
    3.0,
    1e30,
    -1e30,
    7e4,
    0.1,
    0.3,
    -0.7,
    100.0,
    -100.0,
    1e-7,
]


def _values(rng, lo, hi, n=200):
    return np.concatenate([np.array(EDGE), rng.uniform(lo, hi, n), rng.standard_normal(n) * 0.01])


_erf64 = np.vectorize(math.erf, otypes=[np.float64])

# (op, float64 reference, value range, ulps allowed for f32 / f64)
UNARY_FLOAT = [
    # float32 Erf computes in float32 once the kernels are loaded: at most 2 floats from the
    # exact value rounded over all float32 inputs (tools/sweep_f32.py)
    ("Erf", _erf64, (-6, 6), 2, 8),
    ("Sin", np.sin, (-20, 20), 2, 0),
    ("Cos", np.cos, (-20, 20), 2, 0),
    ("Tan", np.tan, (-1.5, 1.5), 1, 0),
    ("Sinh", np.sinh, (-10, 10), 2, 0),
    ("Cosh", np.cosh, (-10, 10), 2, 0),
    ("Asin", np.arcsin, (-1.2, 1.2), 1, 0),
    ("Acos", np.arccos, (-1.2, 1.2), 2, 0),
    ("Atan", np.arctan, (-50, 50), 2, 0),
    ("Exp", np.exp, (-90, 90), 2, 0),
    ("Log", np.log, (-1, 50), 1, 0),
    ("Sqrt", np.sqrt, (-1, 50), 0, 0),
    ("Abs", np.abs, (-50, 50), 0, 0),
    ("Negative", np.negative, (-50, 50), 0, 0),
    ("Floor", np.floor, (-50, 50), 0, 0),
    ("Ceiling", np.ceil, (-50, 50), 0, 0),
    ("Sign", np.sign, (-3, 3), 0, 0),
]


@pytest.mark.parametrize("et", ["f32", "f64", "f16", "bf16"])
@pytest.mark.parametrize("op,ref,rng_,ulps32,ulps64", UNARY_FLOAT, ids=[c[0] for c in UNARY_FLOAT])
def test_unary_float_against_float64(op, ref, rng_, ulps32, ulps64, et):
    rng = np.random.default_rng(SEED)
    x = as_type(_values(rng, *rng_), et)
    with np.errstate(all="ignore"):
        want = ref(np.asarray(x, np.float64))
    got = run1(op, "opset1", x, et)
    # f16/bf16: computed in float32 (or float64) and rounded once; float32's ulps are far below theirs
    ulps = {"f32": ulps32, "f64": ulps64, "f16": 1 if ulps32 else 0, "bf16": 1 if ulps32 else 0}[et]
    assert_ulps(got, want, et, ulps, op)


def test_erf_f64_and_bf16_round_once():
    """float64 Erf within 8 ulps of math.erf over the whole range; bf16 results are the correctly
    rounded bf16 of the float64 value (no double rounding through float32)."""
    rng = np.random.default_rng(SEED + 1)
    x = np.concatenate([rng.uniform(-7, 7, 3000), np.linspace(-0.5, 0.5, 1001), [1e-300, -5e-324, 27.0]])
    assert_ulps(run1("Erf", "opset1", x), _erf64(x), "f64", 8, "Erf")
    xb = to_bf16(rng.uniform(-3, 3, 4000))
    got = run1("Erf", "opset1", xb, "bf16")
    assert_ulps(got, _erf64(xb.astype(np.float64)), "bf16", 0, "Erf bf16")


def test_sign_and_unary_zero_signs():
    x = np.array([-0.0, 0.0, np.nan, -np.inf, 1e-45, -1e-45], np.float32)
    s = run1("Sign", "opset1", x)
    np.testing.assert_array_equal(s, [0, 0, np.nan, -1, 1, -1])
    assert not np.signbit(s[0])  # OpenVINO's reference: (0 < x) - (x < 0), +0.0 for -0.0
    f = run1("Floor", "opset1", np.float32([-0.0, -0.5, 0.5]))
    assert np.signbit(f[0]) and f[1] == -1 and f[2] == 0
    c = run1("Ceiling", "opset1", np.float32([-0.5]))
    assert c[0] == 0 and np.signbit(c[0])


_EXACT = decimal.Context(prec=400)  # every float64 integer part fits


def _half_away(v: float) -> float:
    if not math.isfinite(v):
        return v
    d = decimal.Decimal(v).quantize(decimal.Decimal(1), rounding=decimal.ROUND_HALF_UP, context=_EXACT)
    return math.copysign(float(d), v)


@pytest.mark.parametrize("et", ["f32", "f64", "f16", "bf16"])
@pytest.mark.parametrize("mode", ["half_to_even", "half_away_from_zero"])
def test_round(mode, et):
    rng = np.random.default_rng(SEED + 2)
    x = np.concatenate(
        [
            [
                0.5,
                1.5,
                2.5,
                -0.5,
                -1.5,
                -2.5,
                0.49999997,
                -0.49999997,
                0.5000001,
                -0.3,
                -0.0,
                8388609.0,
                1e30,
                np.nan,
                np.inf,
                -np.inf,
                3.5,
                4.5,
                1e-40,
            ],
            rng.uniform(-20, 20, 200),
            np.round(rng.uniform(-20, 20, 50)) + 0.5,
        ]
    )
    x = as_type(x, et)
    x64 = np.asarray(x, np.float64)
    want = np.rint(x64) if mode == "half_to_even" else np.array([_half_away(v) for v in x64])
    got = run1("Round", "opset5", x, et, mode=mode)
    assert_ulps(got, want, et, 0, mode)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(round_to(want, et)), err_msg="signs of zeros")


# ---- integers through float math ------------------------------------------------------------------


def _trunc(v: float) -> float:
    return float(math.trunc(v)) if math.isfinite(v) else v


INT_RULES = {  # OpenVINO's reference: how a float result becomes the integer result
    "Exp": (np.exp, _trunc),
    "Log": (np.log, _trunc),
    "Sin": (np.sin, _trunc),
    "Asin": (np.arcsin, _trunc),
    "Sqrt": (np.sqrt, _half_away),
    "Erf": (_erf64, _half_away),
    "Cos": (np.cos, _half_away),
    "Tan": (np.tan, _half_away),
    "Sinh": (np.sinh, _half_away),
    "Cosh": (np.cosh, _half_away),
    "Acos": (np.arccos, _half_away),
    "Atan": (np.arctan, _half_away),
}


def saturate(values, dtype) -> np.ndarray:
    """Python floats -> integers of dtype: NaN 0, out of range saturated (irexec's Convert rule)."""
    info = np.iinfo(dtype)
    out = []
    for v in values:
        if math.isnan(v):
            out.append(0)
        elif v <= info.min:
            out.append(int(info.min))
        elif v >= info.max:
            out.append(int(info.max))
        else:
            out.append(int(v))
    return np.array(out, dtype)


@pytest.mark.parametrize("et", ["i32", "i8", "u8", "i64"])
@pytest.mark.parametrize("op", sorted(INT_RULES))
def test_integer_inputs_of_float_math(op, et):
    dt = INTS[et]
    info = np.iinfo(dt)
    # 64-bit types: no float result beyond their range (C leaves that undefined; OpenVINO gives the minimum)
    values = {0, 1, 2, 3, 4, 7, 10, 40, -1, -2, -3, -7, -40}
    if dt().itemsize < 8:
        values |= {100, -100, int(info.max), int(info.min)}
    x = np.array(sorted(v for v in values if info.min <= v <= info.max), dt)
    fn, rule = INT_RULES[op]
    with np.errstate(all="ignore"):
        want = saturate([rule(float(v)) for v in fn(x.astype(np.float64))], dt)
    got = run1(op, "opset1", x)
    np.testing.assert_array_equal(got, want, err_msg=f"{op} {et}")
    assert got.dtype == dt


@pytest.mark.parametrize("et", sorted(INTS))
def test_integer_inputs_exact_ops(et):
    dt = INTS[et]
    info = np.iinfo(dt)
    x = np.array([info.min, info.min + 1, -1 if info.min else 0, 0, 1, 5, info.max], dt)
    for op, want in [
        ("Floor", x),
        ("Ceiling", x),
        ("Abs", np.abs(x)),
        ("Negative", np.negative(x)),
        ("Sign", np.sign(x)),
    ]:
        got = run1(op, "opset1", x)
        np.testing.assert_array_equal(got, want, err_msg=f"{op} {et}")  # abs/negate of the minimum wrap, as C
        assert got.dtype == dt
    np.testing.assert_array_equal(run1("Round", "opset5", x, mode="half_away_from_zero"), x)


# ---- predicates ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("et", ["f32", "f64", "f16", "bf16"])
def test_isnan_isinf_isfinite(et):
    x = as_type(np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1.5, 1e-40]), et)
    for op, attrs, want in [
        ("IsNaN", {}, [1, 0, 0, 0, 0, 0, 0, 0]),
        ("IsFinite", {}, [0, 0, 0, 1, 1, 1 if et in ("f32", "f64", "bf16") else 0, 1, 1]),
        ("IsInf", {}, [0, 1, 1, 0, 0, 0 if et != "f16" else 1, 0, 0]),
        ("IsInf", {"detect_negative": False}, [0, 1, 0, 0, 0, 0 if et != "f16" else 1, 0, 0]),
        ("IsInf", {"detect_positive": False}, [0, 0, 1, 0, 0, 0, 0, 0]),
        ("IsInf", {"detect_positive": False, "detect_negative": False}, [0] * 8),
    ]:
        got = run1(op, "opset10", x, et, **attrs)
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got, np.array(want, bool), err_msg=f"{op} {attrs} {et}")


def test_predicates_take_floats_only():
    for op in ("IsNaN", "IsInf", "IsFinite"):
        with pytest.raises(irexec.UnsupportedDtypeError):
            run1(op, "opset10", np.int32([1]))


# ---- remainders ---------------------------------------------------------------------------------------


def _py_fmod(a: float, b: float) -> float:
    return math.fmod(a, b) if b != 0 and not math.isinf(a) and not math.isnan(b) else math.nan


def _py_floormod(a: float, b: float) -> float:
    if b == 0 or math.isinf(a) or math.isnan(a) or math.isnan(b):
        return math.nan
    return a % b


@pytest.mark.parametrize("et", ["f32", "f64", "f16", "bf16"])
def test_mod_floormod_floats(et):
    rng = np.random.default_rng(SEED + 3)
    a = np.concatenate(
        [[5.0, -5.0, 5.0, -5.0, 0.0, -0.0, 7.5, np.inf, np.nan, 3.0, -3.0, 1e30, 5.0], rng.uniform(-100, 100, 300)]
    )
    b = np.concatenate(
        [[3.0, 3.0, -3.0, -3.0, 2.0, 2.0, 0.0, 2.0, 2.0, np.inf, np.inf, 7.0, 0.1], rng.uniform(-10, 10, 300)]
    )
    a, b = as_type(a, et), as_type(b, et)
    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    for op, fn in [("Mod", _py_fmod), ("FloorMod", _py_floormod)]:
        want = np.array([fn(p, q) for p, q in zip(a64, b64)])
        got = run_op(op, "opset1", [a, b], types=[et, et])[0]
        assert_ulps(got, want, et, 0, op)  # remainders are exact
        z = round_to(want, et) == 0
        np.testing.assert_array_equal(np.signbit(got[z]), np.signbit(round_to(want, et)[z]), err_msg=f"{op} zeros")


def _wrap(v: int, dt) -> int:
    bits = np.dtype(dt).itemsize * 8
    v &= (1 << bits) - 1
    return v - (1 << bits) if np.iinfo(dt).min < 0 and v >= 1 << (bits - 1) else v


@pytest.mark.parametrize("et", sorted(INTS))
def test_mod_floormod_integers(et):
    dt = INTS[et]
    info = np.iinfo(dt)
    signed = info.min < 0
    pairs = [(7, 3), (7, 5), (0, 4), (int(info.max), 7), (int(info.max), 1), (100, 100), (3, 7)]
    if signed:
        pairs += [
            (-7, 3),
            (7, -3),
            (-7, -3),
            (int(info.min), -1),
            (int(info.min), 3),
            (-1, int(info.min)),
            (int(info.min), int(info.min)),
        ]
    a = np.array([p for p, _ in pairs], dt)
    b = np.array([q for _, q in pairs], dt)
    trunc_rem = [_wrap(int(math.copysign(abs(p) % abs(q), p)) if p else 0, dt) for p, q in pairs]
    floor_rem = [_wrap(p % q, dt) for p, q in pairs]
    np.testing.assert_array_equal(run_op("Mod", "opset1", [a, b])[0], np.array(trunc_rem, dt))
    np.testing.assert_array_equal(run_op("FloorMod", "opset1", [a, b])[0], np.array(floor_rem, dt))
    for op in ("Mod", "FloorMod", "Divide"):
        with pytest.raises(irexec.ExecutionError, match="by zero"):
            run_op(op, "opset1", [a, np.zeros_like(b)])


def test_squared_difference():
    rng = np.random.default_rng(SEED + 4)
    a = rng.uniform(-100, 100, (3, 5)).astype(np.float32)
    b = rng.uniform(-100, 100, 5).astype(np.float32)
    got = run_op("SquaredDifference", "opset1", [a, b])[0]
    assert_ulps(got, (a.astype(np.float64) - b) ** 2, "f32", 2, "SquaredDifference")  # (a - b) rounds first
    ai = np.array([100, -100, 127, -128], np.int8)
    bi = np.array([-100, 100, -128, 127], np.int8)
    want = np.array([_wrap((int(p) - int(q)) ** 2, np.int8) for p, q in zip(ai, bi)], np.int8)
    np.testing.assert_array_equal(run_op("SquaredDifference", "opset1", [ai, bi])[0], want)  # wraps, as C
    h = as_type(rng.uniform(-4, 4, 50), "bf16")
    got = run_op("SquaredDifference", "opset1", [h, h[::-1].copy()], types=["bf16", "bf16"])[0]
    assert_ulps(got, (h.astype(np.float64) - h[::-1]) ** 2, "bf16", 1, "SquaredDifference bf16")


# ---- comparisons, logic, bits ---------------------------------------------------------------------

COMPARE = {
    "Equal": np.equal,
    "NotEqual": np.not_equal,
    "Less": np.less,
    "LessEqual": np.less_equal,
    "Greater": np.greater,
    "GreaterEqual": np.greater_equal,
}


@pytest.mark.parametrize("et", ["f32", "f64", "f16", "bf16", "i64", "u8", "i8", "boolean"])
def test_comparisons(et):
    if et == "boolean":
        a = np.array([[False, True], [True, False]])
        b = np.array([True, True])
    elif et in INTS:
        info = np.iinfo(INTS[et])
        a = np.array([[info.min, info.max, 0, 5], [info.max - 1, info.max, 3, 2]], INTS[et])
        b = np.array([info.min, info.max - 1, 0, 3], INTS[et])
    else:
        a = as_type(np.array([[np.nan, 0.0, -0.0, 1.0, np.inf], [1.0, -np.inf, np.nan, 2.5, 1e-40]]), et)
        b = as_type(np.array([np.nan, -0.0, 0.0, 1.0, np.inf]), et)
    for op, fn in COMPARE.items():
        got = run_op(op, "opset1", [a, b], types=[et, et] if et == "bf16" else None)[0]
        assert got.dtype == np.bool_ and got.shape == np.broadcast_shapes(a.shape, b.shape)
        np.testing.assert_array_equal(got, fn(a, b), err_msg=f"{op} {et}")  # exact: no conversion on the way
    # 2**53 + 1 and 2**53 are different int64 values (no float64 detour)
    big = np.array([2**53 + 1], np.int64)
    assert not run_op("Equal", "opset1", [big, np.array([2**53], np.int64)])[0][0]


def test_logical_and_bitwise():
    a = np.array([[False, True, False, True]])
    b = np.array([[False], [True]])
    for op, fn in [("LogicalAnd", np.logical_and), ("LogicalOr", np.logical_or), ("LogicalXor", np.logical_xor)]:
        np.testing.assert_array_equal(run_op(op, "opset1", [a, b])[0], fn(a, b))
        with pytest.raises(irexec.UnsupportedDtypeError):
            run_op(op, "opset1", [np.int32([1]), np.int32([1])])
    np.testing.assert_array_equal(run1("LogicalNot", "opset1", a), ~a)
    # OpenVINO's LogicalNot takes numbers too: 1 where x == 0
    np.testing.assert_array_equal(run1("LogicalNot", "opset1", np.float32([0, -0.0, 2, np.nan])), [1, 1, 0, 0])
    np.testing.assert_array_equal(run1("LogicalNot", "opset1", np.int8([0, -3])), np.int8([1, 0]))
    for et, dt in [("i8", np.int8), ("u8", np.uint8), ("i32", np.int32), ("u64", np.uint64), ("i64", np.int64)]:
        info = np.iinfo(dt)
        x = np.array([info.min, info.max, 0, 5, 6], dt)
        y = np.array([info.max, 3], dt)[:, None]
        for op, fn in [("BitwiseAnd", np.bitwise_and), ("BitwiseOr", np.bitwise_or), ("BitwiseXor", np.bitwise_xor)]:
            got = run_op(op, "opset13", [x, y])[0]
            assert got.dtype == dt
            np.testing.assert_array_equal(got, fn(x, y), err_msg=f"{op} {et}")
        np.testing.assert_array_equal(
            run1("BitwiseNot", "opset13", x),
            np.array([~int(v) & info.max if info.min == 0 else ~int(v) for v in x], dt),
        )
    np.testing.assert_array_equal(run_op("BitwiseXor", "opset13", [a, b])[0], a ^ b)
    np.testing.assert_array_equal(run1("BitwiseNot", "opset13", a), ~a)
    with pytest.raises(irexec.UnsupportedDtypeError):
        run_op("BitwiseAnd", "opset13", [np.float32([1]), np.float32([1])])


# ---- broadcasting: the three rules -----------------------------------------------------------------

N = None
SHAPE_RULES = [  # (auto_broadcast, shape a, shape b, result or None for an error)
    ("numpy", (2, 3), (3,), (2, 3)),
    ("numpy", (2, N), (1, 5), (2, 5)),
    ("numpy", (N,), (1,), (N,)),
    ("numpy", (N, 1), (1, N), (N, N)),
    ("numpy", (), (4, 1), (4, 1)),
    ("numpy", "dyn", (2,), "dyn"),
    ("numpy", (2, 3), (4,), None),
    ("none", (2, 3), (2, 3), (2, 3)),
    ("none", (2, N), (N, 3), (2, 3)),
    ("none", (1,), (N,), (1,)),
    ("none", "dyn", (2, 3), (2, 3)),
    ("none", (2, 3), (3,), None),
    ("none", (2, 3), (2, 1), None),
    # pdpd: into the first operand, aligned to its first dims (OpenVINO's IR reader: axis 0)
    ("pdpd", (2, 3, 4), (2, 3), (2, 3, 4)),
    ("pdpd", (2, 3, 4), (2, 1), (2, 3, 4)),
    ("pdpd", (2, 3, 4), (1, 1, 4), (2, 3, 4)),
    ("pdpd", (2, 3, 4), (), (2, 3, 4)),
    ("pdpd", (N, 3), (5,), (5, 3)),
    ("pdpd", (N, 3), (1,), (N, 3)),
    ("pdpd", (1, 2), (N,), (N, 2)),
    ("pdpd", (2, 1), (N,), (2, 1)),
    ("pdpd", (2, 3, 4), "dyn", "dyn"),
    ("pdpd", "dyn", (2,), "dyn"),
    ("pdpd", (3, 4), (2, 3, 4), None),
    ("pdpd", (1, 2), (3, 2), None),
    ("pdpd", (2, 4), (3,), None),
    ("pdpd", (2, 3, 4), (3, 4), None),
]


def _spec(shape, et="f32"):
    return TensorSpec(et, None if shape == "dyn" else shape)


@pytest.mark.parametrize("mode,a,b,want", SHAPE_RULES)
def test_broadcast_shape_rules(mode, a, b, want):
    for op, version, et in [
        ("Add", "opset1", "f32"),
        ("Less", "opset1", "i32"),
        ("LogicalOr", "opset1", "boolean"),
        ("BitwiseAnd", "opset13", "u8"),
        ("Mod", "opset1", "f16"),
    ]:
        if want is None:
            with pytest.raises(irexec.ShapeInferenceError):
                infer_op(op, version, [_spec(a, et), _spec(b, et)], auto_broadcast=mode)
            continue
        (out,) = infer_op(op, version, [_spec(a, et), _spec(b, et)], auto_broadcast=mode)
        assert out.shape == (None if want == "dyn" else want), (op, mode, a, b)
        assert out.dtype == ("boolean" if op == "Less" else et)


def test_broadcast_values_per_rule():
    rng = np.random.default_rng(SEED + 5)
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    b = rng.standard_normal((2, 1)).astype(np.float32)
    (y,) = run_op("Multiply", "opset1", [a, b], auto_broadcast="pdpd")
    np.testing.assert_array_equal(y, a * b[:, :, None])
    (y,) = run_op("FloorMod", "opset1", [a, np.float32(0.7)], auto_broadcast="pdpd")
    np.testing.assert_array_equal(y, np.mod(a, np.float32(0.7)))
    (y,) = run_op("Subtract", "opset1", [a, a[::-1]], auto_broadcast="none")
    np.testing.assert_array_equal(y, a - a[::-1])
    # non-contiguous operands and a zero-size dim
    t = a.transpose(2, 0, 1)[:, :, ::2]
    (y,) = run_op("Maximum", "opset1", [t, np.float32(0.1)])
    np.testing.assert_array_equal(y, np.maximum(t, np.float32(0.1)))
    (y,) = run_op("Greater", "opset1", [np.zeros((0, 3), np.float32), np.zeros(3, np.float32)])
    assert y.shape == (0, 3) and y.dtype == np.bool_


def test_type_and_attribute_errors():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(irexec.FormatError, match="must match"):
        run_op("Add", "opset1", [x, np.ones(3, np.float64)])
    with pytest.raises(irexec.FormatError, match="auto_broadcast"):
        run_op("Add", "opset1", [x, x], auto_broadcast="explicit")
    with pytest.raises(irexec.UnsupportedDtypeError):
        run_op("Add", "opset1", [np.array([True]), np.array([True])])
    with pytest.raises(irexec.FormatError):
        run1("Round", "opset5", x, mode="half_up")
    with pytest.raises(irexec.UnsupportedDtypeError):
        run1("Sin", "opset1", np.array([True]))


def _dynamic_model(tmp_path, type_, version, shapes, attrs, et="f32"):
    net = irbuild.Net("dyn")
    refs = [
        net.param(f"p{i}", et if not (type_ == "Select" and i == 0) else "boolean", s) for i, s in enumerate(shapes)
    ]
    y = net.op(type_, refs, attrs, version=version, out_et=et)
    net.result(y, "y")
    return irexec.load(net.save(tmp_path / "m.xml"))


def test_run_time_shapes_are_checked(tmp_path):
    m = _dynamic_model(tmp_path, "Add", "opset1", [(None, 3), (None, 3)], {"auto_broadcast": "none"})
    ok = m.infer({"p0": np.ones((2, 3), np.float32), "p1": np.ones((2, 3), np.float32)})["y"]
    assert ok.shape == (2, 3)
    with pytest.raises(irexec.ExecutionError, match="auto_broadcast=none"):
        m.infer({"p0": np.ones((2, 3), np.float32), "p1": np.ones((1, 3), np.float32)})
    m = _dynamic_model(tmp_path, "Add", "opset1", [(None, 3), (None,)], {"auto_broadcast": "pdpd"})
    y = m.infer({"p0": np.ones((2, 3), np.float32), "p1": np.float32([1, 2])})["y"]
    np.testing.assert_array_equal(y, [[2, 2, 2], [3, 3, 3]])
    with pytest.raises(irexec.ExecutionError, match="pdpd"):
        m.infer({"p0": np.ones((1, 3), np.float32), "p1": np.ones(2, np.float32)})
    m = _dynamic_model(tmp_path, "Multiply", "opset1", [(None,), (None,)], {})
    with pytest.raises(irexec.ExecutionError, match="broadcast"):
        m.infer({"p0": np.ones(2, np.float32), "p1": np.ones(3, np.float32)})
    m = _dynamic_model(tmp_path, "Select", "opset1", [(None,), (None,), (None,)], {"auto_broadcast": "none"})
    with pytest.raises(irexec.ExecutionError, match="none"):
        m.infer({"p0": np.ones(2, bool), "p1": np.ones(2, np.float32), "p2": np.ones(1, np.float32)})


# ---- Select -------------------------------------------------------------------------------------------


def test_select():
    rng = np.random.default_rng(SEED + 6)
    cond = rng.random((2, 1, 4)) > 0.5
    a = rng.standard_normal((3, 1)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    (y,) = run_op("Select", "opset1", [cond, a, b])
    np.testing.assert_array_equal(y, np.where(cond, a, b))
    assert y.shape == (2, 3, 4)
    t = rng.standard_normal((2, 3, 4)).astype(np.float32)
    e2 = rng.standard_normal((2, 3)).astype(np.float32)
    (y,) = run_op("Select", "opset1", [cond[:, :, 0], t, e2], auto_broadcast="pdpd")  # [2,1], [2,3,4], [2,3]
    np.testing.assert_array_equal(y, np.where(cond[:, :, :1], t, e2[:, :, None]))
    with pytest.raises(irexec.FormatError, match="boolean"):
        run_op("Select", "opset1", [np.int32([1]), b, b])
    with pytest.raises(irexec.FormatError, match="must match"):
        run_op("Select", "opset1", [cond, a, b.astype(np.float16)])
    for mode, shapes, want in [
        ("numpy", [(2, 1, 1), (3, 1), (4,)], (2, 3, 4)),
        ("numpy", [(N, 1), (1, 5), (1,)], (N, 5)),
        ("none", [(2, N), (N, 3), (2, 3)], (2, 3)),
        ("pdpd", [(2, 1), (2, 3, 4), (2, 3)], (2, 3, 4)),
        ("pdpd", [(N,), (2, 3), (1,)], (2, 3)),
        ("pdpd", [(2, 3, 4, 5), (2, 3, 4), (2,)], None),
        ("pdpd", [(3, 4), (2, 3, 4), (2,)], None),
        ("pdpd", [(2, 3), (2, 1), (2,)], None),
    ]:
        specs = [_spec(shapes[0], "boolean"), _spec(shapes[1]), _spec(shapes[2])]
        if want is None:
            with pytest.raises(irexec.ShapeInferenceError):
                infer_op("Select", "opset1", specs, auto_broadcast=mode)
        else:
            assert infer_op("Select", "opset1", specs, auto_broadcast=mode)[0].shape == want


def test_select_with_a_uniform_condition_is_np_where():
    """A condition true or false everywhere (checked first from Select.UNIFORM_MIN elements)
    gives the chosen operand, broadcast to the result's shape when it is smaller: the same
    values, shape and type as np.where, with NaN and signed zeros kept; a mixed condition of
    that size goes through np.where."""
    from irexec.ops.elementwise import Select

    rng = np.random.default_rng(SEED + 7)
    side = int(np.sqrt(Select.UNIFORM_MIN)) + 1
    a = rng.standard_normal((1, 3, side, side)).astype(np.float32)
    a[0, 0, 0, :3] = [np.nan, -0.0, np.inf]
    b = np.float32(-3.4e38)
    for cond in (np.ones((1, 1, side, side), bool), np.zeros((1, 1, side, side), bool), rng.random((side, side)) > 0.5):
        for then, other in ((a, b), (b, a), (a[:, :1], a)):
            (y,) = run_op("Select", "opset1", [cond, np.asarray(then), np.asarray(other)])
            want = np.where(cond, then, other)
            assert y.shape == want.shape and y.dtype == want.dtype
            np.testing.assert_array_equal(y, want)
            np.testing.assert_array_equal(np.signbit(y), np.signbit(want))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.bool_])
def test_select_gives_np_where_in_c_order(dtype):
    """A mixed condition: np.where's values, shape and type bit for bit (NaN payloads, signed
    zeros), whichever operand has the result's shape (then, else, both, neither: the condition
    alone), with operands given as views in another order (T5's position bias), and always a
    C-ordered result (np.where keeps a view's order, which every attention layer reading it
    copied again)."""
    rng = np.random.default_rng(SEED + 8)
    raw = (rng.standard_normal((1, 9, 7, 3)) * 4).astype(dtype)
    if dtype in (np.float32, np.float64):
        raw.flat[:4] = [np.nan, -0.0, np.inf, -np.inf]
        raw.flat[4] = np.array(np.nan, dtype) * -1  # the other NaN sign
    view = raw.transpose(0, 3, 1, 2)  # (1, 3, 9, 7), not C-ordered
    small = np.asarray(raw[0, :1, :, 0]).astype(dtype)  # (1, 7)
    scalar = np.array(-0.0 if dtype != np.bool_ else False, dtype)
    for cond in (rng.random((1, 1, 9, 7)) > 0.4, rng.random((1, 3, 9, 7)) > 0.6):
        for then, other in (
            (view, scalar),
            (scalar, view),
            (view, np.ascontiguousarray(view[:, ::-1])),
            (small, scalar),
        ):
            (y,) = run_op("Select", "opset1", [cond, then, other])
            want = np.where(cond, then, other)
            assert y.shape == want.shape and y.dtype == want.dtype and y.flags.c_contiguous
            np.testing.assert_array_equal(y.view(np.uint8), np.ascontiguousarray(want).view(np.uint8))


def test_select_none_rejects_rank_mismatch():
    with pytest.raises(irexec.ShapeInferenceError):
        run_op("Select", "opset1", [np.array(True), np.int64([1, 2]), np.int64([3, 4])], auto_broadcast="none")


# ---- OpenVINO as the oracle, on seeded random shapes ------------------------------------------------

RNG_CASES = 12


def _random_shapes(rng, n: int, max_rank: int = 4):
    """n numpy-broadcastable shapes: a random full shape, each operand a suffix with some dims 1."""
    rank = int(rng.integers(0, max_rank + 1))
    full = tuple(int(d) for d in rng.integers(1, 5, rank))
    out = []
    for _ in range(n):
        r = int(rng.integers(0, rank + 1))
        s = [1 if rng.random() < 0.3 else d for d in full[rank - r :]]
        out.append(tuple(s))
    return full, out


def _dyn(rng, shape, dynamic: bool):
    return tuple(None if dynamic and rng.random() < 0.5 else d for d in shape)


def _float_values(rng, shape, lo=-4.0, hi=4.0, specials=True):
    v = rng.uniform(lo, hi, shape).astype(np.float32)
    if specials and v.size >= 4:
        flat = v.reshape(-1)
        picks = rng.choice(flat.size, min(4, flat.size), replace=False)
        flat[picks] = rng.choice(np.float32([np.nan, np.inf, -np.inf, 0.5, -2.5, -0.0]), picks.size)
    return v


def _cases():
    """(seed offset, dynamic dims?) pairs: half the cases give OpenVINO and irexec dynamic dims."""
    return [(i, i % 2 == 1) for i in range(RNG_CASES)]


@pytest.mark.parametrize("case,dyn", _cases())
def test_unary_against_openvino(tmp_path, case, dyn):
    o = oc.ops()
    rng = np.random.default_rng(SEED + 100 + case)
    shape, _ = _random_shapes(rng, 0)
    x = oc.param("x", _dyn(rng, shape, dyn))
    u = oc.param("u", _dyn(rng, shape, dyn))
    w = oc.param("w", _dyn(rng, shape, dyn))
    outs = [
        o.erf(x),
        o.sin(x),
        o.cos(x),
        o.floor(x),
        o.ceiling(x),
        o.sign(x),
        o.round(x, "half_to_even"),
        o.round(x, "half_away_from_zero"),
        o.is_nan(x),
        o.is_inf(x),
        o.is_finite(x),
        o.abs(x),
        o.negative(x),
        o.is_inf(x, {"detect_negative": False}),
        o.is_inf(x, {"detect_positive": False}),
        o.sinh(x),
        o.cosh(x),
        o.atan(x),
        o.asin(u),
        o.acos(u),
        o.tan(u),
        o.sqrt(o.abs(x)),
        o.log(o.abs(x)),
        o.exp(w),
    ]
    w_values = rng.uniform(-90, 90, shape).astype(np.float32)
    if w_values.size > 2:  # the CPU plugin's Exp gives inf for NaN (the reference NaN): no NaN for Exp
        w_values.reshape(-1)[:2] = [np.inf, -np.inf]
    feeds = {"x": _float_values(rng, shape), "u": _float_values(rng, shape, -1.0, 1.0, specials=False), "w": w_values}
    oc.check(tmp_path, [x, u, w], outs, feeds, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("case", range(6))
def test_unary_integers_against_openvino(tmp_path, case):
    o = oc.ops()
    rng = np.random.default_rng(SEED + 200 + case)
    shape, _ = _random_shapes(rng, 0)
    x = oc.param("x", _dyn(rng, shape, case % 2 == 1), np.int32)
    feeds = {"x": rng.integers(-50, 50, shape).astype(np.int32)}
    outs = [
        o.erf(x),
        o.cos(x),
        o.floor(x),
        o.ceiling(x),
        o.sign(x),
        o.round(x, "half_to_even"),
        o.abs(x),
        o.negative(x),
        o.sqrt(o.abs(x)),
        o.tan(x),
        o.atan(x),
        o.sinh(o.floor_mod(x, o.constant(np.int32(9)))),
        o.logical_not(x),
        o.bitwise_not(x),
    ]
    oc.check(tmp_path, [x], outs, feeds)
    # the reference truncates these where the CPU plugin rounds: shapes only here
    oc.check(tmp_path, [x], [o.sin(x), o.exp(x), o.log(x), o.asin(x)], feeds, values=False, name="trunc")


@pytest.mark.parametrize("case,dyn", _cases())
def test_binary_against_openvino(tmp_path, case, dyn):
    o = oc.ops()
    rng = np.random.default_rng(SEED + 300 + case)
    _, (sa, sb) = _random_shapes(rng, 2)
    a, b = oc.param("a", _dyn(rng, sa, dyn)), oc.param("b", _dyn(rng, sb, dyn))
    ai, bi = oc.param("ai", _dyn(rng, sa, dyn), np.int32), oc.param("bi", _dyn(rng, sb, dyn), np.int32)
    outs = [
        o.add(a, b),
        o.subtract(a, b),
        o.multiply(a, b),
        o.divide(a, b),
        o.maximum(a, b),
        o.minimum(a, b),
        o.squared_difference(a, b),
        o.mod(a, b),
        o.floor_mod(a, b),
        o.power(o.abs(a), b),
        o.add(ai, bi),
        o.subtract(ai, bi),
        o.multiply(ai, bi),
        o.squared_difference(ai, bi),
        o.mod(ai, bi),
        o.floor_mod(ai, bi),
        o.maximum(ai, bi),
    ]
    bv = rng.uniform(0.5, 3.0, sb).astype(np.float32) * rng.choice(np.float32([-1, 1]), sb)
    biv = rng.integers(1, 9, sb).astype(np.int32) * rng.choice(np.int32([-1, 1]), sb)
    feeds = {
        "a": _float_values(rng, sa, -20, 20, specials=False),
        "b": bv,
        "ai": rng.integers(-100, 100, sa).astype(np.int32),
        "bi": biv,
    }
    oc.check(tmp_path, [a, b, ai, bi], outs, feeds, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case,dyn", _cases())
def test_compare_logic_bits_against_openvino(tmp_path, case, dyn):
    o = oc.ops()
    rng = np.random.default_rng(SEED + 400 + case)
    _, (sa, sb) = _random_shapes(rng, 2)
    a, b = oc.param("a", _dyn(rng, sa, dyn)), oc.param("b", _dyn(rng, sb, dyn))
    p, q = oc.param("p", _dyn(rng, sa, dyn), np.bool_), oc.param("q", _dyn(rng, sb, dyn), np.bool_)
    ai, bi = oc.param("ai", _dyn(rng, sa, dyn), np.int32), oc.param("bi", _dyn(rng, sb, dyn), np.int32)
    outs = [
        o.equal(a, b),
        o.not_equal(a, b),
        o.less(a, b),
        o.less_equal(a, b),
        o.greater(a, b),
        o.greater_equal(a, b),
        o.equal(ai, bi),
        o.less(ai, bi),
        o.greater_equal(p, q),
        o.logical_and(p, q),
        o.logical_or(p, q),
        o.logical_xor(p, q),
        o.logical_not(p),
        o.bitwise_and(ai, bi),
        o.bitwise_or(ai, bi),
        o.bitwise_xor(ai, bi),
        o.bitwise_not(ai),
        o.bitwise_and(p, q),
        o.bitwise_xor(p, q),
        o.bitwise_not(q),
    ]
    # small integers: plenty of equal pairs; no NaN (the CPU plugin's Greater(NaN, y) is true, the
    # reference's false: NaN comparisons are checked against numpy in test_comparisons)
    av = rng.integers(-2, 3, sa).astype(np.float32)
    bv = rng.integers(-2, 3, sb).astype(np.float32)
    feeds = {
        "a": av,
        "b": bv,
        "p": rng.random(sa) > 0.5,
        "q": rng.random(sb) > 0.5,
        "ai": rng.integers(-99, 99, sa).astype(np.int32),
        "bi": rng.integers(-99, 99, sb).astype(np.int32),
    }
    oc.check(tmp_path, [a, b, p, q, ai, bi], outs, feeds)


@pytest.mark.parametrize("case,dyn", _cases())
def test_select_against_openvino(tmp_path, case, dyn):
    o = oc.ops()
    rng = np.random.default_rng(SEED + 500 + case)
    _, (sc, st, se) = _random_shapes(rng, 3)
    c = oc.param("c", _dyn(rng, sc, dyn), np.bool_)
    t, e = oc.param("t", _dyn(rng, st, dyn)), oc.param("e", _dyn(rng, se, dyn))
    ti = oc.param("ti", _dyn(rng, st, dyn), np.int64)
    full = np.broadcast_shapes(sc, st, se)
    # none: equal shapes; pdpd: a prefix of the target's dims, some of them 1
    pre = tuple(1 if rng.random() < 0.3 else d for d in full[: int(rng.integers(0, len(full) + 1))])
    tt, pp = oc.param("tt", _dyn(rng, full, dyn)), oc.param("pp", _dyn(rng, pre, dyn))
    outs = [
        o.select(c, t, e),
        o.select(c, ti, o.constant(np.int64(-1))),
        o.select(o.greater(tt, e), tt, tt, "none"),
        o.multiply(tt, tt, "none"),
        o.add(tt, pp, "pdpd"),
        o.less(tt, pp, "pdpd"),
    ]
    feeds = {
        "c": rng.random(sc) > 0.5,
        "t": rng.standard_normal(st).astype(np.float32),
        "e": rng.standard_normal(se).astype(np.float32),
        "ti": rng.integers(0, 9, st).astype(np.int64),
        "tt": rng.standard_normal(full).astype(np.float32),
        "pp": rng.standard_normal(pre).astype(np.float32),
    }
    oc.check(tmp_path, [c, t, e, ti, tt, pp], outs, feeds)
    # the CPU plugin cannot compile a pdpd Select ("Unsupported auto broadcast specification"):
    # shapes against OpenVINO here, values against numpy in test_select
    cp = oc.param("cp", _dyn(rng, pre, dyn), np.bool_)
    feeds["cp"] = rng.random(pre) > 0.5
    oc.check(tmp_path, [c, t, e, ti, tt, pp, cp], [o.select(cp, tt, pp, "pdpd")], feeds, values=False, name="pdpd")


@pytest.mark.parametrize("et", [np.float16, np.float64])
def test_other_float_types_against_openvino(tmp_path, et):
    o = oc.ops()
    rng = np.random.default_rng(SEED + 600)
    x = oc.param("x", (None, 5), et)
    y = oc.param("y", (5,), et)
    outs = [
        o.erf(x),
        o.sin(x),
        o.floor(x),
        o.round(x, "half_away_from_zero"),
        o.sign(x),
        o.mod(x, y),
        o.floor_mod(x, y),
        o.squared_difference(x, y),
        o.less(x, y),
        o.is_finite(x),
    ]
    feeds = {"x": rng.uniform(-6, 6, (3, 5)).astype(et), "y": rng.uniform(0.5, 2, 5).astype(et)}
    tol = 2e-3 if et == np.float16 else 1e-6
    oc.check(tmp_path, [x, y], outs, feeds, rtol=tol, atol=tol)
