"""Performance switches, read once from the environment in this one place.

IREXEC_JIT             auto (default): numba kernels by kernels.jit's policy (in a library process
                       a family loads in the background from its first call, and from a warm
                       cache serves from a model's second call); always: load every family on
                       first use; never: numpy.
IREXEC_NUM_THREADS     threads the kernels may use (default: the machine's cores);
                       `irexec.set_num_threads` and `--threads` change it.
IREXEC_THREAD_MIN_BYTES  work below this many bytes runs on the calling thread only (default
                       16 MiB: under load, threads waiting on a preempted one cost more than
                       they save on smaller work; measured in tools/bench_reduce.py --contended).
IREXEC_BLAS_SERIAL_FLOPS  matrix products below this many flops run on one OpenBLAS thread
                       (default 2e9; 0 = never cap; see irexec/blas.py for the measurements).
IREXEC_BLAS_SPLIT_FLOPS  products of at least this many flops (and below the serial cap) are
                       split into row, column or batch blocks on the kernel threads, each on one
                       OpenBLAS thread (default 5e7, about 0.5 ms on one core; 0 = never split).
IREXEC_BLAS_QUIET_FLOPS  products of at least this many flops (and below the serial cap) run on
                       OpenBLAS's own threads when no other task is runnable on the machine
                       (/proc/loadavg; e.g. 1e7). Default 0, never: OpenBLAS's threaded and
                       serial products add in other orders, so with the rule a model's outputs
                       change by roundings as the machine's load does; without it, the same
                       input gives the same bits on every call (irexec/blas.py).
IREXEC_MALLOC_TUNING   1 (default): at the first model load, glibc's malloc keeps freed blocks
                       below 32 MiB in its heap for the next arrays (irexec/allocator.py); 0:
                       malloc as the process has it.
IREXEC_CACHE_DIR       where compiled kernels are cached (default ~/.cache/irexec/numba).

IREXEC_SMALL_ELEMENTS  reductions over fewer input elements than this run a numpy path with
                       the same 64-bit accumulation until the kernels are loaded, so a small
                       model never imports numba (0.4-0.7 s) for them (default 65536; 0 = load
                       numba for any reduction when IREXEC_JIT=always). Once loaded (a long-lived
                       process, `irexec bench`), the kernels serve every size: they are faster.
IREXEC_SPLIT_MIN       elements a kernel task reads (a row's reduced set, or a column tile's
                       rows) below which the reduced axis is not split across threads
                       (default 32768).

IREXEC_PROGRESS_SECONDS  long commands (warmup, batch, bench, compare --per-layer) print a
                       progress line on stderr every this many seconds when stderr is not a
                       terminal, the first after as long (default 5; 0 = every step, for tests).
"""

from __future__ import annotations

import os


def _int_env(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip()
    if text.isascii() and text.isdigit():
        return int(text)
    return default


PROGRESS_SECONDS = _int_env("IREXEC_PROGRESS_SECONDS", 5)
SMALL_ELEMENTS = _int_env("IREXEC_SMALL_ELEMENTS", 1 << 16)
SPLIT_MIN = _int_env("IREXEC_SPLIT_MIN", 1 << 15)

THREAD_MIN_BYTES = _int_env("IREXEC_THREAD_MIN_BYTES", 16 << 20)
NUM_THREADS = max(1, _int_env("IREXEC_NUM_THREADS", os.cpu_count() or 1))
# matrix products below this many flops run on one OpenBLAS thread (irexec/blas.py); 0: never
BLAS_SERIAL_FLOPS = _int_env("IREXEC_BLAS_SERIAL_FLOPS", 2_000_000_000)
# products from this many flops up to BLAS_SERIAL_FLOPS: split over the kernel threads (blas.py)
BLAS_SPLIT_FLOPS = _int_env("IREXEC_BLAS_SPLIT_FLOPS", 50_000_000)
# products from this many flops up to BLAS_SERIAL_FLOPS: OpenBLAS's own threads on a quiet machine
BLAS_QUIET_FLOPS = _int_env("IREXEC_BLAS_QUIET_FLOPS", 0)
MALLOC_TUNING = _int_env("IREXEC_MALLOC_TUNING", 1) != 0
JIT = os.environ.get("IREXEC_JIT", "auto").strip().lower()
if JIT not in ("auto", "always", "never"):
    JIT = "auto"
