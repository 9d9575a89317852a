"""Data-sharded fits: the rows of a data set split over the devices of a mesh (one axis, ``DATA_AXIS``), every
device computing its rows' sufficient statistics and ``psum`` adding them (``jax.shard_map``), the parameters
replicated. The same iterations as on one device; only the order of the sums differs (fixed points agree to
rounding, ~1e-12 relative).

The devices are ``jax.devices()``: the local ones, or after ``jax.distributed.initialize`` those of every process
(several hosts; scripts/distributed_em.py). Rows are padded to a multiple of the shards with weight-0 rows, which
the data passes leave out (``zoo.inference.mixture.em.data_pass``).

Shapes: N rows, S shards, N_pad = S * ceil(N / S).
"""
from __future__ import annotations

import functools
from typing import Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from zoo.inference.topics import stick_breaking_vi as sbvi
from zoo.inference.topics import topic_vi
from zoo.inference.mcvq import variational_em as vem
from zoo.inference.driver import optimize_chunked
from zoo.inference.mixture.em import EMConfig, EMResult, Hyper, Params, run_em
from zoo.inference.mcvq.steps import MCVQPosterior

__all__ = ["DATA_AXIS", "data_mesh", "padded_rows", "shard_rows", "replicate", "run_em_sharded",
           "run_variational_em_sharded", "sharded_counts", "fit_mean_field_sharded",
           "fit_stick_breaking_sharded"]

#: the mesh axis of the data shards
DATA_AXIS = "data"


def data_mesh(n_devices: Optional[int] = None) -> Mesh:
    """A one-axis mesh (``DATA_AXIS``) of the first ``n_devices`` of ``jax.devices()`` (default: all, across
    processes after ``jax.distributed.initialize``)."""
    devices = jax.devices()
    n = len(devices) if n_devices is None else int(n_devices)
    if not 1 <= n <= len(devices):
        raise ValueError(f"n_devices: expected 1 <= n_devices <= {len(devices)}, got {n_devices!r}")
    return Mesh(np.asarray(devices[:n]), (DATA_AXIS,))


def padded_rows(array: np.ndarray, n_shards: int, fill=0) -> np.ndarray:
    """``array`` (N, ...) with rows of ``fill`` appended up to a multiple of ``n_shards``: (N_pad, ...)."""
    array = np.asarray(array)
    pad = -array.shape[0] % n_shards
    if not pad:
        return array
    return np.concatenate([array, np.full((pad,) + array.shape[1:], fill, array.dtype)])


def shard_rows(array: np.ndarray, mesh: Mesh) -> jax.Array:
    """A global array of ``array``'s rows split over ``mesh``'s data axis (the rows must already be a multiple of
    the shards). Every process passes the same ``array`` and keeps only its devices' rows on them
    (``jax.make_array_from_callback``), so this serves one process and several alike."""
    array = np.asarray(array)
    sharding = NamedSharding(mesh, PartitionSpec(DATA_AXIS))
    return jax.make_array_from_callback(array.shape, sharding, lambda index: array[index])


def replicate(tree, mesh: Mesh):
    """Every leaf of ``tree`` (numpy or host values) as a global array replicated over ``mesh``."""
    sharding = NamedSharding(mesh, PartitionSpec())

    def one(x):
        x = np.asarray(x)
        return jax.make_array_from_callback(x.shape, sharding, lambda index: x[index])
    return jax.tree_util.tree_map(one, tree)


@functools.partial(jax.jit, static_argnames=("config", "max_iter", "mesh"))
def _run_em_sharded(X, inits, hyper, allowed, weight, tol, *, config, max_iter, mesh):
    rows, whole = PartitionSpec(DATA_AXIS), PartitionSpec()

    def local(X, allowed, weight, inits, hyper, tol):
        return jax.vmap(lambda init: run_em(X, init, hyper, allowed, config, max_iter=max_iter, tol=tol,
                                            weight=weight, data_axis=DATA_AXIS))(inits)
    return jax.shard_map(local, mesh=mesh, in_specs=(rows, rows, rows, whole, whole, whole), out_specs=whole,
                         check_vma=False)(X, allowed, weight, inits, hyper, tol)


