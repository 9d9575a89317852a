"""Mean-field coordinate-ascent VI for multi-modal LDA on count data (Yakhnenko & Honavar, Sec. 2.6).

The model (one document = one image with M modalities, e.g. caption words and visual words):
    pi_i ~ Dir(a)                       a: (K,) prior concentration (alpha_1..alpha_K, or alpha_pi * beta in the HDP)
    phi^m_k ~ Dir(eta_m)                for each modality m and factor k
    z_ij ~ Mult(pi_i), x_ij ~ Mult(phi^m_{z_ij})   for every token j of modality m in document i
Variational family q(pi_i) = Dir(gamma_i), q(phi^m_k) = Dir(lambda^m_k), q(z_ij) = Mult(r_ij).  Tokens of the same
type in the same document share the same optimal responsibilities, so everything runs on sparse counts
(doc, term, count) triples and the responsibilities are never stored: the E-step returns only their sufficient
statistics (expected counts) and the entropy of q(z).

Every coordinate step below is the exact maximizer of the ELBO in its block, so the ELBO, recorded once per
iteration, cannot decrease.  Shapes: I documents, K factors, V_m terms of modality m, nnz_m non-zero counts.
"""
from __future__ import annotations

import functools
from typing import Callable, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import digamma, gammaln, logsumexp

from zoo.inference.driver import optimize_chunked
from zoo.inference.host_random import numpy_generator

__all__ = ["SparseCounts", "sparse_counts", "TopicVIState", "SuffStats", "dirichlet_expected_log", "e_step",
           "update_gamma", "update_lambda", "elbo", "elbo_explicit", "local_step", "cavi_iteration",
           "init_state", "infer_doc_topics", "token_topic_counts", "log_multinomial_coefficient",
           "fit_mean_field", "lda_chunk_batched"]


class SparseCounts(NamedTuple):
    """Non-zero entries of a (I, V) count matrix: doc (nnz,) int, term (nnz,) int, count (nnz,) float."""

    doc: jnp.ndarray
    term: jnp.ndarray
    count: jnp.ndarray


def sparse_counts(dense: np.ndarray) -> SparseCounts:
    """COO triples of a dense (I, V) count matrix (numpy in, jax arrays out)."""
    dense = np.asarray(dense, dtype=np.float64)
    doc, term = np.nonzero(dense)
    return SparseCounts(jnp.asarray(doc, dtype=jnp.int32), jnp.asarray(term, dtype=jnp.int32),
                        jnp.asarray(dense[doc, term]))


class SuffStats(NamedTuple):
    """What one E-step leaves behind (the responsibilities r themselves are not kept).

    doc_topic: (I, K) expected factor counts per document, C_t(i) + C_s(i) of Sec. 2.6.1;
    term_topic: tuple over modalities of (K, V_m) expected counts C^m(z, .);
    entropy: scalar, -sum_ij r_ij log r_ij (weighted by counts).
    """

    doc_topic: jnp.ndarray
    term_topic: tuple
    entropy: jnp.ndarray


class TopicVIState(NamedTuple):
    """Variational parameters: gamma (I, K) of q(pi); lambdas, tuple of (K, V_m) of q(phi^m); stats of the last
    E-step (consistent with gamma: gamma = a + stats.doc_topic after every local step)."""

    gamma: jnp.ndarray
    lambdas: tuple
    stats: SuffStats


def dirichlet_expected_log(conc: jnp.ndarray) -> jnp.ndarray:
    """E_q[log theta] under Dir(conc) along the last axis: digamma(c) - digamma(sum c) (Sec. 2.6.2)."""
    return digamma(conc) - digamma(jnp.sum(conc, axis=-1, keepdims=True))


def _dirichlet_log_norm(conc: jnp.ndarray) -> jnp.ndarray:
    """log Gamma(sum c) - sum log Gamma(c) along the last axis."""
    return gammaln(jnp.sum(conc, axis=-1)) - jnp.sum(gammaln(conc), axis=-1)


