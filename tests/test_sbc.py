"""SBC machinery (zoo.sbc): an exact posterior sampler passes, deliberately miscalibrated ones fail; ranks with
ties; the uniformity tests' size. The SBC of the zoo's models runs in the slow suite and in ``zoo reproduce sbc``."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import zoo  # noqa: F401  (float64)
from zoo.sbc import chi2_test, ecdf_test, plot_ecdf_difference, ranks, run_sbc, sbc_table

N_TRIALS, A, B = 10, 2.0, 2.0


def _simulate(key, n_sims):
    """theta ~ Beta(A, B), k ~ Binomial(N_TRIALS, theta)."""
    k1, k2 = jax.random.split(key)
    theta = jax.random.beta(k1, A, B, (n_sims,))
    k = jax.random.binomial(k2, N_TRIALS, theta)
    return {"theta": theta}, {"k": k}


def _posterior(extra_a=0.0, concentration=1.0, n_draws=99):
    """Beta(A + k, B + n - k) draws (exact); extra_a > 0 shifts the posterior up, concentration > 1 makes it too
    narrow (the data counted ``concentration`` times: an over-confident approximation)."""
    def posterior(key, data):
        k = data["k"]
        a = A + concentration * k + extra_a
        b = B + concentration * (N_TRIALS - k)
        return {"theta": jax.random.beta(key, a[:, None], b[:, None], (k.shape[0], n_draws))}
    return posterior


def _quantities(values):
    theta = np.asarray(values["theta"])
    return {"theta": theta, "theta > 0.5": (theta > 0.5).astype(float)}   # the second one ties: discrete


@pytest.mark.parametrize("extra_a, concentration, calibrated", [(0.0, 1.0, True), (1.5, 1.0, False),
                                                                (0.0, 3.0, False)])
def test_sbc_passes_an_exact_sampler_and_catches_miscalibrated_ones(extra_a, concentration, calibrated, tmp_path):
    result = run_sbc(_simulate, _posterior(extra_a, concentration), _quantities, n_sims=400, seed=3,
                     model_id="beta-binomial", method="conjugate")
    assert set(result.ranks) == {"theta", "theta > 0.5"}
    assert all(r.min() >= 0 and r.max() <= 99 for r in result.ranks.values())
    assert result.passed() == calibrated
    if not calibrated:
        assert min(result.p_ecdf.values()) < 1e-3
    fig = plot_ecdf_difference(result, tmp_path / "sbc.png")
    assert (tmp_path / "sbc.png").stat().st_size > 0 and fig is not None
    row = sbc_table({"beta-binomial": result, "other": "needs data"})
    assert row[0][-1].startswith("pass" if calibrated else "FAIL") and row[1][-1] == "not run: needs data"


def test_ranks_break_ties_at_random_and_stay_uniform():
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 2, 4000).astype(float)          # a binary quantity: the posterior = the prior
    draws = rng.integers(0, 2, (4000, 19)).astype(float)
    r = ranks(truth, draws, rng)
    assert r.min() == 0 and r.max() == 19
    assert chi2_test(r, 19, n_bins=10) > 0.001 and ecdf_test(r, 19)[1] > 0.001
    # without tie-breaking the ranks of a binary quantity would sit at two places: the tests must reject that
    r_bad = (draws < truth[:, None]).sum(1)
    assert ecdf_test(r_bad, 19)[1] < 1e-3
    with pytest.raises(ValueError, match="truth/draws"):
        ranks(truth, draws[:10], rng)
    with pytest.raises(ValueError, match="r:"):
        ecdf_test(np.array([0, 30]), 19)


def test_ecdf_test_has_about_its_nominal_size():
    rng = np.random.default_rng(1)
    p = [ecdf_test(rng.integers(0, 100, 200), 99, n_sim=500, seed=i)[1] for i in range(60)]
    assert 0.0 <= np.mean(np.array(p) < 0.1) <= 0.25      # 10 % nominal; binomial(60, 0.1) sd ~ 4 %


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["supervised", "constraint", "measurement", "hybrid"])
def test_kueck04_blocked_gibbs_is_calibrated(variant):
    """The full SBC of kueck04's default sampler on the 6-instance problem (zoo.experiments.sbc)."""
    from zoo.experiments.sbc import kueck04_sbc
    result = kueck04_sbc(variant, n_sims=300)
    assert result.passed(), result.p_ecdf


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["full", "fs", "cvfs"])
def test_gustafson07_collapsed_gibbs_is_calibrated(variant):
    from zoo.experiments.sbc import gustafson07_sbc
    result = gustafson07_sbc(variant, n_sims=100)
    assert result.passed(), result.p_ecdf
