"""Stochastic VI for MoM-LDA / MoM-HDP (zoo.inference.topics.streaming) and the on-disk corpus (zoo.data.streaming).

One SVI step with the whole corpus as one (padded) minibatch and rho = 1 is exactly one coordinate-ascent
iteration; the local coordinate ascent never lowers the minibatch ELBO; the minibatch ELBO terms plus the factor
terms are the batch ELBO; a streaming fit read from disk recovers simulated topics about as well as batch VI;
bad options are ValueErrors; the corpus folder round-trips and is read shard by shard.
"""
import zoo  # noqa: F401  (float64)

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest
from scipy.optimize import linear_sum_assignment

from zoo.data import MultimodalCounts
from zoo.data import streaming as sd
from zoo.data.corel5k import simulate_multimodal
from zoo.inference.topics import stick_breaking_vi as sbvi
from zoo.inference.topics import streaming as st
from zoo.inference.topics import topic_vi as tv

K = 3
STATIC = dict(local_steps=3, beta_steps=25, beta_learning_rate=0.05)


@pytest.fixture(scope="module")
def tiny():
    rng = np.random.default_rng(1)
    words = rng.poisson(0.8, size=(7, 5)).astype(float)
    visual = rng.poisson(1.2, size=(7, 6)).astype(float)
    words[:, 0] += 1
    dense = [words, visual]
    a = jnp.array([0.7, 1.3, 0.5])
    etas = (jnp.full(5, 0.9), jnp.full(6, 1.1))
    state = tv.init_state(jax.random.PRNGKey(0), dense, K, a, etas)
    rows = [sd.csr_rows(d) for d in dense]
    # padded: 2 empty document slots and 4 spare entries per modality, as the last minibatch of a fit has
    batch = st.pack_minibatch(rows, 9, [r.indices.size + 4 for r in rows])
    return dict(dense=dense, a=a, etas=etas, state=state, batch=batch, mods=tuple(tv.sparse_counts(d) for d in dense))


def _svi_state(topic_state, logits):
    return st.SVIState(topic_state.lambdas, logits, jnp.zeros(K), jnp.asarray(0, jnp.int32))


def test_one_svi_step_on_the_whole_corpus_with_rho_one_is_one_cavi_iteration(tiny):
    s0, a, etas, batch = tiny["state"], tiny["a"], tiny["etas"], tiny["batch"]
    step = jax.jit(st.svi_step, static_argnames=("local_steps", "hdp", "beta_steps", "beta_learning_rate"))
    prior = dist.Beta(1.0, 2.0)
    # LDA: tau0 = 0 gives rho_1 = (0 + 1)^-kappa = 1; local_tol = 0: exactly local_steps local steps
    new, info = step(_svi_state(s0, jnp.zeros(0)), batch, 7.0, a, etas, 1.0, prior, 0.0, 0.7, 0.0, hdp=False,
                     **STATIC)
    assert float(info.rho) == 1.0 and int(info.local_steps) == 3
    cavi = tv.cavi_iteration(s0, tiny["mods"], a, etas, 3)
    for got, want in zip(new.lambdas, cavi.lambdas):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=0)
    # HDP: the same, plus the beta step against the (exact, rho = 1) sum of E log pi
    logits = jnp.array([0.3, -0.2])
    alpha_pi = 1.7
    topic = tv.init_state(jax.random.PRNGKey(0), tiny["dense"], K, alpha_pi * sbvi.stick_weights(logits), etas)
    new, info = step(_svi_state(topic, logits), batch, 7.0, a, etas, alpha_pi, prior, 0.0, 0.9, 0.0, hdp=True,
                     **STATIC)

    def log_prior(u):
        return jnp.sum(prior.log_prob(u))
    ref = sbvi.hdp_iteration(sbvi.HDPState(topic, logits), tiny["mods"], etas, alpha_pi, log_prior,
                             local_steps=3, beta_steps=25, beta_learning_rate=0.05)
    for got, want in zip(new.lambdas, ref.topic.lambdas):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=0)
    np.testing.assert_allclose(new.stick_logits, ref.stick_logits, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(new.sum_log_pi, tv.dirichlet_expected_log(ref.topic.gamma).sum(0), rtol=1e-10)


def test_local_steps_never_lower_the_minibatch_elbo_and_terms_add_up_to_the_batch_elbo(tiny):
    s0, a, etas, batch = tiny["state"], tiny["a"], tiny["etas"], tiny["batch"]
    lambdas = tuple(lam * np.linspace(0.5, 2.0, lam.size).reshape(lam.shape) for lam in s0.lambdas)  # generic q(phi)
    log_phis = tuple(tv.dirichlet_expected_log(lam) for lam in lambdas)
    gamma = st.initial_gamma(batch.modalities, a, 9)
    trace, changes = [], []
    local = jax.jit(tv.local_step)
    for _ in range(15):
        previous = gamma
        gamma, stats = local(gamma, log_phis, batch.modalities, a)
        changes.append(float(jnp.max(jnp.mean(jnp.abs(gamma - previous), axis=1))))
        trace.append(float(st.minibatch_elbo(gamma, stats, log_phis, a, batch.doc_mask)))
    assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[:-1])), trace
    assert trace[-1] > trace[0]
    # the same point through topic_vi.elbo (unpadded documents): minibatch terms + factor terms = the ELBO
    stats_real = tv.e_step(tv.dirichlet_expected_log(gamma[:7]), log_phis, tiny["mods"])
    state = tv.TopicVIState(gamma[:7], lambdas, stats_real)
    total = st.minibatch_elbo(gamma[:7], stats_real, log_phis, a, jnp.ones(7)) + st.global_elbo_terms(lambdas, etas)
    np.testing.assert_allclose(total, tv.elbo(state, a, etas), rtol=1e-12)
    # while_loop version: stops once gamma moves less than tol, at most max_steps
    g0 = st.initial_gamma(batch.modalities, a, 9)
    g, _, steps = st.local_coordinate_ascent(g0, log_phis, batch.modalities, a, 15, 0.0)
    assert int(steps) == 15
    np.testing.assert_allclose(g, gamma, rtol=1e-12)
    _, _, steps = st.local_coordinate_ascent(g0, log_phis, batch.modalities, a, 15, changes[4])
    assert int(steps) == 5        # the first step whose largest mean change is at most tol


