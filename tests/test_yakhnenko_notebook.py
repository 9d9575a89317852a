"""The Yakhnenko & Honavar notebook executes end to end (fast setting: data simulated from the program)."""


def test_notebook_runs(run_notebook):
    nb = run_notebook("yakhnenko")
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "final ELBO per restart" in text and "factor" in text
