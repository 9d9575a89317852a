"""Count corpora on disk, read in minibatches, for stochastic variational inference of the topic models.

On-disk format (a folder; every file readable with ``allow_pickle=False``, nothing pickled):

``corpus.json``
    ``{"format": "zoo-streaming-corpus", "version": 1, "n_docs": D, "modalities": ["words", "visual_words"],
    "n_terms": [W, V], "vocabularies": [[...], [...]] or null, "shards": [{"file": "shard_00000.npz",
    "n_docs": n}, ...]}``; documents are numbered 0..D-1 in shard order.
``shard_XXXXX.npz``
    for each modality ``m``: ``m_indptr`` (n+1,) int64, ``m_indices`` (nnz,) int32, ``m_counts`` (nnz,) float64:
    the shard's n documents as compressed rows (the counts of document j are
    ``m_counts[m_indptr[j]:m_indptr[j+1]]`` at the terms ``m_indices[...]``).
``doc_nnz.npy``
    (D, M) int64: non-zero entries of every document in every modality (read memory-mapped; it fixes the
    minibatch shape of a fit before any shard is read).

``write_corpus(path, data, shard_size)`` writes a ``MultimodalCounts`` (or a mapping name -> (I, V) counts) in this
format; ``open_corpus(path)`` returns a ``ShardedCorpus`` that reads one shard at a time and never the whole
corpus.  ``MemoryCorpus`` gives in-memory counts the same interface (``pass_order``, ``doc_nnz``,
``minibatches``, ``read_docs``), so the SVI fit takes either.
"""
from __future__ import annotations

import dataclasses
import json
import pathlib
from typing import Iterator, Mapping, NamedTuple, Sequence

import numpy as np

from zoo.data.containers import MultimodalCounts
from zoo.data.files import read_npz

__all__ = ["FORMAT", "CSRRows", "write_corpus", "open_corpus", "ShardedCorpus", "MemoryCorpus", "as_corpus",
           "take_rows", "csr_rows"]

FORMAT = "zoo-streaming-corpus"
_META = "corpus.json"
_NNZ = "doc_nnz.npy"


class CSRRows(NamedTuple):
    """Rows of a (n, V) count matrix in compressed-row form: indptr (n+1,) int64, indices (nnz,) int32,
    counts (nnz,) float64."""

    indptr: np.ndarray
    indices: np.ndarray
    counts: np.ndarray


def csr_rows(dense: np.ndarray) -> CSRRows:
    """Compressed rows of a dense (n, V) count matrix (or of a scipy sparse matrix)."""
    if hasattr(dense, "tocsr"):
        m = dense.tocsr()
        m.sort_indices()
        return CSRRows(m.indptr.astype(np.int64), m.indices.astype(np.int32), m.data.astype(np.float64))
    dense = np.asarray(dense, dtype=np.float64)
    doc, term = np.nonzero(dense)
    indptr = np.zeros(dense.shape[0] + 1, np.int64)
    indptr[1:] = np.cumsum(np.bincount(doc, minlength=dense.shape[0]))
    return CSRRows(indptr, term.astype(np.int32), dense[doc, term])


def take_rows(csr: CSRRows, rows: np.ndarray) -> CSRRows:
    """The rows ``rows`` (in that order) of a CSR matrix, as a new CSR matrix."""
    rows = np.asarray(rows, dtype=np.int64)
    starts, ends = csr.indptr[rows], csr.indptr[rows + 1]
    lengths = ends - starts
    indptr = np.zeros(rows.size + 1, np.int64)
    indptr[1:] = np.cumsum(lengths)
    # position of every kept entry: its row's start plus its rank within the row
    within = np.arange(indptr[-1]) - np.repeat(indptr[:-1], lengths)
    source = np.repeat(starts, lengths) + within
    return CSRRows(indptr, csr.indices[source], csr.counts[source])


def _modalities_of(data) -> tuple[list[str], list, list]:
    if isinstance(data, MultimodalCounts):
        return (["words", "visual_words"], [data.words, data.visual_words],
                [None if data.word_vocabulary is None else list(map(str, data.word_vocabulary)),
                 None if data.visual_vocabulary is None else list(map(str, data.visual_vocabulary))])
    if isinstance(data, Mapping) and data:
        return list(map(str, data)), list(data.values()), [None] * len(data)
    raise ValueError(f"data: expected zoo.data.MultimodalCounts or a mapping name -> counts, got {type(data).__name__}")


