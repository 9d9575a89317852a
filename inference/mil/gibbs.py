"""The blocked Gibbs sampler of Kueck (2004, Listing 4.1) as a NumPyro ``MCMCKernel``.

One sweep: {gamma, beta} then {delta2, Z}:
  gamma | delta2, Z (beta integrated out)   ``kernel_selection_sweep``
  beta  | gamma, delta2, Z                  ``draw_beta``
  (Z, beta) -> g (Z, beta)                 ``scale_move`` (marginal augmentation; not in the thesis, exact)
  delta2 | beta, gamma                      ``draw_delta2`` (or ``delta2_metropolis_step`` for other priors)
  (gamma, beta) with Z integrated out      ``jump.jump_move`` (``jump_tries``: birth / death / swap of gamma,
                                            beta carried between Laplace fits; not in the thesis, exact)
  (beta, delta2) with Z integrated out      ``collapsed_beta.collapsed_beta_move`` (``beta_move="laplace"``;
                                            not in the thesis, exact)
  Z | beta, gamma, group observations      exact sign-pattern sampler + truncated normals
                                            (``zoo.inference.mil.orthant_sampler``), or the thesis' Metropolis steps.
``build_mil_kernel(problem, config)`` gives the sampler in the shape of ``zoo.inference.driver`` (``init``, and
``mil_step``: (key, state) -> (state, MILInfo)), which ``driver.sample_chunked`` runs in compiled chunks and
``MILGibbs`` (``driver.KernelMCMC``) under ``numpyro.infer.MCMC``. The chain's state (``MILState``) holds the
chain alone: the key and the sweep statistics (``MILInfo``) are the driver's. For callers that loop over states
themselves, ``init_mil_state`` / ``state_from_position`` give a ``KeyedMILState`` (the state and its key) and
``mil_gibbs_sweep`` (keyed) -> keyed is the same sweep.
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist

from zoo.inference.mil.collapsed_beta import (AnchorCache, CollapsedData, chi_square_shapes, collapsed_beta_move,
                                          empty_anchor, ensure_anchor)
from zoo.inference.mil.constraint_codes import NEGATIVE, POSITIVE, PURE
from zoo.inference.driver import Kernel, KernelMCMC
from zoo.inference.mil.kernel_selection import (SelectionInfo, active_rows, delta2_metropolis_step,
                                            delta2_shape, draw_beta, draw_delta2, kernel_selection_sweep,
                                            prior_quadratic_form, scale_move, scale_move_shape)
from zoo.inference.mil.rows import KernelRows, row_source
from zoo.inference.mil.scale import SCALE_STEP, collapsed_scale_move
from zoo.inference.mil.swap import swap_move
from zoo.inference.mil.jump import FIT_STEPS, FitSteps, jump_move
from zoo.inference.linalg import ActiveSet, active_gram, active_set_from_mask, dense_inverse, slot_mask
from zoo.inference.mil.orthant_sampler import (GroupLayout, count_constraint_log_weight, draw_z_given_signs,
                                           mh_constrained_step, mh_weighted_step, sample_signs_by_count,
                                           sample_signs_constrained, sample_signs_split)

__all__ = ["MILProblem", "MILHyper", "MILConfig", "MILState", "KeyedMILState", "MILInfo", "MILGibbs",
           "build_mil_kernel", "mil_step", "mil_draw", "mil_position", "mil_gibbs_sweep", "init_mil_state",
           "initial_state", "z_update", "state_from_position", "mixed_groups", "problem_sizes", "MIL_STAT_FIELDS"]


class MILHyper(NamedTuple):
    """The prior settings as arrays (traced, so that swapping a prior reuses the compiled sampler), built from a
    spec's priors by ``zoo.papers.kueck04.mil_hyper`` (the one place that reads them): Beta(prior_a, prior_b) on
    tau; IG(delta2_alpha, delta2_beta) on delta2 (for another delta2 family, whose density is
    ``MILConfig.delta2_log_prob``, these two only shape the collapsed move's proposals); delta2's start value."""
    prior_a: jnp.ndarray
    prior_b: jnp.ndarray
    delta2_alpha: jnp.ndarray
    delta2_beta: jnp.ndarray
    delta2_init: jnp.ndarray


class MILProblem(NamedTuple):
    """The data side of the sampler (plain arrays) and the priors.

    psi (N, M) or None (with ``rows``): design K(x_i, c_j) of the training points (M = N basis functions centred
    on them, plus a column of ones with an intercept); gram (M, M): Psi'Psi + ridge I (precomputed once);
    layout: padded groups; kind (G,): constraint codes (``orthant_sampler.constraint_flags``);
    log_weight (G, n_max + 1) or None:
    measurement weight over counts; hyper: the prior settings (``MILHyper``); ridge: the absolute jitter added
    to gram's diagonal (traced: data-dependent, no recompile); dp_groups (G_dp,) int or None: the groups whose
    sign pattern is random (``mixed_groups``); the others are pure and skip the forward-backward pass. None:
    every group runs it (e.g. when ``kind`` is traced).
    basis_mask (M,) bool or None, n_instances () or None: a problem padded to shared shapes
    (``zoo.inference.mil.padding``): only the True columns are basis functions (masked centres are never born;
    the prior on gamma counts the True ones), and only the first ``n_instances`` rows are instances (the
    padding rows of psi are zero and belong to no group). None: no padding (the sweep is unchanged).
    rows (``mil_rows.KernelRows``) or None: the rows of Psi' computed when needed from the points, the centres
    and ``MILConfig.row_function`` (psi and psi_t are then None; not with padding).
    """
    psi: jnp.ndarray
    gram: jnp.ndarray
    layout: GroupLayout
    kind: jnp.ndarray
    log_weight: Optional[jnp.ndarray]
    ridge: jnp.ndarray
    dp_groups: Optional[jnp.ndarray]
    psi_t: Optional[jnp.ndarray]          # (M, N) = psi', contiguous basis functions; None: formed from psi
    hyper: MILHyper
    basis_mask: Optional[jnp.ndarray] = None
    n_instances: Optional[jnp.ndarray] = None
    rows: Optional[KernelRows] = None     # rows on demand (``mil_rows``): psi and psi_t None, no N x M matrix


class MILConfig(NamedTuple):
    """Static settings of the blocked Gibbs sampler (compiled in; the priors travel with the problem,
    ``MILProblem.hyper``): ``delta2_log_prob`` None = the conjugate IG update of delta2, else the log density of
    a non-conjugate delta2 prior with a random-walk Metropolis step; capacity K_max; initial active count; Z
    sampler; ``rescale`` switches the marginal-augmentation move off (the thesis' sweep)."""
    delta2_log_prob: Optional[Callable] = None
    capacity: int = 50
    n_init_active: int = 10
    z_sampler: str = "exact"          # "exact" | "mh"
    store_z: bool = False
    update_gamma: bool = True          # False: the active set stays fixed (beta, delta2, Z moves only)
    rescale: bool = True               # the marginal-augmentation move (``kernel_selection.scale_move``)
    beta_move: str = "gibbs"           # "laplace": add the Z-collapsed MH move of (beta, delta2) (collapsed_beta)
    laplace_tries: int = 2             # its independence tries per sweep (besides the joint try)
    laplace_table: Optional[bool] = None  # memoize its proposal fits on a log delta2 grid; None: when gamma is fixed
    scale_tries: int = 4               # Z-collapsed scale tries of (beta, delta2) per sweep (``mil_scale``); 0: off
    #                                    (z_sampler="exact" only: Z is then drawn afresh given the new f)
    scale_step: float = SCALE_STEP     # their random-walk step on log g
    swap_tries: int = 10               # swap proposals of gamma (one kernel out, one in) per sweep (``mil_swap``)
    jump_tries: int = 0                # Z-collapsed birth/death/swap tries of gamma, beta mapped along (``mil.jump``);
    #                                    0: off (z_sampler="exact" only: Z is then drawn afresh given the new f)
    jump_capacity: int = 20            # the largest active set the jumps start from or reach (their fits' size)
    jump_fit_steps: FitSteps = FIT_STEPS  # Newton steps of the jumps' Laplace fits (anchor, at delta2)
    jump_neighbour_swaps: bool = False  # the jumps' swaps propose a neighbour of the kernel leaving (``mil.jump``)
    jump_informed: bool = False        # the jumps' births and swaps propose by data-fit gain (``mil.jump``)
    jump_split_merge: bool = False     # the jumps also split one kernel into two neighbours / merge two (``mil.jump``)
    row_function: Optional[Callable] = None  # phi of the kernel, for ``MILProblem.rows`` (rows on demand)


class MILState(NamedTuple):
    """The chain: the sampled quantities and what the next sweep reuses (no key, no statistics: the driver keeps
    the key and ``mil_step`` returns the sweep's statistics as its info)."""
    position: dict                 # gamma (M,) int8, beta (M,) = gamma * beta, delta2, n_active [, z]
    aset: ActiveSet
    beta_active: jnp.ndarray       # (K_max,) in slot order
    delta2: jnp.ndarray
    z: jnp.ndarray                 # (N,)
    b_active: jnp.ndarray          # (K_max,) Psi_a' z in slot order (the next sweep's gamma moves need it)
    anchor: AnchorCache            # beta_move="laplace": the Newton start of the current active set

    @property
    def n_active(self) -> jnp.ndarray:
        return self.aset.count


class KeyedMILState(NamedTuple):
    """A chain with its key, for callers that loop over states themselves (``mil_gibbs_sweep``,
    ``advance_chains``); the chain's fields (position, delta2, z, n_active, ...) read through."""
    state: MILState
    rng_key: jax.Array

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.state, name)


class MILInfo(NamedTuple):
    """The statistics of one sweep (``mil_step``'s info)."""
    gamma_acceptance: jnp.ndarray  # accepted / proposed gamma flips
    n_active: jnp.ndarray
    z_acceptance: jnp.ndarray      # MH variants: share of non-pure groups whose proposal was accepted
    delta2_acceptance: jnp.ndarray
    capacity_hits: jnp.ndarray     # births refused because the active set was full
    beta_acceptance: jnp.ndarray   # beta_move="laplace": accepted / proposed collapsed tries
    scale_acceptance: jnp.ndarray  # scale_tries > 0: accepted / proposed Z-collapsed scale tries
    swap_acceptance: jnp.ndarray   # swap_tries > 0: accepted / proposed swaps of gamma
    jump_acceptance: jnp.ndarray   # jump_tries > 0: accepted / proposed Z-collapsed jumps of gamma
    log_likelihood: jnp.ndarray    # (G,) log p(observation_g | f)


MIL_STAT_FIELDS = MILInfo._fields


def _psi_t(problem: "MILProblem", config: Optional["MILConfig"] = None):
    """Where the sweep reads rows of Psi' from: psi_t (M, N), or a function j -> row with ``problem.rows``."""
    if problem.rows is not None:
        if config is None or config.row_function is None:
            raise ValueError("row_function: a problem with rows on demand needs MILConfig.row_function")
        return row_source(None, problem.rows, config.row_function)
    return problem.psi.T if problem.psi_t is None else problem.psi_t


def problem_sizes(problem: "MILProblem") -> tuple[int, int]:
    """(N, M): instances and basis functions, with or without a stored design matrix."""
    if problem.rows is not None:
        return problem.rows.x.shape[0], problem.rows.centres.shape[0]
    return problem.psi.shape


def _dense_beta(aset: ActiveSet, beta_active: jnp.ndarray, n: int) -> jnp.ndarray:
    idx = jnp.where(slot_mask(aset), aset.members, n)
    return jnp.zeros(n, beta_active.dtype).at[idx].set(beta_active, mode="drop")


def z_update(key: jax.Array, problem: MILProblem, f: jnp.ndarray, z: jnp.ndarray, z_sampler: str):
    """Z | f and the group observations. Returns (z, z_acceptance, log_likelihood (G,))."""
    layout, kind = problem.layout, problem.kind
    k_sign, k_tn, k_mh = jax.random.split(key, 3)
    if problem.log_weight is not None:
        n_max = layout.index.shape[1]
        log_w = problem.log_weight + count_constraint_log_weight(kind, layout.size, n_max)
        draw = sample_signs_by_count(k_sign, f, layout, log_w)
    elif problem.dp_groups is not None:
        draw = sample_signs_split(k_sign, f, layout, kind, problem.dp_groups)
    else:
        draw = sample_signs_constrained(k_sign, f, layout, kind)
    z_exact = draw_z_given_signs(k_tn, f, layout, draw.positive, z)
    if z_sampler == "exact":
        return z_exact, jnp.ones(()), draw.log_norm
    # thesis: pure groups exact truncated normals; the others by Metropolis
    pure = ((kind == NEGATIVE) | (kind == POSITIVE)) & (problem.log_weight is None)
    if problem.log_weight is None:
        z_mh, acc = mh_constrained_step(k_mh, z, f, layout, kind)
    else:
        z_mh, acc = mh_weighted_step(k_mh, z, f, layout, kind, problem.log_weight)
    pure_instance = jnp.zeros(z.shape[0], bool).at[jnp.where(layout.valid, layout.index, z.shape[0]).ravel()] \
        .set(jnp.broadcast_to(pure[:, None], layout.index.shape).ravel(), mode="drop")
    counted = ~pure & (layout.size > 0)           # (padding groups hold no instance)
    n_mh = jnp.maximum(jnp.sum(counted), 1)
    return jnp.where(pure_instance, z_exact, z_mh), jnp.sum(acc & counted).astype(jnp.float64) / n_mh, draw.log_norm


def mixed_groups(kind, log_weight) -> Optional[np.ndarray]:
    """(G_dp,) indices of the groups whose sign pattern the Z step must draw (``MILProblem.dp_groups``), from
    concrete label codes; None with measurement weights (every group runs the count DP then)."""
    if log_weight is not None:
        return None
    kind = np.asarray(kind)
    return np.flatnonzero(~np.isin(kind, PURE))


def _position(state_parts, n: int, store_z: bool) -> dict:
    aset, beta_active, delta2, z = state_parts
    gamma = (aset.slot_of >= 0).astype(jnp.int8)
    pos = {"gamma": gamma, "beta": _dense_beta(aset, beta_active, n), "delta2": delta2, "n_active": aset.count}
    if store_z:
        pos["z"] = z
    return pos


def _fit_table(config) -> bool:
    """Whether the collapsed move memoizes its proposal fits (``collapsed_beta.FitTable``): by default when the
    active set stays fixed (with kernel selection the set changes often and each change empties the table)."""
    if config.beta_move != "laplace":
        return False
    return (not config.update_gamma) if config.laplace_table is None else bool(config.laplace_table)


def _new_state(problem, config, aset, beta_active, delta2, z) -> MILState:
    """A state with the derived fields (position, b_active, an empty anchor) filled in."""
    return MILState(position=_position((aset, beta_active, delta2, z), problem_sizes(problem)[1], config.store_z),
                    aset=aset, beta_active=beta_active, delta2=delta2, z=z,
                    b_active=active_rows(aset, _psi_t(problem, config)) @ z,
                    anchor=empty_anchor(config.capacity, problem.gram.dtype, table=_fit_table(config)))


def init_mil_state(key: jax.Array, problem: MILProblem, config: MILConfig) -> KeyedMILState:
    """``initial_state`` with the key of its first sweep (``KeyedMILState``, for ``mil_gibbs_sweep``)."""
    return KeyedMILState(*initial_state(key, problem, config))


def initial_state(key: jax.Array, problem: MILProblem, config: MILConfig) -> tuple[MILState, jax.Array]:
    """(state, key of the first sweep). Thesis Sec. 4.1.1: delta2 at its prior mode, ``n_init_active`` random
    active kernels; Z from its exact conditional at f = 0 (every group constraint satisfied), then beta from
    its conditional."""
    n, m = problem_sizes(problem)
    k_act, k_z, k_beta, k_next = jax.random.split(key, 4)
    n_init = min(config.n_init_active, config.capacity, m)
    if problem.basis_mask is None:
        chosen = jax.random.permutation(k_act, m)[:n_init]
    else:   # a uniformly random subset of the real centres (all of them if fewer than n_init)
        chosen = jnp.argsort(jnp.where(problem.basis_mask, jax.random.uniform(k_act, (m,)), 2.0))[:n_init]
    active = jnp.zeros(m, bool).at[chosen].set(True)
    if problem.basis_mask is not None:
        active = active & problem.basis_mask
    aset = active_set_from_mask(problem.gram, active, config.capacity)
    delta2 = jnp.asarray(problem.hyper.delta2_init, problem.gram.dtype)
    z, _, _ = z_update(k_z, problem, jnp.zeros(n), jnp.zeros(n), "exact")
    rows = active_rows(aset, _psi_t(problem, config))
    beta_active = draw_beta(k_beta, aset, rows, rows @ z, delta2, problem.ridge)
    return _new_state(problem, config, aset, beta_active, delta2, z), k_next


def state_from_position(key: jax.Array, problem: MILProblem, config: MILConfig, gamma: jnp.ndarray,
                        beta: jnp.ndarray, delta2: jnp.ndarray, z: jnp.ndarray) -> KeyedMILState:
    """A sampler state at a given point (gamma (M,), beta (M,) dense, delta2, z (N,)), e.g. an exact draw
    from the program, with ``key`` as the key of its first sweep; the active-set inverse is built fresh. At
    most ``config.capacity`` kernels."""
    aset = active_set_from_mask(problem.gram, gamma.astype(bool), config.capacity)
    beta_active = jnp.where(slot_mask(aset), beta[aset.members], 0.0)
    delta2 = jnp.asarray(delta2, problem.gram.dtype)
    return KeyedMILState(_new_state(problem, config, aset, beta_active, delta2, z), key)


def refresh_if_inaccurate(aset: ActiveSet, gram: jnp.ndarray, tol: float = 1e-6) -> ActiveSet:
    """Numerical hygiene for ill-conditioned Gram blocks: check the incrementally updated inverse with one
    O(K^2) residual r = H (A_aa v) - v (v = ones on the used slots); only if it is non-finite or
    ||r|| > tol ||v||, rebuild H from scratch (the O(K^3) branch runs only then)."""
    m = slot_mask(aset)
    v = m.astype(gram.dtype)
    r = aset.inverse @ (active_gram(gram, aset) @ v) - v
    # written as "not (accurate)" so that a NaN residual (inf - inf in an overflowed H) also counts as bad
    accurate = jnp.linalg.norm(r) <= tol * jnp.sqrt(jnp.maximum(aset.count, 1))
    bad = ~jnp.all(jnp.isfinite(aset.inverse)) | ~accurate
    # a while loop of at most one trip rather than lax.cond: under vmap (vectorized chains) a cond becomes a
    # select that runs the O(K^3) rebuild for every chain every sweep; the loop runs only if some chain needs it
    def rebuild(carry):
        a, _ = carry
        return a._replace(inverse=dense_inverse(gram, a)), jnp.zeros((), bool)

    aset, _ = jax.lax.while_loop(lambda carry: carry[1], rebuild, (aset, bad))
    return aset


def mil_gibbs_sweep(state: KeyedMILState, problem: MILProblem, config: MILConfig) -> KeyedMILState:
    """``mil_step`` on a chain with its key; the new one carries the next key (index 0 of the key's split, the
    driver's ``next_key``)."""
    new, _ = mil_step(state.rng_key, state.state, problem, config)
    return KeyedMILState(new, jax.random.split(state.rng_key, 6)[0])


def mil_step(key: jax.Array, state: MILState, problem: MILProblem, config: MILConfig) -> tuple[MILState, MILInfo]:
    """One blocked Gibbs sweep (Listing 4.1): {gamma, beta} then {delta2, Z}, with the optional rescaling move
    (``config.rescale``) of (Z, beta) between the two blocks and the optional Z-collapsed move of (beta, delta2)
    (``config.beta_move="laplace"``) before Z. Cost O(N K_max + changes x (N + K_max^2)), plus
    O(N K_max^2) for the collapsed move. With a fixed active set (``update_gamma=False``) and the collapsed
    move, Z is integrated out altogether: delta2 | beta and the collapsed move only (Z | beta if stored)."""
    if config.beta_move not in ("gibbs", "laplace"):
        raise ValueError(f"beta_move: {config.beta_move!r} is not 'gibbs' or 'laplace'")
    # index 0 is the chain's next key (``driver.next_key``); k_scale: the Gamma draws
    _, k_gamma, k_beta, k_delta, k_z, k_scale = jax.random.split(key, 6)
    z = state.z
    hyper = problem.hyper
    swap_acc = jnp.zeros(())
    psi_t = _psi_t(problem, config)                 # rows of Psi': stored (M, N) or a function j -> row
    if config.update_gamma:
        aset, b_active, sel = kernel_selection_sweep(k_gamma, state.aset, state.b_active, problem.gram,
                                                     psi_t, z, state.delta2, hyper.prior_a,
                                                     hyper.prior_b, 0.5 * problem.ridge, problem.basis_mask)
        if config.swap_tries > 0:
            aset, b_active, n_swap = swap_move(jax.random.fold_in(k_gamma, 1), aset, b_active, problem.gram,
                                               psi_t, z, state.delta2, config.swap_tries,
                                               0.5 * problem.ridge, problem.basis_mask)
            swap_acc = n_swap.astype(jnp.float64) / config.swap_tries
    else:
        zero = jnp.zeros((), jnp.int32)
        aset, b_active = state.aset, state.b_active
        sel = SelectionInfo(proposals=zero, accepted=zero, capacity_hits=zero)
    aset = refresh_if_inaccurate(aset, problem.gram)
    rows = active_rows(aset, psi_t)                                   # (K_max, N): one row gather per sweep
    laplace = config.beta_move == "laplace"
    # fixed active set with the collapsed move: Z is needed by nothing (no gamma moves), so it is integrated out
    # throughout: no data augmentation (beta | Z, rescaling); Z | beta drawn only when it is stored
    collapsed_only = laplace and not config.update_gamma
    if collapsed_only:
        beta_active = state.beta_active
    else:
        beta_active = draw_beta(k_beta, aset, rows, b_active, state.delta2, problem.ridge)
    f = beta_active @ rows                                            # Psi_a beta_a, (N,)
    quad = prior_quadratic_form(aset, problem.gram, beta_active)
    # the Gamma(shape, 1) variates of the sweep in one call (the Gamma sampler is costly to compile):
    # [g^2 of the rescaling, 1 / delta2, (beta_move="laplace") the t proposals' chi-squares / 2]
    n_latent = z.shape[0] if problem.n_instances is None else problem.n_instances   # padding z stay 0
    shapes = jnp.stack([scale_move_shape(n_latent, aset.count), delta2_shape(aset.count, hyper.delta2_alpha)])
    if laplace:
        shapes = jnp.concatenate([shapes, chi_square_shapes(config.laplace_tries)])
    standard_gamma = jax.random.gamma(k_scale, shapes)
    if config.rescale and not collapsed_only:
        z, f, beta_active, quad = scale_move(standard_gamma[0], z, f, beta_active, quad, state.delta2)
    if config.delta2_log_prob is None:
        delta2 = draw_delta2(standard_gamma[1], quad, hyper.delta2_beta)
        d2_acc = jnp.ones(())
    else:
        delta2, d2_acc = delta2_metropolis_step(k_delta, state.delta2, aset.count, quad, config.delta2_log_prob)
    scale_acc = jnp.zeros(())
    if config.scale_tries > 0 and config.z_sampler != "exact":
        # the move integrates Z out, so Z must then be drawn afresh from Z | f: a Metropolis step from the old Z
        # (the thesis' sampler) would leave Z tied to the old scale of f (a wrong joint law)
        raise ValueError("scale_tries: the Z-collapsed scale move needs z_sampler='exact' (set scale_tries=0)")
    if config.scale_tries > 0 and not collapsed_only:
        beta_active, delta2, f, n_scale = collapsed_scale_move(
            jax.random.fold_in(k_scale, 2), beta_active, delta2, f, _collapsed_data(problem),
            _delta2_log_prior(config, hyper), config.scale_tries, config.scale_step)
        scale_acc = n_scale.astype(jnp.float64) / config.scale_tries
    anchor, beta_acc, jump_acc = state.anchor, jnp.zeros(()), jnp.zeros(())
    if config.jump_tries > 0 and config.z_sampler != "exact":
        raise ValueError("jump_tries: the Z-collapsed jumps of gamma need z_sampler='exact' (set jump_tries=0)")
    if config.jump_tries > 0 and config.update_gamma:
        # after the delta2 draw: the jumps hold delta2 fixed and leave pi(gamma, beta | delta2, obs) invariant
        aset, beta_active, n_jump = jump_move(
            jax.random.fold_in(k_gamma, 2), aset, beta_active, delta2, problem.gram, psi_t,
            _collapsed_data(problem), hyper.prior_a, hyper.prior_b, hyper.delta2_alpha, hyper.delta2_beta,
            config.jump_tries, 0.5 * problem.ridge, problem.basis_mask, config.jump_capacity,
            config.jump_fit_steps, config.jump_neighbour_swaps, config.jump_informed, config.jump_split_merge)
        jump_acc = n_jump.astype(jnp.float64) / config.jump_tries
        rows = active_rows(aset, psi_t)
        f = beta_active @ rows
    if laplace:
        k_collapsed = jax.random.fold_in(k_scale, 1)     # (the default sweep's random stream stays as it was)
        beta_active, delta2, anchor, beta_acc, loglik = _collapsed_step(
            k_collapsed, beta_active, delta2, state.anchor, aset, rows, problem, config, hyper, standard_gamma[2:])
        f = beta_active @ rows
    if collapsed_only and not config.store_z:
        z_acc = jnp.ones(())
    else:
        z, z_acc, loglik = z_update(k_z, problem, f, z, config.z_sampler)
    gamma_acc = sel.accepted.astype(jnp.float64) / jnp.maximum(sel.proposals, 1)
    new = MILState(position=_position((aset, beta_active, delta2, z), problem_sizes(problem)[1], config.store_z),
                   aset=aset, beta_active=beta_active, delta2=delta2, z=z, b_active=rows @ z, anchor=anchor)
    info = MILInfo(gamma_acceptance=gamma_acc, n_active=aset.count, z_acceptance=jnp.asarray(z_acc, jnp.float64),
                   delta2_acceptance=jnp.asarray(d2_acc, jnp.float64), capacity_hits=sel.capacity_hits,
                   beta_acceptance=beta_acc, scale_acceptance=scale_acc, swap_acceptance=swap_acc,
                   jump_acceptance=jump_acc, log_likelihood=loglik)
    return new, info


def build_mil_kernel(problem: MILProblem, config: MILConfig) -> Kernel:
    """The sampler for ``zoo.inference.driver``: init (the thesis' start, ``init_mil_state``) and ``mil_step``."""
    def init(key, num_warmup):
        return initial_state(key, problem, config)
    return Kernel(init=init, step=lambda key, state: mil_step(key, state, problem, config))


def mil_position(state: MILState, info: MILInfo) -> dict:
    """The draw: gamma, beta, delta2, n_active (and z with ``store_z``)."""
    return state.position


def mil_draw(state: MILState, info: MILInfo) -> tuple[dict, dict]:
    """The draw and the sweep's statistics by name (what ``sample_chunked`` keeps per draw)."""
    return state.position, info._asdict()


def _collapsed_data(problem: MILProblem) -> CollapsedData:
    return CollapsedData(layout=problem.layout, kind=problem.kind, log_weight=problem.log_weight,
                         dp_groups=problem.dp_groups)


def _delta2_log_prior(config: MILConfig, hyper: MILHyper) -> Callable:
    """log p(delta2) as the sweep uses it: the IG(alpha0, beta0) of ``hyper`` or the static non-conjugate one."""
    if config.delta2_log_prob is None:
        return dist.InverseGamma(hyper.delta2_alpha, hyper.delta2_beta).log_prob
    return config.delta2_log_prob


def _collapsed_step(key, beta_active, delta2, anchor, aset, rows, problem, config, hyper, chi_square_gamma):
    """The Z-collapsed move of (beta, delta2) (``collapsed_beta``), prior of delta2 as the sweep uses it.
    Returns (beta_active, delta2, anchor cache, share of accepted tries, group log-likelihoods (G,))."""
    data = _collapsed_data(problem)
    alpha0, beta0 = hyper.delta2_alpha, hyper.delta2_beta
    log_prior = _delta2_log_prior(config, hyper)
    gram_a = active_gram(problem.gram, aset)
    anchor = ensure_anchor(anchor, aset, rows, gram_a, data, alpha0, beta0)
    # random-walk scale for log delta2 from the spread of its conditional, sd ~ (alpha0 + K/2)^(-1/2)
    step = 2.0 / jnp.sqrt(alpha0 + 0.5 * aset.count)
    beta_active, delta2, groups, n_acc, anchor = collapsed_beta_move(
        key, beta_active, delta2, anchor, aset, rows, gram_a, data, log_prior, step, chi_square_gamma,
        config.laplace_tries)
    return beta_active, delta2, anchor, n_acc.astype(jnp.float64) / (1 + config.laplace_tries), groups


class MILGibbs(KernelMCMC):
    """Blocked Gibbs for the sparse kernel probit MIL models under ``numpyro.infer.MCMC`` (``driver.KernelMCMC``).

    >>> import jax, zoo
    >>> from numpyro.infer import MCMC
    >>> from zoo.inference.mil.gibbs import MILGibbs
    >>> from zoo.papers.kueck04 import mil_config, mil_problem, prepare     # a problem from a model and its data
    >>> spec = zoo.model("kueck04.constraint")
    >>> prep = prepare(spec, zoo.load_dataset("kueck04_two_gaussians", n=60))
    >>> kernel = MILGibbs(mil_problem(spec, prep), mil_config(spec, prep))
    >>> mcmc = MCMC(kernel, num_warmup=50, num_samples=50, num_chains=2, chain_method="vectorized",
    ...             progress_bar=False)                                    # a real run: thousands of sweeps
    >>> mcmc.run(jax.random.PRNGKey(0), extra_fields=MILGibbs.stat_fields)   # keys "info.<statistic>"
    >>> sorted(mcmc.get_samples())
    ['beta', 'delta2', 'gamma', 'n_active']

    The problem is fixed at construction; ``mcmc.run(key, problem=other)`` with ``MCMC(..., jit_model_args=True)``
    passes it as a traced argument instead (no large constants in the compiled program, reusable compilation).
    """

    stat_fields = tuple(f"info.{f}" for f in MIL_STAT_FIELDS)

    def __init__(self, problem: MILProblem, config: MILConfig = MILConfig()):
        super().__init__(build_mil_kernel, config, problem, observe=mil_position)

    def get_diagnostics_str(self, state):
        return f"active kernels {int(jnp.max(state.info.n_active))}"
