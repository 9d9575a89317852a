"""Gustafson et al. 2007: the moves added to the paper's sweep, each against brute force on a problem small enough
to enumerate or integrate numerically:

- ``delta_collapsed_flip_step`` (CVFS flips of M with delta integrated out, then delta redrawn): the chain's
  (M_1, M_2) frequencies and delta moments against pi(M, delta | Y, alpha, Omega) by enumeration of M and grid
  quadrature over delta, from the program's collapsed density (which knows nothing of the delta algebra);
- ``omega_step`` (Omega random walk with delta integrated out, then delta redrawn) against importance sampling of
  the prior with the program-side likelihood, alone and with ``background_marginal_refresh``;
- ``background_marginal_refresh`` alone: its block (delta_S, Omega_SS) against scipy's draws of the NIW prior's
  marginal (two-sample KS), the conditional given x_S unchanged, and a wrong inverse-Wishart dof rejected;
- ``joint_flip_relabel_step`` (an indicator and the labels it affects): (Y, M) frequencies against the enumerated
  posterior, FS and CVFS (non-uniform indicator weights, delta and Omega away from (0, I));
- ``column_flip_step`` (CVFS: a random set of a feature's keyword indicators flipped at once, delta and alpha
  integrated out, then redrawn): exact draws of (M, delta, alpha) from enumeration x quadrature (alpha from its
  Beta-mixture conditional, drawn here with numpy) stay exact after five moves.
The full sweep with all of them is in the Geweke test of test_gustafson07_gibbs.py.
"""
import itertools

import zoo  # noqa: F401  (float64)

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.stats import multivariate_normal

from test_gustafson07_gibbs import (ALLOWED, IMAGE_INDEX, KEYWORDS, P, X_TINY, _batch_se, _enumerate_fs,
                                    _init_state, _problem, fast_jit)
from zoo.inference.label_feature.columns import column_flip_step
from zoo.inference.label_feature.flips import delta_collapsed_flip_step
from zoo.inference.label_feature.joint import joint_flip_relabel_step
from zoo.inference.label_feature.moves import background_marginal_refresh, omega_step
from zoo.models.feature_selection import collapsed_log_density, concept_masks, coverage_ok

Y_FIXED = np.array([1, 0, 2, 2])
ALPHA = np.array([0.3, 0.8])
OMEGA = np.array([[1.3, 0.5], [0.5, 0.9]])
DELTA = np.array([0.2, -0.1])
KAPPA0 = 1.0     # _problem's NIW prior of (delta, Omega): delta | Omega ~ N(0, Omega / 1)


def _tv(freq, exact):
    return 0.5 * np.abs(freq - exact).sum()


def _m_states():
    return [np.array(s).reshape(2, P) for s in itertools.product([False, True], repeat=2 * P)]


def _exact_m_delta(X, Y, alpha, Omega):
    """pi(M | Y, alpha, Omega) (16 values of the two keyword rows) and E(delta | Y, alpha, Omega): delta integrated
    on a grid of +-7 prior standard deviations with the program's collapsed density (delta held fixed)."""
    states = _m_states()
    prior_m = np.array([np.sum(np.where(M, np.log(alpha), np.log1p(-alpha))) for M in states])
    _, logs, grid = _m_delta_log_weights(X, Y, Omega, prior_m)
    w = np.exp(logs - logs.max())
    prob_m = w.sum(1) / w.sum()
    mean_delta = (w.sum(0) @ grid) / w.sum()
    return states, prob_m, mean_delta


def _m_delta_log_weights(X, Y, Omega, prior_m, half_width=7.0, n_grid=301):
    """(states, log weights (16, grid points), grid (grid points, P)): log pi(M, delta | Y, Omega) up to a constant
    on a grid of +-half_width prior standard deviations of delta, from the program's collapsed density (delta held
    fixed) and the log prior ``prior_m`` of each M state (16,)."""
    sd = np.sqrt(np.diag(Omega) / KAPPA0)
    axes = [np.linspace(-half_width * s, half_width * s, n_grid) for s in sd]
    grid = jnp.asarray(np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, P))
    states = _m_states()

    @fast_jit
    def log_joint(M):
        masks = concept_masks("cvfs", M, 3, P)
        # lax.map in batches, not one vmap over the 90601 grid points: batched LAPACK calls that large, two in
        # flight, deadlocked JAX 0.10.2 on 2 cores (ParallelBatchMap; see zoo.inference.linalg)
        return jax.lax.map(lambda d: collapsed_log_density(jnp.asarray(Y), masks, d, jnp.asarray(Omega), jnp.asarray(X))
                           + multivariate_normal.logpdf(d, jnp.zeros(P), jnp.asarray(Omega) / KAPPA0), grid,
                           batch_size=500)

    logs = np.stack([np.asarray(log_joint(jnp.asarray(M))) for M in states]) + np.asarray(prior_m)[:, None]
    return states, logs, np.asarray(grid)


