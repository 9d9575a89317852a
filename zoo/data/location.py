"""Where the data live, and the registry of dataset loaders.

Rule: the directory named by ``ZOO_DATA``, else ``../shared/data`` beside the repository (or beside the current
directory) when it exists. A loader registered with ``@register_loader(name, description, files=...)`` is reached by
``zoo.load_dataset(name, **options)``; ``files`` (paths under the data root) marks a real data set, whose presence
``dataset_status`` checks without loading it. Loaders live in the modules of ``zoo.data``, which are discovered
(imported) on first use, so adding a data set touches no shared file.
"""
from __future__ import annotations

import dataclasses
import os
import pathlib
from typing import Callable

from zoo.core.discovery import import_submodules

__all__ = ["DatasetInfo", "data_root", "dataset_path", "register_loader", "load_dataset", "list_datasets",
           "datasets", "dataset_status"]

_REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]


@dataclasses.dataclass(frozen=True)
class DatasetInfo:
    """A registered loader. ``kind``: "real" (``files`` are the paths it reads under the data root), "synthetic"
    (a generator) or "user" (reads files the user names, e.g. a folder of photos)."""

    name: str
    description: str
    kind: str = "synthetic"
    files: tuple[str, ...] = ()


_LOADERS: dict[str, tuple[Callable, DatasetInfo]] = {}


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


def register_loader(name: str, description: str = "", *, files: tuple[str, ...] | list[str] = (),
                    kind: str | None = None):
    """Decorator: register ``loader(**options) -> data container`` under ``name``.

    ``files``: for a real data set, the paths it reads under the data root (e.g. ``("mil_benchmarks/musk1.npz",)``),
    so that ``zoo list --datasets`` can say whether it is present. ``kind`` defaults to "real" with ``files`` and
    "synthetic" without; "user" marks a loader of the user's own files."""
    kind = kind or ("real" if files else "synthetic")
    if kind not in ("real", "synthetic", "user") or (kind == "real") != bool(files):
        raise ValueError(f"register_loader({name!r}): kind {kind!r} with files {tuple(files)!r}: a real data set "
                         f"names its files, a synthetic or user loader none")

    def decorate(fn: Callable) -> Callable:
        if name in _LOADERS:
            raise ValueError(f"dataset loader {name!r} registered twice")
        info = DatasetInfo(name=name, description=description or (fn.__doc__ or "").strip().split("\n")[0],
                           kind=kind, files=tuple(files))
        _LOADERS[name] = (fn, info)
        return fn
    return decorate


def _discover() -> None:
    """Import every module of ``zoo.data`` (once; their ``@register_loader`` decorators fill the registry)."""
    import_submodules("zoo.data")


def datasets() -> list[DatasetInfo]:
    """Every registered data set, sorted by name."""
    _discover()
    return [info for _, (_, info) in sorted(_LOADERS.items())]


def list_datasets() -> dict[str, str]:
    """name -> one-line description of every registered data set."""
    return {info.name: info.description for info in datasets()}


def dataset_status(info: DatasetInfo, root: pathlib.Path | None = None) -> tuple[str, pathlib.Path | None]:
    """("present" | "missing" | its kind, the folder it is read from) for a data set, from the file system only."""
    if info.kind != "real":
        return info.kind, None
    root = data_root() if root is None else root
    if root is None:
        return "missing", None
    paths = [root / f for f in info.files]
    folder = paths[0].parent if len(paths) == 1 else pathlib.Path(os.path.commonpath(paths))
    return ("present" if all(p.exists() for p in paths) else "missing"), folder


def load_dataset(name: str | os.PathLike, **options):
    """Load a registered data set (real files or a synthetic generator) by name (``zoo list --datasets`` lists
    them), or the data a file holds, by path: a file of ``zoo regions`` / ``zoo.data.save_container`` -> its
    container, ``.npy`` -> an array, ``.csv`` -> a matrix or (with a header row) a ``zoo.data.tables.Table``
    (``zoo.data.container_files.read_data_file``). Options a loader does not take are a ValueError."""
    _discover()
    if isinstance(name, os.PathLike) or (isinstance(name, str) and name not in _LOADERS and _looks_like_path(name)):
        if options:
            raise ValueError(f"load_dataset: a data file takes no options, got {', '.join(options)}")
        from zoo.data.container_files import read_data_file
        return read_data_file(name)
    if not isinstance(name, str) or name not in _LOADERS:
        raise ValueError(f"load_dataset: unknown data set {name!r}; known: {', '.join(sorted(_LOADERS))} (or the "
                         f"path of a .npz, .npy or .csv file)")
    loader = _LOADERS[name][0]
    _check_loader_options(name, loader, options)
    return loader(**options)


def _looks_like_path(name: str) -> bool:
    from zoo.data.container_files import DATA_SUFFIXES
    return pathlib.Path(name).suffix in DATA_SUFFIXES or os.sep in name or pathlib.Path(name).exists()


def _check_loader_options(name: str, loader: Callable, options: dict) -> None:
    """Unknown or missing options of a loader are a ValueError naming them (not a TypeError from the call)."""
    import inspect
    params = inspect.signature(loader).parameters.values()
    named = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if not any(p.kind == p.VAR_KEYWORD for p in params):
        unknown = [k for k in options if k not in named]
        if unknown:
            raise ValueError(f"load_dataset({name!r}): unknown option {unknown[0]!r}; options: "
                             f"{', '.join(named) or '(none)'}")
    missing = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
               and p.default is p.empty and p.name not in options]
    if missing:
        raise ValueError(f"load_dataset({name!r}): missing option {', '.join(missing)}")
