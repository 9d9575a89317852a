"""``zoo reproduce PAPER|all``: run the experiment modules, time them, write ``index.md`` and ``index.html``.

Every module of ``zoo.experiments`` (not starting with "_") that has ``reproduce(out_dir, fast)`` is a paper; its
``reproduce`` writes figures into ``out_root/<paper>/`` and returns a :class:`zoo.reports.PaperReport`.

With ``jobs`` > 1 the papers run side by side in that many worker processes (``reproduce_papers``), each
single-threaded (OMP_NUM_THREADS=1, XLA's Eigen pool off): the papers are independent programs, and on a few cores
one single-threaded process per core finishes sooner than one process that keeps a second core busy only part of
the time. Each worker's console lines come back prefixed with the paper's name (a progress bar shows its last
state per line), and the whole console of a paper, progress bars included, is kept in ``<paper>/console.log``.
"""
from __future__ import annotations

import concurrent.futures
import importlib
import io
import pathlib
import resource
import sys
import time
import traceback
import warnings

from zoo.core import workers as _workers
from zoo.core.convergence import ConvergenceWarning
from zoo.core.discovery import import_submodules
from zoo.reports import (PaperReport, Section, Table, format_seconds, run_context, update_manifest,
                         verify_claims_markdown, write_index_html, write_index_markdown,
                         write_paper_markdown)

__all__ = ["experiment_modules", "reproduce_papers", "run_paper", "default_jobs"]


def experiment_modules() -> dict:
    """{name: module} of the experiment modules with a ``reproduce`` function, sorted by name."""
    return {name: module for name, module in import_submodules("zoo.experiments").items()
            if hasattr(module, "reproduce")}


def _convergence_note(caught: list, fast: bool) -> str:
    """One note on the fits whose chains failed zoo.fit's convergence checks, with the sites named."""
    sites = sorted({site for w in caught for site in getattr(w.message, "sites", ())})
    setting = "the --fast settings' short chains" if fast else "these settings"
    return (f"{len(caught)} MCMC fit(s) did not pass the convergence checks (r-hat < 1.01, bulk and tail ESS >= 100 "
            f"per chain; Vehtari et al. 2021) with {setting}; "
            f"sites concerned: {', '.join(sites) or 'see fit.diagnose()'}. "
            f"Their numbers carry Monte Carlo error beyond what the tables show.")


def _failure_report(name: str, error: BaseException) -> PaperReport:
    """The report of a reproduction that raised: the error, so that the index says what failed."""
    last = traceback.format_exception_only(type(error), error)[-1].strip()
    table = Table("Error", ["paper", "error"], [[name, last]], note="The traceback was printed to stderr.")
    return PaperReport(paper=name, title=f"{name}: FAILED", sections=[Section("Error", [table])],
                       notes=[f"the reproduction raised {type(error).__name__}; nothing after it was run"],
                       status="not", status_reason=f"the run failed: {last}")


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and of its finished child processes (a paper that segments
    images in worker processes counts them): beside the wall time, a measure that load on a shared machine does
    not inflate much."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def run_paper(name: str, module, out_root: pathlib.Path, fast: bool) -> tuple[PaperReport, bool]:
    """Run one paper's ``reproduce`` into ``out_root/name`` and time it; (report, succeeded). An exception is
    printed and turned into a report saying so (the other papers still run)."""
    report, ok, _ = _timed_run_paper(name, module, out_root, fast)
    return report, ok


