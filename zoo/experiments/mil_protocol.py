"""MIL benchmarks by the literature's protocol: bag accuracy as the mean (and spread) of R runs of 10-fold
cross-validation, each run with its own stratified folds (``stratified_bag_folds(seed=run)``).

Everything a method chooses is chosen on the outer training bags only; the test bags of a fold are scored once,
by the chosen setting, after the choice.

- Kück's constraint model, its kernel (gaussian, cauchy) and width chosen per outer fold
  (``kueck_fold_selected_scores``) by one of:
  "Kück constraint (hold-out selected)": each setting fitted on a stratified 2/3 of the outer training bags and
  scored by the held-out third's mean log probability of its labels (``kueck04_select.log_score``, a proper
  scoring rule), the best refitted on all outer training bags;
  "Kück constraint (PSIS-LOO selected)": each setting fitted once on all outer training bags and scored by its
  PSIS-LOO expected log predictive density of the training bags' labels (Vehtari, Gelman & Gabry 2017;
  ``arviz.loo`` on the per-draw bag log likelihood), no refit. Measured on Musk1, its Pareto k exceeded 0.7 for
  every setting (a basis function on every training instance lets each bag's own kernels carry it, so
  leaving a bag out moves the posterior too far for importance sampling; 60 of 60 fits, 100 + 100 sweeps):
  kept for the record, not used;
  "Kück constraint (selected)" (``kueck_selected_scores``): inner 3-fold CV then a refit, 3 times the
  selection fits of the hold-out.
  The width grid is spanned, for each outer fold and before any fit, from the distance distribution of its
  standardized training instances (``width_grid``): from half the median nearest-neighbour distance (below it,
  every kernel sees only its own instance) to the 90th percentile of the pairwise distances, log-spaced; so the
  narrow end is not cut at a multiple of the median.
- mi-SVM and MI-SVM (Andrews, Tsochantaridis & Hofmann 2003), run by the zoo with scikit-learn's SVC (RBF,
  gamma = "scale", C = 1, features standardized on the training instances; fixed before any run): the heuristic
  loops of their Fig. 1 (mi-SVM: instance labels of positive bags re-estimated by the SVM's sign, at least one
  positive per positive bag; MI-SVM: one witness per positive bag, the instance of largest margin, starting from
  the bag's mean). Bag score: the largest instance margin. mi-SVM trains on the same instances in every loop, so
  their RBF kernel matrix is computed once per fold (``kernel="precomputed"``: the same SVM, faster).

``run_protocol(name, runs, ...)`` appends one row per (method, run) to a JSON-lines file as it finishes, and for
Kück's model one row per finished fold to a second file, so a killed run keeps what it finished and a rerun
resumes at the next fold; ``summarize_protocol`` (``zoo.leaderboards.document``) gives mean ± sd over runs.
``python -m zoo.experiments.mil_protocol --data musk1 --runs 10 --methods kueck-holdout`` runs it from a shell.
"""
from __future__ import annotations

import dataclasses
import pathlib
import time
import warnings

import numpy as np

from zoo.data import Bags
from zoo.data.mil import load_mil_benchmark, stratified_bag_folds, subset_bags
from zoo.leaderboards.document import summarize_protocol
from zoo.leaderboards.results_io import read_results, row_appender

__all__ = ["ProtocolRun", "width_grid", "protocol_folds", "mi_svm_bag_scores", "MI_svm_bag_scores",
           "bag_log_likelihood", "elpd_loo", "selection_parts", "selection_shapes", "kueck_fold_selected_scores",
           "kueck_selected_scores", "run_protocol", "summarize_protocol", "main", "KERNELS", "KUECK_HOLDOUT",
           "KUECK_LOO", "KUECK_INNER_CV", "FOLD_SELECTED", "CRITERIA"]

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


def _svc(X, y, C: float = 1.0, gamma_factor: float = 1.0):
    """RBF SVC with gamma = gamma_factor x scikit-learn's "scale" (1 / (D Var X) of the instances it is fitted on)."""
    from sklearn.svm import SVC
    gamma = gamma_factor / (X.shape[1] * X.var()) if X.var() > 0 else gamma_factor
    return SVC(C=C, kernel="rbf", gamma=gamma).fit(X, y)


