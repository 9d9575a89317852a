"""Issue 29: gustafson07's ``num_samples="auto"`` judges each variant's own headline sites. FULL's headline site mu
is not among the sampler's collected draws (mu is integrated out and imputed afterwards); before the fix the rule
judged only FULL's n_relevant, which is fixed at p, and so stopped at its first check as "reached" whatever mu did
(seen on MSRC-v2: "reached" after 250 sweeps with mu's r-hat 2.27)."""
import warnings

import numpy as np
import pytest

import zoo
from zoo.core.convergence import ConvergenceWarning, short_of
from zoo.data.gustafson07 import regions_from_program
from zoo.papers.gustafson07_impute import impute_full


@pytest.fixture(scope="module")
def short_fit():
    """A FULL fit whose target (ESS 1e7) no run reaches: it must stop at its time budget, naming mu."""
    data = regions_from_program("full", n_images=12, n_keywords=4, n_features=3, seed=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        fit = zoo.fit(zoo.model("gustafson07.full"), data, seed=0, num_chains=2, num_warmup=20,
                      num_samples="auto", target_ess=1e7, time_budget=1e-3, progress_bar=False)
    return fit, [w.message for w in caught if isinstance(w.message, ConvergenceWarning)]


def test_full_auto_does_not_stop_while_mu_falls_short(short_fit):
    fit, warned = short_fit
    attrs = fit.idata.posterior.attrs
    assert attrs["zoo_auto_reached"] == 0, attrs["zoo_auto"]
    assert "time budget" in attrs["zoo_auto"] and "mu" in attrs["zoo_auto"]
    assert any("mu" in str(w) for w in warned)


def test_the_checks_impute_each_draw_once_and_keep_earlier_draws(short_fit):
    """The checks' mu: the same draws give the same mu (no re-imputation of earlier draws), and a longer run
    extends it; the values are finite and vary across draws (they are draws, not a constant)."""
    fit, _ = short_fit
    problem, Y = fit.state["problem"], np.asarray(fit.state["draws"]["Y"])
    import jax
    from zoo.papers.gustafson07 import _ImputedMeans
    means = _ImputedMeans(problem, jax.random.PRNGKey(1))
    first = means(Y[:, :100])
    again = means(Y[:, :100])
    longer = means(Y)
    assert first.shape == (2, 100) + fit.idata.posterior["mu"].shape[2:]
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(longer[:, :100], first)
    assert longer.shape[1] == Y.shape[1] and np.isfinite(longer).all()
    assert short_of({"mu": longer}, 1e7)["mu"].startswith(("r-hat", "ESS"))


def test_full_over_the_storage_cap_keeps_a_thinned_posterior_predictive(short_fit, monkeypatch):
    """A long FULL run (``auto`` runs long) or a large one goes over ``MAX_STORED``: Sigma is then dropped from the
    posterior, and the replicated features used to be dropped with it (az.plot_ppc failed on such a fit). They are
    kept at every stride-th draw, from (mu_k, Sigma_k) drawn afresh given that draw's labels, like FS / CVFS's."""
    import arviz as az

    from zoo.papers import gustafson07
    fit, _ = short_fit
    problem, arrays, Y = fit.state["problem"], fit.state["arrays"], np.asarray(fit.state["draws"]["Y"])
    n_chains, n_draws, n = Y.shape
    n_concepts, p = arrays.allowed.shape[1], arrays.X.shape[1]
    # a cap that keeps neither Sigma (chains x draws x K x p x p) nor every draw's replicate: every 10th draw fits
    per_draw = n_chains * max(n * p, 2 * n_concepts * p * p)
    monkeypatch.setattr(gustafson07, "MAX_STORED", per_draw * (n_draws // 10))
    assert n_chains * n_draws * n_concepts * p * p > gustafson07.MAX_STORED       # Sigma is over the cap
    idata = az.from_dict(posterior={"n_relevant": np.full((n_chains, n_draws), p)})
    gustafson07._add_full_parameters(idata, problem, arrays, Y, seed=0)

    assert "Sigma" not in idata.posterior and idata.posterior["mu"].shape == (n_chains, n_draws, n_concepts, p)
    pp = idata.posterior_predictive["X"]
    np.testing.assert_array_equal(pp["draw"].values, np.arange(0, n_draws, 10))
    assert pp.shape == (n_chains, len(range(0, n_draws, 10)), n, p) and np.isfinite(pp.values).all()
    # replicates of the data, in its own units: each feature's replicated mean and spread near the observed ones
    X = np.asarray(fit.data.X)
    np.testing.assert_allclose(pp.values.mean(axis=(0, 1, 2)), X.mean(0), atol=0.5 * X.std(0).max())
    np.testing.assert_allclose(pp.values.std(axis=(0, 1, 2)), X.std(0), rtol=0.5)


def test_full_with_sigma_kept_thins_its_replicates_from_the_stored_parameters(short_fit, monkeypatch):
    """Over the cap for the replicates but not for Sigma (more regions than K x p): the kept draws' replicates come
    from the stored (mu, Sigma) at those draws, not from a second imputation."""
    import arviz as az

    from zoo.papers import gustafson07
    fit, _ = short_fit
    problem, arrays, Y = fit.state["problem"], fit.state["arrays"], np.asarray(fit.state["draws"]["Y"])
    n_chains, n_draws, n = Y.shape
    n_concepts, p = arrays.allowed.shape[1], arrays.X.shape[1]
    monkeypatch.setattr(gustafson07, "MAX_STORED", n_chains * n_draws * max(n_concepts * p * p, n * p // 4))
    assert n_chains * n_draws * n_concepts * p * p <= gustafson07.MAX_STORED < Y.size * p
    called = []
    monkeypatch.setattr(gustafson07, "impute_full", lambda *a, **k: called.append(1) or impute_full(*a, **k))
    idata = az.from_dict(posterior={"n_relevant": np.full((n_chains, n_draws), p)})
    gustafson07._add_full_parameters(idata, problem, arrays, Y, seed=0)
    assert len(called) == 1 and "Sigma" in idata.posterior
    pp = idata.posterior_predictive["X"]
    assert pp.shape[1] < n_draws and np.array_equal(pp["draw"].values, np.arange(0, n_draws, int(pp["draw"][1])))
    assert np.isfinite(pp.values).all()
