"""Synthetic data of Gustafson, Thompson & de Freitas (2007).

- ``sec6_synthetic``: the supervised study of Sec. 6: p = 5, K = 3, equicorrelated features (rho = 0.5),
  E(X | Y=k) = Delta e_k-ish (Delta = 0.47), Var = 1 - Delta^2/2 on features 1-3 and 1 on the noise features 4-5
  (so the pooled data are standardized). Supervised = every unit is its own "image" annotated with its concept:
  the coverage constraint then fixes Y (S_i = {0, k}, one segment that must carry keyword k).
- ``regions_from_program``: annotated images drawn from the FULL/FS/CVFS NumPyro program itself (prior
  predictive with the coverage constraint by rejection), with the true labels and the true M.
- ``bench_fs_data``: the FS problem of ``zoo bench cvfs`` (3 concepts, half the units labelled).
The first two are registered as data sets: ``zoo.load_dataset("gustafson07_sec6", ...)`` and
``zoo.load_dataset("gustafson07_program", ...)``.
"""
from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.handlers import seed as seed_handler
from numpyro.handlers import trace

from zoo.data.containers import AnnotatedRegions
from zoo.data.location import register_loader
from zoo.inference.driver import FAST_COMPILE_OPTIONS

__all__ = ["sec6_means", "sec6_synthetic", "sample_image_layout", "regions_from_program", "bench_fs_data"]


def sec6_means(delta: float = 0.47) -> np.ndarray:
    """(3, 5) concept means of Sec. 6: Delta (1,-.5,-.5,0,0), Delta (-.5,1,-.5,0,0), Delta (-.5,-.5,1,0,0)."""
    base = np.array([[1.0, -0.5, -0.5, 0, 0], [-0.5, 1.0, -0.5, 0, 0], [-0.5, -0.5, 1.0, 0, 0]])
    return delta * base


def sec6_covariance(rho: float = 0.5, delta: float = 0.47) -> np.ndarray:
    """(5, 5) within-concept covariance: correlation rho, variances 1 - Delta^2/2 (features 1-3) and 1 (4-5)."""
    sd = np.sqrt(np.array([1 - delta ** 2 / 2] * 3 + [1.0, 1.0]))
    corr = np.full((5, 5), rho) + (1 - rho) * np.eye(5)
    return corr * np.outer(sd, sd)


@register_loader("gustafson07_sec6", "Gustafson et al. 2007 Sec. 6 supervised synthetic data (p=5, K=3)")
def sec6_synthetic(n_per_concept: int = 100, rho: float = 0.5, delta: float = 0.47, seed: int = 0) -> AnnotatedRegions:
    """The Sec. 6 data set: ``n_per_concept`` units per concept, each its own image labelled by its concept."""
    if int(n_per_concept) < 1:
        raise ValueError(f"n_per_concept: expected a positive integer, got {n_per_concept!r}")
    if not -0.25 < rho < 1:
        raise ValueError(f"rho: the equicorrelation must lie in (-1/4, 1) for a valid covariance, got {rho!r}")
    if not 0 <= delta < np.sqrt(2):
        raise ValueError(f"delta: expected 0 <= Delta < sqrt(2) (variances 1 - Delta^2/2 > 0), got {delta!r}")
    rng = np.random.default_rng(seed)
    n = int(n_per_concept)
    labels = np.repeat(np.arange(3), n)
    chol = np.linalg.cholesky(sec6_covariance(rho, delta))
    X = sec6_means(delta)[labels] + rng.standard_normal((3 * n, 5)) @ chol.T
    vocabulary = ["concept1", "concept2", "concept3"]
    return AnnotatedRegions(X=X, image_ids=np.arange(3 * n), keywords=[[vocabulary[k]] for k in labels],
                            vocabulary=vocabulary, region_labels=labels)


def sample_image_layout(n_images: int, n_keywords: int, regions_per_image=(6, 16), keywords_per_image=(1, 5),
                        seed: int = 0):
    """Random images: (image_ids (R,), keyword index sets per image), every keyword used at least once."""
    rng = np.random.default_rng(seed)
    lo, hi = regions_per_image
    klo, khi = keywords_per_image
    if n_images * khi < n_keywords:
        raise ValueError("n_images: too few images to use every keyword once")
    sizes = rng.integers(lo, hi + 1, size=n_images)
    keywords = []
    order = list(rng.permutation(n_keywords))
    for i in range(n_images):
        t = int(min(rng.integers(klo, khi + 1), sizes[i]))
        forced = [order.pop() for _ in range(min(t, len(order)))] if order else []
        rest = [int(w) for w in rng.permutation(n_keywords) if w not in forced][: t - len(forced)]
        keywords.append(sorted(int(w) for w in forced + rest))
    image_ids = np.repeat(np.arange(n_images), sizes)
    return image_ids, keywords


def _structure(image_ids, keywords, n_keywords):
    n_images = len(keywords)
    kw = np.zeros((n_images, n_keywords + 1), bool)
    for i, words in enumerate(keywords):
        kw[i, np.asarray(words, int) + 1] = True
    allowed = kw[image_ids].copy()
    allowed[:, 0] = True
    return allowed, kw


