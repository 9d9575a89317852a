"""Gustafson, Thompson & de Freitas (2007): semi-supervised region labelling with Bayesian feature selection.

Three NumPyro programs in one (``variant`` = "full", "fs", "cvfs") over units = image segments:

- labels ``Y`` (n,) in {0..K} (0 = garbage), uniform over S_i = {0} u keywords(i) (Sec. 3: lambda fixed uniform),
  or, with ``garbage_weight`` = w != 1, Pr(Y = 0) proportional to w and each keyword of S_i to 1 (not in the
  paper: the garbage-class prior as a choice, ``label_prior_probs``), with the coverage constraint Y_i in C_i (every keyword of image i labels at least one of its segments) as a
  0/-inf factor;
- inclusion indicators ``M``: FULL none (all features relevant); FS one vector (p,) shared by all concepts, uniform
  prior (Sec. 4); CVFS one row per keyword (K, p) with pi(M | alpha) = prod_j alpha_j^{M.j}(1-alpha_j)^{K+1-M.j}
  and alpha_j ~ omega Beta(1, g) + (1 - omega) Beta(g, 1) (Sec. 5); the garbage row M_0 = 0 is the observed site
  ``M_garbage`` so that the (1 - alpha_j) factor of row 0 in the paper's prior is kept;
- per concept (mu_k, Sigma_k) on the relevant features: Sigma_k,MM ~ IW_{d_k + a_extra}((v_scale d_k I)^{-1}),
  mu_k,M | Sigma_k ~ N(0, Sigma_k,MM / b) (Sec. 3-5: a_extra = 2, v_scale = 1/2, b = 1). The program draws a
  p x p ``Sigma`` with p + a_extra degrees of freedom and scale diag(v_scale d_k on M, 1 off M): its M x M block has
  exactly that law (marginal property of the inverse-Wishart); the other entries do not touch the data;
- features: X_M | Y=k ~ N(mu_k,M, Sigma_k,MM), X_{M^c} | X_M ~ the conditional of N_p(delta, Omega) (eq. 3, 5);
  (delta, Omega) fixed (FS: sample mean and covariance) or, in CVFS, Omega ~ IW_nu0(Psi0^{-1}),
  delta | Omega ~ N(delta0, Omega / kappa0) (our weak default: nu0 = p + 2, Psi0 = I, kappa0 = 1, delta0 = 0).

``collapsed_log_density`` is the same joint with (mu, Sigma) integrated out (Appendix eq. 10); the custom sampler
in ``zoo.inference.label_feature.gibbs`` targets it.
"""
from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints

from zoo.inference.linalg import cholesky, spd_inverse   # not LAPACK: see inference/linalg.py
from zoo.models.gaussian import MultivariateNormal
from zoo.models.shrinkage_mixture import InverseWishart
from zoo.inference.label_feature.collapsed_niw import (ConceptPrior, collapsed_concept_log_density,
                                                       gaussian_logpdf_masked, masked_cholesky, masked_matrix)

__all__ = ["VARIANTS", "ConceptPrior", "DeltaOmegaPrior", "FeatureSelectionNormal", "feature_selection_model",
           "concept_masks", "coverage_ok", "collapsed_log_density", "default_alpha_prior", "default_priors",
           "program_priors", "ConceptCovariance", "ConceptMean", "BackgroundCovariance", "BackgroundMean",
           "PRIOR_SITES", "label_prior_probs", "check_garbage_weight", "sample_by_concept"]

VARIANTS = ("full", "fs", "cvfs")


class DeltaOmegaPrior(NamedTuple):
    """Conjugate prior of (delta, Omega) in CVFS: Omega ~ IW_nu0(Psi0^{-1}), delta | Omega ~ N(delta0, Omega/kappa0).

    ``nu0`` is given as an offset over p (nu0 = p + nu_extra) so one prior serves every p. These defaults are the
    ones of the prior sites ``Omega`` and ``delta`` (``default_priors``).
    """
    nu_extra: float = 2.0
    psi_scale: float = 1.0
    kappa0: float = 1.0


