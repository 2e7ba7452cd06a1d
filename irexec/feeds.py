"""Inputs for the command line: `.npy`/`.npz` files read safely, and seeded random inputs.

Files load with allow_pickle=False, and every array's header (dtype, shape) is checked against
the limits before its data is read, so a small `.npz` cannot expand to gigabytes.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from .errors import InputError, UsageError
from .limits import Limits


def _read_npy(f, what: str, limits: Limits) -> np.ndarray:
    try:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
    except (ValueError, OSError, EOFError, SyntaxError) as e:
        raise InputError(f"{what} is not a valid .npy array: {e}") from None
    if dtype.hasobject:
        raise InputError(f"{what} holds Python objects (pickled data is refused)")
    limits.check_tensor(shape, dtype.itemsize, what)
    try:
        f.seek(0)
        return np.lib.format.read_array(f, allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        raise InputError(f"{what} cannot be read: {e}") from None


def load_array_file(path: str, limits: Limits) -> dict[str, np.ndarray] | np.ndarray:
    """A `.npy` gives one array; a `.npz` gives {key: array}."""
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"input file {path!r} does not exist")
    try:
        if zipfile.is_zipfile(p):
            out = {}
            with zipfile.ZipFile(p) as zf:
                for member in zf.infolist():
                    key = member.filename[:-4] if member.filename.endswith(".npy") else member.filename
                    with zf.open(member) as f:
                        out[key] = _read_npy(_Seekable(f, zf, member), f"{path}[{key}]", limits)
            return out
        with open(p, "rb") as f:
            return _read_npy(f, path, limits)
    except zipfile.BadZipFile as e:
        raise InputError(f"{path!r} is not a valid .npz: {e}") from None
    except OSError as e:
        raise InputError(f"cannot read {path!r}: {e}") from None


class _Seekable:
    """A zip member that can be rewound (by reopening), for header-then-data reading."""

    def __init__(self, f, zf, member):
        self._f, self._zf, self._member = f, zf, member

    def read(self, n=-1):
        return self._f.read(n)

    def readinto(self, b):
        return self._f.readinto(b)

    def seek(self, pos, whence=0):
        if pos == 0 and whence == 0:
            self._f = self._zf.open(self._member)
            return 0
        raise OSError("cannot seek in a zip member")

    def tell(self):
        return self._f.tell()


def random_input(shape, dtype: np.dtype, rng: np.random.Generator, name: str) -> np.ndarray:
    """Seeded data of a declared shape: floats in [0, 1), integers in [0, 10), random booleans."""
    if shape is None or any(d is None for d in shape):
        raise UsageError(f"input {name!r} has a dynamic shape; give its data with -i {name}=FILE.npy")
    if dtype.kind == "f":
        return rng.random(shape, dtype=np.float64).astype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    return rng.integers(0, 10, size=shape).astype(dtype)


def random_axes(shape, rank: int, rng: np.random.Generator, dtype: np.dtype) -> np.ndarray:
    """Distinct valid axes for an input that feeds a reduction's axes port."""
    if shape is None or any(d is None for d in shape):
        raise UsageError("an axes input with a dynamic shape needs data from -i")
    n = int(np.prod(shape))
    if n > rank:
        raise UsageError(f"an axes input of {n} values cannot hold distinct axes of rank {rank}; give it with -i")
    return rng.permutation(rank)[:n].astype(dtype).reshape(shape)
