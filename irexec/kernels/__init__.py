"""numba kernels and their planner. Importing this package does not import numba: `reduce.py` does.

The on-disk cache of compiled kernels goes to a writable per-user directory (so an installed,
read-only package still caches) unless NUMBA_CACHE_DIR is already set. The threading layer is
pinned to OpenMP on Linux (numba's wheels ship it; it tolerates calls from several Python threads,
which the workqueue layer aborts on) unless NUMBA_THREADING_LAYER is set.
"""

from __future__ import annotations

import importlib.util
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


def _has_omp_layer() -> bool:
    """Whether numba's OpenMP layer is installed, found without importing numba."""
    spec = importlib.util.find_spec("numba")
    if spec is None or not spec.submodule_search_locations:
        return False
    ufunc = Path(next(iter(spec.submodule_search_locations))) / "np" / "ufunc"
    return any(ufunc.glob("omppool*"))


_set_cache_dir()
if sys.platform.startswith("linux") and "NUMBA_THREADING_LAYER" not in os.environ and _has_omp_layer():
    os.environ["NUMBA_THREADING_LAYER"] = "omp"
