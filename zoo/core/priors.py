"""Declarative priors: site -> distribution, from objects, strings or a TOML file.

Strings such as ``"InverseGamma(0.5, 0.5)"`` are parsed with Python's ``ast`` against a whitelist of
distribution names whose arguments must be numeric literals (numbers, negative numbers, lists of numbers,
keyword arguments with such values). Nothing is ever ``eval``-ed: ``"__import__('os')"`` is a ValueError.
"""
from __future__ import annotations

import ast
import dataclasses
import inspect
import math
import os
import pathlib
import tomllib
from typing import Any, Iterable, Mapping

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist

from zoo.core.provenance import prior_string
from zoo.models.feature_selection import BackgroundCovariance, BackgroundMean, ConceptCovariance, ConceptMean
from zoo.models.prior_adapters import concrete, dirichlet_concentration, family_error
from zoo.models.shrinkage_mixture import ImproperInverseGamma

__all__ = ["ALLOWED_DISTRIBUTIONS", "parse_prior", "load_priors_toml", "resolve_priors", "require_family",
           "dirichlet_concentration", "inverse_gamma_parameters", "beta_parameters", "beta_mixture_parameters",
           "PriorRule", "families", "any_family", "same_support", "prior_string", "same_prior"]

#: The distributions a prior string may name (NumPyro classes of the same name).
ALLOWED_DISTRIBUTIONS = {
    name: getattr(dist, name)
    for name in (
        "Normal", "HalfNormal", "HalfCauchy", "Cauchy", "StudentT", "Laplace", "LogNormal", "Uniform",
        "Exponential", "Gamma", "InverseGamma", "Beta", "Dirichlet", "Bernoulli", "Chi2", "TruncatedNormal",
        "LKJCholesky", "Delta",
    )
}
# prior families of zoo's own models whose law depends on other latent values (see their docstrings)
ALLOWED_DISTRIBUTIONS.update({cls.__name__: cls for cls in (ConceptCovariance, ConceptMean, BackgroundCovariance,
                                                            BackgroundMean, ImproperInverseGamma)})


