"""Joint-distribution tests of the full blocked Gibbs sampler against the NumPyro program ``kernel_mil_program``,
for the constraint, measurement and hybrid models.

1. Exact invariance (default suite): draw (theta, data) from the program (``Predictive``), run a few Gibbs sweeps
   theta | data from each draw independently; the result must again be distributed as the joint, so the means
   of test functions of (theta', data) and (theta, data) agree (independent samples: plain two-sample z-scores).
   This is Geweke's (2004) joint-distribution check in its marginal-conditional form; it works for the
   constraint labels too, where Geweke's successive-conditional chain is reducible (a label is a deterministic
   function of the signs of Z and the Z sweep keeps those signs' label, so the chain never changes labels).
2. Geweke's successive-conditional simulator (slow suite, measurement model where it is irreducible).
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest
from numpyro.infer import Predictive

import zoo  # noqa: F401
from zoo.inference.driver import FAST_COMPILE_OPTIONS
from zoo.inference.mil.gibbs import (MILConfig, MILHyper, MILProblem, init_mil_state, mil_gibbs_sweep,
                                     state_from_position)
from zoo.inference.mil.orthant_sampler import GroupLayout, measurement_log_weight
from zoo.models.mil import LABEL_FREE, gram_matrix, group_label_from_signs, kernel_mil_program

N_FORWARD = 20000
N_SWEEPS = 20000
BURN = 500
CHI = 4.0
A, B = 1.0, 1.0
D2_ALPHA, D2_BETA = 2.0, 2.0
HYPER = MILHyper(*(jnp.asarray(v) for v in (A, B, D2_ALPHA, D2_BETA, D2_BETA / (D2_ALPHA + 1))))


def _tiny():
    X = jnp.array([[0.0, 0.0], [1.0, 0.3], [2.0, -0.5], [-1.0, 1.0], [0.5, -1.5], [-1.5, -0.5]])
    psi = gram_matrix(X, X, "gaussian", 1.5)
    gram = psi.T @ psi
    gram = gram + 1e-10 * jnp.mean(jnp.diag(gram)) * jnp.eye(6)
    layout = GroupLayout(index=jnp.array([[0, 1, 2], [3, 4, 5]]), valid=jnp.ones((2, 3), bool),
                         size=jnp.array([3, 3]))
    return psi, gram, layout


def _stats(gamma, beta, delta2, z, psi, label, fraction):
    """(S, n_stats) test functions of (theta, data)."""
    f = (gamma * beta) @ psi.T
    cols = [gamma.sum(-1), jnp.log(delta2), f[:, 0], f[:, 4], z[:, 0], (z[:, 2] > 0).astype(float),
            z.mean(-1), (z > 0).sum(-1), (gamma[:, 1] * beta[:, 1])]
    if label is not None:
        cols += [(label[:, 0] == 1).astype(float), (label[:, 1] == 0).astype(float)]
    if fraction is not None:
        cols += [fraction[:, 0], fraction[:, 1]]
    return np.stack([np.asarray(c, dtype=float) for c in cols], axis=1)


def _batch_means_se(x, n_batches=50):
    s = x.shape[0] // n_batches * n_batches
    means = x[:s].reshape(n_batches, -1, x.shape[1]).mean(1)
    return means.std(0, ddof=1) / np.sqrt(n_batches)


def _setup(variant):
    psi, gram, layout = _tiny()
    has_labels = variant in ("constraint", "hybrid")
    chi = CHI if variant in ("measurement", "hybrid") else None
    family = jnp.zeros(2, jnp.int64) if has_labels else jnp.full(2, LABEL_FREE)
    kwargs = dict(psi=psi, gram=gram, group_index=layout.index, group_valid=layout.valid, label_family=family,
                  chi=chi, prior_tau=dist.Beta(A, B), prior_delta2=dist.InverseGamma(D2_ALPHA, D2_BETA))
    config = MILConfig(capacity=6, n_init_active=2)
    ridge = _ridge(psi)

    def problem_for(label, fraction):
        log_w = measurement_log_weight(fraction, layout.size, chi, 3) if chi else None
        kind = label if has_labels else jnp.full(2, LABEL_FREE)
        return MILProblem(psi=psi, gram=gram, layout=layout, kind=kind, log_weight=log_w,
                          ridge=ridge, dp_groups=None, psi_t=None, hyper=HYPER)

    return psi, layout, has_labels, chi, family, kwargs, config, problem_for


def _zscores(a, b, se_b=None):
    se = np.sqrt(a.var(0, ddof=1) / a.shape[0] + (b.var(0, ddof=1) / b.shape[0] if se_b is None else se_b ** 2))
    se = np.where(se > 0, se, np.inf)      # a statistic constant in both samples carries no information
    return (a.mean(0) - b.mean(0)) / se


@functools.lru_cache(maxsize=None)
def _moved_by_sweeps(chi, n_sweeps: int, beta_move: str = "gibbs"):
    """Compiled (vmapped) transition theta -> theta' by ``n_sweeps`` Gibbs sweeps at each draw's own data (label
    codes and fractions traced); one compilation per problem structure: measurement and hybrid share theirs.
    beta_move "laplace-fixed": the active set held fixed, Z integrated out (drawn given beta for the output);
    "jump": the default beta draw with the Z-collapsed jumps of gamma (``MILConfig.jump_tries`` 3)."""
    config = _setup("hybrid" if chi else "constraint")[6]
    if beta_move == "laplace-fixed":
        config = config._replace(beta_move="laplace", update_gamma=False, store_z=True)
    elif beta_move == "jump":      # the Z-collapsed jumps of gamma (``mil.jump``) on, beta by its Gibbs draw
        config = config._replace(jump_tries=3)
    else:
        config = config._replace(beta_move=beta_move)
    problem_for = _setup_problem_for(chi)

    def transition(key, gamma, beta, delta2, z, label, fraction):
        problem = problem_for(label, fraction)
        k0, k1 = jax.random.split(key)
        state = state_from_position(k0, problem, config, gamma, beta, delta2, z)
        state = state._replace(rng_key=k1)
        state = jax.lax.fori_loop(0, n_sweeps, lambda i, s: mil_gibbs_sweep(s, problem, config), state)
        return state.position["gamma"], state.position["beta"], state.delta2, state.z

    # a short run on a tiny problem: compile without XLA's backend optimization (half the compile time)
    return jax.jit(jax.vmap(transition), compiler_options=FAST_COMPILE_OPTIONS)


def _setup_problem_for(chi):
    psi, gram, layout = _tiny()
    ridge = _ridge(psi)

    def problem_for(label, fraction):
        log_w = measurement_log_weight(fraction, layout.size, chi, 3) if chi else None
        return MILProblem(psi=psi, gram=gram, layout=layout, kind=label, log_weight=log_w,
                          ridge=ridge, dp_groups=None, psi_t=None, hyper=HYPER)
    return problem_for


def _ridge(psi):
    """The jitter added to the diagonal of psi'psi in ``_tiny`` (absolute)."""
    return jnp.asarray(1e-10 * float(jnp.mean(jnp.diag(psi.T @ psi))))


