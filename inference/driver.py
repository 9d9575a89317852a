"""One chunked driver for the zoo's custom samplers and coordinate-ascent optimizers, in BlackJAX's shape.

A kernel is built by ``build_kernel(problem, config) -> Kernel(init, step)``:

* ``init(key, num_warmup) -> (state, key)``: a chain's first state, and the key of its first step (what ``init``
  left unused). ``num_warmup`` is for kernels that adapt during warm-up on their own schedule (traced).
* ``step(key, state) -> (state, info)``: one sweep, states and infos NamedTuples (or pytrees), nothing hidden.
  A step draws from ``jax.random.split(key, n)[1:]``; index 0 is the key of the chain's next step (the driver's,
  ``next_key``). Why this convention rather than BlackJAX's ``key, step_key = split(key)``: it is the random
  stream the zoo's samplers had when each carried its key in its state, so their draws did not change
  (tests/test_golden_draws.py); with JAX's partitionable threefry ``split(key, n)[0]`` does not depend on n.

``problem`` holds the data as arrays and is traced (data of the same shapes reuse one compilation); ``config``
holds the static settings and, like ``build_kernel``, must be hashable (a NamedTuple of Python values).

``sample_chunked`` runs chains (a leading axis of every state) through warm-up and sampling in compiled chunks
(a ``lax.scan`` inside a jitted function reused for every chunk), keeps ``observe(state, info)`` of one sweep in
every ``thinning``, sums ``accumulate(state, info)`` over every sampling sweep (Rao-Blackwell averages: the sums
live in the driver's carry, not in the kernel's state) and reports progress to a callback between chunks.
``sample_until`` samples in the same compiled chunks until the caller's ``converged(draws)`` says yes or a time
budget is spent (``num_samples="auto"`` of the zoo's samplers). ``optimize_chunked`` runs deterministic steps
(coordinate ascent) in the same chunks until a tolerance.
``KernelMCMC`` runs any such kernel under ``numpyro.infer.MCMC``.

Nothing here imports the zoo's user layer: progress bars, options and defaults belong to the caller.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.infer.mcmc import MCMCKernel
from numpyro.util import is_prng_key

__all__ = ["FAST_COMPILE_OPTIONS", "CHAIN_METHODS", "Kernel", "ProgramKernel", "ChainCarry", "SampleResult", "next_key",
           "no_running_sums", "init_chains", "chain_mesh", "chain_devices", "CHAIN_AXIS", "run_chunk",
           "sample_chunked", "sample_until", "AutoResult", "optimize_chunked", "over_chains", "KernelMCMC",
           "KernelMCMCState"]

#: ``jax.jit(..., compiler_options=FAST_COMPILE_OPTIONS)``: XLA without its backend optimization compiles a
#: sampler sweep in about half the time and runs it 1.5-5x slower. The samplers' callers pick it for short runs
#: (each with a threshold on its own work measure), where compilation is most of the wall time; tests use it too.
FAST_COMPILE_OPTIONS = {"xla_backend_optimization_level": 0}

#: "sequential": the chains one after another inside the compiled chunk (``lax.map``); "vectorized": ``vmap``;
#: "parallel": the leading chain axis sharded over ``jax.devices()`` (a one-axis mesh ``CHAIN_AXIS``, ``shard_map``),
#: each device running its chains one after another as "sequential" does, so that every chain's draws are the
#: sequential run's (``over_chains`` is the one place).
CHAIN_METHODS = ("sequential", "vectorized", "parallel")
#: the mesh axis of the chains under chain_method="parallel"
CHAIN_AXIS = "chains"


class Kernel(NamedTuple):
    """``init(key, num_warmup) -> (state, key)``, ``step(key, state) -> (state, info)`` (see the module doc)."""
    init: Callable
    step: Callable


class ChainCarry(NamedTuple):
    """What the driver carries per chain: the kernel's state, the key of the next step, the running sums."""
    state: Any
    key: jax.Array
    running: Any


class SampleResult(NamedTuple):
    """draws: ``observe``'s pytree with numpy leaves (chain, draw, ...); running: ``accumulate``'s sums over the
    sampling sweeps (chain, ...); n_running: sampling sweeps per chain (the sums' count); last: the chains'
    ChainCarry after the last sweep (leading chain axis)."""
    draws: Any
    running: Any
    n_running: int
    last: ChainCarry


