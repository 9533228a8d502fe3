"""Nested JSON: a run ``{qid: {docid: score}}`` or qrels ``{qid: {docid: grade}}`` as one JSON document, plain
or gzipped — the dicts of pytrec_eval, ranx (``Run.save`` / ``Qrels.save`` to ``.json``, ``to_dict``) and BEIR's
``results``, and MTEB's saved retrieval predictions as mteb's ``AbsTask._save_task_predictions`` writes them
(``{TASK}_predictions.json``: ``{"mteb_model_meta": {...}, SUBSET: {SPLIT: {qid: {docid: score}}}}``; a file
with one subset and split is read as it is, one with several is refused naming them).

Streamed: the text comes a block at a time through :func:`evalcore.formats.limits.input_blocks` (size limit,
FIFO wait) and is parsed one query at a time by json's C scanner; ids and values go into Arrow arrays a batch
at a time, so memory holds the result, a block and a batch — never the whole text next to a dict of the whole
file. Every problem is one :class:`~evalcore.errors.InputError` naming the file, the line where the query's key
stands and, inside a query, the key path: ``run.json:3: q17 → d3: score "abc" is not a number``.

The line length limit (``TIEBREAK_MAX_LINE_BYTES``) bounds one query's object (a compact file is one line), the
JSON nesting limit and the per-query row limit apply to each query; a qid or a docid twice in its object is an
error (json would keep the last silently).
"""
from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evalcore import arrow_np
from evalcore.errors import InputError
from evalcore.formats.columns import QRELS_SCHEMA, RUN_SCHEMA
from evalcore.formats.detection import UTF8_BOM, WHITESPACE as _WHITESPACE
from evalcore.formats.limits import LINE_BYTES, QUERY_ROWS, input_blocks, json_too_deep
from evalcore.formats.lines import LineNumbers
from evalcore.formats.values import grade_problem, json_text, score_problem

MTEB_META_KEY = "mteb_model_meta"
_BATCH_ROWS = 1 << 16  # rows a batch: Python objects held at once
_TRUNCATION_MARGIN = 64  # a JSON error this close to the end of what was read may be a cut token


def short_key(key: str, limit: int = 40) -> str:
    """An id as a key path shows it: as written, cut to ``limit`` characters."""
    return key if len(key) <= limit else key[: limit - 3] + "..."


class _Pairs(list):
    """A JSON object as its (key, value) pairs in order, repeated keys kept (``object_pairs_hook``)."""


def _shown(value: object) -> str:
    """A parsed value as JSON text for a message (an object shown as the object it was written as)."""
    def plain(item):
        if isinstance(item, _Pairs):
            return {key: plain(inner) for key, inner in item}
        if isinstance(item, list):
            return [plain(inner) for inner in item]
        return item

    return json_text(plain(value))


