"""``zoo.kernel``: a model's custom MCMC sampler as a ``numpyro.infer.mcmc.MCMCKernel`` that users run themselves.

>>> spec = zoo.model("kueck04.hybrid")
>>> mcmc = numpyro.infer.MCMC(zoo.kernel(spec, bags), num_warmup=500, num_samples=1000, num_chains=2,
...                           chain_method="vectorized")
>>> mcmc.run(jax.random.PRNGKey(0)); idata = az.from_numpyro(mcmc)

``az.from_numpyro`` reads ``mcmc.sampler.model`` (the NumPyro program, traced for dims and observations), the
draws (``mcmc.get_samples``) and the extra fields (sample_stats). The kernels here give ``model``: the model's
NumPyro program with its keyword arguments for the data bound. ArviZ computes the log likelihood from that
program with every latent site substituted by a draw; the zoo's samplers integrate sites out (kueck04: tau and z;
gustafson07: mu, Sigma), so their draws cannot give the program's log likelihood, and ``model`` hides the
program's observed sites from ArviZ: ``az.from_numpyro(mcmc)`` then builds posterior and sample_stats (the
``extra_fields`` asked of ``mcmc.run``) and no log_likelihood or observed_data group. ``zoo.fit`` stores the
samplers' own pointwise log likelihoods.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Mapping

import numpy as np
import numpyro
from numpyro.infer import NUTS
from numpyro.infer.mcmc import MCMCKernel

from zoo.inference.driver import KernelMCMC
from zoo.core.registry import ModelSpec

__all__ = ["kernel", "ZooKernel", "KERNEL_BUILDERS"]


def _hide_observed(program: Callable) -> Callable:
    """``program`` with its observed sites hidden from handlers above it (``numpyro.handlers.block``)."""
    return numpyro.handlers.block(program, hide_fn=lambda site: site.get("is_observed", False))


class ZooKernel(KernelMCMC):
    """``driver.KernelMCMC`` with what ``az.from_numpyro`` reads: ``model`` (the NumPyro program, keyword
    arguments bound, observed sites hidden: see the module doc). ``program`` is the bound program itself."""

    def __init__(self, build_kernel: Callable, config, problem, observe: Callable, program: Callable):
        super().__init__(build_kernel, config, problem, observe)
        self.program = program

    @property
    def model(self) -> Callable:
        """The bound program with its observed sites hidden (what ``az.from_numpyro`` traces)."""
        return _hide_observed(self.program)


def _options(given: Mapping[str, Any], allowed: tuple, method: str) -> dict:
    """A copy of the options ``given``; ValueError listing the names not ``allowed`` for ``method``."""
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise ValueError(f"{method}: unknown option(s) {', '.join(unknown)}; options: {', '.join(allowed)}")
    return dict(given)


def _kueck04(z_sampler: str, allowed: tuple) -> Callable:
    """The builder of kueck04's blocked Gibbs with Z sampler ``z_sampler`` ("exact" or "mh"), options ``allowed``."""
    def build(spec: ModelSpec, data, method: str, options: Mapping[str, Any]) -> MCMCKernel:
        """ZooKernel of ``build_mil_kernel`` on Bags ``data``: draws gamma (M,), beta (M,), delta2, n_active
        [, z (N,) with store_z]; extra fields ``MILGibbs.stat_fields``."""
        from zoo.inference.mil.gibbs import build_mil_kernel, mil_position
        from zoo.papers import kueck04
        opts = _options(options, allowed, method)
        prep = kueck04.prepare(spec, data)
        config = kueck04.mil_config(spec, prep, z_sampler, bool(opts.pop("store_z", False)))
        if "rescale" in opts:
            opts["rescale"] = bool(opts["rescale"])
        if opts.get("beta_move", "gibbs") not in ("gibbs", "laplace"):
            raise ValueError(f"beta_move: {opts['beta_move']!r} is not 'gibbs' or 'laplace'")
        tries = opts.get("laplace_tries", 0)
        if isinstance(tries, bool) or not isinstance(tries, (int, np.integer)) or tries < 0:
            raise ValueError(f"laplace_tries: expected an int >= 0, got {tries!r}")
        config = config._replace(**opts)
        program = functools.partial(spec.program, **kueck04.program_kwargs(spec, prep))
        return ZooKernel(build_mil_kernel, config, kueck04.mil_problem(spec, prep), mil_position, program)
    return build


_GUSTAFSON_OPTIONS = ("delta_omega_update", "flip_scan", "flips_per_sweep", "joint_moves", "omega_steps",
                      "omega_dof")


