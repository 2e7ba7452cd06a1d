"""Batch inference on Dask (issue 13): a local cluster of worker processes, the `dask scheduler` /
`dask worker` programs as separate processes on 127.0.0.1, a worker killed mid-batch, corrupt and
mismatched samples, --resume after an interrupted run, and the dask-array API on the threaded
scheduler and on a cluster; every output compared with Model.infer sample by sample.

Every child process runs in its own process group and is killed (SIGKILL to the group) in a
`finally`, whatever happens. IREXEC_JIT=never everywhere: the numpy paths, so no process waits
for numba and results are bit-identical between the workers and this process."""

from __future__ import annotations

import json
import os
import pty
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import irexec
from irexec import config
from irexec.cli import main as cli_main
from tests.support.irbuild import Net

pytest.importorskip("distributed")
ROOT = Path(__file__).resolve().parents[1]
ENV = dict(
    os.environ,
    IREXEC_JIT="never",
    OMP_NUM_THREADS="1",
    OPENBLAS_NUM_THREADS="1",
    MKL_NUM_THREADS="1",
    PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
)


@pytest.fixture(autouse=True)
def _numpy_paths(monkeypatch):
    monkeypatch.setattr(config, "JIT", "never")


def _model(d: Path, width=256) -> Path:
    """x (4, width) -> Multiply by a constant -> ReduceSum over axis 1 -> y, and Exp of it -> e."""
    n = Net("batchmodel")
    x = n.param("x", "f32", (4, width))
    m = n.op("Multiply", [x, n.const(np.linspace(-1, 1, width, dtype=np.float32)[None])], out_dims=[4, width])
    n.result(n.op("ReduceSum", [m, n.const(np.array([1], np.int64))], {"keep_dims": "false"}, out_dims=[4]), "y")
    n.result(n.op("Exp", [m], out_dims=[4, width]), "e")
    return n.save(d / "model.xml")


def _slow_model(d: Path, rows=16, width=1 << 14) -> Path:
    """About 30 ms a sample: twelve rounds of Multiply and Exp over (16, 16384), then a ReduceSum."""
    n = Net("slow")
    v = n.param("x", "f32", (rows, width))
    for _ in range(12):
        v = n.op("Multiply", [v, n.const(np.full((1, width), 0.5, np.float32))], out_dims=[rows, width])
        v = n.op("Exp", [v], out_dims=[rows, width])
    n.result(n.op("ReduceSum", [v, n.const(np.array([1], np.int64))], {"keep_dims": "false"}, out_dims=[rows]), "y")
    return n.save(d / "slow.xml")


def _samples(d: Path, n: int, shape=(4, 256)) -> Path:
    folder = d / "in"
    folder.mkdir()
    for i in range(n):
        np.savez(folder / f"s{i:03d}.npz", x=np.random.default_rng(i).random(shape, dtype=np.float32))
    return folder


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass


def _start_batch(*args, stderr=subprocess.PIPE) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "irexec", "batch", *map(str, args)],
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        start_new_session=True,
    )


def _batch(*args, timeout=120) -> subprocess.CompletedProcess:
    """`irexec batch ...` in its own process group (a local cluster's workers included), killed on timeout."""
    proc = _start_batch(*args)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    finally:
        _kill_group(proc)  # the group: a LocalCluster's worker processes too
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def _manifest(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]


def _check_outputs(model_xml: Path, inputs: Path, out: Path, stems=None) -> int:
    """Every readable sample's output file equals Model.infer of that sample, bit for bit."""
    m = irexec.load(model_xml)
    n = 0
    for sample in sorted(inputs.glob("*.npz")):
        if stems is not None and sample.stem not in stems:
            continue
        feeds = dict(np.load(sample))
        want = m.infer(feeds)
        with np.load(out / sample.name) as got:
            assert sorted(got.files) == sorted(want)
            for k, v in want.items():
                assert got[k].dtype == v.dtype
                np.testing.assert_array_equal(got[k], v)
        n += 1
    return n


