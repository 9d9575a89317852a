"""Reproduce Carbonetto et al. (2003): Sec. 2 (feature weighting in a mixture), Sec. 5.2 (translation model on
synthetic data), Sec. 5.3 on real annotated regions when available. ``zoo bench gmm`` is in
``zoo.experiments.bench.carbonetto03``.

All settings are fixed here before anything is run on the reported data; seeds make every number reproducible.
"""
from __future__ import annotations

import dataclasses
import pathlib
import time

import numpy as np
from tqdm.auto import tqdm

import zoo
from zoo.experiments.paper_claims import carbonetto03_claims
from zoo.data.carbonetto03 import SEC2_VARIANCES, mixture_data_sec2, translation_data_sec52
from zoo.metrics import empirical_word_proba, matched_accuracy, pr_n, pr_sampled

SYMMETRIC = "ML, all 6 features, symmetric start (all means = data mean)"
PAPER_SEC2 = {"ML, 3 informative features": 99.5, "ML, all 6 features": 37.5, "MAP shrinkage, all 6 features": None,
              SYMMETRIC: None}
PAPER_TAU_SEC52 = [1.1, 1.1, 1.0, 0.3, 0.2, 0.2, 0.3, 0.3, 0.3]
# Hyperparameters the paper states for Sec. 5 (a = -1, b = 1e-5); Sec. 2 states none, so the same are used.
A_PAPER, B_PAPER = -1.0, 1e-5


# ------------------------------------------------------------------------------------------------ Sec. 2
@dataclasses.dataclass
class Sec2Result:
    """accuracy: fit -> {"best": [accuracy of the best restart per data set], "any": [mean over restarts]};
    tau (n_datasets, 6): the MAP fits' shrinkage scales sqrt(tau2)."""

    accuracy: dict
    tau: np.ndarray


@dataclasses.dataclass
class Sec52Result:
    """rms: fit -> {"relevant": [RMS error of the 3 relevant features' means], "all": [of every feature]}, one
    per data set; tau (n_datasets, 9): the MAP full fits' sqrt(tau2)."""

    rms: dict
    tau: np.ndarray


def run_sec2(n_datasets: int, n_restarts: int, seed: int = 0) -> Sec2Result:
    """Training-set classification accuracy (best relabelling) of the three fits, over ``n_datasets`` draws.

    Each fit: EM from ``n_restarts`` random initializations (data points as means); the restart with the best
    objective is scored ("best") and the mean over all restarts ("any restart") shows the sensitivity to the
    initialization. Variances known (paper Sec. 2).
    """
    fits = {
        "ML, 3 informative features": ("ml_em", slice(0, 3)),
        "ML, all 6 features": ("ml_em", slice(0, 6)),
        "MAP shrinkage, all 6 features": ("map_em", slice(0, 6)),
    }
    out = {name: {"best": [], "any": []} for name in fits}
    tau = []
    for d in tqdm(range(n_datasets), desc="Sec. 2 data sets"):
        X, z = mixture_data_sec2(n_points=200, seed=seed + d)
        for name, (method, cols) in fits.items():
            spec = zoo.model("carbonetto03.shrinkage_mixture", n_components=3, covariance="diag",
                             known_covariance=SEC2_VARIANCES[cols], a=A_PAPER, b=B_PAPER)
            fit = zoo.fit(spec, X[:, cols], method=method, seed=seed + d, num_chains=n_restarts,
                          progress_bar=False)
            mu = fit.idata.posterior["mu"].values[:, 0]
            weights = fit.idata.posterior["lambda"].values[:, 0]
            accs = []
            for chain in range(mu.shape[0]):
                params = fit.state["params"]._replace(means=mu[chain] - fit.state["mu_star"], weights=weights[chain])
                labels = _labels(params, X[:, cols] - fit.state["mu_star"], SEC2_VARIANCES[cols])
                accs.append(matched_accuracy(z, labels))
            out[name]["best"].append(accs[fit.state["best_chain"]])
            out[name]["any"].append(float(np.mean(accs)))
            if method == "map_em":
                tau.append(np.sqrt(fit.state["params"].tau2))
        # A symmetric start (every mean at the data mean) is a fixed point of EM: all points keep the same
        # responsibilities, so the accuracy is the share of the largest class (~38 %). This is our explanation
        # of the paper's 37.5 % = 75/200 for ML on all six features (not a setting we recommend).
        spec = zoo.model("carbonetto03.shrinkage_mixture", n_components=3, covariance="diag",
                         known_covariance=SEC2_VARIANCES)
        fit = zoo.fit(spec, X, method="ml_em", seed=0, num_chains=1, init_means=np.tile(X.mean(0), (3, 1)),
                      progress_bar=False)
        acc = matched_accuracy(z, fit.predict(X).labels())
        out.setdefault(SYMMETRIC, {"best": [], "any": []})
        out[SYMMETRIC]["best"].append(acc)
        out[SYMMETRIC]["any"].append(acc)
    return Sec2Result(accuracy=out, tau=np.array(tau))


