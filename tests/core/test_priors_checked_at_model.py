"""Priors checked at ``zoo.model`` (issue 31): a family no method can use, a missing parameter and a prior set
twice are refused there; a family the chosen method cannot use is refused by ``zoo.fit`` before anything runs;
``print(spec)`` shows each prior with its parameters. A bad prior never reaches a kernel."""
import pytest

import zoo
from zoo.catalog import ensure_loaded
from zoo.core import registry

ensure_loaded()
SITES = [(mid, site) for mid in sorted(registry.models_registered()) for site in zoo.model(mid).priors]


def test_every_model_has_prior_sites_in_the_table():
    assert {mid for mid, _ in SITES} == set(registry.models_registered())


@pytest.mark.parametrize("model_id, site", SITES)
def test_a_family_no_method_can_use_is_refused_at_model(model_id, site):
    # the issue: gustafson07.fs with mu ~ Normal passed zoo.model and crashed in zoo.fit with an AttributeError
    with pytest.raises(ValueError, match=rf"priors\['{site}'\]: no method of '{model_id}' can use a Normal prior"
                                         rf".*the site takes"):
        zoo.model(model_id, priors={site: "Normal(0.0, 1.0)"})


@pytest.mark.parametrize("model_id, site", SITES)
def test_the_default_family_with_other_parameters_is_accepted_by_every_method(model_id, site):
    spec = zoo.model(model_id)
    prior = spec.priors[site]
    same = zoo.model(model_id, priors={site: prior})
    entry = registry.get_model(model_id)
    for method in entry.methods.values():
        registry.check_prior_families(entry, method, same)     # raises for a family the method cannot use


def test_a_family_only_the_generic_methods_take_is_refused_by_fit_before_running():
    spec = zoo.model("carbonetto03.shrinkage_mixture", priors={"tau2": "LogNormal(0.0, 1.0)"})
    with pytest.raises(ValueError, match=r"priors\['tau2'\]: method 'map_em' .* cannot use a LogNormal prior; it "
                                         r"takes InverseGamma or ImproperInverseGamma.*take it: nuts, svi, map"):
        zoo.fit(spec, data=None)     # refused before the data are even looked at
    entry = registry.get_model(spec.id)
    registry.check_prior_families(entry, entry.methods["nuts"], spec)


def test_kueck04_advice_names_its_own_methods_not_a_generic_one():
    with pytest.raises(ValueError) as err:
        zoo.model("kueck04.constraint", priors={"tau": "Normal(0.0, 1.0)"})
    assert "generic" not in str(err.value) and "blocked_gibbs" in str(err.value) and "Beta" in str(err.value)
    # delta2 takes any positive family (a Metropolis step), so LogNormal passes and Normal does not
    zoo.model("kueck04.constraint", priors={"delta2": "LogNormal(0.0, 1.0)"})


@pytest.mark.parametrize("text, missing", [("InverseGamma(1.0)", "rate"), ("Normal()", "loc, scale"),
                                           ("Beta(2.0)", "concentration0"), ("StudentT(3.0)", "loc, scale")])
def test_missing_parameters_are_refused_not_defaulted(text, missing):
    with pytest.raises(ValueError, match=f"missing parameters? {missing}"):
        zoo.model("kueck04.constraint", priors={"delta2": text} if "Beta" not in text else {"tau": text})


def test_bernoulli_takes_exactly_one_parameterization():
    zoo.model("gustafson07.fs", priors={"M": "Bernoulli(probs=0.3)"})
    with pytest.raises(ValueError, match="exactly one of probs or logits"):
        zoo.model("gustafson07.fs", priors={"M": "Bernoulli()"})


def test_a_prior_set_by_an_option_and_by_priors_is_refused():
    with pytest.raises(ValueError, match=r"priors\['tau2'\]: set twice, by the options a=50, b=50"):
        zoo.model("carbonetto03.shrinkage_mixture", a=50, b=50, priors={"tau2": "InverseGamma(5.0, 0.1)"})
    # an option that sets no prior goes with any prior
    zoo.model("carbonetto03.shrinkage_mixture", n_components=2, priors={"tau2": "InverseGamma(5.0, 0.1)"})


def test_print_spec_shows_each_prior_with_its_parameters():
    spec = zoo.model("carbonetto03.shrinkage_mixture", n_components=3, priors={"tau2": "InverseGamma(5.0, 0.1)"})
    text = repr(spec)
    assert "tau2: InverseGamma(concentration=5.0, rate=0.1)" in text
    assert "lambda: Dirichlet(concentration=[1.0, 1.0, 1.0])" in text
    assert "mu: ConceptMean(b=1.0)" in repr(zoo.model("gustafson07.fs"))
    # a mixture has no parameters of its own: its weights and components are written out
    assert ("alpha: MixtureSameFamily(CategoricalProbs(probs=[0.5, 0.5]), Beta(concentration0=[10.0, 1.0], "
            "concentration1=[1.0, 10.0]))") in repr(zoo.model("gustafson07.cvfs"))


def test_a_mixture_prior_that_differs_from_the_default_is_not_dropped_when_saved():
    import types

    import jax.numpy as jnp
    import numpyro.distributions as dist

    from zoo.core.persist import _spec_record

    other = dist.MixtureSameFamily(dist.Categorical(probs=jnp.array([0.3, 0.7])),
                                   dist.Beta(jnp.array([1.0, 10.0]), jnp.array([10.0, 1.0])))
    spec = zoo.model("gustafson07.cvfs", priors={"alpha": other})
    assert "probs=[0.3, 0.7]" in repr(spec)
    assert _spec_record(types.SimpleNamespace(spec=zoo.model("gustafson07.cvfs")))["priors"] == {}
    with pytest.raises(ValueError, match="alpha.*cannot be written as a prior string"):
        _spec_record(types.SimpleNamespace(spec=spec))
