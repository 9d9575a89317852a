"""Corel5k image annotation for the leaderboard (``zoo.leaderboard("corel5k")``): no region features or region
truth there, so P@5 / R@5 only. Seeded 4500 / 500 splits of all 5000 images (Mulan's 499 blob tokens); the
methods see the test images' blob tokens only.

Choices on training data only: MoM's K / T and concentrations by the training ELBO (``best_by_elbo``) or by
inner validation (``select_by_inner_p5``: 20 % of the TRAINING images held out, P@5 of their captions).
"""
from __future__ import annotations


import numpy as np

from zoo.leaderboards.methods import (HDP_DEFAULT, LDA_DEFAULT, METRICS, MOM_GRIDS, best_by_elbo, fit_topics,
                                      timed_row)

__all__ = ["corel5k_split", "corel5k_leaderboard", "corel5k_methods", "precision_recall_at_5", "select_by_inner_p5",
           "INNER_GRIDS"]

#: option grids searched by inner validation P@5 (``select_by_inner_p5``)
INNER_GRIDS = {
    "K, alpha": ("yakhnenko.mom_lda", [dict(n_topics=k, alpha=a) for k in (20, 50) for a in (0.01, 1.0)]),
    "T, alpha_pi": ("yakhnenko.mom_hdp", [dict(truncation=t, alpha_pi=a) for t in (20, 50) for a in (0.1, 1.0)]),
}


def corel5k_split(seed: int, n_test: int = 500):
    """A seeded 4500 / 500 split of all 5000 Corel5k images: (train MultimodalCounts with the words and blob
    tokens that occur in training, test blob tokens (I_test, V), test captions (I_test, W) bool over those words,
    full caption sizes (I_test,))."""
    import zoo
    from zoo.data import MultimodalCounts
    parts = [zoo.load_dataset("corel5k", split=s, drop_unseen_words=False) for s in ("train", "test")]
    words = np.concatenate([p.words for p in parts])
    visual = np.concatenate([p.visual_words for p in parts])
    order = np.random.default_rng(seed).permutation(words.shape[0])
    test, train = np.sort(order[:n_test]), np.sort(order[n_test:])
    keep_w = words[train].sum(axis=0) > 0
    keep_v = visual[train].sum(axis=0) > 0
    names = [w for w, k in zip(parts[0].word_vocabulary, keep_w) if k]
    fit_data = MultimodalCounts(words[train][:, keep_w], visual[train][:, keep_v], names, None)
    return fit_data, visual[test][:, keep_v], words[test][:, keep_w] > 0, (words[test] > 0).sum(axis=1)


def precision_recall_at_5(scores: np.ndarray, captions: np.ndarray, sizes: np.ndarray) -> tuple[float, float]:
    """Mean P@5 and R@5 over images with a caption: scores (I, W), captions (I, W) bool, sizes (I,) full caption
    lengths (words unseen in training included, so they count against recall)."""
    top = np.argsort(-scores, axis=1, kind="stable")[:, :5]
    hits = np.take_along_axis(captions, top, axis=1).sum(axis=1)
    ok = sizes > 0
    return float((hits / 5)[ok].mean()), float((hits / np.maximum(sizes, 1))[ok].mean())


def _predict(fit, n_words: int, visual: np.ndarray) -> np.ndarray:
    from zoo.data import MultimodalCounts
    test = MultimodalCounts(np.zeros((visual.shape[0], n_words), np.int64), visual)
    return fit.predict(test).caption_word_proba


def _fit(model_id, options, train, seed, max_iter):
    return fit_topics(model_id, options, train, seed, max_iter)


