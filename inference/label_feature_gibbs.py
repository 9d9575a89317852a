"""Collapsed MCMC for FULL / FS / CVFS (Gustafson, Thompson & de Freitas 2007, Appendix).

Target: eq. 10, pi(Y, M, alpha, delta, Omega | X, S) with every concept's (mu_k, Sigma_k) integrated out. One sweep:

1. ``feature_flip_step``: for each concept row M_k (CVFS) or the shared M (FS), Metropolis-Hastings flips of one
   element (symmetric proposal) on the collapsed density. The paper flips one randomly chosen element per sweep
   (``systematic_scan=False, flips_per_sweep=1``). Departure from the paper, and our default: a systematic scan,
   every element of M_k flipped once per sweep in a fresh random order, each flip always proposed and accepted
   with min(1, ratio) (the Metropolized Gibbs update of a binary variable, Liu 1996; Peskun-better than the
   heat-bath update NumPyro's DiscreteHMCGibbs applies to every discrete coordinate per iteration). Why: given Y,
   the flip of an uncertain indicator is accepted well under 1 % of the time (its labels follow it), so with one
   random flip out of p per sweep the uncertain indicators stay frozen for thousands of sweeps; p flips cost about
   p evaluations of K+1 collapsed terms, small next to the label step. Measured: zoo bench cvfs.
2. ``label_step``: draw temporary (mu_k, Sigma_k) from eq. 8-9 given (Y, M), extend them to p dimensions with
   (delta, Omega), and update each Y_ij from its full conditional: eq. 1 restricted to S_i and to the coverage
   constraint given the image's other labels. The probabilities are returned: their average over sweeps is the
   Rao-Blackwellized Pr(Y_ij = y | data). Images are updated in parallel, the segments of an image in turn.
3. ``alpha_step`` (CVFS): Gibbs from the Beta-mixture posterior of each alpha_j.
4. ``delta_omega_step`` (CVFS): data augmentation of eq. 11 (x*_M ~ N(delta_M, Omega_MM), x*_{M^c} from eq. 11),
   conjugate NIW proposal from the completed x*, and a Metropolis-Hastings correction: because x*_{M^c} depends on
   Omega through eq. 11, the plain conjugate draw of the paper does not leave eq. 10 invariant (on a small test
   problem it puts the correlation of Omega at 0.26 where the target has 0.79, see
   tests/test_gustafson07_gibbs.py); the correction makes the move exact. Its acceptance rate is reported.

Every move is a pure ``(problem, state, key) -> (state, info)`` function over NamedTuples; ``LabelFeatureGibbs``
is the thin ``numpyro.infer.mcmc.MCMCKernel`` wrapper so ``numpyro.infer.MCMC`` runs chains, warm-up and progress.
Shapes: n units, p features, K+1 concepts (0 = garbage), I images, J = most segments in one image.
"""
from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import solve_triangular
from jax.scipy.special import betaln, gammaln, logsumexp
from numpyro.infer.mcmc import MCMCKernel
from tqdm.auto import tqdm

from zoo._config import FAST_COMPILE_OPTIONS
from zoo.inference.collapsed_niw import (ConceptPrior, DeltaCollapsedTerms, NIWPrior, collapsed_concept_log_density,
                                         concept_delta_terms, concept_niw_prior, delta_collapsed_log_density,
                                         delta_conditional, inverse_wishart_log_density, niw_log_predictive,
                                         shared_mask_log_density, predictive_cache, cache_log_predictive, cache_move, gaussian_logpdf_masked, gaussian_loglik_suffstats,
                                         masked_cholesky, masked_matrix, niw_log_marginal, niw_posterior,
                                         sample_beta, sample_masked_inverse_wishart, sample_niw_masked, suffstats)

__all__ = ["RegionProblem", "BetaMixture", "GibbsState", "SweepInfo", "concept_suffstats", "concept_masks_of",
           "feature_flip_step", "delta_collapsed_flip_step", "joint_flip_relabel_step", "single_flip_step", "label_step", "alpha_step", "omega_step", "delta_omega_step", "gibbs_sweep", "init_state",
           "LabelFeatureGibbs", "run_gibbs", "predictive_log_lik", "FAST_COMPILE_OPTIONS"]


class BetaMixture(NamedTuple):
    """Prior of each alpha_j: sum_c weights_c Beta(a_c, b_c); one component = a plain Beta."""
    weights: jnp.ndarray
    a: jnp.ndarray
    b: jnp.ndarray


class RegionProblem(NamedTuple):
    """Everything a sweep reads (fixed during sampling).

    X (n, p) standardized features; allowed (n, K+1) bool = S_i of each unit; keyword_mask (I, K+1) bool (column
    0 False) = keywords each image must cover; image_slots (I, J) int = unit indices of each image, -1 padded;
    concept_prior; delta_omega_prior (NIW of (delta, Omega), CVFS); alpha_prior (CVFS); inclusion_logit = log q/(1-q)
    of the FS prior Pr(M_j = 1) = q; delta0 (p,), Omega0 (p, p): fixed (delta, Omega) (FULL/FS) or initial values;
    exact_delta_omega: True = MH-corrected step 4 (exact), False = the paper's plain conjugate draw (biased);
    flips_per_sweep: MH flips of each M_k per sweep (the paper: 1); systematic_scan: False = each flip takes a
    uniformly random element (the paper), True = the elements in a fresh random order each sweep, cycled;
    omega_steps: Metropolis-Hastings steps of Omega with delta integrated out per sweep (CVFS, ``omega_step``;
    0 = none); omega_dof: degrees of freedom of its inverse-Wishart random-walk proposal (larger = smaller steps);
    joint_moves: joint moves of one indicator and the labels it affects per sweep (``joint_flip_relabel_step``).
    """
    X: jnp.ndarray
    allowed: jnp.ndarray
    keyword_mask: jnp.ndarray
    image_slots: jnp.ndarray
    concept_prior: ConceptPrior
    delta_omega_prior: NIWPrior
    alpha_prior: BetaMixture
    inclusion_logit: jnp.ndarray
    delta0: jnp.ndarray
    Omega0: jnp.ndarray
    exact_delta_omega: jnp.ndarray = True
    flips_per_sweep: jnp.ndarray = 1
    systematic_scan: jnp.ndarray = False
    omega_steps: jnp.ndarray = 0
    omega_dof: jnp.ndarray = 100.0
    joint_moves: jnp.ndarray = 0


