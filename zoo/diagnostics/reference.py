"""Reference posteriors: named, label-permutation-invariant posterior expectations with Monte Carlo standard errors.

>>> import zoo
>>> ref = zoo.reference("gustafson07.fs", "bench_tiny")      # loads zoo/references/gustafson07.fs__bench_tiny.json
>>> round(ref.mean["Pr(M_3 = 1)"], 4), ref.mcse["Pr(M_3 = 1)"]   # exact references have mcse 0
(0.0735, 0.0)
>>> ("gustafson07.fs", "bench_tiny") in zoo.references()     # [(model_id, dataset), ...] stored and buildable
True

A reference is made by ``build(model_id, dataset)`` (CLI: ``zoo reference build ID [--dataset NAME]``; long, not in
CI) in one of two ways, recorded in its ``construction``:

- ``"enumeration"``: the discrete space is small enough to sum over exactly (gustafson07.fs on ``bench_tiny``:
  every inclusion vector M (2^p) and every label vector of the unannotated units, with (delta, Omega) fixed as the
  paper's FS does, eq. 10); the expectations are exact up to float64 rounding, ``mcse`` 0, ``meets_bar`` true.
  The problem's default exact kernel is run against it (``chains`` x ``draws``) and ``construction["cross_check"]``
  stores its largest |z| in units of that run's own MCSE.
- ``"mcmc"``: ``chains`` independent chains (at least 10, seeds 0..chains-1 from ``seed``: the samplers' own
  dispersed initializations) of the zoo's exact kernel; per quantity the mean over all draws, its MCSE, the
  rank-normalized split r-hat and the bulk ESS (ArviZ; Vehtari et al. 2021). posteriordb's bar is r-hat < 1.01 and
  ESS >= 10,000 for every quantity; ``construction["meets_bar"]`` says whether this reference meets it, and
  ``min_ess`` / ``max_rhat`` say by how much. A second, different exact kernel is run as a cross-check where the
  zoo has one (kueck04: Metropolised Z sampler ``blocked_gibbs_mh`` against the exact ``blocked_gibbs``;
  gustafson07: the paper's single random flip without joint moves against the systematic scan with joint moves;
  carbonetto03: NumPyro's NUTS with a dense mass matrix against zoo.fit's NUTS, both on the program with the
  labels summed out),
  and ``construction["cross_check"]`` stores its largest |z| = |difference| / sqrt(mcse_a^2 + mcse_b^2).

Either way ``construction["command"]`` is the ``zoo reference build`` command line that rebuilds the file.
``add_cross_check`` (CLI: ``zoo reference cross-check ID --dataset NAME --method M``) runs one more of the problem's
exact kernels against the stored reference, without rebuilding it, and appends its agreement record to
``construction["more_cross_checks"]`` (used where the build's own cross-check kernel does not mix: kueck04.hybrid
on ring60).

File format (JSON, one file per reference: ``zoo/references/<model_id>__<dataset>.json``, shipped as package data)::

    {"format": "zoo-reference/1",
     "model_id": "gustafson07.fs", "dataset": "bench_tiny", "description": "...",
     "quantities": {"Pr(M_1 = 1)": {"mean": 0.93, "mcse": 0.0021, "rhat": 1.0004, "ess": 12011.0}, ...},
     "construction": {"kind": "mcmc" | "enumeration", "method": ..., "chains": 10, "warmup": ..., "draws": ...,
                      "seed": 0, "min_ess": ..., "max_rhat": ..., "meets_bar": true, "cross_check": {...},
                      "more_cross_checks": [{...}, ...] (optional), "seconds": ...},
     "versions": {"zoo_version": "0.1.0 (<commit>)", "jax_version": ..., ...}, "created_at": "<UTC ISO time>"}

``rhat`` and ``ess`` are null for enumeration (and for a quantity constant in every draw). Quantities never depend
on how labels are permuted: inclusion probabilities of named features or kernels, label probabilities of units
whose concepts are named by the annotation, the expected number of active kernels, E[log delta2]; for carbonetto03
co-assignment probabilities Pr(z_i = z_j), label probabilities of regions whose caption allows several words,
held-out predictive densities p(x* | data) and E[log p(x* | theta)], and E[log tau2_k] (Rao-Blackwellized: the
E-step's responsibilities given each draw of the parameters).
The problems (data, quantities, how to build) live in ``zoo.diagnostics.reference_problems``.
"""
from __future__ import annotations

