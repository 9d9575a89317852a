"""Exactness of the Kueck 2004 building blocks: truncated normal, sign-pattern samplers, incremental inverse,
kernel-selection move (against brute-force enumeration)."""
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import zoo  # noqa: F401  (float64)
from zoo.inference.mil.kernel_selection import active_rows, kernel_selection_sweep, log_marginal_gamma
from zoo.inference.linalg import active_set_from_mask, apply_birth, apply_death, birth_terms, dense_inverse
from zoo.inference.mil.orthant_sampler import (GroupLayout, count_constraint_log_weight, group_log_likelihood,
                                           measurement_log_weight, sample_signs_by_count, sample_signs_constrained,
                                           sign_marginals)
from zoo.inference.truncated_normal import log_ndtr_pair, probit_hazards, sample_orthant_normal

MEANS = np.array([-40.0, -37.0, -30.0, -8.0, -1.0, -0.2, 0.0, 0.5, 3.0, 40.0])


def test_truncated_normal_exact_and_finite_across_means():
    n = 10000
    loc = jnp.repeat(jnp.asarray(MEANS)[:, None], n, axis=1)
    both = jax.jit(lambda key: sample_orthant_normal(key, jnp.stack([loc, -loc]),
                                                     jnp.stack([jnp.ones_like(loc, bool), jnp.zeros_like(loc, bool)])))
    pos, neg = np.asarray(both(jax.random.PRNGKey(0)))
    assert np.all(np.isfinite(pos)) and np.all(pos > 0)
    assert np.all(np.isfinite(neg)) and np.all(neg < 0)
    for row, mu in enumerate(MEANS):
        ref = stats.truncnorm(-mu, np.inf, loc=mu, scale=1.0)
        # Kolmogorov-Smirnov against scipy's truncated normal (exact in the far tail via log-space CDFs)
        assert stats.kstest(pos[row], ref.cdf).pvalue > 1e-3, mu
        assert stats.kstest(-neg[row], ref.cdf).pvalue > 1e-3, mu
    # numpyro's TruncatedNormal fails here (returns inf); ours stays exact: mean of N(-40,1) | z>0 ~ 1/40
    assert abs(pos[0].mean() - stats.truncnorm(40, np.inf, loc=-40).mean()) < 5 * pos[0].std() / np.sqrt(n)


def _layout():
    index = jnp.array([[0, 1, 2, 3, 4, 5], [6, 7, 8, 0, 0, 0], [9, 10, 0, 0, 0, 0]])
    valid = jnp.array([[1] * 6, [1, 1, 1, 0, 0, 0], [1, 1, 0, 0, 0, 0]], bool)
    return GroupLayout(index=index, valid=valid, size=jnp.array([6, 3, 2]))


F = jnp.array([0.3, -1.2, 2.0, -0.1, 0.8, -2.5, 0.0, 1.1, -0.7, -3.0, 0.4])


def _brute(layout, kind, log_weight):
    """Exact pattern probabilities and log normalizers by enumerating all 2^n patterns."""
    from scipy.special import log_ndtr, logsumexp
    out, norms = [], []
    f = np.asarray(F)
    for g in range(layout.index.shape[0]):
        n = int(layout.size[g])
        idx = np.asarray(layout.index[g, :n])
        pats = np.array(list(itertools.product([0, 1], repeat=n)))
        k = pats.sum(1)
        lp = np.where(pats, log_ndtr(f[idx]), log_ndtr(-f[idx])).sum(1)
        ok = {0: k == 0, 1: (k > 0) & (k < n), 2: k == n, 3: k >= 1, 4: np.ones_like(k, bool)}[int(kind[g])]
        logw = lp + (np.asarray(log_weight)[g, k] if log_weight is not None else 0.0)
        logw = np.where(ok, logw, -np.inf)
        norms.append(logsumexp(logw))
        out.append((pats, np.exp(logw - logsumexp(logw))))
    return out, np.array(norms)


