"""Mutators of valid IR, shared by tests/test_fuzz.py (driven by hypothesis) and tools/triage.py
(driven by a seeded random.Random).

A few small, valid base models (`base_models`) are parsed into an lxml tree plus the .bin bytes (a
`Case`); each mutator changes one thing (an attribute value, a dim, an edge, a layer id, a type or
version, a port, the .bin length...) and returns a one-line description. Every random choice goes
through a `Chooser`, so hypothesis can shrink a failing case to the smallest mutation.

Also here: `make_feeds` (data of the right names, dtypes and shapes for a loaded model) and
`check_invariants` (what every model `irexec.load` accepts must satisfy).
"""

from __future__ import annotations

import copy
import math
import random
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from lxml import etree

from irexec.dtypes import bits
from irexec.feeds import axes_rank
from tests.support.irbuild import Net

# ---- choosers ----------------------------------------------------------------------------------


class RandomChooser:
    """Choices from a seeded random.Random (tools/triage.py)."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def choice(self, seq):
        seq = list(seq)
        return seq[self.rng.randrange(len(seq))]

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def boolean(self) -> bool:
        return self.rng.random() < 0.5


class DataChooser:
    """Choices drawn from hypothesis' `data` strategy (tests/test_fuzz.py), so failures shrink."""

    def __init__(self, data):
        from hypothesis import strategies as st

        self.data, self.st = data, st

    def choice(self, seq):
        return self.data.draw(self.st.sampled_from(list(seq)))

    def integer(self, lo: int, hi: int) -> int:
        return self.data.draw(self.st.integers(lo, hi))

    def boolean(self) -> bool:
        return self.data.draw(self.st.booleans())


# ---- the base models --------------------------------------------------------------------------


@dataclass
class Base:
    name: str
    xml: bytes
    bin: bytes


@dataclass
class Case:
    """A model being mutated: its XML tree, its .bin (None: no .bin file), what was done to it."""

    base: str
    root: etree._Element
    bin: bytes | None
    steps: list[str] = field(default_factory=list)
    raw_xml: bytes | None = None  # set by the byte-level mutators: the XML written as is

    @classmethod
    def of(cls, base: Base) -> Case:
        root = etree.fromstring(base.xml, etree.XMLParser(remove_blank_text=True))
        return cls(base.name, root, base.bin)

    def xml_bytes(self) -> bytes:
        if self.raw_xml is not None:
            return self.raw_xml
        return etree.tostring(self.root, xml_declaration=True, encoding="utf-8", pretty_print=True)

    def write(self, directory: Path, stem: str = "model") -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        xml = directory / f"{stem}.xml"
        xml.write_bytes(self.xml_bytes())
        b = directory / f"{stem}.bin"
        if self.bin is not None:
            b.write_bytes(self.bin)
        elif b.exists():
            b.unlink()
        return xml

    def describe(self) -> str:
        return f"{self.base}: " + "; ".join(self.steps) if self.steps else f"{self.base}: (unchanged)"


def _net_bytes(net: Net, tmp: Path) -> Base:
    xml = net.save(tmp / f"{net.name}.xml")
    return Base(net.name, xml.read_bytes(), xml.with_suffix(".bin").read_bytes())


def _reduce_mean_const(tmp: Path) -> Base:
    n = Net("reduce_mean_const")
    x = n.param("x", "f32", (2, 3, 4))
    axes = n.const(np.array([1, 2], np.int64))
    r = n.op("ReduceMean", [x, axes], {"keep_dims": "false"}, out_dims=[2])
    n.result(r, "y")
    return _net_bytes(n, tmp)


def _reduce_l1_runtime(tmp: Path) -> Base:
    n = Net("reduce_l1_runtime")
    x = n.param("x", "f32", (2, 3))
    a = n.param("axes", "i64", (1,))
    r = n.op("ReduceL1", [x, a], {"keep_dims": "true"}, version="opset4", out_dims=[-1, -1])
    n.result(r, "y")
    return _net_bytes(n, tmp)


def _scalar_const(n: Net, value) -> tuple:
    """A rank-0 Const."""
    return n.const(np.asarray(value))


