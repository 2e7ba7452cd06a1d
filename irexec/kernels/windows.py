"""numpy views of sliding windows and constant padding, shared by the pooling and convolution
families' numpy paths, and the count modes of a window average (shared with the kernels, so
that planning never imports numba)."""

from __future__ import annotations

import numpy as np

# what an average window divides by: its positions inside the input (exclude-pad); the whole
# kernel; its positions inside input + pads (ceil_torch, as PyTorch does)
INSIDE, KERNEL, PADDED = 0, 1, 2


def windows(x: np.ndarray, kernel, strides, dilations, out_sp) -> np.ndarray:
    """A read-only view (N, C, *out_sp, *kernel) of the windows of an already padded x."""
    n, c = x.shape[:2]
    st = x.strides
    shape = (n, c, *out_sp, *kernel)
    strides = (
        st[0],
        st[1],
        *(st[2 + i] * strides[i] for i in range(len(kernel))),
        *(st[2 + i] * dilations[i] for i in range(len(kernel))),
    )
    return np.lib.stride_tricks.as_strided(x, shape, strides, writeable=False)


def pad_constant(x: np.ndarray, widths, value=0.0) -> np.ndarray:
    """np.pad(x, widths, constant_values=value) without its Python overhead (50 us a call,
    as much as a small convolution's BLAS call): one filled array, x copied into its middle."""
    out = np.full(tuple(d + b + e for d, (b, e) in zip(x.shape, widths)), value, x.dtype)
    out[tuple(slice(b, b + d) for d, (b, _) in zip(x.shape, widths))] = x
    return out


def compute_type(x: np.ndarray) -> np.ndarray:
    """x as the windowed families compute it: float16 in float32, every other type as it is."""
    return x.astype(np.float32) if x.dtype == np.float16 else x
