#!/usr/bin/env python
"""Re-execute the zoo's notebooks and store them with their outputs, so that they read (plots included) on a code
host without running them.

Usage (from the repository root, in an environment with ``pip install -e ".[notebooks]"``)::

    python scripts/execute_notebooks.py                      # all notebooks in notebooks/, full setting
    python scripts/execute_notebooks.py carbonetto03 ross03  # some of them (names or paths)
    python scripts/execute_notebooks.py --check              # run, report times, store nothing
    python scripts/execute_notebooks.py --stale --list       # list the notebooks whose stamp is out of date
    python scripts/execute_notebooks.py --stale              # re-execute only those
    python scripts/execute_notebooks.py --fast               # ZOO_NOTEBOOK_FAST=1 (the test suite's setting):
                                                             # run and time only, unless --store-fast

The stored notebooks carry the full setting's outputs (each says so in its first cell), so a ``--fast`` run stores
nothing unless ``--store-fast`` is given as well.

Each notebook runs in a fresh ``python3`` kernel whose working directory is ``notebooks/``, with
``MPLBACKEND=module://matplotlib_inline.backend_inline`` (figures become PNG ``display_data`` outputs) and
matplotlib's ``figure.dpi`` at 100, ``OMP_NUM_THREADS=1`` unless set. Outputs are cleared before the run.
After the run the stored notebook is tidied:

* progress-bar widgets (tqdm's ipywidgets bars) are transient: their ``display_data`` outputs and the notebook's
  ``metadata.widgets`` state are dropped, since a code host cannot render them and their state bloats the JSON;
* consecutive stream outputs of a cell (stdout, stderr) are merged and carriage returns applied as a terminal would,
  so a text progress bar (NumPyro's) is stored as its final line instead of one output per update;
* the kernel's temporary file name for a cell in warnings (``/tmp/ipykernel_1234/5678.py:4:``) becomes
  ``<cell>:4:``, so that re-running a notebook does not change its stored warnings;
* cell execution timing metadata is not recorded;
* the notebook's metadata gets a stamp ``metadata.zoo``: the SHA-256 of its code cells' sources, the zoo version,
  the setting it ran in, and a digest of the code of every zoo source file the kernel had imported when the
  notebook finished (``stamp``, ``zoo_sources``); ``tests/notebooks/test_outputs_current.py`` fails when a
  notebook's code, the zoo version or the code of a zoo file it ran changed after its outputs were stored.
  Warnings left in the outputs are listed.

Why file digests: the stored outputs are computed by the zoo's code as much as by the notebook's cells (a change of
a summary's format changes every notebook that prints one, with no cell edited). Which files a notebook ran is
measured, not guessed: a last cell, removed before storing, lists the files of ``sys.modules``' zoo entries
(``zoo.models`` and ``zoo.inference`` included; paths relative to the repository). A file's digest is the SHA-256
of its parsed code with docstrings dropped and comments ignored (``ast.unparse``), so editing a comment or a
docstring leaves the notebooks current while any change of code (a number format, a default, a kernel) marks every
notebook that imported the file as stale, whether or not its outputs move: the check errs on the side of
re-running. ``--stale`` lists (``--list``) or re-runs only the notebooks it flags, with the files that changed.
Not covered: data files and the versions of the libraries (JAX, NumPyro, ArviZ) the outputs also depend on.

The notebook is written in place atomically (temp file in the same folder, then rename), only when the run had
no error; a failing notebook is left untouched and the script exits with status 1 after trying the rest.
Each notebook's wall-clock run time is printed.
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import pathlib
import re
import sys
import tempfile
import time

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from zoo.core.workers import restore_environment, set_environment

REPOSITORY = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = REPOSITORY / "notebooks"
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
KERNEL_CELL_FILE = re.compile(r"\S*ipykernel_\d+[/\\]\d+\.py")   # where a warning issued by a cell's code points
FIGURE_DPI = 100


def notebook_paths(names: list[str]) -> list[pathlib.Path]:
    """The notebooks named on the command line (``name``, ``name.ipynb`` or a path); all of notebooks/ if none."""
    if not names:
        return sorted(NOTEBOOKS.glob("*.ipynb"))
    paths = []
    for name in names:
        path = pathlib.Path(name)
        if not path.suffix:
            path = NOTEBOOKS / f"{name}.ipynb"
        elif not path.exists() and (NOTEBOOKS / path.name).exists():
            path = NOTEBOOKS / path.name
        if not path.exists():
            raise SystemExit(f"no notebook {name!r} (looked for {path})")
        paths.append(path.resolve())
    return paths


def clear_outputs(nb: nbformat.NotebookNode) -> None:
    """Remove every code cell's outputs and execution count, and the notebook's stored widget state."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
            cell.metadata.pop("execution", None)
    nb.metadata.pop("widgets", None)


