"""Real architectures, end to end: every IR file of tests/zoo (written by OpenVINO from tiny
random-weight torchvision, timm and transformers models, see tools/make_zoo.py, and the
deployed-style detectors and NNCF INT8 models of tools/make_deploy_zoo.py) loads, validates
clean, and matches OpenVINO CPU's stored outputs on the stored inputs (max abs error <= 1e-3 *
max |expected|, unless the model's `meta` names another rule for an output: detections compared
as sets of boxes, INT8 outputs within one quantization step; see tests/support/zoorules.py);
`irexec run` works on each. No torch needed.

A model may store more than one input case: `in:`/`out:` keys hold the first, `in@1:`/`out@1:`
the second (the control-flow models of tools/make_state_zoo.py take both branches of their If
that way). The stateful generation models live in zoo/state/ (tests/test_state_zoo.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import irexec
from irexec.ops.registry import supported_types
from tests.support import zoorules

ZOO = Path(__file__).parent / "zoo"
MODELS = sorted(p.stem for p in ZOO.glob("*.xml"))

# Ops being written in other branches when a model joins the zoo (model name -> op types): a model
# that needs one of these while irexec lacks it is expected to fail to load with
# UnsupportedOpError (strict: once the op is registered the test runs as any other).
PENDING_OPS: dict[str, tuple[str, ...]] = {
    "control_flow_torch": ("If", "Loop"),
    "control_flow_onnx": ("If", "Loop", "TensorIterator"),
}


def _pending(name) -> list[str]:
    have = {t.lower() for t in supported_types()}
    return [t for t in PENDING_OPS.get(name, ()) if t.lower() not in have]


def _model_params(raises):
    return [
        pytest.param(
            n,
            marks=pytest.mark.xfail(
                bool(_pending(n)), reason=f"needs {', '.join(_pending(n))}", raises=raises, strict=True
            ),
        )
        for n in MODELS
    ]


def _cases(name) -> list[tuple[dict, dict]]:
    """Every stored (inputs, outputs) case: `in:`/`out:`, then `in@1:`/`out@1:`, ..."""
    with np.load(ZOO / f"{name}.npz") as z:
        tags = sorted({k[2 : k.index(":")] for k in z.files if k.startswith("in")}, key=lambda t: (t != "", t))
        cases = []
        for tag in tags:
            ins = {k.split(":", 1)[1]: z[k] for k in z.files if k.startswith(f"in{tag}:")}
            outs = {k.split(":", 1)[1]: z[k] for k in z.files if k.startswith(f"out{tag}:")}
            cases.append((ins, outs))
    return cases


def _data(name):
    with np.load(ZOO / f"{name}.npz") as z:
        ins = {k[3:]: z[k] for k in z.files if k.startswith("in:")}
        outs = {k[4:]: z[k] for k in z.files if k.startswith("out:")}
        meta = json.loads(str(z["meta"])) if "meta" in z.files else {}
    return ins, outs, meta


def test_zoo_is_there_and_varied():
    families = {_data(m)[2].get("source") for m in MODELS}
    assert len(families) >= 12, families
    assert any(_data(m)[2].get("frontend") == "onnx" for m in MODELS)
    total = sum(f.stat().st_size for f in ZOO.rglob("*") if f.is_file())
    # 10 MiB: the ViTs' and Whisper's test inputs are real-size (224x224 images, 3000 frames: their
    # position tables take that size only), 1.4 MB of the total
    assert total < 10 << 20, f"the zoo takes {total} bytes"
    cases = {m: len(_cases(m)) for m in MODELS}
    assert all(n == _data(m)[2].get("cases", 1) for m, n in cases.items()), cases


@pytest.mark.parametrize("jit_mode", ["never", "always"])
@pytest.mark.parametrize("name", _model_params(irexec.UnsupportedOpError))
def test_zoo_model_matches_openvino(name, jit_mode, monkeypatch):
    """Both paths against OpenVINO: the numpy paths, and the numba kernels (which a long-lived
    process takes whatever the size)."""
    from irexec import config

    monkeypatch.setattr(config, "JIT", jit_mode)
    _, _, meta = _data(name)
    m = irexec.load(ZOO / f"{name}.xml")
    report = m.validate()
    assert report.ok, "\n".join(str(i) for i in report.issues[:10])
    for case, (ins, outs) in enumerate(_cases(name)):
        _check_case(m, f"{name}" + (f" case {case}" if case else ""), ins, outs, meta.get("compare", {}))


def _check_case(m, name, ins, outs, rules):
    got = m.infer(ins, outputs="all" if "int8" in rules.values() else None)
    assert set(outs) <= set(got), (sorted(got), sorted(outs))
    for key, want in outs.items():
        g = got[key]
        what = f"{name} output {key}"
        assert g.shape == want.shape, f"{what}: shape {g.shape}, OpenVINO {want.shape}"
        if rules.get(key) == "detections":
            assert zoorules.match_detections(g, want, what) > 0, f"{what}: no boxes: the comparison proves nothing"
        elif rules.get(key) == "int8":
            _within_int8_steps(m, got, key, g, want, what)
        elif want.dtype.kind in "iub":
            np.testing.assert_array_equal(g, want, err_msg=what)
        else:
            scale = float(np.max(np.abs(want)))
            assert scale > 0, f"{what} is all zeros: the comparison would prove nothing"
            err = float(np.max(np.abs(g.astype(np.float64) - want.astype(np.float64))))
            assert err <= 1e-3 * scale, f"{what}: max abs error {err:.3g}, max |expected| {scale:.3g}"


def _within_int8_steps(m, values, key, g, want, what):
    """One quantization step of the last FakeQuantize layers before the output, carried to it
    (zoorules.Int8Tolerance says how), element by element; and the tolerance must be a small part
    of the output's range, or the check would prove nothing."""
    result = m.graph.results[[o.name for o in m.outputs].index(key)]
    tol = zoorules.Int8Tolerance(m, values).of_output(result, want)
    err = np.abs(g.astype(np.float64) - want.astype(np.float64))
    worst = np.unravel_index(np.argmax(err - tol), err.shape)
    assert np.all(err <= tol), f"{what}: error {err[worst]:.3g} at {worst}, tolerance there {tol[worst]:.3g}"
    scale = float(np.max(np.abs(want)))
    assert float(np.max(tol)) < 0.05 * scale, f"{what}: tolerance {np.max(tol):.3g} for outputs up to {scale:.3g}"


