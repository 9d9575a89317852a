"""Posterior predictives of masked-NIW concepts kept current under one-unit moves (Gustafson et al. 2007, eq. 6).

The collapsed label moves ask, for each unit, the predictive density of its features under every concept's posterior
(eq. 6's ratio: a multivariate t, ``collapsed_niw.niw_log_predictive``). Refactoring S_MM for every unit would cost
O(p^3) per unit and concept; the cache below keeps S_MM^{-1} and log|S_MM| of every (concept, mask) entry and
updates them by Sherman-Morrison and the matrix determinant lemma in O(p^2) when a unit joins or leaves.
The masked-NIW algebra itself (priors, posteriors, marginals, samplers) is in ``collapsed_niw``.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.special import gammaln

from zoo.inference.label_feature.collapsed_niw import ConceptPrior, concept_niw_prior, masked_cholesky, niw_posterior
from zoo.inference.linalg import inverse_from_cholesky, logdet_from_cholesky

__all__ = ["PredictiveCache", "predictive_cache", "cache_log_predictive", "t_log_normalizer", "t_log_predictive",
           "cache_quad", "concept_normalizer_table", "cache_log_predictive_loo", "cache_shift", "cache_shift_entries"]


# ------------------------------------------------------------------ predictives under one-unit moves (rank one)
# Adding x to a concept's units changes its eq. 8-9 posterior by rho' = rho + 1, nu' = nu + 1,
# mean' = (rho mean + x) / (rho + 1), S' = S + rho / (rho + 1) (x - mean)(x - mean)'; removing it (x among them)
# S' = S - rho / (rho - 1) (x - mean)(x - mean)'. Sherman-Morrison and the determinant lemma then keep S_MM^{-1}
# and log|S_MM| current in O(p^2) per move, with no factorization inside a sequential label scan.


class PredictiveCache(NamedTuple):
    """Posterior of C (concept, mask) pairs: nu (C,), rho (C,), mean (C, p), inv (C, p, p) = S_MM^{-1} zero-padded,
    logdet (C,) = log|S_MM|, mask (C, p) bool."""
    nu: jnp.ndarray
    rho: jnp.ndarray
    mean: jnp.ndarray
    inv: jnp.ndarray
    logdet: jnp.ndarray
    mask: jnp.ndarray


def predictive_cache(cp: ConceptPrior, counts, totals, scatters, masks) -> PredictiveCache:
    """The cache of each concept's units (counts (C,), totals (C, p), scatters (C, p, p)) on its mask (C, p)."""
    priors = jax.vmap(concept_niw_prior, in_axes=(None, 0))(cp, masks)
    post = jax.vmap(niw_posterior)(priors, counts, totals, scatters)
    L = jax.vmap(masked_cholesky)(post.S, masks)
    m = masks.astype(post.S.dtype)
    inv = inverse_from_cholesky(L)
    return PredictiveCache(post.nu, post.rho, post.mean, inv * m[:, :, None] * m[:, None, :], logdet_from_cholesky(L),
                           masks)


def t_log_normalizer(nu, rho, d) -> jnp.ndarray:
    """The constant of ``niw_log_predictive`` (see ``t_log_predictive``): lgamma((nu + 1)/2) - lgamma(df/2)
    - d/2 log(pi (rho + 1)/rho), df = nu - d + 1."""
    return gammaln(0.5 * (nu + 1.0)) - gammaln(0.5 * (nu - d + 1.0)) - 0.5 * d * jnp.log(jnp.pi * (rho + 1.0) / rho)


def t_log_predictive(nu, rho, d, quad, logdet, normalizer=t_log_normalizer) -> jnp.ndarray:
    """``niw_log_predictive`` from the posterior's (nu, rho), the dimension d = |M|, quad = (x - mean)' S_MM^{-1}
    (x - mean) on M and logdet = log|S_MM| (broadcasting): the multivariate t of eq. 6's ratio. With
    df = nu - d + 1 and factor = (rho + 1) / (rho df), df factor = (rho + 1) / rho, so
        log t = lgamma((nu + 1)/2) - lgamma(df/2) - d/2 log(pi (rho + 1)/rho) - logdet/2
                - (nu + 1)/2 log(1 + quad rho / (rho + 1)).
    ``normalizer(nu, rho, d)``: the first three terms (``t_log_normalizer``, or a lookup where they are known in
    advance: ``concept_normalizer_table``)."""
    return normalizer(nu, rho, d) - 0.5 * logdet - 0.5 * (nu + 1.0) * jnp.log1p(quad * rho / (rho + 1.0))


