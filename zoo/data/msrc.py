"""MSRC-v2 as annotated regions: segmentation, region features, per-region ground truth, split, cache, loader.

``zoo.load_dataset("msrc_v2", segmentation="ncut", features="carbonetto03", annotation="original",
split="train")`` -> ``AnnotatedRegions`` (or ``form="counts"`` -> ``MultimodalCounts`` of visual words, ``msrc_counts``).

Ground truth (issue 7): a region's true label is the majority class of its labelled pixels (void excluded); a
region whose pixels are mostly void (labelled share < ``min_labelled``) is unlabelled (-1). An image's keywords
are the classes present in its label map, so they cover every region's true label. ``annotation`` picks the
original MSRC-v2 maps or the Malisiewicz & Efros (2007) cleaned ones; ``classes="msrc21"`` is the usual 21-class
setting (horse and mountain pixels become void, as the database's documentation suggests). Code:
``zoo.data.msrc_labels``.

Split: images are split per "row" of the database (the first number of the file name, 20 rows of related
photographs), shuffled with ``numpy.random.default_rng(seed)``; ``round(test_fraction * n_row)`` images of each
row go to the test set (``msrc_split``). Features are standardized with the training images' statistics.

Cache: segmenting and describing the 591 images is done once per segmentation setting and stored in
``cache_dir()`` (``$ZOO_CACHE``, else ``$XDG_CACHE_HOME/zoo``, else ``~/.cache/zoo``) under a key that hashes the
segmentation method, its parameters, the code version and the image list; other parameters change the key, so a
stale file is never read.
"""
from __future__ import annotations

import hashlib
import json
import os
import pathlib
from typing import Any

import numpy as np

from zoo.data import visual_words as vw
from zoo.data.location import dataset_path, register_loader
# the class labels and the per-region ground truth live in zoo.data.msrc_labels; re-exported here
from zoo.data.msrc_labels import N_LABEL_VALUES as _N_LABEL_VALUES, class_mapping as _class_mapping
from zoo.data.msrc_labels import (MSRC21_DROPPED, MSRC_CLASSES, keywords_from_label_map, region_class_counts,
                                  region_labels_from_counts)

__all__ = ["MSRC_FOLDER", "MSRC_CLASSES", "MSRC21_DROPPED", "cache_dir", "msrc_root", "cache_key", "is_cached",
           "msrc_image_names", "msrc_split",
           "read_msrc_image", "read_msrc_label_map", "region_class_counts", "region_labels_from_counts",
           "keywords_from_label_map", "msrc_region_table", "msrc_region_maps", "load_msrc_v2",
           "msrc_counts", "plot_msrc_image"]

MSRC_FOLDER = "msrc_v2"
# cache version per segmentation method: bump one whenever its segmentation (or the statistics) code changes output
_CACHE_VERSIONS = {"ncut": 4, "slic": 3, "felzenszwalb": 3}
_ANNOTATION_FOLDERS = {"original": "labels", "cleaned": "labels_cleaned"}


# --------------------------------------------------------------------------------------------- files and split
def cache_dir() -> pathlib.Path:
    """The user cache folder of the zoo: $ZOO_CACHE, else $XDG_CACHE_HOME/zoo, else ~/.cache/zoo (created)."""
    root = os.environ.get("ZOO_CACHE")
    if root:
        path = pathlib.Path(root)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        path = (pathlib.Path(xdg) if xdg else pathlib.Path.home() / ".cache") / "zoo"
    path.mkdir(parents=True, exist_ok=True)
    return path


def msrc_root() -> pathlib.Path:
    """The MSRC-v2 folder (classes.txt, images/, labels/, labels_cleaned/); FileNotFoundError when absent."""
    return dataset_path(MSRC_FOLDER, "classes.txt", "images", "labels", "labels_cleaned")


def _check_classes_file(root: pathlib.Path) -> None:
    rows = [line.split("\t") for line in (root / "classes.txt").read_text().splitlines() if line.strip()]
    names = tuple(name.strip() for _, name in rows[1:])
    if names != MSRC_CLASSES:
        raise ValueError(f"{root / 'classes.txt'}: class list differs from the MSRC-v2 order this loader expects")


