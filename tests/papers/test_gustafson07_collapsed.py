"""Gustafson et al. 2007: the collapsed Normal-inverse-Wishart algebra (Appendix eq. 6-9) and its pieces.

No MCMC here: eq. 6 against numerical integration (p = 1) and Monte Carlo (p = 2), masks against explicit
sub-matrices, the multivariate-t predictive against the ratio of marginals, the program's feature density against
its definition, and the random-variate helpers against scipy.
"""
import zoo  # noqa: F401  (float64)

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, stats

from zoo.inference.label_feature.collapsed_niw import (ConceptPrior, NIWPrior, collapsed_concept_log_density,
                                                       masked_matrix, niw_log_marginal, niw_posterior, sample_beta,
                                                       sample_gamma, sample_masked_inverse_wishart, suffstats)
from zoo.inference.driver import FAST_COMPILE_OPTIONS
from zoo.models.feature_selection import FeatureSelectionNormal, sample_by_concept

fast_jit = partial(jax.jit, compiler_options=FAST_COMPILE_OPTIONS)   # compile time dominates these tests
# one compilation per shape instead of dozens of eager ones (the functions are pure)
niw_log_marginal, suffstats = fast_jit(niw_log_marginal), fast_jit(suffstats)
collapsed_concept_log_density = fast_jit(collapsed_concept_log_density, static_argnums=0)


def _prior(p, nu0=3.0, s0=1.5, rho0=1.0, mu0=None):
    return NIWPrior(nu0=jnp.asarray(nu0), S0=s0 * jnp.eye(p), rho0=jnp.asarray(rho0),
                    mu0=jnp.zeros(p) if mu0 is None else jnp.asarray(mu0))


def test_eq6_matches_numerical_integral_in_one_dimension():
    w = np.array([0.3, -1.2, 0.8, 1.9])
    nu0, s0, rho0, mu0 = 3.0, 1.5, 2.0, 0.4
    prior = _prior(1, nu0, s0, rho0, [mu0])
    closed = float(niw_log_marginal(prior, *suffstats(jnp.asarray(w[:, None])), jnp.ones(1, bool)))

    # IW_nu0(s0^{-1}) in 1-D = InvGamma(nu0/2, scale s0/2); integrate over (mu, log sigma2) on a fine grid
    mu = np.linspace(-8.0, 8.0, 1601)[:, None]
    log_s2 = np.linspace(-9.0, 6.0, 1501)[None, :]
    s2 = np.exp(log_s2)
    log_prior = stats.invgamma.logpdf(s2, nu0 / 2, scale=s0 / 2) + log_s2 \
        + stats.norm.logpdf(mu, mu0, np.sqrt(s2 / rho0))
    log_lik = sum(stats.norm.logpdf(wi, mu, np.sqrt(s2)) for wi in w)
    value = integrate.trapezoid(integrate.trapezoid(np.exp(log_prior + log_lik), log_s2[0], axis=1), mu[:, 0])
    assert closed == pytest.approx(np.log(value), abs=1e-5)


def test_eq6_matches_monte_carlo_in_two_dimensions():
    rng = np.random.default_rng(0)
    w = rng.normal(size=(3, 2)) + np.array([0.5, -0.3])
    prior = _prior(2, nu0=4.0, s0=2.0, rho0=1.0)
    closed = float(niw_log_marginal(prior, *suffstats(jnp.asarray(w)), jnp.ones(2, bool)))
    n_mc = 200_000
    sig = stats.invwishart.rvs(df=4.0, scale=2.0 * np.eye(2), size=n_mc, random_state=rng)
    chol = np.linalg.cholesky(sig)
    mu = np.einsum("nij,nj->ni", chol, rng.normal(size=(n_mc, 2)))
    inv = np.linalg.inv(sig)
    logdet = np.linalg.slogdet(sig)[1]
    resid = w[None, :, :] - mu[:, None, :]
    quad = np.einsum("nki,nij,nkj->nk", resid, inv, resid)
    loglik = (-0.5 * quad - np.log(2 * np.pi) - 0.5 * logdet[:, None]).sum(1)
    mc = np.log(np.mean(np.exp(loglik - loglik.max()))) + loglik.max()
    se = np.std(np.exp(loglik - loglik.max())) / np.sqrt(n_mc) / np.mean(np.exp(loglik - loglik.max()))
    assert abs(closed - mc) < 4 * se + 1e-3


