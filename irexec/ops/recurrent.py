"""Recurrent cells and sequences with OpenVINO semantics: LSTMCell-1/-4, GRUCell-3, RNNCell-1
(OpenVINO writes RNNCell as version opset1: it is ov::op::v0::RNNCell, listed again in opset3),
LSTMSequence-5, GRUSequence-5, RNNSequence-5. (LSTMSequence-1, ov::op::v0::LSTMSequence, is no
longer in OpenVINO 2026.4's opset1: its reader refuses the layer, and so does irexec.)

Layouts (OpenVINO's): a cell takes X [batch, input], states [batch, hidden], W [G*hidden, input],
R [G*hidden, hidden], B [G*hidden]; a sequence takes X [batch, seq, input], states
[batch, dirs, hidden], sequence_lengths [batch], W [dirs, G*hidden, input], R [dirs, G*hidden,
hidden], B [dirs, G*hidden] and gives Y [batch, dirs, seq, hidden] and the last states
[batch, dirs, hidden]. Gate blocks, in order: LSTM f, i, c, o; GRU z, r, h (linear_before_reset:
B holds a fourth block, R's bias of the h gate); RNN one block. LSTMCell-1's peepholes P
[3*hidden] are in the order f, i, o (OpenVINO's reference splits them so).

Activations: sigmoid, tanh, relu (matched case-insensitively, as the CPU plugin does); these
take no alpha or beta, so activations_alpha/activations_beta are read and unused. clip > 0 clamps
every gate's pre-activation to [-clip, clip] (not the cell state before h); clip <= 0 is none.

Numerics: each step's gates are computed in float64 from the float64 values of the weights; the
states carried between steps (H, and C for LSTM, from which H is then computed) are rounded to the
data type at every step, as OpenVINO's reference (which computes in the data type) does; Y holds
those rounded states. So a sequence gives exactly what its cell chained step by step gives (a state
output fed back is of the data type). Measured against the CPU plugin (f32, 300 steps, hidden 16):
on contracting weights both per-step rounding and float64 states stay within 4e-7 of it at every
step; on weights near the chaotic regime both depart from it after the same 10 to 170 steps (the
CPU plugin's own float32 arithmetic is what gets amplified), neither consistently later, so the
choice follows the reference's semantics. X @ W is one GEMM over every time step, then one GEMM
per step over the batch and all gates (GRU without linear_before_reset needs a second one, for
(r*H) @ Rh). An f32 LSTMSequence with the default activations and no masking runs its time loop
in the recurrent family's numba kernel once it pays (kernels/recurrent.py: the same float64
gates, R read in float32; hidden 512: 330 -> 135 us a step).

sequence_lengths (as OpenVINO's reference and CPU plugin): batch item b runs its first L[b]
steps (reverse: its first L[b] inputs in reverse order, as ReverseSequence does); Y is zero past
L[b]; the last states are those after step L[b]; L[b] = 0 gives zero last states (not the initial
ones) whenever some length differs from the sequence length.

Where irexec and OpenVINO differ (OpenVINO 2026.4):
- LSTMCell-1 peepholes and input_forget: the reference implements them; the CPU
  plugin ignores them (and ignores weights_format), computing LSTMCell-4. irexec: the reference.
  weights_format other than fico: the reference refuses it, the CPU plugin reads the weights as
  fico regardless; irexec refuses it (a FormatError), rather than compute a wrong answer.
- sequence_lengths with dynamic input shapes: the CPU plugin ignores them (every item runs the
  whole sequence; with static shapes it masks as the reference does). irexec masks in both.
- sequence_lengths above the sequence length: the reference and the CPU plugin's forward pass
  give zero last states, its reverse pass fails; negative ones are undefined. irexec refuses any
  length outside [0, seq_length] (ExecutionError naming it).
- hidden_size: OpenVINO's shape rule ignores the attribute (kept "for backward compatibility");
  irexec refuses a hidden_size that differs from the states' and weights' hidden dimension.
- Activation names other than sigmoid/tanh/relu: OpenVINO builds the node and fails when
  compiling (hardsigmoid, which OpenVINO's op helpers know, is refused by both the reference and
  the CPU plugin); irexec refuses them at load.
"""

