"""Kueck 2004, Bayesian multiple-instance learning: registration of the four sparse kernel probit models.

Model ids: ``kueck04.supervised`` (instance labels), ``kueck04.constraint`` (group labels: the thesis'
negative/mixed/positive ``group_labels``, else standard MIL ``bag_labels`` = "at least one positive"),
``kueck04.measurement`` (guessed ``fractions`` with confidence ``chi``), ``kueck04.hybrid`` (both).
Default method ``blocked_gibbs`` (exact Z sampler); ``blocked_gibbs_mh`` is the thesis' Metropolis Z sampler.
Both add an exact marginal-augmentation rescaling of (Z, beta) to the thesis' sweep (``rescale=False``: without).

Options (``zoo.model(id, ...)``): ``kernel`` (gaussian, linear, cubic, sigmoid, multiquadric, cauchy, thin_plate;
default gaussian), ``width`` (default: the median distance between standardized training instances),
``standardize`` (default: True when ``width`` is None, i.e. features are z-scored with the training mean and
standard deviation), ``intercept`` (False, as in the thesis), ``chi`` (measurement/hybrid confidence, default 100),
``max_active`` (capacity of the active set, default ``MAX_ACTIVE`` = 100: births beyond it are refused, counted and
warned of),
``ridge`` (relative jitter on Psi'Psi, default 1e-8 x mean diagonal; duplicate instances stay well-posed),
``basis`` (None: a basis function on every training instance, as in the thesis; an int M: M centres chosen
among the training instances by k-means++ seeding, ``zoo.inference.mil.basis``, so psi is N x M).
Priors: ``tau`` ~ Beta(a, b) (integrated out; must stay Beta), ``delta2`` ~ InverseGamma(mu/2, nu/2) (another
family switches delta2 to a random-walk Metropolis step); defaults in ``zoo.models.mil.default_priors``,
read into the sampler's settings by ``_prior_settings`` alone (``mil_hyper``, ``mil_config``), handed to the
program by ``program_kwargs``. Training data -> the sampler's arrays (``prepare``, ``MILPrepared``, ``bag_labels``,
``median_distance``): ``zoo.papers.kueck04_prepare``, re-exported here.
"""
from __future__ import annotations

import dataclasses
import warnings
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import xarray as xr
from jax.scipy.special import log_ndtr
from numpyro.infer import MCMC, Predictive

from zoo.data.containers import Bags
from zoo.papers.kueck04_lp import blocked_gibbs_log_joint, draw_log_joint
from zoo.inference.driver import (FAST_COMPILE_OPTIONS, ChainCarry, ProgramKernel, run_chunk, sample_chunked,
                                  sample_until)
from zoo.inference.mil.gibbs import (KeyedMILState, MILConfig, MILGibbs, MILHyper, MILProblem, build_mil_kernel,
                                     mil_draw, mil_position, mixed_groups, problem_sizes)
from zoo.inference.mil.jump import FIT_STEPS
from zoo.inference.mil.rows import KernelRows
from zoo.inference.mil.orthant_sampler import GroupLayout
from zoo.models.mil import KERNELS, default_priors, gram_matrix, kernel_mil_program
from zoo.core.options import chain_method as check_chain_method, check_known, positive_float
from zoo.papers import kueck04_prepare as _prepare_module
from zoo.papers.kueck04_prepare import MILPrepared, bag_labels, prepare
from zoo.core.prediction import Prediction
from zoo.core.priors import any_family, beta_parameters, families, inverse_gamma_parameters
from zoo.core.progress import progress_callback
from zoo.core.registry import register_method, register_model
from zoo.core.convergence import auto_report, auto_settings, short_of
from zoo.core.fit import Fit
from zoo.core.idata import draws_of, to_inference_data

__all__ = ["MILPrediction", "MILPrepared", "bag_labels", "prepare", "program_kwargs", "predict", "mil_config",
           "mil_problem", "mil_hyper", "advance_chains", "VARIANTS", "CHUNK", "MAX_ACTIVE"]

# moved to zoo.papers.kueck04_prepare with the code that uses it; still importable from here
median_distance = _prepare_module.median_distance

VARIANTS = ("supervised", "constraint", "measurement", "hybrid")
#: every method's dims (the program's plates ``basis``, ``instance`` and ``group``; the log likelihood is per
#: group, named after the observed site ``group_label``)
_SITE_DIMS = {"gamma": ("basis",), "beta": ("basis",), "z": ("instance",), "f": ("instance",),
              "group_label": ("group",), "fraction": ("group",)}
