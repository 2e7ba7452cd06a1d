"""The convolution family's dispatch: an op asks "convolve x (N, C, *spatial) with these filters
over this `geometry.Window`"; the family picks the algorithm, numpy or numba, and the threads.

- A pointwise window (1x1..., unit strides, no pads) is one matrix product over the channels;
  a 1x1... window at strides > 1 without pads, the same product over the positions it reads.
- Other float32 2-D convolutions with overlapping windows (pads >= 0) keep their sums in
  registers, 8 output channels by 32 positions a tile (4 by 16 where vectors hold 8 floats),
  from the padded input dealt into its stride phases (`_simd`); grouped ones of up to 8 groups,
  group by group (`_direct_groups`).
  ResNet-18 at 224x224: its 3x3 convolutions 0.08-0.13 -> 0.05-0.07 ms a layer (about 25 us of
  it the tiles), its 7x7 stem 0.55 ms on two threads -> 0.33 on one.
- float64 dense convolutions of few input channels and few output channels (image stems) sum
  their taps straight from the input's stride phases, without columns (`_direct`); grouped ones
  whose groups are such convolutions, group by group (`_direct_groups`).
- Dense and grouped convolutions are im2col times the filters on BLAS, in float32 (float64 for
  f64). At unit strides (2-D) the columns are whole runs of the padded plane, one copy per tap,
  with output rows as wide as the padded input's, cropped after the product (`_flat_columns`,
  the numba kernel, and `_numpy_flat_columns`: the same columns, the same bits; 3x3 over
  1x16x28x28 110 -> 85 us with the kernels). Otherwise, 2-D float data with pads >= 0 builds
  its columns with the numba kernel of `conv_loops`
  straight from the unpadded input when `jit.use` says it pays (one call instead of a padded
  copy and a slice copy per tap); otherwise a padded copy and one strided slice copy per tap.
  The columns are laid out (N, C*K, M), so W (Cout, C*K) @ columns is already (N, Cout, M).
- Depthwise convolutions (one input and one output channel per group) sum the kernel taps of
  shifted strided views, without an im2col copy (2-D: the numba kernel once it pays, the same
  sums in the same order, without a temporary per tap).
- Transposed convolution scatters each tap's product into a strided slice of the output; the
  grouped form does the same with one batched product over the groups per tap.

float16 data computes in float32; results come in the compute type and the op rounds once.
"""

from __future__ import annotations

import functools
import itertools
import math
import weakref

import numpy as np

from .. import blas, config
from ..geometry import Window
from . import jit
from .windows import compute_type, pad_constant

FAMILY = "conv"  # its name in jit.FAMILIES
# the numpy paths' fixed cost per call that a kernel saves: im2col's slice copy per tap, the
# depthwise loop's temporary per tap
IM2COL_CALL_SAVING = 30e-6
# a tile's columns (`_tiled`): within the L2 cache
TILE_BYTES = 1 << 19
DEPTHWISE_TAP_SAVING = 10e-6
# the depthwise kernel's work per byte (each plane copied or dealt into scratch planes, then each
# output element once per tap) against a streaming read (jit.threads_for): two threads from
# about 0.4 ms (measured: 3x3 stride 2 over 1x96x112x112 0.75 -> 0.55 ms, 7x7 over 1x96x56x56
# 0.93 -> 0.59; 3x3 over 1x576x14x14, 0.18 ms, is no faster on two)
DEPTHWISE_COST = 2.0
# float32 depthwise convolutions run 16 planes at a time, one a lane (`conv_loops.depthwise_lanes`;
# the planes past the last 16, plane by plane), but at unit strides over planes of more than this
# many outputs, whose long rows the plane by plane kernels sum as fast (us, one process, medians, plane by plane against lanes: 960 planes of
# 7x7 226 / 61, 576 of 14x14 197 / 87, 576 of 14x14 at stride 2 134 / 51, 1152 of 7x7 5x5 290 /
# 135, 144 of 56x56 at stride 2 226 / 177, 96 of 112x112 at stride 2 517 / 443; unit strides:
# 144 of 56x56 371 / 369, 32 of 112x112 313 / 352)
LANES_MAX_UNIT_OUT = 56 * 56


def filters(w: np.ndarray, dtype) -> np.ndarray:
    """The filters in the data's compute type, without a copy when they already are."""
    return compute_type(w).astype(dtype, copy=False)


def _pad_input(x: np.ndarray, pads) -> np.ndarray:
    """x padded by the positive pads and cropped by the negative ones."""
    widths = [(0, 0), (0, 0)] + [(max(0, b), max(0, e)) for b, e in pads]
    if any(w != (0, 0) for w in widths):
        x = pad_constant(x, widths, 0.0)
    crop = (slice(None), slice(None)) + tuple(
        slice(max(0, -b), x.shape[2 + i] - max(0, -e)) for i, (b, e) in enumerate(pads)
    )
    return x[crop]


def _kernel_columns(x: np.ndarray, win: Window) -> np.ndarray | None:
    """The columns (N, C*K, M) of a 2-D convolution with pads >= 0 by the numba im2col, or None
    when the kernels do not pay or the case is not that one (pointwise, negative pads)."""
    if len(win.kernel) != 2 or x.dtype not in (np.float32, np.float64) or x.ndim != 4 or not x.size:
        return None
    if win.pointwise or any(b < 0 or e < 0 for b, e in win.pads) or any(o <= 0 for o in win.out):
        return None
    kk = math.prod(win.kernel)
    if not jit.use(x.nbytes * kk, IM2COL_CALL_SAVING, FAMILY):
        return None
    from . import conv_loops as k

    n, c = x.shape[:2]
    cols = np.empty((n * c, *win.kernel, *win.out), x.dtype)
    planes = np.ascontiguousarray(x).reshape(n * c, *x.shape[2:])
    jit.parallel_for(k.im2col2d, n * c, jit.threads_for(cols.nbytes), planes, cols, win.plane, 0)
    return cols.reshape(n, c * kk, math.prod(win.out))


def _runs_case(x: np.ndarray, win: Window) -> bool:
    """A 2-D unit-stride convolution of known, non-empty output (not pointwise): the case whose
    columns are runs of the padded plane (`_flat_columns`, `_numpy_flat_columns`)."""
    return (
        len(win.kernel) == 2
        and x.ndim == 4
        and x.size > 0
        and not win.pointwise
        and all(s == 1 for s in win.strides)
        and all(o is not None and o > 0 for o in win.out)
    )


