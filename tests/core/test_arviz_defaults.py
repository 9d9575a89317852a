"""ArviZ's own functions, called with their defaults on every model's default fit (issue 30): the posterior holds the
model's parameters (per-unit draws in ``unit_posterior``), so ``az.summary``, ``az.plot_trace``, ``az.plot_rank``,
``az.plot_forest``, ``az.ess`` and ``az.rhat`` run on small data without an error or a warning, each call bounded
by a watchdog (the child process's timeout), never by a timed assert; the same site has the same dims under
every method it has.

Three ArviZ notices are not the zoo's layout and are set aside (``IGNORED``): matplotlib's deprecation of a call
inside ArviZ 0.23's plotting code (it fires on ArviZ's own example data too), ArviZ's notice that a rank plot
draws its first 40 panels, and PSIS-LOO's Pareto-k report (a result about 40 draws of a small data set). Fits
that still warn are listed in ``KNOWN`` with the reason, as strict expected failures, so that they stay visible
until fixed; what is left of them is checked to be exactly ArviZ 0.23 on elements certain a posteriori (the same
in every draw of every chain), which the zoo's own verdict rates "certain"
(``test_the_warnings_left_are_arviz_on_certain_elements``).
"""
from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import textwrap

import pytest

import zoo

WATCHDOG_SECONDS = 300

#: warnings that are not the zoo's layout (see the module docstring): message beginnings
IGNORED = ("Passing a dict or None as alias_mapping",                # matplotlib deprecation inside ArviZ 0.23
           "rcParams['plot.max_subplots']",                          # ArviZ draws the first 40 panels
           "Estimated shape parameter of Pareto distribution")      # PSIS-LOO's result on 40 draws, not a fault

#: model id -> the fit's data and options (small data; enough draws for rank plots)
_MCMC = "dict(num_chains=2, num_warmup=30, num_samples=40, progress_bar=False)"
CASES = {
    "carbonetto03.shrinkage_mixture": ("{}", 'zoo.load_dataset("carbonetto03_sec2")', "dict(max_iter=20)"),
    "carbonetto03.translation": ("{}", 'zoo.load_dataset("carbonetto03_sec52")', "dict(max_iter=20)"),
    "gustafson07.full": ("{}", 'zoo.load_dataset("gustafson07_sec6")', _MCMC),
    "gustafson07.fs": ("{}", 'zoo.load_dataset("gustafson07_sec6")', _MCMC),
    "gustafson07.cvfs": ("{}", 'zoo.load_dataset("gustafson07_sec6")', _MCMC),
    "kueck04.supervised": ("{}", "ring_data(n=40, seed=1)", _MCMC),
    "kueck04.constraint": ("{}", "ring_data(n=40, seed=1)", _MCMC),
    "kueck04.measurement": ("{}", "ring_data(n=40, seed=1)", _MCMC),
    "kueck04.hybrid": ("{}", "ring_data(n=40, seed=1)", _MCMC),
    "ross03.mcvq": ("dict(n_vqs=2, n_states=2)", "two_class_matrix()", "dict(max_iter=20, progress_bar=False)"),
    "ross03.mcvq_supervised": ("dict(n_vqs=2, n_states=2)", "two_class_matrix()",
                               "dict(max_iter=20, progress_bar=False, monte_carlo_samples=16)"),
    "ross03.mcvq_clustered": ("dict(n_vqs=2, n_states=2, n_clusters=2)", "two_class_matrix().matrix",
                              "dict(max_iter=20, progress_bar=False)"),
    "yakhnenko.mom_lda": ("dict(n_topics=3)", 'zoo.load_dataset("yakhnenko_synthetic", n_images=30)',
                          "dict(max_iter=20, progress_bar=False)"),
    "yakhnenko.mom_hdp": ("dict(truncation=3)", 'zoo.load_dataset("yakhnenko_synthetic", n_images=30)',
                          "dict(max_iter=20, progress_bar=False)"),
}

