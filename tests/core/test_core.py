"""The foundation: priors parser, registry, data containers, results adapter, user programs."""
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import zoo
from zoo.data import AnnotatedRegions, Bags, Matrix, MultimodalCounts
from zoo.core.priors import parse_prior, resolve_priors


@pytest.mark.parametrize("text", [
    "__import__('os')", "os.system('ls')", "InverseGamma(0.5, b)", "InverseGamma(0.5, 1+1)",
    "Normal(0, 1).sample()", "lambda: 1", "InverseGamma", "InverseGamma(*[1, 2])", "Normal(0, 1); 1",
    "Wishart(1, 2)", "InverseGamma(True, 1)", "InverseGamma('1', 1)", "", "InverseGamma(-1, 1)",
])
def test_prior_parser_refuses(text):
    with pytest.raises(ValueError):
        parse_prior(text)


def test_prior_parser_accepts_numbers_lists_and_keywords():
    d = parse_prior("InverseGamma(0.5, 2)")
    assert isinstance(d, dist.InverseGamma) and float(d.concentration) == 0.5 and float(d.rate) == 2.0
    d = parse_prior("Dirichlet([1, 2.5, 3])")
    assert np.allclose(d.concentration, [1, 2.5, 3])
    d = parse_prior("Normal(loc=-1e-3, scale=2)")
    assert float(d.loc) == -1e-3


def test_resolve_priors_toml_and_unknown_site(tmp_path):
    defaults = {"tau2": dist.InverseGamma(1.0, 1.0)}
    path = tmp_path / "p.toml"
    path.write_text('[priors]\ntau2 = "InverseGamma(2.0, 3.0)"\n')
    pri = resolve_priors(defaults, str(path))
    assert float(pri["tau2"].rate) == 3.0
    with pytest.raises(ValueError, match="not a prior site"):
        resolve_priors(defaults, {"sigma": "HalfNormal(1)"})
    with pytest.raises(ValueError, match="priors\\['tau2'\\]"):
        resolve_priors(defaults, {"tau2": "eval('1')"})
    bad = tmp_path / "bad.toml"
    bad.write_text("tau2 = 3\n")
    with pytest.raises(ValueError, match="must map to a string"):
        resolve_priors(defaults, str(bad))


def test_catalog_lists_registered_models_with_methods():
    cards = {c.id: c for c in zoo.catalog()}
    assert "carbonetto03.shrinkage_mixture" in cards
    card = cards["carbonetto03.shrinkage_mixture"]
    assert card.default_method == "map_em" and {"map_em", "ml_em", "nuts", "map"} <= set(card.methods)
    assert all(c.default_method in c.methods for c in cards.values())
    assert zoo.methods("carbonetto03.translation")[:2] == ["nuts", "svi"] or "map_em" in zoo.methods(
        "carbonetto03.translation")
    with pytest.raises(ValueError, match="unknown model id"):
        zoo.model("nope.model")


def test_unknown_method_and_option_are_errors():
    spec = zoo.model("carbonetto03.shrinkage_mixture", n_components=2)
    X = np.random.default_rng(0).normal(size=(20, 2))
    with pytest.raises(ValueError, match="method"):
        zoo.fit(spec, X, method="gibbs")
    with pytest.raises(ValueError, match="unknown option"):
        zoo.fit(spec, X, method="map_em", max_iters=3)


def test_containers_validate():
    X = np.zeros((4, 2))
    with pytest.raises(ValueError, match="bag_ids"):
        Bags(X, [0, 0, 2, 2])  # bag 1 has no instance
    with pytest.raises(ValueError, match="bag_labels"):
        Bags(X, [0, 0, 1, 1], bag_labels=[1, 0, 1])
    with pytest.raises(ValueError, match="fractions"):
        Bags(X, [0, 0, 1, 1], fractions=[0.5, 1.5])
    with pytest.raises(ValueError, match="X"):
        Bags(np.full((4, 2), np.nan), [0, 0, 1, 1])
    with pytest.raises(ValueError, match="keyword 'cat' outside the vocabulary"):
        AnnotatedRegions(X, [0, 0, 1, 1], [["sky"], ["cat"]], ["sky", "sea"])
    with pytest.raises(ValueError, match="no keywords"):
        AnnotatedRegions(X, [0, 0, 1, 1], [["sky"], []], ["sky", "sea"])
    with pytest.raises(ValueError, match="image_ids"):
        AnnotatedRegions(X, [0, 0, 1, 5], [["sky"], ["sea"]], ["sky", "sea"])
    with pytest.raises(ValueError, match="words"):
        MultimodalCounts(np.array([[1, -1]]), np.array([[1]]))
    with pytest.raises(ValueError, match="values"):
        Matrix(np.array([[np.nan, 1.0]]), mask=np.array([[True, True]]))
    m = Matrix(np.array([[np.nan, 1.0]]))
    assert m.mask.tolist() == [[False, True]] and np.isfinite(m.values).all()