import dataclasses
import datetime
import json
import math
import pathlib
import time
from typing import Any, Mapping

import numpy as np

__all__ = ["Reference", "reference", "references", "build", "add_cross_check", "summarize_draws", "REFERENCE_DIR",
           "FORMAT", "RHAT_BAR", "ESS_BAR"]

FORMAT = "zoo-reference/1"
REFERENCE_DIR = pathlib.Path(__file__).with_name("references")
RHAT_BAR, ESS_BAR, MIN_CHAINS = 1.01, 10_000, 10


@dataclasses.dataclass(frozen=True)
class Reference:
    """A reference posterior: ``mean`` and ``mcse`` map a quantity's name to its expectation and Monte Carlo
    standard error (0 when exact); ``rhat`` / ``ess`` per quantity (None when exact or constant);
    ``construction``: how it was made (see the module doc); ``versions``: software versions at build time."""
    model_id: str
    dataset: str
    description: str
    mean: dict
    mcse: dict
    rhat: dict
    ess: dict
    construction: dict
    versions: dict
    created_at: str

    @property
    def names(self) -> list[str]:
        """The quantities' names, in file order."""
        return list(self.mean)

    @property
    def exact(self) -> bool:
        return self.construction.get("kind") == "enumeration"

    def to_json(self) -> dict:
        """The file's JSON object (see the module doc)."""
        quantities = {name: {"mean": self.mean[name], "mcse": self.mcse[name], "rhat": self.rhat.get(name),
                             "ess": self.ess.get(name)} for name in self.mean}
        return {"format": FORMAT, "model_id": self.model_id, "dataset": self.dataset,
                "description": self.description, "quantities": quantities, "construction": self.construction,
                "versions": self.versions, "created_at": self.created_at}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> "Reference":
        """Parse a file's JSON object; ValueError naming the field that is missing or malformed."""
        if not isinstance(obj, Mapping):
            raise ValueError("reference: expected a JSON object")
        if obj.get("format") != FORMAT:
            raise ValueError(f"format: expected {FORMAT!r}, got {obj.get('format')!r}")
        for field in ("model_id", "dataset", "quantities", "construction"):
            if field not in obj:
                raise ValueError(f"{field}: missing from the reference file")
        q = obj["quantities"]
        if not isinstance(q, Mapping) or not q:
            raise ValueError("quantities: expected a non-empty object of name -> {mean, mcse, rhat, ess}")
        for name, entry in q.items():
            if not isinstance(entry, Mapping) or not all(k in entry for k in ("mean", "mcse")):
                raise ValueError(f"quantities[{name!r}]: expected an object with mean and mcse")
            if not (math.isfinite(entry["mean"]) and math.isfinite(entry["mcse"]) and entry["mcse"] >= 0):
                raise ValueError(f"quantities[{name!r}]: mean and mcse must be finite, mcse >= 0")
        return cls(model_id=obj["model_id"], dataset=obj["dataset"], description=obj.get("description", ""),
                   mean={n: float(e["mean"]) for n, e in q.items()}, mcse={n: float(e["mcse"]) for n, e in q.items()},
                   rhat={n: e.get("rhat") for n, e in q.items()}, ess={n: e.get("ess") for n, e in q.items()},
                   construction=dict(obj["construction"]), versions=dict(obj.get("versions", {})),
                   created_at=str(obj.get("created_at", "")))

    def save(self, path: str | pathlib.Path) -> pathlib.Path:
        path = pathlib.Path(path)
        path.write_text(json.dumps(self.to_json(), indent=1, allow_nan=False) + "\n")
        return path

    def summary(self) -> str:
        """A short text: the reference, how it was made, whether it meets the r-hat/ESS bar."""
        c = self.construction
        length = (f"{c.get('draws')} sweeps kept 1 in {c['thinning']}" if c.get("thinning") else
                  f"{c.get('draws')} draws")
        made = (f"exact enumeration of {c.get('states')} states" if self.exact else
                f"{c.get('chains')} chains x {length} of {c.get('method')}, min ESS "
                f"{c.get('min_ess', float('nan')):.0f}, max r-hat {c.get('max_rhat', float('nan')):.4f}, "
                f"meets the bar (r-hat < {RHAT_BAR}, ESS >= {ESS_BAR}): {c.get('meets_bar')}")
        return f"{self.model_id} on {self.dataset}: {len(self.mean)} quantities; {made}"


