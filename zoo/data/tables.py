"""Tables in: a pandas DataFrame, a CSV file with a header row, or a dict of columns -> the zoo's data containers.

``read_table(source)`` gives a ``Table`` (named 1-D columns, in file order): numeric columns as float64 (an empty
cell is NaN), any column with a non-number as strings. pandas is optional: a DataFrame is read through its
columns, and CSV files are read with the standard library's ``csv`` module, so none of this needs pandas.

The containers' ``from_table`` class methods (``Bags.from_table(t, ...)`` etc.) take these keywords; the functions
here return the container's fields (this module imports no container, so that the containers can use it):

- ``bag_fields(t, bag="bag", label=None, group=None, fraction=None, instance_label=None, features=None)``:
  one row per instance; bag ids of any kind (strings, large integers) numbered in order of first appearance and
  kept in ``Bags.bag_names``; a bag-level column (label, group, fraction) must hold one value per bag.
- ``region_fields(t, image="image", keywords="keywords", region_label=None, features=None,
  vocabulary=None)``: one row per region; the keywords cell lists the image's words (separated by spaces, commas
  or semicolons), the same on every row of an image (blank cells are allowed besides one filled one); image ids
  of any kind, kept in ``AnnotatedRegions.image_names``.
- ``matrix_fields(t, columns=None)``: the numeric columns (default: all); empty cells are missing entries.
- ``count_fields(t, words, visual_words, image=None)``: one row per image; ``words`` and ``visual_words`` are
  lists of column names or a prefix (``"w_"``: every column whose name starts with it).

``features=None`` means every numeric column not named in another role; a text column left over is a ValueError
naming it (nothing is silently dropped). ``zoo.data.container_files.to_container(table, kind, columns)`` builds
the container a model's ``data_kind`` names (what ``zoo fit --data file.csv --column ROLE=NAME`` calls).
"""
from __future__ import annotations

import csv
import dataclasses
import math
import os
import pathlib
import re
from typing import Mapping, Sequence

import numpy as np

__all__ = ["Table", "read_table", "has_header", "bag_fields", "region_fields", "matrix_fields", "count_fields",
           "ROLES"]


@dataclasses.dataclass(frozen=True)
class Table:
    """Named columns of equal length: ``columns`` maps name -> 1-D array (float64, or strings as an object array)."""

    columns: Mapping[str, np.ndarray]
    source: str = "table"

    def __post_init__(self):
        if not self.columns:
            raise ValueError(f"{self.source}: no columns")
        lengths = {name: len(col) for name, col in self.columns.items()}
        if len(set(lengths.values())) != 1:
            raise ValueError(f"{self.source}: columns of different lengths {lengths}")
        if next(iter(lengths.values())) == 0:
            raise ValueError(f"{self.source}: no rows")

    @property
    def names(self) -> list[str]:
        return list(self.columns)

    @property
    def n_rows(self) -> int:
        return len(next(iter(self.columns.values())))

    def numeric(self, name: str) -> bool:
        return self.column(name).dtype.kind == "f"

    def column(self, name: str, role: str | None = None) -> np.ndarray:
        if name not in self.columns:
            what = f"{role}: " if role else ""
            raise ValueError(f"{what}{self.source} has no column {name!r}; its columns: {', '.join(self.names)}")
        return self.columns[name]

    def __repr__(self) -> str:
        kinds = ", ".join(f"{n}:{'num' if self.numeric(n) else 'text'}" for n in self.names[:12])
        more = f", ... ({len(self.names)} columns)" if len(self.names) > 12 else ""
        return f"Table({self.source}, rows={self.n_rows}, columns=[{kinds}{more}])"


def _as_number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _column_from_cells(cells: list) -> np.ndarray:
    """float64 when every non-empty cell is a number (empty cells NaN), else the cells as strings."""
    values = []
    for cell in cells:
        if cell is None or (isinstance(cell, float) and math.isnan(cell)):
            values.append(math.nan)
            continue
        if isinstance(cell, (bool, np.bool_)):
            break
        if isinstance(cell, (int, float, np.integer, np.floating)):
            values.append(float(cell))
            continue
        text = str(cell).strip()
        number = math.nan if text == "" else _as_number(text)
        if number is None:
            break
        values.append(number)
    else:
        return np.asarray(values, dtype=np.float64)
    return np.asarray(["" if c is None or (isinstance(c, float) and math.isnan(c)) else str(c).strip()
                       for c in cells], dtype=object)


def has_header(path: str | os.PathLike) -> bool:
    """Whether a CSV file's first row holds names (a cell that is not a number) rather than data."""
    with open(path, newline="", encoding="utf-8-sig") as fh:
        first = next(csv.reader(fh), [])
    return any(cell.strip() and _as_number(cell.strip()) is None for cell in first)


