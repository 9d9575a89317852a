"""Gustafson, Thompson & de Freitas (2007): FULL, FS and CVFS region labelling, registered in the zoo.

>>> import zoo
>>> regions = zoo.load_dataset("gustafson07_program", n_images=10, n_keywords=4, n_features=5)
>>> regions
AnnotatedRegions(regions=95, features=5, images=10, words=4, region_labels=yes)
>>> fit = zoo.fit(zoo.model("gustafson07.cvfs"), regions, method="collapsed_gibbs", seed=0, num_chains=2,
...               num_warmup=50, num_samples=100, progress_bar=False)     # a real fit: thousands of sweeps
>>> pred = fit.predict(regions)
>>> pred.label_proba.shape          # (regions, K+1), column 0 = garbage; training regions: restricted to S_i
(95, 5)
>>> pred.feature_relevance.shape    # (K, p): Pr(M_ki = 1 | data), keywords in vocabulary order
(4, 5)

Data: ``AnnotatedRegions``; concept k >= 1 is ``vocabulary[k - 1]``. Features are standardized with the training
mean and standard deviation (the paper pre-scales them), and new data with the same numbers.
"""
from __future__ import annotations

import dataclasses
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist

from zoo.data.containers import AnnotatedRegions
from zoo.inference.label_feature.collapsed_niw import ConceptPrior, NIWPrior
from zoo.inference.driver import FAST_COMPILE_OPTIONS, ProgramKernel, sample_until
from zoo.inference.label_feature.gibbs import (FAST_COMPILE_WORK, Collect, build_gibbs_kernel, collect_names,
                                               label_proba_sum, predictive_log_lik, run_gibbs)
from zoo.inference.label_feature.state import BetaMixture, RegionProblem, label_log_prior
from zoo.models.feature_selection import check_garbage_weight, default_priors, feature_selection_model
from zoo.core.options import chain_method as check_chain_method
from zoo.core.options import check_known, nonnegative_int, one_of, positive_int
from zoo.core.progress import progress_callback
from zoo.core.prediction import Prediction
from zoo.core.priors import beta_mixture_parameters, families
from zoo.core.registry import register_method, register_model
from zoo.core.convergence import auto_report, auto_settings, short_of
from zoo.core.fit import Fit
from zoo.core.idata import add_sample_stat, to_inference_data
from zoo.papers.gustafson07_impute import (IMPUTE_STREAM, MAX_STORED, impute_full, replicate_features,
                                           replicate_selected_features)
from zoo.papers.gustafson07_lp import collapsed_log_joint, kernel_log_joint

__all__ = ["RegionLabelPrediction", "RegionArrays", "RegionHyper", "region_arrays", "region_hyper", "region_problem",
           "program_kwargs", "predict_labels", "garbage_weight_of", "GARBAGE"]

PAPER = "Gustafson, Thompson & de Freitas 2007"
GARBAGE = "<garbage>"
_TITLES = {"full": "semi-supervised region labelling, all features relevant (FULL)",
           "fs": "semi-supervised region labelling with Bayesian feature selection (FS)",
           "cvfs": "semi-supervised region labelling with concept-varying feature selection (CVFS)"}


@dataclasses.dataclass(frozen=True, repr=False)
class RegionLabelPrediction(Prediction):
    """label_proba (R, K+1): Pr(Y = concept), column 0 = garbage; feature_relevance (K, p): Pr(M_ki = 1 | data);
    concepts: names of the K+1 columns; annotated (R,) bool: True where the region's image keywords restricted it."""
    label_proba: np.ndarray
    feature_relevance: np.ndarray
    concepts: list
    annotated: np.ndarray

    def labels(self) -> np.ndarray:
        """(R,) the most probable concept of each region (0 = garbage, k = vocabulary[k - 1])."""
        return np.argmax(self.label_proba, axis=1)


@dataclasses.dataclass(frozen=True)
class RegionArrays:
    """Arrays the sampler reads, built from AnnotatedRegions: X (n, p) standardized, allowed (n, K+1),
    keyword_mask (I, K+1), image_slots (I, J) (-1 padded), mean/scale of the standardization."""
    X: np.ndarray
    allowed: np.ndarray
    keyword_mask: np.ndarray
    image_slots: np.ndarray
    image_index: np.ndarray
    mean: np.ndarray
    scale: np.ndarray


def _check_regions(data, variant: str) -> AnnotatedRegions:
    if not isinstance(data, AnnotatedRegions):
        raise ValueError(f"data: gustafson07 models take zoo.data.AnnotatedRegions, got {type(data).__name__}")
    p = data.X.shape[1]
    if variant in ("fs", "cvfs") and p < 2:
        raise ValueError(f"X: feature selection needs at least 2 features, got p = {p}")
    sizes = np.bincount(data.image_ids, minlength=data.n_images)
    for i, words in enumerate(data.keywords):
        if len(set(words)) > sizes[i] and sizes[i] > 0:
            raise ValueError(f"keywords: image {i} has {len(set(words))} keywords but only {sizes[i]} regions, so the "
                             f"coverage constraint (each keyword labels at least one region) cannot hold")
    return data


