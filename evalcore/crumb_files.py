"""CRUMB's files: its per-task query/label JSON lines and run files, read into evalcore's run and qrels tables.

CRUMB (Killingback & Zamani, arXiv 2509.07253; data on the Hugging Face hub as ``jfkback/crumb``) keeps the
queries and labels of a task in ``<task>/eval/query_labels.jsonl`` (validation: ``<task>/val/``), one JSON
object per line with ``query_id``, ``query_content``, ``instruction``, ``passage_qrels``,
``passage_binary_qrels`` (some tasks only), ``full_document_qrels``, ``use_max_p`` and ``metadata``. Each
qrels value is a list of ``{"id": ..., "label": ...}`` with float32 graded labels. Passage ids are
``DOC:CHUNK``.

Labels are cast to integers as CRUMB's evaluator (``crumb_eval``) does before ir_measures sees them:
``int(label)``, truncation toward zero (2.7 -> 2, 0.5 -> 0). A label that is not a finite number >= 0 is an
error, never a silent 0.

Runs: CRUMB's JSON lines ``{"query": {"id": Q}, "items": [{"id": D, "score": S}, ...]}`` (also accepted:
``query_id`` / ``qid`` for the query and ``results`` for the items), or any run format evalcore reads
(TREC, flat JSON lines, parquet, CSV) with CRUMB ids. Every problem is one :class:`InputError` naming the
file and line.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evalcore.errors import InputError
from evalcore.formats.columns import QRELS_SCHEMA, RUN_SCHEMA
from evalcore.formats.detection import UTF8_BOM, first_bytes, json_layout, strip_gz
from evalcore.formats.limits import input_lines, parse_json
from evalcore.formats.lines import short_repr
from evalcore.formats.values import grade_problem, score_problem

SPLIT_FOLDERS = {"eval": "eval", "val": "val"}
LABELS_FILE = "query_labels.jsonl"


def _json_lines(path: Path):
    """(line number, parsed object) for every non-blank line, read within the input limits
    (:func:`evalcore.formats.limits.input_lines`: bytes, lines, line length, blank lines, the FIFO wait) and
    parsed within the JSON nesting limit; NaN / Infinity literals and lines that are not one JSON object are
    errors naming the line."""
    for number, raw in input_lines(path):
        if not raw.strip():
            continue
        value = parse_json(raw, path, number, expected="one JSON object per line", constants=False)
        if not isinstance(value, dict):
            raise InputError(f"expected one JSON object per line, found {type(value).__name__}", path, number)
        yield number, value


def _identifier(value, what: str, path: Path, line: int) -> str:
    """A query or document id: a non-empty string, or an integer taken as its decimal text."""
    if isinstance(value, bool) or not isinstance(value, (str, int)) or (isinstance(value, str) and not value.strip()):
        raise InputError(f"expected {what} to be a non-empty string or an integer, found {short_repr(value)}",
                         path, line)
    return str(value)


def _finite(value, what: str, path: Path, line: int) -> float:
    """A JSON number as float64; a bool, text, NaN, an infinity or a number beyond float64 is an error."""
    problem = score_problem(value)
    if problem is not None:
        raise InputError(f"expected {what} to be a finite number: {problem}", path, line)
    return float(value)


def _label(value, what: str, path: Path, line: int) -> int:
    """A CRUMB label as crumb_eval casts it, ``int(label)``: a finite number >= 0 whose integer part fits in
    64 bits (1e19 and a 400-digit integer are refused, never wrapped or overflowed)."""
    label = _finite(value, what, path, line)
    if label < 0:
        raise InputError(f"expected {what} to be >= 0, found {value!r}", path, line)
    problem = grade_problem(int(label))
    if problem is not None:
        raise InputError(f"expected {what} to be a grade: {problem}", path, line)
    return int(label)


# ---------------------------------------------------------------------------------------------- labels

@dataclass(frozen=True)
class QueryLabels:
    """One task's labels: ``qrels[key]`` a qrels table (``QRELS_SCHEMA``, grades ``int(label)``) for every
    qrels key read, and ``n_queries`` the number of queries in the file."""

    path: Path
    qrels: dict[str, pa.Table]
    n_queries: int


def labels_path(crumb_dir: str | Path, task: str, split: str = "eval") -> Path:
    """``<crumb_dir>/<task>/<eval|val>/query_labels.jsonl``."""
    if split not in SPLIT_FOLDERS:
        raise InputError(f"unknown split {split!r}: expected one of {', '.join(SPLIT_FOLDERS)}")
    return Path(crumb_dir) / task / SPLIT_FOLDERS[split] / LABELS_FILE


def read_query_labels(path: str | Path, keys: tuple[str, ...]) -> QueryLabels:
    """The qrels under each of ``keys`` (``passage_qrels``, ``passage_binary_qrels``, ``full_document_qrels``)
    of a CRUMB ``query_labels.jsonl``. Every line needs ``query_id`` and every key; a query listed twice, a
    judgement that is not ``{"id", "label"}``, a label that is not a finite number >= 0, or one document
    judged twice with different labels is an error naming the line."""
    path = Path(path)
    columns = {key: ([], [], []) for key in keys}
    seen: dict[str, int] = {}
    for line, record in _json_lines(path):
        missing = [key for key in ("query_id", *keys) if key not in record]
        if missing:
            raise InputError(f"expected the key(s) {', '.join(map(repr, missing))} in every line", path, line)
        qid = _identifier(record["query_id"], "'query_id'", path, line)
        if qid in seen:
            raise InputError(f"query {short_repr(qid)} is listed twice (first on line {seen[qid]})", path, line)
        seen[qid] = line
        for key in keys:
            qids, docids, grades = columns[key]
            judged = _judgements(record[key], key, path, line)
            qids.extend([qid] * len(judged))
            docids.extend(judged)
            grades.extend(judged.values())
    if not seen:
        raise InputError("empty file: expected one JSON object per query", path)
    qrels = {key: pa.table({"qid": pa.array(q, pa.string()), "docid": pa.array(d, pa.string()),
                            "relevance": pa.array(g, pa.int64())}, schema=QRELS_SCHEMA)
             for key, (q, d, g) in columns.items()}
    return QueryLabels(path, qrels, len(seen))


def _judgements(value, key: str, path: Path, line: int) -> dict[str, int]:
    """``[{"id": D, "label": L}, ...]`` as {docid: int(label)}."""
    if value is None:
        value = []
    if not isinstance(value, list):
        raise InputError(f"expected {key!r} to be a list of {{\"id\", \"label\"}} objects, found "
                         f"{type(value).__name__}", path, line)
    judged: dict[str, int] = {}
    labels: dict[str, float] = {}
    for item in value:
        if not isinstance(item, dict) or "id" not in item or "label" not in item:
            raise InputError(f"expected every {key!r} entry to be an object with \"id\" and \"label\", found "
                             f"{short_repr(item)}", path, line)
        docid = _identifier(item["id"], f"a {key!r} id", path, line)
        grade = _label(item["label"], f"the label of {short_repr(docid)} in {key!r}", path, line)
        label = float(item["label"])
        if docid in labels and labels[docid] != label:
            raise InputError(f"document {short_repr(docid)} is judged twice in {key!r} ({labels[docid]!r} and "
                             f"{label!r}): expected one label per document", path, line)
        labels[docid] = label
        judged[docid] = grade  # crumb_eval's cast: truncation toward zero
    return judged


# ------------------------------------------------------------------------------------------------ runs

@dataclass(frozen=True)
class CrumbRun:
    """A run as ``RUN_SCHEMA`` rows and the file line of every row (the 1-based row for parquet)."""

    path: Path
    table: pa.Table
    lines: np.ndarray | None

    def where(self, row: int) -> int | None:
        return None if self.lines is None else int(self.lines[row])


_CRUMB_KEYS = ("query", "items", "results")
_FIRST_KEY = re.compile(rb'^\s*\{\s*"((?:[^"\\]|\\.)*)"')


def is_crumb_jsonl(path: Path) -> bool:
    """Whether ``path`` holds CRUMB's nested run lines (a JSON object with ``query`` or ``items``/``results``),
    judged from its first 64 KiB: a first line with one of those keys is CRUMB's; a nested JSON document
    (``{qid: {docid: score}}``, :func:`evalcore.formats.detection.json_layout`) and flat JSON lines are not."""
    if strip_gz(path).suffix.lower() not in (".jsonl", ".json", ".ndjson"):
        return False
    head = first_bytes(path).removeprefix(UTF8_BOM)
    first_key = _FIRST_KEY.match(head)
    if first_key is not None and first_key.group(1).decode("utf-8", "replace") in _CRUMB_KEYS:
        return True
    if strip_gz(path).suffix.lower() == ".json" and json_layout(head) == "json":
        return False
    line = next((text for text in head.splitlines() if text.strip()), b"")
    try:
        first = json.loads(line)
    except (ValueError, RecursionError):
        return first_key is None or b'"items"' in line or b'"results"' in line  # let the CRUMB reader name the line
    return isinstance(first, dict) and any(key in first for key in _CRUMB_KEYS)


def read_run(path: str | Path) -> CrumbRun:
    """A run file: CRUMB's JSON lines, else any format :func:`evalcore.formats.read_run` reads."""
    path = Path(path)
    if is_crumb_jsonl(path):
        return _read_nested(path)
    from evalcore.formats.readers import read_run_rows
    from evalcore.formats.validation import check_unique_pairs

    table, _, numbers = read_run_rows(path)
    check_unique_pairs(table, path, numbers)
    lines = numbers.first + np.arange(table.num_rows, dtype=np.int64) if numbers.array is None \
        else np.asarray(numbers.array, dtype=np.int64)
    return CrumbRun(path, table, lines)


