"""Ross (2003), Multiple Cause Vector Quantization: model ids, the ``variational_em`` method and predictions.

- ``ross03.mcvq`` (options ``n_vqs`` K, ``n_states`` J): thesis Ch. 2.
- ``ross03.mcvq_supervised`` (K, J): class-conditional state priors b_nkj from labelled cases (Sec. 4.2.2);
  labels come from a ``MatrixDataset`` or the ``labels=`` option of ``zoo.fit``.
- ``ross03.mcvq_clustered`` (K, J, ``n_clusters`` N): the unsupervised clustering of Sec. 4.2.1.

Data: a ``zoo.data.Matrix`` (mask True = observed), a ``zoo.data.ross03.MatrixDataset`` or a 2-D array (NaN =
missing). Missing entries take no part in the E or M steps. sigma is floored at ``sigma_floor`` (default 1% of the
pooled standard deviation of the observed values) so zero-variance dimensions cannot collapse it to 0.

>>> import zoo
>>> from zoo.data import Matrix
>>> shapes = zoo.load_dataset("shapes").matrix                 # Matrix (729, 121): 11 x 11 images of shapes
>>> train, test = Matrix(shapes.values[:400]), Matrix(shapes.values[400:])
>>> spec = zoo.model("ross03.mcvq", n_vqs=3, n_states=5)
>>> fit = zoo.fit(spec, train, method="variational_em", seed=0, num_chains=2, max_iter=50, progress_bar=False)
>>> fit.predict(test).reconstruction.shape
(329, 121)
"""
from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist

from zoo.data.containers import Matrix
from zoo.data.ross03 import MatrixDataset
from zoo.inference.host_random import categorical_draws, drawable_or_ones
from zoo.inference.mcvq import steps
from zoo.inference.mcvq.variational_em import (MCVQConfig, MCVQState, initialize, run_variational_em,
                                               temperature_schedule)
from zoo.models.mcvq import default_priors, emission_parameters, mcvq_program
from zoo.core.options import data_devices as check_data_devices
from zoo.core.options import positive_float, positive_int
from zoo.core.progress import progress_callback
from zoo.core.prediction import Prediction
from zoo.core.priors import dirichlet_concentration
from zoo.core.registry import register_method, register_model
from zoo.core.fit import Fit
from zoo.core.idata import POINT_ESTIMATE_NOTE, add_variational_parameters, to_inference_data

__all__ = ["MCVQPrediction", "MCVQFitState", "predict", "as_matrix", "classify_monte_carlo"]

PAPER = "Ross 2003"
_KINDS = {"ross03.mcvq": "plain", "ross03.mcvq_supervised": "supervised", "ross03.mcvq_clustered": "clustered"}


# --- model building ---------------------------------------------------------------------------------------------
def _builder(kind: str):
    def build(n_vqs: int = 3, n_states: int = 5, **extra):
        K, J = positive_int(n_vqs, "n_vqs"), positive_int(n_states, "n_states")
        options = {"n_vqs": K, "n_states": J}
        N = 1
        if kind == "clustered":
            N = positive_int(extra.pop("n_clusters", 2), "n_clusters")
            options["n_clusters"] = N
        if extra:
            raise ValueError(f"{sorted(extra)[0]}: unknown option of the {kind} MCVQ model")
        priors = default_priors(K, J, N)
        program = functools.partial(mcvq_program, n_classes=N) if kind != "supervised" else mcvq_program
        return program, options, priors
    return build


#: The VQs are exchangeable (their labels can differ between restarts): matched on a, b, mu, sigma; the states s
#: (one column per VQ) follow, and r's values (which VQ a dimension selected) are mapped (zoo.core.finish's
#: relabelling step). Then the states within each VQ, exchangeable too: matched on mu, sigma, b of that VQ, and s's
#: values (the state each case took in that VQ) mapped.
_VQS = {"a": 1, "b": 1, "mu": 1, "sigma": 1, "s": ("carry", 1), "r": "labels",
        "within": {"groups": {"mu": 1, "sigma": 1, "b": 1}, "states": {"mu": 2, "sigma": 2, "b": 2},
                   "labels": {"s": 1}}}

