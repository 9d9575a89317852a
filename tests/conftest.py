import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import atexit  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402

# A compilation cache on disk, private to this test process (each pytest-xdist worker has its own: JAX writes the
# entries without a lock), removed at exit. Many tests compile the same program again (several fits of one model
# with different seeds, or after _release_compiled_code below); XLA's compiled code is then read back instead of
# compiled anew (test_determinism.py: 96 -> 73 CPU seconds). The code read back is the code compiled, so the
# draws are the same (tests/test_golden_draws.py checks them bit for bit). Every program is kept, however short
# its compile (threshold 0): the small ones (eager jnp operations, ArviZ-side conversions, per-shape helpers) are
# compiled again in every module after ``jax.clear_caches()`` below; five core test files in one process read back
# 148 programs instead of 16 at a 0.3 s threshold, 2.6 and 6.6 CPU s less (of 74 and 72) in two pairs on a loaded
# machine (issue 35). Small programs are a few KB each on disk.
_COMPILATION_CACHE = tempfile.mkdtemp(prefix="zoo-tests-jax-cache-")
atexit.register(shutil.rmtree, _COMPILATION_CACHE, ignore_errors=True)
jax.config.update("jax_compilation_cache_dir", _COMPILATION_CACHE)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)

import matplotlib  # noqa: E402

matplotlib.use("Agg")

import pathlib  # noqa: E402

import pytest  # noqa: E402

NOTEBOOKS = pathlib.Path(__file__).resolve().parents[1] / "notebooks"
#: How many test files the closing summary lists by time.
SLOWEST_FILES_SHOWN = 15


#: The test files that hold a core longest (seconds of test time in the suite's closing summary: session 5's idle
#: run on a 2-core machine; test_mil_moves.py, 44 s there, left out since its move-alone joint-distribution tests
#: went to the slow tier). They start first: ``-n 2 --dist loadfile`` hands out whole files, one per free worker,
#: and by default queues them by number of tests, which put long files with few tests late, so that one worker
#: could still be in a 40-second file while the other had nothing left. Longest first, the short files fill in
#: behind them and the two workers end together. Update from the summary when it changes.
LONGEST_FILES = {
    "tests/test_golden_draws.py": 108,
    "tests/papers/test_kueck04_geweke.py": 102,
    "tests/test_readme.py": 53,
    "tests/papers/test_gustafson07_gibbs.py": 53,
    "tests/core/test_persist.py": 49,
    "tests/papers/test_gustafson07_api.py": 44,
    "tests/papers/test_mil_jump.py": 43,
    "tests/papers/test_ross03_mcvq.py": 40,
    "tests/papers/test_kueck04_samplers.py": 39,
    "tests/papers/test_kueck04_api.py": 35,
    "tests/papers/test_yakhnenko_vi.py": 34,
    "tests/papers/test_yakhnenko_model.py": 33,
    "tests/core/test_arviz_defaults.py": 33,
    "tests/papers/test_carbonetto03.py": 33,
}


def pytest_configure(config):
    # pytest-xdist's queue follows the order of the collected items (below) instead of its own
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(session, config, items):
    """Whole files, the ``LONGEST_FILES`` first (longest first), then the others by number of tests, most first
    (pytest-xdist's own order), ties in collection order. Tests within a file keep their order."""
    files: dict[str, list] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)
    ranked = sorted(files, key=lambda path: (-LONGEST_FILES.get(path, 0), -len(files[path])))
    items[:] = [item for path in ranked for item in files[path]]


def pytest_report_header(config):
    """The processor and JAX build at the top of every run, so a machine-dependent failure (rounding, time) is
    visible at once (``zoo.core.provenance.platform_fingerprint``, also the key of the golden draws)."""
    from zoo.core.provenance import platform_fingerprint
    fp = platform_fingerprint()
    return [f"platform: {fp['processor']} ({fp['machine']}, {fp['cpu_count']} CPUs; "
            f"{' '.join(fp['features']) or 'no listed vector features'}); jax {fp['jax']}, jaxlib {fp['jaxlib']}"]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Per-file times (setup + call + teardown of the file's tests, summed), slowest first: under
    ``--dist loadfile`` a file runs whole in one worker, so this is the time the file holds a core."""
    per_file: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) in ("setup", "call", "teardown"):
                path = report.nodeid.split("::")[0]
                per_file[path] = per_file.get(path, 0.0) + report.duration
    if not per_file:
        return
    ranked = sorted(per_file.items(), key=lambda item: -item[1])
    terminalreporter.write_sep("-", f"slowest test files of {len(ranked)} (seconds; all files: "
                                    f"{sum(per_file.values()):.0f} s of test time)")
    for path, seconds in ranked[:SLOWEST_FILES_SHOWN]:
        terminalreporter.write_line(f"{seconds:8.1f}  {path}")


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_code():
    """Drop JAX's compiled executables after each test module. The suite compiles hundreds of samplers in one
    process; with all of them kept, XLA's compiler crashed (a segmentation fault inside backend_compile_and_load)
    two thirds of the way through a CI run, while each module passes alone."""
    yield
    jax.clear_caches()


@pytest.fixture
def run_notebook(monkeypatch):
    """Execute ``notebooks/<name>.ipynb`` in its fast setting; returns the executed notebook.

    The stored notebook is read into memory and never written back: its stored outputs (the full setting, see
    ``scripts/execute_notebooks.py``) and widget state are cleared first, so the returned notebook holds only this
    run's outputs. Fails on an error output, and on a ``TqdmWarning`` (tqdm.auto falling back to text bars because
    ipywidgets is missing from the kernel's environment).
    """
    import nbformat
    from nbclient import NotebookClient

    def run(name: str):
        monkeypatch.setenv("ZOO_NOTEBOOK_FAST", "1")
        monkeypatch.setenv("MPLBACKEND", "Agg")
        monkeypatch.setenv("OMP_NUM_THREADS", "1")
        path = NOTEBOOKS / f"{name}.ipynb"
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs = []
                cell.execution_count = None
        nb.metadata.pop("widgets", None)
        NotebookClient(nb, timeout=600, kernel_name="python3",
                       resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
        outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
        errors = [o for o in outputs if o.output_type == "error"]
        assert not errors, errors
        tqdm_warnings = [o.text for o in outputs if o.output_type == "stream" and "TqdmWarning" in o.text]
        assert not tqdm_warnings, tqdm_warnings
        return nb

    return run
