"""The Yakhnenko & Honavar notebook executes end to end (fast setting: data simulated from the program)."""

import pytest

# extended: a user-facing promise that takes long; CI runs it after the default suite (.ci/run)
pytestmark = pytest.mark.extended


def test_notebook_runs(run_notebook):
    nb = run_notebook("yakhnenko")
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "final ELBO" in text and "factor" in text