def _path(model_id: str, dataset: str) -> pathlib.Path:
    return REFERENCE_DIR / f"{model_id}__{dataset}.json"


def references() -> list[tuple[str, str]]:
    """(model_id, dataset) of every stored reference file, sorted."""
    out = []
    for path in sorted(REFERENCE_DIR.glob("*__*.json")):
        model_id, dataset = path.stem.split("__", 1)
        out.append((model_id, dataset))
    return out


def reference(model_id: str, dataset: str | None = None) -> Reference:
    """The stored reference of ``model_id`` on ``dataset`` (None: the only one stored for that model). ValueError
    listing what is stored when there is none (build one with ``zoo reference build``)."""
    if not isinstance(model_id, str):
        raise ValueError(f"model_id: expected a string, got {type(model_id).__name__}")
    stored = references()
    if dataset is None:
        mine = [d for m, d in stored if m == model_id]
        if len(mine) != 1:
            raise ValueError(f"dataset: {model_id!r} has {len(mine)} stored references ({', '.join(mine) or 'none'});"
                             f" name one")
        dataset = mine[0]
    path = _path(model_id, dataset)
    if not path.exists():
        listing = ", ".join(f"{m}/{d}" for m, d in stored) or "none"
        raise ValueError(f"model_id/dataset: no stored reference {model_id}/{dataset}; stored: {listing}")
    return Reference.from_json(json.loads(path.read_text()))


# ---------------------------------------------------------------------------------------------- summaries
def summarize_draws(per_draw: Mapping[str, np.ndarray]) -> dict[str, dict]:
    """Per quantity ``(chain, draw)`` array -> {"mean", "mcse", "rhat", "ess"} with ArviZ's rank-normalized split
    r-hat, bulk ESS and the MCSE of the mean. A quantity constant over all draws has mcse 0 and rhat/ess None."""
    import arviz as az
    out = {}
    for name, x in per_draw.items():
        x = np.asarray(x, dtype=float)
        if x.ndim != 2:
            raise ValueError(f"{name}: expected a (chain, draw) array, got shape {x.shape}")
        if np.ptp(x) == 0:
            out[name] = {"mean": float(x.mean()), "mcse": 0.0, "rhat": None, "ess": None}
            continue
        ess = float(az.ess(x, method="bulk"))
        rhat = float(az.rhat(x)) if x.shape[0] > 1 else None
        mcse = float(az.mcse(x, method="mean"))
        out[name] = {"mean": float(x.mean()), "mcse": mcse, "rhat": rhat, "ess": ess}
    return out


def from_summaries(model_id: str, dataset: str, description: str, summaries: Mapping[str, dict],
                   construction: dict) -> Reference:
    """A Reference from ``summarize_draws`` output (or exact values with mcse 0) and its construction record;
    fills min_ess / max_rhat / meets_bar for MCMC references."""
    from zoo.core.provenance import software_versions
    construction = dict(construction)
    if construction.get("kind") == "mcmc":
        ess = [s["ess"] for s in summaries.values() if s["ess"] is not None]
        rhat = [s["rhat"] for s in summaries.values() if s["rhat"] is not None]
        construction["min_ess"] = float(min(ess)) if ess else None
        construction["max_rhat"] = float(max(rhat)) if rhat else None
        construction["meets_bar"] = bool(construction.get("chains", 0) >= MIN_CHAINS and ess and rhat
                                         and min(ess) >= ESS_BAR and max(rhat) < RHAT_BAR)
    elif construction.get("kind") == "enumeration":     # exact: no Monte Carlo error, beyond the r-hat/ESS bar
        construction.update(min_ess=None, max_rhat=None, meets_bar=True)
    return Reference(model_id=model_id, dataset=dataset, description=description,
                     mean={n: s["mean"] for n, s in summaries.items()}, mcse={n: s["mcse"] for n, s in summaries.items()},
                     rhat={n: s["rhat"] for n, s in summaries.items()}, ess={n: s["ess"] for n, s in summaries.items()},
                     construction=construction, versions=dict(software_versions()),
                     created_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))