def _gustafson07(spec: ModelSpec, data, method: str, options: Mapping[str, Any]) -> MCMCKernel:
    """ZooKernel of ``build_gibbs_kernel`` on AnnotatedRegions ``data`` (features standardized as ``zoo.fit``
    does): draws Y (n,), M (K+1, p), n_relevant (K+1,), label_proba (n, K+1), unit_loglik (n,), acceptances,
    and for CVFS alpha (p,), delta (p,), Omega (p, p)."""
    from zoo.inference.label_feature.gibbs import Collect, build_gibbs_kernel, collect_names
    from zoo.papers import gustafson07
    opts = _options(options, _GUSTAFSON_OPTIONS, method)
    update = opts.pop("delta_omega_update", "exact")
    if update not in ("exact", "paper"):
        raise ValueError(f"delta_omega_update: expected 'exact' or 'paper', got {update!r}")
    variant = spec.options["variant"]
    data = gustafson07._check_regions(data, variant)
    arrays = gustafson07.region_arrays(data)
    problem = gustafson07.region_problem(spec, arrays, exact_delta_omega=update == "exact", **opts)
    # the program with the spec's priors, so that az.from_numpyro's prior and the kernel's target agree
    program = functools.partial(spec.program, **gustafson07.program_kwargs(spec, arrays))
    return ZooKernel(build_gibbs_kernel, variant, problem, Collect(variant, collect_names(variant)), program)


def _generic_nuts(spec: ModelSpec, data, method: str, options: Mapping[str, Any]) -> MCMCKernel:
    """NumPyro's NUTS on the model's program with its keyword arguments for ``data`` bound."""
    from zoo.core.registry import get_model
    opts = _options(options, ("target_accept_prob",), method)
    kwargs = get_model(spec.id).program_args(spec, data)
    return NUTS(functools.partial(spec.program, **kwargs), **opts)


_KUECK_OPTIONS = ("store_z", "rescale")
#: (model id prefix, method) -> builder(spec, data, method, options) -> MCMCKernel
KERNEL_BUILDERS: dict[tuple[str, str], Callable] = {
    ("kueck04", "blocked_gibbs"): _kueck04("exact", _KUECK_OPTIONS + ("beta_move", "laplace_tries")),
    ("kueck04", "blocked_gibbs_mh"): _kueck04("mh", _KUECK_OPTIONS),
    ("gustafson07", "collapsed_gibbs"): _gustafson07,
}


def _builder(spec: ModelSpec, name: str) -> Callable:
    """The kernel builder of method ``name`` of ``spec``; ValueError for an unknown method or one that is not MCMC
    (EM, variational: every MCMC method of the registry has a builder in KERNEL_BUILDERS or is generic NUTS)."""
    from zoo.catalog import ensure_loaded
    from zoo.core.registry import get_model
    ensure_loaded()
    entry = get_model(spec.id)
    if name not in entry.methods:
        raise ValueError(f"method: {name!r} is not registered for {spec.id!r}; available: {', '.join(entry.methods)}")
    if name == "nuts" and entry.methods[name].generic:
        return _generic_nuts
    builder = KERNEL_BUILDERS.get((spec.id.split(".")[0], name))
    if builder is None:
        kind = entry.methods[name].kind or "an optimizer or variational method"
        raise ValueError(f"method: {name!r} of {spec.id!r} is not MCMC ({kind}), so it has no MCMCKernel; "
                         f"MCMC methods: {', '.join(_mcmc_methods(spec.id, entry.methods)) or '(none)'}")
    return builder


def _mcmc_methods(model_id: str, methods: Mapping[str, Any]) -> list[str]:
    prefix = model_id.split(".")[0]
    return [m for m in methods if (prefix, m) in KERNEL_BUILDERS or (m == "nuts" and methods[m].generic)]


def kernel(spec: ModelSpec, data, method: str | None = None, **options) -> MCMCKernel:
    """The MCMC sampler ``method`` (None: the model's default) of ``spec`` on ``data`` as a NumPyro MCMCKernel.

    Run it with ``numpyro.infer.MCMC(kernel, num_warmup=..., num_samples=..., num_chains=...)``; ``mcmc.run(key)``
    takes no model arguments (the data are in the kernel). ``options`` are the sampler's settings (kueck04:
    store_z, rescale, beta_move, laplace_tries; gustafson07: delta_omega_update, flip_scan, flips_per_sweep,
    joint_moves, omega_steps, omega_dof; generic ``nuts``: target_accept_prob). Draws are the sampler's
    positions (kueck04: gamma (M,), beta (M,), delta2, n_active [, z (N,)]; gustafson07: Y (n,), M (K+1, p), ...).
    ValueError for a user program (spec not a ModelSpec of the registry), a method that is not MCMC (EM,
    variational) or an MCMC method without a kernel here."""
    if not isinstance(spec, ModelSpec) or spec.id is None:
        raise ValueError(f"spec: expected a ModelSpec from zoo.model(...), got {type(spec).__name__}; for a "
                         f"program of your own use numpyro.infer.NUTS(program) directly")
    from zoo.catalog import ensure_loaded
    from zoo.core.registry import get_model
    ensure_loaded()
    name = method or get_model(spec.id).default_method
    return _builder(spec, name)(spec, data, name, options)

