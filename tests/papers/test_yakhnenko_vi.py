"""Correctness of the MoM-LDA / MoM-HDP variational inference (Yakhnenko & Honavar).

Tiny problems: the sparse, sufficient-statistic ELBO equals the explicit one; every coordinate update is the
numerical maximizer of the ELBO in its block; the ELBO never decreases; the beta step reaches the optimum of its
objective; HDP with beta fixed is MoM-LDA; a generic optax optimizer of the same ELBO agrees with the CAVI optimum.
"""
import zoo  # noqa: F401  (float64)

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import optax
import pytest
from scipy.optimize import minimize

from zoo.inference.topics import stick_breaking_vi as sbvi
from zoo.inference.topics import topic_vi as tv

K = 3
_cavi = jax.jit(tv.cavi_iteration, static_argnums=4)   # one compilation shared by the tiny-problem tests


@pytest.fixture(scope="module")
def tiny():
    rng = np.random.default_rng(1)
    words = rng.poisson(0.8, size=(6, 5)).astype(float)
    visual = rng.poisson(1.2, size=(6, 7)).astype(float)
    words[:, 0] += 1  # no empty image
    dense = (jnp.asarray(words), jnp.asarray(visual))
    mods = tuple(tv.sparse_counts(d) for d in (words, visual))
    a = jnp.array([0.7, 1.3, 0.5])
    etas = (jnp.full(5, 0.9), jnp.full(7, 1.1))
    state = tv.init_state(jax.random.PRNGKey(0), dense, K, a, etas)
    # two full iterations from the initialization: a generic, non-symmetric point
    for _ in range(2):
        state = _cavi(state, mods, a, etas, 1)
    return dict(dense=dense, mods=mods, a=a, etas=etas, state=state)


def _responsibilities(gamma, lambdas):
    log_pi = tv.dirichlet_expected_log(gamma)
    return tuple(jax.nn.softmax(log_pi[:, None, :] + tv.dirichlet_expected_log(lam).T[None], axis=-1)
                 for lam in lambdas)


def test_sparse_elbo_equals_explicit_elbo(tiny):
    s, a, etas, dense = tiny["state"], tiny["a"], tiny["etas"], tiny["dense"]
    log_phis = tuple(tv.dirichlet_expected_log(lam) for lam in s.lambdas)
    stats = tv.e_step(tv.dirichlet_expected_log(s.gamma), log_phis, tiny["mods"])
    new = tv.TopicVIState(tv.update_gamma(a, stats), tv.update_lambda(etas, stats), stats)
    resp = _responsibilities(s.gamma, s.lambdas)               # the E-step's r, written out
    explicit = tv.elbo_explicit(new.gamma, new.lambdas, resp, dense, a, etas)
    coef = tv.log_multinomial_coefficient([np.asarray(d) for d in dense])
    np.testing.assert_allclose(tv.elbo(new, a, etas, coef), explicit + coef, rtol=1e-12)


def _maximize(fun, x0):
    value_and_grad = jax.jit(jax.value_and_grad(lambda x: -fun(x)))

    def f(x):
        v, g = value_and_grad(jnp.asarray(x))
        return float(v), np.asarray(g)
    res = minimize(f, np.asarray(x0), jac=True, method="L-BFGS-B", options=dict(maxiter=2000, gtol=1e-10,
                                                                                  ftol=1e-15))
    return res.x


