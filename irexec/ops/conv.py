"""Convolutions with OpenVINO semantics: Convolution-1, GroupConvolution-1,
ConvolutionBackpropData-1, GroupConvolutionBackpropData-1, for 1-D, 2-D and 3-D spatial data.

The ops hold the semantics (filter layouts, channel checks, output shapes through the shared
window geometry of `irexec/geometry.py`) and ask their family, `kernels/conv.py`, to compute:
it picks the algorithm (a matrix product for pointwise windows, im2col on BLAS, tap sums for
depthwise filters, a tap scatter for the transposed form), numpy or numba, and the threads.

Transposed forms with an output_shape input larger than the full result put the extra zeros at
the end of each dim, whatever auto_pad says, as OpenVINO's CPU plugin does (measured). The CPU
plugin cannot compile GroupConvolutionBackpropData whose output_shape is only known at run
time ("Destination memory is undefined"); irexec runs it.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import FLOAT_TYPES
from ..errors import ShapeInferenceError
from ..geometry import AUTO_PADS, Window, transposed_window, window
from ..kernels import conv as family
from ..shapes import TensorSpec, format_shape
from .attrs import Attr
from .base import Op, Sig
from .common import finish
from .registry import register


def _steady_key(x: np.ndarray, w: np.ndarray) -> tuple:
    """A convolution's steady-call signature: x's shape and type, the constant filters' identity."""
    return (x.shape, x.dtype, id(w))


class _ConvBase(Op):
    KERNELS = ("conv",)
    INPUTS = (2, 2)
    strides = Attr("ints")
    dilations = Attr("ints")
    pads_begin = Attr("ints")
    pads_end = Attr("ints")
    auto_pad = Attr("str", "explicit", choices=AUTO_PADS)

    def _filter_geometry(self, w_shape):
        """(out channels, in channels per group, kernel dims)"""
        raise NotImplementedError

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        x, w = inputs
        self.require_dtype(x, FLOAT_TYPES | {"i8", "u8", "i32", "i64"}, "data")
        et = self.require_same_dtype(inputs)
        if x.shape is None or w.shape is None:
            return [TensorSpec(et, None)]
        if len(x.shape) < 2:  # rank 2 is told below: no spatial dims
            raise ShapeInferenceError(
                f"data {format_shape(x.shape)} has rank {len(x.shape)}; {self.TYPE} takes [N,C,spatial...] "
                "(rank 3 or more)",
                self.where,
            )
        c_out, c_in, kernel = self._filter_geometry(w.shape)
        if x.shape[1] is not None and c_in is not None and x.shape[1] != c_in:
            raise ShapeInferenceError(
                f"data has {x.shape[1]} channels, the filters {format_shape(w.shape)} expect {c_in}", self.where
            )
        if any(k is None for k in kernel):
            return [TensorSpec(et, (x.shape[0], c_out) + (None,) * len(kernel))]
        spatial = x.shape[2:]
        if len(spatial) != len(kernel):
            raise ShapeInferenceError(
                f"data {format_shape(x.shape)} has {len(spatial)} spatial dims, the filters "
                f"{format_shape(w.shape)} have {len(kernel)} kernel dims: they must match",
                self.where,
            )
        return [TensorSpec(et, (x.shape[0], c_out, *self._window(spatial, kernel).out))]

    def _window(self, spatial, kernel) -> Window:
        return window(
            self.where, spatial, kernel, self.strides, self.dilations, self.auto_pad, self.pads_begin, self.pads_end
        )

    def convolve(self, x: np.ndarray, w: np.ndarray, kernel, sig: Sig, run, steady_call) -> list[np.ndarray]:
        """run(x, w, window), the family's path, or the steady call (`Op.steady`) that
        steady_call(x, w, window) makes for x's shape and type and constant float32 filters
        (read-only, known by identity as `Op.derived` knows them: the call holds them)."""
        key = _steady_key(x, w)
        call = self.steady(key)
        y = None if call is None else call(x)
        if y is not None:
            return [y]
        win = self.window_of(x, kernel)
        y = finish(run(x, w, win), sig.outs[0])
        if sig.outs[0] == "f32" and not w.flags.writeable:
            self.settle(key, lambda: steady_call(x, w, win))
        return [y]

    def window_of(self, x: np.ndarray, kernel) -> Window:
        """The window over x's spatial dims, remembered per input shape and kernel."""
        kernel = tuple(kernel)
        return self.remembered("window", (x.shape, kernel), lambda: self._window(x.shape[2:], kernel))


@register
class Convolution(_ConvBase):
    """Convolution-1: filters (C_out, C_in, *kernel)."""

    TYPE = "Convolution"
    VERSIONS = (1,)

    def _filter_geometry(self, w_shape):
        return w_shape[0], w_shape[1], tuple(w_shape[2:])

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        x, w = inputs
        return self.convolve(x, w, w.shape[2:], sig, family.convolution, family.convolution_call)

    def then_settled(self, inputs: list[np.ndarray]) -> bool:
        """Whether these operands have a steady call (`convolve`): the family settled on a path
        that leaves the activation to a pass of its own (`compute_then` answers None for them)."""
        return self.steady(_steady_key(*inputs)) is not None

    def compute_then(self, inputs: list[np.ndarray], sig: Sig, bounds: tuple | None) -> list[np.ndarray] | None:
        """compute, then ReLU (bounds None) or np.clip to the float32 bounds, in one pass of the
        kernel (`ops.activation.ThenRelu`); None where the kernel does not take the case."""
        x, w = inputs
        if sig.outs[0] != "f32":
            return None
        y = family.pointwise_then(x, w, self.window_of(x, w.shape[2:]), bounds)
        return None if y is None else [y]


