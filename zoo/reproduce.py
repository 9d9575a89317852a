"""``zoo reproduce PAPER|all``: run the experiment modules, time them, write ``index.md`` and ``index.html``.

Every module of ``zoo.experiments`` (not starting with "_") that has ``reproduce(out_dir, fast)`` is a paper; its
``reproduce`` writes figures into ``out_root/<paper>/`` and returns a :class:`zoo.reports.PaperReport`.
"""
from __future__ import annotations

import pathlib
import sys
import time
import traceback
import warnings

from zoo.core.convergence import ConvergenceWarning
from zoo.core.discovery import import_submodules
from zoo.reports import (PaperReport, Section, Table, format_seconds, run_context, update_manifest,
                         verify_claims_markdown, write_index_html, write_index_markdown,
                         write_paper_markdown)

__all__ = ["experiment_modules", "reproduce_papers", "run_paper"]


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


def run_paper(name: str, module, out_root: pathlib.Path, fast: bool) -> tuple[PaperReport, bool]:
    """Run one paper's ``reproduce`` into ``out_root/name`` and time it; (report, succeeded). An exception is
    printed and turned into a report saying so (the other papers still run)."""
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
    print(f"=== {name} done in {format_seconds(report.seconds)}", flush=True)
    return report, ok


def reproduce_papers(paper: str, out_root: pathlib.Path, fast: bool, command: list[str] | None = None) -> int:
    """Reproduce ``paper`` (a module name of ``zoo.experiments``) or ``"all"`` into ``out_root``. The folder's
    index (``index.json``, rendered as ``index.md`` and ``index.html``) keeps one entry per paper: each run adds
    or replaces the entries of the papers it ran and keeps every other paper's (rewritten after every paper, so
    an interrupted run still has an index). Returns 0, 1 when a reproduction raised, 2 for an unknown paper
    (message on stderr). ``command``: the command line named in the index (default: this process's)."""
    modules = experiment_modules()
    if paper != "all" and paper not in modules:
        print(f"zoo reproduce: unknown paper {paper!r}; known: {', '.join(modules)}, all", file=sys.stderr)
        return 2
    names = list(modules) if paper == "all" else [paper]
    out_root = pathlib.Path(out_root)
    out_root.mkdir(parents=True, exist_ok=True)
    reports, failed = [], []
    context = run_context(command)
    for name in names:
        report, ok = run_paper(name, modules[name], out_root, fast)
        reports.append(report)
        if not ok:
            failed.append(name)
        entries = update_manifest(report, out_root, context, fast)
        write_index_markdown(entries, out_root)
        write_index_html(entries, out_root)
    print("stage times:")
    for report in reports:
        print(f"  {report.paper:<14} {format_seconds(report.seconds)}")
        for section in report.sections:
            print(f"    {section.title:<60} {format_seconds(section.seconds)}")
    print(f"reports: {out_root / 'index.html'} (self-contained) and {out_root / 'index.md'}")
    if failed:
        print(f"zoo reproduce: failed: {', '.join(failed)} (see the tracebacks above)", file=sys.stderr)
        return 1
    return 0
