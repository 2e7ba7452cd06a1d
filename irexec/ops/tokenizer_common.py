"""Helpers shared by the openvino_tokenizers ops (tokenizer_model.py, tokenizer_sentencepiece.py):
the unpacked and ragged string forms of irexec/ops/strings.py checked and read, their offsets
written, and the parsed model (a vocab's tries, a merge table) built once per set of constant
inputs.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ..errors import ExecutionError
from ..shapes import TensorSpec
from .base import Op, Sig

VERSION = "extension"
INDEX = ("i32",)
INTS = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")
WORD_CACHE = 1 << 16  # words remembered per tokenizer model (a deterministic memo)


# ---------------------------------------------------------------- ragged helpers


def check_string(op: Op, inputs: list[TensorSpec], i: int, what: str) -> None:
    op.require_dtype(inputs[i], INDEX, f"input {i} ({what} begins)")
    op.require_dtype(inputs[i + 1], INDEX, f"input {i + 1} ({what} ends)")
    op.require_dtype(inputs[i + 2], ("u8",), f"input {i + 2} ({what} symbols)")


def check_ragged_string(op: Op, inputs: list[TensorSpec], i: int, what: str) -> None:
    op.require_dtype(inputs[i], INDEX, f"input {i} ({what} ragged begins)")
    op.require_dtype(inputs[i + 1], INDEX, f"input {i + 1} ({what} ragged ends)")
    check_string(op, inputs, i + 2, what)


def ranges(op: Op, lo: np.ndarray, hi: np.ndarray, n: int, what: str, of: str) -> tuple[np.ndarray, np.ndarray]:
    """lo, hi as flat int64, checked to be ranges inside [0, n)."""
    lo = lo.reshape(-1).astype(np.int64)
    hi = hi.reshape(-1).astype(np.int64)
    if lo.shape != hi.shape:
        raise ExecutionError(f"{what}: {lo.size} begins and {hi.size} ends; they must be as many", op.where)
    bad = np.flatnonzero((lo < 0) | (hi < lo) | (hi > n))
    if bad.size:
        i = int(bad[0])
        raise ExecutionError(
            f"{what} {i}: begin {int(lo[i])}, end {int(hi[i])} is not a range of the {n} {of}", op.where
        )
    return lo, hi


def gather(symbols: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The bytes symbols[lo[i]:hi[i]] for every i, concatenated (vectorized)."""
    lengths = hi - lo
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.uint8)
    starts = np.cumsum(lengths) - lengths
    index = np.repeat(lo - starts, lengths) + np.arange(total, dtype=np.int64)
    return symbols[index]


def offsets(lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ends = np.cumsum(lengths, dtype=np.int64)
    return (ends - lengths).astype(np.int32), ends.astype(np.int32)


def i32_total(op: Op, total: int, what: str) -> None:
    if total > (1 << 31) - 1:
        raise ExecutionError(f"{what} holds {total} elements, more than i32 offsets can index", op.where)


def strings(op: Op, begins: np.ndarray, ends: np.ndarray, symbols: np.ndarray, what: str) -> list[bytes]:
    lo, hi = ranges(op, begins, ends, symbols.size, f"{what} string", "symbols")
    raw = symbols.tobytes()
    return [raw[a:b] for a, b in zip(lo.tolist(), hi.tolist())]


def model_key(arrays: list[np.ndarray]) -> str:
    """A digest of the model's constant inputs (vocab, merges...): the parsed model is built once."""
    h = hashlib.blake2b(digest_size=16)
    for a in arrays:
        h.update(str((a.dtype.str, a.shape)).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


class ModelCache(Op):
    """Builds the parsed model (tries, merge table) once per set of model arrays."""

    def build(self, arrays: list[np.ndarray]):
        raise NotImplementedError

    def model(self, arrays: list[np.ndarray]):
        if not any(a.flags.writeable for a in arrays):
            # constants: known by identity (`Op.derived`), no hashing of a large vocab per request
            return self.derived("model", arrays, "id", lambda: self.build(arrays))
        return self.remembered("model", ("digest", model_key(arrays)), lambda: self.build(arrays))


class RaggedModel(ModelCache):
    """A tokenizer model: ragged words in (inputs 0-4), a ragged i32 tensor of ids out."""

    VERSIONS = (VERSION,)
    OUTPUTS = 3

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        check_ragged_string(self, inputs, 0, "words")
        self.check_model_inputs(inputs)
        rows = inputs[0].shape
        return [TensorSpec("i32", rows), TensorSpec("i32", rows), TensorSpec("i32", (None,))]

    def check_model_inputs(self, inputs: list[TensorSpec]) -> None:
        raise NotImplementedError

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        rb, re_, begins, ends, symbols = inputs[:5]
        model = self.model(inputs[5:])
        lo, hi = ranges(self, rb, re_, begins.size, "ragged row", "words")
        words = strings(self, begins, ends, symbols, "word")
        out: list[int] = []
        row_begins = np.empty(lo.size, np.int64)
        row_ends = np.empty(lo.size, np.int64)
        for r, (a, b) in enumerate(zip(lo.tolist(), hi.tolist())):
            row_begins[r] = len(out)
            for w in words[a:b]:
                out.extend(model(w))
            row_ends[r] = len(out)
        i32_total(self, len(out), "the token ids")
        shape = rb.shape
        ids = np.array(out, np.int32) if out else np.zeros(0, np.int32)
        return [row_begins.astype(np.int32).reshape(shape), row_ends.astype(np.int32).reshape(shape), ids]


# the 256 byte pieces <0x00> ... <0xFF> (sentencepiece's spelling) -> their byte
BYTE_PIECES = {b"<0x%02X>" % i: bytes([i]) for i in range(256)}
