"""Region-of-interest pooling with OpenVINO semantics: ROIPooling-2, ROIAlign-3/9,
ROIAlignRotated-15, PSROIPooling-1 and DeformablePSROIPooling-1 (the heads of Faster R-CNN,
Mask R-CNN and R-FCN).

The ops hold the semantics (attributes, element types, shapes, the run-time checks of batch
indices) and ask their family, `kernels/roi.py`, for the numbers: the formulas, OpenVINO's
float32 position steps and the float64 sums are written there.

What OpenVINO's reference implementation and its CPU plugin do at the edges, and which irexec
follows (checked against OpenVINO 2026.4; only ROIAlign-3 has a Python-reachable reference, the
others were read from the reference sources and run on the CPU plugin):

- Batch indices (ROIAlign's third input; the first ROI column elsewhere, truncated toward
  zero): the first ROI whose index is -1 ends the list, as in the CPU plugin (Proposal marks its
  first padding row with -1, and Faster R-CNN's ROIPooling receives it): that ROI and every
  later one give zeros (the CPU plugin zero-fills them, but for ROIAlign, which leaves them
  unwritten). The ROIs before it must have indices in [0, N): irexec raises an ExecutionError
  naming the first one outside. The reference throws for ROIPooling (-1 included, so it cannot
  run a padded Proposal output), reads out of bounds elsewhere, and DeformablePSROIPooling's
  skips each negative ROI alone; the CPU plugin reads out of bounds or throws.
- ROIAlign max mode is, in both the reference and the CPU plugin, the maximum of the bin's
  samples and 0 (the running maximum starts at 0, so an all-negative bin gives 0, not its
  largest sample), and a NaN sample is skipped. irexec follows them: a departure from a true
  maximum (and from ONNX Runtime's ROIAlign max, which takes the largest weighted corner).
- ROIAlign (asymmetric) stretches ROIs to at least 1x1 pixel; half_pixel modes do not, and an
  adaptive sampling ratio of a ROI whose end precedes its start (ceil of a bin size < -1) is
  negative: the reference asserts, the CPU plugin sizes a buffer from the negative count; irexec
  gives 0 there, as for a bin without samples.
- ROIPooling max: std::max keeps or drops a NaN by its position in the window in both; irexec
  propagates NaN (numpy's maximum, as irexec's MaxPool and ReduceMax).
- PSROIPooling average follows the CPU plugin (and R-FCN's Caffe layer it comes from), not the
  reference: the reference clamps each bin's start to the last pixel, so a bin outside the map
  averages the map's border pixel, and a ROI whose rounded end precedes its start divides 0 by 0;
  the CPU plugin clips bins to the map, gives 0 for an empty bin, takes the ROI end as
  round(x2 + 1) (the reference: round(x2) + 1, which differs at x2 = -0.5) and makes ROIs at
  least 0.1 wide. irexec: the CPU plugin's rules (they agree wherever the ROI is inside the map).
- PSROIPooling bilinear: the reference tests only the far edges of a point (x < W, y < H) and
  casts a negative position to size_t; the CPU plugin gives 0 for a point outside
  [0, W-1] x [0, H-1]. irexec: the CPU plugin's rule.
- ROIAlign avg with no samples in a bin (adaptive sampling of an empty half_pixel ROI): the
  reference gives 0, the CPU plugin NaN (0 times 1/0). irexec: 0.
- Zero ROIs give an empty output (the CPU plugin's ROIAlign throws "realRois must be greater
  than 0"). Non-finite ROI coordinates: NaN where ROIAlign interpolates them, 0 where a position
  test fails (bilinear ROIPooling and PSROIPooling, DeformablePSROIPooling), an ExecutionError
  where they must become pixel indices (max ROIPooling, average PSROIPooling) or an adaptive
  sample count (ROIAlign sampling_ratio=0); OpenVINO casts them to integers (undefined).
- Attributes and shapes: irexec requires what the opset spec says, where OpenVINO checks less:
  ROIAlign and ROIAlignRotated accept pooled sizes <= 0, a negative sampling_ratio and a
  spatial_scale <= 0; DeformablePSROIPooling accepts spatial_scale 0, spatial bins and
  part_size <= 0, input channels other than output_dim * group_size^2 (its kernels then read
  out of bounds) and offsets of any 4-D shape (read with part_size strides). irexec refuses
  them at load (FormatError, ShapeInferenceError) or, for dims known only at run time, when
  running (ExecutionError).
- Sample positions use OpenVINO's float32 steps (float64 for f64 data in ROIPooling and
  ROIAlign), so the same pixels are read; values are interpolated and averaged in float64 and
  rounded once, within a few float32 ulps of the CPU plugin.
"""

