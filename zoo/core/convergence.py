"""Verdicts on a fit, for every kind of inference: one table from ``fit.diagnose()``, one row per site.

**MCMC** (``inference="mcmc"``), with the thresholds of Vehtari, Gelman, Simpson, Carpenter & Bürkner (2021,
"Rank-normalization, folding, and localization: an improved R-hat"): rank-normalized split r-hat below 1.01 and
bulk and tail effective sample sizes of at least 100 per chain. Discrete and binary sites (integer values) are
first judged by what is meaningful for them, because an r-hat of chains that never move is a division by zero:

* chains that each sit in one state, or visit ranges of values with none in common, are "stuck in different
  states" (the states named);
* a chain that never moved while the other chains change value often enough that staying put for all its draws is
  improbable (below 1 %) "never moved" (stuck);
* a site that never moved in any chain is judged by the sampler's evidence: where it records its probability of
  leaving the current value at each sweep (``<site>_move_probability``), fewer than ``CERTAIN_EXPECTED_MOVES``
  expected moves over all sweeps make it "certain" (a status, not a failure) and more make it stuck; where it
  records the acceptance of the site's moves and two or more chains refused every proposal and agree, it is
  "certain" (given the rest of the state: a mode that every chain found and none can leave reads the same, and the
  verdict says so); without evidence, or with one chain, "never moved: certain or stuck" fails. Elements of a site
  that never move while the site's other elements do are counted as certain (the sampler moves the site). A site
  whose posterior attribute ``fixed`` says why the model fixes it is "certain" with that reason.

Acceptance and switch rates are shown per site: the acceptance of the moves the sampler records for the site
(sample stats ``accept_<site>``, ``<site>_acceptance``, or any stat whose attribute ``sites`` names it), else the
run's mean acceptance (NUTS), and the share of draws in which a discrete site changed value.

**Optimisers and variational inference** (EM, MAP, variational EM, coordinate-ascent and stochastic VI, SVI; each
chain a restart) are judged by their objective trace (``sample_stats["objective"]``, (chain, 1, iteration), NaN
after a run stopped by its own tolerance; an annealed run, with ``sample_stats["temperature"]``, judged from where the
temperature reaches 1): a restart converged when it stopped by its own tolerance, or when the
mean of the objective over the last 10 % of its iterations differs from the mean over the 10 % that end at the
run's midpoint by less than ``OBJECTIVE_RTOL`` of its size plus ``OBJECTIVE_ATOL`` nats plus three standard
errors of the noise (a decaying learning rate flattens a trace that is far from its optimum: comparing the end with
the middle sees that). Converged restarts whose final objectives lie within ``OPTIMA_TOL`` nats of the best reached
the best optimum; when two or more did and they disagree on a site beyond ``VALUE_RTOL`` (variational draws: means
further apart than q's sd, i.e. beyond their spread), the answer is not unique and that is flagged; restarts stuck
at worse optima are reported, not flagged (predictions use the best).

Each row has ``status`` ("ok", "certain", "point estimate", or "fail"), ``verdict`` (in words) and ``advice`` (what
to change, by the site's kind: label switching is mentioned only for sites declared exchangeable).
"""
from __future__ import annotations

import warnings
from typing import Iterable, NamedTuple, Sequence

import numpy as np

__all__ = ["RHAT_MAX", "ESS_PER_CHAIN_MIN", "OBJECTIVE_RTOL", "OPTIMA_TOL", "VALUE_RTOL", "CERTAIN_EXPECTED_MOVES",
           "ConvergenceWarning", "ObjectiveCheck", "objective_check", "objective_checks", "diagnose",
           "diagnose_elements", "failing_sites", "advice", "OBJECTIVE_CRITERION", "TARGET_ESS", "TIME_BUDGET",
           "short_of", "AutoSettings", "auto_settings", "auto_report", "AutoReport", "draws_for_ess"]

RHAT_MAX = 1.01
ESS_PER_CHAIN_MIN = 100
#: relative change of the objective between the middle and the end of a run below which it has converged
OBJECTIVE_RTOL = 1e-3
#: ... plus this many nats (an objective near zero has no meaningful relative change)
OBJECTIVE_ATOL = 0.1
#: restarts whose final objective is within this many nats of the best reached the best optimum
OPTIMA_TOL = 1.0
#: converged restarts at the best optimum disagree on a site when its values differ by more than this share of their
#: size (below it, two near-equal optima are practically one answer: carbonetto03's EM restarts differ by 3-6 %)
VALUE_RTOL = 0.1
#: a site that never moved is certain when the sampler expected fewer moves than this over all its sweeps
CERTAIN_EXPECTED_MOVES = 0.1
#: probability below which a chain staying put for all its draws is called stuck (given the other chains' rate)
STUCK_PROBABILITY = 0.01
OBJECTIVE_CRITERION = (f"objective converged: mean over the last 10% of iterations within {OBJECTIVE_RTOL:g} "
                       f"(relative)"
                       f" + {OBJECTIVE_ATOL:g} nat + 3 noise s.e. of the mean over the 10% ending at mid-run, or "
                       f"stopped by its own tolerance")


