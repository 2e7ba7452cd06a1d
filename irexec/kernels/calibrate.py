"""Measuring the JIT cost model's constants on this machine (they are kept by `kernels/costs.py`).

`kernels.jit` decides when numba's kernels pay from a few costs: importing numba, loading one
specialization from the cache, compiling one, and each family's throughput on its numpy path and
on its kernels. They differ by machine (and by family: a reduction reads at 8 GB/s on numpy, a
float64 softmax is compute-bound), so they are measured: lazily, once a process's loaders are
idle, by this module run as a child process at the lowest priority (`python -m
irexec.kernels.calibrate FAMILY...`: the families that process used), in `irexec warmup`, or
`python3 -m tools.bench_fallbacks --calibrate`.

The measurements run real ops (`probes.PROBES`: the first op of each family at a size where the
fixed costs no longer dominate), each path forced with `jit.forced`, interleaved rounds, medians.
"""

from __future__ import annotations

import sys
import time

from . import costs, jit, probes
from .costs import DEFAULT_RATES, DEFAULTS, FILE_NAME, calibrated, machine, path, rates, record, reset

__all__ = ["DEFAULTS", "DEFAULT_RATES", "FILE_NAME", "calibrate", "calibrated", "machine", "path", "rates"]
__all__ += ["record", "reset", "status", "time_paths"]

ROUNDS = 5


def status() -> str:
    """missing | stale | ok (every family measured) | partial."""
    return costs.status(jit.FAMILIES)


def _median(ts: list[float]) -> float:
    return sorted(ts)[len(ts) // 2]


def time_paths(run, rounds: int = ROUNDS) -> tuple[float, float, float]:
    """(first kernel call s, numpy path median s, kernel path median s) of `run()`, each path
    forced, in interleaved rounds after one call of each."""
    from . import jit

    t0 = time.perf_counter()
    with jit.forced(True):
        run()
    first = time.perf_counter() - t0
    with jit.forced(False):
        run()
    numpy_t, kernel_t = [], []
    for _ in range(rounds):
        for forced, ts in ((False, numpy_t), (True, kernel_t)):
            with jit.forced(forced):
                t = time.perf_counter()
                run()
                ts.append(time.perf_counter() - t)
    return first, _median(numpy_t), _median(kernel_t)


def calibrate(families=None, scale: float = 1.0) -> dict:
    """Measure these families (default: every one) on their probes and record the results;
    returns what was measured. `scale` multiplies the probes' sizes (the tool's real sizes). A
    family without a probe (grid, embedding, nms, detectron) keeps the defaults."""
    families = [f for f in (jit.FAMILIES if families is None else families) if f in probes.PROBES]
    measured: dict = {"families": {}}
    for family in families:
        case = probes.PROBES[family][0]
        run, nbytes = probes.prepare(case, scale)
        jit.load_families([family], compile_now=False)  # numba's import apart from the first call
        hits0, misses0 = jit.compile_counts()
        first, numpy_s, kernel_s = time_paths(run)
        hits, misses = jit.compile_counts()
        steady = kernel_s
        if misses > misses0:
            measured["compile_s"] = max(first - steady, 0.0) / (misses - misses0)
        elif hits > hits0:
            measured["load_s"] = max(first - steady, 1e-4) / (hits - hits0)
        measured["families"][family] = {
            "numpy_bytes_per_s": nbytes / max(numpy_s, 1e-9),
            "numba_bytes_per_s": nbytes / max(kernel_s, 1e-9),
        }
    if jit.import_numba_s is not None:
        measured["import_numba_s"] = jit.import_numba_s
    record(**measured)
    return measured


if __name__ == "__main__":  # the background measurement of `jit`: the families named
    calibrate([f for f in sys.argv[1:] if f in jit.FAMILIES] or None)
