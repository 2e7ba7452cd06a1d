"""The quantization family's dispatch: FakeQuantize's formula over x with its four ranges, and
FakeConvert's f8 emulation. Ops ask; the family decides numpy or the numba kernels of
`quantize_loops` (`jit.use`) and how many threads.

FakeQuantize, for each element v of x and its ranges il, ih, ol, oh (float64), with L = levels-1:

    out_low                                          if v <= min(il, ih)
    out_high                                         if v >  max(il, ih)
    rint((v - il) / (ih - il) * L) / L * (oh - ol) + ol   otherwise

evaluated in float64 in this order and rounded once to the output type (SPEC, "FakeQuantize");
rint rounds half to even, as OpenVINO's std::nearbyint; min and max are std::min and std::max
(a NaN input_high makes both bounds input_low). NaN stays NaN (no comparison holds). The ranges
become seven constants per row (CONSTANTS), computed once by `constants` for the kernels and the
numpy path alike, so both give the same bits. float32 and float64 x whose ranges vary along one
block of adjacent axes (per tensor, per channel) take the kernels when `jit.use` says they pay;
everything else, and everything before the kernels are loaded, takes the numpy path in blocks.

FakeConvert-13 (numpy only): OpenVINO's reference emulation of an f8 round trip. Each affine
step is computed as the reference computes it in the data's type: float32 for f32, float32 rounded
to f16 after each operation for f16 (ov::float16's arithmetic), the same with bf16 for bf16
(rounded to nearest even: ov::bfloat16's conversion truncates whenever the lower neighbour is
even, so OpenVINO's reference differs there by one bf16 unit per step). The scaled value goes to
f16 (nearest even), then to the f8 grid by the reference's bit rules on the f16 pattern:

- f8e5m2: nearest even on the 2-bit mantissa; infinities saturate to +-57344 (also values that
  round up to infinity); NaN stays NaN.
- f8e4m3: |v| < 2^-9 becomes +0 (the sign is dropped); |v| >= 448, infinities and NaN become
  +-448 (NaN by its sign bit); normal values round to nearest even on the 3-bit mantissa;
  subnormals (2^-9 <= |v| < 2^-6) round there too, then drop the mantissa bits the subnormal grid
  (multiples of 2^-9) cannot hold, toward zero.

then back to the data's type, and (y + shift) / scale.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from math import prod

import numpy as np

from ..dtypes import round_bf16
from . import jit

# the table's columns: lower bound, upper bound, input_low, input_high - input_low, output_low,
# output_high - output_low, output_high
CONSTANTS = ("lo", "hi", "il", "d", "ol", "do", "oh")
BLOCK = 1 << 16  # elements per numpy block (float64 temporaries stay in cache)
FAMILY = "quantize"  # its name in jit.FAMILIES
# the numpy path's fixed cost per call (~20 array ops): small inputs take loaded kernels
SMALL_CALL_SAVING = 30e-6
# work per byte against a streaming read (jit.threads_for): a float64 division per element
# (6 GB/s of float32 on one core against 30 for numpy's streaming sum; 2.9 GB/s on a Zen 3,
# where two threads paid from about 1.6 MB: (1, 512, 28, 28) 0.64 -> 0.54 ms, (1, 256, 56, 56)
# 1.1 -> 0.75-0.9, (1, 64, 56, 56) no faster; ResNet-50's INT8 network 124 -> 119 ms, interleaved)
QUANTIZE_COST = 10.0
PERIOD_MAX_INNER = 16  # ranges constant over fewer contiguous elements: the period kernel


def constants(il, ih, ol, oh) -> list[np.ndarray]:
    """The seven float64 constants of CONSTANTS from the ranges (arrays of any shape that
    broadcast together)."""
    il, ih, ol, oh = (np.asarray(r, np.float64) for r in (il, ih, ol, oh))
    lo = np.where(ih < il, ih, il)  # std::min(il, ih)
    hi = np.where(il < ih, ih, il)  # std::max(il, ih)
    return [lo, hi, il, ih - il, ol, oh - ol, oh]


def _formula(v: np.ndarray, c: Sequence[np.ndarray], steps: float) -> np.ndarray:
    """The module doc's formula over float64 v with the constants c (broadcasting against v)."""
    lo, hi, il, d, ol, do, oh = c
    q = np.subtract(v, il)
    q /= d
    q *= steps
    np.rint(q, out=q)
    q /= steps
    q *= do
    q += ol
    q = np.where(v > hi, oh, q)
    return np.where(v <= lo, ol, q)