#: the sites indexed by the data's units (``unit_posterior``): z per training instance, and gamma, beta per basis
#: function, each centred on a training instance (all N, or the ``basis`` option's k-means++ subset; the intercept
#: column too): N elements each, and a coefficient sits exactly at 0 in every draw where its kernel is off (the
#: spike of the spike-and-slab prior), so a kernel never switched on in a chain gives that chain one value, which
#: ArviZ's per-chain density and r-hat cannot read. ``posterior`` keeps the headline delta2 and n_active.
_UNIT_SITES = ("z", "gamma", "beta")
#: the sites judged by ``fit.diagnose()`` and ``num_samples="auto"``. n_active stays one although its posterior is
#: heavy-tailed (issue 29, session 6, the ring: rare one-sweep excursions to 20-87 kernels): ArviZ's bulk and tail
#: ESS are rank-based, so the size of those visits does not set them. Censoring n_active at 20 or at 10 left its
#: bulk ESS at 81.0 / 82.6 against 80.5, and the indicator of small sets (<= 5 kernels) had ESS 91.6 and r-hat
#: 1.048: the low ESS is the bulk's slow mixing (K changes in 20 % of sweeps at 4-5 kernels, 35 % at 6-8), which
#: the check should report
_HEADLINE = ("delta2", "n_active")
#: the log likelihood was stored as ``groups`` before format 4: files written then load under its site's name
_RENAMED = {"groups": "group_label"}
_PAPER = "Kueck 2004"


@dataclasses.dataclass(frozen=True, repr=False)
class MILPrediction(Prediction):
    """instance_proba (M,): posterior mean of Phi(f(x)); bag_proba (B,): 1 - mean over draws of prod Phi(-f)."""
    instance_proba: np.ndarray
    bag_proba: np.ndarray

    def labels(self, threshold: float = 0.5) -> np.ndarray:
        """(M,) instance labels: 1 where ``instance_proba > threshold``."""
        return (np.asarray(self.instance_proba) > threshold).astype(np.int64)

    def bag_labels(self, threshold: float = 0.5) -> np.ndarray:
        """(B,) bag labels: 1 where ``bag_proba > threshold``."""
        return (np.asarray(self.bag_proba) > threshold).astype(np.int64)


#: the default capacity of the active set (``max_active``; issue 29, session 6). The ring's n_active has a long right
#: tail: short excursions to large sets (K > 20 in 1.1-1.7 % of draws, returning within a few sweeps), reaching 74
#: and 87 kernels in 4 x (1,000 + 1,000) sweeps at capacities 500 and 100 (P(K > 50) 0.15 % and 0.20 %, the same
#: tail from two streams; every move is exact by its enumeration and Geweke tests, but the tail is not checked
#: against an independent sampler); the old default 50 refused 75 births in the default fit: a truncated posterior.
#: At 100 no birth was refused, for 1.015x the sampling seconds of 50 (128.3 against 126.4 s, same process: the
#: sweep's K_max-sized parts are small beside its N-sized ones on the ring); 500 (= N, never truncating) took 12.3x
#: (1,226.8 against 99.4 s, same process, the machine's load rising from ~3 to ~7 between the two).
#: A user's data can still reach 100: the fit then warns "refit with a larger max_active". Session 7: the default
#: fit at seed 3 reached 100 on the ring (84 refused births, one chain, P(K > 50) 0.8 %; the warning is then true),
#: seeds 0 and 2 at most 87; not raised further this session (the cost of 200 is not measured)
MAX_ACTIVE = 100


def _build(variant: str):
    def build(kernel: str = "gaussian", width: float | None = None, standardize: bool | None = None,
              intercept: bool = False, chi: float | None = None, max_active: int = MAX_ACTIVE,
              ridge: float = 1e-8, basis: int | None = None):
        if kernel not in KERNELS:
            raise ValueError(f"kernel: {kernel!r} is not one of {', '.join(KERNELS)}")
        if width is not None:
            width = positive_float(width, "width")
        if not isinstance(max_active, (int, np.integer)) or max_active < 1:
            raise ValueError(f"max_active: must be a positive int, got {max_active!r}")
        ridge = positive_float(ridge, "ridge")
        if basis is not None and (isinstance(basis, bool) or not isinstance(basis, (int, np.integer)) or basis < 1):
            raise ValueError(f"basis: must be None or a positive int (number of centres), got {basis!r}")
        if variant in ("measurement", "hybrid"):
            chi = 100.0 if chi is None else chi
            if not (np.isfinite(chi) and chi >= 0):
                raise ValueError(f"chi: must be a non-negative number, got {chi!r}")
        elif chi is not None:
            raise ValueError(f"chi: only the measurement and hybrid models take a confidence chi ({variant})")
        options = dict(kernel=kernel, width=width, standardize=(width is None) if standardize is None
                       else bool(standardize), intercept=bool(intercept), chi=chi, max_active=int(max_active),
                       ridge=float(ridge), variant=variant, basis=None if basis is None else int(basis))
        return kernel_mil_program, options, default_priors()
    return build


# --- data -> arrays: zoo.papers.kueck04_prepare (MILPrepared, bag_labels, median_distance, prepare) ---------

def program_kwargs(spec, data) -> dict:
    """Keyword arguments of ``spec.program`` (the reference NumPyro program) for ``data``."""
    prep = data if isinstance(data, MILPrepared) else prepare(spec, data, rows="stored")
    if prep.psi is None:
        raise ValueError("data: the NumPyro program needs the stored kernel matrix (prepare(..., rows='stored'))")
    return dict(psi=jnp.asarray(prep.psi), gram=jnp.asarray(prep.gram), group_index=jnp.asarray(prep.layout.index),
                group_valid=jnp.asarray(prep.layout.valid), label_family=jnp.asarray(prep.family),
                group_label=jnp.asarray(prep.group_label),
                fraction=None if prep.fraction is None else jnp.asarray(prep.fraction),
                chi=spec.options["chi"], prior_tau=spec.priors["tau"], prior_delta2=spec.priors["delta2"])


