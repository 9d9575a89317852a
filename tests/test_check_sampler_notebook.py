"""Execute notebooks/check_sampler.ipynb in its fast setting (ZOO_NOTEBOOK_FAST=1)."""


import pytest


@pytest.mark.slow   # about 3 minutes on one core (NumPyro compiles DiscreteHMCGibbs and MixedHMC twice per budget)
def test_check_sampler_notebook_runs(run_notebook):
    run_notebook("check_sampler")
