"""irexec/allocator.py: at the first model load, glibc's malloc thresholds are set once per
process, unless IREXEC_MALLOC_TUNING=0 or the process set glibc's own MALLOC_* variables."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "samples", "reduce_mean_axes23_keepdims.xml")

# the thresholds as a fresh process sees them: glibc's malloc_info does not report them, so the
# check is what tune() answers and that a load in such a process runs
SCRIPT = """
import sys, irexec
from irexec import allocator
before = allocator._done
m = irexec.load(sys.argv[1])
print(before, allocator._done, allocator.tune())
"""


def _run(env_extra: dict) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "IREXEC_MALLOC_TUNING"}
    env.update(env_extra, PYTHONPATH=ROOT)
    proc = subprocess.run([sys.executable, "-c", SCRIPT, SAMPLE], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux only")
def test_thresholds_are_set_once_at_the_first_load():
    before, done, answer = _run({})
    assert (before, done) == ("False", "True")
    assert answer == "True"  # set (glibc found), and a second call does nothing more


@pytest.mark.parametrize("env", [{"IREXEC_MALLOC_TUNING": "0"}, {"MALLOC_MMAP_THRESHOLD_": "1048576"}])
def test_malloc_is_left_alone_when_asked(env):
    before, done, answer = _run(env)
    assert (before, done, answer) == ("False", "True", "False")
