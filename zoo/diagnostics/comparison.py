"""``zoo.compare``: rank fits of any method (MCMC, variational, EM / MAP) by held-out log predictive density.

>>> import zoo
>>> X = zoo.load_dataset("carbonetto03_sec2")
>>> X_train, X_test = X[:150], X[150:]
>>> spec = zoo.model("carbonetto03.shrinkage_mixture", n_components=3, covariance="diag")
>>> fit_em = zoo.fit(spec, X_train, method="map_em", num_chains=2)
>>> fit_svi = zoo.fit(spec, X_train, method="svi", num_steps=500, num_samples=50, progress_bar=False)
>>> table = zoo.compare({"em": fit_em, "svi": fit_svi}, data=X_test)
>>> sorted(table.index), list(table.columns[:8])
(['em', 'svi'], ['rank', 'method', 'inference', 'n_draws', 'elpd_heldout', 'se', 'elpd_diff', 'dse'])

For each fit, ``lpd_i = log (1/S) sum_s p(y_i | theta_s)`` over its S posterior draws (a point estimate: the
restart with the best final objective, S = 1), with ``p(y_i | theta)`` the model's NumPyro program's likelihood
of held-out point i (``numpyro.infer.util.log_likelihood`` on the program with the registry's ``program_args``
for the held-out data). The table, best first: ``elpd_heldout`` = sum_i lpd_i and its standard error
``sqrt(n var(lpd_i))``, the difference to the best fit and its standard error from the pointwise differences,
and for fits with real draws (inference "mcmc", or "variational": draws of q, restarts pooled, which PSIS-LOO
takes for posterior draws; the warning column says so) and a ``log_likelihood`` group PSIS-LOO on the training
data (``az.loo``: elpd_loo, p_loo, the largest Pareto k and "Pareto k > 0.7" when a k exceeds 0.7).
"""
from __future__ import annotations

import warnings
from typing import Any, Callable, Mapping

import jax
import numpy as np
import pandas as pd
from jax.scipy.special import logsumexp
from numpyro.infer.util import log_likelihood as _numpyro_log_likelihood

from zoo.core.fit import Fit
from zoo.core.idata import final_objectives, az

__all__ = ["compare", "heldout_log_density", "PARETO_K_THRESHOLD"]

#: Pareto k above which the PSIS-LOO estimate of a point is unreliable (Vehtari et al. 2017; 2024)
PARETO_K_THRESHOLD = 0.7


def _program_and_kwargs(name: str, fit: Fit, data) -> tuple[Callable, dict]:
    """The fit's NumPyro program and its keyword arguments for the held-out ``data``; ValueError naming the fit
    when its model has no program (or ``data`` does not suit it)."""
    spec = fit.spec
    if spec is None:
        raise ValueError(f"fits[{name!r}]: the fit has no model spec, so its held-out density cannot be computed")
    if spec.id is None:
        if not isinstance(data, Mapping):
            raise ValueError(f"data: fits[{name!r}] is of a user program, whose data are a dict of its keyword "
                             f"arguments; got {type(data).__name__}")
        return spec.program, dict(data)
    from zoo.core.registry import get_model
    entry = get_model(spec.id)
    if entry.program_args is None:
        raise ValueError(f"fits[{name!r}]: model {spec.id!r} has no NumPyro program for its likelihood, so "
                         f"zoo.compare cannot compute its held-out log predictive density")
    try:
        return spec.program, entry.program_args(spec, data)
    except ValueError as err:
        raise ValueError(f"fits[{name!r}]: the held-out data do not fit model {spec.id!r}: {err}") from err


def _latent_shapes(program: Callable, kwargs: Mapping[str, Any]) -> dict[str, tuple]:
    """The program's latent sample sites and their shapes for these keyword arguments (one trace)."""
    from zoo.core.generic import _trace
    tr = _trace(program, kwargs, 0)
    return {k: tuple(np.shape(s["value"])) for k, s in tr.items() if s["type"] == "sample" and not s["is_observed"]}


