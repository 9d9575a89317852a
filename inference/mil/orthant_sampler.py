"""Exact samplers of the latent utilities Z of a group under orthant constraints (Kueck 2004, Sec. 3-4).

Within group g, z_i ~ N(f_i, 1) independently a priori, and the group's observation depends on Z only through the
sign pattern s_i = 1[z_i > 0]:

- constraint labels restrict the pattern: "negative" (no positive), "positive" (no negative), "mixed" (at least
  one of each), MIL "at least one positive";
- the measurement model weighs it by Beta(m_g; chi lambda + 1, chi (1 - lambda) + 1), lambda = k / n_g with
  k = sum_i s_i (MODELS.md Sec. 5); the hybrid model does both.

So p(s | f) ∝ prod_i Phi(f_i)^{s_i} Phi(-f_i)^{1 - s_i} w_g(s), and given s each z_i is a univariate truncated
normal. We draw s EXACTLY:

- ``sample_signs_constrained``: sequentially, each sign given the ones before it, with the probability that the
  remaining instances can still meet the label (from suffix sums of log Phi(+-f)); O(n) per group, every
  constraint label (pure groups included);
- ``sample_signs_by_count``: the count of positives so far, O(n^2) per group; covers any weight w_g(k)
  (measurement, hybrid, constraints as w(k) in {0, 1}).

Groups are padded to a common length n_max; ``valid`` marks real instances. Everything is in log space
(log Phi by ``truncated_normal.log_ndtr_pair``), so |f| up to hundreds is fine. The forward pass also yields log p(observation_g | f),
the group's log-likelihood (used for ``az.loo``).

The thesis' Metropolis samplers (independence MH for constrained groups, random walk with step 2.4/sqrt(n_g)
for weighted ones) are ``mh_constrained_step`` and ``mh_weighted_step``, kept for comparison.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax
from jax.scipy.special import betaln, logsumexp, xlogy

from zoo.inference.mil.constraint_codes import AT_LEAST_ONE, MIXED, NEGATIVE, POSITIVE
from zoo.inference.truncated_normal import log_ndtr_pair, sample_orthant_normal

__all__ = ["GroupLayout", "SignDraw", "constraint_flags", "measurement_log_weight", "count_constraint_log_weight",
           "sample_signs_constrained", "sample_signs_split", "sample_signs_by_count", "pattern_log_weight",
           "mh_constrained_step", "mh_weighted_step", "group_signs_satisfy", "draw_z_given_signs",
           "group_log_likelihood", "sign_marginals", "sub_layout", "pure_group_terms", "sign_marginals_from_log_probs",
           "group_log_likelihood_from_log_probs"]

NEG_INF = -jnp.inf
_FINITE_LOG_ZERO = -1e300


class GroupLayout(NamedTuple):
    """Padded group structure over N instances.

    index (G, n_max) int: instance index of each slot (padding slots point at instance 0);
    valid (G, n_max) bool: real slot; size (G,) int: n_g.
    """
    index: jnp.ndarray
    valid: jnp.ndarray
    size: jnp.ndarray


class SignDraw(NamedTuple):
    positive: jnp.ndarray   # (G, n_max) bool, the drawn sign pattern (False on padding)
    log_norm: jnp.ndarray   # (G,) log sum over patterns of prod Bern * weight = log p(obs_g | f)


def _flags(kind):
    need_pos = (kind == MIXED) | (kind == AT_LEAST_ONE)
    need_neg = kind == MIXED
    forbid_pos = kind == NEGATIVE
    forbid_neg = kind == POSITIVE
    return need_pos, need_neg, forbid_pos, forbid_neg


def constraint_flags(kind: jnp.ndarray) -> tuple:
    """Flags (need_pos, need_neg, forbid_pos, forbid_neg) of constraint codes.

    Codes (``zoo.inference.mil.constraint_codes``): NEGATIVE (all z < 0), MIXED (>= 1 of each), POSITIVE (all
    z > 0), AT_LEAST_ONE (at least one positive), FREE (no constraint; measurement-only groups).
    """
    return _flags(jnp.asarray(kind))


def count_constraint_log_weight(kind: jnp.ndarray, size: jnp.ndarray, n_max: int) -> jnp.ndarray:
    """(G, n_max + 1) log indicator over counts k of the constraint codes (see ``constraint_flags``)."""
    k = jnp.arange(n_max + 1)[None, :]
    n = size[:, None]
    kind = kind[:, None]
    ok = jnp.where(kind == NEGATIVE, k == 0,
         jnp.where(kind == MIXED, (k >= 1) & (k <= n - 1),
         jnp.where(kind == POSITIVE, k == n,
         jnp.where(kind == AT_LEAST_ONE, k >= 1, True))))
    return jnp.where(ok & (k <= n), 0.0, NEG_INF)


def measurement_log_weight(fraction: jnp.ndarray, size: jnp.ndarray, chi: float, n_max: int) -> jnp.ndarray:
    """(G, n_max + 1) log Beta(m_g; chi lambda + 1, chi (1 - lambda) + 1), lambda = k / n_g (MODELS.md Sec. 5)."""
    k = jnp.arange(n_max + 1)[None, :]
    n = jnp.maximum(size[:, None], 1)
    lam = jnp.clip(k / n, 0.0, 1.0)
    alpha = chi * lam + 1.0
    beta = chi * (1.0 - lam) + 1.0
    m = fraction[:, None]
    logw = xlogy(alpha - 1.0, m) + xlogy(beta - 1.0, 1.0 - m) - betaln(alpha, beta)
    return jnp.where(k <= size[:, None], logw, NEG_INF)


def _instance_log_probs(f: jnp.ndarray, layout: GroupLayout):
    """(G, n_max) log Phi(f_i), log Phi(-f_i) at the slots; padding contributes nothing (handled by ``valid``)."""
    return log_ndtr_pair(f[layout.index])


def _categorical(key, logits):
    """Gumbel-max draw of the last axis (logits may hold -inf)."""
    g = jax.random.gumbel(key, logits.shape)
    return jnp.argmax(jnp.where(jnp.isneginf(logits), NEG_INF, logits + g), axis=-1)


# --- summary state (any_pos, any_neg): state = any_pos + 2 any_neg -------------------------------------------

def _log1mexp(x):
    """log(1 - e^x) for x <= 0 (-inf at x = 0), accurate at both ends (Maechler 2012)."""
    x = jnp.minimum(x, 0.0)
    return jnp.where(x > -0.6931471805599453, jnp.log(-jnp.expm1(x)), jnp.log1p(-jnp.exp(x)))


def _log_supply(need_pos, need_neg, rest_lp, rest_lq):
    """log P(the remaining instances supply what is still needed) under independent signs, given the log
    probabilities that they are all positive (rest_lp) or all negative (rest_lq): a positive: 1 - e^rest_lq;
    a negative: 1 - e^rest_lp; both: 1 - e^rest_lq - e^rest_lp (inclusion-exclusion; for a non-empty rest
    "no positive and no negative" is impossible, and for an empty one the result is 0, as it should be)."""
    some_pos = _log1mexp(rest_lq)
    gap = jnp.where(jnp.isneginf(rest_lp), -jnp.inf, rest_lp - some_pos)
    both = some_pos + _log1mexp(gap)
    return jnp.where(need_pos & need_neg, both,
                     jnp.where(need_pos, some_pos, jnp.where(need_neg, _log1mexp(rest_lp), 0.0)))


def sample_signs_constrained(key: jax.Array, f: jnp.ndarray, layout: GroupLayout, kind: jnp.ndarray) -> SignDraw:
    """Exact draw of every group's sign pattern under its constraint code (``constraint_flags``), O(G n_max)."""
    lp, lq = _instance_log_probs(f, layout)
    return _signs_constrained_from_log_probs(key, lp, lq, layout, kind)


