"""Write the sample IR models in samples/ by hand (lxml + numpy, no OpenVINO), deterministically,
then, when OpenVINO is installed, cross-check each one against it.

Every sample is written in the exact layout `ov.save_model` produces for IR v11: tab indentation,
`<layer id name type version="opsetN">`, `<data .../>`, ports with `precision` (FP32, I64...) and
`names`, input ports numbered 0..n-1 and outputs n.., Results carrying `output_names`, `<edges>`
and a net-level `<rt_info>`. The .bin holds only the Consts (a few bytes: large data tensors are
Parameters).

The OpenVINO check, per sample:
  * the IR loads in OpenVINO (`version="onnx"` layers are irexec's own: those samples are instead
    compared with the same graph written as ONNX and read by OpenVINO's ONNX frontend);
  * every layer's output shape in OpenVINO equals irexec's inferred shape and the XML's declared dims;
  * OpenVINO CPU results (f32 inference precision) equal irexec's, both measured against a float64
    numpy reference. OpenVINO's CPU plugin sums f32 in f32, so a small difference there is reported
    as a note, never a failure; irexec itself must match the reference.

Usage:
    python3 -m tools.make_samples              # write samples/, then check with OpenVINO if present
    python3 -m tools.make_samples --check      # regenerate in memory; exit 1 if samples/ differs
    python3 -m tools.make_samples --no-openvino
    python3 -m tools.make_samples --out DIR
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from lxml import etree

from irexec.dtypes import from_numpy

ROOT = Path(__file__).resolve().parent.parent
SAMPLES_DIR = ROOT / "samples"

# element type -> port precision, as ov.save_model spells it
PRECISION = {
    "f64": "FP64",
    "f32": "FP32",
    "f16": "FP16",
    "bf16": "BF16",
    "i8": "I8",
    "u8": "U8",
    "i16": "I16",
    "u16": "U16",
    "i32": "I32",
    "u32": "U32",
    "i64": "I64",
    "u64": "U64",
    "boolean": "BOOL",
}

Shape = tuple  # of int (static) or None (dynamic, written as -1)


# ---------------------------------------------------------------------------------------------
# A tiny IR writer
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Out:
    """One output of a layer: where it comes from and what it claims."""

    layer: int
    port: int
    et: str
    shape: Shape


@dataclass
class IR:
    """An IR v11 graph under construction: layers in creation order, ids 0, 1, 2..."""

    name: str
    layers: list = field(default_factory=list)  # lxml <layer> elements
    edges: list = field(default_factory=list)  # (from-layer, from-port, to-layer, to-port)
    blob: bytearray = field(default_factory=bytearray)

    def _ports(self, parent, tag: str, items: list[tuple[int, str, Shape, str | None]]):
        if not items:
            return
        group = etree.SubElement(parent, tag)
        for pid, et, shape, names in items:
            port = etree.SubElement(group, "port", id=str(pid), precision=PRECISION[et])
            if names:
                port.set("names", names)
            for d in shape:
                etree.SubElement(port, "dim").text = "-1" if d is None else str(d)

    def layer(
        self,
        type_: str,
        name: str,
        inputs: list[Out] = (),
        outputs: list[tuple[str, Shape]] = (),
        data: dict | None = None,
        version: str = "opset1",
        out_names: list[str | None] | None = None,
        rt_info: list[dict] | None = None,
        extra: dict | None = None,
    ) -> list[Out]:
        """Append a layer; its inputs are wired from `inputs`; returns its outputs."""
        lid = len(self.layers)
        el = etree.Element("layer", id=str(lid), name=name, type=type_, version=version)
        for k, v in (extra or {}).items():
            el.set(k, v)
        if data is not None:
            etree.SubElement(el, "data", {k: str(v) for k, v in data.items()})
        if rt_info:
            rt = etree.SubElement(el, "rt_info")
            for attrs in rt_info:
                etree.SubElement(rt, "attribute", attrs)
        self._ports(el, "input", [(i, src.et, src.shape, None) for i, src in enumerate(inputs)])
        n = len(inputs)
        names = out_names or [None] * len(outputs)
        self._ports(el, "output", [(n + j, et, shape, names[j]) for j, (et, shape) in enumerate(outputs)])
        self.layers.append(el)
        for i, src in enumerate(inputs):
            self.edges.append((src.layer, src.port, lid, i))
        return [Out(lid, n + j, et, tuple(shape)) for j, (et, shape) in enumerate(outputs)]

    def parameter(self, name: str, et: str, shape: Shape) -> Out:
        text = ",".join("?" if d is None else str(d) for d in shape)
        return self.layer(
            "Parameter", name, outputs=[(et, shape)], out_names=[name], data={"shape": text, "element_type": et}
        )[0]

    def const(self, name: str, value: np.ndarray) -> Out:
        value = np.ascontiguousarray(value)
        et = from_numpy(value.dtype)
        if et is None:
            raise ValueError(f"no element type for {value.dtype}")
        raw = value.astype(value.dtype.newbyteorder("<"), copy=False).tobytes()
        offset = len(self.blob)
        self.blob += raw
        data = {"element_type": et, "shape": ", ".join(str(d) for d in value.shape), "offset": offset, "size": len(raw)}
        return self.layer("Const", name, outputs=[(et, value.shape)], data=data)[0]

    def op(
        self,
        type_: str,
        name: str,
        inputs: list[Out],
        shape: Shape,
        et: str | None = None,
        version: str = "opset1",
        data: dict | None = None,
        rt_info: list[dict] | None = None,
    ) -> Out:
        """A one-output layer (its output dtype defaults to its first input's)."""
        et = et or inputs[0].et
        return self.layer(type_, name, inputs, [(et, shape)], data=data, version=version, rt_info=rt_info)[0]

    def result(self, src: Out, output_name: str) -> None:
        """A Result named like OV names them; the producing port and `output_names` carry the name."""
        producer = self.layers[src.layer]
        for port in producer.find("output"):
            if port.get("id") == str(src.port):
                port.set("names", output_name)
        self.layer("Result", output_name, [src], extra={"output_names": output_name})

    def xml_bytes(self) -> bytes:
        net = etree.Element("net", name=self.name, version="11")
        layers = etree.SubElement(net, "layers")
        layers.extend(self.layers)
        edges = etree.SubElement(net, "edges")
        for fl, fp, tl, tp in self.edges:
            etree.SubElement(
                edges, "edge", {"from-layer": str(fl), "from-port": str(fp), "to-layer": str(tl), "to-port": str(tp)}
            )
        rt = etree.SubElement(net, "rt_info")
        etree.SubElement(rt, "info", name="Generator", value="irexec tools/make_samples.py")
        etree.indent(net, space="\t")
        body = etree.tostring(net, encoding="unicode").replace("/>", " />")
        return ('<?xml version="1.0"?>\n' + body + "\n").encode()

    def files(self) -> dict[str, bytes]:
        """{suffix: bytes}: '.xml' always, '.bin' when some Const exists."""
        out = {".xml": self.xml_bytes()}
        if self.blob:
            out[".bin"] = bytes(self.blob)
        return out


# ---------------------------------------------------------------------------------------------
# The samples
# ---------------------------------------------------------------------------------------------

SEED_DOC_SHAPE = (6, 12, 10, 24)  # the OpenVINO ReduceMean-1 document's example
F16_BIAS = (np.arange(12, dtype=np.float64).reshape(3, 4) / 8 - 0.7).astype(np.float16)


@dataclass(frozen=True)
class Sample:
    name: str
    summary: str
    build: Callable[[], IR]
    feeds: Callable[[np.random.Generator], dict]  # input name -> array
    reference: Callable[[dict], dict]  # float64 numpy: inputs -> {output name: array}
    onnx: Callable[[], object] | None = None  # the same graph as an ONNX ModelProto (version="onnx" only)


def _uniform(rng, shape, dtype=np.float32):
    return (rng.random(shape) * 2 - 1).astype(dtype)


def _reduce_mean(name: str, axes: list[int], keep: bool, out_shape: Shape) -> Sample:
    def build() -> IR:
        ir = IR(name)
        data = ir.parameter("data", "f32", SEED_DOC_SHAPE)
        ax = ir.const("axes", np.array(axes, np.int64))
        r = ir.op("ReduceMean", "reduce_mean", [data, ax], out_shape, data={"keep_dims": str(keep).lower()})
        ir.result(r, "output")
        return ir

    def reference(inputs):
        x = inputs["data"].astype(np.float64)
        return {"output": np.mean(x, axis=tuple(axes), keepdims=keep)}

    return Sample(
        name,
        f"ReduceMean-1 of a 6x12x10x24 f32 Parameter over Const axes {axes}, keep_dims={str(keep).lower()} "
        f"-> {list(out_shape)}",
        build,
        lambda rng: {"data": _uniform(rng, SEED_DOC_SHAPE)},
        reference,
    )


def _l1_runtime_axes() -> Sample:
    shape = (4, 5, 6)

    def build() -> IR:
        ir = IR("reduce_l1_runtime_axes")
        data = ir.parameter("data", "f32", shape)
        axes = ir.parameter("axes", "i64", (1,))
        r = ir.op("ReduceL1", "reduce_l1", [data, axes], (None, None), version="opset4", data={"keep_dims": "false"})
        ir.result(r, "output")
        return ir

    def reference(inputs):
        x = inputs["data"].astype(np.float64)
        axis = int(np.asarray(inputs["axes"]).reshape(-1)[0])
        return {"output": np.sum(np.abs(x), axis=axis)}

    return Sample(
        "reduce_l1_runtime_axes",
        "ReduceL1-4 of a 4x5x6 f32 tensor whose axes are a second Parameter (i64, shape [1]): the output "
        "is [?,?] at load and gets its real shape at run time",
        build,
        lambda rng: {"data": _uniform(rng, shape), "axes": np.array([-2], np.int64)},
        reference,
    )


def _onnx_noop() -> Sample:
    shape = (2, 3, 4)

    def build() -> IR:
        ir = IR("onnx_reduce_mean_noop")
        data = ir.parameter("data", "f32", shape)
        r = ir.op(
            "ReduceMean",
            "reduce_mean",
            [data],
            shape,
            version="onnx",
            data={"keepdims": "1", "noop_with_empty_axes": "1"},
        )
        ir.result(r, "output")
        return ir

    def onnx_model():
        from onnx import TensorProto, helper

        node = helper.make_node("ReduceMean", ["data"], ["output"], keepdims=1, noop_with_empty_axes=1)
        graph = helper.make_graph(
            [node],
            "onnx_reduce_mean_noop",
            [helper.make_tensor_value_info("data", TensorProto.FLOAT, list(shape))],
            [helper.make_tensor_value_info("output", TensorProto.FLOAT, list(shape))],
        )
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)

    return Sample(
        "onnx_reduce_mean_noop",
        'ONNX-semantics ReduceMean (version="onnx") with noop_with_empty_axes=1 and no axes: the identity',
        build,
        lambda rng: {"data": _uniform(rng, shape)},
        lambda inputs: {"output": inputs["data"].astype(np.float64)},
        onnx_model,
    )


