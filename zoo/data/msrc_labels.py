"""MSRC-v2 class labels and per-region ground truth (issue 7).

Moved out of ``zoo.data.msrc`` (which re-exports every name here) to keep that module under the project's
~450-line guideline. A label map is (H, W) uint8: 0 void, k in 1..23 = ``MSRC_CLASSES[k - 1]``.
``region_class_counts`` counts the label values inside each region; a region's true label
(``region_labels_from_counts``) is the majority class of its labelled pixels (void excluded), and a region whose
pixels are mostly void (labelled share < ``min_labelled``) is unlabelled (-1). An image's keywords
(``keywords_from_label_map``) are the classes present in its label map, so they cover every region's true label.
``class_mapping`` gives the vocabulary of a class setting: "all" (23 classes) or "msrc21" (horse and mountain
pixels become void, as the database's documentation suggests).
"""
from __future__ import annotations

import numpy as np

__all__ = ["MSRC_CLASSES", "MSRC21_DROPPED", "N_LABEL_VALUES", "region_class_counts", "class_mapping",
           "region_labels_from_counts", "keywords_from_label_map"]


MSRC_CLASSES = ("building", "grass", "tree", "cow", "horse", "sheep", "sky", "mountain", "aeroplane", "water",
                "face", "car", "bicycle", "flower", "sign", "bird", "book", "chair", "road", "cat", "dog", "body",
                "boat")  # label value k in 1..23 is MSRC_CLASSES[k - 1]; 0 is void (PROVENANCE.md)
MSRC21_DROPPED = ("horse", "mountain")
N_LABEL_VALUES = len(MSRC_CLASSES) + 1


def region_class_counts(region_map: np.ndarray, label_map: np.ndarray, n_values: int = N_LABEL_VALUES):
    """Pixel counts of each label value inside each region: (R, n_values) int64 (column 0 = void)."""
    region_map = np.asarray(region_map)
    label_map = np.asarray(label_map)
    if region_map.shape != label_map.shape:
        raise ValueError(f"label_map: shape {label_map.shape} differs from the region map's {region_map.shape}")
    if label_map.min() < 0 or label_map.max() >= n_values:
        raise ValueError(f"label_map: values must lie in 0..{n_values - 1}")
    n = int(region_map.max()) + 1
    joint = region_map.ravel().astype(np.int64) * n_values + label_map.ravel().astype(np.int64)
    return np.bincount(joint, minlength=n * n_values).reshape(n, n_values)


def class_mapping(classes: str) -> tuple[list[str], np.ndarray]:
    """Vocabulary and the map from label value (0..23) to vocabulary index (-1 = void) for a class setting."""
    if classes not in ("all", "msrc21"):
        raise ValueError(f"classes: expected 'all' (23 classes) or 'msrc21' (horse and mountain dropped), "
                         f"got {classes!r}")
    dropped = MSRC21_DROPPED if classes == "msrc21" else ()
    vocabulary = [c for c in MSRC_CLASSES if c not in dropped]
    mapping = np.full(N_LABEL_VALUES, -1, dtype=np.int64)
    for value, name in enumerate(MSRC_CLASSES, start=1):
        if name not in dropped:
            mapping[value] = vocabulary.index(name)
    return vocabulary, mapping


def region_labels_from_counts(counts: np.ndarray, mapping: np.ndarray, min_labelled: float = 0.5) -> np.ndarray:
    """True label of each region from its (R, 24) class pixel counts: (R,) vocabulary index or -1.

    ``mapping`` (24,) maps a label value to a vocabulary index (-1 = void, including dropped classes). The label
    is the class with most pixels among the non-void ones (ties: the lower index); -1 when the region's
    non-void share is below ``min_labelled``.
    """
    if not 0.0 <= float(min_labelled) <= 1.0:
        raise ValueError(f"min_labelled: must lie in [0, 1], got {min_labelled!r}")
    counts = np.asarray(counts, dtype=np.int64)
    n_words = int(mapping.max()) + 1
    per_word = np.zeros((counts.shape[0], n_words), dtype=np.int64)
    for value, word in enumerate(mapping):
        if word >= 0:
            per_word[:, word] += counts[:, value]
    labelled = per_word.sum(axis=1)
    total = counts.sum(axis=1)
    ok = (labelled > 0) & (labelled >= min_labelled * total)
    return np.where(ok, per_word.argmax(axis=1), -1)


def keywords_from_label_map(label_counts: np.ndarray, mapping: np.ndarray, vocabulary: list[str]) -> tuple:
    """Keywords of an image from the pixel counts (24,) of its label map: the classes present, in class order."""
    present = {int(mapping[v]) for v in np.flatnonzero(np.asarray(label_counts) > 0) if mapping[v] >= 0}
    return tuple(vocabulary[w] for w in sorted(present))
