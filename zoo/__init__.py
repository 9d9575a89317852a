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

from zoo import _config

_config.configure()

# bound eagerly (the module is light): ``zoo.catalog`` must be the function, not the submodule of the same name
from zoo.catalog import ModelCard, catalog, methods  # noqa: E402
# the same for the reference posteriors: the functions share their modules' names (zoo.reference, zoo.check_sampler)
from zoo.reference import Reference, reference, references  # noqa: E402
from zoo.check_sampler import check_sampler  # noqa: E402

__version__ = "0.1.0"

#: public name -> module that defines it
_PUBLIC = {
    "model": "zoo.api", "fit": "zoo.api",
    "load_dataset": "zoo.data.location",
    "ModelSpec": "zoo.registry", "register_method": "zoo.registry", "register_model": "zoo.registry",
    "Fit": "zoo.results", "to_inference_data": "zoo.results", "load_fit": "zoo.persist",
    "compare": "zoo.comparison", "kernel": "zoo.kernels",
}
__all__ = sorted([*_PUBLIC, "catalog", "methods", "ModelCard", "Reference", "reference", "references",
                  "check_sampler"])


def __getattr__(name: str):
    if name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name]), name)
        globals()[name] = value  # later lookups skip this function
        return value
    if name in ("data", "metrics", "diagnostics", "priors", "results", "registry", "bench", "experiments",
                "papers", "models", "inference", "leaderboard", "baselines", "sbc"):
        return importlib.import_module(f"zoo.{name}")
    raise AttributeError(f"module 'zoo' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
