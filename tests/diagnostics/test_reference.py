"""Reference posteriors (zoo.reference) and the sampler check (zoo.check_sampler), on the stored files; no MCMC here
(the references' construction is checked where they are built: ``zoo reference build``, and the slow test below)."""
import json

import numpy as np
import pytest

import zoo
from zoo.diagnostics.check_sampler import check_sampler, format_table, plot_error_vs_cost
from zoo.diagnostics.reference import FORMAT, Reference, summarize_draws


def test_stored_references_parse_and_say_how_they_were_made():
    stored = zoo.references()
    assert ("gustafson07.fs", "bench_tiny") in stored
    for model_id, dataset in stored:
        ref = zoo.reference(model_id, dataset)
        assert ref.model_id == model_id and ref.dataset == dataset and ref.names
        kind = ref.construction["kind"]
        assert kind in ("enumeration", "mcmc")
        assert "zoo_version" in ref.versions
        if kind == "mcmc":
            assert ref.construction["chains"] >= 10
            assert isinstance(ref.construction["meets_bar"], bool)
            assert all(ref.mcse[n] >= 0 for n in ref.names)
            assert ref.construction["meets_bar"] == (ref.construction["min_ess"] >= 10_000
                                                     and ref.construction["max_rhat"] < 1.01)
        else:
            assert all(ref.mcse[n] == 0 for n in ref.names)


def test_exact_reference_is_a_probability_table():
    ref = zoo.reference("gustafson07.fs", "bench_tiny")
    assert ref.exact and ref.construction["states"] == 2 ** 6 * 4 ** 4
    for u in (4, 5, 6, 7):       # the unannotated units: label probabilities over 4 concepts sum to 1
        assert sum(ref.mean[f"Pr(Y_{u} = {k})"] for k in range(4)) == pytest.approx(1.0, abs=1e-12)
    assert all(0 < ref.mean[f"Pr(M_{j} = 1)"] < 1 for j in range(1, 7))
    c = ref.construction                 # how it was made: the command, and the zoo's kernel checked against it
    assert c["meets_bar"] is True and c["command"].startswith("zoo reference build gustafson07.fs --dataset bench_tiny")
    assert c["cross_check"]["method"] == "collapsed_gibbs" and c["cross_check"]["n_quantities"] == 22
    assert c["cross_check"]["max_abs_z"] < 4.5


def test_bad_reference_input_is_a_value_error_naming_the_field():
    ref = zoo.reference("gustafson07.fs", "bench_tiny")
    obj = ref.to_json()
    assert Reference.from_json(json.loads(json.dumps(obj))) == ref
    with pytest.raises(ValueError, match="format"):
        Reference.from_json({**obj, "format": "other"})
    with pytest.raises(ValueError, match="quantities"):
        Reference.from_json({**obj, "quantities": {}})
    bad = dict(obj["quantities"])
    bad["Pr(M_1 = 1)"] = {"mean": 0.5, "mcse": -1.0}
    with pytest.raises(ValueError, match="Pr\\(M_1 = 1\\)"):
        Reference.from_json({**obj, "quantities": bad})
    with pytest.raises(ValueError, match="model_id/dataset"):
        zoo.reference("gustafson07.fs", "no_such_set")
    with pytest.raises(ValueError, match="samplers"):
        check_sampler(ref, ["no such sampler"])
    with pytest.raises(ValueError, match="draws"):
        check_sampler(ref, ["collapsed_gibbs"], draws=(0,))


def test_summaries_of_independent_draws():
    rng = np.random.default_rng(0)
    x = rng.normal(1.0, 2.0, size=(4, 2500))
    s = summarize_draws({"x": x, "const": np.ones((4, 10))})
    assert s["x"]["mean"] == pytest.approx(1.0, abs=4 * 2 / 100)
    assert s["x"]["mcse"] == pytest.approx(2.0 / 100, rel=0.15)
    assert s["x"]["rhat"] < 1.01 and s["x"]["ess"] > 7000
    assert s["const"] == {"mean": 1.0, "mcse": 0.0, "rhat": None, "ess": None}