class _PriorFamily(dist.Distribution):
    """A prior site whose law depends on other latent values (the concept's mask, Sigma_k, Omega): its parameters
    are the paper's hyperparameters, ``given(...)`` is the distribution the program draws from. A family has no
    density of its own (``log_prob`` / ``sample`` refuse); it is what a user swaps through ``priors=``."""

    support = constraints.real
    _params: tuple = ()

    def __init__(self, *args, validate_args=None):
        for name, value in zip(self._params, args):
            setattr(self, name, jnp.asarray(value, dtype=jnp.result_type(float)))
        super().__init__(batch_shape=(), event_shape=(), validate_args=validate_args)

    def tree_flatten(self):
        return tuple(getattr(self, n) for n in self._params), None

    @classmethod
    def tree_unflatten(cls, aux_data, params):
        return cls(*params)

    def sample(self, key, sample_shape=()):
        raise NotImplementedError(f"{type(self).__name__} is a prior family: draw from .given(...)")

    def log_prob(self, value):
        raise NotImplementedError(f"{type(self).__name__} is a prior family: evaluate .given(...).log_prob")


class ConceptCovariance(_PriorFamily):
    """Prior site ``Sigma`` (Sec. 3-5): on concept k's d_k relevant features M_k,
    Sigma_k,MM ~ IW_{d_k + a_extra}((v_scale d_k I)^{-1}) (paper: a_extra = 2, v_scale = 1/2; a_extra > 1 keeps
    it proper in every dimension). ``given(masks (K+1, p))`` is the p x p inverse-Wishart with p + a_extra degrees
    of freedom and scale diag(v_scale d_k on M_k, 1 off M_k), whose M_k block has exactly that law."""
    arg_constraints = {"a_extra": constraints.greater_than(1.0), "v_scale": constraints.positive}
    _params = ("a_extra", "v_scale")

    def __init__(self, a_extra=ConceptPrior().a_extra, v_scale=ConceptPrior().v_scale, *, validate_args=None):
        super().__init__(a_extra, v_scale, validate_args=validate_args)

    def given(self, masks):
        p = masks.shape[-1]
        d = masks.sum(-1)
        scale = jax.vmap(jnp.diag)(jnp.where(masks, self.v_scale * d[:, None], 1.0))
        return InverseWishart(p + self.a_extra, scale)


class ConceptMean(_PriorFamily):
    """Prior site ``mu``: mu_k | Sigma_k ~ N(0, Sigma_k / b) (paper: b = 1). ``given(Sigma (..., p, p))``."""
    arg_constraints = {"b": constraints.positive}
    _params = ("b",)

    def __init__(self, b=ConceptPrior().b, *, validate_args=None):
        super().__init__(b, validate_args=validate_args)

    def given(self, Sigma):
        return MultivariateNormal(jnp.zeros(Sigma.shape[-1]), covariance_matrix=Sigma / self.b)


class BackgroundCovariance(_PriorFamily):
    """Prior site ``Omega`` (CVFS): Omega ~ IW_{p + nu_extra}((psi_scale I)^{-1}) (our weak default: nu_extra = 2,
    psi_scale = 1). ``given(p)``."""
    arg_constraints = {"nu_extra": constraints.positive, "psi_scale": constraints.positive}
    _params = ("nu_extra", "psi_scale")

    def __init__(self, nu_extra=DeltaOmegaPrior().nu_extra, psi_scale=DeltaOmegaPrior().psi_scale, *,
                 validate_args=None):
        super().__init__(nu_extra, psi_scale, validate_args=validate_args)

    def given(self, p: int):
        return InverseWishart(p + self.nu_extra, self.psi_scale * jnp.eye(p))


class BackgroundMean(_PriorFamily):
    """Prior site ``delta`` (CVFS): delta | Omega ~ N(0, Omega / kappa0) (default kappa0 = 1). ``given(Omega)``."""
    arg_constraints = {"kappa0": constraints.positive}
    _params = ("kappa0",)

    def __init__(self, kappa0=DeltaOmegaPrior().kappa0, *, validate_args=None):
        super().__init__(kappa0, validate_args=validate_args)

    def given(self, Omega):
        return MultivariateNormal(jnp.zeros(Omega.shape[-1]), covariance_matrix=Omega / self.kappa0)


#: the prior sites of each variant (what ``priors=`` may name)
PRIOR_SITES = {"full": ("Sigma", "mu"), "fs": ("Sigma", "mu", "M"), "cvfs": ("Sigma", "mu", "alpha", "Omega", "delta")}