def _rbf(A: np.ndarray, B: np.ndarray, gamma: float) -> np.ndarray:
    """(len(A), len(B)) exp(-gamma |a - b|^2)."""
    sq = np.sum(A * A, 1)[:, None] + np.sum(B * B, 1)[None, :] - 2.0 * A @ B.T
    return np.exp(-gamma * np.maximum(sq, 0.0))


def mi_svm_bag_scores(train: Bags, test: Bags, max_iter: int = 20, C: float = 1.0,
                      gamma_factor: float = 1.0) -> np.ndarray:
    """mi-SVM (Andrews et al. 2003, Sec. 2): (B_test,) bag scores (largest instance margin). Every loop trains on
    all training instances, so the RBF kernel (gamma = gamma_factor x "scale" = gamma_factor / (D Var X), as
    scikit-learn's) is computed once. The defaults are the fixed setting of the protocol's rows."""
    from sklearn.svm import SVC
    X, Xt = _standardized(train.X, train.X), _standardized(test.X, train.X)
    gamma = gamma_factor / (X.shape[1] * X.var()) if X.var() > 0 else gamma_factor
    K = _rbf(X, X, gamma)

    def svc(labels):
        return SVC(C=C, kernel="precomputed").fit(K, labels)
    positive_bag = np.asarray(train.bag_labels)[train.bag_ids] == 1
    y = positive_bag.astype(int)
    model = svc(y)
    for _ in range(max_iter):
        f = model.decision_function(K)
        new = np.where(positive_bag, (f > 0).astype(int), 0)
        for b in np.unique(train.bag_ids[positive_bag]):        # at least one positive instance per positive bag
            members = np.flatnonzero(train.bag_ids == b)
            if not new[members].any():
                new[members[np.argmax(f[members])]] = 1
        if np.array_equal(new, y):
            break
        y = new
        model = svc(y)
    f = model.decision_function(_rbf(Xt, X, gamma))
    return np.array([f[test.bag_ids == b].max() for b in range(test.n_bags)])


def MI_svm_bag_scores(train: Bags, test: Bags, max_iter: int = 20, C: float = 1.0,
                      gamma_factor: float = 1.0) -> np.ndarray:
    """MI-SVM (Andrews et al. 2003, Sec. 3): one witness per positive bag (first its mean, then its instance of
    largest margin) against every negative instance; (B_test,) bag scores (largest instance margin). ``C`` and
    ``gamma_factor`` as in ``mi_svm_bag_scores``."""
    X, Xt = _standardized(train.X, train.X), _standardized(test.X, train.X)
    labels = np.asarray(train.bag_labels)
    negatives = X[labels[train.bag_ids] == 0]
    positive_bags = np.flatnonzero(labels == 1)
    witnesses = np.stack([X[train.bag_ids == b].mean(0) for b in positive_bags])
    chosen = None
    model = None
    for _ in range(max_iter):
        model = _svc(np.vstack([witnesses, negatives]),
                     np.r_[np.ones(len(witnesses), int), np.zeros(len(negatives), int)], C, gamma_factor)
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


