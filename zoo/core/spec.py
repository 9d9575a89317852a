"""``ModelSpec``: a model ready to fit (what ``zoo.model`` returns and ``zoo.fit`` takes)."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

__all__ = ["ModelSpec"]


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """A model ready to fit: its id, its NumPyro program, the options it was built with and its priors.

    ``program`` is a plain NumPyro function; ``build_program_args(data)`` (from the entry) turns a data object
    into the program's keyword arguments. ``priors`` maps site name -> numpyro distribution (already parsed).
    For a user's own program (a callable passed to ``zoo.fit``) ``id`` is ``None``.
    """

    id: str | None
    program: Callable
    options: Mapping[str, Any]
    priors: Mapping[str, Any]
    arguments: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # as passed to zoo.model (to rebuild it)
    #: the model's own priors (site -> distribution) before the user's: a saved fit records only what differs
    default_priors: Mapping[str, Any] = dataclasses.field(default_factory=dict, repr=False, compare=False)

    def __repr__(self) -> str:  # short, notebook-friendly: each prior with its parameters
        from zoo.core.provenance import prior_string
        pri = ", ".join(f"{k}: {prior_string(v)}" for k, v in self.priors.items())
        return f"ModelSpec({self.id!r}, options={dict(self.options)!r}, priors={{{pri}}})"
