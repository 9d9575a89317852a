"""Variational EM for MCVQ (Ross 2003, thesis Sec. 2.3, 4.2): an annealed ``lax.scan`` over a NamedTuple state.

One iteration = E-step (m, then z for the clustered model) followed by the M-step (mu and sigma, g at the current
inverse temperature 1/T, then a, b, beta); each is the exact minimiser of the free energy F_T in its block (see
``zoo.inference.mcvq.steps``), so F_T never increases at a fixed T. The temperature schedule is linear from
``t_start`` (the thesis: "an integer less than C") down to 1 over ``n_anneal`` iterations, then stays at 1.
Restarts run as a ``vmap`` over independent initial states (one chain = one restart).
"""
from __future__ import annotations

import functools
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from zoo.inference.mcvq.steps import (MCVQParams, MCVQPosterior, PriorConcentrations, data_term, e_step_classes,
                           e_step_states, expected_energy, free_energy, m_step_gaussians,
                           m_step_ownership, m_step_priors, state_weights, sufficient_statistics)

__all__ = ["MCVQConfig", "MCVQState", "temperature_schedule", "initialize", "em_iteration", "run_variational_em"]


class MCVQConfig(NamedTuple):
    """Static settings: ``update_classes`` (clustered model: z is inferred), ``update_beta`` (beta re-estimated),
    ``with_beta_prior`` (a Dirichlet prior on beta enters F)."""
    update_classes: bool = False
    update_beta: bool = False
    with_beta_prior: bool = False


class MCVQState(NamedTuple):
    params: MCVQParams
    post: MCVQPosterior


def temperature_schedule(n_iter: int, t_start: float, n_anneal: int) -> np.ndarray:
    """(n_iter,) temperatures T: linear from ``t_start`` to 1 over the first ``n_anneal`` iterations, then 1."""
    if n_iter < 1:
        raise ValueError(f"max_iter: expected at least 1 iteration, got {n_iter}")
    if t_start < 1:
        raise ValueError(f"t_start: the temperature must start at 1 or above, got {t_start}")
    if not 0 <= n_anneal <= n_iter:
        raise ValueError(f"anneal_iters: expected 0..max_iter={n_iter}, got {n_anneal}")
    temps = np.ones(n_iter)
    if n_anneal > 1:
        temps[:n_anneal] = np.linspace(t_start, 1.0, n_anneal)
    return temps


@functools.partial(jax.jit, static_argnames=("n_vqs", "n_states", "n_classes", "random_class_priors"))
def initialize(key, X, M, n_vqs: int, n_states: int, n_classes: int, sigma_floor: float,
               z_init: jnp.ndarray | None = None, random_class_priors: bool = False) -> MCVQState:
    """A random initial state: each state's mean is a random training case (column means at its missing
    entries), sigma the per-dimension standard deviation, g uniform with a small jitter, a and b uniform
    (b random per class when ``random_class_priors``, which breaks the symmetry of the clustered model)."""
    C, D = X.shape
    K, J, N = n_vqs, n_states, n_classes
    k_cases, k_g, k_b, k_z = jax.random.split(key, 4)
    counts = M.sum(0)
    col_mean = X.sum(0) / counts
    col_var = (X * X).sum(0) / counts - col_mean ** 2
    col_std = jnp.maximum(jnp.sqrt(jnp.maximum(col_var, 0.0)), sigma_floor)
    cases = jax.random.choice(k_cases, C, shape=(K * J,), replace=C < K * J)
    means = jnp.where(M[cases] > 0, X[cases], col_mean[None])                     # (KJ, D)
    mu = means.T.reshape(D, K, J)
    sigma = jnp.broadcast_to(col_std[:, None, None], (D, K, J))
    g = jax.nn.softmax(0.01 * jax.random.normal(k_g, (D, K)), axis=-1)
    a = jnp.full((D, K), 1.0 / K)
    if random_class_priors:
        b = jax.random.dirichlet(k_b, jnp.full((J,), 5.0), shape=(N, K))
    else:
        b = jnp.full((N, K, J), 1.0 / J)
    if z_init is None:
        z_init = (jax.random.dirichlet(k_z, jnp.ones(N), shape=(C,)) if N > 1 else jnp.ones((C, 1)))
    beta = z_init.mean(0)
    m = jnp.full((C, N, K, J), 1.0 / J)
    return MCVQState(MCVQParams(mu=mu, sigma=sigma, a=a, b=b, beta=beta), MCVQPosterior(g=g, m=m, z=z_init))


