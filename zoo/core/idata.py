"""One adapter from every method's output to ``arviz.InferenceData``: the groups the zoo writes and the ArviZ
quirks it hides.

Conventions: every array in ``posterior``, ``sample_stats`` and ``log_likelihood`` has leading axes
(chain, draw). Optimizers (MAP-EM, variational EM) store one "draw" per chain, several chains being several
restarts, so ``az.summary`` shows the spread between restarts; their objective trace goes to ``sample_stats``
as ``objective`` with shape (chain, 1, iteration).
"""
from __future__ import annotations

import contextlib
import logging
import warnings
from typing import Any, Mapping, Sequence

import numpy as np

with warnings.catch_warnings():
    # ArviZ 0.23 announces its 1.x refactor on import; zoo pins arviz<1, so the notice is not the user's to act on
    # (silenced for zoo's own import only: a user's later ``import arviz`` finds the module loaded)
    warnings.filterwarnings("ignore", message="\\s*ArviZ is undergoing a major refactor", category=FutureWarning)
    import arviz as az

__all__ = ["az", "to_inference_data", "POINT_LOG_LIKELIHOOD", "set_aside_point_log_likelihood",
           "VARIATIONAL_PARAMETERS", "add_variational_parameters", "final_objectives", "without_shape_log"]

#: Where a point-estimate fit keeps its pointwise log likelihood (at each restart's estimate): not in
#: ``log_likelihood``, so that ``az.loo`` and ``az.compare`` refuse it instead of treating restarts as draws.
POINT_LOG_LIKELIHOOD = "log_likelihood_at_estimate"

#: Where a variational fit keeps the parameters of its fitted q per restart (chain, ...): q's draws are in
#: ``posterior``; these are what the draws were drawn from.
VARIATIONAL_PARAMETERS = "variational_parameters"

_ARVIZ_1 = int(az.__version__.split(".")[0]) >= 1


def _as_numpy(group: Mapping[str, Any] | None, name: str) -> dict[str, np.ndarray] | None:
    if group is None:
        return None
    out = {}
    for key, value in group.items():
        arr = np.asarray(value)
        if name != "observed_data" and arr.ndim < 2:
            raise ValueError(f"{name}[{key!r}]: expected leading (chain, draw) axes, got shape {arr.shape}")
        out[key] = arr
    return out


def to_inference_data(posterior: Mapping[str, Any], *, sample_stats: Mapping[str, Any] | None = None,
                      log_likelihood: Mapping[str, Any] | None = None,
                      observed_data: Mapping[str, Any] | None = None,
                      dims: Mapping[str, Sequence[str]] | None = None,
                      coords: Mapping[str, Sequence] | None = None,
                      attrs: Mapping[str, Any] | None = None) -> az.InferenceData:
    """Build InferenceData with explicit groups (works with ArviZ 0.23 and the 1.x ``from_dict``)."""
    groups = {
        "posterior": _as_numpy(posterior, "posterior"),
        "sample_stats": _as_numpy(sample_stats, "sample_stats"),
        "log_likelihood": _as_numpy(log_likelihood, "log_likelihood"),
        "observed_data": _as_numpy(observed_data, "observed_data"),
    }
    groups = {k: v for k, v in groups.items() if v}
    kwargs = dict(coords=dict(coords or {}), dims=dict(dims or {}))
    with warnings.catch_warnings(), without_shape_log():
        # one draw per chain (EM restarts) is intended; ArviZ warns "more chains than draws"
        warnings.filterwarnings("ignore", message="More chains")
        if _ARVIZ_1:  # pragma: no cover - the 1.x line takes one mapping of groups
            idata = az.from_dict(groups, **kwargs)
        else:
            idata = az.from_dict(**groups, **kwargs)
    if attrs:
        for group in groups:
            getattr(idata, group).attrs.update({k: str(v) for k, v in attrs.items()})
    return idata


class _ShapeNotice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "Shape validation failed" not in record.getMessage()


@contextlib.contextmanager
def without_shape_log():
    """ArviZ logs "Shape validation failed" for one chain or one draw per chain; both are intended in the zoo (a
    single-chain run, EM restarts), and the log line is not the user's to act on. Other ArviZ messages pass.
    (ArviZ 0.23 logs through ``arviz._log``, a Logger it builds itself, not ``logging.getLogger("arviz")``.)"""
    logger, notice = getattr(az, "_log", logging.getLogger("arviz")), _ShapeNotice()
    logger.addFilter(notice)
    try:
        yield
    finally:
        logger.removeFilter(notice)


def set_aside_point_log_likelihood(idata: az.InferenceData) -> az.InferenceData:
    """Move ``log_likelihood`` to ``POINT_LOG_LIKELIHOOD`` (in place; returns ``idata``): a point estimate's
    log likelihood is one value per restart, which PSIS-LOO would misread as a posterior sample."""
    if "log_likelihood" in idata.groups():
        group = idata.log_likelihood
        del idata.log_likelihood
        with warnings.catch_warnings():  # ArviZ notes that the group is not one of its standard ones
            warnings.simplefilter("ignore", UserWarning)
            idata.add_groups({POINT_LOG_LIKELIHOOD: group})
    return idata


def add_variational_parameters(idata: az.InferenceData, variables: Mapping[str, tuple]) -> az.InferenceData:
    """Add the group ``VARIATIONAL_PARAMETERS`` (in place): ``variables`` maps name -> (dims, array) with a leading
    chain (restart) axis and no draw axis."""
    import xarray as xr

    with warnings.catch_warnings():  # ArviZ notes that the group is not one of its standard ones
        warnings.simplefilter("ignore", UserWarning)
        idata.add_groups({VARIATIONAL_PARAMETERS: xr.Dataset({k: v for k, v in variables.items()})})
    return idata


def final_objectives(stats, n_chain: int) -> np.ndarray:
    """(chain,) the last finite value of ``sample_stats["objective"]`` (chain, 1, iteration) per chain; NaN where
    there is none (the trace is padded with NaN after convergence)."""
    if stats is None or "objective" not in stats:
        return np.full(n_chain, np.nan)
    trace = np.asarray(stats["objective"], dtype=np.float64).reshape(n_chain, -1)
    out = np.full(n_chain, np.nan)
    for c in range(n_chain):
        finite = np.flatnonzero(np.isfinite(trace[c]))
        if finite.size:
            out[c] = trace[c, finite[-1]]
    return out
