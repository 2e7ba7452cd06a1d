"""Windowed reductions with OpenVINO semantics: MaxPool-1/8/14 and AvgPool-1/14, 1-D to 3-D.

Output dims: floor or ceil of (in + pads - dilation*(k-1) - 1) / stride + 1; `ceil_torch`
(v14) drops a last window that would start in the end padding, as PyTorch does. Windows read
padded positions as absent: Max ignores them; Avg divides by the window's positions inside the
input (exclude-pad), else by the kernel size (ceil_torch: by the positions inside input + pads,
as PyTorch does), as OpenVINO's CPU plugin computes it.
Sums accumulate in float64 and round once; Max propagates NaN (numpy's rule, as irexec's Reduce
ops do; OpenVINO's CPU plugin drops NaN). A global pool (the kernel covers the spatial dims,
no pads) is a reduction and runs as one (`kernels.reduce`).
MaxPool-8/14 also return the index of each maximum, flattened over the dims from `axis` on.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import FLOAT_TYPES, NUMERIC_TYPES, numpy_dtype
from ..errors import FormatError, ShapeInferenceError
from ..kernels.reduce import reduce_array
from ..shapes import AUTO_PADS, TensorSpec, auto_pad
from .attrs import Attr
from .base import Op
from .common import finish
from .conv import pad_constant, windows
from .registry import register


def _out_dim(size, k, s, d, b, e, rounding):
    if size is None or b is None:
        return None
    span = size + b + e - d * (k - 1) - 1
    if span < 0:
        raise ShapeInferenceError(f"kernel {k} (dilation {d}) does not fit dim {size} padded by {b}+{e}")
    if rounding == "floor":
        return span // s + 1
    out = -(-span // s) + 1
    if rounding == "ceil_torch" and (out - 1) * s >= size + b:
        out -= 1
    return out


def _kernel_ok(x, out) -> bool:
    from ..kernels import jit

    # the numpy path's windows, index arithmetic and temporaries cost ~0.4 ms even on small
    # planes: small inputs take the kernel once it is loaded (jit.use's per-call saving)
    return (
        x.ndim == 4
        and x.dtype in (np.float32, np.float64)
        and x.size > 0
        and all(o > 0 for o in out)
        and jit.use(x.nbytes, 100e-6)
    )


def _planes(x, out):
    from ..kernels import jit

    planes = np.ascontiguousarray(x).reshape(-1, x.shape[2], x.shape[3])
    res = np.empty((planes.shape[0], out[0], out[1]), x.dtype)
    return planes, res, jit.threads_for(x.nbytes)


class _PoolBase(Op):
    strides = Attr("ints")
    pads_begin = Attr("ints")
    pads_end = Attr("ints")
    kernel = Attr("ints")
    rounding_type = Attr("str", "floor", choices=("floor", "ceil", "ceil_torch"))
    auto_pad = Attr("str", "explicit", choices=AUTO_PADS)
    DILATED = False

    def _dil(self):
        return tuple(getattr(self, "dilations", None) or (1,) * len(self.kernel))

    def _geometry(self, spatial):
        k = len(self.kernel)
        if len(spatial) != k or len(self.strides) != k:
            raise ShapeInferenceError(
                f"kernel {self.kernel} and strides {self.strides} need {len(spatial)} values", self.where
            )
        dil = self._dil()
        pb = self.pads_begin or (0,) * k
        pe = self.pads_end or (0,) * k
        pads = [
            auto_pad(d, kk, s, dl, self.auto_pad, b, e)
            for d, kk, s, dl, b, e in zip(spatial, self.kernel, self.strides, dil, pb, pe)
        ]
        try:
            out = [
                _out_dim(d, kk, s, dl, b, e, self.rounding_type)
                for d, kk, s, dl, (b, e) in zip(spatial, self.kernel, self.strides, dil, pads)
            ]
        except ShapeInferenceError as err:
            raise ShapeInferenceError(err.message, self.where) from None
        return pads, out

    def _out_shape(self, x):
        if x.shape is None:
            return None
        _, out = self._geometry(x.shape[2:])
        return (x.shape[0], x.shape[1], *out)

    def _global(self, x, pads):
        return (
            tuple(self.kernel) == x.shape[2:]
            and all(b == 0 and e == 0 for b, e in pads)
            and all(d == 1 for d in self._dil())
        )

    def _padded(self, x, pads, out, fill):
        """x padded by the pads and by whatever the last window reaches past them (ceil)."""
        extra = []
        for d, kk, s, dl, (b, e), o in zip(x.shape[2:], self.kernel, self.strides, self._dil(), pads, out):
            need = (o - 1) * s + dl * (kk - 1) + 1
            extra.append((b, max(e, need - d - b)))
        widths = [(0, 0), (0, 0)] + extra
        return pad_constant(x, widths, fill), extra


@register
class MaxPool1(_PoolBase):
    TYPE = "MaxPool"
    VERSIONS = (1,)

    def infer(self, inputs):
        self.require_dtype(inputs[0], NUMERIC_TYPES)
        return [TensorSpec(inputs[0].dtype, self._out_shape(inputs[0]))]

    def _index_base(self, x):
        """(planes_per, plane_step): the kernel adds (plane % planes_per) * plane_step to each
        index, for indices flattened from `axis` on (MaxPool-8/14; MaxPool-1 has none)."""
        return 1, 0

    def _values(self, x, et, indices: bool = True):
        pads, out = self._geometry(x.shape[2:])
        work = x.astype(np.float32) if x.dtype == np.float16 else x
        if self._global(x, pads):
            return reduce_array(x, tuple(range(2, x.ndim)), "max", True, et), None, pads, out
        if _kernel_ok(work, out):
            from ..kernels import jit
            from ..kernels import pool_loops as k

            planes, res, threads = _planes(work, out)
            dil = self._dil()
            if not indices:
                jit.parallel_for(
                    k.max_pool2d_values,
                    planes.shape[0],
                    threads,
                    planes,
                    res,
                    self.kernel[0],
                    self.kernel[1],
                    self.strides[0],
                    self.strides[1],
                    dil[0],
                    dil[1],
                    pads[0][0],
                    pads[1][0],
                )
                return res.reshape(x.shape[:2] + tuple(out)), None, pads, out
            idx = np.empty(res.shape, np.int64)
            per, step = self._index_base(x)
            jit.parallel_for(
                k.max_pool2d,
                planes.shape[0],
                threads,
                planes,
                res,
                idx,
                self.kernel[0],
                self.kernel[1],
                self.strides[0],
                self.strides[1],
                dil[0],
                dil[1],
                pads[0][0],
                pads[1][0],
                per,
                step,
            )
            return res.reshape(x.shape[:2] + tuple(out)), ("kernel", idx.reshape(x.shape[:2] + tuple(out))), pads, out
        fill = -np.inf if work.dtype.kind == "f" else np.iinfo(work.dtype).min
        xp, _ = self._padded(work, pads, out, fill)
        win = windows(xp, self.kernel, self.strides, self._dil(), out)
        axes = tuple(range(2 + len(out), 2 + 2 * len(out)))
        return np.max(win, axis=axes), win, pads, out  # NaN propagates

    def compute(self, inputs, sig):
        vals, _, _, _ = self._values(inputs[0], sig.ins[0], indices=False)
        return [finish(np.ascontiguousarray(vals), sig.outs[0])]


@register
class MaxPool8(MaxPool1):
    TYPE = "MaxPool"
    VERSIONS = (8,)
    OUTPUTS = 2
    dilations = Attr("ints", None)
    index_element_type = Attr("etype", "i64")
    axis = Attr("int", 0)
    ROUNDINGS = ("floor", "ceil")

    def infer(self, inputs):
        if self.rounding_type not in self.ROUNDINGS:
            raise FormatError(f"rounding_type={self.rounding_type} is not in MaxPool-{self.VERSIONS[0]}", self.where)
        if self.index_element_type not in ("i32", "i64"):
            raise FormatError(f"index_element_type={self.index_element_type} must be i32 or i64", self.where)
        (values,) = super().infer(inputs)
        return [values, TensorSpec(self.index_element_type, values.shape)]

    def _index_base(self, x):
        axis = self.axis + x.ndim if self.axis < 0 else self.axis
        n, c = x.shape[:2]
        plane = int(np.prod(x.shape[2:]))
        if axis == 0:
            return n * c, plane
        if axis == 1:
            return c, plane
        return 1, 0

    def compute(self, inputs, sig):
        x = inputs[0]
        vals, win, pads, out = self._values(x, sig.ins[0])
        if isinstance(win, tuple):  # the kernel found the maxima, indices flattened from `axis` on
            return [finish(vals, sig.outs[0]), win[1].astype(numpy_dtype(sig.outs[1]), copy=False)]
        if win is None:  # global: recompute through the window view for the indices
            work = x.astype(np.float32) if x.dtype == np.float16 else x
            win = windows(work, self.kernel, self.strides, self._dil(), out)
        k = len(out)
        flat = win.reshape(win.shape[: 2 + k] + (-1,))
        key = np.where(np.isnan(flat), np.inf, flat) if flat.dtype.kind == "f" else flat
        arg = np.argmax(key, axis=-1)
        # window position -> input coordinates -> flat index over dims from `axis` on
        kpos = np.unravel_index(arg, tuple(self.kernel))
        coords = []
        grids = np.meshgrid(*[np.arange(o) for o in out], indexing="ij")
        for i in range(k):
            coords.append(grids[i] * self.strides[i] + kpos[i] * self._dil()[i] - pads[i][0])
        n, c = x.shape[:2]
        axis = self.axis + x.ndim if self.axis < 0 else self.axis
        dims = x.shape
        idx = np.zeros(arg.shape, np.int64)
        nn, cc = np.meshgrid(np.arange(n), np.arange(c), indexing="ij")
        full = [nn.reshape(n, c, *([1] * k)), cc.reshape(n, c, *([1] * k))] + coords
        for d in range(axis, x.ndim):
            idx = idx * dims[d] + np.broadcast_to(full[d], arg.shape)
        return [finish(np.ascontiguousarray(vals), sig.outs[0]), idx.astype(numpy_dtype(sig.outs[1]))]


@register
class MaxPool14(MaxPool8):
    TYPE = "MaxPool"
    VERSIONS = (14,)
    ROUNDINGS = ("floor", "ceil", "ceil_torch")


@register
class AvgPool1(_PoolBase):
    TYPE = "AvgPool"
    VERSIONS = (1,)
    exclude_pad = Attr("bool", xml="exclude-pad")
    ROUNDINGS = ("floor", "ceil")

    def infer(self, inputs):
        self.require_dtype(inputs[0], FLOAT_TYPES)
        if self.rounding_type not in self.ROUNDINGS:
            raise FormatError(f"rounding_type={self.rounding_type} is not in AvgPool-{self.VERSIONS[0]}", self.where)
        return [TensorSpec(inputs[0].dtype, self._out_shape(inputs[0]))]

    def compute(self, inputs, sig):
        x = inputs[0]
        pads, out = self._geometry(x.shape[2:])
        if self._global(x, pads):
            return [reduce_array(x, tuple(range(2, x.ndim)), "mean", True, sig.ins[0])]
        if _kernel_ok(x, out):
            from ..kernels import jit
            from ..kernels import pool_loops as k

            mode = k.INSIDE if self.exclude_pad else (k.PADDED if self.rounding_type == "ceil_torch" else k.KERNEL)
            planes, res, threads = _planes(x, out)
            jit.parallel_for(
                k.avg_pool2d,
                planes.shape[0],
                threads,
                planes,
                res,
                self.kernel[0],
                self.kernel[1],
                self.strides[0],
                self.strides[1],
                pads[0][0],
                pads[1][0],
                pads[0][1],
                pads[1][1],
                mode,
            )
            return [finish(res.reshape(x.shape[:2] + tuple(out)), sig.outs[0])]
        xp, extra = self._padded(x.astype(np.float64), pads, out, 0.0)
        # what counts: input positions (exclude-pad), or input + explicit pads
        inside = np.zeros(xp.shape[2:], np.float64)
        core = tuple(slice(b, b + d) for (b, _), d in zip(extra, x.shape[2:]))
        if self.exclude_pad:
            inside[core] = 1.0
        elif self.rounding_type == "ceil_torch":  # PyTorch: the window clipped to input + pads
            inside[tuple(slice(0, b + d + e) for (b, _), d, (_, e) in zip(extra, x.shape[2:], pads))] = 1.0
        else:  # OpenVINO: the whole kernel, also where a ceil window runs past the pads
            inside[...] = 1.0
        axes = tuple(range(2 + len(out), 2 + 2 * len(out)))
        sums = np.sum(windows(xp, self.kernel, self.strides, (1,) * len(out), out), axis=axes)
        counts = np.sum(windows(inside[None, None], self.kernel, self.strides, (1,) * len(out), out), axis=axes)
        with np.errstate(all="ignore"):
            return [finish(sums / counts, sig.outs[0])]


@register
class AvgPool14(AvgPool1):
    TYPE = "AvgPool"
    VERSIONS = (14,)
    ROUNDINGS = ("floor", "ceil", "ceil_torch")
