"""The CVFS column move (not in Gustafson et al. 2007; exact for eq. 10): flip a random set of one feature's keyword
indicators M_kj at once, with delta and alpha integrated out (``column_flip_step``).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.scipy.special import betaln, logsumexp

from zoo.inference.label_feature.collapsed_niw import (DeltaCollapsedTerms, concept_delta_terms,
                                                       delta_collapsed_log_density, delta_conditional)
from zoo.inference.label_feature.flips import move_probability
from zoo.inference.label_feature.moves import alpha_step
from zoo.inference.label_feature.state import BetaMixture, GibbsState, RegionProblem, concept_suffstats
from zoo.inference.linalg import cho_solve, cholesky, solve_lower_transpose

__all__ = ["alpha_marginal_log_prior", "column_flip_step"]


def alpha_marginal_log_prior(prior: BetaMixture, s: jnp.ndarray, n_concepts: int) -> jnp.ndarray:
    """log of pi(M_.j) = integral of alpha^s (1 - alpha)^(K+1-s) pi(alpha) d alpha for column sums s (any shape):
    sum_c w_c B(a_c + s, b_c + K+1 - s) / B(a_c, b_c) (the paper's pi(M | alpha) with each alpha_j integrated out;
    n_concepts = K+1, the garbage row counted as a 0 as in pi(M | alpha))."""
    s = jnp.asarray(s, jnp.float64)[..., None]
    terms = (jnp.log(prior.weights) + betaln(prior.a + s, prior.b + n_concepts - s) - betaln(prior.a, prior.b))
    return logsumexp(terms, axis=-1)


def column_flip_step(problem: RegionProblem, state: GibbsState, key, with_move_probability=False):
    """CVFS: for each feature j in a fresh random order, draw a number m uniformly in 1..K and m keyword concepts
    uniformly, propose M'_kj = 1 - M_kj for those concepts (the garbage row stays 0), and accept with
    min(1, pi(M') / pi(M)), where pi(M) = pi(M | Y, Omega, X) has delta (``delta_collapsed_log_density``) and every
    alpha_j (``alpha_marginal_log_prior``) integrated out; then delta and alpha are drawn from their conditionals
    given the new M. The rows are drawn without looking at M and flipping them again undoes the move, so the
    proposal is symmetric; each test is a Metropolis-Hastings step on the (delta, alpha)-marginal of M, and the final
    draws are exact Gibbs draws from pi(delta | M, Y, Omega, X) and pi(alpha | M), so the composition leaves
    pi(M, delta, alpha | Y, Omega, X) invariant (a partially collapsed move, as ``delta_collapsed_flip_step``).

    Why (issue 29): on the Sec. 6 data the column of feature 3 sits mostly at (0, 0, 1) (only concept 3 uses it)
    and sometimes at (1, 1, 0), where concept 3 uses no feature and the background N(delta, Omega) takes its place.
    Single flips pass between the two only through (1, 1, 1), (0, 1, 1) or (1, 0, 1), where Omega has to follow M:
    chains stayed up to 266 sweeps in (1, 1, 1) and M's bulk ESS was 85 after 4 x 2,000 sweeps. On stored draws of
    that run, flipping the whole column is accepted about 7 % of the time from (0, 0, 1) and 39 % from (1, 1, 0).
    Flipping the whole column alone opened (1, 1, 1) on feature 1 and left it only through single flips (one chain
    in 4 stayed there half the run): hence random sets of every size (pairs link (1, 0, 0) and (1, 1, 1)). Alone
    it entered feature 3's (1, 1, 1) more often, where the background's marginal of x_3 follows its prior and the
    Omega random walk drifted away from the values that let M leave; with that marginal redrawn
    (``moves.background_marginal_refresh``) both together reach M bulk ESS 378-516 at 4 x 2,000 against 49-179
    (``zoo.papers.gustafson07.COLUMN_MOVES``).
    Cost: K+1 collapsed concept terms, then K+1 per feature (about the flip step's). Returns (state, acceptance rate
    over the p proposals[, with ``with_move_probability`` the sum of their probabilities of moving M])."""
    n_concepts, p = state.M.shape
    count, total, scatter = concept_suffstats(problem.X, state.Y, n_concepts)
    L_omega = cholesky(state.Omega)
    Omega_inv = cho_solve(L_omega, jnp.eye(p))
    logdet = 2.0 * jnp.sum(jnp.log(jnp.diagonal(L_omega)))
    prior = problem.delta_omega_prior
    k_perm, k_loop, k_delta, k_alpha = jax.random.split(key, 4)
    order = jax.random.permutation(k_perm, p)
    terms_of = jax.vmap(concept_delta_terms, in_axes=(None, 0, 0, 0, 0, None, None, None))

    def log_target(M, terms):
        return (delta_collapsed_log_density(terms, prior, Omega_inv, logdet)
                + alpha_marginal_log_prior(problem.alpha_prior, M.sum(0), n_concepts).sum())

    n_keywords = n_concepts - 1

    def body(i, carry):
        M, terms, current, accepted, leave = carry
        j = order[i]
        k_size, k_rows, k_acc = jax.random.split(jax.random.fold_in(k_loop, i), 3)
        # the rows to flip: a uniform number m in 1..K, then m keyword rows uniformly; drawn without looking at M,
        # and flipping the same rows undoes the move: a symmetric proposal (m = 1 repeats a single flip, cheaply)
        m = jax.random.randint(k_size, (), 1, n_keywords + 1)
        rank = jnp.argsort(jax.random.permutation(k_rows, n_keywords))          # a uniform random ranking of 1..K
        rows = jnp.concatenate([jnp.zeros(1, bool), rank < m])
        M_new = M.at[:, j].set(jnp.where(rows, ~M[:, j], M[:, j]))
        # the garbage row's mask is unchanged; its term is evaluated again with the others (one batched call)
        terms_new = terms_of(problem.concept_prior, count, total, scatter, M_new, state.Omega, Omega_inv, logdet)
        proposed = log_target(M_new, terms_new)
        accept = jnp.log(jax.random.uniform(k_acc)) < proposed - current
        pick = lambda a, b: jnp.where(accept, a, b)
        return (pick(M_new, M), jax.tree_util.tree_map(pick, terms_new, terms), pick(proposed, current),
                accepted + accept.astype(jnp.float64), leave + move_probability(proposed - current))

    terms = terms_of(problem.concept_prior, count, total, scatter, state.M, state.Omega, Omega_inv, logdet)
    M, terms, _, accepted, leave = jax.lax.fori_loop(
        0, p, body, (state.M, DeltaCollapsedTerms(*terms), log_target(state.M, terms), jnp.asarray(0.0),
                     jnp.zeros(())))
    mean, L = delta_conditional(terms, prior, Omega_inv)
    delta = mean + solve_lower_transpose(L, jax.random.normal(k_delta, (p,)))
    state, _ = alpha_step(problem, state._replace(M=M, delta=delta), k_alpha)
    out = (state, accepted / p)
    return out + ((leave,) if with_move_probability else ())