def msrc_image_names() -> list[str]:
    """The 591 image stems (e.g. "1_1_s"), sorted by (row, number) of the database layout."""
    root = msrc_root()
    names = [p.stem for p in (root / "images").glob("*.png")]
    if not names:
        raise FileNotFoundError(f"no images/*.png under {root}")
    return sorted(names, key=_name_order)


def _name_order(name: str) -> tuple[int, int, str]:
    parts = name.split("_")
    try:
        return int(parts[0]), int(parts[1]), name
    except (IndexError, ValueError):
        raise ValueError(f"image name {name!r}: expected ROW_NUMBER_s as in MSRC-v2") from None


def msrc_split(names: list[str], test_fraction: float = 0.5, seed: int = 0) -> tuple[list[str], list[str]]:
    """Seeded train/test split stratified by database row: (train names, test names), each in database order.

    Within each row the images are permuted by ``numpy.random.default_rng([seed, row])`` and the first
    ``round(test_fraction * n_row)`` go to the test set, so every row is represented in both sets.
    """
    if not 0.0 < float(test_fraction) < 1.0:
        raise ValueError(f"test_fraction: must lie strictly between 0 and 1, got {test_fraction!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed: expected a non-negative int, got {seed!r}")
    rows: dict[int, list[str]] = {}
    for name in sorted(names, key=_name_order):
        rows.setdefault(_name_order(name)[0], []).append(name)
    test: set[str] = set()
    for row, members in rows.items():
        order = np.random.default_rng([int(seed), row]).permutation(len(members))
        n_test = int(round(test_fraction * len(members)))
        test.update(members[i] for i in order[:n_test])
    ordered = sorted(names, key=_name_order)
    return [n for n in ordered if n not in test], [n for n in ordered if n in test]


def read_msrc_image(name: str) -> np.ndarray:
    """The RGB photograph ``images/NAME.png``: (H, W, 3) uint8."""
    from PIL import Image

    with Image.open(msrc_root() / "images" / f"{name}.png") as im:
        return np.asarray(im.convert("RGB"))


def read_msrc_label_map(name: str, annotation: str = "original") -> np.ndarray:
    """The per-pixel class map (H, W) uint8: 0 void, k in 1..23 = MSRC_CLASSES[k - 1]."""
    if annotation not in _ANNOTATION_FOLDERS:
        raise ValueError(f"annotation: expected 'original' or 'cleaned', got {annotation!r}")
    from PIL import Image

    with Image.open(msrc_root() / _ANNOTATION_FOLDERS[annotation] / f"{name}.png") as im:
        return np.asarray(im)


# --------------------------------------------------------------------------------------------- ground truth
# region_class_counts, class_mapping (here _class_mapping), region_labels_from_counts, keywords_from_label_map:
# zoo.data.msrc_labels


# --------------------------------------------------------------------------------------------- the region table
def _describe_image(task: tuple) -> dict:
    """Worker: segment one image, compute its 16 region statistics and its class counts in both annotations."""
    name, method, params = task
    from zoo.data.region_features import region_statistics
    from zoo.data.regions import segment_image

    image = read_msrc_image(name)
    region_map = segment_image(image, method, **params)
    return {"name": name, "region_map": region_map.astype(np.uint8 if region_map.max() < 256 else np.int32),
            "statistics": region_statistics(image, region_map),
            "original": region_class_counts(region_map, read_msrc_label_map(name, "original")),
            "cleaned": region_class_counts(region_map, read_msrc_label_map(name, "cleaned"))}


def cache_key(method: str, params: dict, names: list[str]) -> str:
    """The cache file stem of the ``method`` regions with full ``params`` of the images ``names``."""
    blob = json.dumps({"version": _CACHE_VERSIONS[method], "method": method, "params": params,
                       "names": hashlib.sha1("\n".join(names).encode()).hexdigest()}, sort_keys=True)
    return f"msrc_v2_{method}_{hashlib.sha1(blob.encode()).hexdigest()[:16]}"


