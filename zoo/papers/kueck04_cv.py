"""Cross-validation of the kueck04 models that compiles the sampler once (issue 19.4).

Every fold's training problem (``zoo.papers.kueck04.prepare`` / ``mil_problem``: its own standardization, width
and kernel matrix) is padded to the folds' shared shapes (``zoo.inference.mil.padding``: instance and basis masks;
masked centres are never born), so the ten folds run one compiled sampler chunk (``driver.sample_chunked``'s cache
keys on shapes and static settings; bag labels, data and priors are traced). The padded chain has the unpadded
chain's law (tests/papers/test_mil_padding.py), so this is the per-fold ``zoo.fit`` in law, not in random numbers.

``fold_fits`` gives, per fold, the training preparation and the beta draws; ``fold_scores`` the test bags'
posterior mean Pr(bag positive). Used by ``zoo.experiments.kueck04.cross_validate`` and ``zoo bench mil``.
"""
from __future__ import annotations

import dataclasses
import functools
import time

import jax
import jax.numpy as jnp
import numpy as np

from zoo.data import Bags
from zoo.data.mil import subset_bags

__all__ = ["FoldFit", "fit_padded", "iter_fit_padded", "job_shape", "draw_log_all_negative", "fold_fits",
           "fold_scores", "cross_validated_scores"]


@dataclasses.dataclass
class FoldFit:
    """One fold's fit: ``prep`` (the training arrays, ``MILPrepared``), ``beta`` (S, M) draws of the real basis
    functions, ``capacity_hits`` (births refused at the capacity, summed over sweeps), ``seconds`` (wall time of
    the fold's sampling, compilation included for the first fold)."""
    prep: object
    beta: np.ndarray
    capacity_hits: int
    seconds: float


def fit_padded(jobs, *, num_warmup: int, num_samples: int, fast_compile: bool = False) -> list[FoldFit]:
    """Fit each job ``(spec, train Bags, seed)`` with one chain, all padded to one shape: one compilation for the
    lot. The specs may differ in kernel, width and standardization (they only change the traced kernel matrix)
    but must share the static settings (variant, max_active, the delta2 prior's family): ValueError otherwise."""
    return list(iter_fit_padded(jobs, num_warmup=num_warmup, num_samples=num_samples, fast_compile=fast_compile))


def iter_fit_padded(jobs, *, num_warmup: int, num_samples: int, fast_compile: bool = False, pad_to=(),
                    jump_tries: int | None = None):
    """``fit_padded`` one job at a time: yields each job's ``FoldFit`` as soon as it is sampled, so a caller that
    keeps only what it needs of each fit holds one problem's kernel matrix at a time (many jobs, large N).
    ``pad_to``: more shapes (``job_shape`` of problems not fitted here) the padding also covers, so that calls
    made one fold at a time share one padded shape, hence one compilation. ``jump_tries``: Z-collapsed jumps of
    the active set per sweep (None: the papers' default ``kueck04.JUMP_TRIES``; 0: the sampler before them, which
    a long experiment begun before them continues with)."""
    from zoo.inference.mil.padding import PaddedShape
    from zoo.papers import kueck04 as paper
    jobs = list(jobs)
    shapes = [job_shape(spec, train) for spec, train, _ in jobs] + list(pad_to)
    shape = PaddedShape(*(max(s[i] for s in shapes) + (i == 2) for i in range(5)))   # + one padding group
    capacity = min(min(spec.options["max_active"] for spec, _, _ in jobs), min(s.n_basis for s in shapes))
    configs = {paper.mil_config(spec, _Columns(shape.n_basis), "exact", False)._replace(capacity=capacity)
               for spec, _, _ in jobs}
    if len(configs) != 1:
        raise ValueError("jobs: the specs must share the sampler's static settings (variant, delta2 prior family)")
    config = configs.pop()
    if jump_tries is not None:
        config = config._replace(jump_tries=int(jump_tries))
    # checked above before any fit; the fits themselves run as the caller asks for them
    return _fits(jobs, config, shape, num_warmup, num_samples, fast_compile)


def _fits(jobs, config, shape, num_warmup: int, num_samples: int, fast_compile: bool):
    from zoo.inference.driver import FAST_COMPILE_OPTIONS, sample_chunked
    from zoo.inference.mil.gibbs import build_mil_kernel, mil_draw
    from zoo.inference.mil.padding import pad_problem
    from zoo.papers import kueck04 as paper
    for spec, train, seed in jobs:          # one problem in memory at a time
        prep = paper.prepare(spec, train)
        padded = pad_problem(paper.mil_problem(spec, prep), shape)
        t0 = time.perf_counter()
        result = sample_chunked(build_mil_kernel, config, padded, jax.random.split(jax.random.PRNGKey(seed), 1),
                                num_warmup=num_warmup, num_sampling_sweeps=num_samples, observe=mil_draw,
                                chunk=paper.CHUNK, chain_method="sequential",
                                compiler_options=FAST_COMPILE_OPTIONS if fast_compile else None)
        positions, stats = result.draws
        m = prep.psi.shape[1]
        yield FoldFit(prep=prep, beta=np.asarray(positions["beta"][0, :, :m]),
                      capacity_hits=int(np.sum(stats["capacity_hits"])), seconds=time.perf_counter() - t0)


class _Columns:
    """Stands in for a MILPrepared in ``mil_config`` (which reads only the number of basis columns)."""
    def __init__(self, m: int):
        self.psi = np.empty((0, m))