def _glue_chain(tmp: Path) -> Base:
    """Squeeze -> ShapeOf -> ShapeOf -> Squeeze (the rank, a scalar) -> Range = axes [0, 1] of a
    ReduceMax over the f16 Convert of the squeezed input."""
    n = Net("glue_chain")
    x = n.param("x", "f32", (2, 1, 3))
    sq = n.op("Squeeze", [x, n.const(np.array([1], np.int64))], out_dims=[2, 3])
    shp = n.op("ShapeOf", [sq], {"output_type": "i64"}, version="opset3", out_et="i64", out_dims=[2])
    rank = n.op("ShapeOf", [shp], {"output_type": "i64"}, version="opset3", out_et="i64", out_dims=[1])
    stop = n.op("Squeeze", [rank], out_dims=[])
    start = _scalar_const(n, np.int64(0))
    step = _scalar_const(n, np.int64(1))
    axes = n.op("Range", [start, stop, step], {"output_type": "i64"}, version="opset4", out_et="i64", out_dims=[2])
    half = n.op("Convert", [sq], {"destination_type": "f16"}, out_et="f16", out_dims=[2, 3])
    red = n.op("ReduceMax", [half, axes], {"keep_dims": "true"}, out_dims=[1, 1])
    n.result(red, "y")
    return _net_bytes(n, tmp)


def _ov_f16(tmp: Path) -> Base | None:
    """What `ov.save_model` writes (f32 weights compressed to f16 + Convert), when OV is installed."""
    try:
        import openvino as ov
        import openvino.opset13 as ops
    except ImportError:
        return None
    p = ops.parameter([2, 3, 4], np.float32, name="x")
    w = ops.constant((np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 11) / 7)
    m = ops.multiply(p, w)
    r = ops.reduce_mean(m, ops.constant(np.array([1, 2], np.int64)), keep_dims=False)
    model = ov.Model([ops.result(r)], [p], "ov_f16")
    path = tmp / "ov_f16.xml"
    ov.save_model(model, str(path))  # compress_to_fp16=True is the default
    return Base("ov_f16", path.read_bytes(), path.with_suffix(".bin").read_bytes())


def _onnx_semantics(tmp: Path) -> Base:
    """version="onnx" layers (irexec only: OpenVINO has no such opset): ReduceLogSumExp over the
    `axes` attribute, then Mean with a Const; ReduceSumSquare over runtime axes."""
    n = Net("onnx_semantics")
    x = n.param("x", "f32", (2, 3, 4))
    axes = n.param("axes", "i64", (1,))
    lse = n.op("ReduceLogSumExp", [x], {"axes": "1", "keepdims": "0"}, version="onnx", out_dims=[2, 4])
    mean = n.op("Mean", [lse, n.const(np.linspace(-1, 1, 4).astype(np.float32))], version="onnx", out_dims=[2, 4])
    n.result(mean, "mean")
    ssq = n.op(
        "ReduceSumSquare",
        [x, axes],
        {"keepdims": "1", "noop_with_empty_axes": "1"},
        version="onnx",
        out_dims=[-1, -1, -1],
    )
    n.result(ssq, "ssq")
    return _net_bytes(n, tmp)


def base_models(tmp: Path, onnx: bool = False) -> list[Base]:
    """The base models, written once into `tmp` (the OV one only when openvino is installed; the
    ONNX-semantics one, which OpenVINO cannot read, only when asked)."""
    tmp.mkdir(parents=True, exist_ok=True)
    bases = [_reduce_mean_const(tmp), _reduce_l1_runtime(tmp), _glue_chain(tmp)]
    ov_base = _ov_f16(tmp)
    if ov_base is not None:
        bases.append(ov_base)
    if onnx:
        bases.append(_onnx_semantics(tmp))
    return bases


# ---- interesting values ------------------------------------------------------------------------

