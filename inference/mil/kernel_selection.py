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
  sampler reports how often that bound was hit). Most proposals are "stay" (q is small); the sweep jumps from
  one changing proposal to the next, so it costs O(N + K^2) per proposed change, not per index, and never
  forms all of Psi' z (only b_j at the visited j and b_a for the active set).
- ``draw_beta``: beta_a ~ N(c H b_a, c H), drawn without any factorization: with u = Psi_a' e1 + sqrt(eps) e2
  ~ N(0, A_aa), H u ~ N(0, H).
- ``scale_move``: the marginal-augmentation rescaling (z, beta) -> g (z, beta) (not in the thesis; an exact
  extra move that speeds up the probit data augmentation).
- ``draw_delta2``: delta2 ~ IG(alpha0 + K/2, beta0 + beta_a' A_aa beta_a / 2) (conjugate to an inverse-gamma
  prior); ``delta2_metropolis_step`` is the random-walk fallback on log delta2 for any other prior.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from zoo.inference.linalg import ActiveSet, active_gram, apply_birth, apply_death, birth_terms, slot_mask

__all__ = ["SelectionInfo", "basis_row", "active_rows", "kernel_selection_sweep", "draw_beta", "draw_delta2",
           "delta2_shape", "delta2_metropolis_step", "scale_move", "scale_move_shape", "prior_quadratic_form",
           "log_marginal_gamma"]


class SelectionInfo(NamedTuple):
    proposals: jnp.ndarray       # () number of proposed flips
    accepted: jnp.ndarray        # () number of accepted flips
    capacity_hits: jnp.ndarray   # () births refused because the active set was full


def _first_change(aset: ActiveSet, u_prop: jnp.ndarray, start: jnp.ndarray, prior_a: float, denom: float,
                  basis_mask=None):
    """(j, found): the first index j >= start whose proposal would change gamma_j under the current K.

    Active j is proposed off when u_j >= q(K - 1), inactive j on when u_j < q(K), q(k) = (k + a) / denom.
    K changes only at visited indices, so scanning for the next such j is the same chain as visiting all N.
    ``basis_mask`` (M,) bool or None: masked (padding) centres are never proposed on, so they are never born."""
    active = aset.slot_of >= 0
    k = aset.count.astype(u_prop.dtype)
    birth = u_prop < (k + prior_a) / denom
    if basis_mask is not None:
        birth = birth & basis_mask
    change = jnp.where(active, u_prop >= (k - 1.0 + prior_a) / denom, birth)
    change = change & (jnp.arange(u_prop.shape[0]) >= start)
    j = jnp.argmax(change)
    return j, change[j]


def basis_row(psi_t, j) -> jnp.ndarray:
    """(N,) row j of Psi': psi_t (M, N) stored, or a function j -> row (rows on demand, ``mil_rows.row_source``)."""
    return psi_t(j) if callable(psi_t) else psi_t[j]


def active_rows(aset: ActiveSet, psi_t) -> jnp.ndarray:
    """(K_max, N) Psi_a' in slot order (zero rows on unused slots); psi_t (M, N) = Psi' (row j = basis function
    j at the N training points), so this is one gather of contiguous rows; or a function j -> row (on demand)."""
    gathered = jax.vmap(psi_t)(aset.members) if callable(psi_t) else psi_t[aset.members]
    return jnp.where(slot_mask(aset)[:, None], gathered, 0.0)


