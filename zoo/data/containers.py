"""Typed data containers, validated at construction.

Each raises a ``ValueError`` naming the field and the problem; nothing is silently dropped or coerced (complex
values, infinities, non-integer or string ids are refused; missing values are NaN or a mask). A container owns its
arrays: they are copies of what it was given, marked read-only, so a later change to the caller's array cannot
reach a fit unchecked.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

__all__ = ["check_features", "Bags", "AnnotatedRegions", "MultimodalCounts", "Matrix"]


def _owned(arr: np.ndarray) -> np.ndarray:
    """A read-only copy: the container's own array."""
    arr = np.array(arr, copy=True)
    arr.flags.writeable = False
    return arr


def _real_array(values, name: str, what: str) -> np.ndarray:
    """``values`` as a float64 array; complex or non-numeric values are a ValueError (never a silent cast)."""
    raw = np.asarray(values)
    if np.iscomplexobj(raw):
        raise ValueError(f"{name}: complex values are not allowed (expected a real {what})")
    if raw.dtype.kind in "USO" and raw.size:  # strings or objects: refuse rather than parse
        raise ValueError(f"{name}: expected a numeric {what}, got values of type {raw.dtype}")
    try:
        return raw.astype(np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a numeric {what}") from None


def check_features(X, name: str = "X", *, allow_nan: bool = False) -> np.ndarray:
    """A read-only (N, D) float64 copy of ``X``, finite (NaN allowed with ``allow_nan``, meaning missing);
    ValueError naming ``name`` otherwise."""
    arr = _real_array(X, name, "(N, D) array")
    if arr.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D array (N, D), got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name}: empty array of shape {arr.shape}")
    bad = ~np.isfinite(arr) if not allow_nan else np.isinf(arr)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        what = "NaN or inf" if not allow_nan else "inf (missing values are NaN)"
        raise ValueError(f"{name}: {int(bad.sum())} entries are {what} (first at row {i}, column {j})")
    return _owned(arr)