def _labels(params, Xc, variances):
    from zoo.inference.mixture import em
    import jax.numpy as jnp
    p = em.Params(jnp.asarray(params.weights), jnp.asarray(params.means),
                  jnp.broadcast_to(jnp.asarray(variances), params.means.shape), jnp.asarray(params.tau2))
    resp, _ = em.e_step(jnp.asarray(Xc), p, jnp.ones((Xc.shape[0], 3), bool), em.EMConfig(diagonal=True))
    return np.asarray(resp).argmax(axis=1)


def _sklearn_sec2(n_datasets, seed):
    """scikit-learn GaussianMixture (ML-EM, diagonal, variances learned, 5 inits) on all 6 features: mean
    accuracy over the data sets."""
    from sklearn.mixture import GaussianMixture

    accs = []
    for d in range(n_datasets):
        X, z = mixture_data_sec2(n_points=200, seed=seed + d)
        gm = GaussianMixture(3, covariance_type="diag", n_init=5, random_state=seed + d).fit(X)
        accs.append(matched_accuracy(z, gm.predict(X)))
    return float(np.mean(accs))


# ---------------------------------------------------------------------------------------------- Sec. 5.2
def run_sec52(n_datasets: int, n_images: int, n_restarts: int, seed: int = 100) -> Sec52Result:
    """RMS error of the estimated word means over ``n_datasets`` random data sets (paper: 19), and tau_hat."""
    fits = {
        "ML, first 3 features": ("ml_em", "full", slice(0, 3)),
        "ML, all 9 features": ("ml_em", "full", slice(0, 9)),
        "MAP full, all 9 (alpha=11)": ("map_em", "full", slice(0, 9)),
        "MAP diag, all 9 (alpha=11)": ("map_em", "diag", slice(0, 9)),
    }
    rms = {name: {"relevant": [], "all": []} for name in fits}
    tau = []
    for d in tqdm(range(n_datasets), desc="Sec. 5.2 data sets"):
        train, true_means = translation_data_sec52(n_images=n_images, seed=seed + d)
        for name, (method, covariance, cols) in fits.items():
            data = zoo.data.AnnotatedRegions(train.X[:, cols], train.image_ids, train.keywords, train.vocabulary,
                                             region_labels=train.region_labels)
            spec = zoo.model("carbonetto03.translation", covariance=covariance, a=A_PAPER, b=B_PAPER, alpha=11.0,
                              standardize=False)   # the paper's raw Sec. 5.2 features
            fit = zoo.fit(spec, data, method=method, seed=seed + d, num_chains=n_restarts, progress_bar=False)
            est = fit.state["params"].means + fit.state["mu_star"]
            err = est - true_means[:, cols]
            rms[name]["relevant"].append(float(np.sqrt(np.mean(err[:, :3] ** 2))))
            rms[name]["all"].append(float(np.sqrt(np.mean(err ** 2))))
            if name.startswith("MAP full"):
                tau.append(np.sqrt(fit.state["params"].tau2))
    return Sec52Result(rms=rms, tau=np.array(tau))


# ---------------------------------------------------------------------------------------------- Sec. 5.3
@dataclasses.dataclass
class Sec53Result:
    """rows: model -> {"PR-1", "PR-3", "PR-sampled"} (and "tau_hat" (10,) for MAP diag), the empirical word
    frequency baseline included."""

    rows: dict


