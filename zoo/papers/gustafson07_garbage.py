"""The garbage-class prior of gustafson07 FULL / FS / CVFS chosen on training data only (issue 19, point 2).

The paper fixes the label prior uniform over S_i = {0} u keywords(i) (Sec. 3, "lambda fixed uniform"); the zoo's
option ``garbage_weight`` = w puts prior weight w on the garbage concept 0 and 1 on each keyword of S_i (w = 1 is
the paper's prior). ``choose_garbage_weight`` picks w from a small grid by held-out caption prediction on an inner
split of the TRAINING images:

1. the training images that can be fitted (a caption no longer than the image's regions, as the leaderboard's
   gustafson07 rows require) are split at random (``default_rng(seed)``): ``inner_fraction`` held out, the rest
   fitted, once per w of the grid, with the same seed and settings;
2. the held-out images' regions are labelled WITHOUT their captions (S = {0} u vocabulary, the posterior
   predictive of ``predict_labels``), and each held-out image's caption is predicted from its regions:
   q_i(w) = sum_r Pr(Y_r = w) / sum_r Pr(Y_r != 0) over the vocabulary, the regions' word distribution with the
   garbage mass left out (its ranking is the leaderboard's image score for P@5: the mean of the regions' word
   probabilities);
3. the criterion is the mean over held-out captioned images of the mean log q_i(w) of their caption words (the
   held-out log predictive of the captions); the largest wins, ties going to the w nearest 1 (in log w).
   Precision at 5 of the captions is reported beside it.

Only captions are read: the data's region labels are dropped before anything else, and the caller passes only
its training split. ``GarbageChoice`` holds the per-w scores.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from zoo.data.containers import AnnotatedRegions
from zoo.models.feature_selection import check_garbage_weight
from zoo.core.options import positive_int

__all__ = ["GRID", "GarbageChoice", "caption_word_distribution", "caption_log_predictive", "caption_precision_at",
           "inner_split", "choose_garbage_weight"]

#: the default grid of garbage weights (w = 1: the paper's uniform prior over S_i)
GRID = (0.1, 0.3, 1.0, 3.0)


@dataclasses.dataclass(frozen=True)
class GarbageChoice:
    """weight: the chosen w; grid (G,); log_predictive (G,): mean held-out caption log predictive per w;
    precision_at_5 (G,); inner_train, inner_test: the inner split's image indices (into the data passed);
    per_image (G, I_out): each held-out captioned image's mean caption log predictive per w."""
    weight: float
    grid: tuple
    log_predictive: np.ndarray
    precision_at_5: np.ndarray
    inner_train: np.ndarray
    inner_test: np.ndarray
    per_image: np.ndarray | None = None

    def paired_se(self) -> np.ndarray:
        """(G,) standard error of each w's mean log predictive minus the chosen w's, paired over the held-out
        images (0 for the chosen w): how far the scores' differences stand above the held-out images' noise
        (MCMC noise of the single fits not included)."""
        diff = self.per_image - self.per_image[list(self.grid).index(self.weight)]
        return diff.std(1, ddof=1) / np.sqrt(diff.shape[1])

    def table(self) -> list[dict]:
        """One row per w: {garbage_weight, log_predictive, P@5, se_vs_chosen, chosen}."""
        se = self.paired_se() if self.per_image is not None else np.full(len(self.grid), np.nan)
        return [{"garbage_weight": w, "log_predictive": float(lp), "P@5": float(p), "se_vs_chosen": float(e),
                 "chosen": w == self.weight}
                for w, lp, p, e in zip(self.grid, self.log_predictive, self.precision_at_5, se)]


def caption_word_distribution(label_proba: np.ndarray, image_ids: np.ndarray, n_images: int) -> np.ndarray:
    """(I, K) q_i: each image's regions' word probabilities summed, the garbage column (0) of ``label_proba``
    (R, K+1) left out, normalized over the K words (uniform for an image without regions or without word mass)."""
    proba = np.asarray(label_proba, np.float64)
    words = np.zeros((n_images, proba.shape[1] - 1))
    np.add.at(words, np.asarray(image_ids), proba[:, 1:])
    total = words.sum(1, keepdims=True)
    return np.where(total > 0, words / np.where(total > 0, total, 1.0), 1.0 / words.shape[1])


def caption_log_predictive(q: np.ndarray, keywords: np.ndarray, per_image: bool = False):
    """Mean over images with a caption of the mean log q_i(w) over their caption words; q (I, K), keywords (I, K)
    0/1 (``per_image``: the (I_captioned,) image means instead). Floors q at 1e-300 (no -inf)."""
    kw = np.asarray(keywords, bool)
    has = kw.any(1)
    if not has.any():
        raise ValueError("keywords: no held-out image has a caption, so there is nothing to predict")
    logq = np.log(np.clip(q, 1e-300, None))
    images = (logq * kw).sum(1)[has] / kw.sum(1)[has]
    return images if per_image else float(images.mean())