from __future__ import annotations

import math

import numpy as np

from ..dtypes import FLOAT_TYPES
from ..errors import ExecutionError, FormatError, ShapeInferenceError
from ..kernels import roi as family
from ..shapes import Dim, TensorSpec, format_shape
from .attrs import Attr
from .base import Op, Sig
from .common import AXES_TYPES, finish
from .registry import register


def _merge(a: Dim, b: Dim) -> Dim:
    return b if a is None else a


class _ROIBase(Op):
    """Shared checks: positive attributes, ranks and fixed dims, batch indices in range."""

    ROI_COLS = 5  # the second dim of the ROIs input

    def positive(self, **values) -> None:
        for name, v in values.items():
            if v <= 0:
                raise FormatError(f"attribute {name}={v} must be positive", self.where)

    def scale_ok(self, scale: float) -> None:
        if not (math.isfinite(scale) and scale > 0):
            raise FormatError(f"attribute spatial_scale={scale} must be a positive finite number", self.where)

    def rank(self, spec: TensorSpec, rank: int, what: str) -> None:
        if spec.shape is not None and len(spec.shape) != rank:
            raise ShapeInferenceError(
                f"{what} has shape {format_shape(spec.shape)}; rank {rank} is required", self.where
            )

    def dim(self, spec: TensorSpec, axis: int) -> Dim:
        return None if spec.shape is None else spec.shape[axis]

    def rois_spec(self, spec: TensorSpec) -> Dim:
        """Checks the ROIs input ([R, ROI_COLS]) and returns R."""
        self.rank(spec, 2, "input 1 (ROIs)")
        cols = self.dim(spec, 1)
        if cols is not None and cols != self.ROI_COLS:
            raise ShapeInferenceError(
                f"input 1 (ROIs) has shape {format_shape(spec.shape)}; its second dim must be {self.ROI_COLS}",
                self.where,
            )
        return self.dim(spec, 0)

    def check_rois(self, rois: np.ndarray) -> None:
        if rois.ndim != 2 or rois.shape[1] != self.ROI_COLS:
            raise ExecutionError(
                f"input 1 (ROIs) has shape {format_shape(rois.shape)}; [R,{self.ROI_COLS}] is required", self.where
            )

    def batch_of(self, ids: np.ndarray, n: int) -> np.ndarray:
        """The batch indices (truncated toward zero) of the ROIs before the first -1, OpenVINO's
        end of the list (Proposal marks its padding rows so), as int64, each in [0, n)."""
        ids = np.asarray(ids)
        whole = np.trunc(ids) if ids.dtype.kind == "f" else ids
        end = np.flatnonzero(whole == -1)
        ids = ids[: end[0] if len(end) else len(ids)]
        if ids.dtype.kind == "f":
            bad = ~np.isfinite(ids)
            if bad.any():
                r = int(np.flatnonzero(bad)[0])
                raise ExecutionError(f"ROI {r} has batch index {ids[r]}, not a number", self.where)
            ids = np.trunc(np.clip(ids, -(2.0**62), 2.0**62))
        ids = ids.astype(np.int64)
        bad = (ids >= n) | (ids < 0)
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            raise ExecutionError(
                f"ROI {r} has batch index {int(ids[r])}, outside the batch of {n} image(s)", self.where
            )
        return ids

    def finish_output(self, result: np.ndarray, sig: Sig, rows: int) -> list[np.ndarray]:
        """The result of the ROIs before the end marker, zero rows after them."""
        if result.shape[0] < rows:
            result = np.concatenate([result, np.zeros((rows - result.shape[0],) + result.shape[1:])])
        return [finish(np.ascontiguousarray(result), sig.outs[0])]

    def data_spec(self, spec: TensorSpec) -> None:
        self.require_dtype(spec, FLOAT_TYPES, "input 0 (data)")
        self.rank(spec, 4, "input 0 (data)")
        if spec.shape is not None and 0 in spec.shape[2:]:
            raise ShapeInferenceError(
                f"input 0 (data) has shape {format_shape(spec.shape)}: no pixel to pool from", self.where
            )

    def check_data(self, data: np.ndarray) -> None:
        if data.ndim != 4:
            raise ExecutionError(f"input 0 (data) has shape {format_shape(data.shape)}; rank 4 is required", self.where)
        if 0 in data.shape[2:]:
            raise ExecutionError(
                f"input 0 (data) has shape {format_shape(data.shape)}: no pixel to pool from", self.where
            )

    def finite_boxes(self, boxes: np.ndarray) -> None:
        """Coordinates that are rounded to pixel indices must be numbers."""
        bad = ~np.isfinite(boxes).all(axis=1)
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            raise ExecutionError(f"ROI {r} has a non-finite coordinate: {boxes[r].tolist()}", self.where)

    def run_family(self, fn, *args) -> np.ndarray:
        try:
            return fn(*args)
        except family.ROIError as e:
            raise ExecutionError(str(e), self.where) from None


