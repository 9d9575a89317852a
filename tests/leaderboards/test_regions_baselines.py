"""Region-labelling baselines (word-frequency prior, co-occurrence, supervised upper bound) on hand-made regions."""
import numpy as np
import pytest

from zoo.data.containers import AnnotatedRegions
from zoo.experiments.regions import (baseline_table, cooccurrence_scores, region_accuracy, reproduce,
                                     supervised_scores, word_prior_scores)

VOCAB = ["sky", "grass", "cow"]


def _regions(seed, n_images=30):
    """Images of three kinds, (sky, grass), (grass, cow), (sky, cow), one region per word; features = word centre
    plus noise; kind (sky, grass) is the most common."""
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 5.0], [0.0, -5.0], [5.0, 0.0]])
    labels, image_ids, keywords = [], [], []
    for i in range(n_images):
        words = [[0, 1], [0, 1], [1, 2], [0, 2]][i % 4]
        labels += words
        image_ids += [i] * len(words)
        keywords.append(tuple(VOCAB[w] for w in words))
    labels = np.array(labels)
    X = centres[labels] + rng.normal(0, 0.5, (len(labels), 2))
    return AnnotatedRegions(X=X, image_ids=image_ids, keywords=keywords, vocabulary=VOCAB, region_labels=labels)


def test_region_accuracy_with_and_without_captions_by_hand():
    regions = AnnotatedRegions(X=np.zeros((3, 1)), image_ids=[0, 0, 1], keywords=[("sky", "cow"), ("grass",)],
                               vocabulary=VOCAB, region_labels=[0, 2, -1])
    scores = np.array([[0.1, 0.8, 0.1],   # free: grass (wrong); with captions: sky and cow tie -> sky (right)
                       [0.2, 0.5, 0.3],   # free: grass (wrong); with captions: cow (right)
                       [1.0, 0.0, 0.0]])  # unlabelled: not scored
    free = region_accuracy(scores, regions, with_captions=False)
    captioned = region_accuracy(scores, regions, with_captions=True)
    assert free == {"accuracy": 0.0, "per_image": 0.0}
    assert captioned == {"accuracy": 1.0, "per_image": 1.0}


def test_word_prior_always_picks_the_most_frequent_keyword():
    train, test = _regions(0), _regions(1, n_images=9)
    scores = word_prior_scores(train, test)
    predicted = np.where(test.keyword_matrix()[test.image_ids].astype(bool), scores, -np.inf).argmax(1)
    # training frequencies: sky 3/4, grass 3/4, cow 1/2 -> sky (tie with grass: the lower index), else grass
    has_sky = test.keyword_matrix()[test.image_ids, 0].astype(bool)
    np.testing.assert_array_equal(predicted, np.where(has_sky, 0, 1))
    acc = region_accuracy(scores, test)["accuracy"]
    np.testing.assert_allclose(acc, np.mean(test.region_labels == predicted))


def test_cooccurrence_and_supervised_learn_separable_regions():
    train, test = _regions(0), _regions(1)
    co = region_accuracy(cooccurrence_scores(train, test, n_visual_words=6, seed=0), test)["accuracy"]
    sup = region_accuracy(supervised_scores(train, test), test, with_captions=False)["accuracy"]
    prior = region_accuracy(word_prior_scores(train, test), test)["accuracy"]
    assert prior < 0.6 and sup == 1.0
    # each word's regions co-occur with it in every image but with each other word in only some: counting suffices
    assert co == 1.0
    rows = baseline_table(train, test, n_visual_words=6)
    assert [r["method"].split()[0] for r in rows] == ["chance", "word-frequency", "co-occurrence", "supervised"]
    assert all(np.isfinite(r["with_captions"]) for r in rows)


def test_reproduce_skips_cleanly_without_the_data(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ZOO_DATA", str(tmp_path / "no_data_here"))
    report = reproduce(tmp_path, fast=True)
    assert "skipped" in capsys.readouterr().out
    assert report.sections == [] and any("not available" in note for note in report.notes)
