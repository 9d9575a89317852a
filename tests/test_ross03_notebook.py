"""Execute notebooks/ross03.ipynb in its fast setting (ZOO_NOTEBOOK_FAST=1)."""


def test_notebook_runs_fast(run_notebook):
    run_notebook("ross03")
