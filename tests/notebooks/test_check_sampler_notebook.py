"""Execute notebooks/check_sampler.ipynb in its fast setting (ZOO_NOTEBOOK_FAST=1)."""

import pytest

# extended: a user-facing promise that takes long; CI runs it after the default suite (.ci/run)
pytestmark = pytest.mark.extended


@pytest.mark.slow   # 11-15 minutes on a shared 2-core machine (NumPyro's DiscreteHMCGibbs takes most of it)
def test_check_sampler_notebook_runs(run_notebook):
    run_notebook("check_sampler")
