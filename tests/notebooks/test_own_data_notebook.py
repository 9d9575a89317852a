"""Execute notebooks/own_data.ipynb in its fast setting (ZOO_NOTEBOOK_FAST=1): a CSV of bags and a folder of
captioned photos to fitted, diagnosed, saved and reloaded models (issue 31)."""

import pytest

# extended: a user-facing promise that takes long; CI runs it after the default suite (.ci/run)
pytestmark = pytest.mark.extended


def test_own_data_notebook_runs(run_notebook):
    nb = run_notebook("own_data")
    text = "\n".join(o.get("text", "") for cell in nb.cells if cell.cell_type == "code"
                     for o in cell.get("outputs", []) if o.get("output_type") == "stream")
    assert text.count("reloaded predicts identically: True") == 2
    assert "refused: priors['tau']" in text
