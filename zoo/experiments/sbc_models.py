"""SBC (zoo.diagnostics.sbc) of the models whose default method is EM or variational (carbonetto03, ross03,
yakhnenko) and of the generic NUTS on a program with continuous latents; used by ``zoo.experiments.sbc``.

Every simulation draws the latents from the model's NumPyro program (``spec.program``) with fixed arguments,
then the observed sites from their conditional distributions given those latents (``simulate_program``), fits the
data with ``zoo.fit`` and ranks the truth among L draws of the fit (``fit_draws``: chains x draws flattened, L of
them evenly spaced). A point estimate (EM restarts) has L = the number of restarts, all near one value: its ranks
sit at 0 or L by construction. A variational fit's draws are draws of q. Both are reported as the calibration of
an approximation (``method_kind`` "em" / "vi"). Quantities are invariant to relabelling components/topics/VQs.

Settings that differ from the defaults, and why:
- carbonetto03: the registered runners centre the priors on the data's moments (mu*, Sigma*: empirical Bayes,
  Sec. 2); the simulation uses mu* = 0, Sigma* = I. The translation model's default tau2 prior (a = -1, b = 1e-5)
  is improper and cannot be simulated from: the SBC uses the proper IG(a = 2, b = 1) (option ``a``, ``b``).
- ross03: the program's state means and sds are arguments (mu = +-2 per state, sigma = 0.5); the variational EM
  estimates them (ML), and a, b, beta (MAP): only r, s and y are latents with a q.
- NUTS: the shrinkage-mixture program itself (zoo.fit of a user program) with mu* = 0, Sigma* = I fixed, so the
  prior the sampler sees is the one simulated from.
Data sets the runners refuse (a word type never seen; a class without cases) are redrawn: conditioning the joint
draw on an event of the data leaves p(theta | data) unchanged, so the ranks stay uniform under calibration.
"""
from __future__ import annotations

import warnings

import numpy as np

from zoo.diagnostics.sbc import SBCResult, run_sbc

__all__ = ["simulate_program", "fit_draws", "fit_sbc", "carbonetto03_sbc", "ross03_sbc", "yakhnenko_sbc",
           "nuts_mixture_sbc"]


def simulate_program(program, kwargs: dict, key) -> dict:
    """One joint draw: the latent sites from ``program(**kwargs)`` (a seeded trace) and every observed site from its
    distribution given them (observed sites are the program's leaves). Returns {site: array}."""
    import jax
    from numpyro import handlers
    k_latent, k_obs = jax.random.split(key)
    tr = handlers.trace(handlers.seed(program, k_latent)).get_trace(**kwargs)
    out = {name: site["value"] for name, site in tr.items() if site["type"] == "sample" and not site["is_observed"]}
    for name, site in tr.items():
        if site["type"] == "sample" and site["is_observed"]:
            k_obs, sub = jax.random.split(k_obs)
            out[name] = site["fn"].sample(sub)
    return {name: np.asarray(v) for name, v in out.items()}


def fit_draws(fit, names, n_draws: int, chain: int | None = None) -> dict:
    """{name: (L, ...)} draws of ``fit.posterior`` (chains x draws flattened, or one ``chain``), L = ``n_draws``
    evenly spaced ones, or all when there are fewer; per-unit sites are read from ``unit_posterior``."""
    from zoo.core.idata import draws_of

    out = {}
    for name in names:
        v = np.asarray(draws_of(fit.idata, name).values)
        v = v[chain] if chain is not None else v.reshape((-1,) + v.shape[2:])
        if v.shape[0] > n_draws:
            v = v[np.linspace(0, v.shape[0] - 1, n_draws).round().astype(int)]
        out[name] = v
    return out


