"""Collapsed MCMC for FULL / FS / CVFS (Gustafson, Thompson & de Freitas 2007, Appendix).

Target: eq. 10, pi(Y, M, alpha, delta, Omega | X, S) with every concept's (mu_k, Sigma_k) integrated out. One sweep:

1. ``feature_flip_step``: for each concept row M_k (CVFS) or the shared M (FS), Metropolis-Hastings flips of one
   element (symmetric proposal) on the collapsed density. The paper flips one randomly chosen element per sweep
   (``systematic_scan=False, flips_per_sweep=1``). Departure from the paper, and our default: a systematic scan,
   every element of M_k flipped once per sweep in a fresh random order, each flip always proposed and accepted
   with min(1, ratio) (the Metropolized Gibbs update of a binary variable, Liu 1996; Peskun-better than the
   heat-bath update NumPyro's DiscreteHMCGibbs applies to every discrete coordinate per iteration). Why: given Y,
   the flip of an uncertain indicator is accepted well under 1 % of the time (its labels follow it), so with one
   random flip out of p per sweep the uncertain indicators stay frozen for thousands of sweeps; p flips cost about
   p evaluations of K+1 collapsed terms, small next to the label step. Measured: zoo bench cvfs.
2. ``label_step``: draw temporary (mu_k, Sigma_k) from eq. 8-9 given (Y, M), extend them to p dimensions with
   (delta, Omega), and update each Y_ij from its full conditional: eq. 1 restricted to S_i and to the coverage
   constraint given the image's other labels. The probabilities are returned: their average over sweeps is the
   Rao-Blackwellized Pr(Y_ij = y | data). Images are updated in parallel, the segments of an image in turn.
3. ``alpha_step`` (CVFS): Gibbs from the Beta-mixture posterior of each alpha_j.
4. ``delta_omega_step`` (CVFS): data augmentation of eq. 11 (x*_M ~ N(delta_M, Omega_MM), x*_{M^c} from eq. 11),
   conjugate NIW proposal from the completed x*, and a Metropolis-Hastings correction: because x*_{M^c} depends on
   Omega through eq. 11, the plain conjugate draw of the paper does not leave eq. 10 invariant (on a small test
   problem it puts the correlation of Omega at 0.26 where the target has 0.79, see
   tests/test_gustafson07_gibbs.py); the correction makes the move exact. Its acceptance rate is reported.

Every move is a pure ``(problem, state, key) -> (state, info)`` function over NamedTuples; ``LabelFeatureGibbs``
is the thin ``numpyro.infer.mcmc.MCMCKernel`` wrapper so ``numpyro.infer.MCMC`` runs chains, warm-up and progress.
Modules: ``label_feature_state`` (problem, state, shared helpers), ``label_feature_flips`` (step 1),
``label_feature_joint`` (the joint (indicator, labels) move), ``label_feature_moves`` (steps 2-4), this one (the
sweep, the kernel, the chunked driver ``run_gibbs`` and the posterior predictive).
Shapes: n units, p features, K+1 concepts (0 = garbage), I images, J = most segments in one image.
"""
from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.infer.mcmc import MCMCKernel
from tqdm.auto import tqdm

from zoo._config import FAST_COMPILE_OPTIONS
from zoo.inference.collapsed_niw import (concept_niw_prior, gaussian_logpdf_masked, masked_cholesky,
                                         niw_log_predictive)
from zoo.inference.label_feature_flips import delta_collapsed_flip_step, feature_flip_step, single_flip_step
from zoo.inference.label_feature_joint import joint_flip_relabel_step
from zoo.inference.label_feature_moves import alpha_step, delta_omega_step, label_step, omega_step
from zoo.inference.label_feature_state import (BetaMixture, GibbsState, RegionProblem, SweepInfo, concept_masks_of,
                                               concept_suffstats)

# the moves and types are re-exported: ``zoo.inference.label_feature_gibbs`` is the sampler's one entry point
__all__ = ["RegionProblem", "BetaMixture", "GibbsState", "SweepInfo", "concept_suffstats", "concept_masks_of",
           "feature_flip_step", "delta_collapsed_flip_step", "joint_flip_relabel_step", "single_flip_step",
           "label_step", "alpha_step", "omega_step", "delta_omega_step", "gibbs_sweep", "init_state",
           "initial_labels", "LabelFeatureGibbs", "run_gibbs", "predictive_log_lik", "FAST_COMPILE_OPTIONS",
           "FAST_COMPILE_WORK"]


