"""Opt-in checks of inference, beyond the verdict every fit gets: switch rates of binary and categorical sites
(``switch_rate``, Gustafson 2007 Sec. 7), simulation-based calibration (``sbc``), reference posteriors and their
problems (``reference``, ``reference_problems``), scoring a sampler against a reference (``check_sampler``) and
held-out comparison of fits (``comparison``).

The switch-rate functions are importable from here as before (``from zoo.diagnostics import
thinned_switch_rate``).
"""
from zoo.diagnostics.switch_rate import (independence_switch_rate, plot_switch_rates, switch_rates,
                                         thinned_switch_rate)

__all__ = ["thinned_switch_rate", "independence_switch_rate", "switch_rates", "plot_switch_rates"]