_CERTAIN_ELEMENTS = ("a discrete element certain a posteriori: the same value in every draw of every chain "
                     "(gustafson07 FS/CVFS on the Sec. 6 data: FS's whole state Y, M and lp is constant over 2 x 40 "
                     "draws, and the exact posterior agrees: p(M = (1,1,1,0,0) | Y, X) = 1 - 3.4e-9; on the same "
                     "generator at 30 units per concept features 4-5 stay out with less than 1e-4 off; ross03 on two "
                     "classes: each restart's exact q(r) is one-hot to 1e-164 and the restarts agree, as the annealed "
                     "mean-field q is on any data with tens of cases: the tests below check both). It stays in "
                     "posterior (it is the headline, M; or the only site q draws, r), where ArviZ 0.23 has no r-hat "
                     "for it: _rhat divides a zero between-chain by a zero within-chain variance (numpy's 'invalid "
                     "value' RuntimeWarning, any dtype) and plot_rank's compute_ranks fits a CubicSpline over "
                     "linspace(min, max) for an int array, which raises for min == max. A bool/uint8 dtype avoids only"
                     " the second and turns ArviZ's discrete trace plots into KDEs. "
                     "test_the_warnings_left_are_arviz_on_certain_elements checks that these are the only problems and"
                     " that fit.diagnose() rates those sites 'certain' (ross03, variational: 'point estimate', q a "
                     "point mass)")
#: model id -> why its default fit still warns or fails under some default ArviZ call (strict expected failures:
#: a fit that starts passing is reported, so that the entry is removed)
KNOWN = {"gustafson07.fs": _CERTAIN_ELEMENTS, "gustafson07.cvfs": _CERTAIN_ELEMENTS, "ross03.mcvq": _CERTAIN_ELEMENTS,
         "ross03.mcvq_clustered": _CERTAIN_ELEMENTS}
#: what ArviZ 0.23 says about an element certain a posteriori (``_CERTAIN_ELEMENTS``): r-hat's 0 / 0, and the rank
#: plot's spline over an integer array with one value
_CERTAIN_SYMPTOMS = ("invalid value encountered in scalar divide", "`x` must be strictly increasing sequence")

_CHILD = """
import json, time, warnings
import numpy as np
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import zoo
from zoo.core.idata import az, certain_elements
from zoo.data import Matrix
from zoo.data.mil import ring_data
from zoo.data.ross03 import MatrixDataset

def two_class_matrix(C=30, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(C) % 2
    X = np.where(y[:, None] == 1, 1.5, -1.5) * np.ones((C, 4)) + 0.3 * rng.normal(size=(C, 4))
    return MatrixDataset(Matrix(X), labels=y)

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    fit = zoo.fit(zoo.model({model_id!r}, **{options}), {data}, seed=3, **{fit_options})
idata = fit.idata
calls = {{"summary": az.summary, "plot_forest": az.plot_forest, "ess": az.ess, "rhat": az.rhat}}
if not fit.is_point_estimate:      # restarts of an optimizer have no trace and no ranks: one value each
    calls.update(plot_trace=az.plot_trace, plot_rank=az.plot_rank)
if "log_likelihood" in idata.groups() and not fit.is_point_estimate:
    observed = list(idata.log_likelihood.data_vars)
    # one observed site: ArviZ's defaults; several (yakhnenko's words and visual words): ArviZ asks for var_name
    if len(observed) == 1:
        calls["loo"] = az.loo
    for site in observed if len(observed) > 1 else ():
        calls[f"loo[{{site}}]"] = lambda data, site=site: az.loo(data, var_name=site)
if "posterior_predictive" in idata.groups():
    calls["plot_ppc"] = az.plot_ppc
if "sample_stats" in idata.groups() and "energy" in idata.sample_stats:
    calls["plot_energy"] = az.plot_energy
out = {{"inference": fit.inference, "groups": list(idata.groups()), "calls": {{}}}}
for name, call in calls.items():
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            call(idata)
            error = None
        except Exception as err:
            error = f"{{type(err).__name__}}: {{err}}"
    plt.close("all")
    messages = sorted({{str(w.message).strip()[:160] for w in caught
                       if not str(w.message).strip().startswith({ignored!r})}})
    out["calls"][name] = {{"seconds": round(time.perf_counter() - start, 2), "warnings": messages, "error": error}}
# elements the same in every draw of every chain, per posterior site, and the zoo's verdict on those sites
certain = certain_elements(idata)
out["constant"] = {{site: int(mask.sum()) for site, mask in certain.items()}}
# the values those elements take (flat, in element order): checked against the exact posterior where it is known
out["constant_values"] = {{site: np.asarray(idata.posterior[site].isel(chain=0, draw=0))[np.asarray(mask)].tolist()
                          for site, mask in certain.items()}}
# a variational fit's exact q over a discrete site (ross03's g: q(r_d = k)): the largest mass q puts off its mode
if "variational_parameters" in idata.groups() and "g" in idata.variational_parameters:
    g = np.asarray(idata.variational_parameters["g"])
    out["q_mass_off_mode"] = float(np.sort(g, axis=-1)[..., :-1].sum(-1).max())
if "unit_posterior" in idata.groups() and "Y" in idata.unit_posterior:     # gustafson07's labels
    Y = np.asarray(idata.unit_posterior["Y"])
    out["Y"] = {{"first_draw": Y[0, 0].tolist(), "constant": bool((Y == Y[0, 0]).all())}}
if out["constant"] and not fit.is_point_estimate:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = fit.diagnose(var_names=sorted(out["constant"]))
    out["status"] = {{site: str(status) for site, status in table["status"].items()}}
print("RESULT " + json.dumps(out))
"""


