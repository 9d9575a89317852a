"""The Carbonetto 2003 notebook executes end to end (fast setting)."""


def test_notebook_runs(run_notebook):
    run_notebook("carbonetto03")
