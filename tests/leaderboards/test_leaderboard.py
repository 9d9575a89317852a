"""zoo.leaderboard and zoo.leaderboards.baselines: the protocol on a tiny synthetic AnnotatedRegions, hand-checked metrics
and baselines, and no test-fold leakage."""
import numpy as np
import pytest

from zoo.leaderboards import baselines as bl
from zoo.leaderboards import board as lb
from zoo.data import AnnotatedRegions


def synthetic(n_images=24, seed=0):
    """3 words, each a Gaussian blob in 2-D; each image holds 2 words, one region per word plus a copy."""
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0]])
    X, ids, labels, keywords = [], [], [], []
    vocab = ["a", "b", "c"]
    for i in range(n_images):
        words = rng.choice(3, 2, replace=False)
        keywords.append([vocab[w] for w in words])
        for w in (*words, words[0]):
            X.append(centres[w] + 0.3 * rng.standard_normal(2))
            ids.append(i)
            labels.append(w)
    return AnnotatedRegions(np.array(X), np.array(ids), keywords, vocab, region_labels=np.array(labels))


def test_tie_accuracy_by_hand():
    scores = np.array([[1.0, 1.0, 0.0], [0.0, 2.0, 1.0], [0.0, 0.0, 0.0], [5.0, 0.0, 0.0]])
    labels = np.array([0, 2, 1, -1])
    # region 0: tie of 2 -> 1/2; region 1: argmax 1 != 2 -> 0; region 2: three-way tie -> 1/3; region 3 unscored
    assert lb.tie_accuracy(scores, labels) == pytest.approx((0.5 + 0 + 1 / 3) / 3)
    allowed = np.array([[1, 0, 0], [0, 0, 1], [0, 1, 1], [1, 1, 1]], bool)
    assert lb.tie_accuracy(scores, labels, allowed) == pytest.approx((1 + 1 + 0.5) / 3)
    assert lb.tie_accuracy(scores, np.array([-2, 1, 1, -1])) == pytest.approx((0 + 1 + 1 / 3) / 3)


def test_chance_and_word_frequency_by_hand():
    train = AnnotatedRegions(np.zeros((3, 1)), [0, 1, 2], [["a"], ["a", "b"], ["a", "c"]], ["a", "b", "c"])
    test = AnnotatedRegions(np.zeros((2, 1)), [0, 0], [()], ["a", "b", "c"], allow_unannotated=True)
    np.testing.assert_allclose(bl.word_frequency_scores(train, test), [[1, 1 / 3, 1 / 3]] * 2)
    split = lb.Split(train, test, np.array([1, 0]), np.array([[True, True, False]]), np.array([2]))
    metrics = lb.evaluate(lb.Scores(bl.chance_scores(train, test), True), split)
    assert metrics["caption_acc"] == pytest.approx(0.5) and metrics["free_acc"] == pytest.approx(1 / 3)
    assert metrics["log_density"] == pytest.approx(np.log(1 / 3))
    # image annotation: k = min(5, W) = 3 words, all 3 taken; the caption has 2 -> P = 2/3, R = 1
    assert metrics["P@5"] == pytest.approx(2 / 3) and metrics["R@5"] == pytest.approx(1.0)


def test_inherited_labels_and_cooccurrence_by_hand():
    train = AnnotatedRegions(np.array([[0.0], [0.0], [10.0], [10.0]]), [0, 0, 1, 1], [["a", "b"], ["b"]],
                             ["a", "b"])
    rows, words, weights, groups = bl.inherited_labels(train)
    np.testing.assert_array_equal(rows, [0, 0, 1, 1, 2, 3])
    np.testing.assert_array_equal(words, [0, 1, 0, 1, 1, 1])
    np.testing.assert_allclose(weights, [0.5, 0.5, 0.5, 0.5, 1, 1])
    test = AnnotatedRegions(np.array([[0.0], [10.0]]), [0, 0], [()], ["a", "b"], allow_unannotated=True)
    p = bl.cooccurrence_scores(train, test, n_visual_words=1)   # one token: weighted counts a = 1, b = 3
    np.testing.assert_allclose(p, [[(1 + 1e-3) / (4 + 2e-3), (3 + 1e-3) / (4 + 2e-3)]] * 2)


