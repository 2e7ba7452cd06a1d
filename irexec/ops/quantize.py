"""Quantization emulation with OpenVINO semantics: FakeQuantize-1 and FakeConvert-13.

The ops hold the semantics (attributes, element types, the unidirectional broadcast of the ranges
into the data) and ask their family, `kernels/quantize.py`, for the numbers: the formulas and the
numerics are written there.

What OpenVINO's reference implementation and its CPU plugin do at the edges, and which irexec
follows (checked against OpenVINO 2026.4; the reference is the spec where they differ):

FakeQuantize
- Arithmetic: the reference computes in the data's type (float32 for f32); irexec evaluates the
  formula in float64 and rounds once (SPEC). The two differ by float32 roundings: a few units in
  the last place where the output is near zero and, where float32's level index lands within its
  rounding of a half-way point, by one quantum. The CPU plugin scales with precomputed float32
  factors: its boundary outputs are not exactly output_low/output_high (-3.0000002 for -3).
- Level index: nearest, ties to even (std::nearbyint), in both.
- x <= min(input_low, input_high): output_low; x > max(...): output_high, in both. When input_low
  > input_high the reference keeps those bounds and its levels run downward inside the interval;
  the CPU plugin gave output_low everywhere (256 levels, per tensor and per channel). irexec: the
  reference.
- input_low == input_high: the reference gives output_low up to it, output_high above; the CPU
  plugin gives NaN everywhere (0/0 in its scale). irexec: the reference.
- NaN x: the reference gives NaN; the CPU plugin gives output_low (or NaN when input_low >
  input_high). irexec: NaN. +-inf: output_high / output_low in all three.
- levels: OpenVINO accepts 0 and 1 (the reference then computes 0/0 = NaN inside the interval,
  levels - 1 wraps around for 0); the opset spec says levels >= 2, and irexec refuses less.
- Ranges that would broadcast the data to a larger shape ((1,3) ranges on (2,1) data): OpenVINO
  accepts them ("kept for backward compatibility", its shape rule says) and computes with their
  first elements; its CPU plugin crashed on one. irexec requires the ranges to broadcast into x.
- Element types: OpenVINO accepts any; irexec computes f32, f16, bf16 and f64 data (integer data
  is refused: the reference divides integers with truncation, the CPU plugin in float). Ranges of
  any numeric type are read as their float64 values.

FakeConvert (f32, f16, bf16 data; scale and shift of the data's type and of one shape)
- f8e4m3 subnormals: the reference flushes |v| < 2^-9 to +0 and truncates subnormals after
  rounding at normal precision; the CPU plugin rounds to nearest even on the f8 grid (2^-10 <
  |v| < 2^-9 gives 2^-9). -0.0 gives +0.0 in the reference ((y + 0) / s), -0.0 in the CPU plugin.
- NaN: the reference gives NaN (e5m2) and +-448 by the NaN's sign bit (e4m3); the CPU plugin
  gave -57344 and -448.
- The CPU plugin's affine steps differ from the reference's in the last float32 bit.
irexec follows the reference bit for bit for f32 and f16 (tests/test_ops_openvino.py checks every
f16 pattern); for bf16 it rounds each step to nearest even (see kernels/quantize.py).
"""

from __future__ import annotations

import numpy as np

from ..dtypes import COMPUTE_TYPES, FLOAT_TYPES, numpy_dtype
from ..errors import ExecutionError, FormatError, ShapeInferenceError
from ..kernels import quantize as family
from ..shapes import Shape, TensorSpec, broadcast_into, format_shape
from .attrs import Attr
from .base import Op, Sig
from .common import finish
from .elementwise import AUTO_BROADCAST
from .registry import register

RANGE_TYPES = COMPUTE_TYPES - {"boolean"}


class _IntoData(Op):
    """Operands after the first broadcast INTO it (their rank at most its, each dim 1 or its),
    aligned as `auto_broadcast` says: numpy (to the last dims), pdpd (to the first dims), none
    (equal shapes). Checked at load, and at run time for dims known only then."""

    MODE = "numpy"

    def mode(self) -> str:
        return self.MODE

    def _into(self, target: Shape, operand: Shape, what: str) -> Shape:
        """target refined by operand, or ShapeInferenceError naming the operand."""
        try:
            if self.mode() == "none":
                if not _compatible(target, operand):
                    raise ShapeInferenceError("auto_broadcast=none needs equal shapes")
                return target
            if self.mode() == "pdpd" and target is not None and operand is not None:
                operand = tuple(operand) + (1,) * max(0, len(target) - len(operand))
            return broadcast_into(target, operand)
        except ShapeInferenceError as e:
            raise ShapeInferenceError(
                f"{what} {format_shape(operand)} does not broadcast into the data {format_shape(target)}"
                f" (auto_broadcast={self.mode()}): {e.message}",
                self.where,
            ) from None

    def aligned(self, x: np.ndarray, operand: np.ndarray, what: str) -> np.ndarray:
        """operand reshaped to x's rank (checked against x's run-time shape once per shapes)."""
        self.remembered("into", (x.shape, operand.shape, what), lambda: self._check_run(x, operand, what))
        if operand.ndim == x.ndim:
            return operand
        pad = (1,) * (x.ndim - operand.ndim)
        shape = operand.shape + pad if self.mode() == "pdpd" else pad + operand.shape
        return operand.reshape(shape)

    def _check_run(self, x: np.ndarray, operand: np.ndarray, what: str) -> bool:
        try:
            self._into(x.shape, operand.shape, what)
        except ShapeInferenceError as e:
            raise ExecutionError(e.message, self.where) from None
        return True


