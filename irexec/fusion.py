"""Patterns of several layers run as one step (the plan's `run_steps`; debugging tools
run the layers one by one, so every layer's value stays visible there). This module only
matches patterns and rewrites steps; the fused steps' ops, with their numerical code, live with
their families in `ops/` (RMSNorm in normalization.py, ThenRelu in activation.py,
MaxPoolValues in pool.py).

A ReLU, or a Clamp with min <= max (ReLU6), whose input only it reads (from a Convolution,
GroupConvolution, MatMul or Add) is applied in place on that layer's fresh float32 result: the
same np.maximum or np.clip, one dispatch and one array fewer.

A MaxPool-8/14 whose indices nothing reads computes its values alone (MaxPool-1's kernel).

A ReLU whose result only a FakeQuantize reads, when that FakeQuantize's lower bound
min(input_low, input_high) is a constant >= 0 everywhere (an INT8 network's unsigned activations),
is left out: the FakeQuantize reads the ReLU's input. Exact: where the ReLU changes a value
(x < 0, -0.0) both x and 0 are at or below the bound, so both give output_low; NaN stays NaN
either way. (ResNet-50 INT8: 49 ReLU passes, about 3 ms of its 140.)

RMSNorm, as OpenVINO converts LLaMA's and T5's `x * rsqrt(mean(x^2) + eps)`:

    Power(x, 2) -> ReduceMean(last axis, keep_dims) -> Add(eps) -> Sqrt -> Divide(1, .) -> Multiply(x, .)

all float32, every intermediate read by the next layer only. The fused step computes what the
six layers compute, rounding where they round (x*x, the mean, + eps, sqrt, 1/s and x*d each to
float32; the mean's sum in float64): the same bits, but for the last bit of a float64 sum whose
order differs (as the unfused ReduceMean's numpy and kernel paths already differ), which moves
the float32 mean only when it sits within 2^-53 of a rounding tie.

Attention as ONNX exports write it (ops/attention.py's DecomposedAttention), all float32, every
intermediate read by the next layer only (the Softmax's by the guard's two layers):

    MatMul(q, k) [-> Multiply or Divide by a constant scalar] [-> Add(mask)] -> Softmax(last axis)
    [-> Select(IsNaN(p), 0, p)] -> MatMul(p, v)

Not the layers' bits: within float32 roundings of them (the scores' sums in another order, float32
exponentials); a result with a NaN runs the layers.
"""

from __future__ import annotations

import numpy as np

from .kernels.quantize import constants as quantize_constants
from .ops.activation import ThenRelu
from .ops.attention import DecomposedAttention
from .ops.base import Sig
from .ops.normalization import RMSNorm
from .ops.pool import MaxPoolValues
from .steps import Step, releases

RELU_PRODUCERS = ("Convolution", "GroupConvolution", "MatMul", "Add")


def _scalar(specs, key, value: float) -> bool:
    v = specs[key].value
    return v is not None and np.asarray(v).size == 1 and float(np.asarray(v).reshape(-1)[0]) == value


class _Readers:
    """Who produces each value of a run order, and how many steps (and results) read it."""

    def __init__(self, steps: tuple, results):
        self.steps = steps
        self.producer = {key: i for i, s in enumerate(steps) for key in s.outputs}
        self.count: dict = {}
        for key in [k for s in steps for k in s.operands] + list(results):
            self.count[key] = self.count.get(key, 0) + 1

    def made_by(self, key, type_: str, reads: int = 1) -> int | None:
        """The step producing `key`, its only output, if it is a `type_` layer (numpy
        broadcasting, when it broadcasts) whose result exactly `reads` steps (or results) read."""
        i = self.producer.get(key)
        if i is None or self.count.get(key) != reads:
            return None
        s = self.steps[i]
        if s.op is None or s.op.TYPE != type_ or s.sig is None or s.outputs != (key,):
            return None
        return i if getattr(s.op, "auto_broadcast", "numpy") == "numpy" else None

    def only(self, key, type_: str) -> int | None:
        """`made_by` for a float32 result that only one step reads."""
        i = self.made_by(key, type_)
        return i if i is not None and self.steps[i].sig.outs == ("f32",) else None


def _f32_product(step) -> bool:
    """A float32 Multiply of two operands with numpy broadcasting: where an RMSNorm chain ends."""
    return (
        step.op is not None
        and step.op.TYPE == "Multiply"
        and step.sig is not None
        and step.sig.outs == ("f32",)
        and len(step.operands) == 2
        and getattr(step.op, "auto_broadcast", "numpy") == "numpy"
    )


