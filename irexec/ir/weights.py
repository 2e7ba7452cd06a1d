"""The .bin weights file: memory-mapped once, Consts read as read-only views, sub-byte unpacked."""

from __future__ import annotations

import math
import mmap
from pathlib import Path

import numpy as np

from ..dtypes import bf16_from_bits, bits, numpy_dtype
from ..errors import WeightsError, Where


class Weights:
    """A memory map of the .bin (or nothing, for a model without Consts)."""

    def __init__(self, path: str | Path | None):
        self.path = None if path is None else str(path)
        self._buf = None
        if path is not None and Path(path).exists():
            if not Path(path).is_file():
                raise WeightsError(f"weights file {self.path!r} is not a regular file")
            try:
                with open(path, "rb") as f:
                    size = Path(path).stat().st_size
                    self._buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
            except OSError as e:
                raise WeightsError(f"cannot read weights file {self.path!r}: {e.strerror}") from None

    @property
    def size(self) -> int:
        return 0 if self._buf is None else len(self._buf)

    def read(self, et: str, shape: tuple[int, ...], offset: int, size: int, where: Where) -> np.ndarray:
        """The Const's array: checked against the file with Python integers before reading."""
        if self._buf is None:
            raise WeightsError(f"needs weights file {self.path!r}, which does not exist", where)
        numel = math.prod(shape)
        need = math.ceil(numel * bits(et) / 8)
        if offset < 0:
            raise WeightsError(f"offset {offset} is negative", where)
        if size < need:
            raise WeightsError(
                f"size {size} is smaller than the {need} bytes that {et} of shape {shape} needs", where
            )
        if offset + size > len(self._buf):
            raise WeightsError(
                f"offset {offset} + size {size} = {offset + size} is past the end of "
                f"{self.path!r} ({len(self._buf)} bytes)",
                where,
            )
        return decode(self._buf, et, shape, offset, numel)


def decode(buf, et: str, shape: tuple[int, ...], offset: int, numel: int) -> np.ndarray:
    """Decode `numel` elements of `et` at `offset` of a buffer into an array of `shape`."""
    b = bits(et)
    if et in ("u1", "u4", "i4"):
        raw = np.frombuffer(buf, np.uint8, math.ceil(numel * b / 8), offset)
        if et == "u1":
            out = np.unpackbits(raw, bitorder="big")[:numel]
        else:
            out = np.empty(raw.size * 2, np.uint8)
            out[0::2] = raw & 0x0F
            out[1::2] = raw >> 4
            out = out[:numel]
            if et == "i4":
                out = ((out.astype(np.int8) << 4) >> 4).astype(np.int8)
        return out.reshape(shape)
    if et == "bf16":
        words = np.frombuffer(buf, "<u2", numel, offset)
        return bf16_from_bits(words).reshape(shape)
    if et == "boolean":
        return np.frombuffer(buf, np.uint8, numel, offset).astype(bool).reshape(shape)
    dt = numpy_dtype(et).newbyteorder("<")
    arr = np.frombuffer(buf, dt, numel, offset).reshape(shape)
    if arr.dtype.byteorder not in ("=", "|") and not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return arr