@fast_jit
def _flip_chain(problem, state, keys):
    def body(s, k):
        s, _ = delta_collapsed_flip_step(problem, s, k)
        return s, (s.M[1:].reshape(-1), s.delta)
    return jax.lax.scan(body, state, keys)[1]


def test_delta_collapsed_flips_leave_the_enumerated_posterior_invariant():
    """(M, delta) | Y, alpha, Omega: the chain's M frequencies (systematic and random scan) and the mean of delta
    against enumeration x quadrature. The fixed-delta conditional (the flip of the paper) differs from this target,
    so a ratio that forgot to integrate delta out would be seen."""
    states, exact, mean_delta = _exact_m_delta(X_TINY, Y_FIXED, ALPHA, OMEGA)
    index = {tuple(M.reshape(-1)): i for i, M in enumerate(states)}
    problem = _problem(X_TINY)._replace(flips_per_sweep=jnp.asarray(3))
    state = _init_state(problem, variant="cvfs", key=jax.random.PRNGKey(0))._replace(
        Y=jnp.asarray(Y_FIXED), alpha=jnp.asarray(ALPHA), delta=jnp.asarray(DELTA), Omega=jnp.asarray(OMEGA))
    for systematic in (True, False):
        pr = problem._replace(systematic_scan=jnp.asarray(systematic))
        M, delta = map(np.asarray, _flip_chain(pr, state, jax.random.split(jax.random.PRNGKey(3), 20000)))
        freq = np.bincount([index[tuple(m)] for m in M.astype(bool)], minlength=len(states)) / len(M)
        assert _tv(freq, exact) < 0.03, (systematic, np.round(freq - exact, 3))
        z = (delta.mean(0) - mean_delta) / _batch_se(delta)
        assert np.all(np.abs(z) < 4.5), (systematic, z)
    assert _tv(exact, np.full(len(states), 1 / len(states))) > 0.2


# _problem's alpha prior: 0.5 Beta(1, 10) + 0.5 Beta(10, 1) (the paper's omega = 0.5, g = 10); K + 1 = 3 rows
ALPHA_W, ALPHA_A, ALPHA_B, N_ROWS = np.array([0.5, 0.5]), np.array([1.0, 10.0]), np.array([10.0, 1.0]), 3


def _alpha_posterior(s):
    """Column sums s (...,) -> (component weights (..., 2), a (..., 2), b (..., 2)) of alpha_j | M, and log pi(M_.j)
    with alpha_j integrated out (scipy's Beta functions, independent of the kernel's)."""
    from scipy.special import betaln
    s = np.asarray(s, float)[..., None]
    a, b = ALPHA_A + s, ALPHA_B + N_ROWS - s
    logw = np.log(ALPHA_W) + betaln(a, b) - betaln(ALPHA_A, ALPHA_B)
    log_marginal = np.logaddexp.reduce(logw, axis=-1)
    return np.exp(logw - log_marginal[..., None]), a, b, log_marginal


