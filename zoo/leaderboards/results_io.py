"""The measured rows of long runs as JSON-lines files: one row per finished piece of work, appended and flushed at
once, so a run killed part-way keeps (and a rerun reuses) what it finished.

A leaf module (standard library only): the leaderboard driver (``board``), the Corel5k standard split
(``corel5k_standard``) and the MIL protocol (``zoo.experiments.mil_protocol``) all read and write their rows here
without importing one another or anything numerical.
"""
from __future__ import annotations

import json
import pathlib
from typing import Callable

__all__ = ["read_results", "row_appender"]


def read_results(path) -> list[dict]:
    """The rows of a JSON-lines ``path`` ([] when it does not exist). A truncated last line (a run killed while
    writing it) is dropped: reading stops at the first line that is not JSON."""
    path = pathlib.Path(path)
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return rows


def row_appender(path) -> Callable[[dict], None]:
    """A function appending one row as a JSON line to ``path`` (folders created; the file opened, written and
    closed per row, so each finished row is on disk). A half-written last line left by a killed run is cut off
    first, so the next row starts on a line of its own."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        text = path.read_text()
        if text and not text.endswith("\n"):
            path.write_text(text[: text.rfind("\n") + 1])

    def append(row: dict) -> None:
        with path.open("a") as f:
            f.write(json.dumps(row) + "\n")
    return append
