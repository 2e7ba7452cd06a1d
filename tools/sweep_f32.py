"""The error bound of the float32-arithmetic kernels, over every float32 input.

    python3 -m tools.sweep_f32 [--step 1] [--kernels swish_f32]
    python3 -m tools.sweep_f32 --bits [--step 1]

Most element-wise kernels compute in float64 and round once (tests/test_activation_kernels.py).
The ones listed here compute in float32 on 16 lanes for speed, so their results are within a few
ulps instead; a univariate float32 function can be checked on all 2^32 inputs, which is the
proof of its bound. For each kernel: the largest error in ulps over the finite inputs (NaN
inputs give NaN: the tests check them), the input where it occurs, how many float32 values apart
a result and the exact value rounded can be (the tests' measure), and the share of results that
are that value. The reference is the same formula in float64 with numpy's exp
(its error, about 1e-16 relative, moves the ulp counts by under 1e-8).

An ulp is the spacing of float32 at the exact value rounded to float32 (the smallest subnormal,
2^-149, below float32's normals). `--step N` checks every Nth bit pattern only (quick looks);
the whole sweep takes about eight minutes on the test machine.

Measured (all 2^32 inputs, about 9 minutes each):
- swish_f32: within 3.344 ulps (the worst at x = -5.9388933), at most 3 floats from the exact
  value rounded, 96.24% of all results that value.
- gelu_erf_f32: within 5.890 ulps (the worst at x = -3.020566), at most 6 floats, 96.60%. Its
  error is mostly float32's roundings, not the approximations: x e (p / (z + L)) / 2 with every
  factor and product rounded (emulated with the exp, erfcx and reciprocal exact: 3.6 ulps).
- erf_f32: within 1.920 ulps (the worst at x = 0.76792967), at most 2 floats, 99.62%.

`--bits` checks instead the kernels that must give the numpy path's bits but divide another
way (BITS): every float32 input's result against the numpy formula's, NaN against NaN and the
sign of a zero included. Measured: hswish and hsigmoid (`elementwise_loops._div6`, a multiply
by 1/3 corrected by fused multiply-adds in place of / 6.0) equal on all 2^32 inputs.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

CHUNK = 1 << 24


def _ulp(rounded: np.ndarray) -> np.ndarray:
    """float32's spacing at each value's magnitude (its binade's, 2^-149 below the normals),
    in float64: np.spacing of the largest float32 overflows."""
    exponent = np.frexp(np.abs(rounded).astype(np.float64))[1]
    return np.ldexp(1.0, np.where(rounded == 0, -149, np.maximum(exponent - 24, -149)))


def _ordered(f: np.ndarray) -> np.ndarray:
    """float32 values as integers in their order (adjacent floats one apart, -0.0 = +0.0)."""
    i = f.view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)


def _swish_reference(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, x / (1.0 + e), x * e / (1.0 + e))


def _gelu_reference(x: np.ndarray) -> np.ndarray:
    from irexec import special

    return 0.5 * x * special.erfc(-x / math.sqrt(2.0))


def _kernel(name: str):
    from irexec.kernels import elementwise_loops as k

    fn = getattr(k, name)

    def run(x: np.ndarray) -> np.ndarray:
        out = np.empty_like(x)
        fn(0, -(-x.size // k.BLOCK), x, out)
        return out

    return run


def _erf_reference(x: np.ndarray) -> np.ndarray:
    from irexec import special

    return special.erf(x)


KERNELS = {"swish_f32": _swish_reference, "gelu_erf_f32": _gelu_reference, "erf_f32": _erf_reference}


def _hswish_numpy(x: np.ndarray) -> np.ndarray:
    return x * np.clip(x + 3.0, 0.0, 6.0) / 6.0


def _hsigmoid_numpy(x: np.ndarray) -> np.ndarray:
    return np.clip(x + 3.0, 0.0, 6.0) / 6.0


# kernels whose float32 results must equal their numpy formula's in float64 rounded once
BITS = {"hswish": _hswish_numpy, "hsigmoid": _hsigmoid_numpy}


def sweep_bits(name: str, step: int = 1) -> tuple[int, int]:
    """(inputs, results whose bits differ from the numpy formula's) of kernel `name` over every
    step-th float32 bit pattern; NaNs compare equal to NaNs."""
    run = _kernel(name)
    differ = count = 0
    for start in range(0, 1 << 32, CHUNK):
        x = np.arange(start, start + CHUNK, step, dtype=np.uint64).astype(np.uint32).view(np.float32)
        got = run(x)
        with np.errstate(all="ignore"):
            want = BITS[name](x.astype(np.float64)).astype(np.float32)
        same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
        differ += int(np.count_nonzero(~same))
        count += x.size
    return count, differ


def sweep(name: str, step: int = 1) -> dict:
    """The worst error in ulps of kernel `name` over every step-th float32 bit pattern."""
    run = _kernel(name)
    reference = KERNELS[name]
    worst, worst_x, steps, exact, count = 0.0, 0.0, 0, 0, 0
    for start in range(0, 1 << 32, CHUNK):
        bits = np.arange(start, start + CHUNK, step, dtype=np.uint64).astype(np.uint32)
        x = bits.view(np.float32)
        x = x[np.isfinite(x)]
        if not x.size:
            continue
        got = run(x).astype(np.float64)
        with np.errstate(all="ignore"):
            want = reference(x.astype(np.float64))
        rounded = want.astype(np.float32)
        ulp = _ulp(rounded)
        err = np.abs(got - want) / ulp
        i = int(np.argmax(err))
        if err[i] > worst:
            worst, worst_x = float(err[i]), float(x[i])
        apart = np.abs(_ordered(got.astype(np.float32)) - _ordered(rounded))
        steps = max(steps, int(apart.max()))
        exact += int(np.count_nonzero(apart == 0))
        count += x.size
    return {
        "kernel": name,
        "inputs": count,
        "worst_ulps": worst,
        "at": worst_x,
        "steps": steps,
        "exact_share": exact / count,
    }


def fit_erfcx_f32(degree: int = 9, top: float = 0.52) -> list:
    """`elementwise_loops._ERFCX_F32`: erfcx(z) (z + L) as a polynomial in y = (z - L) / (z + L)
    over [-1, top] (z from 0 to 13 / sqrt 2 at the default), by Chebyshev least squares weighted
    by the function's inverse (relative error), in monomials rounded to float32, highest degree
    first. erfcx from Cody's float64 erfc times exp(z^2) (no underflow below z = 26)."""
    from irexec import special

    L = special.ERFCX_L
    y = np.linspace(-1.0, top, 200_001)
    z = L * (1.0 + y) / (1.0 - y)
    f = special.erfc(z) * np.exp(z * z) * (z + L)
    fit = np.polynomial.chebyshev.Chebyshev.fit(y, f, degree, domain=[-1.0, top], w=1.0 / f)
    mono = fit.convert(kind=np.polynomial.Polynomial, domain=[-1.0, 1.0], window=[-1.0, 1.0]).coef
    return [np.float32(c) for c in mono[::-1]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--step", type=int, default=1, help="check every Nth bit pattern (default: all)")
    ap.add_argument("--kernels", default=",".join(KERNELS), help="comma-separated kernel names")
    ap.add_argument("--fit", action="store_true", help="print gelu_erf_f32's erfcx coefficients and stop")
    ap.add_argument("--bits", action="store_true", help="check the BITS kernels against their numpy formulas")
    args = ap.parse_args()
    if args.fit:
        print(", ".join(repr(float(c)) for c in fit_erfcx_f32()))
        return
    if args.bits:
        for name in BITS:
            t = time.perf_counter()
            count, differ = sweep_bits(name, args.step)
            print(f"{name}: {count} inputs, {differ} results differ ({time.perf_counter() - t:.0f} s)")
        return
    for name in args.kernels.split(","):
        t = time.perf_counter()
        r = sweep(name, args.step)
        print(
            f"{r['kernel']}: {r['inputs']} finite inputs, worst {r['worst_ulps']:.3f} ulps at x = {r['at']!r}, "
            f"at most {r['steps']} floats from the exact value rounded, {100 * r['exact_share']:.2f}% that value "
            f"({time.perf_counter() - t:.0f} s)"
        )


if __name__ == "__main__":
    main()
