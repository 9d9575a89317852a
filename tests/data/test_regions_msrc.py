"""MSRC-v2 loader (issue 7): ground truth on hand-made maps, the split, the cache, and the loader end to end on a
tiny fake copy of the data set (so it runs without ../shared/data), plus checks on the real data when present."""
import pathlib

import numpy as np
import pytest
from PIL import Image

import zoo
from zoo.data import msrc
from zoo.data.regions import segmentation_params
from zoo.data.msrc import (MSRC_CLASSES, keywords_from_label_map, msrc_split, region_class_counts,
                           region_labels_from_counts)

GRASS, COW, HORSE = (MSRC_CLASSES.index(c) + 1 for c in ("grass", "cow", "horse"))


# ------------------------------------------------------------------------------------------ ground truth
def test_region_label_is_majority_of_labelled_pixels_and_mostly_void_is_unlabelled():
    region_map = np.array([[0, 0, 0, 1, 1, 1],
                           [0, 0, 0, 1, 1, 1],
                           [2, 2, 2, 2, 2, 2]])
    label_map = np.array([[GRASS, GRASS, COW, 0, 0, COW],
                          [0, 0, 0, 0, COW, COW],
                          [0, 0, 0, 0, HORSE, COW]])
    counts = region_class_counts(region_map, label_map)
    assert counts.shape == (3, 24)
    np.testing.assert_array_equal(counts[0, [0, GRASS, COW]], [3, 2, 1])
    vocabulary, mapping = msrc._class_mapping("all")
    labels = region_labels_from_counts(counts, mapping, min_labelled=0.5)
    # region 0: 3 of 6 pixels labelled (share 0.5 >= 0.5), majority grass (void excluded although void has most)
    # region 1: 3 of 6 labelled, all cow; region 2: 2 of 6 labelled -> mostly void -> -1
    assert [vocabulary[labels[0]], vocabulary[labels[1]], labels[2]] == ["grass", "cow", -1]
    assert region_labels_from_counts(counts, mapping, min_labelled=0.0)[2] == vocabulary.index("cow")  # tie: lower
    assert list(region_labels_from_counts(counts, mapping, min_labelled=0.6)) == [-1, -1, -1]
    # the 21-class setting turns horse pixels into void
    voc21, map21 = msrc._class_mapping("msrc21")
    assert len(voc21) == 21 and "horse" not in voc21 and "mountain" not in voc21
    image_counts = np.bincount(label_map.ravel(), minlength=24)
    assert keywords_from_label_map(image_counts, mapping, vocabulary) == ("grass", "cow", "horse")
    assert keywords_from_label_map(image_counts, map21, voc21) == ("grass", "cow")
    with pytest.raises(ValueError, match="label_map: shape"):
        region_class_counts(region_map, label_map[:2])
    with pytest.raises(ValueError, match="classes"):
        msrc._class_mapping("msrc20")


def test_split_is_seeded_stratified_by_row_and_disjoint():
    names = [f"{row}_{k}_s" for row in range(1, 6) for k in range(1, 11 + row)]
    train, test = msrc_split(names, test_fraction=0.3, seed=4)
    assert set(train) | set(test) == set(names) and not set(train) & set(test)
    for row in range(1, 6):
        n_row = 10 + row
        assert sum(n.startswith(f"{row}_") for n in test) == round(0.3 * n_row)
    assert msrc_split(names, 0.3, 4) == (train, test)
    assert msrc_split(names, 0.3, 5) != (train, test)
    with pytest.raises(ValueError, match="test_fraction"):
        msrc_split(names, 1.0)
    with pytest.raises(ValueError, match="seed"):
        msrc_split(names, 0.5, seed=-1)