from __future__ import annotations

import math

import numpy as np

from .. import blas
from ..dtypes import FLOAT_TYPES
from ..errors import ExecutionError, FormatError, ShapeInferenceError
from ..kernels import recurrent as family
from ..shapes import Dim, TensorSpec, format_shape
from .attrs import Attr
from .base import Op, Sig
from .common import AXES_TYPES, finish
from .registry import register


def _sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


ACTIVATIONS = {"sigmoid": _sigmoid, "tanh": np.tanh, "relu": _relu}
DIRECTIONS = ("forward", "reverse", "bidirectional")


def _rounder(et: str):
    """float64 -> the data type's value (as float64): what the carried states hold."""
    if et == "f64":
        return lambda a: a
    return lambda a: finish(a, et).astype(np.float64)


# ---- the steps: float64 gates in, the data type's states out ----------------------------------


class _Step:
    """One time step of a family over the whole batch: `gx` is X_t @ W^T plus the biases that add
    to it ([batch, G*hidden] float64), `states` the carried states; returns the new states, H first."""

    def __init__(self, op: _Recurrent, r: np.ndarray, extra: dict, rnd) -> None:
        self.op = op
        self.r_t = np.ascontiguousarray(r.T)  # [hidden, G*hidden]
        self.hs = r.shape[1]
        self.extra = extra
        self.rnd = rnd
        self.f = op.acts

    def gate(self, z: np.ndarray, act) -> np.ndarray:
        if self.op.clip > 0:
            z = np.clip(z, -self.op.clip, self.op.clip)
        return act(z)


class _RNNStep(_Step):
    def __call__(self, gx: np.ndarray, states: tuple) -> tuple:
        (h,) = states
        return (self.rnd(self.gate(gx + h @ self.r_t, self.f[0])),)


class _GRUStep(_Step):
    def __call__(self, gx: np.ndarray, states: tuple) -> tuple:
        (h,) = states
        n = self.hs
        f, g = self.f[0], self.f[1]
        if self.op.linear_before_reset:
            hr = h @ self.r_t
            z = self.gate(gx[:, :n] + hr[:, :n], f)
            r = self.gate(gx[:, n : 2 * n] + hr[:, n : 2 * n], f)
            hh = self.gate(gx[:, 2 * n :] + r * (hr[:, 2 * n :] + self.extra["rbh"]), g)
        else:
            hr = h @ self.r_t[:, : 2 * n]
            z = self.gate(gx[:, :n] + hr[:, :n], f)
            r = self.gate(gx[:, n : 2 * n] + hr[:, n:], f)
            hh = self.gate(gx[:, 2 * n :] + (r * h) @ self.r_t[:, 2 * n :], g)
        return (self.rnd((1.0 - z) * hh + z * h),)


class _LSTMStep(_Step):
    def __call__(self, gx: np.ndarray, states: tuple) -> tuple:
        h, c = states
        n = self.hs
        f, g, hact = self.f
        a = gx + h @ self.r_t
        p = self.extra.get("p")
        if p is None:
            ft = self.gate(a[:, :n], f)
            it = self.gate(a[:, n : 2 * n], f)
        else:
            ft = self.gate(a[:, :n] + p[0] * c, f)
            it = 1.0 - ft if self.op.input_forget else self.gate(a[:, n : 2 * n] + p[1] * c, f)
        ct = self.gate(a[:, 2 * n : 3 * n], g)
        c_new = self.rnd(ft * c + it * ct)
        o = a[:, 3 * n :] if p is None else a[:, 3 * n :] + p[2] * c_new
        ot = self.gate(o, f)
        return (self.rnd(ot * hact(c_new)), c_new)


# ---- the op classes -----------------------------------------------------------------------------