def e_step(log_pi: jnp.ndarray, log_phis: Sequence[jnp.ndarray], modalities: Sequence[SparseCounts],
           data_axis=None) -> SuffStats:
    """Optimal q(t), q(s) given E log pi (I, K) and E log phi^m (K, V_m) (Sec. 2.6.2):
    r_ijk ∝ exp(E log pi_ik + E log phi^m_k,x_ij).  Returns the expected counts and the entropy of q.
    ``data_axis``: the documents are sharded over that mesh axis (zoo.inference.sharding); the sums over
    documents (term_topic, entropy) are psum'd, doc_topic stays this shard's."""
    n_docs, n_topics = log_pi.shape
    doc_topic = jnp.zeros((n_docs, n_topics))
    term_topic, entropy = [], 0.0
    for log_phi, data in zip(log_phis, modalities):
        logits = log_pi[data.doc] + log_phi.T[data.term]                     # (nnz, K)
        log_norm = logsumexp(logits, axis=1)                                 # (nnz,)
        resp = jnp.exp(logits - log_norm[:, None])
        weighted = data.count[:, None] * resp
        doc_topic = doc_topic + jax.ops.segment_sum(weighted, data.doc, num_segments=n_docs)
        term_topic.append(jax.ops.segment_sum(weighted, data.term, num_segments=log_phi.shape[1]).T)
        # -sum n r log r = sum n logZ - sum n r logits   (r sums to one over k)
        entropy = entropy + jnp.sum(data.count * log_norm) - jnp.sum(weighted * logits)
    if data_axis is not None:
        term_topic, entropy = jax.lax.psum((term_topic, entropy), data_axis)
    return SuffStats(doc_topic, tuple(term_topic), jnp.asarray(entropy))


def update_gamma(prior_concentration: jnp.ndarray, stats: SuffStats) -> jnp.ndarray:
    """q(pi_i) = Dir(a + C_t(i) + C_s(i))  (Sec. 2.6.1)."""
    return prior_concentration[None, :] + stats.doc_topic


def update_lambda(etas: Sequence[jnp.ndarray], stats: SuffStats) -> tuple:
    """q(phi^m_z) = Dir(eta_m + C^m(z, .))  (Sec. 2.6.1)."""
    return tuple(eta[None, :] + c for eta, c in zip(etas, stats.term_topic))


def elbo(state: TopicVIState, prior_concentration: jnp.ndarray, etas: Sequence[jnp.ndarray],
         log_coefficient: jnp.ndarray | float = 0.0, data_axis=None, doc_weight=None) -> jnp.ndarray:
    """The evidence lower bound at ``state``, with q(z) the responsibilities of the last E-step.

    ELBO = sum_i E[log Dir(pi_i; a)] - E[log q(pi_i)] + sum_m,k E[log Dir(phi^m_k; eta_m)] - E[log q(phi^m_k)]
           + sum_ik C_ik E log pi_ik + sum_m,k,v C^m_kv E log phi^m_kv + H[q(z)] + log multinomial coefficients.
    ``data_axis``, ``doc_weight`` (I,): this shard's documents of a sharded fit (weight 0: padding); the
    per-document terms are psum'd, the factor terms and the entropy (already a total) are not.
    """
    log_pi = dirichlet_expected_log(state.gamma)
    real = (lambda x: x) if doc_weight is None else (lambda x: jnp.where(doc_weight > 0, x, 0.0))
    value = jnp.sum(real(_dirichlet_log_norm(prior_concentration) + (log_pi * (prior_concentration - 1.0)).sum(-1)))
    value -= jnp.sum(real(_dirichlet_log_norm(state.gamma) + ((state.gamma - 1.0) * log_pi).sum(-1)))
    value += jnp.sum(real((state.stats.doc_topic * log_pi).sum(-1))) if doc_weight is not None else jnp.sum(
        state.stats.doc_topic * log_pi)
    if data_axis is not None:
        value = jax.lax.psum(value, data_axis)
    for lam, eta, counts in zip(state.lambdas, etas, state.stats.term_topic):
        log_phi = dirichlet_expected_log(lam)
        value += jnp.sum(_dirichlet_log_norm(eta) + (log_phi * (eta - 1.0)).sum(-1))
        value -= jnp.sum(_dirichlet_log_norm(lam) + ((lam - 1.0) * log_phi).sum(-1))
        value += jnp.sum(counts * log_phi)
    return value + state.stats.entropy + log_coefficient


def elbo_explicit(gamma: jnp.ndarray, lambdas: Sequence[jnp.ndarray], responsibilities: Sequence[jnp.ndarray],
                  dense_counts: Sequence[jnp.ndarray], prior_concentration: jnp.ndarray,
                  etas: Sequence[jnp.ndarray]) -> jnp.ndarray:
    """The same ELBO with explicit responsibilities r^m (I, V_m, K) and dense counts (I, V_m) (reference for tests
    and for generic optimizers; no multinomial coefficient)."""
    log_pi = dirichlet_expected_log(gamma)
    value = jnp.sum(_dirichlet_log_norm(prior_concentration) + (log_pi * (prior_concentration - 1.0)).sum(-1))
    value -= jnp.sum(_dirichlet_log_norm(gamma) + ((gamma - 1.0) * log_pi).sum(-1))
    for lam, eta, resp, counts in zip(lambdas, etas, responsibilities, dense_counts):
        log_phi = dirichlet_expected_log(lam)
        value += jnp.sum(_dirichlet_log_norm(eta) + (log_phi * (eta - 1.0)).sum(-1))
        value -= jnp.sum(_dirichlet_log_norm(lam) + ((lam - 1.0) * log_phi).sum(-1))
        expected_joint = log_pi[:, None, :] + log_phi.T[None, :, :]              # (I, V, K)
        safe_log_r = jnp.log(jnp.where(resp > 0, resp, 1.0))
        value += jnp.sum(counts[:, :, None] * resp * (expected_joint - safe_log_r))
    return value


