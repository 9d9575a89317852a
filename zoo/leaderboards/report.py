"""Reading the leaderboard's rows: before / after each training-data choice (paired over the same splits) and the
goals of issue 19 point 3, as Markdown; ``write_report`` writes the table, these and the figure from a results
file (``zoo.leaderboard``'s JSON lines), whatever part of the full run has finished.
"""
from __future__ import annotations

import pathlib

import numpy as np

__all__ = ["PAIRS", "before_after", "before_after_markdown", "goals", "write_report"]

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


def _paired(rows, dataset, method, baseline, metric) -> tuple[float, float, int]:
    """Means of ``method`` and ``baseline`` over the splits both have, and their number."""
    a, b = _by_split(rows, dataset, method, metric), _by_split(rows, dataset, baseline, metric)
    common = sorted(set(a) & set(b))
    if not common:
        return float("nan"), float("nan"), 0
    return float(np.mean([a[s] for s in common])), float(np.mean([b[s] for s in common])), len(common)


def goals(rows: list[dict]) -> list[str]:
    """Issue 19 point 3, as measured (paired: means over the splits both rows have): on Corel5k each MoM-HDP row
    against naive Bayes (P@5); on each MSRC-v2 setting every weakly supervised model against co-occurrence
    (within-caption accuracy)."""
    lines = []
    for dataset in dict.fromkeys(r["dataset"] for r in rows):
        methods = list(dict.fromkeys(r["method"] for r in rows if r["dataset"] == dataset))
        if dataset == "corel5k":
            base, metric, label = "naive Bayes (one-vs-all)", "P@5", "naive Bayes"
            models = [m for m in methods if m.startswith("MoM-HDP")]
        else:
            base, metric, label = "co-occurrence", "caption_acc", "co-occurrence"
            family = {r["method"]: r["family"] for r in rows if r["dataset"] == dataset}
            models = [m for m in methods if family[m] == "model"]
        for m in models:
            v, b, n = _paired(rows, dataset, m, base, metric)
            if n:
                met = v >= b if dataset == "corel5k" else v > b
                lines.append(f"{dataset}: {m} {'P@5 ' if dataset == 'corel5k' else ''}{100 * v:.1f} vs {label} "
                             f"{100 * b:.1f} ({n} splits): {'met' if met else 'MISSED'}")
    return lines


def write_report(results, out_dir, settings: str = "") -> dict:
    """leaderboard.md (``settings`` text, the table, before / after, goals) and leaderboard.png in ``out_dir``
    from the rows in the ``results`` file; returns {"rows", "summary", "markdown", "figure"}."""
    from zoo.leaderboards import board as lb
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = lb.read_results(results)
    summary = lb.summarize(rows)
    text = ["# Region-word leaderboard (mean ± sd over seeded splits)", "", *([settings, ""] if settings else []),
            lb.markdown_table(summary), "",
            "## Before / after each choice made on training data (paired over the same splits)", "",
            before_after_markdown(rows), "", "## Goals (issue 19, point 3)", "",
            *[f"- {g}" for g in goals(rows)]]
    markdown = "\n".join(text) + "\n"
    (out_dir / "leaderboard.md").write_text(markdown)
    figure = lb.plot_leaderboard(summary, out_dir / "leaderboard.png") if summary else None
    return {"rows": rows, "summary": summary, "markdown": markdown, "figure": figure}
