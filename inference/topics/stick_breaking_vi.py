"""Truncated stick-breaking VI for the multi-modal HDP (Yakhnenko & Honavar, Sec. 2.5-2.6.3).

beta ~ GEM(alpha) truncated at K: stick proportions u_1..u_{K-1} ~ Beta(1, alpha) (u_K = 1), and
beta_k = u_k prod_{l<k} (1 - u_l).  Documents: pi_i ~ Dir(alpha_pi beta); the rest is MoM-LDA (``topic_vi``).

q(beta) is a point mass (as in the paper and Liang et al. 2007).  The paper maximizes its objective by gradient
ascent with a quadratic penalty for sum beta = 1; here beta is parameterized by the logits of its stick proportions,
so the constraint holds by construction, and the objective
    log p(u) + sum_i E_q[log Dir(pi_i; alpha_pi beta(u))]
is maximized with optax (Adam), keeping the best iterate so that the step never lowers the ELBO.
The other blocks are the exact coordinate updates of ``topic_vi``; the ELBO is recorded every iteration.
"""
from __future__ import annotations

import functools
from typing import Callable, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import optax
from jax.scipy.special import gammaln

from zoo.inference.driver import optimize_chunked
from zoo.inference.topics.topic_vi import (TopicVIState, cavi_iteration, dirichlet_expected_log, elbo, init_batched,
                       log_multinomial_coefficient, sparse_counts)

__all__ = ["HDPState", "stick_weights", "stick_proportions", "uniform_stick_logits", "geometric_stick_logits",
           "INITIAL_STICKS", "restart_stick_logits", "beta_objective",
           "optimize_sticks", "hdp_iteration", "hdp_elbo", "fit_stick_breaking", "hdp_chunk_batched",
           "restart_groups", "fit_by_start",
           "STICK_LOGIT_BOUND"]

#: logits are kept in [-B, B] so that u and 1 - u stay representable (beta_k >= ~1e-13 per break).
STICK_LOGIT_BOUND = 30.0


class HDPState(NamedTuple):
    """The MoM-LDA variational state plus the stick logits (K-1,) that define beta."""

    topic: TopicVIState
    stick_logits: jnp.ndarray


def stick_proportions(stick_logits: jnp.ndarray) -> jnp.ndarray:
    """u = sigmoid(logits), (K-1,)."""
    return jax.nn.sigmoid(stick_logits)


def stick_weights(stick_logits: jnp.ndarray) -> jnp.ndarray:
    """beta (K,) from K-1 stick logits: beta_k = u_k prod_{l<k} (1 - u_l), beta_K = prod_l (1 - u_l) (Sec. 2.3)."""
    log_u = jax.nn.log_sigmoid(stick_logits)
    log_rest = jax.nn.log_sigmoid(-stick_logits)
    log_beta = jnp.concatenate([log_u, jnp.zeros(1)]) + jnp.concatenate([jnp.zeros(1), jnp.cumsum(log_rest)])
    return jnp.exp(log_beta)


def uniform_stick_logits(n_topics: int) -> jnp.ndarray:
    """Stick logits (K-1,) of the uniform beta = 1/K: u_k = 1 / (K - k + 1), k = 1..K-1.

    The initial beta of the fit.  Starting at the prior mean of the sticks instead (u_k = E u = 1/(1+alpha), the
    geometric beta_k = 2^-k for alpha = 1) gives the last factors alpha_pi beta_k ~ 1e-6 at K = 20: a factor's
    E log pi_ik ~ -1/(alpha_pi beta_k) in every document that does not use it, and the beta step (its objective
    taken at fixed q(pi)) can then only grow beta_k by ~ I / (I - I_k) per iteration, so such factors stay
    switched off as a prior for tens of iterations while documents use them (bad held-out predictions).  Wang,
    Paisley & Blei (2011, onlinehdp.py; gensim HdpModel: var_sticks[1] = T-1..1) start the same way, at E beta = 1/T."""
    k = jnp.arange(1, n_topics, dtype=jnp.float64)
    u = 1.0 / (n_topics - k + 1.0)
    return jnp.log(u) - jnp.log1p(-u)


