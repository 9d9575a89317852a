"""Steps 2-4 of the collapsed sweep (Gustafson et al. 2007, Appendix): labels from eq. 1 with temporary
(mu_k, Sigma_k) (``label_step``), alpha (``alpha_step``), the Omega random walk with delta integrated out
(``omega_step``) and the MH-corrected eq. 11 data augmentation of (delta, Omega) (``delta_omega_step``).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.scipy.special import betaln, logsumexp

from zoo.inference.label_feature.collapsed_niw import (concept_delta_terms, concept_niw_prior,
                                                       delta_collapsed_log_density, delta_conditional,
                                                       gaussian_logpdf_masked, gaussian_loglik_suffstats,
                                                       inverse_wishart_log_density, masked_cholesky, masked_matrix,
                                                       niw_log_marginal, niw_posterior, sample_beta,
                                                       sample_masked_inverse_wishart, sample_niw_masked, suffstats)
from zoo.inference.label_feature.state import (GibbsState, RegionProblem, concept_masks_of, concept_suffstats,
                                               label_log_prior)
from zoo.inference.linalg import cho_solve, cholesky, solve_lower_transpose, spd_inverse

__all__ = ["label_step", "temporary_concept_params", "unit_concept_loglik", "sample_labels_constrained",
           "alpha_step", "omega_log_target", "omega_step", "delta_omega_step", "background_marginal_refresh"]


def _omega_factors(Omega):
    L = cholesky(Omega)
    return cho_solve(L, jnp.eye(Omega.shape[-1])), 2.0 * jnp.sum(jnp.log(jnp.diagonal(L)))


def omega_log_target(problem: RegionProblem, stats, M, Omega):
    """log pi(Omega | M, Y, X) up to a constant, delta integrated out: the IW prior of Omega times
    ``delta_collapsed_log_density`` (which holds delta's prior N(mu0, Omega / kappa0))."""
    Omega_inv, logdet = _omega_factors(Omega)
    prior = problem.delta_omega_prior
    terms = jax.vmap(concept_delta_terms, in_axes=(None, 0, 0, 0, 0, None, None, None))(
        problem.concept_prior, *stats, M, Omega, Omega_inv, logdet)
    return (inverse_wishart_log_density(Omega, prior.nu0, prior.S0)
            + delta_collapsed_log_density(terms, prior, Omega_inv, logdet)), terms, Omega_inv


def omega_step(problem: RegionProblem, state: GibbsState, key):
    """CVFS, joint move of (delta, Omega): ``problem.omega_steps`` Metropolis-Hastings steps on pi(Omega | M, Y, X)
    with delta integrated out (``omega_log_target``), each proposing Omega' ~ IW_nu(((nu - p - 1) Omega)^{-1})
    (mean Omega, nu = ``problem.omega_dof``) with the reverse proposal density in the ratio; then delta from its
    Gaussian conditional given (M, Y, Omega). Exact: MH on the delta-marginal followed by the conditional draw
    leaves pi(delta, Omega | M, Y, X) invariant. Why: the data-augmentation step (eq. 11 + MH correction) is
    accepted about 1 % of the time on the Sec. 6 data, and Omega then freezes the flips of M.
    Returns (state, acceptance rate)."""
    n_concepts, p = state.M.shape
    stats = concept_suffstats(problem.X, state.Y, n_concepts)
    nu = jnp.asarray(problem.omega_dof, jnp.float64)
    c = nu - p - 1.0
    k_loop, k_delta = jax.random.split(key)

    def body(t, carry):
        Omega, current, accepted = carry
        k_prop, k_acc = jax.random.split(jax.random.fold_in(k_loop, t))
        proposal = sample_masked_inverse_wishart(k_prop, nu, c * Omega, jnp.ones(p, bool))
        proposal = 0.5 * (proposal + proposal.T)
        proposed, _, _ = omega_log_target(problem, stats, state.M, proposal)
        log_ratio = (proposed - current + inverse_wishart_log_density(Omega, nu, c * proposal)
                     - inverse_wishart_log_density(proposal, nu, c * Omega))
        accept = jnp.log(jax.random.uniform(k_acc)) < log_ratio
        return (jnp.where(accept, proposal, Omega), jnp.where(accept, proposed, current),
                accepted + accept.astype(jnp.float64))

    n_steps = jnp.asarray(problem.omega_steps)
    current, _, _ = omega_log_target(problem, stats, state.M, state.Omega)
    Omega, _, accepted = jax.lax.fori_loop(0, n_steps, body, (state.Omega, current, jnp.asarray(0.0)))
    _, terms, Omega_inv = omega_log_target(problem, stats, state.M, Omega)
    mean, L = delta_conditional(terms, problem.delta_omega_prior, Omega_inv)
    delta = mean + solve_lower_transpose(L, jax.random.normal(k_delta, (p,)))
    return state._replace(delta=delta, Omega=Omega), accepted / jnp.maximum(n_steps, 1)


def temporary_concept_params(problem, variant, state, key):
    """Eq. 8-9 draws of (mu_k, Sigma_k) for every concept on its mask: mu (K+1, p), Sigma (K+1, p, p)."""
    n_concepts = state.M.shape[0]
    masks = concept_masks_of(variant, state.M)
    count, total, scatter = concept_suffstats(problem.X, state.Y, n_concepts)

    def one(k, c, t, s, m):
        post = niw_posterior(concept_niw_prior(problem.concept_prior, m), c, t, s)
        return sample_niw_masked(k, post, m)

    keys = jax.random.split(key, n_concepts)
    return jax.vmap(one)(keys, count, total, scatter, masks)


def unit_concept_loglik(X, masks, mu, Sigma, delta, Omega, shared_mask=False):
    """(n, K+1) log p(x_i | Y = k, mu_k, Sigma_k, M_k, delta, Omega): eq. 5 with the temporary parameters.
    ``shared_mask`` (FULL, FS: every row of ``masks`` the same): the conditional factor of the irrelevant features
    is the same for every concept, so it is evaluated once."""
    p = X.shape[1]
    base = gaussian_logpdf_masked(X, delta, cholesky(Omega), jnp.ones(p, bool))
    cond_of = lambda m: gaussian_logpdf_masked(X, delta, masked_cholesky(Omega, m), m)
    shared = cond_of(masks[0]) if shared_mask else None

    def one(m, mu_k, sigma_k):
        rel = gaussian_logpdf_masked(X, mu_k, masked_cholesky(sigma_k, m), m)
        return rel + base - (shared if shared_mask else cond_of(m))

    return jax.vmap(one, out_axes=1)(masks, mu, Sigma)


def sample_labels_constrained(problem, Y, loglik, key):
    """Sequential Gibbs over the segments of each image (images in parallel) from eq. 1 restricted to S_i and to
    the coverage constraint given the image's other labels, with the label prior (``label_log_prior``: garbage
    weight w, each keyword 1). Returns (Y, proba (n, K+1))."""
    n, n_concepts = loglik.shape
    log_prior = label_log_prior(problem, n_concepts)
    n_images, n_slots = problem.image_slots.shape
    slots_valid = problem.image_slots >= 0
    safe = jnp.where(slots_valid, problem.image_slots, 0)
    counts = jnp.einsum("is,isk->ik", slots_valid.astype(jnp.float64), jax.nn.one_hot(Y[safe], n_concepts))

    def body(carry, inputs):
        Y, counts = carry
        units, valid, k = inputs
        u = jnp.where(valid, units, 0)
        current = jax.nn.one_hot(Y[u], n_concepts) * valid[:, None]
        others = counts - current
        needed = problem.keyword_mask & (others < 0.5)       # a keyword only this segment covers
        must = needed.any(-1, keepdims=True)
        allowed_now = jnp.where(must, needed, problem.allowed[u])
        logits = jnp.where(allowed_now, loglik[u] + log_prior, -jnp.inf)   # eq. 1: prior x likelihood
        proba = jax.nn.softmax(logits, axis=-1)
        y_new = jax.random.categorical(k, logits, axis=-1).astype(Y.dtype)
        y_new = jnp.where(valid, y_new, Y[u])
        counts = others + jax.nn.one_hot(y_new, n_concepts) * valid[:, None]
        Y = Y.at[jnp.where(valid, units, n)].set(y_new, mode="drop")
        return (Y, counts), proba

    keys = jax.random.split(key, n_slots)
    (Y, _), proba_slots = jax.lax.scan(body, (Y, counts), (problem.image_slots.T, slots_valid.T, keys))
    proba = jnp.zeros((n, n_concepts)).at[jnp.where(slots_valid.T, problem.image_slots.T, n)].set(
        proba_slots, mode="drop")
    return Y, proba


def label_step(problem: RegionProblem, variant: str, state: GibbsState, key):
    """Step 2: temporary (mu, Sigma) from eq. 8-9, then every Y_ij from eq. 1 under S_i and the coverage constraint."""
    k_par, k_lab = jax.random.split(key)
    mu, Sigma = temporary_concept_params(problem, variant, state, k_par)
    masks = concept_masks_of(variant, state.M)
    loglik = unit_concept_loglik(problem.X, masks, mu, Sigma, state.delta, state.Omega,
                                 shared_mask=variant != "cvfs")
    # pointwise log-likelihood for az.loo: the mixture over S_i with the label prior's weights (w = 1: uniform,
    # lambda fixed uniform, Sec. 3)
    log_prior = label_log_prior(problem, loglik.shape[1])
    unit_loglik = (logsumexp(jnp.where(problem.allowed, loglik + log_prior, -jnp.inf), axis=-1)
                   - logsumexp(jnp.where(problem.allowed, log_prior, -jnp.inf), axis=-1))
    Y, proba = sample_labels_constrained(problem, state.Y, loglik, k_lab)
    return state._replace(Y=Y, label_proba=proba, unit_loglik=unit_loglik), None


def alpha_step(problem: RegionProblem, state: GibbsState, key):
    """Step 3 (CVFS): alpha_j | M ~ prior x alpha^s (1 - alpha)^(K+1-s), s = M_.j: a Beta mixture again."""
    n_concepts = state.M.shape[0]
    s = state.M.sum(0).astype(jnp.float64)                          # (p,)
    pr = problem.alpha_prior
    a_post = pr.a[None, :] + s[:, None]                             # (p, C)
    b_post = pr.b[None, :] + (n_concepts - s)[:, None]
    logw = jnp.log(pr.weights)[None, :] + betaln(a_post, b_post) - betaln(pr.a, pr.b)[None, :]
    k_comp, k_beta = jax.random.split(key)
    comp = jax.random.categorical(k_comp, logw, axis=-1)
    take = lambda arr: jnp.take_along_axis(arr, comp[:, None], axis=1)[:, 0]
    alpha = sample_beta(k_beta, take(a_post), take(b_post))
    alpha = jnp.clip(alpha, 1e-12, 1.0 - 1e-12)
    return state._replace(alpha=alpha), None


def _complete(X, Y, masks, z, Omega):
    """Eq. 11: x* = z on M (the augmenting draw), x_{M^c} + Omega_{M^c M} Omega_MM^{-1}(z_M - x_M) off M.
    One inverse per concept (K+1 of them), then a mat-vec per unit."""
    def inverse(m):
        mm = m.astype(Omega.dtype)
        return spd_inverse(masked_matrix(Omega, m)) * jnp.outer(mm, mm)   # Omega_MM^{-1}, zero off M
    inv = jax.vmap(inverse)(masks)
    unit_masks = masks[Y]
    u = jnp.einsum("nij,nj->ni", inv[Y], (z - X) * unit_masks.astype(X.dtype))
    return jnp.where(unit_masks, z, X + u @ Omega.T)


def delta_omega_step(problem: RegionProblem, state: GibbsState, key):
    """Step 4 (CVFS): data augmentation (eq. 11) + conjugate NIW proposal + MH correction (see module doc)."""
    n, p = problem.X.shape
    k_aug, k_sigma, k_mu, k_acc = jax.random.split(key, 4)
    z = state.delta + jax.random.normal(k_aug, (n, p)) @ cholesky(state.Omega).T
    prior = problem.delta_omega_prior
    full = jnp.ones(p, bool)
    stats_old = suffstats(_complete(problem.X, state.Y, state.M, z, state.Omega))
    post = niw_posterior(prior, *stats_old)
    omega_new = _sample_iw_full(k_sigma, post)
    delta_new = post.mean + cholesky(omega_new) @ jax.random.normal(k_mu, (p,)) / jnp.sqrt(post.rho)
    stats_new = suffstats(_complete(problem.X, state.Y, state.M, z, omega_new))
    # log r = sum log phi(x*(Omega'); theta') + sum log phi(x*(Omega'); theta) + log m(x*(Omega))
    #       - sum log phi(x*(Omega); theta) - sum log phi(x*(Omega); theta') - log m(x*(Omega')), m = NIW marginal
    stack = lambda *xs: jnp.stack(xs)
    st = tuple(stack(a, a, b, b) for a, b in zip(stats_new, stats_old))
    ll = jax.vmap(gaussian_loglik_suffstats, in_axes=(0, 0, 0, 0, 0, None))(
        *st, stack(delta_new, state.delta, state.delta, delta_new), stack(omega_new, state.Omega, state.Omega,
                                                                          omega_new), full)
    marg = jax.vmap(niw_log_marginal, in_axes=(None, 0, 0, 0, None))(
        prior, *(stack(a, b) for a, b in zip(stats_old, stats_new)), full)
    log_ratio = ll[0] + ll[1] - ll[2] - ll[3] + marg[0] - marg[1]
    accept = (jnp.log(jax.random.uniform(k_acc)) < log_ratio) | ~jnp.asarray(problem.exact_delta_omega)
    delta = jnp.where(accept, delta_new, state.delta)
    Omega = jnp.where(accept, omega_new, state.Omega)
    return state._replace(delta=delta, Omega=Omega), accept.astype(jnp.float64)


def _sample_iw_full(key, post):
    return sample_masked_inverse_wishart(key, post.nu, post.S, jnp.ones(post.S.shape[-1], bool))


def background_marginal_refresh(problem: RegionProblem, state: GibbsState, key):
    """CVFS, exact Gibbs draw of the background's marginal on the features every labelled concept uses.

    Let S = the features in M_k for every concept k with units (empty as soon as garbage has units: M_0 = 0).
    Each unit's factor of eq. 10 is phi(x_{M_k^c} | x_{M_k}; delta, Omega) with M_k containing S, a function of
    the conditional law of x_{S^c} given x_S alone: a = delta_c - B delta_S, B = Omega_cS Omega_SS^{-1},
    Omega_c|S = Omega_cc - B Omega_SS B'. Under the prior (Omega ~ IW_nu0(Psi0^{-1}), delta | Omega ~
    N(mu0, Omega / kappa0)), (Omega_SS, delta_S) is independent of (a, B, Omega_c|S), with Omega_SS ~
    IW_{nu0 - |S^c|}(Psi0_SS^{-1}) and delta_S | Omega_SS ~ N(mu0_S, Omega_SS / kappa0) (the inverse-Wishart's
    partition: Omega_SS is independent of (Omega_SS^{-1} Omega_Sc, Omega_c|S)). So given (a, B, Omega_c|S, M, Y),
    (Omega_SS, delta_S) is distributed as its prior: this draws it, and rebuilds Omega and delta with (a, B,
    Omega_c|S) unchanged. Why (issue 29): with a feature relevant to every concept (Sec. 6 data, feature 3), the
    data leave its marginal to the prior; the Omega random walk, sized for the identified directions, then drifts
    there for hundreds of sweeps (Omega_33 0.36 against 0.86), and no flip of M leaves before it returns.
    No-op when S is empty."""
    n_concepts, p = state.M.shape
    count = jnp.zeros(n_concepts).at[state.Y].add(1.0)
    s = jnp.all(state.M | (count[:, None] < 0.5), axis=0) & jnp.any(count > 0.5)     # (p,) the set S
    c = ~s
    sf, cf = s.astype(state.Omega.dtype), c.astype(state.Omega.dtype)
    d = sf.sum()
    Omega, delta = state.Omega, state.delta
    inv_ss = spd_inverse(masked_matrix(Omega, s)) * jnp.outer(sf, sf)                # Omega_SS^{-1}, zero off S
    B = (Omega * jnp.outer(cf, sf)) @ inv_ss                                         # (p, p): rows c, columns S
    cond = (Omega - B @ Omega) * jnp.outer(cf, cf)                                   # Omega_c|S on c x c
    intercept = (delta - B @ delta) * cf                                             # a on c
    prior = problem.delta_omega_prior
    k_omega, k_delta = jax.random.split(key)
    new_ss = sample_masked_inverse_wishart(k_omega, prior.nu0 - (p - d), prior.S0, s) * jnp.outer(sf, sf)
    L = cholesky(masked_matrix(new_ss, s))
    new_delta_s = (prior.mu0 + L @ jax.random.normal(k_delta, (p,)) / jnp.sqrt(prior.rho0)) * sf
    cross = B @ new_ss                                                               # Omega_cS (rows c)
    Omega_new = new_ss + cross + cross.T + cond + B @ new_ss @ B.T
    Omega_new = 0.5 * (Omega_new + Omega_new.T)
    delta_new = new_delta_s + intercept + B @ new_delta_s
    any_s = d > 0.5
    return state._replace(Omega=jnp.where(any_s, Omega_new, Omega), delta=jnp.where(any_s, delta_new, delta)), None