def gibbs_sweep(problem: RegionProblem, variant: str, state: GibbsState) -> GibbsState:
    """One full sweep (steps 1-4); accumulates the Rao-Blackwell label probabilities after warm-up."""
    key, k_m, k_y, k_a, k_d, k_o, k_j = jax.random.split(state.rng_key, 7)
    if variant == "cvfs":
        state, accept_m = delta_collapsed_flip_step(problem, state, k_m)
    else:
        state, accept_m = feature_flip_step(problem, variant, state, k_m)
    accept_j = jnp.asarray(1.0)
    if variant != "full":
        def joint(t, carry):
            s, acc = carry
            s, a = joint_flip_relabel_step(problem, variant, s, jax.random.fold_in(k_j, t))
            return s, acc + a
        n_joint = jnp.asarray(problem.joint_moves)
        state, accept_j = jax.lax.fori_loop(0, n_joint, joint, (state, jnp.asarray(0.0)))
        accept_j = accept_j / jnp.maximum(n_joint, 1)
    state, _ = label_step(problem, variant, state, k_y)
    accept_do = accept_o = jnp.asarray(1.0)
    if variant == "cvfs":
        state, _ = alpha_step(problem, state, k_a)
        state, accept_o = omega_step(problem, state, k_o)
        state, accept_do = delta_omega_step(problem, state, k_d)
    keep = state.iteration >= state.num_warmup
    proba_sum = state.proba_sum + jnp.where(keep, state.label_proba, 0.0)
    state = state._replace(proba_sum=proba_sum, n_kept=state.n_kept + keep, iteration=state.iteration + 1,
                           rng_key=key)
    return state._replace(z=_collected(state, variant, SweepInfo(accept_m, accept_do, accept_o, accept_j)))


def _collected(state: GibbsState, variant: str, info: SweepInfo | None) -> dict:
    masks = concept_masks_of(variant, state.M)
    out = {"Y": state.Y, "M": state.M, "n_relevant": masks[1:].sum(-1), "label_proba": state.label_proba,
           "unit_loglik": state.unit_loglik}
    if variant == "cvfs":
        out.update(alpha=state.alpha, delta=state.delta, Omega=state.Omega)
    n_concepts = state.M.shape[0]
    out["accept_M"] = info.accept_M if info is not None else jnp.zeros(n_concepts)
    out["accept_delta_Omega"] = info.accept_delta_Omega if info is not None else jnp.asarray(1.0)
    out["accept_Omega"] = jnp.asarray(info.accept_Omega if info is not None else 1.0, jnp.float64)
    out["accept_joint"] = jnp.asarray(info.accept_joint if info is not None else 1.0, jnp.float64)
    return out


def initial_labels(problem: RegionProblem, key):
    """Labels satisfying the coverage constraint: each keyword on a distinct random segment, the rest uniform on S_i."""
    n, n_concepts = problem.allowed.shape
    n_images, n_slots = problem.image_slots.shape
    valid = problem.image_slots >= 0
    k_perm, k_rest = jax.random.split(key)
    scores = jnp.where(valid, jax.random.uniform(k_perm, (n_images, n_slots)), jnp.inf)
    rank = jnp.argsort(jnp.argsort(scores, axis=1), axis=1)           # random order of the valid slots
    kw = problem.keyword_mask
    kw_sorted = jnp.argsort(~kw, axis=1, stable=True)                 # keyword ids first
    n_kw = kw.sum(1)
    rest = jax.random.categorical(k_rest, jnp.where(problem.allowed, 0.0, -jnp.inf))  # (n,)
    safe = jnp.where(valid, problem.image_slots, 0)
    forced = jnp.take_along_axis(kw_sorted, jnp.minimum(rank, n_concepts - 1), axis=1)
    y_slot = jnp.where(rank < n_kw[:, None], forced, rest[safe])
    return jnp.zeros(n, int).at[jnp.where(valid, problem.image_slots, n)].set(y_slot.astype(int), mode="drop")


