"""Reproduce Ross (2003), MCVQ (thesis Ch. 3 and 4): ``zoo reproduce ross03 [--fast]``; the benchmark
``zoo bench mcvq`` is in ``zoo.experiments.bench.ross03``.

Synthetic (always): shapes, Fig. 3.1 and Table 3.1, and the class extensions on shapes labelled by the
triangle's position (``run_*`` return dataclasses, ``*_tables`` and ``plot_*`` report them). Real data (full mode,
when present under the data root; ``zoo.experiments.ross03_real``): CBCL faces (Sec. 3.1.3),
MovieLens ratings (Sec. 3.2, in place of EachMovie), 20 Newsgroups (Sec. 3.3, in place of NIPS) and Olivetti faces
(Ch. 4, in place of AR faces). Settings are fixed in this file (restarts, iterations, splits and seeds) and were
not tuned on the reported test numbers; a restart is chosen by its final training free energy only.
"""
from __future__ import annotations

import dataclasses
import pathlib
import time

import numpy as np

from zoo.data import Matrix
from zoo.data.ross03 import MatrixDataset, shapes_split
from zoo.metrics import rms
from zoo.experiments._mcvq_parts import (TITLES, baseline_rms, description_length_bits, fit_mcvq, floor_text,
                                         mcvq_parts, plot_parts, plot_reconstructions, report_table,
                                         select_sigma_floor)
from zoo.experiments.paper_claims import ross03_claims

__all__ = ["reproduce", "description_length_bits", "baseline_rms"]

#: Table 3.1 of the thesis: (model, setting, test RMS).
TABLE_3_1 = [("MCVQ", (3, 12), 0.21), ("PCA", 12, 0.22), ("MCVQ", (2, 18), 0.26), ("MCVQ", (4, 9), 0.26),
             ("MCVQ", (8, 4), 0.34), ("MCVQ", (6, 6), 0.35), ("NMF", 12, 0.35), ("VQ", 38, 0.49)]
TABLE_TITLE_3_1 = TITLES["table_3_1_shapes_rms"]


# --- shapes (Sec. 3.1.2) ---------------------------------------------------------------------------------------
@dataclasses.dataclass
class ShapesResult:
    """Sec. 3.1.2 on the shapes data. rows: Table 3.1 (model and setting, description length, test RMS zoo, thesis);
    rms: "model setting" -> test RMS; band_purity: share of each shape's 3-column band owned by its majority VQ
    (3 x 5 model); sigma_floor and floor_scores (validation RMS per factor of the pooled sd); chains, iters;
    parts: (g (D, K), mu (D, K, J)) of the 3 x 5 model; top: (test images with all shapes near the top (n, D),
    their reconstructions (n, D)); seconds: the fits."""

    rows: list
    rms: dict
    band_purity: list
    sigma_floor: float
    floor_scores: dict
    chains: int
    iters: int
    parts: tuple
    top: tuple
    seconds: float


@dataclasses.dataclass
class ShapesClassesResult:
    """Ch. 4 on shapes: class_names; tri_vq, the VQ owning the triangle band; b (2, J), its class priors;
    accuracy_bound / accuracy_monte_carlo on the test images; cluster_table (class, images in cluster 1, 2)."""

    class_names: list
    tri_vq: int
    b: np.ndarray
    accuracy_bound: float
    accuracy_monte_carlo: float
    cluster_table: list


