"""A multivariate normal whose factorizations are plain JAX (zoo.inference.linalg), for the zoo's programs.

NumPyro's multivariate normal factors its covariance or precision with JAX's LAPACK-backed Cholesky and scores
with a LAPACK triangular solve: jaxlib 0.10.2's LAPACK kernels, which deadlock the CPU runtime when two batched calls
are in flight on a 2-thread pool (see inference/linalg.py). The generic methods (NUTS, SVI, MAP) run the programs
with chains vectorized, so the programs use this distribution instead. Same law, same density; draws are
``loc + L eps`` with L a Cholesky factor of the covariance (precision given: ``L_P^{-T} eps``, L_P = chol(P)).
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpyro.distributions as dist
from numpyro.distributions import constraints

from zoo.inference.linalg import cholesky, inverse_from_cholesky, solve_lower, solve_lower_transpose

__all__ = ["MultivariateNormal"]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


class MultivariateNormal(dist.Distribution):
    """N(loc, covariance_matrix) or N(loc, precision_matrix^{-1}); loc (..., d), matrices (..., d, d).

    Exactly one of ``covariance_matrix`` and ``precision_matrix`` is given. batch_shape: the broadcast of loc's
    and the matrix's leading axes; event_shape (d,).
    """

    arg_constraints = {"loc": constraints.real_vector, "matrix": constraints.positive_definite}
    support = constraints.real_vector
    reparametrized_params = ["loc", "matrix"]
    pytree_data_fields = ("loc", "matrix", "factor")
    pytree_aux_fields = ("is_precision",)

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, *, validate_args=None):
        if (covariance_matrix is None) == (precision_matrix is None):
            raise ValueError("MultivariateNormal: give exactly one of covariance_matrix and precision_matrix")
        matrix = covariance_matrix if covariance_matrix is not None else precision_matrix
        self.is_precision = precision_matrix is not None
        matrix = jnp.asarray(matrix)
        loc = jnp.asarray(loc)
        batch_shape = jnp.broadcast_shapes(jnp.shape(loc)[:-1], matrix.shape[:-2])
        d = matrix.shape[-1]
        self.loc = jnp.broadcast_to(loc, batch_shape + (d,))
        self.matrix = jnp.broadcast_to(matrix, batch_shape + (d, d))   # the covariance, or the precision
        self.factor = cholesky(self.matrix)               # chol of the covariance, or of the precision
        super().__init__(batch_shape=batch_shape, event_shape=(d,), validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        eps = jax.random.normal(key, sample_shape + self.batch_shape + self.event_shape)
        if self.is_precision:   # x = loc + L_P^{-T} eps has covariance (L_P L_P')^{-1} = P^{-1}
            shift = jnp.vectorize(solve_lower_transpose, signature="(d,d),(d)->(d)")(self.factor, eps)
        else:
            shift = jnp.einsum("...ij,...j->...i", self.factor, eps)
        return self.loc + shift

    def log_prob(self, value):
        diff = value - self.loc
        log_diag = jnp.sum(jnp.log(jnp.diagonal(self.factor, axis1=-2, axis2=-1)), axis=-1)
        if self.is_precision:   # (x - m)' P (x - m) = |L_P' (x - m)|^2; log|Sigma|^{-1/2} = +sum log diag L_P
            z = jnp.einsum("...ji,...j->...i", self.factor, diff)
            half_logdet = -log_diag
        else:                   # |L^{-1} (x - m)|^2; log|Sigma|^{1/2} = sum log diag L
            z = jnp.vectorize(solve_lower, signature="(d,d),(d)->(d)")(self.factor, diff)
            half_logdet = log_diag
        d = self.event_shape[0]
        return -0.5 * jnp.sum(z**2, axis=-1) - half_logdet - d * _HALF_LOG_2PI

    @property
    def covariance_matrix(self):
        return inverse_from_cholesky(self.factor) if self.is_precision else self.matrix

    @property
    def precision_matrix(self):
        return self.matrix if self.is_precision else inverse_from_cholesky(self.factor)

    @property
    def mean(self):
        return self.loc

    @property
    def variance(self):
        return jnp.diagonal(self.covariance_matrix, axis1=-2, axis2=-1)
