"""The recurrent family's dispatch: an LSTM sequence's time loop (ops/recurrent.py owns the
semantics, the checks and the numpy path) by the numba kernel of `recurrent_loops` when `jit.use`
says it pays: float32 data, the default activations (sigmoid, tanh, tanh), every item running the
whole sequence (no sequence_lengths masking). The kernel computes what the numpy step computes:
the gates in float64 from the float32 weights and states, the states rounded to float32 at every
step; only the recurrent product's order of additions differs (in order over the hidden units,
where the numpy path's is BLAS's), so the two agree to float64 roundings (after the rounding to
float32, equal or one float32 unit apart at a tie).
"""

from __future__ import annotations

import numpy as np

from . import jit

FAMILY = "recurrent"  # its name in jit.FAMILIES
# seconds the kernel saves per step and batch item and per recurrent weight (hidden 512, one core:
# the numpy step 330 us, the kernel's 135-160; the numpy step reads R's float64 copy every step)
STEP_SAVING = 20e-6
SAVING_PER_WEIGHT = 2e-10


def lstm_sequence(op, gx: np.ndarray, r: np.ndarray, d: int, h0: np.ndarray, c0: np.ndarray, reverse: bool):
    """(Y [batch, T, hidden], last H, last C), float64 holding float32 values, by the kernel; or
    None when the numpy path should run. op: the layer (it remembers a constant R's panels,
    `Op.derived`); gx [batch, T, 4 hidden] float64 (X @ W^T + biases) of direction d; r the op's R
    input as given ([dirs, 4 hidden, hidden]); h0 and c0 [batch, hidden] the initial states."""
    batch, steps = gx.shape[:2]
    hs = r.shape[2]
    if r.dtype != np.float32 or not gx.size:
        return None
    saving = batch * steps * (STEP_SAVING + r[d].size * SAVING_PER_WEIGHT)
    if not jit.use(r[d].size * 8 * steps * batch, saving, FAMILY):
        return None
    from . import recurrent_loops as k

    h = np.array(h0, np.float64, order="C")
    c = np.array(c0, np.float64, order="C")
    y = np.empty((batch, steps, hs))
    packed = op.derived("packed R", r, d, lambda: k.pack(r[d]))
    jit.call(k.lstm_steps, np.ascontiguousarray(gx), packed, h, c, y, reverse, float(op.clip))
    return y, h, c
