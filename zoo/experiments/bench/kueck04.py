"""``zoo bench mil``: the Kueck (2004) sampler's sweeps per second on the ring data, the Musk1 cross-validation's
wall time, and fixed-active-set Gibbs against NumPyro NUTS on the same posterior (effective samples per second).
Built on the public builders of ``zoo.papers.kueck04`` (``mil_problem``, ``mil_config``, ``advance_chains``).
"""
from __future__ import annotations

import time
import warnings

import numpy as np

import zoo
from zoo.bench import Goal, register_benchmark
from zoo.data import Bags
from zoo.data.mil import embedded_cluster_data, load_mil_benchmark, ring_data
from zoo.experiments.kueck04 import cross_validate

__all__ = ["benchmark_mil", "large_n_sweeps"]

@register_benchmark("mil", goals=(Goal("gibbs_vs_nuts_ess_per_s_ratio", ">=", 1.0, "ESS/s blocked Gibbs / NUTS"),),
                    peer="NumPyro NUTS on kueck04.supervised with the active set fixed")
def benchmark_mil(fast: bool = False) -> dict:
    """Sweeps/s on the ring data (N = 500), 1 chain and 4 chains (vectorized by vmap, and sequential by lax.map;
    after JIT, compile apart; the thesis' C++ did 400/s), the Musk1 10-fold cross-validation's wall time and its
    one compilation (when the data are present; full mode: also the per-fold-compiling before figure), and effective
    samples per second (median over 100 held-out points) of Phi(f(x)) on the embedded-cluster data (N = 600,
    instance labels, 8 fixed active kernels): fixed-active-set Gibbs (data augmentation; and the Z-collapsed move,
    ``beta_move="laplace"``) vs NUTS on the same posterior with Z integrated out (``probit_fixed_active_program``);
    full mode: ``large_n_sweeps`` (100,000 synthetic instances, 500 k-means++ centres), rows on demand then
    the stored N x M matrix. Measured (one chain, 2 cores under load ~11-14): 100,000 stored: prepare 37 s,
    compile 190 s, 0.117 s per sweep, peak RSS 2.09 GB; on demand: 70 s, 71 s, 1.85 s per sweep, 0.99 GB;
    1,000,000 on demand (``large_n_sweeps(1_000_000, rows="on_demand", n_sweeps=5)``): prepare 316 s, compile
    196 s, 11.6 s per sweep, peak RSS 2.04 GB (stored, psi and psi' alone would take 8 GB)."""
    import jax
    from zoo.bench import timeit_best
    from zoo.inference.driver import over_chains
    from zoo.inference.mil.gibbs import init_mil_state, mil_gibbs_sweep
    from zoo.papers import kueck04 as paper

    data = ring_data()
    spec = zoo.model("kueck04.constraint", kernel="gaussian", width=1.0)
    prep = paper.prepare(spec, Bags(data.X, data.bag_ids, group_labels=data.group_labels))
    config = paper.mil_config(spec, prep, "exact", False)
    problem = paper.mil_problem(spec, prep)
    n_sweeps = 200 if fast else 1000
    result = {}
    for chains, method in ((1, "single"), (4, "vectorized"), (4, "sequential")):
        def run(keys, problem):
            def one(key):
                state = init_mil_state(key, problem, config)
                return jax.lax.fori_loop(0, n_sweeps, lambda i, s: mil_gibbs_sweep(s, problem, config), state)
            if method == "sequential":
                return jax.lax.map(one, keys).n_active
            return over_chains(one, keys, "vectorized").n_active
        keys = jax.random.split(jax.random.PRNGKey(0), chains)
        t0 = time.perf_counter()
        compiled = jax.jit(run).lower(keys, problem).compile()
        compile_s = time.perf_counter() - t0
        best = timeit_best(lambda: jax.block_until_ready(compiled(keys, problem)), repeats=3)
        name = "1chain" if chains == 1 else f"{chains}chains_{method}"
        result[f"ring_sweeps_per_s_{name}"] = chains * n_sweeps / best
        result[f"ring_compile_s_{name}"] = compile_s
    result.update(_nuts_comparison(fast))
    result.update(_musk1_cross_validation_time(fast))
    if not fast:   # rows on demand first: the peak RSS of a process only grows
        result.update(large_n_sweeps(rows="on_demand", prefix="large_n_on_demand"))
        result.update(large_n_sweeps(rows="stored"))
    return result


