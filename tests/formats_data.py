"""Runs, files and assertions the tests of evalcore.formats share."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from evalcore.errors import InputError
from evalcore.formats import RUN_SCHEMA

RUN_EXTENSIONS = ("trec", "csv", "tsv", "jsonl", "parquet")


def run_table(qids: list[str], docids: list[str], scores: list[float]) -> pa.Table:
    return pa.table({"qid": pa.array(qids, pa.string()), "docid": pa.array(docids, pa.string()),
                     "score": pa.array(scores, pa.float64())})


def write_text(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


@contextmanager
def raises_at(path: Path, line: int | None, *needles: str) -> Iterator[None]:
    """Assert the block raises InputError naming ``path``, ``line`` and containing each needle."""
    with pytest.raises(InputError) as info:
        yield
    error = info.value
    assert (error.path, error.line) == (str(path), line), str(error)
    text = str(error)
    assert text.startswith(f"{path}:{line}: " if line is not None else f"{path}: ")
    for needle in needles:
        assert needle in text, text


def assert_same_run(actual: pa.Table, expected: pa.Table) -> None:
    assert actual.schema == RUN_SCHEMA
    assert actual.column("qid").to_pylist() == expected.column("qid").to_pylist()
    assert actual.column("docid").to_pylist() == expected.column("docid").to_pylist()
    # compare bit patterns so -0.0 vs 0.0 and the last ulp count
    assert (np.asarray(actual.column("score").to_numpy()).view(np.int64).tolist()
            == np.asarray(expected.column("score").to_numpy(), dtype=np.float64).view(np.int64).tolist())


def synthetic_run(n_queries: int, sizes_seed: int) -> pa.Table:
    rng = np.random.default_rng(sizes_seed)
    sizes = rng.integers(1, 200, n_queries)
    sizes[n_queries // 2] = 3000  # one query bigger than the chunk size
    qids = np.repeat([f"q{i:04d}" for i in range(n_queries)], sizes)
    docids = np.concatenate([[f"d{j}" for j in range(size)] for size in sizes])
    scores = rng.integers(0, 50, len(qids)).astype(np.float64)  # heavy ties
    return run_table(qids.tolist(), docids.tolist(), scores.tolist())


def assert_query_aligned(chunks: list[pa.Table], reference: pa.Table) -> None:
    """Each qid in exactly one chunk, contiguous, its rows in the reference's order."""
    owner: dict[str, int] = {}
    for index, chunk in enumerate(chunks):
        qids = chunk.column("qid").to_pylist()
        runs = [qid for position, qid in enumerate(qids) if position == 0 or qids[position - 1] != qid]
        assert len(runs) == len(set(runs)), "a qid is not contiguous inside a chunk"
        for qid in runs:
            assert owner.setdefault(qid, index) == index, f"qid {qid} spans two chunks"
    expected_rows = reference.to_pandas().groupby("qid", sort=False)
    got_rows = pa.concat_tables(chunks).to_pandas().groupby("qid", sort=False)
    assert set(owner) == set(reference.column("qid").to_pylist())
    for qid, rows in expected_rows:
        assert got_rows.get_group(qid).reset_index(drop=True).equals(rows.reset_index(drop=True))


GOOD_RUN_LINE = "q1 Q0 d{} 1 1.0 t\n"


def run_with_bad_line(bad_line: str, line_number: int, blank_every: int = 4) -> str:
    """A TREC run whose physical line ``line_number`` is ``bad_line``; blank lines sprinkled before it."""
    lines = []
    for number in range(1, line_number):
        lines.append("\n" if number % blank_every == 0 else GOOD_RUN_LINE.format(number))
    lines.append(bad_line + "\n")
    lines.append(GOOD_RUN_LINE.format("last"))
    return "".join(lines)
