"""The `irexec` command line: run, validate, info, bench. A thin layer over the Python API.

Exit codes: 0 fine, 1 validation mismatches, 2 usage, 3 invalid model, 4 bad input data,
5 execution error, 6 a resource limit. Reports go to stdout, diagnostics to stderr; a user
mistake never prints a traceback.
"""

from __future__ import annotations

import argparse
import errno
import io
import json
import math
import os
import sys
import time
import zipfile
from pathlib import Path

import numpy as np

from . import __version__
from .errors import IRExecError, UsageError
from .feeds import load_array_file, random_feeds
from .limits import DEFAULT_LIMITS, Limits
from .model import Model, load

EXIT_MISMATCH = 1


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        print(f"irexec: usage error: {message}", file=sys.stderr)
        sys.exit(UsageError.exit_code)


def _limits(args) -> Limits:
    d = DEFAULT_LIMITS
    return Limits(
        max_xml_bytes=args.max_xml_bytes or d.max_xml_bytes,
        max_layers=args.max_layers or d.max_layers,
        max_tensor_elements=args.max_elements or d.max_tensor_elements,
        max_tensor_bytes=args.max_tensor_bytes or d.max_tensor_bytes,
        max_total_bytes=args.max_total_bytes or d.max_total_bytes,
    )


def _load(args, allow_unsupported: bool = False) -> Model:
    """Load the model named on the command line; a path that is not a file is a usage error (exit 2)."""
    if getattr(args, "threads", None):
        from .kernels.jit import set_num_threads

        set_num_threads(args.threads)
    if not os.path.isfile(args.model):
        what = "is a directory" if os.path.isdir(args.model) else "does not exist"
        raise UsageError(f"model file {args.model!r} {what}")
    shapes = {}
    for spec in getattr(args, "shape", None) or []:
        name, sep, dims = spec.partition("=")
        if not sep or not name:
            raise UsageError(f"--shape {spec!r}: expected NAME=DIMS, e.g. x=1,3,224,224 or x=?,3,1..8")
        if name in shapes:
            raise UsageError(f"--shape {spec!r}: {name!r} is given twice")
        shapes[name] = dims
    return load(
        args.model, _limits(args), allow_unsupported=allow_unsupported, mmap=not args.no_mmap, shapes=shapes or None
    )


def _unsupported_lines(model: Model) -> list[str]:
    """What `validate` and `info` could not check: unsupported layers by kind, and how many
    layers after them were left unchecked."""
    lines = []
    for (type_name, version), ids in model.unsupported.items():
        first = model.graph.layers[ids[0]]
        lines.append(
            f"unsupported: {type_name}-{version} x{len(ids)} (first: layer id={first.id} "
            f"name={first.name!r} line {first.line})"
        )
    if model.unsupported:
        after = len(model.unchecked) - sum(len(v) for v in model.unsupported.values())
        lines.append(f"not checked: {after} layers that depend on unsupported ones")
    return lines


def _emit_json(target: str | None, payload: dict) -> None:
    if target is None:
        return
    text = json.dumps(_strict_json(payload), indent=2, default=_json_default, allow_nan=False)
    if target == "-":
        print(text)
    else:
        try:
            with open(target, "w") as f:
                f.write(text + "\n")
        except OSError as e:
            raise UsageError(f"cannot write the JSON report to {target!r}: {e.strerror}") from None


def _json_default(o):
    if isinstance(o, np.generic):
        return _strict_json(o.item())
    return str(o)


