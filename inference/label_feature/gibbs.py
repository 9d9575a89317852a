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
1b. ``column_flip_step`` (CVFS, ``problem.column_moves`` passes): for each feature, propose flipping a random set
   of its column's keyword indicators at once, delta and alpha integrated out, then redraw both (not in the paper;
   exact). Why: single flips pass between a column's distant modes only through intermediate states where Omega
   must follow M (issue 29; ``zoo.inference.label_feature.columns``).
2. ``label_step``: draw temporary (mu_k, Sigma_k) from eq. 8-9 given (Y, M), extend them to p dimensions with
   (delta, Omega), and update each Y_ij from its full conditional: eq. 1 restricted to S_i and to the coverage
   constraint given the image's other labels. The probabilities are returned: their average over sweeps is the
   Rao-Blackwellized Pr(Y_ij = y | data). Images are updated in parallel, the segments of an image in turn.
3. ``alpha_step`` (CVFS): Gibbs from the Beta-mixture posterior of each alpha_j.
3b. ``background_marginal_refresh`` (CVFS, ``problem.marginal_refresh``): an exact Gibbs draw of the background's
   marginal (delta_S, Omega_SS) on the features S every labelled concept uses, which the data leave to the prior
   (not in the paper; issue 29).
4. ``delta_omega_step`` (CVFS): data augmentation of eq. 11 (x*_M ~ N(delta_M, Omega_MM), x*_{M^c} from eq. 11),
   conjugate NIW proposal from the completed x*, and a Metropolis-Hastings correction: because x*_{M^c} depends on
   Omega through eq. 11, the plain conjugate draw of the paper does not leave eq. 10 invariant (on a small test
   problem it puts the correlation of Omega at 0.26 where the target has 0.79, see
   tests/papers/test_gustafson07_gibbs.py); the correction makes the move exact. Its acceptance rate is reported.

Every move is a pure ``(problem, state, key) -> (state, info)`` function over NamedTuples; ``build_gibbs_kernel``
gives the sweep in the shape of ``zoo.inference.driver`` (``gibbs_step``: (key, state) -> (state, SweepInfo)),
which ``run_gibbs`` runs in compiled chunks (``driver.sample_chunked``, the Rao-Blackwell sums in the driver) and
``LabelFeatureGibbs`` (``driver.KernelMCMC``) under ``numpyro.infer.MCMC``.
Modules: ``label_feature_state`` (problem, state, shared helpers), ``label_feature_flips`` (step 1),
``label_feature_joint`` (the joint (indicator, labels) move), ``label_feature_moves`` (steps 2-4), this one (the
sweep, the kernel, ``run_gibbs`` and the posterior predictive).
Shapes: n units, p features, K+1 concepts (0 = garbage), I images, J = most segments in one image.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from zoo.inference.label_feature.collapsed_niw import (concept_niw_prior, gaussian_logpdf_masked, masked_cholesky,
                                         niw_log_predictive)
from zoo.inference.driver import FAST_COMPILE_OPTIONS, Kernel, KernelMCMC, sample_chunked
from zoo.inference.label_feature.columns import column_flip_step
from zoo.inference.label_feature.flips import delta_collapsed_flip_step, feature_flip_step, single_flip_step
from zoo.inference.label_feature.joint import joint_flip_relabel_step
from zoo.inference.label_feature.moves import (alpha_step, background_marginal_refresh, delta_omega_step, label_step,
                                               omega_step)
from zoo.inference.label_feature.state import (BetaMixture, GibbsState, RegionProblem, SweepInfo, concept_masks_of,
                                               concept_suffstats, label_log_prior)
from zoo.inference.linalg import cholesky

# the moves and types are re-exported: ``zoo.inference.label_feature.gibbs`` is the sampler's one entry point
__all__ = ["RegionProblem", "BetaMixture", "GibbsState", "SweepInfo", "concept_suffstats", "concept_masks_of",
           "feature_flip_step", "delta_collapsed_flip_step", "column_flip_step", "joint_flip_relabel_step",
           "single_flip_step", "label_step", "alpha_step", "omega_step", "background_marginal_refresh",
           "delta_omega_step", "gibbs_step", "build_gibbs_kernel", "init_chain", "init_state", "initial_labels",
           "collected", "collect_names", "Collect", "label_proba_sum",
           "LabelFeatureGibbs", "run_gibbs", "predictive_log_lik", "FAST_COMPILE_OPTIONS", "FAST_COMPILE_WORK",
           "VARIANTS"]


