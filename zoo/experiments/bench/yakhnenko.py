"""``zoo bench topics``: the MoM-LDA / MoM-HDP topic VI of Yakhnenko & Honavar against scikit-learn's
LatentDirichletAllocation (batch) and gensim's HdpModel on the same caption words."""
from __future__ import annotations

import time

import numpy as np

from zoo.bench import Goal, register_benchmark, timeit_best

__all__ = ["bench_topics"]


def _bench_corpus(fast: bool):
    """Caption-word counts (train, test): Corel5k when present, else words simulated from the program."""
    try:
        import zoo
        train, test = zoo.load_dataset("corel5k", split="train"), zoo.load_dataset("corel5k", split="test")
        return train.words, test.words, "Corel5k caption words"
    except FileNotFoundError:
        from zoo.data.corel5k import simulate_multimodal
        data, _ = simulate_multimodal(seed=5, n_images=5000, n_topics=20, n_word_types=300, n_visual_types=2,
                                      mean_words=8, alpha=0.2, alpha_w=0.05)
        words = data.words
        return words[:4500], words[4500:], "caption words simulated from the MoM-LDA program"


def _completion_perplexity(phi: np.ndarray, alpha: np.ndarray, test_words: np.ndarray, seed: int = 0) -> float:
    """Document-completion perplexity, the same estimator for every model: each test document's tokens are split
    at random into an observed and a held-out half (documents with >= 2 tokens); q(theta) is inferred from the
    observed half by mean-field fixed-point iterations with the model's topics phi (K, W) and prior alpha (K,);
    perplexity = exp(- sum log sum_k E[theta_k] phi_kw / N) over the held-out tokens."""
    import jax.numpy as jnp

    from zoo.inference.topics import topic_vi as tv
    from zoo.papers.yakhnenko_svi import split_tokens
    observed, held = split_tokens(test_words, seed)
    keep = observed.sum(1) > 0
    observed, held = observed[keep], held[keep]
    phi = np.clip(phi / phi.sum(1, keepdims=True), 1e-300, None)
    gamma, _ = tv.infer_doc_topics((jnp.log(jnp.asarray(phi)),), (tv.sparse_counts(observed),), observed.shape[0],
                                   jnp.asarray(alpha, dtype=float), num_steps=100)
    theta = np.asarray(gamma) / np.asarray(gamma).sum(1, keepdims=True)
    p = theta @ phi
    return float(np.exp(-np.sum(held * np.log(p)) / held.sum()))


@register_benchmark("topics", goals=(
                        Goal("ratio_zoo_lda_vs_sklearn_pass", "<=", 1.0, "s/pass MoM-LDA / sklearn LDA"),
                        Goal("ratio_zoo_hdp_vs_gensim_hdp_pass", "<=", 1.0, "s/pass MoM-HDP / gensim HDP")),
                    peer="scikit-learn LatentDirichletAllocation (batch); gensim HdpModel", requires=("gensim",))
