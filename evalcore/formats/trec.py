"""TREC text: runs ``qid Q0 docid rank score tag`` (6 columns), qrels ``qid iter docid grade`` (4 columns).

Fields are split at ASCII whitespace, as trec_eval does; the ids and values used are trimmed of Unicode
whitespace (a no-break space included) at both ends, so an id matches whichever text format it comes in.
Written runs get their rank by descending score within a query (ties: input order) and tag ``evalcore``
unless the table has a ``tag`` column; ids that would not read back (empty or holding whitespace) are refused.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evalcore import arrow_np
from evalcore.formats.lines import LineNumbers, first_true
from evalcore.formats.text import read_lines, split_whitespace_columns
from evalcore.formats.validation import canonical_run, require_rows

_TREC_RUN_LAYOUT = "qid Q0 docid rank score tag"
_TREC_QRELS_LAYOUT = "qid iter docid grade"


def read_trec_run(path: Path) -> tuple[pa.Table, LineNumbers]:
    """A TREC run as a canonical run table (not yet checked for repeated pairs) with the line of each row."""
    lines = read_lines(path)
    require_rows(len(lines.text), path, "run")
    qids, _, docids, _, scores, _ = split_whitespace_columns(lines, path, 6, _TREC_RUN_LAYOUT, (0, 2, 4))
    return canonical_run(qids, docids, scores, path, lines.numbers), lines.numbers


def read_trec_qrels(path: Path) -> tuple[dict[str, pa.Array], LineNumbers]:
    """The qid, docid and grade columns of TREC qrels (``qid iter docid grade``; the iteration column is
    ignored) as text, with the line of each row."""
    lines = read_lines(path)
    require_rows(len(lines.text), path, "qrels")
    qids, _, docids, grades = split_whitespace_columns(lines, path, 4, _TREC_QRELS_LAYOUT, (0, 2, 3))
    return {"qid": qids, "docid": docids, "relevance": grades}, lines.numbers


def _ranks_by_score(run: pa.Table) -> pa.Array:
    """1-based rank of each row within its query by descending score (ties: input order)."""
    qid_codes = arrow_np.to_numpy(pc.dictionary_encode(run["qid"]).combine_chunks().indices)
    scores = arrow_np.to_numpy(run["score"])
    order = np.lexsort((np.arange(run.num_rows), -scores, qid_codes))
    sorted_codes = qid_codes[order]
    group_starts = np.flatnonzero(np.concatenate(([True], sorted_codes[1:] != sorted_codes[:-1])))
    group_sizes = np.diff(np.append(group_starts, run.num_rows))
    ranks_sorted = np.arange(run.num_rows) - np.repeat(group_starts, group_sizes) + 1
    ranks = np.empty(run.num_rows, dtype=np.int64)
    ranks[order] = ranks_sorted
    return arrow_np.from_numpy(ranks)


def trec_run_lines(run: pa.Table, tags: pa.Array | None, path: Path) -> pa.Array:
    """The TREC text line of each row of ``run`` (without line ends); ValueError naming ``path`` for an id
    that would not read back."""
    for name in ("qid", "docid"):  # ids that would not read back as they are: a split or a trimmed id
        unreadable = pc.or_(pc.match_substring_regex(run[name], r"\s"), pc.equal(run[name], ""))
        bad = first_true(pc.or_(unreadable, pc.not_equal(pc.utf8_trim_whitespace(run[name]), run[name])))
        if bad is not None:
            raise ValueError(f"cannot write {name} {run[name][bad].as_py()!r} (row {bad + 1}) to TREC text "
                             f"{path}: ids must be non-empty and contain no whitespace")
    tag = tags if tags is not None else pa.array(np.full(run.num_rows, "evalcore", dtype=object), pa.string())
    n_rows = run.num_rows
    q0 = pa.array(np.full(n_rows, "Q0", dtype=object), pa.string()) if n_rows else pa.array([], pa.string())
    return pc.binary_join_element_wise(
        run["qid"], q0, run["docid"], _ranks_by_score(run).cast(pa.string()),
        run["score"].cast(pa.string()), tag, " ")
