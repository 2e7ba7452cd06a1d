"""numpy's matrix products with OpenBLAS held to one thread below a size (`matmul`), so that small
and medium products do not wait for a preempted BLAS thread.

numpy's OpenBLAS splits a product over every core and its threads meet at barriers: when another
process holds a core, the product waits for the preempted thread's time slice. Measured on the
2-core test machine under the other helpers' load (`python3 -m tools.bench_ops --group matmul`
prints the same products through irexec; the table below is OpenBLAS alone, 41 interleaved
rounds, medians, float32, one thread against two):

    product (m x k @ k x n)   flops     1 thread   2 threads
    16x128 @ 128x128          5.2e5       5.0 us       5.0 us   (OpenBLAS already serial)
    64x256 @ 256x256          8.4e6      61   us      44   us
    128x128 @ 128x128         4.2e6      31   us      39   us
    128x768 @ 768x768         1.5e8    1189   us   61484   us   (52x slower)
    144x24 @ 24x3136          2.2e7     231   us   31510   us   (MobileNet's 1x1 conv)
    1536x64 @ 64x128          2.5e7     212   us   15597   us   (BERT's attention scores)
    512x512 @ 512x512         2.7e8    1725   us   43980   us

A stall costs one scheduler slice or more (15-60 ms) whatever the product's size, so two threads
pay only on products that take much longer than that alone (the zoo's faster_rcnn_head, whose
fully connected layers are such products: 82 -> 21.5 ms, ssd_clustered 29.6 -> 23.4,
int8_classifier 5.4 -> 4.7; interleaved in one process, medians of 30): below `config.BLAS_SERIAL_FLOPS`
(2e9 flops, ~13 ms single-threaded at the measured 150 GFLOP/s; `IREXEC_BLAS_SERIAL_FLOPS`, 0
turns the cap off) a product runs with one BLAS thread. The thread count is OpenBLAS's
process-wide setting, found through ctypes in the library numpy loaded (threadpoolctl's method,
without the dependency); a process that set one thread itself (OPENBLAS_NUM_THREADS=1) is left
alone, and so is a numpy on another BLAS (nothing found: products run as numpy runs them).
Concurrent products in other Python threads count the serial sections: the setting returns to
the process's own when the last one ends.

The stalls need another task on a core. With `config.BLAS_QUIET_FLOPS` set (opt-in:
IREXEC_BLAS_QUIET_FLOPS=1e7; default 0, off), when no other process's task is runnable on the
machine (`_Quiet`: /proc/loadavg's running count less this process's running threads), products from
that many flops up to the cap run on OpenBLAS's own threads, which an idle
machine runs 1.6-1.9x faster than one (medians of 50, us, one thread against two: DeiT-tiny's
197x768 @ 768x192 409 / 254, 197x192 @ 192x768 419 / 253, BERT's 128x768 @ 768x3072 4492 / 2375,
3136x64 @ 64x256 777 / 384; below 1e7 flops two threads gained nothing: 128x128 @ 128x128 31 /
39). Where those files are missing (not Linux) the rule never applies. After such a product
OpenBLAS's workers spin for about SPIN_S, and irexec's kernels keep to the calling thread until
then (`jit.cores_taken`): sharing a core with a spinning worker had made them slower than one
thread. Held-out networks at real sizes, one process, interleaved, without the rule against with
it: DeiT-tiny 32.6 -> 25.3 ms, Qwen2 9.9 -> 7.8, DenseNet-121 74.8 -> 69.3, MobileNet-V2 11.4 ->
10.4, RegNet-Y-400MF 15.0 -> 13.6, DistilBERT 71.7 -> 68.2; the zoo's models, whose products are
mostly below 1e7 flops, within 3% either way. It is off by default: OpenBLAS's threaded product
adds in another order than its serial one (and than its products of row or column blocks), so a
thread count chosen by the machine's load made outputs change by roundings from call to call
(Faster R-CNN's boxes and scores; a detection near the score threshold came and went), where
OpenVINO gives the same bits for the same input. Measured on a Zen 3 (held-out networks, rounds
of interleaved calls against OpenVINO, with the rule / without): DeiT-tiny 1.77 / 1.85x
OpenVINO's time, DistilBERT 1.32 / 1.28, Swin-tiny 1.32 / 1.38, Faster R-CNN 1.92 / 1.90.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import threading
import time

import numpy as np

from . import config

# OpenBLAS runs a product with m k n up to 65536 * 4 on one thread anyway (interface/gemm.c:
# `MNK <= SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD`; 16x128 @ 128x128, exactly that, took
# 5.0 us either way): no thread calls for those. The two calls around a product cost 1-2 us: on the zoo's small models,
# where every product is below this, capping them all cost 7-11% (bert, resnet18, gpt2)
OPENBLAS_SERIAL_MKN = 65536 * 4

_lock = threading.Lock()
_api: tuple | None = None  # (set_num_threads, the process's own count) once looked up
_looked = False
_active = 0  # serial sections running now (any thread)


def _find_openblas() -> tuple | None:
    """(set_num_threads, get_num_threads) of the OpenBLAS numpy loaded, or None."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower() and "/" in line}
    except OSError:
        return None
    suffixes = ("", "64_", "_64")
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in ("scipy_openblas", "openblas"):
            for suffix in suffixes:
                setter = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
                getter = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                if setter is not None and getter is not None:
                    setter.argtypes = [ctypes.c_int]
                    setter.restype = None
                    getter.argtypes = []
                    getter.restype = ctypes.c_int
                    return setter, getter
    return None