def test_missing_dataset_error_names_the_files(monkeypatch, tmp_path):
    monkeypatch.setenv("ZOO_DATA", str(tmp_path))
    from zoo.data import dataset_path
    with pytest.raises(FileNotFoundError, match="musk1.npz"):
        dataset_path("mil_benchmarks", "musk1.npz")
    with pytest.raises(ValueError, match="unknown data set"):
        zoo.load_dataset("no_such_data")


def test_user_program_nuts_and_map():
    def program(y):
        mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
        sigma = numpyro.sample("sigma", dist.HalfNormal(5.0))
        with numpyro.plate("n", y.shape[0]):
            numpyro.sample("y", dist.Normal(mu, sigma), obs=y)

    y = np.random.default_rng(1).normal(3.0, 1.0, size=200)
    fit = zoo.fit(program, {"y": y}, method="nuts", num_chains=2, num_warmup=200, num_samples=200,
                  progress_bar=False)
    post = fit.idata.posterior
    assert post.sizes["chain"] == 2 and post.sizes["draw"] == 200
    assert abs(float(post["mu"].mean()) - y.mean()) < 0.05
    assert {"acceptance_rate", "diverging"} <= set(fit.idata.sample_stats.data_vars)
    assert fit.idata.log_likelihood["y"].shape == (2, 200, 200)
    summary = fit.summary()
    assert "r_hat" in summary.columns and summary.loc["mu", "r_hat"] < 1.05
    fit_map = zoo.fit(program, {"y": y}, method="map", num_steps=1500, learning_rate=0.05, progress_bar=False)
    assert abs(float(fit_map.idata.posterior["mu"].values.ravel()[0]) - y.mean()) < 0.02
    with pytest.raises(ValueError, match="dict"):
        zoo.fit(program, y, method="nuts")


def test_cli_list_and_fit(capsys, tmp_path):
    from zoo.cli import main
    assert main(["list", "--datasets"]) == 0
    out = capsys.readouterr().out
    assert "carbonetto03.shrinkage_mixture" in out and "carbonetto03_sec2" in out
    nc = tmp_path / "fit.nc"
    assert main(["fit", "carbonetto03.shrinkage_mixture", "--data", "carbonetto03_sec2", "--chains", "2",
                 "--option", "covariance=diag", "--prior", "tau2=InverseGamma(2.0, 1.0)", "--out", str(nc)]) == 0
    out = capsys.readouterr().out
    assert "tau2[0]" in out and nc.exists()
    assert main(["fit", "carbonetto03.shrinkage_mixture", "--data", "carbonetto03_sec2",
                 "--prior", "tau2=__import__('os')"]) == 2


def test_svi_on_user_program():
    def program(y):
        mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
        with numpyro.plate("n", y.shape[0]):
            numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)

    y = np.random.default_rng(2).normal(-1.0, 1.0, size=100)
    fit = zoo.fit(program, {"y": y}, method="svi", num_steps=1500, learning_rate=0.05, num_samples=400,
                  progress_bar=False)
    post = fit.idata.posterior["mu"].values
    assert post.shape == (1, 400)
    assert abs(post.mean() - y.mean() * 100 / (100 + 0.01)) < 0.05 and abs(post.std() - 0.1) < 0.03
    assert np.all(np.diff(fit.idata.sample_stats["objective"].values[0, 0, -200:]) < 50)


