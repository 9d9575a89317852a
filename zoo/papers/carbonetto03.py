"""Carbonetto et al. (2003): registration of ``carbonetto03.shrinkage_mixture`` and ``carbonetto03.translation``.

Methods: ``map_em`` (default: the paper's MAP-EM updates), ``ml_em`` (no priors), plus the generic ``nuts``,
``svi`` and ``map`` on the NumPyro program (allocations summed out) as cross-checks.
"""
from __future__ import annotations

import dataclasses
import functools
import json

import jax
import jax.numpy as jnp
import numpy as np

from zoo.data.containers import AnnotatedRegions, check_features
from zoo.data.features import (FeatureScaling, apply_scaling, check_no_constant_features, fit_scaling,
                               positive_definite_centre)
from zoo.inference.mixture import em
from zoo.models import shrinkage_mixture as sm
from zoo.core.options import boolean, nonnegative_float, one_of, positive_float, positive_int
from zoo.core.options import data_devices as check_data_devices
from zoo.core.prediction import Prediction
from zoo.core.priors import dirichlet_concentration, families, inverse_gamma_parameters
from zoo.core.registry import register_method, register_model
from zoo.core.fit import Fit
from zoo.core.idata import to_inference_data

__all__ = ["MixturePrediction", "TranslationPrediction", "initial_params"]

PAPER = "Carbonetto, de Freitas, Gustafson & Thompson 2003"


@dataclasses.dataclass(frozen=True, repr=False)
class MixturePrediction(Prediction):
    """component_proba (N, C): posterior component probabilities xi_ic; ``labels()`` (N,): the most probable."""
    component_proba: np.ndarray

    def labels(self) -> np.ndarray:
        """(N,) the most probable component of each point."""
        return np.argmax(self.component_proba, axis=1)


@dataclasses.dataclass(frozen=True, repr=False)
class TranslationPrediction(Prediction):
    """word_proba (R, W): p(w | b_r) ∝ N(b_r; mu_w, Sigma_w) with uniform p(w); ``labels()`` (R,): the most
    probable word of each region (an index into the vocabulary)."""
    word_proba: np.ndarray

    def labels(self) -> np.ndarray:
        """(R,) the most probable word of each region (index into the data's vocabulary)."""
        return np.argmax(self.word_proba, axis=1)


# --------------------------------------------------------------------------------------------------- options
def _check_hyper(a, b, alpha, nu, n_components):
    for name, value in (("a", a), ("b", b), ("alpha", alpha), ("nu", nu)):
        if not np.isfinite(value):
            raise ValueError(f"{name}: must be finite, got {value}")
    if b < 0:
        raise ValueError(f"b: the IG scale of tau2 must be >= 0, got {b}")
    if a + 0.5 * n_components + 1.0 <= 0:
        raise ValueError(f"a: the tau2 update b / (a + n_c/2 + 1) needs a > -(n_c/2 + 1) = {-(n_components / 2 + 1)}, "
                         f"got {a}")
    if alpha <= 0:
        raise ValueError(f"alpha: the IW prior needs alpha > 0, got {alpha}")
    if nu < 1:
        raise ValueError(f"nu: the MAP update of lambda needs Dirichlet concentrations nu >= 1, got {nu}")


