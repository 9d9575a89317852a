"""Stochastic variational inference (Hoffman, Blei, Wang & Paisley 2013, JMLR 14) for MoM-LDA and MoM-HDP.

The model and the variational family are those of ``topic_vi`` / ``stick_breaking_vi``.  The global parameters
are the factors' q(phi^m_k) = Dir(lambda^m_k) (and, for the HDP, the point estimate of beta through its stick
logits); the local ones are each document's q(pi_i) = Dir(gamma_i) and q(z_ij).  One SVI step (Hoffman et al.,
Alg. 1) on a minibatch B of S documents out of a corpus of D:

1. local step: coordinate ascent on gamma_B and q(z_B) with q(phi) fixed (``topic_vi.local_step`` repeated, the
   same document-level block as the batch coordinate ascent), from gamma_i = a + N_i / K;
2. intermediate global parameter (Hoffman eq. 32 for LDA): lambda_hat^m = eta_m + (D / S) C^m_B(z, .), the
   optimum of lambda if the corpus were D / S copies of the minibatch;
3. natural-gradient step (eq. 25 / 33): lambda <- (1 - rho_t) lambda + rho_t lambda_hat,
   rho_t = (tau0 + t)^(-kappa), t = 1, 2, ...; kappa in (0.5, 1] (Robbins-Monro, Hoffman Sec. 2.6).
4. HDP: beta enters the ELBO only through s = sum_i E_q log pi_i (K,) (``stick_breaking_vi.beta_objective``); s is
   tracked by the same stochastic approximation, s <- (1 - rho_t) s + rho_t (D / S) s_B, and the stick logits are
   re-optimized against it by ``stick_breaking_vi.optimize_sticks`` (which never lowers that objective).

With S = D (one minibatch holding the whole corpus) and rho = 1 a step is exactly one iteration of the batch
coordinate ascent (``topic_vi.cavi_iteration`` / ``stick_breaking_vi.hdp_iteration``) started from the same
gamma.  Minibatches have a fixed shape (S documents, a fixed number of non-zero entries per modality), the last
one padded (documents with ``doc_mask`` 0, entries with count 0), so one compilation serves a whole fit.
Shapes: K factors, V_m terms of modality m, S documents per minibatch, E_m padded non-zero entries.
"""
from __future__ import annotations

import functools
from typing import Callable, Iterable, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from zoo.inference.topics import stick_breaking_vi as sbvi
from zoo.inference.topics import topic_vi as tv

__all__ = ["Minibatch", "SVIState", "SVIInfo", "learning_rate", "initial_gamma", "local_coordinate_ascent",
           "minibatch_elbo", "global_elbo_terms", "svi_step", "svi_step_batched", "pack_minibatch",
           "minibatch_capacity", "init_svi_state", "run_svi"]


class Minibatch(NamedTuple):
    """modalities: one ``topic_vi.SparseCounts`` per modality, padded to a fixed number E_m of entries (count 0,
    doc 0, term 0); doc_mask (S,): 1.0 for a real document, 0.0 for padding."""

    modalities: tuple
    doc_mask: jnp.ndarray


class SVIState(NamedTuple):
    """Global variational parameters: lambdas, tuple of (K, V_m); stick_logits (K-1,) of beta (HDP; (0,) for
    LDA); sum_log_pi (K,), the running estimate of sum_i E_q log pi_i over the corpus (HDP's beta step);
    step: updates done so far (int)."""

    lambdas: tuple
    stick_logits: jnp.ndarray
    sum_log_pi: jnp.ndarray
    step: jnp.ndarray


class SVIInfo(NamedTuple):
    """rho: the step size used; local_steps: local coordinate-ascent iterations run; local_elbo: the minibatch's
    ELBO terms after the local step (``minibatch_elbo``); objective: the noisy estimate of the corpus ELBO,
    (D / S) local_elbo + ``global_elbo_terms`` at the new global parameters."""

    rho: jnp.ndarray
    local_steps: jnp.ndarray
    local_elbo: jnp.ndarray
    objective: jnp.ndarray


def learning_rate(step, tau0, kappa):
    """rho_t = (tau0 + t)^(-kappa) (Hoffman et al. 2013, Sec. 2.6), t = ``step`` >= 1."""
    return jnp.power(tau0 + step, -kappa)


def initial_gamma(modalities: Sequence[tv.SparseCounts], prior_concentration: jnp.ndarray, n_docs: int):
    """gamma_i = a + N_i / K (S, K): the start of every local step, as ``topic_vi.init_state`` starts gamma."""
    n_topics = prior_concentration.shape[0]
    total = sum(jax.ops.segment_sum(m.count, m.doc, num_segments=n_docs) for m in modalities)
    return prior_concentration[None, :] + total[:, None] / n_topics