class ConvergenceWarning(UserWarning):
    """Issued by ``zoo.fit`` after a run whose headline sites fail the checks; ``sites`` names them."""

    def __init__(self, message: str, sites: Sequence[str] = ()):
        super().__init__(message)
        self.sites = tuple(sites)


def _arviz():
    from zoo.core.idata import az  # ArviZ as zoo imports it (its refactor notice silenced), loaded on first use
    return az


def _quiet():
    from zoo.core.idata import without_shape_log
    return without_shape_log()


def _element_names(name: str, shape: tuple) -> list[str]:
    return [f"{name}[{','.join(map(str, idx))}]" for idx in np.ndindex(*shape)] if shape else [name]


def _site_name(post, site: str) -> str:
    return f"{site}_relabelled" if f"{site}_relabelled" in post else site


def _ess_rhat(values: np.ndarray, name: str):
    """(r_hat, ess_bulk, ess_tail, mcse_mean) per element of ``values`` (chain, draw, ...), flattened."""
    az = _arviz()
    subset = az.convert_to_dataset({name: values})
    with warnings.catch_warnings(), _quiet():  # constant elements make ArviZ divide by zero: reported as such
        warnings.simplefilter("ignore", RuntimeWarning)
        out = [np.asarray(f(subset, method=m)[name]).reshape(-1)
               for f, m in ((az.rhat, "rank"), (az.ess, "bulk"), (az.ess, "tail"), (az.mcse, "mean"))]
    return out


def diagnose_elements(idata, sites: Sequence[str]):
    """One row per element of each site: r_hat, ess_bulk, ess_tail, mcse_mean, sd, constant (over all draws),
    within_chain_constant (the same in every draw of each chain) (pandas DataFrame)."""
    import pandas as pd

    post = idata.posterior
    rows = []
    for site in sites:
        name = _site_name(post, site)
        values = np.asarray(post[name], dtype=np.float64)
        n_chain, n_draw = values.shape[:2]
        r_hat, ess_bulk, ess_tail, mcse = _ess_rhat(values, name)
        flat = values.reshape(n_chain * n_draw, -1)
        constant = np.all(flat == flat[:1], axis=0)
        # a point estimate repeated over a restart's draws stays one after relabelling permutes it: judged raw
        by_chain = np.asarray(post[site]).reshape(n_chain, n_draw, -1)
        within = np.all(by_chain == by_chain[:, :1], axis=(0, 1))
        for i, label in enumerate(_element_names(name, values.shape[2:])):
            rows.append({"site": site, "element": label, "r_hat": r_hat[i], "ess_bulk": ess_bulk[i],
                         "ess_tail": ess_tail[i], "mcse_mean": mcse[i], "sd": flat[:, i].std(),
                         "constant": bool(constant[i]), "within_chain_constant": bool(within[i]),
                         "chains": n_chain, "draws": n_draw})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------------ sampler evidence

def _stats(idata):
    return idata.get("sample_stats") if hasattr(idata, "get") else None


def _site_stat_names(stats, site: str, suffix: str) -> list[str]:
    """Sample stats about ``site``'s moves: ``accept_<site>`` / ``<site>_acceptance`` (suffix "acceptance"), or
    ``<site>_move_probability`` (suffix "move_probability"), or any stat whose attributes name the site
    (``sites``, space-separated) and the kind (``kind``)."""
    if stats is None:
        return []
    names = []
    candidates = ([f"accept_{site}", f"{site}_acceptance"] if suffix == "acceptance" else [f"{site}_{suffix}"])
    names += [n for n in candidates if n in stats]
    for name in stats.data_vars:
        attrs = stats[name].attrs
        if site in str(attrs.get("sites", "")).split() and attrs.get("kind", "acceptance") == suffix \
                and name not in names:
            names.append(name)
    return names


def _site_acceptance(stats, site: str):
    """(mean acceptance of the moves the sampler records for ``site``, their names) or (None, [])."""
    names = _site_stat_names(stats, site, "acceptance")
    if not names:
        return None, []
    rates = [float(np.nanmean(np.asarray(stats[n], dtype=np.float64))) for n in names]
    return float(np.mean(rates)), names


def _run_acceptance(stats):
    if stats is None:
        return None
    for name in ("acceptance_rate", "accept_prob", "mean_tree_accept"):
        if name in stats:
            return float(np.nanmean(np.asarray(stats[name], dtype=np.float64)))
    return None


def _expected_moves(stats, site: str):
    """The sampler's expected number of moves of ``site`` over all its recorded sweeps (sum of its probability of
    leaving the current value), or None when it records none."""
    names = _site_stat_names(stats, site, "move_probability")
    if not names:
        return None
    return float(sum(np.nansum(np.asarray(stats[n], dtype=np.float64)) for n in names))


