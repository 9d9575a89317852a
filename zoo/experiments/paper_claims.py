"""The papers' claims, each checked against the zoo's own numbers in the report's tables (``zoo.reports.Claim``):
one function per paper, called by its experiment module's ``reproduce`` with the results it has just tabled and
the paper's numbers (passed in: this module imports no experiment).
A claim quotes the paper; its verdict (orderings, tolerances) is computed from the numbers, and a gap without an
explanation says so."""
from __future__ import annotations

import numpy as np

from zoo.reports import Claim, mark

__all__ = ["carbonetto03_claims", "gustafson07_claims", "kueck04_claims", "ross03_claims", "yakhnenko_claims"]

def carbonetto03_claims(res2, res5, fast: bool, paper_sec2: dict, symmetric: str) -> list:
    """The paper's claims of Sec. 2 and 5.2 (``res2``: Sec2Result, ``res5``: Sec52Result of the module), each
    against the zoo's numbers in the tables of the report."""
    rms = {name: float(np.mean(v["relevant"])) for name, v in res5.rms.items()}
    sd = {name: float(np.std(v["relevant"])) for name, v in res5.rms.items()}
    acc = {name: 100 * float(np.mean(v["best"])) for name, v in res2.accuracy.items()}
    map9, ml9, ml3 = "MAP full, all 9 (alpha=11)", "ML, all 9 features", "ML, first 3 features"

    def spread(a: str, b: str) -> str:
        """Whether the two means differ by more than the larger sd over data sets (computed, not assumed)."""
        n = len(res5.rms[a]["relevant"])
        within = abs(rms[a] - rms[b]) <= max(sd[a], sd[b])
        return (f" Over {n} data sets the two means differ by {abs(rms[a] - rms[b]):.3f}, "
                + ("within" if within else "more than") + f" one sd ({max(sd[a], sd[b]):.3f}).")
    out = [
        Claim("MAP (shrinkage) estimates the word means better than ML when all 9 features are given (Fig. 5)",
              "Sec. 5.2: RMS error of the estimated word means", {map9: rms[map9], ml9: rms[ml9]},
              order=[map9, ml9], higher_is_better=False,
              why=("The zoo's MAP full error is not below ML's on these data sets." + spread(map9, ml9))
              if rms[map9] >= rms[ml9] else ""),
        Claim("ML given only the 3 relevant features beats MAP given all 9 (Fig. 5)",
              "Sec. 5.2: RMS error of the estimated word means", {ml3: rms[ml3], map9: rms[map9]},
              order=[ml3, map9], higher_is_better=False,
              why=("The zoo's ML on 3 features does not beat MAP on all 9 here." + spread(ml3, map9))
              if rms[ml3] >= rms[map9] else ""),
        Claim("ML on the 3 informative features: 99.5 % of points classified right (Sec. 2)",
              "Sec. 2: training-set classification accuracy %",
              {"ML, 3 informative features": acc["ML, 3 informative features"]},
              paper={"ML, 3 informative features": paper_sec2["ML, 3 informative features"]}, tolerance=2.0),
        Claim("ML on all 6 features: 37.5 % right (Sec. 2)", "Sec. 2: training-set classification accuracy %",
              {"ML, all 6 features": acc["ML, all 6 features"]},
              paper={"ML, all 6 features": paper_sec2["ML, all 6 features"]}, tolerance=2.0,
              why="The zoo's EM from data points finds the clusters; the paper's 37.5 = 75/200 is what EM from a "
                  "symmetric start (all means at the data mean) gives: row '" + symmetric + "'."),
    ]
    return out


def gustafson07_claims(sec7, on_program: bool, paper_sec7: dict, variants: tuple) -> list:
    """The paper's Sec. 7 claims against the zoo's Sec. 7 table (orderings: the rates are on other images)."""
    data = "regions drawn from the CVFS program" if on_program else "MSRC-v2 regions"
    valid = {v.upper(): mark(float(sec7.rates[v][1]), sec7.converged.get(v, True)) for v in variants}
    train = {v.upper(): mark(float(sec7.rates[v][0]), sec7.converged.get(v, True)) for v in variants}
    table = "Sec. 7: classification rates (% of regions)"
    paper_valid = sorted(variants, key=lambda v: -paper_sec7[v][1])
    paper_train = sorted(variants, key=lambda v: -paper_sec7[v][0])
    why = (f"The zoo's rates are on {data}, the paper's on Corel images with other classes and features; "
           "an ordering that differs on other data is a finding, not a bug, and with unconverged chains it is not "
           "settled either way.")
    out = []
    for name, zoo_rates, order, col in (("validation", valid, paper_valid, 1), ("training", train, paper_train, 0)):
        quote = (f"{name} rates (% of regions right): "
                 + ", ".join(f"{v.upper()} {paper_sec7[v][col]}" for v in order) + " (Sec. 7, Corel)")
        # the paper's rates are on other data: shown beside the zoo's, compared by ordering only (no tolerance)
        c = Claim(quote, table, {v.upper(): zoo_rates[v.upper()] for v in order},
                  paper={v.upper(): paper_sec7[v][col] for v in order}, order=[v.upper() for v in order])
        c.why = "" if c.agrees() else (why if "ordering" in c.verdict() else
                                         "The ordering agrees; some of the rates come from chains that failed "
                                         "fit.diagnose(), so the agreement is not settled.")
        out.append(c)
    return out


