"""Issue 17.8: a fit whose outputs are NaN or infinite despite validated input is an error naming the likely cause,
raised in one place (``zoo.core.finite.check_finite``, called by the registry after every runner and by ``zoo.fit`` for
user programs). The real overflow (data at 1e160 in a variational EM) is in tests/core/test_persist.py, where it reuses
that module's compiled MCVQ."""
import dataclasses

import numpy as np
import pytest

import zoo
from zoo.core.finite import NonFiniteResultError, likely_cause, non_finite_sites
from zoo.core.registry import get_model
from zoo.core.fit import Fit
from zoo.core.idata import to_inference_data

MODEL = "carbonetto03.shrinkage_mixture"


def _nan_runner(spec, data, seed=0, max_iter=10):
    """A stand-in runner whose result is NaN (no computation): the registry, not the runner, must notice."""
    mu = np.full((1, 1, 2), np.nan)
    idata = to_inference_data({"mu": mu}, sample_stats={"objective": np.full((1, 1, 3), np.nan)})
    return Fit(idata=idata, spec=spec, method="map_em")


@pytest.fixture
def nan_method(monkeypatch):
    zoo.catalog()                  # registers the paper modules
    entry = get_model(MODEL)
    monkeypatch.setitem(entry.methods, "map_em", dataclasses.replace(entry.methods["map_em"], runner=_nan_runner))


def test_runner_returning_nan_is_an_error_blaming_the_method(nan_method):
    X = np.random.default_rng(0).normal(size=(20, 2))
    with pytest.raises(NonFiniteResultError, match=r"posterior/mu.*sample_stats/objective.*numerical failure of "
                                                   r"method 'map_em'"):
        zoo.fit(zoo.model(MODEL), X, max_iter=10)


def test_extreme_data_is_named_as_the_cause(nan_method):
    X = np.random.default_rng(0).normal(size=(20, 2)) * 1e160
    with pytest.raises(NonFiniteResultError, match=r"the data has values up to .*e\+160.*rescale"):
        zoo.fit(zoo.model(MODEL), X, max_iter=10)
    tiny = np.random.default_rng(0).normal(size=(20, 2)) * 1e-170
    with pytest.raises(ValueError, match=r"as small as .*e-17"):
        zoo.fit(zoo.model(MODEL), tiny, max_iter=10)


def test_extreme_prior_is_named_with_its_site(nan_method):
    X = np.random.default_rng(0).normal(size=(20, 2))
    spec = zoo.model(MODEL, priors={"tau2": "InverseGamma(1.0, 1e200)"})
    with pytest.raises(NonFiniteResultError, match=r"the prior of 'tau2' has rate with values up to 1e\+200"):
        zoo.fit(spec, X, max_iter=10)


def test_causes_in_order_and_learning_rate():
    assert "learning_rate=5.0" in likely_cause({"y": np.ones(3)}, {}, {"learning_rate": 5.0}, "svi")
    assert "'y'" in likely_cause({"y": np.array([1e200])}, {}, {"learning_rate": 5.0}, "svi")   # data first
    assert "numerical failure of method 'svi'" in likely_cause({"y": np.ones(3)}, {}, {"learning_rate": 0.01},
                                                               "svi")


def test_finite_fits_and_nan_padded_objectives_pass():
    objective = np.array([[[1.0, 2.0, np.nan]]])                   # padded after convergence: fine
    log_lik = np.array([[[-np.inf, -1.0]]])                        # a zero probability: fine
    idata = to_inference_data({"mu": np.zeros((1, 1, 2))}, sample_stats={"objective": objective},
                              log_likelihood={"x": log_lik})
    assert non_finite_sites(idata) == []
    idata = to_inference_data({"mu": np.array([[[0.0, np.inf]]])}, log_likelihood={"x": np.array([[[np.nan]]])})
    assert non_finite_sites(idata) == ["posterior/mu", "log_likelihood/x"]