def is_cached(segmentation: str, segmentation_params: dict | None = None) -> bool:
    """Whether the MSRC-v2 regions of ``segmentation`` (default parameters unless given) are cached already;
    FileNotFoundError when the data are absent."""
    from zoo.data.regions import segmentation_params as full_params
    key = cache_key(segmentation, full_params(segmentation, **(segmentation_params or {})), msrc_image_names())
    return (cache_dir() / f"{key}.npz").exists() and (cache_dir() / f"{key}_maps.npz").exists()




def msrc_region_table(segmentation: str = "ncut", segmentation_params: dict | None = None, *,
                      n_jobs: int | None = None, progress: bool = True, refresh: bool = False) -> dict[str, Any]:
    """Segment and describe all MSRC-v2 images once, with an on-disk cache.

    Returns a dict of arrays: ``names`` (I,) image stems in database order; ``image_index`` (R,) index into names;
    ``statistics`` (R, 16) raw region statistics (``zoo.data.region_features.STATISTIC_NAMES``);
    ``counts_original`` and ``counts_cleaned`` (R, 24) pixel counts per label value; ``image_counts_original``
    and ``image_counts_cleaned`` (I, 24); ``key`` the cache key. ``refresh=True`` recomputes.
    """
    from zoo.data.regions import parallel_map
    from zoo.data.regions import segmentation_params as full_params

    params = full_params(segmentation, **(segmentation_params or {}))
    root = msrc_root()
    _check_classes_file(root)
    names = msrc_image_names()
    key = cache_key(segmentation, params, names)
    table_path = cache_dir() / f"{key}.npz"
    maps_path = cache_dir() / f"{key}_maps.npz"
    if table_path.exists() and maps_path.exists() and not refresh:
        with np.load(table_path, allow_pickle=False) as f:
            table = {k: f[k] for k in f.files}
        if list(table["names"]) == names:
            table["key"] = key
            return table
    results = parallel_map(_describe_image, [(name, segmentation, params) for name in names], n_jobs, progress,
                           f"MSRC-v2 {segmentation}")
    sizes = [len(r["statistics"]) for r in results]
    table = {"names": np.array(names), "image_index": np.repeat(np.arange(len(names)), sizes),
             "statistics": np.concatenate([r["statistics"] for r in results])}
    for annotation in ("original", "cleaned"):
        counts = [r[annotation] for r in results]
        table[f"counts_{annotation}"] = np.concatenate(counts)
        table[f"image_counts_{annotation}"] = np.stack([c.sum(axis=0) for c in counts])
    # write under process-unique names, then rename: readers (other processes) never see a partial file
    maps_tmp = maps_path.with_name(f"{maps_path.stem}.{os.getpid()}.tmp.npz")
    np.savez_compressed(maps_tmp, **{r["name"]: r["region_map"] for r in results})
    tmp = table_path.with_name(f"{key}.{os.getpid()}.tmp.npz")
    np.savez_compressed(tmp, **table)
    os.replace(maps_tmp, maps_path)
    os.replace(tmp, table_path)  # written last: its presence means both files are complete
    table["key"] = key
    return table


def msrc_region_maps(segmentation: str = "ncut", segmentation_params: dict | None = None,
                     names: list[str] | None = None, **table_options) -> dict[str, np.ndarray]:
    """Region maps (H, W) of MSRC-v2 images (all, or ``names``) from the cache (computed first if needed)."""
    table = msrc_region_table(segmentation, segmentation_params, **table_options)
    with np.load(cache_dir() / f"{table['key']}_maps.npz", allow_pickle=False) as f:
        wanted = f.files if names is None else names
        missing = [n for n in wanted if n not in f.files]
        if missing:
            raise ValueError(f"names: {missing[0]!r} is not an MSRC-v2 image")
        return {n: f[n].astype(np.int32) for n in wanted}