class _Scanner:
    """JSON text read a block at a time: whitespace, punctuation and whole values (json's C scanner)."""

    def __init__(self, path: Path):
        self.path = path
        self._blocks = input_blocks(path, lines=False, line_length=False)
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._json = json.JSONDecoder(object_pairs_hook=_Pairs)
        self.text = ""
        self.pos = 0
        self.eof = False
        self._mark, self._mark_line = 0, 1  # a position in text and its line (lines are counted once)
        self._started = False

    # -- reading --------------------------------------------------------------------------------------
    def _more(self) -> bool:
        """Append the next block (dropping what was consumed); False at the end of the input."""
        if self.eof:
            return False
        block = next(self._blocks, None)
        if self.pos:
            self.line_of(self.pos)
            self.text, self._mark, self.pos = self.text[self.pos:], self._mark - self.pos, 0
        if block is None:
            self.eof = True
            tail = self._decode(b"", final=True)
            self.text += tail
            return bool(tail)
        if not self._started:
            block, self._started = block.removeprefix(UTF8_BOM), True
        self.text += self._decode(block)
        return True

    def _decode(self, block: bytes, final: bool = False) -> str:
        try:
            return self._decoder.decode(block, final)
        except UnicodeDecodeError as exc:
            line = self.line_of(len(self.text)) + block.count(b"\n", 0, max(exc.start, 0))
            byte = block[exc.start] if 0 <= exc.start < len(block) else None
            found = f"undecodable byte 0x{byte:02x}" if byte is not None else "a truncated UTF-8 sequence"
            raise InputError(f"expected UTF-8 text, found {found} (binary or wrongly encoded file)",
                             self.path, line) from None

    def line_of(self, position: int) -> int:
        """The line of ``text[position]``, counting only the newlines since the last position asked about."""
        if position >= self._mark:
            self._mark_line += self.text.count("\n", self._mark, position)
            self._mark = position
            return self._mark_line
        return self._mark_line - self.text.count("\n", position, self._mark)

    def peek(self) -> str:
        """The next character that is not JSON whitespace ("" at the end of the input)."""
        while True:
            self.pos = _WHITESPACE.match(self.text, self.pos).end()
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self._more():
                return ""

    def expect(self, char: str, what: str) -> None:
        found = self.peek()
        if found != char:
            shown = "the end of the file" if not found else repr(found)
            raise InputError(f"expected {what}, found {shown}", self.path, self.line_of(self.pos))
        self.pos += 1

    def value(self, where: str = "") -> object:
        """The JSON value at the current position (objects as :class:`_Pairs`), reading on while it is cut by
        the end of what was read; past the line length limit, or on malformed JSON, one InputError."""
        self.peek()
        limit = LINE_BYTES.value()
        while True:
            try:
                value, end = self._json.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as exc:
                maybe_cut = exc.pos >= len(self.text) - _TRUNCATION_MARGIN or exc.msg.startswith("Unterminated string")
                if not self.eof and maybe_cut:
                    self._read_on(limit, where)
                    continue
                raise InputError(f"{where}expected JSON ({exc.msg})", self.path, self.line_of(exc.pos)) from None
            except RecursionError:
                raise json_too_deep(self.path, self.line_of(self.pos), where) from None
            if end >= len(self.text) and not self.eof and not isinstance(value, (_Pairs, list, str)):
                self._read_on(limit, where)  # a number at the end of a block may go on
                continue
            if limit is not None and end - self.pos > limit:
                raise self._too_long(limit, where)
            self.pos = end
            return value

    def _read_on(self, limit: int | None, where: str) -> None:
        """Read until what is held past the current position doubles (fewer re-parses of a large value); a value
        that goes on past the line length limit is refused."""
        held = len(self.text) - self.pos
        if limit is not None and held > limit:
            raise self._too_long(limit, where)
        while len(self.text) - self.pos < 2 * max(held, 1):
            if not self._more():
                break

    def _too_long(self, limit: int, where: str) -> InputError:
        return InputError(f"{where}more than {limit:,} bytes in one JSON value ({LINE_BYTES.name}, which bounds one "
                          f"query's object here; raise {LINE_BYTES.variable} to read it, 0 = no limit)",
                          self.path, self.line_of(self.pos))

    def key(self, what: str) -> str:
        if self.peek() != '"':
            found = self.peek()
            raise InputError(f"expected {what} (a JSON string), found {repr(found) if found else 'the end of the file'}",
                             self.path, self.line_of(self.pos))
        return self.value()

    def members(self, what: str, where: str = "") -> Iterator[tuple[str, int]]:
        """The keys (with their line) of the object whose ``{`` was just consumed; the caller consumes each
        value before asking for the next key."""
        if self.peek() == "}":
            self.pos += 1
            return
        while True:
            self.peek()
            line = self.line_of(self.pos)
            key = self.key(what)
            self.expect(":", f"':' after {where}{short_key(key)}")
            yield key, line
            found = self.peek()
            if found == ",":
                self.pos += 1
                continue
            if found == "}":
                self.pos += 1
                return
            shown = "the end of the file" if not found else repr(found)
            raise InputError(f"{where}{short_key(key)}: expected ',' or '}}' after its value, found {shown}",
                             self.path, self.line_of(self.pos))

    def end(self) -> None:
        found = self.peek()
        if found:
            raise InputError(f"expected the end of the JSON document, found {found!r} (one JSON document: "
                             "{qid: {docid: value}}; one object per line is JSON lines, .jsonl)",
                             self.path, self.line_of(self.pos))


