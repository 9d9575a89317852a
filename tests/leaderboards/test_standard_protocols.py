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
    assert "sees): supervised LR: caption 90.0 ± 1.0 %" in table          # its "(upper bound)" tag not repeated
    assert "| -2.00 ± 0.01 | 1.0 |" in tables                               # fit s: a rough time, one decimal
    assert "published, features as stated" in text and "Guillaumin" in text
    assert not any(w in text for w in ("issue", "commit", "borrowed", "MISSED", "host"))
    assert "To label the regions of captioned images" in text


def test_fit_seconds_show_no_more_digits_than_a_rough_wall_time_has():
    from zoo.leaderboards.document import fit_seconds
    assert [fit_seconds(s) for s in (0.006, 0.1, 0.4, 7.6, 9.96, 34.6, 1491.2, float("nan"))] == [
        "< 0.1", "0.1", "0.4", "7.6", "10", "35", "1491", "n/a"]


def test_pixel_accuracy_from_counts_equals_the_maps():
    from zoo.metrics import pixel_accuracy_from_counts
    rng = np.random.default_rng(1)
    counts = rng.integers(0, 20, size=(12, 4))
    predicted = rng.integers(-1, 4, size=12)
    # paint each region's pixels: truth by its counts, prediction its class (-1 -> a class nobody has)
    truth = np.concatenate([np.repeat(np.arange(4), c) for c in counts])
    pred = np.concatenate([np.full(c.sum(), p if p >= 0 else 99) for c, p in zip(counts, predicted)])
    expected = pixel_accuracy(pred, truth)
    got = pixel_accuracy_from_counts(predicted, counts)
    assert got["global"] == pytest.approx(expected["global"])
    assert got["class_avg"] == pytest.approx(expected["class_avg"]) and got["pixels"] == expected["pixels"]
    with pytest.raises(ValueError, match="predicted"):
        pixel_accuracy_from_counts(predicted[:3], counts)


def test_leaderboard_split_scores_pixels_and_counts_unseen_classes_as_wrong():
    from zoo.data import AnnotatedRegions
    from zoo.leaderboards.board import Scores, evaluate, make_split
    rng = np.random.default_rng(0)
    n_images, per = 12, 3
    image_ids = np.repeat(np.arange(n_images), per)
    labels = rng.integers(0, 3, size=image_ids.size)
    labels[image_ids == 0] = 3                               # class 3 only in image 0
    keywords = [tuple(sorted({f"w{l}" for l in labels[image_ids == i]})) for i in range(n_images)]
    vocab = ["w0", "w1", "w2", "w3"]
    data = AnnotatedRegions(rng.normal(size=(image_ids.size, 2)), image_ids,
                            [tuple(v for v in vocab if v in k) for k in keywords], vocab, region_labels=labels)
    counts = np.zeros((image_ids.size, 4), int)
    counts[np.arange(image_ids.size), labels] = 10
    for seed in range(6):
        split = make_split(data, seed, pixel_counts=counts)
        n_words = len(split.train.vocabulary)
        truth = split.labels
        perfect = np.full((truth.size, n_words), 0.0)
        perfect[np.flatnonzero(truth >= 0), truth[truth >= 0]] = 1.0
        out = evaluate(Scores(perfect, True), split)
        unseen = split.pixel_counts[:, -1].sum()
        total = split.pixel_counts.sum()
        assert out["pixel_acc"] == pytest.approx(1 - unseen / total)


def _bags(seed=0, n_bags=40, per=5):
    """Bags of 2-d instances; a bag is positive when one of its instances comes from the blob at (3, 3)."""
    from zoo.data import Bags
    rng = np.random.default_rng(seed)
    X, ids, labels = [], [], []
    for b in range(n_bags):
        positive = b % 2
        inst = rng.normal(size=(per, 2))
        if positive:
            inst[0] = rng.normal(loc=3.0, scale=0.3, size=2)
        X.append(inst)
        ids += [b] * per
        labels.append(positive)
    return Bags(np.vstack(X), np.array(ids), np.array(labels))


def test_mil_protocol_folds_grid_and_svm_baselines():
    from zoo.data.mil import subset_bags
    from zoo.experiments.mil_protocol import MI_svm_bag_scores, mi_svm_bag_scores, protocol_folds, width_grid
    data = _bags()
    folds = protocol_folds(data.bag_labels, runs=3, n_folds=5)
    assert len(folds) == 3 and not np.array_equal(folds[0], folds[1])
    for f in folds:                                   # stratified: each fold holds both labels equally
        for k in range(5):
            assert np.bincount(data.bag_labels[f == k], minlength=2).tolist() == [4, 4]
    grid = width_grid(data.X)
    X = (data.X - data.X.mean(0)) / data.X.std(0)
    D = np.linalg.norm(X[:, None] - X[None], axis=-1)
    np.fill_diagonal(D, np.inf)
    assert grid[0] == pytest.approx(0.5 * np.median(D.min(1)))         # not cut at the narrow end
    assert np.all(np.diff(grid) > 0) and grid[-1] > np.median(D[np.isfinite(D)])
    train, test = subset_bags(data, np.flatnonzero(folds[0] != 0)), subset_bags(data, np.flatnonzero(folds[0] == 0))
    for fn in (mi_svm_bag_scores, MI_svm_bag_scores):
        scores = fn(train, test)
        assert scores.shape == (test.n_bags,) and np.mean((scores > 0) == test.bag_labels) >= 0.85


