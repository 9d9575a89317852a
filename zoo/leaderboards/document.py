"""``docs/leaderboard.md`` and ``docs/leaderboard.png``: the leaderboard as a reader uses it.

Reads the measured rows (``docs/results/``: the seeded-split summary of ``zoo.leaderboard``, the Corel5k standard
split of ``zoo.leaderboards.corel5k_standard``, and, when present, the MSRC pixel accuracies and the MIL protocol
runs) and writes: what each metric means, one table per data set and setting sorted by its main metric (the
supervised bound set apart, rows identical in every metric merged), the published rows beside the zoo's with the
protocol difference in one line, a "which model when" summary computed from the numbers, and one figure.

``python -m zoo.leaderboards.document [--results docs/results] [--out docs]``.
"""
from __future__ import annotations

import json
import math
import pathlib

import numpy as np

from zoo.leaderboards.results_io import read_results

__all__ = ["summarize_protocol", "unfinished_runs", "load_results", "merge_identical", "setting_label", "method_label",
           "render_markdown", "which_model_when", "plot_summary", "write_docs", "ACC_METRICS"]

ACC_METRICS = ("caption_acc", "free_acc", "P@5", "R@5")
REGION_METRICS = ("caption_acc", "free_acc", "P@5", "R@5", "log_density")
FEATURES = {"carbonetto03": "features of Carbonetto et al. 2003", "gustafson07": "features of Gustafson et al. 2007",
            "kueck04": "features of Kück 2004"}
MODEL_NAMES = (("carbonetto03 ", "translation (Carbonetto et al. 2003) "), ("gustafson07 ", "Gustafson et al. 2007 "),
               ("kueck04 ", "Kück 2004 "))


def setting_label(dataset: str) -> str:
    """"msrc_v2 carbonetto03 ncut" -> "MSRC-v2, NCut regions, features of Carbonetto et al. 2003"."""
    parts = dataset.split()
    if parts[0] == "msrc_v2" and len(parts) == 3 and parts[1] in FEATURES:
        segmentation = {"ncut": "NCut", "slic": "SLIC"}.get(parts[2], parts[2])
        return f"MSRC-v2, {segmentation} regions, {FEATURES.get(parts[1], parts[1] + ' features')}"
    if parts[0] == "msrc_v2":
        return "MSRC-v2 (" + ", ".join(parts[1:]) + ")"
    return {"corel5k": "Corel5k, seeded 4,500 / 500 splits",
            "corel5k standard": "Corel5k, standard split (Mulan train / test)"}.get(dataset, dataset)


def method_label(method: str) -> str:
    """A model's name that no longer doubles as a feature set's: "carbonetto03 MAP full" -> "translation
    (Carbonetto et al. 2003) MAP full"."""
    for prefix, name in MODEL_NAMES:
        if method.startswith(prefix):
            return name + method[len(prefix):]
    return method


def load_results(folder) -> dict:
    """{"seeded": summary rows, "standard": Corel5k standard rows, "pixel": rows or [], "mil": rows or []}."""
    folder = pathlib.Path(folder)

    def jsonl(name):
        return read_results(folder / name)
    seeded = json.loads((folder / "leaderboard_seeded.json").read_text())["rows"] \
        if (folder / "leaderboard_seeded.json").exists() else []
    for row in seeded:
        for key, value in row.items():
            if isinstance(value, list) and len(value) == 2 and key not in ("errors",):
                row[key] = tuple(float("nan") if v is None else float(v) for v in value)
    from zoo.leaderboards.methods import summarize
    pixel_rows = jsonl("msrc_pixel_rows.jsonl")
    pixel = [r for r in summarize(pixel_rows) if not math.isnan(r["pixel_acc"][0])] if pixel_rows else []
    fixed = jsonl("mil_protocol_rows.jsonl")
    # the SVM searches, one file per process that ran them (two processes never append to one file)
    searched = [r for path in sorted(folder.glob("mil_protocol_rows_svm_search*.jsonl"))
                if not path.stem.endswith("_folds") for r in read_results(path)]
    mil_rows = fixed + jsonl("mil_protocol_rows_kueck.jsonl") + searched
    mil = summarize_protocol(mil_rows) + unfinished_runs(mil_rows, jsonl("mil_protocol_rows_kueck_folds.jsonl"))
    for row in mil:
        same = [r for r in mil_rows if (r["data"], r["method"]) == (row["data"], row["method"])]
        if same and same[0].get("grid"):
            row["note"] = _search_note(same, fixed)
        elif same and same[0].get("chosen"):
            row["note"] = _selection_note(same) + row.get("note", "")
    return {"seeded": seeded, "standard": jsonl("corel5k_standard.jsonl"), "pixel": pixel, "mil": mil}