def run_sec53(n_restarts: int, seed: int = 0, n_images: tuple[int, int] | None = None,
              segmentation: str = "ncut") -> Sec53Result | None:
    """The four models of Sec. 5.3 on MSRC-v2 regions (carbonetto03 features); None when the data are absent.
    ``n_images``: (training, test) images drawn at random (``default_rng(seed)``) for a small run (--fast);
    None: the whole split."""
    from zoo.data.splits import subset_images
    try:
        train = zoo.load_dataset("msrc_v2", split="train", features="carbonetto03", segmentation=segmentation)
        test = zoo.load_dataset("msrc_v2", split="test", features="carbonetto03", segmentation=segmentation)
    except (FileNotFoundError, ValueError) as err:
        print(f"  Sec. 5.3 on real regions skipped: {err}")
        return None
    if n_images is not None:
        rng = np.random.default_rng(seed)
        train, test = (subset_images(d, np.sort(rng.choice(d.n_images, min(n, d.n_images), replace=False)))
                       for d, n in zip((train, test), n_images))
    colour = slice(4, 10)  # the paper's "relevant" choice: Lab mean and std
    models = {
        "ML diag, all features": ("ml_em", "diag", slice(None)),
        "ML diag, colour features": ("ml_em", "diag", colour),
        "MAP diag (alpha=13)": ("map_em", "diag", slice(None)),
        "MAP full (alpha=13)": ("map_em", "full", slice(None)),
    }
    rows = {}
    base = empirical_word_proba(train.keyword_matrix(), test.X.shape[0])
    rows["empirical word frequency"] = _scores(base, test)
    for name, (method, covariance, cols) in models.items():
        sub = lambda d: zoo.data.AnnotatedRegions(d.X[:, cols], d.image_ids, d.keywords, d.vocabulary,
                                                  region_labels=d.region_labels)
        alpha = max(13.0, sub(train).X.shape[1] + 2.0)
        spec = zoo.model("carbonetto03.translation", covariance=covariance, a=A_PAPER, b=B_PAPER, alpha=alpha,
                          standardize=False)   # the paper's raw Sec. 5.2 features
        fit = zoo.fit(spec, sub(train), method=method, seed=seed, num_chains=n_restarts, progress_bar=False)
        rows[name] = _scores(fit.predict(sub(test)).word_proba, test)
        if name.startswith("MAP diag"):
            rows[name]["tau_hat"] = np.sqrt(fit.state["params"].tau2)
    return Sec53Result(rows)


def _scores(proba, data):
    return {"PR-1": pr_n(proba, data.region_labels, data.image_ids, 1),
            "PR-3": pr_n(proba, data.region_labels, data.image_ids, 3),
            "PR-sampled": pr_sampled(proba, data.region_labels, data.image_ids)}


# ------------------------------------------------------------------------------------------------ report
SHORT_SEC2 = {"ML, 3 informative features": "ML 3", "ML, all 6 features": "ML 6",
              "MAP shrinkage, all 6 features": "MAP 6", SYMMETRIC: "ML 6 sym."}
TAU_PAPER_SEC53 = [0.4, 0.1, 0.0, 0.9, 1.8, 4.9, 2.4, 2.2, 3.2, 3.4]
SEC53_FEATURES = ["area", "x", "y", "boundary/area", "L mean", "a mean", "b mean", "L std", "a std", "b std"]


def sec2_tables(res2: Sec2Result, sklearn_accuracy: float | None, n_datasets: int, n_restarts: int) -> list:
    """Sec. 2: accuracy of each fit beside the paper, and tau_hat of the MAP fit."""
    from zoo.reports import Table

    rows = [[name, 100 * float(np.mean(acc["best"])), 100 * float(np.mean(acc["any"])), PAPER_SEC2[name]]
            for name, acc in res2.accuracy.items()]
    rows.append(["scikit-learn GaussianMixture (diag, variances learned), all 6",
                 None if sklearn_accuracy is None else 100 * sklearn_accuracy, None, None])
    ml6 = 100 * float(np.mean(res2.accuracy["ML, all 6 features"]["best"]))
    sym = 100 * float(np.mean(res2.accuracy[SYMMETRIC]["best"]))
    accuracy = Table(
        "Sec. 2: training-set classification accuracy %",
        ["fit", "zoo, best-objective restart", "zoo, mean over restarts", "paper"], rows,
        note=f"{n_datasets} data sets of 200 points, {n_restarts} EM restarts from data points as means; accuracy "
             f"under the best relabelling. Gap on 'ML, all 6 features' (zoo {ml6:.1f} vs paper 37.5): a symmetric "
             f"start (every mean at the data mean) is a fixed point of EM and scores the largest class's share "
             f"(zoo {sym:.1f}), our explanation of the paper's 37.5 = 75/200; the zoo's ML 6 row starts from data "
             f"points.")
    tau = res2.tau.mean(0)
    tau_table = Table("Sec. 2: tau_hat of the MAP shrinkage fit (mean over data sets)",
                      ["", *(f"feature {j + 1}" for j in range(tau.size))], [["zoo", *map(float, tau)]],
                      note="The paper states no tau_hat for Sec. 2; features 1-3 are informative, 4-6 are noise.")
    return [accuracy, tau_table]


