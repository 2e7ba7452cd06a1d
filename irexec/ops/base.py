"""The Op base class: typed attribute fields, a pure shape rule (`infer`) and a `compute`.

Ops know no XML: they get the layer's attribute strings, converted with each field's declared
kind (see `attrs`). The element types an op computes with arrive with every `compute` call as a
`Sig` (bf16 is held in float32 arrays, so the arrays alone cannot tell); nothing is written into
the op after it is built but facts it remembers (`remembered`, `derived`, `steady`), the same
whichever thread computes them, so one op object serves every thread.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from ..dtypes import UnsupportedElementType, bits
from ..errors import FormatError, UnsupportedDtypeError
from ..precision import compute_type
from ..shapes import TensorSpec
from .attrs import Attr

_V = TypeVar("_V")


@dataclass(frozen=True)
class Sig:
    """A layer's operand and result element types, as shape inference found them, and whether
    every result shape was static at load (then already checked against the limits)."""

    ins: tuple[str, ...]
    outs: tuple[str, ...]
    static: bool = False


def _count_text(lo: int, hi: int | None) -> str:
    if lo == hi:
        return str(lo)
    return f"{lo} to {'any number' if hi is None else hi}"


class Steady:
    """A layer's steady call: what it runs on the operand signature it last saw twice in a row
    (fused steps without an `Op` take it too)."""

    # the steady call: (key, call or None, calls since) for the operand signature last seen twice
    # in a row
    _steady: tuple | None = None
    _last_key: Hashable = None

    def steady(self, key: Hashable) -> Callable | None:
        """The call `settle` remembered for operands of `key` (their shapes, types and small
        constant values), or None: a layer that runs again and again on one signature calls its
        kernel straight away (`jit.one_call`), without its wrapper's checks."""
        s = self._steady
        return s[1] if s is not None and s[0] == key else None

    def settle(self, key: Hashable, make: Callable[[], Callable | None]) -> None:
        """After a call that took the usual path: remember make()'s call for `key` once the same
        key came twice in a row, so that a signature that changes every call (a generation's
        growing cache) builds nothing. make() answers None where there is no such call (threaded
        work, a path decided every call) or not yet (kernels still loading): it is asked again
        after 2, 4, 8, ... more calls of the key."""
        s = self._steady
        if s is not None and s[0] == key:
            if s[1] is None:
                misses = s[2] + 1
                self._steady = (key, make() if not misses & (misses - 1) else None, misses)
            return
        if self._last_key == key:
            self._steady = (key, make(), 0)
        else:
            self._last_key = key


