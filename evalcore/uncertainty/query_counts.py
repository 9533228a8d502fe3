"""How many queries each declared task's score is a mean over: ``<data>/query_counts.json``.

A published row has one score per task and no per-query values; the question "on these tasks, is A better than
B?" can still be bounded for it, because a task's score is a mean over a known number of queries and a metric
in [0, 1] with mean μ has variance at most μ(1 − μ) (Bhatia–Davis). The number of queries is a fact of the
task, read from a cited source, never from the results: the file names the source of every count (the
``mteb`` package's descriptive statistics and its version, a benchmark's paper or repository, a dataset file).

Format (``"format": 1``)::

    {"format": 1,
     "sources": {"mteb-2.26.24": "what the source is and where the count sits in it", …},
     "benchmarks": {"rar-b": {"full": {"ARCChallenge": {"queries": 1172, "source": "mteb-2.26.24"}, …}, …}, …}}

Each task entry has ``queries`` (an integer ≥ 1) and ``source`` (a key of ``sources``); other keys of an entry
(``file``, ``mteb_num_queries``) and other top-level keys (``about``) are documentation. Like
``benchmarks.json`` (:mod:`evalcore.store.manifest`) the file is read from the data folder: a folder without
it has no counts (the queries lens then has nothing to bound a published row with, and says so), and a file
that cannot be read or does not have this shape gives no counts and a one-line ``problem`` naming the file
and what was expected (:func:`load` raises it as :class:`QueryCountsError` instead).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

FILE_NAME = "query_counts.json"
FORMAT = 1


class QueryCountsError(ValueError):
    """A query-counts file that cannot be used; the message is one line naming the file and what was expected."""


@dataclass(frozen=True)
class QueryCounts:
    """What ``query_counts.json`` says: ``counts`` {benchmark: {setting: {task: n}}}, ``sources``
    {benchmark: {setting: {task: source key}}}, ``source_text`` {source key: description}; ``path`` the file
    (None: no file) and ``problem`` why a file that exists was not used (None: used or absent)."""

    counts: dict = field(default_factory=dict)
    sources: dict = field(default_factory=dict)
    source_text: dict = field(default_factory=dict)
    path: str | None = None
    problem: str | None = None

    def count(self, benchmark: str, setting: str, task: str) -> int | None:
        """The number of queries of ``task`` under ``benchmark`` / ``setting``, or None when not known."""
        return self.counts.get(benchmark, {}).get(setting, {}).get(task)

    def counts_for(self, benchmark: str, setting: str, tasks: list[str]) -> list[int | None]:
        """:meth:`count` of each of ``tasks``, in their order."""
        return [self.count(benchmark, setting, task) for task in tasks]

    def source(self, benchmark: str, setting: str, task: str) -> str | None:
        """The description of the source a count was read from (None when the count is not known)."""
        key = self.sources.get(benchmark, {}).get(setting, {}).get(task)
        return None if key is None else self.source_text[key]


def read(data_dir: str | Path) -> QueryCounts:
    """The query counts of ``data_dir`` (empty when the file does not exist; empty with a ``problem`` when it
    cannot be used). Never raises for a bad file."""
    path = Path(data_dir) / FILE_NAME
    if not path.exists():
        return QueryCounts()
    try:
        return load(path)
    except QueryCountsError as exc:
        return QueryCounts(path=str(path), problem=str(exc))


def load(path: str | Path) -> QueryCounts:
    """The query counts in the file ``path``; :class:`QueryCountsError` (one line: the file, what is wrong and
    what was expected) when it cannot be read or does not have the shape of the module docstring."""
    path = Path(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=_no_duplicate_keys)
    except _DuplicateKey as exc:
        raise QueryCountsError(f"{path}: the key {exc.args[0]!r} appears twice in one object") from None
    except json.JSONDecodeError as exc:
        raise QueryCountsError(f"{path}: line {exc.lineno}: not JSON ({exc.msg})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise QueryCountsError(f"{path}: unreadable ({str(exc).splitlines()[0]})") from None
    counts, sources, source_text = _parse(document, path)
    return QueryCounts(counts=counts, sources=sources, source_text=source_text, path=str(path))


class _DuplicateKey(Exception):
    pass


def _no_duplicate_keys(pairs):
    found = {}
    for key, value in pairs:
        if key in found:
            raise _DuplicateKey(key)
        found[key] = value
    return found


def _parse(document, path: Path) -> tuple[dict, dict, dict]:
    def bad(where: str, expected: str):
        raise QueryCountsError(f"{path}: {where}: expected {expected}")

    if not isinstance(document, dict):
        bad("top level", "a JSON object")
    if document.get("format") != FORMAT:
        bad("\"format\"", f"{FORMAT}, got {document.get('format')!r}")
    source_text = document.get("sources")
    if (not isinstance(source_text, dict) or not source_text
            or not all(isinstance(text, str) and text.strip() for text in source_text.values())):
        bad("\"sources\"", "{source key: non-empty description, …}")
    benchmarks = document.get("benchmarks")
    if not isinstance(benchmarks, dict):
        bad("\"benchmarks\"", "{benchmark: {setting: {task: {\"queries\": n, \"source\": key}}}}")
    counts: dict = {}
    sources: dict = {}
    for benchmark, settings in benchmarks.items():
        if not isinstance(settings, dict):
            bad(f"benchmark {benchmark!r}", "{setting: {task: entry}}")
        for setting, tasks in settings.items():
            if not isinstance(tasks, dict) or not tasks:
                bad(f"{benchmark!r} / {setting!r}", "a non-empty {task: entry}")
            for task, entry in tasks.items():
                where = f"{benchmark!r} / {setting!r} / {task!r}"
                if not task.strip() or not isinstance(entry, dict):
                    bad(where, "a task name and {\"queries\": n, \"source\": key}")
                n = entry.get("queries")
                if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                    bad(f"{where} \"queries\"", f"an integer ≥ 1, got {n!r}")
                key = entry.get("source")
                if not isinstance(key, str) or key not in source_text:
                    bad(f"{where} \"source\"", f"one of {', '.join(sorted(source_text))}, got {key!r}")
                counts.setdefault(benchmark, {}).setdefault(setting, {})[task] = n
                sources.setdefault(benchmark, {}).setdefault(setting, {})[task] = key
    return counts, sources, dict(source_text)
