"""Batch throughput on this machine: `irexec batch` with N local worker processes (default 2)
against a serial loop of `Model.infer` in one process, over the same folder of samples.

The model makes inference dominate the .npz I/O: MVN, then six rounds of Softmax and MVN, then a
ReduceSum, over (64, 1024) float32 per sample (about 30 ms a sample here; 256 KiB of input, 256 B
of output). IREXEC_JIT=never everywhere: the numpy paths, one core per process, so a single
process really is serial and the batch's gain is its worker processes. The serial loop does the
batch's work: np.load each sample, infer, write its outputs with cli.common.write_outputs.

The batch is timed end to end (a new `irexec batch` process: Python and irexec start-up, model
load, the LocalCluster's start and shutdown included) and from its --json summary: the cluster's
start-up and the processing (first task submitted to last result). Repeats are interleaved
(serial, batch, serial, batch, ...); the table gives medians. Prints a Markdown table.

    python3 -m tools.bench_batch [--samples 768] [--repeats 3] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import irexec
from tests.support.irbuild import Net

ROOT = Path(__file__).resolve().parents[1]

SHAPE = (64, 1024)
ROUNDS = 6


def model(d: Path) -> Path:
    n = Net("heavy")
    x = n.param("x", "f32", SHAPE)
    axes = n.const(np.array([-1], np.int64))
    mvn = {"normalize_variance": "true", "eps": "1e-5", "eps_mode": "inside_sqrt"}
    v = n.op("MVN", [x, axes], mvn, version="opset6", out_dims=list(SHAPE))
    for _ in range(ROUNDS):
        v = n.op("Softmax", [v], {"axis": "1"}, version="opset8", out_dims=list(SHAPE))
        v = n.op("MVN", [v, axes], mvn, version="opset6", out_dims=list(SHAPE))
    n.result(n.op("ReduceSum", [v, axes], {"keep_dims": "false"}, out_dims=[SHAPE[0]]), "y")
    return n.save(d / "heavy.xml")


def serial(xml: Path, samples: list[Path], out: Path) -> float:
    from irexec.cli.common import write_outputs

    t = time.perf_counter()
    m = irexec.load(xml)
    for s in samples:
        with np.load(s) as z:
            write_outputs(str(out / s.name), m.infer(dict(z)))
    return time.perf_counter() - t


def batch(xml: Path, folder: Path, out: Path, workers: int) -> tuple[float, dict]:
    env = dict(os.environ, IREXEC_JIT="never")
    report = out.with_suffix(".json")
    t = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "irexec",
            "batch",
            str(xml),
            str(folder),
            "--out",
            str(out),
            "--workers",
            str(workers),
            "--json",
            str(report),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
    )
    wall = time.perf_counter() - t
    return wall, json.loads(report.read_text())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=768)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    from irexec import config

    config.JIT = "never"  # the numpy paths: one core per process
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        xml = model(d)
        folder = d / "in"
        folder.mkdir()
        samples = []
        for i in range(args.samples):
            p = folder / f"s{i:04d}.npz"
            np.savez(p, x=np.random.default_rng(i).standard_normal(SHAPE).astype(np.float32))
            samples.append(p)
        m = irexec.load(xml)
        x = {"x": np.load(samples[0])["x"]}
        m.infer(x)
        t = time.perf_counter()
        for _ in range(20):
            m.infer(x)
        per_sample = (time.perf_counter() - t) / 20
        ser, wall, start, proc = [], [], [], []
        for r in range(args.repeats):
            o1, o2 = d / f"serial{r}", d / f"batch{r}"
            o1.mkdir()
            ser.append(serial(xml, samples, o1))
            w, summary = batch(xml, folder, o2, args.workers)
            assert summary["ok"] == args.samples, summary
            wall.append(w)
            start.append(summary["cluster_start_seconds"])
            proc.append(summary["processing_seconds"])
            print(
                f"repeat {r + 1}: serial {ser[-1]:.2f} s, batch {w:.2f} s end to end "
                f"(cluster start {start[-1]:.2f} s, processing {proc[-1]:.2f} s)",
                file=sys.stderr,
            )
    s, w, st, p = (float(np.median(v)) for v in (ser, wall, start, proc))
    n = args.samples
    print(
        f"{n} samples of {SHAPE} float32 (MVN + {ROUNDS} x Softmax/MVN + ReduceSum, {per_sample * 1e3:.0f} ms "
        f"a sample in one process), {os.cpu_count()} cores, {platform.python_version()}, load average "
        f"{load_before:.2f} at the start; medians of {args.repeats} interleaved repeats"
    )
    print()
    print("| run | seconds | samples/s | vs serial |")
    print("|---|---:|---:|---:|")
    print(f"| serial loop of `Model.infer`, 1 process | {s:.2f} | {n / s:.1f} | 1.00x |")
    print(
        f"| `irexec batch --workers {args.workers}`, end to end (process, model load, cluster start and "
        f"stop) | {w:.2f} | {n / w:.1f} | {s / w:.2f}x |"
    )
    print(
        f"| `irexec batch --workers {args.workers}`, processing only (cluster start {st:.2f} s apart) "
        f"| {p:.2f} | {n / p:.1f} | {s / p:.2f}x |"
    )
    print()
    print(f"goal: >= 1.5x end to end: {'met' if s / w >= 1.5 else 'NOT met'} ({s / w:.2f}x)")


if __name__ == "__main__":
    main()
