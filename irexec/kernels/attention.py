"""ScaledDotProductAttention's softmax(q k^T * scale + mask) v, the kernels' way (the normalize
family's `attention_softmax_rows` / `attention_masked_rows`): the same float64 scaling, masking
and softmax as the op's numpy path, rounded once, with the products on BLAS.

- `attention`: long sequences in blocks of queries. Each task takes one batch item's block of
  queries: its scores against the keys (BLAS), the fused scale, mask and softmax, and the
  weighted sum of the values, written into its rows of the output. The scores never exist
  whole (a block's stay in the L2 cache), and the tasks run on `jit.parallel_for`'s threads,
  the products on one BLAS thread each. Keys that no query of a block keeps are not computed:
  a causal mask's (the `causal` attribute, or a boolean mask whose rows end in a masked tail)
  upper triangle is skipped, half the work of a causal attention.
- float32 heads of up to 64 embeddings whose rows each keep a prefix of the keys (no mask,
  causal, a boolean padding mask) or add a float mask skip BLAS: `normalize_loops.
  attention_simd_rows` takes eight query rows at a time with their sums in 16-lane registers
  (`_simd`): their scores against every key, each row's max and exponentials 16 lanes a step,
  and the weighted sums of the values, the scores and probabilities in the L1 cache; short
  sequences too, which the other kernels leave to the whole-tensor paths. With few
  embeddings a head a BLAS product is mostly its call and its stores (one thread, min of 15:
  (1, 2, 128, 16) 0.102 -> 0.075 ms, (1, 2, 1500, 16) 5.5 -> 4.8, (1, 12, 128, 64) 0.87 ->
  0.75, causal 0.84 -> 0.71); from 128 embeddings the BLAS blocks win ((1, 32, 128, 128):
  2.2 against 2.6 ms), so wider heads keep them. Where vectors hold 8 floats (AVX2) the rows
  keep their sums in eight registers (`narrow`), the same bits.
- `attention_softmax_out` / `attention_masked_softmax_out`: the fused softmax of whole score
  tensors (short sequences, batch dims that broadcast).
- `attention_numpy`: before the kernels are loaded (or without them), long sequences by the
  same query blocks in numpy: each block's float64 scores, mask and softmax (`normalize.softmax`)
  stay in the cache instead of whole-tensor float64 temporaries, and the keys a causal mask
  hides are skipped as above.

Results equal the numpy path's to float32 rounding (tests/test_ops_numpy.py compares them).
"""

from __future__ import annotations

import math
import threading
from typing import NamedTuple

import numpy as np

from .. import blas, config
from . import jit
from .normalize import FAMILY, SMALL_CALL_SAVING, SOFTMAX_COST, over_rows, rows_path, softmax
from .normalize import loops as _loops

# queries x keys of at least this many scores per batch item go by query blocks
BLOCKED_MIN_SCORES = 1 << 14
# a block's scores (float32: 512 KiB, and as many for its probabilities: the L2 cache)
BLOCK_SCORES = 1 << 17


class MaskRows(NamedTuple):
    """An attention mask as the kernels take it: `rows` (mask rows, S) contiguous, `index` the
    mask row of each score row (batch items x queries, flattened), and `select` for a boolean
    mask."""

    rows: np.ndarray
    index: np.ndarray
    select: bool

    def last(self) -> np.ndarray | None:
        """For a boolean mask, per mask row one past its last kept key (0: none kept); None for a
        float mask (the query-block paths' key bound)."""
        if not self.select or not self.rows.shape[1]:
            return None
        n = self.rows.shape[1]
        return np.where(self.rows.any(axis=1), n - np.argmax(self.rows[:, ::-1], axis=1), 0)