def sample_signs_split(key: jax.Array, f: jnp.ndarray, layout: GroupLayout, kind: jnp.ndarray,
                       dp_groups: jnp.ndarray) -> SignDraw:
    """``sample_signs_constrained`` when only the groups ``dp_groups`` (int (G_dp,)) can hold both signs.

    Every other group must be pure (NEGATIVE or POSITIVE): its pattern is known and its
    log-likelihood is sum_i log Phi(+-f_i); only the listed groups run the forward-backward pass."""
    lp, lq = _instance_log_probs(f, layout)
    positive, log_norm = pure_group_terms(lp, lq, layout, kind)
    if dp_groups.shape[0] == 0:
        return SignDraw(positive=positive, log_norm=log_norm)
    sub = sub_layout(layout, dp_groups)
    draw = _signs_constrained_from_log_probs(key, lp[dp_groups], lq[dp_groups], sub, kind[dp_groups])
    return SignDraw(positive=positive.at[dp_groups].set(draw.positive),
                    log_norm=log_norm.at[dp_groups].set(draw.log_norm))


def pure_group_terms(lp, lq, layout: GroupLayout, kind):
    """(sign pattern (G, n_max) bool, log p(observation_g | f) (G,)) of groups read as pure (POSITIVE: all
    positive, any other code: all negative) from the slot log-probabilities (lp, lq) = log Phi(+-f)."""
    positive_group = (kind == POSITIVE)[:, None]
    log_norm = jnp.sum(jnp.where(layout.valid, jnp.where(positive_group, lp, lq), 0.0), axis=1)
    return positive_group & layout.valid, log_norm