def sec52_tables(res5: Sec52Result, n_datasets: int, n_images: int, n_restarts: int) -> list:
    """Sec. 5.2: RMS error of the word means per fit, and tau_hat beside the paper."""
    from zoo.reports import Table

    rows = [[name, f"{np.mean(v['relevant']):.3f} ± {np.std(v['relevant']):.3f}", float(np.mean(v["all"]))]
            for name, v in res5.rms.items()]
    rms = Table("Sec. 5.2: RMS error of the estimated word means",
                ["fit", "RMS, 3 relevant features (mean ± sd)", "RMS, all features used"], rows,
                note=f"{n_datasets} data sets of {n_images} images, {n_restarts} restarts (paper: 19 data sets). The "
                     f"paper shows these errors only as a plot (Fig. 5); its claims are checked against this "
                     f"table in the claims table."
                     + (f" With {n_datasets} data sets (--fast) the means are noisy: compare them with the sd."
                        if n_datasets < 19 else ""))
    tau = res5.tau.mean(0)
    floor = float(np.sqrt(B_PAPER / (A_PAPER + 3 / 2 + 1)))
    tau_table = Table("Sec. 5.2: tau_hat of the MAP full fit (mean over data sets)",
                      ["", *(f"feature {j + 1}" for j in range(tau.size))],
                      [["zoo", *map(float, tau)], ["paper", *PAPER_TAU_SEC52]],
                      note="Features 1-3 are word-specific, 4-9 shared: tau_hat should be large for 1-3 and small "
                           f"for 4-9. Gap on 4-9: the zoo's {floor:.3f} is the floor of the tau update, "
                           f"sqrt(b / (a + n_c / 2 + 1)) with a = {A_PAPER:g}, b = {B_PAPER:g}, n_c = 3 words, "
                           "reached when the word means coincide on a feature; the paper's 0.2-0.3 means its "
                           "estimated means stayed apart there (the paper does not say when its EM stopped).")
    return [rms, tau_table]


def sec53_tables(result: Sec53Result) -> list:
    """Sec. 5.3 on MSRC-v2: PR errors of the four models and the baseline, and tau_hat beside the paper's Corel."""
    from zoo.reports import Table

    real = result.rows
    metrics = ("PR-1", "PR-3", "PR-sampled")
    errors = Table("Sec. 5.3: region-labelling errors on MSRC-v2 test regions (lower is better)",
                   ["model", *metrics], [[name, *(float(s[m]) for m in metrics)] for name, s in real.items()],
                   note="The paper used Corel (not available) and reports these errors only in Figs. 6-7; MSRC-v2 "
                        "with the carbonetto03 features stands in, so no number is compared one to one.")
    tau = real["MAP diag (alpha=13)"]["tau_hat"]
    tau_table = Table("Sec. 5.3: tau_hat of the MAP diag fit", ["", *SEC53_FEATURES],
                      [["zoo (MSRC-v2)", *map(float, tau)], ["paper (Corel)", *TAU_PAPER_SEC53]],
                      note="Different images (MSRC-v2 vs Corel) and segmentations: only the pattern (which features "
                           "are kept) is comparable.")
    return [errors, tau_table]


