"""Posterior predictive of the variational fits (issue 30): ross03's replicated cases and yakhnenko's replicated
counts, drawn at each draw of q, and the prior predictive of a zoo model whose program simulates from the priors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import zoo
from zoo.data import Matrix
from zoo.data.ross03 import MatrixDataset


def _two_class_matrix(C=30, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(C) % 2
    X = np.where(y[:, None] == 1, 1.5, -1.5) * np.ones((C, 4)) + 0.3 * rng.normal(size=(C, 4))
    return MatrixDataset(Matrix(X), labels=y)


def _quiet_fit(*args, **kwargs):
    with warnings.catch_warnings():   # short fits fail the convergence checks: not what these tests read
        warnings.simplefilter("ignore")
        return zoo.fit(*args, **kwargs)


@pytest.fixture(scope="module")
def ross_fit():
    return _quiet_fit(zoo.model("ross03.mcvq_supervised", n_vqs=2, n_states=2), _two_class_matrix(), seed=3,
                      max_iter=20, progress_bar=False, monte_carlo_samples=16, num_draws=30)


@pytest.fixture(scope="module")
def topics():
    return zoo.load_dataset("yakhnenko_synthetic", n_images=30)


@pytest.fixture(scope="module")
def lda_fit(topics):
    return _quiet_fit(zoo.model("yakhnenko.mom_lda", n_topics=3), topics, seed=3, max_iter=20, progress_bar=False,
                      num_draws=25)


def test_ross03_replicates_the_cases_at_each_draw_of_q(ross_fit):
    data, fit = _two_class_matrix(), ross_fit
    rep = fit.idata.posterior_predictive["x"]
    assert rep.dims == ("chain", "draw", "case", "dim") and rep.shape[1:] == (30, 30, 4)
    # the replicated cases follow the observed ones (two classes at -1.5 and +1.5, noise sd 0.3)
    mean = rep.mean(dim=("chain", "draw")).values
    observed = np.asarray(data.matrix.values)
    assert np.corrcoef(mean.ravel(), observed.ravel())[0, 1] > 0.9
    # replicates are draws, not the means: their spread around a case's mean is about the state's sd
    assert 0.1 < float(rep.std(dim=("chain", "draw")).mean()) < 1.0


def test_yakhnenko_replicates_each_images_counts_with_its_totals(topics, lda_fit):
    data, fit = topics, lda_fit
    for site, observed in (("words", data.words), ("visual_words", data.visual_words)):
        rep = fit.idata.posterior_predictive[site]
        assert rep.dims[:3] == ("chain", "draw", "image") and rep.shape[1:] == (25,) + observed.shape
        # a multinomial keeps each image's number of tokens exactly
        np.testing.assert_array_equal(rep.values.sum(-1), np.broadcast_to(observed.sum(1), rep.shape[:3]))
        # and puts them where the fitted topics put the observed ones
        mean = rep.mean(dim=("chain", "draw")).values
        assert np.corrcoef(mean.ravel(), np.asarray(observed, float).ravel())[0, 1] > 0.5


def test_prior_predictive_of_a_zoo_model_and_its_refusal(topics, lda_fit, ross_fit):
    """(Adds groups to the module's LDA fit in place: the tests above read other groups.)"""
    from zoo.core.prior_predictive import add_prior_predictive

    add_prior_predictive(lda_fit, num_samples=20)
    words = lda_fit.idata.prior_predictive["words"]
    assert words.dims == ("chain", "draw", "image", "word") and words.shape == (1, 20) + topics.words.shape
    np.testing.assert_array_equal(words.values.sum(-1)[0], np.broadcast_to(topics.words.sum(1), (20, 30)))
    assert {"pi", "phi_w", "phi_b"} <= set(lda_fit.idata.prior.data_vars)
    with pytest.raises(ValueError, match="program_kwargs"):
        add_prior_predictive(ross_fit)