def _lookup() -> tuple | None:
    global _api, _looked
    with _lock:
        if not _looked:
            _looked = True
            found = _find_openblas()
            if found is not None:
                setter, getter = found
                _api = (setter, int(getter()))
    return _api


def _open(path: str) -> int | None:
    try:
        return os.open(path, os.O_RDONLY)
    except OSError:
        return None


class _Quiet:
    """Whether a task of another process is runnable: /proc/loadavg's running count less this
    process's running threads (OpenBLAS's idle threads spin, runnable, for a while after each
    product), each thread's state read from a file kept open (the threads listed again when
    their number changes); the answer is kept QUIET_KEEP_S. About 6 us a look."""

    def __init__(self) -> None:
        self.loadavg = _open("/proc/loadavg")
        self.own = _open("/proc/self/stat")  # this process's: a forked child opens its own (`reopen`)
        self.tasks: dict[int, int | None] = {}
        self.count = -1
        self.until = 0.0
        self.answer = False

    def reopen(self) -> None:
        """In a forked child: the files kept open name the parent's threads."""
        for fd in (self.loadavg, self.own, *self.tasks.values()):
            if fd is not None:
                os.close(fd)
        self.__init__()

    def _threads(self) -> int:
        stat = os.pread(self.own, 512, 0)
        return int(stat[stat.rindex(b")") + 2 :].split()[17])  # num_threads, field 20

    def _relist(self) -> None:
        for fd in self.tasks.values():
            if fd is not None:
                os.close(fd)
        self.tasks = {int(t): _open(f"/proc/self/task/{t}/stat") for t in os.listdir("/proc/self/task")}

    def _own_running(self) -> int:
        n = 0
        for fd in self.tasks.values():
            if fd is not None:
                stat = os.pread(fd, 512, 0)
                n += stat[stat.rindex(b")") + 2 : stat.rindex(b")") + 3] == b"R"
        return n

    def __call__(self) -> bool:
        if self.loadavg is None or self.own is None:
            return False
        now = time.monotonic()
        if now < self.until:
            return self.answer
        try:
            threads = self._threads()
            if threads != self.count:
                self._relist()
                self.count = threads
            running = int(os.pread(self.loadavg, 64, 0).split()[3].split(b"/")[0])
            self.answer = running - self._own_running() <= 0
        except (OSError, IndexError, ValueError):
            self.answer = False
        self.until = now + QUIET_KEEP_S
        return self.answer


QUIET_KEEP_S = 0.002
# how long OpenBLAS's workers spin after a product (its THREAD_TIMEOUT, 2^28 cycles by default:
# a worker was last seen runnable 116 ms after a product here), during which irexec's kernels
# keep to the calling thread
SPIN_S = 0.12
quiet = _Quiet()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=quiet.reopen)


def serial(flops: float) -> bool:
    """Whether a product of `flops` should run on one BLAS thread (and whether a cap can apply)."""
    if flops >= config.BLAS_SERIAL_FLOPS:
        return False
    api = _api if _looked else _lookup()
    return api is not None and api[1] > 1


class _Serial:
    """OpenBLAS on one thread while any section is open (counted across Python threads)."""

    def __enter__(self):
        global _active
        with _lock:
            _active += 1
            if _active == 1:
                _api[0](1)

    def __exit__(self, *exc):
        global _active
        with _lock:
            _active -= 1
            if _active == 0:
                _api[0](_api[1])


def matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """np.matmul(a, b[, out]), on one BLAS thread when the product is below the size rule, and
    split over the kernel threads (`split`) from config.BLAS_SPLIT_FLOPS up."""
    if a.ndim and b.ndim and a.dtype.kind == "f":
        m = a.shape[-2] if a.ndim > 1 else 1
        n = b.shape[-1] if b.ndim > 1 else 1
        mkn = m * a.shape[-1] * n
        if mkn <= OPENBLAS_SERIAL_MKN:  # OpenBLAS runs it on one thread anyway
            return np.matmul(a, b) if out is None else np.matmul(a, b, out=out)
        batch = max(math.prod(a.shape[:-2]), math.prod(b.shape[:-2]))  # broadcast batch dims
        flops = 2.0 * batch * mkn
        if serial(flops):
            if config.BLAS_QUIET_FLOPS and flops >= config.BLAS_QUIET_FLOPS and not _active and quiet():
                from .kernels import jit

                jit.cores_taken(SPIN_S)
                return np.matmul(a, b) if out is None else np.matmul(a, b, out=out)
            if config.BLAS_SPLIT_FLOPS and flops >= config.BLAS_SPLIT_FLOPS:
                y = split(a, b, out)
                if y is not None:
                    return y
            with _Serial():
                return np.matmul(a, b) if out is None else np.matmul(a, b, out=out)
    return np.matmul(a, b) if out is None else np.matmul(a, b, out=out)


def product_call(a: np.ndarray, b: np.ndarray):
    """The function `matmul` runs for operands of a's and b's shapes and types when nothing but
    they decide it: np.matmul (below OpenBLAS's own threading size, or above the serial cap) or
    np.matmul on one OpenBLAS thread; None for products the kernel threads split or that look
    at the machine's load first (`matmul` then decides every call)."""
    if not (a.ndim and b.ndim and a.dtype.kind == "f"):
        return np.matmul
    m = a.shape[-2] if a.ndim > 1 else 1
    n = b.shape[-1] if b.ndim > 1 else 1
    mkn = m * a.shape[-1] * n
    if mkn <= OPENBLAS_SERIAL_MKN:
        return np.matmul
    flops = 2.0 * max(math.prod(a.shape[:-2]), math.prod(b.shape[:-2])) * mkn
    if not serial(flops):
        return np.matmul
    if (config.BLAS_QUIET_FLOPS and flops >= config.BLAS_QUIET_FLOPS) or (
        config.BLAS_SPLIT_FLOPS and flops >= config.BLAS_SPLIT_FLOPS
    ):
        return None
    return _serial_matmul


def _serial_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with _Serial():
        return np.matmul(a, b)


# a block of a split product: at least this many rows (or columns) of the result
SPLIT_MIN_ROWS = 64


