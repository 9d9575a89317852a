"""Exactness of the kueck04 sampler's extra moves: the swap move of gamma (``zoo.inference.mil.swap``), the
Z-collapsed scale move of (beta, delta2) (``zoo.inference.mil.scale``) and the Z-collapsed jumps of gamma
(``zoo.inference.mil.jump``).

Each move: an exact check against brute force on a tiny problem (enumeration of gamma; exact posterior draws by
rejection from the prior; the jumps' enumeration is in test_mil_jump.py) and a joint-distribution (Geweke
marginal-conditional) test against the NumPyro program ``kernel_mil_program``, with the move alone (plus
beta | gamma, Z, delta2 after a swap, Z | f after a scale move or a jump, as in the sweep), one harness
(``_moved_by``) for the three. The brute-force checks run in the default suite, the move-alone joint-distribution
tests in the slow one (the default suite's sweep tests in test_kueck04_geweke.py run the three moves).
"""
import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import zoo  # noqa: F401
from zoo.inference.mil.collapsed_beta import CollapsedData, collapsed_group_log_likelihood
from zoo.inference.driver import FAST_COMPILE_OPTIONS
from zoo.inference.mil.kernel_selection import active_rows, draw_beta, log_marginal_gamma
from zoo.inference.linalg import active_set_from_mask, dense_inverse, slot_mask
from zoo.inference.mil.gibbs import state_from_position
from zoo.inference.mil.jump import jump_move
from zoo.inference.mil.scale import collapsed_scale_move
from zoo.inference.mil.swap import swap_move
from zoo.models.mil import gram_matrix

from test_kueck04_geweke import HYPER, _forward_halves, _setup, _stats, _zscores

pytestmark = [pytest.mark.filterwarnings("ignore:convergence"), pytest.mark.filterwarnings("ignore:kueck04")]


# ---------------------------------------------------------------------------------------------- swap move
def _swap_problem():
    X = jnp.array([[0.0, 0.0], [0.8, 0.3], [1.6, -0.4], [-0.9, 0.9], [0.4, -1.2], [-1.3, -0.5]])
    psi = gram_matrix(X, X, "gaussian", 1.2)
    gram = psi.T @ psi + 1e-8 * jnp.eye(6)
    z = jnp.array([1.2, 0.4, -0.9, 0.7, -0.3, 0.2])
    return psi, gram, z


