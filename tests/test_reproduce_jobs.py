"""``zoo reproduce all`` with papers side by side (``jobs`` > 1): the same reports and index as one after the
other, each paper in its own single-threaded process, its console prefixed on the terminal and kept whole."""
import io
import os
import textwrap

import pytest

from zoo.core import workers as _workers
from zoo import reproduce as reproduce_module

PAPER = '''
import os
import sys
from zoo.reports import PaperReport, Section, Table

def reproduce(out_dir, fast):
    if {fail!r}:
        raise RuntimeError("boom in {name}")
    print("fitting {name}")
    sys.stderr.write("progress 1/2\\rprogress 2/2\\n")
    table = Table("Accuracy", ["method", "accuracy"], [["ours", 0.9]])
    report = PaperReport("{name}", "{name} (2000): a paper", sections=[Section("Main", [table])])
    report.notes.append(f"pid={{os.getpid()}} threads={{os.environ.get('OMP_NUM_THREADS')}} fast={{fast}}")
    return report
'''


@pytest.fixture
def fake_papers(tmp_path, monkeypatch):
    """Three importable paper modules (``beta`` raises), as ``experiment_modules`` returns them."""
    import importlib
    package = tmp_path / "fake_papers_i35"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name, fail in (("alpha", False), ("beta", True), ("gamma", False)):
        (package / f"{name}.py").write_text(textwrap.dedent(PAPER.format(name=name, fail=fail)))
    monkeypatch.syspath_prepend(str(tmp_path))
    modules = {name: importlib.import_module(f"fake_papers_i35.{name}") for name in ("alpha", "beta", "gamma")}
    monkeypatch.setattr(reproduce_module, "experiment_modules", lambda: modules)
    return modules


def test_papers_side_by_side_give_the_same_index_and_say_what_failed(fake_papers, tmp_path, capfd, monkeypatch):
    out = tmp_path / "reports"
    monkeypatch.setenv("OMP_NUM_THREADS", "3")      # the user's own thread count reaches the workers
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    assert reproduce_module.reproduce_papers("all", out, fast=True, jobs=2) == 1  # beta raised
    assert os.environ["OMP_NUM_THREADS"] == "3" and "XLA_FLAGS" not in os.environ  # this process's env as it was
    console = capfd.readouterr()
    text = (out / "index.md").read_text()
    assert "alpha (2000): a paper" in text and "gamma (2000): a paper" in text
    assert "beta: FAILED" in text and "RuntimeError: boom in beta" in text
    for name in ("alpha", "gamma"):
        assert (out / name / "report.md").exists()
        note = next(n for n in (out / name / "report.md").read_text().splitlines() if "pid=" in n)
        assert f"pid={os.getpid()}" not in note, "the paper ran in this process, not in a worker"
        assert "threads=3 fast=True" in note
        # the whole console, progress bar included, in the paper's folder
        log = (out / name / "console.log").read_bytes().decode()
        assert f"fitting {name}" in log and "progress 1/2\rprogress 2/2" in log
        # on the terminal: prefixed lines, a progress bar's last state only
        assert f"[{name}] fitting {name}" in console.out
        assert f"[{name}] progress 2/2" in console.err and "progress 1/2" not in console.err
    assert "zoo reproduce: failed: beta" in console.err
    assert "2 papers at a time" in console.out