def test_results_io_is_a_leaf_that_drops_a_killed_runs_half_line(tmp_path):
    import ast
    import pathlib

    from zoo.leaderboards import results_io
    source = pathlib.Path(results_io.__file__).read_text()
    imported = {a.name.split(".")[0] for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom)
                 and n.module}
    assert imported <= {"__future__", "json", "pathlib", "typing"}          # nothing of zoo, nothing numerical
    path = tmp_path / "deep" / "rows.jsonl"
    assert results_io.read_results(path) == []
    append = results_io.row_appender(path)
    append({"a": 1})
    append({"a": 2})
    with path.open("a") as f:
        f.write('{"a": 3, "b"')                     # killed while writing
    assert results_io.read_results(path) == [{"a": 1}, {"a": 2}]
    results_io.row_appender(path)({"a": 4})        # the half line is cut before the next row
    assert results_io.read_results(path) == [{"a": 1}, {"a": 2}, {"a": 4}]


def test_bag_log_likelihood_and_psis_loo_by_hand():
    from zoo.experiments.mil_protocol import bag_log_likelihood, elpd_loo
    log_neg = np.log(np.array([[0.2, 0.9], [0.4, 1.0]]))          # 2 draws, 2 bags (bag 0 positive)
    ll = bag_log_likelihood(log_neg, np.array([1, 0]))
    np.testing.assert_allclose(ll[:, 0], np.log([0.8, 0.6]))
    np.testing.assert_allclose(ll[:, 1], np.log([0.9, 1.0]))
    assert np.all(np.isfinite(bag_log_likelihood(np.zeros((2, 1)), np.array([1]))))   # Pr(positive) = 0: floored
    # draws that agree exactly: leaving one out changes nothing, elpd = sum of the log likelihoods
    same = np.tile(np.log([[0.7, 0.6, 0.9]]), (50, 1))
    elpd, k = elpd_loo(same)
    assert elpd == pytest.approx(np.log([0.7, 0.6, 0.9]).sum())
    with pytest.raises(ValueError, match="log_lik"):
        elpd_loo(np.array([[np.nan, 0.0], [0.0, 0.0]]))


@pytest.mark.slow          # four compilations of the sampler and scorer: about 30 s on an idle machine
def test_kueck_fold_selection_scores_each_fold_once_and_resumes():
    from zoo.experiments.mil_protocol import kueck_fold_selected_scores, protocol_folds
    data = _bags(n_bags=20, per=3)
    folds = protocol_folds(data.bag_labels, runs=1, n_folds=2)[0]
    seen = []
    scores, records = kueck_fold_selected_scores(data, folds, sweeps=20, refit_sweeps=30, n_widths=2,
                                                 kernels=("gaussian",), max_active=10, on_fold=seen.append)
    assert [r["fold"] for r in records] == [0, 1] and seen == records
    assert np.all((scores >= 0) & (scores <= 1))
    for r in records:
        assert len(r["evidence"]) == 2 and r["chosen"]["grid_position"] in (0, 1)
        assert r["chosen"]["width"] == r["evidence"][r["chosen"]["grid_position"]]["width"]
        best = max(e["score"] for e in r["evidence"])
        assert r["evidence"][r["chosen"]["grid_position"]]["score"] == best     # the training-data score decides
        np.testing.assert_array_equal(np.sort(r["bags"]), np.flatnonzero(folds == r["fold"]))
    again, rest = kueck_fold_selected_scores(data, folds, sweeps=20, refit_sweeps=30, n_widths=2,
                                             kernels=("gaussian",), max_active=10, skip=[0])
    assert [r["fold"] for r in rest] == [1] and np.all(np.isnan(again[folds == 0]))
    np.testing.assert_allclose(again[folds == 1], scores[folds == 1])            # same seeds, same fold
    with pytest.raises(ValueError, match="criterion"):
        kueck_fold_selected_scores(data, folds, criterion="aic")


def test_document_shows_the_finished_folds_of_an_unfinished_run_apart():
    from zoo.leaderboards.document import _mil_table, unfinished_runs
    try:
        from zoo.data.mil import load_mil_benchmark
        labels = np.asarray(load_mil_benchmark("musk1").bag_labels)
    except (FileNotFoundError, OSError):
        pytest.skip("MIL benchmarks not available")
    method, chosen = "Kück constraint (hold-out selected)", {"grid_position": 0, "n_widths": 6}
    rows = [{"data": "musk1", "method": method, "run": 0, "accuracy": 80.0, "n_folds": 10, "chosen": [chosen]}]
    fold = {"data": "musk1", "method": method, "chosen": chosen}
    right = [0.9 if labels[b] else 0.1 for b in (0, 1, 2)]
    folds = [dict(fold, run=0, fold=0, bags=[5], scores=[0.0]),                  # its run finished: not counted
             dict(fold, run=1, fold=0, bags=[0, 1], scores=right[:2]),
             dict(fold, run=1, fold=3, bags=[2], scores=[1 - right[2]]),         # wrong
             dict(fold, run=1, fold=3, bags=[2], scores=[1 - right[2]])]         # the same fold twice: once
    (row,) = unfinished_runs(rows, folds)
    assert (row["run"], row["folds_done"], row["runs"]) == (1, 2, 0)
    assert row["accuracy"][0] == pytest.approx(200 / 3)
    text = "\n".join(_mil_table([row], []))
    assert "UNFINISHED: 2 of 10 folds of run 1" in text and "sd over runs" not in text


