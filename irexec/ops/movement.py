"""Data movement with OpenVINO semantics: ops that only rearrange elements (Reshape, Squeeze,
Unsqueeze, ..., Roll, BatchToSpace, SpaceToBatch, SliceScatter), and the window movers
ExtractImagePatches (image to patches) and Col2Im (blocks back to an image, overlaps summed).
Shapes are checked by pure rules; computes return views where numpy can.

Where the newer ops depart from OpenVINO 2026.4 (each class says more): Roll with a scalar shift
and several axes rolls each axis by it (the spec; the CPU plugin refuses the graph);
BatchToSpace/SpaceToBatch refuse nonzero crops/pads of the batch dim (OpenVINO's shape rule
ignores them); Col2Im sums in float64 and gives zeros when no block fits (the CPU plugin returned
uninitialised memory). SliceScatter with start/stop/step known only at run time crashed the CPU
plugin (SIGSEGV); irexec computes it as Slice-8 indexes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..dtypes import COMPUTE_TYPES
from ..errors import ExecutionError, FormatError, ShapeInferenceError
from ..shapes import Dim, Shape, TensorSpec, format_shape, normalize_axes
from .attrs import Attr
from .base import Op, Sig
from .common import AXES_TYPES, check_axis, const_ints, finish
from .registry import parse_version, register


def _axes_value(op: Op, spec: TensorSpec) -> np.ndarray | None:
    if spec.dtype not in AXES_TYPES:
        raise FormatError(f"axes have element type {spec.dtype}; an integer type is required", op.where)
    if spec.rank is not None and spec.rank > 1:
        raise ShapeInferenceError(f"axes must be a scalar or 1-D, got rank {spec.rank}", op.where)
    return spec.value


@register
class Squeeze(Op):
    """Remove size-1 dims: the listed axes, or every size-1 dim when there is no axes input."""

    TYPE = "Squeeze"
    VERSIONS = (1, 15)
    INPUTS = (1, 2)
    allow_axis_skip = Attr("bool", False)

    def _kept(self, spec: TensorSpec, axes_value: np.ndarray | None) -> list[int]:
        """The dims that stay. An axis whose dim cannot be 1 is ignored and the dim copied as is
        (OpenVINO Squeeze-1 and Squeeze-15 since 2024.3); a dynamic dim at a listed axis counts
        as 1 unless its interval excludes 1."""
        if axes_value is None:
            return [i for i, d in enumerate(spec.shape) if d != 1]
        gone = {i for i in normalize_axes(axes_value, len(spec.shape)) if spec.may_be_one(i)}
        return [i for i in range(len(spec.shape)) if i not in gone]

    def _out(self, data: TensorSpec, axes_value: np.ndarray | None) -> TensorSpec:
        kept = self._kept(data, axes_value)
        bounds = None if data.bounds is None else tuple(data.bounds[i] for i in kept)
        return TensorSpec(data.dtype, tuple(data.shape[i] for i in kept), bounds=bounds)

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        data = inputs[0]
        if data.shape is None:
            return [TensorSpec(data.dtype, None)]
        if len(inputs) == 1:
            if any(d is None for d in data.shape):
                return [TensorSpec(data.dtype, None)]
            return [self._out(data, None)]
        axes = _axes_value(self, inputs[1])
        if axes is None:
            # One runtime axis (OpenVINO's rule): nothing can be squeezed when no dim may be 1;
            # else Squeeze-1 removes one dim (rank - 1, all dynamic) and Squeeze-15 gives a
            # dynamic rank.
            ashape = inputs[1].shape
            if data.shape and ashape is not None and all(d is not None for d in ashape) and math.prod(ashape) == 1:
                if not any(data.may_be_one(i) for i in range(len(data.shape))):
                    return [TensorSpec(data.dtype, data.shape)]
                if (parse_version(self.layer.version) or 0) < 15:
                    return [TensorSpec(data.dtype, (None,) * (len(data.shape) - 1))]
            return [TensorSpec(data.dtype, None)]
        if np.asarray(axes).size == 0:
            return [TensorSpec(data.dtype, None) if any(d is None for d in data.shape) else self._out(data, None)]
        if self.allow_axis_skip and any(data.shape[a] is None for a in normalize_axes(axes, len(data.shape))):
            return [TensorSpec(data.dtype, None)]
        return [self._out(data, axes)]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        data = inputs[0]
        axes = None if len(inputs) == 1 or inputs[1].size == 0 else inputs[1]
        key = (data.shape,) if axes is None else (data.shape, axes.dtype.char, axes.tobytes())
        return [data.reshape(self.remembered("shape", key, lambda: self._squeezed(data.shape, axes)))]

    def _squeezed(self, shape: tuple[int, ...], axes: np.ndarray | None) -> tuple[int, ...]:
        return tuple(shape[i] for i in self._kept(TensorSpec("f32", shape), axes))


@register
class Unsqueeze(Op):
    """Insert size-1 dims at the listed axes (normalized against the output rank)."""

    TYPE = "Unsqueeze"
    VERSIONS = (1,)
    INPUTS = (2, 2)

    def _unsqueezed(self, shape: tuple[Dim, ...], axes_value: np.ndarray) -> tuple[Dim, ...]:
        out_rank = len(shape) + len(set(np.asarray(axes_value).reshape(-1).tolist()))
        axes = normalize_axes(axes_value, out_rank)
        if len(axes) + len(shape) != out_rank:
            raise ShapeInferenceError(f"axes {np.asarray(axes_value).tolist()} repeat an axis", self.where)
        it = iter(shape)
        return tuple(1 if i in axes else next(it) for i in range(out_rank))

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        data = inputs[0]
        axes = _axes_value(self, inputs[1])
        if data.shape is None or axes is None:
            return [TensorSpec(data.dtype, None)]
        return [TensorSpec(data.dtype, self._unsqueezed(data.shape, axes))]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        data, axes = inputs
        key = (data.shape, axes.dtype.char, axes.tobytes())
        return [data.reshape(self.remembered("shape", key, lambda: self._unsqueezed(data.shape, axes)))]


@register
class Reshape(Op):
    """Reshape to input 1's value: -1 is inferred, 0 copies the input dim when special_zero."""

    TYPE = "Reshape"
    VERSIONS = (1,)
    INPUTS = (2, 2)
    special_zero = Attr("bool", False)

    def _target(self, shape: Shape, target: np.ndarray) -> tuple[Dim, ...]:
        t = [int(v) for v in np.asarray(target).reshape(-1).tolist()]
        out: list = []
        minus = [i for i, v in enumerate(t) if v == -1]
        if len(minus) > 1:
            raise ShapeInferenceError(f"target shape {t} has more than one -1", self.where)
        for i, v in enumerate(t):
            if v == 0 and self.special_zero:
                if shape is None or i >= len(shape):
                    if shape is None:
                        out.append(None)
                        continue
                    raise ShapeInferenceError(f"target shape {t}: 0 at {i} copies a dim the input lacks", self.where)
                out.append(shape[i])
            elif v < -1:
                raise ShapeInferenceError(f"target shape {t} has negative dim {v}", self.where)
            else:
                out.append(v)
        known_in = None if shape is None or any(d is None for d in shape) else math.prod(shape)
        if minus:
            i = minus[0]
            rest = [d for j, d in enumerate(out) if j != i]
            if known_in is None or any(d is None for d in rest):
                out[i] = None
            else:
                p = math.prod(rest)
                if p == 0 or known_in % p:
                    raise ShapeInferenceError(f"cannot reshape {format_shape(shape)} to {t}", self.where)
                out[i] = known_in // p
        elif known_in is not None and all(d is not None for d in out) and math.prod(out) != known_in:
            raise ShapeInferenceError(f"cannot reshape {format_shape(shape)} to {t}", self.where)
        return tuple(out)

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        data, target = inputs
        tv = _axes_value(self, target)
        if tv is None and target.partial is not None and not self.special_zero:
            # Elements known while others are not (ShapeOf of a dynamic shape): known elements
            # are dims, -1 or unknown ones are dynamic.
            return [TensorSpec(data.dtype, tuple(None if v is None or v == -1 else v for v in target.partial))]
        if tv is None:
            if target.shape is not None and len(target.shape) == 1 and target.shape[0] is not None:
                return [TensorSpec(data.dtype, (None,) * target.shape[0])]
            return [TensorSpec(data.dtype, None)]
        return [TensorSpec(data.dtype, self._target(data.shape, tv))]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        data, target = inputs
        key = (data.shape, target.dtype.char, target.tobytes())
        shape = self.remembered("shape", key, lambda: tuple(self._target(data.shape, target)))
        return [data.reshape(shape)]