def _int_vector(values, name: str, length: int | None = None) -> np.ndarray:
    """A read-only int64 copy of a 1-D vector of integers (integer-valued floats accepted; nothing else)."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array, got shape {arr.shape}")
    if arr.size and arr.dtype.kind in "USO":
        raise ValueError(f"{name}: expected integers, got values of type {arr.dtype} (for arbitrary labels such "
                         f"as strings, renumber them, e.g. with Bags.from_labels)")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        f = _real_array(arr, name, "vector of integers")
        if not np.all(np.isfinite(f)) or np.any(f != np.round(f)) or np.any(np.abs(f) >= 2**62):
            raise ValueError(f"{name}: expected integers")
    arr = arr.astype(np.int64)
    if length is not None and arr.shape[0] != length:
        raise ValueError(f"{name}: expected length {length}, got {arr.shape[0]}")
    return _owned(arr)


def _names(values, field: str, count: int, what: str) -> list[str]:
    """One display name per bag or image, as strings."""
    if isinstance(values, (str, bytes)):
        raise ValueError(f"{field}: expected one name per {what[:-1]}, got a single string")
    names = [str(n) for n in values]
    if len(names) != count:
        raise ValueError(f"{field}: {len(names)} names for {count} {what}")
    return names


def _summary(name: str, **parts) -> str:
    """A one-line repr: shapes and which optional fields are set, never the arrays themselves."""
    return f"{name}(" + ", ".join(f"{k}={v}" for k, v in parts.items() if v is not None) + ")"


@dataclasses.dataclass(frozen=True)
class Bags:
    """Multiple-instance data: instances X (N, D) grouped into bags.

    bag_ids (N,) int in 0..B-1 (every bag non-empty); bag_labels (B,) in {0, 1} (standard MIL: 1 = at least one
    positive instance); group_labels (B,) in {"negative", "mixed", "positive"} (the thesis' constraint labels);
    fractions (B,) in [0, 1] (guessed share of positives); instance_labels (N,) in {0, 1} (for scoring or the
    supervised model); bag_names (B,) optional names of the bags (a table's bag ids), for display only.
    """

    X: np.ndarray
    bag_ids: np.ndarray
    bag_labels: np.ndarray | None = None
    group_labels: np.ndarray | None = None
    fractions: np.ndarray | None = None
    instance_labels: np.ndarray | None = None
    bag_names: Sequence[str] | None = None

    def __post_init__(self):
        X = check_features(self.X, "X")
        n = X.shape[0]
        bag_ids = _int_vector(self.bag_ids, "bag_ids", n)
        if bag_ids.min() < 0:
            raise ValueError("bag_ids: negative bag id")
        if bag_ids.max() >= n:  # every bag holds an instance, so there are at most N bags
            raise ValueError(f"bag_ids: bags must be numbered 0..B-1 with B <= {n} instances, got id "
                             f"{int(bag_ids.max())} (for arbitrary bag labels use Bags.from_labels)")
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
            g = _owned(np.asarray(self.group_labels).astype(str))
            if g.shape != (n_bags,):
                raise ValueError(f"group_labels: expected shape ({n_bags},), got {g.shape}")
            bad = ~np.isin(g, ("negative", "mixed", "positive"))
            if bad.any():
                raise ValueError(f"group_labels: {g[bad][0]!r} is not one of 'negative', 'mixed', 'positive'")
            object.__setattr__(self, "group_labels", g)
        if self.fractions is not None:
            f = _owned(_real_array(self.fractions, "fractions", "vector"))
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
        if self.bag_names is not None:
            object.__setattr__(self, "bag_names", _names(self.bag_names, "bag_names", n_bags, "bags"))

    @property
    def n_bags(self) -> int:
        return int(self.bag_ids.max()) + 1

    @classmethod
    def from_table(cls, table, *, bag: str = "bag", label: str | None = None, group: str | None = None,
                   fraction: str | None = None, instance_label: str | None = None, features=None) -> "Bags":
        """Bags from a pandas DataFrame, a CSV file with a header or a dict of columns: one row per instance,
        ``bag`` the column of bag ids (any kind; kept in ``bag_names``), ``label`` / ``group`` / ``fraction`` bag-level
        columns (one value per bag), ``features`` the feature columns (default: the other numeric columns).
        See ``zoo.data.tables``.

        >>> Bags.from_table({"molecule": ["m1", "m1", "m2"], "label": [1, 1, 0], "f0": [0.1, 0.2, 0.3]},
        ...                 bag="molecule", label="label")
        Bags(instances=3, features=1, bags=2, given=bag_labels)
        """
        from zoo.data.tables import bag_fields
        return cls(**bag_fields(table, bag=bag, label=label, group=group, fraction=fraction,
                                instance_label=instance_label, features=features))

    @classmethod
    def from_labels(cls, X, labels, *, bag_labels=None, group_labels=None, fractions=None, instance_labels=None):
        """Bags from arbitrary per-instance bag labels (strings, large or non-contiguous integers, ...), renumbered
        0..B-1 in order of first appearance. ``bag_labels``, ``group_labels`` and ``fractions`` map each original
        label to its value (a dict). Returns ``(bags, names)``: ``names[b]`` is the original label of bag b."""
        labels = np.asarray(labels)
        if labels.ndim != 1:
            raise ValueError(f"labels: expected one bag label per instance (1-D), got shape {labels.shape}")
        names, first, bag_ids = np.unique(labels, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")            # first appearance, not sorted order
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        # np.unique of an object array (e.g. pandas' strings) gives Python objects, of other arrays NumPy scalars
        names = [names[b].item() if isinstance(names[b], np.generic) else names[b] for b in order]

        def per_bag(mapping, field):
            if mapping is None:
                return None
            missing = [name for name in names if name not in mapping]
            if missing:
                raise ValueError(f"{field}: no value for bag {missing[0]!r}")
            return [mapping[name] for name in names]

        bags = cls(X=X, bag_ids=rank[bag_ids], bag_labels=per_bag(bag_labels, "bag_labels"),
                   group_labels=per_bag(group_labels, "group_labels"), fractions=per_bag(fractions, "fractions"),
                   instance_labels=instance_labels)
        return bags, names

    def __repr__(self) -> str:
        set_fields = [f for f in ("bag_labels", "group_labels", "fractions", "instance_labels")
                      if getattr(self, f) is not None]
        return _summary("Bags", instances=self.X.shape[0], features=self.X.shape[1], bags=self.n_bags,
                        given=", ".join(set_fields) or None)


@dataclasses.dataclass(frozen=True)
class AnnotatedRegions:
    """Regions of annotated images.

    X (R, D) region features; image_ids (R,) int in 0..I-1; keywords: a sequence of I collections of words (image
    i's keywords, each in ``vocabulary``; every image with a region has at least one keyword unless
    ``allow_unannotated``); vocabulary: list of distinct words; region_labels (R,) int, index into vocabulary or
    -1 (ground truth, for scoring only); image_names (I,) optional names of the images (photo files, the ids of a
    table), kept for display and never used by a model.
    """

    X: np.ndarray
    image_ids: np.ndarray
    keywords: Sequence
    vocabulary: Sequence[str]
    region_labels: np.ndarray | None = None
    allow_unannotated: bool = False
    image_names: Sequence[str] | None = None

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
        if self.image_names is not None:
            object.__setattr__(self, "image_names", _names(self.image_names, "image_names", n_images, "images"))

    @classmethod
    def from_table(cls, table, *, image: str = "image", keywords: str = "keywords", region_label: str | None = None,
                   features=None, vocabulary=None, allow_unannotated: bool = False) -> "AnnotatedRegions":
        """Regions from a pandas DataFrame, a CSV file with a header or a dict of columns: one row per region,
        ``image`` the column of image ids (any kind; kept in ``image_names``), ``keywords`` the image's words
        (separated by spaces, commas or semicolons), ``region_label`` an optional true word per region,
        ``features`` the feature columns (default: the other numeric columns). See ``zoo.data.tables``.

        >>> AnnotatedRegions.from_table({"photo": ["a.jpg", "a.jpg", "b.jpg"], "words": ["sky sea", "", "grass"],
        ...                              "r": [0.1, 0.5, 0.2], "g": [0.3, 0.2, 0.9]}, image="photo", keywords="words")
        AnnotatedRegions(regions=3, features=2, images=2, words=3)
        """
        from zoo.data.tables import region_fields
        return cls(**region_fields(table, image=image, keywords=keywords, region_label=region_label,
                                   features=features, vocabulary=vocabulary, allow_unannotated=allow_unannotated))

    @property
    def n_images(self) -> int:
        return len(self.keywords)

    def __repr__(self) -> str:
        return _summary("AnnotatedRegions", regions=self.X.shape[0], features=self.X.shape[1],
                        images=self.n_images, words=len(self.vocabulary),
                        region_labels="yes" if self.region_labels is not None else None)

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

    @classmethod
    def from_table(cls, table, *, words, visual_words, image: str | None = None) -> "MultimodalCounts":
        """Counts from a pandas DataFrame, a CSV file with a header or a dict of columns: one row per image,
        ``words`` / ``visual_words`` the count columns (lists of names, or a name prefix such as ``"w_"``); the
        column names become the vocabularies. See ``zoo.data.tables``.

        >>> MultimodalCounts.from_table({"img": ["x", "y"], "w_sky": [1, 0], "w_sea": [2, 1], "v_0": [3, 0],
        ...                              "v_1": [0, 4]}, words="w_", visual_words="v_", image="img")
        MultimodalCounts(images=2, words=2, visual_words=2)
        """
        from zoo.data.tables import count_fields
        return cls(**count_fields(table, words=words, visual_words=visual_words, image=image))

    def __repr__(self) -> str:
        return _summary("MultimodalCounts", images=self.words.shape[0], words=self.words.shape[1],
                        visual_words=self.visual_words.shape[1],
                        regions=None if self.region_visual_words is None else self.region_visual_words.shape[0])


def _counts(values, name: str) -> np.ndarray:
    """A read-only float64 copy of a non-empty 2-D array of non-negative integer counts."""
    arr = values.toarray() if hasattr(values, "toarray") else values  # scipy sparse
    f = _real_array(arr, name, "2-D count array")
    if f.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D count array, got shape {f.shape}")
    if f.shape[0] == 0 or f.shape[1] == 0:
        raise ValueError(f"{name}: empty count array of shape {f.shape}")
    if not np.all(np.isfinite(f)) or f.min(initial=0) < 0 or np.any(f != np.round(f)):
        raise ValueError(f"{name}: counts must be finite non-negative integers")
    return _owned(f)


@dataclasses.dataclass(frozen=True)
class Matrix:
    """Data with missing entries: values (N, D) float; mask (N, D) bool, True = observed (default: not NaN).

    Missing entries are NaN or masked out; an infinite observed value is an error, not a missing one."""

    values: np.ndarray
    mask: np.ndarray | None = None

    def __post_init__(self):
        v = _real_array(self.values, "values", "(N, D) array")
        if v.ndim != 2:
            raise ValueError(f"values: expected a 2-D array, got shape {v.shape}")
        if v.shape[0] == 0 or v.shape[1] == 0:
            raise ValueError(f"values: empty array of shape {v.shape}")
        if self.mask is None:
            mask = ~np.isnan(v)
            if np.isinf(v[mask]).any():
                i, j = np.argwhere(np.isinf(v))[0]
                raise ValueError(f"values: {int(np.isinf(v).sum())} entries are inf (first at row {i}, column {j}); "
                                 f"missing entries are NaN or masked out with mask=")
        else:
            mask = np.asarray(self.mask)
            if mask.shape != v.shape:
                raise ValueError(f"mask: shape {mask.shape} differs from values {v.shape}")
            if mask.dtype != bool:
                raise ValueError("mask: expected a boolean array (True = observed)")
            if not np.all(np.isfinite(v[mask])):
                raise ValueError("values: observed entries (mask True) must be finite")
        object.__setattr__(self, "values", _owned(np.where(mask, v, 0.0)))
        object.__setattr__(self, "mask", _owned(mask))

    @classmethod
    def from_table(cls, table, *, columns=None) -> "Matrix":
        """A Matrix from a pandas DataFrame, a CSV file with a header or a dict of columns: the numeric
        ``columns`` (default: all, each must be numeric); empty cells (NaN) are missing entries.

        >>> Matrix.from_table({"a": [1.0, None], "b": [2.0, 3.0]})
        Matrix(rows=2, columns=2, observed=75.0%)
        """
        from zoo.data.tables import matrix_fields
        return cls(**matrix_fields(table, columns=columns))

    def __repr__(self) -> str:
        return _summary("Matrix", rows=self.values.shape[0], columns=self.values.shape[1],
                        observed=f"{self.mask.mean():.1%}")
