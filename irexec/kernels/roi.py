"""The ROI pooling family's numerics: ROIPooling, ROIAlign, ROIAlignRotated,
PSROIPooling and DeformablePSROIPooling, as OpenVINO's reference implementations define them
(src/core/reference/include/openvino/reference/{roi_pooling,roi_align,psroi_pooling,
deformable_psroi_pooling}.hpp), but for PSROIPooling's bins and bounds, which follow its CPU
plugin (ops/roi.py says where and why).

Precision: where a sample's position decides which pixels are read (a floor, a ceil, a round, a
range test), the position is computed with OpenVINO's own float32 steps in its order (float64 for
f64 data in ROIPooling and ROIAlign, whose reference computes in the data's type), so that the
same pixels are read; the interpolation and the sums over samples are computed in float64 and
rounded once by the op. The batch index of each ROI is checked by the op before these run.

Vectorization: one Python iteration per ROI at most (ROIPooling bilinear and
DeformablePSROIPooling take blocks of ROIs at once, PSROIPooling average all ROIs through a
summed-area table, ROIAlign with a fixed sampling_ratio too, its averages on the detectron
family's kernel once it pays: `_align_fixed`); within it every bin, sample and channel is one
numpy expression. Working arrays are bounded by CHUNK elements: ROIs, bin rows and sample rows
are taken in blocks.
"""

from __future__ import annotations

import numpy as np

from . import jit

CHUNK = 1 << 21  # elements of a working array (16 MiB of float64)


def round_half_away(v: np.ndarray) -> np.ndarray:
    """std::round: halves away from zero (exact for float32 values, computed in float64)."""
    v = np.asarray(v, np.float64)
    return np.trunc(v + np.copysign(0.5, v))


def channels_last(data: np.ndarray) -> np.ndarray:
    """(N, C, H, W) -> float64 (N, H*W, C): one gather reads every channel of a pixel."""
    n, c, h, w = data.shape
    return np.ascontiguousarray(np.moveaxis(data, 1, -1), dtype=np.float64).reshape(n, h * w, c)


# ---- ROIPooling ----------------------------------------------------------------------------------


def roi_pool_max(data, rois, batch, pooled, scale, cdt) -> np.ndarray:
    """ROIPooling method=max: each bin's maximum over its integer window of the ROI (rounded
    to pixels, at least 1x1); an empty window (outside the map) gives 0."""
    n, c, h, w = data.shape
    ph, pw = pooled
    coords = np.clip(round_half_away(rois[:, 1:5].astype(cdt) * cdt(scale)), -(2.0**31), 2.0**31).astype(np.int64)
    out = np.empty((len(rois), c, ph, pw), np.float64)
    for r in range(len(rois)):
        x0, y0, x1, y1 = coords[r].tolist()
        hs, he = _pool_bins(y0, max(y1 - y0 + 1, 1), ph, h, cdt)
        ws, we = _pool_bins(x0, max(x1 - x0 + 1, 1), pw, w, cdt)
        out[r] = bin_reduce(np.maximum, data[batch[r]], hs, he, ws, we, -np.inf, 0.0)
    return out


def bin_reduce(ufunc, plane, hs, he, ws, we, identity: float, empty: float) -> np.ndarray:
    """`ufunc` reduced over each bin [hs, he) x [ws, we) of plane (C, H, W), in float64:
    (C, len(hs), len(ws)); a bin with no pixel gives `empty`. Reads only the rows and columns
    the bins cover (one reduceat per axis)."""
    c = plane.shape[0]
    out = np.full((c, len(hs), len(ws)), empty)
    rows = he > hs
    cols = we > ws
    if not rows.any() or not cols.any():
        return out
    h0, h1 = int(hs[rows].min()), int(he[rows].max())
    w0, w1 = int(ws[cols].min()), int(we[cols].max())
    crop = np.full((c, h1 - h0 + 1, w1 - w0 + 1), identity)  # one more row and column: reduceat's end
    crop[:, :-1, :-1] = plane[:, h0:h1, w0:w1]
    part = ufunc.reduceat(crop, _pairs(hs[rows] - h0, he[rows] - h0), axis=1)[:, ::2]
    part = ufunc.reduceat(part, _pairs(ws[cols] - w0, we[cols] - w0), axis=2)[:, :, ::2]
    out[np.ix_(np.arange(c), np.flatnonzero(rows), np.flatnonzero(cols))] = part
    return out


