"""``zoo.inference.host_random``: the host-side draws of a fitted q. Dirichlet (log-space gamma variates):

Each marginal of Dir(c) is Beta(c_k, sum(c) - c_k): a Kolmogorov-Smirnov test of every marginal against scipy's
Beta CDF checks the distribution, including concentrations far below one where a plain normalized gamma draw
underflows to 0/0."""
from __future__ import annotations

import jax
import numpy as np
import pytest
from scipy import stats

from zoo.inference.host_random import categorical_draws, dirichlet_draws

KEY = jax.random.PRNGKey(3)


@pytest.mark.parametrize("concentration", [[0.5, 2.0, 7.0], [40.0, 40.0]])
def test_every_marginal_is_the_beta_of_the_dirichlet(concentration):
    c = np.asarray(concentration)
    draws = dirichlet_draws(KEY, c, 4000)
    assert draws.shape == (4000, c.size)
    np.testing.assert_allclose(draws.sum(-1), 1.0, rtol=1e-12)
    for k in range(c.size):
        p = stats.kstest(draws[:, k], stats.beta(c[k], c.sum() - c[k]).cdf).pvalue
        assert p > 1e-3, (k, p)


def test_marginals_with_concentrations_far_below_one():
    """Beta(1e-3, b) puts about half its mass below 1e-300, which float64 cannot hold: such draws come out as 0
    (or a denormal). So the check is the marginal CDF at thresholds from 1e-300 up (a binomial tolerance of 5 s.e.),
    where a draw that came out as 0 counts correctly as below every threshold."""
    c = np.array([1e-3, 0.02, 0.3, 1.0])
    n = 20000
    draws = dirichlet_draws(KEY, c, n)
    assert np.isfinite(draws).all()
    np.testing.assert_allclose(draws.sum(-1), 1.0, rtol=1e-12)
    for k in range(c.size):
        marginal = stats.beta(c[k], c.sum() - c[k])
        for t in (1e-300, 1e-100, 1e-20, 1e-5, 0.01, 0.1, 0.5, 0.9):
            p = marginal.cdf(t)
            share = np.mean(draws[:, k] <= t)
            assert abs(share - p) <= 5 * np.sqrt(p * (1 - p) / n) + 1.0 / n, (k, t, share, p)


def test_rows_are_independent_dirichlets_with_their_own_concentration():
    c = np.array([[1.0, 1.0, 1.0], [10.0, 1.0, 0.1]])                  # (2, 3): one Dir per row
    draws = dirichlet_draws(KEY, c, 20000)
    assert draws.shape == (20000, 2, 3)
    np.testing.assert_allclose(draws.mean(0), c / c.sum(-1, keepdims=True), atol=0.01)
    assert abs(np.corrcoef(draws[:, 0, 0], draws[:, 1, 0])[0, 1]) < 0.03


def test_tiny_and_zero_concentrations_give_finite_draws():
    c = np.array([[1e-300, 1e-300, 3.0], [0.0, 1.0, 2.0], [1e-8, 1e-8, 1e-8]])
    draws = dirichlet_draws(KEY, c, 500)
    assert np.isfinite(draws).all()
    np.testing.assert_allclose(draws.sum(-1), 1.0, rtol=1e-12)
    assert np.all(draws[:, 1, 0] == 0.0)                               # a zero concentration: share exactly 0
    # all-tiny concentrations: (nearly) a vertex, each corner equally likely
    corners = draws[:, 2].argmax(-1)
    assert np.all(draws[:, 2].max(-1) > 0.999)
    assert set(np.unique(corners)) == {0, 1, 2}


def test_the_key_fixes_the_draws():
    c = np.array([0.3, 0.7, 2.0])
    np.testing.assert_array_equal(dirichlet_draws(KEY, c, 5), dirichlet_draws(KEY, c, 5))
    assert not np.array_equal(dirichlet_draws(KEY, c, 5), dirichlet_draws(jax.random.PRNGKey(4), c, 5))
    typed = jax.random.key(3)                                        # a typed key seeds the same stream
    np.testing.assert_array_equal(dirichlet_draws(typed, c, 5), dirichlet_draws(KEY, c, 5))


@pytest.mark.parametrize("bad", [[1.0, -0.5], [1.0, np.nan], [0.0, 0.0], [np.inf, 1.0], 2.0])
def test_bad_concentration_is_a_value_error_naming_it(bad):
    with pytest.raises(ValueError, match="concentration"):
        dirichlet_draws(KEY, np.asarray(bad), 3)


def test_categorical_draws_follow_each_rows_probabilities():
    probs = np.array([[0.2, 0.0, 0.5, 0.3], [0.0, 0.0, 0.0, 1.0], [1e-12, 0.5, 0.5 - 1e-12, 0.0]])
    draws = categorical_draws(KEY, probs, 20000)
    assert draws.shape == (20000, 3) and draws.dtype == np.int32
    assert not np.any(draws == 1, axis=0)[0] and np.all(draws[:, 1] == 3) and not np.any(draws[:, 2] == 3)
    for row in (0, 2):
        observed = np.bincount(draws[:, row], minlength=4)
        support = probs[row] > 1e-6
        p = stats.chisquare(observed[support], 20000 * probs[row][support] / probs[row][support].sum()).pvalue
        assert p > 1e-3, (row, p)


def test_categorical_draws_normalize_rows_and_take_no_draw_axis_when_asked():
    weights = np.array([[[2.0, 6.0]], [[5.0, 5.0]]])                  # (2, 1, 2), rows not summing to one
    one = categorical_draws(KEY, weights)
    assert one.shape == (2, 1)
    many = categorical_draws(KEY, weights, 40000)
    np.testing.assert_allclose(many.mean(0)[:, 0], [0.75, 0.5], atol=0.01)
    np.testing.assert_array_equal(categorical_draws(KEY, weights, 7), categorical_draws(KEY, weights, 7))


@pytest.mark.parametrize("bad", [[0.5, -0.1], [0.0, 0.0], [np.nan, 1.0], 1.0])
def test_bad_probabilities_are_a_value_error_naming_them(bad):
    with pytest.raises(ValueError, match="probs"):
        categorical_draws(KEY, np.asarray(bad), 3)