def bag_log_likelihood(log_all_negative: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """(S, B) log Pr(y_b | draw s) from (S, B) log Pr(bag b negative | draw s) and the 0/1 labels (B,): the
    negative bags' own values, log(1 - Pr(negative)) for the positive ones (floored where a draw gives a positive
    bag probability below ~1e-300, so the value stays finite)."""
    log_neg = np.asarray(log_all_negative, dtype=np.float64)
    positive = np.asarray(labels) == 1
    log_pos = np.log(-np.expm1(np.minimum(log_neg, -1e-300)))
    return np.where(positive[None, :], log_pos, log_neg)


def elpd_loo(log_lik: np.ndarray) -> tuple[float, float]:
    """(PSIS-LOO expected log predictive density, largest Pareto k) of (S, B) per-draw log likelihoods of B
    observations from one chain (``arviz.loo``, relative efficiency 1)."""
    import arviz as az
    log_lik = np.asarray(log_lik, dtype=np.float64)
    if log_lik.ndim != 2 or log_lik.shape[0] < 2 or not np.all(np.isfinite(log_lik)):
        raise ValueError(f"log_lik: expected finite (S >= 2, B) per-draw log likelihoods, got {log_lik.shape}")
    with warnings.catch_warnings():       # a large Pareto k is reported in the result, not printed per fit
        warnings.simplefilter("ignore")
        result = az.loo(az.from_dict(log_likelihood={"y": log_lik[None]}), reff=1.0)
    return float(result.elpd_loo), float(np.max(np.asarray(result.pareto_k)))


CRITERIA = ("holdout", "psis-loo")


def _finite(score: float) -> float:
    return score if np.isfinite(score) else -np.inf


def selection_parts(data: Bags, folds: np.ndarray, k: int, criterion: str = "holdout") -> tuple[Bags, Bags, Bags]:
    """(outer training bags, bags the selection fits see, bags the selection scores) of outer fold k: for
    "holdout" a stratified 2/3 and the other third of the training bags (``stratified_bag_folds(labels, 3,
    seed=1)``, third 0 held out), for "psis-loo" the training bags twice."""
    train = subset_bags(data, np.flatnonzero(np.asarray(folds) != k))
    if criterion != "holdout":
        return train, train, train
    inner = stratified_bag_folds(train.bag_labels, 3, seed=1)
    return train, subset_bags(train, np.flatnonzero(inner != 0)), subset_bags(train, np.flatnonzero(inner == 0))


def selection_shapes(data: Bags, fold_sets, criterion: str, max_active: int, basis: int | None):
    """(selection fits' shape, refits' shape): the largest of every outer fold of every folds array of
    ``fold_sets`` (``kueck04_cv.job_shape``, without building a kernel matrix)."""
    from zoo.inference.mil.padding import PaddedShape
    from zoo.papers.kueck04_cv import job_shape
    spec = _spec(KERNELS[0], 1.0, max_active, basis)        # the shapes depend on the data and basis only
    select, refit = [], []
    for folds in fold_sets:
        for k in np.unique(folds):
            train, fit_on, _ = selection_parts(data, folds, int(k), criterion)
            select.append(job_shape(spec, fit_on))
            refit.append(job_shape(spec, train))
    return tuple(PaddedShape(*np.max(np.array(shapes), axis=0).tolist()) for shapes in (select, refit))


def kueck_fold_selected_scores(data: Bags, folds: np.ndarray, *, criterion: str = "holdout", sweeps: int = 300,
                               refit_sweeps: int = 1000, max_active: int = 100, basis: int | None = None,
                               n_widths: int = 6, kernels=KERNELS, seed: int = 0, skip=(), on_fold=None,
                               max_draws: int = 500, pad_to=None, jump_tries: int | None = None
                               ) -> tuple[np.ndarray, list]:
    """Kück's constraint model with kernel and width chosen per outer fold on its training bags only, one outer
    fold at a time (each finished fold handed to ``on_fold``, so a long run can be resumed with ``skip``).

    For each outer fold k of ``folds`` (B,) not in ``skip``, over ``kernels`` x ``width_grid(training
    instances, n_widths)``:
    - ``criterion="holdout"``: each setting is fitted (``sweeps`` warm-up + ``sweeps`` kept) on a stratified
      2/3 of the training bags (``stratified_bag_folds(labels, 3, seed=1) != 0``) and scored by the held-out
      third's mean log probability of its labels (``kueck04_select.log_score``); the best setting is refitted on
      all training bags (``refit_sweeps`` + ``refit_sweeps``);
    - ``criterion="psis-loo"``: each setting is fitted on all training bags and scored by ``elpd_loo`` of their
      labels; the best fit is kept (no refit). Its Pareto k is recorded: above 0.7 the estimate is unreliable.
    The test bags are read only after the choice, by the chosen fit (posterior mean Pr(bag positive)). Seeds:
    ``seed + 100 k + setting`` (the refit ``seed + 100 k + 99``). All folds' selection fits share one padded
    shape and compilation, and all refits another; ``pad_to`` (``selection_shapes`` of several runs' folds)
    widens both shapes so that further runs reuse them; ``jump_tries`` as in ``kueck04_cv.iter_fit_padded``.
    Returns (scores (B,), nan for skipped folds; one record per fitted fold {fold, bags (test bag indices),
    scores, chosen, evidence (per setting)})."""
    from zoo.experiments.kueck04_select import log_score
    from zoo.papers.kueck04_cv import draw_log_all_negative, fold_scores, iter_fit_padded
    if criterion not in CRITERIA:
        raise ValueError(f"criterion: expected one of {CRITERIA}, got {criterion!r}")
    folds = np.asarray(folds)
    outer = [int(k) for k in np.unique(folds) if int(k) not in {int(j) for j in skip}]
    plans = {}
    for k in outer:                    # every fold's grid and parts fixed before any fit
        train, fit_on, score_on = selection_parts(data, folds, k, criterion)
        grid = [(kernel, float(w)) for kernel in kernels for w in width_grid(train.X, n_widths)]
        plans[k] = (train, grid, fit_on, score_on)
    if pad_to is None:
        pad_to = selection_shapes(data, [folds], criterion, max_active, basis)
    like, refit_like = [pad_to[0]], [pad_to[1]]
    scores = np.full(data.n_bags, np.nan)
    records = []
    for k in outer:
        train, grid, fit_on, score_on = plans[k]
        jobs = [(_spec(kernel, width, max_active, basis), fit_on, seed + 100 * k + s)
                for s, (kernel, width) in enumerate(grid)]
        evidence, best, best_fit = [], -1, None
        for (spec, _, _), fit in zip(jobs, iter_fit_padded(jobs, num_warmup=sweeps, num_samples=sweeps,
                                                           pad_to=like, jump_tries=jump_tries)):
            log_neg = draw_log_all_negative(spec, fit, score_on, max_draws)
            entry = {"kernel": spec.options["kernel"], "width": spec.options["width"],
                     "capacity_hits": fit.capacity_hits, "seconds": fit.seconds}
            if criterion == "holdout":
                entry["score"] = log_score(1.0 - np.mean(np.exp(log_neg), axis=0), np.asarray(score_on.bag_labels))
            else:
                entry["score"], entry["pareto_k_max"] = elpd_loo(bag_log_likelihood(log_neg, score_on.bag_labels))
            evidence.append(entry)
            # only the best fit so far is held; a failed estimate (nan: PSIS-LOO with infinite weights) never wins
            if best < 0 or _finite(entry["score"]) > _finite(evidence[best]["score"]):
                best, best_fit = len(evidence) - 1, (spec, fit)
        spec, fit = best_fit
        if criterion == "holdout":
            fit = next(iter_fit_padded([(spec, train, seed + 100 * k + 99)], num_warmup=refit_sweeps,
                                       num_samples=refit_sweeps, pad_to=refit_like, jump_tries=jump_tries))
        held = np.flatnonzero(folds == k)
        scores[held] = fold_scores(spec, fit, subset_bags(data, held), max_draws)
        record = {"fold": k, "bags": held.tolist(), "scores": scores[held].tolist(),
                  "chosen": {"kernel": grid[best][0], "width": grid[best][1], "grid_position": best % n_widths,
                             "n_widths": n_widths},
                  "evidence": evidence, "refit_seconds": fit.seconds if criterion == "holdout" else 0.0}
        records.append(record)
        if on_fold is not None:
            on_fold(record)
    return scores, records


METHODS = {"mi-SVM": (mi_svm_bag_scores, 0.0), "MI-SVM": (MI_svm_bag_scores, 0.0)}
KUECK_HOLDOUT = "Kück constraint (hold-out selected)"
KUECK_LOO = "Kück constraint (PSIS-LOO selected)"
KUECK_INNER_CV = "Kück constraint (selected)"
#: Kück's model with its setting chosen one outer fold at a time (resumable), and the criterion of each
FOLD_SELECTED = {KUECK_HOLDOUT: "holdout", KUECK_LOO: "psis-loo"}


@dataclasses.dataclass
class ProtocolRun:
    """rows: one dict per (method, run) of one benchmark, those read back from the results file included."""
    rows: list


def folds_path(results) -> pathlib.Path:
    """The per-fold log beside a results file: ``runs.jsonl`` -> ``runs_folds.jsonl`` (shared by the SVM search)."""
    path = pathlib.Path(results)
    return path.with_name(path.stem + "_folds" + path.suffix)


def run_protocol(name: str, runs: int, results, *, methods=("mi-SVM", "MI-SVM", KUECK_HOLDOUT), n_folds: int = 10,
                 first_run: int = 0, inner_sweeps: int = 300, outer_sweeps: int = 1000, sweeps: int = 300,
                 refit_sweeps: int = 1000, n_widths: int = 6, max_active: int = 100, basis: int | None = None,
                 jump_tries: int | None = None, log=print) -> ProtocolRun:
    """Runs ``first_run``..``runs``-1 of ``n_folds``-fold CV on the benchmark ``name``; one row {data, method,
    run, accuracy (%), seconds, n_folds, chosen, sweeps, ...} per (method, run) appended to ``results`` (JSON
    lines); rows already there are reused. Kück's model chosen per fold (``FOLD_SELECTED``: ``sweeps``,
    ``refit_sweeps``, ``n_widths``, ``max_active``, ``basis``; ``kueck_fold_selected_scores``) also appends each
    finished fold to ``<results stem>_folds.jsonl`` and resumes from the folds there with the same settings;
    under inner 3-fold CV (``inner_sweeps``, ``outer_sweeps``) a run is all or nothing."""
    known = (*METHODS, *FOLD_SELECTED, KUECK_INNER_CV)
    unknown = [m for m in methods if m not in known]
    if unknown:
        raise ValueError(f"methods: unknown {unknown[0]!r}; choose from {', '.join(map(repr, known))}")
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or not 0 <= first_run < runs:
        raise ValueError(f"runs, first_run: expected 0 <= first_run < runs, got {first_run!r}, {runs!r}")
    rows = [r for r in read_results(results) if r["data"] == name]
    done = {(r["method"], r["run"]) for r in rows}
    append = row_appender(results)
    fold_rows = [r for r in read_results(folds_path(results)) if r["data"] == name]
    append_fold = row_appender(folds_path(results))
    data = load_mil_benchmark(name)
    y = np.asarray(data.bag_labels)
    all_folds = protocol_folds(y, runs, n_folds)
    from zoo.papers.kueck04 import JUMP_TRIES as paper_jumps
    # Kück's fits of every run padded to one shape (one compilation per process, not two per run)
    pad_to = {criterion: selection_shapes(data, all_folds, criterion, max_active, basis)
              for criterion in {FOLD_SELECTED[m] for m in methods if m in FOLD_SELECTED}}
    for r, folds in enumerate(all_folds):
        if r < first_run:
            continue
        for method in methods:
            if (method, r) in done:
                continue
            t0 = time.perf_counter()
            extra = {}
            if method in METHODS:
                fn, threshold = METHODS[method]
                scores = np.zeros(data.n_bags)
                for k in range(n_folds):
                    scores[folds == k] = fn(subset_bags(data, np.flatnonzero(folds != k)),
                                            subset_bags(data, np.flatnonzero(folds == k)))
                chosen = []
            elif method in FOLD_SELECTED:
                criterion = FOLD_SELECTED[method]
                setting = {"criterion": criterion, "sweeps": sweeps, "refit_sweeps": refit_sweeps,
                           "n_widths": n_widths, "max_active": max_active, "basis": basis,
                           "jump_tries": paper_jumps if jump_tries is None else int(jump_tries)}
                # folds written before the jumps existed (no "jump_tries") ran without them
                old = {f["fold"]: f for f in fold_rows if (f["method"], f["run"]) == (method, r)
                       and {"jump_tries": 0, **f["setting"]} == setting}

                def keep(record, r=r, method=method, setting=setting):
                    append_fold({"data": name, "method": method, "run": r, "setting": setting, **record})
                    log(f"{name} run {r} fold {record['fold']}: {record['chosen']['kernel']} width "
                        f"{record['chosen']['width']:.2f} (grid position {record['chosen']['grid_position']})")
                scores, records = kueck_fold_selected_scores(
                    data, folds, criterion=criterion, sweeps=sweeps, refit_sweeps=refit_sweeps,
                    max_active=max_active, basis=basis, n_widths=n_widths, seed=10_000 * r, skip=old, on_fold=keep,
                    pad_to=pad_to[criterion], jump_tries=setting["jump_tries"])
                records = sorted(list(old.values()) + records, key=lambda f: f["fold"])
                for f in old.values():
                    scores[f["bags"]] = f["scores"]
                chosen = [f["chosen"] for f in records]
                threshold = 0.5
                extra = {"selection": criterion, "sweeps": [sweeps, refit_sweeps], "max_active": max_active,
                         "basis": basis, "jump_tries": setting["jump_tries"],
                         "fit_seconds": sum(e["seconds"] for f in records for e in f["evidence"])
                         + sum(f.get("refit_seconds", 0.0) for f in records)}
            else:
                scores, chosen = kueck_selected_scores(data, folds, inner_sweeps=inner_sweeps,
                                                       outer_sweeps=outer_sweeps, basis=basis)
                threshold = 0.5
                extra = {"selection": "inner 3-fold CV", "sweeps": [inner_sweeps, outer_sweeps]}
            accuracy = 100 * float(np.mean((scores > threshold) == y))
            row = {"data": name, "method": method, "run": r, "accuracy": accuracy,
                   "seconds": time.perf_counter() - t0, "n_folds": n_folds, "chosen": chosen,
                   "sweeps": None, **extra}
            append(row)
            rows.append(row)
            log(f"{name} run {r} {method}: {row['accuracy']:.1f} % ({row['seconds']:.0f} s)")
    return ProtocolRun(rows)


def main(argv=None) -> int:
    import argparse
    parser = argparse.ArgumentParser(description="MIL benchmarks by the literature's protocol (R x 10-fold CV).")
    parser.add_argument("--data", required=True, choices=("musk1", "musk2", "elephant"))
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--first-run", type=int, default=0)
    parser.add_argument("--methods", default="mi-SVM,MI-SVM,kueck-holdout",
                        help="comma-separated: mi-SVM, MI-SVM, kueck-holdout, kueck-loo, kueck-inner-cv")
    parser.add_argument("--results", default="docs/results/mil_protocol_rows.jsonl")
    parser.add_argument("--sweeps", type=int, default=300, help="warm-up and kept sweeps per selection fit")
    parser.add_argument("--refit-sweeps", type=int, default=1000, help="warm-up and kept sweeps per refit")
    parser.add_argument("--widths", type=int, default=6)
    parser.add_argument("--max-active", type=int, default=100)
    parser.add_argument("--basis", type=int, default=None)
    parser.add_argument("--jump-tries", type=int, default=None,
                        help="Z-collapsed jumps per sweep (default: the papers'; 0 continues runs begun without them)")
    args = parser.parse_args(argv)
    alias = {"kueck-holdout": KUECK_HOLDOUT, "kueck-loo": KUECK_LOO, "kueck-inner-cv": KUECK_INNER_CV}
    methods = tuple(alias.get(m.strip(), m.strip()) for m in args.methods.split(",") if m.strip())
    run_protocol(args.data, args.runs, args.results, methods=methods, first_run=args.first_run,
                 sweeps=args.sweeps, refit_sweeps=args.refit_sweeps, n_widths=args.widths,
                 max_active=args.max_active, basis=args.basis, jump_tries=args.jump_tries,
                 log=lambda text: print(text, flush=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
