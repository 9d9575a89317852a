"""The report tables of ``zoo reproduce kueck04`` (``zoo.experiments.kueck04``), and the thesis' numbers and the
run's settings they state: each function turns a ``run_*`` result of that module into a ``zoo.reports.Table`` with
its note. Kept apart so that the experiment module stays within the experiment modules' size
(tests/test_reports.py); ``zoo.experiments.kueck04`` imports and re-exports them.
"""
from __future__ import annotations

__all__ = ["THESIS", "DEFAULT_MAX_ACTIVE", "SELECTED", "MIL_BASIS", "CAPACITY_NOTE", "ring_table", "kernel_table",
           "embedded_tables", "parallel_lines_table", "real_data_table"]

THESIS = {"ring_time_s": 10.0, "z_acceptance": 0.80, "gamma_acceptance": 0.08, "active": 6,
          "table_5_1": {("gaussian", "constraint"): 0.885, ("gaussian", "hybrid"): 0.922,
                        ("sigmoid", "constraint"): 0.936, ("sigmoid", "hybrid"): 0.942}}

#: the experiments' first capacity of the active set (zoo.papers.kueck04's default until session 6, now
#: ``kueck04.MAX_ACTIVE`` = 100); a fit that reaches it is rerun with the number of instances
DEFAULT_MAX_ACTIVE = 50

#: the row of the kueck04 model with the kernel chosen by inner cross-validation (``kueck04_select``)
SELECTED = "kueck04.constraint, kernel by inner CV"

#: basis centres per benchmark (None: one per training instance, the thesis' choice). Musk2's 6,598 instances make
#: the full basis's N x N Gram matrix and its per-fold prediction the cost of the whole run (the nested 10-fold
#: selection did not finish in 27 min on one core); 500 k-means++ centres as in the leaderboard (KUECK_BASIS), a
#: choice made for cost before the run, not by its accuracy (with them it takes 52 min on one core).
MIL_BASIS = {"musk2": 500}

CAPACITY_NOTE = ("capacity: the active set's size limit; a fit that reached 50 was rerun with the "
                 "number of instances, where no birth can be refused (so no fit here is truncated).")


def ring_table(rows: list[dict], fast: bool):
    from zoo.reports import Table
    by = {r["data"]: r for r in rows}
    ring, inv = by["ring"], by["inverted ring"]
    quantities = [("accuracy of instance labels at 0.5", "accuracy@0.5", "near-perfect"),
                  ("gamma (active set) acceptance", "gamma_acceptance", THESIS["gamma_acceptance"]),
                  ("active kernels (mean)", "active", THESIS["active"]),
                  ("active kernels (max)", "active_max", None),
                  ("active-set capacity", "capacity", None),
                  ("Z acceptance, Metropolis sampler", "z_acceptance_mh", THESIS["z_acceptance"]),
                  ("ESS of the total log-likelihood, exact Z sampler", "ess_loglik_exact", None),
                  ("ESS of the total log-likelihood, Metropolis Z sampler", "ess_loglik_mh", None),
                  ("wall time s (one chain, compilation included)", "wall_s_incl_compile", THESIS["ring_time_s"])]
    table_rows = [[label, ring[key], inv[key], thesis] for label, key, thesis in quantities]
    n = 300 if fast else 2000
    return Table("Ring and inverted ring (thesis Exp. 1)", ["quantity", "ring", "inverted ring", "thesis (ring)"],
                 table_rows,
                 note=f"One chain of {n} + {n} sweeps, gaussian kernel, width 1. The zoo's wall time includes JAX "
                      f"compilation (the inverted ring reuses the compiled sampler); the thesis' 10 s is its own C++ "
                      f"program on its machine. Acceptance rates (zoo gamma {ring['gamma_acceptance']:.2f} vs 0.08, "
                      f"Metropolis Z {ring['z_acceptance_mh']:.2f} vs 0.80): the gaps are not explained by anything "
                      f"this reproduction measures.")


def kernel_table(rows: list[dict]):
    from zoo.reports import Table
    return Table("Seven kernels on two Gaussians (thesis Sec. 5.2)",
                 ["kernel", "accuracy at 0.5", "AUC", "active kernels (mean)", "active kernels (max)", "capacity"],
                 [[r["kernel"], r["accuracy@0.5"], r["auc"], r["active"], r["active_max"], r["capacity"]]
                  for r in rows],
                 note="The thesis shows this experiment only as figures (every kernel separates the two clusters). "
                      f"{CAPACITY_NOTE}")


