"""OpenVINO as the oracle for one op graph: build it with OpenVINO's opset API, write it with
`ov.save_model`, and check that irexec (1) infers every layer's shape and type as `read_model`
does, (2) finds nothing to report in `validate`, (3) computes what OpenVINO's CPU plugin computes
(f32 inference precision) within the given tolerance.

Family test files use `check(tmp_path, params, outputs, feeds)` with OpenVINO nodes built from `ops()`
(the newest opset module) and declare the (type, version) pairs they cover in `OPS_TESTED`.
"""

from __future__ import annotations

import numpy as np
import pytest

import irexec
from tests.support import ov_corpus as oc


def ov():
    return pytest.importorskip("openvino")


def ops(version: int = 16):
    """OpenVINO's opset module (default opset16: every op this project implements is in it)."""
    ov()
    import importlib

    return importlib.import_module(f"openvino.opset{version}")


def param(name: str, shape, dtype=np.float32):
    """An OpenVINO Parameter whose tensor name is `name` (None dims are dynamic)."""
    o = ops()
    ovm = ov()
    ps = ovm.PartialShape([-1 if d is None else d for d in shape])
    p = o.parameter(ps, ovm.Type(np.dtype(dtype)), name=name)
    p.output(0).get_tensor().set_names({name})
    return p


def check(
    tmp_path,
    params,
    outputs,
    feeds: dict,
    *,
    rtol: float = 1e-4,
    atol: float = 1e-5,
    compress: bool = False,
    name: str = "m",
    values: bool = True,
) -> dict:
    """Save the graph from `params` (made with `param`) to `outputs` (nodes or node outputs),
    load it with irexec, compare shapes with read_model, run both, compare values. `feeds` maps
    the parameters' names to arrays. Returns irexec's outputs by name."""
    ovm = ov()
    outs = [o if hasattr(o, "get_node") else o.output(0) for o in outputs]
    results = [ops().result(o) for o in outs]
    model = ovm.Model(results, list(params), name)
    xml = tmp_path / f"{name}.xml"
    with oc.no_telemetry():
        ovm.save_model(model, str(xml), compress_to_fp16=compress)
    m = irexec.load(xml)
    problems = oc.shape_mismatches(m, xml)
    assert not problems, "\n  ".join(problems)
    report = m.validate()
    assert report.ok, "\n  ".join(str(i) for i in report.issues)
    got = m.infer(feeds)
    if not values:  # shapes only (where OpenVINO's CPU plugin cannot run the graph)
        return got
    compiled = oc.ov_core().compile_model(str(xml), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    ov_feeds = {}
    for port in compiled.inputs:
        ov_feeds[port.get_any_name()] = feeds[next(n for n in port.get_names() if n in feeds)]
    res = compiled(ov_feeds)
    want = [res[o] for o in compiled.outputs]
    for (oname, g), w in zip(got.items(), want):
        w = np.asarray(w)
        assert g.shape == w.shape, f"output {oname}: shape {g.shape}, OpenVINO {w.shape}"
        if g.dtype.kind in "fc":
            np.testing.assert_allclose(
                g.astype(np.float64),
                w.astype(np.float64),
                rtol=rtol,
                atol=atol,
                equal_nan=True,
                err_msg=f"output {oname}",
            )
        else:
            np.testing.assert_array_equal(g, w.astype(g.dtype), err_msg=f"output {oname}")
    return got


def reference(node, feeds: dict) -> np.ndarray:
    """Output 0 of one OpenVINO node computed by OpenVINO's reference implementation
    (`Node.evaluate`) on `feeds` (by Parameter tensor name) and its Constants' values: the oracle
    where the CPU plugin departs from the reference (a NaN input, say)."""
    ovm = ov()
    tensors = []
    for value in node.input_values():
        source = value.get_node()
        if source.get_type_name() == "Parameter":
            array = feeds[next(n for n in value.get_names() if n in feeds)]
        else:
            array = source.get_data()
        tensors.append(ovm.Tensor(np.ascontiguousarray(array)))
    first = tensors[0].get_shape()
    out = [ovm.Tensor(node.get_output_element_type(0), first)]
    assert node.evaluate(out, tensors), f"{node.get_type_name()} has no reference for these inputs"
    return out[0].data.copy()