class GibbsState(NamedTuple):
    """Y (n,) labels; M (K+1, p) bool inclusion of every concept (row 0 garbage); alpha (p,); delta (p,);
    Omega (p, p); label_proba (n, K+1) the last sweep's full conditionals; unit_loglik (n,) log p(x_ij | S_i,
    temporary parameters) for az.loo; proba_sum (n, K+1) and n_kept: running Rao-Blackwell sum after warm-up;
    iteration; num_warmup (sweeps before accumulating); rng_key; z: the dict numpyro.infer.MCMC collects;
    joint_tries, joint_accepts (K+1, p): joint moves of each indicator tried / accepted during warm-up (they set the
    indicator's selection weight, frozen after warm-up: ``joint_flip_relabel_step``)."""
    Y: jnp.ndarray
    M: jnp.ndarray
    alpha: jnp.ndarray
    delta: jnp.ndarray
    Omega: jnp.ndarray
    label_proba: jnp.ndarray
    unit_loglik: jnp.ndarray
    proba_sum: jnp.ndarray
    n_kept: jnp.ndarray
    iteration: jnp.ndarray
    num_warmup: jnp.ndarray
    rng_key: jnp.ndarray
    z: dict
    joint_tries: jnp.ndarray = 0.0
    joint_accepts: jnp.ndarray = 0.0


class SweepInfo(NamedTuple):
    accept_M: jnp.ndarray           # (K+1,) 1 where concept k's flip was accepted (FS: row 0 holds the shared one)
    accept_delta_Omega: jnp.ndarray  # () 1 where the (delta, Omega) proposal was accepted (CVFS)
    accept_Omega: jnp.ndarray = 1.0  # () acceptance rate of the sweep's Omega random-walk steps (CVFS)
    accept_joint: jnp.ndarray = 1.0  # () acceptance rate of the sweep's joint (indicator, labels) moves


def concept_suffstats(X, Y, n_concepts):
    """Per-concept (count (K+1,), total (K+1, p), scatter (K+1, p, p)) of the units labelled k."""
    onehot = jax.nn.one_hot(Y, n_concepts, dtype=X.dtype)
    return onehot.sum(0), onehot.T @ X, jnp.einsum("nk,ni,nj->kij", onehot, X, X)


def concept_masks_of(variant: str, M: jnp.ndarray) -> jnp.ndarray:
    """The inclusion matrix the likelihood uses: FULL all ones; FS row 0 broadcast; CVFS as stored (row 0 = 0)."""
    if variant == "full":
        return jnp.ones_like(M)
    if variant == "fs":
        return jnp.broadcast_to(M[0], M.shape)
    return M


def _concept_terms(problem, stats, masks, delta, Omega):
    """(K+1,) collapsed log density of each concept's units (Appendix eq. 10)."""
    fn = jax.vmap(collapsed_concept_log_density, in_axes=(None, 0, 0, 0, 0, None, None))
    return fn(problem.concept_prior, *stats, masks, delta, Omega)


def _free_rows(variant: str, M: jnp.ndarray) -> jnp.ndarray:
    """The indicators a flip changes: FS the shared vector as one row (1, p); CVFS every row (K+1, p)."""
    return M[:1] if variant == "fs" else M


def _rows_to_M(variant: str, F: jnp.ndarray, n_concepts: int) -> jnp.ndarray:
    return jnp.broadcast_to(F[0], (n_concepts, F.shape[1])) if variant == "fs" else F


def free_log_target(problem: RegionProblem, variant: str, stats, F, alpha, delta, Omega) -> jnp.ndarray:
    """log pi(M | Y, alpha, delta, Omega, X) up to a constant, one value per free row of ``F`` (eq. 10).

    FS: (1,) the sum of the K+1 collapsed concept terms under the shared mask + logit(q) |M| (up to a constant in
    M and Y: ``shared_mask_log_density``). CVFS: (K+1,) each
    concept's collapsed term + sum_j M_kj logit(alpha_j) (the prior pi(M | alpha)); the rows are conditionally
    independent, so each can be flipped by its own Metropolis-Hastings test."""
    n_concepts = stats[0].shape[0]
    if variant == "fs":   # one shared mask: the conditional factors pool over concepts (shared_mask_log_density)
        return (shared_mask_log_density(problem.concept_prior, *stats, F[0], delta, Omega)
                + problem.inclusion_logit * F[0].sum())[None]
    terms = _concept_terms(problem, stats, concept_masks_of(variant, _rows_to_M(variant, F, n_concepts)), delta,
                           Omega)
    return terms + F.astype(terms.dtype) @ (jnp.log(alpha) - jnp.log1p(-alpha))


def _movable(variant: str, n_rows: int) -> jnp.ndarray:
    """Rows a flip may change: FS its one row; CVFS rows 1..K (the garbage row M_0 = 0 is fixed)."""
    return jnp.ones(n_rows, bool) if variant == "fs" else jnp.arange(n_rows) > 0


def _flip_columns(F, cols):
    rows = jnp.arange(F.shape[0])
    return F.at[rows, cols].set(~F[rows, cols])


def metropolis_flip(problem, variant, stats, F, current, cols, key, alpha, delta, Omega, flip=True):
    """Flip element ``cols[r]`` of every free row r, accept each row with min(1, pi(F') / pi(F)) (the proposal is
    symmetric). With a deterministic column this is the Metropolized Gibbs update of a binary variable (Liu 1996):
    the flip is always proposed, which beats the heat-bath draw from the full conditional (Peskun).
    ``current`` = free_log_target at F (carried, so one evaluation per flip). ``flip`` False: no flip, return F
    with its log target (used to start the carry). Returns (F, current, accepted)."""
    F_new = jnp.where(flip, _flip_columns(F, cols), F)
    proposed = free_log_target(problem, variant, stats, F_new, alpha, delta, Omega)
    accept = (jnp.log(jax.random.uniform(key, proposed.shape)) < proposed - current) & _movable(variant, F.shape[0])
    accept = accept | ~jnp.asarray(flip)
    return (jnp.where(accept[:, None], F_new, F), jnp.where(accept, proposed, current),
            accept.astype(proposed.dtype))


FLIP_SCANS = ("random", "systematic")


