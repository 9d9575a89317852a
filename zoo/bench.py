"""Benchmarks against named peers (``zoo bench [NAME]``), each against its goal.

Register one with ``@register_benchmark("gmm", peer="scikit-learn GaussianMixture", goals=(Goal(...),))``: the
function takes ``fast: bool`` and returns a dict of measured figures (times in seconds, ratios zoo/peer, compile
time apart). Benchmarks live beside the experiments (``zoo/experiments/bench/``); rules: measure after JIT
compilation, both sides single-threaded (``zoo bench`` sets ``OMP_NUM_THREADS=1`` and XLA's single-thread flags
before JAX starts), the same data and initialization for both.

Every benchmark names the ratios it is judged by (``Goal``: a key of its result, a direction and a bound), so
``zoo bench`` ends with one table (benchmark, peer, ratio, goal, met / not met) and ``--history`` keeps one row per
version in ``docs/benchmarks.md``: a regression is seen the day it lands. Ratios only, measured in one run with
the same thread settings on both sides: absolute times on a shared machine move with its load, ratios much less.
"""
from __future__ import annotations

import datetime
import math
import pathlib
import time
from typing import Callable, NamedTuple

from zoo.core.discovery import import_submodules

__all__ = ["Goal", "GoalRow", "register_benchmark", "benchmarks", "goals", "missing_requirements", "timeit_best",
           "goal_rows", "goal_table", "record_history"]


class Goal(NamedTuple):
    """The bound a benchmark's ratio must meet: ``metric`` (a key of the benchmark's result), ``op`` ("<=" for a
    time ratio zoo/peer, ">=" for a speed-up or an ESS-per-second ratio zoo/peer), ``bound``, and ``source`` (where
    the bound was set, e.g. "issue 35", or "parity" where no issue set one: at least as good as the peer)."""
    metric: str
    op: str
    bound: float
    label: str
    source: str = "parity"


class GoalRow(NamedTuple):
    benchmark: str
    peer: str
    label: str
    ratio: float | None
    goal: str
    met: bool | None      # None: the benchmark did not report the ratio (not run, or the peer failed)


_BENCHMARKS: dict[str, tuple[Callable, str]] = {}
_GOALS: dict[str, tuple[Goal, ...]] = {}
_REQUIRES: dict[str, tuple[str, ...]] = {}


def register_benchmark(name: str, peer: str, goals: tuple[Goal, ...] = (), requires: tuple[str, ...] = ()):
    """``requires``: importable names of the optional packages the peer needs (the ``[bench]`` extra), checked by
    ``zoo bench`` before anything runs."""
    for goal in goals:
        if goal.op not in ("<=", ">="):
            raise ValueError(f"goals: op must be '<=' or '>=', got {goal.op!r} for {goal.metric!r}")

    def decorate(fn):
        if name in _BENCHMARKS:
            raise ValueError(f"benchmark {name!r} registered twice")
        _BENCHMARKS[name] = (fn, peer)
        _GOALS[name] = tuple(goals)
        _REQUIRES[name] = tuple(requires)
        return fn
    return decorate


def benchmarks() -> dict[str, tuple[Callable, str]]:
    import_submodules("zoo.experiments.bench")  # their @register_benchmark decorators fill the table
    return dict(sorted(_BENCHMARKS.items()))


def missing_requirements(name: str) -> tuple[str, ...]:
    """The optional packages benchmark ``name`` needs that are not installed (empty when it can run)."""
    import importlib.util
    benchmarks()
    return tuple(module for module in _REQUIRES.get(name, ()) if importlib.util.find_spec(module) is None)


def goals() -> dict[str, tuple[Goal, ...]]:
    """Benchmark name -> its goals (every registered benchmark, possibly with none)."""
    benchmarks()
    return dict(sorted(_GOALS.items()))


