"""Reproduction of Yakhnenko & Honavar (MoM-LDA / MoM-HDP); the ``topics`` benchmark is in
``zoo.experiments.bench.yakhnenko``. ``run_*`` return dataclasses of numbers, ``*_table(s)`` and ``plot_*`` report
them, ``reproduce`` chains them.

``reproduce(out_dir, fast)``:
  1. synthetic (always): data simulated from the MoM-LDA program; topic recovery (Hungarian-matched L1 error of
     the factors) and held-out caption accuracy of MoM-LDA and MoM-HDP against Naive Bayes / logistic regression.
  2. Corel5k (when ``corel5k_mulan`` is present): caption accuracy of MoM-LDA, MoM-HDP, NB and LR (Table 1 analogue;
     K = 20, the paper's LabelMe setting, fixed a priori) and the K-sensitivity sweep (Fig. 3 analogue).
     Corel5k has no per-region ground truth, so only caption-level numbers exist (see the tables' notes).
"""
from __future__ import annotations

import dataclasses
import pathlib
import time

import numpy as np

from zoo.experiments.paper_claims import yakhnenko_claims

PAPER_TABLE1 = {  # VOC 2007, accuracy %, per region / per caption (Table 1 of the paper)
    "NB OneVsAll": (30.56, 38.03), "LR OneVsAll": (20.19, 20.79), "MoM-LDA": (31.67, 40.82),
    "MoM-HDP": (34.5, 41.92), "Chance": (5.0, 5.0)}


PAPER_FIG3 = ("The paper's Fig. 3 (VOC 2007): MoM-LDA is best at K = 5 and degrades for larger K; MoM-HDP is "
              "insensitive to K.")


@dataclasses.dataclass
class CaptionResult:
    """Corel5k caption annotation: rows (method -> caption_acc, top1_acc, precision_at_5 [, perplexity], in %),
    seconds (method -> fit and prediction time)."""

    rows: dict
    seconds: dict


@dataclasses.dataclass
class SyntheticResult:
    """Factor recovery on data drawn from the MoM-LDA program: rows (method -> l1_visual, l1_words, caption_acc,
    factors_used), the split and vocabulary sizes, and the L1 error of a uniform guess of the visual factors."""

    rows: dict
    n_train: int
    n_test: int
    k: int
    n_words: int
    n_visual_words: int
    chance_l1_visual: float


@dataclasses.dataclass
class SweepResult:
    """Accuracy against K: K (the values), and per model a dict (Corel5k: caption_acc, top1_acc lists) or a list of
    dicts (MSRC-v2: region_acc, caption_acc per K)."""

    K: list
    by_model: dict


@dataclasses.dataclass
class MsrcResult:
    """MSRC-v2 region labelling: table (method -> region_acc, caption_acc at K = 20), the K sweep, counts."""

    table: dict
    k_sensitivity: SweepResult
    n_train: int
    n_test: int
    n_scored: int
    n_labels: int
    n_empty_regions: int


def _fit(model_id, data, fast, seed=0, **options):
    import zoo
    spec = zoo.model(model_id, **options)
    # convergence: relative ELBO change below 1e-5 per iteration (2 restarts; the best ELBO is used)
    return zoo.fit(spec, data, seed=seed, num_chains=2, max_iter=100 if fast else 300, tol=1e-5,
                   progress_bar=not fast)


def _scores(train, test, fast):
    """Caption-word scores (n_test, W) of every method on the test images (visual words only)."""
    from zoo.papers import yakhnenko as yh
    out, seconds = {}, {}
    k = 20
    for name, mid, opts in (("MoM-LDA", "yakhnenko.mom_lda", dict(n_topics=k)),
                            ("MoM-HDP", "yakhnenko.mom_hdp", dict(truncation=k))):
        t0 = time.perf_counter()
        out[name] = _fit(mid, train, fast, **opts).predict(test).caption_word_proba
        seconds[name] = time.perf_counter() - t0
    for name, kind in (("NB OneVsAll", "nb"), ("LR OneVsAll", "lr")):
        if fast and kind == "lr":
            continue                                # 370 logistic regressions: full mode only
        t0 = time.perf_counter()
        out[name] = yh.one_vs_all_baseline(train, test.visual_words, kind=kind)
        seconds[name] = time.perf_counter() - t0
    out["Word frequency"] = np.tile(train.words.mean(axis=0), (test.words.shape[0], 1))
    out["Chance"] = np.random.default_rng(0).random(test.words.shape)
    return out, seconds