def _prior_settings(spec) -> tuple[MILHyper, Any]:
    """The one function that reads ``spec.priors`` (families and shapes checked here, ValueErrors naming the
    site): the traced ``MILHyper`` and the static log density of a non-conjugate delta2 prior (None for the
    conjugate InverseGamma). tau ~ Beta(a, b) is integrated out (must stay a Beta); delta2 ~ IG(alpha0, beta0)
    starts at its mode; another delta2 family gets a random-walk Metropolis step, starts at its median (2001
    prior draws, seed 0), and the default IG's numbers shape the collapsed move's proposals."""
    a, b = beta_parameters(spec.priors["tau"], "tau", needed_by="the kernel selection with tau integrated out")
    d2 = spec.priors["delta2"]
    if isinstance(d2, dist.InverseGamma):
        alpha0, beta0 = inverse_gamma_parameters(d2, "delta2")
        init, log_prob = beta0 / (alpha0 + 1.0), None
    else:
        if tuple(d2.batch_shape) + tuple(d2.event_shape) != ():
            raise ValueError(f"priors['delta2']: needs a scalar distribution, got shape "
                             f"{tuple(d2.batch_shape) + tuple(d2.event_shape)}")
        alpha0, beta0 = inverse_gamma_parameters(default_priors()["delta2"], "delta2")
        init, log_prob = float(np.median(np.asarray(d2.sample(jax.random.PRNGKey(0), (2001,))))), d2.log_prob
    return MILHyper(*(jnp.asarray(float(v)) for v in (a, b, alpha0, beta0, init))), log_prob


#: Z-collapsed jumps of gamma per sweep in the papers' fits (``zoo.inference.mil.jump``; issue 29): on
#: ``kueck04_ring`` (constraint, 4 chains x (1,000 + 1,000), same process, machine shared) 2 jumps per sweep took
#: n_active's bulk ESS from 11.7 to 80.5 (r-hat 1.263 -> 1.060) for 4.4x the sampling seconds (17.1 -> 75.9 s).
#: More tries did not help (session 5, same run, one process, load ~10): 6 tries gave n_active bulk ESS 77.9 (tail
#: 61.0, r-hat 1.046) against 80.5 (tail 173.3) for 1.27x the sampling seconds (420.7 against 330.1 s; delta2's ESS
#: rose 113.7 -> 681.6): the worst headline ESS per second fell 0.244 -> 0.145, so n_active is not limited by the
#: number of jump tries per sweep
JUMP_TRIES = 2
#: Newton steps of the jumps' Laplace fits (``zoo.inference.mil.jump.FitSteps``: anchor, then at delta2). Cheaper
#: fits were worse per second: on the same ring run, 6 Newton steps from 0 at delta2 (no anchor) instead of 12 + 3
#: accepted 15.7 % of jumps instead of 23.4 % and gave n_active bulk ESS 25.6 instead of 80.5, anchor 6 + 2 at
#: delta2 13.8 % and 14.9 (issue 29)
JUMP_FIT_STEPS = FIT_STEPS
#: the jumps' swaps propose a neighbour of the kernel leaving (``zoo.inference.mil.jump``); off: uniform. Off by
#: default (issue 29, sessions 6-7, ``scripts/kueck04_jump_ess.py --neighbour-swaps 1 0`` on the ring at capacity
#: 100, 4 x (1,000 + 1,000), seeds 0-3): n_active bulk ESS 77.9 / 68.7 / 39.4 / 62.8 against 56.4 / 167.4 / 95.5 /
#: 89.7 with uniform swaps (means 62.2 against 102.3; worse at 3 of 4 seeds), delta2's 706 / 609 / 220 / 628
#: against 278 / 518 / 639 / 582, the same seconds per sweep: no gain
JUMP_NEIGHBOUR_SWAPS = False
#: the jumps' births and swaps propose the kernels of largest data-fit gain (``zoo.inference.mil.jump``, informed;
#: mixed half and half with the uniform proposal); off: uniform. Off by default (issue 29, session 7, same runs,
#: seeds 0, 2, 3): n_active bulk ESS 75.2 / 97.1 / 82.4 against 56.4 / 95.5 / 89.7 (means 84.9 against 80.5),
#: delta2's 224 / 228 / 83 against 278 / 639 / 582, the top kernels' indicators mixing worse (max r-hat 1.37 against
#: 1.13 at seed 0, 1.37 against 1.11 at seed 3), the same seconds per sweep: no real gain, delta2 worse
JUMP_INFORMED = False
#: the jumps also propose splits of one active kernel into two neighbouring ones and merges of two into one
#: (``zoo.inference.mil.jump``, split_merge: five kinds of try instead of three); off: births, deaths and swaps.
#: Off by default (issue 29, session 8, ``scripts/kueck04_jump_ess.py --jumps 2 --max-active 100 --split-merge 1 0
#: --seed 0 1 2`` on the ring, 4 x (1,000 + 1,000)): n_active bulk ESS 103.1 / 116.6 / 27.5 against 56.4 / 167.4 /
#: 95.5 (means 82.4 against 106.4; worse at 2 of 3 seeds, r-hat 1.109 at seed 2), delta2's 197 / 420 / 636 against
#: 278 / 518 / 639, set-identity changes at K <= 5 no more often, about the same seconds per sweep: no gain
JUMP_SPLIT_MERGE = False