VARIANTS = ("full", "fs", "cvfs")


def gibbs_step(key, state: GibbsState, problem: RegionProblem, variant: str) -> tuple[GibbsState, SweepInfo]:
    """One full sweep (steps 1-4). Index 0 of the key's split is the chain's next key (``driver.next_key``)."""
    _, k_m, k_y, k_a, k_d, k_o, k_j = jax.random.split(key, 7)
    accept_c = jnp.asarray(0.0)
    if variant == "cvfs":
        state, accept_m, leave = delta_collapsed_flip_step(problem, state, k_m, with_move_probability=True)
        # 1b. column flips (columns.py); their key is folded from step 1's, so FULL's and FS's streams keep
        # the keys they had before the move existed
        k_c = jax.random.fold_in(k_m, 1)

        def column(t, carry):
            s, acc, leave = carry
            s, a, q = column_flip_step(problem, s, jax.random.fold_in(k_c, t), with_move_probability=True)
            return s, acc + a, leave + q
        n_column = jnp.asarray(problem.column_moves)
        state, accept_c, leave = jax.lax.fori_loop(0, n_column, column, (state, accept_c, leave))
        accept_c = accept_c / jnp.maximum(n_column, 1)
    else:
        state, accept_m, leave = feature_flip_step(problem, variant, state, k_m, with_move_probability=True)
    accept_j = jnp.asarray(1.0)
    if variant != "full":
        def joint(t, carry):
            s, acc, leave = carry
            s, a, q = joint_flip_relabel_step(problem, variant, s, jax.random.fold_in(k_j, t),
                                              with_move_probability=True)
            return s, acc + a, leave + q
        n_joint = jnp.asarray(problem.joint_moves)
        state, accept_j, leave = jax.lax.fori_loop(0, n_joint, joint, (state, jnp.asarray(0.0), leave))
        accept_j = accept_j / jnp.maximum(n_joint, 1)
    state, _ = label_step(problem, variant, state, k_y)
    accept_do = accept_o = jnp.asarray(1.0)
    if variant == "cvfs":
        state, _ = alpha_step(problem, state, k_a)
        state, accept_o = omega_step(problem, state, k_o)
        # 3b. the marginal the data leave to the prior (moves.py); key folded from the Omega step's
        refreshed, _ = background_marginal_refresh(problem, state, jax.random.fold_in(k_o, 1))
        state = jax.tree_util.tree_map(lambda a, b: jnp.where(jnp.asarray(problem.marginal_refresh), a, b),
                                       refreshed, state)
        state, accept_do = delta_omega_step(problem, state, k_d)
    state = state._replace(warmup_left=jnp.maximum(state.warmup_left - 1, 0))
    return state, SweepInfo(accept_m, accept_do, jnp.asarray(accept_o, jnp.float64),
                            jnp.asarray(accept_j, jnp.float64), jnp.asarray(leave, jnp.float64),
                            jnp.asarray(accept_c, jnp.float64))


def collected(state: GibbsState, variant: str, info: SweepInfo) -> dict:
    """Everything a draw can keep: the state's sites, the number of relevant features per concept, the sweep's
    label probabilities and unit log-likelihoods, and its acceptance rates."""
    masks = concept_masks_of(variant, state.M)
    out = {"Y": state.Y, "M": state.M, "n_relevant": masks[1:].sum(-1), "label_proba": state.label_proba,
           "unit_loglik": state.unit_loglik}
    if variant == "cvfs":
        out.update(alpha=state.alpha, delta=state.delta, Omega=state.Omega, accept_column=info.accept_column)
    out.update(accept_M=info.accept_M, accept_delta_Omega=info.accept_delta_Omega, accept_Omega=info.accept_Omega,
               accept_joint=info.accept_joint, M_move_probability=info.move_probability_M)
    return out


def collect_names(variant: str) -> tuple:
    """The names ``collected`` gives for ``variant``."""
    names = ("Y", "M", "n_relevant", "label_proba", "unit_loglik")
    names += ("alpha", "delta", "Omega") if variant == "cvfs" else ()
    names += ("accept_column",) if variant == "cvfs" else ()
    return names + ("accept_M", "accept_delta_Omega", "accept_Omega", "accept_joint", "M_move_probability")


class Collect(NamedTuple):
    """``observe`` for the driver: the entries ``names`` of ``collected`` (hashable, so a second fit with the same
    settings reuses the compiled chunk)."""
    variant: str
    names: tuple

    def __call__(self, state: GibbsState, info: SweepInfo) -> dict:
        out = collected(state, self.variant, info)
        return {k: out[k] for k in self.names}