def _iid_sampler(shift: float):
    """Independent draws from the reference's own marginals (shift 0: exact for every quantity) or from marginals
    moved by ``shift`` (a deliberately wrong sampler)."""
    ref = zoo.reference("gustafson07.fs", "bench_tiny")

    def run(key, data, draws):
        rng = np.random.default_rng(int(np.asarray(key)[-1]))
        chains = 4
        pm = np.clip(np.array([ref.mean[f"Pr(M_{j} = 1)"] for j in range(1, 7)]) + shift, 0, 1)
        M = rng.random((chains, draws, 6)) < pm
        Y = np.zeros((chains, draws, 8), int)
        Y[..., :4] = np.asarray(data.region_labels[:4]) + 1
        for u in range(4, 8):
            p = np.array([ref.mean[f"Pr(Y_{u} = {k})"] for k in range(4)])
            p = np.clip(p + shift * np.array([1, -1, 0, 0]), 1e-9, 1)
            Y[..., u] = rng.choice(4, size=(chains, draws), p=p / p.sum())
        return {"M": np.repeat(M[:, :, None, :], 4, axis=2), "Y": Y}
    return run


def test_check_sampler_passes_an_exact_sampler_and_catches_a_biased_one(tmp_path):
    ref = zoo.reference("gustafson07.fs", "bench_tiny")
    scores = check_sampler(ref, [("exact iid", _iid_sampler(0.0)), ("biased iid", _iid_sampler(0.05))],
                           draws=(500, 4000))
    exact = [s for s in scores if s.sampler == "exact iid"]
    biased = [s for s in scores if s.sampler == "biased iid"]
    for s in exact:          # errors in units of the sampler's own MCSE (the reference is exact): N(0, 1)-sized
        assert s.max_abs_z < 4.5 and s.mean_bias2_over_var < 3
    assert biased[-1].max_abs_z > 8 and biased[-1].mean_bias2_over_var > 10
    assert biased[-1].rmse > 0.03 > exact[-1].rmse
    assert exact[1].rmse < exact[0].rmse + 0.01       # more draws: no larger error (up to noise)
    table = format_table(scores)
    assert "exact iid" in table and "biased iid" in table
    plot_error_vs_cost(scores, tmp_path / "plot.png")
    assert (tmp_path / "plot.png").stat().st_size > 0


@pytest.mark.slow
def test_zoo_kernel_agrees_with_the_exact_reference():
    """The zoo's collapsed Gibbs sweep (default moves) against the enumerated FS posterior: no quantity off by more
    than 4.5 of the sampler's MCSEs (22 quantities)."""
    ref = zoo.reference("gustafson07.fs", "bench_tiny")
    (score,) = check_sampler(ref, ["collapsed_gibbs"], draws=(5000,), chains=4, warmup=200)
    assert score.max_abs_z < 4.5 and score.mean_bias2_over_var < 3


def _mixture_draws(rng, chains=2, draws=5, n_comp=3, dim=4):
    return {"lambda": rng.dirichlet(np.ones(n_comp), size=(chains, draws)),
            "mu": rng.normal(scale=3.0, size=(chains, draws, n_comp, dim)),
            "Sigma": rng.uniform(0.5, 2.0, size=(chains, draws, n_comp, dim)),
            "tau2": rng.uniform(0.5, 2.0, size=(chains, draws, dim))}


def test_carbonetto_quantities_are_permutation_invariant_and_match_direct_densities():
    from scipy.stats import multivariate_normal
    from zoo.diagnostics.reference_problems import _carbonetto_quantities
    rng = np.random.default_rng(3)
    x, held = rng.normal(size=(5, 4)), rng.normal(size=(3, 4))
    d = _mixture_draws(rng)
    q = _carbonetto_quantities(x, None, held, None, pairs=True)
    base = q(d)
    assert len([n for n in base if n.startswith("Pr(z_")]) == 10
    perm = rng.permuted(np.tile(np.arange(3), (2, 5, 1)), axis=-1)     # components renumbered per draw
    take = lambda a: np.take_along_axis(a, perm.reshape(perm.shape + (1,) * (a.ndim - 3)), axis=2)
    permuted = q({"lambda": take(d["lambda"]), "mu": take(d["mu"]), "Sigma": take(d["Sigma"]), "tau2": d["tau2"]})
    for name in base:
        np.testing.assert_allclose(permuted[name], base[name], rtol=1e-12, atol=1e-15)
    full = q({**d, "Sigma": np.einsum("cdkj,jl->cdkjl", d["Sigma"], np.eye(4))})   # the full-covariance path
    for name in base:
        np.testing.assert_allclose(full[name], base[name], rtol=1e-10, atol=1e-15)
    c, t = 1, 2                                      # p(x* | theta) of one draw, directly
    direct = sum(d["lambda"][c, t, k] * multivariate_normal(d["mu"][c, t, k], np.diag(d["Sigma"][c, t, k])).pdf(held[0])
                 for k in range(3))
    assert base["p(x*_0 | data)"][c, t] == pytest.approx(direct, rel=1e-10)
    assert base["E[log p(x*_0 | theta)]"][c, t] == pytest.approx(np.log(direct), rel=1e-10)
    assert np.all((base["Pr(z_0 = z_1)"] >= 0) & (base["Pr(z_0 = z_1)"] <= 1 + 1e-12))
    np.testing.assert_allclose(base["E[log tau2_2]"], np.log(d["tau2"][..., 1]))