def run_shapes(fast: bool) -> ShapesResult:
    """Fig. 3.1 and Table 3.1: sigma_floor chosen on training images, the 3 x 5 model's parts, and the test RMS of
    MCVQ, PCA, NMF and VQ at the thesis' settings."""
    X_train, X_test, pos_train, pos_test = shapes_split(n_train=100, seed=0)
    chains, iters = (3, 20) if fast else (8, 60)
    t0 = time.perf_counter()
    floor, floor_scores = select_sigma_floor(X_train, 3, 12, chains=chains, max_iter=iters)
    fit = fit_mcvq(Matrix(X_train), 3, 5, chains=chains, max_iter=iters, sigma_floor=floor)
    # the all-near-the-top test images never appear in training (Fig. 3.1c)
    top = np.flatnonzero((pos_test < 3).all(1))
    pred_top = fit.predict(Matrix(X_test[top]))
    owner = np.argmax(fit.state.g(), axis=1).reshape(11, 11)
    bands = [owner[:, c:c + 3] for c in (0, 4, 8)]
    band_purity = [float(np.mean(b == np.bincount(b.ravel()).argmax())) for b in bands]
    rows, results = [], {}
    n_test = X_test.shape[0]
    for kind, setting, paper in TABLE_3_1:
        if kind == "MCVQ":
            K, J = setting
            f = fit_mcvq(Matrix(X_train), K, J, chains=chains, max_iter=iters, progress_bar=False,
                         sigma_floor=floor)
            value = rms(f.predict(Matrix(X_test)).reconstruction, X_test)
            label, V = f"{K} VQs, {J} states", K * J
            dl = description_length_bits("MCVQ", V, 121, n_test, K=K)
        else:
            value = baseline_rms(kind, setting, X_train, X_test)
            label, V = f"{setting} {'components' if kind == 'PCA' else 'vectors'}", setting
            dl = description_length_bits(kind, V, 121, n_test)
        results[f"{kind} {label}"] = value
        # the first cell names the row uniquely (the claims table quotes rows by it)
        rows.append((f"{kind} {label}", f"{dl:.2e}", float(value), float(paper)))
    return ShapesResult(rows, results, band_purity, floor, floor_scores, chains, iters, mcvq_parts(fit),
                        (X_test[top], np.asarray(pred_top.reconstruction)), time.perf_counter() - t0)


def shapes_tables(res: ShapesResult, fast: bool) -> list:
    """Table 3.1 beside the thesis, with the settings and the gaps in its note."""
    return [report_table("table_3_1_shapes_rms", ("model and setting", "description length (bits)", "test RMS (zoo)",
                                            "test RMS (thesis)"), res.rows,
                   note=f"100 training / 629 test images; MCVQ: {res.chains} restarts x {res.iters} iterations, the "
                        f"restart with the lowest training free energy; sigma_floor {res.sigma_floor:.3f} chosen by "
                        f"validation RMS on 20 of the training images (3 x 12 model; validation RMS by factor of the "
                        f"pooled sd: {floor_text(res.floor_scores)}). Fig. 3.1 3x5 model: share of each shape's "
                        f"3-column band owned by its majority VQ = {np.round(res.band_purity, 2).tolist()} (1 = one "
                        f"VQ per shape). Time {res.seconds:.0f} s."
                        + _table_3_1_gaps(res.rows, fast, res.chains, res.iters))]


def plot_shapes(res: ShapesResult, out: pathlib.Path) -> list:
    """Fig. 3.1b (the parts of the 3 x 5 model) and Fig. 3.1c (reconstructions of unseen layouts)."""
    return [plot_parts(*res.parts, (11, 11), out / "fig_3_1_shapes_parts.png",
                       "Fig. 3.1b: MCVQ 3 VQs x 5 states on shapes"),
            plot_reconstructions(*res.top, (11, 11), out / "fig_3_1c_top_reconstruction.png",
                                 "Fig. 3.1c: test images with all shapes near the top")]