def next_key(key: jax.Array) -> jax.Array:
    """The key of a chain's next step: index 0 of the current step key's split (see the module doc)."""
    return jax.random.split(key)[0]


def no_running_sums(state, info):
    """``accumulate`` for kernels with nothing to average over the sampling sweeps."""
    return ()


@functools.lru_cache(maxsize=None)
def chain_mesh(n_devices: int) -> jax.sharding.Mesh:
    """The one-axis mesh (``CHAIN_AXIS``) of the first ``n_devices`` of ``jax.devices()``."""
    return jax.sharding.Mesh(np.asarray(jax.devices()[:n_devices]), (CHAIN_AXIS,))


def chain_devices(n_chains: int) -> int:
    """Devices that chain_method="parallel" uses for ``n_chains`` chains: all of them, at most one per chain."""
    return max(1, min(n_chains, jax.device_count()))


def _over_devices(fn: Callable, carry):
    """``fn`` on every chain of ``carry``, the chains padded (with copies of the last) to a multiple of the devices
    and sharded over them (``shard_map``, mesh axis ``CHAIN_AXIS``); on each device ``lax.map`` over its chains,
    the computation of chain_method="sequential", so the draws are the same. The padding chains are dropped."""
    n_chains = jax.tree_util.tree_leaves(carry)[0].shape[0]
    n_devices = chain_devices(n_chains)
    pad = -n_chains % n_devices
    if pad:
        carry = jax.tree_util.tree_map(lambda x: jnp.concatenate([x, jnp.repeat(x[-1:], pad, axis=0)]), carry)
    spec = jax.sharding.PartitionSpec(CHAIN_AXIS)
    local = jax.shard_map(lambda c: jax.lax.map(fn, c), mesh=chain_mesh(n_devices), in_specs=spec, out_specs=spec,
                          check_vma=False)
    out = local(carry)
    return jax.tree_util.tree_map(lambda x: x[:n_chains], out) if pad else out


def over_chains(fn: Callable, carry, chain_method: str):
    """``fn`` applied to every chain of ``carry`` (leading axis). "sequential": ``lax.map``; "parallel": the chains
    sharded over the devices (``_over_devices``); "vectorized": ``vmap``, except for a single chain: vmap turns
    every ``lax.cond`` of a sweep into a select that runs both branches (and batches its while loops), which costs
    a lone chain about half its speed."""
    if chain_method == "sequential":
        return jax.lax.map(fn, carry)
    if chain_method == "parallel":
        return _over_devices(fn, carry)
    if chain_method != "vectorized":
        raise ValueError(f"chain_method: {chain_method!r} is not one of {', '.join(CHAIN_METHODS)}")
    if jax.tree_util.tree_leaves(carry)[0].shape[0] == 1:
        return jax.tree_util.tree_map(lambda x: x[None], fn(jax.tree_util.tree_map(lambda x: x[0], carry)))
    return jax.vmap(fn)(carry)


def _init_chains_fn(problem, keys, num_warmup, *, build_kernel, config, accumulate):
    kernel = build_kernel(problem, config)

    def one(key):
        state, key = kernel.init(key, num_warmup)
        shapes = jax.eval_shape(lambda: accumulate(*kernel.step(key, state)))
        running = jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)
        return ChainCarry(state, key, running)
    return jax.vmap(one)(keys)


_STATIC_INIT = ("build_kernel", "config", "accumulate")
_init_chains_jit = jax.jit(_init_chains_fn, static_argnames=_STATIC_INIT, compiler_options=FAST_COMPILE_OPTIONS)


def init_chains(build_kernel: Callable, config, problem, keys: jax.Array, num_warmup: int = 0,
                accumulate: Callable = no_running_sums) -> ChainCarry:
    """One chain per key (``keys`` (C, 2)): their ChainCarry with a leading chain axis. Compiled without XLA's
    backend optimization: it runs once per fit."""
    return _init_chains_jit(problem, keys, jnp.asarray(num_warmup), build_kernel=build_kernel, config=config,
                            accumulate=accumulate)