def plot_sec2(res2: Sec2Result, path: pathlib.Path):
    """Box plot of the Sec. 2 accuracies (best-objective restart) per fit, with the paper's numbers."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from zoo.reports import Figure, save_figure

    names = list(res2.accuracy)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.boxplot([100 * np.array(res2.accuracy[n]["best"]) for n in names])
    ax.set_xticks(range(1, len(names) + 1), [SHORT_SEC2[n] for n in names])
    for i, n in enumerate(names, start=1):
        if PAPER_SEC2[n] is not None:
            ax.plot(i, PAPER_SEC2[n], marker="*", markersize=14, color="tab:red", linestyle="none",
                    label="paper" if i == 1 else None)
    ax.set_xlabel("fit (features used)")
    ax.set_ylabel("training accuracy %")
    ax.set_title("Sec. 2: accuracy over data sets")
    ax.legend(loc="lower left")
    save_figure(fig, path)
    return Figure("Sec. 2 accuracy", path,
                  "Boxes: zoo over data sets (best-objective restart). Stars: the paper. 'ML 6 sym.': ML from the "
                  "symmetric start.")


def plot_sec52(res5: Sec52Result, path: pathlib.Path):
    """Sec. 5.2: RMS errors per fit (box plot) and tau_hat beside the paper (bars)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from zoo.reports import Figure, save_figure

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    names = list(res5.rms)
    axes[0].boxplot([res5.rms[n]["relevant"] for n in names])
    axes[0].set_xticks(range(1, len(names) + 1), ["ML 3", "ML 9", "MAP full", "MAP diag"])
    axes[0].set_xlabel("fit")
    axes[0].set_ylabel("RMS error of the means (3 relevant features)")
    axes[0].set_title("Sec. 5.2 (paper Fig. 5)")
    k = np.arange(1, 10)
    axes[1].bar(k - 0.2, res5.tau.mean(0), 0.4, label="zoo (MAP full)")
    axes[1].bar(k + 0.2, PAPER_TAU_SEC52, 0.4, label="paper")
    axes[1].set_xticks(k)
    axes[1].set_xlabel("feature")
    axes[1].set_ylabel("tau_hat")
    axes[1].set_title("Sec. 5.2: tau_hat")
    axes[1].legend()
    save_figure(fig, path)
    return Figure("Sec. 5.2 errors and tau_hat", path,
                  "Left: RMS error of the word means over data sets. Right: tau_hat (MAP full, mean over data sets) "
                  "beside the paper's.")


def reproduce(out_dir: pathlib.Path, fast: bool = False):
    """Sec. 2, Sec. 5.2 and (full mode) Sec. 5.3; returns a ``PaperReport`` (figures in ``out_dir``)."""
    from zoo.reports import PaperReport, Section, print_section

    out_dir = pathlib.Path(out_dir)
    report = PaperReport("carbonetto03", "Carbonetto, de Freitas, Gustafson & Thompson (2003): Bayesian feature "
                                         "weighting for unsupervised learning")
    n2, r2 = (5, 5) if fast else (50, 10)
    t0 = time.perf_counter()
    res2 = run_sec2(n_datasets=n2, n_restarts=r2)
    sk = _sklearn_sec2(n2, seed=0)
    report.add(Section("Sec. 2: feature weighting in a Gaussian mixture",
                       [*sec2_tables(res2, sk, n2, r2), plot_sec2(res2, out_dir / "carbonetto03_sec2.png")],
                       seconds=time.perf_counter() - t0))

    n5, images, r5 = (4, 60, 3) if fast else (19, 100, 5)
    t0 = time.perf_counter()
    res5 = run_sec52(n_datasets=n5, n_images=images, n_restarts=r5)
    report.add(Section("Sec. 5.2: translation model on synthetic data",
                       [*sec52_tables(res5, n5, images, r5), plot_sec52(res5, out_dir / "carbonetto03_sec52.png")],
                       seconds=time.perf_counter() - t0))

    from zoo.experiments._subsets import fast_segmentation
    sub53, r53 = ((100, 50), 2) if fast else (None, 5)
    segmentation = fast_segmentation() if fast else "ncut"
    if fast:
        report.notes.append("--fast: fewer data sets and restarts (Sec. 2: "
                            f"{n2} x {r2}, Sec. 5.2: {n5} x {r5}; full: 50 x 10 and 19 x 5); Sec. 5.3 on a random "
                            f"{sub53[0]} training and {sub53[1]} test images of MSRC-v2 ({segmentation} regions) "
                            f"with {r53} restarts (full: the whole split, NCut regions, 5 restarts)")
    report.settings = {"seeds": "Sec. 2: 0..n-1, Sec. 5.2: 100..100+n-1, Sec. 5.3: 0",
                       "data sets x restarts": f"Sec. 2 {n2} x {r2}, Sec. 5.2 {n5} x {r5}"}
    t0 = time.perf_counter()
    real = run_sec53(n_restarts=r53, n_images=sub53, segmentation=segmentation)
    if real is None:
        report.notes.append("Sec. 5.3 not run: the MSRC-v2 regions are not available")
    else:
        title = "Sec. 5.3: translation model on MSRC-v2 regions" + (" (subset, --fast)" if fast else "")
        report.add(Section(title, sec53_tables(real), seconds=time.perf_counter() - t0))
    report.claims = carbonetto03_claims(res2, res5, fast, PAPER_SEC2, SYMMETRIC)
    for section in report.sections:
        print_section(section)
    return report
