"""Ross (2003) on real data (``zoo reproduce ross03`` in full mode, when the data are present): CBCL faces
(Sec. 3.1.3), MovieLens ratings (Sec. 3.2, in place of EachMovie), 20 Newsgroups (Sec. 3.3, in place of NIPS) and
Olivetti faces (Ch. 4, in place of AR faces).

Each experiment is run / report / plot: ``run_<name>()`` loads the data, fits and returns a dataclass of numbers;
``<name>_tables(run)`` and ``plot_<name>(run, out)`` turn it into Tables and Figures; ``<name>_experiment(out)``
(the entries of ``REAL_EXPERIMENTS``, called by ``zoo.experiments.ross03.reproduce``) chains the three and returns
(run, report items).
"""
from __future__ import annotations

import dataclasses
import pathlib

import numpy as np

import zoo
from zoo.data import Matrix
from zoo.data.splits import split_indices
from zoo.experiments._mcvq_parts import (add_table, baseline_rms, description_length_bits, fit_mcvq, floor_text,
                                         mcvq_parts, plot_parts, plot_reconstructions, select_sigma_floor)
from zoo.metrics import rms

__all__ = ["REAL_EXPERIMENTS", "FacesCBCLRun", "MovieLensRun", "NewsgroupsRun", "OlivettiRun", "run_faces_cbcl",
           "run_movielens", "run_newsgroups", "run_olivetti", "faces_cbcl_tables", "movielens_tables",
           "newsgroups_tables", "olivetti_tables", "plot_faces_cbcl", "plot_olivetti", "faces_cbcl_experiment",
           "movielens_experiment", "newsgroups_experiment", "olivetti_experiment"]


# ------------------------------------------------------------------------------------------------- CBCL faces
@dataclasses.dataclass
class FacesCBCLRun:
    """Sec. 3.1.3 on CBCL faces: test RMS of MCVQ 6 x 12 and of PCA / NMF / VQ at the same description length."""
    sigma_floor: float
    floor_scores: dict              # sigma_floor factor -> validation RMS
    n_test: int
    description_length: float       # bits, MCVQ 6 x 12
    rms: dict                       # "<kind> <size>" -> test RMS, in the order of ``rows``
    rows: list                      # (kind, size, test RMS, thesis' RMS)
    g: np.ndarray                   # (D, K) VQ ownership
    mu: np.ndarray                  # (D, K, J) state means
    X_test: np.ndarray              # (n_test, D)
    reconstruction: np.ndarray      # (n_test, D)