def test_irexec_does_not_import_dask_and_says_how_to_get_it(tmp_path):
    """`import irexec` (and the CLI's parser) never imports dask; without dask, `irexec batch` is a
    usage error (exit 2) naming the extra, and so is irexec.dask.infer."""
    xml = _model(tmp_path)
    inputs = _samples(tmp_path, 1)
    code = f"""
import sys
import irexec, irexec.cli, irexec.distributed
irexec.cli.build_parser()
assert "dask" not in sys.modules and "distributed" not in sys.modules, "dask was imported"
sys.modules["dask"] = sys.modules["distributed"] = None  # as if not installed
code = irexec.cli.main(["batch", {str(xml)!r}, {str(inputs)!r}, "--out", {str(tmp_path / "out")!r}])
import irexec.dask
try:
    irexec.dask.infer({str(xml)!r}, {{}})
except irexec.UsageError as e:
    print("API:", e)
sys.exit(code)
"""
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == 'irexec: usage: irexec batch needs Dask: pip install "irexec[dask]"'
    assert 'API: irexec.dask needs Dask: pip install "irexec[dask]"' in proc.stdout


def test_local_cluster_batch_matches_infer_and_records_every_sample(tmp_path):
    """(a) + (d): 2 worker processes over a folder of 20 samples and 3 bad ones."""
    xml = _model(tmp_path)
    inputs = _samples(tmp_path, 20)
    (inputs / "corrupt.npz").write_bytes(b"garbage, not an npz at all" * 10)
    np.savez(inputs / "wrongdtype.npz", x=np.zeros((4, 256), np.int32))
    np.savez(inputs / "noinput.npz", other=np.zeros((4, 256), np.float32))
    out = tmp_path / "out"
    proc = _batch(xml, inputs, "--out", out, "--workers", "2", "--json", tmp_path / "summary.json")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip().endswith(f"3 of 23 samples failed (see {out / 'manifest.jsonl'})")
    assert "Traceback" not in proc.stderr
    assert "23 samples: 20 ok, 3 failed, 0 skipped" in proc.stdout
    good = {f"s{i:03d}" for i in range(20)}
    assert _check_outputs(xml, inputs, out, good) == 20

    # the same bytes as `irexec run -i SAMPLE -o OUT.npz`
    assert (
        cli_main(
            [
                "run",
                str(xml),
                "-i",
                str(inputs / "s007.npz"),
                "-o",
                str(tmp_path / "run.npz"),
                "--json",
                str(tmp_path / "run.json"),
            ]
        )
        == 0
    )
    with np.load(tmp_path / "run.npz") as a, np.load(out / "s007.npz") as b:
        assert a.files == b.files
        for k in a.files:
            np.testing.assert_array_equal(a[k], b[k])

    records = _manifest(out)
    assert len(records) == 23 and len({r["run"] for r in records}) == 1
    assert sorted(Path(r["input"]).stem for r in records) == sorted(good | {"corrupt", "wrongdtype", "noinput"})
    by_stem = {Path(r["input"]).stem: r for r in records}
    for stem in good:
        r = by_stem[stem]
        assert r["status"] == "ok" and r["error"] is None and r["output"] == str(out / f"{stem}.npz")
        assert r["seconds"] >= 0 and r["worker"].startswith("tcp://127.0.0.1:")
    for stem in ("corrupt", "wrongdtype", "noinput"):
        r = by_stem[stem]
        assert r["status"] == "failed" and r["output"] is None and r["error"] == "InputError", r
        assert r["message"] and not (out / f"{stem}.npz").exists()
    assert "not a valid" in by_stem["corrupt"]["message"]
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temporary files left
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert (summary["samples"], summary["ok"], summary["failed"], summary["skipped"]) == (23, 20, 3, 0)
    assert summary["samples_per_s"] > 0 and summary["seconds"] > 0
    assert sum(w["samples"] for w in summary["per_worker"].values()) == 23
    assert abs(sum(w["share"] for w in summary["per_worker"].values()) - 1) < 1e-9


