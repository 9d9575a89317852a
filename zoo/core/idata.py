"""One adapter from every method's output to ``arviz.InferenceData``: the groups the zoo writes and the ArviZ
quirks it hides.

Conventions: every array in ``posterior``, ``unit_posterior``, ``sample_stats`` and ``log_likelihood`` has leading
axes (chain, draw).

Which group holds what (so that ArviZ's functions with their defaults, which read ``posterior``, show the model's
parameters and run in seconds): ``posterior`` holds the parameters; ``unit_posterior`` (``UNIT_POSTERIOR``) holds
the draws of sites indexed by the data's own units (a label per region, a state per case, a weight per training
instance) and the per-unit quantities derived from the draws (label probabilities): thousands of elements that
``az.summary`` would list one row each and ``az.plot_trace`` one panel each. ArviZ reads it when asked:
``az.summary(idata, group="unit_posterior")``, ``az.plot_forest(idata.unit_posterior)``. Each model declares its
unit sites and the dims of every site (``zoo.core.registry.register_model``); ``conform_layout`` moves and names
them, the same for every method, and ``zoo.load_fit`` applies it to files written before (format 2 and earlier).
A variational method's point-estimated sites go beside q's parameters (``VARIATIONAL_PARAMETERS``, one value per
restart), since they are not draws of q.

Optimizers (MAP-EM, variational EM) store one "draw" per chain, several chains being several
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

__all__ = ["az", "to_inference_data", "UNIT_POSTERIOR", "conform_layout", "draws_of", "with_point_estimates",
           "certain_elements",
           "POINT_ESTIMATE_NOTE", "POINT_LOG_LIKELIHOOD", "set_aside_point_log_likelihood",
           "VARIATIONAL_PARAMETERS", "add_variational_parameters", "final_objectives", "without_shape_log",
           "add_sample_stat"]

#: Where a point-estimate fit keeps its pointwise log likelihood (at each restart's estimate): not in
#: ``log_likelihood``, so that ``az.loo`` and ``az.compare`` refuse it instead of treating restarts as draws.
POINT_LOG_LIKELIHOOD = "log_likelihood_at_estimate"

#: Where a variational fit keeps the parameters of its fitted q per restart (chain, ...): q's draws are in
#: ``posterior``; these are what the draws were drawn from.
VARIATIONAL_PARAMETERS = "variational_parameters"

#: The group of per-unit draws (see the module docstring).
UNIT_POSTERIOR = "unit_posterior"

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
                      posterior_predictive: Mapping[str, Any] | None = None,
                      observed_data: Mapping[str, Any] | None = None,
                      dims: Mapping[str, Sequence[str]] | None = None,
                      coords: Mapping[str, Sequence] | None = None,
                      attrs: Mapping[str, Any] | None = None) -> az.InferenceData:
    """Build InferenceData with explicit groups (works with ArviZ 0.23 and the 1.x ``from_dict``)."""
    groups = {
        "posterior": _as_numpy(posterior, "posterior"),
        "sample_stats": _as_numpy(sample_stats, "sample_stats"),
        "log_likelihood": _as_numpy(log_likelihood, "log_likelihood"),
        "posterior_predictive": _as_numpy(posterior_predictive, "posterior_predictive"),
        "observed_data": _as_numpy(observed_data, "observed_data"),
    }
    groups = {k: v for k, v in groups.items() if v}
    kwargs = dict(coords=dict(coords or {}), dims={k: list(v) for k, v in (dims or {}).items()})
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


def add_sample_stat(idata: az.InferenceData, name: str, values, attrs: Mapping[str, Any] | None = None):
    """Add ``values`` (chain, draw) to ``sample_stats`` as ``name`` (in place; the group is made when the fit has
    none, with the posterior's chain and draw coordinates). Returns ``idata``."""
    import xarray as xr

    post = idata.posterior
    values = np.asarray(values)
    if values.shape[:2] != (post.sizes["chain"], post.sizes["draw"]):
        raise ValueError(f"{name}: expected leading (chain, draw) = {(post.sizes['chain'], post.sizes['draw'])}, "
                         f"got shape {values.shape}")
    var = xr.DataArray(values, dims=("chain", "draw") + tuple(f"{name}_dim_{i}" for i in range(values.ndim - 2)),
                       coords={"chain": post["chain"].values, "draw": post["draw"].values}, attrs=dict(attrs or {}))
    if "sample_stats" in idata.groups():
        idata.sample_stats[name] = var
    else:
        idata.add_groups({"sample_stats": xr.Dataset({name: var}, attrs=dict(post.attrs))})
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


#: groups whose arrays lead with (chain, draw)
_DRAW_GROUPS = ("posterior", UNIT_POSTERIOR, "posterior_predictive", "prior", "prior_predictive", "log_likelihood",
                POINT_LOG_LIKELIHOOD)


def draws_of(idata: az.InferenceData, name: str):
    """The draws (an xarray DataArray with leading (chain, draw)) of site ``name``, from ``posterior`` or
    ``unit_posterior``, wherever the fit keeps it; KeyError naming both groups when neither has it."""
    for group in ("posterior", UNIT_POSTERIOR):
        if group in idata.groups() and name in idata[group]:
            return idata[group][name]
    raise KeyError(f"{name!r} is in neither posterior nor {UNIT_POSTERIOR}")


def certain_elements(idata: az.InferenceData, group: str = "posterior") -> dict:
    """site -> boolean DataArray over the site's own dims (no chain, draw): True for an element that takes the same
    value in every draw of every chain of ``group``; only sites with at least one such element. ArviZ 0.23 has no
    r-hat for those elements (0 / 0, with numpy's "invalid value" warning; ``plot_rank`` raises for an integer
    site): ``Fit.diagnose`` rates them "certain" (docs/sites.md)."""
    if group not in idata.groups():
        raise ValueError(f"group: {group!r} is not among the fit's groups {list(idata.groups())}")
    out = {}
    for name, var in idata[group].data_vars.items():
        if not {"chain", "draw"} <= set(var.dims):
            continue
        same = (var == var.isel(chain=0, draw=0)).all(dim=("chain", "draw"))
        if bool(same.any()):
            out[name] = same
    return out


def _base_site(name: str) -> str:
    return name[:-len("_relabelled")] if name.endswith("_relabelled") else name


def _canonical_dims(var, name: str, site_dims: Mapping[str, Sequence[str]], group: str) -> tuple:
    """The dims ``var`` takes: chain, draw and the site's declared dims when their number matches (a log
    likelihood takes the leading dims of its observed site, whose event dims it sums), else its own."""
    lead = tuple(d for d in var.dims[:2] if d in ("chain", "draw")) if group != "observed_data" else ()
    own = var.dims[len(lead):]
    declared = site_dims.get(_base_site(name))
    if declared is None:
        return var.dims
    alternatives = [tuple(d) for d in declared] if declared and isinstance(declared[0], (tuple, list)) \
        else [tuple(declared)]
    # a site with several shapes (full or diagonal covariances) declares one dims tuple per shape
    declared = next((d for d in alternatives if len(d) == len(own)), alternatives[0])
    if group in ("log_likelihood", POINT_LOG_LIKELIHOOD) and len(declared) >= len(own):
        declared = declared[:len(own)]
    return lead + declared if len(declared) == len(own) else var.dims


def _relaid(dataset, names, site_dims, coords, group):
    """A new Dataset of ``dataset``'s variables ``names`` with canonical dims and the data's labels as coords."""
    import xarray as xr

    out = {}
    for name in names:
        var = dataset[name]
        dims = _canonical_dims(var, name, site_dims, group)
        new_coords = {}
        for old, new in zip(var.dims, dims):
            size = var.sizes[old]
            labels = coords.get(new)
            if labels is not None and len(labels) == size:
                new_coords[new] = np.asarray(labels)
            elif old in var.coords and not (old == new or np.array_equal(var[old].values, np.arange(size))):
                new_coords[new] = var[old].values          # labels the runner set, kept under the new name
            elif old in var.coords and old == new:
                new_coords[new] = var[old].values
        out[name] = xr.DataArray(var.values, dims=dims, coords=new_coords, attrs=var.attrs)
    try:
        return xr.Dataset(out, attrs=dataset.attrs)
    except ValueError:  # two sites whose same-named dims disagree in size or labels: keep the labels off
        return xr.Dataset({k: xr.DataArray(v.values, dims=v.dims, attrs=v.attrs) for k, v in out.items()},
                          attrs=dataset.attrs)


#: the attribute a variational runner sets on a site it point-estimates (``attrs["q"]``)
POINT_ESTIMATE_NOTE = "point estimate of the method: the same in every draw of a restart"


def _is_point_estimate(post, name: str) -> bool:
    base = _base_site(name)   # a relabelled copy follows its site
    note = str(post[name].attrs.get("q", "")) or (str(post[base].attrs.get("q", "")) if base in post else "")
    if "point estimate" not in note or post.sizes.get("draw", 0) < 2:
        return False
    values = np.asarray(post[name].values)
    return bool(np.all(values == values[:, :1]))


def _set_aside_point_estimates(idata: az.InferenceData) -> None:
    """A variational method's point-estimated sites (``attrs["q"]`` says so, and each is the same in every draw of
    a restart) and their relabelled copies, moved from ``posterior`` to ``VARIATIONAL_PARAMETERS`` with one value
    per restart (chain): they are not draws of q, and ArviZ's r-hat on a site that never moves within a chain
    divides by zero. ``Fit.summary`` and ``Fit.diagnose`` still show them (``with_point_estimates``)."""
    import xarray as xr

    if "posterior" not in idata.groups():
        return
    post = idata.posterior
    moving = [k for k in post.data_vars if _is_point_estimate(post, k)]
    if not moving:
        return
    fixed = xr.Dataset({k: post[k].isel(draw=0, drop=True).assign_attrs(q=POINT_ESTIMATE_NOTE) for k in moving})
    idata.posterior = post[[k for k in post.data_vars if k not in moving]]
    if VARIATIONAL_PARAMETERS in idata.groups():
        setattr(idata, VARIATIONAL_PARAMETERS, idata[VARIATIONAL_PARAMETERS].merge(fixed, compat="override"))
    else:
        with warnings.catch_warnings():  # ArviZ notes that the group is not one of its standard ones
            warnings.simplefilter("ignore", UserWarning)
            idata.add_groups({VARIATIONAL_PARAMETERS: fixed})


def with_point_estimates(idata: az.InferenceData) -> az.InferenceData:
    """A view of ``idata`` whose posterior also holds a variational method's point-estimated sites, repeated over
    the draws (``_set_aside_point_estimates`` reversed, without copying): what ``Fit.summary`` tabulates beside
    the draws of q. ``idata`` itself when there are none."""
    params = idata[VARIATIONAL_PARAMETERS] if VARIATIONAL_PARAMETERS in idata.groups() else None
    names = [k for k in (params.data_vars if params is not None else ())
             if "point estimate" in str(params[k].attrs.get("q", ""))]
    if not names:
        return idata
    post = idata.posterior
    extra = {k: params[k].expand_dims(draw=post["draw"].values, axis=1) for k in names}
    groups = {"posterior": post.assign(extra)}
    for group in ("sample_stats", "log_likelihood"):
        if group in idata.groups():
            groups[group] = idata[group]
    return az.InferenceData(**groups)


def _rename_variables(idata: az.InferenceData, renamed: Mapping[str, str]) -> None:
    """Each variable named by a key of ``renamed`` takes the name it maps to, in every group (in place); a group
    that already holds the new name keeps it."""
    for group in idata.groups() if renamed else ():
        dataset = idata[group]
        names = {old: new for old, new in renamed.items() if old in dataset.data_vars and new not in dataset.data_vars}
        if names:
            setattr(idata, group, dataset.rename_vars(names))


def conform_layout(idata: az.InferenceData, *, unit_sites: Sequence[str] = (),
                   site_dims: Mapping[str, Sequence[str]] | None = None,
                   coords: Mapping[str, Sequence] | None = None,
                   renamed: Mapping[str, str] | None = None) -> az.InferenceData:
    """The zoo's one layout, in place (returns ``idata``): variables stored under an earlier name renamed
    (``renamed``: old name -> name now, in every group; e.g. kueck04's log likelihood ``groups`` is named after its
    observed site ``group_label`` since format 4); the draws of ``unit_sites`` (and their
    ``_relabelled`` copies) moved from ``posterior`` to ``UNIT_POSTERIOR``; every variable of every group named
    by ``site_dims`` (site -> dims after chain and draw; an observed site's dims name its observed data, and its
    log likelihood takes the leading ones) and labelled by ``coords`` (dim -> the data's labels, attached where
    the length matches). The same for every method, so the same site has the same dims whatever made it."""
    site_dims, coords, units = dict(site_dims or {}), dict(coords or {}), set(unit_sites)
    site_dims.setdefault("objective", ["iteration"])   # an optimizer's trace (chain, 1, iteration)
    _rename_variables(idata, dict(renamed or {}))
    _set_aside_point_estimates(idata)
    groups = list(idata.groups())
    if "posterior" in groups:
        post = idata.posterior
        moving = [k for k in post.data_vars if _base_site(k) in units]
        if moving:
            staying = [k for k in post.data_vars if k not in moving]
            existing = idata[UNIT_POSTERIOR] if UNIT_POSTERIOR in groups else None
            moved = post[moving]
            if existing is not None:
                moved = existing.merge(moved, compat="override", join="outer")
            idata.posterior = post[staying]
            if existing is not None:
                setattr(idata, UNIT_POSTERIOR, moved)
            else:
                with warnings.catch_warnings():  # ArviZ notes that the group is not one of its standard ones
                    warnings.simplefilter("ignore", UserWarning)
                    idata.add_groups({UNIT_POSTERIOR: moved})
    for group in idata.groups():
        if group not in _DRAW_GROUPS + ("sample_stats", "observed_data", VARIATIONAL_PARAMETERS):
            continue
        dataset = idata[group]
        setattr(idata, group, _relaid(dataset, list(dataset.data_vars), site_dims, coords, group))
    return idata
