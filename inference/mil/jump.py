"""Z-collapsed birth / death / swap moves of the kernel selection gamma, beta mapped through Laplace fits
(Kueck 2004's model; not in the thesis; ``MILConfig.jump_tries``).

Why (issue 29, ``kueck04_ring`` at 4 chains x (1,000 + 1,000): n_active r-hat 1.55-1.78, about 0.00075 bulk ESS
per chain-sweep): every gamma move of the blocked sweep (``kernel_selection_sweep``, ``swap_move``) is a move of
gamma | Z, delta2. Where the groups are nearly separated, Z | f pins the residuals z - f to unit variance, so Z
carries the current f and with it the current active set (the fraction of missing information is near 1, as for
beta in ``collapsed_beta``). Here Z is integrated out and beta changes together with gamma. The target is

    pi(gamma, beta_a) ∝ p(gamma) N(beta_a; 0, delta2 A_aa^{-1}) prod_g p(obs_g | f),   f = Psi_a beta_a,

at the current delta2 (its prior cancels), p(gamma) = B(K + a, M - K + b) / B(a, b) (tau ~ Beta(a, b)
integrated out, M the number of real basis functions), with the exact group likelihoods of
``collapsed_beta.collapsed_group_log_likelihood`` (MODELS.md Sec. 5).

Each try proposes, with probability 1/3 each, a birth (a kernel j uniformly among the M - K inactive ones), a
death (slot p uniformly among the K active ones) or a swap (p out, j in). beta moves with the set through the
Laplace fits of p(beta_a | gamma, delta2, obs), N(m, (L L')^{-1}) for the current ordered set and N(m', (L'
L'')^{-1}) for the proposed one (``set_fit``: Newton steps from 0, a deterministic function of the ordered set and
delta2): the standardized coordinates e = L_p' (beta_p - m_p) of the current beta, in the order with slot p moved
last (L_p the Cholesky factor of the permuted precision; p = K for a birth), are kept, and

    birth: e' = (e, u), u ~ N(0, 1);   death: e' = e without its last coordinate u;   swap: e' = e;
    beta' = m' + L'^{-T} e'

(the centred proposals of Brooks, Giudici & Roberts 2003: where the fits are good, the ratio is close to the
ratio of the two sets' evidences). A death from the proposed set undoes a birth exactly (and a swap a swap), so
the acceptance ratio of this reversible jump is

    pi(gamma', beta') / pi(gamma, beta) x |L| / |L'| x N(u)^(-1 birth, +1 death) x r(gamma, gamma'),

with the normal's normalizer (2 pi delta2)^(-K/2) |A_aa|^(1/2) in each set's dimension and r the ratio of the
gamma proposals: (M - K) / (K + 1) for a birth, K / (M - K + 1) for a death, 1 for a swap. It leaves
pi(gamma, beta | delta2, obs) invariant, hence (Z integrated out) the posterior's (gamma, beta, delta2)
marginal; the sweep's exact Z | f step afterwards restores the joint (so the move needs ``z_sampler="exact"``).

``neighbour_swaps`` (``MILConfig.jump_neighbour_swaps``; off by default) draws a swap's new kernel j from the
neighbours of the one leaving, i, with ``swap.py``'s weights q(j | i) = w_ij / S_i (squared cosine of the two
basis functions plus a floor) instead of uniformly; r of a swap is then S_i / S'_j (S'_j summed over the inactive
kernels of the proposed set, ``swap.swap_move``'s ratio). Why (issue 29, session 6): on the ring the chains keep
their own near-equivalent configurations of neighbouring kernels, and a uniform j is rarely a neighbour.

``informed`` (``MILConfig.jump_informed``; off by default) draws a birth's new kernel, and a swap's, from the
kernels whose data-fit gain is largest instead of uniformly: at a base predictor f_0 (a birth: the current f =
Psi_a beta; a swap: f less the leaving kernel's term, f - beta_p psi_i) each inactive kernel j gets the gain of
adding it alone with its coefficient integrated out, the one-coefficient Laplace approximation

    G_j = (psi_j' g)^2 / (2 (psi_j' W psi_j + A_jj / delta2)) - log(1 + delta2 psi_j' W psi_j / A_jj) / 2,

g and W the score and expected curvature of log p(obs | f) at f_0 (``collapsed_beta.score_and_curvature``), and

    q(j | state) = (1 - EPS) exp(G_j / 2) / sum_k exp(G_k / 2) + EPS / (number of inactive kernels),

the sum over the inactive kernels (a locally balanced proposal: the square root of the approximate posterior
ratio, mixed with the uniform one so every kernel stays proposable). The reverse proposal is evaluated at the
proposed state (for a swap at f' less the new kernel's term), so r becomes q_rev / q_fwd: a birth 1/(K + 1) /
q(j | x), a death K q(i | x'), a swap q(i | x' - j) / q(j | x - i). Any such state-dependent choice keeps the move
exact (it is evaluated where it is made). Why (issue 29, session 7): a uniform j is rarely one that fits.

``split_merge`` (``MILConfig.jump_split_merge``; off by default) adds two kinds, each try then choosing among
five with probability 1/5: a split of one active kernel i into two inactive neighbours (j1, j2), K -> K + 1, and
its reverse, a merge of two active kernels (j1, j2) into one inactive i, K + 1 -> K. Proposals (w = ``swap.py``'s
squared-cosine weights with their floor):

    split: slot of i uniformly (1/K), j1 ~ w_i. over the inactive, j2 ~ w_i. over the inactive but j1;
    merge: slot of j1 uniformly (1/(K + 1)), j2 ~ w_j1. over the other active, i ~ w_j1. w_j2. over the inactive.

beta moves as in a birth / death, through the standardized coordinates of the Laplace fits, so f stays near the
new set's fit instead of a fixed coefficient split: split: e with i's slot last (the death order), e' = (e, u),
i's coordinate going to j1 and u ~ N(0, 1) to j2 (the new set ordered: the others, j1, j2); merge: e in the order
(the others in the merged set's order, j1, j2), e' = e without its last coordinate u, j1's going to i. The map
is linear with Jacobian |L| / |L'| as for every kind, and r = q_merge / q_split for a split (the ordered pair
(j1, j2): the map depends on which one takes i's coordinate) and its inverse for a merge. Why (issue 29, session
8): on the ring the sticky states are small sets of neighbouring kernels (a chain at 4-5 kernels stays there),
and a birth or death changes K without moving the set's kernels along the ring, a swap moves them without
changing K; a split / merge does both in one step, keeping f.

The fits are computed on the first ``jump_capacity`` slots only (J; a jump to or from a set of more than J
kernels is refused, the same rule both ways, so the move stays exact): O(N J^2 + J^3) per Newton step instead of
O(N K_max^2 + K_max^3). Cost per try: ``fit_steps.anchor + fit_steps.newton`` Newton steps (``FitSteps``) and one
likelihood evaluation O(N); once per sweep the same for the current set. The tries run as one scan whose every
step makes one fit (``jump_move``), so the Newton loop is compiled once per sweep.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax
from jax.scipy.special import betaln, logsumexp

from zoo.inference.linalg import (ActiveSet, apply_birth, apply_death, birth_terms, cholesky_lower,
                                  solve_lower_transpose)
from zoo.inference.mil.collapsed_beta import (ANCHOR_STEPS, NEWTON_STEPS, CollapsedData, LaplaceFit, newton_fit,
                                              score_and_curvature, collapsed_group_log_likelihood, laplace_fit)
from zoo.inference.mil.swap import swap_weights

__all__ = ["jump_move", "jump_log_target", "set_fit", "gain_log_weights", "informed_log_q", "FitSteps", "FIT_STEPS",
           "BIRTH", "DEATH", "SWAP", "SPLIT", "MERGE", "INFORMED_UNIFORM_SHARE", "split_merge_log_q"]

BIRTH, DEATH, SWAP, SPLIT, MERGE = 0, 1, 2, 3, 4

#: EPS of the informed proposals (module docstring): the uniform proposal's share, so that a kernel the gain
#: ranks low can still be proposed and the reverse of an unlikely proposal is not vanishingly rare
INFORMED_UNIFORM_SHARE = 0.5


def jump_log_target(beta, k, gram_a, mask, loglik, delta2, prior_a, prior_b, m) -> jnp.ndarray:
    """log pi(gamma, beta_a | delta2, obs) up to a constant: log B(K + a, M - K + b) + log N(beta_a; 0, delta2
    A_aa^{-1}) (normalized in K dimensions) + log p(obs | f). gram_a (K_max, K_max) zero outside the used block."""
    chol = cholesky_lower(gram_a + jnp.diag(jnp.where(mask, 0.0, 1.0)))
    log_det_half = jnp.sum(jnp.log(jnp.diag(chol)))          # log |A_aa|^(1/2)
    quad = beta @ gram_a @ beta
    log_normal = -0.5 * k * jnp.log(2.0 * jnp.pi * delta2) + log_det_half - 0.5 * quad / delta2
    return betaln(k + prior_a, m - k + prior_b) + log_normal + loglik


class FitSteps(NamedTuple):
    """Newton steps of a set's Laplace fit: ``anchor`` from 0 on the delta2-marginal posterior (the anchor of
    ``collapsed_beta.ensure_anchor``; 0: none, the fit starts at 0), then ``newton`` at delta2 itself."""
    anchor: int
    newton: int


#: the jumps' fits (``MILConfig.jump_fit_steps``): any fixed counts keep the move exact (the fit stays a
#: deterministic function of (ordered set, delta2)); fewer steps are cheaper, a worse fit lowers the acceptance
FIT_STEPS = FitSteps(anchor=ANCHOR_STEPS, newton=NEWTON_STEPS)


def set_fit(aset: ActiveSet, rows, gram_a, data: CollapsedData, delta2, alpha0, beta0,
            steps: FitSteps = FIT_STEPS) -> tuple[LaplaceFit, jnp.ndarray]:
    """(Laplace fit of beta_a at delta2, anchor) for an ordered active set, rows (J, N) and gram_a (J, J) of its
    first J slots: ``steps.anchor`` Newton steps from 0 on the delta2-marginal posterior (IG(alpha0, beta0); as
    ``collapsed_beta.ensure_anchor`` builds its anchor; none: the anchor is 0), then ``steps.newton`` Newton steps
    at delta2 (``laplace_fit``): a deterministic function of (set, delta2)."""
    if steps.anchor < 0 or steps.newton < 1:
        raise ValueError(f"fit_steps: needs anchor >= 0 and newton >= 1 Newton steps, got {tuple(steps)}")
    mask = jnp.arange(gram_a.shape[0]) < aset.count
    k = aset.count.astype(gram_a.dtype)
    anchor = jnp.zeros(gram_a.shape[0], gram_a.dtype)
    if steps.anchor > 0:
        em_delta2 = lambda b: (beta0 + 0.5 * b @ gram_a @ b) / (alpha0 + 0.5 * k)  # noqa: E731
        anchor, _ = newton_fit(anchor, rows, gram_a, mask, data, em_delta2, steps.anchor)
    return laplace_fit(anchor, rows, gram_a, mask, data, delta2, steps.newton), anchor


def _proposed_set(aset: ActiveSet, gram, kind, slot, j, min_pivot) -> ActiveSet:
    """The active set after a birth of j (appended last), a death of ``slot`` (the last slot moved into it) or a
    swap (both: ``slot`` out, j appended last); O(K_max^2) each."""
    h, s = birth_terms(aset, gram, j, min_pivot)
    born = apply_birth(aset, j, h, s)
    reduced = apply_death(aset, slot)
    h2, s2 = birth_terms(reduced, gram, j, min_pivot)
    swapped = apply_birth(reduced, j, h2, s2)
    return jax.tree_util.tree_map(lambda b, d, w: jnp.where(kind == BIRTH, b, jnp.where(kind == DEATH, d, w)),
                                  born, reduced, swapped)


def _sliced(aset: ActiveSet, psi_t, gram, width: int):
    """(rows (J, N), A_aa (J, J), mask (J,)) of the first J slots (zero rows / blocks on unused slots)."""
    mask = jnp.arange(width) < aset.count
    members = aset.members[:width]
    gathered = jax.vmap(psi_t)(members) if callable(psi_t) else psi_t[members]
    rows = jnp.where(mask[:, None], gathered, 0.0)
    gram_a = jnp.where(mask[:, None] & mask[None, :], gram[members][:, members], 0.0)
    return rows, gram_a, mask


def _standard_normal_log_density(u):
    return -0.5 * u * u - 0.5 * jnp.log(2.0 * jnp.pi)


def _basis_matrix(psi_t, m: int) -> jnp.ndarray:
    """(M, N) Psi': stored, or formed from a row function (rows on demand: O(M N) per call)."""
    return jax.vmap(psi_t)(jnp.arange(m)) if callable(psi_t) else psi_t


