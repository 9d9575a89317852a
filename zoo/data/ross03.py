"""Data for Ross (2003), MCVQ: the shapes generator (thesis Sec. 3.1.2) and loaders of the real data sets.

Every loader returns a ``MatrixDataset``: a ``zoo.data.Matrix`` (values, mask True = observed) plus optional
labels, names and image shape. The MCVQ methods accept it, a ``Matrix`` or a plain array (NaN = missing).
Files are read in place from the data root (``zoo.data.dataset_path``); .mat files with ``scipy.io.loadmat``,
csv with NumPy; nothing is unpickled.
"""
from __future__ import annotations

import dataclasses
import itertools
from typing import Sequence

import numpy as np

from zoo.data.containers import Matrix
from zoo.data.files import read_csv_matrix, read_mat
from zoo.data.location import dataset_path, register_loader

__all__ = ["MatrixDataset", "SHAPE_MASKS", "shapes_images", "shapes_split", "load_faces_cbcl",
           "load_faces_olivetti", "load_movielens", "load_newsgroups"]


@dataclasses.dataclass(frozen=True)
class MatrixDataset:
    """A data matrix with metadata: matrix (Matrix, C x D); labels (C,) int in 0..N-1 or None; class_names (N,);
    column_names (D,) (e.g. movie titles, words); image_shape (h, w) with columns in row-major pixel order."""
    matrix: Matrix
    labels: np.ndarray | None = None
    class_names: Sequence[str] | None = None
    column_names: Sequence[str] | None = None
    image_shape: tuple | None = None

    def __post_init__(self):
        if not isinstance(self.matrix, Matrix):
            raise ValueError(f"matrix: expected a zoo.data.Matrix, got {type(self.matrix).__name__}")
        C, D = self.matrix.values.shape
        if self.labels is not None:
            lab = np.asarray(self.labels)
            if lab.shape != (C,) or not np.issubdtype(lab.dtype, np.integer) or lab.min() < 0:
                raise ValueError(f"labels: expected ({C},) non-negative integers, got shape {lab.shape}")
            object.__setattr__(self, "labels", lab.astype(np.int64))
            n = int(lab.max()) + 1
            if self.class_names is not None and len(self.class_names) < n:
                raise ValueError(f"class_names: {len(self.class_names)} names for {n} classes")
        if self.column_names is not None and len(self.column_names) != D:
            raise ValueError(f"column_names: {len(self.column_names)} names for {D} columns")
        if self.image_shape is not None and int(np.prod(self.image_shape)) != D:
            raise ValueError(f"image_shape: {self.image_shape} does not hold {D} pixels")

    def subset(self, rows) -> "MatrixDataset":
        """The cases ``rows`` (indices or boolean mask), metadata kept."""
        rows = np.asarray(rows)
        return dataclasses.replace(self, matrix=Matrix(self.matrix.values[rows], self.matrix.mask[rows]),
                                   labels=None if self.labels is None else self.labels[rows])


# --- shapes (Sec. 3.1.2) ---------------------------------------------------------------------------------------
#: 3 x 3 masks of the three shapes; each occupies a fixed 3-column band of the 11 x 11 image (columns 0-2, 4-6,
#: 8-10) and one of 9 vertical positions (top row 0..8).
SHAPE_MASKS = {
    "box": np.array([[1, 1, 1], [1, 0, 1], [1, 1, 1]], dtype=bool),
    "triangle": np.array([[0, 1, 0], [1, 0, 1], [1, 1, 1]], dtype=bool),
    "cross": np.array([[0, 1, 0], [1, 1, 1], [0, 1, 0]], dtype=bool),
}
_SHAPE_COLUMNS = {"box": 0, "triangle": 4, "cross": 8}


