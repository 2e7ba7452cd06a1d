"""OpenVINO as the shape oracle: every IR that OpenVINO writes loads in irexec, and every layer's
output shape and element type, as irexec infers them at load, equal OpenVINO's own inference
(``ov.Core().read_model(xml)``), dynamic dims included (an OpenVINO dynamic or interval dim is None,
a dynamic rank is None). ``validate`` finds nothing to report in OpenVINO-written IR: OpenVINO's
declared dims are the truth.

Corpora (tests/support/ov_corpus.py): graphs made with openvino.opset13 (every reduction x axes patterns x
keep_dims on static / partially dynamic / rank-0 data, runtime axes, axes through constant chains,
the SPEC §2.3 glue ops), and the ONNX backend node tests of the reduction family and Mean as
converted by ``ov.convert_model``.
"""

from __future__ import annotations

import pytest

from tests.support import ov_corpus as oc

OPSET13_IDS = oc.opset13_model_ids()
ONNX_IDS = oc.onnx_ids()
_load = oc.load_or_fail


# ---- the opset13 corpus -------------------------------------------------------------------------


@pytest.mark.parametrize("model_id", OPSET13_IDS)
def test_opset13_layer_shapes_match_openvino(opset13, model_id):
    m = opset13[model_id]
    model = _load(m.xml)
    problems = oc.shape_mismatches(model, m.xml)
    assert not problems, f"{m.xml.name}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("model_id", OPSET13_IDS)
def test_opset13_validate_ok(opset13, model_id):
    m = opset13[model_id]
    report = _load(m.xml).validate()
    assert report.layers, "validate listed no layer"
    assert report.ok, f"{m.xml.name}:\n  " + "\n  ".join(str(i) for i in report.issues)
    assert not report.unused, f"unused layers in OpenVINO-written IR: {[u.name for u in report.unused]}"


def test_opset13_corpus_covers_the_spec_ops(opset13):
    """The corpus really holds what it claims: every OpenVINO reduction, every SPEC §2.3 glue op,
    f16-compressed constants (Const f16 -> Convert f32 with decompression), and both the
    compressed and uncompressed writing of the same graph."""
    seen = set()
    for m in opset13.values():
        seen |= oc.layer_types(m.xml)
    types = {t for t, _ in seen}
    want = set(oc.REDUCE_TYPES.values()) | {
        "Parameter",
        "Const",
        "Result",
        "Convert",
        "ConvertLike",
        "Add",
        "Subtract",
        "Multiply",
        "Divide",
        "Maximum",
        "Minimum",
        "Power",
        "Abs",
        "Exp",
        "Log",
        "Sqrt",
        "Negative",
        "Squeeze",
        "Unsqueeze",
        "Reshape",
        "ShapeOf",
        "Range",
    }
    assert want <= types, f"missing from the corpus: {sorted(want - types)}"
    assert ("Range", "opset4") in seen
    assert ("ReduceL1", "opset4") in seen and ("ReduceL2", "opset4") in seen
    compressed = [m for m in opset13.values() if m.compressed and m.has_f32_consts]
    plain = [m for m in opset13.values() if not m.compressed]
    assert compressed and len(plain) == len(compressed)
    for m in compressed:
        text = m.xml.read_text()
        assert 'element_type="f16"' in text and 'destination_type="f32"' in text and "decompression" in text, m.name
    for m in plain:
        assert 'element_type="f16"' not in m.xml.read_text(), m.name


@pytest.mark.parametrize("model_id", [i for i in OPSET13_IDS if "_runtime_" in i])
def test_runtime_axes_shapes_follow_spec(opset13, model_id):
    """SPEC §2.1 for axes from a runtime input, checked directly (OpenVINO agrees, see above):
    keep_dims=true: same rank, every dim dynamic; keep_dims=false with one axis (scalar or
    1-element axes): rank-1, dims dynamic; otherwise a dynamic rank."""
    m = opset13[model_id]
    model = _load(m.xml)
    outs = {o.name: o for o in model.outputs}
    assert len(outs) >= 4
    for name, out in outs.items():
        data, axes = name.split("_", 1)  # x: [2,3,4], y: [?,3,1..8]
        rank = 3
        if "_runtime_keep" in m.name:
            assert out.shape == (None,) * rank, (name, out.shape)
        elif axes in ("a_scalar", "a_one"):
            assert out.shape == (None,) * (rank - 1), (name, out.shape)
        else:
            assert out.shape is None, (name, out.shape)


# ---- the ONNX node tests converted by OpenVINO ---------------------------------------------------


@pytest.mark.parametrize("case_name", ONNX_IDS)
def test_onnx_converted_ir_shapes_match_openvino(onnx_cases, case_name):
    case, model = oc.converted_case(onnx_cases, case_name)
    problems = oc.shape_mismatches(model, case.xml)
    assert not problems, f"{case.xml.name}:\n  " + "\n  ".join(problems)
    report = model.validate()
    assert report.ok, f"{case.xml.name}:\n  " + "\n  ".join(str(i) for i in report.issues)


def test_onnx_corpus_is_complete(onnx_cases):
    """Every ONNX reduction family member and Mean is in the corpus, and each was converted."""
    ops = set()
    for c in onnx_cases.values():
        ops |= set(c.op_types)
    want = {
        "ReduceMean",
        "ReduceSum",
        "ReduceProd",
        "ReduceMax",
        "ReduceMin",
        "ReduceL1",
        "ReduceL2",
        "ReduceLogSum",
        "ReduceLogSumExp",
        "ReduceSumSquare",
        "Mean",
    }
    assert want <= ops, f"missing ONNX ops: {sorted(want - ops)}"
    refused = {n: c.convert_error for n, c in onnx_cases.items() if c.xml is None}
    assert len(onnx_cases) == len(ONNX_IDS)
    # a refusal is OpenVINO's business, but it must not hide a whole op family
    assert len(refused) < len(onnx_cases), refused
