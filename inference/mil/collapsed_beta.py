"""Z-collapsed Metropolis-Hastings moves of (beta, delta2) for the sparse kernel probit models (Kueck 2004).

Not in the thesis; an exact extra move for the blocked Gibbs sampler (``MILConfig.beta_move = "laplace"``).

Why: the data-augmentation sweep draws beta | Z and Z | beta. Where most points are classified with |f| >> 1,
z_i is nearly N(f_i, 1) and pins beta to its current value; beta then crawls (the fraction of missing
information is near 1; Johndrow et al. 2019). Here Z is integrated out: the target is

    pi(beta_a, log delta2) ∝ prod_g p(obs_g | f) N(beta_a; 0, delta2 A_aa^{-1}) p(delta2) delta2,   f = Psi_a beta_a,

with the exact group likelihoods p(obs_g | f) of ``orthant_sampler.group_log_likelihood`` (MODELS.md Sec. 5:
instance labels, constraint labels, measurement weights) and gamma held fixed.

Proposal: the Laplace approximation of p(beta_a | gamma, delta2, obs), N(m(delta2), P(delta2)^{-1}), found by
``NEWTON_STEPS`` Newton steps from an anchor, widened to a multivariate t with ``T_DOF`` degrees of freedom.
The curvature of a group's log-likelihood is the expected probit curvature over its sign marginals
(``orthant_sampler.sign_marginals``), positive definite and exact for groups of known signs. Each sweep makes:

- one joint try: log delta2' = log delta2 + s eps (random walk, s from the delta2 conditional's spread), then
  beta' ~ t(m(delta2'), P(delta2')); accepted with
  [pi(beta', delta2') / q(beta' | delta2')] / [pi(beta, delta2) / q(beta | delta2)];
- ``tries`` independence tries beta' ~ t(m(delta2), P(delta2)) at the current delta2.

Both are Metropolis-Hastings steps with the exact target, because the proposal q(. | delta2) is a deterministic
function of (gamma, delta2) alone: the Newton steps always start from the anchor, which depends on gamma only
(Newton steps from 0 on the delta2-marginal posterior). The anchor is memoized in the sampler state
(``AnchorCache``) and recomputed only when the active set changed. After the move Z must be redrawn from
Z | beta (the sweep's Z step does that).
Cost per sweep: (1 + 1) x ``NEWTON_STEPS`` Newton steps O(N K_max^2 + K_max^3) plus (2 + tries) likelihood
evaluations O(N); worth it for small active sets.

Memoized fits (``FitTable``, ``empty_anchor(..., table=True)``; the default for a fixed active set): the fit
is taken at the nearest node of a log delta2 grid (``GRID_STEP``) instead of at delta2 itself, computed once per
node (``TABLE_NEWTON_STEPS`` from the anchor) and looked up afterwards. q(. | delta2) is still a deterministic
function of (gamma, delta2), so the move stays exact, and a sweep then costs (2 + tries) likelihood evaluations
(2.4x faster on the 600-point benchmark problem); the fits, converged now, also ended the independence tries'
stuck runs at large delta2 there. The lookup is a lax.cond: under vmap both of its branches
run, so vectorized chains recompute a fit per lookup (run such chains with ``chain_method="sequential"``).
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
from jax import lax

from zoo.inference.linalg import (ActiveSet, cholesky_lower, slot_mask, solve_lower,
                                  solve_lower_transpose)
from zoo.inference.mil.orthant_sampler import (GroupLayout, group_log_likelihood_from_log_probs,
                                           pure_group_terms, sign_marginals_from_log_probs, sub_layout)
from zoo.inference.truncated_normal import log_ndtr_pair, probit_hazards

__all__ = ["LaplaceFit", "FitTable", "AnchorCache", "empty_anchor", "ensure_anchor", "laplace_fit", "proposal_fit",
           "grid_cell", "grid_log_delta2", "collapsed_beta_move",
           "CollapsedData", "collapsed_group_log_likelihood", "log_target", "NEWTON_STEPS", "ANCHOR_STEPS", "T_DOF",
           "chi_square_shapes", "score_and_curvature", "newton_fit"]

#: Newton steps from the anchor to each proposal's centre, and from 0 to the anchor
NEWTON_STEPS = 3
ANCHOR_STEPS = 12
#: degrees of freedom of the multivariate t proposal (heavier tails than the Laplace normal: the posterior of
#: beta is skewed along nearly separating directions)
T_DOF = 8.0
#: the log delta2 grid of the memoized fits (``FitTable``): nodes GRID_STEP apart on [-16, 16]
GRID_STEP = 0.25
GRID_HALF = 64
GRID_CELLS = 2 * GRID_HALF + 1
#: Newton steps from the anchor for a memoized fit (computed once per grid cell and active set)
TABLE_NEWTON_STEPS = 8


class CollapsedData(NamedTuple):
    """What the collapsed likelihood needs: groups, constraint codes, measurement weights (or None), and
    dp_groups (G_dp,) int: the groups whose signs are not known from their label (``mil_gibbs.mixed_groups``);
    the others are pure and cost one log Phi per instance. None: every group goes through the general code."""
    layout: GroupLayout
    kind: jnp.ndarray
    log_weight: Optional[jnp.ndarray]
    dp_groups: Optional[jnp.ndarray] = None


class LaplaceFit(NamedTuple):
    mean: jnp.ndarray          # (K_max,) centre, zeros on unused slots
    chol: jnp.ndarray          # (K_max, K_max) lower Cholesky factor of the precision P (identity on unused slots)
    log_det_half: jnp.ndarray  # () sum log diag(chol) = log |P|^(1/2)


class FitTable(NamedTuple):
    """Proposal fits memoized on a grid of log delta2 (``GRID_STEP``), for one active set: row c holds the fit at
    delta2 = exp(grid_log_delta2(c)), valid where ``filled``."""
    mean: jnp.ndarray          # (G, K_max)
    chol: jnp.ndarray          # (G, K_max, K_max)
    log_det_half: jnp.ndarray  # (G,)
    filled: jnp.ndarray        # (G,) bool


class AnchorCache(NamedTuple):
    """The Newton start point for one active set (a function of gamma only), the set it belongs to, and (with
    ``table=True`` in ``empty_anchor``) the proposal fits of that set memoized on the log delta2 grid."""
    point: jnp.ndarray         # (K_max,)
    members: jnp.ndarray       # (K_max,) int, slot order of the set it was computed for
    count: jnp.ndarray         # () int; -1: nothing cached yet
    table: Optional[FitTable] = None


def empty_anchor(capacity: int, dtype, table: bool = False) -> AnchorCache:
    """An empty cache; ``table``: also memoize the proposal fits on the log delta2 grid (worth it when the active
    set stays fixed: each sweep then costs likelihood evaluations only; memory GRID_CELLS x capacity^2)."""
    fits = None
    if table:
        fits = FitTable(mean=jnp.zeros((GRID_CELLS, capacity), dtype),
                        chol=jnp.broadcast_to(jnp.eye(capacity, dtype=dtype), (GRID_CELLS, capacity, capacity)),
                        log_det_half=jnp.zeros(GRID_CELLS, dtype), filled=jnp.zeros(GRID_CELLS, bool))
    return AnchorCache(point=jnp.zeros(capacity, dtype), members=jnp.zeros(capacity, jnp.int32),
                       count=jnp.asarray(-1, jnp.int32), table=fits)


def grid_cell(log_delta2) -> jnp.ndarray:
    """The grid cell of log delta2 (nearest node; clipped to the grid's ends, so every delta2 has one)."""
    cell = jnp.round(log_delta2 / GRID_STEP) + GRID_HALF
    return jnp.clip(jnp.where(jnp.isnan(cell), GRID_HALF, cell), 0, GRID_CELLS - 1).astype(jnp.int32)


def grid_log_delta2(cell) -> jnp.ndarray:
    return (cell - GRID_HALF) * GRID_STEP


def _scatter_slots(values: jnp.ndarray, layout: GroupLayout, n: int) -> jnp.ndarray:
    flat = jnp.where(layout.valid, layout.index, n).ravel()
    return jnp.zeros(n, values.dtype).at[flat].set(values.ravel(), mode="drop")


def _collapsed_terms(f: jnp.ndarray, data: CollapsedData, marginals: bool):
    """(log p(obs_g | f) (G,), P(z_i > 0 | f, obs) (N,) or None, log Phi(f) (N,), log Phi(-f) (N,)).

    Pure groups (known signs) directly; the others through the orthant sampler's forward pass (its gradient
    gives the sign marginals when ``marginals``)."""
    layout = data.layout
    lp, lq = log_ndtr_pair(f)
    lp_s, lq_s = lp[layout.index], lq[layout.index]
    general = data.log_weight is not None or data.dp_groups is None
    if general:
        if marginals:
            groups, share = sign_marginals_from_log_probs(lp_s, lq_s, layout, data.kind, data.log_weight)
        else:
            groups = group_log_likelihood_from_log_probs(lp_s, lq_s, layout, data.kind, data.log_weight)
    else:
        positive, groups = pure_group_terms(lp_s, lq_s, layout, data.kind)
        share = positive.astype(lp.dtype)
        dp = data.dp_groups
        if dp.shape[0] > 0:
            sub = sub_layout(layout, dp)
            if marginals:
                g_dp, s_dp = sign_marginals_from_log_probs(lp_s[dp], lq_s[dp], sub, data.kind[dp])
                share = share.at[dp].set(s_dp)
            else:
                g_dp = group_log_likelihood_from_log_probs(lp_s[dp], lq_s[dp], sub, data.kind[dp])
            groups = groups.at[dp].set(g_dp)
    pi = _scatter_slots(share, layout, f.shape[0]) if marginals else None
    return groups, pi, lp, lq


def collapsed_group_log_likelihood(f: jnp.ndarray, data: CollapsedData) -> jnp.ndarray:
    """(G,) log p(obs_g | f) with Z integrated out (pure groups directly, the others by the forward pass)."""
    return _collapsed_terms(f, data, marginals=False)[0]


_group_log_likelihood = collapsed_group_log_likelihood


def score_and_curvature(f: jnp.ndarray, data: CollapsedData):
    """(g, w), both (N,): g_i = d/df_i sum_g log p(obs_g | f) = pi_i lambda(f_i) - (1 - pi_i) lambda(-f_i) with
    pi_i = P(z_i > 0 | f, obs); w_i = pi_i c(f_i) + (1 - pi_i) c(-f_i), c(t) = lambda(t) (lambda(t) + t) in (0, 1)
    the curvature of -log Phi(t): the expected curvature over the signs (the observed one minus the variance of
    the score; positive, and exact when the signs are known)."""
    _, pi, lp, lq = _collapsed_terms(f, data, marginals=True)
    h_pos, h_neg = probit_hazards(f, lp, lq)
    g = pi * h_pos - (1.0 - pi) * h_neg
    w = pi * h_pos * (h_pos + f) + (1.0 - pi) * h_neg * (h_neg - f)
    return g, w


def _precision(rows, w, gram_a, mask, delta2):
    """P = Psi_a' W Psi_a + A_aa / delta2 on the used slots, identity on the others."""
    return (rows * w) @ rows.T + gram_a / delta2 + jnp.diag(jnp.where(mask, 0.0, 1.0))


def newton_fit(start, rows, gram_a, mask, data: CollapsedData, delta2_of: Callable, n_steps: int):
    """``n_steps`` (>= 1) Newton steps on log p(obs | Psi_a beta) - beta' A_aa beta / (2 delta2), delta2 =
    delta2_of(beta) (a constant, or the EM weight of the delta2-marginal for the anchor). Returns (point,
    Cholesky factor of the precision at the last step's start: the proposal's, saving one evaluation)."""
    def step(_, carry):
        beta, _ = carry
        delta2 = delta2_of(beta)
        g, w = score_and_curvature(beta @ rows, data)
        grad = rows @ g - gram_a @ beta / delta2
        chol = cholesky_lower(_precision(rows, w, gram_a, mask, delta2))
        new = jnp.where(mask, beta + solve_lower_transpose(chol, solve_lower(chol, grad)), 0.0)
        ok = jnp.all(jnp.isfinite(new)) & jnp.all(jnp.isfinite(chol))
        # a failed step (non-finite) leaves the point alone
        return jnp.where(ok, new, beta), jnp.where(ok, chol, jnp.eye(chol.shape[0], dtype=chol.dtype))
    return lax.fori_loop(0, n_steps, step, (start, jnp.eye(start.shape[0], dtype=start.dtype)))


def laplace_fit(anchor: jnp.ndarray, rows, gram_a, mask, data: CollapsedData, delta2,
                n_steps: int = NEWTON_STEPS) -> LaplaceFit:
    """The proposal at delta2: ``n_steps`` Newton steps from the anchor; the precision is the one of the
    last step (at the point before it: any deterministic choice keeps the move exact)."""
    mean, chol = newton_fit(anchor, rows, gram_a, mask, data, lambda b: delta2, n_steps)
    return LaplaceFit(mean=mean, chol=chol, log_det_half=jnp.sum(jnp.log(jnp.diag(chol))))


def proposal_fit(cache: AnchorCache, rows, gram_a, mask, data: CollapsedData, log_delta2):
    """The proposal fit at log delta2 and the (possibly updated) cache. Without a table: ``laplace_fit`` at
    delta2 itself. With one: the fit at the nearest grid node, computed once (``TABLE_NEWTON_STEPS`` from the
    anchor) and then looked up. Either way a deterministic function of (gamma, delta2), as exactness needs."""
    if cache.table is None:
        return laplace_fit(cache.point, rows, gram_a, mask, data, jnp.exp(log_delta2)), cache
    cell = grid_cell(log_delta2)

    def fill(table: FitTable) -> FitTable:
        fit = laplace_fit(cache.point, rows, gram_a, mask, data, jnp.exp(grid_log_delta2(cell)),
                          TABLE_NEWTON_STEPS)
        return FitTable(mean=table.mean.at[cell].set(fit.mean), chol=table.chol.at[cell].set(fit.chol),
                        log_det_half=table.log_det_half.at[cell].set(fit.log_det_half),
                        filled=table.filled.at[cell].set(True))

    table = lax.cond(cache.table.filled[cell], lambda t: t, fill, cache.table)
    fit = LaplaceFit(mean=table.mean[cell], chol=table.chol[cell], log_det_half=table.log_det_half[cell])
    return fit, cache._replace(table=table)


def ensure_anchor(cache: AnchorCache, aset: ActiveSet, rows, gram_a, data: CollapsedData, alpha0, beta0):
    """The cached anchor if it belongs to this active set, else a new one: ``ANCHOR_STEPS`` Newton steps from 0
    on the delta2-marginal posterior (IG(alpha0, beta0) prior; the EM weight delta2 = (beta0 + quad / 2) /
    (alpha0 + K / 2) at each step). A lax.cond: a real branch for one chain or chains run one after the other;
    under vmap both sides run (a one-trip while loop, as in ``mil_gibbs.refresh_if_inaccurate``, hung XLA on
    CPU here for batches of ~3000 chains)."""
    mask = slot_mask(aset)
    same = (cache.count == aset.count) & jnp.all(jnp.where(mask, cache.members == aset.members, True))
    k = aset.count.astype(gram_a.dtype)

    def rebuild(c):
        em_delta2 = lambda b: (beta0 + 0.5 * b @ gram_a @ b) / (alpha0 + 0.5 * k)  # noqa: E731
        point, _ = newton_fit(jnp.zeros_like(c.point), rows, gram_a, mask, data, em_delta2, ANCHOR_STEPS)
        table = None if c.table is None else c.table._replace(filled=jnp.zeros_like(c.table.filled))
        return AnchorCache(point=point, members=aset.members.astype(c.members.dtype),
                           count=aset.count.astype(c.count.dtype), table=table)

    return lax.cond(same, lambda c: c, rebuild, cache)


def _t_log_density(beta, fit: LaplaceFit, k):
    """log t_nu(beta; mean, P^{-1}) up to terms in K alone (they cancel: gamma is fixed during the move)."""
    u = fit.chol.T @ (beta - fit.mean)
    return -0.5 * (T_DOF + k) * jnp.log1p(u @ u / T_DOF) + fit.log_det_half


def _t_draw(normal, chi_square_gamma, fit: LaplaceFit, mask):
    """mean + P^{-1/2} e sqrt(nu / chi2_nu); chi_square_gamma ~ Gamma(nu / 2, 1) (chi2_nu = 2 x it)."""
    e = jnp.where(mask, normal, 0.0) * jnp.sqrt(T_DOF / (2.0 * chi_square_gamma))
    return fit.mean + solve_lower_transpose(fit.chol, e)


def chi_square_shapes(tries: int) -> jnp.ndarray:
    """Shapes of the Gamma draws the move needs (one per proposal), to be drawn with the sweep's other ones."""
    return jnp.full(1 + tries, 0.5 * T_DOF)


def log_target(loglik, quad, log_delta2, k, delta2_log_prior: Callable):
    """log pi(beta_a, log delta2) up to a constant (gamma fixed): log-likelihood - quad / (2 delta2)
    - K/2 log delta2 + log p(delta2) + log delta2 (the last: the density of log delta2)."""
    delta2 = jnp.exp(log_delta2)
    return loglik - 0.5 * quad / delta2 - 0.5 * k * log_delta2 + delta2_log_prior(delta2) + log_delta2


def collapsed_beta_move(key, beta, delta2, anchor: AnchorCache, aset: ActiveSet, rows, gram_a: jnp.ndarray,
                        data: CollapsedData, delta2_log_prior: Callable, log_delta2_step, chi_square_gamma,
                        tries: int):
    """One joint (log delta2, beta) try and ``tries`` independence tries of beta (module docstring).

    beta (K_max,) in slot order; anchor: the cache of this active set (``ensure_anchor``); rows (K_max, N) =
    Psi_a'; gram_a (K_max, K_max) = ``active_gram``; chi_square_gamma (1 + tries,) Gamma(nu/2, 1) draws.
    Returns (beta, delta2, group log-likelihoods (G,) at the returned beta, number of accepted tries, the cache
    with any fits it memoized)."""
    mask = slot_mask(aset)
    k = aset.count.astype(beta.dtype)
    loglik_groups = lambda b: _group_log_likelihood(b @ rows, data)  # noqa: E731
    target = lambda b, ld2, groups: log_target(jnp.sum(groups), b @ gram_a @ b, ld2, k,  # noqa: E731
                                               delta2_log_prior)
    keys = jax.random.split(key, 3 + 2 * tries)
    log_d2 = jnp.log(delta2)
    fit, anchor = proposal_fit(anchor, rows, gram_a, mask, data, log_d2)
    groups = loglik_groups(beta)
    current = target(beta, log_d2, groups) - _t_log_density(beta, fit, k)

    def accept(key, log_ratio):
        # a NaN ratio (overflowed proposal) is a rejection
        return jnp.log(jax.random.uniform(key)) < jnp.where(jnp.isnan(log_ratio), -jnp.inf, log_ratio)

    # joint try: random walk on log delta2, beta from the proposal at the new delta2
    log_d2_new = log_d2 + log_delta2_step * jax.random.normal(keys[0])
    fit_new, anchor = proposal_fit(anchor, rows, gram_a, mask, data, log_d2_new)
    beta_new = _t_draw(jax.random.normal(keys[1], beta.shape), chi_square_gamma[0], fit_new, mask)
    groups_new = loglik_groups(beta_new)
    proposed = target(beta_new, log_d2_new, groups_new) - _t_log_density(beta_new, fit_new, k)
    ok = accept(keys[2], proposed - current)
    pick = lambda new, old: jnp.where(ok, new, old)  # noqa: E731
    beta, log_d2, groups, current = pick(beta_new, beta), pick(log_d2_new, log_d2), pick(groups_new, groups), \
        pick(proposed, current)
    fit = jax.tree_util.tree_map(pick, fit_new, fit)
    n_accepted = ok.astype(jnp.int32)

    # independence tries at the current delta2 (each costs one likelihood evaluation)
    def independence_try(carry, xs):
        beta, groups, current, n_acc = carry
        k_normal, k_accept, chi = xs
        cand = _t_draw(jax.random.normal(k_normal, beta.shape), chi, fit, mask)
        cand_groups = loglik_groups(cand)
        value = target(cand, log_d2, cand_groups) - _t_log_density(cand, fit, k)
        take = accept(k_accept, value - current)
        return (jnp.where(take, cand, beta), jnp.where(take, cand_groups, groups), jnp.where(take, value, current),
                n_acc + take.astype(jnp.int32)), None

    if tries > 0:
        xs = (keys[3::2][:tries], keys[4::2][:tries], chi_square_gamma[1:])
        (beta, groups, current, n_accepted), _ = lax.scan(independence_try, (beta, groups, current, n_accepted),
                                                          xs)
    return beta, jnp.exp(log_d2), groups, n_accepted, anchor