def shapes_images() -> tuple[np.ndarray, np.ndarray]:
    """All 9^3 = 729 shape images: X (729, 121) in {-1, 1} (background -1, shape +1; row-major 11 x 11) and the
    vertical positions (729, 3) of box, triangle, cross (0 = top)."""
    images, positions = [], []
    for pos in itertools.product(range(9), repeat=3):
        img = -np.ones((11, 11))
        for (name, shape), top in zip(SHAPE_MASKS.items(), pos):
            left = _SHAPE_COLUMNS[name]
            img[top:top + 3, left:left + 3][shape] = 1.0
        images.append(img.ravel())
        positions.append(pos)
    return np.array(images), np.array(positions)


def shapes_split(n_train: int = 100, seed: int = 0, top_rows: int = 3):
    """The thesis' split: ``n_train`` training images drawn (seeded) from those that do NOT show all three
    shapes near the top (vertical position < ``top_rows`` for all three), the rest for testing (629 by default,
    including every all-near-the-top image). Returns (X_train, X_test, pos_train, pos_test)."""
    X, pos = shapes_images()
    all_top = (pos < top_rows).all(axis=1)
    candidates = np.flatnonzero(~all_top)
    if not 1 <= n_train <= candidates.size:
        raise ValueError(f"n_train: expected 1..{candidates.size}, got {n_train}")
    rng = np.random.default_rng(seed)
    train = np.sort(rng.choice(candidates, size=n_train, replace=False))
    test = np.setdiff1d(np.arange(X.shape[0]), train)
    return X[train], X[test], pos[train], pos[test]


@register_loader("shapes", "Ross 2003 Sec. 3.1.2: 729 synthetic 11x11 images of a box, triangle and cross")
def load_shapes(split: str = "all", n_train: int = 100, seed: int = 0) -> MatrixDataset:
    """The shapes images as a MatrixDataset (image_shape (11, 11)); ``split`` is "all", "train" or "test"."""
    if split not in ("all", "train", "test"):
        raise ValueError(f"split: expected 'all', 'train' or 'test', got {split!r}")
    if split == "all":
        X, _ = shapes_images()
    else:
        X_train, X_test, _, _ = shapes_split(n_train=n_train, seed=seed)
        X = X_train if split == "train" else X_test
    return MatrixDataset(Matrix(X), image_shape=(11, 11))


# --- real data --------------------------------------------------------------------------------------------------
def _to_pm1(pixels: np.ndarray) -> np.ndarray:
    """uint8 grey levels 0..255 -> [-1, 1] (the thesis' pixel range)."""
    return pixels.astype(np.float64) / 127.5 - 1.0


@register_loader("faces_cbcl", "MIT CBCL faces #1: 2429 19x19 faces, pixels in [-1, 1] (Ross 2003 Sec. 3.1.3)",
                 files=("faces_cbcl/CBCL.mat",))
def load_faces_cbcl() -> MatrixDataset:
    """CBCL training faces (2429, 361), pixels scaled to [-1, 1], rows are row-major 19 x 19 upright images."""
    path = dataset_path("faces_cbcl", "CBCL.mat")
    raw = read_mat(path / "CBCL.mat", ("X",))["X"]                      # (361, 2429), column-major 19 x 19
    faces = raw.T.reshape(-1, 19, 19).transpose(0, 2, 1).reshape(-1, 361)
    return MatrixDataset(Matrix(_to_pm1(faces)), image_shape=(19, 19))


@register_loader("faces_olivetti", "Olivetti/ORL faces: 400 images of 40 people, pixels in [-1, 1], labels = person",
                 files=("faces_olivetti/olivettifaces.mat",))
