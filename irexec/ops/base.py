"""The Op base class: declared, typed attributes; a pure shape rule; a compute.

Ops know no XML: they get the layer's attribute strings and convert them with the declared
attribute kinds. Malformed known attributes are errors, never silently defaulted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..dtypes import UnknownElementType, parse_element_type
from ..errors import FormatError, UnsupportedDtypeError
from ..shapes import TensorSpec

_MISSING = object()


def _bool(text: str) -> bool:
    s = text.strip().lower()
    if s in ("true", "1"):
        return True
    if s in ("false", "0"):
        return False
    raise ValueError("expected true/false/1/0")


def _int(text: str) -> int:
    s = text.strip()
    body = s[1:] if s[:1] in "+-" else s
    if not body or len(body) > 20 or not all("0" <= c <= "9" for c in body):
        raise ValueError("expected an integer")
    return int(s)


def _ints(text: str) -> tuple[int, ...]:
    s = text.strip()
    if s.startswith("[") and s.endswith("]"):
        s = s[1:-1]
    return tuple(_int(p) for p in s.split(",")) if s.strip() else ()


def _etype(text: str) -> str:
    try:
        return parse_element_type(text)
    except UnknownElementType:
        raise ValueError("unknown element type") from None


KINDS: dict[str, Callable[[str], Any]] = {
    "bool": _bool,
    "int": _int,
    "ints": _ints,
    "str": str,
    "etype": _etype,
}


@dataclass(frozen=True)
class Attr:
    kind: str
    default: Any = _MISSING

    @property
    def required(self) -> bool:
        return self.default is _MISSING


class Op:
    """One layer. Subclasses set TYPE, VERSIONS, ATTRS, INPUTS and implement infer / compute."""

    TYPE = ""
    VERSIONS: tuple = ()
    ATTRS: dict[str, Attr] = {}
    INPUTS: tuple[int, int | None] = (1, 1)  # min and max operand count (None = any)
    OUTPUTS = 1
    FOLDABLE = True  # may be computed at load when every input is constant
    SAME_SHAPE = False  # output 0 has input 0's dims (interval bounds carry over)
    # Element types of the operands and results, set by shape inference before any compute
    # (bf16 is held as float32, so the arrays alone cannot tell).
    in_types: tuple[str, ...] = ()
    out_types: tuple[str, ...] = ()
    static_outputs = False  # every output shape static (and checked against the limits) at load

    def __init__(self, layer, context=None):
        self.layer = layer
        self.where = layer.where
        self.context = context
        self.attrs = self._parse_attrs(layer.attrs)
        n = len(layer.inputs)
        lo, hi = self.INPUTS
        if n < lo or (hi is not None and n > hi):
            want = f"{lo}" if lo == hi else f"{lo} to {'any number' if hi is None else hi}"
            raise FormatError(f"has {n} input ports, expected {want}", self.where)
        if len(layer.outputs) != self.OUTPUTS:
            raise FormatError(
                f"has {len(layer.outputs)} output ports, expected {self.OUTPUTS}", self.where
            )

    def _parse_attrs(self, raw: dict) -> dict:
        out = {}
        for name, spec in self.ATTRS.items():
            text = raw.get(name)
            if text is None:
                if spec.required:
                    raise FormatError(f"missing attribute {name!r}", self.where)
                out[name] = spec.default
                continue
            try:
                out[name] = KINDS[spec.kind](text)
            except ValueError as e:
                raise FormatError(f"attribute {name}={text!r} is malformed ({e})", self.where) from None
        return out

    # The shape rule: specs in, specs out. Pure: no arrays touched except constant values.
    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        raise NotImplementedError

    def compute(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        raise NotImplementedError

    # helpers for subclasses
    def check_output(self, shape, et: str) -> None:
        """Refuse, before allocating, an output whose size is only known at run time (a static
        output was checked at load)."""
        if self.static_outputs:
            return
        from ..dtypes import bits

        self.context.limits.check_tensor(shape, bits(et) / 8, "output", self.where)

    def require_dtype(self, spec: TensorSpec, allowed, what: str = "input") -> None:
        if spec.dtype not in allowed:
            raise UnsupportedDtypeError(
                f"{what} has element type {spec.dtype}, which {self.TYPE} does not accept "
                f"(accepts {', '.join(sorted(allowed))})",
                self.where,
            )
