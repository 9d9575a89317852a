"""One leaderboard of every region-word model beside the baselines, on the same seeded splits (issue 19).

``zoo.leaderboard(data="msrc_v2", models=None, splits=5, fast=False)`` or ``zoo leaderboard [--fast]``.

Protocol. The images of an ``AnnotatedRegions`` (MSRC-v2 regions of one segmentation and feature set, or any a
user passes) are split at random, ``default_rng(seed)`` for seed = 0..splits-1, half for training and half for
test. Features are standardized with the training regions' mean and standard deviation. The vocabulary is the
words of the training captions; a test region whose true word never occurs in training counts as a miss.
Every method sees the training regions with their captions (the supervised bound also their true labels) and
the test regions WITHOUT captions or labels (``blind``); it returns scores over the vocabulary per test region.

Metrics (mean and standard deviation over splits):
- ``caption_acc``: region annotation accuracy within the caption (argmax over the test image's own keywords);
- ``free_acc``: region recognition without the caption (argmax over the vocabulary);
  both over labelled test regions, ties split evenly (so chance scores its expectation);
- ``P@5`` / ``R@5``: image annotation, the 5 best words of an image (scores = mean of its regions' scores);
- ``log_density``: held-out mean log p(true word | region) for methods with normalized probabilities (nan
  otherwise), over test regions whose word occurs in training;
- ``fit_s``: wall seconds to fit and predict (compilation included).

Hyperparameters chosen on training data only (no method sees a test fold): logistic regression's C and the
supervised bound's C by inner 3-fold CV over training images, SI-SVM's C by inner CV, MoM's number of topics /
truncation by the training ELBO, restarts by objective. Rows "(default)" / "(selected)" give before and after.
"""
from __future__ import annotations

import sys
import time
import types
from typing import Callable, NamedTuple

import numpy as np

from zoo import baselines as bl
from zoo.data.containers import AnnotatedRegions

__all__ = ["Scores", "Split", "make_split", "evaluate", "tie_accuracy", "METHODS", "FAST_METHODS", "leaderboard",
           "summarize", "markdown_table", "table_rows", "plot_leaderboard", "msrc_regions", "corel5k_split",
           "corel5k_leaderboard", "cli"]

METRICS = ("caption_acc", "free_acc", "P@5", "R@5", "log_density", "fit_s")


class Scores(NamedTuple):
    """region (R_test, W) scores over the training vocabulary; probabilistic: rows are p(w | region)."""
    region: np.ndarray
    probabilistic: bool


class Split(NamedTuple):
    """train: standardized, vocabulary = training caption words; blind: test regions without captions or labels;
    labels (R_test,) true word index, -1 unlabelled, -2 a word unseen in training; keywords (I_test, W) 0/1 test
    captions over the vocabulary; caption_sizes (I_test,) full caption lengths (unseen words included);
    test_images (I_test,) the test images' indices in the data set."""
    train: AnnotatedRegions
    blind: AnnotatedRegions
    labels: np.ndarray
    keywords: np.ndarray
    caption_sizes: np.ndarray
    test_images: np.ndarray | None = None


class Settings(NamedTuple):
    seed: int
    fast: bool