#: the per-case draws of q (states per VQ, clusters); every method's dims (the program's plate ``case``)
_UNIT_SITES = ("s", "y")
_SITE_DIMS = {"mu": ("dim", "vq", "state"), "sigma": ("dim", "vq", "state"), "a": ("dim", "vq"),
              "b": ("class", "vq", "state"), "beta": ("class",), "r": ("dim",), "s": ("case", "vq"), "y": ("case",),
              "x": ("case", "dim"), "free_energy": ("iteration",), "temperature": ("iteration",)}
register_model("ross03.mcvq", paper=PAPER, title="Multiple Cause Vector Quantization", build=_builder("plain"),
               data_kind="Matrix", default_method="variational_em", headline=("b",), exchangeable=_VQS,
               unit_sites=_UNIT_SITES, site_dims=_SITE_DIMS)
register_model("ross03.mcvq_supervised", paper=PAPER, title="MCVQ with class-conditional state priors (Sec. 4.2.2)",
               build=_builder("supervised"), data_kind="Matrix", default_method="variational_em", headline=("b",),
               exchangeable=_VQS,
               unit_sites=_UNIT_SITES, site_dims=_SITE_DIMS)
register_model("ross03.mcvq_clustered", paper=PAPER, title="MCVQ clustering of cases (Sec. 4.2.1)",
               build=_builder("clustered"), data_kind="Matrix", default_method="variational_em",
               headline=("beta", "b"), exchangeable=_VQS,
               unit_sites=_UNIT_SITES, site_dims=_SITE_DIMS)


