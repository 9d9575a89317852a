"""The region-word leaderboard in the reports (``zoo reproduce leaderboard [--fast]``; issue 19).

Full: ``zoo.leaderboard`` on MSRC-v2 for each available segmentation (ncut, slic) with the carbonetto03
features, every method of ``zoo.leaderboard.METHODS``, 5 seeded image splits (half train, half test), plus the
other feature sets (gustafson07, kueck04) on ncut with the methods that take seconds, and Corel5k image
annotation (5 seeded 4500 / 500 splits; P@5 / R@5 only: no region features there). That is hours on 2 cores
(the MCMC models fit one sampler per split, and Kueck's one per word and split).

--fast (what ``zoo reproduce all --fast``, run by CI, runs): deliberately TINY, under a minute: 2 splits of 120
MSRC-v2 images (ncut if cached, else slic), the cheap baselines and carbonetto03 ML diag only. It checks that
the pipeline runs on real data; its numbers are not the leaderboard. ``zoo leaderboard --fast`` is the larger
"fast leaderboard" of the README (5 splits of all images, every method that fits in seconds; under 30 minutes).
"""
from __future__ import annotations

import pathlib
import time

__all__ = ["reproduce", "FULL_SETTINGS", "TINY_METHODS"]

TINY_METHODS = ("chance", "word frequency", "co-occurrence", "naive Bayes", "logistic regression (C=1, default)",
                "carbonetto03 ML diag", "supervised LR (upper bound)")
FULL_SETTINGS = (("ncut", "carbonetto03", None), ("slic", "carbonetto03", None),
                 ("ncut", "gustafson07", "fast"), ("ncut", "kueck04", "fast"))


def _available(segmentation: str) -> bool:
    from zoo.experiments.regions import _is_cached
    try:
        return segmentation == "slic" or _is_cached(segmentation)
    except FileNotFoundError:
        return False


def reproduce(out_dir: pathlib.Path, fast: bool = False):
    """The leaderboard table and figure (``leaderboard.png``); a note only when MSRC-v2 is missing."""
    from zoo import leaderboard as lb
    from zoo.data import msrc
    from zoo.reports import Figure, PaperReport, Section, Table, print_section

    out_dir = pathlib.Path(out_dir)
    report = PaperReport("leaderboard", "Region-word leaderboard: every region-word model beside the baselines")
    try:
        msrc._msrc_root()
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
        for segmentation, features, methods in FULL_SETTINGS:
            if not _available(segmentation):
                report.notes.append(f"{segmentation}: segmentation not cached, skipped")
                continue
            names = None if methods is None else lb.FAST_METHODS
            rows += lb.leaderboard("msrc_v2", models=names, splits=5, fast=False, segmentation=segmentation,
                                   features=features)
        try:
            rows += lb.leaderboard("corel5k", splits=5, fast=False)
        except FileNotFoundError as err:
            report.notes.append(f"Corel5k skipped: {err}")
    summary = lb.summarize(rows)
    table = Table("Leaderboard (mean ± sd over seeded image splits)", lb.HEADER, lb.table_rows(summary),
                  note="Region accuracy over labelled test regions (ties split evenly): 'caption' restricted to "
                       "the test image's keywords, 'free' over the vocabulary; P@5/R@5: the image's 5 best words "
                       "(mean of its regions' scores); log density: mean log p(true word | region) where the "
                       "method gives normalized probabilities. Test images are seen without captions. Protocol: "
                       "zoo.leaderboard's docstring.")
    figure = Figure("Region accuracy per method", lb.plot_leaderboard(summary, out_dir / "leaderboard.png"),
                    "Within-caption (plain) and free (hatched) region accuracy, mean ± sd over splits; grey: "
                    "baselines, blue: region-word models, green: supervised upper bound.")
    print_section(report.add(Section("Leaderboard", [table, figure], seconds=time.perf_counter() - t0)))
    return report