@pytest.mark.parametrize("k", [2, 3])
def test_swap_move_matches_enumeration(k):
    """Swaps alone keep K; their chain on the K-subsets must match p(gamma | Z, delta2, K) ∝ exp(c/2 Q(gamma))
    enumerated exactly (``log_marginal_gamma``; the prior and the penalty depend on K only)."""
    psi, gram, z = _swap_problem()
    delta2 = jnp.asarray(3.0)
    b = psi.T @ z
    subsets = list(itertools.combinations(range(6), k))
    masks = np.zeros((len(subsets), 6), np.int64)
    for r, s in enumerate(subsets):
        masks[r, list(s)] = 1
    # one compiled program for all subsets (eager calls compiled each primitive: ~4 of the file's CPU seconds)
    logp = np.asarray(jax.jit(jax.vmap(lambda m: log_marginal_gamma(m, gram, b, delta2, 1.0, 1.0)))(masks))
    exact = np.exp(logp - logp.max())
    exact /= exact.sum()

    aset0 = active_set_from_mask(gram, jnp.arange(6) < k, 6)
    b0 = jnp.where(slot_mask(aset0), b[aset0.members], 0.0)

    def step(carry, key):
        aset, b_a = carry
        aset, b_a, _ = swap_move(key, aset, b_a, gram, psi.T, z, delta2, 1, 1e-12)
        return (aset, b_a), (aset.slot_of >= 0)

    n = 40_000
    (aset, b_a), gammas = jax.jit(lambda key: jax.lax.scan(step, (aset0, b0), jax.random.split(key, n)))(
        jax.random.PRNGKey(3))
    # the incrementally kept inverse and b_a stay exact
    np.testing.assert_allclose(aset.inverse, dense_inverse(gram, aset), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(b_a, jnp.where(slot_mask(aset), b[aset.members], 0.0), rtol=1e-10)
    codes = np.asarray(gammas, np.int64) @ (1 << np.arange(6))
    index = {int(m @ (1 << np.arange(6))): r for r, m in enumerate(masks)}
    freq = np.bincount([index[c] for c in codes], minlength=len(subsets)) / n
    assert 0.5 * np.abs(freq - exact).sum() < 0.02, (np.round(freq, 3), np.round(exact, 3))


# ---------------------------------------------------------------------------------------------- scale move
def _scale_problem():
    """4 instances in 2 MIL-constraint groups (group 0 negative, group 1 mixed), K = 2 active kernels."""
    from zoo.inference.mil.orthant_sampler import GroupLayout
    X = jnp.array([[0.0, 0.0], [1.0, 0.5], [1.8, -0.3], [-0.7, 1.1]])
    psi = gram_matrix(X, X[:2], "gaussian", 1.0)                       # (4, 2): the active columns
    gram = psi.T @ psi + 1e-8 * jnp.eye(2)
    layout = GroupLayout(index=jnp.array([[0, 1], [2, 3]]), valid=jnp.ones((2, 2), bool), size=jnp.array([2, 2]))
    data = CollapsedData(layout=layout, kind=jnp.array([0, 1]), log_weight=None, dp_groups=None)
    return psi, gram, data


def _posterior_by_rejection(key, psi, gram, data, alpha0, beta0, n):
    """Exact draws of pi(beta, delta2 | obs) (Z integrated out): prior draws kept with probability
    p(obs | f) <= 1."""
    m = 40 * n

    @jax.jit       # one compiled program (run eagerly, its primitives' compilations cost ~6 CPU seconds)
    def prior_draws(key):
        k1, k2, k3 = jax.random.split(key, 3)
        delta2 = beta0 / jax.random.gamma(k1, alpha0, (m,))
        chol = jnp.linalg.cholesky(jnp.linalg.inv(gram))
        beta = jnp.sqrt(delta2)[:, None] * (jax.random.normal(k2, (m, 2)) @ chol.T)
        loglik = jax.vmap(lambda b: jnp.sum(collapsed_group_log_likelihood(psi @ b, data)))(beta)
        return beta, delta2, jnp.log(jax.random.uniform(k3, (m,))) < loglik

    beta, delta2, accepted = prior_draws(key)
    keep = np.flatnonzero(np.asarray(accepted))[:n]
    assert keep.size == n
    return beta[keep], delta2[keep]


def test_scale_move_leaves_the_exact_posterior_invariant():
    """Exact posterior draws (rejection) moved by 5 scale tries each stay posterior draws: paired differences of
    test functions (log delta2, beta, f, the prior's quadratic form) have mean 0 (z < 4); they do move."""
    import numpyro.distributions as dist
    psi, gram, data = _scale_problem()
    alpha0, beta0 = 2.0, 2.0
    beta, delta2 = _posterior_by_rejection(jax.random.PRNGKey(0), psi, gram, data, alpha0, beta0, 10_000)
    log_prior = dist.InverseGamma(alpha0, beta0).log_prob

    def move(key, b, d2):
        nb, nd2, _, _ = collapsed_scale_move(key, b, d2, psi @ b, data, log_prior, 5, 1.0)
        return nb, nd2

    nb, nd2 = jax.jit(jax.vmap(move))(jax.random.split(jax.random.PRNGKey(1), beta.shape[0]), beta, delta2)

    def stats(b, d2):
        f = b @ psi.T
        return np.stack([np.log(d2), b[:, 0], b[:, 1], f[:, 2], np.log(np.abs(f[:, 3])), np.log(d2) ** 2,
                         np.sign(b[:, 0]) * np.log(np.abs(b[:, 0]))], 1)
    before, after = stats(np.asarray(beta), np.asarray(delta2)), stats(np.asarray(nb), np.asarray(nd2))
    d = after - before
    z = d.mean(0) / (d.std(0, ddof=1) / np.sqrt(d.shape[0]))
    assert np.max(np.abs(z)) < 4.0, np.round(z, 2)
    assert np.mean(np.asarray(nd2) != np.asarray(delta2)) > 0.5


# ------------------------------------------------------------------------------ joint-distribution tests
@functools.lru_cache(maxsize=None)
def _moved_by(move: str, n_moves: int, variant: str = "constraint"):
    """Compiled (vmapped) transition of program draws by one move alone: "swap" (gamma | Z, delta2 with beta
    integrated out, then beta | gamma, Z, delta2), "scale" (Z-collapsed (beta, delta2) scale) or "jump" (3
    Z-collapsed birth / death / swap tries of (gamma, beta) at the draw's delta2; "jump_near": its swaps propose a
    neighbour of the kernel leaving; "jump_informed": its births and swaps propose by data-fit gain; "jump_split":
    splits and merges of kernels besides; "jump_split_only": splits and merges alone); after the
    last two Z is redrawn given the new f by the sweep's Z step."""
    from zoo.inference.mil.gibbs import _collapsed_data, _delta2_log_prior, z_update
    _, _, _, _, _, _, config, problem_for = _setup(variant)

    def transition(key, gamma, beta, delta2, z, label, fraction):
        problem = problem_for(label, fraction)
        k0, k1 = jax.random.split(key)
        st = state_from_position(k0, problem, config, gamma, beta, delta2, z).state

        def one(i, carry):
            aset, b_a, beta_a, d2, zz = carry
            ka, kb, kc = jax.random.split(jax.random.fold_in(k1, i), 3)
            rows = active_rows(aset, problem.psi.T)
            if move == "swap":
                aset, b_a, _ = swap_move(ka, aset, b_a, problem.gram, problem.psi.T, zz, d2, 2,
                                         0.5 * problem.ridge)
                rows = active_rows(aset, problem.psi.T)
                beta_a = draw_beta(kb, aset, rows, b_a, d2, problem.ridge)
            elif move in ("jump", "jump_near", "jump_informed", "jump_split", "jump_split_only"):
                aset, beta_a, _ = jump_move(ka, aset, beta_a, d2, problem.gram, problem.psi.T,
                                            _collapsed_data(problem), HYPER.prior_a, HYPER.prior_b,
                                            HYPER.delta2_alpha, HYPER.delta2_beta, 3, 0.5 * problem.ridge,
                                            neighbour_swaps=move == "jump_near",
                                            informed=move == "jump_informed", split_merge=move == "jump_split",
                                            split_merge_only=move == "jump_split_only")
                rows = active_rows(aset, problem.psi.T)
                zz, _, _ = z_update(kb, problem, beta_a @ rows, zz, "exact")
                b_a = rows @ zz
            else:
                beta_a, d2, f, _ = collapsed_scale_move(ka, beta_a, d2, beta_a @ rows, _collapsed_data(problem),
                                                        _delta2_log_prior(config, HYPER), 3, 1.0)
                zz, _, _ = z_update(kb, problem, f, zz, "exact")
                b_a = rows @ zz
            return aset, b_a, beta_a, d2, zz

        aset, _, beta_a, d2, zz = jax.lax.fori_loop(0, n_moves, one, (st.aset, st.b_active, st.beta_active,
                                                                     st.delta2, st.z))
        idx = jnp.where(slot_mask(aset), aset.members, beta.shape[0])
        dense = jnp.zeros_like(beta).at[idx].set(beta_a, mode="drop")
        return (aset.slot_of >= 0).astype(float), dense, d2, zz

    return jax.jit(jax.vmap(transition), compiler_options=FAST_COMPILE_OPTIONS)


@pytest.mark.slow
@pytest.mark.parametrize("move, variant", [("swap", "constraint"), ("scale", "constraint"), ("jump", "constraint"),
                                           ("jump_near", "constraint"), ("jump_informed", "constraint"),
                                           ("jump_split", "constraint"), ("jump_split_only", "constraint"),
                                           ("scale", "hybrid"), ("swap", "hybrid"), ("jump", "hybrid")])
def test_move_alone_leaves_the_program_joint_invariant(move, variant):
    """hybrid: measurement weights (count DP) in the collapsed likelihood of the scale move and the jumps.

    Slow tier (issue 35): each move keeps its exact brute-force check in the default suite (the swap and jump
    moves against enumeration, the scale move on exact posterior draws, above and in test_mil_jump.py), and the
    default suite's joint-distribution tests of the full sweep (test_kueck04_geweke.py: the default sweep runs the
    swap and scale moves, the "jump" sweep the jumps) check them inside the kernel users run."""
    psi, layout, has_labels, chi, family, kwargs, config, problem_for = _setup(variant)
    n_draws = 6000
    fwd, label, fraction, half, ref = _forward_halves(kwargs, chi, n_draws, seed=11)
    g, b, d2, z = _moved_by(move, 3, variant)(jax.random.split(jax.random.PRNGKey(12), n_draws),
                                              fwd["gamma"][half], fwd["beta"][half], fwd["delta2"][half],
                                              fwd["z"][half], label[half], fraction[half])
    reference = _stats(fwd["gamma"][ref], fwd["beta"][ref], fwd["delta2"][ref], fwd["z"][ref], psi, label[ref],
                       fraction[ref] if chi else None)
    moved = _stats(g, b, d2, z, psi, label[half], fraction[half] if chi else None)
    zs = _zscores(reference, moved)
    assert np.max(np.abs(zs)) < 4.0, np.round(zs, 2)
    moves_gamma = move in ("swap", "jump", "jump_near", "jump_informed", "jump_split", "jump_split_only")
    changed = np.any(np.asarray(g) != np.asarray(fwd["gamma"][half]), 1) if moves_gamma else \
        np.asarray(d2) != np.asarray(fwd["delta2"][half])
    assert np.mean(changed) > 0.05


def test_options_of_the_moves():
    """scale_tries / swap_tries validated; the Metropolis Z sampler refuses the scale move (it needs Z drawn afresh
    from Z | f after it) and runs without it by default."""
    from zoo.data import Bags
    from zoo.data.mil import ring_data
    from zoo.papers import kueck04 as paper
    d = ring_data(n=20, seed=1)
    data = Bags(d.X, d.bag_ids, group_labels=d.group_labels)
    spec = zoo.model("kueck04.constraint")
    with pytest.raises(ValueError, match="scale_tries"):
        zoo.fit(spec, data, method="blocked_gibbs_mh", scale_tries=2, num_samples=5, num_warmup=0,
                progress_bar=False)
    with pytest.raises(ValueError, match="swap_tries"):
        zoo.fit(spec, data, method="blocked_gibbs", swap_tries=-1, num_samples=5, num_warmup=0, progress_bar=False)
    prep = paper.prepare(spec, data)
    assert paper.mil_config(spec, prep, "mh", False).scale_tries == 0
    assert paper.mil_config(spec, prep, "exact", False).scale_tries > 0
