"""Padded kueck04 problems (``zoo.inference.mil.padding``) have the unpadded posterior, and a padded
cross-validation compiles its sampler once (``zoo.papers.kueck04_cv``)."""
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import numpyro.distributions as dist
from numpyro.infer import Predictive

import zoo
from zoo.data import Bags
from zoo.inference.mil.constraint_codes import AT_LEAST_ONE, FREE, NEGATIVE
from zoo.inference.driver import FAST_COMPILE_OPTIONS
from zoo.inference.mil.kernel_selection import kernel_selection_sweep, log_marginal_gamma
from zoo.inference.linalg import active_set_from_mask
from zoo.inference.mil.gibbs import MILConfig, MILHyper, MILProblem, mil_step, state_from_position, z_update
from zoo.inference.mil.padding import PaddedShape, pad_problem, shared_shape
from zoo.inference.mil.orthant_sampler import GroupLayout
from zoo.models.mil import gram_matrix, group_label_from_signs, kernel_mil_program

A, B, D2_ALPHA, D2_BETA = 1.0, 1.0, 2.0, 2.0
HYPER = MILHyper(*(jnp.asarray(v) for v in (A, B, D2_ALPHA, D2_BETA, D2_BETA / (D2_ALPHA + 1))))


def _tiny(kind=None, dp_groups=None):
    X = jnp.array([[0.0, 0.0], [1.0, 0.3], [2.0, -0.5], [-1.0, 1.0], [0.5, -1.5], [-1.5, -0.5]])
    psi = gram_matrix(X, X, "gaussian", 1.5)
    ridge = 1e-10 * jnp.mean(jnp.diag(psi.T @ psi))
    gram = psi.T @ psi + ridge * jnp.eye(6)
    layout = GroupLayout(index=jnp.array([[0, 1, 2], [3, 4, 5]]), valid=jnp.ones((2, 3), bool),
                         size=jnp.array([3, 3]))
    kind = jnp.array([AT_LEAST_ONE, NEGATIVE]) if kind is None else kind
    return MILProblem(psi=psi, gram=gram, layout=layout, kind=kind, log_weight=None, ridge=ridge,
                      dp_groups=dp_groups, psi_t=None, hyper=HYPER)


PAD = PaddedShape(n_instances=9, n_basis=8, n_groups=4, n_max=4, n_dp=3)


def test_masked_gamma_move_matches_the_unpadded_posterior_by_enumeration():
    """Kernel-selection sweeps on the padded problem at fixed (delta2, z): the real gamma's frequencies are
    p(gamma | delta2, z) of the 6-centre problem (prior over 6 functions), and no padding centre is ever born."""
    problem = pad_problem(_tiny(), PAD)
    z = jnp.zeros(PAD.n_instances).at[:6].set(jnp.asarray(np.random.default_rng(6).normal(size=6) * 2.0))
    psi_t = problem.psi.T
    delta2, a, bb, n_sweeps = 4.0, 1.0, 2.0, 20000

    def step(carry, key):
        aset, b_active = carry
        new, b_active, _ = kernel_selection_sweep(key, aset, b_active, problem.gram, psi_t, z, delta2, a, bb,
                                                  1e-14, problem.basis_mask)
        return (new, b_active), new.slot_of >= 0

    aset0 = active_set_from_mask(problem.gram, jnp.zeros(PAD.n_basis, bool), 6)
    _, gammas = jax.jit(lambda k: jax.lax.scan(step, (aset0, jnp.zeros(6)), jax.random.split(k, n_sweeps)))(
        jax.random.PRNGKey(7))
    gammas = np.asarray(gammas).astype(int)
    assert not gammas[:, 6:].any()
    freq = np.bincount(gammas[:, :6] @ (2 ** np.arange(6)), minlength=64) / n_sweeps
    tiny = _tiny()
    b = tiny.psi.T @ z[:6]
    patterns = jnp.array(list(itertools.product([0, 1], repeat=6)))[:, ::-1]
    logp = np.asarray(jax.vmap(lambda g: log_marginal_gamma(g, tiny.gram, b, delta2, a, bb))(patterns))
    exact = np.zeros(64)
    exact[np.asarray(patterns) @ (2 ** np.arange(6))] = np.exp(logp - np.logaddexp.reduce(logp))
    assert 0.5 * np.abs(freq - exact).sum() < 0.04


