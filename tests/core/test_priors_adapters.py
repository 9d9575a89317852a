"""zoo.core.priors adapters: the numbers a conjugate kernel needs, read off a resolved prior, with bad priors refused
naming the site."""
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest

import zoo  # noqa: F401  (float64)
from zoo.models.shrinkage_mixture import ImproperInverseGamma
from zoo.core.priors import beta_mixture_parameters, beta_parameters, dirichlet_concentration, inverse_gamma_parameters


def test_dirichlet_concentration_broadcasts_a_symmetric_prior_and_keeps_a_full_one():
    np.testing.assert_array_equal(dirichlet_concentration(dist.Dirichlet(jnp.array([2.0])), 3, "pi"), [2.0] * 3)
    np.testing.assert_array_equal(dirichlet_concentration(dist.Dirichlet(jnp.array([1.0, 2.0, 3.0])), 3, "pi"),
                                  [1.0, 2.0, 3.0])


@pytest.mark.parametrize("prior, match", [
    (dist.Beta(1.0, 1.0), "family Dirichlet"),
    (dist.Dirichlet(jnp.array([1.0, 2.0])), "length 1 .symmetric. or 3"),
    (dist.Dirichlet(jnp.array([0.5])), ">= 1"),
])
def test_dirichlet_concentration_refuses_naming_the_site(prior, match):
    with pytest.raises(ValueError, match=r"priors\['pi'\].*" + match):
        dirichlet_concentration(prior, 3, "pi", minimum=1.0)


def test_dirichlet_concentration_has_one_definition_below_the_user_layer_and_works_in_a_traced_program():
    import jax

    from zoo.models import prior_adapters
    assert dirichlet_concentration is prior_adapters.dirichlet_concentration   # zoo.core.priors re-exports it

    @jax.jit
    def traced(conc):             # a program traced with its prior's concentration as an argument
        return dirichlet_concentration(dist.Dirichlet(conc), 3, "pi")
    np.testing.assert_array_equal(traced(jnp.array([2.0])), [2.0] * 3)
    with pytest.raises(ValueError, match=r"priors\['pi'\].*length 1 .symmetric. or 3"):
        traced(jnp.array([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"priors\['pi'\].*concrete numbers"):
        jax.jit(lambda c: dirichlet_concentration(dist.Dirichlet(c), 3, "pi", minimum=1.0))(jnp.array([2.0]))


def test_inverse_gamma_parameters_reads_proper_and_improper_only_when_allowed():
    assert inverse_gamma_parameters(dist.InverseGamma(0.5, 2.0), "delta2") == (0.5, 2.0)
    assert inverse_gamma_parameters(ImproperInverseGamma(0.0, 0.0), "tau2", improper_ok=True) == (0.0, 0.0)
    with pytest.raises(ValueError, match=r"priors\['tau2'\].*InverseGamma"):
        inverse_gamma_parameters(ImproperInverseGamma(0.0, 0.0), "tau2")
    with pytest.raises(ValueError, match=r"priors\['delta2'\].*InverseGamma.*got Gamma"):
        inverse_gamma_parameters(dist.Gamma(1.0, 1.0), "delta2")
    with pytest.raises(ValueError, match=r"priors\['delta2'\].*scalar"):
        inverse_gamma_parameters(dist.InverseGamma(jnp.ones(2), 1.0), "delta2")


def test_beta_parameters_and_mixture():
    assert beta_parameters(dist.Beta(1.0, 3.0), "tau") == (1.0, 3.0)
    with pytest.raises(ValueError, match=r"priors\['tau'\].*Beta"):
        beta_parameters(dist.Uniform(0.0, 1.0), "tau")
    w, a, b = beta_mixture_parameters(dist.Beta(2.0, 5.0), "alpha")
    np.testing.assert_array_equal(np.stack([w, a, b]), [[1.0], [2.0], [5.0]])
    mix = dist.MixtureSameFamily(dist.Categorical(probs=jnp.array([0.3, 0.7])),
                                 dist.Beta(jnp.array([1.0, 10.0]), jnp.array([10.0, 1.0])))
    w, a, b = beta_mixture_parameters(mix, "alpha")
    np.testing.assert_allclose(np.stack([w, a, b]), [[0.3, 0.7], [1.0, 10.0], [10.0, 1.0]])
    with pytest.raises(ValueError, match=r"priors\['alpha'\].*mixture|priors\['alpha'\].*Beta"):
        beta_mixture_parameters(dist.Normal(0.0, 1.0), "alpha")
