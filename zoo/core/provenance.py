"""Provenance of a fit: what was run, on what, with which software, stored in the InferenceData's attributes so a
result read back from disk says how it was made.

``zoo.fit`` adds these attributes (all strings, as netCDF requires) to every group of ``fit.idata``:
``zoo_model`` (model id, or "<user program>"), ``zoo_model_options`` (JSON), ``zoo_method``, ``zoo_options``
(the method's, JSON), ``zoo_priors`` (JSON,
site -> canonical string such as ``InverseGamma(concentration=1.0, rate=1.0)``), ``zoo_seed``,
``zoo_data_sha256`` (of the data's arrays), ``zoo_wall_seconds`` (the whole fit), ``zoo_compile_seconds`` (the
part of it JAX spent tracing, lowering and compiling, from ``jax.monitoring``'s compile events; 0 when every
function was already compiled), and the versions ``zoo_version`` (with the git
commit when run from a checkout), ``jax_version``, ``numpyro_version``, ``arviz_version``, ``numpy_version``,
``python_version``.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import pathlib
import platform
import contextlib
import subprocess
from typing import Any, Iterator, Mapping

import numpy as np

__all__ = ["prior_string", "data_fingerprint", "software_versions", "provenance_attrs", "compile_clock",
           "platform_fingerprint", "data_arrays", "PROVENANCE_KEYS"]

#: The attributes every fit's InferenceData groups carry (issue 18.5).
PROVENANCE_KEYS = ("zoo_model", "zoo_model_options", "zoo_method", "zoo_options", "zoo_priors", "zoo_seed",
                   "zoo_data_sha256", "zoo_wall_seconds", "zoo_compile_seconds", "zoo_version", "jax_version",
                   "numpyro_version", "arviz_version", "numpy_version", "python_version")

#: JAX's compile events (``jax._src.dispatch``): tracing to a jaxpr, lowering to MLIR, XLA's backend compile.
_COMPILE_EVENTS = ("/jax/core/compile/jaxpr_trace_duration", "/jax/core/compile/jaxpr_to_mlir_module_duration",
                   "/jax/core/compile/backend_compile_duration")


@contextlib.contextmanager
def compile_clock() -> Iterator[list]:
    """Seconds JAX spends compiling inside the block: yields a one-element list whose value grows with each
    compile event (``jax.monitoring``; the listener is removed on exit)."""
    from jax import monitoring

    total = [0.0]

    def listener(event: str, duration: float, **_) -> None:
        if event in _COMPILE_EVENTS:
            total[0] += duration

    monitoring.register_event_duration_secs_listener(listener)
    try:
        yield total
    finally:
        monitoring.unregister_event_duration_listener(listener)


def _number(value) -> Any:
    arr = np.asarray(value)
    return arr.item() if arr.ndim == 0 else arr.tolist()


def prior_string(prior) -> str:
    """A canonical, parseable-looking text of a NumPyro distribution: its class and its named parameters.

    A ``MixtureSameFamily`` (no parameters of its own) is written with its mixing and component distributions,
    e.g. ``MixtureSameFamily(CategoricalProbs(probs=[0.5, 0.5]), Beta(concentration0=[10.0, 1.0], ...))``, so
    that two different mixtures never read (or compare, in a saved fit's overrides) as the same prior."""
    if hasattr(prior, "mixing_distribution") and hasattr(prior, "component_distribution"):   # MixtureSameFamily
        inner = f"{_parameters_string(prior.mixing_distribution)}, {_parameters_string(prior.component_distribution)}"
        text = f"{type(prior).__name__}({inner})"
        return text if not tuple(prior.batch_shape) else f"{text}.expand({list(prior.batch_shape)})"
    text = _parameters_string(prior)
    shape = tuple(prior.batch_shape) + tuple(prior.event_shape)
    return text if not tuple(prior.batch_shape) else f"{text}.expand({list(shape)})"


def _parameters_string(prior) -> str:
    """``Class(name=value, ...)`` of a distribution's named parameters (batch shape implied by the values)."""
    names = sorted(getattr(prior, "arg_constraints", {}))
    parts = []
    for name in names:
        value = getattr(prior, name, None)
        if value is None:
            continue
        try:
            parts.append(f"{name}={_number(value)}")
        except (TypeError, ValueError):
            parts.append(f"{name}=<{type(value).__name__}>")
    return f"{type(prior).__name__}({', '.join(parts)})"


def data_arrays(data) -> list[tuple[str, np.ndarray]]:
    """The arrays a data object holds, named, in a fixed order."""
    if isinstance(data, np.ndarray) or hasattr(data, "__array__") and not isinstance(data, (str, bytes)):
        return [("", np.asarray(data))]
    if dataclasses.is_dataclass(data):
        items = [(f.name, getattr(data, f.name)) for f in dataclasses.fields(data)]
    elif isinstance(data, Mapping):
        items = sorted(data.items(), key=lambda kv: str(kv[0]))
    else:
        return []
    out = []
    for name, value in items:
        if isinstance(value, (np.ndarray, list, tuple)) or hasattr(value, "__array__"):
            try:
                arr = np.asarray(value)
            except (TypeError, ValueError):
                continue
            if arr.dtype != object:
                out.append((str(name), arr))
            else:
                out.append((str(name), np.asarray(json.dumps(value, default=str, sort_keys=True))))
        elif dataclasses.is_dataclass(value):
            out.extend((f"{name}.{sub}", arr) for sub, arr in data_arrays(value))
    return out


def data_fingerprint(data) -> str:
    """sha256 over the names, dtypes, shapes and bytes of the data's arrays ("" when it holds none)."""
    arrays = data_arrays(data)
    if not arrays:
        return ""
    digest = hashlib.sha256()
    for name, arr in arrays:
        arr = np.ascontiguousarray(arr)
        digest.update(f"{name}|{arr.dtype.str}|{arr.shape}|".encode())
        digest.update(arr.tobytes())
    return digest.hexdigest()


@functools.lru_cache(maxsize=1)
def _git_commit() -> str:
    root = pathlib.Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return ""
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                             text=True, timeout=5)
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return ""
    if out.returncode != 0:
        return ""
    return out.stdout.strip() + ("+modified" if dirty.stdout.strip() else "")


