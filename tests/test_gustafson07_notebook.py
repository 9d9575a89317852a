"""The Gustafson 2007 notebook executes end to end (fast setting)."""


def test_notebook_runs(run_notebook):
    run_notebook("gustafson07")