def _build_mixture(n_components: int = 3, covariance: str = "full", known_covariance=None, a: float = 1.0,
                   b: float = 1.0, alpha: float | None = None, nu: float = 1.0,
                   standardize: bool | None = None):
    """Options of the shrinkage mixture; alpha defaults to D + 2 (the smallest integer with a finite IW mean),
    fixed when the data arrive. ``standardize`` (default: True, or False with a ``known_covariance``, which is on
    the data's own scale): every feature centred and scaled by its training mean and standard deviation before the
    fit (``zoo.data.features``); the parameters are then on that scale, and ``predict`` applies the same scaling to
    new data."""
    n_components = positive_int(n_components, "n_components")
    covariance = one_of(covariance, "covariance", ("full", "diag"))
    _check_hyper(a, b, 1.0 if alpha is None else alpha, nu, n_components)
    standardize = known_covariance is None if standardize is None else boolean(standardize, "standardize")
    if known_covariance is not None and standardize:
        raise ValueError("standardize: a known_covariance is on the data's own scale, so the features cannot be "
                         "standardized with it; leave standardize unset (or False)")
    if known_covariance is not None:
        known_covariance = np.asarray(known_covariance, dtype=np.float64)
        if not np.all(np.isfinite(known_covariance)):
            raise ValueError("known_covariance: contains NaN or inf")
        if known_covariance.ndim not in (1, 2):
            raise ValueError(f"known_covariance: expected (D,) variances or a (D, D) matrix, got shape "
                             f"{known_covariance.shape}")
        if known_covariance.ndim == 1 and np.any(known_covariance <= 0):
            raise ValueError("known_covariance: variances must be positive")
        if known_covariance.ndim == 2:
            if known_covariance.shape[0] != known_covariance.shape[1] or \
                    np.any(np.linalg.eigvalsh(0.5 * (known_covariance + known_covariance.T)) <= 0):
                raise ValueError("known_covariance: a (D, D) matrix must be symmetric positive definite")
    options = dict(n_components=int(n_components), covariance=covariance, known_covariance=known_covariance,
                   a=float(a), b=float(b), alpha=None if alpha is None else float(alpha), nu=float(nu),
                   standardize=standardize)
    return sm.shrinkage_mixture, options, sm.default_priors(int(n_components), a, b, nu)


def _build_translation(covariance: str = "full", a: float = -1.0, b: float = 1e-5, alpha: float | None = None,
                       standardize: bool = True):
    """Options of the translation model; defaults are the paper's a = -1, b = 1e-5, alpha = D + 2; ``standardize``
    as for the shrinkage mixture (default True: features scaled by their training mean and standard deviation)."""
    covariance = one_of(covariance, "covariance", ("full", "diag"))
    _check_hyper(a, b, 1.0 if alpha is None else alpha, 1.0, 1)
    options = dict(covariance=covariance, a=float(a), b=float(b), alpha=None if alpha is None else float(alpha),
                   standardize=boolean(standardize, "standardize"))
    priors = {"tau2": sm.tau2_prior(a, b)}
    return sm.translation_model, options, priors


# ------------------------------------------------------------------------------------------------------ data
def _alpha_for(options, n_features):
    alpha = options["alpha"] if options["alpha"] is not None else n_features + 2.0
    if alpha <= n_features - 1:
        raise ValueError(f"alpha: the IW prior on {n_features}-dimensional covariances needs alpha > D - 1 = "
                         f"{n_features - 1}, got {alpha}")
    return alpha


def _data_moments(X):
    """(mu*, Sigma*): the data's mean (D,) and the centre (D, D) of the IW prior (paper Sec. 4: the sample
    covariance). The IW prior exists to keep every Sigma_c = (scatter_c + alpha Sigma*) / (...) positive definite,
    which it does only when Sigma* is: with exactly dependent features (histogram bins or shares that sum to one)
    the sample covariance is singular, every scatter_c is singular in the same direction, and the Cholesky factor of
    Sigma_c was NaN from the first M-step (issue 34). So Sigma* is the sample covariance made positive definite
    (``positive_definite_centre``: unchanged unless its correlation matrix has an eigenvalue below 1e-6)."""
    check_no_constant_features(X, "the carbonetto03 models")
    mu_star = X.mean(axis=0)
    sigma_star = np.cov(X, rowvar=False, bias=True).reshape(X.shape[1], X.shape[1])
    return mu_star, positive_definite_centre(sigma_star)


def _scaling(spec, X) -> FeatureScaling | None:
    """The feature scaling learned on training data X (N, D) when the spec standardizes (None otherwise); specs
    built before the option existed (a fit file's arguments) did not standardize."""
    if not spec.options.get("standardize", False):
        return None
    check_no_constant_features(X, "the carbonetto03 models")
    return fit_scaling(X)