# ------------------------------------------------------------------------------------------ a fake MSRC-v2
@pytest.fixture
def fake_msrc(tmp_path, monkeypatch):
    """A 6-image MSRC-v2 look-alike under tmp_path/data (rows 1 and 2), cache in tmp_path/cache."""
    root = tmp_path / "data" / "msrc_v2"
    for sub in ("images", "labels", "labels_cleaned"):
        (root / sub).mkdir(parents=True)
    (root / "classes.txt").write_text("0\tvoid\n" + "".join(f"{i}\t{c}\n" for i, c in enumerate(MSRC_CLASSES, 1)))
    rng = np.random.default_rng(0)
    for row, top in ((1, GRASS), (2, COW)):
        for k in (1, 2, 3):
            labels = np.full((48, 64), GRASS, dtype=np.uint8)
            labels[:24] = top if row == 2 else MSRC_CLASSES.index("sky") + 1
            labels[:, :4] = 0  # a void strip
            palette = {GRASS: (40, 160, 40), COW: (120, 70, 30), MSRC_CLASSES.index("sky") + 1: (90, 140, 230),
                       0: (0, 0, 0)}
            image = np.array([palette[v] for v in labels.ravel()], dtype=float).reshape(48, 64, 3)
            image = np.clip(image + rng.normal(0, 3, image.shape), 0, 255).astype(np.uint8)
            name = f"{row}_{k}_s"
            Image.fromarray(image).save(root / "images" / f"{name}.png")
            Image.fromarray(labels).save(root / "labels" / f"{name}.png")
            cleaned = labels.copy()
            cleaned[:, :4] = GRASS  # the cleaned annotation labels the strip
            Image.fromarray(cleaned).save(root / "labels_cleaned" / f"{name}.png")
    monkeypatch.setenv("ZOO_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("ZOO_CACHE", str(tmp_path / "cache"))
    return root


def test_loader_end_to_end_on_a_fake_copy(fake_msrc):
    options = dict(segmentation="slic", n_jobs=1, progress=False, test_fraction=1 / 3)
    train = zoo.load_dataset("msrc_v2", split="train", **options)
    test = zoo.load_dataset("msrc_v2", split="test", **options)
    assert train.n_images == 4 and test.n_images == 2
    assert train.X.shape[1] == 10 and np.all(np.isfinite(train.X))
    np.testing.assert_allclose(train.X.mean(axis=0), 0, atol=1e-9)  # standardized with the training statistics
    assert list(train.vocabulary) == list(MSRC_CLASSES)
    for regions in (train, test):
        labelled = regions.region_labels >= 0
        assert labelled.any()
        for image_id, label in zip(regions.image_ids[labelled], regions.region_labels[labelled]):
            assert regions.vocabulary[label] in regions.keywords[image_id]
    assert set(train.keywords[0]) == {"grass", "sky"}
    raw = zoo.load_dataset("msrc_v2", split="train", standardize=False, features="gustafson07", **options)
    assert raw.X.shape == (train.X.shape[0], 16)
    np.testing.assert_allclose(np.bincount(raw.image_ids, raw.X[:, 0]), 1.0)  # areas of an image sum to 1
    kueck = zoo.load_dataset("msrc_v2", split="test", features="kueck04", annotation="cleaned", **options)
    assert kueck.X.shape[1] == 6
    # the cleaned maps label the void strip, so no fewer regions are labelled than with the original maps
    assert (kueck.region_labels >= 0).sum() >= (test.region_labels >= 0).sum()


def test_cache_is_reused_and_keyed_by_the_segmentation_parameters(fake_msrc, monkeypatch):
    options = dict(segmentation="slic", n_jobs=1, progress=False)
    assert not msrc.is_cached("slic")
    first = zoo.load_dataset("msrc_v2", split="all", **options)
    assert msrc.is_cached("slic") and not msrc.is_cached("slic", {"n_segments": 6})
    assert not msrc.is_cached("ncut")
    assert msrc.cache_key("slic", {"a": 1}, ["x"]) != msrc.cache_key("slic", {"a": 2}, ["x"])
    cached = sorted(p.name for p in (fake_msrc.parents[1] / "cache").iterdir())
    assert len(cached) == 2  # the region table and the region maps

    def fail(task):
        raise AssertionError("recomputed although cached")
    monkeypatch.setattr(msrc, "_describe_image", fail)
    again = zoo.load_dataset("msrc_v2", split="all", **options)
    np.testing.assert_array_equal(first.X, again.X)
    with pytest.raises(AssertionError, match="recomputed"):
        zoo.load_dataset("msrc_v2", split="all", segmentation_params={"n_segments": 6}, **options)
    maps = msrc.msrc_region_maps("slic", names=["1_1_s"])
    assert maps["1_1_s"].shape == (48, 64)


def test_counts_form_blobs_and_dense_on_a_fake_copy(fake_msrc):
    options = dict(segmentation="slic", n_jobs=1, progress=False, test_fraction=1 / 3, form="counts")
    regions = zoo.load_dataset("msrc_v2", split="test", segmentation="slic", n_jobs=1, progress=False,
                               test_fraction=1 / 3)
    blobs = zoo.load_dataset("msrc_v2", split="test", n_visual_words=4, **options)
    assert blobs.words.shape == (2, 23) and blobs.visual_words.shape == (2, 4)
    np.testing.assert_array_equal(blobs.region_labels, regions.region_labels)
    np.testing.assert_array_equal(blobs.visual_words.sum(1), np.bincount(regions.image_ids))  # a token per region
    np.testing.assert_array_equal(blobs.words, regions.keyword_matrix())
    dense = zoo.load_dataset("msrc_v2", split="test", visual_words="dense", n_visual_words=8, **options)
    assert dense.visual_words.shape == (2, 8) and dense.region_visual_words.shape[0] == len(regions.image_ids)
    # DAISY centres every 8 pixels from 6 to size - 7: rows 6..38 (5) x cols 6..54 (7), each in one region
    np.testing.assert_array_equal(dense.visual_words.sum(1), 35)
    np.testing.assert_array_equal(dense.region_visual_words.sum(0), dense.visual_words.sum(0))
    with pytest.raises(ValueError, match="visual_words"):
        zoo.load_dataset("msrc_v2", visual_words="sift", **options)
    with pytest.raises(ValueError, match="dense_params"):
        zoo.load_dataset("msrc_v2", visual_words="dense", dense_params={"size": 3}, **options)


def test_reproduce_regions_fast_on_a_fake_copy(fake_msrc, tmp_path, capsys):
    from zoo.experiments.regions import reproduce

    out = tmp_path / "report"
    out.mkdir()
    report = reproduce(out, fast=True, n_jobs=1)
    printed = capsys.readouterr().out
    assert "using the fast SLIC segmentation" in printed and "word-frequency prior" in printed
    assert {p.name for p in out.iterdir()} == {"msrc_regions.png"}
    (table,), (figure,) = (section.items for section in report.sections)
    assert len(table.rows) == 4 and figure.path == out / "msrc_regions.png"


def test_bad_options_and_missing_data_are_clear_errors(fake_msrc, tmp_path, monkeypatch):
    for option, value in (("split", "validation"), ("annotation", "clean"), ("features", "sift"),
                          ("segmentation", "watershed"), ("form", "bags"), ("classes", "msrc20")):
        with pytest.raises(ValueError, match=option):
            zoo.load_dataset("msrc_v2", **{option: value, "progress": False})
    with pytest.raises(ValueError, match="n_visual_words"):
        zoo.load_dataset("msrc_v2", n_visual_words=10, progress=False)
    monkeypatch.setenv("ZOO_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="msrc_v2"):
        zoo.load_dataset("msrc_v2", segmentation="slic", progress=False)


# ------------------------------------------------------------------------------------------ the real data
def _real_root():
    try:
        return msrc.msrc_root()
    except FileNotFoundError:
        pytest.skip("MSRC-v2 not found (ZOO_DATA or ../shared/data)")


def test_real_images_ground_truth_matches_the_shipped_keyword_lists():
    root = _real_root()
    listed = dict(line.split("\t") for line in (root / "image_keywords.tsv").read_text().splitlines() if line)
    vocabulary, mapping = msrc._class_mapping("all")
    for name in ("1_1_s", "7_12_s", "15_3_s"):
        out = msrc._describe_image((name, "slic", segmentation_params("slic")))
        image_counts = out["original"].sum(axis=0)
        assert " ".join(keywords_from_label_map(image_counts, mapping, vocabulary)) == listed[name].strip()
        labels = region_labels_from_counts(out["original"], mapping)
        assert set(vocabulary[k] for k in labels[labels >= 0]) <= set(listed[name].split())
        assert out["statistics"].shape == (out["region_map"].max() + 1, 16)


@pytest.mark.slow
def test_real_default_loader_gives_thousands_of_regions_5_to_25_per_image():
    _real_root()
    regions = zoo.load_dataset("msrc_v2", split="train", n_jobs=2)
    per_image = np.bincount(regions.image_ids)
    assert regions.X.shape[0] > 2000 and np.median(per_image) >= 5 and per_image.max() <= 25
    labelled = regions.region_labels >= 0
    for image_id, label in zip(regions.image_ids[labelled], regions.region_labels[labelled]):
        assert regions.vocabulary[label] in regions.keywords[image_id]
