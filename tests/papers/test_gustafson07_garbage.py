"""gustafson07: the garbage weight w of the label prior (Pr(Y = 0) proportional to w, each keyword of S_i to 1).

- validation (ValueError naming the option) in the spec, the programs and the choice function;
- the NumPyro programs' label prior;
- the collapsed sweep (flips, joint move, coverage-constrained labels) and the joint move alone against brute-force
  enumeration at w = 4 (the same tiny problem as test_gustafson07_gibbs.py, whose enumeration holds w = 1);
- a Geweke joint-distribution test of the FS sweep at w = 1/4 against the NumPyro program (slow suite: the default
  suite keeps the sweep's exactness check at w != 1, the enumeration at w = 4, and checks both programs' label
  prior at w != 1 exactly in ``test_the_spec_carries_w_to_the_program_and_the_sampler``);
- prediction on images without captions: eq. 1 times the prior, checked against w = 1 on the same draws;
- ``choose_garbage_weight`` on a tiny problem: a grid member chosen by the held-out caption score alone.
"""
import math
from types import SimpleNamespace

import zoo  # noqa: F401  (float64)

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import pytest
from numpyro.handlers import condition, seed, trace

from test_gustafson07_gibbs import (ALLOWED, IMAGE_INDEX, KEYWORDS, P, X_TINY, _batch_se, _enumerate_fs, _init_state,
                                    _problem, fast_jit)
from zoo.data import AnnotatedRegions
from zoo.inference.driver import next_key
from zoo.inference.label_feature.gibbs import gibbs_step, init_chain, run_gibbs
from zoo.inference.label_feature.joint import joint_flip_relabel_step
from zoo.models.collapsed_fs import collapsed_fs_program
from zoo.models.feature_selection import coverage_ok, feature_selection_model, label_prior_probs
from zoo.papers import gustafson07
from zoo.papers.gustafson07_garbage import (caption_log_predictive, caption_precision_at, caption_word_distribution,
                                            choose_garbage_weight, inner_split)

ARGS = (jnp.asarray(ALLOWED), jnp.asarray(IMAGE_INDEX), jnp.asarray(KEYWORDS))


def _regions():
    rng = np.random.default_rng(0)
    return AnnotatedRegions(rng.normal(size=(6, 3)), np.array([0, 0, 0, 1, 1, 1]), [("sky", "sea"), ("sky",)],
                            ["sky", "sea"])


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), True, "1", None, [1.0]])
def test_garbage_weight_is_validated(bad):
    for variant in ("full", "fs", "cvfs"):
        with pytest.raises(ValueError, match="garbage_weight"):
            zoo.model(f"gustafson07.{variant}", garbage_weight=bad)
    with pytest.raises(ValueError, match="garbage_weight"):
        trace(seed(feature_selection_model, 0)).get_trace(*ARGS, variant="full", n_features=P, garbage_weight=bad)
    with pytest.raises(ValueError, match="garbage_weight"):
        trace(seed(collapsed_fs_program, 0)).get_trace(jnp.asarray(X_TINY), jnp.array([1]), 3, jnp.zeros(P),
                                                       jnp.eye(P), garbage_weight=bad)


def test_choice_arguments_are_validated():
    data = _regions()
    for grid in ([0.5, 0.5], [0.3, -1.0], []):
        with pytest.raises(ValueError, match="grid"):
            choose_garbage_weight(data, grid=grid)
    with pytest.raises(ValueError, match="inner_fraction"):
        choose_garbage_weight(data, inner_fraction=1.0)
    with pytest.raises(ValueError, match="variant"):
        choose_garbage_weight(data, variant="lasso")
    with pytest.raises(ValueError, match="data"):
        choose_garbage_weight(np.zeros((3, 2)))