def _mixture_arrays(spec, data):
    X = check_features(data, "X")
    n_comp = spec.options["n_components"]
    if X.shape[0] < n_comp:
        raise ValueError(f"X: {X.shape[0]} points but n_components = {n_comp}; need at least one point per component")
    known = spec.options["known_covariance"]
    if known is not None and known.shape[0] != X.shape[1]:
        raise ValueError(f"known_covariance: has {known.shape[0]} features, X has {X.shape[1]}")
    return X


def _translation_arrays(data):
    if not isinstance(data, AnnotatedRegions):
        raise ValueError(f"data: carbonetto03.translation takes zoo.data.AnnotatedRegions, got {type(data).__name__}")
    allowed = data.keyword_matrix()[data.image_ids].astype(bool)  # (R, W)
    return data.X, allowed


def _mixture_program_args(spec, data):
    X = _mixture_arrays(spec, data)
    return _program_kwargs(spec, apply_scaling(X, _scaling(spec, X)))


def _translation_program_args(spec, data):
    X, allowed = _translation_arrays(data)
    return _program_kwargs(spec, apply_scaling(X, _scaling(spec, X)), allowed)


def _program_kwargs(spec, X, allowed=None):
    diagonal = spec.options["covariance"] == "diag"
    mu_star, sigma_star = _data_moments(X)
    kwargs = dict(mu_star=jnp.asarray(mu_star), sigma_star=jnp.asarray(sigma_star),
                  alpha=_alpha_for(spec.options, X.shape[1]), priors=spec.priors, diagonal=diagonal)
    if allowed is None:
        known = spec.options["known_covariance"]
        if known is not None and diagonal and known.ndim == 2:
            known = np.diagonal(known).copy()
        if known is not None and not diagonal and known.ndim == 1:
            known = np.diag(known)
        kwargs.update(n_components=spec.options["n_components"],
                      known_covariance=None if known is None else jnp.asarray(known))
        return dict(X=jnp.asarray(X), **kwargs)
    return dict(X=jnp.asarray(X), allowed=jnp.asarray(allowed), **kwargs)


# ------------------------------------------------------------------------------------------------------- EM
def _ig_hyper(spec, use_prior):
    """(a, b) of the tau2 prior; MAP-EM's closed-form tau update needs the inverse-gamma family."""
    if not use_prior:
        return 1.0, 1.0
    return inverse_gamma_parameters(spec.priors["tau2"], "tau2", improper_ok=True,
                                    needed_by="map_em's closed-form tau update")


def _nu(spec, n_comp, use_prior):
    if not use_prior or "lambda" not in spec.priors:
        return np.ones(n_comp)
    # concentrations >= 1, else the MAP-EM update can put lambda on 0
    return dirichlet_concentration(spec.priors["lambda"], n_comp, "lambda", minimum=1.0,
                                   needed_by="map_em's lambda update")


def initial_params(key, X_centred, allowed, n_comp, sigma_star, diagonal, known, init_means) -> em.Params:
    """One restart's starting point of the EM: means from random points (a point allowed for that component; or
    ``init_means`` (C, D) when given), covariances Sigma* (or ``known``), tau2 = diag Sigma*.

    X_centred (N, D), allowed (N, C) bool, sigma_star (D, D); returns ``em.Params`` with weights (C,), means (C, D),
    covs (C, D, D) or (C, D) when ``diagonal``, tau2 (D,)."""
    n_points, n_features = X_centred.shape
    if init_means is None:
        scores = jax.random.uniform(key, (n_points, n_comp))
        scores = jnp.where(allowed, scores, -1.0)
        if allowed.all():  # distinct points for a plain mixture
            idx = jax.random.choice(key, n_points, (n_comp,), replace=False)
        else:
            idx = jnp.argmax(scores, axis=0)
        means = X_centred[idx]
    else:
        means = init_means
    if known is not None:
        covs = jnp.broadcast_to(known, (n_comp,) + known.shape)
    elif diagonal:
        covs = jnp.broadcast_to(jnp.diagonal(sigma_star), (n_comp, n_features))
    else:
        covs = jnp.broadcast_to(sigma_star, (n_comp, n_features, n_features))
    weights = jnp.full((n_comp,), 1.0 / n_comp)
    return em.Params(weights, means, covs, jnp.diagonal(sigma_star))