def mil_config(spec, prep: MILPrepared, z_sampler: str = "exact", store_z: bool = False) -> MILConfig:
    """The static settings (compiled into the sampler). The prior settings travel with the problem
    (``mil_hyper``), so swapping them reuses the compiled code; a non-conjugate delta2 prior is a static density."""
    m = prep.gram.shape[0] if prep.psi is None else prep.psi.shape[1]
    config = MILConfig(capacity=min(spec.options["max_active"], m), z_sampler=z_sampler, store_z=store_z,
                       delta2_log_prob=_prior_settings(spec)[1], jump_tries=JUMP_TRIES,
                       jump_fit_steps=JUMP_FIT_STEPS, jump_neighbour_swaps=JUMP_NEIGHBOUR_SWAPS,
                       jump_informed=JUMP_INFORMED, jump_split_merge=JUMP_SPLIT_MERGE,
                       row_function=KERNELS[spec.options["kernel"]] if prep.psi is None else None)
    # the Z-collapsed scale move and jumps need the exact Z | f draw after them (``mil_gibbs.mil_step``)
    return config if z_sampler == "exact" else config._replace(scale_tries=0, jump_tries=0)


def mil_hyper(spec) -> MILHyper:
    """Traced prior settings (``_prior_settings``)."""
    return _prior_settings(spec)[0]


def mil_problem(spec, data) -> MILProblem:
    """The sampler's arrays for ``data`` (Bags, or what ``prepare`` made of them) and the spec's priors."""
    prep = data if isinstance(data, MILPrepared) else prepare(spec, data)
    stored = prep.psi is not None
    rows = None if stored else KernelRows(x=jnp.asarray(prep.instances), centres=jnp.asarray(prep.X),
                                          width=jnp.asarray(prep.width))
    return MILProblem(psi=jnp.asarray(prep.psi) if stored else None, gram=jnp.asarray(prep.gram),
                      psi_t=jnp.asarray(prep.psi.T) if stored else None, rows=rows,
                      layout=GroupLayout(*(jnp.asarray(a) for a in prep.layout)), kind=jnp.asarray(prep.kind),
                      log_weight=None if prep.log_weight is None else jnp.asarray(prep.log_weight),
                      ridge=jnp.asarray(prep.ridge), dp_groups=_dp_groups(prep), hyper=mil_hyper(spec))


def _dp_groups(prep: MILPrepared):
    groups = mixed_groups(prep.kind, prep.log_weight)
    return None if groups is None else jnp.asarray(groups)


#: draws per compiled chunk of the default driver (the progress bar moves between chunks)
CHUNK = 100
#: FAST_COMPILE_OPTIONS (zoo.inference.driver) compiles the sweep in about half the time but runs it ~5x slower;
#: the driver picks it for short runs (chains x sweeps x instances below this), where compilation dominates
FAST_COMPILE_BELOW = 500_000


def advance_chains(states: KeyedMILState, problem: MILProblem, n_run, config: MILConfig, chunk: int = CHUNK,
                   thinning: int = 1, chain_method: str = "vectorized", compiler_options=None):
    """Run every chain (leading axis of ``states``, a ``KeyedMILState``: the chains and their keys) ``n_run``
    (<= ``chunk``) steps of ``thinning`` sweeps, keeping the position and statistics after each step:
    (states, (positions, stats)) with a draw axis of length ``chunk``; rows past ``n_run`` are to be dropped. One
    compilation per shapes and settings (``driver.sample_chunked``'s chunk), across fits: priors are traced, see
    ``mil_hyper``."""
    carry, observed = run_chunk(build_mil_kernel, config, problem, ChainCarry(states.state, states.rng_key, ()),
                                n_run, observe=mil_draw, chunk=chunk, thinning=thinning, chain_method=chain_method,
                                compiler_options=compiler_options)
    return KeyedMILState(carry.state, carry.key), observed


def _run_chunked(problem, config, *, seed, num_chains, num_warmup, num_samples, thinning, progress_bar,
                 fast_compile=None, chain_method="vectorized", auto=None):
    """The default driver (``driver.sample_chunked``): warm-up then sampling in chunks of compiled sweeps with a
    progress bar between chunks. ``fast_compile`` (None: by run length, ``FAST_COMPILE_BELOW``) compiles
    without XLA's backend optimization. ``auto`` (``num_samples="auto"``): an ``AutoSettings``; sampling then runs
    (``driver.sample_until``) until the headline sites pass or the time budget is spent. Returns (samples, stats,
    last_state, auto report or None), arrays (chain, draw, ...)."""
    total = num_warmup + (auto.check_every if auto else num_samples) * thinning   # "auto": the bar's first leg
    if fast_compile is None:   # "auto" runs until converged: long enough for the optimized compilation
        fast_compile = auto is None and num_chains * total * problem_sizes(problem)[0] < FAST_COMPILE_BELOW
    keys = jax.random.split(jax.random.PRNGKey(seed), num_chains)
    settings = dict(observe=mil_draw, thinning=thinning, chunk=CHUNK, chain_method=chain_method,
                    compiler_options=FAST_COMPILE_OPTIONS if fast_compile else None)
    with progress_callback(total, "blocked Gibbs", progress_bar) as progress:
        if auto is None:
            result = sample_chunked(build_mil_kernel, config, problem, keys, num_warmup=num_warmup,
                                    num_sampling_sweeps=num_samples * thinning, progress=progress, **settings)
            report = None
        else:
            def passes(draws):
                positions, stats = draws
                return not short_of({"delta2": positions["delta2"], "n_active": stats["n_active"]}, auto.target_ess)
            run = sample_until(build_mil_kernel, config, problem, keys, num_warmup=num_warmup, converged=passes,
                               time_budget=auto.time_budget, max_sampling_sweeps=auto.max_draws * thinning,
                               check_every=auto.check_every * thinning, progress=progress, **settings)
            result = run.result
            positions, stats = result.draws
            report = auto_report(run, short_of({"delta2": positions["delta2"], "n_active": stats["n_active"]},
                                               auto.target_ess), auto)
    positions, stats = result.draws
    return positions, stats, result.last.state, report


