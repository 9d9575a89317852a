"""A probabilistic-programming model zoo for learning from annotated images.

>>> import zoo
>>> zoo.catalog()                                   # what is there
>>> spec = zoo.model("carbonetto03.shrinkage_mixture", n_components=3)
>>> fit = zoo.fit(spec, zoo.load_dataset("carbonetto03_sec2").X)   # default method; fit.idata: InferenceData

Importing zoo enables float64 in JAX (``jax_enable_x64``): see ``zoo._config``. The public names are loaded on
first use (PEP 562), so ``import zoo`` and ``import zoo.inference.<module>`` stay cheap: JAX, NumPyro and ArviZ
load when something needs them.
"""
import importlib
import sys
import types

from zoo import _config

_config.configure()

# bound eagerly (the module is light, no NumPy): ``zoo.catalog`` must be the function, not the submodule of the
# same name
from zoo.catalog import ModelCard, catalog, methods  # noqa: E402

#: submodules whose main function has the module's name: ``zoo.reference`` / ``zoo.check_sampler`` are the modules,
#: made callable (calling one calls that function), and loaded on first use (they load NumPy)
_CALLABLE_SUBMODULES = ("reference", "check_sampler")


class _CallableModule(types.ModuleType):
    """A submodule that is also its main function: ``zoo.reference(...)`` is ``zoo.reference.reference(...)``,
    while ``zoo.reference.Reference`` and ``import zoo.reference`` keep the module's attributes."""

    def __call__(self, *args, **kwargs):
        return getattr(self, self.__name__.rpartition(".")[2])(*args, **kwargs)


class _ZooPackage(types.ModuleType):
    """The ``zoo`` package: binding one of ``_CALLABLE_SUBMODULES`` (as the import system does when the submodule
    is first imported, by whatever route) makes that module callable."""

    def __setattr__(self, name, value):
        if name in _CALLABLE_SUBMODULES and type(value) is types.ModuleType:
            value.__class__ = _CallableModule
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _ZooPackage
for _name in _CALLABLE_SUBMODULES:      # imported before this point (e.g. through a submodule's own import)
    if f"zoo.{_name}" in sys.modules:
        setattr(sys.modules[__name__], _name, sys.modules[f"zoo.{_name}"])

__version__ = "0.1.0"

#: public name -> module that defines it
_PUBLIC = {
    "model": "zoo.api", "fit": "zoo.api",
    "load_dataset": "zoo.data.location",
    "ModelSpec": "zoo.registry", "register_method": "zoo.registry", "register_model": "zoo.registry",
    "Fit": "zoo.results", "to_inference_data": "zoo.results", "load_fit": "zoo.persist",
    "compare": "zoo.comparison", "kernel": "zoo.kernels",
    "Reference": "zoo.reference", "references": "zoo.reference",
}
__all__ = sorted([*_PUBLIC, "catalog", "methods", "ModelCard", *_CALLABLE_SUBMODULES])


def __getattr__(name: str):
    if name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name]), name)
        globals()[name] = value  # later lookups skip this function
        return value
    if name in _CALLABLE_SUBMODULES:     # importing binds the attribute (made callable by _ZooPackage)
        return importlib.import_module(f"zoo.{name}")
    if name in ("data", "metrics", "diagnostics", "priors", "results", "registry", "bench", "experiments",
                "papers", "models", "inference", "leaderboard", "baselines", "sbc"):
        return importlib.import_module(f"zoo.{name}")
    raise AttributeError(f"module 'zoo' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