def _run_em(spec, X, allowed, *, use_prior, learn_weights, seed, num_chains, max_iter, tol, init_means,
            reg_covar, progress_bar, data_devices=None):
    del progress_bar  # restarts run vectorized in one compiled call (a few seconds at most)
    n_points, n_features = X.shape
    n_comp = allowed.shape[1]
    kw = _program_kwargs(spec, X, None if learn_weights else allowed)
    diagonal = kw["diagonal"]
    known = kw.get("known_covariance")
    mu_star, sigma_star = np.asarray(kw["mu_star"]), np.asarray(kw["sigma_star"])
    a, b = _ig_hyper(spec, use_prior)
    hyper = em.Hyper(sigma_star=jnp.asarray(sigma_star), alpha=jnp.asarray(kw["alpha"]), a=jnp.asarray(a),
                     b=jnp.asarray(b), nu=jnp.asarray(_nu(spec, n_comp, use_prior and learn_weights)),
                     reg_covar=jnp.asarray(0.0 if use_prior else reg_covar))
    config = em.EMConfig(diagonal=diagonal, use_prior=use_prior, learn_weights=learn_weights,
                         learn_covs=known is None)
    Xc = jnp.asarray(X - mu_star)
    allowed_j = jnp.asarray(allowed)
    if init_means is not None:
        init_means = np.asarray(init_means, dtype=np.float64)
        if init_means.shape != (n_comp, n_features):
            raise ValueError(f"init_means: expected shape ({n_comp}, {n_features}), got {init_means.shape}")
        init_means = jnp.asarray(init_means - mu_star)
    keys = jax.random.split(jax.random.PRNGKey(seed), num_chains)
    inits = jax.vmap(lambda k: initial_params(k, Xc, allowed_j, n_comp, hyper.sigma_star, diagonal, known,
                                               init_means))(keys)
    if data_devices is None:
        # rows padded to a shared size (weight-0 rows left out of every sum): data sets of different sizes, e.g.
        # the Sec. 5.2 experiment's 173-200 regions, run one compiled EM instead of one each
        X_pad, allowed_pad, weight = em.pad_rows(Xc, allowed)
        stacked = em.run_em_restarts(X_pad, inits, hyper, allowed_pad, config, max_iter=max_iter, tol=tol,
                                     weight=weight)
    else:   # the rows split over data_devices devices, the E-step sums psum'd (issue 21.2): the same fixed point
        from zoo.inference.sharding import data_mesh, run_em_sharded
        stacked = run_em_sharded(np.asarray(Xc), inits, hyper, allowed, config, max_iter=max_iter, tol=tol,
                                 mesh=data_mesh(data_devices))
        stacked = jax.tree_util.tree_map(np.asarray, stacked)     # host arrays: off the mesh
    return stacked, Xc, hyper, config, mu_star


def _pointwise_log_lik(Xc, params, allowed, config):
    """log p(x_i | restart's parameters), (chain, N): computed on the rows padded as the EM's (``em.pad_rows``), so
    that data sets of different sizes share the compiled program, and cut back to the N real rows."""
    X_pad, allowed_pad, _ = em.pad_rows(Xc, allowed)
    return _pointwise_log_lik_padded(X_pad, params, allowed_pad, config)[:, :Xc.shape[0]]


@functools.partial(jax.jit, static_argnames=("config",))
def _pointwise_log_lik_padded(Xc, params, allowed, config):
    """(chain, N) of ``_pointwise_log_lik``. Compiled, not run op by op: eager vmapped batched Cholesky
    factorizations were where multi-restart fits on 1,000+ regions were seen to stall (issue 17)."""
    return jax.vmap(lambda p: jax.scipy.special.logsumexp(em._log_joint_terms(Xc, p, allowed, config), axis=1))(params)


