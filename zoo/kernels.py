"""``zoo.kernel``: a model's custom MCMC sampler as a ``numpyro.infer.mcmc.MCMCKernel`` that users run themselves.

>>> import arviz as az, jax, numpy as np, numpyro, zoo
>>> from zoo.data import Bags
>>> X = np.random.default_rng(0).normal(size=(40, 2)) + np.repeat([0.0, 2.0], 20)[:, None]
>>> bags = Bags(X=X, bag_ids=np.repeat(np.arange(10), 4), bag_labels=np.repeat([0, 1], 5))
>>> spec = zoo.model("kueck04.constraint")
>>> mcmc = numpyro.infer.MCMC(zoo.kernel(spec, bags), num_warmup=50, num_samples=100, num_chains=2,
...                           chain_method="vectorized", progress_bar=False)
>>> mcmc.run(jax.random.PRNGKey(0)); idata = az.from_numpyro(mcmc)
>>> idata.posterior["delta2"].shape                               # (chain, draw)
(2, 100)

Each MCMC method of a paper registers its kernel builder with the method (``register_method(..., kernel=...)``,
``zoo/papers/<paper>.py``); this module looks it up. ``az.from_numpyro`` reads ``mcmc.sampler.model`` (the NumPyro
program, traced for dims and observations), the draws (``mcmc.get_samples``) and the extra fields (sample_stats).
The kernels (``zoo.inference.driver.ProgramKernel``) give ``model``: the model's
NumPyro program with its keyword arguments for the data bound. ArviZ computes the log likelihood from that
program with every latent site substituted by a draw; the zoo's samplers integrate sites out (kueck04: tau and z;
gustafson07: mu, Sigma), so their draws cannot give the program's log likelihood, and ``model`` hides the
program's observed sites from ArviZ: ``az.from_numpyro(mcmc)`` then builds posterior and sample_stats (the
``extra_fields`` asked of ``mcmc.run``) and no log_likelihood or observed_data group. ``zoo.fit`` stores the
samplers' own pointwise log likelihoods. Every step's log joint density of its draw (the sites the sampler
integrates out integrated out, as ``zoo.fit`` stores it) is collected by default as NumPyro's
``potential_energy``, so ``az.from_numpyro(mcmc).sample_stats["lp"]`` is there without asking.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Mapping

import numpy as np
from numpyro.infer import NUTS
from numpyro.infer.mcmc import MCMCKernel

from zoo.catalog import ensure_loaded
from zoo.core.options import check_known
from zoo.core.registry import get_model
from zoo.core.spec import ModelSpec
from zoo.inference.driver import ProgramKernel

__all__ = ["kernel", "ZooKernel", "summary"]

#: the kernels ``zoo.kernel`` returns for the zoo's own samplers (the name this module exported before issue 28)
ZooKernel = ProgramKernel


def _generic_nuts(spec: ModelSpec, data, method: str, options: Mapping[str, Any]) -> MCMCKernel:
    """NumPyro's NUTS on the model's program with its keyword arguments for ``data`` bound."""
    check_known(options, ("target_accept_prob",), f"the {method!r} kernel")
    kwargs = get_model(spec.id).program_args(spec, data)
    return NUTS(functools.partial(spec.program, **kwargs), **options)


def _builder(spec: ModelSpec, name: str) -> Callable:
    """The kernel builder of method ``name`` of ``spec``; ValueError for an unknown method or one that is not MCMC
    (EM, variational: every MCMC method registers a kernel builder or is the generic NUTS)."""
    entry = get_model(spec.id)
    if name not in entry.methods:
        raise ValueError(f"method: {name!r} is not registered for {spec.id!r}; available: {', '.join(entry.methods)}")
    method = entry.methods[name]
    if name == "nuts" and method.generic:
        return _generic_nuts
    if method.kernel is None:
        kind = method.kind or "an optimizer or variational method"
        mcmc = [m for m, meth in entry.methods.items() if meth.kernel is not None or (m == "nuts" and meth.generic)]
        raise ValueError(f"method: {name!r} of {spec.id!r} is not MCMC ({kind}), so it has no MCMCKernel; "
                         f"MCMC methods: {', '.join(mcmc) or '(none)'}")
    return method.kernel


def kernel(spec: ModelSpec, data, method: str | None = None, **options) -> MCMCKernel:
    """The MCMC sampler ``method`` (None: the model's default) of ``spec`` on ``data`` as a NumPyro MCMCKernel.

    Run it with ``numpyro.infer.MCMC(kernel, num_warmup=..., num_samples=..., num_chains=...)``; ``mcmc.run(key)``
    takes no model arguments (the data are in the kernel). ``options`` are the sampler's settings (kueck04:
    store_z, rescale, beta_move, laplace_tries; gustafson07: delta_omega_update, flip_scan, flips_per_sweep,
    joint_moves, omega_steps, omega_dof, column_moves, marginal_refresh; generic ``nuts``: target_accept_prob).
    Draws are the sampler's positions with the shapes ``zoo.fit`` stores (kueck04: gamma (M,), beta (M,), delta2,
    n_active [, z (N,)];
    gustafson07: Y (n,), M (p,) in FS and (K, p) in CVFS, ...). The sampler's per-step information is collected by
    its plain name: ``mcmc.run(key, extra_fields=("n_active",))`` (``"info.n_active"`` still works);
    ``summary(mcmc, spec)`` prints the model's headline sites, as ``fit.summary()`` does.
    ValueError for a user program (spec not a ModelSpec of the registry), a method that is not MCMC (EM,
    variational) or an MCMC method without a kernel here."""
    if not isinstance(spec, ModelSpec) or spec.id is None:
        raise ValueError(f"spec: expected a ModelSpec from zoo.model(...), got {type(spec).__name__}; for a "
                         f"program of your own use numpyro.infer.NUTS(program) directly")
    ensure_loaded()
    name = method or get_model(spec.id).default_method
    return _builder(spec, name)(spec, data, name, options)



def summary(mcmc, spec: ModelSpec, var_names=None, prob: float = 0.9) -> None:
    """Print NumPyro's summary (mean, sd, interval, n_eff, r_hat) of the model's headline sites (or ``var_names``)
    of a finished ``numpyro.infer.MCMC`` run of a ``zoo.kernel``: ``mcmc.print_summary()`` prints every site, one
    row per element (all M basis weights of kueck04), where ``fit.summary()`` shows the headline."""
    from numpyro.diagnostics import print_summary

    samples = mcmc.get_samples(group_by_chain=True)
    names = list(var_names or get_model(spec.id).headline or samples)
    missing = [n for n in names if n not in samples]
    if missing:
        raise ValueError(f"var_names: {missing} not among the run's sites {sorted(samples)}")
    # NumPyro's summary computes intervals by subtraction, which booleans do not support
    print_summary({n: np.asarray(samples[n], dtype=np.float64) for n in names}, prob=prob, group_by_chain=True)