class _Columns:
    """Rows gathered a batch at a time into Arrow arrays (qid, docid, value) with the line of each row. Nothing
    lives in Python objects past its batch (a dict of every qid seen pinned the allocator's pages between the
    batches' short-lived strings: 2M rows cost more memory than ``json.load``); repeated qids are found once, at
    the end, in Arrow."""

    def __init__(self, path: Path, kind: str):
        self.path, self.kind = path, kind
        self.qids: list[str] = []
        self.counts: list[int] = []
        self.lines: list[int] = []
        self.docids: list[str] = []
        self.values: list[np.ndarray] = []
        self.rows = 0
        self.parts: list[tuple[pa.Array, pa.Array, pa.Array, np.ndarray]] = []
        self.queries: list[tuple[pa.Array, np.ndarray]] = []  # every query's key and line, a batch a part

    def query(self, qid: str, line: int, pairs: object, where: str) -> None:
        """One query's object (``pairs``) checked and added."""
        if not isinstance(pairs, _Pairs):
            raise InputError(f"{where}{short_key(qid)}: expected an object {{docid: {self._value_name()}}}, found "
                             f"{_shown(pairs)}", self.path, line)
        limit = QUERY_ROWS.value()
        if limit is not None and len(pairs) > limit:
            raise InputError(f"{where}{short_key(qid)}: more than {limit:,} {QUERY_ROWS.unit} ({QUERY_ROWS.name}; "
                             f"raise {QUERY_ROWS.variable} to read it, 0 = no limit)", self.path, line)
        self.qids.append(qid)
        self.lines.append(line)
        self.counts.append(len(pairs))
        if not pairs:
            return
        docids, values = zip(*pairs)
        if len(set(docids)) != len(docids):
            seen: set[str] = set()
            repeated = next(d for d in docids if d in seen or seen.add(d))
            raise InputError(f"{where}{short_key(qid)} → {short_key(repeated)}: document {short_key(repeated)} appears "
                             f"twice in query {short_key(qid)}", self.path, line)
        self.values.append(self._numbers(values, qid, docids, line, where))
        self.docids.extend(docids)
        self.rows += len(docids)
        if self.rows >= _BATCH_ROWS:
            self._flush()

    def _value_name(self) -> str:
        return "score" if self.kind == "run" else "grade"

    def _numbers(self, values: tuple, qid: str, docids: tuple, line: int, where: str) -> np.ndarray:
        """The values of one query as float64 scores or int64 grades; the first bad one is an error naming its
        key path."""
        kinds = set(map(type, values))
        try:
            if self.kind == "run" and kinds <= {float, int}:
                numbers = np.array(values, dtype=np.float64)
                if np.isfinite(numbers).all():
                    return numbers
            elif self.kind == "qrels" and kinds <= {int}:
                numbers = np.array(values, dtype=np.int64)
                if (numbers >= 0).all():
                    return numbers
        except OverflowError:
            pass
        problem_of = score_problem if self.kind == "run" else grade_problem
        for docid, value in zip(docids, values):
            problem = problem_of(value)
            if problem is not None:
                if isinstance(value, (_Pairs, list)):
                    problem = f"{_shown(value)} is not a number"
                raise InputError(f"{where}{short_key(qid)} → {short_key(docid)}: {self._value_name()} {problem}",
                                 self.path, line)
        return np.array([int(v) for v in values], dtype=np.int64)  # grades written as 2.0

    def _flush(self) -> None:
        if not self.qids:
            return
        counts = np.asarray(self.counts, dtype=np.int64)
        keys = pa.array(self.qids, pa.string())
        lines = np.asarray(self.lines, dtype=np.int64)
        self.queries.append((keys, lines))
        if self.rows:
            positions = np.repeat(np.arange(len(counts)), counts)
            self.parts.append((keys.take(arrow_np.from_numpy(positions)), pa.array(self.docids, pa.string()),
                               arrow_np.from_numpy(np.concatenate(self.values)), np.repeat(lines, counts)))
        self.qids, self.counts, self.lines, self.docids, self.values, self.rows = [], [], [], [], [], 0

    def table(self, where: str = "") -> tuple[pa.Table, LineNumbers]:
        self._flush()
        self._check_repeated_queries(where)
        schema = RUN_SCHEMA if self.kind == "run" else QRELS_SCHEMA
        if not self.parts:
            what = "query with a document" if self.queries else "query"
            raise InputError(f"empty file: expected at least one {what} ({{qid: {{docid: {self._value_name()}}}}})",
                             self.path)
        columns = [pa.chunked_array([part[i] for part in self.parts]) for i in range(3)]
        lines = np.concatenate([part[3] for part in self.parts])
        return pa.Table.from_arrays(columns, schema=schema), LineNumbers(0, lines)

    def _check_repeated_queries(self, where: str) -> None:
        """A qid twice in the document (json would keep the last one silently): the second is named."""
        if not self.queries:
            return
        keys = pa.chunked_array([k for k, _ in self.queries])
        if pc.count_distinct(keys).as_py() == len(keys):
            return
        codes = arrow_np.to_numpy(pc.dictionary_encode(keys).combine_chunks().indices).astype(np.int64)
        _, first = np.unique(codes, return_index=True)
        repeated = int(np.flatnonzero(first[codes] != np.arange(len(codes)))[0])
        lines = np.concatenate([lines for _, lines in self.queries])
        qid = short_key(keys[repeated].as_py())
        raise InputError(f"{where}{qid}: query {qid} appears twice (first on line {lines[first[codes[repeated]]]})",
                         self.path, int(lines[repeated]))


