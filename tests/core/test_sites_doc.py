"""docs/sites.md lists every model's sites with their dims, as the registry declares them (issue 30), and the same
site has the same dims under every method: the layout every fit is given (``zoo.core.idata.conform_layout``).

Regenerate the table after changing a model's sites with

    ZOO_WRITE_SITES_DOC=1 .venv/bin/python -m pytest tests/core/test_sites_doc.py
"""
from __future__ import annotations

import os
import pathlib
import warnings

import numpy as np
import pytest

import zoo
from zoo.catalog import ensure_loaded
from zoo.core.idata import conform_layout, to_inference_data
from zoo.core.registry import get_model, models_registered

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "sites.md"

_HEADER = """# Sites and dims of every model

Every fit of a model, whatever its method (EM, MAP, NUTS, SVI, Gibbs, variational, `zoo.kernel`'s fits through
`zoo.fit`), names the dims of a site the same way: after the program's plates, with the data's own labels as
coordinates where the data have them (vocabulary words, concept names). `posterior` holds the parameters; the sites
marked *unit* are indexed by the data's units and live in the `unit_posterior` group, beside it, so that ArviZ's
functions with their defaults (`az.summary(fit.idata)`, `az.plot_trace(fit.idata)`, ...) show the parameters:
read them with `az.summary(fit.idata, group="unit_posterior")` or `fit.idata.unit_posterior["Y"]`. Every array
also has the leading dims `chain` and `draw`; observed sites (their `observed_data`, `log_likelihood` and
`posterior_predictive`) take the same dims. A site with two shapes (full or diagonal covariances) lists both.

kueck04's `gamma` and `beta` are per unit: one kernel per basis function, each centred on a training instance (all
N, or the `basis` option's subset; the intercept column too). A coefficient is exactly 0 in every draw where its
kernel is off (the spike of the prior), so a kernel never switched on in a chain gives that chain one value; the
headline `delta2` and `n_active` stay in `posterior`.

Elements certain a posteriori: a discrete element that takes the same value in every draw of every chain (e.g.
gustafson07's `M` of a feature whose relevance the data settle) stays in `posterior`, under the same dims: hiding
it would hide the headline. ArviZ 0.23 has no r-hat for it (its `rhat` divides a zero between-chain by a zero
within-chain variance and numpy warns "invalid value encountered in scalar divide"; `plot_rank` raises for an
integer array with one value). `fit.diagnose()` rates such a site "certain" (with the evidence that the sampler
proposed moves) instead of an r-hat, or "point estimate" for a variational fit whose q is a point mass there in
every restart (ross03's `r` once annealing ends); `zoo.core.idata.certain_elements(fit.idata)` lists the elements.

Posterior predictive (`posterior_predictive`, the observed sites' dims): every fit with draws of every model
(carbonetto03's and yakhnenko's generic methods, gustafson07's `X`, kueck04's `group_label` / `fraction`, ross03's
`x`, yakhnenko's `words` / `visual_words`), up to 2e7 simulated numbers per fit; point estimates (EM, MAP) have
none. Prior predictive: `zoo.core.prior_predictive.add_prior_predictive(fit)` for the models whose program simulates its
data from the priors alone (carbonetto03, yakhnenko, users' programs). `lp` in `sample_stats`: every sampler's fit,
and `zoo.kernel` runs through `az.from_numpyro`.

Generated from the registry by `tests/core/test_sites_doc.py` (`ZOO_WRITE_SITES_DOC=1`).
"""


def _dims_text(dims) -> str:
    options = list(dims) if dims and isinstance(dims[0], tuple) else [dims]
    return " or ".join("(" + ", ".join(d) + ")" if d else "()" for d in options)


def sites_table() -> str:
    ensure_loaded()
    lines = [_HEADER, "| model | site | dims | per unit (`unit_posterior`) |", "| --- | --- | --- | --- |"]
    for model_id, entry in sorted(models_registered().items()):
        for site, dims in entry.site_dims.items():
            unit = "yes" if site in entry.unit_sites else ""
            lines.append(f"| `{model_id}` | `{site}` | {_dims_text(dims)} | {unit} |")
    return "\n".join(lines) + "\n"


def test_the_sites_doc_matches_the_registry():
    text = sites_table()
    if os.environ.get("ZOO_WRITE_SITES_DOC") == "1":
        DOC.write_text(text)
    assert DOC.read_text() == text, "docs/sites.md is stale: regenerate it (see this file's docstring)"


def test_every_model_declares_the_dims_of_its_headline_and_unit_sites():
    ensure_loaded()
    for model_id, entry in models_registered().items():
        declared = set(entry.site_dims)
        assert set(entry.unit_sites) <= declared, model_id
        assert {h for h in entry.headline if h not in ("n_relevant", "n_active", "delta2")} <= declared, model_id


