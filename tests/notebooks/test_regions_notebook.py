"""The notebook notebooks/annotated_images.ipynb runs from top to bottom (fast setting)."""

import pytest

# extended: a user-facing promise that takes long; CI runs it after the default suite (.ci/run)
pytestmark = pytest.mark.extended


def test_annotated_images_notebook_executes(run_notebook):
    nb = run_notebook("annotated_images")
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    # the notebook switches to the inline backend itself (%matplotlib inline): its figures are PNG outputs
    assert any(o.get("output_type") == "display_data" and "image/png" in o.get("data", {}) for o in outputs)