def load_faces_olivetti(size: int = 32) -> MatrixDataset:
    """Olivetti faces (400, size^2), labels = person 0..39 (10 images each); ``size`` 64 (original) or a divisor
    of 64 (block-averaged down-sampling, 32 by default to keep the class experiments quick)."""
    if size <= 0 or 64 % size:
        raise ValueError(f"size: expected a divisor of 64, got {size}")
    path = dataset_path("faces_olivetti", "olivettifaces.mat")
    raw = read_mat(path / "olivettifaces.mat", ("faces",))["faces"]         # (4096, 400), column-major 64 x 64
    imgs = raw.T.reshape(-1, 64, 64).transpose(0, 2, 1).astype(np.float64)
    f = 64 // size
    imgs = imgs.reshape(-1, size, f, size, f).mean(axis=(2, 4))
    labels = np.arange(400) // 10
    return MatrixDataset(Matrix(_to_pm1(imgs.reshape(400, -1))), labels=labels,
                         class_names=[f"person {i}" for i in range(40)], image_shape=(size, size))


@register_loader("movielens_latest_small_2016",
                 "MovieLens ml-latest-small (2016): users x movies ratings 0.5-5, missing = unrated",
                 files=("movielens_latest_small_2016/ratings.csv", "movielens_latest_small_2016/movies.csv"))
def load_movielens(min_ratings_per_movie: int = 50, min_ratings_per_user: int = 20) -> MatrixDataset:
    """The user x movie rating matrix (missing = not rated), keeping movies rated by at least
    ``min_ratings_per_movie`` users and then users with at least ``min_ratings_per_user`` of those ratings (the
    thesis filtered EachMovie the same way, Sec. 3.2). column_names are the movie titles."""
    import csv
    path = dataset_path("movielens_latest_small_2016", "ratings.csv", "movies.csv")
    r = read_csv_matrix(path / "ratings.csv", skiprows=1, usecols=(0, 1, 2))
    users, movies, ratings = r[:, 0].astype(np.int64), r[:, 1].astype(np.int64), r[:, 2]
    movie_ids, movie_counts = np.unique(movies, return_counts=True)
    keep_movies = movie_ids[movie_counts >= min_ratings_per_movie]
    sel = np.isin(movies, keep_movies)
    users, movies, ratings = users[sel], movies[sel], ratings[sel]
    user_ids, user_counts = np.unique(users, return_counts=True)
    keep_users = user_ids[user_counts >= min_ratings_per_user]
    sel = np.isin(users, keep_users)
    users, movies, ratings = users[sel], movies[sel], ratings[sel]
    if keep_users.size == 0 or keep_movies.size == 0:
        raise ValueError("min_ratings_per_movie/min_ratings_per_user: the filters leave no ratings")
    row = np.searchsorted(keep_users, users)
    col = np.searchsorted(keep_movies, movies)
    values = np.zeros((keep_users.size, keep_movies.size))
    mask = np.zeros_like(values, dtype=bool)
    values[row, col] = ratings
    mask[row, col] = True
    titles = {}
    with open(path / "movies.csv", newline="", encoding="utf-8") as fh:
        for rec in csv.DictReader(fh):
            titles[int(rec["movieId"])] = rec["title"]
    names = [titles.get(int(m), str(m)) for m in keep_movies]
    return MatrixDataset(Matrix(values, mask), column_names=names)


@register_loader("newsgroups_20news_w100", "20 Newsgroups, 16242 documents x 100 words, 0/1 occurrence, 4 groups",
                 files=("newsgroups_20news_w100/20news_w100.mat",))
def load_newsgroups() -> MatrixDataset:
    """Documents (16242, 100) of 0/1 word occurrences; labels = super-group (comp, rec, sci, talk)."""
    path = dataset_path("newsgroups_20news_w100", "20news_w100.mat")
    raw = read_mat(path / "20news_w100.mat", ("documents", "wordlist", "groupnames", "newsgroups"))
    docs = raw["documents"]
    docs = docs.toarray() if hasattr(docs, "toarray") else np.asarray(docs)
    words = [str(np.asarray(w).ravel()[0]) for w in raw["wordlist"].ravel()]
    groups = [str(np.asarray(w).ravel()[0]) for w in raw["groupnames"].ravel()]
    labels = raw["newsgroups"].ravel().astype(np.int64) - 1
    return MatrixDataset(Matrix(docs.T.astype(np.float64)), labels=labels, class_names=groups, column_names=words)