def _forward_halves(kwargs: dict, chi, n_draws: int, seed: int):
    """2 n_draws forward draws (theta, data) of the program: (draws, group labels, fractions (zeros without
    chi), the half to move, the reference half that stays untouched)."""
    fwd = Predictive(kernel_mil_program, num_samples=2 * n_draws)(jax.random.PRNGKey(seed), **kwargs)
    fraction = fwd["fraction"] if chi else jnp.zeros((2 * n_draws, 2))
    return fwd, fwd["group_label"], fraction, slice(n_draws, None), slice(0, n_draws)


@functools.lru_cache(maxsize=None)
def _forward_halves_of(variant: str, n_draws: int, seed: int):
    """``_forward_halves`` of ``variant``'s program, drawn once per (variant, n_draws, seed) in this module: the
    four sweeps of the constraint model below are checked against one sample of the joint. Each test still moves
    that sample by its own kernel and compares it with the untouched half, so each remains a full check of its
    kernel (only the reference sample is shared); drawing it anew cost about 4 s of CPU per test, as Predictive
    compiles the program at every call."""
    _, _, _, chi, _, kwargs, _, _ = _setup(variant)
    return _forward_halves(kwargs, chi, n_draws, seed)


# ("constraint", "gibbs"), the constraint model's sweep without the jumps of gamma (jump_tries 0; kueck04 runs them by
# default, JUMP_TRIES 2), is in the slow tier: every move of that sweep is also in ("constraint", "laplace") (the same
# sweep plus the collapsed move) and, with the jumps, in ("constraint", "jump"); the jump-less sweep of the other
# label families stays here (measurement, hybrid)
@pytest.mark.parametrize("variant, beta_move", [pytest.param("constraint", "gibbs", marks=pytest.mark.slow),
                                               ("measurement", "gibbs"),
                                               ("hybrid", "gibbs"), ("constraint", "laplace"),
                                               pytest.param("hybrid", "laplace", marks=pytest.mark.slow),
                                               ("constraint", "laplace-fixed"), ("constraint", "jump"),
                                               pytest.param("hybrid", "jump", marks=pytest.mark.slow)])
