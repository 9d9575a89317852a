"""Kernel choice by inner cross-validation for kueck04 (``zoo.experiments.kueck04_select``)."""
import numpy as np
import pytest

from zoo.data import Bags
from zoo.experiments.kueck04_select import _P_FLOOR, log_score, nested_cross_validate


def test_log_score_is_the_mean_log_probability_of_the_labels_floored():
    p = np.array([0.9, 0.2, 1.0, 0.0])
    y = np.array([1, 0, 0, 0])
    expected = np.mean(np.log([0.9, 0.8, _P_FLOOR, 1.0]))
    assert log_score(p, y) == pytest.approx(expected, rel=1e-12)


@pytest.mark.slow
def test_nested_cross_validation_picks_the_best_inner_setting_per_outer_fold():
    rng = np.random.default_rng(0)
    sizes = rng.integers(2, 5, size=18)
    bag_ids = np.repeat(np.arange(18), sizes)
    labels = np.arange(18) % 2
    hot = (labels[bag_ids] == 1) & (rng.random(bag_ids.size) < 0.5)
    data = Bags(rng.normal(size=(bag_ids.size, 2)) + 2.0 * hot[:, None], bag_ids, bag_labels=labels)
    folds = np.arange(18) % 3
    grid = (("gaussian", 1.0), ("cauchy", 0.5))
    run = nested_cross_validate(data, folds, n_inner=2, inner_sweeps=20, outer_sweeps=20, max_active=8, grid=grid)
    assert run.scores.shape == (18,) and np.all((run.scores >= 0) & (run.scores <= 1))
    assert [grid[int(np.argmax(inner))] for inner in run.inner] == run.chosen
    subset = nested_cross_validate(data, folds, n_inner=2, inner_sweeps=20, outer_sweeps=20, max_active=8, grid=grid,
                                   basis=10)                                # 10 k-means++ centres of ~60 instances
    assert subset.scores.shape == (18,) and np.all(np.isfinite(subset.scores))