def kernel_selection_sweep(key: jax.Array, aset: ActiveSet, b_active: jnp.ndarray, gram: jnp.ndarray,
                           psi_t: jnp.ndarray, z: jnp.ndarray, delta2: jnp.ndarray, prior_a: float,
                           prior_b: float, min_pivot: float, basis_mask=None):
    """One systematic sweep of gamma_1..gamma_M with beta integrated out.

    gram (M, M) = Psi'Psi + eps I; psi_t (M, N) = Psi' (or a function j -> row, ``basis_row``); z (N,);
    b_active (K_max,) = Psi_a' z in slot order (zeros on unused slots). Only indices whose proposal changes
    gamma are visited (``_first_change``); all other proposals are "stay" and cost nothing. b_j = psi_t[j]' z
    is formed at the visited j only, and
    b_active is kept in step with the slots. Returns (ActiveSet, b_active, SelectionInfo).
    basis_mask (M,) bool or None: only the True centres are basis functions of the model (padded problems,
    ``mil_padding``); the others stay inactive and the prior counts M = sum(basis_mask) functions, so the chain
    on the unmasked gamma is exactly the unpadded one's (same law, not the same random numbers).
    """
    m = gram.shape[0] if basis_mask is None else jnp.sum(basis_mask).astype(gram.dtype)
    capacity = aset.members.shape[0]
    c = delta2 / (1.0 + delta2)
    log_penalty = 0.5 * jnp.log1p(delta2)          # log (1 + delta2)^{1/2}
    denom = m + prior_a + prior_b - 1.0            # q(0 -> 1) = (K_{-j} + a) / (M + a + b - 1)
    k_prop, k_acc = jax.random.split(key)
    u_prop = jax.random.uniform(k_prop, (gram.shape[0],))
    log_u_acc = jnp.log(jax.random.uniform(k_acc, (gram.shape[0],)))

    def birth(aset, b_a, j):
        full = aset.count >= capacity
        h, s = birth_terms(aset, gram, j, min_pivot)
        b_j = basis_row(psi_t, j) @ z
        delta_q = (b_j - h @ b_a) ** 2 / s              # Q(gamma + j) - Q(gamma)
        accept = (log_u_acc[j] < -log_penalty + 0.5 * c * delta_q) & ~full
        new = lax.cond(accept, lambda a: apply_birth(a, j, h, s), lambda a: a, aset)
        k = jnp.where(accept, aset.count, capacity)     # out of range when refused: the update is dropped
        return new, b_a.at[k].set(b_j, mode="drop"), accept, full

    def death(aset, b_a, j):
        slot = aset.slot_of[j]
        u = aset.inverse @ b_a
        delta_q = -u[slot] ** 2 / jnp.maximum(aset.inverse[slot, slot], jnp.finfo(u.dtype).tiny)
        accept = log_u_acc[j] < log_penalty + 0.5 * c * delta_q
        new = lax.cond(accept, lambda a: apply_death(a, slot), lambda a: a, aset)
        last = aset.count - 1                            # apply_death moves the last used slot into ``slot``
        moved = b_a.at[slot].set(b_a[last]).at[last].set(0.0)
        return new, jnp.where(accept, moved, b_a), accept, jnp.zeros((), bool)

    def body(carry):
        aset, b_a, j, _, proposals, accepted, hits = carry
        is_death = aset.slot_of[j] >= 0
        aset, b_a, accept, full = lax.cond(is_death, death, birth, aset, b_a, j)
        nxt, found = _first_change(aset, u_prop, j + 1, prior_a, denom, basis_mask)
        return (aset, b_a, nxt, found, proposals + 1, accepted + accept.astype(jnp.int32),
                hits + full.astype(jnp.int32))

    j0, found0 = _first_change(aset, u_prop, 0, prior_a, denom, basis_mask)
    zero = jnp.zeros((), jnp.int32)
    carry = (aset, b_active, j0, found0, zero, zero, zero)
    aset, b_active, _, _, proposals, accepted, hits = lax.while_loop(lambda cr: cr[3], body, carry)
    return aset, b_active, SelectionInfo(proposals=proposals, accepted=accepted, capacity_hits=hits)


def draw_beta(key: jax.Array, aset: ActiveSet, rows: jnp.ndarray, b_active: jnp.ndarray, delta2: jnp.ndarray,
              ridge: float) -> jnp.ndarray:
    """(K_max,) beta_a ~ N(c H b_a, c H) in slot order (zeros on unused slots), c = delta2 / (1 + delta2);
    rows (K_max, N) = ``active_rows``, b_active (K_max,) = rows @ z."""
    m = slot_mask(aset)
    c = delta2 / (1.0 + delta2)
    k1, k2 = jax.random.split(key)
    e1 = jax.random.normal(k1, (rows.shape[1],))
    e2 = jax.random.normal(k2, m.shape)
    u = rows @ e1 + jnp.sqrt(ridge) * e2          # ~ N(0, A_aa) on the used slots
    beta = aset.inverse @ (c * b_active + jnp.sqrt(c) * u)
    return jnp.where(m, beta, 0.0)


