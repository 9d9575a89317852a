"""Your own data in (issue 31): tables (pandas DataFrame or CSV with a header, string ids of any kind) -> every
container; container files (what `zoo regions` writes) -> `zoo.load_dataset(path)`, `zoo fit`, `zoo predict`."""
import numpy as np
import pytest

import zoo
from zoo.cli import main
from zoo.data import AnnotatedRegions, Bags, Matrix, MultimodalCounts, load_container, read_table, save_container
from zoo.data.container_files import to_container

pd = pytest.importorskip("pandas")


def _bags_frame():
    return pd.DataFrame({"molecule": ["MOL-7", "MOL-7", "x", "MOL-7", "y y", "x"],
                         "active": [1, 1, 0, 1, 1, 0], "f0": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
                         "f1": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})


def test_bags_from_labels_takes_pandas_string_ids():
    # the issue: AttributeError: 'str' object has no attribute 'item'
    df = _bags_frame()
    bags, names = Bags.from_labels(df[["f0", "f1"]].to_numpy(), df.molecule.to_numpy(),
                                   bag_labels={"MOL-7": 1, "x": 0, "y y": 1})
    assert names == ["MOL-7", "x", "y y"] and list(bags.bag_labels) == [1, 0, 1]
    assert list(bags.bag_ids) == [0, 0, 1, 0, 2, 1]


def test_bags_from_a_dataframe_and_a_csv_with_header(tmp_path):
    df = _bags_frame()
    bags = Bags.from_table(df, bag="molecule", label="active")
    assert bags.bag_names == ["MOL-7", "x", "y y"] and bags.X.shape == (6, 2)
    np.testing.assert_array_equal(bags.bag_labels, [1, 0, 1])
    df.to_csv(tmp_path / "bags.csv", index=False)
    table = zoo.load_dataset(str(tmp_path / "bags.csv"))          # a header row: a Table, not a refusal
    same = to_container(table, "Bags", {"bag": "molecule", "label": "active"})
    np.testing.assert_array_equal(same.X, bags.X)
    assert same.bag_names == bags.bag_names


def test_bag_level_column_must_hold_one_value_per_bag():
    df = _bags_frame()
    df.loc[3, "active"] = 0
    with pytest.raises(ValueError, match="'MOL-7' two values"):
        Bags.from_table(df, bag="molecule", label="active")
    with pytest.raises(ValueError, match="bag: DataFrame has no column 'bag'; its columns: molecule"):
        Bags.from_table(df)


def test_leftover_text_column_is_named_not_dropped():
    df = _bags_frame().assign(note=["a", "b", "c", "d", "e", "f"])
    with pytest.raises(ValueError, match="'note' .* is text"):
        Bags.from_table(df, bag="molecule", label="active")


def test_regions_from_a_dataframe_with_string_image_ids():
    df = pd.DataFrame({"photo": ["beach 1.jpg", "beach 1.jpg", "IMG_2", "IMG_2"],
                       "words": ["sky; sea", "", "grass", "grass"], "truth": ["sky", "sea", "grass", ""],
                       "r": [0.1, 0.5, 0.2, 0.3], "g": [0.3, 0.2, 0.9, 0.8]})
    regions = AnnotatedRegions.from_table(df, image="photo", keywords="words", region_label="truth")
    assert regions.image_names == ["beach 1.jpg", "IMG_2"] and regions.vocabulary == ["grass", "sea", "sky"]
    assert regions.keywords == [("sky", "sea"), ("grass",)]
    np.testing.assert_array_equal(regions.region_labels, [2, 1, 0, -1])
    df.loc[3, "words"] = "tree"
    with pytest.raises(ValueError, match="two keyword lists"):
        AnnotatedRegions.from_table(df, image="photo", keywords="words")


def test_matrix_and_counts_from_dataframes():
    m = Matrix.from_table(pd.DataFrame({"a": [1.0, None, 3.0], "b": [2.0, 3.0, None]}))
    assert m.mask.sum() == 4
    with pytest.raises(ValueError, match="'who' .* text"):
        Matrix.from_table(pd.DataFrame({"who": ["u1", "u2"], "a": [1.0, 2.0]}))
    assert Matrix.from_table(pd.DataFrame({"who": ["u1", "u2"], "a": [1.0, 2.0]}), columns=["a"]).values.shape == (2, 1)
    counts = MultimodalCounts.from_table(pd.DataFrame({"img": ["p-1", "p-2"], "w_sky": [1, 0], "w_sea": [2, 1],
                                                        "v0": [3, 0], "v1": [0, 4]}),
                                         words="w_", visual_words=["v0", "v1"], image="img")
    assert counts.word_vocabulary == ["w_sky", "w_sea"] and counts.visual_words.shape == (2, 2)


