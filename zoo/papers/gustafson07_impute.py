"""FULL's parameters and replicated features from the collapsed sampler's draws (Gustafson et al. 2007, FULL).

The collapsed sampler integrates every concept's (mu_k, Sigma_k) out (Appendix eq. 10) and draws only the labels
Y. Given a draw Y^(t), (mu_k, Sigma_k) has the normal-inverse-Wishart conditional of eq. 8-9 on the units labelled
k, so drawing them from it after the fact gives (Y^(t), mu^(t), Sigma^(t)) from the joint posterior: FULL's
parameters, for ``posterior``, and from them replicated features X_rep_i ~ N(mu_{Y_i}, Sigma_{Y_i}) (eq. 2), for
``posterior_predictive`` (``az.plot_ppc``). In FS and CVFS a concept's (mu_k, Sigma_k) live on its relevant
features M_k, which change from draw to draw, so an array over every feature would hold entries that are not
parameters of the draw (zero / identity placeholders): they are drawn the same way but only to replicate the
features (``replicate_selected_features``: relevant features from N(mu_k, Sigma_k), the others from the conditional
of N(delta, Omega), eq. 3/5), not stored.

Own random stream (the fit's seed folded with ``IMPUTE_STREAM``): the sampler's draws are untouched.
"""
from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from zoo.inference.driver import FAST_COMPILE_OPTIONS
from zoo.inference.label_feature.moves import temporary_concept_params

__all__ = ["IMPUTE_STREAM", "MAX_STORED", "impute_full", "replicate_features", "replicate_selected_features"]

#: the stream number of the imputation's key (jax.random.fold_in of the fit's seed)
IMPUTE_STREAM = 11
#: Sigma and the replicated features are stored up to this many numbers each (like label_proba's cap)
MAX_STORED = 2.0e7
#: Up to this many draws x units, the replicated features of FS / CVFS are computed by a program compiled without
#: XLA's backend optimization (``FAST_COMPILE_OPTIONS``): a short fit's pass is mostly its compile, which this cuts
#: by 40 %, while the slower code costs less than that up to here (compile + run, one CPU: CVFS 800 draws x 120 units
#: 6.4 -> 3.7 s, the run alone 0.2 -> 0.7 s; FS 800 x 300: 6.1 -> 4.0 s, run 0.5 -> 1.4 s; break-even 500,000-800,000;
#: issue 35). Only there: FULL's parameters and lp are recorded in the golden draws, which the option moves in the
#: last bits; the replicated features are not.
FAST_COMPILE_DRAW_UNITS = 400_000


class _Labels(NamedTuple):
    """What ``temporary_concept_params`` reads of a sweep's state: the labels and the (FULL: all-ones) masks."""
    Y: jnp.ndarray
    M: jnp.ndarray