def mask_rows(mask: np.ndarray, lead: tuple[int, ...], length: int, n: int) -> MaskRows | None:
    """The mask (broadcasting against scores of batch dims `lead` and (length, n)) as rows, or
    None when it widens the scores' shape (dims of its own, which the whole-tensor paths
    broadcast) or is not boolean/float."""
    if mask.dtype not in (np.bool_, np.float16, np.float32, np.float64):
        return None
    if mask.ndim < 2:
        mask = mask.reshape((1,) * (2 - mask.ndim) + mask.shape)
    if mask.dtype == np.float16:
        mask = mask.astype(np.float32)
    if mask.ndim - 2 > len(lead):
        return None
    mlead = (1,) * (len(lead) - (mask.ndim - 2)) + mask.shape[:-2]
    if any(d not in (1, t) for d, t in zip(mlead + mask.shape[-2:], lead + (length, n))):
        return None
    # the mask's own rows (a mask broadcast over the queries keeps one row, over the keys is
    # widened to n), and each score row's
    height = mask.shape[-2]
    rows = mask.reshape(mlead + mask.shape[-2:])
    if rows.shape[-1] != n:  # a mask broadcast over the keys: widened
        rows = np.ascontiguousarray(np.broadcast_to(rows, mlead + (height, n)))
    elif not rows.flags.c_contiguous:  # a view (T5's position bias): copied, without broadcast_to's
        rows = rows.copy()  # iterator (at (1, 4, 64, 64) 19 us against 7)
    rows = rows.reshape(-1, n)
    count = math.prod(mlead) * height
    if count == 1:
        index = np.zeros(math.prod(lead) * length, np.int64)
    elif mlead == lead and height == length:
        index = np.arange(count, dtype=np.int64)
    else:
        index = np.arange(count, dtype=np.int64).reshape(mlead + (height,))
        index = np.ascontiguousarray(np.broadcast_to(index, lead + (length,))).reshape(-1)
    return MaskRows(rows, index, mask.dtype == np.bool_)


