"""The catalog: every registered model with at least one working method.

Paper modules live in ``zoo/papers/``; each registers its models, methods and data loaders at import time.
``ensure_loaded`` imports them all once (``zoo.core.discovery``, so adding a paper touches no shared file).
This module itself imports only the standard library (``import zoo`` binds ``zoo.catalog`` to the function below
without loading JAX); the registry loads on the first call.
"""
from __future__ import annotations

import dataclasses

from zoo.core.discovery import import_submodules

__all__ = ["ModelCard", "catalog", "methods", "ensure_loaded"]



@dataclasses.dataclass(frozen=True)
class ModelCard:
    id: str
    paper: str
    title: str
    variants: tuple
    methods: tuple
    default_method: str
    data_kind: str


def ensure_loaded() -> None:
    """Import every paper module (once: ``import_submodules`` scans a package once per process)."""
    import_submodules("zoo.papers")


def catalog() -> list[ModelCard]:
    """ModelCards of every model that has a working (registered) method, sorted by id."""
    from zoo.core import registry
    ensure_loaded()
    entries = registry.models_registered()
    cards = []
    for mid, entry in sorted(entries.items()):
        if not entry.methods or entry.default_method not in entry.methods:
            continue
        paper = mid.split(".")[0]
        variants = tuple(sorted(k.split(".", 1)[1] for k in entries if k.split(".")[0] == paper))
        cards.append(ModelCard(id=mid, paper=entry.paper, title=entry.title, variants=variants,
                               methods=tuple(entry.methods), default_method=entry.default_method,
                               data_kind=entry.data_kind))
    return cards


def methods(model_id: str) -> list[str]:
    """Names of the inference methods registered for ``model_id``."""
    from zoo.core import registry
    ensure_loaded()
    return registry.get_methods(model_id)