def _literal(node: ast.AST, text: str) -> Any:
    """A finite numeric literal (int/float, possibly negated) or a list/tuple of them; anything else is refused."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        try:
            value = float(node.value)
        except OverflowError:
            raise ValueError(f"priors: {text!r}: the number {str(node.value)[:20]}... is too large") from None
        if not math.isfinite(value):
            raise ValueError(f"priors: {text!r}: {ast.get_source_segment(text.strip(), node) or node.value} is not a "
                             f"finite number (float64 overflows above 1.8e308)")
        return value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _literal(node.operand, text)
        if isinstance(value, float):
            return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(elt, text) for elt in node.elts]
    raise ValueError(f"priors: {text!r}: arguments must be numeric literals or lists of numbers, "
                     f"got {ast.dump(node)[:60]}")


def parse_prior(text: str) -> dist.Distribution:
    """Parse ``"Name(arg, ..., key=value)"`` into a NumPyro distribution (whitelisted names, numeric args only)."""
    if not isinstance(text, str):
        raise ValueError(f"priors: expected a string, got {type(text).__name__}")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as err:
        raise ValueError(f"priors: {text!r} is not a distribution call such as 'InverseGamma(0.5, 0.5)': {err.msg}")
    call = tree.body
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
        raise ValueError(f"priors: {text!r} is not a call of a whitelisted distribution "
                         f"(allowed: {', '.join(sorted(ALLOWED_DISTRIBUTIONS))})")
    name = call.func.id
    if name not in ALLOWED_DISTRIBUTIONS:
        raise ValueError(f"priors: {name!r} is not an allowed distribution "
                         f"(allowed: {', '.join(sorted(ALLOWED_DISTRIBUTIONS))})")
    args = [jnp.asarray(_literal(a, text)) for a in call.args]
    kwargs = {}
    for kw in call.keywords:
        if kw.arg is None:
            raise ValueError(f"priors: {text!r}: '**' arguments are not allowed")
        kwargs[kw.arg] = jnp.asarray(_literal(kw.value, text))
    _check_all_parameters_given(name, text, len(args), set(kwargs))
    try:
        return ALLOWED_DISTRIBUTIONS[name](*args, **kwargs, validate_args=True)
    except (TypeError, ValueError) as err:
        raise ValueError(f"priors: {text!r}: invalid arguments for {name}: {err}") from None


#: Parameters a prior string may leave out (their absence means something other than a default value), and families
#: given by one of several parameterizations.
_OPTIONAL_PARAMETERS = {"TruncatedNormal": {"low", "high"}, "Delta": {"log_density"}}
_ONE_OF_PARAMETERS = {"Bernoulli": ("probs", "logits")}


def _parameter_names(name: str) -> list[str]:
    """The parameters of a whitelisted family, in the order its constructor takes them positionally."""
    cls = ALLOWED_DISTRIBUTIONS[name]
    init = cls if name in _ONE_OF_PARAMETERS else cls.__init__
    params = [p for p in inspect.signature(init).parameters.values()
              if p.kind == p.POSITIONAL_OR_KEYWORD and p.name != "self"]
    return [p.name for p in params]


def _check_all_parameters_given(name: str, text: str, n_positional: int, keywords: set[str]) -> None:
    """Every parameter of the family written out: ``"InverseGamma(1.0)"`` would silently take rate 1.0 (NumPyro's
    default), which is rarely what was meant; a missing parameter is a ValueError naming it."""
    names = _parameter_names(name)
    given = set(names[:n_positional]) | keywords
    if name in _ONE_OF_PARAMETERS:
        choices = _ONE_OF_PARAMETERS[name]
        if len(given & set(choices)) != 1:
            raise ValueError(f"priors: {text!r}: give exactly one of {' or '.join(choices)}, e.g. {name}(probs=0.5)")
        return
    wanted = [n for n in names if n not in _OPTIONAL_PARAMETERS.get(name, set())]
    missing = [n for n in wanted if n not in given]
    if missing:
        raise ValueError(f"priors: {text!r}: missing parameter{'s' if len(missing) > 1 else ''} "
                         f"{', '.join(missing)}; write every parameter of {name}({', '.join(wanted)}) "
                         f"(none is taken by default)")


def load_priors_toml(path: str | os.PathLike) -> dict[str, str]:
    """Read ``site = "Dist(...)"`` lines from a TOML file (top level or a ``[priors]`` table)."""
    path = pathlib.Path(path)
    if not path.is_file():
        raise ValueError(f"priors: TOML file {str(path)!r} does not exist")
    with open(path, "rb") as fh:
        try:
            table = tomllib.load(fh)
        except tomllib.TOMLDecodeError as err:
            raise ValueError(f"priors: {str(path)!r} is not valid TOML: {err}") from None
    table = table.get("priors", table)
    for site, value in table.items():
        if not isinstance(value, str):
            raise ValueError(f"priors: {str(path)!r}: site {site!r} must map to a string such as "
                             f"'InverseGamma(0.5, 0.5)', got {type(value).__name__}")
    return dict(table)


def _as_distribution(site: str, value: Any) -> dist.Distribution:
    if isinstance(value, dist.Distribution):
        return _checked_parameters(site, value)
    if isinstance(value, str):
        try:
            return parse_prior(value)
        except ValueError as err:
            raise ValueError(f"priors[{site!r}]: {err}") from None
    raise ValueError(f"priors[{site!r}]: expected a numpyro distribution or a string, got {type(value).__name__}")


def _checked_parameters(site: str, prior: dist.Distribution) -> dist.Distribution:
    """A distribution object's parameters finite and inside their constraints (what ``validate_args`` checks for
    the parsed strings), so a bad prior fails here, naming the site, and not deep inside a sampler."""
    for name, constraint in getattr(prior, "arg_constraints", {}).items():
        value = getattr(prior, name, None)
        try:
            array = jnp.asarray(value)
        except TypeError:  # not an array-like parameter (None, a callable): nothing to check
            continue
        if jnp.issubdtype(array.dtype, jnp.floating) and not bool(jnp.all(jnp.isfinite(array))):
            raise ValueError(f"priors[{site!r}]: parameter {name} of {type(prior).__name__} is not finite")
        if not bool(jnp.all(constraint.check(array))):
            raise ValueError(f"priors[{site!r}]: parameter {name} of {type(prior).__name__} is outside its "
                             f"support ({constraint})")
    return prior


def _check_shape(site: str, prior: dist.Distribution, default: dist.Distribution) -> None:
    """The override describes the site's value: the default's event shape, and its batch shape or none (scalar
    parameters are broadcast by the program); a batch of priors the site cannot take is refused here."""
    shape = tuple(prior.batch_shape) + tuple(prior.event_shape)
    wanted = tuple(default.batch_shape) + tuple(default.event_shape)
    if tuple(prior.event_shape) != tuple(default.event_shape) or \
            (tuple(prior.batch_shape) not in ((), tuple(default.batch_shape))):
        raise ValueError(f"priors[{site!r}]: a {type(prior).__name__} of shape {shape} "
                         f"(batch {tuple(prior.batch_shape)}, "
                         f"event {tuple(prior.event_shape)}), but the site takes shape {wanted} (batch "
                         f"{tuple(default.batch_shape)}, event {tuple(default.event_shape)}; its default prior is a "
                         f"{type(default).__name__}); give scalar parameters or the site's shape")


def resolve_priors(defaults: Mapping[str, Any], overrides: Mapping | str | os.PathLike | None,
                   *, model_id: str | None = None, check_family=None) -> dict[str, dist.Distribution]:
    """Merge user ``overrides`` (mapping, or path of a TOML file) into a model's ``defaults``.

    A site the model does not have is a ValueError (nothing is silently ignored). ``check_family(site, prior,
    default)`` (the registry's) refuses a family no method of the model can use, before the shape check.
    """
    resolved = {site: _as_distribution(site, d) for site, d in defaults.items()}
    if overrides is None:
        return resolved
    if isinstance(overrides, (str, os.PathLike)):
        overrides = load_priors_toml(overrides)
    if not isinstance(overrides, Mapping):
        raise ValueError(f"priors: expected a mapping site -> distribution or a TOML path, "
                         f"got {type(overrides).__name__}")
    for site, value in overrides.items():
        if site not in resolved:
            where = f" of {model_id!r}" if model_id else ""
            raise ValueError(f"priors: {site!r} is not a prior site{where}; sites: {', '.join(sorted(resolved))}")
        prior = _as_distribution(site, value)
        if check_family is not None:
            check_family(site, prior, resolved[site])
        _check_shape(site, prior, resolved[site])
        resolved[site] = prior
    return resolved


def require_family(priors: Mapping[str, dist.Distribution], site: str, families: Iterable[type]) -> dist.Distribution:
    """Return ``priors[site]`` if it is one of ``families`` (what a conjugate update needs), else raise.

    Kernels that can fall back to a generic step test ``isinstance`` themselves instead of calling this.
    """
    families = tuple(families)
    prior = priors[site]
    if not isinstance(prior, families):
        names = ", ".join(f.__name__ for f in families)
        raise ValueError(f"priors[{site!r}]: this method's conjugate update needs a prior of family {names}; "
                         f"got {prior.__class__.__name__}")
    return prior


# ---------------------------------------------------------------------------------------------------- adapters
# A conjugate kernel needs numbers, not a distribution object: these read them off a resolved prior, with the
# family and the shape checked, and raise ValueErrors naming the site (one place for every paper module).

# dirichlet_concentration, family_error and concrete are defined below the user layer, in
# zoo.models.prior_adapters (the NumPyro programs use them too), and re-exported here.


def inverse_gamma_parameters(prior: dist.Distribution, site: str, *, improper_ok: bool = False,
                             needed_by: str = "this method") -> tuple[float, float]:
    """(concentration a, rate b) of a scalar InverseGamma(a, b) prior, density proportional to x^-(a+1) e^(-b/x).

    ``improper_ok`` also accepts ``zoo.models.shrinkage_mixture.ImproperInverseGamma`` (a <= 0 or b = 0 allowed).
    """
    families = (dist.InverseGamma, ImproperInverseGamma) if improper_ok else (dist.InverseGamma,)
    if not isinstance(prior, families):
        raise family_error(site, " or ".join(f.__name__ for f in families), prior, needed_by)
    a, b = concrete(site, prior.concentration), concrete(site, prior.rate)
    if a.shape != () or b.shape != ():
        raise ValueError(f"priors[{site!r}]: {needed_by} needs a scalar InverseGamma, got parameter shapes "
                         f"{a.shape} and {b.shape}")
    return float(a), float(b)


def beta_parameters(prior: dist.Distribution, site: str, *, needed_by: str = "this method") -> tuple[float, float]:
    """(concentration1 a, concentration0 b) of a scalar Beta(a, b) prior."""
    if not isinstance(prior, dist.Beta):
        raise family_error(site, "Beta", prior, needed_by)
    a, b = concrete(site, prior.concentration1), concrete(site, prior.concentration0)
    if a.shape != () or b.shape != ():
        raise ValueError(f"priors[{site!r}]: {needed_by} needs a scalar Beta, got parameter shapes "
                         f"{a.shape} and {b.shape}")
    return float(a), float(b)


def beta_mixture_parameters(prior: dist.Distribution, site: str, *, needed_by: str = "this method"
                            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(weights (C,), a (C,), b (C,)) of a Beta (C = 1) or a MixtureSameFamily of C Betas on a scalar site."""
    if isinstance(prior, dist.Beta):
        a, b = concrete(site, prior.concentration1), concrete(site, prior.concentration0)
        if a.shape != () or b.shape != ():
            raise ValueError(f"priors[{site!r}]: needs a scalar Beta, got parameter shapes {a.shape} and {b.shape}")
        return np.ones(1), a.reshape(1), b.reshape(1)
    if isinstance(prior, dist.MixtureSameFamily) and isinstance(prior.component_distribution, dist.Beta):
        comp = prior.component_distribution
        weights = concrete(site, prior.mixing_distribution.probs)
        a, b = concrete(site, comp.concentration1), concrete(site, comp.concentration0)
        a, b = np.broadcast_to(a, weights.shape).copy(), np.broadcast_to(b, weights.shape).copy()
        if weights.ndim != 1:
            raise ValueError(f"priors[{site!r}]: needs one mixture of Betas, got mixing weights of shape "
                             f"{weights.shape}")
        return weights, a, b
    raise family_error(site, "Beta or MixtureSameFamily of Betas", prior, needed_by)


# ------------------------------------------------------------------------------------------------ family rules
# Which families a method can use at a site, declared by the model (``register_model(prior_families=...)``) and
# checked by ``zoo.model`` (a family no method of the model can use) and by ``zoo.fit`` before the method runs (a
# family the chosen method cannot use): a bad prior never reaches a kernel.

def _support_key(c) -> tuple:
    """A constraint as (kind, lower, upper): ``unit_interval`` and ``interval(0, 1)`` are the same set."""
    lower, upper = getattr(c, "lower_bound", None), getattr(c, "upper_bound", None)
    if lower is None and upper is None:
        return (type(c).__name__,)
    as_float = (lambda v: None if v is None else float(np.asarray(v)))
    return ("discrete" if c.is_discrete else "continuous", as_float(lower), as_float(upper))


def same_support(a, b) -> bool:
    """Whether two NumPyro constraints are the same set (the same kind and the same bounds)."""
    try:
        return a is b or _support_key(a) == _support_key(b)
    except (TypeError, ValueError):  # array-valued bounds: not a scalar support
        return False


def _support_text(c) -> str:
    key = _support_key(c)
    if len(key) == 3:
        lower = "-inf" if key[1] is None else format(key[1], "g")
        upper = "inf" if key[2] is None else format(key[2], "g")
        return f"({lower}, {upper})"
    return str(c)


@dataclasses.dataclass(frozen=True)
class PriorRule:
    """What a method can use at a prior site: an instance of one of ``families``, or (with ``support``) any
    scalar distribution on that support (the method then takes a generic step for the site)."""

    families: tuple = ()
    support: Any = None
    why: str = ""

    def accepts(self, prior: dist.Distribution) -> bool:
        if self.families and isinstance(prior, self.families):
            return True
        if self.support is not None:
            scalar = tuple(prior.batch_shape) + tuple(prior.event_shape) == ()
            return scalar and same_support(prior.support, self.support)
        return False

    def describe(self) -> str:
        parts = [" or ".join(f.__name__ for f in self.families)] if self.families else []
        if self.support is not None:
            parts.append(f"any scalar distribution on {_support_text(self.support)}")
        return " or ".join(parts) + (f" ({self.why})" if self.why else "")


def families(*types: type, why: str = "") -> PriorRule:
    """A rule accepting instances of ``types`` (e.g. the conjugate family of a Gibbs block)."""
    return PriorRule(families=tuple(types), why=why)


def any_family(support, *types: type, why: str = "") -> PriorRule:
    """A rule accepting any scalar distribution on ``support`` (a generic step), and instances of ``types``."""
    return PriorRule(families=tuple(types), support=support, why=why)


def same_prior(a: Any, b: Any) -> bool:
    """Whether two priors are the same family with the same parameters (what an option changed, if not)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dist.MixtureSameFamily):
        return same_prior(a.mixing_distribution, b.mixing_distribution) and \
            same_prior(a.component_distribution, b.component_distribution)
    if isinstance(a, (dist.ExpandedDistribution, dist.Independent)):
        return same_prior(a.base_dist, b.base_dist) and tuple(a.batch_shape) == tuple(b.batch_shape) and \
            tuple(a.event_shape) == tuple(b.event_shape)
    for key in getattr(a, "arg_constraints", {}):
        x, y = getattr(a, key, None), getattr(b, key, None)
        if (x is None) != (y is None):
            return False
        try:
            if x is not None and not np.array_equal(np.asarray(x), np.asarray(y)):
                return False
        except (TypeError, ValueError):
            return False
    return tuple(a.batch_shape) == tuple(b.batch_shape) and tuple(a.event_shape) == tuple(b.event_shape)
