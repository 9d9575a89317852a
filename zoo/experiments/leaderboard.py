"""The region-word leaderboard in the reports (``zoo reproduce leaderboard [--fast]``; issue 19).

Full: ``run_full``: ``zoo.leaderboard`` on MSRC-v2 for each cached segmentation (ncut, slic) and each feature
set (carbonetto03, gustafson07, kueck04) with the methods that take seconds to minutes (``FAST_METHODS``), Corel5k
image annotation (5 seeded 4500 / 500 splits; P@5 / R@5 only: no region features there), then the MCMC models
and mi-SVM (``SLOW_METHODS``) on the carbonetto03 features; 5 seeded image splits (half train, half test) each.
Rows go to ``<out>/leaderboard.jsonl`` as they finish and are reused by a later run: hours on 2 cores (the MCMC
models fit one sampler per split, Kueck's one per word and split), so it can be run in pieces.

--fast (what ``zoo reproduce all --fast``, run by CI, runs): deliberately TINY, under a minute: 2 splits of 120
MSRC-v2 images (ncut if cached, else slic), the cheap baselines and carbonetto03 ML diag only. It checks that
the pipeline runs on real data; its numbers are not the leaderboard. ``zoo leaderboard --fast`` is the larger
"fast leaderboard" of the README (5 splits of all images, every method that fits in seconds; under 30 minutes).
"""
from __future__ import annotations

import pathlib
import time
from dataclasses import dataclass, field

__all__ = ["reproduce", "run_full", "FullRun", "FULL_STAGES", "TINY_METHODS", "SLOW_METHODS", "COREL_CHEAP"]

TINY_METHODS = ("chance", "word frequency", "co-occurrence", "naive Bayes", "logistic regression (C=1, default)",
                "carbonetto03 ML diag", "supervised LR (upper bound)")
#: the methods that fit an MCMC sampler (or one SVM per word and relabelling round) per split
SLOW_METHODS = ("mi-SVM", "gustafson07 FULL", "gustafson07 FS", "gustafson07 CVFS", "kueck04 constraint",
                "kueck04 hybrid")
#: Corel5k's methods without the MoM grids (one MoM fit on 4,500 images: about 4 minutes on a shared core)
COREL_CHEAP = ("word frequency", "naive Bayes (one-vs-all)", "MoM-LDA (K=20, default)", "MoM-HDP (T=20, default)")
#: the full run, cheapest stages first so that a run cut short still covers the settings with the fast methods:
#: (segmentation or "corel5k", feature set, methods: "fast" = FAST_METHODS (every before / after variant),
#: "cheap" = CHEAP_METHODS (without the MoM grids; Corel5k: COREL_CHEAP), "slow" = SLOW_METHODS, "all" = every
#: Corel5k method)
FULL_STAGES = (("ncut", "carbonetto03", "cheap"), ("slic", "carbonetto03", "cheap"), ("corel5k", None, "cheap"),
               ("corel5k", None, "all"), ("ncut", "carbonetto03", "fast"), ("slic", "carbonetto03", "fast"),
               ("ncut", "gustafson07", "cheap"), ("ncut", "kueck04", "cheap"), ("slic", "gustafson07", "cheap"),
               ("slic", "kueck04", "cheap"), ("ncut", "carbonetto03", "slow"), ("slic", "carbonetto03", "slow"))


