"""MIL benchmarks by the literature's protocol: bag accuracy as the mean (and spread) of R runs of 10-fold
cross-validation, each run with its own stratified folds (``stratified_bag_folds(seed=run)``).

Everything a method chooses is chosen on the outer training bags only:

- Kück's constraint model: kernel (gaussian, cauchy) and width by an inner 3-fold cross-validation of the outer
  training bags (held-out log score, ``kueck04_select.log_score``). The width grid is spanned, for each outer fold
  and before any fit, from the distance distribution of its standardized training instances (``width_grid``):
  from half the median nearest-neighbour distance (below it, every kernel sees only its own instance) to the 90th
  percentile of the pairwise distances, log-spaced; so the narrow end is not cut at a multiple of the median.
- mi-SVM and MI-SVM (Andrews, Tsochantaridis & Hofmann 2003), run by the zoo with scikit-learn's SVC (RBF,
  gamma = "scale", C = 1, features standardized on the training instances; fixed before any run): the heuristic
  loops of their Fig. 1 (mi-SVM: instance labels of positive bags re-estimated by the SVM's sign, at least one
  positive per positive bag; MI-SVM: one witness per positive bag, the instance of largest margin, starting from
  the bag's mean). Bag score: the largest instance margin.

``run_protocol(name, runs, ...)`` appends one row per (method, run) to a JSON-lines file as it finishes, so a
killed run keeps what it finished; ``summarize_protocol`` (``zoo.leaderboards.document``) gives mean ± sd over
runs.
"""
from __future__ import annotations

import dataclasses
import json
import pathlib
import time

import numpy as np

from zoo.data import Bags
from zoo.data.mil import load_mil_benchmark, stratified_bag_folds, subset_bags
from zoo.leaderboards.document import summarize_protocol

__all__ = ["ProtocolRun", "width_grid", "protocol_folds", "mi_svm_bag_scores", "MI_svm_bag_scores",
           "kueck_selected_scores", "run_protocol", "summarize_protocol", "KERNELS"]

KERNELS = ("gaussian", "cauchy")


def _standardized(X: np.ndarray, reference: np.ndarray) -> np.ndarray:
    scale = reference.std(0)
    return (X - reference.mean(0)) / np.where(scale > 0, scale, 1.0)


def width_grid(train_X: np.ndarray, n: int = 6, max_points: int = 1000, seed: int = 0) -> np.ndarray:
    """``n`` kernel widths, log-spaced from half the median nearest-neighbour distance to the 90th percentile
    of the pairwise distances of the standardized training instances (a random ``max_points`` of them)."""
    X = _standardized(np.asarray(train_X, dtype=np.float64), np.asarray(train_X, dtype=np.float64))
    if X.shape[0] > max_points:
        X = X[np.random.default_rng(seed).choice(X.shape[0], max_points, replace=False)]
    sq = np.sum(X * X, 1)[:, None] + np.sum(X * X, 1)[None, :] - 2 * X @ X.T
    D = np.sqrt(np.maximum(sq, 0.0))
    np.fill_diagonal(D, np.inf)
    nearest = D.min(axis=1)
    nearest = nearest[np.isfinite(nearest) & (nearest > 0)]
    pairs = D[np.triu_indices(D.shape[0], 1)]
    pairs = pairs[pairs > 0]
    if nearest.size == 0 or pairs.size == 0:
        raise ValueError("train_X: need at least two distinct instances to span a width grid")
    low, high = 0.5 * float(np.median(nearest)), float(np.quantile(pairs, 0.9))
    return np.geomspace(low, max(high, 2 * low), n)


def protocol_folds(bag_labels: np.ndarray, runs: int, n_folds: int = 10) -> list[np.ndarray]:
    """The folds of each run: stratified by bag label, run r with seed r."""
    return [stratified_bag_folds(bag_labels, n_folds, seed=r) for r in range(runs)]


def _svc(X, y):
    from sklearn.svm import SVC
    return SVC(C=1.0, kernel="rbf", gamma="scale").fit(X, y)


def mi_svm_bag_scores(train: Bags, test: Bags, max_iter: int = 20) -> np.ndarray:
    """mi-SVM (Andrews et al. 2003, Sec. 2): (B_test,) bag scores (largest instance margin)."""
    X, Xt = _standardized(train.X, train.X), _standardized(test.X, train.X)
    positive_bag = np.asarray(train.bag_labels)[train.bag_ids] == 1
    y = positive_bag.astype(int)
    model = _svc(X, y)
    for _ in range(max_iter):
        f = model.decision_function(X)
        new = np.where(positive_bag, (f > 0).astype(int), 0)
        for b in np.unique(train.bag_ids[positive_bag]):        # at least one positive instance per positive bag
            members = np.flatnonzero(train.bag_ids == b)
            if not new[members].any():
                new[members[np.argmax(f[members])]] = 1
        if np.array_equal(new, y):
            break
        y = new
        model = _svc(X, y)
    f = model.decision_function(Xt)
    return np.array([f[test.bag_ids == b].max() for b in range(test.n_bags)])


def MI_svm_bag_scores(train: Bags, test: Bags, max_iter: int = 20) -> np.ndarray:
    """MI-SVM (Andrews et al. 2003, Sec. 3): one witness per positive bag (first its mean, then its instance of
    largest margin) against every negative instance; (B_test,) bag scores (largest instance margin)."""
    X, Xt = _standardized(train.X, train.X), _standardized(test.X, train.X)
    labels = np.asarray(train.bag_labels)
    negatives = X[labels[train.bag_ids] == 0]
    positive_bags = np.flatnonzero(labels == 1)
    witnesses = np.stack([X[train.bag_ids == b].mean(0) for b in positive_bags])
    chosen = None
    model = None
    for _ in range(max_iter):
        model = _svc(np.vstack([witnesses, negatives]),
                     np.r_[np.ones(len(witnesses), int), np.zeros(len(negatives), int)])
        f = model.decision_function(X)
        new = np.array([np.flatnonzero(train.bag_ids == b)[np.argmax(f[train.bag_ids == b])] for b in positive_bags])
        if chosen is not None and np.array_equal(new, chosen):
            break
        chosen, witnesses = new, X[new]
    f = model.decision_function(Xt)
    return np.array([f[test.bag_ids == b].max() for b in range(test.n_bags)])