def run_faces_cbcl() -> FacesCBCLRun:
    """6 VQs x 12 states on 2000 CBCL faces, 15 EM iterations; test RMS beside PCA/NMF/VQ whose sizes give the
    same description length as the MCVQ model (64-bit reals)."""
    X = zoo.load_dataset("faces_cbcl").matrix.values
    tr, te = split_indices(X.shape[0], 2000)
    X_train, X_test = X[tr], X[te]
    floor, floor_scores = select_sigma_floor(X_train, 6, 12, chains=2, max_iter=15)
    fit = fit_mcvq(Matrix(X_train), 6, 12, chains=4, max_iter=15, sigma_floor=floor)
    pred = fit.predict(Matrix(X_test))
    g, mu = mcvq_parts(fit)
    D, n_test = X.shape[1], X_test.shape[0]
    dl = description_length_bits("MCVQ", 72, D, n_test, K=6)
    v_pca = int(min(dl // (64 * (D + n_test)), D, X_train.shape[0]))
    v_vq = int(dl // (128 * D))
    results = {"MCVQ 6x12": rms(pred.reconstruction, X_test)}
    rows = []
    for kind, V, paper in (("PCA", v_pca, 0.12), ("NMF", v_pca, 0.20), ("MCVQ", 72, 0.23), ("VQ", v_vq, 0.28)):
        value = results["MCVQ 6x12"] if kind == "MCVQ" else baseline_rms(kind, V, X_train, X_test)
        results.setdefault(f"{kind} {V}", value)
        rows.append((kind, V, value, paper))
    return FacesCBCLRun(floor, floor_scores, n_test, dl, results, rows, np.asarray(g), np.asarray(mu), X_test,
                        np.asarray(pred.reconstruction))


def faces_cbcl_tables(run: FacesCBCLRun) -> list:
    rows = [(kind, "6 VQs x 12 states" if kind == "MCVQ" else f"{V} {'vectors' if kind == 'VQ' else 'components'}",
             f"{value:.3f}", f"{paper:.2f}") for kind, V, value, paper in run.rows]
    items = []
    add_table(items, "table_faces_cbcl_rms", ("model", "setting", "test RMS (zoo)", "test RMS (thesis)"), rows,
              note=f"2000 training / {run.n_test} test faces (the thesis: 1800 / 629), pixels in [-1, 1]; matched "
                   f"description length {run.description_length:.2e} bits; MCVQ 4 restarts x 15 iterations, "
                   f"sigma_floor {run.sigma_floor:.3f} chosen on a validation fifth of the training faces "
                   f"({floor_text(run.floor_scores)}).")
    return items


def plot_faces_cbcl(run: FacesCBCLRun, out: pathlib.Path) -> list:
    return [plot_parts(run.g, run.mu, (19, 19), out / "fig_faces_parts.png",
                       "Fig. 3.2 analogue: MCVQ 6 x 12 on CBCL faces"),
            plot_reconstructions(run.X_test, run.reconstruction, (19, 19),
                                 out / "fig_3_3_faces_reconstruction.png", "Fig. 3.3: CBCL test faces")]


# --------------------------------------------------------------------------------------------------- MovieLens
def _masked_nmf(X, M, rank, n_iter, rng, H=None):
    """NMF on observed entries only (multiplicative updates of ||M * (X - W H)||^2); with H given only W is fitted."""
    W = rng.uniform(0.1, 1.0, size=(X.shape[0], rank))
    fixed = H is not None
    H = rng.uniform(0.1, 1.0, size=(rank, X.shape[1])) if H is None else H
    MX = M * X
    for _ in range(n_iter):
        W *= (MX @ H.T) / ((M * (W @ H)) @ H.T + 1e-12)
        if not fixed:
            H *= (W.T @ MX) / (W.T @ (M * (W @ H)) + 1e-12)
    return W, H


@dataclasses.dataclass
class MovieLensRun:
    """Sec. 3.2 on MovieLens: per number of ratings shown, the test users, held-out ratings and the MAE of MCVQ
    8 x 6, item means and masked NMF (rank 8)."""
    rows: list                      # (ratings shown, test users, held-out ratings, MAE MCVQ, item means, NMF)

    def mae(self) -> dict:
        """ratings shown -> {"mcvq", "item_mean", "nmf"}: MAE."""
        return {r[0]: dict(zip(("mcvq", "item_mean", "nmf"), r[3:])) for r in self.rows}


def run_movielens() -> MovieLensRun:
    """8 VQs x 6 states on 80% of the users; each test user shows n ratings, the rest are held out."""
    data = zoo.load_dataset("movielens_latest_small_2016")
    V, Mk = data.matrix.values, data.matrix.mask
    tr, te = split_indices(V.shape[0], int(0.8 * V.shape[0]))
    fit = fit_mcvq(Matrix(V[tr], Mk[tr]), 8, 6, chains=4, max_iter=30)
    item_mean = (V[tr] * Mk[tr]).sum(0) / np.maximum(Mk[tr].sum(0), 1)
    rng = np.random.default_rng(0)
    _, H = _masked_nmf(V[tr], Mk[tr].astype(float), 8, 300, rng)
    rows = []
    for n_obs in (2, 5, 10, 20, 50):
        users = [u for u in te if Mk[u].sum() > n_obs]
        shown = np.zeros((len(users), V.shape[1]), dtype=bool)
        for i, u in enumerate(users):
            shown[i, rng.choice(np.flatnonzero(Mk[u]), size=n_obs, replace=False)] = True
        held = Mk[users] & ~shown
        truth = V[users][held]
        mcvq = np.clip(fit.predict(Matrix(V[users], shown)).reconstruction, 0.5, 5.0)[held]
        W, _ = _masked_nmf(V[users], shown.astype(float), 8, 300, rng, H=H)
        nmf = np.clip(W @ H, 0.5, 5.0)[held]
        maes = [float(np.mean(np.abs(p - truth))) for p in (mcvq, np.broadcast_to(item_mean, held.shape)[held], nmf)]
        rows.append((n_obs, len(users), int(held.sum()), *maes))
    return MovieLensRun(rows)


def movielens_tables(run: MovieLensRun) -> list:
    items = []
    add_table(items, "fig_3_5_movielens_mae", ("ratings shown", "test users", "held-out ratings", "MAE MCVQ 8x6",
                                               "MAE item means", "MAE masked NMF (rank 8)"),
              [(*r[:3], *[f"{m:.3f}" for m in r[3:]]) for r in run.rows],
              note="MovieLens ml-latest-small (movies with >= 50 ratings, users with >= 20 of them), ratings "
                   "0.5-5; the thesis used EachMovie (1-6) and the aspect model (not implemented here), and "
                   "gives its comparison only as a plot.")
    return items


# ----------------------------------------------------------------------------------------------- 20 Newsgroups
@dataclasses.dataclass
class NewsgroupsRun:
    """Sec. 3.3 on 20 Newsgroups: per VQ, the number of words it owns (argmax g) and its top 12 words by g."""
    words_owned: list               # (K,) ints
    top_words: list                 # (K,) lists of up to 12 words

    @property
    def words_per_vq(self) -> dict:
        return {k: ", ".join(words) for k, words in enumerate(self.top_words)}


def run_newsgroups() -> NewsgroupsRun:
    """16242 documents x 100 words, documents normalised to the same number of words, 8 VQs x 8 states,
    15 iterations."""
    data = zoo.load_dataset("newsgroups_20news_w100")
    X = data.matrix.values
    X = X / X.sum(1, keepdims=True) * X.sum(1).mean()
    fit = fit_mcvq(Matrix(X), 8, 8, chains=2, max_iter=15)
    g = np.asarray(fit.state.g())
    owner = g.argmax(1)
    words = np.asarray(data.column_names)
    return NewsgroupsRun([int((owner == k).sum()) for k in range(8)],
                         [list(words[owner == k][np.argsort(-g[owner == k, k])][:12]) for k in range(8)])


def newsgroups_tables(run: NewsgroupsRun) -> list:
    items = []
    add_table(items, "fig_3_6_newsgroups_vq_words", ("VQ", "words owned", "words (by g)"),
              [(k, n, run.words_per_vq[k]) for k, n in enumerate(run.words_owned)],
              note="The thesis used the NIPS corpus (14,265 words, 1740 papers), not available here.")
    return items


# ---------------------------------------------------------------------------------------------- Olivetti faces
@dataclasses.dataclass
class OlivettiRun:
    """Ch. 4 on Olivetti faces: supervised MCVQ accuracy (bound and eq. 4.3), one VQ's class priors, faces
    sampled from class priors and a clustering of 5 people's images."""
    accuracy: list                  # (K, J, accuracy eq. 4.3, accuracy by the bound, thesis)
    vq: int                         # the VQ whose class priors differ most among persons 0-4 (15 x 10 model)
    class_priors: np.ndarray        # (5, J) its priors b_nkj for persons 0-4
    samples: np.ndarray             # (6, 32, 32) faces from the priors of persons 0-4 and the 0+1 hybrid
    cluster_table: list             # (person, count in cluster 1..5) for persons 0-4


def run_olivetti() -> OlivettiRun:
    """Supervised MCVQ with K x J totalling 150 states (as the thesis), 6 training / 4 test images per person,
    accuracy by the variational bound and by eq. 4.3 (1000 samples); class priors of one VQ (as Table 4.1);
    samples from class and hybrid priors (Fig. 4.3); a clustering of 5 people's images (as Table 4.2)."""
    data = zoo.load_dataset("faces_olivetti")
    X, y = data.matrix.values, data.labels
    within = np.arange(400) % 10
    rng = np.random.default_rng(0)
    order = np.argsort(rng.uniform(size=(40, 10)), axis=1).ravel() + (np.arange(400) // 10) * 10
    train = np.sort(order[within < 6])
    test = np.setdiff1d(np.arange(400), train)
    accuracy, fits = [], {}
    for K, J, paper in ((6, 25, 0.61), (15, 10, 0.60), (25, 6, 0.63)):
        fit = fit_mcvq(data.subset(train), K, J, chains=2, max_iter=30, model="ross03.mcvq_supervised",
                       monte_carlo_samples=1000)
        pred = fit.predict(Matrix(X[test]))
        acc_b = float(np.mean(pred.class_proba.argmax(1) == y[test]))
        acc_mc = float(np.mean(pred.class_proba_monte_carlo.argmax(1) == y[test]))
        fits[(K, J)] = fit
        accuracy.append((K, J, acc_mc, acc_b, paper))
    fit = fits[(15, 10)]
    params, g = fit.state.params(), np.asarray(fit.state.g())
    b = np.asarray(params.b)                                          # (40, K, J)
    k_star = int(np.argmax(b[:5].std(0).sum(-1)))
    owner = g.argmax(1)
    mu = np.asarray(params.mu)
    samples = []
    for prior in [b[n] for n in range(5)] + [0.5 * (b[0] + b[1])]:
        s = np.array([rng.choice(prior.shape[1], p=prior[k] / prior[k].sum()) for k in range(prior.shape[0])])
        samples.append(mu[np.arange(mu.shape[0]), owner, s[owner]].reshape(32, 32))
    five = np.flatnonzero(y < 5)
    clu = fit_mcvq(Matrix(X[five]), 15, 10, chains=4, max_iter=30, model="ross03.mcvq_clustered",
                   model_options={"n_clusters": 5})
    z = clu.predict(Matrix(X[five])).cluster_proba.argmax(1)
    table = [(f"person {n}", *[int(np.sum((y[five] == n) & (z == c))) for c in range(5)]) for n in range(5)]
    return OlivettiRun(accuracy, k_star, b[:5, k_star], np.stack(samples), table)


def olivetti_tables(run: OlivettiRun) -> list:
    items = []
    add_table(items, "table_4_3_olivetti_classifier",
              ("VQs", "states per VQ", "accuracy eq. 4.3 (zoo)", "accuracy bound (zoo)", "thesis (AR, 5 classes)"),
              [(K, J, f"{mc:.3f}", f"{bound:.3f}", f"{paper:.2f}") for K, J, mc, bound, paper in run.accuracy],
              note="Olivetti: 40 classes (people), chance 0.025; the thesis: AR faces, 5 expressions, "
                   "chance 0.2 - not comparable beyond the trend.")
    add_table(items, "table_4_1_olivetti_class_priors", ["state"] + [f"person {n}" for n in range(5)],
              [(j, *[f"{run.class_priors[n, j]:.2f}" for n in range(5)]) for j in range(run.class_priors.shape[1])],
              note=f"Class-conditional state priors b_nkj of VQ {run.vq} (the VQ whose priors differ most "
                   f"among persons 0-4), 15 x 10 model.")
    add_table(items, "table_4_2_olivetti_clusters", ["person"] + [f"cluster {c + 1}" for c in range(5)],
              run.cluster_table,
              note="Images of persons 0-4 per cluster (argmax z), 15 x 10 clustered model with 5 clusters.")
    return items


def plot_olivetti(run: OlivettiRun, out: pathlib.Path) -> list:
    """Fig. 4.3 analogue: the faces sampled from class priors (and the hybrid prior)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from zoo.reports import Figure, save_figure
    fig, axes = plt.subplots(1, 6, figsize=(12, 3.2))
    for ax, image, title in zip(axes, run.samples, [f"person {n}" for n in range(5)] + ["hybrid 0+1"]):
        ax.imshow(image, cmap="gray", vmin=-1, vmax=1)
        ax.set_title(title, fontsize=10)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle("Fig. 4.3 analogue: faces sampled from class priors (15 x 10 model)")
    path = save_figure(fig, out / "fig_4_3_olivetti_samples.png")
    return [Figure("Fig. 4.3 analogue: samples from class priors", path,
                   "One face drawn from the class-conditional state priors of persons 0-4, and from the "
                   "average of persons 0 and 1's priors (hybrid); grey scale: pixel value in [-1, 1].")]


# ------------------------------------------------------------------------------------------------ experiments
def _experiment(run_fn, tables_fn, plot_fn=None):
    """``experiment(out) -> (run, items)``: run, plot into ``out`` (when there is a plot), then tabulate (tables
    print as they are made); items are the tables, then the figures."""
    def experiment(out: pathlib.Path) -> tuple:
        run = run_fn()
        figures = plot_fn(run, out) if plot_fn is not None else []
        return run, tables_fn(run) + figures
    experiment.__doc__ = f"{run_fn.__name__}, {tables_fn.__name__}" + (f", {plot_fn.__name__}" if plot_fn else "")
    return experiment


faces_cbcl_experiment = _experiment(run_faces_cbcl, faces_cbcl_tables, plot_faces_cbcl)
movielens_experiment = _experiment(run_movielens, movielens_tables)
newsgroups_experiment = _experiment(run_newsgroups, newsgroups_tables)
olivetti_experiment = _experiment(run_olivetti, olivetti_tables, plot_olivetti)

REAL_EXPERIMENTS = {"faces_cbcl": faces_cbcl_experiment, "movielens": movielens_experiment,
                    "newsgroups": newsgroups_experiment, "olivetti": olivetti_experiment}
