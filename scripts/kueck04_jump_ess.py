"""n_active's ESS per second on kueck04's ring, with and without the Z-collapsed jumps of gamma (issue 29).

    OMP_NUM_THREADS=1 python scripts/kueck04_jump_ess.py [--model constraint] [--warmup 1000] [--draws 1000]
        [--jumps 0 3] [--fit-steps 12,3 0,5] [--max-active 50 500] [--neighbour-swaps 0 1] [--informed 0 1]
        [--split-merge 0 1] [--seed 0 1 2 3] [--save draws.npz]

Each setting (jump tries x the jumps' fit steps ``anchor,newton``, ``zoo.inference.mil.jump.FitSteps`` x the
model's ``max_active`` x whether the jumps' swaps propose neighbours, ``kueck04.JUMP_NEIGHBOUR_SWAPS``, x whether
their births and swaps propose by data-fit gain, ``kueck04.JUMP_INFORMED``, x whether they also split and merge
kernels, ``kueck04.JUMP_SPLIT_MERGE``) is one ``zoo.fit`` of 4 chains per
seed in the same process (same data). Sampling seconds are the fit's wall time less
the driver's recorded compile time; ESS is ArviZ's bulk ESS over the 4 chains. Per fit it also prints
n_active's right tail (quantiles, P(> 50), refused births) and whether its ESS is set by that tail: the
(rank-based) bulk ESS of n_active censored at 20, and of the indicator of small sets (<= 5 kernels).
"""
from __future__ import annotations

import argparse
import time
import warnings

import arviz as az
import numpy as np

import zoo
from zoo.inference.mil.jump import FIT_STEPS, FitSteps
from zoo.papers import kueck04 as paper


