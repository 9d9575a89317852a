"""Prior adapters below the user layer: the numbers a conjugate update (or a program) needs, read off a prior
distribution, with the family and the shape checked and ValueErrors naming the site.

They live in ``zoo.models`` so that both the NumPyro programs (``models/``, which may not import ``zoo.core.priors``)
and the paper modules (through ``zoo.core.priors``, which re-exports them) use one definition.
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist

__all__ = ["dirichlet_concentration", "family_error", "concrete"]


def family_error(site: str, wanted: str, prior: Any, needed_by: str) -> ValueError:
    """The ValueError for a prior of the wrong family at ``site``."""
    return ValueError(f"priors[{site!r}]: {needed_by} needs a prior of family {wanted}; got "
                      f"{type(prior).__name__}")


def concrete(site: str, value: Any) -> np.ndarray:
    """``value`` as a float64 NumPy array; a traced value is a ValueError naming the site."""
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, jax.errors.ConcretizationTypeError):
        raise ValueError(f"priors[{site!r}]: the prior's parameters must be concrete numbers, not traced values") \
            from None


def dirichlet_concentration(prior: dist.Distribution, size: int, site: str, *, minimum: float | None = None,
                            needed_by: str = "this method"):
    """The (size,) concentration of a Dirichlet prior given with length 1 (symmetric) or ``size``.

    Concrete parameters give a float64 NumPy array; a program traced with a traced prior (``jax.jit`` over the
    concentration) gets a JAX array, with the shape checked all the same. ``minimum`` (e.g. 1 for a MAP M-step
    that must stay interior) is checked elementwise and needs concrete numbers.
    """
    if not isinstance(prior, dist.Dirichlet):
        raise family_error(site, "Dirichlet", prior, needed_by)
    traced = isinstance(prior.concentration, jax.core.Tracer)
    conc = jnp.asarray(prior.concentration) if traced and minimum is None else concrete(site, prior.concentration)
    if conc.ndim != 1 or conc.shape[0] not in (1, size):
        raise ValueError(f"priors[{site!r}]: concentration must have length 1 (symmetric) or {size}, "
                         f"got shape {conc.shape}")
    if traced and minimum is None:
        return jnp.broadcast_to(conc, (size,))
    if minimum is not None and np.any(conc < minimum):
        raise ValueError(f"priors[{site!r}]: {needed_by} needs Dirichlet concentrations >= {minimum}, got {conc}")
    return np.broadcast_to(conc, (size,)).copy()