def test_baselines_recover_separable_words():
    data = synthetic()
    split = lb.make_split(data, seed=0)
    for fn in (bl.naive_bayes_scores, bl.logistic_regression_scores, bl.supervised_scores, bl.si_svm_scores):
        scores = fn(split.train, split.blind)
        assert lb.tie_accuracy(scores, split.labels) > 0.9, fn.__name__
    scores = bl.mi_svm_scores(split.train, split.blind)
    # per-word SVMs, each Platt-scaled on its own training values: well above chance (1/2), not perfect
    assert lb.tie_accuracy(scores, split.labels, split.keywords[split.blind.image_ids]) > 0.75
    assert np.all((scores >= 0) & (scores <= 1))


def test_platt_probabilities_recover_a_logistic_link_and_stay_finite_when_separable():
    rng = np.random.default_rng(0)
    f = rng.normal(0, 2, 20000)
    y = (rng.random(f.size) < 1 / (1 + np.exp(-(2.0 * f - 1.0)))).astype(int)
    grid = np.array([-1.0, 0.0, 0.5, 1.0])
    np.testing.assert_allclose(bl.platt_probabilities(f, y, grid), 1 / (1 + np.exp(-(2.0 * grid - 1.0))), atol=0.02)
    # perfectly separated decision values (an SVM's training margins): Platt's smoothed targets keep a, b finite
    f_sep = np.r_[rng.uniform(1, 3, 50), rng.uniform(-3, -1, 200)]
    p = bl.platt_probabilities(f_sep, (f_sep > 0).astype(int), np.array([-5.0, -1.0, 0.0, 1.0, 5.0]))
    assert np.all(np.isfinite(p)) and np.all(np.diff(p) > 0) and 0 < p[0] < 0.05 and 0.95 < p[-1] < 1


def test_split_standardizes_with_training_data_and_hides_test_captions():
    data = synthetic()
    split = lb.make_split(data, seed=3)
    np.testing.assert_allclose(split.train.X.mean(axis=0), 0, atol=1e-12)
    assert all(len(k) == 0 for k in split.blind.keywords) and split.blind.region_labels is None
    assert split.train.n_images + split.keywords.shape[0] == data.n_images
    other = lb.make_split(data, seed=4)
    assert not np.array_equal(split.labels, other.labels) or split.train.X.shape != other.train.X.shape


def test_no_test_fold_leakage():
    """Rewriting the test images' captions and region labels changes nothing a method sees or returns (only the
    scoring), and the training standardization ignores the test features."""
    data = synthetic()
    split = lb.make_split(data, seed=0)
    test = set(split.test_images.tolist())
    keywords = [["a", "b", "c"] if i in test else kw for i, kw in enumerate(data.keywords)]
    labels = np.where(np.isin(data.image_ids, split.test_images), 0, data.region_labels)
    X = np.where(np.isin(data.image_ids, split.test_images)[:, None], data.X * 100.0, data.X)
    changed = lb.make_split(AnnotatedRegions(data.X, data.image_ids, keywords, data.vocabulary,
                                             region_labels=labels), seed=0)
    np.testing.assert_array_equal(changed.train.X, split.train.X)
    assert changed.train.keywords == split.train.keywords and changed.blind.keywords == split.blind.keywords
    assert not np.array_equal(changed.labels, split.labels)
    for name in ("word frequency", "co-occurrence", "naive Bayes", "logistic regression (C selected)",
                 "SI-SVM (C=1, default)", "supervised LR (upper bound)"):
        run = lb.METHODS[name][1]
        a = run(split.train, split.blind, lb.Settings(0, True)).region
        b = run(changed.train, changed.blind, lb.Settings(0, True)).region
        np.testing.assert_array_equal(a, b)
    scaled = lb.make_split(AnnotatedRegions(X, data.image_ids, data.keywords, data.vocabulary,
                                            region_labels=data.region_labels), seed=0)
    np.testing.assert_array_equal(scaled.train.X, split.train.X)    # test features never enter the scaling


def test_whole_leaderboard_on_tiny_data(tmp_path):
    _whole_leaderboard(tmp_path, ["chance", "word frequency", "naive Bayes", "carbonetto03 ML diag",
                                  "supervised LR (upper bound)"])


