"""Every continuous-feature model's default fit on real-looking features (issue 34), property-based.

Real region features are histogram bins and shares that sum to one (exactly linearly dependent), heavy-tailed
ratios, raw measurements whose scales span 1e-4 to 1e4, repeated rows, and now and then a constant column. For each
model id on continuous features, hypothesis draws such data sets and the model's default method must either
return finite results (and finite predictions), or refuse a constant feature before computing, with a ValueError
that names it and says what to do.

One shape per model id (N rows x 6 features), so every example after the first reuses the compiled program.
The carbonetto03 models (where the failure was: MAP-EM's IW prior centred on a singular sample covariance) run
in the default suite; the samplers of gustafson07 and kueck04 and the MCVQ variants compile for 20-60 s each (the
MCVQ sweep took 47 s on a loaded machine), so their sweep is marked slow. What the zoo does with such features is in
docs/real-features.md.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zoo
from zoo.core.finite import NonFiniteResultError
from zoo.data import AnnotatedRegions, Bags, Matrix

#: short runs on purpose (finiteness is the property, not convergence): the verdict's warning is expected
pytestmark = pytest.mark.filterwarnings("ignore:convergence")

N_ROWS, N_FEATURES = 40, 6
PATHOLOGIES = ("dependent", "histogram", "constant", "heavy", "scales", "duplicated", "all")
CONSTANT_COLUMN = 2


def features(pathology: str, seed: int, dof: float) -> np.ndarray:
    """(N_ROWS, N_FEATURES) features with one pathology ("all": histogram bins, Student-t tails, scales 1e-4..1e4
    and duplicated rows together)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N_ROWS, N_FEATURES)) + 2.0 * (np.arange(N_ROWS) % 2)[:, None]   # two groups
    if pathology in ("heavy", "all"):
        X = X + rng.standard_t(dof, size=X.shape)
    if pathology == "dependent":
        X[:, -1] = 1.0 - X[:, 0] - 0.5 * X[:, 1]                  # exactly linear in two others
    if pathology in ("histogram", "all"):
        X[:, -3:] = rng.dirichlet(np.ones(3), N_ROWS)             # bins that sum to one
    if pathology == "constant":
        X[:, CONSTANT_COLUMN] = 7.5
    if pathology in ("scales", "all"):
        X = X * np.logspace(-4, 4, N_FEATURES)[None]
    if pathology in ("duplicated", "all"):
        X[N_ROWS // 2:] = X[: N_ROWS - N_ROWS // 2]
    return X


def data_for(model_id: str, X: np.ndarray, seed: int):
    """The model's data container around X: regions of 4 per image with 2 of 3 keywords each, bags of 4, or a
    matrix (rows labelled by group for the supervised MCVQ)."""
    rng = np.random.default_rng(seed)
    n = X.shape[0]
    if model_id == "carbonetto03.shrinkage_mixture":
        return X
    if model_id.startswith(("carbonetto03", "gustafson07")):
        image_ids = np.arange(n) // 4
        vocabulary = ["sky", "grass", "water"]
        keywords = [set(rng.choice(vocabulary, 2, replace=False).tolist()) for _ in range(image_ids.max() + 1)]
        return AnnotatedRegions(X=X, image_ids=image_ids, keywords=keywords, vocabulary=vocabulary)
    if model_id.startswith("kueck04"):
        bag_ids = np.arange(n) // 4
        n_bags = bag_ids.max() + 1
        return Bags(X=X, bag_ids=bag_ids, bag_labels=np.arange(n_bags) % 2,
                    group_labels=np.array(["negative", "mixed", "positive"])[np.arange(n_bags) % 3],
                    fractions=np.full(n_bags, 0.5), instance_labels=np.arange(n) % 2)
    if model_id == "ross03.mcvq_supervised":
        from zoo.data.ross03 import MatrixDataset
        return MatrixDataset(Matrix(X), labels=np.arange(n) % 2)
    return Matrix(X)


def prediction_data(model_id: str, data):
    if model_id == "ross03.mcvq_supervised":
        return data.matrix
    return data


MODEL_OPTIONS = {"ross03.mcvq": dict(n_vqs=2, n_states=2), "ross03.mcvq_supervised": dict(n_vqs=2, n_states=2),
                 "ross03.mcvq_clustered": dict(n_vqs=2, n_states=2, n_clusters=2)}
_SAMPLER = dict(num_chains=2, num_warmup=20, num_samples=20, progress_bar=False)


def fit_options(model_id: str) -> dict:
    """The default method with short runs (the property is about finiteness, not convergence)."""
    if model_id.startswith("carbonetto03"):
        return dict(max_iter=100)
    if model_id.startswith("ross03"):
        return dict(max_iter=20, progress_bar=False)
    return _SAMPLER


def _finite_arrays(obj) -> list[str]:
    """Names of the float arrays of a prediction object that hold NaN or infinity."""
    import dataclasses
    bad = []
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        arr = np.asarray(value) if value is not None else None
        if arr is not None and arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            bad.append(f.name)
    return bad


def check_default_fit(model_id: str, pathology: str, seed: int, dof: float) -> None:
    X = features(pathology, seed, dof)
    data = data_for(model_id, X, seed)
    spec = zoo.model(model_id, **MODEL_OPTIONS.get(model_id, {}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fit = zoo.fit(spec, data, seed=seed % 1000, **fit_options(model_id))
        except NonFiniteResultError as err:
            pytest.fail(f"{model_id} on {pathology} features (seed {seed}, dof {dof:.2f}): {err}")
        except ValueError as err:
            # the one refusal allowed: a constant feature, named, with the fix, before any computation
            message = str(err)
            assert pathology == "constant", f"{model_id} refused {pathology} features: {message}"
            assert "constant" in message and str(CONSTANT_COLUMN) in message and "drop" in message, message
            return
        prediction = fit.predict(prediction_data(model_id, data))
    assert not _finite_arrays(prediction), (model_id, pathology, _finite_arrays(prediction))


CONTINUOUS_FEATURE_MODELS = [card.id for card in zoo.catalog() if card.data_kind in ("ndarray", "AnnotatedRegions",
                                                                                      "Bags", "Matrix")]
FAST = {"carbonetto03.shrinkage_mixture", "carbonetto03.translation"}


def test_every_continuous_feature_model_is_covered():
    assert set(CONTINUOUS_FEATURE_MODELS) == {
        "carbonetto03.shrinkage_mixture", "carbonetto03.translation", "gustafson07.full", "gustafson07.fs",
        "gustafson07.cvfs", "kueck04.supervised", "kueck04.constraint", "kueck04.measurement", "kueck04.hybrid",
        "ross03.mcvq", "ross03.mcvq_supervised", "ross03.mcvq_clustered"}


@pytest.mark.parametrize("model_id", [m if m in FAST else pytest.param(m, marks=pytest.mark.slow)
                                      for m in CONTINUOUS_FEATURE_MODELS])
@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(pathology=st.sampled_from(PATHOLOGIES), seed=st.integers(0, 2**16), dof=st.floats(2.0, 3.0))
def test_default_fit_survives_real_features(model_id, pathology, seed, dof):
    check_default_fit(model_id, pathology, seed, dof)


def test_translation_on_histogram_features_the_issue_case():
    """The generated case of issue 34, at a tenth of its size: 10 Gaussian features plus a 4-bin Dirichlet
    histogram, heavy tails, scales 1e-4..1e4, 8 words: the default MAP-EM (full covariance) returned NaN (the
    diagonal covariance fitted; the full size is timed in the issue's note)."""
    rng = np.random.default_rng(0)
    n_regions, n_words = 200, 8
    image_ids = np.repeat(np.arange(n_regions // 5), 5)
    truth = rng.integers(0, n_words, n_regions)
    gaussian = rng.normal(0, 2, (n_words, 10))[truth] + rng.standard_t(2.5, (n_regions, 10))
    histogram = np.stack([rng.dirichlet(1.0 + 3.0 * (np.arange(4) == truth[r] % 4)) for r in range(n_regions)])
    X = np.hstack([gaussian, histogram]) * np.logspace(-4, 4, 14)[None]
    vocabulary = [f"w{k}" for k in range(n_words)]
    keywords = [{vocabulary[w] for w in truth[image_ids == i]} for i in range(image_ids.max() + 1)]
    data = AnnotatedRegions(X=X, image_ids=image_ids, keywords=keywords, vocabulary=vocabulary)
    fit = zoo.fit(zoo.model("carbonetto03.translation"), data, seed=0, max_iter=100)
    proba = fit.predict(data).word_proba
    assert np.all(np.isfinite(proba))
    # the fit learned something: the true word of a region is, on average, more probable than chance
    assert proba[np.arange(n_regions), truth].mean() > 1.5 / n_words
    assert fit.idata.posterior.attrs["zoo_model_options"].count('"standardize": true') == 1
