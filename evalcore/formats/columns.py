"""The canonical tables and the header names their columns are accepted under.

- runs are ``qid: string, docid: string, score: float64`` (:data:`RUN_SCHEMA`); a streamed parquet chunk for
  the engine may keep its string qids dictionary-encoded (:data:`DICTIONARY_QID_RUN_SCHEMA`);
- qrels are ``qid: string, docid: string, relevance: int64`` (:data:`QRELS_SCHEMA`).

Header names are compared lower-case and the first alias found wins: qid is also ``query-id``, ``query_id``,
``q_id``, ``queryid``, ``topic``; docid is also ``corpus-id``, ``corpus_id``, ``doc_id``, ``p_id``, ``pid``,
``docno``; a run's score is also ``sim``, ``similarity``; a grade is ``relevance``, ``score``, ``grade``,
``rel``, ``label`` or ``judgment``.
"""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from evalcore.errors import InputError, printable

RUN_SCHEMA = pa.schema([("qid", pa.string()), ("docid", pa.string()), ("score", pa.float64())])
# streamed parquet chunks for the engine keep string qids dictionary-encoded (as parquet stores them)
DICTIONARY_QID_RUN_SCHEMA = RUN_SCHEMA.set(0, pa.field("qid", pa.dictionary(pa.int32(), pa.string())))
QRELS_SCHEMA = pa.schema([("qid", pa.string()), ("docid", pa.string()), ("relevance", pa.int64())])

# accepted header names per canonical column, first match wins (compared lower-case)
_QID_NAMES = ("qid", "query-id", "query_id", "q_id", "queryid", "topic")
_DOCID_NAMES = ("docid", "corpus-id", "corpus_id", "doc_id", "p_id", "pid", "docno")
_SCORE_NAMES = ("score", "sim", "similarity")
_RELEVANCE_NAMES = ("relevance", "score", "grade", "rel", "label", "judgment")
RUN_COLUMN_NAMES = {"qid": _QID_NAMES, "docid": _DOCID_NAMES, "score": _SCORE_NAMES}
QRELS_COLUMN_NAMES = {"qid": _QID_NAMES, "docid": _DOCID_NAMES, "relevance": _RELEVANCE_NAMES}


def pick_columns(found: list[str], wanted: dict[str, tuple[str, ...]], path: Path,
                 header_line: int | None = None) -> dict[str, int]:
    """Index of each canonical column among ``found`` names (aliases, case-insensitive)."""
    lowered = [name.lower() for name in found]
    picked: dict[str, int] = {}
    for canonical, aliases in wanted.items():
        for alias in aliases:
            if alias in lowered and lowered.index(alias) not in picked.values():
                picked[canonical] = lowered.index(alias)
                break
    missing = [name for name in wanted if name not in picked]
    if missing:
        expected = ", ".join(_with_aliases(name, wanted[name][1:3]) for name in wanted)
        raise InputError(f"missing column(s) {', '.join(missing)}: expected columns {expected}; "
                         f"found {', '.join(map(printable, found)) if found else 'no columns'}", path, header_line)
    return picked


def pick_optional(found: list[str], optional: tuple[str, ...], taken: dict[str, int]) -> dict[str, int]:
    """The index of each ``optional`` column name present among ``found`` (compared lower-case) and not already
    ``taken`` by a canonical column."""
    lowered = [name.lower() for name in found]
    used = set(taken.values())
    return {name: lowered.index(name) for name in optional if name in lowered and lowered.index(name) not in used}


def _with_aliases(name: str, aliases: tuple[str, ...]) -> str:
    """``name (or a, b)`` for a column with other accepted names, ``name`` alone for one without."""
    return f"{name} (or {', '.join(aliases)})" if aliases else name
