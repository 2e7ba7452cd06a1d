"""Convolutions with OpenVINO semantics: Convolution-1, GroupConvolution-1,
ConvolutionBackpropData-1, for 1-D, 2-D and 3-D spatial data.

Dense convolutions are im2col (a strided window view copied into one matrix) times the filters
on BLAS, in float32 (float64 for f64); depthwise ones (one input and one output channel per
group) sum the kernel taps of shifted strided views, which needs no im2col copy (2-D: the numba
kernel of `kernels/conv_loops.py` once loaded, the same sums in the same order, without a
temporary per tap). Transposed convolution scatters each tap's product into a strided slice of
the output.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..dtypes import FLOAT_TYPES
from ..errors import ShapeInferenceError
from ..shapes import AUTO_PADS, TensorSpec, auto_pad, format_shape, window_out_dim
from .attrs import Attr
from .base import Op
from .common import finish
from .registry import register


def _work(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32) if x.dtype == np.float16 else x


def _filters(w: np.ndarray, dtype) -> np.ndarray:
    """The filters in the data's compute type, without a copy when they already are."""
    return _work(w).astype(dtype, copy=False)


def _pads(op, spatial, kernel):
    k = len(kernel)
    strides, dil = op.strides, op.dilations
    if len(strides) != k or len(dil) != k:
        raise ShapeInferenceError(f"strides {strides} / dilations {dil} need {k} values", op.where)
    pb = op.pads_begin if op.pads_begin else (0,) * k
    pe = op.pads_end if op.pads_end else (0,) * k
    out = []
    for i in range(k):
        out.append(auto_pad(spatial[i], kernel[i], strides[i], dil[i], op.auto_pad, pb[i], pe[i]))
    return out


def windows(x: np.ndarray, kernel, strides, dilations, out_sp) -> np.ndarray:
    """A read-only view (N, C, *out_sp, *kernel) of the windows of an already padded x."""
    n, c = x.shape[:2]
    st = x.strides
    shape = (n, c, *out_sp, *kernel)
    strides = (
        st[0],
        st[1],
        *(st[2 + i] * strides[i] for i in range(len(kernel))),
        *(st[2 + i] * dilations[i] for i in range(len(kernel))),
    )
    return np.lib.stride_tricks.as_strided(x, shape, strides, writeable=False)


def pad_constant(x: np.ndarray, widths, value=0.0) -> np.ndarray:
    """np.pad(x, widths, constant_values=value) without its Python overhead (50 us a call,
    as much as a small convolution's BLAS call): one filled array, x copied into its middle."""
    out = np.full(tuple(d + b + e for d, (b, e) in zip(x.shape, widths)), value, x.dtype)
    out[tuple(slice(b, b + d) for d, (b, _) in zip(x.shape, widths))] = x
    return out


def _pad_input(x, pads, value=0.0):
    widths = [(0, 0), (0, 0)] + [(max(0, b), max(0, e)) for b, e in pads]
    if any(w != (0, 0) for w in widths):
        x = pad_constant(x, widths, value)
    crop = (slice(None), slice(None)) + tuple(
        slice(max(0, -b), x.shape[2 + i] - max(0, -e)) for i, (b, e) in enumerate(pads)
    )
    return x[crop]


class _ConvBase(Op):
    INPUTS = (2, 2)
    strides = Attr("ints")
    dilations = Attr("ints")
    pads_begin = Attr("ints")
    pads_end = Attr("ints")
    auto_pad = Attr("str", "explicit", choices=AUTO_PADS)

    def _filter_geometry(self, w_shape):
        """(out channels, in channels per group, kernel dims)"""
        raise NotImplementedError

    def infer(self, inputs):
        x, w = inputs
        self.require_dtype(x, FLOAT_TYPES | {"i8", "u8", "i32", "i64"}, "data")
        et = self.require_same_dtype(inputs)
        if x.shape is None or w.shape is None:
            return [TensorSpec(et, None)]
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
                f"data {format_shape(x.shape)} and filters {format_shape(w.shape)} ranks", self.where
            )
        pads = _pads(self, spatial, kernel)
        out = [
            window_out_dim(d, k, s, dl, b, e)
            for d, k, s, dl, (b, e) in zip(spatial, kernel, self.strides, self.dilations, pads)
        ]
        return [TensorSpec(et, (x.shape[0], c_out, *out))]

    def _prepare(self, x, kernel):
        pads = _pads(self, x.shape[2:], kernel)
        xp = _pad_input(_work(x), pads)
        out_sp = [
            window_out_dim(d, k, s, dl, b, e)
            for d, k, s, dl, (b, e) in zip(x.shape[2:], kernel, self.strides, self.dilations, pads)
        ]
        return xp, out_sp