def _musk1_cross_validation_time(fast: bool) -> dict:
    """Wall time of the 10-fold cross-validation on Musk1 (``cross_validate``: 1000 + 1000 sweeps per fold, 300 +
    300 in --fast; folds padded to one shape, so one compilation: the first fold's extra time over the mean of the
    others is reported as the compilation), beside scikit-learn's SI-SVM in the same folds; and (full mode) the
    before figure: the same folds fitted with ``zoo.fit`` one by one, each fold's shapes compiling anew. Empty
    (with a message) when the data are absent."""
    try:
        data = load_mil_benchmark("musk1")
    except FileNotFoundError as err:
        print(f"bench mil: Musk1 10-fold timing skipped ({err})")
        return {}
    res = cross_validate("musk1", fast, n_folds=10)
    first, rest = res["sampling_s_first_fold"], res["sampling_s_other_folds_mean"]
    out = {"musk1_10fold_wall_s": res["wall_s_by_method"]["kueck04.constraint"],
           "musk1_10fold_compile_s": max(first - rest, 0.0), "musk1_10fold_fold_s_after_compile": rest,
           "musk1_10fold_si_svm_wall_s": res["wall_s_by_method"]["SI-SVM"],
           "musk1_10fold_accuracy_pct": res["kueck04.constraint"]["accuracy_pct"],
           "musk1_10fold_auc_x100": res["kueck04.constraint"]["auc_x100"]}
    if not fast:
        out["musk1_10fold_wall_s_before"] = _per_fold_fits_time(data)
    return out


def _per_fold_fits_time(data) -> float:
    """The before figure: the 10 folds fitted by ``zoo.fit`` one by one (1000 + 1000 sweeps, max_active = 100,
    as ``cross_validate`` did before the padding), each compiling its own sampler; fits only (no prediction)."""
    from zoo.data.mil import stratified_bag_folds, subset_bags
    folds = stratified_bag_folds(data.bag_labels, 10, seed=0)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(10):
            zoo.fit(zoo.model("kueck04.constraint", max_active=100), subset_bags(data, np.flatnonzero(folds != k)),
                    seed=k, num_chains=1, num_warmup=1000, num_samples=1000, progress_bar=False)
    return time.perf_counter() - t0