def impute_full(problem, Y: np.ndarray, key, keep_sigma: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """mu (chain, draw, K+1, p) and Sigma (chain, draw, K+1, p, p) in standardized units, one eq. 8-9 draw per
    stored label draw ``Y`` (chain, draw, n); ``keep_sigma=False``: Sigma is drawn (mu's law needs it) but not
    kept (None), so a long run never holds the draws x (K+1) x p x p array."""
    leading, n = Y.shape[:2], Y.shape[2]
    n_concepts, p = problem.allowed.shape[1], problem.X.shape[1]
    keys = jax.random.split(key, int(np.prod(leading)))
    mu, Sigma = _full_params_of_draws(problem, keys, jnp.asarray(Y.reshape(-1, n)), keep_sigma)
    return (np.asarray(mu).reshape(leading + (n_concepts, p)),
            None if Sigma is None else np.asarray(Sigma).reshape(leading + (n_concepts, p, p)))


# Compiled once per shape, not once per fit: the problem's arrays are arguments, not constants of a closure (a new
# closure is a new function to jax.jit, so every fit compiled these again). XLA's defaults here: these draws are
# stored in ``posterior`` (recorded in the golden draws), which the options below would move in the last bits.
@partial(jax.jit, static_argnames="keep_sigma")
def _full_params_of_draws(problem, keys, Y, keep_sigma: bool):
    masks = jnp.ones((problem.allowed.shape[1], problem.X.shape[1]), bool)

    def one(args):
        k, y = args
        mu, Sigma = temporary_concept_params(problem, "full", _Labels(y, masks), k)
        return (mu, Sigma) if keep_sigma else (mu, None)

    return jax.lax.map(one, (keys, Y))


def replicate_features(Y: np.ndarray, mu: np.ndarray, Sigma: np.ndarray, mean: np.ndarray, scale: np.ndarray,
                       key) -> np.ndarray:
    """(chain, draw, n, p) X_rep_i ~ N(mu_{Y_i}, Sigma_{Y_i}) per draw, in the data's own units (the sampler's
    standardization undone: X = mean + scale * x). One chain at a time (the Cholesky factors per unit are the
    largest temporary)."""
    leading, n = Y.shape[:2], Y.shape[2]
    p = mu.shape[-1]
    out = np.empty(leading + (n, p))
    for c, k in enumerate(jax.random.split(key, leading[0])):
        y = Y[c][:, :, None]                                                  # (draw, n, 1)
        chol = np.linalg.cholesky(Sigma[c])                                   # (draw, K+1, p, p)
        z = np.asarray(jax.random.normal(k, (leading[1], n, p)), dtype=np.float64)
        m = np.take_along_axis(mu[c], y, axis=1)                              # (draw, n, p)
        L = np.take_along_axis(chol, y[..., None], axis=1)                    # (draw, n, p, p)
        out[c] = mean + scale * (m + np.einsum("dnij,dnj->dni", L, z))
    return out


def replicate_selected_features(problem, variant: str, Y: np.ndarray, M: np.ndarray, delta: np.ndarray,
                                Omega: np.ndarray, mean: np.ndarray, scale: np.ndarray, key) -> np.ndarray:
    """FS / CVFS: (chain, draw, n, p) replicated features in the data's units. Per draw: (mu_k, Sigma_k) from eq. 8-9
    on each concept's mask given the draw's labels ``Y`` (chain, draw, n) and indicators ``M`` (chain, draw, K+1, p:
    the sampler's layout), then X_rep_i ~ FeatureSelectionNormal(M_{Y_i}, mu_{Y_i}, Sigma_{Y_i}, delta, Omega)
    with the draw's (delta, Omega) (chain, draw, p) / (chain, draw, p, p)."""
    leading, n = Y.shape[:2], Y.shape[2]
    flat = lambda a: jnp.asarray(np.asarray(a).reshape((-1,) + np.asarray(a).shape[2:]))
    keys = jax.random.split(key, int(np.prod(leading)))
    compiled = _SELECTED_FEATURES_OF_DRAWS[keys.shape[0] * n <= FAST_COMPILE_DRAW_UNITS]
    x = compiled(problem, variant, keys, flat(Y), flat(M), flat(delta), flat(Omega))
    return mean + scale * np.asarray(x, dtype=np.float64).reshape(leading + (n, -1))


def _selected_features_of_draws(problem, variant: str, keys, Y, M, delta, Omega):
    """One replicated feature array per flattened draw (compiled once per shape and variant, as above)."""
    from zoo.inference.label_feature.state import concept_masks_of
    from zoo.models.feature_selection import sample_by_concept

    def one(args):
        k, y, m, d, o = args
        k_params, k_x = jax.random.split(k)
        mu, Sigma = temporary_concept_params(problem, variant, _Labels(y, m), k_params)
        # FeatureSelectionNormal(masks[y], mu[y], Sigma[y], d, o).sample(k_x), factorized per concept, not unit
        return sample_by_concept(k_x, y, concept_masks_of(variant, m), mu, Sigma, d, o)

    return jax.lax.map(one, (keys, Y, M, delta, Omega))


# with XLA's defaults (False) and with FAST_COMPILE_OPTIONS (True), for a short fit
_SELECTED_FEATURES_OF_DRAWS = {fast: jax.jit(_selected_features_of_draws, static_argnames="variant",
                                             compiler_options=FAST_COMPILE_OPTIONS if fast else None)
                               for fast in (False, True)}