def sub_layout(layout: GroupLayout, groups) -> GroupLayout:
    """The layout of the listed groups only (int (G_sub,))."""
    return GroupLayout(index=layout.index[groups], valid=layout.valid[groups], size=layout.size[groups])


def _constrained_terms(lp, lq, layout: GroupLayout, kind):
    """Forbidden signs (pure groups) get log-probability -inf; the per-instance mass they remove,
    r_i = log(Phi(f_i) [allowed] + Phi(-f_i) [allowed]), enters the group's log-likelihood. Returns the
    renormalized (lp, lq), their exclusive suffix sums (rest_lp, rest_lq) and log p(observation_g | f) (G,)."""
    need_pos, need_neg, forbid_pos, forbid_neg = constraint_flags(kind)
    valid = layout.valid
    lp = jnp.where(forbid_pos[:, None], NEG_INF, lp)
    lq = jnp.where(forbid_neg[:, None], NEG_INF, lq)
    r = jnp.where(valid, jnp.logaddexp(lp, lq), 0.0)
    lp = jnp.where(valid, lp - r, 0.0)                  # renormalized; padding slots contribute log 1 = 0
    lq = jnp.where(valid, lq - r, 0.0)
    # inclusive suffix sums over slots (no subtraction: -inf entries stay exact); exclusive = next slot's
    incl_lp = jnp.cumsum(lp[:, ::-1], axis=1)[:, ::-1]
    incl_lq = jnp.cumsum(lq[:, ::-1], axis=1)[:, ::-1]
    pad = jnp.zeros((lp.shape[0], 1))
    rest_lp = jnp.concatenate([incl_lp[:, 1:], pad], axis=1)
    rest_lq = jnp.concatenate([incl_lq[:, 1:], pad], axis=1)
    log_norm = jnp.sum(r, axis=1) + _log_supply(need_pos, need_neg, incl_lp[:, 0], incl_lq[:, 0])
    return lp, lq, rest_lp, rest_lq, log_norm