class Op(Steady):
    """One layer. Subclasses set TYPE, VERSIONS, INPUTS, OUTPUTS, declare attributes as
    `Attr` fields, and implement `infer` (specs -> specs) and `compute` (arrays -> arrays)."""

    TYPE = ""
    VERSIONS: tuple = ()
    INPUTS: tuple[int, int | None] = (1, 1)  # min and max operand count (None = any)
    OUTPUTS: int | tuple[int, int | None] = 1  # exact count, or (min, max)
    FOLDABLE = True  # may be computed at load when every input is constant
    SAME_SHAPE = False  # output 0 has input 0's dims (interval bounds carry over)
    ATTRS: dict[str, Attr] = {}  # field name -> Attr, collected from the class and its bases
    KERNELS: tuple[str, ...] = ()  # the kernel families (kernels.jit.FAMILIES) compute may ask
    # takes or gives `string` tensors (object arrays of UTF-8 bytes, irexec/strings.py); an op
    # that does not say so is refused a string operand or result at load, so that no numeric
    # op computes on strings by accident (numpy would concatenate or compare them)
    STRINGS = False

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        attrs: dict[str, Attr] = {}
        for klass in reversed(cls.__mro__):
            for name, value in vars(klass).items():
                if isinstance(value, Attr):
                    attrs[name] = value
        cls.ATTRS = attrs

    def __init__(self, layer, context=None):
        self.layer = layer
        self.where = layer.where
        self.context = context
        for name, spec in self.ATTRS.items():
            setattr(self, name, self._parse_attr(spec, layer.attrs.get(spec.xml)))
        n = len(layer.inputs)
        lo, hi = self.INPUTS
        if n < lo or (hi is not None and n > hi):
            raise FormatError(f"has {n} input ports, expected {_count_text(lo, hi)}", self.where)
        lo, hi = (self.OUTPUTS, self.OUTPUTS) if isinstance(self.OUTPUTS, int) else self.OUTPUTS
        m = len(layer.outputs)
        if m < lo or (hi is not None and m > hi):
            raise FormatError(f"has {m} output ports, expected {_count_text(lo, hi)}", self.where)

    def _parse_attr(self, spec: Attr, text: str | None) -> Any:
        if text is None:
            if spec.required:
                raise FormatError(f"missing attribute {spec.xml!r}", self.where)
            return spec.default
        try:
            return spec.parse(text)
        except UnsupportedElementType:
            raise UnsupportedDtypeError(
                f"attribute {spec.xml}={text!r}: element type {text.strip()} is not supported by irexec", self.where
            ) from None
        except ValueError as e:
            raise FormatError(f"attribute {spec.xml}={text!r} is malformed ({e})", self.where) from None

    def attr_values(self) -> dict[str, Any]:
        """The parsed attributes by XML name (for reports and debugging)."""
        return {spec.xml: getattr(self, name) for name, spec in self.ATTRS.items()}

    # The shape rule: specs in, specs out. Pure: no arrays touched except constant values.
    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        raise NotImplementedError

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        raise NotImplementedError

    def kernel_families(self) -> tuple[str, ...]:
        """The kernel families this layer may run on (what `Model.compile` loads)."""
        return self.KERNELS

    # helpers for subclasses
    REMEMBERED = 64  # facts an op keeps per kind (input shapes seen by one layer are few)

    def remembered(self, kind: str, key: Hashable, compute: Callable[[], _V]) -> _V:
        """compute(), remembered per `key` for this layer: run-time facts that depend only on
        operand shapes (a reshape's result shape, a convolution's geometry, a broadcast that
        passed its check). Deterministic, so threads racing on a miss store the same value."""
        try:  # a hit: one lookup chain, no empty dicts built for setdefault
            return self.__dict__["_remembered"][kind][key]
        except KeyError:
            pass
        table = self.__dict__.setdefault("_remembered", {}).setdefault(kind, {})
        value = compute()
        if len(table) < self.REMEMBERED:
            table[key] = value
        return value

    def derived(self, kind: str, arrays, key: Hashable, compute: Callable[[], _V]) -> _V:
        """compute() (something derived from `arrays`, one array or a sequence: weights
        converted, transposed, packed; a tokenizer's parsed model), remembered per `key` when
        they are constants: read-only (the plan's constants are, as the .bin's mapped weights),
        the same arrays every run, known by identity (the entry holds them, so their ids cannot
        be reused by others). Computed again for anything else."""
        arrays = (arrays,) if isinstance(arrays, np.ndarray) else tuple(arrays)
        if any(a.flags.writeable for a in arrays):
            return compute()
        entry = self.remembered(kind, (*map(id, arrays), key), lambda: (arrays, compute()))
        return entry[1] if all(a is b for a, b in zip(entry[0], arrays)) else compute()

    def check_output(self, shape: tuple[int, ...], et: str, sig: Sig) -> None:
        """Refuse, before allocating, an output whose size is only known at run time (a static
        output was checked at load)."""
        if sig.static:
            return
        self.context.limits.check_tensor(shape, bits(et) / 8, "output", self.where)

    def computes_as(self, et: str) -> str:
        """The type a value declared `et` is held in under the model's precision rule (f16 as f32
        by default: an f16 Const arrives widened): for checks that compare an input's type with
        an attribute's."""
        return compute_type(et, getattr(self.context, "precision", "declared"))

    def require_dtype(self, spec: TensorSpec, allowed: Collection[str], what: str = "input") -> None:
        if spec.dtype not in allowed:
            raise UnsupportedDtypeError(
                f"{what} has element type {spec.dtype}, which {self.TYPE} does not accept "
                f"(accepts {', '.join(sorted(allowed))})",
                self.where,
            )

    def require_same_dtype(self, inputs: list[TensorSpec], which: Iterable[int] | None = None) -> str:
        """All the listed operands (default: all) share one element type; returns it."""
        idx = range(len(inputs)) if which is None else which
        first = None
        for i in idx:
            et = inputs[i].dtype
            if first is None:
                first = (i, et)
            elif et != first[1]:
                raise FormatError(
                    f"input {i} has element type {et}, input {first[0]} has {first[1]}; they must match",
                    self.where,
                )
        return first[1] if first else ""
