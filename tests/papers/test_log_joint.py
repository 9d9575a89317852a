"""``sample_stats["lp"]`` of the papers' own samplers: each draw's log joint under the program the sampler targets,
checked against a NumPyro program's log density on the fit's own draws (issue 30)."""
from __future__ import annotations

import warnings

import jax.numpy as jnp
import numpy as np
import pytest

import zoo


@pytest.fixture(scope="module")
def fs_fit():
    regions = zoo.load_dataset("gustafson07_program", n_images=10, n_keywords=4, n_features=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # 2 x 20 draws: the convergence verdict is not this test's point
        fit = zoo.fit(zoo.model("gustafson07.fs"), regions, seed=0, num_chains=2, num_warmup=10, num_samples=20,
                      progress_bar=False)
    return fit


def test_gustafson07_lp_is_the_collapsed_fs_programs_log_density(fs_fit):
    """FS: lp = log density of ``collapsed_fs_program`` (uniform M prior, eq. 10 with the sampler's fixed (delta,
    Omega)) at the draw, plus the difference of the label priors: that program puts every label uniform over the
    K + 1 concepts, the model uniform over S_i, so lp is larger by sum_i log((K + 1) / |S_i|); and that program's
    site ``nuisance`` ~ N(0, 1) (for NumPyro's HMC-within-Gibbs; not in the model) is taken out at 0."""
    from numpyro.infer.util import log_density

    from zoo.models.collapsed_fs import collapsed_fs_program

    fit = fs_fit
    lp = fit.idata.sample_stats["lp"].values
    Y, M = fit.idata.unit_posterior["Y"].values, fit.idata.posterior["M"].values
    problem, arrays = fit.state["problem"], fit.state["arrays"]
    n_concepts = arrays.allowed.shape[1]
    label_prior_gap = float(np.sum(np.log(n_concepts / arrays.allowed.sum(1))))
    nuisance_at_zero = -0.5 * np.log(2 * np.pi)
    X = jnp.asarray(arrays.X)
    args = (X, jnp.zeros(0, jnp.int32), n_concepts, problem.delta0, problem.Omega0)
    picks = [(c, d) for c in range(2) for d in (0, 7, 19)]
    assert len({float(lp[c, d]) for c, d in picks}) > 1          # the draws differ: the check is not of one value
    for c, d in picks:
        program_lp, _ = log_density(collapsed_fs_program, args, {},
                                    {"M": M[c, d], "Y": Y[c, d], "nuisance": jnp.zeros(())})
        assert np.isclose(lp[c, d], float(program_lp) - nuisance_at_zero + label_prior_gap, rtol=0, atol=1e-6), (c, d)


def test_gustafson07_lp_is_stored_per_draw(fs_fit):
    stats = fs_fit.idata.sample_stats
    assert stats["lp"].dims == ("chain", "draw") and np.all(np.isfinite(stats["lp"].values))


@pytest.fixture(scope="module")
def hybrid_fit():
    from zoo.data.mil import ring_data

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return zoo.fit(zoo.model("kueck04.hybrid"), ring_data(n=40, seed=1), seed=3, num_chains=2, num_warmup=10,
                       num_samples=10, progress_bar=False)


@pytest.mark.extended  # one blocked Gibbs fit shared with the lp test: ~1.5 min of compilation on a loaded machine
def test_kueck04_posterior_predictive_simulates_the_programs_observations(hybrid_fit):
    """The blocked Gibbs fit carries ``posterior_predictive``: group labels simulated by the NumPyro program at
    each draw (numpyro.infer.Predictive), with the guessed fractions (hybrid: chi), which az.plot_ppc reads; on the
    ring data the replicated labels agree with the observed ones more often than not."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from zoo.core.idata import az

    fit = hybrid_fit
    fractions = fit.idata.posterior_predictive["fraction"].values
    assert fractions.shape == fit.idata.posterior_predictive["group_label"].shape
    assert np.all((fractions > 0) & (fractions < 1))
    replicated = fit.idata.posterior_predictive["group_label"]
    observed = fit.idata.observed_data["group_label"].values
    assert replicated.dims == ("chain", "draw", "group") and replicated.shape[2] == observed.shape[0]
    assert np.mean(replicated.values == observed) > 0.5
    az.plot_ppc(fit.idata)
    plt.close("all")


@pytest.mark.extended
def test_kueck04_lp_is_the_programs_log_density_with_tau_and_z_integrated_out(hybrid_fit):
    """lp minus the stored group log likelihood (z integrated out) = the NumPyro program's log density of (tau,
    gamma, delta2, beta) at any tau, less log p(tau | gamma) = Beta(a + k, b + M - k) (tau integrated out), less
    the N(0, 1) terms of the inactive coefficients the sampler keeps at 0 (integrated out)."""
    from numpyro import handlers

    from zoo.papers.kueck04 import program_kwargs

    fit = hybrid_fit
    post, lp = fit.idata.posterior, fit.idata.sample_stats["lp"].values
    loglik = fit.idata.log_likelihood["group_label"].values.sum(-1)
    kwargs = program_kwargs(fit.spec, fit.state["prepared"])
    prior_tau = fit.spec.priors["tau"]
    assert len({float(v) for v in lp.ravel()}) > 1
    for c, d in [(0, 0), (0, 9), (1, 4)]:
        gamma, beta = (fit.idata.unit_posterior[k].values[c, d] for k in ("gamma", "beta"))
        values = {"tau": 0.3, "gamma": gamma, "delta2": post["delta2"].values[c, d], "beta": beta,
                  "z": np.zeros(kwargs["psi"].shape[0])}
        trace = handlers.trace(handlers.substitute(handlers.seed(fit.spec.program, 0), data=values)).get_trace(
            **kwargs)
        prior = sum(float(np.sum(trace[s]["fn"].log_prob(trace[s]["value"]))) for s in ("tau", "gamma", "delta2",
                                                                                          "beta"))
        k, m = int(gamma.sum()), gamma.size
        tau_given_gamma = float(type(prior_tau)(prior_tau.concentration1 + k,
                                                prior_tau.concentration0 + m - k).log_prob(0.3))
        inactive = -0.5 * (m - k) * np.log(2 * np.pi)
        assert np.isclose(lp[c, d] - loglik[c, d], prior - tau_given_gamma - inactive, rtol=0, atol=1e-6), (c, d)


def test_gustafson07_full_imputes_mu_and_sigma_from_their_niw_conditional():
    """FULL's (mu_k, Sigma_k), drawn after the fact given a label draw, follow eq. 8-9: over many draws for one
    fixed labelling, their means match the normal-inverse-Wishart conditional's, mu_k -> total_k / (count_k + b)
    and Sigma_k -> S_k / (nu_k - p - 1), within Monte Carlo error."""
    from typing import NamedTuple

    import jax

    from zoo.inference.label_feature.collapsed_niw import ConceptPrior
    from zoo.papers.gustafson07_impute import impute_full

    class Problem(NamedTuple):
        X: jnp.ndarray
        allowed: jnp.ndarray
        concept_prior: ConceptPrior

    rng = np.random.default_rng(0)
    n, p, draws = 40, 2, 3000
    Y = (np.arange(n) % 2).astype(np.int64)
    X = rng.normal(size=(n, p)) + np.where(Y[:, None] == 1, 2.0, -1.0)
    cp = ConceptPrior()
    mu, Sigma = impute_full(Problem(jnp.asarray(X), jnp.ones((n, 2), bool), cp),
                            np.broadcast_to(Y, (1, draws, n)).copy(), jax.random.PRNGKey(0))
    assert mu.shape == (1, draws, 2, p) and Sigma.shape == (1, draws, 2, p, p)
    for k in (0, 1):
        xk = X[Y == k]
        count, total = len(xk), xk.sum(0)
        rho = cp.b + count
        S = cp.v_scale * p * np.eye(p) + xk.T @ xk - np.outer(total, total) / rho
        nu = p + cp.a_extra + count
        se_mu = mu[0, :, k].std(0) / np.sqrt(draws)
        assert np.all(np.abs(mu[0, :, k].mean(0) - total / rho) < 4 * se_mu), k
        se_sigma = Sigma[0, :, k].std(0) / np.sqrt(draws)
        assert np.all(np.abs(Sigma[0, :, k].mean(0) - S / (nu - p - 1)) < 4 * se_sigma + 1e-12), k


def test_gustafson07_fs_posterior_predictive_replicates_the_features(fs_fit):
    """FS's posterior_predictive X: features simulated at each draw with the integrated-out (mu_k, Sigma_k) drawn
    from their conditionals, in the data's units: per feature, their mean and sd match the observed ones."""
    replicated = fs_fit.idata.posterior_predictive["X"]
    observed = fs_fit.data.X
    assert replicated.dims == ("chain", "draw", "region", "feature") and replicated.shape[2:] == observed.shape
    sd = observed.std(0)
    assert np.all(np.abs(replicated.values.mean((0, 1, 2)) - observed.mean(0)) < 0.2 * sd)
    assert np.all(np.abs(replicated.values.std((0, 1, 2)) / sd - 1) < 0.2)
