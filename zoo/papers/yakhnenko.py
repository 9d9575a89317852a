"""Yakhnenko & Honavar: ``yakhnenko.mom_lda`` (mean-field VI) and ``yakhnenko.mom_hdp`` (truncated stick-breaking VI).

>>> import zoo
>>> counts = zoo.load_dataset("yakhnenko_synthetic", seed=0)     # real images: zoo.load_dataset("corel5k")
>>> counts
MultimodalCounts(images=300, words=27, visual_words=54)
>>> fit = zoo.fit(zoo.model("yakhnenko.mom_hdp", truncation=10), counts, method="stick_breaking_vi", seed=0,
...               num_chains=2, progress_bar=False)
>>> fit.predict(counts).caption_word_proba.shape                   # (images, caption vocabulary)
(300, 27)

Both also get the generic ``nuts``, ``svi`` and ``map`` on the NumPyro program (small data only).  Predictions use
test-time VI on the visual words alone (Sec. 2.7); metrics and the paper's baselines are at the bottom.
"""
from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
from scipy.special import gammaln

from zoo.data.containers import MultimodalCounts
from zoo.inference.topics import stick_breaking_vi as sbvi
from zoo.inference import sharding
from zoo.inference.host_random import dirichlet_draws, drawable_or_ones
from zoo.inference.topics import topic_vi
from zoo.models import multimodal_topics as mt
from zoo.core.options import data_devices as check_data_devices
from zoo.core.options import nonnegative_float, one_of, positive_float, positive_int
from zoo.core.prediction import Prediction
from zoo.core.priors import any_family, dirichlet_concentration
from zoo.core.progress import progress_callback
from zoo.core.registry import register_method, register_model
from zoo.core.fit import Fit
from zoo.core.idata import POINT_ESTIMATE_NOTE, add_variational_parameters, to_inference_data

__all__ = ["TopicPrediction", "TopicFitState", "check_counts", "caption_accuracy", "region_accuracy",
           "region_caption_accuracy",
           "caption_perplexity", "one_vs_all_baseline", "make_topic_fit", "predict_topics"]

PAPER = "Yakhnenko & Honavar 2009 (multi-modal HDP)"


@dataclasses.dataclass(frozen=True, repr=False)
class TopicPrediction(Prediction):
    """caption_word_proba (I, W): p(w | b_i) from the visual words alone (Sec. 2.7); topic_proba (I, K): the
    token-averaged q(z | b_m); word_proba (R, W) and region_label (R,) for regions (None without regions; a region
    without visual words gets the prior mean of pi in place of q(z | b))."""

    caption_word_proba: np.ndarray
    topic_proba: np.ndarray
    word_proba: np.ndarray | None = None
    region_label: np.ndarray | None = None

    def labels(self) -> np.ndarray:
        """(R,) the predicted word of each region (data with regions only)."""
        if self.region_label is None:
            raise ValueError("labels: these data have no regions (MultimodalCounts without region_visual_words); "
                             "caption_word_proba holds the per-image word probabilities")
        return np.asarray(self.region_label)


@dataclasses.dataclass(frozen=True)
class TopicFitState:
    """The restart with the highest final ELBO: lambda_w (K, W), lambda_b (K, V), gamma (I, K), prior concentration
    a (K,) of q(pi) (alpha or alpha_pi beta), beta (K,) (HDP; None for LDA); final ELBO of every restart."""

    lambda_w: np.ndarray
    lambda_b: np.ndarray
    gamma: np.ndarray
    prior_concentration: np.ndarray
    beta: np.ndarray | None
    final_elbo: np.ndarray
    best_chain: int


# ------------------------------------------------------------------------------------------------ options
def _n_factors(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name}: expected an int K >= 1, got {value!r}")
    return int(value)


def _build_lda(n_topics: int = 5, alpha: float = 1.0, alpha_w: float = 1.0, alpha_b: float = 1.0):
    """MoM-LDA with K = ``n_topics`` factors; hyperparameters all 1 as in Sec. 3.2.2."""
    k = _n_factors(n_topics, "n_topics")
    opts = dict(n_topics=k, alpha=positive_float(alpha, "alpha"), alpha_w=positive_float(alpha_w, "alpha_w"),
                alpha_b=positive_float(alpha_b, "alpha_b"))
    program = functools.partial(mt.mom_lda, n_topics=k)
    return program, opts, mt.default_priors_lda(opts["alpha"], opts["alpha_w"], opts["alpha_b"])


