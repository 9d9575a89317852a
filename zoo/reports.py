"""Reports a person can read: the tables and figures of ``zoo reproduce`` as small dataclasses, ONE Markdown
table writer for the whole zoo, and the two index writers (``index.md`` and a self-contained ``index.html``).

An experiment module's ``reproduce(out_dir, fast)`` returns a :class:`PaperReport`: its sections in order, each a
list of :class:`Table` and :class:`Figure` items and the seconds the stage took. ``zoo.reproduce`` times the papers
and writes the indexes. Nothing here depends on anything beyond the standard library and matplotlib.
"""
from __future__ import annotations

import base64
import dataclasses
import html
import math
import os
import pathlib
import re
from typing import Any, Sequence, Union

__all__ = ["Table", "Figure", "Section", "PaperReport", "Claim", "Unconverged", "mark", "claims_table",
           "format_number", "format_percent", "markdown_table", "save_figure", "paper_markdown",
           "write_paper_markdown", "print_section", "format_seconds", "write_index_markdown", "write_index_html",
           "format_frame", "format_setting", "run_context", "read_manifest", "update_manifest",
           "verify_claims_markdown", "MIN_DPI", "UNCONVERGED_MARK"]

MIN_DPI = 100
MIN_SIZE_INCHES = (6.0, 4.0)


#: the mark of a number computed from chains that failed their convergence checks (r-hat, ESS)
UNCONVERGED_MARK = "(unconverged)"


@dataclasses.dataclass(frozen=True)
class Unconverged:
    """A table cell whose number comes from MCMC chains that did not pass ``fit.diagnose()``: shown with
    ``UNCONVERGED_MARK`` in the cell itself, so that no reader takes it for a converged estimate."""

    value: Any


def mark(value: Any, converged: bool) -> Any:
    """``value`` as it is when ``converged``, else wrapped in :class:`Unconverged`."""
    return value if converged else Unconverged(value)


@dataclasses.dataclass
class Claim:
    """A paper's claim checked against the zoo's own numbers.

    ``quote``: what the paper says (quoted as the paper's); ``table``: the title of the report's table holding the
    zoo's numbers; ``zoo``: {row label (the first cell of a row of that table): the number in that row that the
    claim is about}; ``paper``: the paper's numbers under the same labels (None where it gives only an ordering or
    a plot); ``order``: the paper's ordering of the labels, best first (None: no ordering claimed);
    ``higher_is_better``; ``tolerance``: the largest |zoo - paper| that still counts as agreement; ``why``: the
    explanation of a gap (a gap over the tolerance or a different ordering without one is reported as such)."""

    quote: str
    table: str
    zoo: dict
    paper: dict | None = None
    order: Sequence[str] | None = None
    higher_is_better: bool = True
    tolerance: float | None = None
    why: str = ""

    def zoo_order(self) -> list[str]:
        """The labels ordered by the zoo's numbers, best first."""
        values = {k: float(getattr(v, "value", v)) for k, v in self.zoo.items()}
        return sorted(values, key=lambda k: -values[k] if self.higher_is_better else values[k])

    def gaps(self) -> dict:
        """{label: zoo - paper} for the labels with both numbers."""
        if not self.paper:
            return {}
        return {k: float(getattr(self.zoo[k], "value", self.zoo[k])) - float(v) for k, v in self.paper.items()
                if k in self.zoo and v is not None}

    def verdict(self) -> str:
        """"agrees", "agrees (ordering)" or "differs: ..." from the numbers (never from the text)."""
        problems = []
        if self.order is not None:
            paper_order = [k for k in self.order if k in self.zoo]
            zoo_order = [k for k in self.zoo_order() if k in paper_order]
            sign = " > " if self.higher_is_better else " < "
            if zoo_order != paper_order:
                problems.append(f"ordering: paper {sign.join(paper_order)}, zoo {sign.join(zoo_order)}")
        if self.tolerance is not None:
            over = {k: g for k, g in self.gaps().items() if abs(g) > self.tolerance}
            if over:
                problems.append("gap over " + format_number(float(self.tolerance)) + ": "
                                + ", ".join(f"{k} {g:+.3g}" for k, g in over.items()))
        unconverged = any(isinstance(v, Unconverged) for v in self.zoo.values())
        if not problems:
            # the numbers agree but some come from chains that failed their checks: not settled either way
            return "not settled: agrees, but from unconverged chains" if unconverged else "agrees"
        return "differs: " + "; ".join(problems) + ("; from unconverged chains" if unconverged else "")

    def agrees(self) -> bool:
        return self.verdict() == "agrees"

    def standing(self) -> str:
        """How the claim counts in the paper's outcome: "agrees" or "differs" from converged numbers, or, where
        some of its numbers come from chains that failed their checks, "unsettled: agrees" / "unsettled: differs"
        (either way the verdict could turn once the chains converge)."""
        verdict = self.verdict()
        if any(isinstance(v, Unconverged) for v in self.zoo.values()):
            return "unsettled: " + ("agrees" if verdict.startswith("not settled") else "differs")
        return "agrees" if verdict == "agrees" else "differs"