def large_n_sweeps(n_instances: int = 100_000, basis: int = 500, max_active: int = 50, n_sweeps: int = 20,
                   seed: int = 0, rows: str | None = None, prefix: str = "large_n") -> dict:
    """kueck04.constraint with a candidate basis (``basis`` centres by k-means++, issue 21.4) on synthetic bags:
    ``n_instances`` instances in bags of 10, 10 features, positive bags hold 1-3 instances shifted by 2 in every
    feature. ``rows``: the design's rows "stored" (N x M kernel matrix) or "on_demand" (``mil_rows``; None: the
    default rule). Returns (keys starting with ``prefix``) the preparation time (centres, kernel matrix or blocked
    Gram), the compilation time, seconds per sweep after compilation (one chain, ``n_sweeps`` sweeps) and the
    process' peak resident memory so far (a later, smaller run cannot lower it: run the smaller one first)."""
    import resource
    import jax
    from zoo.inference.driver import sample_chunked
    from zoo.inference.mil.gibbs import build_mil_kernel, mil_draw
    from zoo.papers import kueck04 as paper
    rng = np.random.default_rng(seed)
    n_bags = n_instances // 10
    bag_ids = np.repeat(np.arange(n_bags), 10)
    labels = rng.random(n_bags) < 0.5
    X = rng.normal(size=(n_instances, 10))
    hot = labels[bag_ids] & (np.tile(np.arange(10), n_bags) < rng.integers(1, 4, n_bags)[bag_ids])
    X[hot] += 2.0
    data = Bags(X, bag_ids, bag_labels=labels.astype(int))
    spec = zoo.model("kueck04.constraint", basis=basis, max_active=max_active)
    t0 = time.perf_counter()
    prep = paper.prepare(spec, data, rows=rows)
    problem = paper.mil_problem(spec, prep)
    prepare_s = time.perf_counter() - t0
    config = paper.mil_config(spec, prep, "exact", False)
    keys = jax.random.split(jax.random.PRNGKey(seed), 1)

    def run(n):
        t = time.perf_counter()
        out = sample_chunked(build_mil_kernel, config, problem, keys, num_warmup=0, num_sampling_sweeps=n,
                             observe=mil_draw, chunk=n_sweeps, chain_method="sequential")
        return time.perf_counter() - t, out
    first, _ = run(n_sweeps)                 # compiles the chunk (n_sweeps sweeps) and the initialization
    second, out = run(n_sweeps)
    figures = {"instances": n_instances, "basis": basis, "rows": "stored" if prep.psi is not None else "on_demand",
               "prepare_s": prepare_s, "compile_s": max(first - second, 0.0), "s_per_sweep": second / n_sweeps,
               "active_mean": float(np.mean(out.draws[1]["n_active"])),
               "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20}
    return {f"{prefix}_{name}": value for name, value in figures.items()}


def _nuts_comparison(fast: bool) -> dict:
    """Fixed-active-set Gibbs against NumPyro NUTS on the same posterior with Z integrated out, with its default
    diagonal mass matrix and with a dense one (the kernel columns are strongly correlated, which a diagonal
    metric cannot undo). Two zoo samplers, both on the zoo's compiled chunk driver (as ``zoo.fit`` runs them):
    "gibbs", the data-augmentation sweep (beta | Z, rescaling, delta2 | beta, Z | beta), and "collapsed",
    ``beta_move="laplace"`` with default settings, where a fixed active set integrates Z out altogether (delta2 |
    beta and the collapsed Metropolis-Hastings move of ``zoo.inference.mil.collapsed_beta``). Capacity = the 8 active
    kernels. Each sampler runs once to compile, then with three more seeds (timed, compilation excluded); a run's
    draws give the effective sample size of Phi(f(x)) at 100 held-out points (median over points), and the
    figures are medians over the three runs (per-run ESS listed)."""
    import arviz as az
    import jax
    import jax.numpy as jnp
    from jax.scipy.special import ndtr
    from numpyro.infer import MCMC, NUTS
    from zoo.inference.mil.gibbs import state_from_position
    from zoo.models.mil import gram_matrix, probit_fixed_active_program
    from zoo.papers import kueck04 as paper

    # overlapping classes (embedded cluster): with separable data the probit posterior of beta is improper-like
    # along the separating direction and neither sampler has a stationary target worth timing
    train = embedded_cluster_data(seed=0)
    held_all = embedded_cluster_data(seed=1)
    held = Bags(held_all.X[:100], np.arange(100))
    rng = np.random.default_rng(0)
    # fixed active set: 8 training points, 2 positives and 6 negatives, chosen at random (seed 0)
    pos, neg = np.flatnonzero(train.instance_labels == 1), np.flatnonzero(train.instance_labels == 0)
    active = np.r_[rng.choice(pos, 2, replace=False), rng.choice(neg, 6, replace=False)]
    spec = zoo.model("kueck04.supervised", kernel="gaussian", width=1.0, max_active=active.size)
    prep = paper.prepare(spec, train)
    psi_new = np.asarray(gram_matrix(jnp.asarray(held.X), jnp.asarray(prep.X), "gaussian", 1.0))
    n = 1000 if fast else 4000
    problem = paper.mil_problem(spec, prep)
    gamma = jnp.zeros(prep.psi.shape[1], bool).at[active].set(True)
    z0 = jnp.where(jnp.asarray(train.instance_labels) == 1, 0.5, -0.5)

    def zoo_runner(beta_move):
        config = paper.mil_config(spec, prep, "exact", False)._replace(update_gamma=False, beta_move=beta_move)

        # compiled like zoo.fit's chain initialization (run eagerly it took 0.6 s, as long as 4000 sweeps)
        init = jax.jit(lambda key: state_from_position(key, problem, config, gamma, jnp.zeros(gamma.shape[0]),
                                                       jnp.asarray(1.0), z0))

        def run(seed):
            states = jax.tree_util.tree_map(lambda x: x[None], init(jax.random.PRNGKey(seed)))
            draws, accepted = [], []
            for start in range(-(n // 4), n, paper.CHUNK):          # warm-up chunks, then sampling chunks
                steps = min(paper.CHUNK, n - start) if start >= 0 else min(paper.CHUNK, -start)
                states, (positions, stats) = paper.advance_chains(states, problem, steps, config, paper.CHUNK, 1)
                if start >= 0:
                    draws.append(np.asarray(positions["beta"][0, :steps]))
                    accepted.append(np.asarray(stats["beta_acceptance"][0, :steps]))
            return np.concatenate(draws), {"acceptance": float(np.mean(np.concatenate(accepted)))}
        return run

    def nuts_runner(dense):
        mcmc = MCMC(NUTS(probit_fixed_active_program, dense_mass=dense), num_warmup=n // 4, num_samples=n,
                    progress_bar=False, jit_model_args=True)

        def run(seed):
            mcmc.run(jax.random.PRNGKey(seed), extra_fields=("num_steps",), psi_active=jnp.asarray(prep.psi[:, active]),
                     gram_active=jnp.asarray(prep.gram[np.ix_(active, active)]),
                     y=jnp.asarray(train.instance_labels), prior_delta2=spec.priors["delta2"])
            beta = np.zeros((n, prep.psi.shape[1]))
            beta[:, active] = np.asarray(mcmc.get_samples()["beta"])
            steps = float(np.mean(np.asarray(mcmc.get_extra_fields()["num_steps"])))
            return beta, {"leapfrog_steps_mean": steps}
        return run

    out = {}
    runs = (("gibbs", zoo_runner("gibbs")), ("collapsed", zoo_runner("laplace")), ("nuts", nuts_runner(False)),
            ("nuts_dense", nuts_runner(True)))
    seeds = (2,) if fast else (2, 3, 4)          # one run's ESS swings (e.g. an independence sampler stuck a while)
    for name, run in runs:
        t0 = time.perf_counter()
        run(1)                                  # includes compilation
        first = time.perf_counter() - t0
        ess_runs, secs_runs, extras = [], [], []
        for seed in seeds:                      # same shapes: the compiled code is reused
            t0 = time.perf_counter()
            beta, extra = run(seed)
            secs_runs.append(time.perf_counter() - t0)
            prob = np.asarray(ndtr(beta @ psi_new.T))           # (draws, 100)
            ess = np.asarray(az.ess(az.convert_to_dataset({"p": prob[None]}))["p"].values)
            ess_runs.append(float(np.median(ess)))
            extras.append(extra)
        ess_per_s = [e / t for e, t in zip(ess_runs, secs_runs)]
        out[f"{name}_ess_median"] = float(np.median(ess_runs))
        out[f"{name}_ess_runs"] = ess_runs
        out[f"{name}_ess_per_s_median"] = float(np.median(ess_per_s))
        out[f"{name}_seconds"] = float(np.median(secs_runs))
        out[f"{name}_compile_s"] = max(first - float(np.median(secs_runs)), 0.0)
        out.update({f"{name}_{k}": float(np.mean([e[k] for e in extras])) for k in extras[0]})
    out["draws"] = n
    for ours in ("gibbs", "collapsed"):
        for peer in ("nuts", "nuts_dense"):
            out[f"{ours}_vs_{peer}_ess_per_s_ratio"] = out[f"{ours}_ess_per_s_median"] / out[f"{peer}_ess_per_s_median"]
    return out
