"""Bad input is refused before any computation, with a ValueError that names the field; files a user has are never
replaced unless asked. A table of cases (each from a careful user's trial) plus property-based tests (Hypothesis)."""
import json
import math
import pathlib

import jax
import numpy as np
import numpyro.distributions as dist
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zoo
from zoo.cli import main
from zoo.data import AnnotatedRegions, Bags, Matrix, MultimodalCounts
from zoo.data.files import read_mat, read_npy, read_npz
from zoo.data.mil import embedded_cluster_data, parallel_lines_data, ring_data
from zoo.core.options import check_common_options, seed_value
from zoo.core.priors import parse_prior

RNG = np.random.default_rng(0)
X6 = RNG.normal(size=(6, 2))
SEC2 = zoo.load_dataset("carbonetto03_sec2")


def _regions(**overrides):
    fields = dict(X=X6, image_ids=[0, 0, 1, 1, 2, 2], keywords=[{"a"}, {"b"}, {"a", "b"}], vocabulary=["a", "b"])
    fields.update(overrides)
    return AnnotatedRegions(**fields)


def _spec(model_id="carbonetto03.shrinkage_mixture", **options):
    return zoo.model(model_id, **options)


# (case id, call, field the message must name)
CASES = [
    # containers
    ("bags complex X", lambda: Bags(X6 + 1j, [0, 0, 1, 1, 2, 2]), "X"),
    ("bags string ids", lambda: Bags(X6, list("aabbcc")), "bag_ids"),
    ("bags id 10**13", lambda: Bags(X6, [0, 0, 1, 1, 2, 10**13]), "bag_ids"),
    ("bags float ids", lambda: Bags(X6, [0, 0, 1, 1, 2, 2.5]), "bag_ids"),
    ("bags gap in ids", lambda: Bags(X6, [0, 0, 1, 1, 3, 3]), "bag_ids"),
    ("bags negative id", lambda: Bags(X6, [0, 0, 1, 1, -1, 2]), "bag_ids"),
    ("bags NaN X", lambda: Bags(np.where(np.eye(6, 2) > 0, np.nan, X6), [0, 0, 1, 1, 2, 2]), "X"),
    ("bags inf X", lambda: Bags(np.full((6, 2), np.inf), [0, 0, 1, 1, 2, 2]), "X"),
    ("bags labels not 0/1", lambda: Bags(X6, [0, 0, 1, 1, 2, 2], bag_labels=[0, 2, 1]), "bag_labels"),
    ("bags fractions > 1", lambda: Bags(X6, [0, 0, 1, 1, 2, 2], fractions=[0.5, 1.5, 0.0]), "fractions"),
    ("bags group label", lambda: Bags(X6, [0, 0, 1, 1, 2, 2], group_labels=["negative", "mixed", "many"]),
     "group_labels"),
    ("bags 1-D X", lambda: Bags(np.ones(6), [0, 0, 1, 1, 2, 2]), "X"),
    ("bags empty X", lambda: Bags(np.ones((0, 2)), []), "X"),
    ("bags string X", lambda: Bags(np.array([["a", "b"]] * 6), [0, 0, 1, 1, 2, 2]), "X"),
    ("bags from_labels missing label", lambda: Bags.from_labels(X6, list("aabbcc"), bag_labels={"a": 1}),
     "bag_labels"),
    ("regions keyword outside vocabulary", lambda: _regions(keywords=[{"a"}, {"z"}, {"b"}]), "keywords"),
    ("regions image id out of range", lambda: _regions(image_ids=[0, 0, 1, 1, 2, 3]), "image_ids"),
    ("regions keywords a string", lambda: _regions(keywords="abc"), "keywords"),
    ("regions duplicate vocabulary", lambda: _regions(vocabulary=["a", "a"]), "vocabulary"),
    ("regions empty vocabulary", lambda: _regions(vocabulary=[], keywords=[(), (), ()]), "vocabulary"),
    ("regions label out of range", lambda: _regions(region_labels=[0, 1, 2, 0, 0, 0]), "region_labels"),
    ("regions complex X", lambda: _regions(X=X6 * 1j), "X"),
    ("counts (4, 0) words", lambda: MultimodalCounts(np.zeros((4, 0)), np.ones((4, 2))), "words"),
    ("counts negative", lambda: MultimodalCounts(-np.ones((4, 2)), np.ones((4, 2))), "words"),
    ("counts fractional", lambda: MultimodalCounts(np.full((4, 2), 0.5), np.ones((4, 2))), "words"),
    ("counts image mismatch", lambda: MultimodalCounts(np.ones((4, 2)), np.ones((3, 2))), "visual_words"),
    ("matrix inf", lambda: Matrix([[1.0, np.inf]]), "values"),
    ("matrix complex", lambda: Matrix([[1.0 + 1j, 2.0]]), "values"),
    ("matrix mask shape", lambda: Matrix([[1.0, 2.0]], mask=np.ones((2, 2), bool)), "mask"),
    ("matrix mask not bool", lambda: Matrix([[1.0, 2.0]], mask=np.ones((1, 2))), "mask"),
    ("matrix 3-D", lambda: Matrix(np.ones((2, 2, 2))), "values"),
    # generators
    ("ring group_size 0", lambda: ring_data(group_size=0), "group_size"),
    ("ring n -5", lambda: ring_data(n=-5), "n"),
    ("ring group_size > n", lambda: ring_data(n=4, group_size=5), "group_size"),
    ("ring share 2", lambda: ring_data(positive_share=2.0), "positive_share"),
    ("embedded n_groups 0", lambda: embedded_cluster_data(n_groups=0), "n_groups"),
    ("lines group_size 1", lambda: parallel_lines_data(group_size=1), "group_size"),
    # seeds
    ("seed 2**64", lambda: zoo.fit(_spec(), SEC2, seed=2**64), "seed"),
    ("seed -1", lambda: zoo.fit(_spec(), SEC2, seed=-1), "seed"),
    ("seed float", lambda: zoo.fit(_spec(), SEC2, seed=1.5), "seed"),
    ("seed bool", lambda: zoo.fit(_spec(), SEC2, seed=True), "seed"),
    ("seed string", lambda: zoo.fit(_spec(), SEC2, seed="0"), "seed"),
    ("seed key batch", lambda: seed_value(jax.random.split(jax.random.key(0), 2)), "seed"),
    ("seed float array", lambda: seed_value(jax.numpy.ones(2)), "seed"),
    # shared options, for every method (checked before the method runs)
    ("map_em num_chains 0", lambda: zoo.fit(_spec(), SEC2, num_chains=0), "num_chains"),
    ("map_em tol nan", lambda: zoo.fit(_spec(), SEC2, tol=float("nan")), "tol"),
    ("map_em tol string", lambda: zoo.fit(_spec(), SEC2, tol="small"), "tol"),
    ("map_em max_iter 0", lambda: zoo.fit(_spec(), SEC2, max_iter=0), "max_iter"),
    ("map_em max_iter float", lambda: zoo.fit(_spec(), SEC2, max_iter=10.0), "max_iter"),
    ("ml_em reg_covar -1", lambda: zoo.fit(_spec(), SEC2, method="ml_em", reg_covar=-1.0), "reg_covar"),
    ("map_em init_means NaN", lambda: zoo.fit(_spec(), SEC2, init_means=np.full((3, 6), np.nan)), "init_means"),
    ("map_em init_means shape", lambda: zoo.fit(_spec(), SEC2, init_means=np.zeros((2, 6))), "init_means"),
    ("map_em progress_bar 'yes'", lambda: zoo.fit(_spec(), SEC2, progress_bar="yes"), "progress_bar"),
    ("map_em unknown option", lambda: zoo.fit(_spec(), SEC2, bogus=1), "bogus"),
    ("nuts num_chains 0", lambda: zoo.fit(_spec(), SEC2, method="nuts", num_chains=0), "num_chains"),
    ("nuts num_samples -1", lambda: zoo.fit(_spec(), SEC2, method="nuts", num_samples=-1), "num_samples"),
    ("nuts unknown option", lambda: zoo.fit(_spec(), SEC2, method="nuts", colour="red"), "colour"),
    ("map num_chains 0", lambda: zoo.fit(_spec(), SEC2, method="map", num_chains=0), "num_chains"),
    ("svi num_steps 0", lambda: zoo.fit(_spec(), SEC2, method="svi", num_steps=0), "num_steps"),
    ("svi learning_rate -1", lambda: zoo.fit(_spec(), SEC2, method="svi", learning_rate=-1.0), "learning_rate"),
    ("unknown method", lambda: zoo.fit(_spec(), SEC2, method="gibbs"), "method"),
    ("ross03 t_start nan", lambda: zoo.fit(zoo.model("ross03.mcvq"), zoo.load_dataset("shapes").matrix,
                                           t_start=float("nan")), "t_start"),
    ("ross03 sigma_floor 0", lambda: zoo.fit(zoo.model("ross03.mcvq"), zoo.load_dataset("shapes").matrix,
                                             sigma_floor=0.0), "sigma_floor"),
    ("kueck04 num_warmup -1", lambda: zoo.fit(zoo.model("kueck04.hybrid"), ring_data(n=20), num_warmup=-1),
     "num_warmup"),
    ("gustafson07 thinning 0", lambda: zoo.fit(zoo.model("gustafson07.fs"), _regions(), thinning=0), "thinning"),
    ("yakhnenko chunk 0", lambda: zoo.fit(zoo.model("yakhnenko.mom_lda"), zoo.load_dataset("yakhnenko_synthetic"),
                                          chunk=0), "chunk"),
    ("yakhnenko chunk -1", lambda: zoo.fit(zoo.model("yakhnenko.mom_hdp"), zoo.load_dataset("yakhnenko_synthetic"),
                                           chunk=-1), "chunk"),
    ("yakhnenko tol nan", lambda: zoo.fit(zoo.model("yakhnenko.mom_lda"), zoo.load_dataset("yakhnenko_synthetic"),
                                          tol=float("nan")), "tol"),
    ("kueck04 width 'wide'", lambda: zoo.model("kueck04.hybrid", width="wide"), "width"),
    ("kueck04 width -1", lambda: zoo.model("kueck04.hybrid", width=-1.0), "width"),
    # model options
    ("model unknown option", lambda: zoo.model("carbonetto03.shrinkage_mixture", colour="red"), "colour"),
    ("model n_components 0", lambda: zoo.model("carbonetto03.shrinkage_mixture", n_components=0), "n_components"),
    ("model covariance", lambda: zoo.model("carbonetto03.shrinkage_mixture", covariance="dense"), "covariance"),
    ("model unknown id", lambda: zoo.model("carbonetto03.nope"), "model"),
    ("gustafson07 unknown option", lambda: zoo.model("gustafson07.fs", colour=1), "colour"),
    ("kueck04 unknown option", lambda: zoo.model("kueck04.hybrid", colour=1), "colour"),
    ("yakhnenko unknown option", lambda: zoo.model("yakhnenko.mom_lda", colour=1), "colour"),
    ("ross03 n_vqs 0", lambda: zoo.model("ross03.mcvq", n_vqs=0), "n_vqs"),
    # priors
    ("prior 1e309", lambda: zoo.model("carbonetto03.shrinkage_mixture", priors={"tau2": "InverseGamma(1.0, 1e309)"}),
     "tau2"),
    ("prior 400 digits", lambda: zoo.model("carbonetto03.shrinkage_mixture",
                                           priors={"tau2": f"InverseGamma(1.0, {'9' * 400})"}), "tau2"),
    ("prior batch shape", lambda: zoo.model("carbonetto03.shrinkage_mixture",
                                            priors={"tau2": "Beta([1.0, 2.0], [1.0, 1.0])"}), "tau2"),
    ("prior outside support", lambda: zoo.model("carbonetto03.shrinkage_mixture",
                                                priors={"tau2": "InverseGamma(-1.0, 1.0)"}), "tau2"),
    ("prior object inf", lambda: zoo.model("kueck04.hybrid", priors={"delta2": dist.InverseGamma(0.5, math.inf)}),
     "delta2"),
    ("prior delta2 1e309", lambda: zoo.model("kueck04.hybrid", priors={"delta2": "InverseGamma(0.5, 1e309)"}),
     "delta2"),
    ("prior code", lambda: zoo.model("carbonetto03.shrinkage_mixture", priors={"tau2": "__import__('os')"}), "tau2"),
    ("prior attribute", lambda: zoo.model("carbonetto03.shrinkage_mixture", priors={"tau2": "os.system('x')"}),
     "tau2"),
    ("prior unknown family", lambda: zoo.model("carbonetto03.shrinkage_mixture", priors={"tau2": "Wishart(1.0)"}),
     "tau2"),
    ("prior unknown site", lambda: zoo.model("carbonetto03.shrinkage_mixture", priors={"beta": "Normal(0.0, 1.0)"}),
     "beta"),
    ("prior a number", lambda: zoo.model("carbonetto03.shrinkage_mixture", priors={"tau2": 3.0}), "tau2"),
    ("prior kwargs splat", lambda: zoo.model("carbonetto03.shrinkage_mixture",
                                             priors={"tau2": "InverseGamma(**{'a': 1})"}), "tau2"),
    ("prior string arg", lambda: zoo.model("carbonetto03.shrinkage_mixture",
                                           priors={"tau2": "InverseGamma('1', 1.0)"}), "tau2"),
    ("priors not a mapping", lambda: zoo.model("carbonetto03.shrinkage_mixture", priors=[1, 2]), "priors"),
    ("priors TOML missing", lambda: zoo.model("carbonetto03.shrinkage_mixture", priors="no_such.toml"), "priors"),
    # data given to a fit
    ("fit data wrong container", lambda: zoo.fit(zoo.model("kueck04.hybrid"), SEC2), "data"),
    ("fit X with NaN", lambda: zoo.fit(_spec(), np.where(np.eye(200, 6) > 0, np.nan, SEC2)), "X"),
    ("fit X 1-D", lambda: zoo.fit(_spec(), SEC2[:, 0]), "X"),
    ("fit too few points", lambda: zoo.fit(_spec(), SEC2[:2]), "X"),
    ("user program data not dict", lambda: zoo.fit(lambda y: None, SEC2, method="nuts"), "data"),
    ("user program bad method", lambda: zoo.fit(lambda y: None, {"y": SEC2}, method="map_em"), "method"),
    ("spec not a model", lambda: zoo.fit(3, SEC2), "spec"),
    ("load unknown data set", lambda: zoo.load_dataset("no_such_set"), "no_such_set"),
]