def test_small_loop_flag_is_added_once_and_respects_the_user():
    from zoo._config import SMALL_LOOP_BYTES, _small_loops_as_one_function
    env = {"XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false"}
    assert _small_loops_as_one_function(env)
    assert env["XLA_FLAGS"] == (f"--xla_backend_extra_options=xla_cpu_small_while_loop_byte_threshold="
                                f"{SMALL_LOOP_BYTES} --xla_cpu_multi_thread_eigen=false")
    assert not _small_loops_as_one_function(env)                       # already there: unchanged
    assert env["XLA_FLAGS"].count("xla_backend_extra_options") == 1
    user = {"XLA_FLAGS": "--xla_backend_extra_options=foo=1"}
    assert not _small_loops_as_one_function(user) and user["XLA_FLAGS"] == "--xla_backend_extra_options=foo=1"
    off = {"ZOO_XLA_SMALL_LOOPS": "0"}
    assert not _small_loops_as_one_function(off) and "XLA_FLAGS" not in off
    empty = {}
    assert _small_loops_as_one_function(empty) and empty["XLA_FLAGS"].startswith("--xla_backend_extra_options=")


def test_import_zoo_is_light_and_reference_is_a_plain_function():
    """``import zoo`` loads no NumPy; ``zoo.reference`` / ``zoo.check_sampler`` / ``zoo.leaderboard`` are plain
    functions loaded on first use (no callable-module trick: issue 28); their modules live in
    ``zoo.diagnostics`` and ``zoo.leaderboards``, and importing a module first changes nothing."""
    import subprocess
    import sys
    code = """
import sys, types
import zoo
assert "numpy" not in sys.modules, "import zoo loaded NumPy"
assert zoo.references() and "numpy" in sys.modules
ref = zoo.reference("gustafson07.fs", "bench_tiny")
assert type(ref) is zoo.Reference is zoo.diagnostics.reference.Reference
assert isinstance(zoo.reference, types.FunctionType) and zoo.reference is zoo.diagnostics.reference.reference
import zoo.diagnostics.check_sampler as cs
assert isinstance(zoo.check_sampler, types.FunctionType) and zoo.check_sampler is cs.check_sampler
assert cs.format_table
import zoo.leaderboards.board as board
assert isinstance(zoo.leaderboard, types.FunctionType) and zoo.leaderboard is board.leaderboard
print("ok")
"""
    first = ("import zoo.diagnostics.reference, zoo.leaderboards.board\nimport zoo, types\n"
             "assert isinstance(zoo.reference, types.FunctionType)\n"
             "assert zoo.reference('gustafson07.fs', 'bench_tiny').summary()\nprint('ok')\n")
    for script in (code, first):
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stdout + done.stderr[-3000:]


def test_models_and_user_programs_take_the_one_finish_step(monkeypatch):
    """Issue 28: ``zoo.fit`` hands every fit to ``zoo.core.finish.finish``, the zoo's models and users' programs
    alike (finite check, inference kind, relabelling, provenance, verdict)."""
    import numpyro
    import numpyro.distributions as dist

    import zoo.api
    seen = []
    real_finish = zoo.api.finish

    def recording_finish(fit, spec, *args, **kwargs):
        seen.append((spec.id, kwargs["kind"]))
        return real_finish(fit, spec, *args, **kwargs)

    monkeypatch.setattr(zoo.api, "finish", recording_finish)

    def program(y=None):
        mu = numpyro.sample("mu", dist.Normal(0.0, 3.0))
        numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)

    user = zoo.fit(program, {"y": np.array([0.2, -0.1, 0.4])}, method="map", num_steps=20, progress_bar=False)
    model = zoo.fit(zoo.model("carbonetto03.shrinkage_mixture", n_components=2, covariance="diag"),
                    zoo.load_dataset("carbonetto03_sec2")[:40], max_iter=5, progress_bar=False)
    # the generic MAP declares its kind; MAP-EM registers none, and finish judges it from the draws
    assert seen == [(None, "point estimate"), ("carbonetto03.shrinkage_mixture", None)]
    for fit in (user, model):
        assert fit.provenance["zoo_inference"] == "point estimate" and "zoo_wall_seconds" in fit.provenance


def test_summary_leaves_out_only_the_columns_empty_in_every_row():
    """Fit.summary's tables: a column NaN in every row says nothing and is left out; a column with a number in any
    row stays, its NaNs marking the rows it does not apply to (e.g. ESS of a point-estimated site beside draws)."""
    import pandas as pd

    from zoo.core.fit import _without_empty_columns

    table = pd.DataFrame({"mean": [1.0, 2.0], "ess_bulk": [np.nan, 40.0], "mcse_mean": [np.nan, np.nan],
                          "q": ["point estimate", "draws of q"]}, index=["b", "r[0]"])
    kept = _without_empty_columns(table)
    assert list(kept.columns) == ["mean", "ess_bulk", "q"] and kept.index.tolist() == ["b", "r[0]"]
