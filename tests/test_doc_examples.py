"""Examples in docstrings run (doctest): ``help(zoo)``'s, the data containers', and every module's ``>>>`` example
(issue 31); the prediction table of README.md is the one of ``zoo.core.prediction`` (one table, two places that
must not drift apart). Examples that fit samplers (a minute or more each, mostly compilation) are in the extended
tier."""
import doctest
import importlib
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

#: modules with quick examples (seconds)
QUICK = ["zoo", "zoo.data.containers", "zoo.diagnostics.reference",
         "zoo.diagnostics.switch_rate"]
#: modules whose examples fit models (a minute or more each on two cores)
SLOW = ["zoo.kernels", "zoo.papers.gustafson07", "zoo.papers.yakhnenko", "zoo.papers.yakhnenko_svi",
        "zoo.papers.ross03", "zoo.diagnostics.check_sampler", "zoo.diagnostics.comparison", "zoo.inference.driver",
        "zoo.inference.label_feature.gibbs", "zoo.inference.mil.gibbs"]


def _run_doctests(name: str, monkeypatch) -> None:
    monkeypatch.setenv("MPLBACKEND", "Agg")
    import matplotlib
    matplotlib.use("Agg")
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, report=True)
    assert result.attempted > 0, f"{name}: no examples found"
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"


@pytest.mark.parametrize("name", QUICK)
def test_docstring_examples_run(name, monkeypatch):
    _run_doctests(name, monkeypatch)


@pytest.mark.extended
@pytest.mark.parametrize("name", SLOW)
def test_docstring_examples_that_fit_run(name, monkeypatch):
    _run_doctests(name, monkeypatch)


def test_every_module_with_examples_is_run():
    """A new module with ``>>>`` examples joins QUICK or SLOW (so that its examples are run, not just read)."""
    found = set()
    for folder, package in ((ROOT / "zoo", "zoo"), (ROOT / "models", "zoo.models"),
                            (ROOT / "inference", "zoo.inference")):
        for path in folder.rglob("*.py"):
            if ">>>" in path.read_text(encoding="utf-8"):
                parts = path.relative_to(folder).with_suffix("").parts
                parts = parts[:-1] if parts[-1] == "__init__" else parts
                found.add(".".join((package,) + parts))
    assert found == set(QUICK) | set(SLOW), sorted(found ^ (set(QUICK) | set(SLOW)))


def test_help_zoo_example_is_there():
    import zoo
    assert ">>> fit.predict(X)" in zoo.__doc__ and ".X)" not in zoo.__doc__


def test_the_prediction_table_names_every_prediction_class_and_its_arrays():
    """README.md's "Predictions" table (the one table of the interface) lists every subclass of Prediction with
    each of its fields."""
    import dataclasses

    from zoo.catalog import ensure_loaded
    from zoo.core.prediction import Prediction
    ensure_loaded()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = {m.group(1): line for line in readme.splitlines() if (m := re.match(r"\| `(\w+Prediction)` \|", line))}
    classes = {cls.__name__: cls for cls in Prediction.__subclasses__()}
    assert set(rows) == set(classes)
    for name, cls in classes.items():
        for field in dataclasses.fields(cls):
            assert field.name in rows[name], f"{name}.{field.name} is not in README's table"
