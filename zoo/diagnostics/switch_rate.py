"""MCMC diagnostics beyond ArviZ's: the thinned switch rate (TSR) against the independence switch rate (ISR).

Gustafson, Thompson & de Freitas (2007, Sec. 7, Fig. 3-4): for a binary or categorical site, TSR is the share of
changes between successive kept draws after thinning (every 4th iteration in the paper); ISR is the rate iid
sampling from the posterior would give, ISR = 2 q (1 - q) for a binary site with q = Pr(site = 1 | data) and
ISR = sum_k q_k (1 - q_k) for a categorical one. Points far below the identity line mix slowly; TSR = 0 with
ISR > 0 cannot happen for an estimated q, while TSR = ISR = 0 is a frozen indicator.

>>> import numpy as np
>>> from zoo.diagnostics.switch_rate import plot_switch_rates, switch_rates
>>> draws = (np.random.default_rng(0).uniform(size=(2, 2000, 3)) < [0.1, 0.5, 0.9]).astype(int)  # iid, 3 sites
>>> tsr, isr = switch_rates(draws, thin=4)      # a fit's: fit.idata.posterior["M"].values (chain, draw, ...)
>>> bool(np.all(np.abs(tsr - isr) < 0.03))     # independent draws switch at the independence rate
True
>>> ax = plot_switch_rates(tsr, isr, label="M")
"""
from __future__ import annotations

import numpy as np

__all__ = ["thinned_switch_rate", "independence_switch_rate", "switch_rates", "plot_switch_rates"]


def _draws(draws, name="draws") -> np.ndarray:
    arr = np.asarray(draws)
    if arr.ndim < 2:
        raise ValueError(f"{name}: expected leading (chain, draw) axes, got shape {arr.shape}")
    if arr.shape[1] < 2:
        raise ValueError(f"{name}: need at least 2 draws per chain, got {arr.shape[1]}")
    return arr


def thinned_switch_rate(draws, thin: int = 4) -> np.ndarray:
    """Share of changes between successive draws kept after thinning by ``thin``; draws (chain, draw, ...) ->
    (...), averaged over chains."""
    if isinstance(thin, bool) or not isinstance(thin, (int, np.integer)) or thin < 1:
        raise ValueError(f"thin: expected a positive integer, got {thin!r}")
    arr = _draws(draws)[:, ::thin]
    if arr.shape[1] < 2:
        raise ValueError(f"thin: {thin} leaves fewer than 2 draws per chain")
    return (arr[:, 1:] != arr[:, :-1]).mean(axis=(0, 1))


def independence_switch_rate(probabilities, categorical_axis: bool = False) -> np.ndarray:
    """ISR under iid sampling: 2 q (1 - q) for binary probabilities q (...), or sum_k q_k (1 - q_k) over the last
    axis when ``categorical_axis`` (probabilities (..., K))."""
    q = np.asarray(probabilities, dtype=np.float64)
    if np.any(~np.isfinite(q)) or q.min(initial=0) < 0 or q.max(initial=0) > 1:
        raise ValueError("probabilities: expected values in [0, 1]")
    if categorical_axis:
        return np.sum(q * (1.0 - q), axis=-1)
    return 2.0 * q * (1.0 - q)


def switch_rates(draws, thin: int = 4, probabilities=None, n_categories: int | None = None):
    """(TSR, ISR) of a binary or categorical site from its draws (chain, draw, ...).

    Binary sites (values 0/1): q is the posterior mean of the draws. Categorical sites: pass ``probabilities``
    (..., K) (e.g. the Rao-Blackwellized Pr(Y_ij = k | data), as the paper does) or ``n_categories`` to estimate
    them from the draws' frequencies.
    """
    arr = _draws(draws)
    tsr = thinned_switch_rate(arr, thin)
    if probabilities is not None:
        q = np.asarray(probabilities, dtype=np.float64)
        if q.shape[:-1] != arr.shape[2:]:
            raise ValueError(f"probabilities: shape {q.shape} does not match draws {arr.shape[2:]} + (K,)")
        return tsr, independence_switch_rate(q, categorical_axis=True)
    if n_categories is not None:
        freq = np.stack([(arr == k).mean(axis=(0, 1)) for k in range(int(n_categories))], axis=-1)
        return tsr, independence_switch_rate(freq, categorical_axis=True)
    values = np.unique(arr)
    if not np.all(np.isin(values, (0, 1))):
        raise ValueError("draws: not binary; pass probabilities= or n_categories= for a categorical site")
    return tsr, independence_switch_rate(arr.mean(axis=(0, 1)))


def plot_switch_rates(tsr, isr, ax=None, label: str | None = None, title: str | None = None, **scatter_kwargs):
    """Scatter TSR (vertical) against ISR (horizontal) with the identity line (iid sampling); returns the axes."""
    import matplotlib.pyplot as plt
    tsr, isr = np.ravel(tsr), np.ravel(isr)
    if tsr.shape != isr.shape:
        raise ValueError(f"tsr, isr: shapes differ ({tsr.shape} vs {isr.shape})")
    if ax is None:
        _, ax = plt.subplots()
    top = max(float(np.max(isr, initial=0.0)), float(np.max(tsr, initial=0.0)), 0.05) * 1.05
    ax.plot([0, top], [0, top], color="0.5", lw=1, ls="--", label="iid sampling")
    ax.scatter(isr, tsr, s=scatter_kwargs.pop("s", 12), label=label, **scatter_kwargs)
    ax.set_xlabel("independence switch rate (ISR)")
    ax.set_ylabel("thinned switch rate (TSR)")
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    if title:
        ax.set_title(title)
    if label:
        ax.legend(loc="upper left", frameon=False)
    return ax
