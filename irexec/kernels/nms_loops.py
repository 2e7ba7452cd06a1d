"""@njit selection loops of the NMS family (`kernels/nms.py`): NonMaxSuppression's greedy loop
without soft-NMS and MulticlassNms's loop with its adaptive threshold, one class per call, with
the numpy path's float32 IoU step by step (the same operations in the same order, no fused
multiply-add: numba leaves float32 arithmetic in float32 and fast-math off; min and max that
need not propagate NaN, as the IoUs' docs say why) and its candidate order (score descending, then box index; a stable sort of the candidates in index order).
Float32 only (one specialization each)."""

from __future__ import annotations

import numpy as np

from .jit import njit

F32 = np.float32


@njit(inline="always")
def _pmax(a, b):
    """max(a, b), not NaN-propagating (see the IoUs)."""
    return a if a > b else b


@njit(inline="always")
def _pmin(a, b):
    return a if a < b else b


@njit(inline="always")
def _xy_iou(b, area, norm, i, j):
    """kernels.nms.multiclass_iou's IoU of boxes i and j ([x1, y1, x2, y2] rows of b). Plain
    min and max (np.maximum propagates NaN): a NaN coordinate makes its area NaN, so the IoU
    is NaN (or 0 when an area is <= 0) either way."""
    if area[i] <= 0 or area[j] <= 0:
        return F32(0)
    h = _pmax(_pmin(b[i, 3], b[j, 3]) - _pmax(b[i, 1], b[j, 1]) + norm, F32(0))
    w = _pmax(_pmin(b[i, 2], b[j, 2]) - _pmax(b[i, 0], b[j, 0]) + norm, F32(0))
    inter = h * w
    return inter / (area[i] + area[j] - inter)


@njit(inline="always")
def _passing(s, threshold, inclusive):
    """(indices, -scores) of the scores > threshold (>= when inclusive), in index order."""
    n = 0
    for i in range(s.size):
        if s[i] > threshold or (inclusive and s[i] == threshold):
            n += 1
    cand = np.empty(n, np.int64)
    keys = np.empty(n, F32)
    n = 0
    for i in range(s.size):
        if s[i] > threshold or (inclusive and s[i] == threshold):
            cand[n] = i
            keys[n] = -s[i]
            n += 1
    return cand, keys


@njit(inline="always")
def _best(cand, keys, size):
    """(the candidates whose key is at or below the size-th smallest key, in order: key, then
    index; the others' indices and keys, in index order). Ties at the cut all come first."""
    cut = np.partition(keys, size - 1)[size - 1]
    first = 0
    for j in range(keys.size):
        if keys[j] <= cut:
            first += 1
    head = np.empty(first, np.int64)
    head_keys = np.empty(first, F32)
    rest = np.empty(keys.size - first, np.int64)
    rest_keys = np.empty(keys.size - first, F32)
    a = 0
    b = 0
    for j in range(keys.size):
        if keys[j] <= cut:
            head[a] = cand[j]
            head_keys[a] = keys[j]
            a += 1
        else:
            rest[b] = cand[j]
            rest_keys[b] = keys[j]
            b += 1
    return head[np.argsort(head_keys, kind="mergesort")], rest, rest_keys


@njit(inline="always")
def _candidates(s, threshold, inclusive, top_k):
    """Indices of the scores > threshold (>= when inclusive), by score descending then index
    (the stable sort of the keys -score in index order); the first top_k of them (all when
    top_k < 0), sorting only the scores at or above the top_k-th largest."""
    cand, keys = _passing(s, threshold, inclusive)
    if 0 <= top_k < cand.size:
        if top_k == 0:
            return cand[:0]
        return _best(cand, keys, top_k)[0][:top_k]
    return cand[np.argsort(keys, kind="mergesort")]


@njit(inline="always")
def _iou_at(y0, x0, y1, x1, ar, k, r):
    """The IoU of kept box k and candidate r (positions in the score order), as the numpy path
    computes it: plain min and max (a NaN coordinate makes its box's area NaN, and the IoU NaN,
    or 0 when an area is <= 0, whichever way they treat it, as np.maximum does)."""
    h = _pmax(_pmin(y1[k], y1[r]) - _pmax(y0[k], y0[r]), F32(0))
    w = _pmax(_pmin(x1[k], x1[r]) - _pmax(x0[k], x0[r]), F32(0))
    inter = h * w
    v = inter / (ar[k] + ar[r] - inter)
    if ar[k] <= 0 or ar[r] <= 0:
        v = F32(0)
    return v


@njit(inline="always")
def _suppresses(y0, x0, y1, x1, ar, k, r, it, loose):
    """Whether kept box k suppresses candidate r (finite corners: no NaN IoU)."""
    v = _iou_at(y0, x0, y1, x1, ar, k, r)
    return v > it or (loose and v == it)