def test_a_worker_is_single_threaded_unless_the_user_said_otherwise(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    env = _workers.single_threaded_env()
    assert env["OMP_NUM_THREADS"] == "1" and "--xla_cpu_multi_thread_eigen=false" in env["XLA_FLAGS"]
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=true")
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    assert _workers.single_threaded_env() == {"OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def test_longest_paper_of_the_last_run_starts_first(tmp_path):
    import json
    (tmp_path / "index.json").write_text(json.dumps({
        "alpha": {"seconds": 10.0, "mode": "fast"}, "beta": {"seconds": 300.0, "mode": "fast"},
        "gamma": {"seconds": 999.0, "mode": "full"}}))
    # gamma was timed only in the full mode: unknown for --fast, so it starts first
    assert reproduce_module._longest_first(["alpha", "beta", "gamma"], tmp_path, fast=True) == ["gamma", "beta",
                                                                                                "alpha"]
    assert reproduce_module._longest_first(["alpha", "beta"], tmp_path / "none", fast=True) == ["alpha", "beta"]
    # a first --fast run: the typical stage times order the papers (papers not listed first)
    assert reproduce_module._longest_first(["carbonetto03", "kueck04", "new", "ross03"], tmp_path / "none",
                                           fast=True) == ["new", "kueck04", "ross03", "carbonetto03"]
    # times from this folder's index and typical times side by side
    assert reproduce_module._longest_first(["carbonetto03", "beta"], tmp_path, fast=True) == ["beta", "carbonetto03"]


def test_prefixed_lines_keep_partial_lines_until_they_end():
    shown, log = io.StringIO(), io.StringIO()
    stream = reproduce_module._PrefixedLines(shown, "[p] ", log)
    stream.write("a")
    stream.write("b\nc")
    assert shown.getvalue() == "[p] ab\n"
    stream.write("\n\n")
    assert shown.getvalue() == "[p] ab\n[p] c\n" and log.getvalue() == "ab\nc\n\n"


def test_default_jobs_stays_within_the_cores_and_the_papers():
    assert reproduce_module.default_jobs(1) == 1
    assert 1 <= reproduce_module.default_jobs(8) <= min(4, os.cpu_count() or 1)


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads process states from /proc")
def test_a_worker_ends_when_its_parent_is_gone():
    """A parent killed alone (a timeout's signal) leaves no worker computing on."""
    import subprocess
    import sys
    import time
    parent = ("import time, sys\n"
              "from zoo.core import workers\n"
              "with workers.spawned_pool(1) as pool:\n"
              "    pool.submit(time.sleep, 600)\n"
              "    print(pool._processes and list(pool._processes), flush=True)\n"
              "    time.sleep(600)\n")
    proc = subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(p) for p in proc.stdout.readline().strip(" []\n").split(",")]
    finally:
        proc.kill()
        proc.wait(timeout=60)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.5)
    assert not any(_alive(pid) for pid in pids)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"       # a zombie has ended
    except FileNotFoundError:
        return False


def test_environment_is_restored_as_it_was(monkeypatch):
    """``workers.environment`` (the worker pool's and scripts/execute_notebooks.py's): names set for the block, then
    each back to its old value or removed, also after an error."""
    monkeypatch.setenv("ZOO_TEST_SET", "old")
    monkeypatch.delenv("ZOO_TEST_UNSET", raising=False)
    with pytest.raises(RuntimeError):
        with _workers.environment({"ZOO_TEST_SET": "new", "ZOO_TEST_UNSET": "1"}):
            assert os.environ["ZOO_TEST_SET"] == "new" and os.environ["ZOO_TEST_UNSET"] == "1"
            raise RuntimeError
    assert os.environ["ZOO_TEST_SET"] == "old" and "ZOO_TEST_UNSET" not in os.environ


def test_workers_share_a_compilation_cache_that_lives_as_long_as_the_pool(monkeypatch, tmp_path):
    """``spawned_pool``'s workers see one compilation-cache folder, new for the pool and removed with it (every
    command starts cold); a user's own JAX_COMPILATION_CACHE_DIR is passed on untouched."""
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    with _workers.spawned_pool(2) as pool:
        seen = {pool.submit(os.getenv, "JAX_COMPILATION_CACHE_DIR").result() for _ in range(4)}
        assert len(seen) == 1 and None not in seen
        folder = seen.pop()
        assert os.path.isdir(folder)
    assert not os.path.exists(folder)
    assert "JAX_COMPILATION_CACHE_DIR" not in os.environ          # this process's own environment as it was
    own = tmp_path / "my-cache"
    own.mkdir()
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(own))
    with _workers.spawned_pool(1) as pool:
        assert pool.submit(os.getenv, "JAX_COMPILATION_CACHE_DIR").result() == str(own)
    assert own.is_dir()


def test_a_killed_commands_cache_folder_is_removed_by_the_next_one(tmp_path):
    """A command killed before its cleanup leaves its cache folder; the next pool removes it (its process is gone),
    never a live command's."""
    import subprocess
    import sys
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    orphan = tmp_path / f"zoo-jax-cache-{int(dead.stdout)}-abc"
    live = tmp_path / f"zoo-jax-cache-{os.getpid()}-def"
    other = tmp_path / "zoo-jax-cache-notapid-ghi"
    for folder in (orphan, live, other):
        folder.mkdir()
    _workers.remove_orphaned_caches(tmp_path)
    assert not orphan.exists() and live.exists() and other.exists()