def test_a_task_that_raises_is_retried_then_its_samples_run_one_by_one(tmp_path, monkeypatch):
    """An exception that is not irexec's (here planted in one sample) is retried by dask; when the
    task still fails, its samples run one per task, so only that sample is failed. A cluster of
    threads in this process (127.0.0.1), so the planted failure reaches the worker."""
    from distributed import LocalCluster

    import irexec.distributed as batch

    xml = _model(tmp_path)
    inputs = _samples(tmp_path, 9)
    out = tmp_path / "out"
    real, calls = batch.run_sample, []

    def planted(source, options, sample, output):
        calls.append(Path(sample).stem)
        if Path(sample).stem == "s004":
            raise RuntimeError("planted failure")
        return real(source, options, sample, output)

    monkeypatch.setattr(batch, "run_sample", planted)
    with LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None, host="127.0.0.1", protocol="tcp://"
    ) as lc:
        code = cli_main(
            [
                "batch",
                str(xml),
                str(inputs),
                "--out",
                str(out),
                "--scheduler",
                lc.scheduler_address,
                "--shared-storage",
                "--chunk-size",
                "3",
                "--retries",
                "1",
                "--json",
                str(tmp_path / "s.json"),
            ]
        )
    assert code == 1
    records = _manifest(out)
    assert sorted(Path(r["input"]).stem for r in records) == [f"s{i:03d}" for i in range(9)]
    bad = [r for r in records if r["status"] != "ok"]
    assert len(bad) == 1 and Path(bad[0]["input"]).stem == "s004"
    assert bad[0]["error"] == "RuntimeError" and bad[0]["message"] == "planted failure"
    assert calls.count("s004") == 4  # its task of 3, once more (--retries 1), then alone, once more
    assert calls.count("s000") == 1 and calls.count("s003") == 3  # s003, s005: tried with s004, then alone
    assert _check_outputs(xml, inputs, out, {f"s{i:03d}" for i in range(9)} - {"s004"}) == 8


def _run_on_a_terminal(*args, timeout=120):
    """`irexec batch` with stderr on a pseudo-terminal (for the progress line); (returncode, stdout, stderr)."""
    master, slave = pty.openpty()
    proc = _start_batch(*args, stderr=slave)
    os.close(slave)
    chunks = []

    def read():
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        stdout, _ = proc.communicate(timeout=timeout)
    finally:
        _kill_group(proc)
        reader.join(timeout=5)
        os.close(master)
    return proc.returncode, stdout, b"".join(chunks).decode(errors="replace")


