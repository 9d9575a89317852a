"""Baselines for region-word annotation: the numbers every weakly supervised region-word model has to beat.

Every function takes a training ``AnnotatedRegions`` (features, image ids, captions; region ground truth only
for the supervised upper bound) and test regions, and returns region scores (R_test, W) over the training
vocabulary (larger = more likely; probabilities where the method has them). None reads the test captions or the
test labels: restricting a prediction to the test image's caption is the leaderboard's job (``zoo.leaderboard``).

- ``chance_scores``: all words equal (with ties split evenly, the expected accuracy of a uniform guess).
- ``word_frequency_scores``: the training caption frequency of each word (Carbonetto et al. 2003, "empirical
  word frequency").
- ``cooccurrence_scores``: Mori, Takahashi & Oka (1999): k-means blob tokens of the training regions;
  p(w | token) from counting each training region's token against each keyword of its image (weight 1/|caption|).
- ``naive_bayes_scores``: Gaussian naive Bayes on the regions, each region inheriting every keyword of its
  image with weight 1/|caption| (the single-instance reduction of weak labels).
- ``logistic_regression_scores``: multinomial logistic regression with the same inherited, weighted labels; C
  fixed or chosen by inner cross-validation over training images (log loss of the inherited labels: the only
  labels a weakly supervised learner sees).
- ``si_svm_scores``: single-instance SVM (scikit-learn SVC, RBF): inherited labels, one-vs-rest decision values.
- ``mi_svm_scores``: mi-SVM (Andrews, Tsochantaridis & Hofmann 2003, Sec. 2): per word, instances of images
  without the word are negative; those of images with it start positive and are relabelled by the SVM's sign,
  keeping at least the best instance of each positive image positive, until the labels stop changing. The
  per-word decision values are mapped to probabilities by Platt scaling, so that words can be compared.
- ``supervised_scores``: the upper bound, logistic regression on the training regions' TRUE labels (which the
  weakly supervised models never see); C by inner cross-validation on the training regions.
"""
from __future__ import annotations

import numpy as np

__all__ = ["inherited_labels", "chance_scores", "word_frequency_scores", "cooccurrence_scores",
           "naive_bayes_scores", "logistic_regression_scores", "si_svm_scores", "mi_svm_scores",
           "platt_probabilities", "supervised_scores", "image_folds", "C_GRID"]

C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0)


def inherited_labels(train) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each region repeated once per keyword of its image: (rows (M,) region index, words (M,), weights (M,)
    1/|caption|, groups (M,) image id). A region of an image with k keywords contributes k rows of weight 1/k."""
    keywords = train.keyword_matrix().astype(bool)
    region_words = keywords[train.image_ids]                       # (R, W)
    rows, words = np.nonzero(region_words)
    sizes = region_words.sum(axis=1)
    return rows, words, 1.0 / sizes[rows], train.image_ids[rows]


def image_folds(image_ids: np.ndarray, n_folds: int, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Inner cross-validation folds over images: [(train row indices, validation row indices)] (rows of
    ``image_ids``), images shuffled with ``default_rng(seed)`` and dealt round-robin into ``n_folds`` folds."""
    images = np.unique(image_ids)
    if n_folds < 2 or images.size < n_folds:
        raise ValueError(f"n_folds: need 2 <= n_folds <= {images.size} images, got {n_folds}")
    fold_of = np.empty(int(images.max()) + 1, dtype=np.int64)
    fold_of[np.random.default_rng(seed).permutation(images)] = np.arange(images.size) % n_folds
    fold = fold_of[image_ids]
    return [(np.flatnonzero(fold != k), np.flatnonzero(fold == k)) for k in range(n_folds)]


def _n_words(train) -> int:
    return len(train.vocabulary)


def _spread(proba: np.ndarray, classes: np.ndarray, n_words: int, fill: float = 0.0) -> np.ndarray:
    """(R, n_words) from classifier outputs over ``classes`` (a word never seen as a class gets ``fill``)."""
    out = np.full((proba.shape[0], n_words), fill, dtype=np.float64)
    out[:, classes] = proba
    return out


def chance_scores(train, test) -> np.ndarray:
    """(R_test, W) uniform p(w) = 1/W: every word ties, so the leaderboard's tie-splitting accuracy is the expected
    accuracy of a uniform guess (1/|caption| within the caption, 1/W without)."""
    return np.full((test.X.shape[0], _n_words(train)), 1.0 / _n_words(train))


def word_frequency_scores(train, test) -> np.ndarray:
    """(R_test, W) the share of training images whose caption holds each word, the same for every region."""
    return np.tile(train.keyword_matrix().mean(axis=0), (test.X.shape[0], 1))