def _im2col_geometry(op, x, kernel):
    """(pads, output dims) when the im2col kernel serves this convolution (pads >= 0, not 1x1
    pointwise), else None."""
    pads = _pads(op, x.shape[2:], kernel)
    if any(b < 0 or e < 0 for b, e in pads):
        return None
    out_sp = [
        window_out_dim(d, k, s, dl, b, e)
        for d, k, s, dl, (b, e) in zip(x.shape[2:], kernel, op.strides, op.dilations, pads)
    ]
    if any(o <= 0 for o in out_sp) or (
        all(k == 1 for k in kernel) and all(b == 0 and e == 0 for b, e in pads) and all(s == 1 for s in op.strides)
    ):
        return None  # pointwise: the input is its own columns
    return pads, out_sp


def _kernel_columns(op, x, kernel):
    """(columns (N, C*K, M), output dims) of a 2-D convolution with pads >= 0 by the numba
    im2col straight from the unpadded input (one call instead of a padded copy and a slice copy
    per tap), or None when the kernels are not loaded or the case is not that one."""
    if len(kernel) != 2 or x.dtype not in (np.float32, np.float64) or x.ndim != 4 or not x.size:
        return None
    geometry = op.remembered("im2col", (x.shape, tuple(kernel)), lambda: _im2col_geometry(op, x, kernel))
    if geometry is None:
        return None
    pads, out_sp = geometry
    from ..kernels import jit

    n, c = x.shape[:2]
    kk = kernel[0] * kernel[1]
    if not jit.use(x.nbytes * kk, 30e-6):
        return None
    from ..kernels import conv_loops as k

    cols = np.empty((n * c, kernel[0], kernel[1], *out_sp), x.dtype)
    jit.parallel_for(
        k.im2col2d,
        n * c,
        jit.threads_for(cols.nbytes),
        np.ascontiguousarray(x).reshape(n * c, *x.shape[2:]),
        cols,
        op.strides[0],
        op.strides[1],
        op.dilations[0],
        op.dilations[1],
        pads[0][0],
        pads[1][0],
    )
    return cols.reshape(n, c * kk, out_sp[0] * out_sp[1]), out_sp


def _gemm(cols_all, w, out_sp, groups=1):
    """W (Cout, C/groups*K) @ columns (N, C*K, M) per group: (N, Cout, *out)."""
    n = cols_all.shape[0]
    c_out = w.shape[0]
    og = c_out // groups
    wm = w.reshape(c_out, -1)
    ck = wm.shape[1]
    if groups == 1:
        y = np.matmul(wm, cols_all)
    else:
        y = np.empty((n, c_out, cols_all.shape[2]), np.result_type(wm, cols_all))
        for g in range(groups):
            np.matmul(wm[g * og : (g + 1) * og], cols_all[:, g * ck : (g + 1) * ck], out=y[:, g * og : (g + 1) * og])
    return y.reshape(n, c_out, *out_sp)


