"""Scores shared by the papers: region annotation errors (Carbonetto 2003 Sec. 5.3), clustering accuracy, ROC AUC
and RMS error (scikit-learn's where it computes the same), the Sec. 7 region-labelling rule of Gustafson (2007)."""
from __future__ import annotations

import numpy as np

__all__ = ["pr_n", "pr_sampled", "empirical_word_proba", "matched_accuracy", "auc", "rms", "region_label_correct",
           "per_word_annotation", "pixel_accuracy", "pixel_accuracy_from_counts"]


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


def per_word_annotation(scores, captions, n_words: int = 5) -> dict:
    """The image-annotation protocol of Duygulu et al. (2002) as scored since (Lavrenko et al. 2003, Feng et al.
    2004, Makadia et al. 2008): each test image is annotated with its ``n_words`` best-scored words; then, for
    every word that occurs in the test captions, recall = (images annotated with it correctly) / (test images whose
    caption has it) and precision = (correct) / (images annotated with it), 0 when the word is never predicted.

    scores (I, W): a score per image and vocabulary word (-inf: a word the method cannot predict, e.g. unseen in
    training; it is never chosen); captions (I, W) bool. Returns {"P", "R" (means over the test words), "F1"
    (2PR / (P + R) of those means, as the literature computes it), "N+" (words with recall > 0), "words" (number
    of test words)}."""
    scores = np.asarray(scores, dtype=np.float64)
    captions = np.asarray(captions).astype(bool)
    if scores.ndim != 2 or scores.shape != captions.shape:
        raise ValueError(f"scores: expected the shape of captions {captions.shape}, got {scores.shape}")
    if n_words < 1 or n_words > scores.shape[1]:
        raise ValueError(f"n_words: expected 1..{scores.shape[1]}, got {n_words!r}")
    if np.isnan(scores).any():
        raise ValueError("scores: NaN entries (use -inf for a word the method cannot predict)")
    top = np.argsort(-scores, axis=1, kind="stable")[:, :n_words]
    predicted = np.zeros_like(captions)
    np.put_along_axis(predicted, top, True, axis=1)
    predicted &= np.isfinite(scores)
    test_words = np.flatnonzero(captions.any(axis=0))
    if test_words.size == 0:
        raise ValueError("captions: no test image has a word")
    correct = (predicted & captions).sum(axis=0)[test_words]
    n_true = captions.sum(axis=0)[test_words]
    n_predicted = predicted.sum(axis=0)[test_words]
    recall = correct / n_true
    precision = np.where(n_predicted > 0, correct / np.maximum(n_predicted, 1), 0.0)
    p, r = float(precision.mean()), float(recall.mean())
    return {"P": p, "R": r, "F1": 0.0 if p + r == 0 else 2 * p * r / (p + r), "N+": int((recall > 0).sum()),
            "words": int(test_words.size)}


def pixel_accuracy(predicted, truth, void: int = -1) -> dict:
    """Pixel accuracy of a labelling as weakly supervised segmentation work reports it (e.g. Verbeek & Triggs
    2007, Vezhnevets & Buhmann 2010): ``predicted`` and ``truth`` are integer class maps of the same shape (any
    number of images stacked or concatenated); pixels whose truth is ``void`` are excluded. Returns {"global":
    share of non-void pixels labelled right, "class_avg": mean over the classes present in the truth of the share
    of that class's pixels labelled right, "pixels": number of non-void pixels}."""
    predicted = np.asarray(predicted)
    truth = np.asarray(truth)
    if predicted.shape != truth.shape:
        raise ValueError(f"predicted: expected the shape of truth {truth.shape}, got {predicted.shape}")
    keep = truth != void
    if not keep.any():
        raise ValueError("truth: every pixel is void")
    t, p = truth[keep].ravel(), predicted[keep].ravel()
    right = t == p
    classes, inverse = np.unique(t, return_inverse=True)
    per_class = np.bincount(inverse, weights=right, minlength=classes.size) / np.bincount(inverse)
    return {"global": float(right.mean()), "class_avg": float(per_class.mean()), "pixels": int(t.size)}


def pixel_accuracy_from_counts(predicted, counts) -> dict:
    """``pixel_accuracy`` of a region labelling without the maps: ``predicted`` (R,) the class index given to each
    region (-1: none), ``counts`` (R, C) the region's pixels of each true class (void left out). The same numbers
    as labelling every pixel with its region's class and calling ``pixel_accuracy`` on the maps."""
    predicted = np.asarray(predicted)
    counts = np.asarray(counts, dtype=np.float64)
    if counts.ndim != 2 or predicted.shape != (counts.shape[0],):
        raise ValueError(f"predicted: expected shape ({counts.shape[0]},) for counts of shape {counts.shape}, got "
                         f"{predicted.shape}")
    if predicted.size and predicted.max() >= counts.shape[1]:
        raise ValueError(f"predicted: class {int(predicted.max())} outside the {counts.shape[1]} count columns")
    total = counts.sum(axis=0)
    if total.sum() == 0:
        raise ValueError("counts: no labelled pixel")
    rows = np.flatnonzero(predicted >= 0)
    right = np.zeros(counts.shape[1])
    np.add.at(right, predicted[rows], counts[rows, predicted[rows]])
    present = total > 0
    return {"global": float(right.sum() / total.sum()), "class_avg": float(np.mean(right[present] / total[present])),
            "pixels": int(total.sum())}
