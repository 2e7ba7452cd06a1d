"""@njit steps of an LSTM sequence (`kernels/recurrent.py`): the whole time loop in one call, so a
step costs its arithmetic instead of a dozen numpy calls and a float64 copy of R read per step.

Per step, the recurrent product H @ R^T runs from R packed in float32 panels of PANEL gate rows
(`pack`: panel p holds rows p*PANEL.. of R, column by column, so one hidden unit's weights of the
panel are PANEL consecutive floats): each panel's PANEL sums sit in four float64 vectors while the
hidden units go by, the float32 weight widened (exactly) and multiplied by the float64 state (a
float32 value: the product is exact) and added, one rounding a term (a fused multiply-add where the
machine has one). Reading R in float32 halves what a step reads against the float64 copy the
numpy path multiplies (2048x512: 4 MB a step, from the L3 cache). Then the gates, unit by unit in
float64, as ops/recurrent.py's numpy step computes them: sigmoid 1 / (1 + exp(-z)), tanh, the
clip before them, and the cell and hidden states rounded to float32 at every step.

Serial and nogil; one specialization (float32 data: states and outputs float64 arrays holding
float32 values)."""

from __future__ import annotations

import math

import numpy as np

from .jit import njit
from .simd import LANES, dfma, dsplat, dstore, dwiden, vload

PANEL = 4 * LANES  # gate rows a panel: four vectors of float64 sums


def pack(r: np.ndarray) -> np.ndarray:
    """R [G, hidden] (G = 4 hidden) as float32 panels [ceil(G / PANEL), hidden * PANEL]: panel p,
    hidden unit q holds R[p * PANEL : (p + 1) * PANEL, q] (rows past G are zeros)."""
    g, hs = r.shape
    panels = -(-g // PANEL)
    full = np.zeros((panels * PANEL, hs), np.float32)
    full[:g] = r
    return np.ascontiguousarray(full.reshape(panels, PANEL, hs).transpose(0, 2, 1)).reshape(panels, hs * PANEL)


@njit(error_model="numpy", inline="always")
def _clip(z, clip):
    """z within [-clip, clip] when clip > 0 (NaN stays NaN, as np.clip keeps it)."""
    if clip > 0.0:
        if z < -clip:
            return -clip
        if z > clip:
            return clip
    return z


@njit(error_model="numpy", inline="always")
def _sigmoid(z):
    return 1.0 / (1.0 + math.exp(-z))


@njit(error_model="numpy")
def _recurrent_product(packed, h, a):
    """a[j] = sum over hidden units q, in order, of h[q] * R[j, q], for every gate row j (and the
    zero rows of the last panel)."""
    panels = packed.shape[0]
    hs = h.size
    for p in range(panels):
        flat = packed[p]
        a0 = dsplat(0.0)
        a1 = dsplat(0.0)
        a2 = dsplat(0.0)
        a3 = dsplat(0.0)
        for q in range(hs):
            s = dsplat(h[q])
            at = q * PANEL
            a0 = dfma(dwiden(vload(flat, at)), s, a0)
            a1 = dfma(dwiden(vload(flat, at + LANES)), s, a1)
            a2 = dfma(dwiden(vload(flat, at + 2 * LANES)), s, a2)
            a3 = dfma(dwiden(vload(flat, at + 3 * LANES)), s, a3)
        o = p * PANEL
        dstore(a, o, a0)
        dstore(a, o + LANES, a1)
        dstore(a, o + 2 * LANES, a2)
        dstore(a, o + 3 * LANES, a3)


@njit(error_model="numpy")
def lstm_steps(gx, packed, h, c, y, reverse, clip):
    """The LSTM over time, every batch item: gx [batch, T, 4 hidden] is X @ W^T + W's and R's
    biases (float64, gate blocks f, i, c, o), packed R (`pack`), h and c [batch, hidden] the initial
    states (float64 holding float32 values; they end as the last states), y [batch, T, hidden] the
    hidden states by input position (reverse: the inputs taken from the last)."""
    batch, steps, _ = gx.shape
    n = h.shape[1]
    a = np.empty(packed.shape[0] * PANEL)
    for b in range(batch):
        hb = h[b]
        cb = c[b]
        for t in range(steps):
            k = steps - 1 - t if reverse else t
            _recurrent_product(packed, hb, a)
            g = gx[b, k]
            yk = y[b, k]
            for j in range(n):
                ft = _sigmoid(_clip(g[j] + a[j], clip))
                it = _sigmoid(_clip(g[n + j] + a[n + j], clip))
                ct = math.tanh(_clip(g[2 * n + j] + a[2 * n + j], clip))
                ot = _sigmoid(_clip(g[3 * n + j] + a[3 * n + j], clip))
                cn = np.float64(np.float32(ft * cb[j] + it * ct))
                cb[j] = cn
                yk[j] = np.float64(np.float32(ot * math.tanh(cn)))
            for j in range(n):
                hb[j] = yk[j]


def warm() -> None:
    r = np.ones((8, 2), np.float32)
    gx = np.zeros((1, 2, 8))
    lstm_steps(gx, pack(r), np.zeros((1, 2)), np.zeros((1, 2)), np.empty((1, 2, 2)), False, 0.0)