def _pool_bins(start: int, length: int, pooled: int, size: int, cdt) -> tuple[np.ndarray, np.ndarray]:
    """The [begin, end) pixel range of each bin along one axis: floor(i*b) and ceil((i+1)*b)
    with b = length/pooled in OpenVINO's float steps, shifted by the ROI start, clipped to
    [0, size]."""
    b = cdt(length) / cdt(pooled)
    i = np.arange(pooled, dtype=cdt)
    lo = np.floor(i * b).astype(np.float64) + start
    hi = np.ceil((i + 1) * b).astype(np.float64) + start
    return _index(lo, size), _index(hi, size)


def _index(v: np.ndarray, size: int) -> np.ndarray:
    """Whole float positions clipped to [0, size], as int64 (clipped first: no overflow; NaN,
    from an overflowing ROI size times 0, reads as 0)."""
    return np.clip(np.nan_to_num(v, nan=0.0), 0, size).astype(np.int64)


def _pairs(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """reduceat indices whose even results are the reductions over the non-empty [lo, hi)."""
    return np.stack([lo, hi], axis=1).reshape(-1)


def roi_pool_bilinear(data, rois, batch, pooled, cdt) -> np.ndarray:
    """ROIPooling method=bilinear: ROI coordinates normalized to [0, 1]; pooled_h x pooled_w
    points spread over the ROI (its center when pooled is 1), each interpolated from its floor
    and ceil neighbours; a point outside [0, size-1] gives 0."""
    n, c, h, w = data.shape
    ph, pw = pooled
    flat = data.reshape(-1)
    box = rois[:, 1:5].astype(cdt)
    ys = _bilinear_axis(box[:, 1], box[:, 3], ph, h, cdt)  # (R, ph)
    xs = _bilinear_axis(box[:, 0], box[:, 2], pw, w, cdt)  # (R, pw)
    out = np.empty((len(rois), c, ph, pw), np.float64)
    step = max(1, CHUNK // max(1, 4 * ph * pw * c))
    chan = np.arange(c)[None, :, None, None]
    for s in range(0, len(rois), step):
        sl = slice(s, s + step)
        y = ys[sl, None, :, None]
        x = xs[sl, None, None, :]
        inside = (y >= 0) & (y <= cdt(h - 1)) & (x >= 0) & (x <= cdt(w - 1))
        yy, xx = np.where(inside, y, 0), np.where(inside, x, 0)
        base = (batch[sl, None, None, None] * c + chan) * (h * w)
        vals = lerp_floor_ceil(flat, base, h, w, yy, xx, clip=True)
        out[sl] = np.where(inside, vals, 0.0)
    return out


def _bilinear_axis(lo, hi, pooled: int, size: int, cdt) -> np.ndarray:
    """ROIPooling bilinear's point positions along one axis, (R, pooled), in OpenVINO's steps."""
    m = cdt(size - 1)
    if pooled == 1:
        return (cdt(0.5) * (lo + hi) * m)[:, None]
    scale = (hi - lo) * m / cdt(pooled - 1)
    i = np.arange(pooled, dtype=cdt)
    pos = i[None, :] * scale[:, None] + (lo * m)[:, None]
    pos[:, -1] = m * hi  # the last point is the ROI's end, exactly
    return pos


def lerp_floor_ceil(flat, base, h: int, w: int, y, x, clip: bool) -> np.ndarray:
    """Bilinear interpolation of points (y, x) in [0, size-1] between their floor and ceil
    neighbours (the ceil clipped to the map when `clip`), read from the flat data at
    base + pixel (base broadcasts against the points: batch and channel offsets). float64."""
    top = np.floor(y).astype(np.int64)
    left = np.floor(x).astype(np.int64)
    bottom = np.ceil(y).astype(np.int64)
    right = np.ceil(x).astype(np.int64)
    if clip:
        bottom, right = np.minimum(bottom, h - 1), np.minimum(right, w - 1)
    dy = np.abs(y - top.astype(y.dtype)).astype(np.float64)
    dx = np.abs(x - left.astype(x.dtype)).astype(np.float64)

    def at(row, col):
        return flat[base + row * w + col].astype(np.float64)

    upper = at(top, left) + (at(top, right) - at(top, left)) * dx
    lower = at(bottom, left) + (at(bottom, right) - at(bottom, left)) * dx
    return upper + (lower - upper) * dy


# ---- ROIAlign and ROIAlignRotated ----------------------------------------------------------------


def align_corners(y: np.ndarray, x: np.ndarray, h: int, w: int) -> tuple[np.ndarray, np.ndarray]:
    """ROIAlign's bilinear rule for sample points: 4 flat pixel indices and 4 float64 weights per
    point (..., 4). A point beyond [-1, size] reads nothing (weights 0); one below 0 is read at
    0; one at or past size-1 is read at size-1. A NaN position gives NaN weights."""
    nan = np.isnan(y) | np.isnan(x)
    out = (y < -1) | (y > h) | (x < -1) | (x > w) | nan
    y = np.where(out, 0, np.maximum(y, 0))
    x = np.where(out, 0, np.maximum(x, 0))
    y0 = np.minimum(y.astype(np.int64), h - 1)
    x0 = np.minimum(x.astype(np.int64), w - 1)
    y1 = np.minimum(y0 + 1, h - 1)
    x1 = np.minimum(x0 + 1, w - 1)
    ly = np.where(y0 >= h - 1, 0, y - y0.astype(y.dtype)).astype(np.float64)
    lx = np.where(x0 >= w - 1, 0, x - x0.astype(x.dtype)).astype(np.float64)
    hy, hx = 1.0 - ly, 1.0 - lx
    idx = np.stack([y0 * w + x0, y0 * w + x1, y1 * w + x0, y1 * w + x1], axis=-1)
    wts = np.stack([hy * hx, hy * lx, ly * hx, ly * lx], axis=-1)
    wts = np.where(out[..., None], 0.0, wts)
    wts = np.where(nan[..., None], np.nan, wts)
    return idx, wts


def _samples(start, bin_size, count: int, dist, pooled: int, cdt) -> np.ndarray:
    """Sample positions along one axis of one ROI, (pooled, count), in OpenVINO's float steps:
    start + bin*i + dist*(j + 0.5)."""
    i = np.arange(pooled, dtype=cdt)[:, None]
    j = np.arange(count, dtype=cdt)[None, :]
    return (start + i * bin_size) + dist * (j + cdt(0.5))


def _pool_samples(img, idx, wts, mode: str) -> np.ndarray:
    """Sample values (bins..., S, C) pooled over S: the sum (avg), or (max) the largest value
    and 0, as OpenVINO's reference starts its maximum at 0 and skips NaN samples. idx and wts
    are (bins..., S, 4): the 4 corners of each sample."""
    bins, (s, k) = idx.shape[:-2], idx.shape[-2:]
    gathered = img[idx.reshape(-1, s * k)]  # (B, S*4, C)
    if mode == "max":
        w = wts.reshape(-1, s, 1, k)
        vals = np.matmul(w, gathered.reshape(-1, s, k, gathered.shape[-1]))[:, :, 0]  # (B, S, C)
        out = np.fmax.reduce(vals, axis=1, initial=0.0)
    else:
        out = np.matmul(wts.reshape(-1, 1, s * k), gathered)[:, 0]
    return out.reshape(bins + (gathered.shape[-1],))


class ROIError(ValueError):
    """A ROI the family cannot sample (its message names the ROI); the op reports it."""


MAX_SAMPLES = 1 << 16  # adaptive samples per bin and axis (a bin 65536 pixels wide)


def sample_count(r: int, bin_size, ratio: int) -> int:
    """Samples per bin along one axis: `ratio`, or (0, adaptive) ceil(bin size), as OpenVINO."""
    if ratio:
        return ratio
    v = float(np.ceil(bin_size))
    if not np.isfinite(v) or v > MAX_SAMPLES:
        raise ROIError(
            f"ROI {r} has bins {float(bin_size)} pixels wide: no adaptive sample count (at most {MAX_SAMPLES})"
        )
    return int(v)


def _pool_grid(img, ys, xs, place, mode: str, size: tuple[int, int]) -> np.ndarray:
    """One ROI's bins (ph, pw, C), pooled over its sample grid: ys (ph, sy) and xs (pw, sx)
    are the grid's positions, `place(py, px)` maps them to image (y, x) (the identity, or a
    rotation). Blocks of bin rows and of sample rows bound the working arrays."""
    h, w = size
    (ph, sy), (pw, sx), c = ys.shape, xs.shape, img.shape[-1]
    out = np.zeros((ph, pw, c))  # the sum, or the maximum (which starts at 0 as OpenVINO's)
    per_sample_row = 4 * pw * sx * max(c, 1)
    q_step = max(1, min(sy, CHUNK // per_sample_row))
    p_step = max(1, CHUNK // (per_sample_row * q_step))
    for p in range(0, ph, p_step):
        for q in range(0, sy, q_step):
            py, px = np.broadcast_arrays(ys[p : p + p_step, None, q : q + q_step, None], xs[None, :, None, :])
            y, x = place(py, px)
            idx, wts = align_corners(y, x, h, w)
            k = y.shape[:2] + (y.shape[2] * sx, 4)
            part = _pool_samples(img, idx.reshape(k), wts.reshape(k), mode)
            if mode == "max":
                np.fmax(out[p : p + p_step], part, out=out[p : p + p_step])
            else:
                out[p : p + p_step] += part
    return out if mode == "max" else out / (sy * sx)


def roi_align(data, boxes, batch, pooled, ratio: int, scale: float, mode: str, aligned: str, cdt) -> np.ndarray:
    """ROIAlign-3/9 (avg or max over a grid of bilinear samples per bin)."""
    n, c, h, w = data.shape
    ph, pw = pooled
    off_src = cdt(0.5) if aligned == "half_pixel" else cdt(0)
    off_dst = cdt(-0.5) if aligned in ("half_pixel", "half_pixel_for_nn") else cdt(0)
    b = (boxes.astype(cdt) + off_src) * cdt(scale) + off_dst
    width, height = b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]
    if aligned == "asymmetric":
        width, height = np.maximum(width, cdt(1)), np.maximum(height, cdt(1))
    bw, bh = width / cdt(pw), height / cdt(ph)
    if ratio > 0 and len(boxes) and ph * pw * ratio * ratio * 4 * max(c, 1) <= CHUNK:
        return _align_fixed(data, b, bw, bh, batch, pooled, ratio, mode, cdt)
    img = channels_last(data)
    out = np.zeros((len(boxes), ph, pw, c), np.float64)
    for r in range(len(boxes)):
        sx, sy = sample_count(r, bw[r], ratio), sample_count(r, bh[r], ratio)
        if sx <= 0 or sy <= 0:
            continue  # no samples: the bin stays 0
        ys = _samples(b[r, 1], bh[r], sy, bh[r] / cdt(sy), ph, cdt)  # (ph, sy)
        xs = _samples(b[r, 0], bw[r], sx, bw[r] / cdt(sx), pw, cdt)  # (pw, sx)
        out[r] = _pool_grid(img[batch[r]], ys, xs, lambda py, px: (py, px), mode, (h, w))
    return np.moveaxis(out, 3, 1)


def _align_fixed(data, b, bw, bh, batch, pooled, ratio: int, mode: str, cdt) -> np.ndarray:
    """`roi_align`'s result (R, C, ph, pw) when every ROI takes `ratio` x `ratio` samples a bin and
    one ROI's samples fit one working array: blocks of ROIs at once, each bin pooled as
    `_pool_grid` pools it in one block (the same positions, in the same float steps, the same
    products and sums: its bits), without a Python iteration per ROI. Averages take the kernel
    of `detectron_loops` when `jit.use` says it pays: each bin's terms summed in float64 one after
    another where the numpy path's matmul sums them in BLAS's order (equal to float64 roundings),
    straight from the map's channel rows in its own type (no float64 copy, no gathered array;
    torchvision's Faster R-CNN box head, 1000 ROIs x 7x7 bins x 16 terms x 256 channels)."""
    n, c, h, w = data.shape
    ph, pw = pooled
    samples = ratio * ratio
    terms = len(b) * ph * pw * samples * 4 * c
    if mode == "avg" and data.dtype in (np.float32, np.float64) and c:
        from .detectron import FAMILY, SAVING_PER_TERM

        if jit.use(terms * data.itemsize, terms * SAVING_PER_TERM, FAMILY):
            from . import detectron_loops as kl

            rows = np.ascontiguousarray(np.moveaxis(data, 1, -1)).reshape(n * h * w, c)
            idx, wts = _fixed_corners(b, bw, bh, batch, slice(None), pooled, ratio, (h, w), cdt)
            out = np.empty((len(b), c, ph, pw))  # straight into (R, C, ph, pw): no transposition
            bins = len(b) * ph * pw
            args = (rows, idx.reshape(bins, -1), wts.reshape(bins, -1), float(samples), out.reshape(len(b), c, -1))
            jit.parallel_for(kl.weighted_rows, bins, jit.threads_for(terms * 8), *args)
            return out
    flat = channels_last(data).reshape(n * h * w, c)
    out = np.empty((len(b), ph, pw, c))
    step = max(1, CHUNK // (ph * pw * samples * 4 * max(c, 1)))
    for r0 in range(0, len(b), step):
        sl = slice(r0, r0 + step)
        part = _pool_samples(flat, *_fixed_corners(b, bw, bh, batch, sl, pooled, ratio, (h, w), cdt), mode)
        start = np.zeros(part.shape)  # as `_pool_grid`'s bins start: 0 (+0.0 + -0.0 is +0.0)
        out[sl] = np.fmax(start, part) if mode == "max" else (start + part) / samples
    return np.moveaxis(out, 3, 1)


def _fixed_corners(b, bw, bh, batch, sl: slice, pooled, ratio: int, size, cdt):
    """(flat pixel indices into every image's pixels, float64 weights), each (R, ph, pw,
    ratio * ratio, 4): the samples of ROIs `sl` of `_align_fixed`, in `_pool_grid`'s float steps
    and order."""
    (ph, pw), (h, w) = pooled, size
    ry, rx = b[sl, 1, None, None], b[sl, 0, None, None]
    by, bx = bh[sl, None, None], bw[sl, None, None]
    ys = _samples(ry, by, ratio, by / cdt(ratio), ph, cdt)  # (R, ph, ratio)
    xs = _samples(rx, bx, ratio, bx / cdt(ratio), pw, cdt)  # (R, pw, ratio)
    y, x = np.broadcast_arrays(ys[:, :, None, :, None], xs[:, None, :, None, :])
    idx, wts = align_corners(y, x, h, w)
    k = y.shape[:3] + (ratio * ratio, 4)
    offset = (batch[sl].astype(np.int64) * (h * w))[:, None, None, None, None]  # the ROI's image
    return idx.reshape(k) + offset, wts.reshape(k)


def roi_align_rotated(data, boxes, batch, pooled, ratio: int, scale: float, clockwise: bool, cdt) -> np.ndarray:
    """ROIAlignRotated-15: ROIAlign's averaging over a grid rotated about the ROI's center
    (boxes [cx, cy, w, h, angle in radians]; counterclockwise unless `clockwise`)."""
    n, c, h, w = data.shape
    ph, pw = pooled
    img = channels_last(data)
    b = boxes.astype(cdt)
    cx = b[:, 0] * cdt(scale) - cdt(0.5)
    cy = b[:, 1] * cdt(scale) - cdt(0.5)
    width, height = b[:, 2] * cdt(scale), b[:, 3] * cdt(scale)
    angle = -b[:, 4] if clockwise else b[:, 4]
    cos, sin = np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)
    bw, bh = width / cdt(pw), height / cdt(ph)
    out = np.zeros((len(boxes), ph, pw, c), np.float64)
    for r in range(len(boxes)):
        sx, sy = sample_count(r, bw[r], ratio), sample_count(r, bh[r], ratio)
        if sx <= 0 or sy <= 0:
            continue
        ys = _samples(-height[r] / cdt(2), bh[r], sy, bh[r] / cdt(sy), ph, cdt)  # (ph, sy)
        xs = _samples(-width[r] / cdt(2), bw[r], sx, bw[r] / cdt(sx), pw, cdt)  # (pw, sx)

        def place(py, px, r=r):
            y = (py * cos[r] - px * sin[r] + cy[r]).astype(np.float32)
            x = (py * sin[r] + px * cos[r] + cx[r]).astype(np.float32)
            return y, x

        out[r] = _pool_grid(img[batch[r]], ys, xs, place, "avg", (h, w))
    return np.moveaxis(out, 3, 1)


# ---- PSROIPooling and DeformablePSROIPooling -----------------------------------------------------


def psroi_average(data, rois, batch, output_dim: int, group: int, scale: float) -> np.ndarray:
    """PSROIPooling mode=average, as R-FCN's Caffe layer and OpenVINO's CPU plugin compute it:
    the ROI rounded to pixels (end = round(x2 + 1)), scaled, at least 0.1 wide; bin (i, j) of
    output channel k averages input channel (k*group + i)*group + j over the pixels
    [floor(start + i*bin), ceil(start + (i+1)*bin)) clipped to the map; an empty bin gives 0.

    Each input channel feeds one bin, so the sums come from a summed-area table (float64, built
    once, four reads per bin) when the data is finite; with an infinity or NaN (whose
    differences would spread to other bins) from the bins' own pixels."""
    f = np.float32
    n, c, h, w = data.shape
    box = rois[:, 1:5].astype(f)
    x0 = round_half_away(box[:, 0]).astype(f) * f(scale)
    y0 = round_half_away(box[:, 1]).astype(f) * f(scale)
    x1 = round_half_away(box[:, 2] + f(1)).astype(f) * f(scale)
    y1 = round_half_away(box[:, 3] + f(1)).astype(f) * f(scale)
    bw = np.maximum(x1 - x0, f(0.1)) / f(group)
    bh = np.maximum(y1 - y0, f(0.1)) / f(group)
    hs, he = _ps_bins(y0[:, None], bh[:, None], group, h)  # (R, G)
    ws, we = _ps_bins(x0[:, None], bw[:, None], group, w)
    area = np.maximum((he - hs)[:, :, None] * (we - ws)[:, None, :], 1)  # (R, G, G)
    channels = np.arange(output_dim * group * group).reshape(output_dim, group, group)
    if np.isfinite(data).all():
        table = np.zeros((n, c, h + 1, w + 1))
        np.cumsum(np.cumsum(data, axis=2, dtype=np.float64), axis=3, out=table[:, :, 1:, 1:])
        b = batch[:, None, None, None]
        ch = channels[None]
        y_0, y_1 = hs[:, None, :, None], he[:, None, :, None]
        x_0, x_1 = ws[:, None, None, :], we[:, None, None, :]
        sums = table[b, ch, y_1, x_1] - table[b, ch, y_0, x_1] - table[b, ch, y_1, x_0] + table[b, ch, y_0, x_0]
        return sums / area[:, None]
    out = np.empty((len(rois), output_dim, group, group), np.float64)
    i, j = np.meshgrid(np.arange(group), np.arange(group), indexing="ij")
    for r in range(len(rois)):
        sums = bin_reduce(np.add, data[batch[r]], hs[r], he[r], ws[r], we[r], 0.0, 0.0)  # (C, G, G)
        out[r] = sums[channels, i, j] / area[r]
    return out


def _ps_bins(start, bin_size, group: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """PSROIPooling average's pixel range [begin, end) of each bin along one axis, float32
    steps: floor(i*bin + start) and ceil((i+1)*bin + start), clipped to [0, size]."""
    f = np.float32
    i = np.arange(group, dtype=f)  # broadcasts against start and bin_size
    return _index(np.floor(i * bin_size + start), size), _index(np.ceil((i + f(1)) * bin_size + start), size)


def psroi_bilinear(data, rois, batch, output_dim: int, group: int, scale: float, bins: tuple[int, int]) -> np.ndarray:
    """PSROIPooling mode=bilinear: output (k, i, j) averages, over the spatial bins (by, bx),
    input channel (by*bins_x + bx)*output_dim + k interpolated at one point of sub-bin (by, bx)
    (spread over it by (i, j)); points outside [0, size-1] count as 0 (as in the CPU plugin)."""
    n, c, h, w = data.shape
    bx_n, by_n = bins
    f = np.float32
    flat = data.reshape(-1)
    box = rois[:, 1:5].astype(f) * f(scale)
    out = np.empty((len(rois), output_dim, group, group), np.float64)
    k = np.arange(output_dim)[:, None, None, None, None]
    byi = np.arange(by_n)[None, None, None, :, None]
    bxi = np.arange(bx_n)[None, None, None, None, :]
    chan = (byi * bx_n + bxi) * output_dim + k  # (K, 1, 1, by, bx)
    for r in range(len(rois)):
        y = _ps_points(box[r, 1], box[r, 3], group, by_n, h)[None, :, None, :, None]  # (1, G, 1, by, 1)
        x = _ps_points(box[r, 0], box[r, 2], group, bx_n, w)[None, None, :, None, :]  # (1, 1, G, 1, bx)
        inside = (y >= 0) & (y <= f(h - 1)) & (x >= 0) & (x <= f(w - 1))
        yy, xx = np.where(inside, y, 0), np.where(inside, x, 0)
        vals = lerp_floor_ceil(flat, (batch[r] * c + chan) * (h * w), h, w, yy, xx, clip=True)
        out[r] = np.where(inside, vals, 0.0).sum(axis=(-2, -1)) / (by_n * bx_n)
    return out


def _ps_points(lo, hi, group: int, nbins: int, size: int) -> np.ndarray:
    """PSROIPooling bilinear's point positions along one axis: (group, nbins) float32."""
    f = np.float32
    bin_size = (hi - lo) / f(nbins)
    start = lo + np.arange(nbins, dtype=f) * bin_size  # (nbins,)
    m = f(size - 1)
    if group > 1:
        step = bin_size * m / f(group - 1)
        return np.arange(group, dtype=f)[:, None] * step + (start * m)[None, :]
    return ((start + start + bin_size) * m / f(2))[None, :]


def deformable_psroi(data, rois, offsets, output_dim: int, group: int, scale: float, bins, trans_std, part):
    """DeformablePSROIPooling-1 (bilinear_deformable): bin (i, j) of output channel k averages
    input channel (k*group + i)*group + j at bins_y x bins_x sub-bin corners of the bin, moved
    by the offsets (times trans_std, in ROI sizes) when given; sub-bins outside
    [-0.5, size-0.5] are skipped (no sub-bin: 0), others are clamped to the map and
    interpolated. ROIs with a negative batch index give 0."""
    n, c, h, w = data.shape
    bx_n, by_n = bins
    f = np.float32
    r_n = len(rois)
    box = round_half_away(rois[:, 1:5].astype(f)).astype(f)
    x0 = box[:, 0] * f(scale) - f(0.5)
    y0 = box[:, 1] * f(scale) - f(0.5)
    x1 = (box[:, 2] + f(1)) * f(scale) - f(0.5)
    y1 = (box[:, 3] + f(1)) * f(scale) - f(0.5)
    rw = np.maximum(x1 - x0, f(0.1))
    rh = np.maximum(y1 - y0, f(0.1))
    bw, bh = rw / f(group), rh / f(group)
    g = np.arange(group, dtype=f)
    shape = (r_n, output_dim, group, group)
    bx1 = np.broadcast_to((x0[:, None] + g[None, :] * bw[:, None])[:, None, None, :], shape)
    by1 = np.broadcast_to((y0[:, None] + g[None, :] * bh[:, None])[:, None, :, None], shape)
    if offsets is not None:
        dx, dy = _offsets(offsets, output_dim, group, part, trans_std)
        bx1 = bx1 + dx * rw[:, None, None, None]
        by1 = by1 + dy * rh[:, None, None, None]
    sbw = (bw / f(bx_n))[:, None, None, None, None, None]
    sbh = (bh / f(by_n))[:, None, None, None, None, None]
    sub_x = bx1[..., None, None] + np.arange(bx_n, dtype=f)[None, :] * sbw  # (R, K, G, G, 1, bx)
    sub_y = by1[..., None, None] + np.arange(by_n, dtype=f)[:, None] * sbh  # (R, K, G, G, by, 1)
    legit = (sub_y >= -0.5) & (sub_y <= f(h) - f(0.5)) & (sub_x >= -0.5) & (sub_x <= f(w) - f(0.5))
    yy = np.where(legit, np.clip(sub_y, f(0), f(h - 1)), f(0))  # NaN positions are not legit
    xx = np.where(legit, np.clip(sub_x, f(0), f(w - 1)), f(0))
    batch = rois[:, 0].astype(np.int64)
    chan = np.arange(output_dim * group * group).reshape(1, output_dim, group, group, 1, 1)
    base = (np.maximum(batch, 0)[:, None, None, None, None, None] * c + chan) * (h * w)
    out = np.zeros(shape, np.float64)
    step = max(1, CHUNK // max(1, 4 * output_dim * group * group * bx_n * by_n))
    for s in range(0, r_n, step):
        sl = slice(s, s + step)
        vals = lerp_floor_ceil(data.reshape(-1), base[sl], h, w, yy[sl], xx[sl], clip=False)
        count = legit[sl].sum(axis=(-2, -1))
        total = np.where(legit[sl], vals, 0.0).sum(axis=(-2, -1))
        mean = total / np.maximum(count, 1)
        out[sl] = np.where((count > 0) & (batch[sl, None, None, None] >= 0), mean, 0.0)
    return out


def _offsets(offsets, output_dim: int, group: int, part: int, trans_std: float):
    """The (x, y) offset of every (ROI, output channel, bin), times trans_std: (R, K, G, G) each."""
    classes = offsets.shape[1] // 2
    cls = np.arange(output_dim) // (output_dim // classes)  # (K,)
    cell = (np.arange(group) * part) // group  # the part cell of each bin
    off = offsets.astype(np.float32)
    t = np.float32(trans_std)
    ox = off[:, 2 * cls][:, :, cell][:, :, :, cell]
    oy = off[:, 2 * cls + 1][:, :, cell][:, :, :, cell]
    return ox * t, oy * t