@register
class GroupConvolution(_ConvBase):
    """GroupConvolution-1: filters (G, C_out/G, C_in/G, *kernel)."""

    TYPE = "GroupConvolution"
    VERSIONS = (1,)

    def _filter_geometry(self, w_shape):
        g = w_shape[0]
        c_out = None if g is None or w_shape[1] is None else g * w_shape[1]
        c_in = None if g is None or w_shape[2] is None else g * w_shape[2]
        return c_out, c_in, tuple(w_shape[3:])

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        x, w = inputs
        return self.convolve(x, w, w.shape[3:], sig, family.group_convolution, family.group_convolution_call)


@register
class ConvolutionBackpropData(Op):
    """ConvolutionBackpropData-1 (transposed convolution): filters (C_in, C_out, *kernel);
    output (in - 1) * stride + dilation * (k - 1) + 1 - pads + output_padding per dim, or the
    optional output_shape input (then auto_pad decides where the difference goes)."""

    TYPE = "ConvolutionBackpropData"
    VERSIONS = (1,)
    INPUTS = (2, 3)
    strides = Attr("ints")
    dilations = Attr("ints")
    pads_begin = Attr("ints")
    pads_end = Attr("ints")
    auto_pad = Attr("str", "explicit", choices=AUTO_PADS)
    output_padding = Attr("ints", ())

    def _geometry(self, spatial, kernel, out_shape):
        return transposed_window(
            spatial,
            kernel,
            self.strides,
            self.dilations,
            self.auto_pad,
            self.pads_begin,
            self.pads_end,
            self.output_padding,
            out_shape,
        )

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        x, w = inputs[:2]
        self.require_dtype(x, FLOAT_TYPES, "data")
        et = self.require_same_dtype(inputs[:2])
        if x.shape is None or w.shape is None:
            return [TensorSpec(et, None)]
        kernel = w.shape[2:]
        out_shape = None
        if len(inputs) > 2:
            if inputs[2].value is None:
                return [TensorSpec(et, (x.shape[0], w.shape[1]) + (None,) * len(kernel))]
            out_shape = [int(v) for v in np.asarray(inputs[2].value).reshape(-1)]
        if any(k is None for k in kernel):
            return [TensorSpec(et, (x.shape[0], w.shape[1]) + (None,) * len(kernel))]
        out, _ = self._geometry(x.shape[2:], kernel, out_shape)
        if any(o is not None and o < 0 for o in out):
            raise ShapeInferenceError(f"output spatial dims {out} are negative", self.where)
        return [TensorSpec(et, (x.shape[0], w.shape[1], *out))]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        x, w = inputs[:2]
        out_shape = [int(v) for v in inputs[2].reshape(-1)] if len(inputs) > 2 else None
        out, pb = self._geometry(x.shape[2:], w.shape[2:], out_shape)
        y = family.transposed(x, w, self.strides, self.dilations, pb, out)
        return [finish(y, sig.outs[0])]


@register
class GroupConvolutionBackpropData(ConvolutionBackpropData):
    """GroupConvolutionBackpropData-1: ConvolutionBackpropData per group, filters
    (G, C_in/G, C_out/G, *kernel); output channels G * C_out/G."""

    TYPE = "GroupConvolutionBackpropData"
    VERSIONS = (1,)

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        x, w = inputs[:2]
        self.require_dtype(x, FLOAT_TYPES, "data")
        et = self.require_same_dtype(inputs[:2])
        if w.shape is not None and len(w.shape) < 4:
            raise ShapeInferenceError(
                f"filters {format_shape(w.shape)} must be (groups, C_in/groups, C_out/groups, *kernel)", self.where
            )
        if x.shape is None or w.shape is None:
            return [TensorSpec(et, None)]
        g, cin_g, cout_g = w.shape[:3]
        if len(x.shape) != len(w.shape) - 1:
            raise ShapeInferenceError(
                f"data {format_shape(x.shape)} and filters {format_shape(w.shape)}: the filters need one dim "
                f"more than the data",
                self.where,
            )
        if None not in (x.shape[1], g, cin_g) and x.shape[1] != g * cin_g:
            raise ShapeInferenceError(
                f"data has {x.shape[1]} channels, the filters {format_shape(w.shape)} expect {g} x {cin_g}", self.where
            )
        c_out = None if g is None or cout_g is None else g * cout_g
        (flat,) = super().infer([x, TensorSpec(et, (x.shape[1], c_out, *w.shape[3:])), *inputs[2:]])
        return [TensorSpec(et, flat.shape)]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        x, w = inputs[:2]
        out_shape = [int(v) for v in inputs[2].reshape(-1)] if len(inputs) > 2 else None
        out, pb = self._geometry(x.shape[2:], w.shape[3:], out_shape)
        self.check_output((x.shape[0], w.shape[0] * w.shape[2], *out), sig.outs[0], sig)
        y = family.group_transposed(x, w, self.strides, self.dilations, pb, out)
        return [finish(y, sig.outs[0])]
