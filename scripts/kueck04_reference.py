"""Is kueck04's ConvergenceWarning on its own data true? A many-chain reference run of the default fit (issue 29).

    python scripts/kueck04_reference.py --chains 64 --warmup 1000 --draws 1000 --out results/   # a GPU: minutes
    python scripts/kueck04_reference.py --chains 8 --warmup 20 --draws 40 --group 4                # checks the script

One ``zoo.fit(zoo.model("kueck04.constraint"), zoo.load_dataset("kueck04_ring"))`` with the defaults but for the
number of chains (``chain_method="vectorized"``: on a GPU 64 chains cost about what 8 do, docs/benchmarks.md).
The chains are independent, each with the default's warm-up, so the first ``--draws`` draws of any ``--group``
of them (4: the default) are a default fit in law. From them:

- the reference: n_active's and log delta2's posterior mean and sd over all chains, with their Monte Carlo standard
  error from ArviZ's bulk ESS over all chains, and the ESS per draw (so the draws per chain a 4-chain fit needs
  for ESS 400: 100 / (ESS per draw));
- the default fits: the chains cut into ``chains / group`` disjoint groups, each judged as ``fit.diagnose()``
  judges one fit (r-hat, bulk ESS), with its estimate of the posterior mean and the MCSE it claims. The warning
  is true if these fits fall short of the zoo's thresholds (r-hat < 1.01, bulk ESS >= 400) *and* their
  estimates miss the reference by more than their claimed error says (the share outside 2 claimed MCSE, against
  5 % for a converged fit, and the spread of the estimates against the mean claimed MCSE).

Writes ``kueck04_reference.json`` (the figures) and ``kueck04_reference.npz`` (n_active and delta2 draws, chain x
draw) into ``--out`` (default $OUT, else the current folder).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import time
import warnings

import numpy as np


def mcse_of_mean(draws: np.ndarray) -> tuple[float, float, float]:
    """(mean, MCSE of the mean from ArviZ's bulk ESS, bulk ESS) of draws (chain, draw)."""
    import arviz as az
    ess = float(az.ess(draws, method="bulk"))
    return float(draws.mean()), float(draws.std() / np.sqrt(max(ess, 1.0))), ess


def judge_groups(draws: np.ndarray, group: int, reference_mean: float) -> dict:
    """Each disjoint group of ``group`` chains judged as one fit: r-hat, bulk ESS, its mean estimate and claimed
    MCSE, and whether the reference mean lies within 2 claimed MCSE."""
    import arviz as az
    fits = []
    for start in range(0, draws.shape[0] - group + 1, group):
        part = draws[start:start + group]
        mean, mcse, ess = mcse_of_mean(part)
        fits.append({"chains": [start, start + group], "rhat": float(az.rhat(part)), "ess_bulk": ess,
                     "mean": mean, "mcse": mcse, "within_2_mcse": bool(abs(mean - reference_mean) <= 2 * mcse)})
    means = np.array([f["mean"] for f in fits])
    return {"fits": fits, "share_rhat_ok": float(np.mean([f["rhat"] < 1.01 for f in fits])),
            "share_ess_ok": float(np.mean([f["ess_bulk"] >= 400 for f in fits])),
            "share_within_2_mcse": float(np.mean([f["within_2_mcse"] for f in fits])),
            "sd_of_means": float(means.std(ddof=1)) if means.size > 1 else float("nan"),
            "mean_claimed_mcse": float(np.mean([f["mcse"] for f in fits])),
            "median_rhat": float(np.median([f["rhat"] for f in fits])),
            "median_ess_bulk": float(np.median([f["ess_bulk"] for f in fits]))}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chains", type=int, default=64)
    parser.add_argument("--group", type=int, default=4, help="chains per default-sized fit (the default: 4)")
    parser.add_argument("--warmup", type=int, default=1000, help="warm-up sweeps per chain (the default: 1000)")
    parser.add_argument("--draws", type=int, default=1000, help="draws per chain (the default: 1000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    args = parser.parse_args(argv)
    if args.chains < 2 * args.group or args.group < 2:
        raise ValueError(f"--chains ({args.chains}) must hold at least two groups of --group ({args.group}) >= 2")
    import jax
    jax.config.update("jax_enable_x64", True)
    import zoo
    from zoo.core.convergence import ConvergenceWarning

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data = zoo.load_dataset("kueck04_ring")
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fit = zoo.fit(zoo.model("kueck04.constraint"), data, seed=args.seed, num_chains=args.chains,
                      num_warmup=args.warmup, num_samples=args.draws, chain_method="vectorized",
                      progress_bar=False)
    wall = time.perf_counter() - start
    post = fit.idata.posterior
    result = {"device": str(jax.devices()[0]), "chains": args.chains, "warmup": args.warmup, "draws": args.draws,
              "seed": args.seed, "wall_s": wall, "compile_s": float(fit.provenance.get("zoo_compile_seconds", "nan")),
              "sites": {}}
    arrays = {}
    # delta2's posterior is heavy-tailed (its mean is ruled by a few draws): its estimates are compared on the log
    # scale; r-hat and bulk ESS are rank-based, so the same for delta2 and log delta2
    for site, transform in (("n_active", np.asarray), ("log_delta2", np.log)):
        draws = transform(np.asarray(post[site.removeprefix("log_")].values, dtype=float))
        arrays[site] = draws
        mean, mcse, ess = mcse_of_mean(draws)
        per_draw = ess / draws.size
        result["sites"][site] = {
            "reference_mean": mean, "reference_sd": float(draws.std()), "reference_mcse": mcse,
            "reference_ess_bulk": ess, "ess_per_draw": per_draw,
            "draws_per_chain_for_ess400_at_4_chains": float(100.0 / per_draw) if per_draw > 0 else float("inf"),
            "quantiles_5_50_95": [float(q) for q in np.quantile(draws, [0.05, 0.5, 0.95])],
            "groups": judge_groups(draws, args.group, mean)}
        g = result["sites"][site]["groups"]
        print(f"{site}: reference mean {mean:.3f} +- {mcse:.3f} (sd {draws.std():.3f}, ESS {ess:.0f} over "
              f"{draws.size} draws, {per_draw:.4f} per draw -> {100 / per_draw:.0f} draws per chain for ESS 400 "
              f"at 4 chains); {len(g['fits'])} fits of {args.group} chains: median r-hat {g['median_rhat']:.3f}, "
              f"median ESS {g['median_ess_bulk']:.0f}, r-hat ok {g['share_rhat_ok']:.2f}, ESS ok "
              f"{g['share_ess_ok']:.2f}, within 2 claimed MCSE {g['share_within_2_mcse']:.2f}, sd of their means "
              f"{g['sd_of_means']:.3f} against mean claimed MCSE {g['mean_claimed_mcse']:.3f}", flush=True)
    (out / "kueck04_reference.json").write_text(json.dumps(result, indent=1))
    np.savez(out / "kueck04_reference.npz", **arrays)
    print(f"wall {wall:.1f} s (compile {result['compile_s']:.1f} s) on {result['device']}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
