"""``zoo leaderboard --jobs N``: the seeded splits side by side in N single-threaded worker processes.

The splits are independent (each its own seeded image split, every method fitted on it), so the leaderboard's
rows do not depend on how they are run: each worker runs ``leaderboard(..., only_splits=[seed])`` into its own
part file of rows (``<results>.split<seed>``, seeded with the rows of that split already in ``results``, so a
rerun resumes); the rows are then gathered into ``results`` and the caller's own ``leaderboard`` call reads every
row back (and runs in this process whatever a worker did not finish).
"""
from __future__ import annotations

import concurrent.futures
import json
import os
import pathlib
import sys

from zoo.core import workers

__all__ = ["run_splits_in_workers"]


def _part(results: pathlib.Path, seed: int) -> pathlib.Path:
    return results.with_name(f"{results.name}.split{seed}")


class _SplitLog:
    """A worker's log function: each line printed with its split in front (picklable, for the worker)."""

    def __init__(self, seed: int):
        self.seed = seed

    def __call__(self, message) -> None:
        print(f"[split {self.seed}] {message}", flush=True)


def _write_rows(path: pathlib.Path, rows: list[dict]) -> None:
    """``rows`` as JSON lines into ``path``, written beside and renamed (a reader never sees half a file)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text("".join(json.dumps(row) + "\n" for row in rows))
    os.replace(tmp, path)


def run_splits_in_workers(leaderboard, read_results, options: dict, splits: int, results, jobs: int) -> None:
    """Run splits 0..splits-1 of ``leaderboard(**options)`` in ``jobs`` spawned single-threaded workers, their rows
    appended to ``results`` (JSON lines). ``leaderboard``, ``read_results``: zoo.leaderboards.board's (passed
    in, so that this module imports nothing of the board). ``options``: leaderboard's arguments except splits,
    results, log. A worker that fails is said on stderr; its finished rows are kept and the rest is left to the
    caller's run."""
    results = pathlib.Path(results)
    results.parent.mkdir(parents=True, exist_ok=True)
    previous = read_results(results)
    seeds = list(range(int(splits)))
    for seed in seeds:
        # each worker resumes from the rows its split already has (and those of a killed parallel run's part file)
        rows = [r for r in previous if r.get("split") == seed]
        seen = {json.dumps(r, sort_keys=True) for r in rows}
        rows += [r for r in read_results(_part(results, seed)) if json.dumps(r, sort_keys=True) not in seen]
        _write_rows(_part(results, seed), rows)
    print(f"zoo leaderboard: {len(seeds)} splits, {jobs} at a time in single-threaded worker processes", flush=True)
    try:
        with workers.spawned_pool(jobs) as pool:
            futures = {pool.submit(leaderboard, **options, splits=int(splits), only_splits=[seed],
                                   results=str(_part(results, seed)), log=_SplitLog(seed)): seed
                       for seed in seeds}
            for future in concurrent.futures.as_completed(futures):
                try:
                    future.result()
                except Exception as error:  # noqa: BLE001 - said; the caller's run redoes what is missing
                    print(f"zoo leaderboard: split {futures[future]}'s worker failed: {error!r}", file=sys.stderr)
    finally:
        gathered = [r for r in previous if r.get("split") not in seeds]
        for seed in seeds:
            gathered += read_results(_part(results, seed))
        _write_rows(results, gathered)
        for seed in seeds:
            _part(results, seed).unlink(missing_ok=True)
