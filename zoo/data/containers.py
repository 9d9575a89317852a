"""Typed data containers, validated at construction.

Each raises a ``ValueError`` naming the field and the problem; nothing is silently dropped or coerced.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

__all__ = ["check_features", "Bags", "AnnotatedRegions", "MultimodalCounts", "Matrix"]


def check_features(X, name: str = "X", *, allow_nan: bool = False) -> np.ndarray:
    """A (N, D) float64 array of finite numbers; ValueError naming ``name`` otherwise."""
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a numeric (N, D) array") from None
    if arr.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D array (N, D), got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name}: empty array of shape {arr.shape}")
    bad = ~np.isfinite(arr) if not allow_nan else np.isinf(arr)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        what = "NaN or inf" if not allow_nan else "inf"
        raise ValueError(f"{name}: {int(bad.sum())} entries are {what} (first at row {i}, column {j})")
    return arr


def _int_vector(values, name: str, length: int | None = None) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        if not np.all(np.isfinite(arr.astype(float))) or np.any(arr.astype(float) != np.round(arr.astype(float))):
            raise ValueError(f"{name}: expected integers")
    arr = arr.astype(np.int64)
    if length is not None and arr.shape[0] != length:
        raise ValueError(f"{name}: expected length {length}, got {arr.shape[0]}")
    return arr


@dataclasses.dataclass(frozen=True)
class Bags:
    """Multiple-instance data: instances X (N, D) grouped into bags.

    bag_ids (N,) int in 0..B-1 (every bag non-empty); bag_labels (B,) in {0, 1} (standard MIL: 1 = at least one
    positive instance); group_labels (B,) in {"negative", "mixed", "positive"} (the thesis' constraint labels);
    fractions (B,) in [0, 1] (guessed share of positives); instance_labels (N,) in {0, 1} (for scoring or the
    supervised model).
    """

    X: np.ndarray
    bag_ids: np.ndarray
    bag_labels: np.ndarray | None = None
    group_labels: np.ndarray | None = None
    fractions: np.ndarray | None = None
    instance_labels: np.ndarray | None = None

    def __post_init__(self):
        X = check_features(self.X, "X")
        n = X.shape[0]
        bag_ids = _int_vector(self.bag_ids, "bag_ids", n)
        if bag_ids.min() < 0:
            raise ValueError("bag_ids: negative bag id")
        n_bags = int(bag_ids.max()) + 1
        missing = np.setdiff1d(np.arange(n_bags), bag_ids)
        if missing.size:
            raise ValueError(f"bag_ids: bags must be numbered 0..B-1 without gaps; bag {missing[0]} has no instance")
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "bag_ids", bag_ids)
        if self.bag_labels is not None:
            lab = _int_vector(self.bag_labels, "bag_labels", n_bags)
            if not np.isin(lab, (0, 1)).all():
                raise ValueError("bag_labels: values must be 0 or 1")
            object.__setattr__(self, "bag_labels", lab)
        if self.group_labels is not None:
            g = np.asarray(self.group_labels).astype(str)
            if g.shape != (n_bags,):
                raise ValueError(f"group_labels: expected shape ({n_bags},), got {g.shape}")
            bad = ~np.isin(g, ("negative", "mixed", "positive"))
            if bad.any():
                raise ValueError(f"group_labels: {g[bad][0]!r} is not one of 'negative', 'mixed', 'positive'")
            object.__setattr__(self, "group_labels", g)
        if self.fractions is not None:
            f = np.asarray(self.fractions, dtype=np.float64)
            if f.shape != (n_bags,):
                raise ValueError(f"fractions: expected shape ({n_bags},), got {f.shape}")
            if not np.all(np.isfinite(f)) or f.min() < 0 or f.max() > 1:
                raise ValueError("fractions: values must lie in [0, 1]")
            object.__setattr__(self, "fractions", f)
        if self.instance_labels is not None:
            y = _int_vector(self.instance_labels, "instance_labels", n)
            if not np.isin(y, (0, 1)).all():
                raise ValueError("instance_labels: values must be 0 or 1")
            object.__setattr__(self, "instance_labels", y)

    @property
    def n_bags(self) -> int:
        return int(self.bag_ids.max()) + 1


@dataclasses.dataclass(frozen=True)
class AnnotatedRegions:
    """Regions of annotated images.

    X (R, D) region features; image_ids (R,) int in 0..I-1; keywords: a sequence of I collections of words (image
    i's keywords, each in ``vocabulary``; every image with a region has at least one keyword unless
    ``allow_unannotated``); vocabulary: list of distinct words; region_labels (R,) int, index into vocabulary or
    -1 (ground truth, for scoring only).
    """

    X: np.ndarray
    image_ids: np.ndarray
    keywords: Sequence
    vocabulary: Sequence[str]
    region_labels: np.ndarray | None = None
    allow_unannotated: bool = False

    def __post_init__(self):
        X = check_features(self.X, "X")
        r = X.shape[0]
        image_ids = _int_vector(self.image_ids, "image_ids", r)
        vocab = [str(w) for w in self.vocabulary]
        if len(vocab) == 0:
            raise ValueError("vocabulary: empty")
        if len(set(vocab)) != len(vocab):
            raise ValueError("vocabulary: words must be distinct")
        if isinstance(self.keywords, (str, bytes)):
            raise ValueError("keywords: expected a sequence of per-image keyword collections")
        keywords = [tuple(str(w) for w in kw) for kw in self.keywords]
        n_images = len(keywords)
        if image_ids.min() < 0 or image_ids.max() >= n_images:
            raise ValueError(f"image_ids: values must lie in 0..{n_images - 1} (one keywords entry per image)")
        vocab_set = set(vocab)
        for i, kw in enumerate(keywords):
            for w in kw:
                if w not in vocab_set:
                    raise ValueError(f"keywords: image {i} has keyword {w!r} outside the vocabulary")
        if not self.allow_unannotated:
            for i in np.unique(image_ids):
                if len(keywords[i]) == 0:
                    raise ValueError(f"keywords: image {int(i)} has regions but no keywords")
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "image_ids", image_ids)
        object.__setattr__(self, "keywords", keywords)
        object.__setattr__(self, "vocabulary", vocab)
        if self.region_labels is not None:
            lab = _int_vector(self.region_labels, "region_labels", r)
            if lab.min() < -1 or lab.max() >= len(vocab):
                raise ValueError(f"region_labels: values must be -1 or lie in 0..{len(vocab) - 1}")
            object.__setattr__(self, "region_labels", lab)

    @property
    def n_images(self) -> int:
        return len(self.keywords)

    def keyword_matrix(self) -> np.ndarray:
        """(I, W) 0/1 matrix: image i has word w."""
        index = {w: k for k, w in enumerate(self.vocabulary)}
        out = np.zeros((self.n_images, len(self.vocabulary)), dtype=np.int8)
        for i, kw in enumerate(self.keywords):
            for w in kw:
                out[i, index[w]] = 1
        return out


@dataclasses.dataclass(frozen=True)
class MultimodalCounts:
    """Caption words and visual words per image, as counts.

    words (I, W) non-negative integer counts of caption words; visual_words (I, V) counts of visual words;
    word_vocabulary (W,) and visual_vocabulary (V,) optional names; region_visual_words optional (R, V) counts
    per region with region_image_ids (R,) and region_labels (R,) (index into word vocabulary or -1).
    """

    words: np.ndarray
    visual_words: np.ndarray
    word_vocabulary: Sequence[str] | None = None
    visual_vocabulary: Sequence[str] | None = None
    region_visual_words: np.ndarray | None = None
    region_image_ids: np.ndarray | None = None
    region_labels: np.ndarray | None = None

    def __post_init__(self):
        words = _counts(self.words, "words")
        visual = _counts(self.visual_words, "visual_words")
        if words.shape[0] != visual.shape[0]:
            raise ValueError(f"visual_words: {visual.shape[0]} images, but words has {words.shape[0]}")
        object.__setattr__(self, "words", words)
        object.__setattr__(self, "visual_words", visual)
        if self.word_vocabulary is not None and len(self.word_vocabulary) != words.shape[1]:
            raise ValueError(f"word_vocabulary: {len(self.word_vocabulary)} names for {words.shape[1]} columns")
        if self.visual_vocabulary is not None and len(self.visual_vocabulary) != visual.shape[1]:
            raise ValueError(f"visual_vocabulary: {len(self.visual_vocabulary)} names for {visual.shape[1]} columns")
        if self.region_visual_words is not None:
            reg = _counts(self.region_visual_words, "region_visual_words")
            if reg.shape[1] != visual.shape[1]:
                raise ValueError("region_visual_words: column count differs from visual_words")
            ids = _int_vector(self.region_image_ids, "region_image_ids", reg.shape[0]) \
                if self.region_image_ids is not None else None
            if ids is None:
                raise ValueError("region_image_ids: required with region_visual_words")
            if ids.min() < 0 or ids.max() >= words.shape[0]:
                raise ValueError("region_image_ids: values must index images")
            object.__setattr__(self, "region_visual_words", reg)
            object.__setattr__(self, "region_image_ids", ids)
            if self.region_labels is not None:
                lab = _int_vector(self.region_labels, "region_labels", reg.shape[0])
                if lab.min() < -1 or lab.max() >= words.shape[1]:
                    raise ValueError("region_labels: values must be -1 or index the word vocabulary")
                object.__setattr__(self, "region_labels", lab)


def _counts(values, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if hasattr(values, "toarray"):  # scipy sparse
        arr = values.toarray()
    if arr.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D count array, got shape {arr.shape}")
    f = arr.astype(np.float64)
    if not np.all(np.isfinite(f)) or f.min(initial=0) < 0 or np.any(f != np.round(f)):
        raise ValueError(f"{name}: counts must be finite non-negative integers")
    return f


@dataclasses.dataclass(frozen=True)
class Matrix:
    """Data with missing entries: values (N, D) float; mask (N, D) bool, True = observed (default: finite)."""

    values: np.ndarray
    mask: np.ndarray | None = None

    def __post_init__(self):
        v = np.asarray(self.values, dtype=np.float64)
        if v.ndim != 2:
            raise ValueError(f"values: expected a 2-D array, got shape {v.shape}")
        if self.mask is None:
            mask = np.isfinite(v)
        else:
            mask = np.asarray(self.mask)
            if mask.shape != v.shape:
                raise ValueError(f"mask: shape {mask.shape} differs from values {v.shape}")
            if mask.dtype != bool:
                raise ValueError("mask: expected a boolean array (True = observed)")
            if not np.all(np.isfinite(v[mask])):
                raise ValueError("values: observed entries (mask True) must be finite")
        object.__setattr__(self, "values", np.where(mask, v, 0.0))
        object.__setattr__(self, "mask", mask)