def _mean_broadcast() -> Sample:
    shapes = {"a": (3, 1, 4), "b": (1, 5, 1), "c": (4,)}

    def build() -> IR:
        ir = IR("mean_broadcast")
        ins = [ir.parameter(n, "f32", s) for n, s in shapes.items()]
        r = ir.op("Mean", "mean", ins, (3, 5, 4), version="onnx")
        ir.result(r, "output")
        return ir

    def onnx_model():
        from onnx import TensorProto, helper

        node = helper.make_node("Mean", list(shapes), ["output"])
        graph = helper.make_graph(
            [node],
            "mean_broadcast",
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in shapes.items()],
            [helper.make_tensor_value_info("output", TensorProto.FLOAT, [3, 5, 4])],
        )
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)

    return Sample(
        "mean_broadcast",
        'ONNX Mean-13 (version="onnx") of three f32 inputs [3,1,4], [1,5,1], [4] broadcast to [3,5,4]',
        build,
        lambda rng: {n: _uniform(rng, s) for n, s in shapes.items()},
        lambda inputs: {"output": sum(inputs[n].astype(np.float64) for n in shapes) / 3},
        onnx_model,
    )


def _f16_weights() -> Sample:
    shape = (2, 3, 4)

    def build() -> IR:
        ir = IR("f16_weights")
        x = ir.parameter("x", "f32", shape)
        w16 = ir.const("bias_compressed", F16_BIAS)
        w = ir.op(
            "Convert",
            "bias",
            [w16],
            F16_BIAS.shape,
            et="f32",
            data={"destination_type": "f32"},
            rt_info=[{"name": "decompression", "version": "0"}],
        )
        add = ir.op("Add", "add", [x, w], shape, data={"auto_broadcast": "numpy"})
        ax = ir.const("axes", np.array([-1], np.int64))
        r = ir.op("ReduceSum", "reduce_sum", [add, ax], (2, 3), data={"keep_dims": "false"})
        ir.result(r, "output")
        return ir

    def reference(inputs):
        x = inputs["x"].astype(np.float64)
        return {"output": np.sum(x + F16_BIAS.astype(np.float64), axis=-1)}

    return Sample(
        "f16_weights",
        "what ov.save_model writes with compress_to_fp16: an f16 Const -> Convert(f32, rt_info decompression) "
        "-> Add to a [2,3,4] Parameter -> ReduceSum over the last axis",
        build,
        lambda rng: {"x": _uniform(rng, shape)},
        reference,
    )


