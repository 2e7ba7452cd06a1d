"""IR v10 as OpenVINO presents it, `<pre-process>` blocks, Broadcast-1 without `mode`, and the
precision rule (irexec/precision.py, irexec/ir/preprocess.py).

The v10 files are OpenVINO-written v11 files rewritten to v10 (`version="10"`, no `output_names`,
no rt_info; OpenVINO already writes legacy port precisions such as FP16), or hand-written XML.
Every file is checked to be read by OpenVINO as v10 (it presents f16 inputs as f32), and
irexec's presented types and values are compared with `read_model` and OpenVINO's CPU plugin
(INFERENCE_PRECISION_HINT=f32). The "declared" precision (every layer rounded to its declared
type) is checked against numpy float16 step by step, an independent oracle: the CPU plugin has
no mode that rounds every layer.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import irexec
from irexec.errors import FormatError, InputError, ShapeInferenceError, UsageError
from tests.support import ov_corpus as oc

ov = pytest.importorskip("openvino")
import openvino.opset13 as op  # noqa: E402

# ---- helpers ----------------------------------------------------------------------------


def to_v10(text: str) -> str:
    """An OpenVINO-written v11 XML as a v10 file: version 10, no v11-only attributes, no rt_info."""
    text = text.replace('<net name="m" version="11">', '<net name="m" version="10">', 1)
    assert 'version="10"' in text
    text = re.sub(r' output_names="[^"]*"', "", text)
    text = re.sub(r"\s*<rt_info>.*?</rt_info>", "", text, flags=re.S)
    text = re.sub(r"\s*<rt_info\s*/>", "", text)
    return text


def save(tmp_path: Path, params, outputs, name: str = "m", v10: bool = True) -> Path:
    """Save a graph (outputs: nodes or outputs) as v11, or rewritten to v10."""
    outs = [o if hasattr(o, "get_node") else o.output(0) for o in outputs]
    model = ov.Model([op.result(o) for o in outs], list(params), "m")
    xml = tmp_path / f"{name}.xml"
    with oc.no_telemetry():
        ov.save_model(model, str(xml), compress_to_fp16=False)
    if v10:
        xml.write_text(to_v10(xml.read_text()))
    return xml


def param(name, shape, et=np.float16):
    p = op.parameter(ov.PartialShape([-1 if d is None else d for d in shape]), ov.Type(np.dtype(et)), name=name)
    p.output(0).get_tensor().set_names({name})
    return p


def const(value):
    return op.constant(np.asarray(value))


def cpu(xml: Path, feeds: dict, hint: str = "f32") -> list[np.ndarray]:
    compiled = oc.ov_core().compile_model(str(xml), "CPU", {"INFERENCE_PRECISION_HINT": hint})
    res = compiled({p.get_any_name(): feeds[p.get_any_name()] for p in compiled.inputs})
    return [np.asarray(res[o]) for o in compiled.outputs]


def presented(xml: Path):
    """(input types, output types) as OpenVINO's read_model presents them (irexec's names)."""
    m = oc.ov_core().read_model(str(xml))
    return [oc.ov_etype(i.get_element_type()) for i in m.inputs], [oc.ov_etype(o.get_element_type()) for o in m.outputs]


def check_presented(model: irexec.Model, xml: Path) -> None:
    ins, outs = presented(xml)
    assert [i.element_type for i in model.inputs] == ins
    assert [o.element_type for o in model.outputs] == outs


def assert_close(got: dict, want: list, rtol=1e-5, atol=1e-6):
    assert len(got) == len(want)
    for (name, g), w in zip(got.items(), want):
        assert g.dtype == w.dtype, f"{name}: {g.dtype}, OpenVINO {w.dtype}"
        assert g.shape == w.shape, f"{name}: {g.shape}, OpenVINO {w.shape}"
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol, err_msg=name)
        else:
            np.testing.assert_array_equal(g, w, err_msg=name)


X = np.array([0.01234, 0.5678, -0.3333, 0.0001, 1.7, -2.25], np.float32).reshape(2, 3)


def f16_chain(x, dynamic=False):
    """(x + 1000.3) -> Relu -> - 1000.3 -> Exp: f16 rounding of the sum loses most of x."""
    p = param("x", (None, 3) if dynamic else (2, 3), x)
    a = op.add(p, const(np.float16(1000.3)))
    s = op.subtract(op.relu(a), const(np.float16(1000.3)))
    return p, op.exp(s)


def f16_chain_numpy(x16: np.ndarray) -> np.ndarray:
    c = np.float16(1000.3)
    return np.exp(np.maximum(x16 + c, np.float16(0)) - c)


# ---- IR v10 presentation ----------------------------------------------------------------


@pytest.mark.parametrize("dynamic", [False, True])
def test_v10_fp16_model_is_presented_in_f32_and_computed_in_f32(tmp_path, dynamic):
    p, out = f16_chain(np.float16, dynamic)
    xml = save(tmp_path, [p], [out])
    assert presented(xml) == (["f32"], ["f32"])  # OpenVINO reads it as v10
    m = irexec.load(xml)
    check_presented(m, xml)
    assert m.validate().ok
    got = m.infer({"x": X})
    want = cpu(xml, {"x": X})
    assert_close(got, want)
    # f32 throughout: the input is not rounded to f16 (numpy f32 of the same chain)
    c = np.float32(np.float16(1000.3))
    np.testing.assert_allclose(next(iter(got.values())), np.exp(np.maximum(X + c, 0) - c), rtol=1e-6)


def test_v10_fp16_model_declared_precision_rounds_every_layer(tmp_path):
    p, out = f16_chain(np.float16)
    xml = save(tmp_path, [p], [out])
    m = irexec.load(xml, precision="declared")
    check_presented(m, xml)  # the presented types do not depend on the precision
    assert m.validate().ok
    got = next(iter(m.infer({"x": X}).values()))
    assert got.dtype == np.float32
    # numpy float16 step by step (the CPU plugin's f16 inference precision fuses the chain and
    # rounds once, so it is no oracle for rounding every layer)
    np.testing.assert_array_equal(got, f16_chain_numpy(X.astype(np.float16)).astype(np.float32))


def test_v10_feeds_take_f32_and_f16_and_refuse_others(tmp_path):
    p, out = f16_chain(np.float16)
    xml = save(tmp_path, [p], [out])
    m = irexec.load(xml)
    from_f16 = m.infer({"x": X.astype(np.float16)})
    from_f32 = m.infer({"x": X.astype(np.float16).astype(np.float32)})
    np.testing.assert_array_equal(next(iter(from_f16.values())), next(iter(from_f32.values())))
    with pytest.raises(InputError, match="the model expects f32"):
        m.infer({"x": X.astype(np.float64)})
    # layer names work as input and output names in v10 (OpenVINO adds them as tensor names)
    assert "Exp" in " ".join(from_f16.aliases) or any(a.startswith("Exp") for a in from_f16.aliases)


def _typed_outputs(x, n, b, u):
    return [
        op.relu(x),  # f16 -> f32
        op.add(n, const(np.int64(1))),  # i64 -> i32
        op.convert(n, "u64"),  # u64 -> i32
        op.convert(n, "i32"),
        op.convert(n, "u32"),
        op.logical_not(b),  # boolean -> f32
        op.add(u, const(np.uint8(3))),  # u8 -> f32
        op.convert(x, "i8"),
        op.convert(n, "i16"),
        op.convert(x, "f32"),
    ]


@pytest.mark.parametrize("precision", ["f32", "declared"])
def test_v10_legacy_types_of_inputs_and_outputs(tmp_path, precision):
    """f16 inputs become f32; other inputs keep their type; outputs: i64/u64/i32/u32 -> i32,
    f32 stays, every other type -> f32 (OpenVINO's update_v10_model)."""
    x, n = param("x", (2, 3)), param("n", (2, 3), np.int64)
    b, u = param("b", (2, 3), np.bool_), param("u", (2, 3), np.uint8)
    xml = save(tmp_path, [x, n, b, u], _typed_outputs(x, n, b, u))
    m = irexec.load(xml, precision=precision)
    check_presented(m, xml)
    assert [i.element_type for i in m.inputs] == ["f32", "i64", "boolean", "u8"]
    assert [o.element_type for o in m.outputs] == ["f32", "i32", "i32", "i32", "i32", "f32", "f32", "f32", "f32", "f32"]
    assert m.validate().ok
    rng = np.random.default_rng(0)
    feeds = {
        "x": (rng.standard_normal((2, 3)) * 50).astype(np.float16).astype(np.float32),
        "n": rng.integers(-100, 100, (2, 3)).astype(np.int64),
        "b": rng.random((2, 3)) < 0.5,
        "u": rng.integers(0, 250, (2, 3)).astype(np.uint8),
    }
    got = m.infer(feeds)
    want = cpu(xml, feeds)
    assert_close(got, want)


def test_v11_keeps_its_types(tmp_path):
    x, n = param("x", (2, 3)), param("n", (2, 3), np.int64)
    b, u = param("b", (2, 3), np.bool_), param("u", (2, 3), np.uint8)
    xml = save(tmp_path, [x, n, b, u], _typed_outputs(x, n, b, u), v10=False)
    m = irexec.load(xml)
    check_presented(m, xml)
    assert m.outputs[0].element_type == "f16" and m.outputs[1].element_type == "i64"


def test_v10_info_and_validate_show_presented_types(tmp_path):
    p, out = f16_chain(np.float16)
    xml = save(tmp_path, [p], [out])
    m = irexec.load(xml)
    info = m.info()
    assert info["ir_version"] == 10 and info["precision"] == "f32"
    assert [i["element_type"] for i in info["inputs"]] == ["f32"]
    assert [o["element_type"] for o in info["outputs"]] == ["f32"]
    # validate compares the file's FP16 claims with the declared types, in both precisions
    for precision in ("f32", "declared"):
        report = irexec.load(xml, precision=precision).validate()
        assert report.ok, report.issues
        kinds = {o.element_type for layer in report.layers for o in layer.outputs}
        assert "f16" in kinds


def test_v10_wrong_precision_claim_is_still_reported(tmp_path):
    p, out = f16_chain(np.float16)
    xml = save(tmp_path, [p], [out])
    text = xml.read_text()
    i = text.index('type="Exp"')
    j = text.index('precision="FP16"', text.index("<output>", i))
    xml.write_text(text[:j] + 'precision="FP32"' + text[j + len('precision="FP16"') :])
    report = irexec.load(xml).validate()
    assert not report.ok
    assert any(
        issue.kind == "precision" and issue.declared == "f32" and issue.inferred == "f16" for issue in report.issues
    )


# ---- the precision rule in v11 graphs ---------------------------------------------------


@pytest.mark.parametrize("dynamic", [False, True])
def test_v11_f16_graph_widens_its_input_and_rounds_its_result_once(tmp_path, dynamic):
    p, out = f16_chain(np.float16, dynamic)
    xml = save(tmp_path, [p], [out], v10=False)
    m = irexec.load(xml)
    check_presented(m, xml)
    assert m.inputs[0].element_type == "f16" and m.outputs[0].element_type == "f16"
    x16 = X.astype(np.float16)
    got = m.infer({"x": x16})
    want = cpu(xml, {"x": x16})
    assert_close(got, want, rtol=0, atol=0)
    c = np.float32(np.float16(1000.3))
    exact = np.exp(np.maximum(x16.astype(np.float32) + c, 0) - c).astype(np.float16)
    np.testing.assert_array_equal(next(iter(got.values())), exact)
    declared = irexec.load(xml, precision="declared").infer({"x": x16})
    np.testing.assert_array_equal(next(iter(declared.values())), f16_chain_numpy(x16))
    with pytest.raises(InputError, match="expects f16"):
        m.infer({"x": X})


def test_f16_result_beyond_f16_range_is_inf_as_in_openvino(tmp_path):
    p = param("x", (4,))
    m = op.multiply(op.relu(p), const(np.float16(1000)))
    s = op.subtract(op.relu(m), const(np.float16(np.inf)))
    xml = save(tmp_path, [p], [m, s], v10=False)
    x = np.array([100, 65, 70, 1], np.float16)
    with np.errstate(all="raise"):  # no numpy warning escapes either
        got = irexec.load(xml).infer({"x": x})
    assert_close(got, cpu(xml, {"x": x}), rtol=0, atol=0)
    assert np.isinf(list(got.values())[0][0])


def test_convert_to_f16_inside_a_graph_does_not_round_under_f32(tmp_path):
    """f32 -> Convert(f16) -> Relu -> Convert(f32): the CPU plugin retypes the Convert to f32."""
    p = param("x", (2, 3), np.float32)
    a = op.add(p, const(np.float32(1000.3)))
    c = op.convert(op.relu(op.convert(a, "f16")), "f32")
    out = op.exp(op.subtract(c, const(np.float32(1000.3))))
    rounded = op.convert(a, "f16")  # an f16 Result: rounded once, at the end
    xml = save(tmp_path, [p], [out, rounded], v10=False)
    m = irexec.load(xml)
    check_presented(m, xml)
    assert m.validate().ok
    got = m.infer({"x": X})
    assert_close(got, cpu(xml, {"x": X}), rtol=2e-6)
    values = list(got.values())
    np.testing.assert_allclose(values[0], np.exp((X + np.float32(1000.3)) - np.float32(1000.3)), rtol=1e-6)
    assert values[1].dtype == np.float16
    # declared: the Convert rounds to f16
    d = list(irexec.load(xml, precision="declared").infer({"x": X}).values())
    a16 = (X + np.float32(1000.3)).astype(np.float16)
    np.testing.assert_allclose(d[0], np.exp(np.maximum(a16, 0).astype(np.float32) - np.float32(1000.3)), rtol=1e-6)


@pytest.mark.parametrize("precision", ["f32", "declared"])
def test_bf16_layers_round_to_bf16_in_both_precisions(tmp_path, precision):
    """The CPU plugin keeps bf16 layers in bf16 even with INFERENCE_PRECISION_HINT=f32 (on a CPU
    with native bf16): a Convert to bf16 inside the graph rounds, and so does a bf16 Multiply.
    Both checked against numpy's bf16 rounding, and against the CPU plugin where the CPU has bf16
    (elsewhere the plugin runs them in f32)."""
    p = param("x", (2, 3), np.float32)
    a = op.add(p, const(np.float32(1000.3)))
    middle = op.convert(op.relu(op.convert(a, "bf16")), "f32")
    rounded = op.exp(op.subtract(middle, const(np.float32(1000.3))))
    b = op.convert(p, "bf16")
    tripled = op.convert(op.multiply(b, op.convert(const(np.float32(3.0)), "bf16")), "f32")
    xml = save(tmp_path, [p], [rounded, tripled], v10=False)
    m = irexec.load(xml, precision=precision)
    assert m.validate().ok
    got = m.infer({"x": X})
    if oc.cpu_has_bf16():
        assert_close(got, cpu(xml, {"x": X}), rtol=1e-6)
    from irexec.dtypes import round_bf16

    middle = np.maximum(round_bf16(X + np.float32(1000.3)), 0).astype(np.float32)
    np.testing.assert_allclose(list(got.values())[0], np.exp(middle - np.float32(1000.3)), rtol=1e-6)
    np.testing.assert_array_equal(list(got.values())[1], round_bf16(3 * round_bf16(X)))


@pytest.mark.parametrize("weight_et", ["f16", "u8", "i8", "u4", "i4"])
def test_weight_decompression_is_exact_in_both_precisions(tmp_path, weight_et):
    rng = np.random.default_rng(1)
    np_type = {"f16": np.float16, "u8": np.uint8, "i8": np.int8, "u4": np.uint8, "i4": np.int8}[weight_et]
    if weight_et == "f16":
        w = op.constant(rng.standard_normal((4, 3)).astype(np.float16))
        weights = op.convert(w, "f32")
    else:
        lo, hi = {"u8": (0, 255), "i8": (-128, 127), "u4": (0, 15), "i4": (-8, 7)}[weight_et]
        raw = rng.integers(lo, hi + 1, (4, 3)).astype(np_type)
        w = op.constant(raw, dtype=ov.Type(weight_et))
        zero = op.convert(op.constant(np.full((4, 1), (lo + hi) // 2, np_type), dtype=ov.Type(weight_et)), "f32")
        scale = const(rng.random((4, 1)).astype(np.float32))
        weights = op.multiply(op.subtract(op.convert(w, "f32"), zero), scale)
    p = param("x", (2, 3), np.float32)
    out = op.matmul(p, weights, False, True)
    xml = save(tmp_path, [p], [out], v10=False)
    results = []
    for precision in ("f32", "declared"):
        m = irexec.load(xml, precision=precision)
        assert m.validate().ok
        results.append(next(iter(m.infer({"x": X}).values())))
    np.testing.assert_array_equal(results[0], results[1])
    assert_close(dict(enumerate(results[:1])), cpu(xml, {"x": X}), rtol=1e-5)


def test_bad_precision_is_a_usage_error(tmp_path):
    p, out = f16_chain(np.float16)
    xml = save(tmp_path, [p], [out])
    with pytest.raises(UsageError, match="precision='f16'"):
        irexec.load(xml, precision="f16")


# ---- the command line -------------------------------------------------------------------


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "irexec", *map(str, args)], capture_output=True, text=True, timeout=120
    )


def test_cli_precision_option(tmp_path):
    p, out = f16_chain(np.float16)
    xml = save(tmp_path, [p], [out])
    np.save(tmp_path / "x.npy", X)
    outs = {}
    for precision in ("f32", "declared"):
        proc = _cli(
            "run", xml, "-i", f"x={tmp_path / 'x.npy'}", "--precision", precision, "-o", tmp_path / f"{precision}.npz"
        )
        assert proc.returncode == 0, proc.stderr
        with np.load(tmp_path / f"{precision}.npz") as z:
            outs[precision] = z[z.files[0]]
    m = irexec.load(xml, precision="declared")
    np.testing.assert_array_equal(outs["declared"], next(iter(m.infer({"x": X}).values())))
    np.testing.assert_array_equal(outs["f32"], next(iter(irexec.load(xml).infer({"x": X}).values())))
    proc = _cli("info", xml, "--precision", "declared", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout[proc.stdout.index("{") :])
    assert info["precision"] == "declared" and info["inputs"][0]["element_type"] == "f32"
    proc = _cli("validate", xml, "--json", "-")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["ok"] and [i["element_type"] for i in report["inputs"]] == ["f32"]
    assert [o["element_type"] for o in report["outputs"]] == ["f32"]
    proc = _cli("run", xml, "--precision", "f64")
    assert proc.returncode == 2 and "precision" in proc.stderr


# ---- <pre-process> ----------------------------------------------------------------------

_PP_NET = """<?xml version="1.0" ?>
<net name="pp" version="10">
    <pre-process mean-precision="FP32"{ref}>
{channels}
    </pre-process>
    <layers>
        <layer name="input" type="Parameter" id="0" version="opset1">
            <data shape="{shape}" element_type="{et}"/>
            <output>
                <port id="0" precision="{prec}">{dims}</port>
            </output>
        </layer>
        <layer name="relu" type="ReLU" id="1" version="opset1">
            <input>
                <port id="0" precision="{prec}">{dims}</port>
            </input>
            <output>
                <port id="1" precision="{prec}">{dims}</port>
            </output>
        </layer>
        <layer name="output" type="Result" id="2" version="opset1">
            <input>
                <port id="0" precision="{prec}">{dims}</port>
            </input>
        </layer>
    </layers>
    <edges>
        <edge from-layer="0" from-port="0" to-layer="1" to-port="0"/>
        <edge from-layer="1" from-port="1" to-layer="2" to-port="0"/>
    </edges>
</net>
"""


def pp_model(tmp_path, channels: str, *, shape=(1, 3, 2, 2), et="f32", ref=' reference-layer-name="input"', bin=None):
    prec = {"f32": "FP32", "f16": "FP16", "u8": "U8", "i32": "I32"}[et]
    dims = "".join(f"<dim>{d}</dim>" for d in shape)
    text = _PP_NET.format(ref=ref, channels=channels, shape=",".join(map(str, shape)), et=et, prec=prec, dims=dims)
    xml = tmp_path / "pp.xml"
    xml.write_text(text)
    if bin is not None:
        (tmp_path / "pp.bin").write_bytes(bin)
    return xml


def values(*vs, ids=True):
    return "\n".join(
        f'<channel{f" id={chr(34)}{i}{chr(34)}" if ids else ""}><mean value="{v}"/></channel>' for i, v in enumerate(vs)
    )


def images(n, size, step, et_bytes=4, offset0=0):
    return "\n".join(
        f'<channel id="{i}"><mean offset="{offset0 + i * step}" size="{size}"/></channel>' for i in range(n)
    )


def _pp_check(xml: Path, precision="f32", hint="f32"):
    m = irexec.load(xml, precision=precision)
    check_presented(m, xml)
    assert m.validate().ok
    x = (np.arange(np.prod(m.inputs[0].shape)).reshape(m.inputs[0].shape) * 0.37 - 1).astype(m.inputs[0].dtype)
    got = m.infer({"input": x})
    assert_close(got, cpu(xml, {"input": x}, hint), rtol=0, atol=0)
    return m, x, next(iter(got.values()))


def test_pre_process_mean_values(tmp_path):
    m, x, got = _pp_check(pp_model(tmp_path, values(1.1, 2.2, -3.3)))
    mean = np.array([1.1, 2.2, -3.3], np.float32).reshape(1, 3, 1, 1)
    np.testing.assert_array_equal(got, np.maximum(x - mean, 0))
    assert [layer.type for layer in m.layer_infos()][:3] == ["Parameter", "Const", "Subtract"]


def test_pre_process_channel_ids_default_to_positions(tmp_path):
    _pp_check(pp_model(tmp_path, values(0.5, 1.5, 2.5, ids=False)))


def test_pre_process_without_reference_takes_the_first_4d_input(tmp_path):
    _pp_check(pp_model(tmp_path, values(0.5, 1.5, 2.5), ref=""))


@pytest.mark.parametrize("shape", [(2, 3), (3, 2, 2), (1, 3, 2, 2, 2)])
def test_pre_process_ranks(tmp_path, shape):
    _pp_check(pp_model(tmp_path, values(0.5, 1.5, 2.5), shape=shape))


@pytest.mark.parametrize("precision", ["f32", "declared"])
def test_pre_process_fp16_input_means_rounded_to_f16(tmp_path, precision):
    xml = pp_model(tmp_path, values(1.1, 2.2, 3.3), et="f16")
    _, x, got = _pp_check(xml, precision, "f32" if precision == "f32" else "f16")
    mean16 = np.array([1.1, 2.2, 3.3], np.float32).astype(np.float16).reshape(1, 3, 1, 1)
    if precision == "f32":
        np.testing.assert_array_equal(got, np.maximum(x - mean16.astype(np.float32), 0))
    else:
        np.testing.assert_array_equal(got, np.maximum(x.astype(np.float16) - mean16, 0).astype(np.float32))


def test_pre_process_mean_image(tmp_path):
    mean = (np.arange(12, dtype=np.float32) * 0.5 - 1).reshape(3, 1, 2, 2)
    xml = pp_model(tmp_path, images(3, 16, 16), bin=mean[::-1].tobytes())
    _, x, got = _pp_check(xml)
    np.testing.assert_array_equal(got, np.maximum(x - mean[::-1].reshape(1, 3, 2, 2), 0))


@pytest.mark.parametrize("precision", ["f32", "declared"])
def test_pre_process_fp16_mean_image(tmp_path, precision):
    mean = (np.arange(12, dtype=np.float32) * 0.501).astype(np.float16)
    xml = pp_model(tmp_path, images(3, 8, 8), et="f16", bin=mean.tobytes())
    _pp_check(xml, precision, "f32" if precision == "f32" else "f16")


def test_pre_process_integer_input(tmp_path):
    _pp_check(pp_model(tmp_path, values(1, -2, 3), et="i32"))


def test_pre_process_scale_is_ignored_as_openvino_does(tmp_path):
    channels = "\n".join(f'<channel id="{i}"><mean value="{i}"/><scale value="2.0"/></channel>' for i in range(3))
    m, x, got = _pp_check(pp_model(tmp_path, channels))
    assert m.scale_ignored and "scale" in m.info()["warnings"][0]
    np.testing.assert_array_equal(got, np.maximum(x - np.arange(3, dtype=np.float32).reshape(1, 3, 1, 1), 0))
    for command in ("run", "validate"):
        proc = _cli(command, tmp_path / "pp.xml")
        assert proc.returncode == 0 and "<scale> values are ignored" in proc.stderr, proc.stderr


def test_pre_process_channels_without_mean_add_nothing(tmp_path):
    m, x, got = _pp_check(pp_model(tmp_path, '<channel id="0"></channel>'))
    np.testing.assert_array_equal(got, np.maximum(x, 0))


def _ov_refuses(xml: Path) -> None:
    with pytest.raises(RuntimeError):
        oc.ov_core().read_model(str(xml))


@pytest.mark.parametrize(
    "channels, message",
    [
        (values(1.1, 2.2), "has 2 mean"),
        (values(1, 2, 3, 4), "has 4 mean"),
        (
            '<channel id="0"><mean value="1"/></channel><channel id="5"><mean value="2"/></channel>'
            '<channel id="2"><mean value="3"/></channel>',
            "channel id 5 is out of range",
        ),
        ('<channel id="0"><mean/></channel>', "no value or size"),
        (images(3, 12, 16), "size 12, expected 16"),
        ('<channel id="0"><mean value="1" offset="0" size="16"/></channel>', "mixes mean values and mean images"),
        (images(3, 16, 16, offset0=8), "past the end"),
    ],
)
def test_pre_process_errors_like_openvino(tmp_path, channels, message):
    xml = pp_model(tmp_path, channels, bin=np.zeros(12, np.float32).tobytes())
    _ov_refuses(xml)
    with pytest.raises(FormatError, match=message) as e:
        irexec.load(xml)
    assert "input" in str(e.value)


@pytest.mark.parametrize(
    "channels, message, bin",
    [
        # OpenVINO 2026.4 crashes (a segmentation fault) on a mean image without a .bin
        (images(3, 16, 16), "does not exist", None),
        # OpenVINO silently skips a block whose mean has a size and no offset
        ("\n".join(f'<channel id="{i}"><mean size="16"/></channel>' for i in range(3)), "no offset", b"\0" * 48),
        # OpenVINO keeps one of two means given for one channel, by its set order
        (
            '<channel id="0"><mean value="1"/></channel><channel id="0"><mean value="2"/></channel>'
            '<channel id="2"><mean value="3"/></channel>',
            "channel id 0 appears twice",
            None,
        ),
        ('<channel id="0"><mean value="abc"/></channel>', "not a number", None),
    ],
)
def test_pre_process_irexec_refuses_what_it_cannot_stand_behind(tmp_path, channels, message, bin):
    xml = pp_model(tmp_path, channels, bin=bin)
    with pytest.raises(FormatError, match=message):
        irexec.load(xml)


def test_pre_process_refusals_name_the_input(tmp_path):
    xml = pp_model(tmp_path, values(1, 2, 3), ref=' reference-layer-name="nope"')
    _ov_refuses(xml)
    with pytest.raises(FormatError, match="'nope'"):
        irexec.load(xml)
    xml = pp_model(tmp_path, values(1.5, 2, 3), et="u8")
    with pytest.raises(FormatError, match="'input' \\(u8\\).*not"):
        irexec.load(xml)
    text = pp_model(tmp_path, values(1, 2, 3)).read_text().replace('shape="1,3,2,2"', 'shape="?,3,2,2"')
    (tmp_path / "pp.xml").write_text(text)
    _ov_refuses(tmp_path / "pp.xml")
    with pytest.raises(FormatError, match="'input': its shape is not static"):
        irexec.load(tmp_path / "pp.xml")


# ---- Broadcast-1 without mode -----------------------------------------------------------


def _broadcast_file(tmp_path, mode: str | None, with_axes: bool = True) -> Path:
    import openvino.opset1 as o1

    p = param("data", (3,), np.float32)
    if with_axes:
        b = o1.broadcast(p, const(np.array([2, 3, 4], np.int64)), const(np.array([1], np.int64)), "explicit")
    else:
        b = o1.broadcast(p, const(np.array([2, 3], np.int64)))
    xml = save(tmp_path, [p], [b])
    text = xml.read_text()
    written = re.search(r'<data mode="([a-z]+)" />', text).group(1)
    assert written == ("none" if with_axes else "numpy")  # OpenVINO writes explicit as "none"
    new = "" if mode is None else f'<data mode="{mode}" />'
    xml.write_text(text.replace(f'<data mode="{written}" />', new))
    return xml


@pytest.mark.parametrize("mode", [None, "none", "explicit"])
def test_broadcast1_explicit_without_mode_or_as_none(tmp_path, mode):
    xml = _broadcast_file(tmp_path, mode)
    x = np.array([1, 2, 3], np.float32)
    m = irexec.load(xml)
    check_presented(m, xml)
    assert m.validate().ok
    got = m.infer({"data": x})
    assert_close(got, cpu(xml, {"data": x}), rtol=0, atol=0)
    np.testing.assert_array_equal(next(iter(got.values())), np.broadcast_to(x.reshape(1, 3, 1), (2, 3, 4)))


def test_broadcast1_without_mode_and_without_axes_fails_as_in_openvino(tmp_path):
    xml = _broadcast_file(tmp_path, None, with_axes=False)
    _ov_refuses(xml)
    with pytest.raises(ShapeInferenceError, match="axes_mapping"):
        irexec.load(xml)


# ---- a hand-written v10 file in Model Optimizer's style ---------------------------------

_MO_STYLE = """<?xml version="1.0" ?>
<net name="saved_model" version="10">
\t<layers>
\t\t<layer id="0" name="input_a" type="Parameter" version="opset1">
\t\t\t<data shape="1,3,4" element_type="f32"/>
\t\t\t<output>
\t\t\t\t<port id="0" precision="FP32"><dim>1</dim><dim>3</dim><dim>4</dim></port>
\t\t\t</output>
\t\t</layer>
\t\t<layer id="1" name="PartitionedCall/functional_1/tf_op_layer_Cast/Cast" type="Convert" version="opset1">
\t\t\t<data destination_type="f16"/>
\t\t\t<input>
\t\t\t\t<port id="0"><dim>1</dim><dim>3</dim><dim>4</dim></port>
\t\t\t</input>
\t\t\t<output>
\t\t\t\t<port id="1" precision="FP16"><dim>1</dim><dim>3</dim><dim>4</dim></port>
\t\t\t</output>
\t\t</layer>
\t\t<layer id="2" name="Identity/sink_port_0" type="Result" version="opset1">
\t\t\t<input>
\t\t\t\t<port id="0"><dim>1</dim><dim>3</dim><dim>4</dim></port>
\t\t\t</input>
\t\t</layer>
\t</layers>
\t<edges>
\t\t<edge from-layer="0" from-port="0" to-layer="1" to-port="0"/>
\t\t<edge from-layer="1" from-port="1" to-layer="2" to-port="0"/>
\t</edges>
</net>
"""


@pytest.mark.parametrize("precision", ["f32", "declared"])
def test_model_optimizer_style_v10_file(tmp_path, precision):
    """No tensor names, input ports without precision, a Convert to f16 feeding the Result (the
    shape of OpenVINO's own v10 reader tests): inputs are named after their layer, the output
    after its Result and, as OpenVINO adds, its producer; the f16 output is presented as f32,
    unrounded under "f32" (as the CPU plugin gives it), rounded under "declared"."""
    xml = tmp_path / "mo.xml"
    xml.write_text(_MO_STYLE)
    m = irexec.load(xml, precision=precision)
    check_presented(m, xml)
    assert m.validate().ok
    assert [i.name for i in m.inputs] == ["input_a"] and [o.name for o in m.outputs] == ["Identity/sink_port_0"]
    x = (np.arange(12, dtype=np.float32).reshape(1, 3, 4) + 1) / 3
    got = m.infer({"input_a": x})
    np.testing.assert_array_equal(
        got["PartitionedCall/functional_1/tf_op_layer_Cast/Cast"], got["Identity/sink_port_0"]
    )
    if precision == "f32":
        assert_close(got, cpu(xml, {"input_a": x}), rtol=0, atol=0)
        np.testing.assert_array_equal(got["Identity/sink_port_0"], x)
    else:
        np.testing.assert_array_equal(got["Identity/sink_port_0"], x.astype(np.float16).astype(np.float32))


# ---- many op families in an FP16 v10 file -----------------------------------------------


def _f16_ops_graph(dynamic: bool):
    x = param("x", (None, 4, 6) if dynamic else (2, 4, 6))
    w = const((np.random.default_rng(3).standard_normal((6, 5)) * 0.5).astype(np.float16))
    i64 = lambda *v: const(np.array(v, np.int64))  # noqa: E731
    mm = op.matmul(x, w, False, False)
    outs = [
        op.softmax(mm, 2),
        op.mvn(x, i64(2), True, 1e-5, "inside_sqrt"),
        op.reduce_mean(x, i64(1, 2), False),
        op.concat([op.sigmoid(x), op.tanh(x)], 1),
        op.transpose(op.sqrt(op.abs(x)), i64(2, 0, 1)),
        op.gather(x, i64(3, 0), i64(2), 0),
        op.divide(op.power(op.abs(x), const(np.float16(1.5))), op.add(op.abs(x), const(np.float16(1.0)))),
        op.range(const(np.float16(0.5)), const(np.float16(3.0)), const(np.float16(0.25)), "f16"),
        op.convert(op.shape_of(x), "f16"),
        op.topk(x, const(np.int64(2)), 2, "max", "value").output(1),  # i64 indices -> i32 in v10
        op.greater(x, const(np.float16(0.1))),  # boolean -> f32 in v10
    ]
    return x, outs


@pytest.mark.parametrize("dynamic", [False, True])
def test_v10_fp16_ops_against_openvino(tmp_path, dynamic):
    x, outs = _f16_ops_graph(dynamic)
    xml = save(tmp_path, [x], outs)
    m = irexec.load(xml)
    check_presented(m, xml)
    assert m.validate().ok, m.validate().issues
    feed = (np.random.default_rng(4).standard_normal((2, 4, 6)) * 2).astype(np.float32)
    got = m.infer({"x": feed})
    assert_close(got, cpu(xml, {"x": feed}), rtol=2e-5, atol=1e-5)
    declared = irexec.load(xml, precision="declared")
    assert declared.validate().ok
    d = declared.infer({"x": feed})
    for (name, a), b in zip(got.items(), d.values()):
        assert a.dtype == b.dtype and a.shape == b.shape, name
        np.testing.assert_allclose(a, b, rtol=2e-2, atol=2e-2, err_msg=name)  # f16 rounding apart


@pytest.mark.parametrize("et", ["f64", "bf16", "i64", "u16", "u8", "boolean"])
def test_v10_presented_types_of_other_inputs_and_outputs(tmp_path, et):
    """read_model's presentation of an input of type `et` (only f16 changes) and of an output of
    that type (i64 -> i32, the rest -> f32), and irexec's."""
    x = op.parameter([2, 3], getattr(ov.Type, et), name="x")
    x.output(0).get_tensor().set_names({"x"})
    xml = save(tmp_path, [x], [op.convert(x, et), op.convert(x, "f32")])
    m = irexec.load(xml)
    check_presented(m, xml)
    assert m.inputs[0].element_type == et
    assert m.outputs[0].element_type == ("i32" if et == "i64" else "f32")


@pytest.mark.parametrize("v10", [True, False])
def test_pre_process_without_reference_skips_inputs_that_are_not_4d(tmp_path, v10):
    """Without reference-layer-name OpenVINO takes the first Parameter of rank 4 (here the
    second input), in v11 files too."""
    a, b = param("a", (1, 3), np.float32), param("b", (1, 3, 2, 2), np.float32)
    xml = save(tmp_path, [a, b], [op.relu(a), op.relu(b)], v10=v10)
    text = xml.read_text()
    head = text.index(">", text.index("<net ")) + 1
    xml.write_text(text[:head] + "\n<pre-process>" + values(0.25, 0.5, 1.0) + "</pre-process>" + text[head:])
    m = irexec.load(xml)
    check_presented(m, xml)
    feeds = {"a": np.full((1, 3), 2.0, np.float32), "b": np.full((1, 3, 2, 2), 2.0, np.float32)}
    got = m.infer(feeds)
    assert_close(got, cpu(xml, feeds), rtol=0, atol=0)
    np.testing.assert_array_equal(list(got.values())[0], feeds["a"])
    np.testing.assert_array_equal(list(got.values())[1][0, :, 0, 0], [1.75, 1.5, 1.0])