def _selection_note(rows: list[dict]) -> str:
    """How Kück's model chose its kernel and width in these runs, and where in the grid the widths fell."""
    chosen = [c for r in rows for c in r["chosen"]]
    first = rows[0]
    sweeps = first["sweeps"]
    where = (f"narrowest width chosen in {sum(c['grid_position'] == 0 for c in chosen)} of {len(chosen)} folds, "
             f"widest in {sum(c['grid_position'] == c['n_widths'] - 1 for c in chosen)}")
    jumps = {r.get("jump_tries", 0) for r in rows}       # rows from before the jumps existed ran without them
    where += ("; sampler without the Z-collapsed jumps of the active set" if jumps == {0} else
              f"; Z-collapsed jumps per sweep: {', '.join(map(str, sorted(jumps)))}")
    if first.get("selection") == "holdout":
        basis = f", {first['basis']} k-means++ centres" if first.get("basis") else ""
        return (f"kernel x {chosen[0]['n_widths']} widths by a 2/3 : 1/3 hold-out of the training bags, "
                f"{sweeps[0]} + {sweeps[0]} sweeps per selection fit, {sweeps[1]} + {sweeps[1]} per refit, one "
                f"chain{basis}; {where}")
    return (f"{sweeps[0]} + {sweeps[0]} sweeps per inner fit, {sweeps[1]} + {sweeps[1]} per refit; {where}")


def _search_note(rows: list[dict], fixed: list[dict]) -> str:
    """How an SVM's C and gamma were searched, what was chosen, and the fixed-setting method over the same runs
    (the same folds), so that the search's effect reads as a paired difference."""
    from zoo.reports import format_setting
    grid = rows[0]["grid"]
    cs, gammas = sorted({c for c, _ in grid}), sorted({g for _, g in grid})
    chosen = [c for r in rows for c in r["chosen"]]

    def counts(key, values):
        return ", ".join(f"{format_setting(v)}: {sum(c[key] == v for c in chosen)}" for v in values)
    base = rows[0]["method"].split(" (")[0]
    runs = sorted(r["run"] for r in rows)
    paired = [f["accuracy"] for f in fixed if (f["data"], f["method"]) == (rows[0]["data"], base) and f["run"] in runs]
    searched = [r["accuracy"] for r in rows if r["run"] in {f["run"] for f in fixed if f["method"] == base
                                                             and f["data"] == rows[0]["data"]}]
    note = (f"C in {{{', '.join(map(format_setting, cs))}}} x gamma in {{{', '.join(map(format_setting, gammas))}}} "
            f"x \"scale\", chosen per outer fold by inner 3-fold CV bag accuracy on its training bags; chosen C "
            f"({counts('C', cs)}), gamma factor ({counts('gamma_factor', gammas)}) over {len(chosen)} folds")
    if len(paired) == len(rows) and paired:
        note += (f"; {base} with C = 1, gamma \"scale\" on the same {len(runs)} run(s): "
                 f"{np.mean(paired):.1f}, difference {np.mean(searched) - np.mean(paired):+.1f}")
    return note


def unfinished_runs(rows: list[dict], fold_rows: list[dict]) -> list[dict]:
    """Rows for the finished folds of runs that did not finish (per data set and method; one per unfinished
    run), so that a stopped run still shows what it measured: accuracy over the test bags of its finished
    folds, ``runs`` 0 and ``folds_done``."""
    finished = {(r["data"], r["method"], r["run"]) for r in rows}
    groups = {}
    for f in fold_rows:
        key = (f["data"], f["method"], f["run"])
        if key not in finished:
            groups.setdefault(key, {})[f["fold"]] = f       # a fold rerun with the same settings counts once
    out, labels = [], {}
    for (data, method, run), folds in sorted(groups.items()):
        if data not in labels:
            from zoo.data.mil import load_mil_benchmark
            labels[data] = np.asarray(load_mil_benchmark(data).bag_labels)
        right = [(s > 0.5) == labels[data][b] for f in folds.values() for s, b in zip(f["scores"], f["bags"])]
        setting = next(iter(folds.values())).get("setting") or {}
        out.append({"data": data, "method": method, "runs": 0, "run": run, "folds_done": len(folds),
                    "accuracy": (100 * float(np.mean(right)), float("nan")), "n_folds": 10, "note": "",
                    "setting": setting, "chosen_folds": [f["chosen"] for f in folds.values()]})
    return out


