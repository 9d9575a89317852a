"""Tail-stable univariate truncated normals, exact for any mean in [-40, 40] (and far beyond).

``numpyro.distributions.TruncatedNormal(loc=-30, scale=1, low=0)`` returns ``inf``: its inverse-CDF needs
Phi(-30) ~ 5e-198 relative to 1 and underflows beyond ~ -37.5. Here:

- near the body (truncation point a < ``INVERSE_CDF_BELOW``) the inverse CDF of the *upper* tail,
  X = -Phi^{-1}(u Phi(-a)), which never forms 1 - Phi(a);
- in the tail (a >= ``INVERSE_CDF_BELOW``) Robert's (1995) exponential rejection sampler with the optimal rate
  alpha* = (a + sqrt(a^2 + 4)) / 2, acceptance probability >= 0.75 for every a >= 0.6 and -> 1 as a grows;
  it only evaluates exp(-(x - alpha)^2 / 2) of O(1) arguments, so it is exact for any a.

The vectorised rejection loop (``lax.while_loop``) re-proposes only for the entries not yet accepted.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax
from jax.scipy.special import log_ndtr, ndtr, ndtri

__all__ = ["standard_normal_tail", "sample_orthant_normal", "orthant_normal_log_prob", "INVERSE_CDF_BELOW"]

#: Truncation points below this use the inverse CDF; at and above it, Robert's rejection sampler.
INVERSE_CDF_BELOW = 0.6


def _inverse_cdf_tail(key: jax.Array, a: jnp.ndarray) -> jnp.ndarray:
    """X ~ N(0, 1) | X >= a by X = -Phi^{-1}(u Phi(-a)); accurate when Phi(-a) is not tiny (a < 0.6 here)."""
    tiny = jnp.finfo(jnp.result_type(float)).tiny
    u = jax.random.uniform(key, jnp.shape(a), minval=tiny, maxval=1.0)
    x = -ndtri(u * ndtr(-a))
    return jnp.maximum(x, a)  # guard the last ulp at u -> 1


def _robert_tail(key: jax.Array, a: jnp.ndarray, active: jnp.ndarray) -> jnp.ndarray:
    """X ~ N(0, 1) | X >= a (a > 0) by exponential rejection (Robert 1995), for the entries where ``active``."""
    a_pos = jnp.maximum(a, INVERSE_CDF_BELOW)
    rate = 0.5 * (a_pos + jnp.sqrt(a_pos * a_pos + 4.0))

    def propose(carry):
        key, x, done = carry
        key, k_exp, k_u = jax.random.split(key, 3)
        cand = a_pos + jax.random.exponential(k_exp, jnp.shape(a)) / rate
        log_u = jnp.log(jax.random.uniform(k_u, jnp.shape(a), minval=jnp.finfo(jnp.result_type(float)).tiny))
        accept = log_u <= -0.5 * (cand - rate) ** 2
        take = accept & ~done
        return key, jnp.where(take, cand, x), done | accept

    def not_finished(carry):
        return ~jnp.all(carry[2])

    # non-finite truncation points (NaN/inf means upstream) are never accepted: mark them done so the loop ends
    init = (key, a_pos, ~active | ~jnp.isfinite(a))
    _, x, _ = lax.while_loop(not_finished, propose, init)
    return x


def standard_normal_tail(key: jax.Array, a: jnp.ndarray) -> jnp.ndarray:
    """Draw X ~ N(0, 1) conditioned on X >= a, elementwise; a any shape, any finite value."""
    a = jnp.asarray(a, dtype=jnp.result_type(float))
    k_inv, k_rej = jax.random.split(key)
    in_tail = a >= INVERSE_CDF_BELOW
    body = _inverse_cdf_tail(k_inv, jnp.minimum(a, INVERSE_CDF_BELOW))
    tail = _robert_tail(k_rej, a, in_tail)
    return jnp.where(in_tail, tail, body)


def sample_orthant_normal(key: jax.Array, loc: jnp.ndarray, positive: jnp.ndarray) -> jnp.ndarray:
    """z ~ N(loc, 1) restricted to z > 0 where ``positive`` else to z < 0 (elementwise, same shapes).

    With s = +-1: s z ~ N(s loc, 1) on (0, inf), i.e. s z = s loc + X with X >= -s loc.
    """
    sign = jnp.where(positive, 1.0, -1.0)
    x = standard_normal_tail(key, -sign * loc)
    w = jnp.maximum(sign * loc + x, 0.0)
    # z = s * w is strictly on its side except for a measure-zero w == 0; keep it off the boundary
    w = jnp.where(w > 0, w, jnp.finfo(jnp.result_type(float)).tiny)
    return sign * w


def orthant_normal_log_prob(z: jnp.ndarray, loc: jnp.ndarray, positive: jnp.ndarray) -> jnp.ndarray:
    """Log density of ``sample_orthant_normal``'s law at z (-inf on the wrong side)."""
    sign = jnp.where(positive, 1.0, -1.0)
    on_side = sign * z > 0
    log_mass = log_ndtr(sign * loc)  # P(s z > 0) = Phi(s loc)
    log_pdf = -0.5 * (z - loc) ** 2 - 0.5 * jnp.log(2 * jnp.pi)
    return jnp.where(on_side, log_pdf - log_mass, -jnp.inf)