def init_state(problem: RegionProblem, variant: str, key, num_warmup=0) -> GibbsState:
    """Coverage-respecting labels, M at random (CVFS rows 1..K, FS shared; FULL all ones), alpha = prior mean."""
    n, n_concepts = problem.allowed.shape
    p = problem.X.shape[1]
    k_y, k_m, key = jax.random.split(key, 3)
    Y = initial_labels(problem, k_y)
    if variant == "full":
        M = jnp.ones((n_concepts, p), bool)
    elif variant == "fs":
        M = jnp.broadcast_to(jax.random.bernoulli(k_m, 0.5, (p,)), (n_concepts, p))
    else:
        M = jax.random.bernoulli(k_m, 0.5, (n_concepts, p)).at[0].set(False)
    pr = problem.alpha_prior
    alpha = jnp.full(p, jnp.sum(pr.weights * pr.a / (pr.a + pr.b)))
    zeros = jnp.zeros((n, n_concepts))
    state = GibbsState(Y=Y, M=M, alpha=alpha, delta=problem.delta0, Omega=problem.Omega0, label_proba=zeros,
                       unit_loglik=jnp.zeros(n), proba_sum=zeros, n_kept=jnp.asarray(0), iteration=jnp.asarray(0),
                       num_warmup=jnp.asarray(num_warmup), rng_key=key, z={},
                       joint_tries=jnp.zeros((n_concepts, p)), joint_accepts=jnp.zeros((n_concepts, p)))
    return state._replace(z=_collected(state, variant, None))


class LabelFeatureGibbs(MCMCKernel):
    """numpyro MCMCKernel running ``gibbs_sweep`` on a fixed ``RegionProblem``; ``variant`` in full/fs/cvfs.

    >>> mcmc = numpyro.infer.MCMC(LabelFeatureGibbs(problem, "cvfs"), num_warmup=200, num_samples=1000,
    ...                           num_chains=2, chain_method="vectorized")
    >>> mcmc.run(jax.random.PRNGKey(0)); mcmc.get_samples(group_by_chain=True)["M"]
    """

    sample_field = "z"

    def __init__(self, problem: RegionProblem, variant: str):
        if variant not in ("full", "fs", "cvfs"):
            raise ValueError(f"variant: {variant!r} is not one of 'full', 'fs', 'cvfs'")
        self.problem = problem
        self.variant = variant

    def init(self, rng_key, num_warmup, init_params, model_args, model_kwargs):
        init = partial(init_state, self.problem, self.variant, num_warmup=num_warmup)
        # chain_method="vectorized" hands one key per chain: the kernel vectorizes init and sample itself
        return jax.vmap(init)(rng_key) if jnp.ndim(rng_key) > 1 else init(rng_key)

    def sample(self, state, model_args, model_kwargs):
        sweep = partial(gibbs_sweep, self.problem, self.variant)
        return jax.vmap(sweep)(state) if jnp.ndim(state.rng_key) > 1 else sweep(state)

    def postprocess_fn(self, model_args, model_kwargs):
        return lambda z: z


# FAST_COMPILE_OPTIONS (zoo._config) roughly halves the sweep's compile time (CVFS, two chains: about 14 s -> 7 s
# on one CPU) and makes each sweep 1.5-4x slower: worth it only for short runs, where compilation is most of the
# wall time. ``run_gibbs`` picks it below FAST_COMPILE_WORK chain-sweeps x units unless told.
FAST_COMPILE_WORK = 250_000


def _init_chains_fn(problem, keys, num_warmup, *, variant):
    return jax.vmap(lambda k: init_state(problem, variant, k, num_warmup=num_warmup))(keys)


def _run_chunk_fn(problem, state, n_active, *, variant, chunk, names, vectorized=False):
    """``chunk`` sweeps of every chain (the first ``n_active`` applied), collecting ``names`` of ``z``; the problem
    is an argument, so data of the same shapes reuse one compilation. The chains run one after another (lax.map),
    unbatched, unless ``vectorized``: under vmap the sweep's data-dependent loops and branches (the joint move's unit
    loop and its skip of unchanged labels) turn into selects over the whole carry, about 2x the time per chain-sweep
    (a single chain under vmap: 2.4 -> 5.9 ms per sweep on the bench problem)."""
    def one_chain(st):
        def body(s, i):
            s = jax.lax.cond(i < n_active, lambda t: gibbs_sweep(problem, variant, t), lambda t: t, s)
            return s, {k: s.z[k] for k in names}
        return jax.lax.scan(body, st, jnp.arange(chunk))
    if vectorized:
        return jax.vmap(one_chain)(state)
    return jax.lax.map(one_chain, state)


