"""A candidate basis smaller than the training set for the sparse kernel probit models (issue 21.4).

Kueck's model centres one basis function on every training point (M = N): the kernel matrix psi is N x N and the
Gram psi'psi M x M, 2.3 GB at N = 6,400 and impossible at 100,000. With ``basis = M`` (option of the kueck04
models) the centres are M of the training points chosen by k-means++ seeding (Arthur & Vassilvitskii 2007): the
first uniformly at random, each next one with probability proportional to its squared distance from the centres
already chosen, so the centres spread over the data as k-means' would, at O(N M D) cost and without iterations.
The model is unchanged otherwise (gamma selects among the M candidates; same priors), so psi is N x M and the
Gram M x M. The chosen indices are returned sorted, so ``basis = N`` keeps every point in its own order and gives
exactly the full model.
"""
from __future__ import annotations

import numpy as np

__all__ = ["kmeans_pp_indices"]


def kmeans_pp_indices(X: np.ndarray, m: int, seed: int = 0) -> np.ndarray:
    """(m,) sorted row indices of ``X`` (N, D) chosen by k-means++ seeding (module docstring); all N when m >= N.
    Rows identical to a chosen one have distance 0 and are never chosen again while others remain."""
    X = np.asarray(X, dtype=float)
    n = X.shape[0]
    if m >= n:
        return np.arange(n)
    rng = np.random.default_rng(seed)
    chosen = np.empty(m, dtype=np.int64)
    chosen[0] = rng.integers(n)
    sq_norm = np.einsum("ij,ij->i", X, X)
    d2 = np.maximum(sq_norm - 2.0 * X @ X[chosen[0]] + sq_norm[chosen[0]], 0.0)
    for k in range(1, m):
        total = d2.sum()
        if total > 0:
            chosen[k] = rng.choice(n, p=d2 / total)
        else:          # every point coincides with a centre: the rest uniformly among the unchosen
            rest = np.setdiff1d(np.arange(n), chosen[:k])
            chosen[k] = rng.choice(rest)
        d2 = np.minimum(d2, np.maximum(sq_norm - 2.0 * X @ X[chosen[k]] + sq_norm[chosen[k]], 0.0))
        d2[chosen[:k + 1]] = 0.0
    return np.sort(chosen)