def local_coordinate_ascent(gamma: jnp.ndarray, log_phis: Sequence[jnp.ndarray], modalities, prior_concentration,
                            max_steps: int, tol) -> tuple[jnp.ndarray, tv.SuffStats, jnp.ndarray]:
    """``topic_vi.local_step`` repeated (q(z), then q(pi); each an exact block maximizer) until the largest mean
    absolute change of a document's gamma is at most ``tol`` (tol = 0: exactly ``max_steps`` steps unless gamma
    stops moving), at most ``max_steps`` times.  Returns gamma (S, K), the last E-step's statistics, steps run."""
    stats0 = tv.SuffStats(jnp.zeros_like(gamma), tuple(jnp.zeros_like(lp) for lp in log_phis),
                          jnp.zeros((), gamma.dtype))

    def cond(carry):
        step, _gamma, _stats, change = carry
        return (step < max_steps) & (change > tol)

    def body(carry):
        step, g, _stats, _change = carry
        new, stats = tv.local_step(g, log_phis, modalities, prior_concentration)
        change = jnp.max(jnp.mean(jnp.abs(new - g), axis=1))
        return step + 1, new, stats, change

    step, gamma, stats, _ = jax.lax.while_loop(cond, body, (jnp.asarray(0), gamma, stats0, jnp.asarray(jnp.inf)))
    return gamma, stats, step


def minibatch_elbo(gamma, stats: tv.SuffStats, log_phis, prior_concentration, doc_mask) -> jnp.ndarray:
    """The ELBO terms that involve the minibatch's documents, q(phi) fixed (``topic_vi.elbo`` without the factor
    terms): sum_i [E log Dir(pi_i; a) - E log q(pi_i) + sum_k C_ik E log pi_ik] + sum_m,k,v C^m_kv E log phi^m_kv
    + H[q(z)], padding documents (mask 0) left out.  Each local coordinate step cannot lower it."""
    log_pi = tv.dirichlet_expected_log(gamma)
    per_doc = (tv._dirichlet_log_norm(prior_concentration) + (log_pi * (prior_concentration - 1.0)).sum(-1)
               - tv._dirichlet_log_norm(gamma) - ((gamma - 1.0) * log_pi).sum(-1) + (stats.doc_topic * log_pi).sum(-1))
    value = jnp.sum(jnp.where(doc_mask > 0, per_doc, 0.0)) + stats.entropy
    for log_phi, counts in zip(log_phis, stats.term_topic):
        value = value + jnp.sum(counts * log_phi)
    return value


def global_elbo_terms(lambdas, etas) -> jnp.ndarray:
    """sum_m,k E log Dir(phi^m_k; eta_m) - E log q(phi^m_k): the ELBO terms of the factors alone."""
    value = 0.0
    for lam, eta in zip(lambdas, etas):
        log_phi = tv.dirichlet_expected_log(lam)
        value += jnp.sum(tv._dirichlet_log_norm(eta) + (log_phi * (eta - 1.0)).sum(-1))
        value -= jnp.sum(tv._dirichlet_log_norm(lam) + ((lam - 1.0) * log_phi).sum(-1))
    return value


def svi_step(state: SVIState, batch: Minibatch, corpus_size, prior_concentration, etas, alpha_pi, stick_prior,
             tau0, kappa, local_tol, *, local_steps: int, hdp: bool, beta_steps: int = 25,
             beta_learning_rate: float = 0.05) -> tuple[SVIState, SVIInfo]:
    """One SVI update (module doc, steps 1-4) on ``batch``; ``corpus_size`` = D.  LDA (``hdp=False``): q(pi_i)'s
    prior is ``prior_concentration`` (K,); HDP: alpha_pi beta(stick_logits), ``stick_prior`` the distribution of
    each stick proportion (``stick_breaking_vi``)."""
    n_docs = batch.doc_mask.shape[0]
    if hdp:
        conc = alpha_pi * sbvi.stick_weights(state.stick_logits)
    else:
        conc = prior_concentration
    log_phis = tuple(tv.dirichlet_expected_log(lam) for lam in state.lambdas)
    gamma0 = initial_gamma(batch.modalities, conc, n_docs)
    gamma, stats, n_local = local_coordinate_ascent(gamma0, log_phis, batch.modalities, conc, local_steps, local_tol)
    step = state.step + 1
    rho = learning_rate(step, tau0, kappa)
    scale = corpus_size / jnp.sum(batch.doc_mask)                        # D / S (real documents only)
    lambdas = tuple((1.0 - rho) * lam + rho * (eta[None, :] + scale * counts)      # Hoffman eq. 25, 32-33
                    for lam, eta, counts in zip(state.lambdas, etas, stats.term_topic))
    logits, sum_log_pi = state.stick_logits, state.sum_log_pi
    objective_prior = 0.0
    if hdp:
        log_pi = tv.dirichlet_expected_log(gamma)
        batch_sum = jnp.where(batch.doc_mask[:, None] > 0, log_pi, 0.0).sum(axis=0)
        sum_log_pi = (1.0 - rho) * sum_log_pi + rho * (scale * batch_sum)

        def stick_log_prior(u):
            return jnp.sum(stick_prior.log_prob(u))
        if logits.shape[0] > 0:
            logits = sbvi.optimize_sticks(logits, sum_log_pi, corpus_size, alpha_pi, stick_log_prior,
                                          learning_rate=beta_learning_rate, num_steps=beta_steps)
        objective_prior = stick_log_prior(sbvi.stick_proportions(logits))
    local = minibatch_elbo(gamma, stats, log_phis, conc, batch.doc_mask)
    objective = scale * local + global_elbo_terms(lambdas, etas) + objective_prior
    new = SVIState(lambdas=lambdas, stick_logits=logits, sum_log_pi=sum_log_pi, step=step)
    return new, SVIInfo(rho=rho, local_steps=n_local, local_elbo=local, objective=objective)


