import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import matplotlib  # noqa: E402

matplotlib.use("Agg")

import pathlib  # noqa: E402

import pytest  # noqa: E402

NOTEBOOKS = pathlib.Path(__file__).resolve().parents[1] / "notebooks"


@pytest.fixture
def run_notebook(monkeypatch):
    """Execute ``notebooks/<name>.ipynb`` in its fast setting; returns the executed notebook (no error outputs)."""
    import nbformat
    from nbclient import NotebookClient

    def run(name: str):
        monkeypatch.setenv("ZOO_NOTEBOOK_FAST", "1")
        monkeypatch.setenv("MPLBACKEND", "Agg")
        monkeypatch.setenv("OMP_NUM_THREADS", "1")
        path = NOTEBOOKS / f"{name}.ipynb"
        nb = nbformat.read(path, as_version=4)
        NotebookClient(nb, timeout=600, kernel_name="python3",
                       resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
        errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                  if o.output_type == "error"]
        assert not errors, errors
        return nb

    return run
