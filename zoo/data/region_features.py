"""Region features by name, each the feature set of one paper.

All statistics come from one pass over the pixels (``region_statistics``, 16 columns = Gustafson et al. 2007,
Table 1); a named set selects its columns:

- ``"carbonetto03"`` (10): area, x, y, boundary/area, Lab mean (3), Lab std (3) -- Carbonetto, de Freitas,
  Gustafson & Thompson (2003), Sec. 5.3: "horizontal and vertical position in the image, area, perimeter divided
  by area, average (lab) colour and standard deviation of the (lab) colour"; the column order is that of the
  paper's Sec. 5.3 discussion ("the first four components ... area, x, y and boundary/area").
- ``"gustafson07"`` (16): area, mean x and y, std of x and y, perimeter/area, convexity, Lab mean (3), Lab std (3),
  Lab skewness (3) -- Gustafson, Thompson & de Freitas (2007), Table 1.
- ``"kueck04"`` (6): Lab mean (3), vertical position, boundary/area, std of brightness (L) -- Kueck (2004), Sec. 5.2
  (six features per region of Carbonetto's Corel data).

Definitions (exact, tested on synthetic images):
area = pixels / (H W); x = (mean column + 0.5) / W and y = (mean row + 0.5) / H (pixel centres, in (0, 1));
std of x, y: population std of the same normalized coordinates; perimeter = number of pixel edges between the
region and another region or the image border (crack length), boundary/area = perimeter / pixels;
convexity = pixels / area of the convex hull of the region's pixel squares (1 for convex shapes);
Lab = CIE-Lab (D65) of skimage.color.rgb2lab; std and skewness are population moments (skewness 0 when std = 0).
Features are standardized with the training set's statistics by ``fit_standardizer``/``standardize``.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["STATISTIC_NAMES", "FEATURE_SETS", "feature_names", "region_statistics", "select_features",
           "region_features", "Standardizer", "fit_standardizer", "standardize"]

STATISTIC_NAMES = ("area", "x", "y", "std_x", "std_y", "boundary_per_area", "convexity",
                   "L_mean", "a_mean", "b_mean", "L_std", "a_std", "b_std", "L_skew", "a_skew", "b_skew")

FEATURE_SETS: dict[str, tuple[str, ...]] = {
    "carbonetto03": ("area", "x", "y", "boundary_per_area", "L_mean", "a_mean", "b_mean", "L_std", "a_std",
                     "b_std"),
    "gustafson07": STATISTIC_NAMES,
    "kueck04": ("L_mean", "a_mean", "b_mean", "y", "boundary_per_area", "L_std"),
}


def feature_names(features: str) -> tuple[str, ...]:
    """Column names of a named feature set; ValueError for an unknown name."""
    if features not in FEATURE_SETS:
        raise ValueError(f"features: unknown feature set {features!r}; choose one of {', '.join(FEATURE_SETS)}")
    return FEATURE_SETS[features]


def _check_region_map(region_map, shape) -> np.ndarray:
    labels = np.asarray(region_map)
    if labels.shape != tuple(shape):
        raise ValueError(f"region_map: shape {labels.shape} differs from the image's {tuple(shape)}")
    if not np.issubdtype(labels.dtype, np.integer):
        raise ValueError("region_map: expected integer region labels")
    if labels.min() < 0:
        raise ValueError("region_map: negative region label")
    n = int(labels.max()) + 1
    missing = np.flatnonzero(np.bincount(labels.ravel(), minlength=n) == 0)
    if missing.size:
        raise ValueError(f"region_map: labels must be 0..R-1 without gaps; region {missing[0]} has no pixel")
    return labels.astype(np.int64)


def _perimeters(labels: np.ndarray, n: int) -> np.ndarray:
    """Crack length of each region: pixel edges shared with another region or with the image border, (n,)."""
    padded = np.pad(labels, 1, constant_values=-1)
    out = np.zeros(n, dtype=np.float64)
    for a, b in ((padded[1:-1, :-1], padded[1:-1, 1:]), (padded[:-1, 1:-1], padded[1:, 1:-1])):
        differ = a != b
        for side in (a[differ], b[differ]):
            out += np.bincount(side[side >= 0], minlength=n)
    return out


def _convexity(labels: np.ndarray, n: int, counts: np.ndarray) -> np.ndarray:
    """pixels / convex-hull area of the union of the region's pixel squares, (n,). Uses boundary pixels only."""
    from scipy.spatial import ConvexHull

    padded = np.pad(labels, 1, constant_values=-1)
    centre = padded[1:-1, 1:-1]
    boundary = ((centre != padded[:-2, 1:-1]) | (centre != padded[2:, 1:-1])
                | (centre != padded[1:-1, :-2]) | (centre != padded[1:-1, 2:]))
    rows, cols = np.nonzero(boundary)
    owner = centre[rows, cols]
    order = np.argsort(owner, kind="stable")
    rows, cols, owner = rows[order], cols[order], owner[order]
    starts = np.searchsorted(owner, np.arange(n + 1))
    corners = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=np.float64)
    out = np.ones(n)
    for r in range(n):
        pts = np.stack([rows[starts[r]:starts[r + 1]], cols[starts[r]:starts[r + 1]]], 1).astype(np.float64)
        pts = np.unique((pts[:, None, :] + corners[None]).reshape(-1, 2), axis=0)
        hull_area = ConvexHull(pts).volume  # pixel squares never make a degenerate (flat) hull
        out[r] = counts[r] / hull_area
    return out