@functools.partial(jax.jit, static_argnames=("local_steps", "hdp", "beta_steps", "beta_learning_rate"))
def svi_step_batched(state, batch, corpus_size, prior_concentration, etas, alpha_pi, stick_prior, tau0, kappa,
                     local_tol, **static):
    """``svi_step`` for every restart (leading axis of ``state``) on the same minibatch; one compilation per
    minibatch shape (and static settings)."""
    return jax.vmap(lambda s: svi_step(s, batch, corpus_size, prior_concentration, etas, alpha_pi, stick_prior,
                                       tau0, kappa, local_tol, **static))(state)


def pack_minibatch(rows: Sequence, batch_size: int, capacities: Sequence[int]) -> Minibatch:
    """A fixed-shape ``Minibatch`` from the compressed rows of n <= ``batch_size`` documents (per modality, an
    object with numpy ``indptr`` (n+1,), ``indices`` (nnz,), ``counts`` (nnz,), e.g. ``zoo.data.streaming.CSRRows``):
    documents n.. are padding (mask 0), entries beyond each modality's nnz have count 0."""
    n = rows[0].indptr.shape[0] - 1
    if n > batch_size or n < 1:
        raise ValueError(f"rows: {n} documents for a minibatch of {batch_size}")
    out = []
    for csr, cap in zip(rows, capacities):
        nnz = csr.indices.shape[0]
        if nnz > cap:
            raise ValueError(f"rows: {nnz} non-zero entries exceed the minibatch capacity {cap}")
        doc = np.zeros(cap, np.int32)
        doc[:nnz] = np.repeat(np.arange(n, dtype=np.int32), np.diff(csr.indptr))
        term = np.zeros(cap, np.int32)
        term[:nnz] = csr.indices
        count = np.zeros(cap, np.float64)
        count[:nnz] = csr.counts
        out.append(tv.SparseCounts(jnp.asarray(doc), jnp.asarray(term), jnp.asarray(count)))
    mask = np.zeros(batch_size)
    mask[:n] = 1.0
    return Minibatch(tuple(out), jnp.asarray(mask))


def minibatch_capacity(doc_nnz: np.ndarray, orders: Iterable[np.ndarray], batch_size: int) -> int:
    """The most non-zero entries any minibatch holds when the documents are visited in each of ``orders`` (arrays
    of document ids) and cut into consecutive minibatches of ``batch_size``: one compiled shape for the fit."""
    best = 1
    for order in orders:
        sizes = np.asarray(doc_nnz)[np.asarray(order)]
        sums = np.add.reduceat(sizes, np.arange(0, sizes.size, batch_size)) if sizes.size else np.zeros(1)
        best = max(best, int(sums.max()))
    return best


def init_svi_state(key: jax.Array, seed_counts: Sequence[np.ndarray], n_topics: int, etas,
                   stick_logits: jnp.ndarray) -> SVIState:
    """Global starting point as in ``topic_vi.init_state`` (Sec. 3.2.2 of the paper): each factor gets the counts
    of a few documents, here ``seed_counts`` (dense (n, V_m) per modality, n = K x seed documents per factor, read
    from the corpus by the caller), plus jitter; beta from ``stick_logits`` (K-1,)."""
    prior = jnp.ones(n_topics)                    # gamma of the seed documents is not used
    state = tv.init_state(key, seed_counts, n_topics, prior, etas, seed_docs_per_factor=seed_counts[0].shape[0])
    logits = jnp.asarray(stick_logits, dtype=jnp.float64)
    return SVIState(lambdas=state.lambdas, stick_logits=logits, sum_log_pi=jnp.zeros(n_topics),
                    step=jnp.asarray(0, dtype=jnp.int32))


def run_svi(step: Callable, state, batches: Iterable[Minibatch], progress: Callable | None = None):
    """Apply ``step(state, batch) -> (state, SVIInfo)`` to each minibatch in turn; returns the final state and the
    infos stacked along a trailing step axis (numpy).  ``progress(n)`` after every step."""
    infos = []
    for batch in batches:
        state, info = step(state, batch)
        infos.append(info)
        if progress is not None:
            progress(1)
    stacked = SVIInfo(*(np.stack([np.asarray(x) for x in field], axis=-1) for field in zip(*infos)))
    return state, stacked
