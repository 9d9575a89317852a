"""Stochastic variational inference for ``yakhnenko.mom_lda`` and ``yakhnenko.mom_hdp`` (method ``stochastic_vi``).

Hoffman et al. 2013 over minibatches of images (``zoo.inference.topics.streaming``), the images in memory
(``MultimodalCounts``) or in a corpus folder read shard by shard (``zoo.data.streaming``):

>>> import pathlib, tempfile, zoo
>>> folder = pathlib.Path(tempfile.mkdtemp()) / "corpus"         # real images: zoo.load_dataset("corel5k")
>>> corpus = zoo.data.streaming.write_corpus(folder, zoo.load_dataset("yakhnenko_synthetic"), shard_size=100)
>>> fit = zoo.fit(zoo.model("yakhnenko.mom_hdp", truncation=10), corpus, method="stochastic_vi",
...               batch_size=64, passes=2, tau0=1.0, kappa=0.7, progress_bar=False)
>>> fit.method
'stochastic_vi'

(the generic ``svi`` is NumPyro's SVI on the program; ``stochastic_vi`` is this one).  A fit on in-memory images
is completed like ``mean_field_vi``'s (each image's q(pi) by a last local step, draws of q, pointwise log
likelihood); a fit on a corpus folder holds the global q only (draws of phi_w, phi_b; beta), since per-image
quantities need not fit in memory.  Predictions are the same as the batch methods' (``TopicFitState``).
"""
from __future__ import annotations

import dataclasses
import time

import jax
import jax.numpy as jnp
import numpy as np

from zoo.data.containers import MultimodalCounts
from zoo.data.streaming import MemoryCorpus, ShardedCorpus, as_corpus
from zoo.inference.topics import stick_breaking_vi as sbvi
from zoo.inference.topics import streaming as st
from zoo.inference.host_random import dirichlet_draws, drawable_or_ones
from zoo.inference.topics import topic_vi
from zoo.core.options import nonnegative_float, positive_float, positive_int
from zoo.papers import yakhnenko as yh
from zoo.core.priors import dirichlet_concentration
from zoo.core.progress import progress_callback
from zoo.core.registry import register_method
from zoo.core.fit import Fit
from zoo.core.idata import POINT_ESTIMATE_NOTE, to_inference_data

__all__ = ["fit_stochastic_vi", "check_svi_options", "SVIRun", "run_stochastic_vi", "split_tokens",
           "completion_perplexity"]


def check_svi_options(batch_size, passes, tau0, kappa, local_steps, local_tol, beta_steps, beta_learning_rate,
                      seed_docs_per_factor, num_draws) -> dict:
    """The options of ``stochastic_vi``, checked before any computation (ValueError naming the option).
    kappa must lie in (0.5, 1] (Robbins-Monro conditions on rho_t = (tau0 + t)^-kappa, Hoffman et al. Sec. 2.6)."""
    out = dict(batch_size=positive_int(batch_size, "batch_size"), passes=positive_int(passes, "passes"),
               tau0=nonnegative_float(tau0, "tau0"), kappa=positive_float(kappa, "kappa"),
               local_steps=positive_int(local_steps, "local_steps"),
               local_tol=nonnegative_float(local_tol, "local_tol"), beta_steps=positive_int(beta_steps, "beta_steps"),
               beta_learning_rate=positive_float(beta_learning_rate, "beta_learning_rate"),
               seed_docs_per_factor=positive_int(seed_docs_per_factor, "seed_docs_per_factor"),
               num_draws=positive_int(num_draws, "num_draws"))
    if not 0.5 < out["kappa"] <= 1.0:
        raise ValueError(f"kappa: expected 0.5 < kappa <= 1 (Robbins-Monro), got {kappa!r}")
    return out


@dataclasses.dataclass
class SVIRun:
    """What ``run_stochastic_vi`` returns: state (``streaming_topics.SVIState``, leading restart axis C), info
    (``SVIInfo`` arrays (C, steps)), compile_seconds (the step's compilation), run_seconds (every step after it,
    reading and packing the minibatches included), batch_size and capacities (padded entries per modality)."""

    state: st.SVIState
    info: st.SVIInfo
    compile_seconds: float
    run_seconds: float
    batch_size: int
    capacities: tuple