def _divergences(stats):
    if stats is None:
        return None
    for name in ("diverging", "divergences"):
        if name in stats:
            return int(np.sum(np.asarray(stats[name])))
    return None


# ------------------------------------------------------------------------------------------------ discrete sites

def _is_discrete(values: np.ndarray) -> bool:
    if values.dtype.kind in "biu":
        return True
    finite = values[np.isfinite(values)]
    return finite.size > 0 and bool(np.all(finite == np.round(finite)))


def _fmt(v) -> str:
    v = float(v)
    return str(int(v)) if v == int(v) else f"{v:g}"


class DiscreteFindings(NamedTuple):
    problems: list          # failure sentences
    never_moved: np.ndarray  # (E,) the same value in every draw of every chain
    switch_rate: float      # share of consecutive draws that changed, over chains and moving elements
    moving: np.ndarray      # (E,) elements whose r-hat / ESS are to be judged


def _discrete_findings(values: np.ndarray, labels: list[str]) -> DiscreteFindings:
    """Stuck chains of a discrete site ``values`` (chain, draw, element) in words (module docstring)."""
    n_chain, n_draw, _ = values.shape
    changes = values[:, 1:] != values[:, :-1]                                 # (C, D-1, E)
    rate_chain = changes.mean(axis=1) if n_draw > 1 else np.zeros(values.shape[::2])   # (C, E)
    const_chain = ~changes.any(axis=1)                                          # (C, E)
    first = values[:, 0]
    never = const_chain.all(0) & np.all(first == first[:1], axis=0)
    problems = []
    stuck_apart = np.zeros(values.shape[2], dtype=bool)
    if n_chain > 1:
        lo, hi = values.min(axis=1), values.max(axis=1)                          # (C, E)
        apart = lo.max(0) > hi.min(0)                                             # two chains with no value shared
        for e in np.flatnonzero(apart)[:3]:
            if const_chain[:, e].all():
                where = ", ".join(f"chain {c} at {_fmt(first[c, e])}" for c in range(n_chain))
            else:
                where = ", ".join(f"chain {c} in {_fmt(lo[c, e])}..{_fmt(hi[c, e])}" if lo[c, e] != hi[c, e]
                                  else f"chain {c} at {_fmt(lo[c, e])}" for c in range(n_chain))
            problems.append(f"chains stuck in different states ({labels[e]}: {where})")
        if apart.sum() > 3:
            problems.append(f"and {int(apart.sum()) - 3} more element(s) with chains in different states")
        stuck_apart = apart
        # a chain that never moved while the others change often enough that staying put is improbable
        for e in np.flatnonzero(~apart & const_chain.any(0) & ~const_chain.all(0))[:3]:
            others = rate_chain[~const_chain[:, e], e].mean()
            if (1.0 - others) ** max(n_draw - 1, 1) < STUCK_PROBABILITY:
                lazy = [int(c) for c in np.flatnonzero(const_chain[:, e])]
                problems.append(f"{labels[e]}: chain(s) {', '.join(map(str, lazy))} never moved in {n_draw} draws "
                                f"while the other chains change value in {others:.1%} of draws (stuck)")
    moving = ~never & ~stuck_apart
    rate = float(rate_chain[:, moving].mean()) if moving.any() else 0.0
    return DiscreteFindings(problems, never, rate, moving)


def _never_moved_verdict(site: str, values: np.ndarray, stats, chains: int, draws: int):
    """(status, verdict) of a site that never moved in any chain (module docstring)."""
    value = values.reshape(-1, values.shape[-1])[0]
    shown = _fmt(value[0]) if value.size == 1 else "[" + ", ".join(_fmt(v) for v in value[:6]) + \
        (", ..." if value.size > 6 else "") + "]"
    where = f"the value {shown} in every draw of {chains} chain(s) x {draws} draws"
    acceptance, names = _site_acceptance(stats, site)
    evidence = []
    if acceptance is not None:
        evidence.append(f"the sampler recorded {'/'.join(names)} = {acceptance:.3f}")
    expected = _expected_moves(stats, site)
    if expected is not None:
        evidence.append(f"its probabilities of leaving the value sum to {expected:.3g} moves over all sweeps")
        if expected < CERTAIN_EXPECTED_MOVES:
            return "certain", (f"certain: never moved ({where}); {'; '.join(evidence)}: the other values are "
                               f"improbable under the sampler's own conditional probabilities")
        return "fail", (f"never moved although the sampler's own probabilities expected {expected:.3g} moves: "
                        f"stuck ({where}; {'; '.join(evidence)})")
    if acceptance is not None and acceptance == 0.0 and chains > 1:
        sweeps = chains * draws
        return "certain", (f"certain or stuck alike: never moved ({where}); every move the sampler proposed was "
                           f"refused ({'/'.join(names)} = 0 over {sweeps} sweeps: leaving has conditional probability "
                           f"below about {3.0 / sweeps:.2g} per sweep) and the {chains} chains agree")
    tells = ("; ".join(evidence) + "; " if evidence else "") + (
        "one chain cannot tell a certain posterior from a stuck chain" if chains == 1 else
        "moves were accepted yet the site never changed" if acceptance else
        "the sampler records no acceptance or probability of leaving, so a certain posterior and stuck chains "
        "look alike")
    return "fail", f"never moved: certain or stuck ({where}; {tells})"


