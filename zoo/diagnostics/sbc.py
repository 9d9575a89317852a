"""Simulation-based calibration (Talts, Betancourt, Simpson, Vehtari & Gelman 2018) with the graphical and numerical
uniformity test of Säilynoja, Bürkner & Vehtari (2022).

Protocol: for s = 1..S draw theta_s from the prior and data_s from the program given theta_s, fit the posterior to
data_s, keep L (thinned, roughly independent) posterior draws, and for each headline quantity f compute the rank
r_s = #{l : f(theta_l) < f(theta_s)} in 0..L. A calibrated sampler gives ranks uniform on {0..L}. Discrete
quantities tie; the ties are broken at random (r_s = #{<} + U, U uniform on 0..#{=}), which keeps the ranks uniform
under calibration (Talts et al. 2018, Sec. 4.1). EM and variational fits run through the same protocol report the
calibration of an approximation: a point estimate or an under-dispersed posterior piles ranks at 0 and L.

Uniformity: ``ecdf_test`` gives the Säilynoja et al. statistic gamma = min over the evaluation points z_i of
2 min(Binom(N F_hat(z_i); N, z_i) cdf, 1 - cdf below it) and its p-value under uniform ranks by simulation;
``chi2_test`` the classic binned chi-square. ``plot_ecdf_difference`` draws F_hat(z) - z with the simultaneous
1 - alpha band of the same simulation.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Mapping

import numpy as np

__all__ = ["ranks", "ecdf_test", "chi2_test", "SBCResult", "run_sbc", "plot_ecdf_difference", "sbc_table"]


def ranks(truth: np.ndarray, draws: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Ranks with randomized tie-breaking. truth (S,), draws (S, L) -> (S,) ints in 0..L."""
    truth, draws = np.asarray(truth, float), np.asarray(draws, float)
    if truth.ndim != 1 or draws.ndim != 2 or draws.shape[0] != truth.shape[0]:
        raise ValueError(f"truth/draws: expected (S,) and (S, L), got {truth.shape} and {draws.shape}")
    if not (np.all(np.isfinite(truth)) and np.all(np.isfinite(draws))):
        raise ValueError("truth/draws: non-finite values")
    less = (draws < truth[:, None]).sum(1)
    equal = (draws == truth[:, None]).sum(1)
    return less + rng.integers(0, equal + 1)


def _gamma_stat(u: np.ndarray, n_points: int) -> np.ndarray:
    """Säilynoja et al. (2022) eq. 7 on fractional ranks u (..., N) in (0, 1): min over z_i = i/n_points of the
    two-sided binomial tail probability of N F_hat(z_i)."""
    from scipy.stats import binom
    u = np.asarray(u)
    n = u.shape[-1]
    z = np.arange(1, n_points) / n_points
    # N F_hat(z_i) = #{u <= i / n_points} = #{floor(u n_points) < i}: one bincount per row, cumulated
    rows = u.reshape(-1, n)
    cell = np.clip(np.floor(rows * n_points).astype(np.int64), 0, n_points - 1)
    offset = np.arange(rows.shape[0])[:, None] * n_points
    hist = np.bincount((cell + offset).ravel(), minlength=rows.shape[0] * n_points).reshape(-1, n_points)
    counts = hist.cumsum(-1)[:, :-1].reshape(u.shape[:-1] + (n_points - 1,))
    tail = 2 * np.minimum(binom.cdf(counts, n, z), binom.sf(counts - 1, n, z))
    return tail.min(-1)