def run_caption_annotation(train, test, fast: bool) -> CaptionResult:
    """Caption accuracy of every method on the Corel5k test images (Table 1 analogue)."""
    scores, seconds = _scores(train, test, fast)
    return CaptionResult(_accuracy_rows(scores, test), seconds)


def _accuracy_rows(scores, test):
    from zoo.papers import yakhnenko as yh
    rows = {}
    for name, s in scores.items():
        rows[name] = dict(caption_acc=100 * yh.caption_accuracy(s, test.words),
                          top1_acc=100 * yh.caption_accuracy(s, test.words, n_predicted=1),
                          precision_at_5=100 * yh.caption_accuracy(s, test.words, n_predicted=5))
        if name.startswith("MoM"):
            rows[name]["perplexity"] = yh.caption_perplexity(s, test.words)
    return rows


def _paper_cell(name: str) -> str | None:
    paper = PAPER_TABLE1.get(name)
    return None if paper is None else f"{paper[0]:.2f} / {paper[1]:.2f}"


def corel_table(rows: dict, title: str, seconds: dict | None, fast: bool):
    """Corel5k caption accuracy of every method beside the paper's VOC 2007 numbers."""
    from zoo.reports import Table
    table_rows = [[name, r["caption_acc"], r["top1_acc"], r["precision_at_5"], r.get("perplexity"),
                   _paper_cell(name), (seconds or {}).get(name)] for name, r in rows.items()]
    if fast:
        table_rows.append(["LR OneVsAll", None, None, None, None, _paper_cell("LR OneVsAll"),
                           "not run in --fast (370 logistic regressions; full mode only)"])
    return Table(title, ["method", "caption acc. % (|C| = |R|)", "top-1 acc. %", "precision@5 %",
                         "caption perplexity", "paper VOC 2007 per region / per caption %", "time s"], table_rows,
                 note="Corel5k has no per-region ground truth, so the paper's per-region column has no counterpart; "
                      "the predicted caption has as many words as the true one (|C| = |R|), so caption accuracy = "
                      "precision = recall. The paper's numbers are for VOC 2007 (not available here), with other "
                      "images, words and visual features: the gaps to them are those of a different data set; "
                      "compare the ordering of the methods only.")


def _matched_l1(estimated, true):
    from scipy.optimize import linear_sum_assignment
    cost = np.abs(true[:, None, :] - estimated[None, :, :]).sum(-1)
    rows, cols = linear_sum_assignment(cost)
    return float(cost[rows, cols].mean())


