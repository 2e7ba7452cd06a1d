"""Special functions the ops share, vectorized in numpy (no scipy dependency).

erf: float64 Taylor series below |x| = 0.5 (exact to double precision there), and above it the
Chebyshev-fitted erfc of Numerical Recipes (`erfcc`, fractional error below 1.2e-7 of erfc, so
at most 6e-8 absolute where erf >= 0.52): under one float32 ulp. float64 results use Python's
math.erf element by element (exact, slower).
"""

from __future__ import annotations

import math

import numpy as np

_TAYLOR = [2 / math.sqrt(math.pi) * (-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(14)]
_ERFC = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398,
         1.48851587, -0.82215223, 0.17087277)
_exact_erf = np.frompyfunc(math.erf, 1, 1)


def erf(x: np.ndarray, exact: bool = False) -> np.ndarray:
    """erf of x, computed in float64 (exact with `exact`, else within 1e-7 relative)."""
    v = np.asarray(x, np.float64)
    if exact:
        return _exact_erf(v).astype(np.float64)
    z = np.abs(v)
    small = z < 0.5
    out = np.empty_like(v)
    if small.any():
        s = v[small]
        s2 = s * s
        acc = np.zeros_like(s)
        for c in reversed(_TAYLOR):
            acc = acc * s2 + c
        out[small] = s * acc
    big = ~small
    if big.any():
        zb = z[big]
        t = 1.0 / (1.0 + 0.5 * zb)
        poly = np.zeros_like(zb)
        for c in reversed(_ERFC[1:]):
            poly = (poly + c) * t
        erfc = t * np.exp(-zb * zb + _ERFC[0] + poly)
        out[big] = np.where(v[big] < 0, erfc - 1.0, 1.0 - erfc)
    return out
