"""Ross 2003 MCVQ: public calls, bad input, class extensions, data generators and loaders."""
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.scipy.special import logsumexp

import zoo
from zoo.data import Matrix
from zoo.data.ross03 import MatrixDataset, shapes_images, shapes_split
from zoo.inference.mcvq import steps


def test_registered_models_and_methods():
    ids = {c.id for c in zoo.catalog()}
    assert {"ross03.mcvq", "ross03.mcvq_supervised", "ross03.mcvq_clustered"} <= ids
    for mid in ("ross03.mcvq", "ross03.mcvq_supervised", "ross03.mcvq_clustered"):
        assert "variational_em" in zoo.methods(mid)


@pytest.mark.parametrize("options,field", [({"n_vqs": 0}, "n_vqs"), ({"n_states": 0}, "n_states"),
                                           ({"n_vqs": 2.5}, "n_vqs"), ({"colour": 1}, "colour")])
def test_bad_options(options, field):
    with pytest.raises(ValueError, match=field):
        zoo.model("ross03.mcvq", **options)


def test_bad_prior_family_and_concentration():
    with pytest.raises(ValueError, match="Dirichlet"):
        zoo.fit(zoo.model("ross03.mcvq", n_vqs=2, n_states=2, priors={"a": "Normal(0, 1)"}), np.ones((4, 3)))
    with pytest.raises(ValueError, match="concentrations >= 1"):
        zoo.fit(zoo.model("ross03.mcvq", n_vqs=2, n_states=2, priors={"b": "Dirichlet([0.5, 0.5])"}),
                np.ones((4, 3)))
    with pytest.raises(ValueError, match=r"priors\['b'\].*shape \(3,\).*takes shape \(2,\)"):
        zoo.fit(zoo.model("ross03.mcvq", n_vqs=2, n_states=2, priors={"b": "Dirichlet([1, 1, 1])"}),
                np.ones((4, 3)))


def test_bad_data():
    spec = zoo.model("ross03.mcvq", n_vqs=2, n_states=2)
    X = np.random.default_rng(0).normal(size=(6, 4))
    with pytest.raises(ValueError, match="n_vqs"):
        zoo.fit(zoo.model("ross03.mcvq", n_vqs=5, n_states=2), Matrix(X))
    row_missing = X.copy()
    row_missing[2] = np.nan
    with pytest.raises(ValueError, match="mask: case 2"):
        zoo.fit(spec, row_missing)
    col_missing = X.copy()
    col_missing[:, 1] = np.nan
    with pytest.raises(ValueError, match="mask: dimension 1"):
        zoo.fit(spec, Matrix(col_missing))
    with pytest.raises(ValueError, match="values"):
        zoo.fit(spec, Matrix(np.where(X > 1, np.nan, X), np.ones_like(X, dtype=bool)))
    with pytest.raises(ValueError, match="max_iter"):
        zoo.fit(spec, Matrix(X), max_iter=0)
    with pytest.raises(ValueError, match="sigma_floor"):
        zoo.fit(spec, Matrix(X), sigma_floor=-1.0)
    with pytest.raises(ValueError, match="unknown option"):
        zoo.fit(spec, Matrix(X), n_iterations=3)
    with pytest.raises(ValueError, match="labels"):
        zoo.fit(zoo.model("ross03.mcvq_supervised", n_vqs=2, n_states=2), Matrix(X))
    with pytest.raises(ValueError, match="labels: class 1"):
        zoo.fit(zoo.model("ross03.mcvq_supervised", n_vqs=2, n_states=2), Matrix(X), labels=np.array([0, 2] * 3))


def _classes_data(seed=0, C=60, D=6):
    """Two classes that prefer different states of a 2-VQ model (dims 0-2 VQ 0, dims 3-5 VQ 1)."""
    rng = np.random.default_rng(seed)
    y = np.arange(C) % 2
    s0 = np.where(rng.uniform(size=C) < 0.85, y, 1 - y)
    s1 = rng.integers(0, 2, size=C)
    X = np.concatenate([np.where(s0[:, None] == 1, 1.5, -1.5) * np.ones((C, 3)),
                        np.where(s1[:, None] == 1, 1.5, -1.5) * np.ones((C, 3))], axis=1)
    return X + 0.3 * rng.normal(size=X.shape), y


