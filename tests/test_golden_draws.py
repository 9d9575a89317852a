"""Golden draws: every custom sampler and optimizer, through ``zoo.fit`` with fixed seeds on small problems, gives
bit-for-bit the draws recorded in ``tests/golden/draws.json``.

Why: the drivers, kernels and their plumbing get refactored; a refactor that is meant to preserve behaviour must
leave the random stream and the arithmetic alone, and a sha256 of each posterior / sample-stats array checks that
exactly. When a change is *meant* to alter the draws, re-record (and say why in the commit message):

    ZOO_RECORD_GOLDEN=1 OMP_NUM_THREADS=1 .venv/bin/python -m pytest tests/test_golden_draws.py

The JSON also keeps each array's shape and sum, so a failure shows how far the draws moved. At the end: the driver
(``zoo.inference.driver``) on a toy kernel against the same chain run by hand and under ``numpyro.infer.MCMC``.
"""
from __future__ import annotations

import hashlib
import json
import os
import pathlib
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import zoo
from zoo.data import Bags, Matrix
from zoo.inference.driver import Kernel, KernelMCMC, next_key, sample_chunked

# short chains: the convergence and capacity warnings of these fits are expected
pytestmark = [pytest.mark.filterwarnings("ignore:convergence"), pytest.mark.filterwarnings("ignore:kueck04")]

GOLDEN = pathlib.Path(__file__).parent / "golden" / "draws.json"
RECORD = os.environ.get("ZOO_RECORD_GOLDEN") == "1"


def _mil_bags(variant: str) -> Bags:
    from zoo.data.mil import ring_data
    d = ring_data(n=60, seed=3)
    if variant == "supervised":
        return Bags(d.X, d.bag_ids, instance_labels=d.instance_labels)
    if variant == "constraint":
        return Bags(d.X, d.bag_ids, group_labels=d.group_labels)
    if variant == "measurement":
        return Bags(d.X, d.bag_ids, fractions=d.fractions)
    return Bags(d.X, d.bag_ids, group_labels=d.group_labels, fractions=d.fractions)


def _kueck04(variant: str, method: str = "blocked_gibbs", **options):
    spec = zoo.model(f"kueck04.{variant}", kernel="gaussian", width=1.0, max_active=12)
    return zoo.fit(spec, _mil_bags(variant), method=method, seed=1, num_chains=2, num_warmup=15, num_samples=10,
                   progress_bar=False, **options)


def _gustafson07(variant: str):
    from zoo.data.gustafson07 import sec6_synthetic
    regions = sec6_synthetic(n_per_concept=6, delta=1.2, seed=3)
    return zoo.fit(zoo.model(f"gustafson07.{variant}"), regions, method="collapsed_gibbs", seed=2, num_chains=2,
                   num_warmup=10, num_samples=12, thinning=2, progress_bar=False)


def _topic_counts():
    from zoo.data.corel5k import simulate_multimodal
    data, _ = simulate_multimodal(seed=0, n_images=40, n_topics=3, n_word_types=12, n_visual_types=15)
    return data


def _yakhnenko(model: str, method: str, **options):
    return zoo.fit(zoo.model(f"yakhnenko.{model}", **options), _topic_counts(), method=method, seed=3,
                   num_chains=2, max_iter=25, chunk=10, progress_bar=False)


def _carbonetto03():
    from zoo.data.carbonetto03 import mixture_data_sec2
    X, _ = mixture_data_sec2(n_points=60, seed=0)
    return zoo.fit(zoo.model("carbonetto03.shrinkage_mixture", n_components=3, covariance="diag"), X,
                   method="map_em", seed=4, num_chains=2, max_iter=30, progress_bar=False)


def _ross03():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(30, 6))
    return zoo.fit(zoo.model("ross03.mcvq", n_vqs=2, n_states=3), Matrix(X), method="variational_em", seed=5,
                   num_chains=2, max_iter=12, progress_bar=False)


CASES = {
    "kueck04.measurement/blocked_gibbs": lambda: _kueck04("measurement"),
    "kueck04.hybrid/blocked_gibbs": lambda: _kueck04("hybrid"),
    "kueck04.constraint/blocked_gibbs_mh": lambda: _kueck04("constraint", "blocked_gibbs_mh"),
    "gustafson07.full/collapsed_gibbs": lambda: _gustafson07("full"),
    "gustafson07.fs/collapsed_gibbs": lambda: _gustafson07("fs"),
    "yakhnenko.mom_lda/mean_field_vi": lambda: _yakhnenko("mom_lda", "mean_field_vi", n_topics=3),
    "yakhnenko.mom_hdp/stick_breaking_vi": lambda: _yakhnenko("mom_hdp", "stick_breaking_vi", truncation=4),
    "carbonetto03.shrinkage_mixture/map_em": _carbonetto03,
    "ross03.mcvq/variational_em": _ross03,
}
# each of these compiles a sampler of its own (about 10 s of CPU each; the sequential chains' path is also
# gustafson07's): in the slow suite (-m slow) to keep the
# default run of this file near a minute; measurement and hybrid above share one compilation
SLOW_CASES = {
    "gustafson07.cvfs/collapsed_gibbs": lambda: _gustafson07("cvfs"),   # 30-40 s: CVFS's sweep compiles longest
    "kueck04.hybrid/blocked_gibbs_sequential": lambda: _kueck04("hybrid", chain_method="sequential"),
    "kueck04.supervised/blocked_gibbs": lambda: _kueck04("supervised"),
    "kueck04.constraint/blocked_gibbs": lambda: _kueck04("constraint"),
}