def prior_quadratic_form(aset: ActiveSet, gram: jnp.ndarray, beta: jnp.ndarray) -> jnp.ndarray:
    """beta_a' A_aa beta_a (the g-prior's quadratic form, times delta2)."""
    return beta @ active_gram(gram, aset) @ beta


def scale_move_shape(n_latent: int, n_active: jnp.ndarray) -> jnp.ndarray:
    """Shape (N + K) / 2 of the Gamma law of g^2 in ``scale_move``."""
    return 0.5 * (n_latent + n_active)


def scale_move(standard_gamma: jnp.ndarray, z: jnp.ndarray, f: jnp.ndarray, beta: jnp.ndarray, quad: jnp.ndarray,
               delta2: jnp.ndarray):
    """Marginal-augmentation rescaling of (Z, beta) (Liu & Wu 1999, PX-DA; Imai & van Dyk 2005 for probit).

    The group move (z, beta) -> (g z, g beta), g > 0, keeps every sign of z, hence every group observation.
    Drawing g from pi(g z, g beta) |J_g| / g (Liu & Sabatti 2000's generalized Gibbs, Jacobian g^(N + K),
    Haar measure dg / g) leaves p(z, beta | gamma, delta2, data) invariant:
        g^2 ~ Gamma((N + K) / 2, rate = (||z - f||^2 + beta_a' A_aa beta_a / delta2) / 2),  f = Psi_a beta_a.
    It moves the joint scale of (Z, beta) in one step, the direction the data-augmentation Gibbs sampler of
    probit models crawls along (Kueck's sampler without it: Listing 4.1).
    standard_gamma: a Gamma(``scale_move_shape(N, K)``, 1) draw. Returns (g z, g f, g beta, g^2 quad).
    """
    rate = 0.5 * (jnp.sum((z - f) ** 2) + quad / delta2)
    g2 = standard_gamma / rate
    g = jnp.sqrt(g2)
    return g * z, g * f, g * beta, g2 * quad


def delta2_shape(n_active: jnp.ndarray, alpha0: float) -> jnp.ndarray:
    """Shape alpha0 + K/2 of the inverse-gamma conditional of delta2."""
    return alpha0 + 0.5 * n_active


def draw_delta2(standard_gamma: jnp.ndarray, quad: jnp.ndarray, beta0: float) -> jnp.ndarray:
    """delta2 ~ IG(alpha0 + K/2, beta0 + quad / 2), quad = beta_a' A_aa beta_a, for a prior IG(alpha0, beta0);
    standard_gamma: a Gamma(``delta2_shape(K, alpha0)``, 1) draw (both Gamma draws of a sweep come from one
    vectorized call: the Gamma sampler is costly to compile)."""
    return (beta0 + 0.5 * quad) / standard_gamma


def delta2_metropolis_step(key: jax.Array, delta2: jnp.ndarray, n_active: jnp.ndarray, quad: jnp.ndarray,
                           prior_log_prob: Callable, step: float = 0.5):
    """Random-walk MH on log delta2 for a non-conjugate prior; returns (delta2, accepted)."""
    def log_target(log_d2):  # p(delta2) N(beta_a; 0, delta2 H) * |d delta2 / d log delta2|
        d2 = jnp.exp(log_d2)
        return prior_log_prob(d2) - 0.5 * n_active * log_d2 - 0.5 * quad / d2 + log_d2

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
    from zoo.inference.linalg import spd_solve   # not LAPACK: see inference/linalg.py
    n = gamma.shape[0]
    k = jnp.sum(gamma)
    mask = gamma.astype(bool)
    block = jnp.where(mask[:, None] & mask[None, :], gram, 0.0) + jnp.diag(jnp.where(mask, 0.0, 1.0))
    b_a = jnp.where(mask, b, 0.0)
    q = b_a @ spd_solve(block, b_a)
    c = delta2 / (1.0 + delta2)
    return betaln(k + prior_a, n - k + prior_b) - 0.5 * k * jnp.log1p(delta2) + 0.5 * c * q
