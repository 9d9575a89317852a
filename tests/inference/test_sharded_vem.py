"""Data-sharded variational EM for MCVQ (Ross 2003; zoo.inference.sharding.run_variational_em_sharded) and MoM-LDA
coordinate ascent (Yakhnenko & Honavar; sharding.fit_mean_field_sharded): the cases / documents split over 4 host
devices (psum of the sums over them) give the one-device objective trace and fixed point to 1e-10 relative, for the
plain and the clustered MCVQ (missing entries), two-modality LDA and the stick-breaking HDP (beta optimized; its
parameters to 1e-9), with counts that are not a multiple of the shards; the objectives are monotone (F_1 never increases once T = 1; the ELBO never decreases).

JAX fixes its devices when it starts, so the fits run in a child process (this file is its script)."""
import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def _run_child(case: str) -> str:
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", OMP_NUM_THREADS="1",
               JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, os.path.abspath(__file__), case], env=env, capture_output=True, text=True,
                          timeout=600, cwd=HERE)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.extended
def test_sharded_mcvq_reaches_the_one_device_fixed_point_on_four_devices():
    out = _run_child("mcvq")
    assert out.count("ok") == 2, out


@pytest.mark.slow    # about 25 s of CPU (compilations of the LDA and HDP chunks, one device and sharded)
def test_sharded_lda_and_hdp_reach_the_one_device_fixed_point_on_four_devices():
    out = _run_child("topics")
    assert "ok lda" in out and "ok hdp" in out, out


def _child():
    import jax
    import jax.numpy as jnp
    from zoo.inference.mcvq import steps
    from zoo.inference.sharding import data_mesh, run_variational_em_sharded
    from zoo.inference.mcvq.variational_em import MCVQConfig, initialize, run_variational_em, temperature_schedule
    assert jax.device_count() == 4
    rng = np.random.default_rng(0)
    C, D, K, J = 37, 6, 2, 3
    X = rng.normal(size=(C, D)) + 2.0 * (rng.random((C, 1)) < 0.5)
    M = (rng.random((C, D)) > 0.15).astype(float)
    X = X * M
    for clustered in (False, True):
        N = 2 if clustered else 1
        config = MCVQConfig(update_classes=clustered, update_beta=clustered, with_beta_prior=clustered)
        conc = steps.PriorConcentrations(a=jnp.ones(K), b=jnp.ones(J), beta=jnp.full(N, 2.0 if clustered else 1.0))
        keys = jax.random.split(jax.random.PRNGKey(1), 2)
        init = jax.vmap(lambda k: initialize(k, jnp.asarray(X), jnp.asarray(M), K, J, N, 1e-3,
                                             random_class_priors=clustered))(keys)
        temps = temperature_schedule(60, 2.0, 20)
        one, trace = run_variational_em(init, X, M, temps, conc, 1e-3, config)
        sharded, trace_s = run_variational_em_sharded(init, X, M, temps, conc, 1e-3, config, mesh=data_mesh(4))
        assert np.all(np.isfinite(trace))
        np.testing.assert_allclose(trace_s, trace, rtol=1e-10)
        for a, b in zip(jax.tree_util.tree_leaves(one), jax.tree_util.tree_leaves(sharded)):
            np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-10, atol=1e-12)
        assert np.all(np.diff(trace[:, 20:], axis=1) <= 1e-8 * np.abs(trace[:, 21:]))   # F_1 never increases
        print("ok", clustered)


def _child_topics():
    import jax
    from zoo.inference.sharding import data_mesh, fit_mean_field_sharded
    from zoo.inference.topics.topic_vi import fit_mean_field
    rng = np.random.default_rng(3)
    n_docs, K = 23, 3
    topics = [rng.dirichlet(np.full(v, 0.3), size=K) for v in (8, 5)]
    mix = rng.dirichlet(np.full(K, 0.5), size=n_docs)
    dense = [np.stack([rng.multinomial(12, m @ t) for m in mix]).astype(float) for t in topics]
    dense[0][4] = 0.0                               # a document with no words of the first modality
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    settings = dict(max_iter=40, tol=1e-12, local_steps=2, chunk=10)
    one, trace = fit_mean_field(keys, dense, K, np.full(K, 0.5), [np.full(8, 0.1), np.full(5, 0.1)], **settings)
    sharded, trace_s = fit_mean_field_sharded(keys, dense, K, np.full(K, 0.5), [np.full(8, 0.1), np.full(5, 0.1)],
                                              mesh=data_mesh(4), **settings)
    assert trace.shape == trace_s.shape and np.all(np.isfinite(trace))
    np.testing.assert_allclose(trace_s, trace, rtol=1e-10)
    for a, b in zip(jax.tree_util.tree_leaves(one), jax.tree_util.tree_leaves(sharded)):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-10, atol=1e-12)
    assert np.all(np.diff(trace, axis=1) >= -1e-9 * np.abs(trace[:, 1:]))
    print("ok lda")
    import numpyro.distributions as dist
    from zoo.inference.sharding import fit_stick_breaking_sharded
    from zoo.inference.topics.stick_breaking_vi import fit_stick_breaking
    etas = [np.full(8, 0.1), np.full(5, 0.1)]
    hdp = dict(init_stick_logits=np.zeros(K - 1), max_iter=20, tol=1e-12, local_steps=2, beta_steps=5, chunk=10)
    one, trace = fit_stick_breaking(keys, dense, K, etas, 2.0, dist.Beta(1.0, 3.0), **hdp)
    sharded, trace_s = fit_stick_breaking_sharded(keys, dense, K, etas, 2.0, dist.Beta(1.0, 3.0), mesh=data_mesh(4),
                                                  **hdp)
    assert np.all(np.isfinite(trace))
    np.testing.assert_allclose(trace_s, trace, rtol=1e-10)
    for a, b in zip(jax.tree_util.tree_leaves(one), jax.tree_util.tree_leaves(sharded)):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-9, atol=1e-11)
    assert np.all(np.diff(trace, axis=1) >= -1e-9 * np.abs(trace[:, 1:]))
    print("ok hdp")


if __name__ == "__main__":
    import zoo  # noqa: F401  (float64)
    {"mcvq": _child, "topics": _child_topics}[sys.argv[1]]()