def _coord_dtype(et: str):
    """The type OpenVINO computes ROIPooling and ROIAlign positions in: the data's (f16 and
    bf16 run in float32, as the CPU plugin runs them)."""
    return np.float64 if et == "f64" else np.float32


@register
class ROIPooling(_ROIBase):
    """ROIPooling-2: max pooling over each ROI's pooled_h x pooled_w integer bins, or bilinear
    sampling at pooled_h x pooled_w points of a ROI given in normalized coordinates."""

    TYPE = "ROIPooling"
    VERSIONS = (2,)
    INPUTS = (2, 2)
    pooled_h = Attr("int", None)
    pooled_w = Attr("int", None)
    output_size = Attr("ints", None)
    spatial_scale = Attr("float")
    method = Attr("str", "max", choices=("max", "bilinear"))

    def pooled(self) -> tuple[int, int]:
        """pooled_h/pooled_w, or the older output_size (OpenVINO reads both; the former win)."""
        size = list(self.output_size) if self.output_size is not None else [None, None]
        if len(size) != 2:
            raise FormatError(f"attribute output_size={self.output_size} must have 2 values", self.where)
        ph = self.pooled_h if self.pooled_h is not None else size[0]
        pw = self.pooled_w if self.pooled_w is not None else size[1]
        if ph is None or pw is None:
            raise FormatError("missing attribute 'pooled_h' or 'pooled_w'", self.where)
        self.positive(pooled_h=ph, pooled_w=pw)
        return ph, pw

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        data, rois = inputs
        ph, pw = self.pooled()
        self.scale_ok(self.spatial_scale)
        self.data_spec(data)
        self.require_same_dtype(inputs)
        r = self.rois_spec(rois)
        return [TensorSpec(data.dtype, (r, self.dim(data, 1), ph, pw))]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        data, rois = inputs
        self.check_data(data)
        self.check_rois(rois)
        ph, pw = self.pooled()
        self.check_output((rois.shape[0], data.shape[1], ph, pw), sig.outs[0], sig)
        batch = self.batch_of(rois[:, 0], data.shape[0])
        live = rois[: len(batch)]
        cdt = _coord_dtype(sig.ins[0])
        if self.method == "max":
            self.finite_boxes(live[:, 1:])
            out = family.roi_pool_max(data, live, batch, (ph, pw), self.spatial_scale, cdt)
        else:
            out = family.roi_pool_bilinear(data, live, batch, (ph, pw), cdt)
        return self.finish_output(out, sig, len(rois))


