"""Execute notebooks/ross03.ipynb in its fast setting (ZOO_NOTEBOOK_FAST=1)."""
import os
import pathlib

import pytest

NOTEBOOK = pathlib.Path(__file__).resolve().parents[1] / "notebooks" / "ross03.ipynb"


def test_notebook_runs_fast():
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    env_before = os.environ.get("ZOO_NOTEBOOK_FAST")
    os.environ["ZOO_NOTEBOOK_FAST"] = "1"
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("MPLBACKEND", "Agg")
    try:
        client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                         resources={"metadata": {"path": str(NOTEBOOK.parent)}})
        client.execute()
    finally:
        if env_before is None:
            os.environ.pop("ZOO_NOTEBOOK_FAST", None)
        else:
            os.environ["ZOO_NOTEBOOK_FAST"] = env_before
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
