"""Kernel rows on demand (``zoo.inference.mil.rows``, issue 21.4): the sampler without a stored N x M matrix gives
the draws of the stored-matrix path for the same seed (to rounding)."""
import jax
import numpy as np
import pytest

import zoo
from zoo.data import Bags
from zoo.data.mil import ring_data
from zoo.inference.driver import FAST_COMPILE_OPTIONS, sample_chunked
from zoo.inference.mil.gibbs import build_mil_kernel, mil_draw
from zoo.inference.mil.rows import ON_DEMAND_ABOVE, rows_on_demand
from zoo.papers import kueck04 as paper

pytestmark = [pytest.mark.filterwarnings("ignore:convergence"), pytest.mark.filterwarnings("ignore:kueck04")]


def _data():
    d = ring_data(n=80, seed=2)
    return Bags(d.X, d.bag_ids, group_labels=d.group_labels)


def _draws(spec, data, rows):
    prep = paper.prepare(spec, data, rows=rows)
    problem, config = paper.mil_problem(spec, prep), paper.mil_config(spec, prep, "exact", False)
    assert (problem.psi is None) == (rows == "on_demand")
    out = sample_chunked(build_mil_kernel, config, problem, jax.random.split(jax.random.PRNGKey(4), 2),
                         num_warmup=5, num_sampling_sweeps=25, observe=mil_draw, chain_method="sequential",
                         compiler_options=FAST_COMPILE_OPTIONS)
    return prep, out.draws[0]


@pytest.mark.parametrize("basis", [30, pytest.param(None, marks=pytest.mark.slow)])
def test_rows_on_demand_give_the_stored_paths_draws(basis):
    spec = zoo.model("kueck04.constraint", basis=basis, max_active=20)
    stored_prep, stored = _draws(spec, _data(), "stored")
    demand_prep, demand = _draws(spec, _data(), "on_demand")
    np.testing.assert_allclose(demand_prep.gram, stored_prep.gram, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(demand["gamma"], stored["gamma"])
    # rounding of the kernel rows, amplified by the Gram block's conditioning in beta | Z (|beta| up to ~1e3)
    scale = np.max(np.abs(stored["beta"]))
    np.testing.assert_allclose(demand["beta"], stored["beta"], rtol=1e-6, atol=1e-8 * scale)
    np.testing.assert_allclose(demand["delta2"], stored["delta2"], rtol=1e-7)
    assert np.any(np.diff(stored["n_active"][0]) != 0)       # the chain did select kernels


def test_row_rule_and_bad_requests():
    assert not rows_on_demand(60, 60, False)
    assert rows_on_demand(ON_DEMAND_ABOVE // 500 + 1, 500, False)
    assert not rows_on_demand(10 ** 6, 500, True)            # a column of ones has no centre
    data = _data()
    with pytest.raises(ValueError, match="rows"):
        paper.prepare(zoo.model("kueck04.constraint"), data, rows="lazy")
    with pytest.raises(ValueError, match="intercept"):
        paper.prepare(zoo.model("kueck04.constraint", intercept=True), data, rows="on_demand")
    prep = paper.prepare(zoo.model("kueck04.constraint"), data, rows="on_demand")
    with pytest.raises(ValueError, match="stored"):
        paper.program_kwargs(zoo.model("kueck04.constraint"), prep)
