"""``zoo.check_sampler``: score samplers against a reference posterior (``zoo.reference``).

>>> import tempfile, zoo
>>> from zoo.diagnostics.check_sampler import format_table, plot_error_vs_cost
>>> ref = zoo.reference("gustafson07.fs", "bench_tiny")
>>> samplers = ["collapsed_gibbs"]       # also "NumPyro DiscreteHMCGibbs(NUTS)", your own (see below)
>>> table = zoo.check_sampler(ref, samplers, draws=(100,), chains=2, warmup=50)   # real: (250, 1000, 4000)
>>> len(table)                           # one score per (sampler, budget)
1
>>> print(format_table(table))           # doctest: +ELLIPSIS
sampler ... bias2/var
...
collapsed_gibbs ...
>>> figure = plot_error_vs_cost(table, tempfile.mkdtemp() + "/check.png")

A sampler is
- a name of the reference problem's samplers (``zoo.diagnostics.reference_problems``: the zoo's registered methods and, for
  gustafson07.fs, NumPyro's DiscreteHMCGibbs and MixedHMC on the collapsed FS program);
- a pair ``(name, factory)`` with ``factory(chains, warmup) -> run`` and ``run(seed, data, draws) -> draws`` as
  there: this is how a NumPyro kernel or a user's sampler enters (``numpyro_sampler`` wraps a kernel builder);
- a pair ``(name, fn)`` with a plain user function ``fn(key, data, draws) -> {site: (chain, draw, ...) array}``.
Draws use the problem's canonical sites (gustafson07: ``M`` (K+1, p), ``Y`` (n); kueck04: ``gamma`` (N),
``delta2``).

Scores, per sampler and budget (draws per chain): per quantity the error in units of the reference MCSE
(``z_ref = (estimate - reference) / reference MCSE``; for an exact reference the MCSE is 0 and the error is given in
units of the sampler's own MCSE instead, ``z_own``), and ``bias2_over_var = (estimate - reference)^2 /
(sampler MCSE^2 + reference MCSE^2)``: about 1 for an unbiased sampler whose MCSE is honest, much larger for a biased
one or one whose chains have not mixed (its MCSE is then too small). Summaries over quantities: RMSE, max |z|, mean
bias2/var, and the share of |z| > 3. Cost: wall time of the run after compilation (every budget is run twice with
different seeds; the first run compiles, the second is timed and scored).
"""
from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, Callable, Sequence

import numpy as np

from zoo.diagnostics.reference import Reference, summarize_draws

__all__ = ["check_sampler", "SamplerScore", "format_table", "plot_error_vs_cost", "numpyro_sampler", "SUITE",
           "run_suite"]

#: ``zoo check-sampler suite``: (model id, dataset, samplers) scored on each stored reference of the suite
#: (NumPyro's MixedHMC, also a sampler of gustafson07.fs, is left to the notebook: with DiscreteHMCGibbs it takes
#: most of the suite's time, about 50 ms per iteration and chain on bench_tiny on a loaded core)
SUITE = (
    ("gustafson07.fs", "bench_tiny", ("collapsed_gibbs", "collapsed_gibbs (paper: 1 random flip, no joint moves)",
                                      "NumPyro DiscreteHMCGibbs(NUTS)")),
    ("carbonetto03.shrinkage_mixture", "sec2", ("nuts", "NumPyro NUTS (dense mass)", "svi (AutoNormal)")),
    ("carbonetto03.translation", "sec52_30img", ("nuts", "NumPyro NUTS (dense mass)", "svi (AutoNormal)")),
)


@dataclasses.dataclass(frozen=True)
class SamplerScore:
    """One sampler at one budget: ``draws`` per chain, ``seconds`` (after compilation), ``compile_seconds`` (the first
    run's excess), per-quantity ``estimate`` / ``mcse`` / ``z`` and the summaries (module doc)."""
    sampler: str
    draws: int
    chains: int
    seconds: float
    compile_seconds: float
    rmse: float
    max_abs_z: float
    share_abs_z_over_3: float
    mean_bias2_over_var: float
    estimate: dict
    mcse: dict
    z: dict