def _flat_columns(x: np.ndarray, win: Window) -> tuple[np.ndarray, int] | None:
    """(columns (N, C*K, OH*Wp), Wp) of a 2-D unit-stride convolution with pads >= 0 by
    `conv_loops.im2col_flat`: output rows as wide as the padded input's (Wp), so each tap's
    columns are one contiguous run of the padded plane; the product's rows are then cropped to
    OW. None when the case is not that one or the kernels do not pay."""
    if not _runs_case(x, win) or x.dtype not in (np.float32, np.float64) or any(b < 0 or e < 0 for b, e in win.pads):
        return None
    kk = math.prod(win.kernel)
    if not jit.use(x.nbytes * kk, IM2COL_CALL_SAVING, FAMILY):
        return None
    from . import conv_loops as k

    n, c, h, wd = x.shape
    g = win.plane
    wp = wd + g.pl + g.pr
    cols = np.empty((n * c, *win.kernel, win.out[0] * wp), x.dtype)
    planes = np.ascontiguousarray(x).reshape(n * c, h, wd)
    jit.parallel_for(k.im2col_flat, n * c, jit.threads_for(cols.nbytes), planes, cols, g)
    return cols.reshape(n, c * kk, win.out[0] * wp), wp


def _numpy_flat_columns(x: np.ndarray, win: Window) -> tuple[np.ndarray, int] | None:
    """`_flat_columns` in numpy, for the same cases with any pads (a negative one crops): the
    input padded once, then one slice copy per tap of whole runs. The same columns, so the same
    product and the same bits as the kernel's; None when the case is not a 2-D unit-stride one."""
    if not _runs_case(x, win):
        return None
    xp = _pad_input(compute_type(x), win.pads)
    n, c, hp, wp = xp.shape
    (kh, kw), (dh, dw), (oh, _) = win.kernel, win.dilations, win.out
    length = oh * wp
    flat = np.zeros((n, c, hp * wp + (kw - 1) * dw), xp.dtype)
    flat[:, :, : hp * wp] = xp.reshape(n, c, hp * wp)
    cols = np.empty((n, c, kh, kw, length), xp.dtype)
    for a in range(kh):
        for b in range(kw):
            cols[:, :, a, b] = flat[:, :, a * dh * wp + b * dw : a * dh * wp + b * dw + length]
    return cols.reshape(n, c * kh * kw, length), wp


