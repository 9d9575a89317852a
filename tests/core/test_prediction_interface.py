"""Every prediction object has one surface (issue 31): named arrays (``arrays()``), ``labels()`` where the model
predicts labels, and a one-line repr of names and shapes (never the arrays)."""
import numpy as np
import pytest

from zoo.core.prediction import Prediction
from zoo.papers.carbonetto03 import MixturePrediction, TranslationPrediction
from zoo.papers.gustafson07 import RegionLabelPrediction
from zoo.papers.kueck04 import MILPrediction
from zoo.papers.ross03 import MCVQPrediction
from zoo.papers.yakhnenko import TopicPrediction

rng = np.random.default_rng(0)
P = rng.dirichlet(np.ones(4), size=300)          # (300, 4): a long array whose values must not be printed

CASES = [
    (MixturePrediction(component_proba=P), P.argmax(1)),
    (TranslationPrediction(word_proba=P), P.argmax(1)),
    (RegionLabelPrediction(P, rng.uniform(size=(3, 5)), ["garbage", "a", "b", "c"], np.ones(300, bool)),
     P.argmax(1)),
    (MILPrediction(instance_proba=P[:, 0], bag_proba=P[:10, 1]), (P[:, 0] > 0.5).astype(int)),
    (MCVQPrediction(reconstruction=P, state_proba=np.ones((300, 2, 3)), vq_ownership=np.ones((4, 2)),
                    log_likelihood=P[:, 0], class_proba=P), P.argmax(1)),
    (TopicPrediction(caption_word_proba=P, topic_proba=P, word_proba=P, region_label=P.argmax(1)), P.argmax(1)),
]


@pytest.mark.parametrize("prediction, labels", CASES, ids=lambda c: type(c).__name__)
def test_one_surface(prediction, labels):
    assert isinstance(prediction, Prediction)
    arrays = prediction.arrays()
    assert all(isinstance(a, np.ndarray) for a in arrays.values())
    for name, array in arrays.items():
        np.testing.assert_array_equal(array, np.asarray(getattr(prediction, name)))
    np.testing.assert_array_equal(prediction.labels(), labels)
    text = repr(prediction)
    assert text.startswith(type(prediction).__name__ + "(") and "\n" not in text and len(text) < 300
    assert "(300, 4)" in text or "(300,)" in text
    assert str(round(float(P[0, 0]), 4))[:6] not in text            # no values printed


def test_predictions_without_labels_say_so():
    plain = MCVQPrediction(reconstruction=P, state_proba=np.ones((300, 2, 3)), vq_ownership=np.ones((4, 2)),
                           log_likelihood=P[:, 0])
    with pytest.raises(ValueError, match="plain MCVQ predicts no classes"):
        plain.labels()
    assert "class_proba" not in plain.arrays() and "class_proba" not in repr(plain)
    with pytest.raises(ValueError, match="no regions"):
        TopicPrediction(caption_word_proba=P, topic_proba=P).labels()


def test_a_fit_predicts_with_the_common_surface():
    import zoo
    X = zoo.load_dataset("carbonetto03_sec2")
    fit = zoo.fit(zoo.model("carbonetto03.shrinkage_mixture", n_components=3, covariance="diag"), X,
                  num_chains=1, max_iter=30)
    prediction = fit.predict(X)
    assert repr(prediction) == "MixturePrediction(component_proba=float64(200, 3))"
    assert prediction.labels().shape == (200,)
