"""The joint Metropolis-Hastings move of one inclusion indicator and the labels it affects (not in Gustafson et
al. 2007; exact for eq. 10 with (mu_k, Sigma_k) integrated out): ``joint_flip_relabel_step``.
"""
from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from zoo.inference.label_feature.collapsed_niw import gaussian_logpdf_masked, masked_cholesky
from zoo.inference.label_feature.flips import free_log_target, move_probability
from zoo.inference.label_feature.state import (GibbsState, RegionProblem, concept_masks_of, concept_suffstats,
                                               forced_units, free_rows, label_log_prior, unit_images)
from zoo.inference.linalg import cholesky
from zoo.inference.label_feature.niw_predictive import (cache_log_predictive_loo, cache_shift_entries,
                                                        concept_normalizer_table, predictive_cache)

__all__ = ["joint_flip_relabel_step"]


def _conditional_terms(X, masks, delta, Omega):
    """(n, K+1) log phi(x_{M_k^c} | x_{M_k}; delta, Omega) of every unit under every concept's mask (eq. 5)."""
    p = X.shape[1]
    base = gaussian_logpdf_masked(X, delta, cholesky(Omega), jnp.ones(p, bool))
    return jax.vmap(lambda m: base - gaussian_logpdf_masked(X, delta, masked_cholesky(Omega, m), m), out_axes=1)(masks)


def _pick_indicator(variant: str, state: GibbsState, key, pseudo):
    """The indicator (row k, column j) of a joint move: drawn with weight (accepted + pseudo) / (tried + 1), the joint
    moves' smoothed acceptance rate during warm-up (frozen afterwards, so the kernel is fixed and the choice does not
    depend on the state: a symmetric proposal). FS: row 0 (the shared M); CVFS: rows 1..K.
    ``pseudo`` (RegionProblem.joint_pick_prior, default 0.1): with 1/2 an indicator never accepted in its ~30
    warm-up tries kept weight 1/62, and on the benchmark problem the 12 settled indicators still drew about a quarter
    of the moves after warm-up. Chosen on bench_data seeds 3, 4, 9 (not the benchmark's seed 0), 4 chains x 3000
    draws: ESS per draw of the uncertain indicator 0.538 / 0.565 / 0.561 (seed 3), 0.175 / 0.246 / 0.254 (seed 4),
    0.316 / 0.531 / 0.586 (seed 9) for pseudo 1/2, 0.1, 0.02; 0.1 rather than 0.02 so that an indicator with a few
    unlucky early rejections is not starved."""
    n_concepts, p = state.M.shape
    rows = jnp.arange(n_concepts)[:, None]
    movable = (rows == 0) if variant == "fs" else (rows > 0)
    logw = jnp.where(movable, jnp.log(state.joint_accepts + pseudo) - jnp.log(state.joint_tries + 1.0), -jnp.inf)
    flat = jax.random.categorical(key, logw.reshape(-1))
    return flat // p, flat % p


