"""Sparse kernel probit models for multiple-instance learning (Kueck 2004, Ch. 3; MODELS.md Sec. 5).

Pr(y = 1 | x) = Phi(f(x)), f(x) = sum_i gamma_i beta_i K(x, x_i): one radial basis function per training point,
gamma selects the active ones. The NumPyro program below is the reference joint density; the blocked Gibbs
sampler (``zoo.inference.mil.gibbs``) is tested against it.

Sites (N training points, G groups):
  tau ~ Beta(a, b);  gamma (N,) ~ Bernoulli(tau);  delta2 ~ InverseGamma(mu/2, nu/2);
  beta (N,) ~ MVN(0, precision = P) with P = diag(gamma) A diag(gamma) / delta2 + diag(1 - gamma):
      the active block is the g-prior N(0, delta2 A_aa^{-1}), A = Psi'Psi + ridge I, and inactive coefficients
      get an independent N(0, 1) pseudo-prior (they never enter f; fixed shapes keep the program JIT-able);
  z (N,) ~ Normal(Psi (gamma * beta), 1);
  observations per group (codes of ``zoo.inference.mil.orthant_sampler.constraint_flags``):
    "group_label" (G,): the constraint label implied by the signs of z_g (a one-hot Categorical, so its log-prob
        is 0 when consistent and -inf otherwise), for the constraint and hybrid models;
    "fraction" (G,) ~ Beta(chi lambda_g + 1, chi (1 - lambda_g) + 1), lambda_g = share of z_i > 0 in g,
        for the measurement and hybrid models.
The supervised model is the constraint model with one instance per group and labels "positive"/"negative".
"""
from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

# the constraint codes (named in ``zoo.inference.mil.constraint_codes``) under the names the programs use
from zoo.models.gaussian import MultivariateNormal
from zoo.inference.mil.constraint_codes import (AT_LEAST_ONE as LABEL_AT_LEAST_ONE, FREE as LABEL_FREE,
                                            MIXED as LABEL_MIXED, NEGATIVE as LABEL_NEGATIVE,
                                            POSITIVE as LABEL_POSITIVE)

__all__ = ["KERNELS", "kernel_function", "gram_matrix", "kernel_mil_program", "group_label_from_signs",
           "LABEL_NEGATIVE", "LABEL_MIXED", "LABEL_POSITIVE", "LABEL_AT_LEAST_ONE", "LABEL_FREE",
           "probit_fixed_active_program", "default_priors"]


def default_priors() -> dict:
    """The priors of the sites tau and delta2 (the thesis' choice: tau ~ U(0, 1), delta2 ~ IG(1/2, 1/2), i.e.
    mu = nu = 1), the one place they are written: the programs and ``zoo.papers.kueck04`` read them here."""
    return {"tau": dist.Beta(1.0, 1.0), "delta2": dist.InverseGamma(0.5, 0.5)}


def _thin_plate(d):
    safe = jnp.where(d > 0, d, 1.0)
    return jnp.where(d > 0, d * d * jnp.log(safe), 0.0)


#: phi(d) of the radial basis functions, d = ||x - x_i|| / r (the thesis' list, MODELS.md Sec. 5).
KERNELS: dict[str, Callable] = {
    "gaussian": lambda d: jnp.exp(-d * d),
    "linear": lambda d: d,
    "cubic": lambda d: d ** 3,
    "sigmoid": jnp.tanh,
    "multiquadric": lambda d: jnp.sqrt(1.0 + d * d),
    "cauchy": lambda d: 1.0 / (1.0 + d * d),
    "thin_plate": _thin_plate,
}


def kernel_function(name: str) -> Callable:
    if name not in KERNELS:
        raise ValueError(f"kernel: {name!r} is not one of {', '.join(KERNELS)}")
    return KERNELS[name]


def gram_matrix(X: jnp.ndarray, centres: jnp.ndarray, kernel: str, width: float,
                intercept: bool = False) -> jnp.ndarray:
    """(M, N [+1]) Psi_mi = phi(||x_m - c_i|| / width); a final column of ones when ``intercept``."""
    phi = kernel_function(kernel)
    sq = jnp.sum(X * X, 1)[:, None] + jnp.sum(centres * centres, 1)[None, :] - 2.0 * X @ centres.T
    d = jnp.sqrt(jnp.maximum(sq, 0.0)) / width
    psi = phi(d)
    if intercept:
        psi = jnp.concatenate([psi, jnp.ones((X.shape[0], 1), psi.dtype)], axis=1)
    return psi


