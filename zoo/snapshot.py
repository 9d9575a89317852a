"""A snapshot of the catalog (models, methods, options, data sets, experiments, benchmarks) for the command line.

``zoo --help``, ``zoo list`` and ``zoo fit --help`` answer from ``catalog_snapshot.json``, a file shipped in the
package, instead of importing the paper modules (which load JAX, NumPyro and ArviZ: seconds on a small machine).
The snapshot records a fingerprint of the sources it was made from (``CATALOG_SOURCES``: the papers, data and
experiment modules, the registry and what builds the snapshot, and ``zoo.models``); when those sources change, the
fingerprint no longer matches and ``current()`` builds the catalog live instead, so a stale snapshot is slow, never
wrong. Regenerate it with ``python -m zoo.snapshot``
(the test suite checks that it is fresh).

This module imports only the standard library until a live build is needed.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import json
import pathlib
import sys

__all__ = ["SNAPSHOT_PATH", "source_fingerprint", "load", "build", "current", "write"]

SNAPSHOT_PATH = pathlib.Path(__file__).resolve().parent / "catalog_snapshot.json"


#: What the snapshot is made of: the registration modules (papers, data, experiments) and the modules that turn
#: them into the snapshot (a change elsewhere, e.g. in a kernel or the results, cannot change it).
CATALOG_SOURCES = ("papers", "data", "experiments", "registry.py", "generic.py", "bench.py", "catalog.py",
                   "discovery.py", "snapshot.py")


def _source_files() -> list[tuple[str, pathlib.Path]]:
    """(label, path) of every ``.py`` file the catalog depends on: ``CATALOG_SOURCES`` of the ``zoo`` package and
    the programs of ``zoo.models`` (their default priors and options)."""
    package = pathlib.Path(__file__).resolve().parent
    roots = [(f"zoo/{name}", package / name) for name in CATALOG_SOURCES]
    spec = importlib.util.find_spec("zoo.models")
    if spec is not None and spec.submodule_search_locations:
        roots += [("models", pathlib.Path(p).resolve()) for p in spec.submodule_search_locations]
    files = []
    for label, root in roots:
        paths = [root] if root.is_file() else sorted(root.rglob("*.py"))
        files += [(f"{label}/{p.relative_to(root).as_posix()}" if p != root else label, p) for p in paths
                  if "__pycache__" not in p.parts]
    return files


def source_fingerprint() -> str:
    """sha256 over the label and bytes of every ``.py`` file the catalog depends on (``_source_files``)."""
    digest = hashlib.sha256()
    for label, path in _source_files():
        digest.update(f"{label}\0".encode())
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def load(path: pathlib.Path = SNAPSHOT_PATH) -> dict | None:
    """The stored snapshot when it was made from the current sources, else None."""
    try:
        snapshot = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if snapshot.get("fingerprint") != source_fingerprint():
        return None
    return snapshot


def _option_defaults(build) -> dict[str, str]:
    """name -> default (as text) of a model's build options, from its signature."""
    out = {}
    for name, param in inspect.signature(build).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        out[name] = "(required)" if param.default is param.empty else repr(param.default)
    return out


def _experiment_names() -> list[str]:
    from zoo.core.discovery import submodule_names
    return submodule_names("zoo.experiments")


def build() -> dict:
    """The snapshot made live: imports every paper, data and experiment module (slow: JAX, NumPyro, ArviZ)."""
    catalog_module = importlib.import_module("zoo.catalog")  # the module: ``zoo.catalog`` the attribute is the function
    from zoo.core import registry
    from zoo.bench import benchmarks
    from zoo.data.location import datasets

    catalog_module.ensure_loaded()
    models = []
    for card in catalog_module.catalog():
        entry = registry.get_model(card.id)
        models.append({
            "id": card.id, "paper": card.paper, "title": card.title, "data_kind": card.data_kind,
            "default_method": card.default_method,
            "methods": [{"name": m.name, "description": m.description, "generic": m.generic}
                        for m in entry.methods.values()],
            "options": _option_defaults(entry.build),
        })
    return {
        "fingerprint": source_fingerprint(),
        "models": models,
        "datasets": [{"name": d.name, "description": d.description, "kind": d.kind, "files": list(d.files)}
                     for d in datasets()],
        "experiments": _experiment_names(),
        "benchmarks": {name: peer for name, (_, peer) in benchmarks().items()},
    }


def current() -> dict:
    """The stored snapshot if fresh, else one built live."""
    return load() or build()


def write(path: pathlib.Path = SNAPSHOT_PATH) -> dict:
    """Build the snapshot live and store it (``python -m zoo.snapshot``)."""
    snapshot = build()
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(snapshot, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)
    return snapshot


if __name__ == "__main__":
    written = write()
    print(f"{SNAPSHOT_PATH}: {len(written['models'])} models, {len(written['datasets'])} data sets, "
          f"{len(written['experiments'])} experiments, {len(written['benchmarks'])} benchmarks", file=sys.stderr)