def run_synthetic(fast: bool) -> SyntheticResult:
    """Recovery of the factors of data simulated from the MoM-LDA program, and held-out caption accuracy."""
    from zoo.data import MultimodalCounts
    from zoo.data.corel5k import simulate_multimodal
    n_train, n_test, k = (400, 100, 5) if fast else (1500, 500, 5)
    data, truth = simulate_multimodal(seed=11, n_images=n_train + n_test, n_topics=k, n_word_types=40,
                                      n_visual_types=80, mean_words=4, mean_visual_words=10, alpha=0.3,
                                      alpha_w=0.1, alpha_b=0.1)
    split = lambda a, b: MultimodalCounts(data.words[a:b], data.visual_words[a:b],  # noqa: E731
                                          data.word_vocabulary, data.visual_vocabulary)
    train, test = split(0, n_train), split(n_train, n_train + n_test)
    # a column empty in the training part only: drop it from both (the fitters reject all-zero columns)
    keep_w, keep_b = train.words.sum(0) > 0, train.visual_words.sum(0) > 0
    train = MultimodalCounts(train.words[:, keep_w], train.visual_words[:, keep_b])
    test = MultimodalCounts(test.words[:, keep_w], test.visual_words[:, keep_b])
    truth_w = truth["phi_w"][:, keep_w] / truth["phi_w"][:, keep_w].sum(1, keepdims=True)
    truth_b = truth["phi_b"][:, keep_b] / truth["phi_b"][:, keep_b].sum(1, keepdims=True)
    chance_b = _matched_l1(np.full((k, truth_b.shape[1]), 1.0 / truth_b.shape[1]), truth_b)
    rows = {}
    for name, mid, opts in (("MoM-LDA (K = 5 = truth)", "yakhnenko.mom_lda", dict(n_topics=k)),
                            ("MoM-LDA (K = 15)", "yakhnenko.mom_lda", dict(n_topics=15)),
                            ("MoM-HDP (truncation 15)", "yakhnenko.mom_hdp", dict(truncation=15))):
        fit = _fit(mid, train, fast, **opts)
        best = fit.state.best_chain
        # q's means (the posterior holds draws of q): phi ~ Dir(lambda) has mean lambda / sum(lambda)
        phi_w = fit.state.lambda_w / fit.state.lambda_w.sum(axis=1, keepdims=True)
        phi_b = fit.state.lambda_b / fit.state.lambda_b.sum(axis=1, keepdims=True)
        usage = fit.idata.sample_stats["factor_usage"].values[best, 0]
        top = np.argsort(-usage)[:k]                       # the k most used factors against the k true ones
        from zoo.papers import yakhnenko as yh
        proba = fit.predict(test).caption_word_proba
        rows[name] = dict(l1_visual=_matched_l1(phi_b[top], truth_b), l1_words=_matched_l1(phi_w[top], truth_w),
                          caption_acc=100 * yh.caption_accuracy(proba, test.words),
                          factors_used=int((usage >= 0.01 * usage.sum()).sum()))
    from zoo.papers import yakhnenko as yh
    for name, kind in (("NB OneVsAll", "nb"), ("LR OneVsAll", "lr")):
        rows[name] = dict(caption_acc=100 * yh.caption_accuracy(yh.one_vs_all_baseline(train, test.visual_words,
                                                                                         kind), test.words))
    return SyntheticResult(rows=rows, n_train=n_train, n_test=n_test, k=k, n_words=int(train.words.shape[1]),
                           n_visual_words=int(train.visual_words.shape[1]), chance_l1_visual=chance_b)


def synthetic_table(res: SyntheticResult):
    """Factor recovery and caption accuracy on the synthetic data."""
    from zoo.reports import Table
    rows = [[name, r.get("l1_visual"), r.get("l1_words"), r.get("factors_used"), r["caption_acc"]]
            for name, r in res.rows.items()]
    return Table(f"Synthetic data from the MoM-LDA program ({res.n_train} train / {res.n_test} test images, "
                 f"K = {res.k}, {res.n_words} words, {res.n_visual_words} visual words)",
                 ["method", "L1 visual factors", "L1 word factors", "factors with >= 1% of tokens", "caption acc. %"],
                 rows,
                 note=f"Factor recovery: mean L1 distance between the true factors and the Hungarian-matched "
                      f"estimated ones (the {res.k} most used); a uniform guess scores "
                      f"{res.chance_l1_visual:.2f} on the visual factors. The paper has no synthetic experiment.")