def test_the_spec_carries_w_to_the_program_and_the_sampler():
    assert zoo.model("gustafson07.fs").options["garbage_weight"] == 1.0          # the paper's prior by default
    spec = zoo.model("gustafson07.cvfs", garbage_weight=0.3)
    assert spec.options["garbage_weight"] == 0.3
    problem = gustafson07.region_problem(spec, gustafson07.region_arrays(_regions()))
    assert float(problem.garbage_log_weight) == pytest.approx(math.log(0.3))
    assert float(gustafson07.region_problem(zoo.model("gustafson07.cvfs"), gustafson07.region_arrays(
        _regions())).garbage_log_weight) == 0.0
    # the program's label prior: w on garbage, 1 on each keyword of S_i, normalized per unit
    probs = np.asarray(label_prior_probs(ALLOWED, 4.0))
    assert np.allclose(probs[0], [0.8, 0.2, 0.0]) and np.allclose(probs.sum(1), 1.0)
    assert np.array_equal(np.asarray(label_prior_probs(ALLOWED, 1.0)), ALLOWED / ALLOWED.sum(1, keepdims=True))
    # the spec's program draws Y from label_prior_probs(allowed, w) (its Y prior against the sampler at w != 1:
    # the Geweke test below, slow suite; here exactly, for both programs)
    assert spec.program.keywords["garbage_weight"] == 0.3
    y_fs = _y_prior(collapsed_fs_program, jnp.asarray(X_TINY), jnp.array([1]), 3, jnp.zeros(P), jnp.eye(P),
                    garbage_weight=3.0)
    assert np.allclose(np.asarray(y_fs.base_dist.probs), [0.6, 0.2, 0.2])
    y_joint = _y_prior(feature_selection_model, *ARGS, variant="fs", n_features=P, garbage_weight=3.0)
    probs = np.asarray(getattr(y_joint, "base_dist", y_joint).probs)
    assert np.allclose(probs, np.asarray(label_prior_probs(ALLOWED, 3.0)))


class _Stop(Exception):
    pass


class _GrabY(numpyro.primitives.Messenger):
    """Records the distribution of site Y and stops the program there (the sites after it are not needed)."""
    def process_message(self, msg):
        if msg["name"] == "Y":
            self.fn = msg["fn"]
            raise _Stop


def _y_prior(program, *args, **kwargs):
    grab = _GrabY()
    with pytest.raises(_Stop), grab:
        seed(program, 0)(*args, **kwargs)
    return grab.fn


def _exact_fs_at(w):
    """The enumerated FS posterior over (Y, M) with the label prior w^(number of garbage labels) (the per-unit
    normalizers are constant: S_i is fixed)."""
    states, exact = _enumerate_fs(X_TINY)
    n_garbage = np.array([sum(y == 0 for y in Y) for Y, _ in states])
    prob = exact * float(w) ** n_garbage
    return states, prob / prob.sum()


W_ENUM = 4.0


def _enum_problem():
    return _problem(X_TINY)._replace(flips_per_sweep=jnp.asarray(P), systematic_scan=jnp.asarray(True),
                                     joint_moves=jnp.asarray(1), garbage_log_weight=jnp.asarray(np.log(W_ENUM)))


def test_fs_sweep_matches_brute_force_enumeration_at_w_4():
    """The full FS sweep (systematic flips, one joint move, coverage-constrained labels, run_gibbs) against the
    enumerated posterior at w = 4; the Rao-Blackwellized label probabilities against the exact marginals. The
    w = 4 posterior is far from the w = 1 one (a sampler ignoring w would fail)."""
    states, exact = _exact_fs_at(W_ENUM)
    _, exact_w1 = _exact_fs_at(1.0)
    assert 0.5 * np.abs(exact - exact_w1).sum() > 0.15
    index = {s: i for i, s in enumerate(states)}
    problem = _enum_problem()
    draws, result = run_gibbs(problem, "fs", jax.random.PRNGKey(3), num_chains=2, num_warmup=100, num_samples=6000,
                              collect=("Y", "M"), fast_compile=True)
    Y, M = draws["Y"].reshape(-1, 4), draws["M"][:, :, 0].reshape(-1, P).astype(bool)
    freq = np.bincount([index[(tuple(y), tuple(m))] for y, m in zip(Y, M)], minlength=len(states)) / len(Y)
    assert 0.5 * np.abs(freq - exact).sum() < 0.04, np.round(freq - exact, 3)
    rb = np.asarray(result.running).sum(0) / (2 * result.n_running)
    exact_marg = np.zeros((4, 3))
    for (y, _), p in zip(states, exact):
        exact_marg[np.arange(4), list(y)] += p
    assert np.allclose(rb, exact_marg, atol=0.03), np.round(rb - exact_marg, 3)


