"""Carbonetto et al. 2003: MAP-EM monotone, equal to an optax optimum and to the program's log density.

The fits on the Sec. 2 data share shapes, chain count and max_iter (``FIT``) so that EM compiles once per
covariance type for the whole module."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from numpyro.distributions.transforms import biject_to
from numpyro.infer.util import log_density

import zoo
from zoo.data import AnnotatedRegions
from zoo.data.carbonetto03 import SEC2_VARIANCES, mixture_data_sec2, translation_data_sec52
from zoo.inference.mixture import em
from zoo.papers import carbonetto03 as c03


FIT = dict(num_chains=2, max_iter=150, progress_bar=False)


@pytest.fixture(scope="module")
def sec2():
    return mixture_data_sec2(n_points=200, seed=0)


@pytest.mark.parametrize("covariance", ["diag", "full"])
def test_map_em_objective_never_decreases(sec2, covariance):
    X, _ = sec2
    fit = zoo.fit(zoo.model("carbonetto03.shrinkage_mixture", n_components=3, covariance=covariance), X,
                  method="map_em", seed=0, **FIT)
    trace = fit.idata.sample_stats["objective"].values[:, 0, :]
    assert np.all(np.isfinite(trace))
    steps = np.diff(trace, axis=1)
    assert steps.min() >= -1e-9 * np.abs(trace).max(), steps.min()
    assert (steps > 0).any()


def test_translation_em_objective_never_decreases():
    regions, _ = translation_data_sec52(n_images=40, seed=3)
    for method in ("map_em", "ml_em"):
        fit = zoo.fit(zoo.model("carbonetto03.translation", covariance="diag", alpha=11.0), regions,
                      method=method, seed=0, num_chains=2, max_iter=100, progress_bar=False)
        trace = fit.idata.sample_stats["objective"].values[:, 0, :]
        assert np.diff(trace, axis=1).min() >= -1e-9 * np.abs(trace).max()
        proba = fit.predict(regions).word_proba
        assert proba.shape == (regions.X.shape[0], 3) and np.allclose(proba.sum(1), 1)


def test_row_buckets():
    """Sizes a data set is padded to: a power of two up to 512 rows, then multiples of 256."""
    sizes = (1, 60, 64, 65, 173, 177, 194, 200, 256, 257, 512, 513, 1266, 1280)
    assert [em.row_bucket(n) for n in sizes] == [1, 64, 64, 128, 256, 256, 256, 256, 256, 512, 512, 768, 1280, 1280]
    X, allowed, weight = em.pad_rows(np.ones((3, 2)), np.eye(3, 2, dtype=bool), 5)
    assert X.shape == (5, 2) and np.all(np.asarray(X[3:]) == 0) and np.all(np.asarray(allowed[3:]))
    np.testing.assert_array_equal(np.asarray(weight), [1, 1, 1, 0, 0])
    with pytest.raises(ValueError, match="n_rows"):
        em.pad_rows(np.ones((3, 2)), np.ones((3, 2), bool), 2)


def _em_problem(diagonal: bool, translation: bool, n_rows: int, seed: int = 0):
    """A 3-component MAP problem in 2-D (centred), 2 restarts: (X, inits, hyper, allowed, config)."""
    rng = np.random.default_rng(seed)
    centres = np.array([[-3.0, 0.0], [0.0, 3.0], [3.0, -1.0]])
    labels = rng.integers(0, 3, n_rows)
    X = centres[labels] + rng.normal(size=(n_rows, 2))
    X = X - X.mean(0)
    allowed = np.ones((n_rows, 3), bool)
    if translation:   # each point's image allows its own concept and one other
        allowed[:] = False
        allowed[np.arange(n_rows), labels] = True
        allowed[np.arange(n_rows), (labels + 1 + rng.integers(0, 2, n_rows)) % 3] = True
    sigma_star = np.cov(X.T)
    hyper = em.Hyper(sigma_star=jnp.asarray(sigma_star), alpha=jnp.asarray(4.0), a=jnp.asarray(2.0),
                     b=jnp.asarray(1.0), nu=jnp.full((3,), 1.5), reg_covar=jnp.asarray(0.0))
    config = em.EMConfig(diagonal=diagonal, use_prior=True, learn_weights=not translation)
    means = np.stack([X[rng.choice(n_rows, 3, replace=False)] for _ in range(2)])
    covs = np.broadcast_to(np.diag(sigma_star) if diagonal else sigma_star,
                           (2, 3) + ((2,) if diagonal else (2, 2))).copy()
    inits = em.Params(jnp.full((2, 3), 1.0 / 3), jnp.asarray(means), jnp.asarray(covs),
                      jnp.broadcast_to(jnp.diag(jnp.asarray(sigma_star)), (2, 2)))
    return jnp.asarray(X), inits, hyper, jnp.asarray(allowed), config


@pytest.mark.parametrize("diagonal, translation", [(False, False), (True, True)])
def test_padded_em_equals_the_unpadded_em(diagonal, translation):
    """Weight-0 padding rows (``em.pad_rows``: 173 rows to 256) change nothing but the order of the sums'
    additions: the fixed point, the whole objective trace and the iteration count are the unpadded EM's to
    rounding (full mixture and diagonal translation model: both covariance algebras, learned and fixed weights)."""
    X, inits, hyper, allowed, config = _em_problem(diagonal, translation, n_rows=173)
    plain = em.run_em_restarts(X, inits, hyper, allowed, config, max_iter=300, tol=1e-10)
    X_pad, allowed_pad, weight = em.pad_rows(X, allowed)
    assert X_pad.shape[0] == 256
    padded = em.run_em_restarts(X_pad, inits, hyper, allowed_pad, config, max_iter=300, tol=1e-10, weight=weight)
    for name in ("params", "objective"):
        leaves = (jax.tree_util.tree_leaves(getattr(run, name)) for run in (plain, padded))
        for a, b in zip(*leaves):
            np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-10, atol=1e-12, err_msg=name)
    np.testing.assert_array_equal(np.asarray(padded.n_iter), np.asarray(plain.n_iter))
    assert np.all(np.asarray(plain.converged)) and np.all(np.asarray(plain.n_iter) > 5)


def test_data_sets_of_different_sizes_share_one_compiled_em():
    """Two Sec. 5.2 data sets of different sizes (one bucket) fit with one compilation of the EM, and each fit's
    pointwise log likelihood covers exactly its own regions: under ML its sum is the fit's final objective (the log
    likelihood), so no padding row's term is in it or in the objective."""
    data = [translation_data_sec52(n_images=60, seed=seed)[0] for seed in (100, 101)]
    sizes = [d.X.shape[0] for d in data]
    assert sizes[0] != sizes[1] and em.row_bucket(sizes[0]) == em.row_bucket(sizes[1])
    spec = zoo.model("carbonetto03.translation", covariance="diag", alpha=11.0, standardize=False)
    before = em.run_em_restarts._cache_size()
    fits = [zoo.fit(spec, d, method="ml_em", seed=0, num_chains=2, max_iter=40, progress_bar=False) for d in data]
    assert em.run_em_restarts._cache_size() == before + 1
    from zoo.core.idata import POINT_LOG_LIKELIHOOD     # a point estimate's log likelihood (not draws)
    for fit, n in zip(fits, sizes):
        pointwise = fit.idata[POINT_LOG_LIKELIHOOD]["x"]
        assert pointwise.shape == (2, 1, n) and np.all(np.isfinite(pointwise.values))
        final = fit.idata.sample_stats["objective"].values[:, 0, -1]
        np.testing.assert_allclose(pointwise.values[:, 0].sum(-1), final, rtol=1e-10)