def _same_dtype(op: Op, inputs: list[TensorSpec]) -> str:
    return op.require_same_dtype(inputs)


@register
class Transpose(Op):
    """Transpose-1: permute dims by the `order` input; an empty order reverses them."""

    TYPE = "Transpose"
    VERSIONS = (1,)
    INPUTS = (2, 2)

    def _order(self, order: list[int], rank: int) -> list[int]:
        if not order:
            return list(range(rank - 1, -1, -1))
        norm = [o + rank if o < 0 else o for o in order]
        if sorted(norm) != list(range(rank)):
            raise ShapeInferenceError(f"order {order} is not a permutation of {rank} axes", self.where)
        return norm

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        data, order = inputs
        o = const_ints(self, order, "order")
        if data.shape is None:
            return [TensorSpec(data.dtype, None)]
        if o is None:
            return [TensorSpec(data.dtype, (None,) * len(data.shape))]
        return [TensorSpec(data.dtype, tuple(data.shape[i] for i in self._order(o, len(data.shape))))]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        data, order = inputs
        key = (data.ndim, order.dtype.char, order.tobytes())
        return [
            data.transpose(self.remembered("order", key, lambda: self._order(order.reshape(-1).tolist(), data.ndim)))
        ]


@register
class Concat(Op):
    """Concat-1: join inputs along `axis` (negative counts from the end)."""

    TYPE = "Concat"
    VERSIONS = (1,)
    INPUTS = (1, None)
    axis = Attr("int")

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        et = _same_dtype(self, inputs)
        ranks = {len(s.shape) for s in inputs if s.shape is not None}
        if len(ranks) > 1:
            raise ShapeInferenceError(f"inputs have ranks {sorted(ranks)}; they must match", self.where)
        if not ranks:
            return [TensorSpec(et, None)]
        rank = ranks.pop()
        ax = check_axis(self, self.axis, rank)
        out = []
        for i in range(rank):
            dims = [s.shape[i] if s.shape is not None else None for s in inputs]
            if i == ax:
                out.append(None if any(d is None for d in dims) else sum(dims))
                continue
            known = {d for d in dims if d is not None}
            if len(known) > 1:
                raise ShapeInferenceError(
                    f"dim {i} differs between inputs ({', '.join(format_shape(s.shape) for s in inputs)})", self.where
                )
            out.append(known.pop() if known else None)
        if rank == 1 and et in AXES_TYPES:
            from ..shapes import elements, with_elements

            parts = [elements(s) for s in inputs]
            if any(p is not None for p in parts) and all(p is not None or s.is_static for p, s in zip(parts, inputs)):
                elems = []
                for p, s in zip(parts, inputs):
                    elems.extend(p if p is not None else [None] * s.shape[0])
                return [with_elements(et, tuple(out), elems)]
        return [TensorSpec(et, tuple(out))]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        return [np.concatenate(inputs, axis=self.axis)]


class _SplitBase(Op):
    INPUTS = (2, 3)
    OUTPUTS = (1, None)

    def _lengths(self, dim: Dim, split_values: TensorSpec | None) -> list[Dim]:
        raise NotImplementedError

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        data, axis_spec = inputs[0], inputs[1]
        ax = const_ints(self, axis_spec, "axis")
        n = len(self.layer.outputs)
        if data.shape is None or ax is None:
            return [TensorSpec(data.dtype, None if data.shape is None else (None,) * len(data.shape))] * n
        if len(ax) != 1:
            raise ShapeInferenceError(f"axis must be a scalar, got {ax}", self.where)
        a = check_axis(self, ax[0], len(data.shape))
        lengths = self._lengths(data.shape[a], inputs[2] if len(inputs) > 2 else None)
        outs = []
        for length in lengths:
            shape = list(data.shape)
            shape[a] = length
            outs.append(TensorSpec(data.dtype, tuple(shape)))
        return outs

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        data = inputs[0]
        axis = int(np.asarray(inputs[1]).reshape(-1)[0])
        given = tuple(int(v) for v in np.asarray(inputs[2]).reshape(-1)) if len(inputs) > 2 else None
        # the parts' index tuples, remembered per shape, axis and lengths (a view each)
        cuts = self.remembered("cuts", (data.shape, axis, given), lambda: self._cuts(data.shape, axis, given))
        return [data[c] for c in cuts]

    def _cuts(self, shape: tuple[int, ...], axis: int, given: tuple[int, ...] | None) -> list[tuple]:
        a = check_axis(self, axis, len(shape))
        spec = TensorSpec("i64", (len(given),), np.array(given, np.int64)) if given is not None else None
        lengths = self._lengths(shape[a], spec)
        ends = np.cumsum(lengths).tolist()
        return [(slice(None),) * a + (slice(e - n, e),) for n, e in zip(lengths, ends)]