def test_conform_layout_gives_every_method_one_naming():
    """Two methods' raw InferenceData with their own dims (an EM runner's and a generic NUTS's program dims) come
    out with the same dims and the data's labels, the per-unit sites beside the posterior."""
    entry = get_model("carbonetto03.translation")
    words = ["sky", "grass", "water"]
    em = to_inference_data({"mu": np.zeros((4, 1, 3, 2)), "Sigma": np.ones((4, 1, 3, 2, 2))},
                           dims={"mu": ["word", "feature"], "Sigma": ["word", "feature", "feature_bis"]})
    nuts = to_inference_data({"mu": np.zeros((2, 5, 3, 2)), "Sigma": np.ones((2, 5, 3, 2, 2))},
                             dims={"mu": ["word", "mu_dim_1"], "Sigma": ["word", "Sigma_dim_1", "Sigma_dim_2"]})
    for idata in (em, nuts):
        conform_layout(idata, unit_sites=entry.unit_sites, site_dims=entry.site_dims, coords={"word": words})
    for site in ("mu", "Sigma"):
        assert em.posterior[site].dims == nuts.posterior[site].dims
        assert list(nuts.posterior[site].coords["word"].values) == words
    units = get_model("gustafson07.fs")
    raw = to_inference_data({"Y": np.zeros((2, 5, 7), int), "M": np.zeros((2, 5, 3), int)},
                            dims={"Y": ["unit"], "M": ["M_dim_0"]})
    conform_layout(raw, unit_sites=units.unit_sites, site_dims=units.site_dims)
    assert list(raw.posterior.data_vars) == ["M"] and raw.posterior["M"].dims == ("chain", "draw", "feature")
    assert raw.unit_posterior["Y"].dims == ("chain", "draw", "region")


@pytest.mark.parametrize("method", ["map_em", pytest.param("nuts", marks=pytest.mark.extended)])
def test_carbonetto03_sites_have_the_same_dims_under_em_and_nuts(method):
    data = zoo.load_dataset("carbonetto03_sec2")
    options = dict(max_iter=5) if method == "map_em" else dict(num_chains=1, num_warmup=10, num_samples=10,
                                                                progress_bar=False)
    with warnings.catch_warnings():   # a 10-draw chain fails the convergence checks: not what this test reads
        warnings.simplefilter("ignore")
        fit = zoo.fit(zoo.model("carbonetto03.shrinkage_mixture"), data, method=method, **options)
    entry = get_model("carbonetto03.shrinkage_mixture")
    for name, var in fit.idata.posterior.data_vars.items():
        declared = entry.site_dims[name.removesuffix("_relabelled")]
        options = list(declared) if isinstance(declared[0], tuple) else [declared]
        assert var.dims[2:] in options, (method, name, var.dims)
    assert fit.idata.observed_data["x"].dims == ("point", "feature")



def _dims_by_group(fit) -> dict:
    """(group, site) -> the site's dims after (chain, draw) (observed_data: all its dims), for the groups that
    hold sites: posterior, unit_posterior, posterior_predictive, log_likelihood, observed_data."""
    out = {}
    for group in ("posterior", "unit_posterior", "posterior_predictive", "log_likelihood", "observed_data"):
        if group in fit.idata.groups():
            for name, var in fit.idata[group].data_vars.items():
                out[group, name] = var.dims if group == "observed_data" else var.dims[2:]
    return out


@pytest.mark.extended   # three fits of the topic model (about a minute on a shared core)
def test_yakhnenko_sites_have_the_same_dims_under_every_variational_method():
    """The paper's mean-field VI, stochastic VI and the generic SVI on the program name every site alike (the
    declared dims), in every group that holds it, posterior predictive included."""
    data = zoo.load_dataset("yakhnenko_synthetic", n_images=30)
    spec = zoo.model("yakhnenko.mom_lda", n_topics=3)
    settings = {"mean_field_vi": dict(max_iter=5, num_draws=20),
                "stochastic_vi": dict(passes=1, batch_size=16, num_draws=20),
                "svi": dict(num_steps=50, num_samples=20)}
    entry, seen = get_model("yakhnenko.mom_lda"), {}
    for method, options in settings.items():
        with warnings.catch_warnings():   # a 5-step fit fails the convergence checks: not what this test reads
            warnings.simplefilter("ignore")
            fit = zoo.fit(spec, data, method=method, seed=0, progress_bar=False, **options)
        dims = _dims_by_group(fit)
        assert ("posterior_predictive", "words") in dims, method
        for (group, name), got in dims.items():
            declared = entry.site_dims.get(name.removesuffix("_relabelled"))
            if declared is None:
                continue
            if group == "log_likelihood":
                declared = declared[:len(got)]
            assert got == tuple(declared), (method, group, name, got)
            assert seen.setdefault((group, name), got) == got, (method, group, name)