def test_svm_search_chooses_on_training_bags_only_and_keeps_the_fixed_setting_on_ties(tmp_path, monkeypatch):
    from zoo.experiments import mil_svm_search as search
    from zoo.experiments.mil_protocol import mi_svm_bag_scores, protocol_folds
    # a flat inner score keeps C = 1, factor 1; then the smaller C among equally near settings
    settings = search.grid()
    assert len(settings) == len(search.C_GRID) * len(search.GAMMA_FACTORS)
    assert settings[search.choose(settings, [0.5] * len(settings))] == (1.0, 1.0)
    accuracies = [0.5] * len(settings)
    accuracies[settings.index((0.1, 1.0))] = accuracies[settings.index((10.0, 1.0))] = 0.7
    assert settings[search.choose(settings, accuracies)] == (0.1, 1.0)
    # the default keywords reproduce the fixed-setting SVM
    data = _bags()
    folds = protocol_folds(data.bag_labels, runs=1, n_folds=5)[0]
    from zoo.data.mil import subset_bags
    train, test = subset_bags(data, np.flatnonzero(folds != 0)), subset_bags(data, np.flatnonzero(folds == 0))
    np.testing.assert_allclose(mi_svm_bag_scores(train, test), mi_svm_bag_scores(train, test, C=1.0,
                                                                                 gamma_factor=1.0))
    # the test bags are never seen by the choice: the scorer records every training set it is given
    seen = []

    def scorer(fit_on, score_on, C, gamma_factor):
        seen.append((set(map(tuple, fit_on.X.round(12))), set(map(tuple, score_on.X.round(12)))))
        return mi_svm_bag_scores(fit_on, score_on, C=C, gamma_factor=gamma_factor)
    small = [(1.0, 1.0), (10.0, 0.25)]
    record = search.searched_fold(scorer, data, folds, 0, small)
    test_rows = set(map(tuple, test.X.round(12)))
    assert len(seen) == 2 * 3 + 1
    assert all(not (fit & test_rows) and not (held & test_rows) for fit, held in seen[:-1])
    assert seen[-1][1] == test_rows and not (seen[-1][0] & test_rows)
    assert record["chosen"] == dict(zip(("C", "gamma_factor"), small[search.choose(
        small, [e["inner_accuracy"] for e in record["evidence"]])]))
    assert record["bags"] == np.flatnonzero(folds == 0).tolist()
    # rows and folds written as they finish; a rerun resumes (nothing recomputed)
    monkeypatch.setattr(search, "load_mil_benchmark", lambda name: data)
    monkeypatch.setattr(search, "grid", lambda: small)
    results = tmp_path / "rows.jsonl"
    run = search.run_search("toy", 1, results, methods=("mi-SVM (C, gamma by inner CV)",), log=lambda _: None)
    (row,) = run.rows
    assert row["n_folds"] == 10 and len(row["chosen"]) == 10 and 0 <= row["accuracy"] <= 100
    monkeypatch.setattr(search, "searched_fold", lambda *a, **k: pytest.fail("a finished fold was recomputed"))
    assert search.run_search("toy", 1, results, methods=("mi-SVM (C, gamma by inner CV)",)).rows == [row]
    with pytest.raises(ValueError, match="methods"):
        search.run_search("toy", 1, results, methods=("SVM",))


def test_document_states_the_svm_search_beside_the_fixed_setting_on_the_same_runs():
    from zoo.leaderboards.document import _search_note
    grid = [[c, g] for c in (0.1, 1.0, 10.0, 100.0) for g in (0.25, 1.0, 4.0)]
    fixed = [{"data": "musk1", "method": "mi-SVM", "run": r, "accuracy": a} for r, a in enumerate((80.0, 82.0, 90.0))]
    rows = [{"data": "musk1", "method": "mi-SVM (C, gamma by inner CV)", "run": r, "accuracy": a, "grid": grid,
             "chosen": [{"C": 10.0, "gamma_factor": 0.25}, {"C": 1.0, "gamma_factor": 1.0}]}
            for r, a in ((0, 83.0), (1, 85.0))]
    note = _search_note(rows, fixed)
    assert "C in {0.1, 1, 10, 100} x gamma in {0.25, 1, 4}" in note
    assert "chosen C (0.1: 0, 1: 2, 10: 2, 100: 0)" in note and "over 4 folds" in note
    assert "same 2 run(s): 81.0, difference +3.0" in note           # runs 0 and 1 only, not run 2's 90.0
