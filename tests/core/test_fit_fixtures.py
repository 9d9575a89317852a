"""Fit files written by an earlier main load and predict identically today (issue 28: the modules move, users'
files stay readable).

``tests/fixtures/fits/`` holds one saved fit per model id, written by ``zoo`` before the regrouping of its modules
(``manifest.json`` names the commit), and the predictions that fit made when it was saved
(``<model id>.predictions.npz``). Every commit after must load each file with ``zoo.load_fit`` and predict the same
arrays on the same data. The files are never re-recorded: they are what a user has on disk. A new model id adds
its file with

    ZOO_RECORD_FIT_FIXTURES=1 .venv/bin/python -m pytest tests/core/test_fit_fixtures.py -k <model id>

(which writes only files that do not exist yet).

Predictions are compared to rtol 1e-9: a prediction is one forward pass over the stored state (no chain that
could amplify rounding), so a processor other than the recording one moves it by rounding only (~1e-14).
"""
from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

import zoo
from zoo.data import Matrix

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "fits"
RECORD = os.environ.get("ZOO_RECORD_FIT_FIXTURES") == "1"
pytestmark = [pytest.mark.filterwarnings("ignore:convergence"), pytest.mark.filterwarnings("ignore:kueck04")]


def _two_class_matrix(C=30, seed=0):
    from zoo.data.ross03 import MatrixDataset
    rng = np.random.default_rng(seed)
    y = np.arange(C) % 2
    X = np.where(y[:, None] == 1, 1.5, -1.5) * np.ones((C, 4)) + 0.3 * rng.normal(size=(C, 4))
    return MatrixDataset(Matrix(X), labels=y)


def _ring():
    from zoo.data.mil import ring_data
    return ring_data(n=40, seed=1)


def _sec6():
    return zoo.load_dataset("gustafson07_sec6")


def _topics():
    return zoo.load_dataset("yakhnenko_synthetic", n_images=30)


_MCMC = dict(num_warmup=5, num_samples=5, progress_bar=False)

#: model id -> (model options, data for the fit, data to predict on (None: the fit's), fit options); builders, so
#: that data are made only for the cases that run
CASES = {
    "carbonetto03.shrinkage_mixture": lambda: ({}, zoo.load_dataset("carbonetto03_sec2"), None, dict(max_iter=20)),
    "carbonetto03.translation": lambda: ({}, zoo.load_dataset("carbonetto03_sec52"), None, dict(max_iter=20)),
    "gustafson07.full": lambda: ({}, _sec6(), None, _MCMC),
    "gustafson07.fs": lambda: ({}, _sec6(), None, _MCMC),
    "gustafson07.cvfs": lambda: ({}, _sec6(), None, _MCMC),
    "kueck04.supervised": lambda: ({}, _ring(), None, _MCMC),
    "kueck04.constraint": lambda: ({}, _ring(), None, _MCMC),
    "kueck04.measurement": lambda: ({}, _ring(), None, _MCMC),
    "kueck04.hybrid": lambda: ({}, _ring(), None, _MCMC),
    "ross03.mcvq": lambda: (dict(n_vqs=2, n_states=2), _two_class_matrix(), None,
                            dict(max_iter=3, progress_bar=False)),
    "ross03.mcvq_supervised": lambda: (dict(n_vqs=2, n_states=2), _two_class_matrix(),
                                       _two_class_matrix(seed=1).matrix,
                                       dict(max_iter=3, progress_bar=False, monte_carlo_samples=16)),
    "ross03.mcvq_clustered": lambda: (dict(n_vqs=2, n_states=2, n_clusters=2), _two_class_matrix().matrix, None,
                                      dict(max_iter=3, progress_bar=False)),
    "yakhnenko.mom_lda": lambda: (dict(n_topics=3), _topics(), None, dict(max_iter=5, progress_bar=False)),
    "yakhnenko.mom_hdp": lambda: (dict(truncation=3), _topics(), None, dict(max_iter=5, progress_bar=False)),
}