def run_stochastic_vi(corpus, *, n_topics: int, etas, seed: int, num_chains: int, hdp: bool,
                      prior_concentration=None, alpha_pi=1.0, stick_prior=None, init_stick_logits=None,
                      batch_size: int = 256, passes: int = 10, tau0: float = 1.0, kappa: float = 0.7,
                      local_steps: int = 50, local_tol: float = 1e-3, beta_steps: int = 25,
                      beta_learning_rate: float = 0.05, seed_docs_per_factor: int = 2, progress=None) -> SVIRun:
    """SVI over any corpus (``zoo.data.streaming``: any number of modalities): the minibatch schedule of every pass
    drawn first (``corpus.pass_order``), one compiled step for the largest minibatch, then the steps in order.
    ``etas``: per modality (V_m,) Dirichlet concentrations; LDA: ``prior_concentration`` (K,); HDP: ``alpha_pi``,
    ``stick_prior`` and ``init_stick_logits`` (K-1,).  ``progress(n)`` after each step."""
    corpus = as_corpus(corpus)
    rng = np.random.default_rng(seed)
    batch_size = min(int(batch_size), corpus.n_docs)
    orders = [corpus.pass_order(rng) for _ in range(int(passes))]
    nnz = corpus.doc_nnz()
    capacities = tuple(st.minibatch_capacity(nnz[:, m], orders, batch_size) for m in range(nnz.shape[1]))
    etas = tuple(jnp.asarray(e, dtype=jnp.float64) for e in etas)
    logits0 = jnp.zeros(0) if not hdp else jnp.asarray(init_stick_logits, dtype=jnp.float64).reshape(n_topics - 1)
    conc = jnp.ones(n_topics) if prior_concentration is None else jnp.asarray(prior_concentration, jnp.float64)
    states = []
    for key in jax.random.split(jax.random.PRNGKey(seed), int(num_chains)):
        chosen = rng.choice(corpus.n_docs, size=min(corpus.n_docs, n_topics * seed_docs_per_factor), replace=False)
        states.append(st.init_svi_state(key, corpus.read_docs(np.sort(chosen)), n_topics, etas, logits0))
    state = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *states)
    dynamic = (float(corpus.n_docs), conc, etas, jnp.asarray(float(alpha_pi)),
               stick_prior if stick_prior is not None else _no_stick_prior(), jnp.asarray(float(tau0)),
               jnp.asarray(float(kappa)), jnp.asarray(float(local_tol)))
    static = dict(local_steps=int(local_steps), hdp=bool(hdp), beta_steps=int(beta_steps),
                  beta_learning_rate=float(beta_learning_rate))
    first = st.pack_minibatch(next(corpus.minibatches(orders[0], batch_size)), batch_size, capacities)
    t0 = time.perf_counter()
    compiled = st.svi_step_batched.lower(state, first, *dynamic, **static).compile()
    compile_seconds = time.perf_counter() - t0

    def batches():
        for order in orders:
            for rows in corpus.minibatches(order, batch_size):
                yield st.pack_minibatch(rows, batch_size, capacities)

    t0 = time.perf_counter()
    state, info = st.run_svi(lambda s, b: compiled(s, b, *dynamic), state, batches(), progress)
    jax.block_until_ready(state)
    return SVIRun(state, info, compile_seconds, time.perf_counter() - t0, batch_size, capacities)


def _no_stick_prior():
    import numpyro.distributions as dist
    return dist.Beta(1.0, 1.0)          # unused by the LDA step (hdp=False); a placeholder of the right type


def _check_corpus(data):
    """In-memory images are checked as for the batch methods; a corpus folder must hold the two modalities."""
    if isinstance(data, MultimodalCounts):
        return yh.check_counts(data)
    if not isinstance(data, (ShardedCorpus, MemoryCorpus, str)) and not hasattr(data, "__fspath__"):
        raise ValueError(f"data: expected zoo.data.MultimodalCounts, a zoo.data.streaming corpus or a corpus "
                         f"folder, got {type(data).__name__}")
    corpus = as_corpus(data)
    if len(corpus.modalities) != 2:
        raise ValueError(f"data: the corpus has modalities {list(corpus.modalities)}; the MoM models need two "
                         f"(caption words, visual words)")
    return corpus


