"""The reference problems of ``zoo.reference``: for each (model id, data set) the data, the label-permutation-invariant
quantities computed from draws, the samplers that can be scored on it, and the exact enumeration where there is one.

A sampler here is a factory ``make(chains, warmup) -> run`` with ``run(seed, data, draws) -> {site: (chain, draw,
...) array}`` in the problem's canonical sites:
- gustafson07 (FS, CVFS): ``M`` (chain, draw, K+1, p) concept x feature inclusion (FS: every row the same mask),
  ``Y`` (chain, draw, n) the label of every unit (0 = garbage, k = the k-th vocabulary word);
- kueck04: ``gamma`` (chain, draw, N) active kernels, ``delta2`` (chain, draw).
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
        M = np.asarray(draws["M"], float)
        out = {}
        if variant == "fs":
            out.update({f"Pr(M_{j + 1} = 1)": M[:, :, 0, j] for j in range(M.shape[-1])})
        else:
            out.update({f"Pr(M_{k},{j + 1} = 1)": M[:, :, k, j] for k in range(1, M.shape[2])
                        for j in range(M.shape[-1])})
        Y = np.asarray(draws["Y"])
        for u in free:
            for k in range(n_concepts):
                out[f"Pr(Y_{u} = {k})"] = (Y[:, :, u] == k).astype(float)
        return out
    return quantities


def _gibbs_sampler(model_id: str, **options) -> Callable:
    """Factory of zoo's collapsed Gibbs sampler (``run_gibbs``) with region_problem ``options``."""
    def make(chains: int, warmup: int) -> Callable:
        def run(seed: int, data, draws: int) -> dict:
            import jax
            import zoo
            from zoo.inference.label_feature_gibbs import run_gibbs
            from zoo.papers.gustafson07 import region_arrays, region_problem
            spec = zoo.model(model_id)
            variant = spec.options["variant"]
            problem = region_problem(spec, region_arrays(data), **options)
            out, _ = run_gibbs(problem, variant, jax.random.PRNGKey(seed), num_chains=chains, num_warmup=warmup,
                               num_samples=draws, collect=("M", "Y"), chunk=100)
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
           "collapsed_gibbs (paper: 1 random flip, no joint moves)": _gibbs_sampler(model_id, flip_scan="random",
                                                                                   joint_moves=0)}
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
    """Factory of ``zoo.fit(spec, data, method, ...)`` for a kueck04 model; chains vectorized."""
    def make(chains: int, warmup: int) -> Callable:
        def run(seed: int, data, draws: int) -> dict:
            import warnings
            import zoo
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")     # short chains' convergence warnings: the scores say it
                fit = zoo.fit(zoo.model(model_id), data, method=method, seed=seed, num_chains=chains,
                              num_warmup=warmup, num_samples=draws, progress_bar=False, **options)
            post = fit.idata.posterior
            return {"gamma": post["gamma"].values, "delta2": post["delta2"].values}
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
        _kueck_problem("kueck04.constraint", "ring60", ring, _ring()),
        _kueck_problem("kueck04.hybrid", "ring60", ring, _ring()),
        _kueck_problem("kueck04.constraint", "musk1_6bags", musk, _musk1_subset()),
        # no kueck04.hybrid on Musk1: the benchmark has no guessed shares of positives per bag (fractions)
    ]
    return {(p.model_id, p.dataset): p for p in entries}


def problem(model_id: str, dataset: str) -> Problem:
    """The Problem of (model_id, dataset); ValueError listing the known ones."""
    known = problems()
    if (model_id, dataset) not in known:
        listing = ", ".join(f"{m}/{d}" for m, d in known)
        raise ValueError(f"model_id/dataset: no reference problem {model_id}/{dataset}; known: {listing}")
    return known[(model_id, dataset)]