# --------------------------------------------------------------------------------------------- the loader
_SPLITS = ("train", "test", "all")


@register_loader("msrc_v2", "MSRC-v2: 591 photos segmented into regions with per-region ground truth "
                             "(AnnotatedRegions, or MultimodalCounts with form='counts')",
                 files=tuple(f"{MSRC_FOLDER}/{name}" for name in ("classes.txt", "images", "labels", "labels_cleaned")))
def load_msrc_v2(segmentation: str = "ncut", features: str = "carbonetto03", annotation: str = "original",
                 split: str = "train", *, classes: str = "all", test_fraction: float = 0.5, seed: int = 0,
                 min_labelled: float = 0.5, standardize: bool = True, form: str = "regions",
                 segmentation_params: dict | None = None, n_jobs: int | None = None, progress: bool = True,
                 **visual_word_options):
    """MSRC-v2 as ``AnnotatedRegions`` (``form="regions"``) or ``MultimodalCounts`` (``form="counts"``).

    segmentation: "ncut" (default, Normalized Cuts as in the papers) | "slic" | "felzenszwalb", with
    ``segmentation_params`` overriding ``zoo.data.regions.DEFAULT_SEGMENTATION_PARAMS``; features:
    "carbonetto03" (10) | "gustafson07" (16) | "kueck04" (6), standardized with the training split's statistics
    (``standardize=False``: raw values); annotation: "original" | "cleaned"; split: "train" | "test" | "all";
    classes: "all" (23) | "msrc21". The split's images are numbered 0..I-1 in ``msrc_split`` order.
    ``form="counts"`` takes the options of ``zoo.data.visual_words.msrc_counts`` (``visual_words="blobs"`` |
    ``"dense"``, ``n_visual_words``, ...). The first call segments all 591 images (progress bar; cached).
    """
    from zoo.data.containers import AnnotatedRegions
    from zoo.data.region_features import feature_names

    feature_names(features)
    if annotation not in _ANNOTATION_FOLDERS:
        raise ValueError(f"annotation: expected 'original' or 'cleaned', got {annotation!r}")
    if split not in _SPLITS:
        raise ValueError(f"split: expected one of {', '.join(_SPLITS)}, got {split!r}")
    if form not in ("regions", "counts"):
        raise ValueError(f"form: expected 'regions' or 'counts', got {form!r}")
    if form == "counts" and not standardize:
        raise ValueError("standardize: form='counts' always quantizes standardized features; leave it True")
    if form == "regions" and visual_word_options:
        raise ValueError(f"{next(iter(visual_word_options))}: not an option of msrc_v2 with form='regions'")
    vocabulary, mapping = _class_mapping(classes)
    region_labels_from_counts(np.zeros((0, _N_LABEL_VALUES), dtype=np.int64), mapping, min_labelled)
    table = msrc_region_table(segmentation, segmentation_params, n_jobs=n_jobs, progress=progress)
    names = [str(n) for n in table["names"]]
    train, test = msrc_split(names, test_fraction, seed)
    chosen = {"train": train, "test": test, "all": names}[split]
    if form == "counts":
        return msrc_counts(table, chosen, train, vocabulary, mapping, features=features,
                           annotation=annotation, min_labelled=min_labelled, segmentation=segmentation,
                           segmentation_params=segmentation_params, n_jobs=n_jobs, progress=progress,
                           **visual_word_options)
    X, image_ids, keywords, labels = _split_arrays(table, chosen, features, annotation, mapping, vocabulary,
                                                   min_labelled)
    if standardize:
        X = _standardize_with_train(table, X, train, features)
    return AnnotatedRegions(X=X, image_ids=image_ids, keywords=keywords, vocabulary=vocabulary,
                            region_labels=labels)


