"""When numba's kernels run, where their compiled code is cached, and the threads that run them.

Importing numba costs 0.3-0.7 s and compiling a kernel family 2-20 s on a cold cache, while
OpenVINO reads, compiles and runs a small model in 0.3 s. The kernels are organised in families
(`FAMILIES`: reduce, normalize, pool, conv, elementwise, quantize); each family's dispatch asks
`use(nbytes, per_call, family)` before a call, and runs its numpy path (same accumulation rules)
when the answer is no:

- A library process (the default): the first call that would use a family starts loading that
  family alone in the background while numpy serves. From a warm cache (its module has compiled
  code there) that is numba's import and the family's module, on the loader thread; each
  specialization then loads from the cache on its first call, in milliseconds; a model's second
  `infer` waits for those loads (`settle`), so a loop runs the kernels from its second call. A
  family the cache lacks compiles whole (`warm()`) on another thread, the compiler, which nothing
  waits for: the calls keep numpy until it is done (a family is ready only once compiled), and a
  warm family is never queued behind it.
- A one-shot process (`one_shot()`: the CLI's run, compare, validate...): a call takes a family's
  kernels only from the cache, and only when it alone saves more than loading costs (numba's
  import and a few specializations); nothing compiles and nothing loads in the background, so
  `irexec run` never waits for a compile.
- `Model.compile()` / `irexec.load(..., jit="eager")` load the families a model uses now
  (`load_families`), like OpenVINO's `compile_model`; `load(full=True)` every family
  (benchmarks); `IREXEC_JIT=always` loads every family on first use (tests), `never` keeps numpy.
- The costs (numba's import, a specialization's load and compile, each family's numpy and kernel
  throughput) are this machine's, measured by `kernels/calibrate.py` and kept beside the cache by `kernels/costs.py`
  (`calibration.json`, with the CPU they were measured on; missing or stale: defaults). Once the
  loaders are idle, the families a process used are measured in a child process at the lowest
  priority.
- `forced(True|False)` takes one path in the calling thread (calibration, benchmarks);
  `recording()` lists the paths chosen (`irexec bench --paths`).
- The first compile in a process prints one notice on stderr.

Kernels are serial, `nogil` numba functions over a task range; `parallel_for` runs the ranges on
a small pool of Python threads, and only when the work is large enough to pay for threads
(`config.THREAD_MIN_BYTES`): numba's parallel regions wait for every thread, so one thread
preempted by another process stalled a 0.1 ms reduction for 4-8 ms; here the busy threads take
the remaining chunks. Serial kernels also compile several times faster than `parallel=True`.

The cache goes to `config.CACHE_DIR` (default ~/.cache/irexec/numba, or $XDG_CACHE_HOME), set on
numba's config even when numba was imported first; when no such folder is writable the kernels
run uncached, with one warning, and nothing is ever written into the installed package. The
compiled kernels go to a subfolder named by a digest of the kernels' sources (`KERNEL_DIR`):
numba keys a cached kernel on its own file's text only, so a kernel that inlines another
module's function (the element-wise kernels take `normalize_loops`' exponentials) kept running
the old code after that module changed; a new version of the sources compiles afresh (the two
newest other versions' folders are kept, older ones deleted).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from .. import config
from . import costs

# the cost model's constants (import numba, load or compile a specialization, each family's
# numpy and kernel throughput) are measured on the machine and kept beside the cache:
# kernels/calibrate.py; its defaults serve until then
# kernel families: name -> (the module whose import defines its numba kernels, the module whose
# `warm()` compiles every specialization irexec calls). Each specialization compiles, or loads
# from the cache, on its first call; the reduction family warms through its planner, which knows
# which specializations it calls.
FAMILIES: dict[str, tuple[str, str]] = {
    "reduce": ("irexec.kernels.reduce.loops", "irexec.kernels.reduce.plan"),
    "normalize": ("irexec.kernels.normalize_loops", "irexec.kernels.normalize_loops"),
    "pool": ("irexec.kernels.pool_loops", "irexec.kernels.pool_loops"),
    "conv": ("irexec.kernels.conv_loops", "irexec.kernels.conv_loops"),
    "elementwise": ("irexec.kernels.elementwise_loops", "irexec.kernels.elementwise_loops"),
    "quantize": ("irexec.kernels.quantize_loops", "irexec.kernels.quantize_loops"),
    "grid": ("irexec.kernels.grid_loops", "irexec.kernels.grid_loops"),
    "embedding": ("irexec.kernels.embedding_loops", "irexec.kernels.embedding_loops"),
    "nms": ("irexec.kernels.nms_loops", "irexec.kernels.nms_loops"),
    "detectron": ("irexec.kernels.detectron_loops", "irexec.kernels.detectron_loops"),
    "recurrent": ("irexec.kernels.recurrent_loops", "irexec.kernels.recurrent_loops"),
}
# the families `kernels/probes.py` has a real-size op for (the others keep the cost model's
# defaults; tests/test_jit_policy.py checks the two lists agree)
PROBED = ("reduce", "normalize", "pool", "conv", "elementwise", "quantize")
KERNEL_MODULES: list[str] = [kernels for kernels, _ in FAMILIES.values()]
WARM_MODULES: list[str] = [warm for _, warm in FAMILIES.values()]

_lock = threading.Lock()  # counters and state changes
# one loader at a time; re-entrant: a family's warm() runs ops whose dispatch may load (with
# config.JIT "always", `use` calls `load`, which came back here and waited for itself)
_load_lock = threading.RLock()
# one import of kernel modules at a time: the warm-cache loader and the cold-cache compiler
# (two threads, when one family is cached and another is not) imported numba at once, and
# Python's import locks handed one of them a partly initialized numba ("partially initialized
# module 'numba.core.types' has no attribute 'boolean'"), which turned the kernels off for the
# process; held only for the imports, not for a compile
_import_lock = threading.RLock()
_state = "cold"  # every family: cold | loading | ready | failed
_families: dict[str, str] = {}  # family -> loading | ready, in the library's policy (below)
_quick: list[str] = []  # families loading from a warm cache: the second `infer` waits for them
_queue: list[str] = []  # families the background compiler has yet to compile
_one_shot = False  # a process that runs one inference (the CLI): never start a background load
_loader: threading.Thread | None = None  # `load_in_background`'s (every family)
_quick_loader: threading.Thread | None = None  # imports the warm-cache families
_compiler: threading.Thread | None = None  # compiles the cold-cache families
_calibrating: subprocess.Popen | None = None  # the background measurement (kernels/calibrate.py)
_threads: list[threading.Thread] = []  # every background thread started (`wait_loaded`)
_calibration_tried: set[str] = set()
_warned_cache = False
_listening = False  # the compile notice is registered with numba
_noticed = False  # and has been printed
import_numba_s: float | None = None  # measured when this process imported numba
_local = threading.local()  # per thread: a forced path (calibration, benchmarks), a path log


# ---- the cache -------------------------------------------------------------------------------


def _writable_dir(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
        return True
    except OSError:
        return False


def _decide_cache_dir() -> str | None:
    if os.environ.get("NUMBA_CACHE_DIR"):
        return os.environ["NUMBA_CACHE_DIR"]
    if os.environ.get("IREXEC_CACHE_DIR"):
        path = Path(os.environ["IREXEC_CACHE_DIR"])
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        path = Path(base) / "irexec" / "numba"
    return str(path) if _writable_dir(path) else None


def _sources_tag() -> str:
    """A digest of the kernel modules' sources and of the modules they take values from (a
    millisecond: 37 files, 360 KB)."""
    here = Path(__file__).resolve().parent
    package = here.parent
    files = sorted(here.rglob("*.py")) + [package / name for name in ("special.py", "geometry.py", "dtypes.py")]
    digest = hashlib.sha256()
    for f in files:
        digest.update(str(f.relative_to(package)).encode())
        digest.update(f.read_bytes())
    return digest.hexdigest()[:16]


def _kernel_dir(base: str) -> str | None:
    """The folder of this version of the kernels in the cache folder `base` (made when missing,
    then all but the two newest other versions' folders deleted), or None when it cannot be made."""
    path = Path(base) / f"src-{_sources_tag()}"
    if path.is_dir():
        return str(path)
    if not _writable_dir(path):
        return None
    others = sorted((p for p in Path(base).glob("src-*") if p != path), key=lambda p: p.stat().st_mtime)
    for old in others[:-2]:
        shutil.rmtree(old, ignore_errors=True)
    return str(path)


CACHE_DIR = _decide_cache_dir()
costs.folder = CACHE_DIR  # the calibration file lives in the cache folder
KERNEL_DIR = _kernel_dir(CACHE_DIR) if CACHE_DIR is not None else None
CACHE = KERNEL_DIR is not None


def _configure_numba(numba) -> None:
    """Point an already imported numba at irexec's cache (NUMBA_CACHE_DIR is read at import), and
    listen for compiles, to say once that they take a while."""
    global _warned_cache, _listening
    if KERNEL_DIR is not None and getattr(numba.config, "CACHE_DIR", "") != KERNEL_DIR:
        numba.config.CACHE_DIR = KERNEL_DIR
    if not CACHE and not _warned_cache:
        _warned_cache = True
        print(
            "irexec: warning: no writable cache folder (set IREXEC_CACHE_DIR); kernels compile "
            "again in every process (about 1 s each)",
            file=sys.stderr,
        )
    if CACHE and not _listening:
        _listening = True
        from numba.core import event

        class CompileNotice(event.Listener):
            """One line on stderr when the first of irexec's kernels starts compiling (a cache
            miss): each takes 0.2-2 s, and nothing else would say why the first call is slow."""

            def on_start(self, ev):
                global _noticed
                func = getattr(ev.data.get("dispatcher") if isinstance(ev.data, dict) else None, "py_func", None)
                if _noticed or not getattr(func, "__module__", "").startswith("irexec."):
                    return
                _noticed = True
                print(
                    f"irexec: compiling numba kernels (about 1 s each, once; cached in {CACHE_DIR}; "
                    "`irexec warmup` compiles them ahead of time)",
                    file=sys.stderr,
                )

            def on_end(self, ev):
                pass

        event.register("numba:compile", CompileNotice())


def njit(**options):
    """numba.njit with irexec's defaults: serial, nogil, cached when a cache folder is writable."""
    import numba

    _configure_numba(numba)
    options.setdefault("nogil", True)
    options.setdefault("cache", CACHE)
    return numba.njit(**options)


def _module_cached(folder: Path, name: str) -> bool:
    """Whether a kernel module has compiled code in the cache (a file check: no numba import)."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        return False
    stem = Path(spec.origin).stem
    return any(folder.rglob(f"{stem}.*.nbi"))


def cache_is_warm() -> bool:
    """Whether every kernel family has compiled code in the cache (a file check: no numba import)."""
    if not CACHE:
        return False
    return all(_module_cached(Path(KERNEL_DIR), name) for name in KERNEL_MODULES)


# ---- when to use numba ------------------------------------------------------------------------


def ready(family: str | None = None) -> bool:
    """Whether `family`'s kernels are loaded; without a family, whether any are (a family loaded
    in the background, or every family by `load`)."""
    if _state == "ready":
        return True
    if family is None:
        return "ready" in _families.values()
    return _families.get(family) == "ready"


def one_shot() -> None:
    """This process runs one inference and exits (the CLI's run, compare, validate...): the
    kernels are used only when one call saves more than loading them from the cache costs,
    nothing compiles and nothing loads in the background."""
    global _one_shot
    _one_shot = True


@contextlib.contextmanager
def forced(kernels: bool | None):
    """In this thread, every family's dispatch takes its kernels (True: loaded now, compiled if
    the cache lacks them) or its numpy path (False), whatever the policy: calibration and
    benchmarks. None restores the policy."""
    before = getattr(_local, "force", None)
    _local.force = kernels
    _override(1)
    try:
        yield
    finally:
        _local.force = before
        _override(-1)


@contextlib.contextmanager
def recording():
    """Collect, in this thread, the paths the families' dispatches chose: a list of (family,
    "numba" | "numpy"), one per `use` call (`irexec bench --paths`)."""
    before = getattr(_local, "paths", None)
    _local.paths = log = []
    _override(1)
    try:
        yield log
    finally:
        _local.paths = before
        _override(-1)


_overrides = 0  # `forced` and `recording` sections open in any thread (`use` looks them up only then)
_override_lock = threading.Lock()


def _override(step: int) -> None:
    global _overrides
    with _override_lock:
        _overrides += step


def use(nbytes: int, per_call: float = 0.0, family: str | None = None, small: bool = False) -> bool:
    """Whether a kernel family's call reading `nbytes` should run the numba kernels now (see the
    module doc). `per_call`: seconds the kernel saves on any call, whatever its size (the numpy
    path's fixed cost: several array temporaries and ufunc calls). `small`: a call too small to
    be worth loading numba for by itself (it takes the kernels once they are loaded)."""
    # loaded, and no thread forces a path or records them: every call of a model's run asks
    # this (1.5 us through `_decide`'s thread-local lookups, 0.2 here)
    if not _overrides and config.JIT != "never" and (_state == "ready" or _families.get(family) == "ready"):
        return _state != "failed"
    answer = _decide(nbytes, per_call, family, small)
    log = getattr(_local, "paths", None)
    if log is not None:
        log.append((family or "?", "numba" if answer else "numpy"))
    return answer


def _decide(nbytes: int, per_call: float, family: str | None, small: bool) -> bool:
    force = getattr(_local, "force", None)
    if force is not None:
        return bool(force) and _state != "failed" and (ready(family) or _load_now(family))
    mode = config.JIT
    if mode == "never" or _state == "failed":
        return False
    if ready(family):
        return True
    if mode == "always":
        return False if small else load()
    if family is None or _one_shot:
        return False if small else _pays_now(nbytes, per_call, family)
    _request(family)
    return False


def _load_now(family: str | None) -> bool:
    return load() if family is None else load_families([family], compile_now=False)


def _pays_now(nbytes: int, per_call: float, family: str | None) -> bool:
    """The one-shot policy: load the family now, from the cache, when this one call saves more
    than loading costs (numba's import and a few specializations, as measured on this machine);
    a family the cache lacks is never compiled in the foreground."""
    if family is not None and not _family_cached(family):
        return False
    measured = costs.costs()
    rates = costs.rates(family)
    saving = nbytes / rates["numpy_bytes_per_s"] - nbytes / rates["numba_bytes_per_s"] + per_call
    cost = (0.0 if "numba" in sys.modules else measured["import_numba_s"]) + 4 * measured["load_s"]
    if saving <= cost or _state == "failed":
        return False
    return _load_now(family)


def _family_cached(family: str) -> bool:
    return CACHE and _module_cached(Path(KERNEL_DIR), FAMILIES[family][0])


def _request(family: str) -> None:
    """The library's policy: the first call that would use a family starts loading it in the
    background while numpy serves: from a warm cache its module (numba's import, then each
    specialization on its first call, from the cache), which the second inference waits for
    (`settle`); from a cold cache its whole `warm()` compile, on another thread, which nothing
    waits for."""
    global _quick_loader, _compiler
    with _lock:
        if family in _families:
            return
        _families[family] = "loading"
        if _family_cached(family):
            _quick.append(family)
            if _quick_loader is None:
                _quick_loader = _thread(_load_quick, "irexec-jit-loader")
            return
        _queue.append(family)
        if _compiler is None:
            _compiler = _thread(_compile_queued, "irexec-jit-compiler")


def _thread(target, name: str) -> threading.Thread:
    t = threading.Thread(target=target, name=name, daemon=True)
    _threads.append(t)
    t.start()
    return t


def _load_quick() -> None:
    """The warm-cache loader: import each requested family's module (no compile), then, once
    idle, measure what the cost model lacks."""
    global _quick_loader
    while True:
        with _lock:
            if not _quick:
                _quick_loader = None  # a later request starts another
                break
            family = _quick[0]
        _import_family(family)
        with _lock:
            _quick.remove(family)
    _calibrate_later()


def _compile_queued() -> None:
    """The cold-cache compiler: the requested families, one at a time, each whole (`warm()`)."""
    global _compiler
    while True:
        with _lock:
            if not _queue:
                _compiler = None
                break
            family = _queue.pop(0)
        load_families([family], compile_now=True)
    _calibrate_later()


def _import_family(family: str, mark_ready: bool = True) -> bool:
    """Import a family's kernel module (numba's import the first time: timed for the cost model);
    with `mark_ready`, its calls take the kernels from now on."""
    global import_numba_s, _state
    try:
        with _import_lock:
            if "numba" not in sys.modules:
                t0 = time.perf_counter()
                import numba  # noqa: F401

                import_numba_s = time.perf_counter() - t0
            importlib.import_module(FAMILIES[family][0])
    except Exception as e:  # a broken numba install: the numpy paths still work
        _state = "failed"
        print(f"irexec: warning: numba kernels unavailable ({type(e).__name__}: {e}); using numpy", file=sys.stderr)
        return False
    if mark_ready:
        _families[family] = "ready"
    return True


def load_families(families, compile_now: bool = True) -> bool:
    """Load these families now (their module, and with `compile_now` every specialization:
    compiled, or loaded from the cache); True when they are ready."""
    global _state
    with _load_lock:
        for family in families:
            if _families.get(family) == "ready" and not compile_now:
                continue
            if not _import_family(family, mark_ready=not compile_now):
                return False
            if compile_now:  # the calls keep their numpy path until every specialization is in
                try:
                    importlib.import_module(FAMILIES[family][1]).warm()
                except Exception as e:
                    _state = "failed"
                    print(f"irexec: warning: numba kernels unavailable ({type(e).__name__}: {e})", file=sys.stderr)
                    return False
                _families[family] = "ready"
        return True


def _calibrate_later() -> None:
    """Measure, once per process, the loaded families that this machine's calibration file
    lacks: in a separate process at the lowest priority (`python -m irexec.kernels.calibrate`),
    so that the measurement never holds this process's GIL or numba's compiler lock (a probe's
    specialization may need compiling) while the caller runs."""
    global _calibrating
    if not CACHE or config.JIT == "never" or _state == "failed" or "python" not in Path(sys.executable).name:
        return
    with _lock:
        todo = [f for f, st in _families.items() if st == "ready" and f not in _calibration_tried]
        todo = [f for f in todo if f in PROBED and not costs.calibrated(f)]
        _calibration_tried.update(todo)
        if not todo or (_calibrating is not None and _calibrating.poll() is None):
            return
        env = dict(os.environ, IREXEC_CACHE_DIR=CACHE_DIR)
        env.pop("NUMBA_CACHE_DIR", None)
        try:
            _calibrating = subprocess.Popen(
                [sys.executable, "-m", "irexec.kernels.calibrate", *todo],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                preexec_fn=_lowest_priority if os.name == "posix" else None,
            )
        except OSError:  # no measurement: the defaults serve
            _calibrating = None


def _lowest_priority() -> None:
    try:
        os.nice(19)
    except OSError:
        pass


def settle(timeout: float = 30.0) -> None:
    """Wait (at most `timeout` seconds) for the families loading from a warm cache: a model's
    second inference runs its kernels. A compile of a cold family is never waited for."""
    deadline = time.monotonic() + timeout
    while _quick and time.monotonic() < deadline:
        loader = _quick_loader
        if loader is None or not loader.is_alive():
            return
        loader.join(0.01)


def load(full: bool = False) -> bool:
    """Import every kernel family; True when ready. With `full`, also compile (or load from the
    cache) every specialization now; otherwise each loads on its first call."""
    global _state
    if _state == "ready" and not full:
        return True
    if not load_families(list(FAMILIES), compile_now=full):
        return False
    _state = "ready"
    return True


def load_in_background() -> None:
    global _loader, _state
    with _lock:
        if _state != "cold":
            return
        _state = "loading"
    _loader = _thread(lambda: load(full=True), "irexec-jit-loader")


def wait_loaded(timeout: float | None = None) -> bool:
    """Wait for every background load and compile (and the calibration after them)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:  # a loader may start the calibration: look again after each join
        alive = [t for t in _threads if t.is_alive()]
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            return ready()
        if not alive:
            break
        alive[0].join(left)
    if _calibrating is not None:
        try:
            _calibrating.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    return ready()


# ---- threads ----------------------------------------------------------------------------------

_cores_taken_until = 0.0  # `cores_taken`: until then (time.monotonic()) regions run on the caller
_serial = threading.Lock()  # held by callers when a kernel must not run concurrently
_ran: set = set()  # (kernel, argument types) that have run once in this process


_wide: bool | None = None


def read_only(a):
    """A read-only copy of the array a, for a kernel module's `warm()`: a model's weights and
    constant masks reach the kernels so (the plan's constants are read-only), and numba compiles
    a read-only array's type apart from a writable one's."""
    a = a.copy()
    a.flags.writeable = False
    return a


def wide_vectors() -> bool:
    """Whether this machine's vectors hold 16 floats (AVX-512F), which the register-tile kernels
    are sized for: `conv_loops`' dense and pointwise tiles keep 16 accumulators of 16 floats in
    16 of its 32 zmm registers. With AVX2 each is two of its 16 ymm registers and the tiles spill
    (one thread, a Zen 3: 3x3 64 -> 64 over 56x56 8.5 ms against BLAS's 5.0, 1x1 16 -> 96 over
    112x112 1.5 against 0.9). Asked once the kernels are loaded: llvmlite comes with numba (alone
    it costs 45 ms to import)."""
    global _wide
    if _wide is None:
        from llvmlite import binding

        _wide = bool(binding.get_host_cpu_features().get("avx512f", False))
    return _wide


def num_threads() -> int:
    return config.NUM_THREADS


def set_num_threads(n: int) -> None:
    """Threads irexec's kernels may use (default: the machine's cores, or IREXEC_NUM_THREADS)."""
    if not isinstance(n, int) or n < 1:
        raise ValueError("the number of threads must be a positive integer")
    config.NUM_THREADS = n


def threads_for(nbytes: int, cost: float = 1.0) -> int:
    """Threads worth using for work reading `nbytes` (1 below config.THREAD_MIN_BYTES, about a
    millisecond of streaming). `cost` is the work per byte against a streaming read: a
    compute-bound kernel (softmax's exponentials: about 12, measured) pays for threads on
    proportionally smaller inputs."""
    work = int(nbytes * cost)
    if work < config.THREAD_MIN_BYTES or time.monotonic() < _cores_taken_until:
        return 1
    return max(1, min(config.NUM_THREADS, work // max(1, config.THREAD_MIN_BYTES // 2)))


def cores_busy_for() -> float:
    """Seconds until `cores_taken`'s time is over (0.0 when it is)."""
    return max(0.0, _cores_taken_until - time.monotonic())


def cores_taken(seconds: float) -> None:
    """Another library's threads hold the other cores for the next `seconds`: OpenBLAS's
    workers spin, runnable, for a while after a threaded product (`blas.matmul`), and a kernel
    thread sharing a core with one ran its chunks slowly while the caller waited for them
    (DenseNet-121: its products 7 ms faster on OpenBLAS's threads, the model 5% slower). Until
    then `threads_for` answers one thread (`cores_taken(0)`: from now on as before)."""
    global _cores_taken_until
    _cores_taken_until = time.monotonic() + seconds


class _Team:
    """The kernel threads: one per core beyond the caller's, each taking regions from a queue of
    its own. A region puts its worker function in the queues of the helpers it wants and works
    itself; a helper joins when it wakes (10-50 us here) and takes chunks while any are left,
    and the caller waits only for chunks a helper has taken, never for a helper to wake: a
    region the caller finishes alone costs it nothing of theirs. (Each region used to submit a
    task to a ThreadPoolExecutor and wait for its future: 70-130 us a region of two threads on
    this machine, which kept every region under a millisecond on one thread.) A helper that
    wakes after its region is over finds no chunk left and goes on to the next."""

    def __init__(self) -> None:
        self.queues: list = []
        self._grow = threading.Lock()

    def helpers(self, n: int) -> list:
        """The queues of n helpers, started on first use (and registered for
        `_keep_workers_off`)."""
        if len(self.queues) < n:
            with self._grow:
                while len(self.queues) < n:
                    q = queue.SimpleQueue()
                    name = f"irexec-kernel-{len(self.queues) + 1}"
                    t = threading.Thread(target=self._work, args=(q,), name=name, daemon=True)
                    t.start()  # returns once the thread runs: its native id is known
                    with _lock:
                        _workers[t.native_id] = -1
                    self.queues.append(q)
        return self.queues[:n]

    @staticmethod
    def _work(q) -> None:
        while True:
            q.get()()


_team = _Team()


# Workers kept off the caller's core. This machine's scheduler often wakes a pool worker on the
# core of the thread that woke it while the other core idles, and both then share one core for
# milliseconds, until load balancing moves one: a (2, 3) ReduceMean of 256 MiB took 14-18 ms
# instead of 8.5-9 in a third of the calls after another library's threads had run (measured).
# So a worker may run on every core the caller may use but the caller's own: the caller's core
# is looked up per region (sched_getcpu, 0.2 us) and the workers' masks set again only when it
# changed. Without sched_getcpu or affinity (not Linux), nothing is pinned.
_workers: dict[int, int] = {}  # native thread id of each helper thread -> the caller core it avoids


def _cpu_getter():
    """libc's sched_getcpu, or None where it or thread affinity is missing."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    try:
        import ctypes

        getcpu = ctypes.CDLL(None).sched_getcpu
    except (OSError, AttributeError):
        return None
    getcpu.restype = ctypes.c_int
    getcpu.argtypes = []
    return getcpu if getcpu() >= 0 else None


_getcpu = _cpu_getter()


def _after_fork_in_child() -> None:
    """A forked child has none of the parent's kernel threads: a new team starts on first use
    (the old one's queues would feed threads that do not exist), and the parent's thread ids
    are forgotten (they may name other processes' threads now)."""
    global _team
    _team = _Team()
    _workers.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _keep_workers_off(cpu: int) -> None:
    """Give each pool worker the calling thread's cores but `cpu` (its own core), where the
    worker's mask was set for another core. A caller held to one core leaves them on it."""
    global _getcpu
    moved = [tid for tid, avoided in list(_workers.items()) if avoided != cpu]
    if not moved:
        return
    allowed = os.sched_getaffinity(0)
    others = allowed - {cpu} or allowed
    for tid in moved:
        try:
            os.sched_setaffinity(tid, others)
        except ProcessLookupError:  # a worker gone (a replaced pool's)
            _workers.pop(tid, None)
            continue
        except OSError:  # cores taken away (cpusets): stop pinning
            _getcpu = None
            return
        _workers[tid] = cpu


def _from_cache(e: BaseException) -> bool:
    """Whether an exception came out of numba's cache (a corrupt or foreign entry)."""
    import traceback

    return any(fr.filename.endswith(("caching.py", "serialize.py")) for fr in traceback.extract_tb(e.__traceback__))


def _purge(kernel) -> None:
    """Delete the cache entries of the kernel's module, so numba compiles them afresh."""
    source = getattr(getattr(kernel, "py_func", None), "__code__", None)
    if not CACHE or source is None:
        return
    stem = Path(source.co_filename).stem
    for f in Path(KERNEL_DIR).rglob(f"{stem}.*.nb*"):
        try:
            f.unlink()
        except OSError:
            pass
    print(f"irexec: warning: damaged cache entries for {stem} removed; compiling them again", file=sys.stderr)


def call(kernel, *args):
    """kernel(*args), recovering once from a damaged or foreign cache entry."""
    try:
        return kernel(*args)
    except Exception as e:
        if not _from_cache(e):
            raise
    _purge(kernel)
    return kernel(*args)


def one_call(kernel, view: tuple, tasks: int, out_dtype, args: tuple, shape: tuple, work: int):
    """kernel(0, tasks, x as `view`, out, *args) as a function of x alone, for a layer that runs
    it again and again on arrays of one shape and type (`Op.steady`): what its wrapper's checks
    decided (the kernels loaded, on the calling thread: `work`, the bytes `threads_for` weighs,
    below config.THREAD_MIN_BYTES), taken once; out (`view`, `out_dtype`) comes back in `shape`.
    The function answers None while a thread forces or records the paths (`forced`,
    `recording`), or a setting since makes the call take threads or numpy: the caller then takes
    its wrapper. Inside a model, a layer's Python around its kernel costs several times what it
    does alone (BERT's LayerNorm over (1, 128, 32): 31 us a call, 10 of them the kernel)."""
    import numpy as np

    def run(x):
        if not still_one_call(work):
            return None
        out = np.empty(view, out_dtype)
        kernel(0, tasks, np.ascontiguousarray(x).reshape(view), out, *args)
        return out.reshape(shape)

    return run


def still_one_call(work: int) -> bool:
    """Whether a steady call made earlier (`one_call`) may still run: no thread forces or
    records the paths, the kernels are not switched off, and `work` still runs on one thread."""
    return not _overrides and work < config.THREAD_MIN_BYTES and config.JIT != "never"


def parallel_for(kernel, n_tasks: int, threads: int, *args) -> None:
    """kernel(t_lo, t_hi, *args) over tasks 0..n_tasks in chunks; the calling thread works too and
    every thread pulls the next chunk when done, so a preempted thread delays only its own chunk,
    and the caller waits only for chunks that helpers took (`_Team`: a helper that has not woken
    yet, or is busy with another thread's region, holds up nothing). A chunk is a 2 x
    threads-th of the tasks left (guided: they shrink to one task), so the last ones are small
    (T5 at 512 tokens and wav2vec2 1-4% faster than with eight equal chunks). What a chunk
    raises is raised in the caller. The first call of a kernel with new argument types runs one
    task alone, so a compile or a cache repair happens once, in the calling thread."""
    if threads <= 1 or n_tasks <= 1:
        call(kernel, 0, n_tasks, *args)
        return
    key = (kernel, tuple((a.dtype, a.ndim) if hasattr(a, "ndim") else type(a) for a in args))
    first = 0
    # one task alone: a compile or cache repair happens once, here (numba kernels only; a
    # Python function of numpy and kernel calls, a closure per call, has nothing to compile)
    if hasattr(kernel, "py_func") and key not in _ran:
        call(kernel, 0, 1, *args)
        _ran.add(key)
        first = 1
    _Region(kernel, first, n_tasks, threads, args).run()


class _Region:
    """One parallel region's chunks: guided (a share of what is left, shrinking to one task), so
    that a thread that starts late or runs slow (a core waking from idle) holds up only a small
    last chunk."""

    def __init__(self, kernel, first: int, n_tasks: int, threads: int, args: tuple) -> None:
        self.kernel, self.n_tasks, self.threads, self.args = kernel, n_tasks, threads, args
        self.next = first
        self.running = 0  # chunks that helpers run
        self.take = threading.Lock()
        self.idle = threading.Lock()  # held while helpers run chunks
        self.errors: list[BaseException] = []

    def _chunk(self) -> tuple[int, int] | None:
        lo = self.next
        if lo >= self.n_tasks:
            return None
        hi = self.next = lo + max(1, (self.n_tasks - lo) // (2 * self.threads))
        return lo, hi

    def help(self) -> None:
        """A helper's part: chunks while any are left (none when it wakes after the region)."""
        while True:
            with self.take:
                got = self._chunk()
                if got is None:
                    return
                if not self.running:
                    self.idle.acquire()  # never waits: the caller takes it once no chunk is left
                self.running += 1
            try:
                self.kernel(got[0], got[1], *self.args)
            except BaseException as e:  # raised again in the caller
                self.errors.append(e)
            finally:
                with self.take:
                    self.running -= 1
                    if not self.running:
                        self.idle.release()

    def run(self) -> None:
        """The caller's part: wake the helpers, take chunks while any are left, then wait for the
        chunks helpers took."""
        queues = _team.helpers(self.threads - 1)
        if _getcpu is not None:
            _keep_workers_off(_getcpu())
        for q in queues:
            q.put(self.help)
        try:
            while True:
                with self.take:
                    got = self._chunk()
                if got is None:
                    break
                self.kernel(got[0], got[1], *self.args)
        finally:
            with self.take:
                self.next = self.n_tasks  # after an error: no helper starts another chunk
            with self.idle:
                pass
        if self.errors:
            raise self.errors[0]


def warm_tasks() -> list[tuple[str, int | None]]:
    """(kernel module, part) pairs that together compile every specialization: `irexec warmup`
    runs each in its own process (a module's `WARM_PARTS` splits a large family)."""
    tasks: list[tuple[str, int | None]] = []
    for name in WARM_MODULES:
        parts = getattr(importlib.import_module(name), "WARM_PARTS", 1)
        tasks += [(name, None)] if parts == 1 else [(name, i) for i in range(parts)]
    return tasks


def compile_counts() -> tuple[int, int]:
    """(specializations loaded from the cache, specializations compiled) so far in this process,
    over every kernel module imported."""
    hits = misses = 0
    for name in KERNEL_MODULES:
        module = sys.modules.get(name)
        for obj in vars(module).values() if module is not None else ():
            stats = getattr(obj, "stats", None)
            if hasattr(stats, "cache_hits"):
                hits += sum(stats.cache_hits.values())
                misses += sum(stats.cache_misses.values())
    return hits, misses


def timed_load() -> dict:
    """For `irexec bench`: seconds to import numba, and whether the kernels are on. The
    specializations a model uses compile (or load from the cache) on their first call, so a
    benchmark pays only for its own kernels (all of them would take 40 s to compile)."""
    t0 = time.perf_counter()
    import numba  # noqa: F401

    t1 = time.perf_counter()
    return {"import_numba_s": t1 - t0, "ready": load()}
