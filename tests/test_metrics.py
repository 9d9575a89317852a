"""zoo.metrics: the scores the experiments share, equal to scikit-learn's where it computes the same."""
import numpy as np
import pytest
from sklearn.metrics import mean_squared_error, roc_auc_score

from zoo.metrics import auc, region_label_correct, rms


def _pairwise_auc(scores, labels) -> float:
    """The definition: Pr(score of a positive > score of a negative), ties 1/2, over all pairs."""
    pos, neg = scores[labels], scores[~labels]
    return float((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auc_equals_sklearn_and_the_pairwise_definition_with_ties(seed):
    rng = np.random.default_rng(seed)
    labels = rng.random(60) < 0.4
    scores = np.round(rng.normal(size=60) + labels, 1)          # rounded: many ties
    assert auc(scores, labels) == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    assert auc(scores, labels) == pytest.approx(_pairwise_auc(scores, labels), abs=1e-12)


def test_auc_one_class_is_nan_and_bad_shape_is_value_error():
    assert np.isnan(auc(np.arange(4.0), np.ones(4, bool)))
    with pytest.raises(ValueError, match="scores"):
        auc(np.arange(3.0), np.array([0, 1, 0, 1]))


def test_rms_equals_sklearn_on_flattened_arrays():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(7, 5)), rng.normal(size=(7, 5))
    assert rms(a, b) == pytest.approx(np.sqrt(mean_squared_error(b.ravel(), a.ravel())), rel=1e-12)
    assert rms(a, a) == 0.0
    with pytest.raises(ValueError, match="estimate"):
        rms(a, b[:, :4])


def test_region_label_correct_rule():
    # truth -1 (no label): right only for garbage (0); truth k: right only for k + 1
    estimate = np.array([0, 1, 0, 3, 2])
    truth = np.array([-1, -1, 0, 2, 2])
    assert region_label_correct(estimate, truth).tolist() == [True, False, False, True, False]
