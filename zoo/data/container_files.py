"""Data containers to and from one ``.npz`` file (no pickle), and any data file to the container it holds.

``save_container(path, data)`` writes a ``Bags``, ``AnnotatedRegions``, ``MultimodalCounts`` or ``Matrix``:
its arrays under their field names plus ``meta``, a JSON string ``{"container": CLASS, "format": 1, ...}`` with
the fields that are not numeric arrays (keywords, vocabulary, group labels, image names). ``zoo regions`` writes
this format (``zoo.data.photos.save_regions``); files it wrote before the ``container`` key (a ``meta`` with
``keywords`` and ``vocabulary`` only) read as ``AnnotatedRegions``.

``read_data_file(path)`` is what ``zoo.load_dataset(path)``, ``zoo fit --data``, ``zoo predict --data`` and
``zoo leaderboard --data`` call for a path: ``.npz`` -> the container it holds (or, for a plain archive of one
array, that array); ``.npy`` -> the array; ``.csv`` -> a numeric matrix (no header) or, with a header row, a
``zoo.data.tables.Table`` that ``zoo.data.tables.to_container`` turns into the container a model takes.
"""
from __future__ import annotations

import json
import os
import pathlib

import numpy as np

__all__ = ["save_container", "load_container", "read_data_file", "to_container", "CONTAINER_FORMAT",
           "DATA_SUFFIXES"]

#: Version of the ``meta`` record; a newer one is refused with a message naming it.
CONTAINER_FORMAT = 1
#: File name endings ``read_data_file`` reads.
DATA_SUFFIXES = (".npz", ".npy", ".csv")

# numeric array fields of each container (the ones stored as arrays) and its other fields (stored in meta)
_ARRAYS = {
    "Bags": ("X", "bag_ids", "bag_labels", "fractions", "instance_labels"),
    "AnnotatedRegions": ("X", "image_ids", "region_labels"),
    "MultimodalCounts": ("words", "visual_words", "region_visual_words", "region_image_ids", "region_labels"),
    "Matrix": ("values", "mask"),
}
_META = {
    "Bags": ("group_labels", "bag_names"),
    "AnnotatedRegions": ("keywords", "vocabulary", "allow_unannotated", "image_names"),
    "MultimodalCounts": ("word_vocabulary", "visual_vocabulary"),
    "Matrix": (),
}


def _classes() -> dict:
    from zoo.data.containers import AnnotatedRegions, Bags, Matrix, MultimodalCounts
    return {"Bags": Bags, "AnnotatedRegions": AnnotatedRegions, "MultimodalCounts": MultimodalCounts,
            "Matrix": Matrix}


def _jsonable(value):
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def save_container(path: str | os.PathLike, data, *, overwrite: bool = False) -> pathlib.Path:
    """Write a data container to ``path`` (``.npz`` added when missing); returns the path written. An existing
    file is kept (ValueError) unless ``overwrite``; the file is written under a temporary name and renamed, so an
    interrupted write leaves no partial file."""
    kind = type(data).__name__
    if kind not in _ARRAYS or not isinstance(data, _classes()[kind]):
        raise ValueError(f"data: expected Bags, AnnotatedRegions, MultimodalCounts or Matrix, got {kind}")
    path = pathlib.Path(path)
    if path.suffix != ".npz":
        path = path.with_name(path.name + ".npz")
    if path.exists() and not overwrite:
        raise ValueError(f"path: {str(path)!r} exists; pass overwrite=True to replace it")
    arrays = {name: np.asarray(getattr(data, name)) for name in _ARRAYS[kind] if getattr(data, name) is not None}
    meta = {"container": kind, "format": CONTAINER_FORMAT}
    meta.update({name: _jsonable(getattr(data, name)) for name in _META[kind]})
    if kind == "AnnotatedRegions":  # what readers of the first regions files (before "container") look for
        meta["names"] = meta["image_names"]
    tmp = path.with_name(f".{path.stem}.partial.npz")
    np.savez_compressed(tmp, meta=np.array(json.dumps(meta)), **arrays)
    tmp.replace(path)
    return path


