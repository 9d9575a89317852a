"""chain_method="parallel": the chains sharded over devices (a mesh axis of chains, shard_map) give each chain the
draws of the sequential run with the same seed, bit for bit: the driver's toy walk (chain counts that do and do not
divide the device count), the kueck04 blocked Gibbs sampler and the gustafson07 collapsed sweep.

JAX fixes the number of host devices when it starts, so the comparisons run in a child process started with
``XLA_FLAGS=--xla_force_host_platform_device_count=4`` (this file is that child's script too)."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
N_DEVICES = 4


def _run_child(case: str) -> str:
    env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={N_DEVICES}", OMP_NUM_THREADS="1",
               JAX_PLATFORMS="cpu")
    # the child imports the toy walk from tests/test_golden_draws.py, one folder up
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.dirname(HERE), env.get("PYTHONPATH", "")) if p)
    done = subprocess.run([sys.executable, os.path.abspath(__file__), case], env=env, capture_output=True,
                          text=True, timeout=600, cwd=HERE)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.extended
def test_parallel_walk_chains_equal_sequential_on_four_devices():
    out = _run_child("walk")
    assert f"devices {N_DEVICES}" in out and "walk ok" in out


@pytest.mark.slow    # 20-25 s; the toy kernel above checks the driver's parallel path in the default suite
def test_parallel_kueck04_chains_equal_sequential_on_four_devices():
    assert "kueck04 ok" in _run_child("kueck04")


@pytest.mark.slow    # about a minute of CPU: the collapsed sweep's compilation, twice
def test_parallel_gustafson07_chains_equal_sequential_on_four_devices():
    assert "gustafson07 ok" in _run_child("gustafson07")


def test_parallel_on_the_devices_at_hand_equals_sequential():
    """In this process (one CPU device unless XLA_FLAGS says otherwise): the same draws as sequential chains."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from zoo.inference.driver import sample_chunked
    from test_golden_draws import _WalkConfig, _build_walk, _walk_info, _walk_x
    keys = jax.random.split(jax.random.PRNGKey(9), 3)
    runs = [sample_chunked(_build_walk, _WalkConfig(), jnp.asarray(0.5), keys, num_warmup=3, num_sampling_sweeps=8,
                           observe=_walk_x, accumulate=_walk_info, chunk=3, chain_method=m)
            for m in ("sequential", "parallel")]
    np.testing.assert_array_equal(runs[0].draws["x"], runs[1].draws["x"])
    np.testing.assert_array_equal(np.asarray(runs[0].running), np.asarray(runs[1].running))


def test_chain_method_is_validated_in_one_place():
    from zoo.inference.driver import CHAIN_METHODS as DRIVER_METHODS
    from zoo.core.options import CHAIN_METHODS, chain_method, check_common_options
    assert CHAIN_METHODS == DRIVER_METHODS
    for method in CHAIN_METHODS:
        assert check_common_options({"chain_method": method})["chain_method"] == method
    for bad in ("pmap", "", None, 1, ("parallel",)):
        with pytest.raises(ValueError, match="^chain_method:"):
            chain_method(bad)


def test_driver_refuses_an_unknown_chain_method_before_running():
    import jax
    import jax.numpy as jnp
    from zoo.inference.driver import sample_chunked
    from test_golden_draws import _WalkConfig, _build_walk, _walk_x
    with pytest.raises(ValueError, match="chain_method"):
        sample_chunked(_build_walk, _WalkConfig(), jnp.asarray(0.5), jax.random.split(jax.random.PRNGKey(0), 2),
                       num_warmup=1, num_sampling_sweeps=1, observe=_walk_x, chain_method="pmap")


# ---------------------------------------------------------------------------------------------------------------
# the child process


def _same(a, b, what):
    import jax
    import numpy as np
    leaves_a, leaves_b = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert len(leaves_a) == len(leaves_b) > 0, what
    for x, y in zip(leaves_a, leaves_b):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=what)


def _child_walk():
    import jax
    import jax.numpy as jnp
    from test_golden_draws import _WalkConfig, _build_walk, _walk_info, _walk_x
    from zoo.inference.driver import sample_chunked
    print("devices", jax.device_count())
    for n_chains in (1, 3, 4, 6):
        keys = jax.random.split(jax.random.PRNGKey(n_chains), n_chains)
        runs = {m: sample_chunked(_build_walk, _WalkConfig(), jnp.asarray(0.5), keys, num_warmup=7,
                                  num_sampling_sweeps=20, observe=_walk_x, accumulate=_walk_info, thinning=3, chunk=2,
                                  chain_method=m) for m in ("sequential", "parallel")}
        _same(runs["sequential"].draws, runs["parallel"].draws, f"walk draws, {n_chains} chains")
        _same(runs["sequential"].running, runs["parallel"].running, f"walk sums, {n_chains} chains")
        _same(runs["sequential"].last, runs["parallel"].last, f"walk last carry, {n_chains} chains")
        if n_chains == 4:   # one chain per device
            assert len(runs["parallel"].last.state.x.sharding.device_set) == 4
    print("walk ok")


def _child_kueck04():
    import zoo
    from zoo.data.mil import ring_data
    from zoo.papers import kueck04
    spec = zoo.model("kueck04.hybrid")
    prep = kueck04.prepare(spec, ring_data(n=30, seed=4))
    config, problem = kueck04.mil_config(spec, prep), kueck04.mil_problem(spec, prep)
    runs = {m: kueck04._run_chunked(problem, config, seed=3, num_chains=3, num_warmup=4, num_samples=6, thinning=2,
                                    progress_bar=False, fast_compile=True, chain_method=m)
            for m in ("sequential", "parallel")}
    _same(runs["sequential"], runs["parallel"], "kueck04")
    print("kueck04 ok")


def _child_gustafson07():
    import jax
    import zoo
    from zoo.data.gustafson07 import sec6_synthetic
    from zoo.inference.driver import FAST_COMPILE_OPTIONS, sample_chunked
    from zoo.inference.label_feature.gibbs import Collect, build_gibbs_kernel, label_proba_sum
    from zoo.papers import gustafson07
    spec = zoo.model("gustafson07.fs")
    arrays = gustafson07.region_arrays(sec6_synthetic(n_per_concept=6, seed=1))
    problem = gustafson07.region_problem(spec, arrays)
    keys = jax.random.split(jax.random.PRNGKey(2), 3)
    runs = {m: sample_chunked(build_gibbs_kernel, "fs", problem, keys, num_warmup=3, num_sampling_sweeps=5,
                              observe=Collect("fs", ("Y", "M")), accumulate=label_proba_sum, keep_index=0, chunk=4,
                              chain_method=m, compiler_options=FAST_COMPILE_OPTIONS)
            for m in ("sequential", "parallel")}
    _same(runs["sequential"].draws, runs["parallel"].draws, "gustafson07 draws")
    _same(runs["sequential"].running, runs["parallel"].running, "gustafson07 label probabilities")
    print("gustafson07 ok")


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    import zoo  # noqa: F401  (float64, as every fit)
    {"walk": _child_walk, "kueck04": _child_kueck04, "gustafson07": _child_gustafson07}[sys.argv[1]]()