def label_proba_sum(state: GibbsState, info: SweepInfo) -> jnp.ndarray:
    """``accumulate`` for the driver: the sweep's label probabilities, whose average over the sampling sweeps is
    the Rao-Blackwellized Pr(Y_ij = y | data)."""
    return state.label_proba


def initial_labels(problem: RegionProblem, key):
    """Labels satisfying the coverage constraint: each keyword on a distinct random segment, the rest from the label
    prior on S_i (``label_log_prior``; uniform at garbage weight 1)."""
    n, n_concepts = problem.allowed.shape
    n_images, n_slots = problem.image_slots.shape
    valid = problem.image_slots >= 0
    k_perm, k_rest = jax.random.split(key)
    scores = jnp.where(valid, jax.random.uniform(k_perm, (n_images, n_slots)), jnp.inf)
    rank = jnp.argsort(jnp.argsort(scores, axis=1), axis=1)           # random order of the valid slots
    kw = problem.keyword_mask
    kw_sorted = jnp.argsort(~kw, axis=1, stable=True)                 # keyword ids first
    n_kw = kw.sum(1)
    rest = jax.random.categorical(k_rest, jnp.where(problem.allowed, label_log_prior(problem, n_concepts),
                                                    -jnp.inf))  # (n,)
    safe = jnp.where(valid, problem.image_slots, 0)
    forced = jnp.take_along_axis(kw_sorted, jnp.minimum(rank, n_concepts - 1), axis=1)
    y_slot = jnp.where(rank < n_kw[:, None], forced, rest[safe])
    return jnp.zeros(n, int).at[jnp.where(valid, problem.image_slots, n)].set(y_slot.astype(int), mode="drop")


def init_chain(problem: RegionProblem, variant: str, key, num_warmup=0) -> tuple[GibbsState, jax.Array]:
    """Coverage-respecting labels, M at random (CVFS rows 1..K, FS shared; FULL all ones), alpha = prior mean;
    and the key of the chain's first sweep."""
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
                       unit_loglik=jnp.zeros(n), warmup_left=jnp.asarray(num_warmup),
                       joint_tries=jnp.zeros((n_concepts, p)), joint_accepts=jnp.zeros((n_concepts, p)))
    return state, key


def init_state(problem: RegionProblem, variant: str, key, num_warmup=0) -> GibbsState:
    """``init_chain``'s state alone (for moves tested one by one)."""
    return init_chain(problem, variant, key, num_warmup)[0]


def build_gibbs_kernel(problem: RegionProblem, variant: str) -> Kernel:
    """The sampler for ``zoo.inference.driver``: ``init_chain`` and ``gibbs_step``; ``variant`` in full/fs/cvfs."""
    if variant not in VARIANTS:
        raise ValueError(f"variant: {variant!r} is not one of 'full', 'fs', 'cvfs'")
    return Kernel(init=lambda key, num_warmup: init_chain(problem, variant, key, num_warmup),
                  step=lambda key, state: gibbs_step(key, state, problem, variant))


class LabelFeatureGibbs(KernelMCMC):
    """``build_gibbs_kernel`` under ``numpyro.infer.MCMC`` (``driver.KernelMCMC``); draws: ``collected``.

    >>> import jax, numpyro, zoo
    >>> from zoo.inference.label_feature.gibbs import LabelFeatureGibbs
    >>> from zoo.papers.gustafson07 import region_arrays, region_problem   # a problem from a model and its data
    >>> regions = zoo.load_dataset("gustafson07_program", n_images=10, n_keywords=4, n_features=5)
    >>> problem = region_problem(zoo.model("gustafson07.cvfs"), region_arrays(regions))
    >>> mcmc = numpyro.infer.MCMC(LabelFeatureGibbs(problem, "cvfs"), num_warmup=50, num_samples=100,
    ...                           num_chains=2, chain_method="vectorized", progress_bar=False)
    >>> mcmc.run(jax.random.PRNGKey(0)); mcmc.get_samples(group_by_chain=True)["M"].shape   # (chain, draw, K+1, p)
    (2, 100, 5, 5)
    """

    def __init__(self, problem: RegionProblem, variant: str):
        if variant not in VARIANTS:
            raise ValueError(f"variant: {variant!r} is not one of 'full', 'fs', 'cvfs'")
        super().__init__(build_gibbs_kernel, variant, problem, observe=Collect(variant, collect_names(variant)))
        self.variant = variant


