"""Bring your own photos (issue 7): folder + captions -> AnnotatedRegions; bad input: an error or a counted skip."""

import numpy as np
import pytest
from PIL import Image

import zoo
from zoo.data.photos import load_regions, photos_to_regions, read_captions


def _photo(seed, size=(40, 56)):
    rng = np.random.default_rng(seed)
    image = np.zeros(size + (3,), dtype=np.uint8)
    image[: size[0] // 2] = (70, 130, 220)   # sky
    image[size[0] // 2:] = (40, 150, 40)     # grass
    return np.clip(image + rng.normal(0, 4, image.shape), 0, 255).astype(np.uint8)


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "photos"
    d.mkdir()
    Image.fromarray(_photo(0)).save(d / "a.png")
    Image.fromarray(_photo(1)).save(d / "b.jpg", quality=95)
    (d / "sub").mkdir()
    Image.fromarray(_photo(2)).save(d / "sub" / "c.png")
    (tmp_path / "captions.txt").write_text("# my holiday\na.png\tsky grass\nb sky, grass\n\nsub/c.png\tgrass\n")
    return d


def test_folder_and_captions_to_regions(folder):
    regions, details = photos_to_regions(folder, folder.parent / "captions.txt", segmentation="slic",
                                         progress=False, return_details=True)
    assert regions.n_images == 3 and details.names == ["a.png", "b", "sub/c.png"] and details.skipped == []
    assert list(regions.vocabulary) == ["grass", "sky"]
    assert regions.keywords[1] == ("sky", "grass") and regions.keywords[2] == ("grass",)
    assert regions.X.shape[1] == 10 and np.all(np.isfinite(regions.X))
    np.testing.assert_allclose(regions.X.mean(axis=0), 0, atol=1e-9)
    assert [int(m.max()) + 1 for m in details.region_maps] == list(np.bincount(regions.image_ids))
    same = zoo.load_dataset("photos", folder=folder, captions=folder.parent / "captions.txt",
                            segmentation="slic", progress=False)
    np.testing.assert_array_equal(same.X, regions.X)


def test_every_problem_is_reported_or_counted(folder):
    Image.fromarray(_photo(3)[..., 0]).save(folder / "grey.png")       # grayscale
    (folder / "broken.png").write_bytes(b"not an image")               # unreadable
    Image.fromarray(_photo(4)).save(folder / "uncaptioned.png")         # no caption line
    captions = folder.parent / "captions2.txt"
    captions.write_text("a.png\tsky grass\nb.jpg\tsky\ngrey.png\tsky\nbroken.png\tsky\nmissing.png\tsky\n"
                        "sub/c.png\tcar\n")
    with pytest.raises(ValueError) as err:
        photos_to_regions(folder, captions, segmentation="slic", vocabulary=["sky", "grass"], progress=False)
    message = str(err.value)
    for expected in ("5 problem(s)", "missing.png", "not in the folder", "uncaptioned.png", "no caption",
                     "grayscale", "unreadable", "'car' is outside the vocabulary"):
        assert expected in message
    with pytest.warns(UserWarning, match="skipped 5 image"):
        regions, details = photos_to_regions(folder, captions, segmentation="slic", vocabulary=["sky", "grass"],
                                             on_problem="skip", progress=False, return_details=True)
    assert details.names == ["a.png", "b.jpg"] and len(details.skipped) == 5
    assert regions.n_images == 2


def test_large_photos_are_shrunk_and_exif_rotation_is_applied(tmp_path):
    d = tmp_path / "big"
    d.mkdir()
    Image.fromarray(_photo(5, size=(300, 200))).save(d / "tall.png")
    wide = Image.fromarray(_photo(6, size=(100, 160)))
    exif = wide.getexif()
    exif[0x0112] = 6  # orientation: rotate 90 degrees clockwise to display
    wide.save(d / "rotated.jpg", exif=exif, quality=95)
    (tmp_path / "c.txt").write_text("tall.png\tsky\nrotated.jpg\tgrass\n")
    _, details = photos_to_regions(d, tmp_path / "c.txt", segmentation="slic", max_side=150, progress=False,
                                   return_details=True)
    assert details.region_maps[0].shape == (150, 100)   # 300 x 200 shrunk to a longer side of 150
    assert details.region_maps[1].shape == (150, 94)    # 100 x 160 stored, displayed upright as 160 x 100
    with pytest.raises(ValueError, match="max_side"):
        photos_to_regions(d, tmp_path / "c.txt", max_side=2)


def test_bad_caption_files_and_options(folder, tmp_path):
    dup = tmp_path / "dup.txt"
    dup.write_text("a.png sky\na.png grass\n")
    with pytest.raises(ValueError, match="line 2 lists 'a.png' a second time"):
        read_captions(dup)
    with pytest.raises(ValueError, match="captions: file"):
        read_captions(tmp_path / "none.txt")
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n")
    with pytest.raises(ValueError, match="no caption lines"):
        read_captions(empty)
    with pytest.raises(ValueError, match="on_problem"):
        photos_to_regions(folder, folder.parent / "captions.txt", on_problem="ignore")
    with pytest.raises(ValueError, match="folder"):
        photos_to_regions(tmp_path / "nope", folder.parent / "captions.txt")


def test_command_line_writes_a_file_that_loads_back(folder, tmp_path, capsys):
    from zoo.cli import build_parser
    out = tmp_path / "regions.npz"
    args = build_parser().parse_args(["regions", str(folder), "--captions", str(folder.parent / "captions.txt"), "--features",
                              "kueck04", "--segmentation", "slic", "--out", str(out)])
    assert args.run(args) == 0
    assert "3 images" in capsys.readouterr().out
    regions = load_regions(out)
    assert regions.X.shape[1] == 6 and regions.image_names == ["a.png", "b", "sub/c.png"]


def test_regions_file_fits_and_predicts_from_the_command_line(folder, tmp_path, capsys):
    # issue 31: `zoo regions` then `zoo fit --data regions.npz` (was: unknown data set 'regions.npz'), `zoo predict`
    from zoo.cli import main
    regions_file = tmp_path / "regions.npz"
    assert main(["regions", str(folder), "--captions", str(folder.parent / "captions.txt"), "--segmentation", "slic",
                 "--out", str(regions_file)]) == 0
    regions = zoo.load_dataset(str(regions_file))
    assert regions.image_names == ["a.png", "b", "sub/c.png"]
    fit_file = tmp_path / "fit.nc"
    argv = ["fit", "carbonetto03.translation", "--data", str(regions_file), "--chains", "1", "--option",
            "max_iter=20", "--out", str(fit_file)]
    assert main(argv) == 0, capsys.readouterr().err
    assert main(["predict", str(fit_file), "--data", str(regions_file), "--out", str(tmp_path / "p.npz")]) == 0
    assert "word_proba" in capsys.readouterr().out
    # a folder of photos: its captions file by --captions, else a clear error (was: internal TypeError)
    code = main(["fit", "carbonetto03.translation", "--data", str(folder), "--out", str(tmp_path / "f2.nc")])
    assert code == 2 and "captions" in capsys.readouterr().err
    code = main(["fit", "carbonetto03.translation", "--data", str(folder), "--captions",
                 str(folder.parent / "captions.txt"), "--chains", "1", "--option", "max_iter=20", "--out",
                 str(tmp_path / "f2.nc")])
    assert code == 0, capsys.readouterr().err
    # a leaderboard needs true region labels, which photos lack: said so in one line
    assert main(["leaderboard", "--data", str(regions_file), "--fast", "--out", str(tmp_path / "lb")]) == 2
    assert "no region labels" in capsys.readouterr().err
