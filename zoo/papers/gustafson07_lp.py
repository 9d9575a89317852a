"""``lp`` of the gustafson07 collapsed sampler's draws: the log joint density of each draw under the program the
sampler targets, the FULL / FS / CVFS program (``zoo.models.feature_selection.feature_selection_model``) with every
concept's (mu_k, Sigma_k) integrated out (Appendix eq. 10):

    lp = log p(Y, M, alpha, delta, Omega, X)
       = [every site of the program but mu, Sigma and X, at the draw]  (label prior over S_i, coverage factor,
         M's prior, alpha's, M_garbage, (delta, Omega)'s: the spec's priors, read from the program's own trace)
       + log p(X | Y, M, delta, Omega) with (mu, Sigma) integrated out  (``collapsed_log_density``).

FULL and FS fix (delta, Omega) at the sampler's values (the training sample's mean and covariance, Sec. 4).
``zoo.fit``: computed after sampling from the stored draws (one compiled pass over them); ``zoo.kernel``: per step
inside the compiled chain (``kernel_log_joint``, collected as NumPyro's ``potential_energy``). Neither touches the
sampler's moves or random stream.
"""
from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from numpyro import handlers

from zoo.models.feature_selection import collapsed_log_density, concept_masks

__all__ = ["collapsed_log_joint", "draw_log_joint", "kernel_log_joint"]

#: the program's sites that the sampler integrates out (mu, Sigma) or replaces by the collapsed term (X)
_COLLAPSED = ("mu", "Sigma", "X")


def draw_log_joint(program, variant: str, concept_prior, delta0, Omega0, draw: dict):
    """lp of one draw (a dict: Y (n,), M (p,) FS / (K, p) CVFS, alpha, delta, Omega (CVFS)) under the collapsed
    program; ``program`` is ``spec.program`` with its data keywords bound (``program_kwargs``), X among them."""
    X = program.keywords["X"]
    n_concepts, p = program.keywords["allowed"].shape[1], X.shape[1]
    # mu and Sigma take placeholder values: the sampler integrates them out, and their terms are left out below
    values = dict(draw, mu=jnp.zeros((n_concepts, p)), Sigma=jnp.broadcast_to(jnp.eye(p), (n_concepts, p, p)))
    trace = handlers.trace(handlers.substitute(handlers.seed(program, 0), data=values)).get_trace()
    total = sum(jnp.sum(site["fn"].log_prob(site["value"])) for name, site in trace.items()
                if site["type"] == "sample" and name not in _COLLAPSED)
    delta = draw["delta"] if variant == "cvfs" else delta0
    Omega = draw["Omega"] if variant == "cvfs" else Omega0
    masks = concept_masks(variant, draw.get("M"), n_concepts, p)
    return total + collapsed_log_density(draw["Y"], masks, delta, Omega, X, concept_prior)


def _state_sites(variant: str) -> list[str]:
    """The draw's sites that enter lp (the sampler's state; the rest of a draw is derived from it)."""
    return ["Y", "M", "alpha", "delta", "Omega"] if variant == "cvfs" else ["Y", "M"] if variant == "fs" else ["Y"]


def kernel_log_joint(program, variant: str, problem, draw: dict, info) -> jnp.ndarray:
    """lp of one step's draw of ``zoo.kernel``'s chain (``ProgramKernel``'s ``log_joint``): ``draw_log_joint``
    with the problem's concept prior and fixed (delta, Omega) (a ``RegionProblem``); ``draw`` as ``zoo.fit``
    stores it (``FitShapes``); ``info`` unused (lp is a function of the state)."""
    state = {k: draw[k] for k in _state_sites(variant)}
    return draw_log_joint(program, variant, problem.concept_prior, problem.delta0, problem.Omega0, state)


def collapsed_log_joint(program, variant: str, concept_prior, delta0, Omega0, draws: dict) -> np.ndarray:
    """(chain, draw) lp of every stored draw (``draws``: arrays with leading (chain, draw)); see the module
    docstring. One compiled function mapped over the draws."""
    names = _state_sites(variant)
    leading = np.asarray(draws["Y"]).shape[:2]
    flat = {k: jnp.asarray(np.asarray(draws[k]).reshape((-1,) + np.asarray(draws[k]).shape[2:])) for k in names}
    constants = (concept_prior, jnp.asarray(delta0), jnp.asarray(Omega0))
    split = _split_program(program)
    if split is None:                      # an option jax cannot hash: compiled for this call only
        one = partial(draw_log_joint, program, variant, *constants)
        lp = jax.jit(lambda d: jax.lax.map(one, d))(flat)
    else:
        lp = _log_joint_of_draws(*split, variant, *constants, flat)
    return np.asarray(lp, dtype=np.float64).reshape(leading)


def _split_program(program):
    """(function, options, data) of a ``functools.partial`` program: its array and dict keywords (the data and the
    priors, pytrees) apart from the rest (options such as the variant, hashable), so the compiled pass over the draws
    is reused by every fit of the same shapes; None when an option is not hashable or an argument positional."""
    if program.args:
        return None
    data = {k: v for k, v in program.keywords.items() if isinstance(v, (np.ndarray, jnp.ndarray, dict))}
    options = tuple(sorted((k, v) for k, v in program.keywords.items() if k not in data))
    try:
        hash(options)
    except TypeError:
        return None
    return program.func, options, data


@partial(jax.jit, static_argnames=("func", "options", "variant"))
def _log_joint_of_draws(func, options, data, variant, concept_prior, delta0, Omega0, flat):
    program = partial(func, **dict(options), **data)
    return jax.lax.map(partial(draw_log_joint, program, variant, concept_prior, delta0, Omega0), flat)
