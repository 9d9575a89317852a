"""Visual words: regions and images as bags of discrete tokens (the ``MultimodalCounts`` form).

Two kinds, each with a codebook learned on the training images only:

- ``"blobs"``: Duygulu, Barnard, de Freitas & Forsyth (2002) blob tokens -- k-means of the (standardized) region
  feature vectors; each region is one token, an image's bag is the tokens of its regions (the form of the
  Corel5k data of Carbonetto et al. 2003 and of Yakhnenko & Honavar's "visual words").
- ``"dense"``: Yakhnenko & Honavar (Sec. 4) -- descriptors of small patches on a regular grid (they use 13 x 13
  SIFT patches; here scikit-image's DAISY, a SIFT-like histogram of gradient orientations, computed densely at
  radius 6, i.e. 13 x 13 pixels), quantized with a k-means codebook of descriptors sampled from the training
  images. A region's bag is the words of the grid points inside it (a small region may hold none: a zero row),
  an image's bag is all its grid points.

k-means is a small seeded numpy implementation (k-means++ seeding, Lloyd iterations), so no extra dependency.
"""
from __future__ import annotations

import numpy as np

__all__ = ["kmeans", "quantize", "blob_tokens", "dense_descriptors", "region_word_counts", "one_hot_counts",
           "image_sums", "DEFAULT_DENSE_PARAMS", "DENSE_VERSION", "counts_from_regions"]

DEFAULT_DENSE_PARAMS = {"step": 8, "radius": 6, "rings": 2, "histograms": 6, "orientations": 8}
DENSE_VERSION = 1


