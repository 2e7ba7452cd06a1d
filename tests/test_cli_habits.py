"""A user's first hour on the command line: every zoo model runs with no flags (default shapes for
dynamic inputs, realistic random data), misspelt input names are answered with the model's names,
the zoo's `in:NAME`/`out:NAME` .npz files are read, benchmark_app's --shape syntax and -b, bench's
throughput mode and its JSON, the .onnx hint, messages free of numpy's phrasing, progress lines.

Commands run in this process through `irexec.cli.main` (fast); the default shapes and random data
are checked against the models' own tables (read from the graph independently), and against
OpenVINO where it is installed."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import irexec
from irexec import config
from irexec.cli import main as cli_main
from irexec.cli.inputs import parse_shape_option
from irexec.compare import diff
from irexec.errors import UsageError, plain_message
from tests.support.irbuild import Net
from tests.test_zoo import _model_params

ROOT = Path(__file__).resolve().parent.parent
ZOO = ROOT / "tests" / "zoo"


def cli(capsys, *args) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli_main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def _embedding_rows(model, needle: str) -> int:
    """The first dim of the Const table of the Gather whose name holds `needle` (read from the
    layer's own input spec, not from the input roles under test)."""
    for lid, layer in model.graph.layers.items():
        if layer.type == "Gather" and needle in layer.name:
            return model.specs[model.graph.operands[lid][0]].shape[0]
    raise AssertionError(f"no Gather named *{needle}*")


# ---- 1. the first command works -----------------------------------------------------------------


@pytest.mark.parametrize("name", _model_params(AssertionError))  # xfail while a model's ops are pending
def test_every_zoo_model_runs_with_no_flags(name, capsys):
    code, out, err = cli(capsys, "run", ZOO / f"{name}.xml")
    assert code == 0, err
    model = irexec.load(ZOO / f"{name}.xml")
    for info in model.outputs:
        assert f"{info.name}: shape (" in out
    if any(i.shape is None or None in i.shape for i in model.inputs):
        assert "irexec: note: dynamic inputs get the shapes" in err  # the choice is said


def test_default_shapes_follow_the_documented_rule(capsys):
    _, _, err = cli(capsys, "run", ZOO / "resnet18.xml")
    assert "x [1,3,224,224]" in err  # batch 1, image sides 224
    _, _, err = cli(capsys, "run", ZOO / "gpt2.xml")
    assert "input_ids [1,128], attention_mask [1,128]" in err  # sequence 128, one length for both
    # the zoo's ViT has its position table for 224x224 images
    _, _, err = cli(capsys, "run", ZOO / "vit.xml")
    assert "x [1,3,224,224]" in err


def test_interval_dims_take_their_lower_end(tmp_path, capsys):
    n = Net("interval")
    x = n.param("x", "f32", (2, 3))
    n.result(n.op("Relu", [x], name="relu", out_dims=[2, 3]), "y")
    xml = n.save(tmp_path / "m.xml")
    text = xml.read_text().replace('shape="2,3"', 'shape="2..6,3"')
    xml.write_text(text)
    code, out, err = cli(capsys, "run", xml)
    assert code == 0, err
    assert "x [2,3]" in err and "y: shape (2, 3)" in out


def test_a_file_fixes_the_length_of_the_other_inputs(tmp_path, capsys):
    ids = tmp_path / "ids.npy"
    np.save(ids, np.arange(12, dtype=np.int64).reshape(1, 12))
    code, out, err = cli(capsys, "run", ZOO / "bert.xml", "-i", f"input_ids={ids}")
    assert code == 0, err
    assert "attention_mask [1,12]" in err and "(1, 12, 32)" in out
    code, out, err = cli(capsys, "run", ZOO / "bert.xml", "--shape", "input_ids[1,20]")
    assert code == 0, err
    assert "attention_mask [1,20]" in err


@pytest.mark.parametrize("name, shape", [("bert", "(1, 128, 32)"), ("whisper", "(1, 4, 100)"), ("vit", "(1, 10)")])
def test_compare_with_openvino_on_default_shapes(name, shape, capsys):
    pytest.importorskip("openvino")
    code, out, err = cli(capsys, "compare", ZOO / f"{name}.xml")  # OpenVINO reshaped to the same shapes
    assert code == 0, out + err
    assert "MISMATCH" not in out and shape in out


@pytest.mark.parametrize(
    "args, where",
    [
        (["-i", "input_idz={npy}"], "-i input_idz="),
        (["--shape", "input_idz[1,8]"], "--shape"),
        (["--range", "input_idz=0,5"], "--range"),
        (["-i", "{npz}"], "-i "),
    ],
)
def test_a_misspelt_input_name_is_reported_first(args, where, tmp_path, capsys):
    npy = tmp_path / "ids.npy"
    np.save(npy, np.zeros((1, 8), np.int64))
    npz = tmp_path / "in.npz"
    np.savez(npz, **{"in:input_idz": np.zeros((1, 8), np.int64), "out:x": np.zeros(2)})
    args = [a.format(npy=npy, npz=npz) for a in args]
    code, out, err = cli(capsys, "run", ZOO / "bert.xml", *args)
    assert code in (2, 4)  # a -i name is bad input data (4, as before); an option's name is usage (2)
    (line,) = err.splitlines()  # the only line: before any default shape or data is made up
    assert where in line and "'input_idz' is not an input" in line
    assert "'input_ids', 'attention_mask'" in line and "did you mean 'input_ids'?" in line


def test_zoo_npz_in_and_out_keys(tmp_path, capsys):
    out_npz = tmp_path / "out.npz"
    code, _, err = cli(capsys, "run", ZOO / "llama.xml", "-i", ZOO / "llama.npz", "-o", out_npz)
    assert code == 0, err
    assert "dynamic inputs" not in err  # the file gave every input
    with np.load(ZOO / "llama.npz") as z, np.load(out_npz) as got:
        for key in z.files:
            if key.startswith("out:"):
                want = z[key]
                assert np.abs(got[key[4:]] - want).max() <= 1e-3 * np.abs(want).max()
    # --against reads the out: keys, and takes the in: keys as inputs when -i is not given
    code, out, err = cli(capsys, "compare", ZOO / "llama.xml", "--against", ZOO / "llama.npz")
    assert code == 0, out + err
    assert "inputs from" in err and "OK" in out


# ---- 2. realistic random inputs ------------------------------------------------------------------


def _saved_inputs(capsys, tmp_path, xml, *args) -> dict:
    path = tmp_path / "inputs.npz"
    code, out, err = cli(capsys, "compare", xml, "--against", xml, "--save-inputs", path, *args)
    assert code == 0, out + err
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def test_token_ids_masks_and_positions(tmp_path, capsys):
    bert = irexec.load(ZOO / "bert.xml")
    vocab = _embedding_rows(bert, "word_embeddings")
    feeds = _saved_inputs(capsys, tmp_path, ZOO / "bert.xml", "-b", "5")
    ids = feeds["input_ids"]
    assert ids.min() >= 0 and ids.max() < vocab and len(np.unique(ids)) > vocab // 2
    assert (feeds["attention_mask"] == 1).all()
    feeds = _saved_inputs(capsys, tmp_path, ZOO / "whisper.xml")
    pos = feeds["decoder_position_ids"]
    assert (pos == np.arange(pos.shape[-1])).all()
    whisper = irexec.load(ZOO / "whisper.xml")
    assert feeds["decoder_input_ids"].max() < _embedding_rows(whisper, "embedding_1")


def test_cache_position_and_beam_idx_by_name(tmp_path, capsys):
    n = Net("names")
    c = n.param("cache_position", "i64", (5,))
    b = n.param("beam_idx", "i32", (3,))
    n.result(n.op("Negative", [c], name="nc", out_dims=[5]), "c")
    n.result(n.op("Negative", [b], name="nb", out_dims=[3]), "b")
    xml = n.save(tmp_path / "m.xml")
    feeds = _saved_inputs(capsys, tmp_path, xml)
    assert feeds["cache_position"].tolist() == [0, 1, 2, 3, 4]
    assert feeds["beam_idx"].tolist() == [0, 1, 2]  # each row keeps its own cache


def test_range_overrides(tmp_path, capsys):
    feeds = _saved_inputs(
        capsys, tmp_path, ZOO / "bert.xml", "--range", "input_ids=3,5", "--range", "attention_mask=0,1"
    )
    assert set(np.unique(feeds["input_ids"])) <= {3, 4, 5} and len(np.unique(feeds["input_ids"])) > 1
    assert set(np.unique(feeds["attention_mask"])) == {0, 1}
    feeds = _saved_inputs(capsys, tmp_path, ZOO / "resnet18.xml", "--shape", "x[1,3,8,8]", "--range", "x=-2,-1")
    assert feeds["x"].min() >= -2 and feeds["x"].max() < -1
    code, _, err = cli(capsys, "run", ZOO / "bert.xml", "--range", "input_ids=5")
    assert code == 2 and "NAME=LO,HI" in err


def _int_and_bool_model(tmp_path) -> Path:
    n = Net("exact")
    x = n.param("x", "f32", (2, 4))
    n.result(n.op("Convert", [x], {"destination_type": "i32"}, name="ints", out_et="i32", out_dims=[2, 4]), "i")
    half = n.const(np.float32([[0.5]]))
    n.result(n.op("Greater", [x, half], name="flags", out_et="boolean", out_dims=[2, 4]), "b")
    return n.save(tmp_path / "exact.xml")


def test_compare_counts_differing_integers_and_booleans(tmp_path, capsys):
    xml = _int_and_bool_model(tmp_path)
    x = np.float32([[0, 1, 2, 3], [0.25, 0.75, 5, 6]])
    inputs, expected = tmp_path / "in.npz", tmp_path / "want.npz"
    np.savez(inputs, x=x)
    want_i = x.astype(np.int32)
    want_i[1, 2] = 7
    want_b = x > 0.5
    want_b[0, 0] = True
    want_b[1, 0] = True
    np.savez(expected, i=want_i, b=want_b)
    code, out, _ = cli(capsys, "compare", xml, "-i", inputs, "--against", expected)
    assert code == 1
    assert "1 of 8 elements differ" in out and "2 of 8 elements differ" in out
    assert "max abs" not in out
    assert "first at [1, 2]: irexec 5, reference 7" in out
    code, out, _ = cli(capsys, "compare", xml, "-i", inputs, "--against", expected, "--json", "-")
    rows = {r["name"]: r for r in json.loads(out)["outputs"]}
    assert rows["i"]["exact"] and rows["i"]["mismatches"] == 1 and rows["i"]["max_abs"] == 2.0
    assert rows["b"]["mismatches"] == 2 and rows["b"]["max_abs"] == 1.0  # never 0 beside mismatches
    d = diff("i", np.int64([1, 2, 3]), np.int64([1, 2, 4]), 0.5, 10)  # no tolerance for integers
    assert not d.ok and d.summary() == "1 of 3 elements differ"


# ---- 3. OpenVINO's command-line habits ----------------------------------------------------------


def test_shape_syntax_parses():
    assert parse_shape_option("x[1,3,224,224]") == [("x", "1,3,224,224")]
    assert parse_shape_option("x[1,3,224,224],y[1,10]") == [("x", "1,3,224,224"), ("y", "1,10")]
    assert parse_shape_option("[1,3,224,224]") == [(None, "1,3,224,224")]
    assert parse_shape_option("x=?,3,1..8") == [("x", "?,3,1..8")]
    assert parse_shape_option("a.b:0[1..4,?]") == [("a.b:0", "1..4,?")]
    for bad in ("x[1,3", "x[1]y[2]", "x", "=1,2"):
        with pytest.raises(UsageError):
            parse_shape_option(bad)


def test_shape_option_forms_on_models(capsys):
    for spec in ("x[1,3,40,40]", "[1,3,40,40]", "x=1,3,40,40"):
        code, out, err = cli(capsys, "run", ZOO / "resnet18.xml", "--shape", spec)
        assert code == 0, err
        assert "Result_1297: shape (1, 10)" in out and "dynamic inputs" not in err
    code, out, err = cli(capsys, "run", ZOO / "t5.xml", "--shape", "input_ids[1,6],attention_mask[1,6]")
    assert code == 0, err
    assert "decoder_input_ids [1,6]" in err and "(1, 6, 32)" in out  # one group: int ids of rank 2
    code, _, err = cli(capsys, "run", ZOO / "t5.xml", "--shape", "[1,6]")
    assert code == 2 and "needs a model of one input" in err and "'decoder_input_ids'" in err


def test_batch_option(capsys):
    code, out, err = cli(capsys, "run", ZOO / "resnet18.xml", "-b", "3")
    assert code == 0, err
    assert "Result_1297: shape (3, 10)" in out
    code, out, err = cli(capsys, "run", ZOO / "bert.xml", "-b", "2", "--shape", "input_ids[1,16]")
    assert code == 0, err  # -b wins over --shape's leading dim; the mask follows the ids
    assert "attention_mask [2,16]" in err and "231: shape (2, 16, 32)" in out
    with pytest.raises(SystemExit) as info:
        cli(capsys, "run", ZOO / "resnet18.xml", "-b", "0")
    assert info.value.code == 2 and "must be at least 1" in capsys.readouterr().err


def test_bench_throughput_json(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(config, "JIT", "never")
    report = tmp_path / "b.json"
    code, out, err = cli(
        capsys,
        "bench",
        ZOO / "resnet18.xml",
        "--shape",
        "x[1,3,16,16]",
        "--mode",
        "throughput",
        "--requests",
        "2",
        "-n",
        "6",
        "--json",
        report,
    )
    assert code == 0, err
    data = json.loads(report.read_text())
    assert data["mode"] == "throughput" and data["requests"] == 2 and data["iterations"] == 6
    assert data["inputs"] == {"x": {"shape": [1, 3, 16, 16], "dtype": "float32"}}
    assert data["threads"] >= 1 and data["versions"]["irexec"] == irexec.__version__
    assert data["versions"]["numpy"] == np.__version__ and data["machine"]["cpus"] >= 1
    assert data["throughput_per_s"] > 0 and data["wall_s"] > 0
    assert "2 requests in flight" in out
    code, _, err = cli(capsys, "bench", ZOO / "resnet18.xml", "--requests", "2")
    assert code == 2 and "--mode throughput" in err


def test_bench_per_layer_names_in_full(capsys, monkeypatch):
    monkeypatch.setattr(config, "JIT", "never")
    code, out, err = cli(capsys, "bench", ZOO / "bert.xml", "--shape", "input_ids[1,4]", "-n", "1", "--per-layer")
    assert code == 0, err
    long_name = "__module.inner.embeddings.word_embeddings/aten::embedding/Gather"
    assert re.search(rf"\s{re.escape(long_name)}\s+Gather-opset8\s", out)


# ---- 4. messages and progress --------------------------------------------------------------------


@pytest.mark.parametrize("suffix, what", [(".onnx", "ONNX"), (".tflite", "TensorFlow Lite"), (".pdmodel", "Paddle")])
def test_other_frameworks_get_the_conversion_hint(suffix, what, tmp_path, capsys):
    path = tmp_path / f"model{suffix}"
    path.write_bytes(b"\x08\x07")
    code, _, err = cli(capsys, "run", path)
    assert code == 2
    (line,) = err.splitlines()
    assert what in line and f"ovc {path}" in line and "convert_model" in line


def test_xml_errors_name_the_file(tmp_path, capsys):
    bad = tmp_path / "broken.xml"
    bad.write_text('<?xml version="1.0"?>\n<net name="x" version="11"><layers><layer id="0" ')
    code, _, err = cli(capsys, "validate", bad)
    assert code == 3
    assert str(bad) in err and "<string>" not in err


def test_numpy_phrasing_is_translated():
    cases = [
        (lambda: np.zeros((1, 8)) + np.zeros((1, 2)), "shapes [1,8] and [1,2] do not broadcast"),
        (lambda: np.broadcast_to(np.zeros((1, 8)), (1, 2)), "shape [1,8] does not broadcast to [1,2]"),
        (lambda: np.zeros(6).reshape(4), "6 elements cannot take the shape [4]"),
        (lambda: np.zeros(3).sum(axis=3), "axis 3 is out of range for rank 1"),
        (lambda: np.zeros(3)[5], "index 5 is out of range for dim 0 of size 3"),
        (lambda: np.zeros((2, 3)) @ np.zeros((4, 2)), "the contracted dims differ (4 vs 3)"),
    ]
    for fn, want in cases:
        with pytest.raises(Exception) as info:
            fn()
        assert plain_message(info.value) == want


def test_convolution_rank_message_is_whole(tmp_path, capsys):
    n = Net("conv")
    x = n.param("x", "f32", (3,))
    w = n.const(np.ones((4, 3, 3), np.float32))
    attrs = {"strides": "1", "pads_begin": "0", "pads_end": "0", "dilations": "1"}
    n.result(n.op("Convolution", [x, w], attrs, name="conv", out_dims=[1, 4, 6]), "y")
    code, _, err = cli(capsys, "validate", n.save(tmp_path / "conv.xml"))
    assert code == 3
    assert "data [3] has rank 1; Convolution takes [N,C,spatial...]" in err and "index out of range" not in err


def test_sdpa_broadcast_message_names_each_input(capsys):
    shapes = "input_features[1,16,3000],decoder_input_ids[1,16],decoder_position_ids[1,16]"
    code, _, err = cli(capsys, "run", ZOO / "whisper.xml", "--shape", shapes)
    assert code == 3
    assert re.search(r"of query \[[\d,]+\], key \[[\d,]+\], value \[[\d,]+\], attention_mask \[[\d,]+\] do not", err)


def test_bench_progress_lines_off_a_terminal(monkeypatch, capsys):
    monkeypatch.setattr(config, "JIT", "never")
    monkeypatch.setattr(config, "PROGRESS_SECONDS", 0)
    code, _, err = cli(capsys, "bench", ZOO / "resnet18.xml", "--shape", "x[1,3,8,8]", "-n", "3")
    assert code == 0
    assert [line.split(",")[0] for line in err.splitlines() if line.startswith("bench:")] == [
        "bench: 1 iterations of 3",
        "bench: 2 iterations of 3",
        "bench: 3 iterations of 3",
    ]


def test_compare_per_layer_progress(monkeypatch, capsys):
    pytest.importorskip("openvino")
    monkeypatch.setattr(config, "PROGRESS_SECONDS", 0)
    code, out, err = cli(capsys, "compare", ZOO / "resnet18.xml", "--shape", "x[1,3,8,8]", "--per-layer")
    assert code == 0, out + err
    assert re.search(r"^compare: layer \d+/\d+, ", err, re.M)


def test_warmup_prints_a_line_per_finished_task_off_a_terminal(monkeypatch, capsys):
    from irexec.kernels import warmup

    def compile_kernels(models, jobs, note, progress):  # the pool's calls, without compiling
        for done, label in enumerate(models, 1):
            progress(done, len(models), 0.5 * done, label)
        return warmup.Outcome(False, len(models), 1.0)

    monkeypatch.setattr(warmup, "compile_kernels", compile_kernels)
    code, out, err = cli(capsys, "warmup", "a.xml", "b.xml")
    assert code == 0
    assert err.splitlines() == ["warmup: a.xml done (1/2, 0.5 s)", "warmup: b.xml done (2/2, 1.0 s)"]


def test_subprocess_run_on_a_dynamic_model_prints_no_traceback():
    proc = subprocess.run(
        [sys.executable, "-m", "irexec", "run", str(ZOO / "whisper.xml")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    # the first frame count shape inference takes: 2 frames give one position, which broadcasts
    # against the encoder's 1500 (the graph's own rule; OpenVINO computes the same)
    assert "input_features [1,16,2]" in proc.stderr and "Traceback" not in proc.stderr


def test_damaged_npy_messages_are_irexecs(tmp_path, capsys):
    short, cut, xml_file = tmp_path / "short.npy", tmp_path / "cut.npy", tmp_path / "x.npy"
    short.write_bytes(b"hello\n")
    np.save(cut, np.zeros((1, 3, 8, 8), np.float32))
    cut.write_bytes(cut.read_bytes()[:300])
    xml_file.write_text('<?xml version="1.0"?><net/>')
    want = {
        short: "it holds 6 bytes, fewer than a .npy header",
        cut: "of the 192 elements of its shape [1,3,8,8]",
        xml_file: "it does not start as a .npy file does (it starts with '<?xml ')",
    }
    for path, text in want.items():
        code, _, err = cli(capsys, "run", ZOO / "resnet18.xml", "-i", f"x={path}")
        assert code == 4 and text in err, err
        assert "magic" not in err and "EOF" not in err


def test_a_stateless_decoders_cache_starts_empty(tmp_path, capsys):
    n = Net("past")
    past = n.param("past_key_values.0.key", "f32", (None, 2, None, 4))
    new = n.param("new_key", "f32", (None, 2, None, 4))
    both = n.op("Concat", [past, new], {"axis": "2"}, name="cat", out_dims=[-1, 2, -1, 4])
    n.result(both, "key")
    code, out, err = cli(capsys, "run", n.save(tmp_path / "past.xml"))
    assert code == 0, err
    assert "past_key_values.0.key [1,2,0,4], new_key [1,2,128,4]" in err
    assert "key: shape (1, 2, 128, 4)" in out


def test_when_no_default_shape_passes_the_error_says_which_were_tried(capsys):
    code, _, err = cli(capsys, "run", ZOO / "vit.xml", "-b", "2")  # the ViT was traced for a batch of 1
    assert code == 3
    (line,) = err.splitlines()
    assert "(with the default shapes x [2,3,224,224]: give others with --shape NAME[DIMS] or -i)" in line


def test_stateful_decoders_run_with_no_flags_and_with_a_batch(capsys):
    llama = ZOO / "state" / "llama_stateful.xml"
    code, out, err = cli(capsys, "run", llama)
    assert code == 0, err
    assert "position_ids [1,128], beam_idx [1]" in err and "logits: shape (1, 128, 256)" in out
    code, out, err = cli(capsys, "run", llama, "-b", "2", "--shape", "input_ids[1,8]")
    assert code == 0, err  # -b reaches beam_idx too: one index per row
    assert "attention_mask [2,8], position_ids [2,8]" in err and "logits: shape (2, 8, 256)" in out
    code, out, err = cli(capsys, "run", ZOO / "state" / "t5_stateful_decoder.xml", "--shape", "input_ids[1,4]")
    assert code == 0, err
    assert "beam_idx [1]" in err
