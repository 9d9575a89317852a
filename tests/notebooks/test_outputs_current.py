"""The stored outputs of every notebook come from its current code: ``scripts/execute_notebooks.py`` stamps each
notebook with the digest of its code cells, the zoo version and a digest of the code (docstrings and comments
left out) of every zoo module its kernel imported; a notebook edited, a zoo released, or a zoo module it ran
changed after its outputs were stored fails here until it is re-executed (``scripts/execute_notebooks.py
--stale`` lists and re-runs those). Stored outputs hold no warning and no error."""
import importlib.util
import pathlib

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
_spec = importlib.util.spec_from_file_location("execute_notebooks", ROOT / "scripts" / "execute_notebooks.py")
execute_notebooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(execute_notebooks)

#: notebooks whose stored outputs predate the stamp (not yet re-executed from the current code). strict: once a
#: notebook is re-executed its test passes, which fails here until its name is removed from this set.
#: check_sampler and kueck04 (about 20 minutes each on a shared machine) were re-executed at 13:25-14:06 and made
#: stale by the merges of issues 29, 30 and 35 at 14:19 (samplers, fit layout, EM padding); there was no time left
#: to re-run them before the session ended: `python scripts/execute_notebooks.py --fast --store-fast check_sampler`
#: and `python scripts/execute_notebooks.py kueck04`, then remove them from this set.
NOT_YET_REEXECUTED: set = set()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_stored_outputs_come_from_the_current_code(path, request):
    if path.stem in NOT_YET_REEXECUTED:
        request.applymarker(pytest.mark.xfail(strict=True, reason="stored outputs older than the code: re-run "
                                                                  "scripts/execute_notebooks.py"))
    nb = nbformat.read(path, as_version=4)
    reasons = execute_notebooks.stale_reasons(nb)
    assert not reasons, f"{path.name}: stored outputs may be stale ({'; '.join(reasons)}); re-run " \
                        f"scripts/execute_notebooks.py {path.stem}"
    assert "zoo/__init__.py" in nb.metadata["zoo"]["zoo_sources"], "the module probe missed the zoo's own files"
    assert not execute_notebooks.warnings_in(nb), execute_notebooks.warnings_in(nb)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors


def test_the_stamp_changes_with_the_code():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    execute_notebooks.stamp(nb, "full", [str(ROOT / "zoo" / "reports.py")])
    assert list(nb.metadata["zoo"]["zoo_sources"]) == ["zoo/reports.py"]
    assert execute_notebooks.stale_reasons(nb) == []
    nb.cells[0].source = "x = 2"
    assert execute_notebooks.stale_reasons(nb) == ["its code cells changed since its run"]
    nb.cells.append(nbformat.v4.new_code_cell("y", outputs=[nbformat.v4.new_output(
        "stream", name="stderr", text="<cell>:1: UserWarning: careful\n")]))
    assert execute_notebooks.warnings_in(nb) == ["<cell>:1: UserWarning: careful"]


def test_a_change_of_a_zoo_file_the_notebook_ran_makes_it_stale_but_a_comment_does_not(tmp_path):
    """What session 3 missed (a summary format changed, no cell edited): the code of a file the notebook ran
    changed. Files outside the repository (an installed copy) are not recorded."""
    module = tmp_path / "zoo" / "fmt.py"
    module.parent.mkdir()
    module.write_text('"""Doc."""\ndef fmt(x):\n    return f"{x:.3g}"  # three figures\n')
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(fmt(1.23456))")])
    execute_notebooks.stamp(nb, "full", [str(module), "/elsewhere/site-packages/zoo/x.py"], root=tmp_path)
    assert list(nb.metadata["zoo"]["zoo_sources"]) == ["zoo/fmt.py"]
    assert execute_notebooks.stale_reasons(nb, root=tmp_path) == []
    module.write_text('"""Other words."""\n# a comment\ndef fmt(x):\n    """Doc."""\n\n    return f"{x:.3g}"\n')
    assert execute_notebooks.stale_reasons(nb, root=tmp_path) == []      # docstrings and comments are not code
    module.write_text('def fmt(x):\n    return f"{x:.2f}"\n')
    assert execute_notebooks.stale_reasons(nb, root=tmp_path) == [
        "code of 1 zoo source file(s) it ran changed: zoo/fmt.py"]
    module.unlink()                                                      # a file gone is a change too
    assert execute_notebooks.stale_reasons(nb, root=tmp_path) == [
        "code of 1 zoo source file(s) it ran changed: zoo/fmt.py"]
    # edited while the notebook ran: the stamp records the file as it was at the start, so it reads stale
    module.write_text('def fmt(x):\n    return f"{x:.3g}"\n')
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "ignored.py").write_text("x = 1\n")
    at_start = execute_notebooks.source_digests(tmp_path)
    assert list(at_start) == ["zoo/fmt.py"]
    module.write_text('def fmt(x):\n    return f"{x:.4g}"\n')
    execute_notebooks.stamp(nb, "full", [str(module)], root=tmp_path, digests=at_start)
    assert execute_notebooks.stale_reasons(nb, root=tmp_path) != []
    del nb.metadata["zoo"]["zoo_sources"]                                 # a stamp from before the file digests
    assert "no digest of the zoo source files" in execute_notebooks.stale_reasons(nb, root=tmp_path)[0]


def test_the_module_probe_lists_the_zoo_files_and_is_removed():
    probe = execute_notebooks.MODULES_PROBE
    namespace = {}
    import contextlib
    import io
    import json
    import zoo.reports  # noqa: F401  (imported, so the probe must list it)
    with contextlib.redirect_stdout(io.StringIO()) as out:
        exec(probe, namespace)
    files = json.loads(out.getvalue())
    assert zoo.reports.__file__ in files
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell(
        probe, outputs=[nbformat.v4.new_output("stream", name="stdout", text=out.getvalue())])])
    assert execute_notebooks.imported_zoo_files(nb) == files
    assert [c.source for c in nb.cells] == ["x = 1"]