def _fields(prediction) -> dict[str, np.ndarray]:
    """The prediction's arrays by field name; a field that is None is left out, and words (object arrays of
    strings) become string arrays, which ``np.load(allow_pickle=False)`` reads."""
    out = {}
    for f in dataclasses.fields(prediction):
        value = getattr(prediction, f.name)
        if value is None:
            continue
        arr = np.asarray(value)
        out[f.name] = arr.astype(str) if arr.dtype == object else arr
    return out


def _git_commit() -> str:
    out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                         cwd=pathlib.Path(__file__).parent)
    return out.stdout.strip() if out.returncode == 0 else ""


def _record(model_id: str) -> None:
    path, predictions = FIXTURES / f"{model_id}.nc", FIXTURES / f"{model_id}.predictions.npz"
    if path.exists() and predictions.exists():    # a user's file is what it is: never rewritten
        return
    options, data, new_data, fit_options = CASES[model_id]()
    if path.exists():     # the predictions of the stored fit (the fit itself is not made again)
        fit = zoo.load_fit(path)
    else:
        fit = zoo.fit(zoo.model(model_id, **options), data, seed=3, **fit_options)
        FIXTURES.mkdir(parents=True, exist_ok=True)
        fit.save(path)
    np.savez(predictions, **_fields(fit.predict(data if new_data is None else new_data)))
    manifest_path = FIXTURES / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    manifest[model_id] = {"commit": _git_commit(), "method": fit.method, "zoo_version": zoo.__version__}
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


def test_every_model_id_has_a_fixture():
    if RECORD:
        pytest.skip("recording")
    assert {p.name[:-len(".nc")] for p in FIXTURES.glob("*.nc")} == {card.id for card in zoo.catalog()} == set(CASES)


@pytest.mark.parametrize("model_id", sorted(CASES))
def test_an_earlier_mains_fit_file_loads_and_predicts_identically(model_id):
    if RECORD:
        _record(model_id)
        return
    options, data, new_data, _ = CASES[model_id]()
    loaded = zoo.load_fit(FIXTURES / f"{model_id}.nc")
    assert loaded.spec.id == model_id
    prediction = loaded.predict(data if new_data is None else new_data)
    got = _fields(prediction)
    with np.load(FIXTURES / f"{model_id}.predictions.npz", allow_pickle=False) as stored:
        want = {name: stored[name] for name in stored.files}
    if "labels" in want and "labels" not in got:   # a field that became the method labels() (issue 31)
        got["labels"] = prediction.labels()
    assert got.keys() == want.keys()
    for name in want:
        if want[name].dtype.kind == "f":
            np.testing.assert_allclose(got[name], want[name], rtol=1e-9, atol=1e-12, err_msg=f"{model_id}: {name}")
        else:
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"{model_id}: {name}")
    assert loaded.summary().shape[0] > 0
    _assert_current_layout(loaded)


def _assert_current_layout(fit):
    """A file written before issue 30 (format 2) is read into today's layout: the model's per-unit sites in
    ``unit_posterior``, every declared site with its declared dims (``zoo.core.idata.conform_layout``)."""
    from zoo.core.registry import get_model
    entry = get_model(fit.spec.id)
    post = fit.idata.posterior
    assert not [k for k in post.data_vars if k.removesuffix("_relabelled") in entry.unit_sites]
    for group in ("posterior", "unit_posterior"):
        if group not in fit.idata.groups():
            continue
        for name, var in fit.idata[group].data_vars.items():
            declared = entry.site_dims.get(name.removesuffix("_relabelled"))
            if declared is None:
                continue
            options = list(declared) if isinstance(declared[0], tuple) else [declared]
            assert var.dims[2:] in options, (fit.spec.id, group, name, var.dims)
    # a variable the model renamed since (``renamed``: kueck04's log likelihood ``groups``) is read under its new name
    for old, new in entry.renamed.items():
        for group in fit.idata.groups():
            assert old not in fit.idata[group].data_vars, (fit.spec.id, group, old)
        if new in entry.site_dims and "log_likelihood" in fit.idata.groups():
            assert new in fit.idata.log_likelihood.data_vars, (fit.spec.id, new)