def test_gamma_and_lambda_updates_are_numerical_block_maximizers(tiny):
    s, a, etas, dense = tiny["state"], tiny["a"], tiny["etas"], tiny["dense"]
    resp = _responsibilities(s.gamma, s.lambdas)
    stats = tv.e_step(tv.dirichlet_expected_log(s.gamma), tuple(tv.dirichlet_expected_log(l) for l in s.lambdas),
                      tiny["mods"])
    # q(pi): maximize over log gamma with r, lambda fixed
    best = _maximize(lambda lg: tv.elbo_explicit(jnp.exp(lg.reshape(s.gamma.shape)), s.lambdas, resp, dense, a,
                                                 etas), jnp.log(s.gamma).ravel())
    np.testing.assert_allclose(np.exp(best).reshape(s.gamma.shape), tv.update_gamma(a, stats), rtol=1e-5)
    # q(phi^b): maximize over log lambda_b with r, gamma fixed
    lam_w, lam_b = s.lambdas
    best = _maximize(lambda ll: tv.elbo_explicit(s.gamma, (lam_w, jnp.exp(ll.reshape(lam_b.shape))), resp, dense,
                                                 a, etas), jnp.log(lam_b).ravel())
    np.testing.assert_allclose(np.exp(best).reshape(lam_b.shape), tv.update_lambda(etas, stats)[1], rtol=1e-5)


def test_responsibility_update_is_numerical_block_maximizer(tiny):
    s, a, etas, dense = tiny["state"], tiny["a"], tiny["etas"], tiny["dense"]
    resp = _responsibilities(s.gamma, s.lambdas)
    shape = resp[0].shape

    def objective(logits):
        r_w = jax.nn.softmax(logits.reshape(shape), axis=-1)
        return tv.elbo_explicit(s.gamma, s.lambdas, (r_w, resp[1]), dense, a, etas)

    best = _maximize(objective, jnp.zeros(int(np.prod(shape))))
    r_num = jax.nn.softmax(best.reshape(shape), axis=-1)
    observed = np.asarray(dense[0]) > 0                          # r only matters where there are counts
    np.testing.assert_allclose(np.asarray(r_num)[observed], np.asarray(resp[0])[observed], atol=2e-5)


@pytest.fixture(scope="module")
def small_fits():
    rng = np.random.default_rng(3)
    words = rng.poisson(1.0, size=(40, 12)).astype(float)
    visual = rng.poisson(1.5, size=(40, 15)).astype(float)
    words[:, 0] += 1
    etas = (jnp.ones(12), jnp.ones(15))
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    lda_state, lda_trace = tv.fit_mean_field(keys, [words, visual], K, jnp.ones(K), etas, max_iter=60, tol=0.0,
                                             local_steps=2, progress_bar=False)
    prior = dist.Beta(1.0, 1.0)
    logits0 = jnp.zeros(K - 1)
    hdp_state, hdp_trace = sbvi.fit_stick_breaking(keys, [words, visual], K, etas, 1.0, prior,
                                                   init_stick_logits=logits0, max_iter=60, tol=0.0,
                                                   local_steps=2, progress_bar=False)
    return dict(words=words, visual=visual, etas=etas, keys=keys, lda=(lda_state, lda_trace),
                hdp=(hdp_state, hdp_trace), prior=prior)


@pytest.mark.parametrize("which", ["lda", "hdp"])
def test_elbo_never_decreases(small_fits, which):
    _, trace = small_fits[which]
    assert trace.shape == (2, 60) and np.all(np.isfinite(trace))
    steps = np.diff(trace, axis=1)
    assert steps.min() >= -1e-9 * np.abs(trace).max(), steps.min()
    assert trace[:, -1].min() > trace[:, 0].max() - 1e-9      # it also moved


def test_elbo_never_decreases_from_either_initial_beta(small_fits):
    """Restarts with both initial sticks (rule "both": restart 0 uniform, restart 1 geometric at the prior mean
    1/2 = the fixture's logits 0): every trace is monotone, and the geometric restart is the fixture's fit."""
    starts = sbvi.restart_stick_logits(K, 2, 0.5, "both")
    np.testing.assert_allclose(starts[0], sbvi.uniform_stick_logits(K))
    np.testing.assert_allclose(starts[1], 0.0, atol=1e-12)
    state, trace = sbvi.fit_by_start(sbvi.fit_stick_breaking, small_fits["keys"], starts,
                                     [small_fits["words"], small_fits["visual"]], K, small_fits["etas"], 1.0,
                                     small_fits["prior"], max_iter=60, tol=0.0, local_steps=2)
    assert trace.shape == (2, 60) and np.all(np.isfinite(trace))
    assert np.diff(trace, axis=1).min() >= -1e-9 * np.abs(trace).max()
    _, geometric_trace = small_fits["hdp"]
    np.testing.assert_allclose(trace[1], geometric_trace[1], rtol=1e-9)
    assert not np.allclose(trace[0], geometric_trace[0])                 # restart 0 did start elsewhere
    with pytest.raises(ValueError, match="initial_sticks"):
        sbvi.restart_stick_logits(K, 2, 0.5, "random")