@register_loader("gustafson07_program", "annotated regions drawn from the Gustafson et al. 2007 program")
def regions_from_program(variant: str = "cvfs", n_images: int = 68, n_keywords: int = 17, n_features: int = 16,
                         regions_per_image=(6, 16), keywords_per_image=(1, 5), seed: int = 0,
                         return_truth: bool = False, max_tries: int = 10000):
    """AnnotatedRegions from the prior predictive of the FULL/FS/CVFS program (defaults shaped like Sec. 7's Corel
    set: 68 images, ~11 segments each, 17 keywords, 16 features). Labels are drawn under the coverage constraint by
    rejection, image by image. ``return_truth`` also returns the latent sites (dict of numpy arrays)."""
    from zoo.models.feature_selection import VARIANTS
    if variant not in VARIANTS:
        raise ValueError(f"variant: {variant!r} is not one of {VARIANTS}")
    if int(n_features) < 1 or int(n_keywords) < 1:
        raise ValueError("n_features, n_keywords: expected positive integers")
    image_ids, keywords = sample_image_layout(n_images, n_keywords, regions_per_image, keywords_per_image, seed)
    allowed, kw = _structure(image_ids, keywords, n_keywords)
    latent = _draw_latents_with_coverage(variant, allowed, image_ids, kw, n_features, seed, max_tries)
    vocabulary = [f"word{k:02d}" for k in range(n_keywords)]
    regions = AnnotatedRegions(X=latent["X"], image_ids=image_ids,
                               keywords=[[vocabulary[k] for k in words] for words in keywords],
                               vocabulary=vocabulary, region_labels=latent["Y"] - 1)
    return (regions, latent) if return_truth else regions


def _draw_latents_with_coverage(variant, allowed, image_ids, kw, p, seed, max_tries):
    """One prior-predictive draw of the program. The labels' prior (uniform on S_i, restricted to the coverage
    constraint) does not involve the other latent sites, so the labels are drawn first (uniform on S_i, redrawn per
    image until they cover its keywords: exact rejection sampling) and the program, conditioned on them, draws
    everything else (alpha, M, delta, Omega, mu, Sigma, X)."""
    from numpyro.handlers import condition

    from zoo.models.feature_selection import coverage_ok, feature_selection_model
    rng = np.random.default_rng(seed)
    Y = np.zeros(len(image_ids), np.int64)
    for i in range(kw.shape[0]):
        units = np.nonzero(image_ids == i)[0]
        if units.size == 0:
            continue
        choices = np.nonzero(allowed[units[0]])[0]
        for _ in range(max_tries):
            Y[units] = rng.choice(choices, size=units.size)
            if all(np.any(Y[units] == k) for k in np.nonzero(kw[i])[0]):
                break
        else:
            raise RuntimeError(f"image {i}: no label draw covered its keywords in {max_tries} tries")
    args = (jnp.asarray(allowed), jnp.asarray(image_ids), jnp.asarray(kw))
    assert bool(coverage_ok(jnp.asarray(Y), *args[1:]))

    # one draw: compilation is nearly all the cost, so compile without XLA's backend optimization (15 s -> 6 s)
    @partial(jax.jit, compiler_options=FAST_COMPILE_OPTIONS)
    def forward(key, Y):
        tr = trace(seed_handler(condition(feature_selection_model, {"Y": Y}), key)).get_trace(
            *args, variant=variant, n_features=p)
        return {k: v["value"] for k, v in tr.items() if v["type"] == "sample"}

    return {k: np.asarray(v) for k, v in forward(jax.random.PRNGKey(seed), jnp.asarray(Y)).items()}


def bench_fs_data(n_units: int = 200, p: int = 16, seed: int = 0) -> AnnotatedRegions:
    """The benchmark's FS problem: K = 3 concepts, ``n_units`` units, D = ``p`` (>= 6), half labelled (one-segment
    images annotated with their concept), half unannotated; features 1-4 separate the concepts clearly, 5-6 weakly
    (their inclusion indicators mix), the rest are correlated noise (correlation 0.3)."""
    if p < 6:
        raise ValueError(f"p: expected at least 6 features, got {p}")
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n_units)
    means = np.zeros((3, p))
    means[:, :4] = 1.2 * rng.choice([-1.0, 1.0], size=(3, 4))
    means[:, 4:6] = 0.25 * rng.choice([-1.0, 1.0], size=(3, 2))
    corr = 0.3 + 0.7 * np.eye(p)
    X = means[labels] + rng.standard_normal((n_units, p)) @ np.linalg.cholesky(corr).T
    vocabulary = ["c1", "c2", "c3"]
    half = n_units // 2
    keywords = [[vocabulary[labels[i]]] if i < half else [] for i in range(n_units)]
    return AnnotatedRegions(X=X, image_ids=np.arange(n_units), keywords=keywords, vocabulary=vocabulary,
                            region_labels=labels, allow_unannotated=True)