# --- data -------------------------------------------------------------------------------------------------------
def as_matrix(data, name: str = "data") -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(values (C, D) with 0 at missing entries, mask (C, D) float 0/1, labels or None) from a Matrix,
    MatrixDataset or array (NaN = missing). Every case needs an observed entry."""
    labels = None
    if isinstance(data, MatrixDataset):
        labels, data = data.labels, data.matrix
    if not isinstance(data, Matrix):
        try:
            data = Matrix(np.asarray(data, dtype=np.float64))
        except (TypeError, ValueError) as err:
            raise ValueError(f"{name}: expected a zoo.data.Matrix, MatrixDataset or 2-D array ({err})") from None
    values, mask = data.values, data.mask
    if values.shape[0] == 0 or values.shape[1] == 0:
        raise ValueError(f"values: empty matrix of shape {values.shape}")
    empty_rows = np.flatnonzero(~mask.any(axis=1))
    if empty_rows.size:
        raise ValueError(f"mask: case {empty_rows[0]} has no observed entry ({empty_rows.size} such cases)")
    return values, mask.astype(np.float64), labels


def _check_labels(labels, n_cases: int) -> tuple[np.ndarray, int]:
    if labels is None:
        raise ValueError("labels: the supervised model needs class labels (a MatrixDataset with labels or "
                         "zoo.fit(..., labels=y))")
    lab = np.asarray(labels)
    if lab.shape != (n_cases,) or not np.issubdtype(lab.dtype, np.integer) or lab.min() < 0:
        raise ValueError(f"labels: expected ({n_cases},) non-negative integers")
    n_classes = int(lab.max()) + 1
    missing = np.setdiff1d(np.arange(n_classes), lab)
    if missing.size:
        raise ValueError(f"labels: class {missing[0]} has no training case (classes must be 0..N-1)")
    return lab.astype(np.int64), n_classes


def _concentration(spec, site: str, size: int) -> np.ndarray:
    """The Dirichlet concentration of ``site`` (shape (size,), all >= 1 so the MAP M-step is interior)."""
    return dirichlet_concentration(spec.priors[site], size, site, minimum=1.0,
                                   needed_by="the variational EM's MAP update")


# --- fitting ----------------------------------------------------------------------------------------------------
@dataclasses.dataclass
class MCVQFitState:
    """What a fit keeps: the final EM states of all restarts (arrays with a leading chain axis), the best restart
    (lowest final free energy), the settings needed for predictions."""
    states: MCVQState
    best_chain: int
    kind: str
    sigma_floor: float
    monte_carlo_samples: int
    free_energy: np.ndarray  # (chain, iteration)

    def params(self, chain: int | None = None) -> steps.MCVQParams:
        c = self.best_chain if chain is None else chain
        return steps.MCVQParams(*(jnp.asarray(x[c]) for x in self.states.params))

    def g(self, chain: int | None = None) -> jnp.ndarray:
        return jnp.asarray(self.states.post.g[self.best_chain if chain is None else chain])


def _run(spec, data, seed, num_chains, max_iter, t_start, anneal_iters, sigma_floor, labels, progress_bar,
         monte_carlo_samples, num_draws, data_devices=None):
    kind = _KINDS[spec.id]
    X, M, data_labels = as_matrix(data)
    C, D = X.shape
    K, J = spec.options["n_vqs"], spec.options["n_states"]
    if K > D:
        raise ValueError(f"n_vqs: {K} VQs for {D} dimensions (need n_vqs <= D)")
    empty_cols = np.flatnonzero(M.sum(0) == 0)
    if empty_cols.size:
        raise ValueError(f"mask: dimension {empty_cols[0]} has no observed entry ({empty_cols.size} such dimensions)")
    num_chains = positive_int(num_chains, "num_chains")
    max_iter = positive_int(max_iter, "max_iter")
    monte_carlo_samples = positive_int(monte_carlo_samples, "monte_carlo_samples")
    num_draws = positive_int(num_draws, "num_draws")
    t_start = float(max(1, C - 1)) if t_start is None else positive_float(t_start, "t_start")
    anneal_iters = max(1, (3 * max_iter) // 4) if anneal_iters is None else positive_int(anneal_iters, "anneal_iters")
    temps = temperature_schedule(max_iter, t_start, anneal_iters)
    observed = X[M > 0]
    if sigma_floor is None:
        sigma_floor = max(0.01 * float(observed.std()), 1e-6)
    sigma_floor = positive_float(sigma_floor, "sigma_floor")
    data_devices = check_data_devices(data_devices)

    if kind == "supervised":
        lab, N = _check_labels(data_labels if labels is None else labels, C)
        z_init = jnp.asarray(np.eye(N)[lab])
        config = MCVQConfig(update_classes=False, update_beta=False, with_beta_prior=False)
        conc_beta = np.ones(N)
    elif labels is not None:
        raise ValueError(f"labels: {spec.id} does not take labels (use ross03.mcvq_supervised)")
    elif kind == "clustered":
        N = spec.options["n_clusters"]
        z_init = None
        config = MCVQConfig(update_classes=True, update_beta=True, with_beta_prior=True)
        conc_beta = _concentration(spec, "beta", N)
    else:
        N, z_init = 1, None
        config = MCVQConfig()
        conc_beta = np.ones(1)
    conc = steps.PriorConcentrations(a=jnp.asarray(_concentration(spec, "a", K)),
                                     b=jnp.asarray(_concentration(spec, "b", J)), beta=jnp.asarray(conc_beta))

    Xj, Mj = jnp.asarray(X), jnp.asarray(M)
    keys = jax.random.split(jax.random.PRNGKey(seed), num_chains)
    init = jax.vmap(lambda k: initialize(k, Xj, Mj, K, J, N, sigma_floor, z_init=z_init,
                                         random_class_priors=kind == "clustered"))(keys)
    with progress_callback(max_iter, f"{spec.id} variational EM", progress_bar) as progress:
        if data_devices is None:
            final, trace = run_variational_em(init, Xj, Mj, temps, conc, sigma_floor, config, progress=progress)
        else:   # the cases split over data_devices devices, the sums over cases psum'd (issue 21.2)
            from zoo.inference.sharding import data_mesh, run_variational_em_sharded
            final, trace = run_variational_em_sharded(init, X, M, temps, conc, sigma_floor, config,
                                                      mesh=data_mesh(data_devices), progress=progress)
    last = trace[:, -1]
    # a restart whose free energy is NaN (an overflow) is never the best; when all are, zoo.core.finite names the cause
    best = int(np.nanargmin(last)) if np.isfinite(last).any() else 0
    state = MCVQFitState(states=jax.tree_util.tree_map(np.asarray, final), best_chain=best, kind=kind,
                         sigma_floor=sigma_floor, monte_carlo_samples=monte_carlo_samples, free_energy=trace)
    return _to_fit(spec, data, state, X, M, trace, temps, seed, num_draws)


def _draw_q(key, post, c: int, kind: str, num_draws: int) -> dict[str, np.ndarray]:
    """S = ``num_draws`` independent draws of restart c's q (Sec. 2.3): r_d ~ Cat(g_d) (S, D); the class
    y^c ~ Cat(z^c) (S, C) (clustered model; the supervised one observes it, the plain one has one class); the
    states s^c_k ~ Cat(m^c_{y,k}) (S, C, K). On the host (``zoo.inference.host_random``): eager
    ``jax.random.categorical`` compiled a program per shape, about a quarter of a Shapes fit's time."""
    k_r, k_y, k_s = jax.random.split(jax.random.fold_in(key, c), 3)
    g, m, z = (drawable_or_ones(x[c]) for x in (post.g, post.m, post.z))      # (D,K), (C,N,K,J), (C,N)
    r = categorical_draws(k_r, g, num_draws)                                        # (S, D)
    if kind == "clustered":
        y = categorical_draws(k_y, z, num_draws)                                    # (S, C)
    else:
        y = np.broadcast_to(np.argmax(z, axis=-1), (num_draws, z.shape[0]))
    m_of_y = m[np.arange(m.shape[0])[None, :], y]                                   # (S, C, K, J)
    out = {"r": r, "s": categorical_draws(k_s, m_of_y)}
    if kind == "clustered":
        out["y"] = y.astype(np.int32)
    return out