def numpyro_sampler(make_kernel: Callable, args: Callable, to_canonical: Callable,
                    chain_method: str = "sequential") -> Callable:
    """A factory for ``check_sampler`` from a NumPyro kernel: ``make_kernel()`` -> MCMCKernel, ``args(data)`` -> the
    model's positional arguments, ``to_canonical(samples, data)`` -> canonical draws from
    ``mcmc.get_samples(group_by_chain=True)``."""
    def make(chains: int, warmup: int) -> Callable:
        def run(seed: int, data, draws: int) -> dict:
            import jax
            from numpyro.infer import MCMC
            mcmc = MCMC(make_kernel(), num_warmup=warmup, num_samples=draws, num_chains=chains,
                        chain_method=chain_method, progress_bar=False)
            mcmc.run(jax.random.PRNGKey(seed), *args(data))
            return to_canonical(mcmc.get_samples(group_by_chain=True), data)
        return run
    return make


def _user_function(fn: Callable) -> Callable:
    """A factory from ``fn(key, data, draws) -> draws`` (chains and warm-up are the function's own business)."""
    def make(chains: int, warmup: int) -> Callable:
        def run(seed: int, data, draws: int) -> dict:
            import jax
            return fn(jax.random.PRNGKey(seed), data, draws)
        return run
    return make


