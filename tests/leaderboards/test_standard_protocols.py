"""The literature's protocols: per-word annotation metrics, pixel accuracy, the discrete translation model, and
the leaderboard document rendered from measured rows."""
import math

import numpy as np
import pytest

from zoo.metrics import per_word_annotation, pixel_accuracy


def test_per_word_annotation_by_hand():
    # 3 images, 4 words; 2 words per image
    scores = np.array([[4, 3, 2, 1], [1, 4, 3, 2], [4, 1, 2, 3.]])
    captions = np.array([[1, 0, 0, 0], [0, 1, 0, 1], [0, 0, 1, 0]], bool)
    out = per_word_annotation(scores, captions, n_words=2)
    # predicted: img0 {0, 1}, img1 {1, 2}, img2 {0, 3}; test words 0, 1, 2, 3 (all occur)
    # word 0: predicted 2, correct 1, true 1 -> P 1/2, R 1; word 1: predicted 2, correct 1 (img1), true 1 -> 1/2, 1
    # word 2: predicted 1 (img1), correct 0, true 1 -> 0, 0; word 3: predicted 1 (img2), correct 0, true 1 -> 0, 0
    assert out["P"] == pytest.approx(0.25) and out["R"] == pytest.approx(0.5)
    assert out["F1"] == pytest.approx(2 * 0.25 * 0.5 / 0.75) and out["N+"] == 2 and out["words"] == 4


def test_per_word_annotation_ignores_words_absent_from_the_test_captions_and_never_picks_minus_inf():
    scores = np.array([[5, -np.inf, 1, 0], [5, -np.inf, 0, 1.]])
    captions = np.array([[0, 1, 1, 0], [1, 0, 0, 0]], bool)
    out = per_word_annotation(scores, captions, n_words=2)
    assert out["words"] == 3            # word 3 occurs in no caption: not averaged
    # word 1 (unseen in training, -inf) can never be recalled
    assert out["N+"] == 2 and out["R"] == pytest.approx((1 + 0 + 1) / 3)
    with pytest.raises(ValueError, match="scores"):
        per_word_annotation(scores[:, :3], captions)
    with pytest.raises(ValueError, match="NaN"):
        per_word_annotation(np.full((2, 4), np.nan), captions, n_words=2)


def test_pixel_accuracy_excludes_void_and_averages_classes():
    truth = np.array([[0, 0, 0, 1], [1, -1, -1, 2]])
    pred = np.array([[0, 0, 1, 1], [0, 2, 2, 2]])
    out = pixel_accuracy(pred, truth)
    assert out["pixels"] == 6 and out["global"] == pytest.approx(4 / 6)
    assert out["class_avg"] == pytest.approx((2 / 3 + 1 / 2 + 1) / 3)
    with pytest.raises(ValueError, match="void"):
        pixel_accuracy(pred, np.full_like(truth, -1))


def test_translation_em_increases_the_likelihood_and_recovers_a_planted_lexicon():
    from zoo.leaderboards.corel5k_standard import translation_em
    rng = np.random.default_rng(0)
    n_images, n_blobs = 400, 6
    blobs = np.zeros((n_images, n_blobs), int)
    words = np.zeros((n_images, n_blobs), int)
    for i in range(n_images):
        present = rng.choice(n_blobs, size=2, replace=False)
        blobs[i, present] = 1
        words[i, present] = 1           # blob b always translates to word b
    t, trace = translation_em(blobs, words, max_iter=100)
    assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[:-1]))     # EM: monotone log likelihood
    assert np.all(np.argmax(t, axis=1) == np.arange(n_blobs))
    assert np.allclose(t.sum(axis=1), 1.0)
    with pytest.raises(ValueError, match="blobs, words"):
        translation_em(blobs, words[:5])


def _summary_row(dataset, method, family, caption, free=0.3, p5=0.3):
    row = {"dataset": dataset, "method": method, "family": family, "splits": 5, "errors": []}
    for m, v in (("caption_acc", caption), ("free_acc", free), ("P@5", p5), ("R@5", 0.5), ("log_density", -2.0)):
        row[m] = (v, 0.01)
    row["fit_s"] = (1.0, 0.1)
    return row


def test_leaderboard_document_sorts_merges_and_sets_the_bound_apart(tmp_path):
    from zoo.leaderboards.corel5k_standard import PUBLISHED
    from zoo.leaderboards.document import render_markdown
    d = "msrc_v2 carbonetto03 ncut"
    seeded = [_summary_row(d, "chance", "baseline", 0.4),
              _summary_row(d, "carbonetto03 MAP full", "model", 0.7),
              _summary_row(d, "carbonetto03 MAP full (raw features)", "model", 0.7),
              _summary_row(d, "co-occurrence", "baseline", 0.6),
              _summary_row(d, "supervised LR (upper bound)", "bound", 0.9)]
    standard = [{"method": "translation model (EM)", "family": "model", "P": 0.06, "R": 0.07, "F1": 0.065,
                 "N+": 50, "P@5": 0.2, "fit_s": 10.0}]
    text = render_markdown({"seeded": seeded, "standard": standard, "pixel": [], "mil": []}, PUBLISHED)
    table = text[text.index("### MSRC-v2, NCut regions"):]
    order = [table.index(name) for name in ("translation (Carbonetto et al. 2003) MAP full", "| co-occurrence",
                                            "| chance")]
    assert order == sorted(order)
    tables = table[:table.index("## What each")]
    assert tables.count("MAP full (same numbers: raw features)") == 1 and "MAP full (raw features) |" not in tables
    assert "Upper bound" in table and "| supervised LR" not in table
    assert "published, features as stated" in text and "Guillaumin" in text
    assert not any(w in text for w in ("issue", "commit", "borrowed", "MISSED", "host"))
    assert "To label the regions of captioned images" in text
