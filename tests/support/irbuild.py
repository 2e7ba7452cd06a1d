"""A tiny IR v11 writer for tests: Parameters, Consts (into a .bin), any layer, Results."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from lxml import etree

from irexec.dtypes import from_numpy

PRECISION = {
    "f32": "FP32",
    "f16": "FP16",
    "bf16": "BF16",
    "f64": "FP64",
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


class Net:
    """Build a graph layer by layer; refs are (layer id, output port id, element type, dims)."""

    def __init__(self, name: str = "net"):
        self.name = name
        self.layers: list[etree._Element] = []
        self.edges: list[tuple[int, int, int, int]] = []
        self.blob = bytearray()

    def _layer(self, type_, version, name, attrs, inputs, outputs):
        lid = len(self.layers)
        el = etree.Element("layer", id=str(lid), name=name or f"{type_}_{lid}", type=type_, version=version)
        if attrs:
            etree.SubElement(el, "data", {k: str(v) for k, v in attrs.items()})
        refs = []
        if inputs:
            inp = etree.SubElement(el, "input")
            for i, (src, sport, et, dims) in enumerate(inputs):
                port = etree.SubElement(inp, "port", id=str(i), precision=PRECISION.get(et, et.upper()))
                for d in dims:
                    etree.SubElement(port, "dim").text = str(d)
                self.edges.append((src, sport, lid, i))
        if outputs:
            out = etree.SubElement(el, "output")
            for j, (et, dims, names) in enumerate(outputs):
                pid = len(inputs) + j
                attrs = {"id": str(pid), "precision": PRECISION.get(et, et.upper())}
                if names:
                    attrs["names"] = names
                port = etree.SubElement(out, "port", attrs)
                for d in dims:
                    etree.SubElement(port, "dim").text = str(d)
                refs.append((lid, pid, et, tuple(dims)))
        self.layers.append(el)
        return refs

    def param(self, name: str, et: str, shape) -> tuple:
        dims = [-1 if d is None else d for d in shape]
        text = ",".join("?" if d is None else str(d) for d in shape)
        return self._layer("Parameter", "opset1", name, {"shape": text, "element_type": et}, [], [(et, dims, name)])[0]

    def const(self, value, et: str | None = None) -> tuple:
        value = np.array(value, order="C")  # ascontiguousarray would make a 0-d array 1-d
        et = et or from_numpy(value.dtype)
        if et == "bf16":
            raw = (value.astype(np.float32).view(np.uint32) >> 16).astype("<u2").tobytes()
        elif et == "boolean":
            raw = value.astype(np.uint8).tobytes()
        else:
            raw = value.astype(value.dtype.newbyteorder("<")).tobytes()
        offset = len(self.blob)
        self.blob += raw
        attrs = {"element_type": et, "shape": ",".join(map(str, value.shape)), "offset": offset, "size": len(raw)}
        return self._layer("Const", "opset1", None, attrs, [], [(et, list(value.shape), None)])[0]

    def op(self, type_, inputs, attrs=None, *, version="opset1", out_et=None, out_dims=None, name=None) -> tuple:
        et = out_et or inputs[0][2]
        dims = list(out_dims) if out_dims is not None else []
        return self._layer(type_, version, name, attrs, list(inputs), [(et, dims, None)])[0]

    def result(self, ref, name: str) -> None:
        el_refs = self._layer("Result", "opset1", name, None, [ref], [])
        del el_refs
        self.layers[-1].set("output_names", name)

    def save(self, path) -> Path:
        path = Path(path)
        net = etree.Element("net", name=self.name, version="11")
        layers = etree.SubElement(net, "layers")
        for el in self.layers:
            layers.append(el)
        edges = etree.SubElement(net, "edges")
        for a, b, c, d in self.edges:
            etree.SubElement(
                edges, "edge", {"from-layer": str(a), "from-port": str(b), "to-layer": str(c), "to-port": str(d)}
            )
        path.write_bytes(etree.tostring(net, pretty_print=True, xml_declaration=True))
        path.with_suffix(".bin").write_bytes(bytes(self.blob))
        return path