def _signs_constrained_from_log_probs(key, lp, lq, layout: GroupLayout, kind) -> SignDraw:
    """Sequential exact draw: s_i | s_<i has odds Phi(f_i) R(after s_i = 1) : Phi(-f_i) R(after s_i = 0), where
    R is the probability that the instances after i still meet the group's needs (``_log_supply``, from suffix
    sums of log Phi(+-f)); see ``_constrained_terms`` for pure groups."""
    need_pos, need_neg, _, _ = constraint_flags(kind)
    valid = layout.valid
    lp, lq, rest_lp, rest_lq, log_norm = _constrained_terms(lp, lq, layout, kind)
    log_u = jnp.log(jax.random.uniform(key, lp.T.shape, minval=jnp.finfo(lp.dtype).tiny))

    def step(carry, xs):
        has_pos, has_neg = carry
        lp_i, lq_i, rest_lp_i, rest_lq_i, valid_i, log_u_i = xs
        logit_pos = lp_i + _log_supply(jnp.zeros_like(need_pos), need_neg & ~has_neg, rest_lp_i, rest_lq_i)
        logit_neg = lq_i + _log_supply(need_pos & ~has_pos, jnp.zeros_like(need_neg), rest_lp_i, rest_lq_i)
        positive = (log_u_i < logit_pos - jnp.logaddexp(logit_pos, logit_neg)) & valid_i
        return (has_pos | positive, has_neg | (~positive & valid_i)), positive

    start = (jnp.zeros(lp.shape[0], bool), jnp.zeros(lp.shape[0], bool))
    _, signs = lax.scan(step, start, (lp.T, lq.T, rest_lp.T, rest_lq.T, valid.T, log_u))
    return SignDraw(positive=signs.T, log_norm=log_norm)


def _count_forward(lp, lq, valid, log_zero=NEG_INF):
    """alpha_i(k) = log P(k positives among the first i slots), (G, n_max + 1) after all slots and before each.
    ``log_zero``: the log of an impossible count; a finite stand-in (e.g. -1e300, exp of it is 0 all the same)
    keeps reverse-mode derivatives finite (logaddexp(-inf, -inf) has a NaN derivative)."""
    n_groups, n_max = lp.shape
    alpha0 = jnp.full((n_groups, n_max + 1), log_zero).at[:, 0].set(0.0)

    def shift(a):  # a(k - 1)
        return jnp.concatenate([jnp.full((n_groups, 1), log_zero), a[:, :-1]], axis=1)

    def forward(alpha, xs):
        lp_i, lq_i, valid_i = xs
        new = jnp.logaddexp(alpha + lq_i[:, None], shift(alpha) + lp_i[:, None])
        return jnp.where(valid_i[:, None], new, alpha), alpha

    return lax.scan(forward, alpha0, (lp.T, lq.T, valid.T))


def _log_norm_from_log_probs(lp, lq, layout: GroupLayout, kind, log_weight):
    """(G,) log p(observation_g | f) = log sum_s prod_i Phi(f_i)^s_i Phi(-f_i)^(1 - s_i) w_g(s), as a function of
    the slot log-probabilities (lp, lq) taken as free variables (its gradient in lp is then P(s_i = 1 | obs))."""
    if log_weight is None:
        return _constrained_terms(lp, lq, layout, kind)[-1]
    n_max = lp.shape[1]
    alpha_n, _ = _count_forward(lp, lq, layout.valid, log_zero=_FINITE_LOG_ZERO)
    return logsumexp(alpha_n + log_weight + count_constraint_log_weight(kind, layout.size, n_max), axis=1)


def group_log_likelihood(f: jnp.ndarray, layout: GroupLayout, kind: jnp.ndarray,
                         log_weight: jnp.ndarray | None = None) -> jnp.ndarray:
    """(G,) log p(observation_g | f) with Z integrated out (the samplers' ``SignDraw.log_norm`` without drawing):
    constraint codes, plus the measurement weight over counts when ``log_weight`` (G, n_max + 1) is given."""
    lp, lq = _instance_log_probs(f, layout)
    return _log_norm_from_log_probs(lp, lq, layout, kind, log_weight)


