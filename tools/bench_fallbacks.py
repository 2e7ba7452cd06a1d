"""Each kernel family's numpy path against its numba kernels at real sizes (kernels/probes.py):
the op computed as a model's layer would, each path forced (`jit.forced`), interleaved rounds,
medians; the ratio numpy / kernels is what a model pays while its kernels are not loaded (the
issue's goal: within 2x). `--calibrate` also writes this machine's cost model
(kernels/calibrate.py) from the families' first probes.

    python3 -m tools.bench_fallbacks [--rounds 7] [--families reduce,pool] [--threads 1]
"""

from __future__ import annotations

import argparse
import math

from irexec.kernels import calibrate, jit, probes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--families", default="", help="comma-separated families (default: all)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the probes' first dims")
    ap.add_argument("--threads", type=int, default=0, help="kernel threads (default: the machine's)")
    ap.add_argument("--calibrate", action="store_true", help="also record this machine's cost model")
    args = ap.parse_args()
    if args.threads:
        jit.set_num_threads(args.threads)
    families = [f for f in args.families.split(",") if f] or list(jit.FAMILIES)
    print(f"threads {jit.num_threads()}; medians of {args.rounds} interleaved rounds; numpy / kernels")
    print(f"{'family':<12} {'op':<46} {'MB':>7} {'numpy ms':>9} {'kernel ms':>9} {'ratio':>6}")
    ratios = []
    for family in families:
        if family not in probes.PROBES:  # a family without a real-size probe yet
            print(f"{family:<12} (no probe: not measured)")
            continue
        for probe in probes.PROBES[family]:
            run, nbytes = probes.prepare(probe, args.scale)
            _, numpy_s, kernel_s = calibrate.time_paths(run, args.rounds)
            ratio = numpy_s / kernel_s
            ratios.append(ratio)
            print(
                f"{family:<12} {probe.name[:46]:<46} {nbytes / 1e6:>7.1f} {numpy_s * 1e3:>9.3f} "
                f"{kernel_s * 1e3:>9.3f} {ratio:>6.2f}"
            )
    print(f"geometric mean numpy / kernels: {math.exp(sum(map(math.log, ratios)) / len(ratios)):.2f}")
    if args.calibrate:
        print("calibration:", calibrate.calibrate([f for f in families if f in probes.PROBES]))
        print("written to", calibrate.path())


if __name__ == "__main__":
    main()