def summarize_protocol(rows: list[dict]) -> list[dict]:
    """Mean and sd of the bag accuracy over runs per (data, method), with the number of runs."""
    groups = {}
    for r in rows:
        groups.setdefault((r["data"], r["method"]), []).append(r)
    out = []
    for (data, method), group in groups.items():
        acc = np.array([g["accuracy"] for g in group])
        out.append({"data": data, "method": method, "runs": len(group), "accuracy": (float(acc.mean()),
                                                                                       float(acc.std())),
                    "n_folds": group[0]["n_folds"]})
    return out


def _metric_key(row, metrics):
    return tuple(round(float(row[m][0]), 6) if not math.isnan(row[m][0]) else None for m in metrics) + \
        tuple(round(float(row[m][1]), 6) if not math.isnan(row[m][1]) else None for m in metrics)


def merge_identical(rows: list[dict], metrics=REGION_METRICS) -> list[dict]:
    """Rows of one setting identical in every metric (mean and sd; fit time aside) merged into the first, whose
    name says which others gave the same numbers (e.g. a model that standardizes its features itself, run on
    raw and on standardized features)."""
    out, seen = [], {}
    for row in rows:
        key = _metric_key(row, [m for m in metrics if m in row])
        if key in seen:
            seen[key].setdefault("same_as", []).append(row["method"])
            continue
        row = dict(row)
        seen[key] = row
        out.append(row)
    return out


def _pm(pair, scale=100.0, digits=1) -> str:
    mean, sd = pair
    if mean is None or math.isnan(mean):
        return "n/a"
    return f"{scale * mean:.{digits}f} ± {scale * sd:.{digits}f}"


def _name(row) -> str:
    name = method_label(row["method"])
    if row.get("same_as"):
        # a row with the same numbers in every metric: named by what differs ("raw features")
        others = [method_label(m) for m in row["same_as"]]
        others = [o[len(name):].strip(" ()") if o.startswith(name) else o for o in others]
        name += " (same numbers: " + ", ".join(others) + ")"
    if row.get("splits", 5) != 5:
        name += f" [{row['splits']} split{'s' if row['splits'] != 1 else ''}]"
    return name


def fit_seconds(seconds: float) -> str:
    """A "fit s" cell, one rule for every table: a rough wall time (a shared machine), so no more digits than it
    has: "< 0.1" below 0.05 s, one decimal below 10 s ("0.4", "7.6"), whole seconds from there ("35", "1491")."""
    seconds = float(seconds)
    if math.isnan(seconds):
        return "n/a"
    if seconds < 0.05:
        return "< 0.1"
    return f"{seconds:.1f}" if seconds < 9.95 else f"{seconds:.0f}"


def _seconds(pair) -> str:
    return fit_seconds(pair[0])


def _by_setting(rows):
    out = {}
    for r in rows:
        out.setdefault(r["dataset"], []).append(r)
    return out


def _sorted(rows, metric):
    return sorted(rows, key=lambda r: -(r[metric][0] if not math.isnan(r[metric][0]) else -1))


def _md_table(header, rows) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return lines


