"""Reading the leaderboard's rows: before / after each choice made on training data, paired over the same splits
(``PAIRS``), as rows or Markdown. The leaderboard document itself is ``zoo.leaderboards.document``.
"""
from __future__ import annotations

import numpy as np

__all__ = ["PAIRS", "before_after", "before_after_markdown"]

#: (choice made on training data, row before, row after)
PAIRS = (
    ("restarts: best of 5 by final objective", "carbonetto03 MAP full (1 restart)", "carbonetto03 MAP full"),
    ("features standardized on the training regions", "carbonetto03 MAP full (raw features)",
     "carbonetto03 MAP full"),
    ("features standardized (SI-SVM, C=1)", "SI-SVM (C=1, raw features)", "SI-SVM (C=1, default)"),
    ("features standardized (co-occurrence codebook)", "co-occurrence (raw features)", "co-occurrence"),
    ("features standardized (MoM-HDP codebook)", "MoM-HDP (T=20, raw features)", "MoM-HDP (T=20, default)"),
    ("MoM-LDA K by training ELBO", "MoM-LDA (K=20, default)", "MoM-LDA (K by ELBO)"),
    ("MoM-LDA K, alpha by training ELBO", "MoM-LDA (K=20, default)", "MoM-LDA (K, alpha by ELBO)"),
    ("MoM-HDP T by training ELBO", "MoM-HDP (T=20, default)", "MoM-HDP (T by ELBO)"),
    ("MoM-HDP T, alpha_pi by training ELBO", "MoM-HDP (T=20, default)", "MoM-HDP (T, alpha_pi by ELBO)"),
    ("MoM-LDA K, alpha by inner P@5 (training images)", "MoM-LDA (K=20, default)",
     "MoM-LDA (K, alpha by inner P@5)"),
    ("MoM-HDP T, alpha_pi by inner P@5 (training images)", "MoM-HDP (T=20, default)",
     "MoM-HDP (T, alpha_pi by inner P@5)"),
    ("logistic regression C by inner 3-fold CV", "logistic regression (C=1, default)",
     "logistic regression (C selected)"),
    ("SI-SVM C by inner 3-fold CV", "SI-SVM (C=1, default)", "SI-SVM (C selected)"),
    ("gustafson07 FULL garbage weight by inner caption log predictive", "gustafson07 FULL",
     "gustafson07 FULL (garbage weight selected)"),
    ("gustafson07 FS garbage weight by inner caption log predictive", "gustafson07 FS",
     "gustafson07 FS (garbage weight selected)"),
)


def _metric(dataset: str) -> str:
    return "P@5" if dataset == "corel5k" else "caption_acc"


def _by_split(rows, dataset, method, metric) -> dict[int, float]:
    return {r["split"]: float(r[metric]) for r in rows if r["dataset"] == dataset and r["method"] == method
            and not r["error"] and np.isfinite(float(r[metric]))}


def before_after(rows: list[dict]) -> list[dict]:
    """Per data set and ``PAIRS`` entry with both rows on common splits: {dataset, choice, metric, before, after
    (means over the common splits), diff (mean, sd of after - before over those splits), splits}."""
    out = []
    for dataset in dict.fromkeys(r["dataset"] for r in rows):
        metric = _metric(dataset)
        for choice, before, after in PAIRS:
            a, b = _by_split(rows, dataset, before, metric), _by_split(rows, dataset, after, metric)
            common = sorted(set(a) & set(b))
            if not common:
                continue
            x, y = np.array([a[s] for s in common]), np.array([b[s] for s in common])
            out.append({"dataset": dataset, "choice": choice, "metric": metric, "before": float(x.mean()),
                        "after": float(y.mean()), "diff": (float((y - x).mean()), float((y - x).std())),
                        "splits": len(common)})
    return out


def before_after_markdown(rows: list[dict]) -> str:
    """``before_after`` as one Markdown table (percentages)."""
    lines = ["| data | choice (training data only) | metric | before % | after % | after - before (sd) | splits |",
             "|---|---|---|---|---|---|---|"]
    for p in before_after(rows):
        lines.append(f"| {p['dataset']} | {p['choice']} | {p['metric']} | {100 * p['before']:.1f} | "
                     f"{100 * p['after']:.1f} | {100 * p['diff'][0]:+.1f} ({100 * p['diff'][1]:.1f}) | "
                     f"{p['splits']} |")
    return "\n".join(lines)
