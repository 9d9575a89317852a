"""Problem, state and shared helpers of the collapsed FULL/FS/CVFS sampler (Gustafson, Thompson & de Freitas
2007, Appendix); the sweep is in ``zoo.inference.label_feature.gibbs``.

Shapes: n units, p features, K+1 concepts (0 = garbage), I images, J = most segments in one image.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from zoo.inference.label_feature.collapsed_niw import ConceptPrior, NIWPrior

__all__ = ["BetaMixture", "RegionProblem", "GibbsState", "SweepInfo", "concept_suffstats", "concept_masks_of",
           "free_rows", "rows_to_M", "unit_images", "forced_units", "label_log_prior"]


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
    joint_moves: joint moves of one indicator and the labels it affects per sweep (``joint_flip_relabel_step``);
    joint_pick_prior: the pseudo-acceptances a of the joint moves' indicator weights (accepted + a) / (tried + 1);
    garbage_log_weight: log w of the label prior Pr(Y_ij = y) proportional to w for y = 0 (garbage) and to 1 for
    each other concept of S_i (0 = the paper's uniform prior over S_i, Sec. 3; ``label_log_prior``);
    column_moves: passes per sweep of the CVFS column flips over the p features (``column_flip_step``;
    0 = none); marginal_refresh: CVFS, redraw the background's marginal on the features every labelled concept uses
    after the Omega steps (``background_marginal_refresh``).
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
    joint_pick_prior: jnp.ndarray = 0.1
    garbage_log_weight: jnp.ndarray = 0.0
    column_moves: jnp.ndarray = 0
    marginal_refresh: jnp.ndarray = False


class GibbsState(NamedTuple):
    """Y (n,) labels; M (K+1, p) bool inclusion of every concept (row 0 garbage); alpha (p,); delta (p,);
    Omega (p, p); label_proba (n, K+1) the last sweep's full conditionals; unit_loglik (n,) log p(x_ij | S_i,
    temporary parameters) for az.loo; warmup_left: sweeps of warm-up still to come (the joint moves adapt
    during warm-up); joint_tries, joint_accepts (K+1, p): joint moves of each indicator tried / accepted during
    warm-up (they set the indicator's selection weight, frozen after warm-up: ``joint_flip_relabel_step``).
    The chain's key, running sums and draws are the driver's (``zoo.inference.driver``)."""
    Y: jnp.ndarray
    M: jnp.ndarray
    alpha: jnp.ndarray
    delta: jnp.ndarray
    Omega: jnp.ndarray
    label_proba: jnp.ndarray
    unit_loglik: jnp.ndarray
    warmup_left: jnp.ndarray = 0
    joint_tries: jnp.ndarray = 0.0
    joint_accepts: jnp.ndarray = 0.0


class SweepInfo(NamedTuple):
    accept_M: jnp.ndarray           # (K+1,) 1 where concept k's flip was accepted (FS: row 0 holds the shared one)
    accept_delta_Omega: jnp.ndarray  # () 1 where the (delta, Omega) proposal was accepted (CVFS)
    accept_Omega: jnp.ndarray = 1.0  # () acceptance rate of the sweep's Omega random-walk steps (CVFS)
    accept_joint: jnp.ndarray = 1.0  # () acceptance rate of the sweep's joint (indicator, labels) moves
    move_probability_M: jnp.ndarray = 0.0  # () the sweep's expected number of moves of M: the sum over its flips,
    #                                        joint moves and column moves of each one's probability of changing M
    accept_column: jnp.ndarray = 0.0  # () acceptance rate of the sweep's column flips of M (CVFS)


def concept_suffstats(X, Y, n_concepts):
    """Per-concept (count (K+1,), total (K+1, p), scatter (K+1, p, p)) of the units labelled k."""
    onehot = jax.nn.one_hot(Y, n_concepts, dtype=X.dtype)
    return onehot.sum(0), onehot.T @ X, jnp.einsum("nk,ni,nj->kij", onehot, X, X)


def label_log_prior(problem: RegionProblem, n_concepts: int) -> jnp.ndarray:
    """(K+1,) unnormalized log prior of one label: log w for the garbage concept 0, 0 for every keyword concept.
    Restricted to S_i (and to the coverage constraint) it is the label prior of every update; w = 1 (log w = 0)
    is the paper's uniform prior over S_i ("lambda fixed uniform", Sec. 3)."""
    return jnp.zeros(n_concepts).at[0].set(problem.garbage_log_weight)


def concept_masks_of(variant: str, M: jnp.ndarray) -> jnp.ndarray:
    """The inclusion matrix the likelihood uses: FULL all ones; FS row 0 broadcast; CVFS as stored (row 0 = 0)."""
    if variant == "full":
        return jnp.ones_like(M)
    if variant == "fs":
        return jnp.broadcast_to(M[0], M.shape)
    return M


def free_rows(variant: str, M: jnp.ndarray) -> jnp.ndarray:
    """The indicators a flip changes: FS the shared vector as one row (1, p); CVFS every row (K+1, p)."""
    return M[:1] if variant == "fs" else M


def rows_to_M(variant: str, F: jnp.ndarray, n_concepts: int) -> jnp.ndarray:
    return jnp.broadcast_to(F[0], (n_concepts, F.shape[1])) if variant == "fs" else F


def unit_images(problem: RegionProblem, n: int) -> jnp.ndarray:
    """(n,) the row of ``image_slots`` holding each unit."""
    slots = problem.image_slots
    rows = jnp.broadcast_to(jnp.arange(slots.shape[0])[:, None], slots.shape)
    return jnp.zeros(n, int).at[jnp.where(slots >= 0, slots, n)].set(rows, mode="drop")


def forced_units(problem: RegionProblem, n: int) -> jnp.ndarray:
    """(n,) True where the label cannot change: a single allowed label, or an image of one segment with a keyword
    (coverage puts that keyword on it)."""
    image = unit_images(problem, n)
    segments = (problem.image_slots >= 0).sum(1)
    one_keyword_segment = (segments[image] == 1) & problem.keyword_mask[image].any(-1)
    return (problem.allowed.sum(-1) <= 1) | one_keyword_segment
