"""Z-collapsed birth / death / swap moves of the kernel selection gamma, beta mapped through Laplace fits
(Kueck 2004's model; not in the thesis; ``MILConfig.jump_tries``).

Why (issue 29, ``kueck04_ring`` at 4 chains x (1,000 + 1,000): n_active r-hat 1.55-1.78, about 0.00075 bulk ESS
per chain-sweep): every gamma move of the blocked sweep (``kernel_selection_sweep``, ``swap_move``) is a move of
gamma | Z, delta2. Where the groups are nearly separated, Z | f pins the residuals z - f to unit variance, so Z
carries the current f and with it the current active set (the fraction of missing information is near 1, as for
beta in ``collapsed_beta``). Here Z is integrated out and beta changes together with gamma. The target is

    pi(gamma, beta_a) ∝ p(gamma) N(beta_a; 0, delta2 A_aa^{-1}) prod_g p(obs_g | f),   f = Psi_a beta_a,

at the current delta2 (its prior cancels), p(gamma) = B(K + a, M - K + b) / B(a, b) (tau ~ Beta(a, b)
integrated out, M the number of real basis functions), with the exact group likelihoods of
``collapsed_beta.collapsed_group_log_likelihood`` (MODELS.md Sec. 5).

Each try proposes, with probability 1/3 each, a birth (a kernel j uniformly among the M - K inactive ones), a
death (slot p uniformly among the K active ones) or a swap (p out, j in). beta moves with the set through the
Laplace fits of p(beta_a | gamma, delta2, obs), N(m, (L L')^{-1}) for the current ordered set and N(m', (L'
L'')^{-1}) for the proposed one (``set_fit``: Newton steps from 0, a deterministic function of the ordered set and
delta2): the standardized coordinates e = L_p' (beta_p - m_p) of the current beta, in the order with slot p moved
last (L_p the Cholesky factor of the permuted precision; p = K for a birth), are kept, and

    birth: e' = (e, u), u ~ N(0, 1);   death: e' = e without its last coordinate u;   swap: e' = e;
    beta' = m' + L'^{-T} e'

(the centred proposals of Brooks, Giudici & Roberts 2003: where the fits are good, the ratio is close to the
ratio of the two sets' evidences). A death from the proposed set undoes a birth exactly (and a swap a swap), so
the acceptance ratio of this reversible jump is

    pi(gamma', beta') / pi(gamma, beta) x |L| / |L'| x N(u)^(-1 birth, +1 death) x r(gamma, gamma'),

with the normal's normalizer (2 pi delta2)^(-K/2) |A_aa|^(1/2) in each set's dimension and r the ratio of the
gamma proposals: (M - K) / (K + 1) for a birth, K / (M - K + 1) for a death, 1 for a swap. It leaves
pi(gamma, beta | delta2, obs) invariant, hence (Z integrated out) the posterior's (gamma, beta, delta2)
marginal; the sweep's exact Z | f step afterwards restores the joint (so the move needs ``z_sampler="exact"``).

The fits are computed on the first ``jump_capacity`` slots only (J; a jump to or from a set of more than J
kernels is refused, the same rule both ways, so the move stays exact): O(N J^2 + J^3) per Newton step instead of
O(N K_max^2 + K_max^3). Cost per try: ``ANCHOR_STEPS + NEWTON_STEPS`` Newton steps and one likelihood evaluation
O(N); once per sweep the same for the current set.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax
from jax.scipy.special import betaln

from zoo.inference.linalg import (ActiveSet, apply_birth, apply_death, birth_terms, cholesky_lower,
                                  solve_lower_transpose)
from zoo.inference.mil.collapsed_beta import (ANCHOR_STEPS, CollapsedData, LaplaceFit, _newton,
                                              collapsed_group_log_likelihood, laplace_fit)

__all__ = ["jump_move", "jump_log_target", "set_fit", "BIRTH", "DEATH", "SWAP"]

BIRTH, DEATH, SWAP = 0, 1, 2


def jump_log_target(beta, k, gram_a, mask, loglik, delta2, prior_a, prior_b, m) -> jnp.ndarray:
    """log pi(gamma, beta_a | delta2, obs) up to a constant: log B(K + a, M - K + b) + log N(beta_a; 0, delta2
    A_aa^{-1}) (normalized in K dimensions) + log p(obs | f). gram_a (K_max, K_max) zero outside the used block."""
    chol = cholesky_lower(gram_a + jnp.diag(jnp.where(mask, 0.0, 1.0)))
    log_det_half = jnp.sum(jnp.log(jnp.diag(chol)))          # log |A_aa|^(1/2)
    quad = beta @ gram_a @ beta
    log_normal = -0.5 * k * jnp.log(2.0 * jnp.pi * delta2) + log_det_half - 0.5 * quad / delta2
    return betaln(k + prior_a, m - k + prior_b) + log_normal + loglik


def set_fit(aset: ActiveSet, rows, gram_a, data: CollapsedData, delta2, alpha0,
            beta0) -> tuple[LaplaceFit, jnp.ndarray]:
    """(Laplace fit of beta_a at delta2, anchor) for an ordered active set, rows (J, N) and gram_a (J, J) of its
    first J slots: the anchor as ``collapsed_beta.ensure_anchor`` builds it (Newton steps from 0 on the
    delta2-marginal posterior), then ``laplace_fit`` at delta2: a deterministic function of (set, delta2)."""
    mask = jnp.arange(gram_a.shape[0]) < aset.count
    k = aset.count.astype(gram_a.dtype)
    em_delta2 = lambda b: (beta0 + 0.5 * b @ gram_a @ b) / (alpha0 + 0.5 * k)  # noqa: E731
    anchor, _ = _newton(jnp.zeros(gram_a.shape[0], gram_a.dtype), rows, gram_a, mask, data, em_delta2,
                        ANCHOR_STEPS)
    return laplace_fit(anchor, rows, gram_a, mask, data, delta2), anchor


def _proposed_set(aset: ActiveSet, gram, kind, slot, j, min_pivot) -> ActiveSet:
    """The active set after a birth of j (appended last), a death of ``slot`` (the last slot moved into it) or a
    swap (both: ``slot`` out, j appended last); O(K_max^2) each."""
    h, s = birth_terms(aset, gram, j, min_pivot)
    born = apply_birth(aset, j, h, s)
    reduced = apply_death(aset, slot)
    h2, s2 = birth_terms(reduced, gram, j, min_pivot)
    swapped = apply_birth(reduced, j, h2, s2)
    return jax.tree_util.tree_map(lambda b, d, w: jnp.where(kind == BIRTH, b, jnp.where(kind == DEATH, d, w)),
                                  born, reduced, swapped)


def _sliced(aset: ActiveSet, psi_t, gram, width: int):
    """(rows (J, N), A_aa (J, J), mask (J,)) of the first J slots (zero rows / blocks on unused slots)."""
    mask = jnp.arange(width) < aset.count
    members = aset.members[:width]
    gathered = jax.vmap(psi_t)(members) if callable(psi_t) else psi_t[members]
    rows = jnp.where(mask[:, None], gathered, 0.0)
    gram_a = jnp.where(mask[:, None] & mask[None, :], gram[members][:, members], 0.0)
    return rows, gram_a, mask


def _standard_normal_log_density(u):
    return -0.5 * u * u - 0.5 * jnp.log(2.0 * jnp.pi)


def jump_move(key: jax.Array, aset: ActiveSet, beta_active: jnp.ndarray, delta2: jnp.ndarray, gram: jnp.ndarray,
              psi_t, data: CollapsedData, prior_a, prior_b, alpha0, beta0, tries: int, min_pivot,
              basis_mask=None, jump_capacity: int = 20):
    """``tries`` Z-collapsed birth / death / swap proposals of gamma with beta mapped between the sets' Laplace
    fits (module docstring), at fixed delta2.

    aset: the active set (capacity K_max); beta_active (K_max,) in slot order; gram (M, M); psi_t (M, N) or a
    function j -> row; data: the collapsed likelihood's groups; prior_a, prior_b: Beta prior of tau; alpha0,
    beta0: IG shape of delta2 for the fits' anchors; basis_mask (M,) bool or None: only True centres are basis
    functions; jump_capacity J: the largest set a jump may start from or reach. Returns (aset, beta_active,
    number of accepted tries)."""
    dtype = gram.dtype
    capacity = aset.members.shape[0]
    width = min(int(jump_capacity), capacity)
    eligible = jnp.ones(gram.shape[0], bool) if basis_mask is None else basis_mask
    m = jnp.sum(eligible).astype(dtype)
    idx = jnp.arange(width)

    def evaluate(a: ActiveSet, beta_j):
        """(log pi(gamma, beta), fit) of an ordered set and its first J coordinates of beta."""
        rows, gram_a, mask = _sliced(a, psi_t, gram, width)
        fit, _ = set_fit(a, rows, gram_a, data, delta2, alpha0, beta0)
        k = a.count.astype(dtype)
        loglik = jnp.sum(collapsed_group_log_likelihood(beta_j @ rows, data))
        return jump_log_target(beta_j, k, gram_a, mask, loglik, delta2, prior_a, prior_b, m), fit

    beta0_j = beta_active[:width]
    current, fit = evaluate(aset, beta0_j)

    def one_try(carry, key):
        aset, beta, current, fit, n_acc = carry
        k_kind, k_slot, k_j, k_u, k_acc = jax.random.split(key, 5)
        count = aset.count
        k = count.astype(dtype)
        kind = jax.random.randint(k_kind, (), 0, 3)
        slot = jnp.minimum(jnp.floor(jax.random.uniform(k_slot, dtype=dtype) * k).astype(jnp.int32),
                           jnp.maximum(count - 1, 0))
        inactive = (aset.slot_of < 0) & eligible
        n_inactive = jnp.sum(inactive).astype(dtype)
        j = jax.random.categorical(k_j, jnp.where(inactive, 0.0, -jnp.inf))
        new_count = jnp.where(kind == BIRTH, count + 1, jnp.where(kind == DEATH, count - 1, count))
        possible = jnp.where(kind == BIRTH, n_inactive > 0, jnp.where(kind == DEATH, count > 0,
                                                                      (count > 0) & (n_inactive > 0)))
        possible = possible & (count <= width) & (new_count <= width) & (new_count <= capacity)
        # r(gamma, gamma'): q(gamma | gamma') / q(gamma' | gamma), the 1/3 of the kind cancelling
        log_r = jnp.where(kind == BIRTH, jnp.log(n_inactive) - jnp.log(k + 1.0),
                          jnp.where(kind == DEATH, jnp.log(k) - jnp.log(m - k + 1.0), 0.0))
        # standardized coordinates of the current beta, slot p moved last (a birth removes nothing: p = K)
        last = jnp.maximum(count - 1, 0)
        p = jnp.where(kind == BIRTH, last, slot)
        perm = jnp.where(idx == p, last, jnp.where(idx == last, p, idx))
        precision = fit.chol @ fit.chol.T
        chol_p = cholesky_lower(precision[perm][:, perm])
        e = chol_p.T @ (beta[perm] - fit.mean[perm])
        u_birth = jax.random.normal(k_u, dtype=dtype)
        u_death = e[last]
        e_new = jnp.where(kind == BIRTH, e.at[jnp.minimum(count, width - 1)].set(u_birth),
                          jnp.where(kind == DEATH, e.at[last].set(0.0), e))
        log_u = jnp.where(kind == BIRTH, -_standard_normal_log_density(u_birth),
                          jnp.where(kind == DEATH, _standard_normal_log_density(u_death), 0.0))
        new = _proposed_set(aset, gram, kind, slot, j, min_pivot)
        rows_new, gram_new, mask_new = _sliced(new, psi_t, gram, width)
        fit_new, _ = set_fit(new, rows_new, gram_new, data, delta2, alpha0, beta0)
        e_new = jnp.where(mask_new, e_new, 0.0)
        beta_new = jnp.where(mask_new, fit_new.mean + solve_lower_transpose(fit_new.chol, e_new), 0.0)
        loglik_new = jnp.sum(collapsed_group_log_likelihood(beta_new @ rows_new, data))
        proposed = jump_log_target(beta_new, new.count.astype(dtype), gram_new, mask_new, loglik_new, delta2,
                                   prior_a, prior_b, m)
        log_ratio = proposed - current + fit.log_det_half - fit_new.log_det_half + log_u + log_r
        log_ratio = jnp.where(possible, log_ratio, -jnp.inf)
        # a NaN ratio (an overflowed proposal) is a rejection
        take = jnp.log(jax.random.uniform(k_acc, dtype=dtype)) < jnp.where(jnp.isnan(log_ratio), -jnp.inf,
                                                                            log_ratio)
        pick = lambda a, b: jnp.where(take, a, b)  # noqa: E731
        carry = (jax.tree_util.tree_map(pick, new, aset), pick(beta_new, beta), pick(proposed, current),
                 jax.tree_util.tree_map(pick, fit_new, fit), n_acc + take.astype(jnp.int32))
        return carry, None

    init = (aset, beta0_j, current, fit, jnp.zeros((), jnp.int32))
    (new_aset, beta_j, _, _, n_acc), _ = lax.scan(one_try, init, jax.random.split(key, tries))
    # unchanged when no jump was taken (the slots beyond J keep their values: a set of more than J never jumps)
    beta_out = jnp.where(n_acc > 0, jnp.zeros_like(beta_active).at[:width].set(beta_j), beta_active)
    return new_aset, beta_out, n_acc
