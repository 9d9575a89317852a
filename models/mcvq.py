"""Multiple Cause Vector Quantization (Ross 2003, thesis Ch. 2 and 4) as NumPyro programs.

Generative process (eq. 2.1, with the class variable of eq. 4.1): for every dimension d a VQ r_d ~ Cat(a_d) is
selected once, shared by all cases (the model the annealed variational EM ends on, T = 1); for every case c a
class y^c ~ Cat(beta) (only when there are N > 1 classes), one state s^c_k ~ Cat(b_{y^c, k}) per VQ, and
x^c_d ~ N(mu[d, r_d, s^c_{r_d}], sigma[d, r_d, s^c_{r_d}]^2). Missing entries (mask False) are leaves that are
simply not observed. mu and sigma are parameters (arguments; maximum likelihood in the variational EM); a, b and
beta have Dirichlet priors (concentration 1 = the thesis' maximum likelihood).

Site names: ``a`` (D, K), ``b`` (N, K, J), ``beta`` (N,), ``r`` (D,), ``y`` (C,), ``s`` (C, K), ``x`` (C, D).
"""
from __future__ import annotations

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

__all__ = ["mcvq_program", "default_priors", "emission_parameters"]


def default_priors(n_vqs: int, n_states: int, n_classes: int = 1) -> dict:
    """Flat Dirichlet priors on a (over K VQs), b (over J states) and, for N > 1 classes, beta (over N)."""
    priors = {"a": dist.Dirichlet(jnp.ones(n_vqs)), "b": dist.Dirichlet(jnp.ones(n_states))}
    if n_classes > 1:
        priors["beta"] = dist.Dirichlet(jnp.ones(n_classes))
    return priors


def emission_parameters(mu, sigma, r, s):
    """loc, scale (C, D) of x^c_d given the selections r (D,) and s (C, K): mu[d, r_d, s^c_{r_d}]."""
    d = jnp.arange(mu.shape[0])
    state = jnp.take_along_axis(s, jnp.broadcast_to(r, (s.shape[0], r.shape[0])), axis=1)  # (C, D)
    return mu[d[None], r[None], state], sigma[d[None], r[None], state]


def mcvq_program(mu, sigma, n_cases: int | None = None, X=None, mask=None, labels=None, beta=None, *,
                 prior_a, prior_b, prior_beta=None, n_classes: int = 1):
    """The joint density p(a, b, beta, r, y, s, x | mu, sigma).

    mu, sigma: (D, K, J) state means and standard deviations; X: (C, D) data (any value where ``mask`` is
    False); mask: (C, D) bool, True = observed; labels: (C,) observed classes (supervised model); beta: (N,)
    fixed class probabilities (when ``prior_beta`` is None and N > 1). ``n_cases`` is needed when X is None.
    """
    D, K, J = mu.shape
    C = X.shape[0] if X is not None else n_cases
    if C is None:
        raise ValueError("n_cases: give n_cases or X")
    a = numpyro.sample("a", prior_a.expand((D,)).to_event(1))                      # (D, K)
    b = numpyro.sample("b", prior_b.expand((n_classes, K)).to_event(2))            # (N, K, J)
    if n_classes > 1:
        if prior_beta is not None:
            beta = numpyro.sample("beta", prior_beta)
        elif beta is None:
            raise ValueError("beta: give class probabilities or a prior_beta")
    r = numpyro.sample("r", dist.Categorical(probs=a).to_event(1))                  # (D,) one VQ per dimension
    with numpyro.plate("case", C):
        if n_classes > 1:
            y = numpyro.sample("y", dist.Categorical(probs=beta), obs=labels)
            b_case = b[y]                                                          # (C, K, J)
        else:
            b_case = jnp.broadcast_to(b[0], (C, K, J))
        s = numpyro.sample("s", dist.Categorical(probs=b_case).to_event(1))        # (C, K)
        loc, scale = emission_parameters(mu, sigma, r, s)
        likelihood = dist.Normal(loc, scale)
        if mask is not None:
            likelihood = likelihood.mask(jnp.asarray(mask, dtype=bool))
        numpyro.sample("x", likelihood.to_event(1), obs=X)
