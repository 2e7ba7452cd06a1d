"""A picture of the graph: DOT text (needs nothing), SVG through the graphviz `dot` program when
it is installed, or an HTML page (the SVG inline when `dot` is there, else a table of layers).

Every layer shows its name, type-version and inferred output shapes; layers whose declared
shapes `validate` finds false are red, unsupported layers grey with a dashed border, layers left
unchecked after them dashed.
"""

from __future__ import annotations

import html
import shutil
import subprocess

from .errors import UsageError
from .shapes import format_shape


def _esc(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def to_dot(model) -> str:
    report = model.validate()
    false_claims = {i.layer_id for i in report.issues}
    unsupported = {lid for ids in model.unsupported.values() for lid in ids}
    unchecked = set(model.unchecked)
    lines = [
        f'digraph "{_esc(model.graph.net.name)}" {{',
        "  rankdir=TB;",
        '  node [shape=box, style="rounded,filled", fillcolor="#f4f6fb", fontname="Helvetica", fontsize=10];',
    ]
    for lid in model.graph.order:
        layer = model.graph.layers[lid]
        outs = []
        for i in range(max(len(layer.outputs), 1 if layer.type.lower() == "result" else 0)):
            spec = model.specs.get((lid, i))
            if spec is not None and spec.dtype is not None:
                outs.append(f"{format_shape(spec.shape)} {spec.dtype}")
        attrs = [
            f'label="{_esc(layer.name)}\\n{layer.type}-{layer.version}' + "".join(f"\\n{_esc(o)}" for o in outs) + '"'
        ]
        if lid in unsupported:
            attrs.append('fillcolor="#d0d0d0", style="rounded,filled,dashed"')
        elif lid in unchecked:
            attrs.append('style="rounded,dashed"')
        elif lid in false_claims:
            attrs.append('fillcolor="#ffb3b3", color="#c00000"')
        lines.append(f"  n{lid} [{', '.join(attrs)}];")
    for lid, operands in model.graph.operands.items():
        for src, pos in operands:
            lines.append(
                f"  n{src} -> n{lid}" + (f' [label="{pos}"]' if len(model.graph.layers[src].outputs) > 1 else "") + ";"
            )
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(model, path: str) -> str:
    """Write the picture in the format the path's suffix names; returns what was written."""
    dot_text = to_dot(model)
    suffix = path.rsplit(".", 1)[-1].lower() if "." in path else ""
    if suffix == "dot":
        _write(path, dot_text)
        return "dot"
    dot = shutil.which("dot")
    svg = None
    if dot is not None:
        proc = subprocess.run([dot, "-Tsvg"], input=dot_text, capture_output=True, text=True, timeout=300)
        if proc.returncode == 0:
            svg = proc.stdout
    if suffix == "svg":
        if svg is None:
            raise UsageError(
                "SVG needs the graphviz `dot` program (Debian/Ubuntu: apt-get install graphviz; "
                "macOS: brew install graphviz); -o model.dot or -o model.html work without it"
            )
        _write(path, svg)
        return "svg"
    if suffix in ("html", "htm"):
        _write(path, _html(model, svg, dot_text))
        return "html"
    raise UsageError(f"-o {path!r}: the picture is written as .dot, .svg or .html")


def _html(model, svg: str | None, dot_text: str) -> str:
    report = model.validate()
    issues = {}
    for i in report.issues:
        issues.setdefault(i.layer_id, []).append(str(i))
    rows = []
    for info in report.layers:
        shapes = ", ".join(f"{o.dims_text} {o.element_type}" for o in info.outputs)
        cls = "bad" if info.id in issues else ("unsupported" if info.id in model.unchecked else "")
        rows.append(
            f'<tr class="{cls}"><td>{info.id}</td><td>{html.escape(info.name)}</td>'
            f"<td>{html.escape(info.type)}-{html.escape(info.version)}</td><td>{html.escape(shapes)}</td>"
            f"<td>{html.escape('; '.join(issues.get(info.id, [])) or model.unchecked.get(info.id, ''))}</td></tr>"
        )
    body = (
        svg
        if svg is not None
        else (
            "<p>Install graphviz (<code>dot</code>) for a drawing; the DOT source is below.</p>"
            f"<details><summary>DOT</summary><pre>{html.escape(dot_text)}</pre></details>"
        )
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>"
        f"{html.escape(model.graph.net.name)}</title><style>body{{font-family:sans-serif}}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;font-size:12px}"
        ".bad{background:#ffd0d0}.unsupported{background:#e0e0e0}</style></head><body>"
        f"<h1>{html.escape(model.graph.net.name)}</h1>{body}<h2>Layers</h2><table>"
        "<tr><th>id</th><th>name</th><th>type</th><th>outputs</th><th>validate</th></tr>"
        + "".join(rows)
        + "</table></body></html>\n"
    )


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as e:
        raise UsageError(f"cannot write {path!r}: {e.strerror}") from e
