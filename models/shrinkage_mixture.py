"""Carbonetto, de Freitas, Gustafson & Thompson (2003): Bayesian feature weighting by shrinkage.

Two NumPyro programs (plain arrays in; the reference joint densities of ``zoo.inference.mixture.em``):

- ``shrinkage_mixture``: x_i ~ sum_c lambda_c N(mu_c, Sigma_c), lambda ~ Dir(nu), mu_c ~ N(mu*, T),
  T = diag(tau2), tau2_k ~ IG(a, b), Sigma_c ~ IW(alpha, alpha Sigma*) (paper Sec. 4, MODELS.md 1a).
  The allocations z_i are summed out (``MixtureSameFamily``), so NUTS and optax apply directly.
- ``translation_model``: one Gaussian per vocabulary word; region r of image n has density
  (1/L_n) sum_{w in image n} N(b_r; mu_w, Sigma_w) (paper Sec. 5.1, MODELS.md 1b), same priors on mu, Sigma, T.

Diagonal covariances use the IW density restricted to diagonal matrices, which factorizes into
Sigma_ck ~ IG((alpha + D - 1)/2, alpha Sigma*_kk / 2): the M-step of the paper with the off-diagonals dropped
is exactly its mode. Prior sites a user may swap declaratively: ``tau2`` and ``lambda``.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from jax.scipy.special import gammaln, multigammaln
from numpyro.distributions import constraints

from zoo.inference.linalg import cholesky, spd_inverse, spd_logdet, spd_solve   # not LAPACK: inference/linalg.py
from zoo.models.gaussian import MultivariateNormal

__all__ = ["InverseWishart", "ImproperInverseGamma", "default_priors", "shrinkage_mixture", "translation_model"]


class InverseWishart(dist.Distribution):
    """Inverse-Wishart with ``df`` degrees of freedom and scale matrix ``scale`` (D, D).

    density ∝ |Sigma|^{-(df + D + 1)/2} exp(-tr(scale Sigma^{-1}) / 2); requires df > D - 1.
    """

    arg_constraints = {"df": constraints.positive, "scale": constraints.positive_definite}
    support = constraints.positive_definite
    reparametrized_params = []

    def __init__(self, df, scale, *, validate_args=None):
        self.df = jnp.asarray(df)
        self.scale = jnp.asarray(scale)
        dim = self.scale.shape[-1]
        batch_shape = jnp.broadcast_shapes(jnp.shape(self.df), self.scale.shape[:-2])
        super().__init__(batch_shape=batch_shape, event_shape=(dim, dim), validate_args=validate_args)

    def log_prob(self, value):
        dim = self.event_shape[-1]
        logdet_scale = spd_logdet(self.scale)
        logdet_value = spd_logdet(value)
        trace = jnp.trace(spd_solve(value, jnp.broadcast_to(self.scale, value.shape)), axis1=-2, axis2=-1)
        return (0.5 * self.df * logdet_scale - 0.5 * self.df * dim * jnp.log(2.0)
                - multigammaln(0.5 * self.df, dim) - 0.5 * (self.df + dim + 1.0) * logdet_value - 0.5 * trace)

    def sample(self, key, sample_shape=()):
        # Bartlett: Sigma^{-1} ~ Wishart(df, scale^{-1}) = L A A' L', L = chol(scale^{-1})
        dim = self.event_shape[-1]
        shape = sample_shape + self.batch_shape
        key_chi, key_normal = jax.random.split(key)
        dof = self.df[..., None] - jnp.arange(dim)
        chi2 = 2.0 * jax.random.gamma(key_chi, jnp.broadcast_to(0.5 * dof, shape + (dim,)))
        lower = jnp.tril(jax.random.normal(key_normal, shape + (dim, dim)), -1)
        A = lower + jnp.sqrt(chi2)[..., None] * jnp.eye(dim)
        L = cholesky(spd_inverse(self.scale))
        LA = L @ A
        precision = LA @ jnp.swapaxes(LA, -1, -2)
        return spd_inverse(precision)


class ImproperInverseGamma(dist.Distribution):
    """The unnormalized density (x)^{-a-1} exp(-b / x) for a <= 0 or b = 0 (the paper's a = -1, b = 1e-5).

    It cannot be sampled (it is improper); MAP-EM and NUTS only need its log density.
    """

    arg_constraints = {"concentration": constraints.real, "rate": constraints.nonnegative}
    support = constraints.positive

    def __init__(self, concentration, rate, *, validate_args=None):
        self.concentration, self.rate = jnp.asarray(concentration), jnp.asarray(rate)
        batch_shape = jnp.broadcast_shapes(jnp.shape(self.concentration), jnp.shape(self.rate))
        super().__init__(batch_shape=batch_shape, validate_args=validate_args)

    def log_prob(self, value):
        return -(self.concentration + 1.0) * jnp.log(value) - self.rate / value

    def sample(self, key, sample_shape=()):
        raise NotImplementedError("ImproperInverseGamma is an improper prior and cannot be sampled; "
                                  "use a proper InverseGamma(a, b) with a, b > 0 for prior simulation")


def tau2_prior(a: float, b: float) -> dist.Distribution:
    """IG(a, b) on each tau_k^2; the unnormalized form when the paper's improper setting (a <= 0) is used."""
    if a > 0 and b > 0:
        return dist.InverseGamma(a, b)
    return ImproperInverseGamma(a, b)


def default_priors(n_components: int, a: float, b: float, nu: float) -> dict:
    """The declaratively swappable prior sites: tau2 (per feature) and lambda (mixing proportions)."""
    return {"tau2": tau2_prior(a, b), "lambda": dist.Dirichlet(jnp.full((n_components,), float(nu)))}


def _tau2_site(priors, n_features):
    prior = priors["tau2"]
    if prior.event_shape == ():
        prior = prior.expand([n_features]).to_event(1)
    return numpyro.sample("tau2", prior)


def _component_params(n_comp, n_features, mu_star, sigma_star, alpha, tau2, diagonal, known_covariance,
                      plate: str = "component"):
    """mu_c ~ N(mu*, T) and Sigma_c ~ IW(alpha, alpha Sigma*) (or its diagonal restriction, or known); ``plate``
    names the components' plate (the translation model's components are the words)."""
    with numpyro.plate(plate, n_comp):
        mu = numpyro.sample("mu", dist.Normal(mu_star, jnp.sqrt(tau2)).to_event(1))
        if known_covariance is not None:
            cov = jnp.broadcast_to(known_covariance, (n_comp,) + known_covariance.shape[-(1 if diagonal else 2):])
        elif diagonal:
            shape = 0.5 * (alpha + n_features - 1.0)
            cov = numpyro.sample("Sigma", dist.InverseGamma(shape, 0.5 * alpha * jnp.diagonal(sigma_star)).to_event(1))
        else:
            cov = numpyro.sample("Sigma", InverseWishart(alpha, alpha * sigma_star))
    if diagonal:
        components = dist.Normal(mu, jnp.sqrt(cov)).to_event(1)
    else:
        components = MultivariateNormal(mu, covariance_matrix=cov)
    return components


def shrinkage_mixture(X, *, n_components: int, mu_star, sigma_star, alpha: float, priors: dict,
                      diagonal: bool = False, known_covariance=None):
    """Shrinkage Gaussian mixture; X (N, D), mu_star (D,), sigma_star (D, D); known_covariance (D,) / (D, D)."""
    n_points, n_features = X.shape
    weights = numpyro.sample("lambda", priors["lambda"])
    tau2 = _tau2_site(priors, n_features)
    components = _component_params(n_components, n_features, mu_star, sigma_star, alpha, tau2, diagonal,
                                   known_covariance)
    with numpyro.plate("point", n_points):
        numpyro.sample("x", dist.MixtureSameFamily(dist.Categorical(probs=weights), components), obs=X)


def translation_model(X, allowed, *, mu_star, sigma_star, alpha: float, priors: dict, diagonal: bool = False):
    """Discrete-Gaussian translation model; X (R, D) region features, allowed (R, W) bool: word w is a keyword of
    region r's image. p(b_r) = (1 / L_n) sum_{w allowed} N(b_r; mu_w, Sigma_w)."""
    n_regions, n_features = X.shape
    n_words = allowed.shape[1]
    tau2 = _tau2_site(priors, n_features)
    components = _component_params(n_words, n_features, mu_star, sigma_star, alpha, tau2, diagonal, None,
                                   plate="word")
    probs = allowed / jnp.sum(allowed, axis=1, keepdims=True)
    with numpyro.plate("region", n_regions):
        mixture = dist.MixtureSameFamily(dist.Categorical(probs=probs), components.expand([n_regions, n_words]))
        numpyro.sample("x", mixture, obs=X)
