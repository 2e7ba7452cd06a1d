"""Linear algebra with OpenVINO semantics: MatMul-1, Einsum-7, Inverse-14 and GroupedMatMul-17,
on numpy (BLAS).

float32 multiplies in float32 (BLAS, as OpenVINO's CPU plugin does with an f32 precision hint);
float16 and bf16 are computed in float32 and rounded once; integers exactly (numpy's loops).

Inverse-14 runs OpenVINO's algorithm step by step, batched: LU decomposition with partial
pivoting (the first row of largest |value|), then forward and back substitution per column of
the identity, in float32 for f32/f16/bf16 (rounded once to f16/bf16) and float64 for f64. float32
results equal the CPU plugin's bit for bit, singular matrices included: no pivot check, so a
zero pivot gives the infinities and NaNs of its divisions ([[1,2],[2,4]] gives [[-inf,inf],
[inf,-inf]], an all-zero matrix all NaN). adjoint=true gives the inverse of the transposed
matrix (the CPU plugin's rule, TensorFlow's MatrixInverse adjoint: inverse of the conjugate
transpose), LU-decomposed as transposed. Where OpenVINO differs: the CPU plugin computes f64 in
float32 (irexec in float64, the reference's type); the 2024 reference source multiplied the
inverse by the determinant for adjoint=true (the adjugate), which the CPU plugin of 2026.4 does
not do: irexec follows the CPU plugin.

GroupedMatMul-17 (mixture-of-experts): a 2-D mat_a [tokens, K] with offsets [G] (i32/i64,
cumulative end rows of each group) against mat_b [G, N, K] gives [tokens, N], rows
offsets[g-1]..offsets[g] of a times mat_b[g] transposed; a 3-D mat_a [G, M, K] gives [G, M, N]
(offsets ignored). OpenVINO 2026.4 infers its shapes but neither the CPU plugin nor the reference
runs it: values are checked against a float64 numpy product. Offsets must be non-decreasing
within [0, tokens] and one per group (an ExecutionError otherwise); rows after the last offset
belong to no group and are 0.
"""

from __future__ import annotations

import math
import re

import numpy as np

from .. import blas
from ..dtypes import FLOAT_TYPES, NUMERIC_TYPES
from ..errors import ExecutionError, FormatError, ShapeInferenceError
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
# single-row batches merge from this many rows whatever the size: a matrix-vector product each
# costs more than one small product of them all (medians, one thread: (197, 1, 32) @ (32, 96),
# ViT's attention projections, 49 -> 16 us; (50, 1, 32) @ (32, 96) 13 -> 6; (8, 1, 64) @ (64, 64)
# 2.8 either way; (4, 1, 8) @ (8, 8) 1.2 batched, 2.0 merged)
MERGED_SINGLE_ROWS = 16


