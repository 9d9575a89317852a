"""Time to a converged fit (issue 29): for each of the zoo's samplers on its paper's problem, the seconds of sampling
(after compilation, which the warm-up's first chunk holds) until the worst headline site reaches bulk and tail
ESS 400 with r-hat < 1.01, by the samplers' own ``num_samples="auto"`` (``zoo.inference.driver.sample_until``: the
check runs every 250 sweeps per chain, so the figure is rounded up to the next check and includes the checks).

Beside it, where a generic sampler applies to the same program: NumPyro's NUTS on carbonetto03's mixture (its
continuous program), and NumPyro's ``DiscreteHMCGibbs(NUTS)`` on gustafson07's collapsed FS program
(``zoo.models.collapsed_fs``, the program of ``zoo bench cvfs``) beside gustafson07.fs on the same data
(``bench_fs_data``: labelled one-region images and unannotated ones; the Sec. 6 data's keyword constraints are not
in that program). kueck04 has no peer row: its constraint labels are deterministic functions of the signs of Z, a
likelihood NumPyro's samplers cannot move through. A row that stops at its time budget reports the ESS it reached
instead (``reached`` False).
"""
from __future__ import annotations

import time
import warnings

import numpy as np

from zoo.bench import register_benchmark

TARGET_ESS = 400
CHAINS = 4


def _auto_row(model_id: str, dataset: str, budget: float, **options) -> dict:
    import zoo
    from zoo.core.convergence import ConvergenceWarning

    data = _bench_fs_data() if dataset == BENCH_FS else zoo.load_dataset(dataset)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fit = zoo.fit(zoo.model(model_id), data, seed=0, num_chains=CHAINS, num_samples="auto",
                      target_ess=TARGET_ESS, time_budget=budget, progress_bar=False, **options)
    attrs = fit.idata.posterior.attrs
    table = fit.diagnose()
    worst = float(np.nanmin(np.minimum(table["ess_bulk"].to_numpy(float), table["ess_tail"].to_numpy(float))))
    return {"model": model_id, "data": dataset, "chains": CHAINS, "reached": bool(attrs["zoo_auto_reached"]),
            "sweeps_per_chain": int(attrs["zoo_auto_sweeps"]), "seconds_to_ess400": float(attrs["zoo_auto_seconds"]),
            "worst_headline_ess": worst, "wall_seconds": time.perf_counter() - start,
            "compile_seconds": float(fit.provenance.get("zoo_compile_seconds", "nan"))}