def read_nested(path: Path, kind: str) -> tuple[pa.Table, LineNumbers]:
    """A nested JSON run (``kind="run"``: float64 scores) or qrels (``"qrels"``: int64 grades >= 0) as a table of
    :data:`RUN_SCHEMA` / :data:`QRELS_SCHEMA` in the file's order, with the line of each row's query key."""
    scanner = _Scanner(path)
    columns = _Columns(path, kind)
    value_name = "score" if kind == "run" else "grade"
    scanner.expect("{", f"a JSON object {{qid: {{docid: {value_name}}}}}")
    mteb_splits: list[str] = []
    run_where = ""  # the key path of the run inside mteb's layout
    first = True
    for key, line in scanner.members("a query id"):
        if first and key == MTEB_META_KEY:  # mteb's predictions: {"mteb_model_meta": …, SUBSET: {SPLIT: run}}
            scanner.value(f"{MTEB_META_KEY}: ")
            mteb_splits.append("")
            first = False
            continue
        first = False
        if mteb_splits:
            scanner.expect("{", f"{short_key(key)}: an object {{split: {{qid: {{docid: score}}}}}} (mteb's layout)")
            for split, _ in scanner.members("a split name", f"{short_key(key)} → "):
                mteb_splits.append(f"{key}/{split}")
                if len(mteb_splits) > 2:
                    raise InputError(f"holds mteb predictions of more than one subset and split ({mteb_splits[1]}, "
                                     f"{mteb_splits[2]}): expected one run; extract one, e.g. jq "
                                     f"'.\"{mteb_splits[1].split('/')[0]}\".\"{mteb_splits[1].split('/')[1]}\"' "
                                     f"FILE > run.json", path)
                where = run_where = f"{short_key(key)} → {short_key(split)} → "
                scanner.expect("{", f"{where}an object {{qid: {{docid: score}}}}")
                for qid, query_line in scanner.members("a query id", where):
                    columns.query(qid, query_line, scanner.value(f"{where}{short_key(qid)}: "), where)
            continue
        columns.query(key, line, scanner.value(f"{short_key(key)}: "), "")
    scanner.end()
    return columns.table(run_where)


