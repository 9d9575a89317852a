"""The inference registry: model ids -> ModelEntry, (model id, method) -> runner.

Registering a model is one call (``register_model``); registering an inference method is one decorator
(``@register_method("paper.variant", "name")``). Paper modules in ``zoo/papers/`` do both at import time;
``zoo.catalog`` imports them all.

The registry enforces the contract that CONTRIBUTING.md states: a method's options are the keyword parameters of its
runner (or the ``options=`` it registers with), and ``dispatch`` refuses any other name with a ValueError listing
the known ones before the runner starts; it also completes the ``Fit`` (spec, method name, data, headline sites),
so runners need not repeat them. What every fit passes through after its runner is ``zoo.core.finish``.
"""
from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Callable, Iterable, Mapping

from zoo.core.options import check_common_options, check_known
from zoo.core.priors import PriorRule, any_family, families, prior_string, resolve_priors, same_prior
from zoo.core.spec import ModelSpec

__all__ = ["ModelSpec", "ModelEntry", "Method", "register_model", "register_method", "get_model", "get_methods",
           "model", "models_registered", "dispatch", "option_names", "layout_of"]

#: Runner parameters that are not user options: the spec, the data, the seed, and what the registry hands the
#: generic methods itself.
_NOT_OPTIONS = frozenset({"spec", "data", "seed", "program", "program_kwargs", "predictor", "headline"})


def option_names(fn: Callable) -> tuple[str, ...]:
    """The user options of a runner (or of an options function): its keyword parameters other than spec, data,
    seed and the registry's own arguments. ``**kwargs`` adds none: an option must be named to exist."""
    names = []
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY) and param.name not in _NOT_OPTIONS:
            names.append(param.name)
    return tuple(names)


def _takes_any_keyword(fn: Callable) -> bool:
    return any(p.kind == p.VAR_KEYWORD for p in inspect.signature(fn).parameters.values())


@dataclasses.dataclass(frozen=True)
class Method:
    """An inference method of a model: ``runner(spec, data, seed=..., **options) -> zoo.core.fit.Fit``; ``options``
    are the option names it accepts."""

    name: str
    runner: Callable
    description: str
    generic: bool = False
    options: tuple = ()
    kind: str | None = None  # "mcmc" | "variational" | "point estimate"; None: from the draws (one per chain: point)
    #: for an MCMC method, ``kernel(spec, data, method, options) -> numpyro MCMCKernel`` (``zoo.kernel``)
    kernel: Callable | None = None


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
    exchangeable: dict = dataclasses.field(default_factory=dict)
    #: the sites indexed by the data's units, kept in ``unit_posterior`` (``zoo.core.idata.conform_layout``)
    unit_sites: tuple = ()
    #: site -> its dims after (chain, draw), the same under every method (observed sites: their data's dims)
    site_dims: dict = dataclasses.field(default_factory=dict)
    #: ``coords(spec, data) -> {dim: labels}``: the data's own labels (words, feature names, bag ids) for the dims
    coords: Callable | None = None
    #: old name -> name now, for the variables a model renamed (files written before still load under the new name)
    renamed: dict = dataclasses.field(default_factory=dict)
    methods: dict = dataclasses.field(default_factory=dict)
    #: site -> PriorRule: the families the model's own methods use (default: the default prior's family)
    prior_families: dict = dataclasses.field(default_factory=dict)
    #: site -> PriorRule for the generic methods (default: any distribution on the default prior's support)
    generic_prior_families: dict = dataclasses.field(default_factory=dict)

    def prior_rule(self, method: "Method", site: str, default) -> PriorRule:
        """The families ``method`` can use at ``site`` (whose default prior is ``default``)."""
        if method.generic:
            return self.generic_prior_families.get(site) or any_family(
                default.support, type(default), why="the generic methods sample the site from the program")
        return self.prior_families.get(site) or families(type(default))


_MODELS: dict[str, ModelEntry] = {}