def _em_fit(spec, X, allowed, method, *, use_prior, learn_weights, seed, num_chains, max_iter, tol,
            init_means, reg_covar, progress_bar, data_devices, predictor, data, scaling=None):
    if scaling is not None and init_means is not None:    # given on the data's scale, like the data
        init_means = apply_scaling(np.asarray(init_means, dtype=np.float64), scaling)
    res, Xc, hyper, config, mu_star = _run_em(spec, X, allowed, use_prior=use_prior, learn_weights=learn_weights,
                                              seed=seed, num_chains=num_chains, max_iter=max_iter, tol=tol,
                                              init_means=init_means, reg_covar=reg_covar,
                                              progress_bar=progress_bar, data_devices=data_devices)
    params = res.params
    pointwise = _pointwise_log_lik(Xc, params, allowed, config)  # (chain, N)
    posterior = {"mu": np.asarray(params.means) + mu_star}
    if learn_weights:
        posterior["lambda"] = np.asarray(params.weights)
    if config.learn_covs:
        posterior["Sigma"] = np.asarray(params.covs)
    if use_prior:
        posterior["tau2"] = np.asarray(params.tau2)
    posterior = {k: v[:, None] for k, v in posterior.items()}
    comp = "component" if learn_weights else "word"
    dims = {"mu": [comp, "feature"], "lambda": [comp], "tau2": ["feature"],
            "Sigma": [comp, "feature"] if config.diagonal else [comp, "feature", "feature_bis"],
            "x": ["point" if learn_weights else "region", "feature"]}
    coords = {}
    if not learn_weights:
        coords["word"] = list(data.vocabulary)
    idata = to_inference_data(
        posterior,
        sample_stats={"objective": np.asarray(res.objective)[:, None, :],
                      "n_iter": np.asarray(res.n_iter)[:, None], "converged": np.asarray(res.converged)[:, None]},
        log_likelihood={"x": np.asarray(pointwise)[:, None]},
        observed_data={"x": np.asarray(X)}, dims=dims, coords=coords,
        attrs={"method": method, "objective": "log posterior" if use_prior else "log likelihood",
               "feature_scale": "standardized: parameters and x in units of each feature's training standard "
                                "deviation, centred at its training mean" if scaling is not None else "raw"})
    best = int(np.argmax(np.asarray(res.objective)[:, -1]))
    state = dict(params=jax.tree_util.tree_map(lambda x: np.asarray(x[best]), params), mu_star=mu_star,
                 best_chain=best, diagonal=config.diagonal)
    if scaling is not None:    # what predict applies to new data (fits saved before issue 34 have none)
        state.update(feature_mean=np.asarray(scaling.mean), feature_scale=np.asarray(scaling.scale))
    headline = ["tau2", "lambda"] if use_prior and learn_weights else (["tau2"] if use_prior else ["mu"])
    return Fit(idata=idata, spec=spec, method=method, state=state, headline=headline, predictor=predictor,
               data=data)


def _em_options(num_chains=4, max_iter=500, tol=1e-10, init_means=None, reg_covar=1e-6, progress_bar=True,
                data_devices=None):
    """The EM methods' options (the registry refuses other names), checked and in canonical form.

    ``data_devices``: None (one device) or how many of ``jax.devices()`` the rows are sharded over
    (``zoo.inference.sharding.run_em_sharded``: the same iterations, sums in another order)."""
    if init_means is not None:
        init_means = check_features(init_means, "init_means")
    return dict(num_chains=positive_int(num_chains, "num_chains"), max_iter=positive_int(max_iter, "max_iter"),
                tol=positive_float(tol, "tol"), init_means=init_means,
                reg_covar=nonnegative_float(reg_covar, "reg_covar"), progress_bar=boolean(progress_bar, "progress_bar"),
                data_devices=check_data_devices(data_devices))


# -------------------------------------------------------------------------------------------- predictions
#: the predictors' one pass over the data, compiled: run op by op, the plain-JAX Cholesky loops of a prediction
#: took 1.4-17 s on 40 points (each loop step dispatched on its own)
_e_step = jax.jit(em.e_step, static_argnames=("config",))
_log_densities = jax.jit(em.log_component_densities, static_argnames=("diagonal",))


