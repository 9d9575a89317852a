"""Baselines on the real annotated-region data: the numbers every region-word model has to beat.

``zoo reproduce regions [--fast]``. On the MSRC-v2 test split, per-region accuracy (share of labelled regions whose
predicted word is their true label) of:

- chance: a keyword of the image drawn uniformly (expected accuracy);
- word-frequency prior: the image's keyword that is most frequent in the training captions (with captions), or
  the most frequent training word (without) -- the "empirical word frequency" baseline of Carbonetto et al. 2003;
- co-occurrence (Mori, Takahashi & Oka 1999): blob tokens (k-means of training region features), p(w | token)
  from counting each training region's token against each keyword of its image (weight 1/|keywords|);
- supervised upper bound: multinomial logistic regression (scikit-learn) trained on the true region labels of the
  training images -- the labels the weakly supervised models never see.

"with captions" restricts each region's prediction to its image's keywords (the region-labelling task of
Carbonetto et al. 2003 and Gustafson et al. 2007); "free" predicts from the whole vocabulary (annotation of new
images, Yakhnenko & Honavar). "per image" averages the with-captions accuracy over the regions of an image first,
then over images (Carbonetto et al. 2003, Sec. 5.3). ``zoo bench regions`` is in ``zoo.experiments.bench.regions``.
"""
from __future__ import annotations

import dataclasses
import pathlib

import numpy as np

__all__ = ["word_prior_scores", "cooccurrence_scores", "supervised_scores", "region_accuracy", "baseline_table",
           "baseline_rows", "BaselineSetting", "BaselineRun", "run_baselines", "baseline_tables", "plot_regions",
           "reproduce", "is_cached"]


def word_prior_scores(train, test) -> np.ndarray:
    """(R_test, W) scores: the training caption frequency of each word, the same for every region."""
    frequency = train.keyword_matrix().mean(axis=0)
    return np.tile(frequency, (test.X.shape[0], 1))


def cooccurrence_scores(train, test, n_visual_words: int = 64, seed: int = 0) -> np.ndarray:
    """(R_test, W) p(w | blob token of the region), from token-keyword co-occurrence in the training images."""
    from zoo.data.visual_words import blob_tokens

    _, tokens = blob_tokens(train.X, np.concatenate([train.X, test.X]), n_visual_words, seed)
    train_tokens, test_tokens = tokens[:train.X.shape[0]], tokens[train.X.shape[0]:]
    keywords = train.keyword_matrix().astype(np.float64)
    keywords /= keywords.sum(axis=1, keepdims=True)
    table = np.zeros((n_visual_words, keywords.shape[1]))
    np.add.at(table, train_tokens, keywords[train.image_ids])
    table += 1e-3  # a token unseen in training falls back to (almost) uniform
    table /= table.sum(axis=1, keepdims=True)
    return table[test_tokens]


def supervised_scores(train, test, C: float = 1.0, seed: int = 0) -> np.ndarray:
    """(R_test, W) class probabilities of a logistic regression fit to the training regions' true labels."""
    from sklearn.linear_model import LogisticRegression  # extras dependency: imported only here

    labelled = train.region_labels >= 0
    model = LogisticRegression(C=C, max_iter=2000, random_state=seed)
    model.fit(train.X[labelled], train.region_labels[labelled])
    scores = np.zeros((test.X.shape[0], len(test.vocabulary)))
    scores[:, model.classes_] = model.predict_proba(test.X)
    return scores


def region_accuracy(scores: np.ndarray, regions, with_captions: bool = True) -> dict[str, float]:
    """Accuracy over labelled regions of argmax predictions; ``with_captions`` restricts them to image keywords.

    Returns {"accuracy": share of labelled regions, "per_image": mean over images of the per-image share}.
    """
    scores = np.asarray(scores, dtype=np.float64)
    if with_captions:
        allowed = regions.keyword_matrix()[regions.image_ids].astype(bool)
        scores = np.where(allowed, scores, -np.inf)
    predicted = scores.argmax(axis=1)
    labelled = regions.region_labels >= 0
    correct = (predicted == regions.region_labels)[labelled]
    images = regions.image_ids[labelled]
    per_image = np.bincount(images, correct) / np.maximum(np.bincount(images), 1)
    return {"accuracy": float(correct.mean()), "per_image": float(per_image[np.unique(images)].mean())}


