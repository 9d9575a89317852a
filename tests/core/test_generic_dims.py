"""Generic methods (nuts, svi, map) name InferenceData dims after the program's plates (zoo.core.generic.site_dims)."""
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import zoo
from zoo.core.generic import site_dims


def _program(y, group):
    """y (N,) in n_groups groups; a plated latent per group, an event-shaped latent without a plate."""
    mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
    w = numpyro.sample("w", dist.Normal(jnp.zeros(2), 1.0).to_event(1))
    with numpyro.plate("groups", 3):
        a = numpyro.sample("a", dist.Normal(mu, 1.0))
    with numpyro.plate("points", y.shape[0]):
        numpyro.sample("y", dist.Normal(a[group] + w[0], 1.0), obs=y)


def _data():
    rng = np.random.default_rng(0)
    return {"y": jnp.asarray(rng.normal(size=12)), "group": jnp.asarray(np.arange(12) % 3)}


def test_site_dims_names_plates_and_event_dims():
    dims = site_dims(_program, _data())
    assert dims["a"] == ["groups"]
    assert dims["y"] == ["points"]
    assert dims["mu"] == []
    assert dims["w"] == ["w_dim_0"]
    assert dims["objective"] == ["iteration"]


@pytest.mark.filterwarnings("ignore::zoo.core.convergence.ConvergenceWarning")
def test_nuts_dims_from_plates():
    fit = zoo.fit(_program, _data(), method="nuts", num_warmup=20, num_samples=20, num_chains=1,
                  progress_bar=False)
    assert fit.idata.log_likelihood["y"].dims == ("chain", "draw", "points")
    assert fit.idata.posterior["a"].dims == ("chain", "draw", "groups")
    assert fit.idata.posterior["w"].dims == ("chain", "draw", "w_dim_0")
    assert fit.idata.observed_data["y"].dims == ("points",)


@pytest.mark.parametrize("method", ["svi", "map"])
def test_optimizer_objective_dim_is_iteration(method):
    options = dict(num_steps=30, progress_bar=False) | ({"num_samples": 10} if method == "svi" else {})
    fit = zoo.fit(_program, _data(), method=method, **options)
    assert fit.idata.sample_stats["objective"].dims == ("chain", "draw", "iteration")
    assert fit.idata.posterior["a"].dims == ("chain", "draw", "groups")
    group = "log_likelihood" if method == "svi" else "log_likelihood_at_estimate"
    assert fit.idata[group]["y"].dims == ("chain", "draw", "points")


def test_event_dims_of_an_observed_site():
    def program(X):
        loc = numpyro.sample("loc", dist.Normal(jnp.zeros(2), 1.0).to_event(1))
        with numpyro.plate("rows", X.shape[0]):
            numpyro.sample("X", dist.MultivariateNormal(loc, jnp.eye(2)), obs=X)
    fit = zoo.fit(program, {"X": jnp.zeros((5, 2))}, method="map", num_steps=5, progress_bar=False)
    assert fit.idata.observed_data["X"].dims == ("rows", "X_dim_1")
    assert fit.idata.log_likelihood_at_estimate["X"].dims == ("chain", "draw", "rows")