class _Recurrent(Op):
    """What every recurrent op shares: attributes, activations, the hidden-size and batch rules."""

    GATES = 1
    STATES = 1
    DEFAULT_ACTS: tuple[str, ...] = ()
    STATE_NAMES = ("initial_hidden_state", "initial_cell_state")
    STEP = _Step
    hidden_size = Attr("int")
    activations = Attr("str", None)
    activations_alpha = Attr("floats", ())
    activations_beta = Attr("floats", ())
    clip = Attr("float", 0.0)
    linear_before_reset = False
    input_forget = False

    def __init__(self, layer, context=None):
        super().__init__(layer, context)
        if self.hidden_size < 1:
            raise FormatError(f"hidden_size={self.hidden_size}: it must be at least 1", self.where)
        if math.isnan(self.clip):
            raise FormatError("clip=nan is not a number", self.where)
        names = self.DEFAULT_ACTS if self.activations is None else self._act_names(self.activations)
        self.acts = tuple(ACTIVATIONS[n] for n in names)

    def _act_names(self, text: str) -> tuple[str, ...]:
        names = tuple(p.strip().lower() for p in text.split(",")) if text.strip() else ()
        if len(names) != len(self.DEFAULT_ACTS):
            raise FormatError(
                f"activations={text!r}: {self.TYPE} needs {len(self.DEFAULT_ACTS)} activation names", self.where
            )
        for n in names:
            if n not in ACTIVATIONS:
                raise FormatError(
                    f"activations={text!r}: {n!r} is not supported (supported: relu, sigmoid, tanh)", self.where
                )
        return names

    @property
    def bias_gates(self) -> int:
        return self.GATES + (1 if self.linear_before_reset else 0)

    # -- shape rule helpers
    def merge(self, found: list[tuple[Dim, str]], what: str) -> Dim:
        """The one value of a dimension several operands carry (None = unknown), or an error
        naming each operand's value."""
        known = [(d, w) for d, w in found if d is not None]
        if any(d != known[0][0] for d, _ in known):
            listed = ", ".join(f"{w} {d}" for d, w in known)
            raise ShapeInferenceError(f"{what} does not match between inputs: {listed}", self.where)
        return known[0][0] if known else None

    def per_gate(self, dim: Dim, gates: int, what: str) -> Dim:
        if dim is None:
            return None
        if dim % gates:
            raise ShapeInferenceError(
                f"{what} is {dim}, not a multiple of {gates} ({gates} blocks of hidden_size)", self.where
            )
        return dim // gates

    def check_rank(self, spec: TensorSpec, rank: int, what: str) -> tuple:
        if spec.shape is None:
            return (None,) * rank
        if len(spec.shape) != rank:
            raise ShapeInferenceError(
                f"{what} has shape {format_shape(spec.shape)}; rank {rank} is required", self.where
            )
        return spec.shape

    def check_types(self, inputs: list[TensorSpec], int_inputs: tuple[int, ...] = ()) -> str:
        et = inputs[0].dtype
        self.require_dtype(inputs[0], FLOAT_TYPES, "input 0 (X)")
        for i, s in enumerate(inputs):
            if i in int_inputs:
                self.require_dtype(s, AXES_TYPES, f"input {i} (sequence_lengths)")
            elif s.dtype != et:
                raise FormatError(f"input {i} has element type {s.dtype}, X has {et}; they must match", self.where)
        return et

    def hidden_dims(self, states: list[Dim], w_gates: Dim, r_gates: Dim, r_last: Dim) -> list[tuple[Dim, str]]:
        """The hidden size as each operand says it: the states' and R's last dims, and W's and R's
        gate dims divided by the number of gates."""
        g = self.GATES
        found = list(zip(states, self.STATE_NAMES)) + [(r_last, "R's last dim")]
        found.append((self.per_gate(w_gates, g, "W's gate dim"), f"W's gate dim/{g}"))
        found.append((self.per_gate(r_gates, g, "R's gate dim"), f"R's gate dim/{g}"))
        return found

    def hidden(self, found: list[tuple[Dim, str]], bias: Dim, peep: Dim | None) -> Dim:
        """hidden_size from the states and weights, checked against the attribute, B and P."""
        hs = self.merge(found, "hidden_size")
        gb = self.bias_gates
        checks = [(self.per_gate(bias, gb, "B's dim"), f"B's dim/{gb}")]
        if peep is not None:
            checks.append((self.per_gate(peep, 3, "P's dim"), "P's dim/3"))
        self.merge([(hs, "the states and weights"), *checks], "hidden_size")
        if hs is not None and hs != self.hidden_size:
            raise ShapeInferenceError(
                f"hidden_size={self.hidden_size} but the states and weights have hidden size {hs}", self.where
            )
        return hs

    # -- compute helpers
    def make_step(self, r: np.ndarray, b: np.ndarray, p: np.ndarray | None, et: str):
        """(the step, the bias to add to X @ W^T) for one direction's R [G*h, h], B, P."""
        n = r.shape[1]
        extra = {}
        if self.linear_before_reset:
            extra["rbh"] = b[3 * n :]
            b = b[: 3 * n]
        if p is not None:
            extra["p"] = (p[:n], p[n : 2 * n], p[2 * n :])
        return self.STEP(self, r, extra, _rounder(et)), b