def _check_frequencies(draw_positive, layout, brute, n_draws):
    for g, (pats, probs) in enumerate(brute):
        n = pats.shape[1]
        got = np.asarray(draw_positive[:, g, :n]).astype(int)
        codes = got @ (2 ** np.arange(n))
        freq = np.bincount(codes, minlength=2 ** n) / n_draws
        expect = np.zeros(2 ** n)
        expect[pats @ (2 ** np.arange(n))] = probs
        # zero-probability patterns never drawn; others within 5 binomial standard errors
        assert np.all(freq[expect == 0] == 0)
        se = np.sqrt(expect * (1 - expect) / n_draws) + 1e-12
        assert np.all(np.abs(freq - expect) < 5 * se + 1e-3), (g, np.max(np.abs(freq - expect)))


def test_constrained_sign_sampler_matches_enumeration():
    layout = _layout()
    kinds = jnp.array([(1, 3, 0), (3, 1, 2), (2, 0, 1), (4, 4, 3)])   # every constraint code in every group size
    n_draws = 20000
    keys = jax.random.split(jax.random.PRNGKey(3), n_draws)
    sample = jax.vmap(lambda k, kind: sample_signs_constrained(k, F, layout, kind), in_axes=(0, None))
    draws = jax.jit(jax.vmap(sample, in_axes=(None, 0)))(keys, kinds)
    for row, kind in enumerate(kinds):
        brute, norms = _brute(layout, kind, None)
        _check_frequencies(draws.positive[row], layout, brute, n_draws)
        np.testing.assert_allclose(np.asarray(draws.log_norm[row, 0]), norms, rtol=1e-10, atol=1e-12)


def test_constrained_sign_sampler_finite_far_in_the_tails():
    """Mixed and 'at least one positive' groups whose utilities sit at -35 or +35: every label still met, the
    log-likelihood finite and right (mixed at f = -35: log(n Phi(-35)) to first order)."""
    from scipy.special import log_ndtr
    layout = GroupLayout(index=jnp.arange(8).reshape(2, 4), valid=jnp.ones((2, 4), bool), size=jnp.array([4, 4]))
    for value in (-35.0, 35.0):
        f = jnp.full(8, value)
        draw = jax.jit(jax.vmap(lambda k: sample_signs_constrained(k, f, layout, jnp.array([1, 3]))))(
            jax.random.split(jax.random.PRNGKey(0), 200))
        k = np.asarray(draw.positive).sum(-1)
        assert np.all((k[:, 0] >= 1) & (k[:, 0] <= 3)) and np.all(k[:, 1] >= 1)
        assert np.all(np.isfinite(np.asarray(draw.log_norm)))
        if value < 0:
            np.testing.assert_allclose(np.asarray(draw.log_norm[0, 0]), np.log(4) + log_ndtr(value), rtol=1e-6)


def test_count_sign_sampler_matches_enumeration_with_measurement_weights():
    layout = _layout()
    kind = jnp.array([1, 4, 3])          # hybrid mixed group, measurement-only group, MIL positive bag
    log_w = measurement_log_weight(jnp.array([0.4, 0.0, 1.0]), layout.size, 5.0, 6) + \
        count_constraint_log_weight(kind, layout.size, 6)
    n_draws = 20000
    keys = jax.random.split(jax.random.PRNGKey(4), n_draws)
    draws = jax.jit(jax.vmap(lambda k: sample_signs_by_count(k, F, layout, log_w)))(keys)
    brute, norms = _brute(layout, kind, log_w)
    _check_frequencies(draws.positive, layout, brute, n_draws)
    np.testing.assert_allclose(np.asarray(draws.log_norm[0]), norms, rtol=1e-10)


