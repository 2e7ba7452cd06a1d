"""Batch inference on Dask: a local cluster of worker processes, the `dask scheduler` /
`dask worker` programs as separate processes on 127.0.0.1, a worker killed mid-batch, a corrupt
sample, --resume after an interrupted run, and the dask-array API; every output compared with
Model.infer sample by sample."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from irbuild import Net

import irexec

pytest.importorskip("distributed")
ROOT = Path(__file__).resolve().parents[1]


def _model(d: Path, width=256) -> Path:
    n = Net("batchmodel")
    x = n.param("x", "f32", (4, width))
    m = n.op("Multiply", [x, n.const(np.full((1, width), 2, np.float32))], out_dims=[4, width])
    n.result(n.op("ReduceSum", [m, n.const(np.array([1], np.int64))], {"keep_dims": "false"}, out_dims=[4]), "y")
    n.result(n.op("Exp", [m], out_dims=[4, width]), "e")
    return n.save(d / "model.xml")


def _samples(d: Path, n: int, width=256) -> Path:
    folder = d / "in"
    folder.mkdir()
    for i in range(n):
        np.savez(folder / f"s{i:03d}.npz", x=np.random.default_rng(i).random((4, width), dtype=np.float32))
    return folder


def _batch(*args, timeout=180):
    return subprocess.run([sys.executable, "-m", "irexec", "batch", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def _manifest(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]


def _check_outputs(model_xml: Path, inputs: Path, out: Path) -> int:
    m = irexec.load(model_xml)
    n = 0
    for sample in sorted(inputs.glob("*.npz")):
        try:
            feeds = dict(np.load(sample))
        except Exception:
            continue
        want = m.infer(feeds)
        with np.load(out / sample.name) as got:
            for k, v in want.items():
                np.testing.assert_array_equal(got[k], v)
        n += 1
    return n


def test_local_cluster_batch_matches_infer_and_records_everything(tmp_path):
    xml = _model(tmp_path)
    inputs = _samples(tmp_path, 20)
    (inputs / "corrupt.npz").write_bytes(b"not an npz at all")
    out = tmp_path / "out"
    proc = _batch(xml, inputs, "--out", out, "--workers", "2", "--json", tmp_path / "summary.json")
    assert proc.returncode == 1, proc.stderr  # one sample failed
    assert "1 of 21 samples failed" in proc.stderr
    assert _check_outputs(xml, inputs, out) == 20
    records = _manifest(out)
    assert len(records) == 21
    bad = [r for r in records if r["status"] == "failed"]
    assert len(bad) == 1 and bad[0]["error"] == "InputError" and bad[0]["input"].endswith("corrupt.npz")
    assert not list(out.glob(".*tmp"))  # no temporary files left
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["ok"] == 20 and summary["failed"] == 1 and summary["samples"] == 21


def test_resume_redoes_only_missing_and_damaged_outputs(tmp_path):
    xml = _model(tmp_path)
    inputs = _samples(tmp_path, 8)
    out = tmp_path / "out"
    assert _batch(xml, inputs, "--out", out, "--workers", "1").returncode == 0
    (out / "s001.npz").unlink()
    data = (out / "s002.npz").read_bytes()
    (out / "s002.npz").write_bytes(data[: len(data) // 2])  # as a crash mid-write would (without the rename)
    (out / "manifest.jsonl").unlink()
    proc = _batch(xml, inputs, "--out", out, "--workers", "1", "--resume")
    assert proc.returncode == 0, proc.stderr
    status = {Path(r["input"]).stem: r["status"] for r in _manifest(out)}
    assert status.pop("s001") == "ok" and status.pop("s002") == "ok"
    assert set(status.values()) == {"skipped"}
    assert _check_outputs(xml, inputs, out) == 8


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Cluster:
    """`dask scheduler` and `dask worker` programs as separate process groups on 127.0.0.1."""

    def __init__(self, tmp_path, workers=2):
        self.port = _free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.procs = []
        env = dict(os.environ, DASK_DISTRIBUTED__WORKER__DAEMON="False")
        self.procs.append(self._start(["dask", "scheduler", "--host", "127.0.0.1", "--port", str(self.port),
                                       "--no-dashboard"], env, tmp_path / "scheduler.log"))
        self.workers = []
        for i in range(workers):
            p = self._start(["dask", "worker", self.address, "--nthreads", "1", "--no-nanny", "--no-dashboard",
                             "--host", "127.0.0.1"], env, tmp_path / f"worker{i}.log")
            self.workers.append(p)
            self.procs.append(p)
        self._wait_for(workers)

    def _start(self, cmd, env, log):
        return subprocess.Popen([sys.executable, "-m", "distributed.cli." + ("dask_scheduler" if cmd[1] == "scheduler"
                                 else "dask_worker"), *cmd[2:]], env=env, stdout=open(log, "w"),
                                stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT)

    def _wait_for(self, n):
        from distributed import Client

        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                with Client(self.address, timeout=5) as c:
                    if len(c.scheduler_info()["workers"]) >= n:
                        return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError("the dask cluster did not come up")

    def close(self):
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(timeout=30)


@pytest.fixture
def cluster(tmp_path):
    c = _Cluster(tmp_path)
    try:
        yield c
    finally:
        c.close()


def test_external_scheduler_and_workers(tmp_path, cluster):
    xml = _model(tmp_path)
    inputs = _samples(tmp_path, 12)
    out = tmp_path / "out"
    proc = _batch(xml, inputs, "--out", out, "--scheduler", cluster.address)
    assert proc.returncode == 0, proc.stderr
    assert _check_outputs(xml, inputs, out) == 12
    workers = {r["worker"] for r in _manifest(out)}
    assert workers and all(w.startswith("tcp://127.0.0.1:") for w in workers)


def test_a_worker_killed_mid_batch_loses_nothing(tmp_path, cluster):
    xml = _model(tmp_path, width=1 << 16)
    inputs = _samples(tmp_path, 60, width=1 << 16)
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "irexec", "batch", str(xml), str(inputs), "--out", str(out),
                             "--scheduler", cluster.address, "--shared-storage"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and len(list(out.glob("s*.npz"))) < 5:
            time.sleep(0.05)
        os.killpg(cluster.workers[0].pid, signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    assert _check_outputs(xml, inputs, out) == 60
    records = _manifest(out)
    assert sorted(Path(r["input"]).stem for r in records) == [f"s{i:03d}" for i in range(60)]


def test_dask_array_api(tmp_path):
    import dask
    import dask.array as da

    import irexec.dask as ixd

    xml = _model(tmp_path)
    n = Net("rows")
    x = n.param("x", "f32", (None, 8))
    n.result(n.op("ReduceMean", [n.op("Exp", [x], out_dims=[-1, 8]), n.const(np.array([1], np.int64))],
                  {"keep_dims": "false"}, out_dims=[-1]), "m")
    rows = n.save(tmp_path / "rows.xml")
    data = np.random.default_rng(0).random((30, 8), dtype=np.float32)
    arr = da.from_array(data, chunks=(10, 8))
    out = ixd.infer(rows, {"x": arr}, batch_axis=0)
    assert isinstance(out["m"], da.Array) and out["m"].shape == (30,)
    with dask.config.set(scheduler="threads"):
        got = out["m"].compute()
    np.testing.assert_array_equal(got, irexec.load(rows).infer({"x": data})["m"])
    del xml
