"""Numerical configuration of the zoo.

The zoo computes in float64: EM fixed points are compared to 1e-5 relative, Gram matrices are updated by
rank-one steps and log-probabilities of sign patterns are summed over many instances. ``import zoo`` therefore
turns on ``jax_enable_x64`` (documented in the README). Kernels in ``zoo.inference`` take the dtype of their
inputs and never assume it.
"""
import jax

jax.config.update("jax_enable_x64", True)

#: ``jax.jit(..., compiler_options=FAST_COMPILE_OPTIONS)``: XLA without its backend optimization compiles a
#: sampler sweep in about half the time and runs it 1.5-5x slower. The samplers' drivers pick it for short runs
#: (each with a threshold on its own work measure), where compilation is most of the wall time; tests use it too.
FAST_COMPILE_OPTIONS = {"xla_backend_optimization_level": 0}
