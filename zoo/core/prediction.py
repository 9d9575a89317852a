"""What every ``fit.predict(data)`` returns: a small frozen dataclass of named arrays with one common surface.

- ``prediction.arrays()``: {name: NumPy array} of the fields that are set (what ``zoo predict`` writes to .npz);
- ``prediction.labels()``: the hard label per unit, where the model predicts labels (see the table);
- ``repr(prediction)``: one line of names, dtypes and shapes, never the arrays themselves;
- each array is also an attribute of the same name (``prediction.word_proba``).

The one table of every prediction class, its models, arrays with shapes and ``labels()`` is in README.md, section
"Predictions" (tests/test_doc_examples.py checks that it names every subclass): ``MixturePrediction``,
``TranslationPrediction`` (carbonetto03), ``RegionLabelPrediction`` (gustafson07), ``MILPrediction`` (kueck04),
``MCVQPrediction`` (ross03), ``TopicPrediction`` (yakhnenko); the generic methods predict with the model's own.
"""
from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["Prediction"]


class Prediction:
    """Base of the prediction dataclasses (declare them ``@dataclasses.dataclass(frozen=True, repr=False)``)."""

    def arrays(self) -> dict[str, np.ndarray]:
        """{field name: array} of the fields that are set, in declaration order."""
        out = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if value is not None:
                out[field.name] = np.asarray(value)
        return out

    def __repr__(self) -> str:
        parts = [f"{name}={'str' if arr.dtype.kind in 'US' else arr.dtype.name}{tuple(arr.shape)}"
                 for name, arr in self.arrays().items()]
        return f"{type(self).__name__}({', '.join(parts)})"

    def _repr_pretty_(self, printer, cycle) -> None:  # IPython / Jupyter: the same short text
        printer.text(repr(self))