@lru_cache(maxsize=256)
def _layout(shape: tuple[int, ...], range_shapes: tuple[tuple[int, ...], ...]) -> tuple[int, int] | None:
    """(a, b): the ranges (each of x's rank) vary only along x's axes a..b-1, (0, 0) when they
    vary along none; None when the kernels should not take them (a table larger than x)."""
    varying = [i for i, n in enumerate(shape) if n != 1 and any(r[i] != 1 for r in range_shapes)]
    if not varying:
        return 0, 0
    a, b = varying[0], varying[-1] + 1
    if prod(shape[a:b]) * len(CONSTANTS) * 8 > max(prod(shape) * 4, 1 << 20):
        return None
    return a, b


def _table(ranges: Sequence[np.ndarray], shape: tuple[int, ...], a: int, b: int) -> np.ndarray:
    """(prod(shape[a:b]), 7) float64: each row's constants."""
    span = shape[a:b]
    flat = []
    for r in ranges:
        index = tuple(slice(None) if a <= i < b else 0 for i in range(len(shape)))
        flat.append(np.broadcast_to(r[index], span).reshape(-1))
    return np.ascontiguousarray(np.stack(constants(*flat), axis=1))


class Prepared:
    """FakeQuantize of one data shape and type with fixed ranges: what `fake_quantize` works out
    from the shapes and the ranges (the kernel, its table, its tasks; the numpy path's
    constants) once, so that a layer whose ranges are constants pays only for the pass over x
    (in ResNet-50 INT8 the working out cost 35-40 us a layer, 71 layers)."""

    def __init__(
        self, shape: tuple[int, ...], xtype: np.dtype, ranges: Sequence[np.ndarray], levels: int, dtype
    ) -> None:
        self.steps = float(levels - 1)
        self.shape, self.dtype = shape, np.dtype(dtype)
        self.ranges = ranges
        self.kernel_args = None  # (kernel name, tasks, operand and the kernel's trailing arguments)
        size = prod(shape)
        layout = None
        if xtype in (np.float32, np.float64) and self.dtype == xtype and size:
            layout = _layout(shape, tuple(r.shape for r in ranges))
        if layout is None:
            return
        from . import quantize_loops as k

        rows, operand = _operand(ranges, shape, layout, self.steps)
        if rows:
            inner = prod(shape[layout[1] :])
            self.kernel_args = ("rows", -(-size // k.BLOCK), (operand, inner, operand.shape[0], self.steps))
        else:
            per_task = max(1, k.BLOCK // operand.shape[1])
            tasks = -(-(size // operand.shape[1]) // per_task)
            self.kernel_args = ("period", tasks, (operand, per_task, self.steps))

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """FakeQuantize of x (of the prepared shape and type) as a new array."""
        out = np.empty(self.shape, self.dtype)
        if self.kernel_args is not None and jit.use(x.nbytes, SMALL_CALL_SAVING, FAMILY):
            from . import quantize_loops as k

            name, tasks, args = self.kernel_args
            flat = (x if x.flags.c_contiguous else np.ascontiguousarray(x)).reshape(-1)
            threads = jit.threads_for(x.nbytes, QUANTIZE_COST)
            jit.parallel_for(getattr(k, name), tasks, threads, flat, out.reshape(-1), *args)
            return out
        c = constants(*self.ranges)
        for index in _blocks(self.shape):
            v = x[index].astype(np.float64)
            out[index] = _formula(v, [_cut(k, index) for k in c], self.steps)
        return out


# ranges of at most this many elements in all are remembered by value with their kernel operand
# (`_operand`): a network's FakeQuantize layers have constant ranges, and building the table
# (the constants' float64 arrays, a stack, for `period` a repeat) cost 30-90 us a call:
# ResNet-50 INT8's 71 layers at 224x224 33.5 -> 27.1 ms. Full, it starts again (one dict
# operation: safe for calls from several threads)
OPERAND_MEMO_ELEMENTS = 4096
OPERAND_MEMO_ENTRIES = 256
_operands: dict = {}


def _operand(ranges: Sequence[np.ndarray], shape: tuple[int, ...], layout: tuple[int, int], steps: float):
    """(whether the rows kernel takes it, its operand): the (mid, 7) table for `quantize_loops.rows`,
    or for `period` the (8, mid * inner) columns of the table and the index factor; remembered
    for small ranges by their values."""
    key = None
    if sum(r.size for r in ranges) <= OPERAND_MEMO_ELEMENTS:
        key = (shape, steps) + tuple((r.shape, r.dtype.char, r.tobytes()) for r in ranges)
        hit = _operands.get(key)
        if hit is not None:
            return hit
    a, b = layout
    table = _table(ranges, shape, a, b)
    mid, inner = table.shape[0], prod(shape[b:])
    if inner >= PERIOD_MAX_INNER or mid == 1:
        made = (True, table)
    else:
        table = np.concatenate([table, steps / table[:, 3:4]], axis=1)  # and the index factor
        made = (False, np.ascontiguousarray(np.repeat(table, inner, axis=0).T))  # (8, mid * inner)
    if key is not None:
        if len(_operands) >= OPERAND_MEMO_ENTRIES:
            _operands.clear()
        made[1].flags.writeable = False
        _operands[key] = made
    return made


def _blocks(shape: tuple[int, ...]):
    """Index tuples that cut an array of `shape` into blocks of about BLOCK elements, along
    the first axis above 1 (or, for one long axis, inside it)."""
    axis = next((i for i, n in enumerate(shape) if n > 1), None)
    if axis is None or prod(shape) <= BLOCK:
        yield ()
        return
    step = max(1, BLOCK // prod(shape[axis + 1 :]))
    for s in range(0, shape[axis], step):
        yield (slice(None),) * axis + (slice(s, s + step),)


def _cut(c: np.ndarray, index: tuple) -> np.ndarray:
    """The constant c (of x's rank, broadcasting against x) for the block x[index]."""
    return c[tuple(sl if c.shape[i] > 1 else slice(None) for i, sl in enumerate(index))]


def fake_quantize(x: np.ndarray, ranges: Sequence[np.ndarray], levels: int, dtype: np.dtype) -> np.ndarray:
    """FakeQuantize-1 over float x (float16, float32, float64; bf16 as float32) with the ranges
    (input_low, input_high, output_low, output_high), each of x's rank and broadcasting into it,
    as a new array of `dtype` (float64 for a result the caller still rounds, bf16): the module
    doc's formula, rounded once to dtype. (`Prepared` for calls that repeat shapes and ranges.)"""
    return Prepared(x.shape, x.dtype, ranges, levels, dtype)(x)


# ---- FakeConvert ---------------------------------------------------------------------------------

F8_TYPES = ("f8e4m3", "f8e5m2")


def _e5m2(h: np.ndarray) -> np.ndarray:
    """f16 bit patterns (uint16) on the f8e5m2 grid, as the module doc says."""
    h = h.astype(np.int32)
    finite = (h & 0x7C00) != 0x7C00
    # nearest even on the 8 dropped bits: above half, or half with the kept last bit odd
    up = finite & (((h & 0xFF) > 0x80) | ((h & 0x180) == 0x180))
    h = (h + np.where(up, 0x100, 0)) & 0xFF00
    h = np.where((h & 0x7F00) == 0x7C00, h - 0x100, h)  # +-inf -> +-57344
    return h.astype(np.uint16)


def _e4m3(h: np.ndarray) -> np.ndarray:
    """f16 bit patterns (uint16) on the f8e4m3 grid, as the module doc says."""
    h = h.astype(np.int32)
    h = np.where((h & 0x7FFF) < 0x1800, 0, h)  # |v| < 2^-9 (f16 0x1800): +0
    sign = h & 0x8000
    e = ((h >> 10) & 0x1F) - 15
    m = h & 0x3FF
    over = e > 8  # |v| >= 512, infinities, NaN: no rounding, saturated below
    e = np.where(over, 8, e)
    m = np.where(over | ((e == 8) & (m > 0x300)), 0x300, m)  # at most 448 = 1.75 * 2^8
    roundable = ~over & ((h & 0x7FFF) < 0x5F80)  # below 480: the reference's rounding range
    up = roundable & (((m & 0x7F) > 0x40) | ((m & 0xC0) == 0xC0))
    m = m + np.where(up, 0x80, 0)
    drop = np.clip(-6 - e, 0, None)  # subnormal exponents -7..-9 keep 2..0 of the 3 bits
    m = ((m >> drop) & 0xFF80) << drop
    return (m + ((e + 15) << 10) | sign).astype(np.uint16)


def fake_convert(x: np.ndarray, scale: np.ndarray, shift: np.ndarray | None, destination: str, et: str) -> np.ndarray:
    """FakeConvert-13 of x (element type et: f32, f16, or bf16 held as float32) with scale and
    shift broadcasting into it (shift None: zeros), as the module doc says; the result in x's
    dtype and element type."""
    dt = np.float16 if et == "f16" else np.float32
    step = round_bf16 if et == "bf16" else np.asarray
    s = np.asarray(scale).astype(dt)
    o = np.zeros_like(s) if shift is None else np.asarray(shift).astype(dt)
    y = step(step(x.astype(dt, copy=False) * s) - o)
    with np.errstate(over="ignore"):  # beyond f16: infinity, which saturates
        h = np.ascontiguousarray(y, np.float16).view(np.uint16)
    h = _e5m2(h) if destination == "f8e5m2" else _e4m3(h)
    z = h.view(np.float16).astype(dt)
    return step(step(z + o) / s).astype(dt, copy=False)