@pytest.mark.parametrize("call, field", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_a_value_error_naming_the_field(call, field):
    with pytest.raises(ValueError) as err:
        call()
    assert field in str(err.value), str(err.value)


@pytest.mark.extended
def test_predicting_with_other_features_names_X():
    fit = zoo.fit(_spec(covariance="diag"), SEC2, method="map", num_steps=50, progress_bar=False)
    with pytest.raises(ValueError, match="X: the model was fitted on 6 features"):
        fit.predict(np.ones((5, 3)))


# ------------------------------------------------------------------------------------------------- files
def _bad_files(tmp_path: pathlib.Path) -> dict[str, pathlib.Path]:
    good = tmp_path / "good.npz"
    np.savez(good, X=np.ones((3, 2)))
    files = {"text named npz": tmp_path / "text.npz", "truncated npz": tmp_path / "trunc.npz",
             "empty npz": tmp_path / "empty.npz", "npy named npz": tmp_path / "array.npz",
             "object npy": tmp_path / "object.npy", "truncated npy": tmp_path / "trunc.npy",
             "npz named npy": tmp_path / "archive.npy", "text mat": tmp_path / "text.mat"}
    files["text named npz"].write_text("X = [1, 2, 3]\n")
    files["truncated npz"].write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    files["empty npz"].write_bytes(b"")
    np.save(tmp_path / "plain.npy", np.ones(3))
    files["npy named npz"].write_bytes((tmp_path / "plain.npy").read_bytes())
    np.save(files["object npy"], np.array([{"a": 1}], dtype=object), allow_pickle=True)
    files["truncated npy"].write_bytes((tmp_path / "plain.npy").read_bytes()[:100])
    files["npz named npy"].write_bytes(good.read_bytes())
    files["text mat"].write_text("not matlab")
    return files


@pytest.mark.parametrize("kind", ["text named npz", "truncated npz", "empty npz", "npy named npz", "object npy",
                                  "truncated npy", "npz named npy", "text mat"])
def test_damaged_files_are_a_value_error_naming_the_file(kind, tmp_path):
    path = _bad_files(tmp_path)[kind]
    reader = {".npz": read_npz, ".npy": read_npy, ".mat": lambda p: read_mat(p, ("X",))}[path.suffix]
    with pytest.raises(ValueError) as err:
        reader(path)
    assert str(path) in str(err.value)
    assert "pickle" not in str(err.value) or kind == "object npy", "a misleading pickle message"


def test_an_archive_without_the_array_names_what_is_missing(tmp_path):
    np.savez(tmp_path / "musk1.npz", bag_ids=np.zeros(3))
    with pytest.raises(ValueError, match="no array named 'X'"):
        read_npz(tmp_path / "musk1.npz", required=("X", "bag_ids"))


def test_a_damaged_real_data_set_names_the_file(tmp_path, monkeypatch):
    (tmp_path / "mil_benchmarks").mkdir()
    (tmp_path / "mil_benchmarks" / "musk1.npz").write_text("oops")
    monkeypatch.setenv("ZOO_DATA", str(tmp_path))
    with pytest.raises(ValueError, match="musk1.npz"):
        zoo.load_dataset("musk1")


# ------------------------------------------------------------------------------------------- command line
@pytest.mark.parametrize("argv, field", [
    (["fit", "carbonetto03.shrinkage_mixture", "--data", "carbonetto03_sec2", "--option", "colour=red"], "colour"),
    (["fit", "carbonetto03.shrinkage_mixture", "--data", "carbonetto03_sec2", "--option", "n_components"],
     "--option"),
    (["fit", "carbonetto03.shrinkage_mixture", "--data", "nope.npy"], "nope.npy"),
    (["fit", "carbonetto03.shrinkage_mixture", "--data", "no_such_set"], "no_such_set"),
    (["fit", "carbonetto03.shrinkage_mixture", "--data", "carbonetto03_sec2", "--prior", "tau2=1e309"], "tau2"),
    (["fit", "carbonetto03.shrinkage_mixture", "--data", "carbonetto03_sec2", "--seed", "-1"], "seed"),
    (["fit", "carbonetto03.shrinkage_mixture", "--data", "carbonetto03_sec2", "--chains", "0"], "num_chains"),
    (["fit", "no.such_model", "--data", "carbonetto03_sec2"], "no.such_model"),
    (["fit", "carbonetto03.shrinkage_mixture", "--data", "carbonetto03_sec2", "--method", "gibbs"], "gibbs"),
    (["reproduce", "no_such_paper"], "no_such_paper"),
    (["bench", "no_such_bench"], "no_such_bench"),
])
def test_cli_user_errors_exit_2_in_one_line(argv, field, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and field in err and "Traceback" not in err, err


def test_cli_never_replaces_a_file_unless_forced(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    default = tmp_path / "carbonetto03_shrinkage_mixture_default.nc"
    args = ["fit", "carbonetto03.shrinkage_mixture", "--data", "carbonetto03_sec2", "--chains", "1"]
    assert main(args) == 0 and default.exists()
    stamp = default.read_bytes()
    assert main(args) == 2, "a second run with the default name must not replace the first"
    assert default.read_bytes() == stamp
    assert main(args + ["--force"]) == 0
    out = tmp_path / "regions"
    (tmp_path / "regions.npz").write_bytes(b"precious")
    assert main(["regions", str(tmp_path), "--captions", str(tmp_path / "c.txt"), "--out", str(out)]) == 2
    assert "regions.npz" in capsys.readouterr().err and (tmp_path / "regions.npz").read_bytes() == b"precious"


def test_cli_one_chain_summary_has_no_nan_warning(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with _no_runtime_warning():
        assert main(["fit", "carbonetto03.shrinkage_mixture", "--data", "carbonetto03_sec2", "--chains", "1"]) == 0
    out = capsys.readouterr().out
    assert "NaN" not in out and "restarts" in out


class _no_runtime_warning:
    def __enter__(self):
        import warnings
        self._catch = warnings.catch_warnings(record=True)
        self.caught = self._catch.__enter__()
        warnings.simplefilter("always")
        return self

    def __exit__(self, *exc):
        self._catch.__exit__(*exc)
        runtime = [w for w in self.caught if issubclass(w.category, RuntimeWarning)]
        assert not runtime, [str(w.message) for w in runtime]


# --------------------------------------------------------------------------------------- property-based
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=40))
def test_prior_strings_either_parse_or_raise_value_error(text):
    try:
        prior = parse_prior(text)
    except ValueError as err:
        assert "priors" in str(err)
    else:
        assert isinstance(prior, dist.Distribution)


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.integers(), st.floats(allow_nan=True), st.booleans(), st.text(max_size=5), st.none()))
def test_seeds_are_integers_in_range_or_a_value_error(seed):
    in_range = isinstance(seed, int) and not isinstance(seed, bool) and 0 <= seed <= 2**32 - 1
    if in_range:
        assert seed_value(seed) == seed
    else:
        with pytest.raises(ValueError, match="seed"):
            seed_value(seed)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["num_chains", "num_samples", "max_iter", "num_steps", "thinning", "tol", "learning_rate",
                        "num_warmup", "progress_bar", "chain_method"]),
       st.one_of(st.integers(-5, 5), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=3),
                 st.booleans(), st.none()))
def test_shared_options_are_checked_with_the_option_named(name, value):
    try:
        checked = check_common_options({name: value})[name]
    except ValueError as err:
        assert str(err).startswith(f"{name}:")
    else:
        assert checked == value and checked is not None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 4), min_size=1, max_size=12), st.sampled_from(["float", "int", "complex", "str"]))
def test_bags_accept_only_contiguous_integer_ids_and_own_their_arrays(ids, dtype):
    X = np.ones((len(ids), 2))
    ids_arr = np.asarray(ids).astype({"float": float, "int": int, "complex": complex, "str": str}[dtype])
    contiguous = set(ids) == set(range(max(ids) + 1))
    if dtype in ("int", "float") and contiguous:
        bags = Bags(X, ids_arr)
        X[0, 0] = np.nan
        assert np.isfinite(bags.X).all() and not bags.X.flags.writeable
    else:
        with pytest.raises(ValueError, match="bag_ids"):
            Bags(X, ids_arr)

