"""The inference registry: model ids -> ModelEntry, (model id, method) -> runner.

Registering a model is one call (``register_model``); registering an inference method is one decorator
(``@register_method("paper.variant", "name")``). Paper modules in ``zoo/papers/`` do both at import time;
``zoo.catalog`` imports them all.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

from zoo.priors import resolve_priors

__all__ = ["ModelSpec", "ModelEntry", "Method", "register_model", "register_method", "get_model", "get_methods",
           "model", "models_registered"]


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """A model ready to fit: its id, its NumPyro program, the options it was built with and its priors.

    ``program`` is a plain NumPyro function; ``build_program_args(data)`` (from the entry) turns a data object
    into the program's keyword arguments. ``priors`` maps site name -> numpyro distribution (already parsed).
    For a user's own program (a callable passed to ``zoo.fit``) ``id`` is ``None``.
    """

    id: str | None
    program: Callable
    options: Mapping[str, Any]
    priors: Mapping[str, Any]

    def __repr__(self) -> str:  # short, notebook-friendly
        pri = ", ".join(f"{k}={v.__class__.__name__}" for k, v in self.priors.items())
        return f"ModelSpec({self.id!r}, options={dict(self.options)!r}, priors={{{pri}}})"


@dataclasses.dataclass(frozen=True)
class Method:
    name: str
    runner: Callable  # runner(spec, data, seed=..., **options) -> zoo.results.Fit
    description: str
    generic: bool = False


@dataclasses.dataclass
class ModelEntry:
    """Everything the registry knows about one model id.

    - ``build(**options) -> (program, options, default_priors)``: validates options (ValueError naming the
      option) and returns the NumPyro program closed over them plus the default priors (site -> distribution).
    - ``data_kind``: the data container it takes (e.g. "ndarray", "AnnotatedRegions", "Bags").
    - ``program_args(spec, data) -> dict``: keyword arguments of the program for a data object (used by the generic
      methods NUTS/SVI/MAP); ``None`` when the program does not admit generic inference.
    """

    id: str
    paper: str
    title: str
    build: Callable[..., tuple]
    data_kind: str
    default_method: str
    program_args: Callable | None = None
    prior_sites: tuple = ()
    generic_predictor: Callable | None = None
    headline: tuple = ()
    methods: dict = dataclasses.field(default_factory=dict)


_MODELS: dict[str, ModelEntry] = {}


def register_model(id: str, *, paper: str, title: str, build: Callable, data_kind: str, default_method: str,
                   program_args: Callable | None = None, prior_sites: tuple = (), headline: tuple = (),
                   generic_predictor: Callable | None = None) -> ModelEntry:
    """Register a model id. With ``program_args`` the generic methods (nuts, svi, map) are registered too;
    ``generic_predictor(fit, data)`` gives them predictions; ``headline`` names the sites ``Fit.summary`` shows."""
    if id in _MODELS:
        raise ValueError(f"model id {id!r} is registered twice")
    if "." not in id:
        raise ValueError(f"model id {id!r} must read '<paper>.<variant>'")
    entry = ModelEntry(id=id, paper=paper, title=title, build=build, data_kind=data_kind,
                       default_method=default_method, program_args=program_args, prior_sites=tuple(prior_sites),
                       generic_predictor=generic_predictor, headline=tuple(headline))
    _MODELS[id] = entry
    if program_args is not None:
        _register_generic(entry)
    return entry


def _register_generic(entry: ModelEntry) -> None:
    from zoo.generic import GENERIC_METHODS

    def make_runner(name, run):
        def runner(spec, data, seed=0, **options):
            kwargs = entry.program_args(spec, data)
            return run(spec.program, kwargs, seed=seed, spec=spec, predictor=entry.generic_predictor,
                       headline=list(entry.headline) or None, data=data, **options)
        runner.__doc__ = run.__doc__
        return runner

    for name, run in GENERIC_METHODS.items():
        entry.methods[name] = Method(name=name, runner=make_runner(name, run),
                                     description=f"generic {name.upper()} on the NumPyro program", generic=True)


def register_method(model_ids: str | tuple | list, name: str, *, description: str = "", generic: bool = False):
    """Decorator registering ``runner(spec, data, seed=0, **options) -> Fit`` as method ``name`` of the models."""
    ids = (model_ids,) if isinstance(model_ids, str) else tuple(model_ids)

    def decorate(runner: Callable) -> Callable:
        for mid in ids:
            entry = get_model(mid)
            if name in entry.methods:
                raise ValueError(f"method {name!r} is registered twice for {mid!r}")
            doc = description or (runner.__doc__ or "").strip().split("\n")[0]
            entry.methods[name] = Method(name=name, runner=runner, description=doc, generic=generic)
        return runner

    return decorate


def models_registered() -> dict[str, ModelEntry]:
    return _MODELS


def get_model(id: str) -> ModelEntry:
    if id not in _MODELS:
        known = ", ".join(sorted(_MODELS)) or "(none)"
        raise ValueError(f"model: unknown model id {id!r}; known ids: {known}")
    return _MODELS[id]


def get_methods(id: str) -> list[str]:
    return list(get_model(id).methods)


def model(id: str, *, priors: Mapping | str | None = None, **options) -> ModelSpec:
    """Build a ModelSpec: the model's NumPyro program with ``options`` and ``priors`` (declarative) applied."""
    entry = get_model(id)
    program, opts, default_priors = entry.build(**options)
    resolved = resolve_priors(default_priors, priors, model_id=id)
    return ModelSpec(id=id, program=program, options=opts, priors=resolved)
