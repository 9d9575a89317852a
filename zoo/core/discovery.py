"""Discovery of the zoo's extension modules: every public module of a package, so that adding a paper, a data set
or an experiment touches no shared file. Standard library only (the command line uses it before JAX loads)."""
from __future__ import annotations

import functools
import importlib
import pkgutil
from types import ModuleType

__all__ = ["submodule_names", "import_submodules"]


def submodule_names(package: str) -> list[str]:
    """Names (without the package prefix) of the package's modules not starting with "_", sorted; imports only the
    package itself. Subpackages are not modules of the package (``zoo.experiments.bench`` is not an experiment)."""
    path = importlib.import_module(package).__path__
    return sorted(info.name for info in pkgutil.iter_modules(path) if not info.name.startswith("_") and not info.ispkg)


@functools.cache
def import_submodules(package: str) -> dict[str, ModuleType]:
    """{name: module} of ``submodule_names(package)``, each imported; the package is scanned once per process."""
    return {name: importlib.import_module(f"{package}.{name}") for name in submodule_names(package)}
