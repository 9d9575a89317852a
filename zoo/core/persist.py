"""Saving and reloading fits without pickle: one netCDF file that ArviZ reads as it is.

``fit.save(path)`` writes the InferenceData groups and three more: ``zoo_state`` (the method's final state, the
arrays a prediction needs), ``zoo_data`` (the data the fit keeps, e.g. the training instances a kernel model
predicts with) and ``zoo_spec`` (the model's arguments). Their structure (dicts, lists, NamedTuples, dataclasses,
scalars, strings) is stored as JSON in each group's ``structure`` attribute and their arrays as variables, so
nothing is ever unpickled. On load, classes and the prediction function are imported by name only from zoo's own
modules (``zoo.``): a file cannot make the loader run anything else.

``zoo.load_fit(path)`` (``zoo.api``, from ``read_fit_file``'s parts) rebuilds the model with
``zoo.model(id, priors=..., **arguments)`` and returns a Fit that predicts, summarizes and diagnoses as the original
did.

The format is versioned (``FORMAT_VERSION``, in every zoo group's ``zoo_format`` variable). Class and function
paths in a file are those of the zoo that wrote it; a module that moves keeps its old path readable through
``MOVED_MODULES`` (old module -> current module), so a user's file written before a move loads and predicts
identically after it (``tests/core/test_fit_fixtures.py`` holds files written before the regrouping of issue 28).
A file of a newer format than this zoo reads is refused with a ValueError naming both versions.
"""
from __future__ import annotations

import dataclasses
import importlib
import json
import os
import pathlib
import warnings
from typing import Any, NamedTuple

import numpy as np

__all__ = ["save_fit", "read_fit_file", "FitFile", "FORMAT_VERSION", "MOVED_MODULES", "current_module"]

#: 1: class paths as ``module:qualname`` of the writing zoo (until issue 28); 2: the same, read through
#: ``MOVED_MODULES`` (files of version 1 are read the same way); 3: per-unit draws in ``unit_posterior`` and one set
#: of dims per site (issue 30). ``zoo.load_fit`` gives files of versions 1 and 2 the layout of version 3 on read
#: (``zoo.core.idata.conform_layout`` with the model's declared layout). 4: a variable a model renamed under its
#: new name (kueck04's log likelihood ``groups`` -> ``group_label``, its observed site); files of versions 1-3 take
#: the new names on read (``conform_layout``'s ``renamed``). 5: kueck04's per-basis gamma and beta (one kernel centred
#: on each training instance) in ``unit_posterior`` beside z; files of versions 1-4 are given that layout on read.
FORMAT_VERSION = 5
_GROUPS = ("zoo_state", "zoo_data", "zoo_spec")

