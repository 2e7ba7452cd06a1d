"""Whole-model and per-op speed against OpenVINO CPU (issue: real networks at OpenVINO's speed).

    python3 -m tools.bench_models [--rounds 7] [--skip models,onnxruntime,ops,overhead,memory] [--ops fake,pool]
        [--models resnet18,bert] [--sizes tiny,real] [--pause 20]

- models: every tests/zoo model at its test inputs and at real sizes (224x224 images; 64, 128
  and 512 tokens; Whisper's encoder on 30 s of features; wav2vec2 on 1 s of audio; a size the
  tiny model cannot take is reported as skipped, with OpenVINO's or irexec's reason), each model
  and size in fresh processes, in two columns: the defaults (`irexec.load`, two calls, then
  timed: a warm cache serves the kernels from the second call) and the kernels loaded
  (`jit="eager"`), each against OpenVINO CPU (INFERENCE_PRECISION_HINT f32, reshaped to the same
  inputs) in the same process: interleaved rounds, median latency, the median of the rounds'
  irexec/OpenVINO ratios, geometric means by size (`--models`, `--sizes tiny|real`). The
  contenders run `--pause` ms apart (default 20; OpenVINO's workers spin about 1 ms after a
  call: 1.0 ms of CPU in the 1, 2, 5 or 20 ms after one), and OpenVINO's block waits longer
  while OpenBLAS's workers still spin after a product irexec ran on them (about 120 ms, on an
  idle machine, with the opt-in `IREXEC_BLAS_QUIET_FLOPS`), as they took a core from its calls. The pause sets
  the regime measured:
  with this machine's cores idle 20 ms between rounds both sides run slower than back to back
  (its guest cpuidle driver is haltpoll), and OpenVINO more so on most models (the zoo at real
  sizes: irexec/OpenVINO geometric mean 1.92 at 20 ms, 2.13 at 5 ms; wav2vec2 the exception,
  its attention's two threads handing the GIL back and forth: 7.7 ms at 5 ms, 11.5 at 20).
- onnxruntime: where it is installed (optional) and the model has an ONNX form
  (tests/zoo/NAME.onnx, kept by tools/make_zoo.py), onnxruntime's CPUExecutionProvider against
  irexec with its kernels loaded.
- ops: the reduction family at real sizes (Softmax, LogSoftmax, MVN, GroupNormalization,
  MaxPool/AvgPool 3x3 stride 2 and global, SDPA, ReduceMean over spatial axes) and a per-channel
  FakeQuantize (`--ops fake` runs only the rows whose label says so), one-op graphs
  built with OpenVINO's opset API; GB/s of input read, against OpenVINO and a streaming-read of
  the same bytes (numpy's sum of the input viewed as int64: the memory limit of one thread).
- overhead: the run loop's cost per layer on the 325-layer LLaMA of the zoo (the plain run over
  every layer, no remembered shape values or fused steps, minus the layers' own compute time from
  `Model.profile`) and on a 300-layer elementwise chain; then `Model.infer` on LLaMA as it runs.
- memory: peak resident memory of a fresh `irexec run` process against a fresh OpenVINO
  read-compile-infer process, per zoo model.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import irexec

ROOT = Path(__file__).resolve().parents[1]

ZOO = ROOT / "tests" / "zoo"


def _median_time(fn, reps):
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


def _zoo_inputs(name):
    with np.load(ZOO / f"{name}.npz") as z:
        return {k[3:]: z[k] for k in z.files if k.startswith("in:")}


def _ort_session(xml: Path, feeds: dict):
    """onnxruntime's CPU session on the model's ONNX form and its feeds, or None (no .onnx file, or
    no onnxruntime: it is optional). The stored inputs are named as in the IR; an ONNX input of
    another name takes the stored input at its position."""
    path = xml.with_suffix(".onnx")
    if not path.exists():
        return None
    try:
        import onnxruntime
    except ImportError:
        return None
    sess = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    stored = list(feeds)
    ort_feeds = {
        i.name: feeds[i.name] if i.name in feeds else feeds[stored[k]] for k, i in enumerate(sess.get_inputs())
    }
    return sess, ort_feeds


# the sizes people run the zoo's architectures at (the zoo's models are tiny-width, the sizes
# real): images 224x224, text 128 and 512 tokens, Whisper's encoder on 30 s of features (3000
# frames), wav2vec2 on 1 s of 16 kHz audio
IMAGE = 224
# past a model's position table (the zoo's GPT-2 holds 64) Gather-8 gives zeros, in irexec as in
# OpenVINO: the same work as a longer table
TOKENS = (64, 128, 512)
WHISPER_FRAMES = 3000
AUDIO_SAMPLES = 16000


def _tiled(v: np.ndarray, length: int) -> np.ndarray:
    """v (batch, n) grown to (batch, length) by repeating its values (token ids stay in range)."""
    return np.resize(v, (v.shape[0], length)).astype(v.dtype)


def _padding_mask(v: np.ndarray, length: int) -> np.ndarray:
    """An attention mask (batch, n) of 0/1 grown to (batch, length) as a padded sequence's is:
    its share of ones as a prefix, zeros after (repeating BERT's [1,1,1,1,1,1,0,0] made a hole
    every 8 tokens, which no tokenizer gives)."""
    keep = round(float(np.mean(v != 0)) * length)
    return (np.arange(length) < keep).astype(v.dtype)[None].repeat(v.shape[0], axis=0)


def _real_feeds(name: str, feeds: dict) -> dict[str, dict]:
    """{size label: feeds} at real sizes for the model's dynamic inputs ({} when it has none)."""
    m = irexec.load(ZOO / f"{name}.xml")
    dynamic = {i.name: i.shape for i in m.inputs if i.shape is None or None in i.shape}
    if not dynamic:
        return {}
    shapes = {i.name: i.shape for i in m.inputs}
    first = shapes[next(iter(shapes))]
    rng = np.random.default_rng(0)
    if len(first) == 4 and first[1] == 3:  # images
        return {
            f"{IMAGE}x{IMAGE}": {"x": rng.standard_normal((1, 3, IMAGE, IMAGE)).astype(np.float32)}
            | {k: v for k, v in feeds.items() if k not in dynamic}
        }
    if name == "whisper":
        f = feeds["input_features"]
        audio = rng.standard_normal((1, f.shape[1], WHISPER_FRAMES)).astype(np.float32)
        return {"30 s": {**feeds, "input_features": audio}}
    if name == "wav2vec2":
        return {"1 s": {"input_values": rng.standard_normal((1, AUDIO_SAMPLES)).astype(np.float32)}}
    if all(v.dtype == np.int64 and v.ndim == 2 for v in feeds.values()):  # token ids and masks

        def grown(k, v, n):
            if k not in dynamic or "decoder" in k:
                return v
            return _padding_mask(v, n) if "mask" in k else _tiled(v, n)

        return {f"{n} tok": {k: grown(k, v, n) for k, v in feeds.items()} for n in TOKENS}
    return {}


