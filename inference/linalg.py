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
           "triangular_inverse_lower", "cholesky", "cho_solve", "logdet_from_cholesky", "inverse_from_cholesky", "spd_logdet", "spd_inverse",
           "spd_solve"]


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
    inv = spd_inverse(block)       # A_aa + identity padding: symmetric positive definite (eps ridge)
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


# --- dense factorizations in plain JAX (why: jaxlib 0.10.2's LAPACK kernels can deadlock the CPU runtime) -------
# Every jnp.linalg / jax.scipy.linalg routine that factorizes (cholesky, solve, inv, slogdet, det, cho_solve,
# lu_factor, solve_triangular, eigh, qr, svd) lowers on the CPU to a LAPACK FFI custom call (lapack_dpotrf_ffi,
# lapack_dgetrf_ffi, lapack_dtrsm_ffi, ...). In jaxlib 0.10.2 each of these kernels takes XLA's intra-op thread pool
# and hands a batched call to jax::ParallelBatchMap, which schedules the batch's pieces on that same pool and then
# blocks the calling thread in absl::BlockingCounter::Wait. When the kernel itself already runs on a pool thread
# (XLA's thunk executor runs independent thunks of one program on the pool; PjRt runs an executable whose inputs are
# still being computed on the pool once they are ready) and as many such calls are in flight as the pool has
# threads (2 on a 2-core machine), every pool thread waits for pieces that no thread is left to run: 0 % CPU,
# forever. gdb on the stalled carbonetto03 fit (issue 17) showed exactly that: both tf_XLAEigen workers in
# BlockingCounter::Wait <- ParallelBatchMap, one under lapack_dpotrf_ffi, one under lapack_dgetrf_ffi. Neither
# --xla_cpu_multi_thread_eigen=false nor synchronous dispatch helps (the pool is XLA's, not Eigen's), and
# jaxlib 0.11 compiles the parallel path out of open-source builds. The essence of the reproduction:
#     A = (52, 38, 38) SPD batch;  loop: jnp.linalg.cholesky(f(A)); jax.scipy.linalg.lu_factor(g(A))
# with f, g still running when the two calls are dispatched. It is a race: in isolation (a loop of 300-2000
# such pairs, batched or not, eager or in one jit, with inputs ready or pending, 52 or 1000 matrices) it did not
# stall in any run here; the full fits did (carbonetto03 with 4 restarts on 1000 x 38, gustafson07.fs on
# 7000 x 38, the stacks above). Which calls can deadlock: any batched one (batch > 1: explicit batches, and every call under vmap,
# including a caller's vmap over chains or restarts); an unbatched call runs inline, but it becomes batched as soon
# as anyone vmaps the code around it, so the zoo treats every LAPACK-backed call in inference/, models/ and
# zoo/papers/ as forbidden (tests/inference/test_no_lapack.py greps for them) and factorizes with the loops below, which
# compile to ordinary HLO (no custom call, no pool). The loops stay rolled: unrolled up to n = 32, the Gustafson
# sweep (gustafson07 bench problem, 1 chain, 100 + 400 sweeps) compiled in 20.1 s (FS) / 68.5 s (CVFS) and ran in
# 0.66 / 2.27 s; rolled 10.1 / 25.6 s and 0.51 / 1.29 s (unrolling multiplies the code at every call site).
_UNROLL_UP_TO = 0


def _loop(n, body, init):
    return lax.fori_loop(0, n, body, init, unroll=n <= _UNROLL_UP_TO)

def cholesky_lower(a: jnp.ndarray) -> jnp.ndarray:
    """(n, n) lower L with L L' = a, column by column (O(n^3)); NaN where a is not positive definite."""
    a = jnp.asarray(a)
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
    """x with L x = b (forward substitution), b (n,) or (n, k)."""
    low, b = jnp.asarray(low), jnp.asarray(b)
    n = b.shape[0]

    def step(i, x):
        return x.at[i].set((b[i] - low[i] @ x) / low[i, i])     # x_k = 0 for k >= i still

    return _loop(n, step, jnp.zeros_like(b))


def solve_lower_transpose(low: jnp.ndarray, b: jnp.ndarray) -> jnp.ndarray:
    """x with L' x = b (back substitution), b (n,) or (n, k)."""
    low, b = jnp.asarray(low), jnp.asarray(b)
    n = b.shape[0]

    def step(t, x):
        i = n - 1 - t
        return x.at[i].set((b[i] - low[:, i] @ x) / low[i, i])  # x_k = 0 for k <= i still

    return _loop(n, step, jnp.zeros_like(b))


def cholesky(a: jnp.ndarray) -> jnp.ndarray:
    """(..., n, n) lower Cholesky factor of the symmetric part of a (as LAPACK-backed JAX does: it symmetrizes
    its input), batched over the leading axes; NaN where a is not positive definite."""
    a = 0.5 * (a + jnp.swapaxes(a, -1, -2))
    return jnp.vectorize(cholesky_lower, signature="(n,n)->(n,n)")(a)


def logdet_from_cholesky(low: jnp.ndarray) -> jnp.ndarray:
    """(...,) log|A| = 2 sum log diag L from A's lower Cholesky factor L (..., n, n)."""
    return 2.0 * jnp.sum(jnp.log(jnp.diagonal(low, axis1=-2, axis2=-1)), axis=-1)


def inverse_from_cholesky(low: jnp.ndarray) -> jnp.ndarray:
    """(..., n, n) A^{-1} = L^{-T} L^{-1} from A's lower Cholesky factor L (..., n, n): ``triangular_inverse_lower``
    and a product (8 matrices of p = 16: cho_solve on the identity took 21-36 us, this 6.5-9 us)."""
    w = triangular_inverse_lower(low)
    return jnp.einsum("...ki,...kj->...ij", w, w)


def cho_solve(low: jnp.ndarray, b: jnp.ndarray) -> jnp.ndarray:
    """x with L L' x = b for one lower factor L (n, n) and b (n,) or (n, k) (forward then back substitution)."""
    return solve_lower_transpose(low, solve_lower(low, b))


def spd_logdet(a: jnp.ndarray) -> jnp.ndarray:
    """(...,) log|a| of symmetric positive definite a (..., n, n), via ``cholesky``."""
    return logdet_from_cholesky(cholesky(a))


def spd_inverse(a: jnp.ndarray) -> jnp.ndarray:
    """(..., n, n) a^{-1} = L^{-T} L^{-1} of symmetric positive definite a (..., n, n)."""
    return inverse_from_cholesky(cholesky(a))


def spd_solve(a: jnp.ndarray, b: jnp.ndarray) -> jnp.ndarray:
    """x with a x = b for symmetric positive definite a (..., n, n) and b (..., n, k) (batched as matmul)."""
    return spd_inverse(a) @ b