def drop_widget_outputs(nb: nbformat.NotebookNode) -> int:
    """Drop the ``display_data`` outputs that are widget views (progress bars) and the widget state; returns how
    many outputs were dropped."""
    dropped = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        kept = []
        for output in cell.outputs:
            if output.output_type == "display_data" and WIDGET_VIEW in output.get("data", {}):
                dropped += 1
                continue
            kept.append(output)
        cell.outputs = kept
        cell.metadata.pop("execution", None)
    nb.metadata.pop("widgets", None)
    return dropped


def _apply_carriage_returns(text: str) -> str:
    """What a terminal shows for ``text``: on every line, only what follows the last carriage return."""
    lines = text.split("\n")
    return "\n".join(line.rstrip("\r").rsplit("\r", 1)[-1] for line in lines)


def coalesce_streams(nb: nbformat.NotebookNode) -> None:
    """Merge each cell's consecutive stream outputs of the same name and apply their carriage returns."""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        merged = []
        for output in cell.outputs:
            if (output.output_type == "stream" and merged and merged[-1].output_type == "stream"
                    and merged[-1].name == output.name):
                merged[-1].text += output.text
            else:
                merged.append(output)
        for output in merged:
            if output.output_type == "stream":
                output.text = KERNEL_CELL_FILE.sub("<cell>", _apply_carriage_returns(output.text))
        cell.outputs = [o for o in merged if o.output_type != "stream" or o.text.strip()]


def code_digest(nb: nbformat.NotebookNode) -> str:
    """SHA-256 of the notebook's code cells' sources in order (what its stored outputs were computed from)."""
    digest = hashlib.sha256()
    for cell in nb.cells:
        if cell.cell_type == "code":
            digest.update(cell.source.encode("utf-8") + b"\0")
    return digest.hexdigest()


#: the last cell run in the kernel (removed before storing): the source files of the zoo modules the notebook's
#: code imported (files, not names: a module imported under a moved module's old name is the same file)
MODULES_PROBE = ("import json as _zoo_json, sys as _zoo_sys\n"
                 "_zoo_files = {getattr(m, '__file__', None) for n, m in list(_zoo_sys.modules.items())\n"
                 "              if n == 'zoo' or n.startswith('zoo.')}\n"
                 "print(_zoo_json.dumps(sorted(f for f in _zoo_files if f)))")


def _without_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


def source_digest(path: str, root: pathlib.Path = REPOSITORY) -> str | None:
    """SHA-256 of a source file's code without docstrings and comments (``ast.unparse`` of the parsed file;
    ``path`` relative to ``root``), or None where the file is gone or is not Python source."""
    file = root / path
    if file.suffix != ".py" or not file.is_file():
        return None
    tree = _without_docstrings(ast.parse(file.read_text(encoding="utf-8")))
    return hashlib.sha256(ast.unparse(tree).encode("utf-8")).hexdigest()


def repository_paths(files, root: pathlib.Path = REPOSITORY) -> list[str]:
    """The files of ``files`` (absolute) inside ``root``, as POSIX paths relative to it (an installed zoo outside
    the repository is not the code this repository's notebooks are checked against)."""
    out = set()
    for file in files:
        try:
            out.add(pathlib.Path(file).resolve().relative_to(root.resolve()).as_posix())
        except ValueError:
            continue
    return sorted(out)