def test_padded_groups_and_dp_filler_leave_the_group_likelihoods_unchanged():
    """z_update's log p(obs_g | f) is deterministic: padded (with dp_groups filled by an empty group) equals
    unpadded on the real groups, 0 on the padding groups; the drawn signs meet every real label, and the padding
    instances' z stay 0."""
    tiny = _tiny(dp_groups=jnp.array([0]))
    padded = pad_problem(tiny, PAD)
    assert padded.dp_groups.shape == (3,) and padded.kind[2] == FREE
    f = jnp.asarray(np.random.default_rng(0).normal(size=6))
    f_pad = jnp.zeros(PAD.n_instances).at[:6].set(f)
    update = jax.jit(z_update, static_argnames="z_sampler", compiler_options=FAST_COMPILE_OPTIONS)
    _, _, ll = update(jax.random.PRNGKey(0), tiny, f, jnp.zeros(6), z_sampler="exact")
    z, _, ll_pad = update(jax.random.PRNGKey(0), padded, f_pad, jnp.zeros(PAD.n_instances), z_sampler="exact")
    np.testing.assert_allclose(np.asarray(ll_pad[:2]), np.asarray(ll), rtol=1e-12)
    assert np.all(np.asarray(ll_pad[2:]) == 0.0) and np.all(np.asarray(z[6:]) == 0.0)
    assert bool(jnp.any(z[:3] > 0)) and bool(jnp.all(z[3:6] < 0))


def test_padded_sweeps_leave_the_unpadded_program_joint_invariant():
    """Geweke's joint-distribution check, marginal-conditional form: (theta, labels) drawn from the 6-instance
    program, embedded in the padded shapes, moved by 4 padded sweeps, must again follow the program's joint."""
    tiny = _tiny()
    base = pad_problem(tiny, PAD)
    n_draws, n_sweeps = 4000, 4
    kwargs = dict(psi=tiny.psi, gram=tiny.gram, group_index=tiny.layout.index, group_valid=tiny.layout.valid,
                  label_family=jnp.zeros(2, jnp.int64), chi=None, prior_tau=dist.Beta(A, B),
                  prior_delta2=dist.InverseGamma(D2_ALPHA, D2_BETA))
    fwd = Predictive(kernel_mil_program, num_samples=2 * n_draws)(jax.random.PRNGKey(0), **kwargs)
    config = MILConfig(capacity=6, n_init_active=2)
    extra = PAD.n_basis - 6

    def transition(key, gamma, beta, delta2, z, label):
        problem = base._replace(kind=jnp.concatenate([label, jnp.full(PAD.n_groups - 2, FREE)]))
        state = state_from_position(key, problem, config, jnp.concatenate([gamma, jnp.zeros(extra, gamma.dtype)]),
                                    jnp.concatenate([beta, jnp.zeros(extra)]), delta2,
                                    jnp.concatenate([z, jnp.zeros(PAD.n_instances - 6)]))
        keys = jax.random.split(jax.random.fold_in(key, 1), n_sweeps)
        state = jax.lax.fori_loop(0, n_sweeps, lambda i, s: mil_step(keys[i], s, problem, config)[0], state.state)
        return state.position["gamma"], state.position["beta"], state.delta2, state.z

    moved_by = jax.jit(jax.vmap(transition), compiler_options=FAST_COMPILE_OPTIONS)
    half, ref = slice(n_draws, None), slice(0, n_draws)
    g, b, d2, z = moved_by(jax.random.split(jax.random.PRNGKey(1), n_draws), fwd["gamma"][half],
                           fwd["beta"][half], fwd["delta2"][half], fwd["z"][half], fwd["group_label"][half])
    assert not np.asarray(g)[:, 6:].any() and np.all(np.asarray(z)[:, 6:] == 0.0)
    implied = jax.vmap(lambda zz: group_label_from_signs(zz[tiny.layout.index] > 0, tiny.layout.valid,
                                                         jnp.zeros(2, jnp.int64)))(z[:, :6])
    assert np.array_equal(np.asarray(implied), np.asarray(fwd["group_label"][half]))

    def stats(gamma, beta, delta2, z, label):
        f = (gamma * beta) @ tiny.psi.T
        cols = [gamma.sum(-1), jnp.log(delta2), f[:, 0], f[:, 4], z[:, 0], (z[:, 2] > 0), z.mean(-1),
                (z > 0).sum(-1), gamma[:, 1] * beta[:, 1], label[:, 0] == 1, label[:, 1] == 0]
        return np.stack([np.asarray(c, dtype=float) for c in cols], axis=1)

    a = stats(fwd["gamma"][ref], fwd["beta"][ref], fwd["delta2"][ref], fwd["z"][ref], fwd["group_label"][ref])
    m = stats(np.asarray(g)[:, :6].astype(float), b[:, :6], d2, z[:, :6], fwd["group_label"][half])
    se = np.sqrt(a.var(0, ddof=1) / n_draws + m.var(0, ddof=1) / n_draws)
    zs = (a.mean(0) - m.mean(0)) / np.where(se > 0, se, np.inf)
    assert np.max(np.abs(zs)) < 4.0, np.round(zs, 2)