def write_corpus(path, data, shard_size: int = 1000, overwrite: bool = False) -> "ShardedCorpus":
    """Write ``data`` (``MultimodalCounts``, or a mapping modality name -> (I, V) counts, dense or scipy sparse)
    to the folder ``path`` in shards of ``shard_size`` documents; returns the opened corpus."""
    if isinstance(shard_size, bool) or not isinstance(shard_size, (int, np.integer)) or shard_size < 1:
        raise ValueError(f"shard_size: expected a positive int, got {shard_size!r}")
    names, matrices, vocabularies = _modalities_of(data)
    csrs = [csr_rows(m) for m in matrices]
    n_docs = csrs[0].indptr.size - 1
    for name, csr, m in zip(names, csrs, matrices):
        if csr.indptr.size - 1 != n_docs:
            raise ValueError(f"{name}: {csr.indptr.size - 1} documents, but {names[0]} has {n_docs}")
        if csr.counts.size and (csr.counts.min() < 0 or np.any(csr.counts != np.round(csr.counts))
                                or not np.all(np.isfinite(csr.counts))):
            raise ValueError(f"{name}: counts must be finite non-negative integers")
    path = pathlib.Path(path)
    if (path / _META).exists() and not overwrite:
        raise ValueError(f"path: {path} already holds a corpus (overwrite=True to replace it)")
    path.mkdir(parents=True, exist_ok=True)
    shards = []
    for number, start in enumerate(range(0, n_docs, shard_size)):
        rows = np.arange(start, min(start + shard_size, n_docs))
        arrays = {}
        for name, csr in zip(names, csrs):
            part = take_rows(csr, rows)
            arrays.update({f"{name}_indptr": part.indptr, f"{name}_indices": part.indices,
                           f"{name}_counts": part.counts})
        file = f"shard_{number:05d}.npz"
        np.savez(path / file, **arrays)
        shards.append({"file": file, "n_docs": int(rows.size)})
    np.save(path / _NNZ, np.stack([np.diff(c.indptr) for c in csrs], axis=1).astype(np.int64), allow_pickle=False)
    meta = {"format": FORMAT, "version": 1, "n_docs": int(n_docs), "modalities": names,
            "n_terms": [int(np.shape(m)[1]) for m in matrices],
            "vocabularies": vocabularies if all(v is not None for v in vocabularies) else None, "shards": shards}
    (path / _META).write_text(json.dumps(meta, indent=1))
    return open_corpus(path)


class _CorpusMethods:
    """What the SVI fit needs of a corpus: ``n_docs``, ``n_terms``, ``pass_order``, ``doc_nnz``, ``minibatches``,
    ``read_docs``."""

    def minibatches(self, order: np.ndarray, batch_size: int) -> Iterator[list[CSRRows]]:
        """The documents ``order`` cut into consecutive minibatches of ``batch_size`` (the last may be shorter):
        for each, one ``CSRRows`` per modality."""
        cache = {}                      # the shards in use (at most two: the one being finished and the next)
        for start in range(0, len(order), batch_size):
            yield self._rows(np.asarray(order[start:start + batch_size]), cache)

    def read_docs(self, ids: np.ndarray) -> list[np.ndarray]:
        """Dense (n, V_m) counts of the documents ``ids`` in every modality (a few documents: initialization)."""
        out = []
        for csr, n_terms in zip(self._rows(np.asarray(ids)), self.n_terms):
            dense = np.zeros((csr.indptr.size - 1, n_terms))
            rows = np.repeat(np.arange(csr.indptr.size - 1), np.diff(csr.indptr))
            dense[rows, csr.indices] = csr.counts
            out.append(dense)
        return out


@dataclasses.dataclass(frozen=True)
class MemoryCorpus(_CorpusMethods):
    """In-memory counts (one ``CSRRows`` per modality) with the corpus interface; ``pass_order`` is a uniform
    random permutation of the documents."""

    modalities: tuple
    rows: tuple
    n_terms: tuple

    @property
    def n_docs(self) -> int:
        return int(self.rows[0].indptr.size - 1)

    def pass_order(self, rng: np.random.Generator) -> np.ndarray:
        return rng.permutation(self.n_docs)

    def doc_nnz(self) -> np.ndarray:
        """(D, M) non-zero entries per document and modality."""
        return np.stack([np.diff(r.indptr) for r in self.rows], axis=1)

    def _rows(self, ids, cache=None):
        return [take_rows(r, ids) for r in self.rows]


