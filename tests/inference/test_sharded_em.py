"""Data-sharded EM (zoo.inference.sharding): the rows split over 4 host devices (shard_map, psum of the E-step
statistics) reach the one-device fixed point to 1e-10 relative, for the MAP mixture (full and diagonal covariances)
and the translation model (an ``allowed`` mask), with a row count that is not a multiple of the shards; and over two
processes joined by ``jax.distributed.initialize`` on 127.0.0.1 (two host devices each).

JAX fixes its devices when it starts, so the fits run in child processes (this file is their script)."""
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def _env(n_devices: int) -> dict:
    return dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={n_devices}", OMP_NUM_THREADS="1",
                JAX_PLATFORMS="cpu")


@pytest.mark.extended
def test_sharded_em_reaches_the_one_device_fixed_point_on_four_devices():
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "local"], env=_env(4), capture_output=True,
                          text=True, timeout=600, cwd=HERE)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("ok") == 3, done.stdout


@pytest.mark.extended
def test_sharded_em_over_two_processes_with_jax_distributed():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "distributed", str(port), str(i)],
                              env=_env(2), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=HERE)
             for i in range(2)]
    outs = []
    for p in procs:
        try:
            outs.append(p.communicate(timeout=600)[0])
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise
    for p, out in zip(procs, outs):
        assert p.returncode == 0, out
        assert "devices 4 local 2" in out and "distributed ok" in out, out


# ---------------------------------------------------------------------------------------------------------------
# the child processes


def _problem(diagonal: bool, translation: bool, n_rows: int = 103, seed: int = 0):
    """A 3-component mixture in 2-D (centred), MAP with a proper IG(2, 1) on tau2, 2 restarts."""
    import jax.numpy as jnp
    from zoo.inference.mixture import em
    rng = np.random.default_rng(seed)
    centres = np.array([[-3.0, 0.0], [0.0, 3.0], [3.0, -1.0]])
    labels = rng.integers(0, 3, n_rows)
    X = centres[labels] + rng.normal(size=(n_rows, 2))
    X = X - X.mean(0)
    n_comp = 3
    if translation:   # each point's image allows its own concept and one other
        allowed = np.zeros((n_rows, n_comp), bool)
        allowed[np.arange(n_rows), labels] = True
        allowed[np.arange(n_rows), (labels + 1 + rng.integers(0, 2, n_rows)) % n_comp] = True
    else:
        allowed = np.ones((n_rows, n_comp), bool)
    sigma_star = np.cov(X.T)
    hyper = em.Hyper(sigma_star=jnp.asarray(sigma_star), alpha=jnp.asarray(4.0), a=jnp.asarray(2.0),
                     b=jnp.asarray(1.0), nu=jnp.full((n_comp,), 1.5), reg_covar=jnp.asarray(0.0))
    config = em.EMConfig(diagonal=diagonal, use_prior=True, learn_weights=not translation)
    means = np.stack([X[rng.choice(n_rows, n_comp, replace=False)] for _ in range(2)])
    covs = np.broadcast_to(np.diag(sigma_star) if diagonal else sigma_star, (2, n_comp) + (
        (2,) if diagonal else (2, 2))).copy()
    inits = em.Params(jnp.full((2, n_comp), 1.0 / n_comp), jnp.asarray(means), jnp.asarray(covs),
                      jnp.broadcast_to(jnp.diag(jnp.asarray(sigma_star)), (2, 2)))
    return X, inits, hyper, allowed, config


def _compare(one, sharded, what):
    import jax
    for name, a, b in zip(("params", "objective"), (one.params, one.objective), (sharded.params, sharded.objective)):
        for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
            np.testing.assert_allclose(np.asarray(y), np.asarray(x), rtol=1e-10, atol=1e-12, err_msg=f"{what} {name}")
    np.testing.assert_array_equal(np.asarray(one.n_iter), np.asarray(sharded.n_iter), err_msg=what)
    assert np.all(np.asarray(one.converged)), f"{what}: the one-device fit did not converge"
    assert np.all(np.isfinite(np.asarray(one.objective))), f"{what}: non-finite objective"
    assert np.all(np.diff(np.asarray(one.objective), axis=-1) >= -1e-9), f"{what}: objective decreased"


def _child_local():
    import jax
    import jax.numpy as jnp
    from zoo.inference.mixture import em
    from zoo.inference.sharding import data_mesh, run_em_sharded
    assert jax.device_count() == 4
    for diagonal, translation in ((False, False), (True, False), (False, True)):
        X, inits, hyper, allowed, config = _problem(diagonal, translation)
        one = em.run_em_restarts(jnp.asarray(X), inits, hyper, jnp.asarray(allowed), config, max_iter=500, tol=1e-10)
        sharded = run_em_sharded(X, inits, hyper, allowed, config, max_iter=500, tol=1e-10, mesh=data_mesh(4))
        _compare(one, sharded, f"diagonal={diagonal} translation={translation}")
        print("ok", diagonal, translation)


def _child_distributed(port: str, process_id: str):
    import jax
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=2,
                               process_id=int(process_id), local_device_ids=[0, 1])
    import jax.numpy as jnp
    from zoo.inference.mixture import em
    from zoo.inference.sharding import run_em_sharded
    print("devices", jax.device_count(), "local", jax.local_device_count())
    X, inits, hyper, allowed, config = _problem(False, False)
    sharded = run_em_sharded(X, inits, hyper, allowed, config, max_iter=500, tol=1e-10)   # all 4 devices
    local = jax.tree_util.tree_map(lambda a: a.addressable_data(0), sharded)
    with jax.default_device(jax.local_devices()[0]):
        one = em.run_em_restarts(jnp.asarray(X), inits, hyper, jnp.asarray(allowed), config, max_iter=500, tol=1e-10)
    _compare(one, local, f"process {process_id}")
    print("distributed ok")
    jax.distributed.shutdown()


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    import zoo  # noqa: F401  (float64)
    {"local": _child_local, "distributed": _child_distributed}[sys.argv[1]](*sys.argv[2:])