def gain_log_weights(f0, psi, gram, data: CollapsedData, delta2) -> jnp.ndarray:
    """(M,) G_j / 2 at the base predictor f0 (N,): half the one-coefficient Laplace log evidence gain of adding
    kernel j (module docstring); psi (M, N) = Psi', gram (M, M)."""
    g, w = score_and_curvature(f0, data)
    score = psi @ g
    info = (psi * psi) @ w
    prior_precision = jnp.diagonal(gram) / delta2
    gain = 0.5 * score * score / (info + prior_precision) - 0.5 * jnp.log1p(info / prior_precision)
    return 0.5 * gain


def informed_log_q(log_w, inactive) -> jnp.ndarray:
    """(M,) log q(j) = log[(1 - EPS) w_j / sum_inactive w + EPS / n_inactive] on the inactive kernels, -inf on the
    others; log_w (M,) the log weights (``gain_log_weights``), inactive (M,) bool."""
    n = jnp.maximum(jnp.sum(inactive), 1).astype(log_w.dtype)
    masked = jnp.where(inactive, jnp.where(jnp.isfinite(log_w), log_w, -jnp.inf), -jnp.inf)
    log_p = masked - logsumexp(masked)
    mixed = jnp.logaddexp(jnp.log1p(-INFORMED_UNIFORM_SHARE) + log_p, jnp.log(INFORMED_UNIFORM_SHARE) - jnp.log(n))
    return jnp.where(inactive, mixed, -jnp.inf)


