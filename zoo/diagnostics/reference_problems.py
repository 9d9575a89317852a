"""The reference problems of ``zoo.reference``: for each (model id, data set) the data, the label-permutation-invariant
quantities computed from draws, the samplers that can be scored on it, and the exact enumeration where there is one.

A sampler here is a factory ``make(chains, warmup) -> run`` with ``run(seed, data, draws) -> {site: (chain, draw,
...) array}`` in the problem's canonical sites:
- gustafson07 (FS, CVFS): ``M`` (chain, draw, K+1, p) concept x feature inclusion (FS: every row the same mask),
  ``Y`` (chain, draw, n) the label of every unit (0 = garbage, k = the k-th vocabulary word);
- kueck04: ``gamma`` (chain, draw, N) active kernels, ``delta2`` (chain, draw);
- carbonetto03: ``mu`` (chain, draw, C, D), ``Sigma`` (chain, draw, C, D) diagonal variances (or (C, D, D)),
  ``tau2`` (chain, draw, D) and, for the mixture, ``lambda`` (chain, draw, C).
``zoo.check_sampler`` runs user samplers through the same contract.
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
from typing import Callable, Mapping

import numpy as np

__all__ = ["Problem", "problem", "problems", "fs_program_sampler"]


@dataclasses.dataclass(frozen=True)
class Problem:
    """One reference problem. ``data()`` -> the data object samplers get; ``quantities(draws)`` -> {name: (chain,
    draw) array}; ``samplers``: name -> factory (module doc); ``exact()`` -> (summaries, construction) or None."""
    model_id: str
    dataset: str
    description: str
    data: Callable
    quantities: Callable
    samplers: Mapping[str, Callable]
    default_sampler: str
    cross_sampler: str | None = None
    exact: Callable | None = None


# ------------------------------------------------------------------------------------------------ gustafson07
def _free_units(data) -> np.ndarray:
    """Indices of the units whose image carries no keyword (their labels are uncertain a posteriori)."""
    kw = data.keyword_matrix().astype(bool)
    return np.nonzero(~kw.any(1)[data.image_ids])[0]


def _label_quantities(data, variant: str) -> Callable:
    """quantities(draws) for FS/CVFS: Pr(M_j = 1) (FS, one shared mask) or Pr(M_kj = 1) (CVFS, keyword rows), and
    Pr(Y_u = k) for every unannotated unit u and concept k (0 = garbage); 1-based feature numbers as in the paper."""
    free = _free_units(data)
    n_concepts = len(data.vocabulary) + 1

    def quantities(draws: Mapping[str, np.ndarray]) -> dict:
        # M in either layout: the kernel's state (chain, draw, K+1, p), garbage row first, or zoo.fit's and
        # zoo.kernel's sites (chain, draw, p) for FS and (chain, draw, K, p) for CVFS (keyword k in row k - 1)
        M = np.asarray(draws["M"], float)
        out = {}
        if variant == "fs":
            shared = M[:, :, 0, :] if M.ndim == 4 else M
            out.update({f"Pr(M_{j + 1} = 1)": shared[:, :, j] for j in range(M.shape[-1])})
        else:
            rows = M[:, :, 1:, :] if M.shape[2] == n_concepts else M
            out.update({f"Pr(M_{k},{j + 1} = 1)": rows[:, :, k - 1, j] for k in range(1, n_concepts)
                        for j in range(M.shape[-1])})
        Y = np.asarray(draws["Y"])
        for u in free:
            for k in range(n_concepts):
                out[f"Pr(Y_{u} = {k})"] = (Y[:, :, u] == k).astype(float)
        return out
    return quantities


def _gibbs_sampler(model_id: str, **options) -> Callable:
    """Factory of zoo's collapsed Gibbs sampler (``run_gibbs``) with region_problem ``options``; ``thinning``: keep
    one sweep in ``thinning`` (``draws`` counts sweeps, so a run returns draws // thinning draws per chain)."""
    def make(chains: int, warmup: int, thinning: int = 1) -> Callable:
        def run(seed: int, data, draws: int) -> dict:
            import jax
            import zoo
            from zoo.inference.label_feature.gibbs import run_gibbs
            from zoo.papers.gustafson07 import region_arrays, region_problem
            spec = zoo.model(model_id)
            variant = spec.options["variant"]
            problem = region_problem(spec, region_arrays(data), **options)
            out, _ = run_gibbs(problem, variant, jax.random.PRNGKey(seed), num_chains=chains, num_warmup=warmup,
                               num_samples=draws, thinning=thinning, collect=("M", "Y"), chunk=100)
            return {"M": np.asarray(out["M"]), "Y": np.asarray(out["Y"])}
        return run
    return make


def _fs_program_args(data):
    """(collapsed_fs_program's arguments, free unit indices): X standardized as zoo's sampler does, the labels of
    the annotated units (concept index), K + 1 concepts, and FS's fixed (delta, Omega) of region_problem."""
    import jax.numpy as jnp
    import zoo
    from zoo.papers.gustafson07 import region_arrays, region_problem
    arrays = region_arrays(data)
    problem = region_problem(zoo.model("gustafson07.fs"), arrays)
    free = _free_units(data)
    labelled = np.setdiff1d(np.arange(len(data.X)), free)
    if not np.array_equal(labelled, np.arange(labelled.size)):
        raise ValueError("data: the generic FS program needs the annotated units first")
    kw = data.keyword_matrix().astype(bool)[data.image_ids[labelled]]
    if np.any(kw.sum(1) != 1) or np.any(np.bincount(data.image_ids[labelled]) > 1):
        raise ValueError("data: the generic FS program needs one-unit images with one keyword each")
    labels = jnp.asarray(kw.argmax(1) + 1)
    return (jnp.asarray(arrays.X), labels, len(data.vocabulary) + 1, problem.delta0, problem.Omega0), free


def fs_program_sampler(kind: str) -> Callable:
    """Factory of a NumPyro sampler on the collapsed FS program of ``zoo bench cvfs`` (uniform M and free labels,
    eq. 10 as a factor): kind "DiscreteHMCGibbs" (NUTS for the nuisance site) or "MixedHMC" (HMC, 20 discrete
    updates). Chains run sequentially; draws mapped to the canonical M (K+1, p) and Y (n)."""
    def make(chains: int, warmup: int) -> Callable:
        def run(seed: int, data, draws: int) -> dict:
            import jax
            from numpyro.infer import HMC, MCMC, NUTS, DiscreteHMCGibbs, MixedHMC
            from zoo.models.collapsed_fs import collapsed_fs_program
            args, free = _fs_program_args(data)
            kernel = (DiscreteHMCGibbs(NUTS(collapsed_fs_program)) if kind == "DiscreteHMCGibbs" else
                      MixedHMC(HMC(collapsed_fs_program, trajectory_length=1.0), num_discrete_updates=20))
            mcmc = MCMC(kernel, num_warmup=warmup, num_samples=draws, num_chains=chains,
                        chain_method="sequential", progress_bar=False)
            mcmc.run(jax.random.PRNGKey(seed), *args)
            s = mcmc.get_samples(group_by_chain=True)
            m = np.asarray(s["M"]).astype(bool)
            labels = np.broadcast_to(np.asarray(args[1]), m.shape[:2] + (args[1].shape[0],))
            return {"M": np.repeat(m[:, :, None, :], args[2], axis=2),
                    "Y": np.concatenate([labels, np.asarray(s["Y"])], axis=-1)}
        return run
    return make


def _fs_exact(data: Callable) -> Callable:
    """Exact enumeration for FS on ``data()``: every mask M in {0,1}^p and label vector of the free units in
    {0..K}^n_free, weighted by eq. 10 (collapsed over the concepts' NIW parameters) with the uniform priors."""
    def exact():
        import jax
        import jax.numpy as jnp
        from zoo.models.feature_selection import collapsed_log_density, concept_masks
        (X, labels, n_concepts, delta, Omega), free = _fs_program_args(data())
        p = X.shape[1]
        masks = np.array(list(itertools.product([0, 1], repeat=p)), dtype=bool)
        ys = np.array(list(itertools.product(range(n_concepts), repeat=free.size)), dtype=np.int64)

        @jax.jit
        def logp_for_mask(m):
            def one(y):
                return collapsed_log_density(jnp.concatenate([labels, y]), concept_masks("fs", m, n_concepts, p),
                                             delta, Omega, X)
            return jax.lax.map(one, jnp.asarray(ys), batch_size=256)
        logp = np.stack([np.asarray(logp_for_mask(jnp.asarray(m))) for m in masks])   # (2^p, n_y)
        w = np.exp(logp - logp.max())
        w /= w.sum()
        out = {f"Pr(M_{j + 1} = 1)": float(w[masks[:, j]].sum()) for j in range(p)}
        wy = w.sum(0)
        for i, u in enumerate(free):
            for k in range(n_concepts):
                out[f"Pr(Y_{u} = {k})"] = float(wy[ys[:, i] == k].sum())
        summaries = {n: {"mean": v, "mcse": 0.0, "rhat": None, "ess": None} for n, v in out.items()}
        return summaries, {"kind": "enumeration", "states": int(w.size),
                           "density": "eq. 10 (collapsed_log_density), uniform M and free labels, "
                                      "(delta, Omega) fixed at region_problem's FS values"}
    return exact


def _gustafson_samplers(model_id: str) -> dict:
    out = {"collapsed_gibbs": _gibbs_sampler(model_id),
           # the paper's sweep has no joint moves, nor CVFS's column flips and marginal refresh (issue 29)
           "collapsed_gibbs (paper: 1 random flip, no joint moves)": _gibbs_sampler(model_id, flip_scan="random",
                                                                                   joint_moves=0, column_moves=0,
                                                                                   marginal_refresh=False)}
    if model_id == "gustafson07.fs":
        out["NumPyro DiscreteHMCGibbs(NUTS)"] = fs_program_sampler("DiscreteHMCGibbs")
        out["NumPyro MixedHMC(HMC)"] = fs_program_sampler("MixedHMC")
    return out


def _gustafson_problem(model_id: str, dataset: str, description: str, make_data: Callable,
                       exact: bool = False) -> Problem:
    variant = model_id.split(".")[1]
    data = functools.cache(make_data)
    return Problem(model_id, dataset, description, data, lambda d: _label_quantities(data(), variant)(d),
                   _gustafson_samplers(model_id), "collapsed_gibbs",
                   None if exact else "collapsed_gibbs (paper: 1 random flip, no joint moves)",
                   _fs_exact(data) if exact else None)


# ------------------------------------------------------------------------------------------------ kueck04
def _kueck_quantities(draws: Mapping[str, np.ndarray]) -> dict:
    """Pr(gamma_j = 1) per kernel (kernels sit on the instances, so they have names), E[n_active], E[log delta2]."""
    gamma = np.asarray(draws["gamma"], float)
    out = {f"Pr(gamma_{j} = 1)": gamma[:, :, j] for j in range(gamma.shape[-1])}
    out["E[n_active]"] = gamma.sum(-1)
    out["E[log delta2]"] = np.log(np.asarray(draws["delta2"], float))
    return out


def _kueck_sampler(model_id: str, method: str, **options) -> Callable:
    """Factory of ``zoo.fit(spec, data, method, ...)`` for a kueck04 model; chains one after the other (on a CPU
    about twice the sweeps per second of vectorized chains); ``thinning``: keep one sweep in ``thinning``
    (``draws`` counts sweeps, so a run returns draws // thinning draws per chain)."""
    def make(chains: int, warmup: int, thinning: int = 1) -> Callable:
        def run(seed: int, data, draws: int) -> dict:
            import warnings
            import zoo
            from zoo.core.idata import draws_of
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")     # short chains' convergence warnings: the scores say it
                fit = zoo.fit(zoo.model(model_id), data, method=method, seed=seed, num_chains=chains,
                              num_warmup=warmup, num_samples=draws // thinning, thinning=thinning,
                              chain_method="sequential", progress_bar=False, **options)
            return {"gamma": draws_of(fit.idata, "gamma").values, "delta2": fit.idata.posterior["delta2"].values}
        return run
    return make


def _ring(n: int = 60) -> Callable:
    def make():
        from zoo.data.mil import ring_data
        return ring_data(n=n, positive_share=0.1, group_size=5, seed=0)
    return make


def _musk1_subset(n_bags: int = 6) -> Callable:
    def make():
        from zoo.data.mil import load_mil_benchmark, subset_bags
        data = load_mil_benchmark("musk1")
        pos, neg = np.nonzero(data.bag_labels == 1)[0], np.nonzero(data.bag_labels == 0)[0]
        return subset_bags(data, np.r_[pos[:n_bags // 2], neg[:n_bags - n_bags // 2]])
    return make


def _kueck_problem(model_id: str, dataset: str, description: str, make_data: Callable) -> Problem:
    samplers = {"blocked_gibbs": _kueck_sampler(model_id, "blocked_gibbs"),
                "blocked_gibbs_mh": _kueck_sampler(model_id, "blocked_gibbs_mh"),
                "blocked_gibbs (beta_move=laplace)": _kueck_sampler(model_id, "blocked_gibbs", beta_move="laplace")}
    return Problem(model_id, dataset, description, functools.cache(make_data), _kueck_quantities, samplers,
                   "blocked_gibbs", "blocked_gibbs_mh")


# ------------------------------------------------------------------------------------------------ carbonetto03
# Co-assignment Pr(z_i = z_j) = E[sum_c r_ic r_jc], label probabilities Pr(w_r = w) = E[r_rw] (Rao-Blackwellized:
# the responsibilities r given each draw of the parameters, MODELS.md 1a E-step / 1b xi_nji), held-out predictive
# densities p(x* | data) = E[p(x* | theta)] and E[log p(x* | theta)], and E[log tau_k^2]; none depends on how the
# components are numbered (translation's words are named by the captions, so its labels are identified).
def _component_log_densities(x, draws) -> np.ndarray:
    """x (m, D), draws: mu (c, d, C, D), Sigma (c, d, C, D) diagonal variances or (c, d, C, D, D) full ->
    (c, d, m, C) log N(x; mu_C, Sigma_C)."""
    mu, cov = np.asarray(draws["mu"], float), np.asarray(draws["Sigma"], float)
    diff = x[None, None, :, None, :] - mu[:, :, None, :, :]                       # (c, d, m, C, D)
    if cov.ndim == mu.ndim:                                                       # diagonal
        var = cov[:, :, None]
        return -0.5 * np.sum(diff ** 2 / var + np.log(2 * np.pi * var), axis=-1)
    chol = np.linalg.cholesky(cov)[:, :, None]                                    # (c, d, 1, C, D, D)
    sol = np.linalg.solve(chol, diff[..., None])[..., 0]
    logdet = 2 * np.sum(np.log(np.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * (np.sum(sol ** 2, -1) + logdet + x.shape[1] * np.log(2 * np.pi))


def _log_mix(logdens, log_weights) -> tuple[np.ndarray, np.ndarray]:
    """(log p(x | theta) (c, d, m), responsibilities (c, d, m, C)) of a mixture with log weights (..., m or 1, C)."""
    joint = logdens + log_weights
    top = joint.max(-1, keepdims=True)
    lse = top[..., 0] + np.log(np.exp(joint - top).sum(-1))
    return lse, np.exp(joint - lse[..., None])


def _carbonetto_quantities(train_x, train_allowed, held_x, held_allowed, pairs: bool) -> Callable:
    """quantities(draws): co-assignment of the training points ``train_x`` (pairs=True, mixture) or label
    probabilities of the training regions with > 1 allowed word (translation), predictive densities of ``held_x``
    and E[log tau_k^2]. Draws: lambda (c, d, C) (absent: uniform over the allowed words), mu, Sigma, tau2."""
    def quantities(draws: Mapping[str, np.ndarray]) -> dict:
        out = {}

        def log_w(allowed):
            if "lambda" in draws:
                return np.log(np.asarray(draws["lambda"], float))[:, :, None, :]
            a = np.asarray(allowed, float)
            return np.log(np.where(a > 0, a / a.sum(1, keepdims=True), 1e-300))[None, None]
        _, r = _log_mix(_component_log_densities(train_x, draws), log_w(train_allowed))
        if pairs:
            for i, j in itertools.combinations(range(train_x.shape[0]), 2):
                out[f"Pr(z_{i} = z_{j})"] = np.sum(r[:, :, i] * r[:, :, j], -1)
        else:
            for i in np.nonzero(np.asarray(train_allowed).sum(1) > 1)[0]:
                for w in np.nonzero(train_allowed[i])[0]:
                    out[f"Pr(w_{i} = {w})"] = r[:, :, i, w]
        lp, _ = _log_mix(_component_log_densities(held_x, draws), log_w(held_allowed))
        for h in range(held_x.shape[0]):
            out[f"p(x*_{h} | data)"] = np.exp(lp[:, :, h])
            out[f"E[log p(x*_{h} | theta)]"] = lp[:, :, h]
        tau2 = np.asarray(draws["tau2"], float)
        out.update({f"E[log tau2_{k + 1}]": np.log(tau2[:, :, k]) for k in range(tau2.shape[-1])})
        return out
    return quantities


def _carbonetto_spec(model_id: str):
    import zoo
    from zoo.data.carbonetto03 import SEC2_VARIANCES
    if model_id == "carbonetto03.shrinkage_mixture":
        return zoo.model(model_id, n_components=3, covariance="diag", known_covariance=SEC2_VARIANCES)
    return zoo.model(model_id, covariance="diag", a=1.0, b=1.0, alpha=11.0, standardize=False)   # as recorded


def _carbonetto_draws(post_or_samples, spec) -> dict:
    """Canonical draws (lambda, mu, Sigma (diagonal variances), tau2) from a posterior's sites."""
    get = (lambda k: post_or_samples[k].values) if hasattr(post_or_samples, "data_vars") else \
        (lambda k: np.asarray(post_or_samples[k]))
    mu = get("mu")
    out = {"mu": mu, "tau2": get("tau2")}
    known = spec.options.get("known_covariance")
    out["Sigma"] = np.broadcast_to(known, mu.shape) if known is not None else get("Sigma")
    if spec.id == "carbonetto03.shrinkage_mixture":
        out["lambda"] = get("lambda")
    return out


def _carbonetto_sampler(model_id: str, kind: str = "nuts") -> Callable:
    """kind "nuts": zoo.fit(spec, data, "nuts") (NUTS on the program with the labels summed out; chains
    vectorized); "dense": NumPyro's NUTS with a dense mass matrix on the same program (a different kernel);
    "svi": zoo.fit(..., "svi") with AutoNormal, 2000 steps per chain, ``draws`` draws of q (an approximation, for
    ``check_sampler``; warm-up is ignored)."""
    def make(chains: int, warmup: int) -> Callable:
        def run(seed: int, data, draws: int) -> dict:
            import warnings
            import zoo
            spec = _carbonetto_spec(model_id)
            if kind in ("nuts", "svi"):
                options = (dict(num_warmup=warmup, num_samples=draws) if kind == "nuts" else
                           dict(num_steps=2000, num_samples=draws))
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    fit = zoo.fit(spec, data, method=kind, seed=seed, num_chains=chains, progress_bar=False,
                                  **options)
                return _carbonetto_draws(fit.idata.posterior, spec)
            import jax
            from numpyro.infer import MCMC, NUTS
            from zoo.core.registry import get_model
            kwargs = get_model(model_id).program_args(spec, data)
            mcmc = MCMC(NUTS(spec.program, dense_mass=True), num_warmup=warmup, num_samples=draws,
                        num_chains=chains, chain_method="vectorized", progress_bar=False)
            mcmc.run(jax.random.PRNGKey(seed), **kwargs)
            return _carbonetto_draws(mcmc.get_samples(group_by_chain=True), spec)
        return run
    return make


def _sec52_split(n_train: int, n_held: int):
    """(training AnnotatedRegions, held-out (X, allowed)) of translation_data_sec52(n_train + n_held, seed=0): the
    last n_held images held out (same word means: the data set draws its means once)."""
    from zoo.data.carbonetto03 import translation_data_sec52
    from zoo.data.containers import AnnotatedRegions
    full, _ = translation_data_sec52(n_images=n_train + n_held, seed=0)
    train = full.image_ids < n_train
    allowed = full.keyword_matrix()[full.image_ids].astype(bool)
    data = AnnotatedRegions(full.X[train], full.image_ids[train], full.keywords[:n_train], full.vocabulary,
                            region_labels=full.region_labels[train])
    return data, full.X[~train], allowed[~train]


def _carbonetto_problems() -> list:
    from zoo.data.carbonetto03 import mixture_data_sec2
    samplers = {m: {"nuts": _carbonetto_sampler(m), "NumPyro NUTS (dense mass)": _carbonetto_sampler(m, "dense"),
                    "svi (AutoNormal)": _carbonetto_sampler(m, "svi")}
                for m in ("carbonetto03.shrinkage_mixture", "carbonetto03.translation")}
    sec2 = functools.cache(lambda: mixture_data_sec2(n_points=200, seed=0)[0])
    held2 = mixture_data_sec2(n_points=10, seed=1000)[0]
    mix_q = _carbonetto_quantities(sec2()[:12], None, held2, None, pairs=True)
    sec52 = functools.cache(lambda: _sec52_split(30, 5))
    trans_q = functools.cache(lambda: _carbonetto_quantities(
        sec52()[0].X, sec52()[0].keyword_matrix()[sec52()[0].image_ids].astype(bool), *sec52()[1:], pairs=False))
    return [
        Problem("carbonetto03.shrinkage_mixture", "sec2", "mixture_data_sec2(200, seed=0): Sec. 2 mixture (6 "
                "features, 3 components), variances known, diagonal, a = b = 1 (the model's defaults); "
                "co-assignment of the first 12 points, 10 held-out points of mixture_data_sec2(10, seed=1000)",
                sec2, mix_q, samplers["carbonetto03.shrinkage_mixture"], "nuts", "NumPyro NUTS (dense mass)"),
        Problem("carbonetto03.translation", "sec52_30img", "translation_data_sec52(35, seed=0): Sec. 5.2 data "
                "(3 words, 9 features), first 30 images (90 regions) for training, last 5 (15 regions) held "
                "out. Smaller than the paper's 100 images so that 10 NUTS chains reach ESS 10,000 on every "
                "quantity in minutes on one core; diagonal covariances (the paper's MAP-diagonal variant: 63 "
                "parameters instead of 171), alpha = 11 as in the paper, tau2 ~ IG(1, 1) (proper; the paper's "
                "improper a = -1, b = 1e-5 was not used)", lambda: sec52()[0], lambda d: trans_q()(d),
                samplers["carbonetto03.translation"], "nuts", "NumPyro NUTS (dense mass)"),
    ]



@functools.cache
def problems() -> dict:
    """(model_id, dataset) -> Problem, for every problem the zoo can build a reference of."""
    def bench_fs_data(**kwargs):
        from zoo.data.gustafson07 import bench_fs_data as make
        return make(**kwargs)

    def sec6_synthetic(n_per_concept, seed):
        from zoo.data.gustafson07 import sec6_synthetic as make
        return make(n_per_concept, seed=seed)
    ring = "ring data (thesis Exp. 1 generator) with N = 60 instances, groups of 5, 10 % positives, seed 0"
    musk = "Musk1 subset: its first 3 positive and first 3 negative bags (needs the Musk1 files)"
    entries = [
        _gustafson_problem("gustafson07.fs", "bench_tiny", "bench_fs_data(n_units=8, p=6, seed=0): 4 annotated "
                           "one-unit images, 4 unannotated units; FS with (delta, Omega) fixed", 
                           lambda: bench_fs_data(n_units=8, p=6, seed=0), exact=True),
        _gustafson_problem("gustafson07.fs", "bench", "bench_fs_data(): zoo bench cvfs' FS problem, 200 units "
                           "(half annotated), p = 16", lambda: bench_fs_data()),
        _gustafson_problem("gustafson07.fs", "sec6_small", "sec6_synthetic(n_per_concept=20, seed=0): Sec. 6 "
                           "supervised data (p = 5, K = 3), 60 units", lambda: sec6_synthetic(20, seed=0)),
        _gustafson_problem("gustafson07.cvfs", "sec6_small", "sec6_synthetic(n_per_concept=20, seed=0): Sec. 6 "
                           "supervised data (p = 5, K = 3), 60 units", lambda: sec6_synthetic(20, seed=0)),
        _gustafson_problem("gustafson07.cvfs", "bench", "bench_fs_data(): zoo bench cvfs' problem, 200 units "
                           "(half annotated), p = 16", lambda: bench_fs_data()),
        _kueck_problem("kueck04.constraint", "ring60", ring, _ring()),
        _kueck_problem("kueck04.hybrid", "ring60", ring, _ring()),
        _kueck_problem("kueck04.constraint", "musk1_6bags", musk, _musk1_subset()),
        # no kueck04.hybrid on Musk1: the benchmark has no guessed shares of positives per bag (fractions)
    ]
    entries += _carbonetto_problems()
    return {(p.model_id, p.dataset): p for p in entries}


def problem(model_id: str, dataset: str) -> Problem:
    """The Problem of (model_id, dataset); ValueError listing the known ones."""
    known = problems()
    if (model_id, dataset) not in known:
        listing = ", ".join(f"{m}/{d}" for m, d in known)
        raise ValueError(f"model_id/dataset: no reference problem {model_id}/{dataset}; known: {listing}")
    return known[(model_id, dataset)]