def feature_flip_step(problem: RegionProblem, variant: str, state: GibbsState, key):
    """Step 1: ``problem.flips_per_sweep`` Metropolis-Hastings flips of each M_k (CVFS, k >= 1) or of the shared M
    (FS) on the collapsed density, Y fixed. The element of each flip: ``problem.systematic_scan`` False = uniform
    at random (the paper); True = the p columns in a fresh random order each sweep, cycled (flip i takes column
    order[i mod p]). Each flip leaves eq. 10 given Y invariant, so their composition does. The current log target
    is carried, so a flip costs one evaluation of the K+1 collapsed concept terms. info = acceptance rate per
    concept row (FS: row 0)."""
    n_concepts, p = state.M.shape
    if variant == "full":
        return state, jnp.zeros(n_concepts)
    n_flips = jnp.maximum(jnp.asarray(problem.flips_per_sweep), 1)
    systematic = jnp.asarray(problem.systematic_scan)
    stats = concept_suffstats(problem.X, state.Y, n_concepts)          # Y does not change during the flips
    args = (state.alpha, state.delta, state.Omega)
    F = _free_rows(variant, state.M)
    k_perm, k_loop = jax.random.split(key)
    order = jax.random.permutation(k_perm, p)

    def body(i, carry):
        # i = -1 evaluates the current state (no flip, "accepted" unconditionally): the log target is then
        # carried, and the loop body is the only traced copy of the collapsed terms (compile time)
        F, current, accepted = carry
        k_col, k_acc = jax.random.split(jax.random.fold_in(k_loop, i + 1))     # i + 1 >= 0: eager-safe
        cols = jnp.where(systematic, order[jnp.maximum(i, 0) % p], jax.random.randint(k_col, (F.shape[0],), 0, p))
        F_new, current_new, acc = metropolis_flip(problem, variant, stats, F, current, cols, k_acc, *args,
                                                  flip=i >= 0)
        return F_new, current_new, accepted + acc * (i >= 0)

    F, _, accepted = jax.lax.fori_loop(-1, n_flips, body, (F, jnp.zeros(F.shape[0]), jnp.zeros(F.shape[0])))
    accepted = accepted / n_flips
    if variant == "fs":
        accepted = jnp.zeros(n_concepts).at[0].set(accepted[0])
    return state._replace(M=_rows_to_M(variant, F, n_concepts)), accepted


def delta_collapsed_flip_step(problem: RegionProblem, state: GibbsState, key):
    """CVFS step 1, joint move of M and delta: Metropolized flips of the M_kj with delta integrated out of eq. 10
    (``delta_collapsed_log_density``: given Omega, delta is Gaussian), then delta redrawn from its Gaussian
    conditional given the new M. Each flip is an MH step on pi(M | Y, alpha, Omega, X) (delta marginalized), and the
    final draw is an exact Gibbs draw from pi(delta | M, Y, Omega, X), so the composition leaves pi(M, delta | Y,
    alpha, Omega, X) invariant (a partially collapsed sampler, van Dyk & Park 2008: the flips never condition on
    delta, which is drawn right after them). Why: with delta held fixed, a feature relevant to every concept leaves
    delta_j informed by the prior only; it drifts, and turning M_kj off then needs concept k's units to fit the
    drifted N(delta, Omega) conditional: on the Sec. 6 data the fixed-delta flips were accepted 0.6 % of the time
    and chains disagreed (r-hat up to 29). The rows are coupled through delta's posterior, so the flips are
    sequential: for i < flips_per_sweep and each row k = 1..K in turn, column order[i mod p] (systematic) or a
    uniform column (random). Returns (state, acceptance per row)."""
    n_concepts, p = state.M.shape
    n_flips = jnp.maximum(jnp.asarray(problem.flips_per_sweep), 1)
    n_rows = n_concepts - 1
    systematic = jnp.asarray(problem.systematic_scan)
    count, total, scatter = concept_suffstats(problem.X, state.Y, n_concepts)
    L_omega = jnp.linalg.cholesky(state.Omega)
    Omega_inv = jax.scipy.linalg.cho_solve((L_omega, True), jnp.eye(p))
    logdet = 2.0 * jnp.sum(jnp.log(jnp.diagonal(L_omega)))
    logit = jnp.log(state.alpha) - jnp.log1p(-state.alpha)
    prior = problem.delta_omega_prior
    k_perm, k_loop, k_delta = jax.random.split(key, 3)
    order = jax.random.permutation(k_perm, p)

    def log_target(M, terms):
        return delta_collapsed_log_density(terms, prior, Omega_inv, logdet) + jnp.sum(jnp.where(M, logit, 0.0))

    def body(t, carry):
        # t < 0: fill concept t + K + 1's terms without a flip (one traced copy of the collapsed terms: compile time)
        M, terms, current, accepted = carry
        init = t < 0
        k = jnp.where(init, t + n_concepts, 1 + jnp.maximum(t, 0) % n_rows)
        i = jnp.maximum(t, 0) // n_rows
        k_col, k_acc = jax.random.split(jax.random.fold_in(k_loop, t + n_concepts))
        j = jnp.where(systematic, order[i % p], jax.random.randint(k_col, (), 0, p))
        row = jnp.where(init, M[k], M[k].at[j].set(~M[k, j]))
        new = concept_delta_terms(problem.concept_prior, count[k], total[k], scatter[k], row, state.Omega, Omega_inv,
                                  logdet)
        terms_new = jax.tree_util.tree_map(lambda a, b: a.at[k].set(b), terms, new)
        M_new = M.at[k].set(row)
        proposed = log_target(M_new, terms_new)
        accept = init | (jnp.log(jax.random.uniform(k_acc)) < proposed - current)
        pick = lambda a, b: jnp.where(accept, a, b)
        return (pick(M_new, M), jax.tree_util.tree_map(pick, terms_new, terms), pick(proposed, current),
                accepted.at[k].add(jnp.where(init, 0.0, accept.astype(jnp.float64))))

    zero_terms = DeltaCollapsedTerms(jnp.zeros(n_concepts), jnp.zeros((n_concepts, p, p)), jnp.zeros((n_concepts, p)))
    M, terms, _, accepted = jax.lax.fori_loop(-n_concepts, n_flips * n_rows, body,
                                              (state.M, zero_terms, jnp.asarray(0.0), jnp.zeros(n_concepts)))
    mean, L = delta_conditional(terms, prior, Omega_inv)
    delta = mean + solve_triangular(L.T, jax.random.normal(k_delta, (p,)), lower=False)
    return state._replace(M=M, delta=delta), accepted / n_flips


