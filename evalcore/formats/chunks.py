"""Query-aligned chunks: cut points at qid boundaries, stable grouping of an ungrouped run, and the
validation of one streamed chunk.

Every qid's rows are in exactly one chunk, contiguous and in input order; a chunk holds at most
``chunk_rows`` rows unless one query is bigger (then it is whole). A chunk streamed with
``check_duplicates=False`` carries :data:`UNCHECKED_PAIRS_KEY` metadata (the first line of the chunk) so
that :func:`raise_duplicate_pairs` can name the exact line of a repeated pair.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evalcore import arrow_np
from evalcore.formats.limits import check_query_sizes
from evalcore.formats.lines import LineNumbers
from evalcore.formats.validation import apply_maxp, canonical_run, check_unique_pairs


def qid_run_starts(qids: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Row indices where a new run of equal qids begins (always includes 0)."""
    if len(qids) == 0:
        return np.zeros(0, dtype=np.int64)
    if pa.types.is_dictionary(qids.type):
        codes = _dictionary_codes(qids)
        if codes is not None:
            return np.concatenate(([0], np.flatnonzero(codes[1:] != codes[:-1]) + 1))
        qids = qids.cast(qids.type.value_type)
    changed = pc.not_equal(qids.slice(1), qids.slice(0, len(qids) - 1))
    return np.concatenate(([0], np.flatnonzero(np.asarray(arrow_np.to_numpy(changed), bool)) + 1))


def _dictionary_codes(qids: pa.Array | pa.ChunkedArray) -> np.ndarray | None:
    """int64 codes (null -> -1) of a dictionary column whose chunks share one duplicate-free dictionary;
    None otherwise."""
    chunks = qids.chunks if isinstance(qids, pa.ChunkedArray) else [qids]
    if not chunks:
        return np.zeros(0, dtype=np.int64)
    dictionary = chunks[0].dictionary
    if any(not chunk.dictionary.equals(dictionary) for chunk in chunks[1:]) \
            or pc.count_distinct(dictionary, mode="all").as_py() != len(dictionary):
        return None
    return np.concatenate([arrow_np.to_numpy_filled(chunk.indices, -1).astype(np.int64) for chunk in chunks])


def chunk_ends(run_starts: np.ndarray, n_rows: int, chunk_rows: int) -> list[int]:
    """Cut points at qid boundaries, each chunk at most chunk_rows unless one query is bigger."""
    ends: list[int] = []
    position = 0
    while position < n_rows:
        target = position + chunk_rows
        if target >= n_rows:
            end = n_rows
        else:
            index = int(np.searchsorted(run_starts, target, side="right")) - 1
            end = int(run_starts[index])
            if end <= position:  # one query larger than chunk_rows: take it whole
                index = int(np.searchsorted(run_starts, position, side="right"))
                end = int(run_starts[index]) if index < len(run_starts) else n_rows
        ends.append(end)
        position = end
    return ends


def _group_by_qid(run: pa.Table) -> pa.Table:
    """Stable grouping: queries in order of first appearance, rows in input order within a query."""
    first_seen_codes = pc.dictionary_encode(run["qid"]).combine_chunks().indices
    return run.take(pc.sort_indices(first_seen_codes, sort_keys=[("", "ascending")]))


def chunks_of_table(run: pa.Table, chunk_rows: int, path: Path | None = None) -> Iterator[pa.Table]:
    """Query-aligned chunks of a run read whole, grouped stably first when a qid's rows are apart."""
    starts = qid_run_starts(run["qid"])
    if len(starts) != pc.count_distinct(run["qid"]).as_py():
        run = _group_by_qid(run)
        starts = qid_run_starts(run["qid"])
    check_query_sizes(run["qid"], starts, path, None)  # grouped: rows are no longer lines
    position = 0
    for end in chunk_ends(starts, run.num_rows, chunk_rows):
        yield run.slice(position, end - position).combine_chunks()
        position = end


UNCHECKED_PAIRS_KEY = b"evalcore.unchecked_pairs_first_line"


def validated_chunk(raw: pa.Table, picked: dict[str, str], path: Path, numbers: LineNumbers,
                    maxp: bool, check_duplicates: bool = True, qid_dictionary: bool = False) -> pa.Table:
    """One streamed chunk as a canonical run, its pairs checked unless the caller checks them."""
    chunk = canonical_run(raw[picked["qid"]], raw[picked["docid"]], raw[picked["score"]], path, numbers,
                          keep_qid_dictionary=qid_dictionary and not check_duplicates and not maxp)
    if check_duplicates or maxp:
        check_unique_pairs(chunk, path, numbers)
        return apply_maxp(chunk) if maxp else chunk
    # the caller checks (qid, docid) uniqueness itself; keep what it needs to name the line
    return chunk.replace_schema_metadata({UNCHECKED_PAIRS_KEY: str(numbers.first).encode()})


def raise_duplicate_pairs(chunk: pa.Table, path: str | Path) -> None:
    """For a chunk streamed with ``check_duplicates=False``: raise the exact duplicate error (file and
    line of the repeated row); returns quietly when the suspected duplicate was a hash collision."""
    metadata = chunk.schema.metadata or {}
    first_line = int(metadata.get(UNCHECKED_PAIRS_KEY, b"1"))
    if pa.types.is_dictionary(chunk.schema.field("qid").type):
        chunk = chunk.set_column(0, "qid", chunk["qid"].cast(pa.string()))
    check_unique_pairs(chunk.replace_schema_metadata(None), path, LineNumbers(first_line))
