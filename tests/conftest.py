import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import atexit  # noqa: E402
import json  # noqa: E402
import pathlib  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402

# A compilation cache on disk for this run, shared by the pytest-xdist workers (the controller creates it, hands its
# path to each worker and removes it at the end; a run without xdist makes its own), never reused by another run.
# Many tests compile the same program again (several fits of one model with different seeds, or after
# _release_compiled_code below), and files on the two workers fit the same model on the same shapes; XLA's compiled
# code is then read back instead of compiled anew (test_determinism.py: 96 -> 73 CPU seconds). The code read back
# is the code compiled, so the draws are the same (tests/test_golden_draws.py checks them bit for bit). Every
# program is kept, however short its compile (threshold 0): the small ones (eager jnp operations, ArviZ-side
# conversions, per-shape helpers) are compiled again in every module after ``jax.clear_caches()`` below; five core
# test files in one process read back 148 programs instead of 16 at a 0.3 s threshold, 2.6 and 6.6 CPU s less (of 74
# and 72) in two pairs on a loaded machine (issue 35). Small programs are a few KB each on disk.
_CACHE_OPTION = "zoo_jax_cache_dir"
#: what this process read from and wrote to the cache (``_write_cache_entries_atomically``), reported at the
#: end of the run
_CACHE_USE = {"written": set(), "read": 0, "read_from_other_process": 0, "compile_s_saved_from_other": 0}


def _write_cache_entries_atomically() -> bool:
    """Make JAX's file cache write each entry whole: ``LRUCache.put`` (jax 0.10, no size limit set) writes the file
    in place, so a second process reading that key mid-write gets a truncated entry (JAX then warns "Error reading
    persistent compilation cache entry" and compiles again). Written to a temporary file in the same directory and
    renamed into place (``os.replace``: atomic on one file system), an entry is seen whole or not at all; two
    processes writing one key replace one complete file by another. Also counts what this process reads and writes
    (``_CACHE_USE``). False where JAX's cache class is not the one this was written against: the caller then keeps
    the cache private to this process."""
    try:
        from jax._src import lru_cache
    except ImportError:
        return False
    cls = getattr(lru_cache, "LRUCache", None)
    suffix = getattr(lru_cache, "_CACHE_SUFFIX", None)
    if cls is None or suffix is None or not callable(getattr(cls, "put", None)) or \
            not callable(getattr(cls, "get", None)):
        return False
    if getattr(cls, "_zoo_atomic_writes", False):
        return True                           # already replaced in this process
    put, get = cls.put, cls.get

    def atomic_put(self, key, value):
        if getattr(self, "eviction_enabled", True) or not isinstance(self.path, pathlib.Path):
            return put(self, key, value)     # a size limit takes JAX's file lock: its own writes are then safe
        if not key:
            raise ValueError("key cannot be empty")
        _CACHE_USE["written"].add(key)
        final = self.path / f"{key}{suffix}"
        if final.exists():
            return
        handle, partial = tempfile.mkstemp(dir=self.path, prefix=".partial-")
        with os.fdopen(handle, "wb") as out:
            out.write(value)
        os.replace(partial, final)

    def counting_get(self, key):
        value = get(self, key)
        if value is not None:
            _CACHE_USE["read"] += 1
            if key not in _CACHE_USE["written"]:
                _CACHE_USE["read_from_other_process"] += 1
                _CACHE_USE["compile_s_saved_from_other"] += _recorded_compile_seconds(value)
        return value

    cls.put, cls.get, cls._zoo_atomic_writes = atomic_put, counting_get, True
    return True


def _recorded_compile_seconds(entry: bytes) -> int:
    """The compile time JAX stored with an entry (whole seconds, rounded down by JAX: a lower bound); 0 if unread."""
    try:
        from jax._src import compilation_cache
        return compilation_cache.extract_executable_and_time(compilation_cache.decompress_executable(entry))[1]
    except Exception:   # only a figure for the report: never a reason to fail a test
        return 0


def _use_compilation_cache(path: str) -> None:
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


#: the run caches' folder names: this prefix, the controller's process id, a random part
_RUN_CACHE_PREFIX = "zoo-tests-run-cache-"


def _private_cache() -> str:
    path = tempfile.mkdtemp(prefix="zoo-tests-jax-cache-")
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


import matplotlib  # noqa: E402

matplotlib.use("Agg")

import pytest  # noqa: E402

NOTEBOOKS = pathlib.Path(__file__).resolve().parents[1] / "notebooks"
#: How many test files the closing summary lists by time.
SLOWEST_FILES_SHOWN = 15