def sign_marginals(f: jnp.ndarray, layout: GroupLayout, kind: jnp.ndarray, log_weight: jnp.ndarray | None = None):
    """(log p(observation_g | f) (G,), P(z_i > 0 | f, observations) per slot (G, n_max), 0 on padding).

    The marginal is the gradient of the log normalizer in the slot log-probabilities log Phi(f_i) (an
    exponential-family identity), so one reverse pass through the same forward computation gives all of them."""
    lp, lq = _instance_log_probs(f, layout)
    return sign_marginals_from_log_probs(lp, lq, layout, kind, log_weight)


def sign_marginals_from_log_probs(lp, lq, layout: GroupLayout, kind, log_weight=None):
    """``sign_marginals`` from the slot log-probabilities (lp, lq) = log Phi(+-f) at ``layout.index``."""
    def total(a):
        groups = _log_norm_from_log_probs(a, lq, layout, kind, log_weight)
        return jnp.sum(groups), groups

    (_, groups), grad_lp = jax.value_and_grad(total, has_aux=True)(lp)
    # pure groups are known exactly (and their gradient can be 0 * inf through the unused supply branches)
    _, _, forbid_pos, forbid_neg = constraint_flags(kind)
    share = jnp.where(jnp.isfinite(grad_lp), jnp.clip(grad_lp, 0.0, 1.0), 0.5)
    share = jnp.where(forbid_pos[:, None], 0.0, jnp.where(forbid_neg[:, None], 1.0, share))
    return groups, jnp.where(layout.valid, share, 0.0)


def group_log_likelihood_from_log_probs(lp, lq, layout: GroupLayout, kind, log_weight=None):
    """``group_log_likelihood`` from the slot log-probabilities (lp, lq) = log Phi(+-f) at ``layout.index``."""
    return _log_norm_from_log_probs(lp, lq, layout, kind, log_weight)


def sample_signs_by_count(key: jax.Array, f: jnp.ndarray, layout: GroupLayout, log_weight: jnp.ndarray) -> SignDraw:
    """Exact draw of every group's sign pattern with weight w_g(k) over the count k of positives.

    log_weight (G, n_max + 1): log w_g(k) (``measurement_log_weight`` + ``count_constraint_log_weight``).
    Forward: alpha_i(k) = log P(k positives among the first i). Backward: given k after instance i,
    P(s_i = 1) ∝ Phi(f_i) exp(alpha_{i-1}(k - 1)). O(G n_max^2).
    """
    lp, lq = _instance_log_probs(f, layout)
    n_groups, n_max = lp.shape
    alpha_n, alpha_before = _count_forward(lp, lq, layout.valid)
    end_logits = alpha_n + log_weight
    log_norm = logsumexp(end_logits, axis=1)
    key_end, key_back = jax.random.split(key)
    count_n = _categorical(key_end, end_logits)
    rows = jnp.arange(n_groups)

    def backward(count, xs):
        key_i, alpha_prev, lp_i, lq_i, valid_i = xs
        logit_pos = jnp.where(count >= 1, alpha_prev[rows, jnp.maximum(count - 1, 0)] + lp_i, NEG_INF)
        logit_neg = alpha_prev[rows, count] + lq_i
        positive = _categorical(key_i, jnp.stack([logit_neg, logit_pos], axis=1)) == 1
        positive = positive & valid_i
        return count - positive.astype(count.dtype), positive

    keys = jax.random.split(key_back, n_max)
    _, signs = lax.scan(backward, count_n, (keys, alpha_before, lp.T, lq.T, layout.valid.T), reverse=True)
    return SignDraw(positive=signs.T, log_norm=log_norm)


def pattern_log_weight(positive: jnp.ndarray, layout: GroupLayout, kind: jnp.ndarray,
                       log_weight: jnp.ndarray | None) -> jnp.ndarray:
    """(G,) log w_g(s) of sign patterns: constraint indicator (codes) plus the count weight if given."""
    count = jnp.sum(positive & layout.valid, axis=1)
    out = jnp.where(group_signs_satisfy(positive, layout, kind), 0.0, NEG_INF)
    if log_weight is not None:
        out = out + jnp.take_along_axis(log_weight, count[:, None], axis=1)[:, 0]
    return out


