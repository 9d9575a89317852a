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
from typing import Any, Sequence, Union

__all__ = ["Table", "Figure", "Section", "PaperReport", "format_number", "markdown_table", "save_figure",
           "paper_markdown", "write_paper_markdown", "print_section", "format_seconds", "write_index_markdown", "write_index_html", "MIN_DPI"]

MIN_DPI = 100
MIN_SIZE_INCHES = (6.0, 4.0)


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

    def add(self, section: Section) -> Section:
        """Append ``section`` and return it."""
        self.sections.append(section)
        return section


# ----------------------------------------------------------------------------------------------- formatting
def format_number(value: Any) -> str:
    """One format for every cell of every table: None -> "-", NaN -> "n/a", ints as they are, floats with three
    decimals below 10 (0.838, 3.398), one decimal from 10 on (98.3, 123.4), three significant digits in scientific
    notation from 1e5 on and below 1e-3; anything else (strings: preformatted cells) by ``str``."""
    if value is None:
        return "-"
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
        if magnitude >= 1e5 or (0 < magnitude < 1e-3):
            return f"{x:.2e}"
        if magnitude >= 10:
            return f"{x:.1f}"
        return f"{x:.3f}"
    return str(value)


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


def paper_markdown(report: PaperReport, root: pathlib.Path, level: int = 2) -> str:
    """One paper's report as Markdown (headings from ``level``; figure links relative to ``root``)."""
    lines = [f"{'#' * level} {report.title}", "",
             f"Experiment module `zoo.experiments.{report.paper}`; time {format_seconds(report.seconds)}.", ""]
    lines += [f"- {note}" for note in report.notes]
    if report.notes:
        lines.append("")
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


def write_index_markdown(reports: Sequence[PaperReport], out_root: pathlib.Path) -> pathlib.Path:
    """``out_root/index.md``: contents, the time of each stage, then every paper's sections in order."""
    out_root = pathlib.Path(out_root)
    out_root.mkdir(parents=True, exist_ok=True)
    lines = ["# zoo reproductions", "", "## Contents", ""]
    lines += [f"- [{r.title}](#{_anchor(r.title)}) ({format_seconds(r.seconds)})" for r in reports]
    lines += ["", "## Time of each stage", "", markdown_table(["paper", "stage", "time"], _stage_rows(reports)), ""]
    for report in reports:
        lines += [paper_markdown(report, out_root, level=2), ""]
    path = out_root / "index.md"
    path.write_text("\n".join(lines).rstrip() + "\n")
    return path


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


def _html_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = []
    for row in rows:
        cells = []
        for cell in row:
            text = format_number(cell)
            cls = ' class="num"' if _is_numeric(text) else ""
            cells.append(f"<td{cls}>{html.escape(text)}</td>")
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


def _html_paper(report: PaperReport, index: int) -> str:
    parts = [f'<h2 id="paper-{index}">{html.escape(report.title)}</h2>',
             f'<p class="time">Experiment module <code>zoo.experiments.{html.escape(report.paper)}</code>; time '
             f"{html.escape(format_seconds(report.seconds))}.</p>"]
    if report.notes:
        parts.append("<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in report.notes) + "</ul>")
    for s, section in enumerate(report.sections):
        parts.append(f'<h3 id="paper-{index}-{s}">{html.escape(section.title)}</h3>'
                     f'<p class="time">Time: {html.escape(format_seconds(section.seconds))}.</p>')
        if section.note:
            parts.append(f'<p class="note">{html.escape(section.note)}</p>')
        parts += [_html_item(item) for item in section.items]
    return "\n".join(parts)


def index_html(reports: Sequence[PaperReport], title: str = "zoo reproductions") -> str:
    """The whole index as one HTML document (CSS inline, figures as base64 PNG data URIs, no external links)."""
    toc = []
    for i, report in enumerate(reports):
        sub = "".join(f'<li><a href="#paper-{i}-{s}">{html.escape(sec.title)}</a></li>'
                      for s, sec in enumerate(report.sections))
        toc.append(f'<li><a href="#paper-{i}">{html.escape(report.title)}</a> '
                   f"({html.escape(format_seconds(report.seconds))})<ul>{sub}</ul></li>")
    stages = _html_table(["paper", "stage", "time"], _stage_rows(reports))
    body = "\n".join(_html_paper(r, i) for i, r in enumerate(reports))
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{CSS}</style></head><body>\n<h1>{html.escape(title)}</h1>\n"
            f"<nav><h2>Contents</h2><ul>{''.join(toc)}</ul></nav>\n"
            f"<h2>Time of each stage</h2>{stages}\n{body}\n</body></html>\n")


def write_index_html(reports: Sequence[PaperReport], out_root: pathlib.Path) -> pathlib.Path:
    """``out_root/index.html``: one self-contained page (see ``index_html``)."""
    out_root = pathlib.Path(out_root)
    out_root.mkdir(parents=True, exist_ok=True)
    path = out_root / "index.html"
    path.write_text(index_html(reports), encoding="utf-8")
    return path