@pytest.mark.slow
def test_joint_move_alone_matches_brute_force_enumeration_at_w_4():
    """The joint (indicator, labels) move alone (FS): its proposal and its Hastings ratio carry the label prior."""
    states, exact = _exact_fs_at(W_ENUM)
    index = {s: i for i, s in enumerate(states)}
    problem = _enum_problem()
    state = _init_state(problem, variant="fs", key=jax.random.PRNGKey(0))

    @fast_jit
    def chain(state, keys):
        def body(s, k):
            s, acc = joint_flip_relabel_step(problem, "fs", s, k)
            return s, (s.Y, s.M[0], acc)
        return jax.lax.scan(body, state, keys)[1]
    Y, M, acc = map(np.asarray, chain(state, jax.random.split(jax.random.PRNGKey(11), 30000)))
    freq = np.bincount([index[(tuple(y), tuple(m))] for y, m in zip(Y, M.astype(bool))],
                       minlength=len(states)) / len(Y)
    assert 0.5 * np.abs(freq - exact).sum() < 0.04 and 0.05 < acc.mean() < 0.95, np.round(freq - exact, 3)


W_GEWEKE = 0.25


def _fs_forward_one(k):
    tr = trace(seed(feature_selection_model, k)).get_trace(*ARGS, variant="fs", n_features=P,
                                                           garbage_weight=W_GEWEKE)
    v = {name: tr[name]["value"] for name in ("Y", "M", "X")}
    return v, coverage_ok(v["Y"], ARGS[1], ARGS[2])