def run_shapes_classes(fast: bool, sigma_floor: float | None = None) -> ShapesClassesResult:
    """Ch. 4 on synthetic data: label = triangle in the top (0) or bottom (1) half; supervised class priors of the
    triangle's VQ (as Table 4.1), both classifiers, and a 2-cluster table (as Table 4.2)."""
    X_train, X_test, pos_train, pos_test = shapes_split(n_train=100, seed=0)
    y_train, y_test = (pos_train[:, 1] >= 4).astype(int), (pos_test[:, 1] >= 4).astype(int)
    chains, iters = (3, 20) if fast else (8, 60)
    data = MatrixDataset(Matrix(X_train), labels=y_train, class_names=["triangle top", "triangle bottom"])
    fit = fit_mcvq(data, 3, 5, chains=chains, max_iter=iters, model="ross03.mcvq_supervised",
                   monte_carlo_samples=1000, sigma_floor=sigma_floor)
    pred = fit.predict(Matrix(X_test))
    acc_bound = float(np.mean(pred.class_proba.argmax(1) == y_test))
    acc_mc = float(np.mean(pred.class_proba_monte_carlo.argmax(1) == y_test))
    owner = np.argmax(fit.state.g(), axis=1).reshape(11, 11)
    tri_vq = int(np.bincount(owner[:, 4:7].ravel()).argmax())
    b = np.asarray(fit.state.params().b)[:, tri_vq]          # (2, J)
    clu = fit_mcvq(Matrix(X_train), 3, 5, chains=chains, max_iter=iters, model="ross03.mcvq_clustered",
                   model_options={"n_clusters": 2}, sigma_floor=sigma_floor)
    z = clu.predict(Matrix(X_train)).cluster_proba.argmax(1)
    table = [(name, *[int(np.sum((y_train == n) & (z == c))) for c in range(2)])
             for n, name in enumerate(data.class_names)]
    return ShapesClassesResult(data.class_names, tri_vq, b, acc_bound, acc_mc, table)


def shapes_classes_tables(res: ShapesClassesResult) -> list:
    """Table 4.1 (class priors of the triangle's VQ, both classifiers' accuracy) and Table 4.2 (clusters)."""
    b = res.b
    return [report_table("table_4_1_shapes_class_priors", ["state"] + res.class_names,
                   [(j, f"{b[0, j]:.2f}", f"{b[1, j]:.2f}") for j in range(b.shape[1])],
                   note=f"Class-conditional priors b_nkj of the VQ owning the triangle band (VQ {res.tri_vq}). Test "
                        f"accuracy: variational bound {res.accuracy_bound:.3f}, Monte Carlo eq. 4.3 (1000 samples) "
                        f"{res.accuracy_monte_carlo:.3f}."),
            report_table("table_4_2_shapes_clusters", ("class", "cluster 1", "cluster 2"), res.cluster_table,
                   note="Training images per class and cluster (argmax z); no cluster is told the labels.")]


#: the largest |zoo - thesis| test RMS on shapes that counts as agreement (the thesis gives two decimals and its
#: training draw is not the zoo's)
TABLE_3_1_TOLERANCE = 0.05


def pca_gap_evidence(n_components: int = 12, draws: int = 20) -> tuple[float, float, float]:
    """Why the zoo's PCA row sits far above the thesis' 0.22, measured on the zoo's images: (the test RMS floor of
    any ``n_components``-dimensional linear reconstruction of the 729 shapes images, i.e. PCA fitted on all of
    them, test images included; the lowest and highest PCA test RMS over ``draws`` seeded 100-image training
    draws). Milliseconds: SVDs of 729 x 121."""
    from zoo.data.ross03 import shapes_images
    X, _ = shapes_images()
    centred = X - X.mean(0)
    variances = np.linalg.svd(centred, compute_uv=False) ** 2 / X.shape[0]
    floor = float(np.sqrt(variances[n_components:].sum() / X.shape[1]))
    spread = [baseline_rms("PCA", n_components, *shapes_split(100, seed=seed)[:2]) for seed in range(draws)]
    return floor, min(spread), max(spread)