def run_em_sharded(X, inits: Params, hyper: Hyper, allowed, config: EMConfig, max_iter: int = 200,
                   tol: float = 1e-8, mesh: Optional[Mesh] = None) -> EMResult:
    """``zoo.inference.mixture.em.run_em_restarts`` with the rows of ``X`` (N, D) and ``allowed`` (N, C) split over the
    devices of ``mesh`` (default ``data_mesh()``): each iteration's E-step statistics and log likelihood are the
    shards' sums (psum). ``inits``: a leading restart axis on every leaf, as for ``run_em_restarts``. Host arrays
    in (every process the same, see ``shard_rows``); the result is replicated on every device."""
    mesh = data_mesh() if mesh is None else mesh
    n_shards = mesh.shape[DATA_AXIS]
    X = np.asarray(X)
    n_rows = X.shape[0]
    weight = padded_rows(np.ones(n_rows, X.dtype), n_shards)
    X_pad = shard_rows(padded_rows(X, n_shards), mesh)
    allowed_pad = shard_rows(padded_rows(np.asarray(allowed, bool), n_shards, fill=True), mesh)
    inits, hyper, tol = replicate((inits, hyper, np.asarray(tol, X.dtype)), mesh)
    return _run_em_sharded(X_pad, inits, hyper, allowed_pad, shard_rows(weight, mesh), tol, config=config,
                           max_iter=int(max_iter), mesh=mesh)


def _mcvq_specs():
    """PartitionSpecs of a stacked (restart-first) MCVQ MCVQState: parameters and g replicated, m and z by case."""
    whole, cases = PartitionSpec(), PartitionSpec(None, DATA_AXIS)
    return vem.MCVQState(params=whole, post=MCVQPosterior(g=whole, m=cases, z=cases))


@functools.partial(jax.jit, static_argnames=("config", "mesh"))
def _mcvq_chunk(states, temps, X, M, weight, conc, sigma_floor, *, config, mesh):
    rows, whole = PartitionSpec(DATA_AXIS), PartitionSpec()

    def local(states, X, M, weight, temps, conc, sigma_floor):
        def one_restart(state):
            def body(s, t):
                return vem.em_iteration(s, t, X, M, conc, sigma_floor, config, weight=weight, data_axis=DATA_AXIS)
            return jax.lax.scan(body, state, temps)
        return jax.vmap(one_restart)(states)
    specs = _mcvq_specs()
    return jax.shard_map(local, mesh=mesh, in_specs=(specs, rows, rows, rows, whole, whole, whole),
                         out_specs=(specs, whole), check_vma=False)(states, X, M, weight, temps, conc, sigma_floor)


