"""The ``Fit`` object users get back from ``zoo.fit``: the InferenceData (``zoo.core.idata``) with the spec, the
method's final state and its predictor; summaries, convergence diagnostics, restarts, predictions and saving.
"""
from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Callable, Sequence

import numpy as np

from zoo.core import convergence
from zoo.core.idata import az, final_objectives, with_point_estimates, without_shape_log
from zoo.core.persist import save_fit

__all__ = ["Fit"]


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
        (``zoo.core.provenance``); empty for a Fit not made by ``zoo.fit``."""
        attrs = self.idata.posterior.attrs
        keys = [k for k in attrs if k.startswith("zoo_") or k.endswith("_version")]
        return {k: str(attrs[k]) for k in keys}

    @property
    def inference(self) -> str:
        """"mcmc", "variational" or "point estimate" (EM and MAP restarts): what ``posterior`` holds."""
        kind = self.idata.posterior.attrs.get("zoo_inference")
        return str(kind) if kind else ("point estimate" if self.is_point_estimate else "mcmc")

    def diagnose(self, var_names: Sequence[str] | None = None, elements: bool = False):
        """The verdict on the headline sites (or ``var_names``), one table for every kind of inference (a pandas
        DataFrame, one row per site, ``zoo.core.convergence``): its ``status`` ("ok", "certain", "point estimate"
        or "fail"), ``verdict`` in words and ``advice``. MCMC: rank-normalized r-hat, bulk and tail ESS, MCSE / sd
        against Vehtari et al. (2021)'s thresholds, discrete sites judged by their chains' states (stuck chains
        said in words), the acceptance of the site's own moves and its switch rate; mixture-like sites on their
        relabelled draws when the fit has them. Optimisers and variational methods: converged by their objective
        trace (the criterion is stated in the verdict) and restarts compared (column ``r_hat_restarts`` for draws
        of q; a variational method's point estimates are read beside its draws). ``elements=True``: one row per
        element (ArviZ's numbers, draws only)."""
        idata = with_point_estimates(self.idata)     # a variational method's point estimates beside the draws of q
        names = list(var_names or self.headline or list(idata.posterior.data_vars))
        if elements:
            if self.is_point_estimate:
                raise ValueError(f"diagnose: elements=True needs draws; the {self.method!r} fit holds point "
                                 f"estimates (one per restart): fit.restarts() shows them")
            return convergence.diagnose_elements(idata, names)
        return convergence.diagnose(idata, names, inference=self.inference, exchangeable=self._exchangeable())

    def _exchangeable(self) -> list[str]:
        """The sites the model declares exchangeable, as ``zoo.core.finish`` recorded them (none for a user's
        program, or for a fit saved before they were recorded)."""
        return str(self.idata.posterior.attrs.get("zoo_exchangeable", "")).split()

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
        table["final objective"] = final_objectives(stats, n_chain)
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
        idata = with_point_estimates(self.idata)     # a variational method's point estimates beside the draws of q
        one_chain = self.idata.posterior.sizes.get("chain", 0) < 2
        with warnings.catch_warnings(), without_shape_log():
            # constant elements (a certain indicator) and a single chain have no r-hat: ArviZ divides by zero and
            # returns NaN, which the table shows; the warnings say nothing more
            warnings.filterwarnings("ignore", message="invalid value encountered", category=RuntimeWarning)
            if one_chain:
                warnings.filterwarnings("ignore", message="Degrees of freedom", category=RuntimeWarning)
            table = az.summary(idata, var_names=names, **kwargs)
        table = table.drop(columns=["r_hat"], errors="ignore") if one_chain else table
        if self.inference == "variational":
            table = self._variational_summary(table, names, idata.posterior)
        table = _without_empty_columns(table)
        table.attrs["inference"] = self.inference
        return table

    def _variational_summary(self, table, names: Sequence[str], post):
        """Variational draws: the columns say what they are. mean, sd and HDI are q's (restarts pooled), MCSE is the
        Monte Carlo error of the draws, r-hat compares restarts (``r_hat_restarts``); ESS and MCSE are blanked for
        the sites the method point-estimates (the same in every draw of a restart; ``post``: the posterior with
        them, ``zoo.core.idata.with_point_estimates``)."""
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
        objectives = final_objectives(self.idata.get("sample_stats"), n_chain)
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
        return _without_empty_columns(table)

    def save(self, path, overwrite: bool = False):
        """Write the fit to ``path`` (one netCDF file, no pickle; ``zoo.load_fit`` reads it back and predicts
        identically). An existing file is kept unless ``overwrite``. Returns the path."""
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


def _without_empty_columns(table):
    """``table`` without the columns that are NaN in every row (a column that says nothing: MCSE and ESS when every
    site shown is point-estimated, r-hat with one chain); a column with a number in any row is kept, its NaNs
    saying which rows it does not apply to."""
    empty = [name for name in table.columns if table[name].isna().all()]
    return table.drop(columns=empty)