def _table_3_1_why(fast: bool, chains: int, iters: int) -> str:
    """What differs from the thesis' Table 3.1 runs (the explanation of a gap), with the PCA gap measured."""
    from zoo.data.ross03 import SHAPE_MASKS
    from zoo.reports import format_number
    floor, low, high = pca_gap_evidence()
    pixels = ", ".join(str(int(mask.sum())) for mask in SHAPE_MASKS.values())
    why = (f"not the training draw: over 20 seeded draws of the 100 training images the zoo's PCA gives "
           f"{format_number(low)}-{format_number(high)}, and no 12-component linear reconstruction of the zoo's "
           f"images can go below {format_number(floor)} (PCA fitted on all 729, test images included), so the "
           "thesis' 0.22 cannot come from these images: its shapes images must carry less variance per pixel (it "
           f"gives neither its shape masks nor its background value; the zoo's are 3 x 3 masks of {pixels} pixels "
           "at +1 on -1)")
    if fast:
        why += f"; --fast runs MCVQ with {chains} restarts x {iters} iterations (full: 8 x 60)"
    return why


def _table_3_1_gaps(rows, fast: bool, chains: int, iters: int, threshold: float = TABLE_3_1_TOLERANCE) -> str:
    """One sentence naming the Table 3.1 rows more than ``threshold`` from the thesis, and what differs."""
    from zoo.reports import format_number
    far = [f"{r[0]} ({format_number(r[2])} vs {format_number(r[3])})" for r in rows if abs(r[2] - r[3]) > threshold]
    if not far:
        return ""
    return f" Gaps over {threshold} to the thesis: {', '.join(far)}; {_table_3_1_why(fast, chains, iters)}."


def reproduce(out_dir: pathlib.Path, fast: bool = False):
    """Shapes experiments (always) and the real-data experiments (full mode, when the data are present); returns
    a PaperReport (figures in ``out_dir``)."""
    from zoo.reports import Figure, PaperReport, Section, print_section

    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    report = PaperReport("ross03", "Ross (2003): multiple cause vector quantization (MCVQ), thesis Ch. 3 and 4")

    def section(title, run):
        t0 = time.perf_counter()
        results, items = run()
        items = sorted(items, key=lambda item: isinstance(item, Figure))      # tables first, then figures
        report.add(Section(title, items, seconds=time.perf_counter() - t0))
        return results

    t0 = time.perf_counter()
    shapes = run_shapes(fast)
    print(f"[ross03] shapes: sigma_floor {shapes.sigma_floor:.3f} chosen on a validation split of the training "
          f"images (validation RMS by factor of the pooled sd: {floor_text(shapes.floor_scores)})")
    print_section(report.add(Section("Shapes (Sec. 3.1.2, Fig. 3.1, Table 3.1)",
                                     shapes_tables(shapes, fast) + plot_shapes(shapes, out_dir),
                                     seconds=time.perf_counter() - t0)))
    report.claims = ross03_claims(shapes.rows, TABLE_TITLE_3_1, TABLE_3_1_TOLERANCE,
                                  _table_3_1_why(fast, shapes.chains, shapes.iters))
    t0 = time.perf_counter()
    classes = run_shapes_classes(fast, shapes.sigma_floor)
    print_section(report.add(Section("Shapes with classes (Ch. 4 on synthetic data)", shapes_classes_tables(classes),
                                     seconds=time.perf_counter() - t0)))
    titles = {"faces_cbcl": "CBCL faces (Sec. 3.1.3)", "movielens": "MovieLens ratings (Sec. 3.2, for EachMovie)",
              "newsgroups": "20 Newsgroups (Sec. 3.3, for NIPS)", "olivetti": "Olivetti faces (Ch. 4, for AR faces)"}
    from zoo.experiments.ross03_real import REAL_EXPERIMENTS
    for name, run in REAL_EXPERIMENTS.items():
        if fast:
            print(f"[ross03] {name}: real-data experiment skipped in --fast mode")
            continue
        try:
            section(titles[name], lambda run=run: run(out_dir))
        except FileNotFoundError as err:
            print(f"[ross03] {name}: skipped, data missing ({err})")
            report.notes.append(f"{titles[name]} not run: data missing ({err})")
    if fast:
        report.notes.append("--fast: the real-data experiments (CBCL faces, MovieLens, 20 Newsgroups, Olivetti) run "
                            "only in full mode; MCVQ uses 3 restarts x 20 iterations (full: 8 x 60)")
    return report
