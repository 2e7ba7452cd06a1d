"""@njit kernels for softmax and moments over the last axis of a (rows, n) contiguous view: one
row per task, float64 accumulation, the exact max, NaN propagates. Serial and nogil (run on
`jit.parallel_for`'s threads); the inputs arrive as float32 or float64 (float16 widened first),
so each kernel has two specializations.

The exponentials are `vexp`, a float64 exp that LLVM vectorizes (libm's exp is a call per
element: 5-12 ns, against under 2 ns here): Cody-Waite reduction by ln 2, a degree-12 Taylor
polynomial on |r| <= ln2/2 (truncation below 2e-16), and 2^k built in the exponent bits (in two
factors near the ends of the range, so subnormal results and overflow come out right). Within
2 ulps of libm's exp from -760 to 720 (tests/test_ops_numpy.py), far inside the one rounding to
float32 that follows. Its loop is compiled without `reassoc`, which would fold the
Cody-Waite split back into one product. Attention's rows with a float32 result take float32
exponentials instead (`exp_neg_f32`, within 2 ulps), as OpenVINO's float32 softmax does."""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba.core import types
from numba.core.extending import intrinsic

from . import jit
from .jit import njit
from .reduce.loops import maximum, minimum
from .simd import (
    LANES,
    at,
    dfma,
    dhmax_nan,
    dmax_nan,
    dnarrow,
    dsplat,
    dsub,
    dwiden,
    fma_f32,
    hmax,
    hsum,
    put,
    vabove,
    vadd,
    vfirst,
    vfma,
    vfma2,
    vfma4,
    vfma_exact,
    vfnma,
    vload,
    vmul,
    vpow2_bits,
    vsplat,
    vsplat_at,
    vstore,
    vsub,
    vzero,
    vzero_below,
)

_SUM_FM = {"reassoc", "contract", "nsz", "arcp"}
_EXACT_FM = {"contract", "nsz", "arcp"}  # no reassoc: vexp's steps must stay in order


@intrinsic
def _float_bits(typingctx, v):
    """The bits of a float64 (as int64) or a float32 (as int32)."""
    if v not in (types.float64, types.float32):
        return None
    width = v.bitwidth

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(width))

    return (types.int64 if width == 64 else types.int32)(v), codegen


@intrinsic
def _bits_f64(typingctx, v):
    if v != types.int64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01  # ln 2 in 32 bits: k * _LN2_HI is exact for |k| < 2^20
_LN2_LO = 1.90821492927058770002e-10
_SHIFT = 6755399441055744.0  # 1.5 * 2^52: the bits of k + _SHIFT end in the integer k
_SHIFT_BITS = int(np.float64(_SHIFT).view(np.int64))
_C = [1.0 / math.factorial(i) for i in range(13)]
_UNDER = -745.2  # exp(-745.2) is below half the smallest float64 denormal: 0
_C2, _C3, _C4, _C5, _C6, _C7, _C8, _C9, _C10, _C11, _C12 = _C[2:]
_TWO60 = 2.0**60
_TWO_M60 = 2.0**-60


@njit(fastmath=_EXACT_FM, inline="always")
def vexp(x):
    """exp(x) in float64 for x not NaN, in straight-line code LLVM vectorizes. Below -745.2 (exp
    rounds to 0 there) it computes exp(0) and returns 0: computing the underflow itself went
    through denormal products, a microcode assist each (a softmax row of 512 with 212 masked
    out by -1e4: 4.9 -> 1.5 ns an element)."""
    under = x < _UNDER
    xc = 0.0 if under else min(x, 710.0)  # exp is inf above
    k = np.floor(xc * _LOG2E + 0.5)
    r = (xc - k * _LN2_HI) - k * _LN2_LO
    p = _C12
    p = p * r + _C11
    p = p * r + _C10
    p = p * r + _C9
    p = p * r + _C8
    p = p * r + _C7
    p = p * r + _C6
    p = p * r + _C5
    p = p * r + _C4
    p = p * r + _C3
    p = p * r + _C2
    p = p * r + 1.0
    p = p * r + 1.0
    big = k > 1000.0
    small = k < -1000.0
    off = -60.0 if big else (60.0 if small else 0.0)
    fix = _TWO60 if big else (_TWO_M60 if small else 1.0)
    scale = _bits_f64(((_float_bits(k + off + _SHIFT) - _SHIFT_BITS) + 1023) << 52)
    return 0.0 if under else p * scale * fix


# exp(r) on |r| <= ln2 / 2 by its Taylor polynomial of degree 11: the remainder is below
# (ln2/2)^12 / 12! e^(ln2/2) = 8.9e-15
_X = tuple(1.0 / math.factorial(i) for i in range(12))


@njit(fastmath=_EXACT_FM, error_model="numpy", inline="always")
def _reduced_neg(a):
    """(r, kb) with a = k ln2 + r, |r| <= ln2/2, k the integer in kb's low bits, for `exp_neg`
    and `exp_neg_short` (a clamped at -700: 2^k stays a normal number)."""
    ac = max(a, -700.0)
    kb = ac * _LOG2E + _SHIFT  # round to nearest integer k, in the low bits
    k = kb - _SHIFT
    return (ac - k * _LN2_HI) - k * _LN2_LO, kb


@njit(fastmath=_EXACT_FM, error_model="numpy", inline="always")
def _scaled_neg(a, p, kb):
    """p 2^k (k in kb's low bits), exactly 0 below -700: x * exp(-inf) is NaN at x = -inf."""
    e = p * _bits_f64((_float_bits(kb) - _SHIFT_BITS + 1023) << 52)
    return 0.0 if a < -700.0 else e


@njit(fastmath=_EXACT_FM, error_model="numpy", inline="always")
def _horner_from_8(p, r):
    """The Taylor polynomial's Horner steps from the r^7 coefficient down, p holding the
    higher ones (`exp_neg`: degree 11, `exp_neg_short`: degree 9)."""
    p = p * r + _X[7]
    p = p * r + _X[6]
    p = p * r + _X[5]
    p = p * r + _X[4]
    p = p * r + _X[3]
    p = p * r + _X[2]
    p = p * r + 1.0
    return p * r + 1.0


@njit(fastmath=_EXACT_FM, error_model="numpy", inline="always")
def exp_neg(a):
    """exp(a) for a <= 0 (not NaN), 0 below -700 (exp(-700) = 1e-304: every result these
    kernels round to float32 is then 0 anyway), so 2^k is always a normal number: normalize_loops'
    vexp without its overflow and underflow fix-ups, and one term less (9e-15 against 2 ulps):
    sigmoid and swish went from 1.5-1.7 to 1.1 ms on 1.2 M elements (CPU time, one thread)."""
    r, kb = _reduced_neg(a)
    p = _X[11] * r + _X[10]
    p = p * r + _X[9]
    return _scaled_neg(a, _horner_from_8(p * r + _X[8], r), kb)


@njit(fastmath=_EXACT_FM, error_model="numpy", inline="always")
def exp_neg_short(a):
    """`exp_neg` with the Taylor polynomial cut at degree 9: the remainder is below
    0.3466^10 / 10! e^0.3466 = 1e-11 relative, for results rounded to float32 once (the
    element-wise kernels' sigmoid forms: they stay the float64 formula's rounding but for near
    ties, as at degree 11; degree 8, 2.8e-10, moved 18 of 104005 Gelu results one ulp); two
    multiply-adds fewer."""
    r, kb = _reduced_neg(a)
    return _scaled_neg(a, _horner_from_8(_X[9] * r + _X[8], r), kb)


