"""mi-SVM and MI-SVM with C and the RBF width chosen on the training folds: does a hyperparameter search close the
gap between the zoo's fixed-setting SVM rows (C = 1, gamma = "scale") and the published ones?

The protocol is ``zoo.experiments.mil_protocol``'s (run r of 10-fold CV: ``stratified_bag_folds(seed=r)``, the
same folds as the fixed-setting rows, so the two can be compared run by run). In each outer fold, every setting of
``C_GRID`` x ``GAMMA_FACTORS`` (gamma = factor x "scale", i.e. factor / (D Var X) of the instances a fit sees) is
scored by inner 3-fold cross-validation on the outer training bags only (``stratified_bag_folds(labels, 3,
seed=1)``): the bag accuracy over the three held-out thirds (bag label positive when its largest instance margin is
positive). The best setting (ties: the one nearest the fixed setting C = 1, factor 1 in log scale, then the smaller
C) is refitted on all outer training bags, and only then are the outer test bags scored. The grid was fixed before
any run: C over three decades around the default (the SVM's usual search range), gamma a factor 4 either side of
"scale" (on standardized instances the median squared distance is about 2D, so the three widths put the typical
kernel value at about exp(-0.5), exp(-2) and exp(-8)).

Each finished outer fold is appended to ``<results stem>_folds.jsonl`` (chosen setting, every setting's inner
accuracy), each finished run to ``results``; a rerun resumes at the next unfinished fold.
``python -m zoo.experiments.mil_svm_search --data musk1 --runs 3`` runs it from a shell.
"""
from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from zoo.data import Bags
from zoo.data.mil import load_mil_benchmark, stratified_bag_folds, subset_bags
from zoo.experiments.mil_protocol import MI_svm_bag_scores, folds_path, mi_svm_bag_scores, protocol_folds
from zoo.leaderboards.results_io import read_results, row_appender

__all__ = ["C_GRID", "GAMMA_FACTORS", "SEARCHED", "SearchRun", "grid", "inner_cv_accuracy", "choose",
           "searched_fold", "run_search", "main"]

C_GRID = (0.1, 1.0, 10.0, 100.0)
GAMMA_FACTORS = (0.25, 1.0, 4.0)
#: method name in the results -> bag scorer (the fixed-setting method of ``mil_protocol``, searched)
SEARCHED = {"mi-SVM (C, gamma by inner CV)": mi_svm_bag_scores, "MI-SVM (C, gamma by inner CV)": MI_svm_bag_scores}


def grid(c_grid=C_GRID, gamma_factors=GAMMA_FACTORS) -> list[tuple[float, float]]:
    """Every (C, gamma factor) of the search, C varying slowest."""
    return [(float(c), float(g)) for c in c_grid for g in gamma_factors]


def inner_cv_accuracy(scorer, train: Bags, C: float, gamma_factor: float, n_inner: int = 3) -> float:
    """Bag accuracy (0-1) of ``scorer`` with (C, gamma_factor) over the held-out parts of an inner ``n_inner``-fold
    CV of the bags ``train`` (stratified, seed 1): every training bag is held out once."""
    labels = np.asarray(train.bag_labels)
    inner = stratified_bag_folds(labels, n_inner, seed=1)
    right = 0
    for j in range(n_inner):
        held = np.flatnonzero(inner == j)
        scores = scorer(subset_bags(train, np.flatnonzero(inner != j)), subset_bags(train, held), C=C,
                        gamma_factor=gamma_factor)
        right += int(np.sum((scores > 0) == (labels[held] == 1)))
    return right / len(labels)


def choose(settings: list[tuple[float, float]], accuracies: list[float]) -> int:
    """Index of the best inner accuracy; ties go to the setting nearest C = 1, factor 1 (log scale), then the
    smaller C (so a flat inner score keeps the fixed setting rather than an arbitrary grid corner)."""
    best = max(accuracies)
    tied = [i for i, a in enumerate(accuracies) if math.isclose(a, best, rel_tol=0, abs_tol=1e-12)]
    return min(tied, key=lambda i: (abs(math.log10(settings[i][0])) + abs(math.log10(settings[i][1])),
                                    settings[i][0]))