def _tiled(x: np.ndarray, w: np.ndarray, win: Window) -> np.ndarray | None:
    """A 2-D convolution (pads >= 0, one group) whose columns would outgrow the L2 cache, by
    tiles of output rows: each task builds one tile's columns with the numba im2col (TILE_BYTES)
    and multiplies it by the filters into its rows of the output, the tasks on the kernel
    threads (the products on one BLAS thread each). None when the case is not that one or the
    kernels do not pay. (ResNet's 7x7 stem at 224x224: 7.4 MB of columns written and read
    back, 1.4 ms; by tiles 0.65 ms.)"""
    if len(win.kernel) != 2 or x.ndim != 4 or x.dtype not in (np.float32, np.float64):
        return None
    n, c = x.shape[:2]
    (kh, kw), (oh, ow) = win.kernel, win.out
    ck = c * kh * kw
    # the size first: most convolutions of small maps stop here, at the cost of a product
    if oh is None or ow is None or n * ck * oh * ow * x.itemsize <= 2 * TILE_BYTES:
        return None
    if win.pointwise or any(b < 0 or e < 0 for b, e in win.pads) or oh <= 0 or ow <= 0:
        return None
    if not jit.use(x.nbytes * kh * kw, IM2COL_CALL_SAVING, FAMILY):
        return None
    from . import conv_loops as k

    rows = max(1, min(oh, TILE_BYTES // (ck * ow * x.itemsize)))
    tiles = -(-oh // rows)
    planes = np.ascontiguousarray(x)
    wm = np.ascontiguousarray(filters(w, x.dtype).reshape(w.shape[0], ck))
    out = np.empty((n, w.shape[0], oh * ow), x.dtype)
    plane = win.plane

    def task(t_lo: int, t_hi: int) -> None:
        buf = np.empty(ck * rows * ow, x.dtype)  # one per chunk of tiles: fresh pages cost
        for t in range(t_lo, t_hi):
            b, tile = divmod(t, tiles)
            i0 = tile * rows
            r = min(rows, oh - i0)
            cols = buf[: ck * r * ow].reshape(c, kh, kw, r, ow)
            k.im2col2d(0, c, planes[b], cols, plane, i0)
            np.matmul(wm, cols.reshape(ck, r * ow), out=out[b, :, i0 * ow : (i0 + r) * ow])

    flops = 2.0 * n * w.shape[0] * ck * oh * ow
    threads = (
        jit.num_threads() if flops >= config.BLAS_SPLIT_FLOPS > 0 else jit.threads_for(n * ck * oh * ow * x.itemsize)
    )
    with blas.one_thread():
        jit.parallel_for(task, n * tiles, threads)
    return out.reshape(n, w.shape[0], oh, ow)


# channels in and out from which a 3x3 convolution whose columns outgrow the cache runs as
# Winograd's F(2x2, 3x3) (`_winograd`): below, its 16 products are too thin
WINOGRAD_MIN_CHANNELS = 32
# constant filters' transforms by the filters' identity: (a weak reference to them, the
# transform); an entry goes with its filters (a model's constants), never holding them itself
_WINOGRAD_FILTERS: dict = {}


def _winograd(x: np.ndarray, w: np.ndarray, win: Window) -> np.ndarray | None:
    """A 3x3 float32 convolution at stride 1 (pads >= 0, no dilation) of constant filters and at
    least WINOGRAD_MIN_CHANNELS channels in and out, whose columns would outgrow the cache
    (`_tiled`'s case), by Winograd's F(2x2, 3x3): each 2x2 block of outputs from its 4x4 input
    patch, transformed (`conv_loops.winograd_input`), 16 products of the transformed filters
    (G g G^T, in float64, rounded once) by the patches (`blas.matmul`: batch items on the
    kernel threads), and the products' 4x4 blocks transformed back (`winograd_output`): 16
    multiply-adds per output and input channel where the direct sum takes 36. The transforms
    add, subtract and halve: the sums round differently from the direct one's, within a few
    units of its rounding (tests/test_conv_kernels.py). ResNet-50 at 224x224, one process, the
    products alone against the columns' path: 0.48-0.62 of its time at every stage."""
    if len(win.kernel) != 2 or x.ndim != 4 or x.dtype != np.float32 or w.dtype != np.float32:
        return None
    if win.kernel != (3, 3) or win.strides != (1, 1) or win.dilations != (1, 1) or w.flags.writeable:
        return None
    n, c, h, wd = x.shape
    (oh, ow), c_out = win.out, w.shape[0]
    if oh is None or ow is None or oh <= 0 or ow <= 0 or any(b < 0 or e < 0 for b, e in win.pads):
        return None
    if min(c, c_out) < WINOGRAD_MIN_CHANNELS or n * c * 9 * oh * ow * x.itemsize <= 2 * TILE_BYTES:
        return None
    if not jit.use(x.nbytes * 9, IM2COL_CALL_SAVING, FAMILY):
        return None
    from . import conv_loops as k

    u = _winograd_filters(w)
    th, tw = -(-oh // 2), -(-ow // 2)
    (pt, _), (pl, _) = win.pads
    xp = np.zeros((n, c, 2 * th + 2, 2 * tw + 2), np.float32)
    rows, cols = min(h, 2 * th + 2 - pt), min(wd, 2 * tw + 2 - pl)
    xp[:, :, pt : pt + rows, pl : pl + cols] = x[:, :, :rows, :cols]
    v = np.empty((16, c, n * th * tw), np.float32)
    # the transforms on the threads the products take (`blas.split`)
    flops = 32.0 * c_out * v.shape[1] * v.shape[2]
    threads = jit.num_threads() if flops >= config.BLAS_SPLIT_FLOPS > 0 else jit.threads_for(v.nbytes)
    jit.parallel_for(k.winograd_input, c, threads, xp, v, th, tw)
    m = blas.matmul(u, v)
    out = np.empty((n, c_out, oh, ow), np.float32)
    jit.parallel_for(k.winograd_output, c_out, threads, m, out, th, tw)
    return out


def _winograd_filters(w: np.ndarray) -> np.ndarray:
    """G g G^T of the 3x3 filters w (Cout, C, 3, 3) as (16, Cout, C) float32, i * 4 + j first:
    computed in float64 and rounded once, kept for read-only filters by identity while they
    live."""
    hit = _WINOGRAD_FILTERS.get(id(w))
    if hit is not None and hit[0]() is w:
        return hit[1]
    g = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])
    u = np.einsum("ik,ockl,jl->ijoc", g, w.astype(np.float64), g).reshape(16, w.shape[0], w.shape[1])
    u = np.ascontiguousarray(u, np.float32)
    _WINOGRAD_FILTERS[id(w)] = (weakref.ref(w), u)
    weakref.finalize(w, _WINOGRAD_FILTERS.pop, id(w), None)
    return u


# a dense convolution of at most this many inputs per output (C * kh * kw) and output channels,
# with overlapping windows, runs without columns (`_direct`): the image stems of the zoo's
# networks (3 channels in, 8 out) and ResNet-18's first stage (8 in, 8 out). Measured against
# im2col and BLAS, one thread each, in ResNet-18 at 224x224: the 7x7 stride-2 stem 0.68 ->
# 0.54 ms, the 3x3 convolutions of 8 channels at 56x56 0.11 -> 0.07 ms; EfficientNet's 3x3
# stride-2 stem 0.23 -> 0.21. With 16 output channels the columns were as fast or faster (3x3
# over 16 channels at 28x28: 0.083 against 0.093 ms); a 4x4 window at stride 4 (ConvNeXt's
# patches, no overlap) 0.10 against 0.12, so those keep the columns
DIRECT_MAX_TAPS = 160
DIRECT_MAX_OUT = 8
# a direct convolution's work per multiply-add against streaming one float32 (jit.threads_for):
# from about 4e6 multiply-adds (0.2 ms on one core) its tasks take the kernel threads. ResNet's
# 7x7 stem at 224x224 (14.7e6) 0.74 -> 0.55 ms on two (the second core here computes about 1.5x
# slower than the first; measured in one process)
DIRECT_FMA_BYTES = 4


def _overlapping_case(x: np.ndarray, win: Window, dtypes) -> bool:
    """A 2-D convolution of x (N, C, H, W) of one of the dtypes, its output dims known and
    positive, pads >= 0, whose windows overlap (windows no larger than their strides copy each
    input once into columns: the product takes those): the case of the kernels without columns."""
    if len(win.kernel) != 2 or x.ndim != 4 or x.dtype not in dtypes or not x.size:
        return False
    (kh, kw), (sh, sw), (oh, ow) = win.kernel, win.strides, win.out
    if kh <= sh and kw <= sw:
        return False
    return oh is not None and ow is not None and oh > 0 and ow > 0 and all(b >= 0 and e >= 0 for b, e in win.pads)


def _direct(x: np.ndarray, w: np.ndarray, win: Window) -> np.ndarray | None:
    """A 2-D dense convolution of few inputs per output and few output channels (pads >= 0,
    overlapping windows) by the numba kernels: the input planes dealt into their stride phases,
    then four output channels at a time, tap by tap (`conv_loops.dense_phased`), on the threads
    `jit.threads_for` gives its multiply-adds (DIRECT_FMA_BYTES each; small ones on one: 3x3 to
    16 channels took 0.42 ms on two against 0.25 on one, with the thread pool of the time). None
    when the case is not that one or the kernels do not pay."""
    if not _overlapping_case(x, win, (np.float32, np.float64)):
        return None
    n, c, h, wd = x.shape
    (kh, kw), (sh, sw), (oh, ow) = win.kernel, win.strides, win.out
    if c * kh * kw > DIRECT_MAX_TAPS or w.shape[0] > DIRECT_MAX_OUT:
        return None
    if not jit.use(x.nbytes * kh * kw, IM2COL_CALL_SAVING, FAMILY):
        return None
    from . import conv_loops as k

    g = win.plane
    hp, wp = h + g.pt + g.pb, wd + g.pl + g.pr
    phases = np.zeros((n * c, sh, sw, -(-hp // sh), -(-wp // sw)), x.dtype)
    jit.parallel_for(k.deal_planes, n * c, 1, np.ascontiguousarray(x).reshape(n * c, h, wd), phases, g)
    out = np.empty((n, w.shape[0], oh, ow), x.dtype)
    wf = np.zeros((4 * -(-w.shape[0] // 4), c, kh, kw), x.dtype)  # four output channels a task
    wf[: w.shape[0]] = filters(w, x.dtype)
    tasks = k.dense_tasks(n, w.shape[0], oh, phases.shape[-1])
    threads = jit.threads_for(n * w.shape[0] * oh * ow * c * kh * kw * DIRECT_FMA_BYTES)
    jit.parallel_for(k.dense_phased, tasks, threads, phases.reshape(n, c, *phases.shape[1:]), wf, out, g)
    return out


# multiply-adds from which `_simd`'s tiles take two threads (about 0.25 ms of them on one)
SIMD_THREAD_FMAS = 16_000_000
# where vectors hold 8 floats, `_simd`'s narrow tiles take sums of at most this many terms (input
# channels a group times taps), or any with at most NARROW_SMALL_FMAS multiply-adds; longer
# sums over larger maps read more input planes and filters a tile than the L1 cache holds, and
# BLAS's blocked product is faster (a Zen 3, ms, tiles against the columns on BLAS: 3x3 32 -> 32
# over 56x56 0.80 / 0.85, over 112x112 5.4 / 5.5; 48 -> 48 over 28x28 0.48 / 0.36, 64 -> 64 over
# 14x14 0.24 / 0.20, 96 -> 96 over 14x14 0.66 / 0.39, 128 -> 32 over 28x28 1.02 / 0.82; small
# maps: 64 -> 64 over 7x7 0.078 / 0.115, 128 -> 32 over 7x7 0.098 / 0.159)
NARROW_MAX_TERMS = 320
NARROW_SMALL_FMAS = 4_000_000


def _tiles_fit() -> bool:
    """Whether the pointwise register tiles (`_pointwise`) may run: on 512-bit vectors
    (`jit.wide_vectors`; elsewhere BLAS is faster), asked once the family is loaded (before, the
    dispatch's `jit.use` decides, and the kernels give the same numbers on any machine)."""
    return not jit.ready(FAMILY) or jit.wide_vectors()


def _simd(x: np.ndarray, w: np.ndarray, win: Window, groups: int = 1) -> np.ndarray | None:
    """A dense float32 2-D convolution (pads >= 0) by `conv_loops.dense_simd`, its accumulators
    in registers: the input planes padded and dealt into their stride phases (`deal_flat`), then
    8 output channels by 32 positions a tile, every tap a contiguous run; output rows as wide as
    a phase plane, cropped (`crop_rows`). Where vectors hold 8 floats (`jit.wide_vectors`: AVX2)
    `dense_narrow`'s tiles of 4 channels by 16 positions instead, the same bits, for sums of at
    most NARROW_MAX_TERMS terms or small maps (NARROW_SMALL_FMAS); BLAS takes the others. The
    tiles go on two threads from SIMD_THREAD_FMAS multiply-adds (a 3x3 of 128 -> 128 channels
    over 28x28: 1.8 -> 1.2-1.4 ms, 256 -> 256 over 14x14 1.8 -> 1.1; 16 -> 32 at stride 2 over
    56x56, 3.6 M, took 0.10 ms on one thread and 0.15 on two). None when the case is not that one or the kernels do
    not pay, and for windows that do not overlap (strides as large as the window: ConvNeXt's
    2x2 stride-2 over 96 channels at 56x56 took 1.23 ms against the columns' 0.71; a 1x1 window
    is a product without columns: 8 -> 48 channels at 112x112 0.29 ms against BLAS's 0.19).
    Grouped (w (Cout, C/groups, kh, kw)): one call for every group, a group's channels a batch
    item of their own (RegNet's groups of 8 channels: 55 of them over 7x7 went as 55 products
    of their columns)."""
    plan = _simd_plan(x, w, win, groups)
    if plan is None:
        return None
    run, fmas = plan
    return run(x, jit.threads_for(fmas, config.THREAD_MIN_BYTES / SIMD_THREAD_FMAS))


def _simd_plan(x: np.ndarray, w: np.ndarray, win: Window, groups: int):
    """`_simd`'s decisions for x's shape and the filters w: (run(x, threads), its multiply-adds),
    or None when `_simd` does not take the case."""
    if not w.size or not _overlapping_case(x, win, (np.float32,)):
        return None
    if x.shape[1] % groups or w.shape[0] % groups or w.shape[1] * groups != x.shape[1]:
        return None
    n, c, h, wd = x.shape
    (kh, kw), (sh, sw), (oh, ow) = win.kernel, win.strides, win.out
    if not jit.use(x.nbytes * kh * kw, IM2COL_CALL_SAVING, FAMILY):
        return None
    c_out = w.shape[0]
    ig = c // groups
    fmas = n * c_out * oh * ow * ig * kh * kw
    wide = jit.wide_vectors()
    if not wide and ig * kh * kw > NARROW_MAX_TERMS and fmas > NARROW_SMALL_FMAS:
        return None
    from . import conv_loops as k

    g = win.plane
    width = -(-(wd + g.pl + g.pr) // sw)
    m = oh * width
    tiles = -(-m // k.TILE)
    length, taps = _simd_taps(win, -(-(h + g.pt + g.pb) // sh) * width, width, tiles * k.TILE)
    wk = np.ascontiguousarray(filters(w, np.float32).reshape(c_out, ig, kh * kw))
    kernel = k.dense_simd if wide else k.dense_narrow
    tasks = (k.simd_tasks if wide else k.narrow_tasks)(n, c_out, groups)
    cropped = not (width == ow and m == tiles * k.TILE)

    def run(x: np.ndarray, threads: int) -> np.ndarray:
        buf = np.zeros((n * c, sh * sw, length), np.float32)
        jit.call(k.deal_flat, 0, n * c, np.ascontiguousarray(x).reshape(n * c, h, wd), buf, g, width)
        out = np.empty((n, c_out, tiles * k.TILE), np.float32)
        planes = buf.reshape(n * groups, ig, sh * sw * length)
        jit.parallel_for(kernel, tasks, threads, planes, wk, taps, out.reshape(n * groups, c_out // groups, -1), groups)
        if not cropped:
            return out.reshape(n, c_out, oh, ow)
        y = np.empty((n, c_out, oh, ow), np.float32)
        jit.call(k.crop_rows, 0, n * c_out, out.reshape(n * c_out, -1), y.reshape(n * c_out, oh, ow), width)
        return y

    return run, fmas


@functools.lru_cache(maxsize=256)
def _simd_taps(win: Window, plane: int, width: int, positions: int) -> tuple[int, np.ndarray]:
    """(the length of one phase plane in `_simd`'s buffer, each tap's start in a channel's
    planes): a phase plane holds `plane` elements and reaches the last of `positions` output
    positions at every tap."""
    (kh, kw), (sh, sw), (dh, dw) = win.kernel, win.strides, win.dilations
    taps = [
        (((a * dh) % sh) * sw + (b * dw) % sw, (a * dh) // sh * width + (b * dw) // sw)
        for a in range(kh)
        for b in range(kw)
    ]
    length = max(plane, positions + max(off for _, off in taps))
    starts = np.array([phase * length + off for phase, off in taps], np.int64)
    return length, starts


# a grouped convolution of at most this many groups, each one `_direct` takes, runs group by group
# without columns: wav2vec2's positional convolution (4 groups of 8 channels in and out, 16 taps,
# over 1599 frames) 0.55 -> 0.30 ms, the same bits. (ResNeXt's 32 groups of 4 channels would pay
# `_direct`'s fixed cost 32 times a layer: they keep the columns.)
DIRECT_MAX_GROUPS = 8


def _direct_groups(x: np.ndarray, w: np.ndarray, win: Window, groups: int) -> np.ndarray | None:
    """A grouped convolution (w (Cout, C/groups, *k)) by `_direct`, group by group, or None
    when its groups are not a case `_direct` takes (float32 ones whose windows overlap went to
    the grouped `_simd` first)."""
    if x.ndim != 4 or x.shape[1] % groups or w.shape[0] % groups:
        return None
    ig, og = x.shape[1] // groups, w.shape[0] // groups
    parts = []
    for g in range(groups):
        xg, wg = x[:, g * ig : (g + 1) * ig], w[g * og : (g + 1) * og]
        y = _direct(xg, wg, win)
        if y is None:  # the first group already: every group is the same case
            return None
        parts.append(y)
    return np.concatenate(parts, axis=1)


# patches at least this wide: narrower ones (ConvNeXt's 4x4 stem and 2x2 downsampling) copy
# short runs, and their few output channels make a thin product; the columns path was faster
# (stem 157 against 188 us, (1, 8, 56, 56) by 2x2 into 16 channels 69 against 95)
PATCH_MIN_WIDTH = 8


def _patches(x: np.ndarray, w: np.ndarray, win: Window) -> np.ndarray | None:
    """A 2-D convolution whose windows tile the input (strides equal to the kernel, no pads, no
    dilation: ViT's patch embedding), or None for others. Its columns are the input's patches:
    rows (N, M, C*K) of patch pixels, each patch row kw contiguous floats of the input
    (`conv_loops.patch_rows`; numpy's transposing copy without the kernels), times the filters
    transposed, then the (M, Cout) result transposed. (1, 3, 224, 224) by 16x16 patches into
    32 channels, one thread: the columns 96 -> 34 us, the product 96 -> 88 (the filters times
    the columns' transpose, a view, took 150)."""
    if not _patches_case(x, win):
        return None
    x = compute_type(x)
    if x.dtype not in (np.float32, np.float64):
        return None
    wt = _patch_filters(w, x.dtype)
    return _patch_product(x, wt, win, jit.use(x.nbytes, IM2COL_CALL_SAVING, FAMILY), blas.matmul)


def _patch_filters(w: np.ndarray, dtype) -> np.ndarray:
    """The filters (Cout, C, kh, kw) as (C kh kw, Cout), contiguous: `_patches`' product's right side."""
    return np.ascontiguousarray(filters(w, dtype).reshape(w.shape[0], -1).T)


def _patches_case(x: np.ndarray, win: Window) -> bool:
    """Whether `_patches` takes the window (strides equal to the kernel, no pads, no dilation)."""
    if len(win.kernel) != 2 or x.ndim != 4 or not x.size or win.strides != win.kernel:
        return False
    if win.kernel[1] < PATCH_MIN_WIDTH or any(d != 1 for d in win.dilations) or not win.unpadded:
        return False
    return all(o is not None and o > 0 for o in win.out)


def _patch_product(x: np.ndarray, wt: np.ndarray, win: Window, kernels: bool, product) -> np.ndarray:
    """`_patches`' rows of x (by `conv_loops.patch_rows` when `kernels`, else numpy's copy) times
    the transposed filters wt by product(rows, wt), transposed to (N, Cout, OH, OW)."""
    (kh, kw), (oh, ow) = win.kernel, win.out
    n, c = x.shape[:2]
    rows = np.empty((n, oh * ow, c * kh * kw), x.dtype)
    if kernels:
        from . import conv_loops as k

        jit.parallel_for(k.patch_rows, n, 1, np.ascontiguousarray(x), rows, kh, kw)
    else:
        crop = x[:, :, : oh * kh, : ow * kw].reshape(n, c, oh, kh, ow, kw)
        rows.reshape(n, oh, ow, c, kh, kw)[...] = crop.transpose(0, 2, 4, 1, 3, 5)
    y = product(rows, wt)  # (N, M, Cout)
    return np.ascontiguousarray(np.swapaxes(y, -1, -2)).reshape(n, wt.shape[1], oh, ow)


def _patches_call(x: np.ndarray, w: np.ndarray, win: Window):
    """`convolution_call` for `_patches`' windows: the transposed filters kept, the rows by the
    kernel and the product's call decided once (`blas.product_call`); None before the kernels
    are loaded (the rows' numpy copy then runs) or for a product decided every call."""
    if not jit.ready(FAMILY):
        return None
    wt = _patch_filters(w, np.float32)
    (kh, kw), (oh, ow) = win.kernel, win.out
    prod = blas.product_call(np.broadcast_to(np.float32(0), (x.shape[0], oh * ow, x.shape[1] * kh * kw)), wt)
    if prod is None:
        return None

    def steady(x: np.ndarray) -> np.ndarray | None:
        return _patch_product(x, wt, win, True, prod) if jit.still_one_call(0) else None

    return steady


def _gemm(cols_all: np.ndarray, w: np.ndarray, out_sp, groups: int = 1) -> np.ndarray:
    """W (Cout, C/groups*K) @ columns (N, C*K, M) per group: (N, Cout, *out)."""
    n = cols_all.shape[0]
    c_out = w.shape[0]
    og = c_out // groups
    wm = w.reshape(c_out, -1)
    ck = wm.shape[1]
    if groups == 1:
        y = blas.matmul(wm, cols_all)
    else:
        y = np.empty((n, c_out, cols_all.shape[2]), np.result_type(wm, cols_all))
        for g in range(groups):
            blas.matmul(wm[g * og : (g + 1) * og], cols_all[:, g * ck : (g + 1) * ck], out=y[:, g * og : (g + 1) * og])
    return y.reshape(n, c_out, *out_sp)


def _numpy_columns(xp: np.ndarray, win: Window) -> np.ndarray:
    """(N, C*K, M) columns of the padded xp: the input itself for a pointwise window, else one
    strided slice copy per kernel tap (a 6-D transposed copy of the window view is several
    times slower)."""
    n, c = xp.shape[:2]
    m = math.prod(win.out)
    kk = math.prod(win.kernel)
    if kk == 1 and all(s == 1 for s in win.strides) and tuple(xp.shape[2:]) == tuple(win.out):
        return np.ascontiguousarray(xp).reshape(n, c, m)
    cols = np.empty((n, c, *win.kernel, *win.out), xp.dtype)
    for tap in itertools.product(*(range(t) for t in win.kernel)):
        src = tuple(
            slice(t * d, t * d + (o - 1) * s + 1, s) for t, d, o, s in zip(tap, win.dilations, win.out, win.strides)
        )
        cols[(slice(None), slice(None)) + tap] = xp[(slice(None), slice(None)) + src]
    return cols.reshape(n, c * kk, m)


def _height_one(x: np.ndarray, win: Window) -> bool:
    """A 1-D float convolution, which runs as a 2-D one of a height-1 map (`_as_2d`): the 2-D
    kernels and tiles take it."""
    return x.ndim == 3 and len(win.kernel) == 1 and not win.pointwise and x.dtype in (np.float32, np.float64)


def _as_2d(win: Window) -> Window:
    """A 1-D window as the 2-D window of a height-1 map: the 2-D kernels and tiles take it."""
    return Window((1, *win.kernel), (1, *win.strides), (1, *win.dilations), ((0, 0), *win.pads), (1, *win.out))


def _dense(x: np.ndarray, w: np.ndarray, win: Window) -> np.ndarray | None:
    """One group's convolution by the first path that takes it (patches, registers, direct
    taps, tiles of columns), or None for the columns of the whole input."""
    for path in (_patches, _simd, _direct, _winograd, _tiled):
        y = path(x, w, win)
        if y is not None:
            return y
    return None


# pointwise float32 convolutions of at most this many input channels run on
# `conv_loops.pointwise_simd`, more keep BLAS (one thread, medians of 40 calls, us, BLAS against
# the kernel: 16 -> 96 channels over 112x112 518 / 451, 24 -> 144 over 56x56 196 / 171, 144 -> 24
# 254 / 212, 96 -> 24 145 / 122, 64 -> 256 791 / 733; 256 -> 64 over 56x56 869 / 956 and 1024 ->
# 2048 over 14x14 5309 / 6165 lose: their inputs leave the L1 cache); and the kernel applies a
# following ReLU or clip as it stores, where BLAS's result takes a second pass
POINT_MAX_CIN = 160
# ... and of at least this many positions a batch item: below, BLAS's product is as fast or faster
# (us, BLAS against the kernel: 104 -> 104 channels over 28x28 129 / 125, 64 -> 64 over 14x14 16 /
# 22, 96 -> 96 over 7x7 13 / 17, squeeze-excitation's 52 -> 440 over 1x1 3.9 / 17.9)
POINT_MIN_POSITIONS = 512
# ... and of at least this many multiply-adds: below, the call's fixed cost and a part-empty block
# of 8 output channels lose (SqueezeNet's 16 -> 4 channels over 55x55, 0.19 M: 6.3 / 14.4 us;
# 16 -> 24 over 56x56, 1.2 M: 36 / 24)
POINT_MIN_FMAS = 1_000_000
# multiply-adds from which `_pointwise` takes two threads (one against two, us: 16 -> 96 channels
# over 112x112, 19 M, 440 / 402; 24 -> 144 over 56x56, 11 M, 165 / 188)
POINT_THREAD_FMAS = 16_000_000


def _pointwise(x: np.ndarray, wm: np.ndarray, relu: bool = False, bounds: tuple | None = None) -> np.ndarray | None:
    """The pointwise float32 convolution of x (N, C, *sp) with wm (Cout, C) by
    `conv_loops.pointwise_simd`, then, with `relu`, np.maximum(., 0), or clipped to `bounds`
    (float32 lo <= hi); None when the case is not one it takes or the kernels do not pay."""
    if x.dtype != np.float32 or wm.dtype != np.float32 or not x.size or not wm.size or wm.shape[1] > POINT_MAX_CIN:
        return None
    if x.size // (x.shape[0] * x.shape[1]) < POINT_MIN_POSITIONS or x.size * wm.shape[0] < POINT_MIN_FMAS:
        return None
    if not _tiles_fit() or not jit.use(x.nbytes, IM2COL_CALL_SAVING, FAMILY):
        return None
    from . import conv_loops as k

    n, c = x.shape[:2]
    m = x.size // (n * c)
    c_out = wm.shape[0]
    out = np.empty((n, c_out, m), np.float32)
    mode, lo, hi = (1, 0.0, 0.0) if relu else (0, 0.0, 0.0) if bounds is None else (2, *bounds)
    threads = jit.threads_for(n * m * c * c_out, config.THREAD_MIN_BYTES / POINT_THREAD_FMAS)
    jit.parallel_for(
        k.pointwise_simd,
        k.pointwise_tasks(n, m),
        threads,
        np.ascontiguousarray(x).reshape(n, c, m),
        np.ascontiguousarray(wm),
        out,
        mode,
        np.float32(lo),
        np.float32(hi),
    )
    return out.reshape((n, c_out) + x.shape[2:])


def _subsampled_case(x: np.ndarray, win: Window) -> bool:
    """Whether `_subsampled` takes the window."""
    return x.ndim >= 3 and all(k == 1 for k in win.kernel) and win.unpadded and not win.pointwise


def _subsampled(x: np.ndarray, win: Window) -> np.ndarray | None:
    """For a 1x1... window with strides > 1 and no pads (ResNet's projection shortcuts), the
    input positions it reads, contiguous: x[:, :, ::s, ::s], whose pointwise convolution is the
    result; None for other windows. (Medians, one process, im2col's columns on BLAS against
    this: 8 -> 16 channels from 56x56 40 / 22 us, 16 -> 32 from 28x28 70 / 28, 256 -> 512 from
    56x56 2.21 / 2.09 ms.)"""
    if not _subsampled_case(x, win):
        return None
    return np.ascontiguousarray(x[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in win.strides)])


def pointwise_then(x: np.ndarray, w: np.ndarray, win: Window, bounds: tuple | None) -> np.ndarray | None:
    """`convolution` of a 1x1... window (`_subsampled` at strides > 1) followed by
    np.clip(., *bounds) (float32 lo <= hi) or, for bounds None, ReLU (np.maximum(., 0)), both by
    the kernel as it stores; None when the kernel does not take it (the caller convolves, then
    activates)."""
    if x.ndim < 3 or w.ndim != x.ndim:
        return None
    if not win.pointwise:
        x = _subsampled(x, win)
        if x is None:
            return None
    return _pointwise(x, w.reshape(w.shape[0], w.shape[1]), relu=bounds is None, bounds=bounds)


def convolution(x: np.ndarray, w: np.ndarray, win: Window, groups: int = 1) -> np.ndarray:
    """x (N, C, *sp) convolved with the filters w (Cout, C/groups, *k): (N, Cout, *out)."""
    if _height_one(x, win):  # wav2vec2's positional convolution: 128 taps, 16 groups
        y = convolution(x[:, :, None], w[:, :, None], _as_2d(win), groups)
        return y.reshape(y.shape[0], y.shape[1], y.shape[3])
    sub = None
    if groups == 1 and x.ndim >= 3 and x.dtype != np.float16:
        sub = x if win.pointwise else _subsampled(x, win)
    if sub is not None:
        wm = w.reshape(w.shape[0], w.shape[1]).astype(x.dtype, copy=False)
        y = _pointwise(sub, wm)
        if y is not None:
            return y
        y = blas.matmul(wm, sub.reshape(sub.shape[0], sub.shape[1], -1))
        return y.reshape((sub.shape[0], w.shape[0]) + sub.shape[2:])
    if groups == 1:
        y = _dense(x, w, win)
        if y is not None:
            return y
    else:
        y = _simd(x, w, win, groups)
        if y is None and groups <= DIRECT_MAX_GROUPS:
            y = _direct_groups(x, w, win, groups)
        if y is not None:
            return y
    flat = _flat_columns(x, win)
    if flat is None:
        flat = _numpy_flat_columns(x, win)
    if flat is not None:
        cols, wp = flat
        y = _gemm(cols, filters(w, cols.dtype), (win.out[0], wp), groups)
        return np.ascontiguousarray(y[..., : win.out[1]])
    cols = _kernel_columns(x, win)
    if cols is None:
        xp = _pad_input(compute_type(x), win.pads)
        cols = _numpy_columns(xp, win)
    return _gemm(cols, filters(w, cols.dtype), win.out, groups)


def convolution_call(x: np.ndarray, w: np.ndarray, win: Window, groups: int = 1):
    """`convolution`'s path for float32 arrays of x's shape and the constant filters w as one
    function of x alone (`Op.steady`), where only they decide it and it runs on the calling
    thread: a pointwise product on BLAS (`_subsampled` first at strides > 1), `_simd`'s register
    tiles; None for the other paths (they decide every call). The function answers None while
    a thread forces or records the paths (`convolution` then runs)."""
    if _height_one(x, win) or x.dtype != np.float32 or w.dtype != np.float32 or x.ndim < 3:
        return None
    if groups == 1 and (win.pointwise or _subsampled_case(x, win)):
        return _pointwise_call(x, w, win)
    if groups == 1 and _patches_case(x, win):
        return _patches_call(x, w, win)
    plan = _simd_plan(x, w, win, groups)
    if plan is None or plan[1] >= SIMD_THREAD_FMAS:  # `_simd`'s second thread
        return None
    run = plan[0]

    def steady(x: np.ndarray) -> np.ndarray | None:
        return run(x, 1) if jit.still_one_call(0) else None

    return steady


def _pointwise_call(x: np.ndarray, w: np.ndarray, win: Window):
    """`convolution_call` for a 1x1... window: its product on BLAS as `convolution` runs it
    where the register tiles do not (`_tiles_fit`), the product's call decided once."""
    if _tiles_fit():
        return None
    cut = (slice(None), slice(None)) + tuple(slice(None, None, st) for st in win.strides)
    sp = x.shape[2:] if win.pointwise else x[cut].shape[2:]
    n, c, m = x.shape[0], x.shape[1], math.prod(sp)
    wm = w.reshape(w.shape[0], w.shape[1])
    prod = blas.product_call(wm, np.broadcast_to(np.float32(0), (n, c, m)))
    if prod is None:
        return None
    shape, pointwise = (n, w.shape[0]) + tuple(sp), win.pointwise

    def steady(x: np.ndarray) -> np.ndarray | None:
        if not jit.still_one_call(0):
            return None
        sub = x if pointwise else np.ascontiguousarray(x[cut])
        return prod(wm, sub.reshape(n, c, m)).reshape(shape)

    return steady


def group_convolution_call(x: np.ndarray, w: np.ndarray, win: Window):
    """`group_convolution`'s path as `convolution_call` gives it: the depthwise kernels, or the
    grouped register tiles, on the calling thread; None otherwise."""
    if _height_one(x, win) or x.dtype != np.float32 or w.dtype != np.float32:
        return None
    g = w.shape[0]
    if not (w.shape[1] == 1 and w.shape[2] == 1):
        return convolution_call(x, w.reshape((g * w.shape[1],) + w.shape[2:]), win, groups=g)
    plan = _depthwise_plan(x, w.reshape((g,) + w.shape[3:]), win)
    if plan is None:
        return None
    run, nbytes = plan
    work = int(nbytes * DEPTHWISE_COST)
    if work >= config.THREAD_MIN_BYTES:
        return None

    def steady(x: np.ndarray) -> np.ndarray | None:
        return run(x, 1) if jit.still_one_call(work) else None

    return steady


def _lanes_max_unit_out() -> int:
    """`LANES_MAX_UNIT_OUT`, a quarter of it where vectors hold 8 floats (`jit.wide_vectors`: a
    Zen 3, us, plane by plane against lanes: 144 planes of 56x56 662 / 844, 240 of 28x28 5x5 764
    / 621)."""
    return LANES_MAX_UNIT_OUT if jit.wide_vectors() else LANES_MAX_UNIT_OUT // 4


def _depthwise_kernel(x: np.ndarray, w: np.ndarray, win: Window) -> np.ndarray | None:
    """The 2-D depthwise convolution by the numba kernel (the same products and sums in the
    same order as the numpy path, without a temporary per tap; pads >= 0 are applied plane by
    plane inside it), or None when the numpy path should run."""
    plan = _depthwise_plan(x, w, win)
    if plan is None:
        return None
    run, work = plan
    return run(x, jit.threads_for(work, DEPTHWISE_COST))


def _depthwise_plan(x: np.ndarray, w: np.ndarray, win: Window):
    """`_depthwise_kernel`'s decisions for x's shape and type and the filters w: (run(x,
    threads), the bytes `jit.threads_for` weighs), or None when the numpy path should run."""
    kernel, out_sp = win.kernel, win.out
    if len(kernel) != 2 or x.ndim != 4 or not x.size or any(o <= 0 for o in out_sp):
        return None
    dtype = np.dtype(np.float32) if x.dtype == np.float16 else x.dtype
    if dtype not in (np.float32, np.float64):
        return None
    taps = math.prod(kernel)
    nbytes = x.size * dtype.itemsize
    if not jit.use(nbytes, DEPTHWISE_TAP_SAVING * taps, FAMILY):
        return None
    from . import conv_loops as k

    plane = win.plane
    crop = any(b < 0 or e < 0 for b, e in win.pads)  # a crop: pad and crop in numpy first
    if crop:
        plane = plane._replace(pt=0, pl=0, pb=0, pr=0)
    n, c = x.shape[:2]
    # float32: 16 planes a vector (`LANES_MAX_UNIT_OUT`); over larger planes at unit strides,
    # windows larger than 3x3 in registers plane by plane (`depthwise_simd`, measured on one plane
    # set each: 7x7 over 32x14x14 43 -> 26 us against `depthwise2d`), the 3x3 by `_unit33`
    # (8x112x112: 64 us against 94)
    wc = np.ascontiguousarray(filters(w, dtype))
    unit = all(st == 1 for st in win.strides)
    full = 0  # planes that go 16 at a time
    if dtype == np.float32 and (not unit or math.prod(out_sp) <= _lanes_max_unit_out()):
        full = n * c // k.LANES * k.LANES
    rest = n * c - full  # plane by plane, each with its channel's filter
    wr = np.ascontiguousarray(wc[np.arange(full, n * c) % c]) if full and rest else wc
    each = k.depthwise_simd if dtype == np.float32 and unit and taps > 9 else k.depthwise2d

    def run(x: np.ndarray, threads: int) -> np.ndarray:
        x = compute_type(x)
        if crop:
            x = _pad_input(x, win.pads)
        planes = np.ascontiguousarray(x).reshape(n * c, *x.shape[2:])
        out = np.empty((n * c, *out_sp), dtype)
        if full:
            jit.parallel_for(k.depthwise_lanes, k.lanes_tasks(full), threads, planes[:full], wc, out[:full], c, plane)
        if rest:
            jit.parallel_for(each, rest, threads, planes[full:], wr, out[full:], len(wr) if full else c, plane)
        return out.reshape(n, c, *out_sp)

    sp = [d + b + e for d, (b, e) in zip(x.shape[2:], win.pads)] if crop else x.shape[2:]
    return run, (n * c * math.prod(sp) + n * c * math.prod(out_sp) * taps) * dtype.itemsize


def _depthwise(x: np.ndarray, w: np.ndarray, win: Window) -> np.ndarray:
    """w (C, *k): out[n, c] = sum over taps of w[c, tap] * shifted strided view of xp[n, c]."""
    y = _depthwise_kernel(x, w, win)
    if y is not None:
        return y
    xp = _pad_input(compute_type(x), win.pads)
    w = filters(w, xp.dtype)
    n, c = xp.shape[:2]
    kernel, out_sp = win.kernel, win.out
    acc = np.zeros((n, c, *out_sp), np.float64 if xp.dtype == np.float64 else np.float32)
    for tap in itertools.product(*(range(k) for k in kernel)):
        sl = (slice(None), slice(None)) + tuple(
            slice(t * d, t * d + (o - 1) * s + 1, s) for t, d, o, s in zip(tap, win.dilations, out_sp, win.strides)
        )
        acc += xp[sl] * w[(slice(None),) + tap].reshape((1, c) + (1,) * len(kernel))
    return acc


def group_convolution(x: np.ndarray, w: np.ndarray, win: Window) -> np.ndarray:
    """x (N, C, *sp) convolved with the grouped filters w (G, Cout/G, Cin/G, *k)."""
    if _height_one(x, win):
        y = group_convolution(x[:, :, None], w[:, :, :, None], _as_2d(win))
        return y.reshape(y.shape[0], y.shape[1], y.shape[3])
    g = w.shape[0]
    if w.shape[1] == 1 and w.shape[2] == 1:
        return _depthwise(x, w.reshape((g,) + w.shape[3:]), win)
    w = filters(w, compute_type(x).dtype).reshape((g * w.shape[1],) + w.shape[2:])
    return convolution(x, w, win, groups=g)


def transposed(x: np.ndarray, w: np.ndarray, strides, dilations, pads_begin, out) -> np.ndarray:
    """Transposed convolution of x (N, Cin, *sp) with w (Cin, Cout, *k): every tap's product
    scattered into a strided slice of the full output, then cropped from `pads_begin` to `out`."""
    x = compute_type(x)
    w = compute_type(w).astype(x.dtype)
    kernel = w.shape[2:]
    n = x.shape[0]
    cout = w.shape[1]
    full = [(d - 1) * s + dl * (kk - 1) + 1 for d, s, dl, kk in zip(x.shape[2:], strides, dilations, kernel)]
    size = [max(f, b + o) + 1 for f, b, o in zip(full, pads_begin, out)]
    acc = np.zeros((n, cout, *size), np.float64 if x.dtype == np.float64 else np.float32)
    xt = np.moveaxis(x, 1, -1)  # (N, *sp, Cin)
    for tap in itertools.product(*(range(k) for k in kernel)):
        contrib = blas.matmul(xt, w[(slice(None), slice(None)) + tap])  # (N, *sp, Cout)
        sl = (slice(None), slice(None)) + tuple(
            slice(t * dl, t * dl + (d - 1) * s + 1, s) for t, dl, d, s in zip(tap, dilations, x.shape[2:], strides)
        )
        acc[sl] += np.moveaxis(contrib, -1, 1)
    crop = (slice(None), slice(None)) + tuple(slice(b, b + o) for b, o in zip(pads_begin, out))
    return np.ascontiguousarray(acc[crop])


def group_transposed(x: np.ndarray, w: np.ndarray, strides, dilations, pads_begin, out) -> np.ndarray:
    """Grouped transposed convolution of x (N, G*Cin_g, *sp) with w (G, Cin_g, Cout_g, *k):
    per tap, every group's product (one batched matmul over the groups) scattered into a
    strided slice of the full output, then cropped from `pads_begin` to `out`."""
    x = compute_type(x)
    w = compute_type(w).astype(x.dtype)
    g, cin_g, cout_g = w.shape[:3]
    kernel = w.shape[3:]
    n = x.shape[0]
    sp = x.shape[2:]
    full = [(d - 1) * s + dl * (kk - 1) + 1 for d, s, dl, kk in zip(sp, strides, dilations, kernel)]
    # a negative begin pad (an output_shape larger than the full result) adds zeros before it
    shift = [max(0, -b) for b in pads_begin]
    size = [max(f + t, b + t + o) + 1 for f, b, o, t in zip(full, pads_begin, out, shift)]
    acc = np.zeros((n, g, cout_g, *size), np.float64 if x.dtype == np.float64 else np.float32)
    m = math.prod(sp)
    xg = x.reshape(n, g, cin_g, m).transpose(1, 0, 3, 2)  # (G, N, M, Cin_g)
    for tap in itertools.product(*(range(k) for k in kernel)):
        contrib = blas.matmul(xg, w[(slice(None), None, slice(None), slice(None)) + tap])  # (G, N, M, Cout_g)
        contrib = contrib.transpose(1, 0, 3, 2).reshape(n, g, cout_g, *sp)
        sl = (slice(None), slice(None), slice(None)) + tuple(
            slice(h + t * dl, h + t * dl + (d - 1) * s + 1, s)
            for t, dl, d, s, h in zip(tap, dilations, sp, strides, shift)
        )
        acc[sl] += contrib
    crop = (slice(None), slice(None), slice(None)) + tuple(
        slice(b + h, b + h + o) for b, o, h in zip(pads_begin, out, shift)
    )
    return np.ascontiguousarray(acc[crop]).reshape(n, g * cout_g, *out)