def _fractional(r: np.ndarray, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """Ranks 0..L -> continuous values in (0, 1), uniform when the ranks are (jittered within their cell)."""
    return (np.asarray(r) + rng.random(np.shape(r))) / (n_draws + 1)


def ecdf_test(r: np.ndarray, n_draws: int, *, n_sim: int = 2000, seed: int = 0) -> tuple[float, float]:
    """(gamma, p-value) of the ranks ``r`` (S,) in 0..n_draws; p = share of uniform samples of size S whose gamma is
    at most the observed one."""
    rng = np.random.default_rng(seed)
    r = np.asarray(r)
    if r.ndim != 1 or r.size < 2 or r.min() < 0 or r.max() > n_draws:
        raise ValueError(f"r: expected at least 2 ranks in 0..{n_draws}")
    n_points = min(r.size, 100)
    obs = float(_gamma_stat(_fractional(r, n_draws, rng), n_points))
    null = _gamma_stat(rng.random((n_sim, r.size)), n_points)
    return obs, float((np.sum(null <= obs) + 1) / (n_sim + 1))


def chi2_test(r: np.ndarray, n_draws: int, n_bins: int = 10) -> float:
    """p-value of Pearson's chi-square test of uniform ranks in ``n_bins`` equal bins of 0..n_draws (the bins
    take whole ranks; n_draws + 1 must be a multiple of n_bins for equal expected counts, else the expected counts
    are proportional to the bins' widths)."""
    from scipy.stats import chisquare
    n_bins = min(n_bins, n_draws + 1)         # no empty bins when there are fewer ranks than bins (EM restarts)
    edges = np.linspace(0, n_draws + 1, n_bins + 1).round().astype(int)
    observed = np.histogram(r, bins=edges)[0]
    expected = np.diff(edges) / (n_draws + 1) * len(r)
    return float(chisquare(observed, expected).pvalue)


@dataclasses.dataclass
class SBCResult:
    """Ranks of every quantity (name -> (S,) ints in 0..n_draws) with their tests; ``method_kind`` "mcmc" or the
    approximation's kind ("em", "vi"); ``notes``: what the reader should know (settings, failures)."""
    model_id: str
    method: str
    method_kind: str
    n_draws: int
    ranks: dict
    gamma: dict = dataclasses.field(default_factory=dict)
    p_ecdf: dict = dataclasses.field(default_factory=dict)
    p_chi2: dict = dataclasses.field(default_factory=dict)
    notes: list = dataclasses.field(default_factory=list)
    seconds: float = 0.0

    def test(self, seed: int = 0) -> "SBCResult":
        for name, r in self.ranks.items():
            self.gamma[name], self.p_ecdf[name] = ecdf_test(r, self.n_draws, seed=seed)
            self.p_chi2[name] = chi2_test(r, self.n_draws)
        return self

    def passed(self, alpha: float = 0.01) -> bool:
        """No quantity rejected at level alpha / (number of quantities) (Bonferroni over the quantities)."""
        level = alpha / max(len(self.p_ecdf), 1)
        return all(p >= level for p in self.p_ecdf.values())


def run_sbc(simulate: Callable, posterior: Callable, quantities: Callable, *, n_sims: int, seed: int = 0,
            model_id: str = "", method: str = "", method_kind: str = "mcmc") -> SBCResult:
    """SBC with user pieces: ``simulate(key, n_sims) -> (truth, data)`` (batched: every leaf has a leading sims
    axis), ``posterior(key, data) -> draws`` (every leaf (n_sims, L, ...)), ``quantities(values) -> {name: (n_sims,
    [L])}`` applied to the truth and to the draws. Returns the tested SBCResult."""
    import time

    import jax
    if not isinstance(n_sims, int) or n_sims < 2:
        raise ValueError(f"n_sims: expected an int >= 2, got {n_sims!r}")
    t0 = time.perf_counter()
    k_sim, k_post = jax.random.split(jax.random.PRNGKey(seed))
    truth, data = simulate(k_sim, n_sims)
    draws = posterior(k_post, data)
    q_true, q_draws = quantities(truth), quantities(draws)
    rng = np.random.default_rng(seed)
    n_draws = next(iter(q_draws.values())).shape[1]
    out = {name: ranks(np.asarray(q_true[name]), np.asarray(q_draws[name]), rng) for name in q_true}
    result = SBCResult(model_id, method, method_kind, n_draws, out).test(seed)
    result.seconds = time.perf_counter() - t0
    return result


def _band(n: int, n_points: int, alpha: float, n_sim: int = 2000, seed: int = 1) -> tuple:
    """(z, lower, upper) of the simultaneous 1 - alpha band of F_hat(z) - z for n uniform ranks: the binomial
    quantiles at the level gamma_alpha, the alpha quantile of gamma under uniformity (Säilynoja et al. Sec. 2.2)."""
    from scipy.stats import binom
    rng = np.random.default_rng(seed)
    level = np.quantile(_gamma_stat(rng.random((n_sim, n)), n_points), alpha)
    z = np.arange(1, n_points) / n_points
    return z, binom.ppf(level / 2, n, z) / n - z, binom.isf(level / 2, n, z) / n - z


#: smallest (width, height) in inches of ``plot_ecdf_difference``'s figure (600 x 340 px at 100 dpi)
MIN_FIGSIZE = (6.0, 3.4)


def plot_ecdf_difference(result: SBCResult, path=None, alpha: float = 0.05):
    """One panel per quantity: ECDF of the fractional ranks minus the uniform CDF, with the simultaneous 1 - alpha
    band. Saved to ``path`` when given; returns the figure."""
    import matplotlib
    if path is not None:
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    names = list(result.ranks)
    cols = min(4, len(names))
    rows = -(-len(names) // cols)
    # at least MIN_FIGSIZE: a one- or two-panel figure at 3 x 2.4 in per panel reads small beside its suptitle
    fig, axes = plt.subplots(rows, cols, figsize=(max(3 * cols, MIN_FIGSIZE[0]), max(2.4 * rows, MIN_FIGSIZE[1])),
                             squeeze=False)
    rng = np.random.default_rng(0)
    for ax, name in zip(axes.flat, names):
        r = result.ranks[name]
        n_points = min(r.size, 100)
        z, lo, hi = _band(r.size, n_points, alpha)
        u = np.sort(_fractional(r, result.n_draws, rng))
        ax.fill_between(z, lo, hi, color="0.85", step="mid")
        ax.plot(z, (u[:, None] <= z).mean(0) - z, color="C0")
        ax.axhline(0, color="0.5", lw=0.5)
        p = result.p_ecdf.get(name)
        ax.set_title(f"{name}" + (f"  p = {p:.3g}" if p is not None else ""), fontsize=8)
    for index, ax in enumerate(axes.flat):
        if index >= len(names):
            ax.axis("off")
            continue
        # the outer panels carry the axis names (every panel shares them)
        if index // cols == rows - 1 or index + cols >= len(names):
            ax.set_xlabel("fractional rank of the truth", fontsize=8)
        if index % cols == 0:
            ax.set_ylabel("ECDF - uniform CDF", fontsize=8)
    fig.suptitle(f"SBC {result.model_id} ({result.method}, {result.method_kind}): ECDF - uniform, "
                 f"{int((1 - alpha) * 100)} % simultaneous band", fontsize=9)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=90)
        plt.close(fig)
    return fig


#: the columns of ``sbc_table``'s rows (e.g. ``pandas.DataFrame(sbc_table(results), columns=SBC_TABLE_HEADER)``)
SBC_TABLE_HEADER = ("model", "method", "kind", "sims", "draws", "quantities", "worst quantity", "min p (ECDF)",
                    "min p (chi2)", "verdict (Bonferroni, alpha = 0.01)", "why")


def sbc_table(results: Mapping[str, SBCResult | str], alpha: float = 0.01) -> list[list]:
    """Rows [model id, method, kind, sims, draws, quantities, worst quantity, min p (ECDF), min p (chi2), verdict,
    why]; ``why`` = the result's notes. A string value is a model that was not run, with the reason (the key is
    then the model id; for a result the row takes ``result.model_id``, so one model may have several rows)."""
    rows = []
    for key, res in results.items():
        if isinstance(res, str):
            rows.append([key, "", "", "", "", "", "", "", "", "not run", res])
            continue
        worst = min(res.p_ecdf, key=res.p_ecdf.get)
        verdict = "pass" if res.passed(alpha) else f"FAIL ({worst})"
        if res.method_kind != "mcmc":
            verdict += " [calibration of an approximation]"
        rows.append([res.model_id or key, res.method, res.method_kind, len(res.ranks[worst]), res.n_draws,
                     len(res.ranks), worst, f"{res.p_ecdf[worst]:.3g}", f"{min(res.p_chi2.values()):.3g}", verdict,
                     "; ".join(res.notes)])
    return rows
