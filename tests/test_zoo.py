"""Real architectures, end to end: every IR file of tests/zoo (written by OpenVINO from tiny
random-weight torchvision, timm and transformers models, see tools/make_zoo.py) loads, validates
clean, and matches OpenVINO CPU's stored outputs on the stored inputs
(max abs error <= 1e-3 * max |expected|); `irexec run` works on each. No torch needed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import irexec

ZOO = Path(__file__).parent / "zoo"
MODELS = sorted(p.stem for p in ZOO.glob("*.xml"))


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
    total = sum(f.stat().st_size for f in ZOO.iterdir())
    assert total < 8 << 20, f"the zoo takes {total} bytes"


@pytest.mark.parametrize("jit_mode", ["never", "always"])
@pytest.mark.parametrize("name", MODELS)
def test_zoo_model_matches_openvino(name, jit_mode, monkeypatch):
    """Both paths against OpenVINO: the numpy paths, and the numba kernels (which a long-lived
    process takes whatever the size)."""
    from irexec import config

    monkeypatch.setattr(config, "JIT", jit_mode)
    ins, outs, _ = _data(name)
    m = irexec.load(ZOO / f"{name}.xml")
    report = m.validate()
    assert report.ok, "\n".join(str(i) for i in report.issues[:10])
    got = m.infer(ins)
    assert set(got) == set(outs), (sorted(got), sorted(outs))
    for key, want in outs.items():
        g = got[key]
        assert g.shape == want.shape, f"{name} output {key}: shape {g.shape}, OpenVINO {want.shape}"
        if want.dtype.kind in "iub":
            np.testing.assert_array_equal(g, want, err_msg=f"{name} output {key}")
            continue
        scale = float(np.max(np.abs(want)))
        assert scale > 0, f"{name} output {key} is all zeros: the comparison would prove nothing"
        err = float(np.max(np.abs(g.astype(np.float64) - want.astype(np.float64))))
        assert err <= 1e-3 * scale, f"{name} output {key}: max abs error {err:.3g}, max |expected| {scale:.3g}"


@pytest.mark.parametrize("name", MODELS)
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