def _timed_run_paper(name: str, module, out_root: pathlib.Path, fast: bool) -> tuple[PaperReport, bool, float]:
    """:func:`run_paper` and the CPU seconds it took."""
    cpu0 = cpu_seconds()
    out = pathlib.Path(out_root) / name
    out.mkdir(parents=True, exist_ok=True)
    print(f"=== reproduce {name} ({'fast' if fast else 'full'}) -> {out}", flush=True)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        # convergence checks of the experiments' (short) chains are findings for the report, not console noise;
        # every other warning is shown as it would be
        warnings.simplefilter("always", ConvergenceWarning)
        try:
            report = module.reproduce(out, fast=fast)
            ok = True
        except Exception as error:  # noqa: BLE001 - reported in the index and on stderr, the run returns 1
            traceback.print_exc()
            report, ok = _failure_report(name, error), False
    convergence = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    for w in caught:
        if not issubclass(w.category, ConvergenceWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if not isinstance(report, PaperReport):
        report = PaperReport(paper=name, title=name, notes=["this experiment returned no PaperReport"])
    if convergence:
        report.notes.append(_convergence_note(convergence, fast))
    report.seconds = time.perf_counter() - t0
    path = write_paper_markdown(report, out)
    for problem in verify_claims_markdown(path.read_text()):
        # a claim quoting a number its table does not show is a bug of the experiment module: said, not hidden
        print(f"zoo reproduce {name}: claims table: {problem}", file=sys.stderr)
        report.notes.append(f"claims table inconsistent: {problem}")
    cpu = cpu_seconds() - cpu0
    print(f"=== {name} done in {format_seconds(report.seconds)} (CPU {format_seconds(cpu)})", flush=True)
    return report, ok, cpu


def reproduce_papers(paper: str, out_root: pathlib.Path, fast: bool, command: list[str] | None = None,
                     jobs: int = 1) -> int:
    """Reproduce ``paper`` (a module name of ``zoo.experiments``) or ``"all"`` into ``out_root``. The folder's
    index (``index.json``, rendered as ``index.md`` and ``index.html``) keeps one entry per paper: each run adds
    or replaces the entries of the papers it ran and keeps every other paper's (rewritten after every paper, so
    an interrupted run still has an index). Returns 0, 1 when a reproduction raised, 2 for an unknown paper
    (message on stderr). ``command``: the command line named in the index (default: this process's). ``jobs``:
    papers run at a time, each in a single-threaded worker process (1: one after the other in this process);
    the same experiments with the same seeds either way (a single-threaded worker may sum in another order than
    a threaded run, so a number can differ in its last digits)."""
    modules = experiment_modules()
    if paper != "all" and paper not in modules:
        print(f"zoo reproduce: unknown paper {paper!r}; known: {', '.join(modules)}, all", file=sys.stderr)
        return 2
    names = list(modules) if paper == "all" else [paper]
    out_root = pathlib.Path(out_root)
    out_root.mkdir(parents=True, exist_ok=True)
    reports, failed = {}, []
    context = run_context(command)
    jobs = max(1, min(int(jobs), len(names)))
    cpu = {}
    t0 = time.perf_counter()
    if jobs == 1:
        runs = ((name, _timed_run_paper(name, modules[name], out_root, fast)) for name in names)
    else:
        runs = _run_in_workers({name: modules[name] for name in names}, out_root, fast, jobs)
    for name, (report, ok, cpu[name]) in runs:
        reports[name] = report
        if not ok:
            failed.append(name)
        entries = update_manifest(report, out_root, context, fast)
        write_index_markdown(entries, out_root)
        write_index_html(entries, out_root)
    print("stage times:" if jobs == 1 else f"stage times ({jobs} papers at a time, each in its own process):")
    for report in (reports[name] for name in names):
        print(f"  {report.paper:<14} {format_seconds(report.seconds)} (CPU {format_seconds(cpu[report.paper])})")
        for section in report.sections:
            print(f"    {section.title:<60} {format_seconds(section.seconds)}")
    total_cpu = sum(c for c in cpu.values() if c is not None)
    print(f"  {'all':<14} {format_seconds(time.perf_counter() - t0)} (CPU {format_seconds(total_cpu)})")
    print(f"reports: {out_root / 'index.html'} (self-contained) and {out_root / 'index.md'}")
    if failed:
        print(f"zoo reproduce: failed: {', '.join(failed)} (see the tracebacks above)", file=sys.stderr)
        return 1
    return 0


# ------------------------------------------------------------------------------------- papers side by side
def default_jobs(n_papers: int) -> int:
    """Papers at a time for ``zoo reproduce`` when --jobs is not given: one per core, at most 4 and ``n_papers``."""
    return _workers.default_jobs(n_papers)


#: Seconds of each paper's ``--fast`` stage in a measured main job (issue 35, 2 idle cores; ross03's and kueck04's
#: projected from their profiled savings; the next run measured kueck04 306, gustafson07 276, sbc 181, yakhnenko 83,
#: ross03 79: the same order but for the last two): only the order in which a first run (no index.json yet) starts the papers,
#: longest first. With two workers the order is the schedule: yakhnenko (once 300 s) ahead of sbc put sbc after
#: kueck04, 40 s past the other worker's end.
TYPICAL_FAST_SECONDS = {"kueck04": 388, "gustafson07": 313, "sbc": 200, "ross03": 95, "yakhnenko": 90,
                        "carbonetto03": 41, "leaderboard": 10, "regions": 4}


def _longest_first(names: list[str], out_root: pathlib.Path, fast: bool) -> list[str]:
    """``names`` ordered by the seconds each took in this folder's last run in the same mode (index.json; for
    --fast without one, ``TYPICAL_FAST_SECONDS``), longest first, papers never timed first: with a few workers,
    starting the long papers first ends the run soonest."""
    from zoo.reports import read_manifest
    try:
        entries = read_manifest(out_root)
    except Exception:  # noqa: BLE001 - an unreadable old index only loses the ordering hint
        entries = {}
    mode = "fast" if fast else "full"

    def last_seconds(name):
        entry = entries.get(name) or {}
        seconds = entry.get("seconds") if entry.get("mode") == mode else None
        if seconds is None and fast:
            seconds = TYPICAL_FAST_SECONDS.get(name)
        return float("inf") if seconds is None else float(seconds)
    return sorted(names, key=lambda name: -last_seconds(name))


class _PrefixedLines(io.TextIOBase):
    """A console stream of a worker: every complete line goes to ``stream`` with ``prefix`` in front (of a line
    rewritten with carriage returns, as a progress bar does, only its last state) and, as written, to ``log``."""

    def __init__(self, stream, prefix: str, log):
        self._stream, self._prefix, self._log, self._pending = stream, prefix, log, ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._log.write(text)
        *lines, self._pending = (self._pending + text).split("\n")
        for line in lines:
            shown = line.rsplit("\r", 1)[-1]
            if shown.strip():
                self._stream.write(f"{self._prefix}{shown}\n")
        self._stream.flush()
        return len(text)

    def flush(self) -> None:
        self._log.flush()
        self._stream.flush()


def _worker_run_paper(name: str, module_name: str, out_root: str, fast: bool) -> tuple[PaperReport, bool, float]:
    """In a worker process: import the paper's module and run it as :func:`run_paper` does, its console prefixed
    with the paper's name and kept whole in ``<paper>/console.log``."""
    out = pathlib.Path(out_root) / name
    out.mkdir(parents=True, exist_ok=True)
    prefix = f"[{name}] "
    with open(out / "console.log", "w", encoding="utf-8") as log:
        stdout, stderr = sys.stdout, sys.stderr
        sys.stdout = _PrefixedLines(sys.__stdout__, prefix, log)
        sys.stderr = _PrefixedLines(sys.__stderr__, prefix, log)
        try:
            return _timed_run_paper(name, importlib.import_module(module_name), pathlib.Path(out_root), fast)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            sys.stdout, sys.stderr = stdout, stderr


def _run_in_workers(modules: dict, out_root: pathlib.Path, fast: bool, jobs: int):
    """Yield (name, (report, ok, CPU seconds)) as the papers finish, ``jobs`` of them at a time in spawned
    single-threaded processes (``zoo.core.workers``). A worker that dies is reported as that paper's failure; the
    other papers go on."""
    order = _longest_first(list(modules), out_root, fast)
    print(f"=== {len(order)} papers, {jobs} at a time in single-threaded worker processes, longest first: "
          f"{', '.join(order)} (each paper's whole console: <out>/<paper>/console.log)", flush=True)
    with _workers.spawned_pool(jobs) as pool:
        futures = {pool.submit(_worker_run_paper, name, modules[name].__name__, str(out_root), fast): name
                   for name in order}
        for future in concurrent.futures.as_completed(futures):
            name = futures[future]
            try:
                result = future.result()
            except Exception as error:  # noqa: BLE001 - a worker that died: that paper failed, said so
                print(f"zoo reproduce {name}: the worker process failed: {error!r}", file=sys.stderr)
                result = (_failure_report(name, error), False, None)
            yield name, result