def test_column_flip_move_keeps_exact_draws_exact():
    """Invariance of the column move alone (it cannot reach every M on its own, so it is started at the target):
    20,000 exact draws of (M, delta, alpha) | Y, Omega (M and delta from enumeration x a delta grid with each alpha_j
    integrated out, alpha_j | M_.j from its Beta mixture) go through five column moves each; M's frequencies, delta's
    mean given each frequent M and alpha's means still match the target, and the move did change M."""
    states = _m_states()
    prior_m = np.array([_alpha_posterior(M.sum(0))[3].sum() for M in states])
    _, logs, grid = _m_delta_log_weights(X_TINY, Y_FIXED, OMEGA, prior_m)
    prob = np.exp(logs - logs.max()).reshape(-1)
    prob /= prob.sum()
    rng = np.random.default_rng(4)
    n = 20_000
    pick = rng.choice(prob.size, size=n, p=prob)
    m_index, g_index = np.divmod(pick, grid.shape[0])
    M0 = np.stack([states[i] for i in m_index])                       # (n, 2, P) keyword rows
    w, a, b, _ = _alpha_posterior(M0.sum(1))                           # (n, P, 2)
    comp = (rng.uniform(size=w.shape[:-1]) < w[..., 1]).astype(int)
    take = lambda v: np.take_along_axis(v, comp[..., None], -1)[..., 0]   # noqa: E731
    alpha0 = np.clip(rng.beta(take(a), take(b)), 1e-12, 1 - 1e-12)
    problem = _problem(X_TINY)
    base = _init_state(problem, variant="cvfs", key=jax.random.PRNGKey(0))._replace(
        Y=jnp.asarray(Y_FIXED), Omega=jnp.asarray(OMEGA))

    @fast_jit
    def moved(M, delta, alpha, keys):
        def one(M, delta, alpha, key):
            state = base._replace(M=jnp.concatenate([jnp.zeros((1, P), bool), M]), delta=delta, alpha=alpha)
            def body(s, k):
                s, acc = column_flip_step(problem, s, k)
                return s, acc
            state, acc = jax.lax.scan(body, state, jax.random.split(key, 5))
            return state.M[1:], state.delta, state.alpha, acc.mean()
        return jax.vmap(one)(M, delta, alpha, keys)

    M, delta, alpha, acc = map(np.asarray, moved(jnp.asarray(M0), jnp.asarray(grid[g_index]), jnp.asarray(alpha0),
                                                 jax.random.split(jax.random.PRNGKey(6), n)))
    index = {tuple(S.reshape(-1)): i for i, S in enumerate(states)}
    exact_m = prob.reshape(len(states), -1).sum(1)
    freq = np.bincount([index[tuple(m)] for m in M.reshape(n, -1)], minlength=len(states)) / n
    assert _tv(freq, exact_m) < 0.03, np.round(freq - exact_m, 3)
    assert np.mean(np.any(M != M0, axis=(1, 2))) > 0.1 and 0.05 < acc.mean() < 0.95, acc.mean()
    # delta given each frequent M (a move that kept delta from before the flip would be seen here)
    weights = prob.reshape(len(states), -1)
    got = np.array([index[tuple(m)] for m in M.reshape(n, -1)])
    for i in np.flatnonzero(np.bincount(got, minlength=len(states)) >= 500):
        mean_delta = weights[i] @ grid / weights[i].sum()
        z = (delta[got == i].mean(0) - mean_delta) / (delta[got == i].std(0) / np.sqrt(np.sum(got == i)))
        assert np.all(np.abs(z) < 4.5), (states[i], z)
    w, a, b, _ = _alpha_posterior(np.stack(states).sum(1))             # (16, P, 2)
    mean_alpha = exact_m @ (w * a / (a + b)).sum(-1)
    z = (alpha.mean(0) - mean_alpha) / (alpha.std(0) / np.sqrt(n))
    assert np.all(np.abs(z) < 4.5), z


def test_omega_step_targets_the_conditional_of_delta_and_omega():
    """Omega random walk (delta integrated out) + delta draw, every unit in concept 1 (M_1 = (1, 0)): chain
    averages of (delta, log diag Omega, corr) against importance sampling of the NIW prior with the program's
    collapsed likelihood (eq. 10 given delta, Omega)."""
    _omega_chain_against_importance_sampling(refresh=False)


def test_background_marginal_refresh_keeps_the_conditional_of_delta_and_omega():
    """The same chain with ``background_marginal_refresh`` after each Omega step: feature x_0 is relevant to the
    only concept with units, so (delta_0, Omega_00) is redrawn from its prior given the conditional of x_1 given
    x_0; the averages must still match importance sampling (a rebuild that moved the conditional would be seen in
    delta_1, Omega_11 and the correlation)."""
    _omega_chain_against_importance_sampling(refresh=True)