def _msrc_table(rows) -> list[str]:
    weak = merge_identical(_sorted([r for r in rows if r["family"] != "bound"], "caption_acc"))
    bound = [r for r in rows if r["family"] == "bound"]
    header = ["method", "kind", "caption acc %", "free acc %", "P@5 %", "R@5 %", "log density", "fit s"]
    body = [[_name(r), "model" if r["family"] == "model" else "baseline", _pm(r["caption_acc"]), _pm(r["free_acc"]),
             _pm(r["P@5"]), _pm(r["R@5"]), _pm(r["log_density"], 1.0, 2), _seconds(r["fit_s"])] for r in weak]
    lines = _md_table(header, body)
    for r in bound:
        lines += ["", "Upper bound (trained on the true region labels, which no other row sees): "
                      f"{_bound_name(r)}: caption {_pm(r['caption_acc'])} %, free {_pm(r['free_acc'])} %, "
                      f"P@5 {_pm(r['P@5'])} %."]
    return lines


def _corel_seeded_table(rows) -> list[str]:
    rows = merge_identical(_sorted(rows, "P@5"), ("P@5", "R@5"))
    return _md_table(["method", "kind", "P@5 %", "R@5 %", "fit s"],
                     [[_name(r), r["family"], _pm(r["P@5"]), _pm(r["R@5"]), _seconds(r["fit_s"])] for r in rows])


def _corel_standard_table(rows, published) -> list[str]:
    rows = sorted(rows, key=lambda r: -r["F1"])
    body = [[method_label(r["method"]), "zoo, 499 blob tokens", f"{r['P']:.3f}", f"{r['R']:.3f}", f"{r['F1']:.3f}",
             str(r["N+"]), f"{100 * r['P@5']:.1f}", fit_seconds(r["fit_s"])] for r in rows]
    for p in sorted(published, key=lambda p: -(2 * p["P"] * p["R"] / (p["P"] + p["R"]))):
        f1 = 2 * p["P"] * p["R"] / (p["P"] + p["R"])
        body.append([p["method"], f"published, features as stated: {p['features']}", f"{p['P']:.2f}",
                     f"{p['R']:.2f}", f"{f1:.3f}", str(p["Nplus"]), "-", "-"])
    lines = _md_table(["method", "source", "P (per word)", "R (per word)", "F1", "N+", "P@5 % (per image)", "fit s"],
                      body)
    lines += ["", "Published rows: " + "; ".join(f"{p['method']}: {p['source']}" for p in published) + ". "
              "Protocol difference in one line: the published rows use richer visual features than the 499 blob "
              "tokens (presence only) that Mulan distributes and the zoo's rows use; split, vocabulary, 5 words per "
              "image and the per-word averaging are the same."]
    return lines


def _pixel_table(rows) -> list[str]:
    lines = []
    for dataset, group in _by_setting(rows).items():
        weak = merge_identical(_sorted([r for r in group if r["family"] != "bound"], "pixel_acc"),
                               ("pixel_acc", "pixel_class_acc", "caption_acc"))
        lines += [f"### {setting_label(dataset)}", "",
                  *_md_table(["method", "kind", "global pixel acc %", "class-average pixel acc %",
                              "caption acc % (regions)"],
                             [[_name(r), "model" if r["family"] == "model" else "baseline", _pm(r["pixel_acc"]),
                               _pm(r["pixel_class_acc"]), _pm(r["caption_acc"])] for r in weak]), ""]
        for r in group:
            if r["family"] == "bound":
                lines += [f"Upper bound (trained on the true region labels): {_bound_name(r)}: global "
                          f"{_pm(r['pixel_acc'])} %, class average {_pm(r['pixel_class_acc'])} %.", ""]
    return lines


def _unfinished_note(row) -> str:
    chosen, setting = row["chosen_folds"], row.get("setting") or {}
    how = ""
    if setting.get("criterion") == "holdout":
        how = (f"2/3 : 1/3 hold-out over {setting['n_widths']} widths x 2 kernels, {setting['sweeps']} + "
               f"{setting['sweeps']} sweeps per selection fit, {setting['refit_sweeps']} + {setting['refit_sweeps']} "
               f"per refit" + (f", {setting['basis']} k-means++ centres" if setting.get("basis") else "") + "; ")
    return how + (f"narrowest width chosen in {sum(c['grid_position'] == 0 for c in chosen)} of {len(chosen)} "
                  f"folds, widest in {sum(c['grid_position'] == c['n_widths'] - 1 for c in chosen)}")


