"""Convergence checks of posterior draws, with the thresholds of Vehtari, Gelman, Simpson, Carpenter & Bürkner
(2021, "Rank-normalization, folding, and localization: an improved R-hat"): rank-normalized split r-hat below 1.01
and bulk and tail effective sample sizes of at least 100 per chain.

``diagnose(idata, sites)`` gives one row per site (its worst element), ``diagnose_elements`` one row per element.
Elements that never change (a binary indicator that is certain, a fixed parameter) have no r-hat or ESS; they are
reported as constant, not as failures. Relabelled sites (``<site>_relabelled``, see ``zoo.core.relabel``) are
diagnosed in place of their raw draws when present.

Variational fits (``inference="variational"``: each chain a restart, its draws independent draws of that restart's
q) are diagnosed for what their draws can tell: r-hat then compares restarts (above 1.01 they found different
optima of the ELBO, the predictions use the best one), ESS is not a criterion (the draws are independent), a site
the method point-estimates (the same in every draw of a restart) is reported as such, and no verdict says that q
approximates the posterior well: that is not checked.
"""
from __future__ import annotations

import warnings
from typing import Sequence

import numpy as np

__all__ = ["RHAT_MAX", "ESS_PER_CHAIN_MIN", "ConvergenceWarning", "diagnose", "diagnose_elements", "failing_sites",
           "advice"]

RHAT_MAX = 1.01
ESS_PER_CHAIN_MIN = 100


class ConvergenceWarning(UserWarning):
    """Issued by ``zoo.fit`` after an MCMC run whose headline sites fail the checks; ``sites`` names them."""

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


def diagnose_elements(idata, sites: Sequence[str]):
    """One row per element of each site: r_hat, ess_bulk, ess_tail, mcse_mean, sd, constant (over all draws),
    within_chain_constant (the same in every draw of each chain) (pandas DataFrame)."""
    import pandas as pd

    az = _arviz()
    post = idata.posterior
    rows = []
    for site in sites:
        name = f"{site}_relabelled" if f"{site}_relabelled" in post else site
        values = np.asarray(post[name], dtype=np.float64)
        n_chain, n_draw = values.shape[:2]
        subset = az.convert_to_dataset({name: values})
        with warnings.catch_warnings(), _quiet():  # constant elements make ArviZ divide by zero: reported as such
            warnings.simplefilter("ignore", RuntimeWarning)
            r_hat = np.asarray(az.rhat(subset, method="rank")[name]).reshape(-1)
            ess_bulk = np.asarray(az.ess(subset, method="bulk")[name]).reshape(-1)
            ess_tail = np.asarray(az.ess(subset, method="tail")[name]).reshape(-1)
            mcse = np.asarray(az.mcse(subset, method="mean")[name]).reshape(-1)
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


def _sample_stat(idata, names: Sequence[str]):
    stats = idata.get("sample_stats")
    if stats is None:
        return None
    for name in names:
        if name in stats:
            return np.asarray(stats[name])
    return None


def _mcmc_verdict(row: dict, chains: int, need: int, n_divergent) -> str:
    problems = []
    if chains > 1 and row["r_hat"] >= RHAT_MAX:
        problems.append(f"r-hat {row['r_hat']:.3f} >= {RHAT_MAX}")
    if row["ess_bulk"] < need:
        problems.append(f"bulk ESS {row['ess_bulk']:.1f} < {need}")
    if row["ess_tail"] < need:
        problems.append(f"tail ESS {row['ess_tail']:.1f} < {need}")
    if n_divergent:
        problems.append(f"{n_divergent} divergent transitions")
    return "; ".join(problems) if problems else ("ok" if chains > 1 else "ok (one chain: r-hat not checked)")


def _variational_verdict(row: dict, chains: int, point_estimate: bool) -> str:
    if point_estimate:
        return ("point estimate of the method (not random under q): see fit.summary() for the restarts' spread"
                if chains > 1 else "point estimate of the method (not random under q)")
    if chains > 1 and row["r_hat"] >= RHAT_MAX:
        return (f"restarts disagree (variational): r-hat {row['r_hat']:.3f} >= {RHAT_MAX} between restarts "
                f"(different optima of the ELBO; predictions use the best restart)")
    agree = "restarts agree" if chains > 1 else "one restart"
    return f"ok ({agree}; variational: independent draws of q, q's fit to the posterior not checked)"


def diagnose(idata, sites: Sequence[str], inference: str = "mcmc"):
    """One row per site: the worst r-hat, the smallest bulk and tail ESS and the largest MCSE / sd over its
    elements, the divergences and mean acceptance of the run, and a verdict ("ok", or what failed). With
    ``inference="variational"`` the verdict reads the draws as draws of q (module docstring)."""
    import pandas as pd

    elements = diagnose_elements(idata, sites)
    divergent = _sample_stat(idata, ("diverging", "divergences"))
    accept = _sample_stat(idata, ("acceptance_rate", "accept_prob", "mean_tree_accept"))
    n_divergent = int(np.sum(divergent)) if divergent is not None else None
    rows = []
    for site, group in elements.groupby("site", sort=False):
        varying = group[~group["constant"]]
        chains = int(group["chains"].iloc[0])
        need = ESS_PER_CHAIN_MIN * chains
        row = {"site": site, "elements": len(group), "constant": int(group["constant"].sum()),
               "r_hat": varying["r_hat"].max() if len(varying) else np.nan,
               "ess_bulk": varying["ess_bulk"].min() if len(varying) else np.nan,
               "ess_tail": varying["ess_tail"].min() if len(varying) else np.nan,
               "mcse/sd": (varying["mcse_mean"] / varying["sd"]).max() if len(varying) else np.nan,
               "divergences": n_divergent,
               "acceptance": float(np.mean(accept)) if accept is not None else np.nan}
        if inference == "variational":
            point = bool(group["within_chain_constant"].all())
            if point:
                row.update({"r_hat": np.nan, "ess_bulk": np.nan, "ess_tail": np.nan, "mcse/sd": np.nan})
            row["verdict"] = _variational_verdict(row, chains, point)
        else:
            row["verdict"] = _mcmc_verdict(row, chains, need, n_divergent)
        rows.append(row)
    table = pd.DataFrame(rows).set_index("site")
    table.attrs["inference"] = inference
    if inference == "variational":
        table = table.rename(columns={"r_hat": "r_hat_restarts"})
    return table


def failing_sites(table) -> list[str]:
    """The sites of a ``diagnose`` table whose verdict is not ok (a variational point estimate is not a failure)."""
    return [site for site, verdict in table["verdict"].items()
            if not (verdict.startswith("ok") or verdict.startswith("point estimate"))]


def advice(table) -> str:
    """One paragraph: which sites fail and what to do about it."""
    failing = failing_sites(table)
    if not failing:
        return ""
    details = "; ".join(f"{site}: {table.loc[site, 'verdict']}" for site in failing)
    return (f"convergence: {len(failing)} site(s) fail Vehtari et al. (2021)'s checks (r-hat < {RHAT_MAX}, bulk and "
            f"tail ESS >= {ESS_PER_CHAIN_MIN} per chain): {details}. Run more draws (num_samples) and warm-up "
            f"(num_warmup) or more chains; for mixture-like sites look at label switching; see fit.diagnose().")