@functools.lru_cache(maxsize=1)
def software_versions() -> dict[str, str]:
    import arviz
    import jax
    import numpyro

    from zoo._config import VERSION
    commit = _git_commit()
    return {"zoo_version": VERSION + (f" ({commit})" if commit else ""), "jax_version": jax.__version__,
            "numpyro_version": numpyro.__version__, "arviz_version": arviz.__version__,
            "numpy_version": np.__version__, "python_version": platform.python_version()}


#: The processor features that change what XLA's CPU compiler emits (vector width, fused multiply-add): two
#: machines that differ in any of these may round the same program differently.
_ARITHMETIC_FLAGS = ("sse4_1", "sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512dq", "avx512bw",
                     "avx512vl", "avx512_bf16", "avx512_fp16", "amx_tile", "asimd", "sve", "sve2")


def _cpu_info() -> tuple[str, tuple[str, ...]]:
    """(model name, arithmetic feature flags) of this machine's processor; Linux's /proc/cpuinfo, else
    ``platform.processor()`` and no flags."""
    try:
        text = pathlib.Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return platform.processor() or platform.machine(), ()
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    model = fields.get("model name") or fields.get("CPU part") or platform.processor() or platform.machine()
    return model, tuple(f for f in _ARITHMETIC_FLAGS if f in flags)


@functools.lru_cache(maxsize=1)
def platform_fingerprint() -> dict[str, Any]:
    """What decides the rounding of a compiled JAX program on this machine's CPU: processor model and its
    arithmetic features (vector width, FMA), the number of CPUs (XLA splits reductions by thread), jax and jaxlib
    versions and any ``XLA_FLAGS``. Two runs with equal fingerprints give bit-identical draws for one seed; runs
    with different ones agree only to rounding (tests/test_golden_draws.py)."""
    import os

    import jax
    import jaxlib

    model, flags = _cpu_info()
    return {"machine": platform.machine(), "processor": model, "features": list(flags),
            "cpu_count": os.cpu_count() or 0, "jax": jax.__version__, "jaxlib": jaxlib.__version__,
            "xla_flags": os.environ.get("XLA_FLAGS", "")}


def _jsonable(value):
    if isinstance(value, (np.ndarray, np.generic)) or hasattr(value, "__array__"):
        arr = np.asarray(value)
        return arr.item() if arr.ndim == 0 else f"<array {arr.dtype} {list(arr.shape)}>"
    return value


def provenance_attrs(*, model_id: str | None, model_options: Mapping[str, Any], method: str,
                     options: Mapping[str, Any], priors: Mapping[str, Any], seed: int, data,
                     wall_seconds: float, compile_seconds: float = 0.0) -> dict[str, str]:
    """The attributes ``zoo.fit`` stores (see the module docstring)."""
    attrs = {
        "zoo_model": model_id or "<user program>",
        "zoo_model_options": json.dumps({k: _jsonable(v) for k, v in sorted(model_options.items())}, default=str),
        "zoo_method": method,
        "zoo_options": json.dumps({k: _jsonable(v) for k, v in sorted(options.items())}, default=str),
        "zoo_priors": json.dumps({site: prior_string(p) for site, p in sorted(priors.items())}),
        "zoo_seed": str(seed),
        "zoo_data_sha256": data_fingerprint(data),
        "zoo_wall_seconds": f"{wall_seconds:.3f}",
        "zoo_compile_seconds": f"{compile_seconds:.3f}",
    }
    attrs.update(software_versions())
    return attrs
