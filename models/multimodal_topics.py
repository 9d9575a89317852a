"""Multi-modal LDA and multi-modal HDP (Yakhnenko & Honavar) as NumPyro programs on count data.

Image i has caption-word counts words[i] (W,) and visual-word counts visual_words[i] (V,).  The factor
assignments t_ij, s_ij of single tokens are summed out: given pi_i and the factors, the counts of one modality are
Multinomial(N_i, pi_i @ phi) (the sum over t of Mult(pi_i) x Mult(phi_t) for each token).  Sites:

    MoM-HDP: sticks (K-1,) ~ Beta(1, alpha); beta = stick_breaking(sticks) (deterministic, (K,));
             pi (I, K) ~ Dir(alpha_pi beta)
    MoM-LDA: pi (I, K) ~ Dir(alpha_1..alpha_K); topic_weight = mean_i pi_i (deterministic, (K,))
    both:    phi_w (K, W) ~ Dir(alpha_w), phi_b (K, V) ~ Dir(alpha_b);
             words (I, W) ~ Mult(N_i, pi_i @ phi_w), visual_words (I, V) ~ Mult(M_i, pi_i @ phi_b)

Priors (site -> distribution): ``pi`` (LDA, a Dirichlet whose concentration has length 1 = symmetric, or K),
``sticks`` (HDP, any distribution on (0, 1)), ``phi_w`` / ``phi_b`` (Dirichlet of length 1 = symmetric, or the
vocabulary size).  With words=None the program simulates data with the given totals.
"""
from __future__ import annotations

from typing import Mapping

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from jax.scipy.special import logsumexp

from zoo.models.prior_adapters import dirichlet_concentration

__all__ = ["mom_lda", "mom_hdp", "default_priors_lda", "default_priors_hdp", "dirichlet_concentration",
           "stick_breaking", "token_log_likelihood_enumerated"]


def stick_breaking(sticks: jnp.ndarray) -> jnp.ndarray:
    """beta (..., K) from stick proportions u (..., K-1): beta_k = u_k prod_{l<k}(1 - u_l), last = remainder."""
    ones = jnp.ones(sticks.shape[:-1] + (1,))
    remaining = jnp.cumprod(jnp.concatenate([ones, 1.0 - sticks], axis=-1), axis=-1)
    return jnp.concatenate([sticks, ones], axis=-1) * remaining


def default_priors_lda(alpha: float = 1.0, alpha_w: float = 1.0, alpha_b: float = 1.0) -> dict:
    return {"pi": dist.Dirichlet(jnp.array([alpha])), "phi_w": dist.Dirichlet(jnp.array([alpha_w])),
            "phi_b": dist.Dirichlet(jnp.array([alpha_b]))}


def default_priors_hdp(alpha: float = 1.0, alpha_w: float = 1.0, alpha_b: float = 1.0) -> dict:
    return {"sticks": dist.Beta(1.0, alpha), "phi_w": dist.Dirichlet(jnp.array([alpha_w])),
            "phi_b": dist.Dirichlet(jnp.array([alpha_b]))}


def _factors(n_topics: int, n_word_types: int, n_visual_types: int, priors: Mapping):
    eta_w = dirichlet_concentration(priors["phi_w"], n_word_types, "phi_w")
    eta_b = dirichlet_concentration(priors["phi_b"], n_visual_types, "phi_b")
    with numpyro.plate("factor", n_topics):
        phi_w = numpyro.sample("phi_w", dist.Dirichlet(eta_w))
        phi_b = numpyro.sample("phi_b", dist.Dirichlet(eta_b))
    return phi_w, phi_b


def _observations(pi, phi_w, phi_b, word_totals, visual_totals, words, visual_words):
    with numpyro.plate("image", pi.shape[0]):
        numpyro.sample("words", dist.Multinomial(word_totals, probs=pi @ phi_w), obs=words)
        numpyro.sample("visual_words", dist.Multinomial(visual_totals, probs=pi @ phi_b), obs=visual_words)


def mom_lda(word_totals, visual_totals, *, n_word_types: int, n_visual_types: int, n_topics: int, priors: Mapping,
            words=None, visual_words=None):
    """MoM-LDA. word_totals, visual_totals (I,) token counts per image; words (I, W), visual_words (I, V) counts."""
    alpha = dirichlet_concentration(priors["pi"], n_topics, "pi")
    phi_w, phi_b = _factors(n_topics, n_word_types, n_visual_types, priors)
    with numpyro.plate("image", jnp.shape(word_totals)[0]):
        pi = numpyro.sample("pi", dist.Dirichlet(alpha))
    # each factor's share over the images (K,): the model's headline, as the VI runners store it (mean_i pi_i), so
    # that every method's fit has it (a deterministic: no density, no random draw)
    numpyro.deterministic("topic_weight", jnp.mean(pi, axis=0))
    _observations(pi, phi_w, phi_b, word_totals, visual_totals, words, visual_words)


def mom_hdp(word_totals, visual_totals, *, n_word_types: int, n_visual_types: int, truncation: int,
            alpha_pi: float, priors: Mapping, words=None, visual_words=None):
    """MoM-HDP truncated at K = ``truncation`` (Sec. 2.5): beta ~ GEM(alpha), pi_i ~ Dir(alpha_pi beta)."""
    if truncation > 1:
        with numpyro.plate("break", truncation - 1):
            sticks = numpyro.sample("sticks", priors["sticks"])
        beta = numpyro.deterministic("beta", stick_breaking(sticks))
    else:
        beta = numpyro.deterministic("beta", jnp.ones(1))
    phi_w, phi_b = _factors(truncation, n_word_types, n_visual_types, priors)
    with numpyro.plate("image", jnp.shape(word_totals)[0]):
        pi = numpyro.sample("pi", dist.Dirichlet(alpha_pi * beta))
    _observations(pi, phi_w, phi_b, word_totals, visual_totals, words, visual_words)


def token_log_likelihood_enumerated(tokens: jnp.ndarray, pi: jnp.ndarray, phi: jnp.ndarray) -> jnp.ndarray:
    """log p(x_1..x_N | pi, phi) of one token sequence by brute-force enumeration of all K^N assignments
    (t_1..t_N); a reference for the summed-out likelihood on tiny problems."""
    n_topics, n_tokens = phi.shape[0], tokens.shape[0]
    grids = jnp.stack(jnp.meshgrid(*([jnp.arange(n_topics)] * n_tokens), indexing="ij"), -1).reshape(-1, n_tokens)
    log_terms = jnp.sum(jnp.log(pi)[grids] + jnp.log(phi)[grids, tokens[None, :]], axis=1)
    return logsumexp(log_terms)
