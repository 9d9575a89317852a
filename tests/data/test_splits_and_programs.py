"""zoo.data.splits (the generic splitters the experiments share), zoo.data.gustafson07.bench_fs_data and
zoo.models.collapsed_fs (the collapsed FS program ``zoo bench cvfs`` hands to NumPyro's samplers)."""
import numpy as np
import pytest

import zoo  # noqa: F401 - float64
from zoo.data import AnnotatedRegions
from zoo.data.gustafson07 import bench_fs_data
from zoo.data.splits import split_images, split_indices, subset_images


def _regions():
    """6 images, 2 regions each; keyword "rare" annotates image 5 only."""
    keywords = [["sky"], ["sky", "grass"], ["grass"], ["sky"], ["grass"], ["rare", "sky"]]
    return AnnotatedRegions(X=np.arange(24.0).reshape(12, 2), image_ids=np.repeat(np.arange(6), 2),
                            keywords=keywords, vocabulary=["sky", "grass", "rare"],
                            region_labels=np.array([0, 0, 0, 1, 1, 1, 0, -1, 1, 1, 2, 0]))


def test_subset_images_renumbers_in_the_given_order():
    sub = subset_images(_regions(), [4, 1])
    assert sub.image_ids.tolist() == [1, 1, 0, 0]            # image 1's regions first in X, now numbered 1
    assert [list(k) for k in sub.keywords] == [["grass"], ["sky", "grass"]]
    assert sub.X[:, 0].tolist() == [4.0, 6.0, 16.0, 18.0] and sub.region_labels.tolist() == [0, 1, 1, 1]


@pytest.mark.parametrize("seed", range(5))
def test_split_images_puts_every_used_keyword_in_training(seed):
    train, valid = split_images(_regions(), 3, seed=seed)
    assert train.n_images == 3 and valid.n_images == 3
    assert ("rare", "sky") in [tuple(k) for k in train.keywords]    # the only image of "rare": always training
    assert len(train.X) + len(valid.X) == 12


def test_split_images_and_split_indices_reject_bad_sizes():
    with pytest.raises(ValueError, match="n_train"):
        split_images(_regions(), 6)
    with pytest.raises(ValueError, match="n_train"):
        split_indices(5, 6)


def test_split_indices_partitions_and_follows_the_seed():
    train, test = split_indices(10, 7, seed=3)
    assert sorted(np.r_[train, test].tolist()) == list(range(10)) and len(train) == 7
    assert np.all(np.diff(train) > 0) and np.all(np.diff(test) > 0)
    perm = np.random.default_rng(3).permutation(10)
    assert train.tolist() == sorted(perm[:7].tolist())


def test_bench_fs_data_half_labelled():
    data = bench_fs_data(n_units=20, p=8, seed=1)
    assert data.X.shape == (20, 8) and all(len(k) == 1 for k in data.keywords[:10])
    assert all(len(k) == 0 for k in data.keywords[10:])
    assert [data.vocabulary.index(k[0]) for k in data.keywords[:10]] == data.region_labels[:10].tolist()


def test_collapsed_fs_program_log_density_is_the_uniform_priors_plus_eq_10():
    import jax.numpy as jnp
    from jax.scipy.stats import norm
    from numpyro.infer.util import log_density

    from zoo.models.collapsed_fs import collapsed_fs_program
    from zoo.models.feature_selection import collapsed_log_density, concept_masks

    rng = np.random.default_rng(0)
    X = jnp.asarray(rng.normal(size=(7, 3)))
    labelled = jnp.array([1, 2, 1])
    delta, Omega = jnp.zeros(3), jnp.eye(3)
    M, Y_free, nuisance = jnp.array([1, 0, 1]), jnp.array([0, 2, 1, 1]), 0.3
    value, _ = log_density(collapsed_fs_program, (X, labelled, 3, delta, Omega), {},
                           {"M": M, "Y": Y_free, "nuisance": nuisance})
    Y = jnp.concatenate([labelled, Y_free])
    expected = (3 * np.log(0.5) + 4 * np.log(1 / 3) + norm.logpdf(nuisance)
                + collapsed_log_density(Y, concept_masks("fs", M, 3, 3), delta, Omega, X))
    assert float(value) == pytest.approx(float(expected), rel=1e-12)