def joint_flip_relabel_step(problem: RegionProblem, variant: str, state: GibbsState, key,
                            with_move_probability=False):
    """Joint Metropolis-Hastings move of one indicator and the labels it affects (FS: M_j shared by all concepts,
    every unit with a choice; CVFS: M_kj, the units whose S_i holds k), (mu, Sigma) integrated out, (alpha, delta,
    Omega) fixed. Proposal: flip the indicator ``_pick_indicator`` draws (M -> M'), then visit the affected units u_1..u_m
    in a random order and draw Y'_t from its collapsed full conditional under M' given o_t = (Y'_<t, Y_>t) (S_i and
    the coverage constraint respected). The reverse move visits them in the reverse order under M, meeting the
    same o_t, so with pi = eq. 10 the Hastings ratio telescopes:
        pi(M', Y') q(Y | M, Y') / (pi(M, Y) q(Y' | M', Y)) = pi(M', Y) / pi(M, Y) prod_t p_M(Y_t | o_t) / p_M'(Y_t | o_t).
    Why: given Y, an uncertain indicator's flip is nearly deterministic (its labels follow it: on the benchmark
    problem fewer than 4 % of the flip conditionals lie in (0.05, 0.95)), so M and Y only move together.
    Cost: the units are visited one by one (their conditionals depend on the labels drawn before), so the loop body
    is kept small: each concept's eq. 8-9 posterior is cached (S_MM^{-1}, log|S_MM|) under M and, for the concepts
    whose mask changes (FS all, CVFS only k), under M'; the unit's own concept is evaluated with the unit left out in
    closed form (``cache_log_predictive_loo``), the t constants come from a table (``concept_normalizer_table``),
    and only a changed label moves the cache (a real branch where the chain is not vmapped): rank-one, on the
    entries of the two concepts involved alone (``cache_shift_entries``: 4 of FS's 2K+2 entries, 2-3 of CVFS's K+2).
    On the benchmark problem (100 units per move) this took the move from about 1.0 to 0.5 ms; updating only the
    changed entries then 0.35-0.38 to 0.24-0.26 ms (about 43 of the 100 labels change in a move's proposal).
    Returns (state, accepted[, with ``with_move_probability`` min(1, the Hastings ratio): the probability that the
    proposed move changed M])."""
    n, p = problem.X.shape
    n_concepts = state.M.shape[0]
    k_pick, k_order, k_loop, k_acc = jax.random.split(key, 4)
    k, j = _pick_indicator(variant, state, k_pick, problem.joint_pick_prior)
    if variant == "fs":
        M_new = state.M.at[:, j].set(~state.M[0, j])
    else:
        M_new = state.M.at[k, j].set(~state.M[k, j])
    masks_old, masks_new = concept_masks_of(variant, state.M), concept_masks_of(variant, M_new)
    stats = concept_suffstats(problem.X, state.Y, n_concepts)
    flip = (free_log_target(problem, variant, stats, free_rows(variant, M_new), state.alpha, state.delta,
                            state.Omega).sum()
            - free_log_target(problem, variant, stats, free_rows(variant, state.M), state.alpha, state.delta,
                              state.Omega).sum())
    concepts = jnp.arange(n_concepts)
    # predictive cache entries (kept current by rank-one moves, see collapsed_niw): 0..K the concepts under M, then
    # the concepts whose mask M' changes: FS all of them (K+1..2K+1), CVFS concept k only (entry K+1)
    if variant == "fs":   # the conditional factors do not depend on the label under one shared mask
        cond_old = cond_new = jnp.zeros((n, n_concepts))
        concept_of = jnp.concatenate([concepts, concepts])
        entry_masks = jnp.concatenate([masks_old, masks_new])
        new_entry = concepts + n_concepts
    else:
        cond_old = _conditional_terms(problem.X, masks_old, state.delta, state.Omega)
        cond_new = cond_old.at[:, k].set(_conditional_terms(problem.X, masks_new[k][None], state.delta,
                                                            state.Omega)[:, 0])
        concept_of = jnp.concatenate([concepts, k[None]])
        entry_masks = jnp.concatenate([masks_old, masks_new[k][None]])
        new_entry = concepts.at[k].set(n_concepts)
    affected = ~forced_units(problem, n) & (problem.allowed[:, k] | (variant == "fs"))
    order = jnp.argsort(jnp.where(affected, jax.random.uniform(k_order, (n,)), 2.0))
    image = unit_images(problem, n)
    counts = jnp.zeros((problem.image_slots.shape[0], n_concepts)).at[image].add(
        jax.nn.one_hot(state.Y, n_concepts))
    cache = predictive_cache(problem.concept_prior, *(a[concept_of] for a in stats), entry_masks)
    normalizer = concept_normalizer_table(problem.concept_prior, entry_masks, n + 2)
    # the loop's per-unit inputs in visiting order (one slice per step); the Gumbel noise of the label draws
    X_t, image_t, allowed_t = problem.X[order], image[order], problem.allowed[order]
    cond_t = jnp.stack([cond_old[order], cond_new[order]], axis=1)                     # (n, 2, K+1)
    gumbel = jax.random.gumbel(k_loop, (n, n_concepts))
    log_prior = label_log_prior(problem, n_concepts)     # garbage weight w; it does not cancel in the ratio

    def relabel(t, c_old, y, carry):
        # unit order[t] leaves concept c_old for y: rank-one moves of the entries of both concepts under M, and
        # under M' where their masks change (else new_entry is the same entry, and its second move gets sign 0)
        Y, cache, counts = carry
        entries = jnp.stack([c_old, y, new_entry[c_old], new_entry[y]])
        sign = jnp.array([-1.0, 1.0, -1.0, 1.0], X_t.dtype) * jnp.concatenate(
            [jnp.ones(2, bool), entries[2:] != entries[:2]])
        return (Y.at[order[t]].set(y), cache_shift_entries(cache, X_t[t], entries, sign),
                counts.at[image_t[t]].add(jax.nn.one_hot(y, n_concepts) - jax.nn.one_hot(c_old, n_concepts)))

    def body(t, carry):
        Y, cache, counts, log_rev = carry
        c_old = Y[order[t]]
        others = counts[image_t[t]] - jax.nn.one_hot(c_old, n_concepts)
        needed = problem.keyword_mask[image_t[t]] & (others < 0.5)   # keywords only this unit covers
        allowed_now = jnp.where(needed.any(), needed, allowed_t[t])
        # eq. 6's predictive given the other units (o_t): the cache holds the unit in c_old, left out in closed form
        pred = cache_log_predictive_loo(cache, X_t[t], concept_of == c_old, normalizer)
        # log Pr(Y_u = c | o_t, M) (row 0) and under M' (row 1): the predictive times the irrelevant features'
        # conditional, both normalized in one pass
        logits = jnp.stack([pred[:n_concepts], pred[new_entry]]) + cond_t[t] + log_prior
        lp = jax.nn.log_softmax(jnp.where(allowed_now, logits, -jnp.inf), axis=-1)
        y = jnp.argmax(lp[1] + gumbel[t]).astype(Y.dtype)   # Gumbel-max draw from the M' conditional
        # most draws keep the label: then nothing changes (a real branch where the chain is not vmapped)
        Y, cache, counts = jax.lax.cond(y != c_old, partial(relabel, t, c_old, y), lambda c: c, (Y, cache, counts))
        return Y, cache, counts, log_rev + lp[0, c_old] - lp[1, c_old]

    Y_new, _, _, log_rev = jax.lax.fori_loop(0, affected.sum(), body, (state.Y, cache, counts, jnp.asarray(0.0)))
    accept = jnp.log(jax.random.uniform(k_acc)) < flip + log_rev
    warm = (state.warmup_left > 0).astype(jnp.float64)
    state = state._replace(joint_tries=state.joint_tries.at[k, j].add(warm),
                           joint_accepts=state.joint_accepts.at[k, j].add(warm * accept))
    out = (state._replace(M=jnp.where(accept, M_new, state.M), Y=jnp.where(accept, Y_new, state.Y)),
           accept.astype(jnp.float64))
    if with_move_probability:
        out += (move_probability(flip + log_rev),)
    return out