CLAIMS_HEADER = ["the paper says", "zoo's numbers", "from table", "paper's numbers", "verdict", "why the gap"]
CLAIMS_TITLE = "Claims checked against the zoo's numbers"


def claims_table(claims: Sequence[Claim]) -> Table:
    """The claims of a report as one table: the paper's claim, the zoo's numbers and the table they are quoted
    from, the paper's numbers, the verdict computed from them, and the line explaining a gap."""
    rows = []
    for c in claims:
        zoo = "; ".join(f"{k} = {format_number(v)}" for k, v in c.zoo.items())
        paper = "; ".join(f"{k} = {format_number(v)}" for k, v in (c.paper or {}).items()) or "-"
        verdict = c.verdict()
        why = c.why or ("-" if verdict == "agrees" else "no explanation found: an open gap")
        rows.append([f"\u201c{c.quote}\u201d", zoo, c.table, paper, verdict, why])
    return Table(CLAIMS_TITLE, CLAIMS_HEADER, rows,
                 note="Each claim is the paper's; the verdict compares the zoo's numbers quoted from the named "
                      "table (orderings explicitly; numbers within the stated tolerance).")


def _markdown_tables(text: str) -> dict:
    """{heading: rows (lists of cell strings, header first)} of every table under a Markdown heading."""
    tables, heading, rows = {}, None, None
    for line in text.splitlines() + [""]:
        if line.startswith("#"):
            heading, rows = line.lstrip("#").strip(), None
        elif line.startswith("|") and heading is not None:
            if rows is None:
                rows = tables.setdefault(heading, [])
            if not set(line.replace("|", "").strip()) <= {"-"}:
                cells = [c.strip().replace("\\|", "|") for c in line.strip().strip("|").split(" | ")]
                rows.append(cells)
        else:
            rows = None
    return tables


_QUOTED_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(\s*%)?")


def _quote_numbers(quote: str) -> set:
    """The numbers a quote holds, each as ``format_number`` writes it (a percentage also as its fraction: the
    thesis' "8 %" is the acceptance rate 0.0800)."""
    numbers = set()
    for digits, percent in _QUOTED_NUMBER.findall(quote):
        value = float(digits) if "." in digits else int(digits)
        numbers.add(format_number(value))
        if percent:
            numbers.add(format_number(value / 100))
    return numbers