#: The test files that hold a core longest (seconds of test time in the suite's closing summary, idle 2-core AMD
#: EPYC of session 9: its baseline run of main eb1dd2f, /work/notes/s9/baseline_suite_main_eb1dd2f.log, with the
#: files changed in session 9 scaled by their measured before/after CPU seconds; files below the summary's 15 at the
#: sum of their phases among the 80 slowest, rounded up). They start first: ``-n 2 --dist loadfile`` hands out whole
#: files, one per free worker, and by default queues them by number of tests, which put long files with few tests
#: late, so that one worker could still be in a 40-second file while the other had nothing left. Longest first, the
#: short files fill in behind them and the two workers end together. test_persist.py stays out of the first two on
#: purpose: its kueck04.hybrid and overflow fits read the samplers the golden draws compile (same shapes, shared
#: cache) only if they start after them. Update from the summary when it changes.
LONGEST_FILES = {
    "tests/test_golden_draws.py": 138,
    "tests/papers/test_kueck04_geweke.py": 123,
    "tests/papers/test_gustafson07_gibbs.py": 94,
    "tests/papers/test_gustafson07_moves.py": 67,
    "tests/papers/test_yakhnenko_model.py": 66,
    "tests/papers/test_gustafson07_api.py": 65,
    "tests/papers/test_kueck04_samplers.py": 65,
    "tests/papers/test_kueck04_api.py": 62,
    "tests/papers/test_carbonetto03.py": 55,
    "tests/papers/test_yakhnenko_vi.py": 53,
    "tests/papers/test_ross03_mcvq.py": 53,
    "tests/papers/test_mil_basis.py": 52,
    "tests/papers/test_mil_jump.py": 50,
    "tests/core/test_persist.py": 43,
    "tests/papers/test_gustafson07_garbage.py": 40,
    "tests/papers/test_mil_rows.py": 38,
    "tests/papers/test_mil_padding.py": 35,
    "tests/papers/test_log_joint.py": 35,
    "tests/data/test_own_data.py": 32,
}


def pytest_configure(config):
    # pytest-xdist's queue follows the order of the collected items (below) instead of its own
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False
    shared = getattr(config, "workerinput", {}).get(_CACHE_OPTION)
    if shared and _write_cache_entries_atomically():
        _use_compilation_cache(shared)          # an xdist worker: the run's cache, made by the controller
        return
    if not hasattr(config, "workerinput") and _write_cache_entries_atomically():
        # the controller (or a run without xdist): the run's cache, removed when the run ends
        # a run killed before its own cleanup (a signal skips atexit and pytest_unconfigure) left its folder
        from zoo.core.workers import remove_orphaned_caches
        remove_orphaned_caches(tempfile.gettempdir(), prefix=_RUN_CACHE_PREFIX)
        config._zoo_jax_cache = tempfile.mkdtemp(prefix=f"{_RUN_CACHE_PREFIX}{os.getpid()}-")
        atexit.register(shutil.rmtree, config._zoo_jax_cache, ignore_errors=True)
        _use_compilation_cache(config._zoo_jax_cache)
        return
    _use_compilation_cache(_private_cache())    # JAX's cache class unknown: one cache per process, as before


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist, in the controller: each worker is told the run's shared cache (``pytest_configure``)."""
    path = getattr(node.config, "_zoo_jax_cache", None)
    if path:
        node.workerinput[_CACHE_OPTION] = path


def pytest_sessionfinish(session, exitstatus):
    """A worker leaves its cache counts beside the cache for the controller's summary."""
    workerinput = getattr(session.config, "workerinput", None)
    if workerinput and workerinput.get(_CACHE_OPTION):
        counts = dict(_CACHE_USE, written=len(_CACHE_USE["written"]))
        path = os.path.join(workerinput[_CACHE_OPTION], f".use-{workerinput.get('workerid', os.getpid())}.json")
        with open(path, "w") as out:
            json.dump(counts, out)


def pytest_unconfigure(config):
    path = getattr(config, "_zoo_jax_cache", None)
    if path:
        shutil.rmtree(path, ignore_errors=True)


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
    _report_cache_use(terminalreporter, config)


def _report_cache_use(terminalreporter, config):
    """One line per process: programs written to the run's compilation cache, read back, and read back from the
    other worker's compiles (with the compile seconds JAX recorded for those, whole seconds: a lower bound)."""
    path = getattr(config, "_zoo_jax_cache", None)
    uses = {}
    if path and os.path.isdir(path):
        for name in sorted(os.listdir(path)):
            if name.startswith(".use-"):
                with open(os.path.join(path, name)) as stored:
                    uses[name[len(".use-"):-len(".json")]] = json.load(stored)
    if not uses:
        uses = {"this process": dict(_CACHE_USE, written=len(_CACHE_USE["written"]))}
    for who, use in uses.items():
        terminalreporter.write_line(
            f"compilation cache, {who}: {use['written']} programs written, {use['read']} read back, "
            f"{use['read_from_other_process']} of them compiled by another process "
            f"(>= {use['compile_s_saved_from_other']} s of compile time)")


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
