"""`irexec batch`: one model over many `.npz` samples on a Dask cluster, with nothing lost and
nothing done twice.

Each sample's outputs go to OUT/<stem>.npz, written atomically (a temporary file in OUT, fsync,
rename), so a killed worker never leaves half a file. OUT/manifest.jsonl gets one JSON line per
sample as it finishes: input, output, status (ok / failed / skipped), error class and message,
seconds, worker. A bad sample (unreadable, wrong names, shapes or dtypes) is recorded as failed
and the batch goes on; a worker that dies has its tasks retried on others (dask's `retries`);
`--resume` skips samples whose output file is complete (every output name readable).

Without `--scheduler` a `distributed.LocalCluster` of worker processes sized to the machine runs
the batch; with one, an existing cluster does, and the model's files are sent to the workers
(scattered once) unless `--shared-storage` says the path is readable there. Workers load the model
once per process. Dask is imported only here, when the command runs: `pip install "irexec[dask]"`.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from .errors import IRExecError, UsageError

_MODELS: dict = {}  # per worker process: model key -> loaded Model


def add_batch_parser(sub, common, feeds) -> None:
    """Register the `batch` subcommand."""
    p = sub.add_parser("batch", help="run the model over many .npz samples on a Dask cluster")
    common(p)
    p.add_argument("inputs", nargs="+", metavar="INPUT", help=".npz files, folders of them, or globs")
    p.add_argument("--out", required=True, metavar="DIR", help="where OUT/<stem>.npz and manifest.jsonl go")
    p.add_argument("--scheduler", metavar="ADDRESS", help="an existing Dask scheduler (tcp://host:port)")
    p.add_argument("--workers", type=int, metavar="N", help="local cluster: worker processes (default: cores)")
    p.add_argument("--threads-per-worker", type=int, default=1, metavar="T", help="local cluster: threads (default 1)")
    p.add_argument("--resume", action="store_true", help="skip samples whose output file is complete")
    p.add_argument("--shared-storage", action="store_true",
                   help="with --scheduler: workers read the model path themselves (else its files are sent)")
    p.add_argument("--retries", type=int, default=2, help="tries again on another worker when one dies (default 2)")
    p.set_defaults(fn=cmd_batch)


# ---- the worker side ----------------------------------------------------------------------------------


def _model(source):
    """The model for this worker process: `source` is a path, or (name, xml bytes, bin bytes)."""
    from .model import load

    if isinstance(source, str):
        key = (source, os.stat(source).st_mtime_ns)
        if key not in _MODELS:
            _MODELS[key] = load(source)
        return _MODELS[key]
    name, xml, weights = source
    key = hashlib.sha256(xml + weights).hexdigest()
    if key not in _MODELS:
        folder = Path(tempfile.mkdtemp(prefix="irexec-model-"))
        (folder / f"{name}.xml").write_bytes(xml)
        if weights:
            (folder / f"{name}.bin").write_bytes(weights)
        _MODELS[key] = load(folder / f"{name}.xml", mmap=False)
    return _MODELS[key]


def write_atomically(path: Path, outputs: dict) -> None:
    """OUT/<stem>.npz via a temporary file in the same folder, fsync, then rename."""
    from .cli import write_outputs

    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".npz.tmp", dir=path.parent)
    os.close(fd)
    try:
        write_outputs(tmp, outputs)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def run_sample(source, sample: str, out: str) -> dict:
    """One sample: load its arrays, infer, write the outputs. IRExecErrors become a failed
    status (not retried); anything that kills the worker is retried by dask."""
    from .feeds import load_array_file

    t0 = time.perf_counter()
    record = {"input": sample, "output": out, "status": "ok", "error": None, "message": None}
    try:
        model = _model(source)
        data = load_array_file(sample, model.limits)
        if not isinstance(data, dict):
            raise UsageError(f"{sample} is a .npy; a sample is an .npz keyed by input names")
        write_atomically(Path(out), model.infer(data))
    except IRExecError as e:
        record.update(status="failed", error=type(e).__name__, message=str(e))
    record["seconds"] = time.perf_counter() - t0
    try:
        from distributed import get_worker

        record["worker"] = get_worker().address
    except (ImportError, ValueError):
        record["worker"] = None
    return record


# ---- the client side ----------------------------------------------------------------------------------


def _expand(inputs: list[str]) -> list[str]:
    out = []
    for item in inputs:
        if "://" in item:
            try:
                import fsspec
            except ImportError:
                raise UsageError(f"{item}: URLs need fsspec and its filesystem package") from None
            out.extend(f.path if "://" in f.path else f"{f.fs.protocol[0]}://{f.path}"
                       for f in fsspec.open_files(item))
        elif os.path.isdir(item):
            out.extend(sorted(str(p) for p in Path(item).glob("*.npz")))
        elif any(c in item for c in "*?["):
            out.extend(sorted(glob.glob(item)))
        elif os.path.isfile(item):
            out.append(item)
        else:
            raise UsageError(f"input {item!r} does not exist")
    if not out:
        raise UsageError("no .npz samples in the inputs")
    return out


def complete(path: Path, names: list[str]) -> bool:
    """Whether an output file holds every output (a partial or damaged one does not count)."""
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as z:
            return all(n in z.files and z[n] is not None for n in names)
    except Exception:  # any damage means: do it again
        return False


def cmd_batch(args) -> int:
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise UsageError('irexec batch needs Dask: pip install "irexec[dask]"') from None
    from .cli import _emit_json, _load

    model = _load(args)
    names = [o.name for o in model.outputs]
    samples = _expand(args.inputs)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    stems = {}
    for s in samples:
        stem = Path(s.split("://")[-1]).stem
        if stem in stems:
            raise UsageError(f"samples {stems[stem]!r} and {s!r} would both write {stem}.npz")
        stems[stem] = s
    manifest = open(out_dir / "manifest.jsonl", "a")
    t0 = time.perf_counter()
    counts = {"ok": 0, "failed": 0, "skipped": 0}
    per_worker: dict = {}

    def record(rec):
        counts[rec["status"]] += 1
        if rec.get("worker"):
            per_worker[rec["worker"]] = per_worker.get(rec["worker"], 0) + 1
        manifest.write(json.dumps(rec) + "\n")
        manifest.flush()

    todo = []
    for stem, s in stems.items():
        out = out_dir / f"{stem}.npz"
        if args.resume and out.exists() and complete(out, names):
            record({"input": s, "output": str(out), "status": "skipped", "error": None, "message": None,
                    "seconds": 0.0, "worker": None})
        else:
            todo.append((s, str(out)))

    cluster = None
    try:
        if args.scheduler:
            client = Client(args.scheduler, timeout=30)
        else:
            n = args.workers or os.cpu_count() or 1
            cluster = LocalCluster(n_workers=n, threads_per_worker=args.threads_per_worker, processes=True,
                                   dashboard_address=None)
            client = Client(cluster)
        if args.scheduler and not args.shared_storage:
            xml = Path(model.path).read_bytes()
            weights = Path(model.weights.path).read_bytes() if model.weights.size else b""
            source = client.scatter((Path(model.path).stem, xml, weights), broadcast=True)
        else:
            source = os.path.abspath(model.path)
        futures = [client.submit(run_sample, source, s, o, key=f"irexec-{i}-{Path(o).stem}", retries=args.retries,
                                 pure=False) for i, (s, o) in enumerate(todo)]
        tty = sys.stderr.isatty()
        done = 0
        for fut in as_completed(futures):
            rec = fut.result()
            record(rec)
            done += 1
            if tty:
                rate = done / max(time.perf_counter() - t0, 1e-9)
                eta = (len(todo) - done) / rate if rate else 0
                print(f"\rbatch: {done}/{len(todo)} done, {counts['failed']} failed, {rate:.1f}/s, ETA {eta:.0f} s",
                      end="", file=sys.stderr, flush=True)
        if tty:
            print(file=sys.stderr)
        client.close()
    finally:
        manifest.close()
        if cluster is not None:
            cluster.close()
    wall = time.perf_counter() - t0
    summary = {"model": args.model, "samples": len(samples), **counts, "seconds": wall,
               "samples_per_s": (counts["ok"] + counts["failed"]) / wall if wall else 0.0,
               "per_worker": {w: n / max(1, sum(per_worker.values())) for w, n in sorted(per_worker.items())},
               "out": str(out_dir), "manifest": str(out_dir / "manifest.jsonl")}
    if args.json != "-":
        print(f"{summary['samples']} samples: {counts['ok']} ok, {counts['failed']} failed, {counts['skipped']} skipped "
              f"in {wall:.1f} s ({summary['samples_per_s']:.1f} samples/s)")
        for w, share in summary["per_worker"].items():
            print(f"  {w}: {share:.0%} of the samples")
    _emit_json(args.json, summary)
    if counts["failed"]:
        print(f"irexec: {counts['failed']} of {len(samples)} samples failed (see {out_dir / 'manifest.jsonl'})",
              file=sys.stderr)
        return 1
    return 0