class _AlignBase(_ROIBase):
    """ROIAlign's and ROIAlignRotated's attributes and checks (data, ROIs, batch_indices)."""

    INPUTS = (3, 3)
    pooled_h = Attr("int")
    pooled_w = Attr("int")
    sampling_ratio = Attr("int")
    spatial_scale = Attr("float")

    def check_attrs(self) -> None:
        self.positive(pooled_h=self.pooled_h, pooled_w=self.pooled_w)
        if self.sampling_ratio < 0:
            raise FormatError(f"attribute sampling_ratio={self.sampling_ratio} must be 0 or more", self.where)
        self.scale_ok(self.spatial_scale)

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        data, rois, idx = inputs
        self.check_attrs()
        self.data_spec(data)
        self.require_same_dtype(inputs, (0, 1))
        self.require_dtype(idx, AXES_TYPES, "input 2 (batch_indices)")
        r = self.rois_spec(rois)
        self.rank(idx, 1, "input 2 (batch_indices)")
        k = self.dim(idx, 0)
        if r is not None and k is not None and r != k:
            raise ShapeInferenceError(
                f"input 1 (ROIs) has {r} rows but input 2 (batch_indices) has {k} values", self.where
            )
        return [TensorSpec(data.dtype, (_merge(r, k), self.dim(data, 1), self.pooled_h, self.pooled_w))]

    def run_checks(self, inputs: list[np.ndarray], sig: Sig) -> np.ndarray:
        data, rois, idx = inputs
        self.check_data(data)
        self.check_rois(rois)
        if idx.ndim != 1 or idx.shape[0] != rois.shape[0]:
            raise ExecutionError(
                f"input 2 (batch_indices) has shape {format_shape(idx.shape)}; [{rois.shape[0]}] is required",
                self.where,
            )
        self.check_output((rois.shape[0], data.shape[1], self.pooled_h, self.pooled_w), sig.outs[0], sig)
        return self.batch_of(idx, data.shape[0])

    def kernel(self):
        """The family's function and the arguments that follow the shared ones."""
        raise NotImplementedError

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        batch = self.run_checks(inputs, sig)
        data, rois, _ = inputs
        fn, extra = self.kernel()
        grid = (self.pooled_h, self.pooled_w)
        out = self.run_family(
            fn, data, rois[: len(batch)], batch, grid, self.sampling_ratio, self.spatial_scale, *extra,
            _coord_dtype(sig.ins[0]),
        )  # fmt: skip
        return self.finish_output(out, sig, len(rois))


@register
class ROIAlign3(_AlignBase):
    """ROIAlign-3: each bin the average (or the maximum with 0) of a grid of bilinear samples;
    sampling_ratio 0 picks ceil(bin size) samples per axis for each ROI."""

    TYPE = "ROIAlign"
    VERSIONS = (3,)
    ROI_COLS = 4
    KERNELS = ("detectron",)  # the averages' weighted sums (kernels/roi.py)
    mode = Attr("str", choices=("avg", "max"))

    def aligned(self) -> str:
        return "asymmetric"

    def kernel(self):
        return family.roi_align, (self.mode, self.aligned())


@register
class ROIAlign9(ROIAlign3):
    """ROIAlign-9: ROIAlign-3 plus aligned_mode: asymmetric (v3's), half_pixel_for_nn (the
    scaled ROI shifted by -0.5 pixel, no 1x1 minimum), half_pixel (shifted by +0.5 before the
    scaling and -0.5 after)."""

    VERSIONS = (9,)
    aligned_mode = Attr("str", "asymmetric", choices=("asymmetric", "half_pixel_for_nn", "half_pixel"))

    def aligned(self) -> str:
        return self.aligned_mode


