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


def test_papers_side_by_side_give_the_same_index_and_say_what_failed(fake_papers, tmp_path, capfd):
    out = tmp_path / "reports"
    assert reproduce_module.reproduce_papers("all", out, fast=True, jobs=2) == 1  # beta raised
    console = capfd.readouterr()
    text = (out / "index.md").read_text()
    assert "alpha (2000): a paper" in text and "gamma (2000): a paper" in text
    assert "beta: FAILED" in text and "RuntimeError: boom in beta" in text
    for name in ("alpha", "gamma"):
        assert (out / name / "report.md").exists()
        note = next(n for n in (out / name / "report.md").read_text().splitlines() if "pid=" in n)
        assert f"pid={os.getpid()}" not in note, "the paper ran in this process, not in a worker"
        assert "fast=True" in note
        # the whole console, progress bar included, in the paper's folder
        log = (out / name / "console.log").read_bytes().decode()
        assert f"fitting {name}" in log and "progress 1/2\rprogress 2/2" in log
        # on the terminal: prefixed lines, a progress bar's last state only
        assert f"[{name}] fitting {name}" in console.out
        assert f"[{name}] progress 2/2" in console.err and "progress 1/2" not in console.err
    assert "zoo reproduce: failed: beta" in console.err
    assert "2 papers at a time" in console.out


def test_a_worker_is_single_threaded_unless_the_user_said_otherwise(fake_papers, tmp_path, monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    env = _workers.single_threaded_env()
    assert env["OMP_NUM_THREADS"] == "1" and "--xla_cpu_multi_thread_eigen=false" in env["XLA_FLAGS"]
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert "OMP_NUM_THREADS" not in _workers.single_threaded_env()
    # the user's thread count reaches the workers; this process's environment is left as it was
    assert reproduce_module.reproduce_papers("all", tmp_path / "reports", fast=False, jobs=2) == 1
    assert "threads=3 fast=False" in (tmp_path / "reports" / "alpha" / "report.md").read_text()
    assert os.environ["OMP_NUM_THREADS"] == "3" and "XLA_FLAGS" not in os.environ


def test_longest_paper_of_the_last_run_starts_first(tmp_path):
    import json
    (tmp_path / "index.json").write_text(json.dumps({
        "alpha": {"seconds": 10.0, "mode": "fast"}, "beta": {"seconds": 300.0, "mode": "fast"},
        "gamma": {"seconds": 999.0, "mode": "full"}}))
    # gamma was timed only in the full mode: unknown for --fast, so it starts first
    assert reproduce_module._longest_first(["alpha", "beta", "gamma"], tmp_path, fast=True) == ["gamma", "beta",
                                                                                                "alpha"]
    assert reproduce_module._longest_first(["alpha", "beta"], tmp_path / "none", fast=True) == ["alpha", "beta"]


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
