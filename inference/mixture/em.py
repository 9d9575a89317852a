"""MAP-EM and ML-EM for Gaussian mixtures with the shrinkage prior of Carbonetto et al. (2003).

The same loop serves the plain mixture (Sec. 3-4 of the paper) and the discrete-Gaussian translation model
(Sec. 5.1): the translation model is a mixture whose mixing weights are fixed to 1/L_n over the words of the
point's image (an ``allowed`` mask) and are not learned.

Model (paper Sec. 4, MODELS.md 1a), after centring the data at mu* (so mu* = 0 here):
    x_i ~ sum_c lambda_c N(mu_c, Sigma_c)
    lambda ~ Dir(nu);  mu_c ~ N(0, T), T = diag(tau2);  tau2_k ~ IG(a, b)
    Sigma_c ~ IW(alpha, alpha Sigma*)       (full)   or
    Sigma_ck ~ IG((alpha + D - 1)/2, alpha Sigma*_kk / 2)   (diagonal: the IW density restricted to diagonals)
The M-step is an ECM sweep (each block maximized given the others), so the log posterior never decreases.

Shapes: N points, D features, C components. ``Params.covs`` is (C, D, D) for full and (C, D) for diagonal
covariances. Everything is a pure function of NamedTuples; the loop is one ``lax.while_loop``.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln, logsumexp, multigammaln

from zoo.inference.linalg import cholesky_lower, triangular_inverse_lower

__all__ = ["Params", "Hyper", "EMConfig", "EMResult", "log_component_densities", "covariance_factors", "e_step",
           "SuffStats", "collect_suff_stats", "data_pass", "m_step", "log_posterior", "run_em", "run_em_restarts",
           "row_bucket", "pad_rows"]

_LOG_2PI = jnp.log(2.0 * jnp.pi)


class Params(NamedTuple):
    weights: jnp.ndarray  # (C,) mixing proportions lambda (ignored by the translation model)
    means: jnp.ndarray    # (C, D) component means, in centred coordinates
    covs: jnp.ndarray     # (C, D, D) full or (C, D) diagonal covariances
    tau2: jnp.ndarray     # (D,) prior variances of the means (shrinkage)


class Hyper(NamedTuple):
    sigma_star: jnp.ndarray  # (D, D) data covariance Sigma* (centre of the IW prior)
    alpha: jnp.ndarray       # () IW degrees of freedom
    a: jnp.ndarray           # () IG shape of tau2 (may be <= 0: improper, as in the paper's a = -1)
    b: jnp.ndarray           # () IG scale of tau2
    nu: jnp.ndarray          # (C,) Dirichlet concentration of lambda (>= 1)
    reg_covar: jnp.ndarray   # () variance floor added to ML covariance estimates (0 for MAP)


class EMConfig(NamedTuple):
    """Static switches (hashable: part of the compiled program)."""
    diagonal: bool = False       # diagonal covariances
    use_prior: bool = True       # MAP (True) or ML (False)
    learn_weights: bool = True   # mixture: learn lambda; translation model: fixed 1/L_n
    learn_covs: bool = True      # False: known covariance (paper Sec. 2)


class SuffStats(NamedTuple):
    counts: jnp.ndarray  # (C,) xi_.c
    sum_x: jnp.ndarray   # (C, D) sum_i xi_ic x_i
    sum_xx: jnp.ndarray  # (C, D, D) or (C, D): sum_i xi_ic x_i x_i' (diagonal: squares only)


class EMResult(NamedTuple):
    params: Params
    objective: jnp.ndarray  # (max_iter + 1,) log posterior (or log likelihood) after each iteration; padded
    n_iter: jnp.ndarray     # () iterations run
    converged: jnp.ndarray  # () bool


def log_component_densities(X: jnp.ndarray, means: jnp.ndarray, covs: jnp.ndarray, diagonal: bool,
                            factors=None) -> jnp.ndarray:
    """log N(x_i; mu_c, Sigma_c), shape (N, C).

    Full covariances: z_ic = L_c^{-1} x_i - L_c^{-1} mu_c for every component in one (N, D) x (D, C D) product
    (as scikit-learn's ``_estimate_log_gaussian_prob`` does with its precision factors), not C products of
    L_c^{-1} with (X - mu_c)': one GEMM over the data instead of C, and no (C, N, D) copy of the centred data.
    ``factors``: ``covariance_factors(covs)`` when the caller has them already (one factorization per EM
    iteration, shared with the log prior)."""
    if diagonal:
        diff = X[:, None, :] - means[None]  # (N, C, D)
        return -0.5 * jnp.sum(diff**2 / covs[None] + jnp.log(covs)[None] + _LOG_2PI, axis=-1)
    n_comp, n_features = means.shape
    chol, whiten = covariance_factors(covs) if factors is None else factors   # (C, D, D) L_c and L_c^{-1}
    # W[j, c D + k] = (L_c^{-1})_kj, b[c D + k] = (L_c^{-1} mu_c)_k
    stacked = jnp.transpose(whiten, (2, 0, 1)).reshape(n_features, n_comp * n_features)
    shift = jnp.einsum("ckj,cj->ck", whiten, means).reshape(n_comp * n_features)
    z = (X @ stacked - shift).reshape(X.shape[0], n_comp, n_features)
    half_logdet = jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)   # (C,)
    return -0.5 * jnp.sum(z * z, axis=-1) - half_logdet[None] - 0.5 * n_features * _LOG_2PI


def _cholesky(a: jnp.ndarray) -> jnp.ndarray:
    """Lower Cholesky factors of (..., D, D) in plain JAX, not jaxlib's LAPACK kernel: on CPU that kernel splits
    its batch over XLA's intra-op thread pool and waits for the pieces on a pool thread; when two such calls run at
    once on a 2-thread pool (a 2-core machine) both threads wait and nothing runs. Multi-restart EM fits on 1,000+
    regions stalled at 0 % CPU in lapack_dpotrf_ffi / lapack_dgetrf_ffi (jaxlib 0.10.2; issue 17)."""
    return jnp.vectorize(cholesky_lower, signature="(d,d)->(d,d)")(a)


def covariance_factors(covs: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """(L, L^{-1}) of full covariances (C, D, D): lower Cholesky factors and their inverses. Computed once per EM
    iteration and shared by the E-step and the log prior: each plain-JAX factorization is a loop that XLA
    compiles anew at every call site, so fewer call sites compile faster."""
    chol = _cholesky(covs)
    return chol, triangular_inverse_lower(chol)


def _log_joint_terms(X, params, allowed, config, factors=None):
    """log lambda_c + log N(x_i; mu_c, Sigma_c) with disallowed components at -inf, shape (N, C)."""
    log_dens = log_component_densities(X, params.means, params.covs, config.diagonal, factors)
    if config.learn_weights:
        log_dens = log_dens + jnp.log(params.weights)[None]
    else:  # translation model: p(a_nj = i) = 1 / L_n over the image's words (paper Sec. 5.1)
        n_allowed = jnp.sum(allowed, axis=1, keepdims=True)
        log_dens = log_dens - jnp.log(n_allowed)
    return jnp.where(allowed, log_dens, -jnp.inf)


def e_step(X, params, allowed, config, factors=None):
    """Responsibilities xi (N, C) and the log likelihood sum_i log p(x_i)."""
    terms = _log_joint_terms(X, params, allowed, config, factors)
    log_norm = logsumexp(terms, axis=1, keepdims=True)
    return _materialized(jnp.exp(terms - log_norm)), jnp.sum(log_norm)


def _materialized(resp: jnp.ndarray) -> jnp.ndarray:
    """The responsibilities (N, C) computed once and stored. Without the barrier XLA fused exp(terms - log_norm)
    into every product that reads resp and recomputed it D times per entry for the (N, C D) operand of the
    scatter matrices: 21.5 ms of an EM iteration on 10,000 x 16 with 3 components, 2.9 ms with it (issue 35)."""
    return jax.lax.optimization_barrier(resp)


def collect_suff_stats(X, resp, diagonal: bool) -> SuffStats:
    """Counts (C,), sums (C, D) and sums of outer products (C, D, D) or squares (C, D) weighted by resp (N, C)."""
    counts = jnp.sum(resp, axis=0)
    sum_x = resp.T @ X
    if diagonal:
        sum_xx = resp.T @ (X * X)
    else:   # sum_i xi_ic x_i x_i' for all c as one (C D, N) x (N, D) product
        n_points, n_features = X.shape
        weighted = (resp[:, :, None] * X[:, None, :]).reshape(n_points, -1)     # (N, C D): xi_ic x_id
        sum_xx = (weighted.T @ X).reshape(resp.shape[1], n_features, n_features)
    return SuffStats(counts, sum_x, sum_xx)


def _update_weights(stats, hyper, config):
    if not config.learn_weights:
        return None
    n_comp = stats.counts.shape[0]
    if config.use_prior:  # lambda_c = (xi_.c + nu_c - 1) / (N + sum nu - n_c)   (paper eq. M-step)
        num = stats.counts + hyper.nu - 1.0
        return num / (jnp.sum(stats.counts) + jnp.sum(hyper.nu) - n_comp)
    return stats.counts / jnp.sum(stats.counts)


def _update_means(stats, covs, tau2, config):
    """mu_c = T (Sigma_c + xi_.c T)^{-1} sum_i xi_ic x_i   (mu* = 0 after centring; T never inverted)."""
    if not config.use_prior:
        return stats.sum_x / jnp.maximum(stats.counts, 1e-300)[:, None]
    if config.diagonal:
        return tau2[None] * stats.sum_x / (covs + stats.counts[:, None] * tau2[None])

    def one(count, sum_x, cov):
        A = cov + count * jnp.diag(tau2)  # positive definite because Sigma_c is
        L_inv = triangular_inverse_lower(_cholesky(A))
        return tau2 * (L_inv.T @ (L_inv @ sum_x))

    return jax.vmap(one)(stats.counts, stats.sum_x, covs)


def _update_covs(stats, means, hyper, config, n_features):
    """Sigma_c = (sum_i xi_ic (x_i - mu_c)(x_i - mu_c)' + alpha Sigma*) / (xi_.c + alpha + D + 1)."""
    counts = stats.counts
    if config.diagonal:
        scatter = stats.sum_xx - 2.0 * means * stats.sum_x + counts[:, None] * means**2
        prior_scatter = hyper.alpha * jnp.diagonal(hyper.sigma_star)[None]
    else:
        outer = jnp.einsum("cd,ce->cde", means, stats.sum_x)
        scatter = (stats.sum_xx - outer - jnp.swapaxes(outer, 1, 2)
                   + counts[:, None, None] * jnp.einsum("cd,ce->cde", means, means))
        prior_scatter = hyper.alpha * hyper.sigma_star[None]
    scatter = 0.5 * (scatter + jnp.swapaxes(scatter, -1, -2)) if not config.diagonal else scatter
    if config.use_prior:
        denom = counts + hyper.alpha + n_features + 1.0
        shape = (-1,) + (1,) * (scatter.ndim - 1)
        return (scatter + prior_scatter) / denom.reshape(shape)
    shape = (-1,) + (1,) * (scatter.ndim - 1)
    cov = scatter / jnp.maximum(counts, 1e-300).reshape(shape)
    if config.diagonal:
        return cov + hyper.reg_covar
    return cov + hyper.reg_covar * jnp.eye(n_features)[None]


def _update_tau2(means, hyper):
    """tau2_k = b / (a + n_c/2 + 1) + sum_c mu_ck^2 / (2a + n_c + 2)   (paper Sec. 4)."""
    n_comp = means.shape[0]
    return (hyper.b + 0.5 * jnp.sum(means**2, axis=0)) / (hyper.a + 0.5 * n_comp + 1.0)


def m_step(stats: SuffStats, params: Params, hyper: Hyper, config: EMConfig) -> Params:
    """One ECM sweep: lambda, then mu given (Sigma, T), then Sigma given mu, then T given mu."""
    n_features = params.means.shape[1]
    weights = _update_weights(stats, hyper, config)
    means = _update_means(stats, params.covs, params.tau2, config)
    covs = _update_covs(stats, means, hyper, config, n_features) if config.learn_covs else params.covs
    tau2 = _update_tau2(means, hyper) if config.use_prior else params.tau2
    return Params(weights if weights is not None else params.weights, means, covs, tau2)


def _log_prior(params: Params, hyper: Hyper, config: EMConfig, factors=None, psi_chol=None) -> jnp.ndarray:
    """log p(lambda) + log p(mu | T) + log p(Sigma) + log p(T); the IG on tau2 unnormalized when a <= 0.
    ``factors``: ``covariance_factors(params.covs)``, ``psi_chol``: the Cholesky factor of alpha Sigma*, when the
    caller has them (None: computed here)."""
    n_comp, n_features = params.means.shape
    lp = jnp.zeros(())
    if config.learn_weights:
        nu = hyper.nu
        lp += gammaln(jnp.sum(nu)) - jnp.sum(gammaln(nu)) + jnp.sum((nu - 1.0) * jnp.log(params.weights))
    lp += jnp.sum(-0.5 * params.means**2 / params.tau2[None] - 0.5 * jnp.log(params.tau2)[None] - 0.5 * _LOG_2PI)
    if config.learn_covs:
        alpha = hyper.alpha
        if config.diagonal:
            shape = 0.5 * (alpha + n_features - 1.0)
            rate = 0.5 * alpha * jnp.diagonal(hyper.sigma_star)[None]
            lp += jnp.sum(shape * jnp.log(rate) - gammaln(shape) - (shape + 1.0) * jnp.log(params.covs)
                          - rate / params.covs)
        else:
            psi = alpha * hyper.sigma_star
            # log-determinants and tr(Sigma_c^{-1} Psi) through Cholesky factors (no LU; see _cholesky)
            psi_chol = _cholesky(psi) if psi_chol is None else psi_chol
            logdet_psi = 2.0 * jnp.sum(jnp.log(jnp.diagonal(psi_chol)))
            chol_cov, whiten = covariance_factors(params.covs) if factors is None else factors   # L_c, L_c^{-1}
            logdet_cov = 2.0 * jnp.sum(jnp.log(jnp.diagonal(chol_cov, axis1=-2, axis2=-1)), axis=-1)
            trace = jnp.sum((whiten @ psi_chol) ** 2, axis=(-2, -1))   # ||L_c^{-1} chol(Psi)||_F^2
            lp += jnp.sum(0.5 * alpha * logdet_psi - 0.5 * alpha * n_features * jnp.log(2.0)
                          - multigammaln(0.5 * alpha, n_features)
                          - 0.5 * (alpha + n_features + 1.0) * logdet_cov - 0.5 * trace)
    a, b = hyper.a, hyper.b
    proper = (a > 0) & (b > 0)
    log_norm = jnp.where(proper, a * jnp.log(jnp.where(proper, b, 1.0)) - gammaln(jnp.where(proper, a, 1.0)), 0.0)
    lp += jnp.sum(log_norm - (a + 1.0) * jnp.log(params.tau2) - b / params.tau2)
    return lp


def log_posterior(X, params, hyper, allowed, config) -> jnp.ndarray:
    """The EM objective: log likelihood (+ log prior for MAP), in centred coordinates."""
    _, loglik = e_step(X, params, allowed, config)
    return loglik + (_log_prior(params, hyper, config) if config.use_prior else 0.0)


def data_pass(X, params: Params, allowed, config: EMConfig, weight=None, data_axis=None, factors=None):
    """The E-step's sufficient statistics and the log likelihood sum_i w_i log p(x_i): the only work that touches
    the data. ``weight`` (N,): 1 for a real row, 0 for padding (None: all rows real). ``data_axis``: inside
    ``shard_map`` over a mesh axis of data shards (zoo.inference.sharding), the name of that axis; the shards'
    sums are added (psum), so every shard then holds the statistics of the whole data set. ``factors``: the
    covariances' ``covariance_factors`` when the caller has them."""
    if weight is None:
        resp, loglik = e_step(X, params, allowed, config, factors)
    else:
        terms = _log_joint_terms(X, params, allowed, config, factors)
        log_norm = logsumexp(terms, axis=1, keepdims=True)
        real = weight[:, None] > 0
        resp = _materialized(jnp.where(real, jnp.exp(terms - log_norm), 0.0))
        loglik = jnp.sum(jnp.where(real, log_norm, 0.0))
    stats = collect_suff_stats(X, resp, config.diagonal)
    if data_axis is not None:
        stats, loglik = jax.lax.psum((stats, loglik), data_axis)
    return stats, loglik


def run_em(X: jnp.ndarray, init: Params, hyper: Hyper, allowed: jnp.ndarray, config: EMConfig,
           max_iter: int = 200, tol: float = 1e-8, weight=None, data_axis=None) -> EMResult:
    """Iterate E and M steps until the relative objective change is below ``tol`` or ``max_iter``.

    X (N, D) centred data; allowed (N, C) bool (all True for a plain mixture). The objective trace has
    ``max_iter + 1`` entries (entry t is the objective of the parameters after t iterations); entries after
    ``n_iter`` repeat the final value. One pass over the data per iteration: the E-step of iteration t also
    yields the log likelihood of the parameters it starts from. ``weight``, ``data_axis``: this shard's rows of a
    data-sharded fit (``data_pass``; zoo.inference.sharding.run_em_sharded).
    """
    full = not config.diagonal
    # Psi = alpha Sigma* is fixed: factored once, outside the loop
    psi_chol = _cholesky(hyper.alpha * hyper.sigma_star) if full and config.use_prior and config.learn_covs else None
    prior = (lambda p, f: _log_prior(p, hyper, config, f, psi_chol)) if config.use_prior else (lambda p, f: 0.0)

    def objective_and_stats(params):
        """(suff stats, log posterior) of one iterate: its covariances factored once for the E-step and prior."""
        factors = covariance_factors(params.covs) if full else None
        stats, loglik = data_pass(X, params, allowed, config, weight, data_axis, factors)
        return stats, loglik + prior(params, factors)

    def body(carry):
        params, trace, it, _ = carry
        stats, value = objective_and_stats(params)   # the objective of iterate ``it``
        trace = trace.at[it].set(value)
        converged = (it > 0) & (jnp.abs(value - trace[it - 1]) <= tol * jnp.maximum(jnp.abs(value), 1.0))
        new = m_step(stats, params, hyper, config)
        # on convergence keep the evaluated iterate, so params and trace[n_iter] describe the same point
        params = jax.tree_util.tree_map(lambda a, b: jnp.where(converged, a, b), params, new)
        return params, trace, it + jnp.where(converged, 0, 1), converged

    def cond(carry):
        _, _, it, converged = carry
        return (it < max_iter) & ~converged

    trace0 = jnp.zeros((max_iter + 1,), X.dtype)
    params, trace, n_iter, converged = jax.lax.while_loop(
        cond, body, (init, trace0, jnp.asarray(0), jnp.asarray(False)))
    final = jnp.where(converged, trace[n_iter], objective_and_stats(params)[1])
    trace = trace.at[n_iter].set(final)
    idx = jnp.arange(max_iter + 1)
    trace = jnp.where(idx <= n_iter, trace, final)
    return EMResult(params, trace, n_iter, converged)


@functools.partial(jax.jit, static_argnames=("config", "max_iter"))
def run_em_restarts(X, inits: Params, hyper: Hyper, allowed, config: EMConfig, max_iter: int = 200,
                    tol: float = 1e-8, weight=None) -> EMResult:
    """``run_em`` vectorized over restarts: every leaf of ``inits`` has a leading (chain,) axis.

    Compiled once per (shapes, config, max_iter), so repeated fits of same-shaped data reuse the compilation;
    ``weight`` (N,): 1 for a real row, 0 for a padding row (``pad_rows``: data sets of different sizes padded to
    one ``row_bucket`` share the compilation).
    """
    return jax.vmap(lambda init: run_em(X, init, hyper, allowed, config, max_iter=max_iter, tol=tol,
                                        weight=weight))(inits)


#: Up to this many rows a data set is padded to the next power of two (``row_bucket``), above it to the next multiple
#: of ``ROW_BUCKET_STEP``.
ROW_BUCKET_POWER_OF_TWO_UP_TO = 512
ROW_BUCKET_STEP = 256


def row_bucket(n_rows: int) -> int:
    """The number of rows a data set of ``n_rows`` is padded to (``pad_rows``), so that fits of data sets of
    different sizes share one compiled EM program (XLA compiles one per shape; a compilation of the EM costs seconds
    of CPU, while a small data set's iterations cost milliseconds).

    Up to 512 rows the next power of two (at most twice the rows: at these sizes the iterations cost little next to
    a compilation, and one bucket serves many sizes: carbonetto03's Sec. 5.2 data sets of 173-200 regions all
    become 256); above, the next multiple of 256 (at most 1.5x the rows at 513, under 20 % from 1,280 on)."""
    n_rows = int(n_rows)
    if n_rows <= ROW_BUCKET_POWER_OF_TWO_UP_TO:
        return 1 << max(n_rows - 1, 0).bit_length()
    return -(-n_rows // ROW_BUCKET_STEP) * ROW_BUCKET_STEP


def pad_rows(X, allowed, n_rows: int | None = None):
    """``X`` (N, D) and ``allowed`` (N, C) padded to ``n_rows`` (default ``row_bucket(N)``) rows, and the rows'
    ``weight`` (n_rows,): 1 for the N real rows, 0 for the padding. Padding rows are zeros allowed in every
    component (so every log-sum-exp stays finite); ``data_pass`` leaves them out of every sum, so the EM's
    iterates are those of the unpadded data up to the order of the sums' additions (rounding)."""
    X, allowed = np.asarray(X), np.asarray(allowed, bool)    # padded on the host: no eager XLA ops per shape
    n = X.shape[0]
    n_rows = row_bucket(n) if n_rows is None else int(n_rows)
    if n_rows < n:
        raise ValueError(f"n_rows: expected at least the data's {n} rows, got {n_rows}")
    pad = n_rows - n
    weight = np.concatenate([np.ones(n, X.dtype), np.zeros(pad, X.dtype)])
    X = np.concatenate([X, np.zeros((pad, X.shape[1]), X.dtype)])
    allowed = np.concatenate([allowed, np.ones((pad, allowed.shape[1]), bool)])
    return jnp.asarray(X), jnp.asarray(allowed), jnp.asarray(weight)