def test_masked_marginal_equals_marginal_of_the_selected_columns():
    rng = np.random.default_rng(1)
    W = rng.normal(size=(6, 4))
    mask = np.array([True, False, True, False])
    masked = niw_log_marginal(_prior(4, nu0=6.0), *suffstats(jnp.asarray(W)), jnp.asarray(mask))
    sub = niw_log_marginal(_prior(2, nu0=6.0), *suffstats(jnp.asarray(W[:, mask])), jnp.ones(2, bool))
    assert float(masked) == pytest.approx(float(sub), rel=1e-10)
    assert float(niw_log_marginal(_prior(4, nu0=6.0), *suffstats(jnp.asarray(W)), jnp.zeros(4, bool))) == 0.0
    assert float(niw_log_marginal(_prior(4, nu0=6.0), 0.0, jnp.zeros(4), jnp.zeros((4, 4)), jnp.ones(4, bool))) \
        == pytest.approx(0.0, abs=1e-10)


def test_eq6_chain_rule_with_the_posterior_predictive():
    """f(w_1..w_n) = prod_i f(w_i | w_<i): the eq. 8-9 posterior is consistent with eq. 6."""
    rng = np.random.default_rng(2)
    W = jnp.asarray(rng.normal(size=(5, 3)))
    prior, mask = _prior(3, nu0=5.0), jnp.ones(3, bool)
    total = niw_log_marginal(prior, *suffstats(W), mask)
    steps = 0.0
    for i in range(5):
        before = niw_log_marginal(prior, *suffstats(W[:i]), mask) if i else 0.0
        steps += niw_log_marginal(prior, *suffstats(W[: i + 1]), mask) - before
    assert float(total) == pytest.approx(float(steps), rel=1e-10)
    post = niw_posterior(prior, *suffstats(W))
    assert float(post.nu) == 10.0 and float(post.rho) == 6.0


def test_collapsed_concept_density_splits_into_relevant_and_conditional_parts():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(7, 3))
    mask = np.array([True, False, True])
    delta, Omega = np.array([0.1, -0.2, 0.3]), np.array([[1.0, 0.3, 0.1], [0.3, 1.2, -0.2], [0.1, -0.2, 0.9]])
    cp = ConceptPrior()
    value = collapsed_concept_log_density(cp, *suffstats(jnp.asarray(X)), jnp.asarray(mask), jnp.asarray(delta),
                                          jnp.asarray(Omega))
    d = 2
    marg = niw_log_marginal(_prior(2, nu0=d + 2.0, s0=0.5 * d), *suffstats(jnp.asarray(X[:, mask])), jnp.ones(2, bool))
    full = stats.multivariate_normal(delta, Omega).logpdf(X).sum()
    rel = stats.multivariate_normal(delta[mask], Omega[np.ix_(mask, mask)]).logpdf(X[:, mask]).sum()
    assert float(value) == pytest.approx(float(marg) + full - rel, rel=1e-10)


def test_feature_selection_normal_log_prob_and_sampling():
    mask = np.array([True, False, True])
    mu = np.array([1.0, 9.9, -1.0])
    Sigma = np.array([[0.5, 7.0, 0.1], [7.0, 99.0, 3.0], [0.1, 3.0, 0.4]])   # off-M entries must not matter
    delta, Omega = np.zeros(3), np.array([[1.0, 0.5, 0.2], [0.5, 1.0, 0.3], [0.2, 0.3, 1.0]])
    d = FeatureSelectionNormal(mask, mu, Sigma, delta, Omega)
    x = np.array([0.3, -0.4, 0.8])
    Sm = Sigma[np.ix_(mask, mask)]
    # direct: N(x_M; mu_M, Sigma_MM) * N(x_c | x_M) of N(delta, Omega)
    c, m = ~mask, mask
    B = Omega[np.ix_(c, m)] @ np.linalg.inv(Omega[np.ix_(m, m)])
    cond_mean = delta[c] + B @ (x[m] - delta[m])
    cond_cov = Omega[np.ix_(c, c)] - B @ Omega[np.ix_(m, c)]
    direct = stats.multivariate_normal(mu[m], Sm).logpdf(x[m]) + stats.multivariate_normal(cond_mean, cond_cov).logpdf(x[c])
    assert float(d.log_prob(jnp.asarray(x))) == pytest.approx(direct, rel=1e-10)
    draws = np.asarray(fast_jit(lambda k: d.sample(k, (20000,)))(jax.random.PRNGKey(0)))
    assert np.allclose(draws[:, m].mean(0), mu[m], atol=0.03)
    assert np.allclose(np.cov(draws[:, m], rowvar=False), Sm, atol=0.03)
    # irrelevant coordinate: regression on the relevant ones as in N(delta, Omega)
    resid = draws[:, c] - (delta[c] + (draws[:, m] - delta[m]) @ B.T)
    assert abs(resid.mean()) < 0.03 and resid.var() == pytest.approx(cond_cov[0, 0], rel=0.05)


