#!/usr/bin/env python
"""Re-execute the zoo's notebooks and store them with their outputs, so that they read (plots included) on a code
host without running them.

Usage (from the repository root, in an environment with ``pip install -e ".[notebooks]"``)::

    python scripts/execute_notebooks.py                      # all notebooks in notebooks/, full setting
    python scripts/execute_notebooks.py carbonetto03 ross03  # some of them (names or paths)
    python scripts/execute_notebooks.py --check              # run, report times, store nothing
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
* the notebook's metadata gets a stamp ``metadata.zoo``: the SHA-256 of its code cells' sources, the zoo version
  and the setting it ran in (``stamp``); ``tests/notebooks/test_outputs_current.py`` fails when a notebook's code
  or the zoo version changed after its outputs were stored. Warnings left in the outputs are listed.

The notebook is written in place atomically (temp file in the same folder, then rename), only when the run had
no error; a failing notebook is left untouched and the script exits with status 1 after trying the rest.
Each notebook's wall-clock run time is printed.
"""
from __future__ import annotations

import argparse
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
    import hashlib
    digest = hashlib.sha256()
    for cell in nb.cells:
        if cell.cell_type == "code":
            digest.update(cell.source.encode("utf-8") + b"\0")
    return digest.hexdigest()


def stamp(nb: nbformat.NotebookNode, setting: str) -> None:
    """Record what the stored outputs come from: the code cells' digest, the zoo version and the setting."""
    import zoo
    nb.metadata["zoo"] = {"code_sha256": code_digest(nb), "zoo_version": zoo.__version__, "setting": setting}


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


def execute(path: pathlib.Path, timeout: int, kernel_name: str) -> tuple[nbformat.NotebookNode, float]:
    """Run one notebook (outputs cleared first) in a fresh kernel; returns it executed, and the wall time in s."""
    nb = nbformat.read(path, as_version=4)
    clear_outputs(nb)
    client = NotebookClient(nb, timeout=timeout, kernel_name=kernel_name, record_timing=False,
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute()
    return nb, time.perf_counter() - start


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
    parser.add_argument("--store-fast", action="store_true",
                        help="with --fast, write the fast outputs into the notebooks anyway (their first cells state "
                             "the full setting)")
    args = parser.parse_args(argv)
    if args.store_fast and not args.fast:
        parser.error("--store-fast goes with --fast")
    write = not args.check and (not args.fast or args.store_fast)

    paths = notebook_paths(args.notebooks)
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
                    nb, seconds = execute(path, args.timeout, args.kernel)
                except CellExecutionError as err:
                    failed.append(path.name)
                    print(f"{path.name}: FAILED, left unchanged\n{err}", file=sys.stderr, flush=True)
                    continue
                dropped = drop_widget_outputs(nb)
                coalesce_streams(nb)
                stamp(nb, "fast" if args.fast else "full")
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