def test_gibbs_sweeps_leave_the_program_joint_invariant(variant, beta_move):
    """beta_move="laplace" adds the Z-collapsed Metropolis-Hastings move of (beta, delta2) to every sweep;
    "laplace-fixed": the sweep of a fixed active set with Z integrated out (delta2 | beta, the collapsed move);
    "jump": the sweep with the Z-collapsed birth / death / swap jumps of gamma (``zoo.inference.mil.jump``)."""
    psi, layout, has_labels, chi, family, kwargs, config, problem_for = _setup(variant)
    n_draws, n_sweeps = 6000, 4
    # labels: all LABEL_FREE (no constraint) under the measurement model
    fwd, label, fraction, half, ref = _forward_halves_of(variant, n_draws, seed=0)
    # measurement and hybrid run the same compiled transition (count DP, labels traced: free = no constraint)
    moved_by = _moved_by_sweeps(chi, n_sweeps, beta_move)
    keys = jax.random.split(jax.random.PRNGKey(1), n_draws)
    g, b, d2, z = moved_by(keys, fwd["gamma"][half], fwd["beta"][half], fwd["delta2"][half], fwd["z"][half],
                           label[half], fraction[half])
    reference = _stats(fwd["gamma"][ref], fwd["beta"][ref], fwd["delta2"][ref], fwd["z"][ref], psi,
                       label[ref] if has_labels else None, fraction[ref] if chi else None)
    moved = _stats(g.astype(float), b, d2, z, psi, label[half] if has_labels else None,
                   fraction[half] if chi else None)
    # the moved states must satisfy every group constraint of their (unchanged) data
    if has_labels:
        implied = jax.vmap(lambda zz: group_label_from_signs(zz[layout.index] > 0, layout.valid, family))(z)
        assert np.array_equal(np.asarray(implied), np.asarray(label[half]))
    zs = _zscores(reference, moved)
    assert np.max(np.abs(zs)) < 4.0, np.round(zs, 2)


@pytest.mark.slow
def test_geweke_successive_conditional_measurement_model():
    psi, layout, has_labels, chi, family, kwargs, config, problem_for = _setup("measurement")
    fwd = Predictive(kernel_mil_program, num_samples=N_FORWARD)(jax.random.PRNGKey(0), **kwargs)
    forward = _stats(fwd["gamma"], fwd["beta"], fwd["delta2"], fwd["z"], psi, None, fwd["fraction"])

    def step(carry, key):
        state, fraction = carry
        k_sweep, k_data = jax.random.split(key)
        state = mil_gibbs_sweep(state._replace(rng_key=k_sweep), problem_for(None, fraction), config)
        share = jnp.sum(state.z[layout.index] > 0, 1) / 3.0
        fraction = jax.random.beta(k_data, CHI * share + 1.0, CHI * (1 - share) + 1.0)
        pos = state.position
        return (state, fraction), (pos["gamma"], pos["beta"], pos["delta2"], state.z, fraction)

    def run(key):
        k_init, k_chain = jax.random.split(key)
        fraction0 = jnp.array([0.5, 0.5])
        state = init_mil_state(k_init, problem_for(None, fraction0), config)
        _, out = jax.lax.scan(step, (state, fraction0), jax.random.split(k_chain, N_SWEEPS + BURN))
        return out

    gamma, beta, delta2, z, fraction = jax.jit(run)(jax.random.PRNGKey(1))
    keep = slice(BURN, None)
    chain = _stats(gamma[keep].astype(float), beta[keep], delta2[keep], z[keep], psi, None, fraction[keep])
    zs = _zscores(forward, chain, se_b=_batch_means_se(chain))
    assert np.max(np.abs(zs)) < 4.0, np.round(zs, 2)