def test_translation_label_probabilities_sum_to_one_over_the_allowed_words():
    from zoo.diagnostics.reference_problems import _carbonetto_quantities
    rng = np.random.default_rng(4)
    x = rng.normal(size=(4, 3))
    allowed = np.array([[1, 1, 0], [1, 0, 0], [0, 1, 1], [1, 1, 1]], bool)
    d = _mixture_draws(rng, dim=3)
    d.pop("lambda")
    out = _carbonetto_quantities(x, allowed, x[:2], allowed[:2], pairs=False)(d)
    assert not any(n.startswith("Pr(w_1 ") for n in out)          # one allowed word: no uncertainty, not listed
    for i, words in ((0, (0, 1)), (2, (1, 2)), (3, (0, 1, 2))):
        assert set(n for n in out if n.startswith(f"Pr(w_{i} ")) == {f"Pr(w_{i} = {w})" for w in words}
        np.testing.assert_allclose(sum(out[f"Pr(w_{i} = {w})"] for w in words), 1.0, rtol=1e-12)
    # region 1 has one allowed word: its predictive density is that word's Gaussian alone
    from scipy.stats import multivariate_normal
    direct = multivariate_normal(d["mu"][0, 0, 0], np.diag(d["Sigma"][0, 0, 0])).logpdf(x[1])
    assert out["E[log p(x*_1 | theta)]"][0, 0] == pytest.approx(direct, rel=1e-10)


def test_check_sampler_suite_writes_table_json_and_plot(tmp_path):
    from zoo.diagnostics.check_sampler import run_suite
    suite = (("gustafson07.fs", "bench_tiny", (("exact iid", _iid_sampler(0.0)), ("biased iid", _iid_sampler(0.05)))),)
    results = run_suite(draws=(300,), chains=2, warmup=10, out=tmp_path, suite=suite)
    (scores,) = results.values()
    assert [s.sampler for s in scores] == ["exact iid", "biased iid"]
    text = (tmp_path / "check_sampler.md").read_text()
    assert "gustafson07.fs on bench_tiny" in text and "exact enumeration" in text and "biased iid" in text
    rows = json.loads((tmp_path / "check_sampler.json").read_text())
    assert {r["sampler"] for r in rows} == {"exact iid", "biased iid"} and rows[0]["dataset"] == "bench_tiny"
    assert (tmp_path / "check_sampler.png").stat().st_size > 0


def test_build_records_command_and_checks_an_enumeration_against_a_sampler(monkeypatch):
    """build() on an exact problem: meets_bar true, no ESS/r-hat, the default sampler run against the enumeration
    (z in its own MCSE units: small for an exact sampler, large for a biased one), and the rebuild command."""
    import zoo.diagnostics.reference_problems as rp
    from zoo.diagnostics.reference import build
    ref = zoo.reference("gustafson07.fs", "bench_tiny")
    base = rp.problem("gustafson07.fs", "bench_tiny")

    def exact():
        return ({n: {"mean": ref.mean[n], "mcse": 0.0, "rhat": None, "ess": None} for n in ref.names},
                {"kind": "enumeration", "states": 16384})

    def factory(shift):
        def make(chains, warmup):
            run = _iid_sampler(shift)
            return lambda seed, data, draws: run(np.array([0, seed]), data, draws)
        return make
    for shift, small in ((0.0, True), (0.05, False)):
        fake = rp.Problem("gustafson07.fs", "bench_tiny", "test", base.data, base.quantities,
                          {"iid": factory(shift)}, "iid", None, exact)
        monkeypatch.setattr(rp, "problem", lambda m, d, fake=fake: fake)
        built = build("gustafson07.fs", "bench_tiny", chains=4, warmup=0, draws=2000, save=False)
        c = built.construction
        assert c["kind"] == "enumeration" and c["meets_bar"] is True and c["min_ess"] is None
        assert c["command"] == "zoo reference build gustafson07.fs --dataset bench_tiny --chains 4 --warmup 0 " \
                               "--draws 2000"
        assert c["cross_check"]["method"] == "iid" and c["cross_check"]["n_quantities"] == len(ref.names)
        assert (c["cross_check"]["max_abs_z"] < 4.5) == small
        assert built.mean == ref.mean and all(v == 0 for v in built.mcse.values())