def _one_product(a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """np.matmul(a, b) as one (rows, K) @ (K, N) product when b is a matrix (or a batch of one)
    and a's batch and row dims merge into rows without a copy; None where numpy's batched
    product should run. np.matmul takes a 2-D b against a batched a as one product per batch:
    (1, 56, 56, 96) @ (96, 384) was 56 products of 56 rows (1.2-4.4x slower, one thread). The
    merged product gives the same bits above SMALL_PRODUCT; single-row batches (a matrix-vector
    product each, 6x slower) merge from MERGED_SINGLE_ROWS rows, and give sums in BLAS's
    matrix-product order. A 2-D a against a batched b stays batched: merging would copy b
    (measured 1.5-4x slower)."""
    merged = _merged(a, b)
    if merged is None:
        return None
    rows = _rows(a, merged[0])
    if rows is None:
        return None
    return blas.matmul(rows, b.reshape(merged[:2])).reshape(merged[2])


def _merged(a: np.ndarray, b: np.ndarray) -> tuple[int, int, tuple[int, ...]] | None:
    """(K, N, the result's shape) when `_one_product` merges a's rows by the shapes, else None."""
    if a.ndim < 3 or b.ndim < 2 or math.prod(b.shape[:-2]) != 1:
        return None
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    if m > 1 and m * k * n <= SMALL_PRODUCT:
        return None
    count = math.prod(a.shape[:-1])
    if m == 1 and count < MERGED_SINGLE_ROWS and count * k * n <= SMALL_PRODUCT:
        return None
    return k, n, np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (m, n)


def _rows(a: np.ndarray, k: int) -> np.ndarray | None:
    """a as (rows, k) without a copy, or None (a transposed or strided a; numpy < 2.1)."""
    try:
        return np.reshape(a, (-1, k), copy=False)
    except (TypeError, ValueError):
        return None


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
        a, b = inputs
        key = (a.shape, b.shape, a.dtype, b.dtype)
        call = self.steady(key)
        y = None if call is None else call(a, b)
        if y is not None:
            return [y]
        # (the methods, not np.swapaxes's dispatch, and no generator: 2 us of a BERT layer's
        # 15 us products of 128 x 32 @ 32 x 32)
        a, b = _wide(a), _wide(b)
        if self.transpose_a and a.ndim > 1:
            a = a.swapaxes(-1, -2)
        if self.transpose_b and b.ndim > 1:
            b = b.swapaxes(-1, -2)
        out = _one_product(a, b)
        if out is None:
            out = np.asarray(blas.matmul(a, b))
        y = finish(out, sig.outs[0])
        if y is out and inputs[0].dtype != np.float16 and inputs[1].dtype != np.float16:
            self.settle(key, lambda: self._steady_product(a, b))
        return [y]

    def _steady_product(self, a: np.ndarray, b: np.ndarray):
        """The product of operands like inputs (a and b after the transposes) as one function of
        the operands: the transposes, the merge of a's rows and the BLAS call decided once
        (`blas.product_call`); None where they are decided every call. The function answers None
        when a's rows would need a copy to merge (the batched product then runs, as before)."""
        ta, tb = self.transpose_a and a.ndim > 1, self.transpose_b and b.ndim > 1
        merged = _merged(a, b)
        if merged is None:
            prod = blas.product_call(a, b)
            if prod is None:
                return None

            def run(x: np.ndarray, w: np.ndarray) -> np.ndarray:
                return np.asarray(prod(x.swapaxes(-1, -2) if ta else x, w.swapaxes(-1, -2) if tb else w))

            return run
        k, n, shape = merged
        rows = _rows(a, k)
        prod = None if rows is None else blas.product_call(rows, b.reshape(k, n))
        if prod is None:
            return None

        def run_rows(x: np.ndarray, w: np.ndarray) -> np.ndarray | None:
            rows = _rows(x.swapaxes(-1, -2) if ta else x, k)
            if rows is None:
                return None
            return prod(rows, (w.swapaxes(-1, -2) if tb else w).reshape(k, n)).reshape(shape)

        return run_rows


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


# ---- Inverse ----------------------------------------------------------------------------------------


def lu_inverse(a: np.ndarray) -> np.ndarray:
    """Inverses of the [..., n, n] matrices in a, by OpenVINO's steps in a's dtype."""
    n = a.shape[-1]
    u = a.reshape(-1, n, n).copy()
    batch = np.arange(u.shape[0])
    low = np.zeros_like(u)
    low[:, np.arange(n), np.arange(n)] = 1
    perm = np.tile(np.arange(n), (u.shape[0], 1))
    for k in range(n):
        pivot = k + _first_largest(np.abs(u[:, k:, k]))
        moved = batch[pivot != k]
        if moved.size:
            p = pivot[moved]
            for m in (u, low, perm):
                m[moved, k], m[moved, p] = m[moved, p].copy(), m[moved, k].copy()
        for i in range(k + 1, n):
            low[:, i, k] = u[:, i, k] / u[:, k, k]
            u[:, i, k:] = u[:, i, k:] - low[:, i, k : k + 1] * u[:, k, k:]
    out = np.empty_like(u)
    for col in range(n):
        y = np.zeros((u.shape[0], n), u.dtype)
        for i in range(n):
            v = (perm[:, i] == col).astype(u.dtype)
            for j in range(i):
                v = v - low[:, i, j] * y[:, j]
            y[:, i] = v
        x = np.zeros((u.shape[0], n), u.dtype)
        for i in range(n - 1, -1, -1):
            v = y[:, i]
            for j in range(i + 1, n):
                v = v - u[:, i, j] * x[:, j]
            x[:, i] = v / u[:, i, i]
        out[:, :, col] = x
    return out.reshape(a.shape)


def _first_largest(col: np.ndarray) -> np.ndarray:
    """Per row, the index a scan keeping the first strictly larger |value| ends on (NaN never
    compares larger, so it is skipped unless it comes first)."""
    best = np.zeros(col.shape[0], np.int64)
    for i in range(1, col.shape[1]):
        larger = col[:, i] > col[np.arange(col.shape[0]), best]
        best[larger] = i
    return best


@register
class Inverse(Op):
    """Inverse-14: the inverses of the trailing square matrices (module doc for the algorithm)."""

    TYPE = "Inverse"
    VERSIONS = (14,)
    adjoint = Attr("bool", False)

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        x = inputs[0]
        self.require_dtype(x, FLOAT_TYPES)
        shape = x.shape
        if shape is not None:
            if len(shape) < 2:
                raise ShapeInferenceError(
                    f"input has shape {format_shape(shape)}; rank 2 or more is required", self.where
                )
            r, c = shape[-2], shape[-1]
            if r is not None and c is not None and r != c:
                raise ShapeInferenceError(
                    f"input has shape {format_shape(shape)}; its matrices must be square", self.where
                )
        return [TensorSpec(x.dtype, shape)]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        x = inputs[0]
        if x.shape[-1] != x.shape[-2]:
            raise ExecutionError(f"input has shape {list(x.shape)}; its matrices must be square", self.where)
        work = x.astype(np.float64 if x.dtype == np.float64 else np.float32)
        if self.adjoint:
            work = np.swapaxes(work, -1, -2)
        if work.size == 0:
            return [finish(work.copy(), sig.outs[0])]
        return [finish(lu_inverse(work), sig.outs[0])]


# ---- GroupedMatMul ------------------------------------------------------------------------------------


@register
class GroupedMatMul(Op):
    """GroupedMatMul-17: per-group products with transposed weights (module doc)."""

    TYPE = "GroupedMatMul"
    VERSIONS = (17,)
    INPUTS = (2, 3)

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        a, b = inputs[0], inputs[1]
        self.require_dtype(a, NUMERIC_TYPES, "input 0 (mat_a)")
        et = self.require_same_dtype(inputs, (0, 1))
        if len(inputs) == 3 and inputs[2].dtype not in ("i32", "i64"):
            raise FormatError(f"offsets has element type {inputs[2].dtype}; i32 or i64 is required", self.where)
        if a.shape is None or b.shape is None:
            return [TensorSpec(et, None)]
        if len(b.shape) != 3 or len(a.shape) not in (2, 3):
            raise ShapeInferenceError(
                f"mat_a {format_shape(a.shape)} and mat_b {format_shape(b.shape)}: 2-D x 3-D or 3-D x 3-D is required",
                self.where,
            )
        self._same(a.shape[-1], b.shape[2], "inner dims (K)")
        if len(a.shape) == 3:
            g = self._same(a.shape[0], b.shape[0], "group counts")
            return [TensorSpec(et, (g, a.shape[1], b.shape[1]))]
        if len(inputs) < 3:
            raise FormatError("a 2-D mat_a needs the offsets input", self.where)
        off = inputs[2].shape
        if off is not None and len(off) != 1:
            raise ShapeInferenceError(f"offsets has shape {format_shape(off)}; a 1-D tensor is required", self.where)
        return [TensorSpec(et, (a.shape[0], b.shape[1]))]

    def _same(self, x, y, what: str):
        if x is not None and y is not None and x != y:
            raise ShapeInferenceError(f"{what} differ: {x} and {y}", self.where)
        return x if x is not None else y

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        a, b = inputs[0], inputs[1]
        et = sig.outs[0]
        if a.ndim == 3 and (a.shape[0] != b.shape[0] or a.shape[2] != b.shape[2]):
            raise ExecutionError(f"mat_a {list(a.shape)} and mat_b {list(b.shape)} do not match", self.where)
        if a.ndim == 2 and a.shape[1] != b.shape[2]:
            raise ExecutionError(f"mat_a {list(a.shape)} and mat_b {list(b.shape)} do not match", self.where)
        shape = (a.shape[0], a.shape[1], b.shape[1]) if a.ndim == 3 else (a.shape[0], b.shape[1])
        self.check_output(shape, et, sig)
        wa, wb = _wide(a), _wide(b)
        if a.ndim == 3:
            return [finish(np.matmul(wa, np.swapaxes(wb, 1, 2)), et)]
        bounds = self._groups(inputs[2], a.shape[0], b.shape[0])
        out = np.zeros(shape, np.result_type(wa, wb))
        for g, (lo, hi) in enumerate(bounds):
            if hi > lo:
                out[lo:hi] = wa[lo:hi] @ wb[g].T
        return [finish(out, et)]

    def _groups(self, offsets: np.ndarray, tokens: int, groups: int) -> list[tuple[int, int]]:
        ends = [int(v) for v in offsets.reshape(-1).tolist()]
        if len(ends) != groups:
            raise ExecutionError(f"offsets has {len(ends)} elements for {groups} groups", self.where)
        bounds, lo = [], 0
        for e in ends:
            if not lo <= e <= tokens:
                raise ExecutionError(f"offsets {ends} must be non-decreasing within [0, {tokens}]", self.where)
            bounds.append((lo, e))
            lo = e
        return bounds