def _fingerprint(fit) -> dict:
    """sha256, shape and sum of every array of the posterior and sample_stats groups (float64 / int64 bytes)."""
    out = {}
    for group in ("posterior", "sample_stats"):
        if group not in fit.idata.groups():
            continue
        dataset = getattr(fit.idata, group)
        for name in sorted(dataset.data_vars):
            values = np.asarray(dataset[name].values)
            canonical = values.astype(np.float64 if values.dtype.kind == "f" else np.int64, copy=False)
            out[f"{group}/{name}"] = {"sha256": hashlib.sha256(np.ascontiguousarray(canonical).tobytes()).hexdigest(),
                                      "shape": list(values.shape), "sum": float(np.sum(canonical))}
    return out


def _golden() -> dict:
    return json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}


@pytest.mark.parametrize("case", list(CASES) + [pytest.param(c, marks=pytest.mark.slow) for c in SLOW_CASES])
def test_draws_match_the_recorded_golden_draws(case):
    got = _fingerprint({**CASES, **SLOW_CASES}[case]())
    if RECORD:
        golden = _golden()
        golden[case] = got
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
        return
    expected = _golden().get(case)
    assert expected is not None, f"{case}: no golden draws recorded (run with ZOO_RECORD_GOLDEN=1)"
    assert sorted(got) == sorted(expected), f"{case}: arrays differ in name"
    moved = {name: (expected[name]["sum"], got[name]["sum"]) for name in expected
             if got[name]["sha256"] != expected[name]["sha256"] or got[name]["shape"] != expected[name]["shape"]}
    assert not moved, f"{case}: draws differ from the golden ones (recorded sum, now sum): {moved}"


# --- the driver itself: one toy kernel through every path must give the same draws --------------------------------
class _WalkConfig(NamedTuple):
    scale: float = 1.0


class _WalkState(NamedTuple):
    x: jnp.ndarray


def _build_walk(problem, config):
    """A Gaussian random walk around ``problem`` (traced); info: the squared position."""
    def init(key, num_warmup):
        k_x, key = jax.random.split(key)
        return _WalkState(problem + jax.random.normal(k_x)), key

    def step(key, state):
        _, k = jax.random.split(key)
        x = state.x + config.scale * jax.random.normal(k)
        return _WalkState(x), x ** 2
    return Kernel(init, step)


def _walk_x(state, info):
    return {"x": state.x}


def _walk_info(state, info):
    return info


def _reference_walk(key, num_warmup, num_sweeps, thinning, keep_index):
    """The same chain by hand: every sweep applied in turn, the draws and the sum of the infos picked in Python."""
    kernel = _build_walk(jnp.asarray(0.5), _WalkConfig())
    state, key = kernel.init(key, num_warmup)
    kept, total = [], 0.0
    for t in range(num_warmup + num_sweeps):
        state, info = kernel.step(key, state)
        key = next_key(key)
        s = t - num_warmup
        if s >= 0:
            total += float(info)
            if s % thinning == keep_index:
                kept.append(float(state.x))
    return np.array(kept), total


@pytest.mark.parametrize("chain_method", ["sequential", "vectorized"])
@pytest.mark.parametrize("thinning,keep_index", [(1, None), (3, None), (3, 0)])
def test_driver_chunks_thinning_and_running_sums_follow_the_chain(chain_method, thinning, keep_index):
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    seen = []
    result = sample_chunked(_build_walk, _WalkConfig(), jnp.asarray(0.5), keys, num_warmup=7, num_sampling_sweeps=20,
                            observe=_walk_x, accumulate=_walk_info, thinning=thinning, keep_index=keep_index, chunk=2,
                            chain_method=chain_method, progress=seen.append)
    assert sum(seen) == 27 and result.n_running == 20
    for c in range(2):
        kept, total = _reference_walk(keys[c], 7, 20, thinning, thinning - 1 if keep_index is None else keep_index)
        np.testing.assert_allclose(result.draws["x"][c], kept, rtol=1e-12)
        np.testing.assert_allclose(float(result.running[c]), total, rtol=1e-12)


def test_kernel_mcmc_adapter_gives_the_drivers_draws():
    """``KernelMCMC`` under numpyro.infer.MCMC (vectorized chains) and ``sample_chunked``: the same chains."""
    import numpyro
    keys = jax.random.split(jax.random.PRNGKey(1), 2)
    result = sample_chunked(_build_walk, _WalkConfig(), jnp.asarray(0.5), keys, num_warmup=5, num_sampling_sweeps=9,
                            observe=_walk_x, chain_method="vectorized")
    mcmc = numpyro.infer.MCMC(KernelMCMC(_build_walk, _WalkConfig(), jnp.asarray(0.5), observe=_walk_x),
                              num_warmup=5, num_samples=9, num_chains=2, chain_method="vectorized", progress_bar=False)
    mcmc.run(jax.random.PRNGKey(1), extra_fields=("info",))
    np.testing.assert_allclose(np.asarray(mcmc.get_samples(group_by_chain=True)["x"]), result.draws["x"], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(mcmc.get_extra_fields(group_by_chain=True)["info"]), result.draws["x"] ** 2,
                               rtol=1e-12)