NUMBERS = [
    "0",
    "1",
    "2",
    "3",
    "4",
    "7",
    "-1",
    "-2",
    "",
    " 3 ",
    "+3",
    "3.0",
    "0x3",
    "1e3",
    "٣",
    "³",
    "١٢",
    "９",
    str(2**31),
    str(2**32),
    str(2**63 - 1),
    str(2**63),
    str(2**64),
    "99999999999999999999999",
]
DIMS = NUMBERS + ["?", "-1", "..3", "1..3"]
LISTS = ["0", "1", "0,1", "1,2", "-1", "-1,-2", "0,0", "5", "-9", "1,,2", "[1,2]", "2,3,4", "2, 3, 4", "0,1,2,3"]
SHAPES = [
    "",
    "?",
    "...",
    "?,?",
    "1..3",
    "..4",
    "2..",
    "3..1",
    "2,3",
    "2,3,4",
    "2,1,3",
    "0",
    "0,5",
    "-1,3",
    "-2",
    "2,?",
    "٣",
    f"{2**32},{2**32}",
    f"0,{2**64}",
    "1," * 70 + "1",
]
ETYPES = [
    "f32",
    "f16",
    "bf16",
    "f64",
    "i64",
    "i32",
    "i8",
    "u8",
    "u64",
    "boolean",
    "u1",
    "u4",
    "i4",
    "dynamic",
    "undefined",
    "string",
    "foo",
    "FP32",
    "",
]
BOOLS = ["true", "false", "TRUE", "False", "1", "0", "yes", "", "2"]
MISC = ["numpy", "none", "pdpd", "NUMPY", "x", "y", "a\\,b", "é", "\u202e", "\n"]
ATTR_VALUES = sorted(set(NUMBERS + LISTS + SHAPES + ETYPES + BOOLS + MISC), key=lambda s: (len(s), s))
ATTR_NAMES = [
    "keep_dims",
    "shape",
    "element_type",
    "offset",
    "size",
    "destination_type",
    "output_type",
    "auto_broadcast",
    "special_zero",
    "allow_axis_skip",
    "m_pythondiv",
    "keepdims",
    "noop_with_empty_axes",
    "axes",
]
PRECISIONS = [
    "FP32",
    "FP16",
    "BF16",
    "FP64",
    "I8",
    "U8",
    "I32",
    "I64",
    "U64",
    "BOOL",
    "BIN",
    "U1",
    "I4",
    "U4",
    "dynamic",
    "",
    "foo",
    "f32",
    "i64",
    "FP٣٢",
]
TYPES = [
    "Parameter",
    "Const",
    "Result",
    "ReduceMean",
    "ReduceSum",
    "ReduceProd",
    "ReduceMax",
    "ReduceMin",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogicalAnd",
    "ReduceLogicalOr",
    "Add",
    "Subtract",
    "Multiply",
    "Divide",
    "Power",
    "Maximum",
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
    "Convert",
    "ConvertLike",
    "Identity",
    "Mean",
    "ReduceLogSumExp",
    "reducemean",
    "RESULT",
    "Foo",
    "",
]
VERSIONS = [
    "opset1",
    "opset3",
    "opset4",
    "opset8",
    "opset13",
    "opset15",
    "opset16",
    "opset0",
    "opset99",
    "onnx",
    "ONNX",
    "",
    "opset",
    "opset١",
    "opset99999",
    "experimental",
    "1",
]
IDS = ["٣", "-1", "", "1e2", "+1", str(2**32), str(2**64), "99999999999999999999999", " 2 "]


# ---- the mutators ------------------------------------------------------------------------------


def _layers(case: Case) -> list:
    return list(case.root.iter("layer"))


def _name(layer) -> str:
    return f"layer {layer.get('id')!r} ({layer.get('type')})"


def mut_attr(case: Case, ch) -> str:
    """Set, add or delete a <data> attribute (or a layer attribute such as output_names)."""
    layer = ch.choice(_layers(case))
    data = layer.find("data")
    if data is None:
        data = etree.SubElement(layer, "data")
        layer.insert(0, data)
    existing = list(data.attrib)
    action = ch.choice(["set", "set", "set", "add", "delete"] if existing else ["add"])
    if action == "delete":
        key = ch.choice(existing)
        del data.attrib[key]
        return f"{_name(layer)}: delete {key}"
    key = ch.choice(existing) if action == "set" else ch.choice(ATTR_NAMES)
    value = ch.choice(ATTR_VALUES)
    data.set(key, value)
    return f"{_name(layer)}: {key}={value!r}"


def _ports(case: Case) -> list:
    return [(layer, port) for layer in _layers(case) for port in layer.iter("port")]


def mut_dim(case: Case, ch) -> str:
    """Change, add or delete one <dim> of a port."""
    ports = _ports(case)
    layer, port = ch.choice(ports)
    dims = port.findall("dim")
    action = ch.choice(["set", "set", "add", "delete"] if dims else ["add"])
    if action == "delete":
        i = ch.integer(0, len(dims) - 1)
        port.remove(dims[i])
        return f"{_name(layer)} port {port.get('id')}: delete dim {i}"
    value = ch.choice(DIMS)
    if action == "add":
        etree.SubElement(port, "dim").text = value
        return f"{_name(layer)} port {port.get('id')}: add dim {value!r}"
    i = ch.integer(0, len(dims) - 1)
    dims[i].text = value
    return f"{_name(layer)} port {port.get('id')}: dim {i} = {value!r}"


