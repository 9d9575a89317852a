"""Synthetic data of Carbonetto et al. (2003), Sec. 2 and Sec. 5.2 (MODELS.md 1).

Sec. 5.2 leaves the data-generating settings open beyond "3 words, 9 features, the first 3 word-specific, the
other 6 from one common Gaussian, enough variance for some overlap"; the choices here are documented in
``translation_data_sec52`` and were fixed before any model was run on them.
"""
from __future__ import annotations

import numpy as np

from zoo.data.containers import AnnotatedRegions
from zoo.data.location import register_loader

__all__ = ["SEC2_MEANS", "SEC2_VARIANCES", "SEC2_WEIGHTS", "mixture_data_sec2", "translation_data_sec52"]

SEC2_MEANS = np.array([[1.2, 2.3, 5.3, 0.0, 0.1, 0.0],
                       [5.0, 4.9, 4.7, 0.2, 0.3, 0.2],
                       [9.5, 5.6, 3.8, 0.0, 0.0, 0.5]])
SEC2_VARIANCES = np.array([1.0, 1.0, 1.0, 2.0, 2.0, 2.0])
SEC2_WEIGHTS = np.array([0.36, 0.26, 0.38])


def mixture_data_sec2(n_points: int = 200, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Sec. 2 mixture: returns X (N, 6) and the true component labels z (N,)."""
    if n_points < 3:
        raise ValueError(f"n_points: need at least 3, got {n_points}")
    rng = np.random.default_rng(seed)
    z = rng.choice(3, size=n_points, p=SEC2_WEIGHTS)
    X = SEC2_MEANS[z] + rng.normal(size=(n_points, 6)) * np.sqrt(SEC2_VARIANCES)
    return X, z


def translation_data_sec52(n_images: int = 100, seed: int = 0, word_mean_scale: float = 1.0,
                           within_sd: float = 0.6, max_regions_per_word: int = 2):
    """One random data set of Sec. 5.2, as (AnnotatedRegions, true_means (3, 9)).

    Settings (the paper gives none beyond the structure): word means of the 3 relevant features drawn
    N(0, word_mean_scale^2 I_3) per data set, within-word sd ``within_sd`` on them (overlapping words); the 6
    irrelevant features N(0, 1) for every region, so their true mean is 0 for every word. Each image has 1-3
    distinct words (uniformly many, uniformly chosen) and each of its words 1..max_regions_per_word regions.
    """
    if n_images < 1:
        raise ValueError(f"n_images: need at least 1, got {n_images}")
    rng = np.random.default_rng(seed)
    words = ["w0", "w1", "w2"]
    true_means = np.zeros((3, 9))
    true_means[:, :3] = rng.normal(scale=word_mean_scale, size=(3, 3))
    X, image_ids, labels, keywords = [], [], [], []
    for image in range(n_images):
        n_words = rng.integers(1, 4)
        image_words = np.sort(rng.choice(3, size=n_words, replace=False))
        keywords.append([words[w] for w in image_words])
        for w in image_words:
            for _ in range(rng.integers(1, max_regions_per_word + 1)):
                relevant = true_means[w, :3] + within_sd * rng.normal(size=3)
                X.append(np.concatenate([relevant, rng.normal(size=6)]))
                image_ids.append(image)
                labels.append(w)
    regions = AnnotatedRegions(np.array(X), np.array(image_ids), keywords, words, region_labels=np.array(labels))
    return regions, true_means


@register_loader("carbonetto03_sec2", "Carbonetto 2003 Sec. 2: 200 points, 3 components, 6 features (synthetic)")
def _load_sec2(n_points: int = 200, seed: int = 0) -> np.ndarray:
    """X (N, 6) of the Sec. 2 mixture (``mixture_data_sec2`` also returns the true labels)."""
    return mixture_data_sec2(n_points=n_points, seed=seed)[0]


@register_loader("carbonetto03_sec52", "Carbonetto 2003 Sec. 5.2: translation data, 3 words, 9 features (synthetic)")
def _load_sec52(n_images: int = 100, seed: int = 0) -> AnnotatedRegions:
    """AnnotatedRegions of one Sec. 5.2 data set (``translation_data_sec52`` also returns the true means)."""
    return translation_data_sec52(n_images=n_images, seed=seed)[0]
