"""Kueck 2004, Bayesian multiple-instance learning: training data -> the sampler's arrays (``prepare``).

Moved out of ``zoo.papers.kueck04`` (which re-exports every name here) to keep that module under the project's
~450-line guideline. ``bag_labels`` validates what each variant needs (ValueError naming the field) and codes the
group labels; ``_layout`` packs the bags into a padded (G, n_max) index; ``prepare`` standardizes the features,
picks the kernel width (``median_distance``) and the basis centres, and builds psi (stored, or rows on demand) and
the ridged Gram psi'psi, plus the measurement models' count weights; ``MILPrepared`` holds the result.
"""
from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np

from zoo.data.containers import Bags
from zoo.inference.mil.basis import kmeans_pp_indices
from zoo.inference.mil.rows import blocked_gram, rows_on_demand
from zoo.inference.mil.orthant_sampler import GroupLayout, measurement_log_weight
from zoo.models.mil import (LABEL_AT_LEAST_ONE, LABEL_FREE, LABEL_MIXED, LABEL_NEGATIVE, LABEL_POSITIVE,
                                   gram_matrix)

__all__ = ["MILPrepared", "bag_labels", "median_distance", "prepare"]

_CODE = {"negative": LABEL_NEGATIVE, "mixed": LABEL_MIXED, "positive": LABEL_POSITIVE}
#: the count DP of the measurement models holds (n_max, G, n_max + 1) floats; refuse beyond this
_MAX_COUNT_DP_CELLS = 50_000_000


@dataclasses.dataclass(frozen=True)
class MILPrepared:
    """Training data turned into the sampler's arrays (and what prediction needs to transform new data)."""
    X: np.ndarray            # (M, D) the basis-function centres: standardized training features (all N, or the
    #                          ``basis`` option's subset)
    mean: np.ndarray
    scale: np.ndarray
    width: float
    psi: np.ndarray | None   # (N, M); None: rows on demand (``instances``, ``zoo.inference.mil.rows``)
    gram: np.ndarray         # (M, M) psi'psi + ridge I
    ridge: float
    layout: GroupLayout
    kind: np.ndarray         # (G,) constraint codes for the Z sampler
    family: np.ndarray       # (G,) label family for the program
    group_label: np.ndarray  # (G,) observed label codes
    fraction: np.ndarray | None
    log_weight: np.ndarray | None
    instances: np.ndarray | None = None   # (N, D) standardized training instances, with psi None (rows on demand)


def _layout(bag_ids: np.ndarray) -> GroupLayout:
    n_groups = int(bag_ids.max()) + 1
    size = np.bincount(bag_ids, minlength=n_groups)
    order = np.argsort(bag_ids, kind="stable")
    start = np.r_[0, np.cumsum(size)[:-1]]
    pos = np.arange(bag_ids.size) - start[bag_ids[order]]
    index = np.zeros((n_groups, size.max()), np.int64)
    valid = np.zeros_like(index, bool)
    index[bag_ids[order], pos] = order
    valid[bag_ids[order], pos] = True
    return GroupLayout(index=index, valid=valid, size=size)


def bag_labels(variant: str, data: Bags):
    """(kind, family, observed label codes) per group, validating what the variant needs."""
    if variant == "supervised":
        if data.instance_labels is None:
            raise ValueError("instance_labels: the supervised model needs instance labels")
        if data.instance_labels.sum() == 0:
            raise ValueError("instance_labels: every instance is negative; there is nothing to learn")
        code = np.where(data.instance_labels == 1, LABEL_POSITIVE, LABEL_NEGATIVE)
        return code, np.zeros_like(code), code
    n_bags = data.n_bags
    if variant == "measurement":
        if data.fractions is None:
            raise ValueError("fractions: the measurement model needs a guessed share of positives per bag")
        if data.fractions.max() == 0:
            raise ValueError("fractions: every bag is guessed to hold no positive; there is nothing to learn")
        free = np.full(n_bags, LABEL_FREE)
        return free, free, free
    if variant == "hybrid" and data.fractions is None:
        raise ValueError("fractions: the hybrid model needs a guessed share of positives per bag")
    if data.group_labels is not None:
        code = np.array([_CODE[g] for g in data.group_labels])
        family = np.zeros(n_bags, np.int64)
        size = np.bincount(data.bag_ids, minlength=n_bags)
        small = np.flatnonzero((code == LABEL_MIXED) & (size < 2))
        if small.size:
            raise ValueError(f"group_labels: bag {small[0]} is 'mixed' but has a single instance")
        if np.all(code == LABEL_NEGATIVE):
            raise ValueError("group_labels: every bag is negative; there is nothing to learn")
    elif data.bag_labels is not None:
        code = np.where(data.bag_labels == 1, LABEL_AT_LEAST_ONE, LABEL_NEGATIVE)
        family = np.full(n_bags, LABEL_AT_LEAST_ONE)
        if data.bag_labels.sum() == 0:
            raise ValueError("bag_labels: every bag is negative; there is nothing to learn")
    else:
        raise ValueError(f"group_labels: the {variant} model needs group_labels or bag_labels")
    return code, family, code