def _refresh_draws(problem, state, n_draws, seed):
    """``n_draws`` independent applications of ``background_marginal_refresh`` to one state (one batch)."""
    keys = jax.random.split(jax.random.PRNGKey(seed), n_draws)
    out = fast_jit(jax.vmap(lambda k: background_marginal_refresh(problem, state, k)[0]))(keys)
    return np.asarray(out.delta), np.asarray(out.Omega)


def _refresh_block_statistics(delta_s, Omega_ss, mu0, kappa0):
    """Functions of the refreshed block (delta_S, Omega_SS), |S| = 2: log Omega_00, log Omega_11, their
    correlation, and delta_S standardized by its conditional N(mu0_S, Omega_SS / kappa0) (two N(0, 1) under the
    right move, independent of Omega_SS)."""
    L = np.linalg.cholesky(Omega_ss)
    z = np.linalg.solve(L, (delta_s - mu0)[..., None])[..., 0] * np.sqrt(kappa0)
    corr = Omega_ss[:, 0, 1] / np.sqrt(Omega_ss[:, 0, 0] * Omega_ss[:, 1, 1])
    return np.stack([np.log(Omega_ss[:, 0, 0]), np.log(Omega_ss[:, 1, 1]), corr, z[:, 0], z[:, 1]], 1)


def _refresh_rejects(problem, state, s_idx, prior, n_draws=20_000, seed=0):
    """Smallest two-sample Kolmogorov-Smirnov p-value between the block the move draws on ``problem`` and the
    marginal of the NIW ``prior`` drawn with scipy (Omega ~ IW_nu0(S0) on all p features, its S x S block taken;
    delta_S ~ N(mu0_S, Omega_SS / kappa0)): the refresh is an exact Gibbs draw of that block, whose conditional
    given everything else is its prior marginal whatever the state it starts from. Returns (p-value, delta, Omega)."""
    from scipy import stats
    nu0, S0, kappa0, mu0 = (np.asarray(a) for a in prior)
    delta, Omega = _refresh_draws(problem, state, n_draws, seed)
    rows, cols = np.ix_(s_idx, s_idx)
    got = _refresh_block_statistics(delta[:, s_idx], Omega[:, rows, cols], mu0[s_idx], kappa0)
    rng = np.random.default_rng(seed + 1)
    Om = stats.invwishart.rvs(df=float(nu0), scale=S0, size=n_draws, random_state=rng)[:, rows, cols]
    de = mu0[s_idx] + np.einsum("nij,nj->ni", np.linalg.cholesky(Om), rng.normal(size=(n_draws, len(s_idx))))
    want = _refresh_block_statistics(mu0[s_idx] + (de - mu0[s_idx]) / np.sqrt(kappa0), Om, mu0[s_idx], kappa0)
    return min(stats.ks_2samp(got[:, i], want[:, i]).pvalue for i in range(got.shape[1])), delta, Omega


