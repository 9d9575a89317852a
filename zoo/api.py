"""``zoo.model`` and ``zoo.fit``: the two calls most users need."""
from __future__ import annotations

import time
import warnings
from typing import Any, Callable, Mapping

from zoo import convergence, registry
from zoo.catalog import ensure_loaded
from zoo.finite import check_finite
from zoo.generic import GENERIC_KINDS, GENERIC_METHODS
from zoo.options import check_common_options, check_known, seed_value
from zoo.provenance import compile_clock, provenance_attrs
from zoo.registry import ModelSpec
from zoo.results import Fit

__all__ = ["model", "fit"]


def model(id: str, *, priors: Mapping | str | None = None, **options) -> ModelSpec:
    """Build the model ``id`` (see ``zoo.catalog()``) with its options and declarative ``priors``.

    ``priors`` maps site -> numpyro distribution or string such as ``"InverseGamma(1.0, 1.0)"``, or is the path
    of a TOML file of such strings.
    """
    ensure_loaded()
    return registry.model(id, priors=priors, **options)


def fit(spec: ModelSpec | Callable, data: Any, method: str | None = None, seed: int = 0, **options) -> Fit:
    """Fit a model.

    - ``spec`` from ``zoo.model``: ``method`` is one of ``zoo.methods(spec.id)`` (None = the model's default).
    - ``spec`` a NumPyro program of your own: ``data`` is the dict of its keyword arguments and ``method`` one of
      the generic methods ``"nuts"`` (default), ``"svi"``, ``"map"``.
    ``options`` go to the method (e.g. ``num_chains``, ``num_warmup``, ``num_samples``, ``max_iter``); names the
    method does not have are a ValueError listing those it has.
    ``seed``: an integer in [0, 2**32 - 1] (Python or NumPy) or a JAX PRNG key; see ``zoo.options.seed_value`` for
    how a key becomes the run's seed. The same seed gives the same result.
    """
    seed = seed_value(seed)
    start = time.perf_counter()
    if isinstance(spec, ModelSpec):
        with compile_clock() as compiling:
            result = _warnings_at_caller(registry.run_method, spec, method, data, seed, options)
        return _with_provenance(result, spec, options, seed, data, time.perf_counter() - start, compiling[0])
    if callable(spec):
        name = method or "nuts"
        if name not in GENERIC_METHODS:
            raise ValueError(f"method: a user program takes one of {', '.join(GENERIC_METHODS)}, got {name!r}")
        if not isinstance(data, Mapping):
            raise ValueError("data: for a user program, pass a dict of the program's keyword arguments")
        user_spec = ModelSpec(id=None, program=spec, options={}, priors={})
        check_known(options, registry.option_names(GENERIC_METHODS[name]), f"method {name!r}")
        with compile_clock() as compiling:
            result = _warnings_at_caller(GENERIC_METHODS[name], spec, dict(data), seed=seed, spec=user_spec,
                                         **check_common_options(options))
        check_finite(result, user_spec, data, options)
        registry.mark_inference(result, GENERIC_KINDS[name])
        return _with_provenance(result, user_spec, options, seed, data, time.perf_counter() - start, compiling[0])
    raise ValueError(f"spec: expected a ModelSpec from zoo.model(...) or a NumPyro program, got {type(spec).__name__}")


def _with_provenance(result: Fit, spec: ModelSpec, options: Mapping, seed: int, data, wall: float,
                     compile_seconds: float = 0.0) -> Fit:
    """The fit with its provenance (``zoo.provenance``) in the attributes of every InferenceData group; after an
    MCMC run, one ConvergenceWarning at the user's call when headline sites fail the checks (``fit.diagnose()``)."""
    attrs = provenance_attrs(model_id=spec.id, model_options=spec.options, method=result.method, options=options,
                             priors=spec.priors, seed=seed, data=data, wall_seconds=wall,
                             compile_seconds=compile_seconds)
    attrs["zoo_inference"] = result.inference
    for group in result.idata.groups():
        getattr(result.idata, group).attrs.update(attrs)
    if result.inference == "mcmc":
        table = result.diagnose()
        message = convergence.advice(table)
        if message:
            warnings.warn(convergence.ConvergenceWarning(message, convergence.failing_sites(table)), stacklevel=3)
    return result


def _warnings_at_caller(run: Callable, *args, **kwargs):
    """Run ``run`` and re-issue the warnings it raised once each, located at the user's call of ``zoo.fit``
    (``stacklevel=3``: this function, ``fit``, the caller) instead of a line deep inside the zoo."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run(*args, **kwargs)
    seen = set()
    for w in caught:
        key = (w.category, str(w.message))
        if key not in seen:
            seen.add(key)
            warnings.warn(w.message, category=w.category, stacklevel=3)
    return result