def concept_normalizer_table(cp: ConceptPrior, masks, size: int):
    """``t_log_normalizer`` as a lookup for cache entries with these masks (C, p) and up to size - 1 units each:
    with nu = d + a_extra + c and rho = b + c (c units, ``concept_niw_prior``) it depends on c alone, and its two
    gammaln terms are g(c + d) - g(c) with g(m) = gammaln((a_extra + 1 + m)/2). Why: in the joint move's sequential
    unit loop the Lanczos series of gammaln took most of each step. Returns normalizer(nu, rho, d) -> (C,)."""
    p = masks.shape[-1]
    d = masks.astype(jnp.float64).sum(-1)
    c = jnp.arange(size)
    g = gammaln(0.5 * (cp.a_extra + 1.0 + jnp.arange(size + p)))
    rho = cp.b + c
    table = (g[c[None, :] + d[:, None].astype(jnp.int32)] - g[c][None, :]
             - 0.5 * d[:, None] * jnp.log(jnp.pi * (rho + 1.0) / rho)[None, :])
    rows = jnp.arange(masks.shape[0])
    return lambda nu, rho, d_: table[rows, jnp.round(nu - d - cp.a_extra).astype(jnp.int32)]


def cache_quad(cache: PredictiveCache, x) -> jnp.ndarray:
    """(C,) (x - mean)' S_MM^{-1} (x - mean) on each entry's mask."""
    r = (x - cache.mean) * cache.mask.astype(cache.mean.dtype)
    return jnp.sum(cache.inv * r[:, :, None] * r[:, None, :], axis=(1, 2))   # elementwise: fuses on CPU


def cache_log_predictive(cache: PredictiveCache, x) -> jnp.ndarray:
    """(C,) ``niw_log_predictive`` of x (p,) under every entry of the cache."""
    d = cache.mask.astype(cache.mean.dtype).sum(-1)
    return t_log_predictive(cache.nu, cache.rho, d, cache_quad(cache, x), cache.logdet)


def cache_log_predictive_loo(cache: PredictiveCache, x, own, normalizer=t_log_normalizer) -> jnp.ndarray:
    """(C,) ``niw_log_predictive`` of x (p,) under every entry, where the entries ``own`` (C,) bool hold x among
    their units and are evaluated with x left out, without changing the cache: removing x gives rho- = rho - 1,
    nu- = nu - 1, x - mean- = rho / (rho - 1) (x - mean) and S- = S - s r r' (s = rho / (rho - 1), r = x - mean),
    so with a = r' S^{-1} r, Sherman-Morrison and the determinant lemma give r' S-^{-1} r = a / (1 - s a) and
    log|S-| = log|S| + log(1 - s a): scalars of the quadratic form the other entries need anyway. ``normalizer``: see
    ``t_log_predictive``."""
    d = cache.mask.astype(cache.mean.dtype).sum(-1)
    a = cache_quad(cache, x)
    rho_minus = jnp.where(own, cache.rho - 1.0, cache.rho)
    s = cache.rho / jnp.where(own, rho_minus, 1.0)
    one_minus = jnp.where(own, 1.0 - s * a, 1.0)
    quad = jnp.where(own, s * s * a / one_minus, a)
    return t_log_predictive(jnp.where(own, cache.nu - 1.0, cache.nu), rho_minus, d, quad,
                            cache.logdet + jnp.log(one_minus), normalizer)


def cache_shift(cache: PredictiveCache, x, sign) -> PredictiveCache:
    """Add x (p,) to the entries where sign (C,) is +1, remove it (x among their units) where -1, leave the entries
    where it is 0 (the rank-one updates of the block comment above, dense over the entries: no gather or scatter)."""
    sign = jnp.asarray(sign, cache.mean.dtype)
    m = cache.mask.astype(cache.mean.dtype)
    r = (x - cache.mean) * m
    rho_new = cache.rho + sign
    s = sign * cache.rho / jnp.where(sign == 0, 1.0, rho_new)        # +rho/(rho+1), -rho/(rho-1), 0
    v = jnp.sum(cache.inv * r[:, None, :], axis=-1)
    denom = 1.0 + s * jnp.sum(r * v, -1)
    return cache._replace(nu=cache.nu + sign, rho=rho_new,
                          mean=(cache.rho[:, None] * cache.mean + sign[:, None] * x) / rho_new[:, None],
                          inv=cache.inv - (s / denom)[:, None, None] * v[:, :, None] * v[:, None, :],
                          logdet=cache.logdet + jnp.log(denom))


def cache_shift_entries(cache: PredictiveCache, x, entries, sign) -> PredictiveCache:
    """``cache_shift`` on the listed entries only, one after another: add x (p,) to entry ``entries[i]`` where
    sign[i] is +1, remove it where -1, nothing where 0 (entries (m,) int, sign (m,)). Why: a unit moving between two
    concepts changes 2 of the C entries (4 with the proposed masks), and the dense form reads and rewrites all C
    (p, p) inverses; slices (not gathers/scatters) so XLA updates the cache in place."""
    def one(i, cache):
        e = entries[i]
        part = cache_shift(jax.tree_util.tree_map(lambda a: jax.lax.dynamic_slice_in_dim(a, e, 1), cache), x,
                           sign[i][None])
        return jax.tree_util.tree_map(lambda a, b: jax.lax.dynamic_update_slice_in_dim(a, b, e, 0), cache, part)
    return jax.lax.fori_loop(0, entries.shape[0], one, cache, unroll=True)