def _squared_distances(X: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """(N, K) squared Euclidean distances, clipped at 0 (round-off)."""
    d = (X ** 2).sum(1)[:, None] - 2.0 * X @ centres.T + (centres ** 2).sum(1)[None, :]
    return np.maximum(d, 0.0)


def quantize(X, centres, chunk: int = 20000) -> np.ndarray:
    """Index of the nearest centre for each row of X (N, D): (N,) int64 (ties: the lower index)."""
    X = np.asarray(X, dtype=np.float64)
    centres = np.asarray(centres, dtype=np.float64)
    if X.ndim != 2 or centres.ndim != 2 or X.shape[1] != centres.shape[1]:
        raise ValueError(f"X: shape {X.shape} does not match the codebook's {centres.shape}")
    return np.concatenate([_squared_distances(X[i:i + chunk], centres).argmin(1)
                           for i in range(0, max(len(X), 1), chunk)]) if len(X) else np.zeros(0, np.int64)


def kmeans(X, n_clusters: int, seed: int = 0, max_iter: int = 50, tol: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """k-means (k-means++ seeding, Lloyd iterations) of X (N, D): (centres (K, D), assignment (N,)). Seeded.

    An emptied cluster is re-seeded at the point farthest from its centre, so K centres are always returned.
    """
    from zoo.data.containers import check_features

    X = check_features(X, "X")
    if isinstance(n_clusters, bool) or not isinstance(n_clusters, (int, np.integer)) or n_clusters < 1:
        raise ValueError(f"n_visual_words: expected a positive int, got {n_clusters!r}")
    if n_clusters > X.shape[0]:
        raise ValueError(f"n_visual_words: {n_clusters} clusters for only {X.shape[0]} training vectors")
    rng = np.random.default_rng(seed)
    centres = np.empty((n_clusters, X.shape[1]))
    centres[0] = X[rng.integers(X.shape[0])]
    closest = _squared_distances(X, centres[:1])[:, 0]
    for k in range(1, n_clusters):  # k-means++ (Arthur & Vassilvitskii 2007)
        total = closest.sum()
        idx = rng.choice(X.shape[0], p=closest / total) if total > 0 else rng.integers(X.shape[0])
        centres[k] = X[idx]
        closest = np.minimum(closest, _squared_distances(X, centres[k:k + 1])[:, 0])
    previous = np.inf
    for _ in range(max_iter):
        d = _squared_distances(X, centres)
        assignment = d.argmin(1)
        inertia = d[np.arange(len(X)), assignment].sum()
        counts = np.bincount(assignment, minlength=n_clusters)
        sums = np.zeros_like(centres)
        np.add.at(sums, assignment, X)
        for k in np.flatnonzero(counts == 0):
            far = int(d[np.arange(len(X)), assignment].argmax())
            sums[k], counts[k] = X[far], 1
            assignment[far] = k
        centres = sums / counts[:, None]
        if previous - inertia <= tol * max(previous, 1e-300):
            break
        previous = inertia
    return centres, quantize(X, centres)


def blob_tokens(X_train, X, n_visual_words: int = 64, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Duygulu et al. (2002) blob tokens: k-means codebook of training region features, token of each row of X.

    X_train (N, D) and X (R, D) standardized region features; returns (codebook (V, D), tokens (R,)).
    """
    centres, _ = kmeans(X_train, n_visual_words, seed=seed)
    return centres, quantize(X, centres)


def dense_descriptors(image, step: int = 8, radius: int = 6, rings: int = 2, histograms: int = 6,
                      orientations: int = 8) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """DAISY descriptors on a regular grid of the grey image: (rows (P,), cols (P,), descriptors (P, D)).

    D = (rings * histograms + 1) * orientations (104 by default); grid points every ``step`` pixels, starting
    ``radius`` pixels from the border (skimage.feature.daisy).
    """
    from skimage.color import rgb2gray
    from skimage.feature import daisy

    from zoo.data.regions import as_rgb_image

    grey = rgb2gray(as_rgb_image(image))
    desc = daisy(grey, step=int(step), radius=int(radius), rings=int(rings), histograms=int(histograms),
                 orientations=int(orientations))
    n_r, n_c, dim = desc.shape
    rows = radius + step * np.arange(n_r)
    cols = radius + step * np.arange(n_c)
    rr, cc = np.meshgrid(rows, cols, indexing="ij")
    return rr.ravel(), cc.ravel(), desc.reshape(-1, dim)


def region_word_counts(words, region_ids, n_regions: int, n_words: int) -> np.ndarray:
    """(n_regions, n_words) counts of visual words per region from per-token words and region ids."""
    words = np.asarray(words, dtype=np.int64)
    region_ids = np.asarray(region_ids, dtype=np.int64)
    joint = np.bincount(region_ids * n_words + words, minlength=n_regions * n_words)
    return joint.reshape(n_regions, n_words)


def one_hot_counts(tokens: np.ndarray, n_words: int) -> np.ndarray:
    out = np.zeros((len(tokens), n_words), dtype=np.int64)
    out[np.arange(len(tokens)), tokens] = 1
    return out


def image_sums(region_counts: np.ndarray, image_ids: np.ndarray, n_images: int) -> np.ndarray:
    out = np.zeros((n_images, region_counts.shape[1]), dtype=np.int64)
    np.add.at(out, image_ids, region_counts)
    return out


def counts_from_regions(regions, n_visual_words: int = 64, seed: int = 0, train=None):
    """Blob-token ``MultimodalCounts`` of any ``AnnotatedRegions`` (e.g. your own photos).

    The codebook is learned on ``train`` (another AnnotatedRegions with the same features) or, if None, on
    ``regions`` itself. words (I, W) = keyword indicators; visual_words (I, V); region_visual_words (R, V).
    """
    from zoo.data.containers import MultimodalCounts

    source = regions if train is None else train
    if source.X.shape[1] != regions.X.shape[1]:
        raise ValueError(f"train: {source.X.shape[1]} features, but regions have {regions.X.shape[1]}")
    _, tokens = blob_tokens(source.X, regions.X, n_visual_words, seed)
    region_counts = one_hot_counts(tokens, n_visual_words)
    return MultimodalCounts(words=regions.keyword_matrix().astype(np.int64),
                            visual_words=image_sums(region_counts, regions.image_ids, regions.n_images),
                            word_vocabulary=list(regions.vocabulary),
                            visual_vocabulary=[f"blob{v}" for v in range(n_visual_words)],
                            region_visual_words=region_counts, region_image_ids=regions.image_ids,
                            region_labels=regions.region_labels)