@functools.cache
def _run_child(model_id: str) -> dict:
    options, data, fit_options = CASES[model_id]
    code = _CHILD.format(model_id=model_id, options=options, data=data, fit_options=fit_options, ignored=IGNORED)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    try:
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                              timeout=WATCHDOG_SECONDS, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{model_id}: the fit and ArviZ's default calls took over {WATCHDOG_SECONDS} s (watchdog)")
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, f"{model_id}: child failed\n{done.stderr[-3000:]}"
    return json.loads(lines[-1][len("RESULT "):])


def _params():
    # every case in the extended tier (CI runs it after the default suite, ``.ci/run``): each is a child interpreter
    # that compiles a fit, and the two that were in the default suite (gustafson07.fs, carbonetto03.translation) took
    # 40-47 s of its 2-core wait (issue 35); the layout they check is tested in the default suite by
    # tests/core/test_generic_dims.py and each paper's API tests
    for model_id in sorted(CASES):
        marks = [pytest.mark.extended]
        if model_id in KNOWN:
            marks.append(pytest.mark.xfail(reason=KNOWN[model_id], strict=True))
        yield pytest.param(model_id, marks=marks, id=model_id)


def test_every_model_id_has_a_case():
    assert set(CASES) == {card.id for card in zoo.catalog()}


@pytest.mark.parametrize("model_id", list(_params()))
def test_arviz_defaults_run_on_the_default_fit_without_warnings(model_id):
    result = _run_child(model_id)
    problems = {name: call for name, call in result["calls"].items() if call["error"] or call["warnings"]}
    assert not problems, f"{model_id}: {json.dumps(problems, indent=1)}"
    assert {"summary", "plot_forest", "ess", "rhat"} <= set(result["calls"])
    if result["inference"] != "point estimate":
        assert {"plot_trace", "plot_rank"} <= set(result["calls"])