@pytest.mark.slow  # the notebook test runs the same calls in the default suite
def test_supervised_and_clustered_predictions():
    X, y = _classes_data()
    data = MatrixDataset(Matrix(X[:40]), labels=y[:40])
    sup = zoo.fit(zoo.model("ross03.mcvq_supervised", n_vqs=2, n_states=2), data, seed=0, max_iter=10,
                  num_chains=2, progress_bar=False, monte_carlo_samples=512)
    pred = sup.predict(Matrix(X[40:]))
    assert pred.class_proba.shape == (20, 2) and pred.class_proba_monte_carlo.shape == (20, 2)
    np.testing.assert_allclose(pred.class_proba.sum(1), 1.0)
    assert np.mean(pred.class_proba.argmax(1) == y[40:]) >= 0.7
    assert np.mean(pred.class_proba_monte_carlo.argmax(1) == y[40:]) >= 0.7
    X_const = X.copy()
    X_const[:, 2] = 0.7  # a zero-variance dimension: sigma stays at the floor, F finite
    clu = zoo.fit(zoo.model("ross03.mcvq_clustered", n_vqs=2, n_states=2, n_clusters=2), Matrix(X_const), seed=0,
                  max_iter=10, num_chains=2, progress_bar=False)
    assert np.all(clu.idata.variational_parameters["sigma"].values >= clu.state.sigma_floor * (1 - 1e-12))
    assert np.isfinite(clu.state.free_energy).all()
    z = clu.predict(Matrix(X_const)).cluster_proba
    assert z.shape == (60, 2) and np.allclose(z.sum(1), 1.0)
    assert clu.idata.variational_parameters["cluster_proba"].shape == (2, 60, 2)


def test_monte_carlo_rule_matches_enumeration():
    """Eq. 4.3 estimates log P(x, y = n); on a 3-dimensional problem it matches the exact sum over R and S."""
    rng = np.random.default_rng(2)
    D, K, J, N = 3, 2, 2, 2
    params = steps.MCVQParams(mu=jnp.asarray(rng.normal(size=(D, K, J))), sigma=jnp.full((D, K, J), 0.8),
                              a=jnp.asarray(rng.dirichlet(np.ones(K), size=D)),
                              b=jnp.asarray(rng.dirichlet(np.ones(J), size=(N, K))), beta=jnp.array([0.3, 0.7]))
    X = jnp.asarray(rng.normal(size=(2, D)))
    M = jnp.ones_like(X)
    exact = []
    for r in itertools.product(range(K), repeat=D):
        r = jnp.array(r)
        L = steps.data_term(X, M, jax.nn.one_hot(r, K), params.mu, params.sigma)
        exact.append(jnp.log(params.a[jnp.arange(D), r]).sum() + steps.class_log_scores(L, params.b, params.beta))
    exact = logsumexp(jnp.stack(exact), axis=0)
    mc = steps.monte_carlo_class_log_joint(jax.random.PRNGKey(0), X, M, params, 20000, batch=2000)
    np.testing.assert_allclose(np.asarray(mc), np.asarray(exact), atol=0.05)


def test_shapes_generator_and_split():
    X, pos = shapes_images()
    assert X.shape == (729, 121) and set(np.unique(X)) == {-1.0, 1.0}
    assert len({tuple(p) for p in pos}) == 729
    assert np.all((X == 1).sum(1) == 8 + 6 + 5)  # box, triangle, cross pixel counts
    Xtr, Xte, ptr, pte = shapes_split()
    assert Xtr.shape == (100, 121) and Xte.shape == (629, 121)
    assert not np.any((ptr < 3).all(1)) and np.sum((pte < 3).all(1)) == 27


@pytest.mark.parametrize("name,shape", [("faces_cbcl", (2429, 361)), ("faces_olivetti", (400, 1024)),
                                        ("newsgroups_20news_w100", (16242, 100))])
def test_real_loaders(name, shape):
    try:
        data = zoo.load_dataset(name)
    except FileNotFoundError as err:
        pytest.skip(str(err))
    assert data.matrix.values.shape == shape
    if name.startswith("faces"):
        assert data.matrix.values.min() >= -1 and data.matrix.values.max() <= 1


def test_movielens_loader():
    try:
        data = zoo.load_dataset("movielens_latest_small_2016")
    except FileNotFoundError as err:
        pytest.skip(str(err))
    m = data.matrix
    assert m.mask.sum(1).min() >= 20 and m.mask.sum(0).min() >= 1
    assert set(np.unique(m.values[m.mask])) <= set(np.arange(1, 11) / 2)
    assert len(data.column_names) == m.values.shape[1]
