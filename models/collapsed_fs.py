"""Gustafson, Thompson & de Freitas (2007), FS variant with (mu, Sigma) integrated out: the collapsed model as a
plain NumPyro program, for NumPyro's generic discrete samplers (``zoo bench cvfs`` runs DiscreteHMCGibbs and
MixedHMC on it beside the zoo's collapsed Gibbs sweep, which targets the same density).

Sites: ``M`` (p,) inclusion indicators, uniform prior (Sec. 4); ``Y`` (n - n_labelled,) labels of the unlabelled
units over all ``n_concepts`` concepts, uniform (the paper) or with the garbage weight w: Pr(Y = 0) proportional
to w, each other concept to 1; eq. 10 of the Appendix (FS: (delta, Omega) fixed) as a factor;
``nuisance`` an independent N(0, 1) site, because DiscreteHMCGibbs and MixedHMC need one continuous site for their
HMC part (it does not touch the data).
"""
from __future__ import annotations

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

from zoo.models.feature_selection import check_garbage_weight, collapsed_log_density, concept_masks, label_prior_probs

__all__ = ["collapsed_fs_program"]


def collapsed_fs_program(X, labelled, n_concepts, delta, Omega, garbage_weight: float = 1.0):
    """X (n, p) features, the labelled units first; labelled (n_labelled,) their labels in 0..n_concepts-1
    (0 = garbage); n_concepts: K + 1; delta (p,), Omega (p, p): the fixed FS background mean and covariance;
    garbage_weight: w of the unlabelled units' label prior (1 = uniform, the paper)."""
    p = X.shape[1]
    garbage_weight = check_garbage_weight(garbage_weight)
    with numpyro.plate("feature", p):
        m = numpyro.sample("M", dist.Bernoulli(probs=0.5))
    with numpyro.plate("region", X.shape[0] - labelled.shape[0]):
        y_free = numpyro.sample("Y", dist.Categorical(probs=label_prior_probs(jnp.ones((1, n_concepts), bool),
                                                                               garbage_weight)[0]))
    numpyro.sample("nuisance", dist.Normal(0.0, 1.0))
    Y = jnp.concatenate([labelled, y_free])
    masks = concept_masks("fs", m, n_concepts, p)
    numpyro.factor("collapsed", collapsed_log_density(Y, masks, delta, Omega, X))    # Appendix eq. 10
