"""Outputs the caller owns, weights that cannot change underfoot, the command line's file and
argument handling, and the IR quirks of files OpenVINO reads (issue: outputs you can trust)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import irexec
from irexec.cli import main as cli_main
from irexec.ops.registry import MAX_OPSET
from tests.support.irbuild import Net

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cli(*args):
    return cli_main([str(a) for a in args])


def _const_model(tmp_path, name="c"):
    """x -> ReduceSum(axes 1) -> y, plus a Const -> Result 'k', a ShapeOf(x) -> Result 's',
    the same reduction to two Results, and x straight to a Result."""
    n = Net(name)
    x = n.param("x", "f32", (2, 3))
    r = n.op("ReduceSum", [x, n.const(np.array([1], np.int64))], {"keep_dims": "false"}, out_dims=[2])
    n.result(r, "y")
    n.result(r, "y2")
    n.result(n.const(np.array([3.0, 4.0], np.float32)), "k")
    n.result(n.op("ShapeOf", [x], version="opset3", out_et="i64", out_dims=[2]), "s")
    n.result(x, "xx")
    return n.save(tmp_path / f"{name}.xml")


def test_outputs_are_owned_by_the_caller(tmp_path):
    m = irexec.load(_const_model(tmp_path))
    x = np.ones((2, 3), np.float32)
    out = m.infer({"x": x})
    assert out["y"] is not out["y2"]
    assert not np.shares_memory(out["xx"], x)
    values = list(out.values())
    for i, v in enumerate(values):
        assert v.flags.writeable
        assert not any(np.shares_memory(v, w) for w in values[i + 1 :])
    out["k"][:] = 99
    out["s"][:] = 99
    out["y"][:] = 99
    out["xx"][:] = 99
    again = m.infer({"x": x})
    np.testing.assert_array_equal(again["k"], [3.0, 4.0])
    np.testing.assert_array_equal(again["s"], [2, 3])
    np.testing.assert_array_equal(again["y2"], [3.0, 3.0])
    np.testing.assert_array_equal(x, 1.0)


def test_outputs_owned_across_threads(tmp_path):
    m = irexec.load(_const_model(tmp_path))
    bad = []

    def work():
        for _ in range(50):
            out = m.infer({"x": np.ones((2, 3), np.float32)})
            if out["k"].tolist() != [3.0, 4.0]:
                bad.append(out["k"].tolist())
            out["k"][:] = -1

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad


def _weights_model(tmp_path):
    n = Net("w")
    x = n.param("x", "f32", (4,))
    n.result(n.op("Add", [x, n.const(np.full(4, 1024.0, np.float32))]), "y")
    return n.save(tmp_path / "w.xml")


def test_weights_rewritten_in_place_is_refused(tmp_path):
    xml = _weights_model(tmp_path)
    m = irexec.load(xml)
    copy = irexec.load(xml, mmap=False)
    x = np.zeros(4, np.float32)
    assert m.infer({"x": x})["y"].tolist() == [1024.0] * 4
    b = xml.with_suffix(".bin")
    with open(b, "r+b") as f:  # same size, new values: what a mapped model would silently follow
        f.write(np.full(4, 2048.0, np.float32).tobytes())
    st = b.stat()
    os.utime(b, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    with pytest.raises(irexec.WeightsError, match="changed since the model was loaded"):
        m.infer({"x": x})
    assert copy.infer({"x": x})["y"].tolist() == [1024.0] * 4


def test_weights_truncated_is_an_error_not_a_crash(tmp_path):
    xml = _weights_model(tmp_path)
    code = (
        "import irexec, numpy as np, os\n"
        f"m = irexec.load({str(xml)!r})\n"
        f"os.truncate({str(xml.with_suffix('.bin'))!r}, 0)\n"
        "try:\n    m.infer({'x': np.zeros(4, np.float32)})\n"
        "except irexec.WeightsError as e:\n    print('refused:', e)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "refused:" in proc.stdout and "16 to 0 bytes" in proc.stdout


def test_no_mmap_flag(tmp_path, capsys):
    assert cli("run", _weights_model(tmp_path), "--no-mmap") == 0


def test_load_takes_an_explicit_weights_path(tmp_path):
    xml = _weights_model(tmp_path)
    other = tmp_path / "elsewhere.bin"
    xml.with_suffix(".bin").rename(other)
    with pytest.raises(irexec.WeightsError):
        irexec.load(xml)
    m = irexec.load(xml, bin=other)
    assert m.infer({"x": np.zeros(4, np.float32)})["y"].tolist() == [1024.0] * 4


# ---- -o, -i, --json, bench, stdout --------------------------------------------------------------


def _named_outputs(tmp_path, names):
    n = Net("named")
    x = n.param("x", "f32", (2,))
    for i, name in enumerate(names):
        n.result(n.op("Add", [x, n.const(np.float32([i, i]))], name=f"add{i}"), name)
    return n.save(tmp_path / "named.xml")


@pytest.mark.parametrize("names", [["file"], ["allow_pickle"], ["file", "allow_pickle", "a/b", "x y"]])
def test_output_file_any_output_name(tmp_path, names):
    xml = _named_outputs(tmp_path, names)
    out = tmp_path / "out.npz"
    assert cli("run", xml, "-o", out) == 0
    got = np.load(out)
    assert sorted(got.files) == sorted(names)
    for name in names:
        assert got[name].shape == (2,)
    assert not (tmp_path / "out.npz.npz").exists()


def test_output_npy_is_written_exactly_there(tmp_path):
    xml = _named_outputs(tmp_path, ["y"])
    out = tmp_path / "out.npy"
    assert cli("run", xml, "-o", out) == 0
    assert out.exists() and not (tmp_path / "out.npy.npz").exists()
    assert np.load(out).shape == (2,)
    two = _named_outputs(tmp_path, ["a", "b"])
    assert cli("run", two, "-o", tmp_path / "two.npy") == 2


def test_output_path_checked_before_running(tmp_path, capsys):
    xml = _named_outputs(tmp_path, ["y"])
    assert cli("run", xml, "-o", tmp_path / "missing" / "o.npz") == 2
    assert "does not exist" in capsys.readouterr().err
    assert cli("run", xml, "-o", tmp_path) == 2
    assert not (tmp_path.parent / f"{tmp_path.name}.npz").exists()


def test_output_to_a_full_device(tmp_path, capsys):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    assert cli("run", _named_outputs(tmp_path, ["y"]), "-o", "/dev/full") == 2
    err = capsys.readouterr().err
    assert "No space left" in err
    assert not os.path.exists("/dev/full.npz")


def test_output_archive_to_a_pipe_or_device(tmp_path):
    """A zip seeks back to finish its headers: to /dev/null or a pipe it is built in memory first
    (it was an internal error), and what the reader gets is the whole archive."""
    import io
    import threading

    xml = _named_outputs(tmp_path, ["a", "b"])
    assert cli("run", xml, "-o", os.devnull) == 0
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = {}
    reader = threading.Thread(target=lambda: got.setdefault("bytes", fifo.read_bytes()))
    reader.start()
    assert cli("run", xml, "-o", fifo) == 0
    reader.join(30)
    with np.load(io.BytesIO(got["bytes"])) as z:
        assert sorted(z.files) == ["a", "b"] and z["a"].shape == (2,)


def test_json_report_when_the_command_fails(tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text("<net version='11'><layers></layers></net>")
    report = tmp_path / "r.json"
    assert cli("run", bad, "--json", report) == 3
    import json

    data = json.loads(report.read_text())
    assert data["ok"] is False and data["error"]["exit_code"] == 3 and data["error"]["class"] == "FormatError"


def test_repeated_input_is_a_usage_error(tmp_path, capsys):
    xml = _named_outputs(tmp_path, ["y"])
    a = tmp_path / "a.npy"
    np.save(a, np.zeros(2, np.float32))
    npz = tmp_path / "a.npz"
    np.savez(npz, x=np.zeros(2, np.float32))
    assert cli("run", xml, "-i", f"x={a}", "-i", f"x={a}") == 2
    assert "already given" in capsys.readouterr().err
    assert cli("run", xml, "-i", npz, "-i", f"x={a}") == 2


def test_bench_with_a_tiny_time_budget(tmp_path, capsys):
    assert cli("bench", _named_outputs(tmp_path, ["y"]), "-t", "1e-6") == 0
    assert "over 1 iterations" in capsys.readouterr().out


def test_closed_stdout_is_a_clean_error(tmp_path):
    xml = _named_outputs(tmp_path, ["y"])
    proc = subprocess.run(
        [sys.executable, "-m", "irexec", "info", str(xml)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0
    code = "import os, sys, subprocess; os.close(1); sys.exit(subprocess.call([sys.executable, '-m', 'irexec', 'info', sys.argv[1]], stdout=None))"
    proc = subprocess.run(
        [sys.executable, "-c", code, str(xml)], cwd=ROOT, stderr=subprocess.PIPE, text=True, timeout=60, close_fds=False
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_random_inputs_are_made_in_the_target_dtype():
    from irexec.feeds import random_input

    rng = np.random.default_rng(0)
    for dt in (np.float16, np.float32, np.float64, np.int8, np.uint64, np.bool_):
        a = random_input((1000, 3), np.dtype(dt), rng, "x")
        assert a.dtype == dt and a.shape == (1000, 3) and a.flags.owndata and a.base is None


# ---- files OpenVINO reads ---------------------------------------------------------------------


def _reduce_xml(tmp_path, body_edit=None, version=11, prefix=""):
    n = Net("r")
    x = n.param("x", "f32", (2, 3))
    r = n.op("ReduceSum", [x, n.const(np.array([1], np.int64))], {"keep_dims": "false"}, out_dims=[2], name="red")
    n.result(r, "y")
    xml = n.save(tmp_path / "r.xml")
    text = xml.read_text()
    if body_edit:
        text = body_edit(text)
    if version == 10:
        text = text.replace('version="11"', 'version="10"', 1)
    xml.write_text(prefix + text)
    return xml


def test_edge_to_a_missing_layer_is_ignored_and_reported(tmp_path, capsys):
    xml = _reduce_xml(
        tmp_path,
        lambda t: t.replace("</edges>", '<edge from-layer="77" from-port="0" to-layer="2" to-port="9"/></edges>'),
    )
    m = irexec.load(xml)
    assert m.infer({"x": np.ones((2, 3), np.float32)})["y"].tolist() == [3.0, 3.0]
    report = m.validate()
    assert not report.ok and report.issues[0].kind == "edge" and "77" in report.issues[0].inferred
    assert cli("validate", xml) == 1
    assert cli("run", xml) == 0
    err = capsys.readouterr().err
    assert err.count("warning") == 1 and "does not exist" in err


def test_whitespace_before_the_xml_declaration(tmp_path):
    xml = _reduce_xml(tmp_path, prefix="\n  \n")
    assert irexec.load(xml).validate().ok


def test_trailing_input_port_without_edge_is_an_absent_optional_input(tmp_path):
    extra = '<port id="9" precision="I64"><dim>1</dim></port></input>'

    def edit(t):
        i = t.index('name="red"')
        j = t.index("</input>", i)
        return t[:j] + extra + t[j + len("</input>") :]

    xml = _reduce_xml(tmp_path, edit)
    m = irexec.load(xml)
    assert m.infer({"x": np.ones((2, 3), np.float32)})["y"].tolist() == [3.0, 3.0]


def test_input_and_output_ports_may_share_an_id(tmp_path):
    def edit(t):
        i = t.index('name="red"')
        j = t.index('<port id="2"', i)
        t = t[:j] + '<port id="1"' + t[j + len('<port id="2"') :]
        return t.replace('from-layer="2" from-port="2"', 'from-layer="2" from-port="1"')

    xml = _reduce_xml(tmp_path, edit)
    m = irexec.load(xml)
    assert m.infer({"x": np.ones((2, 3), np.float32)})["y"].tolist() == [3.0, 3.0]


def test_ir_v10_output_answers_to_its_layer_name(tmp_path, capsys):
    xml = _reduce_xml(tmp_path, lambda t: t.replace(' output_names="y"', ""), version=10)
    m = irexec.load(xml)
    out = m.infer({"x": np.ones((2, 3), np.float32)})
    canonical = m.outputs[0].name
    assert m.output_aliases.get("red") == canonical or canonical == "red"
    assert out["red"].tolist() == [3.0, 3.0]
    assert cli("info", xml) == 0
    text = capsys.readouterr().out
    assert "canonical" in text or canonical == "red"


@pytest.mark.parametrize(
    "et,packed,values",
    [
        ("u4", np.array([0x21, 0x43], np.uint8), [1, 2, 3, 4]),
        ("i4", np.array([0xF1, 0x87], np.uint8), [1, -1, 7, -8]),
        ("u1", np.array([0b10110000], np.uint8), [1, 0, 1, 1]),
    ],
)
def test_sub_byte_parameters_take_packed_or_unpacked_feeds(tmp_path, et, packed, values):
    n = Net("sb")
    x = n.param("x", et, (4,))
    n.result(n.op("Convert", [x], {"destination_type": "f32"}, out_et="f32", out_dims=[4]), "y")
    m = irexec.load(n.save(tmp_path / "sb.xml"))
    assert m.inputs[0].element_type == et
    assert m.infer({"x": packed})["y"].tolist() == values
    unpacked = np.array(values, np.int8 if et == "i4" else np.uint8)
    assert m.infer({"x": unpacked})["y"].tolist() == values
    with pytest.raises(irexec.InputError):
        m.infer({"x": np.array([1, 2, 3], np.uint8)})


def test_a_string_tensor_into_a_numeric_op_is_an_unsupported_dtype(tmp_path):
    """Strings are an element type (tests/test_strings.py), but only the ops that take them may
    see them: a string Parameter into a reduction is refused at load."""
    xml = _reduce_xml(tmp_path, lambda t: t.replace('element_type="f32"', 'element_type="string"', 1))
    with pytest.raises(irexec.UnsupportedDtypeError, match="string"):
        irexec.load(xml)


def test_decompression_convert_precision_is_a_note(tmp_path):
    n = Net("dc")
    x = n.param("x", "f32", (4,))
    w = n.op("Convert", [n.const(np.ones(4, np.float16))], {"destination_type": "f32"}, out_et="f16", out_dims=[4])
    n.result(n.op("Add", [x, w], out_et="f32", out_dims=[4]), "y")
    xml = n.save(tmp_path / "dc.xml")
    text = xml.read_text().replace(
        'type="Convert" version="opset1">',
        'type="Convert" version="opset1"><rt_info><attribute name="decompression" version="0"/></rt_info>',
    )
    xml.write_text(text)
    report = irexec.load(xml).validate()
    assert report.ok, report.issues
    assert report.notes and all(i.kind == "precision" for i in report.notes)


def test_versions_above_the_newest_opset_are_refused(tmp_path):
    ok = _reduce_xml(
        tmp_path,
        lambda t: t.replace('type="ReduceSum" version="opset1"', f'type="ReduceSum" version="opset{MAX_OPSET}"'),
    )
    assert irexec.load(ok).validate().ok
    bad = _reduce_xml(
        tmp_path, lambda t: t.replace('type="ReduceSum" version="opset1"', 'type="ReduceSum" version="opset999"')
    )
    with pytest.raises(irexec.UnsupportedOpError, match=f"above opset{MAX_OPSET}"):
        irexec.load(bad)


def test_every_unsupported_layer_named_in_one_error(tmp_path, capsys):
    def edit(t):
        return t.replace('type="ReduceSum"', 'type="Frobnicate"')

    n = Net("u")
    x = n.param("x", "f32", (2, 3))
    a = n.op("Frob", [x], out_dims=[2, 3])
    b = n.op("Frob", [a], out_dims=[2, 3])
    c = n.op("Zork", [b], version="opset3", out_dims=[2, 3])
    n.result(n.op("Add", [c, x], out_dims=[2, 3]), "y")
    xml = n.save(tmp_path / "u.xml")
    with pytest.raises(irexec.UnsupportedOpError) as info:
        irexec.load(xml)
    msg = str(info.value)
    assert "Frob-opset1 x2" in msg and "Zork-opset3 x1" in msg and "id=1" in msg
    m = irexec.load(xml, allow_unsupported=True)
    assert set(m.unchecked) >= {1, 2, 3}
    assert cli("validate", xml) == 3
    out = capsys.readouterr()
    assert "unsupported: Frob-opset1 x2" in out.out and "not checked" in out.out
    assert cli("info", xml) == 0
    with pytest.raises(irexec.UnsupportedOpError):
        m.infer({"x": np.ones((2, 3), np.float32)})


def _shape_only_model(tmp_path):
    """y = x + float(arange(rows))[:, None], and the shape of x as an output: the arange, its
    conversion and the shape depend on x's shape only (remembered per feed signature)."""
    n = Net("shape_only")
    x = n.param("x", "f32", (None, 3))
    shape = n.op("ShapeOf", [x], {"output_type": "i64"}, version="opset3", out_et="i64", out_dims=[2])
    rows = n.op(
        "Gather",
        [shape, n.const(np.int64(0)), n.const(np.int64(0))],
        {"batch_dims": "0"},
        version="opset8",
        out_dims=[],
    )
    idx = n.op(
        "Range",
        [n.const(np.int64(0)), rows, n.const(np.int64(1))],
        {"output_type": "i64"},
        version="opset4",
        out_dims=[-1],
    )
    col = n.op(
        "Unsqueeze",
        [n.op("Convert", [idx], {"destination_type": "f32"}, out_et="f32", out_dims=[-1]), n.const(np.int64(1))],
        out_dims=[-1, 1],
    )
    n.result(n.op("Add", [x, col], out_dims=[-1, 3]), "y")
    n.result(shape, "shape")
    return n.save(tmp_path / "shape_only.xml")


