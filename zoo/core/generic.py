"""Generic inference on any NumPyro program: NUTS, SVI (optax), MAP (optax).

These are the cross-checks of every custom kernel and the way a notebook user samples a program of their own:
``zoo.fit(my_program, {"X": X}, method="nuts")``. ``program_kwargs`` are the program's keyword arguments.
The InferenceData's dims are named after the program's plates (``site_dims``, deterministic sites too, as
``az.from_numpyro`` names them); an optimizer's ``objective`` trace has the dim ``iteration``.

Every generic fit carries a ``posterior_predictive`` group: the program's observed sites simulated at every draw
(``posterior_predictive``), so that ``az.plot_ppc`` works; NUTS's ``sample_stats`` holds ArviZ's names (``lp``,
``energy``, ``diverging``, ``step_size``, ``acceptance_rate``, ``n_steps``, ``tree_depth``), so that
``az.plot_energy`` and ``az.bfmi`` work. A fit of a user's program predicts (``predict_program``): its observed sites
simulated for new keyword arguments.
"""
from __future__ import annotations

import dataclasses
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

__all__ = ["GENERIC_METHODS", "run_nuts", "run_svi", "run_map", "site_dims", "posterior_predictive",
           "prior_predictive", "predict_program", "ProgramPrediction"]


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
    event_dim = int(getattr(site.get("fn"), "event_dim", 0))   # a deterministic site has no distribution
    names = [f"{site['name']}_dim_{k}" for k in range(value_ndim)]
    for frame in site.get("cond_indep_stack", ()):
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
    dims = {name: _plate_dims(site) for name, site in tr.items() if site["type"] in ("sample", "deterministic")}
    dims["objective"] = ["iteration"]
    return dims


class _Unobserved(numpyro.primitives.Messenger):
    """The program with its observed sites sampled instead (their ``obs`` ignored): what ``Predictive`` needs to
    simulate observations from a program that is called with its data. A simulation takes the observation's shape
    (a site outside any plate whose shape came from its ``obs`` alone is drawn that many times)."""

    def process_message(self, msg):
        if msg["type"] == "sample" and msg.get("is_observed"):
            obs_shape, fn_shape = tuple(jnp.shape(msg["value"])), tuple(msg["fn"].shape())
            extra = len(obs_shape) - len(fn_shape)
            if extra > 0 and obs_shape[extra:] == fn_shape:
                msg["kwargs"]["sample_shape"] = obs_shape[:extra]
            elif fn_shape != obs_shape and len(obs_shape) == len(fn_shape):
                msg["fn"] = msg["fn"].expand(obs_shape[:len(obs_shape) - msg["fn"].event_dim])
            msg["value"], msg["is_observed"] = None, False


def _observed_names(program, program_kwargs) -> list[str]:
    tr = _trace(program, program_kwargs, 0)
    return [name for name, site in tr.items() if site["type"] == "sample" and site["is_observed"]]


def posterior_predictive(program: Callable, program_kwargs: Mapping[str, Any], samples_by_chain: Mapping,
                         seed: int = 0, names: list[str] | None = None) -> dict[str, np.ndarray]:
    """The program's observed sites (or ``names``) simulated once at every draw: site -> (chain, draw, ...)
    (``numpyro.infer.Predictive`` with the latent sites substituted by the draws)."""
    names = list(names or _observed_names(program, program_kwargs))
    if not names:
        return {}
    n_chain, n_draw = np.shape(next(iter(samples_by_chain.values())))[:2]
    flat = {k: jnp.reshape(jnp.asarray(v), (n_chain * n_draw,) + tuple(np.shape(v)[2:]))
            for k, v in samples_by_chain.items()}
    predictive = numpyro.infer.Predictive(_Unobserved(program), posterior_samples=flat, return_sites=names)
    out = predictive(jax.random.fold_in(jax.random.PRNGKey(seed), 17), **program_kwargs)
    return {k: np.asarray(v).reshape((n_chain, n_draw) + np.shape(v)[1:]) for k, v in out.items()}


def prior_predictive(program: Callable, program_kwargs: Mapping[str, Any], num_samples: int = 500,
                     seed: int = 0) -> tuple[dict, dict]:
    """(prior, prior_predictive): ``num_samples`` draws of the program's latent sites from their priors and of its
    observed sites given them, each site -> (1, num_samples, ...) (one chain), for ``az.from_dict(prior=...,
    prior_predictive=...)`` or a fit's ``prior`` groups (``add_prior_predictive``)."""
    observed = _observed_names(program, program_kwargs)
    predictive = numpyro.infer.Predictive(_Unobserved(program), num_samples=num_samples)
    out = predictive(jax.random.fold_in(jax.random.PRNGKey(seed), 19), **program_kwargs)
    draws = {k: np.asarray(v)[None] for k, v in out.items()}
    latent = set(_latent_names(program, program_kwargs))
    return ({k: v for k, v in draws.items() if k in latent}, {k: v for k, v in draws.items() if k in observed})


@dataclasses.dataclass(frozen=True)
class ProgramPrediction:
    """What a fit of a user's program predicts: ``samples`` maps each observed site to its simulations
    (chain * draw, ...) at the fit's draws, for the new keyword arguments."""
    samples: dict

    def mean(self, site: str) -> np.ndarray:
        """The posterior predictive mean of ``site`` (its simulations averaged over draws)."""
        return np.asarray(self.samples[site]).mean(axis=0)


