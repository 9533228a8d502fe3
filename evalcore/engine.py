"""Evaluation driver: stream a run in query-aligned chunks, look up gains, and run the tie kernels.

``evaluate`` is the public entry point (also ``evalcore.evaluate``). It never loops over queries or
documents in Python: each chunk is cut into blocks of queries of similar length (padded to a power of
two), and every block is evaluated by :func:`evalcore.ties.evaluate_block`.

Query selection follows pytrec_eval: a query counts when it is in both the run and the qrels; with
``include_missing=True`` qrels queries absent from the run count as zero (trec_eval ``-c``).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evalcore import arrow_np, formats, id_keys, progress
from evalcore.metrics import Metric, parse_metrics
from evalcore.ties import QueryBlock, QueryTruth, TieKey, discounts, evaluate_block

if TYPE_CHECKING:  # pandas is imported lazily: the CLI path never needs it
    import pandas as pd

TIE_POLICIES = ("docid-desc", "docid-asc", "input-order", "random:SEED")
RESULT_COLUMNS = ["qid", "metric", "oblivious", "expected", "min", "max", "n_candidates", "tied_at_cutoff"]
_MIN_BLOCK_WIDTH = 8
_BLOCK_CELLS = 4_000_000  # padded cells per block: bounds the kernel's working memory


@dataclass(frozen=True)
class TiePolicy:
    """How the *oblivious* value breaks ties: ``docid-desc`` (trec_eval, pytrec_eval, MTEB, BEIR),
    ``docid-asc``, ``input-order`` (stable sort, numpy argmax) or ``random`` with a seed."""

    name: str
    seed: int | None = None

    def __str__(self) -> str:
        return self.name if self.seed is None else f"{self.name}:{self.seed}"


def parse_tie_policy(text: str | TiePolicy) -> TiePolicy:
    """Parse ``docid-desc``, ``docid-asc``, ``input-order`` or ``random:SEED``."""
    if isinstance(text, TiePolicy):
        return text
    value = str(text).strip().lower()
    if value in ("docid-desc", "docid-asc", "input-order"):
        return TiePolicy(value)
    if value.startswith("random:"):
        seed_text = value.split(":", 1)[1].strip()
        if seed_text.isascii() and seed_text.isdigit() and len(seed_text) <= 19:  # '²'.isdigit() is True
            return TiePolicy("random", int(seed_text))
        raise ValueError(f"tie policy {text!r}: expected random:SEED with SEED an integer of 1 to 19 digits "
                         "0-9, e.g. random:42")
    raise ValueError(f"unknown tie policy {text!r}: expected one of {', '.join(TIE_POLICIES)}")


# ----------------------------------------------------------------------------------------------- inputs

def _as_table(obj, value_column: str, what: str):
    """An in-memory run / qrels as something ``formats.validate_*`` accepts (a nested dict becomes a table)."""
    if isinstance(obj, dict):
        qids, docids, values = [], [], []
        for qid, docs in obj.items():
            qids.extend([str(qid)] * len(docs))
            docids.extend(str(d) for d in docs)
            values.extend(docs.values())
        return pa.table({"qid": pa.array(qids, pa.string()), "docid": pa.array(docids, pa.string()),
                         value_column: values})
    if isinstance(obj, pa.Table) or type(obj).__name__ == "DataFrame":
        return obj
    raise TypeError(f"{what} must be a path, a pandas DataFrame, a pyarrow Table or a dict, got {type(obj).__name__}")


def _qrels_parts(qrels, select) -> "formats.Parts":
    """The qrels by their partition columns (:mod:`evalcore.formats.partitions`), after ``select``."""
    if isinstance(qrels, (str, Path)):
        return formats.read_qrels_parts(qrels, select=select)
    return formats.qrels_parts_of_table(_as_table(qrels, "relevance", "qrels"), "<qrels table>", select)


def _run_input(run, select, maxp: bool) -> tuple["formats.Parts", bool]:
    """(the run by its partition columns, whether it is a path to stream as it is): a parquet run with no
    partition column, or one value in each that the selection keeps, is streamed in chunks (the parts then hold
    only its values, no table); any other run is read whole and split."""
    from evalcore.formats.partitions import Parts

    if isinstance(run, (str, Path)):
        values = formats.run_partitions(run)
        if values is not None and all(len(found) == 1 and found[0] is not None for found in values.values()) \
                and all(values[name][0] == str(value) for name, value in (select or formats.Selection()).items()
                        if name in values):
            columns = tuple(name for name in formats.PARTITION_COLUMNS if name in values)
            return Parts(Path(run), "run", columns, {tuple(values[c][0] for c in columns): (None, None)}), True
        return formats.read_run_parts(run, select=select, maxp=maxp), False
    return formats.run_parts_of_table(_as_table(run, "score", "run"), "<run table>", select, maxp), False


# ------------------------------------------------------------------------------------------------ qrels

class QrelsIndex:
    """The qrels grouped by query (for per-chunk gain look-ups), relevant counts and ideal DCGs."""

    def __init__(self, qrels: pa.Table, metrics: list[Metric]) -> None:
        qid_encoded = pc.dictionary_encode(qrels["qid"]).combine_chunks()
        self.qids: pa.Array = qid_encoded.dictionary
        query = arrow_np.to_numpy(qid_encoded.indices).astype(np.int64)
        grade = arrow_np.to_numpy(qrels["relevance"]).astype(np.float64)
        docids = qrels["docid"].combine_chunks() if isinstance(qrels["docid"], pa.ChunkedArray) else qrels["docid"]
        n_queries = len(self.qids)
        by_query = np.argsort(query, kind="stable")
        self.offsets = np.r_[0, np.cumsum(np.bincount(query, minlength=n_queries))]
        self.docids = docids.take(arrow_np.from_numpy(by_query))
        self.grades = grade[by_query]
        self.n_relevant = np.bincount(query, weights=(grade >= 1), minlength=n_queries)

        # ideal DCG per cutoff: judged grades sorted descending inside each query
        by_grade = np.lexsort((-grade, query))
        sorted_query, sorted_grade = query[by_grade], grade[by_grade]
        rank0 = np.arange(len(sorted_query)) - self.offsets[sorted_query]
        gain_at_rank = sorted_grade * discounts(len(sorted_grade) + 1)[rank0] if len(sorted_grade) else sorted_grade
        self.ideal_dcg: dict[int | None, np.ndarray] = {}
        for metric in metrics:
            if metric.name == "ndcg" and metric.k not in self.ideal_dcg:
                keep = np.ones_like(rank0, dtype=bool) if metric.k is None else rank0 < metric.k
                self.ideal_dcg[metric.k] = np.bincount(sorted_query[keep], weights=gain_at_rank[keep],
                                                       minlength=n_queries)

    def query_index(self, qids: pa.Array) -> np.ndarray:
        """Position of each qid in the qrels, -1 when absent."""
        found = pc.index_in(qids, value_set=self.qids)
        return arrow_np.to_numpy_filled(found, -1).astype(np.int64)

    def judged_in(self, chunk_queries: np.ndarray) -> "JudgedDocs":
        """The judged documents of a chunk's queries (``chunk_queries``: qrels position per query run,
        -1 when absent), keyed for :meth:`JudgedDocs.grades`."""
        judged_queries = np.unique(chunk_queries[chunk_queries >= 0])
        counts = self.offsets[judged_queries + 1] - self.offsets[judged_queries]
        total = int(counts.sum())
        qrels_rows = np.repeat(self.offsets[judged_queries], counts) + (
            np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts))
        judged_docids = self.docids.take(_indices(qrels_rows))
        distinct = pc.unique(judged_docids)
        code = np.repeat(judged_queries, counts) * len(distinct) + arrow_np.to_numpy(pc.index_in(
            judged_docids, value_set=distinct))
        order = np.argsort(code)
        return JudgedDocs(distinct, code[order], self.grades[qrels_rows][order])


@dataclass(frozen=True)
class JudgedDocs:
    """Judged (query, document) pairs of one chunk as sorted integer codes
    ``qrels query position * len(distinct) + position of the docid in distinct``."""

    distinct: pa.Array
    codes: np.ndarray
    grade_of_code: np.ndarray

    def grades(self, query_positions: np.ndarray, docids: pa.Array) -> np.ndarray:
        """Grade of each (qrels query position, docid) pair; 0 when unjudged. Only the given rows are
        hashed (the engine asks for the top K and the straddling tie group, not every candidate)."""
        grades = np.zeros(len(docids), dtype=np.float64)
        if len(self.codes) == 0:
            return grades
        doc = arrow_np.to_numpy_filled(pc.index_in(docids, value_set=self.distinct), -1)
        rows = np.flatnonzero(doc >= 0)
        code = query_positions[rows] * len(self.distinct) + doc[rows]
        at = np.minimum(np.searchsorted(self.codes, code), len(self.codes) - 1)
        hit = self.codes[at] == code
        grades[rows[hit]] = self.grade_of_code[at[hit]]
        return grades


_indices = arrow_np.indices


def _has_repeated_ids(hashes: np.ndarray, lengths: np.ndarray) -> bool:
    """Whether some query repeats a document hash (a duplicate, or a rare collision to confirm)."""
    if len(hashes) < 2:
        return False
    if (lengths == lengths[0]).all():  # every query equally deep: sort inside rows, cache friendly
        rows = np.sort(hashes.reshape(-1, int(lengths[0])), axis=1)
        return bool((rows[:, 1:] == rows[:, :-1]).any())
    keyed = np.sort(hashes ^ (np.repeat(np.arange(len(lengths), dtype=np.uint64), lengths)
                               * np.uint64(0x9E3779B97F4A7C15)))
    return bool((keyed[1:] == keyed[:-1]).any())


# ---------------------------------------------------------------------------------------------- tie keys

def _oblivious_key(policy: TiePolicy, qids: pa.Array, docids: pa.Array, row_of: callable,
                   order_keys: np.ndarray | None = None) -> TieKey:
    """A tie key over block cells for the policy; ``row_of(rows, cols)`` maps cells to chunk rows;
    ``order_keys`` (optional) are the chunk docids' exact order keys (``id_keys.order_keys``)."""

    def key(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        if policy.name == "input-order":
            return cols.astype(np.float64)
        if policy.name == "random":
            chunk_rows = _indices(row_of(rows, cols))
            row_qids = qids.take(chunk_rows)
            if pa.types.is_dictionary(row_qids.type):
                row_qids = row_qids.dictionary_decode()
            joined = pc.binary_join_element_wise(row_qids, docids.take(chunk_rows), "\x1f")
            import pandas as pd

            hashed = pd.util.hash_array(arrow_np.to_numpy(joined),
                                        hash_key=f"{policy.seed % 16**16:016x}", categorize=False)
            return (hashed >> np.uint64(11)).astype(np.float64)  # 53 bits: exact in float64
        if order_keys is not None:
            keys = order_keys[row_of(rows, cols)]
        else:
            keys = id_keys.byte_order_keys(docids, row_of(rows, cols))
        if keys is None:  # ids longer than the word-key limit: let arrow sort the strings
            ranks = pc.rank(docids.take(_indices(row_of(rows, cols))), sort_keys="ascending", tiebreaker="dense")
            keys = arrow_np.to_numpy(ranks).astype(np.uint64)
        return keys if policy.name == "docid-asc" else ~keys  # bitwise not reverses the uint64 order

    return key


# ------------------------------------------------------------------------------------------------ driver

def _evaluate_chunk(chunk: pa.Table | _PreparedChunk, truth: QrelsIndex, metrics: list[Metric], policy: TiePolicy,
                    source: str | Path | None = None) -> pa.Table | None:
    order_keys = None
    if isinstance(chunk, _PreparedChunk):
        chunk, order_keys = chunk.table, chunk.order_keys
    qid_column, docid_column = _column(chunk, "qid"), _column(chunk, "docid")
    scores = arrow_np.to_numpy(chunk["score"])
    if len(scores) == 0:
        return None
    starts, lengths, chunk_qids = _query_runs(qid_column)
    if chunk.schema.metadata and formats.UNCHECKED_PAIRS_KEY in chunk.schema.metadata:
        order_keys = _check_pairs(chunk, source).order_keys
    qrels_query = truth.query_index(chunk_qids)
    kept = np.flatnonzero(qrels_query >= 0)
    if kept.size == 0:
        return None
    judged = truth.judged_in(qrels_query)

    # queries of similar length share a block (lengths rounded up to a power of two), padded to the
    # longest query of the block: padding stays below 2x whatever the length distribution
    buckets = np.maximum(_MIN_BLOCK_WIDTH, 1 << np.ceil(np.log2(np.maximum(lengths, 1))).astype(np.int64))
    frames = []
    for bucket_width in np.unique(buckets[kept]):
        bucket = kept[buckets[kept] == bucket_width]
        per_block = max(1, _BLOCK_CELLS // int(bucket_width))
        for lo in range(0, len(bucket), per_block):
            queries = bucket[lo:lo + per_block]
            block = _pad_block(queries, starts, lengths, scores)
            in_qrels = qrels_query[queries]
            query_truth = QueryTruth(truth.n_relevant[in_qrels], {k: v[in_qrels] for k, v in truth.ideal_dcg.items()})
            block_starts = starts[queries]
            key = _oblivious_key(policy, qid_column, docid_column, lambda r, c, s=block_starts: s[r] + c,
                                 order_keys)

            def gain_of(rows, cols, s=block_starts, q=in_qrels):
                return judged.grades(q[rows], docid_column.take(_indices(s[rows] + cols)))

            values = evaluate_block(block, metrics, query_truth, key, gain_of)
            frames.append(_block_frame(chunk_qids.take(arrow_np.from_numpy(queries)), block.lengths, values, metrics))
    return pa.concat_tables(frames)


@dataclass(frozen=True)
class _PreparedChunk:
    """A chunk whose pair check is done, with the docids' exact order keys when they are short enough
    (``id_keys.order_keys``): the docid tie policies then need no per-cell string work."""

    table: pa.Table
    order_keys: np.ndarray | None


def _column(chunk: pa.Table, name: str) -> pa.Array:
    """One column of a chunk as a single Arrow array."""
    column = chunk[name]
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def _query_runs(qid_column: pa.Array) -> tuple[np.ndarray, np.ndarray, pa.Array]:
    """First row, row count and qid (as strings) of each run of equal qids in a query-aligned chunk
    (string or, when streamed from parquet, dictionary-encoded qids)."""
    starts = formats.qid_run_starts(qid_column)
    qids = qid_column.take(_indices(starts))
    if pa.types.is_dictionary(qids.type):
        qids = qids.dictionary_decode()
    return starts, np.diff(np.r_[starts, len(qid_column)]), qids


def _check_pairs(chunk: pa.Table, source: str | Path | None) -> _PreparedChunk:
    """The (qid, docid) uniqueness check of a streamed chunk (``formats.UNCHECKED_PAIRS_KEY``): key the
    docids (exact order keys for short ids, else 64-bit hashes), look for a repeat inside each query, and
    let formats name the exact line if one is found. The returned table has no marker (checked once)."""
    docid_column = _column(chunk, "docid")
    _, lengths, _ = _query_runs(_column(chunk, "qid"))
    keys = id_keys.order_keys(docid_column)
    hashes = keys if keys is not None else id_keys.string_hashes(docid_column)
    if hashes is None or _has_repeated_ids(hashes, lengths):
        formats.raise_duplicate_pairs(chunk, source)
    return _PreparedChunk(chunk.replace_schema_metadata(None), keys)


def _pad_block(queries: np.ndarray, starts: np.ndarray, lengths: np.ndarray, scores: np.ndarray) -> QueryBlock:
    """Scores of the given queries as a (Q, width) matrix padded with -inf; gains are left to the
    kernel's look-up (only the cells that can change a metric are judged)."""
    query_lengths = lengths[queries].astype(np.int64)
    width = int(query_lengths.max())
    first, last = starts[queries[0]], starts[queries[-1]] + query_lengths[-1]
    contiguous = (query_lengths == width).all() and last - first == width * len(queries)
    if contiguous:  # the common case (every query has the same depth): a reshape, no copy
        return QueryBlock(scores[first:last].reshape(-1, width), None, query_lengths)
    offsets = np.repeat(starts[queries], query_lengths)
    within = np.arange(int(query_lengths.sum())) - np.repeat(np.cumsum(query_lengths) - query_lengths, query_lengths)
    source = offsets + within
    target = np.repeat(np.arange(len(queries)) * width, query_lengths) + within
    block_scores = np.full(len(queries) * width, -np.inf)
    block_scores[target] = scores[source]
    return QueryBlock(block_scores.reshape(-1, width), None, query_lengths)


RESULT_SCHEMA = pa.schema([
    ("qid", pa.string()), ("metric", pa.string()), ("oblivious", pa.float64()), ("expected", pa.float64()),
    ("min", pa.float64()), ("max", pa.float64()), ("n_candidates", pa.int64()), ("tied_at_cutoff", pa.bool_()),
])


def _block_frame(qids: pa.Array, lengths: np.ndarray, values: dict, metrics: list[Metric]) -> pa.Table:
    n = len(qids)
    query_positions = arrow_np.from_numpy(np.tile(np.arange(n), len(metrics)))
    return pa.Table.from_arrays([
        qids.take(query_positions),
        arrow_np.strings([str(m) for m in metrics]).take(arrow_np.indices(np.repeat(np.arange(len(metrics)), n))),
        *[arrow_np.from_numpy(np.concatenate([values[kind][m] for m in metrics])) for kind in ("oblivious", "expected", "min", "max")],
        arrow_np.from_numpy(np.tile(lengths.astype(np.int64), len(metrics))),
        arrow_np.from_numpy(np.concatenate([values["tied_at_cutoff"][m] for m in metrics])),
    ], schema=RESULT_SCHEMA)


def _checked(chunk: pa.Table, source: str | Path | None) -> pa.Table | _PreparedChunk:
    metadata = chunk.schema.metadata
    return _check_pairs(chunk, source) if metadata and formats.UNCHECKED_PAIRS_KEY in metadata else chunk


def _read_ahead(chunks: Iterator[pa.Table], depth: int = 1, prepare=None) -> Iterator[pa.Table]:
    """Decode the next ``depth`` chunks (and apply ``prepare`` to each) on a background thread while the
    caller evaluates the current one (parquet decoding and numpy release the GIL). Exceptions are
    re-raised in the caller, in order; closing the generator early stops the reader."""
    import queue
    import threading

    handoff: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    done = object()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                handoff.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        try:
            for chunk in chunks:
                if not put((chunk if prepare is None else prepare(chunk), None)):
                    return
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, which re-raises it
            put((None, exc))
            return
        put((done, None))

    reader = threading.Thread(target=read, name="evalcore-read-ahead", daemon=True)
    reader.start()
    try:
        while True:
            chunk, error = handoff.get()
            if error is not None:
                raise error
            if chunk is done:
                return
            yield chunk
    finally:
        stop.set()
        reader.join()


def _map_chunks(chunks: Iterator[pa.Table], truth: QrelsIndex, metrics: list[Metric], policy: TiePolicy,
                threads: int | None, source: str | Path | None = None) -> Iterator[pa.Table | None]:
    """Evaluate chunks on a small thread pool (numpy and Arrow release the GIL), results in input order."""
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    # one worker by default: measured on 2 cores, the parquet reader already uses both and a second
    # evaluation thread only added GIL contention (2.3 s vs 3.3 s for 10M rows)
    workers = threads or 1
    if workers <= 1:
        if source is not None:  # the reader thread also runs the pair check, off the kernels' thread
            chunks = _read_ahead(chunks, prepare=lambda chunk: _checked(chunk, source))
        for chunk in chunks:
            yield _evaluate_chunk(chunk, truth, metrics, policy, source)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending: deque = deque()
        for chunk in chunks:
            pending.append(pool.submit(_evaluate_chunk, chunk, truth, metrics, policy, source))
            if len(pending) >= 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def evaluate_table(
    run,
    qrels,
    metrics: str | Iterable[str] = ("ndcg@10",),
    tie_policy: str = "docid-desc",
    *,
    include_missing: bool = False,
    maxp: bool = False,
    chunk_rows: int = 1_000_000,
    threads: int | None = None,
    select: "formats.Selection | None" = None,
) -> pa.Table:
    """:func:`evaluate` as an Arrow table (columns ``RESULT_SCHEMA``, after the partition columns the result is
    split by, if any), without importing pandas."""
    parsed = parse_metrics(metrics)
    policy = parse_tie_policy(tie_policy)
    qrels_parts = _qrels_parts(qrels, select)
    run_parts, stream = _run_input(run, select, maxp)
    by = formats.check_parts_agree(run_parts, qrels_parts)  # the columns qrels and run are split by
    if not by and len(run_parts.tables) > 1:
        raise formats.several_parts(run_parts)
    source = run if isinstance(run, (str, Path)) else None
    if not by:
        if stream:  # streamed parquet chunks skip the reader's duplicate check: the engine hashes ids per query
            chunks = formats.iter_run_chunks(run, maxp=maxp, chunk_rows=chunk_rows, check_duplicates=False)
        else:
            chunks = formats.chunks_of_table(run_parts.single()[0], chunk_rows, source)
        return _evaluate_chunks(chunks, qrels_parts.single()[0], parsed, policy, include_missing, threads, source)
    if stream:  # a parquet run of one value per partition column against qrels of several: read it whole
        run_parts = formats.read_run_parts(run, select=select, maxp=maxp)
    runs = formats.project(run_parts, by)
    tables = []
    for key, (qrels_table, _) in formats.project(qrels_parts, by).items():
        run_table = runs.get(key)
        if run_table is None and not include_missing:
            continue
        chunks = formats.chunks_of_table(run_table[0], chunk_rows, source) if run_table is not None else iter(())
        result = _evaluate_chunks(chunks, qrels_table, parsed, policy, include_missing, threads, source)
        for position, (column, value) in enumerate(zip(by, key)):
            result = result.add_column(position, column, pa.array([value] * result.num_rows, pa.string()))
        tables.append(result)
    if not tables:
        return pa.schema([(c, pa.string()) for c in by] + list(RESULT_SCHEMA)).empty_table()
    return pa.concat_tables(tables)


def _evaluate_chunks(chunks: Iterator[pa.Table], qrels: pa.Table, parsed: list[Metric], policy: TiePolicy,
                     include_missing: bool, threads: int | None, source: str | Path | None) -> pa.Table:
    """One evaluation: the run's query-aligned chunks against one qrels table, metric-major."""
    truth = QrelsIndex(qrels, parsed)
    with progress.bar("evaluate", total=len(truth.qids), unit="query") as shown:  # shows only for the CLI
        tables = []
        for table in _map_chunks(chunks, truth, parsed, policy, threads, source):
            if table is not None:
                tables.append(table)
                shown.update(table.num_rows // max(len(parsed), 1))
    if include_missing:
        seen = pa.concat_tables(tables)["qid"] if tables else pa.array([], pa.string())
        missing = truth.qids.filter(pc.invert(pc.is_in(truth.qids, value_set=pc.unique(seen))))
        if len(missing):
            zeros = {kind: {m: np.zeros(len(missing)) for m in parsed} for kind in ("oblivious", "expected", "min", "max")}
            zeros["tied_at_cutoff"] = {m: np.zeros(len(missing), dtype=bool) for m in parsed}
            tables.append(_block_frame(missing, np.zeros(len(missing), dtype=np.int64), zeros, parsed))
    result = pa.concat_tables(tables) if tables else RESULT_SCHEMA.empty_table()
    metric_rank = pc.index_in(result["metric"], value_set=arrow_np.strings([str(m) for m in parsed]))
    return result.take(pc.sort_indices(metric_rank))  # metric-major; stable inside a metric


def evaluate(
    run,
    qrels,
    metrics: str | Iterable[str] = ("ndcg@10",),
    tie_policy: str = "docid-desc",
    *,
    include_missing: bool = False,
    maxp: bool = False,
    chunk_rows: int = 1_000_000,
    threads: int | None = None,
    select: "formats.Selection | None" = None,
) -> "pd.DataFrame":
    """Tie-aware per-query metrics: one row per (query, metric) with ``oblivious`` (under
    ``tie_policy``), ``expected`` (over all orderings of tied documents), ``min``, ``max``,
    ``n_candidates`` and ``tied_at_cutoff`` (a tie group holds both rank k and rank k + 1).

    ``run``/``qrels`` are paths, DataFrames, Arrow tables or pytrec_eval-style dicts (docs/CONTRACTS.md). A
    qrels file or table whose ``benchmark`` / ``task`` / ``setting`` columns hold several evaluations is split by
    them (after ``select``, e.g. ``formats.Selection(task="ARCChallenge", setting="mcr")``): a run that names
    them too is evaluated part by part (those columns lead the result), any other is refused, never judged by
    pooled labels (:mod:`evalcore.formats.partitions`).
    Chunks of whole queries are read in order and evaluated by ``threads`` workers (default 1: on two
    cores the parquet reader already uses both); at most two chunks per worker are in memory at once.
    """
    table = evaluate_table(run, qrels, metrics, tie_policy, include_missing=include_missing, maxp=maxp,
                           chunk_rows=chunk_rows, threads=threads, select=select)
    return table.to_pandas().astype({"qid": str, "metric": str})


SUMMARY_COLUMNS = ["metric", "n_queries", "oblivious", "expected", "min", "max", "range", "bias", "tied_share"]


def summary_rows(per_query: pa.Table) -> list[dict]:
    """:func:`summarize` on an Arrow table, as a list of dicts (no pandas); a result split by partition columns
    (``task``...) gets one row per part and metric, those columns first."""
    rows = []
    by = [c for c in formats.PARTITION_COLUMNS if c in per_query.column_names]
    keys = pc.binary_join_element_wise(*[per_query[c] for c in by], per_query["metric"], "\x1f") if by \
        else per_query["metric"]
    encoded = pc.dictionary_encode(keys).combine_chunks()  # parts and metrics in first-seen order
    codes = arrow_np.to_numpy(encoded.indices)
    for code, key in enumerate(encoded.dictionary.to_pylist()):
        mask = codes == code
        *part, metric = key.split("\x1f")
        means = {k: float(arrow_np.to_numpy(per_query[k])[mask].mean()) for k in ("oblivious", "expected", "min", "max")}
        rows.append({**dict(zip(by, part)), "metric": metric, "n_queries": int(mask.sum()), **means,
                     "range": means["max"] - means["min"], "bias": means["oblivious"] - means["expected"],
                     "tied_share": float(arrow_np.to_numpy(per_query["tied_at_cutoff"])[mask].mean())})
    return rows


def summarize(per_query: "pd.DataFrame") -> "pd.DataFrame":
    """Per metric: query count, mean oblivious / expected / min / max, range = max - min,
    bias = oblivious - expected, and the share of queries with a tie straddling the cutoff; a result split by
    partition columns (``task``...) is summarised per part and metric, never over the parts together."""
    import pandas as pd

    by = [c for c in formats.PARTITION_COLUMNS if c in per_query.columns]
    columns = [*by, "metric", "n_queries", "oblivious", "expected", "min", "max", "range", "bias", "tied_share"]
    if per_query.empty:
        return pd.DataFrame(columns=columns)
    grouped = per_query.groupby([*by, "metric"], sort=False)
    summary = grouped.agg(
        n_queries=("qid", "size"), oblivious=("oblivious", "mean"), expected=("expected", "mean"),
        min=("min", "mean"), max=("max", "mean"), tied_share=("tied_at_cutoff", "mean"),
    ).reset_index()
    summary["range"] = summary["max"] - summary["min"]
    summary["bias"] = summary["oblivious"] - summary["expected"]
    return summary[columns]