def run_k_sensitivity(train, test, fast: bool) -> SweepResult:
    """Fig. 3 analogue: caption accuracy against K for MoM-LDA and MoM-HDP (test split)."""
    from zoo.papers import yakhnenko as yh
    ks = (5, 10, 20, 30, 40, 50)
    result = SweepResult(K=list(ks), by_model={})
    for name, mid, key in (("MoM-LDA", "yakhnenko.mom_lda", "n_topics"), ("MoM-HDP", "yakhnenko.mom_hdp",
                                                                          "truncation")):
        acc, top1 = [], []
        for k in ks:
            proba = _fit(mid, train, fast, **{key: k}).predict(test).caption_word_proba
            acc.append(100 * yh.caption_accuracy(proba, test.words))
            top1.append(100 * yh.caption_accuracy(proba, test.words, n_predicted=1))
            print(f"  {name} K={k}: caption acc {acc[-1]:.2f} %, top-1 {top1[-1]:.2f} %", flush=True)
        result.by_model[name] = dict(caption_acc=acc, top1_acc=top1)
    return result


def k_sensitivity_table(result: SweepResult):
    """Corel5k caption / top-1 accuracy against K."""
    from zoo.reports import Table
    ks, by = result.K, result.by_model
    rows = [[name, *(f"{a:.1f} / {t:.1f}" for a, t in zip(by[name]["caption_acc"], by[name]["top1_acc"]))]
            for name in ("MoM-LDA", "MoM-HDP")]
    ranges = {name: max(by[name]["caption_acc"]) - min(by[name]["caption_acc"])
              for name in ("MoM-LDA", "MoM-HDP")}
    spread = "; ".join(f"{name}: range of caption accuracy over K {r:.2f} points" for name, r in ranges.items())
    return Table("K-sensitivity on Corel5k (Fig. 3 analogue; caption |C| = |R| / top-1 accuracy %)",
                 ["method", *(f"K = {k}" for k in ks)], rows,
                 note=f"{spread}. {PAPER_FIG3}")


def plot_k_sensitivity(result: SweepResult, path: pathlib.Path):
    """Fig. 3 analogue on Corel5k; returns the Figure."""
    from zoo.reports import Figure
    by = result.by_model
    _plot_sweep(result.K, {n: (by[n]["top1_acc"], by[n]["caption_acc"]) for n in ("MoM-LDA", "MoM-HDP")},
                ("top-1 word", "caption (|C| = |R|)"), path, "accuracy on Corel5k test, %",
                "K-sensitivity on Corel5k (Fig. 3 analogue)")
    return Figure("K-sensitivity on Corel5k", path, "Solid: top-1 word accuracy; dashed: caption accuracy.")


def _restrict_words(train, test):
    """Drop caption words never seen in training from both splits (the fitters reject all-zero columns); region
    labels of a dropped word become -2 (still counted, always wrong)."""
    from zoo.data import MultimodalCounts
    keep = train.words.sum(0) > 0
    new_index = np.full(keep.size, -2)
    new_index[keep] = np.arange(keep.sum())

    def restrict(d):
        labels = None if d.region_labels is None else np.where(d.region_labels >= 0,
                                                                new_index[np.maximum(d.region_labels, 0)], -1)
        return MultimodalCounts(d.words[:, keep], d.visual_words, [w for w, k in zip(d.word_vocabulary, keep) if k],
                                d.visual_vocabulary, region_visual_words=d.region_visual_words,
                                region_image_ids=d.region_image_ids, region_labels=None), labels
    (train_r, _), (test_r, test_labels) = restrict(train), restrict(test)
    return train_r, test_r, test_labels