def _dense(xp, w, out_sp, strides, dilations, groups=1):
    """im2col + BLAS: xp (N, C, *sp) padded, w (Cout, C/groups, *k). The columns are laid out
    (N, C*K, M), so W (Cout, C*K) @ columns is already (N, Cout, M): the output needs no
    transposed copy; a 1x1 kernel with unit strides uses the input itself as the columns."""
    n, c = xp.shape[:2]
    kernel = w.shape[2:]
    m = math.prod(out_sp)
    kk = math.prod(kernel)
    pointwise = kk == 1 and all(s == 1 for s in strides) and tuple(xp.shape[2:]) == tuple(out_sp)
    if pointwise:
        cols_all = np.ascontiguousarray(xp).reshape(n, c, m)
    else:
        # (N, C, *k, *out) -> (N, C*K, M): one strided slice copy per kernel tap (a 6-D
        # transposed copy of the window view is several times slower)
        cols = np.empty((n, c, *kernel, *out_sp), xp.dtype)
        for tap in itertools.product(*(range(t) for t in kernel)):
            src = tuple(slice(t * d, t * d + (o - 1) * s + 1, s) for t, d, o, s in zip(tap, dilations, out_sp, strides))
            cols[(slice(None), slice(None)) + tap] = xp[(slice(None), slice(None)) + src]
        cols_all = cols.reshape(n, c * kk, m)
    return _gemm(cols_all, w, out_sp, groups)


def _depthwise(xp, w, out_sp, strides, dilations):
    """w (C, *k): out[n, c] = sum over taps of w[c, tap] * shifted strided view of xp[n, c]."""
    n, c = xp.shape[:2]
    kernel = w.shape[1:]
    if len(kernel) == 2 and xp.dtype in (np.float32, np.float64) and xp.size and all(o > 0 for o in out_sp):
        from ..kernels import jit

        # the kernel: the same products and sums in the same order, without a temporary per tap
        if jit.use(xp.nbytes, 10e-6 * math.prod(kernel)):
            from ..kernels import conv_loops as k

            planes = np.ascontiguousarray(xp).reshape(n * c, *xp.shape[2:])
            out = np.empty((n * c, *out_sp), xp.dtype)
            jit.parallel_for(
                k.depthwise2d,
                n * c,
                jit.threads_for(out.nbytes * math.prod(kernel)),
                planes,
                np.ascontiguousarray(w),
                out,
                c,
                strides[0],
                strides[1],
                dilations[0],
                dilations[1],
            )
            return out.reshape(n, c, *out_sp)
    acc = np.zeros((n, c, *out_sp), np.float64 if xp.dtype == np.float64 else np.float32)
    for tap in itertools.product(*(range(k) for k in kernel)):
        sl = (slice(None), slice(None)) + tuple(
            slice(t * d, t * d + (o - 1) * s + 1, s) for t, d, o, s in zip(tap, dilations, out_sp, strides)
        )
        acc += xp[sl] * w[(slice(None),) + tap].reshape((1, c) + (1,) * len(kernel))
    return acc


