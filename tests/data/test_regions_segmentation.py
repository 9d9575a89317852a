"""Segmentation (issue 7): Normalized Cuts on superpixels, SLIC, Felzenszwalb; deterministic, exact on easy cases."""
import numpy as np
import pytest

from zoo.data.regions import (as_rgb_image, merge_small_regions, normalized_cut_partition, relabel_consecutive,
                              segment_image, segmentation_params)


def _quadrant_image(seed=0):
    """60 x 80 image of four flat, well separated colours (+ slight noise) and its true quadrant map."""
    rng = np.random.default_rng(seed)
    colours = np.array([[0.9, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.9], [0.9, 0.9, 0.2]])
    truth = np.zeros((60, 80), dtype=int)
    truth[:30, 40:] = 1
    truth[30:, :40] = 2
    truth[30:, 40:] = 3
    image = np.clip(colours[truth] + rng.normal(0, 0.01, (60, 80, 3)), 0, 1)
    return image, truth


def _purity(region_map, truth):
    """Share of pixels whose region's majority true segment is their own."""
    joint = np.bincount(region_map.ravel() * 4 + truth.ravel(), minlength=(region_map.max() + 1) * 4)
    return joint.reshape(-1, 4).max(axis=1).sum() / truth.size


@pytest.mark.parametrize("method", ["ncut", "slic", "felzenszwalb"])
def test_segmentations_are_deterministic_consecutive_and_respect_colour_edges(method):
    image, truth = _quadrant_image()
    a = segment_image(image, method)
    b = segment_image(image, method)
    np.testing.assert_array_equal(a, b)
    assert a.shape == truth.shape and a.dtype == np.int32
    np.testing.assert_array_equal(np.unique(a), np.arange(a.max() + 1))
    assert _purity(a, truth) > 0.97


def test_ncut_finds_exactly_the_four_quadrants():
    image, truth = _quadrant_image()
    assert _purity(segment_image(image, "ncut"), truth) == 1.0  # never merges across a colour edge
    # a threshold below the Ncut of halving a flat noisy quadrant (~0.1 on this small graph) stops at the edges
    region_map = segment_image(image, "ncut", thresh=0.03, min_regions=1)
    assert region_map.max() + 1 == 4
    assert _purity(region_map, truth) == 1.0


def test_normalized_cut_partition_splits_two_weakly_joined_cliques():
    W = np.zeros((8, 8))
    W[:4, :4] = 1.0
    W[4:, 4:] = 1.0
    np.fill_diagonal(W, 0.0)
    W[3, 4] = W[4, 3] = 0.01
    sizes = np.full(8, 1 / 8)
    parts = normalized_cut_partition(W, sizes, thresh=0.2, min_size=0.0, max_regions=10)
    np.testing.assert_array_equal(parts, [0, 0, 0, 0, 1, 1, 1, 1])
    # a threshold below the cheapest cut (0.01 / 12.01 * 2) keeps the graph whole
    np.testing.assert_array_equal(normalized_cut_partition(W, sizes, 1e-4, 0.0, 10), np.zeros(8))
    # min_regions forces cuts above the threshold, cheapest first: here one of the two cliques is halved
    forced = normalized_cut_partition(W, sizes, 1e-4, 0.0, 10, min_regions=3)
    assert len(np.unique(forced)) == 3 and len(np.unique(forced[:4])) * len(np.unique(forced[4:])) == 2
    # disconnected components are separate pieces even when the threshold forbids cutting
    W[3, 4] = W[4, 3] = 0.0
    np.testing.assert_array_equal(normalized_cut_partition(W, sizes, 0.0, 0.0, 10), [0] * 4 + [1] * 4)


def test_merge_small_regions_joins_the_neighbour_with_the_longest_border():
    region_map = np.zeros((6, 6), dtype=int)
    region_map[:, 3:] = 1
    region_map[2, 2:5] = 2  # 3 pixels: border of 3 pixel edges with region 0 and of 5 with region 1
    merged = merge_small_regions(region_map, min_pixels=4)
    assert merged.max() + 1 == 2
    assert merged[2, 2] == merged[0, 5] and merged[2, 2] != merged[0, 0]


def test_relabel_consecutive_numbers_by_first_appearance():
    np.testing.assert_array_equal(relabel_consecutive(np.array([[7, 7, 3], [9, 3, 3]])), [[0, 0, 1], [2, 1, 1]])


def test_bad_input_is_a_clear_error():
    image, _ = _quadrant_image()
    with pytest.raises(ValueError, match="grayscale"):
        segment_image(image[..., 0])
    with pytest.raises(ValueError, match="unknown method"):
        segment_image(image, "watershed")
    with pytest.raises(ValueError, match="'n_segments' is not a parameter"):
        segment_image(image, "ncut", n_segments=10)
    with pytest.raises(ValueError, match="min_regions"):
        segmentation_params("ncut", min_regions=30)
    with pytest.raises(ValueError, match="thresh"):
        segmentation_params("ncut", thresh=float("nan"))
    with pytest.raises(ValueError, match="transparent"):
        as_rgb_image(np.zeros((10, 10, 4)))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        as_rgb_image(np.full((10, 10, 3), 2.0))
    np.testing.assert_allclose(as_rgb_image(np.full((10, 10, 3), 255, dtype=np.uint8)), 1.0)


def _relabel_tasks():
    maps = [np.array([[k + 3, k + 3, 1], [k, 1, 1]]) for k in range(5, 11)]
    return maps, [relabel_consecutive(m) for m in maps]


def test_parallel_map_keeps_order_and_matches_the_sequential_result(monkeypatch):
    import warnings

    from zoo.data import regions

    # the fork path (taken when JAX has not started its runtime; forced here, since other tests may have)
    monkeypatch.setattr(regions, "_jax_is_running", lambda: False)
    maps, expected = _relabel_tasks()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # JAX's at-fork notice when its runtime is up
        outputs = [regions.parallel_map(relabel_consecutive, maps, n_jobs=2, progress=False),
                   regions.parallel_map(relabel_consecutive, maps, n_jobs=1, progress=False)]
    for out in outputs:
        assert len(out) == len(expected)
        for a, b in zip(out, expected):
            np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="n_jobs"):
        regions.parallel_map(relabel_consecutive, maps, n_jobs=0)


@pytest.mark.slow
def test_parallel_map_with_spawned_workers(monkeypatch):
    from zoo.data import regions

    monkeypatch.setattr(regions, "_jax_is_running", lambda: True)
    maps, expected = _relabel_tasks()
    for a, b in zip(regions.parallel_map(relabel_consecutive, maps, n_jobs=2, progress=False), expected):
        np.testing.assert_array_equal(a, b)