def run_msrc_regions(fast: bool) -> MsrcResult:
    """Table 1 / Fig. 3 analogue with per-region ground truth: MSRC-v2, SLIC regions, dense
    DAISY visual words (500-word codebook of the training images), models trained on images + captions only."""
    import zoo
    from zoo.papers import yakhnenko as yh
    opts = dict(form="counts", visual_words="dense", segmentation="slic", progress=not fast)
    train = zoo.load_dataset("msrc_v2", split="train", **opts)
    test = zoo.load_dataset("msrc_v2", split="test", **opts)
    train, test, labels = _restrict_words(train, test)
    scored = labels != -1                                    # regions with a ground-truth label
    ids = test.region_image_ids

    def region_rows(region_label):
        return dict(region_acc=100 * float(np.mean(region_label[scored] == labels[scored])),
                    caption_acc=100 * yh.region_caption_accuracy(region_label, ids, test.words))
    rows = {}
    ks = (5, 10, 20, 30, 40, 50)
    sweep = SweepResult(K=list(ks), by_model={})
    for name, mid, key in (("MoM-LDA", "yakhnenko.mom_lda", "n_topics"),
                           ("MoM-HDP", "yakhnenko.mom_hdp", "truncation")):
        runs = sweep.by_model[name] = []
        for k in ks:
            pred = _fit(mid, train, fast, **{key: k}).predict(test)
            runs.append(region_rows(pred.region_label))
            print(f"  MSRC {name} K={k}: per region {runs[-1]['region_acc']:.2f} %, per caption "
                  f"{runs[-1]['caption_acc']:.2f} %", flush=True)
            if k == 20:
                rows[name] = runs[-1]
    has_words = test.region_visual_words.sum(1) > 0
    for name, kind in (("NB OneVsAll", "nb"), ("LR OneVsAll", "lr")):
        scores = yh.one_vs_all_baseline(train, test.region_visual_words, kind=kind)
        rows[name] = region_rows(scores.argmax(1))
    rows["Chance"] = dict(region_acc=100.0 / train.words.shape[1], caption_acc=float("nan"))
    return MsrcResult(table=rows, k_sensitivity=sweep, n_train=int(train.words.shape[0]),
                      n_test=int(test.words.shape[0]), n_scored=int(scored.sum()), n_labels=int(train.words.shape[1]),
                      n_empty_regions=int((~has_words).sum()))


def msrc_tables(res: MsrcResult) -> list:
    """MSRC-v2 region labelling (Table 1 analogue) and its K-sensitivity."""
    from zoo.reports import Table
    rows = [[name, r["region_acc"], r["caption_acc"], _paper_cell(name)] for name, r in res.table.items()]
    main = Table(f"MSRC-v2 region labelling (Table 1 analogue; {res.n_train} / {res.n_test} images, "
                 f"{res.n_scored} labelled test regions, {res.n_labels} labels, K = 20)",
                 ["method", "per region %", "per caption % (union of region labels)",
                  "paper VOC 2007 per region / caption %"], rows,
                 note=f"SLIC regions, dense DAISY visual words (500-word codebook of the training images); the "
                      f"models see images and captions only. {res.n_empty_regions} regions hold no visual word. "
                      f"The paper's numbers are for VOC 2007 (not available here): the gaps are those of a "
                      f"different data set, labels and features; compare the ordering of the methods only.")
    ks, by = res.k_sensitivity.K, res.k_sensitivity.by_model
    sweep = Table("K-sensitivity on MSRC-v2 (Fig. 3 analogue; per region / per caption %)",
                  ["method", *(f"K = {k}" for k in ks)],
                  [[name, *(f"{r['region_acc']:.1f} / {r['caption_acc']:.1f}" for r in by[name])]
                   for name in ("MoM-LDA", "MoM-HDP")], note=PAPER_FIG3)
    return [main, sweep]


def plot_msrc_k_sensitivity(res: MsrcResult, path: pathlib.Path):
    """Fig. 3 analogue on MSRC-v2; returns the Figure."""
    from zoo.reports import Figure
    sweep = res.k_sensitivity.by_model
    _plot_sweep(res.k_sensitivity.K, {n: ([r["region_acc"] for r in sweep[n]], [r["caption_acc"] for r in sweep[n]])
                             for n in ("MoM-LDA", "MoM-HDP")}, ("per region", "per caption"), path,
                "accuracy on MSRC-v2 test, %", "K-sensitivity on MSRC-v2 (Fig. 3 analogue)")
    return Figure("K-sensitivity on MSRC-v2", path, "Solid: per-region accuracy; dashed: per-caption accuracy.")