def select_by_inner_p5(model_id: str, grid: list[dict], train, seed: int, max_iter: int, log=None):
    """Hold out 20 % of the TRAINING images (``default_rng(seed + 1000)``), fit each option dict of ``grid`` on
    the rest, score P@5 on the held-out captions; refit the best on all training images. Returns (fit, options,
    [(options, inner P@5)])."""
    from zoo.data import MultimodalCounts
    n = train.words.shape[0]
    order = np.random.default_rng(seed + 1000).permutation(n)
    held, kept = np.sort(order[: n // 5]), np.sort(order[n // 5:])
    # the inner fit sees only the words and blob tokens that occur in its images (a model cannot be fitted to an
    # all-zero column); held-out caption words it never saw count against recall only, as in corel5k_split
    keep_w = train.words[kept].sum(axis=0) > 0
    keep_v = train.visual_words[kept].sum(axis=0) > 0
    inner = MultimodalCounts(train.words[kept][:, keep_w], train.visual_words[kept][:, keep_v],
                             [w for w, k in zip(train.word_vocabulary, keep_w) if k], None)
    captions = train.words[held][:, keep_w] > 0
    sizes = (train.words[held] > 0).sum(axis=1)
    trace = []
    for options in grid:
        fit = _fit(model_id, options, inner, seed, max_iter)
        p5, _ = precision_recall_at_5(_predict(fit, int(keep_w.sum()), train.visual_words[held][:, keep_v]),
                                      captions, sizes)
        trace.append((options, p5))
        if log is not None:
            log(f"  {model_id} {options}: inner P@5 {p5:.3f}")
    options = max(trace, key=lambda t: t[1])[0]
    return _fit(model_id, options, train, seed, max_iter), options, trace


def corel5k_methods(fast: bool) -> dict:
    """name -> (family, run(train, test visual words, seed) -> scores (I_test, W))."""
    from zoo.papers import yakhnenko as yh
    max_iter = 100 if fast else 300

    def mom(model_id, options=None, grid=None, inner=None):
        def run(train, visual, seed):
            if grid is not None:
                fit = best_by_elbo(*MOM_GRIDS[grid], train, seed, max_iter)[0]
            elif inner is not None:
                fit = select_by_inner_p5(*INNER_GRIDS[inner], train, seed, max_iter)[0]
            else:
                fit = _fit(model_id, options, train, seed, max_iter)
            return _predict(fit, train.words.shape[1], visual)
        return run
    methods = {
        "word frequency": ("baseline", lambda tr, v, s: np.tile(tr.words.mean(axis=0), (v.shape[0], 1))),
        "naive Bayes (one-vs-all)": ("baseline", lambda tr, v, s: yh.one_vs_all_baseline(tr, v, kind="nb", seed=s)),
        "MoM-LDA (K=20, default)": ("model", mom("yakhnenko.mom_lda", LDA_DEFAULT)),
        "MoM-HDP (T=20, default)": ("model", mom("yakhnenko.mom_hdp", HDP_DEFAULT)),
    }
    if not fast:
        methods.update({
            "MoM-HDP (T by ELBO)": ("model", mom("yakhnenko.mom_hdp", grid="T")),
            "MoM-HDP (T, alpha_pi by inner P@5)": ("model", mom("yakhnenko.mom_hdp", inner="T, alpha_pi")),
            "MoM-LDA (K by ELBO)": ("model", mom("yakhnenko.mom_lda", grid="K")),
            "MoM-LDA (K, alpha by inner P@5)": ("model", mom("yakhnenko.mom_lda", inner="K, alpha")),
            "logistic regression (one-vs-all)": ("baseline",
                                                 lambda tr, v, s: yh.one_vs_all_baseline(tr, v, kind="lr", seed=s)),
        })
    return methods


def corel5k_leaderboard(splits: int = 5, fast: bool = False, log=print, models=None, done=(), sink=None) -> list:
    """Rows as ``zoo.leaderboard``'s (dataset "corel5k", P@5 / R@5 and fit_s, the other metrics nan); models:
    names of ``corel5k_methods`` (None: all); done: (method, split) pairs to skip; sink(row) per finished row."""
    table = corel5k_methods(fast)
    names = list(table) if models is None else list(models)
    unknown = [m for m in names if m not in table]
    if unknown:
        raise ValueError(f"models: unknown Corel5k method {unknown[0]!r}; choose from {', '.join(table)}")
    rows = []
    for seed in range(int(splits)):
        todo = [m for m in names if (m, seed) not in set(done)]
        if not todo:
            continue
        train, visual, captions, sizes = corel5k_split(seed)
        for name in todo:
            family, run = table[name]
            row = {"dataset": "corel5k", "method": name, "split": seed, "error": "", "family": family,
                   **{m: float("nan") for m in METRICS}}
            rows.append(timed_row(row, lambda: dict(zip(("P@5", "R@5"), precision_recall_at_5(
                run(train, visual, seed), captions, sizes))), ("P@5", "R@5")))
            if sink is not None:
                sink(row)
            log(f"leaderboard corel5k split {seed} {name}: P@5 {row['P@5']:.3f} ({row['fit_s']:.1f} s)"
                f"{' ' + row['error'] if row['error'] else ''}")
    return rows