def _omega_factors(Omega):
    L = jnp.linalg.cholesky(Omega)
    return jax.scipy.linalg.cho_solve((L, True), jnp.eye(Omega.shape[-1])), 2.0 * jnp.sum(jnp.log(jnp.diagonal(L)))


def omega_log_target(problem: RegionProblem, stats, M, Omega):
    """log pi(Omega | M, Y, X) up to a constant, delta integrated out: the IW prior of Omega times
    ``delta_collapsed_log_density`` (which holds delta's prior N(mu0, Omega / kappa0))."""
    Omega_inv, logdet = _omega_factors(Omega)
    prior = problem.delta_omega_prior
    terms = jax.vmap(concept_delta_terms, in_axes=(None, 0, 0, 0, 0, None, None, None))(
        problem.concept_prior, *stats, M, Omega, Omega_inv, logdet)
    return (inverse_wishart_log_density(Omega, prior.nu0, prior.S0)
            + delta_collapsed_log_density(terms, prior, Omega_inv, logdet)), terms, Omega_inv


def omega_step(problem: RegionProblem, state: GibbsState, key):
    """CVFS, joint move of (delta, Omega): ``problem.omega_steps`` Metropolis-Hastings steps on pi(Omega | M, Y, X)
    with delta integrated out (``omega_log_target``), each proposing Omega' ~ IW_nu(((nu - p - 1) Omega)^{-1})
    (mean Omega, nu = ``problem.omega_dof``) with the reverse proposal density in the ratio; then delta from its
    Gaussian conditional given (M, Y, Omega). Exact: MH on the delta-marginal followed by the conditional draw
    leaves pi(delta, Omega | M, Y, X) invariant. Why: the data-augmentation step (eq. 11 + MH correction) is
    accepted about 1 % of the time on the Sec. 6 data, and Omega then freezes the flips of M.
    Returns (state, acceptance rate)."""
    n_concepts, p = state.M.shape
    stats = concept_suffstats(problem.X, state.Y, n_concepts)
    nu = jnp.asarray(problem.omega_dof, jnp.float64)
    c = nu - p - 1.0
    k_loop, k_delta = jax.random.split(key)

    def body(t, carry):
        Omega, current, accepted = carry
        k_prop, k_acc = jax.random.split(jax.random.fold_in(k_loop, t))
        proposal = sample_masked_inverse_wishart(k_prop, nu, c * Omega, jnp.ones(p, bool))
        proposal = 0.5 * (proposal + proposal.T)
        proposed, _, _ = omega_log_target(problem, stats, state.M, proposal)
        log_ratio = (proposed - current + inverse_wishart_log_density(Omega, nu, c * proposal)
                     - inverse_wishart_log_density(proposal, nu, c * Omega))
        accept = jnp.log(jax.random.uniform(k_acc)) < log_ratio
        return (jnp.where(accept, proposal, Omega), jnp.where(accept, proposed, current),
                accepted + accept.astype(jnp.float64))

    n_steps = jnp.asarray(problem.omega_steps)
    current, _, _ = omega_log_target(problem, stats, state.M, state.Omega)
    Omega, _, accepted = jax.lax.fori_loop(0, n_steps, body, (state.Omega, current, jnp.asarray(0.0)))
    _, terms, Omega_inv = omega_log_target(problem, stats, state.M, Omega)
    mean, L = delta_conditional(terms, problem.delta_omega_prior, Omega_inv)
    delta = mean + solve_triangular(L.T, jax.random.normal(k_delta, (p,)), lower=False)
    return state._replace(delta=delta, Omega=Omega), accepted / jnp.maximum(n_steps, 1)


def _unit_images(problem: RegionProblem, n: int) -> jnp.ndarray:
    """(n,) the row of ``image_slots`` holding each unit."""
    slots = problem.image_slots
    rows = jnp.broadcast_to(jnp.arange(slots.shape[0])[:, None], slots.shape)
    return jnp.zeros(n, int).at[jnp.where(slots >= 0, slots, n)].set(rows, mode="drop")


def _conditional_terms(X, masks, delta, Omega):
    """(n, K+1) log phi(x_{M_k^c} | x_{M_k}; delta, Omega) of every unit under every concept's mask (eq. 5)."""
    p = X.shape[1]
    base = gaussian_logpdf_masked(X, delta, jnp.linalg.cholesky(Omega), jnp.ones(p, bool))
    return jax.vmap(lambda m: base - gaussian_logpdf_masked(X, delta, masked_cholesky(Omega, m), m), out_axes=1)(masks)


def _pick_indicator(variant: str, state: GibbsState, key):
    """The indicator (row k, column j) of a joint move: drawn with weight (accepted + 1/2) / (tried + 1), the joint
    moves' smoothed acceptance rate during warm-up (frozen afterwards, so the kernel is fixed and the choice does not
    depend on the state: a symmetric proposal). FS: row 0 (the shared M); CVFS: rows 1..K."""
    n_concepts, p = state.M.shape
    rows = jnp.arange(n_concepts)[:, None]
    movable = (rows == 0) if variant == "fs" else (rows > 0)
    logw = jnp.where(movable, jnp.log(state.joint_accepts + 0.5) - jnp.log(state.joint_tries + 1.0), -jnp.inf)
    flat = jax.random.categorical(key, logw.reshape(-1))
    return flat // p, flat % p


def _forced_units(problem: RegionProblem, n: int) -> jnp.ndarray:
    """(n,) True where the label cannot change: a single allowed label, or an image of one segment with a keyword
    (coverage puts that keyword on it)."""
    image = _unit_images(problem, n)
    segments = (problem.image_slots >= 0).sum(1)
    one_keyword_segment = (segments[image] == 1) & problem.keyword_mask[image].any(-1)
    return (problem.allowed.sum(-1) <= 1) | one_keyword_segment


