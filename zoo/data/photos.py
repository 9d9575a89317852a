"""Bring your own photos: a folder of images plus a captions file -> ``AnnotatedRegions``.

Python: ``photos_to_regions("my_photos/", "captions.txt", features="carbonetto03")``; data-set registry:
``zoo.load_dataset("photos", folder=..., captions=...)``; command line: ``zoo regions FOLDER --captions FILE
--features NAME --out FILE.npz`` (``save_regions``/``load_regions`` read and write that file, no pickle).

Captions file (UTF-8): one image per line, ``FILE<TAB>word word ...`` (without a TAB: the first whitespace-
separated token is the file, the rest are words; commas also separate words). Blank lines and lines starting
with ``#`` are ignored. FILE is a path relative to the folder, with or without its extension.

Problems are never silently dropped. Each of these is collected, with the image's name: a caption naming a missing
image, an image with no caption (or an empty one), an image listed twice, an unreadable file, a grayscale image, a
keyword outside ``vocabulary``. With ``on_problem="raise"`` (default) a ``ValueError`` lists them all before any
segmentation; with ``on_problem="skip"`` those images are left out, a warning states how many and why, and
``return_details=True`` returns them in ``PhotoDetails.skipped``.
"""
from __future__ import annotations

import dataclasses
import json
import pathlib
import warnings

import numpy as np

from zoo.data.location import register_loader

__all__ = ["IMAGE_EXTENSIONS", "PhotoDetails", "read_captions", "photos_to_regions", "save_regions",
           "load_regions", "regions_command", "default_captions"]

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".gif", ".webp")


@dataclasses.dataclass(frozen=True)
class PhotoDetails:
    """What ``photos_to_regions`` did: image names (I,) in image-id order, their region maps (at the size that
    was segmented, see ``max_side``), the skipped images as (name, reason) pairs, and the standardizer (None when
    ``standardize=False``)."""

    names: list
    region_maps: list
    skipped: list
    standardizer: object


def read_captions(path) -> dict[str, tuple[str, ...]]:
    """Parse a captions file: {file name as written: keywords}. ValueError (with the line number) on a bad line."""
    path = pathlib.Path(path)
    if not path.is_file():
        raise ValueError(f"captions: file {str(path)!r} not found")
    out: dict[str, tuple[str, ...]] = {}
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if "\t" in raw:
            name, rest = raw.split("\t", 1)
        else:
            name, _, rest = line.partition(" ")
        name = name.strip()
        words = tuple(w for w in rest.replace(",", " ").split() if w)
        if name in out:
            raise ValueError(f"captions: line {number} lists {name!r} a second time")
        out[name] = words
    if not out:
        raise ValueError(f"captions: {str(path)!r} has no caption lines")
    return out


def _folder_images(folder: pathlib.Path) -> list[pathlib.Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS)


def _match_captions(folder: pathlib.Path, captions: dict, vocabulary) -> tuple[list, list]:
    """Pair caption lines with files: ([(name, path, keywords)], [(name, problem)])."""
    files = _folder_images(folder)
    by_relative = {p.relative_to(folder).as_posix(): p for p in files}
    by_stem: dict[str, list] = {}
    for rel, p in by_relative.items():
        by_stem.setdefault(rel.rsplit(".", 1)[0], []).append(p)
    vocab = None if vocabulary is None else set(vocabulary)
    matched, problems, used = [], [], set()
    for name, words in captions.items():
        path = by_relative.get(name)
        if path is None:
            candidates = by_stem.get(name, [])
            if len(candidates) > 1:
                problems.append((name, f"ambiguous: {len(candidates)} files share this name without extension"))
                continue
            path = candidates[0] if candidates else None
        if path is None:
            problems.append((name, "caption names an image that is not in the folder"))
            continue
        if path in used:
            problems.append((name, f"image {path.name} is captioned twice"))
            continue
        used.add(path)
        if not words:
            problems.append((name, "image has an empty caption"))
            continue
        outside = [w for w in words if vocab is not None and w not in vocab]
        if outside:
            problems.append((name, f"keyword {outside[0]!r} is outside the vocabulary"))
            continue
        matched.append((name, path, tuple(dict.fromkeys(words))))
    for rel, path in by_relative.items():
        if path not in used:
            problems.append((rel, "image has no caption line"))
    return matched, problems