@pytest.mark.parametrize("weighted", [False, True])
def test_group_log_likelihood_and_sign_marginals_match_enumeration(weighted):
    """log p(obs_g | f) with Z integrated out, and P(z_i > 0 | f, obs_g) (the gradient identity), for every
    constraint code in every group size, with and without measurement weights: exact against all 2^n patterns."""
    layout = _layout()
    for kind in ((1, 3, 0), (3, 1, 2), (2, 0, 1), (4, 4, 3)):
        kind = jnp.array(kind)
        log_w = measurement_log_weight(jnp.array([0.4, 0.1, 0.9]), layout.size, 5.0, 6) if weighted else None
        full_w = None if log_w is None else log_w + count_constraint_log_weight(kind, layout.size, 6)
        brute, norms = _brute(layout, kind, full_w)
        np.testing.assert_allclose(np.asarray(group_log_likelihood(F, layout, kind, log_w)), norms, rtol=1e-10,
                                   atol=1e-12)
        groups, share = sign_marginals(F, layout, kind, log_w)
        np.testing.assert_allclose(np.asarray(groups), norms, rtol=1e-10, atol=1e-12)
        for g, (pats, probs) in enumerate(brute):
            n = pats.shape[1]
            np.testing.assert_allclose(np.asarray(share[g, :n]), probs @ pats, atol=1e-10, err_msg=str((kind, g)))
            assert np.all(np.asarray(share[g, n:]) == 0)


def test_collapsed_terms_pure_group_shortcut_equals_the_general_computation():
    """The collapsed move handles groups of known signs directly (dp_groups lists the others): the same group
    log-likelihoods, sign marginals and Newton terms as the general forward pass over every group."""
    from zoo.inference.mil.collapsed_beta import CollapsedData, _collapsed_terms, score_and_curvature
    layout = _layout()
    for kind in ((1, 2, 0), (0, 3, 2), (2, 0, 0)):
        kind = jnp.array(kind)
        dp = jnp.asarray(np.flatnonzero(~np.isin(np.asarray(kind), (0, 2))))
        general = CollapsedData(layout=layout, kind=kind, log_weight=None, dp_groups=None)
        split = CollapsedData(layout=layout, kind=kind, log_weight=None, dp_groups=dp)
        for a, b in zip(_collapsed_terms(F, general, True), _collapsed_terms(F, split, True)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-14)
        for a, b in zip(score_and_curvature(F, general), score_and_curvature(F, split)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-14)


def test_fit_table_memoizes_the_grid_node_fit_and_empties_on_a_new_active_set():
    """The memoized proposal (fixed active set): the fit at the nearest log delta2 node, computed once from the
    anchor (the same as a fresh fit there, whatever was looked up before), looked up afterwards, and forgotten
    when the active set changes (its fits belong to another gamma)."""
    from zoo.inference.mil.collapsed_beta import (TABLE_NEWTON_STEPS, CollapsedData, empty_anchor, ensure_anchor,
                                              grid_cell, grid_log_delta2, laplace_fit, proposal_fit)
    from zoo.inference.linalg import active_gram, slot_mask
    rng = np.random.default_rng(5)
    layout = _layout()
    n = int(np.asarray(layout.index).max()) + 1
    X = rng.normal(size=(n, 2))
    psi = jnp.asarray(np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1)))
    gram = psi.T @ psi + 1e-8 * jnp.eye(n)
    data = CollapsedData(layout=layout, kind=jnp.array([1, 2, 0]), log_weight=None)
    aset = active_set_from_mask(gram, jnp.arange(n) < 3, 4)
    rows, gram_a, mask = active_rows(aset, psi.T), active_gram(gram, aset), slot_mask(aset)
    # compiled once each (run eagerly, the Newton loops took 25 s)
    ensure = jax.jit(lambda c, a: ensure_anchor(c, a, active_rows(a, psi.T), active_gram(gram, a), data, 2.0, 2.0))
    lookup = jax.jit(lambda c, log_d2: proposal_fit(c, rows, gram_a, mask, data, log_d2))
    fresh_fit = jax.jit(lambda point, log_d2: laplace_fit(point, rows, gram_a, mask, data, jnp.exp(log_d2),
                                                          TABLE_NEWTON_STEPS))
    cache = ensure(empty_anchor(4, jnp.float64, table=True), aset)
    for log_d2 in (0.3, -1.1, 0.33, 40.0):        # 0.33 shares 0.3's node; 40 lies past the grid's end
        fit, cache = lookup(cache, jnp.asarray(log_d2))
        node = grid_log_delta2(grid_cell(jnp.asarray(log_d2)))
        assert abs(float(node) - min(log_d2, 16.0)) <= 0.125 + 1e-12
        for a, b in zip(fit, fresh_fit(cache.point, node)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-12)
    assert int(cache.table.filled.sum()) == 3
    assert int(ensure(cache, active_set_from_mask(gram, jnp.arange(n) < 2, 4)).table.filled.sum()) == 0
    assert int(ensure(cache, aset).table.filled.sum()) == 3