def kueck04_claims(ring_rows: list[dict], thesis: dict) -> list:
    """The thesis' statements on the ring data (Exp. 1) against the zoo's ring table. A claim within its
    tolerance gets no "why the gap" line, except what a reader needs to weigh the agreement."""
    ring = {r["data"]: r for r in ring_rows}["ring"]
    table = "Ring and inverted ring (thesis Exp. 1)"
    unexplained = "Not explained by what this run measures (see the table's note)."
    active = Claim("about 6 kernels active on the ring data (Exp. 1)", table,
                   {"active kernels (mean)": float(ring["active"])}, paper={"active kernels (mean)": thesis["active"]},
                   tolerance=3.0)
    active.why = ("Within the tolerance; the zoo's number is its chain's mean over the sweeps after warm-up, and the "
                  "thesis does not say whether its 6 is a mean or a final state." if active.agrees() else
                  "Not explained by what this run measures: the zoo's chain keeps more kernels active (its mean over "
                  "the sweeps after warm-up); the thesis does not say whether its 6 is a mean or a final state.")
    rates = [Claim("active-set (gamma) moves accepted about 8 % of the time (Exp. 1)", table,
                   {"gamma (active set) acceptance": float(ring["gamma_acceptance"])},
                   paper={"gamma (active set) acceptance": thesis["gamma_acceptance"]}, tolerance=0.04),
             Claim("Metropolis moves of the latent Z accepted about 80 % of the time (Exp. 1)", table,
                   {"Z acceptance, Metropolis sampler": float(ring["z_acceptance_mh"])},
                   paper={"Z acceptance, Metropolis sampler": thesis["z_acceptance"]}, tolerance=0.1)]
    for c in rates:
        c.why = "" if c.agrees() else unexplained
    return [active, *rates]


def ross03_claims(rows: list, table: str, tolerance: float, why: str) -> list:
    """The thesis' Table 3.1 (test RMS on shapes) against the zoo's Table 3.1 (``rows``: (model and setting,
    description length, zoo RMS, thesis RMS)): the ordering of the model families, the ordering of the MCVQ
    settings, each number within ``tolerance``; ``why``: what differs from the thesis' runs."""
    zoo = {r[0]: float(r[2]) for r in rows}
    thesis = {r[0]: float(r[3]) for r in rows}
    families = ["MCVQ 3 VQs, 12 states", "PCA 12 components", "NMF 12 vectors", "VQ 38 vectors"]
    settings = ["MCVQ 3 VQs, 12 states", "MCVQ 2 VQs, 18 states", "MCVQ 4 VQs, 9 states", "MCVQ 8 VQs, 4 states",
                "MCVQ 6 VQs, 6 states"]
    out = []
    for quote, labels, order in (
            ("MCVQ (3 VQs x 12 states) reconstructs unseen shapes best: test RMS 0.21, PCA (12 components) 0.22, "
             "NMF (12 vectors) 0.35, VQ (38 vectors) 0.49 (Table 3.1)", families, families),
            # the thesis ties 2 x 18 with 4 x 9 (0.26) and 8 x 4 with 6 x 6 (0.34, 0.35): the ordering checked is
            # that of the three groups, one member each; every number is checked against the tolerance
            ("Of the MCVQ settings, 3 x 12 is best (0.21), 2 x 18 and 4 x 9 next (0.26), 8 x 4 and 6 x 6 worst "
             "(0.34, 0.35) (Table 3.1)", settings, settings[:2] + settings[3:4])):
        c = Claim(quote, table, {k: zoo[k] for k in labels}, paper={k: thesis[k] for k in labels}, order=order,
                  higher_is_better=False, tolerance=tolerance)
        c.why = "" if c.agrees() else f"The zoo's run differs from the thesis': {why}."
        out.append(c)
    return out


def yakhnenko_claims(rows: dict, table: str, column: str, paper_table1: dict, paper_column: int,
                     data: str) -> list:
    """The paper's Table 1 ordering of the methods (VOC 2007) against the zoo's table ``table`` on other data:
    ``rows`` {method: {column: accuracy %}} as tabled; ``paper_table1`` {method: (per region, per caption)} and
    ``paper_column`` which of the two is compared; ``data`` names the zoo's data set. Methods the run left out (the
    logistic regression in --fast) are not compared."""
    kind = ("per region", "per caption")[paper_column]
    order = sorted((m for m in paper_table1 if m in rows and rows[m].get(column) is not None),
                   key=lambda m: -paper_table1[m][paper_column])
    quote = (f"{kind} accuracy %: " + ", ".join(f"{m} {paper_table1[m][paper_column]:.2f}" for m in order)
             + " (Table 1, VOC 2007)")
    # VOC 2007's numbers shown beside the zoo's, compared by ordering only (other data: no tolerance)
    c = Claim(quote, table, {m: float(rows[m][column]) for m in order},
              paper={m: paper_table1[m][paper_column] for m in order}, order=order)
    c.why = "" if c.agrees() else (
        f"The zoo's numbers are on {data}, the paper's on VOC 2007 (not available here) with other images, words "
        "and visual features; only the ordering is comparable, and an ordering that differs on other data is a "
        "finding about these data, not a failed reproduction of VOC 2007.")
    return [c]