def _mil_table(rows, published) -> list[str]:
    pretty = {"musk1": "Musk1", "musk2": "Musk2", "elephant": "Elephant"}
    lines = []
    for data in ("Musk1", "Musk2", "Elephant"):
        body = [[r["method"], f"zoo, {r['runs']} x {r['n_folds']}-fold CV"
                 + (f" ({r['note']})" if r.get("note") else ""),
                 f"{r['accuracy'][0]:.1f} ± {r['accuracy'][1]:.1f} (sd over runs)" if r["runs"] > 1
                 else f"{r['accuracy'][0]:.1f} (one run: no spread)"]
                for r in sorted(rows, key=lambda r: -r["accuracy"][0]) if pretty.get(r["data"]) == data
                and r["runs"] > 0]
        body += [[r["method"], f"zoo, UNFINISHED: {r['folds_done']} of {r['n_folds']} folds of run {r['run']} "
                  f"(not a cross-validation estimate; {_unfinished_note(r)})", f"{r['accuracy'][0]:.1f} (those "
                  "folds' test bags)"]
                 for r in rows if pretty.get(r["data"]) == data and r["runs"] == 0]
        body += [[p["method"], "published (Carbonneau et al. 2018, suppl. Table 4: 10 x 10-fold CV on their folds)",
                  f"{p['accuracy']:.1f} ± {p['se']:.1f} (s.e.)"]
                 for p in sorted(published, key=lambda p: -p["accuracy"]) if p["data"] == data]
        if body:
            lines += [f"### {data}", "", *_md_table(["method", "protocol", "bag accuracy %"], body), ""]
    return lines


def _setting_order(dataset: str) -> tuple:
    """MSRC-v2 settings in the document's order: Carbonetto et al.'s features first, then by feature set, NCut
    before SLIC within each (``dataset``: "msrc_v2 FEATURES SEGMENTATION")."""
    features, segmentation = dataset.split()[1:3]
    return features != "carbonetto03", features, segmentation


def _bound_name(row) -> str:
    """An upper bound's name without its "(upper bound)" tag: the sentence that shows it already says so."""
    return _name(row).replace(" (upper bound)", "")


def which_model_when(seeded, standard) -> list[str]:
    """Summary computed from the rows: per task the methods that are best or within one sd of the best on the
    most MSRC-v2 settings (rows identical in every metric counted once), a table of the best per setting, and the
    Corel5k standard split's best."""
    msrc = {d: merge_identical([r for r in rows if r["family"] != "bound"])
            for d, rows in sorted((kv for kv in _by_setting(seeded).items() if kv[0].startswith("msrc_v2")),
                                  key=lambda kv: _setting_order(kv[0]))}
    tasks = (("caption_acc", "label the regions of captioned images (within-caption accuracy)"),
             ("free_acc", "label regions without a caption (free accuracy)"),
             ("P@5", "annotate whole images with words (P@5)"))
    lines, best = [], {}
    for metric, task in tasks if msrc else ():
        wins = {}
        for dataset, rows in msrc.items():
            weak = [r for r in rows if not math.isnan(r[metric][0])]
            top = max(weak, key=lambda r: r[metric][0])
            best[(dataset, metric)] = top
            for r in weak:
                if r[metric][0] >= top[metric][0] - top[metric][1]:
                    wins.setdefault(_name(r), []).append(dataset)
        leaders = sorted(wins.items(), key=lambda kv: -len(kv[1]))
        if not leaders:
            continue
        most = len(leaders[0][1])
        names = [m for m, d in leaders if len(d) == most]
        lines.append(f"- To {task}: {', '.join(names)} (best or within one sd of the best on {most} of "
                     f"{len(msrc)} settings).")
    if standard:
        top = max(standard, key=lambda r: r["F1"])
        tm = [r for r in standard if r["method"].startswith("translation")]
        line = (f"- To annotate Corel5k images from blob tokens (standard split): {method_label(top['method'])} "
                f"(per-word F1 {top['F1']:.3f}, N+ {top['N+']})")
        if tm and tm[0] is not top:
            line += f"; the discrete translation model: F1 {tm[0]['F1']:.3f}, N+ {tm[0]['N+']}"
        lines.append(line + ". The published rows, with richer features, are well above every blob-token row.")
    if not msrc:
        return lines
    lines += ["", "Best per MSRC-v2 setting (mean over 5 splits):", ""]
    rows = [[setting_label(d).replace("MSRC-v2, ", "")] +
            [f"{_name(best[(d, m)])} {100 * best[(d, m)][m][0]:.1f}" for m, _ in tasks] for d in msrc]
    lines += _md_table(["setting", "caption acc %", "free acc %", "P@5 %"], rows)
    return lines


