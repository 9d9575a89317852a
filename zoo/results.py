"""One adapter from every method's output to ``arviz.InferenceData``, and the ``Fit`` object users get back.

Conventions: every array in ``posterior``, ``sample_stats`` and ``log_likelihood`` has leading axes
(chain, draw). Optimizers (MAP-EM, variational EM) store one "draw" per chain, several chains being several
restarts, so ``az.summary`` shows the spread between restarts; their objective trace goes to ``sample_stats``
as ``objective`` with shape (chain, 1, iteration).
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import warnings
from typing import Any, Callable, Mapping, Sequence

import numpy as np

with warnings.catch_warnings():
    # ArviZ 0.23 announces its 1.x refactor on import; zoo pins arviz<1, so the notice is not the user's to act on
    # (silenced for zoo's own import only: a user's later ``import arviz`` finds the module loaded)
    warnings.filterwarnings("ignore", message="\\s*ArviZ is undergoing a major refactor", category=FutureWarning)
    import arviz as az

__all__ = ["to_inference_data", "Fit", "POINT_LOG_LIKELIHOOD", "set_aside_point_log_likelihood",
           "VARIATIONAL_PARAMETERS", "add_variational_parameters"]

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


def _final_objectives(stats, n_chain: int) -> np.ndarray:
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


@dataclasses.dataclass
class Fit:
    """The result of ``zoo.fit``.

    Attributes: ``idata`` (arviz.InferenceData), ``spec`` (the ModelSpec), ``method`` (name), ``state`` (the
    method's final state: point estimates or last MCMC state, method-specific), ``headline`` (site names that
    ``summary()`` shows).
    """

    idata: az.InferenceData
    spec: Any
    method: str
    state: Any = None
    headline: Sequence[str] | None = None
    predictor: Callable[["Fit", Any], Any] | None = None
    data: Any = None

    @property
    def provenance(self) -> dict[str, str]:
        """How the fit was made: model, options, priors, seed, data fingerprint, versions, wall time
        (``zoo.provenance``); empty for a Fit not made by ``zoo.fit``."""
        attrs = self.idata.posterior.attrs
        keys = [k for k in attrs if k.startswith("zoo_") or k.endswith("_version")]
        return {k: str(attrs[k]) for k in keys}

    @property
    def inference(self) -> str:
        """"mcmc", "variational" or "point estimate" (EM and MAP restarts): what ``posterior`` holds."""
        kind = self.idata.posterior.attrs.get("zoo_inference")
        return str(kind) if kind else ("point estimate" if self.is_point_estimate else "mcmc")

    def diagnose(self, var_names: Sequence[str] | None = None, elements: bool = False):
        """Convergence of the headline sites (or ``var_names``), a pandas DataFrame: rank-normalized r-hat, bulk
        and tail ESS, MCSE / sd, divergences, acceptance and a verdict against Vehtari et al. (2021)'s thresholds
        (``zoo.convergence``); one row per site, or per element with ``elements=True``. Mixture-like sites are
        diagnosed on their relabelled draws when the fit has them. A variational fit's draws are read as draws of
        q: r-hat compares its restarts (column ``r_hat_restarts``) and the verdict says so."""
        from zoo import convergence

        if self.is_point_estimate:
            raise ValueError(f"diagnose: the {self.method!r} fit holds point estimates (one per restart), which have "
                             f"no convergence diagnostics; fit.restarts() shows the restarts' objectives")
        names = list(var_names or self.headline or list(self.idata.posterior.data_vars))
        if elements:
            return convergence.diagnose_elements(self.idata, names)
        return convergence.diagnose(self.idata, names, inference=self.inference)

    @property
    def is_point_estimate(self) -> bool:
        """True for optimizers (EM, MAP): one draw per chain, each chain a restart, not a posterior sample."""
        return self.idata.posterior.sizes.get("draw", 0) < 2

    def restarts(self):
        """Point estimates: one row per restart (chain) with its final objective, iterations and convergence, best
        first; a pandas DataFrame. (For draws from a posterior there are no restarts: ValueError.)"""
        import pandas as pd

        if not self.is_point_estimate:
            raise ValueError(f"restarts: the {self.method!r} fit holds posterior draws, not restarts")
        stats = self.idata.get("sample_stats")
        n_chain = self.idata.posterior.sizes["chain"]
        table = pd.DataFrame(index=pd.RangeIndex(n_chain, name="restart"))
        table["final objective"] = _final_objectives(stats, n_chain)
        for name in ("n_iter", "converged"):
            if stats is not None and name in stats:
                table[name] = np.asarray(stats[name]).reshape(n_chain, -1)[:, 0]
        return table.sort_values("final objective", ascending=False, na_position="last")

    def summary(self, var_names: Sequence[str] | None = None, **kwargs):
        """A pandas DataFrame of the headline sites (or ``var_names``), one row per element.

        Posterior draws (MCMC, variational): ArviZ's summary (mean, sd, HDI, MCSE, ESS, r-hat; r-hat needs two
        chains and is left out with one). Variational draws (``fit.inference == "variational"``): the same table with
        r-hat named ``r_hat_restarts`` (it compares restarts) and a column ``q`` saying which sites are draws of q
        and which the method point-estimates. ``table.attrs["inference"]`` says what the posterior holds.
        Point estimates (EM, MAP restarts): the value at the best restart (highest
        final objective), and the mean, sd, min and max over restarts: the spread of local optima, not a posterior.
        """
        names = list(var_names or self.headline or list(self.idata.posterior.data_vars))
        if self.is_point_estimate:
            return self._restart_summary(names)
        one_chain = self.idata.posterior.sizes.get("chain", 0) < 2
        with warnings.catch_warnings(), without_shape_log():
            # constant elements (a certain indicator) and a single chain have no r-hat: ArviZ divides by zero and
            # returns NaN, which the table shows; the warnings say nothing more
            warnings.filterwarnings("ignore", message="invalid value encountered", category=RuntimeWarning)
            if one_chain:
                warnings.filterwarnings("ignore", message="Degrees of freedom", category=RuntimeWarning)
            table = az.summary(self.idata, var_names=names, **kwargs)
        table = table.drop(columns=["r_hat"], errors="ignore") if one_chain else table
        if self.inference == "variational":
            table = self._variational_summary(table, names)
        table.attrs["inference"] = self.inference
        return table

    def _variational_summary(self, table, names: Sequence[str]):
        """Variational draws: the columns say what they are. mean, sd and HDI are q's (restarts pooled), MCSE is the
        Monte Carlo error of the draws, r-hat compares restarts (``r_hat_restarts``); ESS and MCSE are blanked for
        the sites the method point-estimates (the same in every draw of a restart)."""
        post = self.idata.posterior
        for name in names:
            values = np.asarray(post[name])
            flat = values.reshape(values.shape[:2] + (-1,))
            if not np.all(flat == flat[:, :1]):
                continue
            rows = [i for i in table.index if i == name or i.startswith(f"{name}[")]
            table.loc[rows, [c for c in table.columns if c.startswith(("mcse", "ess", "r_hat"))]] = np.nan
        table = table.rename(columns={"r_hat": "r_hat_restarts"})
        table["q"] = ["point estimate" if np.isnan(table.loc[i, "ess_bulk"]) else "draws of q" for i in table.index]
        return table

    def _restart_summary(self, names: Sequence[str]):
        import pandas as pd

        post = self.idata.posterior
        n_chain = post.sizes["chain"]
        objectives = _final_objectives(self.idata.get("sample_stats"), n_chain)
        best = int(np.nanargmax(objectives)) if np.isfinite(objectives).any() else None
        rows, index = [], []
        for name in names:
            values = np.asarray(post[name]).reshape(n_chain, -1)          # (restart, element)
            shape = post[name].shape[2:]
            for flat, element in enumerate(np.ndindex(*shape) if shape else [()]):
                v = values[:, flat]
                row = {"best restart": v[best] if best is not None else np.nan, "mean": v.mean(),
                       "sd": v.std(ddof=1) if n_chain > 1 else np.nan, "min": v.min(), "max": v.max()}
                rows.append(row)
                index.append(f"{name}[{','.join(map(str, element))}]" if shape else name)
        table = pd.DataFrame(rows, index=index)
        if best is None:
            table = table.drop(columns=["best restart"])
        if n_chain < 2:
            table = table.drop(columns=["sd"])
        return table

    def save(self, path, overwrite: bool = False):
        """Write the fit to ``path`` (one netCDF file, no pickle; ``zoo.load_fit`` reads it back and predicts
        identically). An existing file is kept unless ``overwrite``. Returns the path."""
        from zoo.persist import save_fit
        return save_fit(self, path, overwrite=overwrite)

    def predict(self, data, **options):
        """Model-specific predictions (a small dataclass of named arrays) for new data; ``options`` go to the
        model's predictor (e.g. ``max_draws``)."""
        if self.predictor is None:
            raise NotImplementedError(f"method {self.method!r} of {self.spec.id!r} has no predictions")
        return self.predictor(self, data, **options)

    def __repr__(self) -> str:
        mid = self.spec.id if self.spec is not None and self.spec.id else "<user program>"
        post = self.idata.posterior
        return (f"Fit({mid}, method={self.method!r}, chains={post.sizes.get('chain')}, "
                f"draws={post.sizes.get('draw')}, sites={list(post.data_vars)})")