@dataclasses.dataclass(frozen=True)
class ShardedCorpus(_CorpusMethods):
    """A corpus folder (``open_corpus``); holds its metadata only, reads one shard at a time.  ``pass_order``
    visits the shards in random order and the documents of each shard in random order, so that a minibatch
    needs at most two shards in memory."""

    path: str
    modalities: tuple
    n_terms: tuple
    shard_files: tuple
    shard_sizes: tuple
    vocabularies: tuple | None = None

    @property
    def n_docs(self) -> int:
        return int(sum(self.shard_sizes))

    @property
    def shard_starts(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.shard_sizes)]).astype(np.int64)

    def doc_nnz(self) -> np.ndarray:
        """(D, M) non-zero entries per document and modality, memory-mapped from ``doc_nnz.npy``."""
        arr = np.load(pathlib.Path(self.path) / _NNZ, allow_pickle=False, mmap_mode="r")
        if arr.shape != (self.n_docs, len(self.modalities)):
            raise ValueError(f"{self.path}/{_NNZ}: shape {arr.shape}, expected {(self.n_docs, len(self.modalities))}")
        return arr

    def pass_order(self, rng: np.random.Generator) -> np.ndarray:
        starts = self.shard_starts
        return np.concatenate([starts[s] + rng.permutation(self.shard_sizes[s])
                               for s in rng.permutation(len(self.shard_sizes))])

    def read_shard(self, number: int) -> list[CSRRows]:
        """Shard ``number`` (its documents in file order), one ``CSRRows`` per modality."""
        arrays = read_npz(pathlib.Path(self.path) / self.shard_files[number],
                          required=tuple(f"{m}_{part}" for m in self.modalities
                                         for part in ("indptr", "indices", "counts")))
        out = []
        for m, n_terms in zip(self.modalities, self.n_terms):
            csr = CSRRows(arrays[f"{m}_indptr"].astype(np.int64), arrays[f"{m}_indices"].astype(np.int32),
                          arrays[f"{m}_counts"].astype(np.float64))
            if csr.indptr.size != self.shard_sizes[number] + 1 or csr.indptr[-1] != csr.indices.size:
                raise ValueError(f"{self.shard_files[number]}: {m}_indptr does not match the shard's documents")
            if csr.indices.size and (csr.indices.min() < 0 or csr.indices.max() >= n_terms):
                raise ValueError(f"{self.shard_files[number]}: {m}_indices outside 0..{n_terms - 1}")
            out.append(csr)
        return out

    def _rows(self, ids, cache=None):
        """Rows of the documents ``ids`` (any order), reading each shard they touch once; ``cache`` (a dict kept
        by the caller between minibatches) holds the shards of the previous call that this one reuses."""
        shard_of = np.searchsorted(self.shard_starts, ids, side="right") - 1
        parts = [[] for _ in self.modalities]
        order = []
        touched = list(dict.fromkeys(shard_of.tolist()))      # shards in order of first appearance
        if cache is not None:
            for old in [s for s in cache if s not in touched]:
                del cache[old]
        for s in touched:
            here = np.flatnonzero(shard_of == s)
            if cache is None:
                shard = self.read_shard(s)
            else:
                if s not in cache:
                    cache[s] = self.read_shard(s)
                shard = cache[s]
            for part, csr in zip(parts, shard):
                part.append(take_rows(csr, ids[here] - self.shard_starts[s]))
            order.append(here)
        inverse = np.argsort(np.concatenate(order), kind="stable")
        return [take_rows(_concat(p), inverse) for p in parts]


def _concat(parts: Sequence[CSRRows]) -> CSRRows:
    offsets = np.cumsum([0] + [p.indices.size for p in parts[:-1]])
    indptr = np.concatenate([[0]] + [p.indptr[1:] + o for p, o in zip(parts, offsets)])
    return CSRRows(indptr.astype(np.int64), np.concatenate([p.indices for p in parts]),
                   np.concatenate([p.counts for p in parts]))


def open_corpus(path) -> ShardedCorpus:
    """Open a corpus folder written by ``write_corpus`` (reads ``corpus.json`` only)."""
    path = pathlib.Path(path)
    if not (path / _META).is_file():
        raise ValueError(f"path: {path} holds no {_META} (write one with zoo.data.streaming.write_corpus)")
    try:
        meta = json.loads((path / _META).read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{path / _META}: not valid JSON ({err})") from None
    if meta.get("format") != FORMAT or meta.get("version") != 1:
        raise ValueError(f"{path / _META}: not a {FORMAT} version 1 file")
    shards = meta["shards"]
    corpus = ShardedCorpus(path=str(path), modalities=tuple(meta["modalities"]), n_terms=tuple(meta["n_terms"]),
                           shard_files=tuple(s["file"] for s in shards),
                           shard_sizes=tuple(int(s["n_docs"]) for s in shards),
                           vocabularies=None if meta.get("vocabularies") is None
                           else tuple(tuple(v) for v in meta["vocabularies"]))
    if corpus.n_docs != meta["n_docs"]:
        raise ValueError(f"{path / _META}: n_docs {meta['n_docs']} but the shards hold {corpus.n_docs}")
    return corpus


def as_corpus(data) -> MemoryCorpus | ShardedCorpus:
    """A corpus for the SVI fit: a ``ShardedCorpus`` as is, a folder path opened, in-memory counts wrapped."""
    if isinstance(data, (ShardedCorpus, MemoryCorpus)):
        return data
    if isinstance(data, (str, pathlib.Path)):
        return open_corpus(data)
    names, matrices, _ = _modalities_of(data)
    rows = tuple(csr_rows(m) for m in matrices)
    return MemoryCorpus(modalities=tuple(names), rows=rows, n_terms=tuple(int(np.shape(m)[1]) for m in matrices))
