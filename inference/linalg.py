"""Fixed-capacity active set with an incrementally updated inverse Gram block (Kueck 2004, Sec. 4.2).

The kernel-selection move needs, for the active set a = {i : gamma_i = 1}, H = (A_aa)^{-1} with
A = Psi'Psi + eps I precomputed once (eps: a tiny ridge so duplicate instances never make A_aa singular).
The thesis updates H by Sherman-Morrison in O(K^2) per toggle instead of refactoring; so do we, with the
partitioned-inverse (Schur complement) formulas:

- birth of j (appended at slot K): h = H g, g = A_{a j}, s = A_jj - g'h (> 0),
  H' = [[H + h h'/s, -h/s], [-h'/s, 1/s]];
- death of slot p: move p to the last slot l (a symmetric permutation), then
  H' = H_{-l,-l} - H_{-l,l} H_{l,-l} / H_ll.

Shapes are fixed (capacity K_max) so everything JIT-compiles: slots K..K_max-1 hold zeros, ``members`` holds
the instance index of each slot (padding: 0, masked by ``count``), ``slot_of`` the inverse map (-1: inactive).
"""
from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
from jax import lax

__all__ = ["ActiveSet", "active_set_from_mask", "slot_mask", "birth_terms", "apply_birth", "apply_death",
           "active_gram", "dense_inverse", "cholesky_lower", "solve_lower", "solve_lower_transpose",
           "triangular_inverse_lower"]


class ActiveSet(NamedTuple):
    members: jnp.ndarray   # (K_max,) int: instance index in each slot (valid for slots < count)
    slot_of: jnp.ndarray   # (N,) int: slot of each instance, -1 when inactive
    count: jnp.ndarray     # () int: K
    inverse: jnp.ndarray   # (K_max, K_max): (A_aa)^{-1} in the leading K x K block, zeros elsewhere


def slot_mask(aset: ActiveSet) -> jnp.ndarray:
    """(K_max,) bool: slots in use."""
    return jnp.arange(aset.members.shape[0]) < aset.count


def active_gram(gram: jnp.ndarray, aset: ActiveSet) -> jnp.ndarray:
    """(K_max, K_max) A_aa in slot order, zeros outside the used block."""
    m = slot_mask(aset)
    block = gram[aset.members][:, aset.members]
    return jnp.where(m[:, None] & m[None, :], block, 0.0)


def dense_inverse(gram: jnp.ndarray, aset: ActiveSet) -> jnp.ndarray:
    """(K_max, K_max) fresh inverse of A_aa (identity-padded, then re-zeroed): the reference for tests and init."""
    m = slot_mask(aset)
    block = active_gram(gram, aset) + jnp.diag(jnp.where(m, 0.0, 1.0))
    inv = jnp.linalg.inv(block)
    return jnp.where(m[:, None] & m[None, :], inv, 0.0)


def active_set_from_mask(gram: jnp.ndarray, active: jnp.ndarray, capacity: int) -> ActiveSet:
    """Build an ActiveSet (fresh inverse) from a (N,) bool mask with at most ``capacity`` members.

    Used at initialization only; the sampler then updates it incrementally.
    """
    n = active.shape[0]
    if capacity > n:
        raise ValueError(f"capacity: {capacity} exceeds the number of candidate kernels {n}")
    count = jnp.minimum(jnp.sum(active), capacity).astype(jnp.int32)
    order = jnp.argsort(~active, stable=True)          # active indices first, in increasing order
    slots = jnp.arange(capacity)
    members = jnp.where(slots < count, order[:capacity], 0)
    slot_of = jnp.full((n,), -1).at[jnp.where(slots < count, members, n)].set(slots, mode="drop")
    aset = ActiveSet(members=members, slot_of=slot_of, count=count,
                     inverse=jnp.zeros((capacity, capacity), gram.dtype))
    return aset._replace(inverse=dense_inverse(gram, aset))


def birth_terms(aset: ActiveSet, gram: jnp.ndarray, j: jnp.ndarray, min_pivot: float):
    """(h, s) of adding instance j: h = H A_{a j} (K_max,), s = A_jj - A_{j a} h (Schur complement, >= min_pivot)."""
    m = slot_mask(aset)
    g = jnp.where(m, gram[j][aset.members], 0.0)           # row j (A is symmetric): one contiguous read
    h = aset.inverse @ g
    s = jnp.maximum(gram[j, j] - g @ h, min_pivot)
    return h, s