def _masked_log_sum(log_w, mask) -> jnp.ndarray:
    return logsumexp(jnp.where(mask, log_w, -jnp.inf))


def split_merge_log_q(gram, i, j1, j2, count, inactive_before, eligible):
    """(log q(split of i into the ordered pair (j1, j2)), log q(merge of (j1, j2) into i)) for a state where i is
    active with ``count`` members and j1, j2 are inactive (``inactive_before`` (M,) bool, eligible kernels only),
    the merged state's set being that one; the split state has i replaced by j1 and j2 (count + 1 members).

    split: slot of i uniformly (1 / K), j1 ~ w_i. / S_i over the inactive, j2 ~ w_i. over the inactive but j1;
    merge: slot of j1 uniformly (1 / (K + 1)), j2 ~ w_j1. over the other active kernels, i ~ w_j1. w_j2. over the
    inactive (w = ``swap.swap_weights``, the squared cosines of the basis functions plus a floor)."""
    dtype = gram.dtype
    k = count.astype(dtype)
    idx = jnp.arange(gram.shape[0])
    w_i, w_j1, w_j2 = (jnp.log(swap_weights(gram, a)) for a in (i, j1, j2))
    # split from the merged state: inactive there = inactive_before
    log_s_i = _masked_log_sum(w_i, inactive_before)
    log_split = (-jnp.log(k) + w_i[j1] - log_s_i + w_i[j2]
                 - _masked_log_sum(w_i, inactive_before & (idx != j1)))
    # merge from the split state: active there = active_before less i plus j1, j2; inactive = the complement
    inactive_after = (inactive_before & (idx != j1) & (idx != j2)) | (idx == i)
    active_after = eligible & ~inactive_after
    log_merge = (-jnp.log(k + 1.0) + w_j1[j2] - _masked_log_sum(w_j1, active_after & (idx != j1))
                 + w_j1[i] + w_j2[i] - _masked_log_sum(w_j1 + w_j2, inactive_after))
    return log_split, log_merge