#: Old module path -> new module path, for every module that moved (a fit file names the modules of its state
#: NamedTuples, data containers and predictor as ``module:qualname``). Add a line whenever a module moves; never
#: remove one (users' files keep their paths forever).
# issue 28: the flat zoo/ regrouped into core/, diagnostics/, leaderboards/, experiments/bench/; inference/ by family
MOVED_MODULES: dict[str, str] = {
    "zoo.baselines": "zoo.leaderboards.baselines", "zoo.check_sampler": "zoo.diagnostics.check_sampler",
    "zoo.comparison": "zoo.diagnostics.comparison", "zoo.convergence": "zoo.core.convergence",
    "zoo.diagnostics": "zoo.diagnostics.switch_rate", "zoo.discovery": "zoo.core.discovery",
    "zoo.experiments.carbonetto03_bench": "zoo.experiments.bench.carbonetto03",
    "zoo.experiments.gustafson07_bench": "zoo.experiments.bench.gustafson07",
    "zoo.experiments.kueck04_bench": "zoo.experiments.bench.kueck04",
    "zoo.experiments.kueck04_cv": "zoo.papers.kueck04_cv",
    "zoo.experiments.regions_bench": "zoo.experiments.bench.regions",
    "zoo.experiments.ross03_bench": "zoo.experiments.bench.ross03",
    "zoo.experiments.scaling": "zoo.experiments.bench.scaling",
    "zoo.experiments.streaming_topics": "zoo.experiments.bench.streaming_topics",
    "zoo.experiments.yakhnenko_bench": "zoo.experiments.bench.yakhnenko", "zoo.finite": "zoo.core.finite",
    "zoo.generic": "zoo.core.generic", "zoo.inference.collapsed_beta": "zoo.inference.mil.collapsed_beta",
    "zoo.inference.collapsed_niw": "zoo.inference.label_feature.collapsed_niw",
    "zoo.inference.constraint_codes": "zoo.inference.mil.constraint_codes",
    "zoo.inference.em": "zoo.inference.mixture.em",
    "zoo.inference.kernel_selection": "zoo.inference.mil.kernel_selection",
    "zoo.inference.label_feature_flips": "zoo.inference.label_feature.flips",
    "zoo.inference.label_feature_gibbs": "zoo.inference.label_feature.gibbs",
    "zoo.inference.label_feature_joint": "zoo.inference.label_feature.joint",
    "zoo.inference.label_feature_moves": "zoo.inference.label_feature.moves",
    "zoo.inference.label_feature_state": "zoo.inference.label_feature.state",
    "zoo.inference.mcvq_steps": "zoo.inference.mcvq.steps", "zoo.inference.mil_basis": "zoo.inference.mil.basis",
    "zoo.inference.mil_gibbs": "zoo.inference.mil.gibbs", "zoo.inference.mil_padding": "zoo.inference.mil.padding",
    "zoo.inference.mil_rows": "zoo.inference.mil.rows", "zoo.inference.mil_scale": "zoo.inference.mil.scale",
    "zoo.inference.mil_swap": "zoo.inference.mil.swap",
    "zoo.inference.niw_predictive": "zoo.inference.label_feature.niw_predictive",
    "zoo.inference.orthant_sampler": "zoo.inference.mil.orthant_sampler",
    "zoo.inference.stick_breaking_vi": "zoo.inference.topics.stick_breaking_vi",
    "zoo.inference.streaming_topics": "zoo.inference.topics.streaming",
    "zoo.inference.topic_vi": "zoo.inference.topics.topic_vi",
    "zoo.inference.variational_em": "zoo.inference.mcvq.variational_em", "zoo.leaderboard": "zoo.leaderboards.board",
    "zoo.models.kernel_mil": "zoo.models.mil",
    "zoo.leaderboard_corel": "zoo.leaderboards.corel5k", "zoo.leaderboard_methods": "zoo.leaderboards.methods",
    "zoo.leaderboard_report": "zoo.leaderboards.report", "zoo.options": "zoo.core.options",
    "zoo.persist": "zoo.core.persist", "zoo.priors": "zoo.core.priors", "zoo.progress": "zoo.core.progress",
    "zoo.provenance": "zoo.core.provenance", "zoo.reference": "zoo.diagnostics.reference",
    "zoo.reference_problems": "zoo.diagnostics.reference_problems", "zoo.registry": "zoo.core.registry",
    "zoo.relabel": "zoo.core.relabel", "zoo.results": "zoo.core.fit", "zoo.sbc": "zoo.diagnostics.sbc",
}