def _em_params_to_sites(fit):
    p = fit.state["params"]
    return {"lambda": p.weights, "mu": p.means + fit.state["mu_star"], "Sigma": p.covs, "tau2": p.tau2}


def test_em_objective_equals_program_log_density(sec2):
    """EM's log posterior and the NumPyro program's log density agree exactly (full and diagonal)."""
    X, _ = sec2
    for covariance in ("full", "diag"):
        spec = zoo.model("carbonetto03.shrinkage_mixture", n_components=3, covariance=covariance, a=2.0, b=0.5,
                         nu=2.0)
        fit = zoo.fit(spec, X, method="map_em", seed=1, **FIT)
        sites = _em_params_to_sites(fit)
        kwargs = c03._mixture_program_args(spec, X)
        lp_program = float(log_density(spec.program, (), kwargs, sites)[0])
        lp_em = float(fit.idata.sample_stats["objective"].values[fit.state["best_chain"], 0, -1])
        assert lp_program == pytest.approx(lp_em, rel=1e-10, abs=1e-8)


def _optax_map(program, kwargs, start, n_steps=300):
    """Maximize the program's log density over unconstrained coordinates with optax L-BFGS (no Jacobian).

    From the test's start (5 % off the EM point), L-BFGS reaches its fixed point within 300 steps: 300, 600, 1,000
    and 3,000 steps end at the same point in every site to the printed digits (max relative difference to EM
    2.3e-6 / 5.5e-6 / 1.0e-6 / 8.9e-7 for lambda / mu / Sigma / tau2 in all four); 3,000 took 8.3 CPU s, 300 3.3 s.
    """
    transforms = {"lambda": biject_to(jax.scipy.stats.norm and __import__("numpyro").distributions.constraints.simplex),
                  "Sigma": biject_to(__import__("numpyro").distributions.constraints.positive),
                  "tau2": biject_to(__import__("numpyro").distributions.constraints.positive)}

    def to_sites(u):
        return {"mu": u["mu"], **{k: transforms[k](u[k]) for k in ("lambda", "Sigma", "tau2")}}

    def loss(u):
        return -log_density(program, (), kwargs, to_sites(u))[0]

    u = {"mu": jnp.asarray(start["mu"]), **{k: transforms[k].inv(jnp.asarray(start[k])) for k in transforms}}
    opt = optax.lbfgs()
    state = opt.init(u)
    value_and_grad = optax.value_and_grad_from_state(loss)

    @jax.jit
    def step(carry, _):
        u, state = carry
        value, grad = value_and_grad(u, state=state)
        updates, state = opt.update(grad, state, u, value=value, grad=grad, value_fn=loss)
        return (optax.apply_updates(u, updates), state), value

    (u, _), values = jax.lax.scan(step, (u, state), None, length=n_steps)
    return to_sites(u), -float(loss(u))