def test_background_marginal_refresh_draws_the_block_from_its_prior_marginal():
    """p = 3, x_0 and x_1 relevant to the only concept with units, so S = {0, 1}: 20,000 refreshes of one state
    (delta, Omega away from the prior) against the NIW prior's marginal of (delta_S, Omega_SS) drawn with scipy
    (two-sample KS on five functions of the block), and the conditional of x_2 given x_S (B = Omega_2S Omega_SS^-1,
    the intercept delta_2 - B delta_S, Omega_2|S) unchanged to rounding. Power: the same test rejects the move run
    with the inverse-Wishart degrees of freedom nu0 + |S^c| (the dof a bug that forgot the marginal's shift, nu0
    instead of nu0 - |S^c|, draws with), which the importance-sampling test above did not detect."""
    from zoo.inference.label_feature.collapsed_niw import NIWPrior
    rng = np.random.default_rng(3)
    X = rng.normal(size=(4, 3))
    S0 = np.array([[1.5, 0.4, 0.2], [0.4, 0.8, -0.3], [0.2, -0.3, 1.1]])
    prior = NIWPrior(jnp.asarray(5.0), jnp.asarray(S0), jnp.asarray(2.0), jnp.array([0.3, -0.2, 0.1]))
    problem = _problem(X)._replace(delta_omega_prior=prior, delta0=jnp.zeros(3), Omega0=jnp.eye(3))
    Omega = np.array([[2.0, 0.7, 0.5], [0.7, 1.2, 0.3], [0.5, 0.3, 0.9]])
    delta = np.array([1.0, -0.5, 0.4])
    M = jnp.array([[False, False, False], [True, True, False], [False, True, True]])
    state = _init_state(problem, variant="cvfs", key=jax.random.PRNGKey(0))._replace(
        Y=jnp.array([1, 1, 1, 1]), M=M, Omega=jnp.asarray(Omega), delta=jnp.asarray(delta))
    s_idx = [0, 1]
    p_value, d_new, O_new = _refresh_rejects(problem, state, s_idx, prior)
    assert p_value > 1e-3, p_value

    def conditional(d, O):
        B = O[..., 2:, :2] @ np.linalg.inv(O[..., :2, :2])
        return (B[..., 0, :], d[..., 2] - (B @ d[..., :2, None])[..., 0, 0],
                O[..., 2, 2] - (B @ O[..., :2, 2:])[..., 0, 0])

    for before, after in zip(conditional(delta, Omega), conditional(d_new, O_new)):
        np.testing.assert_allclose(after, np.broadcast_to(before, after.shape), rtol=1e-8, atol=1e-10)
    # the deliberately wrong move: the block drawn with nu0 degrees of freedom where its marginal has nu0 - |S^c|
    # (|S^c| = 1: the move run on a prior with nu0 + 1), against the right marginal
    wrong = problem._replace(delta_omega_prior=prior._replace(nu0=prior.nu0 + 1.0))
    assert _refresh_rejects(wrong, state, s_idx, prior)[0] < 1e-6


def _omega_chain_against_importance_sampling(refresh: bool):
    from scipy import stats
    rng = np.random.default_rng(0)
    n = 30
    X = rng.normal(size=(n, P)) @ np.array([[1.0, 0.0], [1.6, 1.2]]).T + np.array([0.5, -1.0])
    problem = _problem(X)._replace(allowed=jnp.ones((n, 3), bool), keyword_mask=jnp.zeros((1, 3), bool),
                                   image_slots=jnp.arange(n)[None, :], omega_steps=jnp.asarray(3),
                                   omega_dof=jnp.asarray(2.0 * n + P + 1))
    M = jnp.array([[False, False], [True, False], [False, False]])
    state = _init_state(problem, variant="cvfs", key=jax.random.PRNGKey(0))._replace(Y=jnp.ones(n, int), M=M)

    @fast_jit
    def chain(state, keys):
        def body(s, k):
            s, acc = omega_step(problem, s, k)
            if refresh:
                s, _ = background_marginal_refresh(problem, s, jax.random.fold_in(k, 1))
            return s, (s.delta, s.Omega, acc)
        return jax.lax.scan(body, state, keys)[1]

    d, O, acc = map(np.asarray, chain(state, jax.random.split(jax.random.PRNGKey(5), 8000)))
    assert 0.05 < acc.mean() < 0.95
    f = lambda d, O: np.stack([d[:, 0], d[:, 1], np.log(O[:, 0, 0]), np.log(O[:, 1, 1]),
                               O[:, 0, 1] / np.sqrt(O[:, 0, 0] * O[:, 1, 1])], 1)
    g = f(d[400:], O[400:])
    N = 100_000
    Om = stats.invwishart.rvs(df=P + 2, scale=np.eye(P), size=N, random_state=rng)
    de = np.einsum("nij,nj->ni", np.linalg.cholesky(Om), rng.normal(size=(N, P))) / np.sqrt(KAPPA0)
    one = lambda dd, oo: collapsed_log_density(jnp.ones(n, int), concept_masks("cvfs", M[1:], 3, P),  # noqa: E731
                                               dd, oo, jnp.asarray(X))
    # lax.map in batches of 100, not one vmap over 100k draws: batched LAPACK calls that large, two in flight,
    # deadlocked JAX 0.10.2 on 2 cores (ParallelBatchMap; see zoo.inference.linalg)
    lik = fast_jit(lambda D, O: jax.lax.map(lambda a: one(*a), (D, O), batch_size=100))
    logw = np.asarray(lik(jnp.asarray(de), jnp.asarray(Om)))
    w = np.exp(logw - logw.max())
    w /= w.sum()
    fi = f(de, Om)
    is_mean = w @ fi
    is_se = np.sqrt(w ** 2 @ (fi - is_mean) ** 2)
    z = (g.mean(0) - is_mean) / np.sqrt(_batch_se(g, 40) ** 2 + is_se ** 2)
    assert np.all(np.abs(z) < 4.0), np.round(z, 2)