# ----------------------------------------------------------------------------------------------- flattening
def _class_path(cls) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _flatten(obj, arrays: dict[str, np.ndarray], where: str):
    """(JSON structure, arrays filled in) of a pytree of containers, arrays and scalars; ValueError otherwise."""
    if obj is None or isinstance(obj, (bool, str)):
        return {"t": "value", "v": obj}
    if isinstance(obj, (int, float, np.integer, np.floating, np.bool_)):
        return {"t": "scalar", "v": np.asarray(obj).item(), "dtype": np.asarray(obj).dtype.str}
    if isinstance(obj, np.ndarray) or type(obj).__module__.startswith("jax"):
        key = f"a{len(arrays)}"
        arr = np.asarray(obj)
        if arr.dtype == object:
            raise ValueError(f"save: {where} is an object array, which netCDF cannot hold without pickle")
        if arr.dtype.kind == "V":  # JAX typed PRNG keys
            import jax
            arr = np.asarray(jax.random.key_data(obj))
            arrays[key] = arr
            return {"t": "prng_key", "k": key}
        arrays[key] = arr
        return {"t": "array", "k": key}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return {"t": "namedtuple", "cls": _class_path(type(obj)),
                "fields": {f: _flatten(getattr(obj, f), arrays, f"{where}.{f}") for f in obj._fields}}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {"t": "dataclass", "cls": _class_path(type(obj)),
                "fields": {f.name: _flatten(getattr(obj, f.name), arrays, f"{where}.{f.name}")
                           for f in dataclasses.fields(obj) if f.init}}
    if isinstance(obj, dict):
        if not all(isinstance(k, str) for k in obj):
            raise ValueError(f"save: {where} is a dict with non-string keys")
        return {"t": "dict", "items": {k: _flatten(v, arrays, f"{where}[{k!r}]") for k, v in obj.items()}}
    if isinstance(obj, (list, tuple)):
        return {"t": type(obj).__name__, "items": [_flatten(v, arrays, f"{where}[{i}]") for i, v in enumerate(obj)]}
    raise ValueError(f"save: {where} is a {type(obj).__name__}, which a zoo fit file cannot hold")


def current_module(module: str) -> str:
    """Where the module a file names lives now: ``MOVED_MODULES`` followed to its end (a module that moved twice
    has two lines), itself when it never moved. Whole module names only: a package's name is not a prefix rule."""
    seen = {module}
    while module in MOVED_MODULES:
        module = MOVED_MODULES[module]
        if module in seen:
            raise ValueError(f"MOVED_MODULES: a loop through {module!r}")
        seen.add(module)
    return module


def _zoo_object(path: str):
    """The class or function ``module:qualname``, imported only from zoo's own modules (an old module path is read
    through ``MOVED_MODULES``)."""
    module, _, qualname = path.partition(":")
    if not (module == "zoo" or module.startswith("zoo.")) or "<" in qualname:
        raise ValueError(f"load: the file names {path!r}, which is not a zoo class or function; refused")
    try:
        obj = importlib.import_module(current_module(module))
    except ModuleNotFoundError:
        raise ValueError(f"load: the file names {path!r}, whose module this zoo does not have (moved without an "
                         f"entry in zoo.core.persist.MOVED_MODULES?)") from None
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _unflatten(node, arrays: dict[str, np.ndarray]):
    kind = node["t"]
    if kind == "value":
        return node["v"]
    if kind == "scalar":
        value = np.asarray(node["v"], dtype=np.dtype(node["dtype"]))
        return value.item() if node["dtype"] in ("<i8", "<f8", "|b1") else value[()]
    if kind == "array":
        return arrays[node["k"]]
    if kind == "prng_key":
        import jax
        return jax.random.wrap_key_data(arrays[node["k"]])
    if kind in ("namedtuple", "dataclass"):
        cls = _zoo_object(node["cls"])
        return cls(**{f: _unflatten(v, arrays) for f, v in node["fields"].items()})
    if kind == "dict":
        return {k: _unflatten(v, arrays) for k, v in node["items"].items()}
    if kind in ("list", "tuple"):
        items = [_unflatten(v, arrays) for v in node["items"]]
        return items if kind == "list" else tuple(items)
    raise ValueError(f"load: unknown node kind {kind!r} in the file's structure")


def _group(obj, where: str):
    import xarray as xr

    arrays: dict[str, np.ndarray] = {}
    structure = _flatten(obj, arrays, where)
    variables = {key: (tuple(f"{key}_dim{i}" for i in range(arr.ndim)), arr) for key, arr in arrays.items()}
    # one variable always: ArviZ does not write a group without any
    variables["zoo_format"] = ((), np.int64(FORMAT_VERSION))
    return xr.Dataset(variables, attrs={"structure": json.dumps(structure)})


def _read_group(dataset) -> Any:
    version = int(dataset["zoo_format"].values) if "zoo_format" in dataset else 1
    if version > FORMAT_VERSION:
        raise ValueError(f"load: the file is of zoo fit-file format {version}, newer than this zoo reads "
                         f"({FORMAT_VERSION}): update zoo")
    arrays = {name: np.asarray(dataset[name].values) for name in dataset.data_vars if name != "zoo_format"}
    return _unflatten(json.loads(dataset.attrs["structure"]), arrays)


