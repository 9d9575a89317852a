"""Visual words (issue 7): seeded k-means codebooks, quantization, dense descriptors, the counts form."""
import numpy as np
import pytest

from zoo.data.containers import AnnotatedRegions
from zoo.data.visual_words import (blob_tokens, counts_from_regions, dense_descriptors, kmeans, quantize,
                                   region_word_counts)


def _three_clusters(seed=0):
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    truth = np.repeat([0, 1, 2], 40)
    return centres[truth] + rng.normal(0, 0.5, (120, 2)), truth


def test_kmeans_recovers_separated_clusters_and_is_seeded():
    X, truth = _three_clusters()
    centres, assignment = kmeans(X, 3, seed=1)
    # the assignment is the truth up to relabelling
    pairs = {(a, t) for a, t in zip(assignment, truth)}
    assert len(pairs) == 3 and len({a for a, _ in pairs}) == 3
    np.testing.assert_array_equal(quantize(X, centres), assignment)
    again, _ = kmeans(X, 3, seed=1)
    np.testing.assert_array_equal(centres, again)
    with pytest.raises(ValueError, match="n_visual_words"):
        kmeans(X, 500)
    with pytest.raises(ValueError, match="n_visual_words"):
        kmeans(X, 0)


def test_kmeans_returns_k_centres_even_with_duplicate_points():
    X = np.repeat([[0.0, 0.0], [1.0, 1.0]], 10, axis=0)
    centres, assignment = kmeans(X, 3, seed=0)
    assert centres.shape == (3, 2) and np.all(np.isfinite(centres))
    assert set(assignment) <= {0, 1, 2}


def test_blob_tokens_use_the_training_codebook():
    X, _ = _three_clusters()
    codebook, tokens = blob_tokens(X[::2], X[1::2], n_visual_words=3, seed=0)
    np.testing.assert_array_equal(tokens, quantize(X[1::2], codebook))


def test_region_word_counts_and_dense_descriptor_grid():
    counts = region_word_counts([0, 2, 2, 1], [0, 0, 1, 2], n_regions=4, n_words=3)
    np.testing.assert_array_equal(counts, [[1, 0, 1], [0, 0, 1], [0, 1, 0], [0, 0, 0]])
    image = np.random.default_rng(0).uniform(size=(40, 56, 3))
    rows, cols, desc = dense_descriptors(image, step=8, radius=6)
    assert desc.shape == (rows.size, 104) and rows.max() < 40 and cols.max() < 56 and rows.min() == 6
    assert np.all(np.isfinite(desc))


def test_counts_from_any_annotated_regions():
    X, truth = _three_clusters()
    regions = AnnotatedRegions(X=X, image_ids=np.arange(120) // 10, keywords=[("a", "b")] * 12,
                               vocabulary=["a", "b", "c"], region_labels=truth % 2)
    counts = counts_from_regions(regions, n_visual_words=3, seed=0)
    assert counts.words.shape == (12, 3) and counts.visual_words.shape == (12, 3)
    np.testing.assert_array_equal(counts.visual_words.sum(1), 10)  # one token per region
    np.testing.assert_array_equal(counts.region_visual_words.sum(1), 1)
    np.testing.assert_array_equal(counts.words[:, 2], 0)
