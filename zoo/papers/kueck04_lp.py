"""``lp`` of the kueck04 blocked Gibbs sampler's draws: the log joint density of each draw under the program the
sampler targets, ``kernel_mil_program`` (``zoo.models.mil``) with tau, z and the inactive coefficients integrated
out:

    lp = log B(a + k, b + M - k) - log B(a, b)          gamma's prior with tau ~ Beta(a, b) integrated out (k active)
       + log p(delta2)                                  the spec's delta2 prior, any family
       + log N(beta_A; 0, delta2 (Psi'Psi + ridge)_AA^-1)   the active coefficients' prior (Sec. 3)
       + sum_g log p(observations of group g | f)       z integrated out: the stored log likelihood (``group_label``)

(the program draws an inactive beta_j from N(0, 1), touching nothing: the sampler keeps 0 there, so those
coordinates are integrated out). ``zoo.fit``: computed after sampling from the stored draws
(``blocked_gibbs_log_joint``, NumPy); ``zoo.kernel``: the same sum per step inside the compiled chain
(``draw_log_joint``, JAX; collected as NumPyro's ``potential_energy``). Neither touches the sampler's moves or
random stream.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax.scipy.special import betaln as jax_betaln
from scipy.special import betaln

__all__ = ["blocked_gibbs_log_joint", "draw_log_joint"]

_BLOCK = 1024   # draws per batched determinant (bounds the (draws, k, k) temporary)


def _active_prior(gamma: np.ndarray, beta: np.ndarray, delta2: np.ndarray, gram: np.ndarray) -> np.ndarray:
    """(S,) log N(beta_A; 0, delta2 gram_AA^-1) for S draws: gamma (S, M) 0/1, beta (S, M), delta2 (S,).

    Only the active block enters: draws with k active kernels are taken together, their (k, k) blocks gram_AA
    gathered and factorized in one batched call. (The M x M matrix with the identity outside A has the same
    determinant, at O(M^3) per draw: 2 s per fit of 300 draws on 500 instances, a seventh of the thesis
    reproduction.)"""
    active = np.asarray(gamma).astype(bool)
    k = active.sum(1)
    logdet, quad = np.zeros(active.shape[0]), np.zeros(active.shape[0])
    for size in np.unique(k[k > 0]):
        rows_of_size = np.nonzero(k == size)[0]
        for start in range(0, rows_of_size.size, _BLOCK):
            rows = rows_of_size[start:start + _BLOCK]
            idx = np.nonzero(active[rows])[1].reshape(rows.size, size)          # (n, k) active indices, sorted
            block = gram[idx[:, :, None], idx[:, None, :]]                      # (n, k, k) gram_AA
            logdet[rows] = np.linalg.slogdet(block)[1]
            b = np.take_along_axis(beta[rows], idx, axis=1)                     # (n, k) beta_A
            quad[rows] = np.einsum("si,sij,sj->s", b, block, b)
    return 0.5 * (logdet - k * np.log(delta2)) - 0.5 * quad / delta2 - 0.5 * k * np.log(2 * np.pi)


def blocked_gibbs_log_joint(spec, gram: np.ndarray, samples: dict, group_loglik: np.ndarray) -> np.ndarray:
    """(chain, draw) lp (module docstring). ``samples``: gamma, beta (chain, draw, M), delta2 (chain, draw);
    ``group_loglik`` (chain, draw, G): log p(observations of group g | f); ``gram`` (M, M) the prior's Psi'Psi +
    ridge I; priors from ``spec.priors`` (tau a Beta, delta2 any family)."""
    gamma, beta, delta2 = (np.asarray(samples[k]) for k in ("gamma", "beta", "delta2"))
    leading, m = gamma.shape[:2], gamma.shape[-1]
    gamma, beta, delta2 = gamma.reshape(-1, m), beta.reshape(-1, m), delta2.reshape(-1).astype(np.float64)
    tau = spec.priors["tau"]
    a, b = float(tau.concentration1), float(tau.concentration0)
    k = gamma.sum(1)
    lp = betaln(a + k, b + m - k) - betaln(a, b)
    lp = lp + np.asarray(spec.priors["delta2"].log_prob(delta2), dtype=np.float64)
    lp = lp + _active_prior(gamma, beta, delta2, np.asarray(gram, dtype=np.float64))
    lp = lp + np.asarray(group_loglik, dtype=np.float64).reshape(gamma.shape[0], -1).sum(1)
    return lp.reshape(leading)


def draw_log_joint(delta2_prior, problem, draw: dict, info) -> jnp.ndarray:
    """lp of one draw (scalar; the module docstring's sum), traceable for a step of ``zoo.kernel``'s chain:
    ``draw`` gamma (M,) 0/1, beta (M,), delta2 (); ``info.log_likelihood`` (G,) the sweep's per-group log
    likelihood (z integrated out); ``problem`` a ``MILProblem``: gram (M, M) and tau's Beta(prior_a, prior_b) in
    ``hyper``; ``delta2_prior`` the spec's prior of delta2 (any NumPyro family)."""
    g = jnp.asarray(draw["gamma"]).astype(jnp.float64)
    beta, delta2 = jnp.asarray(draw["beta"], jnp.float64), jnp.asarray(draw["delta2"], jnp.float64)
    gram = jnp.asarray(problem.gram, jnp.float64)
    m, k = g.shape[0], g.sum()
    a, b = problem.hyper.prior_a, problem.hyper.prior_b
    lp = jax_betaln(a + k, b + m - k) - jax_betaln(a, b) + delta2_prior.log_prob(delta2)
    # the active block of gram, identity elsewhere: its log determinant is that of gram_AA (as _active_prior)
    block = g[:, None] * gram * g[None, :] + jnp.diag(1.0 - g)
    logdet = jnp.linalg.slogdet(block)[1]
    gb = g * beta
    lp = lp + 0.5 * (logdet - k * jnp.log(delta2)) - 0.5 * (gb @ gram @ gb) / delta2 - 0.5 * k * jnp.log(2 * jnp.pi)
    return lp + jnp.sum(jnp.asarray(info.log_likelihood, jnp.float64))