# ------------------------------------------------------------------------------------------------- the API
def _spec_record(fit) -> dict:
    """The model id, its arguments and the priors that differ from the model's defaults (as prior strings)."""
    from zoo.core.provenance import prior_string

    spec = fit.spec
    if spec is None or spec.id is None:
        return {"model": None}
    defaults = spec.default_priors
    overrides = {site: prior_string(p) for site, p in spec.priors.items()
                 if site not in defaults or prior_string(p) != prior_string(defaults[site])}
    for site, text in overrides.items():
        if ".expand(" in text or text.startswith("MixtureSameFamily("):   # no prior string writes these
            raise ValueError(f"save: the prior of {site!r} ({text}) cannot be written as a prior string")
    return {"model": spec.id, "arguments": dict(spec.arguments), "priors": overrides}


def save_fit(fit, path: str | os.PathLike, overwrite: bool = False) -> pathlib.Path:
    """Write ``fit`` to ``path`` (netCDF; see the module docstring). An existing file is kept (ValueError) unless
    ``overwrite``; the file is written under a temporary name and renamed."""
    path = pathlib.Path(path)
    if path.is_dir():
        raise ValueError(f"path: {str(path)!r} is a directory")
    if not path.parent.is_dir():
        raise ValueError(f"path: the folder {str(path.parent)!r} does not exist")
    if path.exists() and not overwrite:
        raise ValueError(f"path: {str(path)!r} exists; pass overwrite=True to replace it")
    predictor = fit.predictor
    record = {"method": fit.method, "headline": list(fit.headline or []),
              "predictor": _class_path(predictor) if predictor is not None else None, **_spec_record(fit)}
    if record["predictor"] is not None:
        _zoo_object(record["predictor"])  # a local function could not be found again: refuse now, not on load
    idata = fit.idata.copy()
    with warnings.catch_warnings():  # ArviZ notes that these groups are not among its standard ones
        warnings.simplefilter("ignore", UserWarning)
        idata.add_groups({"zoo_state": _group(fit.state, "state"), "zoo_data": _group(fit.data, "data"),
                          "zoo_spec": _group(record, "spec")})
    tmp = path.with_name(f".{path.name}.partial")
    idata.to_netcdf(str(tmp))
    tmp.replace(path)
    return path


class FitFile(NamedTuple):
    """What a fit file holds: the InferenceData (without the zoo groups), the record of the model and method
    (``model``, ``arguments``, ``priors`` (overrides of the defaults, as strings), ``method``, ``headline``,
    ``predictor``), the method's state, the data the fit kept, and the predictor function (or None)."""
    idata: Any
    record: dict
    state: Any
    data: Any
    predictor: Any


def read_fit_file(path: str | os.PathLike) -> FitFile:
    """The parts of a file of ``save_fit``; ``zoo.load_fit`` rebuilds the Fit from them."""
    from zoo.core.idata import az

    path = pathlib.Path(path)
    if not path.is_file():
        raise ValueError(f"path: {str(path)!r} is not a file")
    try:
        idata = az.from_netcdf(str(path))
    except Exception as err:  # noqa: BLE001 - netCDF/HDF5 raise many types for a damaged file
        raise ValueError(f"{path}: not a readable netCDF file ({type(err).__name__}: {err})") from None
    missing = [g for g in _GROUPS if g not in idata.groups()]
    if missing:
        raise ValueError(f"{path}: not a zoo fit file (no {missing[0]} group); it is plain InferenceData, which "
                         f"arviz.from_netcdf reads")
    record = _read_group(idata.zoo_spec)
    state, data = _read_group(idata.zoo_state), _read_group(idata.zoo_data)
    for group in _GROUPS:
        delattr(idata, group)
    predictor = _zoo_object(record["predictor"]) if record["predictor"] else None
    return FitFile(idata=idata, record=record, state=state, data=data, predictor=predictor)