def joint_flip_relabel_step(problem: RegionProblem, variant: str, state: GibbsState, key):
    """Joint Metropolis-Hastings move of one indicator and the labels it affects (FS: M_j shared by all concepts,
    every unit with a choice; CVFS: M_kj, the units whose S_i holds k), (mu, Sigma) integrated out, (alpha, delta,
    Omega) fixed. Proposal: flip the indicator ``_pick_indicator`` draws (M -> M'), then visit the affected units u_1..u_m
    in a random order and draw Y'_t from its collapsed full conditional under M' given o_t = (Y'_<t, Y_>t) (S_i and
    the coverage constraint respected). The reverse move visits them in the reverse order under M, meeting the
    same o_t, so with pi = eq. 10 the Hastings ratio telescopes:
        pi(M', Y') q(Y | M, Y') / (pi(M, Y) q(Y' | M', Y)) = pi(M', Y) / pi(M, Y) prod_t p_M(Y_t | o_t) / p_M'(Y_t | o_t).
    Why: given Y, an uncertain indicator's flip is nearly deterministic (its labels follow it: on the benchmark
    problem fewer than 4 % of the flip conditionals lie in (0.05, 0.95)), so M and Y only move together.
    Returns (state, accepted)."""
    n, p = problem.X.shape
    n_concepts = state.M.shape[0]
    k_pick, k_order, k_loop, k_acc = jax.random.split(key, 4)
    k, j = _pick_indicator(variant, state, k_pick)
    if variant == "fs":
        M_new = state.M.at[:, j].set(~state.M[0, j])
    else:
        M_new = state.M.at[k, j].set(~state.M[k, j])
    masks_old, masks_new = concept_masks_of(variant, state.M), concept_masks_of(variant, M_new)
    stats = concept_suffstats(problem.X, state.Y, n_concepts)
    flip = (free_log_target(problem, variant, stats, _free_rows(variant, M_new), state.alpha, state.delta,
                            state.Omega).sum()
            - free_log_target(problem, variant, stats, _free_rows(variant, state.M), state.alpha, state.delta,
                              state.Omega).sum())
    if variant == "fs":   # the conditional factors do not depend on the label under one shared mask
        cond_old = cond_new = jnp.zeros((n, n_concepts))
    else:
        cond_old = _conditional_terms(problem.X, masks_old, state.delta, state.Omega)
        cond_new = cond_old.at[:, k].set(_conditional_terms(problem.X, masks_new[k][None], state.delta,
                                                            state.Omega)[:, 0])
    affected = ~_forced_units(problem, n) & (problem.allowed[:, k] | (variant == "fs"))
    order = jnp.argsort(jnp.where(affected, jax.random.uniform(k_order, (n,)), 2.0))
    image = _unit_images(problem, n)
    counts = jnp.zeros((problem.image_slots.shape[0], n_concepts)).at[image].add(
        jax.nn.one_hot(state.Y, n_concepts))
    # entries 0..K: the concepts under M, K+1..2K+1: under M' (kept current by rank-one moves, see collapsed_niw)
    both = lambda a: jnp.concatenate([a, a])
    cache = predictive_cache(problem.concept_prior, *map(both, stats), jnp.concatenate([masks_old, masks_new]))

    def body(t, carry):
        Y, cache, counts, log_rev = carry
        u = order[t]
        x, c_old = problem.X[u], Y[u]
        out = jax.nn.one_hot(c_old, n_concepts)
        cache = cache_move(cache, x, jnp.stack([c_old, c_old + n_concepts]), -1.0)
        others = counts[image[u]] - out
        needed = problem.keyword_mask[image[u]] & (others < 0.5)   # keywords only this unit covers
        allowed_now = jnp.where(needed.any(), needed, problem.allowed[u])
        pred = cache_log_predictive(cache, x)
        # log Pr(Y_u = c | o_t, M) and under M': eq. 6's predictive times the irrelevant features' conditional
        lp_old = jax.nn.log_softmax(jnp.where(allowed_now, pred[:n_concepts] + cond_old[u], -jnp.inf))
        lp_new = jax.nn.log_softmax(jnp.where(allowed_now, pred[n_concepts:] + cond_new[u], -jnp.inf))
        y = jnp.argmax(lp_new + gumbel[t])          # Gumbel-max draw from lp_new (noise drawn outside the loop)
        into = jax.nn.one_hot(y, n_concepts)
        return (Y.at[u].set(y.astype(Y.dtype)), cache_move(cache, x, jnp.stack([y, y + n_concepts]), 1.0),
                counts.at[image[u]].set(others + into), log_rev + lp_old[c_old] - lp_new[c_old])

    gumbel = jax.random.gumbel(k_loop, (n, n_concepts))
    Y_new, _, _, log_rev = jax.lax.fori_loop(0, affected.sum(), body, (state.Y, cache, counts, jnp.asarray(0.0)))
    accept = jnp.log(jax.random.uniform(k_acc)) < flip + log_rev
    warm = (state.iteration < state.num_warmup).astype(jnp.float64)
    state = state._replace(joint_tries=state.joint_tries.at[k, j].add(warm),
                           joint_accepts=state.joint_accepts.at[k, j].add(warm * accept))
    return (state._replace(M=jnp.where(accept, M_new, state.M), Y=jnp.where(accept, Y_new, state.Y)),
            accept.astype(jnp.float64))


def single_flip_step(problem: RegionProblem, variant: str, state: GibbsState, key):
    """One flip of the paper: a uniformly chosen element of each M_k (CVFS, k >= 1) or of the shared M (FS),
    Metropolis-Hastings on the collapsed density. Returns (state, accepted per concept row)."""
    one = problem._replace(flips_per_sweep=jnp.asarray(1), systematic_scan=jnp.asarray(False))
    return feature_flip_step(one, variant, state, key)


def temporary_concept_params(problem, variant, state, key):
    """Eq. 8-9 draws of (mu_k, Sigma_k) for every concept on its mask: mu (K+1, p), Sigma (K+1, p, p)."""
    n_concepts = state.M.shape[0]
    masks = concept_masks_of(variant, state.M)
    count, total, scatter = concept_suffstats(problem.X, state.Y, n_concepts)

    def one(k, c, t, s, m):
        post = niw_posterior(concept_niw_prior(problem.concept_prior, m), c, t, s)
        return sample_niw_masked(k, post, m)

    keys = jax.random.split(key, n_concepts)
    return jax.vmap(one)(keys, count, total, scatter, masks)


def unit_concept_loglik(X, masks, mu, Sigma, delta, Omega):
    """(n, K+1) log p(x_i | Y = k, mu_k, Sigma_k, M_k, delta, Omega): eq. 5 with the temporary parameters."""
    p = X.shape[1]
    base = gaussian_logpdf_masked(X, delta, jnp.linalg.cholesky(Omega), jnp.ones(p, bool))

    def one(m, mu_k, sigma_k):
        rel = gaussian_logpdf_masked(X, mu_k, masked_cholesky(sigma_k, m), m)
        cond = gaussian_logpdf_masked(X, delta, masked_cholesky(Omega, m), m)
        return rel + base - cond

    return jax.vmap(one, out_axes=1)(masks, mu, Sigma)


