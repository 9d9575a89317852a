"""Kück 2004's kernel MIL samplers: the blocked Gibbs sweep over instance signs, weights and the kernel-selection
indicators (``gibbs``), the truncated-normal orthant draws of the signs (``orthant_sampler``), the selection move
(``kernel_selection``), the collapsed scale and swap moves, padded shapes for cross-validation, and the subset
basis."""
