"""Numerical configuration of the zoo, applied by ``import zoo`` without importing JAX.

The zoo computes in float64: EM fixed points are compared to 1e-5 relative, Gram matrices are updated by
rank-one steps and log-probabilities of sign patterns are summed over many instances. ``import zoo`` therefore
turns on JAX's ``jax_enable_x64`` (documented in the README): through the ``JAX_ENABLE_X64`` environment variable,
which JAX reads when it is first imported, or through ``jax.config`` when JAX was imported before zoo. Either way
``import zoo`` itself stays cheap (the command line answers without loading JAX). Kernels in ``zoo.inference``
take the dtype of their inputs and never assume it.

``import zoo`` also lets XLA's CPU compiler emit small while loops as one compiled function
(``SMALL_LOOP_BYTES``, see ``_small_loops_as_one_function``): our samplers' inner loops (a unit-by-unit label
scan, a kernel-by-kernel flip scan) do microseconds of arithmetic per iteration, and XLA's default runtime
dispatches every operation of a loop body separately.

Both settings live in environment variables, so processes that zoo's process starts inherit them.
"""
import os
import sys

#: The zoo's version (``zoo.__version__``; here so that modules below the package's face can read it without
#: importing the package itself)
VERSION = "0.1.0"

#: A while loop whose body reads and writes fewer bytes than this is compiled into one function instead of an
#: operation-by-operation loop of XLA's CPU runtime (XLA's ``xla_cpu_small_while_loop_byte_threshold``; its default
#: only takes loops of a few kB, such as the RNG's). Measured without and with it, back to back, OMP_NUM_THREADS=1:
#: the Gustafson joint (indicator, labels) move 500 -> 280 us and the whole FS sweep 1.7-1.9 -> 1.0-1.1 ms on the
#: zoo bench cvfs problem; the Kueck ring sweep 2683 -> 3507 sweeps/s. Loops over more data stay as they were.
SMALL_LOOP_BYTES = 1_000_000


def _small_loops_as_one_function(environ=os.environ) -> bool:
    """Add the XLA flag for ``SMALL_LOOP_BYTES`` to XLA_FLAGS unless the user set XLA's backend options already or
    ZOO_XLA_SMALL_LOOPS=0. XLA reads XLA_FLAGS when JAX starts its CPU backend (the first computation), so this
    takes effect when ``zoo`` is imported before anything ran in JAX. Returns whether the flag was added."""
    flags = environ.get("XLA_FLAGS", "")
    if environ.get("ZOO_XLA_SMALL_LOOPS", "1") == "0" or "xla_backend_extra_options" in flags:
        return False
    # first: XLA's parser stops at the first word of XLA_FLAGS that is not a --flag
    environ["XLA_FLAGS"] = (
        f"--xla_backend_extra_options=xla_cpu_small_while_loop_byte_threshold={SMALL_LOOP_BYTES} {flags}").strip()
    return True


def _float64(environ=os.environ, modules=sys.modules) -> None:
    """Turn on ``jax_enable_x64``: directly when JAX is already imported, else by the environment variable that
    JAX reads at import (so that ``import zoo`` does not pay for importing JAX)."""
    if "jax" in modules:
        modules["jax"].config.update("jax_enable_x64", True)
    else:
        environ["JAX_ENABLE_X64"] = "1"


def configure() -> None:
    """What ``import zoo`` applies: float64 and the small-loop flag."""
    _float64()
    _small_loops_as_one_function()