def split(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray | None:
    """a @ b in blocks on the kernel threads (`jit.parallel_for`), each block one np.matmul on
    one OpenBLAS thread, or None when the shapes do not split that way or there is one thread:
    a (..., M, K) @ b (K, N) by blocks of the rows of a (all its leading dims), a (M, K) @
    b (..., K, N) by blocks of the columns of b (a convolution's filters times its columns; by
    blocks of the rows of a, its filters, when b has too few columns: a 7x7 map's 49), and
    batches of equal leading dims by batch items. Each result element is a dot product of
    the same terms as unsplit (blocks change which BLAS call computes it).
    A block waits for no other, so a preempted thread delays only the blocks it holds; OpenBLAS's
    own threads meet at barriers (the serial cap's reason), and a busy second core leaves every
    block to the calling thread. A (128, 768) @ (768, 768) product: 1.06-1.18 ms on one thread,
    0.73 ms in four column blocks on two (OpenBLAS's two threads: 0.58-0.61 ms on an idle
    machine, but up to 50x slower when a core is taken; see above); BERT-base's projections and
    DenseNet's convolutions are products of this size."""
    from .kernels import jit

    threads = jit.num_threads()
    if threads < 2 or a.ndim < 2 or b.ndim < 2 or a.dtype != b.dtype:
        return None
    if out is not None and (out.dtype != a.dtype or not out.flags.c_contiguous):
        return None
    if b.ndim == 2:
        work = _by_rows(a, b, out, threads)
    elif a.ndim == 2:
        work = _by_filters(a, b, out, threads)
    elif a.shape[:-2] == b.shape[:-2] and math.prod(a.shape[:-2]) >= 2:
        work = _by_items(a, b, out)
    else:
        return None
    if work is None:
        return None
    y, blocks, task = work
    with one_thread():
        jit.parallel_for(task, len(blocks) - 1, threads)
    return y


def _by_rows(a: np.ndarray, b: np.ndarray, out: np.ndarray | None, threads: int):
    """`split`'s (result, block bounds, task) for a (..., M, K) @ b (K, N): rows of a (leading
    dims included), or columns of b when b is the larger; None when neither splits."""
    a2 = a.reshape(-1, a.shape[-1])
    rows = a2.shape[0]
    y = np.empty(a.shape[:-1] + (b.shape[1],), a.dtype) if out is None else out
    y2 = y.reshape(rows, b.shape[1])
    by_rows = rows >= b.shape[1]  # each call packs the whole of the other operand
    blocks = _blocks(rows if by_rows else b.shape[1], threads)
    if blocks is None:
        return None

    def task(t_lo: int, t_hi: int) -> None:
        lo, hi = blocks[t_lo], blocks[t_hi]
        if by_rows:
            np.matmul(a2[lo:hi], b, out=y2[lo:hi])
        else:
            np.matmul(a2, b[:, lo:hi], out=y2[:, lo:hi])

    return y, blocks, task


def _by_filters(a: np.ndarray, b: np.ndarray, out: np.ndarray | None, threads: int):
    """`split`'s (result, block bounds, task) for a (M, K) @ b (..., K, N): columns of b for every
    batch item, or rows of a when b has too few columns (a small map's: ResNet-50's last stage,
    7x7, has 49); None when neither splits."""
    cols = b.shape[-1]
    y = np.empty(b.shape[:-2] + (a.shape[0], cols), a.dtype) if out is None else out
    blocks = _blocks(cols, threads)
    by_cols = blocks is not None
    if not by_cols:
        blocks = _blocks(a.shape[0], threads)
        if blocks is None:
            return None

    def task(t_lo: int, t_hi: int) -> None:
        lo, hi = blocks[t_lo], blocks[t_hi]
        if by_cols:
            np.matmul(a, b[..., lo:hi], out=y[..., lo:hi])
        else:
            np.matmul(a[lo:hi], b, out=y[..., lo:hi, :])

    return y, blocks, task


def _by_items(a: np.ndarray, b: np.ndarray, out: np.ndarray | None):
    """`split`'s (result, block bounds, task) for batches of equal leading dims: batch items."""
    a3 = a.reshape(-1, *a.shape[-2:])
    b3 = b.reshape(-1, *b.shape[-2:])
    y = np.empty(a.shape[:-1] + (b.shape[-1],), a.dtype) if out is None else out
    y3 = y.reshape(a3.shape[0], a.shape[-2], b.shape[-1])
    blocks = list(range(a3.shape[0] + 1))

    def task(t_lo: int, t_hi: int) -> None:
        lo, hi = blocks[t_lo], blocks[t_hi]
        np.matmul(a3[lo:hi], b3[lo:hi], out=y3[lo:hi])

    return y, blocks, task


def _blocks(n: int, threads: int) -> list[int] | None:
    """Bounds of up to 2 x threads blocks of at least SPLIT_MIN_ROWS over n (few: every block
    packs the other operand again), as many as the threads or a multiple of them, or None for
    fewer than two. (Three blocks on two threads left one thread a block alone after the other
    two: ResNet-50 INT8's 1x1 convolutions over 14x14 maps, 196 columns; 2 blocks against 3,
    paired rounds in one process: ResNet-50 INT8 at 224x224 0.914-0.976 of its time, ViT 0.936,
    ResNet-18 0.975, GPT-2 at 128 tokens 0.974, DenseNet-121 and BERT 0.98-1.01.)"""
    count = min(2 * threads, n // SPLIT_MIN_ROWS)
    if count > threads:
        count -= count % threads
    if count < 2:
        return None
    return [n * i // count for i in range(count + 1)]


@contextlib.contextmanager
def one_thread():
    """OpenBLAS on one thread for the block (when a cap can apply): for products that run side
    by side on the kernel threads (`jit.parallel_for` tasks), which call np.matmul directly.
    Switching the thread count around every product of such tasks cost more than the tasks
    gained (16 ResNet-stem tiles on two threads: 0.45 ms serial, 0.56 ms side by side)."""
    if not serial(0.0):
        yield
        return
    with _Serial():
        yield