def _last_axis_mean(steps, specs, r_i: int | None, x_key) -> bool:
    """Step r_i is a keep_dims ReduceMean over the last axis of x."""
    if r_i is None or not steps[r_i].op.keep_dims:
        return False
    axes = specs[steps[r_i].operands[1]].value
    rank = None if specs[x_key].shape is None else len(specs[x_key].shape)
    return axes is not None and rank is not None and [int(a) % rank for a in np.asarray(axes).reshape(-1)] == [rank - 1]


def _rms_chain(g: _Readers, specs, m_i: int, x_key, d_key):
    """(the chain's step indices Power..Multiply, eps) when Multiply m_i is x * 1/sqrt(mean(x^2) + eps)
    with d_key the reciprocal, every intermediate read once; None otherwise."""
    steps = g.steps
    d_i = g.only(d_key, "Divide")
    if d_i is None or not _scalar(specs, steps[d_i].operands[0], 1.0):
        return None
    s_i = g.only(steps[d_i].operands[1], "Sqrt")
    a_i = None if s_i is None else g.only(steps[s_i].operands[0], "Add")
    if a_i is None:
        return None
    a_ops = steps[a_i].operands
    r_key, eps_key = (a_ops[0], a_ops[1]) if specs[a_ops[1]].value is not None else (a_ops[1], a_ops[0])
    eps = specs[eps_key].value
    if eps is None or np.asarray(eps).size != 1 or specs[eps_key].dtype != "f32":
        return None
    r_i = g.only(r_key, "ReduceMean")
    if not _last_axis_mean(steps, specs, r_i, x_key):
        return None
    p_i = g.only(steps[r_i].operands[0], "Power")
    if p_i is None or steps[p_i].operands[0] != x_key or not _scalar(specs, steps[p_i].operands[1], 2.0):
        return None
    if specs[x_key].dtype != "f32":
        return None
    return (p_i, r_i, a_i, s_i, d_i, m_i), np.asarray(eps, np.float32).reshape(-1)[0]


def _rms_step(steps, chain: tuple, eps, x_key) -> Step:
    """One step at the Multiply's place for the chain, releasing what the chain released."""
    m = steps[chain[-1]]
    inner = {k for i in chain[:-1] for k in steps[i].outputs}
    release = tuple(dict.fromkeys(k for i in chain for k in steps[i].release if k not in inner))
    op = RMSNorm(eps, m.op.where, tuple(steps[i].layer_id for i in chain))
    return Step(m.layer_id, op, Sig(("f32",), ("f32",), m.sig.static), (x_key,), m.outputs, release, m.expect)


def _f32(step) -> bool:
    return step.sig.outs == ("f32",)


def _const_scalar(specs, key) -> float | None:
    """A float32 constant of one element, as a float; None otherwise."""
    v = specs[key].value
    if v is None or specs[key].dtype != "f32" or np.asarray(v).size != 1:
        return None
    return float(np.asarray(v).reshape(-1)[0])


def _plain_product(step) -> bool:
    """A float32 MatMul of two operands whose first is not transposed."""
    return step.op.TYPE == "MatMul" and _f32(step) and len(step.operands) == 2 and not step.op.transpose_a


def _softmax_of(g: _Readers, specs, p_key) -> tuple[list[int], int] | None:
    """(the steps from the Softmax to p_key's producer, the Softmax's index) when p_key is a
    float32 Softmax over the last axis, or the NaN guard Select(IsNaN(p), 0, p) of one."""
    steps = g.steps
    sel_i = g.made_by(p_key, "Select")
    if sel_i is None:
        sm_i = g.made_by(p_key, "Softmax")
        tail = []
    else:
        cond, zero, sm_key = steps[sel_i].operands
        n_i = g.made_by(cond, "IsNaN")
        if n_i is None or steps[n_i].operands != (sm_key,) or _const_scalar(specs, zero) != 0.0:
            return None
        sm_i = g.made_by(sm_key, "Softmax", reads=2)
        tail = [n_i, sel_i]
    if sm_i is None or not _f32(steps[sm_i]):
        return None
    shape = specs[steps[sm_i].operands[0]].shape
    if shape is None or not shape or steps[sm_i].op.axis % len(shape) != len(shape) - 1:
        return None
    return [sm_i] + tail, sm_i


