"""Each model's default fit (its default method with default options) on the data of its paper's experiments,
and what ``fit.diagnose()`` says about it (issue 18.1: "the default settings of every model's own sampler pass on
the data of its paper's experiments, or the note says where they cannot").

    python scripts/diagnose_defaults.py [--only PREFIX]

Data (the synthetic experiment data of each paper, so that it runs without the real data sets):
carbonetto03 Sec. 2 (200 points) and Sec. 5.2 (translation); gustafson07 Sec. 6; kueck04 Exp. 1 (ring);
ross03 Sec. 3.1.2 shapes (the experiment's 100 training images of 11 x 11; the supervised model with its labels,
triangle in the top or bottom half; the models' default sizes, 3 VQs x 5 states); yakhnenko:
images simulated from MoM-LDA (the loader's default size). Every kind of inference gets ``fit.diagnose()``'s
table (issue 29: MCMC, variational and point estimates alike); at the end one summary table: per model id its
method, chains x draws, the statuses of its headline sites (ok / certain / fail), whether a ConvergenceWarning was
issued, how many other warnings (printed with the model's table: e.g. kueck04's active set reaching max_active),
and the wall time of the fit (the machine's load included: say so when quoting it).
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np
import pandas as pd

import zoo
from zoo.core.convergence import ConvergenceWarning

#: model id -> (data set, loader options, model options)
CASES = {
    "carbonetto03.shrinkage_mixture": ("carbonetto03_sec2", {}, {}),
    "carbonetto03.translation": ("carbonetto03_sec52", {}, {}),
    "gustafson07.full": ("gustafson07_sec6", {}, {}),
    "gustafson07.fs": ("gustafson07_sec6", {}, {}),
    "gustafson07.cvfs": ("gustafson07_sec6", {}, {}),
    "kueck04.supervised": ("kueck04_ring", {}, {}),
    "kueck04.constraint": ("kueck04_ring", {}, {}),
    "kueck04.measurement": ("kueck04_ring", {}, {}),
    "kueck04.hybrid": ("kueck04_ring", {}, {}),
    "ross03.mcvq": ("shapes", {}, {}),
    "ross03.mcvq_supervised": ("shapes", {}, {}),
    "ross03.mcvq_clustered": ("shapes", {}, {}),
    "yakhnenko.mom_lda": ("yakhnenko_synthetic", {}, {}),
    "yakhnenko.mom_hdp": ("yakhnenko_synthetic", {}, {}),
}


def _data(model_id: str, name: str, loader_options: dict):
    if name == "shapes":    # zoo.experiments.ross03: 100 training images; label = triangle in the bottom half
        from zoo.data import Matrix
        from zoo.data.ross03 import MatrixDataset, shapes_split
        X_train, _, pos_train, _ = shapes_split(n_train=100, seed=0)
        if model_id == "ross03.mcvq_supervised":
            return MatrixDataset(Matrix(X_train), labels=(pos_train[:, 1] >= 4).astype(int))
        return Matrix(X_train)
    return zoo.load_dataset(name, **loader_options)


def run_one(model_id: str) -> dict:
    name, loader_options, model_options = CASES[model_id]
    data = _data(model_id, name, loader_options)
    spec = zoo.model(model_id, **model_options)
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        fit = zoo.fit(spec, data, seed=0, progress_bar=False)
    seconds = time.perf_counter() - start
    sizes = fit.idata.posterior.sizes
    print(f"\n## {model_id}: method {fit.method!r} ({fit.inference}), data {name}, "
          f"{sizes['chain']} chain(s) x {sizes['draw']} draw(s), "
          f"{seconds:.1f} s (compile {float(fit.provenance['zoo_compile_seconds']):.1f} s)")
    table = fit.diagnose()
    print(table.drop(columns=["divergences", "advice"], errors="ignore").to_string(
        float_format=lambda v: f"{v:.3g}"))
    warned = [w.message for w in caught if isinstance(w.message, ConvergenceWarning)]
    for message in warned:
        print(f"ConvergenceWarning: sites {', '.join(message.sites)}")
    # the fit's other warnings (e.g. kueck04's active set reaching max_active: a truncated posterior)
    others = sorted({f"{type(w.message).__name__}: {w.message}" for w in caught
                     if not isinstance(w.message, (ConvergenceWarning, DeprecationWarning, FutureWarning))})
    for line in others:
        print(line)
    counts = table["status"].value_counts()
    return {"model": model_id, "method": fit.method, "inference": fit.inference,
            "chains x draws": f"{sizes['chain']} x {sizes['draw']}",
            "verdict": ", ".join(f"{k} {v}" for k, v in counts.items()),
            "warning": "yes: " + ", ".join(s for m in warned for s in m.sites) if warned else "no",
            "other warnings": len(others),
            "seconds": round(seconds, 1)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="", help="run the model ids starting with this prefix")
    args = parser.parse_args(argv)
    pd.set_option("display.width", 200)
    pd.set_option("display.max_colwidth", 90)
    np.set_printoptions(precision=3)
    rows = []
    for model_id in CASES:
        if model_id.startswith(args.only):
            try:
                rows.append(run_one(model_id))
            except Exception as err:  # noqa: BLE001 - report and go on to the next model
                print(f"\n## {model_id}: FAILED: {type(err).__name__}: {err}")
                rows.append({"model": model_id, "verdict": f"FAILED: {type(err).__name__}"})
            sys.stdout.flush()
    print("\n## Summary\n")
    print(pd.DataFrame(rows).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