# -- writing ---------------------------------------------------------------------------------------------
def nested_lines(groups: Iterator[tuple[str, dict]]) -> Iterator[str]:
    """``{"q1": {...},\\n"q2": {...}}``: one query a line, keys and values as json writes them (a float as
    the shortest text that reads back to it)."""
    first = True
    for key, inner in groups:
        yield ("{" if first else ",\n") + json.dumps(key, ensure_ascii=False) + ": " + json.dumps(
            inner, ensure_ascii=False, allow_nan=False)
        first = False
    yield "{}\n" if first else "}\n"


def run_groups(run: pa.Table) -> Iterator[tuple[str, dict]]:
    """(qid, {docid: value}) of a run or qrels table (its third column the values), queries in first-seen order,
    documents in input order."""
    codes = arrow_np.to_numpy(pc.dictionary_encode(run["qid"]).combine_chunks().indices).astype(np.int64)
    order = np.argsort(codes, kind="stable")  # dictionary codes are in first-seen order
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]]) if len(codes) else codes
    ends = np.r_[starts[1:], len(codes)].astype(np.int64)
    taken = arrow_np.from_numpy(order)
    qids = run["qid"].combine_chunks().take(arrow_np.from_numpy(order[starts])).to_pylist()
    docids = run["docid"].combine_chunks().take(taken).to_pylist()
    values = arrow_np.to_numpy(run.column(2).combine_chunks().take(taken)).tolist()
    for qid, start, end in zip(qids, starts.tolist(), ends.tolist()):
        yield qid, dict(zip(docids[start:end], values[start:end]))


def write_nested(run: pa.Table, path: Path, compressed: bool = False) -> None:
    """A run (or qrels) as one nested JSON document ``{qid: {docid: value}}`` (gzip-compressed if asked)."""
    import gzip

    with open(path, "wb") as raw, (gzip.GzipFile("", "wb", 6, raw, mtime=0) if compressed else raw) as handle:
        for piece in nested_lines(run_groups(run)):
            handle.write(piece.encode("utf-8"))


_PER_QUERY_FIELDS = ("oblivious", "expected", "min", "max", "n_candidates", "tied_at_cutoff", "tie_policy")


def write_per_query_json(per_query: pa.Table, path: Path, compressed: bool = False) -> None:
    """Per-query values as nested JSON, pytrec_eval's ``evaluate()`` shape with the tie-aware values:
    ``{qid: {metric: {"oblivious", "expected", "min", "max", "n_candidates", "tied_at_cutoff", "tie_policy"}}}``;
    a result split by partition columns nests them first (``{task: {qid: …}}``)."""
    import gzip

    from evalcore.formats.partitions import PARTITION_COLUMNS

    levels = [c for c in PARTITION_COLUMNS if c in per_query.column_names] + ["qid"]
    fields = [f for f in _PER_QUERY_FIELDS if f in per_query.column_names]
    tree: dict = {}
    columns = {name: per_query[name].to_pylist() for name in (*levels, "metric", *fields)}
    for row in range(per_query.num_rows):
        node = tree
        for level in levels:
            node = node.setdefault(columns[level][row], {})
        node[columns["metric"][row]] = {field: columns[field][row] for field in fields}
    with open(path, "wb") as raw, (gzip.GzipFile("", "wb", 6, raw, mtime=0) if compressed else raw) as handle:
        for piece in nested_lines(iter(tree.items())):
            handle.write(piece.encode("utf-8"))
