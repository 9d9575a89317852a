"""Benchmarks against named peers (``zoo bench [NAME]``).

Register one with ``@register_benchmark("gmm", peer="scikit-learn GaussianMixture")``: the function takes
``fast: bool`` and returns a dict of measured figures (times in seconds, ratios zoo/peer, compile time apart).
Benchmarks live beside the experiments (``zoo/experiments/<paper>.py``); rules: measure after JIT compilation,
both sides single-threaded (``zoo bench`` sets ``OMP_NUM_THREADS=1`` and XLA's single-thread flags before JAX
starts), the same data and initialization for both.
"""
from __future__ import annotations

import time
from typing import Callable

from zoo.core.discovery import import_submodules

__all__ = ["register_benchmark", "benchmarks", "timeit_best"]

_BENCHMARKS: dict[str, tuple[Callable, str]] = {}


def register_benchmark(name: str, peer: str):
    def decorate(fn):
        if name in _BENCHMARKS:
            raise ValueError(f"benchmark {name!r} registered twice")
        _BENCHMARKS[name] = (fn, peer)
        return fn
    return decorate


def benchmarks() -> dict[str, tuple[Callable, str]]:
    import_submodules("zoo.experiments.bench")  # their @register_benchmark decorators fill the table
    return dict(sorted(_BENCHMARKS.items()))


def timeit_best(fn: Callable[[], object], repeats: int = 5) -> float:
    """Best wall time of ``repeats`` calls of ``fn`` (which must block until its result is ready)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best
