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
    mcmc = MCMC(kernel(zoo.model("kueck04.hybrid"), ring_data(n=40)), num_warmup=5, num_samples=5,
                progress_bar=False)
    mcmc.run(jax.random.PRNGKey(0), extra_fields=("n_active",))     # an info field by its plain name
    assert mcmc.get_extra_fields()["n_active"].shape == (5,)
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
    assert idata.posterior["M"].shape == (1, 5, regions.X.shape[1])      # zoo.fit's shape: (p,) in FS


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