def _exact_cvfs_joint(X, alpha, delta, Omega):
    """pi(Y, M | alpha, delta, Omega, X) of CVFS over every label vector (S_i, coverage) and the 16 M values."""
    per_unit = [np.nonzero(a)[0] for a in ALLOWED]
    labels = [np.array(Y) for Y in itertools.product(*per_unit)
              if bool(coverage_ok(jnp.asarray(Y), jnp.asarray(IMAGE_INDEX), jnp.asarray(KEYWORDS)))]
    states = [(tuple(Y), tuple(M.reshape(-1))) for Y in labels for M in _m_states()]
    Ys = jnp.asarray(np.array([y for y, _ in states]))
    Ms = jnp.asarray(np.array([m for _, m in states]).reshape(-1, 2, P))
    lik = fast_jit(jax.vmap(lambda y, m: collapsed_log_density(y, concept_masks("cvfs", m, 3, P), jnp.asarray(delta),
                                                                jnp.asarray(Omega), jnp.asarray(X))))(Ys, Ms)
    prior = np.sum(np.where(np.asarray(Ms), np.log(alpha), np.log1p(-alpha)), axis=(1, 2))
    logp = np.asarray(lik) + prior
    prob = np.exp(logp - logp.max())
    return states, prob / prob.sum()


def _run_joint(variant, problem, state, n):
    @fast_jit
    def chain(state, keys):
        def body(s, k):
            s, acc = joint_flip_relabel_step(problem, variant, s, k)
            return s, (s.Y, s.M, acc)
        return jax.lax.scan(body, state, keys)[1]
    return map(np.asarray, chain(state, jax.random.split(jax.random.PRNGKey(11), n)))


def test_joint_flip_relabel_move_leaves_the_enumerated_posterior_invariant():
    """The joint (indicator, labels) move alone: (Y, M) frequencies against enumeration. FS with (delta, Omega) =
    (0, I); CVFS with alpha, delta, Omega away from symmetry and unequal indicator weights (as after warm-up)."""
    states, exact = _enumerate_fs(X_TINY)
    index = {s: i for i, s in enumerate(states)}
    problem = _problem(X_TINY)
    state = _init_state(problem, variant="fs", key=jax.random.PRNGKey(0))
    Y, M, acc = _run_joint("fs", problem, state, 30000)
    freq = np.bincount([index[(tuple(y), tuple(m))] for y, m in zip(Y, M[:, 0].astype(bool))],
                       minlength=len(states)) / len(Y)
    assert _tv(freq, exact) < 0.04 and 0.05 < acc.mean() < 0.95, (_tv(freq, exact), acc.mean())

    states, exact = _exact_cvfs_joint(X_TINY, ALPHA, DELTA, OMEGA)
    index = {s: i for i, s in enumerate(states)}
    state = _init_state(problem, variant="cvfs", key=jax.random.PRNGKey(0))._replace(
        alpha=jnp.asarray(ALPHA), delta=jnp.asarray(DELTA), Omega=jnp.asarray(OMEGA),
        joint_tries=jnp.ones((3, P)) * 4.0, joint_accepts=jnp.array([[0.0, 0.0], [3.0, 0.0], [1.0, 2.0]]))
    Y, M, acc = _run_joint("cvfs", problem, state, 40000)
    freq = np.bincount([index[(tuple(y), tuple(m))] for y, m in zip(Y, M[:, 1:].reshape(len(M), -1).astype(bool))],
                       minlength=len(states)) / len(Y)
    assert _tv(freq, exact) < 0.05, (_tv(freq, exact), np.round(freq - exact, 3))
    assert np.all(M[:, 0] == 0)            # the garbage row never moves
