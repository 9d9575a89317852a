"""Label switching: relabel the draws of exchangeable components so that component k means the same thing in every
draw and chain.

A mixture's likelihood is the same under any permutation of its components, so an MCMC run may visit several
labellings (within a chain or across chains). Per-component summaries then mix components and r-hat flags the
switching rather than a failure to converge. ``relabel_draws`` aligns every draw to a reference by the assignment
that minimizes the squared distance between its components and the reference's (``scipy.optimize
.linear_sum_assignment``), with the reference re-estimated as the mean of the aligned draws until the labelling
stops changing (the "pivotal" iterative relabelling of Celeux 1998 and Stephens 2000, with squared distance as the
loss). Sites are standardized per feature first, so no site dominates by its scale.

The raw draws are kept; the aligned ones are stored beside them as ``<site>_relabelled``.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

__all__ = ["relabel_draws", "relabel_within_groups", "component_features", "permute_labels", "apply_permutations"]


def component_features(draws: Mapping[str, np.ndarray], axes: Mapping[str, int]) -> np.ndarray:
    """(chain, draw, K, F): for every draw, each component's values of all exchangeable sites, standardized per
    feature over all draws. ``axes[site]`` is the component axis of ``draws[site]`` after (chain, draw)."""
    blocks = []
    for site, axis in axes.items():
        values = np.moveaxis(np.asarray(draws[site], dtype=np.float64), 2 + axis, 2)
        flat = values.reshape(values.shape[:3] + (-1,))
        scale = flat.std(axis=(0, 1, 2), keepdims=True)
        blocks.append(flat / np.where(scale > 0, scale, 1.0))
    return np.concatenate(blocks, axis=-1)


def _best_permutations(features: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """(n, K) permutations: row i lists, for each reference component k, the component of draw i assigned to it."""
    from scipy.optimize import linear_sum_assignment

    # squared distances |f|^2 + |r|^2 - 2 f.r: (n, K draw, K reference) without an (n, K, K, F) intermediate
    cost = ((features ** 2).sum(-1)[:, :, None] + (reference ** 2).sum(-1)[None, None, :]
            - 2.0 * np.einsum("nkf,jf->nkj", features, reference))
    perms = np.empty(features.shape[:2], dtype=np.int64)
    for i in range(features.shape[0]):
        rows, cols = linear_sum_assignment(cost[i])
        perms[i, cols] = rows
    return perms


def permute_labels(labels: np.ndarray, perms: np.ndarray) -> np.ndarray:
    """Component labels (chain, draw, ...) of a discrete site whose values index the components (e.g. which VQ a
    dimension selected), mapped through ``perms`` (chain, draw, K) of ``relabel_draws``: raw label
    ``perm[c, d, k]`` becomes k."""
    inverse = np.argsort(perms, axis=-1)                                  # inverse[c, d, raw] = k
    flat = np.asarray(labels).reshape(labels.shape[:2] + (-1,))
    return np.take_along_axis(inverse, flat, axis=-1).reshape(labels.shape)


def relabel_draws(draws: Mapping[str, np.ndarray], axes: Mapping[str, int], max_rounds: int = 20):
    """Align the components of every draw (see the module docstring).

    draws: site -> (chain, draw, ...) arrays; axes: site -> component axis after (chain, draw) for the exchangeable
    sites (all with the same number of components K). Returns (relabelled draws of those sites, permutations
    (chain, draw, K): ``perm[c, d, k]`` is the raw component that became component k)."""
    features = component_features(draws, axes)
    n_chain, n_draw, n_comp, _ = features.shape
    flat = features.reshape(n_chain * n_draw, n_comp, -1)
    perms = np.tile(np.arange(n_comp), (flat.shape[0], 1))
    reference = flat[-1]  # the last draw of the last chain: well past warm-up
    for _ in range(max_rounds):
        new = _best_permutations(flat, reference)
        aligned = np.take_along_axis(flat, new[:, :, None], axis=1)
        reference = aligned.mean(axis=0)
        if np.array_equal(new, perms):
            break
        perms = new
    perms = perms.reshape(n_chain, n_draw, n_comp)
    return apply_permutations(draws, axes, perms), perms


def apply_permutations(draws: Mapping[str, np.ndarray], axes: Mapping[str, int], perms: np.ndarray) -> dict:
    """Each site of ``axes`` with its component axis reordered by ``perms`` (chain, draw, K)."""
    out = {}
    for site, axis in axes.items():
        values = np.moveaxis(np.asarray(draws[site]), 2 + axis, 2)
        index = perms.reshape(perms.shape + (1,) * (values.ndim - 3))
        aligned = np.take_along_axis(values, np.broadcast_to(index, values.shape), axis=2)
        out[site] = np.moveaxis(aligned, 2, 2 + axis)
    return out


def relabel_within_groups(draws: Mapping[str, np.ndarray], group_axes: Mapping[str, int],
                          state_axes: Mapping[str, int], label_axes: Mapping[str, int] | None = None) -> dict:
    """Align the states within each group, group by group (MCVQ: the states of each VQ, after the VQs themselves
    were aligned by ``relabel_draws``).

    draws: site -> (chain, draw, ...) arrays; ``group_axes[site]`` / ``state_axes[site]``: the group and state
    axes after (chain, draw) of the sites that are matched (same number of groups G and states K in each);
    ``label_axes[site]``: the group axis of a discrete site whose values are state indices (e.g. s (case, vq):
    which state each case took in each VQ), mapped through each group's permutations. Returns the aligned arrays
    of all those sites (the others are not touched)."""
    label_axes = dict(label_axes or {})
    out = {site: np.array(draws[site], copy=True) for site in [*state_axes, *label_axes]}
    first = next(iter(state_axes))
    n_groups = out[first].shape[2 + group_axes[first]]
    for g in range(n_groups):
        # the state axis of a site once its group axis is taken out
        within = {s: state_axes[s] - (state_axes[s] > group_axes[s]) for s in state_axes}
        aligned, perms = relabel_draws({s: np.take(out[s], g, axis=2 + group_axes[s]) for s in state_axes},
                                       within)
        for s in state_axes:
            index = [slice(None)] * out[s].ndim
            index[2 + group_axes[s]] = g
            out[s][tuple(index)] = aligned[s]
        for s, axis in label_axes.items():
            index = [slice(None)] * out[s].ndim
            index[2 + axis] = g
            out[s][tuple(index)] = permute_labels(np.take(out[s], g, axis=2 + axis), perms)
    return out
