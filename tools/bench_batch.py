"""Batch throughput on this machine: `irexec batch` with 2 local worker processes against a
serial loop of `Model.infer` in one process, over the same folder of samples, on a model whose
inference dominates the .npz I/O (MVN and Softmax, six times, over (64, 4096) float32 per sample:
numpy float64 paths, one core each). The cluster's start-up (2-4 s here) is included. Three interleaved repeats, medians.

    python3 tools/bench_batch.py [--samples 64] [--repeats 3]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from irbuild import Net  # noqa: E402

import irexec  # noqa: E402

SHAPE = (64, 4096)


def model(d: Path) -> Path:
    n = Net("heavy")
    x = n.param("x", "f32", SHAPE)
    axes = n.const(np.array([-1], np.int64))
    v = n.op("MVN", [x, axes], {"normalize_variance": "true", "eps": "1e-5", "eps_mode": "inside_sqrt"},
             version="opset6", out_dims=list(SHAPE))
    for _ in range(6):
        v = n.op("Softmax", [v], {"axis": "1"}, version="opset8", out_dims=list(SHAPE))
        v = n.op("MVN", [v, axes], {"normalize_variance": "true", "eps": "1e-5", "eps_mode": "inside_sqrt"},
                 version="opset6", out_dims=list(SHAPE))
    n.result(n.op("ReduceSum", [v, axes], {"keep_dims": "false"}, out_dims=[SHAPE[0]]), "y")
    return n.save(d / "heavy.xml")


def serial(xml: Path, samples: list[Path], out: Path) -> float:
    from irexec.cli import write_outputs

    t = time.perf_counter()
    m = irexec.load(xml)
    for s in samples:
        with np.load(s) as z:
            write_outputs(str(out / s.name), m.infer(dict(z)))
    return time.perf_counter() - t


def batch(xml: Path, folder: Path, out: Path, workers: int) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "irexec", "batch", str(xml), str(folder), "--out", str(out), "--workers",
                    str(workers)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env={"IREXEC_JIT": "never", **__import__("os").environ})
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    from irexec import config

    config.JIT = "never"  # the numpy paths: one core per process
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
        ser, par = [], []
        for r in range(args.repeats):
            o1, o2 = d / f"serial{r}", d / f"batch{r}"
            o1.mkdir()
            ser.append(serial(xml, samples, o1))
            par.append(batch(xml, folder, o2, 2))
        s, p = float(np.median(ser)), float(np.median(par))
        print(f"{args.samples} samples of {SHAPE} float32, MVN/Softmax model, {args.repeats} repeats (medians):")
        print(f"  serial Model.infer loop, 1 process : {s:6.2f} s  {args.samples / s:6.1f} samples/s")
        print(f"  irexec batch, 2 local workers      : {p:6.2f} s  {args.samples / p:6.1f} samples/s "
              f"(cluster start-up included)")
        print(f"  speed-up {s / p:.2f}x (goal >= 1.5)")


if __name__ == "__main__":
    main()
