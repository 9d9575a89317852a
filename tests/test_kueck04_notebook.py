"""Execute notebooks/kueck04.ipynb in its fast setting (ZOO_NOTEBOOK_FAST=1)."""
import pathlib

import nbformat
from nbclient import NotebookClient

NOTEBOOK = pathlib.Path(__file__).resolve().parents[1] / "notebooks" / "kueck04.ipynb"


def test_kueck04_notebook_runs(monkeypatch):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    monkeypatch.setenv("ZOO_NOTEBOOK_FAST", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
