"""Readers and writers for runs and qrels: TREC text, BEIR tsv, JSON lines, nested JSON ``{qid: {docid: value}}``,
CSV/TSV and parquet.

Everything is columnar (pyarrow): a file becomes one string array of lines, split and cast with
vectorised kernels; no Python object is made per row (nested JSON, parsed by json's C scanner, holds one batch
of rows as Python objects at a time). Bad input raises
:class:`evalcore.errors.InputError` naming the file, the 1-based physical line (for parquet: the
1-based row) and what was expected.

Conventions shared with the engine:

- runs are ``qid: string, docid: string, score: float64`` in input order; qrels are
  ``qid: string, docid: string, relevance: int64`` (>= 0), duplicates with equal grades collapsed.
- blank (whitespace-only) lines are skipped everywhere, but line numbers in messages are physical
  line numbers of the file (a UTF-8 BOM and CRLF line ends are accepted).
- ids are always strings as written ("007" stays "007"); a JSON number id becomes its decimal text
  (a float id of magnitude 2^53 or more is refused: float64 cannot keep such ids apart). Unquoted ids
  and values of text formats (TREC, CSV/TSV fields) are trimmed of Unicode whitespace at both ends (a
  no-break space included), so the same id matches whichever text format it comes in; quoted CSV
  fields, JSON strings and parquet values are taken as stored.

The package, one concern a module (this one re-exports what the rest of tiebreak uses):

- :mod:`~evalcore.formats.detection` which format a file is in; :mod:`~evalcore.formats.limits` what one
  input may cost (``TIEBREAK_MAX_*``);
- :mod:`~evalcore.formats.text` text as lines; one module a format: :mod:`~evalcore.formats.trec`,
  :mod:`~evalcore.formats.delimited` (CSV/TSV), :mod:`~evalcore.formats.jsonl`, :mod:`~evalcore.formats.nested`
  (one JSON document: pytrec_eval's, ranx's, mteb's), :mod:`~evalcore.formats.parquet`;
- :mod:`~evalcore.formats.partitions` one task at a time: files with ``benchmark`` / ``task`` / ``setting`` columns
  split by them, never pooled;
- :mod:`~evalcore.formats.columns` schemas and column aliases; :mod:`~evalcore.formats.values` ids, scores and
  grades; :mod:`~evalcore.formats.validation` whole tables; :mod:`~evalcore.formats.lines` rows to lines;
- :mod:`~evalcore.formats.chunks` query-aligned chunks; :mod:`~evalcore.formats.readers` the readers;
  :mod:`~evalcore.formats.writers` atomic writes (on :mod:`evalcore.outputs`' rules) and the writers.
"""
from __future__ import annotations

from evalcore.formats.chunks import UNCHECKED_PAIRS_KEY, chunks_of_table, qid_run_starts, raise_duplicate_pairs
from evalcore.formats.columns import QRELS_COLUMN_NAMES, QRELS_SCHEMA, RUN_COLUMN_NAMES, RUN_SCHEMA
from evalcore.formats.detection import detect_qrels_format, detect_run_format
from evalcore.formats.limits import readable_input
from evalcore.formats.lines import LineNumbers
from evalcore.formats.partitions import (
    PARTITION_COLUMNS,
    Parts,
    Selection,
    check_parts_agree,
    project,
    several_parts,
)
from evalcore.formats.readers import (
    iter_run_chunks,
    read_qrels,
    read_evaluation,
    read_qrels_parts,
    read_run,
    read_run_parts,
    read_run_rows,
    run_partitions,
)
from evalcore.formats.validation import (
    apply_maxp,
    check_unique_pairs,
    qrels_parts_of_table,
    run_parts_of_table,
    validate_qrels,
    validate_run,
)
from evalcore.formats.writers import atomic_path, atomic_paths, write_parquet_atomic, write_run

__all__ = [
    "PARTITION_COLUMNS", "QRELS_COLUMN_NAMES", "QRELS_SCHEMA", "RUN_COLUMN_NAMES", "RUN_SCHEMA", "UNCHECKED_PAIRS_KEY",
    "LineNumbers", "Parts", "Selection", "apply_maxp", "atomic_path", "atomic_paths", "check_parts_agree",
    "check_unique_pairs", "chunks_of_table", "detect_qrels_format", "detect_run_format", "iter_run_chunks", "project",
    "qid_run_starts", "qrels_parts_of_table", "raise_duplicate_pairs", "read_evaluation", "read_qrels", "read_qrels_parts",
    "read_run",
    "read_run_parts", "read_run_rows", "readable_input", "run_partitions", "run_parts_of_table", "several_parts",
    "validate_qrels", "validate_run", "write_parquet_atomic", "write_run",
]