def _best_params(fit):
    p = fit.state["params"]
    return em.Params(*(jnp.asarray(x) for x in p)), fit.state["mu_star"], fit.state["diagonal"]


def _fitted_scaling(fit) -> FeatureScaling | None:
    """The scaling a fit learned on its training data: in the EM state, or (generic methods) recomputed from the
    kept training data when the provenance says the spec standardized; None for fits without one."""
    if isinstance(fit.state, dict) and "feature_mean" in fit.state:
        return FeatureScaling(np.asarray(fit.state["feature_mean"]), np.asarray(fit.state["feature_scale"]))
    options = json.loads(fit.idata.posterior.attrs.get("zoo_model_options", "{}") or "{}")
    if not options.get("standardize", False):
        return None
    X = fit.data.X if isinstance(fit.data, AnnotatedRegions) else check_features(fit.data, "X")
    return fit_scaling(X)


def _predict_mixture(fit, data):
    X = check_features(data, "X")
    params, mu_star, diagonal = _best_params(fit)
    if X.shape[1] != params.means.shape[1]:
        raise ValueError(f"X: expected {params.means.shape[1]} features, got {X.shape[1]}")
    X = apply_scaling(X, _fitted_scaling(fit))
    config = em.EMConfig(diagonal=diagonal)
    allowed = jnp.ones((X.shape[0], params.means.shape[0]), bool)
    resp, _ = _e_step(jnp.asarray(X - mu_star), params, allowed, config)
    resp = np.asarray(resp)
    return MixturePrediction(component_proba=resp)


def _predict_translation(fit, data):
    X = data.X if isinstance(data, AnnotatedRegions) else check_features(data, "X")
    params, mu_star, diagonal = _best_params(fit)
    if X.shape[1] != params.means.shape[1]:
        raise ValueError(f"X: expected {params.means.shape[1]} features, got {X.shape[1]}")
    X = apply_scaling(X, _fitted_scaling(fit))
    log_dens = _log_densities(jnp.asarray(X - mu_star), params.means, params.covs, diagonal)
    proba = np.asarray(jax.nn.softmax(log_dens, axis=1))  # p(w | b) ∝ N(b; mu_w, Sigma_w), uniform p(w)
    return TranslationPrediction(word_proba=proba)


def _generic_predict_mixture(fit, data):
    """Predictions of the generic methods: component probabilities at the posterior mean of the parameters."""
    post = fit.idata.posterior
    # components aligned across draws (zoo.core.relabel) when they were relabelled: a mean over switched labels
    # mixes them
    post = post.assign({site: post[f"{site}_relabelled"] for site in ("mu", "lambda", "Sigma")
                        if f"{site}_relabelled" in post})
    diagonal = fit.spec.options["covariance"] == "diag"
    known = fit.spec.options["known_covariance"]
    means = post["mu"].mean(("chain", "draw")).values
    n_comp = means.shape[0]
    if "Sigma" in post:
        covs = post["Sigma"].mean(("chain", "draw")).values
    else:
        covs = np.broadcast_to(np.diag(known) if (known.ndim == 1 and not diagonal) else
                               (np.diagonal(known) if known.ndim == 2 and diagonal else known),
                               (n_comp,) + ((means.shape[1],) if diagonal else (means.shape[1],) * 2))
    weights = post["lambda"].mean(("chain", "draw")).values
    params = em.Params(jnp.asarray(weights), jnp.asarray(means), jnp.asarray(covs), jnp.ones(means.shape[1]))
    X = check_features(data, "X")
    if X.shape[1] != means.shape[1]:
        raise ValueError(f"X: the model was fitted on {means.shape[1]} features, got {X.shape[1]}")
    X = apply_scaling(X, _fitted_scaling(fit))
    resp, _ = _e_step(jnp.asarray(X), params, jnp.ones((X.shape[0], n_comp), bool), em.EMConfig(diagonal=diagonal))
    resp = np.asarray(resp)
    return MixturePrediction(component_proba=resp)


