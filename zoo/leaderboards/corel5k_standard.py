"""Corel5k by the literature's protocol (Duygulu et al. 2002; Lavrenko et al. 2003; Feng et al. 2004; Makadia
et al. 2008; Guillaumin et al. 2009): the FIXED split (Mulan's ``Corel5k-train``, 4,500 images, and
``Corel5k-test``, 500 images), each test image annotated with its 5 best-scored words, and the mean per-word
precision and recall over the words of the test captions, F1 from those two means, and N+ (words recalled at
least once); ``zoo.metrics.per_word_annotation``.

Every method sees the training images' captions and blob tokens and the test images' blob tokens only; every
setting is fixed before the run (the defaults of ``zoo.leaderboards.corel5k``; nothing is tuned on the test
images). Test words that never occur in training (none can be predicted) count as misses.

Methods: word frequency (every image gets the 5 most frequent words), naive Bayes and logistic regression one
per word on the blob bag (Yakhnenko & Honavar's baselines), the discrete translation model of Duygulu et al.
(2002) (``translation_em``), MoM-LDA and MoM-HDP (``zoo.papers.yakhnenko``).
"""
from __future__ import annotations

import time
from typing import Callable, NamedTuple

import numpy as np

from zoo.leaderboards.results_io import read_results, row_appender
from zoo.metrics import per_word_annotation

__all__ = ["StandardSplit", "standard_split", "translation_em", "translation_scores", "STANDARD_METHODS",
           "run_standard", "PUBLISHED"]


class StandardSplit(NamedTuple):
    """train: MultimodalCounts of the 4,500 training images (words that occur in training only, all 499 blob
    tokens); test_blobs (500, 499) 0/1; test_captions (500, W_all) bool over the FULL vocabulary; train_words
    (W_train,) the full-vocabulary index of each training word; vocabulary (W_all,) every word."""
    train: object
    test_blobs: np.ndarray
    test_captions: np.ndarray
    train_words: np.ndarray
    vocabulary: list


def standard_split() -> StandardSplit:
    """Mulan's fixed Corel5k-train / Corel5k-test split (``zoo.load_dataset("corel5k", ...)``)."""
    import zoo
    from zoo.data import MultimodalCounts
    train_all = zoo.load_dataset("corel5k", split="train", drop_unseen_words=False)
    test = zoo.load_dataset("corel5k", split="test", drop_unseen_words=False)
    seen = np.flatnonzero(train_all.words.sum(axis=0) > 0)
    train = MultimodalCounts(train_all.words[:, seen], train_all.visual_words,
                             [train_all.word_vocabulary[w] for w in seen], train_all.visual_vocabulary)
    return StandardSplit(train, test.visual_words, test.words > 0, seen, list(train_all.word_vocabulary))


def translation_em(blobs: np.ndarray, words: np.ndarray, max_iter: int = 200, tol: float = 1e-7):
    """The discrete translation model of Duygulu et al. (2002, Sec. 3; Brown et al.'s Model 1): each caption word
    of image n is drawn from t(w | b) of one of the image's blob tokens b, chosen uniformly; EM on t.

    blobs (I, V) 0/1, words (I, W) 0/1. E-step: the posterior that word w of image n came from blob b is
    t(w | b) / sum_{b' in n} t(w | b'); M-step: t(w | b) proportional to the expected counts. The log likelihood
    sum_n sum_{w in n} log (1/|B_n| sum_{b in n} t(w | b)) never decreases (EM). Starts from the uniform t, where
    the first E-step gives the co-occurrence counts (Mori et al. 1999). Images without blobs or words are
    skipped. Returns (t (V, W), log likelihoods per iteration)."""
    B = np.asarray(blobs, dtype=np.float64)
    Wd = np.asarray(words, dtype=np.float64) > 0
    if B.ndim != 2 or Wd.ndim != 2 or B.shape[0] != Wd.shape[0]:
        raise ValueError(f"blobs, words: expected (I, V) and (I, W) with the same I, got {B.shape}, {Wd.shape}")
    keep = (B.sum(axis=1) > 0) & Wd.any(axis=1)
    B, Wd = (B[keep] > 0).astype(np.float64), Wd[keep].astype(np.float64)
    if B.shape[0] == 0:
        raise ValueError("blobs, words: no image has both blob tokens and caption words")
    sizes = B.sum(axis=1, keepdims=True)
    t = np.full((B.shape[1], Wd.shape[1]), 1.0 / Wd.shape[1])
    trace = []
    for _ in range(int(max_iter)):
        mix = B @ t                                                  # (I, W): sum_{b in n} t(w | b)
        trace.append(float((Wd * np.log(np.where(Wd > 0, mix / sizes, 1.0))).sum()))
        counts = t * (B.T @ (Wd / np.where(Wd > 0, mix, 1.0)))      # expected (blob, word) alignments
        totals = counts.sum(axis=1, keepdims=True)
        # a blob token that never occurs with a word keeps its uniform row (it has no evidence)
        t = np.where(totals > 0, counts / np.where(totals > 0, totals, 1.0), 1.0 / Wd.shape[1])
        if len(trace) > 1 and abs(trace[-1] - trace[-2]) <= tol * abs(trace[-2]):
            break
    return t, np.array(trace)