def verify_claims_markdown(text: str) -> list[str]:
    """Read a report's claims table (Markdown) against the tables it quotes and against its own quotes: every
    "label = number" of the zoo's numbers must be the number shown in the row of that label (its first cell) of
    the named table; every "label = number" of the paper's numbers must name a label of the zoo's numbers and be
    a number the quote holds; and where a quote gives a number right after a label of the zoo's numbers
    ("FULL 30"), the paper's numbers must not be left empty ("-"); and a claim that agrees must not explain a gap
    as unexplained. Returns the problems found."""
    tables = _markdown_tables(text)
    problems = []
    for row in tables.get(CLAIMS_TITLE, [])[1:]:
        quote, quoted, source, paper, verdict, why = row[:6]
        claim = f"claim {quote[:60]}"
        if verdict == "agrees" and ("not explained" in why.lower() or "open gap" in why):
            problems.append(f"{claim}: agrees, yet its why-the-gap line says a gap is unexplained")
        labels = [pair.rpartition(" = ")[0] for pair in quoted.split("; ")]
        if paper == "-":
            for label in labels:
                given = re.search(r"(?<![\w-])" + re.escape(label) + r"\s+(\d+(?:\.\d+)?)", quote)
                if given:
                    problems.append(f"{claim}: the quote gives {label} {given.group(1)} but the paper's numbers "
                                    "column is empty")
        else:
            in_quote = _quote_numbers(quote)
            for pair in paper.split("; "):
                label, _, number = pair.rpartition(" = ")
                if label not in labels:
                    problems.append(f"{claim}: the paper's number for {label!r}, a label not among the zoo's")
                elif number not in in_quote:
                    problems.append(f"{claim}: the paper's {label} = {number} is not a number of its quote")
        if source not in tables:
            problems.append(f"{claim}: table {source!r} not in the report")
            continue
        by_label = {r[0]: r[1:] for r in tables[source][1:]}
        for pair in quoted.split("; "):
            label, _, number = pair.rpartition(" = ")
            number = number.replace(" " + UNCONVERGED_MARK, "")
            if label not in by_label:
                problems.append(f"{claim}: no row {label!r} in table {source!r}")
            elif not any(number in cell.replace("±", " ").split() for cell in by_label[label]):
                problems.append(f"{claim}: {label} = {number} not in its row {by_label[label]} of "
                                f"table {source!r}")
    return problems


@dataclasses.dataclass
class Table:
    """A table: ``header`` (column names), ``rows`` (cells: numbers, strings or None) and a ``note`` under it
    (settings, and one line for each large gap to the paper)."""

    title: str
    header: Sequence[str]
    rows: list[Sequence[Any]]
    note: str = ""


@dataclasses.dataclass
class Figure:
    """A saved PNG (``path``), its title and a caption saying what it shows."""

    title: str
    path: pathlib.Path
    caption: str = ""


Item = Union[Table, Figure]


@dataclasses.dataclass
class Section:
    """One stage of a reproduction: its tables and figures in order, and the seconds it took (None: not timed)."""

    title: str
    items: list[Item] = dataclasses.field(default_factory=list)
    seconds: float | None = None
    note: str = ""


@dataclasses.dataclass
class PaperReport:
    """Everything one paper's reproduction shows: ``paper`` (the experiment module's name), ``title`` (the paper),
    ``sections`` in order, ``seconds`` (the whole reproduction, set by ``zoo.reproduce``) and ``notes``
    (what was run and what was not, data substitutes)."""

    paper: str
    title: str
    sections: list[Section] = dataclasses.field(default_factory=list)
    seconds: float | None = None
    notes: list[str] = dataclasses.field(default_factory=list)
    claims: list[Claim] = dataclasses.field(default_factory=list)
    #: "reproduced", "partly", "unsettled" or "not", with a one-line reason; empty: derived from the claims
    #: (``outcome``)
    status: str = ""
    status_reason: str = ""
    #: the run's settings worth a line in the index (seeds, sizes, data used)
    settings: dict = dataclasses.field(default_factory=dict)

    def outcome(self) -> tuple[str, str]:
        """("reproduced" | "partly" | "unsettled" | "not", reason): the experiment's own statement when it set one,
        else from the claims' standings (``Claim.standing``): all agree: reproduced; none differs from converged
        numbers but some rest on unconverged chains: unsettled (neither a success nor a failure); some differ from
        converged numbers: partly when any agrees from converged numbers, else not. The reason counts each kind,
        so that a claim resting on unconverged chains never reads as a failed or a reproduced one."""
        if self.status:
            return self.status, self.status_reason
        if not self.claims:
            return "partly", "no claim of the paper checked by this run"
        standings = [c.standing() for c in self.claims]
        n, agree, differ = len(standings), standings.count("agrees"), standings.count("differs")
        loose = {"agree": standings.count("unsettled: agrees"), "differ": standings.count("unsettled: differs")}

        def count(k: int, verb: str) -> str:
            return f"{k} {verb}{'s' if k == 1 else ''}"
        if agree == n:
            return "reproduced", f"{n} of {n} claims agree with the zoo's numbers"
        if not differ:
            kinds = [verb for verb, k in loose.items() if k]
            lead = (f"{n - agree} of {n} claims {kinds[0]} only from unconverged chains" if len(kinds) == 1 else
                    f"{n - agree} of {n} claims rest on unconverged chains ({count(loose['agree'], 'agree')}, "
                    f"{count(loose['differ'], 'differ')})")
            return "unsettled", lead + (f"; {count(agree, 'agree')} from converged numbers" if agree else "")
        reason = f"{agree} of {n} claims agree with the zoo's numbers; {count(differ, 'differ')}"
        reason += "".join(f"; {count(k, verb)} only from unconverged chains" for verb, k in loose.items() if k)
        return ("partly" if agree else "not"), reason

    def add(self, section: Section) -> Section:
        """Append ``section`` and return it."""
        self.sections.append(section)
        return section