def _chunk_fn(problem, carry: ChainCarry, n_run, sampling, *, build_kernel, config, observe, accumulate, chunk,
              thinning, keep_index, chain_method):
    """``chunk`` groups of ``thinning`` sweeps for every chain; sweep j of group i runs when i * thinning + j < n_run
    (traced: one compilation serves every chunk, warm-up and sampling; the predicate is the same for every chain,
    so it stays a real branch under vmap). ``observe`` is taken after sweep ``keep_index`` of each group; the running
    sums grow only while ``sampling`` (traced). Returns (carry, observations with a draw axis of ``chunk``)."""
    kernel = build_kernel(problem, config)

    def sweep(c: ChainCarry):
        state, info = kernel.step(c.key, c.state)
        running = jax.tree_util.tree_map(lambda r, a: r + jnp.where(sampling, a, jnp.zeros_like(a)), c.running,
                                         accumulate(state, info))
        return ChainCarry(state, next_key(c.key), running), info

    def guarded(index, c):
        return jax.lax.cond(index < n_run, lambda t: sweep(t)[0], lambda t: t, c)

    def one_chain(c0: ChainCarry):
        info_shape = jax.eval_shape(lambda: sweep(c0)[1])
        blank_info = jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), info_shape)

        def group(c, i):
            first = i * thinning
            c = jax.lax.fori_loop(0, keep_index, lambda j, t: guarded(first + j, t), c) if keep_index else c
            c, info = jax.lax.cond(first + keep_index < n_run, sweep, lambda t: (t, blank_info), c)
            observed = observe(c.state, info)
            rest = thinning - 1 - keep_index
            if rest:
                c = jax.lax.fori_loop(0, rest, lambda j, t: guarded(first + keep_index + 1 + j, t), c)
            return c, observed
        return jax.lax.scan(group, c0, jnp.arange(chunk))
    return over_chains(one_chain, carry, chain_method)


_STATIC_CHUNK = ("build_kernel", "config", "observe", "accumulate", "chunk", "thinning", "keep_index",
                 "chain_method")


@functools.lru_cache(maxsize=None)
def _compiled_chunk(compiler_options: Optional[tuple]):
    """The jitted chunk for a set of compiler options (one jit per set, so its compilation cache is kept)."""
    return jax.jit(_chunk_fn, static_argnames=_STATIC_CHUNK,
                   compiler_options=None if compiler_options is None else dict(compiler_options))


def _options_key(compiler_options: Optional[dict]) -> Optional[tuple]:
    return None if compiler_options is None else tuple(sorted(compiler_options.items()))


def run_chunk(build_kernel: Callable, config, problem, carry: ChainCarry, n_run, *, observe: Callable,
              accumulate: Callable = no_running_sums, sampling: bool = True, chunk: int = 100, thinning: int = 1,
              keep_index: Optional[int] = None, chain_method: str = "sequential",
              compiler_options: Optional[dict] = None):
    """One compiled chunk: ``chunk`` groups of ``thinning`` sweeps of every chain of ``carry``, the first ``n_run``
    sweeps applied (the rest leave the chains alone). Returns (carry, observations (chain, chunk, ...)), rows of
    groups whose kept sweep (``keep_index``, default the last) did not run to be dropped. ``sample_chunked`` is
    the loop over these; this is for callers that drive the chunks themselves."""
    keep_index = thinning - 1 if keep_index is None else int(keep_index)
    jitted = _compiled_chunk(_options_key(compiler_options))
    return jitted(problem, carry, jnp.asarray(n_run), jnp.asarray(sampling), build_kernel=build_kernel,
                  config=config, observe=observe, accumulate=accumulate, chunk=int(chunk), thinning=int(thinning),
                  keep_index=keep_index, chain_method=chain_method)


