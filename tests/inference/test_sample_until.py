"""Issue 29.2: ``zoo.inference.driver.sample_until`` (``num_samples="auto"``) runs compiled chunks until the caller's
check passes, or stops at its time budget or its most sweeps, never hanging; and through ``zoo.fit`` with
kueck04's sampler, under a watchdog subprocess."""
import subprocess
import sys
import textwrap
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from zoo.inference.driver import Kernel, sample_chunked, sample_until


class ARConfig(NamedTuple):
    rho: float = 0.9


def build_ar_kernel(problem, config):
    """A Gaussian AR(1) chain x' = rho x + sqrt(1 - rho^2) e (stationary N(0, 1))."""
    def init(key, num_warmup):
        return jnp.asarray(5.0), key

    def step(key, x):
        e = jax.random.normal(jax.random.split(key, 2)[1])
        return config.rho * x + jnp.sqrt(1 - config.rho ** 2) * e, ()
    return Kernel(init, step)


def observe_x(state, info):
    return {"x": state}


KEYS = jax.random.split(jax.random.PRNGKey(0), 3)


def test_stops_when_the_check_passes_and_continues_the_same_chains():
    calls = []

    def enough(draws):
        calls.append(draws["x"].shape)
        return draws["x"].shape[1] >= 300
    run = sample_until(build_ar_kernel, ARConfig(), (), KEYS, num_warmup=20, converged=enough, time_budget=600.0,
                       max_sampling_sweeps=10_000, check_every=100, observe=observe_x)
    assert run.converged and run.stopped_by == "converged" and run.sampling_sweeps == 300
    assert calls == [(3, 100), (3, 200), (3, 300)]
    # the draws are those of one run of the same length: the chunks continue the chains
    same = sample_chunked(build_ar_kernel, ARConfig(), (), KEYS, num_warmup=20, num_sampling_sweeps=300,
                          observe=observe_x)
    np.testing.assert_allclose(run.result.draws["x"], same.draws["x"], rtol=1e-6)


def test_stops_at_the_time_budget_and_at_the_most_sweeps():
    ticks = iter(range(1000))
    run = sample_until(build_ar_kernel, ARConfig(), (), KEYS, num_warmup=0, converged=lambda d: False,
                       time_budget=2.5, max_sampling_sweeps=10_000, check_every=50, observe=observe_x,
                       clock=lambda: float(next(ticks)))     # one second per check
    assert not run.converged and run.stopped_by == "time budget" and run.sampling_sweeps == 150
    run = sample_until(build_ar_kernel, ARConfig(), (), KEYS, num_warmup=0, converged=lambda d: False,
                       time_budget=1e9, max_sampling_sweeps=120, check_every=50, observe=observe_x)
    assert run.stopped_by == "max sweeps" and run.result.draws["x"].shape == (3, 120)
    with pytest.raises(ValueError, match="time_budget"):
        sample_until(build_ar_kernel, ARConfig(), (), KEYS, num_warmup=0, converged=lambda d: True, time_budget=0,
                     max_sampling_sweeps=10, check_every=5, observe=observe_x)


def test_short_of_names_the_sites_below_the_target():
    from zoo.core.convergence import short_of
    rng = np.random.default_rng(0)
    good = rng.normal(size=(4, 500))
    sticky = np.cumsum(rng.normal(size=(4, 500)), axis=1)        # random walks: tiny ESS, chains apart
    short = short_of({"good": good, "sticky": sticky, "fixed": np.ones((4, 500))}, target_ess=400)
    assert set(short) == {"sticky"} and "ESS" in short["sticky"] and "r-hat" in short["sticky"]


def test_auto_settings_refuse_bad_fields():
    from zoo.core.convergence import auto_settings
    assert auto_settings(1000) is None
    assert auto_settings("auto").target_ess == 400
    with pytest.raises(ValueError, match="target_ess"):
        auto_settings(1000, target_ess=100)
    with pytest.raises(ValueError, match="time_budget"):
        auto_settings("auto", time_budget=-1)


_SCRIPT = textwrap.dedent("""
    import warnings
    import zoo
    from zoo.core.convergence import ConvergenceWarning
    from zoo.data import Bags
    from zoo.data.mil import ring_data
    d = ring_data(n=30, seed=5)
    data = Bags(d.X, d.bag_ids, group_labels=d.group_labels)
    spec = zoo.model("kueck04.constraint", kernel="gaussian", width=1.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = zoo.fit(spec, data, seed=0, num_chains=2, num_warmup=100, num_samples="auto", target_ess=40,
                      time_budget=120, progress_bar=False)
    print("REACHED", fit.idata.posterior.sizes["draw"], fit.idata.posterior.attrs["zoo_auto"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = zoo.fit(spec, data, seed=0, num_chains=2, num_warmup=10, num_samples="auto", target_ess=1e7,
                      time_budget=0.5, progress_bar=False)
    short = [w.message for w in caught if isinstance(w.message, ConvergenceWarning)]
    print("SHORT", fit.idata.posterior.sizes["draw"], sorted(short[0].sites), short[0])
""")


@pytest.mark.extended
def test_kueck04_auto_reaches_its_target_or_stops_at_its_budget_under_a_watchdog():
    out = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=600,
                         env={**__import__("os").environ, "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr[-3000:]
    reached = next(line for line in out.stdout.splitlines() if line.startswith("REACHED"))
    assert "reached ESS 40" in reached and int(reached.split()[1]) % 250 == 0
    short = next(line for line in out.stdout.splitlines() if line.startswith("SHORT"))
    # whole checks' worth of draws (250 sweeps each), stopping at the first check past the budget: how many fit in
    # 0.5 s depends on the machine (once compiled, a check of this small problem can take well under 0.5 s)
    assert int(short.split()[1]) % 250 == 0 and int(short.split()[1]) >= 250
    assert "'delta2'" in short or "'n_active'" in short
    assert "stopped at the time budget (0.5 s)" in short