def register_model(id: str, *, paper: str, title: str, build: Callable, data_kind: str, default_method: str,
                   program_args: Callable | None = None, prior_sites: tuple = (), headline: tuple = (),
                   generic_predictor: Callable | None = None, exchangeable: Mapping[str, Any] | None = None,
                   prior_families: Mapping[str, PriorRule] | None = None,
                   generic_prior_families: Mapping[str, PriorRule] | None = None,
                   unit_sites: tuple = (), site_dims: Mapping[str, Any] | None = None,
                   coords: Callable | None = None, renamed: Mapping[str, str] | None = None) -> ModelEntry:
    """Register a model id. With ``program_args`` the generic methods (nuts, svi, map) are registered too;
    ``generic_predictor(fit, data)`` gives them predictions; ``headline`` names the sites ``Fit.summary`` shows;
    ``exchangeable`` maps the sites whose components can switch labels to their component axis (after chain and
    draw): draws of those sites are relabelled (``zoo.core.relabel``) and stored beside the raw ones (``add_relabelled``
    also takes sites carried along and sites whose values are component labels). ``prior_families`` maps prior
    sites to the ``zoo.core.priors.PriorRule`` of the model's own methods (default: the default prior's family
    only), ``generic_prior_families`` those of nuts / svi / map (default: any distribution on the default prior's
    support): ``zoo.model`` refuses a family no method can use, ``zoo.fit`` one the chosen method cannot.
    ``unit_sites``, ``site_dims`` and ``coords(spec, data)`` give every method's InferenceData one layout
    (``zoo.core.idata.conform_layout``): the sites indexed by the data's units in ``unit_posterior``, each site's
    dims named once, the data's labels as coordinates; ``renamed`` (old name -> name now) renames a variable that
    an earlier version stored under another name, in fits written before."""
    if id in _MODELS:
        raise ValueError(f"model id {id!r} is registered twice")
    if "." not in id:
        raise ValueError(f"model id {id!r} must read '<paper>.<variant>'")
    entry = ModelEntry(id=id, paper=paper, title=title, build=build, data_kind=data_kind,
                       default_method=default_method, program_args=program_args, prior_sites=tuple(prior_sites),
                       generic_predictor=generic_predictor, headline=tuple(headline),
                       exchangeable=dict(exchangeable or {}), prior_families=dict(prior_families or {}),
                       generic_prior_families=dict(generic_prior_families or {}), unit_sites=tuple(unit_sites),
                       site_dims={k: tuple(v) for k, v in (site_dims or {}).items()}, coords=coords,
                       renamed=dict(renamed or {}))
    _MODELS[id] = entry
    if program_args is not None:
        _register_generic(entry)
    return entry


def _register_generic(entry: ModelEntry) -> None:
    from zoo.core.generic import GENERIC_KINDS, GENERIC_METHODS

    def make_runner(name, run):
        def runner(spec, data, seed=0, **options):
            kwargs = entry.program_args(spec, data)
            return run(spec.program, kwargs, seed=seed, spec=spec, predictor=entry.generic_predictor,
                       headline=list(entry.headline) or None, data=data, **options)
        runner.__doc__ = run.__doc__
        return runner

    for name, run in GENERIC_METHODS.items():
        entry.methods[name] = Method(name=name, runner=make_runner(name, run),
                                     description=f"generic {name.upper()} on the NumPyro program", generic=True,
                                     options=option_names(run), kind=GENERIC_KINDS[name])


def register_method(model_ids: str | tuple | list, name: str, *, description: str = "", generic: bool = False,
                    options: Callable | Iterable[str] | None = None, kind: str | None = None,
                    kernel: Callable | None = None):
    """Decorator registering ``runner(spec, data, seed=0, **options) -> Fit`` as method ``name`` of the models.

    The method's options are the runner's keyword parameters; a runner that takes ``**options`` and validates them
    itself passes ``options=`` (a function whose keyword parameters are the options, or the names). An MCMC method
    may pass ``kernel(spec, data, method, options) -> MCMCKernel``: its sampler for ``numpyro.infer.MCMC``
    (``zoo.kernel``)."""
    ids = (model_ids,) if isinstance(model_ids, str) else tuple(model_ids)

    def decorate(runner: Callable) -> Callable:
        if options is None:
            names = option_names(runner)
        elif callable(options):
            names = option_names(options)
        else:
            names = tuple(options)
        for mid in ids:
            entry = get_model(mid)
            if name in entry.methods:
                raise ValueError(f"method {name!r} is registered twice for {mid!r}")
            doc = description or (runner.__doc__ or "").strip().split("\n")[0]
            entry.methods[name] = Method(name=name, runner=runner, description=doc, generic=generic, options=names,
                                         kind=kind, kernel=kernel)
        return runner

    return decorate


def dispatch(spec: ModelSpec, name: str | None, data: Any, seed: int, options: Mapping[str, Any]):
    """Run method ``name`` (None: the model's default) of ``spec`` on ``data``: options checked against the
    method's, then the runner, then the ``Fit`` completed with the spec, the method, the data and the headline.
    Returns (fit, the Method): ``zoo.core.finish.finish`` does the rest (finiteness, inference kind, relabelling,
    provenance, verdict), the same for every model and user program."""
    entry = get_model(spec.id)
    name = name or entry.default_method
    if name not in entry.methods:
        raise ValueError(f"method: {name!r} is not registered for {spec.id!r}; available: {', '.join(entry.methods)}")
    method = entry.methods[name]
    check_known(options, method.options, f"method {name!r} of {spec.id!r}")
    check_prior_families(entry, method, spec)
    fit = method.runner(spec, data, seed=seed, **check_common_options(options))
    fit = dataclasses.replace(fit, spec=spec, method=name, data=data if fit.data is None else fit.data,
                              headline=fit.headline or list(entry.headline) or None)
    return fit, method