def fit_sbc(simulate_one, fit_one, quantities, *, n_sims: int, seed: int, model_id: str, method: str,
            method_kind: str) -> SBCResult:
    """run_sbc with one simulation and one fit at a time: ``simulate_one(key) -> (truth, data)``,
    ``fit_one(data, seed) -> {name: (L, ...)}``."""
    import jax

    def simulate(key, n):
        sims = [simulate_one(k) for k in jax.random.split(key, n)]
        truth = {name: np.stack([s[0][name] for s in sims]) for name in sims[0][0]}
        return truth, [s[1] for s in sims]

    def posterior(key, data):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # convergence warnings of short runs: the ranks show what matters
            draws = [fit_one(d, seed * 100003 + i) for i, d in enumerate(data)]
        return {name: np.stack([d[name] for d in draws]) for name in draws[0]}

    return run_sbc(simulate, posterior, quantities, n_sims=n_sims, seed=seed, model_id=model_id, method=method,
                   method_kind=method_kind)


# ------------------------------------------------------------------------------------------------ carbonetto03
MIX_POINTS, MIX_FEATURES, MIX_COMPONENTS = 40, 2, 2
REGION_IMAGES = np.repeat(np.arange(8), 4)                               # 8 images of 4 regions
REGION_KEYWORDS = [[0], [1], [2], [0, 1], [1, 2], [0, 2], [0], [1, 2]]


def _mixture_quantities(v):
    lam, mu, tau2 = (np.asarray(v[k], float) for k in ("lambda", "mu", "tau2"))
    mean = (lam[..., None] * mu).sum(-2)                                 # the mixture's mean: label-free
    return {"log tau2_0": np.log(tau2[..., 0]), "log tau2_1": np.log(tau2[..., 1]), "mixture mean_0": mean[..., 0],
            "max lambda": lam.max(-1)}


def _translation_quantities(v):
    mu, tau2 = np.asarray(v["mu"], float), np.asarray(v["tau2"], float)
    return {"log tau2_0": np.log(tau2[..., 0]), "mu[w0]_0": mu[..., 0, 0], "mu[w1]_1": mu[..., 1, 1],
            "mu[w2]_0": mu[..., 2, 0]}


def carbonetto03_sbc(variant: str, n_sims: int = 100, seed: int = 0) -> SBCResult:
    """SBC of carbonetto03.``variant``'s default map_em (4 restarts = 4 draws; module doc)."""
    import jax.numpy as jnp

    import zoo
    from zoo.data import AnnotatedRegions
    p = MIX_FEATURES
    fixed = dict(mu_star=jnp.zeros(p), sigma_star=jnp.eye(p), alpha=p + 2.0, diagonal=True)
    if variant == "shrinkage_mixture":
        spec = zoo.model("carbonetto03.shrinkage_mixture", n_components=MIX_COMPONENTS, covariance="diag",
                         standardize=False)
        kwargs = dict(X=jnp.zeros((MIX_POINTS, p)), n_components=MIX_COMPONENTS, priors=spec.priors, **fixed)
        names, quantities = ("lambda", "mu", "tau2"), _mixture_quantities
    else:
        spec = zoo.model("carbonetto03.translation", covariance="diag", a=2.0, b=1.0, standardize=False)
        vocabulary = ["w0", "w1", "w2"]
        keywords = [[vocabulary[w] for w in words] for words in REGION_KEYWORDS]
        allowed = np.zeros((len(REGION_KEYWORDS), 3), bool)
        for i, words in enumerate(REGION_KEYWORDS):
            allowed[i, words] = True
        kwargs = dict(X=jnp.zeros((REGION_IMAGES.size, p)), allowed=jnp.asarray(allowed[REGION_IMAGES]),
                      priors=spec.priors, **fixed)
        names, quantities = ("mu", "tau2"), _translation_quantities

    def simulate_one(key):
        v = simulate_program(spec.program, kwargs, key)
        if variant == "shrinkage_mixture":
            return v, v["x"]
        return v, AnnotatedRegions(X=v["x"], image_ids=REGION_IMAGES, keywords=keywords, vocabulary=vocabulary)

    def fit_one(data, fit_seed):
        return fit_draws(zoo.fit(spec, data, "map_em", seed=fit_seed, progress_bar=False), names, 4)

    return fit_sbc(simulate_one, fit_one, quantities, n_sims=n_sims, seed=seed, model_id=f"carbonetto03.{variant}",
                   method="map_em", method_kind="em")