def _read_photo(path: pathlib.Path, max_side: int | None) -> np.ndarray:
    """Decode an image file to an array; ValueError (unreadable, grayscale, ...) naming the file.

    The camera's EXIF orientation is applied (phone photos come out upright), and an image whose longer side
    exceeds ``max_side`` is shrunk to it (Lanczos); region features are relative to the image size.
    """
    from PIL import Image, ImageOps, UnidentifiedImageError

    from zoo.data.regions import as_rgb_image

    try:
        with Image.open(path) as im:
            im.load()
            if im.mode in ("L", "I", "I;16", "F", "1", "LA"):
                raise ValueError(f"{path.name}: grayscale image (mode {im.mode}); region features need colour")
            im = ImageOps.exif_transpose(im)
            if max_side is not None and max(im.size) > max_side:
                scale = max_side / max(im.size)
                im = im.resize((max(1, round(im.size[0] * scale)), max(1, round(im.size[1] * scale))),
                               Image.Resampling.LANCZOS)
            array = np.asarray(im if im.mode == "RGBA" else im.convert("RGB"))
    except (UnidentifiedImageError, OSError) as err:
        raise ValueError(f"{path.name}: unreadable image ({err.__class__.__name__})") from None
    as_rgb_image(array, name=path.name)  # shape, alpha, size checks
    return array


def _describe_photo(task):
    """Worker: segment one photo and compute its 16 region statistics."""
    array, method, params = task
    from zoo.data.region_features import region_statistics
    from zoo.data.regions import as_rgb_image, segment_image

    rgb = as_rgb_image(array)
    region_map = segment_image(rgb, method, **params)
    return region_map, region_statistics(rgb, region_map)


def photos_to_regions(folder, captions, *, features: str = "carbonetto03", segmentation: str = "ncut",
                      segmentation_params: dict | None = None, vocabulary=None, standardize: bool = True,
                      on_problem: str = "raise", max_side: int | None = 640, n_jobs: int | None = 1,
                      progress: bool = True, return_details: bool = False):
    """Segment and describe a folder of captioned photos: ``AnnotatedRegions`` (no region_labels).

    folder: directory of images (searched recursively); captions: captions file (see module doc); features:
    "carbonetto03" | "gustafson07" | "kueck04"; segmentation: "ncut" | "slic" | "felzenszwalb"; vocabulary: the
    allowed words (default: every caption word, sorted); standardize: features to mean 0, variance 1 over these
    photos; on_problem: "raise" | "skip"; max_side: larger photos are shrunk so that their longer side has this
    many pixels (None: keep the size; the papers' Corel images were 384 x 256, MSRC-v2's 320 x 213), and the
    camera's EXIF orientation is applied. Images are numbered in caption-file order.
    Returns the regions, or (regions, PhotoDetails) with ``return_details=True``.
    """
    from zoo.data.containers import AnnotatedRegions
    from zoo.data.region_features import feature_names, fit_standardizer, select_features
    from zoo.data.region_features import standardize as apply_standardizer
    from zoo.data.regions import parallel_map
    from zoo.data.regions import segmentation_params as full_params

    feature_names(features)
    params = full_params(segmentation, **(segmentation_params or {}))
    if max_side is not None and (isinstance(max_side, bool) or not isinstance(max_side, int) or max_side < 8):
        raise ValueError(f"max_side: expected an int >= 8 or None, got {max_side!r}")
    if on_problem not in ("raise", "skip"):
        raise ValueError(f"on_problem: expected 'raise' or 'skip', got {on_problem!r}")
    folder = pathlib.Path(folder)
    if not folder.is_dir():
        raise ValueError(f"folder: {str(folder)!r} is not a directory")
    if vocabulary is not None:
        vocabulary = [str(w) for w in vocabulary]
    matched, problems = _match_captions(folder, read_captions(captions), vocabulary)
    arrays, kept = [], []
    for name, path, words in matched:
        try:
            arrays.append(_read_photo(path, max_side))
            kept.append((name, words))
        except ValueError as err:
            problems.append((name, str(err)))
    if problems and on_problem == "raise":
        listing = "; ".join(f"{n}: {why}" for n, why in problems[:10])
        more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
        raise ValueError(f"photos: {len(problems)} problem(s): {listing}{more}. Fix them, or pass "
                         f"on_problem='skip' to leave those images out")
    if problems:
        warnings.warn(f"photos: skipped {len(problems)} image(s): "
                      + "; ".join(f"{n} ({why})" for n, why in problems[:10]), stacklevel=2)
    if not kept:
        raise ValueError("photos: no usable captioned image in the folder")
    results = parallel_map(_describe_photo, [(a, segmentation, params) for a in arrays], n_jobs, progress,
                           f"photos ({segmentation})")
    X = select_features(np.concatenate([stats for _, stats in results]), features)
    image_ids = np.repeat(np.arange(len(results)), [len(stats) for _, stats in results])
    scaler = fit_standardizer(X) if standardize else None
    if scaler is not None:
        X = apply_standardizer(X, scaler)
    words = [kw for _, kw in kept]
    vocab = vocabulary if vocabulary is not None else sorted({w for kw in words for w in kw})
    regions = AnnotatedRegions(X=X, image_ids=image_ids, keywords=words, vocabulary=vocab,
                               image_names=[n for n, _ in kept])
    if return_details:
        return regions, PhotoDetails(names=[n for n, _ in kept], region_maps=[m for m, _ in results],
                                     skipped=problems, standardizer=scaler)
    return regions