def _split_merge_proposal(key, aset: ActiveSet, gram, eligible, slot, width: int, min_pivot):
    """The split / merge candidates of one try (module docstring, ``split_merge``): (split's set, its log q_rev -
    log q_fwd, whether possible), (merge's set, its log r, whether possible, perm (K_max,) of the current slots
    that puts the merged pair (j1, j2) last in that order and the kept kernels in the merged set's order; (J,) for
    the first J = width slots)."""
    dtype = gram.dtype
    capacity = aset.members.shape[0]
    m_all = gram.shape[0]
    idx = jnp.arange(m_all)
    k_a, k_b, k_c = jax.random.split(key, 3)
    count = aset.count
    active = aset.slot_of >= 0
    inactive = ~active & eligible
    n_inactive = jnp.sum(inactive)
    # split: slot -> i, then j1, j2 among the inactive near i
    i = aset.members[slot]
    w_i = jnp.log(swap_weights(gram, i))
    j1 = jax.random.categorical(k_a, jnp.where(inactive, w_i, -jnp.inf))
    j2 = jax.random.categorical(k_b, jnp.where(inactive & (idx != j1), w_i, -jnp.inf))
    reduced = apply_death(aset, slot)
    h1, s1 = birth_terms(reduced, gram, j1, min_pivot)
    one = apply_birth(reduced, j1, h1, s1)
    h2, s2 = birth_terms(one, gram, j2, min_pivot)
    split_set = apply_birth(one, j2, h2, s2)
    q_split, q_merge_back = split_merge_log_q(gram, i, j1, j2, count, inactive, eligible)
    split_log_r = q_merge_back - q_split
    split_possible = (count >= 1) & (n_inactive >= 2) & (count + 1 <= capacity)
    # merge: slot -> j1, j2 among the other active near j1, i among the inactive near both
    m1 = aset.members[slot]
    w_m1 = jnp.log(swap_weights(gram, m1))
    m2 = jax.random.categorical(k_b, jnp.where(active & (idx != m1), w_m1, -jnp.inf))
    w_m2 = jnp.log(swap_weights(gram, m2))
    target = jax.random.categorical(k_c, jnp.where(inactive, w_m1 + w_m2, -jnp.inf))
    first_death = apply_death(aset, aset.slot_of[m2])
    kept = apply_death(first_death, first_death.slot_of[m1])
    h3, s3 = birth_terms(kept, gram, target, min_pivot)
    merge_set = apply_birth(kept, target, h3, s3)
    # the merged state's inactive kernels: the current ones less the target, plus m1, m2
    inactive_merged = (inactive & (idx != target)) | (idx == m1) | (idx == m2)
    q_split_back, q_merge = split_merge_log_q(gram, target, m1, m2, count - 1, inactive_merged, eligible)
    merge_log_r = q_split_back - q_merge
    merge_possible = (count >= 2) & (n_inactive >= 1)
    slots = jnp.arange(width)
    kept_slots = aset.slot_of[kept.members[:width]]
    perm = jnp.where(slots < count - 2, kept_slots,
                     jnp.where(slots == count - 2, aset.slot_of[m1], jnp.where(slots == count - 1,
                                                                               aset.slot_of[m2], slots)))
    return ((split_set, jnp.where(split_possible, split_log_r, -jnp.inf).astype(dtype)),
            (merge_set, jnp.where(merge_possible, merge_log_r, -jnp.inf).astype(dtype), perm))


