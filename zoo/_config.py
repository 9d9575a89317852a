"""Numerical configuration of the zoo.

The zoo computes in float64: EM fixed points are compared to 1e-5 relative, Gram matrices are updated by
rank-one steps and log-probabilities of sign patterns are summed over many instances. ``import zoo`` therefore
turns on ``jax_enable_x64`` (documented in the README). Kernels in ``zoo.inference`` take the dtype of their
inputs and never assume it.
"""
import jax

jax.config.update("jax_enable_x64", True)
