"""Corel5k (Mulan packaging) as ``MultimodalCounts``, and data simulated from the MoM-LDA / MoM-HDP programs.

``zoo.load_dataset("corel5k", split="train" | "test")``: caption words (I, 374) and blob tokens (I, 499), both 0/1
indicators (the Mulan data record which blob clusters occur in an image, not how many regions fall in each), read
from ``corel5k_mulan/corel5k.npz`` (see its PROVENANCE.md).  Words that never occur in the training split
(3 of 374: 'grouper', 'moss', 'aerial'; 3 occurrences in the test split) are dropped from both splits by default
(``drop_unseen_words=True``) because a column without any training count carries no information and the topic
models reject all-zero columns.  There are no per-region features or labels in this data set.

``zoo.load_dataset("yakhnenko_synthetic", ...)`` simulates from the NumPyro program itself
(``simulate_multimodal`` also returns the true factors for recovery experiments).
"""
from __future__ import annotations

import numpy as np

from zoo.data.containers import MultimodalCounts
from zoo.data.files import read_npz
from zoo.core.options import positive_int
from zoo.data.location import dataset_path, register_loader

__all__ = ["load_corel5k", "simulate_multimodal", "load_synthetic"]

COREL_FOLDER = "corel5k_mulan"
COREL_FILE = "corel5k.npz"


@register_loader("corel5k", "Corel5k (Mulan): caption words + blob tokens per image, 4500 train / 500 test",
                 files=(f"{COREL_FOLDER}/{COREL_FILE}",))
def load_corel5k(split: str = "train", drop_unseen_words: bool = True) -> MultimodalCounts:
    """Corel5k caption words (I, W) and blob tokens (I, 499) of ``split`` ("train": 4500 images, "test": 500)."""
    if split not in ("train", "test"):
        raise ValueError(f"split: expected 'train' or 'test', got {split!r}")
    path = dataset_path(COREL_FOLDER, COREL_FILE) / COREL_FILE
    npz = read_npz(path, required=(f"words_{split}", f"blobs_{split}", "word_names", "blob_names", "words_train"))
    words = npz[f"words_{split}"].astype(np.int64)
    blobs = npz[f"blobs_{split}"].astype(np.int64)
    word_names = [str(w) for w in npz["word_names"]]
    blob_names = [str(b) for b in npz["blob_names"]]
    keep = npz["words_train"].sum(axis=0) > 0 if drop_unseen_words else np.ones(len(word_names), bool)
    return MultimodalCounts(words=words[:, keep], visual_words=blobs,
                            word_vocabulary=[w for w, k in zip(word_names, keep) if k],
                            visual_vocabulary=blob_names)