class _Cell(_Recurrent):
    """A cell: one step. Inputs X, H (, C), W, R, B (, P for LSTMCell-1)."""

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        et = self.check_types(inputs)
        s = self.STATES
        x = self.check_rank(inputs[0], 2, "X")
        states = [self.check_rank(inputs[1 + i], 2, self.STATE_NAMES[i]) for i in range(s)]
        w = self.check_rank(inputs[1 + s], 2, "W")
        r = self.check_rank(inputs[2 + s], 2, "R")
        b = self.check_rank(inputs[3 + s], 1, "B")
        p = self.check_rank(inputs[4 + s], 1, "P") if len(inputs) > 4 + s else None
        batch = self.merge([(x[0], "X"), *zip((st[0] for st in states), self.STATE_NAMES)], "batch size")
        self.merge([(x[1], "X"), (w[1], "W")], "input_size")
        found = self.hidden_dims([st[1] for st in states], w[0], r[0], r[1])
        hs = self.hidden(found, b[0], None if p is None else p[0])
        return [TensorSpec(et, (batch, hs)) for _ in range(s)]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        self.remembered("shapes", tuple(a.shape for a in inputs), lambda: self._check_run(inputs))
        s = self.STATES
        x, w, r, b = (inputs[i].astype(np.float64) for i in (0, 1 + s, 2 + s, 3 + s))
        p = inputs[4 + s].astype(np.float64) if len(inputs) > 4 + s else None
        states = tuple(inputs[1 + i].astype(np.float64) for i in range(s))
        et = sig.outs[0]
        step, bias = self.make_step(r, b, p, et)
        out = step(x @ w.T + bias, states)
        return [finish(o, et) for o in out]

    def _check_run(self, inputs: list[np.ndarray]) -> bool:
        try:
            self.infer([TensorSpec(sig_dt(a), a.shape) for a in inputs])
        except ShapeInferenceError as e:
            raise ExecutionError(e.message, self.where) from None
        return True


def sig_dt(a: np.ndarray) -> str:
    """A stand-in element type for re-running the shape rule on run-time shapes."""
    return "i64" if a.dtype.kind in "iu" else "f32"


