"""kueck04 on the MIL benchmarks with the kernel chosen on training data only (issue 19.2): nested cross-validation.

For each outer fold, the kernel type and width are chosen by an inner stratified cross-validation over the outer
training bags alone: every setting of ``GRID`` (kernel x width factor; features standardized with the inner
training mean and deviation; width = factor x the median distance between the standardized outer-training
instances) is fitted on each inner training part with a short chain and scored by the held-out bags' mean log
predictive probability of their labels (a proper scoring rule); the best mean wins and is refitted on the whole
outer training part with the full chain, then scored on the outer test bags. The outer test bags are never seen by
the choice. All inner fits share one compiled sampler, all outer refits another (``kueck04_cv.fit_padded``).
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np

import zoo
from zoo.data import Bags
from zoo.data.mil import stratified_bag_folds, subset_bags

__all__ = ["GRID", "SelectionRun", "nested_cross_validate"]

#: (kernel, width factor): the settings the inner cross-validation chooses among (the thesis' radial kernels
#: with a decaying profile; widths a factor of 2 around the median-distance default)
GRID = tuple((kernel, factor) for kernel in ("gaussian", "cauchy") for factor in (0.5, 1.0, 2.0))
#: lower bound on a held-out bag's predicted probability of its label in the log score (an average over S
#: draws cannot resolve probabilities below about 1 / S)
_P_FLOOR = 1e-3


@dataclasses.dataclass
class SelectionRun:
    """scores (B,) out-of-fold Pr(bag positive); chosen: the setting picked per outer fold; inner: per outer
    fold, the mean inner log score of every setting; seconds: inner (selection) and outer (refit) wall time."""
    scores: np.ndarray
    chosen: list
    inner: list
    seconds: dict
    capacity_hits: int


def _spec(kernel: str, width: float, max_active: int, basis: int | None = None):
    return zoo.model("kueck04.constraint", kernel=kernel, width=float(width), standardize=True,
                     max_active=max_active, basis=basis)


def _standardized_median(train: Bags) -> float:
    from zoo.papers.kueck04_prepare import median_distance
    scale = train.X.std(0)
    return median_distance((train.X - train.X.mean(0)) / np.where(scale > 0, scale, 1.0))


def log_score(p: np.ndarray, y: np.ndarray) -> float:
    """Mean log probability of the labels y (0/1) under Pr(y = 1) = p, floored at ``_P_FLOOR``."""
    q = np.clip(np.where(y == 1, p, 1.0 - p), _P_FLOOR, 1.0)
    return float(np.mean(np.log(q)))


def nested_cross_validate(data: Bags, folds: np.ndarray, *, n_inner: int = 3, inner_sweeps: int = 300,
                          outer_sweeps: int = 1000, max_active: int = 100, grid=GRID,
                          basis: int | None = None) -> SelectionRun:
    """Outer folds ``folds`` (B,); inner: ``n_inner`` stratified folds (seed 1) of each outer training part,
    ``inner_sweeps`` warm-up + sampling sweeps per inner fit, ``outer_sweeps`` each for the refits; ``basis``:
    the model's option (None: a basis function on every training instance; M: M k-means++ centres)."""
    from zoo.papers.kueck04_cv import fit_padded, fold_scores
    outer_ids = np.unique(folds)
    jobs, where = [], []
    t0 = time.perf_counter()
    medians = {}
    for k in outer_ids:
        train_idx = np.flatnonzero(folds != k)
        train = subset_bags(data, train_idx)
        medians[k] = _standardized_median(train)
        inner = stratified_bag_folds(train.bag_labels, n_inner, seed=1)
        for j in range(n_inner):
            part = subset_bags(train, np.flatnonzero(inner != j))
            for s, (kernel, factor) in enumerate(grid):
                jobs.append((_spec(kernel, factor * medians[k], max_active, basis), part, 1000 * int(k) + j))
                where.append((k, j, s, np.flatnonzero(inner == j)))
    inner_fits = fit_padded(jobs, num_warmup=inner_sweeps, num_samples=inner_sweeps)
    table = {k: np.zeros((n_inner, len(grid))) for k in outer_ids}
    for (spec, _, _), fit, (k, j, s, held) in zip(jobs, inner_fits, where):
        train = subset_bags(data, np.flatnonzero(folds != k))
        test = subset_bags(train, held)
        table[k][j, s] = log_score(fold_scores(spec, fit, test), test.bag_labels)
    t1 = time.perf_counter()
    chosen, refits = [], []
    for k in outer_ids:
        kernel, factor = grid[int(np.argmax(table[k].mean(0)))]
        chosen.append((kernel, factor))
        refits.append((_spec(kernel, factor * medians[k], max_active, basis),
                       subset_bags(data, np.flatnonzero(folds != k)), int(k)))
    outer_fits = fit_padded(refits, num_warmup=outer_sweeps, num_samples=outer_sweeps)
    scores = np.zeros(data.n_bags)
    for k, (spec, _, _), fit in zip(outer_ids, refits, outer_fits):
        scores[folds == k] = fold_scores(spec, fit, subset_bags(data, np.flatnonzero(folds == k)))
    return SelectionRun(scores=scores, chosen=chosen, inner=[table[k].mean(0).tolist() for k in outer_ids],
                        seconds={"inner": t1 - t0, "outer": time.perf_counter() - t1},
                        capacity_hits=int(sum(f.capacity_hits for f in outer_fits)))
