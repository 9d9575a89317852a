"""Generic splitters and subsets of the zoo's data containers, shared by the experiments.

- ``subset_images``: the regions of chosen images of an :class:`AnnotatedRegions`, renumbered;
- ``split_images``: a random train/validation split of images in which every keyword used annotates a training
  image (Gustafson et al. 2007, Sec. 7);
- ``split_indices``: a random train/test split of ``n`` row indices (sorted).
"""
from __future__ import annotations

import numpy as np

from zoo.data.containers import AnnotatedRegions

__all__ = ["subset_images", "split_images", "split_indices"]


def subset_images(data: AnnotatedRegions, images) -> AnnotatedRegions:
    """The regions of ``images`` (image indices, renumbered 0..len-1 in the given order)."""
    images = [int(i) for i in images]
    index = {i: r for r, i in enumerate(images)}
    keep = np.isin(data.image_ids, images)
    labels = None if data.region_labels is None else data.region_labels[keep]
    return AnnotatedRegions(X=data.X[keep], image_ids=np.array([index[int(i)] for i in data.image_ids[keep]]),
                            keywords=[data.keywords[i] for i in images], vocabulary=data.vocabulary,
                            region_labels=labels)


def split_images(data: AnnotatedRegions, n_train: int, seed: int = 0, max_tries: int = 1000):
    """(train, validation): ``n_train`` images drawn at random for training, the rest for validation, such that
    every keyword that annotates some image annotates a training image; up to ``max_tries`` draws, then
    RuntimeError."""
    if not 0 < n_train < data.n_images:
        raise ValueError(f"n_train: expected 1..{data.n_images - 1}, got {n_train}")
    rng = np.random.default_rng(seed)
    kw = data.keyword_matrix().astype(bool)
    used = kw.any(0)
    for _ in range(max_tries):
        order = rng.permutation(data.n_images)
        train, valid = np.sort(order[:n_train]), np.sort(order[n_train:])
        if np.all(kw[train].any(0) | ~used):
            return subset_images(data, train), subset_images(data, valid)
    raise RuntimeError("split_images: no split put every keyword in the training images")


def split_indices(n: int, n_train: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(train, test): sorted row indices, ``n_train`` of the ``n`` rows drawn at random (seed) for training."""
    if not 0 <= n_train <= n:
        raise ValueError(f"n_train: expected 0..{n}, got {n_train}")
    perm = np.random.default_rng(seed).permutation(n)
    return np.sort(perm[:n_train]), np.sort(perm[n_train:])
