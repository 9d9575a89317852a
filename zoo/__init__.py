"""A probabilistic-programming model zoo for learning from annotated images.

>>> import zoo
>>> cards = zoo.catalog()                           # what is there: one ModelCard per model id
>>> X = zoo.load_dataset("carbonetto03_sec2")       # a (200, 6) array: the paper's Sec. 2 data
>>> spec = zoo.model("carbonetto03.shrinkage_mixture", n_components=3, covariance="diag")
>>> fit = zoo.fit(spec, X, num_chains=2)            # the default method (map_em); fit.idata: InferenceData
>>> fit.predict(X)
MixturePrediction(component_proba=float64(200, 3))

Your own data: ``zoo.load_dataset("my_regions.npz")`` (a file of ``zoo regions``), ``zoo.data.Bags.from_table(df,
bag="molecule", label="active")`` (a pandas DataFrame or a CSV file with a header); see README.md, "Your own data".

Importing zoo enables float64 in JAX (``jax_enable_x64``): see ``zoo._config``. The public names are loaded on
first use (PEP 562), so ``import zoo`` and ``import zoo.inference.<module>`` stay cheap: JAX, NumPyro and ArviZ
load when something needs them.
"""
import importlib

from zoo import _config

_config.configure()

# bound eagerly (the module is light, no NumPy): ``zoo.catalog`` must be the function, not the submodule of the
# same name
from zoo.catalog import ModelCard, catalog, methods  # noqa: E402

__version__ = _config.VERSION

#: public name -> module that defines it
_PUBLIC = {
    "model": "zoo.api", "fit": "zoo.api", "load_fit": "zoo.api",
    "load_dataset": "zoo.data.location",
    "ModelSpec": "zoo.core.spec", "register_method": "zoo.core.registry", "register_model": "zoo.core.registry",
    "Fit": "zoo.core.fit", "to_inference_data": "zoo.core.idata",
    "compare": "zoo.diagnostics.comparison", "kernel": "zoo.kernels",
    "Reference": "zoo.diagnostics.reference", "references": "zoo.diagnostics.reference",
    "reference": "zoo.diagnostics.reference", "check_sampler": "zoo.diagnostics.check_sampler",
    "leaderboard": "zoo.leaderboards.board",
}
__all__ = sorted([*_PUBLIC, "catalog", "methods", "ModelCard"])

#: subpackages and modules reachable as attributes (``zoo.data``, ``zoo.diagnostics``, ...); the last five are the
#: flat modules' old names before the regrouping (issue 28), kept for notebooks that used them
_MODULES = {name: f"zoo.{name}" for name in ("core", "data", "diagnostics", "leaderboards", "metrics", "bench",
                                             "experiments", "papers", "models", "inference", "reports")}
_MODULES.update({"registry": "zoo.core.registry", "priors": "zoo.core.priors", "results": "zoo.core.fit",
                 "baselines": "zoo.leaderboards.baselines", "sbc": "zoo.diagnostics.sbc"})


def __getattr__(name: str):
    if name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name]), name)
        globals()[name] = value  # later lookups skip this function
        return value
    if name in _MODULES:
        return importlib.import_module(_MODULES[name])
    raise AttributeError(f"module 'zoo' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