def mut_port(case: Case, ch) -> str:
    """A port's precision, id or names; or delete / duplicate a port."""
    layer, port = ch.choice(_ports(case))
    action = ch.choice(["precision", "precision", "id", "names", "delete", "duplicate"])
    where = f"{_name(layer)} port {port.get('id')}"
    if action == "precision":
        value = ch.choice(PRECISIONS)
        port.set("precision", value)
        return f"{where}: precision={value!r}"
    if action == "id":
        value = ch.choice(["0", "1", "2", "3", "7"] + IDS)
        port.set("id", value)
        return f"{where}: id={value!r}"
    if action == "names":
        value = ch.choice(["x", "y", "axes", "", "a,b", "a\\,b", "Result_8", "é"])
        port.set("names", value)
        return f"{where}: names={value!r}"
    if action == "delete":
        port.getparent().remove(port)
        return f"{where}: deleted"
    port.addnext(copy.deepcopy(port))
    return f"{where}: duplicated"


def _edges(case: Case) -> list:
    return list(case.root.iter("edge"))


def _ids(case: Case) -> list[str]:
    return [layer.get("id") or "0" for layer in _layers(case)]


def mut_edge(case: Case, ch) -> str:
    """Retarget, delete, duplicate, reverse or add an edge."""
    edges = _edges(case)
    action = ch.choice(["retarget", "retarget", "delete", "duplicate", "reverse", "add"] if edges else ["add"])
    if action == "add":
        edges_el = case.root.find("edges")
        if edges_el is None:
            edges_el = etree.SubElement(case.root, "edges")
        ids = _ids(case)
        e = etree.SubElement(edges_el, "edge")
        for key in ("from-layer", "to-layer"):
            e.set(key, ch.choice(ids))
        for key in ("from-port", "to-port"):
            e.set(key, str(ch.integer(0, 3)))
        return "add edge " + " ".join(f"{k}={v}" for k, v in e.attrib.items())
    i = ch.integer(0, len(edges) - 1)
    e = edges[i]
    if action == "delete":
        e.getparent().remove(e)
        return f"delete edge {i}"
    if action == "duplicate":
        e.addnext(copy.deepcopy(e))
        return f"duplicate edge {i}"
    if action == "reverse":
        fl, fp, tl, tp = (e.get(k) for k in ("from-layer", "from-port", "to-layer", "to-port"))
        e.set("from-layer", tl)
        e.set("from-port", tp)
        e.set("to-layer", fl)
        e.set("to-port", fp)
        return f"reverse edge {i}"
    key = ch.choice(["from-layer", "from-port", "to-layer", "to-port"])
    if key.endswith("layer"):
        value = ch.choice(_ids(case) + ["99"] + IDS)
    else:
        value = ch.choice(["0", "1", "2", "3", "9"] + IDS)
    e.set(key, value)
    return f"edge {i}: {key}={value!r}"


def mut_layer_id(case: Case, ch) -> str:
    """A layer id becomes another layer's (duplicate), a fresh one, or something malformed."""
    layer = ch.choice(_layers(case))
    old = layer.get("id")
    value = ch.choice(_ids(case) + ["42"] + IDS)
    layer.set("id", value)
    if ch.boolean():  # keep the edges pointing at it, so only the id's form is under test
        for e in _edges(case):
            for key in ("from-layer", "to-layer"):
                if e.get(key) == old:
                    e.set(key, value)
        return f"layer {old!r}: id={value!r} (edges follow)"
    return f"layer {old!r}: id={value!r}"


def mut_type_version(case: Case, ch) -> str:
    layer = ch.choice(_layers(case))
    where = _name(layer)
    if ch.boolean():
        value = ch.choice(TYPES)
        layer.set("type", value)
        return f"{where}: type={value!r}"
    value = ch.choice(VERSIONS)
    layer.set("version", value)
    return f"{where}: version={value!r}"