def test_em_fixed_point_equals_optax_optimum(sec2):
    X, _ = sec2
    X = X[:60]
    # the raw features of the paper's Sec. 2 (the fixed point does not depend on the scaling; L-BFGS's precision does)
    spec = zoo.model("carbonetto03.shrinkage_mixture", n_components=3, covariance="diag", a=1.0, b=0.5, nu=2.0,
                     standardize=False)
    fit = zoo.fit(spec, X, method="map_em", seed=0, num_chains=1, max_iter=5000, tol=1e-14, progress_bar=False)
    em_sites = _em_params_to_sites(fit)
    rng = np.random.default_rng(0)
    start = {k: np.asarray(v) * np.exp(0.05 * rng.normal(size=np.shape(v))) for k, v in em_sites.items()}
    start["lambda"] = start["lambda"] / start["lambda"].sum()
    opt_sites, opt_value = _optax_map(spec.program, c03._mixture_program_args(spec, X), start)
    em_value = float(fit.idata.sample_stats["objective"].values[0, 0, -1])
    assert opt_value <= em_value + 1e-6 * abs(em_value)  # EM is at the (local) maximum
    for site in ("lambda", "mu", "Sigma", "tau2"):
        np.testing.assert_allclose(np.asarray(opt_sites[site]), np.asarray(em_sites[site]), rtol=1e-5, atol=1e-7)


def _nuts_vs_map_errors(sizes, num_warmup, num_samples):
    errors = []
    for n in sizes:
        X, _ = mixture_data_sec2(n_points=n, seed=5)
        spec = zoo.model("carbonetto03.shrinkage_mixture", n_components=3, covariance="diag",
                         known_covariance=SEC2_VARIANCES, a=1.0, b=1.0, nu=2.0)
        fit_map = zoo.fit(spec, X, method="map_em", seed=0, num_chains=2, progress_bar=False)
        fit_nuts = zoo.fit(spec, X, method="nuts", seed=0, num_chains=1, num_warmup=num_warmup,
                           num_samples=num_samples, progress_bar=False)
        order = lambda m: m[np.argsort(m[:, 0])]  # components identified by their first coordinate
        mu_map = order(fit_map.idata.posterior["mu"].values[fit_map.state["best_chain"], 0])
        mu_nuts = order(fit_nuts.idata.posterior["mu"].values[0].mean(0))
        errors.append(np.abs(mu_map[:, :3] - mu_nuts[:, :3]).max())
    return errors