def layout_of(spec: ModelSpec | None, data: Any) -> dict:
    """Keyword arguments of ``zoo.core.idata.conform_layout`` for a model's fit on ``data`` (empty for a user's
    program, whose dims the generic methods name after its plates). Coordinates that cannot be read from ``data``
    (e.g. a file's data kept without its labels) are left out."""
    if spec is None or spec.id is None or spec.id not in _MODELS:
        return {}
    entry = _MODELS[spec.id]
    coords = {}
    if entry.coords is not None and data is not None:
        try:
            coords = dict(entry.coords(spec, data))
        except (AttributeError, TypeError, KeyError, ValueError):
            coords = {}
    return {"unit_sites": entry.unit_sites, "site_dims": entry.site_dims, "coords": coords, "renamed": entry.renamed}


def models_registered() -> dict[str, ModelEntry]:
    return _MODELS


def get_model(id: str) -> ModelEntry:
    if id not in _MODELS:
        known = ", ".join(sorted(_MODELS)) or "(none)"
        raise ValueError(f"model: unknown model id {id!r}; known ids: {known}")
    return _MODELS[id]


def get_methods(id: str) -> list[str]:
    return list(get_model(id).methods)


def check_prior_families(entry: ModelEntry, method: Method, spec: ModelSpec) -> None:
    """ValueError, before ``method`` runs, for a prior of ``spec`` that the method cannot use: names the site, the
    families the method takes and the model's methods that take the given one."""
    defaults = spec.default_priors or spec.priors
    for site, prior in spec.priors.items():
        default = defaults.get(site, prior)
        rule = entry.prior_rule(method, site, default)
        if rule.accepts(prior):
            continue
        others = [m.name for m in entry.methods.values() if entry.prior_rule(m, site, default).accepts(prior)]
        raise ValueError(f"priors[{site!r}]: method {method.name!r} of {entry.id!r} cannot use a "
                         f"{type(prior).__name__} prior; it takes {rule.describe()}. Methods of {entry.id!r} that "
                         f"take it: {', '.join(others)}")


def _check_family_usable(entry: ModelEntry):
    """The ``check_family`` of ``resolve_priors`` for this model: a family that none of its methods can use is a
    ValueError naming the site and the families each kind of method takes."""
    def check(site, prior, default):
        usable = [m for m in entry.methods.values() if entry.prior_rule(m, site, default).accepts(prior)]
        if usable:
            return
        kinds = {}
        for m in entry.methods.values():
            kinds.setdefault(entry.prior_rule(m, site, default).describe(), []).append(m.name)
        takes = "; ".join(f"{', '.join(names)}: {rule}" for rule, names in kinds.items())
        raise ValueError(f"priors[{site!r}]: no method of {entry.id!r} can use a {type(prior).__name__} prior "
                         f"({prior_string(prior)}); the site takes {takes}")
    return check


def _sites_set_by_options(entry: ModelEntry, options: Mapping[str, Any], priors_built: Mapping[str, Any]) -> dict:
    """site -> the options that set its default prior's parameters (those whose removal changes them, the shape
    kept), e.g. carbonetto03's ``a``, ``b`` -> ``tau2``; an option the build cannot do without is skipped."""
    out: dict[str, list[str]] = {}
    for key in options:
        try:
            _, _, without = entry.build(**{k: v for k, v in options.items() if k != key})
        except (TypeError, ValueError):
            continue
        for site, prior in priors_built.items():
            other = without.get(site)
            shape = tuple(prior.batch_shape) + tuple(prior.event_shape)
            # an option that only sizes the site (n_states -> a Dirichlet's length) sets no parameter of it
            if other is not None and tuple(other.batch_shape) + tuple(other.event_shape) == shape \
                    and not same_prior(prior, other):
                out.setdefault(site, []).append(key)
    return out


def model(id: str, *, priors: Mapping | str | None = None, **options) -> ModelSpec:
    """Build a ModelSpec: the model's NumPyro program with ``options`` and ``priors`` (declarative) applied.

    Priors are checked here: a site the model lacks, a family none of its methods can use, a missing parameter
    and a site whose prior an option sets too (e.g. ``a=50, b=50`` and ``priors={"tau2": ...}``) are ValueErrors."""
    entry = get_model(id)
    if not _takes_any_keyword(entry.build):  # a build with **options checks the names itself
        check_known(options, option_names(entry.build), f"model {id!r}")
    program, opts, default_priors = entry.build(**options)
    resolved = resolve_priors(default_priors, priors, model_id=id, check_family=_check_family_usable(entry))
    defaults = resolve_priors(default_priors, None, model_id=id)
    if priors is not None and options:
        both = {site: keys for site, keys in _sites_set_by_options(entry, options, defaults).items()
                if site in _overridden_sites(priors)}
        if both:
            site, keys = next(iter(both.items()))
            raise ValueError(f"priors[{site!r}]: set twice, by the option{'s' if len(keys) > 1 else ''} "
                             f"{', '.join(f'{k}={options[k]!r}' for k in keys)} and by priors=; give one of them")
    return ModelSpec(id=id, program=program, options=opts, priors=resolved, arguments=dict(options),
                     default_priors=defaults)


def _overridden_sites(priors) -> set[str]:
    import os
    from zoo.core.priors import load_priors_toml
    if isinstance(priors, (str, os.PathLike)):
        return set(load_priors_toml(priors))
    return set(priors) if isinstance(priors, Mapping) else set()