def _plot_sweep(ks, series, labels, path, ylabel, title):
    """Accuracy against K: solid = the first of ``labels``, dashed = the second, one colour per model."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from zoo.reports import save_figure
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, color in (("MoM-LDA", "tab:red"), ("MoM-HDP", "tab:blue")):
        solid, dashed = series[name]
        ax.plot(ks, solid, "-o", color=color, label=f"{name} {labels[0]}")
        ax.plot(ks, dashed, "--o", color=color, label=f"{name} {labels[1]}")
    ax.set_xticks(ks)
    ax.set_xlabel("K (number of factors / truncation)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
    return save_figure(fig, path)


def reproduce(out_dir: pathlib.Path, fast: bool = False):
    """Synthetic data (always), Corel5k and MSRC-v2 (when present; K-sweeps and MSRC-v2 in full mode only);
    returns a PaperReport (figures in ``out_dir``)."""
    from zoo.reports import PaperReport, Section, print_section
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    report = PaperReport("yakhnenko", "Yakhnenko & Honavar: annotating images and image objects with MoM-LDA and "
                                      "MoM-HDP")
    print("synthetic data from the program ...", flush=True)
    t0 = time.perf_counter()
    synthetic = run_synthetic(fast)
    print_section(report.add(Section("Synthetic data from the MoM-LDA program", [synthetic_table(synthetic)],
                                     seconds=time.perf_counter() - t0)))
    try:
        import zoo
        train, test = zoo.load_dataset("corel5k", split="train"), zoo.load_dataset("corel5k", split="test")
    except FileNotFoundError as err:
        print(f"Corel5k skipped (data missing): {err}")
        report.notes.append(f"Corel5k not run: data missing ({err})")
    else:
        print("Corel5k: accuracy table ...", flush=True)
        t0 = time.perf_counter()
        captions = run_caption_annotation(train, test, fast)
        title = (f"Corel5k caption annotation from blob tokens ({train.words.shape[0]} / {test.words.shape[0]} "
                 f"images, {train.words.shape[1]} words, K = 20)")
        print_section(report.add(Section("Corel5k caption annotation (Table 1 analogue)",
                                         [corel_table(captions.rows, title, captions.seconds, fast)],
                                         seconds=time.perf_counter() - t0)))
        report.claims += yakhnenko_claims(captions.rows, title, "caption_acc", PAPER_TABLE1, 1,
                                          "Corel5k (blob tokens, caption words)")
        if fast:
            report.notes.append("--fast: the Corel5k K-sensitivity sweep and the LR baseline run in full mode only")
        else:
            print("Corel5k: K-sensitivity ...", flush=True)
            t0 = time.perf_counter()
            sweep = run_k_sensitivity(train, test, fast)
            print_section(report.add(Section("K-sensitivity on Corel5k (Fig. 3 analogue)",
                                             [k_sensitivity_table(sweep),
                                              plot_k_sensitivity(sweep, out_dir / "k_sensitivity.png")],
                                             seconds=time.perf_counter() - t0)))
    try:
        import zoo
        zoo.data.dataset_path("msrc_v2", "classes.txt")
        if fast:
            raise FileNotFoundError("fast mode (segmenting and describing 591 photos is full mode only)")
    except FileNotFoundError as err:
        print(f"MSRC-v2 region labelling skipped: {err}")
        report.notes.append(f"MSRC-v2 region labelling not run: {err}")
    else:
        print("MSRC-v2: region labelling ...", flush=True)
        t0 = time.perf_counter()
        res = run_msrc_regions(fast)
        items = msrc_tables(res) + [plot_msrc_k_sensitivity(res, out_dir / "k_sensitivity_msrc.png")]
        report.claims += yakhnenko_claims(res.table, items[0].title, "region_acc", PAPER_TABLE1, 0,
                                          "MSRC-v2 (SLIC regions, dense visual words)")
        print_section(report.add(Section("MSRC-v2 region labelling (Table 1, Fig. 3 analogues)", items,
                                         seconds=time.perf_counter() - t0)))
    return report