# ----------------------------------------------------------------------------------------------- formatting
def format_number(value: Any) -> str:
    """One format for every cell of every table: None -> "-", NaN -> "n/a", ints as they are, floats with three
    significant figures (0.838, 3.40, 98.3, 1235), in scientific notation below 1e-4 and from 1e6 on (1.23e-05);
    an :class:`Unconverged` value with its mark; anything else (strings: preformatted cells) by ``str``. Quantities
    with their own unit keep it in the caller: percentages one decimal (``format_percent``), seconds
    ``format_seconds``."""
    if value is None:
        return "-"
    if isinstance(value, Unconverged):
        return f"{format_number(value.value)} {UNCONVERGED_MARK}"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) or (hasattr(value, "dtype") and getattr(value.dtype, "kind", "") in "iu"):
        return str(int(value))
    if isinstance(value, float) or (hasattr(value, "dtype") and getattr(value.dtype, "kind", "") == "f"):
        x = float(value)
        if math.isnan(x):
            return "n/a"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        magnitude = abs(x)
        if x == 0:
            return "0"
        if magnitude >= 1e6 or magnitude < 1e-4:
            return f"{x:.2e}"
        if magnitude >= 100:
            return f"{x:.0f}"
        decimals = max(0, 2 - int(math.floor(math.log10(magnitude))))
        # a value that rounds up into the next decade (0.9996 -> 1.000) takes that decade's decimals (1.00), so
        # that one column never shows "1.00" beside "1.000"
        rounded = abs(round(x, decimals))
        if rounded >= 100:
            return f"{x:.0f}"
        decimals = max(0, 2 - int(math.floor(math.log10(rounded)))) if rounded > 0 else decimals
        return f"{x:.{decimals}f}"
    return str(value)


def format_setting(value: Any) -> str:
    """A setting the run was given (chi, a kernel width, a budget), not a measured quantity: written as the value
    it is, the shortest text that reads back as it ("0", "10", "1000", "0.5", "1e-06"), so that one column of
    settings never shows "10.0" beside "100" (``format_number`` gives every float three significant figures).
    None -> "-"."""
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "dtype"):
        return format_number(value)
    x = float(value)
    if not math.isfinite(x):
        return format_number(x)
    if x.is_integer() and abs(x) < 1e6:
        return str(int(x))
    return repr(x)


def _column_formatter(name: str):
    """How a table column's numbers are written, by the quantity its name says it holds: r-hat with three decimals
    (1.012 must not read as 1.01, the threshold), effective sample sizes as whole draws, anything else
    ``format_number``."""
    name = str(name[-1] if isinstance(name, tuple) else name).lower()   # a MultiIndex column: its last level
    if "r_hat" in name or "rhat" in name:
        return lambda x: "n/a" if x is None or not math.isfinite(float(x)) else f"{float(x):.3f}"
    if name.startswith("ess"):
        return lambda x: "n/a" if x is None or not math.isfinite(float(x)) else f"{float(x):.0f}"
    return format_number


