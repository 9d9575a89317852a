"""Execute notebooks/kueck04.ipynb in its fast setting (ZOO_NOTEBOOK_FAST=1)."""

import pytest

# extended: a user-facing promise that takes long; CI runs it after the default suite (.ci/run)
pytestmark = pytest.mark.extended


def test_kueck04_notebook_runs(run_notebook):
    run_notebook("kueck04")