def _subset(data: AnnotatedRegions, images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(region mask, new image ids) of the regions of ``images`` (renumbered in the given order)."""
    index = np.full(data.n_images, -1)
    index[images] = np.arange(images.size)
    keep = index[data.image_ids] >= 0
    return keep, index[data.image_ids[keep]]


def make_split(data: AnnotatedRegions, seed: int, test_fraction: float = 0.5) -> Split:
    """The seeded image split of the protocol (see module docstring); only images holding regions are used."""
    if not isinstance(data, AnnotatedRegions):
        raise ValueError(f"data: expected AnnotatedRegions, got {type(data).__name__}")
    if data.region_labels is None:
        raise ValueError("region_labels: the leaderboard scores regions against their true labels")
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction: must lie in (0, 1), got {test_fraction!r}")
    images = np.unique(data.image_ids)
    images = images[[len(data.keywords[i]) > 0 for i in images]]
    if images.size < 4:
        raise ValueError(f"data: need at least 4 annotated images with regions, got {images.size}")
    order = np.random.default_rng(seed).permutation(images)
    n_test = min(max(int(round(test_fraction * images.size)), 1), images.size - 2)
    test_images, train_images = np.sort(order[:n_test]), np.sort(order[n_test:])
    full = data.keyword_matrix()
    words = np.flatnonzero(full[train_images].any(axis=0))
    new_word = np.full(len(data.vocabulary), -2)
    new_word[words] = np.arange(words.size)
    vocab = [data.vocabulary[w] for w in words]
    keep_tr, ids_tr = _subset(data, train_images)
    keep_te, ids_te = _subset(data, test_images)
    mean = data.X[keep_tr].mean(axis=0)
    scale = data.X[keep_tr].std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    labels_tr = data.region_labels[keep_tr]
    train = AnnotatedRegions((data.X[keep_tr] - mean) / scale, ids_tr, [data.keywords[i] for i in train_images],
                             vocab, region_labels=np.where(labels_tr >= 0, new_word[np.maximum(labels_tr, 0)], -1))
    blind = AnnotatedRegions((data.X[keep_te] - mean) / scale, ids_te, [() for _ in test_images], vocab,
                             allow_unannotated=True)
    labels_te = data.region_labels[keep_te]
    labels = np.where(labels_te >= 0, new_word[np.maximum(labels_te, 0)], -1)
    return Split(train, blind, labels, full[test_images][:, words].astype(bool), full[test_images].sum(axis=1),
                 test_images)


def tie_accuracy(scores: np.ndarray, labels: np.ndarray, allowed: np.ndarray | None = None) -> float:
    """Share of regions with labels != -1 whose label is the argmax of ``scores`` (R, W) over ``allowed`` (R, W)
    words; a tie among k words counts 1/k; label -2 (unseen word) is always a miss; nan without such regions."""
    scores = np.asarray(scores, dtype=np.float64)
    allowed = np.ones(scores.shape, bool) if allowed is None else np.asarray(allowed, bool)
    masked = np.where(allowed, scores, -np.inf)
    top = allowed & (masked == masked.max(axis=1, keepdims=True))
    scored = labels != -1
    if not scored.any():
        return float("nan")
    rows = np.flatnonzero(scored)
    hit = np.where(labels[rows] >= 0, top[rows, np.maximum(labels[rows], 0)], False)
    credit = hit / np.maximum(top[rows].sum(axis=1), 1)
    return float(credit.mean())


def evaluate(scores: Scores, split: Split) -> dict[str, float]:
    """The metrics of the module docstring (but fit_s) of ``scores`` on ``split``."""
    region = np.asarray(scores.region, dtype=np.float64)
    ids = split.blind.image_ids
    out = {"caption_acc": tie_accuracy(region, split.labels, split.keywords[ids]),
           "free_acc": tie_accuracy(region, split.labels)}
    finite = np.where(np.isfinite(region), region, np.nanmin(np.where(np.isfinite(region), region, np.inf)) - 1)
    image = np.zeros((split.keywords.shape[0], region.shape[1]))
    np.add.at(image, ids, finite)
    image /= np.maximum(np.bincount(ids, minlength=image.shape[0]), 1)[:, None]
    k = min(5, region.shape[1])
    top = np.argsort(-image, axis=1, kind="stable")[:, :k]
    hits = np.take_along_axis(split.keywords, top, axis=1).sum(axis=1)
    captioned = split.caption_sizes > 0
    out["P@5"] = float((hits / k)[captioned].mean())
    out["R@5"] = float((hits / np.maximum(split.caption_sizes, 1))[captioned].mean())
    seen = split.labels >= 0
    if scores.probabilistic and seen.any():
        p = region[np.flatnonzero(seen), split.labels[seen]]
        out["log_density"] = float(np.log(np.clip(p, 1e-300, None)).mean())
    else:
        out["log_density"] = float("nan")
    return out


# ------------------------------------------------------------------------------------------------- methods
def _carbonetto(method: str, covariance: str) -> Callable:
    def run(train, blind, s: Settings) -> Scores:
        import zoo
        alpha = max(13.0, train.X.shape[1] + 2.0)  # Carbonetto et al. 2003, Sec. 5.3 (alpha = 13)
        spec = zoo.model("carbonetto03.translation", covariance=covariance, a=-1.0, b=1e-5, alpha=alpha)
        fit = zoo.fit(spec, train, method=method, seed=s.seed, num_chains=2 if s.fast else 5, progress_bar=False)
        return Scores(fit.predict(blind).word_proba, True)  # restarts: the best objective is kept
    return run


def _gustafson(variant: str) -> Callable:
    def run(train, blind, s: Settings) -> Scores:
        import zoo
        from zoo.experiments.gustafson07 import subset_images
        sizes = np.bincount(train.image_ids, minlength=train.n_images)
        ok = [i for i in range(train.n_images) if 0 < len(train.keywords[i]) <= sizes[i]]  # coverage possible
        n = 100 if s.fast else 500
        fit = zoo.fit(zoo.model(f"gustafson07.{variant}"), subset_images(train, ok), method="collapsed_gibbs",
                      seed=s.seed, num_chains=1, num_warmup=n, num_samples=n, progress_bar=False)
        pred = fit.predict(blind)
        column = {c: j for j, c in enumerate(pred.concepts)}
        region = np.stack([pred.label_proba[:, column[w]] for w in train.vocabulary], axis=1)
        return Scores(region, True)  # the garbage concept's mass counts as a miss
    return run


def _mom(model_id: str, key: str, k: int | None) -> Callable:
    """MoM-LDA / MoM-HDP on blob-token visual words; k=None: K from (5, 10, 20, 40) by the best training ELBO."""
    def run(train, blind, s: Settings) -> Scores:
        import zoo
        from zoo.data.visual_words import counts_from_regions
        n_vw = max(2, min(64, train.X.shape[0] // 4))
        counts = counts_from_regions(train, n_vw, s.seed, train=train)
        used = counts.visual_words.sum(axis=0) > 0
        test = counts_from_regions(blind, n_vw, s.seed, train=train)
        counts, test = (type(c)(c.words, c.visual_words[:, used], c.word_vocabulary, None,
                                region_visual_words=c.region_visual_words[:, used],
                                region_image_ids=c.region_image_ids) for c in (counts, test))
        best = None
        for kk in ((k,) if k is not None else ((5, 10, 20) if s.fast else (5, 10, 20, 40))):
            fit = zoo.fit(zoo.model(model_id, **{key: kk}), counts, seed=s.seed, num_chains=2,
                          max_iter=100 if s.fast else 300, tol=1e-5, progress_bar=False)
            elbo = float(np.max(fit.state.final_elbo))
            if best is None or elbo > best[0]:
                best = (elbo, fit)
        return Scores(best[1].predict(test).word_proba, True)
    return run


def _kueck(variant: str) -> Callable:
    """One-vs-rest per word, bag = image: constraint (bag label = word in caption) or hybrid (plus the guessed
    share of positives 1/|caption| in a captioned bag, 0 otherwise); region score = posterior Pr(word)."""
    def run(train, blind, s: Settings) -> Scores:
        import zoo
        from zoo.data import Bags
        keywords = train.keyword_matrix()
        sizes = keywords.sum(axis=1)
        out = np.zeros((blind.X.shape[0], keywords.shape[1]))
        n = 100 if s.fast else 1000
        test_bags = Bags(blind.X, blind.image_ids)
        for w in range(keywords.shape[1]):
            y = keywords[:, w]
            if y.all() or not y.any():
                out[:, w] = float(y.mean())
                continue
            extra = dict(fractions=y / np.maximum(sizes, 1)) if variant == "hybrid" else {}
            bags = Bags(train.X, train.image_ids, bag_labels=y, **extra)
            fit = zoo.fit(zoo.model(f"kueck04.{variant}", max_active=50), bags, seed=s.seed, num_chains=1,
                          num_warmup=n, num_samples=n, progress_bar=False)
            out[:, w] = fit.predict(test_bags).instance_proba
        return Scores(out, False)  # one-vs-rest probabilities do not sum to one over words
    return run


def _baseline(fn, probabilistic: bool, **options) -> Callable:
    def run(train, blind, s: Settings) -> Scores:
        extra = {"seed": s.seed} if "seed" in fn.__code__.co_varnames else {}
        return Scores(fn(train, blind, **options, **extra), probabilistic)
    return run


METHODS: dict[str, tuple[str, Callable]] = {
    "chance": ("baseline", _baseline(bl.chance_scores, True)),
    "word frequency": ("baseline", _baseline(bl.word_frequency_scores, False)),
    "co-occurrence": ("baseline", _baseline(bl.cooccurrence_scores, True)),
    "naive Bayes": ("baseline", _baseline(bl.naive_bayes_scores, True)),
    "logistic regression (C=1, default)": ("baseline", _baseline(bl.logistic_regression_scores, True, C=1.0)),
    "logistic regression (C selected)": ("baseline", _baseline(bl.logistic_regression_scores, True, C="cv")),
    "SI-SVM (C=1, default)": ("baseline", _baseline(bl.si_svm_scores, False, C=1.0)),
    "SI-SVM (C selected)": ("baseline", _baseline(bl.si_svm_scores, False, C="cv")),
    "mi-SVM": ("baseline", _baseline(bl.mi_svm_scores, False)),
    "carbonetto03 ML diag": ("model", _carbonetto("ml_em", "diag")),
    "carbonetto03 ML full": ("model", _carbonetto("ml_em", "full")),
    "carbonetto03 MAP diag": ("model", _carbonetto("map_em", "diag")),
    "carbonetto03 MAP full": ("model", _carbonetto("map_em", "full")),
    "gustafson07 FULL": ("model", _gustafson("full")),
    "gustafson07 FS": ("model", _gustafson("fs")),
    "gustafson07 CVFS": ("model", _gustafson("cvfs")),
    "MoM-LDA (K=20, default)": ("model", _mom("yakhnenko.mom_lda", "n_topics", 20)),
    "MoM-LDA (K by ELBO)": ("model", _mom("yakhnenko.mom_lda", "n_topics", None)),
    "MoM-HDP (T=20, default)": ("model", _mom("yakhnenko.mom_hdp", "truncation", 20)),
    "MoM-HDP (T by ELBO)": ("model", _mom("yakhnenko.mom_hdp", "truncation", None)),
    "kueck04 constraint": ("model", _kueck("constraint")),
    "kueck04 hybrid": ("model", _kueck("hybrid")),
    "supervised LR (upper bound)": ("bound", _baseline(bl.supervised_scores, True)),
}
FAST_METHODS = tuple(m for m in METHODS if not m.startswith(("kueck04", "gustafson07", "mi-SVM")))


# --------------------------------------------------------------------------------------- Corel5k (images)
def corel5k_split(seed: int, n_test: int = 500):
    """A seeded 4500 / 500 split of all 5000 Corel5k images (Mulan's blob tokens): (train MultimodalCounts with the
    words and blob tokens that occur in training, test blob tokens (I_test, V), test captions (I_test, W) bool over
    those words, full caption sizes (I_test,))."""
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


def _corel_methods(fast: bool) -> dict:
    from zoo.papers import yakhnenko as yh

    def mom(model_id, key, k):
        def run(train, visual, seed):
            import zoo
            from zoo.data import MultimodalCounts
            best = None
            for kk in ((k,) if k else (5, 10, 20, 40)):
                fit = zoo.fit(zoo.model(model_id, **{key: kk}), train, seed=seed, num_chains=2,
                              max_iter=100 if fast else 300, tol=1e-5, progress_bar=False)
                elbo = float(np.max(fit.state.final_elbo))
                best = (elbo, fit) if best is None or elbo > best[0] else best
            test = MultimodalCounts(np.zeros((visual.shape[0], train.words.shape[1]), np.int64), visual)
            return best[1].predict(test).caption_word_proba
        return run
    methods = {"word frequency": lambda tr, v, s: np.tile(tr.words.mean(axis=0), (v.shape[0], 1)),
               "naive Bayes (one-vs-all)": lambda tr, v, s: yh.one_vs_all_baseline(tr, v, kind="nb", seed=s),
               "MoM-LDA (K=20, default)": mom("yakhnenko.mom_lda", "n_topics", 20),
               "MoM-HDP (T=20, default)": mom("yakhnenko.mom_hdp", "truncation", 20)}
    if not fast:
        methods["logistic regression (one-vs-all)"] = lambda tr, v, s: yh.one_vs_all_baseline(tr, v, kind="lr",
                                                                                                seed=s)
        methods["MoM-LDA (K by ELBO)"] = mom("yakhnenko.mom_lda", "n_topics", None)
        methods["MoM-HDP (T by ELBO)"] = mom("yakhnenko.mom_hdp", "truncation", None)
    return methods


def corel5k_leaderboard(splits: int = 5, fast: bool = False, log=print) -> list[dict]:
    """Image annotation on Corel5k (no region features or region truth there: P@5 / R@5 only), rows as
    ``leaderboard``'s; the methods see only the test images' blob tokens."""
    rows = []
    for seed in range(int(splits)):
        train, visual, captions, sizes = corel5k_split(seed)
        for name, run in _corel_methods(fast).items():
            row = {"dataset": "corel5k", "method": name, "split": seed, "error": "",
                   "family": "model" if name.startswith("MoM") else "baseline",
                   **{m: float("nan") for m in METRICS}}
            t0 = time.perf_counter()
            try:
                scores = run(train, visual, seed)
                top = np.argsort(-scores, axis=1, kind="stable")[:, :5]
                hits = np.take_along_axis(captions, top, axis=1).sum(axis=1)
                row.update({"P@5": float((hits / 5).mean()), "R@5": float((hits / np.maximum(sizes, 1)).mean())})
            except Exception as err:  # reported in the table
                row["error"] = f"{type(err).__name__}: {err}"[:200]
            row["fit_s"] = time.perf_counter() - t0
            rows.append(row)
            log(f"leaderboard corel5k split {seed} {name}: P@5 {row['P@5']:.3f} ({row['fit_s']:.1f} s)")
    return rows


def msrc_regions(segmentation: str = "ncut", features: str = "carbonetto03", n_images: int | None = None,
                 seed: int = 0) -> AnnotatedRegions:
    """All MSRC-v2 regions of one segmentation / feature set, raw features (the leaderboard standardizes per
    split); ``n_images``: a seeded random subset of images (None = all 591)."""
    import zoo
    data = zoo.load_dataset("msrc_v2", split="all", segmentation=segmentation, features=features,
                            standardize=False, progress=False)
    if n_images is None or n_images >= data.n_images:
        return data
    images = np.sort(np.random.default_rng(seed).choice(data.n_images, n_images, replace=False))
    keep, ids = _subset(data, images)
    return AnnotatedRegions(data.X[keep], ids, [data.keywords[i] for i in images], data.vocabulary,
                            region_labels=data.region_labels[keep])


def leaderboard(data="msrc_v2", models=None, splits: int = 5, fast: bool = False, *, test_fraction: float = 0.5,
                log=print, **data_options) -> list[dict]:
    """Rows {dataset, method, family, split, <metrics>} for every method x split (a failing method keeps its rows,
    with nan metrics and the error in ``error``). data: an ``AnnotatedRegions``, "msrc_v2" (``data_options``
    go to ``msrc_regions``) or "corel5k" (``corel5k_leaderboard``); models: names of ``METHODS`` (None: all, or ``FAST_METHODS`` when ``fast``)."""
    if isinstance(splits, bool) or not isinstance(splits, (int, np.integer)) or splits < 1:
        raise ValueError(f"splits: expected a positive int, got {splits!r}")
    names = list(models) if models is not None else list(FAST_METHODS if fast else METHODS)
    unknown = [m for m in names if m not in METHODS]
    if unknown:
        raise ValueError(f"models: unknown method {unknown[0]!r}; choose from {', '.join(METHODS)}")
    if isinstance(data, str):
        if data == "corel5k":
            if models is not None:
                raise ValueError("models: Corel5k runs its own image-level methods (word frequency, NB, LR, MoM)")
            return corel5k_leaderboard(splits, fast, log)
        if data != "msrc_v2":
            raise ValueError(f"data: expected 'msrc_v2', 'corel5k' or an AnnotatedRegions, got {data!r}")
        label = "msrc_v2 " + " ".join(str(v) for _, v in sorted(data_options.items()) if v is not None)
        data = msrc_regions(**data_options)
    else:
        label = "user data"
    rows = []
    for seed in range(int(splits)):
        split = make_split(data, seed, test_fraction)
        for name in names:
            family, run = METHODS[name]
            row = {"dataset": label, "method": name, "family": family, "split": seed, "error": ""}
            t0 = time.perf_counter()
            try:
                row.update(evaluate(run(split.train, split.blind, Settings(seed, fast)), split))
            except Exception as err:  # reported in the table, never silently dropped
                row.update({m: float("nan") for m in METRICS[:-1]}, error=f"{type(err).__name__}: {err}"[:200])
            row["fit_s"] = time.perf_counter() - t0
            rows.append(row)
            log(f"leaderboard split {seed} {name}: caption {row['caption_acc']:.3f} free {row['free_acc']:.3f} "
                f"({row['fit_s']:.1f} s){' ' + row['error'] if row['error'] else ''}")
    return rows


def summarize(rows: list[dict]) -> list[dict]:
    """One row per (dataset, method): mean and standard deviation over splits of each metric, in first-seen order."""
    out = {}
    for r in rows:
        out.setdefault((r["dataset"], r["method"]), []).append(r)
    table = []
    for (dataset, method), group in out.items():
        row = {"dataset": dataset, "method": method, "family": group[0]["family"], "splits": len(group),
               "errors": sorted({g["error"] for g in group if g["error"]})}
        for m in METRICS:
            values = np.array([g[m] for g in group], dtype=np.float64)
            ok = values[np.isfinite(values)]
            row[m] = (float(ok.mean()), float(ok.std())) if ok.size else (float("nan"), float("nan"))
        table.append(row)
    return table


HEADER = ["data", "method", "splits", "caption acc %", "free acc %", "P@5 %", "R@5 %", "log density", "fit s"]


def table_rows(summary: list[dict]) -> list[list]:
    """Cells of ``HEADER`` per summary row: "mean ± sd" strings (accuracies in %), "n/a" where undefined; a
    method that failed on some split says so (with the first error) after its name."""
    rows = []
    for r in summary:
        cells = []
        for m in METRICS:
            mean, sd = r[m]
            scale = 100.0 if m in ("caption_acc", "free_acc", "P@5", "R@5") else 1.0
            digits = 2 if m == "log_density" else 1
            cells.append("n/a" if not np.isfinite(mean) else f"{scale * mean:.{digits}f} ± {scale * sd:.{digits}f}")
        note = f" (failed: {r['errors'][0]})" if r["errors"] else ""
        rows.append([r["dataset"], r["method"] + note, r["splits"], *cells])
    return rows


def markdown_table(summary: list[dict]) -> str:
    """The leaderboard as one Markdown table (mean ± sd over splits; accuracies in %)."""
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in table_rows(summary)]
    return "\n".join(lines)


def plot_leaderboard(summary: list[dict], path):
    """Horizontal bars of within-caption and free accuracy (mean ± sd over splits) per method; saves ``path``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = list(dict.fromkeys(r["dataset"] for r in summary))
    fig, axes = plt.subplots(1, len(datasets), figsize=(7 * len(datasets), 0.35 * len(summary) + 2), squeeze=False)
    colours = {"baseline": "tab:grey", "model": "tab:blue", "bound": "tab:green"}
    for ax, dataset in zip(axes[0], datasets):
        rows = [r for r in summary if r["dataset"] == dataset]
        y = np.arange(len(rows))
        for offset, metric, hatch in ((-0.2, "caption_acc", ""), (0.2, "free_acc", "//")):
            mean = np.array([r[metric][0] for r in rows]) * 100
            sd = np.array([r[metric][1] for r in rows]) * 100
            ax.barh(y + offset, np.nan_to_num(mean), 0.4, xerr=np.nan_to_num(sd), hatch=hatch,
                    color=[colours[r["family"]] for r in rows], edgecolor="black", linewidth=0.3)
        ax.set_yticks(y, [r["method"] for r in rows], fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("region accuracy % (plain: within caption, hatched: free)")
        ax.set_title(dataset, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def cli(args) -> int:
    """``zoo leaderboard``: run, print the Markdown table, write leaderboard.{md,json,png} into ``args.out``."""
    import json
    import pathlib

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.data == "corel5k":
        rows = leaderboard("corel5k", splits=args.splits, fast=args.fast)
    else:
        rows = leaderboard(args.data, models=args.model or None, splits=args.splits, fast=args.fast,
                           segmentation=args.segmentation, features=args.features, n_images=args.images)
    summary = summarize(rows)
    table = markdown_table(summary)
    (out / "leaderboard.md").write_text(table + "\n")
    (out / "leaderboard.json").write_text(json.dumps(rows, indent=1))
    plot_leaderboard(summary, out / "leaderboard.png")
    print(table)
    print(f"zoo leaderboard: {out / 'leaderboard.md'}, {out / 'leaderboard.json'}, {out / 'leaderboard.png'}")
    return 0


class _CallableModule(types.ModuleType):
    """``zoo.leaderboard(...)`` calls ``leaderboard`` while ``zoo.leaderboard.<name>`` stays the module."""

    def __call__(self, *args, **kwargs):
        return leaderboard(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