@fast_jit
def _fs_forward_batch(keys, batch=500):
    # lax.map in batches (see test_gustafson07_gibbs._forward_batch: large batched LAPACK calls deadlocked JAX)
    n = keys.shape[0]
    out = jax.lax.map(jax.vmap(_fs_forward_one), keys.reshape((n // batch, batch) + keys.shape[1:]))
    return jax.tree_util.tree_map(lambda a: a.reshape((n,) + a.shape[2:]), out)


def _fs_test_functions(Y, M, X):
    return jnp.concatenate([M, (Y == 0).mean(-1, keepdims=True), (Y == 0)[..., :1] * 1.0,
                            (Y == 1).mean(-1, keepdims=True), jnp.arctan(X).mean(-2), jnp.arctan(X ** 2).mean(-2),
                            M.sum(-1, keepdims=True) * (Y == 0).mean(-1, keepdims=True)], axis=-1)


@fast_jit
def _fs_successive(problem, state, chain_key, keys):
    def step(carry, k):
        state, chain_key = carry
        fixed = {"Y": state.Y, "M": state.M[0].astype(jnp.float64)}
        tr = trace(seed(condition(feature_selection_model, fixed), k)).get_trace(
            *ARGS, variant="fs", n_features=P, garbage_weight=W_GEWEKE)
        X = tr["X"]["value"]
        state, _ = gibbs_step(chain_key, state, problem._replace(X=X), "fs")
        return (state, next_key(chain_key)), _fs_test_functions(state.Y, state.M[0].astype(jnp.float64), X)
    return jax.lax.scan(step, (state, chain_key), keys)[1]


def _fs_geweke(n_forward, n_chain):
    values, keep = _fs_forward_batch(jax.random.split(jax.random.PRNGKey(5), n_forward))
    keep = np.asarray(keep)
    fwd = {k: np.asarray(v)[keep] for k, v in values.items()}
    g_fwd = np.asarray(_fs_test_functions(jnp.asarray(fwd["Y"]), jnp.asarray(fwd["M"]), jnp.asarray(fwd["X"])))
    problem = _problem(fwd["X"][0])._replace(flips_per_sweep=jnp.asarray(P), systematic_scan=jnp.asarray(True),
                                             joint_moves=jnp.asarray(1),
                                             garbage_log_weight=jnp.asarray(np.log(W_GEWEKE)))
    state, chain_key = init_chain(problem, "fs", jax.random.PRNGKey(6))
    state = state._replace(Y=jnp.asarray(fwd["Y"][0]), M=jnp.broadcast_to(jnp.asarray(fwd["M"][0], bool), (3, P)))
    g_chain = np.asarray(_fs_successive(problem, state, chain_key, jax.random.split(jax.random.PRNGKey(7), n_chain)))
    se = np.sqrt(g_fwd.var(0) / len(g_fwd) + _batch_se(g_chain) ** 2)
    z = (g_fwd.mean(0) - g_chain.mean(0)) / se
    assert np.all(np.abs(z) < 4.5), np.round(z, 2)
    return g_fwd


@pytest.mark.slow
def test_fs_sweep_passes_geweke_test_at_w_quarter():
    """Marginal-conditional (the program at w = 1/4, coverage by rejection) against successive-conditional
    (X | Y, M from the program, then one FS sweep at w = 1/4). Each image has two units and one keyword, so under
    coverage the garbage share of the kept draws is w / (2 w + 1): 1/3 at w = 1, 1/6 at w = 1/4; a sweep that
    ignored w would fail (z of the garbage share)."""
    g_fwd = _fs_geweke(6000, 4000)
    assert abs(g_fwd[:, P].mean() - 1 / 6) < 0.02


@pytest.mark.slow
def test_fs_sweep_passes_long_geweke_test_at_w_quarter():
    _fs_geweke(60000, 40000)


def test_prediction_without_captions_carries_the_prior():
    """predict_labels on images without captions: one stored draw, the same draws at w = 1 and w = 3 (the
    problem's w swapped): Pr(Y = 0) / Pr(Y = k) is 3 times larger at w = 3, for every region and concept."""
    data = _regions()
    spec = zoo.model("gustafson07.full")
    arrays = gustafson07.region_arrays(data)
    problem = gustafson07.region_problem(spec, arrays)
    state = _init_state(problem, variant="full", key=jax.random.PRNGKey(0))
    draws = {"Y": np.asarray(state.Y)[None, None], "M": np.asarray(state.M)[None, None]}
    fit = SimpleNamespace(data=data, state=dict(problem=problem, variant="full", arrays=arrays, draws=draws,
                                                label_proba=None))
    blind = AnnotatedRegions(np.random.default_rng(1).normal(size=(4, 3)), np.array([0, 0, 1, 1]), [(), ()],
                             ["sky", "sea"], allow_unannotated=True)
    p1 = gustafson07.predict_labels(fit, blind).label_proba
    fit.state["problem"] = problem._replace(garbage_log_weight=jnp.asarray(np.log(3.0)))
    p3 = gustafson07.predict_labels(fit, blind).label_proba
    assert np.allclose(p1.sum(1), 1.0) and np.allclose(p3.sum(1), 1.0)
    assert np.allclose(np.log(p3[:, :1] / p3[:, 1:]) - np.log(p1[:, :1] / p1[:, 1:]), np.log(3.0))


def test_caption_scores_and_the_choice_on_a_tiny_problem():
    proba = np.array([[0.5, 0.5, 0.0, 0.0], [0.0, 0.25, 0.75, 0.0], [0.9, 0.0, 0.0, 0.1]])
    q = caption_word_distribution(proba, np.array([0, 0, 1]), 3)
    assert np.allclose(q, [[0.75 / 1.5, 0.75 / 1.5, 0.0], [0.0, 0.0, 1.0], [1 / 3, 1 / 3, 1 / 3]])
    kw = np.array([[1, 0, 0], [0, 0, 1], [0, 0, 0]], bool)
    assert caption_log_predictive(q, kw) == pytest.approx(0.5 * np.log(0.5))
    assert caption_precision_at(q, kw, 1) == pytest.approx(1.0)
    # 12 images of 3 regions, 3 words; word k's regions around 2 k, the others (garbage) around -3
    rng = np.random.default_rng(0)
    words = ["a", "b", "c"]
    captions = [tuple(words[j] for j in sorted(rng.choice(3, 1 + i % 2, replace=False))) for i in range(12)]
    centres = [[2.0 * words.index(c) for c in cap] + [-3.0] * (3 - len(cap)) for cap in captions]
    X = np.concatenate(centres)[:, None] + rng.normal(scale=0.5, size=(36, 2))
    data = AnnotatedRegions(X, np.repeat(np.arange(12), 3), captions, words,
                            region_labels=np.zeros(36, int))     # labels present: the choice must ignore them
    fit_images, held_out = inner_split(data, 0.25, seed=0)
    assert len(held_out) == 3 and not set(fit_images) & set(held_out)
    choice = choose_garbage_weight(data, "full", (0.3, 1.0, 3.0), num_warmup=10, num_samples=10)
    assert choice.weight in (0.3, 1.0, 3.0) and np.all(np.isfinite(choice.log_predictive))
    assert choice.log_predictive[list(choice.grid).index(choice.weight)] == choice.log_predictive.max()
    assert len({round(s, 9) for s in choice.log_predictive}) > 1        # w changes the held-out predictions
    assert [r["chosen"] for r in choice.table()].count(True) == 1
    assert choice.per_image.shape == (3, 3) and np.allclose(choice.per_image.mean(1), choice.log_predictive)
    se = choice.paired_se()
    assert se[list(choice.grid).index(choice.weight)] == 0 and np.all(np.isfinite(se))