# ------------------------------------------------------------------------------------------------ objective traces

class ObjectiveCheck(NamedTuple):
    """One restart's objective trace judged: converged (None: no trace), the relative change between mid-run and
    the end, the iterations run, whether the run stopped by its own tolerance, and the final objective."""
    converged: bool | None
    relative_change: float
    iterations: int
    stopped_early: bool
    final: float


def objective_check(trace: np.ndarray, rtol: float = OBJECTIVE_RTOL) -> ObjectiveCheck:
    """Judge one objective trace (iteration,), NaN-padded after a run stopped by its own tolerance (module
    docstring: ``OBJECTIVE_CRITERION``)."""
    trace = np.asarray(trace, dtype=np.float64).reshape(-1)
    finite = np.flatnonzero(np.isfinite(trace))
    if finite.size == 0:
        return ObjectiveCheck(None, np.nan, 0, False, np.nan)
    f = trace[: finite[-1] + 1]
    n = f.size
    stopped_early = n < trace.size
    if n < 4:
        return ObjectiveCheck(True if stopped_early else None, np.nan, n, stopped_early, float(f[-1]))
    w = max(1, n // 10)
    last, mid = f[n - w:], f[n // 2 - w: n // 2]
    scale = max(abs(float(last.mean())), 1e-12)
    change = abs(float(last.mean() - mid.mean()))
    noise = np.std(np.diff(f[n - w - 1:])) / np.sqrt(2.0) if w > 1 else 0.0
    allowance = rtol * scale + OBJECTIVE_ATOL + 3.0 * noise * np.sqrt(2.0 / w)
    converged = bool(stopped_early or change <= allowance)
    return ObjectiveCheck(converged, change / scale, n, stopped_early, float(f[-1]))


def objective_checks(idata) -> list[ObjectiveCheck] | None:
    """One ObjectiveCheck per chain (restart) of ``sample_stats["objective"]``; None without a trace."""
    stats = _stats(idata)
    if stats is None or "objective" not in stats:
        return None
    n_chain = idata.posterior.sizes["chain"]
    trace = np.asarray(stats["objective"], dtype=np.float64).reshape(n_chain, -1)
    if "temperature" in stats:   # an annealed objective is the method's own only once the temperature is 1
        temperature = np.asarray(stats["temperature"], dtype=np.float64).reshape(n_chain, -1)
        if temperature.shape == trace.shape:
            trace = np.where(np.isclose(temperature, 1.0), trace, np.nan)
            checks = [objective_check(t[np.argmax(~np.isnan(t)):] if np.isfinite(t).any() else t) for t in trace]
        else:
            checks = [objective_check(t) for t in trace]
    else:
        checks = [objective_check(t) for t in trace]
    if "converged" in stats:   # a method that records its own convergence flag: a stop by it counts as one
        flags = np.asarray(stats["converged"]).reshape(n_chain, -1)[:, 0]
        checks = [c._replace(converged=True, stopped_early=True) if bool(flag) and c.converged is not True else c
                  for c, flag in zip(checks, flags)]
    return checks


def _objective_summary(checks: list[ObjectiveCheck]):
    """(problem sentence or "", note, indices of the converged restarts at the best optimum)."""
    judged = [i for i, c in enumerate(checks) if c.converged is not None]
    bad = [i for i in judged if not checks[i].converged]
    problem = ""
    if bad:
        changes = ", ".join(f"{checks[i].relative_change:.2g}" for i in bad[:4])
        problem = (f"objective not converged in restart(s) {', '.join(map(str, bad))} of {len(checks)} "
                   f"(relative change mid-run to end {changes}; criterion: {OBJECTIVE_CRITERION})")
    good = [i for i in judged if checks[i].converged]
    if not good:
        return problem, "", []
    finals = np.array([checks[i].final for i in good])
    best = finals.max()
    at_best = [i for i, v in zip(good, finals) if v >= best - OPTIMA_TOL]
    worse = [i for i, v in zip(good, finals) if v < best - OPTIMA_TOL]
    note = ""
    if worse:
        note = (f"{len(worse)} converged restart(s) at worse optima ({min(finals):.6g} vs best {best:.6g}); "
                f"best reached by {len(at_best)} of {len(checks)}")
    elif len(good) > 1:
        note = f"{len(at_best)} restarts at the best optimum ({best:.6g})"
    return problem, note, at_best


def _values_disagree(values: np.ndarray, restarts: list[int], exchangeable: bool) -> tuple[bool, float, float]:
    """Do ``restarts`` (chains) of point-estimate ``values`` (chain, draw, ...) disagree beyond VALUE_RTOL? For an
    exchangeable site the values are compared as sets (sorted), so relabelled components agree."""
    v = values[restarts, 0].reshape(len(restarts), -1)
    if exchangeable:
        v = np.sort(v, axis=1)
    spread = np.abs(v.max(0) - v.min(0))
    scale = np.maximum(np.abs(v).max(0), 1e-12)
    worst = int(np.argmax(spread / scale))
    return bool(np.any(spread > VALUE_RTOL * scale)), float(v[:, worst].min()), float(v[:, worst].max())


# ------------------------------------------------------------------------------------------------ the table

def _mcmc_problems(row: dict, chains: int, need: int, n_divergent) -> list[str]:
    problems = []
    if chains > 1 and np.isfinite(row["r_hat"]) and row["r_hat"] >= RHAT_MAX:
        problems.append(f"r-hat {row['r_hat']:.3f} >= {RHAT_MAX}")
    if np.isfinite(row["ess_bulk"]) and row["ess_bulk"] < need:
        problems.append(f"bulk ESS {row['ess_bulk']:.1f} < {need}")
    if np.isfinite(row["ess_tail"]) and row["ess_tail"] < need:
        problems.append(f"tail ESS {row['ess_tail']:.1f} < {need}")
    if n_divergent:
        problems.append(f"{n_divergent} divergent transitions")
    return problems


def draws_for_ess(need: float, ess: float, draws: int) -> int | None:
    """Draws per chain that would reach ESS ``need`` at the rate of this run (ESS grows about in proportion to the
    draws once the chains have forgotten their start), rounded up to hundreds; None when the ESS says nothing
    (NaN or 0). ``ess``: the worst of the site's bulk and tail ESS over ``draws`` draws per chain."""
    if not np.isfinite(ess) or ess <= 0 or ess >= need:
        return None
    return int(np.ceil(draws * need / ess / 100.0) * 100)


def _mcmc_advice(site: str, kind: str, problems: list[str], exchangeable: bool,
                 draws_needed: int | None = None) -> str:
    text = " ".join(problems)
    advice = []
    if "stuck" in text or "never moved" in text:
        advice.append(f"the sampler's moves of {site} do not cross between its values: run chains started "
                      f"dispersed and longer, or a method with a move that changes {site} jointly with what it "
                      f"depends on")
    if "r-hat" in text:
        advice.append("chains disagree: more warm-up (num_warmup) and draws, or more chains")
        if exchangeable:
            advice.append(f"{site} is exchangeable: compare the relabelled draws ({site}_relabelled) for label "
                          f"switching")
    if "ESS" in text:
        rate = (f": at this run's rate about {draws_needed:,} per chain" if draws_needed is not None else "")
        advice.append(f"more draws (num_samples{rate}; the zoo's own samplers also take num_samples='auto', which "
                      f"runs until the target ESS)")
    if "divergent" in text:
        advice.append("raise target_accept_prob or reparameterize")
    return "; ".join(advice)


def _mcmc_row(idata, site: str, stats, n_divergent, run_acceptance, exchangeable: bool) -> dict:
    post = idata.posterior
    name = _site_name(post, site)
    values = np.asarray(post[name])
    chains, draws = values.shape[:2]
    flat = values.reshape(chains, draws, -1)
    labels = _element_names(site, values.shape[2:])
    discrete = _is_discrete(values)
    acceptance, _ = _site_acceptance(stats, site)
    row = {"site": site, "kind": "discrete" if discrete else "continuous", "elements": flat.shape[2],
           "constant": 0, "r_hat": np.nan, "ess_bulk": np.nan, "ess_tail": np.nan, "mcse/sd": np.nan,
           "switch_rate": np.nan, "divergences": n_divergent,
           "acceptance": acceptance if acceptance is not None else (run_acceptance if run_acceptance is not None
                                                                    else np.nan)}
    need = ESS_PER_CHAIN_MIN * chains
    floats = flat.astype(np.float64)
    if discrete:
        found = _discrete_findings(floats, labels)
        row["switch_rate"] = found.switch_rate
        row["constant"] = int(found.never_moved.sum())
        problems = list(found.problems)
        judged = found.moving
        fixed = post[name].attrs.get("fixed")
        if found.never_moved.all() and fixed:     # the model fixes it (e.g. every feature relevant): nothing to judge
            return row | {"status": "certain", "verdict": f"certain: fixed by the model ({fixed})", "advice": ""}
        if found.never_moved.all():
            status, verdict = _never_moved_verdict(site, floats, stats, chains, draws)
            return row | {"status": status, "verdict": verdict,
                          "advice": "" if status == "certain" else _mcmc_advice(site, "discrete", [verdict],
                                                                               exchangeable)}
    else:
        judged = ~np.all(floats.reshape(chains * draws, -1) == floats.reshape(chains * draws, -1)[:1], axis=0)
        row["constant"] = int((~judged).sum())
        problems = []
    if judged.any():
        r_hat, ess_bulk, ess_tail, mcse = _ess_rhat(values.astype(np.float64), name)
        sd = floats.reshape(chains * draws, -1).std(axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = mcse / sd
        row.update(r_hat=float(np.nanmax(r_hat[judged])) if np.isfinite(r_hat[judged]).any() else np.nan,
                   ess_bulk=float(np.nanmin(ess_bulk[judged])), ess_tail=float(np.nanmin(ess_tail[judged])),
                   **{"mcse/sd": float(np.nanmax(ratio[judged]))})
        if problems:     # stuck chains say it in words; a huge r-hat of the same chains would say nothing more
            problems += [p for p in _mcmc_problems(row, chains, need, n_divergent) if not p.startswith("r-hat")]
        else:
            problems = _mcmc_problems(row, chains, need, n_divergent)
    elif not discrete:
        return row | {"status": "certain", "verdict": f"constant: the same value in every draw of {chains} chain(s)",
                      "advice": ""}
    if problems:
        needed = draws_for_ess(need, min(row["ess_bulk"], row["ess_tail"]), draws)
        return row | {"status": "fail", "verdict": "; ".join(problems),
                      "advice": _mcmc_advice(site, row["kind"], problems, exchangeable, needed)}
    notes = []
    if chains == 1:
        notes.append("one chain: r-hat not checked")
    if row["constant"]:
        notes.append(f"{row['constant']} of {row['elements']} element(s) never moved in any chain: certain "
                     f"(the sampler moves the others)")
    return row | {"status": "ok", "verdict": "ok" + (f" ({'; '.join(notes)})" if notes else ""), "advice": ""}


def _variational_row(idata, site: str, objective_problem: str, objective_note: str, at_best: list[int],
                     exchangeable: bool) -> dict:
    post = idata.posterior
    name = _site_name(post, site)
    values = np.asarray(post[name], dtype=np.float64)
    chains, draws = values.shape[:2]
    raw = np.asarray(post[site]).reshape(chains, draws, -1)
    point = bool(np.all(raw == raw[:, :1]))
    row = {"site": site, "kind": "point estimate" if point else "draws of q",
           "elements": int(np.prod(values.shape[2:], dtype=int)), "r_hat_restarts": np.nan, "ess_bulk": np.nan,
           "restarts": chains, "restarts_at_best": len(at_best)}
    advice = []
    if objective_problem:
        advice.append("more iterations (num_steps / max_iter / passes) or a larger learning rate")
    disagree = ""
    group = at_best if len(at_best) > 1 else []
    if point and len(group) > 1:
        bad, low, high = _values_disagree(values, group, exchangeable)
        if bad:
            disagree = (f"restarts disagree: {len(group)} restarts at the best optimum give {site} from {low:.4g} "
                        f"to {high:.4g}")
    elif not point and chains > 1:
        use = group if group else list(range(chains))
        r_hat, ess_bulk, _, _ = _ess_rhat(values[use] if len(use) > 1 else values, name)
        row["r_hat_restarts"] = float(np.nanmax(r_hat)) if np.isfinite(r_hat).any() else np.nan
        row["ess_bulk"] = float(np.nanmin(ess_bulk)) if np.isfinite(ess_bulk).any() else np.nan
        if len(use) > 1 and group:
            # beyond their spread: two restarts' means of an element further apart than q's sd in either
            flat = values[use].reshape(len(use), draws, -1)
            means, sds = flat.mean(axis=1), flat.std(axis=1)
            gap, spread = means.max(0) - means.min(0), sds.max(0)
            worst = int(np.argmax(gap / np.maximum(spread, 1e-300)))
            if gap[worst] > spread[worst]:
                disagree = (f"restarts disagree (variational): the {len(use)} restarts at the best optimum put the "
                            f"mean of {_element_names(site, values.shape[2:])[worst]} {gap[worst]:.3g} apart, beyond "
                            f"q's sd {spread[worst]:.3g} (r-hat between them {row['r_hat_restarts']:.3f}): "
                            f"different optima of equal ELBO")
    if disagree:
        advice.append("the optimum is not unique: more restarts (num_chains), or a posterior method (MCMC)")
    if point:
        head = ("point estimate of the method (not random under q)"
                + (": see fit.summary() for the restarts' spread" if chains > 1 else ""))
    else:
        agree = "restarts agree" if chains > 1 else "one restart"
        head = f"ok ({agree}; variational: independent draws of q, q's fit to the posterior not checked)"
    problems = [p for p in (objective_problem, disagree) if p]
    verdict = "; ".join(([head] if point else []) + problems) if problems else head
    if objective_note:
        verdict += f" [{objective_note}]"
    status = "fail" if problems else ("point estimate" if point else "ok")
    return row | {"status": status, "verdict": verdict, "advice": "; ".join(advice)}


def _point_row(idata, site: str, objective_problem: str, objective_note: str, at_best: list[int],
               exchangeable: bool, best: int | None) -> dict:
    values = np.asarray(idata.posterior[site], dtype=np.float64)
    chains = values.shape[0]
    flat = values.reshape(chains, -1)
    row = {"site": site, "kind": "point estimate", "elements": flat.shape[1], "restarts": chains,
           "restarts_at_best": len(at_best),
           "best": float(flat[best, 0]) if best is not None else np.nan,
           "min": float(flat.min(0)[0]) if flat.shape[1] == 1 else float(flat.min()),
           "max": float(flat.max(0)[0]) if flat.shape[1] == 1 else float(flat.max())}
    problems, advice = [], []
    if objective_problem:
        problems.append(objective_problem)
        advice.append("more iterations (num_steps / max_iter) or a larger learning rate; more restarts")
    if len(at_best) > 1:
        bad, low, high = _values_disagree(values, at_best, exchangeable)
        if bad:
            problems.append(f"restarts disagree: {len(at_best)} restarts within {OPTIMA_TOL:g} nat of the best "
                            f"objective give {site} from {low:.4g} to {high:.4g} (the optimum is not unique)")
            advice.append("more restarts (num_chains), or a posterior method (MCMC) to see the spread")
    if problems:
        verdict, status = "; ".join(problems), "fail"
    else:
        verdict = (f"ok (converged by the objective; {len(at_best)} of {chains} restart(s) at the best optimum)"
                   if at_best else "ok (no objective trace to judge)")
        status = "ok"
    if objective_note:
        verdict += f" [{objective_note}]"
    return row | {"status": status, "verdict": verdict, "advice": "; ".join(advice)}


def diagnose(idata, sites: Sequence[str], inference: str = "mcmc", exchangeable: Iterable[str] = ()):
    """One row per site, indexed by site: its kind, the numbers that judge it and ``status`` / ``verdict`` /
    ``advice`` (module docstring). ``inference``: "mcmc", "variational" or "point estimate" (what the posterior
    holds); ``exchangeable``: the sites declared exchangeable (advice on label switching, restarts compared as
    sets). MCMC columns: r_hat, ess_bulk, ess_tail, mcse/sd (worst element), switch_rate (discrete sites),
    acceptance (the site's moves, else the run's), divergences; variational: r_hat_restarts, ess_bulk;
    point estimates: best, min, max; restarts and restarts_at_best for both."""
    import pandas as pd

    exchangeable = set(exchangeable)
    stats = _stats(idata)
    rows = []
    if inference in ("variational", "point estimate"):
        checks = objective_checks(idata) or []
        problem, note, at_best = _objective_summary(checks) if checks else ("", "", [])
        best = None
        if checks:
            finals = np.array([c.final for c in checks])
            best = int(np.nanargmax(finals)) if np.isfinite(finals).any() else None
        for site in sites:
            if inference == "variational":
                rows.append(_variational_row(idata, site, problem, note, at_best, site in exchangeable))
            else:
                rows.append(_point_row(idata, site, problem, note, at_best, site in exchangeable, best))
    else:
        n_divergent = _divergences(stats)
        run_acceptance = _run_acceptance(stats)
        rows = [_mcmc_row(idata, site, stats, n_divergent, run_acceptance, site in exchangeable) for site in sites]
    table = pd.DataFrame(rows).set_index("site")
    table.attrs["inference"] = inference
    return table


def failing_sites(table) -> list[str]:
    """The sites of a ``diagnose`` table that fail (status "fail"; certain sites and point estimates of a
    variational method do not)."""
    if "status" in table:
        return [site for site, status in table["status"].items() if status == "fail"]
    return [site for site, verdict in table["verdict"].items()
            if not (verdict.startswith("ok") or verdict.startswith("point estimate"))]


def advice(table) -> str:
    """One paragraph: which sites fail, why, and what to change for each."""
    failing = failing_sites(table)
    if not failing:
        return ""
    details = []
    for site in failing:
        what = table.loc[site, "verdict"]
        todo = table.loc[site, "advice"] if "advice" in table else ""
        details.append(f"{site}: {what}" + (f" -> {todo}" if todo else ""))
    kind = table.attrs.get("inference", "mcmc")
    rule = (f"Vehtari et al. (2021)'s checks (r-hat < {RHAT_MAX}, bulk and tail ESS >= {ESS_PER_CHAIN_MIN} per "
            f"chain) and the discrete-site checks" if kind == "mcmc" else
            "the objective-trace and restart checks")
    return f"convergence ({kind}): {len(failing)} site(s) fail {rule}: {'; '.join(details)}. See fit.diagnose()."


# ------------------------------------------------------------------------------------------------ run until converged

#: ``num_samples="auto"``: the bulk and tail ESS every headline site must reach (Vehtari et al. 2021's 400 for
#: four chains), and the default time budget of its sampling, in seconds
TARGET_ESS = 400
TIME_BUDGET = 300.0


def short_of(draws: dict, target_ess: float = TARGET_ESS) -> dict[str, str]:
    """The sites of ``draws`` (site -> (chain, draw, ...) array) that do not yet pass: r-hat >= RHAT_MAX (with two
    or more chains), or bulk or tail ESS below ``target_ess`` on their worst varying element; site -> why. Discrete
    chains stuck apart fail by their r-hat (infinite), a site that never moved passes (nothing more to learn by
    running on: ``fit.diagnose()`` then judges it with the sampler's evidence)."""
    out = {}
    for site, values in draws.items():
        values = np.asarray(values, dtype=np.float64)
        chains, n = values.shape[:2]
        if n < 4:
            out[site] = f"{n} draws"
            continue
        flat = values.reshape(chains * n, -1)
        varying = ~np.all(flat == flat[:1], axis=0)
        if not varying.any():
            continue
        r_hat, bulk, tail, _ = _ess_rhat(values, site)
        r_hat, bulk, tail = r_hat[varying], bulk[varying], tail[varying]
        problems = []
        if chains > 1 and not np.all(r_hat < RHAT_MAX):
            problems.append(f"r-hat {np.nanmax(r_hat) if np.isfinite(r_hat).any() else np.inf:.3f}")
        worst = float(np.nanmin(np.minimum(bulk, tail))) if np.isfinite(np.minimum(bulk, tail)).any() else 0.0
        if worst < target_ess:
            problems.append(f"ESS {worst:.0f} < {target_ess:g}")
        if problems:
            out[site] = ", ".join(problems)
    return out


class AutoSettings(NamedTuple):
    """``num_samples="auto"``: the ESS every headline site must reach, the sampling time budget (seconds), the most
    draws per chain, and how many draws per chain between checks."""
    target_ess: float
    time_budget: float
    max_draws: int
    check_every: int


def auto_settings(num_samples, target_ess=None, time_budget=None, max_draws: int = 1_000_000,
                  check_every: int = 250) -> AutoSettings | None:
    """The AutoSettings of ``num_samples="auto"`` (``target_ess`` default ``TARGET_ESS``, ``time_budget``
    default ``TIME_BUDGET`` seconds), or None for a number of samples; ValueError naming a bad field, or
    ``target_ess`` / ``time_budget`` given without "auto"."""
    if not (isinstance(num_samples, str) and num_samples == "auto"):
        for name, value in (("target_ess", target_ess), ("time_budget", time_budget)):
            if value is not None:
                raise ValueError(f"{name}: only with num_samples='auto' (got num_samples={num_samples!r})")
        return None
    for name, value in (("target_ess", target_ess), ("time_budget", time_budget)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float, np.integer,
                                                                                     np.floating))
                                  or not np.isfinite(value) or value <= 0):
            raise ValueError(f"{name}: expected a positive number, got {value!r}")
    return AutoSettings(float(target_ess or TARGET_ESS), float(time_budget or TIME_BUDGET), int(max_draws),
                        int(check_every))


class AutoReport(NamedTuple):
    """What a ``num_samples="auto"`` run did: reached the target or not, sampling sweeps per chain, seconds of
    sampling (after warm-up, which holds the compilation), and a sentence (``text``)."""
    reached: bool
    sweeps: int
    seconds: float
    text: str


def auto_report(run, short: dict, auto: AutoSettings) -> AutoReport:
    """The AutoReport of a ``num_samples="auto"`` run (``run``: ``zoo.inference.driver.AutoResult``); when it
    stopped short, the sentence is also issued as a ConvergenceWarning naming the sites."""
    draws = run.sampling_sweeps
    if run.converged and not short:
        return AutoReport(True, draws, run.seconds,
                          f"num_samples='auto': every headline site reached ESS {auto.target_ess:g} (r-hat < "
                          f"{RHAT_MAX}) after {draws} sweeps per chain ({run.seconds:.1f} s of sampling)")
    why = {"time budget": f"the time budget ({auto.time_budget:g} s)",
           "max sweeps": f"the most sweeps ({auto.max_draws})"}.get(run.stopped_by, run.stopped_by)
    text = (f"num_samples='auto': stopped at {why} after {draws} sweeps per chain ({run.seconds:.1f} s of "
            f"sampling); sites short of ESS {auto.target_ess:g}: "
            + "; ".join(f"{site} ({why_short})" for site, why_short in short.items()))
    warnings.warn(ConvergenceWarning(text, list(short)), stacklevel=4)
    return AutoReport(False, draws, run.seconds, text)
