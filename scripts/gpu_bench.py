"""CPU against GPU, the same workload per model family, in one short call (issue 35.4).

    python scripts/gpu_bench.py                 # the device-sized run (about 8 minutes with --repeats 1)
    python scripts/gpu_bench.py --size tiny     # seconds, any machine (checks that the script runs)
    python scripts/gpu_bench.py --families em_restarts,mom_vi --out results/

For each family, one zoo.fit of the family's default method on synthetic data (no data files needed: the device
machine has only the working tree) runs once per platform to compile, then ``--repeats`` times; the best wall time
is reported per platform with the ratio CPU / GPU (> 1: the GPU is faster). Both platforms run in this one
process (``jax.default_device``), one after the other, so the figures share the machine's state. The families
that batch well come first: MoM VI on Corel5k-sized counts, EM with many restarts, kueck04's chains vectorized,
gustafson07's vectorized chains, then MCVQ.

Writes ``gpu_bench.json`` and ``gpu_bench.md`` (a Markdown table to paste into docs/benchmarks.md) into ``--out``
(default: $OUT when set, else the current folder) after every family, so a run cut off keeps its figures; no new
fit starts after ``--budget-s`` seconds. Without a GPU it measures the CPU alone and says so.

On a lent GPU machine whose Python has JAX with CUDA but not the zoo's other pins, with NumPyro 0.22 and ArviZ
0.23.4 (and xarray-einstats, h5netcdf, platformdirs) downloaded as wheels into an ignored ``.whl/`` folder, the
call that measured docs/benchmarks.md's GPU table was (the zoo copied as ``pip install`` lays it out, since
``inference/`` and ``models/`` are mapped into the ``zoo`` package)::

    pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
    mkdir -p /tmp/zsite && cp -r zoo /tmp/zsite/zoo && cp -r inference /tmp/zsite/zoo/inference \
        && cp -r models /tmp/zsite/zoo/models
    PYTHONPATH=/tmp/site:/tmp/zsite timeout 450 python3 -W ignore scripts/gpu_bench.py --repeats 1 --budget-s 300
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import sys
import time
import warnings

import numpy as np

#: family -> (model id, data builder name, model options, fit options), per size. Sizes: "tiny" checks the script
#: in seconds; "device" is what a lent GPU runs (each family a few seconds to a minute per platform).
FAMILIES = ("mom_vi", "em_restarts", "fs_chains", "mil_chains", "mcvq")
SIZES = {
    "tiny": dict(mom_vi=dict(n_images=60, max_iter=5), em_restarts=dict(n=400, d=6, restarts=4, max_iter=10),
                 mil_chains=dict(n=80, chains=2, draws=10), fs_chains=dict(n_images=20, chains=2, draws=10),
                 mcvq=dict(n=60, d=16, max_iter=5)),
    "device": dict(mom_vi=dict(n_images=4500, max_iter=50), em_restarts=dict(n=50_000, d=16, restarts=32, max_iter=50),
                   # the samplers at sizes whose CPU side ends in about a minute on 16 cores (on 2026-11-27, 2,000
                   # points x 16 chains x 400 sweeps of kueck04 did not end in 7 minutes there)
                   mil_chains=dict(n=200, chains=8, draws=25), fs_chains=dict(n_images=60, chains=8, draws=25),
                   mcvq=dict(n=2429, d=361, max_iter=20)),
    # the vectorized samplers with enough chains to fill a GPU: the "device" size's chains times 8
    "wide": dict(mil_chains=dict(n=200, chains=64, draws=25), fs_chains=dict(n_images=60, chains=64, draws=25)),
}


def _workload(family: str, size: dict):
    """(model id, data, model options, fit options) of one family at one size."""
    import zoo
    rng = np.random.default_rng(0)
    quiet = dict(progress_bar=False)
    if family == "mom_vi":
        data = zoo.load_dataset("yakhnenko_synthetic", n_images=size["n_images"], seed=0)
        return "yakhnenko.mom_lda", data, dict(n_topics=10), dict(max_iter=size["max_iter"], **quiet)
    if family == "em_restarts":
        n, d = size["n"], size["d"]
        centres = rng.normal(scale=3.0, size=(4, d))
        X = centres[rng.integers(4, size=n)] + rng.normal(size=(n, d))
        return ("carbonetto03.shrinkage_mixture", X, dict(n_components=4),
                dict(num_chains=size["restarts"], max_iter=size["max_iter"], tol=1e-300, **quiet))
    if family == "mil_chains":
        from zoo.data.mil import ring_data
        return ("kueck04.constraint", ring_data(n=size["n"], seed=2), {},
                dict(num_chains=size["chains"], num_warmup=size["draws"], num_samples=size["draws"],
                     chain_method="vectorized", **quiet))
    if family == "fs_chains":
        data = zoo.load_dataset("gustafson07_program", variant="fs", n_images=size["n_images"], seed=1)
        return ("gustafson07.fs", data, {},
                dict(num_chains=size["chains"], num_warmup=size["draws"], num_samples=size["draws"],
                     chain_method="vectorized", **quiet))
    if family == "mcvq":
        from zoo.data import Matrix
        X = rng.random((size["n"], size["d"]))
        return "ross03.mcvq", Matrix(X), dict(n_vqs=6, n_states=12), dict(max_iter=size["max_iter"], **quiet)
    raise ValueError(f"family: {family!r} is not one of {', '.join(FAMILIES)}")


def _time_fit(model_id, data, model_options, fit_options, device, repeats: int) -> dict:
    """Compile (first fit) and the best of ``repeats`` further fits, all on ``device``."""
    import jax
    import zoo
    with jax.default_device(device), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = zoo.model(model_id, **model_options)
        t0 = time.perf_counter()
        zoo.fit(spec, data, seed=0, **fit_options)
        first = time.perf_counter() - t0
        best = float("inf")
        for r in range(repeats):
            t0 = time.perf_counter()
            zoo.fit(spec, data, seed=r + 1, **fit_options)
            best = min(best, time.perf_counter() - t0)
    return {"first_s": round(first, 3), "best_s": round(best, 3)}


def run(families, size_name: str, repeats: int, budget_s: float = float("inf"), on_row=None) -> dict:
    """Each family on the CPU then the GPU; ``on_row(result)`` after every family (so a run cut off by a time limit
    keeps the figures it has). No new fit starts once ``budget_s`` seconds have passed: the rest are listed as
    skipped."""
    import jax
    jax.config.update("jax_enable_x64", True)
    cpu = jax.devices("cpu")[0]
    try:
        gpu = jax.devices("gpu")[0]
    except RuntimeError:
        gpu = None
    out = {"size": size_name, "repeats": repeats, "cpu": str(cpu), "gpu": f"{gpu.device_kind} ({gpu})" if gpu else None,
           "host": platform.node(), "cpu_count": os.cpu_count(), "jax": jax.__version__, "families": {}}
    started = time.perf_counter()
    for family in families:
        if family not in SIZES[size_name]:
            raise ValueError(f"families: {family!r} has no {size_name!r} size (it has {', '.join(SIZES[size_name])})")
        model_id, data, model_options, fit_options = _workload(family, SIZES[size_name][family])
        row = {"model": model_id, "size": SIZES[size_name][family]}
        for name, device in (("cpu", cpu), ("gpu", gpu)):
            if device is None:
                continue
            if time.perf_counter() - started > budget_s:
                row[name] = {"error": f"skipped: the {budget_s:.0f} s budget was spent"}
                continue
            try:
                row[name] = _time_fit(model_id, data, model_options, fit_options, device, repeats)
            except Exception as err:  # noqa: BLE001 - one family's failure must not lose the others' figures
                row[name] = {"error": f"{type(err).__name__}: {str(err)[:300]}"}
        cpu_s, gpu_s = row.get("cpu", {}).get("best_s"), row.get("gpu", {}).get("best_s")
        row["cpu_over_gpu"] = round(cpu_s / gpu_s, 2) if cpu_s and gpu_s else None
        out["families"][family] = row
        print(json.dumps({family: row}), flush=True)
        if on_row is not None:
            on_row(out)
    return out


def markdown(result: dict) -> str:
    lines = [f"CPU ({result['cpu_count']} cores) against {result['gpu'] or 'no GPU (not measured)'}, size "
             f"{result['size']!r}, best of {result['repeats']} fits after a compiling one, jax {result['jax']}:", "",
             "| family | model | CPU s | GPU s | CPU / GPU |", "| --- | --- | --- | --- | --- |"]
    for family, row in result["families"].items():
        cell = lambda k: str(row.get(k, {}).get("best_s", row.get(k, {}).get("error", "-")))
        lines.append(f"| {family} | {row['model']} | {cell('cpu')} | {cell('gpu')} | {row['cpu_over_gpu'] or '-'} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="device")
    parser.add_argument("--families", default=",".join(FAMILIES), help="comma-separated, from " + ", ".join(FAMILIES))
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--budget-s", type=float, default=float("inf"),
                        help="start no new fit after this many seconds (the rest are listed as skipped)")
    args = parser.parse_args(argv)
    families = [f for f in args.families.split(",") if f]
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        parser.error(f"unknown family {unknown[0]!r}; known: {', '.join(FAMILIES)}")
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    def write(result):
        (out / "gpu_bench.json").write_text(json.dumps(result, indent=1))
        (out / "gpu_bench.md").write_text(markdown(result))

    result = run(families, args.size, args.repeats, budget_s=args.budget_s, on_row=write)
    write(result)
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