@dataclass
class FullRun:
    """The full leaderboard's rows (one dict per method, split and setting, as ``zoo.leaderboard`` returns them)
    and the notes on stages that were skipped (data not available)."""
    rows: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def run_full(results, splits: int = 5, stages=FULL_STAGES, log=print) -> FullRun:
    """Every stage of ``stages`` on ``splits`` seeded splits, each row appended to ``results`` (JSON lines) as it
    finishes; rows already in ``results`` are reused (so a killed run resumes)."""
    from zoo.leaderboards import board as lb
    from zoo.leaderboards.methods import CHEAP_METHODS
    rows, notes = [], []
    for segmentation, features, methods in stages:
        if segmentation == "corel5k":
            try:
                rows += lb.leaderboard("corel5k", models=COREL_CHEAP if methods == "cheap" else None, splits=splits,
                                       fast=False, results=results, log=log)
            except FileNotFoundError as err:
                notes.append(f"Corel5k skipped: {err}")
            continue
        if not _available(segmentation):
            notes.append(f"{segmentation}: segmentation not cached, skipped")
            continue
        names = {"fast": lb.FAST_METHODS, "cheap": CHEAP_METHODS, "slow": SLOW_METHODS}[methods]
        rows += lb.leaderboard("msrc_v2", models=names, splits=splits, fast=False, results=results, log=log,
                               segmentation=segmentation, features=features)
    return FullRun(rows, notes)


def _available(segmentation: str) -> bool:
    from zoo.data import msrc
    try:
        return segmentation == "slic" or msrc.is_cached(segmentation)
    except FileNotFoundError:
        return False


def reproduce(out_dir: pathlib.Path, fast: bool = False):
    """The leaderboard table and figure (``leaderboard.png``); a note only when MSRC-v2 is missing."""
    from zoo.leaderboards import board as lb
    from zoo.data import msrc
    from zoo.leaderboards.report import before_after
    from zoo.reports import Figure, PaperReport, Section, Table, print_section

    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    report = PaperReport("leaderboard", "Region-word leaderboard: every region-word model beside the baselines")
    try:
        msrc.msrc_root()
    except FileNotFoundError as err:
        report.notes.append(f"skipped: the MSRC-v2 data are not available ({err})")
        return report
    t0 = time.perf_counter()
    rows = []
    if fast:
        segmentation = "ncut" if _available("ncut") else "slic"
        rows += lb.leaderboard("msrc_v2", models=TINY_METHODS, splits=2, fast=True, segmentation=segmentation,
                               n_images=120)
        report.notes.append("--fast: a tiny smoke run (2 splits of 120 images, 7 cheap methods), not the "
                            "leaderboard; run `zoo reproduce leaderboard` or `zoo leaderboard --fast`")
    else:
        full = run_full(out_dir / "leaderboard.jsonl")
        rows += full.rows
        report.notes += full.notes
    summary = lb.summarize(rows)
    table = Table("Leaderboard (mean ± sd over seeded image splits)", lb.HEADER, lb.table_rows(summary),
                  note="Region accuracy over labelled test regions (ties split evenly): 'caption' restricted to "
                       "the test image's keywords, 'free' over the vocabulary; P@5/R@5: the image's 5 best words "
                       "(mean of its regions' scores); log density: mean log p(true word | region) where the "
                       "method gives normalized probabilities; pixel acc: the free labelling scored per labelled "
                       "pixel (global and class average, void excluded). Test images are seen without captions. "
                       "Protocol: zoo.leaderboards.board's docstring.")
    from zoo.leaderboards.document import plot_summary
    measured = {"seeded": summary, "standard": [], "pixel": [], "mil": []}
    figure = Figure("Within-caption region accuracy per method",
                    plot_summary(measured, (), out_dir / "leaderboard.png"),
                    "Bars sorted by within-caption region accuracy, mean ± sd over splits; grey: baselines, blue: "
                    "region-word models; dashed green line: the supervised upper bound (trained on region labels).")
    pairs = Table("Before / after each choice made on training data (paired over the same splits)",
                  ["data", "choice", "metric", "before %", "after %", "after - before %", "sd %", "splits"],
                  [[p["dataset"], p["choice"], p["metric"], round(100 * p["before"], 1), round(100 * p["after"], 1),
                    round(100 * p["diff"][0], 1), round(100 * p["diff"][1], 1), p["splits"]]
                   for p in before_after(rows)],
                  note="MSRC-v2: within-caption region accuracy; Corel5k: P@5. No choice sees a test image.")
    print_section(report.add(Section("Leaderboard", [table, pairs, figure], seconds=time.perf_counter() - t0)))
    return report
