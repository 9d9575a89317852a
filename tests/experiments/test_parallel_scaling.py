"""``zoo bench scaling`` (zoo.experiments.bench.scaling): the growth exponent fit, the table, and one family's four
sizes end to end (slow: a child process per size)."""
import numpy as np
import pytest

from zoo.experiments.bench import scaling


def test_growth_exponent_recovers_a_power_law():
    ns = np.array([100, 200, 400, 1600])
    assert scaling.growth_exponent(ns, 3e-6 * ns ** 2.0) == pytest.approx(2.0, abs=1e-9)
    assert scaling.growth_exponent(ns, 5e-4 * ns) == pytest.approx(1.0, abs=1e-9)


def test_sizes_span_at_least_sixteen_times():
    assert len(scaling.MULTIPLES) == 4 and scaling.MULTIPLES[-1] / scaling.MULTIPLES[0] >= 16
    assert set(scaling.FAMILIES) == set(scaling._BUILDERS)


@pytest.mark.slow
def test_em_family_end_to_end():
    (row,) = scaling.scaling_table(fast=True, families=["em"])
    assert row["n"] == [500, 1000, 2000, 8000] and len(row["per_iter_ms"]) == 4
    assert all(t > 0 for t in row["per_iter_ms"]) and all(m >= b for m, b in zip(row["rss_peak_mb"],
                                                                                 row["rss_baseline_mb"]))
    assert "| em |" in scaling.markdown([row])
