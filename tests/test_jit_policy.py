"""The kernels' policy by behaviour (never wall time): the cost model's calibration file (its life
cycle: missing, measured, stale, corrupt), measured lazily in the background; a model's second
call with a warm cache runs the kernels and never waits behind another family's compile; a
one-shot process never compiles in the foreground; `irexec bench --paths` reports each layer's
path. Timing itself is benchmarked (tools/bench_fallbacks.py, tools/bench_models.py)."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import irexec
from irexec import config
from irexec.kernels import calibrate, costs, jit
from tests.support.irbuild import Net
from tests.test_startup import _env, _run, four_means


@pytest.fixture
def calibration_dir(tmp_path, monkeypatch):
    """A fresh folder for the calibration file (the kernels stay in the machine's cache)."""
    monkeypatch.setattr(costs, "folder", str(tmp_path))
    calibrate.reset()
    yield tmp_path
    calibrate.reset()


def _warm_cache(tmp_path, drop: tuple[str, ...] = ()) -> Path:
    """A copy of this machine's kernel cache without its calibration file (and without the
    kernel modules named in `drop`: a cache cold for those families)."""
    cache = tmp_path / "warm-cache"
    if jit.CACHE_DIR and Path(jit.CACHE_DIR).is_dir():
        shutil.copytree(jit.CACHE_DIR, cache)
    else:
        pytest.skip("no kernel cache on this machine")
    for f in list(cache.rglob(calibrate.FILE_NAME)) + [f for s in drop for f in cache.rglob(f"{s}.*")]:
        f.unlink()
    return cache


def test_calibration_file_life_cycle(calibration_dir):
    path = calibration_dir / calibrate.FILE_NAME
    assert calibrate.status() == "missing"
    assert costs.costs() == {"families": {}, **calibrate.DEFAULTS}
    assert calibrate.rates("pool") == calibrate.DEFAULT_RATES

    measured = calibrate.calibrate(["pool"], scale=0.1)  # the pool probe, a tenth of its size
    data = json.loads(path.read_text())
    assert data["machine"] == calibrate.machine() and data["machine"]["cpu"] is not None
    assert set(data["families"]) == {"pool"} == set(measured["families"])
    assert calibrate.status() == "partial"  # the other families keep their defaults
    rates = calibrate.rates("pool")
    assert rates == data["families"]["pool"] and all(v > 0 for v in rates.values())
    assert calibrate.rates("reduce") == calibrate.DEFAULT_RATES

    data["machine"]["cpu"] = "another CPU"  # measured elsewhere: stale, the defaults serve
    path.write_text(json.dumps(data))
    calibrate.reset()
    assert calibrate.status() == "stale"
    assert calibrate.rates("pool") == calibrate.DEFAULT_RATES
    calibrate.record(families={"reduce": {"numpy_bytes_per_s": 1e9, "numba_bytes_per_s": 4e9}})
    data = json.loads(path.read_text())  # a new measurement replaces the stale file
    assert data["machine"] == calibrate.machine() and set(data["families"]) == {"reduce"}
    assert calibrate.rates("reduce") == {"numpy_bytes_per_s": 1e9, "numba_bytes_per_s": 4e9}

    path.write_text("{not json")  # unreadable: the defaults, and measured again later
    calibrate.reset()
    assert calibrate.status() == "missing" and costs.costs()["families"] == {}
    path.write_text(json.dumps({"machine": calibrate.machine(), "families": {"pool": {"numpy_bytes_per_s": -1}}}))
    calibrate.reset()
    assert calibrate.rates("pool") == calibrate.DEFAULT_RATES  # nonsense values are ignored


def test_a_library_process_calibrates_its_families_in_the_background(tmp_path):
    """No calibration file: once the loaders are idle, the family the model used is measured in a
    child process (never in the caller's process), and written beside the kernels."""
    cache = _warm_cache(tmp_path)
    xml = four_means(tmp_path)
    code = (
        "import sys, numpy as np, irexec\nfrom irexec.kernels import jit, costs\n"
        f"m = irexec.load({str(xml)!r})\n"
        "x = np.ones((64, 64, 64), np.float32)\n"
        "m.infer({'x': x}); m.infer({'x': x})\n"
        "jit.wait_loaded(600)\n"
        "print('CHILD', jit._calibrating is not None and jit._calibrating.args[-1], costs.status(jit.FAMILIES))\n"
        "print('HERE', 'irexec.kernels.probes' in sys.modules)\n"
    )
    proc = _run(code, _env(IREXEC_CACHE_DIR=str(cache)), timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "CHILD reduce partial" in proc.stdout
    assert "HERE False" in proc.stdout  # no probe ran in this process
    data = json.loads((cache / calibrate.FILE_NAME).read_text())
    assert set(data["families"]) == {"reduce"}  # only what the model used
    assert data["import_numba_s"] > 0


def _mean_and_sigmoid(tmp_path) -> Path:
    n = Net("mean_sigmoid")
    x = n.param("x", "f32", (64, 64, 64))
    m = n.op("ReduceMean", [x, n.const(np.array([1], np.int64))], {"keep_dims": "false"}, out_dims=[64, 64])
    n.result(n.op("Sigmoid", [m], out_dims=[64, 64]), "y")
    return n.save(tmp_path / "mean_sigmoid.xml")


def test_the_second_call_runs_warm_kernels_while_a_cold_family_compiles(tmp_path):
    """The reduction family is cached, the element-wise one is not: the second call runs the
    reduction kernels without waiting for the element-wise compile (held here until released),
    which then finishes in the background."""
    cache = _warm_cache(tmp_path, drop=("elementwise_loops",))
    xml = _mean_and_sigmoid(tmp_path)
    code = (
        "import threading, numpy as np, irexec\nfrom irexec.kernels import jit\n"
        "import irexec.kernels.elementwise_loops as el\n"
        "release = threading.Event()\n"
        "el.warm = lambda: release.wait(120)  # the cold family's compile, held\n"
        f"m = irexec.load({str(xml)!r})\n"
        "x = np.random.default_rng(0).random((64, 64, 64), dtype=np.float32)\n"
        "first = m.infer({'x': x})['y']\n"
        "print('AFTER1', jit.ready('reduce'), jit.ready('elementwise'))\n"
        "second = m.infer({'x': x})['y']\n"
        "print('AFTER2', jit.ready('reduce'), jit.ready('elementwise'))\n"
        "release.set(); jit.wait_loaded(120)\n"
        "print('LATER', jit.ready('elementwise'))\n"
        "np.testing.assert_allclose(first, second, rtol=1e-6)\n"
    )
    proc = _run(code, _env(IREXEC_CACHE_DIR=str(cache)), timeout=600)
    assert proc.returncode == 0, proc.stderr
    # numba is already imported here: the reduction family may be ready before the first call ends
    assert "AFTER1 True False" in proc.stdout or "AFTER1 False False" in proc.stdout
    assert "AFTER2 True False" in proc.stdout
    assert "LATER True" in proc.stdout


def test_one_shot_never_compiles_in_the_foreground(monkeypatch):
    """A one-shot process takes a family's kernels only from the cache, and only when one call
    saves more than loading costs; nothing starts in the background."""
    loads = []
    monkeypatch.setattr(config, "JIT", "auto")
    monkeypatch.setattr(jit, "_one_shot", True)
    monkeypatch.setattr(jit, "_state", "cold")
    monkeypatch.setattr(jit, "_families", {})
    monkeypatch.setattr(jit, "load_families", lambda fams, compile_now=True: loads.append((fams, compile_now)) or True)
    threads = len(jit._threads)
    monkeypatch.setattr(jit, "_family_cached", lambda family: False)
    assert not jit.use(1 << 40, 100.0, "pool")  # huge, but the cache lacks it: never compiled here
    monkeypatch.setattr(jit, "_family_cached", lambda family: True)
    assert not jit.use(1 << 10, 0.0, "pool")  # cached, but one small call does not pay
    assert loads == []
    assert jit.use(1 << 40, 0.0, "pool")  # cached and paying: loaded from the cache, not compiled
    assert loads == [(["pool"], False)]
    assert len(jit._threads) == threads and jit._families == {}


def _paths_model(tmp_path) -> Path:
    n = Net("paths")
    x = n.param("x", "f32", (8, 64, 64))
    m = n.op("ReduceMean", [x, n.const(np.array([2], np.int64))], {"keep_dims": "false"}, out_dims=[8, 64])
    w = n.const(np.ones((64, 16), np.float32))
    mm = n.op("MatMul", [m, w], out_dims=[8, 16])
    n.result(n.op("Relu", [n.op("Add", [mm, mm], out_dims=[8, 16])], out_dims=[8, 16]), "y")
    return n.save(tmp_path / "paths.xml")


def test_bench_paths_reports_the_path_of_each_layer(tmp_path):
    from irexec.cli import main
    from irexec.cli.bench import layer_paths

    xml = _paths_model(tmp_path)
    model = irexec.load(xml)
    feeds = {"x": np.ones((8, 64, 64), np.float32)}
    by_type = {}
    for forced in (False, True):
        with jit.forced(forced):
            by_type[forced] = {r["type"].split("-")[0]: r["path"] for r in layer_paths(model, feeds)}
    assert by_type[False]["ReduceMean"] == "numpy"
    assert by_type[True]["ReduceMean"] == "numba:reduce"
    assert by_type[False]["MatMul"] == by_type[True]["MatMul"] == "BLAS"
    out = tmp_path / "bench.json"
    assert main(["bench", str(xml), "-n", "2", "--paths", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["paths"]
    assert {r["type"].split("-")[0] for r in rows} >= {"ReduceMean", "MatMul"}
    assert all(r["path"] for r in rows)


def test_the_families_calibrated_are_those_with_probes():
    """The background calibration measures only families with a real-size probe (a child
    process started for the others would measure nothing); `calibrate` skips them too."""
    from irexec.kernels import probes

    assert set(jit.PROBED) == set(probes.PROBES)
    assert set(probes.PROBES) < set(jit.FAMILIES)


@pytest.mark.skipif(
    jit._getcpu is None or len(os.sched_getaffinity(0)) < 2, reason="thread affinity needs Linux and two cores"
)
def test_kernel_threads_keep_off_the_callers_core():
    """`jit.parallel_for` runs every task once, and its helper threads may run on every core of
    the calling thread but the one the caller ran on when the region started (a helper woken
    onto the caller's core shares it until the scheduler moves one of them)."""
    done = []
    lock = threading.Lock()

    def task(lo, hi):
        with lock:
            done.extend(range(lo, hi))

    for _ in range(2):  # the first region starts the helper
        done.clear()
        jit.parallel_for(task, 40, 2)
        assert sorted(done) == list(range(40))
    allowed = os.sched_getaffinity(0)
    assert jit._workers
    for tid, avoided in jit._workers.items():
        assert avoided in allowed
        assert os.sched_getaffinity(tid) == allowed - {avoided}
    for cpu in sorted(allowed):  # the caller on each of its cores in turn
        jit._keep_workers_off(cpu)
        assert all(os.sched_getaffinity(tid) == allowed - {cpu} for tid in jit._workers)
        assert set(jit._workers.values()) == {cpu}


def test_a_region_never_waits_for_a_busy_helper():
    """A helper busy elsewhere (another thread's region) holds up no region: the caller runs
    every chunk itself and returns, and the helper, once free, finds nothing left of it."""
    jit.parallel_for(lambda lo, hi: None, 2, 2)  # the helper exists
    (helper,) = jit._team.helpers(1)
    busy, release = threading.Event(), threading.Event()
    helper.put(lambda: (busy.set(), release.wait(60)))
    assert busy.wait(60)
    ran = []
    try:
        jit.parallel_for(lambda lo, hi: ran.extend((t, threading.get_ident()) for t in range(lo, hi)), 40, 2)
    finally:
        release.set()
    assert sorted(t for t, _ in ran) == list(range(40))
    assert {who for _, who in ran} == {threading.get_ident()}
    jit.parallel_for(lambda lo, hi: ran.extend((t, 0) for t in range(lo, hi)), 40, 2)  # the helper is free again
    assert len(ran) == 80


def test_what_a_chunk_raises_is_raised_in_the_caller():
    """An exception in any chunk, whichever thread ran it, comes out of `parallel_for`, after
    the helpers' chunks have finished."""

    def task(lo, hi):
        time.sleep(0.001)
        if lo <= 30 < hi:
            raise ValueError("task 30")

    for _ in range(5):
        with pytest.raises(ValueError, match="task 30"):
            jit.parallel_for(task, 40, 2)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_runs_parallel_regions():
    """A child forked after the helpers started gets helpers of its own (the parent's threads
    do not exist in it)."""
    import signal

    def task(lo, hi):
        pass

    jit.parallel_for(task, 8, 2)
    pid = os.fork()
    if pid == 0:  # the child: two regions, then out without running the parent's cleanups
        code = 1
        try:
            done = []
            jit.parallel_for(lambda lo, hi: done.extend(range(lo, hi)), 8, 2)
            jit.parallel_for(task, 8, 2)
            code = 0 if sorted(done) == list(range(8)) else 2
        finally:
            os._exit(code)
    deadline = time.monotonic() + 60
    while True:
        waited, status = os.waitpid(pid, os.WNOHANG)
        if waited:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child's parallel_for did not finish in 60 s")
        time.sleep(0.05)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_warm_that_dispatches_under_always_does_not_wait_for_itself():
    """A family's warm() runs ops, and with config.JIT "always" an op's dispatch loads every
    family: from inside `load_families` (the background compiler's thread) that came back to
    the loader's lock and waited for itself forever (the reduction's warm() did, through Mean)."""
    code = (
        "import sys, threading, types\n"
        "from irexec import config\n"
        "from irexec.kernels import jit\n"
        "fake = types.ModuleType('irexec_fake_family')\n"
        "fake.warm = lambda: print('USED', jit.use(1 << 20, 0.0, None))\n"
        "sys.modules[fake.__name__] = fake\n"
        "jit.FAMILIES['fake'] = (fake.__name__, fake.__name__)\n"
        "config.JIT = 'always'\n"
        "t = threading.Thread(target=jit.load_families, args=(['fake'],), daemon=True)\n"
        "t.start()\n"
        "t.join(120)\n"
        "print('ALIVE', t.is_alive(), jit.ready('fake'))\n"
    )
    proc = _run(code, _env())
    assert proc.returncode == 0, proc.stderr
    assert "USED True" in proc.stdout and "ALIVE False True" in proc.stdout, proc.stdout + proc.stderr


def test_kernel_modules_are_imported_one_at_a_time(monkeypatch):
    """The warm-cache loader and the cold-cache compiler are two threads: importing numba in
    both at once gave one of them a partly initialized numba ("partially initialized module
    'numba.core.types'"), which turned the kernels off. A second family's import waits until
    the first one's is done."""
    import types

    events: list[tuple[str, str]] = []
    first_in, release = threading.Event(), threading.Event()
    real = jit.importlib.import_module

    def slow_import(name, *args):
        if not name.startswith("irexec_fake_"):
            return real(name, *args)
        events.append(("in", name))
        if name == "irexec_fake_a":
            first_in.set()
            release.wait(10)
        events.append(("out", name))
        return types.ModuleType(name)

    monkeypatch.setattr(jit.importlib, "import_module", slow_import)
    monkeypatch.setitem(jit.FAMILIES, "fake_a", ("irexec_fake_a", "irexec_fake_a"))
    monkeypatch.setitem(jit.FAMILIES, "fake_b", ("irexec_fake_b", "irexec_fake_b"))
    results = {}

    def load(family):
        results[family] = jit._import_family(family, mark_ready=False)

    a = threading.Thread(target=load, args=("fake_a",))
    a.start()
    assert first_in.wait(10)
    b = threading.Thread(target=load, args=("fake_b",))
    b.start()
    b.join(0.3)  # without the lock, b's import starts at once
    assert ("in", "irexec_fake_b") not in events
    release.set()
    a.join(10)
    b.join(10)
    assert events == [
        ("in", "irexec_fake_a"),
        ("out", "irexec_fake_a"),
        ("in", "irexec_fake_b"),
        ("out", "irexec_fake_b"),
    ]
    assert results == {"fake_a": True, "fake_b": True}