def embedded_tables(res):
    """``res``: an ``EmbeddedResult`` of zoo.experiments.kueck04."""
    from zoo.reports import Table
    auc_table = Table("Embedded cluster, constraint vs hybrid (thesis Table 5.1, AUC on the training instances)",
                      ["kernel", "model", "AUC (zoo)", "AUC (thesis)", "active kernels (mean)", "capacity"],
                      [[r["kernel"], r["model"], r["auc"], r["thesis_auc"], r["active"], r["capacity"]]
                       for r in res.rows],
                      note="The instances are the zoo's own draw from the thesis' description (75 groups of 8, "
                           "85 % purely negative; the group counts below match the thesis'), not the thesis' "
                           "points, so the AUCs are not expected to agree to the third decimal; the thesis' "
                           "ordering is hybrid > constraint for both kernels.")
    kinds = ("mixed", "negative", "positive")
    groups = Table("Embedded cluster: groups by kind", ["group kind", "zoo data", "thesis"],
                   [[k, res.groups[k], res.thesis_groups[k]] for k in kinds])
    return [auc_table, groups]


def _parallel_lines_capacity_note(rows: list[dict]) -> str:
    """What the rows whose active set outgrew the default capacity show (computed from the rows): how many of the
    instances their chains keep as kernels, their AUC, and their share of the stage's fit time."""
    grown = [r for r in rows if r["capacity"] > DEFAULT_MAX_ACTIVE]
    if not grown:
        return ""
    from zoo.reports import format_number, format_setting
    names = ", ".join(r["model"] + ("" if r["chi"] is None else f" (chi = {format_setting(r['chi'])})")
                      for r in grown)
    total = sum(r.get("seconds", 0.0) for r in rows)
    share = (f"; with their capacity reruns they took {format_number(100 * sum(r['seconds'] for r in grown) / total)}"
             " % of this stage's fit time" if total and all("seconds" in r for r in rows) else "")
    return (f" {names}: the groups tell these models nothing about the lines (chi = 0 ignores the fractions), and "
            f"their chains keep {' and '.join(format_number(r['active']) for r in grown)} of the "
            f"{grown[0]['capacity']} instances as kernels on average (AUC "
            f"{' and '.join(format_number(r['auc']) for r in grown)}){share}.")


def parallel_lines_table(result):
    """``result``: a ``RowsResult`` of zoo.experiments.kueck04 (``run_parallel_lines``)."""
    from zoo.reports import Table, format_setting
    timed = all("seconds" in r for r in result.rows)
    return Table("Parallel lines (thesis Fig. 5.10)",
                 ["model", "chi", "AUC", "active kernels (mean)", "active kernels (max)", "capacity"]
                 + ["fit s (compilation included)"] * timed,
                 [[r["model"], format_setting(r["chi"]), r["auc"], r["active"], r["active_max"], r["capacity"]]
                  + ([r["seconds"]] if timed else [])
                  for r in result.rows],   # chi is a setting: "10" beside "100", not a measured "10.0"
                 note="Thesis (figure only): the constraint model is uninformative here, the hybrid model improves as "
                      f"chi (the weight of the group fractions) grows. {CAPACITY_NOTE}"
                      + _parallel_lines_capacity_note(result.rows))


def real_data_table(real: dict):
    """Bag accuracy and AUC of the zoo's runs beside the published ones (Carbonneau et al. 2018, Table 4)."""
    from zoo.reports import Table
    rows = []
    for name, res in real.items():
        for method in ("kueck04.constraint", SELECTED, "SI-SVM"):
            if method not in res:
                continue
            pub = res.get(f"published {method}", {"accuracy_pct": None, "auc_x100": None})
            label = "SI-SVM (scikit-learn, same folds)" if method == "SI-SVM" else method
            rows.append([name, label, res[method]["accuracy_pct"], res[method]["auc_x100"], pub["accuracy_pct"],
                         pub["auc_x100"]])
        for method in ("mi-SVM", "MI-SVM", "EMD-kernel"):
            pub = res[f"published {method}"]
            rows.append([name, method, None, None, pub["accuracy_pct"], pub["auc_x100"]])
    folds = sorted({res.get("n_folds", 10) for res in real.values()})
    selection = " only (no inner kernel selection in this run)" if not any(SELECTED in r for r in real.values()) else (
        "; and with the kernel (gaussian / cauchy) and width (0.5, 1, 2 x median distance) chosen per outer fold "
        "by a 3-fold inner cross-validation on its training bags (held-out log score), never on the outer test bags")
    return Table(f"MIL benchmarks, {'/'.join(map(str, folds))}-fold cross-validation over bags",
                 ["data", "method", "accuracy % (zoo)", "AUC x100 (zoo)", "accuracy % (published)",
                  "AUC x100 (published)"], rows,
                 note="The thesis has no real-data results; the published numbers are Carbonneau et al. (2018) "
                      "Table 4, from their own folds and settings; the zoo's runs use stratified folds (seed 0): "
                      "kueck04.constraint with the documented defaults (gaussian, median-distance width)"
                      + selection + ". The constraint model is not among the published methods. "
                      + "; ".join(f"{name}: {m} k-means++ basis centres (for cost)" for name, m in MIL_BASIS.items())
                      + "; the others: a basis function on every training instance.")