def test_log_ndtr_pair_and_hazards_accurate_over_the_whole_line():
    from scipy.special import log_ndtr as scipy_log_ndtr
    from scipy.special import erfcx
    x = np.r_[-np.logspace(-8, 4, 4000), 0.0, np.logspace(-8, 4, 4000), -26.6 * np.sqrt(2), 26.6 * np.sqrt(2)]
    lp, lq = (np.asarray(v) for v in log_ndtr_pair(jnp.asarray(x)))
    for got, ref in ((lp, scipy_log_ndtr(x)), (lq, scipy_log_ndtr(-x))):
        assert np.all(np.isfinite(got))
        # relative 2e-13: exp(log Phi(-a)) carries |log Phi(-a)| ulps of rounding (up to ~700 here)
        assert np.all(np.abs(got - ref) <= 2e-13 * np.abs(ref) + 1e-300)
    hp, hn = (np.asarray(v) for v in probit_hazards(jnp.asarray(x), jnp.asarray(lp), jnp.asarray(lq)))
    # lambda(-a) = sqrt(2/pi) / erfcx(a / sqrt 2) exactly; lambda(t) = phi(t) / Phi(t) where Phi(t) >= 1/2
    a = np.abs(x)
    far = np.sqrt(2 / np.pi) / erfcx(a / np.sqrt(2))
    near = np.exp(-0.5 * a * a - 0.5 * np.log(2 * np.pi) - scipy_log_ndtr(a))
    np.testing.assert_allclose(np.where(x < 0, hp, hn), far, rtol=1e-13)
    np.testing.assert_allclose(np.where(x < 0, hn, hp), near, rtol=1e-13, atol=1e-300)


def _gram(n, seed, duplicate=True, spread=1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2)) * spread
    if duplicate:
        X[1] = X[0]                       # duplicate instance: singular Psi'Psi blocks without the ridge
    d2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    psi = np.exp(-d2)
    gram = psi.T @ psi
    return psi, gram + 1e-8 * np.mean(np.diag(gram)) * np.eye(n)


def test_incremental_inverse_equals_fresh_after_long_toggle_sequence():
    n, capacity = 30, 30
    _, gram = _gram(n, 0, spread=3.0)   # moderately conditioned (cond ~ 1e3): drift is then at round-off level
    gram = jnp.asarray(gram)
    rng = np.random.default_rng(1)
    aset = active_set_from_mask(gram, jnp.zeros(n, bool).at[jnp.array([2, 5, 7])].set(True), capacity)
    birth = jax.jit(lambda a, j: apply_birth(a, j, *birth_terms(a, gram, j, 1e-14)))
    death = jax.jit(lambda a, slot: apply_death(a, slot))
    for _ in range(600):
        j = int(rng.integers(n))
        if j in (0, 1):
            j = 2 + int(rng.integers(n - 2))  # keep the exactly-duplicated pair out of the conditioning check
        slot = int(aset.slot_of[j])
        aset = death(aset, slot) if slot >= 0 else birth(aset, j)
    k = int(aset.count)
    members = np.asarray(aset.members[:k])
    assert sorted(members.tolist()) == np.flatnonzero(np.asarray(aset.slot_of) >= 0).tolist()
    fresh = np.linalg.inv(np.asarray(gram)[np.ix_(members, members)])
    np.testing.assert_allclose(np.asarray(aset.inverse)[:k, :k], fresh, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(dense_inverse(gram, aset))[:k, :k], fresh, rtol=1e-8, atol=1e-10)


