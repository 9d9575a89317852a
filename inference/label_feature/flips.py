"""Step 1 of the collapsed sweep (Gustafson et al. 2007, Appendix): Metropolis-Hastings flips of the inclusion
indicators M given the labels, on eq. 10 with (mu_k, Sigma_k) integrated out; CVFS with delta integrated out too
(``delta_collapsed_flip_step``). See ``zoo.inference.label_feature.gibbs`` for the sweep and why the systematic scan.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from zoo.inference.label_feature.collapsed_niw import (DeltaCollapsedTerms, collapsed_concept_log_density,
                                                       concept_delta_terms, delta_collapsed_log_density,
                                                       delta_conditional, shared_mask_log_density)
from zoo.inference.label_feature.state import (GibbsState, RegionProblem, concept_masks_of, concept_suffstats,
                                               free_rows, rows_to_M)
from zoo.inference.linalg import cho_solve, cholesky, solve_lower_transpose

__all__ = ["free_log_target", "metropolis_flip", "feature_flip_step", "delta_collapsed_flip_step",
           "single_flip_step", "move_probability", "FLIP_SCANS"]


def _concept_terms(problem, stats, masks, delta, Omega):
    """(K+1,) collapsed log density of each concept's units (Appendix eq. 10)."""
    fn = jax.vmap(collapsed_concept_log_density, in_axes=(None, 0, 0, 0, 0, None, None))
    return fn(problem.concept_prior, *stats, masks, delta, Omega)


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
    terms = _concept_terms(problem, stats, concept_masks_of(variant, rows_to_M(variant, F, n_concepts)), delta,
                           Omega)
    return terms + F.astype(terms.dtype) @ (jnp.log(alpha) - jnp.log1p(-alpha))


def _movable(variant: str, n_rows: int) -> jnp.ndarray:
    """Rows a flip may change: FS its one row; CVFS rows 1..K (the garbage row M_0 = 0 is fixed)."""
    return jnp.ones(n_rows, bool) if variant == "fs" else jnp.arange(n_rows) > 0


def _flip_columns(F, cols):
    rows = jnp.arange(F.shape[0])
    return F.at[rows, cols].set(~F[rows, cols])


def metropolis_flip(problem, variant, stats, F, current, cols, key, alpha, delta, Omega, flip=True, known=None):
    """Flip element ``cols[r]`` of every free row r, accept each row with min(1, pi(F') / pi(F)) (the proposal is
    symmetric). With a deterministic column this is the Metropolized Gibbs update of a binary variable (Liu 1996):
    the flip is always proposed, which beats the heat-bath draw from the full conditional (Peskun).
    ``current`` = free_log_target at F (carried, so one evaluation per flip). ``flip`` False: no flip, return F
    with its log target (used to start the carry). ``known`` = (use, value): where ``use``, ``value`` is
    free_log_target at the proposed F, evaluated in advance (``feature_flip_step``), and is taken instead of a fresh
    evaluation (a real branch where the chain is not vmapped). Returns (F, current, accepted, move probability):
    the last (per row) min(1, pi(F') / pi(F)), the probability that this flip leaves the row's value (0 for rows
    that cannot move and without a flip), the evidence ``zoo.core.convergence`` reads for indicators that never
    moved."""
    F_new = jnp.where(flip, _flip_columns(F, cols), F)
    evaluate = lambda: free_log_target(problem, variant, stats, F_new, alpha, delta, Omega)
    proposed = evaluate() if known is None else jax.lax.cond(known[0], lambda: known[1], evaluate)
    movable = _movable(variant, F.shape[0])
    accept = (jnp.log(jax.random.uniform(key, proposed.shape)) < proposed - current) & movable
    accept = accept | ~jnp.asarray(flip)
    leave = jnp.where(movable & jnp.asarray(flip), move_probability(proposed - current), 0.0)
    return (jnp.where(accept[:, None], F_new, F), jnp.where(accept, proposed, current),
            accept.astype(proposed.dtype), leave)


def move_probability(log_ratio) -> jnp.ndarray:
    """min(1, exp(log_ratio)): a Metropolis-Hastings step's probability of moving (0 for a NaN ratio). The one
    helper of every M move (flips, joint moves, column moves) for the ``M_move_probability`` sample stat."""
    return jnp.where(jnp.isnan(log_ratio), 0.0, jnp.exp(jnp.minimum(log_ratio, 0.0)))


FLIP_SCANS = ("random", "systematic")