def _split_arrays(table, chosen, features, annotation, mapping, vocabulary, min_labelled):
    """Raw features (R, D), image ids (R,), keywords (I) and region labels (R,) of the images ``chosen``."""
    from zoo.data.region_features import select_features

    index = {str(n): i for i, n in enumerate(table["names"])}
    wanted = np.array([index[n] for n in chosen])
    position = np.full(len(index), -1)
    position[wanted] = np.arange(len(wanted))
    rows = np.flatnonzero(position[table["image_index"]] >= 0)
    rows = rows[np.argsort(position[table["image_index"][rows]], kind="stable")]
    X = select_features(table["statistics"][rows], features)
    image_ids = position[table["image_index"][rows]]
    labels = region_labels_from_counts(table[f"counts_{annotation}"][rows], mapping, min_labelled)
    keywords = [keywords_from_label_map(table[f"image_counts_{annotation}"][i], mapping, vocabulary)
                for i in wanted]
    empty = [chosen[i] for i, kw in enumerate(keywords) if not kw]
    if empty:  # cannot happen with the shipped maps (every image has a class, PROVENANCE.md); say so if it does
        raise ValueError(f"keywords: images {', '.join(empty[:5])} have no class left in this class setting")
    return X, image_ids, keywords, labels


def _standardize_with_train(table, X, train, features):
    from zoo.data.region_features import fit_standardizer, select_features, standardize

    index = {str(n): i for i, n in enumerate(table["names"])}
    train_rows = np.isin(table["image_index"], [index[n] for n in train])
    return standardize(X, fit_standardizer(select_features(table["statistics"][train_rows], features)))


def plot_msrc_image(name: str, segmentation: str = "ncut", annotation: str = "original", *, classes: str = "all",
                    min_labelled: float = 0.5, segmentation_params: dict | None = None, ax=None):
    """Figure of one MSRC-v2 photograph: its segmentation with each region's ground-truth label ("-": unlabelled).

    Uses the cached region maps (``msrc_region_table``). Returns the matplotlib Axes.
    """
    from zoo.data.regions import plot_segmentation

    vocabulary, mapping = _class_mapping(classes)
    region_map = msrc_region_maps(segmentation, segmentation_params, names=[name])[name]
    counts = region_class_counts(region_map, read_msrc_label_map(name, annotation))
    labels = region_labels_from_counts(counts, mapping, min_labelled)
    return plot_segmentation(read_msrc_image(name), region_map, labels, vocabulary, ax=ax,
                             title=f"{name} ({segmentation}, {annotation})")


# ------------------------------------------------------------------------------------ counts form (visual words)
def _dense_worker(task):
    """Worker: DAISY grid descriptors of one MSRC image and the region (of its cached map) at each grid point."""
    name, region_map, params = task
    rows, cols, desc = vw.dense_descriptors(read_msrc_image(name), **params)
    return name, region_map[rows, cols].astype(np.int64), desc.astype(np.float32)


def _dense_region_counts(table, segmentation, segmentation_params, train, params, n_visual_words, seed,
                         n_jobs, progress):
    """(R_all, V) dense visual-word counts of every region of the table, codebook from ``train``; cached."""
    from zoo.data.regions import parallel_map

    blob = json.dumps({"v": vw.DENSE_VERSION, "table": str(table["key"]), "params": params, "V": n_visual_words,
                       "seed": seed, "train": hashlib.sha1("\n".join(train).encode()).hexdigest()}, sort_keys=True)
    path = cache_dir() / f"{table['key']}_dense_{hashlib.sha1(blob.encode()).hexdigest()[:16]}.npz"
    if path.exists():
        with np.load(path, allow_pickle=False) as f:
            return f["region_counts"]
    names = [str(n) for n in table["names"]]
    maps = msrc_region_maps(segmentation, segmentation_params, progress=progress)
    tasks = [(n, maps[n], params) for n in names]
    results = parallel_map(_dense_worker, tasks, n_jobs, progress, "MSRC-v2 dense descriptors")
    rng = np.random.default_rng(seed)
    train_set = set(train)
    sample = np.concatenate([r[2][rng.choice(len(r[2]), min(len(r[2]), 100), replace=False)]
                             for r in results if r[0] in train_set])  # ~100 patches per training image
    centres, _ = vw.kmeans(sample.astype(np.float64), n_visual_words, seed=seed, max_iter=30)
    offsets = np.concatenate([[0], np.cumsum(np.bincount(table["image_index"], minlength=len(names)))])
    region_counts = np.zeros((len(table["image_index"]), n_visual_words), dtype=np.int64)
    for i, (_, region_ids, desc) in enumerate(results):
        n_regions = offsets[i + 1] - offsets[i]
        words = vw.quantize(desc.astype(np.float64), centres)
        region_counts[offsets[i]:offsets[i + 1]] = vw.region_word_counts(words, region_ids, n_regions, n_visual_words)
    tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npz")
    np.savez_compressed(tmp, region_counts=region_counts)
    os.replace(tmp, path)
    return region_counts


