"""Every fit's outputs checked for NaN and infinity (issue 17.8), in one place: ``zoo.core.registry`` calls
``check_finite`` after each runner returns, before the fit reaches the user.

Input is validated before any computation (finite data, priors inside their support, options in range), so a
non-finite result means that a valid but extreme input overflowed, or that a method failed numerically. The error
names the likely cause, judged in this order (issue 34: the cause is never left empty):

1. the data's rank: a constant feature, or exactly linearly dependent features (the smallest eigenvalue of the
   features' correlation matrix below ``DEPENDENT``: histogram bins or shares that sum to one), named;
2. the data's scales: a float array whose largest magnitude exceeds ``EXTREME`` (1e150: its square, which every
   Gaussian term computes, overflows float64's 1.8e308) or whose smallest non-zero magnitude is below
   ``1 / EXTREME``, or features whose standard deviations differ by more than ``SCALE_SPAN`` (1e6);
3. the data's tails: a feature with a value more than ``HEAVY_TAIL`` (30) standard deviations from its mean;
4. a prior: a parameter beyond the ``EXTREME`` bounds (the site is named);
5. an option: a numeric option beyond the same bounds, or a ``learning_rate`` above 1 (gradient steps diverge);
6. otherwise the method itself: a numerical failure to report, with the seed and the data's fingerprint.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

__all__ = ["NonFiniteResultError", "EXTREME", "DEPENDENT", "SCALE_SPAN", "HEAVY_TAIL", "non_finite_sites",
           "feature_problem", "likely_cause", "check_finite"]

#: Magnitudes beyond which float64 arithmetic on a value is likely to overflow (its square exceeds 1.8e308) or,
#: for 1 / EXTREME, to underflow.
EXTREME = 1e150
#: The smallest eigenvalue of a correlation matrix below which features count as exactly linearly dependent
#: (rounding leaves ~1e-16 for an exact dependence; real near-dependence seldom goes below 1e-8).
DEPENDENT = 1e-10
#: The ratio of the largest to the smallest feature standard deviation beyond which the scales count as mixed.
SCALE_SPAN = 1e6
#: The distance from the mean, in standard deviations, beyond which a feature counts as heavy-tailed (a Gaussian
#: sample of a billion rows stays within 7; Student-t with 2 degrees of freedom on 2,000 rows reaches ~30).
HEAVY_TAIL = 30.0


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


def _listed(indices) -> str:
    indices = [int(k) for k in indices]
    return ", ".join(map(str, indices[:8])) + (" ..." if len(indices) > 8 else "")


def _feature_matrix(arr) -> np.ndarray | None:
    """arr as an (N, D) float64 feature matrix when it is one (2-D float, finite, at least 3 rows), else None."""
    arr = np.asarray(arr)
    if arr.ndim != 2 or arr.dtype.kind != "f" or arr.shape[0] < 3 or not np.all(np.isfinite(arr)):
        return None
    return arr.astype(np.float64)


def feature_problem(X: np.ndarray, check: str) -> str | None:
    """What is wrong with the features X (N, D) for ``check`` ("rank", "scales" or "tails"); None: nothing."""
    # on each column's own scale first: the squares of features of magnitude 1e-170 underflow to 0
    size = np.max(np.abs(X), axis=0)
    size = np.where(size > 0, size, 1.0)
    mean, std = X.mean(axis=0), (X / size).std(axis=0) * size
    constant = np.nonzero(~(std > 1e-12 * np.abs(mean)) | (std == 0))[0]
    if check == "rank":
        if constant.size:
            return (f"has constant feature(s) {_listed(constant)}: drop them (a constant feature has no variance to "
                    f"scale by and makes every covariance estimated from the data singular)")
        if X.shape[1] < 2:
            return None
        corr = np.corrcoef(X / size, rowvar=False)
        if not np.all(np.isfinite(corr)):
            return None
        values, vectors = np.linalg.eigh(0.5 * (corr + corr.T))
        if values[0] < DEPENDENT:
            involved = np.nonzero(np.abs(vectors[:, 0]) > 1e-3)[0]
            return (f"has linearly dependent features {_listed(involved)} (smallest eigenvalue of their correlation "
                    f"matrix {values[0]:.2g}; e.g. histogram bins or shares that sum to one): drop one feature of "
                    f"each dependent group, or use a diagonal covariance")
        return None
    if check == "scales":
        found = _extreme(X)
        if found is not None:
            return (f"has {found}, beyond what float64 arithmetic survives (squares overflow above {EXTREME:.0e}); "
                    f"rescale it (e.g. standardize each feature) and fit again")
        varying = np.nonzero(std > 0)[0]
        if varying.size >= 2:
            low, high = varying[np.argmin(std[varying])], varying[np.argmax(std[varying])]
            if std[high] / std[low] > SCALE_SPAN:
                return (f"has feature standard deviations from {std[low]:.2g} (feature {int(low)}) to "
                        f"{std[high]:.2g} (feature {int(high)}): standardize the features (the option "
                        f"standardize=True where the model has it) and fit again")
        return None
    if check == "tails":
        worst = (np.abs(X - mean) / np.where(std > 0, std, 1.0)).max(axis=0)
        heavy = np.nonzero(worst > HEAVY_TAIL)[0]
        if heavy.size:
            return (f"has heavy-tailed feature(s) {_listed(heavy)} (values up to {worst.max():.3g} standard "
                    f"deviations from the mean): transform them (e.g. a log or rank transform) or clip the extremes")
        return None
    raise ValueError(f"check: {check!r} is not 'rank', 'scales' or 'tails'")


def likely_cause(data: Any, priors: Mapping[str, Any], options: Mapping[str, Any], method: str) -> str:
    """One sentence naming the likely cause of a non-finite result (see the module docstring for the order)."""
    from zoo.core.provenance import data_arrays

    arrays = data_arrays(data)
    for check in ("rank", "scales", "tails"):
        for name, arr in arrays:
            field = f"the data's {name!r}" if name else "the data"
            features = _feature_matrix(arr)
            found = feature_problem(features, check) if features is not None else None
            if found is None and check == "scales" and features is None:
                extreme = _extreme(arr)
                if extreme is not None:
                    found = (f"has {extreme}, beyond what float64 arithmetic survives (squares overflow above "
                             f"{EXTREME:.0e}); rescale it (e.g. standardize each feature) and fit again")
            if found is not None:
                return f"{field} {found}"
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
