"""The coordinate steps of MCVQ's variational EM (Ross 2003, thesis Sec. 2.3 and 4.2), as pure functions.

Notation (shapes): C cases, D dimensions, K vector quantizers (VQs), J states per VQ, N classes/clusters
(N = 1 for plain MCVQ). ``X`` (C, D) holds the data with zeros at missing entries and ``M`` (C, D) the 0/1
mask (1 = observed); a missing entry takes no part in any step (thesis Sec. 3.2: observations are leaves).

Free energy minimised (thesis Sec. 2.3 and 4.2.1, with the inverse temperature 1/T of the g update made explicit
and MAP terms for Dirichlet priors on a, b, beta; with flat priors and T = 1 it is exactly -ELBO of the
shared-selection program ``zoo.models.mcvq``):

    F_T = T sum_dk g_dk log(g_dk/a_dk)
        + sum_c sum_n z_cn [log(z_cn/beta_n) + sum_kj m_cnkj log(m_cnkj/b_nkj)]
        + sum_c sum_kj w_ckj L_ckj  - log p(a) - log p(b) - log p(beta),
    L_ckj = sum_d M_cd g_dk eps_cdkj,   eps_cdkj = log sigma_dkj + (x_cd - mu_dkj)^2 / (2 sigma_dkj^2) + log(2 pi)/2,
    w_ckj = sum_n z_cn m_cnkj (the state posterior of case c, marginal over classes).

T = C gives the thesis' "1/C" update (selections free per case, g tied), T = 1 the model with one selection R
for all cases; annealing T from below C to 1 moves from the first to the second.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.special import gammaln, logsumexp

__all__ = ["MCVQParams", "MCVQPosterior", "PriorConcentrations", "data_term", "e_step_states", "e_step_classes",
           "sufficient_statistics", "m_step_gaussians", "expected_energy", "m_step_ownership", "m_step_priors",
           "free_energy", "free_energy_of_data", "state_weights", "reconstruct", "class_log_scores", "log_likelihood_given_selection",
           "monte_carlo_class_log_joint"]

_HALF_LOG_2PI = 0.5 * jnp.log(2.0 * jnp.pi)


class MCVQParams(NamedTuple):
    """Model parameters: mu, sigma (D, K, J); a (D, K) prior over VQ per dimension; b (N, K, J) state priors per
    class; beta (N,) class prior."""
    mu: jnp.ndarray
    sigma: jnp.ndarray
    a: jnp.ndarray
    b: jnp.ndarray
    beta: jnp.ndarray


class MCVQPosterior(NamedTuple):
    """Variational parameters: g (D, K) shared by all cases (eq. 2.2); m (C, N, K, J) state posteriors per case
    and class; z (C, N) class/cluster posteriors (one-hot labels in the supervised model, ones when N = 1)."""
    g: jnp.ndarray
    m: jnp.ndarray
    z: jnp.ndarray


class PriorConcentrations(NamedTuple):
    """Dirichlet concentrations of the priors on a (K,), b (J,), beta (N,); all ones = maximum likelihood."""
    a: jnp.ndarray
    b: jnp.ndarray
    beta: jnp.ndarray


def _xlogy_ratio(p: jnp.ndarray, log_p: jnp.ndarray, log_q: jnp.ndarray) -> jnp.ndarray:
    """p * (log p - log q) with 0 where p = 0 (so 0 log 0 = 0 even when q = 0)."""
    return jnp.where(p > 0, p * (log_p - jnp.where(p > 0, log_q, 0.0)), 0.0)


def _safe_log(x: jnp.ndarray) -> jnp.ndarray:
    return jnp.log(jnp.where(x > 0, x, 1.0)) + jnp.where(x > 0, 0.0, -jnp.inf)


def _design(X: jnp.ndarray, M: jnp.ndarray) -> jnp.ndarray:
    """(C, 3D) stacked [M, X, X^2] so one matrix product gives every sum over observed dimensions."""
    return jnp.concatenate([M, X, X * X], axis=1)


def data_term(X, M, g, mu, sigma) -> jnp.ndarray:
    """L (C, K, J) = sum_d M_cd g_dk eps_cdkj: the expected negative log-likelihood of case c under state kj.

    eps expands into three (C, D) @ (D, KJ) products, done as one (C, 3D) @ (3D, KJ) product (O(C D K J)).
    """
    D, K, J = mu.shape
    inv_var = 1.0 / (sigma * sigma)
    const = jnp.log(sigma) + _HALF_LOG_2PI + 0.5 * mu * mu * inv_var
    coef = jnp.concatenate([(g[:, :, None] * const).reshape(D, K * J),
                            -(g[:, :, None] * mu * inv_var).reshape(D, K * J),
                            (0.5 * g[:, :, None] * inv_var).reshape(D, K * J)], axis=0)
    return (_design(X, M) @ coef).reshape(X.shape[0], K, J)


def e_step_states(L: jnp.ndarray, b: jnp.ndarray) -> jnp.ndarray:
    """m (C, N, K, J): m_cnkj ∝ b_nkj exp(-sum_d g_dk eps_cdkj) (thesis Sec. 2.3 E-step; Sec. 4.2.1 per class)."""
    logits = _safe_log(b)[None] - L[:, None]
    return jax.nn.softmax(logits, axis=-1)


def class_log_scores(L: jnp.ndarray, b: jnp.ndarray, beta: jnp.ndarray) -> jnp.ndarray:
    """(C, N) log beta_n + sum_k log sum_j b_nkj exp(-L_ckj).

    With m at its optimum this equals log beta_n - sum_kj m (log m/b) - sum_kj m L, the exponent of the z update
    of Sec. 4.2.1; it is also the variational bound on log p(x^c, y^c = n) used to classify (up to the g terms
    shared by all classes).
    """
    per_vq = logsumexp(_safe_log(b)[None] - L[:, None], axis=-1)  # (C, N, K)
    return _safe_log(beta)[None] + per_vq.sum(-1)


def e_step_classes(L: jnp.ndarray, b: jnp.ndarray, beta: jnp.ndarray) -> jnp.ndarray:
    """z (C, N): the cluster posterior of Sec. 4.2.1 (z_n ∝ beta_n exp(sum m log b/m - sum g m eps))."""
    return jax.nn.softmax(class_log_scores(L, b, beta), axis=-1)


def state_weights(post: MCVQPosterior) -> jnp.ndarray:
    """w (C, K, J) = sum_n z_cn m_cnkj (replaces m^c_kj in the M-step, Sec. 4.2.1)."""
    return jnp.einsum("cn,cnkj->ckj", post.z, post.m)


def sufficient_statistics(X, M, w) -> jnp.ndarray:
    """S (3, D, K, J): sums over cases of w_ckj M_cd x_cd^p for p = 0, 1, 2 (observed entries only)."""
    C, K, J = w.shape
    D = X.shape[1]
    S = _design(X, M).T @ w.reshape(C, K * J)  # (3D, KJ)
    return S.reshape(3, D, K, J)


def m_step_gaussians(S, mu_old, sigma_old, sigma_floor) -> tuple[jnp.ndarray, jnp.ndarray]:
    """mu, sigma (D, K, J): the w-weighted mean and standard deviation of the observed x_d (Sec. 2.3 M-step).

    sigma is floored at ``sigma_floor`` (a constrained optimum: F is unimodal in sigma^2), so a dimension with zero
    variance cannot drive sigma (and F) to -inf. States with no weight on a dimension keep their old values.
    """
    S0, S1, S2 = S[0], S[1], S[2]
    has_weight = S0 > 1e-12
    safe_S0 = jnp.where(has_weight, S0, 1.0)
    mu = S1 / safe_S0
    var = jnp.maximum(S2 / safe_S0 - mu * mu, sigma_floor ** 2)
    return jnp.where(has_weight, mu, mu_old), jnp.where(has_weight, jnp.sqrt(var), sigma_old)


def expected_energy(S, mu, sigma) -> jnp.ndarray:
    """E (D, K) = sum_c sum_j w_ckj M_cd eps_cdkj, computed from the sufficient statistics."""
    inv_var = 1.0 / (sigma * sigma)
    per_state = (S[0] * (jnp.log(sigma) + _HALF_LOG_2PI + 0.5 * mu * mu * inv_var)
                 - S[1] * mu * inv_var + 0.5 * S[2] * inv_var)
    return per_state.sum(-1)


def m_step_ownership(E, a, temperature) -> jnp.ndarray:
    """g (D, K): g_dk ∝ a_dk exp(-(1/T) sum_cj w_ckj eps_cdkj) (Sec. 2.3, with 1/C replaced by 1/T)."""
    return jax.nn.softmax(_safe_log(a) - E / temperature, axis=-1)


def _case_sum(x, data_axis):
    """A sum over cases finished across data shards (``psum`` over ``data_axis``; None: one shard)."""
    return x if data_axis is None else jax.lax.psum(x, data_axis)


def m_step_priors(post: MCVQPosterior, temperature, conc: PriorConcentrations, update_beta: bool, data_axis=None):
    """a (D, K), b (N, K, J), beta (N,): MAP under Dirichlet priors (concentration 1: a = g, b_nkj = sum_c z m /
    sum_c z, beta = mean z, as Sec. 2.3, 4.2.1 and 4.2.2). ``data_axis``: the cases are sharded over that mesh
    axis (the sums over c are psum'd)."""
    a = temperature * post.g + (conc.a - 1.0)
    a = a / a.sum(-1, keepdims=True)
    counts = _case_sum(jnp.einsum("cn,cnkj->nkj", post.z, post.m), data_axis) + (conc.b - 1.0)
    b = counts / counts.sum(-1, keepdims=True)
    class_counts = _case_sum(post.z.sum(0), data_axis) + (conc.beta - 1.0)
    beta = class_counts / class_counts.sum() if update_beta else None
    return a, b, beta


def _dirichlet_log_density(x, conc):
    """Sum of Dirichlet log densities of x (..., n) with concentration (n,); 0 log 0 treated as 0 where conc = 1."""
    norm = gammaln(conc.sum()) - gammaln(conc).sum()
    body = jnp.where(conc == 1.0, 0.0, (conc - 1.0) * _safe_log(x))
    return (norm + body.sum(-1)).sum()


def free_energy(energy, params: MCVQParams, post: MCVQPosterior, temperature, conc: PriorConcentrations,
                with_beta_prior: bool, data_axis=None) -> jnp.ndarray:
    """F_T (scalar), the module docstring's free energy. ``energy`` = sum_ckj w_ckj L_ckj, which equals
    sum_dk g_dk E_dk (``expected_energy``), so the loop gets F without another pass over the data. ``data_axis``:
    the cases (m, z) are sharded over that mesh axis (their KL terms are psum'd)."""
    log_g = _safe_log(post.g)
    kl_g = _xlogy_ratio(post.g, log_g, _safe_log(params.a)).sum()
    log_m = _safe_log(post.m)
    kl_m = _xlogy_ratio(post.m, log_m, _safe_log(params.b)[None]).sum((-1, -2))  # (C, N)
    kl_z = _xlogy_ratio(post.z, _safe_log(post.z), _safe_log(params.beta)[None])
    log_prior = (_dirichlet_log_density(params.a, conc.a) + _dirichlet_log_density(params.b, conc.b))
    if with_beta_prior:
        log_prior = log_prior + _dirichlet_log_density(params.beta, conc.beta)
    # m_cn is irrelevant where z_cn = 0 (another class's label): it may sit where b_n is 0, so mask it out
    kl_m = jnp.where(post.z > 0, post.z * kl_m, 0.0)
    return temperature * kl_g + _case_sum(kl_m.sum() + kl_z.sum(), data_axis) + energy - log_prior


def free_energy_of_data(X, M, params: MCVQParams, post: MCVQPosterior, temperature, conc: PriorConcentrations,
                        with_beta_prior: bool) -> jnp.ndarray:
    """F_T computed directly from the data (one more pass; used by tests and for new data)."""
    L = data_term(X, M, post.g, params.mu, params.sigma)
    energy = (state_weights(post) * L).sum()
    return free_energy(energy, params, post, temperature, conc, with_beta_prior)


def reconstruct(w, g, mu) -> jnp.ndarray:
    """xhat (C, D) = sum_kj w_ckj g_dk mu_dkj, the mean of the posterior mixture (Sec. 2.3)."""
    D, K, J = mu.shape
    basis = (g[:, :, None] * mu).reshape(D, K * J)
    return w.reshape(w.shape[0], K * J) @ basis.T


def log_likelihood_given_selection(X, M, params: MCVQParams, g_hard) -> jnp.ndarray:
    """(C,) exact log p(x^c | R, theta) for a fixed one-hot selection R = g_hard (D, K), summing S and y out:
    log sum_n beta_n prod_k sum_j b_nkj prod_{d: r_d = k} N(x_cd; mu_dkj, sigma_dkj)."""
    L = data_term(X, M, g_hard, params.mu, params.sigma)
    return logsumexp(class_log_scores(L, params.b, params.beta), axis=-1)


def monte_carlo_class_log_joint(key, X, M, params: MCVQParams, n_samples: int, batch: int = 64) -> jnp.ndarray:
    """(C, N) Monte Carlo estimate of log P(x^c, y = n) (thesis eq. 4.3): Q draws (R_q, S_q) from the prior
    P(R) P(S | y = n) (R ~ a, shared by the classes as common random numbers), averaged in log space."""
    D, K, J = params.mu.shape
    N = params.b.shape[0]
    n_batches = -(-n_samples // batch)
    keys = jax.random.split(key, n_batches)
    design = _design(X, M)

    def one_batch(key):
        kr, ks = jax.random.split(key)
        r = jax.random.categorical(kr, _safe_log(params.a), axis=-1, shape=(batch, D))           # (Q, D)
        s = jax.random.categorical(ks, _safe_log(params.b), axis=-1, shape=(batch, N, K))        # (Q, N, K)
        s_of_d = jnp.take_along_axis(s, jnp.broadcast_to(r[:, None, :], (batch, N, D)), axis=2)  # (Q, N, D)
        d_idx = jnp.arange(D)[None, None, :]
        mu_q = params.mu[d_idx, r[:, None, :], s_of_d]                                           # (Q, N, D)
        sig_q = params.sigma[d_idx, r[:, None, :], s_of_d]
        inv_var = 1.0 / (sig_q * sig_q)
        coef = jnp.concatenate([-(jnp.log(sig_q) + _HALF_LOG_2PI + 0.5 * mu_q * mu_q * inv_var),
                                mu_q * inv_var, -0.5 * inv_var], axis=-1)                        # (Q, N, 3D)
        return jnp.einsum("ce,qne->qcn", design, coef)                                           # (Q, C, N)

    ll = jax.lax.map(one_batch, keys).reshape(n_batches * batch, X.shape[0], N)[:n_samples]
    return _safe_log(params.beta)[None] + logsumexp(ll, axis=0) - jnp.log(n_samples)
