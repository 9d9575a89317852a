"""zoo.kernel: the custom samplers as numpyro MCMCKernels that users run and convert with az.from_numpyro."""
from typing import NamedTuple

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro.infer import MCMC

import zoo
from zoo.data.mil import ring_data
from zoo.kernels import kernel


def _run(k, **mcmc_options):
    mcmc = MCMC(k, num_warmup=5, num_samples=5, progress_bar=False, **mcmc_options)
    mcmc.run(jax.random.PRNGKey(0))
    return mcmc


@pytest.mark.slow   # compiling the sweep under MCMC: about 40 s on one core
def test_kueck04_hybrid_kernel_under_numpyro_and_arviz():
    mcmc = MCMC(kernel(zoo.model("kueck04.hybrid"), ring_data(n=40)), num_warmup=5, num_samples=5,
                progress_bar=False)
    # an info field by its plain name
    mcmc.run(jax.random.PRNGKey(0), extra_fields=("n_active", "log_likelihood"))
    assert mcmc.get_extra_fields()["n_active"].shape == (5,)
    idata = az.from_numpyro(mcmc)
    assert {"gamma", "beta", "delta2", "n_active"} <= set(idata.posterior.data_vars)
    assert idata.posterior["beta"].shape[:2] == (1, 5)
    assert idata.posterior["gamma"].dims == ("chain", "draw", "basis")     # named from the program's plate
    # lp per step (issue 30): zoo.fit's formula (zoo.papers.kueck04_lp, NumPy) at the same draws
    from zoo.papers.kueck04_lp import blocked_gibbs_log_joint
    samples = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}
    loglik = np.asarray(mcmc.get_extra_fields(group_by_chain=True)["log_likelihood"])
    want = blocked_gibbs_log_joint(zoo.model("kueck04.hybrid"), np.asarray(mcmc.sampler.problem.gram), samples,
                                   loglik)
    np.testing.assert_allclose(idata.sample_stats["lp"].values, want, rtol=1e-8)


@pytest.mark.slow   # compiling the sweep under MCMC: about 40 s on one core
def test_gustafson07_fs_kernel_under_numpyro_and_arviz():
    regions = zoo.load_dataset("gustafson07_sec6")
    mcmc = _run(kernel(zoo.model("gustafson07.fs"), regions))
    idata = az.from_numpyro(mcmc)
    assert {"Y", "M", "n_relevant"} <= set(idata.posterior.data_vars)
    assert idata.posterior["Y"].shape == (1, 5, regions.X.shape[0])
    assert idata.posterior["M"].shape == (1, 5, regions.X.shape[1])      # zoo.fit's shape: (p,) in FS
    # lp per step (issue 30): zoo.fit's compiled pass over stored draws (zoo.papers.gustafson07_lp) agrees
    from zoo.papers.gustafson07_lp import collapsed_log_joint
    k, draws = mcmc.sampler, {name: idata.posterior[name].values for name in ("Y", "M")}
    want = collapsed_log_joint(k.program, "fs", k.problem.concept_prior, k.problem.delta0, k.problem.Omega0, draws)
    np.testing.assert_allclose(idata.sample_stats["lp"].values, want, rtol=1e-8)


class _WalkState(NamedTuple):
    x: jnp.ndarray


def _random_walk(problem, config):
    """A Gaussian random-walk kernel on x (2,) (not a sampler of anything: a kernel whose draws are known)."""
    from zoo.inference.driver import Kernel

    def init(key, num_warmup):
        return _WalkState(jnp.zeros(2)), key

    def step(key, state):
        return _WalkState(state.x + config * jax.random.normal(key, (2,))), jnp.zeros(())
    return Kernel(init, step)


def test_program_kernel_collects_lp_without_moving_the_chain():
    """A ProgramKernel given ``log_joint`` collects minus it as ``potential_energy`` by default, so that
    ``az.from_numpyro`` has ``lp`` in sample_stats; the draws are those of the same kernel without it."""
    from zoo.inference.driver import ProgramKernel

    def observe(state, info):
        return {"x": state.x}

    def log_joint(problem, draw, info):
        return -0.5 * jnp.sum(draw["x"] ** 2) * problem

    def run(**extra):
        mcmc = MCMC(ProgramKernel(_random_walk, 0.5, 2.0, observe, lambda: None, **extra), num_warmup=3,
                    num_samples=20, num_chains=2, chain_method="vectorized", progress_bar=False)
        mcmc.run(jax.random.PRNGKey(1))
        return mcmc
    with_lp, without = run(log_joint=log_joint), run()
    x = np.asarray(with_lp.get_samples(group_by_chain=True)["x"])
    np.testing.assert_array_equal(x, np.asarray(without.get_samples(group_by_chain=True)["x"]))
    assert x.shape == (2, 20, 2) and np.ptp(x) > 0
    stats = az.from_numpyro(with_lp).sample_stats
    np.testing.assert_allclose(stats["lp"].values, -np.sum(x ** 2, -1), rtol=1e-12)
    assert "potential_energy" not in without.get_extra_fields()


def test_info_fields_by_plain_name():
    """MCMC's extra_fields look a zoo kernel's step information up by its plain name (and by "info.<name>")."""
    from collections import namedtuple
    from operator import attrgetter

    from zoo.inference.driver import KernelMCMCState
    Info = namedtuple("Info", ["n_active", "accept"])
    state = KernelMCMCState(state=None, key=None, info=Info(3, 0.5), draw={})
    assert attrgetter("n_active")(state) == 3 and attrgetter("info.accept")(state) == 0.5
    with pytest.raises(AttributeError, match="n_active, accept"):
        attrgetter("bogus")(state)


def test_not_mcmc_is_refused():
    spec = zoo.model("carbonetto03.shrinkage_mixture", n_components=2)
    X = zoo.load_dataset("carbonetto03_sec2")
    with pytest.raises(ValueError, match="not MCMC"):
        kernel(spec, X, method="map_em")
    with pytest.raises(ValueError, match="not MCMC"):
        kernel(spec, X, method="svi")


def test_bad_input():
    with pytest.raises(ValueError, match="spec"):
        kernel(lambda: None, {})
    with pytest.raises(ValueError, match="unknown option"):
        kernel(zoo.model("kueck04.hybrid"), ring_data(n=40), bogus=1)
    with pytest.raises(ValueError, match="method"):
        kernel(zoo.model("kueck04.hybrid"), ring_data(n=40), method="nope")


def test_bad_sampler_options():
    bags = ring_data(n=40)
    with pytest.raises(ValueError, match="laplace_tries"):
        kernel(zoo.model("kueck04.hybrid"), bags, laplace_tries=-1)
    with pytest.raises(ValueError, match="beta_move"):
        kernel(zoo.model("kueck04.hybrid"), bags, beta_move="nope")
    with pytest.raises(ValueError, match="unknown option"):
        kernel(zoo.model("kueck04.hybrid"), bags, method="blocked_gibbs_mh", beta_move="laplace")
