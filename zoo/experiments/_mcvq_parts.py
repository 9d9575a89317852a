"""What both MCVQ reproductions share (``zoo.experiments.ross03`` on synthetic shapes, ``zoo.experiments.ross03_real``
on real data): fitting with restarts, the sigma floor chosen on training data, description lengths and baselines,
the report's tables and the parts and reconstruction figures. Private to the experiments (not itself one)."""
from __future__ import annotations

import numpy as np

import zoo
from zoo.data import Matrix
from zoo.data.splits import split_indices
from zoo.metrics import rms


def description_length_bits(kind: str, V: int, D: int, n_test: int, K: int = 1, bits_per_real: int = 64) -> float:
    """The thesis' description length (Sec. 3.1.2): model bits + bits encoding the test cases. PCA/NMF: V real
    vectors + V reals per case; VQ: 2V vectors + log2 V per case; MCVQ: 2V + K vectors + K log2(V/K) per case.
    With 64-bit reals the thesis' shapes models all come to ~5.9e5 bits, as the text says."""
    if kind in ("PCA", "NMF"):
        return V * D * bits_per_real + n_test * V * bits_per_real
    if kind == "VQ":
        return 2 * V * D * bits_per_real + n_test * np.log2(V)
    if kind == "MCVQ":
        return (2 * V + K) * D * bits_per_real + n_test * K * np.log2(V / K)
    raise ValueError(f"kind: expected PCA, NMF, VQ or MCVQ, got {kind!r}")


def baseline_rms(kind: str, V: int, X_train, X_test, seed: int = 0) -> float:
    """Test RMS of PCA / NMF / VQ (k-means) with V components (scikit-learn). NMF runs on x + 1 (non-negative)
    with the test codes fitted by NMF.transform."""
    from sklearn.cluster import KMeans
    from sklearn.decomposition import NMF, PCA
    if kind == "PCA":
        model = PCA(n_components=V, random_state=seed).fit(X_train)
        return rms(model.inverse_transform(model.transform(X_test)), X_test)
    if kind == "NMF":
        shift = -min(X_train.min(), X_test.min())
        model = NMF(n_components=V, init="nndsvda", max_iter=1000, random_state=seed).fit(X_train + shift)
        return rms(model.inverse_transform(model.transform(X_test + shift)) - shift, X_test)
    if kind == "VQ":
        model = KMeans(n_clusters=V, n_init=4, random_state=seed).fit(X_train)
        return rms(model.cluster_centers_[model.predict(X_test)], X_test)
    raise ValueError(f"kind: {kind!r}")


def fit_mcvq(X, n_vqs, n_states, *, chains, max_iter, seed=0, progress_bar=True, model="ross03.mcvq", **kw):
    spec = zoo.model(model, n_vqs=n_vqs, n_states=n_states, **kw.pop("model_options", {}))
    return zoo.fit(spec, X, method="variational_em", seed=seed, num_chains=chains, max_iter=max_iter,
                   progress_bar=progress_bar, **kw)


FLOOR_FACTORS = (0.01, 0.03, 0.1, 0.3)


def select_sigma_floor(X_train, K, J, *, chains, max_iter, seed=0, factors=FLOOR_FACTORS) -> tuple[float, dict]:
    """Choose sigma_floor (a multiple of the pooled sd) by reconstruction RMS on a validation fifth of the
    TRAINING cases (never on test data); returns the floor for the full training set and the validation RMS."""
    tr, va = split_indices(X_train.shape[0], int(0.8 * X_train.shape[0]), seed=seed + 1)
    sd = float(np.std(X_train))
    scores = {}
    for f in factors:
        fit = fit_mcvq(Matrix(X_train[tr]), K, J, chains=chains, max_iter=max_iter, sigma_floor=f * sd,
                       progress_bar=False)
        scores[f] = rms(fit.predict(Matrix(X_train[va])).reconstruction, X_train[va])
    best = min(scores, key=scores.get)
    return best * sd, scores