def _settle(pause: float) -> float:
    """The pause before OpenVINO's calls: `pause`, or as long as OpenBLAS's workers still spin
    after a product irexec ran on them (`jit.cores_busy_for`, on an idle machine), and 30 ms: a
    spinning worker took a core from OpenVINO's next calls (DenseNet-121 26.5 -> 51.8 ms)."""
    from irexec.kernels import jit

    busy = jit.cores_busy_for()
    return max(pause, busy + 0.03) if busy else pause


def _worker(name: str, size: str, mode: str, rounds: int, pause: float = 0.02) -> dict:
    """One model at one size in this fresh process: irexec by `mode` (defaults: load, two calls,
    then timed; eager: `jit="eager"`, kernels loaded) against OpenVINO CPU, interleaved rounds."""
    import openvino as ov

    xml = ZOO / f"{name}.xml"
    feeds = _zoo_inputs(name) if size == "tiny" else _real_feeds(name, _zoo_inputs(name))[size]
    m = irexec.load(xml, jit="eager" if mode == "eager" else "lazy")
    core = ov.Core()
    model = core.read_model(str(xml))
    model.reshape({k: ov.PartialShape(list(v.shape)) for k, v in feeds.items()})
    compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    req = compiled.create_infer_request()
    ov_feeds = {k: v for k, v in feeds.items()}
    for _ in range(2):  # the defaults' two calls: from the second, warm-cache kernels serve
        m.infer(feeds)
        req.infer(ov_feeds)
    reps = 5 if size == "tiny" else 2
    irx, ovt = [], []
    for _ in range(rounds):  # `pause` apart, each side's workers done spinning before the other runs
        time.sleep(pause)
        irx.append(_median_time(lambda: m.infer(feeds), reps))
        time.sleep(_settle(pause))
        ovt.append(_median_time(lambda: req.infer(ov_feeds), reps))
    # the ratio of each round's neighbouring measurements, then their median: the machine's
    # speed drifts by 2x over minutes here, both sides alike
    ratio = float(np.median(np.array(irx) / np.array(ovt)))
    return {"irexec_ms": float(np.median(irx)) * 1e3, "ov_ms": float(np.median(ovt)) * 1e3, "ratio": ratio}