def test_values_of_the_feed_shapes_are_remembered_and_stay_the_callers(tmp_path):
    m = irexec.load(_shape_only_model(tmp_path))
    assert m._plan.memo is not None and m._plan.memo.data_steps
    for rows in (4, 2, 4, 7, 2):  # new signatures and remembered ones, interleaved
        x = np.random.default_rng(rows).random((rows, 3), dtype=np.float32)
        out = m.infer({"x": x})
        np.testing.assert_array_equal(out["y"], x + np.arange(rows, dtype=np.float32)[:, None])
        np.testing.assert_array_equal(out["shape"], [rows, 3])
        out["shape"][:] = -1  # the caller's own: the remembered shape must not change
        out["y"][:] = -1
    assert len(m._plan.memo.cache) == 3
    np.testing.assert_array_equal(m.infer({"x": np.zeros((7, 3), np.float32)})["shape"], [7, 3])


def test_a_dynamic_input_checked_once_per_shape_still_refuses_other_feeds(tmp_path):
    """A dynamic input's shapes that passed the checks skip them next time (`Model._fast_feeds`);
    another rank, a dim outside the bounds, another dtype, a non-native byte order and a shape
    above the limits are still refused, and a list is still cast when asked."""
    m = irexec.load(_shape_only_model(tmp_path), shapes={"x": "1..6,3"}, limits=irexec.Limits(max_tensor_bytes=60))
    x = np.ones((4, 3), np.float32)
    for _ in range(2):
        np.testing.assert_array_equal(m.infer({"x": x})["shape"], [4, 3])
    for bad, says in (
        (np.ones((4, 3, 1), np.float32), "rank"),
        (np.ones((7, 3), np.float32), "dim 0 is 7"),
        (np.ones((4, 3), np.float64), "dtype"),
        (np.ones((6, 3), np.float32), "limit"),  # 72 bytes: within the bounds, above the limit
    ):
        with pytest.raises(irexec.IRExecError, match=says):
            m.infer({"x": bad})
    swapped = x.astype(">f4")
    np.testing.assert_array_equal(m.infer({"x": swapped})["y"], m.infer({"x": x})["y"])
    with pytest.warns(irexec.DtypeConversionWarning):
        np.testing.assert_array_equal(m.infer({"x": [[1.0, 2.0, 3.0]] * 4}, convert_dtypes=True)["shape"], [4, 3])