def _attention_chain(g: _Readers, specs, m2_i: int):
    """(the chain's step indices in run order, the mask's key or None, the scale, whether it
    divides) when MatMul m2_i is p v of a decomposed attention (`ops.attention.
    DecomposedAttention`), every intermediate read by the next layer only; None otherwise."""
    steps = g.steps
    m2 = steps[m2_i]
    if not _plain_product(m2):
        return None
    found = _softmax_of(g, specs, m2.operands[0])
    if found is None:
        return None
    tail, sm_i = found
    chain, x_key, mask, scale, divide = [], steps[sm_i].operands[0], None, 1.0, False
    a_i = g.made_by(x_key, "Add")
    if a_i is not None and _f32(steps[a_i]) and len(steps[a_i].operands) == 2:
        for x, other in (steps[a_i].operands, steps[a_i].operands[::-1]):
            if specs[other].dtype == "f32" and any(
                g.made_by(x, t) is not None for t in ("MatMul", "Multiply", "Divide")
            ):
                chain, x_key, mask = [a_i], x, other
                break
    for type_ in ("Multiply", "Divide"):
        s_i = g.made_by(x_key, type_)
        if s_i is None or not _f32(steps[s_i]) or len(steps[s_i].operands) != 2:
            continue
        ops = steps[s_i].operands
        for x, c in (ops, ops[::-1]) if type_ == "Multiply" else (ops,):
            value = _const_scalar(specs, c)
            if value is not None and value != 0.0 and np.isfinite(value):
                chain, x_key, scale, divide = [s_i] + chain, x, value, type_ == "Divide"
                break
        break
    m1_i = g.made_by(x_key, "MatMul")
    if m1_i is None or not _plain_product(steps[m1_i]):
        return None
    return [m1_i] + chain + tail + [m2_i], mask, scale, divide


def _attention_step(steps, specs, chain: list[int], mask, scale: float, divide: bool) -> Step:
    """One step at the second MatMul's place for the chain."""
    m1, m2 = steps[chain[0]], steps[chain[-1]]
    inner = {k for i in chain[:-1] for k in steps[i].outputs}
    operands = tuple(dict.fromkeys(k for i in chain for k in steps[i].operands if k not in inner))
    roles = {
        "q": operands.index(m1.operands[0]),
        "k": operands.index(m1.operands[1]),
        "v": operands.index(m2.operands[1]),
        "mask": None if mask is None else operands.index(mask),
        "kt": m1.op.transpose_b,
        "vt": m2.op.transpose_b,
    }
    layers = tuple((steps[i].op, steps[i].sig, steps[i].operands, steps[i].outputs[0]) for i in chain)
    op = DecomposedAttention(layers, operands, roles, scale, divide, tuple(steps[i].layer_id for i in chain))
    sig = Sig(tuple(specs[k].dtype for k in operands), ("f32",), m2.sig.static)
    return Step(m2.layer_id, op, sig, operands, m2.outputs, (), m2.expect)  # releases: `_fuse_attention`


def fuse(steps: tuple, specs, results) -> tuple:
    """The steps with every exact RMSNorm chain replaced by one step at the Multiply's place,
    decomposed attentions by one at their second MatMul's, ReLUs before a FakeQuantize that
    makes them no-ops left out, MaxPools whose indices nothing reads computing values alone, and
    ReLUs applied in place on their only producer."""
    g = _Readers(steps, results)
    replace: dict[int, Step] = {}
    drop: set[int] = set()
    for m_i, m in enumerate(steps):
        if not _f32_product(m):
            continue
        for x_key, d_key in (m.operands, m.operands[::-1]):
            found = _rms_chain(g, specs, m_i, x_key, d_key)
            if found is not None:
                chain, eps = found
                replace[m_i] = _rms_step(steps, chain, eps, x_key)
                drop.update(chain[:-1])
                break
    steps = tuple(replace.get(i, s) for i, s in enumerate(steps) if i not in drop) if replace else steps
    steps = _quantized_relu(steps, specs, results)
    return _fuse_relu(_pool_values(_fuse_attention(steps, specs, results), results), results)


def _nonnegative_low(specs, q) -> bool:
    """The FakeQuantize step q's input_low and input_high are constants whose elementwise
    min (std::min's, as the kernels take it) is >= 0 everywhere."""
    il, ih = (specs[key].value for key in q.operands[1:3])
    if il is None or ih is None:
        return False
    lo = quantize_constants(il, ih, 0.0, 0.0)[0]
    return bool(lo.size) and bool(np.all(lo >= 0))


def _quantized_relu(steps: tuple, specs, results) -> tuple:
    """The steps without each ReLU whose result only a FakeQuantize with a constant lower bound
    >= 0 reads (the module doc), and whose input only it reads; that FakeQuantize reads the
    ReLU's input."""
    g = _Readers(steps, results)
    replace: dict[int, Step] = {}
    drop: set[int] = set()
    for q_i, q in enumerate(steps):
        if q.op is None or q.op.TYPE != "FakeQuantize" or q.sig is None or not _nonnegative_low(specs, q):
            continue
        r_i = g.made_by(q.operands[0], "ReLU")
        if r_i is None or r_i in drop:
            continue
        x = steps[r_i].operands[0]
        if g.count.get(x) != 1:
            continue
        replace[q_i] = Step(q.layer_id, q.op, q.sig, (x, *q.operands[1:]), q.outputs, (), q.expect)
        drop.add(r_i)
    return _rewritten(steps, replace, drop, results)