def default_priors(variant: str) -> dict:
    """The default prior of every prior site of ``variant`` (the one place they are set; the paper's values)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant: {variant!r} is not one of {VARIANTS}")
    every = {"Sigma": ConceptCovariance(), "mu": ConceptMean(), "M": dist.Bernoulli(probs=0.5),
             "alpha": default_alpha_prior(), "Omega": BackgroundCovariance(), "delta": BackgroundMean()}
    return {site: every[site] for site in PRIOR_SITES[variant]}


def program_priors(variant: str, priors=None, *, concept_prior: ConceptPrior | None = None,
                   delta_omega_prior: DeltaOmegaPrior | None = None, alpha_prior=None, inclusion_prior=None) -> dict:
    """The program's priors: ``default_priors(variant)`` updated by ``priors`` (site -> distribution) and by the
    older per-prior keywords (a ConceptPrior / DeltaOmegaPrior tuple, alpha_prior, inclusion_prior), which are
    kept for callers that still pass them."""
    out = default_priors(variant)
    out.update(priors or {})
    if concept_prior is not None:
        out.update(Sigma=ConceptCovariance(concept_prior.a_extra, concept_prior.v_scale),
                   mu=ConceptMean(concept_prior.b))
    if delta_omega_prior is not None and variant == "cvfs":
        out.update(Omega=BackgroundCovariance(delta_omega_prior.nu_extra, delta_omega_prior.psi_scale),
                   delta=BackgroundMean(delta_omega_prior.kappa0))
    if alpha_prior is not None and variant == "cvfs":
        out["alpha"] = alpha_prior
    if inclusion_prior is not None and variant == "fs":
        out["M"] = inclusion_prior
    return out


def check_garbage_weight(garbage_weight, name: str = "garbage_weight") -> float:
    """``garbage_weight`` as a float: a finite real number > 0 (ValueError naming ``name`` otherwise)."""
    real = isinstance(garbage_weight, numbers.Real) and not isinstance(garbage_weight, (bool, np.bool_))
    if not real or not math.isfinite(float(garbage_weight)) or not float(garbage_weight) > 0:
        raise ValueError(f"{name}: the garbage label's prior weight must be a finite number > 0, "
                         f"got {garbage_weight!r}")
    return float(garbage_weight)


def label_prior_probs(allowed, garbage_weight: float = 1.0) -> jnp.ndarray:
    """(n, K+1) the label prior of each unit: weight ``garbage_weight`` (w) on concept 0 (garbage) and 1 on every
    other concept of S_i (``allowed`` (n, K+1) bool), normalized; w = 1 is uniform over S_i (Sec. 3)."""
    allowed = jnp.asarray(allowed, bool)
    weights = allowed * jnp.ones(allowed.shape[-1]).at[0].set(garbage_weight)
    return weights / weights.sum(-1, keepdims=True)


def concept_masks(variant: str, M, n_concepts: int, p: int) -> jnp.ndarray:
    """The (K+1, p) 0/1 inclusion matrix of every concept (row 0 = garbage) from the variant's M."""
    if variant == "full":
        return jnp.ones((n_concepts, p), dtype=bool)
    if variant == "fs":
        return jnp.broadcast_to(jnp.asarray(M, bool), (n_concepts, p))
    return jnp.concatenate([jnp.zeros((1, p), bool), jnp.asarray(M, bool)], axis=0)


def coverage_ok(Y: jnp.ndarray, image_index: jnp.ndarray, keyword_mask: jnp.ndarray) -> jnp.ndarray:
    """True when every keyword of every image labels at least one of its units (the paper's Y_i in C_i)."""
    n_images, n_concepts = keyword_mask.shape
    counts = jax.ops.segment_sum(jax.nn.one_hot(Y, n_concepts), image_index, num_segments=n_images)
    return jnp.all(jnp.where(keyword_mask, counts > 0, True))


