"""irexec/blas.py: matrix products below the size rule run on one OpenBLAS thread and give
numpy's values; the process's own thread count comes back after every product, also when
products run in several Python threads at once."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from irexec import blas, config

needs_openblas = pytest.mark.skipif(blas._lookup() is None, reason="numpy is not on OpenBLAS")


def _threads() -> int:
    from irexec.blas import _find_openblas

    return int(_find_openblas()[1]())


def _thread_counts(monkeypatch) -> list[int]:
    """The OpenBLAS thread count at each np.matmul that irexec's blas makes from now on."""
    seen = []
    real = blas.np.matmul

    def spy(*args, **kw):
        seen.append(_threads())
        return real(*args, **kw)

    monkeypatch.setattr(blas.np, "matmul", spy)
    return seen


@pytest.mark.parametrize(
    "a_shape,b_shape",
    [
        ((16, 128), (128, 128)),
        ((3, 64, 32), (32, 48)),
        ((64,), (64, 8)),
        ((2, 1, 5, 7), (3, 7, 4)),
        ((200, 300), (300,)),
    ],
)
def test_values_are_numpys(a_shape, b_shape):
    rng = np.random.default_rng(0)
    a = rng.normal(size=a_shape).astype(np.float32)
    b = rng.normal(size=b_shape).astype(np.float32)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    got = blas.matmul(a, b)
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    out = np.empty(want.shape, np.float32)
    assert blas.matmul(a, b, out=out) is out
    np.testing.assert_array_equal(out, got)


def test_integers_take_numpys_path():
    a = np.arange(12, dtype=np.int64).reshape(3, 4)
    np.testing.assert_array_equal(blas.matmul(a, a.T), a @ a.T)


@needs_openblas
def test_serial_below_the_rule_and_restored(monkeypatch):
    own = blas._lookup()[1]
    monkeypatch.setattr(config, "BLAS_SERIAL_FLOPS", 2_000_000_000)
    assert blas.serial(1e6) == (own > 1)
    assert not blas.serial(3e9)
    seen = _thread_counts(monkeypatch)
    a = np.ones((128, 128), np.float32)
    blas.matmul(a, a)
    assert seen == [1]
    assert _threads() == own
    small = np.ones((32, 32), np.float32)  # below OpenBLAS's own threshold: no thread calls
    blas.matmul(small, small)
    assert seen == [1, own]
    monkeypatch.setattr(config, "BLAS_SERIAL_FLOPS", 0)  # the cap turned off
    blas.matmul(a, a)
    assert seen == [1, own, own]


@needs_openblas
def test_concurrent_products_restore_the_count():
    own = blas._lookup()[1]
    a = np.ones((96, 96), np.float32)
    errors = []

    def work():
        try:
            for _ in range(200):
                np.testing.assert_array_equal(blas.matmul(a, a), np.full((96, 96), 96, np.float32))
        except AssertionError as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert _threads() == own


@pytest.mark.parametrize(
    "a_shape,b_shape,out",
    [
        ((512, 384), (384, 256), False),  # rows of a
        ((2, 64, 384), (384, 1024), True),  # columns of b (the larger operand), into a given out
        ((96, 1152), (2, 1152, 784), False),  # a convolution's filters times its columns
        ((512, 4608), (1, 4608, 49), True),  # ... of a 7x7 map: too few columns, blocks of filters
        ((256, 576), (2, 576, 40), False),  # ... two batch items
        ((4, 128, 256), (4, 256, 192), True),  # batch items
    ],
)
def test_split_products_are_numpys(monkeypatch, a_shape, b_shape, out):
    """Products from config.BLAS_SPLIT_FLOPS up run in blocks on the kernel threads: numpy's
    values and shape, into `out` when given; a shape that does not split runs whole."""
    monkeypatch.setattr(config, "BLAS_SPLIT_FLOPS", 1)
    calls = []  # (conftest keeps the quiet-machine rule off: it would go before the split)
    real = blas.split
    monkeypatch.setattr(blas, "split", lambda *args: calls.append(1) or real(*args))
    rng = np.random.default_rng(1)
    a = rng.normal(size=a_shape).astype(np.float32)
    b = rng.normal(size=b_shape).astype(np.float32)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    dest = np.full(want.shape, np.nan, np.float32) if out else None
    got = blas.matmul(a, b, out=dest)
    if blas._lookup() is not None and blas._lookup()[1] > 1:
        assert calls and real(a, b) is not None  # the split ran (OpenBLAS with threads to cap)
    assert got.shape == want.shape and got.dtype == np.float32
    if out:
        assert got is dest
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("threads", [2, 3, 4])
def test_split_blocks_are_a_multiple_of_the_threads(threads):
    """A split product's blocks: at least SPLIT_MIN_ROWS each, at most two per thread, and as
    many as the threads or a multiple of them (no thread left a block alone), covering n."""
    for n in range(0, 40 * blas.SPLIT_MIN_ROWS, 7):
        bounds = blas._blocks(n, threads)
        if bounds is None:
            assert n // blas.SPLIT_MIN_ROWS < 2
            continue
        count = len(bounds) - 1
        assert bounds[0] == 0 and bounds[-1] == n and 2 <= count <= 2 * threads
        assert count <= threads or count % threads == 0
        assert min(np.diff(bounds)) >= blas.SPLIT_MIN_ROWS