def job_shape(spec, train: Bags):
    """The shapes of one job without building its kernel matrix: ``PaddedShape`` (N, M, G, n_max, G_dp)."""
    from zoo.inference.mil.gibbs import mixed_groups
    from zoo.inference.mil.padding import PaddedShape
    from zoo.papers import kueck04 as paper
    variant = spec.options["variant"]
    kind, _, _ = paper.bag_labels(variant, train)
    bag_ids = np.arange(train.X.shape[0]) if variant == "supervised" else train.bag_ids
    sizes = np.bincount(bag_ids)
    n = train.X.shape[0]
    dp = mixed_groups(kind, None if variant not in ("measurement", "hybrid") else np.zeros(1))
    centres = n if spec.options.get("basis") is None else min(n, spec.options["basis"])
    return PaddedShape(n, centres + int(spec.options["intercept"]), sizes.size, int(sizes.max()),
                       0 if dp is None else dp.size)


def fold_fits(spec, data: Bags, folds: np.ndarray, *, num_warmup: int, num_samples: int, seeds=None,
              fast_compile: bool = False) -> list[FoldFit]:
    """Fit ``spec`` on the training bags of each fold k (bags with ``folds != k``, k in sorted order), one chain
    per fold (seed k unless ``seeds``), all folds padded to one shape: one compilation (``fit_padded``).
    ``folds`` (B,) int fold id per bag; ``fast_compile``: XLA without backend optimization (short runs)."""
    folds = np.asarray(folds)
    if folds.shape != (data.n_bags,):
        raise ValueError(f"folds: expected one fold id per bag ({data.n_bags}), got shape {folds.shape}")
    ids = np.unique(folds)
    seeds = [int(k) for k in ids] if seeds is None else list(seeds)
    jobs = [(spec, subset_bags(data, np.flatnonzero(folds != k)), seed) for k, seed in zip(ids, seeds)]
    return fit_padded(jobs, num_warmup=num_warmup, num_samples=num_samples, fast_compile=fast_compile)


def _round_up(n: int, step: int) -> int:
    return -(-max(n, 1) // step) * step


@functools.partial(jax.jit, static_argnames=("kernel", "n_bags"))
def _bag_log_all_negative(beta, intercept, X, centres, width, bag_ids, kernel: str, n_bags: int):
    """(S, n_bags) log prod_{i in bag} Phi(-f_s(x_i)) = log Pr(every instance negative | draw s); beta (S, C) on
    the centres (C, D), intercept (S,); X (T, D) with bag_ids (T,) (padding rows in a last, ignored bag)."""
    from jax.scipy.special import log_ndtr
    from zoo.models.mil import gram_matrix
    f = gram_matrix(X, centres, kernel, width) @ beta.T + intercept[None, :]      # (T, S)
    return jax.ops.segment_sum(log_ndtr(-f), bag_ids, n_bags).T                   # (S, n_bags)


def draw_log_all_negative(spec, fit: FoldFit, bags: Bags, max_draws: int = 500) -> np.ndarray:
    """(S, B) log Pr(bag negative | draw s) of the bags ``bags`` under one fit's draws (at most ``max_draws``,
    evenly thinned), in one compiled function whose inputs are padded to multiples of 256 rows, so that folds of
    similar sizes share its compilation. Pr(bag positive | draw) = 1 - exp of it (the constraint model's
    likelihood of a bag label, Kück 2004: a bag is negative iff every instance's Z_i < 0, Z_i ~ N(f(x_i), 1))."""
    beta = fit.beta
    if beta.shape[0] > max_draws:
        beta = beta[np.linspace(0, beta.shape[0] - 1, max_draws).astype(int)]
    prep = fit.prep
    n_centres = prep.X.shape[0]
    intercept = beta[:, n_centres] if spec.options["intercept"] else np.zeros(beta.shape[0])
    c_pad, t_pad = _round_up(n_centres, 256), _round_up(bags.X.shape[0], 256)
    centres = np.zeros((c_pad, prep.X.shape[1]))
    centres[:n_centres] = prep.X
    beta_c = np.zeros((beta.shape[0], c_pad))
    beta_c[:, :n_centres] = beta[:, :n_centres]
    X = np.zeros((t_pad, prep.X.shape[1]))
    X[:bags.X.shape[0]] = (bags.X - prep.mean) / prep.scale
    n_bags = _round_up(bags.n_bags + 1, 64)
    bag_ids = np.full(t_pad, n_bags - 1)
    bag_ids[:bags.X.shape[0]] = bags.bag_ids
    out = _bag_log_all_negative(jnp.asarray(beta_c), jnp.asarray(intercept), jnp.asarray(X), jnp.asarray(centres),
                                jnp.asarray(prep.width), jnp.asarray(bag_ids), kernel=spec.options["kernel"],
                                n_bags=n_bags)
    return np.asarray(out)[:, :bags.n_bags]


def fold_scores(spec, fit: FoldFit, test: Bags, max_draws: int = 500) -> np.ndarray:
    """(B_test,) posterior mean Pr(bag positive) of the test bags under one fold's draws (as
    ``zoo.papers.kueck04.predict``): 1 - the mean over draws of ``draw_log_all_negative``'s exp."""
    return 1.0 - np.mean(np.exp(draw_log_all_negative(spec, fit, test, max_draws)), axis=0)


def cross_validated_scores(spec, data: Bags, folds: np.ndarray, *, num_warmup: int, num_samples: int):
    """(scores (B,) out-of-fold Pr(bag positive), fold fits) over every fold of ``folds``."""
    fits = fold_fits(spec, data, folds, num_warmup=num_warmup, num_samples=num_samples)
    scores = np.zeros(data.n_bags)
    for k, fit in zip(np.unique(folds), fits):
        scores[folds == k] = fold_scores(spec, fit, subset_bags(data, np.flatnonzero(folds == k)))
    return scores, fits
