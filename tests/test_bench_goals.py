"""Every benchmark against its goal (issue 35.2): the goal table ``zoo bench`` ends with and the history of
``docs/benchmarks.md``. No timing here: the rows are built from given results."""
from __future__ import annotations

import pytest

from zoo.bench import Goal, GoalRow, goal_rows, goal_table, goals, record_history


def test_the_issue_goals_are_registered():
    table = goals()
    assert Goal("ratio zoo/sklearn", "<=", 0.5, "MAP-EM s/iter zoo / scikit-learn", "issue 35") in table["gmm"]
    assert any(g.metric == "ratio_mcvq_over_nmf" and g.bound == 3.0 for g in table["mcvq"])
    assert all(g.op in ("<=", ">=") for marks in table.values() for g in marks)


def test_rows_say_met_not_met_and_not_reported():
    rows = goal_rows({"gmm": {"ratio zoo/sklearn": 0.42}, "mcvq": {"ratio_mcvq_over_nmf": 3.4},
                      "cvfs": {"speed-up s/iter vs DiscreteHMCGibbs": 59.0}, "scaling": {"x": 1}})
    by = {(r.benchmark, r.label): r for r in rows}
    assert by["gmm", "MAP-EM s/iter zoo / scikit-learn"].met is True
    assert by["mcvq", "s/iter MCVQ / NMF"].met is False
    assert by["cvfs", "s/iter DiscreteHMCGibbs / zoo default"].met is True
    assert by["cvfs", "ESS/s zoo default / DiscreteHMCGibbs"].met is None       # not in the result
    assert [r.goal for r in rows if r.benchmark == "scaling"] == ["-"]         # run, no goal: still a row
    text = goal_table(rows)
    assert "| gmm |" in text and "| met |" in text and "NOT MET" in text and "not reported" in text


def test_history_keeps_one_row_per_version(tmp_path):
    path = tmp_path / "benchmarks.md"
    path.write_text("# Benchmarks\n\nIntro kept as it is.\n")
    gmm = GoalRow("gmm", "sklearn", "s/iter ratio", 0.61, "<= 0.5 (issue 35)", False)
    record_history(path, [gmm], "0.1.0 (aaa)", note="load 3")
    record_history(path, [gmm._replace(ratio=0.42, met=True)], "0.1.0 (bbb)", note="load 2")
    mcvq = GoalRow("mcvq", "NMF", "s/iter MCVQ / NMF", 2.5, "<= 3 (issue 35)", True)
    record_history(path, [gmm._replace(ratio=0.40, met=True), mcvq], "0.1.0 (bbb)", note="load 1")   # replaces
    text = path.read_text()
    assert text.startswith("# Benchmarks\n\nIntro kept as it is.\n")
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert table[0] == "| date | version | gmm: s/iter ratio | mcvq: s/iter MCVQ / NMF | machine |"
    assert len(table) == 4                                     # header, rule, aaa, bbb
    assert "| 0.1.0 (aaa) | 0.61 (not met) |  | load 3 |" in table[2]
    assert "| 0.1.0 (bbb) | 0.4 | 2.5 | load 1 |" in table[3]


def test_a_goal_with_another_direction_is_refused():
    from zoo.bench import register_benchmark
    with pytest.raises(ValueError, match="op must be"):
        register_benchmark("never", peer="none", goals=(Goal("x", "<", 1.0, "x"),))
