"""The kueck04 models' candidate basis smaller than N (``basis`` option, ``zoo.inference.mil.basis``)."""
import warnings

import numpy as np
import pytest

import zoo
from zoo.data import Bags
from zoo.core.idata import draws_of
from zoo.inference.mil.basis import kmeans_pp_indices
from zoo.papers.kueck04 import prepare


def _bags(n_bags=12, seed=0):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 5, size=n_bags)
    bag_ids = np.repeat(np.arange(n_bags), sizes)
    labels = np.arange(n_bags) % 2
    hot = (labels[bag_ids] == 1) & (rng.random(bag_ids.size) < 0.5)
    X = rng.normal(size=(bag_ids.size, 2)) + 2.0 * hot[:, None]
    return Bags(X, bag_ids, bag_labels=labels)


def test_kmeans_pp_indices_sorted_distinct_and_all_when_m_reaches_n():
    X = np.r_[np.random.default_rng(0).normal(size=(30, 3)), np.zeros((5, 3))]    # 5 duplicates of one point
    idx = kmeans_pp_indices(X, 10, seed=1)
    assert idx.shape == (10,) and np.all(np.diff(idx) > 0)
    assert np.array_equal(idx, kmeans_pp_indices(X, 10, seed=1))
    assert np.sum(idx >= 30) <= 1                      # a duplicate point is never chosen twice while others remain
    assert np.array_equal(kmeans_pp_indices(X, 35), np.arange(35))
    assert np.array_equal(kmeans_pp_indices(X, 50), np.arange(35))
    # every point a duplicate: still distinct indices
    assert np.unique(kmeans_pp_indices(np.zeros((6, 2)), 4)).size == 4


def test_basis_option_validated():
    for bad in (0, -3, 2.5, True, "10"):
        with pytest.raises(ValueError, match="basis"):
            zoo.model("kueck04.constraint", basis=bad)


def test_subset_basis_shapes_and_full_basis_equals_the_full_model():
    """basis = N keeps every centre in its order: the same arrays and the same draws as the thesis' model;
    basis = M < N gives an N x M design, M centres for prediction."""
    data = _bags()
    n = data.X.shape[0]
    full = zoo.model("kueck04.constraint", max_active=8)
    same = zoo.model("kueck04.constraint", max_active=8, basis=n)
    small = zoo.model("kueck04.constraint", max_active=8, basis=7)
    assert np.array_equal(prepare(full, data).psi, prepare(same, data).psi)
    prep = prepare(small, data)
    assert prep.psi.shape == (n, 7) and prep.gram.shape == (7, 7) and prep.X.shape == (7, 2)
    settings = dict(seed=3, num_chains=1, num_warmup=30, num_samples=30, progress_bar=False, fast_compile=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # convergence warnings of the short chains
        a = zoo.fit(full, data, **settings)
        b = zoo.fit(same, data, **settings)
        c = zoo.fit(small, data, **settings)
    for name in ("beta", "gamma", "delta2"):
        assert np.array_equal(draws_of(a.idata, name).values, draws_of(b.idata, name).values), name
    assert draws_of(c.idata, "beta").shape[-1] == 7 and np.all(np.isfinite(draws_of(c.idata, "beta").values))
    p = c.predict(data).bag_proba
    assert p.shape == (data.n_bags,) and np.all((p >= 0) & (p <= 1))