def bench_topics(fast: bool = False) -> dict:
    """Time per pass over the caption-word counts (single modality) and document-completion perplexity:
    zoo's mean-field LDA and stick-breaking HDP vs scikit-learn's batch LDA and gensim's online HDP; K = 20,
    all hyperparameters 1 for zoo and sklearn (gensim: its defaults, truncation T = 20). One thread each."""
    import jax
    import jax.numpy as jnp
    import numpyro.distributions as dist
    from gensim.corpora import Dictionary
    from gensim.models import HdpModel
    from sklearn.decomposition import LatentDirichletAllocation

    from zoo.inference.topics import stick_breaking_vi as sbvi
    from zoo.inference.topics import topic_vi as tv
    train, test, source = _bench_corpus(fast)
    keep = train.sum(0) > 0
    train, test = train[:, keep].astype(float), test[:, keep].astype(float)
    k, n_docs, n_words = 20, train.shape[0], train.shape[1]
    passes = 10 if fast else 30
    out = {"data": source, "n_docs": n_docs, "n_words": n_words, "K": k, "passes_for_perplexity": passes}
    keys = jax.random.split(jax.random.PRNGKey(0), 1)
    etas = (jnp.ones(n_words),)
    mods = (tv.sparse_counts(train),)
    coef = jnp.asarray(0.0)

    # zoo LDA: one pass = one chunk of 1 iteration (local_steps=3) of the jitted loop
    state = tv.init_batched(keys, [train], k, jnp.ones(k), etas, 2)
    t0 = time.perf_counter()
    jax.block_until_ready(tv.lda_chunk_batched(state, mods, jnp.ones(k), etas, coef, local_steps=3, chunk=1))
    out["zoo_lda_compile_s"] = time.perf_counter() - t0
    out["zoo_lda_pass_s"] = timeit_best(lambda: jax.block_until_ready(
        tv.lda_chunk_batched(state, mods, jnp.ones(k), etas, coef, local_steps=3, chunk=1)), repeats=7)
    hstate = sbvi.HDPState(state, jnp.zeros((1, k - 1)))
    prior = dist.Beta(1.0, 1.0)
    static = dict(local_steps=3, beta_steps=25, beta_learning_rate=0.05, optimize_beta=True, chunk=1)
    t0 = time.perf_counter()
    jax.block_until_ready(sbvi.hdp_chunk_batched(hstate, mods, etas, jnp.asarray(1.0), coef, prior, **static))
    out["zoo_hdp_compile_s"] = time.perf_counter() - t0
    out["zoo_hdp_pass_s"] = timeit_best(lambda: jax.block_until_ready(
        sbvi.hdp_chunk_batched(hstate, mods, etas, jnp.asarray(1.0), coef, prior, **static)), repeats=7)

    # scikit-learn batch LDA: one pass = fit with max_iter=1 (its E-step iterates each document to convergence)
    def sk_model(n_iter):
        return LatentDirichletAllocation(n_components=k, learning_method="batch", max_iter=n_iter,
                                         doc_topic_prior=1.0, topic_word_prior=1.0, random_state=0, n_jobs=1)
    out["sklearn_lda_pass_s"] = timeit_best(lambda: sk_model(1).fit(train), repeats=3)

    # gensim HDP: one pass = every chunk of the corpus once
    corpus = [[(j, int(c)) for j, c in zip(np.flatnonzero(row), row[row > 0])] for row in train.astype(int)]
    dictionary = Dictionary.from_corpus(corpus, id2word={j: str(j) for j in range(n_words)})
    n_chunks = -(-n_docs // 256)
    out["gensim_hdp_pass_s"] = timeit_best(lambda: HdpModel(corpus, dictionary, T=k, chunksize=256,
                                                            max_chunks=n_chunks, random_state=0), repeats=3)
    out["ratio_zoo_lda_vs_sklearn_pass"] = out["zoo_lda_pass_s"] / out["sklearn_lda_pass_s"]
    out["ratio_zoo_hdp_vs_gensim_hdp_pass"] = out["zoo_hdp_pass_s"] / out["gensim_hdp_pass_s"]

    # held-out perplexity after `passes` passes, one estimator for all
    lda_state, _ = tv.fit_mean_field(keys, [train], k, jnp.ones(k), etas, max_iter=passes, tol=0.0,
                                     progress_bar=False)
    lam = np.asarray(lda_state.lambdas[0][0])
    out["zoo_lda_perplexity"] = _completion_perplexity(lam, np.ones(k), test)
    hdp_state, _ = sbvi.fit_stick_breaking(keys, [train], k, etas, 1.0, prior, init_stick_logits=sbvi.uniform_stick_logits(k),
                                           max_iter=passes, tol=0.0, progress_bar=False)
    beta = np.asarray(sbvi.stick_weights(hdp_state.stick_logits[0]))
    out["zoo_hdp_perplexity"] = _completion_perplexity(np.asarray(hdp_state.topic.lambdas[0][0]), beta, test)
    sk = sk_model(passes).fit(train)
    out["sklearn_lda_perplexity"] = _completion_perplexity(sk.components_, np.full(k, sk.doc_topic_prior_), test)
    hdp = HdpModel(corpus, dictionary, T=k, chunksize=256, max_chunks=n_chunks * passes, random_state=0)
    alpha, topics = hdp.hdp_to_lda()
    out["gensim_hdp_perplexity"] = _completion_perplexity(np.asarray(topics), np.asarray(alpha), test)
    return out