def test_csv_tables_need_no_pandas(tmp_path):
    (tmp_path / "t.csv").write_text("bag,label,f0\nb-1,1,0.5\nb-1,1,0.7\nb-2,0,\n")
    table = read_table(tmp_path / "t.csv")
    assert not table.numeric("bag") and table.numeric("f0") and np.isnan(table.column("f0")[2])
    with pytest.raises(ValueError, match="NaN"):     # a missing feature of a bag is refused, not dropped
        Bags.from_table(table, label="label")


@pytest.mark.parametrize("container", [
    Bags(X=np.ones((3, 2)), bag_ids=[0, 0, 1], bag_labels=[1, 0], group_labels=["mixed", "negative"],
         bag_names=["a", "b"]),
    AnnotatedRegions(X=np.ones((3, 2)), image_ids=[0, 1, 1], keywords=[("a",), ("a", "b")], vocabulary=["a", "b"],
                     region_labels=[0, -1, 1], image_names=["x.jpg", "y.jpg"]),
    MultimodalCounts(words=np.ones((2, 3)), visual_words=np.ones((2, 4)), word_vocabulary=["p", "q", "r"]),
    Matrix(values=np.array([[1.0, np.nan], [2.0, 3.0]])),
])
def test_container_files_round_trip_through_load_dataset(container, tmp_path):
    path = save_container(tmp_path / "data", container)
    for back in (load_container(path), zoo.load_dataset(str(path)), zoo.load_dataset(path)):
        assert type(back) is type(container)
        for field in container.__dataclass_fields__:
            a, b = getattr(container, field), getattr(back, field)
            if isinstance(a, np.ndarray):
                np.testing.assert_array_equal(a, b)
            else:
                assert a == b, field
    with pytest.raises(ValueError, match="exists"):
        save_container(path, container)


def test_photos_loader_without_folder_is_a_clear_error():
    # the issue: TypeError: load_photos() missing 2 required positional arguments
    with pytest.raises(ValueError, match="name the folder"):
        zoo.load_dataset("photos")
    with pytest.raises(ValueError, match="unknown option 'nope'"):
        zoo.load_dataset("carbonetto03_sec2", nope=1)


def test_cli_fits_a_bags_csv_with_column_options(tmp_path, capsys):
    rng = np.random.default_rng(0)
    rows = ["molecule,active,f0,f1"]
    for b in range(12):
        for _ in range(4):
            x = rng.normal(size=2) + (2.0 if b % 2 else 0.0)
            rows.append(f"mol-{b:02d},{b % 2},{x[0]:.4f},{x[1]:.4f}")
    (tmp_path / "bags.csv").write_text("\n".join(rows) + "\n")
    out = tmp_path / "fit.nc"
    code = main(["fit", "kueck04.constraint", "--data", str(tmp_path / "bags.csv"), "--column", "bag=molecule",
                 "--column", "label=active", "--num-samples", "20",
                 "--num-warmup", "10", "--chains", "1", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert out.exists()
    # warnings: one line each, no source line of the zoo (the issue: it pointed at zoo/cli.py:131)
    assert err.count("zoo fit: warning: ConvergenceWarning") == 1 and ".py:" not in err
    # the method's options through --option too (the issue: num_samples: unknown option of model ...)
    code = main(["fit", "kueck04.constraint", "--data", str(tmp_path / "bags.csv"), "--column", "bag=molecule",
                 "--column", "label=active", "--option", "num_samples=20", "--option", "num_warmup=10",
                 "--chains", "1", "--out", str(tmp_path / "fit2.nc")])
    assert code == 0, capsys.readouterr().err
    code = main(["fit", "kueck04.constraint", "--data", "kueck04_ring", "--option", "num_samples=20",
                 "--num-samples", "30", "--out", str(tmp_path / "fit3.nc")])
    assert code == 2 and "give it once" in capsys.readouterr().err
    code = main(["fit", "kueck04.constraint", "--data", "kueck04_ring", "--option", "nope=1",
                 "--out", str(tmp_path / "fit3.nc")])
    assert code == 2 and "neither an option of model" in capsys.readouterr().err
    code = main(["fit", "kueck04.constraint", "--data", str(tmp_path / "bags.csv"), "--column", "image=molecule",
                 "--out", str(tmp_path / "other.nc")])
    assert code == 2 and "'image' is not a column role of Bags" in capsys.readouterr().err


def test_cli_bad_prior_is_a_user_error_not_an_internal_one(tmp_path, capsys):
    # the issue: gustafson07.fs with mu ~ Normal -> "internal error AttributeError ... please report it", exit 1
    code = main(["fit", "gustafson07.fs", "--data", "gustafson07_sec6", "--prior", "mu=Normal(0.0, 1.0)",
                 "--out", str(tmp_path / "f.nc")])
    err = capsys.readouterr().err
    assert code == 2 and "priors['mu']" in err and "ConceptMean" in err and "internal error" not in err
    code = main(["fit", "kueck04.constraint", "--data", "kueck04_ring", "--prior", "tau=Normal(0.0, 1.0)",
                 "--out", str(tmp_path / "f.nc")])
    err = capsys.readouterr().err
    assert code == 2 and "generic" not in err and "Beta" in err
