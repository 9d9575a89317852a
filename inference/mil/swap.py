"""Swap moves of the kernel selection gamma (Kueck 2004's model; not in the thesis): one active kernel i out and
one inactive kernel j in, in a single Metropolis-Hastings step with beta integrated out.

Why (ring60 diagnosis, ``MILConfig.swap_tries``): once the scale of f mixes (``mil_scale``), the inclusion
indicators are the slowest quantities (lag-1 autocorrelation ~0.9): neighbouring kernels substitute for each
other, and the single-site sweep (``kernel_selection.kernel_selection_sweep``) can exchange them only through an
intermediate state with one kernel fewer (a poor fit of Z, rejected) or one more (the (1 + delta2)^(-1/2)
penalty, rejected at the large delta2 of nearly separated groups). A swap keeps K, so the prior of gamma and the
penalty cancel and the ratio is the marginal-likelihood term alone.

Target (as the single-site sweep): p(gamma | Z, delta2) ∝ p(gamma) (1 + delta2)^(-K/2) exp(c/2 Q(gamma)),
c = delta2 / (1 + delta2), Q(gamma) = b_a' A_aa^{-1} b_a, b = Psi' Z.
Proposal: a uniformly chosen active slot p (kernel i), then j among the inactive (unmasked) kernels with
q(j | i) = w_ij / S_i, w_ij = A_ij^2 / (A_ii A_jj) + ``FLOOR`` (the squared cosine of the two basis functions
over the training points: neighbours first; the floor keeps every swap possible), S_i = sum over the inactive k
of w_ik. The reverse move picks i among the inactive of the new set, S'_j = S_j - w_jj + w_ji, so

    accept with min(1, exp(c/2 [Q(gamma') - Q(gamma)]) S_i / S'_j)

(the 1/K of choosing the slot is the same both ways). Q(gamma') - Q(gamma) is the death term of i followed by
the birth term of j on the reduced set (O(K_max^2), ``zoo.inference.linalg``); b_j = Psi_j' Z at the one
proposed j (O(N)), as in the sweep.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from zoo.inference.mil.kernel_selection import basis_row
from zoo.inference.linalg import ActiveSet, apply_birth, apply_death, birth_terms

__all__ = ["swap_weights", "swap_log_ratio", "swap_move", "FLOOR"]

#: added to every proposal weight, so that every inactive kernel can be proposed
FLOOR = 1e-3


def swap_weights(gram: jnp.ndarray, i: jnp.ndarray) -> jnp.ndarray:
    """(M,) w_ij = A_ij^2 / (A_ii A_jj) + FLOOR for all j (symmetric in i, j)."""
    diag = jnp.diagonal(gram)
    return gram[i] ** 2 / (diag[i] * diag) + FLOOR


def swap_log_ratio(delta_q, c, s_i, s_j_after) -> jnp.ndarray:
    """log acceptance ratio of a swap: c/2 (Q' - Q) + log S_i - log S'_j (module docstring)."""
    return 0.5 * c * delta_q + jnp.log(s_i) - jnp.log(s_j_after)


def _one_swap(key, aset: ActiveSet, b_a, gram, psi_t, z, c, min_pivot, eligible):
    k_slot, k_j, k_acc = jax.random.split(key, 3)
    count = aset.count
    slot = jnp.minimum(jnp.floor(jax.random.uniform(k_slot, dtype=gram.dtype) * count).astype(jnp.int32),
                       jnp.maximum(count - 1, 0))
    i = aset.members[slot]
    inactive = (aset.slot_of < 0) & eligible
    w_i = swap_weights(gram, i)
    s_i = jnp.sum(jnp.where(inactive, w_i, 0.0))
    j = jax.random.categorical(k_j, jnp.where(inactive, jnp.log(w_i), -jnp.inf))
    w_j = swap_weights(gram, j)
    s_j_after = jnp.sum(jnp.where(inactive, w_j, 0.0)) - w_j[j] + w_j[i]
    # death of i: Q drops by (H b_a)_p^2 / H_pp; apply_death moves the last used slot into ``slot``
    u = aset.inverse @ b_a
    dq_death = -u[slot] ** 2 / jnp.maximum(aset.inverse[slot, slot], jnp.finfo(u.dtype).tiny)
    reduced = apply_death(aset, slot)
    last = count - 1
    b_red = b_a.at[slot].set(b_a[last]).at[last].set(0.0)
    # birth of j on the reduced set
    h, s = birth_terms(reduced, gram, j, min_pivot)
    b_j = basis_row(psi_t, j) @ z
    dq_birth = (b_j - h @ b_red) ** 2 / s
    log_ratio = swap_log_ratio(dq_death + dq_birth, c, s_i, s_j_after)
    possible = (count > 0) & jnp.any(inactive)
    accept = possible & (jnp.log(jax.random.uniform(k_acc, dtype=gram.dtype))
                         < jnp.where(jnp.isfinite(log_ratio), log_ratio, -jnp.inf))
    swapped = lax.cond(accept, lambda a: apply_birth(a, j, h, s), lambda a: aset, reduced)
    b_new = jnp.where(accept, b_red.at[last].set(b_j), b_a)
    return swapped, b_new, accept


def swap_move(key: jax.Array, aset: ActiveSet, b_active: jnp.ndarray, gram: jnp.ndarray, psi_t: jnp.ndarray,
              z: jnp.ndarray, delta2: jnp.ndarray, tries: int, min_pivot: float, basis_mask=None):
    """``tries`` swap proposals (module docstring) on gamma | Z, delta2 with beta integrated out.

    aset / b_active (K_max,) = Psi_a' z in slot order, as ``kernel_selection_sweep`` keeps them; gram (M, M);
    psi_t (M, N) or a function j -> row (``kernel_selection.basis_row``); basis_mask (M,) bool or None: only the True
    centres may be swapped in. Returns (ActiveSet, b_active, number of accepted swaps)."""
    c = delta2 / (1.0 + delta2)
    eligible = jnp.ones(gram.shape[0], bool) if basis_mask is None else basis_mask

    def body(carry, k):
        aset, b_a = carry
        aset, b_a, accept = _one_swap(k, aset, b_a, gram, psi_t, z, c, min_pivot, eligible)
        return (aset, b_a), accept.astype(jnp.int32)

    (aset, b_active), accepted = lax.scan(body, (aset, b_active), jax.random.split(key, tries))
    return aset, b_active, jnp.sum(accepted)