def test_restarts_by_start_keep_restart_order_and_pad_early_stops():
    """fit_by_start puts the groups back in restart order; a group that stopped early repeats its last ELBO."""
    def fake_fit(keys, *, init_stick_logits):
        n_iter = 3 if float(init_stick_logits[0]) > 0 else 5
        value = jnp.asarray(init_stick_logits[0]) + jnp.arange(keys.shape[0], dtype=jnp.float64)
        trace = np.tile(np.arange(n_iter, dtype=float), (keys.shape[0], 1)) + np.asarray(value)[:, None]
        return sbvi.HDPState(topic=None, stick_logits=jnp.broadcast_to(value[:, None], (keys.shape[0], 2))), trace
    starts = np.array([[1.0, 1.0], [-1.0, -1.0], [1.0, 1.0]])
    state, trace = sbvi.fit_by_start(fake_fit, jax.random.split(jax.random.PRNGKey(0), 3), starts)
    assert [list(g) for g in sbvi.restart_groups(starts)] == [[0, 2], [1]]
    np.testing.assert_allclose(np.asarray(state.stick_logits)[:, 0], [1.0, -1.0, 2.0])
    np.testing.assert_allclose(trace, [[1, 2, 3, 3, 3], [-1, 0, 1, 2, 3], [2, 3, 4, 4, 4]])


def test_beta_step_reaches_optimum_of_its_objective(small_fits):
    state, _ = small_fits["hdp"]
    gamma = state.topic.gamma[0]
    sum_log_pi = tv.dirichlet_expected_log(gamma).sum(0)
    log_prior = lambda u: jnp.sum(small_fits["prior"].log_prob(u))  # noqa: E731
    objective = lambda x: sbvi.beta_objective(x, sum_log_pi, gamma.shape[0], 1.0, log_prior)  # noqa: E731
    start = jnp.array([2.0, -1.0])
    found = sbvi.optimize_sticks(start, sum_log_pi, gamma.shape[0], 1.0, log_prior, learning_rate=0.05,
                                 num_steps=600)
    assert objective(found) >= objective(start)
    best = _maximize(objective, start)
    np.testing.assert_allclose(objective(found), objective(jnp.asarray(best)), rtol=1e-6)
    np.testing.assert_allclose(sbvi.stick_weights(found), sbvi.stick_weights(jnp.asarray(best)), atol=1e-3)


def test_stick_weights_sum_to_one_and_match_program():
    from zoo.models.multimodal_topics import stick_breaking
    x = jnp.array([0.3, -2.0, 5.0, 0.0])
    beta = sbvi.stick_weights(x)
    np.testing.assert_allclose(beta.sum(), 1.0, rtol=1e-12)
    np.testing.assert_allclose(beta, stick_breaking(jax.nn.sigmoid(x)), rtol=1e-12)
    np.testing.assert_allclose(sbvi.stick_weights(jnp.zeros(0)), [1.0])


def test_hdp_with_fixed_beta_equals_lda(small_fits):
    logits = jnp.array([0.4, -0.3])
    beta = sbvi.stick_weights(logits)
    words, visual, etas, keys = small_fits["words"], small_fits["visual"], small_fits["etas"], small_fits["keys"]
    hdp_state, hdp_trace = sbvi.fit_stick_breaking(keys, [words, visual], K, etas, 2.0, small_fits["prior"],
                                                   init_stick_logits=logits, optimize_beta=False, max_iter=60,
                                                   tol=0.0, local_steps=2, progress_bar=False)
    lda_state, lda_trace = tv.fit_mean_field(keys, [words, visual], K, 2.0 * beta, etas, max_iter=60, tol=0.0,
                                             local_steps=2, progress_bar=False)
    np.testing.assert_allclose(hdp_state.topic.lambdas[0], lda_state.lambdas[0], rtol=1e-10)
    np.testing.assert_allclose(hdp_state.topic.gamma, lda_state.gamma, rtol=1e-10)
    # the HDP ELBO adds log p(u) of the (fixed) sticks
    log_prior = float(jnp.sum(small_fits["prior"].log_prob(jax.nn.sigmoid(logits))))
    np.testing.assert_allclose(hdp_trace, lda_trace + log_prior, rtol=1e-10)


