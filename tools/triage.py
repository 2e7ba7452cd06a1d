"""Differential triage: N seeded mutations of the small base models, run by irexec and by OpenVINO.

    python3 -m tools.triage -n 300 --seed 0

Each case is one of the base models of tests/support/mutators.py with 1-3 mutations (the same mutators the
fuzz tests use). irexec runs it in this process (load + validate + infer on seeded random data);
OpenVINO, when installed, runs it in a worker process (core.read_model + compile_model on CPU with
f32 inference precision + infer on the same data), so a crash or hang of OpenVINO on a hostile
file costs one case, not the run. The table counts the cases both reject, both accept, only irexec
accepts and only OpenVINO accepts, with a few examples of each disagreement (the mutation and each
side's message, one line each), and, among the cases both accept, how many outputs disagree
numerically.

A case counts as accepted when every stage ran: for irexec load, validate and infer; for OpenVINO
read, compile and infer. An exception other than irexec.IRExecError out of irexec is a bug: such
cases are listed apart as "irexec crashes" (and counted as rejections in the table).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import subprocess
import sys
import tempfile
import traceback
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

LIMITS_KW = dict(max_tensor_elements=1 << 22, max_tensor_bytes=1 << 25, max_total_bytes=1 << 26, max_layers=1000)


def one_line(text: str, width: int = 150) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= width else s[: width - 3] + "..."


# ---- the OpenVINO worker (a separate process) -------------------------------------------------


def _ov_feeds(compiled, feeds: dict | None, order: list[str]):
    """The input tensors for OV: irexec's feeds matched by tensor name, then by Parameter name,
    then by position; without irexec's feeds, seeded data of OV's own input shapes."""
    import openvino as ov

    out = []
    rng = np.random.default_rng(0)
    for i, port in enumerate(compiled.inputs):
        if feeds is not None:
            names = set(port.get_names()) | {port.get_node().get_friendly_name()}
            key = next((k for k in order if k in names), None)
            if key is None and i < len(order):
                key = order[i]
            if key is None:
                raise RuntimeError(f"no data for input {sorted(names)}")
            out.append(feeds[key])
            continue
        ps = port.get_partial_shape()
        if ps.rank.is_dynamic:
            shape = (2, 2)
        else:
            shape = tuple(d.get_length() if d.is_static else 2 for d in ps)
        dt = np.dtype(port.get_element_type().to_dtype())
        if dt.kind == "f":
            out.append(rng.standard_normal(shape).astype(dt))
        elif dt.kind == "b":
            out.append(rng.random(shape) < 0.5)
        else:
            out.append(np.zeros(shape, dt))
    del ov
    return out


def worker() -> None:
    """Serve requests on stdin: one JSON line per case, one JSON line back on the saved stdout
    (fd 1 is pointed at stderr so that OpenVINO's own prints cannot garble the protocol)."""
    proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    import openvino as ov

    core = ov.Core()
    for line in sys.stdin:
        req = json.loads(line)
        stage = "read"
        try:
            model = core.read_model(req["xml"])
            stage = "compile"
            compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
            stage = "infer"
            feeds = None
            if req.get("feeds"):
                with np.load(req["feeds"]) as z:
                    feeds = {k: z[k] for k in z.files}
            order = req.get("order") or []
            inputs = _ov_feeds(compiled, feeds, order)
            result = compiled.infer_new_request(inputs)
            arrays, meta = {}, []
            for j, port in enumerate(compiled.outputs):
                arrays[f"o{j}"] = np.array(result[port])
                meta.append({"names": sorted(port.get_names()), "node": port.get_node().get_friendly_name()})
            np.savez(req["out"], **arrays)
            reply = {"ok": True, "outputs": meta}
        except Exception as e:  # OV's errors: RuntimeError, TypeError, ...
            reply = {"ok": False, "stage": stage, "msg": one_line(f"{type(e).__name__}: {e}", 400)}
        proto.write(json.dumps(reply) + "\n")
        proto.flush()


class OVRunner:
    """The worker process, restarted after a crash or a timeout."""

    def __init__(self, timeout: float):
        self.timeout = timeout
        self.proc = None

    def _start(self):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tools.triage", "--ov-worker"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )

    def run(self, xml: Path, feeds_path: Path | None, order: list[str], out: Path) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        req = {"xml": str(xml), "feeds": str(feeds_path) if feeds_path else None, "order": order, "out": str(out)}
        try:
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            return self._died()
        ready, _, _ = select.select([self.proc.stdout], [], [], self.timeout)
        if not ready:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
            return {"ok": False, "stage": "timeout", "msg": f"no answer within {self.timeout:g} s (killed)"}
        line = self.proc.stdout.readline()
        if not line:
            return self._died()
        return json.loads(line)

    def _died(self) -> dict:
        code = self.proc.wait()
        self.proc = None
        return {"ok": False, "stage": "crash", "msg": f"OpenVINO worker died (exit {code})"}

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# ---- the triage ---------------------------------------------------------------------------------


@dataclass
class Outcome:
    ok: bool
    msg: str = ""
    outputs: dict = field(default_factory=dict)  # name -> array
    crashed: bool = False


def run_irexec(xml: Path, seed: int):
    """(outcome, feeds or None): load, validate, infer on seeded data from the model's inputs."""
    import irexec
    from tests.support import mutators as M

    limits = irexec.Limits(**LIMITS_KW)
    feeds = None
    stage = "load"
    try:
        model = irexec.load(xml, limits)
        stage = "validate"
        model.validate()
        stage = "feeds"
        feeds = M.make_feeds(model, np.random.default_rng(seed))
        stage = "infer"
        outputs = model.infer(feeds)
        return Outcome(True, outputs=outputs), feeds
    except irexec.IRExecError as e:
        return Outcome(False, one_line(f"{stage}: {type(e).__name__}: {e}", 400)), feeds
    except Exception as e:
        tb = traceback.extract_tb(e.__traceback__)[-1]
        where = f"{Path(tb.filename).name}:{tb.lineno}"
        return Outcome(False, one_line(f"{stage}: CRASH {type(e).__name__}: {e} ({where})", 400), crashed=True), feeds


def compare(ir_out: dict, ov_out: list[tuple[dict, np.ndarray]]) -> str | None:
    """None if the outputs agree; else a one-line description of the first difference."""
    if len(ir_out) != len(ov_out):
        return f"{len(ir_out)} outputs vs {len(ov_out)}"
    pending = list(ov_out)
    for pos, (name, a) in enumerate(ir_out.items()):
        match = next((m for m in pending if name in m[0]["names"] or name == m[0]["node"]), None)
        if match is None:
            match = pending[0] if len(pending) == 1 else ov_out[pos]
        if match in pending:
            pending.remove(match)
        b = match[1]
        if a.shape != b.shape:
            return f"{name!r}: shape {a.shape} vs OpenVINO {b.shape}"
        if a.size == 0:
            continue
        if a.dtype.kind == "b" or b.dtype.kind == "b":
            if not np.array_equal(a.astype(bool), b.astype(bool)):
                return f"{name!r}: boolean values differ"
            continue
        x, y = a.astype(np.float64), b.astype(np.float64)
        rtol = 1e-2 if a.dtype == np.float16 or b.dtype == np.float16 else 1e-4
        if not np.allclose(x, y, rtol=rtol, atol=1e-5, equal_nan=True):
            with np.errstate(all="ignore"):
                diff = np.abs(x - y)
            diff = np.where(np.isnan(x) & np.isnan(y), 0, diff)
            i = int(np.nanargmax(np.where(np.isnan(diff), np.inf, diff)))
            return (
                f"{name!r} {a.dtype}/{b.dtype}: max |diff| at flat {i}: irexec {x.flat[i]:.6g} vs "
                f"OpenVINO {y.flat[i]:.6g}"
            )
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=300, help="number of mutated cases (default 300)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the mutations (default 0)")
    ap.add_argument("--examples", type=int, default=4, help="examples listed per disagreement (default 4)")
    ap.add_argument("--timeout", type=float, default=60, help="seconds OpenVINO may take per case")
    ap.add_argument("--steps", type=int, default=3, help="at most this many mutations per case (default 3)")
    ap.add_argument("--no-openvino", action="store_true", help="run irexec only")
    ap.add_argument("--keep", metavar="DIR", help="write the cases into DIR and keep them")
    ap.add_argument("--ov-worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.ov_worker:
        worker()
        return 0

    from tests.support import mutators as M

    have_ov = False
    if not args.no_openvino:
        try:
            import importlib.util

            have_ov = importlib.util.find_spec("openvino") is not None
        except (ImportError, ValueError):
            have_ov = False

    tmp_ctx = tempfile.TemporaryDirectory(prefix="irexec-triage-") if not args.keep else None
    work = Path(args.keep) if args.keep else Path(tmp_ctx.name)
    work.mkdir(parents=True, exist_ok=True)
    bases = M.base_models(work / "bases")
    ov = OVRunner(args.timeout) if have_ov else None

    table: Counter = Counter()
    examples: dict[str, list[str]] = defaultdict(list)
    crashes: list[str] = []
    numeric_bad: list[str] = []
    try:
        for i in range(args.n):
            ch = M.RandomChooser(random.Random(args.seed * 1_000_003 + i))
            base = ch.choice(bases)
            case = M.mutate(base, ch, args.steps)
            d = work / f"case{i:05d}"
            xml = case.write(d)
            desc = one_line(f"#{i} {case.describe()}", 200)
            ir, feeds = run_irexec(xml, args.seed * 1_000_003 + i)
            if ir.crashed:
                crashes.append(f"{desc}\n      irexec: {ir.msg}")
            if ov is None:
                table["irexec accepts" if ir.ok else "irexec rejects"] += 1
                if not ir.ok and len(examples["irexec rejects"]) < args.examples:
                    examples["irexec rejects"].append(f"{desc}\n      irexec: {ir.msg}")
                continue
            feeds_path = None
            order = list(feeds) if feeds is not None else []
            if feeds is not None:
                feeds_path = d / "feeds.npz"
                np.savez(feeds_path, **feeds)
            out_path = d / "ov_out.npz"
            reply = ov.run(xml, feeds_path, order, out_path)
            ov_ok = reply["ok"]
            ov_msg = "" if ov_ok else f"{reply['stage']}: {reply['msg']}"
            if ir.ok and ov_ok:
                key = "both accept"
                with np.load(out_path) as z:
                    ov_out = [(meta, z[f"o{j}"]) for j, meta in enumerate(reply["outputs"])]
                diff = compare(ir.outputs, ov_out)
                if diff is not None:
                    numeric_bad.append(f"{desc}\n      {one_line(diff, 200)}")
            elif not ir.ok and not ov_ok:
                key = "both reject"
            elif ir.ok:
                key = "only irexec accepts"
            else:
                key = "only OpenVINO accepts"
            table[key] += 1
            if key.startswith("only") and len(examples[key]) < args.examples:
                examples[key].append(
                    f"{desc}\n      irexec:   {ir.msg or 'accepted'}\n      OpenVINO: {one_line(ov_msg, 200) or 'accepted'}"
                )
    finally:
        if ov is not None:
            ov.close()

    print(
        f"triage: {args.n} mutated cases, seed {args.seed}, "
        f"bases: {', '.join(b.name for b in bases)}"
        + ("" if ov is not None else "  (OpenVINO not installed or disabled: irexec only)")
    )
    print()
    rows = (
        ["both reject", "both accept", "only irexec accepts", "only OpenVINO accepts"]
        if ov is not None
        else ["irexec rejects", "irexec accepts"]
    )
    width = max(len(r) for r in rows) + 2
    print(f"{'outcome':<{width}}{'cases':>7}")
    print("-" * (width + 7))
    for r in rows:
        print(f"{r:<{width}}{table[r]:>7}")
    print("-" * (width + 7))
    print(f"{'total':<{width}}{sum(table.values()):>7}")
    if ov is not None:
        both = table["both accept"]
        print()
        print(
            f"accepted by both: {len(numeric_bad)} of {both} disagree numerically "
            f"(rtol 1e-4, 1e-2 for f16; atol 1e-5; NaN == NaN)"
        )
    print(f"irexec crashes (an exception other than IRExecError): {len(crashes)}")
    for title in ("only irexec accepts", "only OpenVINO accepts", "irexec rejects"):
        if examples.get(title):
            print(f"\nexamples, {title}:")
            for e in examples[title]:
                print(f"  {e}")
    if numeric_bad:
        print("\nexamples, both accept but the outputs differ:")
        for e in numeric_bad[: args.examples]:
            print(f"  {e}")
    if crashes:
        print("\nirexec crashes:")
        for e in crashes[: 3 * args.examples]:
            print(f"  {e}")
    if tmp_ctx is not None:
        tmp_ctx.cleanup()
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
