"""The one step every fit passes through after its runner, the zoo's models and users' programs alike.

``zoo.fit`` (``zoo.api``) dispatches to the method's runner (``zoo.core.registry.dispatch``, or a generic method
for a user's program) and hands the ``Fit`` here. ``finish`` then, in order:

1. checks the outputs for NaN and infinity (``zoo.core.finite.check_finite``: an error naming the likely cause);
2. records what the posterior holds (``mark_inference``: "mcmc", "variational" or "point estimate"), setting a
   point estimate's log likelihood aside so that ``az.loo`` refuses it;
3. relabels the draws of exchangeable components (``add_relabelled``: ``<site>_relabelled`` beside the raw
   draws; a user's program declares no exchangeable sites, so nothing is relabelled there);
4. gives the InferenceData the zoo's one layout (``zoo.core.idata.conform_layout`` with the model's
   ``layout``): per-unit sites in ``unit_posterior``, each site's dims named once whatever the method, the
   data's labels as coordinates;
5. stores the provenance (``zoo.core.provenance``) in the attributes of every InferenceData group;
6. judges convergence (``zoo.core.convergence``: MCMC draws, variational draws and point estimates alike) and,
   when a headline site fails its checks, issues one ConvergenceWarning at the user's call.
"""
from __future__ import annotations

import time
import warnings
from typing import Any, Mapping

from zoo.core import convergence
from zoo.core.finite import check_finite
from zoo.core.idata import conform_layout, set_aside_point_log_likelihood
from zoo.core.provenance import provenance_attrs
from zoo.core.relabel import apply_permutations, permute_labels, relabel_draws, relabel_within_groups

__all__ = ["finish", "mark_inference", "add_relabelled"]


def finish(fit, spec, data, options: Mapping[str, Any], *, kind: str | None, exchangeable: Mapping[str, Any],
           seed: int, start: float, compile_seconds: float, stacklevel: int = 3,
           layout: Mapping[str, Any] | None = None):
    """The fit checked, marked, relabelled, with its provenance and convergence verdict (see the module
    docstring). ``start``: ``time.perf_counter()`` when ``zoo.fit`` began (the wall time ends after step 3);
    ``stacklevel``: where the ConvergenceWarning points (3: the caller of the function that calls ``finish``);
    ``layout``: keyword arguments of ``conform_layout`` (``zoo.core.registry.layout_of``; None for a user's
    program)."""
    check_finite(fit, spec, data, options)
    mark_inference(fit, kind)
    add_relabelled(fit, exchangeable)
    conform_layout(fit.idata, **dict(layout or {}))
    attrs = provenance_attrs(model_id=spec.id, model_options=spec.options, method=fit.method, options=options,
                             priors=spec.priors, seed=seed, data=data, wall_seconds=time.perf_counter() - start,
                             compile_seconds=compile_seconds)
    attrs["zoo_inference"] = fit.inference
    # the exchangeable sites, for the verdict's advice (label switching) and the comparison of restarts as sets
    attrs["zoo_exchangeable"] = " ".join(site for site in exchangeable if site != "within")
    for group in fit.idata.groups():
        getattr(fit.idata, group).attrs.update(attrs)
    table = fit.diagnose()
    message = convergence.advice(table)
    if message:
        warnings.warn(convergence.ConvergenceWarning(message, convergence.failing_sites(table)),
                      stacklevel=stacklevel)
    return fit


def mark_inference(fit, kind: str | None) -> None:
    """Record what the fit's posterior holds (``kind``, else judged from its draws) and keep a point estimate's
    log likelihood out of ArviZ's ``log_likelihood`` group (``set_aside_point_log_likelihood``)."""
    fit.idata.posterior.attrs["zoo_inference"] = kind or fit.inference
    if fit.inference == "point estimate":
        set_aside_point_log_likelihood(fit.idata)


def add_relabelled(fit, exchangeable: Mapping[str, Any]) -> None:
    """``<site>_relabelled`` beside each exchangeable site of a fit with draws (not for point estimates).

    ``exchangeable`` maps a site to its component axis (an int, after chain and draw): the site's components are
    matched across draws (``zoo.core.relabel.relabel_draws``); or to ``("carry", axis)``: the site's axis is reordered
    with the others but takes no part in the matching (e.g. discrete states per component); or to ``"labels"``:
    the site's values are component indices, mapped through the same permutations (e.g. which VQ a dimension
    selected). The entry ``"within"``: ``{"groups": {site: component axis}, "states": {site: state axis},
    "labels": {site: component axis}}`` aligns, after the components, the states within each component (MCVQ's
    states within each VQ), and maps the label sites whose values are state indices."""
    post = fit.idata.posterior
    present = {site: how for site, how in exchangeable.items() if site in post}
    axes = {site: how for site, how in present.items() if isinstance(how, int)}
    if not axes or fit.is_point_estimate:
        return
    aligned, perms = relabel_draws({site: post[site].values for site in axes}, axes)
    carried = {site: how[1] for site, how in present.items() if isinstance(how, tuple) and how[0] == "carry"}
    aligned.update(apply_permutations({site: post[site].values for site in carried}, carried, perms))
    aligned.update({site: permute_labels(post[site].values, perms) for site, how in present.items()
                    if how == "labels"})
    within = exchangeable.get("within")
    if within:  # then the states within each component, component by component (zoo.core.relabel.relabel_within_groups)
        states = {site: axis for site, axis in within["states"].items() if site in aligned}
        labels = {site: axis for site, axis in within.get("labels", {}).items() if site in aligned}
        if states:
            aligned.update(relabel_within_groups({site: aligned[site] for site in [*states, *labels]},
                                                 {site: within["groups"][site] for site in states}, states, labels))
    for site, values in aligned.items():
        post[f"{site}_relabelled"] = (post[site].dims, values)
        post[f"{site}_relabelled"].attrs["note"] = f"{site} with components aligned across draws (zoo.core.relabel)"