def format_frame(frame):
    """A pandas DataFrame with every number written in the zoo's one format, column by column
    (``_column_formatter``: r-hat 1.012, ESS 2438, others three significant figures): a copy of strings, for
    display (ArviZ's ``az.summary(..., round_to="none")``, ``fit.summary()``, ``fit.diagnose()``)."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype.kind in "fiu":
            write = _column_formatter(column)
            out[column] = [write(v) for v in frame[column]]
    return out


def format_percent(share: float) -> str:
    """A share in [0, 1] as a percentage with one decimal ("63.4 %"'s number: "63.4")."""
    return "n/a" if share is None or not math.isfinite(float(share)) else f"{100 * float(share):.1f}"


def _markdown_cell(value: Any) -> str:
    return format_number(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-flavoured Markdown table (cells through ``format_number``; "|" escaped). Raises ValueError when a
    row's length differs from the header's."""
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"markdown_table: a row has {len(row)} cells, the header {len(header)}: {row!r}")
    lines = ["| " + " | ".join(_markdown_cell(h) for h in header) + " |",
             "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_markdown_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def format_seconds(seconds: float | None) -> str:
    """"12.3 s", "4 min 05 s", or "-" when not timed."""
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes} min {rest:02d} s"


def print_section(section: Section) -> Section:
    """Print a section's title, time and tables (Markdown) to stdout, as progress of a reproduction; returns it."""
    print(f"--- {section.title} ({format_seconds(section.seconds)})")
    for item in section.items:
        if isinstance(item, Table):
            print(f"{item.title}\n{markdown_table(item.header, item.rows)}")
            if item.note:
                print(item.note)
            print()
        else:
            print(f"{item.title}: {item.path}")
    return section


# ------------------------------------------------------------------------------------------------- figures
def save_figure(fig, path: pathlib.Path, dpi: int = 120, tight_layout: bool = True) -> pathlib.Path:
    """Save a matplotlib figure as PNG at ``max(dpi, MIN_DPI)``, at least 6 x 4 inches, with a tight layout
    (``tight_layout=False``: the caller laid it out, e.g. around a colorbar axes of its own), and close it.
    Returns the path."""
    import matplotlib.pyplot as plt

    width, height = fig.get_size_inches()
    fig.set_size_inches(max(width, MIN_SIZE_INCHES[0]), max(height, MIN_SIZE_INCHES[1]))
    if tight_layout:
        fig.tight_layout()
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # a caller's own layout may put labels (a colorbar's) past the edge: then crop to what was drawn
    fig.savefig(path, dpi=max(int(dpi), MIN_DPI), bbox_inches=None if tight_layout else "tight", pad_inches=0.1)
    plt.close(fig)
    return path


# ------------------------------------------------------------------------------------------------ Markdown
def _anchor(text: str) -> str:
    """A GitHub-style heading anchor (lower case, spaces to hyphens, punctuation dropped)."""
    kept = "".join(c for c in text.lower() if c.isalnum() or c in " -_")
    return kept.strip().replace(" ", "-")


def _relative(path: pathlib.Path, root: pathlib.Path) -> str:
    return pathlib.Path(os.path.relpath(pathlib.Path(path).resolve(), pathlib.Path(root).resolve())).as_posix()


def _item_markdown(item: Item, root: pathlib.Path, level: int) -> list[str]:
    hashes = "#" * level
    if isinstance(item, Table):
        lines = [f"{hashes} {item.title}", "", markdown_table(item.header, item.rows), ""]
        if item.note:
            lines += [item.note, ""]
        return lines
    lines = [f"{hashes} {item.title}", "", f"![{item.title}]({_relative(item.path, root)})", ""]
    if item.caption:
        lines += [f"*{item.caption}*", ""]
    return lines


def _status_line(report: PaperReport) -> str:
    status, reason = report.outcome()
    return f"**{status.capitalize()}**: {reason}."


def paper_markdown(report: PaperReport, root: pathlib.Path, level: int = 2) -> str:
    """One paper's report as Markdown (headings from ``level``; figure links relative to ``root``): the outcome,
    the notes, the claims checked, then the sections."""
    lines = [f"{'#' * level} {report.title}", "", _status_line(report), "",
             f"Experiment module `zoo.experiments.{report.paper}`; time {format_seconds(report.seconds)}.", ""]
    lines += [f"- {note}" for note in report.notes]
    if report.notes:
        lines.append("")
    if report.claims:
        lines += _item_markdown(claims_table(report.claims), root, level + 1)
    for section in report.sections:
        lines += [f"{'#' * (level + 1)} {section.title}", "", f"Time: {format_seconds(section.seconds)}.", ""]
        if section.note:
            lines += [section.note, ""]
        for item in section.items:
            lines += _item_markdown(item, root, level + 2)
    return "\n".join(lines).rstrip() + "\n"


def write_paper_markdown(report: PaperReport, out_dir: pathlib.Path) -> pathlib.Path:
    """``out_dir/report.md``: the paper's report alone (figure links relative to ``out_dir``)."""
    path = pathlib.Path(out_dir) / "report.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(paper_markdown(report, path.parent, level=1))
    return path


def _stage_rows(reports: Sequence[PaperReport]) -> list[list[Any]]:
    rows = []
    for report in reports:
        rows.append([report.paper, "(whole reproduction)", format_seconds(report.seconds)])
        rows += [[report.paper, s.title, format_seconds(s.seconds)] for s in report.sections]
    return rows


# ------------------------------------------------------------------------------------------ the run manifest
MANIFEST = "index.json"


def run_context(command: Sequence[str] | None = None) -> dict:
    """What the top of an index says about a run: zoo version, git commit (or why none), date (UTC), the command
    line, and the data sets found (each real data set: present / missing, and the data root)."""
    import datetime
    import subprocess
    import sys

    import zoo
    from zoo.data.location import data_root, dataset_status, datasets

    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10,
                                cwd=pathlib.Path(__file__).resolve().parent).stdout.strip() or "not a git checkout"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, timeout=10, cwd=pathlib.Path(__file__).resolve().parent).stdout.strip()
        if dirty and commit != "not a git checkout":
            commit += " (with uncommitted changes)"
    except (OSError, subprocess.SubprocessError):
        commit = "not a git checkout"
    found = {info.name: dataset_status(info)[0] for info in datasets() if info.kind == "real"}
    root = data_root()
    return {"version": zoo.__version__, "commit": commit,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "command": " ".join(command if command is not None else ["zoo", *sys.argv[1:]]),
            "data_root": str(root) if root is not None else "none found",
            "data": found}


