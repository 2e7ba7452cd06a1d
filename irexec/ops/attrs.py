"""Typed layer attributes: an op declares `name = Attr(kind, default)` as a class field and reads
`self.name`; the reader hands over strings only, converted here with the declared kind.

A malformed known attribute is an error, never a default (SPEC §1). Kinds:
bool (true/false/1/0, any case), int, ints (comma list, `[...]` allowed), float, floats,
str, etype (an element type name), shape (comma list of dims, '' = scalar). `choices` limits a
str to a set of lowercase values (the value is lowercased before the check).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from ..dtypes import UnknownElementType, UnsupportedElementType, parse_element_type

MISSING = object()


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


def _list(text: str) -> list[str]:
    s = text.strip()
    if s.startswith("[") and s.endswith("]"):
        s = s[1:-1]
    return [p for p in s.split(",")] if s.strip() else []


def _ints(text: str) -> tuple[int, ...]:
    return tuple(_int(p) for p in _list(text))


def _float(text: str) -> float:
    s = text.strip()
    if not s or len(s) > 64 or not s.isascii():
        raise ValueError("expected a number")
    v = float(s)  # accepts inf / nan spellings, as OpenVINO's attribute reader does
    if math.isnan(v) and s.lower().lstrip("+-") not in ("nan",):
        raise ValueError("expected a number")
    return v


def _floats(text: str) -> tuple[float, ...]:
    return tuple(_float(p) for p in _list(text))


def _etype(text: str) -> str:
    try:
        return parse_element_type(text)
    except UnsupportedElementType:
        raise  # the op turns it into UnsupportedDtypeError
    except UnknownElementType:
        raise ValueError("unknown element type") from None


KINDS: dict[str, Callable[[str], Any]] = {
    "bool": _bool,
    "int": _int,
    "ints": _ints,
    "float": _float,
    "floats": _floats,
    "str": str,
    "etype": _etype,
}


class Attr:
    """A declared attribute: its kind, default (absent = required), XML name when it differs
    from the field name, and the allowed values of a str attribute."""

    def __init__(
        self, kind: str, default: Any = MISSING, *, xml: str | None = None, choices: Iterable[str] | None = None
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown attribute kind {kind!r}")
        self.kind = kind
        self.default = default
        self.xml = xml
        self.field = xml
        self.choices = None if choices is None else tuple(choices)

    def __set_name__(self, owner: type, name: str) -> None:
        self.field = name
        if self.xml is None:
            self.xml = name

    @property
    def required(self) -> bool:
        return self.default is MISSING

    def parse(self, text: str) -> Any:
        value = KINDS[self.kind](text)
        if self.choices is not None:
            value = value.strip().lower()
            if value not in self.choices:
                raise ValueError(f"expected one of {', '.join(self.choices)}")
        return value