def _read_csv(path: pathlib.Path) -> Table:
    if not path.is_file():
        raise ValueError(f"{path}: file not found")
    with open(path, newline="", encoding="utf-8-sig") as fh:
        rows = [row for row in csv.reader(fh) if any(cell.strip() for cell in row)]
    if len(rows) < 2:
        raise ValueError(f"{path}: expected a header row and at least one data row")
    header = [h.strip() for h in rows[0]]
    if any(not h for h in header) or len(set(header)) != len(header):
        raise ValueError(f"{path}: the header row must name every column once, got {rows[0]}")
    for number, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise ValueError(f"{path}: row {number} has {len(row)} cells, the header {len(header)}")
    cells = list(zip(*rows[1:]))
    return Table({name: _column_from_cells(list(col)) for name, col in zip(header, cells)}, source=str(path))


def read_table(source, *, name: str | None = None) -> Table:
    """A ``Table`` from a pandas DataFrame, a CSV file with a header row (path), a dict of columns or a Table."""
    if isinstance(source, Table):
        return source
    if isinstance(source, (str, os.PathLike)):
        return _read_csv(pathlib.Path(source))
    if hasattr(source, "columns") and hasattr(source, "to_numpy") and hasattr(source, "__getitem__"):  # DataFrame
        names = [str(c) for c in source.columns]
        if len(set(names)) != len(names):
            raise ValueError("table: the DataFrame's column names must be distinct")
        return Table({str(c): _column_from_cells(list(source[c].to_numpy())) for c in source.columns},
                     source=name or "DataFrame")
    if isinstance(source, Mapping):
        return Table({str(k): _column_from_cells(list(np.asarray(v).ravel())) for k, v in source.items()},
                     source=name or "table")
    raise ValueError(f"table: expected a pandas DataFrame, a CSV path or a dict of columns, got "
                     f"{type(source).__name__}")


def _numbered(values: np.ndarray) -> tuple[np.ndarray, list]:
    """Ids of any kind -> (0..K-1 per row, in order of first appearance; the K original ids)."""
    index: dict = {}
    ids = np.empty(len(values), dtype=np.int64)
    for row, value in enumerate(values):
        key = value.item() if isinstance(value, np.generic) else value
        if isinstance(key, float) and key.is_integer():
            key = int(key)
        ids[row] = index.setdefault(key, len(index))
    return ids, list(index)


def _check_ids(values: np.ndarray, role: str, column: str) -> None:
    blank = [i for i, v in enumerate(values) if (isinstance(v, float) and math.isnan(v)) or v == ""]
    if blank:
        raise ValueError(f"{role}: column {column!r} is empty at row {blank[0] + 1}; every row needs an id")


def _per_group(values: np.ndarray, ids: np.ndarray, names: list, role: str, column: str, what: str) -> list:
    """One value per group from a column repeated on every row of it (blank cells skipped); differing values or a
    group without one are a ValueError naming the group."""
    out: list = [None] * len(names)
    for row, (value, g) in enumerate(zip(values, ids)):
        if (isinstance(value, float) and math.isnan(value)) or (isinstance(value, str) and value == ""):
            continue
        if out[g] is None:
            out[g] = value
        elif out[g] != value:
            raise ValueError(f"{role}: column {column!r} gives {what} {names[g]!r} two values ({out[g]!r} and "
                             f"{value!r}, row {row + 1}); it must hold one value per {what}")
    missing = [names[g] for g, v in enumerate(out) if v is None]
    if missing:
        raise ValueError(f"{role}: column {column!r} has no value for {what} {missing[0]!r}")
    return out


def _feature_matrix(table: Table, features, used: set) -> np.ndarray:
    if isinstance(features, str):
        features = [features]
    if features is None:
        features = [n for n in table.names if n not in used]
        text = [n for n in features if not table.numeric(n)]
        if text:
            raise ValueError(f"features: column {text[0]!r} of {table.source} is text, not a number; name the "
                             f"feature columns (features=[...], --column features=a,b) or give it a role")
    if not features:
        raise ValueError(f"features: {table.source} has no feature column left besides {', '.join(sorted(used))}")
    for n in features:
        table.column(n, "features")
        if not table.numeric(n):
            raise ValueError(f"features: column {n!r} of {table.source} holds text, not numbers")
    return np.column_stack([table.column(n) for n in features])


def _label_values(values: list, role: str, column: str, kind: type = int) -> list:
    out = []
    for v in values:
        if isinstance(v, str):
            raise ValueError(f"{role}: column {column!r} holds {v!r}; expected numbers")
        out.append(kind(v) if kind is float or float(v).is_integer() else v)
    return out


def bag_fields(table, *, bag: str = "bag", label: str | None = None, group: str | None = None,
                    fraction: str | None = None, instance_label: str | None = None, features=None):
    """The fields of ``Bags`` from one row per instance (see the module doc); ``bag_names``: the table's bag ids."""
    t = read_table(table)
    ids_col = t.column(bag, "bag")
    _check_ids(ids_col, "bag", bag)
    ids, names = _numbered(ids_col)
    roles = {"bag": bag, "label": label, "group": group, "fraction": fraction, "instance_label": instance_label}
    used = {c for c in roles.values() if c is not None}
    X = _feature_matrix(t, features, used)
    per_bag = {}
    for role, kind in (("label", int), ("group", str), ("fraction", float)):
        if roles[role] is not None:
            values = _per_group(t.column(roles[role], role), ids, names, role, roles[role], "bag")
            per_bag[role] = values if kind is str else _label_values(values, role, roles[role], kind)
    inst = None
    if instance_label is not None:
        inst = _label_values(list(t.column(instance_label, "instance_label")), "instance_label", instance_label)
    return dict(X=X, bag_ids=ids, bag_labels=per_bag.get("label"), group_labels=per_bag.get("group"),
                fractions=per_bag.get("fraction"), instance_labels=inst, bag_names=[str(n) for n in names])