class JumpProposal(NamedTuple):
    """A proposed jump waiting for the Laplace fit of its set (the next scan step computes it)."""
    aset: ActiveSet            # the proposed ordered set (before the first try: the current set itself)
    e: jnp.ndarray             # (J,) standardized coordinates e' of the proposed beta, zeros on unused slots
    log_extra: jnp.ndarray     # () log N(u)^(-1 birth, +1 death) + log r(gamma, gamma'); -inf: impossible
    accept_key: jax.Array
    kind: jnp.ndarray          # () BIRTH / DEATH / SWAP (informed: which reverse proposal the fit step adds)
    leaving: jnp.ndarray       # () the kernel i leaving (a death or swap); informed: its reverse proposal


class JumpChain(NamedTuple):
    """The scan's carry: the chain's set and first J coordinates of beta, log pi of them and their set's fit,
    accepted tries so far, and the proposal waiting for its fit."""
    aset: ActiveSet
    beta: jnp.ndarray          # (J,)
    log_target: jnp.ndarray    # () log pi(gamma, beta | delta2, obs)
    fit: LaplaceFit            # the current set's fit at delta2
    accepted: jnp.ndarray      # () int
    pending: JumpProposal


def _propose(key, aset: ActiveSet, beta, fit: LaplaceFit, gram, eligible, m, width: int, min_pivot,
             neighbour_swaps: bool = False, informed=None, split_merge: bool = False,
             split_merge_only: bool = False) -> JumpProposal:
    """A birth / death / swap of the current (set, beta) as in the module docstring, up to the proposed set's fit:
    the proposed ordered set, e' (from the current fit's standardized coordinates, slot p moved last) and the log
    of the factors that do not need the new fit (N(u)^(-+1) and the gamma proposal ratio r; -inf when the kind is
    impossible here). beta (J,), fit: the current set's; gram (M, M); eligible (M,) bool; m: the number of
    eligible basis functions; width J; neighbour_swaps: a swap's j from the neighbours of the kernel leaving;
    informed: None, or (psi (M, N), data, delta2): births' and swaps' j from ``informed_log_q`` (the fit step adds
    the reverse proposal's log q); split_merge: the kind among five (a split and a merge besides), not three;
    split_merge_only: a split or a merge only (``jump_move``'s test setting)."""
    dtype = gram.dtype
    capacity = aset.members.shape[0]
    idx = jnp.arange(width)
    k_kind, k_slot, k_j, k_u, k_acc = jax.random.split(key, 5)
    count = aset.count
    k = count.astype(dtype)
    kind = jax.random.randint(k_kind, (), 0, 5 if split_merge else 3)
    if split_merge_only:
        kind = SPLIT + jax.random.randint(k_kind, (), 0, 2)
    slot = jnp.minimum(jnp.floor(jax.random.uniform(k_slot, dtype=dtype) * k).astype(jnp.int32),
                       jnp.maximum(count - 1, 0))
    inactive = (aset.slot_of < 0) & eligible
    n_inactive = jnp.sum(inactive).astype(dtype)
    j = jax.random.categorical(k_j, jnp.where(inactive, 0.0, -jnp.inf))
    new_count = jnp.where(kind == BIRTH, count + 1, jnp.where(kind == DEATH, count - 1, count))
    possible = jnp.where(kind == BIRTH, n_inactive > 0, jnp.where(kind == DEATH, count > 0,
                                                                  (count > 0) & (n_inactive > 0)))
    possible = possible & (count <= width) & (new_count <= width) & (new_count <= capacity)
    log_r_swap = jnp.zeros((), dtype)
    if neighbour_swaps:
        # j ~ w_ij / S_i among the inactive; the reverse swap picks i among the proposed set's inactive kernels
        i = aset.members[slot]
        w_i = swap_weights(gram, i)
        j_near = jax.random.categorical(k_j, jnp.where(inactive, jnp.log(w_i), -jnp.inf))
        w_j = swap_weights(gram, j_near)
        s_i = jnp.sum(jnp.where(inactive, w_i, 0.0))
        s_j_after = jnp.sum(jnp.where(inactive, w_j, 0.0)) - w_j[j_near] + w_j[i]
        j = jnp.where(kind == SWAP, j_near, j)
        log_r_swap = jnp.log(s_i) - jnp.log(s_j_after)
    # r(gamma, gamma'): q(gamma | gamma') / q(gamma' | gamma), the 1/3 of the kind cancelling
    log_r = jnp.where(kind == BIRTH, jnp.log(n_inactive) - jnp.log(k + 1.0),
                      jnp.where(kind == DEATH, jnp.log(k) - jnp.log(m - k + 1.0), log_r_swap))
    if informed is not None:
        # j from the gains at f (a birth) or at f less the leaving kernel's term (a swap); only the forward half of
        # r here (a birth's reverse death 1/(K + 1); a death's forward choice 1/K), the fit step adds log q_rev
        psi, data, delta2 = informed
        rows, _, _ = _sliced(aset, psi, gram, width)
        i = aset.members[slot]
        f0 = beta @ rows - jnp.where(kind == SWAP, beta[jnp.minimum(slot, width - 1)], 0.0) * psi[i]
        log_q = informed_log_q(gain_log_weights(f0, psi, gram, data, delta2), inactive)
        j_informed = jax.random.categorical(k_j, log_q)
        j = jnp.where(kind == DEATH, j, j_informed)
        log_r = jnp.where(kind == BIRTH, -jnp.log(k + 1.0) - log_q[j],
                          jnp.where(kind == DEATH, jnp.log(k), -log_q[j]))
    # standardized coordinates of the current beta, slot p moved last (a birth removes nothing: p = K)
    last = jnp.maximum(count - 1, 0)
    p = jnp.where(kind == BIRTH, last, slot)
    perm = jnp.where(idx == p, last, jnp.where(idx == last, p, idx))
    precision = fit.chol @ fit.chol.T
    chol_p = cholesky_lower(precision[perm][:, perm])
    e = chol_p.T @ (beta[perm] - fit.mean[perm])
    u_birth = jax.random.normal(k_u, dtype=dtype)
    u_death = e[last]
    e_new = jnp.where(kind == BIRTH, e.at[jnp.minimum(count, width - 1)].set(u_birth),
                      jnp.where(kind == DEATH, e.at[last].set(0.0), e))
    log_u = jnp.where(kind == BIRTH, -_standard_normal_log_density(u_birth),
                      jnp.where(kind == DEATH, _standard_normal_log_density(u_death), 0.0))
    new = _proposed_set(aset, gram, kind, slot, j, min_pivot)
    if split_merge:
        # a split keeps e with slot p (kernel i) last, i's coordinate going to j1 and u ~ N(0, 1) to j2 (as a
        # birth); a merge orders the slots (kept, j1, j2), j1's coordinate going to i and j2's, u, dropped (as a
        # death); the Jacobian |L| / |L'| as for every kind (the fit step)
        (split_set, split_log_r), (merge_set, merge_log_r, merge_perm) = _split_merge_proposal(
            jax.random.fold_in(k_j, 1), aset, gram, eligible, slot, width, min_pivot)
        chol_m = cholesky_lower(precision[merge_perm][:, merge_perm])
        e_merge = chol_m.T @ (beta[merge_perm] - fit.mean[merge_perm])
        u_merge = e_merge[last]
        e_new = jnp.where(kind == SPLIT, e.at[jnp.minimum(count, width - 1)].set(u_birth),
                          jnp.where(kind == MERGE, e_merge.at[last].set(0.0), e_new))
        log_u = jnp.where(kind == SPLIT, -_standard_normal_log_density(u_birth),
                          jnp.where(kind == MERGE, _standard_normal_log_density(u_merge), log_u))
        log_r = jnp.where(kind == SPLIT, split_log_r, jnp.where(kind == MERGE, merge_log_r, log_r))
        new_count = jnp.where(kind == SPLIT, count + 1, jnp.where(kind == MERGE, count - 1, new_count))
        possible = jnp.where(kind == SPLIT, jnp.isfinite(split_log_r),
                             jnp.where(kind == MERGE, jnp.isfinite(merge_log_r), possible))
        possible = possible & (count <= width) & (new_count <= width) & (new_count <= capacity)
        new = jax.tree_util.tree_map(lambda a, b, c: jnp.where(kind == SPLIT, a, jnp.where(kind == MERGE, b, c)),
                                     split_set, merge_set, new)
    e_new = jnp.where(idx < new.count, e_new, 0.0)
    return JumpProposal(aset=new, e=e_new, log_extra=jnp.where(possible, log_u + log_r, -jnp.inf),
                        accept_key=k_acc, kind=kind.astype(jnp.int32), leaving=aset.members[slot])


