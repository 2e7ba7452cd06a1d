"""ScaledDotProductAttention-13 with OpenVINO semantics:
softmax(Q K^T * scale + mask) V, where scale defaults to 1/sqrt(E), `causal` masks every key
after the query's position (a lower-triangular mask aligned at the top left), a boolean mask
keeps the positions where it is true, and a float mask is added. Batch dims broadcast.

The products run on BLAS in float32 (float64 for f64); the softmax is the reduction family's
(`kernels.normalize`: exact max, float64 sums), rounded once. With the kernels, long sequences
go by query blocks, skipping the keys a causal mask hides, and float32 heads of up to 64
embeddings by register rows (scores, softmax and weighted values of eight query rows in
16-lane registers, no BLAS; `kernels.attention`).
"""

from __future__ import annotations

import math

import numpy as np

from .. import blas
from ..dtypes import FLOAT_TYPES
from ..errors import ShapeInferenceError
from ..kernels.attention import (
    attention,
    attention_call,
    attention_masked_softmax_out,
    attention_numpy,
    attention_softmax_out,
    decomposed_attention,
)
from ..kernels.normalize import softmax, softmax_out
from ..shapes import TensorSpec, broadcast_shapes, format_shape
from .attrs import Attr
from .base import Op, Sig, Steady
from .common import finish
from .registry import register


@register
class ScaledDotProductAttention(Op):
    KERNELS = ("normalize",)
    TYPE = "ScaledDotProductAttention"
    VERSIONS = (13,)
    INPUTS = (3, 5)
    causal = Attr("bool", False)

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        q, k, v = inputs[:3]
        self.require_dtype(q, FLOAT_TYPES, "query")
        if q.shape is None or k.shape is None or v.shape is None:
            return [TensorSpec(q.dtype, None)]
        if len(q.shape) < 2 or len(k.shape) < 2 or len(v.shape) < 2:
            raise ShapeInferenceError("query, key and value need rank >= 2", self.where)
        e_q, e_k = q.shape[-1], k.shape[-1]
        if e_q is not None and e_k is not None and e_q != e_k:
            raise ShapeInferenceError(f"query and key embeddings differ ({e_q} vs {e_k})", self.where)
        shapes = [q.shape[:-2], k.shape[:-2], v.shape[:-2]]
        L = q.shape[-2]
        if len(inputs) > 3 and inputs[3].shape is not None and len(inputs[3].shape) >= 2:
            mask = inputs[3].shape
            shapes.append(mask[:-2])
            if L is None and mask[-2] not in (None, 1):
                L = mask[-2]  # the mask broadcasts against (L, S): it may know L
        batch = self._batch(shapes, inputs)
        return [TensorSpec(q.dtype, None if batch is None else tuple(batch) + (L, v.shape[-1]))]

    def _batch(self, shapes, inputs: list[TensorSpec]):
        """The broadcast batch dims, or an error naming each input and its shape."""
        try:
            return broadcast_shapes(shapes)
        except ShapeInferenceError:
            names = ("query", "key", "value", "attention_mask")
            listed = ", ".join(f"{n} {format_shape(s.shape)}" for n, s in zip(names, inputs))
            raise ShapeInferenceError(
                f"the batch dims (all but the last two) of {listed} do not broadcast", self.where
            ) from None

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        key = tuple((x.shape, x.dtype) for x in inputs[:4]) + ((inputs[4].tobytes(),) if len(inputs) > 4 else ())
        call = self.steady(key)
        if call is not None:
            q = inputs[0]
            y = call(q, inputs[1], inputs[2], _effective_mask(inputs[3], q) if len(inputs) > 3 else None)
            if y is not None:
                return [y]
        q, k, v = (x.astype(np.float32) if x.dtype == np.float16 else x for x in inputs[:3])
        e = q.shape[-1]
        scale = inputs[4].reshape(()).astype(np.float64) if len(inputs) > 4 else 1.0 / math.sqrt(e)
        mask = _effective_mask(inputs[3], q) if len(inputs) > 3 else None
        if np.ndim(scale) == 0:
            y = attention(q, k, v, float(scale), self.causal, mask, q.dtype)
            if y is not None and sig.outs[0] == "f32" and q is inputs[0]:
                masked = len(inputs) > 3
                self.settle(key, lambda: attention_call(q, k, v, float(scale), self.causal, masked))
            if y is None:
                y = attention_numpy(q, k, v, float(scale), self.causal, mask, q.dtype)
            if y is not None:
                return [finish(y, sig.outs[0])]
        return [finish(np.asarray(self._whole(q, k, v, scale, mask)), sig.outs[0])]

    def _whole(self, q, k, v, scale, mask: np.ndarray | None) -> np.ndarray:
        """The whole-tensor paths: the fused kernels on all scores at once, or numpy."""
        raw = blas.matmul(q, np.swapaxes(k, -1, -2))
        if raw.ndim >= 2 and np.ndim(scale) == 0:
            if mask is None or self.causal:
                # scale, causal mask and softmax in one kernel pass (float32 results: float32
                # exponentials, normalize_loops._attention_row_f32)
                p = attention_softmax_out(raw, float(scale), self.causal, q.dtype)
            else:
                # scale, the mask and softmax in one kernel pass (likewise)
                p = attention_masked_softmax_out(raw, float(scale), mask, q.dtype)
            if p is not None:
                return blas.matmul(p, v)
        scores = raw.astype(np.float64) * scale
        L, S = scores.shape[-2], scores.shape[-1]
        if self.causal:
            scores = np.where(np.tril(np.ones((L, S), bool)), scores, -np.inf)
        elif mask is not None:
            scores = np.where(mask, scores, -np.inf) if mask.dtype == np.bool_ else scores + mask.astype(np.float64)
        p = softmax_out(scores, -1, False, q.dtype)
        if p is None:
            p = softmax(scores, -1, out_dtype=q.dtype)
        return blas.matmul(p, v)


