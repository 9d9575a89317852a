"""The ``zoo`` command line (also ``python -m zoo``): list, fit, predict, reproduce, bench, regions.

Start-up stays light: this module imports only the standard library, ``zoo list`` answers from the catalog
snapshot (``zoo.snapshot``), and JAX, NumPyro, ArviZ and matplotlib load only inside the command that needs them.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys

__all__ = ["main", "build_parser"]

COMMANDS = ("list", "fit", "predict", "reproduce", "bench", "regions")


def _single_thread_env() -> None:
    # before NumPy, JAX and scikit-learn start their thread pools: benchmarks compare single-threaded runs on both
    # sides. main() calls this before any command imports NumPy (this module imports none).
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    os.environ["MKL_NUM_THREADS"] = "1"
    # (XLA's flag parser stops at the first word that is not a --flag: an earlier version appended the TensorFlow
    # option "intra_op_parallelism_threads=1" here, which silently dropped every flag after it)
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_multi_thread_eigen" not in flags:
        os.environ["XLA_FLAGS"] = (flags + " --xla_cpu_multi_thread_eigen=false").strip()
    if "numpy" in sys.modules:
        # something imported by ``import zoo`` loaded NumPy already, so its BLAS pool read the variables above too
        # late: limit the pools already loaded (threadpoolctl ships with scikit-learn, a dependency)
        from threadpoolctl import threadpool_limits
        threadpool_limits(limits=1)


# ----------------------------------------------------------------------------------------------------- list
def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    lines = ["  ".join(str(h).ljust(w) for h, w in zip(header, widths)).rstrip()]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(lines)


def _cmd_list(args) -> int:
    from zoo import snapshot
    snap = snapshot.current()
    rows = []
    for m in snap["models"]:
        own = [x["name"] for x in m["methods"] if not x["generic"] and x["name"] != m["default_method"]]
        generic = [x["name"] for x in m["methods"] if x["generic"]]
        rows.append([m["id"], m["data_kind"], m["default_method"], ", ".join(own) or "-", ", ".join(generic) or "-"])
    print(_table(rows, ["model", "data", "default method", "other methods", "generic cross-checks"]))
    print("\nEvery model listed runs its default method; `zoo fit MODEL --data NAME` fits one.")
    if args.datasets:
        from zoo.data.location import DatasetInfo, data_root, dataset_status
        root = data_root()
        rows = []
        for d in snap["datasets"]:
            info = DatasetInfo(name=d["name"], description=d["description"], kind=d["kind"], files=tuple(d["files"]))
            status, folder = dataset_status(info, root)
            rows.append([d["name"], status, str(folder) if folder else "-", d["description"]])
        print(f"\ndata sets (real ones read from {root if root else 'nowhere: set ZOO_DATA'}):")
        print(_table(rows, ["name", "status", "read from", "description"]))
    return 0


# ------------------------------------------------------------------------------------------------------ fit
def _parse_value(text: str):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    if text in ("true", "false", "True", "False"):
        return text.lower() == "true"
    if text in ("none", "None"):
        return None
    return text


def _key_values(items: list[str], flag: str) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{flag}: expected KEY=VALUE, got {item!r}")
        if key.strip() in out:
            raise ValueError(f"{flag}: {key.strip()!r} given twice")
        out[key.strip()] = value
    return out


def _output_path(args, default: str | None = None, suffix: str | None = None) -> pathlib.Path:
    """The output path, checked before any work: a folder that exists, not a folder itself, and an existing file
    kept unless --force. ``suffix`` is added when the name lacks it (what NumPy's savez would do silently)."""
    out = pathlib.Path(args.out or default)
    if suffix and out.suffix != suffix:
        out = out.with_name(out.name + suffix)
    if out.is_dir():
        raise ValueError(f"--out: {str(out)!r} is a directory; give a file name such as fit.nc")
    if not out.parent.is_dir():
        raise ValueError(f"--out: the folder {str(out.parent)!r} does not exist")
    if out.exists() and not args.force:
        raise ValueError(f"--out: {str(out)!r} exists; pass --force to replace it or choose another --out")
    return out


def _columns(args) -> dict[str, str]:
    return _key_values(getattr(args, "column", []) or [], "--column")


def _load_data(args, kind: str | None):
    """``--data``: a data set name, a data file (``zoo.load_dataset(path)``: a file of ``zoo regions`` or
    ``save_container`` -> its container; .npy; .csv, with a header row made into ``kind`` with ``--column``) or a
    folder of captioned photos (its captions: ``--captions``, else FOLDER/captions.txt)."""
    import zoo
    from zoo.data.container_files import to_container
    from zoo.data.tables import Table
    name = args.data
    columns = _columns(args)
    try:
        if pathlib.Path(name).is_dir():
            from zoo.data.photos import default_captions, photos_to_regions
            if kind not in (None, "AnnotatedRegions"):
                raise ValueError(f"{name!r} is a folder of photos, which makes AnnotatedRegions, but this model "
                                 f"takes {kind}")
            captions = getattr(args, "captions", None) or default_captions(name)
            data = photos_to_regions(name, captions)
        else:
            data = zoo.load_dataset(name)
        if isinstance(data, Table):
            data = to_container(data, kind or "ndarray", columns)
        elif columns:
            raise ValueError("--column: only a table (a .csv file with a header row) has columns to name")
    except FileNotFoundError as err:
        raise ValueError(f"--data: {err}") from None
    except ValueError as err:
        text = str(err)
        raise ValueError(text if text.startswith("--") else f"--data: {text}") from None
    return data


def _split_options(model_id: str, method: str | None, options: dict) -> tuple[dict, dict, str]:
    """``--option`` pairs split into the model's build options and the method's options (an option of both goes to
    the model); a name of neither is a ValueError listing both."""
    from zoo.catalog import ensure_loaded
    from zoo.core import registry
    ensure_loaded()
    entry = registry.get_model(model_id)
    method = method or entry.default_method
    if method not in entry.methods:
        raise ValueError(f"--method: {method!r} is not a method of {model_id!r}; methods: {', '.join(entry.methods)}")
    model_names = set(registry.option_names(entry.build))
    method_names = set(entry.methods[method].options)
    model_opts, fit_opts = {}, {}
    for key, value in options.items():
        if key in model_names:
            model_opts[key] = value
        elif key in method_names:
            fit_opts[key] = value
        else:
            raise ValueError(f"--option: {key!r} is neither an option of model {model_id!r} ("
                             f"{', '.join(sorted(model_names)) or 'none'}) nor of its method {method!r} ("
                             f"{', '.join(sorted(method_names)) or 'none'})")
    return model_opts, fit_opts, method


def _cmd_fit(args) -> int:
    import zoo
    from zoo.core import registry
    options = {k: _parse_value(v) for k, v in _key_values(args.option, "--option").items()}
    model_opts, fit_opts, method = _split_options(args.model, args.method, options)
    flags = {"num_samples": args.num_samples, "num_warmup": args.num_warmup, "num_chains": args.chains,
             "thinning": args.thinning}
    for key, value in flags.items():
        if value is None:
            continue
        flag = "--chains" if key == "num_chains" else f"--{key.replace('_', '-')}"
        if key in fit_opts:
            raise ValueError(f"{flag}: also given as --option {key}=...; give it once")
        if key not in registry.get_model(args.model).methods[method].options:
            raise ValueError(f"{flag}: method {method!r} of {args.model!r} has no option {key}")
        fit_opts[key] = value
    priors = _key_values(args.prior, "--prior") or None
    if args.priors:
        if priors:
            raise ValueError("--priors: give priors either as a TOML file (--priors) or one by one (--prior), "
                             "not both")
        priors = args.priors
    out = _output_path(args, default=f"{args.model.replace('.', '_')}_{args.method or 'default'}.nc")
    spec = zoo.model(args.model, priors=priors, **model_opts)
    data = _load_data(args, registry.get_model(args.model).data_kind)
    fit = zoo.fit(spec, data, method=args.method, seed=args.seed, **fit_opts)
    print(fit)
    from zoo.reports import format_number   # one number format: three significant figures
    if fit.is_point_estimate:
        print("restarts (point estimates, best first):")
        print(fit.restarts().to_string(float_format=format_number))
    print(fit.summary().to_string(float_format=format_number))
    fit.save(out, overwrite=args.force)
    print(f"fit written to {out} (arviz.from_netcdf reads its InferenceData; zoo.load_fit or `zoo predict` the "
          f"whole fit)")
    return 0


def _sampler_count(text: str):
    """--num-samples: a positive integer, or a word the method reads itself (e.g. "auto"), passed through."""
    try:
        return int(text)
    except ValueError:
        if text.isidentifier():
            return text
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def _cmd_predict(args) -> int:
    import numpy as np

    import zoo
    from zoo.core import registry
    out = _output_path(args, default=f"{pathlib.Path(args.fit).stem}_predictions.npz", suffix=".npz")
    fit = zoo.load_fit(args.fit)
    kind = registry.get_model(fit.spec.id).data_kind if fit.spec is not None and fit.spec.id else None
    prediction = fit.predict(_load_data(args, kind))
    arrays = {name: np.asarray(value) for name, value in _prediction_arrays(prediction).items()}
    for name, arr in arrays.items():
        print(f"  {name:<24} {arr.dtype} {arr.shape}")
    tmp = out.with_name(f".{out.stem}.partial.npz")
    np.savez_compressed(tmp, **arrays)
    tmp.replace(out)
    print(f"predictions of {fit.spec.id if fit.spec else 'the fit'} written to {out}")
    return 0


def _prediction_arrays(prediction) -> dict:
    """The named arrays of a prediction (``arrays()`` of the common interface, else its dataclass fields)."""
    import dataclasses
    if hasattr(prediction, "arrays"):
        return dict(prediction.arrays())
    return {f.name: getattr(prediction, f.name) for f in dataclasses.fields(prediction)}


# ------------------------------------------------------------------------------------------- reproduce, bench
def _cmd_reproduce(args) -> int:
    from zoo.reproduce import default_jobs, experiment_modules, reproduce_papers
    if args.jobs is not None and args.jobs < 1:
        print(f"zoo reproduce: --jobs must be at least 1, got {args.jobs}", file=sys.stderr)
        return 2
    jobs = args.jobs if args.jobs is not None else (
        default_jobs(len(experiment_modules())) if args.paper == "all" else 1)
    return reproduce_papers(args.paper, pathlib.Path(args.out), args.fast, command=["zoo", *sys.argv[1:]],
                            jobs=jobs)


def _cmd_bench(args) -> int:
    import json

    from zoo.bench import benchmarks, missing_requirements
    table = benchmarks()
    names = list(table) if args.name in (None, "all") else [args.name]
    unknown = [n for n in names if n not in table]
    if unknown:
        raise ValueError(f"unknown benchmark {unknown[0]!r}; known: {', '.join(table)}, all")
    # the peers' optional packages are checked before anything runs: a benchmark named alone is refused, "all"
    # runs the others and names the ones it left out (in the goals table too: their rows read "not run")
    missing = {name: missing_requirements(name) for name in names}
    missing = {name: packages for name, packages in missing.items() if packages}
    install = 'pip install -e ".[bench]"'
    if missing and args.name not in (None, "all"):
        raise ValueError(f"benchmark {args.name!r} needs {', '.join(missing[args.name])} for its peer, which is not "
                         f"installed: {install}")
    for name, packages in missing.items():
        print(f"=== bench {name}: not run ({', '.join(packages)} not installed: {install})")
    out = pathlib.Path(args.out)
    results = {name: {"not run": f"{', '.join(packages)} not installed"} for name, packages in missing.items()}
    for name in [name for name in names if name not in missing]:
        fn, peer = table[name]
        print(f"=== bench {name} (peer: {peer})")
        results[name] = fn(fast=args.fast)
        for key, value in results[name].items():
            print(f"  {key:<32} {value}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.json").write_text(json.dumps(results, indent=2, default=str))
    print(f"results written to {out / 'bench.json'}")
    from zoo.bench import goal_rows, goal_table, record_history
    rows = goal_rows(results, {name: table[name][1] for name in names})
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n=== goals (ratios of one run, one thread each side; load average {load}: a shared machine moves them)")
    print(goal_table(rows))
    if args.history:
        from zoo.core.provenance import software_versions
        version = software_versions().get("zoo_version", "unknown")
        record_history(args.history, rows, version, note=f"{'--fast' if args.fast else 'full'}; load {load}")
        print(f"history row for {version} written to {args.history}")
    return 0


def _cmd_regions(args) -> int:
    from zoo.data.photos import regions_command
    args.out = str(_output_path(args, suffix=".npz"))
    return regions_command(args)


# --------------------------------------------------------------------------------------------------- parser
def _data_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", required=True,
                   help="a data set name (see `zoo list --datasets`); a file: .npz written by `zoo regions` or "
                        "zoo.data.save_container, .npy, or .csv (a numeric matrix, or with a header row a table: "
                        "see --column); or a folder of captioned photos (see --captions)")
    p.add_argument("--column", action="append", default=[], metavar="ROLE=NAME",
                   help="for a .csv table: which column plays which role, repeatable, e.g. --column bag=molecule "
                        "--column label=active (Bags: bag, label, group, fraction, instance_label, features; "
                        "regions: image, keywords, region_label, features; counts: words, visual_words, image; "
                        "Matrix: columns; lists comma-separated, a prefix ending in '*')")
    p.add_argument("--captions", default=None,
                   help="with --data FOLDER of photos: its captions file (default: FOLDER/captions.txt)")



