"""A probabilistic-programming model zoo for learning from annotated images.

>>> import zoo
>>> zoo.catalog()                                   # what is there
>>> spec = zoo.model("carbonetto03.shrinkage_mixture", n_components=3)
>>> fit = zoo.fit(spec, X)                          # default method; fit.idata is arviz.InferenceData

Importing zoo enables float64 in JAX (``jax_enable_x64``): see ``zoo._config``.
"""
from zoo import _config  # noqa: F401  (float64 first)
from zoo.api import fit, model
from zoo.catalog import ModelCard, catalog, methods
from zoo.data import load_dataset
from zoo.registry import ModelSpec, register_method, register_model
from zoo.results import Fit, to_inference_data

__version__ = "0.1.0"
__all__ = ["catalog", "methods", "model", "fit", "load_dataset", "Fit", "ModelSpec", "ModelCard",
           "register_method", "register_model", "to_inference_data"]