@needs_openblas
def test_quiet_machine_products_run_on_openblas_threads(monkeypatch):
    """From config.BLAS_QUIET_FLOPS, on a machine where no other process's task is runnable, a
    product runs on OpenBLAS's own threads (numpy's values), and the kernels keep to the calling
    thread while its workers spin (`jit.cores_taken`); with another task runnable it takes the
    cap as before."""
    from irexec.kernels import jit

    own = blas._lookup()[1]
    monkeypatch.setattr(config, "BLAS_QUIET_FLOPS", 10_000_000)
    monkeypatch.setattr(config, "BLAS_SPLIT_FLOPS", 0)
    monkeypatch.setattr(config, "NUM_THREADS", 2)
    seen = _thread_counts(monkeypatch)
    rng = np.random.default_rng(2)
    a = rng.normal(size=(256, 256)).astype(np.float32)  # 3.4e7 flops
    big = 64 * config.THREAD_MIN_BYTES
    assert jit.threads_for(big) == 2
    monkeypatch.setattr(blas, "quiet", lambda: True)
    got = blas.matmul(a, a)
    assert seen == [own] and jit.threads_for(big) == 1  # the workers spin: the kernels wait
    np.testing.assert_allclose(got, a.astype(np.float64) @ a.astype(np.float64), rtol=1e-5, atol=1e-3)
    jit.cores_taken(0)
    assert jit.threads_for(big) == 2
    small = a[:32, :32]  # below the rule: OpenBLAS's own serial size, whatever the machine
    blas.matmul(small, small)
    assert seen == [own, own] and jit.threads_for(big) == 2
    monkeypatch.setattr(blas, "quiet", lambda: False)
    blas.matmul(a, a)
    assert seen == [own, own, 1] and _threads() == own and jit.threads_for(big) == 2


@pytest.mark.skipif(not os.path.exists("/proc/loadavg"), reason="no /proc/loadavg: the rule never applies")
def test_quiet_is_false_while_another_process_runs():
    """`blas.quiet` counts the machine's runnable tasks less this process's own: a busy child
    process makes it False (its answer is kept QUIET_KEEP_S; the test reads past that)."""
    child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)  # running
        answers = []
        for _ in range(10):
            time.sleep(blas.QUIET_KEEP_S * 2)
            answers.append(blas.quiet())
        assert not any(answers)
    finally:
        child.kill()
        child.wait()


def test_products_give_the_same_bits_whatever_the_load_by_default(monkeypatch):
    """By default (IREXEC_BLAS_QUIET_FLOPS unset) the machine's load does not choose a product's
    threads (OpenBLAS's threaded and serial products add in other orders): the same operands give
    the same bits whether the machine looks idle or busy, for products below, inside and above
    the split's size."""
    env = {k: v for k, v in os.environ.items() if k != "IREXEC_BLAS_QUIET_FLOPS"}
    code = "import irexec.config as c; print(c.BLAS_QUIET_FLOPS)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    default = int(out.stdout)
    assert default == 0
    monkeypatch.setattr(config, "BLAS_QUIET_FLOPS", default)  # the suite's conftest sets 0 anyway
    rng = np.random.default_rng(4)
    for m, k, n in ((64, 576, 3136), (197, 768, 192), (128, 768, 3072)):  # 2.3e8, 5.8e7, 6.0e8 flops
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        results = []
        for idle in (True, False, True):
            monkeypatch.setattr(blas, "quiet", lambda idle=idle: idle)
            results.append(blas.matmul(a, b))
        for y in results[1:]:
            np.testing.assert_array_equal(y.view(np.int32), results[0].view(np.int32))
        np.testing.assert_allclose(results[0], a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-3)
