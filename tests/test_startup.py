"""Start-up and behaviour under load: a one-shot run never waits for a compile, any cache state
works (cold, read-only, corrupt, numba imported first), and concurrent `infer` calls from many
threads stay correct under every threading layer and with the cores busy. Timing is benchmarked
(tools/bench_startup.py), never asserted here."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import irexec
from irexec import config
from tests.support.irbuild import Net

ROOT = Path(__file__).resolve().parents[1]


def four_means(tmp_path) -> Path:
    """The start-up benchmark's model: four ReduceMean layers on a (64, 64, 64) float32 input."""
    n = Net("four_means")
    x = n.param("x", "f32", (64, 64, 64))
    for i, axes in enumerate(([0], [1], [2], [1, 2])):
        dims = [64] * (3 - len(axes))
        r = n.op("ReduceMean", [x, n.const(np.array(axes, np.int64))], {"keep_dims": "false"}, out_dims=dims)
        n.result(r, f"m{i}")
    return n.save(tmp_path / "four_means.xml")


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("IREXEC_", "NUMBA_"))}
    env.update(extra)
    return env


def _run(code: str, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


def test_one_shot_run_with_a_cold_cache_never_imports_numba(tmp_path):
    xml = four_means(tmp_path)
    code = (
        "import sys\nfrom irexec.cli import main\n"
        f"rc = main(['run', {str(xml)!r}])\n"
        "print('NUMBA', 'numba' in sys.modules)\nsys.exit(rc)\n"
    )
    proc = _run(code, _env(IREXEC_CACHE_DIR=str(tmp_path / "empty-cache")))
    assert proc.returncode == 0, proc.stderr
    assert "NUMBA False" in proc.stdout
    assert "compiling" not in proc.stderr


def _kernel_check_code(xml: Path) -> str:
    return (
        "import numpy as np, irexec, sys, os\n"
        f"m = irexec.load({str(xml)!r})\n"
        "x = np.random.default_rng(0).random((64, 64, 64), dtype=np.float32)\n"
        "out = m.infer({'x': x})\n"
        "from irexec.kernels import jit\n"
        "assert jit.ready(), 'kernels were not used'\n"
        "ref = x.astype(np.float64).mean(axis=(1, 2))\n"
        "assert np.allclose(out['m3'], ref, rtol=1e-6), 'wrong values'\n"
        "import numba\n"
        "print('CACHE', numba.config.CACHE_DIR)\n"
    )


def test_read_only_home_runs_uncached_with_one_warning(tmp_path):
    xml = four_means(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    os.chmod(home, 0o555)
    env = _env(HOME=str(home), IREXEC_JIT="always", IREXEC_SMALL_ELEMENTS="0")
    env.pop("XDG_CACHE_HOME", None)
    if os.geteuid() == 0:  # root writes anywhere: point the cache at a read-only file system path
        env["IREXEC_CACHE_DIR"] = "/proc/irexec-cache"
    package = Path(irexec.__file__).parent
    before = set(package.rglob("*.nb[ic]"))
    proc = _run(_kernel_check_code(xml), env)
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "cache" in warnings[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert set(package.rglob("*.nb[ic]")) == before, "numba wrote into the installed package"


def test_corrupt_cache_entries_are_rebuilt(tmp_path):
    xml = four_means(tmp_path)
    cache = tmp_path / "cache"
    from irexec.kernels import jit

    if jit.CACHE_DIR and Path(jit.CACHE_DIR).is_dir():  # start from this machine's cache: no compile
        shutil.copytree(jit.CACHE_DIR, cache)
    env = _env(IREXEC_CACHE_DIR=str(cache), IREXEC_JIT="always", IREXEC_SMALL_ELEMENTS="0")
    first = _run(_kernel_check_code(xml), env)
    assert first.returncode == 0, first.stderr
    files = list(cache.rglob("*.nb[ic]"))
    assert files, "nothing was cached"
    for f in files:  # garbage where numba's index and code were, as another version might leave
        f.write_bytes(b"\x80\x04not a pickle" + os.urandom(64))
    again = _run(_kernel_check_code(xml), env)
    assert again.returncode == 0, again.stderr
    assert "Traceback" not in again.stderr


def test_cache_location_is_irexecs_even_when_numba_was_imported_first(tmp_path):
    xml = four_means(tmp_path)
    cache = tmp_path / "mine"
    code = "import numba\n" + _kernel_check_code(xml)
    proc = _run(code, _env(IREXEC_CACHE_DIR=str(cache), IREXEC_JIT="always", IREXEC_SMALL_ELEMENTS="0"))
    assert proc.returncode == 0, proc.stderr
    assert f"CACHE {cache}" in proc.stdout
    assert list(cache.rglob("*.nbi"))


def _sum_model(tmp_path) -> Path:
    n = Net("sum0")
    x = n.param("x", "f32", (1024, 1024))
    n.result(n.op("ReduceSum", [x, n.const(np.array([0], np.int64))], {"keep_dims": "false"}, out_dims=[1024]), "y")
    return n.save(tmp_path / "sum0.xml")


def test_many_threads_calling_infer_stay_correct(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "JIT", "always")
    monkeypatch.setattr(config, "THREAD_MIN_BYTES", 0)  # every call takes the thread pool too
    m = irexec.load(_sum_model(tmp_path))
    rng = np.random.default_rng(0)
    xs = [rng.random((1024, 1024), dtype=np.float32) for _ in range(8)]
    refs = [x.astype(np.float64).sum(axis=0) for x in xs]
    bad = []

    def work(i):
        for _ in range(200):
            y = m.infer({"x": xs[i]})["y"]
            if not np.allclose(y, refs[i], rtol=1e-6):
                bad.append(i)
                return

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad


@pytest.mark.parametrize("layer", ["workqueue", "omp", "tbb"])
def test_concurrent_infer_under_each_threading_layer(tmp_path, layer):
    """numba's threading layers differ in thread safety (workqueue aborts when two threads enter
    a parallel region); irexec's kernels do not use them, so any choice works."""
    xml = _sum_model(tmp_path)
    code = (
        "import threading, numpy as np, irexec\n"
        f"m = irexec.load({str(xml)!r})\n"
        "x = np.random.default_rng(1).random((1024, 1024), dtype=np.float32)\n"
        "ref = x.astype(np.float64).sum(axis=0)\n"
        "bad = []\n"
        "def work():\n"
        "    for _ in range(25):\n"
        "        if not np.allclose(m.infer({'x': x})['y'], ref, rtol=1e-6): bad.append(1)\n"
        "ts = [threading.Thread(target=work) for _ in range(4)]\n"
        "[t.start() for t in ts]; [t.join() for t in ts]\n"
        "print('BAD', len(bad))\n"
    )
    env = _env(
        NUMBA_THREADING_LAYER=layer,
        IREXEC_JIT="always",
        IREXEC_THREAD_MIN_BYTES="0",
        IREXEC_CACHE_DIR=str(Path.home() / ".cache" / "irexec" / "numba"),
    )
    proc = _run(code, env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "BAD 0" in proc.stdout


def test_contended_cores_still_give_correct_results(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "JIT", "always")
    busy = [
        subprocess.Popen([sys.executable, "-c", "import time\nt=time.time()\nwhile time.time()-t<20: pass"])
        for _ in range(2)
    ]
    try:
        m = irexec.load(_sum_model(tmp_path))
        x = np.random.default_rng(2).random((1024, 1024), dtype=np.float32)
        ref = x.astype(np.float64).sum(axis=0)
        for _ in range(100):
            np.testing.assert_allclose(m.infer({"x": x})["y"], ref, rtol=1e-6)
    finally:
        for p in busy:
            p.kill()
            p.wait()


def test_set_num_threads():
    old = config.NUM_THREADS
    try:
        irexec.set_num_threads(1)
        assert config.NUM_THREADS == 1
        with pytest.raises(ValueError):
            irexec.set_num_threads(0)
    finally:
        config.NUM_THREADS = old


def test_bench_compiles_only_its_kernels_and_warmup_compiles_them_ahead(tmp_path):
    """A cold `bench` compiles what its model uses (one notice line), `warmup MODEL` compiles the
    rest of what such a model needs, after which `bench` compiles nothing."""
    import json

    xml = four_means(tmp_path)
    env = _env(IREXEC_CACHE_DIR=str(tmp_path / "cache"))

    def cli(*args):
        proc = subprocess.run(
            [sys.executable, "-m", "irexec", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, proc.stderr
        return proc

    cold = cli("bench", str(xml), "-n", "2", "--json", "-")
    stats = json.loads(cold.stdout)
    assert stats["kernels_from"] == "compiled" and stats["kernels_compiled"] >= 1
    notices = [line for line in cold.stderr.splitlines() if "compiling numba kernels" in line]
    assert len(notices) == 1, cold.stderr
    done = cli("warmup", str(xml))
    assert "compiled the kernels of 1 model(s)" in done.stdout
    warm = cli("bench", str(xml), "-n", "2", "--json", "-")
    stats = json.loads(warm.stdout)
    assert stats["kernels_compiled"] == 0 and stats["kernels_from_cache"] >= 1, stats
    assert "compiling" not in warm.stderr


# ---- the default policy of a library process: kernels from the second call --------------------


def _warm_copy(tmp_path) -> Path:
    """A copy of this machine's kernel cache (a warm cache, without compiling in the test)."""
    from irexec.kernels import jit

    cache = tmp_path / "warm-cache"
    if jit.CACHE_DIR and Path(jit.CACHE_DIR).is_dir():
        shutil.copytree(jit.CACHE_DIR, cache)
    return cache


def _sigmoid_model(tmp_path) -> Path:
    n = Net("sigmoid")
    x = n.param("x", "f32", (4, 256))
    n.result(n.op("Sigmoid", [x], out_dims=[4, 256]), "y")
    return n.save(tmp_path / "sigmoid.xml")


_LOOP = (
    "import numpy as np, irexec, sys\n"
    "from irexec.kernels import jit\n"
    "m = irexec.load({xml!r})\n"
    "x = np.random.default_rng(0).random({shape}, dtype=np.float32)\n"
    "name = m.inputs[0].name\n"
    "first = m.infer({{name: x}})\n"
    "print('AFTER1', jit.ready('reduce'), jit.ready('elementwise'))\n"
    "{between}"
    "second = m.infer({{name: x}})\n"
    "print('AFTER2', jit.ready('reduce'), jit.ready('elementwise'), jit.ready('pool'))\n"
    "for k in first:\n"
    "    np.testing.assert_allclose(first[k], second[k], rtol=1e-6)\n"
)


def test_a_loop_runs_the_kernels_from_its_second_call_with_a_warm_cache(tmp_path):
    """The defaults (IREXEC_JIT unset, a library process): the first call starts loading the
    family it would use (numpy serves it), the second call runs the kernels; a family the model
    never asks for is never loaded."""
    xml = four_means(tmp_path)
    code = _LOOP.format(xml=str(xml), shape=(64, 64, 64), between="")
    proc = _run(code, _env(IREXEC_CACHE_DIR=str(_warm_copy(tmp_path))))
    assert proc.returncode == 0, proc.stderr
    assert "AFTER1 False False" in proc.stdout  # numpy served the first call
    assert "AFTER2 True False False" in proc.stdout
    assert "compiling" not in proc.stderr


def test_a_cold_cache_compiles_the_models_family_in_the_background(tmp_path):
    """With nothing cached, numpy serves while the family the model asked for compiles in the
    background; the other families stay unloaded."""
    xml = _sigmoid_model(tmp_path)
    between = "jit.wait_loaded(600)\n"
    code = _LOOP.format(xml=str(xml), shape=(4, 256), between=between)
    proc = _run(code, _env(IREXEC_CACHE_DIR=str(tmp_path / "empty-cache")), timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "AFTER1 False False" in proc.stdout
    assert "AFTER2 False True False" in proc.stdout
    cached = {f.name.split(".")[0] for f in (tmp_path / "empty-cache").rglob("*.nbi")}
    assert cached == {"elementwise_loops"}  # that family alone was compiled


def test_compile_loads_the_families_the_model_uses(tmp_path):
    """`Model.compile()` (and `load(..., jit="eager")`) loads what the model's layers may run on,
    before the first call, like OpenVINO's compile_model."""
    xml = four_means(tmp_path)
    code = (
        "import irexec\nfrom irexec.kernels import jit\n"
        f"m = irexec.load({str(xml)!r}, jit='eager')\n"
        "print('FAMILIES', m.kernel_families(), jit.ready('reduce'), jit.ready('pool'))\n"
    )
    proc = _run(code, _env(IREXEC_CACHE_DIR=str(_warm_copy(tmp_path))))
    assert proc.returncode == 0, proc.stderr
    assert "FAMILIES ['reduce'] True False" in proc.stdout
    with pytest.raises(irexec.UsageError, match="jit='soon'"):
        irexec.load(xml, jit="soon")