def sample_labels_constrained(problem, Y, loglik, key):
    """Sequential Gibbs over the segments of each image (images in parallel) from eq. 1 restricted to S_i and to
    the coverage constraint given the image's other labels. Returns (Y, proba (n, K+1))."""
    n, n_concepts = loglik.shape
    n_images, n_slots = problem.image_slots.shape
    slots_valid = problem.image_slots >= 0
    safe = jnp.where(slots_valid, problem.image_slots, 0)
    counts = jnp.einsum("is,isk->ik", slots_valid.astype(jnp.float64), jax.nn.one_hot(Y[safe], n_concepts))

    def body(carry, inputs):
        Y, counts = carry
        units, valid, k = inputs
        u = jnp.where(valid, units, 0)
        current = jax.nn.one_hot(Y[u], n_concepts) * valid[:, None]
        others = counts - current
        needed = problem.keyword_mask & (others < 0.5)       # a keyword only this segment covers
        must = needed.any(-1, keepdims=True)
        allowed_now = jnp.where(must, needed, problem.allowed[u])
        logits = jnp.where(allowed_now, loglik[u], -jnp.inf)
        proba = jax.nn.softmax(logits, axis=-1)
        y_new = jax.random.categorical(k, logits, axis=-1).astype(Y.dtype)
        y_new = jnp.where(valid, y_new, Y[u])
        counts = others + jax.nn.one_hot(y_new, n_concepts) * valid[:, None]
        Y = Y.at[jnp.where(valid, units, n)].set(y_new, mode="drop")
        return (Y, counts), proba

    keys = jax.random.split(key, n_slots)
    (Y, _), proba_slots = jax.lax.scan(body, (Y, counts), (problem.image_slots.T, slots_valid.T, keys))
    proba = jnp.zeros((n, n_concepts)).at[jnp.where(slots_valid.T, problem.image_slots.T, n)].set(
        proba_slots, mode="drop")
    return Y, proba


def label_step(problem: RegionProblem, variant: str, state: GibbsState, key):
    """Step 2: temporary (mu, Sigma) from eq. 8-9, then every Y_ij from eq. 1 under S_i and the coverage constraint."""
    k_par, k_lab = jax.random.split(key)
    mu, Sigma = temporary_concept_params(problem, variant, state, k_par)
    masks = concept_masks_of(variant, state.M)
    loglik = unit_concept_loglik(problem.X, masks, mu, Sigma, state.delta, state.Omega)
    # pointwise log-likelihood for az.loo: the S_i-uniform mixture (lambda uniform, Sec. 3)
    n_allowed = problem.allowed.sum(-1)
    unit_loglik = logsumexp(jnp.where(problem.allowed, loglik, -jnp.inf), axis=-1) - jnp.log(n_allowed)
    Y, proba = sample_labels_constrained(problem, state.Y, loglik, k_lab)
    return state._replace(Y=Y, label_proba=proba, unit_loglik=unit_loglik), None


def alpha_step(problem: RegionProblem, state: GibbsState, key):
    """Step 3 (CVFS): alpha_j | M ~ prior x alpha^s (1 - alpha)^(K+1-s), s = M_.j: a Beta mixture again."""
    n_concepts = state.M.shape[0]
    s = state.M.sum(0).astype(jnp.float64)                          # (p,)
    pr = problem.alpha_prior
    a_post = pr.a[None, :] + s[:, None]                             # (p, C)
    b_post = pr.b[None, :] + (n_concepts - s)[:, None]
    logw = jnp.log(pr.weights)[None, :] + betaln(a_post, b_post) - betaln(pr.a, pr.b)[None, :]
    k_comp, k_beta = jax.random.split(key)
    comp = jax.random.categorical(k_comp, logw, axis=-1)
    take = lambda arr: jnp.take_along_axis(arr, comp[:, None], axis=1)[:, 0]
    alpha = sample_beta(k_beta, take(a_post), take(b_post))
    alpha = jnp.clip(alpha, 1e-12, 1.0 - 1e-12)
    return state._replace(alpha=alpha), None


def _complete(X, Y, masks, z, Omega):
    """Eq. 11: x* = z on M (the augmenting draw), x_{M^c} + Omega_{M^c M} Omega_MM^{-1}(z_M - x_M) off M.
    One inverse per concept (K+1 of them), then a mat-vec per unit."""
    def inverse(m):
        mm = m.astype(Omega.dtype)
        return jnp.linalg.inv(masked_matrix(Omega, m)) * jnp.outer(mm, mm)   # Omega_MM^{-1}, zero off M
    inv = jax.vmap(inverse)(masks)
    unit_masks = masks[Y]
    u = jnp.einsum("nij,nj->ni", inv[Y], (z - X) * unit_masks.astype(X.dtype))
    return jnp.where(unit_masks, z, X + u @ Omega.T)


def delta_omega_step(problem: RegionProblem, state: GibbsState, key):
    """Step 4 (CVFS): data augmentation (eq. 11) + conjugate NIW proposal + MH correction (see module doc)."""
    n, p = problem.X.shape
    k_aug, k_sigma, k_mu, k_acc = jax.random.split(key, 4)
    z = state.delta + jax.random.normal(k_aug, (n, p)) @ jnp.linalg.cholesky(state.Omega).T
    prior = problem.delta_omega_prior
    full = jnp.ones(p, bool)
    stats_old = suffstats(_complete(problem.X, state.Y, state.M, z, state.Omega))
    post = niw_posterior(prior, *stats_old)
    omega_new = _sample_iw_full(k_sigma, post)
    delta_new = post.mean + jnp.linalg.cholesky(omega_new) @ jax.random.normal(k_mu, (p,)) / jnp.sqrt(post.rho)
    stats_new = suffstats(_complete(problem.X, state.Y, state.M, z, omega_new))
    # log r = sum log phi(x*(Omega'); theta') + sum log phi(x*(Omega'); theta) + log m(x*(Omega))
    #       - sum log phi(x*(Omega); theta) - sum log phi(x*(Omega); theta') - log m(x*(Omega')), m = NIW marginal
    stack = lambda *xs: jnp.stack(xs)
    st = tuple(stack(a, a, b, b) for a, b in zip(stats_new, stats_old))
    ll = jax.vmap(gaussian_loglik_suffstats, in_axes=(0, 0, 0, 0, 0, None))(
        *st, stack(delta_new, state.delta, state.delta, delta_new), stack(omega_new, state.Omega, state.Omega,
                                                                          omega_new), full)
    marg = jax.vmap(niw_log_marginal, in_axes=(None, 0, 0, 0, None))(
        prior, *(stack(a, b) for a, b in zip(stats_old, stats_new)), full)
    log_ratio = ll[0] + ll[1] - ll[2] - ll[3] + marg[0] - marg[1]
    accept = (jnp.log(jax.random.uniform(k_acc)) < log_ratio) | ~jnp.asarray(problem.exact_delta_omega)
    delta = jnp.where(accept, delta_new, state.delta)
    Omega = jnp.where(accept, omega_new, state.Omega)
    return state._replace(delta=delta, Omega=Omega), accept.astype(jnp.float64)