def _effective_mask(mask: np.ndarray, q: np.ndarray) -> np.ndarray | None:
    """The mask, or None for a float mask of one zero that adds no batch dims: adding 0 changes
    no softmax (-0 + 0 and x + 0 give the same differences from the maximum; wav2vec2 passes
    one), so it runs as no mask."""
    if mask.dtype.kind == "f" and mask.size == 1 and mask.ndim <= q.ndim and float(mask.reshape(-1)[0]) == 0.0:
        return None
    return mask


class DecomposedAttention(Steady):
    """A fused step (`irexec/fusion.py`): attention as separate layers compute it, MatMul(q, k)
    [-> Multiply or Divide by a constant] [-> Add(mask)] -> Softmax(last axis) [-> the NaN guard
    Select(IsNaN(p), 0, p)] -> MatMul(p, v), as ONNX exports of BERT-like models write it.
    With the kernels, float32 heads of up to 64 embeddings go by the register rows
    (`kernels.attention.decomposed_attention`): each score scaled and each mask value added are
    rounded to float32 as the layers round them; the scores' own sums (float32, in another order
    than BLAS's) and the softmax's float32 exponentials differ from the layers' by float32
    roundings. The scores and probabilities never exist whole. A result with a NaN (a row whose
    every key the mask hides, a NaN or infinite input), and every case the kernel does not
    take, run the layers themselves: their values, NaN guard included."""

    TYPE = "Attention (fused)"
    FOLDABLE = False
    KERNELS = ("normalize",)

    def kernel_families(self) -> tuple[str, ...]:
        return self.KERNELS

    def __init__(self, inner: tuple, operands: tuple, roles: dict, scale: float, divide: bool, ids: tuple):
        # inner: (op, sig, operand keys, output key) of each fused layer in order; operands:
        # the step's operand keys; roles: the operand positions of "q", "k", "v" and "mask"
        # (None: no mask) and whether q k and p v take their second operand transposed ("kt",
        # "vt": MatMul's transpose_b)
        self.inner = inner
        self.operands = operands
        self.roles = roles
        self.scale = float(scale)
        self.divide = divide
        self.where = inner[-1][0].where
        self.layers = ids  # the fused layers' ids, in order

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        r = self.roles
        q, k, v = inputs[r["q"]], inputs[r["k"]], inputs[r["v"]]
        mask = None if r["mask"] is None else inputs[r["mask"]]
        if q.ndim >= 3 and k.ndim >= 3 and v.ndim >= 3:
            k = k if r["kt"] else k.swapaxes(-1, -2)
            v = v.swapaxes(-1, -2) if r["vt"] else v
            key = (
                q.shape,
                k.shape,
                v.shape,
                q.dtype,
                k.dtype,
                v.dtype,
                None if mask is None else (mask.shape, mask.dtype),
            )
            call = self.steady(key)
            y = None if call is None else call(q, k, v, mask)
            if y is None:
                y = decomposed_attention(q, k, v, self.scale, self.divide, mask)
                if y is not None:
                    rounded = 2 if self.divide else 1
                    self.settle(key, lambda: attention_call(q, k, v, self.scale, False, mask is not None, rounded))
            if y is not None and not np.isnan(np.add.reduce(y.reshape(-1))):
                return [y]
        return [self._layers(inputs)]

    def _layers(self, inputs: list[np.ndarray]) -> np.ndarray:
        """The fused layers, one by one."""
        env = dict(zip(self.operands, inputs))
        y = None
        for op, sig, operands, out in self.inner:
            (y,) = op.compute([env[key] for key in operands], sig)
            env[out] = y
        return y
