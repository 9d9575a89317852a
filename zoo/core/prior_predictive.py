"""Prior and prior-predictive groups for a fit (``add_prior_predictive``).

Its own module above both ``zoo.core.generic`` (which simulates a program's prior) and ``zoo.core.registry``
(which knows a zoo model's program arguments and layout): the registry imports the generic methods when a model
registers, so a lookup of the registry from ``zoo.core.generic`` would close an import cycle.
"""
from __future__ import annotations

from typing import Any, Mapping

from zoo.core.generic import prior_predictive, site_dims

__all__ = ["add_prior_predictive"]


def add_prior_predictive(fit, program_kwargs: Mapping[str, Any] | None = None, num_samples: int = 500,
                         seed: int = 0):
    """Add ``prior`` and ``prior_predictive`` groups to a fit of a NumPyro program (in place; returns the fit), with
    the dims of its posterior: ``az.plot_ppc(fit.idata, group="prior")`` then shows the prior's simulated data.
    ``program_kwargs`` None: a user program's fit data (its keyword arguments), or for a zoo model whose program
    can simulate its data (registered ``program_args``: carbonetto03, yakhnenko) the arguments made from the fit's
    data; ValueError for a model whose program cannot (ross03: mu and sigma are arguments without a prior)."""
    import xarray as xr

    program = fit.spec.program
    kwargs = dict(program_kwargs if program_kwargs is not None else _program_kwargs_of(fit))
    prior, predictive = prior_predictive(program, kwargs, num_samples, seed)
    dims = site_dims(program, kwargs, seed)
    groups = {}
    for group, arrays in (("prior", prior), ("prior_predictive", predictive)):
        groups[group] = xr.Dataset({k: (("chain", "draw", *dims.get(k, [f"{k}_dim_{i}" for i in range(v.ndim - 2)])
                                         [:v.ndim - 2]), v) for k, v in arrays.items()})
    fit.idata.add_groups(groups)
    if fit.spec.id is not None:   # a zoo model: its declared dims and the data's labels, as in every other group
        from zoo.core.idata import conform_layout
        from zoo.core.registry import layout_of
        conform_layout(fit.idata, **layout_of(fit.spec, fit.data))
    return fit


def _program_kwargs_of(fit) -> Mapping[str, Any]:
    """The keyword arguments of the fit's program for its own data (``add_prior_predictive``)."""
    if fit.spec.id is None:
        return fit.data
    from zoo.core.registry import get_model
    entry = get_model(fit.spec.id)
    if entry.program_args is None:
        raise ValueError(f"program_kwargs: {fit.spec.id!r} registers no program arguments (its program cannot "
                         f"simulate data from the prior alone); pass them explicitly")
    return entry.program_args(fit.spec, fit.data)