def _build_hdp(truncation: int = 20, alpha: float = 1.0, alpha_pi: float = 1.0, alpha_w: float = 1.0,
               alpha_b: float = 1.0):
    """MoM-HDP truncated at K = ``truncation``: beta ~ GEM(alpha), pi_i ~ Dir(alpha_pi beta)."""
    k = _n_factors(truncation, "truncation")
    opts = dict(truncation=k, alpha=positive_float(alpha, "alpha"), alpha_pi=positive_float(alpha_pi, "alpha_pi"),
                alpha_w=positive_float(alpha_w, "alpha_w"), alpha_b=positive_float(alpha_b, "alpha_b"))
    program = functools.partial(mt.mom_hdp, truncation=k, alpha_pi=opts["alpha_pi"])
    return program, opts, mt.default_priors_hdp(opts["alpha"], opts["alpha_w"], opts["alpha_b"])


# ------------------------------------------------------------------------------------------------ data
def check_counts(data, *, training: bool = True) -> MultimodalCounts:
    """Validate a MultimodalCounts for fitting (``training``) or prediction; ValueError naming the field."""
    if not isinstance(data, MultimodalCounts):
        raise ValueError(f"data: expected zoo.data.MultimodalCounts, got {type(data).__name__}")
    totals = data.words.sum(axis=1) + data.visual_words.sum(axis=1)
    if np.any(totals == 0):
        raise ValueError(f"words: image {int(np.flatnonzero(totals == 0)[0])} has no words and no visual words")
    if training:
        for field, counts, names in (("words", data.words, data.word_vocabulary),
                                     ("visual_words", data.visual_words, data.visual_vocabulary)):
            empty = np.flatnonzero(counts.sum(axis=0) == 0)
            if empty.size:
                which = f" ({names[empty[0]]!r})" if names is not None else ""
                raise ValueError(f"{field}: {empty.size} all-zero column(s), first column {int(empty[0])}{which}; "
                                 f"drop vocabulary entries that never occur")
    return data


def _program_args(spec, data):
    data = check_counts(data)
    return dict(word_totals=jnp.asarray(data.words.sum(1)), visual_totals=jnp.asarray(data.visual_words.sum(1)),
                n_word_types=data.words.shape[1], n_visual_types=data.visual_words.shape[1],
                priors=dict(spec.priors), words=jnp.asarray(data.words), visual_words=jnp.asarray(data.visual_words))


def _etas(priors, data):
    return (jnp.asarray(dirichlet_concentration(priors["phi_w"], data.words.shape[1], "phi_w")),
            jnp.asarray(dirichlet_concentration(priors["phi_b"], data.visual_words.shape[1], "phi_b")))


def _check_stick_prior(prior: dist.Distribution) -> dist.Distribution:
    support = getattr(prior, "support", None)
    if support is not dist.constraints.unit_interval or prior.event_shape != () or prior.batch_shape != ():
        raise ValueError(f"priors['sticks']: needs a scalar distribution on (0, 1) such as Beta(1, alpha), "
                         f"got {prior.__class__.__name__}")
    return prior


def _sharded(n_devices, sharded_fit, one_device_fit):
    """The coordinate-ascent fitter: the one-device one, or the data-sharded one over ``n_devices`` (issue 21.2)."""
    if n_devices is None:
        return one_device_fit
    return functools.partial(sharded_fit, mesh=sharding.data_mesh(n_devices))


def _check_method_options(unknown: dict, method: str):
    if unknown:
        raise ValueError(f"{sorted(unknown)[0]}: not an option of {method!r}")