@functools.partial(jax.jit, static_argnames=("n_vqs",))
def _log_lik_of_selections(X, M, params: steps.MCVQParams, selections, n_vqs: int) -> jnp.ndarray:
    """(U, C) exact log p(x^c | R = r_u, theta) for U selections (U, D) int, one compiled loop over them."""
    return jax.lax.map(lambda r: steps.log_likelihood_given_selection(
        X, M, params, jax.nn.one_hot(r, n_vqs, dtype=X.dtype)), selections)


def _log_lik_at_draws(X, M, state: MCVQFitState, c: int, r: np.ndarray) -> np.ndarray:
    """(S, C) exact log p(x^c | R = r_s, theta) (S and y summed out) at each draw r_s of q(R) of restart c; draws
    of R repeat (q(R) is nearly one-hot after annealing), so each distinct R is computed once (their number padded
    to a power of two, so that few loop lengths are ever compiled)."""
    unique, inverse = np.unique(r, axis=0, return_inverse=True)
    n_unique = unique.shape[0]
    padded = np.concatenate([unique, np.repeat(unique[:1], (1 << (n_unique - 1).bit_length()) - n_unique, 0)])
    K = state.states.params.mu.shape[2]
    ll = np.asarray(_log_lik_of_selections(X, M, state.params(c), jnp.asarray(padded), K))[:n_unique]
    return ll[np.asarray(inverse).reshape(-1)]


#: the stream number of the posterior predictive's key (jax.random.fold_in of the fit's seed; q's draws use 11)
_PREDICTIVE_STREAM = 13
#: replicated data are kept up to this many numbers (restarts x draws x cases x dims); above, none are stored
MAX_REPLICATED = 2.0e7


def replicate_cases(key, mu, sigma, r, s) -> np.ndarray:
    """(S, C, D) replicated data x^c_d ~ N(mu[d, r_d, s^c_{r_d}], sigma[...]^2) (eq. 2.1) at S draws of q:
    mu, sigma (D, K, J) the restart's point estimates; r (S, D) and s (S, C, K) draws of its q. Every entry is
    simulated, observed or missing."""
    loc, scale = jax.vmap(lambda r1, s1: emission_parameters(jnp.asarray(mu), jnp.asarray(sigma), r1, s1))(
        jnp.asarray(r), jnp.asarray(s))
    return np.asarray(loc + scale * jax.random.normal(key, loc.shape, dtype=loc.dtype))


def _posterior_predictive(seed: int, params, draws: list) -> dict:
    """``posterior_predictive`` x (chain, draw, case, dim): ``replicate_cases`` per restart with its own key
    (``_PREDICTIVE_STREAM``), so q's draws are untouched; empty above ``MAX_REPLICATED`` numbers."""
    n_chain, (n_draw, n_case, _) = len(draws), draws[0]["s"].shape
    if n_chain * n_draw * n_case * params.mu.shape[1] > MAX_REPLICATED:
        return {}
    key = jax.random.fold_in(jax.random.PRNGKey(seed), _PREDICTIVE_STREAM)
    return {"x": np.stack([replicate_cases(jax.random.fold_in(key, c), params.mu[c], params.sigma[c], d["r"],
                                           d["s"]) for c, d in enumerate(draws)])}


