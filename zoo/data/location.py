"""Where the data live, and the registry of dataset loaders.

Rule: the directory named by ``ZOO_DATA``, else ``../shared/data`` beside the repository (or beside the current
directory) when it exists. A loader registered with ``@register_loader(name)`` is reached by
``zoo.load_dataset(name, **options)``.
"""
from __future__ import annotations

import importlib
import os
import pathlib
from typing import Callable

__all__ = ["data_root", "dataset_path", "register_loader", "load_dataset", "list_datasets"]

_REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
_LOADERS: dict[str, tuple[Callable, str]] = {}


def data_root() -> pathlib.Path | None:
    """The data directory: $ZOO_DATA, else ../shared/data beside the repository or the working directory."""
    env = os.environ.get("ZOO_DATA")
    if env:
        return pathlib.Path(env)
    for base in (_REPO_ROOT, pathlib.Path.cwd()):
        candidate = base.parent / "shared" / "data"
        if candidate.is_dir():
            return candidate
    return None


def dataset_path(folder: str, *files: str) -> pathlib.Path:
    """The path of ``folder`` under the data root, checking ``files`` exist; a clear error says what goes where."""
    root = data_root()
    where = "$ZOO_DATA" if os.environ.get("ZOO_DATA") else "../shared/data (or set ZOO_DATA)"
    if root is None:
        raise FileNotFoundError(
            f"data set folder {folder!r} not found: no data directory. Set ZOO_DATA to a directory holding "
            f"{folder}/{', '.join(files) or ''} (or place ../shared/data beside the repository).")
    path = root / folder
    missing = [f for f in files if not (path / f).exists()]
    if not path.is_dir() or missing:
        raise FileNotFoundError(
            f"data set {folder!r} incomplete under {where} = {root}: put {', '.join(missing or files)} "
            f"into {path}/")
    return path


def register_loader(name: str, description: str = ""):
    """Decorator: register ``loader(**options) -> data container`` under ``name``."""
    def decorate(fn: Callable) -> Callable:
        if name in _LOADERS:
            raise ValueError(f"dataset loader {name!r} registered twice")
        _LOADERS[name] = (fn, description or (fn.__doc__ or "").strip().split("\n")[0])
        return fn
    return decorate


def _ensure_paper_modules() -> None:
    # the paper modules register their loaders on import (``zoo.catalog`` the module, not the function)
    importlib.import_module("zoo.catalog").ensure_loaded()


def list_datasets() -> dict[str, str]:
    _ensure_paper_modules()
    return {name: desc for name, (fn, desc) in sorted(_LOADERS.items())}


def load_dataset(name: str, **options):
    """Load a registered data set (real files or a synthetic generator) by name."""
    _ensure_paper_modules()
    if name not in _LOADERS:
        raise ValueError(f"load_dataset: unknown data set {name!r}; known: {', '.join(sorted(_LOADERS))}")
    return _LOADERS[name][0](**options)