def _resolve(sampler, problem) -> tuple[str, Callable]:
    """(name, factory) of one entry of ``samplers`` (module doc); ValueError naming what is wrong."""
    if isinstance(sampler, str):
        if sampler not in problem.samplers:
            raise ValueError(f"samplers: {sampler!r} is not a sampler of {problem.model_id}/{problem.dataset}; "
                             f"known: {', '.join(problem.samplers)}; or pass (name, factory) / (name, function)")
        return sampler, problem.samplers[sampler]
    if isinstance(sampler, tuple) and len(sampler) == 2 and isinstance(sampler[0], str) and callable(sampler[1]):
        name, fn = sampler
        import inspect
        try:
            n_params = len(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            n_params = 3
        return name, (fn if n_params == 2 else _user_function(fn))
    raise ValueError(f"samplers: expected a sampler name or a (name, callable) pair, got {sampler!r}")


def score(name: str, reference: Reference, per_draw: dict, draws: int, chains: int, seconds: float,
          compile_seconds: float) -> SamplerScore:
    """A SamplerScore from a run's per-quantity (chain, draw) arrays; ValueError when a reference quantity is
    missing from the run."""
    missing = [n for n in reference.names if n not in per_draw]
    if missing:
        raise ValueError(f"draws: the run of {name!r} lacks the quantities {missing[:5]} ...")
    own = summarize_draws({n: per_draw[n] for n in reference.names})
    est = {n: own[n]["mean"] for n in reference.names}
    mcse = {n: own[n]["mcse"] for n in reference.names}
    z, ratio, err = {}, [], []
    for n in reference.names:
        diff = est[n] - reference.mean[n]
        unit = reference.mcse[n] if reference.mcse[n] > 0 else mcse[n]
        z[n] = diff / unit if unit > 0 else (0.0 if diff == 0 else math.copysign(math.inf, diff))
        var = mcse[n] ** 2 + reference.mcse[n] ** 2
        ratio.append(diff ** 2 / var if var > 0 else (0.0 if diff == 0 else math.inf))
        err.append(diff)
    absz = np.abs(np.array(list(z.values())))
    return SamplerScore(sampler=name, draws=draws, chains=chains, seconds=seconds, compile_seconds=compile_seconds,
                        rmse=float(np.sqrt(np.mean(np.square(err)))), max_abs_z=float(absz.max()),
                        share_abs_z_over_3=float(np.mean(absz > 3)), mean_bias2_over_var=float(np.mean(ratio)),
                        estimate=est, mcse=mcse, z=z)


def check_sampler(reference: Reference, samplers: Sequence[Any], *, draws: Sequence[int] = (500, 2000),
                  chains: int = 4, warmup: int = 500, seed: int = 0, data: Any = None,
                  progress: Callable | None = None) -> list[SamplerScore]:
    """Score every sampler of ``samplers`` at every budget of ``draws`` (draws per chain) against ``reference``.
    ``data``: the data the samplers get (None: the reference problem's); ``progress(score)`` is called after each
    (sampler, budget) (e.g. ``print``). Returns one SamplerScore per (sampler, budget), in that order."""
    from zoo.diagnostics.reference_problems import problem
    if not isinstance(reference, Reference):
        raise ValueError(f"reference: expected a zoo.Reference, got {type(reference).__name__}")
    if not samplers:
        raise ValueError("samplers: expected at least one sampler")
    draws = list(draws)
    if not draws or any(not isinstance(d, int) or d < 10 for d in draws):
        raise ValueError(f"draws: expected budgets (ints >= 10), got {draws!r}")
    if not isinstance(chains, int) or chains < 1:
        raise ValueError(f"chains: expected an int >= 1, got {chains!r}")
    prob = problem(reference.model_id, reference.dataset)
    data = prob.data() if data is None else data
    resolved = [_resolve(s, prob) for s in samplers]
    scores = []
    for name, factory in resolved:
        run = factory(chains=chains, warmup=warmup)
        for budget in draws:
            t0 = time.perf_counter()
            run(seed + 7919, data, budget)          # compiles (and warms caches); not scored
            first = time.perf_counter() - t0
            t0 = time.perf_counter()
            out = run(seed, data, budget)
            seconds = time.perf_counter() - t0
            per_draw = prob.quantities(out)
            n_chains = next(iter(per_draw.values())).shape[0]
            scores.append(score(name, reference, per_draw, budget, n_chains, seconds, max(first - seconds, 0.0)))
            if progress is not None:
                progress(scores[-1])
    return scores


def format_table(scores: Sequence[SamplerScore]) -> str:
    """A fixed-width text table of the scores (one line per sampler and budget); every float with three significant
    figures (``zoo.reports.format_number``: 82.3, 0.0335, 4.26e+06), the draws and chains as integers."""
    from zoo.reports import format_number   # the one number format of reports, notebooks and the CLI
    head = f"{'sampler':<48} {'draws':>6} {'chains':>6} {'sec':>8} {'compile':>8} {'RMSE':>8} {'max|z|':>8} " \
           f"{'|z|>3':>6} {'bias2/var':>9}"
    lines = [head, "-" * len(head)]
    for s in scores:
        cells = [format_number(float(v)) for v in (s.seconds, s.compile_seconds, s.rmse, s.max_abs_z,
                                                   s.share_abs_z_over_3, s.mean_bias2_over_var)]
        lines.append(f"{s.sampler[:48]:<48} {s.draws:>6} {s.chains:>6} {cells[0]:>8} {cells[1]:>8} {cells[2]:>8} "
                     f"{cells[3]:>8} {cells[4]:>6} {cells[5]:>9}")
    return "\n".join(lines)


def plot_error_vs_cost(scores: Sequence[SamplerScore], path=None, title: str = "", ax=None):
    """RMSE against wall time after compilation (log-log), one line per sampler, each point labelled with its
    budget (draws per chain x chains); saved to ``path`` when given; drawn into ``ax`` when given. Returns the
    matplotlib figure."""
    import matplotlib
    if path is not None:
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4)) if ax is None else (ax.figure, ax)
    for name in dict.fromkeys(s.sampler for s in scores):
        mine = sorted((s for s in scores if s.sampler == name), key=lambda s: s.seconds)
        line, = ax.plot([s.seconds for s in mine], [s.rmse for s in mine], "o-", label=name)
        for s in mine:   # each point is one budget: say which
            ax.annotate(f"{s.draws} draws x {s.chains}", (s.seconds, s.rmse), textcoords="offset points",
                        xytext=(5, 4), fontsize=7, color=line.get_color())
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("wall time after compilation (s)")
    ax.set_ylabel("RMSE against the reference")
    ax.set_title(title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=100)
        plt.close(fig)
    return fig


