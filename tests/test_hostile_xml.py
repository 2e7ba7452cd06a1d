"""Hostile XML files (SPEC §4): each attack is written into tmp_path and must be refused.

For every file: `irexec.load` raises FormatError (LimitError for the size and element caps) within
1 s of parse time, and `python3 -m irexec validate FILE` exits 3 (6 for a limit) with exactly one
line on stderr, no traceback, nothing of the local files it tries to read in its output, and a
peak RSS under 300 MB.

The peak RSS is `resource.getrusage(RUSAGE_CHILDREN).ru_maxrss`, taken in a tiny launcher process
whose only child is the CLI: from pytest itself the number would be polluted, since RUSAGE_CHILDREN
is the maximum over every child pytest ever waited for, and on Linux a child's peak starts at its
parent's RSS at fork time (pytest's, hundreds of MB once openvino is imported).

Whether a file was read: the targets hold a random marker that must not appear in the output, and
for the entity / DTD / XInclude attacks a second variant points at named pipes (FIFOs): opening a
FIFO for reading blocks until a writer comes, so a parser that follows the reference hangs and
the subprocess's timeout fails the test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

import irexec
from irexec import FormatError, LimitError
from tests.support.clirun import run_cli
from tests.support.irbuild import Net

ROOT = Path(__file__).resolve().parent.parent

MAX_RSS_KB = 300 * 1024
MAX_PARSE_SECONDS = 1.0
MARKER = "IREXEC-SECRET-" + uuid.uuid4().hex
SMALL_XML_LIMIT = 100_000

VALID_BODY = """<net name="n" version="11">
	<layers>
		<layer id="0" name="data" type="Parameter" version="opset1">
			<data shape="2,3" element_type="f32" />
			<output>
				<port id="0" precision="FP32" names="data"><dim>2</dim><dim>3</dim></port>
			</output>
		</layer>
		<layer id="1" name="out" type="Result" version="opset1">
			<input><port id="0" precision="FP32"><dim>2</dim><dim>3</dim></port></input>
		</layer>
	</layers>
	<edges><edge from-layer="0" from-port="0" to-layer="1" to-port="0" /></edges>
