"""Every fit's outputs checked for NaN and infinity (issue 17.8), in one place: ``zoo.core.registry`` calls
``check_finite`` after each runner returns, before the fit reaches the user.

Input is validated before any computation (finite data, priors inside their support, options in range), so a
non-finite result means that a valid but extreme input overflowed, or that a method failed numerically. The error
names the likely cause, judged in this order:

1. the data: a float array whose largest magnitude exceeds ``EXTREME`` (1e150: its square, which every Gaussian
   term computes, overflows float64's 1.8e308) or whose smallest non-zero magnitude is below ``1 / EXTREME``;
2. a prior: a parameter beyond the same bounds (the site is named);
3. an option: a numeric option beyond the same bounds, or a ``learning_rate`` above 1 (gradient steps diverge);
4. otherwise the method itself: a numerical failure to report, with the seed and the data's fingerprint.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

__all__ = ["NonFiniteResultError", "EXTREME", "non_finite_sites", "likely_cause", "check_finite"]

#: Magnitudes beyond which float64 arithmetic on a value is likely to overflow (its square exceeds 1.8e308) or,
#: for 1 / EXTREME, to underflow.
EXTREME = 1e150


class NonFiniteResultError(FloatingPointError, ValueError):
    """A fit produced NaN or infinite values although its input passed validation; the message names the sites
    and the likely cause. (A ValueError too, since the usual cause is an input at the edge of float64.)"""


def non_finite_sites(idata) -> list[str]:
    """Names (``group/variable``) of the fit's float variables holding NaN or infinity: every posterior variable,
    the log likelihood (NaN only: -inf is a legitimate zero probability), and an objective trace with no finite
    value at all (traces are NaN-padded after convergence by design)."""
    bad = []
    for group, allow_neg_inf in (("posterior", False), ("log_likelihood", True),
                                 ("log_likelihood_at_estimate", True)):
        if group not in idata.groups():
            continue
        for name, var in getattr(idata, group).data_vars.items():
            values = np.asarray(var.values)
            if values.dtype.kind not in "fc":
                continue
            broken = np.isnan(values) | (np.isposinf(values) if allow_neg_inf else np.isinf(values))
            if broken.any():
                bad.append(f"{group}/{name}")
    stats = idata.get("sample_stats")
    if stats is not None and "objective" in stats:
        trace = np.asarray(stats["objective"].values, dtype=np.float64)
        per_chain = trace.reshape(trace.shape[0], -1)
        if not np.isfinite(per_chain).any(axis=1).all():
            bad.append("sample_stats/objective")
    return bad


def _extreme(values: np.ndarray) -> str | None:
    """A description of an extreme magnitude in a float array, or None."""
    values = np.asarray(values)
    if values.dtype.kind not in "fc" or values.size == 0:
        return None
    magnitude = np.abs(values[np.isfinite(values)])
    if magnitude.size == 0:
        return None
    largest = float(magnitude.max())
    if largest > EXTREME:
        return f"values up to {largest:.3g}"
    nonzero = magnitude[magnitude > 0]
    if nonzero.size and float(nonzero.min()) < 1.0 / EXTREME:
        return f"non-zero values as small as {float(nonzero.min()):.3g}"
    return None


def likely_cause(data: Any, priors: Mapping[str, Any], options: Mapping[str, Any], method: str) -> str:
    """One sentence naming the likely cause of a non-finite result (see the module docstring for the order)."""
    from zoo.core.provenance import data_arrays

    for name, arr in data_arrays(data):
        found = _extreme(arr)
        if found is not None:
            field = f"the data's {name!r}" if name else "the data"
            return (f"{field} has {found}, beyond what float64 arithmetic survives (squares overflow above "
                    f"{EXTREME:.0e}); rescale it (e.g. standardize each feature) and fit again")
    for site, prior in priors.items():
        for param in sorted(getattr(prior, "arg_constraints", {})):
            found = _extreme(np.asarray(getattr(prior, param, np.nan), dtype=np.float64))
            if found is not None:
                return (f"the prior of {site!r} has {param} with {found}; such a prior overflows the updates "
                        f"that use it: choose a prior on the data's scale")
    for key, value in options.items():
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            continue
        if key == "learning_rate" and float(value) > 1.0:
            return f"option learning_rate={value} is large enough for the gradient steps to diverge; lower it"
        found = _extreme(np.asarray(float(value)))
        if found is not None:
            return f"option {key}={value} has {found}; choose a value on the data's scale"
    return (f"the input is not extreme (data, priors and options within float64's safe range), so this is a "
            f"numerical failure of method {method!r}: please report it with the seed and zoo_data_sha256")


def check_finite(fit, spec, data: Any, options: Mapping[str, Any]) -> None:
    """Raise ``NonFiniteResultError`` when ``fit`` holds NaN or infinity (``non_finite_sites``), naming the sites
    and the likely cause (``likely_cause``)."""
    bad = non_finite_sites(fit.idata)
    if not bad:
        return
    model = spec.id if spec is not None and spec.id else "<user program>"
    priors = spec.priors if spec is not None else {}
    cause = likely_cause(data, priors, options, fit.method)
    raise NonFiniteResultError(f"fit: {model} with method {fit.method!r} returned non-finite values in "
                               f"{', '.join(bad)}; likely cause: {cause}")