@register_method(("yakhnenko.mom_lda", "yakhnenko.mom_hdp"), "stochastic_vi", kind="variational")
def fit_stochastic_vi(spec, data, seed=0, num_chains=1, batch_size=256, passes=10, tau0=1.0, kappa=0.7,
                      local_steps=50, local_tol=1e-3, beta_steps=25, beta_learning_rate=0.05, seed_docs_per_factor=2,
                      num_draws=100, progress_bar=True) -> Fit:
    """Stochastic VI (Hoffman et al. 2013): ``passes`` passes over the images in minibatches of ``batch_size``
    (the last padded), local coordinate ascent per minibatch (at most ``local_steps``, until gamma moves less
    than ``local_tol``), natural-gradient steps rho_t = (tau0 + t)^-kappa; each chain a random restart."""
    opts = check_svi_options(batch_size, passes, tau0, kappa, local_steps, local_tol, beta_steps, beta_learning_rate,
                             seed_docs_per_factor, num_draws)
    num_chains = positive_int(num_chains, "num_chains")
    checked = _check_corpus(data)
    corpus = as_corpus(checked)
    n_words, n_visual = corpus.n_terms
    etas = (jnp.asarray(dirichlet_concentration(spec.priors["phi_w"], n_words, "phi_w")),
            jnp.asarray(dirichlet_concentration(spec.priors["phi_b"], n_visual, "phi_b")))
    hdp = spec.id == "yakhnenko.mom_hdp"
    kwargs = dict(n_topics=spec.options["truncation" if hdp else "n_topics"], etas=etas, seed=seed,
                  num_chains=num_chains, hdp=hdp, **{k: v for k, v in opts.items() if k != "num_draws"})
    k = kwargs["n_topics"]
    if hdp:
        stick_prior = yh._check_stick_prior(spec.priors["sticks"])
        kwargs.update(alpha_pi=spec.options["alpha_pi"], stick_prior=stick_prior,
                      init_stick_logits=sbvi.uniform_stick_logits(k))      # beta = 1/K (as stick_breaking_vi)
    else:
        kwargs.update(prior_concentration=jnp.asarray(dirichlet_concentration(spec.priors["pi"], k, "pi")))
    total = opts["passes"] * -(-corpus.n_docs // min(opts["batch_size"], corpus.n_docs))
    with progress_callback(total, "MoM SVI", progress_bar) as progress:
        run = run_stochastic_vi(corpus, progress=progress, **kwargs)
    beta = np.asarray(jax.vmap(sbvi.stick_weights)(run.state.stick_logits)) if hdp else None
    prior_conc = spec.options["alpha_pi"] * beta if hdp else np.asarray(kwargs["prior_concentration"])
    trace = np.asarray(run.info.objective)                               # (C, steps): noisy ELBO estimates
    if isinstance(checked, MultimodalCounts):
        fit = _complete_fit(spec, checked, run, prior_conc, trace, seed, opts, beta)
    else:
        fit = _global_fit(spec, corpus, run, prior_conc, trace, seed, opts["num_draws"], beta)
    for group in ("sample_stats",):
        getattr(fit.idata, group).attrs.update(compile_seconds=run.compile_seconds, run_seconds=run.run_seconds,
                                               objective="noisy estimate of the ELBO at each SVI step")
    return fit


def _complete_fit(spec, data, run: SVIRun, prior_conc, trace, seed, opts, beta):
    """Each image's q(pi) by local coordinate ascent with the fitted factors (both modalities), then the fit of
    the batch methods (``yakhnenko.make_topic_fit``)."""
    mods = (topic_vi.sparse_counts(data.words), topic_vi.sparse_counts(data.visual_words))
    gammas, stats = [], []
    for c in range(trace.shape[0]):
        log_phis = tuple(topic_vi.dirichlet_expected_log(lam[c]) for lam in run.state.lambdas)
        conc = jnp.asarray(prior_conc[c] if np.ndim(prior_conc) == 2 else prior_conc)
        g0 = st.initial_gamma(mods, conc, data.words.shape[0])
        g, s, _ = _local(g0, log_phis, mods, conc, opts["local_steps"], opts["local_tol"])
        gammas.append(g)
        stats.append(s)
    gamma = jnp.stack(gammas)
    stacked = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *stats)
    topic = topic_vi.TopicVIState(gamma=gamma, lambdas=run.state.lambdas, stats=stacked)
    return yh.make_topic_fit(spec, data, "stochastic_vi", topic, prior_conc, trace, seed, opts["num_draws"],
                             beta=beta)


_local = jax.jit(st.local_coordinate_ascent, static_argnums=4)