_WORD_SPLIT = re.compile(r"[\s,;]+")


def _words(cell) -> tuple[str, ...]:
    if isinstance(cell, float):
        return () if math.isnan(cell) else (format(cell, "g"),)
    return tuple(w for w in _WORD_SPLIT.split(str(cell).strip()) if w)


def region_fields(table, *, image: str = "image", keywords: str = "keywords", region_label: str | None = None,
                       features=None, vocabulary: Sequence[str] | None = None, allow_unannotated: bool = False):
    """The fields of ``AnnotatedRegions`` from one row per region (see the module doc); ``image_names``: the ids."""
    t = read_table(table)
    ids_col = t.column(image, "image")
    _check_ids(ids_col, "image", image)
    ids, names = _numbered(ids_col)
    kw_col = t.column(keywords, "keywords")
    per_image: list = [None] * len(names)
    for row, (cell, g) in enumerate(zip(kw_col, ids)):
        words = _words(cell)
        if not words:
            continue
        if per_image[g] is None:
            per_image[g] = words
        elif set(per_image[g]) != set(words):
            raise ValueError(f"keywords: column {keywords!r} gives image {names[g]!r} two keyword lists "
                             f"({' '.join(per_image[g])!r} and {' '.join(words)!r}, row {row + 1}); write the "
                             f"image's words on every row, or on one row and leave the others blank")
    kw = [w if w is not None else () for w in per_image]
    vocab = list(vocabulary) if vocabulary is not None else sorted({w for k in kw for w in k})
    if not vocab:
        raise ValueError(f"keywords: column {keywords!r} holds no words")
    used = {image, keywords} | ({region_label} if region_label else set())
    X = _feature_matrix(t, features, used)
    labels = None
    if region_label is not None:
        index = {w: k for k, w in enumerate(vocab)}
        labels = []
        for row, cell in enumerate(t.column(region_label, "region_label")):
            word = _words(cell)
            if len(word) > 1:
                raise ValueError(f"region_label: row {row + 1} holds several words {' '.join(word)!r}")
            if word and word[0] not in index:
                raise ValueError(f"region_label: row {row + 1} names {word[0]!r}, not in the vocabulary")
            labels.append(index[word[0]] if word else -1)
    return dict(X=X, image_ids=ids, keywords=kw, vocabulary=vocab, region_labels=labels,
                allow_unannotated=allow_unannotated, image_names=[str(n) for n in names])


def matrix_fields(table, *, columns: Sequence[str] | None = None):
    """The fields of ``Matrix``: the numeric ``columns`` (default: every column, all numeric); empty cells missing."""
    t = read_table(table)
    return dict(values=_feature_matrix(t, None if columns is None else list(columns), set()))


def _columns_named(t: Table, spec, role: str) -> list[str]:
    if isinstance(spec, str):
        names = [n for n in t.names if n.startswith(spec)]
        if not names:
            raise ValueError(f"{role}: no column of {t.source} starts with {spec!r}")
        return names
    names = list(spec)
    for n in names:
        t.column(n, role)
    return names


def count_fields(table, *, words, visual_words, image: str | None = None):
    """The fields of ``MultimodalCounts`` from one row per image: caption-word and visual-word count columns (lists
    of names, or a name prefix); the column names become the vocabularies."""
    t = read_table(table)
    w = _columns_named(t, words, "words")
    v = _columns_named(t, visual_words, "visual_words")
    both = set(w) & set(v)
    if both:
        raise ValueError(f"visual_words: column {sorted(both)[0]!r} is also a word column")
    if image is not None:
        _check_ids(t.column(image, "image"), "image", image)
        _, names = _numbered(t.column(image))
        if len(names) != t.n_rows:
            raise ValueError(f"image: column {image!r} repeats an image id; one row per image")
    for n in w + v:
        if not t.numeric(n):
            raise ValueError(f"{'words' if n in w else 'visual_words'}: column {n!r} holds text, not counts")
    return dict(words=np.column_stack([t.column(n) for n in w]),
                visual_words=np.column_stack([t.column(n) for n in v]), word_vocabulary=w, visual_vocabulary=v)


#: The column roles of each container, as ``to_container`` and ``zoo fit --column ROLE=NAME`` take them.
ROLES = {
    "Bags": ("bag", "label", "group", "fraction", "instance_label", "features"),
    "AnnotatedRegions": ("image", "keywords", "region_label", "features"),
    "Matrix": ("columns",),
    "MultimodalCounts": ("words", "visual_words", "image"),
    "ndarray": ("features",),
}