@register
class Convolution(_ConvBase):
    """Convolution-1: filters (C_out, C_in, *kernel)."""

    TYPE = "Convolution"
    VERSIONS = (1,)

    def _filter_geometry(self, w_shape):
        return w_shape[0], w_shape[1], tuple(w_shape[2:])

    def _pointwise(self, w) -> bool:
        """A 1x1 kernel with unit strides and no padding: a matrix product over the channels."""
        return (
            all(k == 1 for k in w.shape[2:])
            and all(s == 1 for s in self.strides)
            and (
                self.auto_pad in ("same_upper", "same_lower")
                or (not any(self.pads_begin or ()) and not any(self.pads_end or ()))
            )
        )

    def compute(self, inputs, sig):
        x, w = inputs
        if x.ndim >= 3 and x.dtype != np.float16 and self._pointwise(w):
            wm = w.reshape(w.shape[0], w.shape[1]).astype(x.dtype, copy=False)
            y = np.matmul(wm, x.reshape(x.shape[0], x.shape[1], -1))
            return [finish(y.reshape((x.shape[0], w.shape[0]) + x.shape[2:]), sig.outs[0])]
        fast = _kernel_columns(self, x, w.shape[2:])
        if fast is not None:
            return [finish(_gemm(fast[0], _filters(w, x.dtype), fast[1]), sig.outs[0])]
        xp, out_sp = self._prepare(x, w.shape[2:])
        y = _dense(xp, _filters(w, xp.dtype), out_sp, self.strides, self.dilations)
        return [finish(y, sig.outs[0])]


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

    def compute(self, inputs, sig):
        x, w = inputs
        g = w.shape[0]
        w = _filters(w, _work(x).dtype)
        if w.shape[1] == 1 and w.shape[2] == 1:
            xp, out_sp = self._prepare(x, w.shape[3:])
            y = _depthwise(xp, w.reshape((g,) + w.shape[3:]), out_sp, self.strides, self.dilations)
        else:
            w = w.reshape((g * w.shape[1],) + w.shape[2:])
            fast = _kernel_columns(self, x, w.shape[2:])
            if fast is not None:
                y = _gemm(fast[0], w, fast[1], g)
            else:
                xp, out_sp = self._prepare(x, w.shape[2:])
                y = _dense(xp, w, out_sp, self.strides, self.dilations, g)
        return [finish(y, sig.outs[0])]


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
        k = len(kernel)
        pb = list(self.pads_begin or (0,) * k)
        pe = list(self.pads_end or (0,) * k)
        op = list(self.output_padding or (0,) * k)
        full = [
            None if d is None else (d - 1) * s + dl * (kk - 1) + 1
            for d, s, dl, kk in zip(spatial, self.strides, self.dilations, kernel)
        ]
        if out_shape is not None:
            out = list(out_shape)
            for i in range(k):
                if full[i] is None:
                    continue
                total = full[i] + op[i] - out[i]
                if self.auto_pad in ("same_upper", "same_lower"):
                    # what a transposed convolution crops: the odd one at the beginning for
                    # same_upper (measured against OpenVINO's CPU plugin and reference)
                    small, big = total // 2, total - total // 2
                    pb[i], pe[i] = (big, small) if self.auto_pad == "same_upper" else (small, big)
                else:
                    pe[i] = total - pb[i]
            return out, pb, op
        if self.auto_pad == "valid":
            pb, pe = [0] * k, [0] * k
        elif self.auto_pad in ("same_upper", "same_lower"):
            out = [None if d is None else d * s for d, s in zip(spatial, self.strides)]
            return self._geometry(spatial, kernel, out) if None not in out else (out, pb, op)
        out = [None if f is None else f - b - e + o for f, b, e, o in zip(full, pb, pe, op)]
        return out, pb, op

    def infer(self, inputs):
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
        out, _, _ = self._geometry(x.shape[2:], kernel, out_shape)
        if any(o is not None and o < 0 for o in out):
            raise ShapeInferenceError(f"output spatial dims {out} are negative", self.where)
        return [TensorSpec(et, (x.shape[0], w.shape[1], *out))]

    def compute(self, inputs, sig):
        x, w = _work(inputs[0]), _work(inputs[1])
        w = w.astype(x.dtype)
        kernel = w.shape[2:]
        out_shape = [int(v) for v in inputs[2].reshape(-1)] if len(inputs) > 2 else None
        out, pb, _ = self._geometry(x.shape[2:], kernel, out_shape)
        n, cin = x.shape[:2]
        cout = w.shape[1]
        full = [
            (d - 1) * s + dl * (kk - 1) + 1 for d, s, dl, kk in zip(x.shape[2:], self.strides, self.dilations, kernel)
        ]
        size = [max(f, b + o) + 1 for f, b, o in zip(full, pb, out)]
        acc = np.zeros((n, cout, *size), np.float64 if x.dtype == np.float64 else np.float32)
        xt = np.moveaxis(x, 1, -1)  # (N, *sp, Cin)
        for tap in itertools.product(*(range(k) for k in kernel)):
            contrib = xt @ w[(slice(None), slice(None)) + tap]  # (N, *sp, Cout)
            sl = (slice(None), slice(None)) + tuple(
                slice(t * dl, t * dl + (d - 1) * s + 1, s)
                for t, dl, d, s in zip(tap, self.dilations, x.shape[2:], self.strides)
            )
            acc[sl] += np.moveaxis(contrib, -1, 1)
        crop = (slice(None), slice(None)) + tuple(slice(b, b + o) for b, o in zip(pb, out))
        return [finish(np.ascontiguousarray(acc[crop]), sig.outs[0])]