INT8 = [n for n in MODELS if "int8" in _data(n)[2].get("compare", {}).values()]


@pytest.mark.parametrize("name", INT8)
def test_int8_fake_quantize_layers_match_the_formula(name):
    """Every FakeQuantize layer of the NNCF-quantized models against the opset formula in float64
    on irexec's own inputs to that layer (the layers' outputs from `infer(outputs="all")`, the
    ranges as loading folds them): the same bits after rounding to the layer's type."""
    ins, _, _ = _data(name)
    m = irexec.load(ZOO / f"{name}.xml")
    values = m.infer(ins, outputs="all")
    names = m.value_names()
    rules = zoorules.Int8Tolerance(m, values)
    fqs = [lid for lid in m.graph.order if m.graph.layers[lid].type == "FakeQuantize"]
    assert len(fqs) >= 20, f"{name}: {len(fqs)} FakeQuantize layers"
    for lid in fqs:
        layer = m.graph.layers[lid]
        x, il, ih, ol, oh = (rules.value(k) for k in m.graph.operands[lid])
        got = values[names[(lid, 0)]]
        want = zoorules.fake_quantize_reference(x, il, ih, ol, oh, int(layer.attrs["levels"]))
        assert got.dtype == x.dtype, f"{layer.name}: {got.dtype} from {x.dtype} data"
        np.testing.assert_array_equal(got, want.astype(got.dtype), err_msg=f"{name} {layer.name}")