def _run_numpyro(problem, config, *, seed, num_chains, num_warmup, num_samples, thinning, progress_bar,
                 chain_method):
    """The same sampler driven by ``numpyro.infer.MCMC`` (recompiles on every call)."""
    mcmc = MCMC(MILGibbs(problem, config), num_warmup=num_warmup, num_samples=num_samples,
                num_chains=num_chains, thinning=thinning, chain_method=chain_method, progress_bar=progress_bar,
                jit_model_args=True)
    mcmc.run(jax.random.PRNGKey(seed), problem=problem, extra_fields=MILGibbs.stat_fields)
    samples = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}
    stats = {k.removeprefix("info."): np.asarray(v) for k, v in mcmc.get_extra_fields(group_by_chain=True).items()}
    return samples, stats, mcmc.last_state.state


def _run_gibbs(spec, data, *, seed, num_chains, num_warmup, num_samples, thinning, progress_bar, chain_method,
               store_z, z_sampler, method_name, unknown, driver="chunked", rescale=True, fast_compile=None,
               beta_move="gibbs", laplace_tries=2, scale_tries=None, swap_tries=None, target_ess=None,
               time_budget=None, jump_tries=None) -> Fit:
    if unknown:
        raise ValueError(f"{method_name}: unknown option(s) {', '.join(sorted(unknown))}")
    if driver not in ("chunked", "numpyro"):
        raise ValueError(f"driver: {driver!r} is not 'chunked' or 'numpyro'")
    chain_method = check_chain_method(chain_method, "chain_method")
    if beta_move not in ("gibbs", "laplace"):
        raise ValueError(f"beta_move: {beta_move!r} is not 'gibbs' or 'laplace'")
    auto = auto_settings(num_samples, target_ess, time_budget)
    if auto is not None:
        num_samples = auto.max_draws
    for name, value, low in (("num_chains", num_chains, 1), ("num_warmup", num_warmup, 0),
                             ("num_samples", num_samples, 1), ("thinning", thinning, 1),
                             ("laplace_tries", laplace_tries, 0),
                             ("scale_tries", 0 if scale_tries is None else scale_tries, 0),
                             ("swap_tries", 0 if swap_tries is None else swap_tries, 0),
                             ("jump_tries", 0 if jump_tries is None else jump_tries, 0)):
        if not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"{name}: expected an int >= {low}, got {value!r}")
    prep = prepare(spec, data)
    config = mil_config(spec, prep, z_sampler, store_z)._replace(rescale=bool(rescale), beta_move=beta_move,
                                                               laplace_tries=int(laplace_tries))
    if z_sampler != "exact" and scale_tries:
        raise ValueError(f"scale_tries: {method_name} has no Z-collapsed scale move (it needs the exact Z sampler)")
    if z_sampler != "exact" and jump_tries:
        raise ValueError(f"jump_tries: {method_name} has no Z-collapsed jumps of gamma (they need the exact Z sampler)")
    moves = {name: int(v) for name, v in (("scale_tries", scale_tries), ("swap_tries", swap_tries),
                                          ("jump_tries", jump_tries)) if v is not None}
    config = config._replace(**moves)
    problem = mil_problem(spec, prep)
    settings = dict(seed=seed, num_chains=num_chains, num_warmup=num_warmup, num_samples=num_samples,
                    thinning=thinning, progress_bar=progress_bar)
    report = None
    if driver == "chunked":
        samples, stats, last_state, report = _run_chunked(problem, config, fast_compile=fast_compile,
                                                          chain_method=chain_method, auto=auto, **settings)
    else:
        if auto is not None:
            raise ValueError("num_samples: 'auto' needs driver='chunked' (the zoo's driver samples in chunks)")
        samples, stats, last_state = _run_numpyro(problem, config, chain_method=chain_method, **settings)
    for name in ("beta", "delta2"):
        if not np.all(np.isfinite(samples[name])):
            raise FloatingPointError(f"kueck04: non-finite draws of {name} (the active-set Gram block is numerically "
                                     f"singular); refit with a larger ridge (now {spec.options['ridge']:g})")
    hits = int(stats["capacity_hits"].sum())
    if hits:
        warnings.warn(f"kueck04: the active set reached max_active={config.capacity} ({hits} refused births); "
                      f"the posterior is truncated at that many kernels: refit with a larger max_active",
                      RuntimeWarning, stacklevel=3)
    loglik = stats.pop("log_likelihood")
    if not config.jump_tries:       # no jumps of gamma proposed: no acceptance to report
        stats.pop("jump_acceptance", None)
    # the log joint of each draw under the program with tau, z and the inactive coefficients integrated out
    stats["lp"] = blocked_gibbs_log_joint(spec, prep.gram, samples, loglik)
    observed = {"group_label": prep.group_label}
    if prep.fraction is not None:
        observed["fraction"] = prep.fraction
    dims = dict(_SITE_DIMS)
    # log p(observations of group g | f) per draw, from the Z sampler's forward pass (az.loo over groups), named
    # after the observed site (with chi, the group's guessed fraction is part of the same group's observation)
    idata = to_inference_data(samples, sample_stats=stats, log_likelihood={"group_label": loglik},
                              observed_data=observed, dims=dims,
                              attrs={"method": method_name, "model": spec.id, "kernel": spec.options["kernel"],
                                     "width": prep.width})
    predictive = posterior_predictive(spec, prep, samples, seed)
    if predictive:
        idata.add_groups(posterior_predictive=xr.Dataset({k: (("chain", "draw") + _SITE_DIMS[k], v)
                                                          for k, v in predictive.items()}))
    if report is not None:
        idata.posterior.attrs.update(zoo_auto=report.text, zoo_auto_reached=int(report.reached),
                                     zoo_auto_sweeps=report.sweeps, zoo_auto_seconds=report.seconds)
    # which sites each acceptance rate is evidence about (zoo.core.convergence reads ``sites``)
    for name in (("gamma_acceptance",) + (("swap_acceptance",) if config.swap_tries else ())
                 + (("jump_acceptance",) if config.jump_tries else ())):
        if name in idata.sample_stats:
            idata.sample_stats[name].attrs.update(sites="gamma n_active", kind="acceptance")
    return Fit(idata=idata, spec=spec, method=method_name, state=dict(prepared=prep, last_state=last_state),
               headline=list(_HEADLINE), predictor=predict, data=data)


