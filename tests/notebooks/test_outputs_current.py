"""The stored outputs of every notebook come from its current code: ``scripts/execute_notebooks.py`` stamps each
notebook with the digest of its code cells and the zoo version; a notebook edited (or a zoo released) after its
outputs were stored fails here until it is re-executed. Stored outputs hold no warning and no error."""
import importlib.util
import pathlib

import nbformat
import pytest

import zoo

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
_spec = importlib.util.spec_from_file_location("execute_notebooks", ROOT / "scripts" / "execute_notebooks.py")
execute_notebooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(execute_notebooks)

#: notebooks whose stored outputs predate the stamp (not yet re-executed from the current code). strict: once a
#: notebook is re-executed its test passes, which fails here until its name is removed from this set.
NOT_YET_REEXECUTED: set = set()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_stored_outputs_come_from_the_current_code(path, request):
    if path.stem in NOT_YET_REEXECUTED:
        request.applymarker(pytest.mark.xfail(strict=True, reason="stored outputs older than the code: re-run "
                                                                  "scripts/execute_notebooks.py"))
    nb = nbformat.read(path, as_version=4)
    stamp = nb.metadata.get("zoo")
    assert stamp, f"{path.name}: no stamp; its outputs were stored by an older execute_notebooks.py"
    assert stamp["code_sha256"] == execute_notebooks.code_digest(nb), f"{path.name}: code changed since its run"
    assert stamp["zoo_version"] == zoo.__version__, f"{path.name}: stored with zoo {stamp['zoo_version']}"
    assert not execute_notebooks.warnings_in(nb), execute_notebooks.warnings_in(nb)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors


def test_the_stamp_changes_with_the_code():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    execute_notebooks.stamp(nb, "full")
    assert nb.metadata["zoo"]["code_sha256"] == execute_notebooks.code_digest(nb)
    nb.cells[0].source = "x = 2"
    assert nb.metadata["zoo"]["code_sha256"] != execute_notebooks.code_digest(nb)
    nb.cells.append(nbformat.v4.new_code_cell("y", outputs=[nbformat.v4.new_output(
        "stream", name="stderr", text="<cell>:1: UserWarning: careful\n")]))
    assert execute_notebooks.warnings_in(nb) == ["<cell>:1: UserWarning: careful"]