def cooccurrence_scores(train, test, n_visual_words: int = 64, seed: int = 0) -> np.ndarray:
    """(R_test, W) p(w | blob token of the region) from token-keyword co-occurrence counts in the training images
    (Mori et al. 1999); tokens: k-means (``zoo.data.visual_words.blob_tokens``) of the training regions, at most a
    quarter as many as training regions."""
    from zoo.data.visual_words import blob_tokens

    n_visual_words = max(1, min(int(n_visual_words), train.X.shape[0] // 4))
    _, tokens = blob_tokens(train.X, np.concatenate([train.X, test.X]), n_visual_words, seed)
    train_tokens, test_tokens = tokens[:train.X.shape[0]], tokens[train.X.shape[0]:]
    rows, words, weights, _ = inherited_labels(train)
    table = np.zeros((n_visual_words, _n_words(train)))
    np.add.at(table, (train_tokens[rows], words), weights)
    table += 1e-3                                                  # an unseen token falls back to (almost) uniform
    table /= table.sum(axis=1, keepdims=True)
    return table[test_tokens]


def naive_bayes_scores(train, test) -> np.ndarray:
    """(R_test, W) p(w | region) of Gaussian naive Bayes fit to the inherited, 1/|caption|-weighted labels."""
    from sklearn.naive_bayes import GaussianNB

    rows, words, weights, _ = inherited_labels(train)
    model = GaussianNB().fit(train.X[rows], words, sample_weight=weights)
    return _spread(model.predict_proba(test.X), model.classes_, _n_words(train))


def _weighted_log_loss(model, X, y, w) -> float:
    proba = model.predict_proba(X)
    index = np.searchsorted(model.classes_, y)
    seen = (index < model.classes_.size) & (model.classes_[np.minimum(index, model.classes_.size - 1)] == y)
    p = np.where(seen, proba[np.arange(y.size), np.minimum(index, model.classes_.size - 1)], 0.0)
    return float(-(w * np.log(np.clip(p, 1e-12, 1.0))).sum() / w.sum())


def select_C(X, y, w, groups, *, n_folds: int = 3, seed: int = 0, grid=C_GRID) -> tuple[float, dict]:
    """C of a multinomial logistic regression by inner cross-validation over images (``image_folds``) on
    training data only, minimizing the weighted validation log loss; returns (C, {C: mean loss})."""
    from sklearn.linear_model import LogisticRegression

    losses = {}
    for C in grid:
        fold_losses = []
        for tr, va in image_folds(groups, n_folds, seed):
            if np.unique(y[tr]).size < 2:
                continue
            model = LogisticRegression(C=C, max_iter=1000).fit(X[tr], y[tr], sample_weight=w[tr])
            fold_losses.append(_weighted_log_loss(model, X[va], y[va], w[va]))
        losses[C] = float(np.mean(fold_losses)) if fold_losses else np.inf
    return min(losses, key=losses.get), losses


def logistic_regression_scores(train, test, C: float | str = 1.0, seed: int = 0) -> np.ndarray:
    """(R_test, W) p(w | region) of multinomial logistic regression on the inherited, weighted labels; ``C="cv"``
    chooses C by inner 3-fold cross-validation over training images (``select_C``)."""
    from sklearn.linear_model import LogisticRegression

    rows, words, weights, groups = inherited_labels(train)
    X = train.X[rows]
    if C == "cv":
        C, _ = select_C(X, words, weights, groups, seed=seed)
    model = LogisticRegression(C=float(C), max_iter=2000).fit(X, words, sample_weight=weights)
    return _spread(model.predict_proba(test.X), model.classes_, _n_words(train))


def si_svm_scores(train, test, C: float | str = 1.0, seed: int = 0, max_rows: int = 6000) -> np.ndarray:
    """(R_test, W) one-vs-rest decision values of an RBF SVC (gamma="scale") on the inherited labels (rows
    weighted 1/|caption|); words never inherited score -inf. ``C="cv"``: C in {0.1, 1, 10} by inner 3-fold
    cross-validation over images, maximizing the weighted accuracy on the inherited labels. Training rows beyond
    ``max_rows`` are subsampled (seeded) to bound the O(n^2) kernel cost."""
    from sklearn.svm import SVC

    rows, words, weights, groups = inherited_labels(train)
    if rows.size > max_rows:
        keep = np.sort(np.random.default_rng(seed).choice(rows.size, max_rows, replace=False))
        rows, words, weights, groups = rows[keep], words[keep], weights[keep], groups[keep]
    X = train.X[rows]
    if np.unique(words).size < 2:
        out = np.full((test.X.shape[0], _n_words(train)), -np.inf)
        out[:, np.unique(words)] = 0.0
        return out
    if C == "cv":
        scores = {}
        for c in (0.1, 1.0, 10.0):
            acc = []
            for tr, va in image_folds(groups, 3, seed):
                if np.unique(words[tr]).size < 2:
                    continue
                pred = SVC(C=c, kernel="rbf", gamma="scale").fit(X[tr], words[tr], sample_weight=weights[tr])\
                    .predict(X[va])
                acc.append(float((weights[va] * (pred == words[va])).sum() / weights[va].sum()))
            scores[c] = np.mean(acc) if acc else -np.inf
        C = max(scores, key=scores.get)
    model = SVC(C=float(C), kernel="rbf", gamma="scale", decision_function_shape="ovr")
    model.fit(X, words, sample_weight=weights)
    decision = model.decision_function(test.X)
    if decision.ndim == 1:                                         # two classes: one column, positive = classes_[1]
        decision = np.stack([-decision, decision], axis=1)
    return _spread(decision, model.classes_, _n_words(train), fill=-np.inf)


def mi_svm_scores(train, test, C: float = 1.0, max_iter: int = 10) -> np.ndarray:
    """(R_test, W) mi-SVM region probabilities, one RBF SVC per word (Andrews et al. 2003, Sec. 2, the heuristic
    loop of Fig. 1): regions of images without the word are negative; regions of images with it start positive;
    repeat {fit; relabel positive images' regions by sign; if none is positive, the highest one is} until no
    label changes or ``max_iter`` fits. Each word's decision values f are then mapped to Pr(word) =
    sigmoid(a f + b) (Platt 1999), (a, b) fitted by logistic regression to the final instance labels of the
    training regions: raw margins of separately trained SVMs are on different scales, so ranking the words of an
    image (P@5) or of a region by them is arbitrary. Fitted on the SVM's own training values, the probabilities
    are somewhat over-confident (Platt's held-out fit would cost five more SVMs per word); the map is monotone per
    word, so each word's ranking of regions is the SVM's. A word in every or no training caption scores 1 or 0."""
    from sklearn.svm import SVC

    keywords = train.keyword_matrix().astype(bool)
    out = np.zeros((test.X.shape[0], _n_words(train)))
    for w in range(_n_words(train)):
        positive_image = keywords[:, w][train.image_ids]
        if positive_image.all() or not positive_image.any():
            out[:, w] = 1.0 if positive_image.all() else 0.0
            continue
        y = positive_image.astype(int)
        model = None
        for _ in range(max_iter):
            model = SVC(C=C, kernel="rbf", gamma="scale").fit(train.X, y)
            f = model.decision_function(train.X)
            new = np.where(positive_image, (f > 0).astype(int), 0)
            for i in np.unique(train.image_ids[positive_image]):   # at least one positive per positive image
                members = np.flatnonzero(train.image_ids == i)
                if not new[members].any():
                    new[members[np.argmax(f[members])]] = 1
            if np.array_equal(new, y):
                break
            y = new
        out[:, w] = platt_probabilities(model.decision_function(train.X), y, model.decision_function(test.X))
    return out


def platt_probabilities(f_train: np.ndarray, y_train: np.ndarray, f_test: np.ndarray) -> np.ndarray:
    """Platt scaling: sigmoid(a f_test + b), (a, b) the maximum-likelihood logistic fit of the 0/1 labels
    ``y_train`` (n,) on the decision values ``f_train`` (n,), with Platt's (1999) smoothed targets
    (n+ + 1) / (n+ + 2) and 1 / (n- + 2) against over-fitting separable values. Returns (m,) in (0, 1)."""
    from scipy.optimize import minimize
    from scipy.special import expit, log_expit

    f_train, y_train = np.asarray(f_train, float), np.asarray(y_train, int)
    n_pos, n_neg = int(y_train.sum()), int((1 - y_train).sum())
    target = np.where(y_train == 1, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))

    def loss(ab):        # cross-entropy of the smoothed targets, log-space (stable for large |a f|)
        z = ab[0] * f_train + ab[1]
        return -float(np.sum(target * log_expit(z) + (1 - target) * log_expit(-z)))

    def grad(ab):
        r = expit(ab[0] * f_train + ab[1]) - target
        return np.array([float(r @ f_train), float(r.sum())])

    ab = minimize(loss, np.array([1.0, 0.0]), jac=grad, method="BFGS").x
    return expit(ab[0] * np.asarray(f_test, float) + ab[1])


def supervised_scores(train, test, C: float | str = "cv", seed: int = 0) -> np.ndarray:
    """(R_test, W) class probabilities of multinomial logistic regression fit to the training regions' TRUE
    labels (upper bound; unlabelled regions left out); ``C="cv"`` by inner 3-fold CV over training images."""
    from sklearn.linear_model import LogisticRegression

    if train.region_labels is None:
        raise ValueError("region_labels: the supervised upper bound needs the training regions' true labels")
    labelled = np.flatnonzero(train.region_labels >= 0)
    X, y = train.X[labelled], train.region_labels[labelled]
    if np.unique(y).size < 2:
        return _spread(np.ones((test.X.shape[0], 1)), np.unique(y), _n_words(train))
    if C == "cv":
        C, _ = select_C(X, y, np.ones(y.size), train.image_ids[labelled], seed=seed)
    model = LogisticRegression(C=float(C), max_iter=2000).fit(X, y)
    return _spread(model.predict_proba(test.X), model.classes_, _n_words(train))