@pytest.mark.extended
def test_nuts_posterior_mean_approaches_map():
    """As N grows the posterior concentrates at the MAP: |NUTS mean - MAP| shrinks (known variances, Sec. 2)."""
    errors = _nuts_vs_map_errors((60, 600), num_warmup=150, num_samples=150)
    assert errors[1] < 0.25 and errors[1] < errors[0], errors


@pytest.mark.slow
def test_nuts_posterior_mean_approaches_map_long():
    errors = _nuts_vs_map_errors((100, 400, 1600), num_warmup=500, num_samples=1000)
    assert errors[2] < 0.1 and errors[2] < errors[1] < errors[0], errors


def test_predict_shapes_and_prior_swap(sec2):
    X, _ = sec2
    fit = zoo.fit(zoo.model("carbonetto03.shrinkage_mixture", n_components=3, covariance="diag"), X,
                  method="map_em", seed=0, **FIT)
    proba = fit.predict(X).component_proba
    assert proba.shape == (200, 3) and np.allclose(proba.sum(1), 1)
    spec = zoo.model("carbonetto03.shrinkage_mixture", n_components=3, priors={"tau2": "InverseGamma(1.0, 1.0)"})
    assert float(spec.priors["tau2"].rate) == 1.0
    spec = zoo.model("carbonetto03.shrinkage_mixture", n_components=3, priors={"tau2": "HalfCauchy(1.0)"})
    with pytest.raises(ValueError, match="priors\\['tau2'\\].*InverseGamma"):
        zoo.fit(spec, X, method="map_em")
    with pytest.raises(ValueError):
        zoo.model("carbonetto03.shrinkage_mixture", priors={"tau2": "__import__('os')"})
    summary = fit.summary()
    assert "tau2[0]" in summary.index


@pytest.mark.parametrize("X, match", [
    (np.full((10, 2), np.nan), "X"),
    (np.ones(10), "2-D"),
    (np.random.default_rng(0).normal(size=(2, 3)), "n_components"),
    (np.c_[np.ones(10), np.arange(10.0)], "constant"),
])
def test_bad_mixture_data(X, match):
    with pytest.raises(ValueError, match=match):
        zoo.fit(zoo.model("carbonetto03.shrinkage_mixture", n_components=3), X, method="map_em")


@pytest.mark.parametrize("options, match", [
    (dict(alpha=0.0), "alpha"), (dict(nu=0.5), "nu"), (dict(b=-1.0), "b"), (dict(a=-5.0), "a"),
    (dict(n_components=0), "n_components"), (dict(covariance="tied"), "covariance"),
    (dict(known_covariance=[1.0, -1.0]), "known_covariance"),
])
def test_bad_hyperparameters(options, match):
    with pytest.raises(ValueError, match=match):
        zoo.model("carbonetto03.shrinkage_mixture", **options)


def test_bad_translation_data():
    X = np.random.default_rng(0).normal(size=(4, 2))
    with pytest.raises(ValueError, match="no keywords"):
        AnnotatedRegions(X, [0, 0, 1, 1], [["sky"], []], ["sky", "sea"])
    with pytest.raises(ValueError, match="outside the vocabulary"):
        AnnotatedRegions(X, [0, 0, 1, 1], [["sky"], ["tiger"]], ["sky", "sea"])
    with pytest.raises(ValueError, match="AnnotatedRegions"):
        zoo.fit(zoo.model("carbonetto03.translation"), X)
    with pytest.raises(ValueError, match="alpha"):
        zoo.fit(zoo.model("carbonetto03.translation", alpha=0.5),
                AnnotatedRegions(X, [0, 0, 1, 1], [["sky"], ["sea"]], ["sky", "sea"]))