def render_markdown(results: dict, published_corel, published_mil=()) -> str:
    """The whole document (see the module docstring)."""
    seeded, standard = results["seeded"], results["standard"]
    settings = _by_setting(seeded)
    msrc = sorted((d for d in settings if d.startswith("msrc_v2")), key=_setting_order)
    out = ["# Leaderboard: region-word models beside baselines", "",
           "Every number is measured by the zoo on the data named; published numbers appear only where marked "
           "\"published\", with their source. Means ± standard deviations over seeded splits.", "",
           "## Which model when", "", *which_model_when(seeded, standard), "",
           "## Metrics", "",
           "- **caption acc %** (MSRC-v2): share of labelled test regions whose true word is the method's best word "
           "among the test image's own caption words (the caption is given at test time); ties split evenly.",
           "- **free acc %** (MSRC-v2): the same over the whole vocabulary (no caption at test time).",
           "- **P@5 / R@5 %** (per image): the 5 best words of each test image (region scores averaged), precision "
           "and recall against its caption, averaged over images.",
           "- **log density**: mean log p(true word | region) over test regions, for methods with normalized "
           "probabilities (n/a otherwise). Higher is better.",
           "- **P, R, F1, N+ (per word; Corel5k standard split)**: each test image annotated with its 5 best words; "
           "per word, recall = correct / test images with the word, precision = correct / images annotated with it "
           "(0 if never predicted); P and R are means over the words of the test captions (263 on Mulan's split; "
           "the literature's 260 after its own filtering), F1 = 2PR / (P + R) from those means, N+ = words with "
           "recall > 0.",
           "- **pixel accuracy** (MSRC-v2, free labelling, no caption): share of non-void pixels whose region got "
           "the right word (global), and the mean over classes of that share (class average).",
           "- **fit s**: wall seconds to fit and predict one split (mean over splits), mostly on a shared 2-core "
           "machine (a few MCMC splits on a 16-core one, same code and seeds): a rough cost, not a benchmark.",
           "", "## Protocol", "",
           "MSRC-v2: 591 images, half for training and half for test in each of 5 seeded splits "
           "(`numpy.random.default_rng(seed)`, seed 0-4); features standardized on the training regions; the test "
           "images are seen without captions; every hyperparameter is chosen on training images only (inner "
           "cross-validation or the training objective). Corel5k: 5,000 images with 499 blob tokens; seeded 4,500 / "
           "500 splits (P@5 / R@5), and the standard fixed split of the literature (per-word metrics).", ""]
    out += ["## MSRC-v2 region labelling", "",
            "One table per segmentation and feature set, sorted by within-caption accuracy. Models on the "
            "features of Gustafson et al. and Kück were run with the cheaper methods only.", ""]
    for d in msrc:
        out += [f"### {setting_label(d)}", "", *_msrc_table(settings[d]), ""]
    if results["pixel"]:
        out += ["## MSRC-v2 pixel accuracy (free labelling, void excluded)", "",
                "Each test region gets its best word over the whole vocabulary (no caption at test time); every "
                "labelled pixel of the region is scored with it, void pixels excluded; mean ± sd over the first "
                "seeded splits of the protocol (all 5, or the number in brackets where the run was cut short). "
                "Weakly supervised segmentation work reports these two numbers on MSRC with its own train/test "
                "split and 21 classes (horse and mountain dropped); here all 23 classes, so the numbers are not "
                "set beside published ones.", "", *_pixel_table(results["pixel"])]
    elif msrc:
        out += ["## MSRC-v2 pixel accuracy", "", "Not measured yet: `zoo.metrics.pixel_accuracy` computes it "
                "(global and class average, void excluded) once the region maps of the test images are scored; the "
                "leaderboard run that produces them has not been made.", ""]
    if standard or published_corel:
        out += ["## Corel5k, standard split (the literature's protocol)", "",
                *_corel_standard_table(standard, published_corel), ""]
    if settings.get("corel5k"):
        out += ["## Corel5k, seeded splits", "", *_corel_seeded_table(settings["corel5k"]), ""]
    if results["mil"] or published_mil:
        out += ["## Multiple-instance benchmarks (Musk1, Musk2, Elephant)", "",
                "Bag accuracy, the mean over runs of 10-fold cross-validation, each run with its own stratified "
                "folds (run r: seed r). mi-SVM and MI-SVM run by the zoo: scikit-learn's RBF SVC with C = 1 and "
                "gamma = \"scale\" on standardized instances, fixed before any run (`zoo.experiments.mil_protocol`); "
                "the rows \"(C, gamma by inner CV)\" choose both per outer fold by inner 3-fold CV on the training "
                "bags from a grid fixed before any run (`zoo.experiments.mil_svm_search`), on the same folds. "
                "Kück's constraint model (Kück 2004): kernel (gaussian, cauchy) and width chosen in each outer fold "
                "on its training bags only, from widths spanned before any fit from the training instances' "
                "distances (half the median nearest-neighbour distance to the 90th percentile of pairwise "
                "distances), then refitted on all training bags; chain lengths, grid size and basis stated per row, "
                "set from the measured cost of one fold before any run. Protocol difference to the published rows "
                "in one line: their own folds and their own hyperparameter search; the zoo's Kück rows choose by "
                "one 2/3 : 1/3 hold-out with short single chains (not a full inner CV with long chains), over "
                "fewer runs where the row says so.", "", *_mil_table(results["mil"], published_mil)]
    pairs = before_after_from_summary(seeded)
    if pairs:
        out += ["## What each training-data choice changed", "",
                "Mean over the same splits of the main metric before and after a choice made on training data "
                "only.", "",
                *_md_table(["setting", "choice", "before %", "after %", "change"],
                           [[setting_label(p["dataset"]), p["choice"], f"{100 * p['before']:.1f}",
                             f"{100 * p['after']:.1f}", f"{100 * (p['after'] - p['before']):+.1f}"] for p in pairs]),
                ""]
    return "\n".join(out).rstrip() + "\n"


