"""zoo.compare: held-out log predictive density across methods (EM, NUTS, SVI) and PSIS-LOO where it applies."""
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import zoo
from zoo.diagnostics.comparison import compare, heldout_log_density

pytestmark = pytest.mark.filterwarnings("ignore::zoo.core.convergence.ConvergenceWarning")
#: the mixture fixture compiles NUTS and SVI on carbonetto03's program: about a minute on one core
slow_mixture = pytest.mark.slow


@pytest.fixture(scope="module")
def mixture_fits():
    X = np.asarray(zoo.load_dataset("carbonetto03_sec2"))
    rng = np.random.default_rng(0)
    order = rng.permutation(X.shape[0])
    train, held_out = X[order[: X.shape[0] * 3 // 4]], X[order[X.shape[0] * 3 // 4:]]
    spec = zoo.model("carbonetto03.shrinkage_mixture", n_components=3)
    fits = {"map_em": zoo.fit(spec, train, method="map_em", num_chains=2, max_iter=100, progress_bar=False),
            "nuts": zoo.fit(spec, train, method="nuts", num_chains=1, num_warmup=30, num_samples=30,
                            progress_bar=False),
            "svi": zoo.fit(spec, train, method="svi", num_steps=300, num_samples=20, progress_bar=False)}
    return fits, held_out


@slow_mixture
def test_table_ranks_every_method(mixture_fits):
    fits, held_out = mixture_fits
    table = compare(fits, data=held_out)
    assert set(table.index) == set(fits)
    assert list(table["rank"]) == [0, 1, 2]
    assert table["elpd_heldout"].is_monotonic_decreasing
    assert table["elpd_diff"].iloc[0] == 0 and (table["elpd_diff"] >= 0).all()
    assert (table["n_heldout"] == held_out.shape[0]).all()
    assert np.isfinite(table["elpd_heldout"]).all() and np.isfinite(table["se"]).all()
    assert table.loc["map_em", "n_draws"] == 1 and table.loc["nuts", "n_draws"] == 30
    # PSIS-LOO only for real draws: MCMC, and draws of q (said so), never a point estimate's restarts
    assert np.isfinite(table.loc["nuts", "elpd_loo"]) and np.isfinite(table.loc["svi", "elpd_loo"])
    assert np.isnan(table.loc["map_em", "elpd_loo"])
    assert "PSIS-LOO on draws of q" in table.loc["svi", "warning"]
    k = table.loc["nuts", "pareto_k_max"]
    assert (table.loc["nuts", "warning"] == "Pareto k > 0.7") == (k > 0.7)


@slow_mixture
def test_point_estimate_uses_best_restart(mixture_fits):
    fits, held_out = mixture_fits
    lpd = heldout_log_density("map_em", fits["map_em"], held_out)
    assert lpd.shape == (held_out.shape[0],) and np.all(np.isfinite(lpd))


@slow_mixture
def test_refusals(mixture_fits):
    fits, held_out = mixture_fits
    with pytest.raises(ValueError, match="fits"):
        compare({}, data=held_out)
    with pytest.raises(ValueError, match=r"fits\['x'\]"):
        compare({"x": object()}, data=held_out)
    with pytest.raises(ValueError, match=r"fits\['nuts'\].*held-out data"):
        compare({"nuts": fits["nuts"]}, data=held_out[:, :1])
    bags_fit = zoo.core.fit.Fit(idata=fits["nuts"].idata, spec=zoo.model("kueck04.hybrid"), method="blocked_gibbs")
    with pytest.raises(ValueError, match="different kinds of data"):
        compare({"nuts": fits["nuts"], "mil": bags_fit}, data=held_out)
    with pytest.raises(ValueError, match=r"fits\['mil'\].*no NumPyro program"):
        compare({"mil": bags_fit}, data=held_out)


def _program(y):
    mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
    with numpyro.plate("points", y.shape[0]):
        numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)


def test_user_program():
    rng = np.random.default_rng(1)
    y = jnp.asarray(rng.normal(2.0, 1.0, size=40))
    fits = {"nuts": zoo.fit(_program, {"y": y[:30]}, method="nuts", num_chains=1, num_warmup=50, num_samples=50,
                            progress_bar=False),
            "map": zoo.fit(_program, {"y": y[:30]}, method="map", num_steps=300, learning_rate=0.1,
                           progress_bar=False)}
    table = compare(fits, data={"y": y[30:]})
    assert table["n_heldout"].tolist() == [10, 10]
    # the exact held-out density of the MAP estimate
    mu_hat = float(fits["map"].idata.posterior["mu"].values.ravel()[0])
    expected = float(dist.Normal(mu_hat, 1.0).log_prob(y[30:]).sum())
    assert table.loc["map", "elpd_heldout"] == pytest.approx(expected, rel=1e-6)
    with pytest.raises(ValueError, match="dict"):
        compare(fits, data=y[30:])