class _Formatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Shows every default and keeps the descriptions' line breaks."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="zoo", formatter_class=_Formatter,
        description="A probabilistic-programming model zoo for learning from annotated images.",
        epilog="Examples:\n  zoo list --datasets\n  zoo fit carbonetto03.shrinkage_mixture --data carbonetto03_sec2\n"
               "  zoo reproduce all --fast\n  zoo bench gmm --fast")
    parser.add_argument("--debug", action="store_true", help="show the full traceback of an error")
    # --debug also after the command (zoo fit ... --debug); SUPPRESS keeps the top-level value when it is absent
    debug = argparse.ArgumentParser(add_help=False)
    debug.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show the full traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("list", parents=[debug], formatter_class=_Formatter,
                       help="models, their inference methods and data sets",
                       description="Every model id with its data kind, default method and other methods.")
    p.add_argument("--datasets", action="store_true",
                   help="also list the data sets: real ones marked present or missing, with the folder they are "
                        "read from ($ZOO_DATA, else ../shared/data beside the repository)")
    p.set_defaults(run=_cmd_list)

    p = sub.add_parser("fit", parents=[debug], formatter_class=_Formatter,
                       help="fit a model, print its summary, write netCDF",
                       description="Fit MODEL to a data set or an array file; prints the fit and the ArviZ summary "
                                   "of its headline sites and writes the InferenceData as netCDF.")
    p.add_argument("model", help="model id, e.g. carbonetto03.shrinkage_mixture (see `zoo list`)")
    _data_arguments(p)
    p.add_argument("--method", default=None,
                   help="inference method (see `zoo list`); default: the model's default method")
    p.add_argument("--chains", type=int, default=None,
                   help="number of chains (restarts for EM and VI); default: the method's own default")
    p.add_argument("--num-samples", type=_sampler_count, default=None,
                   help="draws per chain kept after warm-up (MCMC methods); default: the method's own")
    p.add_argument("--num-warmup", type=int, default=None,
                   help="warm-up sweeps per chain (MCMC methods); default: the method's own")
    p.add_argument("--thinning", type=int, default=None,
                   help="keep one sweep in N (MCMC methods that thin); default: the method's own")
    p.add_argument("--seed", type=int, default=0, help="random seed (same seed, same result)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="an option of the model or of its method, repeatable, e.g. --option n_components=3 "
                        "--option max_iter=200 (an unknown name lists the model's and the method's options)")
    p.add_argument("--prior", action="append", default=[], metavar="SITE=DIST",
                   help='a prior, repeatable, e.g. --prior tau2="InverseGamma(1.0, 1.0)"')
    p.add_argument("--priors", default=None, metavar="FILE.toml",
                   help='a TOML file of priors, lines site = "Dist(...)"')
    p.add_argument("--out", default=None, help="output file (netCDF: the InferenceData plus what predictions "
                                                "need); default: MODEL_METHOD.nc in this folder")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    p.set_defaults(run=_cmd_fit)

    p = sub.add_parser("predict", parents=[debug], formatter_class=_Formatter,
                       help="predictions of a saved fit for new data",
                       description="Load a fit written by `zoo fit --out` (or fit.save) and predict for new data; "
                                   "writes the prediction's arrays to an .npz file.")
    p.add_argument("fit", help="a fit file written by `zoo fit` or fit.save")
    _data_arguments(p)
    p.add_argument("--out", default=None, help="output .npz; default: FIT_predictions.npz in this folder")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    p.set_defaults(run=_cmd_predict)

    p = sub.add_parser("reproduce", parents=[debug], formatter_class=_Formatter,
                       help="reproduce papers' experiments into a report",
                       description="Run a paper's experiments (or all) and write tables and figures, with "
                                   "reports/index.md and a self-contained reports/index.html. The folder's index "
                                   "keeps one entry per paper: a run adds or replaces the papers it ran and keeps "
                                   "the others (index.json holds them).")
    p.add_argument("paper", help="an experiment module (carbonetto03, gustafson07, kueck04, regions, ross03, "
                                 "yakhnenko) or 'all'")
    p.add_argument("--fast", action="store_true",
                   help="small settings (minutes). Real data, when present, on a subset (NCut regions when cached, "
                        "else SLIC): carbonetto03 Sec. 5.3 on "
                        "100 + 50 MSRC-v2 images; gustafson07 Sec. 7 on 30 MSRC-v2 images; kueck04 Musk1 by "
                        "5-fold CV without the inner kernel selection; yakhnenko Corel5k without the logistic "
                        "regression baseline; ross03 skips its real-data experiments (full mode only); leaderboard "
                        "2 splits of 120 MSRC-v2 images")
    p.add_argument("--out", default="reports", help="report folder")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="papers run side by side, each in its own single-threaded process (default for 'all': one "
                        "per core, at most 4; 1: one after the other in this process). The same experiments and "
                        "seeds either way; each paper's console is also kept in OUT/PAPER/console.log")
    p.set_defaults(run=_cmd_reproduce)

    p = sub.add_parser("bench", parents=[debug], formatter_class=_Formatter,
                       help="benchmarks against peer libraries (JSON + table)",
                       description="Speed against a named peer in the same run, single-threaded, after JIT "
                                   "compilation (compile time reported apart).")
    p.add_argument("name", nargs="?", default=None, help="benchmark name (gmm, mcvq, cvfs, mil, ...) or all")
    p.add_argument("--fast", action="store_true", help="smaller problems")
    p.add_argument("--out", default="bench_results", help="folder for bench.json")
    p.add_argument("--history", default=None, metavar="FILE",
                   help="also add this version's row of ratios to FILE's history table (docs/benchmarks.md)")
    p.set_defaults(run=_cmd_bench)

    p = sub.add_parser("regions", parents=[debug], formatter_class=_Formatter,
                       help="folder of captioned photos -> AnnotatedRegions (.npz)",
                       description="Segment a folder of captioned photos into regions with features, for the "
                                   "region-word models (read back with zoo.data.photos.load_regions).")
    p.add_argument("folder", help="folder of images")
    p.add_argument("--captions", required=True, help="captions file: FILE<TAB>word word ... per line")
    p.add_argument("--features", default="carbonetto03", choices=("carbonetto03", "gustafson07", "kueck04"),
                   help="region feature set")
    p.add_argument("--segmentation", default="ncut", choices=("ncut", "slic", "felzenszwalb"),
                   help="segmentation algorithm")
    p.add_argument("--on-problem", default="raise", choices=("raise", "skip"),
                   help="bad or uncaptioned images: stop with an error, or skip them (counted)")
    p.add_argument("--max-side", type=int, default=640, help="shrink larger photos to this longer side (pixels)")
    p.add_argument("--jobs", type=int, default=1, help="worker processes")
    p.add_argument("--out", required=True, help="output file (.npz is added when missing)")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    p.set_defaults(run=_cmd_regions)

    p = sub.add_parser("leaderboard", parents=[debug], formatter_class=_Formatter,
                       help="every region-word model beside the baselines on MSRC-v2 (issue 19)",
                       description="Seeded image splits of MSRC-v2 regions; within-caption and free region "
                                   "accuracy, P@5/R@5, log density, fit time (zoo.leaderboard). --fast: the "
                                   "methods that fit in seconds (no Gibbs samplers, no mi-SVM).")
    p.add_argument("--data", default="msrc_v2",
                   help="msrc_v2, corel5k, or a file of AnnotatedRegions with region labels (written by `zoo regions` "
                        "or zoo.data.save_container)")
    p.add_argument("--fast", action="store_true", help="only the methods that fit in seconds")
    p.add_argument("--splits", type=int, default=5, help="seeded image splits")
    p.add_argument("--segmentation", default="ncut", help="ncut | slic | felzenszwalb")
    p.add_argument("--features", default="carbonetto03", help="carbonetto03 | gustafson07 | kueck04")
    p.add_argument("--images", type=int, default=None, help="a seeded random subset of images (default: all)")
    p.add_argument("--model", action="append", default=[], help="a method name, repeatable (default: all)")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="MSRC-v2: splits run side by side, each in its own single-threaded process (default: one "
                        "per core, at most 4; 1: one after the other in this process); the same fits and seeds "
                        "either way")
    p.add_argument("--out", default="leaderboard", help="folder for leaderboard.md, .json, .jsonl (rows, resumed) "
                                                         "and .png")
    p.set_defaults(run=lambda args: __import__("zoo.leaderboards.board", fromlist=["cli"]).cli(args))

    p = sub.add_parser("reference", parents=[debug], formatter_class=_Formatter,
                       help="reference posteriors: list them, or build one (long)",
                       description="`zoo reference list`: the stored references; `zoo reference build ID --dataset "
                                   "NAME`: rebuild one (enumeration or >= 10 long chains; minutes to hours); "
                                   "`zoo reference cross-check ID --dataset NAME --method M`: run another exact "
                                   "kernel against the stored reference and record the agreement in its file.")
    p.add_argument("action", choices=("list", "build", "cross-check"),
                   help="list, build, or cross-check a stored reference with another exact kernel (--method)")
    p.add_argument("model", nargs="?", default=None, help="model id to build, e.g. kueck04.constraint")
    p.add_argument("--dataset", default=None, help="the reference's data set (see `zoo reference list`)")
    p.add_argument("--chains", type=int, default=10, help="chains (at least 10 for the reference bar)")
    p.add_argument("--warmup", type=int, default=1000, help="warm-up sweeps per chain")
    p.add_argument("--draws", type=int, default=5000, help="draws per chain")
    p.add_argument("--cross-check-draws", type=int, default=None,
                   help="draws per chain of the cross-check kernel (default: --draws)")
    p.add_argument("--thinning", type=int, default=1,
                   help="keep one sweep in N (Gibbs samplers; --draws counts sweeps)")
    p.add_argument("--method", default=None, help="cross-check: the problem's sampler to run against the stored "
                                                 "reference, e.g. 'blocked_gibbs (beta_move=laplace)'")
    p.set_defaults(run=lambda args: __import__("zoo.diagnostics.reference", fromlist=["cli"]).cli(args))

    p = sub.add_parser("check-sampler", parents=[debug], formatter_class=_Formatter,
                       help="score samplers against a reference posterior (table + plot)",
                       description="Run samplers on a reference problem and print, per sampler and budget, the "
                                   "error in reference MCSE units, bias^2/variance and wall time after compilation.")
    p.add_argument("model", help="model id of the reference, e.g. gustafson07.fs; or `suite`: the standard table "
                                 "(zoo.diagnostics.check_sampler.SUITE: 3 references, 3-4 samplers each)")
    p.add_argument("--dataset", default=None, help="the reference's data set (see `zoo reference list`)")
    p.add_argument("--sampler", action="append", default=[], help="a sampler name, repeatable (default: all)")
    p.add_argument("--draws", type=int, nargs="+", default=[500, 2000], help="budgets: draws per chain")
    p.add_argument("--chains", type=int, default=4, help="chains per run")
    p.add_argument("--warmup", type=int, default=500, help="warm-up per chain")
    p.add_argument("--out", default="check_sampler", help="folder for check_sampler.json and the plot")
    p.set_defaults(run=lambda args: __import__("zoo.diagnostics.check_sampler", fromlist=["cli"]).cli(args))
    return parser


def _warnings_as_lines(command: str):
    """A context in which each warning prints once, as ``zoo COMMAND: warning: Category: message`` (no file and
    line of the zoo's source, which would mean nothing to a user of the command)."""
    import contextlib
    import warnings

    shown: set[str] = set()

    def show(message, category, filename, lineno, file=None, line=None):
        text = f"{category.__name__}: {message}"
        if text not in shown:
            shown.add(text)
            print(f"zoo {command}: warning: {text}", file=sys.stderr if file is None else file)

    @contextlib.contextmanager
    def context():
        with warnings.catch_warnings():
            warnings.showwarning = show
            yield
    return context()


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "bench":
        _single_thread_env()
    try:
        with _warnings_as_lines(args.command):
            return args.run(args)
    except (ValueError, FileNotFoundError) as err:  # the user's input: one line, exit 2
        if args.debug:
            raise
        print(f"zoo {args.command}: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"zoo {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # noqa: BLE001 - a fault of the zoo: say so in one line, the traceback on request
        if args.debug:
            raise
        print(f"zoo {args.command}: internal error {type(err).__name__}: {err} (run again with --debug for the "
              f"traceback, and please report it)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