def before_after_from_summary(seeded) -> list[dict]:
    """``zoo.leaderboards.report.PAIRS`` on summary rows (means over all splits of each row)."""
    from zoo.leaderboards.report import PAIRS
    out = []
    for dataset, rows in _by_setting(seeded).items():
        metric = "P@5" if dataset.startswith("corel5k") else "caption_acc"
        by = {r["method"]: r for r in rows}
        for choice, before, after in PAIRS:
            if before in by and after in by and by[before]["splits"] == by[after]["splits"]:
                out.append({"dataset": dataset, "choice": choice, "before": by[before][metric][0],
                            "after": by[after][metric][0]})
    return out


def plot_summary(results: dict, published_corel, path) -> pathlib.Path:
    """One figure: within-caption accuracy per method on the two MSRC-v2 segmentations (Carbonetto et al.
    features), sorted, coloured by kind with a legend, the supervised bound as a line apart; and Corel5k's
    standard-split per-word F1 with the published rows hatched."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings = _by_setting(results["seeded"])
    panels = [d for d in ("msrc_v2 carbonetto03 ncut", "msrc_v2 carbonetto03 slic") if d in settings]
    panels = panels or [d for d in settings if np.isfinite(settings[d][0]["caption_acc"][0])][:2]
    corel = bool(results["standard"]) or bool(published_corel)
    n = len(panels) + corel
    if n == 0:
        raise ValueError("results: nothing to plot (no region-labelling rows and no Corel5k standard rows)")
    region_rows = [merge_identical(_sorted([r for r in settings[d] if r["family"] != "bound"], "caption_acc"))[::-1]
                   for d in panels]
    n_corel = len(results["standard"]) + len(published_corel)
    # one panel per row, each as tall as its bars need: read at a page's width, the labels keep a readable size
    heights = [max(2.5, 0.3 * len(rows) + 1.2) for rows in region_rows] + [max(2.5, 0.3 * n_corel + 1.2)] * corel
    fig, axes = plt.subplots(n, 1, figsize=(11, sum(heights) + 1.5), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    axes = list(axes[:, 0])
    colours = {"baseline": "0.6", "model": "tab:blue", "published": "tab:orange"}
    for ax, d, rows in zip(axes, panels, region_rows):
        y = np.arange(len(rows))
        mean = np.array([100 * r["caption_acc"][0] for r in rows])
        sd = np.array([100 * r["caption_acc"][1] for r in rows])
        ax.barh(y, mean, xerr=sd, color=[colours[r["family"]] for r in rows], edgecolor="black", linewidth=0.3)
        ax.set_yticks(y, [_name(r) for r in rows], fontsize=10)
        for r in settings[d]:
            if r["family"] == "bound":
                ax.axvline(100 * r["caption_acc"][0], color="tab:green", ls="--", lw=1.5)
        ax.set_xlabel("within-caption region accuracy % (mean ± sd, 5 splits)", fontsize=10)
        ax.set_title(setting_label(d), fontsize=12)
        ax.set_xlim(0, 100)
    if not corel:
        return _finish(fig, colours, path, "Leaderboard: region labelling")
    ax = axes[-1]
    std = sorted(results["standard"], key=lambda r: r["F1"])
    names = [method_label(r["method"]) for r in std] + [p["method"] for p in published_corel]
    f1 = [r["F1"] for r in std] + [2 * p["P"] * p["R"] / (p["P"] + p["R"]) for p in published_corel]
    kinds = [r["family"] for r in std] + ["published"] * len(published_corel)
    order = np.argsort(f1)
    ax.barh(np.arange(len(f1)), np.array(f1)[order], color=[colours[kinds[i]] for i in order],
            hatch=None, edgecolor="black", linewidth=0.3)
    ax.set_yticks(np.arange(len(f1)), [names[i] for i in order], fontsize=10)
    ax.set_xlabel("per-word F1 (5 words per image)", fontsize=10)
    ax.set_title("Corel5k, standard split", fontsize=12)
    return _finish(fig, colours, path, "Leaderboard: region labelling on MSRC-v2 and image annotation on Corel5k")


def _finish(fig, colours, path, title):
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    from zoo.reports import save_figure
    handles = [Patch(color=colours["baseline"], label="baseline"), Patch(color=colours["model"], label="zoo model"),
               Patch(color=colours["published"], label="published (richer features)"),
               plt.Line2D([], [], color="tab:green", ls="--", label="supervised upper bound (sees region labels)")]
    fig.legend(handles=handles, loc="lower center", ncol=2, frameon=False, fontsize=10)
    fig.suptitle(title, fontsize=14)
    height = fig.get_size_inches()[1]
    fig.tight_layout(rect=(0, 0.8 / height, 1, 1 - 0.5 / height))  # room for the legend and the title, in inches
    return save_figure(fig, path, tight_layout=False)


def write_docs(results_folder="docs/results", out="docs") -> tuple[pathlib.Path, pathlib.Path]:
    """Write ``out/leaderboard.md`` and ``out/leaderboard.png`` from the rows in ``results_folder``."""
    from zoo.leaderboards.corel5k_standard import PUBLISHED
    results = load_results(results_folder)
    published_mil = _published_mil()
    out = pathlib.Path(out)
    md = out / "leaderboard.md"
    md.write_text(render_markdown(results, PUBLISHED, published_mil)
                  + "\n![Leaderboard figure](leaderboard.png)\n")
    png = plot_summary(results, PUBLISHED, out / "leaderboard.png")
    return md, png


def _published_mil() -> list[dict]:
    """mi-SVM and MI-SVM from Carbonneau et al. (2018), Table 4 (the file distributed with the MIL benchmarks)."""
    import csv

    from zoo.data.location import dataset_path
    try:
        folder = dataset_path("mil_benchmarks", "published_results_carbonneau2018_table4.csv")
    except FileNotFoundError:
        return []
    with open(folder / "published_results_carbonneau2018_table4.csv") as fh:
        rows = [r for r in csv.DictReader(fh) if r["metric"] == "accuracy_pct" and r["method"] in ("mi-SVM", "MI-SVM")]
    return [{"method": r["method"], "data": r["dataset"], "accuracy": float(r["value"]),
             "se": float(r["std_err"])} for r in rows]


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--results", default="docs/results")
    parser.add_argument("--out", default="docs")
    args = parser.parse_args()
    print(*write_docs(args.results, args.out))