def nuts_mixture_sbc(n_sims: int = 100, n_draws: int = 99, num_warmup: int = 300, seed: int = 0) -> SBCResult:
    """SBC of the generic NUTS on the shrinkage-mixture program with its arguments fixed: the kernel of
    ``zoo.fit(..., "nuts")`` (numpyro NUTS, target_accept_prob 0.8; zoo.core.generic.run_nuts), here one MCMC object
    with ``jit_model_args`` so that the simulations share one compilation; one chain of num_warmup + 2 (n_draws + 1)
    draws, thinned to n_draws."""
    import jax
    import jax.numpy as jnp
    from numpyro.infer import MCMC, NUTS

    import zoo
    spec = zoo.model("carbonetto03.shrinkage_mixture", n_components=MIX_COMPONENTS, covariance="diag",
                     standardize=False)
    p = MIX_FEATURES
    kwargs = dict(n_components=MIX_COMPONENTS, priors=spec.priors, mu_star=jnp.zeros(p), sigma_star=jnp.eye(p),
                  alpha=p + 2.0, diagonal=True)
    program = lambda X: spec.program(X, **kwargs)            # noqa: E731  (the fixed arguments closed over)
    mcmc = MCMC(NUTS(program, target_accept_prob=0.8), num_warmup=num_warmup, num_samples=2 * (n_draws + 1),
                num_chains=1, progress_bar=False, jit_model_args=True)

    def simulate_one(key):
        v = simulate_program(spec.program, dict(kwargs, X=jnp.zeros((MIX_POINTS, p))), key)
        return v, v["x"]

    def fit_one(X, fit_seed):
        mcmc.run(jax.random.PRNGKey(fit_seed), jnp.asarray(X))
        samples = mcmc.get_samples()
        keep = np.linspace(0, 2 * (n_draws + 1) - 1, n_draws).round().astype(int)
        return {name: np.asarray(samples[name])[keep] for name in ("lambda", "mu", "tau2")}

    return fit_sbc(simulate_one, fit_one, _mixture_quantities, n_sims=n_sims, seed=seed,
                   model_id="carbonetto03.shrinkage_mixture", method="nuts (program, fixed mu*, Sigma*)",
                   method_kind="mcmc")


# ------------------------------------------------------------------------------------------------ ross03
MCVQ_CASES, MCVQ_DIMS, MCVQ_VQS, MCVQ_STATES = 30, 6, 2, 2


def _mcvq_quantities(v):
    r, s = np.asarray(v["r"]), np.asarray(v["s"])                         # (..., D), (..., C, K)
    s_of_r0 = np.take_along_axis(s, np.broadcast_to(r[..., None, :1], s.shape[:-1] + (1,)), -1)[..., 0]
    out = {"same VQ (d0, d1)": (r[..., 0] == r[..., 1]).astype(float),
           "same VQ (d2, d3)": (r[..., 2] == r[..., 3]).astype(float),
           "same state (c0, c1 | VQ of d0)": (s_of_r0[..., 0] == s_of_r0[..., 1]).astype(float),
           "same state (c2, c3 | VQ of d0)": (s_of_r0[..., 2] == s_of_r0[..., 3]).astype(float)}
    if "y" in v:
        y = np.asarray(v["y"])
        out["same cluster (c0, c1)"] = (y[..., 0] == y[..., 1]).astype(float)
    return out