def geometric_stick_logits(n_topics: int, stick_mean: float) -> jnp.ndarray:
    """Stick logits (K-1,) with every stick proportion at the prior mean E u (Beta(1, alpha): 1 / (1 + alpha)), i.e.
    the geometric beta_k = E u (1 - E u)^(k-1) (2^-k for alpha = 1); u clipped to [1e-6, 1 - 1e-6]."""
    u = jnp.clip(jnp.full((n_topics - 1,), stick_mean, dtype=jnp.float64), 1e-6, 1.0 - 1e-6)
    return jnp.log(u) - jnp.log1p(-u)


#: the rules for the initial beta of each restart (``restart_stick_logits``)
INITIAL_STICKS = ("uniform", "geometric", "both")


def restart_stick_logits(n_topics: int, n_restarts: int, stick_mean: float, rule: str = "both") -> np.ndarray:
    """Initial stick logits (C, K-1) of C = ``n_restarts`` restarts: ``rule`` "uniform" (``uniform_stick_logits``)
    or "geometric" (``geometric_stick_logits`` at the prior mean ``stick_mean``) for every restart; "both": restart r
    starts uniform when r is even, geometric when r is odd.  The two starts end at different local optima (full
    Corel5k fit, T = 20: uniform -244,068, geometric -239,162; short fits favour uniform, see
    ``uniform_stick_logits``), so with "both" the final ELBO chooses between them."""
    if rule not in INITIAL_STICKS:
        raise ValueError(f"initial_sticks: expected one of {INITIAL_STICKS}, got {rule!r}")
    uniform = np.asarray(uniform_stick_logits(n_topics))
    geometric = np.asarray(geometric_stick_logits(n_topics, stick_mean))
    use_geometric = np.arange(n_restarts) % 2 == 1 if rule == "both" else np.full(n_restarts, rule == "geometric")
    return np.where(use_geometric[:, None], geometric[None, :], uniform[None, :]).reshape(n_restarts, n_topics - 1)


def beta_objective(stick_logits: jnp.ndarray, sum_log_pi: jnp.ndarray, n_docs: int | jnp.ndarray,
                   alpha_pi: float | jnp.ndarray, stick_log_prior: Callable) -> jnp.ndarray:
    """The part of the ELBO that depends on beta (Sec. 2.6.3), with sum_log_pi (K,) = sum_i E_q log pi_ik:
    log p(u) + I [log Gamma(alpha_pi) - sum_k log Gamma(alpha_pi beta_k)] + sum_k (alpha_pi beta_k - 1) S_k."""
    beta = stick_weights(stick_logits)
    conc = alpha_pi * beta
    return (stick_log_prior(stick_proportions(stick_logits))
            + n_docs * (gammaln(alpha_pi) - jnp.sum(gammaln(conc))) + jnp.sum((conc - 1.0) * sum_log_pi))


def optimize_sticks(stick_logits: jnp.ndarray, sum_log_pi: jnp.ndarray, n_docs, alpha_pi, stick_log_prior: Callable,
                    *, learning_rate: float = 0.05, num_steps: int = 25) -> jnp.ndarray:
    """Maximize ``beta_objective`` over the stick logits with optax Adam, returning the best iterate seen
    (the starting point included, so the objective never decreases)."""
    optimizer = optax.adam(learning_rate)

    def objective(x):
        return beta_objective(x, sum_log_pi, n_docs, alpha_pi, stick_log_prior)

    value_and_grad = jax.value_and_grad(objective)

    def body(carry, _):
        x, opt_state, best_x, best_value = carry
        value, grad = value_and_grad(x)
        better = value > best_value
        best_x = jnp.where(better, x, best_x)
        best_value = jnp.where(better, value, best_value)
        updates, opt_state = optimizer.update(-grad, opt_state, x)
        x = jnp.clip(optax.apply_updates(x, updates), -STICK_LOGIT_BOUND, STICK_LOGIT_BOUND)
        return (x, opt_state, best_x, best_value), None

    start_value = objective(stick_logits)
    carry = (stick_logits, optimizer.init(stick_logits), stick_logits, start_value)
    (x, _, best_x, best_value), _ = jax.lax.scan(body, carry, None, length=num_steps)
    return jnp.where(objective(x) > best_value, x, best_x)