@register
class Split(_SplitBase):
    """Split-1: `num_splits` equal parts along the axis input."""

    TYPE = "Split"
    VERSIONS = (1,)
    INPUTS = (2, 2)
    num_splits = Attr("int")

    def _lengths(self, dim: Dim, _: TensorSpec | None) -> list[Dim]:
        n = self.num_splits
        if n < 1 or n != len(self.layer.outputs):
            raise FormatError(f"num_splits={n} but the layer has {len(self.layer.outputs)} outputs", self.where)
        if dim is None:
            return [None] * n
        if dim % n:
            raise ShapeInferenceError(f"dim {dim} does not split into {n} equal parts", self.where)
        return [dim // n] * n


@register
class VariadicSplit(_SplitBase):
    """VariadicSplit-1: parts of the given lengths along the axis (one length may be -1)."""

    TYPE = "VariadicSplit"
    VERSIONS = (1,)
    INPUTS = (3, 3)

    def _lengths(self, dim: Dim, lengths_spec: TensorSpec | None) -> list[Dim]:
        lengths = const_ints(self, lengths_spec, "split_lengths")
        n = len(self.layer.outputs)
        if lengths is None:
            return [None] * n
        if len(lengths) != n:
            raise ShapeInferenceError(f"{len(lengths)} split_lengths for {n} outputs", self.where)
        if lengths.count(-1) > 1 or any(v < -1 for v in lengths):
            raise ShapeInferenceError(f"split_lengths {lengths} are invalid", self.where)
        if dim is None:
            return [None if v == -1 else v for v in lengths]
        known = sum(v for v in lengths if v != -1)
        if -1 in lengths:
            if known > dim:
                raise ShapeInferenceError(f"split_lengths {lengths} exceed dim {dim}", self.where)
            return [dim - known if v == -1 else v for v in lengths]
        if known != dim:
            raise ShapeInferenceError(f"split_lengths {lengths} do not add up to dim {dim}", self.where)
        return lengths


@register
class Tile(Op):
    """Tile-1: repeat the data `repeats` times per dim (the shorter of the two is padded with 1s in front)."""

    TYPE = "Tile"
    VERSIONS = (1,)
    INPUTS = (2, 2)

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        data, rep = inputs
        r = const_ints(self, rep, "repeats")
        if data.shape is None:
            return [TensorSpec(data.dtype, None)]
        if r is None:
            n = rep.shape[0] if rep.shape and rep.shape[0] is not None else None
            return [TensorSpec(data.dtype, None if n is None else (None,) * max(n, len(data.shape)))]
        if any(v < 0 for v in r):
            raise ShapeInferenceError(f"repeats {r} has a negative value", self.where)
        rank = max(len(r), len(data.shape))
        dims = (1,) * (rank - len(data.shape)) + tuple(data.shape)
        reps = (1,) * (rank - len(r)) + tuple(r)
        return [TensorSpec(data.dtype, tuple(None if d is None else d * k for d, k in zip(dims, reps)))]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        data, rep = inputs
        reps = [int(v) for v in rep.reshape(-1)]
        if any(v < 0 for v in reps):
            raise ShapeInferenceError(f"repeats {reps} has a negative value", self.where)
        shape = tuple(
            d * k
            for d, k in zip(
                (1,) * max(0, len(reps) - data.ndim) + data.shape, (1,) * max(0, data.ndim - len(reps)) + tuple(reps)
            )
        )
        self.check_output(shape, sig.outs[0], sig)
        return [np.tile(data, reps)]


class _BroadcastBase(Op):
    """Broadcast: numpy (data to target_shape), bidirectional (v3: both ways), explicit
    (axes_mapping says where data's dims go)."""

    INPUTS = (2, 3)

    def _target(self, spec: TensorSpec) -> list | None:
        from ..shapes import elements

        if spec.dtype not in AXES_TYPES:
            raise FormatError(f"target_shape has element type {spec.dtype}", self.where)
        return elements(spec)

    def _out(self, data_shape: Shape, target: list[Dim] | None, axes_mapping: list[int] | None) -> Shape:
        mode = self.mode
        if mode == "explicit":
            if axes_mapping is None:
                return None if target is None else tuple(target)
            if data_shape is not None and len(axes_mapping) != len(data_shape):
                raise ShapeInferenceError(
                    f"axes_mapping {axes_mapping} does not match data rank {len(data_shape)}", self.where
                )
            return None if target is None else tuple(target)
        if target is None or data_shape is None:
            return None
        if mode == "bidirectional":
            return broadcast_partial(self, data_shape, target)
        rank = len(target)
        if len(data_shape) > rank:
            raise ShapeInferenceError(
                f"data {format_shape(data_shape)} has more dims than target shape {target}", self.where
            )
        padded = (1,) * (rank - len(data_shape)) + tuple(data_shape)
        out = []
        for d, t in zip(padded, target):
            if d is not None and t is not None and d != 1 and d != t:
                raise ShapeInferenceError(f"data {format_shape(data_shape)} does not broadcast to {target}", self.where)
            out.append(t if t is not None else (d if d is not None and d != 1 else None))
        return tuple(out)

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        data, target = inputs[0], inputs[1]
        t = self._target(target)
        mapping = const_ints(self, inputs[2], "axes_mapping") if len(inputs) > 2 else None
        if self.mode == "explicit" and len(inputs) < 3:
            raise ShapeInferenceError("explicit mode needs the axes_mapping input", self.where)
        if self.mode == "explicit" and inputs[2].shape is not None and len(inputs[2].shape) != 1:
            raise ShapeInferenceError(
                f"axes_mapping has shape {format_shape(inputs[2].shape)}; explicit mode needs a 1-D list", self.where
            )
        out = self._out(data.shape, t, mapping)
        if out is None and t is None and target.shape is not None and target.shape[0] is not None:
            if self.mode != "bidirectional" or data.shape is None:
                return [TensorSpec(data.dtype, (None,) * target.shape[0])]
            return [TensorSpec(data.dtype, (None,) * max(target.shape[0], len(data.shape)))]
        return [TensorSpec(data.dtype, out)]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        data = inputs[0]
        # the shapes depend on the data's shape and the small target/mapping inputs only
        key = (data.shape,) + tuple((x.dtype.char, x.shape, x.tobytes()) for x in inputs[1:])
        shape, target = self.remembered("shapes", key, lambda: self._run_shapes(data.shape, inputs[1:], sig))
        if shape is not None:
            data = data.reshape(shape)
        try:
            return [np.broadcast_to(data, target)]
        except ValueError as e:
            raise ShapeInferenceError(
                f"data {format_shape(data.shape)} does not broadcast to {list(target)}", self.where
            ) from e

    def _run_shapes(self, data_shape: tuple, inputs: list[np.ndarray], sig: Sig) -> tuple:
        """(the data's shape for explicit mode's axes mapping or None, the result's shape), the
        result checked against the limits."""
        target, shape = [int(v) for v in inputs[0].reshape(-1)], None
        if self.mode == "explicit":
            mapping = [int(v) for v in inputs[1].reshape(-1)]
            shape = [1] * len(target)
            for d, a in zip(data_shape, mapping):
                shape[a] = d
            shape = tuple(shape)
        elif self.mode == "bidirectional":
            target = list(np.broadcast_shapes(tuple(target), data_shape))
        self.check_output(tuple(target), sig.outs[0], sig)
        return shape, tuple(target)


def broadcast_partial(op: Op, a: Sequence[Dim], b: Sequence[Dim]) -> tuple[Dim, ...]:
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + tuple(a)
    b = (1,) * (rank - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif x is None or y is None:
            out.append(x if y is None and x is not None else (y if x is None and y is not None else None))
        elif x != y:
            raise ShapeInferenceError(f"dims {x} and {y} do not broadcast", op.where)
        else:
            out.append(x)
    return tuple(out)


@register
class Broadcast1(_BroadcastBase):
    """Broadcast-1. Its `mode` is an AutoBroadcastSpec: OpenVINO writes explicit mode as
    "none", and its reader takes a layer without `mode` as explicit too (checked against
    OpenVINO 2026.4: such a layer with an axes_mapping input runs in explicit mode, one without
    fails), so absent and "none" both mean explicit here."""

    TYPE = "Broadcast"
    VERSIONS = (1,)
    mode = Attr("str", "explicit", choices=("numpy", "explicit", "none", "pdpd"), xml="mode")

    def __init__(self, layer, context=None):
        super().__init__(layer, context)
        if self.mode == "none":
            self.mode = "explicit"


@register
class Broadcast3(_BroadcastBase):
    TYPE = "Broadcast"
    VERSIONS = (3,)
    mode = Attr("str", "numpy", choices=("numpy", "explicit", "bidirectional", "pdpd"), xml="mode")


_BIG = 2**62


@register
class StridedSlice(Op):
    """StridedSlice-1: begin/end/stride per dim with OpenVINO's masks (a 1 in begin_mask or
    end_mask IGNORES that bound; new_axis_mask inserts a 1-dim; shrink_axis_mask takes one
    element and drops the dim; ellipsis_mask stands for the remaining dims)."""

    TYPE = "StridedSlice"
    VERSIONS = (1,)
    INPUTS = (3, 4)
    begin_mask = Attr("ints", ())
    end_mask = Attr("ints", ())
    new_axis_mask = Attr("ints", ())
    shrink_axis_mask = Attr("ints", ())
    ellipsis_mask = Attr("ints", ())

    def _index(
        self, rank: int, begin: list[int], end: list[int], stride: list[int] | None
    ) -> list[slice | tuple[str, int] | None]:
        def bit(mask: tuple[int, ...], i: int) -> bool:
            return i < len(mask) and mask[i] == 1

        n = len(begin)
        if stride is None:
            stride = [1] * n
        index = []
        seen_ellipsis = False
        specified = sum(1 for i in range(n) if not bit(self.new_axis_mask, i) and not (bit(self.ellipsis_mask, i)))
        for i in range(n):
            if bit(self.ellipsis_mask, i) and not seen_ellipsis:
                seen_ellipsis = True
                index.extend([slice(None)] * max(0, rank - specified))
                continue
            if bit(self.new_axis_mask, i):
                index.append(None)
                continue
            if bit(self.shrink_axis_mask, i):
                index.append(("shrink", begin[i]))
                continue
            if stride[i] == 0:
                raise ShapeInferenceError("stride 0", self.where)
            b = None if bit(self.begin_mask, i) else begin[i]
            e = None if bit(self.end_mask, i) else end[i]
            index.append(slice(b, e, stride[i]))
        return index

    def _apply_shape(self, shape: tuple[Dim, ...], index: list[slice | tuple[str, int] | None]) -> tuple[Dim, ...]:
        out = []
        dim = 0
        for item in index:
            if item is None:
                out.append(1)
                continue
            d = shape[dim] if dim < len(shape) else None
            dim += 1
            if isinstance(item, tuple):
                if d is not None and not -d <= item[1] < d:
                    raise ShapeInferenceError(f"index {item[1]} is out of range for dim {d}", self.where)
                continue
            if d is None:
                if item.start is None and item.stop is None and item.step == 1:
                    out.append(None)
                else:
                    out.append(None)
                continue
            out.append(len(range(*item.indices(d))))
        out.extend(shape[dim:])
        return tuple(out)

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        data = inputs[0]
        begin = const_ints(self, inputs[1], "begin")
        end = const_ints(self, inputs[2], "end")
        stride = const_ints(self, inputs[3], "stride") if len(inputs) > 3 else None
        if data.shape is None:
            return [TensorSpec(data.dtype, None)]
        if begin is None or end is None or (len(inputs) > 3 and stride is None):
            n = inputs[1].shape[0] if inputs[1].shape and inputs[1].shape[0] is not None else None
            if n is None or any(self.ellipsis_mask) or any(self.new_axis_mask) or any(self.shrink_axis_mask):
                return [TensorSpec(data.dtype, None)]
            return [TensorSpec(data.dtype, (None,) * len(data.shape))]
        index = self._index(len(data.shape), begin, end, stride)
        shape = self._apply_shape(data.shape, index)
        if len(data.shape) == 1 and data.dtype in AXES_TYPES:
            from ..shapes import elements, with_elements

            elems = elements(data)
            if elems is not None and len(elems) == data.shape[0]:
                sliced = _slice_list(elems, index)
                if sliced is not None:
                    return [with_elements(data.dtype, shape, sliced)]
        return [TensorSpec(data.dtype, shape)]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        data = inputs[0]
        begin = [int(v) for v in inputs[1].reshape(-1)]
        end = [int(v) for v in inputs[2].reshape(-1)]
        stride = [int(v) for v in inputs[3].reshape(-1)] if len(inputs) > 3 else None
        index = self._index(data.ndim, begin, end, stride)
        self._apply_shape(data.shape, index)  # range checks
        np_index = tuple(item[1] if isinstance(item, tuple) else item for item in index)
        return [np.asarray(data[np_index])]


def _slice_list(elems: list, index: list[slice | tuple[str, int] | None]) -> list | None:
    """Apply a 1-D StridedSlice index to a list (None when the index is not a plain 1-D slice)."""
    items = [i for i in index if i is not None]
    if len(items) != 1 or len(index) != 1:
        return None
    item = items[0]
    if isinstance(item, tuple):
        return [elems[item[1]]]
    return elems[item]


@register
class Slice(Op):
    """Slice-8: start/stop/step per listed axis (all axes when absent), clamped like Python."""

    TYPE = "Slice"
    VERSIONS = (8,)
    INPUTS = (4, 5)

    def _index(
        self, rank: int, start: list[int], stop: list[int], step: list[int], axes: list[int] | None
    ) -> list[slice]:
        if axes is None:
            axes = list(range(len(start)))
        if not len(start) == len(stop) == len(step) == len(axes):
            raise ShapeInferenceError("start, stop, step and axes must have one value per sliced axis", self.where)
        index = [slice(None)] * rank
        seen = set()
        for b, e, s, a in zip(start, stop, step, axes):
            a = check_axis(self, a, rank)
            if a in seen:
                raise ShapeInferenceError(f"axis {a} is sliced twice", self.where)
            seen.add(a)
            if s == 0:
                raise ShapeInferenceError("step 0", self.where)
            index[a] = slice(max(min(b, _BIG), -_BIG), max(min(e, _BIG), -_BIG), s)
        return index

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        data = inputs[0]
        vals = [const_ints(self, s, n) for s, n in zip(inputs[1:], ("start", "stop", "step", "axes"))]
        if data.shape is None:
            return [TensorSpec(data.dtype, None)]
        if any(v is None for v in vals):
            return [TensorSpec(data.dtype, (None,) * len(data.shape))]
        index = self._index(len(data.shape), vals[0], vals[1], vals[2], vals[3] if len(vals) > 3 else None)
        shape = tuple(None if d is None else len(range(*sl.indices(d))) for d, sl in zip(data.shape, index))
        if len(data.shape) == 1 and data.dtype in AXES_TYPES:
            from ..shapes import elements, with_elements

            elems = elements(data)
            if elems is not None and len(elems) == data.shape[0]:
                return [with_elements(data.dtype, shape, elems[index[0]])]
        return [TensorSpec(data.dtype, shape)]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        data = inputs[0]
        # the index depends on the rank and the small start/stop/step/axes inputs only (their
        # bytes key it: 7.7 -> 4 us a call in LLaMA's rotary halves)
        key = (data.ndim,) + tuple((x.dtype.char, x.shape, x.tobytes()) for x in inputs[1:])
        return [data[self.remembered("index", key, lambda: self._run_index(data.ndim, inputs[1:]))]]

    def _run_index(self, rank: int, inputs: list[np.ndarray]) -> tuple:
        vals = [[int(v) for v in x.reshape(-1)] for x in inputs]
        return tuple(self._index(rank, vals[0], vals[1], vals[2], vals[3] if len(vals) > 3 else None))


class _PadBase(Op):
    """Pad: pads_begin/pads_end per dim, pad_mode constant (pad_value input, default 0), edge,
    reflect, symmetric. Pad-12 also takes negative pads: they crop."""

    INPUTS = (3, 4)
    pad_mode = Attr("str", "constant", choices=("constant", "edge", "reflect", "symmetric"))
    NEGATIVE = False

    def _pads(self, b: list[int], e: list[int], rank: int) -> None:
        if len(b) != rank or len(e) != rank:
            raise ShapeInferenceError(f"pads {b} / {e} do not have {rank} values", self.where)
        if not self.NEGATIVE and any(v < 0 for v in b + e):
            raise ShapeInferenceError(f"Pad-1 pads must be non-negative, got {b} / {e}", self.where)

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        data = inputs[0]
        b = const_ints(self, inputs[1], "pads_begin")
        e = const_ints(self, inputs[2], "pads_end")
        if len(inputs) > 3 and inputs[3].dtype != data.dtype:
            raise FormatError(f"pad_value has element type {inputs[3].dtype}, data {data.dtype}", self.where)
        if data.shape is None:
            return [TensorSpec(data.dtype, None)]
        if b is None or e is None:
            return [TensorSpec(data.dtype, (None,) * len(data.shape))]
        self._pads(b, e, len(data.shape))
        out = []
        for d, x, y in zip(data.shape, b, e):
            if d is None:
                out.append(None)
                continue
            n = d + x + y
            if n < 0:
                raise ShapeInferenceError(f"pads {x}, {y} crop dim {d} below zero", self.where)
            if self.pad_mode in ("reflect", "symmetric") and (
                x > d - (self.pad_mode == "reflect") or y > d - (self.pad_mode == "reflect")
            ):
                raise ShapeInferenceError(f"{self.pad_mode} pads {x}, {y} exceed dim {d}", self.where)
            out.append(n)
        return [TensorSpec(data.dtype, tuple(out))]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        data = inputs[0]
        b = [int(v) for v in inputs[1].reshape(-1)]
        e = [int(v) for v in inputs[2].reshape(-1)]
        self._pads(b, e, data.ndim)
        crop = tuple(slice(max(0, -x), d - max(0, -y)) for d, x, y in zip(data.shape, b, e))
        data = data[crop]
        widths = [(max(0, x), max(0, y)) for x, y in zip(b, e)]
        if self.pad_mode == "constant":
            value = inputs[3].reshape(()) if len(inputs) > 3 else 0
            return [np.pad(data, widths, mode="constant", constant_values=value)]
        return [np.pad(data, widths, mode=self.pad_mode)]


@register
class Pad1(_PadBase):
    TYPE = "Pad"
    VERSIONS = (1,)


@register
class Pad12(_PadBase):
    TYPE = "Pad"
    VERSIONS = (12,)
    NEGATIVE = True


class _BlockBase(Op):
    mode = Attr("str", choices=("blocks_first", "depth_first"))
    block_size = Attr("int", 1)


@register
class DepthToSpace(_BlockBase):
    """DepthToSpace-1: (N, C*bs^k, D1..Dk) -> (N, C, D1*bs, ..., Dk*bs)."""

    TYPE = "DepthToSpace"
    VERSIONS = (1,)

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        x = inputs[0]
        if x.shape is None:
            return [TensorSpec(x.dtype, None)]
        k = len(x.shape) - 2
        bs = self.block_size
        c = x.shape[1]
        if c is not None and c % bs**k:
            raise ShapeInferenceError(f"channels {c} not divisible by block_size^{k} = {bs**k}", self.where)
        return [
            TensorSpec(
                x.dtype,
                (x.shape[0], None if c is None else c // bs**k, *(None if d is None else d * bs for d in x.shape[2:])),
            )
        ]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        x = inputs[0]
        n, c, *sp = x.shape
        k, bs = len(sp), self.block_size
        c2 = c // bs**k
        if self.mode == "blocks_first":
            y = x.reshape(n, *([bs] * k), c2, *sp)
            order = [0, k + 1] + [j for i in range(k) for j in (k + 2 + i, 1 + i)]
        else:
            y = x.reshape(n, c2, *([bs] * k), *sp)
            order = [0, 1] + [j for i in range(k) for j in (k + 2 + i, 2 + i)]
        return [np.ascontiguousarray(y.transpose(order)).reshape(n, c2, *(d * bs for d in sp))]


@register
class SpaceToDepth(_BlockBase):
    """SpaceToDepth-1: (N, C, D1*bs, ..., Dk*bs) -> (N, C*bs^k, D1..Dk)."""

    TYPE = "SpaceToDepth"
    VERSIONS = (1,)

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        x = inputs[0]
        if x.shape is None:
            return [TensorSpec(x.dtype, None)]
        k = len(x.shape) - 2
        bs = self.block_size
        for d in x.shape[2:]:
            if d is not None and d % bs:
                raise ShapeInferenceError(f"dim {d} not divisible by block_size {bs}", self.where)
        c = x.shape[1]
        return [
            TensorSpec(
                x.dtype,
                (x.shape[0], None if c is None else c * bs**k, *(None if d is None else d // bs for d in x.shape[2:])),
            )
        ]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        x = inputs[0]
        n, c, *sp = x.shape
        k, bs = len(sp), self.block_size
        small = [d // bs for d in sp]
        y = x.reshape(n, c, *[v for d in small for v in (d, bs)])
        blocks = [3 + 2 * i for i in range(k)]
        spatial = [2 + 2 * i for i in range(k)]
        if self.mode == "blocks_first":
            order = [0] + blocks + [1] + spatial
        else:
            order = [0, 1] + blocks + spatial
        return [np.ascontiguousarray(y.transpose(order)).reshape(n, c * bs**k, *small)]


@register
class ShuffleChannels(Op):
    """ShuffleChannels-1: split dim `axis` into (group, C/group), swap, merge back."""

    TYPE = "ShuffleChannels"
    VERSIONS = (1,)
    SAME_SHAPE = True
    axis = Attr("int", 1)
    group = Attr("int", 1)

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        x = inputs[0]
        if x.shape is not None:
            a = check_axis(self, self.axis, len(x.shape))
            if x.shape[a] is not None and (self.group < 1 or x.shape[a] % self.group):
                raise ShapeInferenceError(f"dim {x.shape[a]} not divisible by group {self.group}", self.where)
        return [TensorSpec(x.dtype, x.shape)]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        x = inputs[0]
        a = check_axis(self, self.axis, x.ndim)
        c = x.shape[a]
        y = x.reshape(*x.shape[:a], self.group, c // self.group, *x.shape[a + 1 :])
        return [np.ascontiguousarray(np.swapaxes(y, a, a + 1)).reshape(x.shape)]


# ---- Roll, BatchToSpace / SpaceToBatch, SliceScatter --------------------------------------------


def _int_vector(op: Op, spec: TensorSpec, what: str) -> list[int] | None:
    """The constant values of a scalar or 1-D integer input (None when known only at run time)."""
    if spec.rank is not None and spec.rank > 1:
        raise ShapeInferenceError(f"{what} has shape {format_shape(spec.shape)}; a scalar or 1-D is required", op.where)
    return const_ints(op, spec, what)


@register
class Roll(Op):
    """Roll-7: elements shifted along the listed axes, wrapping around. shift and axes are scalars
    or 1-D; a scalar shift applies to every axis (the spec's rule; OpenVINO's CPU plugin refuses a
    scalar shift with more than one axis, "'shift' and 'axes' dimensions mismatch"); a 1-D shift
    has one value per axis; an axis listed twice takes the sum of its shifts; negative axes count
    from the end, negative shifts roll backward."""

    TYPE = "Roll"
    VERSIONS = (7,)
    INPUTS = (3, 3)
    SAME_SHAPE = True

    def _pairs(self, shift: list[int], axes: list[int], rank: int, shift_scalar: bool) -> dict[int, int]:
        if shift_scalar:
            shift = shift[:1] * len(axes)
        if len(shift) != len(axes):
            raise ShapeInferenceError(f"shift {shift} and axes {axes} must have one value per axis", self.where)
        total: dict[int, int] = {}
        for s, a in zip(shift, axes):
            a = check_axis(self, a, rank)
            total[a] = total.get(a, 0) + s
        return total

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        data, shift, axes = inputs
        s = _int_vector(self, shift, "shift")
        a = _int_vector(self, axes, "axes")
        if shift.rank == 1 and axes.rank == 0:
            raise ShapeInferenceError("axes is a scalar, so shift must be a scalar too", self.where)
        if shift.rank == 1 and axes.rank == 1 and None not in (shift.shape[0], axes.shape[0]):
            if shift.shape[0] != axes.shape[0]:
                raise ShapeInferenceError(
                    f"shift has {shift.shape[0]} values and axes {axes.shape[0]}; they must be equal", self.where
                )
        if data.shape is not None and a is not None:
            if s is not None:
                self._pairs(s, a, len(data.shape), shift.rank == 0)
            else:
                for v in a:
                    check_axis(self, v, len(data.shape))
        return [TensorSpec(data.dtype, data.shape)]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        data, shift, axes = inputs
        s = [int(v) for v in shift.reshape(-1).tolist()]
        a = [int(v) for v in axes.reshape(-1).tolist()]
        total = self._pairs(s, a, data.ndim, shift.ndim == 0)
        if data.size == 0 or not total:
            return [data.copy()]
        axes_ = tuple(total)
        return [np.roll(data, [total[k] % data.shape[k] for k in axes_], axis=axes_)]


class _BatchSpaceBase(Op):
    """BatchToSpace / SpaceToBatch: data of rank >= 2 and three 1-D integer inputs of one value
    per data dim (block_shape, then crops or pads begin and end); block_shape[0] must be 1 and
    the batch dim's crops or pads 0 (OpenVINO's shape rule ignores nonzero ones: SpaceToBatch of
    batch 2 padded by 1 + 1 with blocks of 2 gives batch 4 there, not 8; irexec refuses them)."""

    INPUTS = (4, 4)
    SIDES = ("", "")
    SAME_INDEX_TYPE = True  # OpenVINO's BatchToSpace asks one type of its three; SpaceToBatch does not

    def _values(self, inputs: list[TensorSpec]) -> list[list[int] | None]:
        data = inputs[0]
        if data.rank is not None and data.rank < 2:
            raise ShapeInferenceError(f"data has rank {data.rank}; rank 2 or more is required", self.where)
        names = ("block_shape",) + self.SIDES
        if self.SAME_INDEX_TYPE:
            self.require_same_dtype(inputs, (1, 2, 3))
        out = []
        for spec, name in zip(inputs[1:], names):
            v = const_ints(self, spec, name)
            if spec.rank is not None and spec.rank != 1:
                raise ShapeInferenceError(f"{name} has shape {format_shape(spec.shape)}; 1-D is required", self.where)
            n = spec.shape[0] if spec.shape is not None else None
            if data.rank is not None and n is not None and n != data.rank:
                raise ShapeInferenceError(f"{name} has {n} values for data of rank {data.rank}", self.where)
            out.append(v)
        return out

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        data = inputs[0]
        block, begin, end = self._values(inputs)
        if data.shape is None:
            return [TensorSpec(data.dtype, None)]
        if block is not None and (begin is None or end is None):  # only the batch dim is known
            self._check(block, [0] * len(block), [0] * len(block))
            batch = data.shape[0]
            batch = None if batch is None else self._batch(batch, math.prod(block))
            return [TensorSpec(data.dtype, (batch,) + (None,) * (len(data.shape) - 1))]
        if block is None or begin is None or end is None:
            return [TensorSpec(data.dtype, (None,) * len(data.shape))]
        return [TensorSpec(data.dtype, self._shape(data.shape, block, begin, end))]

    def _batch(self, batch: int, prod: int) -> int:
        """The output batch from the input's and the product of the blocks."""
        raise NotImplementedError

    def _check(self, block: list[int], begin: list[int], end: list[int], err=ShapeInferenceError) -> None:
        if not len(block) == len(begin) == len(end):
            raise err(
                f"block_shape {block} and {self.SIDES[0]} {begin} / {self.SIDES[1]} {end} differ in length", self.where
            )
        if any(b < 1 for b in block) or block[0] != 1:
            raise err(f"block_shape {block} must be positive with block_shape[0] = 1", self.where)
        if any(v < 0 for v in begin + end):
            raise err(f"{self.SIDES[0]} {begin} / {self.SIDES[1]} {end} must be non-negative", self.where)


@register
class BatchToSpace(_BatchSpaceBase):
    """BatchToSpace-2: (B, D1..Dn) -> (B / prod(block), D1*b1 - crops, ...): the batch split into
    blocks interleaved into the spatial dims, then cropped."""

    TYPE = "BatchToSpace"
    VERSIONS = (2,)
    SIDES = ("crops_begin", "crops_end")

    def _shape(self, shape, block, begin, end, err=ShapeInferenceError) -> tuple:
        self._check(block, begin, end, err)
        prod = math.prod(block)
        batch = shape[0]
        if batch is not None and batch % prod:
            raise err(f"batch {batch} is not divisible by the product {prod} of block_shape {block}", self.where)
        out = [None if batch is None else batch // prod]
        for d, b, c0, c1 in zip(shape[1:], block[1:], begin[1:], end[1:]):
            if d is None:
                out.append(None)
                continue
            if c0 + c1 > d * b:
                raise err(f"crops {c0} + {c1} exceed dim {d} x block {b}", self.where)
            out.append(d * b - c0 - c1)
        if begin[0] or end[0]:
            raise err(f"crops of the batch dim must be 0, got {begin[0]} / {end[0]}", self.where)
        return tuple(out)

    def _batch(self, batch: int, prod: int) -> int:
        if batch % prod:
            raise ShapeInferenceError(
                f"batch {batch} is not divisible by the product {prod} of block_shape", self.where
            )
        return batch // prod

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        x = inputs[0]
        block, begin, end = ([int(v) for v in a.reshape(-1).tolist()] for a in inputs[1:])
        if len(block) != x.ndim:
            raise ExecutionError(f"block_shape {block} has {len(block)} values for data of rank {x.ndim}", self.where)
        self._shape(x.shape, block, begin, end, ExecutionError)
        n = x.ndim
        batch = x.shape[0] // math.prod(block)
        y = x.reshape(*block[1:], batch, *x.shape[1:])
        k = n - 1  # the block dims come first, then the batch, then the spatial dims
        order = [k] + [j for i in range(k) for j in (k + 1 + i, i)]
        y = y.transpose(order).reshape(batch, *(d * b for d, b in zip(x.shape[1:], block[1:])))
        crop = (slice(None),) + tuple(
            slice(c0, y.shape[i + 1] - c1) for i, (c0, c1) in enumerate(zip(begin[1:], end[1:]))
        )
        return [np.ascontiguousarray(y[crop])]


@register
class SpaceToBatch(_BatchSpaceBase):
    """SpaceToBatch-2: (B, D1..Dn) -> (B * prod(block), (D1 + pads) / b1, ...): zero-padded, then
    every spatial dim split into blocks moved into the batch."""

    TYPE = "SpaceToBatch"
    VERSIONS = (2,)
    SIDES = ("pads_begin", "pads_end")
    SAME_INDEX_TYPE = False

    def _shape(self, shape, block, begin, end, err=ShapeInferenceError) -> tuple:
        self._check(block, begin, end, err)
        if begin[0] or end[0]:
            raise err(f"pads of the batch dim must be 0, got {begin[0]} / {end[0]}", self.where)
        out = []
        for i, (d, b, p0, p1) in enumerate(zip(shape, block, begin, end)):
            if d is None:
                out.append(None)
                continue
            if (d + p0 + p1) % b:
                raise err(f"dim {i} padded to {d + p0 + p1} is not divisible by block {b}", self.where)
            out.append((d + p0 + p1) // b)
        out[0] = None if out[0] is None else out[0] * math.prod(block)
        return tuple(out)

    def _batch(self, batch: int, prod: int) -> int:
        return batch * prod

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        x = inputs[0]
        block, begin, end = ([int(v) for v in a.reshape(-1).tolist()] for a in inputs[1:])
        if len(block) != x.ndim:
            raise ExecutionError(f"block_shape {block} has {len(block)} values for data of rank {x.ndim}", self.where)
        out_shape = self._shape(x.shape, block, begin, end, ExecutionError)
        self.check_output(out_shape, sig.outs[0], sig)
        x = np.pad(x, list(zip(begin, end)))
        k = x.ndim - 1
        split = [v for d, b in zip(x.shape[1:], block[1:]) for v in (d // b, b)]
        y = x.reshape(x.shape[0], *split)
        order = [2 + 2 * i for i in range(k)] + [0] + [1 + 2 * i for i in range(k)]
        return [np.ascontiguousarray(y.transpose(order)).reshape(out_shape)]


@register
class SliceScatter(Slice):
    """SliceScatter-15: data with the region Slice-8 would take (start, stop, step, axes) replaced
    by updates, whose shape must be that region's."""

    TYPE = "SliceScatter"
    VERSIONS = (15,)
    INPUTS = (5, 6)
    SAME_SHAPE = True

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        data, updates = inputs[0], inputs[1]
        if updates.dtype != data.dtype:
            raise FormatError(f"updates have element type {updates.dtype}, data {data.dtype}", self.where)
        (region,) = super().infer([data] + inputs[2:])
        if region.shape is not None and updates.shape is not None:
            if len(region.shape) != len(updates.shape) or any(
                r is not None and u is not None and r != u for r, u in zip(region.shape, updates.shape)
            ):
                raise ShapeInferenceError(
                    f"updates {format_shape(updates.shape)} do not match the slice {format_shape(region.shape)}",
                    self.where,
                )
        return [TensorSpec(data.dtype, data.shape)]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        data, updates = inputs[0], inputs[1]
        vals = [[int(v) for v in x.reshape(-1)] for x in inputs[2:]]
        index = tuple(self._index(data.ndim, vals[0], vals[1], vals[2], vals[3] if len(vals) > 3 else None))
        out = data.copy()
        region = out[index]
        if region.shape != updates.shape:
            raise ExecutionError(
                f"updates {format_shape(updates.shape)} do not match the slice {format_shape(region.shape)}", self.where
            )
        out[index] = updates
        return [out]


# ---- ExtractImagePatches and Col2Im: windows over the spatial dims ------------------------------


NUMBER_TYPES = COMPUTE_TYPES - {"boolean"}  # Col2Im sums: numbers only


def _patch_count(size: int, rate: int, stride: int, kernel: int, pad: str) -> int:
    """Patches along one dim, by OpenVINO's rule (none when the dilated patch exceeds the dim)."""
    if pad == "valid":
        out = (size - rate * (kernel - 1) - 1) // stride + 1
    else:
        out = 1 + (size - 1) // stride
    return max(out, 0)


def _same_pad_before(size: int, rate: int, stride: int, kernel: int, pad: str) -> int:
    """The leading padding of same_upper / same_lower, as OpenVINO's reference computes it: the
    total padding of ceil(size / stride) patches, applied only when below the patch extent, with
    the odd element after (same_upper) or before (same_lower)."""
    if pad == "valid":
        return 0
    extent = kernel + (rate - 1) * (kernel - 1)
    total = (-(-size // stride) - 1) * stride + extent - size
    if not 0 < total < extent:
        return 0
    if total % 2 == 0:
        return total // 2
    return (total + 1) // 2 if pad == "same_lower" else (total - 1) // 2


@register
class ExtractImagePatches(Op):
    """ExtractImagePatches-3: (N, C, H, W) -> (N, sizes[0] * sizes[1] * C, rows, cols); channel
    (kr * sizes[1] + kc) * C + c of patch (r, q) is x[c, r * stride + kr * rate - pad, ...], zero
    outside the image."""

    TYPE = "ExtractImagePatches"
    VERSIONS = (3,)
    sizes = Attr("ints")
    strides = Attr("ints")
    rates = Attr("ints")
    auto_pad = Attr("str", choices=("valid", "same_upper", "same_lower"))

    def _check_attrs(self) -> None:
        for name in ("sizes", "strides", "rates"):
            v = getattr(self, name)
            if len(v) != 2 or any(x < 1 for x in v):
                raise FormatError(f"{name}={list(v)} must be two positive integers", self.where)

    def _out_dims(self, h: int | None, w: int | None) -> tuple:
        args = zip((h, w), self.rates, self.strides, self.sizes)
        return tuple(None if d is None else _patch_count(d, r, s, k, self.auto_pad) for d, r, s, k in args)

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        x = inputs[0]
        self._check_attrs()
        if x.shape is None:
            return [TensorSpec(x.dtype, (None,) * 4)]
        if len(x.shape) != 4:
            raise ShapeInferenceError(f"data has shape {format_shape(x.shape)}; rank 4 is required", self.where)
        n, c, h, w = x.shape
        depth = None if c is None else c * self.sizes[0] * self.sizes[1]
        return [TensorSpec(x.dtype, (n, depth, *self._out_dims(h, w)))]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        x = inputs[0]
        n, c, h, w = x.shape
        oh, ow = self._out_dims(h, w)
        (kh, kw), (sh, sw), (rh, rw) = self.sizes, self.strides, self.rates
        self.check_output((n, c * kh * kw, oh, ow), sig.outs[0], sig)
        rows = (
            np.arange(oh)[:, None] * sh + np.arange(kh)[None, :] * rh - _same_pad_before(h, rh, sh, kh, self.auto_pad)
        )
        cols = (
            np.arange(ow)[:, None] * sw + np.arange(kw)[None, :] * rw - _same_pad_before(w, rw, sw, kw, self.auto_pad)
        )
        # pad by enough zeros that every sampled position lands inside
        top, left = max(0, -int(rows.min(initial=0))), max(0, -int(cols.min(initial=0)))
        bottom, right = max(0, int(rows.max(initial=0)) + 1 - h), max(0, int(cols.max(initial=0)) + 1 - w)
        xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
        patches = xp[:, :, (rows + top)[:, :, None, None], (cols + left)[None, None, :, :]]  # N C oh kh ow kw
        out = patches.transpose(0, 3, 5, 1, 2, 4).reshape(n, kh * kw * c, oh, ow)
        return [np.ascontiguousarray(out)]


@register
class Col2Im(Op):
    """Col2Im-15: sliding blocks (N, C * kH * kW, L) back into an image (N, C, H, W) (or unbatched
    without N), overlapping values summed (torch's fold); L must be the number of blocks that
    output_size, kernel_size, strides, dilations and pads give. Sums in float64 (integers: 64
    bits), rounded once (OpenVINO's CPU plugin sums in the data's type). A kernel beyond the
    padded image gives no blocks (L = 0) and an image of zeros; OpenVINO's CPU plugin returned
    uninitialised memory there."""

    TYPE = "Col2Im"
    VERSIONS = (15,)
    INPUTS = (3, 3)
    strides = Attr("ints", (1, 1))
    dilations = Attr("ints", (1, 1))
    pads_begin = Attr("ints", (0, 0))
    pads_end = Attr("ints", (0, 0))

    def _check_attrs(self) -> None:
        for name in ("strides", "dilations", "pads_begin", "pads_end"):
            v = getattr(self, name)
            low = 0 if name.startswith("pads") else 1
            if len(v) != 2 or any(x < low for x in v):
                raise FormatError(f"{name}={list(v)} must be two integers >= {low}", self.where)

    def _blocks(self, size: list[int], kernel: list[int]) -> list[int]:
        out = []
        for d in range(2):
            span = size[d] + self.pads_begin[d] + self.pads_end[d] - self.dilations[d] * (kernel[d] - 1) - 1
            out.append(max(0, span // self.strides[d] + 1))  # none when the kernel exceeds the image
        return out

    def _pair(self, spec: TensorSpec, what: str) -> list[int] | None:
        v = const_ints(self, spec, what)
        if spec.shape is not None and spec.shape != (2,) and None not in spec.shape:
            raise ShapeInferenceError(f"{what} has shape {format_shape(spec.shape)}; [2] is required", self.where)
        return v

    def _check(self, shape: Shape, size: list[int] | None, kernel: list[int] | None, err=ShapeInferenceError):
        batched = len(shape) == 3
        if kernel is not None and any(k < 1 for k in kernel):
            raise err(f"kernel_size {kernel} must be positive", self.where)
        if size is not None and any(s < 0 for s in size):
            raise err(f"output_size {size} must be non-negative", self.where)
        c = shape[1 if batched else 0]
        channels = None
        if kernel is not None and c is not None:
            if c % (kernel[0] * kernel[1]):
                raise err(f"dim {c} is not divisible by the kernel's {kernel[0]} x {kernel[1]}", self.where)
            channels = c // (kernel[0] * kernel[1])
        blocks = shape[2 if batched else 1]
        if kernel is not None and size is not None and blocks is not None:
            want = self._blocks(size, kernel)
            if math.prod(want) != blocks:
                raise err(
                    f"data has {blocks} blocks; output_size {size} and kernel_size {kernel} give {want[0]} x {want[1]}",
                    self.where,
                )
        return channels

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        data = inputs[0]
        self.require_dtype(data, NUMBER_TYPES, "input 0 (data)")
        self._check_attrs()
        size, kernel = self._pair(inputs[1], "output_size"), self._pair(inputs[2], "kernel_size")
        if data.shape is None:
            return [TensorSpec(data.dtype, None)]
        if len(data.shape) not in (2, 3):
            raise ShapeInferenceError(f"data has shape {format_shape(data.shape)}; rank 2 or 3 is required", self.where)
        channels = self._check(data.shape, size, kernel)
        hw = (None, None) if size is None else tuple(size)
        lead = (data.shape[0],) if len(data.shape) == 3 else ()
        return [TensorSpec(data.dtype, (*lead, channels, *hw))]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        data = inputs[0]
        size = [int(v) for v in inputs[1].reshape(-1).tolist()]
        kernel = [int(v) for v in inputs[2].reshape(-1).tolist()]
        if len(size) != 2 or len(kernel) != 2:
            raise ExecutionError(f"output_size {size} and kernel_size {kernel} must have two values", self.where)
        x = data if data.ndim == 3 else data[None]
        channels = self._check(x.shape, size, kernel, ExecutionError)
        n = x.shape[0]
        self.check_output((n, channels, *size), sig.outs[0], sig)
        bh, bw = self._blocks(size, kernel)
        (kh, kw), (sh, sw), (dh, dw) = kernel, self.strides, self.dilations
        acc = np.float64 if x.dtype.kind == "f" else np.uint64 if x.dtype.kind == "u" else np.int64
        ph, pw = size[0] + self.pads_begin[0] + self.pads_end[0], size[1] + self.pads_begin[1] + self.pads_end[1]
        out = np.zeros((n, channels, ph, pw), acc)  # the blocks L counts lie inside the padded image
        cols = x.reshape(n, channels, kh, kw, bh, bw).astype(acc)
        for i in range(kh if bh and bw else 0):
            for j in range(kw):
                out[:, :, i * dh : i * dh + (bh - 1) * sh + 1 : sh, j * dw : j * dw + (bw - 1) * sw + 1 : sw] += cols[
                    :, :, i, j
                ]
        t, left = self.pads_begin
        result = out[:, :, t : t + size[0], left : left + size[1]]
        result = finish(np.ascontiguousarray(result), sig.outs[0])
        return [result if data.ndim == 3 else result[0]]