def _to_fit(spec, data, state: MCVQFitState, X, M, trace, temps, seed: int, num_draws: int) -> Fit:
    """``posterior``: S = ``num_draws`` draws of each restart's q (chain = restart) of the latent selections r, the
    states s and (clustered model) the classes y; the parameters mu, sigma, a, b, beta are the method's point
    estimates (ML / MAP), the same in every draw of a restart. q's own parameters (g, the state and cluster
    probabilities) go to the ``variational_parameters`` group; ``posterior_predictive`` x (chain, draw, case, dim):
    data replicated at each draw (``replicate_cases``), so ``az.plot_ppc`` reads the fit."""
    params, post = state.states
    n_chain = trace.shape[0]
    Xj, Mj = jnp.asarray(X), jnp.asarray(M)
    key = jax.random.fold_in(jax.random.PRNGKey(seed), 11)
    draws = [_draw_q(key, post, c, state.kind, num_draws) for c in range(n_chain)]
    posterior = {name: np.stack([d[name] for d in draws]) for name in draws[0]}
    log_lik = np.stack([_log_lik_at_draws(Xj, Mj, state, c, draws[c]["r"]) for c in range(n_chain)])
    fixed = {"mu": params.mu, "sigma": params.sigma, "a": params.a, "b": params.b}
    if state.kind != "plain":
        fixed["beta"] = params.beta
    for name, value in fixed.items():   # a view: repeating a point estimate over the draws costs no memory
        value = np.asarray(value)
        posterior[name] = np.broadcast_to(value[:, None], (n_chain, num_draws) + value.shape[1:])
    dims = {"mu": ["dim", "vq", "state"], "sigma": ["dim", "vq", "state"], "a": ["dim", "vq"],
            "b": ["class", "vq", "state"], "beta": ["class"], "r": ["dim"], "s": ["case", "vq"], "y": ["case"],
            "x": ["case", "dim"], "free_energy": ["iteration"], "objective": ["iteration"],
            "temperature": ["iteration"]}
    observed = np.where(M > 0, X, np.nan)
    idata = to_inference_data(
        posterior,
        sample_stats={"free_energy": trace[:, None], "objective": -trace[:, None],
                      "temperature": np.broadcast_to(temps, trace.shape)[:, None]},
        log_likelihood={"x": log_lik}, observed_data={"x": observed},
        posterior_predictive=_posterior_predictive(seed, params, draws) or None, dims=dims,
        attrs={"method": "variational_em", "log_likelihood": "exact log p(x^c | R = r, theta) at draws r of q(R)",
               "note": "chain = restart; draw = an independent draw of that restart's q over r, s (and y); mu, "
                       "sigma, a, b, beta are point estimates, the same in every draw of a restart"})
    for name in fixed:
        idata.posterior[name].attrs["q"] = POINT_ESTIMATE_NOTE     # moved beside q's parameters by zoo.core.finish
    weights = np.asarray(jnp.einsum("xcn,xcnkj->xckj", post.z, post.m))
    qparams = {"g": (("chain", "dim", "vq"), np.asarray(post.g)),
               "state_proba": (("chain", "case", "vq", "state"), weights)}
    if state.kind == "clustered":
        qparams["cluster_proba"] = (("chain", "case", "class"), np.asarray(post.z))
    add_variational_parameters(idata, qparams)
    headline = ["b"] if state.kind == "plain" else ["beta", "b"]
    return Fit(idata=idata, spec=spec, method="variational_em", state=state, headline=headline, predictor=predict,
               data=data)


_VEM_DOC = """Variational EM with annealed inverse temperature (Ross 2003, Sec. 2.3 and 4.2).

    Options: num_chains (restarts, 4: local optima are common; predictions use the lowest free energy), max_iter
    (40), t_start (first temperature, default C - 1),
    anneal_iters (iterations over which T falls linearly to 1, default 3/4 of max_iter), sigma_floor (default 1% of
    the pooled sd), labels (supervised model), monte_carlo_samples (eq. 4.3 classifier, 1000), num_draws (draws of
    each restart's q in ``posterior``, 100), data_devices (None: one device; n: the cases sharded over n of
    ``jax.devices()``, zoo.inference.sharding.run_variational_em_sharded), progress_bar.
    """