def timeit_best(fn: Callable[[], object], repeats: int = 5) -> float:
    """Best wall time of ``repeats`` calls of ``fn`` (which must block until its result is ready)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _number(value) -> float | None:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def goal_rows(results: dict[str, dict], peers: dict[str, str] | None = None) -> list[GoalRow]:
    """One row per goal of every benchmark in ``results`` (name -> the dict it returned); a benchmark without
    goals gets one row saying so, so nothing run is left out of the table."""
    table = goals()
    peers = peers if peers is not None else {name: peer for name, (_, peer) in benchmarks().items()}
    rows = []
    for name, result in results.items():
        marks = table.get(name, ())
        if not marks:
            rows.append(GoalRow(name, peers.get(name, ""), "(no ratio goal: figures in bench.json)", None, "-", None))
        for goal in marks:
            ratio = _number(result.get(goal.metric)) if isinstance(result, dict) else None
            met = None if ratio is None else (ratio <= goal.bound if goal.op == "<=" else ratio >= goal.bound)
            rows.append(GoalRow(name, peers.get(name, ""), goal.label, ratio,
                                f"{goal.op} {goal.bound:g} ({goal.source})", met))
    return rows


def _met(row: GoalRow) -> str:
    return "not reported" if row.met is None and row.goal != "-" else ("-" if row.met is None else
                                                                         ("met" if row.met else "NOT MET"))


def goal_table(rows: list[GoalRow]) -> str:
    """The rows as a Markdown table: benchmark, peer, ratio, goal, met / not met."""
    lines = ["| benchmark | peer | ratio | value | goal | met |", "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        value = "-" if r.ratio is None else f"{r.ratio:.3g}"
        lines.append(f"| {r.benchmark} | {r.peer} | {r.label} | {value} | {r.goal} | {_met(r)} |")
    return "\n".join(lines)


HISTORY_HEADER = ("<!-- history: one row per version of main, written by "
                  "`zoo bench --fast --history docs/benchmarks.md` -->")


def record_history(path: str | pathlib.Path, rows: list[GoalRow], version: str, note: str = "") -> None:
    """Add (or replace) the row of ``version`` in the history table of ``path`` (a Markdown file whose table
    follows ``HISTORY_HEADER``; created when missing): date, version, one column per goal (value and a mark when
    not met), the machine's note (e.g. its load). Columns are the goals ever recorded, in a fixed order."""
    path = pathlib.Path(path)
    text = path.read_text() if path.exists() else f"# Benchmarks\n\n{HISTORY_HEADER}\n"
    if HISTORY_HEADER not in text:
        text = text.rstrip("\n") + f"\n\n{HISTORY_HEADER}\n"
    head, _, tail = text.partition(HISTORY_HEADER)
    table_lines, rest = [], []
    for i, line in enumerate(tail.lstrip("\n").splitlines()):
        if line.startswith("|") and not rest:
            table_lines.append(line)
        else:
            rest = tail.lstrip("\n").splitlines()[i:]
            break
    columns = [c.strip() for c in table_lines[0].strip("|").split("|")][2:-1] if table_lines else []
    old_rows = [[c.strip() for c in line.strip("|").split("|")] for line in table_lines[2:]]
    for r in rows:
        if r.ratio is not None and f"{r.benchmark}: {r.label}" not in columns:
            columns.append(f"{r.benchmark}: {r.label}")
    values = {f"{r.benchmark}: {r.label}": (f"{r.ratio:.3g}" + ("" if r.met in (True, None) else " (not met)"))
              for r in rows if r.ratio is not None}
    new = [datetime.date.today().isoformat(), version] + [values.get(c, "") for c in columns] + [note]
    kept = [row for row in old_rows if len(row) > 1 and row[1] != version]
    width = len(columns) + 3
    body = ["| date | version | " + " | ".join(columns) + " | machine |", "|" + " --- |" * width]
    for row in kept + [new]:
        row = row[:-1][:width - 1] + [""] * (width - len(row)) + row[-1:] if len(row) < width else row
        body.append("| " + " | ".join(row) + " |")
    after = "\n" + "\n".join(rest) + "\n" if rest else ""
    path.write_text(head + HISTORY_HEADER + "\n" + "\n".join(body) + "\n" + after)