#: measured in the extended tier on 2026-11-27: the default gustafson07.cvfs fit's verdict on M is "fail", not
#: "certain": M holds certain elements (ArviZ's 0/0 r-hat) beside elements that do not pass their checks. The verdict
#: is true (issue 29, session 5): at this case's 2 x (30 + 40) sweeps (seed 3) the chains disagree on M[0, 2] and
#: M[1, 2] (1 in 22.5 % of chain 0's draws, in every draw of chain 1; r-hat 2.13, bulk ESS 3.2 < 200) beside 11
#: certain elements, and at the default 4 x (200 + 2,000) M still fails (bulk ESS 85.1, chains stuck on elements the
#: others move). Session 6 added two exact moves (the background-marginal refresh, column flips of M): the default
#: then reaches M bulk ESS 378-516 (seeds 0-2) with r-hat 1.009-1.014; session 7 made the default 4 x (200 + 5,000),
#: which passes on seeds 0-4 (r-hat <= 1.0074, worst ESS >= 990). This case's 2 x 70 sweeps are far shorter than
#: that (the chains still disagree on M's moving elements there): the entry stays (not re-run at this size).
_VERDICT_NOT_CERTAIN = {"gustafson07.cvfs": "its M reads 'fail', truly: chains that disagree on M's moving elements "
                                            "beside the certain ones (issue 29)"}


def _certain_params():
    for model_id in sorted(KNOWN):
        if KNOWN[model_id] is _CERTAIN_ELEMENTS:
            marks = [pytest.mark.extended]      # the children's tier (``_params``)
            if model_id in _VERDICT_NOT_CERTAIN:
                marks.append(pytest.mark.xfail(reason=_VERDICT_NOT_CERTAIN[model_id], strict=False))
            yield pytest.param(model_id, marks=marks, id=model_id)


@pytest.mark.parametrize("model_id", list(_certain_params()))
def test_the_warnings_left_are_arviz_on_certain_elements(model_id):
    """What is left of a ``KNOWN`` fit is exactly ArviZ 0.23 on elements certain a posteriori: every warning and
    error of the default calls is one of ``_CERTAIN_SYMPTOMS``, the posterior has such elements, and the zoo's own
    verdict (``fit.diagnose``) rates every site holding them "certain" (MCMC) or "point estimate" (variational: q
    a point mass there in every restart), never "fail"."""
    result = _run_child(model_id)
    assert result["constant"], f"{model_id}: no element is certain, so nothing explains a warning"
    for name, call in result["calls"].items():
        said = call["warnings"] + ([call["error"]] if call["error"] else [])
        unexplained = [m for m in said if not any(symptom in m for symptom in _CERTAIN_SYMPTOMS)]
        assert not unexplained, f"{model_id}: {name}: {unexplained}"
    # MCMC: "certain"; a variational q that is a point mass on the site in every restart: "point estimate"
    assert set(result["status"]) == set(result["constant"]), (model_id, result["status"])
    expected = "point estimate" if result["inference"] == "variational" else "certain"
    assert set(result["status"].values()) == {expected}, (model_id, result["status"])


@pytest.mark.extended          # reads the gustafson07.fs child's fit (``_params``); the verdict "certain" on an
# exactly certain posterior is tested in the default suite by tests/core/test_verdicts.py
def test_gustafson07_fs_certain_elements_are_certain_under_the_exact_posterior():
    """Not a stuck sampler: the default gustafson07.fs fit's M is the same in every draw of every chain, and the exact
    posterior says so. On the Sec. 6 data every unit's label is drawn from {garbage, its concept}; the fit's labels
    Y are the data's concepts in every draw, and given them p(M | Y, X) over all 2^p masks (the collapsed log joint
    the sampler targets, ``zoo.papers.gustafson07_lp``; uniform prior on M) puts more than 1 - 1e-6 on each
    element's constant value. Measured: p(M = (1,1,1,0,0) | Y, X) = 1 - 3.4e-9 (5 seeds of the generator: every
    element within 1e-3 of certain); at 30 units per concept features 4, 5 (no mean shift by design) stay below
    1e-4 off their value, and at 10 each of 5 seeds still has an element about 1e-3 or less off (constant over
    2 x 40 draws with probability about 0.9 or more): small data from this generator keep certain elements."""
    import itertools

    import numpy as np

    from zoo.papers.gustafson07_lp import collapsed_log_joint

    result = _run_child("gustafson07.fs")
    regions = zoo.load_dataset("gustafson07_sec6")
    Y = np.asarray(result["Y"]["first_draw"])
    assert result["Y"]["constant"] and np.array_equal(Y, np.asarray(regions.region_labels) + 1)
    assert result["constant"] == {"M": regions.X.shape[1], "n_relevant": 1}     # the whole of M, every element
    sampled = np.asarray(result["constant_values"]["M"])
    k = zoo.kernel(zoo.model("gustafson07.fs"), regions)
    masks = np.array(list(itertools.product([0, 1], repeat=regions.X.shape[1])))
    draws = {"Y": np.broadcast_to(Y, (1, len(masks)) + Y.shape), "M": masks[None]}
    lp = collapsed_log_joint(k.program, "fs", k.problem.concept_prior, k.problem.delta0, k.problem.Omega0, draws)[0]
    weight = np.exp(lp - lp.max())
    marginal = (weight[:, None] * masks).sum(0) / weight.sum()          # p(M_i = 1 | Y, X)
    off_value = np.where(sampled == 1, 1 - marginal, marginal)
    assert np.all(off_value < 1e-6), (sampled.tolist(), marginal.tolist())
    assert result["constant_values"]["n_relevant"] == [int(sampled.sum())]