def test_gamma_and_beta_samplers_match_scipy():
    a = jnp.array([0.3, 1.0, 4.5, 60.0])
    draws = np.asarray(fast_jit(jax.vmap(lambda k: sample_gamma(k, a)))(jax.random.split(jax.random.PRNGKey(0), 3000)))
    for j, shape in enumerate(np.asarray(a)):
        assert stats.kstest(draws[:, j], stats.gamma(shape).cdf).pvalue > 1e-3
    b = np.asarray(fast_jit(sample_beta)(jax.random.PRNGKey(1), jnp.full(4000, 2.0), jnp.full(4000, 11.0)))
    assert stats.kstest(b, stats.beta(2.0, 11.0).cdf).pvalue > 1e-3


def test_gamma_sampler_ends_on_invalid_shapes():
    """A degenerate upstream state (NaN, inf or non-positive shape) gives NaN for that entry, not an endless
    rejection loop; valid entries of the same call are unaffected."""
    a = jnp.array([2.0, jnp.nan, -1.0, jnp.inf, 0.0, 0.5])
    draws = np.asarray(fast_jit(sample_gamma)(jax.random.PRNGKey(0), a))
    assert np.all(np.isnan(draws[1:5])) and np.all(np.isfinite(draws[[0, 5]])) and np.all(draws[[0, 5]] > 0)


def test_masked_inverse_wishart_block_has_the_iw_mean():
    S = jnp.array([[2.0, 0.4, 0.0], [0.4, 1.0, 0.0], [0.0, 0.0, 5.0]])
    mask = jnp.array([True, True, False])
    nu = 7.0
    # lax.map in batches, not one vmap over 4000 draws (batched LAPACK that large deadlocked JAX 0.10.2 on 2 cores)
    draws = fast_jit(lambda keys: jax.lax.map(lambda k: sample_masked_inverse_wishart(k, nu, S, mask), keys,
                                              batch_size=500))(jax.random.split(jax.random.PRNGKey(3), 4000))
    draws = np.asarray(draws)
    expected = np.asarray(S)[:2, :2] / (nu - 2 - 1)
    assert np.allclose(draws[:, :2, :2].mean(0), expected, rtol=0.08, atol=0.015)
    assert np.allclose(draws[:, 2, 2], 1.0) and np.allclose(draws[:, 2, :2], 0.0)
    assert np.allclose(np.asarray(masked_matrix(S, mask))[2], [0, 0, 1])


def test_predictive_cache_leave_one_out_and_shifts_match_fresh_caches():
    """The joint move's cache algebra: ``cache_log_predictive_loo`` (x left out of the entries that hold it, in
    closed form; with gammaln or the lookup table) equals ``niw_log_predictive`` on the statistics without x, and
    ``cache_shift`` (x added to, removed from or kept off each entry) and ``cache_shift_entries`` (the same on listed
    entries, one repeated with sign 0 as the joint move does) equal a cache rebuilt from the changed statistics;
    masks differ across entries. Everything in one compiled function (eager dispatch took 7 s)."""
    from zoo.inference.label_feature.collapsed_niw import concept_niw_prior, niw_log_predictive
    from zoo.inference.label_feature.niw_predictive import (cache_log_predictive, cache_log_predictive_loo, cache_shift,
                                              cache_shift_entries, concept_normalizer_table, predictive_cache)
    from zoo.inference.label_feature.collapsed_niw import suffstats   # the plain function (the module's is jitted)
    rng = np.random.default_rng(4)
    p, cp = 4, ConceptPrior()
    W0, W1, W2 = (jnp.asarray(rng.normal(size=(n, p)) + i) for i, n in enumerate((6, 3, 9)))
    masks = jnp.array([[True, True, False, True], [True, False, False, False], [True, True, True, True]])

    @fast_jit
    def compute(W0, W1, W2):
        x = W0[2]                                      # a unit of entry 0, not of the others
        stats = [suffstats(w) for w in (W0, W1, W2)]
        stack = lambda st: tuple(jnp.stack(a) for a in zip(*st))
        without = [suffstats(jnp.delete(W0, 2, axis=0)), stats[1], stats[2]]
        direct = lambda st: jnp.stack([niw_log_predictive(concept_niw_prior(cp, masks[e]), *st[e], masks[e], x)
                                       for e in range(3)])
        cache = predictive_cache(cp, *stack(stats), masks)
        own = jnp.array([True, False, False])
        table = concept_normalizer_table(cp, masks, 12)   # the t constants by lookup, as in the joint move
        # move x out of entry 0 into entry 2, leave entry 1
        shifted = cache_shift(cache, x, jnp.array([-1.0, 0.0, 1.0]))
        listed = cache_shift_entries(cache, x, jnp.array([0, 2, 0]), jnp.array([-1.0, 1.0, 0.0]))
        fresh = predictive_cache(cp, *stack([without[0], stats[1], suffstats(jnp.concatenate([W2, x[None]]))]),
                                 masks)
        return (direct(without), cache_log_predictive_loo(cache, x, own), cache_log_predictive_loo(cache, x, own, table),
                direct(stats), cache_log_predictive(cache, x), shifted, listed, fresh)

    expect, loo, loo_table, expect_in, pred_in, shifted, listed, fresh = compute(W0, W1, W2)
    assert np.allclose(loo, expect, rtol=1e-10, atol=1e-10)
    assert np.allclose(loo_table, expect, rtol=1e-10, atol=1e-10)
    assert np.allclose(pred_in, expect_in, rtol=1e-10, atol=1e-10)
    for name in ("nu", "rho", "mean", "inv", "logdet"):
        assert np.allclose(getattr(shifted, name), getattr(fresh, name), rtol=1e-9, atol=1e-10), name
        assert np.allclose(getattr(listed, name), getattr(fresh, name), rtol=1e-9, atol=1e-10), name