def log_multinomial_coefficient(dense_modalities: Sequence[np.ndarray]) -> float:
    """sum_i log (N_i! / prod_v n_iv!) over modalities (numpy): makes the ELBO a bound on the program's evidence."""
    from scipy.special import gammaln as np_gammaln
    total = 0.0
    for counts in dense_modalities:
        counts = np.asarray(counts, dtype=np.float64)
        total += np.sum(np_gammaln(counts.sum(axis=1) + 1.0)) - np.sum(np_gammaln(counts + 1.0))
    return float(total)


def local_step(gamma: jnp.ndarray, log_phis: Sequence[jnp.ndarray], modalities: Sequence[SparseCounts],
               prior_concentration: jnp.ndarray, data_axis=None) -> tuple[jnp.ndarray, SuffStats]:
    """One E-step for q(t), q(s) then the q(pi) update: the document-level block of coordinate ascent."""
    stats = e_step(dirichlet_expected_log(gamma), log_phis, modalities, data_axis)
    return update_gamma(prior_concentration, stats), stats


def cavi_iteration(state: TopicVIState, modalities: Sequence[SparseCounts], prior_concentration: jnp.ndarray,
                   etas: Sequence[jnp.ndarray], local_steps: int, data_axis=None) -> TopicVIState:
    """One pass: ``local_steps`` alternations of (q(t), q(s)) and q(pi), then q(phi).  Each step is an exact
    block maximizer of the ELBO, hence the ELBO is non-decreasing. ``data_axis``: documents sharded (e_step)."""
    log_phis = tuple(dirichlet_expected_log(lam) for lam in state.lambdas)

    def body(carry, _):
        gamma, _stats = carry
        return local_step(gamma, log_phis, modalities, prior_concentration, data_axis), None

    (gamma, stats), _ = jax.lax.scan(body, (state.gamma, state.stats), None, length=local_steps)
    return TopicVIState(gamma=gamma, lambdas=update_lambda(etas, stats), stats=stats)


def init_state(key: jax.Array, dense_modalities: Sequence[np.ndarray], n_topics: int,
               prior_concentration: jnp.ndarray, etas: Sequence[jnp.ndarray],
               seed_docs_per_factor: int = 2) -> TopicVIState:
    """Initialization of Sec. 3.2.2: each factor gets the counts of a few randomly chosen images (all modalities),
    which avoids the symmetric fixed point where all factors are equally likely; gamma starts uniform.
    Runs in numpy (a one-off; nothing to compile), seeded by the JAX ``key``."""
    rng = numpy_generator(key)
    dense_modalities = [np.asarray(d, dtype=np.float64) for d in dense_modalities]
    n_docs = dense_modalities[0].shape[0]
    n_seed = min(n_docs, n_topics * seed_docs_per_factor)
    chosen = rng.permutation(n_docs)[:n_seed]
    owner = np.arange(n_seed) % n_topics                                    # factor each seed image goes to
    lambdas = []
    for dense, eta in zip(dense_modalities, etas):
        seeded = np.zeros((n_topics, dense.shape[1]))
        np.add.at(seeded, owner, dense[chosen])
        jitter = 0.01 * rng.uniform(size=seeded.shape)
        lambdas.append(jnp.asarray(np.asarray(eta)[None, :] + seeded + jitter))
    doc_total = sum(d.sum(axis=1) for d in dense_modalities)
    gamma = jnp.asarray(np.asarray(prior_concentration)[None, :] + doc_total[:, None] / n_topics)
    # exact dtypes (no weak types) so that a chunk's output state has the type of its input: no recompilation
    stats = SuffStats(jnp.zeros((n_docs, n_topics), dtype=gamma.dtype),
                      tuple(jnp.zeros(lam.shape, dtype=lam.dtype) for lam in lambdas),
                      jnp.zeros((), dtype=gamma.dtype))
    return TopicVIState(gamma=gamma, lambdas=tuple(lambdas), stats=stats)