def caption_precision_at(q: np.ndarray, keywords: np.ndarray, k: int = 5) -> float:
    """Mean over captioned images of the share of the k best words (stable order) that are caption words."""
    kw = np.asarray(keywords, bool)
    k = min(k, q.shape[1])
    top = np.argsort(-q, axis=1, kind="stable")[:, :k]
    has = kw.any(1)
    return float((np.take_along_axis(kw, top, axis=1).sum(1) / k)[has].mean())


def _captions_only(data: AnnotatedRegions) -> AnnotatedRegions:
    """``data`` without region labels (the choice must not see them)."""
    return AnnotatedRegions(np.asarray(data.X), np.asarray(data.image_ids), [tuple(k) for k in data.keywords],
                            list(data.vocabulary), allow_unannotated=True)


def _subset(data: AnnotatedRegions, images, keep_captions: bool) -> AnnotatedRegions:
    images = [int(i) for i in images]
    index = np.full(data.n_images, -1)
    index[images] = np.arange(len(images))
    keep = index[data.image_ids] >= 0
    keywords = [tuple(data.keywords[i]) if keep_captions else () for i in images]
    return AnnotatedRegions(data.X[keep], index[data.image_ids[keep]], keywords, list(data.vocabulary),
                            allow_unannotated=True)


def inner_split(data: AnnotatedRegions, inner_fraction: float = 0.25, seed: int = 0):
    """(fit images, held-out images): the captioned images with regions, whose caption is no longer than their
    number of regions (coverage possible), split at random by ``default_rng(seed)``; at least 2 images each."""
    if not isinstance(inner_fraction, (int, float)) or isinstance(inner_fraction, bool) or not 0 < inner_fraction < 1:
        raise ValueError(f"inner_fraction: must lie in (0, 1), got {inner_fraction!r}")
    sizes = np.bincount(data.image_ids, minlength=data.n_images)
    ok = np.array([i for i in range(data.n_images) if 0 < len(set(data.keywords[i])) <= sizes[i]], np.int64)
    if ok.size < 4:
        raise ValueError(f"data: need at least 4 captioned images with regions for an inner split, got {ok.size}")
    order = np.random.default_rng(seed).permutation(ok)
    n_out = min(max(int(round(inner_fraction * ok.size)), 2), ok.size - 2)
    return np.sort(order[n_out:]), np.sort(order[:n_out])


def choose_garbage_weight(data: AnnotatedRegions, variant: str = "full", grid=GRID, *, inner_fraction: float = 0.25,
                          seed: int = 0, num_chains: int = 1, num_warmup: int = 500, num_samples: int = 500,
                          priors=None, log=None) -> GarbageChoice:
    """The garbage weight w of ``grid`` with the best held-out caption log predictive on an inner split of
    ``data`` (the TRAINING images only; module docstring). Each w: ``zoo.fit`` of gustafson07.``variant`` with
    ``garbage_weight=w`` (collapsed Gibbs, ``seed``, ``num_chains``, ``num_warmup``, ``num_samples``, ``priors``)
    on the inner fit images, then ``predict_labels`` on the held-out images without captions. ``log``: a
    callable given one line per w (None: silent)."""
    import zoo
    if not isinstance(data, AnnotatedRegions):
        raise ValueError(f"data: expected AnnotatedRegions, got {type(data).__name__}")
    if variant not in ("full", "fs", "cvfs"):
        raise ValueError(f"variant: {variant!r} is not one of ('full', 'fs', 'cvfs')")
    grid = tuple(check_garbage_weight(w, "grid") for w in (grid if np.iterable(grid) else [grid]))
    if not grid or len(set(grid)) != len(grid):
        raise ValueError(f"grid: expected distinct garbage weights, got {grid!r}")
    num_chains, num_samples = positive_int(num_chains, "num_chains"), positive_int(num_samples, "num_samples")
    data = _captions_only(data)
    fit_images, held_out = inner_split(data, inner_fraction, seed)
    inner = _subset(data, fit_images, keep_captions=True)
    blind = _subset(data, held_out, keep_captions=False)
    keywords = data.keyword_matrix()[held_out].astype(bool)
    scores, precision, per_image = [], [], []
    for w in grid:
        spec = zoo.model(f"gustafson07.{variant}", garbage_weight=w, priors=priors)
        fit = zoo.fit(spec, inner, method="collapsed_gibbs", seed=seed, num_chains=num_chains,
                      num_warmup=num_warmup, num_samples=num_samples, progress_bar=False)
        q = caption_word_distribution(fit.predict(blind).label_proba, blind.image_ids, blind.n_images)
        per_image.append(caption_log_predictive(q, keywords, per_image=True))
        scores.append(float(per_image[-1].mean()))
        precision.append(caption_precision_at(q, keywords, 5))
        if log is not None:
            log(f"garbage weight {w:g}: held-out caption log predictive {scores[-1]:.4f}, P@5 {precision[-1]:.3f}")
    scores = np.asarray(scores)
    best = np.flatnonzero(scores == scores.max())
    chosen = grid[min(best, key=lambda g: abs(np.log(grid[g])))]
    return GarbageChoice(chosen, grid, scores, np.asarray(precision), fit_images, held_out, np.asarray(per_image))