@functools.lru_cache(maxsize=None)
def _moved_by_collapsed_move(chi, n_moves: int, joint_from_table: bool = False):
    """Compiled (vmapped) transition by the Z-collapsed (beta, delta2) move alone (gamma fixed, Z not used).
    ``joint_from_table``: the joint (log delta2, beta) try alone (no independence tries), with the proposal fits
    memoized on the log delta2 grid (``collapsed_beta.FitTable``)."""
    from zoo.inference.mil.collapsed_beta import chi_square_shapes
    from zoo.inference.mil.kernel_selection import active_rows
    from zoo.inference.mil.gibbs import _collapsed_step
    config = _setup("hybrid" if chi else "constraint")[6]._replace(beta_move="laplace")
    if joint_from_table:
        config = config._replace(laplace_tries=0, laplace_table=True, update_gamma=False)
    problem_for = _setup_problem_for(chi)

    def transition(key, gamma, beta, delta2, z, label, fraction):
        problem = problem_for(label, fraction)
        k0, k1 = jax.random.split(key)
        state = state_from_position(k0, problem, config, gamma, beta, delta2, z)
        rows = active_rows(state.aset, problem.psi.T)

        def move(i, carry):
            beta_a, d2, anchor = carry
            k_move, k_gamma = jax.random.split(jax.random.fold_in(k1, i))
            chi2 = jax.random.gamma(k_gamma, chi_square_shapes(config.laplace_tries))
            beta_a, d2, anchor, _, _ = _collapsed_step(k_move, beta_a, d2, anchor, state.aset, rows, problem, config,
                                                    problem.hyper, chi2)
            return beta_a, d2, anchor

        beta_a, d2, _ = jax.lax.fori_loop(0, n_moves, move, (state.beta_active, state.delta2, state.anchor))
        dense = jnp.zeros_like(beta).at[jnp.where(jnp.arange(beta_a.shape[0]) < state.aset.count,
                                                  state.aset.members, beta.shape[0])].set(beta_a, mode="drop")
        return dense, d2

    return jax.jit(jax.vmap(transition), compiler_options=FAST_COMPILE_OPTIONS)


@pytest.mark.parametrize("variant, joint_from_table", [("constraint", False),
                                                       pytest.param("constraint", True, marks=pytest.mark.slow),
                                                       pytest.param("hybrid", False, marks=pytest.mark.slow)])
def test_collapsed_beta_move_alone_leaves_the_program_joint_invariant(variant, joint_from_table):
    """The Z-collapsed Metropolis-Hastings move of (beta, delta2) by itself (gamma fixed, Z integrated out):
    draws (theta, data) from the program, moved 3 times, must keep the joint law of (gamma, beta, delta2, data).
    ``joint_from_table``: its joint (log delta2, beta) try alone, proposals from the memoized fits, 15 moves (3
    do not show a proposal density taken from the fit of the old delta2's grid node, which 15 do: |z| 4.9)."""
    psi, layout, has_labels, chi, family, kwargs, config, problem_for = _setup(variant)
    n_draws = 6000
    fwd, label, fraction, half, ref = _forward_halves_of(variant, n_draws, seed=5)
    keys = jax.random.split(jax.random.PRNGKey(6), n_draws)
    moved_by = _moved_by_collapsed_move(chi, 15 if joint_from_table else 3, joint_from_table)
    b, d2 = moved_by(keys, fwd["gamma"][half], fwd["beta"][half], fwd["delta2"][half], fwd["z"][half], label[half],
                     fraction[half])
    assert np.all(np.isfinite(np.asarray(b))) and np.all(np.asarray(d2) > 0)
    z_ref = fwd["z"][ref]    # Z is not part of the move: its column is dropped below (f-based columns stay)
    reference = _stats(fwd["gamma"][ref], fwd["beta"][ref], fwd["delta2"][ref], z_ref, psi,
                       label[ref] if has_labels else None, fraction[ref] if chi else None)
    moved = _stats(fwd["gamma"][half].astype(float), b, d2, fwd["z"][half], psi,
                   label[half] if has_labels else None, fraction[half] if chi else None)
    keep = [0, 1, 2, 3, 8] + list(range(9, reference.shape[1]))     # gamma, log delta2, f_0, f_4, beta_1, data
    zs = _zscores(reference[:, keep], moved[:, keep])
    assert np.max(np.abs(zs)) < 4.0, np.round(zs, 2)
    # the move does move: most draws changed delta2
    assert np.mean(np.asarray(d2) != np.asarray(fwd["delta2"][half])) > 0.3