def _strict_json(o):
    """The payload with NaN and infinities as the strings "NaN", "Infinity", "-Infinity": JSON has
    no such numbers, and strict parsers (jq, JavaScript) reject Python's bare NaN."""
    if isinstance(o, float) and not math.isfinite(o):
        return "NaN" if math.isnan(o) else ("Infinity" if o > 0 else "-Infinity")
    if isinstance(o, dict):
        return {k: _strict_json(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_strict_json(v) for v in o]
    return o


def _number(kind, what: str, ok, rule: str):
    """An argparse type: `kind` parsed from the text, refused unless ok(value)."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if not ok(value):
            raise argparse.ArgumentTypeError(f"must be {rule}, got {text}")
        return value

    return parse


_positive_int = _number(int, "an integer", lambda n: n >= 1, "at least 1")  # counts and limits
_seed = _number(int, "an integer", lambda n: n >= 0, "non-negative")  # numpy's seeds
_positive_float = _number(float, "a number", lambda x: math.isfinite(x) and x > 0, "a positive number")
_nonneg_float = _number(float, "a number", lambda x: math.isfinite(x) and x >= 0, "a non-negative number")


def _gather_feeds(model: Model, specs: list[str], seed: int) -> dict:
    feeds: dict[str, np.ndarray] = {}
    names = [i.name for i in model.inputs]
    given: dict[int, str] = {}  # input position -> the -i that gave it

    def add(name: str, value, spec: str) -> None:
        pos = model._feed_index.get(name)
        if pos is not None:
            if pos in given:
                raise UsageError(f"-i {spec}: input {names[pos]!r} is already given by -i {given[pos]}")
            given[pos] = spec
        feeds[name] = value

    for spec in specs:
        if "=" in spec:
            name, path = spec.split("=", 1)
            value = load_array_file(path, model.limits)
            if isinstance(value, dict):
                raise UsageError(f"-i {spec}: NAME=FILE takes a .npy file, not a .npz")
            add(name, value, spec)
        else:
            value = load_array_file(spec, model.limits)
            if not isinstance(value, dict):
                if len(names) != 1:
                    raise UsageError(f"-i {spec}: a bare .npy needs NAME=FILE when the model has {len(names)} inputs")
                value = {names[0]: value}
            for name, v in value.items():
                add(name, v, spec)
    feeds.update(random_feeds(model, np.random.default_rng(seed), given))
    return feeds


def _summary(name: str, a: np.ndarray) -> dict:
    d = {"name": name, "shape": list(a.shape), "dtype": str(a.dtype)}
    if a.size and a.dtype.kind in "fiub":
        v = a.astype(np.float64)
        with np.errstate(all="ignore"):
            d.update(min=float(np.min(v)), max=float(np.max(v)), mean=float(np.mean(v)))
        if a.dtype.kind == "f":
            d["nan"] = int(np.isnan(a).sum())
    return d


def _fmt(x) -> str:
    return f"{x:.6g}" if isinstance(x, float) else str(x)


def _warn_dangling(model: Model) -> None:
    if model.graph.dangling:
        e = model.graph.dangling[0]
        print(
            f"irexec: warning: {len(model.graph.dangling)} edge(s) name a layer id that does not exist and were "
            f"ignored, as OpenVINO does (first at line {e.line}); `irexec validate` lists them",
            file=sys.stderr,
        )


def check_output_path(path: str, n_outputs: int) -> None:
    """Refuse, before running, an -o path that cannot be written: a directory, a missing parent
    folder, a read-only place, or .npy for a model of several outputs."""
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"-o {path!r} is a directory")
    parent = p.parent if str(p.parent) else Path(".")
    if not p.exists() and not parent.is_dir():
        raise UsageError(f"-o {path!r}: folder {str(parent)!r} does not exist")
    if not os.access(p if p.exists() else parent, os.W_OK):
        raise UsageError(f"-o {path!r} is not writable")
    if p.suffix.lower() == ".npy" and n_outputs != 1:
        raise UsageError(f"-o {path!r}: a .npy holds one array, the model has {n_outputs} outputs (use .npz)")


def write_outputs(path: str, outputs: dict) -> None:
    """Write exactly `path`: a .npy when it ends in .npy (one output), else an .npz whose keys are
    the output names, whatever they are (np.savez would take 'file' or 'allow_pickle' as its own
    arguments and append .npz to the path)."""
    try:
        with open(path, "wb") as f:
            if Path(path).suffix.lower() == ".npy":
                np.lib.format.write_array(f, np.asarray(next(iter(outputs.values()))), allow_pickle=False)
                return
            # a zip seeks back to finish its headers: a device or a pipe (/dev/null, /dev/stdout)
            # gets the archive built in memory
            target = f if os.path.isfile(path) else io.BytesIO()
            with zipfile.ZipFile(target, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
                for name, value in outputs.items():
                    with zf.open(f"{name}.npy", "w", force_zip64=True) as member:
                        np.lib.format.write_array(member, np.asarray(value), allow_pickle=False)
            if target is not f:
                f.write(target.getbuffer())
    except OSError as e:
        raise UsageError(f"cannot write the outputs to {path!r}: {e.strerror or e}") from None


def ensure_folder(folder: str, option: str) -> Path:
    """The folder an option names, created if missing; a usage error when it is a file or
    cannot be made or written."""
    p = Path(folder).absolute()
    if p.exists() and not p.is_dir():
        raise UsageError(f"{option} {folder!r} is not a folder")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"{option} {folder!r}: {e.strerror}") from None
    if not os.access(p, os.W_OK):
        raise UsageError(f"{option} {folder!r} is not writable")
    return p


def _dump(model: Model, feeds: dict, folder: str, pattern: str | None) -> None:
    """Every layer output (or those whose layer name or type matches the glob `pattern`) as
    FOLDER/NNNN_<name>.npy, with FOLDER/index.json listing layer id, name, type, file, shape, dtype."""
    import fnmatch
    import re

    names = model.value_names()
    wanted = []
    for key, name in names.items():
        layer = model.graph.layers[key[0]]
        if pattern is None or fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(layer.type, pattern):
            wanted.append(name)
    values = model.infer(feeds, outputs=wanted)
    index = []
    for n, (key, name) in enumerate((k, v) for k, v in names.items() if v in wanted):
        layer = model.graph.layers[key[0]]
        if name not in values:
            continue
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:80]
        fname = f"{n:04d}_{safe}.npy"
        arr = values[name]
        np.save(Path(folder) / fname, arr, allow_pickle=False)
        index.append(
            {
                "layer_id": layer.id,
                "name": name,
                "type": layer.type,
                "version": layer.version,
                "line": layer.line,
                "output": key[1],
                "file": fname,
                "shape": list(arr.shape),
                "dtype": str(arr.dtype),
            }
        )
    with open(Path(folder) / "index.json", "w") as f:
        json.dump({"model": model.path, "layers": index}, f, indent=1)
    print(f"dumped {len(index)} layer outputs to {folder}/ (index.json)", file=sys.stderr)


def cmd_run(args) -> int:
    model = _load(args)
    _warn_dangling(model)
    if args.output:
        check_output_path(args.output, len(model.outputs))
    feeds = _gather_feeds(model, args.input or [], args.seed)
    if args.dump or args.dump_layers:
        ensure_folder(args.dump or "dump", "--dump")
    t0 = time.perf_counter()
    outputs = model.infer(feeds)
    elapsed = time.perf_counter() - t0
    rows = [_summary(k, v) for k, v in outputs.items()]
    if args.dump or args.dump_layers:
        _dump(model, feeds, args.dump or "dump", args.dump_layers)
    if args.json != "-":
        for r in rows:
            stats = "  ".join(f"{k}={_fmt(r[k])}" for k in ("min", "max", "mean", "nan") if k in r)
            print(f"{r['name']}: shape {tuple(r['shape'])} {r['dtype']}  {stats}")
    if args.output:
        write_outputs(args.output, outputs)
    _emit_json(args.json, {"model": args.model, "seconds": elapsed, "outputs": rows})
    return 0


def cmd_validate(args) -> int:
    model = _load(args, allow_unsupported=True)
    report = model.validate()
    if args.json != "-":
        for issue in report.issues:
            print(issue)
        for lay in report.unused:
            print(f"unused: layer id={lay.id} name={lay.name!r} {lay.type}-{lay.version} line {lay.line}")
        for note in report.notes:
            print(f"note: {note} (OpenVINO's f16 weight decompression: not a mismatch)")
        for line in _unsupported_lines(model):
            print(line)
        n = len(report.layers)
        if report.ok and model.unchecked:
            print(
                f"INCOMPLETE: {n - len(model.unchecked)} of {n} layers checked and matching; "
                f"{len(model.unchecked)} could not be checked"
            )
        elif report.ok:
            print(f"OK: {n} layers, every declared shape and precision matches")
        else:
            bad = len({i.layer_id for i in report.issues})
            print(f"MISMATCH: {len(report.issues)} claims in {bad} of {n} layers differ from inference")
    _emit_json(
        args.json,
        {
            "model": args.model,
            "ok": report.ok,
            "issues": [i.to_dict() for i in report.issues],
            "notes": [i.to_dict() for i in report.notes],
            "unused": [{"id": u.id, "name": u.name, "type": u.type, "version": u.version} for u in report.unused],
            "layers": len(report.layers),
            "unsupported": model.info()["unsupported"],
            "unchecked": [{"id": lid, "reason": why} for lid, why in model.unchecked.items()],
        },
    )
    if not report.ok:
        return EXIT_MISMATCH
    if model.unsupported:
        from .loader import unsupported_error

        err = unsupported_error(model.graph, model.unsupported, [])
        print(f"irexec: {err.kind}: {err}; {len(model.unchecked)} layers not checked", file=sys.stderr)
        return err.exit_code
    return 0


def cmd_info(args) -> int:
    model = _load(args, allow_unsupported=True)
    info = model.info()
    if args.json != "-":
        print(f"model {info['name']!r} (IR v{info['ir_version']}): {info['layers']} layers")
        for title, rows in (("inputs", model.inputs), ("outputs", model.outputs)):
            print(f"{title}:")
            for t in rows:
                shape = t.dims_text
                aliases = (
                    sorted(a for a, c in model.output_aliases.items() if c == t.name) if title == "outputs" else []
                )
                also = f"  (canonical name; also answers to {', '.join(aliases)})" if aliases else ""
                print(f"  {t.name}: {shape} {t.element_type}{also}")
        print("ops:")
        for k, v in info["ops"].items():
            print(f"  {k}: {v}")
        print(f"weights: {info['const_bytes']} bytes in Consts, {info['weights_file_bytes']} bytes in the .bin")
        for line in _unsupported_lines(model):
            print(line)
    _emit_json(args.json, info)
    return 0


def cmd_bench(args) -> int:
    t_import = time.perf_counter()
    model = _load(args)
    load_s = time.perf_counter() - t_import
    feeds = _gather_feeds(model, args.input or [], args.seed)
    from . import config
    from .kernels import jit

    # a benchmark is a long-lived process: it takes the kernels from the start. The kernels this
    # model uses compile (or load from the cache) in a first inference, timed apart from the
    # first inference that runs with all of them loaded.
    kernels = jit.timed_load() if config.JIT != "never" else {"ready": False}
    if kernels["ready"]:
        t0 = time.perf_counter()
        model.infer(feeds)
        kernels["kernels_s"] = time.perf_counter() - t0
        from_cache, compiled = jit.compile_counts()
        kernels["kernels_from"] = "compiled" if compiled else "cache"
        kernels["kernels_compiled"], kernels["kernels_from_cache"] = compiled, from_cache
    t0 = time.perf_counter()
    model.infer(feeds)
    first = time.perf_counter() - t0
    times: list[float] = []
    deadline = time.perf_counter() + args.time if args.time else None
    count = args.iterations if deadline is None else None
    tty = sys.stderr.isatty()
    while (count is not None and len(times) < count) or (
        deadline is not None and (not times or time.perf_counter() < deadline)
    ):
        t = time.perf_counter()
        model.infer(feeds)
        times.append(time.perf_counter() - t)
        if tty and len(times) % 10 == 0:
            print(f"\r{len(times)} iterations", end="", file=sys.stderr, flush=True)
    if tty:
        print("\r", end="", file=sys.stderr)
    ts = np.array(times)
    in_bytes = sum(np.asarray(v).nbytes for v in feeds.values())
    stats = {
        "model": args.model,
        "load_model_s": load_s,
        "import_numba_s": kernels.get("import_numba_s"),
        "kernels_s": kernels.get("kernels_s"),
        "kernels_from": kernels.get("kernels_from"),
        "kernels_compiled": kernels.get("kernels_compiled"),
        "kernels_from_cache": kernels.get("kernels_from_cache"),
        "first_inference_ms": first * 1e3,
        "iterations": len(times),
        "median_ms": float(np.median(ts)) * 1e3,
        "p90_ms": float(np.percentile(ts, 90)) * 1e3,
        "min_ms": float(ts.min()) * 1e3,
        "max_ms": float(ts.max()) * 1e3,
        "throughput_per_s": len(ts) / float(ts.sum()) if ts.sum() > 0 else math.inf,
        "input_gb_per_s": in_bytes / float(np.median(ts)) / 1e9 if np.median(ts) > 0 else math.inf,
    }
    if args.per_layer:
        stats["per_layer"] = _per_layer_profile(model, feeds, max(3, min(len(times), 20)))
    if args.json != "-":
        print(f"load model: {load_s * 1e3:.1f} ms")
        if kernels.get("ready"):
            print(
                f"import numba: {kernels['import_numba_s'] * 1e3:.0f} ms; a first inference that compiled "
                f"{kernels['kernels_compiled']} kernel specializations and loaded {kernels['kernels_from_cache']} "
                f"from the cache: {kernels['kernels_s'] * 1e3:.0f} ms"
            )
        print(f"first inference: {stats['first_inference_ms']:.3f} ms")
        print(
            f"steady state over {stats['iterations']} iterations: median {stats['median_ms']:.3f} ms, "
            f"p90 {stats['p90_ms']:.3f} ms, min {stats['min_ms']:.3f} ms, max {stats['max_ms']:.3f} ms"
        )
        print(
            f"throughput: {stats['throughput_per_s']:.1f} inferences/s, inputs read at {stats['input_gb_per_s']:.2f} GB/s"
        )
        if args.per_layer:
            _print_profile(stats["per_layer"])
    _emit_json(args.json, stats)
    return 0


def _per_layer_profile(model: Model, feeds: dict, runs: int) -> dict:
    """Median time of each layer over `runs` timed runs, and a summary by op type."""
    samples: dict[int, list[float]] = {}
    for _ in range(runs):
        for lid, t in model.profile(feeds):
            samples.setdefault(lid, []).append(t)
    layers = []
    for lid, ts in samples.items():
        layer = model.graph.layers[lid]
        layers.append(
            {"id": lid, "name": layer.name, "type": f"{layer.type}-{layer.version}", "ms": float(np.median(ts)) * 1e3}
        )
    total = sum(r["ms"] for r in layers) or 1.0
    by_type: dict[str, dict] = {}
    for r in layers:
        t = by_type.setdefault(r["type"], {"type": r["type"], "calls": 0, "ms": 0.0})
        t["calls"] += 1
        t["ms"] += r["ms"]
    for t in by_type.values():
        t["share"] = t["ms"] / total
    for r in layers:
        r["share"] = r["ms"] / total
    return {
        "runs": runs,
        "total_ms": total,
        "layers": layers,
        "by_type": sorted(by_type.values(), key=lambda t: -t["ms"]),
    }


def _print_profile(prof: dict) -> None:
    print(f"per layer (median of {prof['runs']} timed runs; total {prof['total_ms']:.3f} ms):")
    print(f"  {'id':>5}  {'name':<40} {'type':<28} {'ms':>9} {'share':>6}")
    for r in sorted(prof["layers"], key=lambda r: -r["ms"]):
        print(f"  {r['id']:>5}  {r['name'][:40]:<40} {r['type'][:28]:<28} {r['ms']:>9.4f} {r['share']:>6.1%}")
    print("by op type:")
    print(f"  {'type':<28} {'calls':>6} {'ms':>9} {'share':>6}")
    for t in prof["by_type"]:
        print(f"  {t['type'][:28]:<28} {t['calls']:>6} {t['ms']:>9.4f} {t['share']:>6.1%}")


def cmd_compare(args) -> int:
    from . import compare as cmp

    model = _load(args)
    feeds = _gather_feeds(model, args.input or [], args.seed)
    if args.save_inputs:
        check_output_path(args.save_inputs, 2)
        write_outputs(args.save_inputs, feeds)
    against = args.against
    if args.per_layer and against != "openvino":
        raise UsageError("--per-layer compares with OpenVINO: use it with --against openvino")
    got = model.infer(feeds)
    layers, compared = [], 0
    if against == "openvino":
        want, ov_layers = cmp.openvino_outputs(model, feeds, per_layer=args.per_layer)
        if args.per_layer:
            layers, compared = cmp.per_layer(model, feeds, ov_layers, args.rtol, args.atol)
    elif against.lower().endswith((".npz", ".npy")):
        want = cmp.npz_outputs(against, model)
    elif against.lower().endswith(".xml"):
        want = cmp.irexec_outputs(against, feeds, model.limits)
        if len(want) != len(got):
            raise UsageError(f"--against {against} has {len(want)} outputs, the model {len(got)}")
    else:
        raise UsageError(f"--against {against!r}: expected openvino, a .npz/.npy of expected outputs, or an .xml")
    diffs = [cmp.diff(name, g, w, args.rtol, args.atol) for (name, g), w in zip(got.items(), want)]
    ok = all(d.ok for d in diffs)
    if args.json != "-":
        print(f"irexec vs {against}: rtol {args.rtol:g}, atol {args.atol:g}")
        for d in diffs:
            verdict = "OK" if d.ok else "MISMATCH"
            print(f"{d.name}: {verdict}  shape {d.shape} {d.dtype}")
            if d.note:
                print(f"  {d.note}")
                continue
            print(
                f"  max abs {d.max_abs:.3g}  max rel {d.max_rel:.3g}  mean abs {d.mean_abs:.3g}  "
                f"mismatches {d.mismatches} of {d.total} ({d.share:.2%})"
            )
            if d.worst_index is not None and d.worst_got is not None:
                print(f"  worst at {list(d.worst_index)}: irexec {d.worst_got:.7g}, reference {d.worst_want:.7g}")
            if d.histogram:
                print("  |error| " + "  ".join(f"<{hi:g}: {c}" for lo, hi, c in d.histogram if c))
        if args.per_layer:
            if not layers:
                print(f"per layer: all {compared} intermediate tensors match")
            else:
                first = layers[0]
                print(
                    f"first divergent layer: id={first.layer_id} name={first.name!r} {first.type}-{first.version} "
                    f"line {first.line} (max abs {first.diff.max_abs:.3g}, {first.diff.mismatches} mismatches)"
                )
                for r in layers:
                    how = "introduced here" if r.introduced else "inherited"
                    print(
                        f"  id={r.layer_id} {r.name!r} {r.type}-{r.version} line {r.line} output {r.output}: "
                        f"max abs {r.diff.max_abs:.3g}, {r.diff.share:.1%} mismatch ({how})"
                    )
    payload = {
        "model": args.model,
        "against": against,
        "rtol": args.rtol,
        "atol": args.atol,
        "ok": ok,
        "outputs": [d.to_dict() for d in diffs],
    }
    if args.per_layer:
        payload["layers"] = [
            {
                "id": r.layer_id,
                "name": r.name,
                "type": r.type,
                "version": r.version,
                "line": r.line,
                "output": r.output,
                "introduced": r.introduced,
                **{k: v for k, v in r.diff.to_dict().items() if k not in ("name",)},
            }
            for r in layers
        ]
        payload["first_divergent"] = payload["layers"][0] if layers else None
        payload["layers_compared"] = compared
    _emit_json(args.json, payload)
    return 0 if ok and not layers else EXIT_MISMATCH


def cmd_warmup(args) -> int:
    """Compile kernels into the cache in parallel processes, with a progress line: with models,
    each model runs once on random inputs with the kernels on (exactly the specializations it
    uses); without, every kernel family (the reductions split by element type)."""
    from .kernels import jit
    from .kernels.warmup import compile_kernels

    tty = sys.stderr.isatty()

    def note(text: str) -> None:
        print(f"irexec: {text}", file=sys.stderr)

    def progress(done: int, total: int, seconds: float) -> None:
        if tty:
            print(f"\rwarmup: {done}/{total} done, {seconds:.1f} s", end="", file=sys.stderr, flush=True)

    outcome = compile_kernels(args.models, args.jobs, note, progress)
    if tty:
        print(file=sys.stderr)
    if outcome.failed:
        for label, last in outcome.failed:
            print(f"irexec: warmup of {label} failed: {last}", file=sys.stderr)
        return 5
    what = "every kernel family" if outcome.everything else f"the kernels of {len(args.models)} model(s)"
    print(f"compiled {what} into {jit.CACHE_DIR} in {outcome.seconds:.1f} s ({outcome.processes} processes)")
    return 0


def cmd_graph(args) -> int:
    from .graphviz import render

    model = _load(args, allow_unsupported=True)
    kind = render(model, args.output)
    print(f"wrote {args.output} ({kind}, {len(model.graph.layers)} layers)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="irexec", description="Run and check OpenVINO IR models.")
    parser.add_argument("--version", action="version", version=f"irexec {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def common(p):
        p.add_argument("model", help="the model's .xml (its .bin beside it)")
        p.add_argument("--json", metavar="FILE|-", help="also write the report as JSON ('-' for stdout only)")
        g = p.add_argument_group("limits")
        g.add_argument("--max-elements", type=_positive_int, metavar="N", help="elements per tensor")
        g.add_argument("--max-tensor-bytes", type=_positive_int, metavar="N", help="bytes per tensor")
        g.add_argument(
            "--max-total-bytes", type=_positive_int, metavar="N", help="bytes of inputs and folded constants"
        )
        g.add_argument("--max-layers", type=_positive_int, metavar="N", help="layers in the model")
        g.add_argument("--max-xml-bytes", type=_positive_int, metavar="N", help="size of the XML file")
        p.add_argument(
            "--shape",
            action="append",
            metavar="NAME=DIMS",
            help="reshape an input before shape inference (1,3,224,224; ? and 1..8 allowed)",
        )
        p.add_argument(
            "--no-mmap",
            action="store_true",
            help="read the .bin into memory instead of mapping it (the file may then change)",
        )

    def feeds(p):
        p.add_argument(
            "-i",
            "--input",
            action="append",
            metavar="NAME=FILE.npy|FILE.npz",
            help="input data; inputs not given get seeded random data",
        )
        p.add_argument("--seed", type=_seed, default=0, help="seed of the random inputs (default 0)")
        p.add_argument(
            "--threads",
            type=_positive_int,
            metavar="N",
            help="threads the kernels may use (default: cores, or IREXEC_NUM_THREADS)",
        )

    p = sub.add_parser("run", help="run the model once and summarize its outputs")
    common(p)
    feeds(p)
    p.add_argument("-o", "--output", metavar="OUT.npz", help="write the outputs to a .npz (or .npy for one)")
    p.add_argument("--dump", metavar="DIR", help="write every layer's output to DIR as .npy, with index.json")
    p.add_argument(
        "--dump-layers",
        metavar="PATTERN",
        help="dump only layers whose name or type matches this glob (into --dump DIR, default ./dump)",
    )
    p.set_defaults(fn=cmd_run)

    p = sub.add_parser("validate", help="compare every declared shape/precision with inference")
    common(p)
    p.set_defaults(fn=cmd_validate)

    p = sub.add_parser("info", help="inputs, outputs, op histogram, weight bytes")
    common(p)
    p.set_defaults(fn=cmd_info)

    p = sub.add_parser("bench", help="time inference: first call apart from steady state")
    common(p)
    feeds(p)
    g = p.add_mutually_exclusive_group()
    g.add_argument("-n", "--iterations", type=_positive_int, default=20, help="iterations (default 20)")
    g.add_argument("-t", "--time", type=_positive_float, help="run for this many seconds instead")
    p.add_argument("--per-layer", action="store_true", help="time every layer; a table by layer and by op type")
    p.set_defaults(fn=cmd_bench)

    p = sub.add_parser("compare", help="compare outputs (or every layer) with OpenVINO, an .npz, or another IR")
    common(p)
    feeds(p)
    p.add_argument(
        "--against",
        default="openvino",
        metavar="openvino|EXPECTED.npz|OTHER.xml",
        help="the reference (default: openvino, which must be installed)",
    )
    p.add_argument("--rtol", type=_nonneg_float, default=1e-3, help="relative tolerance (default 1e-3)")
    p.add_argument("--atol", type=_nonneg_float, default=1e-4, help="absolute tolerance (default 1e-4)")
    p.add_argument(
        "--per-layer",
        action="store_true",
        help="compare every intermediate tensor with OpenVINO; name the first divergent layer",
    )
    p.add_argument("--save-inputs", metavar="FILE.npz", help="keep the inputs used")
    p.set_defaults(fn=cmd_compare)

    from .batch import add_batch_parser

    add_batch_parser(sub, common, feeds)

    p = sub.add_parser("warmup", help="compile numba kernels into the cache (for container builds and CI)")
    p.add_argument(
        "models", nargs="*", metavar="MODEL.xml", help="compile what these models use (default: every kernel)"
    )
    p.add_argument("--jobs", type=_positive_int, default=os.cpu_count() or 1, help="processes (default: cores)")
    p.set_defaults(fn=cmd_warmup)

    p = sub.add_parser("graph", help="draw the graph: -o model.dot | model.svg | model.html")
    common(p)
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="model.dot, model.svg or model.html")
    p.set_defaults(fn=cmd_graph)
    return parser


def _failure_report(args, e: IRExecError) -> None:
    """--json still gets a report when the command fails: what failed, and its exit code."""
    target = getattr(args, "json", None)
    if target is None:
        return
    payload = {
        "model": getattr(args, "model", None),
        "ok": False,
        "error": {"kind": e.kind, "class": type(e).__name__, "message": str(e), "exit_code": e.exit_code},
    }
    try:
        _emit_json(target, payload)
    except (IRExecError, OSError):
        pass  # the error line on stderr is already out


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if sys.stdout is None:  # started with standard output closed: the report would be lost
        print("irexec: standard output is closed; the report cannot be written", file=sys.stderr)
        return UsageError.exit_code
    try:
        return args.fn(args)
    except IRExecError as e:
        print(f"irexec: {e.kind}: {e}", file=sys.stderr)
        _failure_report(args, e)
        return e.exit_code
    except KeyboardInterrupt:
        print("irexec: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as e:
        if e.errno in (errno.EBADF, errno.EPIPE, errno.ENOSPC, errno.EIO):  # stdout closed or full
            print(f"irexec: cannot write the report to standard output: {e.strerror}", file=sys.stderr)
            return UsageError.exit_code
        print(f"irexec: internal error (please report it): {type(e).__name__}: {e}", file=sys.stderr)
        return 5
    except Exception as e:  # a bug in irexec: still one line, never a traceback
        print(f"irexec: internal error (please report it): {type(e).__name__}: {e}", file=sys.stderr)
        return 5


if __name__ == "__main__":
    sys.exit(main())
