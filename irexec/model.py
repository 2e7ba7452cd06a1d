"""The public Model: `load` reads, checks and shape-infers an IR file; `infer` runs it;
`validate` compares every declared port claim with what irexec infers.

Inputs and outputs show the types OpenVINO's `read_model` presents (IR v10: f16 inputs as f32,
outputs as i32 or f32) and values are computed under the precision rule ("f32" by default: f16
layers run in f32, as OpenVINO's CPU plugin does); both in `irexec/precision.py`. A
feed is converted from its presented type to the type the graph computes its Parameter in,
and a result from its computed type to its presented type.
"""

from __future__ import annotations

import math
import sys
import threading
import warnings
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import allocator, config
from .casting import safe_cast
from .dtypes import STRING, SUB_BYTE_TYPES, bits, cast, from_numpy, numpy_dtype, round_bf16
from .errors import ExecutionError, FormatError, InputError, IRExecError, LimitError, UsageError
from .executor import execute, execute_traced
from .ir.graph import ValueKey, build_graph
from .ir.preprocess import apply_pre_process
from .ir.reader import read_xml, split_names
from .ir.weights import Weights, decode
from .kernels import jit
from .limits import DEFAULT_LIMITS, Limits
from .plan import make_plan
from .precision import check_precision, v10_input_type, v10_output_type
from .shape_inference import Context, infer_graph
from .shapes import TensorSpec, compatible, format_shape, parse_partial_shape
from .state import InferRequest, model_state
from .strings import check_mode, from_feed, to_caller
from .subgraph import Body

# shapes of a dynamic input remembered as checked (`Model._fast_feeds`)
FAST_SHAPES = 16


@dataclass(frozen=True)
class TensorInfo:
    """A model input or output: name, shape (None per dynamic dim; None for a dynamic rank),
    numpy dtype, and the IR element type (bf16 surfaces as float32 arrays)."""

    name: str
    shape: tuple[int | None, ...] | None
    dtype: np.dtype
    element_type: str
    bounds: tuple | None = None  # per dim a Bound (interval dims like 1..8) or None

    @property
    def dims_text(self) -> str:
        """The shape as OpenVINO prints it: `[1..8,3,?]`, `[...]` for a dynamic rank."""
        if self.shape is None:
            return "[...]"
        parts = []
        for i, d in enumerate(self.shape):
            b = None if self.bounds is None else self.bounds[i]
            parts.append(str(d) if d is not None else (str(b) if b is not None else "?"))
        return "[" + ",".join(parts) + "]"


@dataclass(frozen=True)
class LayerInfo:
    id: int
    name: str
    type: str
    version: str
    line: int | None
    outputs: tuple[TensorInfo, ...]


@dataclass(frozen=True)
class Issue:
    """One declared claim that differs from what irexec infers."""

    layer_id: int
    name: str
    type: str
    version: str
    line: int | None
    port: int
    direction: str  # "input" or "output"
    kind: str  # "dims", "precision", or "state" (a ReadValue whose variable no Assign writes)
    declared: str
    inferred: str
    path: str = ""  # the sub-graph the layer sits in ("layer id=7 ... Loop-opset5 line 12 > body"), "" at top

    def __str__(self) -> str:
        if self.kind == "state":  # a graph-wide finding about a variable (irexec/state.py)
            return f"layer id={self.layer_id} name={self.name!r} {self.type}-{self.version} line {self.line}: {self.declared}"
        return (
            f"{self.path + ' > ' if self.path else ''}layer id={self.layer_id} name={self.name!r} {self.type}-{self.version} line {self.line}: "
            f"{self.direction} port {self.port} {self.kind} declared {self.declared}, inferred {self.inferred}"
        )

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class ValidationReport:
    """`issues`: false claims (and edges to missing layers); `notes`: differences that are how
    OpenVINO writes files, not errors (the f16 precision a weight-decompression Convert's port
    may carry); `unused`: layers no Result needs; `unchecked`: layer id -> why it could not be
    checked (after an unsupported layer)."""

    issues: tuple[Issue, ...]
    layers: tuple[LayerInfo, ...]
    unused: tuple[LayerInfo, ...]
    notes: tuple[Issue, ...] = ()
    unchecked: tuple = ()

    @property
    def ok(self) -> bool:
        return not self.issues


def _declared_dims(dims: tuple[int, ...]) -> str:
    return "[" + ",".join("?" if d == -1 else str(d) for d in dims) + "]"


