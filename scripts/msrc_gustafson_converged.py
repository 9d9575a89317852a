"""gustafson07 FULL / FS / CVFS on MSRC-v2 at the leaderboard's settings, but with several chains and the length
chosen by the run-until-converged rule (issue 29, item 3).

    python scripts/msrc_gustafson_converged.py prepare --out msrc.npz          # where the data are (reads photos)
    python scripts/msrc_gustafson_converged.py run --data msrc.npz --split 0 --variants full fs cvfs \
        --chains 4 --budget 120 --out results/                                  # anywhere (a GPU: the chains batch)

``prepare`` writes the regions of one segmentation and feature set (raw features, ``board.msrc_regions``) to a
zoo data file, so ``run`` needs no photos (a lent GPU machine has only the working tree).

``run`` makes the leaderboard's split (``board.make_split``: seeded half of the images for training, features
standardized on the training regions), keeps the training images the leaderboard's gustafson07 rows keep (a
caption no longer than the image's regions: ``methods._gustafson``) and fits each variant as those rows do
(``garbage_weight`` 1, ``num_warmup`` 500, the split's seed), except for ``num_chains`` (``--chains``, vectorized)
and ``num_samples="auto"``: sampling continues in chunks of 250 sweeps until every headline site has r-hat < 1.01
and bulk and tail ESS >= 400, or the sampling time reaches ``--budget`` seconds. Per variant it records whether the
rule was met, the sweeps and seconds it took, ``fit.diagnose()`` (one row per headline site), and the test
metrics of ``board.evaluate`` (caption and free accuracy, P@5, R@5), to set beside the leaderboard's one-chain
500 + 500 row of the same split. Writes ``msrc_gustafson_converged.json`` into ``--out`` (default $OUT, else the
current folder) after every variant, so a run cut off keeps what it finished.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import time
import warnings

import numpy as np


def prepare(out: str, segmentation: str, features: str, overwrite: bool) -> pathlib.Path:
    from zoo.data import save_container
    from zoo.leaderboards.board import msrc_regions
    data = msrc_regions(segmentation=segmentation, features=features)
    path = save_container(out, data, overwrite=overwrite)
    print(f"{path}: {data.X.shape[0]} regions x {data.X.shape[1]} features, {data.n_images} images, "
          f"{len(data.vocabulary)} words")
    return path


def leaderboard_training_images(train) -> list[int]:
    """The training images the leaderboard's gustafson07 rows fit (``methods._gustafson``): those whose caption
    can be covered by their regions (0 < caption words <= regions)."""
    sizes = np.bincount(train.image_ids, minlength=train.n_images)
    return [i for i in range(train.n_images) if 0 < len(train.keywords[i]) <= sizes[i]]


def diagnose_rows(fit) -> list[dict]:
    """``fit.diagnose()`` as plain rows (site, verdict, r-hat, bulk and tail ESS, and any notes)."""
    table = fit.diagnose()
    rows = []
    for site, row in table.iterrows():
        rows.append({"site": str(site), **{k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()}})
    return rows


def run_variant(variant: str, split, seed: int, chains: int, warmup: int, budget: float,
                chain_method: str) -> dict:
    import zoo
    from zoo.core.convergence import ConvergenceWarning
    from zoo.data.splits import subset_images
    from zoo.leaderboards.board import evaluate
    from zoo.leaderboards.methods import Scores

    train = subset_images(split.train, leaderboard_training_images(split.train))
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        fit = zoo.fit(zoo.model(f"gustafson07.{variant}", garbage_weight=1.0), train, method="collapsed_gibbs",
                      seed=seed, num_chains=chains, num_warmup=warmup, num_samples="auto", time_budget=budget,
                      chain_method=chain_method, progress_bar=False)
    wall = time.perf_counter() - start
    attrs = fit.idata.posterior.attrs
    pred = fit.predict(split.blind)
    column = {c: j for j, c in enumerate(pred.concepts)}
    region = np.stack([pred.label_proba[:, column[w]] for w in split.train.vocabulary], axis=1)
    metrics = evaluate(Scores(region, True), split)
    return {"variant": variant, "chains": chains, "warmup": warmup, "budget_s": budget,
            "training_images": train.n_images, "training_regions": int(train.X.shape[0]),
            "reached": bool(attrs["zoo_auto_reached"]), "sweeps_per_chain": int(attrs["zoo_auto_sweeps"]),
            "sampling_s": float(attrs["zoo_auto_seconds"]), "wall_s": wall,
            "compile_s": float(fit.provenance.get("zoo_compile_seconds", "nan")), "auto": str(attrs["zoo_auto"]),
            "warnings": [str(w.message)[:400] for w in caught if issubclass(w.category, ConvergenceWarning)],
            "diagnose": diagnose_rows(fit), "metrics": metrics}


def run(data_path: str, split_seed: int, variants, chains: int, warmup: int, budget: float, out: str,
        chain_method: str) -> dict:
    import jax
    jax.config.update("jax_enable_x64", True)
    from zoo.data import read_data_file
    from zoo.leaderboards.board import make_split

    data = read_data_file(data_path)
    split = make_split(data, split_seed)
    out_dir = pathlib.Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    result = {"data": str(data_path), "split": split_seed, "device": str(jax.devices()[0]), "variants": {}}
    for variant in variants:
        try:
            row = run_variant(variant, split, split_seed, chains, warmup, budget, chain_method)
        except Exception as err:  # noqa: BLE001 - one variant's failure must not lose the others' figures
            row = {"variant": variant, "error": f"{type(err).__name__}: {str(err)[:500]}"}
        result["variants"][variant] = row
        (out_dir / f"msrc_gustafson_converged_{'_'.join(variants)}.json").write_text(
            json.dumps(result, indent=1, default=str))
        if "error" in row:
            print(f"{variant}: {row['error']}", flush=True)
            continue
        sites = "; ".join(f"{r['site']} {r.get('verdict', '')} r-hat {r.get('r_hat', float('nan')):.3g} "
                          f"ESS {r.get('ess_bulk', float('nan')):.0f}" for r in row["diagnose"])
        print(f"{variant}: reached {row['reached']} after {row['sweeps_per_chain']} sweeps per chain "
              f"({row['sampling_s']:.1f} s sampling, {row['wall_s']:.1f} s wall, compile {row['compile_s']:.1f} s); "
              f"caption {row['metrics']['caption_acc']:.3f} free {row['metrics']['free_acc']:.3f}; {sites}",
              flush=True)
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("prepare", help="write the regions to a zoo data file (.npz)")
    p.add_argument("--out", required=True)
    p.add_argument("--segmentation", default="slic", choices=["slic", "ncut"])
    p.add_argument("--features", default="carbonetto03")
    p.add_argument("--overwrite", action="store_true")
    r = commands.add_parser("run", help="fit the variants on one split")
    r.add_argument("--data", required=True)
    r.add_argument("--split", type=int, default=0)
    r.add_argument("--variants", nargs="+", default=["full", "fs", "cvfs"], choices=["full", "fs", "cvfs"])
    r.add_argument("--chains", type=int, default=4)
    r.add_argument("--warmup", type=int, default=500, help="the leaderboard's full-run warm-up (500)")
    r.add_argument("--budget", type=float, default=120.0, help="sampling seconds per variant before it stops")
    r.add_argument("--chain-method", default="vectorized", choices=["vectorized", "sequential"])
    r.add_argument("--out", default=os.environ.get("OUT", "."))
    args = parser.parse_args(argv)
    if args.command == "prepare":
        prepare(args.out, args.segmentation, args.features, args.overwrite)
    else:
        run(args.data, args.split, args.variants, args.chains, args.warmup, args.budget, args.out, args.chain_method)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