def mut_structure(case: Case, ch) -> str:
    """Delete a layer, clone one (same or fresh id), drop a <data>/<input>/<output>, or the net's
    version / <edges> / <layers>."""
    layers = _layers(case)
    action = ch.choice(
        ["delete", "clone", "clone_same_id", "drop_child", "net_version", "drop_edges", "swap", "missing_attr"]
    )
    if action == "net_version":
        value = ch.choice(["10", "11", "12", "9", "١١", "", "11.0", "010"])
        case.root.set("version", value)
        return f"net version={value!r}"
    if action == "drop_edges":
        edges = case.root.find("edges")
        if edges is not None:
            case.root.remove(edges)
        return "delete <edges>"
    layer = ch.choice(layers)
    where = _name(layer)
    if action == "delete":
        layer.getparent().remove(layer)
        return f"{where}: deleted"
    if action in ("clone", "clone_same_id"):
        twin = copy.deepcopy(layer)
        if action == "clone":
            twin.set("id", str(1000 + len(layers)))
            twin.set("name", (layer.get("name") or "") + "_clone")
        layer.getparent().append(twin)
        return f"{where}: cloned" + (" with the same id" if action == "clone_same_id" else "")
    if action == "swap":
        other = ch.choice(layers)
        if other is not layer:
            a, b = layer.getparent().index(layer), other.getparent().index(other)
            parent = layer.getparent()
            parent.remove(layer)
            parent.insert(b, layer)
            parent.remove(other)
            parent.insert(a, other)
        return f"{where}: swapped with {_name(other)}"
    if action == "missing_attr":
        key = ch.choice(["id", "name", "type", "version"])
        if key in layer.attrib:
            del layer.attrib[key]
        return f"{where}: no {key} attribute"
    tag = ch.choice(["data", "input", "output", "rt_info"])
    child = layer.find(tag)
    if child is not None:
        layer.remove(child)
    return f"{where}: delete <{tag}>"


def mut_bin(case: Case, ch) -> str:
    """Truncate, extend, overwrite or delete the .bin."""
    blob = case.bin or b""
    action = ch.choice(["truncate", "truncate", "extend", "overwrite", "delete", "empty"])
    if action == "delete":
        case.bin = None
        return ".bin deleted"
    if action == "empty":
        case.bin = b""
        return ".bin emptied"
    if action == "truncate":
        n = ch.integer(0, max(len(blob) - 1, 0))
        case.bin = blob[:n]
        return f".bin truncated to {n} bytes"
    if action == "extend":
        n = ch.choice([1, 3, 8, 4096])
        fill = ch.choice([0x00, 0xFF, 0x7F, 0x80])
        case.bin = blob + bytes([fill]) * n
        return f".bin extended by {n} bytes of {fill:#04x}"
    if not blob:
        return ".bin empty, nothing to overwrite"
    at = ch.integer(0, len(blob) - 1)
    n = ch.integer(1, min(8, len(blob) - at))
    fill = ch.choice([0x00, 0xFF, 0x7F, 0x80, 0x01])
    case.bin = blob[:at] + bytes([fill]) * n + blob[at + n :]
    return f".bin bytes {at}..{at + n - 1} = {fill:#04x}"


def mut_xml_bytes(case: Case, ch) -> str:
    """Byte-level damage to the serialized XML: truncation, a stray byte, a non-ASCII digit."""
    data = case.xml_bytes()
    action = ch.choice(["truncate", "insert", "replace_digit"])
    if action == "truncate":
        n = ch.integer(0, len(data) - 1)
        case.raw_xml = data[:n]
        return f"XML truncated to {n} bytes"
    if action == "insert":
        at = ch.integer(0, len(data))
        junk = ch.choice([b"\x00", b"\xff", b"<", b"&", b"]]>", b"\xc3", "٣".encode(), b"<!-- c -->"])
        case.raw_xml = data[:at] + junk + data[at:]
        return f"XML: {junk!r} inserted at byte {at}"
    positions = [i for i, c in enumerate(data) if 0x30 <= c <= 0x39]
    if not positions:
        return "XML has no digit"
    at = ch.choice(positions)
    digit = data[at] - 0x30
    case.raw_xml = data[:at] + chr(0x0660 + digit).encode() + data[at + 1 :]
    return f"XML: digit at byte {at} -> Arabic-Indic {digit}"


MUTATORS = {
    "attr": mut_attr,
    "dim": mut_dim,
    "port": mut_port,
    "edge": mut_edge,
    "layer_id": mut_layer_id,
    "type_version": mut_type_version,
    "structure": mut_structure,
    "bin": mut_bin,
}
# Weighted: the semantic mutators more often than the structural ones.
WEIGHTED = (
    ["attr"] * 4 + ["dim"] * 3 + ["port"] * 2 + ["edge"] * 2 + ["layer_id", "type_version", "structure", "bin", "bin"]
)