def _bounds(m: MaskRows) -> tuple[np.ndarray, np.ndarray | None]:
    """(prefix, last) of a mask's rows by the kernel `mask_bounds` (numpy's argmin finds each
    row's first masked key, then one pass over the rest by words); a float mask: no prefix rows
    (-1 each) and no key bound."""
    k = _loops()
    count = m.rows.shape[0]
    prefix = np.full(count, -1, np.int64)
    if not m.select or not m.rows.shape[1]:
        return prefix, None
    last = np.empty(count, np.int64)
    n = m.rows.shape[1]
    padded = -(-n // 8) * 8
    rows = m.rows.view(np.uint8)
    if padded != n:
        rows = np.zeros((count, padded), np.uint8)
        rows[:, :n] = m.rows
    k.mask_bounds(rows, rows.view(np.uint64), np.argmin(m.rows, axis=1), n, prefix, last)
    return prefix, last


# Prepared masks (rows, index, bounds) of the last few masks, by their shapes and bytes: a model
# hands every attention layer the same mask, call after call, and preparing it costs 20 us at
# (1, 1, 64, 64) against 4 heads (numpy calls; measured), where comparing its bytes costs under
# 1 us (bytes ==: 0.1 us at 8 x 8 and 0.6 at 128 x 128, np.array_equal 2.5 and 3.8).
_PREPARED_MAX = 4
# float masks above this many bytes skip the memo (`prepared_mask`): preparing one costs about
# 4 us (medians of 2000 calls) whatever its size, where its bytes' copy and comparison grow
# with it (12 us at (1, 4, 128, 128))
FLOAT_MEMO_MAX_BYTES = 1 << 14
_prepared: dict[tuple, tuple[bytes, PreparedMask]] = {}
_prepared_lock = threading.Lock()


class PreparedMask(NamedTuple):
    """A mask as the kernels take it: its rows (`MaskRows`), each mask row's prefix and last kept
    key (`_bounds`), and `keep`, each score row's prefix when a boolean mask keeps a prefix of
    at least one key in every row (the register rows' case), else None."""

    m: MaskRows
    prefix: np.ndarray
    last: np.ndarray | None
    keep: np.ndarray | None


def prepared_mask(mask: np.ndarray, lead: tuple[int, ...], length: int, n: int) -> PreparedMask | None:
    """The mask prepared for the kernels, or None as `mask_rows`; the same arrays again for a
    mask of the same shape, type and bytes (nothing may write to them). A mask that is not
    contiguous (T5's position bias arrives as a view) is copied first, and its copy's bytes key
    the memo: preparing it again each call cost 25 us at (1, 4, 4, 4). A float mask of more than
    FLOAT_MEMO_MAX_BYTES is prepared afresh: its rows are the mask itself (or its contiguous
    copy) and its bounds are none, where copying and comparing its bytes cost more (T5's
    position bias at 512 tokens, a (1, 4, 512, 512) view: 0.6 ms a layer)."""
    if mask.dtype != np.bool_ and mask.nbytes > FLOAT_MEMO_MAX_BYTES:
        m = mask_rows(mask, lead, length, n)
        return None if m is None else PreparedMask(m, *_bounds(m), None)
    key = (mask.shape, mask.dtype.str, lead, length, n)
    private = not mask.flags.c_contiguous
    if private:
        mask = np.ascontiguousarray(mask)
    data = mask.tobytes()
    with _prepared_lock:
        hit = _prepared.get(key)
    if hit is not None and hit[0] == data:
        return hit[1]
    m = mask_rows(mask, lead, length, n)
    if m is None:
        return None
    prefix, last = _bounds(m)
    keep = None
    if m.select:
        keep = prefix[m.index]
        if not keep.size or keep.min() <= 0:  # a row keeping no key, or not a prefix
            keep = None
    ready = PreparedMask(m, prefix, last, keep)
    if not private and np.may_share_memory(m.rows, mask):  # the caller's buffer may change later
        ready = ready._replace(m=m._replace(rows=m.rows.copy()))
    with _prepared_lock:
        if len(_prepared) >= _PREPARED_MAX and key not in _prepared:
            _prepared.pop(next(iter(_prepared)))
        _prepared[key] = (data, ready)
    return ready


def fma_scale(scores: np.ndarray, scale: float) -> bool:
    """Whether float32 scores take their exponentials' arguments by one fused multiply-add in
    float32 (`normalize_loops._attention_row_f32`): the scale is a float32 value (an f32 scale
    input, 1, 1/8), so score * scale is the same exact product as in float64."""
    return scores.dtype == np.float32 and scale != 0.0 and float(np.float32(scale)) == scale


def attention_softmax_out(scores: np.ndarray, scale: float, causal: bool, out_dtype) -> np.ndarray | None:
    """softmax(scores * scale, causal mask) over the last axis by one kernel pass, or None when
    the numpy path should run. scores (..., L, S) float32/float64."""
    f32 = np.dtype(out_dtype) == np.float32
    length = max(1, scores.shape[-2])
    return over_rows(
        "attention_softmax_rows",
        scores,
        out_dtype,
        SOFTMAX_COST,
        float(scale),
        bool(causal),
        length,
        0,
        f32,
        fma_scale(scores, scale),
        _NORMALIZED,
    )


def attention_masked_softmax_out(scores: np.ndarray, scale: float, mask: np.ndarray, out_dtype) -> np.ndarray | None:
    """softmax(scores * scale with the attention mask) over the last axis by one kernel pass, or
    None when the numpy path should run. scores (..., L, S) float32/float64; mask boolean (keeps
    where true) or float (added), broadcasting against scores."""
    if scores.ndim < 2 or np.dtype(out_dtype) not in (np.float32, np.float64) or not rows_path(scores):
        return None
    ready = prepared_mask(mask, scores.shape[:-2], *scores.shape[-2:])
    if ready is None:
        return None
    m, prefix = ready.m, ready.prefix
    k = _loops()

    flat = np.ascontiguousarray(scores).reshape(-1, scores.shape[-1])
    out = np.empty(flat.shape, out_dtype)
    f32 = np.dtype(out_dtype) == np.float32
    threads = jit.threads_for(scores.nbytes, SOFTMAX_COST)
    jit.parallel_for(
        k.attention_masked_rows,
        flat.shape[0],
        threads,
        flat,
        m.rows,
        m.index,
        prefix,
        m.select,
        out,
        scale,
        f32,
        fma_scale(flat, scale),
        _NORMALIZED,
    )
    return out.reshape(scores.shape)


# the row kernels' `inv` when they normalize their rows themselves
_NORMALIZED = np.empty(0)
# a block of at least this many float32 scores leaves its rows' exponentials unnormalized and
# scales its product's rows instead: the pass saved (0.2 ns a score) against the scaling's
# numpy call (about 8 us). Measured on two threads against normalized rows: (1, 2, 1599, 16)
# blocks of 81 x 1599, 5.35 -> 4.96 ms; (1, 12, 128, 64), blocks of 128 x 128, 0.91 -> 1.03
UNNORMALIZED_MIN_SCORES = 1 << 16


def _block_rows(batch: int, length: int, keys: int, threads: int) -> int:
    """Queries per block: a block's scores within BLOCK_SCORES, and enough blocks for the
    threads."""
    rows = max(16, min(length, BLOCK_SCORES // max(1, keys)))
    if threads > 1 and batch * math.ceil(length / rows) < 2 * threads:
        rows = max(1, math.ceil(length / math.ceil(2 * threads / batch)))
    return rows


def _flat_batch(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """(batch items, q, k, v with their batch dims merged into one)."""
    batch = math.prod(q.shape[:-2])
    return batch, q.reshape(batch, *q.shape[-2:]), k.reshape(batch, *k.shape[-2:]), v.reshape(batch, *v.shape[-2:])


def _keys_used(keys: int, q1: int, causal: bool, last: np.ndarray | None, index: np.ndarray | None) -> int:
    """The keys some query of a block (its queries up to q1, their mask rows `index`) keeps:
    past them every score is masked, so they are not computed. A block whose mask keeps no key
    takes them all (NaN rows, as the whole-tensor path gives)."""
    if causal:
        return min(keys, q1)
    if last is not None:
        return int(last[index].max()) or keys
    return keys


def attention(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float, causal: bool, mask: np.ndarray | None, out_dtype
) -> np.ndarray | None:
    """softmax(q k^T * scale + mask) v by the register rows, or by query blocks (see the
    module's docstring), or None when the whole-tensor paths should run: batch dims that differ
    between q, k and v (they broadcast), other types, kernels that do not pay, or a short
    sequence that the register rows do not take."""
    if not _batched(q, k, v) or np.dtype(out_dtype) != q.dtype:
        return None
    lead, length, keys, ev = q.shape[:-2], q.shape[-2], k.shape[-2], v.shape[-1]
    nbytes = math.prod(lead) * length * keys * q.itemsize
    if not jit.use(nbytes, SMALL_CALL_SAVING, FAMILY):
        return None
    m = last = prefix = keep = None
    if mask is not None and not causal:
        ready = prepared_mask(mask, lead, length, keys)
        if ready is None:
            return None
        m, prefix, last, keep = ready
    kl = _loops()

    batch, q3, k3, v3 = _flat_batch(q, k, v)
    threads = jit.threads_for(nbytes, SOFTMAX_COST)
    # the register rows' work grows with the embeddings: threads from 2.5x the softmax's cost at
    # 16 + 16 of them ((1, 12, 128, 64), 196 K scores: 0.94 -> 0.63 ms on two threads; (1, 2,
    # 128, 16) 0.10 -> 0.14: one)
    wide = jit.threads_for(nbytes, SOFTMAX_COST * (1 + (q.shape[-1] + ev) / SIMD_EMBEDDINGS_COST))
    registers = _simd(q3, k3, v3, scale, causal, m, keep, wide)
    if registers is not None:
        return registers.reshape(lead + (length, ev))
    if length * keys < BLOCKED_MIN_SCORES:
        return None
    rows = _block_rows(batch, length, keys, threads)
    per = math.ceil(length / rows)
    out = np.empty((batch, length, ev), q.dtype)
    f32 = q.dtype == np.float32
    fma = fma_scale(q, scale)

    buffers: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def task(t_lo: int, t_hi: int) -> None:
        # one set of score buffers per thread: fresh pages for every block's scores cost more
        # than their product (and two threads fault in turn)
        mine = buffers.get(threading.get_ident())
        if mine is None:
            inv = np.empty(rows if f32 else 0)
            mine = buffers[threading.get_ident()] = (
                np.empty(rows * keys, q.dtype),
                np.empty(rows * keys, q.dtype),
                inv,
            )
        raw_buf, p_buf, inv_buf = mine
        for t in range(t_lo, t_hi):
            b, blk = divmod(t, per)
            q0, q1 = blk * rows, min(length, (blk + 1) * rows)
            index = None if m is None else m.index[b * length + q0 : b * length + q1]
            used = _keys_used(keys, q1, causal, last, index)
            raw = raw_buf[: (q1 - q0) * used].reshape(q1 - q0, used)
            np.matmul(q3[b, q0:q1], k3[b, :used].T, out=raw)
            p = p_buf[: raw.size].reshape(raw.shape)
            # float32 blocks of many scores: the rows' exponentials unnormalized, the products
            # scaled by their reciprocal sums after (`inv`: one pass over the scores fewer)
            unnormalized = f32 and raw.size >= UNNORMALIZED_MIN_SCORES
            inv = inv_buf[: q1 - q0] if unnormalized else _NORMALIZED
            if m is None:
                kl.attention_softmax_rows(0, q1 - q0, raw, p, scale, causal, length, q0, f32, fma, inv)
            else:
                kl.attention_masked_rows(0, q1 - q0, raw, m.rows, index, prefix, m.select, p, scale, f32, fma, inv)
            y = out[b, q0:q1]
            np.matmul(p, v3[b, :used], out=y)
            if unnormalized:
                y *= inv[:, None]

    with blas.one_thread():
        jit.parallel_for(task, batch * per, threads)
    return out.reshape(lead + (length, ev))


def _simd(
    q3: np.ndarray,
    k3: np.ndarray,
    v3: np.ndarray,
    scale: float,
    causal: bool,
    m: MaskRows | None,
    keep: np.ndarray | None,
    threads: int,
    rounded: int = 0,
) -> np.ndarray | None:
    """softmax(q k^T * scale [+ mask]) v by `normalize_loops.attention_simd_rows`, (batch, L,
    Ev), for float32 heads of up to SIMD_MAX_E embeddings whose rows each keep a prefix of the
    keys (no mask, causal, a boolean mask of prefixes) or add a float32 mask; None otherwise
    (a boolean mask that is not a prefix, a row keeping no key: the BLAS blocks). `rounded`:
    how a float mask is added (0: in float64; 1 or 2: `normalize_loops._rounded_scores`)."""
    batch, length, e = q3.shape
    keys, ev = k3.shape[1], v3.shape[2]
    if q3.dtype != np.float32 or not keys or max(e, ev) > SIMD_MAX_E:
        return None
    kl = _loops()
    rows = _rows_args(m, keep, causal, batch, length, keys)
    if rows is None:
        return None
    out = np.empty((batch, length, ev), np.float32)
    parts = _parts(batch, length, threads)
    jit.parallel_for(
        kl.attention_simd_rows,
        batch * parts,
        threads,
        _writable(q3),
        _writable(k3),
        _writable(v3),
        out,
        *rows,
        parts,
        float(scale),
        fma_scale(q3, scale),
        rounded,
        not jit.wide_vectors(),
    )
    return out


def _parts(batch: int, length: int, threads: int) -> int:
    """The register rows' tasks per batch item: whole batch items a task (the keys transposed
    once each), split in parts when they are fewer than two a thread."""
    parts = 1 if batch >= 2 * threads else -(-2 * threads // batch)
    return max(1, min(parts, -(-length // _loops().SIMD_ROWS)))


def _rows_args(m: MaskRows | None, keep, causal: bool, batch: int, length: int, keys: int) -> tuple | None:
    """The register rows' (keep, mask, mask_row) for a prepared mask's rows `m` and `keep`
    (`PreparedMask`), causal or no mask; None when the rows do not take the mask."""
    mask, mask_row = _NO_MASK, _NO_ROWS
    if m is not None and m.select:
        if keep is None:  # a row keeping no key, or not a prefix (`PreparedMask.keep`)
            return None
    elif m is not None:
        keep, mask, mask_row = _NO_ROWS, m.rows, m.index
        if mask.dtype != np.float32:
            return None
    elif causal:
        # a fresh array: a broadcast view of one batch item's row would reach the kernel read-only,
        # a type numba compiles apart (`_writable`)
        keep = np.tile(np.minimum(keys, np.arange(1, length + 1)), batch)
    else:
        keep = np.full(batch * length, keys, np.int64)
    return np.ascontiguousarray(keep, np.int64), mask, np.ascontiguousarray(mask_row, np.int64)


def attention_call(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float, causal: bool, masked: bool, rounded: int = 0
):
    """`attention`'s register rows for float32 operands of q's, k's and v's shapes as one
    function of (q, k, v, mask) (`Op.steady`), when they run on the calling thread: the shapes'
    checks and the call's arguments decided once (the keep counts too, without a mask or with a
    causal one); a mask is prepared each call as `attention` prepares it (`prepared_mask`
    knows one seen before by its bytes). `rounded` 1 or 2: `decomposed_attention`'s rows
    instead (a float32 mask; none: a row of zeros). None when `attention` (or
    `decomposed_attention`) does not run them so; the function answers None for a mask the
    rows do not take (the wrapper then decides)."""
    if not _batched(q, k, v) or q.dtype != np.float32:
        return None
    lead, length, keys, ev = q.shape[:-2], q.shape[-2], k.shape[-2], v.shape[-1]
    if not keys or max(q.shape[-1], ev) > SIMD_MAX_E:
        return None
    nbytes = math.prod(lead) * length * keys * q.itemsize
    work = int(nbytes * SOFTMAX_COST * (1 + (q.shape[-1] + ev) / SIMD_EMBEDDINGS_COST))
    if work >= config.THREAD_MIN_BYTES or not jit.use(nbytes, SMALL_CALL_SAVING, FAMILY):
        return None
    batch = math.prod(lead)
    parts = _parts(batch, length, 1)
    per_call = masked and not causal  # a mask, prepared each call (its memo knows it)
    fixed = None if per_call else _mask_args(None, rounded, causal, lead, length, keys)
    kernel = _loops().attention_simd_rows
    tail = (parts, float(scale), fma_scale(q, scale), rounded, not jit.wide_vectors())
    q3, k3, v3 = ((batch, *x.shape[-2:]) for x in (q, k, v))

    def run(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None) -> np.ndarray | None:
        if not jit.still_one_call(work):
            return None
        rows = _mask_args(mask, rounded, causal, lead, length, keys) if per_call else fixed
        if rows is None:
            return None
        out = np.empty((batch, length, ev), np.float32)
        kernel(
            0,
            batch * parts,
            _writable(q.reshape(q3)),
            _writable(k.reshape(k3)),
            _writable(v.reshape(v3)),
            out,
            *rows,
            *tail,
        )
        return out.reshape(lead + (length, ev))

    return run


def _writable(a: np.ndarray) -> np.ndarray:
    """a contiguous, and writable: a model's constant query, keys or values are read-only, a type
    numba compiles apart (one more specialization of the register rows each, against a copy of
    a constant that is small where it occurs). A constant float mask stays read-only: warm()
    compiles that variant, and a large one would cost its copy every call."""
    a = np.ascontiguousarray(a)
    return a if a.flags.writeable else a.copy()


def decomposed_attention(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float, divide: bool, mask: np.ndarray | None
) -> np.ndarray | None:
    """softmax(q k^T * scale (or / scale when `divide`) + mask) v with float32 q, k, v (k (..., S,
    E)) and an optional float32 mask, by the register rows, each scaled score and each sum with
    the mask rounded to float32 as separate layers round them (`normalize_loops._rounded_scores`; no
    mask: a row of zeros, which adds nothing); None when the register rows do not take the case
    or the kernels do not pay (the fused step's layers run: `ops.attention.DecomposedAttention`)."""
    if not _batched(q, k, v) or q.dtype != np.float32 or max(q.shape[-1], v.shape[-1]) > SIMD_MAX_E:
        return None
    lead, length, keys, ev = q.shape[:-2], q.shape[-2], k.shape[-2], v.shape[-1]
    nbytes = math.prod(lead) * length * keys * q.itemsize
    if not keys or not jit.use(nbytes, SMALL_CALL_SAVING, FAMILY):
        return None
    batch, q3, k3, v3 = _flat_batch(q, k, v)
    if mask is None:
        m = _zero_rows(batch, length, keys)
    else:
        ready = None if mask.dtype != np.float32 else prepared_mask(mask, lead, length, keys)
        if ready is None:  # (a mask that widens the scores: the layers broadcast it)
            return None
        m = ready.m
    wide = jit.threads_for(nbytes, SOFTMAX_COST * (1 + (q.shape[-1] + ev) / SIMD_EMBEDDINGS_COST))
    out = _simd(q3, k3, v3, scale, False, m, None, wide, 2 if divide else 1)
    return None if out is None else out.reshape(lead + (length, ev))


def _mask_args(
    mask: np.ndarray | None, rounded: int, causal: bool, lead: tuple, length: int, keys: int
) -> tuple | None:
    """The register rows' mask arguments (`_rows_args`) for a mask as `attention` (rounded 0)
    or `decomposed_attention` (1, 2: a float32 mask; none, a row of zeros) prepare it; None
    when the rows do not take it."""
    batch = math.prod(lead)
    if mask is None:
        m, keep = (_zero_rows(batch, length, keys) if rounded else None), None
    else:
        ready = None if rounded and mask.dtype != np.float32 else prepared_mask(mask, lead, length, keys)
        if ready is None:
            return None
        m, keep = ready.m, None if rounded else ready.keep
    return _rows_args(m, keep, causal, batch, length, keys)


def _zero_rows(batch: int, length: int, keys: int) -> MaskRows:
    """No mask, as the rounded rows take one: a row of zeros for every score row."""
    return MaskRows(np.zeros((1, keys), np.float32), np.zeros(batch * length, np.int64), False)


# widest heads (query and value embeddings) `_simd` takes (see the module's docstring)
SIMD_MAX_E = 64
# embeddings (query and value) a score that cost as much as its softmax, in the register rows
SIMD_EMBEDDINGS_COST = 32
_NO_MASK = np.zeros((0, 1), np.float32)
_NO_ROWS = np.zeros(0, np.int64)


# float64 scores per numpy block (512 KiB)
NUMPY_BLOCK_SCORES = 1 << 16


def _blocked_case(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> bool:
    """Whether the query-block paths take these shapes: `_batched`, and a long enough
    sequence."""
    return _batched(q, k, v) and q.shape[-2] * k.shape[-2] >= BLOCKED_MIN_SCORES


def _batched(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> bool:
    """Whether the shapes run as batch items: batch dims equal (not broadcasting), one float
    type, none empty."""
    lead = q.shape[:-2]
    return (
        q.ndim >= 3
        and k.shape[:-2] == lead
        and v.shape[:-2] == lead
        and q.dtype in (np.float32, np.float64)
        and k.dtype == q.dtype
        and v.dtype == q.dtype
        and q.shape[-1] > 0
        and math.prod(lead) > 0
    )


def attention_numpy(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float, causal: bool, mask: np.ndarray | None, out_dtype
) -> np.ndarray | None:
    """softmax(q k^T * scale + mask) v by query blocks in numpy (see the module's docstring): the
    whole-tensor numpy path's operations, block by block; None when the case is not that one."""
    if not _blocked_case(q, k, v) or np.dtype(out_dtype) != q.dtype:
        return None
    lead, length, keys, ev = q.shape[:-2], q.shape[-2], k.shape[-2], v.shape[-1]
    m = last = None
    if mask is not None and not causal:
        m = mask_rows(mask, lead, length, keys)
        if m is None:
            return None
        last = m.last()
    batch, q3, k3, v3 = _flat_batch(q, k, v)
    rows = max(16, NUMPY_BLOCK_SCORES // keys)
    out = np.empty((batch, length, ev), q.dtype)
    for b in range(batch):
        for q0 in range(0, length, rows):
            q1 = min(length, q0 + rows)
            index = None if m is None else m.index[b * length + q0 : b * length + q1]
            used = _keys_used(keys, q1, causal, last, index)
            scores = blas.matmul(q3[b, q0:q1], k3[b, :used].T).astype(np.float64)
            scores *= scale
            if causal:
                hidden = np.arange(used)[None, :] > np.arange(q0, q1)[:, None]
                scores[hidden] = -np.inf
            elif m is not None:
                block = m.rows[index][:, :used]
                scores = np.where(block, scores, -np.inf) if m.select else scores + block
            p = softmax(scores, -1, out_dtype=q.dtype)
            blas.matmul(p, v3[b, :used], out=out[b, q0:q1])
    return out.reshape(lead + (length, ev))