def test_build_saves_the_main_run_before_the_cross_check(monkeypatch, tmp_path):
    """A build stopped during the cross-check (here: the cross-check sampler fails) leaves the main run's reference
    on disk, its cross-check marked as not run."""
    import zoo.diagnostics.reference as zr
    import zoo.diagnostics.reference_problems as rp
    from zoo.diagnostics.reference import build
    base = rp.problem("gustafson07.fs", "bench_tiny")
    names, run = zoo.reference("gustafson07.fs", "bench_tiny").names, _iid_sampler(0.0)

    def main(chains, warmup):
        return lambda seed, data, draws: run(np.array([0, seed]), data, draws)

    def broken(chains, warmup):
        def run(seed, data, draws):
            raise RuntimeError("stopped")
        return run
    fake = rp.Problem("gustafson07.fs", "bench_tiny", "test", base.data, base.quantities,
                      {"iid": main, "broken": broken}, "iid", "broken", None)
    monkeypatch.setattr(rp, "problem", lambda m, d: fake)
    monkeypatch.setattr(zr, "REFERENCE_DIR", tmp_path)
    with pytest.raises(RuntimeError, match="stopped"):
        build("gustafson07.fs", "bench_tiny", chains=10, warmup=0, draws=200)
    saved = Reference.from_json(json.loads((tmp_path / "gustafson07.fs__bench_tiny.json").read_text()))
    c = saved.construction
    assert c["kind"] == "mcmc" and c["draws"] == 200 and c["chains"] == 10 and c["meets_bar"] is False
    assert c["cross_check"] == {"method": "broken", "status": "not run: the build stopped first"}
    assert c["command"].endswith("--draws 200") and saved.names == names


def test_add_cross_check_appends_agreement_without_rebuilding(monkeypatch, tmp_path):
    """add_cross_check runs one more kernel against the stored reference: an unbiased one agrees (small |z|), a
    biased one does not; each record is appended to more_cross_checks and the reference's values stay as stored."""
    import shutil
    import zoo.diagnostics.reference as zr
    import zoo.diagnostics.reference_problems as rp
    from zoo.diagnostics.reference import add_cross_check
    src = zr.REFERENCE_DIR / "gustafson07.fs__bench_tiny.json"
    shutil.copy(src, tmp_path / src.name)
    monkeypatch.setattr(zr, "REFERENCE_DIR", tmp_path)
    base = rp.problem("gustafson07.fs", "bench_tiny")

    def factory(shift):
        def make(chains, warmup):
            run = _iid_sampler(shift)
            return lambda seed, data, draws: run(np.array([0, seed]), data, draws)
        return make
    fake = rp.Problem("gustafson07.fs", "bench_tiny", "test", base.data, base.quantities,
                      {"fair": factory(0.0), "biased": factory(0.05)}, "fair", None, None)
    monkeypatch.setattr(rp, "problem", lambda m, d: fake)
    before = zoo.reference("gustafson07.fs", "bench_tiny")
    fair = add_cross_check("gustafson07.fs", "bench_tiny", "fair", chains=4, warmup=0, draws=2000)
    biased = add_cross_check("gustafson07.fs", "bench_tiny", "biased", chains=4, warmup=0, draws=2000)
    assert fair["max_abs_z"] < 4.5 < biased["max_abs_z"] and fair["n_quantities"] == len(before.names)
    after = zoo.reference("gustafson07.fs", "bench_tiny")
    assert [r["method"] for r in after.construction["more_cross_checks"]] == ["fair", "biased"]
    assert after.mean == before.mean and after.mcse == before.mcse
    with pytest.raises(ValueError, match="method"):
        add_cross_check("gustafson07.fs", "bench_tiny", "nope", draws=100)