def searched_fold(scorer, data: Bags, folds: np.ndarray, k: int, settings=None) -> dict:
    """One outer fold k: every setting scored by inner CV on the outer training bags, the chosen one refitted on
    them and the test bags scored once; {fold, bags, scores, chosen {C, gamma_factor}, evidence [{C,
    gamma_factor, inner_accuracy}]}."""
    settings = grid() if settings is None else settings
    train = subset_bags(data, np.flatnonzero(folds != k))
    accuracies = [inner_cv_accuracy(scorer, train, c, g) for c, g in settings]
    best = choose(settings, accuracies)
    held = np.flatnonzero(folds == k)
    scores = scorer(train, subset_bags(data, held), C=settings[best][0], gamma_factor=settings[best][1])
    return {"fold": int(k), "bags": held.tolist(), "scores": [float(s) for s in scores],
            "chosen": {"C": settings[best][0], "gamma_factor": settings[best][1]},
            "evidence": [{"C": c, "gamma_factor": g, "inner_accuracy": a} for (c, g), a in zip(settings, accuracies)]}


@dataclasses.dataclass
class SearchRun:
    """rows: one dict per (method, run) of one benchmark, those read back from the results file included."""
    rows: list


def run_search(name: str, runs: int, results, *, methods=tuple(SEARCHED), first_run: int = 0, n_folds: int = 10,
               log=print) -> SearchRun:
    """Runs ``first_run``..``runs``-1 of the protocol on the benchmark ``name`` for each searched method; one row
    {data, method, run, accuracy (%), seconds, n_folds, chosen, grid} per (method, run) appended to ``results``,
    each outer fold to ``<stem>_folds.jsonl`` as it finishes; finished runs and folds (same grid) are reused."""
    unknown = [m for m in methods if m not in SEARCHED]
    if unknown:
        raise ValueError(f"methods: unknown {unknown[0]!r}; choose from {', '.join(map(repr, SEARCHED))}")
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or not 0 <= first_run < runs:
        raise ValueError(f"runs, first_run: expected 0 <= first_run < runs, got {first_run!r}, {runs!r}")
    settings = grid()
    rows = [r for r in read_results(results) if r["data"] == name]
    done = {(r["method"], r["run"]) for r in rows}
    old_folds = [f for f in read_results(folds_path(results)) if f["data"] == name
                 and f["grid"] == [list(s) for s in settings]]
    append, append_fold = row_appender(results), row_appender(folds_path(results))
    data = load_mil_benchmark(name)
    y = np.asarray(data.bag_labels)
    for r, folds in enumerate(protocol_folds(y, runs, n_folds)):
        if r < first_run:
            continue
        for method in methods:
            if (method, r) in done:
                continue
            t0 = time.perf_counter()
            records = {f["fold"]: f for f in old_folds if (f["method"], f["run"]) == (method, r)}
            for k in range(n_folds):
                if k in records:
                    continue
                record = searched_fold(SEARCHED[method], data, folds, k, settings)
                append_fold({"data": name, "method": method, "run": r, "grid": [list(s) for s in settings],
                             **record})
                records[k] = record
                log(f"{name} run {r} fold {k} {method}: C {record['chosen']['C']:g}, gamma x "
                    f"{record['chosen']['gamma_factor']:g}")
            scores = np.zeros(data.n_bags)
            for f in records.values():
                scores[f["bags"]] = f["scores"]
            row = {"data": name, "method": method, "run": r, "accuracy": 100 * float(np.mean((scores > 0) == y)),
                   "seconds": time.perf_counter() - t0, "n_folds": n_folds,
                   "chosen": [records[k]["chosen"] for k in range(n_folds)], "grid": [list(s) for s in settings],
                   "sweeps": None, "selection": "inner 3-fold CV over C x gamma"}
            append(row)
            rows.append(row)
            log(f"{name} run {r} {method}: {row['accuracy']:.1f} % ({row['seconds']:.0f} s)")
    return SearchRun(rows)


def main(argv=None) -> int:
    import argparse
    parser = argparse.ArgumentParser(description="mi-SVM / MI-SVM with C and gamma chosen by inner CV on the "
                                                 "training folds (R x 10-fold CV).")
    parser.add_argument("--data", required=True, choices=("musk1", "musk2", "elephant"))
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--first-run", type=int, default=0)
    parser.add_argument("--methods", default="mi-SVM,MI-SVM", help="comma-separated: mi-SVM, MI-SVM")
    parser.add_argument("--results", default="docs/results/mil_protocol_rows_svm_search.jsonl")
    args = parser.parse_args(argv)
    alias = {"mi-SVM": "mi-SVM (C, gamma by inner CV)", "MI-SVM": "MI-SVM (C, gamma by inner CV)"}
    methods = tuple(alias.get(m.strip(), m.strip()) for m in args.methods.split(",") if m.strip())
    run_search(args.data, args.runs, args.results, methods=methods, first_run=args.first_run,
               log=lambda text: print(text, flush=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
