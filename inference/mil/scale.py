"""Z-collapsed scale move of (beta, delta2) for the sparse kernel probit models (Kueck 2004; not in the thesis).

Why (ring60 diagnosis, ``MILConfig.scale_tries``): the posterior sits where the groups are nearly separated,
so the likelihood is almost flat along the scale of f = Psi_a beta_a and only delta2's heavy-tailed prior
bounds it (E[log delta2] ~ 6 on ring60). The blocked sweep moves that scale in small steps only: Z | f pins
the residuals z - f to unit variance (a move of (Z, beta) together, the PX-DA ``scale_move``, has
g ~ 1 +- 1/sqrt(2N)), and delta2 | beta follows beta's scale (log delta2 moves ~ (K/2)^(-1/2) per sweep). So
log delta2, ||beta|| and the scale of Z random-walk together (lag-1 autocorrelations 0.88 / 0.96 / 0.99).

The move: with Z integrated out and gamma fixed, the target is

    pi(beta_a, delta2) ∝ prod_g p(obs_g | f) N(beta_a; 0, delta2 A_aa^{-1}) p(delta2),   f = Psi_a beta_a,

and the group (beta_a, delta2) -> (g beta_a, g^2 delta2), g > 0, keeps the prior's quadratic form
beta' A beta / delta2. Proposing log g ~ N(0, step^2) (symmetric on the group, Haar measure dg / g) and
accepting with (Liu & Sabatti 2000's generalized Metropolis, Jacobian g^(K + 2))

    pi(g beta, g^2 delta2) g^(K + 2) / pi(beta, delta2) = [p(obs | g f) / p(obs | f)] p(g^2 delta2) / p(delta2) g^2

(the g^-K of the normal's normalizer cancels K of the Jacobian) leaves pi invariant, hence, followed by
Z | beta (the sweep's Z step), the joint. Each try costs one evaluation of the group likelihoods, O(N).
"""
from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
from jax import lax

from zoo.inference.mil.collapsed_beta import CollapsedData, collapsed_group_log_likelihood

__all__ = ["scale_log_ratio", "collapsed_scale_move", "SCALE_STEP"]

#: default random-walk step of log g (log delta2 moves twice as far); acceptance ~0.43 on ring60 and musk1_6bags
SCALE_STEP = 2.0


def scale_log_ratio(loglik_new, loglik_old, log_g, delta2, delta2_log_prior: Callable) -> jnp.ndarray:
    """log of the acceptance ratio of (beta, delta2) -> (g beta, g^2 delta2) with Z integrated out: the
    likelihood ratio, the prior ratio of delta2 and the Jacobian's g^2 (module docstring)."""
    d2_new = delta2 * jnp.exp(2.0 * log_g)
    return (loglik_new - loglik_old + delta2_log_prior(d2_new) - delta2_log_prior(delta2) + 2.0 * log_g)


def collapsed_scale_move(key: jax.Array, beta: jnp.ndarray, delta2: jnp.ndarray, f: jnp.ndarray,
                         data: CollapsedData, delta2_log_prior: Callable, tries: int, step=SCALE_STEP):
    """``tries`` random-walk Metropolis tries of the scale g of (beta, delta2) with Z integrated out.

    beta (K_max,) in slot order (scaled as a whole: zeros stay zeros), delta2 (), f (N,) = Psi_a beta_a.
    Returns (beta, delta2, f, number of accepted tries). A non-finite ratio is a rejection."""
    def one(carry, k):
        g_total, d2, loglik = carry
        k_prop, k_acc = jax.random.split(k)
        log_g = step * jax.random.normal(k_prop, dtype=f.dtype)
        new_total = g_total * jnp.exp(log_g)
        loglik_new = jnp.sum(collapsed_group_log_likelihood(new_total * f, data))
        log_ratio = scale_log_ratio(loglik_new, loglik, log_g, d2, delta2_log_prior)
        take = jnp.log(jax.random.uniform(k_acc, dtype=f.dtype)) < jnp.where(jnp.isfinite(log_ratio), log_ratio,
                                                                               -jnp.inf)
        return (jnp.where(take, new_total, g_total), jnp.where(take, d2 * jnp.exp(2.0 * log_g), d2),
                jnp.where(take, loglik_new, loglik)), take.astype(jnp.int32)

    loglik0 = jnp.sum(collapsed_group_log_likelihood(f, data))
    start = (jnp.ones((), f.dtype), jnp.asarray(delta2, f.dtype), loglik0)
    (g, delta2, _), taken = lax.scan(one, start, jax.random.split(key, tries))
    return g * beta, delta2, g * f, jnp.sum(taken)