def read_manifest(out_root: pathlib.Path) -> dict:
    """{paper: entry} of the index in ``out_root`` (empty when there is none or it cannot be read)."""
    import json

    path = pathlib.Path(out_root) / MANIFEST
    if not path.exists():
        return {}
    try:
        entries = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return entries if isinstance(entries, dict) else {}


def manifest_entry(report: PaperReport, out_root: pathlib.Path, context: dict, fast: bool) -> dict:
    """One paper's entry of the index: its latest run's outcome, settings, context, and its report rendered as
    Markdown and HTML (so that a later run of another paper can rebuild the whole index)."""
    status, reason = report.outcome()
    return {"paper": report.paper, "title": report.title, "status": status, "reason": reason,
            "mode": "fast" if fast else "full", "seconds": report.seconds, "settings": dict(report.settings),
            "context": context, "markdown": paper_markdown(report, out_root, level=2),
            "html": _html_paper(report), "stages": _stage_rows([report])}


def update_manifest(report: PaperReport, out_root: pathlib.Path, context: dict, fast: bool) -> dict:
    """Add or replace ``report``'s entry in ``out_root/index.json``, keep every other paper's; returns them all."""
    import json

    entries = read_manifest(out_root)
    entries[report.paper] = manifest_entry(report, out_root, context, fast)
    entries = dict(sorted(entries.items()))
    out_root = pathlib.Path(out_root)
    out_root.mkdir(parents=True, exist_ok=True)
    # written beside and renamed: a reader (or another run) never sees half an index
    tmp = out_root / f".{MANIFEST}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(entries, indent=1, default=str))
    os.replace(tmp, out_root / MANIFEST)
    return entries


def _settings_text(entry: dict) -> str:
    settings = ", ".join(f"{k} {v}" for k, v in entry.get("settings", {}).items())
    return settings or "settings fixed in the experiment module"