def _chance(regions) -> dict[str, float]:
    sizes = regions.keyword_matrix().sum(axis=1)[regions.image_ids]
    labelled = regions.region_labels >= 0
    expected = 1.0 / sizes[labelled]
    images = regions.image_ids[labelled]
    per_image = np.bincount(images, expected) / np.maximum(np.bincount(images), 1)
    return {"accuracy": float(expected.mean()), "per_image": float(per_image[np.unique(images)].mean()),
            "free": 1.0 / len(regions.vocabulary)}


def baseline_table(train, test, *, n_visual_words: int = 64, seed: int = 0) -> list[dict]:
    """Rows {method, with_captions, per_image, free} of the four baselines on one train/test pair.

    The number of blob tokens is capped at a quarter of the training regions (tiny data sets)."""
    n_visual_words = max(1, min(n_visual_words, train.X.shape[0] // 4))
    rows = [{"method": "chance", **_chance(test)}]
    rows[0]["with_captions"] = rows[0].pop("accuracy")
    methods = [("word-frequency prior", lambda: word_prior_scores(train, test)),
               ("co-occurrence (blob tokens)", lambda: cooccurrence_scores(train, test, n_visual_words, seed)),
               ("supervised logistic regression (upper bound)", lambda: supervised_scores(train, test, seed=seed))]
    for name, make in methods:
        try:
            scores = make()
        except (ImportError, ValueError) as err:   # e.g. a training split with a single labelled class
            rows.append({"method": f"{name} [could not run: {type(err).__name__}: {err}]", "with_captions": np.nan,
                         "per_image": np.nan, "free": np.nan})
            continue
        captioned = region_accuracy(scores, test, with_captions=True)
        rows.append({"method": name, "with_captions": captioned["accuracy"], "per_image": captioned["per_image"],
                     "free": region_accuracy(scores, test, with_captions=False)["accuracy"]})
    return rows


COLUMNS = ["method", "with captions", "per image", "free"]


def baseline_rows(rows: list[dict]) -> list[list]:
    """Table rows (method, with captions, per image, free) of ``baseline_table``'s output; a baseline that could
    not run keeps its row, its reason in the method name and n/a in the numbers."""
    return [[r["method"], r["with_captions"], r["per_image"], r["free"]] for r in rows]


def _settings(fast: bool, ncut_cached: bool) -> list[tuple[str, str, str]]:
    if fast:
        return [("ncut" if ncut_cached else "slic", "original", "carbonetto03")]
    return [(seg, ann, feat) for seg in ("ncut", "slic", "felzenszwalb") for ann in ("original", "cleaned")
            for feat in ("carbonetto03", "gustafson07", "kueck04")]


def is_cached(segmentation: str) -> bool:
    """Whether the MSRC-v2 regions of ``segmentation`` (with its default parameters) are in the cache already."""
    from zoo.data import msrc
    from zoo.data.regions import segmentation_params

    key = msrc.cache_key(segmentation, segmentation_params(segmentation), msrc.msrc_image_names())
    return (msrc.cache_dir() / f"{key}.npz").exists()



@dataclasses.dataclass
class BaselineSetting:
    """The baselines on one (segmentation, annotation, features) setting of MSRC-v2: ``rows`` are
    ``baseline_table``'s (method, with_captions, per_image, free)."""
    setting: tuple[str, str, str]
    n_train: int      # training regions
    n_test: int       # labelled test regions
    rows: list[dict]


@dataclasses.dataclass
class BaselineRun:
    """``run_baselines``' numbers: one ``BaselineSetting`` per setting, in the order run."""
    settings: list[BaselineSetting]


def run_baselines(settings, n_jobs: int = 2) -> BaselineRun:
    """The four baselines on each (segmentation, annotation, features) of ``settings`` (train / test split)."""
    import zoo

    results = []
    for segmentation, annotation, features in settings:
        options = dict(segmentation=segmentation, annotation=annotation, features=features, n_jobs=n_jobs)
        train = zoo.load_dataset("msrc_v2", split="train", **options)
        test = zoo.load_dataset("msrc_v2", split="test", **options)
        results.append(BaselineSetting(setting=(segmentation, annotation, features), n_train=int(train.X.shape[0]),
                                       n_test=int((test.region_labels >= 0).sum()), rows=baseline_table(train, test)))
        print(f"regions: {segmentation}, {annotation} labels, {features} features done", flush=True)
    return BaselineRun(results)


def baseline_tables(run: BaselineRun) -> list:
    """One Table per setting of ``run_baselines``."""
    from zoo.reports import Table

    tables = []
    for res in run.settings:
        segmentation, annotation, features = res.setting
        tables.append(Table(
            title=f"MSRC-v2 test split: {segmentation} segmentation, {annotation} labels, {features} features",
            header=COLUMNS, rows=baseline_rows(res.rows),
            note=f"Per-region accuracy (share of labelled test regions); {res.n_train} training regions, "
                 f"{res.n_test} labelled test regions. 'with captions': prediction restricted to the image's "
                 f"keywords; 'per image': that accuracy averaged within each image first; 'free': the whole "
                 f"vocabulary. No paper reports these baselines on MSRC-v2: they are the floor (chance, word "
                 f"frequency) and ceiling (supervised) for the region-word models."))
    return tables


def reproduce(out_dir: pathlib.Path, fast: bool = False, n_jobs: int = 2):
    """The baseline tables on MSRC-v2 and a figure of segmented test photographs (``msrc_regions.png``);
    returns a ``PaperReport`` (a note only when the MSRC-v2 data are missing).

    ``n_jobs`` processes segment the images when the segmentation is not cached yet."""
    import time

    from zoo.data import msrc
    from zoo.reports import PaperReport, Section, print_section

    out_dir = pathlib.Path(out_dir)
    report = PaperReport("regions", "Region-labelling baselines on MSRC-v2 (chance, word frequency, "
                                    "co-occurrence, supervised)")
    try:
        msrc.msrc_root()
    except FileNotFoundError as err:
        message = f"skipped: the MSRC-v2 data are not available ({err})"
        print(f"regions: {message}")
        report.notes.append(message)
        return report
    ncut_cached = is_cached("ncut")
    settings = _settings(fast, ncut_cached)
    if fast and not ncut_cached:
        message = ("--fast: Normalized Cuts not cached yet; using the fast SLIC segmentation "
                   "(run `zoo reproduce regions` once to cache Normalized Cuts)")
        print(f"regions {message}")
        report.notes.append(message)
    if fast:
        report.notes.append("--fast: one setting (segmentation, original labels, carbonetto03 features); the full "
                            "run has 3 segmentations x 2 annotations x 3 feature sets")
    t0 = time.perf_counter()
    results = run_baselines(settings, n_jobs=n_jobs)
    print_section(report.add(Section("Baselines", baseline_tables(results), seconds=time.perf_counter() - t0)))
    t0 = time.perf_counter()
    figure = plot_regions(out_dir / "msrc_regions.png", settings[0][0])
    report.add(Section("Segmented test photographs", [figure], seconds=time.perf_counter() - t0))
    print(f"regions: tables and figure written to {out_dir}")
    return report


def plot_regions(path: pathlib.Path, segmentation: str):
    """Six test photographs with their segmentation and region ground truth; returns the Figure."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from zoo.data.msrc import msrc_image_names, msrc_split, plot_msrc_image
    from zoo.reports import Figure, save_figure

    _, test = msrc_split(msrc_image_names())
    names = [test[i] for i in np.linspace(0, len(test) - 1, 6).astype(int)]
    fig, axes = plt.subplots(2, 3, figsize=(12, 7))
    for name, ax in zip(names, axes.ravel()):
        plot_msrc_image(name, segmentation, ax=ax)
    fig.suptitle(f"MSRC-v2 test photographs: {segmentation} regions and their ground-truth labels")
    save_figure(fig, path, dpi=110)
    return Figure("Segmented test photographs", path,
                  f"Six test photographs spread over the split, with the {segmentation} region boundaries and "
                  f"each region's ground-truth label (as plot_msrc_image draws them).")
