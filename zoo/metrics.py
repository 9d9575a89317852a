"""Scores shared by the papers: region annotation errors (Carbonetto 2003 Sec. 5.3), clustering accuracy, ROC AUC
and RMS error (scikit-learn's where it computes the same), the Sec. 7 region-labelling rule of Gustafson (2007)."""
from __future__ import annotations

import numpy as np

__all__ = ["pr_n", "pr_sampled", "empirical_word_proba", "matched_accuracy", "auc", "rms", "region_label_correct"]


def _per_image_mean(errors: np.ndarray, image_ids: np.ndarray) -> float:
    """Average over the scored regions of each image, then over images (the paper's averaging)."""
    images = np.unique(image_ids)
    return float(np.mean([errors[image_ids == i].mean() for i in images]))


def _scored(word_proba, region_labels, image_ids):
    word_proba = np.asarray(word_proba, dtype=np.float64)
    region_labels = np.asarray(region_labels)
    image_ids = np.asarray(image_ids)
    if word_proba.ndim != 2 or word_proba.shape[0] != region_labels.shape[0]:
        raise ValueError(f"word_proba: expected shape (R, W) with R = {region_labels.shape[0]}, "
                         f"got {word_proba.shape}")
    if image_ids.shape != region_labels.shape:
        raise ValueError("image_ids: one per region")
    keep = region_labels >= 0
    if not keep.any():
        raise ValueError("region_labels: no labelled region to score")
    return word_proba[keep], region_labels[keep], image_ids[keep]


def pr_n(word_proba, region_labels, image_ids, n: int = 1) -> float:
    """PR-n: error 1 when the true word of a region is not among its n most probable words.

    word_proba (R, W); region_labels (R,) index into the vocabulary or -1 (unlabelled regions are not scored);
    image_ids (R,). Averaged over the blobs of each image, then over images.
    """
    proba, labels, images = _scored(word_proba, region_labels, image_ids)
    top = np.argsort(-proba, axis=1)[:, :n]
    errors = (~np.any(top == labels[:, None], axis=1)).astype(float)
    return _per_image_mean(errors, images)


def pr_sampled(word_proba, region_labels, image_ids) -> float:
    """PR-sampled: probability of a wrong word when sampling from p(w | b), averaged per image then overall."""
    proba, labels, images = _scored(word_proba, region_labels, image_ids)
    proba = proba / proba.sum(axis=1, keepdims=True)
    errors = 1.0 - proba[np.arange(labels.shape[0]), labels]
    return _per_image_mean(errors, images)


def empirical_word_proba(keyword_matrix: np.ndarray, n_regions: int) -> np.ndarray:
    """The paper's baseline: every region gets the empirical word frequency of the training captions, (R, W)."""
    counts = np.asarray(keyword_matrix, dtype=np.float64).sum(axis=0)
    return np.broadcast_to(counts / counts.sum(), (n_regions, counts.shape[0])).copy()


def matched_accuracy(true_labels, predicted_labels) -> float:
    """Share of points whose predicted cluster matches the true class under the best one-to-one relabelling."""
    from scipy.optimize import linear_sum_assignment

    true_labels = np.asarray(true_labels)
    predicted_labels = np.asarray(predicted_labels)
    classes = np.unique(np.concatenate([true_labels, predicted_labels]))
    table = np.array([[np.sum((true_labels == t) & (predicted_labels == p)) for p in classes] for t in classes])
    rows, cols = linear_sum_assignment(-table)
    return float(table[rows, cols].sum() / true_labels.shape[0])


def auc(scores, labels) -> float:
    """Area under the ROC curve of ``scores`` (n,) for binary ``labels`` (n,), ties counting 1/2
    (scikit-learn's ``roc_auc_score``); NaN when ``labels`` hold one class only (no pair to rank)."""
    from sklearn.metrics import roc_auc_score

    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels).astype(bool)
    if scores.shape != labels.shape or scores.ndim != 1:
        raise ValueError(f"scores: expected shape {labels.shape} (one per label), got {scores.shape}")
    if labels.all() or not labels.any():
        return float("nan")
    return float(roc_auc_score(labels, scores))


def rms(estimate, truth) -> float:
    """Root mean squared error over every entry of ``estimate`` and ``truth`` (same shape), as scikit-learn's
    ``root_mean_squared_error`` on the flattened arrays."""
    estimate = np.asarray(estimate, dtype=np.float64)
    truth = np.asarray(truth, dtype=np.float64)
    if estimate.shape != truth.shape:
        raise ValueError(f"estimate: expected the shape of truth {truth.shape}, got {estimate.shape}")
    return float(np.sqrt(np.mean((estimate - truth) ** 2)))


def region_label_correct(estimate, truth) -> np.ndarray:
    """Gustafson et al. (2007) Sec. 7 rule, per region (bool): right if the estimate is the true label, or garbage
    (0) for a region with no true label (-1). ``estimate`` (R,): 0 = garbage, k = vocabulary[k - 1];
    ``truth`` (R,): vocabulary index or -1."""
    estimate = np.asarray(estimate)
    truth = np.asarray(truth)
    if estimate.shape != truth.shape:
        raise ValueError(f"estimate: expected the shape of truth {truth.shape}, got {estimate.shape}")
    return np.where(truth < 0, estimate == 0, estimate == truth + 1)
