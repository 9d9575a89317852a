"""``zoo.model``, ``zoo.fit`` and ``zoo.load_fit``: the calls most users need.

One path for a fit: ``fit`` dispatches to the method's runner (``zoo.core.registry.dispatch`` for the zoo's models,
``zoo.core.generic`` for a user's own NumPyro program), then hands the ``Fit`` to ``zoo.core.finish.finish``
(finite check -> inference kind -> relabelling -> provenance -> convergence verdict), the same step for both.
"""
from __future__ import annotations

import os
import time
import warnings
from typing import Any, Callable, Mapping

from zoo.catalog import ensure_loaded
from zoo.core import registry
from zoo.core.finish import finish
from zoo.core.fit import Fit
from zoo.core.idata import conform_layout
from zoo.core.generic import GENERIC_KINDS, GENERIC_METHODS
from zoo.core.options import check_common_options, check_known, seed_value
from zoo.core.persist import read_fit_file
from zoo.core.provenance import compile_clock
from zoo.core.spec import ModelSpec

__all__ = ["model", "fit", "load_fit"]


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
    ``seed``: an integer in [0, 2**32 - 1] (Python or NumPy) or a JAX PRNG key; see ``zoo.core.options.seed_value``
    for how a key becomes the run's seed. The same seed gives the same result.
    """
    seed = seed_value(seed)
    start = time.perf_counter()
    if isinstance(spec, ModelSpec):
        with compile_clock() as compiling:
            result, method_entry = _warnings_at_caller(registry.dispatch, spec, method, data, seed, options)
        kind, exchangeable = method_entry.kind, registry.get_model(spec.id).exchangeable
    elif callable(spec):
        name = method or "nuts"
        if name not in GENERIC_METHODS:
            raise ValueError(f"method: a user program takes one of {', '.join(GENERIC_METHODS)}, got {name!r}")
        if not isinstance(data, Mapping):
            raise ValueError("data: for a user program, pass a dict of the program's keyword arguments")
        user_spec = ModelSpec(id=None, program=spec, options={}, priors={})
        check_known(options, registry.option_names(GENERIC_METHODS[name]), f"method {name!r}")
        with compile_clock() as compiling:
            result = _warnings_at_caller(GENERIC_METHODS[name], spec, dict(data), seed=seed, spec=user_spec,
                                         data=dict(data),
                                         **check_common_options(options))
        spec, kind, exchangeable = user_spec, GENERIC_KINDS[name], {}   # a user's program names no exchangeable sites
    else:
        raise ValueError(f"spec: expected a ModelSpec from zoo.model(...) or a NumPyro program, "
                         f"got {type(spec).__name__}")
    return finish(result, spec, data, options, kind=kind, exchangeable=exchangeable, seed=seed, start=start,
                  compile_seconds=compiling[0], layout=registry.layout_of(spec, data))


def load_fit(path: str | os.PathLike) -> Fit:
    """A Fit read from a file of ``fit.save`` (``zoo.core.persist``): the model rebuilt with
    ``zoo.model(id, priors=..., **arguments)``; it predicts, summarizes and diagnoses as the original did. Files
    written by earlier versions of zoo load too (``zoo.core.persist.MOVED_MODULES``)."""
    parts = read_fit_file(path)
    record, spec = parts.record, None
    if record["model"] is not None:
        spec = model(record["model"], priors=record["priors"] or None, **record["arguments"])
    if spec is not None:   # files of format 2 and earlier kept per-unit draws in posterior, with each method's dims
        conform_layout(parts.idata, **registry.layout_of(spec, parts.data))
    return Fit(idata=parts.idata, spec=spec, method=record["method"], state=parts.state,
               headline=record["headline"] or None, predictor=parts.predictor, data=parts.data)


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
