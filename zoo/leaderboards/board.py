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
- ``pixel_acc`` / ``pixel_class_acc`` (MSRC-v2): the free labelling (each test region its argmax word over the
  vocabulary, no caption) scored per pixel, void excluded: the share of labelled pixels right (global) and its
  mean over the classes present (class average); pixels of a class never seen in training count as wrong;
- ``fit_s``: wall seconds to fit and predict (compilation included).

Hyperparameters chosen on training data only (no method sees a test fold): logistic regression's C and the
supervised bound's C by inner 3-fold CV over training images, SI-SVM's C by inner CV, MoM's number of topics /
truncation by the training ELBO, restarts by objective. Rows "(default)" / "(selected)" give before and after.
The methods and their choices: ``zoo.leaderboards.methods``; Corel5k: ``zoo.leaderboards.corel5k``.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from zoo.data.containers import AnnotatedRegions
from zoo.leaderboards.corel5k import corel5k_leaderboard, corel5k_split
from zoo.leaderboards.methods import FAST_METHODS, METHODS, METRICS, Scores, Settings, summarize, timed_row
from zoo.leaderboards.results_io import read_results, row_appender

__all__ = ["Scores", "Split", "make_split", "evaluate", "tie_accuracy", "METHODS", "FAST_METHODS", "leaderboard",
           "summarize", "markdown_table", "table_rows", "plot_leaderboard", "msrc_regions", "corel5k_split",
           "corel5k_leaderboard", "read_results", "cli", "METRICS"]


class Split(NamedTuple):
    """train: standardized, vocabulary = training caption words; blind: test regions without captions or labels;
    labels (R_test,) true word index, -1 unlabelled, -2 a word unseen in training; keywords (I_test, W) 0/1 test
    captions over the vocabulary; caption_sizes (I_test,) full caption lengths (unseen words included);
    test_images (I_test,) the test images' indices in the data set; mean, scale (D,): the standardization
    (X_std = (X_raw - mean) / scale, from the training regions)."""
    train: AnnotatedRegions
    blind: AnnotatedRegions
    labels: np.ndarray
    keywords: np.ndarray
    caption_sizes: np.ndarray
    test_images: np.ndarray | None = None
    mean: np.ndarray | None = None
    scale: np.ndarray | None = None
    #: (R_test, W + 1) labelled pixels of each training word in each test region, last column: pixels of classes
    #: unseen in training (always wrong); None where the data have no pixel truth
    pixel_counts: np.ndarray | None = None