def cross_check(a: Mapping[str, dict], b: Mapping[str, dict]) -> dict:
    """Agreement of two kernels' summaries: per quantity z = (mean_a - mean_b) / sqrt(mcse_a^2 + mcse_b^2); returns
    the largest |z|, its quantity, and the share of |z| > 3 (about 0.3 % expected for agreeing kernels)."""
    z = {}
    for name in a:
        se = math.hypot(a[name]["mcse"], b[name]["mcse"])
        diff = a[name]["mean"] - b[name]["mean"]
        z[name] = diff / se if se > 0 else (0.0 if diff == 0 else math.inf)
    worst = max(z, key=lambda n: abs(z[n]))
    return {"max_abs_z": abs(z[worst]), "worst": worst, "share_abs_z_over_3": float(np.mean(
        [abs(v) > 3 for v in z.values()])), "n_quantities": len(z)}


def _check_run(chains, warmup, draws, thinning) -> None:
    """ValueError naming the first bad run setting (chains >= 2, warmup >= 0, draws >= 10, thinning >= 1, ints)."""
    if not isinstance(chains, int) or chains < 2:
        raise ValueError(f"chains: expected an int >= 2, got {chains!r}")
    for name, value in (("warmup", warmup), ("draws", draws)):
        if not isinstance(value, int) or value < (0 if name == "warmup" else 10):
            raise ValueError(f"{name}: expected a non-negative int (draws >= 10), got {value!r}")
    if not isinstance(thinning, int) or thinning < 1:
        raise ValueError(f"thinning: expected an int >= 1, got {thinning!r}")


def build(model_id: str, dataset: str, *, chains: int = MIN_CHAINS, warmup: int = 1000, draws: int = 5000,
          seed: int = 0, cross_check_draws: int | None = None, thinning: int = 1, save: bool = True) -> Reference:
    """Build (and by default store) the reference of ``model_id`` on ``dataset``: enumeration where the problem is
    exact, otherwise ``chains`` chains of ``warmup`` + ``draws`` sweeps of the default exact kernel and a
    cross-check run of the other exact kernel (``cross_check_draws`` draws per chain, default ``draws``);
    ``thinning`` > 1 (Gibbs samplers only) keeps one sweep in ``thinning``, ``draws`` still counting sweeps."""
    from zoo.diagnostics.reference_problems import problem
    _check_run(chains, warmup, draws, thinning)
    prob = problem(model_id, dataset)
    thin = {"thinning": thinning} if thinning > 1 else {}
    t0 = time.perf_counter()
    if prob.exact is not None:
        summaries, construction = prob.exact()
        construction["seconds"] = round(time.perf_counter() - t0, 1)
        if prob.default_sampler in prob.samplers:          # an exact kernel against the enumeration
            check = prob.samplers[prob.default_sampler](chains=chains, warmup=warmup, **thin)
            n = cross_check_draws or draws
            second = summarize_draws(prob.quantities(check(seed + 1000, prob.data(), n)))
            construction["cross_check"] = {"method": prob.default_sampler, "chains": chains, "warmup": warmup,
                                           "draws": n, "seed": seed + 1000, "unit": "the sampler's own MCSE",
                                           **cross_check(summaries, second)}
    else:
        data = prob.data()
        main = prob.samplers[prob.default_sampler](chains=chains, warmup=warmup, **thin)
        summaries = summarize_draws(prob.quantities(main(seed, data, draws)))
        construction = {"kind": "mcmc", "method": prob.default_sampler, "chains": chains, "warmup": warmup,
                        "draws": draws, "seed": seed, **thin}
        if prob.cross_sampler is not None and save:         # a build stopped during the cross-check keeps this
            pending = {**construction, "seconds": round(time.perf_counter() - t0, 1),
                       "cross_check": {"method": prob.cross_sampler, "status": "not run: the build stopped first"},
                       "command": _command(model_id, dataset, chains, warmup, draws, cross_check_draws, thinning)}
            REFERENCE_DIR.mkdir(exist_ok=True)
            from_summaries(model_id, dataset, prob.description, summaries, pending).save(_path(model_id, dataset))
        if prob.cross_sampler is not None:
            other = prob.samplers[prob.cross_sampler](chains=chains, warmup=warmup, **thin)
            second = summarize_draws(prob.quantities(other(seed + 1000, data, cross_check_draws or draws)))
            construction["cross_check"] = {"method": prob.cross_sampler, "draws": cross_check_draws or draws,
                                           "seed": seed + 1000, **cross_check(summaries, second)}
    construction.setdefault("seconds", round(time.perf_counter() - t0, 1))
    construction["command"] = _command(model_id, dataset, chains, warmup, draws, cross_check_draws, thinning)
    ref = from_summaries(model_id, dataset, prob.description, summaries, construction)
    if save:
        REFERENCE_DIR.mkdir(exist_ok=True)
        ref.save(_path(model_id, dataset))
    return ref