# FAST_COMPILE_OPTIONS roughly halves the sweep's compile time (CVFS, two chains: about 14 s -> 7 s on one CPU)
# and makes each sweep 1.5-4x slower: worth it only for short runs, where compilation is most of the wall time.
# ``run_gibbs`` picks it below FAST_COMPILE_WORK chain-sweeps x units unless told.
FAST_COMPILE_WORK = 250_000


def run_gibbs(problem: RegionProblem, variant: str, key, *, num_chains: int = 2, num_warmup: int = 200,
              num_samples: int = 1000, thinning: int = 1, collect=None, progress=None, progress_bar: bool = False,
              chunk: int = 50, fast_compile: bool | None = None, vectorized: bool = False,
              chain_method: str | None = None):
    """Run ``num_chains`` chains of ``gibbs_step`` with ``driver.sample_chunked``: one compiled chunk of ``chunk``
    groups of ``thinning`` sweeps reused for warm-up and sampling (the same chain as ``numpyro.infer.MCMC`` with
    ``LabelFeatureGibbs``, compiled once). The chains run one after another (lax.map), unbatched, unless
    ``vectorized``: under vmap the sweep's data-dependent loops and branches (the joint move's unit loop and its
    skip of unchanged labels) turn into selects over the whole carry, about 2x the time per chain-sweep (a single
    chain under vmap: 2.4 -> 5.9 ms per sweep on the bench problem).
    ``chain_method`` ("sequential", "vectorized" or "parallel": chains sharded over ``jax.devices()``) overrides
    ``vectorized`` when given.
    ``fast_compile``: compile without XLA's backend optimization (half the compile time, slower sweeps); None =
    when num_chains x (num_warmup + num_samples) x units <= FAST_COMPILE_WORK. Timings (benchmarks) pass False.
    ``progress(n_sweeps)`` is called after every chunk (``progress_bar`` is no longer drawn here: pass
    ``progress``, e.g. a progress bar's ``update``).

    Returns (draws: dict name -> (chain, draw, ...) numpy arrays, keeping the first sweep of every ``thinning``
    after warm-up (the last draw may come from a shorter group); ``collect`` names the entries of ``collected``
    to keep (default all); the driver's SampleResult, whose ``running`` / ``n_running`` are the sums of the label
    probabilities over the sampling sweeps per chain (the Rao-Blackwell average) and their count)."""
    if progress_bar:
        raise ValueError("progress_bar: zoo.inference draws no progress bars; pass progress=<callback>")
    if variant not in VARIANTS:
        raise ValueError(f"variant: {variant!r} is not one of 'full', 'fs', 'cvfs'")
    names = collect_names(variant) if collect is None else tuple(collect)
    if fast_compile is None:
        fast_compile = num_chains * (num_warmup + num_samples) * problem.X.shape[0] <= FAST_COMPILE_WORK
    result = sample_chunked(build_gibbs_kernel, variant, problem, jax.random.split(key, num_chains),
                            num_warmup=num_warmup, num_sampling_sweeps=num_samples,
                            observe=Collect(variant, names), accumulate=label_proba_sum, thinning=thinning,
                            keep_index=0, chunk=chunk, chain_method=chain_method or ("vectorized" if vectorized else "sequential"),
                            compiler_options=FAST_COMPILE_OPTIONS if fast_compile else None, progress=progress)
    return result.draws, result


def predictive_log_lik(problem: RegionProblem, variant: str, Y, M, delta, Omega, X_new):
    """(m, K+1) log p(x_new | Y=k, training units, M, delta, Omega) with (mu_k, Sigma_k) integrated out: the eq. 6
    ratio with and without the new unit (``niw_log_predictive``, a multivariate t on x_M), times the N(delta, Omega)
    conditional of x_{M^c} given x_M."""
    n_concepts = M.shape[0]
    masks = concept_masks_of(variant, M)
    count, total, scatter = concept_suffstats(problem.X, Y, n_concepts)
    p = problem.X.shape[1]
    base = gaussian_logpdf_masked(X_new, delta, cholesky(Omega), jnp.ones(p, bool))

    def concept(c, t, s, m):
        log_t = niw_log_predictive(concept_niw_prior(problem.concept_prior, m), c, t, s, m, X_new)
        return log_t + base - gaussian_logpdf_masked(X_new, delta, masked_cholesky(Omega, m), m)

    return jax.vmap(concept, out_axes=1)(count, total, scatter, masks)