def _nuts_row(budget: float) -> dict:
    """NumPyro's NUTS on carbonetto03's mixture (Sec. 2): draws doubled from 250 per chain until the worst
    headline element reaches ESS 400; the seconds of the last run, less its warm-up share, compiled beforehand."""
    import zoo
    from zoo.core.convergence import ConvergenceWarning, short_of

    data = zoo.load_dataset("carbonetto03_sec2")
    spec = zoo.model("carbonetto03.shrinkage_mixture")
    kwargs = dict(method="nuts", seed=0, num_chains=CHAINS, num_warmup=300, chain_method="sequential",
                  progress_bar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        zoo.fit(spec, data, num_samples=10, **kwargs)                       # compile
        draws, seconds, reached = 250, float("nan"), False
        while True:
            t0 = time.perf_counter()
            fit = zoo.fit(spec, data, num_samples=draws, **kwargs)
            seconds = time.perf_counter() - t0
            post = fit.idata.posterior
            sites = [s for s in fit.headline if s in post]
            arrays = {s: post[f"{s}_relabelled"].values if f"{s}_relabelled" in post else post[s].values
                      for s in sites}
            if not short_of(arrays, TARGET_ESS):
                reached = True
                break
            if seconds > budget:
                break
            draws *= 2
    table = fit.diagnose()
    worst = float(np.nanmin(np.minimum(table["ess_bulk"].to_numpy(float), table["ess_tail"].to_numpy(float))))
    return {"model": "carbonetto03.shrinkage_mixture (NumPyro NUTS)", "data": "carbonetto03_sec2",
            "chains": CHAINS, "reached": reached, "sweeps_per_chain": draws,
            "seconds_to_ess400": seconds * draws / (draws + 300), "worst_headline_ess": worst,
            "wall_seconds": seconds, "compile_seconds": float("nan")}


#: the data of ``zoo bench cvfs`` (``zoo.data.gustafson07.bench_fs_data``), where the collapsed FS program applies
BENCH_FS = "bench_fs_data"


def _bench_fs_data():
    from zoo.data.gustafson07 import bench_fs_data
    return bench_fs_data()


def _discrete_hmc_gibbs_row(budget: float) -> dict:
    """NumPyro's DiscreteHMCGibbs(NUTS) on the collapsed FS program with ``bench_fs_data`` (the arguments of
    ``zoo bench cvfs``), 4 chains one after the other: warm-up (300 sweeps, holding the compilation), then runs of
    250 draws per chain continued from the last state (one compiled run reused), checked after each as the zoo's
    ``num_samples="auto"`` checks (M and n_relevant = sum M, ``short_of``), until they pass or ``budget`` seconds
    of sampling are spent."""
    import jax
    import jax.numpy as jnp
    from numpyro.infer import MCMC, NUTS, DiscreteHMCGibbs
    import zoo
    from zoo.core.convergence import short_of
    from zoo.models.collapsed_fs import collapsed_fs_program
    from zoo.papers.gustafson07 import region_arrays, region_problem

    data = _bench_fs_data()
    arrays = region_arrays(data)
    problem = region_problem(zoo.model("gustafson07.fs"), arrays)
    half = len(data.X) // 2
    args = (jnp.asarray(arrays.X), jnp.asarray(data.region_labels[:half] + 1), 4, problem.delta0, problem.Omega0)
    step = 250
    mcmc = MCMC(DiscreteHMCGibbs(NUTS(collapsed_fs_program)), num_warmup=300, num_samples=step,
                num_chains=CHAINS, chain_method="sequential", progress_bar=False)
    start = time.perf_counter()
    mcmc.warmup(jax.random.PRNGKey(0), *args)
    compile_and_warmup = time.perf_counter() - start
    chunks, seconds, reached = [], 0.0, False
    while seconds < budget:
        t0 = time.perf_counter()
        mcmc.run(mcmc.post_warmup_state.rng_key, *args)
        seconds += time.perf_counter() - t0
        mcmc.post_warmup_state = mcmc.last_state
        chunks.append(np.asarray(mcmc.get_samples(group_by_chain=True)["M"]))
        M = np.concatenate(chunks, axis=1)
        if not short_of({"M": M, "n_relevant": M.sum(-1)}, TARGET_ESS):
            reached = True
            break
    short = short_of({"M": M, "n_relevant": M.sum(-1)}, 0.0)
    worst = _worst_ess(M)
    return {"model": "gustafson07.fs program (NumPyro DiscreteHMCGibbs(NUTS))", "data": BENCH_FS, "chains": CHAINS,
            "reached": reached, "sweeps_per_chain": M.shape[1], "seconds_to_ess400": seconds,
            "worst_headline_ess": worst, "wall_seconds": compile_and_warmup + seconds,
            "compile_seconds": float("nan"), "note": "; ".join(f"{k}: {v}" for k, v in short.items())}


def _worst_ess(M: np.ndarray) -> float:
    """The smallest bulk or tail ESS over the varying elements of M and n_relevant (NaN: none varies)."""
    import arviz as az
    values = [np.asarray(M, float), np.asarray(M, float).sum(-1, keepdims=True)]
    worst = []
    for v in values:
        flat = v.reshape(-1, v.shape[-1])
        for i in np.flatnonzero(~np.all(flat == flat[:1], axis=0)):
            worst += [float(az.ess(v[..., i], method="bulk")), float(az.ess(v[..., i], method="tail"))]
    return min(worst) if worst else float("nan")


CASES = (("gustafson07.fs", "gustafson07_sec6", {}), ("gustafson07.cvfs", "gustafson07_sec6", {}),
         ("kueck04.constraint", "kueck04_ring", {}), ("gustafson07.fs", BENCH_FS, {}))


#: the rows' names (``time_to_ess_table(rows=...)``): the zoo's samplers (model id @ data), then the peers
ROW_NAMES = tuple(f"{model_id}@{dataset}" for model_id, dataset, _ in CASES) + ("dhmcg@" + BENCH_FS,
                                                                                  "nuts@carbonetto03_sec2")


def time_to_ess_row(name: str, budget: float) -> dict:
    """One row of the table by its name in ``ROW_NAMES``."""
    if name not in ROW_NAMES:
        raise ValueError(f"rows: {name!r} is not one of {', '.join(ROW_NAMES)}")
    if name.startswith("dhmcg@"):
        return _discrete_hmc_gibbs_row(budget)
    if name.startswith("nuts@"):
        return _nuts_row(budget)
    model_id, dataset, options = CASES[ROW_NAMES.index(name)]
    return _auto_row(model_id, dataset, budget, **options)


def time_to_ess_table(fast: bool = False, budget: float | None = None, rows=None):
    """The table (pandas DataFrame), one row per sampler: reached, sweeps per chain, seconds to ESS 400 after
    compilation, the worst headline ESS at the stop, wall and compile seconds. Each run's sampling budget:
    ``budget`` seconds, else 30 (``fast``) or 300. ``rows``: names of ``ROW_NAMES`` (None: all, in that order;
    one process can then run one row, so that rows run side by side on a machine with cores to spare)."""
    import pandas as pd

    budget = float(budget) if budget is not None else (30.0 if fast else 300.0)
    return pd.DataFrame([time_to_ess_row(name, budget) for name in (ROW_NAMES if rows is None else rows)])


@register_benchmark("time_to_ess", peer="NumPyro NUTS (carbonetto03) and DiscreteHMCGibbs(NUTS) (gustafson07 FS)")
def benchmark_time_to_ess(fast: bool = False) -> dict:
    """Seconds of sampling to ESS 400 on the worst headline site, per sampler (``time_to_ess_table``)."""
    table = time_to_ess_table(fast)
    out = {}
    for row in table.to_dict("records"):
        peer = "_dhmcg" if "DiscreteHMCGibbs" in row["model"] else "_nuts" if "NUTS" in row["model"] else ""
        key = f"{row['model'].split(' ')[0]}_{row['data']}".replace(".", "_") + peer
        out[f"{key}_seconds_to_ess400"] = row["seconds_to_ess400"] if row["reached"] else float("nan")
        out[f"{key}_worst_ess"] = row["worst_headline_ess"]
        out[f"{key}_sweeps"] = row["sweeps_per_chain"]
    return out


def main(argv=None) -> int:
    """``python -m zoo.experiments.bench.time_to_ess [--budget S] [--rows NAME ...] [--json FILE]``: the table
    printed (and its rows written as JSON lines to ``--json`` when given)."""
    import argparse
    import json

    import pandas as pd

    parser = argparse.ArgumentParser(description="seconds to ESS 400 on the worst headline site, per sampler")
    parser.add_argument("--budget", type=float, default=None, help="sampling seconds per row (default 300)")
    parser.add_argument("--rows", nargs="+", default=None, choices=ROW_NAMES, help="rows to run (default: all)")
    parser.add_argument("--json", default=None, help="a JSON-lines file to append the rows to")
    args = parser.parse_args(argv)
    table = time_to_ess_table(budget=args.budget, rows=args.rows)
    if args.json:
        with open(args.json, "a") as sink:
            for row in table.to_dict("records"):
                sink.write(json.dumps(row, default=str) + "\n")
    pd.set_option("display.width", 200)
    print(table.to_string(float_format=lambda v: f"{v:.3g}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