@register
class ROIAlignRotated(_AlignBase):
    """ROIAlignRotated-15: ROIs [center_x, center_y, width, height, angle] (angle in radians,
    counterclockwise unless clockwise_mode); ROIAlign's averaging over a grid rotated about the
    ROI's center (the scaled center shifted by -0.5 pixel, no 1x1 minimum)."""

    TYPE = "ROIAlignRotated"
    VERSIONS = (15,)
    ROI_COLS = 5
    clockwise_mode = Attr("bool", False)

    def kernel(self):
        return family.roi_align_rotated, (self.clockwise_mode,)


@register
class PSROIPooling(_ROIBase):
    """PSROIPooling-1 (R-FCN): position-sensitive pooling; output [R, output_dim, group_size,
    group_size], each bin read from its own input channel. average: the bin's pixel mean
    (channels = output_dim * group_size^2); bilinear: the mean over spatial_bins_x x
    spatial_bins_y interpolated points (channels = output_dim * spatial_bins_x * spatial_bins_y)."""

    TYPE = "PSROIPooling"
    VERSIONS = (1,)
    INPUTS = (2, 2)
    output_dim = Attr("int")
    group_size = Attr("int", 1)
    spatial_scale = Attr("float")
    mode = Attr("str", "average", choices=("average", "bilinear"))
    spatial_bins_x = Attr("int", 1)
    spatial_bins_y = Attr("int", 1)

    def channels(self) -> int:
        if self.mode == "average":
            return self.output_dim * self.group_size * self.group_size
        return self.output_dim * self.spatial_bins_x * self.spatial_bins_y

    def check_channels(self, c: Dim, error) -> None:
        if c is not None and c != self.channels():
            parts = "group_size^2" if self.mode == "average" else "spatial_bins_x * spatial_bins_y"
            raise error(
                f"input 0 (data) has {c} channels; mode={self.mode} needs output_dim * {parts} = {self.channels()}",
                self.where,
            )

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        data, rois = inputs
        self.positive(output_dim=self.output_dim, group_size=self.group_size)
        if self.mode == "bilinear":
            self.positive(spatial_bins_x=self.spatial_bins_x, spatial_bins_y=self.spatial_bins_y)
        self.scale_ok(self.spatial_scale)
        self.data_spec(data)
        self.require_dtype(rois, FLOAT_TYPES, "input 1 (ROIs)")
        r = self.rois_spec(rois)
        self.check_channels(self.dim(data, 1), ShapeInferenceError)
        g = self.group_size
        return [TensorSpec(data.dtype, (r, self.output_dim, g, g))]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        data, rois = inputs
        self.check_data(data)
        self.check_rois(rois)
        self.check_channels(data.shape[1], ExecutionError)
        g = self.group_size
        self.check_output((rois.shape[0], self.output_dim, g, g), sig.outs[0], sig)
        batch = self.batch_of(rois[:, 0], data.shape[0])
        live = rois[: len(batch)]
        if self.mode == "average":
            self.finite_boxes(live[:, 1:])
            out = family.psroi_average(data, live, batch, self.output_dim, g, self.spatial_scale)
        else:
            bins = (self.spatial_bins_x, self.spatial_bins_y)
            out = family.psroi_bilinear(data, live, batch, self.output_dim, g, self.spatial_scale, bins)
        return self.finish_output(out, sig, len(rois))


