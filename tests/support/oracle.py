"""numpy float64 oracle for the reductions (SPEC §2.1/§2.2 semantics, computed the slow, obvious way)."""

from __future__ import annotations

import numpy as np

from irexec.dtypes import numpy_dtype, round_bf16


def _empty(op, dt, is_float):
    return {
        "sum": 0,
        "l1": 0,
        "l2": 0,
        "sumsq": 0,
        "prod": 1,
        "and": True,
        "or": False,
        "mean": np.nan if is_float else 0,
        "logsum": -np.inf,
        "logsumexp": -np.inf,
        "max": (-np.inf if is_float else (False if dt.kind == "b" else np.iinfo(dt).min)),
        "min": (np.inf if is_float else (True if dt.kind == "b" else np.iinfo(dt).max)),
    }[op]


def reduce_ref(x: np.ndarray, axes: tuple[int, ...], op: str, keep: bool, et: str) -> np.ndarray:
    """Reference value of reducing x (element type et) over normalized axes."""
    dt = numpy_dtype(et)
    is_float = dt.kind == "f"
    count = int(np.prod([x.shape[a] for a in axes])) if axes else 1
    out_shape = tuple(1 if i in axes else n for i, n in enumerate(x.shape) if keep or i not in axes)
    if count == 0:
        return np.full(out_shape, _empty(op, dt, is_float), dt)
    if is_float:
        v = x.astype(np.float64)
        with np.errstate(all="ignore"):
            r = {
                "sum": lambda: v.sum(axis=axes, keepdims=keep),
                "mean": lambda: v.sum(axis=axes, keepdims=keep) / count,
                "prod": lambda: v.prod(axis=axes, keepdims=keep),
                "max": lambda: v.max(axis=axes, keepdims=keep),
                "min": lambda: v.min(axis=axes, keepdims=keep),
                "l1": lambda: np.abs(v).sum(axis=axes, keepdims=keep),
                "l2": lambda: np.sqrt((v * v).sum(axis=axes, keepdims=keep)),
                "sumsq": lambda: (v * v).sum(axis=axes, keepdims=keep),
                "logsum": lambda: np.log(v.sum(axis=axes, keepdims=keep)),
                "logsumexp": lambda: _lse(v, axes, keep),
            }[op]()
        r = np.asarray(r).reshape(out_shape)
        return round_bf16(r.astype(np.float32)) if et == "bf16" else r.astype(dt)
    if dt.kind == "b":
        r = x.all(axis=axes, keepdims=keep) if op in ("and", "min") else x.any(axis=axes, keepdims=keep)
        return np.asarray(r).reshape(out_shape)
    # integers: exact Python-int arithmetic, wrapped once
    wide = x.astype(object)
    if op in ("max", "min"):
        r = getattr(np, "max" if op == "max" else "min")(x, axis=axes, keepdims=keep)
        return np.asarray(r).reshape(out_shape).astype(dt)
    f = {
        "sum": lambda a: a.sum(axis=axes, keepdims=keep),
        "mean": lambda a: a.sum(axis=axes, keepdims=keep),
        "prod": lambda a: a.prod(axis=axes, keepdims=keep),
        "l1": lambda a: np.abs(a).sum(axis=axes, keepdims=keep),
        "l2": lambda a: (a * a).sum(axis=axes, keepdims=keep),
        "sumsq": lambda a: (a * a).sum(axis=axes, keepdims=keep),
    }[op]
    r = np.asarray(f(wide), dtype=object).reshape(out_shape)
    acc_signed = dt != np.uint64  # every integer but uint64 accumulates in int64
    out_signed = dt.kind == "i"
    bits = dt.itemsize * 8

    def finish(s):
        a = _wrap(s, 64, acc_signed)
        if op == "mean":
            a = abs(a) // count * (1 if a >= 0 else -1)
        elif op == "l2":
            a = int(np.sqrt(float(a)))
        return _wrap(a, bits, out_signed)

    return np.vectorize(finish, otypes=[object])(r).astype(dt)


def _wrap(v: int, bits: int, signed: bool) -> int:
    v = int(v) % (1 << bits)
    if signed and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def _lse(v, axes, keep):
    m = v.max(axis=axes, keepdims=True)
    shift = np.where(np.isfinite(m), m, 0.0)
    r = np.log(np.exp(v - shift).sum(axis=axes, keepdims=True)) + shift
    return r if keep else np.squeeze(r, axis=axes)