def source_digests(root: pathlib.Path = REPOSITORY) -> dict[str, str | None]:
    """``source_digest`` of every Python file under ``root`` outside hidden folders and virtual environments,
    taken when a run starts: a file edited while the notebook runs is then recorded as it was when the kernel
    imported it, so the notebook reads stale instead of current."""
    out = {}
    for file in root.rglob("*.py"):
        rel = file.relative_to(root)
        if not any(part.startswith(".") or part in ("build", "node_modules") for part in rel.parts[:-1]):
            out[rel.as_posix()] = source_digest(rel.as_posix(), root)
    return out


def stamp(nb: nbformat.NotebookNode, setting: str, files=(), root: pathlib.Path = REPOSITORY,
          digests: dict | None = None) -> None:
    """Record what the stored outputs come from: the code cells' digest, the zoo version, the setting and
    ``source_digest`` of each zoo source file of ``files`` (those the kernel imported; relative to ``root``), as
    ``digests`` (``source_digests`` at the start of the run) has it where given."""
    import zoo
    digests = digests or {}
    nb.metadata["zoo"] = {"code_sha256": code_digest(nb), "zoo_version": zoo.__version__, "setting": setting,
                          "zoo_sources": {f: digests[f] if f in digests else source_digest(f, root)
                                          for f in repository_paths(files, root)}}


def stale_reasons(nb: nbformat.NotebookNode, root: pathlib.Path = REPOSITORY) -> list[str]:
    """Why the stored outputs may not be what the current code gives (empty when the stamp is current): no stamp,
    code cells edited, another zoo version, or the zoo source files whose code changed since the run."""
    import zoo
    record = nb.metadata.get("zoo")
    if not record:
        return ["no stamp: its outputs were stored by an older execute_notebooks.py"]
    reasons = []
    if record.get("code_sha256") != code_digest(nb):
        reasons.append("its code cells changed since its run")
    if record.get("zoo_version") != zoo.__version__:
        reasons.append(f"stored with zoo {record.get('zoo_version')}, this is {zoo.__version__}")
    sources = record.get("zoo_sources")
    if not sources:
        reasons.append("no digest of the zoo source files it ran (stored by an older execute_notebooks.py)")
    else:
        changed = [f for f, digest in sources.items() if source_digest(f, root) != digest]
        if changed:
            reasons.append(f"code of {len(changed)} zoo source file(s) it ran changed: {', '.join(changed)}")
    return reasons


def imported_zoo_files(nb: nbformat.NotebookNode) -> list[str]:
    """Remove the executed ``MODULES_PROBE`` cell (the notebook's last) and return the files it printed."""
    probe = nb.cells.pop()
    if probe.source != MODULES_PROBE:
        raise ValueError("the notebook's last cell is not the module probe")
    text = "".join(o.get("text", "") for o in probe.outputs if o.output_type == "stream" and o.name == "stdout")
    return json.loads(text.strip().splitlines()[-1])


def warnings_in(nb: nbformat.NotebookNode) -> list[str]:
    """The lines of stored outputs that are warnings (a reader should see none)."""
    found = []
    for cell in nb.cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if output.output_type == "stream":
                found += [line for line in output.text.splitlines() if "Warning" in line]
    return found