def simulate_multimodal(seed: int = 0, n_images: int = 300, n_topics: int = 5, n_word_types: int = 30,
                        n_visual_types: int = 60, mean_words: float = 4.0, mean_visual_words: float = 10.0,
                        model: str = "lda", alpha: float = 1.0, alpha_pi: float = 1.0, alpha_w: float = 0.1,
                        alpha_b: float = 0.1, drop_empty_columns: bool = True) -> tuple[MultimodalCounts, dict]:
    """Simulate images from ``mom_lda`` (pi ~ Dir(alpha)) or ``mom_hdp`` (truncation n_topics): latent factors and
    proportions from the program's priors, counts drawn by the NumPyro program conditioned on them.  Totals: 1 + Poisson(mean - 1) tokens per image and modality.  Returns the data and the truth
    (``phi_w`` (K, W), ``phi_b`` (K, V), ``pi`` (I, K), and ``beta`` (K,) for the HDP).

    With ``drop_empty_columns`` the word / visual-word types that no image drew are removed (the fitters reject
    all-zero columns); the truth's ``phi_w`` / ``phi_b`` are then restricted to the kept columns and renormalized,
    and ``word_columns`` / ``visual_columns`` give the kept indices."""
    import jax
    import numpyro

    from zoo.models import multimodal_topics as mt

    n_images, n_topics = positive_int(n_images, "n_images"), positive_int(n_topics, "n_topics")
    n_word_types = positive_int(n_word_types, "n_word_types")
    n_visual_types = positive_int(n_visual_types, "n_visual_types")
    for name, value in (("mean_words", mean_words), ("mean_visual_words", mean_visual_words)):
        if not np.isfinite(value) or value < 1:
            raise ValueError(f"{name}: expected a number >= 1, got {value!r}")
    for name, value in (("alpha", alpha), ("alpha_pi", alpha_pi), ("alpha_w", alpha_w), ("alpha_b", alpha_b)):
        if not np.isfinite(value) or value <= 0:
            raise ValueError(f"{name}: expected a positive number, got {value!r}")
    rng = np.random.default_rng(seed)
    word_totals = 1 + rng.poisson(mean_words - 1.0, n_images)
    visual_totals = 1 + rng.poisson(mean_visual_words - 1.0, n_images)
    kwargs = dict(n_word_types=n_word_types, n_visual_types=n_visual_types)
    # the latent sites are drawn with numpy from exactly the program's priors (JAX's gamma sampler takes seconds to
    # compile per shape); the program, conditioned on them, then draws the observed counts
    latents = {"phi_w": rng.dirichlet(np.full(n_word_types, alpha_w), n_topics),
               "phi_b": rng.dirichlet(np.full(n_visual_types, alpha_b), n_topics)}
    if model == "lda":
        program, kwargs = mt.mom_lda, dict(kwargs, n_topics=n_topics,
                                           priors=mt.default_priors_lda(alpha, alpha_w, alpha_b))
        latents["pi"] = rng.dirichlet(np.full(n_topics, alpha), n_images)
    elif model == "hdp":
        program, kwargs = mt.mom_hdp, dict(kwargs, truncation=n_topics, alpha_pi=alpha_pi,
                                           priors=mt.default_priors_hdp(alpha, alpha_w, alpha_b))
        if n_topics > 1:
            latents["sticks"] = rng.beta(1.0, alpha, n_topics - 1)
        beta = np.asarray(mt.stick_breaking(np.asarray(latents.get("sticks", np.zeros(0)))))
        latents["pi"] = rng.dirichlet(np.maximum(alpha_pi * beta, 1e-300), n_images)
    else:
        raise ValueError(f"model: expected 'lda' or 'hdp', got {model!r}")
    conditioned = numpyro.handlers.condition(program, data=latents)
    seeded = numpyro.handlers.seed(conditioned, jax.random.PRNGKey(seed))
    trace = numpyro.handlers.trace(seeded).get_trace(word_totals, visual_totals, **kwargs)
    values = {name: np.asarray(site["value"]) for name, site in trace.items() if site["type"] in ("sample",
                                                                                                   "deterministic")}
    truth = {k: values[k] for k in ("phi_w", "phi_b", "pi", "beta") if k in values}
    words, visual = values["words"], values["visual_words"]
    word_cols, visual_cols = np.arange(n_word_types), np.arange(n_visual_types)
    if drop_empty_columns:
        word_cols, visual_cols = np.flatnonzero(words.sum(0) > 0), np.flatnonzero(visual.sum(0) > 0)
        for key, cols in (("phi_w", word_cols), ("phi_b", visual_cols)):
            kept = truth[key][:, cols]
            truth[key] = kept / kept.sum(axis=1, keepdims=True)
    truth["word_columns"], truth["visual_columns"] = word_cols, visual_cols
    data = MultimodalCounts(words=words[:, word_cols], visual_words=visual[:, visual_cols],
                            word_vocabulary=[f"w{j}" for j in word_cols],
                            visual_vocabulary=[f"b{j}" for j in visual_cols])
    return data, truth


@register_loader("yakhnenko_synthetic", "images simulated from the MoM-LDA / MoM-HDP program (Yakhnenko & Honavar)")
def load_synthetic(seed: int = 0, **options) -> MultimodalCounts:
    """``simulate_multimodal(seed, **options)`` without the truth."""
    return simulate_multimodal(seed, **options)[0]