def _summary_lines(entries: dict) -> list[str]:
    """The top of ``index.md``: per paper its outcome (linked), run date, mode, settings; then each distinct run
    context (version, commit, command, data)."""
    lines = ["## Summary", "", markdown_table(
        ["paper", "outcome", "why", "run", "mode", "seeds and settings"],
        [[f"[{e['paper']}](#{_anchor(e['title'])})", e["status"], e["reason"], e["context"]["date"], e["mode"],
          _settings_text(e)] for e in entries.values()]), ""]
    contexts = {}
    for e in entries.values():
        c = e["context"]
        key = (c["version"], c["commit"], c["command"], c["date"])
        contexts.setdefault(key, (c, []))[1].append(e["paper"])
    lines += ["## Runs", ""]
    for c, papers in contexts.values():
        present = sorted(k for k, v in c["data"].items() if v == "present")
        missing = sorted(k for k, v in c["data"].items() if v != "present")
        lines += [f"- `{c['command']}` ({', '.join(papers)}): zoo {c['version']}, commit {c['commit']}, "
                  f"{c['date']}; data root {c['data_root']}: found {', '.join(present) or 'none'}"
                  + (f"; missing {', '.join(missing)}" if missing else "")]
    return lines + [""]


def write_index_markdown(reports: Sequence[PaperReport] | dict, out_root: pathlib.Path) -> pathlib.Path:
    """``out_root/index.md``: the summary (each paper's outcome, run and settings; the runs' version, commit,
    command and data), contents, the time of each stage, then every paper's report. ``reports``: the manifest
    entries (``update_manifest``) or PaperReports (rendered with the current context)."""
    out_root = pathlib.Path(out_root)
    out_root.mkdir(parents=True, exist_ok=True)
    entries = _as_entries(reports, out_root)
    lines = ["# zoo reproductions", "", *_summary_lines(entries), "## Contents", ""]
    lines += [f"- [{e['title']}](#{_anchor(e['title'])}) ({format_seconds(e['seconds'])})"
              for e in entries.values()]
    stages = [row for e in entries.values() for row in e["stages"]]
    lines += ["", "## Time of each stage", "", markdown_table(["paper", "stage", "time"], stages), ""]
    for e in entries.values():
        lines += [e["markdown"], ""]
    path = out_root / "index.md"
    path.write_text("\n".join(lines).rstrip() + "\n")
    return path


def _as_entries(reports, out_root: pathlib.Path) -> dict:
    if isinstance(reports, dict):
        return reports
    context = run_context()
    return {r.paper: manifest_entry(r, out_root, context, fast=False) for r in reports}


# ---------------------------------------------------------------------------------------------------- HTML
CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; max-width: 1100px; margin: 2em auto;
       padding: 0 1.5em; color: #1f2328; line-height: 1.5; }