@pytest.mark.parametrize("name", _model_params(AssertionError))
def test_zoo_model_runs_from_the_command_line(name, tmp_path):
    ins, _, _ = _data(name)
    feeds = tmp_path / "in.npz"
    np.savez(feeds, **ins)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "irexec",
            "run",
            str(ZOO / f"{name}.xml"),
            "-i",
            str(feeds),
            "-o",
            str(tmp_path / "out.npz"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v3", "llama", "t5"])
@pytest.mark.parametrize("jit_mode", ["never", "always"])
def test_fused_steps_give_the_layer_by_layer_bits(name, jit_mode, monkeypatch):
    """The plan's fused steps (RMSNorm chains, ReLU after its producer) and remembered shape
    values against `infer(outputs="all")`, which runs every layer one by one: the same bits."""
    from irexec import config
    from irexec.ops.activation import ThenRelu
    from irexec.ops.normalization import RMSNorm
    from irexec.ops.pool import MaxPoolValues

    monkeypatch.setattr(config, "JIT", jit_mode)
    ins, _, _ = _data(name)
    m = irexec.load(ZOO / f"{name}.xml")
    assert any(isinstance(s.op, (RMSNorm, ThenRelu)) for s in m._plan.run_steps)
    if name == "resnet18":  # its MaxPool-14's indices go nowhere: the values-only kernel runs
        assert any(isinstance(s.op, MaxPoolValues) for s in m._plan.run_steps)
    for _ in range(2):  # the second run takes the remembered shape values
        fused = m.infer(ins)
        layers = m.infer(ins, outputs="all")
        for key, value in fused.items():
            np.testing.assert_array_equal(value, layers[key], err_msg=f"{name} {key}")


@pytest.mark.parametrize("jit_mode", ["never", "always"])
def test_clamp_after_a_producer_is_fused_with_the_layers_bits(tmp_path, jit_mode, monkeypatch):
    """A Clamp with min <= max (ReLU6) read alone after a convolution or a matrix product runs in
    place on the producer's result, and a pointwise convolution's Clamp or ReLU as its kernel
    stores: the layer-by-layer run's bits, NaN and -0.0 included; a Clamp whose result has
    other readers, or with min > max, stays a layer of its own."""
    from irexec import config
    from irexec.kernels import conv as kc
    from irexec.ops.activation import ThenRelu
    from tests.support.irbuild import Net

    monkeypatch.setattr(config, "JIT", jit_mode)
    monkeypatch.setattr(kc, "POINT_MIN_POSITIONS", 1)  # the kernel on 9x9 maps
    monkeypatch.setattr(kc, "POINT_MIN_FMAS", 1)
    n = Net("clamps")
    x = n.param("x", "f32", (1, 4, 9, 9))
    w = n.const(np.random.default_rng(3).standard_normal((6, 4, 3, 3)).astype(np.float32))
    attrs = {"strides": "1,1", "dilations": "1,1", "pads_begin": "1,1", "pads_end": "1,1"}
    conv = n.op("Convolution", [x, w], attrs, out_dims=[1, 6, 9, 9])
    n.result(n.op("Clamp", [conv], {"min": "0", "max": "6"}, out_dims=[1, 6, 9, 9]), "relu6")
    one = {"strides": "1,1", "dilations": "1,1", "pads_begin": "0,0", "pads_end": "0,0"}
    for i, act in enumerate(("Clamp", "ReLU")):  # pointwise: the kernel applies them as it stores
        w1 = n.const(np.random.default_rng(5 + i).standard_normal((5, 4, 1, 1)).astype(np.float32))
        pw = n.op("Convolution", [x, w1], one, out_dims=[1, 5, 9, 9])
        bounds = {"min": "0", "max": "6"} if act == "Clamp" else {}
        n.result(n.op(act, [pw], bounds, out_dims=[1, 5, 9, 9]), f"pointwise_{act}")
    m2 = n.param("m", "f32", (5, 8))
    mm = n.op("MatMul", [m2, n.const(np.full((8, 3), 0.5, np.float32))], out_dims=[5, 3])
    n.result(n.op("Clamp", [mm], {"min": "-1", "max": "1.5"}, out_dims=[5, 3]), "clamped")
    shared = n.op("MatMul", [m2, n.const(np.eye(8, dtype=np.float32))], out_dims=[5, 8])
    n.result(n.op("Clamp", [shared], {"min": "0", "max": "1"}, out_dims=[5, 8]), "shared_clamped")
    n.result(shared, "shared")
    m = irexec.load(n.save(tmp_path / "clamps.xml"))
    fused = [s.op for s in m._plan.run_steps if isinstance(s.op, ThenRelu)]
    assert sorted(op.bounds for op in fused if op.bounds) == [(-1.0, 1.5), (0.0, 6.0), (0.0, 6.0)]
    assert sum(op.bounds is None for op in fused) == 1
    applied = []
    real = kc.pointwise_then
    monkeypatch.setattr(kc, "pointwise_then", lambda *a: applied.append(real(*a) is not None) or real(*a))
    rng = np.random.default_rng(4)
    feeds = {
        "x": rng.standard_normal((1, 4, 9, 9)).astype(np.float32) * 4,
        "m": rng.standard_normal((5, 8)).astype(np.float32),
    }
    feeds["x"][0, 1, 4, 4] = np.nan
    feeds["m"][2, 3] = np.nan
    got = m.infer(feeds)
    want = m.infer(feeds, outputs="all")
    assert np.isnan(got["relu6"]).any() and np.isnan(got["clamped"]).any()
    for key, value in got.items():
        np.testing.assert_array_equal(value, want[key], err_msg=key)
    assert float(np.nanmax(got["relu6"])) <= 6.0 and float(np.nanmin(got["relu6"])) >= 0.0
    assert np.isnan(got["pointwise_Clamp"]).any() and float(np.nanmin(got["pointwise_ReLU"])) == 0.0
    assert applied.count(True) == (2 if jit_mode == "always" else 0)  # the 3x3 convolution: False


def test_detection_rule_matches_sets_and_catches_differences():
    """The "detections" rule on OpenVINO CPU's own outputs of ssd_clustered: DetectionOutput-1 and
    -8 agree as sets, rows in any order match, and a moved box, a changed score or label, or a
    missing row are caught."""
    _, outs, meta = _data("ssd_clustered")
    assert set(meta["compare"].values()) == {"detections"}
    want = outs["detection_out"]
    n = zoorules.match_detections(outs["detection_out_v8"], want, "v8 vs v1")
    assert 20 <= n < 200, n  # a few dozen boxes survive the confidence threshold
    rows = want.reshape(-1, 7)
    shuffled = rows.copy()
    shuffled[:n] = rows[np.random.default_rng(0).permutation(n)]
    assert zoorules.match_detections(shuffled.reshape(want.shape), want, "shuffled") == n
    for change in ("box", "score", "label", "drop"):
        bad = rows.copy()
        if change == "box":
            bad[3, 3:] += [0.02, 0.0, 0.02, 0.0]
        elif change == "score":
            bad[3, 2] -= 0.01
        elif change == "label":
            bad[3, 1] = 3 - bad[3, 1]
        else:
            bad[n - 1, 0] = -1
        with pytest.raises(AssertionError):
            zoorules.match_detections(bad.reshape(want.shape), want, change)


@pytest.mark.parametrize("jit_mode", ["never", "always"])
def test_relu_before_a_nonnegative_fake_quantize_is_left_out_with_the_layers_bits(tmp_path, jit_mode, monkeypatch):
    """A ReLU read only by a FakeQuantize whose min(input_low, input_high) is >= 0 everywhere
    runs no pass (the FakeQuantize reads its input): the layer-by-layer run's bits, negative
    values, -0.0, NaN and infinities included. A lower bound below 0 somewhere, a ReLU result
    with another reader, or a ReLU input with another reader keep the ReLU."""
    from irexec import config
    from tests.support.irbuild import Net

    monkeypatch.setattr(config, "JIT", jit_mode)
    n = Net("relu_quantize")
    x = n.param("x", "f32", (1, 4, 5, 6))
    dims = [1, 4, 5, 6]
    w = n.const(np.random.default_rng(3).standard_normal((4, 4, 1, 1)).astype(np.float32))
    one = {"strides": "1,1", "dilations": "1,1", "pads_begin": "0,0", "pads_end": "0,0"}

    def quantize(v, il, ih, name, levels="256"):
        ranges = [n.const(np.asarray(r, np.float32)) for r in (il, ih, -1.0, 3.0)]
        n.result(n.op("FakeQuantize", [v, *ranges], {"levels": levels}, out_dims=dims), name)

    per_channel_low = np.float32([0.0, 0.5, 2.0, 0.0]).reshape(1, 4, 1, 1)
    per_channel_high = np.float32([4.0, 3.0, 0.0, 1.0]).reshape(1, 4, 1, 1)  # one channel flipped
    cases = {
        "tensor": (0.0, 4.0),
        "channel": (per_channel_low, per_channel_high),
        "flipped": (4.0, 0.0),  # input_low > input_high: the bound is input_high
        "below": (-0.5, 4.0),  # keeps its ReLU
    }
    for name, (il, ih) in cases.items():
        conv = n.op("Convolution", [x, w], one, out_dims=dims)
        quantize(n.op("ReLU", [conv], out_dims=dims), il, ih, name)
    y = n.param("y", "f32", (1, 4, 5, 6))  # straight from an input: -0.0 and NaN reach it
    quantize(n.op("ReLU", [y], out_dims=dims), 0.0, 4.0, "input")
    shared = n.op("ReLU", [x], out_dims=dims)  # its result has a second reader
    quantize(shared, 0.0, 4.0, "shared_result")
    n.result(shared, "relu")
    add = n.op("Add", [x, x], out_dims=dims)  # its input has a second reader
    quantize(n.op("ReLU", [add], out_dims=dims), 0.0, 4.0, "shared_input", levels="16")
    n.result(add, "add")
    m = irexec.load(n.save(tmp_path / "relu_quantize.xml"))
    relus = [s for s in m._plan.steps if s.op is not None and s.op.TYPE == "ReLU"]
    run_relus = [s for s in m._plan.run_steps if s.op is not None and "ReLU" in s.op.TYPE]
    assert len(relus) == 7 and len(run_relus) == 3  # "below", "shared_result", "shared_input"
    rng = np.random.default_rng(4)
    feed = (rng.standard_normal((1, 4, 5, 6)) * 3).astype(np.float32)
    feed.reshape(-1)[:5] = [np.nan, np.inf, -np.inf, -0.0, 0.0]
    feeds = {"x": feed, "y": feed[:, ::-1].copy()}
    got = m.infer(feeds)
    want = m.infer(feeds, outputs="all")
    for key, value in got.items():
        np.testing.assert_array_equal(value.view(np.uint32), want[key].view(np.uint32), err_msg=key)
    assert np.isnan(got["tensor"]).any() and np.isnan(got["input"]).any() and (got["input"] == -1.0).any()