def sample_chunked(build_kernel: Callable, config, problem, keys: jax.Array, *, num_warmup: int,
                   num_sampling_sweeps: int, observe: Callable, accumulate: Callable = no_running_sums,
                   thinning: int = 1, keep_index: Optional[int] = None, chunk: int = 100,
                   chain_method: str = "sequential", compiler_options: Optional[dict] = None,
                   progress: Optional[Callable[[int], None]] = None, carry: Optional[ChainCarry] = None
                   ) -> SampleResult:
    """Run one chain per key through ``num_warmup`` warm-up sweeps and ``num_sampling_sweeps`` sampling sweeps.

    Of each group of ``thinning`` sampling sweeps, ``observe(state, info)`` is kept after sweep ``keep_index``
    (default ``thinning - 1``, the group's last, as NumPyro; 0 keeps the first, so a trailing partial group still
    gives a draw). ``accumulate(state, info)`` is summed over every sampling sweep. ``observe`` and ``accumulate``,
    like ``build_kernel`` and ``config``, are static: pass module-level functions or hashable callables, so that a
    second fit reuses the compilation. A compiled chunk runs ``chunk`` groups; ``progress(n_sweeps)`` is called
    after each chunk. ``compiler_options``: XLA options of the chunk (e.g. FAST_COMPILE_OPTIONS for short runs).
    ``carry``: chains to continue (from a SampleResult's ``last``) instead of starting from ``keys``."""
    if chain_method not in CHAIN_METHODS:
        raise ValueError(f"chain_method: {chain_method!r} is not one of {', '.join(CHAIN_METHODS)}")
    keep_index = thinning - 1 if keep_index is None else int(keep_index)
    if not 0 <= keep_index < thinning:
        raise ValueError(f"keep_index: expected 0 <= keep_index < thinning = {thinning}, got {keep_index}")
    if carry is None:
        carry = init_chains(build_kernel, config, problem, keys, num_warmup, accumulate)
    settings = dict(observe=observe, accumulate=accumulate, chunk=chunk, thinning=thinning, keep_index=keep_index,
                    chain_method=chain_method, compiler_options=compiler_options)
    per_chunk = int(chunk) * int(thinning)
    pieces = []
    for n_sweeps, sampling in ((num_warmup, False), (num_sampling_sweeps, True)):
        done = 0
        while done < n_sweeps:
            n_run = min(per_chunk, n_sweeps - done)
            carry, observed = run_chunk(build_kernel, config, problem, carry, n_run, sampling=sampling, **settings)
            if sampling:
                rows = max(0, -(-(n_run - keep_index) // thinning))   # groups whose kept sweep ran
                pieces.append(jax.tree_util.tree_map(lambda x: x[:, :rows], jax.device_get(observed)))
            done += n_run
            if progress is not None:
                progress(n_run)
    draws = jax.tree_util.tree_map(lambda *xs: np.concatenate(xs, axis=1), *pieces) if pieces else None
    return SampleResult(draws=draws, running=carry.running, n_running=int(num_sampling_sweeps), last=carry)


class AutoResult(NamedTuple):
    """``sample_until``'s result: the SampleResult of every sampling sweep run, whether ``converged`` said yes,
    why the loop stopped ("converged", "time budget" or "max sweeps"), the sampling sweeps per chain and the
    seconds of sampling (after warm-up)."""
    result: SampleResult
    converged: bool
    stopped_by: str
    sampling_sweeps: int
    seconds: float


def sample_until(build_kernel: Callable, config, problem, keys: jax.Array, *, num_warmup: int,
                 converged: Callable[[Any], bool], time_budget: float, max_sampling_sweeps: int,
                 check_every: int, observe: Callable, accumulate: Callable = no_running_sums, thinning: int = 1,
                 keep_index: Optional[int] = None, chunk: int = 100, chain_method: str = "sequential",
                 compiler_options: Optional[dict] = None,
                 progress: Optional[Callable[[int], None]] = None, clock: Callable[[], float] = None) -> AutoResult:
    """Run until converged: ``num_warmup`` warm-up sweeps, then sampling in compiled chunks (``sample_chunked``'s,
    compiled once) of ``check_every`` sweeps (rounded up to whole thinning groups) at a time; after each,
    ``converged(draws so far)`` (numpy pytree (chain, draw, ...)) decides whether to stop. Stops as well when the
    sampling has used ``time_budget`` seconds (wall clock, after warm-up, checked between chunks: the last chunk may
    overrun it by one chunk's time) or ``max_sampling_sweeps`` per chain. ``clock``: ``time.perf_counter`` unless
    given (tests). Nothing here judges convergence: the caller's ``converged`` does (the zoo's headline sites)."""
    import time

    clock = clock or time.perf_counter
    if check_every < 1 or max_sampling_sweeps < 1 or not time_budget > 0:
        raise ValueError(f"sample_until: check_every ({check_every}), max_sampling_sweeps ({max_sampling_sweeps}) "
                         f"and time_budget ({time_budget}) must be positive")
    step = -(-int(check_every) // thinning) * thinning
    settings = dict(observe=observe, accumulate=accumulate, thinning=thinning, keep_index=keep_index, chunk=chunk,
                    chain_method=chain_method, compiler_options=compiler_options, progress=progress)
    warm = sample_chunked(build_kernel, config, problem, keys, num_warmup=num_warmup, num_sampling_sweeps=0,
                          **settings)
    carry, pieces, done = warm.last, [], 0
    start = clock()
    stopped_by, ok = "max sweeps", False
    while done < max_sampling_sweeps:
        n = min(step, max_sampling_sweeps - done)
        part = sample_chunked(build_kernel, config, problem, keys, num_warmup=0, num_sampling_sweeps=n,
                              carry=carry, **settings)
        # the running sums continue across parts: the carry holds them
        carry, done = part.last, done + n
        pieces.append(part.draws)
        draws = jax.tree_util.tree_map(lambda *xs: np.concatenate(xs, axis=1), *pieces)
        if converged(draws):
            stopped_by, ok = "converged", True
            break
        if clock() - start >= time_budget:
            stopped_by = "time budget"
            break
    draws = jax.tree_util.tree_map(lambda *xs: np.concatenate(xs, axis=1), *pieces)
    result = SampleResult(draws=draws, running=carry.running, n_running=done, last=carry)
    return AutoResult(result, ok, stopped_by, done, clock() - start)


def optimize_chunked(run_chunk: Callable, state, *, max_iter: int, tol: float, chunk: int,
                     progress: Optional[Callable[[int, np.ndarray], None]] = None):
    """Drive a jitted ``run_chunk(state) -> (state, objective (..., chunk))`` (``chunk`` deterministic iterations of
    every restart, e.g. ``lax.scan`` under vmap) until ``max_iter`` iterations (rounded up to a multiple of
    ``chunk``) or until the relative change of the objective over one iteration is below ``tol`` for every
    restart (checked after every chunk). ``progress(n_iterations, objective of the chunk)`` after each chunk.
    Returns the final state and the objective trace (..., iterations actually run)."""
    n_chunks = max(1, -(-max_iter // chunk))
    traces = []
    for _ in range(n_chunks):
        state, trace = run_chunk(state)
        trace = np.asarray(trace)
        traces.append(trace)
        if progress is not None:
            progress(chunk, trace)
        full = np.concatenate(traces, axis=-1)
        if full.shape[-1] >= 2:
            last, prev = full[..., -1], full[..., -2]
            if np.all(np.abs(last - prev) <= tol * np.abs(last)):
                break
    return state, np.concatenate(traces, axis=-1)


class KernelMCMCState(NamedTuple):
    """``numpyro.infer.MCMC``'s state for a zoo kernel: the kernel's state, the next step's key, the last step's
    info and ``observe``'s draw (the ``sample_field``); ``extra_fields=("<name>", ...)`` collects infos by their
    plain names, as NumPyro's own kernels' fields are named (``"info.<name>"`` works too). ``potential_energy``
    (scalar): minus the log joint density of the draw, for a ``ProgramKernel`` given ``log_joint`` (NumPyro's name,
    which ``az.from_numpyro`` turns into ``lp`` in sample_stats); None otherwise."""
    state: Any
    key: jax.Array
    info: Any
    draw: Any
    potential_energy: Any = None

    def __getattr__(self, name):
        # reached only for a name that is not a field: MCMC's extra_fields look the info's fields up by name
        if name.startswith("_"):
            raise AttributeError(name)
        info = tuple.__getitem__(self, 2)
        if info is not None and hasattr(info, name):
            return getattr(info, name)
        raise AttributeError(f"{type(self).__name__} has no field {name!r} (the step's info fields: "
                             f"{', '.join(getattr(info, '_fields', ()))})")


class KernelMCMC(MCMCKernel):
    """Any ``build_kernel(problem, config)`` kernel as a ``numpyro.infer.mcmc.MCMCKernel``.

    >>> import jax, numpyro, zoo
    >>> from zoo.inference.driver import KernelMCMC
    >>> from zoo.inference.mil.gibbs import build_mil_kernel, mil_position
    >>> from zoo.papers.kueck04 import mil_config, mil_problem, prepare     # a problem from a model and its data
    >>> spec = zoo.model("kueck04.constraint")
    >>> prep = prepare(spec, zoo.load_dataset("kueck04_two_gaussians", n=60))
    >>> problem, config = mil_problem(spec, prep), mil_config(spec, prep)
    >>> mcmc = numpyro.infer.MCMC(KernelMCMC(build_mil_kernel, config, problem, observe=mil_position),
    ...                           num_warmup=50, num_samples=50, num_chains=2, chain_method="vectorized",
    ...                           progress_bar=False)
    >>> mcmc.run(jax.random.PRNGKey(0), extra_fields=("info.n_active",))
    >>> mcmc.get_samples()["delta2"].shape, mcmc.get_extra_fields()["info.n_active"].shape   # chains x draws
    ((100,), (100,))

    ``mcmc.run(key, problem=other)`` with ``MCMC(..., jit_model_args=True)`` passes the problem as a traced
    argument instead of the one given here (no large constants in the compiled program, reusable compilation).
    """

    sample_field = "draw"

    def __init__(self, build_kernel: Callable, config, problem, observe: Callable):
        self.build_kernel = build_kernel
        self.config = config
        self.problem = problem
        self.observe = observe
        self._batched = False

    def _kernel(self, model_kwargs) -> Kernel:
        return self.build_kernel((model_kwargs or {}).get("problem", self.problem), self.config)

    def init(self, rng_key, num_warmup, init_params, model_args, model_kwargs):
        kernel = self._kernel(model_kwargs)

        def one(key):
            state, key = kernel.init(key, jnp.asarray(num_warmup))
            info_shape = jax.eval_shape(lambda: kernel.step(key, state)[1])
            info = jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), info_shape)
            draw = self.observe(state, info)
            return KernelMCMCState(state, key, info, draw, self._potential_energy(model_kwargs, draw, info))
        # chain_method="vectorized" hands one key per chain: the kernel vectorizes init and sample itself
        self._batched = not is_prng_key(rng_key)
        return jax.vmap(one)(rng_key) if self._batched else one(rng_key)

    def sample(self, state, model_args, model_kwargs):
        kernel = self._kernel(model_kwargs)

        def one(s: KernelMCMCState):
            new, info = kernel.step(s.key, s.state)
            draw = self.observe(new, info)
            return KernelMCMCState(new, next_key(s.key), info, draw,
                                   self._potential_energy(model_kwargs, draw, info))
        return jax.vmap(one)(state) if self._batched else one(state)

    def postprocess_fn(self, model_args, model_kwargs):
        return lambda draw: draw

    def _potential_energy(self, model_kwargs, draw, info):
        """Minus the log joint density of ``draw`` (None: this kernel knows no log joint)."""
        return None


class ProgramKernel(KernelMCMC):
    """``KernelMCMC`` with what ``arviz.from_numpyro`` reads: ``model``, the NumPyro program the kernel samples
    (keyword arguments bound) with its observed sites hidden. A collapsed sampler integrates sites out, so its draws
    cannot give the program's log likelihood; hiding the observed sites makes ``az.from_numpyro(mcmc)`` build
    posterior and sample_stats only. ``program`` is the bound program itself.

    ``log_joint(problem, draw, info) -> scalar`` (optional, traceable): the log joint density of a draw under the
    program the sampler targets (the sites it integrates out integrated out), as ``zoo.fit`` stores it in
    ``sample_stats["lp"]``. Given, every step's ``potential_energy`` (minus it) is collected by default
    (``default_fields``), so ``az.from_numpyro(mcmc)`` has ``lp`` in sample_stats. A deterministic function of the
    draw: no random key is used, the chain's draws are unchanged."""

    def __init__(self, build_kernel: Callable, config, problem, observe: Callable, program: Callable,
                 log_joint: Callable | None = None):
        super().__init__(build_kernel, config, problem, observe)
        self.program = program
        self.log_joint = log_joint

    @property
    def default_fields(self):
        return (self.sample_field,) + (("potential_energy",) if self.log_joint is not None else ())

    def _potential_energy(self, model_kwargs, draw, info):
        if self.log_joint is None:
            return None
        return -self.log_joint((model_kwargs or {}).get("problem", self.problem), draw, info)

    @property
    def model(self) -> Callable:
        import numpyro
        return numpyro.handlers.block(self.program, hide_fn=lambda site: site.get("is_observed", False))

