"""Cost curves (``zoo bench scaling``): time per iteration after compilation against the data size N for each model
family, at four sizes spanning 16x, with the growth exponent fitted by least squares on log time vs log N beside
the algorithm's expected one, the compile time apart, and the peak memory.

Every (family, N) runs in its own child process (``python -m zoo.experiments.bench.scaling FAMILY N``), single-threaded
(OMP_NUM_THREADS=1, XLA without its multi-threaded Eigen), so that its peak resident set size
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``, which counts XLA's buffers, unlike tracemalloc) is that size's
alone; the child also reports the RSS before its data were made (the JAX / zoo baseline). The first call of the
compiled iteration loop is compilation plus a run; the best of two more calls, divided by the iterations, is the
time per iteration; compile time = first call - best call.

Families (N, the expected exponent of one iteration's cost):
- em: Carbonetto 2003 MAP-EM, N points (D = 5, 3 components, 2 restarts): one E-step pass, O(N), exponent 1.
- mcvq: Ross 2003 variational EM, N cases (D = 16, 3 VQs x 4 states): O(N C K J ...) per case, exponent 1.
- lda: MoM-LDA coordinate ascent, N documents (2 modalities, ~40 tokens each, K = 5): O(nnz) = O(N), exponent 1.
- hdp: MoM-HDP stick-breaking VI, as lda with K = 8 and the stick step (O(K) per Adam step): exponent 1.
- gibbs_fs: Gustafson 2007 collapsed Gibbs (FS), N units (Sec. 6 data, p = 5): flips and label moves over the
  units, O(N) per sweep, exponent 1.
- mil: Kueck 2004 blocked Gibbs (hybrid), N instances (ring data): the kernel-selection step visits the N
  candidate basis functions, each against N-vectors of the Gram matrix, O(N^2) per sweep, exponent 2.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

from zoo.bench import register_benchmark

#: family -> (base N, base N in fast mode, iterations timed per call, expected exponent)
FAMILIES = {
    "em": (2_000, 500, 50, 1.0),
    "mcvq": (2_000, 50, 20, 1.0),
    "lda": (200, 50, 20, 1.0),
    "hdp": (200, 50, 20, 1.0),
    "gibbs_fs": (300, 12, 20, 1.0),
    "mil": (400, 50, 20, 2.0),
}
#: the four sizes, multiples of the base N (16x from first to last)
MULTIPLES = (1, 2, 4, 16)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0   # Linux: kilobytes


def _timed(run, iters: int) -> dict:
    """Compile + first run, then the best of two runs: per-iteration time and compile time (seconds)."""
    t0 = time.perf_counter()
    run()
    first = time.perf_counter() - t0
    best = float("inf")
    for _ in range(2):
        t0 = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t0)
    return {"per_iter_s": best / iters, "compile_s": max(first - best, 0.0)}


def _em(n: int, iters: int):
    import jax.numpy as jnp
    from zoo.inference.mixture import em
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 5)) + 3.0 * rng.integers(0, 3, (n, 1))
    X = X - X.mean(0)
    S = np.cov(X.T)
    hyper = em.Hyper(jnp.asarray(S), jnp.asarray(7.0), jnp.asarray(2.0), jnp.asarray(1.0), jnp.full(3, 1.5),
                     jnp.asarray(0.0))
    inits = em.Params(jnp.full((2, 3), 1 / 3), jnp.asarray(np.stack([X[:3], X[3:6]])),
                      jnp.broadcast_to(jnp.asarray(S), (2, 3, 5, 5)), jnp.broadcast_to(jnp.diag(jnp.asarray(S)), (2, 5)))
    Xj, allowed = jnp.asarray(X), jnp.ones((n, 3), bool)
    # tol = -1: never converged, exactly ``iters`` iterations
    return lambda: em.run_em_restarts(Xj, inits, hyper, allowed, em.EMConfig(), max_iter=iters,
                                      tol=-1.0).objective.block_until_ready()


def _mcvq(n: int, iters: int):
    import jax
    import jax.numpy as jnp
    from zoo.inference.mcvq import steps
    from zoo.inference.mcvq.variational_em import MCVQConfig, initialize, run_variational_em
    rng = np.random.default_rng(0)
    X, M = rng.normal(size=(n, 16)), np.ones((n, 16))
    K, J = 3, 4
    init = jax.vmap(lambda k: initialize(k, jnp.asarray(X), jnp.asarray(M), K, J, 1, 1e-3))(
        jax.random.split(jax.random.PRNGKey(0), 2))
    conc = steps.PriorConcentrations(jnp.ones(K), jnp.ones(J), jnp.ones(1))
    return lambda: run_variational_em(init, X, M, np.ones(iters), conc, 1e-3, MCVQConfig(), chunk=iters)


def _topic_data(n: int):
    rng = np.random.default_rng(0)
    topics = [rng.dirichlet(np.full(v, 0.2), size=5) for v in (200, 100)]
    mix = rng.dirichlet(np.full(5, 0.3), size=n)
    return [np.stack([rng.multinomial(20, m @ t) for m in mix]).astype(float) for t in topics]


def _lda(n: int, iters: int):
    import jax
    from zoo.inference.topics.topic_vi import fit_mean_field
    dense, keys = _topic_data(n), jax.random.split(jax.random.PRNGKey(0), 2)
    return lambda: fit_mean_field(keys, dense, 5, np.full(5, 0.5), [np.full(200, 0.1), np.full(100, 0.1)],
                                  max_iter=iters, tol=-1.0, local_steps=3, chunk=iters)


def _hdp(n: int, iters: int):
    import jax
    import numpyro.distributions as dist
    from zoo.inference.topics.stick_breaking_vi import fit_stick_breaking
    dense, keys = _topic_data(n), jax.random.split(jax.random.PRNGKey(0), 2)
    return lambda: fit_stick_breaking(keys, dense, 8, [np.full(200, 0.1), np.full(100, 0.1)], 2.0,
                                      dist.Beta(1.0, 2.0), init_stick_logits=np.zeros(7), max_iter=iters, tol=-1.0,
                                      local_steps=3, chunk=iters)


def _gibbs_fs(n: int, iters: int):
    import jax
    import zoo
    from zoo.data.gustafson07 import sec6_synthetic
    from zoo.inference.driver import sample_chunked
    from zoo.inference.label_feature.gibbs import Collect, build_gibbs_kernel, label_proba_sum
    from zoo.papers import gustafson07
    spec = zoo.model("gustafson07.fs")
    problem = gustafson07.region_problem(spec, gustafson07.region_arrays(sec6_synthetic(n_per_concept=n // 3)))
    keys = jax.random.split(jax.random.PRNGKey(0), 1)
    return lambda: sample_chunked(build_gibbs_kernel, "fs", problem, keys, num_warmup=0, num_sampling_sweeps=iters,
                                  observe=Collect("fs", ("M",)), accumulate=label_proba_sum, keep_index=0,
                                  chunk=iters)


def _mil(n: int, iters: int):
    import jax
    import zoo
    from zoo.data.mil import ring_data
    from zoo.inference.driver import sample_chunked
    from zoo.inference.mil.gibbs import build_mil_kernel, mil_draw
    from zoo.papers import kueck04
    spec = zoo.model("kueck04.hybrid")
    prep = kueck04.prepare(spec, ring_data(n=n, seed=0))
    config, problem = kueck04.mil_config(spec, prep), kueck04.mil_problem(spec, prep)
    keys = jax.random.split(jax.random.PRNGKey(0), 1)
    return lambda: sample_chunked(build_mil_kernel, config, problem, keys, num_warmup=0, num_sampling_sweeps=iters,
                                  observe=mil_draw, chunk=iters)


_BUILDERS = {"em": _em, "mcvq": _mcvq, "lda": _lda, "hdp": _hdp, "gibbs_fs": _gibbs_fs, "mil": _mil}


def measure(family: str, n: int) -> dict:
    """One (family, N) in this process: per-iteration and compile time, baseline and peak RSS (MB)."""
    import zoo  # noqa: F401  (float64)
    import jax
    iters = FAMILIES[family][2]
    jax.numpy.zeros(1).block_until_ready()
    baseline = _rss_mb()
    result = _timed(_BUILDERS[family](n, iters), iters)
    return dict(result, family=family, n=n, rss_baseline_mb=baseline, rss_peak_mb=_rss_mb(),
                backend=jax.default_backend())


def _child_env() -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    flags = env.get("XLA_FLAGS", "")
    if "xla_cpu_multi_thread_eigen" not in flags:
        env["XLA_FLAGS"] = (flags + " --xla_cpu_multi_thread_eigen=false").strip()
    return env


def growth_exponent(ns, times) -> float:
    """Least-squares slope of log time on log N."""
    return float(np.polyfit(np.log(np.asarray(ns, float)), np.log(np.asarray(times, float)), 1)[0])


def scaling_table(fast: bool = False, families=None, timeout: float = 900.0) -> list[dict]:
    """Every family at its four sizes, each in a child process; one row per family with the fitted exponent."""
    rows = []
    for family in families or FAMILIES:
        base_full, base_fast, _, expected = FAMILIES[family]
        points = []
        for mult in MULTIPLES:
            n = (base_fast if fast else base_full) * mult
            done = subprocess.run([sys.executable, "-m", "zoo.experiments.bench.scaling", family, str(n)], env=_child_env(),
                                  capture_output=True, text=True, timeout=timeout)
            if done.returncode != 0:
                raise RuntimeError(f"scaling {family} N={n} failed:\n{done.stderr[-3000:]}")
            points.append(json.loads(done.stdout.strip().splitlines()[-1]))
        ns = [p["n"] for p in points]
        rows.append({"family": family, "n": ns, "per_iter_ms": [round(1e3 * p["per_iter_s"], 4) for p in points],
                     "compile_s": [round(p["compile_s"], 2) for p in points],
                     "rss_peak_mb": [round(p["rss_peak_mb"]) for p in points],
                     "rss_baseline_mb": [round(p["rss_baseline_mb"]) for p in points],
                     "exponent": round(growth_exponent(ns, [p["per_iter_s"] for p in points]), 2),
                     "expected_exponent": expected, "backend": points[0]["backend"]})
    return rows


def markdown(rows: list[dict]) -> str:
    head = ("| family | N | ms / iteration | compile s | peak RSS MB (baseline) | exponent (expected) |\n"
            "| --- | --- | --- | --- | --- | --- |\n")
    body = "".join(
        f"| {r['family']} | {', '.join(map(str, r['n']))} | {', '.join(f'{t:.3g}' for t in r['per_iter_ms'])} | "
        f"{', '.join(f'{c:.1f}' for c in r['compile_s'])} | {', '.join(map(str, r['rss_peak_mb']))} "
        f"({r['rss_baseline_mb'][0]}) | {r['exponent']:.2f} ({r['expected_exponent']:g}) |\n" for r in rows)
    return head + body


@register_benchmark("scaling", peer="none (growth exponent against the algorithm's expected one)")
def bench_scaling(fast: bool = False) -> dict:
    rows = scaling_table(fast=fast)
    print(markdown(rows))
    return {r["family"]: r for r in rows}


if __name__ == "__main__":
    print(json.dumps(measure(sys.argv[1], int(sys.argv[2]))))
