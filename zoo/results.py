"""One adapter from every method's output to ``arviz.InferenceData``, and the ``Fit`` object users get back.

Conventions: every array in ``posterior``, ``sample_stats`` and ``log_likelihood`` has leading axes
(chain, draw). Optimizers (MAP-EM, variational EM) store one "draw" per chain, several chains being several
restarts, so ``az.summary`` shows the spread between restarts; their objective trace goes to ``sample_stats``
as ``objective`` with shape (chain, 1, iteration).
"""
from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Callable, Mapping, Sequence

import numpy as np

with warnings.catch_warnings():
    # ArviZ 0.23 announces its 1.x refactor on import; zoo pins arviz<1, so the notice is not the user's to act on
    # (silenced for zoo's own import only: a user's later ``import arviz`` finds the module loaded)
    warnings.filterwarnings("ignore", message="\\s*ArviZ is undergoing a major refactor", category=FutureWarning)
    import arviz as az

__all__ = ["to_inference_data", "Fit"]

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
    with warnings.catch_warnings():
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

    def summary(self, var_names: Sequence[str] | None = None, **kwargs):
        """ArviZ summary (a pandas DataFrame) of the headline sites, or of ``var_names``."""
        names = list(var_names or self.headline or list(self.idata.posterior.data_vars))
        single_draw = self.idata.posterior.sizes.get("draw", 0) < 2
        if single_draw:
            # point estimates (MAP/EM restarts): ArviZ cannot compute ESS/R-hat from one draw per chain
            kwargs.setdefault("kind", "stats")
        return az.summary(self.idata, var_names=names, **kwargs)

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
