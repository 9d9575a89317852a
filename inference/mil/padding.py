"""Padding kernel-MIL problems to shared shapes, so that many fits (cross-validation folds) run one compiled sampler.

The blocked Gibbs sampler (``zoo.inference.mil.gibbs``) takes its data as traced arrays: problems of equal shapes
and settings reuse one compilation. Folds of a cross-validation differ in their numbers of instances N, bags G,
the longest bag n_max and the number of bags whose sign pattern is random (``dp_groups``). ``pad_problem`` embeds a
problem in larger shapes without changing its posterior:

* instances N -> N_pad: zero rows of psi (their f is 0), in no group, their z starts at 0 and is never drawn, so
  every z_i, b = Psi'z and ||z - f||^2 are those of the real instances; the scale move's Gamma shape counts the
  real ones (``MILProblem.n_instances``);
* basis functions M -> M_pad: zero columns, ``basis_mask`` False: never proposed on in the kernel-selection sweep
  (so never born), and the Beta-Bernoulli prior on gamma counts the M real ones; the Gram block of a padding
  centre is ridge * I and is never read;
* groups G -> G_pad: empty groups (no valid slot, size 0, code FREE): log p(obs_g | f) = 0, no sign to draw;
  slots n_max -> n_max_pad: invalid slots (index 0, ignored everywhere);
* dp_groups -> length n_dp: filled with the last padding group (empty, so every duplicate writes the same
  nothing); a padded problem therefore needs G_pad > G when it has fewer random-pattern groups than n_dp.

The padded chain has the same law on the real coordinates as the unpadded one (tests/papers/test_mil_padding.py: the
kernel-selection move by enumeration, the full sweep by the joint-distribution check), not the same random
numbers: JAX draws arrays of another length from the same key differently.
"""
from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from zoo.inference.mil.constraint_codes import FREE
from zoo.inference.mil.gibbs import MILProblem
from zoo.inference.mil.orthant_sampler import GroupLayout

__all__ = ["PaddedShape", "shared_shape", "pad_problem"]


class PaddedShape(NamedTuple):
    """The shared shapes: instances, basis functions, groups, slots per group, random-pattern groups."""
    n_instances: int
    n_basis: int
    n_groups: int
    n_max: int
    n_dp: int


def _shape_of(problem: MILProblem) -> PaddedShape:
    n, m = problem.psi.shape
    g, n_max = problem.layout.index.shape
    n_dp = 0 if problem.dp_groups is None else int(problem.dp_groups.shape[0])
    return PaddedShape(n, m, g, n_max, n_dp)


def shared_shape(problems) -> PaddedShape:
    """The smallest shapes holding every problem (one padding group more than the most groups, for the
    dp_groups filler); basis functions: as many as the most, plus the largest column excess over instances."""
    shapes = [_shape_of(p) for p in problems]
    if not shapes:
        raise ValueError("problems: need at least one problem")
    if len({p.dp_groups is None for p in problems}) != 1 or len({p.log_weight is None for p in problems}) != 1:
        raise ValueError("problems: every problem must have dp_groups and log_weight alike (all None or none)")
    return PaddedShape(max(s.n_instances for s in shapes), max(s.n_basis for s in shapes),
                       max(s.n_groups for s in shapes) + 1, max(s.n_max for s in shapes),
                       max(s.n_dp for s in shapes))


def _pad(a: np.ndarray, shape: tuple, fill) -> np.ndarray:
    out = np.full(shape, fill, dtype=a.dtype)
    out[tuple(slice(0, k) for k in a.shape)] = a
    return out


def pad_problem(problem: MILProblem, shape: PaddedShape) -> MILProblem:
    """``problem`` embedded in ``shape`` (see the module docstring); the real instances, basis functions and groups
    keep their indices (0..N-1, 0..M-1, 0..G-1), so draws of gamma / beta are read back as ``[..., :M]``."""
    if problem.basis_mask is not None or problem.n_instances is not None:
        raise ValueError("problem: already padded")
    if problem.psi is None:
        raise ValueError("problem: rows on demand (no stored psi) cannot be padded; prepare with rows='stored'")
    own = _shape_of(problem)
    for name, have, want in zip(PaddedShape._fields, own, shape):
        if have > want:
            raise ValueError(f"shape.{name}: {want} is smaller than the problem's {have}")
    if own.n_dp < shape.n_dp and own.n_groups >= shape.n_groups:
        raise ValueError("shape.n_groups: needs a padding group (more than the problem's) to fill dp_groups")
    n, m = own.n_instances, own.n_basis
    psi = _pad(np.asarray(problem.psi), (shape.n_instances, shape.n_basis), 0.0)
    ridge = float(problem.ridge)
    gram = _pad(np.asarray(problem.gram), (shape.n_basis, shape.n_basis), 0.0)
    gram[np.arange(m, shape.n_basis), np.arange(m, shape.n_basis)] = ridge
    lay = problem.layout
    layout = GroupLayout(index=_pad(np.asarray(lay.index), (shape.n_groups, shape.n_max), 0),
                         valid=_pad(np.asarray(lay.valid), (shape.n_groups, shape.n_max), False),
                         size=_pad(np.asarray(lay.size), (shape.n_groups,), 0))
    kind = _pad(np.asarray(problem.kind), (shape.n_groups,), FREE)
    log_weight = None
    if problem.log_weight is not None:    # counts above a group's size are impossible; an empty group has count 0
        log_weight = _pad(np.asarray(problem.log_weight), (shape.n_groups, shape.n_max + 1), -np.inf)
        log_weight[own.n_groups:, 0] = 0.0
    dp_groups = None
    if problem.dp_groups is not None:
        dp_groups = _pad(np.asarray(problem.dp_groups), (shape.n_dp,), shape.n_groups - 1)
    return MILProblem(psi=jnp.asarray(psi), gram=jnp.asarray(gram), layout=GroupLayout(*map(jnp.asarray, layout)),
                      kind=jnp.asarray(kind), log_weight=None if log_weight is None else jnp.asarray(log_weight),
                      ridge=problem.ridge, dp_groups=None if dp_groups is None else jnp.asarray(dp_groups),
                      psi_t=None if problem.psi_t is None else jnp.asarray(psi.T), hyper=problem.hyper,
                      basis_mask=jnp.asarray(np.arange(shape.n_basis) < m),
                      n_instances=jnp.asarray(n, jnp.int32))
