"""Running the irexec CLI in a child process, with its peak memory and wall time."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# The child runs under a tiny Python launcher that reports getrusage(RUSAGE_CHILDREN) for its only
# child. Measured from pytest directly, ru_maxrss would be polluted: on Linux a child's peak RSS
# starts at its parent's RSS at fork time (pytest's, hundreds of MB once openvino is imported).
_LAUNCHER = """
import resource, subprocess, sys
proc = subprocess.run(sys.argv[2:])
with open(sys.argv[1], "w") as f:
    f.write(f"{proc.returncode} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}")
"""


def run_cli(*args, timeout: float = 60) -> tuple[int, str, str, int, float]:
    """`python3 -m irexec ARGS` -> (exit code, stdout, stderr, peak RSS in KB, wall seconds)."""
    with tempfile.TemporaryDirectory() as d:
        stats = Path(d) / "rusage"
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-c", _LAUNCHER, str(stats), sys.executable, "-m", "irexec", *map(str, args)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            pytest.fail(f"irexec {' '.join(map(str, args))} still running after {timeout} s (did it open a FIFO?)")
        wall = time.perf_counter() - t0
        code, rss = (int(v) for v in stats.read_text().split())
        return code, out.decode(errors="replace"), err.decode(errors="replace"), rss, wall