def run_variational_em_sharded(init_states: vem.MCVQState, X, M, temperatures, conc, sigma_floor: float,
                               config: vem.MCVQConfig, chunk: int = 10, mesh: Optional[Mesh] = None,
                               progress: Optional[Callable[[int], None]] = None):
    """``zoo.inference.mcvq.variational_em.run_variational_em`` (MCVQ, Ross 2003) with the cases split over ``mesh``'s
    devices: X, M (C, D) and the per-case posteriors m (R, C, N, K, J), z (R, C, N) by case, the parameters and g
    replicated; the sums over cases (M-step moments, b and beta counts, the KL terms of F) are psum'd. Padding
    cases are all-missing rows with z = 0. ``progress(n_done)`` is called after each chunk of iterations.
    Returns (final states with the padding removed, F trace (R, iters))."""
    mesh = data_mesh() if mesh is None else mesh
    n_shards = mesh.shape[DATA_AXIS]
    X = np.asarray(X)
    n_cases = X.shape[0]
    dtype = X.dtype
    weight = shard_rows(padded_rows(np.ones(n_cases, dtype), n_shards), mesh)
    X_pad = shard_rows(padded_rows(X, n_shards), mesh)
    M_pad = shard_rows(padded_rows(np.asarray(M, dtype), n_shards), mesh)
    post = init_states.post
    n_states = post.m.shape[-1]
    pad_cases = lambda a, fill: np.moveaxis(padded_rows(np.moveaxis(np.asarray(a), 1, 0), n_shards, fill), 0, 1)
    m = pad_cases(post.m, 1.0 / n_states)
    z = pad_cases(post.z, 0.0)
    by_case = NamedSharding(mesh, PartitionSpec(None, DATA_AXIS))
    states = vem.MCVQState(params=replicate(init_states.params, mesh),
                         post=MCVQPosterior(g=replicate(post.g, mesh),
                                            m=jax.make_array_from_callback(m.shape, by_case, lambda i: m[i]),
                                            z=jax.make_array_from_callback(z.shape, by_case, lambda i: z[i])))
    conc, sigma_floor = replicate((conc, np.asarray(sigma_floor, dtype)), mesh)
    temperatures = np.asarray(temperatures, dtype)
    traces = []
    for start in range(0, temperatures.shape[0], chunk):
        temps = replicate(temperatures[start:start + chunk], mesh)
        states, trace = _mcvq_chunk(states, temps, X_pad, M_pad, weight, conc, sigma_floor, config=config,
                                    mesh=mesh)
        traces.append(np.asarray(jax.tree_util.tree_map(lambda a: a.addressable_data(0), trace)))
        if progress is not None:
            progress(temps.shape[0])
    post = states.post
    states = states._replace(post=post._replace(m=post.m[:, :n_cases], z=post.z[:, :n_cases]))
    return states, np.concatenate(traces, axis=1)


def sharded_counts(dense: np.ndarray, n_shards: int) -> tuple[topic_vi.SparseCounts, int]:
    """The non-zero entries of a (I, V) count matrix for documents split into ``n_shards`` blocks of
    I_s = ceil(I / n_shards) rows: shard s's entries (document ids local to its block) padded with zero counts to
    the largest shard's number, concatenated (S * nnz_max,), to be split over the mesh. Returns (counts, I_s)."""
    dense = padded_rows(np.asarray(dense, np.float64), n_shards)
    per = dense.shape[0] // n_shards
    blocks = [np.nonzero(dense[s * per:(s + 1) * per]) for s in range(n_shards)]
    width = max(1, max(len(doc) for doc, _ in blocks))
    doc, term, count = (np.zeros(n_shards * width, t) for t in (np.int32, np.int32, np.float64))
    for s, (d, t) in enumerate(blocks):
        at = slice(s * width, s * width + len(d))
        doc[at], term[at], count[at] = d, t, dense[s * per:(s + 1) * per][d, t]
    return topic_vi.SparseCounts(doc, term, count), per


def _lda_specs():
    whole, docs = PartitionSpec(), PartitionSpec(None, DATA_AXIS)
    return topic_vi.TopicVIState(gamma=docs, lambdas=whole,
                                 stats=topic_vi.SuffStats(doc_topic=docs, term_topic=whole, entropy=whole))


@functools.partial(jax.jit, static_argnames=("local_steps", "chunk", "mesh"))
def _lda_chunk(state, modalities, doc_weight, prior_concentration, etas, log_coefficient, *, local_steps, chunk,
               mesh):
    rows, whole = PartitionSpec(DATA_AXIS), PartitionSpec()

    def local(state, modalities, doc_weight, prior_concentration, etas, log_coefficient):
        def one_restart(s0):
            def body(s, _):
                s = topic_vi.cavi_iteration(s, modalities, prior_concentration, etas, local_steps, DATA_AXIS)
                return s, topic_vi.elbo(s, prior_concentration, etas, log_coefficient, DATA_AXIS, doc_weight)
            return jax.lax.scan(body, s0, None, length=chunk)
        return jax.vmap(one_restart)(state)
    specs = _lda_specs()
    return jax.shard_map(local, mesh=mesh, in_specs=(specs, rows, rows, whole, whole, whole),
                         out_specs=(specs, whole), check_vma=False)(state, modalities, doc_weight,
                                                                    prior_concentration, etas, log_coefficient)