@pytest.mark.slow
def test_whole_leaderboard_every_method_on_tiny_data(tmp_path):
    _whole_leaderboard(tmp_path, ["chance", "carbonetto03 ML diag", "supervised LR (upper bound)",
                                  *[m for m in lb.METHODS if m not in ("chance", "carbonetto03 ML diag",
                                                                       "supervised LR (upper bound)")]])


def _whole_leaderboard(tmp_path, names):
    data = synthetic(n_images=16)
    rows = lb.leaderboard(data, models=names, splits=2, fast=True, log=lambda *_: None)
    assert len(rows) == 2 * len(names)
    assert not [r["error"] for r in rows if r["error"]]
    summary = lb.summarize(rows)
    by = {r["method"]: r for r in summary}
    assert by["chance"]["caption_acc"][0] == pytest.approx(0.5, abs=0.1)
    assert by["supervised LR (upper bound)"]["free_acc"][0] > 0.9
    assert by["carbonetto03 ML diag"]["caption_acc"][0] > by["chance"]["caption_acc"][0]
    table = lb.markdown_table(summary)
    assert table.count("\n") == len(names) + 1 and "± " in table
    assert lb.plot_leaderboard(summary, tmp_path / "lb.png").exists()


def test_bad_input_names_the_field():
    with pytest.raises(ValueError, match="splits"):
        lb.leaderboard(synthetic(), splits=0)
    with pytest.raises(ValueError, match="models"):
        lb.leaderboard(synthetic(), models=["nope"])
    with pytest.raises(ValueError, match="region_labels"):
        d = synthetic()
        lb.make_split(AnnotatedRegions(d.X, d.image_ids, d.keywords, d.vocabulary), 0)


def test_cli_parses_and_module_is_callable():
    import zoo.leaderboards.board
    from zoo.cli import build_parser
    args = build_parser().parse_args(["leaderboard", "--fast", "--splits", "2", "--model", "chance"])
    assert args.fast and args.splits == 2 and args.model == ["chance"] and args.data == "msrc_v2"
    with pytest.raises(ValueError, match="splits"):
        zoo.leaderboard(synthetic(), splits=-1)


def test_corel5k_split_is_seeded_and_disjoint():
    try:
        train, visual, captions, sizes = lb.corel5k_split(0)
    except FileNotFoundError:
        pytest.skip("Corel5k data not available")
    assert train.words.shape[0] == 4500 and visual.shape[0] == captions.shape[0] == 500
    assert captions.shape[1] == train.words.shape[1] and np.all(train.words.sum(axis=0) > 0)
    assert np.all(sizes >= captions.sum(axis=1))
    other = lb.corel5k_split(1)[1]
    assert not np.array_equal(other, visual)


def test_results_file_keeps_rows_and_a_rerun_resumes(tmp_path):
    data = synthetic(n_images=16)
    path = tmp_path / "rows.jsonl"
    names = ["chance", "naive Bayes"]
    first = lb.leaderboard(data, models=names, splits=2, results=path, log=lambda *_: None)
    assert len(lb.read_results(path)) == 4
    with path.open("a") as f:
        f.write('{"dataset": "user data", "meth')          # a run killed while writing its last row
    calls = []
    again = lb.leaderboard(data, models=names + ["word frequency"], splits=2, results=path, log=calls.append)
    assert len(calls) == 2 and all("word frequency" in c for c in calls)   # only the missing rows ran
    assert [r for r in again if r["method"] != "word frequency"] == first
    assert len(lb.read_results(path)) == 6


def test_raw_feature_rows_undo_the_split_standardization():
    data = synthetic(n_images=16)
    split = lb.make_split(data, seed=0)
    np.testing.assert_allclose(split.train.X * split.scale + split.mean,
                               data.X[np.isin(data.image_ids, split.test_images, invert=True)])
    settings = lb.Settings(0, True, split.mean, split.scale)
    raw = lb.METHODS["carbonetto03 MAP full (raw features)"][1](split.train, split.blind, settings)
    assert raw.region.shape == (split.blind.X.shape[0], 3) and np.allclose(raw.region.sum(axis=1), 1)


def test_precision_recall_at_5_by_hand():
    from zoo.leaderboards.corel5k import precision_recall_at_5
    scores = np.arange(7.0)[None, ::-1].repeat(2, axis=0)              # words 0..4 ranked first
    captions = np.zeros((2, 7), bool)
    captions[0, [0, 1, 6]] = True                                       # 2 of 3 in the top 5
    captions[1, [5]] = True                                             # none in the top 5, one unseen word
    p, r = precision_recall_at_5(scores, captions, np.array([3, 2]))
    assert p == pytest.approx((2 / 5 + 0) / 2) and r == pytest.approx((2 / 3 + 0) / 2)


