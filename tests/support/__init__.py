"""Helpers shared by the test files and by tools/, none of them a test file itself.

- `irbuild`: build small IR files (XML + .bin) by hand, layer by layer (`Net`).
- `ov_corpus`: IR corpora written by OpenVINO itself, with their float64 references.
- `ovcheck`: OpenVINO as the shape and value oracle for one op graph.
- `oracle`: the numpy float64 reference for the reductions.
- `mutators`: mutations of valid IR, for the fuzz tests and tools/triage.py.
- `clirun`: run the irexec CLI in a child process, with its peak memory and wall time.
- `recorders`: kernels replaced by recorders of their arguments' writability (warm-up checks).

Import them as `from tests.support import irbuild` or `from tests.support.irbuild import Net`,
from pytest or from a tool run as a module at the repository root (`python3 -m tools.NAME`).
"""
