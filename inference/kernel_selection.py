"""Kernel selection (gamma), beta and delta^2 moves of the sparse kernel probit model (Kueck 2004, Sec. 4.1-4.2).

Model (MODELS.md Sec. 5): z = Psi_gamma beta_gamma + n, n ~ N(0, I); beta_gamma | delta2 ~ N(0, delta2 A_aa^{-1})
(g-prior, A = Psi'Psi + eps I); gamma_i ~ Bernoulli(tau), tau ~ Beta(a, b) integrated out.

- ``kernel_selection_sweep``: for i = 1..N, propose gamma_i from its prior conditional
  q(0 -> 1) = (K_{-i} + a) / (N + a + b - 1) and accept a change with the marginal-likelihood ratio of
  Kohn, Smith and Chan with beta integrated out:
  A(0 -> 1) = min(1, (1 + delta2)^{-1/2} exp(c/2 [Q(gamma1) - Q(gamma0)])), c = delta2 / (1 + delta2),
  Q(gamma) = z' Psi_a A_aa^{-1} Psi_a' z = b_a' H b_a, b = Psi' z. The change of Q is O(K) given the
  O(K^2) partitioned-inverse terms (``zoo.inference.linalg``): birth (b_j - h'b_a)^2 / s, death -(H b_a)_p^2 / H_pp.
  Births beyond the capacity K_max are rejected: the chain targets the prior truncated to K <= K_max (the
  sampler reports how often that bound was hit).
- ``draw_beta``: beta_a ~ N(c H b_a, c H), drawn without any factorization: with u = Psi_a' e1 + sqrt(eps) e2
  ~ N(0, A_aa), H u ~ N(0, H).
- ``draw_delta2``: delta2 ~ IG(alpha0 + K/2, beta0 + beta_a' A_aa beta_a / 2) (conjugate to an inverse-gamma
  prior); ``delta2_metropolis_step`` is the random-walk fallback on log delta2 for any other prior.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from zoo.inference.linalg import ActiveSet, active_gram, apply_birth, apply_death, birth_terms, slot_mask

__all__ = ["SelectionInfo", "kernel_selection_sweep", "draw_beta", "draw_delta2", "delta2_metropolis_step",
           "log_marginal_gamma"]


class SelectionInfo(NamedTuple):
    proposals: jnp.ndarray       # () number of proposed flips
    accepted: jnp.ndarray        # () number of accepted flips
    capacity_hits: jnp.ndarray   # () births refused because the active set was full


def kernel_selection_sweep(key: jax.Array, aset: ActiveSet, gram: jnp.ndarray, b: jnp.ndarray,
                           delta2: jnp.ndarray, prior_a: float, prior_b: float, min_pivot: float):
    """One systematic sweep of gamma_1..gamma_N with beta integrated out. Returns (ActiveSet, SelectionInfo).

    gram (N, N) = Psi'Psi + eps I; b (N,) = Psi' z; delta2 scalar.
    """
    n = gram.shape[0]
    capacity = aset.members.shape[0]
    c = delta2 / (1.0 + delta2)
    log_penalty = 0.5 * jnp.log1p(delta2)          # log (1 + delta2)^{1/2}
    k_prop, k_acc = jax.random.split(key)
    u_prop = jax.random.uniform(k_prop, (n,))
    log_u_acc = jnp.log(jax.random.uniform(k_acc, (n,)))

    def no_move(aset, j):
        zero = jnp.zeros((), jnp.int32)
        return aset, (zero, zero, zero)

    def try_birth(aset, j):
        full = aset.count >= capacity
        h, s = birth_terms(aset, gram, j, min_pivot)
        b_a = jnp.where(slot_mask(aset), b[aset.members], 0.0)
        delta_q = (b[j] - h @ b_a) ** 2 / s
        accept = (log_u_acc[j] < -log_penalty + 0.5 * c * delta_q) & ~full
        new = lax.cond(accept, lambda a: apply_birth(a, j, h, s), lambda a: a, aset)
        return new, (jnp.ones((), jnp.int32), accept.astype(jnp.int32), full.astype(jnp.int32))

    def try_death(aset, j):
        slot = aset.slot_of[j]
        b_a = jnp.where(slot_mask(aset), b[aset.members], 0.0)
        u = aset.inverse @ b_a
        delta_q = -u[slot] ** 2 / jnp.maximum(aset.inverse[slot, slot], jnp.finfo(u.dtype).tiny)
        accept = log_u_acc[j] < log_penalty + 0.5 * c * delta_q
        new = lax.cond(accept, lambda a: apply_death(a, slot), lambda a: a, aset)
        return new, (jnp.ones((), jnp.int32), accept.astype(jnp.int32), jnp.zeros((), jnp.int32))

    def body(t, carry):
        aset, proposals, accepted, hits = carry
        j = candidates[t]
        active = aset.slot_of[j] >= 0
        k_minus = aset.count - active.astype(aset.count.dtype)
        q_on = (k_minus + prior_a) / (n + prior_a + prior_b - 1.0)     # prior conditional P(gamma_j = 1 | rest)
        proposed_on = u_prop[j] < q_on
        branch = jnp.where(proposed_on == active, 0, jnp.where(proposed_on, 1, 2))
        aset, (p, a, h) = lax.switch(branch, (no_move, try_birth, try_death), aset, j)
        return aset, proposals + p, accepted + a, hits + h

    # Only indices that can move are visited (same chain as visiting all N, in the same order): every index
    # active at the start, and inactive ones whose uniform lies below the largest possible q(0 -> 1), reached at
    # K_{-j} = capacity. Inactive indices keep their state until visited, so the set is known up front.
    q_max = (capacity + prior_a) / (n + prior_a + prior_b - 1.0)
    may_move = (aset.slot_of >= 0) | (u_prop < q_max)
    candidates = jnp.nonzero(may_move, size=n, fill_value=0)[0]
    zero = jnp.zeros((), jnp.int32)
    aset, proposals, accepted, hits = lax.fori_loop(0, jnp.sum(may_move), body, (aset, zero, zero, zero))
    return aset, SelectionInfo(proposals=proposals, accepted=accepted, capacity_hits=hits)


def draw_beta(key: jax.Array, aset: ActiveSet, psi: jnp.ndarray, b: jnp.ndarray, delta2: jnp.ndarray,
              ridge: float) -> jnp.ndarray:
    """(K_max,) beta_a ~ N(c H b_a, c H) in slot order (zeros on unused slots); psi (N, N) the Gram matrix."""
    m = slot_mask(aset)
    c = delta2 / (1.0 + delta2)
    k1, k2 = jax.random.split(key)
    psi_a = jnp.where(m[None, :], psi[:, aset.members], 0.0)
    e1 = jax.random.normal(k1, (psi.shape[0],))
    e2 = jax.random.normal(k2, m.shape)
    u = psi_a.T @ e1 + jnp.sqrt(ridge) * e2            # ~ N(0, A_aa) on the used slots
    b_a = jnp.where(m, b[aset.members], 0.0)
    beta = aset.inverse @ (c * b_a + jnp.sqrt(c) * u)
    return jnp.where(m, beta, 0.0)


def _quadratic_form(aset: ActiveSet, gram: jnp.ndarray, beta: jnp.ndarray) -> jnp.ndarray:
    return beta @ active_gram(gram, aset) @ beta


def draw_delta2(key: jax.Array, aset: ActiveSet, gram: jnp.ndarray, beta: jnp.ndarray, alpha0: float,
                beta0: float) -> jnp.ndarray:
    """delta2 ~ IG(alpha0 + K/2, beta0 + beta_a' A_aa beta_a / 2) for a prior IG(alpha0, beta0)."""
    shape = alpha0 + 0.5 * aset.count
    rate = beta0 + 0.5 * _quadratic_form(aset, gram, beta)
    return rate / jax.random.gamma(key, shape)


def delta2_metropolis_step(key: jax.Array, delta2: jnp.ndarray, aset: ActiveSet, gram: jnp.ndarray,
                           beta: jnp.ndarray, prior_log_prob: Callable, step: float = 0.5):
    """Random-walk MH on log delta2 for a non-conjugate prior; returns (delta2, accepted)."""
    quad = _quadratic_form(aset, gram, beta)
    k = aset.count

    def log_target(log_d2):  # p(delta2) N(beta_a; 0, delta2 H) * |d delta2 / d log delta2|
        d2 = jnp.exp(log_d2)
        return prior_log_prob(d2) - 0.5 * k * log_d2 - 0.5 * quad / d2 + log_d2

    k1, k2 = jax.random.split(key)
    cur = jnp.log(delta2)
    prop = cur + step * jax.random.normal(k1)
    log_ratio = log_target(prop) - log_target(cur)
    accept = jnp.log(jax.random.uniform(k2)) < jnp.where(jnp.isnan(log_ratio), -jnp.inf, log_ratio)
    return jnp.where(accept, jnp.exp(prop), delta2), accept


def log_marginal_gamma(gamma: jnp.ndarray, gram: jnp.ndarray, b: jnp.ndarray, delta2: jnp.ndarray,
                       prior_a: float, prior_b: float) -> jnp.ndarray:
    """log p(gamma | delta2, z) up to a constant, from scratch (the reference for enumeration tests).

    log B(K + a, N - K + b) - K/2 log(1 + delta2) + c/2 Q(gamma).
    """
    from jax.scipy.special import betaln
    n = gamma.shape[0]
    k = jnp.sum(gamma)
    mask = gamma.astype(bool)
    block = jnp.where(mask[:, None] & mask[None, :], gram, 0.0) + jnp.diag(jnp.where(mask, 0.0, 1.0))
    b_a = jnp.where(mask, b, 0.0)
    q = b_a @ jnp.linalg.solve(block, b_a)
    c = delta2 / (1.0 + delta2)
    return betaln(k + prior_a, n - k + prior_b) - 0.5 * k * jnp.log1p(delta2) + 0.5 * c * q