def apply_birth(aset: ActiveSet, j: jnp.ndarray, h: jnp.ndarray, s: jnp.ndarray) -> ActiveSet:
    """Append instance j at slot K with the partitioned-inverse update (O(K_max^2))."""
    k = aset.count
    inv = aset.inverse + jnp.outer(h, h) / s
    col = (-h / s).at[k].set(1.0 / s)
    inv = inv.at[k, :].set(col).at[:, k].set(col)
    return ActiveSet(members=aset.members.at[k].set(j), slot_of=aset.slot_of.at[j].set(k), count=k + 1,
                     inverse=inv)


def apply_death(aset: ActiveSet, slot: jnp.ndarray) -> ActiveSet:
    """Remove the member in ``slot``: swap it with the last used slot, then drop the last row/column (O(K_max^2))."""
    last = aset.count - 1
    idx = jnp.arange(aset.members.shape[0])
    perm = jnp.where(idx == slot, last, jnp.where(idx == last, slot, idx))
    inv = aset.inverse[perm][:, perm]
    members = aset.members[perm]
    col = inv[:, last]
    h_ll = jnp.maximum(inv[last, last], jnp.finfo(inv.dtype).tiny)   # > 0 in exact arithmetic
    inv = inv - jnp.outer(col, col) / h_ll
    keep = idx < last
    inv = jnp.where(keep[:, None] & keep[None, :], inv, 0.0)
    removed = aset.members[slot]
    slot_of = aset.slot_of.at[members[slot]].set(slot).at[removed].set(-1)
    members = members.at[last].set(0)
    return ActiveSet(members=members, slot_of=slot_of, count=last, inverse=inv)


# --- small dense factorizations in plain JAX ------------------------------------------------------------------
# For the K_max x K_max systems of the collapsed beta move (and the p x p inverses of ``collapsed_niw``). Not
# jnp.linalg / jax.scipy.linalg: on the CPU those are LAPACK custom calls that, batched under vmap (thousands of
# chains in the joint-distribution tests), split the batch over the runtime's thread pool; two of them in flight
# at once deadlocked JAX 0.10.2 on 2 cores (potrf and getrf both waiting in ParallelBatchMap). These loops compile
# to ordinary batched HLO, unrolled for small n (a CPU while-loop iteration costs about as much as one of these
# tiny steps).
_UNROLL_UP_TO = 32


def _loop(n, body, init):
    return lax.fori_loop(0, n, body, init, unroll=n <= _UNROLL_UP_TO)

def cholesky_lower(a: jnp.ndarray) -> jnp.ndarray:
    """(n, n) lower L with L L' = a, column by column (O(n^3)); NaN where a is not positive definite."""
    n = a.shape[-1]
    idx = jnp.arange(n)

    def column(j, low):
        s = a[:, j] - low @ low[j, :]            # low holds columns < j; row j of it: the L_jk, k < j
        d = jnp.sqrt(s[j])
        return low.at[:, j].set(jnp.where(idx >= j, s / d, 0.0))

    return _loop(n, column, jnp.zeros_like(a))


def triangular_inverse_lower(low: jnp.ndarray) -> jnp.ndarray:
    """(..., n, n) L^{-1} of lower-triangular L (..., n, n), row by row (forward substitution on the identity). Why
    not solve_triangular(L, I): XLA's CPU triangular solve is a library call that took 2.1-2.2 us for n = 16, this
    0.7-0.8 us (and 200 right-hand sides through it cost 3x a product with L^{-1})."""
    n = low.shape[-1]
    idx = jnp.arange(n)

    def one(low):
        def row(i, inv):
            # row i of L^{-1}: (e_i - L[i, :i] inv[:i]) / L_ii; rows >= i of inv are still 0
            return inv.at[i].set((jnp.where(idx == i, 1.0, 0.0) - low[i] @ inv) / low[i, i])
        # rolled even for small n: unrolled at its six call sites, it doubled the Gustafson sweep's compile time
        return lax.fori_loop(0, n, row, jnp.zeros_like(low))

    return jnp.vectorize(one, signature="(n,n)->(n,n)")(low)


def solve_lower(low: jnp.ndarray, b: jnp.ndarray) -> jnp.ndarray:
    """x with L x = b (forward substitution), b (n,)."""
    b = jnp.asarray(b)
    n = b.shape[0]

    def step(i, x):
        return x.at[i].set((b[i] - low[i] @ x) / low[i, i])     # x_k = 0 for k >= i still

    return _loop(n, step, jnp.zeros_like(b))


def solve_lower_transpose(low: jnp.ndarray, b: jnp.ndarray) -> jnp.ndarray:
    """x with L' x = b (back substitution), b (n,)."""
    b = jnp.asarray(b)
    n = b.shape[0]

    def step(t, x):
        i = n - 1 - t
        return x.at[i].set((b[i] - low[:, i] @ x) / low[i, i])  # x_k = 0 for k <= i still

    return _loop(n, step, jnp.zeros_like(b))