def _outside_irexec() -> int:
    """The `stacklevel` of the first caller outside irexec, seen from the function calling this."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith("irexec"):
        frame, level = frame.f_back, level + 1
    return level


def _is_index(key) -> bool:
    return isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_))


def _dim_text(d) -> str:
    """One dim of a reshape: an int (-1 dynamic), None, a string, a (lo, hi) pair (hi -1 =
    unbounded), or an object whose str() is a dim (OpenVINO's Dimension prints "?", "2..8")."""
    if d is None:
        return "?"
    if _is_index(d):
        return "?" if d == -1 else str(int(d))
    if isinstance(d, (tuple, list)) and len(d) == 2 and all(_is_index(x) for x in d):
        lo, hi = (int(x) for x in d)
        return f"{lo}.." if hi == -1 else f"{lo}..{hi}"
    return str(d)


def _shape_text(shape) -> str:
    """A reshape's shape as the text `parse_partial_shape` reads."""
    if isinstance(shape, str):
        return shape
    try:
        dims = list(shape)
    except TypeError:
        raise FormatError(f"{shape!r} is not a shape (a sequence of dims or a string like '1,3,?,1..8')") from None
    return ",".join(_dim_text(d) for d in dims)


def _bounds_text(bounds) -> str:
    return "..." if bounds is None else ",".join(str(b) for b in bounds)


class Model:
    """A loaded, checked IR model. Create it with `irexec.load`."""

    def __init__(
        self,
        path: str | Path,
        limits: Limits | None = None,
        allow_unsupported: bool = False,
        bin: str | Path | None = None,
        mmap: bool = True,
        shapes: dict | None = None,
        precision: str = "f32",
        strings: str = "str",
        convert_dtypes: bool = False,
    ):
        self.path = str(path)
        self.limits = limits or DEFAULT_LIMITS
        self.convert_dtypes = bool(convert_dtypes)
        self._cast_reported = False
        self._load_args = {"limits": limits, "allow_unsupported": allow_unsupported, "bin": bin, "mmap": mmap}
        try:
            self.precision = check_precision(precision)
            self.strings = check_mode(strings)
        except ValueError as e:
            raise UsageError(str(e)) from None
        net = read_xml(path, self.limits)
        self.weights = Weights(Path(path).with_suffix(".bin") if bin is None else Path(bin), mmap)
        net, added, self.scale_ignored = apply_pre_process(net, self.weights)
        self.graph = build_graph(net)
        self.reshaped = self._shape_overrides(shapes or {})
        context = Context(self.weights, self.limits, self.reshaped, self.precision, added, bodies=Body)
        self._found = infer_graph(self.graph, context, allow_unsupported)
        self.ops, self.specs = self._found.ops, self._found.specs
        self._plan = make_plan(self.graph, self._found)
        # variables (irexec/state.py): {} for a stateless model, whose run path is unchanged
        self.variables, self._state_plans, self._unpaired = model_state(self.graph, self._found, self._plan)
        self._default: InferRequest | None = None
        self._default_lock = threading.Lock()
        self._calls = 0  # infer calls (racing threads may miss one: it only times a wait)
        self.inputs = self._input_infos()
        self.outputs = self._output_infos()
        self._in_cast = self._boundary(self.inputs, self.graph.parameters)
        self._out_cast = self._boundary(self.outputs, self.graph.results, outputs=True)
        self._feed_index = {info.name: i for i, info in enumerate(self.inputs)}
        for i, lid in enumerate(self.graph.parameters):  # every name of the port, as OpenVINO
            for name in self.graph.layers[lid].outputs[0].names if self.graph.layers[lid].outputs else ():
                self._feed_index.setdefault(name, i)
        if net.version == 10:
            for i, lid in enumerate(self.graph.parameters):
                self._feed_index.setdefault(self.graph.layers[lid].name, i)
        self.output_aliases = self._output_alias_map(net.version)
        self._position = {lid: i for i, lid in enumerate(self.graph.order)}
        self._fast = self._fast_feeds()

    def _shape_overrides(self, shapes: dict) -> dict:
        """{input: shape} -> {Parameter layer id: bounds}. An input is a name (any name of its
        port, or its layer's), a position (int) or a TensorInfo; a shape is one string
        ("1,3,224,224", "[?,3,1..8]", "..." for a dynamic rank) or a sequence of dims, each an int,
        -1 or None (dynamic), "?" or "a..b", a (lo, hi) pair (hi -1: unbounded) or anything
        whose str() is one of those (OpenVINO's Dimension)."""
        if not shapes:
            return {}
        by_name: dict[str, int] = {}
        for lid in self.graph.parameters:
            layer = self.graph.layers[lid]
            by_name.setdefault(layer.name, lid)
            for n in layer.outputs[0].names if layer.outputs else ():
                by_name.setdefault(n, lid)
        out = {}
        for key, shape in shapes.items():
            lid = self._reshaped_parameter(key, by_name)
            name = key if isinstance(key, str) else self.graph.layers[lid].name
            try:
                out[lid] = parse_partial_shape(_shape_text(shape))
            except FormatError as e:
                raise UsageError(f"shape for {name!r}: {e.message}") from None
        return out

    def _reshaped_parameter(self, key, by_name: dict[str, int]) -> int:
        """The Parameter layer id a reshape key names (a name, a position or a TensorInfo)."""
        n = len(self.graph.parameters)
        if isinstance(key, TensorInfo):
            key = key.name
        if _is_index(key):
            if not 0 <= key < n:
                raise UsageError(f"shape given for input index {key}, the model has {n} input(s)")
            return self.graph.parameters[int(key)]
        if not isinstance(key, str) or key not in by_name:
            raise UsageError(f"shape given for {key!r}, which is not an input (inputs: {', '.join(sorted(by_name))})")
        return by_name[key]

    def reshape(self, shapes) -> Model:
        """A new Model with new input shapes, as OpenVINO's `Model.reshape` (irexec's `load(...,
        shapes=)`): `shapes` is {input name, index or TensorInfo: shape} or, for a one-input
        model, a shape (forms in `_shape_overrides`: `[1, 3, -1, (32, 64)]`, `"?,3,1..8"`).
        Inputs not named keep their current shapes; shape inference runs again on the file. This
        model is left as it is (it may be shared by threads; OpenVINO's reshape changes its
        model in place: `irexec.compat.Model.reshape` does that)."""
        if not isinstance(shapes, dict):
            if len(self.inputs) != 1:
                raise UsageError(
                    f"reshape with one shape needs a one-input model; this one has {len(self.inputs)}: "
                    "give {input name or index: shape}"
                )
            shapes = {0: shapes}
        merged = {self.graph.parameters.index(lid): _bounds_text(b) for lid, b in self.reshaped.items()}
        for lid, bounds in self._shape_overrides(shapes).items():
            merged[self.graph.parameters.index(lid)] = _bounds_text(bounds)
        return _construct(
            self.path,
            **self._load_args,
            shapes=merged,
            precision=self.precision,
            strings=self.strings,
            convert_dtypes=self.convert_dtypes,
        )

    def _output_alias_map(self, ir_version: int) -> dict[str, str]:
        """Other names an output answers to -> its canonical name: the producing port's other
        names, and in IR v10 the producing layer's name (OpenVINO names v10 outputs after the
        layer; `name.N` for output N of a layer with several)."""
        aliases: dict[str, str] = {}
        canonical = {o.name for o in self.outputs}
        for rid, info in zip(self.graph.results, self.outputs):
            src, pos = self.graph.operands[rid][0]
            producer = self.graph.layers[src]
            names = list(producer.outputs[pos].names)
            if ir_version == 10:
                names.append(producer.name if len(producer.outputs) == 1 else f"{producer.name}.{pos}")
            for n in names:
                if n not in canonical:
                    aliases.setdefault(n, info.name)
        return aliases

    # ---- names --------------------------------------------------------------------------
    def _info(self, name: str, spec: TensorSpec, et: str | None = None) -> TensorInfo:
        et = spec.dtype if et is None else et
        dtype = None if et is None else np.dtype(np.str_) if et == STRING else numpy_dtype(et)
        return TensorInfo(name, spec.shape, dtype, et, spec.bounds)

    def declared_type(self, key: ValueKey) -> str | None:
        """The element type the file declares for a value (the type it is computed in, unless
        the precision rule computes it in f32)."""
        return self._found.declared_type(key)

    def _presented(self, key: ValueKey, output: bool) -> str | None:
        """The type OpenVINO's read_model shows for an input or output (IR v10's legacy types)."""
        et = self.declared_type(key)
        if et is None or self.graph.net.version != 10:
            return et
        return v10_output_type(et) if output else v10_input_type(et)

    def _boundary(self, infos: list[TensorInfo], lids: tuple[int, ...], outputs: bool = False) -> list:
        """Per input (output), the type to convert a feed (a result) to, or None when the
        presented type is the computed one."""
        out = []
        for info, lid in zip(infos, lids):
            computed = self.specs[(lid, 0)].dtype
            if computed is None or computed == info.element_type:
                out.append(None)
            else:
                out.append(info.element_type if outputs else computed)
        return out

    @property
    def unsupported(self) -> dict[tuple[str, str], list[int]]:
        """Layers no op implements, by (type, version) (only with `allow_unsupported`)."""
        return self._found.unsupported

    @property
    def unchecked(self) -> dict[int, str]:
        """Layers whose shapes could not be inferred, with the reason (only with `allow_unsupported`)."""
        return self._found.unchecked

    def _input_infos(self) -> list[TensorInfo]:
        infos, seen = [], set()
        for lid in self.graph.parameters:
            layer = self.graph.layers[lid]
            port = layer.outputs[0] if layer.outputs else None
            name = port.names[0] if port is not None and port.names else layer.name
            if name in seen:
                raise FormatError(f"input name {name!r} is used by two Parameters", layer.where)
            seen.add(name)
            infos.append(self._info(name, self.specs[(lid, 0)], self._presented((lid, 0), False)))
        return infos

    def _output_infos(self) -> list[TensorInfo]:
        infos, seen = [], set()
        for rid in self.graph.results:
            layer = self.graph.layers[rid]
            src, pos = self.graph.operands[rid][0]
            names = layer.attrs.get("output_names")
            listed = split_names(names) if names else ()
            port_names = self.graph.layers[src].outputs[pos].names
            name = listed[0] if listed else port_names[0] if port_names else layer.name
            if name in seen:
                name = layer.name
            seen.add(name)
            infos.append(self._info(name, self.specs[(rid, 0)], self._presented((rid, 0), True)))
        return infos

    # ---- layers and validation ----------------------------------------------------------
    def layer_infos(self) -> list[LayerInfo]:
        out = []
        for lid in self.graph.order:
            layer = self.graph.layers[lid]
            specs = [self.specs[(lid, i)] for i in range(len(layer.outputs))]
            out.append(
                LayerInfo(
                    lid,
                    layer.name,
                    layer.type,
                    layer.version,
                    layer.line,
                    tuple(self._info(layer.name, s, self.declared_type((lid, i))) for i, s in enumerate(specs)),
                )
            )
        return out

    def validate(self) -> ValidationReport:
        """Every declared dim or precision (output ports, and input ports against their producer)
        that differs from the inferred one. Dynamic on either side is not a difference."""
        issues, notes = [], []
        self._claims(self.graph, self._found, (), issues, notes)
        for body, found, path in self.bodies():
            if found is not None:
                self._claims(body.graph, found, path, issues, notes)
        for e in self.graph.dangling:
            known = e.from_layer if e.from_layer in self.graph.layers else e.to_layer
            missing = e.to_layer if known == e.from_layer else e.from_layer
            lay = self.graph.layers.get(known)
            port = e.from_port if known == e.from_layer else e.to_port
            issues.append(
                Issue(
                    known,
                    lay.name if lay else "",
                    lay.type if lay else "",
                    lay.version if lay else "",
                    e.line,
                    port,
                    "edge",
                    "edge",
                    f"edge {e.from_layer}:{e.from_port} -> {e.to_layer}:{e.to_port}",
                    f"layer id {missing} does not exist (the edge is ignored, as OpenVINO does)",
                )
            )
        for lid, why in self._unpaired:
            lay = self.graph.layers[lid]
            issues.append(Issue(lid, lay.name, lay.type, lay.version, lay.line, 0, "variable", "state", why, ""))
        infos = self.layer_infos()
        unused = tuple(i for i in infos if i.id not in self.graph.needed)
        return ValidationReport(tuple(issues), tuple(infos), unused, tuple(notes), tuple(self.unchecked.items()))

    @property
    def warnings(self) -> list[str]:
        """What irexec follows OpenVINO in ignoring, said once (the CLI prints it to stderr)."""
        if not self.scale_ignored:
            return []
        return ["the <pre-process> block's <scale> values are ignored, as OpenVINO's IR reader ignores them"]

    def _claims(self, graph, found, path: tuple, issues: list, notes: list) -> None:
        """The declared claims of one graph (the model's or a body's) that differ from inference
        (`found`: its Inferred; precisions are compared with the declared types, which the
        precision rule may compute in f32)."""
        for lid in graph.order:
            layer = graph.layers[lid]
            claims = [("output", p, (lid, i)) for i, p in enumerate(layer.outputs)]
            claims += [("input", p, graph.operands[lid][i]) for i, p in enumerate(layer.inputs)]
            for direction, port, key in claims:
                spec = found.specs[key]
                if spec.dtype is None:
                    continue  # unknown (after an unsupported layer): nothing to compare
                claims_found = []
                if not self.reshaped and not compatible(port.dims, spec.shape):
                    claims_found.append(("dims", _declared_dims(port.dims), format_shape(spec.shape)))
                declared = found.declared_type(key)
                if port.precision is not None and port.precision != declared:
                    claims_found.append(("precision", port.precision, declared))
                for kind, declared, inferred in claims_found:
                    issue = Issue(
                        lid,
                        layer.name,
                        layer.type,
                        layer.version,
                        port.line or layer.line,
                        port.id,
                        direction,
                        kind,
                        declared,
                        inferred,
                        " > ".join(path),
                    )
                    decompressed = (
                        kind == "precision" and declared in ("f16", "bf16") and _is_decompression(graph.layers[key[0]])
                    )
                    (notes if decompressed else issues).append(issue)

    def bodies(self) -> list:
        """Every sub-graph, nested ones included, as (Body, its inferred specs or None, path):
        the path names the layers and bodies from the top level down."""
        out = []

        def visit(ops: dict, graph, path: tuple) -> None:
            for lid in graph.order:
                op = ops.get(lid)
                for body, found in getattr(op, "subgraphs", lambda: [])():
                    here = path + (f"{op.where} > {body.tag}",)
                    out.append((body, found, here))
                    if found is not None:
                        visit(found.ops, body.graph, here)

        visit(self.ops, self.graph, ())
        return out

    def info(self) -> dict:
        """Inputs, outputs, op histogram and weight bytes, as plain data."""
        hist = Counter(f"{lay.type}-{lay.version}" for lay in self.graph.layers.values())
        const_bytes = 0
        for layer in self.graph.layers.values():
            if layer.type.lower() == "const":
                const_bytes += int(layer.attrs.get("size", "0") or 0)
        return {
            "path": self.path,
            "name": self.graph.net.name,
            "ir_version": self.graph.net.version,
            "precision": self.precision,
            "layers": len(self.graph.layers),
            "unused_layers": len(self.graph.unused),
            "inputs": [tensor_dict(i) for i in self.inputs],
            "outputs": [
                {**tensor_dict(o), "aliases": sorted(a for a, c in self.output_aliases.items() if c == o.name)}
                for o in self.outputs
            ],
            "ops": dict(sorted(hist.items())),
            "weights_file_bytes": self.weights.size,
            "const_bytes": const_bytes,
            "unsupported": [
                {"type": t, "version": v, "count": len(ids), "first_layer": ids[0]}
                for (t, v), ids in self.unsupported.items()
            ],
            "unchecked_layers": len(self.unchecked),
            "warnings": self.warnings,
            "variables": [v.to_dict() for v in self.variables.values()],
            "bodies": [
                {
                    "path": " > ".join(path),
                    "layers": body.layer_count(),
                    "parameters": len(body.parameters),
                    "results": len(body.results),
                }
                for body, _, path in self.bodies()
            ],
        }

    # ---- inference ----------------------------------------------------------------------
    def _feed_positions(self, feeds) -> dict[int, object]:
        """{input position: value} from a dict (by input name, position or TensorInfo), a list or
        tuple in input order, or one array for a one-input model."""
        if isinstance(feeds, Mapping):  # a dict, or an np.load'ed .npz
            by_pos: dict[int, object] = {}
            for key, value in feeds.items():
                pos = self._feed_key(key)
                if pos in by_pos:
                    raise InputError(f"input {self.inputs[pos].name!r} is fed twice")
                by_pos[pos] = value
            return by_pos
        if isinstance(feeds, (list, tuple)):
            if len(feeds) != len(self.inputs):
                raise InputError(f"{len(feeds)} inputs given, the model has {len(self.inputs)}")
            return dict(enumerate(feeds))
        if len(self.inputs) != 1:
            raise InputError(
                f"one {type(feeds).__name__} given, the model has {len(self.inputs)} inputs: give a list in "
                "input order or a dict by input name"
            )
        return {0: feeds}

    def _feed_key(self, key) -> int:
        if isinstance(key, TensorInfo):
            key = key.name
        if _is_index(key):
            if not 0 <= key < len(self.inputs):
                raise InputError(f"input index {key} is out of range: the model has {len(self.inputs)} input(s)")
            return int(key)
        if not isinstance(key, str) or key not in self._feed_index:
            raise InputError(
                f"unknown input {key!r}; the model's inputs are "
                f"{', '.join(repr(i.name) for i in self.inputs) or '(none)'}"
            )
        return self._feed_index[key]

    def _feeds(self, feeds, convert_dtypes: bool | None = None) -> dict:
        by_pos = self._feed_positions(feeds)
        missing = [self.inputs[i].name for i in range(len(self.inputs)) if i not in by_pos]
        if missing:
            raise InputError(f"missing input(s): {', '.join(repr(m) for m in missing)}")
        convert = self.convert_dtypes if convert_dtypes is None else bool(convert_dtypes)
        out, total = {}, 0
        for pos, value in by_pos.items():
            arr = self._check_feed(self.inputs[pos], value, pos, convert)
            total += arr.nbytes
            if total > self.limits.max_total_bytes:
                raise LimitError(f"inputs take {total} bytes, above the limit {self.limits.max_total_bytes}")
            out[(self.graph.parameters[pos], 0)] = arr
        return out

    def _fast_feeds(self) -> list:
        """Per input, (numpy dtype, shapes) when a feed of exactly that dtype and one of those
        shapes needs no further check, else None: the static shape (its size was checked
        against the limits at load), and for a dynamic input the last shapes that passed the
        checks (`_check_feed` adds them; the checks depend only on the dtype and the shape)."""
        fast = []
        for info, convert in zip(self.inputs, self._in_cast):
            static = info.shape is not None and all(d is not None for d in info.shape)
            plain = info.element_type not in SUB_BYTE_TYPES | {"bf16", STRING} and convert is None
            shapes = {tuple(info.shape)} if static else set()
            fast.append((np.dtype(info.dtype), shapes) if plain else None)
        return fast

    def _check_feed(self, info: TensorInfo, value, pos: int, convert: bool = False) -> np.ndarray:
        fast = self._fast[pos]
        if fast is not None and type(value) is np.ndarray and value.dtype == fast[0] and value.shape in fast[1]:
            return value  # the common case: 7 -> 1 us for two dynamic token inputs (bench_models --overhead)
        value = self._checked_feed(info, value, pos, convert)
        if fast is not None and type(value) is np.ndarray and value.dtype == fast[0] and len(fast[1]) < FAST_SHAPES:
            fast[1].add(value.shape)
        return value

    def _checked_feed(self, info: TensorInfo, value, pos: int, convert: bool) -> np.ndarray:
        if info.element_type == STRING:
            value = from_feed(value, info.name, self.limits)
            self._check_shape(info, value, pos)
            return value
        if not isinstance(value, np.ndarray):
            try:
                value = np.asarray(value)
            except (ValueError, TypeError) as e:
                raise InputError(f"input {info.name!r} is not an array: {e}") from e
        if not value.dtype.isnative:  # e.g. a big-endian .npy: same values, native byte order
            value = value.astype(value.dtype.newbyteorder("="))
        et = from_numpy(value.dtype)
        want = info.element_type
        if want == "bf16" and et == "f32":
            value = round_bf16(value)
        elif want in SUB_BYTE_TYPES:
            value = self._sub_byte_feed(info, value, et)
        elif et == "f16" and want == "f32" and self.declared_type((self.graph.parameters[pos], 0)) == "f16":
            pass  # an IR v10 f16 input, presented as f32: its declared type is taken too (exactly)
        elif et != want and convert:
            value = self._cast_feed(info, value)
        elif et != want:
            raise InputError(
                f"input {info.name!r} has dtype {value.dtype}, the model expects {info.element_type} ({info.dtype})"
            )
        self._check_shape(info, value, pos)
        self.limits.check_tensor(value.shape, value.dtype.itemsize, f"input {info.name!r}")
        convert = self._in_cast[pos]
        if convert is not None and from_numpy(value.dtype) != convert:
            with np.errstate(all="ignore"):  # f32 beyond f16's range is inf, as in OpenVINO's Convert
                value = cast(value, convert)
        return value

    def _cast_feed(self, info: TensorInfo, value: np.ndarray) -> np.ndarray:
        """`convert_dtypes`: the feed cast to its input's type (irexec/casting.py), said once."""
        cast_value = safe_cast(info.name, value, info.element_type, np.dtype(info.dtype))
        if info.element_type == "bf16":
            cast_value = round_bf16(cast_value)
        if not self._cast_reported:
            self._cast_reported = True
            warnings.warn(
                f"irexec: input {info.name!r} given as {value.dtype}, cast to {info.element_type} "
                "(convert_dtypes; later casts of this model are not reported)",
                DtypeConversionWarning,
                stacklevel=_outside_irexec(),
            )
        return cast_value

    def _check_shape(self, info: TensorInfo, value: np.ndarray, pos: int) -> None:
        bounds = self.ops[self.graph.parameters[pos]].bounds
        if bounds is None:
            return
        if value.ndim != len(bounds):
            raise InputError(
                f"input {info.name!r} has shape {format_shape(value.shape)} (rank {value.ndim}), "
                f"the model expects rank {len(bounds)}: [{','.join(str(b) for b in bounds)}]"
            )
        for i, (n, b) in enumerate(zip(value.shape, bounds)):
            if not b.admits(n):
                raise InputError(
                    f"input {info.name!r} has shape {format_shape(value.shape)}; dim {i} is {n}, "
                    f"the model expects [{','.join(str(b) for b in bounds)}]"
                )

    def _present(self, values: list[np.ndarray], strings: str | None = None) -> list[np.ndarray]:
        """Results converted from their computed type to their presented type (string results
        to what `strings` asks, default the model's: irexec/strings.py)."""
        if any(info.element_type == STRING for info in self.outputs):
            values = [self._caller_strings(v, info.name, strings) for v, info in zip(values, self.outputs)]
        if not any(self._out_cast):
            return values
        with np.errstate(all="ignore"):  # f32 beyond f16's range is inf, as OpenVINO's CPU plugin gives it
            return [v if et is None else cast(v, et) for v, et in zip(values, self._out_cast)]

    def _caller_strings(self, value: np.ndarray, name: str, strings: str | None) -> np.ndarray:
        """A value as the caller gets it: string tensors in the `strings` form, others as they are."""
        if value.dtype != object:
            return value
        try:
            mode = self.strings if strings is None else check_mode(strings)
        except ValueError as e:
            raise UsageError(str(e)) from None
        return to_caller(value, mode, name, self.limits)

    def _sub_byte_feed(self, info: TensorInfo, value: np.ndarray, et: str | None) -> np.ndarray:
        """A u1/u4/i4 input: packed bytes as OpenVINO takes them (u1: 8 per byte, first in bit 7;
        u4/i4: 2 per byte, first in the low nibble), or one value per element already unpacked."""
        want = info.element_type
        shape = info.shape
        static = shape is not None and all(d is not None for d in shape)
        lo, hi = {"u1": (0, 1), "u4": (0, 15), "i4": (-8, 7)}[want]
        if et in ("u8", "i8", "boolean") and static and value.shape == tuple(shape):
            if value.size and (value.astype(np.int16).min() < lo or value.astype(np.int16).max() > hi):
                raise InputError(f"input {info.name!r} ({want}) has values outside [{lo}, {hi}]")
            return value.astype(numpy_dtype(want))
        if et in ("u8", "i8") and static and value.ndim == 1:
            n = math.prod(shape)
            need = math.ceil(n * bits(want) / 8)
            if value.size == need:
                return decode(np.ascontiguousarray(value).view(np.uint8).tobytes(), want, tuple(shape), 0, n)
        raise InputError(
            f"input {info.name!r} is {want} of shape {format_shape(shape)}: give it as a uint8 array of that "
            f"shape (one value per element) or as the packed bytes (a 1-D uint8 array), got "
            f"{value.dtype} of shape {format_shape(value.shape)}"
        )

    def value_names(self) -> dict[ValueKey, str]:
        """The name of every layer output (for `infer(outputs=...)`, dumps and comparisons): the
        layer's name, with `:N` for output N of a layer with several. Results and Consts have none."""
        names = {}
        for lid in self.graph.order:
            layer = self.graph.layers[lid]
            if layer.type.lower() in ("result", "const"):
                continue
            n = len(layer.outputs)
            for i in range(n):
                names[(lid, i)] = layer.name if n == 1 else f"{layer.name}:{i}"
        return names

    def _check_runnable(self) -> None:
        if self._found.unsupported:
            from .shape_inference import unsupported_error

            raise unsupported_error(self.graph, self._found.unsupported, [])
        self.weights.check_unchanged()

    def input_position(self, name: str) -> int | None:
        """The position in `inputs` of the input fed by `name` (any name of its Parameter's
        port, as OpenVINO accepts), or None when no input has that name."""
        return self._feed_index.get(name)

    def input_names(self, pos: int) -> set[str]:
        """The tensor names of input `pos` (its Parameter port's names; the input's name when the
        port has none; in IR v10 also the layer's name): the names a feed may use."""
        lid = self.graph.parameters[pos]
        layer = self.graph.layers[lid]
        names = set(layer.outputs[0].names) if layer.outputs else set()
        if self.graph.net.version == 10 or not names:
            names.add(self.inputs[pos].name)
        return names

    def output_names(self, pos: int) -> set[str]:
        """The tensor names of output `pos` as OpenVINO's read_model gives them: the Result's
        `output_names`, the producing port's names (in IR v10 also the producing layer's name);
        empty when it has none (then only `outputs[pos].name`, the Result layer's name, finds it)."""
        rid = self.graph.results[pos]
        src, port = self.graph.operands[rid][0]
        listed = self.graph.layers[rid].attrs.get("output_names")
        names = set(split_names(listed)) if listed else set()
        names |= set(self.graph.layers[src].outputs[port].names)
        canonical = self.outputs[pos].name
        names |= {alias for alias, name in self.output_aliases.items() if name == canonical}
        return names

    def kernel_families(self) -> list[str]:
        """The numba kernel families this model's layers may run on (`kernels.jit.FAMILIES`)."""
        found = {
            f
            for step in self._plan.run_steps or self._plan.steps
            if step.op is not None
            for f in step.op.kernel_families()
        }
        return [f for f in jit.FAMILIES if f in found]

    def compile(self) -> Model:
        """Load the numba kernels this model uses now (compiling what the cache lacks), as
        OpenVINO's `compile_model` prepares a model: the first `infer` then runs at its steady
        speed. Without it, the kernels load in the background from the first call that would use
        them (numpy serving meanwhile) and serve from the second call on when cached. Returns the
        model; with IREXEC_JIT=never it does nothing."""
        if config.JIT != "never":
            jit.load_families(self.kernel_families())
        return self

    def __call__(self, inputs=None, *, convert_dtypes: bool | None = None) -> Outputs:
        """`model(x)`, as OpenVINO's compiled model is called: one array for a one-input model, a
        list or tuple in input order, or a dict by input name or position -> `Outputs`
        (indexable by output name, position or TensorInfo)."""
        return self.infer({} if inputs is None else inputs, convert_dtypes=convert_dtypes)

    def infer(
        self,
        feeds: dict[str, np.ndarray] | list[np.ndarray] | np.ndarray,
        outputs: str | list[str] | None = None,
        convert_dtypes: bool | None = None,
        *,
        strings: str | None = None,
    ) -> Outputs:
        """Run the model: feeds by input name or position (or a list in input order, or one
        array for a one-input model) -> {output name: array}.

        `outputs="all"` adds every layer's output (named by `value_names`: the layer name, `:N`
        for output N of a multi-output layer); a list of such names adds those. Every array
        returned is the caller's own. `convert_dtypes` (default: the model's, from `load`)
        casts feeds of another dtype when safe (irexec/casting.py). `strings` ("str", "bytes" or
        "object"; default: the one given to `load`) says how string results come back
        (irexec/strings.py)."""
        self._check_runnable()
        if self.variables:  # a stateful model keeps its state in a default request, as OpenVINO's
            return self._default_request().infer(feeds, outputs, convert_dtypes, strings=strings)
        fed = self._feeds(feeds, convert_dtypes)
        self._calls += 1
        if self._calls == 2:  # a loop: its kernels, from a warm cache, are ready from now on
            jit.settle()
        if outputs is None:
            values = self._present(execute(self._plan, self.specs, fed), strings)
            return Outputs({info.name: v for info, v in zip(self.outputs, values)}, self.output_aliases)
        wanted = self._wanted(outputs)
        values, kept, _ = execute_traced(self._plan, self.specs, fed, wanted)
        return self._outputs(values, kept, wanted, strings)

    def _wanted(self, outputs: str | list[str]) -> set[ValueKey]:
        """The values `infer(outputs=...)` names: every layer output for "all", else those named."""
        names = self.value_names()
        if isinstance(outputs, str) and outputs == "all":
            return set(names)
        if isinstance(outputs, str):
            outputs = [outputs]
        by_name = {n: k for k, n in names.items()}
        unknown = [n for n in outputs if n not in by_name]
        if unknown:
            raise UsageError(f"no layer output named {', '.join(map(repr, unknown))}")
        return {by_name[n] for n in outputs}

    def _outputs(
        self, values: list[np.ndarray], kept: dict, wanted: set[ValueKey] | None, strings: str | None = None
    ) -> Outputs:
        """The results by output name (in their presented types), then the `wanted` layer
        outputs (kept, or folded)."""
        presented = self._present(values, strings)
        out = Outputs({info.name: v for info, v in zip(self.outputs, presented)}, self.output_aliases)
        if not wanted:
            return out
        names = self.value_names()
        for key in sorted(wanted, key=lambda k: (self._position[k[0]], k[1])):
            value = kept.get(key)
            if value is None and self.specs[key].value is not None:
                value = np.array(self.specs[key].value, copy=True)
            if value is not None:
                out.setdefault(names[key], self._caller_strings(value, names[key], strings))
        return out

    # ---- state (irexec/state.py) --------------------------------------------------------
    def create_infer_request(self) -> InferRequest:
        """A new inference request: it owns a set of the model's variables (all unset), as
        OpenVINO's `create_infer_request`. Requests are independent; each serves one thread at a
        time. A stateless model's requests just run `infer`."""
        self._check_stateful()
        return InferRequest(self)

    def reset_state(self) -> None:
        """Unset the variables of the default request (the one `Model.infer` uses)."""
        if self._default is not None:
            self._default.reset_state()

    def query_state(self) -> list:
        """The variables of the default request (the one `Model.infer` uses)."""
        return self._default_request().query_state()

    def _default_request(self) -> InferRequest:
        with self._default_lock:
            if self._default is None:
                self._default = self.create_infer_request()
            return self._default

    def _check_stateful(self) -> None:
        """A ReadValue without an Assign: OpenVINO's CPU plugin refuses to compile the model."""
        if self._unpaired:
            lid, why = self._unpaired[0]
            raise ExecutionError(f"cannot run: {why}", self.graph.layers[lid].where)

    def profile(self, feeds, clock=None) -> list[tuple[int, float]]:
        """One run with every layer timed: [(layer id, seconds)] in execution order (a stateful
        model's: a first step, from unset variables, touching no request's state)."""
        import time

        self._check_runnable()
        _, _, times = execute_traced(self._plan, self.specs, self._feeds(feeds), set(), clock or time.perf_counter)
        return [(step.layer_id, t) for step, t in times]

    def __repr__(self) -> str:
        def fmt(infos):
            return ", ".join(f"{t.name}: {format_shape(t.shape)} {t.element_type}" for t in infos)

        return (
            f"<irexec.Model {self.graph.net.name!r} from {self.path!r}: {len(self.graph.layers)} layers, "
            f"inputs [{fmt(self.inputs)}], outputs [{fmt(self.outputs)}]>"
        )


class DtypeConversionWarning(UserWarning):
    """A feed was cast to its input's type (`convert_dtypes=True`); said once per model."""


class Outputs(dict):
    """{output name: array} in Result order (iterating gives the names); an output's other names
    (see `Model.output_aliases`), its position (an int, negative from the end, as OpenVINO's
    result takes it) or its TensorInfo work for look-ups too."""

    def __init__(self, values: dict, aliases: dict[str, str]):
        super().__init__(values)
        self.aliases = aliases

    def _name(self, key):
        """The entry a non-name key stands for, or None."""
        if isinstance(key, TensorInfo):
            key = key.name
        if _is_index(key):
            n = len(self)
            return list(dict.keys(self))[key] if -n <= key < n else None
        if isinstance(key, str):
            if dict.__contains__(self, key):
                return key
            return self.aliases.get(key)
        return None

    def __missing__(self, key):
        name = self._name(key)
        if name is None:
            raise KeyError(key)
        return dict.__getitem__(self, name)

    def __contains__(self, key) -> bool:
        try:
            return dict.__contains__(self, key) or self._name(key) is not None
        except TypeError:  # an unhashable key
            return False

    def get(self, key, default=None):
        return self[key] if key in self else default


def _is_decompression(layer) -> bool:
    """A Convert that OpenVINO marks as weight decompression (rt_info `decompression`)."""
    if layer.type.lower() != "convert":
        return False
    return any(r.attrs.get("name") == "decompression" or r.tag == "decompression" for r in layer.rt_info)


def tensor_dict(info: TensorInfo) -> dict:
    return {
        "name": info.name,
        "shape": None if info.shape is None else [d for d in info.shape],
        "dims": info.dims_text,
        "element_type": info.element_type,
        "dtype": str(info.dtype),
    }


def load(
    path: str | Path,
    limits: Limits | None = None,
    allow_unsupported: bool = False,
    *,
    bin: str | Path | None = None,
    mmap: bool = True,
    shapes: dict | None = None,
    jit: str = "lazy",
    precision: str = "f32",
    strings: str = "str",
    convert_dtypes: bool = False,
) -> Model:
    """Read, check and shape-infer the IR at `path` (its .bin beside it). Raises IRExecError only.

    Every unsupported layer is named in one error; with `allow_unsupported=True` the model loads
    anyway (for `validate` and `info`): layers after an unsupported one are left unchecked and
    `infer` raises that error. `bin`: the weights file (default: the .xml's name with .bin);
    `mmap=False` reads the weights into memory instead of mapping them, so the file may change
    or go away after load (a mapped file is checked before every `infer`). `shapes`: new input
    shapes by input name, as OpenVINO's `reshape` (`{"x": (1, 3, 224, 224)}`, `"?,3,1..8"`):
    shape inference runs on the reshaped graph, and `validate` then compares precisions only
    (the file's dims describe the original shapes). `jit="eager"` loads the numba kernels the
    model uses before returning (`Model.compile`); "lazy" (the default) loads them in the
    background from the first call that would use them. `precision="f32"` (the default) runs
    f16 layers in f32, as OpenVINO's CPU plugin does (bf16 layers round to bf16 in both, as
    that plugin does on CPUs with native bf16); "declared" rounds every layer to its declared
    type, as OpenVINO's reference implementation does (irexec/precision.py). `strings`: how string
    results come back: "str" (the default: numpy `<U` arrays, as OpenVINO's `Tensor.str_data`),
    "bytes" (numpy `S` arrays of the UTF-8 bytes) or "object" (object arrays of Python str, never
    padded); `infer(..., strings=...)` overrides it per call (irexec/strings.py).
    `convert_dtypes=True` casts a feed of another dtype to its input's type when no value changes
    meaning (the rule in irexec/casting.py: float64 to float32 when no value is beyond float32's
    range, int64 to int32 when every value fits, bool and small integers to floats; floats are
    never cast to integers), warning once; the default refuses any other dtype (InputError)."""
    if jit not in ("lazy", "eager"):
        raise UsageError(f"jit={jit!r}: expected 'lazy' or 'eager'")
    allocator.tune()
    model = _construct(path, limits, allow_unsupported, bin, mmap, shapes, precision, strings, convert_dtypes)
    return model.compile() if jit == "eager" else model


def _construct(path, limits, allow_unsupported, bin, mmap, shapes, precision, strings, convert_dtypes) -> Model:
    """A Model, with Python's resource errors turned into LimitError (only IRExecError escapes)."""
    try:
        return Model(path, limits, allow_unsupported, bin, mmap, shapes, precision, strings, convert_dtypes)
    except IRExecError:
        raise
    except RecursionError:
        raise LimitError("the model is nested too deeply") from None
    except MemoryError as e:
        raise LimitError("out of memory while loading") from e


__all__ = ["Model", "Outputs", "TensorInfo", "LayerInfo", "Issue", "ValidationReport", "DtypeConversionWarning", "load"]