def set_identity(gamma: np.ndarray) -> str:
    """Which kernels, not how many (issue 29): gamma (chain, draw, M) bool. How often the set changes while its
    size stays (at any K and at K <= 5), and between-chain agreement on the 12 most used kernels (r-hat and bulk
    ESS of their indicators)."""
    k = gamma.sum(-1)
    changed = np.any(gamma[:, 1:] != gamma[:, :-1], -1)
    same_k = k[:, 1:] == k[:, :-1]
    small = same_k & (k[:, :-1] <= 5)
    top = np.argsort(-gamma.mean((0, 1)))[:12]
    indicators = [gamma[:, :, j].astype(float) for j in top]
    rhats = [float(az.rhat(x)) for x in indicators]
    esses = [float(az.ess(x, method="bulk")) for x in indicators]
    return (f"P(set changes | K same) {changed[same_k].mean():.3f}, at K <= 5 {changed[small].mean():.3f}; top-12 "
            f"kernels' indicators: max r-hat {np.nanmax(rhats):.3f}, median bulk ESS {np.nanmedian(esses):.1f}, "
            f"min {np.nanmin(esses):.1f}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="constraint")
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--jumps", type=int, nargs="+", default=[0, 3])
    parser.add_argument("--seed", type=int, nargs="+", default=[0],
                        help="one fit per seed and setting; seeds outermost, so load drift hits every setting alike")
    parser.add_argument("--max-active", type=int, nargs="+", default=[50],
                        help="the model's capacity of the active set (one fit per value; this script's default 50 "
                             "is the model's old default; the model's own is kueck04.MAX_ACTIVE = 100)")
    parser.add_argument("--neighbour-swaps", type=int, nargs="+", default=[0], choices=[0, 1],
                        help="1: the jumps' swaps propose a neighbour of the kernel leaving (one fit per value)")
    parser.add_argument("--informed", type=int, nargs="+", default=[0], choices=[0, 1],
                        help="1: the jumps' births and swaps propose by data-fit gain (one fit per value; not with "
                             "--neighbour-swaps 1)")
    parser.add_argument("--split-merge", type=int, nargs="+", default=[0], choices=[0, 1],
                        help="1: the jumps also split one kernel into two neighbours and merge two into one (one fit "
                             "per value; not with --informed 1)")
    parser.add_argument("--save", default=None,
                        help="an .npz to write every fit's n_active and delta2 draws to (keys n_active_<i>, ...)")
    parser.add_argument("--fit-steps", nargs="+", default=[f"{FIT_STEPS.anchor},{FIT_STEPS.newton}"],
                        help="the jumps' Newton steps, anchor,newton (one fit per value and jump setting)")
    args = parser.parse_args(argv)
    data = zoo.load_dataset("kueck04_ring")
    print("max_active | jump_tries | fit steps | wall s | compile s | sampling s | n_active mean | r-hat | bulk ESS | "
          "tail ESS | ESS / sampling s | ESS per chain-sweep | delta2 ESS | jump acc | gamma acc | swap acc",
          flush=True)
    settings = [(seed, cap, jumps, FitSteps(*map(int, steps.split(","))), near, informed, split)
                for seed in args.seed for cap in args.max_active for jumps in args.jumps for steps in args.fit_steps
                for near in args.neighbour_swaps for informed in args.informed for split in args.split_merge
                if not (near and informed) and not (informed and split)]
    saved = {}
    for i, (seed, cap, jumps, steps, near, informed, split) in enumerate(settings):
        spec = zoo.model(f"kueck04.{args.model}", max_active=cap)
        paper.JUMP_FIT_STEPS = steps           # read by paper.mil_config (a static setting: compiled per value)
        paper.JUMP_NEIGHBOUR_SWAPS = bool(near)
        paper.JUMP_INFORMED = bool(informed)
        paper.JUMP_SPLIT_MERGE = bool(split)
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fit = zoo.fit(spec, data, seed=seed, num_chains=args.chains, num_warmup=args.warmup,
                          num_samples=args.draws, jump_tries=jumps, progress_bar=False)
        wall = time.perf_counter() - start
        compile_s = float(fit.provenance.get("zoo_compile_seconds", np.nan))
        sampling = wall - compile_s
        post, stats = fit.idata.posterior, fit.idata.sample_stats
        n_active = post["n_active"]
        values = n_active.values.astype(float)                       # (chain, draw)
        ess = float(az.ess(values, method="bulk"))
        tail = float(az.ess(values, method="tail"))
        rhat = float(az.rhat(values))
        d2 = float(az.ess(np.log(post["delta2"].values), method="bulk"))
        sweeps = args.chains * (args.warmup + args.draws)
        acc = {k: float(stats[k].mean()) if k in stats else float("nan")
               for k in ("jump_acceptance", "gamma_acceptance", "swap_acceptance")}
        label = (f"{jumps}{' (neighbour swaps)' if near else ''}{' (informed)' if informed else ''}"
                 f"{' (split/merge)' if split else ''} seed {seed}")
        print(f"{cap} | {label} | {steps.anchor},{steps.newton} | {wall:.1f} | {compile_s:.1f} | {sampling:.1f} | "
              f"{float(n_active.mean()):.2f} | "
              f"{rhat:.3f} | {ess:.1f} | {tail:.1f} | {ess / sampling:.3f} | {ess / (args.chains * args.draws):.5f} | "
              f"{d2:.1f} | {acc['jump_acceptance']:.3f} | {acc['gamma_acceptance']:.3f} | "
              f"{acc['swap_acceptance']:.3f}", flush=True)
        print("   per-chain n_active means:", np.round(n_active.mean("draw").values, 2), flush=True)
        # the right tail of n_active (issue 29: is the default max_active = 50 a truncation of the ring's posterior?)
        quantiles = np.quantile(values, [0.5, 0.9, 0.99, 0.999])
        print(f"   n_active quantiles 50/90/99/99.9 %: {quantiles}; P(> 20) {np.mean(values > 20):.4f}; "
              f"P(> 50) {np.mean(values > 50):.4f}; max per chain {values.max(axis=1).astype(int)}; "
              f"refused births {int(stats['capacity_hits'].sum())}", flush=True)
        censored = float(az.ess(np.minimum(values, 20.0), method="bulk"))
        small = float(az.ess((values <= 5).astype(float), method="bulk"))
        print(f"   bulk ESS of min(n_active, 20) {censored:.1f}; of 1[n_active <= 5] {small:.1f} "
              f"(P {np.mean(values <= 5):.3f})", flush=True)
        if "unit_posterior" in fit.idata.groups() and "gamma" in fit.idata.unit_posterior:
            print("   which kernels:", set_identity(fit.idata.unit_posterior["gamma"].values.astype(bool)), flush=True)
        for w in caught:
            if "max_active" in str(w.message):
                print("   warned:", w.message, flush=True)
        saved.update({f"n_active_{i}": values, f"delta2_{i}": post["delta2"].values,
                      f"setting_{i}": np.array([cap, jumps, steps.anchor, steps.newton, sampling, near, seed,
                                                       informed, split])})
    if args.save:
        np.savez(args.save, **saved)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