@njit(error_model="numpy")
def hard_nms(s, c, area, st, it, strict, max_out, kept):
    """The boxes one class keeps (in kept[:count], selection order); count, or -1 when an IoU
    is NaN (the numpy path and its general loop decide then).

    Each candidate, in order, is compared with the boxes kept so far, oldest first, until one
    suppresses it: the pairs the numpy path's passes (each kept box against the later alive
    candidates) compute for it, with the kept box as the IoU's first box, so the same float32
    values and the same choices; the loop stops at max_out kept boxes, where the numpy path has
    also compared the later candidates. Those comparisons decide nothing, unless one is NaN:
    then the numpy path runs its general loop, which selects what this loop does (it never
    reaches those candidates either).

    When every corner is finite and an IoU of 0 suppresses nothing (the threshold >= 0, > 0 for
    the non-strict test), a candidate is compared only with kept boxes whose ymin may lie in
    [its ymin - the tallest candidate's height, its ymax) (as the numpy path's `_YWindow`):
    the kept boxes are filed in buckets of ymin as tall as the tallest candidate (more where
    the range would need over 4 per candidate), and it looks in the buckets that range
    covers; every other kept box has intersection exactly 0, so IoU 0. Whether a candidate is
    suppressed does not depend on which suppressing box is found first, so the selection is
    the same; only the work changes (torchvision's batched NMS offsets each class's boxes
    apart: SSDlite's 26,703 boxes, 17,323 kept, took 0.64 s against every kept box)."""
    if max_out <= 0:
        return 0
    cand, keys = _passing(s, st, False)
    n = cand.size
    order = np.empty(n, np.int64)
    y0 = np.empty(n, F32)
    x0 = np.empty(n, F32)
    y1 = np.empty(n, F32)
    x1 = np.empty(n, F32)
    ar = np.empty(n, F32)
    block = max(256, 4 * min(max_out, n))  # candidates sorted at a time: most classes need one block
    loose = not strict  # v >= it suppresses
    at = np.empty(min(n, max_out), np.int64)  # the kept boxes' positions in `order`
    window = n > 0 and ((it >= 0) if strict else (it > 0))
    low, high, tallest = np.inf, -np.inf, 0.0
    for j in range(n):
        i = cand[j]
        if not (np.isfinite(c[i, 0]) and np.isfinite(c[i, 1]) and np.isfinite(c[i, 2]) and np.isfinite(c[i, 3])):
            window = False
            break
        low = min(low, np.float64(c[i, 0]))
        high = max(high, np.float64(c[i, 0]))
        tallest = max(tallest, np.float64(c[i, 2]) - np.float64(c[i, 0]))
    # in float64 with a margin: a superset of the window is harmless, a subset is not
    tallest = tallest * 1.001 + 1e-30
    width = max(tallest, (high - low) / (4.0 * max(n, 1))) if window else 1.0
    buckets = int((high - low) / width) + 1 if window else 1
    newest = np.full(buckets, -1, np.int64)  # each bucket's newest kept box (its number)
    after = np.empty(min(n, max_out), np.int64)  # the next kept box in the same bucket
    count = 0
    filled = 0
    r = 0
    while count < max_out and r < n:
        if r == filled:  # the next best candidates, in order (the whole order, block by block)
            if keys.size > block:
                head, cand, keys = _best(cand, keys, block)
            else:
                head = cand[np.argsort(keys, kind="mergesort")]
                keys = keys[:0]
            for i in head:
                order[filled] = i
                y0[filled], x0[filled], y1[filled], x1[filled] = c[i, 0], c[i, 1], c[i, 2], c[i, 3]
                ar[filled] = area[i]
                filled += 1
        suppressed = False
        if window:
            b_lo = max(0, int((np.float64(y0[r]) - tallest - low) / width))
            b_hi = min(buckets - 1, int((np.float64(y1[r]) - low) / width))
            for bucket in range(b_lo, b_hi + 1):
                q = newest[bucket]
                while q >= 0 and not suppressed:
                    suppressed = _suppresses(y0, x0, y1, x1, ar, at[q], r, it, loose)
                    q = after[q]
                if suppressed:
                    break
        else:
            for q in range(count):
                v = _iou_at(y0, x0, y1, x1, ar, at[q], r)
                if v != v:
                    return -1
                if v > it or (loose and v == it):
                    suppressed = True
                    break
        if not suppressed:
            at[count] = r
            kept[count] = order[r]
            if window:  # filed by its ymin
                bucket = int((np.float64(y0[r]) - low) / width)
                after[count] = newest[bucket]
                newest[bucket] = count
            count += 1
        r += 1
    return count


@njit(error_model="numpy")
def multiclass_nms(s, b, area, norm, it, st, top_k, shrink, eta, kept):
    """MulticlassNms's selection for one class (kernels.nms.multiclass_nms_class): the kept
    boxes in kept[:count]; returns count."""
    order = _candidates(s, st, True, top_k)
    adaptive = it
    count = 0
    for k in range(order.size):
        i = order[k]
        score = s[i]
        original = score
        limit = 1 if s[i] <= st else count  # the score test ends after the newest kept box
        hard = False
        for q in range(min(limit, count)):
            v = _xy_iou(b, area, norm, i, kept[count - 1 - q])
            score = score * (F32(1) if v <= adaptive else F32(0))
            if v >= adaptive:
                hard = True
                break
            if score <= st:
                break
        if hard:
            continue
        if shrink and adaptive > 0.5:
            adaptive = F32(adaptive * eta)
        if score == original:
            kept[count] = i
            count += 1
    return count


def warm() -> None:
    s = np.array([0.9, 0.8], F32)
    boxes = np.array([[0, 0, 1, 1], [0, 0, 1, 2]], F32)
    area = np.ones(2, F32)
    kept = np.empty(2, np.int64)
    hard_nms(s, boxes, area, F32(0.1), F32(0.5), True, 2, kept)
    multiclass_nms(s, boxes, area, F32(0), F32(0.5), F32(0.1), -1, True, F32(0.9), kept)
