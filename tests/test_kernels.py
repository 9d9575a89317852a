"""zoo.kernel: the custom samplers as numpyro MCMCKernels that users run and convert with az.from_numpyro."""
import arviz as az
import jax
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
    mcmc = _run(kernel(zoo.model("kueck04.hybrid"), ring_data(n=40)))
    idata = az.from_numpyro(mcmc)
    assert {"gamma", "beta", "delta2", "n_active"} <= set(idata.posterior.data_vars)
    assert idata.posterior["beta"].shape[:2] == (1, 5)
    assert idata.posterior["gamma"].dims == ("chain", "draw", "basis")     # named from the program's plate


@pytest.mark.slow   # compiling the sweep under MCMC: about 40 s on one core
def test_gustafson07_fs_kernel_under_numpyro_and_arviz():
    regions = zoo.load_dataset("gustafson07_sec6")
    mcmc = _run(kernel(zoo.model("gustafson07.fs"), regions))
    idata = az.from_numpyro(mcmc)
    assert {"Y", "M", "n_relevant"} <= set(idata.posterior.data_vars)
    assert idata.posterior["Y"].shape == (1, 5, regions.X.shape[0])


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