def test_learning_rate_and_capacity():
    np.testing.assert_allclose(st.learning_rate(jnp.arange(1, 4), 2.0, 0.5), (2.0 + np.arange(1, 4)) ** -0.5)
    nnz = np.array([3, 1, 4, 1, 5])
    assert st.minibatch_capacity(nnz, [np.arange(5), np.array([4, 2, 0, 1, 3])], 2) == 9   # 5 + 4
    rows = [sd.CSRRows(np.array([0, 2, 3]), np.array([0, 1, 1]), np.array([1.0, 2.0, 1.0]))]
    with pytest.raises(ValueError, match="capacity"):
        st.pack_minibatch(rows, 4, [2])


# ------------------------------------------------------------------------------------------- the corpus on disk
@pytest.fixture(scope="module")
def synthetic():
    return simulate_multimodal(0, n_images=300, n_topics=3, n_word_types=20, n_visual_types=30, mean_words=4,
                               mean_visual_words=10, alpha=0.5, alpha_w=0.1, alpha_b=0.1)


def test_corpus_round_trip_and_shard_by_shard_reading(tmp_path, synthetic, monkeypatch):
    data, _ = synthetic
    corpus = sd.write_corpus(tmp_path / "c", data, shard_size=64)
    assert corpus.n_docs == 300 and corpus.shard_sizes == (64, 64, 64, 64, 44)
    assert corpus.modalities == ("words", "visual_words") and corpus.vocabularies[0][0] == data.word_vocabulary[0]
    ids = np.array([299, 3, 70, 3])
    words, visual = corpus.read_docs(ids)
    np.testing.assert_array_equal(words, data.words[ids])
    np.testing.assert_array_equal(visual, data.visual_words[ids])
    np.testing.assert_array_equal(corpus.doc_nnz()[:, 1], (data.visual_words > 0).sum(1))
    with pytest.raises(ValueError, match="already holds"):
        sd.write_corpus(tmp_path / "c", data)
    # one pass: every document once, each shard read once (the order keeps a shard's documents together)
    reads = []
    original = sd.ShardedCorpus.read_shard
    monkeypatch.setattr(sd.ShardedCorpus, "read_shard", lambda self, s: reads.append(s) or original(self, s))
    order = corpus.pass_order(np.random.default_rng(0))
    assert sorted(order.tolist()) == list(range(300))
    memory = sd.as_corpus(data)
    for rows, mem in zip(corpus.minibatches(order, 64), memory.minibatches(order, 64)):
        for r, m in zip(rows, mem):
            for x, y in zip(r, m):
                np.testing.assert_array_equal(x, y)
    assert sorted(reads) == list(range(5))
    (tmp_path / "bad").mkdir()
    with pytest.raises(ValueError, match="corpus.json"):
        sd.open_corpus(tmp_path / "bad")


def _matched_error(estimated, true):
    cost = np.abs(true[:, None, :] - estimated[None, :, :]).sum(-1)
    rows, cols = linear_sum_assignment(cost)
    return float(np.abs(true[rows] - estimated[cols]).mean())