def test_resume_redoes_only_missing_and_damaged_outputs(tmp_path):
    """(e): after an interrupted run (outputs missing, one truncated, a temporary file left), --resume
    computes exactly those again; the others are skipped and not rewritten."""
    xml = _model(tmp_path)
    inputs = _samples(tmp_path, 8)
    out = tmp_path / "out"
    first = _batch(xml, inputs, "--out", out, "--workers", "1")
    assert first.returncode == 0, first.stderr
    (out / "s001.npz").unlink()
    (out / "s005.npz").unlink()
    data = (out / "s002.npz").read_bytes()
    (out / "s002.npz").write_bytes(data[: len(data) // 2])  # a file cut short
    damaged = bytearray((out / "s003.npz").read_bytes())
    damaged[200] ^= 0xFF  # a flipped byte inside an array: the zip CRC catches it
    (out / "s003.npz").write_bytes(bytes(damaged))
    (out / ".s004.abc.npz.tmp").write_bytes(b"half")  # what a killed worker leaves
    before = {p.name: p.stat().st_mtime_ns for p in out.glob("s*.npz")}

    # the samples named by an fsspec URL glob this time; stderr on a terminal shows the progress line
    code, stdout, stderr = _run_on_a_terminal(
        xml, f"file://{inputs}/s*.npz", "--out", out, "--workers", "1", "--resume", "--json", "-"
    )
    assert code == 0, stderr
    assert "batch: 4/4 done, 0 failed" in stderr and "samples/s" in stderr and "ETA" in stderr
    summary = json.loads(stdout)
    assert (summary["ok"], summary["skipped"], summary["failed"]) == (4, 4, 0)
    records = _manifest(out)
    assert len(records) == 16  # the first run's 8 lines are kept; the second run's follow
    second = [r for r in records if r["run"] == summary["run"]]
    status = {Path(r["input"].split("://")[-1]).stem: r["status"] for r in second}
    assert status == {
        "s000": "skipped",
        "s001": "ok",
        "s002": "ok",
        "s003": "ok",
        "s004": "skipped",
        "s005": "ok",
        "s006": "skipped",
        "s007": "skipped",
    }
    assert all(r["input"].startswith("file://") for r in second)
    for name, mtime in before.items():
        if name in ("s000.npz", "s004.npz", "s006.npz", "s007.npz"):
            assert (out / name).stat().st_mtime_ns == mtime  # skipped: not written again
    assert _check_outputs(xml, inputs, out) == 8
    assert not list(out.glob(".*"))  # the stale temporary file is gone


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Cluster:
    """The `dask scheduler` and `dask worker` programs (`python -m dask ...`), each in its own
    process group, on 127.0.0.1 only."""

    def __init__(self, tmp_path: Path, workers=2):
        self.port = _free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen] = []
        self.workers: list[subprocess.Popen] = []
        self.logs: list[Path] = []
        try:
            self._start(
                ["scheduler", "--host", "127.0.0.1", "--port", str(self.port), "--no-dashboard"],
                tmp_path / "scheduler.log",
            )
            for i in range(workers):
                self.workers.append(
                    self._start(
                        [
                            "worker",
                            self.address,
                            "--nthreads",
                            "1",
                            "--no-nanny",
                            "--no-dashboard",
                            "--host",
                            "127.0.0.1",
                            "--death-timeout",
                            "60",
                            "--name",
                            f"w{i}",
                        ],
                        tmp_path / f"worker{i}.log",
                    )
                )
            self._wait_for(workers)
        except BaseException:
            self.close()
            raise

    def _start(self, cmd, log: Path) -> subprocess.Popen:
        self.logs.append(log)
        with open(log, "w") as f:
            p = subprocess.Popen(
                [sys.executable, "-m", "dask", *cmd],
                env=ENV,
                stdout=f,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=ROOT,
            )
        self.procs.append(p)
        return p

    def _wait_for(self, n: int) -> None:
        from distributed import Client

        deadline = time.time() + 60
        while time.time() < deadline:
            if any(p.poll() is not None for p in self.procs):
                raise RuntimeError("a dask process exited: " + " | ".join(log.read_text()[-500:] for log in self.logs))
            try:
                with Client(self.address, timeout=5) as c:
                    if len(c.scheduler_info()["workers"]) >= n:
                        return
            except (OSError, TimeoutError):
                pass
            time.sleep(0.3)
        raise RuntimeError("the dask cluster did not come up in 60 s")

    def worker_address(self, i: int) -> str:
        for line in (self.logs[1 + i]).read_text().splitlines():
            if "Start worker at:" in line:
                return line.split("Start worker at:")[1].strip()
        raise AssertionError("no worker address in its log")

    def close(self) -> None:
        for p in self.procs:
            _kill_group(p)


@pytest.fixture
def cluster(tmp_path):
    c = _Cluster(tmp_path)
    try:
        yield c
    finally:
        c.close()


def test_external_scheduler_and_workers(tmp_path, cluster):
    """(b) and (f) on a cluster: `irexec batch --scheduler` (the model's files sent to the workers),
    then irexec.dask.infer computed by the same workers."""
    import dask.array as da
    from distributed import Client

    import irexec.dask as ixd

    xml = _model(tmp_path)
    inputs = _samples(tmp_path, 12)
    out = tmp_path / "out"
    proc = _batch(xml, inputs, "--out", out, "--scheduler", cluster.address, "--chunk-size", "2", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    assert _check_outputs(xml, inputs, out) == 12
    records = _manifest(out)
    assert len(records) == 12 and {r["status"] for r in records} == {"ok"}
    workers = {r["worker"] for r in records}
    assert workers <= {cluster.worker_address(0), cluster.worker_address(1)}
    assert json.loads(proc.stdout)["cluster"] == cluster.address

    data = np.random.default_rng(5).random((12, 256), dtype=np.float32)
    with Client(cluster.address, timeout=30) as client:
        got = ixd.infer(xml, {"x": da.from_array(data, chunks=(5, 128))})  # the model takes 4 rows: chunks 4, 4, 4
        assert got["y"].chunks == ((4, 4, 4),) and got["e"].shape == (12, 256)
        y, e = client.compute([got["y"], got["e"]], sync=True)
    m = irexec.load(xml)
    want = [m.infer({"x": data[i : i + 4]}) for i in (0, 4, 8)]
    np.testing.assert_array_equal(y, np.concatenate([w["y"] for w in want]))
    np.testing.assert_array_equal(e, np.concatenate([w["e"] for w in want]))


def test_a_worker_killed_mid_batch_loses_nothing(tmp_path, cluster):
    """(c): SIGKILL to one `dask worker` while both are halfway through a task of 15 samples; its
    task runs again on the other (the outputs it had written are written again there), and every
    sample ends with its output and one manifest line."""
    xml = _slow_model(tmp_path)
    n, chunk = 60, 15
    inputs = _samples(tmp_path, n, shape=(16, 1 << 14))
    out = tmp_path / "out"
    proc = _start_batch(
        xml, inputs, "--out", out, "--scheduler", cluster.address, "--shared-storage", "--chunk-size", chunk
    )

    def written(first, last):
        return [p for p in (out / f"s{i:03d}.npz" for i in range(first, last)) if p.exists()]

    try:
        deadline = time.time() + 90
        while (
            time.time() < deadline
            and proc.poll() is None
            and (len(written(0, chunk)) < 2 or len(written(chunk, 2 * chunk)) < 2)
        ):
            time.sleep(0.01)
        before = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in out.glob("s*.npz")}
        assert proc.poll() is None and len(before) < 2 * chunk, (len(before), proc.poll())  # both mid-task
        killed = cluster.worker_address(0)
        os.killpg(cluster.workers[0].pid, signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        _kill_group(proc)
    assert proc.returncode == 0, stderr
    assert f"{n} samples: {n} ok, 0 failed" in stdout
    assert _check_outputs(xml, inputs, out) == n
    records = _manifest(out)
    assert sorted(Path(r["input"]).stem for r in records) == [f"s{i:03d}" for i in range(n)]
    survivor = cluster.worker_address(1)
    by = {Path(r["input"]).name: r["worker"] for r in records}
    assert set(by.values()) <= {killed, survivor}
    assert list(by.values()).count(killed) <= n - 2 * chunk  # its task in flight was not counted for it
    again = [
        name
        for name, st in before.items()
        if (out / name).stat().st_ino != st[0] or (out / name).stat().st_mtime_ns != st[1]
    ]
    assert again and all(by[name] == survivor for name in again)  # the killed worker's task, redone
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


def test_dask_array_api_threaded(tmp_path):
    """(f): 3 chunks through the threaded scheduler equal Model.infer on the whole array; an output
    whose shape is dynamic beyond the batch axis is probed on the first chunk."""
    import dask
    import dask.array as da

    import irexec.dask as ixd

    n = Net("rows")
    x = n.param("x", "f32", (None, 8))
    ex = n.op("Exp", [x], out_dims=[-1, 8])
    n.result(n.op("ReduceMean", [ex, n.const(np.array([1], np.int64))], {"keep_dims": "false"}, out_dims=[-1]), "m")
    rows = n.save(tmp_path / "rows.xml")
    data = np.random.default_rng(0).random((30, 8), dtype=np.float32)
    out = ixd.infer(rows, {"x": da.from_array(data, chunks=(10, 4))}, batch_axis=0)
    assert isinstance(out["m"], da.Array) and out["m"].shape == (30,) and out["m"].chunks == ((10, 10, 10),)
    with dask.config.set(scheduler="threads"):
        got = out["m"].compute()
    np.testing.assert_array_equal(got, irexec.load(rows).infer({"x": data})["m"])

    n = Net("dyn")
    x = n.param("x", "f32", (None, None))
    n.result(n.op("Exp", [x], out_dims=[-1, -1]), "e")
    dyn = n.save(tmp_path / "dyn.xml")
    out = ixd.infer(dyn, {"x": da.from_array(data, chunks=(10, 8))})
    assert out["e"].shape == (30, 8) and out["e"].dtype == np.float32
    with dask.config.set(scheduler="threads"):
        np.testing.assert_array_equal(out["e"].compute(), np.exp(data))
    with pytest.raises(irexec.InputError, match="not an input"):
        ixd.infer(dyn, {"y": da.from_array(data, chunks=10)})