# ------------------------------------------------------------------------------------------------ fits
@functools.partial(jax.jit, static_argnames=("n_docs",))
def _multinomial_log_lik(pi, phi, counts: topic_vi.SparseCounts, n_docs: int, log_norm):
    """(S, I) log Mult(n_i; N_i, pi_i @ phi) for S draws pi (S, I, K), phi (S, K, V), from the non-zero counts only
    (a term with n_iv = 0 contributes nothing); ``log_norm`` (I,) = log N_i! - sum_v log n_iv!."""
    def one(args):
        p, f = args
        probs = jnp.sum(p[counts.doc] * f.T[counts.term], axis=-1)              # (nnz,) (pi_i @ phi)_v
        return log_norm + jax.ops.segment_sum(counts.count * jnp.log(probs), counts.doc, num_segments=n_docs)
    return jax.lax.map(one, (pi, phi))


def _log_norm(counts: np.ndarray) -> jnp.ndarray:
    return jnp.asarray(gammaln(counts.sum(-1) + 1) - gammaln(counts + 1).sum(-1))


#: the stream number of the posterior predictive's key (jax.random.fold_in of the fit's seed; q's draws use 7)
_PREDICTIVE_STREAM = 13
#: replicated counts are kept up to this many numbers (restarts x draws x images x (W + V)); above, none are stored
MAX_REPLICATED = 2.0e7


def replicate_counts(key, pi, phi, totals) -> np.ndarray:
    """(S, I, V) replicated counts n_i ~ Mult(N_i, pi_i @ phi) (the program's ``words`` / ``visual_words``) at S
    draws: pi (S, I, K), phi (S, K, V), totals (I,) = N_i, the observed number of tokens of each image."""
    probs = jnp.einsum("sik,skv->siv", pi, phi)
    totals = jnp.asarray(totals)
    return np.asarray(dist.Multinomial(totals, probs=probs, total_count_max=int(jnp.max(totals))).sample(key))


def _variational_draws(key, gamma, lam_w, lam_b, data, num_draws: int, replicate_key=None):
    """Draws of q (Sec. 2.6): per restart c, S = ``num_draws`` independent draws pi_i ~ Dir(gamma_ci),
    phi_w,k ~ Dir(lambda_w,ck), phi_b,k ~ Dir(lambda_b,ck). Returns topic_weight (C, S, K) = mean_i pi_i,
    phi_w (C, S, K, W), phi_b (C, S, K, V) and the pointwise log likelihood of each modality (C, S, I) at the draws.
    The image-level pi draws are summarized by topic_weight and not kept ((C, S, I, K) is large). With
    ``replicate_key`` also rep_words (C, S, I, W) and rep_visual_words (C, S, I, V): counts replicated at each draw
    (``replicate_counts``) from that key's own stream, so the draws of q are the same with or without it."""
    words, visual = topic_vi.sparse_counts(data.words), topic_vi.sparse_counts(data.visual_words)
    norm_w, norm_b = _log_norm(data.words), _log_norm(data.visual_words)
    n_img = data.words.shape[0]
    out = {"topic_weight": [], "phi_w": [], "phi_b": [], "ll_words": [], "ll_visual": []}
    if replicate_key is not None:
        out.update(rep_words=[], rep_visual_words=[])
    for c, chain_key in enumerate(jax.random.split(key, gamma.shape[0])):
        k_pi, k_w, k_b = jax.random.split(chain_key, 3)
        pi = dirichlet_draws(k_pi, drawable_or_ones(gamma[c]), num_draws)            # (S, I, K), on the host
        phi_w = dirichlet_draws(k_w, drawable_or_ones(lam_w[c]), num_draws)          # (S, K, W)
        phi_b = dirichlet_draws(k_b, drawable_or_ones(lam_b[c]), num_draws)          # (S, K, V)
        out["topic_weight"].append(pi.mean(axis=1))
        out["phi_w"].append(phi_w)
        out["phi_b"].append(phi_b)
        out["ll_words"].append(np.asarray(_multinomial_log_lik(pi, phi_w, words, n_img, norm_w)))
        out["ll_visual"].append(np.asarray(_multinomial_log_lik(pi, phi_b, visual, n_img, norm_b)))
        if replicate_key is not None:
            k_rw, k_rb = jax.random.split(jax.random.fold_in(replicate_key, c))
            out["rep_words"].append(replicate_counts(k_rw, pi, phi_w, data.words.sum(1)))
            out["rep_visual_words"].append(replicate_counts(k_rb, pi, phi_b, data.visual_words.sum(1)))
    return {k: np.stack(v) for k, v in out.items()}