def test_refresh_rebuilds_an_overflowed_inverse():
    """An incrementally updated H that has blown up to huge *finite* values (here 1e308) makes the residual check
    overflow (inf - inf = NaN); that must count as inaccurate and rebuild H (it once slipped through and the cubic and
    thin-plate kernels returned NaN predictions)."""
    from zoo.inference.linalg import active_gram, slot_mask
    from zoo.inference.mil.gibbs import refresh_if_inaccurate
    n = 8
    _, gram = _gram(n, 3, duplicate=False)
    gram = jnp.asarray(gram)
    aset = active_set_from_mask(gram, jnp.zeros(n, bool).at[jnp.array([1, 4, 6])].set(True), n)
    signs = jnp.where(jnp.arange(n) % 3 == 2, -1.0, 1.0)[None, :]      # slots 0 and 2 overflow, opposite signs
    broken = aset._replace(inverse=jnp.where(aset.inverse != 0, 1e308 * signs, 0.0))
    assert np.isnan(np.asarray(broken.inverse @ (active_gram(gram, aset) @ slot_mask(aset)))).any()
    fixed = jax.jit(refresh_if_inaccurate)(broken, gram)
    np.testing.assert_allclose(np.asarray(fixed.inverse), np.asarray(dense_inverse(gram, aset)), rtol=1e-10)
    assert np.array_equal(np.asarray(jax.jit(refresh_if_inaccurate)(aset, gram).inverse), np.asarray(aset.inverse))


def test_duplicate_instances_give_finite_moves():
    n = 6
    psi, gram = _gram(n, 2)
    gram = jnp.asarray(gram)
    aset = active_set_from_mask(gram, jnp.zeros(n, bool).at[0].set(True), n)
    h, s = birth_terms(aset, gram, 1, 1e-12)
    assert np.isfinite(float(s)) and float(s) > 0
    aset = apply_birth(aset, 1, h, s)
    assert np.all(np.isfinite(np.asarray(aset.inverse)))


@pytest.mark.parametrize("capacity", [6, 3])
def test_gamma_move_matches_exact_posterior_by_enumeration(capacity):
    """Chain of kernel-selection sweeps at fixed (delta2, z): gamma frequencies = p(gamma | delta2, z)."""
    n = 6
    psi, gram = _gram(n, 5, duplicate=False)
    gram = jnp.asarray(gram)
    z = jnp.asarray(np.random.default_rng(6).normal(size=n) * 2.0)
    psi = jnp.asarray(psi)
    b = psi.T @ z
    delta2, a, bb = 4.0, 1.0, 2.0
    n_sweeps = 20000

    def step(carry, key):
        aset, b_active = carry
        new, b_active, _ = kernel_selection_sweep(key, aset, b_active, gram, psi.T, z, delta2, a, bb, 1e-14)
        # the scores b_a the sweep carries along stay those of its active set, slot by slot
        error = jnp.max(jnp.abs(b_active - active_rows(new, psi.T) @ z))
        return (new, b_active), ((new.slot_of >= 0), error)

    aset0 = active_set_from_mask(gram, jnp.zeros(n, bool), capacity)
    _, (gammas, b_error) = jax.jit(lambda k: jax.lax.scan(step, (aset0, jnp.zeros(capacity)),
                                                           jax.random.split(k, n_sweeps)))(jax.random.PRNGKey(7))
    assert float(jnp.max(b_error)) < 1e-10
    codes = np.asarray(gammas).astype(int) @ (2 ** np.arange(n))
    freq = np.bincount(codes, minlength=2 ** n) / n_sweeps
    patterns = jnp.array(list(itertools.product([0, 1], repeat=n)))[:, ::-1]  # bit i <-> gamma_i
    logp = jax.vmap(lambda g: log_marginal_gamma(g, gram, b, delta2, a, bb))(patterns)
    logp = np.where(np.asarray(patterns.sum(1)) <= capacity, np.asarray(logp), -np.inf)
    exact = np.zeros(2 ** n)
    exact[np.asarray(patterns) @ (2 ** np.arange(n))] = np.exp(logp - np.logaddexp.reduce(logp))
    assert 0.5 * np.abs(freq - exact).sum() < 0.04
    assert np.all(freq[exact == 0] == 0)