@pytest.mark.slow
def test_streaming_fit_from_disk_recovers_topics_about_as_well_as_batch_vi(tmp_path, synthetic):
    data, truth = synthetic
    spec = zoo.model("yakhnenko.mom_lda", n_topics=3, alpha=0.5)
    corpus = sd.write_corpus(tmp_path / "c", data, shard_size=100)
    svi = zoo.fit(spec, corpus, method="stochastic_vi", seed=0, batch_size=50, passes=8, tau0=1.0, kappa=0.7,
                  progress_bar=False)
    batch = zoo.fit(spec, data, method="mean_field_vi", seed=0, num_chains=1, max_iter=150, progress_bar=False)
    chance = _matched_error(np.full_like(truth["phi_b"], 1.0 / truth["phi_b"].shape[1]), truth["phi_b"])
    errors = {}
    for name, fit in (("svi", svi), ("batch", batch)):
        errors[name] = _matched_error(fit.idata.posterior["phi_b"].values[fit.state.best_chain].mean(0),
                                      truth["phi_b"])
    assert errors["svi"] < 0.25 * chance
    assert errors["svi"] < 1.5 * errors["batch"] + 0.01, errors
    assert svi.idata.sample_stats["objective"].shape == (1, 1, 8 * 6)
    assert svi.idata.sample_stats.attrs["compile_seconds"] > 0
    prediction = svi.predict(data)                        # the global q predicts like a batch fit
    assert prediction.caption_word_proba.shape == data.words.shape


def test_bad_options_raise_before_any_computation(synthetic):
    data, _ = synthetic
    spec = zoo.model("yakhnenko.mom_hdp", truncation=4)
    small = MultimodalCounts(words=data.words[:40], visual_words=data.visual_words[:40])
    with pytest.raises(ValueError, match="kappa"):
        zoo.fit(spec, small, method="stochastic_vi", kappa=0.5, progress_bar=False)
    for name, value in (("batch_size", 0), ("passes", 1.5), ("tau0", -1.0), ("local_tol", -1e-3),
                        ("local_steps", 0), ("num_draws", 0)):
        with pytest.raises(ValueError, match=name):
            zoo.fit(spec, small, method="stochastic_vi", progress_bar=False, **{name: value})
    with pytest.raises(ValueError, match="data"):
        zoo.fit(spec, np.ones((3, 3)), method="stochastic_vi", progress_bar=False)
    assert "stochastic_vi" in zoo.methods("yakhnenko.mom_lda") and "stochastic_vi" in zoo.methods(spec.id)


@pytest.mark.slow
def test_in_memory_hdp_fit_is_complete(synthetic):
    data, _ = synthetic
    spec = zoo.model("yakhnenko.mom_hdp", truncation=4)
    fit = zoo.fit(spec, data, method="stochastic_vi", seed=1, batch_size=100, passes=2, num_chains=2,
                  progress_bar=False)
    assert fit.idata.variational_parameters["gamma"].shape == (2, 300, 4)
    assert fit.idata.log_likelihood["words"].shape[:2] == (2, 100)
    np.testing.assert_allclose(fit.state.beta.sum(), 1.0)


def test_split_tokens_and_the_benchmark_report(tmp_path):
    from zoo.bench import benchmarks
    from zoo.experiments.bench import streaming_topics as exp
    from zoo.papers.yakhnenko_svi import split_tokens
    counts = np.array([[2, 0, 1], [1, 0, 0], [0, 3, 3]])
    observed, held = split_tokens(counts, seed=0)
    np.testing.assert_array_equal(observed + held, [[2, 0, 1], [0, 0, 0], [0, 3, 3]])   # 1 token: left out
    np.testing.assert_array_equal(observed.sum(1), [1, 0, 3])
    rows = [exp.StreamingRow("c", "zoo MoM-LDA stochastic_vi", 2, 90.0, 2.0, 10.0),
            exp.StreamingRow("c", "gensim LdaModel (online)", 2, 100.0, 4.0, None),
            exp.StreamingRow("c", "zoo MoM-HDP stochastic_vi", 2, 95.0, 1.0, 12.0),
            exp.StreamingRow("c", "gensim HdpModel (online)", 2, 99.0, 10.0, None)]
    table = exp.streaming_table(exp.StreamingResult(rows, {"c": {}}))
    assert [r[-1] for r in table.rows] == [0.5, None, 0.1, None]
    assert exp.plot_streaming(exp.StreamingResult(rows, {}), tmp_path / "s.png").path.is_file()
    unigram = np.array([0.5, 0.5, 0.0])
    assert exp.topic_tv_unigram(np.array([[2.0, 2.0, 0.0]]), np.ones(1), unigram) == 0.0
    topics = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 3.0]])                      # the unigram, and a disjoint topic
    assert np.isclose(exp.topic_tv_unigram(topics, np.array([0.3, 0.1]), unigram), 0.25)
    assert "streaming_topics" in benchmarks()