TITLES = {
    "table_3_1_shapes_rms": "Table 3.1: test RMS on the shapes data",
    "table_4_1_shapes_class_priors": "Table 4.1 analogue on shapes: class priors of the triangle's VQ",
    "table_4_2_shapes_clusters": "Table 4.2 analogue on shapes: images per class and cluster",
    "table_faces_cbcl_rms": "Sec. 3.1.3: test RMS on CBCL faces",
    "fig_3_5_movielens_mae": "Fig. 3.5 analogue: MovieLens mean absolute error",
    "fig_3_6_newsgroups_vq_words": "Fig. 3.6 analogue: the words each VQ owns (20 Newsgroups)",
    "table_4_3_olivetti_classifier": "Table 4.3 analogue: Olivetti classification accuracy",
    "table_4_1_olivetti_class_priors": "Table 4.1 analogue on Olivetti: class priors of one VQ",
    "table_4_2_olivetti_clusters": "Table 4.2 analogue on Olivetti: images per person and cluster",
}


def report_table(key: str, header, rows, note: str = ""):
    """The Table titled ``TITLES[key]``."""
    from zoo.reports import Table
    return Table(TITLES[key], list(header), [list(r) for r in rows], note=note)


def add_table(items: list, key: str, header, rows, note: str = ""):
    """Append the Table titled ``TITLES[key]`` to ``items`` and print it (Markdown); returns it (the real-data
    experiments, which still fit and report in one function)."""
    from zoo.reports import markdown_table
    table = report_table(key, header, rows, note)
    items.append(table)
    print(f"{table.title}\n{markdown_table(table.header, table.rows)}\n{note}\n", flush=True)
    return table


def floor_text(scores: dict) -> str:
    """"0.01 x sd: 0.507, 0.03 x sd: ..." (the validation RMS of each sigma_floor factor)."""
    return ", ".join(f"{factor:g} x sd: {value:.3f}" for factor, value in scores.items())


def plot_parts(g, mu, image_shape, path, title):
    """Fig. 3.1b style: row k = VQ k, column j = state j, showing g_dk * mu_dkj (the state masked by its VQ);
    g (D, K), mu (D, K, J); returns the Figure."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from zoo.reports import Figure, save_figure
    g, mu = np.asarray(g), np.asarray(mu)
    D, K, J = mu.shape
    fig, axes = plt.subplots(K, J, squeeze=False, figsize=(max(6.0, 1.3 * J + 1.5), max(4.0, 1.3 * K + 0.8)))
    image = None
    for k in range(K):
        for j in range(J):
            ax = axes[k, j]
            image = ax.imshow((g[:, k] * np.asarray(mu)[:, k, j]).reshape(image_shape), cmap="gray", vmin=-1, vmax=1)
            ax.set_xticks([])
            ax.set_yticks([])
            if k == 0:
                ax.set_title(f"state {j + 1}", fontsize=9)
            if j == 0:
                ax.set_ylabel(f"VQ {k + 1}", fontsize=9)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0, 0.88, 1))
    fig.colorbar(image, cax=fig.add_axes((0.9, 0.15, 0.015, 0.7)), label="g * mu (pixel value)")
    save_figure(fig, path, tight_layout=False)
    return Figure(title, path, "Row k: VQ k; column j: its state j, as the mean image masked by the VQ's "
                               "responsibility for each pixel (g_dk * mu_dkj).")


def plot_reconstructions(X, recon, image_shape, path, title, n=6):
    """Top row: data images; bottom row: their reconstructions; returns the Figure."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from zoo.reports import Figure, save_figure
    n = min(n, len(X))
    fig, axes = plt.subplots(2, n, squeeze=False, figsize=(max(6.0, 1.4 * n + 1.5), 4.0))
    image = None
    for i in range(n):
        for row, img in enumerate((X[i], recon[i])):
            image = axes[row, i].imshow(np.asarray(img).reshape(image_shape), cmap="gray", vmin=-1, vmax=1)
            axes[row, i].set_xticks([])
            axes[row, i].set_yticks([])
    axes[0, 0].set_ylabel("data")
    axes[1, 0].set_ylabel("reconstruction")
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0, 0.88, 1))
    fig.colorbar(image, cax=fig.add_axes((0.9, 0.15, 0.015, 0.7)), label="pixel value")
    save_figure(fig, path, tight_layout=False)
    return Figure(title, path, "Top: test images; bottom: the MCVQ reconstruction of each.")


def mcvq_parts(fit) -> tuple:
    """(g (D, K), mu (D, K, J)) of an MCVQ fit, as arrays for ``plot_parts``."""
    return np.asarray(fit.state.g()), np.asarray(fit.state.params().mu)