@intrinsic
def _bits_f32(typingctx, v):
    """The float32 whose bits are the low 32 bits of the integer v (numba widens int32
    arithmetic to int64)."""
    if not isinstance(v, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        low = builder.trunc(args[0], ir.IntType(32)) if v.bitwidth > 32 else args[0]
        return builder.bitcast(low, ir.FloatType())

    return types.float32(v), codegen


_F = np.float32
_LOG2E_F = _F(1.4426950408889634)
_LN2_HI_F = _F(0.693359375)  # 9 bits: k * _LN2_HI_F is exact for |k| < 2^15
_LN2_LO_F = _F(math.log(2.0) - 0.693359375)
_SHIFT_F = _F(12582912.0)  # 1.5 * 2^23: the bits of k + _SHIFT_F end in the integer k
_SHIFT_BITS_F = np.int32(np.float32(12582912.0).view(np.int32))
_XF = tuple(_F(1.0 / math.factorial(i)) for i in range(8))
EXP_LOW_F = _F(-87.0)  # exp(-87) = 1.6e-38, above float32's smallest normal: 2^k stays normal


@njit(fastmath=_EXACT_FM, error_model="numpy", inline="always")
def exp_neg_f32(a):
    """exp(a) in float32 for a float32 a <= 0 (not NaN), 0 below -87: Cody-Waite reduction by
    ln 2 in float32 (the high part of ln 2 has 9 bits, so k * it is exact) and a degree-7 Taylor
    polynomial on |r| <= ln2/2 (truncation below 7e-9, a ninth of float32's ulp), 2^k built in
    the exponent bits. Within 2 ulps of the exact value (tests/test_ops_numpy.py sweeps it);
    eight float32 lanes per vector where `exp_neg` has four float64 ones."""
    ac = max(a, EXP_LOW_F)
    kb = ac * _LOG2E_F + _SHIFT_F
    k = kb - _SHIFT_F
    r = (ac - k * _LN2_HI_F) - k * _LN2_LO_F
    p = _XF[7] * r + _XF[6]
    p = p * r + _XF[5]
    p = p * r + _XF[4]
    p = p * r + _XF[3]
    p = p * r + _XF[2]
    p = p * r + _XF[1]
    p = p * r + _XF[0]
    e = p * _bits_f32((_float_bits(kb) - _SHIFT_BITS_F + 127) << 23)
    return _F(0.0) if a < EXP_LOW_F else e


@njit(fastmath=_EXACT_FM)
def scaled_exp(src, scale, m, dst, short):
    """dst[j] = exp(src[j] * scale - m) in float64: by `vexp`, or when `short` (m the finite
    max of src * scale, a float32 result) by `exp_neg`, without vexp's overflow and underflow
    fix-ups and a term shorter (9e-15 relative: the float32 results stay the float64 formula's
    rounding but for near ties; softmax of (64, 512) float32 rows on one thread 1.57 -> 1.0 ns
    an element for the exponentials, 1.97 -> 1.4 in all). A fused src * scale - m can be a
    half ulp above 0 at the max: exp_neg's reduction takes it (k = 0)."""
    if short:
        for j in range(src.size):
            dst[j] = exp_neg(np.float64(src[j]) * scale - m)
    else:
        for j in range(src.size):
            dst[j] = vexp(np.float64(src[j]) * scale - m)


@njit(fastmath=_EXACT_FM)
def _log_out(src, scale, m, ls, dst):
    """dst[j] = (src[j] * scale - m) - ls, in this order (no reassoc: near 0 the order decides
    the last bits)."""
    for j in range(src.size):
        dst[j] = (np.float64(src[j]) * scale - m) - ls


@njit(fastmath=_SUM_FM, inline="always")
def _softmax_row(row, keep, scale, log, e, dst):
    """dst[:keep] = softmax (or log-softmax) of row[:keep] * scale, dst[keep:] = 0: the exact
    max (NaN propagates to the whole row), float64 exponentials (`scaled_exp`: `exp_neg` for a
    float32 dst) and sum, one rounding."""
    n = dst.size
    m = -np.inf
    for j in range(keep):
        m = maximum(m, np.float64(row[j]) * scale)
    if m != m:
        for j in range(n):
            dst[j] = np.nan
        return
    finite = m != np.inf and m != -np.inf
    if not finite:
        m = 0.0  # as the numpy path: the infinities then give NaN where the definition does
    scaled_exp(row[:keep], scale, m, e, finite and dst.itemsize == 4)
    if log:
        # log(sum e) = log1p(the sum without one maximum's 1): exact to the last bits when the
        # maximum dominates, where log(sum) would keep only the sum's absolute precision
        rest = 0.0
        tops = 0.0
        for j in range(keep):
            top = np.float64(row[j]) * scale == m
            rest += 0.0 if top else e[j]
            tops += 1.0 if top else 0.0
        if tops != 1.0:  # (written apart: reassoc would turn rest + (tops - 1) into (rest + tops) - 1)
            rest += tops - 1.0
        _log_out(row[:keep], scale, m, math.log1p(rest), dst)
    else:
        s = 0.0
        for j in range(keep):
            s += e[j]
        inv = 1.0 / s
        for j in range(keep):
            dst[j] = e[j] * inv
    for j in range(keep, n):
        dst[j] = 0.0


@njit(fastmath=_SUM_FM, error_model="numpy")
def softmax_rows(t_lo, t_hi, x, out, log):
    n = x.shape[1]
    e = np.empty(n)
    for r in range(t_lo, t_hi):
        _softmax_row(x[r], n, 1.0, log, e, out[r])


@njit(fastmath=_SUM_FM, error_model="numpy")
def _softmax_row_out(row, keep, scale, log, e, dst):
    """`_softmax_row` as a function of its own, for the kernels compiled without reassoc: its
    sums keep their reassociated (vectorized) order, the numpy path's numbers."""
    _softmax_row(row, keep, scale, log, e, dst)


@njit(fastmath=_SUM_FM, error_model="numpy")
def _sum_f64(e, off, keep):
    """The float64 sum of e[off:off + keep] (reassociated: eight lanes at a time; a function of
    its own, so the kernels compiled without reassoc that call it keep that order), read by
    offset (`at`: a view of the row would cost its reference counts)."""
    s = 0.0
    for j in range(keep):
        s += np.float64(at(e, off + j))
    return s


@njit(fastmath=_EXACT_FM, error_model="numpy", inline="always")
def _attention_exps_f32(row, keep, scale, fma, e):
    """The exponentials of `_attention_row_f32` into e[:keep] and the reciprocal of their float64
    sum; 0.0, nothing useful written, when keep is 0 or the max is not finite (NaN, or
    infinities: the general row)."""
    if keep == 0:
        return 0.0
    if scale > 0.0:  # the max of the products is the product of the max (rounding is monotone)
        top = row[0]
        for j in range(1, keep):
            top = maximum(top, row[j])
        m = np.float64(top) * scale
    elif scale < 0.0:
        top = row[0]
        for j in range(1, keep):
            top = minimum(top, row[j])
        m = np.float64(top) * scale
    else:
        m = -np.inf
        for j in range(keep):
            m = maximum(m, np.float64(row[j]) * scale)
    if not (m > -np.inf and m < np.inf):
        return 0.0
    if fma and abs(m) < 3.0e38:  # -max in float32 (finite)
        s32 = np.float32(scale)
        neg = -np.float32(m)
        for j in range(keep):
            e[j] = exp_neg_f32(fma_f32(np.float32(row[j]), s32, neg))
    else:
        for j in range(keep):
            e[j] = exp_neg_f32(np.float32(np.float64(row[j]) * scale - m))
    return 1.0 / _sum_f64(e, 0, keep)


@njit(fastmath=_EXACT_FM, error_model="numpy", inline="always")
def _attention_row_f32(row, keep, scale, fma, e, dst):
    """The softmax of row[:keep] * scale for a float32 result, with float32 exponentials
    (`exp_neg_f32`, within 2 ulps, into the float32 buffer e) summed in float64 and each
    probability rounded once from float64; False, nothing written, when the max is not finite
    (NaN, or infinities: the general row). A probability is then within about 2.5 ulps of the
    exact one, plus the rounding of its argument to float32 (a float32 result, as OpenVINO's
    float32 softmax computes it). Each argument is score * scale - max rounded once to float32:
    with `fma` (a float32 row and `attention.fma_scale`), by one float32 multiply-add against the max
    rounded to float32 (every argument shifted alike by under half the max's ulp, which the
    normalization takes out), else in float64 (`_attention_exps_f32`). Inlined into kernels
    compiled without reassoc: the exponential's reduction stays in order; the sum is
    `_sum_f64`'s."""
    inv = _attention_exps_f32(row, keep, scale, fma, e)
    if inv == 0.0:
        return False
    for j in range(keep):
        dst[j] = np.float64(e[j]) * inv
    for j in range(keep, dst.size):
        dst[j] = 0.0
    return True


@njit(fastmath=_EXACT_FM, error_model="numpy", inline="always")
def _added_mask_exps_f32(s, e, off, mk, moff, n, scale):
    """The exponentials of `_added_mask_row_f32` for the row s[off:off + n] plus the float
    mask's row mk[moff:moff + n], into e[off:off + keep], and (the reciprocal of their float64
    sum, keep); (0.0, 0) when every score is -inf or the max is not finite. By offsets (`at`,
    `put`): the register rows keep a group's rows in flat buffers, where a row's three views
    cost their reference counts ((4, 128, 8) with a float mask 165 -> 146 us on one thread,
    the same bits)."""
    keep = n
    while keep > 0 and np.float64(at(s, off + keep - 1)) * scale + np.float64(at(mk, moff + keep - 1)) == -np.inf:
        keep -= 1
    if keep == 0:
        return 0.0, 0
    m = -np.inf
    for j in range(keep):
        m = maximum(m, np.float64(at(s, off + j)) * scale + np.float64(at(mk, moff + j)))
    if not (m > -np.inf and m < np.inf):
        return 0.0, 0
    for j in range(keep):
        x = np.float32((np.float64(at(s, off + j)) * scale + np.float64(at(mk, moff + j))) - m)
        put(e, off + j, exp_neg_f32(x))
    return 1.0 / _sum_f64(e, off, keep), keep


@njit(fastmath=_EXACT_FM, error_model="numpy", inline="always")
def _added_mask_row_f32(row, mk, scale, e, dst):
    """`_attention_row_f32` of row * scale + mk (a float mask's row, added in float64) up to
    its last score that is not -inf, without writing the sums out: each is computed again by
    the pass that needs it (the same float64 operations). False, nothing written, when every
    score is -inf or the max is not finite (the general row)."""
    inv, keep = _added_mask_exps_f32(row, e, 0, mk, 0, row.size, scale)
    if inv == 0.0:
        return False
    for j in range(keep):
        dst[j] = np.float64(e[j]) * inv
    for j in range(keep, dst.size):
        dst[j] = 0.0
    return True


@njit(fastmath=_EXACT_FM, error_model="numpy", inline="always")
def _exps_row(inv, keep, dst, inv_out, r):
    """After exponentials written into dst[:keep] with `inv` the reciprocal of their sum (0.0:
    the row failed, nothing written): dst's tail zeroed and inv_out[r] = inv; whether the row
    is done."""
    if inv == 0.0:
        return False
    for j in range(keep, dst.size):
        dst[j] = 0.0
    inv_out[r] = inv
    return True


@njit(fastmath=_EXACT_FM, error_model="numpy")
def attention_softmax_rows(t_lo, t_hi, scores, out, scale, causal, length, first, f32, fma, inv):
    """Attention's softmax over rows of raw scores q.k (float32 or float64): each score times
    `scale` in float64, the causal mask (row r is query q = (first + r) % length; key j is kept
    when j <= q) applied as -inf, then the softmax as `softmax_rows` computes it, one
    rounding into out. The same float64 operations as scaling, masking and softmax apart; for a
    float32 result (`f32`) `_attention_row_f32`'s, with float32 exponentials (`fma`: float32
    scores and `attention.fma_scale`). With `inv` (one float64 a row; empty: none) a float32
    row's exponentials stay unnormalized in out and inv[r] is the reciprocal of their sum (the
    caller scales what it computes from the row instead: a pass over the row saved); a row
    the general way is normalized, inv[r] = 1."""
    n = scores.shape[1]
    e = np.empty(n)
    e32 = np.empty(n, np.float32)
    raw = inv.size > 0
    for r in range(t_lo, t_hi):
        keep = min(n, (first + r) % length + 1) if causal else n
        if f32 and raw and _exps_row(_attention_exps_f32(scores[r], keep, scale, fma, out[r]), keep, out[r], inv, r):
            continue
        if f32 and not raw and _attention_row_f32(scores[r], keep, scale, fma, e32, out[r]):
            continue
        _softmax_row_out(scores[r], keep, scale, False, e, out[r])
        if raw:
            inv[r] = 1.0


@njit(fastmath=_EXACT_FM, error_model="numpy", inline="always")
def _masked_scores(row, mk, scale, select, t):
    """A masked row's float64 scores into t: row * scale where the boolean mk keeps it, -inf
    elsewhere (`select`), or row * scale + mk (a float mask); and how many to take, up to the
    last that is not -inf (all of them when every score is -inf: the softmax of -inf
    everywhere, NaN, as the numpy path's)."""
    n = row.size
    if select:
        for j in range(n):
            t[j] = np.float64(row[j]) * scale if mk[j] else -np.inf
    else:
        for j in range(n):
            t[j] = np.float64(row[j]) * scale + np.float64(mk[j])
    keep = n
    while keep > 0 and t[keep - 1] == -np.inf:
        keep -= 1
    return keep if keep > 0 else n


@njit(fastmath=_EXACT_FM, error_model="numpy")
def attention_masked_rows(t_lo, t_hi, scores, mask, mask_row, prefix, select, out, scale, f32, fma, inv):
    """Attention's softmax over rows of raw scores q.k with an attention mask: row r's mask is
    mask[mask_row[r]]; a boolean mask (`select`) keeps score * scale where it is true (-inf elsewhere), a
    float mask is added to score * scale, in float64. The softmax is then `softmax_rows`'s (for
    a float32 result `_attention_row_f32`'s), over the row up to its last score that is not
    -inf (the masked tail of a causal mask: its exponentials are 0 and are not computed); for a
    float64 result the same float64 operations as masking and softmax apart. A boolean mask row that keeps its
    first k > 0 keys and no other (`mask_bounds`' prefix; -1 otherwise) takes, for a float32
    result, the causal kernel's row: the raw scores up to k, without the masked copy (the same
    operations: score * scale, then * 1.0); a row whose maximum is not finite goes the general
    way. `inv`: as `attention_softmax_rows`'s."""
    n = scores.shape[1]
    e = np.empty(n)
    e32 = np.empty(n, np.float32)
    t = np.empty(n)
    raw = inv.size > 0
    for r in range(t_lo, t_hi):
        row = scores[r]
        k = min(prefix[mask_row[r]], n)
        dst = out[r]
        if f32 and k > 0:
            if raw and _exps_row(_attention_exps_f32(row, k, scale, fma, dst), k, dst, inv, r):
                continue
            if not raw and _attention_row_f32(row, k, scale, fma, e32, dst):
                continue
        mk = mask[mask_row[r]]
        if f32 and not select:
            if raw:
                got, keep = _added_mask_exps_f32(row, dst, 0, mk, 0, row.size, scale)
                if _exps_row(got, keep, dst, inv, r):
                    continue
            elif _added_mask_row_f32(row, mk, scale, e32, dst):
                continue
        if raw:
            inv[r] = 1.0
        keep = _masked_scores(row, mk, scale, select, t)
        if f32 and _attention_row_f32(t, keep, 1.0, False, e32, dst):
            continue
        _softmax_row_out(t, keep, 1.0, False, e, dst)


# query rows `attention_simd_rows` takes at once: two quads, the second reading each slab of
# keys and values from the L1 cache after the first (one quad a group read them from L2 twice
# as often: (1, 2, 1500, 16) 5.2 -> 4.8 ms, (1, 12, 128, 64) 0.78 -> 0.75, one thread)
SIMD_ROWS = 8


@njit(fastmath=_EXACT_FM, error_model="numpy", inline="always")
def _scores4(qr, e, ktb, sp, s, r, j):
    """s[(r + i) sp + j + l] = q_i . k_(j + l) for the four query rows r + i of qr (e floats
    each) and 32 keys j + l, from the keys transposed and padded (ktb: e rows of sp floats):
    eight sums of 16 lanes in registers, each a chain of multiply-adds in embedding order."""
    o = r * e
    a0 = a1 = a2 = a3 = b0 = b1 = b2 = b3 = vzero()
    for d in range(e):
        x = vload(ktb, d * sp + j)
        y = vload(ktb, d * sp + j + LANES)
        a0, b0 = vfma2(x, y, at(qr, o + d), a0, b0)
        a1, b1 = vfma2(x, y, at(qr, o + e + d), a1, b1)
        a2, b2 = vfma2(x, y, at(qr, o + 2 * e + d), a2, b2)
        a3, b3 = vfma2(x, y, at(qr, o + 3 * e + d), a3, b3)
    o = r * sp + j
    vstore(s, o, a0)
    vstore(s, o + LANES, b0)
    vstore(s, o + sp, a1)
    vstore(s, o + sp + LANES, b1)
    vstore(s, o + 2 * sp, a2)
    vstore(s, o + 2 * sp + LANES, b2)
    vstore(s, o + 3 * sp, a3)
    vstore(s, o + 3 * sp + LANES, b3)


@njit(fastmath=_EXACT_FM, error_model="numpy", inline="always")
def _scores4_narrow(qr, e, ktb, sp, s, r, j):
    """`_scores4` for 16 keys j + l: four sums of 16 lanes, eight registers where vectors hold 8
    floats (AVX2: `_scores4`'s eight sums take all sixteen and spill); each lane the same chain
    of multiply-adds, the same bits."""
    o = r * e
    a0 = a1 = a2 = a3 = vzero()
    for d in range(e):
        x = vload(ktb, d * sp + j)
        a0 = vfma(vsplat_at(qr, o + d), x, a0)
        a1 = vfma(vsplat_at(qr, o + e + d), x, a1)
        a2 = vfma(vsplat_at(qr, o + 2 * e + d), x, a2)
        a3 = vfma(vsplat_at(qr, o + 3 * e + d), x, a3)
    o = r * sp + j
    vstore(s, o, a0)
    vstore(s, o + sp, a1)
    vstore(s, o + 2 * sp, a2)
    vstore(s, o + 3 * sp, a3)


@njit(fastmath=_EXACT_FM, error_model="numpy", inline="always")
def _weighted4(p, sp, r, vb, evp, width, c, acc):
    """acc[(r + i) evp + c + l] = the float32 sum of p_i[j] * v_j[c + l] over keys j < width,
    for the four rows r + i of p (sp floats each) and 16 values c + l, the values padded to evp
    floats a key (vb): the even and the odd keys in separate sums (eight chains)."""
    o0 = r * sp
    o1, o2, o3 = o0 + sp, o0 + 2 * sp, o0 + 3 * sp
    a0 = a1 = a2 = a3 = b0 = b1 = b2 = b3 = vzero()
    for h in range(width // 2):
        j = 2 * h
        x = vload(vb, j * evp + c)
        y = vload(vb, (j + 1) * evp + c)
        a0 = vfma(vsplat_at(p, o0 + j), x, a0)
        b0 = vfma(vsplat_at(p, o0 + j + 1), y, b0)
        a1 = vfma(vsplat_at(p, o1 + j), x, a1)
        b1 = vfma(vsplat_at(p, o1 + j + 1), y, b1)
        a2 = vfma(vsplat_at(p, o2 + j), x, a2)
        b2 = vfma(vsplat_at(p, o2 + j + 1), y, b2)
        a3 = vfma(vsplat_at(p, o3 + j), x, a3)
        b3 = vfma(vsplat_at(p, o3 + j + 1), y, b3)
    if width % 2:
        j = width - 1
        x = vload(vb, j * evp + c)
        a0 = vfma(vsplat_at(p, o0 + j), x, a0)
        a1 = vfma(vsplat_at(p, o1 + j), x, a1)
        a2 = vfma(vsplat_at(p, o2 + j), x, a2)
        a3 = vfma(vsplat_at(p, o3 + j), x, a3)
    vstore(acc, r * evp + c, vadd(a0, b0))
    vstore(acc, (r + 1) * evp + c, vadd(a1, b1))
    vstore(acc, (r + 2) * evp + c, vadd(a2, b2))
    vstore(acc, (r + 3) * evp + c, vadd(a3, b3))


@njit(fastmath=_EXACT_FM, error_model="numpy", inline="always")
def _weighted4x4(p, sp, r, vb, evp, width, c, acc):
    """`_weighted4` for 64 values c + l at once: four rows by four vectors of 16 values, each
    key's four value vectors loaded once for the sixteen sums (a key at a time: sixteen
    chains)."""
    o0 = r * sp
    o1, o2, o3 = o0 + sp, o0 + 2 * sp, o0 + 3 * sp
    a0 = a1 = a2 = a3 = b0 = b1 = b2 = b3 = vzero()
    c0 = c1 = c2 = c3 = d0 = d1 = d2 = d3 = vzero()
    for j in range(width):
        o = j * evp + c
        x0 = vload(vb, o)
        x1 = vload(vb, o + LANES)
        x2 = vload(vb, o + 2 * LANES)
        x3 = vload(vb, o + 3 * LANES)
        a0, b0, c0, d0 = vfma4(vsplat_at(p, o0 + j), x0, x1, x2, x3, a0, b0, c0, d0)
        a1, b1, c1, d1 = vfma4(vsplat_at(p, o1 + j), x0, x1, x2, x3, a1, b1, c1, d1)
        a2, b2, c2, d2 = vfma4(vsplat_at(p, o2 + j), x0, x1, x2, x3, a2, b2, c2, d2)
        a3, b3, c3, d3 = vfma4(vsplat_at(p, o3 + j), x0, x1, x2, x3, a3, b3, c3, d3)
    _store4(acc, r * evp + c, a0, b0, c0, d0)
    _store4(acc, (r + 1) * evp + c, a1, b1, c1, d1)
    _store4(acc, (r + 2) * evp + c, a2, b2, c2, d2)
    _store4(acc, (r + 3) * evp + c, a3, b3, c3, d3)


@njit(fastmath=_EXACT_FM, error_model="numpy", inline="always")
def _weighted2(p, sp, r, vb, evp, width, c, acc):
    """`_weighted4` for the two rows r, r + 1: four sums of 16 lanes (eight AVX2 registers), the
    same chains, the same bits."""
    o0 = r * sp
    o1 = o0 + sp
    a0 = a1 = b0 = b1 = vzero()
    for h in range(width // 2):
        j = 2 * h
        x = vload(vb, j * evp + c)
        y = vload(vb, (j + 1) * evp + c)
        a0 = vfma(vsplat_at(p, o0 + j), x, a0)
        b0 = vfma(vsplat_at(p, o0 + j + 1), y, b0)
        a1 = vfma(vsplat_at(p, o1 + j), x, a1)
        b1 = vfma(vsplat_at(p, o1 + j + 1), y, b1)
    if width % 2:
        j = width - 1
        x = vload(vb, j * evp + c)
        a0 = vfma(vsplat_at(p, o0 + j), x, a0)
        a1 = vfma(vsplat_at(p, o1 + j), x, a1)
    vstore(acc, r * evp + c, vadd(a0, b0))
    vstore(acc, (r + 1) * evp + c, vadd(a1, b1))


@njit(fastmath=_EXACT_FM, error_model="numpy", inline="always")
def _weighted4x1(p, sp, r, vb, evp, width, c, acc):
    """`_weighted4x4`'s sums for the 16 values c + l alone: four rows by one vector (eight AVX2
    registers), a key at a time, the same chains, the same bits."""
    o0 = r * sp
    o1, o2, o3 = o0 + sp, o0 + 2 * sp, o0 + 3 * sp
    a0 = a1 = a2 = a3 = vzero()
    for j in range(width):
        x = vload(vb, j * evp + c)
        a0 = vfma(vsplat_at(p, o0 + j), x, a0)
        a1 = vfma(vsplat_at(p, o1 + j), x, a1)
        a2 = vfma(vsplat_at(p, o2 + j), x, a2)
        a3 = vfma(vsplat_at(p, o3 + j), x, a3)
    vstore(acc, r * evp + c, a0)
    vstore(acc, (r + 1) * evp + c, a1)
    vstore(acc, (r + 2) * evp + c, a2)
    vstore(acc, (r + 3) * evp + c, a3)


@njit(inline="always")
def _store4(acc, o, a, b, c, d):
    """acc[o:o + 64] = the four vectors a, b, c, d."""
    vstore(acc, o, a)
    vstore(acc, o + LANES, b)
    vstore(acc, o + 2 * LANES, c)
    vstore(acc, o + 3 * LANES, d)


@njit(fastmath=_EXACT_FM, error_model="numpy")
def _weighted(p, sp, r, vb, evp, width, acc):
    """`_weighted4` over every value of the four rows r + i of p: 64 at a time by
    `_weighted4x4`, the rest 16 at a time. A function of its own: inlined, its array arguments'
    reference counts stayed in the row groups' loop."""
    c = 0
    while c + 4 * LANES <= evp:
        _weighted4x4(p, sp, r, vb, evp, width, c, acc)
        c += 4 * LANES
    while c < evp:
        _weighted4(p, sp, r, vb, evp, width, c, acc)
        c += LANES


@njit(fastmath=_EXACT_FM, error_model="numpy")
def _weighted_narrow(p, sp, r, vb, evp, width, acc):
    """`_weighted`'s sums, the same bits, in sums of at most eight AVX2 registers: the values of
    whole 64s 16 at a time as `_weighted4x4` adds them, the rest two rows at a time as
    `_weighted4`."""
    c = 0
    while c + 4 * LANES <= evp:
        for h in range(4):
            _weighted4x1(p, sp, r, vb, evp, width, c + h * LANES, acc)
        c += 4 * LANES
    while c < evp:
        _weighted2(p, sp, r, vb, evp, width, c, acc)
        _weighted2(p, sp, r + 2, vb, evp, width, c, acc)
        c += LANES


_POW2_BIAS = np.int32(_SHIFT_BITS_F - 127)


@njit(fastmath=_EXACT_FM, error_model="numpy", inline="always")
def vexp_neg_f32(a):
    """`exp_neg_f32` on 16 lanes, its operations in its order (contracted alike)."""
    low = vsplat(EXP_LOW_F)
    ac = vabove(a, low)
    kb = vfma(ac, vsplat(_LOG2E_F), vsplat(_SHIFT_F))
    k = vsub(kb, vsplat(_SHIFT_F))
    r = vfnma(k, vsplat(_LN2_LO_F), vfnma(k, vsplat(_LN2_HI_F), ac))
    p = vfma(vsplat(_XF[7]), r, vsplat(_XF[6]))
    p = vfma(p, r, vsplat(_XF[5]))
    p = vfma(p, r, vsplat(_XF[4]))
    p = vfma(p, r, vsplat(_XF[3]))
    p = vfma(p, r, vsplat(_XF[2]))
    p = vfma(p, r, vsplat(_XF[1]))
    p = vfma(p, r, vsplat(_XF[0]))
    return vzero_below(a, low, vmul(p, vpow2_bits(kb, _POW2_BIAS)))


@njit(fastmath=_EXACT_FM, error_model="numpy", inline="always")
def _finite_max_f32(s, off, keep):
    """The largest of s[off:off + keep] (keep >= 1) when every one is finite, else NaN: 64 a
    step in four vectors of ordered maxima, the last partial vector filled with the first
    score (llvm.maximum's NaN-propagating vectors and their sixteen-lane reduction cost 0.26 ns
    a score of a 128-key row), and a sum of x * 0 that turns NaN at a NaN or an infinity. Its
    sign of a zero maximum may differ from `maximum`'s: the exponentials of score * scale - max
    do not see it."""
    zero = vzero()
    first = vsplat_at(s, off)
    m0 = m1 = m2 = m3 = first
    bad = vzero()
    j = 0
    while j + 4 * LANES <= keep:
        x0 = vload(s, off + j)
        x1 = vload(s, off + j + LANES)
        x2 = vload(s, off + j + 2 * LANES)
        x3 = vload(s, off + j + 3 * LANES)
        m0 = vabove(x0, m0)
        m1 = vabove(x1, m1)
        m2 = vabove(x2, m2)
        m3 = vabove(x3, m3)
        bad = vfma(vadd(vadd(x0, x1), vadd(x2, x3)), zero, bad)
        j += 4 * LANES
    while j < keep:
        x0 = vfirst(vload(s, off + j), keep - j, first)
        m0 = vabove(x0, m0)
        bad = vfma(x0, zero, bad)
        j += LANES
    top = hmax(vabove(vabove(m0, m1), vabove(m2, m3)))
    return top if hsum(bad) == 0.0 else np.float32(np.nan)


@njit(fastmath=_EXACT_FM, error_model="numpy", inline="always")
def _attention_exps_simd(s, p, off, keep, scale, top):
    """`_attention_exps_f32` of the row s[off:off + keep] into p[off:off + keep] for a positive
    scale and `fma`, given the row's `_finite_max_f32` (top): its exponentials 16 lanes a step,
    the same values, and the reciprocal of their float64 sum; 0.0, nothing useful written, when
    a score is not finite or -max is past float32 (`_attention_exps_f32`'s general rows). s and
    p are read and written up to keep rounded up to 16 (`attention_simd_rows`' rows: the lanes
    past keep are computed and left, never summed). The max comes as an argument: computed in
    here, it left the register rows 8-10% slower (LLVM's code layout)."""
    m = np.float64(top) * scale
    if not (abs(m) < 3.0e38):  # NaN or infinite scores, or -max past float32
        return 0.0
    vs, vn = vsplat(np.float32(scale)), vsplat(-np.float32(m))
    for j in range(0, keep, LANES):
        vstore(p, off + j, vexp_neg_f32(vfma_exact(vload(s, off + j), vs, vn)))
    return 1.0 / _sum_f64(p, off, keep)


@njit(fastmath=_EXACT_FM, error_model="numpy", inline="always")
def _added_mask_exps_simd(s, p, off, mk, moff, n, scale):
    """`_added_mask_exps_f32` of the row s[off:off + n] plus the float mask's row mk[moff:moff
    + n], the same bits, 16 lanes a step: the float64 sums (`dfma`, contracted as the scalar
    row's) and their NaN-propagating max, then each sum less the max rounded to float32 and its
    exponential (`vexp_neg_f32`); the last keep % 16 scores' sums one at a time (the mask's row
    is read no further than keep). (1, 4, 512, 8) with a (1, 4, 512, 512) mask, T5's encoder:
    the rows' exponentials 0.99 -> 0.87 ns a score, one thread; float64 lanes take two
    registers, and the rows without a mask take 0.46."""
    keep = n
    while keep > 0 and np.float64(at(s, off + keep - 1)) * scale + np.float64(at(mk, moff + keep - 1)) == -np.inf:
        keep -= 1
    if keep == 0:
        return 0.0, 0
    vs = dsplat(scale)
    top = dsplat(-np.inf)
    full = keep - keep % LANES
    for j in range(0, full, LANES):
        top = dmax_nan(dfma(dwiden(vload(s, off + j)), vs, dwiden(vload(mk, moff + j))), top)
    m = dhmax_nan(top)
    for j in range(full, keep):
        x = np.float64(at(s, off + j)) * scale + np.float64(at(mk, moff + j))
        m = x if (x > m or x != x) else m
    if not (m > -np.inf and m < np.inf):
        return 0.0, 0
    vm = dsplat(m)
    for j in range(0, full, LANES):
        x = dsub(dfma(dwiden(vload(s, off + j)), vs, dwiden(vload(mk, moff + j))), vm)
        vstore(p, off + j, vexp_neg_f32(dnarrow(x)))
    if full < keep:
        for j in range(full, keep):
            put(p, off + j, np.float32((np.float64(at(s, off + j)) * scale + np.float64(at(mk, moff + j))) - m))
        vstore(p, off + full, vexp_neg_f32(vload(p, off + full)))
    return 1.0 / _sum_f64(p, off, keep), keep


@njit(fastmath=_EXACT_FM, error_model="numpy", inline="always")
def _rounded_scores(s, off, mk, moff, n, scale, rounded):
    """The row s[off:off + n] as a decomposed attention's float32 layers make it (`irexec.
    fusion`): each score times the float32 scale (rounded 1) or divided by it (2), plus the float
    mask's row mk[moff:moff + n], each step rounded to float32, in place; returns the count up
    to its last score that is not -inf."""
    c = np.float32(scale)
    if rounded == 1:
        for j in range(n):
            put(s, off + j, at(s, off + j) * c + at(mk, moff + j))
    else:
        for j in range(n):
            put(s, off + j, at(s, off + j) / c + at(mk, moff + j))
    keep = n
    while keep > 0 and at(s, off + keep - 1) == -np.inf:
        keep -= 1
    return keep


@njit(error_model="numpy", inline="always")
def _head_buffers(kb, vb, kt, vbuf, sp, evp):
    """The keys kb (S, E) transposed into kt (E rows of sp floats; the columns past S stay 0);
    the values vb (S, Ev) flat, through vbuf padded to evp floats a key when Ev is not whole
    16s (the pads stay 0). By offsets, not views (at (12, 128, 64), the transposes took 100 us
    of the kernel's 730 by 2-D indexing, 70 of 620 by offsets: medians of 40 calls against the
    kernel without them, one thread), in tiles of 16 keys by 16 embeddings: each row of kt is
    written 16 floats at a time. Key by key, every embedding's write went to another row of kt,
    and rows of 4 KiB (1024 keys) all fall in one set of the L1 cache (one head's keys, us, key
    by key against tiles: 128 keys 5.6 / 3.4, 1024 394 / 27, 2000 65 / 51, 4096 1530 / 106)."""
    n, e = kb.shape
    kf = kb.reshape(-1)
    for j0 in range(0, n, LANES):
        j1 = min(n, j0 + LANES)
        for d0 in range(0, e, LANES):
            for d in range(d0, min(e, d0 + LANES)):
                o = d * sp
                for j in range(j0, j1):
                    put(kt, o + j, at(kf, j * e + d))
    ev = vb.shape[1]
    vf = vb.reshape(-1)
    if ev == evp:
        return vf
    for j in range(n):
        for c in range(ev):
            put(vbuf, j * evp + c, at(vf, j * ev + c))
    return vbuf


@njit(fastmath=_EXACT_FM, error_model="numpy")
def attention_simd_rows(t_lo, t_hi, q, k, v, out, keep, mask, mask_row, parts, scale, fma, rounded, narrow):
    """softmax(q k^T * scale [+ mask]) v for float32, eight query rows at a time (SIMD_ROWS)
    with the sums in 16-lane registers: their scores (`_scores4`, from the keys transposed),
    each row's exponentials and the reciprocal of their float64 sum as `_attention_exps_f32`
    computes them (16 lanes a step: `_attention_exps_simd`; with a float mask,
    `_added_mask_exps_f32`), the weighted sums of the values (`_weighted`), and each output
    that float32 sum times the reciprocal, rounded once. Each row keeps a prefix of the keys,
    keep[row] (no mask, causal, or a boolean mask of prefixes); or, when mask has rows, row r
    adds mask[mask_row[r]] to its scaled scores (float), keeping them up to its last that is
    not -inf: in float64 (rounded 0), or with `rounded` 1 or 2 each step in float32 as separate
    layers compute it (`_rounded_scores`), then the softmax of those values as the rows without
    a mask take it (scale 1). A row whose max is not finite takes `_softmax_row_out`'s
    probabilities (inv 1). Task t is part t % parts of batch item t // parts: every parts-th group of rows from the
    part's (alike in work under a causal mask); the keys are transposed once per batch item a
    call. The group's rows live in flat buffers (queries, scores, exponentials, sums) read by
    offsets, with no views in the loop, and each row's max is reduced in registers (`hmax`).
    The views' reference counts and the max's 16 scalar steps had cost a third (medians of 60
    calls, one thread: (2, 128, 16) 75 -> 50 us, (4, 128, 8) causal 118 -> 68, (2, 64, 16)
    31 -> 20, (12, 128, 64) 784 -> 700). `narrow` (machines whose vectors hold 8 floats, AVX2:
    `jit.wide_vectors` False) takes the scores and weighted sums in sums of eight registers
    (`_scores4_narrow`, `_weighted_narrow`), where the others' eight and sixteen 16-lane sums
    spill; the same sums in the same order, the same bits (one thread, a Zen 3, wide -> narrow:
    (12, 128, 64) 1.9 -> 0.93 ms, causal 1.22 -> 0.68; (4, 64, 64) 184 -> 102 us; (2, 1500,
    16) 9.5 -> 6.5 ms)."""
    nb, length, e = q.shape
    n, ev = k.shape[1], v.shape[2]
    sp = n + (-n) % (2 * LANES)
    evp = ev + (-ev) % LANES
    added = mask.shape[0] > 0
    quick = fma and scale > 0.0
    kt = np.zeros(e * sp, np.float32)
    vbuf = np.zeros(n * evp if ev != evp else 0, np.float32)
    s = np.zeros(SIMD_ROWS * sp, np.float32)  # scores
    p = np.zeros(SIMD_ROWS * sp, np.float32)  # their exponentials
    qr = np.empty(SIMD_ROWS * e, np.float32)
    acc = np.empty(SIMD_ROWS * evp, np.float32)
    inv = np.zeros(SIMD_ROWS)
    e64 = np.empty(n)
    t64 = np.empty(n)
    qf = q.reshape(-1)
    of = out.reshape(-1)
    mf = mask.reshape(-1)
    head = -1
    vb = vbuf
    for t in range(t_lo, t_hi):
        b = t // parts
        if b != head:
            vb = _head_buffers(k[b], v[b], kt, vbuf, sp, evp)
            head = b
        for g in range((t % parts) * SIMD_ROWS, length, parts * SIMD_ROWS):
            m = min(SIMD_ROWS, length - g)
            r0 = b * length + g
            width = n
            if not added:
                width = 0
                for i in range(m):
                    width = max(width, keep[r0 + i])
            for i in range(SIMD_ROWS):
                src = (r0 + min(i, m - 1)) * e
                for d in range(e):
                    qr[i * e + d] = qf[src + d]
            quads = 1 if m <= 4 else 2
            for j in range(0, width + (-width) % (2 * LANES), 2 * LANES):
                if narrow:
                    for h in range(0, 2 * LANES, LANES):
                        _scores4_narrow(qr, e, kt, sp, s, 0, j + h)
                        if quads > 1:
                            _scores4_narrow(qr, e, kt, sp, s, 4, j + h)
                else:
                    _scores4(qr, e, kt, sp, s, 0, j)
                    if quads > 1:
                        _scores4(qr, e, kt, sp, s, 4, j)
            for i in range(4 * quads):
                off = i * sp
                if i >= m:
                    for j in range(width):
                        p[off + j] = 0.0
                    continue
                r = r0 + i
                if added and rounded == 0:
                    got, kept = _added_mask_exps_simd(s, p, off, mf, mask_row[r] * n, width, scale)
                    if got == 0.0:
                        row, dst = s[off : off + width], p[off : off + width]
                        kept = _masked_scores(row, mask[mask_row[r]], scale, False, t64)
                        _softmax_row_out(t64, kept, 1.0, False, e64, dst)
                        got = 1.0
                else:
                    kept, sc, fast = keep[r] if not added else 0, scale, quick
                    if added:  # the layers' float32 values: then a softmax of them as they are
                        kept = _rounded_scores(s, off, mf, mask_row[r] * n, width, scale, rounded)
                        sc, fast = 1.0, True
                    got = 0.0
                    if kept > 0 and fast:
                        got = _attention_exps_simd(s, p, off, kept, sc, _finite_max_f32(s, off, kept))
                    if got == 0.0 and added and kept == 0:
                        got = np.nan  # every key hidden: the layers' softmax gives NaN
                    elif got == 0.0:
                        row, dst = s[off : off + width], p[off : off + width]
                        got = _attention_exps_f32(row, kept, sc, fma or added, dst)
                        if got == 0.0:
                            _softmax_row_out(row, kept, sc, False, e64, dst)
                            got = 1.0
                for j in range(kept, width):
                    p[off + j] = 0.0
                inv[i] = got
            if narrow:
                _weighted_narrow(p, sp, 0, vb, evp, width, acc)
                if quads > 1:
                    _weighted_narrow(p, sp, 4, vb, evp, width, acc)
            else:
                _weighted(p, sp, 0, vb, evp, width, acc)
                if quads > 1:
                    _weighted(p, sp, 4, vb, evp, width, acc)
            for i in range(m):
                o = (r0 + i) * ev
                for c in range(ev):
                    of[o + c] = np.float64(acc[i * evp + c]) * inv[i]


@njit(error_model="numpy")
def mask_bounds(rows, words, first, n, prefix, last):
    """Per row of a boolean mask (`rows`: its bytes, n a row, zero-padded to whole words;
    `words`: the same memory as uint64; `first`: each row's first masked key, 0 when it keeps
    every key): last[r], one past its last kept key (0: none), and prefix[r], that count when the
    row keeps exactly its first keys (a causal mask's rows), else -1. A row is a prefix when
    every byte from its first masked key on is zero: an OR over words, which vectorizes (a byte
    loop does not: a 512x512 mask took 77 us by bytes, 17 by words after numpy's argmin); only
    the other rows are scanned from the end."""
    for r in range(rows.shape[0]):
        row = rows[r]
        f = first[r]
        if row[f] != 0:  # argmin gives 0 for a row that keeps every key
            prefix[r] = n
            last[r] = n
            continue
        w0 = (f + 7) // 8
        acc = np.uint64(0)
        for j in range(f, min(n, w0 * 8)):
            acc |= np.uint64(row[j])
        wr = words[r]
        for j in range(w0, wr.size):
            acc |= wr[j]
        if acc == 0:
            prefix[r] = f
            last[r] = f
            continue
        prefix[r] = -1
        end = n
        while end > 0 and row[end - 1] == 0:
            end -= 1
        last[r] = end


@njit(fastmath=_SUM_FM, error_model="numpy")
def normalize_rows(t_lo, t_hi, x, out, eps, inside, normalize_variance):
    """(x - mean) / sqrt(var + eps) (inside) or / (sqrt(var) + eps), two-pass, per row."""
    n = x.shape[1]
    for r in range(t_lo, t_hi):
        row = x[r]
        s = 0.0
        for j in range(n):
            s += np.float64(row[j])
        mean = s / n
        q = 0.0
        for j in range(n):
            d = np.float64(row[j]) - mean
            q += d * d
        dst = out[r]
        if normalize_variance:
            var = q / n
            den = math.sqrt(var + eps) if inside else math.sqrt(var) + eps
            inv = 1.0 / den
        else:
            inv = 1.0
        for j in range(n):
            dst[j] = (np.float64(row[j]) - mean) * inv


@njit(fastmath=_SUM_FM, error_model="numpy")
def normalize_cols(t_lo, t_hi, x, out, eps, inside, normalize_variance, chunk):
    """MVN over axis 1 of x (outer, n, inner): per column (o, :, j) the two-pass mean and
    variance over n in float64 (rows added in order, as numpy's reduction over a strided axis
    does), then (x - mean) * 1 / den, one rounding into out; a task is `chunk` columns of one
    o (tasks: outer * ceil(inner / chunk)), whose sums stay in two float64 rows."""
    _, n, inner = x.shape
    per = (inner + chunk - 1) // chunk
    mean = np.empty(chunk)
    inv = np.empty(chunk)
    for t in range(t_lo, t_hi):
        o = t // per
        j0 = (t % per) * chunk
        w = min(chunk, inner - j0)
        for j in range(w):
            mean[j] = 0.0
        for i in range(n):
            row = x[o, i, j0 : j0 + w]
            for j in range(w):
                mean[j] += np.float64(row[j])
        for j in range(w):
            mean[j] = mean[j] / n
            inv[j] = 0.0
        if normalize_variance:
            for i in range(n):
                row = x[o, i, j0 : j0 + w]
                for j in range(w):
                    d = np.float64(row[j]) - mean[j]
                    inv[j] += d * d
            for j in range(w):
                var = inv[j] / n
                inv[j] = 1.0 / (math.sqrt(var + eps) if inside else math.sqrt(var) + eps)
        else:
            for j in range(w):
                inv[j] = 1.0
        for i in range(n):
            row = x[o, i, j0 : j0 + w]
            dst = out[o, i, j0 : j0 + w]
            for j in range(w):
                dst[j] = (np.float64(row[j]) - mean[j]) * inv[j]


@njit(fastmath=_SUM_FM, error_model="numpy")
def group_norm_rows(t_lo, t_hi, x, out, eps, scale, bias):
    """GroupNormalization over x (N*G, C/G, S): per row (one sample's group) the two-pass mean
    and variance of its C/G * S values, then ((x - mean) / sqrt(var + eps)) * scale + bias per
    channel, in float64, rounded once into out (the numpy path's order of operations)."""
    groups, cg = scale.shape
    sp = x.shape[2]
    count = cg * sp
    for r in range(t_lo, t_hi):
        xr = x[r]
        s = 0.0
        for c in range(cg):
            xc = xr[c]
            for j in range(sp):
                s += np.float64(xc[j])
        mean = s / count
        q = 0.0
        for c in range(cg):
            xc = xr[c]
            for j in range(sp):
                d = np.float64(xc[j]) - mean
                q += d * d
        inv = 1.0 / math.sqrt(q / count + eps)
        g = r % groups
        for c in range(cg):
            xc = xr[c]
            dst = out[r, c]
            a = scale[g, c]
            b = bias[g, c]
            for j in range(sp):
                dst[j] = ((np.float64(xc[j]) - mean) * inv) * a + b


@njit(fastmath={"reassoc", "nsz"}, error_model="numpy")
def _sum_of_squares(row):
    """sum of float64(float32(x*x)): only this sum is reassociated (to vectorize)."""
    s = 0.0
    for j in range(row.size):
        p = row[j] * row[j]
        s += np.float64(p)
    return s


@njit(error_model="numpy")
def rms_norm_rows(t_lo, t_hi, x, out, eps):
    """The fused RMSNorm (irexec.fusion) over float32 rows: x*x, the float64 sum, the mean, + eps,
    sqrt, 1/s and x*d each rounded to float32 as the six layers round them (IEEE: no
    contraction, no reciprocal folding outside the sum)."""
    n = x.shape[1]
    for r in range(t_lo, t_hi):
        row = x[r]
        s = _sum_of_squares(row)
        m = np.float32(s / n)
        # each step rounded to float32 explicitly (numba's sqrt of a float32 is a float64; its
        # rounding to float32 is the correctly rounded float32 sqrt)
        root = np.float32(np.sqrt(np.float32(m + eps)))
        d = np.float32(np.float32(1.0) / root)
        dst = out[r]
        for j in range(n):
            dst[j] = row[j] * d


def warm() -> None:
    for dt in (np.float32, np.float64):
        x = np.ones((2, 8), dt)
        out = np.empty((2, 8), dt)
        softmax_rows(0, 2, x, out, False)
        normalize_rows(0, 2, x, out, 1e-5, True, True)
        normalize_cols(0, 2, x.reshape(1, 2, 8), out.reshape(1, 2, 8), 1e-5, True, True, 4)
        group_norm_rows(0, 2, x.reshape(2, 2, 4), out.reshape(2, 2, 4), 1e-5, np.ones((2, 2)), np.zeros((2, 2)))
        for inv in (np.empty(0), np.empty(2)):
            attention_softmax_rows(0, 2, x, out, 0.5, True, 2, 0, dt == np.float32, dt == np.float32, inv)
            rows = np.zeros(2, np.int64)
            # a float mask as computed, and as a model's constant (read-only: a type of its own)
            added = np.zeros((1, 8), dt)
            for mask in (np.ones((1, 8), np.bool_), added, jit.read_only(added)):
                prefix = np.full(1, -1, np.int64)
                f32 = dt == np.float32
                attention_masked_rows(0, 2, x, mask, rows, prefix, mask.dtype == np.bool_, out, 0.5, f32, f32, inv)
    q = np.ones((1, 2, 4), np.float32)
    rows = np.zeros(2, np.int64)
    added = np.zeros((1, 2), np.float32)
    for mask in (np.zeros((0, 1), np.float32), jit.read_only(added)):  # no mask; a constant float mask
        attention_simd_rows(0, 1, q, q, q, q.copy(), np.ones(2, np.int64), mask, rows, 1, 0.5, True, 0, False)
    bytes_ = np.ones((1, 8), np.uint8)
    for rows in (bytes_, jit.read_only(bytes_)):  # a mask computed, and a model's constant one
        mask_bounds(rows, rows.view(np.uint64), np.zeros(1, np.int64), 8, np.empty(1, np.int64), np.empty(1, np.int64))
    x = np.ones((2, 8), np.float32)
    rms_norm_rows(0, 2, x, np.empty_like(x), np.float32(1e-6))