def hdp_elbo(state: HDPState, etas: Sequence[jnp.ndarray], alpha_pi, stick_log_prior: Callable,
             log_coefficient=0.0, data_axis=None, doc_weight=None) -> jnp.ndarray:
    """The MoM-LDA ELBO with a = alpha_pi beta, plus log p(u) of the point-mass q(beta). ``data_axis``,
    ``doc_weight``: documents sharded (``topic_vi.elbo``)."""
    conc = alpha_pi * stick_weights(state.stick_logits)
    value = elbo(state.topic, conc, etas, log_coefficient, data_axis, doc_weight)
    return value + stick_log_prior(stick_proportions(state.stick_logits))


def hdp_iteration(state: HDPState, modalities, etas, alpha_pi, stick_log_prior: Callable, *, local_steps: int,
                  beta_steps: int, beta_learning_rate: float, optimize_beta: bool = True, data_axis=None,
                  doc_weight=None) -> HDPState:
    """One pass: q(t), q(s), q(pi) (``local_steps`` times), q(phi), then beta (Sec. 2.6.1-2.6.3).
    ``data_axis``, ``doc_weight`` (I,): this shard's documents of a sharded fit (zoo.inference.sharding); the
    sums over documents are psum'd, padding documents (weight 0) left out."""
    conc = alpha_pi * stick_weights(state.stick_logits)
    topic = cavi_iteration(state.topic, modalities, conc, etas, local_steps, data_axis)
    logits = state.stick_logits
    if optimize_beta and logits.shape[0] > 0:
        log_pi = dirichlet_expected_log(topic.gamma)
        if doc_weight is None:
            sum_log_pi, n_docs = log_pi.sum(axis=0), topic.gamma.shape[0]
        else:
            sum_log_pi = jnp.where(doc_weight[:, None] > 0, log_pi, 0.0).sum(axis=0)
            n_docs = doc_weight.sum()
        if data_axis is not None:
            sum_log_pi, n_docs = jax.lax.psum((sum_log_pi, n_docs), data_axis)
        logits = optimize_sticks(logits, sum_log_pi, n_docs, alpha_pi, stick_log_prior,
                                 learning_rate=beta_learning_rate, num_steps=beta_steps)
    return HDPState(topic=topic, stick_logits=logits)


def _hdp_chunk(state: HDPState, modalities, etas, alpha_pi, log_coefficient, stick_prior, *, local_steps,
               beta_steps, beta_learning_rate, optimize_beta, chunk):
    def stick_log_prior(u):
        return jnp.sum(stick_prior.log_prob(u))

    def body(s, _):
        s = hdp_iteration(s, modalities, etas, alpha_pi, stick_log_prior, local_steps=local_steps,
                          beta_steps=beta_steps, beta_learning_rate=beta_learning_rate, optimize_beta=optimize_beta)
        return s, hdp_elbo(s, etas, alpha_pi, stick_log_prior, log_coefficient)

    return jax.lax.scan(body, state, None, length=chunk)


@functools.partial(jax.jit, static_argnames=("local_steps", "beta_steps", "beta_learning_rate", "optimize_beta",
                                             "chunk"))
def hdp_chunk_batched(state, modalities, etas, alpha_pi, log_coefficient, stick_prior, **static):
    """``chunk`` iterations of every restart (leading axis of ``state``); jitted once per shape and prior family."""
    return jax.vmap(lambda s: _hdp_chunk(s, modalities, etas, alpha_pi, log_coefficient, stick_prior, **static))(state)