def _rms_model(tmp_path, rows=None):
    """LLaMA's RMSNorm as OpenVINO writes it, then a MatMul."""
    n = Net("rms")
    x = n.param("x", "f32", (rows, 2, 64))
    p = n.op("Power", [x, n.const(np.float32(2.0))], out_dims=[-1, 2, 64])
    r = n.op("ReduceMean", [p, n.const(np.array([-1], np.int64))], {"keep_dims": "true"}, out_dims=[-1, 2, 1])
    a = n.op("Add", [r, n.const(np.float32(1e-6))], out_dims=[-1, 2, 1])
    s = n.op("Sqrt", [a], out_dims=[-1, 2, 1])
    d = n.op("Divide", [n.const(np.float32(1.0)), s], out_dims=[-1, 2, 1])
    m = n.op("Multiply", [x, d], out_dims=[-1, 2, 64])
    n.result(n.op("MatMul", [m, n.const(np.eye(64, dtype=np.float32)[:, :8])], out_dims=[-1, 2, 8]), "y")
    return n.save(tmp_path / "rms.xml")


@pytest.mark.parametrize("jit_mode", ["never", "always"])
def test_fused_rms_norm_gives_the_layers_bits(tmp_path, monkeypatch, jit_mode):
    from irexec import config
    from irexec.ops.normalization import RMSNorm

    monkeypatch.setattr(config, "JIT", jit_mode)
    monkeypatch.setattr(config, "SMALL_ELEMENTS", 0)
    m = irexec.load(_rms_model(tmp_path))
    assert any(isinstance(s.op, RMSNorm) for s in m._plan.run_steps)
    assert len(m._plan.run_steps) == len(m._plan.steps) - 5
    for rows, scale in ((3, 1.0), (50, 1e-3), (7, 1e4)):
        x = (np.random.default_rng(rows).standard_normal((rows, 2, 64)) * scale).astype(np.float32)
        fused = m.infer({"x": x})["y"]
        layers = m.infer({"x": x}, outputs="all")  # the debugging path runs every layer
        np.testing.assert_array_equal(fused, layers["y"])
        x64 = x.astype(np.float64)
        want = x64 / np.sqrt((x64**2).mean(-1, keepdims=True) + 1e-6)
        np.testing.assert_allclose(fused, want[..., :8], rtol=2e-6)