def predict_program(fit, data: Mapping[str, Any], max_draws: int | None = None, seed: int = 0) -> ProgramPrediction:
    """Posterior predictive simulations of a user program's observed sites for new keyword arguments ``data``
    (the ones of ``zoo.fit``'s ``data`` that change, e.g. new covariates with the observation set to None); at most
    ``max_draws`` draws (evenly spaced)."""
    if not isinstance(data, Mapping):
        raise ValueError("data: for a user program, pass a dict of the program's keyword arguments")
    post = fit.idata.posterior
    names = _latent_names(fit.spec.program, dict(fit.data)) if fit.data is not None else list(post.data_vars)
    samples = {k: np.asarray(post[k].values) for k in names if k in post}
    if max_draws is not None:
        n_draw = post.sizes["draw"]
        keep = np.unique(np.linspace(0, n_draw - 1, max(1, int(max_draws) // max(1, post.sizes["chain"]))).astype(int))
        samples = {k: v[:, keep] for k, v in samples.items()}
    kwargs = dict(fit.data or {}, **data)
    observed = _observed_names(fit.spec.program, dict(fit.data)) if fit.data is not None else None
    sims = posterior_predictive(fit.spec.program, kwargs, samples, seed, names=observed)
    return ProgramPrediction({k: v.reshape((-1,) + v.shape[2:]) for k, v in sims.items()})


def _latent_names(program: Callable, program_kwargs: Mapping[str, Any]) -> list[str]:
    tr = _trace(program, program_kwargs, 0)
    return [name for name, site in tr.items() if site["type"] == "sample" and not site["is_observed"]]


def _deterministic_draws(program, program_kwargs, samples_by_chain: Mapping[str, jnp.ndarray]) -> dict:
    """The program's deterministic sites (e.g. yakhnenko's topic_weight, the HDP's beta) at every draw of its
    latent sites: site -> (chain, draw, ...). An optimizer's guide draws the sample sites only; NUTS keeps these
    itself. They depend on the draws alone, so the key passed to the program is never used by them."""
    names = [name for name, site in _trace(program, program_kwargs, 0).items() if site["type"] == "deterministic"]
    if not names:
        return {}
    n_chain, n_draw = next(iter(samples_by_chain.values())).shape[:2]
    flat = {k: v.reshape((n_chain * n_draw,) + v.shape[2:]) for k, v in samples_by_chain.items()}
    out = numpyro.infer.Predictive(program, posterior_samples=flat, return_sites=names)(jax.random.PRNGKey(0),
                                                                                         **program_kwargs)
    return {k: np.asarray(v).reshape((n_chain, n_draw) + np.shape(v)[1:]) for k, v in out.items()}


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
    mcmc.run(jax.random.PRNGKey(seed), extra_fields=("accept_prob", "diverging", "num_steps", "potential_energy",
                                                     "energy", "adapt_state.step_size"), **program_kwargs)
    samples = mcmc.get_samples(group_by_chain=True)
    extra = mcmc.get_extra_fields(group_by_chain=True)
    n_steps = np.asarray(extra["num_steps"])
    # ArviZ's names (az.from_numpyro's): lp is the log joint density (minus the potential energy), energy the
    # Hamiltonian at each draw (az.plot_energy, az.bfmi), tree depth log2 of the leapfrog steps
    stats = {"lp": -np.asarray(extra["potential_energy"]), "energy": extra["energy"],
             "diverging": extra["diverging"], "step_size": extra["adapt_state.step_size"],
             "acceptance_rate": extra["accept_prob"], "n_steps": n_steps,
             "tree_depth": np.floor(np.log2(np.maximum(n_steps, 1))).astype(np.int64) + 1}
    idata = to_inference_data(
        samples, sample_stats=stats,
        log_likelihood=_loglik_by_chain(program, program_kwargs, samples),
        posterior_predictive=posterior_predictive(program, program_kwargs, samples, seed),
        observed_data=_observed(program, program_kwargs, seed), dims=site_dims(program, program_kwargs, seed),
        attrs={"method": "nuts"})
    return Fit(idata=idata, spec=spec, method="nuts", state=mcmc.last_state, headline=headline,
               predictor=predictor if spec is None or spec.id is not None else predict_program, data=data)


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
    (chain, step) in sample_stats, the pointwise log likelihood at every draw; the program's deterministic sites
    are added to the posterior at every draw, as NUTS keeps them (the same sites whatever the method)."""
    draws = {k: jnp.asarray(v) for k, v in posterior.items()}
    posterior = {**_deterministic_draws(program, program_kwargs, draws), **posterior}
    idata = to_inference_data(
        posterior, sample_stats={"objective": -losses[:, None, :]},
        log_likelihood=_loglik_by_chain(program, program_kwargs, draws),
        posterior_predictive=posterior_predictive(program, program_kwargs, draws, seed),
        observed_data=_observed(program, program_kwargs, seed), dims=site_dims(program, program_kwargs, seed),
        attrs={"method": method})
    return Fit(idata=idata, spec=spec, method=method, state=state, headline=headline,
               predictor=predictor if spec is None or spec.id is not None else predict_program, data=data)


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