def _check_draws(name: str, draws: Mapping[str, np.ndarray], shapes: Mapping[str, tuple]) -> None:
    """Every latent site in the draws, each draw shaped as the site is for the held-out data (else the held-out
    data have, say, another number of features than the training data, and broadcasting would hide it)."""
    missing = [s for s in shapes if s not in draws]
    if missing:
        raise ValueError(f"fits[{name!r}]: the posterior lacks the program's latent site(s) {', '.join(missing)}, "
                         f"so p(held-out | draw) cannot be computed")
    for site, shape in shapes.items():
        if draws[site].shape[1:] != shape:
            raise ValueError(f"fits[{name!r}]: the held-out data do not fit the fitted model: site {site!r} has "
                             f"shape {draws[site].shape[1:]} in the fit and {shape} for the held-out data")


def _draws(fit: Fit) -> dict[str, np.ndarray]:
    """Posterior draws flattened to (S, ...): every chain and draw, or for a point estimate the restart with the
    best final objective (S = 1). The per-unit draws (``unit_posterior``) count as the program's sites too."""
    post = fit.idata.posterior
    if "unit_posterior" in fit.idata.groups():
        post = post.merge(fit.idata.unit_posterior, compat="override")
    if fit.is_point_estimate:
        final = final_objectives(getattr(fit.idata, "sample_stats", None), post.sizes["chain"])
        best = int(np.nanargmax(final)) if np.any(np.isfinite(final)) else 0
        post = post.isel(chain=[best])
    n = post.sizes["chain"] * post.sizes["draw"]
    return {k: np.asarray(v.values).reshape((n,) + v.shape[2:]) for k, v in post.data_vars.items()}


def heldout_log_density(name: str, fit: Fit, data) -> np.ndarray:
    """(n,) pointwise held-out log predictive density lpd_i = log mean_s p(y_i | theta_s) of one fit (see the
    module doc); the points are the observed sites' batch elements, site after site. ``name`` labels errors."""
    program, kwargs = _program_and_kwargs(name, fit, data)
    draws = _draws(fit)
    shapes = _latent_shapes(program, kwargs)
    _check_draws(name, draws, shapes)
    samples = {s: jax.numpy.asarray(draws[s]) for s in shapes}
    try:
        ll = _numpyro_log_likelihood(program, samples, **kwargs)
    except (ValueError, TypeError) as err:
        raise ValueError(f"fits[{name!r}]: the held-out data do not fit the program: {err}") from err
    if not ll:
        raise ValueError(f"fits[{name!r}]: the program has no observed site for the held-out data")
    n_draws = next(iter(samples.values())).shape[0]
    pointwise = np.concatenate([np.asarray(v).reshape(n_draws, -1) for v in ll.values()], axis=1)  # (S, n)
    return np.asarray(logsumexp(pointwise, axis=0) - np.log(n_draws))


def _loo_columns(fit: Fit) -> dict[str, Any]:
    """PSIS-LOO of a fit with real draws (MCMC, or draws of a variational q) and a ``log_likelihood`` group (NaN
    otherwise). For draws of q it treats q as the posterior (restarts pooled); the warning column says so."""
    blank = {"elpd_loo": np.nan, "se_loo": np.nan, "p_loo": np.nan, "pareto_k_max": np.nan, "warning": ""}
    if fit.inference not in ("mcmc", "variational") or "log_likelihood" not in fit.idata.groups():
        return blank
    names = list(fit.idata.log_likelihood.data_vars)
    if len(names) != 1:
        return blank | {"warning": f"PSIS-LOO skipped: {len(names)} log-likelihood variables"}
    with warnings.catch_warnings():   # ArviZ warns on high Pareto k; the table says so in its warning column
        warnings.simplefilter("ignore")
        loo = az.loo(fit.idata, pointwise=True, var_name=names[0])
    k_max = float(np.nanmax(np.asarray(loo.pareto_k)))
    notes = [f"Pareto k > {PARETO_K_THRESHOLD}"] if k_max > PARETO_K_THRESHOLD else []
    if fit.inference == "variational":
        notes.append("PSIS-LOO on draws of q (q taken for the posterior)")
    return {"elpd_loo": float(loo.elpd_loo), "se_loo": float(loo.se), "p_loo": float(loo.p_loo),
            "pareto_k_max": k_max, "warning": "; ".join(notes)}