def posterior_predictive(spec, prep: MILPrepared, samples: dict, seed: int) -> dict:
    """Replicated observations at each draw: the NumPyro program (``kernel_mil_program``) run by
    ``numpyro.infer.Predictive`` with the draws of gamma, beta and delta2 substituted, simulating z ~ N(psi (gamma
    beta), 1) and from it ``group_label`` (and ``fraction`` with chi): arrays (chain, draw, group). tau, integrated
    out by the sampler, is drawn by the program from its prior but touches nothing once gamma is given. Empty when
    the fit kept no N x M kernel matrix (rows on demand, large data): simulating needs psi. Its own random stream
    (``seed`` folded), so the sampler's draws are untouched."""
    if prep.psi is None:
        return {}
    kwargs = dict(program_kwargs(spec, prep), group_label=None, fraction=None)
    leading = np.asarray(samples["beta"]).shape[:2]
    flat = {k: jnp.asarray(np.asarray(samples[k]).reshape((-1,) + np.asarray(samples[k]).shape[2:]))
            for k in ("gamma", "beta", "delta2")}
    sites = ("group_label",) + (("fraction",) if spec.options["chi"] is not None else ())
    simulated = _simulate_observations(jax.random.fold_in(jax.random.PRNGKey(seed), _PREDICTIVE_STREAM), flat,
                                       kwargs, program=spec.program, sites=sites)
    return {k: np.asarray(v).reshape(leading + np.asarray(v).shape[1:]) for k, v in simulated.items()}


@partial(jax.jit, static_argnames=("program", "sites"))
def _simulate_observations(key, flat: dict, kwargs: dict, *, program, sites: tuple) -> dict:
    """``numpyro.infer.Predictive`` of ``program`` at the draws ``flat`` (draw-leading arrays), compiled once per
    program, sites and shapes: called eagerly, Predictive's map over draws is a new closure each time and compiled
    anew on every fit (2-4 s a fit in ``zoo reproduce kueck04``). ``kwargs`` (the program's arrays, priors and chi)
    are traced; chi None and the unobserved sites are part of the structure. Same random stream as the eager call."""
    return Predictive(program, posterior_samples=flat, return_sites=list(sites))(key, **kwargs)


#: the stream number of the posterior predictive's key (jax.random.fold_in of the fit's seed)
_PREDICTIVE_STREAM = 7


def predict(fit: Fit, data: Bags, max_draws: int | None = None) -> MILPrediction:
    """Instance and bag probabilities for new bags (labels of ``data`` are ignored)."""
    if not isinstance(data, Bags):
        raise ValueError(f"data: expected zoo.data.Bags, got {type(data).__name__}")
    prep: MILPrepared = fit.state["prepared"]
    if data.X.shape[1] != prep.X.shape[1]:
        raise ValueError(f"X: expected {prep.X.shape[1]} features (as in training), got {data.X.shape[1]}")
    beta = np.asarray(draws_of(fit.idata, "beta")).reshape(-1, prep.gram.shape[0])   # either group (older files)
    if max_draws is not None and beta.shape[0] > max_draws:
        beta = beta[np.linspace(0, beta.shape[0] - 1, max_draws).astype(int)]
    Xs = (data.X - prep.mean) / prep.scale
    psi_new = gram_matrix(jnp.asarray(Xs), jnp.asarray(prep.X), fit.spec.options["kernel"], prep.width,
                          fit.spec.options["intercept"])
    return _predict_arrays(jnp.asarray(beta), psi_new, jnp.asarray(data.bag_ids), data.n_bags)


