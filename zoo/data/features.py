"""What the zoo does with real features before a model sees them (issue 34): constant features refused, feature
scales standardized, exactly dependent features kept but a covariance prior centred on them made positive definite.

Real region features are rarely one well-conditioned Gaussian cloud: colour and texture histograms and shares of
an area sum to one (the features are linearly dependent, their sample covariance singular), bounded ratios and
counts are heavy-tailed, and raw features span many orders of magnitude (standard deviations 3.5e-4 to 3.5e3 on
one real set). These helpers are pure NumPy on the host, used by the paper modules when they turn data into arrays.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["FeatureScaling", "constant_features", "check_no_constant_features", "fit_scaling", "apply_scaling",
           "identity_scaling", "smallest_correlation_eigenvalue", "positive_definite_centre",
           "MIN_CORRELATION_EIGENVALUE"]

#: Smallest eigenvalue allowed for the correlation matrix of a covariance prior's centre (e.g. Sigma* of
#: Carbonetto et al.'s IW prior, Omega of Gustafson et al.'s NIW). With exactly dependent features the sample
#: correlation has an eigenvalue 0 (2e-16 in floating point); the centre is then shrunk towards its diagonal just
#: enough to lift that eigenvalue to this floor. 1e-6 keeps every MAP covariance (scatter + alpha Sigma*) / (n + ...)
#: with n up to 1e6 points at a condition number below 1e12 in correlation units, where float64 Cholesky is exact to
#: ~1e-4; data whose correlation is already better conditioned are left as they are.
MIN_CORRELATION_EIGENVALUE = 1e-6


class FeatureScaling(NamedTuple):
    """Per-feature centre and scale learned on training data: z = (x - mean) / scale, mean and scale (D,)."""
    mean: np.ndarray
    scale: np.ndarray


def constant_features(X: np.ndarray) -> np.ndarray:
    """Indices of the columns of X (N, D) whose standard deviation is 0 relative to their magnitude (below 1e-12
    times |mean|: nothing but rounding varies)."""
    X = np.asarray(X, dtype=np.float64)
    # on each column's own scale first: the squares of features of magnitude 1e-170 underflow to 0
    size = np.max(np.abs(X), axis=0)
    size = np.where(size > 0, size, 1.0)
    mean, std = X.mean(axis=0), (X / size).std(axis=0) * size
    return np.nonzero(~(std > 1e-12 * np.abs(mean)) | (std == 0))[0]


def check_no_constant_features(X: np.ndarray, model: str, name: str = "X") -> None:
    """ValueError naming every constant feature of X and the fix, before any computation: a constant feature has
    no variance to standardize by and makes a covariance estimated from the data singular."""
    const = constant_features(X)
    if const.size:
        listed = ", ".join(str(int(k)) for k in const[:10]) + (" ..." if const.size > 10 else "")
        raise ValueError(f"{name}: feature{'s' if const.size > 1 else ''} {listed} "
                         f"{'are' if const.size > 1 else 'is'} constant (standard deviation 0 over {X.shape[0]} "
                         f"rows), so {model} cannot scale {'them' if const.size > 1 else 'it'} or estimate "
                         f"a covariance with {'them' if const.size > 1 else 'it'}; drop "
                         f"{'these columns' if const.size > 1 else 'this column'} (it carries no information) "
                         f"and fit again")


def fit_scaling(X: np.ndarray) -> FeatureScaling:
    """Mean and standard deviation of each column of training data X (N, D); call ``check_no_constant_features``
    first (a constant column would get scale 0)."""
    X = np.asarray(X, dtype=np.float64)
    return FeatureScaling(mean=X.mean(axis=0), scale=X.std(axis=0))


def identity_scaling(n_features: int) -> FeatureScaling:
    """The scaling that changes nothing (standardization switched off)."""
    return FeatureScaling(mean=np.zeros(n_features), scale=np.ones(n_features))


def apply_scaling(X: np.ndarray, scaling: FeatureScaling | None) -> np.ndarray:
    """(X - mean) / scale for X (N, D); None: X unchanged."""
    if scaling is None:
        return X
    mean, scale = np.asarray(scaling.mean), np.asarray(scaling.scale)
    if X.shape[1] != mean.shape[0]:
        raise ValueError(f"X: {X.shape[1]} features, but the fit was made on {mean.shape[0]}")
    return (X - mean) / scale


def _correlation(cov: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    sd = np.sqrt(np.diagonal(cov))
    corr = cov / np.outer(sd, sd)
    return 0.5 * (corr + corr.T), sd


def smallest_correlation_eigenvalue(cov: np.ndarray) -> float:
    """The smallest eigenvalue of the correlation matrix of a covariance (D, D) with a positive diagonal: 0 for
    exactly linearly dependent features (2e-16 in floating point), 1 for uncorrelated ones."""
    corr, _ = _correlation(np.asarray(cov, dtype=np.float64))
    return float(np.linalg.eigvalsh(corr)[0])


def positive_definite_centre(cov: np.ndarray, floor: float = MIN_CORRELATION_EIGENVALUE) -> np.ndarray:
    """A covariance (D, D) with a positive diagonal made safely positive definite for use as a prior's centre:
    unchanged when its correlation matrix R has eigenvalues >= ``floor``; else R is shrunk towards the identity,
    (1 - e) R + e I with e = (floor - lambda_min) / (1 - lambda_min), the smallest shrinkage that lifts lambda_min to
    ``floor``; the variances are kept. Why on the correlation scale: the result does not depend on the features'
    units, so a feature in 1e-4 and one in 1e4 are treated alike."""
    cov = np.asarray(cov, dtype=np.float64)
    corr, sd = _correlation(cov)
    lam = float(np.linalg.eigvalsh(corr)[0])
    if lam >= floor:
        return cov
    shrink = (floor - lam) / (1.0 - lam)
    corr = (1.0 - shrink) * corr + shrink * np.eye(cov.shape[0])
    return corr * np.outer(sd, sd)