def test_generic_optax_optimizer_agrees_with_cavi_optimum(tiny):
    """Maximize the explicit ELBO over all variational parameters jointly with optax (Adam), starting from a
    perturbation of the CAVI fixed point: it returns to the same value and parameters."""
    a, etas, dense, mods = tiny["a"], tiny["etas"], tiny["dense"], tiny["mods"]
    s = tiny["state"]
    for _ in range(1500):
        s = _cavi(s, mods, a, etas, 1)
    resp = _responsibilities(s.gamma, s.lambdas)
    cavi_value = tv.elbo_explicit(s.gamma, s.lambdas, resp, dense, a, etas)
    params = dict(lg=jnp.log(s.gamma), lw=jnp.log(s.lambdas[0]), lb=jnp.log(s.lambdas[1]),
                  rw=jnp.log(resp[0]), rb=jnp.log(resp[1]))
    noise = jax.random.split(jax.random.PRNGKey(1), len(params))
    params = {k: v + 0.05 * jax.random.normal(n, v.shape) for (k, v), n in zip(sorted(params.items()), noise)}

    def negative_elbo(p):
        r = (jax.nn.softmax(p["rw"], -1), jax.nn.softmax(p["rb"], -1))
        return -tv.elbo_explicit(jnp.exp(p["lg"]), (jnp.exp(p["lw"]), jnp.exp(p["lb"])), r, dense, a, etas)

    opt = optax.adam(0.02)

    @jax.jit
    def run(p):
        def body(carry, _):
            p, o = carry
            g = jax.grad(negative_elbo)(p)
            u, o = opt.update(g, o, p)
            return (optax.apply_updates(p, u), o), None
        (p, _), _ = jax.lax.scan(body, (p, opt.init(p)), None, length=3000)
        return p

    found = run(params)
    assert -negative_elbo(found) <= cavi_value + 1e-6         # CAVI's point is a maximum
    np.testing.assert_allclose(-negative_elbo(found), cavi_value, rtol=1e-6)
    np.testing.assert_allclose(jnp.exp(found["lg"]), s.gamma, rtol=1e-2)


@pytest.mark.slow
@pytest.mark.parametrize("n_factors", [1, 2])
def test_hdp_with_fixed_beta_equals_lda_small_truncations(small_fits, n_factors):
    logits = jnp.full(n_factors - 1, 0.2)
    beta = sbvi.stick_weights(logits)
    words, visual, etas, keys = small_fits["words"], small_fits["visual"], small_fits["etas"], small_fits["keys"]
    hdp_state, hdp_trace = sbvi.fit_stick_breaking(keys, [words, visual], n_factors, etas, 1.5, small_fits["prior"],
                                                   init_stick_logits=logits, optimize_beta=False, max_iter=30,
                                                   tol=0.0, local_steps=2, progress_bar=False)
    lda_state, lda_trace = tv.fit_mean_field(keys, [words, visual], n_factors, 1.5 * beta, etas, max_iter=30,
                                             tol=0.0, local_steps=2, progress_bar=False)
    np.testing.assert_allclose(hdp_state.topic.lambdas[1], lda_state.lambdas[1], rtol=1e-10)
    log_prior = float(jnp.sum(small_fits["prior"].log_prob(jax.nn.sigmoid(logits))))
    np.testing.assert_allclose(hdp_trace, lda_trace + log_prior, rtol=1e-10)
