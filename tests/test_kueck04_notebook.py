"""Execute notebooks/kueck04.ipynb in its fast setting (ZOO_NOTEBOOK_FAST=1)."""


def test_kueck04_notebook_runs(run_notebook):
    run_notebook("kueck04")