def _shard_documents(dense, state: topic_vi.TopicVIState, prior_row, mesh: Mesh):
    """The sparse counts, the document weights (0: padding) and a stacked (restart-first) TopicVIState split by
    document over ``mesh`` (padding documents: gamma = ``prior_row``, no counts)."""
    n_shards = mesh.shape[DATA_AXIS]
    by_rows = NamedSharding(mesh, PartitionSpec(DATA_AXIS))
    modalities = tuple(jax.tree_util.tree_map(lambda a: jax.make_array_from_callback(a.shape, by_rows,
                                                                                     lambda i: a[i]),
                                              sharded_counts(d, n_shards)[0]) for d in dense)
    doc_weight = shard_rows(padded_rows(np.ones(dense[0].shape[0]), n_shards), mesh)
    by_doc = NamedSharding(mesh, PartitionSpec(None, DATA_AXIS))

    def docs(a, fill_row):
        a = np.asarray(a)
        pad = -a.shape[1] % n_shards
        a = np.concatenate([a, np.broadcast_to(fill_row, (a.shape[0], pad, a.shape[2]))], axis=1) if pad else a
        return jax.make_array_from_callback(a.shape, by_doc, lambda i: a[i])
    state = topic_vi.TopicVIState(
        gamma=docs(state.gamma, prior_row), lambdas=replicate(state.lambdas, mesh),
        stats=topic_vi.SuffStats(docs(state.stats.doc_topic, 0.0), replicate(state.stats.term_topic, mesh),
                                 replicate(state.stats.entropy, mesh)))
    return modalities, doc_weight, state


def _unpad_documents(topic: topic_vi.TopicVIState, n_docs: int) -> topic_vi.TopicVIState:
    return topic._replace(gamma=topic.gamma[:, :n_docs], stats=topic.stats._replace(
        doc_topic=topic.stats.doc_topic[:, :n_docs]))


def fit_mean_field_sharded(keys, dense_modalities, n_topics: int, prior_concentration, etas, *, max_iter: int = 200,
                           tol: float = 1e-6, local_steps: int = 3, chunk: int = 10, seed_docs_per_factor: int = 2,
                           progress=None, mesh: Optional[Mesh] = None):
    """``zoo.inference.topics.topic_vi.fit_mean_field`` (MoM-LDA coordinate ascent) with the documents split over
    ``mesh``'s devices: gamma and the document-topic counts by document, the factors (lambda) replicated; the
    E-step's term-topic counts, the entropy and the per-document ELBO terms are psum'd. The same initial state
    (``init_batched``), the same iterations. Returns (final state without the padding documents, ELBO trace)."""
    mesh = data_mesh() if mesh is None else mesh
    n_shards = mesh.shape[DATA_AXIS]
    dense = [np.asarray(d, dtype=np.float64) for d in dense_modalities]
    n_docs = dense[0].shape[0]
    prior = np.asarray(prior_concentration, np.float64)
    etas = tuple(np.asarray(e, np.float64) for e in etas)
    state = topic_vi.init_batched(keys, dense, n_topics, jnp.asarray(prior), tuple(map(jnp.asarray, etas)),
                                  seed_docs_per_factor)
    modalities, doc_weight, state = _shard_documents(dense, state, prior, mesh)
    log_coefficient = np.asarray(topic_vi.log_multinomial_coefficient(dense))
    prior_r, etas_r, log_coefficient = replicate((prior, etas, log_coefficient), mesh)
    chunk = max(1, min(int(chunk), int(max_iter)))

    def run_chunk(s):
        s, trace = _lda_chunk(s, modalities, doc_weight, prior_r, etas_r, log_coefficient,
                              local_steps=int(local_steps), chunk=chunk, mesh=mesh)
        return s, np.asarray(trace.addressable_data(0))
    state, trace = optimize_chunked(run_chunk, state, max_iter=max_iter, tol=tol, chunk=chunk, progress=progress)
    return _unpad_documents(state, n_docs), trace


@functools.partial(jax.jit, static_argnames=("local_steps", "beta_steps", "beta_learning_rate", "optimize_beta",
                                             "chunk", "mesh"))
