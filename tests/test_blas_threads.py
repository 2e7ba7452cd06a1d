"""irexec/blas.py: matrix products below the size rule run on one OpenBLAS thread and give
numpy's values; the process's own thread count comes back after every product, also when
products run in several Python threads at once."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from irexec import blas, config

needs_openblas = pytest.mark.skipif(blas._lookup() is None, reason="numpy is not on OpenBLAS")


def _threads() -> int:
    from irexec.blas import _find_openblas

    return int(_find_openblas()[1]())


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
    seen = []
    real = blas.np.matmul

    def spy(*args, **kw):
        seen.append(_threads())
        return real(*args, **kw)

    monkeypatch.setattr(blas.np, "matmul", spy)
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
        ((4, 128, 256), (4, 256, 192), True),  # batch items
    ],
)
def test_split_products_are_numpys(monkeypatch, a_shape, b_shape, out):
    """Products from config.BLAS_SPLIT_FLOPS up run in blocks on the kernel threads: numpy's
    values and shape, into `out` when given; a shape that does not split runs whole."""
    monkeypatch.setattr(config, "BLAS_SPLIT_FLOPS", 1)
    calls = []
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


def test_choice_learns_the_faster_way_and_follows_a_change_of_load():
    """blas.Choice: the first calls alternate until each way has LEARN times, then the way with
    the lower median runs and the other is probed every `every` calls, the interval doubling
    while the probes lose; when the chosen way slows down (a busy machine) the choice moves
    within a window's median; a way STALL times slower ends the learning at once."""
    c = blas.Choice()
    fast, slow = 1e-4, 3e-4
    ways = []
    for _ in range(2 * c.LEARN):
        way, probe = c.pick()
        assert not probe
        ways.append(way)
        c.record(way, fast if way == c.THREADED else slow, probe)
    assert ways == [c.CAPPED, c.THREADED] * c.LEARN
    assert c.best == c.THREADED and not c.learning()
    runs = []
    for _ in range(3 * c.PROBE):
        way, probe = c.pick()
        runs.append((way, probe))
        c.record(way, fast if way == c.THREADED else slow, probe)
    probes = [i for i, (way, probe) in enumerate(runs) if probe]
    assert all(runs[i][0] == c.CAPPED for i in probes)
    assert probes[:2] == [c.PROBE - 1, 3 * c.PROBE - 1]  # the interval doubled after a lost probe
    assert c.every == 4 * c.PROBE
    for _ in range(c.WINDOW // 2 + 1):  # the machine gets busy: threaded products stall
        way, probe = c.pick()
        assert way == c.THREADED
        c.record(way, 100 * slow, probe)
    assert c.best == c.CAPPED and c.every == c.PROBE
    d = blas.Choice()
    d.record(d.CAPPED, slow)
    d.record(d.THREADED, 50 * slow)  # a stall while learning: learned
    assert not d.learning() and d.best == d.CAPPED
    assert d.stalled(d.THREADED, 50 * slow) and not d.stalled(d.CAPPED, 50 * slow)


@needs_openblas
@pytest.mark.parametrize(
    "a_shape,b_shape", [((96, 16), (1, 16, 12544)), ((197, 192), (192, 576)), ((2, 64, 96), (96, 512))]
)
def test_measured_products_are_numpys_both_ways(monkeypatch, a_shape, b_shape):
    """Products from config.BLAS_MEASURED_FLOPS up give numpy's values whichever way their
    Choice runs them, and leave OpenBLAS's thread count as the process had it."""
    monkeypatch.setattr(blas, "_choices", {})
    monkeypatch.setattr(blas, "_stalled_until", 0.0)
    own = blas._lookup()[1]
    rng = np.random.default_rng(2)
    a = rng.normal(size=a_shape).astype(np.float32)
    b = rng.normal(size=b_shape).astype(np.float32)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    for _ in range(2 * blas.Choice.LEARN):
        got = blas.matmul(a, b)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)
        assert got.shape == want.shape and got.dtype == np.float32
    if own > 1:  # products are measured where OpenBLAS has threads to cap
        (choice,) = blas._choices.values()
        assert [len(t) for t in choice.times] == [blas.Choice.LEARN] * 2 or choice.decided
    assert _threads() == own