def fit_stick_breaking(keys: jax.Array, dense_modalities: Sequence[np.ndarray], n_topics: int,
                       etas: Sequence[jnp.ndarray], alpha_pi: float, stick_prior: dist.Distribution, *,
                       init_stick_logits: jnp.ndarray | None = None, optimize_beta: bool = True, max_iter: int = 200,
                       tol: float = 1e-6, local_steps: int = 3, beta_steps: int = 25,
                       beta_learning_rate: float = 0.05, chunk: int = 10, seed_docs_per_factor: int = 2,
                       progress: Callable | None = None, progress_bar: bool = False) -> tuple[HDPState, np.ndarray]:
    """MoM-HDP by truncated stick-breaking VI, one restart per key (``keys`` (C, 2)), vectorized over restarts.

    ``stick_prior`` is the distribution of each stick proportion u_k (the program's ``sticks`` site, e.g.
    Beta(1, alpha)); any scalar distribution on (0, 1) works since beta is optimized by gradient.
    ``init_stick_logits`` (K-1,): the starting beta; None: uniform (``uniform_stick_logits``).
    With ``optimize_beta=False`` beta stays at ``init_stick_logits`` (then this is MoM-LDA with a = alpha_pi beta).
    Chunks and ``progress`` as in ``topic_vi.fit_mean_field``.
    Returns the final state (leading axis C) and the ELBO trace (C, iterations)."""
    if progress_bar:
        raise ValueError("progress_bar: zoo.inference draws no progress bars; pass progress=<callback>")
    dense = [np.asarray(d, dtype=np.float64) for d in dense_modalities]
    modalities = tuple(sparse_counts(d) for d in dense)
    etas = tuple(jnp.asarray(e, dtype=jnp.float64) for e in etas)
    alpha_pi = jnp.asarray(alpha_pi, dtype=jnp.float64)
    if init_stick_logits is None:
        init_stick_logits = uniform_stick_logits(n_topics)
    logits0 = jnp.asarray(init_stick_logits, dtype=jnp.float64).reshape(n_topics - 1)
    conc0 = alpha_pi * stick_weights(logits0)
    log_coefficient = jnp.asarray(log_multinomial_coefficient(dense_modalities))
    chunk = max(1, min(int(chunk), int(max_iter)))
    topic = init_batched(keys, dense, n_topics, conc0, etas, seed_docs_per_factor)
    state = HDPState(topic, jnp.broadcast_to(logits0, (keys.shape[0],) + logits0.shape))
    static = dict(local_steps=local_steps, beta_steps=beta_steps, beta_learning_rate=beta_learning_rate,
                  optimize_beta=optimize_beta, chunk=chunk)
    return optimize_chunked(lambda s: hdp_chunk_batched(s, modalities, etas, alpha_pi, log_coefficient,
                                                         stick_prior, **static),
                            state, max_iter=max_iter, tol=tol, chunk=chunk, progress=progress)


def restart_groups(starts: np.ndarray) -> list:
    """Restarts with the same initial stick logits (rows of ``starts`` (C, K-1)), in order of first appearance:
    [array of restart indices, ...]."""
    groups: dict = {}
    for r, row in enumerate(np.asarray(starts, dtype=np.float64)):
        groups.setdefault(row.tobytes(), []).append(r)
    return [np.asarray(members) for members in groups.values()]


def fit_by_start(fit_fn: Callable, keys: jax.Array, starts: np.ndarray, *args, **kwargs):
    """``fit_fn(keys, *args, init_stick_logits=..., **kwargs)`` (``fit_stick_breaking`` or its data-sharded form)
    once per group of restarts sharing a start (``restart_groups``; each group vectorized), the results put back in
    restart order along the leading axis: (state, trace (C, iterations)).  A group that stopped earlier (relative
    ELBO change below ``tol``) keeps its last ELBO in the remaining entries of its trace."""
    groups = restart_groups(starts)
    runs = [fit_fn(keys[members], *args, init_stick_logits=jnp.asarray(np.asarray(starts)[members[0]]), **kwargs)
            for members in groups]
    if len(runs) == 1:
        return runs[0]
    length = max(trace.shape[-1] for _, trace in runs)
    traces = [np.pad(np.asarray(trace), ((0, 0), (0, length - trace.shape[-1])), mode="edge") for _, trace in runs]
    order = np.argsort(np.concatenate(groups))
    state = jax.tree_util.tree_map(lambda *xs: jnp.concatenate(xs)[order], *(s for s, _ in runs))
    return state, np.concatenate(traces)[order]