def _moments(values: np.ndarray, flat_labels: np.ndarray, n: int, counts: np.ndarray):
    """Per-region mean, population std and skewness of (P, C) ``values``: three (n, C) arrays."""
    mean = np.stack([np.bincount(flat_labels, values[:, c], minlength=n) for c in range(values.shape[1])], 1)
    mean /= counts[:, None]
    centred = values - mean[flat_labels]
    m2 = np.stack([np.bincount(flat_labels, centred[:, c] ** 2, minlength=n) for c in range(values.shape[1])], 1)
    m3 = np.stack([np.bincount(flat_labels, centred[:, c] ** 3, minlength=n) for c in range(values.shape[1])], 1)
    m2 /= counts[:, None]
    m3 /= counts[:, None]
    std = np.sqrt(np.maximum(m2, 0.0))
    # round-off makes the std of a constant region ~1e-15, not 0: call such a spread zero (skewness 0)
    flat = std <= 1e-9 * np.maximum(1.0, np.abs(mean))
    skew = np.where(flat, 0.0, m3 / np.where(flat, 1.0, std) ** 3)
    return mean, np.where(flat, 0.0, std), skew


def region_statistics(image, region_map) -> np.ndarray:
    """All 16 region statistics (``STATISTIC_NAMES``) of a photograph: (R, 16) float64.

    image (H, W, 3) RGB (uint8 or float in [0, 1]); region_map (H, W) int labels 0..R-1 (every label used).
    """
    from skimage.color import rgb2lab

    from zoo.data.regions import as_rgb_image

    rgb = as_rgb_image(image)
    labels = _check_region_map(region_map, rgb.shape[:2])
    height, width = labels.shape
    n = int(labels.max()) + 1
    flat = labels.ravel()
    counts = np.bincount(flat, minlength=n).astype(np.float64)
    rows, cols = np.indices(labels.shape)
    coords = np.stack([(cols.ravel() + 0.5) / width, (rows.ravel() + 0.5) / height], 1)
    coord_mean, coord_std, _ = _moments(coords, flat, n, counts)
    lab_mean, lab_std, lab_skew = _moments(rgb2lab(rgb).reshape(-1, 3), flat, n, counts)
    area = counts / (height * width)
    boundary_per_area = _perimeters(labels, n) / counts
    convexity = _convexity(labels, n, counts)
    return np.column_stack([area, coord_mean, coord_std, boundary_per_area, convexity, lab_mean, lab_std,
                            lab_skew])


def select_features(statistics: np.ndarray, features: str) -> np.ndarray:
    """The columns of a named feature set from (R, 16) ``region_statistics``: (R, D)."""
    names = feature_names(features)
    stats = np.asarray(statistics, dtype=np.float64)
    if stats.ndim != 2 or stats.shape[1] != len(STATISTIC_NAMES):
        raise ValueError(f"statistics: expected shape (R, {len(STATISTIC_NAMES)}), got {stats.shape}")
    return stats[:, [STATISTIC_NAMES.index(name) for name in names]]


def region_features(image, region_map, features: str = "carbonetto03") -> np.ndarray:
    """Raw (unstandardized) features of each region: (R, D) with D = len(feature_names(features))."""
    feature_names(features)  # validate the name before any computation
    return select_features(region_statistics(image, region_map), features)


class Standardizer(NamedTuple):
    """Per-column mean and scale (D,) learned on training regions (Gustafson et al. 2007: mean 0, variance 1)."""

    mean: np.ndarray
    scale: np.ndarray


def fit_standardizer(X) -> Standardizer:
    """Mean and std of each column of X (R, D); a constant column gets scale 1 (it stays constant, at 0)."""
    from zoo.data.containers import check_features

    X = check_features(X, "X")
    std = X.std(axis=0)
    return Standardizer(mean=X.mean(axis=0), scale=np.where(std > 0, std, 1.0))


def standardize(X, standardizer: Standardizer) -> np.ndarray:
    """(X - mean) / scale with the training statistics: (R, D)."""
    from zoo.data.containers import check_features

    X = check_features(X, "X")
    if X.shape[1] != standardizer.mean.shape[0]:
        raise ValueError(f"X: {X.shape[1]} columns, but the standardizer has {standardizer.mean.shape[0]}")
    return (X - standardizer.mean) / standardizer.scale