def _sample_iw_full(key, post):
    return sample_masked_inverse_wishart(key, post.nu, post.S, jnp.ones(post.S.shape[-1], bool))


def gibbs_sweep(problem: RegionProblem, variant: str, state: GibbsState) -> GibbsState:
    """One full sweep (steps 1-4); accumulates the Rao-Blackwell label probabilities after warm-up."""
    key, k_m, k_y, k_a, k_d, k_o, k_j = jax.random.split(state.rng_key, 7)
    if variant == "cvfs":
        state, accept_m = delta_collapsed_flip_step(problem, state, k_m)
    else:
        state, accept_m = feature_flip_step(problem, variant, state, k_m)
    accept_j = jnp.asarray(1.0)
    if variant != "full":
        def joint(t, carry):
            s, acc = carry
            s, a = joint_flip_relabel_step(problem, variant, s, jax.random.fold_in(k_j, t))
            return s, acc + a
        n_joint = jnp.asarray(problem.joint_moves)
        state, accept_j = jax.lax.fori_loop(0, n_joint, joint, (state, jnp.asarray(0.0)))
        accept_j = accept_j / jnp.maximum(n_joint, 1)
    state, _ = label_step(problem, variant, state, k_y)
    accept_do = accept_o = jnp.asarray(1.0)
    if variant == "cvfs":
        state, _ = alpha_step(problem, state, k_a)
        state, accept_o = omega_step(problem, state, k_o)
        state, accept_do = delta_omega_step(problem, state, k_d)
    keep = state.iteration >= state.num_warmup
    proba_sum = state.proba_sum + jnp.where(keep, state.label_proba, 0.0)
    state = state._replace(proba_sum=proba_sum, n_kept=state.n_kept + keep, iteration=state.iteration + 1,
                           rng_key=key)
    return state._replace(z=_collected(state, variant, SweepInfo(accept_m, accept_do, accept_o, accept_j)))


def _collected(state: GibbsState, variant: str, info: SweepInfo | None) -> dict:
    masks = concept_masks_of(variant, state.M)
    out = {"Y": state.Y, "M": state.M, "n_relevant": masks[1:].sum(-1), "label_proba": state.label_proba,
           "unit_loglik": state.unit_loglik}
    if variant == "cvfs":
        out.update(alpha=state.alpha, delta=state.delta, Omega=state.Omega)
    n_concepts = state.M.shape[0]
    out["accept_M"] = info.accept_M if info is not None else jnp.zeros(n_concepts)
    out["accept_delta_Omega"] = info.accept_delta_Omega if info is not None else jnp.asarray(1.0)
    out["accept_Omega"] = jnp.asarray(info.accept_Omega if info is not None else 1.0, jnp.float64)
    out["accept_joint"] = jnp.asarray(info.accept_joint if info is not None else 1.0, jnp.float64)
    return out


def initial_labels(problem: RegionProblem, key):
    """Labels satisfying the coverage constraint: each keyword on a distinct random segment, the rest uniform on S_i."""
    n, n_concepts = problem.allowed.shape
    n_images, n_slots = problem.image_slots.shape
    valid = problem.image_slots >= 0
    k_perm, k_rest = jax.random.split(key)
    scores = jnp.where(valid, jax.random.uniform(k_perm, (n_images, n_slots)), jnp.inf)
    rank = jnp.argsort(jnp.argsort(scores, axis=1), axis=1)           # random order of the valid slots
    kw = problem.keyword_mask
    kw_sorted = jnp.argsort(~kw, axis=1, stable=True)                 # keyword ids first
    n_kw = kw.sum(1)
    rest = jax.random.categorical(k_rest, jnp.where(problem.allowed, 0.0, -jnp.inf))  # (n,)
    safe = jnp.where(valid, problem.image_slots, 0)
    forced = jnp.take_along_axis(kw_sorted, jnp.minimum(rank, n_concepts - 1), axis=1)
    y_slot = jnp.where(rank < n_kw[:, None], forced, rest[safe])
    return jnp.zeros(n, int).at[jnp.where(valid, problem.image_slots, n)].set(y_slot.astype(int), mode="drop")


def init_state(problem: RegionProblem, variant: str, key, num_warmup=0) -> GibbsState:
    """Coverage-respecting labels, M at random (CVFS rows 1..K, FS shared; FULL all ones), alpha = prior mean."""
    n, n_concepts = problem.allowed.shape
    p = problem.X.shape[1]
    k_y, k_m, key = jax.random.split(key, 3)
    Y = initial_labels(problem, k_y)
    if variant == "full":
        M = jnp.ones((n_concepts, p), bool)
    elif variant == "fs":
        M = jnp.broadcast_to(jax.random.bernoulli(k_m, 0.5, (p,)), (n_concepts, p))
    else:
        M = jax.random.bernoulli(k_m, 0.5, (n_concepts, p)).at[0].set(False)
    pr = problem.alpha_prior
    alpha = jnp.full(p, jnp.sum(pr.weights * pr.a / (pr.a + pr.b)))
    zeros = jnp.zeros((n, n_concepts))
    state = GibbsState(Y=Y, M=M, alpha=alpha, delta=problem.delta0, Omega=problem.Omega0, label_proba=zeros,
                       unit_loglik=jnp.zeros(n), proba_sum=zeros, n_kept=jnp.asarray(0), iteration=jnp.asarray(0),
                       num_warmup=jnp.asarray(num_warmup), rng_key=key, z={},
                       joint_tries=jnp.zeros((n_concepts, p)), joint_accepts=jnp.zeros((n_concepts, p)))
    return state._replace(z=_collected(state, variant, None))


