"""The package's import graph stays a layered one: no import cycle among irexec's modules
(imports inside functions count), no module importing another module's private names, and ops
that ask their kernel family instead of reaching for numba or the JIT runtime themselves."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "irexec"


def _modules() -> dict[str, tuple[Path, list[str]]]:
    """module name -> (file, the package its relative imports start from)"""
    mods = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
            package = parts
        else:
            package = parts[:-1]
        mods[".".join(parts)] = (path, package)
    return mods


MODULES = _modules()


def _resolve(name: str) -> str:
    """The irexec module a dotted name lives in (a name imported from a module is not a module)."""
    while name and name not in MODULES:
        name = name.rsplit(".", 1)[0] if "." in name else ""
    return name


def _imports(module: str) -> list[tuple[str, str | None, int]]:
    """(imported module, imported name or None, line) for every irexec import in `module`, at
    any depth (function-level imports included)."""
    path, package = MODULES[module]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(_resolve(a.name), None, node.lineno) for a in node.names if a.name.startswith("irexec")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if not source.startswith("irexec"):
                continue
            for alias in node.names:
                full = f"{source}.{alias.name}"
                if full in MODULES:
                    found.append((full, None, node.lineno))
                else:
                    found.append((_resolve(source), alias.name, node.lineno))
    return found


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in edges:
        if v not in index:
            visit(v)
    return found


def test_the_checker_sees_the_package():
    assert {"irexec.model", "irexec.ops.pool", "irexec.kernels.pool", "irexec.kernels.reduce.plan"} <= set(MODULES)
    imported = {m for m, _, _ in _imports("irexec.ops.pool")}
    assert {"irexec.geometry", "irexec.kernels.pool", "irexec.ops.common"} <= imported
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_among_irexec_modules():
    edges = {m: {t for t, _, _ in _imports(m) if t and t != m} for m in MODULES}
    assert _cycles(edges) == []


def test_no_module_imports_another_modules_private_names():
    private = [
        f"{m}:{line} imports {name} from {source}"
        for m in MODULES
        for source, name, line in _imports(m)
        if name and name.startswith("_") and not name.startswith("__") and source != m
    ]
    assert private == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("irexec.ops.")))
def test_ops_ask_their_family_instead_of_numba(module):
    """Ops call their kernel family's dispatch (kernels/pool.py, kernels/conv.py, ...), which
    decides numpy or numba and threads; only the families touch `jit` and the `*_loops` kernels."""
    path, _ = MODULES[module]
    reached = [
        (target, line)
        for target, _, line in _imports(module)
        if target == "irexec.kernels.jit" or target.endswith("_loops") or target.endswith(".loops")
    ]
    assert reached == []
    assert "import numba" not in path.read_text()
