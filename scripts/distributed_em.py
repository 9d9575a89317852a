"""Carbonetto et al. 2003 MAP-EM with its data split over several processes (hosts) joined by
``jax.distributed.initialize``: each process holds its devices' rows; the E-step statistics are psum'd over every
device of every process (zoo.inference.sharding.run_em_sharded), so all processes end with the same parameters,
equal to a one-device fit to rounding.

Two processes on one machine (each with 2 CPU devices), e.g. in two shells:

    XLA_FLAGS=--xla_force_host_platform_device_count=2 python scripts/distributed_em.py --process-id 0 \\
        --num-processes 2 --coordinator 127.0.0.1:12355
    XLA_FLAGS=--xla_force_host_platform_device_count=2 python scripts/distributed_em.py --process-id 1 \\
        --num-processes 2 --coordinator 127.0.0.1:12355

On several hosts, run one process per host with the coordinator's address (process 0's host). ``--check`` also
fits on one local device and prints the largest relative difference. With ``--num-processes 1`` it runs on the
local devices alone. Data: the Sec. 2 synthetic mixture of the paper (``--n`` points, same on every process).
"""
from __future__ import annotations

import argparse
import time


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--process-id", type=int, default=0)
    parser.add_argument("--num-processes", type=int, default=1)
    parser.add_argument("--coordinator", default="127.0.0.1:12355", help="host:port of process 0")
    parser.add_argument("--n", type=int, default=20_000, help="data points")
    parser.add_argument("--components", type=int, default=3)
    parser.add_argument("--restarts", type=int, default=2)
    parser.add_argument("--max-iter", type=int, default=200)
    parser.add_argument("--check", action="store_true", help="compare with a one-device fit")
    args = parser.parse_args(argv)

    import jax
    if args.num_processes > 1:   # before anything touches a device
        jax.distributed.initialize(coordinator_address=args.coordinator, num_processes=args.num_processes,
                                   process_id=args.process_id)
    import jax.numpy as jnp
    import numpy as np

    import zoo  # noqa: F401  (float64)
    from zoo.inference.mixture import em
    from zoo.inference.sharding import run_em_sharded

    rng = np.random.default_rng(0)     # the same data on every process; each keeps its own rows on its devices
    centres = rng.normal(scale=4.0, size=(args.components, 2))
    X = centres[rng.integers(0, args.components, args.n)] + rng.normal(size=(args.n, 2))
    X = X - X.mean(0)
    C = args.components
    sigma_star = np.cov(X.T)
    hyper = em.Hyper(sigma_star=sigma_star, alpha=np.asarray(4.0), a=np.asarray(2.0), b=np.asarray(1.0),
                     nu=np.full(C, 1.5), reg_covar=np.asarray(0.0))
    config = em.EMConfig()
    inits = em.Params(np.full((args.restarts, C), 1.0 / C),
                      np.stack([X[rng.choice(args.n, C, replace=False)] for _ in range(args.restarts)]),
                      np.broadcast_to(sigma_star, (args.restarts, C, 2, 2)).copy(),
                      np.broadcast_to(np.diag(sigma_star), (args.restarts, 2)).copy())
    allowed = np.ones((args.n, C), bool)
    print(f"process {jax.process_index()} of {jax.process_count()}: {jax.local_device_count()} local devices, "
          f"{jax.device_count()} in all")
    start = time.perf_counter()
    result = run_em_sharded(X, inits, hyper, allowed, config, max_iter=args.max_iter, tol=1e-10)
    means = np.asarray(result.params.means.addressable_data(0))
    objective = np.asarray(result.objective.addressable_data(0))
    n_iter = np.asarray(result.n_iter.addressable_data(0))
    print(f"sharded EM: {time.perf_counter() - start:.2f} s (compilation included), iterations {n_iter}, "
          f"final log posterior {objective[:, -1]}")
    print("means of restart 0:\n", means[0])
    if args.check:
        with jax.default_device(jax.local_devices()[0]):
            one = em.run_em_restarts(jnp.asarray(X), jax.tree_util.tree_map(jnp.asarray, inits),
                                     jax.tree_util.tree_map(jnp.asarray, hyper), jnp.asarray(allowed), config,
                                     max_iter=args.max_iter, tol=1e-10)
        diff = np.max(np.abs(means - np.asarray(one.params.means)) / np.maximum(np.abs(np.asarray(one.params.means)),
                                                                                1e-300))
        print(f"largest relative difference of the means from one device: {diff:.2e}")
    if args.num_processes > 1:
        jax.distributed.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