def kernel_environment(fast: bool, rc_file: pathlib.Path) -> dict[str, str]:
    """Environment variables for the kernel: the notebook setting, the inline backend, the figure dpi."""
    env = {"MPLBACKEND": INLINE_BACKEND, "MATPLOTLIBRC": str(rc_file),
           "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    env["ZOO_NOTEBOOK_FAST"] = "1" if fast else "0"
    return env


def execute(path: pathlib.Path, timeout: int, kernel_name: str) -> tuple[nbformat.NotebookNode, float, list, dict]:
    """Run one notebook (outputs cleared first) in a fresh kernel; returns it executed, the wall time in s, the
    source files of the zoo modules its kernel imported (``MODULES_PROBE``, run last and removed) and the digests
    of the repository's sources at the start (``source_digests``)."""
    nb = nbformat.read(path, as_version=4)
    clear_outputs(nb)
    nb.cells.append(nbformat.v4.new_code_cell(MODULES_PROBE))
    digests = source_digests()
    client = NotebookClient(nb, timeout=timeout, kernel_name=kernel_name, record_timing=False,
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    return nb, seconds, imported_zoo_files(nb), digests


def write_atomically(nb: nbformat.NotebookNode, path: pathlib.Path) -> None:
    """Write the notebook to a temporary file beside ``path`` and rename it over ``path``."""
    nbformat.validate(nb)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".ipynb.tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            nbformat.write(nb, out)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        pathlib.Path(temporary).unlink(missing_ok=True)
        raise


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="*", help="names (e.g. carbonetto03) or paths; default: all in notebooks/")
    parser.add_argument("--fast", action="store_true", help="run with ZOO_NOTEBOOK_FAST=1 (the test suite's setting)")
    parser.add_argument("--timeout", type=int, default=1800, help="per-cell timeout in seconds (default 1800)")
    parser.add_argument("--kernel", default="python3", help="Jupyter kernel name (default python3)")
    parser.add_argument("--check", action="store_true", help="execute and report, but do not write the notebooks")
    parser.add_argument("--stale", action="store_true",
                        help="only the notebooks whose stamp is out of date (each listed with its reasons)")
    parser.add_argument("--list", action="store_true", help="print the notebooks that would run, run nothing")
    parser.add_argument("--store-fast", action="store_true",
                        help="with --fast, write the fast outputs into the notebooks anyway (their first cells state "
                             "the full setting)")
    args = parser.parse_args(argv)
    if args.store_fast and not args.fast:
        parser.error("--store-fast goes with --fast")
    write = not args.check and (not args.fast or args.store_fast)

    paths = notebook_paths(args.notebooks)
    if args.stale:
        flagged = []
        for path in paths:
            reasons = stale_reasons(nbformat.read(path, as_version=4))
            if reasons:
                print(f"{path.name}: stale: {'; '.join(reasons)}", flush=True)
                flagged.append(path)
        paths = flagged
    if args.list:
        print("\n".join(p.name for p in paths) or "(none)")
        return 0
    setting = "fast (ZOO_NOTEBOOK_FAST=1)" if args.fast else "full"
    failed = []
    with tempfile.TemporaryDirectory(prefix="zoo-notebooks-") as scratch:
        rc_file = pathlib.Path(scratch) / "matplotlibrc"
        rc_file.write_text(f"backend: {INLINE_BACKEND}\nfigure.dpi: {FIGURE_DPI}\n")
        # the kernel inherits this process's environment
        saved = set_environment(kernel_environment(args.fast, rc_file))
        try:
            for path in paths:
                print(f"{path.name}: running ({setting}) ...", flush=True)
                try:
                    nb, seconds, files, digests = execute(path, args.timeout, args.kernel)
                except CellExecutionError as err:
                    failed.append(path.name)
                    print(f"{path.name}: FAILED, left unchanged\n{err}", file=sys.stderr, flush=True)
                    continue
                dropped = drop_widget_outputs(nb)
                coalesce_streams(nb)
                stamp(nb, "fast" if args.fast else "full", files, digests=digests)
                for line in warnings_in(nb):
                    print(f"{path.name}: warning in the stored output: {line}", file=sys.stderr, flush=True)
                if write:
                    write_atomically(nb, path)
                size = path.stat().st_size / 1024
                print(f"{path.name}: {seconds:.1f} s ({setting}); {dropped} progress-bar outputs dropped; "
                      f"{f'stored, {size:.0f} KiB' if write else 'not written'}", flush=True)
        finally:
            restore_environment(saved)
    if failed:
        print("failed:", ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
