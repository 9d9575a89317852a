"""Examples in docstrings run (doctest): ``help(zoo)``'s and the data containers' (issue 31); the prediction table
of README.md is the one of ``zoo.core.prediction`` (one table, two places that must not drift apart)."""
import doctest
import importlib
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

#: modules whose docstring examples are complete programs (the others' are sketches with names left to the reader)
RUNNABLE = ["zoo", "zoo.data.containers", "zoo.data.tables", "zoo.core.prediction"]


@pytest.mark.parametrize("name", RUNNABLE)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, report=True)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"


def test_help_zoo_example_is_there():
    import zoo
    assert ">>> fit.predict(X)" in zoo.__doc__ and ".X)" not in zoo.__doc__


def _table_rows(text: str) -> list[str]:
    rows = [line.strip() for line in text.splitlines() if line.strip().startswith("| `") or
            line.strip().startswith("| ``")]
    return [re.sub(r"`+", "`", row) for row in rows if "Prediction" in row]


def test_prediction_table_in_readme_matches_the_module():
    from zoo.core import prediction
    readme = _table_rows((ROOT / "README.md").read_text(encoding="utf-8"))
    module = _table_rows(prediction.__doc__)
    assert readme and [r.split("|")[1:3] for r in readme] == [r.split("|")[1:3] for r in module]