def _make_fit(spec, data, method, state_topic, prior_conc, trace, seed, num_draws, beta=None, tol=None):
    """The fit: ``posterior`` holds S = ``num_draws`` draws of each restart's fitted q (``_variational_draws``;
    chain = restart); q's parameters per restart (gamma, lambda_w, lambda_b) go to the ``variational_parameters``
    group; beta (HDP) is a point estimate of the method (the same in every draw of a restart);
    ``posterior_predictive`` words and visual_words (chain, draw, image, word / visual_word): counts replicated at
    each draw of q (up to ``MAX_REPLICATED`` numbers), so ``az.plot_ppc`` reads the fit. ``tol``: the loop's
    tolerance; each restart's ``converged`` stat says whether its last step changed the ELBO by at most ``tol``
    (relative), the loop's own stopping rule (``zoo.core.convergence`` reads it)."""
    gamma = np.asarray(state_topic.gamma)                                 # (C, I, K)
    lam_w, lam_b = (np.asarray(x) for x in state_topic.lambdas)           # (C, K, W), (C, K, V)
    usage = np.asarray(state_topic.stats.doc_topic).sum(axis=1)           # (C, K) expected tokens per factor
    final = trace[:, -1]
    best = int(np.argmax(final))
    n_chain, n_factor = gamma.shape[0], gamma.shape[-1]
    replicate = n_chain * num_draws * data.words.shape[0] * (data.words.shape[1] + data.visual_words.shape[1]) \
        <= MAX_REPLICATED
    draws = _variational_draws(jax.random.fold_in(jax.random.PRNGKey(seed), 7), gamma, lam_w, lam_b, data,
                               num_draws, jax.random.fold_in(jax.random.PRNGKey(seed), _PREDICTIVE_STREAM)
                               if replicate else None)
    predictive = {"words": draws["rep_words"], "visual_words": draws["rep_visual_words"]} if replicate else None
    posterior = {"topic_weight": draws["topic_weight"], "phi_w": draws["phi_w"], "phi_b": draws["phi_b"]}
    if beta is not None:
        posterior["beta"] = np.broadcast_to(beta[:, None], (n_chain, num_draws) + beta.shape[1:])
    dims = {"phi_w": ["factor", "word"], "phi_b": ["factor", "visual_word"], "topic_weight": ["factor"],
            "beta": ["factor"], "words": ["image"], "visual_words": ["image"], "objective": ["iteration"],
            "factor_usage": ["factor"]}
    coords = {"factor": np.arange(n_factor)}
    if data.word_vocabulary is not None:
        coords["word"] = list(data.word_vocabulary)
    if data.visual_vocabulary is not None:
        coords["visual_word"] = list(data.visual_vocabulary)
    stats = {"objective": trace[:, None, :], "factor_usage": usage[:, None],
             "n_active_factors": (usage >= 1.0).sum(-1)[:, None]}
    if tol is not None and trace.shape[-1] >= 2:
        stats["converged"] = (np.abs(trace[:, -1] - trace[:, -2]) <= tol * np.abs(trace[:, -1]))[:, None]
    idata = to_inference_data(
        posterior,
        sample_stats=stats,
        log_likelihood={"words": draws["ll_words"], "visual_words": draws["ll_visual"]},
        observed_data={"words": data.words, "visual_words": data.visual_words}, posterior_predictive=predictive,
        dims=dims, coords=coords,
        attrs={"method": method, "model": spec.id,
               "note": "chain = restart; draw = an independent draw of that restart's variational posterior q"})
    if beta is not None:
        idata.posterior["beta"].attrs["q"] = POINT_ESTIMATE_NOTE   # moved beside q's parameters by zoo.core.finish
    add_variational_parameters(idata, {"gamma": (("chain", "image", "factor"), gamma),
                                       "lambda_w": (("chain", "factor", "word"), lam_w),
                                       "lambda_b": (("chain", "factor", "visual_word"), lam_b)})
    state = TopicFitState(lambda_w=lam_w[best], lambda_b=lam_b[best], gamma=gamma[best],
                          prior_concentration=np.asarray(prior_conc[best] if np.ndim(prior_conc) == 2 else prior_conc),
                          beta=None if beta is None else beta[best], final_elbo=final, best_chain=best)
    headline = ["beta"] if beta is not None else ["topic_weight"]
    return Fit(idata=idata, spec=spec, method=method, state=state, headline=headline, predictor=_predict, data=data)


