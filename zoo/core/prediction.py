"""What every ``fit.predict(data)`` returns: a small frozen dataclass of named arrays with one common surface.

- ``prediction.arrays()``: {name: NumPy array} of the fields that are set (what ``zoo predict`` writes to .npz);
- ``prediction.labels()``: the hard label per unit, where the model predicts labels (see the table);
- ``repr(prediction)``: one line of names, dtypes and shapes, never the arrays themselves;
- each array is also an attribute of the same name (``prediction.word_proba``).

| prediction | models | arrays (shapes) | ``labels()`` |
| --- | --- | --- | --- |
| ``MixturePrediction`` | carbonetto03.shrinkage_mixture | component_proba (N, C) | (N,) most probable component |
| ``TranslationPrediction`` | carbonetto03.translation | word_proba (R, W) | (R,) most probable word (index into the vocabulary) |
| ``RegionLabelPrediction`` | gustafson07.full, .fs, .cvfs | label_proba (R, K+1), feature_relevance (K, p), concepts (K+1,), annotated (R,) | (R,) most probable concept (0 = garbage) |
| ``MILPrediction`` | kueck04.* | instance_proba (M,), bag_proba (B,) | (M,) instance labels, ``instance_proba > threshold`` (0.5) |
| ``MCVQPrediction`` | ross03.mcvq, _supervised, _clustered | reconstruction (C, D), state_proba (C, K, J), vq_ownership (D, K), log_likelihood (C,), class_proba / cluster_proba (C, N) | (C,) most probable class (supervised) or cluster (clustered); the plain MCVQ has none |
| ``TopicPrediction`` | yakhnenko.mom_lda, .mom_hdp | caption_word_proba (I, W), topic_proba (I, K), word_proba (R, W), region_label (R,) | (R,) region labels (data with regions) |
| generic methods' predictions | models with nuts / svi / map | as the model's own | as the model's own |
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