@pytest.mark.extended
@pytest.mark.parametrize("model_id", ["ross03.mcvq", "ross03.mcvq_clustered"])
def test_ross03_certain_selection_is_a_point_mass_of_q(model_id):
    """Not a stuck optimizer, and nothing a layout can change: the draws of r are the same in every draw of every
    restart because each restart's exact q(r_d) (``variational_parameters`` g) is one-hot to float precision (the
    annealed mean-field q: r_d's log-odds are sums over the cases, Ross 2003 Sec. 2.3), and the restarts agree.
    Measured on this data: the mass q puts off its mode is at most about 1e-164; on a second data set with two
    independent causes (dims 0-1, dims 2-3) about 1e-172, with restarts that split the dims between the VQs (F 63.4)
    or not (F 131.5). Other seeds give VQ 0 instead of 1 (label switching), so the restarts are not tied to one
    index."""
    result = _run_child(model_id)
    assert result["q_mass_off_mode"] < 1e-12, result["q_mass_off_mode"]
    assert result["constant"]["r"] == 4 and result["constant"]["r_relabelled"] == 4


def test_certain_elements_are_the_ones_arviz_cannot_rate():
    """``certain_elements`` marks an element the same in every draw of every chain, and no other (one chain alone
    constant is not certain); ArviZ 0.23's r-hat warns on such an element and on none other, and its rank plot
    raises for an integer site that has one (the facts docs/sites.md and ``KNOWN`` state)."""
    import warnings

    import numpy as np

    from zoo.core.idata import az, certain_elements, to_inference_data

    rng = np.random.default_rng(0)
    M = rng.integers(0, 2, size=(2, 30, 4)).astype(np.int8)
    M[..., 1] = 1                      # certain: 1 in every draw of both chains
    M[0, :, 2] = 0                     # constant in chain 0 only: not certain
    M[1, :, 2] = rng.integers(0, 2, size=30)
    M[1, 0, 2] = 1
    idata = to_inference_data({"M": M, "x": rng.normal(size=(2, 30))}, dims={"M": ["feature"]})
    found = certain_elements(idata)
    assert list(found) == ["M"] and found["M"].dims == ("feature",)
    assert found["M"].values.tolist() == [False, True, False, False]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rhat = az.rhat(idata)["M"].values
    assert any("invalid value" in str(w.message) for w in caught)
    assert np.isnan(rhat[1]) and np.all(np.isfinite(np.delete(rhat, 1)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        az.rhat(idata.posterior[["M"]].isel(feature=[0, 2, 3]))
    assert not [w for w in caught if "invalid value" in str(w.message)]
    with pytest.raises(ValueError, match="strictly increasing"):
        az.plot_rank(idata, var_names=["M"])
    with pytest.raises(ValueError, match="group"):
        certain_elements(idata, group="prior")
