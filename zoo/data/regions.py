"""Segmentation of photographs into regions ("blobs"), the first step of all four region-word papers.

Carbonetto et al. (2003, Sec. 5.3) and Gustafson et al. (2007, Sec. 1) segment each image with Normalized Cuts
(Shi & Malik 1997); Kueck (2004, Ch. 1) and Yakhnenko & Honavar use the same kind of regions. Three methods:

- ``"ncut"`` (default): Normalized Cuts on a superpixel graph. SLIC superpixels (a few hundred) are the nodes,
  adjacent superpixels are joined with the Shi-Malik affinity ``w_ij = exp(-|c_i - c_j|^2 / sigma^2)`` of their
  mean CIE-Lab colours, and the graph is split recursively in two by the second generalized eigenvector of
  ``(D - W) y = lambda D y`` (Shi & Malik 2000, eq. 7-9), cutting where the normalized cut is smallest, until the
  best cut of a piece costs more than ``thresh``. The eigenproblems are small (one node per superpixel), so they
  are solved densely and exactly. ``skimage.graph.cut_normalized`` implements the same recursion with ARPACK
  (``which='SM'``, up to 100 eigenvectors per split): slower (``zoo bench regions``), it tries only 10 splitting
  thresholds, and it raised ``ArpackError`` ("No shifts could be applied") on superpixel graphs while this module
  was written; the dense solver is exact and deterministic.
- ``"slic"``: SLIC alone with few segments (fast, compact regions).
- ``"felzenszwalb"``: the graph-based method of Felzenszwalb & Huttenlocher (fast, irregular regions).

Every method is deterministic (no random state) and returns a region map ``(H, W)`` int32 with labels 0..R-1.
Images are checked by ``as_rgb_image``: a ``ValueError`` names the problem (grayscale, wrong shape, non-finite).
"""
from __future__ import annotations

import os
from typing import Any, Mapping

import numpy as np

__all__ = ["SEGMENTATIONS", "DEFAULT_SEGMENTATION_PARAMS", "as_rgb_image", "segment_image", "segmentation_params",
           "relabel_consecutive", "superpixel_graph", "normalized_cut_partition", "merge_small_regions",
           "plot_segmentation", "parallel_map"]

SEGMENTATIONS = ("ncut", "slic", "felzenszwalb")

# Defaults chosen on MSRC-v2 (320 x 213 photographs) so that each method gives about as many regions per image as
# the papers' Normalized Cuts did (5 to 25; Gustafson et al. 2007 report 728 segments in 68 images, ~11 per image).
DEFAULT_SEGMENTATION_PARAMS: dict[str, dict[str, Any]] = {
    "ncut": {"n_superpixels": 300, "compactness": 10.0, "sigma": 10.0, "thresh": 0.12, "min_size": 0.004,
             "min_regions": 5, "max_regions": 25},
    "slic": {"n_segments": 20, "compactness": 10.0, "min_size": 0.004},
    "felzenszwalb": {"scale": 400.0, "sigma": 0.8, "min_size": 0.01},
}


def segmentation_params(method: str, **params) -> dict[str, Any]:
    """The full parameter dict of ``method`` (defaults overridden by ``params``); ValueError for unknown names."""
    if method not in DEFAULT_SEGMENTATION_PARAMS:
        raise ValueError(f"segmentation: unknown method {method!r}; choose one of {', '.join(SEGMENTATIONS)}")
    defaults = DEFAULT_SEGMENTATION_PARAMS[method]
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        raise ValueError(f"segmentation_params: {unknown[0]!r} is not a parameter of {method!r}; "
                         f"parameters: {', '.join(defaults)}")
    out = dict(defaults)
    for key, value in params.items():
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                or not np.isfinite(value) or value < 0:
            raise ValueError(f"segmentation_params: {key!r} must be a finite non-negative number, got {value!r}")
        out[key] = type(defaults[key])(value)
    if method == "ncut" and not 1 <= out["min_regions"] <= out["max_regions"]:
        raise ValueError("segmentation_params: need 1 <= 'min_regions' <= 'max_regions'")
    return out


