"""``zoo leaderboard --jobs``: the splits in worker processes give the rows one process gives, and a rerun
resumes from them."""
import json

import numpy as np

from zoo.data import AnnotatedRegions
from zoo.leaderboards import board as lb
from zoo.leaderboards.split_workers import run_splits_in_workers

TIMES = ("fit_s",)


def synthetic(n_images=16, seed=0):
    """3 words, each a Gaussian blob in 2-D; each image holds 2 words, one region per word plus a copy."""
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0]])
    X, ids, labels, keywords = [], [], [], []
    for i in range(n_images):
        words = rng.choice(3, 2, replace=False)
        keywords.append(["abc"[w] for w in words])
        for w in (*words, words[0]):
            X.append(centres[w] + 0.3 * rng.standard_normal(2))
            ids.append(i)
            labels.append(w)
    return AnnotatedRegions(np.array(X), np.array(ids), keywords, ["a", "b", "c"], region_labels=np.array(labels))


def _without_times(rows):
    return [{k: v for k, v in r.items() if k not in TIMES} for r in rows]


def test_splits_in_workers_give_the_rows_of_one_process(tmp_path, capfd):
    data = synthetic(n_images=16)
    options = dict(data=data, models=["chance", "naive Bayes"], fast=True)
    serial = lb.leaderboard(**options, splits=3, log=lambda *_: None)
    path = tmp_path / "rows.jsonl"
    # a row of split 1 already there (an earlier run): resumed, not run again
    path.write_text(json.dumps(serial[2]) + "\n")
    run_splits_in_workers(lb.leaderboard, lb.read_results, options, 3, path, jobs=2)
    out = capfd.readouterr().out
    assert "[split 0] leaderboard split 0 chance" in out and "[split 1] leaderboard split 1 chance" not in out
    stored = lb.read_results(path)
    assert len(stored) == 6 and not list(tmp_path.glob("rows.jsonl.split*"))
    calls = []
    parallel = lb.leaderboard(**options, splits=3, results=path, log=calls.append)
    assert calls == []                                  # every row read back
    assert _without_times(parallel) == _without_times(serial)


def test_only_splits_runs_those_seeds():
    data = synthetic(n_images=16)
    rows = lb.leaderboard(data, models=["chance"], splits=3, only_splits=[2], log=lambda *_: None)
    assert [r["split"] for r in rows] == [2]