def _model_kind(name: str, fit: Any) -> str:
    """What data a fit's model takes: the registry's data kind, or "program" for a user program."""
    if not isinstance(fit, Fit):
        raise ValueError(f"fits[{name!r}]: expected a zoo.core.fit.Fit, got {type(fit).__name__}")
    if fit.spec is None or fit.spec.id is None:
        return "program"
    from zoo.core.registry import get_model
    return get_model(fit.spec.id).data_kind


def _check_fits(fits: Mapping[str, Fit]) -> None:
    if not isinstance(fits, Mapping) or not fits:
        raise ValueError("fits: expected a non-empty dict of name -> Fit")
    kinds = {name: _model_kind(name, fit) for name, fit in fits.items()}
    if len(set(kinds.values())) > 1:
        listed = ", ".join(f"{k}: {v}" for k, v in kinds.items())
        raise ValueError(f"fits: the models take different kinds of data ({listed}); compare fits of one kind of "
                         f"data on the same held-out data")


def _se(values: np.ndarray) -> float:
    """Standard error of a sum of n pointwise values: sqrt(n var)."""
    return float(np.sqrt(values.size * np.var(values, ddof=1))) if values.size > 1 else np.nan


def compare(fits: Mapping[str, Fit], data) -> pd.DataFrame:
    """Rank ``fits`` (name -> Fit, any method) by held-out log predictive density on ``data`` (the held-out data,
    in the form the models take: an array, a container, or for user programs a dict of keyword arguments).

    Returns a DataFrame indexed by fit name, best first, with columns rank, method, inference, n_draws (draws
    averaged: 1 for a point estimate), elpd_heldout, se (its standard error), elpd_diff and dse (difference to
    the best and its standard error, from the pointwise differences), n_heldout, and PSIS-LOO on the training
    data where a fit has MCMC or variational draws and a log_likelihood group: elpd_loo, se_loo, p_loo,
    pareto_k_max, warning
    ("Pareto k > 0.7"). ValueError naming the fit for a model without a NumPyro program or held-out data it does
    not take, and for fits of models that take different kinds of data."""
    _check_fits(fits)
    pointwise = {name: heldout_log_density(name, fit, data) for name, fit in fits.items()}
    sizes = {name: v.size for name, v in pointwise.items()}
    if len(set(sizes.values())) > 1:
        raise ValueError(f"data: the fits see different numbers of held-out points ({sizes}); compare fits of "
                         f"the same model family on the same data")
    best = max(pointwise, key=lambda k: pointwise[k].sum())
    rows = {}
    for name, fit in fits.items():
        lpd = pointwise[name]
        diff = pointwise[best] - lpd
        n_draws = 1 if fit.is_point_estimate else fit.idata.posterior.sizes["chain"] * fit.idata.posterior.sizes["draw"]
        rows[name] = {"method": fit.method, "inference": fit.inference, "n_draws": n_draws,
                      "elpd_heldout": float(lpd.sum()), "se": _se(lpd), "elpd_diff": float(diff.sum()),
                      "dse": 0.0 if name == best else _se(diff), "n_heldout": lpd.size, **_loo_columns(fit)}
    table = pd.DataFrame.from_dict(rows, orient="index").sort_values("elpd_heldout", ascending=False)
    table.insert(0, "rank", np.arange(len(table)))
    return table
