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
