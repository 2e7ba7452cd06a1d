"""numba kernels and their planner. Importing this package does not import numba: `reduce.py` does.

The on-disk cache of compiled kernels goes to a writable per-user directory (so an installed,
read-only package still caches) unless NUMBA_CACHE_DIR is already set. The threading layer is
pinned to OpenMP on Linux (numba's wheels ship it; it tolerates calls from several Python threads,
which the workqueue layer aborts on) unless NUMBA_THREADING_LAYER is set.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def _set_cache_dir() -> None:
    if "NUMBA_CACHE_DIR" in os.environ:
        return
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    path = Path(base) / "irexec" / "numba"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return
    os.environ["NUMBA_CACHE_DIR"] = str(path)


_set_cache_dir()
if sys.platform.startswith("linux"):
    os.environ.setdefault("NUMBA_THREADING_LAYER", "omp")
