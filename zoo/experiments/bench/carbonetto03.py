"""``zoo bench gmm``: the MAP-EM of Carbonetto et al. (2003) against scikit-learn's GaussianMixture (full
covariance), time per iteration after compilation, single-threaded, same data and initial means."""
from __future__ import annotations

import time

import numpy as np

from zoo.bench import Goal, register_benchmark, timeit_best

__all__ = ["bench_gmm"]


@register_benchmark("gmm", peer="scikit-learn GaussianMixture (full covariance)",
                    goals=(Goal("ratio zoo/sklearn", "<=", 0.5, "MAP-EM s/iter zoo / scikit-learn", "issue 35"),))
def bench_gmm(fast: bool = False) -> dict:
    """MAP-EM time per iteration vs scikit-learn's EM: N = 10 000, D = 16, 3 components, full covariance,
    the same initial means, both single-threaded, after compilation."""
    import jax
    import jax.numpy as jnp
    from sklearn.mixture import GaussianMixture

    from zoo.inference.mixture import em
    from zoo.papers.carbonetto03 import initial_params

    rng = np.random.default_rng(0)
    n, d, c = 10_000, 16, 3
    centres = rng.normal(scale=3.0, size=(c, d))
    X = centres[rng.integers(c, size=n)] + rng.normal(size=(n, d))
    init_means = X[rng.choice(n, c, replace=False)]
    iters = 20 if fast else 50

    mu_star = X.mean(0)
    sigma_star = np.cov(X, rowvar=False, bias=True)
    Xc = jnp.asarray(X - mu_star)
    hyper = em.Hyper(jnp.asarray(sigma_star), jnp.asarray(d + 2.0), jnp.asarray(1.0), jnp.asarray(1.0),
                     jnp.ones(c), jnp.asarray(0.0))
    config = em.EMConfig(diagonal=False, use_prior=True, learn_weights=True, learn_covs=True)
    allowed = jnp.ones((n, c), bool)
    init = initial_params(jax.random.PRNGKey(0), Xc, allowed, c, hyper.sigma_star, False, None,
                           jnp.asarray(init_means - mu_star))
    inits = jax.tree_util.tree_map(lambda x: x[None], init)

    def zoo_run():
        res = em.run_em_restarts(Xc, inits, hyper, allowed, config, max_iter=iters, tol=-1.0)
        jax.block_until_ready(res.objective)
        return res

    t0 = time.perf_counter()
    res = zoo_run()
    compile_s = time.perf_counter() - t0
    assert int(res.n_iter[0]) == iters
    zoo_s = timeit_best(zoo_run, repeats=3) / iters

    def sk_run():
        gm = GaussianMixture(c, covariance_type="full", max_iter=iters, tol=0.0, means_init=init_means,
                             reg_covar=1e-6, init_params="random_from_data")
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gm.fit(X)
        assert gm.n_iter_ == iters
        return gm

    sk_run()
    sk_s = timeit_best(sk_run, repeats=3) / iters
    return {"N, D, C": f"{n}, {d}, {c}", "iterations timed": iters,
            "zoo MAP-EM s/iter": round(zoo_s, 6), "sklearn EM s/iter": round(sk_s, 6),
            "ratio zoo/sklearn": round(zoo_s / sk_s, 3), "zoo compile s": round(compile_s, 2), "goal": "<= 0.5"}
