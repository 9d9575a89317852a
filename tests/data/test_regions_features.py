"""Region features (issue 7) on synthetic images with known regions: exact area, centroid, perimeter, Lab."""
import numpy as np
import pytest
from skimage.color import rgb2lab

from zoo.data.region_features import (FEATURE_SETS, STATISTIC_NAMES, feature_names, fit_standardizer,
                                      region_features, region_statistics, standardize)

COL = {name: i for i, name in enumerate(STATISTIC_NAMES)}


def _rectangle_image():
    """20 x 30 image: background colour A, a 5 x 10 rectangle (rows 5..9, cols 10..19) of colour B."""
    image = np.empty((20, 30, 3))
    image[:] = (0.2, 0.4, 0.6)
    image[5:10, 10:20] = (0.9, 0.1, 0.1)
    region_map = np.zeros((20, 30), dtype=int)
    region_map[5:10, 10:20] = 1
    return image, region_map


def test_rectangle_area_centroid_spread_perimeter_convexity_are_exact():
    image, region_map = _rectangle_image()
    s = region_statistics(image, region_map)
    assert s.shape == (2, 16)
    np.testing.assert_allclose(s[:, COL["area"]], [550 / 600, 50 / 600])
    # centroid of the rectangle: columns 10..19 -> mean 14.5 -> (14.5 + 0.5) / 30; rows 5..9 -> (7 + 0.5) / 20
    np.testing.assert_allclose(s[1, [COL["x"], COL["y"]]], [15 / 30, 7.5 / 20])
    np.testing.assert_allclose(s[1, COL["std_x"]], np.std(np.arange(10, 20)) / 30)
    np.testing.assert_allclose(s[1, COL["std_y"]], np.std(np.arange(5, 10)) / 20)
    # crack length: rectangle 2 (10 + 5) = 30; background: image border 100 plus the hole 30
    np.testing.assert_allclose(s[:, COL["boundary_per_area"]], [130 / 550, 30 / 50])
    np.testing.assert_allclose(s[:, COL["convexity"]], [550 / 600, 1.0])


def test_lab_mean_is_exact_and_constant_region_has_zero_spread_and_skewness():
    image, region_map = _rectangle_image()
    s = region_statistics(image, region_map)
    expected = rgb2lab(np.array([[[0.2, 0.4, 0.6], [0.9, 0.1, 0.1]]]))[0]
    np.testing.assert_allclose(s[:, [COL["L_mean"], COL["a_mean"], COL["b_mean"]]], expected, atol=1e-9)
    assert np.all(s[:, COL["L_std"]:] == 0.0)


def test_std_and_skewness_of_a_two_valued_region():
    # one region: 3/4 of the pixels grey 0.2, 1/4 grey 0.8 -> L takes two values with known moments
    image = np.full((8, 8, 3), 0.2)
    image[:2] = 0.8
    s = region_statistics(image, np.zeros((8, 8), dtype=int))
    lo, hi = rgb2lab(np.array([[[0.2] * 3, [0.8] * 3]]))[0, :, 0]
    values = np.array([lo] * 48 + [hi] * 16)
    std = values.std()
    skew = np.mean((values - values.mean()) ** 3) / std ** 3
    np.testing.assert_allclose(s[0, [COL["L_mean"], COL["L_std"], COL["L_skew"]]], [values.mean(), std, skew])
    assert skew > 0  # a few bright pixels: right-skewed


def test_convexity_of_an_l_shape():
    # L made of 3 unit squares: hull (0,0),(2,0),(2,1),(1,2),(0,2) has area 3.5, scaled by k for k x k blocks
    k = 4
    region_map = np.ones((2 * k + 2, 2 * k + 2), dtype=int)
    region_map[1:1 + 2 * k, 1:1 + k] = 0
    region_map[1:1 + k, 1:1 + 2 * k] = 0
    s = region_statistics(np.full(region_map.shape + (3,), 0.5), region_map)
    np.testing.assert_allclose(s[0, COL["convexity"]], 3 / 3.5)


def test_named_feature_sets_have_the_papers_dimensions_and_columns():
    assert [len(feature_names(n)) for n in ("carbonetto03", "gustafson07", "kueck04")] == [10, 16, 6]
    image, region_map = _rectangle_image()
    stats = region_statistics(image, region_map)
    for name, columns in FEATURE_SETS.items():
        X = region_features(image, region_map, name)
        np.testing.assert_array_equal(X, stats[:, [COL[c] for c in columns]])
    with pytest.raises(ValueError, match="features"):
        region_features(image, region_map, "duygulu02")


def test_bad_images_and_region_maps_are_clear_errors():
    image, region_map = _rectangle_image()
    with pytest.raises(ValueError, match="grayscale"):
        region_statistics(image[..., 0], region_map)
    with pytest.raises(ValueError, match="region_map: shape"):
        region_statistics(image, region_map[:10])
    gap = region_map * 2  # labels 0 and 2: region 1 is empty
    with pytest.raises(ValueError, match="region 1 has no pixel"):
        region_statistics(image, gap)
    bad = image.copy()
    bad[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        region_statistics(bad, region_map)


def test_standardizer_uses_training_statistics_and_keeps_constant_columns_finite():
    rng = np.random.default_rng(0)
    train = np.column_stack([rng.normal(3.0, 2.0, 50), np.full(50, 7.0)])
    scaler = fit_standardizer(train)
    z = standardize(train, scaler)
    np.testing.assert_allclose(z[:, 0].mean(), 0, atol=1e-12)
    np.testing.assert_allclose(z[:, 0].std(), 1)
    assert np.all(z[:, 1] == 0)
    test = np.array([[3.0, 8.0]])
    np.testing.assert_allclose(standardize(test, scaler), [[(3.0 - train[:, 0].mean()) / train[:, 0].std(), 1.0]])
    with pytest.raises(ValueError, match="columns"):
        standardize(np.ones((2, 3)), scaler)