def _standardization(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean, scale = X.mean(0), X.std(0)
    const = np.nonzero(~(scale > 1e-12 * np.maximum(1.0, np.abs(mean))))[0]
    if const.size:
        raise ValueError(f"X: feature {int(const[0])} is constant (standard deviation 0), so it cannot be "
                         f"standardized; drop constant features before fitting")
    return mean, scale


def region_arrays(data: AnnotatedRegions, mean=None, scale=None) -> RegionArrays:
    """Standardize X and build S_i, the coverage structure and the per-image slots (images without regions are
    skipped: they carry no segment to label). An image without keywords is unannotated: S_i = all K+1 concepts."""
    if mean is None:
        mean, scale = _standardization(data.X)
    X = (data.X - mean) / scale
    K = len(data.vocabulary)
    kw = np.zeros((data.n_images, K + 1), bool)
    kw[:, 1:] = data.keyword_matrix().astype(bool)
    unannotated = ~kw.any(1)
    allowed = kw[data.image_ids].copy()
    allowed[:, 0] = True
    allowed[unannotated[data.image_ids]] = True
    present = np.unique(data.image_ids)
    index = {int(i): r for r, i in enumerate(present)}
    sizes = np.bincount(data.image_ids, minlength=data.n_images)[present]
    slots = -np.ones((present.size, int(sizes.max())), np.int64)
    fill = np.zeros(present.size, np.int64)
    for u, i in enumerate(data.image_ids):
        r = index[int(i)]
        slots[r, fill[r]] = u
        fill[r] += 1
    image_index = np.array([index[int(i)] for i in data.image_ids])
    return RegionArrays(X=X, allowed=allowed, keyword_mask=kw[present], image_slots=slots, image_index=image_index,
                        mean=mean, scale=scale)


# ---------------------------------------------------------------------------------------------------- model specs

def _build(variant: str, garbage_weight: float = 1.0):
    """One option, ``garbage_weight`` (w > 0, default 1): the label prior Pr(Y_ij = 0) proportional to w and to 1
    for each keyword of S_i; w = 1 is the paper's uniform prior over S_i (Sec. 3, lambda fixed uniform); a w
    chosen on training data: ``zoo.papers.gustafson07_garbage.choose_garbage_weight``.
    Every other prior is a prior site (``zoo.models.feature_selection.PRIOR_SITES``; swap them with
    ``priors=``): Sigma ~ ConceptCovariance(a_extra, v_scale), mu ~ ConceptMean(b) (all variants); M (FS, a
    Bernoulli per feature); alpha (CVFS, a Beta or a mixture of Betas), Omega ~ BackgroundCovariance(nu_extra,
    psi_scale), delta ~ BackgroundMean(kappa0) (CVFS)."""
    w = check_garbage_weight(garbage_weight)
    return (partial(feature_selection_model, variant=variant, garbage_weight=w),
            dict(variant=variant, garbage_weight=w), default_priors(variant))


def garbage_weight_of(spec) -> float:
    """The spec's garbage weight w (1 for specs built before the option existed)."""
    return float(spec.options.get("garbage_weight", 1.0))


class RegionHyper(NamedTuple):
    """The sampler's prior settings, from a spec's priors (``region_hyper``)."""
    concept_prior: ConceptPrior
    delta_omega_prior: NIWPrior
    alpha_prior: BetaMixture
    inclusion_logit: float


def _inclusion_logit(prior) -> float:
    if not isinstance(prior, (dist.BernoulliProbs, dist.BernoulliLogits)) or jnp.shape(prior.probs) != ():
        raise ValueError(f"priors['M']: the FS flip update needs a scalar Bernoulli prior on each M_j; "
                         f"got {prior.__class__.__name__}")
    q = float(np.asarray(prior.probs))
    if not 0 < q < 1:
        raise ValueError(f"priors['M']: Pr(M_j = 1) must lie strictly between 0 and 1, got {q}")
    return float(np.log(q) - np.log1p(-q))


def region_hyper(spec, n_features: int) -> RegionHyper:
    """The one function that turns ``spec.priors`` into the sampler's prior settings (families checked here,
    ValueErrors naming the site). The sites a variant lacks get the values that keep the sweep's arithmetic
    unused: FULL/FS no alpha (Beta(1, 1)), no (delta, Omega) prior (the default's numbers); FULL/CVFS no M prior."""
    variant = spec.options["variant"]
    priors = {**default_priors("cvfs"), **spec.priors}
    sigma, mu, omega, delta = (priors[s] for s in ("Sigma", "mu", "Omega", "delta"))
    p = int(n_features)
    concept = ConceptPrior(float(sigma.a_extra), float(sigma.v_scale), float(mu.b))
    background = NIWPrior(nu0=jnp.asarray(p + float(omega.nu_extra)), S0=float(omega.psi_scale) * jnp.eye(p),
                          rho0=jnp.asarray(float(delta.kappa0)), mu0=jnp.zeros(p))
    if variant == "cvfs":
        weights, a, b = beta_mixture_parameters(priors["alpha"], "alpha", needed_by="the Gibbs update of alpha")
        alpha = BetaMixture(jnp.asarray(weights), jnp.asarray(a), jnp.asarray(b))
    else:
        alpha = BetaMixture(jnp.ones(1), jnp.ones(1), jnp.ones(1))
    logit = _inclusion_logit(priors["M"]) if variant == "fs" else 0.0
    return RegionHyper(concept, background, alpha, logit)


def program_kwargs(spec, data) -> dict:
    """Keyword arguments of ``spec.program`` for ``data`` (AnnotatedRegions, or what ``region_arrays`` made of
    them): the standardized arrays and the spec's priors, so the program is the model the custom sampler fits."""
    arrays = data if isinstance(data, RegionArrays) else region_arrays(_check_regions(data, spec.options["variant"]))
    return dict(allowed=jnp.asarray(arrays.allowed), image_index=jnp.asarray(arrays.image_index),
                keyword_mask=jnp.asarray(arrays.keyword_mask), X=jnp.asarray(arrays.X), priors=dict(spec.priors))


def region_problem(spec, arrays: RegionArrays, exact_delta_omega: bool = True, flips_per_sweep: int | None = None,
                   flip_scan: str = "systematic", joint_moves: int | None = None, omega_steps: int | None = None,
                   omega_dof: float | None = None, column_moves: int | None = None,
                   marginal_refresh: bool | None = None) -> RegionProblem:
    """The sampler's RegionProblem for a spec and standardized arrays (FS: (delta, Omega) = sample mean and
    covariance, Sec. 4; CVFS: their starting values). flip_scan, flips_per_sweep, joint_moves, omega_steps,
    omega_dof, column_moves, marginal_refresh: see ``_collapsed_gibbs`` (None = the defaults there)."""
    flip_scan = one_of(flip_scan, "flip_scan", ("systematic", "random"))
    n_units = arrays.X.shape[0]
    joint_moves = JOINT_MOVES if joint_moves is None else joint_moves
    omega_steps = OMEGA_STEPS if omega_steps is None else omega_steps
    column_moves = COLUMN_MOVES if column_moves is None else column_moves
    marginal_refresh = MARGINAL_REFRESH if marginal_refresh is None else marginal_refresh
    if not isinstance(marginal_refresh, (bool, np.bool_)):
        raise ValueError(f"marginal_refresh: expected True or False, got {marginal_refresh!r}")
    omega_dof = 2.0 * n_units + arrays.X.shape[1] + 1.0 if omega_dof is None else omega_dof
    if (isinstance(omega_dof, bool) or not isinstance(omega_dof, (int, float, np.integer, np.floating))
            or not np.isfinite(omega_dof) or not omega_dof > arrays.X.shape[1] + 1):
        raise ValueError(f"omega_dof: the inverse-Wishart proposal needs more than p + 1 = {arrays.X.shape[1] + 1} "
                         f"degrees of freedom, got {omega_dof!r}")
    X = arrays.X
    n, p = X.shape
    if flips_per_sweep is None:
        flips_per_sweep = p if flip_scan == "systematic" else 1
    delta0 = X.mean(0)
    Omega0 = np.cov(X, rowvar=False, bias=True).reshape(p, p) + 1e-9 * np.eye(p)
    hyper = region_hyper(spec, p)
    return RegionProblem(
        X=jnp.asarray(X), allowed=jnp.asarray(arrays.allowed), keyword_mask=jnp.asarray(arrays.keyword_mask),
        image_slots=jnp.asarray(arrays.image_slots),
        concept_prior=hyper.concept_prior, delta_omega_prior=hyper.delta_omega_prior,
        alpha_prior=hyper.alpha_prior, inclusion_logit=jnp.asarray(hyper.inclusion_logit),
        delta0=jnp.asarray(delta0), Omega0=jnp.asarray(Omega0),
        exact_delta_omega=jnp.asarray(bool(exact_delta_omega)), flips_per_sweep=jnp.asarray(int(flips_per_sweep)),
        systematic_scan=jnp.asarray(flip_scan == "systematic"), joint_moves=jnp.asarray(int(joint_moves)),
        omega_steps=jnp.asarray(int(omega_steps)), omega_dof=jnp.asarray(float(omega_dof)),
        garbage_log_weight=jnp.asarray(np.log(garbage_weight_of(spec))), column_moves=jnp.asarray(int(column_moves)),
        marginal_refresh=jnp.asarray(bool(marginal_refresh)))


_MAX_STORED_PROBA = 2.0e7   # label_proba draws are kept in the posterior up to this many numbers
JOINT_MOVES = 2    # joint (indicator, labels) moves per sweep (FS, CVFS)
OMEGA_STEPS = 5    # Omega random-walk steps per sweep (CVFS)
#: CVFS moves added in issue 29 (session 6), measured on the Sec. 6 data, 4 x (200 + 2,000), seeds 0 / 1 / 2, one
#: process, OMP_NUM_THREADS=1 on a shared machine (sampling seconds after compilation): M's smallest bulk ESS, max r-hat
#: - neither (before): 85.1 / 48.8 / 178.9, 1.043 / 1.071 / 1.024; 18.3 / 13.3 / 15.0 s
#: - MARGINAL_REFRESH: 300.2 / 238.8 / 337.4, 1.026 / 1.027 / 1.007; 19.3 / 21.8 / 13.8 s
#: - both (default): 426.7 / 516.4 / 377.6, 1.013 / 1.009 / 1.014; 14.1 / 19.4 / 18.2 s (n_relevant ESS 411 / 459
#:   / 379, r-hat 1.011 / 1.010 / 1.017; alpha ESS 675-789, r-hat <= 1.008)
#: MARGINAL_REFRESH: the background's marginal on the features every labelled concept uses (exact;
#: ``zoo.inference.label_feature.moves.background_marginal_refresh``): without it, with feature 3 relevant to every
#: concept, that marginal (Omega_33, delta_3) follows its prior through the Omega random walk, drifts (Omega_33 0.36
#: against 0.86 elsewhere, one chain) and holds M there for hundreds of sweeps. COLUMN_MOVES: passes of column flips
#: of M over the features (``zoo.inference.label_feature.columns``); alone they made M worse (37.8 / 22.1 / 31.4: they
#: enter that trap more often), with the refresh they lift features 1-2 (ESS 300-600 -> 2,400-5,200).
MARGINAL_REFRESH = True
COLUMN_MOVES = 1
#: default draws per chain by variant: CVFS's headline sites mix more slowly per sweep (issue 29). With the marginal
#: refresh and the column flips (MARGINAL_REFRESH / COLUMN_MOVES above), on the Sec. 6 data, 4 chains x (200 + N),
#: seeds 0-4 (session 7; worst element's min(bulk, tail) ESS of M / n_relevant, max r-hat; pass = every headline
#: site has r-hat < 1.01 and ESS >= 400):
#: - N = 2,000: M ESS 368-516, r-hat 1.0045-1.0140: 1 seed of 5 passes (the r-hat of M or n_relevant >= 1.01)
#: - N = 3,000: M ESS 604-768, r-hat up to 1.0138: 2 of 5 pass
#: - N = 4,000: M ESS 785-983, r-hat up to 1.0117 (n_relevant, seed 2): 4 of 5 pass
#: - N = 5,000 (default): M ESS 1,009-1,209, n_relevant 990-1,148, alpha >= 1,804; r-hat <= 1.0074: 5 of 5 pass
#:   (seeds 5-9, checked after: 5 of 5 pass, worst M ESS 557 on seed 7, r-hat <= 1.0059; at 4,000 seed 7 fails)
#: Why ESS ~1,000 rather than 400: with ESS 400 even an exactly mixing binary chain (4 chains, simulated) has
#: rank-normalized r-hat >= 1.01 40 % of the time (12 % at ESS 600, 2 % at 1,000), and M has a dozen moving
#: elements. Sampling costs 2.5x the 2,000 draws (about 50-60 s at load 7-9 on 2 shared cores, after a ~2-4 min
#: compile); num_samples="auto" stops earlier (at the first check that passes: 3,500 draws, seed 0).
DEFAULT_SAMPLES = {"full": 1000, "fs": 1000, "cvfs": 5000}


def _headline_draws(draws: dict, variant: str, full_means: "_ImputedMeans | None" = None) -> dict:
    """The headline sites of a run's collected draws (chain, draw, ...), as the posterior holds them. FULL's
    headline mu is not collected by the sampler (it integrates mu out): ``full_means`` imputes it from the label
    draws (required for FULL)."""
    if variant == "full":
        # n_relevant = p, fixed by the model: mu is FULL's only headline site (issue 29: without it the
        # run-until-converged rule found nothing to judge and stopped at its first check)
        return {"mu": full_means(np.asarray(draws["Y"]))}
    out = {"n_relevant": draws["n_relevant"].sum(-1) if variant == "cvfs" else draws["n_relevant"][..., 0]}
    if variant == "cvfs":
        out.update(M=draws["M"][:, :, 1:], alpha=draws["alpha"])
    else:
        out["M"] = draws["M"][:, :, 0]
    return out


#: the stream number of the key with which ``num_samples="auto"`` imputes FULL's mu for its checks (not the stored
#: mu's ``IMPUTE_STREAM``: the mu stored in the fit is imputed after the run as before, whatever the checks drew)
CHECK_IMPUTE_STREAM = 12


class _ImputedMeans:
    """FULL's mu (chain, draw, K+1, p) for the run-until-converged checks: each check's new label draws imputed
    once from their eq. 8-9 conditional (``impute_full``, Sigma not kept) and kept, so a check costs its new
    draws only (the chunks have one shape: compiled once)."""

    def __init__(self, problem: RegionProblem, key):
        self.problem, self.key, self.pieces, self.seen = problem, key, [], 0

    def __call__(self, Y: np.ndarray) -> np.ndarray:
        if Y.shape[1] > self.seen:
            new = np.ascontiguousarray(Y[:, self.seen:])
            mu, _ = impute_full(self.problem, new, jax.random.fold_in(self.key, self.seen), keep_sigma=False)
            self.pieces.append(mu)
            self.seen = Y.shape[1]
        return np.concatenate(self.pieces, axis=1)


def _collapsed_gibbs(spec, data, seed: int = 0, num_chains: int = 4, num_warmup: int = 200,
                     num_samples: int | str | None = None, thinning: int = 1,
                     keep_label_proba: bool | None = None, delta_omega_update: str = "exact",
                     flip_scan: str = "systematic", flips_per_sweep: int | None = None, joint_moves: int | None = None,
                     omega_steps: int | None = None, omega_dof: float | None = None,
                     column_moves: int | None = None, marginal_refresh: bool | None = None,
                     progress_bar: bool = True,
                     chain_method: str = "sequential", target_ess: float | None = None,
                     time_budget: float | None = None) -> Fit:
    """Collapsed MCMC of the Appendix (MH flips of M, label updates with temporary (mu, Sigma), alpha, (delta, Omega)).

    num_chains: 4 (several chains judge convergence; each starts from its own random state). num_samples: None =
    ``DEFAULT_SAMPLES`` of the variant (CVFS mixes more slowly per sweep: 5,000 against 1,000), or "auto":
    sample in compiled chunks until the headline sites (M, n_relevant, and alpha for CVFS) reach bulk and tail ESS
    ``target_ess`` (default 400) with r-hat < 1.01, or stop after ``time_budget`` seconds of sampling (default
    300) with a ConvergenceWarning naming the sites that fell short (``zoo.inference.driver.sample_until``).

    delta_omega_update (CVFS): "exact" (default) = the eq. 11 data augmentation with a Metropolis-Hastings
    correction; "paper" = the paper's plain conjugate draw from the completed data, which does not leave the
    posterior invariant (see zoo.inference.label_feature.gibbs) but always moves.
    flip_scan: "systematic" (default) = each sweep flips every element of each M_k once, in a fresh random order,
    each flip a Metropolis-Hastings test; "random" = the paper's flips of uniformly chosen elements.
    flips_per_sweep: flips of each M_k per sweep (default: p for "systematic", 1 for "random" as in the paper).
    The default departs from the paper's one flip per sweep: given the labels, a flip of an uncertain indicator is
    rarely accepted, and one random flip per sweep leaves those indicators frozen for thousands of sweeps
    (zoo.experiments.bench.gustafson07.bench_cvfs measures both).
    joint_moves (FS, CVFS; default JOINT_MOVES = 2): joint moves per sweep of one indicator and the labels it
    affects (an exact Metropolis-Hastings move with a sequential collapsed label proposal, not in the paper: given
    the labels an uncertain indicator's flip is nearly deterministic); 0 = none.
    omega_steps (CVFS; default OMEGA_STEPS = 5): Metropolis-Hastings steps of Omega with delta integrated out
    (inverse-Wishart random walk with omega_dof degrees of freedom, default 2 n + p + 1), each sweep; then delta
    from its Gaussian conditional. With the default, the CVFS flips of M also integrate delta out (not in the
    paper; exact). Both because the eq. 11 step alone is accepted about 1 % of the time and froze M on Sec. 6.
    column_moves (CVFS; default COLUMN_MOVES = 1): passes per sweep over the features of a move that flips a random
    set of the keyword concepts' indicators of one feature, delta and alpha integrated out (exact, not in the
    paper; ``zoo.inference.label_feature.columns``; measured with the next one, see COLUMN_MOVES); 0 = none.
    marginal_refresh (CVFS; default MARGINAL_REFRESH = True): after the Omega steps, an exact Gibbs draw of the
    background's marginal (delta_S, Omega_SS) on the features S that every concept with units uses: the data hold
    only conditionals given x_S there, so that block follows its prior, and the Omega random walk alone let it
    drift for hundreds of sweeps on Sec. 6 (``zoo.inference.label_feature.moves.background_marginal_refresh``)."""
    # unknown option names: refused by the registry (listing these) before the runner starts
    delta_omega_update = one_of(delta_omega_update, "delta_omega_update", ("exact", "paper"))
    chain_method = check_chain_method(chain_method, "chain_method")
    variant = spec.options["variant"]
    num_chains = positive_int(num_chains, "num_chains")
    num_warmup = nonnegative_int(num_warmup, "num_warmup")
    auto = auto_settings(num_samples, target_ess, time_budget)
    if auto is None and num_samples is None:
        num_samples = DEFAULT_SAMPLES[variant]
    num_samples = auto.max_draws if auto is not None else positive_int(num_samples, "num_samples")
    thinning = positive_int(thinning, "thinning")
    if flips_per_sweep is not None:
        flips_per_sweep = positive_int(flips_per_sweep, "flips_per_sweep")
    joint_moves = None if joint_moves is None else nonnegative_int(joint_moves, "joint_moves")
    omega_steps = None if omega_steps is None else nonnegative_int(omega_steps, "omega_steps")
    column_moves = None if column_moves is None else nonnegative_int(column_moves, "column_moves")
    data = _check_regions(data, variant)
    arrays = region_arrays(data)
    problem = region_problem(spec, arrays, exact_delta_omega=delta_omega_update == "exact",
                             flips_per_sweep=flips_per_sweep, flip_scan=flip_scan, joint_moves=joint_moves,
                             omega_steps=omega_steps, omega_dof=omega_dof, column_moves=column_moves,
                             marginal_refresh=marginal_refresh)
    n, n_concepts = arrays.allowed.shape
    kept_draws = -(-(auto.check_every if auto else num_samples) // thinning)
    if keep_label_proba is None:   # under "auto" the length is not known in advance: the average only
        keep_label_proba = auto is None and num_chains * kept_draws * n * n_concepts <= _MAX_STORED_PROBA
    names = ["Y", "M", "n_relevant", "unit_loglik", "accept_M", "accept_delta_Omega", "accept_joint", "accept_Omega",
             "M_move_probability"]
    names += ["alpha", "delta", "Omega"] if variant == "cvfs" else []
    names += ["accept_column"] if variant == "cvfs" and int(problem.column_moves) > 0 else []
    names += ["label_proba"] if keep_label_proba else []
    report = None
    with progress_callback(num_warmup + (auto.check_every if auto else num_samples), f"{variant} collapsed Gibbs",
                           progress_bar) as progress:
        if auto is None:
            draws, result = run_gibbs(problem, variant, jax.random.PRNGKey(seed), num_chains=num_chains,
                                      num_warmup=num_warmup, num_samples=num_samples, thinning=thinning,
                                      collect=names, progress=progress, chain_method=chain_method)
        else:
            means = _ImputedMeans(problem, jax.random.fold_in(jax.random.PRNGKey(seed), CHECK_IMPUTE_STREAM)) \
                if variant == "full" else None
            run = sample_until(build_gibbs_kernel, variant, problem,
                               jax.random.split(jax.random.PRNGKey(seed), num_chains), num_warmup=num_warmup,
                               converged=lambda d: not short_of(_headline_draws(d, variant, means),
                                                                auto.target_ess),
                               time_budget=auto.time_budget, max_sampling_sweeps=auto.max_draws,
                               check_every=auto.check_every, observe=Collect(variant, tuple(names)),
                               accumulate=label_proba_sum, thinning=thinning, keep_index=0, chunk=50,
                               chain_method=chain_method, progress=progress)
            draws, result = run.result.draws, run.result
            report = auto_report(run, short_of(_headline_draws(draws, variant, means), auto.target_ess), auto)
    # the Rao-Blackwellized label probabilities: eq. 1 averaged over every sampling sweep of every chain
    rb = np.asarray(result.running).sum(0) / max(num_chains * result.n_running, 1)
    last = result.last
    idata = _to_idata(draws, variant, data, arrays, rb)
    add_sample_stat(idata, "lp", _log_joint(spec, variant, problem, arrays, draws))
    if variant == "full":
        _add_full_parameters(idata, problem, arrays, np.asarray(draws["Y"]), seed)
    else:
        _add_replicated_features(idata, problem, variant, arrays, draws, seed)
    if report is not None:
        idata.posterior.attrs.update(zoo_auto=report.text, zoo_auto_reached=int(report.reached),
                                     zoo_auto_sweeps=report.sweeps, zoo_auto_seconds=report.seconds)
    headline = list(_HEADLINE[variant])
    state = dict(problem=problem, variant=variant, arrays=arrays, label_proba=rb,
                 draws={k: draws[k] for k in ("Y", "M") if k in draws} | (
                     {k: draws[k] for k in ("delta", "Omega")} if variant == "cvfs" else {}),
                 last_state=last)
    return Fit(idata=idata, spec=spec, method="collapsed_gibbs", state=state, headline=headline,
               predictor=predict_labels, data=data)


#: the sites ``Fit.summary`` shows by default; FULL's are its concepts' means (imputed, ``_add_full_parameters``)
_HEADLINE = {"full": ("mu",), "fs": ("M", "n_relevant"), "cvfs": ("M", "alpha", "n_relevant")}


def _add_full_parameters(idata, problem: RegionProblem, arrays: RegionArrays, Y: np.ndarray, seed: int) -> None:
    """FULL (in place): every concept's (mu_k, Sigma_k) drawn from its eq. 8-9 conditional given each label draw
    (``zoo.papers.gustafson07_impute``) into ``posterior`` (standardized units; Sigma up to ``MAX_STORED`` numbers),
    replicated features X into ``posterior_predictive`` (up to ``MAX_STORED`` numbers; beyond, at every stride-th
    draw, ``_thinned_draws``); n_relevant = p, fixed by the model, into ``constant_data``: it is no random
    quantity."""
    import xarray as xr

    key_params, key_rep = jax.random.split(jax.random.fold_in(jax.random.PRNGKey(seed), IMPUTE_STREAM))
    n_concepts, p = arrays.allowed.shape[1], arrays.X.shape[1]
    keep_sigma = Y.shape[0] * Y.shape[1] * n_concepts * p * p <= MAX_STORED
    mu, Sigma = impute_full(problem, Y, key_params, keep_sigma=keep_sigma)
    note = "drawn from its eq. 8-9 conditional given the draw's labels (integrated out by the sampler); standardized"
    idata.posterior["mu"] = (("chain", "draw", "concept", "feature"), mu, {"imputed": note})
    if keep_sigma:
        idata.posterior["Sigma"] = (("chain", "draw", "concept", "feature", "feature_bis"), Sigma, {"imputed": note})
    if keep_sigma and Y.size * p <= MAX_STORED:
        X_rep = replicate_features(Y, mu, Sigma, arrays.mean, arrays.scale, key_rep)
        idata.add_groups(posterior_predictive=xr.Dataset({"X": (("chain", "draw", "region", "feature"), X_rep)}))
    else:
        # a long fit (or a large one) still gets a posterior predictive for az.plot_ppc, at every stride-th draw:
        # from the stored (mu_k, Sigma_k) there, or, where Sigma was dropped (mu's law needs it), from (mu_k, Sigma_k)
        # drawn afresh from eq. 8-9 given that draw's labels: a draw of the posterior predictive all the same
        kept = _thinned_draws(Y.shape[1], Y.shape[0] * max(Y.shape[2] * p, 2 * n_concepts * p * p))
        if keep_sigma:
            mu_kept, Sigma_kept, key_kept_rep = mu[:, kept], Sigma[:, kept], key_rep
        else:
            key_kept_params, key_kept_rep = jax.random.split(key_rep)
            mu_kept, Sigma_kept = impute_full(problem, Y[:, kept], key_kept_params, keep_sigma=True)
        X_rep = replicate_features(Y[:, kept], mu_kept, Sigma_kept, arrays.mean, arrays.scale, key_kept_rep)
        idata.add_groups(posterior_predictive=xr.Dataset(
            {"X": (("chain", "draw", "region", "feature"), X_rep)},
            coords={"chain": np.arange(Y.shape[0]), "draw": kept}))
    idata.add_groups(constant_data=xr.Dataset(
        {"n_relevant": ((), np.int64(arrays.X.shape[1]), {"fixed": "FULL uses every feature: n_relevant = p"})}))
    del idata.posterior["n_relevant"]


def _thinned_draws(n_draws: int, numbers_per_draw: int) -> np.ndarray:
    """The draw indices kept for ``posterior_predictive``: every draw while n_draws x numbers_per_draw fits in
    ``MAX_STORED``, else every stride-th, so that a long fit still has a posterior predictive for az.plot_ppc (the
    group's ``draw`` coordinate names which draws)."""
    stride = int(np.ceil(n_draws / max(1, int(MAX_STORED // numbers_per_draw))))
    return np.arange(0, n_draws, stride)


def _add_replicated_features(idata, problem: RegionProblem, variant: str, arrays: RegionArrays, draws: dict,
                             seed: int) -> None:
    """FS / CVFS (in place): replicated features X at each draw into ``posterior_predictive`` (up to ``MAX_STORED``
    numbers; beyond, at every stride-th draw), the integrated-out (mu_k, Sigma_k) drawn from their conditionals on
    the draw's masks (``zoo.papers.gustafson07_impute.replicate_selected_features``); FS's (delta, Omega): the
    sampler's fixed ones."""
    import xarray as xr

    p = arrays.X.shape[1]
    all_Y = np.asarray(draws["Y"])                      # (chain, draw, region)
    kept = _thinned_draws(all_Y.shape[1], all_Y.size // all_Y.shape[1] * p)
    Y, M = all_Y[:, kept], np.asarray(draws["M"])[:, kept]
    leading = Y.shape[:2]
    if variant == "cvfs":
        delta, Omega = np.asarray(draws["delta"])[:, kept], np.asarray(draws["Omega"])[:, kept]
    else:
        delta = np.broadcast_to(np.asarray(problem.delta0), leading + (p,))
        Omega = np.broadcast_to(np.asarray(problem.Omega0), leading + (p, p))
    key = jax.random.fold_in(jax.random.PRNGKey(seed), IMPUTE_STREAM)
    X_rep = replicate_selected_features(problem, variant, Y, M, delta, Omega, arrays.mean, arrays.scale, key)
    idata.add_groups(posterior_predictive=xr.Dataset({"X": (("chain", "draw", "region", "feature"), X_rep)},
                                                     coords={"chain": np.arange(leading[0]), "draw": kept}))


def _log_joint(spec, variant: str, problem: RegionProblem, arrays: RegionArrays, draws: dict) -> np.ndarray:
    """(chain, draw) lp: each draw's log joint under the program with (mu, Sigma) integrated out, the density the
    collapsed sampler targets (``zoo.papers.gustafson07_lp``)."""
    program = partial(spec.program, **program_kwargs(spec, arrays))
    stored = {"Y": draws["Y"], **{k: draws[k] for k in ("alpha", "delta", "Omega") if variant == "cvfs"}}
    if variant != "full":
        stored["M"] = draws["M"][:, :, 1:] if variant == "cvfs" else draws["M"][:, :, 0]
    return collapsed_log_joint(program, variant, problem.concept_prior, problem.delta0, problem.Omega0, stored)


def _site_dims(variant: str) -> dict:
    """Every method's dims (the program's plates ``region`` and ``concept``); M is (feature,) in FS (one mask shared
    by the concepts) and (keyword, feature) in CVFS (the garbage concept's row, all zeros, left out)."""
    dims = {"Y": ("region",), "label_proba": ("region", "concept"), "X": ("region", "feature"),
            "mu": ("concept", "feature"), "Sigma": ("concept", "feature", "feature_bis"), "alpha": ("feature",),
            "delta": ("feature",), "Omega": ("feature", "feature_bis"), "accept_M": ("keyword",)}
    dims["M"] = ("keyword", "feature") if variant == "cvfs" else ("feature",)
    return dims


def _coords(spec, data) -> dict:
    """The data's labels: concepts (garbage first) and keywords are the vocabulary's words."""
    vocab = [str(w) for w in data.vocabulary]
    return {"concept": [GARBAGE] + vocab, "keyword": vocab}


def _to_idata(draws, variant, data, arrays, rb):
    vocab = list(data.vocabulary)
    p = arrays.X.shape[1]
    posterior = {"Y": draws["Y"], "n_relevant": draws["n_relevant"].sum(-1) if variant == "cvfs"
                 else draws["n_relevant"][..., 0]}
    dims = {"Y": ["region"], "label_proba": ["region", "concept"], "X": ["region", "feature"]}
    if variant == "cvfs":
        posterior.update(M=draws["M"][:, :, 1:].astype(np.int8), alpha=draws["alpha"], delta=draws["delta"],
                         Omega=draws["Omega"])
        dims.update(M=["keyword", "feature"], alpha=["feature"], delta=["feature"], Omega=["feature", "feature_bis"])
    elif variant == "fs":
        posterior["M"] = draws["M"][:, :, 0].astype(np.int8)
        dims["M"] = ["feature"]
    if "label_proba" in draws:
        posterior["label_proba"] = draws["label_proba"]
    # acceptance of the moves that can reject: the M flips (FS: one shared flip; CVFS: one per keyword) and the
    # MH-corrected (delta, Omega) update (CVFS); the label and alpha updates are exact Gibbs draws
    stats = {}
    if variant in ("fs", "cvfs") and "M_move_probability" in draws:
        # the sampler's expected number of moves of M per sweep (its flips' and joint moves' probabilities of
        # changing M): the evidence that tells a certain M from a stuck one where M never moved
        stats["M_move_probability"] = draws["M_move_probability"]
    if variant == "fs":
        stats["accept_M"] = draws["accept_M"][..., 0]
        stats["accept_joint"] = draws["accept_joint"]
    elif variant == "cvfs":
        stats["accept_M"] = draws["accept_M"][..., 1:]
        stats["accept_delta_Omega"] = draws["accept_delta_Omega"]
        stats["accept_joint"] = draws["accept_joint"]
        stats["accept_Omega"] = draws["accept_Omega"]
        if "accept_column" in draws:
            stats["accept_column"] = draws["accept_column"]
        dims["accept_M"] = ["keyword"]
    coords = {"region": np.arange(arrays.X.shape[0]), "concept": [GARBAGE] + vocab, "keyword": vocab,
              "feature": [f"x{j}" for j in range(p)], "feature_bis": [f"x{j}" for j in range(p)]}
    idata = to_inference_data(posterior, sample_stats=stats or None, log_likelihood={"X": draws["unit_loglik"]},
                              observed_data={"X": data.X}, dims=dims, coords=coords,
                              attrs={"method": "collapsed_gibbs", "variant": variant})
    # which sites each acceptance rate is evidence about (zoo.core.convergence: a site that never moved is judged
    # by the acceptance of the moves that could have moved it)
    for name in ("accept_M", "accept_joint", "accept_column"):
        if name in stats:
            idata.sample_stats[name].attrs.update(sites="M n_relevant", kind="acceptance")
    if "M_move_probability" in stats:
        idata.sample_stats["M_move_probability"].attrs.update(sites="M n_relevant", kind="move_probability")
    return idata


# ---------------------------------------------------------------------------------------------------- predictions

def feature_relevance(fit: Fit) -> np.ndarray:
    """(K, p) Pr(M_ki = 1 | data): CVFS per keyword; FS the shared M repeated; FULL ones."""
    M = np.asarray(fit.state["draws"]["M"], float)           # (chain, draw, K+1, p)
    variant = fit.state["variant"]
    K = M.shape[2] - 1
    if variant == "full":
        return np.ones((K, M.shape[3]))
    rows = M[:, :, 1:] if variant == "cvfs" else np.repeat(M[:, :, :1], K, axis=2)
    return rows.mean(axis=(0, 1))


def _same_regions(a: AnnotatedRegions, b: AnnotatedRegions) -> bool:
    return a is b or (a.X.shape == b.X.shape and np.array_equal(a.X, b.X) and np.array_equal(a.image_ids, b.image_ids)
                      and list(a.keywords) == list(b.keywords) and list(a.vocabulary) == list(b.vocabulary))


def predict_labels(fit: Fit, data: AnnotatedRegions, use_keywords: bool = True, max_draws: int = 200):
    """RegionLabelPrediction for ``data``.

    The training regions get the Rao-Blackwellized label posterior of the run (eq. 1 under S_i and coverage,
    averaged over sweeps). Other regions get the posterior predictive, averaged over up to ``max_draws`` stored
    draws of (Y, M, delta, Omega): eq. 1 with (mu_k, Sigma_k) integrated out (a multivariate t per concept),
    restricted to S_i when ``use_keywords`` and the image has keywords, else over all K+1 concepts (Sec. 7
    treats validation images as unannotated: ``use_keywords=False``), times the label prior (garbage weight w,
    each keyword 1: ``label_log_prior``).
    """
    if not isinstance(data, AnnotatedRegions):
        raise ValueError(f"data: expected AnnotatedRegions, got {type(data).__name__}")
    if list(data.vocabulary) != list(fit.data.vocabulary):
        raise ValueError("vocabulary: differs from the training data's; concepts would not line up")
    arrays = fit.state["arrays"]
    if data.X.shape[1] != arrays.X.shape[1]:
        raise ValueError(f"X: expected {arrays.X.shape[1]} features as in training, got {data.X.shape[1]}")
    concepts = [GARBAGE] + list(data.vocabulary)
    relevance = feature_relevance(fit)
    if use_keywords and _same_regions(data, fit.data):
        return RegionLabelPrediction(fit.state["label_proba"], relevance, concepts, np.ones(len(data.X), bool))
    new = region_arrays(data, arrays.mean, arrays.scale)
    allowed = new.allowed if use_keywords else np.ones_like(new.allowed)
    annotated = ~np.all(allowed, axis=1)
    draws = fit.state["draws"]
    n_chain, n_draw = draws["Y"].shape[:2]
    flat = np.arange(n_chain * n_draw)
    pick = flat[np.unique(np.linspace(0, flat.size - 1, min(max_draws, flat.size)).round().astype(int))]
    problem, variant = fit.state["problem"], fit.state["variant"]

    def take(name, default):
        if name in draws:
            arr = np.asarray(draws[name])
            return jnp.asarray(arr.reshape((-1,) + arr.shape[2:])[pick])
        return jnp.broadcast_to(default, (pick.size,) + default.shape)

    Ys, Ms = take("Y", None), take("M", None)
    deltas, Omegas = take("delta", problem.delta0), take("Omega", problem.Omega0)
    log_allowed = jnp.where(jnp.asarray(allowed), label_log_prior(problem, allowed.shape[1]), -jnp.inf)

    # a small prediction is mostly compile time: compile without XLA's backend optimization (see run_gibbs)
    small = pick.size * len(new.X) <= FAST_COMPILE_WORK

    @partial(jax.jit, compiler_options=FAST_COMPILE_OPTIONS if small else None)
    def mean_proba(Ys, Ms, deltas, Omegas, Xn):
        def one(carry, draw):
            ll = predictive_log_lik(problem, variant, *draw, Xn)
            return carry + jax.nn.softmax(ll + log_allowed, axis=-1), None
        total, _ = jax.lax.scan(one, jnp.zeros(allowed.shape), (Ys, Ms, deltas, Omegas))
        return total / Ys.shape[0]

    proba = np.asarray(mean_proba(Ys, Ms, deltas, Omegas, jnp.asarray(new.X)))
    return RegionLabelPrediction(proba, relevance, concepts, annotated)


_KERNEL_OPTIONS = ("delta_omega_update", "flip_scan", "flips_per_sweep", "joint_moves", "omega_steps", "omega_dof",
                   "column_moves", "marginal_refresh")


def mcmc_kernel(spec, data, method: str, options) -> ProgramKernel:
    """``zoo.kernel``'s builder: a ``ProgramKernel`` of ``build_gibbs_kernel`` on AnnotatedRegions ``data``
    (features standardized as ``zoo.fit`` does), drawing Y (n,), M and n_relevant with ``zoo.fit``'s shapes (FS: M
    (p,); CVFS: M (K, p); ``FitShapes``), label_proba (n, K+1), unit_loglik (n,), acceptances, and for CVFS alpha
    (p,), delta (p,), Omega (p, p)."""
    check_known(options, _KERNEL_OPTIONS, f"the {method!r} kernel")
    opts = dict(options)
    update = opts.pop("delta_omega_update", "exact")
    if update not in ("exact", "paper"):
        raise ValueError(f"delta_omega_update: expected 'exact' or 'paper', got {update!r}")
    variant = spec.options["variant"]
    arrays = region_arrays(_check_regions(data, variant))
    problem = region_problem(spec, arrays, exact_delta_omega=update == "exact", **opts)
    # the program with the spec's priors, so that az.from_numpyro's prior and the kernel's target agree
    program = partial(spec.program, **program_kwargs(spec, arrays))
    # lp per step, as zoo.fit stores it (zoo.papers.gustafson07_lp): az.from_numpyro(mcmc) gets sample_stats["lp"]
    return ProgramKernel(build_gibbs_kernel, variant, problem,
                         FitShapes(Collect(variant, collect_names(variant)), variant), program,
                         log_joint=partial(kernel_log_joint, program, variant))


class FitShapes(NamedTuple):
    """``observe`` of ``zoo.kernel``: the sweep's draws (``Collect``) with the shapes ``zoo.fit`` stores and the
    program declares: M (p,) in FS (the one mask), (K, p) in CVFS (the garbage row, all zeros, left out), int8;
    n_relevant a count (its sum over concepts in CVFS). Hashable, so equal settings reuse the compiled step."""
    collect: Any
    variant: str

    def __call__(self, state, info) -> dict:
        out = dict(self.collect(state, info))
        if "M" in out:
            out["M"] = (out["M"][1:] if self.variant == "cvfs" else out["M"][0]).astype(jnp.int8)
        if "n_relevant" in out:
            out["n_relevant"] = out["n_relevant"].sum(-1) if self.variant == "cvfs" else out["n_relevant"][0]
        return out


for _variant in ("full", "fs", "cvfs"):
    register_model(f"gustafson07.{_variant}", paper=PAPER, title=_TITLES[_variant], build=partial(_build, _variant),
                   data_kind="AnnotatedRegions", default_method="collapsed_gibbs",
                   headline=_HEADLINE[_variant],
                   prior_families={"M": families(dist.BernoulliProbs, dist.BernoulliLogits,
                                                 why="the FS flip update"),
                                   "alpha": families(dist.Beta, dist.MixtureSameFamily,
                                                     why="the Gibbs update of alpha: a Beta or a mixture of Betas")},
                   unit_sites=("Y", "label_proba"), site_dims=_site_dims(_variant), coords=_coords)
register_method(("gustafson07.full", "gustafson07.fs", "gustafson07.cvfs"), "collapsed_gibbs",
                description="collapsed MCMC of the Appendix (M flips, labels via eq. 1, alpha, (delta, Omega))",
                kernel=mcmc_kernel)(_collapsed_gibbs)