def add_cross_check(model_id: str, dataset: str, method: str, *, chains: int = MIN_CHAINS, warmup: int = 1000,
                    draws: int = 5000, thinning: int = 1, seed: int = 2000, save: bool = True) -> dict:
    """Run the problem's sampler ``method`` (``chains`` x ``warmup`` + ``draws`` sweeps) against the STORED
    reference of ``model_id`` on ``dataset`` without rebuilding it, and append the agreement record (``cross_check``'s
    fields plus the run's settings, min ESS and max r-hat, so that a poorly mixing check can be told from a
    failing one) to ``construction["more_cross_checks"]``; the file is rewritten only when ``save``. For a
    reference whose own cross-check kernel does not mix (kueck04.hybrid / ring60) this adds a second, different
    exact kernel. Returns the record."""
    from zoo.diagnostics.reference_problems import problem
    prob = problem(model_id, dataset)
    if method not in prob.samplers:
        raise ValueError(f"method: {method!r} is not a sampler of {model_id}/{dataset}; known: {sorted(prob.samplers)}")
    _check_run(chains, warmup, draws, thinning)
    ref = reference(model_id, dataset)
    thin = {"thinning": thinning} if thinning > 1 else {}
    t0 = time.perf_counter()
    run = prob.samplers[method](chains=chains, warmup=warmup, **thin)
    second = summarize_draws(prob.quantities(run(seed, prob.data(), draws)))
    stored = {n: {"mean": ref.mean[n], "mcse": ref.mcse[n]} for n in ref.names}
    ess = [s["ess"] for s in second.values() if s["ess"] is not None]
    rhat = [s["rhat"] for s in second.values() if s["rhat"] is not None]
    record = {"method": method, "chains": chains, "warmup": warmup, "draws": draws, "seed": seed, **thin,
              "unit": "both runs' MCSE", "min_ess": float(min(ess)) if ess else None,
              "max_rhat": float(max(rhat)) if rhat else None, "seconds": round(time.perf_counter() - t0, 1),
              **cross_check(stored, second)}
    if save:
        construction = dict(ref.construction)
        construction["more_cross_checks"] = [*construction.get("more_cross_checks", []), record]
        dataclasses.replace(ref, construction=construction).save(_path(model_id, dataset))
    return record


def _command(model_id, dataset, chains, warmup, draws, cross_check_draws, thinning) -> str:
    """The ``zoo reference build`` command line that rebuilds a reference with these settings."""
    words = [f"zoo reference build {model_id} --dataset {dataset}", f"--chains {chains}", f"--warmup {warmup}",
             f"--draws {draws}"]
    words += [f"--cross-check-draws {cross_check_draws}"] if cross_check_draws else []
    words += [f"--thinning {thinning}"] if thinning > 1 else []
    return " ".join(words)


def cli(args) -> int:
    """``zoo reference list`` / ``zoo reference build ID --dataset NAME`` (see zoo.cli)."""
    from zoo.diagnostics.reference_problems import problems
    if args.action == "list":
        stored = set(references())
        for model_id, dataset in sorted(set(problems()) | stored):
            line = f"{model_id:<22} {dataset:<14}"
            if (model_id, dataset) in stored:
                line += " " + reference(model_id, dataset).summary().split(": ", 1)[1]
            else:
                line += " (not built)"
            print(line)
        return 0
    if args.model is None or args.dataset is None:
        raise ValueError(f"model/--dataset: `zoo reference {args.action}` needs a model id and --dataset")
    if args.action == "cross-check":
        if not getattr(args, "method", None):
            raise ValueError("--method: `zoo reference cross-check` needs the sampler to run (see the problem's "
                             "samplers in zoo.diagnostics.reference_problems)")
        record = add_cross_check(args.model, args.dataset, args.method, chains=args.chains, warmup=args.warmup,
                                 draws=args.draws, thinning=getattr(args, "thinning", 1))
        print(json.dumps(record, indent=1))
        print(f"appended to {_path(args.model, args.dataset)}")
        return 0
    ref = build(args.model, args.dataset, chains=args.chains, warmup=args.warmup, draws=args.draws,
                cross_check_draws=getattr(args, "cross_check_draws", None), thinning=getattr(args, "thinning", 1))
    print(ref.summary())
    print(f"written to {_path(args.model, args.dataset)}")
    return 0
