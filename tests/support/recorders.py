"""Kernels replaced by recorders of the writability of their array arguments, for the tests
that check a family's warm() compiles what a model's run calls: numba compiles a read-only
array (a model's constants are) as a type apart from a writable one.

`writability(monkeypatch, module, names)` returns (seen, phase): seen["warm"] and
seen["model"] collect (kernel name, the writable flags of its array arguments); while
phase[0] is "warm" the recorders only record (nothing compiles), then set it to "model" and
they call the real kernels too."""

from __future__ import annotations

import numpy as np


def writability(monkeypatch, module, names) -> tuple[dict[str, set], list[str]]:
    seen: dict[str, set] = {"warm": set(), "model": set()}
    phase = ["warm"]

    def recorder(name, real):
        def record(*args):
            seen[phase[0]].add((name, tuple(a.flags.writeable for a in args if isinstance(a, np.ndarray))))
            return real(*args) if phase[0] == "model" else None

        return record

    for name in names:
        monkeypatch.setattr(module, name, recorder(name, getattr(module, name)))
    return seen, phase