def group_label_from_signs(positive: jnp.ndarray, valid: jnp.ndarray, kind: jnp.ndarray) -> jnp.ndarray:
    """(G,) the label code implied by the signs: negative / mixed / positive, or for MIL bags (kind 3 or 0 with
    ``mil`` semantics) at least one positive. ``kind`` only says which label family a group reports:
    families: 0/1/2 -> thesis labels, 3 -> MIL (3 if any positive else 0), 4 -> free (always 4)."""
    any_pos = jnp.any(positive & valid, axis=1)
    any_neg = jnp.any(~positive & valid, axis=1)
    thesis = jnp.where(any_pos & any_neg, LABEL_MIXED, jnp.where(any_pos, LABEL_POSITIVE, LABEL_NEGATIVE))
    mil = jnp.where(any_pos, LABEL_AT_LEAST_ONE, LABEL_NEGATIVE)
    return jnp.where(kind == LABEL_FREE, LABEL_FREE, jnp.where(kind == LABEL_AT_LEAST_ONE, mil, thesis))


def kernel_mil_program(psi, gram, group_index, group_valid, label_family, group_label=None, fraction=None,
                       chi=None, prior_tau=None, prior_delta2=None):
    """The sparse kernel probit MIL model (see the module docstring).

    psi (N, M): design matrix (basis functions centred on the training points); gram (M, M) = psi'psi + ridge I; group_index (G, n_max) and
    group_valid (G, n_max): padded groups; label_family (G,) int: 3 for MIL bags ("at least one positive"
    family), 4 for groups without a constraint label (measurement model), otherwise 0..2 (thesis labels);
    group_label (G,) int codes observed (or None to simulate); fraction (G,) observed guessed shares (or None to
    simulate when ``chi`` is given; the measurement site is absent when ``chi`` is None); prior_tau, prior_delta2:
    the priors of those sites (None: ``default_priors()``).
    """
    n, m = psi.shape
    prior_tau = prior_tau if prior_tau is not None else default_priors()["tau"]
    prior_delta2 = prior_delta2 if prior_delta2 is not None else default_priors()["delta2"]
    tau = numpyro.sample("tau", prior_tau)
    with numpyro.plate("basis", m):
        gamma = numpyro.sample("gamma", dist.Bernoulli(probs=tau))
    delta2 = numpyro.sample("delta2", prior_delta2)
    g = gamma.astype(psi.dtype)
    precision = g[:, None] * gram * g[None, :] / delta2 + jnp.diag(1.0 - g)
    beta = numpyro.sample("beta", MultivariateNormal(jnp.zeros(m), precision_matrix=precision))
    f = psi @ (g * beta)
    with numpyro.plate("instance", n):
        z = numpyro.sample("z", dist.Normal(f, 1.0))
    positive = z[group_index] > 0
    n_groups = group_index.shape[0]
    with numpyro.plate("group", n_groups):
        implied = group_label_from_signs(positive, group_valid, label_family)
        numpyro.sample("group_label", dist.Categorical(probs=jnp.eye(5)[implied]), obs=group_label)
        if chi is not None:
            share = jnp.sum(positive & group_valid, 1) / jnp.maximum(jnp.sum(group_valid, 1), 1)
            numpyro.sample("fraction", dist.Beta(chi * share + 1.0, chi * (1.0 - share) + 1.0), obs=fraction)


def probit_fixed_active_program(psi_active, gram_active, y=None, prior_delta2=None):
    """The supervised model with a fixed active set and Z integrated out (for generic NUTS as a peer).

    psi_active (N, K) active basis columns; gram_active (K, K) = psi_active'psi_active + ridge I; y (N,) 0/1
    (observed, entering as a factor).
    delta2 ~ prior; beta ~ N(0, delta2 gram_active^{-1}); y_i ~ Bernoulli(Phi(f_i)), f = psi_active beta.
    """
    prior_delta2 = prior_delta2 if prior_delta2 is not None else default_priors()["delta2"]
    delta2 = numpyro.sample("delta2", prior_delta2)
    k = psi_active.shape[1]
    beta = numpyro.sample("beta", MultivariateNormal(jnp.zeros(k), precision_matrix=gram_active / delta2))
    f = psi_active @ beta
    numpyro.deterministic("f", f)
    # log Phi(+-f) in log space (a Bernoulli with probs = Phi(f) would hit log 0 for |f| > 38)
    numpyro.factor("y", jnp.sum(jnp.where(y == 1, jax.scipy.special.log_ndtr(f), jax.scipy.special.log_ndtr(-f))))
