"""The Carbonetto 2003 notebook executes end to end (fast setting)."""

import pytest

# extended: a user-facing promise that takes long; CI runs it after the default suite (.ci/run)
pytestmark = pytest.mark.extended


def test_notebook_runs(run_notebook):
    run_notebook("carbonetto03")
