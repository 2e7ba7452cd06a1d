"""Linear algebra with OpenVINO semantics: MatMul-1 and Einsum-7, on numpy (BLAS).

float32 multiplies in float32 (BLAS, as OpenVINO's CPU plugin does with an f32 precision hint);
float16 and bf16 are computed in float32 and rounded once; integers exactly (numpy's loops).
"""

from __future__ import annotations

import math
import re

import numpy as np

from ..dtypes import NUMERIC_TYPES
from ..errors import FormatError, ShapeInferenceError
from ..shapes import TensorSpec, broadcast_shapes, format_shape
from .attrs import Attr
from .base import Op, Sig
from .common import finish
from .registry import register


def _wide(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32) if x.dtype == np.float16 else x


# OpenBLAS multiplies products of up to 100^3 multiply-adds (M*N*K) with its small-matrix
# kernels, which beat one packed product of the merged rows (measured 68 against 85 us for
# (32, 49, 64) @ (64, 64)); above that both run the same packed kernels, with the same sums
SMALL_PRODUCT = 100**3


def _one_product(a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """np.matmul(a, b) as one (rows, K) @ (K, N) product when b is a matrix (or a batch of one)
    and a's batch and row dims merge into rows without a copy; None where numpy's batched
    product should run. np.matmul takes a 2-D b against a batched a as one product per batch:
    (1, 56, 56, 96) @ (96, 384) was 56 products of 56 rows (1.2-4.4x slower, one thread). The
    merged product gives the same bits above SMALL_PRODUCT; single-row batches (a matrix-vector
    product each, 6x slower) merge too, and give sums in BLAS's matrix-product order. A 2-D a
    against a batched b stays batched: merging would copy b (measured 1.5-4x slower)."""
    if a.ndim < 3 or b.ndim < 2 or math.prod(b.shape[:-2]) != 1:
        return None
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    if m * k * n <= SMALL_PRODUCT and (m > 1 or math.prod(a.shape[:-1]) * k * n <= SMALL_PRODUCT):
        return None
    try:
        rows = np.reshape(a, (-1, k), copy=False)
    except (TypeError, ValueError):  # a transposed or strided a (a copy would be needed), numpy < 2.1
        return None
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return np.matmul(rows, b.reshape(k, n)).reshape(batch + (m, n))


@register
class MatMul(Op):
    """MatMul-1: batched matrix product with transpose_a/transpose_b; a 1-D operand is a row
    (first) or column (second) vector whose unit dim leaves the result; leading dims broadcast."""

    TYPE = "MatMul"
    VERSIONS = (1,)
    INPUTS = (2, 2)
    transpose_a = Attr("bool", False)
    transpose_b = Attr("bool", False)

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        a, b = inputs
        self.require_dtype(a, NUMERIC_TYPES, "input 0")
        et = self.require_same_dtype(inputs)
        if a.shape is None or b.shape is None:
            return [TensorSpec(et, None)]
        sa, sb = list(a.shape), list(b.shape)
        if not sa or not sb:
            raise ShapeInferenceError("MatMul operands must have rank >= 1", self.where)
        a1, b1 = len(sa) == 1, len(sb) == 1
        if a1:
            sa = [1] + sa
        elif self.transpose_a:
            sa[-2], sa[-1] = sa[-1], sa[-2]
        if b1:
            sb = sb + [1]
        elif self.transpose_b:
            sb[-2], sb[-1] = sb[-1], sb[-2]
        ka, kb = sa[-1], sb[-2]
        if ka is not None and kb is not None and ka != kb:
            raise ShapeInferenceError(
                f"inner dims differ: {format_shape(a.shape)} x {format_shape(b.shape)} "
                f"(transpose_a={self.transpose_a}, transpose_b={self.transpose_b})",
                self.where,
            )
        batch = broadcast_shapes([tuple(sa[:-2]), tuple(sb[:-2])])
        out = list(batch) + ([] if a1 else [sa[-2]]) + ([] if b1 else [sb[-1]])
        return [TensorSpec(et, tuple(out))]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        a, b = (_wide(x) for x in inputs)
        if self.transpose_a and a.ndim > 1:
            a = np.swapaxes(a, -1, -2)
        if self.transpose_b and b.ndim > 1:
            b = np.swapaxes(b, -1, -2)
        out = _one_product(a, b)
        if out is None:
            out = np.asarray(np.matmul(a, b))
        return [finish(out, sig.outs[0])]


_LABELS = re.compile(r"\.\.\.|[a-zA-Z]")


@register
class Einsum(Op):
    """Einsum-7: numpy's einsum with OpenVINO's equation syntax (explicit `->` or implicit output,
    ellipsis, repeated labels for diagonals)."""

    TYPE = "Einsum"
    VERSIONS = (7,)
    INPUTS = (1, None)
    equation = Attr("str")

    def _parse(self, n_inputs: int) -> tuple[list[list[str]], list[str]]:
        eq = self.equation.replace(" ", "")
        lhs, arrow, rhs = eq.partition("->")
        terms = lhs.split(",")
        if len(terms) != n_inputs:
            raise FormatError(f"equation {self.equation!r} has {len(terms)} inputs, the layer {n_inputs}", self.where)
        parsed = [_LABELS.findall(t) for t in terms]
        for t, p in zip(terms, parsed):
            if "".join(p) != t:
                raise FormatError(f"equation {self.equation!r}: bad term {t!r}", self.where)
        if arrow:
            out = _LABELS.findall(rhs)
        else:
            counts = {}
            for p in parsed:
                for lab in p:
                    counts[lab] = counts.get(lab, 0) + 1
            out = (["..."] if "..." in counts else []) + sorted(k for k, c in counts.items() if c == 1 and k != "...")
        return parsed, out

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        et = self.require_same_dtype(inputs)
        parsed, out = self._parse(len(inputs))
        if any(s.shape is None for s in inputs):
            return [TensorSpec(et, None)]
        dims: dict = {}
        ell = []
        for spec, labels in zip(inputs, parsed):
            n_ell = len(spec.shape) - (len(labels) - (1 if "..." in labels else 0))
            if n_ell < 0 or (n_ell and "..." not in labels):
                raise ShapeInferenceError(f"input {format_shape(spec.shape)} does not fit {labels}", self.where)
            i = 0
            for lab in labels:
                if lab == "...":
                    ell.append(tuple(spec.shape[i : i + n_ell]))
                    i += n_ell
                    continue
                d = spec.shape[i]
                i += 1
                have = dims.get(lab)
                if have is not None and d is not None and have != d and 1 not in (have, d):
                    raise ShapeInferenceError(f"label {lab!r} has dims {have} and {d}", self.where)
                if have is None or have == 1:
                    dims[lab] = d
        ell_shape = broadcast_shapes(ell) if ell else ()
        shape = []
        for lab in out:
            if lab == "...":
                shape.extend(ell_shape)
            else:
                shape.append(dims.get(lab))
        return [TensorSpec(et, tuple(shape))]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        eq = self.equation.replace(" ", "")
        return [finish(np.asarray(np.einsum(eq, *(_wide(x) for x in inputs))), sig.outs[0])]