def mutate(base: Base, ch, max_steps: int = 3) -> Case:
    """The base model with 1..max_steps mutations (and, rarely, byte-level XML damage last)."""
    case = Case.of(base)
    for _ in range(ch.integer(1, max_steps)):
        name = ch.choice(WEIGHTED)
        if not _layers(case) and name not in ("bin",):
            continue
        case.steps.append(MUTATORS[name](case, ch))
    if ch.integer(0, 9) == 0:
        case.steps.append(mut_xml_bytes(case, ch))
    return case


# ---- feeds and invariants ----------------------------------------------------------------------


def _dim(bound) -> int:
    if bound.hi is not None and bound.hi == bound.lo:
        return bound.lo
    n = max(bound.lo, 2)
    return n if bound.hi is None else min(n, bound.hi)


def make_feeds(model, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Data for every input: the declared dtype; static dims as declared, dynamic ones 2 (within
    the Parameter's bounds), a dynamic rank as [2, 2]; integer inputs that feed reductions' axes
    get valid distinct axes, other integers small values."""
    feeds = {}
    for pos, info in enumerate(model.inputs):
        op = model.ops[model.graph.parameters[pos]]
        bounds = getattr(op, "bounds", None)
        shape = (2, 2) if bounds is None else tuple(_dim(b) for b in bounds)
        dt = info.dtype
        if dt.kind == "f":
            value = rng.standard_normal(shape).astype(dt)
        elif dt.kind == "b":
            value = rng.random(shape) < 0.5
        else:
            rank = axes_rank(model, pos)
            n = math.prod(shape)
            if rank is not None and n <= max(rank, 0):
                value = rng.permutation(max(rank, 1))[:n].astype(dt).reshape(shape)
                if rank == 0:
                    value = np.zeros(shape, dt)
            else:
                value = rng.integers(0, 3, size=shape).astype(dt)
        feeds[info.name] = value
    return feeds


def check_invariants(model, xml: bytes, bin_size: int | None) -> None:
    """What every accepted model satisfies; AssertionError naming the first that does not hold."""
    graph = model.graph
    n_layers = sum(1 for _ in etree.fromstring(xml, etree.XMLParser(resolve_entities=False)).iter("layer"))
    assert len(graph.layers) == n_layers, f"{n_layers} <layer> elements but {len(graph.layers)} unique ids"
    assert len(graph.order) == len(set(graph.order)) == len(graph.layers), "graph.order is not a permutation"
    assert set(graph.order) == set(graph.layers), "graph.order does not cover the layers"
    position = {lid: i for i, lid in enumerate(graph.order)}
    for lid, operands in graph.operands.items():
        for src, out in operands:
            assert position[src] < position[lid], f"layer {lid} reads layer {src}, which comes later"
            assert 0 <= out < len(graph.layers[src].outputs), f"layer {lid} reads a missing output of {src}"
        assert len(operands) == len(graph.layers[lid].inputs), f"layer {lid}: operands != input ports"
    assert graph.results, "no Result"
    for lid, layer in graph.layers.items():
        if layer.type.lower() == "const":
            op = model.ops[lid]
            off, size = op.offset, op.size
            assert bin_size is not None, f"Const {lid} accepted without a .bin"
            assert 0 <= off and off + size <= bin_size, f"Const {lid}: offset {off} + size {size} > {bin_size}"
    limits = model.limits
    for key, spec in model.specs.items():
        if spec.shape is not None:
            assert len(spec.shape) <= limits.max_rank, f"{key}: rank {len(spec.shape)} above the limit"
        if spec.is_static:
            n = math.prod(spec.shape)
            assert n <= limits.max_tensor_elements, f"{key}: {n} elements above the limit"
            nbytes = math.ceil(n * bits(spec.dtype) / 8)
            assert nbytes <= limits.max_tensor_bytes, f"{key}: {nbytes} bytes above the limit"
            assert all(d <= limits.max_tensor_elements for d in spec.shape), f"{key}: a dim above the limit"
        if spec.value is not None:
            assert spec.value.shape == tuple(spec.shape), f"{key}: folded value shape != spec shape"
    for info in list(model.inputs) + list(model.outputs):
        assert isinstance(info.name, str)
