"""Validation of options, one helper per kind of value: each returns the value in canonical form or raises a
``ValueError`` that names the option and what is wrong, before any computation.

Every checker takes ``(value, name)`` in that order. ``check_known`` refuses option names a method or model does not
have, listing the ones it has.
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Iterable, Mapping, Sequence

__all__ = ["check_known", "positive_int", "nonnegative_int", "positive_float", "nonnegative_float",
           "finite_float", "probability", "one_of", "boolean", "seed_value", "chain_method", "data_devices",
           "check_common_options",
           "COMMON_OPTIONS", "MAX_SEED", "CHAIN_METHODS"]

#: Seeds are integers in [0, MAX_SEED]: what ``jax.random.PRNGKey`` and NumPy's generators take on every platform.
MAX_SEED = 2**32 - 1


def check_known(given: Mapping[str, Any] | Iterable[str], known: Iterable[str], where: str) -> None:
    """ValueError naming the first unknown option of ``given`` and listing the ``known`` ones of ``where``."""
    known = sorted(set(known))
    unknown = sorted(set(given) - set(known))
    if unknown:
        plural = "s" if len(unknown) > 1 else ""
        raise ValueError(f"{', '.join(unknown)}: unknown option{plural} of {where}; "
                         f"known options: {', '.join(known) or '(none)'}")


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def positive_int(value, name: str) -> int:
    """An integer >= 1 (Python or NumPy integer; not a bool, not a float)."""
    if not _is_int(value) or value < 1:
        raise ValueError(f"{name}: expected a positive integer, got {value!r}")
    return int(value)


def nonnegative_int(value, name: str) -> int:
    """An integer >= 0."""
    if not _is_int(value) or value < 0:
        raise ValueError(f"{name}: expected a non-negative integer, got {value!r}")
    return int(value)


def finite_float(value, name: str) -> float:
    """A finite real number."""
    if not _is_real(value) or not math.isfinite(float(value)):
        raise ValueError(f"{name}: expected a finite number, got {value!r}")
    return float(value)


def positive_float(value, name: str) -> float:
    """A finite real number > 0."""
    if not _is_real(value) or not math.isfinite(float(value)) or value <= 0:
        raise ValueError(f"{name}: expected a finite positive number, got {value!r}")
    return float(value)


def nonnegative_float(value, name: str) -> float:
    """A finite real number >= 0."""
    if not _is_real(value) or not math.isfinite(float(value)) or value < 0:
        raise ValueError(f"{name}: expected a finite non-negative number, got {value!r}")
    return float(value)


def probability(value, name: str) -> float:
    """A real number in [0, 1]."""
    if not _is_real(value) or not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{name}: expected a probability in [0, 1], got {value!r}")
    return float(value)


def one_of(value, name: str, choices: Sequence) -> Any:
    """One of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name}: expected one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def boolean(value, name: str) -> bool:
    """True or False (NumPy booleans too), nothing else."""
    if type(value).__name__ not in ("bool", "bool_"):
        raise ValueError(f"{name}: expected True or False, got {value!r}")
    return bool(value)


def seed_value(seed, name: str = "seed") -> int:
    """The integer seed of a run. Accepted: a Python or NumPy integer in [0, 2**32 - 1], used as it is (a run's
    key is ``jax.random.PRNGKey(seed)``); or a JAX PRNG key (old-style uint32 (2,) or new-style typed), mapped to
    the integer ``jax.random.randint(key, (), 0, 2**31 - 1)`` (deterministic: the same key, the same run)."""
    if _is_int(seed):
        if not 0 <= seed <= MAX_SEED:
            raise ValueError(f"{name}: expected an integer in [0, 2**32 - 1], got {seed!r}")
        return int(seed)
    if type(seed).__module__.startswith("jax"):
        import jax
        import jax.numpy as jnp
        key = seed
        if not jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
            if key.shape != (2,) or key.dtype != jnp.uint32:
                raise ValueError(f"{name}: a JAX array seed must be a PRNG key (jax.random.key or PRNGKey), got "
                                 f"shape {key.shape} dtype {key.dtype}")
            key = jax.random.wrap_key_data(key)
        elif key.shape != ():
            raise ValueError(f"{name}: expected one PRNG key, got a batch of shape {key.shape}")
        return int(jax.random.randint(key, (), 0, 2**31 - 1))
    raise ValueError(f"{name}: expected a non-negative integer or a JAX PRNG key, got {type(seed).__name__} {seed!r}")


#: How the chains of an MCMC method run (zoo.inference.driver.CHAIN_METHODS, the one list): "sequential" one after
#: another, "vectorized" under vmap, "parallel" sharded over ``jax.devices()`` (a mesh axis of chains; each chain's
#: draws those of the sequential run with the same seed).
CHAIN_METHODS = ("sequential", "vectorized", "parallel")


def chain_method(value, name: str = "chain_method") -> str:
    """One of ``CHAIN_METHODS``: every MCMC method accepts each of them."""
    if not isinstance(value, str) or value not in CHAIN_METHODS:
        raise ValueError(f"{name}: expected one of {', '.join(map(repr, CHAIN_METHODS))}, got {value!r}")
    return value


def data_devices(value, name: str = "data_devices") -> int | None:
    """None (the data on one device), or how many of ``jax.devices()`` the data are sharded over (rows split,
    sufficient statistics psum'd: ``zoo.inference.sharding``); at least 1 and at most ``jax.device_count()``."""
    if value is None:
        return None
    import jax
    count = jax.device_count()
    if not _is_int(value) or not 1 <= int(value) <= count:
        raise ValueError(f"{name}: expected None or an integer from 1 to jax.device_count() = {count}, got {value!r}"
                         + (" (more host devices: XLA_FLAGS=--xla_force_host_platform_device_count=N before JAX "
                            "starts)" if _is_int(value) and int(value) > count else ""))
    return int(value)


def samples_count(value, name: str = "num_samples"):
    """A positive int, or "auto" (run until the headline sites converge: the methods that support it say so)."""
    if isinstance(value, str) and value == "auto":
        return value
    return positive_int(value, name)


#: Options that several methods share, each checked the same way wherever it appears (before the method runs).
COMMON_OPTIONS = {
    "num_chains": positive_int, "num_samples": samples_count, "num_warmup": nonnegative_int,
    "max_iter": positive_int, "num_steps": positive_int, "thinning": positive_int, "tol": positive_float,
    "learning_rate": positive_float, "progress_bar": boolean, "chain_method": chain_method,
    "data_devices": data_devices,
}


def check_common_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with the shared ones (``COMMON_OPTIONS``) checked and in canonical form (e.g. NumPy integers
    made Python ints); the others unchanged."""
    return {k: COMMON_OPTIONS[k](v, k) if k in COMMON_OPTIONS else v for k, v in options.items()}