class FeatureSelectionNormal(dist.Distribution):
    """x (p,) with x_M ~ N(mu_M, Sigma_MM) and x_{M^c} | x_M ~ the conditional of N_p(delta, Omega) (eq. 3/5).

    Batch shape from ``mask`` (..., p), ``mu`` (..., p), ``Sigma`` (..., p, p); delta (p,), Omega (p, p) shared.
    log p(x) = log N_M(x_M; mu, Sigma) + log N_p(x; delta, Omega) - log N_M(x_M; delta, Omega).
    """

    arg_constraints = {}
    support = constraints.real_vector

    def __init__(self, mask, mu, Sigma, delta, Omega, *, validate_args=None):
        self.mask = jnp.asarray(mask, bool)
        self.mu, self.Sigma = jnp.asarray(mu), jnp.asarray(Sigma)
        self.delta, self.Omega = jnp.asarray(delta), jnp.asarray(Omega)
        batch_shape = jax.lax.broadcast_shapes(self.mask.shape[:-1], self.mu.shape[:-1], self.Sigma.shape[:-2])
        super().__init__(batch_shape=batch_shape, event_shape=self.delta.shape[-1:], validate_args=validate_args)

    def _flat(self):
        p = self.event_shape[0]
        shape = self.batch_shape
        mask = jnp.broadcast_to(self.mask, shape + (p,)).reshape(-1, p)
        mu = jnp.broadcast_to(self.mu, shape + (p,)).reshape(-1, p)
        sigma = jnp.broadcast_to(self.Sigma, shape + (p, p)).reshape(-1, p, p)
        return mask, mu, sigma

    def log_prob(self, value):
        p = self.event_shape[0]
        mask, mu, sigma = self._flat()
        x = jnp.broadcast_to(value, self.batch_shape + (p,)).reshape(-1, p)
        full = jnp.ones(p, bool)
        chol_omega_full = cholesky(self.Omega)

        def one(xi, mi, mui, si):
            rel = gaussian_logpdf_masked(xi[None], mui, masked_cholesky(si, mi), mi)[0]
            base = gaussian_logpdf_masked(xi[None], self.delta, chol_omega_full, full)[0]
            cond = gaussian_logpdf_masked(xi[None], self.delta, masked_cholesky(self.Omega, mi), mi)[0]
            return rel + base - cond

        return jax.vmap(one)(x, mask, mu, sigma).reshape(self.batch_shape)

    def sample(self, key, sample_shape=()):
        mask, mu, sigma = self._flat()
        chol_rel, omega_inv = jax.vmap(lambda mi, si: _unit_factors(si, mi, self.Omega))(mask, sigma)
        out = _draw_from_factors(key, math.prod(sample_shape), mask, mu, chol_rel, omega_inv, self.delta, self.Omega)
        return out.reshape(tuple(sample_shape) + self.batch_shape + (self.event_shape[0],))


