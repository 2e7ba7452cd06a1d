"""The element-wise family's dispatch: an op asks for "this float32 activation over x"; the
family decides whether the numba kernels of `elementwise_loops` run it (loaded, or loading them
pays: `jit.use`) and on how many threads, and answers None when the op's numpy formula should
run instead. Ops never import numba modules or the JIT runtime."""

from __future__ import annotations

import math

import numpy as np

from .. import config
from . import jit

FAMILY = "elementwise"  # its name in jit.FAMILIES
# the numpy path's fixed cost per call that the kernel saves (a float64 round trip, several
# temporaries): small inputs take the kernels once they are loaded
SMALL_CALL_SAVING = 5e-6
# work per byte against a streaming read (jit.threads_for): an exp or erfc per element in
# float64; float32's 16 lanes (`swish_f32`) a third of that
ACTIVATION_COST = 12.0
COSTS = {"swish_f32": 4.0, "gelu_erf_f32": 6.0, "erf_f32": 6.0, "relu": 1.0}


def activation_f32(name: str, x: np.ndarray, *args) -> np.ndarray | None:
    """The kernel `name` of `elementwise_loops` over the float32 x into a new float32 array of
    its shape, or None when the numpy path should run."""
    if x.dtype != np.float32 or not x.size or not jit.use(x.nbytes, SMALL_CALL_SAVING, FAMILY):
        return None
    from . import elementwise_loops as k

    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty_like(flat)
    tasks = -(-flat.size // k.BLOCK)
    threads = jit.threads_for(flat.nbytes, COSTS.get(name, ACTIVATION_COST))
    jit.parallel_for(getattr(k, name), tasks, threads, flat, out, *args)
    return out.reshape(x.shape)


def activation_call(name: str, x: np.ndarray, *args):
    """`activation_f32`'s call for float32 arrays of x's shape, as a function of such an array
    alone (`jit.one_call`), when it runs the kernels on the calling thread; None otherwise."""
    work = int(x.nbytes * COSTS.get(name, ACTIVATION_COST))
    if x.dtype != np.float32 or not x.size or work >= config.THREAD_MIN_BYTES:
        return None
    if not jit.use(x.nbytes, SMALL_CALL_SAVING, FAMILY):
        return None
    from . import elementwise_loops as k

    return jit.one_call(getattr(k, name), (x.size,), -(-x.size // k.BLOCK), np.float32, args, x.shape, work)


def relu_inplace_call(shape: tuple, bounds: tuple | None):
    """`relu_f32_inplace`'s kernel call for contiguous float32 arrays of `shape` as one function
    of such an array (`Op.steady`): True once done, False when the usual path should run (another
    shape or layout, a forced or recorded path)."""
    from . import elementwise_loops as k

    tasks = -(-math.prod(shape) // k.BLOCK)

    def run(y: np.ndarray) -> bool:
        if not jit.still_one_call(0) or y.shape != shape or y.dtype != np.float32 or not y.flags.c_contiguous:
            return False
        flat = y.reshape(-1)
        if bounds is None:
            k.relu(0, tasks, flat, flat)
        else:
            k.clip_inplace(0, tasks, flat, bounds[0], bounds[1])
        return True

    return run


def relu_f32_inplace(y: np.ndarray, bounds: tuple | None) -> bool:
    """ReLU (np.maximum(y, 0): -0.0 gives +0.0), or np.clip(y, lo, hi) with float32 bounds, on
    the contiguous float32 y in place by the kernels (`relu` into x, `clip_inplace`; 200 K random
    float32 on a Zen 3: 16 and 14 us, np.maximum, which keeps NaN with a slower loop, 100);
    False when the numpy call should do it."""
    if y.dtype != np.float32 or not y.flags.c_contiguous or not y.size:
        return False
    if not jit.use(y.nbytes, SMALL_CALL_SAVING, FAMILY):
        return False
    from . import elementwise_loops as k

    flat = y.reshape(-1)
    tasks = -(-flat.size // k.BLOCK)
    if bounds is None:
        jit.call(k.relu, 0, tasks, flat, flat)
    else:
        jit.call(k.clip_inplace, 0, tasks, flat, bounds[0], bounds[1])
    return True