def test_shared_shape_and_bad_padding():
    tiny = _tiny(dp_groups=jnp.array([0]))
    shape = shared_shape([tiny, tiny._replace(dp_groups=jnp.array([0, 1]))])
    assert shape == PaddedShape(6, 6, 3, 3, 2)
    for bad in (PAD._replace(n_instances=5), PAD._replace(n_groups=2)):
        try:
            pad_problem(tiny, bad)
        except ValueError as err:
            assert "shape." in str(err)
        else:
            raise AssertionError("no ValueError")


@pytest.mark.extended
def test_cross_validation_compiles_the_sampler_once():
    """Three folds of different sizes (bags of 2-4 instances) run one compiled chunk; draws are finite and
    padding centres are never active (their beta columns are dropped: M real columns per fold)."""
    from zoo.papers.kueck04_cv import fold_fits, fold_scores
    from zoo.inference import driver
    from zoo.papers.kueck04 import _predict_arrays
    rng = np.random.default_rng(3)
    sizes = rng.integers(2, 5, size=12)
    bag_ids = np.repeat(np.arange(12), sizes)
    labels = np.arange(12) % 2
    X = rng.normal(size=(bag_ids.size, 2)) + 1.5 * labels[bag_ids][:, None] * (rng.random(bag_ids.size) < 0.5)[:, None]
    data = Bags(X, bag_ids, bag_labels=labels)
    folds = np.array([0, 0, 1, 1, 2, 2, 0, 0, 1, 2, 2, 1])
    spec = zoo.model("kueck04.constraint", max_active=8)
    compiled = driver._compiled_chunk(tuple(sorted(FAST_COMPILE_OPTIONS.items())))
    before = compiled._cache_size()
    fits = fold_fits(spec, data, folds, num_warmup=20, num_samples=20, fast_compile=True)
    assert compiled._cache_size() - before == 1
    for k, fit in zip(range(3), fits):
        assert fit.beta.shape == (20, int(np.sum(np.isin(bag_ids, np.flatnonzero(folds != k)))))
        assert np.all(np.isfinite(fit.beta))
        test = Bags(X[np.isin(bag_ids, np.flatnonzero(folds == k))], np.repeat(np.arange(4), sizes[folds == k]))
        p = fold_scores(spec, fit, test)
        assert p.shape == (4,) and np.all((p >= 0) & (p <= 1))
        # the same numbers as the paper's predictor on the unpadded arrays
        psi_new = gram_matrix(jnp.asarray((test.X - fit.prep.mean) / fit.prep.scale), jnp.asarray(fit.prep.X),
                              "gaussian", fit.prep.width)
        expected = _predict_arrays(jnp.asarray(fit.beta), psi_new, jnp.asarray(test.bag_ids), 4).bag_proba
        np.testing.assert_allclose(p, expected, rtol=1e-9, atol=1e-12)