def median_distance(X: np.ndarray, max_points: int = 1000, seed: int = 0) -> float:
    """Median Euclidean distance between distinct rows (a random subset of ``max_points`` rows if larger)."""
    rng = np.random.default_rng(seed)
    if X.shape[0] > max_points:
        X = X[rng.choice(X.shape[0], max_points, replace=False)]
    sq = np.sum(X * X, 1)[:, None] + np.sum(X * X, 1)[None, :] - 2 * X @ X.T
    d = np.sqrt(np.maximum(sq[np.triu_indices(X.shape[0], 1)], 0))
    d = d[d > 0]
    return float(np.median(d)) if d.size else 1.0


def prepare(spec, data, rows: str | None = None) -> MILPrepared:
    """Validate ``data`` for the spec's variant (ValueError naming the field) and build the sampler's arrays.
    ``rows``: "stored" (psi (N, M) kept), "on_demand" (no N x M matrix: the Gram accumulated in blocks, rows of
    psi' computed by the sweep when needed; no intercept), None: by ``mil_rows.rows_on_demand`` (N x M above
    200 million entries). Both give the same draws up to rounding."""
    if rows not in (None, "stored", "on_demand"):
        raise ValueError(f"rows: {rows!r} is not None, 'stored' or 'on_demand'")
    if not isinstance(data, Bags):
        raise ValueError(f"data: expected zoo.data.Bags, got {type(data).__name__}")
    opts = spec.options
    variant = opts["variant"]
    kind, family, observed = bag_labels(variant, data)
    bag_ids = np.arange(data.X.shape[0]) if variant == "supervised" else data.bag_ids
    layout = _layout(bag_ids)
    X = data.X
    if opts["standardize"]:
        mean, scale = X.mean(0), X.std(0)
        scale = np.where(scale > 0, scale, 1.0)
    else:
        mean, scale = np.zeros(X.shape[1]), np.ones(X.shape[1])
    Xs = (X - mean) / scale
    width = opts["width"] if opts["width"] is not None else median_distance(Xs)
    centres = Xs if opts.get("basis") is None else Xs[kmeans_pp_indices(Xs, opts["basis"])]
    if rows is None:
        rows = "on_demand" if rows_on_demand(Xs.shape[0], centres.shape[0], opts["intercept"]) else "stored"
    if rows == "on_demand" and opts["intercept"]:
        raise ValueError("rows: rows on demand need intercept=False (the column of ones has no centre)")
    if rows == "stored":
        psi = np.asarray(gram_matrix(jnp.asarray(Xs), jnp.asarray(centres), opts["kernel"], width,
                                     opts["intercept"]))
        gram = psi.T @ psi
    else:
        psi = None
        gram = blocked_gram(Xs, centres, lambda x, c: gram_matrix(jnp.asarray(x), jnp.asarray(c), opts["kernel"],
                                                                  width))
    ridge = opts["ridge"] * max(float(np.mean(np.diag(gram))), 1e-300)
    gram = gram + ridge * np.eye(gram.shape[0])
    fraction, log_weight = None, None
    if variant in ("measurement", "hybrid"):
        n_max = layout.index.shape[1]
        if n_max * n_max * layout.index.shape[0] > _MAX_COUNT_DP_CELLS:
            raise ValueError(f"bag_ids: bags of up to {n_max} instances are too large for the exact "
                             f"measurement sampler's count table; split the bags")
        fraction = data.fractions
        log_weight = np.asarray(measurement_log_weight(jnp.asarray(fraction), jnp.asarray(layout.size),
                                                       float(opts["chi"]), n_max))
    if not np.all(np.isfinite(gram if psi is None else psi)):
        raise ValueError("X: the kernel matrix has non-finite entries (check the features and the width)")
    return MILPrepared(X=centres, mean=mean, scale=scale, width=float(width), psi=psi, gram=gram, ridge=ridge,
                       layout=layout, kind=np.asarray(kind), family=np.asarray(family),
                       group_label=np.asarray(observed), fraction=fraction, log_weight=log_weight,
                       instances=Xs if psi is None else None)