def _predict_arrays(beta, psi_new, bag_ids, n_bags: int) -> MILPrediction:
    """Instance and bag probabilities from the draws ``beta`` (S, M) and the new instances' kernel rows ``psi_new``
    (N, M), bags ``bag_ids`` (N,). Only columns ever active matter; their count is rounded up to a power of two
    with never-active columns (coefficient exactly 0 in every draw, so f is unchanged), so that one compiled
    program serves every fit of the same shapes instead of a dozen operations compiled anew per active count."""
    beta_host = np.asarray(beta)
    ever = np.any(beta_host != 0, axis=0)
    active, never = np.flatnonzero(ever), np.flatnonzero(~ever)
    width = min(beta_host.shape[1], 1 << max(0, int(active.size) - 1).bit_length())
    columns = np.concatenate([active, never[:width - active.size]]).astype(np.int32)
    instance, bag = _predict_columns(jnp.asarray(beta), jnp.asarray(psi_new), jnp.asarray(bag_ids),
                                     jnp.asarray(columns), n_bags=int(n_bags))
    return MILPrediction(instance_proba=np.asarray(instance), bag_proba=np.asarray(bag))


@partial(jax.jit, static_argnames=("n_bags",))
def _predict_columns(beta, psi_new, bag_ids, columns, *, n_bags: int):
    """(instance (N,), bag (n_bags,)) probabilities: the posterior means of Phi(f) and of 1 - prod Phi(-f) over the
    draws, f = beta[:, columns] psi_new[:, columns]' (S, N)."""
    f = beta[:, columns] @ psi_new[:, columns].T
    instance = jnp.mean(jnp.exp(log_ndtr(f)), axis=0)
    log_all_neg = jax.vmap(lambda lf: jax.ops.segment_sum(lf, bag_ids, n_bags))(log_ndtr(-f))
    return instance, 1.0 - jnp.mean(jnp.exp(log_all_neg), axis=0)


def mcmc_kernel(z_sampler: str, allowed: tuple):
    """``zoo.kernel``'s builder for the blocked Gibbs with Z sampler ``z_sampler`` ("exact" or "mh"), options
    ``allowed``: a ``ProgramKernel`` of ``build_mil_kernel`` on Bags ``data``, drawing gamma (M,), beta (M,),
    delta2, n_active [, z (N,) with store_z]; extra fields ``MILGibbs.stat_fields``."""
    def build(spec, data, method: str, options) -> ProgramKernel:
        check_known(options, allowed, f"the {method!r} kernel")
        opts = dict(options)
        prep = prepare(spec, data)
        config = mil_config(spec, prep, z_sampler, bool(opts.pop("store_z", False)))
        if "rescale" in opts:
            opts["rescale"] = bool(opts["rescale"])
        if opts.get("beta_move", "gibbs") not in ("gibbs", "laplace"):
            raise ValueError(f"beta_move: {opts['beta_move']!r} is not 'gibbs' or 'laplace'")
        tries = opts.get("laplace_tries", 0)
        if isinstance(tries, bool) or not isinstance(tries, (int, np.integer)) or tries < 0:
            raise ValueError(f"laplace_tries: expected an int >= 0, got {tries!r}")
        program = partial(spec.program, **program_kwargs(spec, prep))
        # lp per step, as zoo.fit stores it (zoo.papers.kueck04_lp): az.from_numpyro(mcmc) gets sample_stats["lp"]
        return ProgramKernel(build_mil_kernel, config._replace(**opts), mil_problem(spec, prep), mil_position,
                             program, log_joint=partial(draw_log_joint, spec.priors["delta2"]))
    return build


_KERNEL_OPTIONS = ("store_z", "rescale")