_init_chains = jax.jit(_init_chains_fn, static_argnames=("variant",), compiler_options=FAST_COMPILE_OPTIONS)
_run_chunk = jax.jit(_run_chunk_fn, static_argnames=("variant", "chunk", "names", "vectorized"))
_run_chunk_fast_compile = jax.jit(_run_chunk_fn, static_argnames=("variant", "chunk", "names", "vectorized"),
                                  compiler_options=FAST_COMPILE_OPTIONS)


def run_gibbs(problem: RegionProblem, variant: str, key, *, num_chains: int = 2, num_warmup: int = 200,
              num_samples: int = 1000, thinning: int = 1, collect=None, progress_bar: bool = True,
              chunk: int = 50, fast_compile: bool | None = None, vectorized: bool = False):
    """Run ``num_chains`` chains of ``gibbs_sweep`` (one after another in one compiled chunk; ``vectorized``: under
    vmap, see ``_run_chunk_fn``): one compiled chunk of ``chunk`` sweeps reused for
    warm-up and sampling (the same chain as ``numpyro.infer.MCMC`` with ``LabelFeatureGibbs``, compiled once).
    ``fast_compile``: compile without XLA's backend optimization (half the compile time, slower sweeps); None =
    when num_chains x (num_warmup + num_samples) x units <= FAST_COMPILE_WORK. Timings (benchmarks) pass False.

    Returns (draws: dict name -> (chain, draw, ...) numpy arrays, keeping every ``thinning``-th sweep after
    warm-up; ``collect`` names the entries of ``GibbsState.z`` to keep (default all), last_state (chain-batched)).
    """
    keys = jax.random.split(key, num_chains)
    state = _init_chains(problem, keys, jnp.asarray(num_warmup), variant=variant)
    names = tuple(state.z) if collect is None else tuple(collect)
    total = num_warmup + num_samples
    if fast_compile is None:
        fast_compile = num_chains * total * problem.X.shape[0] <= FAST_COMPILE_WORK
    run_chunk = _run_chunk_fast_compile if fast_compile else _run_chunk
    kept = {k: [] for k in names}
    done = 0
    bar = tqdm(total=total, desc=f"{variant} collapsed Gibbs", disable=not progress_bar, leave=False)
    while done < total:
        n_active = min(chunk, total - done)
        state, out = run_chunk(problem, state, jnp.asarray(n_active), variant=variant, chunk=chunk, names=names,
                               vectorized=bool(vectorized))
        index = np.arange(done, done + n_active)
        sel = np.nonzero((index >= num_warmup) & ((index - num_warmup) % thinning == 0))[0]
        if sel.size:
            for k in names:
                kept[k].append(np.asarray(out[k])[:, sel])
        done += n_active
        bar.update(n_active)
    bar.close()
    draws = {k: np.concatenate(v, axis=1) for k, v in kept.items() if v}
    return draws, state


def predictive_log_lik(problem: RegionProblem, variant: str, Y, M, delta, Omega, X_new):
    """(m, K+1) log p(x_new | Y=k, training units, M, delta, Omega) with (mu_k, Sigma_k) integrated out: the eq. 6
    ratio with and without the new unit (``niw_log_predictive``, a multivariate t on x_M), times the N(delta, Omega)
    conditional of x_{M^c} given x_M."""
    n_concepts = M.shape[0]
    masks = concept_masks_of(variant, M)
    count, total, scatter = concept_suffstats(problem.X, Y, n_concepts)
    p = problem.X.shape[1]
    base = gaussian_logpdf_masked(X_new, delta, jnp.linalg.cholesky(Omega), jnp.ones(p, bool))

    def concept(c, t, s, m):
        log_t = niw_log_predictive(concept_niw_prior(problem.concept_prior, m), c, t, s, m, X_new)
        return log_t + base - gaussian_logpdf_masked(X_new, delta, masked_cholesky(Omega, m), m)

    return jax.vmap(concept, out_axes=1)(count, total, scatter, masks)