def _read_nested(path: Path) -> CrumbRun:
    qids, docids, scores, lines = [], [], [], []
    seen: dict[str, int] = {}
    for line, record in _json_lines(path):
        query = record.get("query")
        if isinstance(query, dict):
            qid_value = query.get("id")
        else:
            qid_value = record.get("query_id", record.get("qid", query))
        if qid_value is None:
            raise InputError("expected the query id as {\"query\": {\"id\": ...}} (or \"query_id\")", path, line)
        qid = _identifier(qid_value, "the query id", path, line)
        if qid in seen:
            raise InputError(f"query {short_repr(qid)} appears twice (first on line {seen[qid]}): expected one "
                             "line per query", path, line)
        seen[qid] = line
        items = record.get("items", record.get("results"))
        if not isinstance(items, list):
            raise InputError("expected \"items\": a list of {\"id\": ..., \"score\": ...}", path, line)
        in_query: set[str] = set()
        for item in items:
            if not isinstance(item, dict) or "id" not in item or "score" not in item:
                raise InputError(f"expected every item to be an object with \"id\" and \"score\", found "
                                 f"{short_repr(item)}", path, line)
            docid = _identifier(item["id"], "an item id", path, line)
            score = _finite(item["score"], f"the score of {short_repr(docid)}", path, line)
            if docid in in_query:
                raise InputError(f"item {short_repr(docid)} appears twice for query {short_repr(qid)}: expected "
                                 "each item once per query", path, line)
            in_query.add(docid)
            qids.append(qid)
            docids.append(docid)
            scores.append(score)
            lines.append(line)
    if not seen:
        raise InputError("empty file: expected one JSON object per query", path)
    table = pa.table({"qid": pa.array(qids, pa.string()), "docid": pa.array(docids, pa.string()),
                      "score": pa.array(scores, pa.float64())}, schema=RUN_SCHEMA)
    return CrumbRun(path, table, np.asarray(lines, dtype=np.int64))