def msrc_counts(table, chosen, train, vocabulary, mapping, *, features, annotation, min_labelled, segmentation,
                segmentation_params, visual_words: str = "blobs", n_visual_words: int | None = None,
                codebook_seed: int = 0, dense_params: dict | None = None, n_jobs: int | None = None,
                progress: bool = True):
    """MSRC-v2 as ``MultimodalCounts`` (called by ``load_msrc_v2(form="counts")``; its options are these).

    visual_words: "blobs" (default 64 tokens, k-means of the standardized ``features`` of the training regions) |
    "dense" (default 500 words, DAISY patches, ``dense_params`` overriding ``vw.DEFAULT_DENSE_PARAMS``);
    codebook_seed seeds k-means. words (I, W) are keyword indicators; region_labels the true region labels.
    """
    from zoo.data.containers import MultimodalCounts

    if visual_words not in ("blobs", "dense"):
        raise ValueError(f"visual_words: expected 'blobs' or 'dense', got {visual_words!r}")
    n_visual_words = (64 if visual_words == "blobs" else 500) if n_visual_words is None else n_visual_words
    params = dict(vw.DEFAULT_DENSE_PARAMS)
    unknown = sorted(set(dense_params or {}) - set(params))
    if unknown:
        raise ValueError(f"dense_params: unknown parameter {unknown[0]!r}; parameters: {', '.join(params)}")
    params.update(dense_params or {})
    X, image_ids, keywords, labels = _split_arrays(table, chosen, features, annotation, mapping, vocabulary,
                                                   min_labelled)
    if visual_words == "blobs":
        X_train = _split_arrays(table, train, features, annotation, mapping, vocabulary, min_labelled)[0]
        X_train_std = _standardize_with_train(table, X_train, train, features)
        _, tokens = vw.blob_tokens(X_train_std, _standardize_with_train(table, X, train, features), n_visual_words,
                                codebook_seed)
        region_counts = vw.one_hot_counts(tokens, n_visual_words)
        names = [f"blob{v}" for v in range(n_visual_words)]
    else:
        all_counts = _dense_region_counts(table, segmentation, segmentation_params, train, params, n_visual_words,
                                          codebook_seed, n_jobs, progress)
        index = {str(n): i for i, n in enumerate(table["names"])}
        position = np.full(len(index), -1)
        position[[index[n] for n in chosen]] = np.arange(len(chosen))
        rows = np.flatnonzero(position[table["image_index"]] >= 0)
        rows = rows[np.argsort(position[table["image_index"][rows]], kind="stable")]
        region_counts = all_counts[rows]
        names = [f"daisy{v}" for v in range(n_visual_words)]
    word_index = {w: k for k, w in enumerate(vocabulary)}
    words = np.zeros((len(chosen), len(vocabulary)), dtype=np.int64)
    for i, kw in enumerate(keywords):
        words[i, [word_index[w] for w in kw]] = 1
    return MultimodalCounts(words=words, visual_words=vw.image_sums(region_counts, image_ids, len(chosen)),
                            word_vocabulary=list(vocabulary), visual_vocabulary=names,
                            region_visual_words=region_counts, region_image_ids=image_ids, region_labels=labels)