def _run_worker(name: str, size: str, mode: str, rounds: int, pause: float) -> dict | str:
    cmd = [sys.executable, "-m", "tools.bench_models", "--worker", name, size, mode, "--rounds", str(rounds)]
    cmd += ["--pause", str(pause * 1e3)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode or not lines:
        err = (proc.stderr.strip().splitlines() or ["failed"])[-1]
        return err[:90]
    return json.loads(lines[-1])


def _geomean(xs) -> float:
    return math.exp(np.mean([math.log(x) for x in xs])) if xs else float("nan")


def bench_models(rounds: int, only: str = "", sizes: str = "tiny,real", pause: float = 0.02) -> None:
    """Every zoo model at its test size and at real sizes, each in fresh processes: the defaults
    and kernels-loaded columns, each against OpenVINO CPU measured in the same process."""
    wanted = [w for w in only.split(",") if w]
    print(f"{'model':<18} {'size':<9} {'OV ms':>9} {'default ms':>10} {'ratio':>6} {'eager ms':>9} {'ratio':>6}")
    ratios: dict[tuple[str, str], list[float]] = {}
    for xml in sorted(ZOO.glob("*.xml")):
        name = xml.stem
        if wanted and name not in wanted:
            continue
        try:
            labels = (["tiny"] if "tiny" in sizes else []) + (
                list(_real_feeds(name, _zoo_inputs(name))) if "real" in sizes else []
            )
        except irexec.UnsupportedOpError as e:  # a zoo model waiting for ops (tests/test_zoo.py's PENDING_OPS)
            print(f"{name}: skipped, {str(e).splitlines()[0][:100]}", flush=True)
            continue
        for size in labels:
            got = {mode: _run_worker(name, size, mode, rounds, pause) for mode in ("default", "eager")}
            if any(isinstance(g, str) for g in got.values()):
                why = next(g for g in got.values() if isinstance(g, str))
                print(f"{name:<18} {size:<9} skipped: {why}", flush=True)
                continue
            d, e = got["default"], got["eager"]
            kind = "tiny" if size == "tiny" else "real"
            ratios.setdefault((kind, "default"), []).append(d["ratio"])
            ratios.setdefault((kind, "eager"), []).append(e["ratio"])
            print(
                f"{name:<18} {size:<9} {d['ov_ms']:>9.3f} {d['irexec_ms']:>10.3f} {d['ratio']:>6.2f} "
                f"{e['irexec_ms']:>9.3f} {e['ratio']:>6.2f}",
                flush=True,
            )
    for kind in ("tiny", "real"):
        if (kind, "default") in ratios:
            print(
                f"geometric mean irexec/OpenVINO at {kind} sizes over {len(ratios[kind, 'default'])} runs: "
                f"defaults {_geomean(ratios[kind, 'default']):.2f}, kernels loaded {_geomean(ratios[kind, 'eager']):.2f}"
            )
    print(
        "(ratio: median over interleaved rounds of irexec/OpenVINO measured side by side in one process, "
        f"{pause * 1e3:g} ms apart)"
    )


def bench_onnxruntime(rounds: int) -> None:
    """onnxruntime's CPU provider on the zoo's ONNX forms, against irexec with its kernels loaded
    (optional: needs `pip install onnxruntime`)."""
    from irexec.kernels import jit

    jit.load(full=True)
    for xml in sorted(ZOO.glob("*.xml")):
        ort = _ort_session(xml, _zoo_inputs(xml.stem))
        if not ort:
            continue
        feeds = _zoo_inputs(xml.stem)
        m = irexec.load(xml)
        for _ in range(3):
            m.infer(feeds)
            ort[0].run(None, ort[1])
        irx, ortt = [], []
        for _ in range(rounds):
            time.sleep(0.02)
            irx.append(_median_time(lambda m=m, feeds=feeds: m.infer(feeds), 5))
            time.sleep(0.02)
            ortt.append(_median_time(lambda s=ort[0], f=ort[1]: s.run(None, f), 5))
        r = float(np.median(np.array(irx) / np.array(ortt)))
        print(
            f"{xml.stem:<18} irexec {np.median(irx) * 1e3:.3f} ms, onnxruntime {np.median(ortt) * 1e3:.3f} ms, {r:.2f}"
        )


def _op_cases():
    import openvino.opset1 as o1
    import openvino.opset14 as o14
    import openvino.opset16 as o

    def c(v):
        return o.constant(np.asarray(v))

    return [
        ("Softmax last axis", (8, 12, 128, 128), lambda x: o.softmax(x, -1)),
        ("LogSoftmax last axis", (8, 12, 128, 128), lambda x: o.log_softmax(x, -1)),
        ("MVN last axis", (8, 128, 768), lambda x: o.mvn(x, c(np.int64([-1])), True, 1e-5, "inside_sqrt")),
        ("MVN (C,H,W)", (8, 64, 56, 56), lambda x: o.mvn(x, c(np.int64([1, 2, 3])), True, 1e-5, "inside_sqrt")),
        (
            "GroupNormalization 32",
            (8, 256, 56, 56),
            lambda x: o.group_normalization(x, c(np.ones(256, np.float32)), c(np.zeros(256, np.float32)), 32, 1e-5),
        ),
        (
            "MaxPool 3x3 s2",
            (8, 64, 112, 112),
            lambda x: o14.max_pool(x, [2, 2], [1, 1], [1, 1], [1, 1], [3, 3]).output(0),
        ),
        ("AvgPool 3x3 s2", (8, 64, 112, 112), lambda x: o1.avg_pool(x, [2, 2], [1, 1], [1, 1], [3, 3], True)),
        ("AvgPool global", (8, 256, 56, 56), lambda x: o1.avg_pool(x, [1, 1], [0, 0], [0, 0], [56, 56], True)),
        ("ReduceMean (1,576,7,7)", (1, 576, 7, 7), lambda x: o.reduce_mean(x, c(np.int64([2, 3])), True)),
        ("ReduceMean (8,256,56,56)", (8, 256, 56, 56), lambda x: o.reduce_mean(x, c(np.int64([2, 3])), True)),
        ("SDPA (1,12,128,64)", (1, 12, 128, 64), lambda x: o.scaled_dot_product_attention(x, x, x, causal=True)),
        *[
            # an LLM's decode step: the last position's query against every cached key
            (
                f"SDPA decode 12x{keys} keys",
                (1, 12, keys, 64),
                lambda x: o.scaled_dot_product_attention(_last(x, c), x, x),
            )
            for keys in (128, 512, 2048)
        ],
        ("FakeQuantize per-channel", (1, 64, 112, 112), lambda x: o.fake_quantize(x, *_fq_ranges(c, 64), 256)),
    ]


def _last(x, c):
    """x's last position along axis 2 (a slice that keeps the axis)."""
    import openvino.opset16 as o

    one = np.int64([1])
    return o.slice(x, c(-one), c(np.int64([np.iinfo(np.int64).max])), c(one), c(np.int64([2])))


def _fq_ranges(c, channels):
    """Per-channel ranges (1, C, 1, 1) of a calibrated int8 activation: input [-a, a] onto u8's."""
    r = np.random.default_rng(1)
    high = r.uniform(1.0, 3.0, (1, channels, 1, 1)).astype(np.float32)
    return c(-high), c(high), c(np.zeros_like(high)), c(np.full_like(high, 255.0))


def bench_ops(rounds: int, only: str = "") -> None:
    import openvino as ov

    from irexec import config
    from irexec.kernels import jit

    config.JIT = "always"
    jit.load(full=True)
    core = ov.Core()
    print(f"{'op':<26} {'MB':>6} {'irexec GB/s':>11} {'OV GB/s':>8} {'limit GB/s':>10} {'irx/OV':>7} {'irx/lim':>7}")
    words = [w.lower() for w in only.split(",") if w]
    for label, shape, build in _op_cases():
        if words and not any(w in label.lower() for w in words):
            continue
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        p = ov.opset16.parameter(shape, np.float32, name="x")
        model = ov.Model([build(p)], [p], "op")
        with tempfile.TemporaryDirectory() as d:
            xml = Path(d) / "op.xml"
            ov.save_model(model, str(xml), compress_to_fp16=False)
            m = irexec.load(xml)
            req = core.compile_model(str(xml), "CPU", {"INFERENCE_PRECISION_HINT": "f32"}).create_infer_request()
            flat = x.reshape(-1).view(np.int64)
            m.infer([x])
            req.infer([x])
            irx, ovt, lim = [], [], []
            for _ in range(rounds):
                irx.append(_median_time(lambda m=m, x=x: m.infer([x]), 3))
                ovt.append(_median_time(lambda req=req, x=x: req.infer([x]), 3))
                lim.append(_median_time(lambda flat=flat: flat.sum(), 3))
        gb = x.nbytes / 1e9
        a, b, s = gb / np.median(irx), gb / np.median(ovt), gb / np.median(lim)
        print(f"{label:<26} {x.nbytes / 1e6:>6.1f} {a:>11.2f} {b:>8.2f} {s:>10.2f} {a / b:>7.2f} {a / s:>7.2f}")


def bench_overhead() -> None:
    import dataclasses

    from irexec.executor import execute
    from irexec.kernels import jit

    jit.load(full=True)  # the steady state, as in the models table
    m = irexec.load(ZOO / "llama.xml")
    feeds = _zoo_inputs("llama")
    # the run loop over every layer (no remembered shape values, no fused steps), against the
    # same layers' compute times from Model.profile
    plain = dataclasses.replace(m._plan, memo=None, run_steps=m._plan.steps)
    fed = m._feeds(feeds)
    for _ in range(20):
        execute(plain, m.specs, fed)
    total = _median_time(lambda: execute(plain, m.specs, fed), 200)
    prof = [sum(t for _, t in m.profile(feeds)) for _ in range(50)]
    steps = len(m._plan.steps)
    print(
        f"LLaMA (zoo, {len(m.graph.layers)} layers, {steps} executed): infer {total * 1e3:.3f} ms, layers' own "
        f"compute {np.median(prof) * 1e3:.3f} ms, run-loop overhead {(total - np.median(prof)) / steps * 1e6:.2f} "
        f"us per executed layer"
    )
    fast = _median_time(lambda: m.infer(feeds), 200)
    print(
        f"  Model.infer as it runs (shape values remembered, {len(m._plan.steps) - len(m._plan.run_steps)} layers "
        f"fused away): {fast * 1e3:.3f} ms"
    )
    from tests.support.irbuild import Net

    with tempfile.TemporaryDirectory() as d:
        n = Net("chain")
        x = n.param("x", "f32", (1, 8))
        v = x
        c = n.const(np.ones((1, 8), np.float32))
        for i in range(300):
            v = n.op("Add" if i % 2 else "Multiply", [v, c], out_dims=[1, 8])
        n.result(v, "y")
        mc = irexec.load(n.save(Path(d) / "chain.xml"))
        a = np.ones((1, 8), np.float32)
        for _ in range(20):
            mc.infer({"x": a})
        t_irx = _median_time(lambda: mc.infer({"x": a}), 200)

        def bare():
            y = a
            for i in range(300):
                y = np.add(y, a) if i % 2 else np.multiply(y, a)

        t_np = _median_time(bare, 200)
        print(
            f"300-layer Add/Multiply chain on (1,8): {t_irx / 300 * 1e6:.2f} us per layer, numpy's ufunc calls alone "
            f"{t_np / 300 * 1e6:.2f} us: overhead {(t_irx - t_np) / 300 * 1e6:.2f} us per layer"
        )


_PEAK = """
import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""
_OV_RUN = """
import sys, numpy as np, openvino as ov
z = np.load(sys.argv[2]); feeds = [z[k] for k in z.files if k.startswith("in:")]
core = ov.Core(); c = core.compile_model(core.read_model(sys.argv[1]), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
c(feeds)
"""


def bench_memory() -> None:
    print(f"{'model':<18} {'irexec run MB':>14} {'OpenVINO MB':>12} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as d:
        for xml in sorted(ZOO.glob("*.xml")):
            feeds = _zoo_inputs(xml.stem)
            npz = Path(d) / "in.npz"
            np.savez(npz, **feeds)
            a = int(
                subprocess.run(
                    [sys.executable, "-c", _PEAK, sys.executable, "-m", "irexec", "run", str(xml), "-i", str(npz)],
                    capture_output=True,
                    text=True,
                ).stdout.strip()
                or 0
            )
            b = int(
                subprocess.run(
                    [
                        sys.executable,
                        "-c",
                        _PEAK,
                        sys.executable,
                        "-c",
                        _OV_RUN,
                        str(xml),
                        str(xml.with_suffix(".npz")),
                    ],
                    capture_output=True,
                    text=True,
                ).stdout.strip()
                or 0
            )
            print(f"{xml.stem:<18} {a / 1024:>14.1f} {b / 1024:>12.1f} {a / max(b, 1):>6.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--skip", default="")
    ap.add_argument("--ops", default="", help="only the per-op rows whose label contains one of these (comma list)")
    ap.add_argument("--models", default="", help="only these zoo models (comma list)")
    ap.add_argument("--sizes", default="tiny,real", help="tiny (the zoo's test inputs), real, or both")
    ap.add_argument("--pause", type=float, default=20.0, help="ms between the contenders' measurements (models)")
    ap.add_argument("--worker", nargs=3, metavar=("MODEL", "SIZE", "MODE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(_worker(*args.worker, args.rounds, args.pause / 1e3)))
        return
    skip = set(args.skip.split(","))
    if "models" not in skip:
        bench_models(args.rounds, args.models, args.sizes, args.pause / 1e3)
    if "onnxruntime" not in skip:
        bench_onnxruntime(args.rounds)
    if "ops" not in skip:
        bench_ops(args.rounds, args.ops)
    if "overhead" not in skip:
        bench_overhead()
    if "memory" not in skip:
        bench_memory()


if __name__ == "__main__":
    main()