def cli(args) -> int:
    """``zoo check-sampler MODEL --dataset NAME [--sampler S ...]``: table on stdout, JSON and plot in ``--out``;
    ``zoo check-sampler suite``: every reference and sampler of SUITE (``run_suite``)."""
    import json
    import pathlib
    from zoo.diagnostics.reference import reference
    from zoo.diagnostics.reference_problems import problem
    if args.model == "suite":
        run_suite(draws=tuple(args.draws), chains=args.chains, warmup=args.warmup, out=args.out, progress=_say)
        return 0
    if args.dataset is None:
        raise ValueError("dataset: `zoo check-sampler MODEL` needs --dataset (see `zoo reference list`)")
    ref = reference(args.model, args.dataset)
    names = args.sampler or list(problem(args.model, args.dataset).samplers)
    scores = check_sampler(ref, names, draws=tuple(args.draws), chains=args.chains, warmup=args.warmup,
                           progress=_say)
    print(ref.summary())
    print(format_table(scores))
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = [{k: v for k, v in dataclasses.asdict(s).items() if k not in ("estimate", "mcse", "z")} for s in scores]
    (out / "check_sampler.json").write_text(json.dumps(rows, indent=1))
    plot_error_vs_cost(scores, out / "check_sampler.png", f"{args.model} on {args.dataset}")
    print(f"written: {out / 'check_sampler.json'}, {out / 'check_sampler.png'}")
    return 0


def _say(s: SamplerScore) -> None:
    print(f"  {s.sampler}: {s.draws} draws, {s.seconds:.1f} s, RMSE {s.rmse:.4f}, max|z| {s.max_abs_z:.1f}",
          flush=True)


def _rows(scores: Sequence[SamplerScore], ref: Reference) -> list[dict]:
    keep = ("sampler", "draws", "chains", "seconds", "compile_seconds", "rmse", "max_abs_z", "share_abs_z_over_3",
            "mean_bias2_over_var")
    return [{"model_id": ref.model_id, "dataset": ref.dataset, **{k: getattr(s, k) for k in keep}} for s in scores]


def run_suite(*, draws: Sequence[int] = (100, 400), chains: int = 4, warmup: int = 200, out="check_sampler",
              suite=SUITE, progress: Callable | None = None) -> dict:
    """Score every sampler of ``suite`` ((model id, dataset, sampler names) ...) on its stored reference; writes
    ``check_sampler.md`` (per reference: how it was made, the table), ``check_sampler.json`` (the rows) and
    ``check_sampler.png`` (error against cost, one panel per reference) into ``out``. Returns {(model_id, dataset):
    scores}."""
    import json
    import pathlib
    import matplotlib
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    from zoo.diagnostics.reference import reference
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    results, rows, text = {}, [], [f"# zoo check-sampler suite\n\n{chains} chains, {warmup} warm-up, budgets "
                                   f"{list(draws)} draws per chain; seconds after compilation; z in units of the "
                                   f"reference MCSE (an exact reference: the sampler's own MCSE)\n"]
    fig, axes = plt.subplots(1, len(suite), figsize=(5.5 * len(suite), 4), squeeze=False)
    for ax, (model_id, dataset, names) in zip(axes[0], suite):
        ref = reference(model_id, dataset)
        if progress is not None:
            print(ref.summary(), flush=True)
        scores = check_sampler(ref, list(names), draws=draws, chains=chains, warmup=warmup, progress=progress)
        results[(model_id, dataset)] = scores
        rows += _rows(scores, ref)
        text += [f"## {model_id} on {dataset}\n", ref.summary() + "\n", "```", format_table(scores), "```\n"]
        plot_error_vs_cost(scores, title=f"{model_id}\n{dataset}", ax=ax)
        (out / "check_sampler.md").write_text("\n".join(text))       # after every reference: a killed run
        (out / "check_sampler.json").write_text(json.dumps(rows, indent=1))   # keeps what it finished
    fig.tight_layout()
    fig.savefig(out / "check_sampler.png", dpi=100)
    plt.close(fig)
    if progress is not None:
        print("\n".join(text[1:]))
        print(f"written: {out / 'check_sampler.md'}, {out / 'check_sampler.json'}, {out / 'check_sampler.png'}")
    return results
