"""Execute notebooks/ross03.ipynb in its fast setting (ZOO_NOTEBOOK_FAST=1)."""

import pytest

# extended: a user-facing promise that takes long; CI runs it after the default suite (.ci/run)
pytestmark = pytest.mark.extended


def test_notebook_runs_fast(run_notebook):
    run_notebook("ross03")