class _Sequence(_Recurrent):
    """A sequence: the cell over time. Inputs X, H (, C), sequence_lengths, W, R, B."""

    direction = Attr("str", choices=DIRECTIONS)

    @property
    def dirs(self) -> int:
        return 2 if self.direction == "bidirectional" else 1

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        s = self.STATES
        et = self.check_types(inputs, (1 + s,))
        x = self.check_rank(inputs[0], 3, "X")
        states = [self.check_rank(inputs[1 + i], 3, self.STATE_NAMES[i]) for i in range(s)]
        lens = self.check_rank(inputs[1 + s], 1, "sequence_lengths")
        w = self.check_rank(inputs[2 + s], 3, "W")
        r = self.check_rank(inputs[3 + s], 3, "R")
        b = self.check_rank(inputs[4 + s], 2, "B")
        batch = self.merge(
            [(x[0], "X"), *zip((st[0] for st in states), self.STATE_NAMES), (lens[0], "sequence_lengths")],
            "batch size",
        )
        with_dirs = [*zip((st[1] for st in states), self.STATE_NAMES), (w[0], "W"), (r[0], "R"), (b[0], "B")]
        self.merge([(self.dirs, f"direction={self.direction}"), *with_dirs], "num_directions")
        self.merge([(x[2], "X"), (w[2], "W")], "input_size")
        found = self.hidden_dims([st[2] for st in states], w[1], r[1], r[2])
        hs = self.hidden(found, b[1], None)
        y = TensorSpec(et, (batch, self.dirs, x[1], hs))
        return [y] + [TensorSpec(et, (batch, self.dirs, hs)) for _ in range(s)]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        self.remembered("shapes", tuple(a.shape for a in inputs), lambda: self._check_run(inputs))
        s = self.STATES
        x = inputs[0]
        batch, steps = x.shape[0], x.shape[1]
        hs = inputs[1].shape[2]
        et = sig.outs[0]
        self.check_output((batch, self.dirs, steps, hs), et, sig)
        lens = self._lengths(inputs[1 + s], steps)
        x64 = x.astype(np.float64)
        ys, finals = [], []
        for d in range(self.dirs):
            w_t = self._transposed64("W^T", inputs[2 + s], d)
            b = inputs[4 + s][d].astype(np.float64)
            states = tuple(inputs[1 + i][:, d].astype(np.float64) for i in range(s))
            reverse = self.direction == "reverse" or d == 1
            xw = blas.matmul(x64, w_t)
            ran = self._kernel(xw, b, inputs[3 + s], d, states, lens, reverse, et)
            if ran is None:
                r_t = self._transposed64("R^T", inputs[3 + s], d)
                step, bias = self.make_step(r_t.T, b, None, et)  # the step takes R^T as it is
                ran = _run(step, xw + bias, states, lens, reverse)
            ys.append(ran[0])
            finals.append(ran[1])
        out = [finish(np.stack(ys, axis=1), et)]
        out += [finish(np.stack([f[i] for f in finals], axis=1), et) for i in range(s)]
        return out

    def _transposed64(self, kind: str, a: np.ndarray, d: int) -> np.ndarray:
        """Direction d of the weights a ([dirs, rows, cols]) transposed, in float64, contiguous:
        a constant's remembered (`Op.derived`)."""
        return self.derived(kind, a, d, lambda: np.ascontiguousarray(a[d].astype(np.float64).T))

    def _kernel(self, xw, b, r, d, states, lens, reverse, et):
        """(Y, last states) of direction d by the family's kernel (an LSTM's time loop; r: the R
        input, every direction), or None where the numpy steps run (other families, activations,
        masking, types)."""
        lstm = self.STEP is _LSTMStep and self.acts == (_sigmoid, np.tanh, np.tanh)
        if not lstm or lens is not None or et != "f32":
            return None
        ran = family.lstm_sequence(self, xw + b, r, d, states[0], states[1], reverse)
        return None if ran is None else (ran[0], ran[1:])

    def _lengths(self, lens: np.ndarray, steps: int) -> np.ndarray | None:
        """The lengths as int64, None when every one is the sequence length (no masking).
        Compared in their own type first, so a huge uint64 cannot wrap to a valid int64."""
        out = (lens > steps) if lens.dtype.kind == "u" else (lens < 0) | (lens > steps)
        if out.any():
            raise ExecutionError(
                f"sequence_lengths holds {int(lens[out][0])}, outside [0, {steps}] (the sequence length of X)",
                self.where,
            )
        v = lens.astype(np.int64)
        return None if bool((v == steps).all()) else v

    def _check_run(self, inputs: list[np.ndarray]) -> bool:
        return _Cell._check_run(self, inputs)