def as_rgb_image(image, name: str = "image") -> np.ndarray:
    """Check an RGB photograph and return it as float64 in [0, 1], shape (H, W, 3).

    Accepts uint8 (0..255), uint16 (0..65535) or float in [0, 1]; an alpha channel (H, W, 4) is dropped only when
    it is fully opaque. Grayscale (H, W) images are a ValueError: colour features need colour (convert explicitly
    with ``skimage.color.gray2rgb`` if that is what you want).
    """
    arr = np.asarray(image)
    if arr.ndim == 2:
        raise ValueError(f"{name}: grayscale image of shape {arr.shape}; region features need an RGB image "
                         f"(convert with skimage.color.gray2rgb if grey colour features are intended)")
    if arr.ndim != 3 or arr.shape[2] not in (3, 4):
        raise ValueError(f"{name}: expected an RGB image of shape (H, W, 3), got shape {arr.shape}")
    if arr.shape[0] < 8 or arr.shape[1] < 8:
        raise ValueError(f"{name}: image of {arr.shape[0]} x {arr.shape[1]} pixels is too small (at least 8 x 8)")
    if arr.dtype == np.uint8:
        out = arr.astype(np.float64) / 255.0
    elif arr.dtype == np.uint16:
        out = arr.astype(np.float64) / 65535.0
    elif np.issubdtype(arr.dtype, np.floating):
        out = arr.astype(np.float64)
        if not np.all(np.isfinite(out)):
            raise ValueError(f"{name}: image has NaN or inf pixels")
        if out.min() < 0 or out.max() > 1:
            raise ValueError(f"{name}: float images must lie in [0, 1], got [{out.min():.3g}, {out.max():.3g}]")
    else:
        raise ValueError(f"{name}: unsupported pixel type {arr.dtype} (use uint8, uint16 or float in [0, 1])")
    if out.shape[2] == 4:
        if not np.all(out[..., 3] == 1.0):
            raise ValueError(f"{name}: image has a transparent alpha channel; flatten it onto a background first")
        out = out[..., :3]
    return np.ascontiguousarray(out)


def relabel_consecutive(region_map: np.ndarray) -> np.ndarray:
    """Labels renumbered 0..R-1 in order of first appearance in raster order (deterministic), int32 (H, W)."""
    flat = np.asarray(region_map).ravel()
    _, first, inverse = np.unique(flat, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))  # rank of each unique label by its first pixel
    return order[inverse].reshape(np.shape(region_map)).astype(np.int32)