@register_loader("photos", "your own photos: folder + captions file -> AnnotatedRegions (zoo.data.photos)",
                 kind="user")
def load_photos(folder=None, captions=None, **options):
    """``photos_to_regions(folder, captions, **options)`` through ``zoo.load_dataset("photos", folder=...,
    captions=...)``; without ``captions``, the folder's own ``captions.txt`` when it has one."""
    if folder is None:
        raise ValueError("photos: name the folder of photos and its captions file: zoo.load_dataset('photos', "
                         "folder='my_photos', captions='captions.txt') (or `zoo regions FOLDER --captions FILE`)")
    if captions is None:
        captions = default_captions(folder)
    return photos_to_regions(folder, captions, **options)


def default_captions(folder) -> pathlib.Path:
    """The captions file of a folder of photos when none is named: ``FOLDER/captions.txt`` (ValueError if absent)."""
    path = pathlib.Path(folder) / "captions.txt"
    if not path.is_file():
        raise ValueError(f"photos: no captions file named for the folder {str(folder)!r}, and it has no "
                         f"captions.txt; pass one (--captions FILE, or captions=...): lines 'FILE<TAB>word word'")
    return path


def save_regions(path, regions, names=None, overwrite: bool = False) -> pathlib.Path:
    """Write ``AnnotatedRegions`` (and optional image names) to an .npz readable without pickle
    (``zoo.data.container_files.save_container``: ``zoo.load_dataset(path)``, ``zoo fit --data path`` and
    ``load_regions`` read it back as the ``AnnotatedRegions`` it holds); returns the path written (``.npz`` added
    when missing). An existing file is kept (ValueError) unless ``overwrite``."""
    from zoo.data.container_files import save_container
    if names is not None:
        regions = dataclasses.replace(regions, image_names=names)
    return save_container(path, regions, overwrite=overwrite)


def load_regions(path):
    """Read a file of ``save_regions`` (or ``zoo regions``): the ``AnnotatedRegions`` it holds, image names in
    ``.image_names`` (``zoo.load_dataset(path)`` does the same)."""
    from zoo.data.container_files import load_container
    from zoo.data.containers import AnnotatedRegions

    regions = load_container(path)
    if not isinstance(regions, AnnotatedRegions):
        raise ValueError(f"{path}: holds {type(regions).__name__}, not AnnotatedRegions")
    return regions


def regions_command(args) -> int:
    """``zoo regions`` (arguments in ``zoo.cli.build_parser``)."""
    regions, details = photos_to_regions(args.folder, args.captions, features=args.features,
                                         segmentation=args.segmentation, on_problem=args.on_problem,
                                         max_side=args.max_side,
                                         n_jobs=args.jobs, return_details=True)
    out = save_regions(args.out, regions, overwrite=args.force)
    print(f"{regions.n_images} images, {regions.X.shape[0]} regions, {regions.X.shape[1]} features "
          f"({args.features}), {len(regions.vocabulary)} words; skipped {len(details.skipped)}; written to {out}")
    return 0