def feature_flip_step(problem: RegionProblem, variant: str, state: GibbsState, key, with_move_probability=False):
    """Step 1: ``problem.flips_per_sweep`` Metropolis-Hastings flips of each M_k (CVFS, k >= 1) or of the shared M
    (FS) on the collapsed density, Y fixed. The element of each flip: ``problem.systematic_scan`` False = uniform
    at random (the paper); True = the p columns in a fresh random order each sweep, cycled (flip i takes column
    order[i mod p]). Each flip leaves eq. 10 given Y invariant, so their composition does. The current log target
    is carried, so a flip costs one evaluation of the K+1 collapsed concept terms. info = acceptance rate per
    concept row (FS: row 0); ``with_move_probability``: also the sum over the sweep's flips of each one's
    probability of moving M (``metropolis_flip``), the expected number of M's moves in the step."""
    n_concepts, p = state.M.shape
    if variant == "full":
        return (state, jnp.zeros(n_concepts)) + ((jnp.zeros(()),) if with_move_probability else ())
    n_flips = jnp.maximum(jnp.asarray(problem.flips_per_sweep), 1)
    systematic = jnp.asarray(problem.systematic_scan)
    stats = concept_suffstats(problem.X, state.Y, n_concepts)          # Y does not change during the flips
    args = (state.alpha, state.delta, state.Omega)
    F = free_rows(variant, state.M)
    k_perm, k_loop = jax.random.split(key)
    order = jax.random.permutation(k_perm, p)
    # FS, systematic scan: the log targets of the current M and of its p one-element flips, evaluated in advance in
    # one batch; each flip takes its value from there until a flip is accepted (rare given Y: the labels follow
    # the indicators, see the joint move), after which it evaluates afresh. Same values, same chain; why: on the
    # benchmark problem the batch took 110 us against 143 us for the 16 evaluations one by one (sweep 0.87 ->
    # 0.83 ms). Under vmap the branch becomes a select and both sides run (chain_method="vectorized" only)
    ahead = None
    if variant == "fs":
        rows = jnp.concatenate([F, F ^ jnp.eye(p, dtype=bool)])             # (1 + p, p): M, then M with j flipped
        batch = lambda: jax.vmap(lambda r: free_log_target(problem, variant, stats, r[None], *args)[0])(rows)
        ahead = jax.lax.cond(systematic, batch, lambda: jnp.zeros(p + 1))

    def body(i, carry):
        # i = -1 evaluates the current state (no flip, "accepted" unconditionally): the log target is then
        # carried; ``clean``: no flip accepted yet, so the values evaluated in advance still hold
        F, current, accepted, clean, leave = carry
        k_col, k_acc = jax.random.split(jax.random.fold_in(k_loop, i + 1))     # i + 1 >= 0: eager-safe
        cols = jnp.where(systematic, order[jnp.maximum(i, 0) % p], jax.random.randint(k_col, (F.shape[0],), 0, p))
        known = None if ahead is None else (systematic & clean, ahead[jnp.where(i >= 0, cols[0] + 1, 0)][None])
        F_new, current_new, acc, leave_i = metropolis_flip(problem, variant, stats, F, current, cols, k_acc, *args,
                                                           flip=i >= 0, known=known)
        return (F_new, current_new, accepted + acc * (i >= 0), clean & ~((acc > 0) & (i >= 0)).any(),
                leave + jnp.sum(leave_i))

    F, _, accepted, _, leave = jax.lax.fori_loop(-1, n_flips, body, (F, jnp.zeros(F.shape[0]), jnp.zeros(F.shape[0]),
                                                                     jnp.asarray(True), jnp.zeros(())))
    accepted = accepted / n_flips
    if variant == "fs":
        accepted = jnp.zeros(n_concepts).at[0].set(accepted[0])
    out = (state._replace(M=rows_to_M(variant, F, n_concepts)), accepted)
    return out + ((leave,) if with_move_probability else ())


def delta_collapsed_flip_step(problem: RegionProblem, state: GibbsState, key, with_move_probability=False):
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
    uniform column (random). Returns (state, acceptance per row[, with ``with_move_probability`` the sum of the
    flips' probabilities of moving M: the expected number of M's moves in the step])."""
    n_concepts, p = state.M.shape
    n_flips = jnp.maximum(jnp.asarray(problem.flips_per_sweep), 1)
    n_rows = n_concepts - 1
    systematic = jnp.asarray(problem.systematic_scan)
    count, total, scatter = concept_suffstats(problem.X, state.Y, n_concepts)
    L_omega = cholesky(state.Omega)
    Omega_inv = cho_solve(L_omega, jnp.eye(p))
    logdet = 2.0 * jnp.sum(jnp.log(jnp.diagonal(L_omega)))
    logit = jnp.log(state.alpha) - jnp.log1p(-state.alpha)
    prior = problem.delta_omega_prior
    k_perm, k_loop, k_delta = jax.random.split(key, 3)
    order = jax.random.permutation(k_perm, p)

    def log_target(M, terms):
        return delta_collapsed_log_density(terms, prior, Omega_inv, logdet) + jnp.sum(jnp.where(M, logit, 0.0))

    def body(t, carry):
        # t < 0: fill concept t + K + 1's terms without a flip (one traced copy of the collapsed terms: compile time)
        M, terms, current, accepted, leave = carry
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
                accepted.at[k].add(jnp.where(init, 0.0, accept.astype(jnp.float64))),
                leave + jnp.where(init, 0.0, move_probability(proposed - current)))

    zero_terms = DeltaCollapsedTerms(jnp.zeros(n_concepts), jnp.zeros((n_concepts, p, p)), jnp.zeros((n_concepts, p)))
    M, terms, _, accepted, leave = jax.lax.fori_loop(-n_concepts, n_flips * n_rows, body,
                                                     (state.M, zero_terms, jnp.asarray(0.0), jnp.zeros(n_concepts),
                                                      jnp.zeros(())))
    mean, L = delta_conditional(terms, prior, Omega_inv)
    delta = mean + solve_lower_transpose(L, jax.random.normal(k_delta, (p,)))
    out = (state._replace(M=M, delta=delta), accepted / n_flips)
    return out + ((leave,) if with_move_probability else ())


def single_flip_step(problem: RegionProblem, variant: str, state: GibbsState, key):
    """One flip of the paper: a uniformly chosen element of each M_k (CVFS, k >= 1) or of the shared M (FS),
    Metropolis-Hastings on the collapsed density. Returns (state, accepted per concept row)."""
    one = problem._replace(flips_per_sweep=jnp.asarray(1), systematic_scan=jnp.asarray(False))
    return feature_flip_step(one, variant, state, key)
