"""The embedding cache of ``make_real_runs.py``: embeddings keyed by (model, encoding dtype[, role], sha256 of the
text), stored under ``--cache`` as npz shards written atomically, so an interrupted run resumes where it stopped;
only texts missing from the cache are encoded, ``ENCODE_CHUNK`` at a time."""
from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

ENCODE_CHUNK = 256  # texts per cache shard

def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _atomic_npz(directory: Path, **arrays: np.ndarray) -> None:
    stamp = f"{time.time_ns():x}-{os.getpid()}"
    with tempfile.NamedTemporaryFile(dir=directory, suffix=".tmp", delete=False) as handle:
        np.savez(handle, **arrays)
    os.replace(handle.name, directory / f"shard-{stamp}.npz")


class EmbeddingCache:
    """Dense embeddings keyed by (model, encoding dtype[, role], sha256 of the text), stored as npz shards.

    Values are stored as float32, which holds fp16 and bf16 values exactly.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self._rows: dict[str, np.ndarray] = {}
        for shard in sorted(self.directory.glob("*.npz")):
            with np.load(shard) as stored:
                for key, vector in zip(stored["keys"].tolist(), stored["embeddings"]):
                    self._rows[key] = vector

    def missing(self, keys: list[str]) -> list[str]:
        return [k for k in keys if k not in self._rows]

    def add(self, keys: list[str], embeddings: np.ndarray) -> None:
        """Persist one shard atomically, then make it visible."""
        embeddings = np.asarray(embeddings, dtype=np.float32)
        if not np.isfinite(embeddings).all():
            raise ValueError(f"{self.directory}: the model returned non-finite embeddings")
        _atomic_npz(self.directory, keys=np.array(keys), embeddings=embeddings)
        for key, vector in zip(keys, embeddings):
            self._rows[key] = vector

    def matrix(self, keys: list[str]) -> np.ndarray:
        return np.stack([self._rows[k] for k in keys]) if keys else np.zeros((0, 0), np.float32)


class SparseEmbeddingCache(EmbeddingCache):
    """Sparse (CSR, float32) embeddings, same keys and shard layout; ``matrix`` returns a CSR matrix."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self._rows = {}
        self.n_cols = 0
        for shard in sorted(self.directory.glob("*.npz")):
            with np.load(shard) as stored:
                self._load(stored["keys"].tolist(), stored["indptr"], stored["indices"], stored["data"],
                           int(stored["n_cols"]))

    def _load(self, keys, indptr, indices, data, n_cols) -> None:
        self.n_cols = n_cols
        for row, key in enumerate(keys):
            self._rows[key] = (indices[indptr[row]:indptr[row + 1]], data[indptr[row]:indptr[row + 1]])

    def add(self, keys: list[str], embeddings) -> None:
        csr = embeddings.tocsr().astype(np.float32)
        csr.sort_indices()
        if not np.isfinite(csr.data).all():
            raise ValueError(f"{self.directory}: the model returned non-finite embeddings")
        _atomic_npz(self.directory, keys=np.array(keys), indptr=csr.indptr, indices=csr.indices, data=csr.data,
                    n_cols=np.array(csr.shape[1]))
        self._load(keys, csr.indptr, csr.indices, csr.data, csr.shape[1])

    def matrix(self, keys: list[str]):
        from scipy import sparse

        rows = [self._rows[k] for k in keys]
        indptr = np.concatenate([[0], np.cumsum([len(r[0]) for r in rows])]).astype(np.int64)
        indices = np.concatenate([r[0] for r in rows]) if rows else np.zeros(0, np.int32)
        data = np.concatenate([r[1] for r in rows]) if rows else np.zeros(0, np.float32)
        return sparse.csr_matrix((data, indices, indptr), shape=(len(rows), self.n_cols), dtype=np.float32)


def encode_with_cache(texts: list[str], cache: EmbeddingCache, make_encoder: Callable, role: str,
                      label: str) -> tuple[object, int]:
    """Embeddings for ``texts`` and how many were encoded now; only texts missing from the cache are
    encoded, in fixed chunks, each chunk persisted before the next starts."""
    from tqdm import tqdm

    keys = [text_key(t) for t in texts]
    unique: dict[str, str] = {}
    for key, text in zip(keys, texts):
        unique.setdefault(key, text)
    todo = cache.missing(list(unique))
    if todo:
        encoder = make_encoder()
        with tqdm(total=len(todo), desc=label, unit="text", file=sys.stderr, mininterval=30) as bar:
            for start in range(0, len(todo), ENCODE_CHUNK):
                chunk = todo[start:start + ENCODE_CHUNK]
                cache.add(chunk, encoder.encode([unique[k] for k in chunk], role))
                bar.update(len(chunk))
    return cache.matrix(keys), len(todo)