def test_triangular_inverse_and_the_inverses_built_on_it_match_numpy():
    """``triangular_inverse_lower`` (batched) is L^{-1}; the masked Gaussian log density built on it equals scipy's
    on the mask (the identity block off the mask contributes nothing)."""
    from zoo.inference.label_feature.collapsed_niw import gaussian_logpdf_masked, masked_cholesky
    from zoo.inference.linalg import triangular_inverse_lower
    rng = np.random.default_rng(7)
    B = rng.normal(size=(3, 5, 5))
    A = np.einsum("bij,bkj->bik", B, B) + 5 * np.eye(5)
    L = np.linalg.cholesky(A)
    assert np.allclose(fast_jit(triangular_inverse_lower)(jnp.asarray(L)), np.linalg.inv(L), rtol=1e-12, atol=1e-12)
    mask = jnp.array([True, False, True, True, False])
    X, mean = rng.normal(size=(7, 5)), rng.normal(size=5)
    got = fast_jit(lambda X, A: gaussian_logpdf_masked(X, mean, masked_cholesky(A, mask), mask))(X, A[0])
    keep = np.asarray(mask)
    expect = stats.multivariate_normal(mean[keep], A[0][np.ix_(keep, keep)]).logpdf(X[:, keep])
    assert np.allclose(got, expect, rtol=1e-12, atol=1e-12)


def test_sample_by_concept_is_the_distributions_draw_with_one_factorization_per_concept():
    """The posterior predictive's sampler (``sample_by_concept``: K + 1 factorizations instead of n) draws what
    ``FeatureSelectionNormal(masks[y], mu[y], Sigma[y], delta, Omega).sample`` draws from the same key."""
    rng = np.random.default_rng(5)
    n_concepts, p, n = 4, 4, 30
    masks = jnp.asarray(rng.random((n_concepts, p)) < 0.6).at[0].set(False)     # concept 0: nothing relevant
    A = rng.normal(size=(n_concepts, p, p))
    Sigma = jnp.asarray(A @ np.swapaxes(A, 1, 2) + np.eye(p))
    mu = jnp.asarray(rng.normal(size=(n_concepts, p)))
    B = rng.normal(size=(p, p))
    Omega, delta = jnp.asarray(B @ B.T + np.eye(p)), jnp.asarray(rng.normal(size=p))
    y = jnp.asarray(rng.integers(0, n_concepts, n))
    key = jax.random.PRNGKey(2)
    for shape in ((), (3,)):
        expected = FeatureSelectionNormal(masks[y], mu[y], Sigma[y], delta, Omega).sample(key, shape)
        drawn = sample_by_concept(key, y, masks, mu, Sigma, delta, Omega, shape)
        assert drawn.shape == shape + (n, p)
        np.testing.assert_allclose(drawn, expected, rtol=1e-12, atol=1e-12)
