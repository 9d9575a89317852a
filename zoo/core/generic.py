"""Generic inference on any NumPyro program: NUTS, SVI (optax), MAP (optax).

These are the cross-checks of every custom kernel and the way a notebook user samples a program of their own:
``zoo.fit(my_program, {"X": X}, method="nuts")``. ``program_kwargs`` are the program's keyword arguments.
The InferenceData's dims are named after the program's plates (``site_dims``); an optimizer's ``objective``
trace has the dim ``iteration``.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import optax
from numpyro.infer import MCMC, NUTS, SVI, Trace_ELBO
from numpyro.infer import autoguide
from numpyro.infer.util import log_likelihood as _numpyro_log_likelihood

from zoo.core.fit import Fit
from zoo.core.idata import to_inference_data

__all__ = ["GENERIC_METHODS", "run_nuts", "run_svi", "run_map", "site_dims"]


def _trace(program: Callable, program_kwargs: Mapping[str, Any], seed: int):
    # latent values from init_to_uniform, never from the prior: improper priors cannot be sampled
    seeded = numpyro.handlers.seed(program, seed)
    substituted = numpyro.handlers.substitute(seeded, substitute_fn=numpyro.infer.init_to_uniform)
    return numpyro.handlers.trace(substituted).get_trace(**program_kwargs)


def _observed(program: Callable, program_kwargs: Mapping[str, Any], seed: int) -> dict[str, np.ndarray]:
    tr = _trace(program, program_kwargs, seed)
    return {name: np.asarray(site["value"]) for name, site in tr.items()
            if site["type"] == "sample" and site["is_observed"]}


def _plate_dims(site: Mapping[str, Any]) -> list[str]:
    """The dim names of one traced sample site's value (its shape, without chain and draw): each batch dim that a
    plate made is named after the plate, every other dim (event dims, batch dims of no plate) ``<site>_dim_k``."""
    value_ndim = int(jnp.ndim(site["value"]))
    event_dim = int(getattr(site["fn"], "event_dim", 0))
    names = [f"{site['name']}_dim_{k}" for k in range(value_ndim)]
    for frame in site["cond_indep_stack"]:
        position = value_ndim - event_dim + frame.dim   # frame.dim counts from the right of the batch shape
        if frame.dim is not None and 0 <= position < value_ndim - event_dim:
            names[position] = frame.name
    return names


def site_dims(program: Callable, program_kwargs: Mapping[str, Any], seed: int = 0) -> dict[str, list[str]]:
    """``dims=`` for ``to_inference_data``: every sample site (latent and observed) of one trace of the program
    mapped to its dim names after the plates (``_plate_dims``). A latent site's list names its value's dims
    (posterior); an observed site's list names its value's dims, batch dims first: its log likelihood (batch shape)
    takes the leading names (ArviZ drops the rest) and its observed data all of them; ``objective`` (an optimizer's
    trace, shape (chain, 1, iteration)) is named ``iteration``."""
    tr = _trace(program, program_kwargs, seed)
    dims = {name: _plate_dims(site) for name, site in tr.items() if site["type"] == "sample"}
    dims["objective"] = ["iteration"]
    return dims


def _latent_names(program: Callable, program_kwargs: Mapping[str, Any]) -> list[str]:
    tr = _trace(program, program_kwargs, 0)
    return [name for name, site in tr.items() if site["type"] == "sample" and not site["is_observed"]]


def _loglik_by_chain(program, program_kwargs, samples_by_chain: Mapping[str, jnp.ndarray]) -> dict:
    n_chain, n_draw = next(iter(samples_by_chain.values())).shape[:2]
    flat = {k: v.reshape((n_chain * n_draw,) + v.shape[2:]) for k, v in samples_by_chain.items()}
    ll = _numpyro_log_likelihood(program, flat, **program_kwargs)
    return {k: np.asarray(v).reshape((n_chain, n_draw) + v.shape[1:]) for k, v in ll.items()}


def run_nuts(program: Callable, program_kwargs: Mapping[str, Any], *, seed: int = 0, num_chains: int = 4,
             num_warmup: int = 500, num_samples: int = 500, chain_method: str | Callable = "vectorized",
             progress_bar: bool = True, target_accept_prob: float = 0.8, spec=None, predictor=None,
             headline=None, data=None) -> Fit:
    """NUTS on the program's continuous latent sites (discrete ones must be summed out in the program). Four
    chains by default (the Stan / PyMC / NumPyro convention: r-hat needs several chains), each started from its own
    ``init_to_uniform`` draw (dispersed in the unconstrained space)."""
    if isinstance(num_samples, str):
        raise ValueError("num_samples: 'auto' is an option of the zoo's own samplers (e.g. kueck04's blocked_gibbs); "
                         "NUTS needs a number of samples")
    kernel = NUTS(program, target_accept_prob=target_accept_prob)
    mcmc = MCMC(kernel, num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains,
                chain_method=chain_method, progress_bar=progress_bar)
    mcmc.run(jax.random.PRNGKey(seed), extra_fields=("accept_prob", "diverging", "num_steps"), **program_kwargs)
    samples = mcmc.get_samples(group_by_chain=True)
    extra = mcmc.get_extra_fields(group_by_chain=True)
    idata = to_inference_data(
        samples,
        sample_stats={"acceptance_rate": extra["accept_prob"], "diverging": extra["diverging"],
                      "n_steps": extra["num_steps"]},
        log_likelihood=_loglik_by_chain(program, program_kwargs, samples),
        observed_data=_observed(program, program_kwargs, seed), dims=site_dims(program, program_kwargs, seed),
        attrs={"method": "nuts"})
    return Fit(idata=idata, spec=spec, method="nuts", state=mcmc.last_state, headline=headline,
               predictor=predictor, data=data)


def _optimize(program, program_kwargs, guide_factory, *, seed, num_chains, num_steps, learning_rate,
              progress_bar):
    # Adam with a cosine decay to 1% of the initial rate: stochastic ELBO steps settle instead of jittering
    optimizer = optax.adam(optax.cosine_decay_schedule(learning_rate, num_steps, alpha=0.01))
    params_all, losses_all, guides = [], [], []
    for chain in range(num_chains):
        guide = guide_factory(program)
        svi = SVI(program, guide, optimizer, loss=Trace_ELBO())
        result = svi.run(jax.random.PRNGKey(seed + 1000 * chain), num_steps, progress_bar=progress_bar,
                         **program_kwargs)
        params_all.append(result.params)
        losses_all.append(np.asarray(result.losses))
        guides.append(guide)
    return guides, params_all, np.stack(losses_all)


def _optimizer_fit(program, program_kwargs, posterior, losses, method, state, *, seed, spec, predictor, headline,
                   data) -> Fit:
    """The Fit of an optimizer (MAP, SVI): ``posterior`` site -> (chain, draw, ...), the objective -loss per chain
    (chain, step) in sample_stats, the pointwise log likelihood at every draw."""
    idata = to_inference_data(
        posterior, sample_stats={"objective": -losses[:, None, :]},
        log_likelihood=_loglik_by_chain(program, program_kwargs, {k: jnp.asarray(v) for k, v in posterior.items()}),
        observed_data=_observed(program, program_kwargs, seed), dims=site_dims(program, program_kwargs, seed),
        attrs={"method": method})
    return Fit(idata=idata, spec=spec, method=method, state=state, headline=headline, predictor=predictor,
               data=data)


def run_map(program: Callable, program_kwargs: Mapping[str, Any], *, seed: int = 0, num_chains: int = 1,
            num_steps: int = 10000, learning_rate: float = 5e-2, progress_bar: bool = True, spec=None,
            predictor=None, headline=None, data=None) -> Fit:
    """MAP by optax (Adam) on the program's unconstrained latent sites; each chain is a random restart.
    The defaults (10,000 steps from a rate of 0.05, decaying) converge on the README's program, where 3,000 steps
    from 0.01 stopped with ``mu`` at 1.3 instead of 5.76; ``fit.diagnose()`` judges the objective trace."""
    guides, params_all, losses = _optimize(program, program_kwargs,
                                           lambda p: autoguide.AutoDelta(p, init_loc_fn=numpyro.infer.init_to_uniform),
                                           seed=seed, num_chains=num_chains, num_steps=num_steps,
                                           learning_rate=learning_rate, progress_bar=progress_bar)
    draws = [guide.median(params) for guide, params in zip(guides, params_all)]
    posterior = {k: np.stack([np.asarray(d[k]) for d in draws])[:, None] for k in draws[0]}
    return _optimizer_fit(program, program_kwargs, posterior, losses, "map", draws, seed=seed, spec=spec,
                          predictor=predictor, headline=headline, data=data)


def run_svi(program: Callable, program_kwargs: Mapping[str, Any], *, seed: int = 0, num_chains: int = 1,
            num_steps: int = 10000, learning_rate: float = 5e-2, num_samples: int = 500,
            guide: str = "normal", progress_bar: bool = True, spec=None, predictor=None, headline=None,
            data=None) -> Fit:
    """SVI with an optax optimizer and an automatic guide (``guide="normal"`` diagonal or ``"mvn"``). Defaults as
    ``run_map`` (long enough for the README's program; ``fit.diagnose()`` judges the ELBO trace)."""
    factories = {"normal": autoguide.AutoNormal, "mvn": autoguide.AutoMultivariateNormal}
    if guide not in factories:
        raise ValueError(f"guide: expected one of {sorted(factories)}, got {guide!r}")
    guides, params_all, losses = _optimize(program, program_kwargs, factories[guide], seed=seed,
                                           num_chains=num_chains, num_steps=num_steps,
                                           learning_rate=learning_rate, progress_bar=progress_bar)
    draws = [g.sample_posterior(jax.random.PRNGKey(seed + c), p, sample_shape=(num_samples,))
             for c, (g, p) in enumerate(zip(guides, params_all))]
    names = _latent_names(program, program_kwargs)
    posterior = {k: np.stack([np.asarray(d[k]) for d in draws]) for k in names if k in draws[0]}
    return _optimizer_fit(program, program_kwargs, posterior, losses, "svi", params_all, seed=seed, spec=spec,
                          predictor=predictor, headline=headline, data=data)


GENERIC_METHODS = {"nuts": run_nuts, "svi": run_svi, "map": run_map}
#: what each generic method's ``posterior`` holds
GENERIC_KINDS = {"nuts": "mcmc", "svi": "variational", "map": "point estimate"}
