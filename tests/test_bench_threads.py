"""``zoo bench`` runs single-threaded: the command line sets OMP/OpenBLAS/MKL threads to 1 and turns XLA's
multi-threaded Eigen off before the benchmarks load, and limits any pool loaded earlier (``import zoo`` may load
NumPy) with threadpoolctl, so every BLAS and OpenMP pool that the benchmarks use has 1 thread.

Checked in a fresh interpreter whose environment has none of these variables: the CLI's ``bench`` entry
(``zoo.cli.main``) runs a probe benchmark that reads threadpoolctl's view of the loaded pools."""
import json
import os
import subprocess
import sys
import textwrap

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "XLA_FLAGS")

PROBE = textwrap.dedent('''
    import json, os, sys
    import zoo.cli
    numpy_before = "numpy" in sys.modules     # reported: the CLI must cope either way
    from zoo.bench import register_benchmark

    @register_benchmark("threads_probe", peer="none")
    def threads_probe(fast=False):
        import numpy as np
        import sklearn.cluster  # noqa: F401 - loads scikit-learn's OpenMP runtime too
        import threadpoolctl
        np.ones((64, 64)) @ np.ones((64, 64))
        pools = [[p["user_api"], p["internal_api"], p["num_threads"]] for p in threadpoolctl.threadpool_info()]
        return {"pools": pools, "env": {k: os.environ.get(k) for k in %r}, "numpy_before": numpy_before}

    sys.exit(zoo.cli.main(["bench", "threads_probe", "--out", sys.argv[1]]))
    ''' % (THREAD_VARIABLES,))


def _clean_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    env["MPLBACKEND"] = "Agg"
    return env


def test_zoo_bench_sets_single_thread_environment_before_numpy_loads(tmp_path):
    result = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path)], env=_clean_env(), capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    probe = json.loads((tmp_path / "bench.json").read_text())["threads_probe"]
    assert probe["env"]["OMP_NUM_THREADS"] == "1" and probe["env"]["OPENBLAS_NUM_THREADS"] == "1"
    assert "--xla_cpu_multi_thread_eigen=false" in probe["env"]["XLA_FLAGS"]
    apis = {api for api, _, _ in probe["pools"]}
    assert "blas" in apis, probe["pools"]                      # NumPy's OpenBLAS is among the pools checked
    assert all(threads == 1 for _, _, threads in probe["pools"]), (probe["pools"], probe["numpy_before"])


def test_the_probe_would_see_more_threads_without_the_cli():
    """The check above can fail: in the same clean environment, NumPy loaded without the CLI starts its BLAS pool
    with one thread per core (skipped on a one-core machine, where both are 1)."""
    if (os.cpu_count() or 1) < 2:
        import pytest
        pytest.skip("one core: a BLAS pool has one thread either way")
    code = ("import numpy, threadpoolctl; "
            "print(max(p['num_threads'] for p in threadpoolctl.threadpool_info() if p['user_api'] == 'blas'))")
    result = subprocess.run([sys.executable, "-c", code], env=_clean_env(), capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert int(result.stdout.strip()) > 1
