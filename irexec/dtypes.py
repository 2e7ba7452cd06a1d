"""Element types: IR spellings <-> numpy dtypes, sub-byte packing, and the accumulator policy.

irexec names element types with OpenVINO's lowercase names (``f32``, ``bf16``, ``boolean``...).
bf16 has no numpy type: bf16 tensors are held as float32 arrays whose values are exactly
representable in bf16 (``round_bf16`` is applied after every op producing bf16).

``string`` tensors are held inside irexec as numpy object arrays of Python ``bytes`` (each
element one string's UTF-8 bytes, as OpenVINO's ``std::string`` holds them): the string ops
slice and join bytes without decoding, and the model's boundary converts them from and to the
caller's ``str`` (or ``bytes``) arrays (irexec/strings.py). Their size in a .bin or in memory
is not a function of the shape: `bits` gives the size of one element's reference (64 bits),
and the bytes themselves are checked against ``Limits.max_string_bytes``.
"""

from __future__ import annotations

import numpy as np

# element type -> (numpy storage dtype, bits per element in the .bin)
_TABLE: dict[str, tuple[np.dtype, int]] = {
    "f64": (np.dtype(np.float64), 64),
    "f32": (np.dtype(np.float32), 32),
    "f16": (np.dtype(np.float16), 16),
    "bf16": (np.dtype(np.float32), 16),
    "i8": (np.dtype(np.int8), 8),
    "u8": (np.dtype(np.uint8), 8),
    "i16": (np.dtype(np.int16), 16),
    "u16": (np.dtype(np.uint16), 16),
    "i32": (np.dtype(np.int32), 32),
    "u32": (np.dtype(np.uint32), 32),
    "i64": (np.dtype(np.int64), 64),
    "u64": (np.dtype(np.uint64), 64),
    "boolean": (np.dtype(np.bool_), 8),
    "u1": (np.dtype(np.uint8), 1),
    "u4": (np.dtype(np.uint8), 4),
    "i4": (np.dtype(np.int8), 4),
    "string": (np.dtype(object), 64),
}

ELEMENT_TYPES = tuple(_TABLE)
FLOAT_TYPES = frozenset({"f64", "f32", "f16", "bf16"})
INT_TYPES = frozenset({"i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "u1", "u4", "i4"})
NUMERIC_TYPES = FLOAT_TYPES | INT_TYPES
STRING = "string"
# Types ops compute on: the sub-byte ones only arrive in Consts and must be Converted first.
SUB_BYTE_TYPES = frozenset({"u1", "u4", "i4"})
COMPUTE_TYPES = NUMERIC_TYPES - SUB_BYTE_TYPES

_ALIASES = {
    "fp64": "f64",
    "fp32": "f32",
    "fp16": "f16",
    "bf16": "bf16",
    "bool": "boolean",
    "boolean": "boolean",
    "bin": "u1",
}
# Precisions that claim nothing (OV writes them for dynamic element types).
_UNSPECIFIED = frozenset({"dynamic", "undefined", "unspecified", ""})

_FROM_NUMPY = {
    np.dtype(np.float64): "f64",
    np.dtype(np.float32): "f32",
    np.dtype(np.float16): "f16",
    np.dtype(np.int8): "i8",
    np.dtype(np.uint8): "u8",
    np.dtype(np.int16): "i16",
    np.dtype(np.uint16): "u16",
    np.dtype(np.int32): "i32",
    np.dtype(np.uint32): "u32",
    np.dtype(np.int64): "i64",
    np.dtype(np.uint64): "u64",
    np.dtype(np.bool_): "boolean",
}


class UnknownElementType(ValueError):
    """Raised by `parse_element_type` for a spelling irexec does not know."""


class UnsupportedElementType(UnknownElementType):
    """An element type OpenVINO defines that irexec does not compute with (string, f8, nf4...)."""


# OpenVINO element types irexec knows by name but does not implement.
UNSUPPORTED_TYPES = frozenset({"f8e4m3", "f8e5m2", "f8e8m0", "f4e2m1", "nf4", "u2", "u3", "u6", "i2", "dynamic"})


def parse_element_type(text: str) -> str:
    """Canonical element type of an IR spelling (``f32``, ``FP32``, ``BOOL``, ``i64``...)."""
    key = text.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in _TABLE:
        if key in UNSUPPORTED_TYPES:
            raise UnsupportedElementType(text)
        raise UnknownElementType(text)
    return key


def parse_precision(text: str) -> str | None:
    """Like `parse_element_type`, but an unspecified precision gives None (no claim)."""
    if text.strip().lower() in _UNSPECIFIED:
        return None
    return parse_element_type(text)


def numpy_dtype(et: str) -> np.dtype:
    """The numpy dtype irexec holds tensors of element type `et` in."""
    return _TABLE[et][0]


def bits(et: str) -> int:
    """Bits per element of `et` in a .bin file."""
    return _TABLE[et][1]


def from_numpy(dtype: np.dtype) -> str | None:
    """Element type of a numpy dtype, or None when irexec has no such type."""
    return _FROM_NUMPY.get(np.dtype(dtype))


def round_bf16(a: np.ndarray) -> np.ndarray:
    """Round float32 values to the nearest bf16 (ties to even), kept as float32."""
    shape = np.shape(a)
    a = np.ascontiguousarray(a, dtype=np.float32).reshape(-1)
    u = a.view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    nan = np.isnan(a)
    if nan.any():
        rounded[nan] = (a.view(np.uint32)[nan] & 0xFFFF0000) | 0x00400000
    return rounded.view(np.float32).reshape(shape)


def bf16_from_bits(words: np.ndarray) -> np.ndarray:
    """Widen raw bf16 words (uint16) to float32."""
    return (words.astype(np.uint32) << 16).view(np.float32)


def cast(a: np.ndarray, et: str) -> np.ndarray:
    """Convert an array to element type `et` with OV's Convert rules.

    Float to integer truncates toward zero (after saturation, as OV's reference does for
    the narrow types); bf16 rounds to nearest even.
    """
    a = np.asarray(a)
    if et == "bf16":
        return round_bf16(a.astype(np.float32))
    target = numpy_dtype(et)
    if et == "boolean":
        return a != 0
    if a.dtype.kind == "f" and target.kind in "iu":
        info = np.iinfo(target)
        if a.size:
            # every value finite and truncating into the type: the plain cast truncates toward
            # zero already (T5's 512x512 relative positions: 1.3 ms the long way, 0.16 this way)
            lo, hi = float(a.min()), float(a.max())  # NaN when there is one: the comparisons fail
            if lo >= float(info.min) and hi < float(info.max) + 1.0:
                return a.astype(target)
        with np.errstate(invalid="ignore", over="ignore"):
            t = np.trunc(a.astype(np.float64))
            t = np.nan_to_num(t, nan=0.0)
            hi = float(info.max)
            # float(2**63 - 1) is 2**63, which int64 cannot hold (it would wrap to the minimum):
            # clip below it and give the values at or above it the type's maximum
            top = t >= hi if int(hi) > info.max else None
            t = np.clip(t, float(info.min), np.nextafter(hi, 0.0) if top is not None else hi)
        out = t.astype(target)
        if top is not None and top.any():
            out[top] = info.max
        return out
    with np.errstate(invalid="ignore", over="ignore"):
        return a.astype(target)