def _make_runner(model_id: str):
    def runner(spec, data, seed=0, num_chains=4, max_iter=40, t_start=None, anneal_iters=None, sigma_floor=None,
               labels=None, progress_bar=True, monte_carlo_samples=1000, num_draws=100, data_devices=None) -> Fit:
        # the registry refuses unknown option names (listing these) before the runner starts
        return _run(spec, data, seed, num_chains, max_iter, t_start, anneal_iters, sigma_floor, labels,
                    progress_bar, monte_carlo_samples, num_draws, data_devices)
    runner.__doc__ = _VEM_DOC
    return runner


for _mid in _KINDS:
    register_method(_mid, "variational_em", kind="variational")(_make_runner(_mid))


# --- predictions ------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True, repr=False)
class MCVQPrediction(Prediction):
    """reconstruction (C, D): sum_kj m g mu at every entry (missing ones too: a prediction); state_proba (C, K, J):
    m (marginal over classes); vq_ownership (D, K): g; log_likelihood (C,): exact log p(x^c | R = argmax g);
    class_proba (C, N): supervised, by the variational bound; class_proba_monte_carlo (C, N): eq. 4.3;
    cluster_proba (C, N): clustered model (z)."""
    reconstruction: np.ndarray
    state_proba: np.ndarray
    vq_ownership: np.ndarray
    log_likelihood: np.ndarray
    class_proba: np.ndarray | None = None
    class_proba_monte_carlo: np.ndarray | None = None
    cluster_proba: np.ndarray | None = None

    def labels(self) -> np.ndarray:
        """(C,) the most probable class (supervised MCVQ) or cluster (clustered MCVQ) of each case."""
        proba = self.class_proba if self.class_proba is not None else self.cluster_proba
        if proba is None:
            raise ValueError("labels: the plain MCVQ predicts no classes (ross03.mcvq_supervised and "
                             "ross03.mcvq_clustered do)")
        return np.argmax(proba, axis=1)


@jax.jit
def _infer_cases(X, M, params: steps.MCVQParams, g):
    """E-step for new cases (exact: m and z depend only on the fixed parameters)."""
    L = steps.data_term(X, M, g, params.mu, params.sigma)
    m = steps.e_step_states(L, params.b)
    z = steps.e_step_classes(L, params.b, params.beta)
    w = jnp.einsum("cn,cnkj->ckj", z, m)
    return w, z, steps.reconstruct(w, g, params.mu)


@jax.jit
def _exact_loglik(X, M, params: steps.MCVQParams, g):
    g_hard = jax.nn.one_hot(jnp.argmax(g, axis=-1), g.shape[-1], dtype=X.dtype)
    return steps.log_likelihood_given_selection(X, M, params, g_hard)


def classify_monte_carlo(fit: Fit, data, n_samples: int = 1000, seed: int = 0, chain: int | None = None):
    """(C, N) class probabilities by the thesis' Monte Carlo rule (eq. 4.3): P(x, y=n) estimated with
    ``n_samples`` draws (R, S) from the prior of class n, normalised over n."""
    X, M, _ = as_matrix(data)
    state: MCVQFitState = fit.state
    log_joint = steps.monte_carlo_class_log_joint(jax.random.PRNGKey(seed), jnp.asarray(X), jnp.asarray(M),
                                                  state.params(chain), positive_int(n_samples, "n_samples"))
    return np.asarray(jax.nn.softmax(log_joint, axis=-1))


def predict(fit: Fit, data, chain: int | None = None) -> MCVQPrediction:
    """Predictions for new cases from restart ``chain`` (default: the one with the lowest free energy)."""
    state: MCVQFitState = fit.state
    X, M, _ = as_matrix(data)
    params = state.params(chain)
    if X.shape[1] != params.mu.shape[0]:
        raise ValueError(f"values: {X.shape[1]} dimensions, but the model was fitted on {params.mu.shape[0]}")
    g = state.g(chain)
    Xj, Mj = jnp.asarray(X), jnp.asarray(M)
    w, z, recon = _infer_cases(Xj, Mj, params, g)
    out = dict(reconstruction=np.asarray(recon), state_proba=np.asarray(w), vq_ownership=np.asarray(g),
               log_likelihood=np.asarray(_exact_loglik(Xj, Mj, params, g)))
    if state.kind == "supervised":
        out["class_proba"] = np.asarray(z)
        out["class_proba_monte_carlo"] = classify_monte_carlo(fit, Matrix(X, M > 0), state.monte_carlo_samples,
                                                              chain=chain)
    elif state.kind == "clustered":
        out["cluster_proba"] = np.asarray(z)
    return MCVQPrediction(**out)