def max_passage(run: CrumbRun) -> pa.Table:
    """CRUMB's MaxP: every passage ``DOC:CHUNK`` (split at the first ``:``, as ``crumb_eval`` does) stands for
    its document ``DOC``, scored by its best passage: score(DOC) = max over its passages. A document keeps the
    input position of its first passage. An id without a chunk part (no ``:``, or nothing before it) is an
    error naming the file and line."""
    table = run.table
    docids = table["docid"]
    parts = pc.split_pattern(docids, ":", max_splits=1)
    documents = pc.list_element(parts, 0)
    bad = pc.or_(pc.less(pc.list_value_length(parts), 2), pc.equal(pc.utf8_length(documents), 0))
    bad_rows = np.flatnonzero(np.asarray(bad.to_numpy(zero_copy_only=False), dtype=bool))
    if len(bad_rows):
        row = int(bad_rows[0])
        raise InputError(f"expected a passage id DOC:CHUNK where MaxP applies, found {short_repr(docids[row].as_py())} "
                         f"(query {short_repr(table['qid'][row].as_py())})", run.path, run.where(row))
    positions = pa.array(np.arange(table.num_rows, dtype=np.int64))
    grouped = pa.table({"qid": table["qid"], "docid": documents, "score": table["score"], "position": positions}) \
        .group_by(["qid", "docid"], use_threads=False).aggregate([("score", "max"), ("position", "min")])
    grouped = grouped.take(pc.sort_indices(grouped["position_min"]))
    return pa.table({"qid": grouped["qid"], "docid": grouped["docid"], "score": grouped["score_max"]},
                    schema=RUN_SCHEMA)