def em_iteration(state: MCVQState, temperature, X, M, conc: PriorConcentrations, sigma_floor,
                 config: MCVQConfig, weight=None, data_axis=None) -> tuple[MCVQState, jnp.ndarray]:
    """One variational EM iteration at temperature T; returns the new state and F_T after it. ``weight`` (C,),
    ``data_axis``: this shard's cases of a data-sharded fit (zoo.inference.sharding.run_variational_em_sharded):
    padding cases (weight 0) get z = 0, which removes them from every sum; the sums over cases are psum'd."""
    params, post = state
    # E-step (Sec. 2.3; Sec. 4.2.1 for z): exact block optima given g, mu, sigma, b, beta
    L = data_term(X, M, post.g, params.mu, params.sigma)
    m = e_step_states(L, params.b)
    z = e_step_classes(L, params.b, params.beta) if config.update_classes else post.z
    if weight is not None:
        z = z * weight[:, None]
    post = post._replace(m=m, z=z)
    # M-step: mu, sigma (weighted moments), then g (annealed), then the priors a, b, beta
    stats = sufficient_statistics(X, M, state_weights(post))
    stats = stats if data_axis is None else jax.lax.psum(stats, data_axis)
    mu, sigma = m_step_gaussians(stats, params.mu, params.sigma, sigma_floor)
    energy_dk = expected_energy(stats, mu, sigma)
    g = m_step_ownership(energy_dk, params.a, temperature)
    post = post._replace(g=g)
    a, b, beta = m_step_priors(post, temperature, conc, config.update_beta, data_axis)
    params = MCVQParams(mu=mu, sigma=sigma, a=a, b=b, beta=params.beta if beta is None else beta)
    F = free_energy((g * energy_dk).sum(), params, post, temperature, conc, config.with_beta_prior, data_axis)
    return MCVQState(params, post), F


@functools.partial(jax.jit, static_argnames=("config",))
def _run_chunk(states: MCVQState, temps, X, M, conc: PriorConcentrations, sigma_floor, config: MCVQConfig):
    """Every restart through the temperatures ``temps`` (compiled once per shape and config, reused across fits)."""
    def one_restart(state):
        def body(s, t):
            return em_iteration(s, t, X, M, conc, sigma_floor, config)
        return jax.lax.scan(body, state, temps)
    return jax.vmap(one_restart)(states)


def run_variational_em(init_states: MCVQState, X, M, temperatures, conc: PriorConcentrations, sigma_floor: float,
                       config: MCVQConfig, chunk: int = 10,
                       progress: Callable[[int], None] | None = None) -> tuple[MCVQState, np.ndarray]:
    """Run every restart (leading axis of ``init_states``) through ``temperatures`` (one iteration each).

    Returns the final states (stacked over restarts) and the free-energy trace (restarts, iterations). The scan
    runs in chunks of ``chunk`` iterations so ``progress(n_done)`` can drive a progress bar.
    """
    X = jnp.asarray(X)
    M = jnp.asarray(M, dtype=X.dtype)
    temperatures = jnp.asarray(temperatures, dtype=X.dtype)
    sigma_floor = jnp.asarray(sigma_floor, dtype=X.dtype)
    state = init_states
    traces = []
    n_iter = temperatures.shape[0]
    for start in range(0, n_iter, chunk):
        state, trace = _run_chunk(state, temperatures[start:start + chunk], X, M, conc, sigma_floor, config)
        traces.append(np.asarray(trace))
        if progress is not None:
            progress(min(chunk, n_iter - start))
    return state, np.concatenate(traces, axis=1)