def init_batched(keys, dense_modalities, n_topics: int, prior_concentration, etas,
                 seed_docs_per_factor: int) -> TopicVIState:
    """``init_state`` for every key (C, 2), stacked along a leading axis C."""
    states = [init_state(k, dense_modalities, n_topics, prior_concentration, etas, seed_docs_per_factor)
              for k in keys]
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *states)


def infer_doc_topics(log_phis: Sequence[jnp.ndarray], modalities: Sequence[SparseCounts], n_docs: int,
                     prior_concentration: jnp.ndarray, num_steps: int = 100) -> tuple[jnp.ndarray, SuffStats]:
    """Test-time inference: q(pi_i) for new documents with the factors fixed (only the modalities given)."""
    n_topics = prior_concentration.shape[0]
    doc_total = jnp.zeros(n_docs)
    for data in modalities:
        doc_total = doc_total + jax.ops.segment_sum(data.count, data.doc, num_segments=n_docs)
    gamma0 = prior_concentration[None, :] + doc_total[:, None] / n_topics

    def body(gamma, _):
        gamma_new, _stats = local_step(gamma, log_phis, modalities, prior_concentration)
        return gamma_new, None

    gamma, _ = jax.lax.scan(body, gamma0, None, length=num_steps)
    return local_step(gamma, log_phis, modalities, prior_concentration)


def token_topic_counts(gamma: jnp.ndarray, log_phi: jnp.ndarray, data: SparseCounts,
                       group: jnp.ndarray, n_groups: int) -> jnp.ndarray:
    """sum over the tokens m of each group (e.g. a region) of q(z | b_m): (n_groups, K).  ``group`` (nnz,) maps each
    non-zero entry to its group; q(z | b_m) ∝ exp(E log pi + E log phi^b_{z, b_m}) as in Sec. 2.7."""
    logits = dirichlet_expected_log(gamma)[data.doc] + log_phi.T[data.term]
    resp = jax.nn.softmax(logits, axis=1)
    return jax.ops.segment_sum(data.count[:, None] * resp, group, num_segments=n_groups)


def _lda_chunk(state: TopicVIState, modalities, prior_concentration, etas, log_coefficient, *, local_steps: int,
               chunk: int):
    def body(s, _):
        s = cavi_iteration(s, modalities, prior_concentration, etas, local_steps)
        return s, elbo(s, prior_concentration, etas, log_coefficient)

    return jax.lax.scan(body, state, None, length=chunk)


@functools.partial(jax.jit, static_argnames=("local_steps", "chunk"))
def lda_chunk_batched(state, modalities, prior_concentration, etas, log_coefficient, *, local_steps, chunk):
    """``chunk`` iterations of every restart (leading axis of ``state``); jitted once per shape."""
    return jax.vmap(lambda s: _lda_chunk(s, modalities, prior_concentration, etas, log_coefficient,
                                         local_steps=local_steps, chunk=chunk))(state)


def fit_mean_field(keys: jax.Array, dense_modalities: Sequence[np.ndarray], n_topics: int,
                   prior_concentration: jnp.ndarray, etas: Sequence[jnp.ndarray], *, max_iter: int = 200,
                   tol: float = 1e-6, local_steps: int = 3, chunk: int = 10, seed_docs_per_factor: int = 2,
                   progress: Callable | None = None, progress_bar: bool = False) -> tuple[TopicVIState, np.ndarray]:
    """MoM-LDA by coordinate ascent, one restart per key (``keys`` (C, 2)), vectorized over restarts, in compiled
    chunks of ``chunk`` iterations (``driver.optimize_chunked``: stops when the ELBO's relative change is below
    ``tol``); ``progress(n_iterations, elbo (C, chunk))`` after every chunk (``progress_bar`` is no longer drawn
    here: pass ``progress``).

    Returns the final state (leading axis C) and the ELBO trace (C, iterations)."""
    if progress_bar:
        raise ValueError("progress_bar: zoo.inference draws no progress bars; pass progress=<callback>")
    dense = [np.asarray(d, dtype=np.float64) for d in dense_modalities]
    modalities = tuple(sparse_counts(d) for d in dense)
    prior_concentration = jnp.asarray(prior_concentration, dtype=jnp.float64)
    etas = tuple(jnp.asarray(e, dtype=jnp.float64) for e in etas)
    log_coefficient = jnp.asarray(log_multinomial_coefficient(dense_modalities))
    chunk = max(1, min(int(chunk), int(max_iter)))

    state = init_batched(keys, dense, n_topics, prior_concentration, etas, seed_docs_per_factor)
    return optimize_chunked(lambda s: lda_chunk_batched(s, modalities, prior_concentration, etas, log_coefficient,
                                                         local_steps=local_steps, chunk=chunk), state,
                            max_iter=max_iter, tol=tol, chunk=chunk, progress=progress)