def translation_scores(train, test_blobs: np.ndarray, max_iter: int = 200) -> np.ndarray:
    """p(w | test image) = mean over its blob tokens of t(w | b) (Duygulu et al. 2002's annotation rule)."""
    t, _ = translation_em(train.visual_words, train.words, max_iter=max_iter)
    B = (np.asarray(test_blobs) > 0).astype(np.float64)
    return (B @ t) / np.maximum(B.sum(axis=1, keepdims=True), 1.0)


def _mom(model_id: str, options: dict) -> Callable:
    def run(train, test_blobs, seed):
        from zoo.leaderboards.corel5k import _predict
        from zoo.leaderboards.methods import fit_topics
        fit = fit_topics(model_id, options, train, seed, 300)
        return _predict(fit, train.words.shape[1], test_blobs)
    return run


def _methods() -> dict:
    from zoo.leaderboards.methods import HDP_DEFAULT, LDA_DEFAULT
    from zoo.papers import yakhnenko as yh
    return {
        "word frequency": ("baseline", lambda tr, b, s: np.tile(tr.words.mean(axis=0), (b.shape[0], 1))),
        "naive Bayes (one-vs-all)": ("baseline", lambda tr, b, s: yh.one_vs_all_baseline(tr, b, kind="nb", seed=s)),
        "logistic regression (one-vs-all)": ("baseline",
                                             lambda tr, b, s: yh.one_vs_all_baseline(tr, b, kind="lr", seed=s)),
        "translation model (EM)": ("model", lambda tr, b, s: translation_scores(tr, b)),
        "MoM-LDA (K=20)": ("model", _mom("yakhnenko.mom_lda", LDA_DEFAULT)),
        "MoM-HDP (T=20)": ("model", _mom("yakhnenko.mom_hdp", HDP_DEFAULT)),
    }


#: the methods run on the standard split, in order of cost
STANDARD_METHODS = ("word frequency", "naive Bayes (one-vs-all)", "translation model (EM)",
                    "logistic regression (one-vs-all)", "MoM-LDA (K=20)", "MoM-HDP (T=20)")

#: published per-word results on the same split (P, R, N+), each with its source; features differ (see "features").
#: The three rows' numbers were checked against the results table collected at
#: lijiancheng0614.github.io/2015/09/01/2015_09_01_Image_Annotation_Result/ (MBRM 24/25/122, JEC 27/32/139,
#: TagProp 33/42/160, in %).
PUBLISHED = (
    dict(method="MBRM (Feng et al. 2004)", P=0.24, R=0.25, Nplus=122,
         features="regions on a grid, colour and texture (continuous)",
         source="Feng, Manmatha & Lavrenko, CVPR 2004, as compared in Makadia, Pavlovic & Kumar, ECCV 2008"),
    dict(method="JEC (Makadia et al. 2008)", P=0.27, R=0.32, Nplus=139,
         features="global colour and texture histograms",
         source="Makadia, Pavlovic & Kumar, A new baseline for image annotation, ECCV 2008"),
    dict(method="TagProp σML (Guillaumin et al. 2009)", P=0.33, R=0.42, Nplus=160,
         features="15 global and local descriptors (SIFT, GIST, colour)",
         source="Guillaumin, Mensink, Verbeek & Schmid, TagProp, ICCV 2009"),
)


def run_standard(results, methods=STANDARD_METHODS, seed: int = 0, log=print) -> list[dict]:
    """Each method of ``methods`` on the standard split; one row {dataset "corel5k standard", method, family,
    P, R, F1, N+, words, P@5, R@5 (per-image, for comparison with the seeded splits), fit_s, error} appended to
    the JSON-lines file ``results`` as it finishes; methods already there are read back instead of run."""
    from zoo.leaderboards.corel5k import precision_recall_at_5
    done = {row["method"]: row for row in read_results(results)}
    append = row_appender(results)
    table = _methods()
    unknown = [m for m in methods if m not in table]
    if unknown:
        raise ValueError(f"methods: unknown {unknown[0]!r}; choose from {', '.join(table)}")
    split = standard_split()
    sizes = split.test_captions.sum(axis=1)
    rows = []
    for name in methods:
        if name in done:
            rows.append(done[name])
            continue
        family, run = table[name]
        t0 = time.perf_counter()
        train_scores = np.asarray(run(split.train, split.test_blobs, seed), dtype=np.float64)
        scores = np.full(split.test_captions.shape, -np.inf)
        scores[:, split.train_words] = train_scores
        metrics = per_word_annotation(scores, split.test_captions)
        p5, r5 = precision_recall_at_5(train_scores, split.test_captions[:, split.train_words], sizes)
        row = {"dataset": "corel5k standard", "method": name, "family": family, "split": "Mulan train/test",
               **metrics, "P@5": p5, "R@5": r5, "fit_s": time.perf_counter() - t0, "error": ""}
        append(row)
        rows.append(row)
        log(f"corel5k standard {name}: P {row['P']:.3f} R {row['R']:.3f} F1 {row['F1']:.3f} N+ {row['N+']} "
            f"({row['fit_s']:.0f} s)")
    return rows