def _keys(seed, num_chains):
    if isinstance(num_chains, bool) or not isinstance(num_chains, (int, np.integer)) or num_chains < 1:
        raise ValueError(f"num_chains: expected a positive int (restarts), got {num_chains!r}")
    return jax.random.split(jax.random.PRNGKey(seed), int(num_chains))


def _elbo_progress(enabled: bool, total: int, desc: str):
    """The progress bar of the VI loops (``zoo.core.progress.progress_callback``: up to ``total`` iterations, the best
    restart's ELBO beside it) and the callback ``driver.optimize_chunked`` moves it with."""
    return progress_callback(total, desc, enabled,
                             postfix=lambda elbo: {"elbo": f"{float(np.max(np.asarray(elbo)[..., -1])):.6g}"})


def _bar_total(max_iter, chunk) -> int:
    """Iterations the VI loop runs at most: ``max_iter`` rounded up to whole chunks (as in optimize_chunked)."""
    chunk = max(1, min(int(chunk), int(max_iter)))
    return max(1, -(-int(max_iter) // chunk)) * chunk


def _loop_options(max_iter, tol, local_steps, chunk, num_draws):
    """The VI loops' options, checked before any computation (zoo.core.options)."""
    positive_int(num_draws, "num_draws")
    positive_int(max_iter, "max_iter")
    positive_int(local_steps, "local_steps")
    positive_int(chunk, "chunk")
    nonnegative_float(tol, "tol")


#: every method's dims (the program's plates ``factor``, ``image`` and ``break``); pi (image, factor) is per image
_SITE_DIMS = {"phi_w": ("factor", "word"), "phi_b": ("factor", "visual_word"), "topic_weight": ("factor",),
              "beta": ("factor",), "pi": ("image", "factor"), "sticks": ("break",), "words": ("image", "word"),
              "visual_words": ("image", "visual_word"), "factor_usage": ("factor",)}


def _coords(spec, data) -> dict:
    """The data's labels: caption words and visual words, where the data name them."""
    coords = {}
    if getattr(data, "word_vocabulary", None) is not None:
        coords["word"] = [str(w) for w in data.word_vocabulary]
    if getattr(data, "visual_vocabulary", None) is not None:
        coords["visual_word"] = [str(w) for w in data.visual_vocabulary]
    return coords


register_model("yakhnenko.mom_lda", paper=PAPER, title="Multi-modal LDA of caption words and visual words",
               build=_build_lda, data_kind="MultimodalCounts", default_method="mean_field_vi",
               program_args=_program_args, prior_sites=("pi", "phi_w", "phi_b"), headline=("topic_weight",),
               exchangeable={"topic_weight": 0, "phi_w": 0, "phi_b": 0}, unit_sites=("pi",),
               site_dims=_SITE_DIMS, coords=_coords)
register_model("yakhnenko.mom_hdp", paper=PAPER, title="Multi-modal HDP, truncated stick-breaking",
               build=_build_hdp, data_kind="MultimodalCounts", default_method="stick_breaking_vi",
               program_args=_program_args, prior_sites=("sticks", "phi_w", "phi_b"), headline=("beta",),
               exchangeable={"topic_weight": 0, "phi_w": 0, "phi_b": 0, "beta": 0}, unit_sites=("pi",),
               site_dims=_SITE_DIMS, coords=_coords,
               prior_families={"sticks": any_family(dist.constraints.unit_interval, dist.Beta,
                                                    why="the stick-breaking VI's expectations")})


@register_method("yakhnenko.mom_lda", "mean_field_vi", kind="variational")
def fit_mom_lda(spec, data, seed=0, num_chains=2, max_iter=300, tol=1e-6, local_steps=3, seed_docs_per_factor=2,
                chunk=10, num_draws=100, progress_bar=True, data_devices=None, **unknown) -> Fit:
    """Coordinate-ascent mean-field VI (Sec. 2.6.1-2.6.2); each chain is a random restart (default 2), the
    restart with the highest ELBO makes the predictions; ``num_draws`` draws of each restart's q go to
    ``posterior``. ``data_devices``: None (one device) or the images sharded over n of jax.devices()
    (zoo.inference.sharding; the same fixed point)."""
    _check_method_options(unknown, "mean_field_vi")
    data = check_counts(data)
    _loop_options(max_iter, tol, local_steps, chunk, num_draws)
    fit_fn = _sharded(check_data_devices(data_devices), sharding.fit_mean_field_sharded, topic_vi.fit_mean_field)
    keys = _keys(seed, num_chains)
    k = spec.options["n_topics"]
    alpha = jnp.asarray(dirichlet_concentration(spec.priors["pi"], k, "pi"))
    with _elbo_progress(progress_bar, _bar_total(max_iter, chunk), "MoM-LDA VI") as progress:
        state, trace = fit_fn(keys, [data.words, data.visual_words], k, alpha, _etas(spec.priors, data),
                              max_iter=int(max_iter), tol=float(tol), local_steps=int(local_steps), chunk=int(chunk),
                              seed_docs_per_factor=int(seed_docs_per_factor), progress=progress)
    return _make_fit(spec, data, "mean_field_vi", state, np.asarray(alpha), trace, seed, num_draws, tol=float(tol))


@register_method("yakhnenko.mom_hdp", "stick_breaking_vi", kind="variational")
def fit_mom_hdp(spec, data, seed=0, num_chains=2, max_iter=300, tol=1e-6, local_steps=3, beta_steps=25,
                beta_learning_rate=0.05, seed_docs_per_factor=2, chunk=10, fixed_beta=None, initial_sticks=None,
                num_draws=100, progress_bar=True, data_devices=None, **unknown) -> Fit:
    """Truncated stick-breaking VI: coordinate ascent plus the stick logits of beta by optax (Sec. 2.6.3).
    ``initial_sticks``: beta's start per restart (``sbvi.restart_stick_logits``): "uniform" (1/K), "geometric"
    (sticks at their prior mean) or "both" (None, the default: restart r uniform when r is even, geometric when
    odd); the restart with the highest final ELBO makes the predictions.  ``fixed_beta`` (K,) keeps beta fixed
    (then the fit is MoM-LDA with alpha = alpha_pi beta; ``initial_sticks`` must then be None)."""
    _check_method_options(unknown, "stick_breaking_vi")
    data = check_counts(data)
    _loop_options(max_iter, tol, local_steps, chunk, num_draws)
    fit_fn = _sharded(check_data_devices(data_devices), sharding.fit_stick_breaking_sharded,
                      sbvi.fit_stick_breaking)
    keys = _keys(seed, num_chains)
    k, alpha_pi = spec.options["truncation"], spec.options["alpha_pi"]
    stick_prior = _check_stick_prior(spec.priors["sticks"])
    if initial_sticks is not None:
        one_of(initial_sticks, "initial_sticks", sbvi.INITIAL_STICKS)
    if fixed_beta is None:
        starts = sbvi.restart_stick_logits(k, keys.shape[0], _stick_mean(stick_prior, initial_sticks),
                                           "both" if initial_sticks is None else initial_sticks)
    else:
        if initial_sticks is not None:
            raise ValueError("initial_sticks: not used with fixed_beta (beta stays at fixed_beta)")
        fixed = np.asarray(fixed_beta, dtype=np.float64)
        if fixed.shape != (k,) or np.any(fixed <= 0) or not np.isclose(fixed.sum(), 1.0):
            raise ValueError(f"fixed_beta: expected ({k},) positive weights summing to one")
        rest = 1.0 - np.concatenate([[0.0], np.cumsum(fixed)[:-1]])
        u0 = np.clip(fixed[:-1] / rest[:-1], 1e-12, 1 - 1e-12)
        starts = np.broadcast_to(np.log(u0) - np.log1p(-u0), (keys.shape[0], k - 1))
    n_groups = len(sbvi.restart_groups(starts))
    with _elbo_progress(progress_bar, n_groups * _bar_total(max_iter, chunk), "MoM-HDP VI") as progress:
        state, trace = sbvi.fit_by_start(
            fit_fn, keys, starts, [data.words, data.visual_words], k, _etas(spec.priors, data), alpha_pi,
            stick_prior, optimize_beta=fixed_beta is None, max_iter=int(max_iter), tol=float(tol),
            local_steps=int(local_steps), beta_steps=int(beta_steps), beta_learning_rate=float(beta_learning_rate),
            chunk=int(chunk), seed_docs_per_factor=int(seed_docs_per_factor), progress=progress)
    beta = np.asarray(jax.vmap(sbvi.stick_weights)(state.stick_logits))
    return _make_fit(spec, data, "stick_breaking_vi", state.topic, alpha_pi * beta, trace, seed, num_draws, beta=beta,
                     tol=float(tol))


def _stick_mean(stick_prior, initial_sticks) -> float:
    """E u of the stick prior, for the geometric start (0.5 where it is not needed or not available in closed
    form and only uniform starts are asked for)."""
    try:
        return float(np.asarray(stick_prior.mean))
    except NotImplementedError:
        if initial_sticks == "uniform":
            return 0.5
        raise ValueError(f"priors['sticks']: {stick_prior.__class__.__name__} has no mean for the geometric start; "
                         f"pass initial_sticks='uniform'") from None


# ------------------------------------------------------------------------------------------------ predictions
@functools.partial(jax.jit, static_argnames=("n_docs", "num_steps"))
def _visual_inference(log_phi_b, visual: topic_vi.SparseCounts, prior_conc, n_docs: int, num_steps: int):
    gamma, stats = topic_vi.infer_doc_topics((log_phi_b,), (visual,), n_docs, prior_conc, num_steps)
    return gamma, stats.doc_topic


def _topic_proba_from_visual(state: TopicFitState, visual_counts: np.ndarray, num_steps: int) -> np.ndarray:
    """Token-averaged q(z | b_m) (n, K) of each row of visual-word counts, by test-time VI on that row alone."""
    log_phi_b = topic_vi.dirichlet_expected_log(jnp.asarray(state.lambda_b))
    sparse = topic_vi.sparse_counts(visual_counts)
    _, doc_topic = _visual_inference(log_phi_b, sparse, jnp.asarray(state.prior_concentration),
                                     visual_counts.shape[0], num_steps)
    doc_topic = np.asarray(doc_topic)
    return doc_topic / doc_topic.sum(axis=1, keepdims=True)


def _predict(fit: Fit, data, num_steps: int = 100) -> TopicPrediction:
    """p(w | b) = sum_m sum_z p(w | z) q(z | b_m) / T (Sec. 2.7) for each image, and for each region if given."""
    data = check_counts(data, training=False)
    state: TopicFitState = fit.state
    n_words, n_visual = state.lambda_w.shape[1], state.lambda_b.shape[1]
    if data.visual_words.shape[1] != n_visual:
        raise ValueError(f"visual_words: {data.visual_words.shape[1]} columns, the model was fitted on {n_visual}")
    if data.words.shape[1] != n_words:
        raise ValueError(f"words: {data.words.shape[1]} columns, the model was fitted on {n_words}")
    empty = np.flatnonzero(data.visual_words.sum(axis=1) == 0)
    if empty.size:
        raise ValueError(f"visual_words: image {int(empty[0])} has no visual words to predict from")
    phi_w = state.lambda_w / state.lambda_w.sum(axis=1, keepdims=True)
    topic_proba = _topic_proba_from_visual(state, data.visual_words, num_steps)
    word_proba = region_label = None
    if data.region_visual_words is not None:
        # a region holding no visual word (e.g. smaller than the descriptor grid) gets the prior's prediction
        has_words = data.region_visual_words.sum(axis=1) > 0
        region_topics = np.tile(state.prior_concentration / state.prior_concentration.sum(),
                                (has_words.size, 1))
        if has_words.any():
            region_topics[has_words] = _topic_proba_from_visual(state, data.region_visual_words[has_words],
                                                                num_steps)
        word_proba = region_topics @ phi_w
        region_label = word_proba.argmax(axis=1)
    return TopicPrediction(caption_word_proba=topic_proba @ phi_w, topic_proba=topic_proba, word_proba=word_proba,
                           region_label=region_label)


# ------------------------------------------------------------------------------------------------ metrics
def caption_accuracy(scores: np.ndarray, true_words: np.ndarray, n_predicted: int | str = "true") -> float:
    """Mean over images of |C ∩ R| / |C| (Sec. 3.2.3): C = the ``n_predicted`` highest-scoring words ("true": as
    many as the image's true caption has, then accuracy = precision = recall), R = the words with count > 0.
    Images without caption words are skipped."""
    scores, truth = np.asarray(scores, dtype=float), np.asarray(true_words) > 0
    if scores.shape != truth.shape:
        raise ValueError(f"scores: shape {scores.shape} differs from true_words {truth.shape}")
    sizes = truth.sum(axis=1)
    keep = sizes > 0
    order = np.argsort(-scores, axis=1, kind="stable")
    accs = []
    for i in np.flatnonzero(keep):
        n = int(sizes[i]) if n_predicted == "true" else int(n_predicted)
        accs.append(truth[i, order[i, :n]].mean())
    return float(np.mean(accs))


def region_accuracy(word_proba: np.ndarray, region_labels: np.ndarray) -> float:
    """Fraction of labelled regions (label >= 0) whose argmax word is the true label (Sec. 3.2.3)."""
    labels = np.asarray(region_labels)
    keep = labels >= 0
    return float(np.mean(np.asarray(word_proba)[keep].argmax(axis=1) == labels[keep]))


def region_caption_accuracy(region_label: np.ndarray, region_image_ids: np.ndarray, true_words: np.ndarray) -> float:
    """Per-caption accuracy of Sec. 3.2.3 when captions come from regions: C_i = the union of the predicted labels of
    image i's regions, R_i = its true caption words; mean over images (with regions and words) of |C ∩ R| / |C|."""
    labels, ids, truth = np.asarray(region_label), np.asarray(region_image_ids), np.asarray(true_words) > 0
    accs = []
    for i in np.unique(ids):
        predicted = np.unique(labels[ids == i])
        if truth[i].any():
            accs.append(truth[i, predicted].mean())
    return float(np.mean(accs))


def caption_perplexity(caption_word_proba: np.ndarray, true_words: np.ndarray) -> float:
    """exp(- sum_iw n_iw log p(w | b_i) / sum n): held-out perplexity of caption words given the visual words."""
    p, n = np.asarray(caption_word_proba), np.asarray(true_words, dtype=float)
    return float(np.exp(-np.sum(n * np.log(np.clip(p, 1e-300, None))) / n.sum()))


def one_vs_all_baseline(train: MultimodalCounts, test_visual_words: np.ndarray, kind: str = "nb",
                        seed: int = 0) -> np.ndarray:
    """The paper's baselines (Sec. 3.2.1): one binary classifier per caption word on the visual-word bag
    (multinomial Naive Bayes or logistic regression, scikit-learn); returns scores (n_test, W) = P(word | bag).
    Words present in every or no training image get a constant score (their training frequency)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import MultinomialNB

    if kind not in ("nb", "lr"):
        raise ValueError(f"kind: expected 'nb' or 'lr', got {kind!r}")
    X, Y = train.visual_words, (train.words > 0).astype(int)
    X_test = np.asarray(test_visual_words, dtype=float)
    scores = np.tile(Y.mean(axis=0), (X_test.shape[0], 1))
    for w in np.flatnonzero((Y.sum(0) > 0) & (Y.sum(0) < Y.shape[0])):
        clf = MultinomialNB() if kind == "nb" else LogisticRegression(max_iter=1000, random_state=seed)
        clf.fit(X, Y[:, w])
        scores[:, w] = clf.predict_proba(X_test)[:, 1]
    return scores


#: public names for the stochastic VI method (zoo.papers.yakhnenko_svi): the fit builder and the predictor
make_topic_fit = _make_fit
predict_topics = _predict