def _hdp_chunk(state, modalities, doc_weight, etas, alpha_pi, log_coefficient, stick_prior, *, local_steps,
               beta_steps, beta_learning_rate, optimize_beta, chunk, mesh):
    rows, whole = PartitionSpec(DATA_AXIS), PartitionSpec()

    def local(state, modalities, doc_weight, etas, alpha_pi, log_coefficient, stick_prior):
        def stick_log_prior(u):
            return jnp.sum(stick_prior.log_prob(u))

        def one_restart(s0):
            def body(s, _):
                s = sbvi.hdp_iteration(s, modalities, etas, alpha_pi, stick_log_prior, local_steps=local_steps,
                                       beta_steps=beta_steps, beta_learning_rate=beta_learning_rate,
                                       optimize_beta=optimize_beta, data_axis=DATA_AXIS, doc_weight=doc_weight)
                return s, sbvi.hdp_elbo(s, etas, alpha_pi, stick_log_prior, log_coefficient, DATA_AXIS, doc_weight)
            return jax.lax.scan(body, s0, None, length=chunk)
        return jax.vmap(one_restart)(state)
    specs = sbvi.HDPState(topic=_lda_specs(), stick_logits=whole)
    return jax.shard_map(local, mesh=mesh, in_specs=(specs, rows, rows, whole, whole, whole, whole),
                         out_specs=(specs, whole), check_vma=False)(state, modalities, doc_weight, etas, alpha_pi,
                                                                    log_coefficient, stick_prior)


def fit_stick_breaking_sharded(keys, dense_modalities, n_topics: int, etas, alpha_pi: float, stick_prior, *,
                               init_stick_logits, optimize_beta: bool = True, max_iter: int = 200, tol: float = 1e-6,
                               local_steps: int = 3, beta_steps: int = 25, beta_learning_rate: float = 0.05,
                               chunk: int = 10, seed_docs_per_factor: int = 2, progress=None,
                               mesh: Optional[Mesh] = None):
    """``zoo.inference.topics.stick_breaking_vi.fit_stick_breaking`` (MoM-HDP) with the documents split over ``mesh``'s
    devices, as ``fit_mean_field_sharded``; the stick optimization sees the psum'd sum_i E log pi_i."""
    mesh = data_mesh() if mesh is None else mesh
    dense = [np.asarray(d, dtype=np.float64) for d in dense_modalities]
    n_docs = dense[0].shape[0]
    etas = tuple(np.asarray(e, np.float64) for e in etas)
    logits0 = jnp.asarray(init_stick_logits, dtype=jnp.float64).reshape(n_topics - 1)
    conc0 = np.asarray(float(alpha_pi) * sbvi.stick_weights(logits0))
    topic = topic_vi.init_batched(keys, dense, n_topics, jnp.asarray(conc0), tuple(map(jnp.asarray, etas)),
                                  seed_docs_per_factor)
    modalities, doc_weight, topic = _shard_documents(dense, topic, conc0, mesh)
    logits = replicate(np.broadcast_to(np.asarray(logits0), (keys.shape[0],) + logits0.shape), mesh)
    state = sbvi.HDPState(topic, logits)
    log_coefficient = np.asarray(topic_vi.log_multinomial_coefficient(dense))
    etas_r, alpha_r, log_coefficient, prior_r = replicate((etas, np.asarray(alpha_pi, np.float64), log_coefficient,
                                                           stick_prior), mesh)
    static = dict(local_steps=int(local_steps), beta_steps=int(beta_steps),
                  beta_learning_rate=float(beta_learning_rate), optimize_beta=bool(optimize_beta),
                  chunk=max(1, min(int(chunk), int(max_iter))), mesh=mesh)

    def run_chunk(s):
        s, trace = _hdp_chunk(s, modalities, doc_weight, etas_r, alpha_r, log_coefficient, prior_r, **static)
        return s, np.asarray(trace.addressable_data(0))
    state, trace = optimize_chunked(run_chunk, state, max_iter=max_iter, tol=tol, chunk=static["chunk"],
                                    progress=progress)
    return state._replace(topic=_unpad_documents(state.topic, n_docs)), trace