def _subset(data: AnnotatedRegions, images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(region mask, new image ids) of the regions of ``images`` (renumbered in the given order)."""
    index = np.full(data.n_images, -1)
    index[images] = np.arange(images.size)
    keep = index[data.image_ids] >= 0
    return keep, index[data.image_ids[keep]]


def make_split(data: AnnotatedRegions, seed: int, test_fraction: float = 0.5, pixel_counts=None) -> Split:
    """The seeded image split of the protocol (see module docstring); only images holding regions are used.
    ``pixel_counts`` (R, W): each region's labelled pixels per vocabulary word (void excluded), or None."""
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
    pixels = None
    if pixel_counts is not None:
        test_counts = np.asarray(pixel_counts)[keep_te]
        unseen = np.setdiff1d(np.arange(test_counts.shape[1]), words)
        pixels = np.column_stack([test_counts[:, words], test_counts[:, unseen].sum(axis=1)])
    return Split(train, blind, labels, full[test_images][:, words].astype(bool), full[test_images].sum(axis=1),
                 test_images, mean, scale, pixels)


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
    if split.pixel_counts is not None:        # data without pixel truth: no pixel keys (summaries read nan)
        from zoo.metrics import pixel_accuracy_from_counts
        # free labelling: ties go to the first word (a pixel gets one class); the unseen column is never predicted
        pixels = pixel_accuracy_from_counts(np.argmax(np.where(np.isnan(region), -np.inf, region), axis=1),
                                            split.pixel_counts)
        out["pixel_acc"], out["pixel_class_acc"] = pixels["global"], pixels["class_avg"]
    return out


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


def msrc_pixel_counts(segmentation: str = "ncut", features: str = "carbonetto03", n_images: int | None = None,
                      seed: int = 0) -> np.ndarray:
    """(R, 23) labelled pixels of each class in each region (original annotation, void excluded), row for row the
    regions of ``msrc_regions`` with the same arguments (``features`` does not change the regions)."""
    from zoo.data import msrc
    from zoo.data.msrc_labels import class_mapping
    table = msrc.msrc_region_table(segmentation, progress=False)
    vocabulary, mapping = class_mapping("all")
    raw = table["counts_original"]                                  # (R, 24): label value 0 (void), 1..23
    counts = np.zeros((raw.shape[0], len(vocabulary)), dtype=np.int64)
    for value, word in enumerate(mapping):
        if word >= 0:
            counts[:, word] += raw[:, value]
    # split="all" keeps the table's regions in its order (images in database order): row r is region r
    n_names = len(table["names"])
    if n_images is None or n_images >= n_names:
        return counts
    images = np.sort(np.random.default_rng(seed).choice(n_names, n_images, replace=False))
    return counts[np.isin(table["image_index"], images)]


def leaderboard(data="msrc_v2", models=None, splits: int = 5, fast: bool = False, *, test_fraction: float = 0.5,
                log=print, results=None, only_splits=None, **data_options) -> list[dict]:
    """Rows {dataset, method, family, split, <metrics>} for every method x split (a failing method keeps its rows,
    with nan metrics and the error in ``error``). data: an ``AnnotatedRegions``, "msrc_v2" (``data_options``
    go to ``msrc_regions``) or "corel5k" (``corel5k_leaderboard``); models: names of ``METHODS`` (None: all, or
    ``FAST_METHODS`` when ``fast``; for Corel5k names of ``corel5k_methods``). results: a JSON-lines file each
    row is appended to as soon as it is done, so a killed run keeps what it finished; rows already there (same
    dataset, method, split) are read back instead of run again. only_splits: run only these seeds of
    0..splits-1 (MSRC-v2 and user data; ``zoo.leaderboards.split_workers`` runs each split in its own process)."""
    if isinstance(splits, bool) or not isinstance(splits, (int, np.integer)) or splits < 1:
        raise ValueError(f"splits: expected a positive int, got {splits!r}")
    previous = read_results(results) if results is not None else []
    sink = row_appender(results) if results is not None else None
    if isinstance(data, str) and data == "corel5k":
        old = [r for r in previous if r["dataset"] == "corel5k" and r["split"] < splits
               and (models is None or r["method"] in models)]
        done = {(r["method"], r["split"]) for r in old}
        return old + corel5k_leaderboard(splits, fast, log, models=models, done=done, sink=sink)
    names = list(models) if models is not None else list(FAST_METHODS if fast else METHODS)
    unknown = [m for m in names if m not in METHODS]
    if unknown:
        raise ValueError(f"models: unknown method {unknown[0]!r}; choose from {', '.join(METHODS)}")
    if isinstance(data, str):
        if data != "msrc_v2":
            raise ValueError(f"data: expected 'msrc_v2', 'corel5k' or an AnnotatedRegions, got {data!r}")
        label = "msrc_v2 " + " ".join(str(v) for _, v in sorted(data_options.items()) if v is not None)
        data = msrc_regions(**data_options)
        pixels = msrc_pixel_counts(**data_options)
        if pixels.shape[0] != data.X.shape[0]:
            raise RuntimeError(f"pixel counts: {pixels.shape[0]} regions, the data {data.X.shape[0]}")
    else:
        label = "user data"
        pixels = None
    done = {(r["method"], r["split"]): r for r in previous if r["dataset"] == label}
    rows = []
    for seed in range(int(splits)):
        if only_splits is not None and seed not in only_splits:
            continue
        todo = [name for name in names if (name, seed) not in done]
        rows += [done[(name, seed)] for name in names if (name, seed) in done]
        if not todo:
            continue
        split = make_split(data, seed, test_fraction, pixel_counts=pixels)
        for name in todo:
            family, run = METHODS[name]
            settings = Settings(seed, fast, split.mean, split.scale)
            row = timed_row({"dataset": label, "method": name, "family": family, "split": seed, "error": ""},
                            lambda: evaluate(run(split.train, split.blind, settings), split), METRICS[:-1])
            rows.append(row)
            if sink is not None:
                sink(row)
            log(f"leaderboard split {seed} {name}: caption {row['caption_acc']:.3f} free {row['free_acc']:.3f} "
                f"({row['fit_s']:.1f} s){' ' + row['error'] if row['error'] else ''}")
    return rows


HEADER = ["data", "method", "splits", "caption acc %", "free acc %", "P@5 %", "R@5 %", "log density", "pixel acc %",
          "class-avg pixel acc %", "fit s"]


def table_rows(summary: list[dict]) -> list[list]:
    """Cells of ``HEADER`` per summary row: "mean ± sd" strings (accuracies in %), "n/a" where undefined; a
    method that failed on some split says so (with the first error) after its name."""
    rows = []
    for r in summary:
        cells = []
        for m in METRICS:
            mean, sd = r[m]
            scale = 100.0 if m in ("caption_acc", "free_acc", "P@5", "R@5", "pixel_acc", "pixel_class_acc") else 1.0
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
    """Horizontal bars per method and data set (mean ± sd over splits): within-caption and free region accuracy,
    or P@5 where a data set has no region truth (Corel5k); saves ``path``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = list(dict.fromkeys(r["dataset"] for r in summary))
    # one panel per data set, three to a row; a panel's height follows its own number of methods
    n_cols = min(3, len(datasets))
    n_rows = -(-len(datasets) // n_cols)
    most = max(sum(r["dataset"] == d for r in summary) for d in datasets)
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(7 * n_cols, (0.3 * most + 1.5) * n_rows), squeeze=False)
    for ax in axes.flat[len(datasets):]:
        ax.set_visible(False)
    colours = {"baseline": "tab:grey", "model": "tab:blue", "bound": "tab:green"}
    for ax, dataset in zip(axes.flat, datasets):
        rows = [r for r in summary if r["dataset"] == dataset]
        y = np.arange(len(rows))
        regions = any(np.isfinite(r["caption_acc"][0]) for r in rows)
        bars = ((-0.2, "caption_acc", ""), (0.2, "free_acc", "//")) if regions else ((0.0, "P@5", ""),)
        for offset, metric, hatch in bars:
            mean = np.array([r[metric][0] for r in rows]) * 100
            sd = np.array([r[metric][1] for r in rows]) * 100
            ax.barh(y + offset, np.nan_to_num(mean), 0.4, xerr=np.nan_to_num(sd), hatch=hatch,
                    color=[colours[r["family"]] for r in rows], edgecolor="black", linewidth=0.3)
        ax.set_yticks(y, [r["method"] for r in rows], fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("region accuracy % (plain: within caption, hatched: free)" if regions else
                      "image annotation P@5 %")
        ax.set_title(dataset, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _split_jobs(args) -> int:
    """Worker processes for the splits: --jobs, else one per core (at most 4 and the number of splits)."""
    from zoo.core.workers import default_jobs
    jobs = getattr(args, "jobs", None)
    if jobs is not None and jobs < 1:
        raise ValueError(f"--jobs: expected at least 1, got {jobs}")
    return min(jobs, args.splits) if jobs is not None else default_jobs(args.splits)


def cli(args) -> int:
    """``zoo leaderboard``: run, print the Markdown table, write leaderboard.{md,json,png} into ``args.out``."""
    import json
    import pathlib

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = out / f"leaderboard{'_fast' if args.fast else ''}.jsonl"  # rows kept as they finish; reused
    if args.data == "corel5k":
        rows = leaderboard("corel5k", models=args.model or None, splits=args.splits, fast=args.fast,
                           results=results)
    elif args.data == "msrc_v2":
        options = dict(data=args.data, models=args.model or None, fast=args.fast, segmentation=args.segmentation,
                       features=args.features, n_images=args.images)
        jobs = _split_jobs(args)
        if jobs > 1:
            from zoo.leaderboards.split_workers import run_splits_in_workers
            # the segmentation and features once, here, before the workers read them from the cache (a first
            # run segments all MSRC-v2 images: done by every worker at once, it would cost that many times)
            msrc_pixel_counts(args.segmentation, args.features, args.images)
            msrc_regions(args.segmentation, args.features, args.images)
            run_splits_in_workers(leaderboard, read_results, options, args.splits, results, jobs)
        # every row the workers finished is read back; whatever they did not finish runs here
        rows = leaderboard(**options, splits=args.splits, results=results)
    else:  # a data file (zoo regions, zoo.data.save_container): the AnnotatedRegions it holds
        from zoo.data.location import load_dataset
        data = load_dataset(pathlib.Path(args.data))
        if not isinstance(data, AnnotatedRegions):
            raise ValueError(f"--data: {args.data} holds {type(data).__name__}; the leaderboard scores "
                             f"AnnotatedRegions (msrc_v2, corel5k, or a file of zoo regions)")
        if data.region_labels is None:
            raise ValueError(f"--data: {args.data} has no region labels, and the leaderboard scores regions against "
                             f"their true words (zoo regions writes none: label them, e.g. "
                             f"AnnotatedRegions.from_table(..., region_label='word') and zoo.data.save_container)")
        rows = leaderboard(data, models=args.model or None, splits=args.splits, fast=args.fast, results=results)
    from zoo.leaderboards.document import plot_summary, render_markdown
    summary = summarize(rows)
    table = markdown_table(summary)
    measured = {"seeded": summary, "standard": [], "pixel": [], "mil": []}
    # the same document as docs/leaderboard.md, of this run's rows (no published rows: other protocols)
    (out / "leaderboard.md").write_text(render_markdown(measured, ()))
    (out / "leaderboard.json").write_text(json.dumps(rows, indent=1))
    plot_summary(measured, (), out / "leaderboard.png")
    print(table)
    print(f"zoo leaderboard: {out / 'leaderboard.md'}, {out / 'leaderboard.json'}, {out / 'leaderboard.png'}")
    return 0
