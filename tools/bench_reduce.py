"""Reduction throughput and accuracy: irexec vs numpy vs OpenVINO CPU vs a streaming-read limit.

One process, interleaved rounds (every contender once per round, in rotating order, 50 ms apart
so no one's spinning threads are charged to the next), medians.
Data is 1000 + U[0, 1) float32 (the case where float32 accumulators lose digits). For each axes
pattern: GB/s of input read, the ratio to the streaming limit and to OpenVINO, and the maximum
relative error against a float64 reference. Then per-call latency on the small samples and the
wall time of a fresh `irexec run` process against the equivalent OpenVINO script.

    python3 -m tools.bench_reduce                   # full table, (64,256,64,64)
    python3 -m tools.bench_reduce --shape 16,256,64,64 --rounds 5
    python3 -m tools.bench_reduce --defaults --skip f16,small,startup

By default irexec runs its kernels, loaded before timing (the steady state). `--defaults`
measures what a user gets instead: each pattern is a one-layer IR (written by OpenVINO's
`save_model`), `irexec.load` with no settings and no environment overrides, two `infer` calls,
then timed `infer` calls (with a warm kernel cache, the kernels serve from the second call).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from irexec import config
from irexec.kernels import jit
from irexec.kernels.reduce.plan import reduce_array

ROOT = Path(__file__).resolve().parents[1]


# between contenders: OpenVINO's TBB workers and numba's OpenMP threads (the limit) spin for a
# while after a call (OpenMP about 5.5 ms, measured); without a pause they take a core from
# whoever runs next. 20 ms, as tools/bench_models.py: after 50 ms idle this machine's second
# core often wakes late, so that a two-thread call reads at one thread's speed (a 256 MiB
# ReduceMean over (2, 3) by the kernels, medians of 9: 32-34 GB/s 1-20 ms apart, 18 GB/s
# 50 ms apart; the streaming limit likewise fell to 18-21 GB/s)
PAUSE = 0.02
PATTERNS = [(0, 1, 2, 3), (2, 3), (3,), (1,), (0,), (0, 2), (1, 3)]


def streaming_limit():
    """A 2-thread read of every element (float32 lanes): what memory allows."""
    import numba as nb

    @nb.njit(parallel=True, fastmath={"reassoc", "nsz", "contract", "arcp"}, cache=True)
    def read_all(x, parts):
        n = x.size
        chunk = (n + parts - 1) // parts
        out = np.zeros(parts)
        for t in nb.prange(parts):
            y = x[t * chunk : min(n, (t + 1) * chunk)]
            s = np.float32(0)
            for i in range(y.size):
                s += y[i]
            out[t] = s
        return out.sum()

    return lambda x: read_all(x.reshape(-1), 2 * nb.get_num_threads())


def _ov_model(shape, axes):
    import openvino as ov
    import openvino.opset13 as ops

    p = ops.parameter(list(shape), np.float32, name="x")
    r = ops.reduce_mean(p, ops.constant(np.array(axes, np.int64)), keep_dims=False)
    return ov.Model([r], [p])


def irexec_defaults(shape, axes):
    """Model.infer on the one-layer IR, loaded with the defaults, after two calls (None without
    OpenVINO to write the IR)."""
    try:
        import openvino as ov
    except ImportError:
        return None
    import irexec

    path = Path(tempfile.mkdtemp()) / "reduce.xml"
    ov.save_model(_ov_model(shape, axes), str(path), compress_to_fp16=False)
    model = irexec.load(path)

    def run(x):
        return model.infer({"x": x})[0]

    return run


def openvino_reducer(shape, axes):
    try:
        import openvino as ov
    except ImportError:
        return None
    compiled = ov.Core().compile_model(_ov_model(shape, axes), "CPU")
    request = compiled.create_infer_request()

    def run(x):
        request.set_input_tensor(ov.Tensor(x, shared_memory=True))
        request.infer()
        return request.get_output_tensor().data

    return run


def timed(fn, x):
    t = time.perf_counter()
    out = fn(x)
    return time.perf_counter() - t, out


def rel_err(got, ref):
    got = np.asarray(got, np.float64)
    return float(np.max(np.abs(got - ref) / np.maximum(np.abs(ref), 1e-300)))


def bench_patterns(shape, rounds, defaults=False):
    rng = np.random.default_rng(0)
    x = (1000.0 + rng.random(shape, dtype=np.float32)).astype(np.float32)
    gb = x.nbytes / 1e9
    limit = streaming_limit()
    limit(x)
    print(f"input {shape} float32, {x.nbytes / 2**20:.0f} MiB; {rounds} interleaved rounds, medians")
    header = (
        f"{'axes':<14}{'limit':>8}{'irexec':>8}{'numpy':>8}{'OV CPU':>8}  {'irx/lim':>7}{'irx/OV':>7}  "
        f"{'err irexec':>10}{'err numpy':>10}{'err OV':>10}{'irx exact':>10}"
    )
    print(header)
    print("-" * len(header))
    ratios_ov, rows = [], []
    for axes in PATTERNS:
        contenders = {
            "limit": limit,
            "irexec": lambda a, axes=axes: reduce_array(a, axes, "mean", False, "f32"),
            "numpy": lambda a, axes=axes: a.mean(axis=axes),
        }
        if defaults:
            contenders["irexec"] = irexec_defaults(shape, axes)
            contenders["irexec"](x)  # the first of the defaults' two calls (the second: the warm-up below)
        ov_fn = openvino_reducer(shape, axes)
        if ov_fn is not None:
            contenders["OV CPU"] = ov_fn
        ref = x.astype(np.float64).mean(axis=axes)
        errs, times = {}, {k: [] for k in contenders}
        for name, fn in contenders.items():  # warm-up (and compile) outside the timing
            _, out = timed(fn, x)
            if name != "limit":
                errs[name] = rel_err(out, ref)
            if name == "irexec":
                # the share of outputs that are the float64 mean correctly rounded to float32:
                # a float32 result can be no closer (half an ulp is 3e-8 here)
                exact = float(np.mean(np.asarray(out) == ref.astype(np.float32)))
        names = list(contenders)
        for r in range(rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                time.sleep(PAUSE)
                times[name].append(timed(contenders[name], x)[0])
        speed = {k: gb / statistics.median(v) for k, v in times.items()}
        ov_speed = speed.get("OV CPU", math.nan)
        if ov_fn is not None:
            ratios_ov.append(speed["irexec"] / ov_speed)
        row = (
            f"{str(axes):<14}{speed['limit']:>8.1f}{speed['irexec']:>8.1f}{speed['numpy']:>8.1f}{ov_speed:>8.1f}  "
            f"{speed['irexec'] / speed['limit']:>7.2f}{speed['irexec'] / ov_speed:>7.2f}  "
            f"{errs['irexec']:>10.1e}{errs['numpy']:>10.1e}{errs.get('OV CPU', math.nan):>10.1e}{exact:>10.1%}"
        )
        rows.append(row)
        print(row, flush=True)
    if ratios_ov:
        geo = math.exp(sum(math.log(r) for r in ratios_ov) / len(ratios_ov))
        print(f"geometric mean irexec / OpenVINO CPU over {len(ratios_ov)} patterns: {geo:.2f}x")
    print("(speeds in GB/s of input read)")


def bench_f16_sum():
    """A float16 sum of 64M values. The values are U[0, 2^-12) so that the sum (about 8192)
    fits float16 (max 65504); a float16 accumulator would stall at 2^-12 * 2048 = 0.5.
    Reported: the float64 accumulator's error against the exact sum of the float16 values, and
    whether the float16 result is the exact sum correctly rounded (the best any kernel can do)."""
    from irexec.kernels.reduce.plan import accumulate

    n = 64 * 2**20
    x = (np.random.default_rng(1).random(n, dtype=np.float32) * 2.0**-12).astype(np.float16)
    exact = float(np.sum(x, dtype=np.float64))  # float16 values and their sums are exact in float64
    reduce_array(x, (0,), "sum", False, "f16")
    times = []
    for _ in range(5):
        t, got = timed(lambda a: reduce_array(a, (0,), "sum", False, "f16"), x)
        times.append(t)
    acc = float(accumulate(x, (0,), 0, 0)[0][0])
    t = statistics.median(times)
    print(
        f"\nfloat16 sum of 64M values in [0, 2^-12): {float(got):.6g} (exact {exact:.10g}); finite: "
        f"{bool(np.isfinite(got))}; accumulator rel err {abs(acc - exact) / exact:.1e}; "
        f"correctly rounded: {got == np.float16(exact)}; {x.nbytes / t / 1e9:.1f} GB/s"
    )


def bench_small(rounds):
    import irexec

    samples = sorted((ROOT / "samples").glob("*.xml"))
    try:
        import openvino as ov

        core = ov.Core()
    except ImportError:
        core = None
    print(f"\nper-call latency of small samples (median of {rounds * 20} calls, microseconds)")
    print(f"{'sample':<36}{'irexec':>10}{'OV infer':>10}{'ratio':>8}")
    for path in samples:
        model = irexec.load(path)
        rng = np.random.default_rng(0)
        feeds = {}
        for info in model.inputs:
            shape = tuple(1 if d is None else d for d in (info.shape or ()))
            if info.dtype.kind in "iu":
                feeds[info.name] = (
                    np.arange(len(shape) and shape[0], dtype=info.dtype).reshape(shape)
                    if shape
                    else np.zeros((), info.dtype)
                )
            else:
                feeds[info.name] = rng.random(shape).astype(info.dtype)
        try:
            model.infer(feeds)
        except irexec.IRExecError as e:
            print(f"{path.name:<36} skipped: {e}")
            continue
        runners = {"irexec": lambda model=model, feeds=feeds: model.infer(feeds)}
        if core is not None:
            try:
                compiled = core.compile_model(core.read_model(str(path)), "CPU")
                req = compiled.create_infer_request()
                ov_feeds = list(feeds.values())
                req.infer(ov_feeds)
                runners["OV"] = lambda req=req, ov_feeds=ov_feeds: req.infer(ov_feeds)
            except Exception as e:  # OpenVINO refuses some samples (e.g. version="onnx" layers)
                print(f"  (OpenVINO: {str(e).splitlines()[0][:80]})")
        times = {name: [] for name in runners}
        for _ in range(rounds):  # interleaved blocks of 20 calls
            for name, fn in runners.items():
                for _ in range(20):
                    t = time.perf_counter()
                    fn()
                    times[name].append(time.perf_counter() - t)
        t_irx = times["irexec"]
        t_ov = statistics.median(times["OV"]) if "OV" in times else math.nan
        med = statistics.median(t_irx)
        print(f"{path.name:<36}{med * 1e6:>10.1f}{t_ov * 1e6:>10.1f}{med / t_ov:>8.2f}")


OV_SCRIPT = """
import numpy as np, openvino as ov
core = ov.Core()
c = core.compile_model(core.read_model({path!r}), "CPU")
r = c.create_infer_request()
r.infer([np.random.default_rng(0).random(tuple(p.get_partial_shape().to_shape())).astype(np.float32) for p in c.inputs])
print(r.get_output_tensor(0).data.shape)
"""


def bench_startup(rounds):
    sample = ROOT / "samples" / "reduce_mean_axes23_keepdims.xml"
    if not sample.exists():
        return
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmds = {"irexec run": [sys.executable, "-m", "irexec", "run", str(sample)]}
    try:
        import openvino  # noqa: F401

        script = Path(tempfile.mkdtemp()) / "ov_run.py"
        script.write_text(OV_SCRIPT.format(path=str(sample)))
        cmds["OpenVINO script"] = [sys.executable, str(script)]
    except ImportError:
        pass
    times = {k: [] for k in cmds}
    for _ in range(rounds):
        for name, cmd in cmds.items():
            t = time.perf_counter()
            subprocess.run(cmd, env=env, check=True, capture_output=True)
            times[name].append(time.perf_counter() - t)
    print(f"\nfresh process on {sample.name} (median of {rounds})")
    for name, ts in times.items():
        print(f"  {name:<18}{statistics.median(ts) * 1e3:>8.0f} ms")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="64,256,64,64")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--skip", default="", help="comma list of parts to skip: patterns,f16,small,startup")
    ap.add_argument("--defaults", action="store_true", help="irexec as loaded with no settings (see above)")
    args = ap.parse_args()
    skip = set(args.skip.split(","))
    if not args.defaults:
        config.JIT = "always"  # steady state: the kernels, loaded before timing
        jit.load(full=True)
    if "patterns" not in skip:
        bench_patterns(tuple(int(s) for s in args.shape.split(",")), args.rounds, args.defaults)
    if "f16" not in skip:
        bench_f16_sum()
    if "small" not in skip:
        bench_small(args.rounds)
    if "startup" not in skip:
        bench_startup(args.rounds)


if __name__ == "__main__":
    main()