def _register() -> None:
    titles = {"supervised": "sparse kernel probit classifier from instance labels",
              "constraint": "sparse kernel probit MIL from group constraint labels",
              "measurement": "sparse kernel probit MIL from guessed fractions of positives",
              "hybrid": "sparse kernel probit MIL from group labels and guessed fractions"}
    for variant in VARIANTS:
        register_model(f"kueck04.{variant}", paper=_PAPER, title=titles[variant], build=_build(variant),
                       data_kind="Bags", default_method="blocked_gibbs", prior_sites=("tau", "delta2"),
                       headline=_HEADLINE, unit_sites=_UNIT_SITES, site_dims=_SITE_DIMS, renamed=_RENAMED,
                       prior_families={"tau": families(dist.Beta, why="tau is integrated out of the kernel "
                                                                       "selection"),
                                       "delta2": any_family(dist.constraints.positive, dist.InverseGamma,
                                                            why="InverseGamma: the conjugate Gibbs step; another "
                                                                "family: a random-walk Metropolis step")})
    ids = tuple(f"kueck04.{v}" for v in VARIANTS)

    exact_kernel = mcmc_kernel("exact", _KERNEL_OPTIONS + ("beta_move", "laplace_tries"))

    @register_method(ids, "blocked_gibbs", kernel=exact_kernel)
    def blocked_gibbs(spec, data, seed: int = 0, num_chains: int = 4, num_warmup: int = 1000,
                      num_samples: int = 1000, thinning: int = 1, progress_bar: bool = True,
                      chain_method: str = "vectorized", store_z: bool = False, driver: str = "chunked",
                      rescale: bool = True, fast_compile: bool | None = None, beta_move: str = "gibbs",
                      laplace_tries: int = 2, scale_tries: int | None = None, swap_tries: int | None = None,
                      jump_tries: int | None = None, target_ess: float | None = None,
                      time_budget: float | None = None, **unknown: Any) -> Fit:
        """Blocked Gibbs (Listing 4.1) with kernel selection and the exact orthant-truncated Z sampler.

        Four chains by default (r-hat needs several), each started from its own random active set.

        ``driver="chunked"`` (default): vectorized chains in compiled chunks reused across fits of the same
        shapes; ``driver="numpyro"``: ``numpyro.infer.MCMC`` (recompiles per call). ``chain_method``:
        "vectorized" (vmap) or "sequential" (one after the other; about twice the sweeps per second on a CPU).
        ``rescale=False`` drops the marginal-augmentation move and leaves exactly the thesis' sweep;
        ``fast_compile`` (None: automatic, short runs) compiles without XLA's backend optimization.
        ``beta_move="laplace"`` adds, every sweep, an exact Metropolis-Hastings move of (beta, delta2) with Z
        integrated out (``zoo.inference.mil.collapsed_beta``): far better mixing where the data augmentation
        crawls (confidently classified points), at O(N max_active^2) extra cost per sweep, so for small
        ``max_active``; ``laplace_tries`` independence proposals per sweep besides its joint one.
        ``scale_tries`` / ``swap_tries`` (None: ``MILConfig``'s 4 / 10; 0: off, the sampler before them): the
        Z-collapsed scale move of (beta, delta2) (``zoo.inference.mil.scale``) and the swap move of gamma
        (``zoo.inference.mil.swap``), exact moves that mix the scale of f and the kernel choice.
        ``jump_tries`` (None: ``JUMP_TRIES``, 2; 0: off, the sampler before them): Z-collapsed birth / death /
        swap proposals of gamma per sweep, beta carried between the two sets' Laplace fits
        (``zoo.inference.mil.jump``): an exact move of the active set that does not wait for Z to follow (n_active
        mixes about 7x better per sweep on the ring, at about 2-4x the cost of a sweep).
        ``num_samples="auto"``: sample in compiled chunks until delta2 and n_active reach bulk and tail ESS
        ``target_ess`` (default 400) with r-hat < 1.01, or stop after ``time_budget`` seconds of sampling (default
        300) with a ConvergenceWarning naming the sites that fell short (``zoo.inference.driver.sample_until``)."""
        return _run_gibbs(spec, data, seed=seed, num_chains=num_chains, num_warmup=num_warmup,
                          num_samples=num_samples, thinning=thinning, progress_bar=progress_bar,
                          chain_method=chain_method, store_z=store_z, z_sampler="exact",
                          method_name="blocked_gibbs", unknown=unknown, driver=driver, rescale=rescale,
                          fast_compile=fast_compile, beta_move=beta_move, laplace_tries=laplace_tries,
                          scale_tries=scale_tries, swap_tries=swap_tries, target_ess=target_ess,
                          time_budget=time_budget, jump_tries=jump_tries)

    @register_method(ids, "blocked_gibbs_mh", kernel=mcmc_kernel("mh", _KERNEL_OPTIONS))
    def blocked_gibbs_mh(spec, data, seed: int = 0, num_chains: int = 4, num_warmup: int = 1000,
                         num_samples: int = 1000, thinning: int = 1, progress_bar: bool = True,
                         chain_method: str = "vectorized", store_z: bool = False, driver: str = "chunked",
                         rescale: bool = True, fast_compile: bool | None = None, scale_tries: int | None = None,
                         swap_tries: int | None = None, target_ess: float | None = None,
                         time_budget: float | None = None, **unknown: Any) -> Fit:
        """Blocked Gibbs with the thesis' Metropolis Z samplers (independence MH / random walk), for comparison;
        options as ``blocked_gibbs``, but no Z-collapsed scale move (``scale_tries`` 0: it needs Z drawn afresh
        from Z | f after it); the swap move of gamma is on."""
        return _run_gibbs(spec, data, seed=seed, num_chains=num_chains, num_warmup=num_warmup,
                          num_samples=num_samples, thinning=thinning, progress_bar=progress_bar,
                          chain_method=chain_method, store_z=store_z, z_sampler="mh",
                          method_name="blocked_gibbs_mh", unknown=unknown, driver=driver, rescale=rescale,
                          fast_compile=fast_compile, scale_tries=scale_tries, swap_tries=swap_tries,
                          target_ess=target_ess, time_budget=time_budget)


_register()