def ross03_sbc(variant: str, n_sims: int = 100, n_draws: int = 49, seed: int = 0) -> SBCResult:
    """SBC of ross03.``variant``'s default variational_em (draws of the lowest-free-energy restart's q; module
    doc)."""
    import jax
    import jax.numpy as jnp

    import zoo
    from zoo.data import Matrix
    from zoo.data.ross03 import MatrixDataset
    spec = zoo.model(f"ross03.{variant}", n_vqs=MCVQ_VQS, n_states=MCVQ_STATES)
    mu = jnp.broadcast_to(jnp.array([-2.0, 2.0]), (MCVQ_DIMS, MCVQ_VQS, MCVQ_STATES))
    kwargs = dict(mu=mu, sigma=jnp.full(mu.shape, 0.5), n_cases=MCVQ_CASES, prior_a=spec.priors["a"],
                  prior_b=spec.priors["b"])
    if variant == "mcvq_clustered":
        kwargs.update(n_classes=2, prior_beta=spec.priors["beta"])
    elif variant == "mcvq_supervised":
        kwargs.update(n_classes=2, beta=jnp.array([0.5, 0.5]))
    names = ("r", "s", "y") if variant == "mcvq_clustered" else ("r", "s")

    def simulate_one(key):
        v = simulate_program(spec.program, kwargs, key)
        while variant == "mcvq_supervised" and len(np.unique(v["y"])) < 2:
            key = jax.random.fold_in(key, 1)            # the runner needs both classes seen: rejection (module doc)
            v = simulate_program(spec.program, kwargs, key)
        truth = {k: v[k] for k in names}
        if variant == "mcvq_supervised":
            return truth, MatrixDataset(Matrix(v["x"]), labels=v["y"].astype(np.int64))
        return truth, Matrix(v["x"])

    def fit_one(data, fit_seed):
        fit = zoo.fit(spec, data, "variational_em", seed=fit_seed, num_chains=2, num_draws=n_draws,
                      progress_bar=False, monte_carlo_samples=10)
        return fit_draws(fit, names, n_draws, chain=fit.state.best_chain)

    return fit_sbc(simulate_one, fit_one, _mcvq_quantities, n_sims=n_sims, seed=seed, model_id=f"ross03.{variant}",
                   method="variational_em", method_kind="vi")


# ------------------------------------------------------------------------------------------------ yakhnenko
TOPIC_DOCS, TOPIC_WORDS, TOPIC_VISUAL, TOPIC_TOKENS, TOPIC_K = 10, 6, 5, 25, 3


def _topic_quantities(v):
    tw = np.asarray(v["topic_weight"], float)                             # (..., K) = mean_i pi_i
    pw = (tw[..., None] * np.asarray(v["phi_w"], float)).sum(-2)
    pb = (tw[..., None] * np.asarray(v["phi_b"], float)).sum(-2)
    return {"p(word 0)": pw[..., 0], "p(word 1)": pw[..., 1], "p(visual 0)": pb[..., 0],
            "max topic weight": tw.max(-1)}


def yakhnenko_sbc(variant: str, n_sims: int = 100, n_draws: int = 49, seed: int = 0) -> SBCResult:
    """SBC of yakhnenko.``variant``'s default VI (mean_field_vi / stick_breaking_vi; draws of q over both
    restarts): quantities of the corpus-level mixture sum_k mean_i(pi_ik) phi_k, label-free."""
    import jax
    import jax.numpy as jnp

    import zoo
    from zoo.data import MultimodalCounts
    if variant == "mom_lda":
        spec, method = zoo.model("yakhnenko.mom_lda", n_topics=TOPIC_K), "mean_field_vi"
    else:
        spec, method = zoo.model("yakhnenko.mom_hdp", truncation=TOPIC_K + 1), "stick_breaking_vi"
    totals = jnp.full(TOPIC_DOCS, TOPIC_TOKENS)
    kwargs = dict(word_totals=totals, visual_totals=totals, n_word_types=TOPIC_WORDS, n_visual_types=TOPIC_VISUAL,
                  priors=spec.priors)

    def simulate_one(key):
        v = simulate_program(spec.program, kwargs, key)
        while (v["words"].sum(0) == 0).any() or (v["visual_words"].sum(0) == 0).any():
            key = jax.random.fold_in(key, 1)            # the runner refuses unseen types: rejection (module doc)
            v = simulate_program(spec.program, kwargs, key)
        truth = {"topic_weight": v["pi"].mean(0), "phi_w": v["phi_w"], "phi_b": v["phi_b"]}
        return truth, MultimodalCounts(words=v["words"].astype(np.int64),
                                       visual_words=v["visual_words"].astype(np.int64))

    def fit_one(data, fit_seed):
        fit = zoo.fit(spec, data, method, seed=fit_seed, num_draws=n_draws, progress_bar=False)
        return fit_draws(fit, ("topic_weight", "phi_w", "phi_b"), n_draws)

    return fit_sbc(simulate_one, fit_one, _topic_quantities, n_sims=n_sims, seed=seed, model_id=f"yakhnenko.{variant}",
                   method=method, method_kind="vi")