h1 { border-bottom: 2px solid #d0d7de; padding-bottom: .3em; }
h2 { border-bottom: 1px solid #d0d7de; padding-bottom: .2em; margin-top: 2.5em; }
h3 { margin-top: 1.8em; }
h4 { margin-bottom: .4em; }
table { border-collapse: collapse; margin: .5em 0; font-size: 0.92em; }
th, td { border: 1px solid #d0d7de; padding: 4px 10px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
tr:nth-child(even) td { background: #fbfcfd; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
p.note { color: #57606a; font-size: 0.9em; margin-top: .2em; max-width: 60em; }
p.time { color: #57606a; font-size: 0.9em; }
figure { margin: 1em 0; }
figure img { max-width: 100%; border: 1px solid #d0d7de; }
figcaption { color: #57606a; font-size: 0.9em; }
nav ul { padding-left: 1.2em; }
.overflow { overflow-x: auto; }
"""


def _is_numeric(text: str) -> bool:
    try:
        float(text.replace("n/a", "nan"))
    except ValueError:
        return False
    return True


def _html_table(header: Sequence[str], rows: Sequence[Sequence[Any]], links: dict | None = None) -> str:
    """A table; ``links``: {column: [href per row]} makes those cells links."""
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = []
    for r, row in enumerate(rows):
        cells = []
        for c, cell in enumerate(row):
            text = format_number(cell)
            cls = ' class="num"' if _is_numeric(text) else ""
            inner = html.escape(text)
            if links and c in links:
                inner = f'<a href="{html.escape(links[c][r])}">{inner}</a>'
            cells.append(f"<td{cls}>{inner}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f'<div class="overflow"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


def _embedded_png(path: pathlib.Path) -> str:
    """A data: URI of the PNG at ``path`` (the index carries its images)."""
    return "data:image/png;base64," + base64.b64encode(pathlib.Path(path).read_bytes()).decode("ascii")


def _html_item(item: Item) -> str:
    if isinstance(item, Table):
        note = f'<p class="note">{html.escape(item.note)}</p>' if item.note else ""
        return f"<h4>{html.escape(item.title)}</h4>{_html_table(item.header, item.rows)}{note}"
    path = pathlib.Path(item.path)
    if not path.exists():
        return f"<h4>{html.escape(item.title)}</h4><p class=\"note\">figure missing: {html.escape(str(path))}</p>"
    caption = f"<figcaption>{html.escape(item.caption)}</figcaption>" if item.caption else ""
    return (f"<figure><h4>{html.escape(item.title)}</h4><img alt=\"{html.escape(item.title)}\" "
            f"src=\"{_embedded_png(path)}\">{caption}</figure>")


def _html_paper(report: PaperReport) -> str:
    anchor = f"paper-{report.paper}"
    status, reason = report.outcome()
    parts = [f'<h2 id="{anchor}">{html.escape(report.title)}</h2>',
             f"<p><strong>{html.escape(status.capitalize())}</strong>: {html.escape(reason)}.</p>",
             f'<p class="time">Experiment module <code>zoo.experiments.{html.escape(report.paper)}</code>; time '
             f"{html.escape(format_seconds(report.seconds))}.</p>"]
    if report.notes:
        parts.append("<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in report.notes) + "</ul>")
    if report.claims:
        parts.append(_html_item(claims_table(report.claims)))
    for s, section in enumerate(report.sections):
        parts.append(f'<h3 id="{anchor}-{s}">{html.escape(section.title)}</h3>'
                     f'<p class="time">Time: {html.escape(format_seconds(section.seconds))}.</p>')
        if section.note:
            parts.append(f'<p class="note">{html.escape(section.note)}</p>')
        parts += [_html_item(item) for item in section.items]
    return "\n".join(parts)


def index_html(reports: Sequence[PaperReport] | dict, title: str = "zoo reproductions",
               out_root: pathlib.Path | None = None) -> str:
    """The whole index as one HTML document (CSS inline, figures as base64 PNG data URIs, no external links):
    the summary first, then contents, stage times and each paper's report."""
    entries = _as_entries(reports, pathlib.Path(out_root or "."))
    summary = _html_table(["paper", "outcome", "why", "run", "mode", "seeds and settings"],
                          [[e["paper"], e["status"], e["reason"], e["context"]["date"], e["mode"], _settings_text(e)]
                           for e in entries.values()], links={0: [f"#paper-{p}" for p in entries]})
    runs = []
    for line in _summary_lines(entries):
        if line.startswith("- "):
            runs.append(f"<li>{html.escape(line[2:].replace('`', ''))}</li>")
    toc = "".join(f'<li><a href="#paper-{html.escape(p)}">{html.escape(e["title"])}</a> '
                  f"({html.escape(format_seconds(e['seconds']))})</li>" for p, e in entries.items())
    stages = _html_table(["paper", "stage", "time"], [row for e in entries.values() for row in e["stages"]])
    body = "\n".join(e["html"] for e in entries.values())
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{CSS}</style></head><body>\n<h1>{html.escape(title)}</h1>\n"
            f"<h2>Summary</h2>{summary}<h3>Runs</h3><ul>{''.join(runs)}</ul>\n"
            f"<nav><h2>Contents</h2><ul>{toc}</ul></nav>\n"
            f"<h2>Time of each stage</h2>{stages}\n{body}\n</body></html>\n")


def write_index_html(reports: Sequence[PaperReport] | dict, out_root: pathlib.Path) -> pathlib.Path:
    """``out_root/index.html``: one self-contained page (see ``index_html``)."""
    out_root = pathlib.Path(out_root)
    out_root.mkdir(parents=True, exist_ok=True)
    path = out_root / "index.html"
    path.write_text(index_html(reports, out_root=out_root), encoding="utf-8")
    return path
