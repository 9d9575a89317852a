"""Kernel rows on demand for the kueck04 sampler (issue 21.4): the sweep without any stored N x M matrix.

The blocked Gibbs sweep reads the design Psi (N, M) only through rows of Psi' = psi_t (M, N): b_j = psi_t[j]' z at
the visited candidates j (``kernel_selection.kernel_selection_sweep``, ``mil_swap.swap_move``) and the K_max
active rows (``kernel_selection.active_rows``), besides the Gram A = Psi'Psi + ridge I (M, M). With
``KernelRows`` (the N training points, the M centres, the width) and the radial function phi of
``zoo.models.mil.KERNELS`` (a static setting, ``MILConfig.row_function``), a row is
psi_t[j, i] = phi(||x_i - c_j|| / width), computed as ``zoo.models.mil.gram_matrix`` does (the same expansion
|x|^2 + |c|^2 - 2 x.c), so both paths give the same draws up to rounding. Memory: O(N D + M^2 + K_max N) instead
of 2 N M floats; time: each row costs O(N D) instead of O(N) (``rows_on_demand`` says when to use it).
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import jax.numpy as jnp
import numpy as np

__all__ = ["KernelRows", "kernel_rows", "row_source", "blocked_gram", "rows_on_demand", "ON_DEMAND_ABOVE"]

#: N x M above which ``rows_on_demand`` picks rows on demand: 200 million entries = 1.6 GB per float64 copy (the
#: stored path keeps two, psi and psi_t). Below it the stored matrix is kept because it is the faster path: a row
#: costs O(N) instead of O(N D) (100,000 instances x 500 centres, D = 10, one core under load ~12: 0.117 s per
#: sweep stored, peak RSS 2.09 GB; 1.85 s per sweep on demand, peak RSS 0.99 GB)
ON_DEMAND_ABOVE = 200_000_000


class KernelRows(NamedTuple):
    """What a row needs: x (N, D) the (standardized) training points, centres (M, D), width ()."""
    x: jnp.ndarray
    centres: jnp.ndarray
    width: jnp.ndarray


def rows_on_demand(n_instances: int, n_basis: int, intercept: bool) -> bool:
    """The documented rule: rows on demand when N x M > ``ON_DEMAND_ABOVE`` (where the two stored copies would
    take more than 3.2 GB) and there is no intercept column (a column of ones has no centre)."""
    return (not intercept) and n_instances * n_basis > ON_DEMAND_ABOVE


def kernel_rows(rows: KernelRows, phi: Callable, idx: jnp.ndarray) -> jnp.ndarray:
    """(len(idx), N) psi_t[idx] = phi(||x - c_idx|| / width); idx (k,) int."""
    c = rows.centres[idx]
    sq = jnp.sum(rows.x * rows.x, 1)[None, :] + jnp.sum(c * c, 1)[:, None] - 2.0 * c @ rows.x.T
    return phi(jnp.sqrt(jnp.maximum(sq, 0.0)) / rows.width)


def row_source(psi_t, rows, phi):
    """What the sweep reads rows from: psi_t (M, N) when stored, else a function j -> row (N,) on demand."""
    if rows is None:
        return psi_t
    return lambda j: kernel_rows(rows, phi, jnp.reshape(j, (1,)))[0]


def blocked_gram(x: np.ndarray, centres: np.ndarray, kernel_matrix: Callable, block: int = 16384) -> np.ndarray:
    """(M, M) Psi'Psi accumulated over blocks of ``block`` instances, never holding more than block x M of Psi;
    ``kernel_matrix(x_block, centres)`` -> (b, M) (e.g. ``zoo.models.mil.gram_matrix`` with the kernel and width)."""
    m = centres.shape[0]
    gram = np.zeros((m, m))
    for start in range(0, x.shape[0], block):
        psi = np.asarray(kernel_matrix(x[start:start + block], centres), dtype=np.float64)
        gram += psi.T @ psi
    return gram