def group_signs_satisfy(positive: jnp.ndarray, layout: GroupLayout, kind: jnp.ndarray) -> jnp.ndarray:
    """(G,) bool: the sign pattern satisfies each group's constraint code."""
    need_pos, need_neg, forbid_pos, forbid_neg = constraint_flags(kind)
    any_pos = jnp.any(positive & layout.valid, axis=1)
    any_neg = jnp.any(~positive & layout.valid, axis=1)
    return (any_pos | ~need_pos) & (any_neg | ~need_neg) & ~(any_pos & forbid_pos) & ~(any_neg & forbid_neg)


def draw_z_given_signs(key: jax.Array, f: jnp.ndarray, layout: GroupLayout, positive: jnp.ndarray,
                       z_old: jnp.ndarray) -> jnp.ndarray:
    """Scatter univariate truncated normals z_i | s_i, f_i back to the (N,) vector (padding slots ignored)."""
    fg = f[layout.index]
    zg = sample_orthant_normal(key, fg, positive)
    flat_index = jnp.where(layout.valid, layout.index, f.shape[0])  # padding -> out of range, dropped
    return z_old.at[flat_index.ravel()].set(zg.ravel(), mode="drop")


# --- the thesis' Metropolis samplers (kept for comparison) --------------------------------------------------

def mh_constrained_step(key: jax.Array, z: jnp.ndarray, f: jnp.ndarray, layout: GroupLayout, kind: jnp.ndarray,
                        log_weight: jnp.ndarray | None = None):
    """Independence MH per group with the unrestricted N(f_g, I) as proposal (thesis Sec. 4.1).

    Target ∝ N(z_g; f_g, I) w_g(s(z_g)); with this proposal the acceptance ratio is w_g(s') / w_g(s).
    Returns (z_new, accepted (G,) bool).
    """
    k_prop, k_acc = jax.random.split(key)
    fg = f[layout.index]
    zg = z[layout.index]
    prop = fg + jax.random.normal(k_prop, fg.shape)
    log_ratio = pattern_log_weight(prop > 0, layout, kind, log_weight) - \
        pattern_log_weight(zg > 0, layout, kind, log_weight)
    log_ratio = jnp.where(jnp.isnan(log_ratio), NEG_INF, log_ratio)
    accept = jnp.log(jax.random.uniform(k_acc, log_ratio.shape)) < log_ratio
    new = jnp.where(accept[:, None], prop, zg)
    flat_index = jnp.where(layout.valid, layout.index, f.shape[0])
    return z.at[flat_index.ravel()].set(new.ravel(), mode="drop"), accept


def mh_weighted_step(key: jax.Array, z: jnp.ndarray, f: jnp.ndarray, layout: GroupLayout, kind: jnp.ndarray,
                     log_weight: jnp.ndarray | None):
    """Random-walk Metropolis per group, step 2.4 / sqrt(n_g) (thesis Sec. 4.1, measurement model)."""
    k_prop, k_acc = jax.random.split(key)
    fg = f[layout.index]
    zg = z[layout.index]
    step = 2.4 / jnp.sqrt(jnp.maximum(layout.size, 1))[:, None]
    prop = zg + step * jax.random.normal(k_prop, zg.shape)

    def log_target(v):
        gauss = -0.5 * jnp.sum(jnp.where(layout.valid, (v - fg) ** 2, 0.0), axis=1)
        return gauss + pattern_log_weight(v > 0, layout, kind, log_weight)

    log_ratio = log_target(prop) - log_target(zg)
    log_ratio = jnp.where(jnp.isnan(log_ratio), NEG_INF, log_ratio)
    accept = jnp.log(jax.random.uniform(k_acc, log_ratio.shape)) < log_ratio
    new = jnp.where(accept[:, None], prop, zg)
    flat_index = jnp.where(layout.valid, layout.index, f.shape[0])
    return z.at[flat_index.ravel()].set(new.ravel(), mode="drop"), accept