@register
class DeformablePSROIPooling(_ROIBase):
    """DeformablePSROIPooling-1 (bilinear_deformable): PSROIPooling whose bins may move by the
    optional offsets input [R, 2 * classes, part_size, part_size] (x then y per class, times
    trans_std, in ROI widths and heights); each bin averages spatial_bins_x x spatial_bins_y
    interpolated sub-bin corners. Input channels = output_dim * group_size^2."""

    TYPE = "DeformablePSROIPooling"
    VERSIONS = (1,)
    INPUTS = (2, 3)
    output_dim = Attr("int")
    spatial_scale = Attr("float")
    group_size = Attr("int", 1)
    mode = Attr("str", "bilinear_deformable", choices=("bilinear_deformable",))
    spatial_bins_x = Attr("int", 1)
    spatial_bins_y = Attr("int", 1)
    trans_std = Attr("float", 1.0)
    part_size = Attr("int", 1)

    def check_channels(self, c: Dim, error) -> None:
        need = self.output_dim * self.group_size * self.group_size
        if c is not None and c != need:
            raise error(f"input 0 (data) has {c} channels; output_dim * group_size^2 = {need} is required", self.where)

    def check_offsets(self, shape, rois: Dim, error) -> None:
        """offsets [R, 2k, part_size, part_size] with k dividing output_dim."""
        if shape is None:
            return
        r, k2, ph, pw = shape
        bad = (r is not None and rois is not None and r != rois) or any(
            d is not None and d != self.part_size for d in (ph, pw)
        )
        if k2 is not None:
            bad = bad or k2 < 2 or k2 % 2 or self.output_dim % (k2 // 2)
        if bad:
            raise error(
                f"input 2 (offsets) has shape {format_shape(tuple(shape))}; [{'?' if rois is None else rois},2*k,"
                f"{self.part_size},{self.part_size}] with k dividing output_dim={self.output_dim} is required",
                self.where,
            )

    def infer(self, inputs: list[TensorSpec]) -> list[TensorSpec]:
        data, rois = inputs[:2]
        self.positive(
            output_dim=self.output_dim,
            group_size=self.group_size,
            spatial_bins_x=self.spatial_bins_x,
            spatial_bins_y=self.spatial_bins_y,
            part_size=self.part_size,
        )
        self.scale_ok(self.spatial_scale)
        if not math.isfinite(self.trans_std):
            raise FormatError(f"attribute trans_std={self.trans_std} must be a finite number", self.where)
        self.data_spec(data)
        for i, what in ((1, "input 1 (ROIs)"), (2, "input 2 (offsets)"))[: len(inputs) - 1]:
            self.require_dtype(inputs[i], FLOAT_TYPES, what)
        r = self.rois_spec(rois)
        self.check_channels(self.dim(data, 1), ShapeInferenceError)
        if len(inputs) == 3:
            self.rank(inputs[2], 4, "input 2 (offsets)")
            self.check_offsets(inputs[2].shape, r, ShapeInferenceError)
        g = self.group_size
        return [TensorSpec(data.dtype, (r, self.output_dim, g, g))]

    def compute(self, inputs: list[np.ndarray], sig: Sig) -> list[np.ndarray]:
        data, rois = inputs[:2]
        offsets = inputs[2] if len(inputs) == 3 else None
        self.check_data(data)
        self.check_rois(rois)
        self.check_channels(data.shape[1], ExecutionError)
        if offsets is not None:
            if offsets.ndim != 4:
                raise ExecutionError(
                    f"input 2 (offsets) has shape {format_shape(offsets.shape)}; rank 4 is required", self.where
                )
            self.check_offsets(offsets.shape, rois.shape[0], ExecutionError)
        g = self.group_size
        self.check_output((rois.shape[0], self.output_dim, g, g), sig.outs[0], sig)
        live = len(self.batch_of(rois[:, 0], data.shape[0]))
        out = family.deformable_psroi(
            data,
            rois[:live],
            None if offsets is None else offsets[:live],
            self.output_dim,
            g,
            self.spatial_scale,
            (self.spatial_bins_x, self.spatial_bins_y),
            self.trans_std,
            self.part_size,
        )
        return self.finish_output(out, sig, len(rois))