def _unit_factors(sigma: jnp.ndarray, mask: jnp.ndarray, omega: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """What one unit's draw factorizes: (the Cholesky factor of Sigma_MM (p, p), Omega_MM^-1 (p, p)), each
    masked to its mask M (``masked_cholesky``, ``masked_matrix``)."""
    return masked_cholesky(sigma, mask), spd_inverse(masked_matrix(omega, mask))


def _draw_from_factors(key, total: int, mask, mu, chol_rel, omega_inv, delta, omega) -> jnp.ndarray:
    """(total, n, p) draws of n units from their factors (``_unit_factors``, (n, p, p) each), mask (n, p), mu
    (n, p): the relevant part x_M = mu_M + L z, then eq. 11 read backwards for the rest,
    x_{M^c} = z_{M^c} + Omega_{M^c M} Omega_MM^{-1} (x_M - z_M) with z ~ N(delta, Omega)."""
    n, p = mask.shape
    k_rel, k_base = jax.random.split(key)
    z_rel = jax.random.normal(k_rel, (total, n, p))
    z_base = delta + jax.random.normal(k_base, (total, n, p)) @ cholesky(omega).T

    def one(zr, zb, mi, mui, li, oi):
        x_rel = mui + li @ zr                                   # relevant part ~ N(mu_M, Sigma_MM)
        u = oi @ ((x_rel - zb) * mi.astype(zb.dtype))
        return jnp.where(mi, x_rel, zb + omega @ u)

    return jax.vmap(lambda zr, zb: jax.vmap(one)(zr, zb, mask, mu, chol_rel, omega_inv))(z_rel, z_base)


def sample_by_concept(key, labels, masks, mu, Sigma, delta, Omega, sample_shape=()) -> jnp.ndarray:
    """The draw of ``FeatureSelectionNormal(masks[labels], mu[labels], Sigma[labels], delta, Omega)
    .sample(key, sample_shape)`` -- the same random stream and arithmetic -- with the factorizations done once per
    concept (K + 1) instead of once per unit (n): labels (n,) int, masks (K+1, p) bool, mu (K+1, p), Sigma
    (K+1, p, p), delta (p,), Omega (p, p). Shape sample_shape + (n, p)."""
    chol_rel, omega_inv = jax.vmap(lambda mi, si: _unit_factors(si, mi, Omega))(masks, Sigma)
    out = _draw_from_factors(key, math.prod(sample_shape), masks[labels], mu[labels], chol_rel[labels],
                             omega_inv[labels], delta, Omega)
    return out.reshape(tuple(sample_shape) + (labels.shape[0], delta.shape[-1]))


def feature_selection_model(allowed, image_index, keyword_mask, X=None, *, variant: str = "cvfs",
                            n_features: int | None = None, priors=None, delta=None, Omega=None,
                            concept_prior: ConceptPrior | None = None, delta_omega_prior: DeltaOmegaPrior | None = None,
                            alpha_prior=None, inclusion_prior=None, garbage_weight: float = 1.0):
    """The FULL / FS / CVFS joint density (Sec. 3-5).

    allowed (n, K+1) bool: S_i of each unit's image; image_index (n,) int; keyword_mask (I, K+1) bool (column 0
    False): the keywords each image must cover; X (n, p) or None (prior predictive, then ``n_features`` = p).
    priors: site -> distribution for the variant's prior sites (``PRIOR_SITES``; missing sites: ``default_priors``;
    ``zoo.papers.gustafson07.program_kwargs`` passes a spec's); alpha is one alpha_j's prior (CVFS), M one M_j's
    (FS). delta (p,), Omega (p, p): fixed values (FULL/FS; CVFS samples them). concept_prior, delta_omega_prior,
    alpha_prior, inclusion_prior: older keywords for the same priors (``program_priors``).
    garbage_weight: w of the label prior (``label_prior_probs``; 1 = the paper's uniform prior over S_i).
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant: {variant!r} is not one of {VARIANTS}")
    if not isinstance(garbage_weight, jax.Array):      # a traced weight (under jit) is the caller's to check
        garbage_weight = check_garbage_weight(garbage_weight)
    priors = program_priors(variant, priors, concept_prior=concept_prior, delta_omega_prior=delta_omega_prior,
                            alpha_prior=alpha_prior, inclusion_prior=inclusion_prior)
    allowed = jnp.asarray(allowed, bool)
    n, n_concepts = allowed.shape
    p = X.shape[-1] if X is not None else n_features
    if variant == "cvfs":
        alpha = numpyro.sample("alpha", priors["alpha"].expand([p]).to_event(1))
        M = numpyro.sample("M", dist.Bernoulli(probs=alpha).expand([n_concepts - 1, p]).to_event(2))
        numpyro.sample("M_garbage", dist.Bernoulli(probs=alpha).to_event(1), obs=jnp.zeros(p))  # M_0 = 0
        Omega = numpyro.sample("Omega", priors["Omega"].given(p))
        delta = numpyro.sample("delta", priors["delta"].given(Omega))
    elif variant == "fs":
        M = numpyro.sample("M", priors["M"].expand([p]).to_event(1))
    else:
        M = None
    if variant != "cvfs":
        delta = jnp.zeros(p) if delta is None else jnp.asarray(delta)
        Omega = jnp.eye(p) if Omega is None else jnp.asarray(Omega)
    masks = concept_masks(variant, M, n_concepts, p)
    with numpyro.plate("concept", n_concepts):
        Sigma = numpyro.sample("Sigma", priors["Sigma"].given(masks))
        mu = numpyro.sample("mu", priors["mu"].given(Sigma))
    with numpyro.plate("region", n):
        Y = numpyro.sample("Y", dist.Categorical(probs=label_prior_probs(allowed, garbage_weight)))
    numpyro.factor("coverage", jnp.where(coverage_ok(Y, image_index, keyword_mask), 0.0, -jnp.inf))
    with numpyro.plate("region", n):
        numpyro.sample("X", FeatureSelectionNormal(masks[Y], mu[Y], Sigma[Y], delta, Omega), obs=X)


def default_alpha_prior(omega: float = 0.5, gamma: float = 10.0) -> dist.Distribution:
    """alpha_j ~ omega Beta(1, gamma) + (1 - omega) Beta(gamma, 1) (Sec. 5: omega = 0.5, gamma = 10)."""
    return dist.MixtureSameFamily(dist.Categorical(probs=jnp.array([omega, 1.0 - omega])),
                                  dist.Beta(jnp.array([1.0, gamma]), jnp.array([gamma, 1.0])))


def collapsed_log_density(Y, masks, delta, Omega, X, concept_prior: ConceptPrior = ConceptPrior()):
    """log p(X | Y, M, delta, Omega) with every (mu_k, Sigma_k) integrated out (Appendix eq. 10, first two lines).

    Y (n,), masks (K+1, p) bool, X (n, p): the sum over concepts of ``collapsed_concept_log_density``.
    """
    n_concepts = masks.shape[0]
    onehot = jax.nn.one_hot(Y, n_concepts, dtype=X.dtype)
    counts, totals = onehot.sum(0), onehot.T @ X
    scatters = jnp.einsum("nk,ni,nj->kij", onehot, X, X)
    per_concept = jax.vmap(collapsed_concept_log_density, in_axes=(None, 0, 0, 0, 0, None, None))
    return per_concept(concept_prior, counts, totals, scatters, masks, jnp.asarray(delta), jnp.asarray(Omega)).sum()