def _spec(kernel: str, width: float, max_active: int, basis: int | None):
    import zoo
    return zoo.model("kueck04.constraint", kernel=kernel, width=float(width), standardize=True,
                     max_active=max_active, basis=basis)


def kueck_selected_scores(data: Bags, folds: np.ndarray, *, n_inner: int = 3, inner_sweeps: int = 300,
                          outer_sweeps: int = 1000, max_active: int = 100, basis: int | None = None,
                          n_widths: int = 6) -> tuple[np.ndarray, list]:
    """Kück's constraint model with kernel and width chosen per outer fold by inner CV on its training bags over
    ``KERNELS`` x ``width_grid(training instances)``; (out-of-fold Pr(bag positive) (B,), chosen per fold)."""
    from zoo.experiments.kueck04_select import log_score
    from zoo.papers.kueck04_cv import fit_padded, fold_scores
    outer = np.unique(folds)
    jobs, where, grids = [], [], {}
    for k in outer:
        train = subset_bags(data, np.flatnonzero(folds != k))
        grids[k] = [(kernel, float(w)) for kernel in KERNELS for w in width_grid(train.X, n_widths)]
        inner = stratified_bag_folds(train.bag_labels, n_inner, seed=1)
        for j in range(n_inner):
            part = subset_bags(train, np.flatnonzero(inner != j))
            for s, (kernel, width) in enumerate(grids[k]):
                jobs.append((_spec(kernel, width, max_active, basis), part, 1000 * int(k) + j))
                where.append((k, j, s, np.flatnonzero(inner == j)))
    fits = fit_padded(jobs, num_warmup=inner_sweeps, num_samples=inner_sweeps)
    table = {k: np.zeros((n_inner, len(grids[k]))) for k in outer}
    for (spec, _, _), fit, (k, j, s, held) in zip(jobs, fits, where):
        test = subset_bags(subset_bags(data, np.flatnonzero(folds != k)), held)
        table[k][j, s] = log_score(fold_scores(spec, fit, test), test.bag_labels)
    chosen, refits = [], []
    for k in outer:
        s = int(np.argmax(table[k].mean(0)))
        chosen.append({"kernel": grids[k][s][0], "width": grids[k][s][1], "grid_position": s % n_widths,
                       "n_widths": n_widths})
        refits.append((_spec(*grids[k][s], max_active, basis), subset_bags(data, np.flatnonzero(folds != k)),
                       int(k)))
    outer_fits = fit_padded(refits, num_warmup=outer_sweeps, num_samples=outer_sweeps)
    scores = np.zeros(data.n_bags)
    for k, (spec, _, _), fit in zip(outer, refits, outer_fits):
        scores[folds == k] = fold_scores(spec, fit, subset_bags(data, np.flatnonzero(folds == k)))
    return scores, chosen


METHODS = {"mi-SVM": (mi_svm_bag_scores, 0.0), "MI-SVM": (MI_svm_bag_scores, 0.0)}


@dataclasses.dataclass
class ProtocolRun:
    """rows: one dict per (method, run) of one benchmark, those read back from the results file included."""
    rows: list


def run_protocol(name: str, runs: int, results, *, methods=("mi-SVM", "MI-SVM", "Kück constraint (selected)"),
                 n_folds: int = 10, inner_sweeps: int = 300, outer_sweeps: int = 1000, basis: int | None = None,
                 log=print) -> ProtocolRun:
    """Runs 0..runs-1 of ``n_folds``-fold CV on the benchmark ``name``; one row {data, method, run, accuracy
    (%), seconds, protocol, chosen} per (method, run) appended to ``results`` (JSON lines); rows already there
    are reused."""
    path = pathlib.Path(results)
    path.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    rows = []
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                break
            if row["data"] == name:
                done.add((row["method"], row["run"]))
                rows.append(row)
    data = load_mil_benchmark(name)
    y = np.asarray(data.bag_labels)
    for r, folds in enumerate(protocol_folds(y, runs, n_folds)):
        for method in methods:
            if (method, r) in done:
                continue
            t0 = time.perf_counter()
            chosen = []
            if method in METHODS:
                fn, threshold = METHODS[method]
                scores = np.zeros(data.n_bags)
                for k in range(n_folds):
                    scores[folds == k] = fn(subset_bags(data, np.flatnonzero(folds != k)),
                                            subset_bags(data, np.flatnonzero(folds == k)))
            else:
                scores, chosen = kueck_selected_scores(data, folds, inner_sweeps=inner_sweeps,
                                                       outer_sweeps=outer_sweeps, basis=basis)
                threshold = 0.5
            accuracy = 100 * float(np.mean((scores > threshold) == y))
            row = {"data": name, "method": method, "run": r, "accuracy": accuracy,
                   "seconds": time.perf_counter() - t0, "n_folds": n_folds, "chosen": chosen,
                   "sweeps": [inner_sweeps, outer_sweeps] if chosen else None}
            with path.open("a") as f:
                f.write(json.dumps(row) + "\n")
            rows.append(row)
            log(f"{name} run {r} {method}: {row['accuracy']:.1f} % ({row['seconds']:.0f} s)")
    return ProtocolRun(rows)
