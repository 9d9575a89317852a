"""Issue 18.2-18.3 beyond the papers' own tests: what a variational, MAP or relabelled fit tells ArviZ.

- generic SVI: draws of the fitted guide in ``posterior``, marked variational; az.loo reads chains x draws;
  the summary and diagnose say that r-hat compares restarts;
- MAP: az.loo refuses (no log_likelihood group: the point log likelihood is set aside);
- zoo.core.relabel: label switching between chains is undone, and diagnostics on the relabelled draws pass.
(The papers' variational methods: tests/papers/test_yakhnenko_model.py and tests/papers/test_ross03_mcvq.py.)"""
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import zoo
from zoo.core.convergence import diagnose
from zoo.core.relabel import permute_labels, relabel_draws
from zoo.core.idata import to_inference_data


def _program(y=None):
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    with numpyro.plate("data", 20):
        numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)


Y = np.random.default_rng(0).normal(1.0, 1.0, size=20)


def test_svi_posterior_is_draws_of_q_and_says_so():
    import arviz as az

    fit = zoo.fit(_program, {"y": Y}, method="svi", num_steps=1000, learning_rate=0.05, num_samples=50, num_chains=2,
                  progress_bar=False)
    assert fit.inference == "variational" and fit.idata.posterior.attrs["zoo_inference"] == "variational"
    assert fit.idata.posterior["mu"].shape == (2, 50) and fit.idata.posterior["mu"].values.std() > 0
    loo = az.loo(fit.idata)
    assert loo.n_samples == 100 and np.isfinite(loo.elpd_loo)
    summary = fit.summary()
    assert "r_hat_restarts" in summary.columns and summary.loc["mu", "q"] == "draws of q"
    table = fit.diagnose()
    assert "variational" in table.loc["mu", "verdict"] and table.attrs["inference"] == "variational"


def test_map_is_refused_by_az_loo():
    import arviz as az

    fit = zoo.fit(_program, {"y": Y}, method="map", num_steps=200, num_chains=2, progress_bar=False)
    assert fit.inference == "point estimate" and "log_likelihood" not in fit.idata.groups()
    with pytest.raises(TypeError):          # ArviZ: "log likelihood not found"
        az.loo(fit.idata)


def test_label_switching_between_chains_is_undone():
    """Two chains of a 3-component mixture-like site, the second with its components permuted: raw r-hat flags
    the switch, the relabelled draws agree, and a site whose values are labels follows the permutation."""
    rng = np.random.default_rng(1)
    centers = np.array([-4.0, 0.0, 4.0])
    draws = centers + 0.1 * rng.normal(size=(2, 200, 3))
    draws[1] = draws[1][:, [2, 0, 1]]
    labels = np.tile(np.array([0, 1, 2]), (2, 200, 1))                 # which component each of 3 items is in
    labels[1] = np.array([1, 2, 0])                                    # the same items under chain 1's labels
    aligned, perms = relabel_draws({"mu": draws}, {"mu": 0})
    np.testing.assert_allclose(np.sort(aligned["mu"].mean(axis=(0, 1))), centers, atol=0.05)
    assert np.abs(aligned["mu"][0].mean(0) - aligned["mu"][1].mean(0)).max() < 0.05
    mapped = permute_labels(labels, perms)
    assert np.array_equal(mapped[0], mapped[1])                        # the same assignment in both chains
    raw = diagnose(to_inference_data({"mu": draws}), ["mu"])
    assert raw.loc["mu", "r_hat"] > 1.5
    idata = to_inference_data({"mu": draws, "mu_relabelled": aligned["mu"]})
    fixed = diagnose(idata, ["mu"])                                     # diagnosed on the relabelled draws
    assert fixed.loc["mu", "r_hat"] < 1.01 and fixed.loc["mu", "verdict"] == "ok"


def test_states_within_each_group_are_aligned_group_by_group():
    """MCVQ-like draws: 2 groups (VQs) of 3 states, each draw's states permuted at random within each group; the
    nested relabelling recovers one labelling per group, and a label site (which state each case took in each
    group) follows each group's permutation."""
    from zoo.core.relabel import relabel_within_groups
    rng = np.random.default_rng(2)
    centers = np.array([[-5.0, 0.0, 5.0], [10.0, 20.0, 30.0]])            # (group, state)
    n_chain, n_draw, n_dim = 2, 50, 4
    mu = np.empty((n_chain, n_draw, n_dim, 2, 3))                          # (chain, draw, dim, group, state)
    s = np.empty((n_chain, n_draw, 6, 2), dtype=np.int64)                  # (chain, draw, case, group)
    truth_s = np.array([[0, 2], [1, 1], [2, 0], [0, 0], [1, 2], [2, 1]])  # true state of each case in each group
    for c in range(n_chain):
        for d in range(n_draw):
            for g in range(2):
                perm = rng.permutation(3)                                  # raw state perm[k] holds true state k
                mu[c, d, :, g, perm] = (centers[g] + 0.1 * rng.normal(size=(n_dim, 3))).T
                s[c, d, :, g] = perm[truth_s[:, g]]
    out = relabel_within_groups({"mu": mu, "s": s}, {"mu": 1}, {"mu": 2}, {"s": 1})
    for g in range(2):
        means = out["mu"][:, :, :, g, :].mean(axis=(0, 1, 2))
        assert np.allclose(np.sort(means), centers[g], atol=0.1)
        assert out["mu"][:, :, :, g, :].std(axis=(0, 1)).max() < 0.5       # one labelling in every draw
    # every draw maps each case to the same state as the first draw does
    assert np.all(out["s"] == out["s"][:1, :1])