def _container_from(path: pathlib.Path, arrays: dict, meta: dict):
    kind = meta.get("container", "AnnotatedRegions" if "keywords" in meta else None)
    if kind not in _ARRAYS:
        raise ValueError(f"{path}: its 'meta' names no data container the zoo knows ({kind!r}; known: "
                         f"{', '.join(_ARRAYS)})")
    if meta.get("format", 1) > CONTAINER_FORMAT:
        raise ValueError(f"{path}: written by a newer zoo (container format {meta['format']}; this one reads "
                         f"{CONTAINER_FORMAT}): upgrade zoo to read it")
    fields = {name: arrays[name] for name in _ARRAYS[kind] if name in arrays}
    for name in _META[kind]:
        if name in meta:
            fields[name] = meta[name]
    if kind == "AnnotatedRegions" and fields.get("image_names") is None and meta.get("names") is not None:
        fields["image_names"] = meta["names"]       # files of zoo regions before the container key
    try:
        return _classes()[kind](**fields)
    except TypeError as err:  # a field missing from a damaged file
        raise ValueError(f"{path}: not a complete {kind} file ({err})") from None


def load_container(path: str | os.PathLike):
    """The container a file of ``save_container`` (or ``zoo regions``) holds, validated as at construction."""
    from zoo.data.files import read_npz

    arrays = read_npz(path, required=("meta",))
    try:
        meta = json.loads(str(arrays.pop("meta")))
        if not isinstance(meta, dict):
            raise TypeError("not a JSON object")
    except (ValueError, TypeError) as err:
        raise ValueError(f"{path}: its 'meta' entry is not the JSON record of a zoo data file ({err})") from None
    return _container_from(pathlib.Path(path), arrays, meta)


def read_data_file(path: str | os.PathLike):
    """The data a file holds, by its ending: ``.npz`` (a zoo data file -> its container; an archive of exactly one
    array -> that array), ``.npy`` (an array), ``.csv`` (with a header row: a ``zoo.data.tables.Table``; without:
    a numeric matrix). Anything else is a ValueError naming the endings read."""
    from zoo.data.files import read_csv_matrix, read_npy, read_npz

    path = pathlib.Path(path)
    if path.is_dir():
        raise ValueError(f"{path}: a folder, not a data file (a folder of photos: zoo.load_dataset('photos', "
                         f"folder=..., captions=...), or `zoo regions FOLDER --captions FILE --out regions.npz`)")
    if path.suffix == ".npy":
        return read_npy(path)
    if path.suffix == ".csv":
        from zoo.data.tables import has_header, read_table
        return read_table(path) if has_header(path) else read_csv_matrix(path)
    if path.suffix == ".npz":
        arrays = read_npz(path)
        if "meta" in arrays:
            return load_container(path)
        if len(arrays) == 1:
            return next(iter(arrays.values()))
        raise ValueError(f"{path}: an .npz archive of {len(arrays)} arrays ({', '.join(arrays)}) but no zoo 'meta' "
                         f"record: write data files with zoo.data.save_container (or zoo regions)")
    raise ValueError(f"{path}: unknown data file type {path.suffix!r}; the zoo reads {', '.join(DATA_SUFFIXES)}")


def to_container(table, kind: str, columns: Mapping[str, str] | None = None):
    """The container of ``kind`` (a model's data kind: "Bags", "AnnotatedRegions", "Matrix", "MultimodalCounts" or
    "ndarray" for a feature matrix) from a table; ``columns`` maps roles (``ROLES[kind]``) to column names, list
    roles (features, columns, words, visual_words) as comma-separated names (words: also a prefix ending in '*')."""
    from zoo.data.tables import ROLES
    columns = dict(columns or {})
    if kind not in ROLES:
        raise ValueError(f"data: a table cannot make a {kind} (tables make {', '.join(ROLES)})")
    unknown = [r for r in columns if r not in ROLES[kind]]
    if unknown:
        raise ValueError(f"--column: {unknown[0]!r} is not a column role of {kind}; roles: {', '.join(ROLES[kind])}")

    def listed(role):
        if role not in columns:
            return None
        text = columns.pop(role)
        return text[:-1] if text.endswith("*") else [c.strip() for c in text.split(",") if c.strip()]

    from zoo.data.tables import _feature_matrix, read_table
    classes = _classes()
    t = read_table(table)
    if kind == "Bags":
        return classes[kind].from_table(t, features=listed("features"), **columns)
    if kind == "AnnotatedRegions":
        return classes[kind].from_table(t, features=listed("features"), **columns)
    if kind == "Matrix":
        return classes[kind].from_table(t, columns=listed("columns"))
    if kind == "MultimodalCounts":
        words, visual = listed("words"), listed("visual_words")
        if words is None or visual is None:
            raise ValueError("--column: a count table needs words=... and visual_words=... (column names separated "
                             "by commas, or a prefix ending in '*')")
        return classes[kind].from_table(t, words=words, visual_words=visual, **columns)
    return _feature_matrix(t, listed("features"), set())