@register
class FakeQuantize(_IntoData):
    """FakeQuantize-1: x quantized to `levels` values over [input_low, input_high], mapped onto
    [output_low, output_high]; output_low at or below the interval, output_high above it. The
    formula in float64, rounded once (kernels/quantize.py); the edges where OpenVINO's CPU plugin
    and reference differ follow the reference (this module's doc)."""

    KERNELS = ("quantize",)

    TYPE = "FakeQuantize"
    VERSIONS = (1,)
    INPUTS = (5, 5)
    SAME_SHAPE = True
    levels = Attr("int")
    auto_broadcast = Attr("str", "numpy", choices=AUTO_BROADCAST)
    NAMES = ("X", "input_low", "input_high", "output_low", "output_high")

    def mode(self) -> str:
        return self.auto_broadcast

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        x = inputs[0]
        self.require_dtype(x, FLOAT_TYPES, "input 0 (X)")
        for i in range(1, 5):
            self.require_dtype(inputs[i], RANGE_TYPES, f"input {i} ({self.NAMES[i]})")
        if self.levels < 2:
            raise FormatError(f"levels={self.levels}: FakeQuantize needs at least 2 levels", self.where)
        for i in range(1, 5):
            self._into(x.shape, inputs[i].shape, self.NAMES[i])
        return [TensorSpec(x.dtype, x.shape)]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        x, et = inputs[0], sig.outs[0]
        # worked out once for constant ranges (remembered by their identity), each call otherwise
        run = self.derived("prepared", inputs[1:], (x.shape, x.dtype.char, et), lambda: self._prepare(inputs, et))
        return [finish(run(x), et)]

    def _prepare(self, inputs: list[np.ndarray], et: str) -> family.Prepared:
        x = inputs[0]
        ranges = [self.aligned(x, r, self.NAMES[i]) for i, r in enumerate(inputs[1:], 1)]
        dtype = np.dtype(np.float64) if et == "bf16" else numpy_dtype(et)
        return family.Prepared(x.shape, x.dtype, ranges, self.levels, dtype)


@register
class FakeConvert(_IntoData):
    """FakeConvert-13: x scaled, shifted, rounded to an f8 type (f8e4m3 or f8e5m2) and back, as
    OpenVINO's reference computes it (kernels/quantize.py); scale and shift (default 0) share one
    shape, which broadcasts into x's."""

    TYPE = "FakeConvert"
    VERSIONS = (13,)
    INPUTS = (2, 3)
    destination_type = Attr("str", choices=family.F8_TYPES)
    NAMES = ("data", "scale", "shift")

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        x = inputs[0]
        self.require_dtype(x, FLOAT_TYPES - {"f64"}, "input 0 (data)")
        self.require_same_dtype(inputs)
        scale = inputs[1].shape
        if len(inputs) == 3:
            shift = inputs[2].shape
            if not _compatible(scale, shift):
                raise ShapeInferenceError(
                    f"scale {format_shape(scale)} and shift {format_shape(shift)} must have one shape", self.where
                )
        out = x.shape
        for i in range(1, len(inputs)):
            out = self._into(out, inputs[i].shape, self.NAMES[i])
        return [TensorSpec(x.dtype, out)]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        x = inputs[0]
        scale = self.aligned(x, inputs[1], "scale")
        shift = self.aligned(x, inputs[2], "shift") if len(inputs) == 3 else None
        if shift is not None and shift.shape != scale.shape:
            raise ExecutionError(
                f"scale {format_shape(scale.shape)} and shift {format_shape(shift.shape)} must have one shape",
                self.where,
            )
        et = sig.outs[0]
        return [finish(family.fake_convert(x, scale, shift, self.destination_type, et), et)]


def _compatible(a: Shape, b: Shape) -> bool:
    """OpenVINO's PartialShape::compatible: equal ranks, dims equal where both are known."""
    if a is None or b is None:
        return True
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))
