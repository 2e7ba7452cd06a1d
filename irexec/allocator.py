"""glibc's malloc held to one rule for blocks up to 32 MiB, so that a model's arrays come from its
heap the same way in every process.

numpy allocates every layer's result with malloc. glibc serves a block of at least its mmap
threshold (128 KiB at start) with fresh pages from mmap, and raises that threshold (up to 32 MiB)
each time such a block is freed. So whether a model's 1-4 MB intermediates come from the heap
(pages already mapped) or from fresh pages (a page fault per 4 KiB on first touch, then munmap)
depends on what the process happened to free before: after loading the kernels EfficientNet-B0
uses (`jit="eager"`), its inference at 224x224 took 5.4 ms against 3.8 ms when they had loaded
lazily; fixing the threshold made both 3.8-3.9 ms (`MALLOC_MMAP_THRESHOLD_` set, the same
process otherwise; the zoo benchmark's kernels-loaded irexec times on the image models showed it).

At the first model load irexec sets, once per process, the mmap threshold to 32 MiB (glibc's own
ceiling for its dynamic rule) and the trim threshold to 64 MiB (twice that, as the dynamic rule
keeps it): freed blocks below 32 MiB stay in the heap for the next call's arrays. Linux with
glibc only (found through ctypes; elsewhere nothing happens); a process that set either
parameter through glibc's MALLOC_*_ environment variables keeps its own; `IREXEC_MALLOC_TUNING=0`
leaves malloc alone.
"""

from __future__ import annotations

import ctypes
import os
import sys

from . import config

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 64 << 20

_done = False
_set = False


def tune() -> bool:
    """Set the thresholds (once per process: later calls answer the first's result); whether
    they are set."""
    global _done, _set
    if not _done:
        _done = True
        _set = _apply()
    return _set


def _apply() -> bool:
    if not config.MALLOC_TUNING or not sys.platform.startswith("linux"):
        return False
    if any(k in os.environ for k in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES")):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False  # not glibc (musl, another allocator)
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