SAMPLES: list[Sample] = [
    _reduce_mean("reduce_mean_axes23_keepdims", [2, 3], True, (6, 12, 1, 1)),
    _reduce_mean("reduce_mean_axes23", [2, 3], False, (6, 12)),
    _reduce_mean("reduce_mean_axis1", [1], False, (6, 10, 24)),
    _reduce_mean("reduce_mean_axis_neg2", [-2], False, (6, 12, 24)),
    _l1_runtime_axes(),
    _onnx_noop(),
    _mean_broadcast(),
    _f16_weights(),
]
BY_NAME = {s.name: s for s in SAMPLES}


def sample_feeds(sample: Sample, seed: int = 0) -> dict:
    """The deterministic inputs used for a sample's cross-check (a seed per sample name)."""
    return sample.feeds(np.random.default_rng([seed, *sample.name.encode()]))


def write_all(out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for s in SAMPLES:
        for suffix, data in s.build().files().items():
            path = out_dir / (s.name + suffix)
            path.write_bytes(data)
            written.append(path)
    return written


def check_up_to_date(samples_dir: Path) -> list[str]:
    """Files of samples_dir that differ from (or lack) what this script writes."""
    bad = []
    for s in SAMPLES:
        files = s.build().files()
        for suffix in (".xml", ".bin"):
            path = samples_dir / (s.name + suffix)
            want = files.get(suffix)
            have = path.read_bytes() if path.exists() else None
            if want != have:
                bad.append(str(path))
    return bad


# ---------------------------------------------------------------------------------------------
# The OpenVINO cross-check
# ---------------------------------------------------------------------------------------------


def _fmt_ov(pshape) -> str:
    return str(pshape).replace(" ", "")


def _rel_err(got: np.ndarray, ref: np.ndarray) -> float:
    got = np.asarray(got, np.float64)
    if got.shape != ref.shape:
        return math.inf
    scale = max(float(np.max(np.abs(ref))) if ref.size else 0.0, 1e-30)
    return float(np.max(np.abs(got - ref))) / scale if ref.size else 0.0


def _declared(xml_path: Path) -> dict[str, str]:
    """Layer name -> declared dims of its first output port, in OV's '[a,b,?]' notation."""
    out = {}
    for layer in etree.parse(str(xml_path)).getroot().iter("layer"):
        port = layer.find("output/port")
        if port is not None:
            dims = [d.text for d in port.findall("dim")]
            out[layer.get("name")] = "[" + ",".join("?" if d == "-1" else d for d in dims) + "]"
    return out


IREXEC_TOL = 1e-6  # irexec vs the float64 reference (f32 outputs: a few ulps)
OV_TOL = 1e-5  # OpenVINO CPU vs the reference, beyond which a difference is noted


def check_with_openvino(samples_dir: Path) -> int:
    """Print a table comparing each sample in OpenVINO and irexec; return the number of failures."""
    try:
        import openvino as ov
    except ImportError:
        print("openvino is not installed: skipping the OpenVINO cross-check")
        return 0
    import irexec
    from irexec.shapes import format_shape

    core = ov.Core()
    config = {"INFERENCE_PRECISION_HINT": "f32"}
    rows, failures, notes = [], 0, []
    for s in SAMPLES:
        xml = samples_dir / (s.name + ".xml")
        feeds = sample_feeds(s)
        ref = s.reference(feeds)
        status, loaded, shapes_ok = "ok", "IR", True
        try:
            model = irexec.load(xml)
            got = model.infer(feeds)
            irexec_err = max(_rel_err(got[k], v) for k, v in ref.items())
        except irexec.IRExecError as e:
            rows.append((s.name, "-", "-", "irexec failed", "-", f"FAIL: {e}"))
            failures += 1
            continue
        if irexec_err > IREXEC_TOL:
            status = "FAIL: irexec differs from the reference"
            failures += 1

        try:
            if s.onnx is not None:
                loaded = "ONNX"
                with tempfile.TemporaryDirectory() as tmp:
                    path = Path(tmp) / (s.name + ".onnx")
                    path.write_bytes(s.onnx().SerializeToString())
                    ov_model = core.read_model(str(path))
            else:
                ov_model = core.read_model(str(xml))
        except Exception as e:  # OpenVINO's own errors have no common base class
            rows.append((s.name, "no", "-", f"{irexec_err:.1e}", "-", f"FAIL: OpenVINO cannot read it: {e}"))
            failures += 1
            continue

        if s.onnx is None:
            declared = _declared(xml)
            inferred = {info.name: format_shape(info.outputs[0].shape) for info in model.layer_infos() if info.outputs}
            for op in ov_model.get_ordered_ops():
                name = op.get_friendly_name()
                if op.get_output_size() == 0 or name not in inferred:
                    continue
                ov_shape = _fmt_ov(op.get_output_partial_shape(0))
                if not (ov_shape == inferred[name] == declared.get(name)):
                    shapes_ok = False
                    notes.append(
                        f"{s.name}: layer {name!r}: OpenVINO {ov_shape}, irexec {inferred[name]}, "
                        f"declared {declared.get(name)}"
                    )
        else:
            for out in ov_model.outputs:
                name = out.get_any_name()
                want = format_shape(model.outputs[0].shape)
                if _fmt_ov(out.get_partial_shape()) != want:
                    shapes_ok = False
                    notes.append(f"{s.name}: output {name!r}: OpenVINO {out.get_partial_shape()}, irexec {want}")
        if not shapes_ok:
            status = "FAIL: shapes differ"
            failures += 1

        compiled = core.compile_model(ov_model, "CPU", config)
        ov_out = compiled({k: np.ascontiguousarray(v) for k, v in feeds.items()})
        ov_vals = {o.get_any_name(): v for o, v in ov_out.items()}
        ov_err = max(_rel_err(ov_vals[k], v) for k, v in ref.items())
        if ov_err > OV_TOL:
            notes.append(
                f"{s.name}: OpenVINO CPU is {ov_err:.1e} (relative) from the float64 reference "
                "(known: it accumulates f32 in f32); not a failure"
            )
        rows.append((s.name, loaded, "yes" if shapes_ok else "NO", f"{irexec_err:.1e}", f"{ov_err:.1e}", status))

    header = ("sample", "OV reads", "shapes agree", "irexec err", "OV CPU err", "status")
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, tuple("-" * w for w in widths), *rows]:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
    print(
        "(errors are max |x - ref| / max |ref| against a float64 numpy reference; "
        "'OV reads ONNX' = the version=\"onnx\" sample's graph written as ONNX)"
    )
    for n in notes:
        print("note:", n)
    return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=SAMPLES_DIR, help="directory to write (default samples/)")
    parser.add_argument("--check", action="store_true", help="do not write; exit 1 if the files differ")
    parser.add_argument("--no-openvino", action="store_true", help="skip the OpenVINO cross-check")
    args = parser.parse_args(argv)
    if args.check:
        bad = check_up_to_date(args.out)
        for b in bad:
            print(f"out of date: {b}")
        if bad:
            return 1
        print(f"{len(SAMPLES)} samples in {args.out} are up to date")
    else:
        for path in write_all(args.out):
            print(f"wrote {path} ({path.stat().st_size} bytes)")
    if args.no_openvino:
        return 0
    return 1 if check_with_openvino(args.out) else 0


if __name__ == "__main__":
    sys.exit(main())