def _rewritten(steps: tuple, replace: dict, drop: set, results) -> tuple:
    """The steps with `replace`'s steps at their indices and `drop`'s left out, every step's
    last uses found again (a rewritten step may read a value later, or earlier, than before)."""
    if not replace:
        return steps
    steps = tuple(replace.get(i, s) for i, s in enumerate(steps) if i not in drop)
    last = releases([(s.operands, s.outputs) for s in steps], results)
    return tuple(
        Step(s.layer_id, s.op, s.sig, s.operands, s.outputs, tuple(last.get(i, ())), s.expect)
        for i, s in enumerate(steps)
    )


def _fuse_attention(steps: tuple, specs, results) -> tuple:
    """The steps with every decomposed attention chain replaced by one step at its second
    MatMul's place."""
    g = _Readers(steps, results)
    replace: dict[int, Step] = {}
    drop: set[int] = set()
    for m2_i, m2 in enumerate(steps):
        if m2.op is None or m2.op.TYPE != "MatMul" or m2.sig is None:
            continue
        found = _attention_chain(g, specs, m2_i)
        if found is not None and not drop.intersection(found[0]):
            chain, mask, scale, divide = found
            replace[m2_i] = _attention_step(steps, specs, chain, mask, scale, divide)
            drop.update(chain[:-1])
    # a chain's first operands are read at its last step's place now: after the steps between,
    # which may have been their last readers (a KV cache's keys, also written to their variable)
    return _rewritten(steps, replace, drop, results)


def _pool_values(steps: tuple, results) -> tuple:
    """MaxPool-8/14 steps whose second output (the indices) no step and no result reads."""
    read = {key for s in steps for key in s.operands} | set(results)
    out = []
    for s in steps:
        if (
            s.op is not None
            and s.op.TYPE == "MaxPool"
            and len(s.outputs) == 2
            and s.outputs[1] not in read
            and s.sig is not None
        ):
            release = tuple(k for k in s.release if k != s.outputs[1])
            s = Step(
                s.layer_id,
                MaxPoolValues(s.op),
                Sig(s.sig.ins, s.sig.outs[:1], s.sig.static),
                s.operands,
                s.outputs[:1],
                release,
                s.expect[:1],
            )
        out.append(s)
    return tuple(out)


def _fuse_relu(steps: tuple, results) -> tuple:
    """Convolution, GroupConvolution, MatMul or Add (float32, one output) read only by a ReLU or
    a Clamp with min <= max: one step at the producer's place."""
    producer = {k: i for i, s in enumerate(steps) for k in s.outputs}
    readers: dict = {}
    for s in steps:
        for key in s.operands:
            readers[key] = readers.get(key, 0) + 1
    for key in results:
        readers[key] = readers.get(key, 0) + 1
    replace, drop = {}, set()
    for r_i, r in enumerate(steps):
        if r.op is None or r.op.TYPE not in ("ReLU", "Clamp") or r.sig is None or r.sig.outs != ("f32",):
            continue
        bounds = (r.op.min, r.op.max) if r.op.TYPE == "Clamp" else None
        if bounds is not None and not np.float32(bounds[0]) <= np.float32(bounds[1]):
            continue
        key = r.operands[0]
        p_i = producer.get(key)
        if p_i is None or readers.get(key) != 1 or p_i in drop or p_i in replace:
            continue
        p = steps[p_i]
        if (
            p.op is None
            or p.op.TYPE not in RELU_PRODUCERS
            or len(p.outputs) != 1
            or p.sig is None
            or p.sig.outs != ("f32",)
        ):
            continue
        # at the producer's place: its operands may die before the ReLU's place, while the
        # ReLU's readers all come after the producer
        release = tuple(dict.fromkeys(k for k in p.release + r.release if k != key))
        replace[p_i] = Step(
            r.layer_id,
            ThenRelu(p.op, p.sig, r.layer_id, bounds),
            Sig(p.sig.ins, r.sig.outs, r.sig.static),
            p.operands,
            r.outputs,
            release,
            r.expect,
        )
        drop.add(r_i)
    if not replace:
        return steps
    return tuple(replace.get(i, s) for i, s in enumerate(steps) if i not in drop)