def _row(dataset, method, split, value, family="model", metric="caption_acc"):
    row = {"dataset": dataset, "method": method, "family": family, "split": split, "error": "",
           **{m: float("nan") for m in lb.METRICS}}
    row[metric] = value
    return row


def test_before_after_is_paired_over_common_splits():
    from zoo.leaderboards.report import before_after, before_after_markdown
    rows = [_row("d", "MoM-HDP (T=20, default)", 0, 0.5), _row("d", "MoM-HDP (T=20, default)", 1, 0.7),
            _row("d", "MoM-HDP (T by ELBO)", 1, 0.8), _row("d", "MoM-HDP (T by ELBO)", 2, 0.1),
            _row("d", "co-occurrence", 0, 0.6, "baseline"), _row("d", "co-occurrence", 1, 0.6, "baseline"),
            _row("corel5k", "naive Bayes (one-vs-all)", 0, 0.2, "baseline", "P@5"),
            _row("corel5k", "MoM-HDP (T=20, default)", 0, 0.25, metric="P@5")]
    (pair,) = before_after(rows)                      # only split 1 is common to the MSRC pair; Corel has no pair
    assert pair["splits"] == 1 and pair["before"] == pytest.approx(0.7) and pair["after"] == pytest.approx(0.8)
    assert pair["diff"] == pytest.approx((0.1, 0.0)) and "+10.0" in before_after_markdown(rows)


def test_best_by_elbo_keeps_the_highest_training_elbo(monkeypatch):
    import types

    import zoo
    from zoo.leaderboards import methods as lm
    elbos = {5: -10.0, 10: -3.0, 20: -7.0}
    fits = []

    def fake_fit(spec, data, **kwargs):
        fits.append(spec.options["n_topics"])
        return types.SimpleNamespace(state=types.SimpleNamespace(final_elbo=np.array([elbos[fits[-1]], -99.0])),
                                     k=fits[-1])
    monkeypatch.setattr(zoo, "fit", fake_fit)
    lm._FITS.clear()
    counts = types.SimpleNamespace(words=np.eye(3, dtype=np.int64), visual_words=np.ones((3, 2), np.int64))
    grid = [dict(n_topics=k) for k in (5, 10, 20)]
    fit, options, trace = lm.best_by_elbo("yakhnenko.mom_lda", grid, counts, 0, 10)
    assert options == dict(n_topics=10) and fit.k == 10 and [e for _, e in trace] == [-10.0, -3.0, -7.0]
    lm.best_by_elbo("yakhnenko.mom_lda", grid[:2], counts, 0, 10)
    assert fits == [5, 10, 20]                       # the same split's fits are reused, not refitted
    lm._FITS.clear()


@pytest.mark.extended
def test_inner_p5_selection_fits_without_the_words_its_inner_part_lacks():
    """A word seen only in held-out training images is not an all-zero column of the inner fit (which would be
    refused) and the refit on all training images keeps every word."""
    from zoo.data import MultimodalCounts
    from zoo.leaderboards.corel5k import select_by_inner_p5
    rng = np.random.default_rng(0)
    n, seed = 40, 0
    words = rng.poisson(1.0, (n, 6))
    words[:, 5] = 0
    held = np.sort(np.random.default_rng(seed + 1000).permutation(n)[: n // 5])
    words[held[0], 5] = 2                       # the last word only in one held-out image
    words[words.sum(axis=1) == 0, 0] = 1
    visual = rng.poisson(2.0, (n, 8)) + 1
    train = MultimodalCounts(words, visual, [f"w{i}" for i in range(6)], None)
    grid = [dict(truncation=3, alpha_pi=0.1), dict(truncation=3, alpha_pi=1.0)]
    fit, options, trace = select_by_inner_p5("yakhnenko.mom_hdp", grid, train, seed, max_iter=10)
    assert options in grid and len(trace) == 2 and all(0.0 <= p5 <= 1.0 for _, p5 in trace)
    assert fit.predict(MultimodalCounts(np.zeros((2, 6), np.int64), visual[:2])).caption_word_proba.shape == (2, 6)
