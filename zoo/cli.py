"""The ``zoo`` command line: list, fit, reproduce, bench (also ``python -m zoo``)."""
from __future__ import annotations

import argparse
import importlib
import json
import os
import pathlib
import pkgutil
import sys
import time


def _single_thread_env() -> None:
    # before JAX/NumPy start their thread pools: benchmarks compare single-threaded runs on both sides
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    os.environ["MKL_NUM_THREADS"] = "1"
    # (XLA's flag parser stops at the first word that is not a --flag: an earlier version appended the TensorFlow
    # option "intra_op_parallelism_threads=1" here, which silently dropped every flag after it)
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_multi_thread_eigen" not in flags:
        os.environ["XLA_FLAGS"] = (flags + " --xla_cpu_multi_thread_eigen=false").strip()


def _cmd_list(args) -> int:
    import zoo
    cards = zoo.catalog()
    width = max((len(c.id) for c in cards), default=10)
    print(f"{'model'.ljust(width)}  {'data'.ljust(18)}  methods (default first)")
    for c in cards:
        ms = [c.default_method] + [m for m in c.methods if m != c.default_method]
        print(f"{c.id.ljust(width)}  {c.data_kind.ljust(18)}  {', '.join(ms)}")
    if args.datasets:
        print("\ndata sets:")
        for name, desc in zoo.data.list_datasets().items():
            print(f"  {name}: {desc}")
    return 0


def _parse_value(text: str):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    if text in ("true", "false", "True", "False"):
        return text.lower() == "true"
    return text


def _cmd_fit(args) -> int:
    import numpy as np
    import zoo
    options = dict(kv.split("=", 1) for kv in args.option)
    options = {k: _parse_value(v) for k, v in options.items()}
    priors = dict(kv.split("=", 1) for kv in args.prior) or None
    spec = zoo.model(args.model, priors=priors, **options)
    path = pathlib.Path(args.data)
    if path.suffix == ".npy":
        data = np.load(path, allow_pickle=False)
    elif path.suffix == ".csv":
        data = np.loadtxt(path, delimiter=",", ndmin=2)
    else:
        data = zoo.load_dataset(args.data)
    fit_options = {}
    if args.chains is not None:
        fit_options["num_chains"] = args.chains
    fit = zoo.fit(spec, data, method=args.method, seed=args.seed, **fit_options)
    print(fit)
    print(fit.summary().to_string())
    out = pathlib.Path(args.out or f"{args.model.replace('.', '_')}_{fit.method}.nc")
    fit.idata.to_netcdf(str(out))
    print(f"InferenceData written to {out}")
    return 0


def _experiment_modules() -> dict:
    import zoo.experiments as experiments
    mods = {}
    for info in sorted(pkgutil.iter_modules(experiments.__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            mod = importlib.import_module(f"zoo.experiments.{info.name}")
            if hasattr(mod, "reproduce"):
                mods[info.name] = mod
    return mods


def _cmd_reproduce(args) -> int:
    mods = _experiment_modules()
    names = list(mods) if args.paper == "all" else [args.paper]
    for name in names:
        if name not in mods:
            print(f"zoo reproduce: unknown paper {name!r}; known: {', '.join(mods)}, all", file=sys.stderr)
            return 2
    out_root = pathlib.Path(args.out)
    for name in names:
        out = out_root / name
        out.mkdir(parents=True, exist_ok=True)
        print(f"=== reproduce {name} ({'fast' if args.fast else 'full'}) -> {out}")
        t0 = time.perf_counter()
        mods[name].reproduce(out, fast=args.fast)
        print(f"=== {name} done in {time.perf_counter() - t0:.1f} s")
    return 0


def _cmd_bench(args) -> int:
    from zoo.bench import benchmarks
    table = benchmarks()
    names = list(table) if args.name in (None, "all") else [args.name]
    results = {}
    for name in names:
        if name not in table:
            print(f"zoo bench: unknown benchmark {name!r}; known: {', '.join(table)}", file=sys.stderr)
            return 2
        fn, peer = table[name]
        print(f"=== bench {name} (peer: {peer})")
        results[name] = fn(fast=args.fast)
        for key, value in results[name].items():
            print(f"  {key:<32} {value}")
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.json").write_text(json.dumps(results, indent=2, default=str))
    print(f"results written to {out / 'bench.json'}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="zoo", description="Probabilistic-programming model zoo")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("list", help="list models and their inference methods")
    p.add_argument("--datasets", action="store_true", help="also list the data sets")
    p.set_defaults(run=_cmd_list)
    p = sub.add_parser("fit", help="fit a model, print the summary, write InferenceData (netCDF)")
    p.add_argument("model")
    p.add_argument("--data", required=True, help="data set name (zoo list --datasets) or a .npy/.csv file")
    p.add_argument("--method", default=None)
    p.add_argument("--chains", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help="model option")
    p.add_argument("--prior", action="append", default=[], metavar="SITE=DIST", help='e.g. tau2="InverseGamma(1,1)"')
    p.add_argument("--out", default=None, help="netCDF output path")
    p.set_defaults(run=_cmd_fit)
    p = sub.add_parser("reproduce", help="reproduce a paper's experiments (tables and figures)")
    p.add_argument("paper", help="paper name or 'all'")
    p.add_argument("--fast", action="store_true", help="small settings (minutes), synthetic data where needed")
    p.add_argument("--out", default="reports", help="report folder")
    p.set_defaults(run=_cmd_reproduce)
    p = sub.add_parser("bench", help="benchmarks against peer libraries (JSON + table)")
    p.add_argument("name", nargs="?", default=None)
    p.add_argument("--fast", action="store_true")
    p.add_argument("--out", default="bench_results")
    p.set_defaults(run=_cmd_bench)
    p = sub.add_parser("regions", help="folder of captioned photos -> AnnotatedRegions (.npz)")
    from zoo.data.photos import configure_regions_parser
    configure_regions_parser(p)
    args = parser.parse_args(argv)
    if args.command == "bench":
        _single_thread_env()
    try:
        return args.run(args)
    except ValueError as err:
        print(f"zoo {args.command}: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
