"""Priors reach a kernel once (issue 16.3): each paper turns ``spec.priors`` into its sampler's settings in one
function, and the NumPyro program given the same spec's priors (``program_kwargs``) samples the same model, so a
changed prior moves the program's prior predictive and the custom sampler's settings the same way."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro.handlers import seed, substitute, trace
from numpyro.infer import Predictive
from numpyro.infer.util import log_density

import zoo
from zoo.data import AnnotatedRegions, Bags
from zoo.models.feature_selection import BackgroundCovariance, BackgroundMean, ConceptCovariance, ConceptMean
from zoo.papers import gustafson07, kueck04


def _bags():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 2))
    return Bags(X, np.repeat(np.arange(4), 3), bag_labels=np.array([1, 0, 1, 0]))


def _regions():
    rng = np.random.default_rng(0)
    return AnnotatedRegions(X=rng.normal(size=(6, 3)), image_ids=np.array([0, 0, 0, 1, 1, 1]),
                            keywords=[["sky", "sea"], ["sky"]], vocabulary=["sky", "sea"])


def test_kueck04_priors_read_once_into_the_sampler_settings():
    spec = zoo.model("kueck04.constraint", width=1.0, priors={"tau": "Beta(2.0, 5.0)",
                                                            "delta2": "InverseGamma(3.0, 8.0)"})
    hyper = kueck04.mil_hyper(spec)
    assert [float(v) for v in hyper] == [2.0, 5.0, 3.0, 8.0, 8.0 / 4.0]     # delta2 starts at its mode
    prep = kueck04.prepare(spec, _bags())
    assert kueck04.mil_config(spec, prep).delta2_log_prob is None           # conjugate: IG numbers only, traced
    other = zoo.model("kueck04.constraint", width=1.0, priors={"delta2": "LogNormal(0.0, 1.0)"})
    assert kueck04.mil_config(other, prep).delta2_log_prob is not None      # another family: its own density
    assert float(kueck04.mil_hyper(other).delta2_init) == pytest.approx(1.0, abs=0.1)   # the prior's median
    problem = kueck04.mil_problem(spec, prep)
    assert problem.hyper == hyper and float(problem.ridge) == pytest.approx(prep.ridge)


@pytest.mark.parametrize("priors, site", [({"tau": "Uniform(0.0, 1.0)"}, "tau"),
                                          ({"delta2": "InverseGamma(0.5, 0.5).expand([2])"}, "delta2")])
def test_kueck04_refuses_priors_its_sampler_cannot_use_naming_the_site(priors, site):
    with pytest.raises(ValueError, match=rf"priors\['{site}'\]"):
        spec = zoo.model("kueck04.constraint", width=1.0, priors=priors)
        kueck04.mil_hyper(spec)


def test_kueck04_program_samples_the_specs_priors():
    bags = _bags()
    changed = {"delta2": "InverseGamma(3.0, 300.0)", "tau": "Beta(2.0, 9.0)"}
    for prior, a, b in ((None, 0.5, 0.5), (changed, 3.0, 300.0)):
        spec = zoo.model("kueck04.constraint", width=1.0, priors=prior)
        tr = trace(seed(spec.program, 0)).get_trace(**kueck04.program_kwargs(spec, bags))
        assert float(tr["delta2"]["fn"].concentration) == a and float(tr["delta2"]["fn"].rate) == b
        assert float(tr["tau"]["fn"].concentration0) == (1.0 if prior is None else 9.0)


@pytest.mark.slow
def test_kueck04_prior_predictive_moves_with_the_delta2_prior():
    bags = _bags()
    draws = {}
    for name, prior in (("default", None), ("large", {"delta2": "InverseGamma(3.0, 300.0)"})):
        spec = zoo.model("kueck04.constraint", width=1.0, priors=prior)
        kwargs = kueck04.program_kwargs(spec, bags) | {"group_label": None}
        draws[name] = Predictive(spec.program, num_samples=400)(jax.random.PRNGKey(0), **kwargs)["delta2"]
    # IG(3, 300) has median ~ 110; the default IG(1/2, 1/2) ~ 2.2
    assert np.median(draws["large"]) > 50 > 5 > np.median(draws["default"])


@pytest.mark.extended
def test_gustafson07_program_samples_the_specs_priors():
    """The program's Sigma, mu, Omega and delta sites draw from the laws the spec's priors give (one trace)."""
    priors = {"Sigma": ConceptCovariance(3.0, 50.0), "mu": ConceptMean(4.0), "Omega": BackgroundCovariance(5.0, 30.0),
              "delta": BackgroundMean(0.5)}
    for variant, prior in (("full", None), ("cvfs", priors)):
        spec = zoo.model(f"gustafson07.{variant}",
                         priors=None if prior is None else {k: prior[k] for k in spec_sites(variant)})
        kwargs = gustafson07.program_kwargs(spec, _regions())        # X observed: no X draws to make
        tr = trace(seed(spec.program, 0)).get_trace(**kwargs)
        a_extra, v_scale, b = ((3.0, 50.0, 4.0) if prior else (2.0, 0.5, 1.0))
        masks = np.ones((3, 3), bool) if variant == "full" else np.concatenate(
            [np.zeros((1, 3), bool), np.asarray(tr["M"]["value"], bool)])
        d = masks.sum(1)
        scale = np.stack([np.diag(np.where(m, v_scale * dk, 1.0)) for m, dk in zip(masks, d)])
        assert np.allclose(tr["Sigma"]["fn"].df, 3 + a_extra)
        assert np.allclose(tr["Sigma"]["fn"].scale, scale)
        assert np.allclose(tr["mu"]["fn"].covariance_matrix, np.asarray(tr["Sigma"]["value"]) / b)
        if variant == "cvfs":
            nu_extra, psi, kappa = (5.0, 30.0, 0.5) if prior else (2.0, 1.0, 1.0)
            assert np.allclose(tr["Omega"]["fn"].df, 3 + nu_extra)
            assert np.allclose(tr["Omega"]["fn"].scale, psi * np.eye(3))
            assert np.allclose(tr["delta"]["fn"].covariance_matrix, np.asarray(tr["Omega"]["value"]) / kappa)


def spec_sites(variant):
    return ("Sigma", "mu") if variant == "full" else ("Sigma", "mu", "Omega", "delta")


def test_gustafson07_program_kwargs_carry_the_spec_priors_and_the_sampler_data():
    spec = zoo.model("gustafson07.fs", priors={"M": "Bernoulli(0.2)"})
    kwargs = gustafson07.program_kwargs(spec, _regions())
    assert kwargs["priors"]["M"].probs == pytest.approx(0.2)
    arrays = gustafson07.region_arrays(_regions())
    assert np.allclose(kwargs["X"], arrays.X) and kwargs["allowed"].shape == (6, 3)
    lp = {}
    for q in (0.2, 0.8):
        spec_q = zoo.model("gustafson07.fs", priors={"M": f"Bernoulli({q})"})
        values = {"M": jnp.ones(3), "Sigma": jnp.broadcast_to(jnp.eye(3), (3, 3, 3)), "mu": jnp.zeros((3, 3)),
                  "Y": jnp.array([1, 2, 0, 1, 0, 0])}
        lp[q] = float(log_density(substitute(spec_q.program, values), (),
                                  gustafson07.program_kwargs(spec_q, _regions()), {})[0])
    # all three features included: 3 log(0.8 / 0.2) more log density under Pr(M_j = 1) = 0.8
    assert lp[0.8] - lp[0.2] == pytest.approx(3 * np.log(4.0), rel=1e-9)


@pytest.mark.slow
def test_carbonetto03_generic_fit_honours_the_tau2_prior():
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(-3.0, 1.0, (30, 2)), rng.normal(3.0, 1.0, (30, 2))])
    spread = {}
    for name, prior in (("weak", "InverseGamma(1.0, 1.0)"), ("tight", "InverseGamma(50.0, 0.05)")):
        spec = zoo.model("carbonetto03.shrinkage_mixture", n_components=2, covariance="diag",
                         priors={"tau2": prior})
        fit = zoo.fit(spec, X, method="map", seed=0, num_steps=1500, learning_rate=0.05, progress_bar=False)
        mu = np.asarray(fit.idata.posterior["mu"]).reshape(-1, 2, 2)[-1]
        spread[name] = np.abs(mu - X.mean(0)).max()
    # tau2 ~ IG(50, 0.05) (prior mean 1e-3) pulls the component means onto mu* = the data mean
    assert spread["tight"] < 0.5 < 2.0 < spread["weak"]
