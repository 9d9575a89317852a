"""zoo.models.gaussian.MultivariateNormal (plain-JAX factorizations) has NumPyro's density and the right moments."""
import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest

import zoo  # noqa: F401  (float64)
from zoo.models.gaussian import MultivariateNormal


def _spd(rng, batch, d):
    a = rng.normal(size=batch + (d, d))
    return a @ np.swapaxes(a, -1, -2) + d * np.eye(d)


@pytest.mark.parametrize("kind", ["covariance_matrix", "precision_matrix"])
def test_log_prob_equals_numpyro_and_draws_have_its_moments(kind):
    rng = np.random.default_rng(0)
    matrix, loc = _spd(rng, (3,), 4), rng.normal(size=(3, 4))
    ours, ref = MultivariateNormal(loc, **{kind: matrix}), dist.MultivariateNormal(loc, **{kind: matrix})
    x = rng.normal(size=(5, 3, 4))
    np.testing.assert_allclose(ours.log_prob(x), ref.log_prob(x), rtol=1e-12, atol=1e-12)
    assert ours.batch_shape == (3,) and ours.event_shape == (4,)
    draws = np.asarray(ours.sample(jax.random.PRNGKey(0), (100_000,)))
    cov = matrix if kind == "covariance_matrix" else np.linalg.inv(matrix)
    emp = np.einsum("nki,nkj->kij", draws - loc, draws - loc) / draws.shape[0]
    # 100,000 draws: the empirical covariance is within about 1 % of the truth (4 sd of its sampling error)
    assert np.max(np.abs(emp - cov)) < 0.03 * np.max(np.abs(cov))
    np.testing.assert_allclose(ours.variance, ref.variance, rtol=1e-12)


def test_usable_under_jit_vmap_and_as_a_mixture_component():
    rng = np.random.default_rng(1)
    cov, loc = _spd(rng, (2,), 3), rng.normal(size=(2, 3))
    y = rng.normal(size=(6, 3))

    @jax.jit
    def mixture_log_prob(loc):
        comp = MultivariateNormal(loc, covariance_matrix=cov)
        return dist.MixtureSameFamily(dist.Categorical(probs=jnp.ones(2) / 2), comp).log_prob(y)

    ref = dist.MixtureSameFamily(dist.Categorical(probs=jnp.ones(2) / 2),
                                 dist.MultivariateNormal(loc, covariance_matrix=cov)).log_prob(y)
    np.testing.assert_allclose(mixture_log_prob(loc), ref, rtol=1e-12)
    batched = jax.vmap(mixture_log_prob)(jnp.stack([loc, loc + 1.0]))
    assert batched.shape == (2, 6) and np.all(np.isfinite(batched))


def test_exactly_one_matrix():
    with pytest.raises(ValueError, match="exactly one"):
        MultivariateNormal(np.zeros(2))