class LabelFeatureGibbs(MCMCKernel):
    """numpyro MCMCKernel running ``gibbs_sweep`` on a fixed ``RegionProblem``; ``variant`` in full/fs/cvfs.

    >>> mcmc = numpyro.infer.MCMC(LabelFeatureGibbs(problem, "cvfs"), num_warmup=200, num_samples=1000,
    ...                           num_chains=2, chain_method="vectorized")
    >>> mcmc.run(jax.random.PRNGKey(0)); mcmc.get_samples(group_by_chain=True)["M"]
    """

    sample_field = "z"

    def __init__(self, problem: RegionProblem, variant: str):
        if variant not in ("full", "fs", "cvfs"):
            raise ValueError(f"variant: {variant!r} is not one of 'full', 'fs', 'cvfs'")
        self.problem = problem
        self.variant = variant

    def init(self, rng_key, num_warmup, init_params, model_args, model_kwargs):
        init = partial(init_state, self.problem, self.variant, num_warmup=num_warmup)
        # chain_method="vectorized" hands one key per chain: the kernel vectorizes init and sample itself
        return jax.vmap(init)(rng_key) if jnp.ndim(rng_key) > 1 else init(rng_key)

    def sample(self, state, model_args, model_kwargs):
        sweep = partial(gibbs_sweep, self.problem, self.variant)
        return jax.vmap(sweep)(state) if jnp.ndim(state.rng_key) > 1 else sweep(state)

    def postprocess_fn(self, model_args, model_kwargs):
        return lambda z: z


# FAST_COMPILE_OPTIONS (zoo._config) roughly halves the sweep's compile time (CVFS, two chains: about 14 s -> 7 s
# on one CPU) and makes each sweep 1.5-4x slower: worth it only for short runs, where compilation is most of the
# wall time. ``run_gibbs`` picks it below FAST_COMPILE_WORK chain-sweeps x units unless told.
FAST_COMPILE_WORK = 250_000


def _init_chains_fn(problem, keys, num_warmup, *, variant):
    return jax.vmap(lambda k: init_state(problem, variant, k, num_warmup=num_warmup))(keys)


def _run_chunk_fn(problem, state, n_active, *, variant, chunk, names):
    """``chunk`` sweeps of every chain (the first ``n_active`` applied), collecting ``names`` of ``z``; the problem
    is an argument, so data of the same shapes reuse one compilation."""
    def one_chain(st):
        def body(s, i):
            s = jax.lax.cond(i < n_active, lambda t: gibbs_sweep(problem, variant, t), lambda t: t, s)
            return s, {k: s.z[k] for k in names}
        return jax.lax.scan(body, st, jnp.arange(chunk))
    return jax.vmap(one_chain)(state)


_init_chains = jax.jit(_init_chains_fn, static_argnames=("variant",), compiler_options=FAST_COMPILE_OPTIONS)
_run_chunk = jax.jit(_run_chunk_fn, static_argnames=("variant", "chunk", "names"))
_run_chunk_fast_compile = jax.jit(_run_chunk_fn, static_argnames=("variant", "chunk", "names"),
                                  compiler_options=FAST_COMPILE_OPTIONS)


def run_gibbs(problem: RegionProblem, variant: str, key, *, num_chains: int = 2, num_warmup: int = 200,
              num_samples: int = 1000, thinning: int = 1, collect=None, progress_bar: bool = True,
              chunk: int = 50, fast_compile: bool | None = None):
    """Run ``num_chains`` chains (vectorized) of ``gibbs_sweep``: one compiled chunk of ``chunk`` sweeps reused for
    warm-up and sampling (the same chain as ``numpyro.infer.MCMC`` with ``LabelFeatureGibbs``, compiled once).
    ``fast_compile``: compile without XLA's backend optimization (half the compile time, slower sweeps); None =
    when num_chains x (num_warmup + num_samples) x units <= FAST_COMPILE_WORK. Timings (benchmarks) pass False.

    Returns (draws: dict name -> (chain, draw, ...) numpy arrays, keeping every ``thinning``-th sweep after
    warm-up; ``collect`` names the entries of ``GibbsState.z`` to keep (default all), last_state (chain-batched)).
    """
    keys = jax.random.split(key, num_chains)
    state = _init_chains(problem, keys, jnp.asarray(num_warmup), variant=variant)
    names = tuple(state.z) if collect is None else tuple(collect)
    total = num_warmup + num_samples
    if fast_compile is None:
        fast_compile = num_chains * total * problem.X.shape[0] <= FAST_COMPILE_WORK
    run_chunk = _run_chunk_fast_compile if fast_compile else _run_chunk
    kept = {k: [] for k in names}
    done = 0
    bar = tqdm(total=total, desc=f"{variant} collapsed Gibbs", disable=not progress_bar, leave=False)
    while done < total:
        n_active = min(chunk, total - done)
        state, out = run_chunk(problem, state, jnp.asarray(n_active), variant=variant, chunk=chunk, names=names)
        index = np.arange(done, done + n_active)
        sel = np.nonzero((index >= num_warmup) & ((index - num_warmup) % thinning == 0))[0]
        if sel.size:
            for k in names:
                kept[k].append(np.asarray(out[k])[:, sel])
        done += n_active
        bar.update(n_active)
    bar.close()
    draws = {k: np.concatenate(v, axis=1) for k, v in kept.items() if v}
    return draws, state


def predictive_log_lik(problem: RegionProblem, variant: str, Y, M, delta, Omega, X_new):
    """(m, K+1) log p(x_new | Y=k, training units, M, delta, Omega) with (mu_k, Sigma_k) integrated out: the eq. 6
    ratio with and without the new unit (``niw_log_predictive``, a multivariate t on x_M), times the N(delta, Omega)
    conditional of x_{M^c} given x_M."""
    n_concepts = M.shape[0]
    masks = concept_masks_of(variant, M)
    count, total, scatter = concept_suffstats(problem.X, Y, n_concepts)
    p = problem.X.shape[1]
    base = gaussian_logpdf_masked(X_new, delta, jnp.linalg.cholesky(Omega), jnp.ones(p, bool))

    def concept(c, t, s, m):
        log_t = niw_log_predictive(concept_niw_prior(problem.concept_prior, m), c, t, s, m, X_new)
        return log_t + base - gaussian_logpdf_masked(X_new, delta, masked_cholesky(Omega, m), m)

    return jax.vmap(concept, out_axes=1)(count, total, scatter, masks)
