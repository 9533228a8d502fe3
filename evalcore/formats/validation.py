"""Whole tables checked: canonical runs and qrels, the (qid, docid) uniqueness check, CRUMB MaxP, and
in-memory tables (pyarrow or pandas) validated like a file.

A run holds each (qid, docid) at most once (the second occurrence is an error naming the first's line);
qrels collapse exact duplicate judgements to their first occurrence, and conflicting grades for one
(qid, docid) are an error.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evalcore import arrow_np
from evalcore.errors import InputError
from evalcore.id_keys import string_hashes
from evalcore.formats.columns import (
    DICTIONARY_QID_RUN_SCHEMA,
    QRELS_COLUMN_NAMES,
    QRELS_SCHEMA,
    RUN_COLUMN_NAMES,
    RUN_SCHEMA,
    pick_columns,
)
from evalcore.formats.lines import LineNumbers, row_error, short_repr
from evalcore.formats.values import as_grades, as_id, as_scores


def as_arrow(table_or_df) -> pa.Table:
    """A pyarrow Table, RecordBatch or pandas DataFrame as a pyarrow Table."""
    if isinstance(table_or_df, pa.Table):
        return table_or_df
    if isinstance(table_or_df, pa.RecordBatch):
        return pa.Table.from_batches([table_or_df])
    return pa.Table.from_pandas(table_or_df, preserve_index=False)


def require_rows(n_rows: int, path: Path, what: str) -> None:
    """InputError ``empty file`` when there is no row."""
    if n_rows == 0:
        raise InputError(f"empty file: expected at least one {what} row", path)


def canonical_run(qids: pa.Array, docids: pa.Array, scores: pa.Array, path: Path,
                  numbers: LineNumbers, keep_qid_dictionary: bool = False) -> pa.Table:
    """Ids, docids and scores checked and cast to a run table (:data:`RUN_SCHEMA`)."""
    qid = as_id(qids, "qid", path, numbers, keep_dictionary=keep_qid_dictionary)
    return pa.table({"qid": qid, "docid": as_id(docids, "docid", path, numbers),
                     "score": as_scores(scores, path, numbers)},
                    schema=DICTIONARY_QID_RUN_SCHEMA if pa.types.is_dictionary(qid.type) else RUN_SCHEMA)


def _pair_codes(table: pa.Table) -> np.ndarray:
    """One int64 per row identifying its (qid, docid) pair (hash-based dictionary codes)."""
    qid_codes = pc.dictionary_encode(table["qid"]).combine_chunks()
    doc_codes = pc.dictionary_encode(table["docid"]).combine_chunks()
    n_docs = max(len(doc_codes.dictionary), 1)
    return (arrow_np.to_numpy(qid_codes.indices).astype(np.int64) * n_docs
            + arrow_np.to_numpy(doc_codes.indices).astype(np.int64))


def _has_repeated_pairs(table: pa.Table) -> bool:
    """Cheap check: False means every (qid, docid) is unique; True may be a (rare) hash collision."""
    docids = table.column("docid").combine_chunks()
    hashes = string_hashes(docids)
    if hashes is None:
        distinct = table.select(["qid", "docid"]).group_by(["qid", "docid"]).aggregate([]).num_rows
        return distinct < table.num_rows
    qid_codes = arrow_np.to_numpy(pc.dictionary_encode(table.column("qid")).combine_chunks().indices)
    hashes ^= qid_codes.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    hashes.sort()
    return bool((hashes[1:] == hashes[:-1]).any())


def check_unique_pairs(table: pa.Table, path: str | Path, numbers: LineNumbers, what: str = "run") -> None:
    """Raise InputError at the second occurrence of a (qid, docid) pair, naming the first."""
    if table.num_rows < 2 or not _has_repeated_pairs(table):
        return
    pair_codes = _pair_codes(table)
    _, first_rows, inverse = np.unique(pair_codes, return_index=True, return_inverse=True)
    repeated = np.flatnonzero(first_rows[inverse] != np.arange(table.num_rows))
    if len(repeated) == 0:  # the cheap check hit a hash collision
        return
    row = int(repeated[0])
    first_row = int(first_rows[inverse[row]])
    qid, docid = table["qid"][row].as_py(), table["docid"][row].as_py()
    raise row_error(f"duplicate document {short_repr(docid)} for query {short_repr(qid)} (first on line "
                    f"{numbers.of(first_row)}): expected each (qid, docid) at most once in a {what}",
                    path, numbers, row)


def apply_maxp(run: pa.Table) -> pa.Table:
    """CRUMB MaxP: ``docid:chunk`` -> ``docid`` (split at the last ':'), score = max over chunks.

    A document keeps the input position of its first chunk.
    """
    documents = pc.list_element(pc.split_pattern(run["docid"], ":", max_splits=1, reverse=True), 0)
    positions = arrow_np.from_numpy(np.arange(run.num_rows, dtype=np.int64))
    grouped = pa.table({"qid": run["qid"], "docid": documents, "score": run["score"], "position": positions}) \
        .group_by(["qid", "docid"], use_threads=False) \
        .aggregate([("score", "max"), ("position", "min")])
    order = pc.sort_indices(grouped["position_min"])
    result = grouped.take(order)
    return pa.table({"qid": result["qid"], "docid": result["docid"], "score": result["score_max"]},
                    schema=RUN_SCHEMA)


def qrels_from_columns(columns: dict[str, pa.Array], path: Path, numbers: LineNumbers) -> pa.Table:
    """Qrels columns checked and cast (:data:`QRELS_SCHEMA`), duplicates collapsed."""
    qrels = pa.table({"qid": as_id(columns["qid"], "qid", path, numbers),
                      "docid": as_id(columns["docid"], "docid", path, numbers),
                      "relevance": as_grades(columns["relevance"], path, numbers)}, schema=QRELS_SCHEMA)
    return _deduplicated_qrels(qrels, path, numbers)


def _deduplicated_qrels(qrels: pa.Table, path: Path, numbers: LineNumbers) -> pa.Table:
    if qrels.num_rows < 2 or not _has_repeated_pairs(qrels):
        return qrels
    pair_codes = _pair_codes(qrels)
    _, first_rows, inverse = np.unique(pair_codes, return_index=True, return_inverse=True)
    grades = arrow_np.to_numpy(qrels["relevance"])
    conflicting = np.flatnonzero(grades != grades[first_rows[inverse]])
    if len(conflicting):
        row = int(conflicting[0])
        first_row = int(first_rows[inverse[row]])
        raise row_error(f"conflicting grades for document {short_repr(qrels['docid'][row].as_py())} of query "
                        f"{short_repr(qrels['qid'][row].as_py())}: {grades[row]} here, {grades[first_row]} on line "
                        f"{numbers.of(first_row)}; expected one grade per (qid, docid)", path, numbers, row)
    return qrels.take(arrow_np.from_numpy(np.sort(first_rows)))


def _require_columns(table: pa.Table, wanted: dict[str, tuple[str, ...]], source: str) -> dict[str, pa.ChunkedArray]:
    picked = pick_columns(table.column_names, wanted, Path(source))
    return {name: table.column(index) for name, index in picked.items()}


def validate_run(table_or_df, source: str = "<run table>") -> pa.Table:
    """An in-memory run (pa.Table / DataFrame) cast to ``RUN_SCHEMA`` and validated like a file.

    Errors name ``source`` and the 1-based row as the line. Column aliases are accepted.
    """
    path = Path(source)
    columns = _require_columns(as_arrow(table_or_df), RUN_COLUMN_NAMES, source)
    run = canonical_run(columns["qid"], columns["docid"], columns["score"], path, LineNumbers(1))
    check_unique_pairs(run, path, LineNumbers(1))
    return run


def validate_qrels(table_or_df, source: str = "<qrels table>") -> pa.Table:
    """In-memory qrels cast to ``QRELS_SCHEMA``, validated and de-duplicated like a file."""
    path = Path(source)
    columns = _require_columns(as_arrow(table_or_df), QRELS_COLUMN_NAMES, source)
    return qrels_from_columns(columns, path, LineNumbers(1))


def run_parts_of_table(table_or_df, source: str = "<run table>", select=None, maxp: bool = False):
    """An in-memory run validated like a file (:func:`validate_run`) and split by its partition columns
    (:mod:`evalcore.formats.partitions`) after ``select``: a :class:`~evalcore.formats.partitions.Parts`."""
    from evalcore.formats.partitions import partition_names, split_parts

    path = Path(source)
    table = as_arrow(table_or_df)
    columns = _require_columns(table, RUN_COLUMN_NAMES, source)
    run = canonical_run(columns["qid"], columns["docid"], columns["score"], path, LineNumbers(1))
    partitions = {name: table.column(index) for name, index in partition_names(table.column_names).items()}
    parts = split_parts(run, partitions, LineNumbers(1), path, "run", select)
    for key, (part, lines) in parts.tables.items():
        check_unique_pairs(part, path, lines)
        parts.tables[key] = (apply_maxp(part) if maxp else part, lines)
    return parts


def qrels_parts_of_table(table_or_df, source: str = "<qrels table>", select=None):
    """In-memory qrels validated like a file (:func:`validate_qrels`), split by their partition columns."""
    from evalcore.formats.partitions import partition_names, split_parts

    path = Path(source)
    table = as_arrow(table_or_df)
    columns = _require_columns(table, QRELS_COLUMN_NAMES, source)
    partitions = {name: table.column(index) for name, index in partition_names(table.column_names).items()}
    parts = split_parts(pa.table(columns), partitions, LineNumbers(1), path, "qrels", select)
    for key, (part, lines) in parts.tables.items():
        parts.tables[key] = (qrels_from_columns({name: part[name] for name in part.column_names}, path, lines), None)
    return parts
