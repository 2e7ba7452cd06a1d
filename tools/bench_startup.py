"""Start-up and contention benchmarks (issue: kernels that start fast and hold up under load).

1. Cold start: a fresh `irexec run` of four ReduceMean layers on a (64,64,64) float32 input with
   an EMPTY kernel cache, against a fresh Python process that reads, compiles and infers the same
   file with OpenVINO (when installed). Interleaved rounds, medians, ratio. Both with Python's
   bytecode written (as installed packages have it; see `cold_start`).
2. Contention: ReduceSum over axis 0 of a (1024,1024) float32 tensor while two other processes
   keep both cores busy: p50/p90 latency of irexec `Model.infer` (kernels loaded; with
   `--defaults`, loaded with no settings and two calls first, as a user gets it), numpy's
   single-threaded sum, and OpenVINO's infer; ratios against numpy's p90.

    python3 -m tools.bench_startup [--rounds 11] [--calls 2000] [--skip cold,contended] [--defaults]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from tests.support.irbuild import Net

ROOT = Path(__file__).resolve().parents[1]

OV_SCRIPT = """
import sys, numpy as np, openvino as ov
core = ov.Core()
m = core.compile_model(core.read_model(sys.argv[1]), "CPU")
m([np.random.default_rng(0).random((64, 64, 64), dtype=np.float32)])
"""


def four_means(d: Path) -> Path:
    n = Net("four_means")
    x = n.param("x", "f32", (64, 64, 64))
    for i, axes in enumerate(([0], [1], [2], [1, 2])):
        r = n.op(
            "ReduceMean",
            [x, n.const(np.array(axes, np.int64))],
            {"keep_dims": "false"},
            out_dims=[64] * (3 - len(axes)),
        )
        n.result(r, f"m{i}")
    return n.save(d / "four_means.xml")


def sum0(d: Path) -> Path:
    n = Net("sum0")
    x = n.param("x", "f32", (1024, 1024))
    n.result(n.op("ReduceSum", [x, n.const(np.array([0], np.int64))], {"keep_dims": "false"}, out_dims=[1024]), "y")
    return n.save(d / "sum0.xml")


def _wall(cmd, env) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t


def cold_start(d: Path, rounds: int) -> None:
    xml = four_means(d)
    have_ov = subprocess.run([sys.executable, "-c", "import openvino"], capture_output=True).returncode == 0
    irx, ov = [], []
    # Python's bytecode as an installed package has it (pip compiles it; an editable checkout
    # writes it on its first import): a process that may not write it (PYTHONDONTWRITEBYTECODE,
    # set on some machines) recompiles irexec's 100-odd modules on every start (+0.17 s), while
    # OpenVINO's installed package has its bytecode
    base = dict(os.environ)
    base.pop("PYTHONDONTWRITEBYTECODE", None)
    _wall([sys.executable, "-m", "irexec", "run", str(xml)], dict(base, IREXEC_CACHE_DIR=str(d / "bytecode")))
    for i in range(rounds):
        env = dict(base, IREXEC_CACHE_DIR=str(d / f"empty-{i}"))
        env.pop("NUMBA_CACHE_DIR", None)
        irx.append(_wall([sys.executable, "-m", "irexec", "run", str(xml)], env))
        if have_ov:
            ov.append(_wall([sys.executable, "-c", OV_SCRIPT, str(xml)], dict(os.environ, CI="true")))
    print(f"cold start, four ReduceMean on (64,64,64) f32, empty kernel cache, {rounds} interleaved rounds:")
    print(
        f"  irexec run            median {np.median(irx) * 1e3:7.0f} ms  (min {min(irx) * 1e3:.0f}, max {max(irx) * 1e3:.0f})"
    )
    if ov:
        print(
            f"  OpenVINO cold script  median {np.median(ov) * 1e3:7.0f} ms  (min {min(ov) * 1e3:.0f}, max {max(ov) * 1e3:.0f})"
        )
        ratios = [a / b for a, b in zip(irx, ov)]
        print(f"  ratio irexec/OpenVINO median {np.median(ratios):.2f} (target <= 1.5)")


def _latencies(fn, calls: int) -> np.ndarray:
    out = np.empty(calls)
    for i in range(calls):
        t = time.perf_counter()
        fn()
        out[i] = time.perf_counter() - t
    return out


def contended(d: Path, calls: int, defaults: bool = False) -> None:
    import irexec
    from irexec import config
    from irexec.kernels import jit

    if not defaults:
        config.JIT = "always"
        jit.load(full=True)
    xml = sum0(d)
    m = irexec.load(xml)
    x = np.random.default_rng(0).random((1024, 1024), dtype=np.float32)
    m.infer({"x": x})  # the defaults' two calls: from the second, a warm cache's kernels serve
    m.infer({"x": x})
    runs = {
        "irexec infer": lambda: m.infer({"x": x}),
        "numpy sum": lambda: x.sum(axis=0),
    }
    try:
        import openvino as ov

        core = ov.Core()
        req = core.compile_model(core.read_model(str(xml)), "CPU").create_infer_request()
        runs["OpenVINO infer"] = lambda: req.infer([x])
    except ImportError:
        pass
    for fn in runs.values():
        _latencies(fn, 50)
    for label, load in (("quiet", 0), ("two busy processes", 2)):
        busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(load)]
        try:
            time.sleep(0.5)
            res = {name: [] for name in runs}
            for _ in range(5):  # interleaved blocks, 50 ms apart: OpenVINO's TBB workers spin
                for name, fn in runs.items():  # after its calls and would be charged to the next block
                    time.sleep(0.05)
                    res[name].append(_latencies(fn, calls // 5))
        finally:
            for p in busy:
                p.kill()
                p.wait()
        np90 = np.percentile(np.concatenate(res["numpy sum"]), 90)
        mode = "defaults" if defaults else "kernels loaded"
        print(f"ReduceSum axis 0 of (1024,1024) f32, {label}, irexec {mode}, {calls} calls each:")
        for name, blocks in res.items():
            t = np.concatenate(blocks)
            p50, p90 = np.percentile(t, 50), np.percentile(t, 90)
            print(f"  {name:<16} p50 {p50 * 1e3:7.3f} ms  p90 {p90 * 1e3:7.3f} ms  p90/numpy p90 {p90 / np90:5.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--skip", default="")
    ap.add_argument("--defaults", action="store_true", help="irexec as loaded with no settings")
    args = ap.parse_args()
    skip = set(args.skip.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        if "cold" not in skip:
            cold_start(d, args.rounds)
        if "contended" not in skip:
            contended(d, args.calls, args.defaults)


if __name__ == "__main__":
    main()