</net>
"""


def _lol(depth: int = 10, width: int = 10) -> str:
    ents = ['<!ENTITY lol0 "lol">'] + [
        f'<!ENTITY lol{i} "{"".join(f"&lol{i - 1};" for _ in range(width))}">' for i in range(1, depth)
    ]
    return "<!DOCTYPE net [\n" + "\n".join(ents) + "\n]>\n"


def _with_doctype(doctype: str, name: str = "n", content: str = "") -> str:
    body = VALID_BODY.replace('name="n"', f'name="{name}"', 1).replace("<layers>", f"<layers>{content}", 1)
    return '<?xml version="1.0"?>\n' + doctype + body


# ---- the attack files -------------------------------------------------------------------------


@dataclass
class Attack:
    name: str
    make: Callable[[Path], Path]  # writes the file(s) into a directory, returns the XML path
    error: type = FormatError
    cli_args: tuple = ()
    limits: irexec.Limits | None = None
    says: str | None = None  # a regex the message must match (refused for the right reason)


DTD = r"DOCTYPE|ENTITY|encoding"


def _write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def _secret(d: Path) -> Path:
    p = d / "secret.txt"
    if not p.exists():
        p.write_text(MARKER + "\n")
    return p


def xxe_local_file(d: Path) -> Path:
    s = _secret(d)
    doctype = f'<!DOCTYPE net [<!ENTITY xxe SYSTEM "file://{s}">]>\n'
    return _write(d / "xxe.xml", _with_doctype(doctype, "&xxe;", "&xxe;"))


def xxe_etc_passwd(d: Path) -> Path:
    doctype = '<!DOCTYPE net [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n'
    return _write(d / "xxe_passwd.xml", _with_doctype(doctype, "&xxe;", "&xxe;"))


def xxe_parameter_entity(d: Path) -> Path:
    s = _secret(d)
    doctype = f'<!DOCTYPE net [<!ENTITY % p SYSTEM "file://{s}"> %p;]>\n'
    return _write(d / "xxe_pe.xml", _with_doctype(doctype))


def external_dtd(d: Path) -> Path:
    dtd = _write(d / "evil.dtd", f'<!ENTITY leak SYSTEM "file://{_secret(d)}">\n')
    return _write(d / "ext_dtd.xml", _with_doctype(f'<!DOCTYPE net SYSTEM "file://{dtd}">\n', "&leak;"))


def external_dtd_network(d: Path) -> Path:
    # no_network: nothing may be fetched (the address is unroutable: a fetch would hang or fail).
    return _write(d / "net_dtd.xml", _with_doctype('<!DOCTYPE net SYSTEM "http://10.255.255.1/evil.dtd">\n'))


def billion_laughs(d: Path) -> Path:
    return _write(d / "lol.xml", _with_doctype(_lol(), "&lol9;", "&lol9;"))


def quadratic_blowup(d: Path) -> Path:
    # One 50 kB entity referenced 50 000 times: a 250 kB file that would expand to 2.5 GB.
    big = "A" * 50_000
    refs = "&a;" * 50_000
    return _write(d / "quadratic.xml", _with_doctype(f'<!DOCTYPE net [<!ENTITY a "{big}">]>\n', "n", f"<x>{refs}</x>"))


def undeclared_entity(d: Path) -> Path:
    return _write(d / "undeclared.xml", _with_doctype("", "&undeclared;"))


def deep_nesting(d: Path) -> Path:
    n = 100_000
    return _write(d / "deep.xml", _with_doctype("", "n", "<a>" * n + "</a>" * n))


def moderately_deep(d: Path) -> Path:
    # Under libxml2's own cap of 256 but above irexec's max_xml_depth (64).
    n = 200
    return _write(d / "deep200.xml", _with_doctype("", "n", "<a>" * n + "</a>" * n))


def xinclude_passwd(d: Path) -> Path:
    inc = '<xi:include xmlns:xi="http://www.w3.org/2001/XInclude" href="file:///etc/passwd" parse="text"/>'
    return _write(d / "xinclude_passwd.xml", _with_doctype("", "n", inc))


def xinclude_secret(d: Path) -> Path:
    inc = f'<xi:include xmlns:xi="http://www.w3.org/2001/XInclude" href="{_secret(d)}" parse="text"/>'
    return _write(d / "xinclude.xml", _with_doctype("", "n", inc))


def processing_instruction_before_root(d: Path) -> Path:
    return _write(
        d / "pi_head.xml", '<?xml version="1.0"?>\n<?xml-stylesheet type="text/xsl" href="evil.xsl"?>\n' + VALID_BODY
    )


def processing_instruction_inside(d: Path) -> Path:
    return _write(d / "pi_inside.xml", _with_doctype("", "n", "<?php system('id'); ?>"))


def utf16_doctype(d: Path) -> Path:
    doctype = f'<!DOCTYPE net [<!ENTITY xxe SYSTEM "file://{_secret(d)}">]>\n'
    text = _with_doctype(doctype, "&xxe;").replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="UTF-16"?>')
    return _write(d / "utf16.xml", text.encode("utf-16"))  # with a BOM


def utf16_billion_laughs(d: Path) -> Path:
    text = _with_doctype(_lol(), "&lol9;", "&lol9;").replace(
        '<?xml version="1.0"?>', '<?xml version="1.0" encoding="UTF-16"?>'
    )
    return _write(d / "utf16_lol.xml", text.encode("utf-16-be"))  # no BOM


def utf32_doctype(d: Path) -> Path:
    text = _with_doctype("<!DOCTYPE net>\n").replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="UTF-32"?>')
    return _write(d / "utf32.xml", text.encode("utf-32"))


def utf7_doctype(d: Path) -> Path:
    # UTF-7 spells "<!" as "+ADwAIQ-": a plain byte search for "<!DOCTYPE" does not see it.
    text = _with_doctype(_lol(), "&lol9;").replace('<?xml version="1.0"?>', "")
    return _write(d / "utf7.xml", b'<?xml version="1.0" encoding="UTF-7"?>' + text.replace("<!", "+ADwAIQ-").encode())


def huge_xml(d: Path) -> Path:
    # A valid model padded past the small --max-xml-bytes limit with a comment.
    text = VALID_BODY.replace("<layers>", "<!--" + "x" * (2 * SMALL_XML_LIMIT) + "--><layers>", 1)
    return _write(d / "huge.xml", text)


def sparse_10gb_xml(d: Path) -> Path:
    # 10 GB (sparse) above the default 256 MB cap: refused from its size, never read.
    p = d / "sparse.xml"
    with open(p, "wb") as f:
        f.write(b'<?xml version="1.0"?>\n<net version="11">')
        f.truncate(10 << 30)
    return p


def huge_parameter(d: Path) -> Path:
    n = Net("huge")
    x = n.param("x", "f32", (1_000_000, 1_000_000))  # 10^12 elements: refused at load
    n.result(x, "y")
    return n.save(d / "huge_param.xml")


ATTACKS = [
    Attack("xxe_local_file", xxe_local_file, says=DTD),
    Attack("xxe_etc_passwd", xxe_etc_passwd, says=DTD),
    Attack("xxe_parameter_entity", xxe_parameter_entity, says=DTD),
    Attack("external_dtd", external_dtd, says=DTD),
    Attack("external_dtd_network", external_dtd_network, says=DTD),
    Attack("billion_laughs", billion_laughs, says=DTD),
    Attack("quadratic_blowup", quadratic_blowup, says=DTD),
    Attack("undeclared_entity", undeclared_entity, says="[Ee]ntity"),
    Attack("deep_nesting_100k", deep_nesting, says="depth|deeper"),
    Attack("deep_nesting_200", moderately_deep, LimitError, says="deeper"),
    Attack("xinclude_etc_passwd", xinclude_passwd, says="XInclude"),
    Attack("xinclude_local_file", xinclude_secret, says="XInclude"),
    Attack("processing_instruction_before_root", processing_instruction_before_root, says="processing instruction"),
    Attack("processing_instruction_inside", processing_instruction_inside, says="processing instruction"),
    Attack("utf16_doctype", utf16_doctype, says=DTD),
    Attack("utf16_billion_laughs", utf16_billion_laughs, says=DTD),
    Attack("utf32_doctype", utf32_doctype, says=DTD),
    Attack("utf7_doctype", utf7_doctype, says=DTD),
    Attack(
        "huge_xml",
        huge_xml,
        LimitError,
        ("--max-xml-bytes", str(SMALL_XML_LIMIT)),
        irexec.Limits(max_xml_bytes=SMALL_XML_LIMIT),
    ),
    Attack("sparse_10gb_xml", sparse_10gb_xml, LimitError),
    Attack("huge_parameter", huge_parameter, LimitError),
]
IDS = [a.name for a in ATTACKS]


def _passwd_lines() -> list[str]:
    try:
        return [ln for ln in Path("/etc/passwd").read_text().splitlines() if ln.count(":") >= 5][:5]
    except OSError:
        return []


def _check_cli(attack: Attack, path: Path) -> None:
    code, out, err, rss_kb, wall = run_cli("validate", path, *attack.cli_args)
    want = 6 if attack.error is LimitError else 3
    assert code == want, f"exit {code}, expected {want}\nstdout: {out}\nstderr: {err}"
    assert "Traceback" not in out + err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}:\n{err}"
    assert lines[0].startswith("irexec: "), lines[0]
    assert out.strip() == "", f"nothing on stdout expected, got {out!r}"
    assert MARKER not in out + err, "the secret file's content was printed"
    for line in _passwd_lines():
        assert line not in out + err, "/etc/passwd content was printed"
    assert rss_kb < MAX_RSS_KB, f"peak RSS {rss_kb / 1024:.0f} MB"
    assert wall < 30, f"took {wall:.1f} s"


@pytest.mark.parametrize("attack", ATTACKS, ids=IDS)
def test_load_refuses(attack: Attack, tmp_path: Path) -> None:
    path = attack.make(tmp_path)
    t0 = time.perf_counter()
    with pytest.raises(attack.error) as info:
        irexec.load(path, attack.limits)
    elapsed = time.perf_counter() - t0
    assert elapsed < MAX_PARSE_SECONDS, f"load took {elapsed:.2f} s"
    msg = str(info.value)
    assert "\n" not in msg, repr(msg)
    assert MARKER not in msg
    assert "root:" not in msg
    if attack.error is FormatError:
        assert not isinstance(info.value, LimitError)
    if attack.says is not None:
        assert re.search(attack.says, msg), f"refused for another reason: {msg}"


@pytest.mark.parametrize("attack", ATTACKS, ids=IDS)
def test_cli_refuses(attack: Attack, tmp_path: Path) -> None:
    _check_cli(attack, attack.make(tmp_path))


# ---- the references point at FIFOs: following one would block --------------------------------


def _fifo(d: Path, name: str) -> Path:
    p = d / name
    os.mkfifo(p)
    return p


FIFO_ATTACKS = {
    "xxe": lambda d: _with_doctype(f'<!DOCTYPE net [<!ENTITY x SYSTEM "file://{_fifo(d, "f1")}">]>\n', "&x;", "&x;"),
    "parameter_entity": lambda d: _with_doctype(
        f'<!DOCTYPE net [<!ENTITY % p SYSTEM "file://{_fifo(d, "f2")}"> %p;]>\n'
    ),
    "external_dtd": lambda d: _with_doctype(f'<!DOCTYPE net SYSTEM "file://{_fifo(d, "f3")}">\n'),
    "xinclude": lambda d: _with_doctype(
        "", "n", f'<xi:include xmlns:xi="http://www.w3.org/2001/XInclude" href="{_fifo(d, "f4")}" parse="text"/>'
    ),
    "utf16_xxe": lambda d: (
        _with_doctype(f'<!DOCTYPE net [<!ENTITY x SYSTEM "file://{_fifo(d, "f5")}">]>\n', "&x;")
        .replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="UTF-16"?>')
        .encode("utf-16")
    ),
}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
@pytest.mark.parametrize("kind", sorted(FIFO_ATTACKS))
def test_references_are_not_followed(kind: str, tmp_path: Path) -> None:
    path = _write(tmp_path / f"{kind}.xml", FIFO_ATTACKS[kind](tmp_path))
    code, out, err, _, wall = run_cli("validate", path, timeout=20)
    assert code == 3, err
    assert len(err.strip().splitlines()) == 1, err
    assert wall < 20


# ---- numba stays unimported on these paths ----------------------------------------------------


def _imports(*args) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "irexec", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    mods = set()
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            mods.add(line.rsplit("|", 1)[1].strip())
    return mods


def test_refusing_a_hostile_file_does_not_import_numba(tmp_path: Path) -> None:
    mods = _imports("validate", billion_laughs(tmp_path))
    assert "irexec.cli" in mods  # the measurement works
    assert not any(m == "numba" or m.startswith("numba.") for m in mods)


def test_validating_a_model_does_not_import_numba(tmp_path: Path) -> None:
    n = Net("ok")
    x = n.param("x", "f32", (2, 3, 4))
    import numpy as np

    axes = n.const(np.array([1], np.int64))
    n.result(n.op("ReduceMean", [x, axes], {"keep_dims": "true"}, out_dims=[2, 1, 4]), "y")
    path = n.save(tmp_path / "ok.xml")
    mods = _imports("validate", path)
    assert "irexec.model" in mods
    assert not any(m == "numba" or m.startswith("numba.") for m in mods)
    code, out, err, rss_kb, _ = run_cli("validate", path)
    assert code == 0, err
    assert rss_kb < MAX_RSS_KB


# ---- special files where a model or its weights should be --------------------------------------


def _load_in_child(path: str, timeout: float = 20) -> subprocess.CompletedProcess:
    """irexec.load in a child process (a regression could block or eat memory: never in pytest)."""
    code = (
        "import sys, irexec\n"
        "try:\n"
        "    irexec.load(sys.argv[1])\n"
        "    print('ACCEPTED')\n"
        "except irexec.IRExecError as e:\n"
        "    print(type(e).__name__, e)\n"
    )
    try:
        return subprocess.run(
            [sys.executable, "-c", code, path], cwd=ROOT, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"irexec.load({path!r}) still running after {timeout} s")


@pytest.mark.parametrize("kind", ["dev_zero", "fifo", "directory", "nul_byte"])
def test_load_refuses_special_paths(kind: str, tmp_path: Path) -> None:
    """Only regular files are read: /dev/zero never ends, a FIFO blocks until a writer comes."""
    if kind == "dev_zero":
        if not Path("/dev/zero").exists():
            pytest.skip("no /dev/zero")
        path = tmp_path / "zero.xml"
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        path = _fifo(tmp_path, "model.xml")
    elif kind == "directory":
        path = tmp_path / "dir.xml"
        path.mkdir()
    else:
        with pytest.raises(FormatError):
            irexec.load(str(tmp_path / "a\x00b.xml"))
        return
    proc = _load_in_child(str(path))
    assert proc.stdout.startswith("FormatError"), proc.stdout + proc.stderr


def test_weights_fifo_does_not_block(tmp_path: Path) -> None:
    """A .bin that is a named pipe: refused (a FIFO is no weights file), not waited on forever."""
    n = Net("fifo_bin")
    import numpy as np

    x = n.param("x", "f32", (2, 3))
    n.result(n.op("ReduceSum", [x, n.const(np.array([1], np.int64))], out_dims=[2]), "y")
    path = n.save(tmp_path / "m.xml")
    path.with_suffix(".bin").unlink()
    _fifo(tmp_path, "m.bin")
    code, out, err, _, _ = run_cli("validate", path, timeout=20)
    assert code == 3, err
    assert len(err.strip().splitlines()) == 1, err


def test_weights_dev_zero(tmp_path: Path) -> None:
    """A .bin symlinked to /dev/zero (st_size 0): a clean WeightsError, nothing read forever."""
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    n = Net("zero_bin")
    import numpy as np

    x = n.param("x", "f32", (2, 3))
    n.result(n.op("ReduceSum", [x, n.const(np.array([1], np.int64))], out_dims=[2]), "y")
    path = n.save(tmp_path / "m.xml")
    path.with_suffix(".bin").unlink()
    path.with_suffix(".bin").symlink_to("/dev/zero")
    code, out, err, rss, _ = run_cli("validate", path, timeout=20)
    assert code == 3, err
    assert len(err.strip().splitlines()) == 1, err
    assert rss < MAX_RSS_KB


@pytest.mark.parametrize(
    "declaration, codec",
    [
        ('<?xml version="1.0"?>', "utf-8"),
        ('<?xml version="1.0" encoding="UTF-8"?>', "utf-8-sig"),
        ('<?xml version="1.0" encoding="ISO-8859-1"?>', "latin-1"),
        ('<?xml version="1.0" encoding="UTF-16"?>', "utf-16"),
        ('<?xml version="1.0" encoding="UTF-16"?>', "utf-16-be"),
        ('<?xml version="1.0" encoding="UTF-32"?>', "utf-32"),
        ("", "utf-16"),
    ],
)
def test_plain_encodings_still_load(declaration: str, codec: str, tmp_path: Path) -> None:
    """The encoding gate refuses odd encodings only: UTF-8/16/32 and ISO-8859-1 models load."""
    path = _write(
        tmp_path / "ok.xml", (declaration + "\n" + VALID_BODY.replace('name="n"', 'name="né"', 1)).encode(codec)
    )
    model = irexec.load(path)
    assert model.graph.net.name == "né"
    assert [i.name for i in model.inputs] == ["data"]


@pytest.mark.parametrize("encoding", ["UTF-7", "IBM037", "ISO-2022-JP", "HZ-GB-2312", "x-unknown"])
def test_other_encodings_refused(encoding: str, tmp_path: Path) -> None:
    path = _write(tmp_path / "enc.xml", f'<?xml version="1.0" encoding="{encoding}"?>\n' + VALID_BODY)
    with pytest.raises(FormatError, match="encoding"):
        irexec.load(path)
