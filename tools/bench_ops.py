"""Per-op latency: irexec against OpenVINO CPU on realistic single-op graphs: audio front ends,
float32 activations on 1.2 M elements, attention (BERT-base and LLM decode shapes), ConvNeXt and
MobileNet convolutions and normalizations, small matrix products, and the ops of the grid,
embedding, nms and detectron kernel families (`hot`).

Each case is one OpenVINO graph written with `ov.save_model`, loaded by irexec (its kernels
loaded first: the steady state) and compiled by OpenVINO's CPU plugin (f32 inference
precision). Interleaved rounds (each contender once per round, the order alternating, calls
`--pause` ms apart, 20 by default as in tools/bench_models.py: OpenVINO's workers spin about
1 ms after a call, on the core irexec's second kernel thread would take; back to back, (1, 12,
128, 64) attention measured 1.04 ms against OpenVINO's 0.92, and 20 ms apart 1.04 against
1.44, OpenVINO slower from idle cores), medians;
the ratio is irexec's time over OpenVINO's, and the last column the largest difference between
the two outputs relative to the largest |value| ("shape" when their row counts differ).
`--threads N` sets both irexec's kernel threads and OpenVINO's INFERENCE_NUM_THREADS; the
activations' target is single-threaded (`--threads 1`). `--numpy` adds a column with irexec's
numpy paths (`IREXEC_JIT=never`: what a process runs until a family's kernels are loaded).

    python3 -m tools.bench_ops                  # every case
    python3 -m tools.bench_ops --rounds 50 --threads 1 --only stft
    python3 -m tools.bench_ops --group act --threads 1 --cpu
    python3 -m tools.bench_ops --group sdpa,conv,mvn,matmul
    python3 -m tools.bench_ops --group hot --numpy --threads 1 --cpu
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np

import irexec


def _cases(o15, o16, C):
    """name -> (builder() -> (params, output), feeds)."""
    rng = np.random.default_rng(0)
    audio = rng.normal(size=(1, 16000)).astype(np.float32)
    hann = np.hanning(400).astype(np.float32)
    frames = rng.normal(size=(80, 512)).astype(np.float32)
    spec = rng.normal(size=(80, 257, 2)).astype(np.float32)
    complex_frames = rng.normal(size=(80, 512, 2)).astype(np.float32)
    istft_in = rng.normal(size=(1, 201, 98, 2)).astype(np.float32)

    def p(name, array):
        node = o15.parameter(list(array.shape), array.dtype, name=name)
        node.output(0).get_tensor().set_names({name})
        return node

    def stft():
        x, w = p("x", audio), p("w", hann)
        return [x, w], o15.stft(x, w, C(400), C(160), False), {"x": audio, "w": hann}

    def stft512():  # a power-of-two frame, the window centered in it
        x, w = p("x", audio), p("w", hann)
        return [x, w], o15.stft(x, w, C(512), C(160), False), {"x": audio, "w": hann}

    def istft():
        x, w = p("x", istft_in), p("w", hann)
        return [x, w], o16.istft(x, w, C(400), C(160), True, False), {"x": istft_in, "w": hann}

    def rdft():
        x = p("x", frames)
        return [x], o15.rdft(x, C([1])), {"x": frames}

    def irdft():
        x = p("x", spec)
        return [x], o15.irdft(x, C([1])), {"x": spec}

    def dft():
        x = p("x", complex_frames)
        return [x], o15.dft(x, C([1])), {"x": complex_frames}

    audio_cases = {
        "stft [1,16000] frame 400 step 160": stft,
        "stft [1,16000] frame 512 window 400": stft512,
        "istft [1,201,98,2] center": istft,
        "rdft [80,512] axis 1": rdft,
        "irdft [80,257,2] axis 1": irdft,
        "dft [80,512,2] axis 1": dft,
    }
    return {"audio": audio_cases, **_model_cases(p, C), "hot": _hot_cases(rng, p, C)}


def _model_cases(p, C):
    """The groups beyond audio: name -> {case -> builder}."""
    import openvino.opset13 as o13

    rng = np.random.default_rng(1)

    def f32(*shape, scale=1.0):
        return (rng.normal(size=shape) * scale).astype(np.float32)

    act_x = f32(1, 1200, 1000, scale=3.0)

    def unary(fn):
        def build():
            x = p("x", act_x)
            return [x], fn(x), {"x": act_x}

        return build

    act = {
        "gelu erf 1.2M": unary(lambda x: o13.gelu(x, "erf")),
        "gelu tanh 1.2M": unary(lambda x: o13.gelu(x, "tanh")),
        "erf 1.2M": unary(o13.erf),
        "swish 1.2M": unary(o13.swish),
        "sigmoid 1.2M": unary(o13.sigmoid),
    }

    def sdpa(qs, ks, mask=None, causal=False):
        q_in, k_in, v_in = f32(*qs), f32(*ks), f32(*ks)

        def build():
            q, k, v = p("q", q_in), p("k", k_in), p("v", v_in)
            feeds = {"q": q_in, "k": k_in, "v": v_in}
            params = [q, k, v]
            args = [q, k, v]
            if mask is not None:
                m_in = mask(qs[-2], ks[-2])
                m = o13.parameter(list(m_in.shape), m_in.dtype, name="m")
                m.output(0).get_tensor().set_names({"m"})
                params.append(m)
                args.append(m)
                feeds["m"] = m_in
            return params, o13.scaled_dot_product_attention(*args, causal=causal), feeds

        return build

    def bool_mask(L, S):
        return rng.random((1, 1, L, S)) < 0.9

    def float_mask(L, S):
        return np.where(rng.random((1, 1, L, S)) < 0.9, 0.0, -np.inf).astype(np.float32)

    att = {"sdpa (1,12,128,64)": sdpa((1, 12, 128, 64), (1, 12, 128, 64))}
    att["sdpa (1,12,128,64) causal"] = sdpa((1, 12, 128, 64), (1, 12, 128, 64), causal=True)
    for s_len in (128, 512, 2048):
        att[f"sdpa decode 1x{s_len} h32"] = sdpa((1, 32, 1, 128), (1, 32, s_len, 128))
    att["sdpa decode 1x2048 causal"] = sdpa((1, 32, 1, 128), (1, 32, 2048, 128), causal=True)
    att["sdpa decode 1x2048 bool mask"] = sdpa((1, 32, 1, 128), (1, 32, 2048, 128), bool_mask)
    att["sdpa decode 1x2048 float mask"] = sdpa((1, 32, 1, 128), (1, 32, 2048, 128), float_mask)
    att["sdpa decode 1x2048 gqa 32/8"] = sdpa((1, 8, 4, 1, 128), (1, 8, 1, 2048, 128))

    def conv(x_shape, w_shape, group=False, pads=(0, 0)):
        x_in, w_in = f32(*x_shape), f32(*w_shape, scale=0.1)

        def build():
            x = p("x", x_in)
            w = o13.constant(w_in)
            fn = o13.group_convolution if group else o13.convolution
            return [x], fn(x, w, [1, 1], list(pads), list(pads), [1, 1]), {"x": x_in}

        return build

    convs = {
        "depthwise 7x7 1x96x56x56": conv((1, 96, 56, 56), (96, 1, 1, 7, 7), True, (3, 3)),
        "depthwise 3x3 1x144x56x56": conv((1, 144, 56, 56), (144, 1, 1, 3, 3), True, (1, 1)),
        "pointwise 96->384 56x56": conv((1, 96, 56, 56), (384, 96, 1, 1)),
        "pointwise 384->96 56x56": conv((1, 384, 56, 56), (96, 384, 1, 1)),
        "pointwise 24->144 56x56": conv((1, 24, 56, 56), (144, 24, 1, 1)),
    }

    def mvn(shape, axes):
        x_in = f32(*shape)

        def build():
            x = p("x", x_in)
            return [x], o13.mvn(x, C(list(axes)), True, 1e-6, "inside_sqrt"), {"x": x_in}

        return build

    mvns = {
        "mvn channels 1x96x56x56 axis 1": mvn((1, 96, 56, 56), (1,)),
        "layernorm 1x3136x96 axis -1": mvn((1, 3136, 96), (-1,)),
        "mvn 1x96x56x56 axes 2,3": mvn((1, 96, 56, 56), (2, 3)),
    }

    def matmul(a_shape, b_shape):
        a_in, b_in = f32(*a_shape), f32(*b_shape)

        def build():
            a = p("a", a_in)
            return [a], o13.matmul(a, o13.constant(b_in), False, False), {"a": a_in}

        return build

    mms = {
        f"matmul {m}x{k} @ {k}x{n}": matmul((m, k), (k, n))
        for m, k, n in ((1, 64, 64), (8, 64, 64), (16, 128, 128), (64, 256, 256), (1, 768, 768), (128, 768, 768))
    }
    return {"act": act, "sdpa": att, "conv": convs, "mvn": mvns, "matmul": mms}


def _hot_cases(rng, p, C):
    """The ops whose numba kernels this bench measures, at the sizes where their numpy paths
    were measured slow (named "hot: ...")."""
    import openvino.opset3 as o3
    import openvino.opset8 as o8
    import openvino.opset9 as o9

    data = rng.normal(size=(1, 64, 56, 56)).astype(np.float32)
    grid = rng.uniform(-1.1, 1.1, size=(1, 56, 56, 2)).astype(np.float32)

    def grid_sample(mode, padding):
        def build():
            x, g = p("x", data), p("g", grid)
            node = o9.grid_sample(x, g, {"mode": mode, "padding_mode": padding, "align_corners": False})
            return [x, g], node, {"x": data, "g": grid}

        return build

    sizes = rng.integers(15, 26, 4096)
    table = rng.normal(size=(100_000, 64)).astype(np.float32)
    indices = rng.integers(0, table.shape[0], int(sizes.sum())).astype(np.int32)
    offsets = (np.cumsum(sizes) - sizes).astype(np.int32)
    weights = rng.normal(size=indices.size).astype(np.float32)

    def bags(weighted):
        def build():
            t, i = p("t", table), p("i", indices)
            f = o3.parameter([offsets.size], np.int32, name="f")
            f.output(0).get_tensor().set_names({"f"})
            feeds = {"t": table, "i": indices, "f": offsets}
            if not weighted:
                return [t, i, f], o3.embedding_bag_offsets_sum(t, i, f), feeds
            w = p("w", weights)
            node = o3.embedding_bag_offsets_sum(t, i, f, o3.constant(np.int32(-1)), w)
            return [t, i, f, w], node, {**feeds, "w": weights}

        return build

    def boxes_of(n):
        xy = rng.uniform(0, 600, size=(1, n, 2))
        wh = rng.uniform(10, 120, size=(1, n, 2))
        return np.concatenate([xy, xy + wh], axis=2).astype(np.float32)

    yolo_boxes, yolo_scores = boxes_of(8400), rng.uniform(0, 1, size=(1, 80, 8400)).astype(np.float32)

    def nms9():
        b, s = p("b", yolo_boxes), p("s", yolo_scores)
        node = o9.non_max_suppression(b, s, C(100), o3.constant(np.float32(0.45)), o3.constant(np.float32(0.25)))
        return [b, s], node, {"b": yolo_boxes, "s": yolo_scores}

    mc_boxes, mc_scores = boxes_of(2000), rng.uniform(0, 1, size=(1, 80, 2000)).astype(np.float32)

    def multiclass():
        b, s = p("b", mc_boxes), p("s", mc_scores)
        node = o8.multiclass_nms(
            b, s, iou_threshold=0.5, score_threshold=0.05, nms_top_k=200, keep_top_k=100, normalized=False
        )
        return [b, s], node, {"b": mc_boxes, "s": mc_scores}

    levels = {f"p{k + 2}": rng.normal(size=(1, 256, 200 >> k, 200 >> k)).astype(np.float32) for k in range(4)}
    xy = rng.uniform(0, 700, size=(1000, 2))
    side = np.concatenate([rng.uniform(8, 100, 500), rng.uniform(120, 500, 500)])[:, None]
    rois = np.concatenate([xy, xy + side * rng.uniform(0.6, 1.4, (1000, 2))], axis=1).astype(np.float32)

    def roi_features(sampling_ratio):
        def build():
            from openvino.utils.node_factory import NodeFactory

            ps = [p("rois", rois)] + [p(name, v) for name, v in levels.items()]
            attrs = dict(output_size=7, sampling_ratio=sampling_ratio, pyramid_scales=[4, 8, 16, 32], aligned=False)
            node = NodeFactory("opset6").create(
                "ExperimentalDetectronROIFeatureExtractor", [q.output(0) for q in ps], attrs
            )
            return ps, node, {"rois": rois, **levels}

        return build

    return {
        **{f"hot: grid_sample {m} {pad}": grid_sample(m, pad) for m, pad in GRID_MODES},
        "hot: embedding_bag_offsets_sum": bags(False),
        "hot: embedding_bag_offsets_sum weighted": bags(True),
        "hot: nms-9 8400 boxes x 80, score>0.25": nms9,
        "hot: multiclass_nms 2000 x 80, top 200": multiclass,
        "hot: roi_feature_extractor 1000x256 7x7 s2": roi_features(2),
        "hot: roi_feature_extractor 1000x256 7x7 adapt": roi_features(0),
    }


GRID_MODES = [
    ("bilinear", "zeros"),
    ("bilinear", "reflection"),
    ("bicubic", "zeros"),
    ("bicubic", "border"),
    ("nearest", "zeros"),
]


def _contenders(tmp: Path, build, threads: int | None):
    import openvino as ov
    import openvino.opset15 as o15

    params, node, feeds = build()
    xml = tmp / "m.xml"
    ov.save_model(ov.Model([o15.result(out) for out in node.outputs()], params, "m"), str(xml))
    model = irexec.load(xml, jit="eager")
    config = {"INFERENCE_PRECISION_HINT": "f32"}
    if threads:
        config["INFERENCE_NUM_THREADS"] = threads
    request = ov.Core().compile_model(str(xml), "CPU", config).create_infer_request()
    ordered = [feeds[port.get_any_name()] for port in request.model_inputs]

    def run_ov():
        request.infer(ordered)
        return request.get_output_tensor(0).data

    def run_irexec(mode: str = "always"):
        irexec.config.JIT = mode  # "never": the numpy paths; "always": the loaded kernels
        return next(iter(model.infer(feeds).values()))

    return run_irexec, run_ov


def bench(
    rounds: int,
    threads: int | None,
    only: str | None,
    groups: str | None = None,
    cpu: bool = False,
    numpy_column: bool = False,
    pause: float = 0.02,
) -> None:
    import openvino.opset15 as o15
    import openvino.opset16 as o16

    def C(v):
        return o15.constant(np.asarray(v, np.int64))

    if threads:
        irexec.set_num_threads(threads)
    clock = time.process_time if cpu else time.perf_counter
    what = "process CPU time" if cpu else "wall time"
    print(
        f"{rounds} interleaved rounds {pause * 1e3:g} ms apart, medians of {what}; "
        f"threads (irexec, OpenVINO CPU): {threads or 'default'}"
    )
    numpy_head = f" {'numpy ms':>9}" if numpy_column else ""
    print(f"{'case':44} {'irexec ms':>10}{numpy_head} {'OpenVINO ms':>12} {'ratio':>7} {'max diff':>9}")
    chosen = None if groups is None else set(groups.split(","))
    cases = {
        n: b for g, group in _cases(o15, o16, C).items() if chosen is None or g in chosen for n, b in group.items()
    }
    for name, build in cases.items():
        if only and only not in name:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            run_irexec, run_ov = _contenders(Path(tmp), build, threads)
            a, b = run_irexec(), np.array(run_ov())  # warm up, compare
            diff = "shape"
            if a.shape == b.shape:
                diff = f"{float(np.abs(a.astype(np.float64) - b).max() / max(np.abs(b).max(), 1e-30)):9.1e}"
            order = [("irexec", run_irexec), ("ov", run_ov)]
            if numpy_column:
                run_irexec("never")  # warm up
                order.append(("numpy", partial(run_irexec, "never")))
            times: dict[str, list[float]] = {key: [] for key, _ in order}
            for r in range(rounds):
                for key, fn in order if r % 2 == 0 else order[::-1]:
                    # `pause` apart, as tools/bench_models.py: OpenVINO's workers spin about 1 ms
                    # after its calls, on the core a two-thread kernel of irexec's would take
                    time.sleep(pause)
                    t = clock()
                    fn()
                    times[key].append(clock() - t)
            irexec.config.JIT = "auto"
        mi, mo = (statistics.median(times[k]) * 1e3 for k in ("irexec", "ov"))
        numpy_ms = f" {statistics.median(times['numpy']) * 1e3:9.3f}" if numpy_column else ""
        print(f"{name:44} {mi:10.3f}{numpy_ms} {mo:12.3f} {mi / mo:7.2f} {diff:>9}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--threads", type=int, default=None, help="OpenVINO CPU threads (default: its own)")
    ap.add_argument("--only", default=None, help="run the cases whose name contains this")
    ap.add_argument(
        "--cpu",
        action="store_true",
        help="time the process's CPU time instead of the wall clock (with --threads 1: a loaded machine's "
        "preemptions left out)",
    )
    ap.add_argument("--group", default=None, help="comma-separated groups: audio,act,sdpa,conv,mvn,matmul,hot")
    ap.add_argument("--numpy", action="store_true", help="also time irexec's numpy paths (IREXEC_JIT=never)")
    ap.add_argument(
        "--pause", type=float, default=20.0, help="ms between contenders' calls (OpenVINO's workers spin after)"
    )
    args = ap.parse_args(argv)
    os.environ.setdefault("CI", "true")  # no OpenVINO telemetry
    bench(args.rounds, args.threads, args.only, args.group, args.cpu, args.numpy, args.pause / 1e3)


if __name__ == "__main__":
    main()
