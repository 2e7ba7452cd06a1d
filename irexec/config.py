"""Performance switches, read once from the environment in this one place.

IREXEC_SMALL_ELEMENTS  reductions over fewer input elements than this run a numpy path with
                       the same 64-bit accumulation, so a small model never imports numba
                       (0.4-0.7 s) nor launches threads (default 65536; 0 = always numba).
IREXEC_SPLIT_MIN       reduced elements per output below which the reduced axis is not split
                       across threads (default 32768).
"""

from __future__ import annotations

import os


def _int_env(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip()
    if text.isascii() and text.isdigit():
        return int(text)
    return default


SMALL_ELEMENTS = _int_env("IREXEC_SMALL_ELEMENTS", 1 << 16)
SPLIT_MIN = _int_env("IREXEC_SPLIT_MIN", 1 << 15)
