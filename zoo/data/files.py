"""Reading data files safely: never unpickle, and a damaged file is a ValueError naming the file and what is wrong.

A truncated or corrupted archive, a text file with a ``.npz`` name, an object array (which would need pickle), a
missing array or a .mat variable that is not there: each is one clear message instead of a ``BadZipFile``,
``KeyError`` or a misleading pickle error from deep inside NumPy or SciPy.
"""
from __future__ import annotations

import os
import pathlib
import zipfile

import numpy as np

__all__ = ["read_npz", "read_npy", "read_mat", "read_csv_matrix"]


def _existing(path) -> pathlib.Path:
    path = pathlib.Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: file not found" if not path.exists() else f"{path}: not a file")
    return path


_NPZ_MAGIC = b"PK\x03\x04"
_NPY_MAGIC = b"\x93NUMPY"


def _check_magic(path: pathlib.Path, magic: bytes, kind: str) -> None:
    """A file that does not start like a NumPy file is named as such (NumPy would try pickle and say so)."""
    with open(path, "rb") as fh:
        head = fh.read(len(magic))
    if head != magic:
        other = {_NPZ_MAGIC: ".npz archive", _NPY_MAGIC: ".npy array"}
        found = next((name for m, name in other.items() if head == m[:len(head)] and head), None)
        what = f"an {found}" if found else ("empty" if not head else "not a NumPy file")
        raise ValueError(f"{path}: expected {kind}, but the file is {what}")


def _numpy_error(path: pathlib.Path, err: Exception) -> ValueError:
    text = str(err)
    if "allow_pickle" in text or "Object arrays" in text:
        return ValueError(f"{path}: holds object arrays, which would need pickle to read; the zoo reads numeric "
                          f"arrays only (save them with numeric dtypes)")
    first = text.splitlines()[0] if text else ""
    return ValueError(f"{path}: not a readable NumPy file ({type(err).__name__}: {first})")


def read_npz(path: str | os.PathLike, required: tuple[str, ...] = ()) -> dict[str, np.ndarray]:
    """All arrays of an ``.npz`` file (``allow_pickle=False``), checking that ``required`` ones are there."""
    path = _existing(path)
    _check_magic(path, _NPZ_MAGIC, "an .npz archive")
    try:
        with np.load(path, allow_pickle=False) as archive:
            if not hasattr(archive, "files"):
                raise ValueError(f"{path}: a single array (.npy content), not an .npz archive")
            missing = [name for name in required if name not in archive.files]
            if missing:
                present = ", ".join(archive.files) or "none"
                raise ValueError(f"{path}: no array named {missing[0]!r} (it has: {present})")
            return {name: archive[name] for name in archive.files}
    except ValueError as err:
        if str(err).startswith(str(path)):
            raise
        raise _numpy_error(path, err) from None
    except (zipfile.BadZipFile, OSError, EOFError, KeyError) as err:
        raise ValueError(f"{path}: truncated or corrupted .npz archive ({type(err).__name__}: {err})") from None


def read_npy(path: str | os.PathLike) -> np.ndarray:
    """The array of an ``.npy`` file (``allow_pickle=False``)."""
    path = _existing(path)
    _check_magic(path, _NPY_MAGIC, "an .npy array")
    try:
        arr = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as err:
        raise _numpy_error(path, err) from None
    if not isinstance(arr, np.ndarray):
        raise ValueError(f"{path}: an .npz archive, not a single .npy array")
    return arr


def read_csv_matrix(path: str | os.PathLike, **loadtxt_options) -> np.ndarray:
    """A numeric matrix from a comma-separated file (``numpy.loadtxt``), at least 2-D."""
    path = _existing(path)
    try:
        return np.loadtxt(path, delimiter=",", ndmin=2, **loadtxt_options)
    except (ValueError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: not a numeric comma-separated matrix ({str(err).splitlines()[0]})") from None


def read_mat(path: str | os.PathLike, required: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The ``required`` variables of a MATLAB ``.mat`` file (``scipy.io.loadmat``)."""
    from scipy.io import loadmat

    path = _existing(path)
    try:
        content = loadmat(path)
    except Exception as err:  # noqa: BLE001 - scipy raises many types for damaged files; all mean the same here
        raise ValueError(f"{path}: not a readable MATLAB file ({type(err).__name__}: {err})") from None
    missing = [name for name in required if name not in content]
    if missing:
        names = ", ".join(k for k in content if not k.startswith("__"))
        raise ValueError(f"{path}: no variable named {missing[0]!r} (it has: {names or 'none'})")
    return {name: content[name] for name in required}