def _global_fit(spec, corpus, run: SVIRun, prior_conc, trace, seed, num_draws, beta):
    """The global q only: draws phi_w ~ Dir(lambda_w), phi_b ~ Dir(lambda_b) per restart, beta (HDP)."""
    lam_w, lam_b = (np.asarray(x) for x in run.state.lambdas)
    n_chain, n_factor = lam_w.shape[0], lam_w.shape[1]
    key = jax.random.fold_in(jax.random.PRNGKey(seed), 7)
    draws = {"phi_w": [], "phi_b": []}
    for c, ck in enumerate(jax.random.split(key, n_chain)):
        kw, kb = jax.random.split(ck)
        draws["phi_w"].append(dirichlet_draws(kw, drawable_or_ones(lam_w[c]), num_draws))     # (S, K, W)
        draws["phi_b"].append(dirichlet_draws(kb, drawable_or_ones(lam_b[c]), num_draws))     # (S, K, V)
    posterior = {k: np.stack(v) for k, v in draws.items()}
    if beta is not None:
        posterior["beta"] = np.broadcast_to(beta[:, None], (n_chain, num_draws) + beta.shape[1:])
    coords = {"factor": np.arange(n_factor)}
    if getattr(corpus, "vocabularies", None) is not None:
        coords["word"], coords["visual_word"] = list(corpus.vocabularies[0]), list(corpus.vocabularies[1])
    idata = to_inference_data(
        posterior, sample_stats={"objective": trace[:, None, :]},
        dims={"phi_w": ["factor", "word"], "phi_b": ["factor", "visual_word"], "beta": ["factor"],
              "objective": ["iteration"]}, coords=coords,
        attrs={"method": "stochastic_vi", "model": spec.id,
               "note": "chain = restart; draw = a draw of that restart's global q (corpus read from disk: no "
                       "per-image q, no pointwise log likelihood)"})
    if beta is not None:
        idata.posterior["beta"].attrs["q"] = POINT_ESTIMATE_NOTE   # moved beside q's parameters by zoo.core.finish
    best = int(np.argmax(trace[:, -1]))
    state = yh.TopicFitState(lambda_w=lam_w[best], lambda_b=lam_b[best], gamma=np.zeros((0, n_factor)),
                             prior_concentration=np.asarray(prior_conc[best] if np.ndim(prior_conc) == 2
                                                            else prior_conc),
                             beta=None if beta is None else beta[best], final_elbo=trace[:, -1], best_chain=best)
    return Fit(idata=idata, spec=spec, method="stochastic_vi", state=state,
               headline=["beta"] if beta is not None else ["phi_w"], predictor=yh.predict_topics, data=corpus)


# ------------------------------------------------------------------------------------------------ held-out metric
def split_tokens(counts: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Document completion: each document's tokens (a document with >= 2 tokens) shuffled and split into an
    observed first half and a held-out second half; returns (observed, held_out), both (I, V) counts, documents
    with fewer than 2 tokens left out of both (all-zero rows)."""
    rng = np.random.default_rng(seed)
    counts = np.asarray(counts)
    observed, held = np.zeros(counts.shape), np.zeros(counts.shape)
    for i, row in enumerate(counts.astype(np.int64)):
        tokens = np.repeat(np.arange(row.size), row)
        if tokens.size < 2:
            continue
        rng.shuffle(tokens)
        half = tokens.size // 2
        np.add.at(observed[i], tokens[:half], 1.0)
        np.add.at(held[i], tokens[half:], 1.0)
    return observed, held


def completion_perplexity(phi: np.ndarray, alpha: np.ndarray, observed: np.ndarray, held_out: np.ndarray,
                          num_steps: int = 100) -> float:
    """Held-out perplexity by document completion, one estimator for every model: q(theta_i) = Dir(gamma_i) from
    the observed tokens by mean-field fixed-point iterations (``topic_vi.infer_doc_topics``) with the model's
    topics phi (K, V) (rows normalized) and prior alpha (K,), then exp(- sum n_iv log sum_k E[theta_ik] phi_kv /
    sum n_iv) over the held-out tokens."""
    keep = observed.sum(1) > 0
    observed, held_out = observed[keep], held_out[keep]
    phi = np.clip(np.asarray(phi, dtype=np.float64), 1e-300, None)
    phi = phi / phi.sum(1, keepdims=True)
    gamma, _ = topic_vi.infer_doc_topics((jnp.log(jnp.asarray(phi)),), (topic_vi.sparse_counts(observed),),
                                         observed.shape[0], jnp.asarray(alpha, dtype=jnp.float64), num_steps)
    theta = np.asarray(gamma) / np.asarray(gamma).sum(1, keepdims=True)
    return float(np.exp(-np.sum(held_out * np.log(theta @ phi)) / held_out.sum()))