def jump_move(key: jax.Array, aset: ActiveSet, beta_active: jnp.ndarray, delta2: jnp.ndarray, gram: jnp.ndarray,
              psi_t, data: CollapsedData, prior_a, prior_b, alpha0, beta0, tries: int, min_pivot,
              basis_mask=None, jump_capacity: int = 20, fit_steps: FitSteps = FIT_STEPS,
              neighbour_swaps: bool = False, informed: bool = False, split_merge: bool = False,
              split_merge_only: bool = False):
    """``tries`` Z-collapsed birth / death / swap proposals of gamma with beta mapped between the sets' Laplace
    fits (module docstring), at fixed delta2.

    aset: the active set (capacity K_max); beta_active (K_max,) in slot order; gram (M, M); psi_t (M, N) or a
    function j -> row; data: the collapsed likelihood's groups; prior_a, prior_b: Beta prior of tau; alpha0,
    beta0: IG shape of delta2 for the fits' anchors; basis_mask (M,) bool or None: only True centres are basis
    functions; jump_capacity J: the largest set a jump may start from or reach; fit_steps: the fits' Newton
    steps (``FitSteps``); neighbour_swaps: a swap's new kernel from the neighbours of the one leaving; informed:
    a birth's and a swap's new kernel from the largest data-fit gains (both: module docstring; not together);
    split_merge: splits of one kernel into two neighbours and merges of two into one besides (module docstring;
    not with informed); split_merge_only: those two kinds alone (their exactness test: they keep K >= 1, so they
    are no sampler by themselves).
    Returns (aset, beta_active, number of accepted tries).

    One scan of ``tries + 1`` steps, each computing one Laplace fit (so the fit is traced and compiled once, not
    once for the current set and once for the proposals): step 0 fits the current set, step t >= 1 fits the
    set proposed at step t - 1 and decides that proposal; every step then proposes from the chain as it stands
    (the last step's proposal is never decided). The random stream is that of a loop over the tries."""
    if tries < 1:
        return aset, beta_active, jnp.zeros((), jnp.int32)
    if neighbour_swaps and informed:
        raise ValueError("jump_neighbour_swaps / jump_informed: choose one proposal of a swap's new kernel, not both")
    split_merge = split_merge or split_merge_only
    if split_merge and informed:
        raise ValueError("jump_split_merge / jump_informed: the split and merge moves are not built for the informed "
                         "proposals (their reverse terms); choose one")
    dtype = gram.dtype
    width = min(int(jump_capacity), aset.members.shape[0])
    eligible = jnp.ones(gram.shape[0], bool) if basis_mask is None else basis_mask
    m = jnp.sum(eligible).astype(dtype)
    fit_of = lambda a, rows, gram_a: set_fit(a, rows, gram_a, data, delta2, alpha0, beta0, fit_steps)[0]  # noqa: E731
    psi = _basis_matrix(psi_t, gram.shape[0]) if informed else None
    proposal_terms = (psi, data, delta2) if informed else None

    def reverse_log_q(pending: JumpProposal, beta_new, rows):
        """log q_rev of the informed proposals at the proposed state: a death's reverse birth of i at f', a swap's
        reverse swap of i at f' less the new kernel's term (slot K' - 1); 0 for a birth (its reverse death is
        uniform, in log_extra)."""
        last = jnp.clip(pending.aset.count - 1, 0, width - 1)
        j_new = pending.aset.members[last]
        f0 = beta_new @ rows - jnp.where(pending.kind == SWAP, beta_new[last], 0.0) * psi[j_new]
        inactive = (pending.aset.slot_of < 0) & eligible
        log_q = informed_log_q(gain_log_weights(f0, psi, gram, data, delta2), inactive)
        return jnp.where(pending.kind == BIRTH, 0.0, log_q[pending.leaving])

    def step(chain: JumpChain, xs):
        key, first = xs
        pending = chain.pending
        rows, gram_a, mask = _sliced(pending.aset, psi_t, gram, width)
        fit_new = fit_of(pending.aset, rows, gram_a)
        # step 0 evaluates the current beta itself (its fit and log pi), later steps the proposal's beta'
        beta_new = jnp.where(first, chain.beta,
                             jnp.where(mask, fit_new.mean + solve_lower_transpose(fit_new.chol, pending.e), 0.0))
        loglik_new = jnp.sum(collapsed_group_log_likelihood(beta_new @ rows, data))
        proposed = jump_log_target(beta_new, pending.aset.count.astype(dtype), gram_a, mask, loglik_new, delta2,
                                   prior_a, prior_b, m)
        log_ratio = proposed - chain.log_target + chain.fit.log_det_half - fit_new.log_det_half + pending.log_extra
        if informed:
            log_ratio = log_ratio + jnp.where(first, 0.0, reverse_log_q(pending, beta_new, rows))
        # a NaN ratio (an overflowed proposal) is a rejection
        log_uniform = jnp.log(jax.random.uniform(pending.accept_key, dtype=dtype))
        take = ~first & (log_uniform < jnp.where(jnp.isnan(log_ratio), -jnp.inf, log_ratio))
        renew = first | take
        aset_now = jax.tree_util.tree_map(lambda a, b: jnp.where(take, a, b), pending.aset, chain.aset)
        beta_now = jnp.where(take, beta_new, chain.beta)
        fit_now = jax.tree_util.tree_map(lambda a, b: jnp.where(renew, a, b), fit_new, chain.fit)
        return JumpChain(aset=aset_now, beta=beta_now, log_target=jnp.where(renew, proposed, chain.log_target),
                         fit=fit_now, accepted=chain.accepted + take.astype(jnp.int32),
                         pending=_propose(key, aset_now, beta_now, fit_now, gram, eligible, m, width, min_pivot,
                                          neighbour_swaps, proposal_terms, split_merge, split_merge_only)), None

    beta_j = beta_active[:width]
    blank_fit = LaplaceFit(mean=jnp.zeros(width, dtype), chol=jnp.eye(width, dtype=dtype),
                           log_det_half=jnp.zeros((), dtype))
    keys = jax.random.split(key, tries)
    start = JumpChain(aset=aset, beta=beta_j, log_target=jnp.zeros((), dtype), fit=blank_fit,
                      accepted=jnp.zeros((), jnp.int32),
                      pending=JumpProposal(aset=aset, e=jnp.zeros(width, dtype), log_extra=jnp.zeros((), dtype),
                                           accept_key=keys[0], kind=jnp.asarray(BIRTH, jnp.int32),
                                           leaving=aset.members[0]))
    # the last step's proposal is never decided: it reuses try 0's key (any key would do)
    xs = (jnp.concatenate([keys, keys[:1]]), jnp.arange(tries + 1) == 0)
    end, _ = lax.scan(step, start, xs)
    # unchanged when no jump was taken (the slots beyond J keep their values: a set of more than J never jumps)
    beta_out = jnp.where(end.accepted > 0, jnp.zeros_like(beta_active).at[:width].set(end.beta), beta_active)
    return end.aset, beta_out, end.accepted
