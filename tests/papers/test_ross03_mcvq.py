"""Ross 2003 MCVQ: the variational EM against its NumPyro program (brute-force enumeration), block optimality
against a generic optimizer, monotone free energy, recovery of the dimension-to-VQ assignment, missing data."""
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
import scipy.optimize
from jax.scipy.special import logsumexp
from numpyro.infer.util import log_density

import zoo
from zoo.data import Matrix
from zoo.inference.mcvq import steps
from zoo.inference.mcvq.variational_em import MCVQConfig, initialize, run_variational_em, temperature_schedule
from zoo.models.mcvq import mcvq_program

FLAT2 = steps.PriorConcentrations(a=jnp.ones(2), b=jnp.ones(2), beta=jnp.ones(2))


def _tiny(seed=0, C=2, D=3, K=2, J=2, N=2):
    """A tiny problem with one missing entry and a random interior variational/parameter point."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(C, D))
    M = np.ones((C, D))
    M[0, 1] = 0.0
    X = X * M
    params = steps.MCVQParams(mu=jnp.asarray(rng.normal(size=(D, K, J))),
                              sigma=jnp.asarray(rng.uniform(0.5, 1.5, size=(D, K, J))),
                              a=jnp.asarray(rng.dirichlet(np.ones(K), size=D)),
                              b=jnp.asarray(rng.dirichlet(np.ones(J), size=(N, K))),
                              beta=jnp.asarray(rng.dirichlet(np.ones(N))))
    post = steps.MCVQPosterior(g=jnp.asarray(rng.dirichlet(np.ones(K), size=D)),
                               m=jnp.asarray(rng.dirichlet(np.ones(J), size=(C, N, K))),
                               z=jnp.asarray(rng.dirichlet(np.ones(N), size=C)))
    return jnp.asarray(X), jnp.asarray(M), params, post


def _program_kwargs(X, M, params, N):
    return dict(mu=params.mu, sigma=params.sigma, X=X, mask=M > 0, prior_a=dist.Dirichlet(jnp.ones(2)),
                prior_b=dist.Dirichlet(jnp.ones(2)), prior_beta=dist.Dirichlet(jnp.ones(N)) if N > 1 else None,
                n_classes=N)


def _configs(C, D, K, J, N):
    """Every (r, y, s) configuration: r (n, D), y (n, C), s (n, C, K)."""
    rs = list(itertools.product(range(K), repeat=D))
    ys = list(itertools.product(range(N), repeat=C))
    ss = list(itertools.product(range(J), repeat=C * K))
    grid = list(itertools.product(rs, ys, ss))
    r = np.array([g[0] for g in grid])
    y = np.array([g[1] for g in grid])
    s = np.array([g[2] for g in grid]).reshape(len(grid), C, K)
    return jnp.asarray(r), jnp.asarray(y), jnp.asarray(s)


def _log_joints(X, M, params, N):
    """log p(a, b, beta, r, y, s, x) of the NumPyro program at every configuration of the discrete sites."""
    C, D = X.shape
    _, K, J = params.mu.shape
    r, y, s = _configs(C, D, K, J, N)
    kwargs = _program_kwargs(X, M, params, N)

    def one(r_, y_, s_):
        values = {"a": params.a, "b": params.b, "r": r_, "s": s_}
        if N > 1:
            values.update(beta=params.beta, y=y_)
        return log_density(mcvq_program, (), kwargs, values)[0]

    return jax.jit(jax.vmap(one))(r, y, s), (r, y, s)


@pytest.fixture(scope="module")
def enumerated_n2():
    X, M, params, post = _tiny(N=2)
    return (X, M, params, post), _log_joints(X, M, params, 2)


@pytest.mark.parametrize("N", [pytest.param(1, marks=pytest.mark.slow), 2])
def test_free_energy_equals_enumerated_expectation_under_q(N, enumerated_n2):
    """F at T = 1 is exactly E_Q[log Q - log p(x, R, S, y, a, b, beta)] of the NumPyro program, and -F is a
    lower bound on the enumerated log evidence log p(x, a, b, beta)."""
    if N == 1:
        X, M, params, post = _tiny(N=N)
        params = params._replace(b=params.b[:1], beta=jnp.ones(1))
        post = post._replace(m=post.m[:, :1], z=jnp.ones((2, 1)))
        log_p, (r, y, s) = _log_joints(X, M, params, N)
    else:
        (X, M, params, post), (log_p, (r, y, s)) = enumerated_n2
    D = X.shape[1]
    log_q = jnp.log(post.g[jnp.arange(D), r]).sum(-1)                                       # (n,)
    c_idx = jnp.arange(2)
    m_sel = post.m[c_idx[None, :, None], y[:, :, None], jnp.arange(2)[None, None, :], s]   # (n, C, K)
    log_q = log_q + jnp.log(m_sel).sum((-1, -2))
    if N > 1:
        log_q = log_q + jnp.log(post.z[c_idx[None], y]).sum(-1)
    expected = float((jnp.exp(log_q) * (log_q - log_p)).sum())
    F = steps.free_energy_of_data(X, M, params, post, 1.0, FLAT2._replace(beta=jnp.ones(N)), N > 1)
    np.testing.assert_allclose(float(F), expected, rtol=1e-10)
    assert -float(F) <= float(logsumexp(log_p)) + 1e-9


def test_exact_likelihood_given_selection_matches_enumeration(enumerated_n2):
    """log p(x^c | R) with S and y summed out equals the enumerated program density (N = 2 classes)."""
    (X, M, params, _), (log_p, (r, y, s)) = enumerated_n2
    r_fixed = jnp.array([1, 0, 1])
    keep = (r == r_fixed).all(-1)
    # p(x, r, a, b, beta) summed over y, s for the fixed r, minus the parts not depending on x
    log_px_r = logsumexp(jnp.where(keep, log_p, -jnp.inf))
    prior_part = (dist.Dirichlet(jnp.ones(2)).log_prob(params.a).sum() + dist.Dirichlet(jnp.ones(2)).log_prob(
        params.b).sum() + dist.Dirichlet(jnp.ones(2)).log_prob(params.beta)
        + jnp.log(params.a[jnp.arange(3), r_fixed]).sum())
    ours = steps.log_likelihood_given_selection(X, M, params, jax.nn.one_hot(r_fixed, 2)).sum()
    np.testing.assert_allclose(float(ours), float(log_px_r - prior_part), rtol=1e-10)


def _block_objective(X, M, params, post, T, N):
    conc = FLAT2._replace(beta=jnp.ones(N))
    return lambda p, q: steps.free_energy_of_data(X, M, p, q, T, conc, False)


def _minimize(fun, x0):
    f = jax.jit(jax.value_and_grad(fun))
    res = scipy.optimize.minimize(lambda v: tuple(np.asarray(t) for t in f(jnp.asarray(v))), np.asarray(x0),
                                  jac=True, method="L-BFGS-B", options={"maxiter": 2000, "gtol": 1e-10,
                                                                        "ftol": 1e-15})
    return res.fun


def test_each_step_is_an_exact_block_optimum():
    """E-step (m, z), the mu/sigma M-step, the annealed g step and the b step each reach the minimum of F_T over
    their block that a generic optimizer (L-BFGS on unconstrained coordinates) finds."""
    X, M, params, post = _tiny(N=2)
    T = 3.0
    F = _block_objective(X, M, params, post, T, 2)
    L = steps.data_term(X, M, post.g, params.mu, params.sigma)
    # m
    m = steps.e_step_states(L, params.b)
    ours = F(params, post._replace(m=m))
    generic = _minimize(lambda v: F(params, post._replace(m=jax.nn.softmax(v.reshape(post.m.shape), -1))),
                        np.zeros(post.m.size))
    np.testing.assert_allclose(float(ours), generic, rtol=1e-7)
    # z (given the optimal m)
    z = steps.e_step_classes(L, params.b, params.beta)
    post_m = post._replace(m=m)
    F_beta = lambda p, q: steps.free_energy_of_data(X, M, p, q, T, FLAT2, False)  # noqa: E731
    ours = F_beta(params, post_m._replace(z=z))
    generic = _minimize(lambda v: F_beta(params, post_m._replace(z=jax.nn.softmax(v.reshape(2, 2), -1))),
                        np.zeros(4))
    np.testing.assert_allclose(float(ours), generic, rtol=1e-7)
    # mu, sigma (on 8 cases, so that no weighted variance sits at the floor)
    X8, M8, params8, post8 = _tiny(seed=4, C=8, N=2)
    F8 = _block_objective(X8, M8, params8, post8, T, 2)
    S = steps.sufficient_statistics(X8, M8, steps.state_weights(post8))
    mu, sigma = steps.m_step_gaussians(S, params8.mu, params8.sigma, 1e-6)
    assert float(sigma.min()) > 1e-3
    ours = F8(params8._replace(mu=mu, sigma=sigma), post8)
    n = params8.mu.size
    generic = _minimize(lambda v: F8(params8._replace(mu=v[:n].reshape(params8.mu.shape),
                                                      sigma=jnp.exp(v[n:]).reshape(params8.mu.shape)), post8),
                        np.concatenate([np.ravel(params8.mu), np.zeros(n)]))
    np.testing.assert_allclose(float(ours), generic, rtol=1e-7)
    S = steps.sufficient_statistics(X, M, steps.state_weights(post))
    # g at temperature T
    g = steps.m_step_ownership(steps.expected_energy(S, params.mu, params.sigma), params.a, T)
    ours = F(params, post._replace(g=g))
    generic = _minimize(lambda v: F(params, post._replace(g=jax.nn.softmax(v.reshape(3, 2), -1))), np.zeros(6))
    np.testing.assert_allclose(float(ours), generic, rtol=1e-7)
    # a, b (beta) MAP with Dirichlet(2) priors
    conc = steps.PriorConcentrations(a=jnp.full(2, 2.0), b=jnp.full(2, 2.0), beta=jnp.full(2, 2.0))
    a, b, beta = steps.m_step_priors(post, T, conc, True)
    Fp = lambda p: steps.free_energy_of_data(X, M, p, post, T, conc, True)  # noqa: E731
    ours = Fp(params._replace(a=a, b=b, beta=beta))
    generic = _minimize(lambda v: Fp(params._replace(a=jax.nn.softmax(v[:6].reshape(3, 2), -1),
                                                     b=jax.nn.softmax(v[6:14].reshape(2, 2, 2), -1),
                                                     beta=jax.nn.softmax(v[14:], -1))), np.zeros(16))
    np.testing.assert_allclose(float(ours), generic, rtol=1e-7)


@pytest.mark.parametrize("kind,N,prior", [("plain", 1, 1.0),
                                          pytest.param("clustered", 3, 2.5, marks=pytest.mark.slow),
                                          pytest.param("clustered", 3, 1.0, marks=pytest.mark.slow),
                                          pytest.param("supervised", 3, 1.0, marks=pytest.mark.slow)])
def test_free_energy_never_increases_at_fixed_temperature(kind, N, prior, simulated_fit):
    """25 iterations at T = 7, then 25 at T = 1, on the simulated data with 20% missing entries (same shapes as
    the module's fit, so the compiled loop is shared)."""
    _, X, _ = simulated_fit
    rng = np.random.default_rng(1)
    M = (rng.uniform(size=(250, 12)) > 0.2).astype(float)
    M[:, 0] = 1.0
    X, M = jnp.asarray(X[:250] * M), jnp.asarray(M)
    labels = jnp.asarray(np.eye(N)[np.arange(250) % N]) if kind == "supervised" else None
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    init = jax.vmap(lambda k: initialize(k, X, M, 3, 3, N, 0.05, z_init=labels,
                                         random_class_priors=kind == "clustered"))(keys)
    conc = steps.PriorConcentrations(a=jnp.full(3, prior), b=jnp.full(3, prior), beta=jnp.full(N, prior))
    config = MCVQConfig(update_classes=kind == "clustered", update_beta=kind == "clustered",
                      with_beta_prior=kind == "clustered")
    temps = np.concatenate([np.full(20, 7.0), np.ones(20)])
    state, trace = run_variational_em(init, X, M, temps, conc, 0.05, config)
    for part in (trace[:, :20], trace[:, 20:]):
        assert np.all(np.diff(part, axis=1) <= 1e-9 * np.abs(part[:, 1:])), part
    # the recorded F_T is the free energy of the state the loop returns
    last = jax.tree_util.tree_map(lambda x: x[0], state)
    direct = steps.free_energy_of_data(X, M, *last, 1.0, conc, config.with_beta_prior)
    np.testing.assert_allclose(trace[0, -1], float(direct), rtol=1e-10)


def test_temperature_schedule():
    t = temperature_schedule(10, 9.0, 5)
    np.testing.assert_allclose(t, [9, 7, 5, 3, 1, 1, 1, 1, 1, 1])
    with pytest.raises(ValueError, match="t_start"):
        temperature_schedule(10, 0.5, 5)


def _simulate(seed, C=300, D=12, K=3, J=3):
    """Data from the NumPyro program with well-separated states; returns X and the true VQ of each dimension."""
    rng = np.random.default_rng(seed)
    mu = jnp.asarray(rng.choice([-2.0, 0.0, 2.0], size=(D, K, J)))
    sigma = jnp.full((D, K, J), 0.3)
    r_true = np.repeat(np.arange(K), D // K)
    cond = numpyro.handlers.condition(mcvq_program, {"r": jnp.asarray(r_true)})
    tr = numpyro.handlers.trace(numpyro.handlers.seed(cond, seed)).get_trace(
        mu, sigma, n_cases=C, prior_a=dist.Dirichlet(jnp.ones(K)), prior_b=dist.Dirichlet(jnp.full(J, 20.0)))
    return np.asarray(tr["x"]["value"]), r_true


@pytest.fixture(scope="module")
def simulated_fit():
    X, r_true = _simulate(0)
    spec = zoo.model("ross03.mcvq", n_vqs=3, n_states=3)
    fit = zoo.fit(spec, Matrix(X[:250]), seed=0, num_chains=4, max_iter=30, progress_bar=False)
    return fit, X, r_true


def test_recovers_dimension_to_vq_assignment(simulated_fit):
    fit, X, r_true = simulated_fit
    # local optima are common (restarts are chains): the restart with the lowest free energy must be right
    learned = np.argmax(fit.predict(Matrix(X[250:])).vq_ownership, axis=1)
    assert fit.state.free_energy[fit.state.best_chain, -1] == fit.state.free_energy[:, -1].min()
    # same partition of the dimensions, up to relabelling of the VQs
    pairs = set(zip(r_true.tolist(), learned.tolist()))
    assert len(pairs) == 3 and len({p[1] for p in pairs}) == 3, (r_true, learned)


def test_fit_outputs_and_reproducibility(simulated_fit):
    fit, X, _ = simulated_fit
    idata = fit.idata
    assert set(idata.groups()) >= {"posterior", "sample_stats", "log_likelihood", "observed_data",
                                   "variational_parameters"}
    # mu: a point estimate per restart, beside q's parameters; r: draws of q
    assert idata.variational_parameters["mu"].shape == (4, 12, 3, 3) and idata.posterior["r"].shape == (4, 100, 12)
    F = idata.sample_stats["free_energy"].values[:, 0]
    assert F.shape == (4, 30) and np.isfinite(F).all()
    assert idata.log_likelihood["x"].shape == (4, 100, 250)
    summary = fit.summary()
    assert (summary["q"] == "point estimate").all()      # b, the headline, is a point estimate of the method
    # only meaningful columns: MCSE, ESS and r-hat are NaN for every point-estimated row, so they are left out
    assert not [c for c in summary.columns if c.startswith(("mcse", "ess", "r_hat"))], list(summary.columns)
    assert np.isfinite(summary[["mean", "sd"]].values.astype(float)).all()
    pred = fit.predict(Matrix(X[250:]))
    assert pred.reconstruction.shape == (50, 12) and pred.state_proba.shape == (50, 3, 3)
    np.testing.assert_allclose(pred.state_proba.sum(-1), 1.0)
    # far better than predicting each dimension's training mean
    baseline = np.sqrt(np.mean((X[:250].mean(0) - X[250:]) ** 2))
    assert np.sqrt(np.mean((pred.reconstruction - X[250:]) ** 2)) < 0.5 * baseline
    again = zoo.fit(zoo.model("ross03.mcvq", n_vqs=3, n_states=3), Matrix(X[:250]), seed=0, num_chains=4,
                    max_iter=30, progress_bar=False)
    np.testing.assert_array_equal(again.idata.sample_stats["free_energy"].values, idata.sample_stats[
        "free_energy"].values)


def test_missing_entries_take_no_part(simulated_fit):
    """Values at masked entries do not change anything; predictions fill them in."""
    _, X, _ = simulated_fit
    rng = np.random.default_rng(3)
    mask = rng.uniform(size=X[:250].shape) > 0.3
    spec = zoo.model("ross03.mcvq", n_vqs=3, n_states=3)
    kw = dict(seed=1, max_iter=10, num_chains=4, progress_bar=False, sigma_floor=0.05)
    f1 = zoo.fit(spec, Matrix(X[:250], mask), **kw)
    f2 = zoo.fit(spec, Matrix(np.where(mask, X[:250], 1e3), mask), **kw)
    np.testing.assert_array_equal(f1.state.free_energy, f2.state.free_energy)
    p = f1.predict(Matrix(X[:250], mask))
    assert np.isfinite(p.reconstruction[~mask]).all()


def test_posterior_holds_draws_of_q_and_relabelled_vqs(simulated_fit):
    """Variational EM: r and s are draws of each restart's q (s, per case, in unit_posterior); mu, sigma, a, b are
    point estimates, one per restart, kept beside q's parameters (variational_parameters); the VQs, exchangeable
    between restarts, are relabelled beside the raw draws with r's values and s's columns following the same
    permutation; az.loo reads chains x draws of q."""
    import arviz as az

    fit, _, _ = simulated_fit
    post = fit.idata.posterior
    assert fit.inference == "variational"
    fixed = fit.idata.variational_parameters
    r, a = post["r"].values, fixed["a"].values[:, None]                        # (4, S, D), (4, 1, D, K)
    assert r.min() >= 0 and r.max() < 3 and fit.idata.unit_posterior["s"].shape == (4, 100, 250, 3)
    assert set(post.data_vars) == {"r", "r_relabelled"} and fixed["mu"].dims == ("chain", "dim", "vq", "state")
    assert "point estimate" in fixed["a"].attrs["q"]
    g = fit.idata.variational_parameters["g"].values                          # (4, D, K): q(r) of each restart
    assert np.all(np.take_along_axis(g[:, None], r[..., None], -1) > 0)       # every draw possible under q
    r_rel, a_rel = post["r_relabelled"].values, fixed["a_relabelled"].values[:, None]
    # a relabelled VQ index picks the same value of a as the raw one did
    np.testing.assert_array_equal(np.take_along_axis(np.broadcast_to(a_rel, r.shape + a.shape[-1:]),
                                                     r_rel[..., None], -1),
                                  np.take_along_axis(np.broadcast_to(a, r.shape + a.shape[-1:]), r[..., None], -1))
    # (4, S, D, VQ, state): the same in every draw of a restart
    mu_rel, mu = (np.broadcast_to(fixed[k].values[:, None], r.shape[:2] + fixed[k].shape[1:])
                  for k in ("mu_relabelled", "mu"))
    # VQs and then the states within each VQ are permuted: per dimension the same values, in another order
    flat = lambda v: np.sort(v.reshape(v.shape[:3] + (-1,)), axis=-1)  # noqa: E731
    assert np.array_equal(flat(mu_rel), flat(mu))
    # and the relabelled s picks, in each relabelled VQ, the mean that the raw s picked in the raw VQ: compare the
    # multiset over VQs of the picked means of case 0, dimension 0
    units = fit.idata.unit_posterior                                      # per-case draws: beside the posterior
    s_raw, s_rel = units["s"].values[:, :, 0], units["s_relabelled"].values[:, :, 0]        # (4, S, VQ)
    picked_raw = np.take_along_axis(mu[:, :, 0], s_raw[..., None], -1)[..., 0]            # (4, S, VQ)
    picked_rel = np.take_along_axis(mu_rel[:, :, 0], s_rel[..., None], -1)[..., 0]
    assert np.array_equal(np.sort(picked_raw, -1), np.sort(picked_rel, -1))
    loo = az.loo(fit.idata)
    assert loo.n_samples == 400 and np.isfinite(loo.elpd_loo)
    table = fit.diagnose(var_names=["b", "r"])
    assert table.loc["b", "verdict"].startswith("point estimate") and table.attrs["inference"] == "variational"


def test_posterior_predictive_replicates_the_cases_at_each_draw_of_q(simulated_fit):
    """Posterior predictive of variational EM (issue 30): replicated cases drawn at each draw of q. (Moved from
    test_predictive_groups.py in issue 35, where it read a fit of ross03.mcvq_supervised of its own: the replicates
    are drawn by the code shared by the three ross03 models; the module's fit serves it.) The prior predictive's
    refusal for a model whose program does not simulate from priors is checked here too."""
    from zoo.core.prior_predictive import add_prior_predictive

    fit, X, _ = simulated_fit
    rep = fit.idata.posterior_predictive["x"]
    assert rep.dims == ("chain", "draw", "case", "dim") and rep.shape[1:] == (100, 250, 12)
    # the replicated cases follow the observed ones
    mean = rep.mean(dim=("chain", "draw")).values
    assert np.corrcoef(mean.ravel(), X[:250].ravel())[0, 1] > 0.9
    # replicates are draws, not the means: their spread around a case's mean is about the states' sd
    spread = float(rep.std(dim=("chain", "draw")).mean())
    sigma = float(np.mean(fit.idata.variational_parameters["sigma"].values))
    assert 0.5 * sigma < spread < 3.0 * sigma, (spread, sigma)
    with pytest.raises(ValueError, match="program_kwargs"):
        add_prior_predictive(fit)
