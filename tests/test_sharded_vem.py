"""Data-sharded variational EM for MCVQ (Ross 2003; zoo.inference.sharding.run_variational_em_sharded): the cases
split over 4 host devices (psum of the sums over cases) give the one-device free-energy trace and fixed point to
1e-10 relative, for the plain and the clustered model, with a case count that is not a multiple of the shards and
missing entries; and the annealed free energy never increases once T = 1 (the one-device run's monotone check).

JAX fixes its devices when it starts, so the fits run in a child process (this file is its script)."""
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def test_sharded_mcvq_reaches_the_one_device_fixed_point_on_four_devices():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", OMP_NUM_THREADS="1",
               JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, os.path.abspath(__file__)], env=env, capture_output=True, text=True,
                          timeout=600, cwd=HERE)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("ok") == 2, done.stdout


def _child():
    import jax
    import jax.numpy as jnp
    from zoo.inference import mcvq_steps as steps
    from zoo.inference.sharding import data_mesh, run_variational_em_sharded
    from zoo.inference.variational_em import EMConfig, initialize, run_variational_em, temperature_schedule
    assert jax.device_count() == 4
    rng = np.random.default_rng(0)
    C, D, K, J = 37, 6, 2, 3
    X = rng.normal(size=(C, D)) + 2.0 * (rng.random((C, 1)) < 0.5)
    M = (rng.random((C, D)) > 0.15).astype(float)
    X = X * M
    for clustered in (False, True):
        N = 2 if clustered else 1
        config = EMConfig(update_classes=clustered, update_beta=clustered, with_beta_prior=clustered)
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


if __name__ == "__main__":
    import zoo  # noqa: F401  (float64)
    _child()