def _run(step, gx: np.ndarray, states: tuple, lens: np.ndarray | None, reverse: bool):
    """The step over time. gx: [batch, T, G*h] float64; lens None = all T. Returns Y [batch, T, h]
    and the last states; as OpenVINO's reference: a reversed item reads its first L inputs
    backwards, Y is zero past L, and a zero length gives zero last states when masking."""
    batch, steps = gx.shape[0], gx.shape[1]
    hs = states[0].shape[1]
    y = np.zeros((batch, steps, hs))
    rows = np.arange(batch)
    for t in range(steps):
        if lens is None:
            k = steps - 1 - t if reverse else t
            states = step(gx[:, k], states)
            y[:, k] = states[0]
            continue
        active = t < lens
        pos = np.where(active, lens - 1 - t, t) if reverse else np.full(batch, t)
        new = step(gx[rows, pos], states)
        states = tuple(np.where(active[:, None], n, o) for n, o in zip(new, states))
        y[rows, pos] = np.where(active[:, None], new[0], 0.0)
    if lens is not None:
        states = tuple(np.where((lens == 0)[:, None], 0.0, st) for st in states)
    return y, states


# ---- the registered ops -------------------------------------------------------------------------


class _LSTM:
    GATES = 4
    STATES = 2
    DEFAULT_ACTS = ("sigmoid", "tanh", "tanh")
    STEP = _LSTMStep


class _GRU:
    GATES = 3
    STATES = 1
    DEFAULT_ACTS = ("sigmoid", "tanh")
    STEP = _GRUStep
    linear_before_reset = Attr("bool", False)


class _RNN:
    GATES = 1
    STATES = 1
    DEFAULT_ACTS = ("tanh",)
    STEP = _RNNStep


class _Peepholes:
    """LSTM-1's extras: the peepholes input P, input_forget and weights_format (fico only)."""

    input_forget = Attr("bool", False)
    weights_format = Attr("str", "fico")

    def __init__(self, layer, context=None):
        super().__init__(layer, context)
        if self.weights_format.strip().lower() != "fico":
            raise FormatError(
                f"weights_format={self.weights_format!r} is not supported: only fico (OpenVINO's reference "
                "refuses the others too)",
                self.where,
            )


@register
class LSTMCell(_LSTM, _Cell):
    """LSTMCell-4: gates f, i, c, o; Ct = f*Ct-1 + i*c, Ht = o*h(Ct)."""

    TYPE = "LSTMCell"
    VERSIONS = (4,)
    INPUTS = (6, 6)
    OUTPUTS = 2


@register
class LSTMCell1(_Peepholes, _LSTM, _Cell):
    """LSTMCell-1: LSTMCell-4 plus peepholes P [3*hidden] (f, i, o; zero when absent) and
    input_forget (i = 1 - f)."""

    TYPE = "LSTMCell"
    VERSIONS = (1,)
    INPUTS = (6, 7)
    OUTPUTS = 2


@register
class GRUCell(_GRU, _Cell):
    """GRUCell-3: gates z, r, h; Ht = (1-z)*h + z*Ht-1."""

    TYPE = "GRUCell"
    VERSIONS = (3,)
    INPUTS = (5, 5)


@register
class RNNCell(_RNN, _Cell):
    """RNNCell (ov::op::v0, written as version opset1): Ht = f(Xt*W^T + Ht-1*R^T + B)."""

    TYPE = "RNNCell"
    VERSIONS = (1,)
    INPUTS = (5, 5)


@register
class LSTMSequence(_LSTM, _Sequence):
    """LSTMSequence-5: LSTMCell-4 over the sequence; outputs Y, Ho, Co."""

    TYPE = "LSTMSequence"
    VERSIONS = (5,)
    INPUTS = (7, 7)
    OUTPUTS = 3
    KERNELS = ("recurrent",)


@register
class GRUSequence(_GRU, _Sequence):
    """GRUSequence-5: GRUCell-3 over the sequence; outputs Y, Ho."""

    TYPE = "GRUSequence"
    VERSIONS = (5,)
    INPUTS = (6, 6)
    OUTPUTS = 2


@register
class RNNSequence(_RNN, _Sequence):
    """RNNSequence-5: RNNCell over the sequence; outputs Y, Ho."""

    TYPE = "RNNSequence"
    VERSIONS = (5,)
    INPUTS = (6, 6)
    OUTPUTS = 2