def _adjacent_pairs(region_map: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct 4-adjacent region pairs (P, 2) with a < b, and the length (pixel edges) of each shared border."""
    horizontal = np.stack([region_map[:, :-1].ravel(), region_map[:, 1:].ravel()], axis=1)
    vertical = np.stack([region_map[:-1, :].ravel(), region_map[1:, :].ravel()], axis=1)
    pairs = np.concatenate([horizontal, vertical])
    pairs = np.sort(pairs[pairs[:, 0] != pairs[:, 1]], axis=1)
    if pairs.size == 0:
        return np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=np.int64)
    unique, counts = np.unique(pairs, axis=0, return_counts=True)
    return unique.astype(np.int64), counts.astype(np.int64)


def _region_means(values: np.ndarray, region_map: np.ndarray, n: int) -> np.ndarray:
    """Mean of (H, W, C) ``values`` over each of the ``n`` regions: (n, C)."""
    flat = region_map.ravel()
    counts = np.bincount(flat, minlength=n).astype(np.float64)
    sums = np.stack([np.bincount(flat, values[..., c].ravel(), minlength=n) for c in range(values.shape[2])], 1)
    return sums / np.maximum(counts, 1.0)[:, None]


def superpixel_graph(lab_image: np.ndarray, superpixels: np.ndarray, sigma: float) -> np.ndarray:
    """Affinity matrix W (n, n) of a superpixel map: Shi & Malik's colour affinity between adjacent superpixels.

    ``w_ij = exp(-|c_i - c_j|^2 / sigma^2)`` with c the mean CIE-Lab colour, for 4-adjacent superpixels i != j;
    0 otherwise (spatial locality of Shi & Malik 2000, eq. 11, with adjacency in place of a pixel radius).
    """
    n = int(superpixels.max()) + 1
    colours = _region_means(lab_image, superpixels, n)
    pairs, _ = _adjacent_pairs(superpixels)
    weights = np.exp(-np.sum((colours[pairs[:, 0]] - colours[pairs[:, 1]]) ** 2, axis=1) / sigma ** 2)
    W = np.zeros((n, n))
    W[pairs[:, 0], pairs[:, 1]] = weights
    W[pairs[:, 1], pairs[:, 0]] = weights
    return W


def _best_bipartition(W: np.ndarray, sizes: np.ndarray | None = None,
                      min_size: float = 0.0) -> tuple[float, np.ndarray | None]:
    """The best two-way normalized cut of the graph W: (ncut value, boolean side A) or (inf, None).

    Only splits whose two sides each have total node size (``sizes``, (n,)) at least ``min_size`` are allowed.
    Solves (D - W) y = lambda D y densely (scipy.linalg.eigh) for the second eigenvector y and splits it at the
    threshold with the smallest Ncut(A, B) = cut/assoc(A, V) + cut/assoc(B, V) (Shi & Malik 2000, eq. 2 and
    Sec. 3.1, step 3). Shi & Malik try l evenly spaced thresholds; here every one of the n - 1 thresholds between
    consecutive sorted entries of y is scored in O(n^2) with cumulative sums, so near-equal entries (a piecewise
    constant y) are never split by round-off.
    """
    import scipy.linalg

    n = W.shape[0]
    degree = W.sum(axis=1)
    if n < 2 or np.any(degree <= 0):
        return np.inf, None
    laplacian = np.diag(degree) - W
    _, vectors = scipy.linalg.eigh(laplacian, np.diag(degree), subset_by_index=[1, 1])
    y = vectors[:, 0]
    y = y * (1.0 if y[np.argmax(np.abs(y))] >= 0 else -1.0)  # fix the eigenvector's sign: deterministic output
    order = np.argsort(y, kind="stable")
    Ws = W[np.ix_(order, order)]
    # moving node k from B to A (prefix A = order[:k]) changes the cut by (weights to later) - (weights to earlier)
    to_later = np.triu(Ws, 1).sum(axis=1)
    to_earlier = np.tril(Ws, -1).sum(axis=1)
    cut = np.cumsum(to_later - to_earlier)[:-1]  # cut of A = order[:k + 1], k = 0..n-2
    assoc_a = np.cumsum(degree[order])[:-1]
    assoc_b = degree.sum() - assoc_a
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.where((assoc_a > 0) & (assoc_b > 0), cut / assoc_a + cut / assoc_b, np.inf)
    if sizes is not None:
        cumulative = np.cumsum(np.asarray(sizes, dtype=np.float64)[order])
        size_a, size_b = cumulative[:-1], cumulative[-1] - cumulative[:-1]
        values = np.where((size_a >= min_size) & (size_b >= min_size), values, np.inf)
    k = int(np.argmin(values))
    if not np.isfinite(values[k]):
        return np.inf, None
    side = np.zeros(n, dtype=bool)
    side[order[:k + 1]] = True
    return float(max(values[k], 0.0)), side


def normalized_cut_partition(W: np.ndarray, sizes: np.ndarray, thresh: float, min_size: float,
                             max_regions: int, min_regions: int = 1) -> np.ndarray:
    """Recursive two-way Normalized Cuts of a graph (Shi & Malik 2000, Sec. 3.1, step 5).

    W (n, n) affinities; sizes (n,) node sizes as fractions of the image. The piece with the cheapest best cut is
    split first; a piece is split while its cut has Ncut < ``thresh`` (or while there are fewer than
    ``min_regions`` pieces), both halves cover at least ``min_size`` of the image, and there are fewer than
    ``max_regions`` pieces. Disconnected pieces are first separated into their connected components (a zero-cost
    cut, so they may exceed ``max_regions``). Returns the piece index of each node (n,).
    """
    import scipy.sparse.csgraph

    n = W.shape[0]
    assignment = np.zeros(n, dtype=np.int64)
    _, components = scipy.sparse.csgraph.connected_components(W > 0, directed=False)
    pieces = [np.flatnonzero(components == c) for c in np.unique(components)]
    final: list[np.ndarray] = []
    frontier: list[tuple[float, int, np.ndarray, np.ndarray]] = []  # splittable: (ncut, order, nodes, side)
    counter = 0

    def push(nodes):
        nonlocal counter
        value, side = _best_bipartition(W[np.ix_(nodes, nodes)], sizes[nodes], min_size) \
            if nodes.size >= 2 else (np.inf, None)
        if side is not None:
            frontier.append((value, counter, nodes, side))
        else:
            final.append(nodes)
        counter += 1

    for nodes in pieces:
        push(nodes)
    while frontier and len(final) + len(frontier) < max_regions:
        frontier.sort(key=lambda item: (item[0], item[1]))
        if frontier[0][0] >= thresh and len(final) + len(frontier) >= min_regions:
            break
        _, _, nodes, side = frontier.pop(0)
        push(nodes[side])
        push(nodes[~side])
    final.extend(item[2] for item in frontier)
    for k, nodes in enumerate(sorted(final, key=lambda nd: int(nd.min()))):
        assignment[nodes] = k
    return assignment


def merge_small_regions(region_map: np.ndarray, min_pixels: int) -> np.ndarray:
    """Merge every region smaller than ``min_pixels`` into the neighbour it shares the longest border with.

    Regions are merged smallest first, one at a time, so the result does not depend on label order; returns the
    relabelled (consecutive) map. The papers drop or merge such slivers (Duygulu et al. 2002 keep regions above a
    size threshold); merging keeps every pixel in some region, so no image area is silently dropped.
    """
    labels = relabel_consecutive(region_map)
    while True:
        n = int(labels.max()) + 1
        sizes = np.bincount(labels.ravel(), minlength=n)
        small = np.flatnonzero(sizes < min_pixels)
        if small.size == 0 or n == 1:
            return labels
        victim = int(small[np.argsort(sizes[small], kind="stable")[0]])
        pairs, border = _adjacent_pairs(labels)
        touching = (pairs[:, 0] == victim) | (pairs[:, 1] == victim)
        neighbours = np.where(pairs[touching, 0] == victim, pairs[touching, 1], pairs[touching, 0])
        lengths = border[touching]
        target = int(neighbours[np.lexsort((neighbours, -lengths))[0]])  # longest border, then smallest label
        labels = relabel_consecutive(np.where(labels == victim, target, labels))


def _segment_ncut(rgb: np.ndarray, p: Mapping[str, Any]) -> np.ndarray:
    from skimage.color import rgb2lab
    from skimage.segmentation import slic

    superpixels = relabel_consecutive(slic(rgb, n_segments=int(p["n_superpixels"]), compactness=p["compactness"],
                                           start_label=0, channel_axis=-1))
    lab = rgb2lab(rgb)
    W = superpixel_graph(lab, superpixels, p["sigma"])
    n = W.shape[0]
    sizes = np.bincount(superpixels.ravel(), minlength=n) / superpixels.size
    pieces = normalized_cut_partition(W, sizes, p["thresh"], p["min_size"], int(p["max_regions"]),
                                      int(p["min_regions"]))
    return pieces[superpixels]


def segment_image(image, method: str = "ncut", **params) -> np.ndarray:
    """Segment an RGB photograph into regions.

    image: (H, W, 3) uint8 or float in [0, 1]; method: ``"ncut"`` | ``"slic"`` | ``"felzenszwalb"``; params
    override ``DEFAULT_SEGMENTATION_PARAMS[method]`` (``min_size``: smallest region as a fraction of the image;
    smaller ones are merged into their neighbour). Returns the region map (H, W) int32, labels 0..R-1.
    Deterministic: the same image and parameters always give the same map.
    """
    p = segmentation_params(method, **params)
    rgb = as_rgb_image(image)
    min_pixels = max(int(np.ceil(p["min_size"] * rgb.shape[0] * rgb.shape[1])), 1)
    if method == "ncut":
        raw = _segment_ncut(rgb, p)
    elif method == "slic":
        from skimage.segmentation import slic
        raw = slic(rgb, n_segments=int(p["n_segments"]), compactness=p["compactness"], start_label=0,
                   channel_axis=-1)
    else:
        from skimage.segmentation import felzenszwalb
        raw = felzenszwalb(rgb, scale=p["scale"], sigma=p["sigma"], min_size=min_pixels, channel_axis=-1)
    return merge_small_regions(raw, min_pixels)


def _jax_is_running() -> bool:
    """True when JAX has started its (multithreaded) runtime in this process, or when that cannot be told."""
    try:
        from jax._src import xla_bridge
        return bool(xla_bridge.backends_are_initialized())
    except Exception:  # a JAX without this helper: assume the worst
        return True


def _process_context():
    """fork where it is safe (POSIX, JAX's thread pools not started): workers start at once and a script needs
    no ``if __name__ == "__main__":`` guard; otherwise spawn (forking a running multithreaded runtime can
    deadlock), which re-imports the calling script in every worker."""
    import multiprocessing

    if "fork" in multiprocessing.get_all_start_methods() and not _jax_is_running():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def parallel_map(fn, tasks: list, n_jobs: int | None = None, progress: bool = True, desc: str = "") -> list:
    """``[fn(t) for t in tasks]`` in ``n_jobs`` worker processes (None: all cores, at most 8; 1: in this
    process), in order, with a tqdm progress bar. ``fn`` must be a module-level function (picklable).

    If the workers cannot start (a spawned worker re-running a script that lacks the ``__main__`` guard), the
    work is done in this process instead, with a warning that says why.
    """
    import concurrent.futures
    import warnings

    from tqdm import tqdm

    n_jobs = min(os.cpu_count() or 1, 8) if n_jobs is None else n_jobs
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs < 1:
        raise ValueError(f"n_jobs: expected a positive int or None, got {n_jobs!r}")
    if n_jobs > 1 and len(tasks) >= 4:
        try:
            with concurrent.futures.ProcessPoolExecutor(int(n_jobs), mp_context=_process_context()) as pool:
                return list(tqdm(pool.map(fn, tasks, chunksize=4), total=len(tasks), desc=desc,
                                 disable=not progress))
        except concurrent.futures.process.BrokenProcessPool:
            warnings.warn("parallel_map: worker processes failed to start (a script run with JAX already "
                          "started needs `if __name__ == '__main__':`); computing in this process", stacklevel=2)
    return [fn(t) for t in tqdm(tasks, desc=desc, disable=not progress)]


def plot_segmentation(image, region_map, region_labels=None, vocabulary=None, ax=None, title: str | None = None):
    """Show a photograph with its region boundaries and, per region, its label name at the region's centroid.

    image (H, W, 3); region_map (H, W) labels 0..R-1; region_labels (R,) indices into ``vocabulary`` or -1
    (printed as "-"), or strings. Returns the matplotlib Axes.
    """
    import matplotlib.pyplot as plt
    from skimage.segmentation import mark_boundaries

    rgb = as_rgb_image(image)
    region_map = np.asarray(region_map)
    if region_map.shape != rgb.shape[:2]:
        raise ValueError(f"region_map: shape {region_map.shape} differs from the image's {rgb.shape[:2]}")
    if ax is None:
        _, ax = plt.subplots()
    ax.imshow(mark_boundaries(rgb, region_map, color=(1, 1, 0)))
    n = int(region_map.max()) + 1
    if region_labels is not None:
        region_labels = list(region_labels)
        if len(region_labels) != n:
            raise ValueError(f"region_labels: {len(region_labels)} labels for {n} regions")
        rows, cols = np.indices(region_map.shape)
        counts = np.bincount(region_map.ravel(), minlength=n)
        cy = np.bincount(region_map.ravel(), rows.ravel(), minlength=n) / np.maximum(counts, 1)
        cx = np.bincount(region_map.ravel(), cols.ravel(), minlength=n) / np.maximum(counts, 1)
        for r, lab in enumerate(region_labels):
            if isinstance(lab, (int, np.integer)):
                text = "-" if lab < 0 else (vocabulary[lab] if vocabulary is not None else str(lab))
            else:
                text = str(lab)
            ax.text(cx[r], cy[r], text, ha="center", va="center", fontsize=7,
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "alpha": 0.7, "lw": 0})
    ax.set_axis_off()
    if title:
        ax.set_title(title, fontsize=9)
    return ax