# --------------------------------------------------------------------------------------------- registration
def _site_dims(component: str, unit: str) -> dict:
    """Every method's dims (the program's plates: ``component`` / ``word``, ``point`` / ``region``); Sigma is
    (component, feature, feature_bis) with full covariances and (component, feature) with diagonal ones."""
    return {"mu": (component, "feature"), "lambda": (component,), "tau2": ("feature",),
            "Sigma": ((component, "feature", "feature_bis"), (component, "feature")), "x": (unit, "feature")}


register_model(
    "carbonetto03.shrinkage_mixture", paper=PAPER, title="Shrinkage Gaussian mixture (MAP-EM feature weighting)",
    build=_build_mixture, data_kind="ndarray", default_method="map_em", headline=("tau2", "lambda"),
    program_args=_mixture_program_args,
    generic_predictor=_generic_predict_mixture, exchangeable={"mu": 0, "lambda": 0, "Sigma": 0},
    prior_families={"tau2": families(sm.dist.InverseGamma, sm.ImproperInverseGamma,
                                     why="the conjugate M-step of eq. 9")},
    site_dims=_site_dims("component", "point"))

register_model(
    "carbonetto03.translation", paper=PAPER, title="Discrete-Gaussian translation model (regions -> words)",
    build=_build_translation, data_kind="AnnotatedRegions", default_method="map_em", headline=("tau2",),
    program_args=_translation_program_args,
    prior_families={"tau2": families(sm.dist.InverseGamma, sm.ImproperInverseGamma,
                                     why="the conjugate M-step of eq. 9")},
    site_dims=_site_dims("word", "region"), coords=lambda spec, data: {"word": list(data.vocabulary)})


def _mixture_data(spec, data):
    """(model's X (N, D), allowed (N, C), the data kept in the fit, the feature scaling or None)."""
    X = _mixture_arrays(spec, data)
    scaling = _scaling(spec, X)
    return apply_scaling(X, scaling), np.ones((X.shape[0], spec.options["n_components"]), bool), X, scaling


def _translation_data(spec, data):
    X, allowed = _translation_arrays(data)
    scaling = _scaling(spec, X)
    return apply_scaling(X, scaling), allowed, data, scaling


def _em_method(model_id, name, *, use_prior, arrays, predictor, learn_weights, doc):
    """Register one EM variant: validate options and data first, then run the shared EM fit."""
    def runner(spec, data, seed=0, **options) -> Fit:
        opts = _em_options(**options)
        X, allowed, kept, scaling = arrays(spec, data)
        return _em_fit(spec, X, allowed, name, use_prior=use_prior, learn_weights=learn_weights, seed=seed,
                       predictor=predictor, data=kept, scaling=scaling, **opts)

    runner.__doc__ = doc
    register_method(model_id, name, options=_em_options)(runner)


#: (model, method, use_prior, arrays, predictor, learn_weights, doc) of the four EM variants
_EM_METHODS = (
    ("carbonetto03.shrinkage_mixture", "map_em", True, _mixture_data, _predict_mixture, True,
     "MAP-EM with the paper's shrinkage updates (one draw per chain; chains are random restarts)."),
    ("carbonetto03.shrinkage_mixture", "ml_em", False, _mixture_data, _predict_mixture, True,
     "Maximum-likelihood EM (no priors; ``reg_covar`` floors the variances as scikit-learn does)."),
    ("carbonetto03.translation", "map_em", True, _translation_data, _predict_translation, False,
     "MAP-EM of the translation model (paper Sec. 5.1 updates with the shrinkage prior)."),
    ("carbonetto03.translation", "ml_em", False, _translation_data, _predict_translation, False,
     "Maximum-likelihood EM of the translation model (no priors)."),
)
for _model, _name, _use_prior, _arrays, _predictor, _learn_weights, _doc in _EM_METHODS:
    _em_method(_model, _name, use_prior=_use_prior, arrays=_arrays, predictor=_predictor,
               learn_weights=_learn_weights, doc=_doc)
