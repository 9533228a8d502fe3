"""Writers: atomic paths (temp file + rename, on :mod:`evalcore.outputs`' rules), parquet, and runs in every
format.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa

from evalcore import outputs
from evalcore.formats.columns import RUN_SCHEMA
from evalcore.formats.delimited import write_delimited
from evalcore.formats.detection import EXTENSION_FORMATS, FORMATS, FORMAT_ALIASES, strip_gz
from evalcore.formats.jsonl import write_jsonl
from evalcore.formats.lines import LineNumbers
from evalcore.formats.nested import write_nested
from evalcore.formats.text import write_lines
from evalcore.formats.trec import trec_run_lines
from evalcore.formats.validation import as_arrow, canonical_run


@contextmanager
def atomic_path(path: str | Path, what: str = "file") -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path`` atomically.

    On any exception (KeyboardInterrupt included) the temporary file is removed and ``path`` is left
    untouched. The temporary name ends in ``.tmp`` so globs like ``*.parquet`` never see it. A symlink is
    written through (its target is replaced, the link stays); a special file (a FIFO, ``/dev/stdout``) is
    written into from a temporary file in TMPDIR, never replaced; an I/O failure (full disk, unwritable
    folder...) is an :class:`~evalcore.errors.OutputError` naming ``path`` (see :mod:`evalcore.outputs`).
    """
    with atomic_paths([path], what) as (temporary,):
        yield temporary


@contextmanager
def atomic_paths(paths: list[str | Path], what: str | list[str] = "file") -> Iterator[list[Path]]:
    """:func:`atomic_path` for files that belong together (an importer's task_scores and systems; an ingested
    file and its derived sums, in that order): yields one temporary per path; on success every temporary gets
    its mode and is synced to disk first, and only then are they renamed into place, in order, one right after
    the other, so that a kill can split the set only between two ``rename`` calls. (Syncing each file just
    before its own rename left a disk flush between the renames: SIGKILL tests caught an import with its new
    systems file beside its old task_scores, and an ingested file without its sums.) On any
    exception every temporary is removed and no path is touched; an I/O failure names the path it concerns
    and its ``what`` (one for all paths, or one per path; the last path's for a failure while the caller
    writes)."""
    whats = [what] * len(paths) if isinstance(what, str) else list(what)
    staged: list[tuple[Path, str, outputs.Target, Path]] = []  # (path, what, where it lands, temporary)
    try:
        for path, name in zip(map(Path, paths), whats, strict=True):
            with outputs.writing(path, name):
                target = outputs.write_target(path)
                staged.append((path, name, target, outputs.staged_file(target)))
        with outputs.writing(staged[-1][0], staged[-1][1]):
            yield [temporary for *_, temporary in staged]
        umask = os.umask(0)
        os.umask(umask)
        for path, name, target, temporary in staged:
            if not target.special:
                with outputs.writing(path, name):
                    os.chmod(temporary, 0o666 & ~umask)
                    with open(temporary, "rb") as written:
                        os.fsync(written.fileno())
        for path, name, target, temporary in staged:
            with outputs.writing(path, name):
                outputs.put_in_place(temporary, target)
    except BaseException:
        for *_, temporary in staged:
            temporary.unlink(missing_ok=True)
        raise


def write_parquet_atomic(table_or_df, path: str | Path, what: str = "file") -> None:
    """Write a pyarrow Table or pandas DataFrame to parquet via a temp file and rename (see
    :func:`atomic_path`; ``what`` names the output in an error: ``cannot write WHAT: REASON``)."""
    import pyarrow.parquet as pq

    table = as_arrow(table_or_df)
    with atomic_path(path, what) as temporary:
        pq.write_table(table, temporary)


def _run_for_writing(table_or_df, path: Path) -> pa.Table:
    table = as_arrow(table_or_df)
    missing = [name for name in RUN_SCHEMA.names if name not in table.column_names]
    if missing:
        raise ValueError(f"write_run needs columns qid, docid, score; missing {', '.join(missing)}")
    numbers = LineNumbers(1)
    return canonical_run(table["qid"], table["docid"], table["score"], path, numbers)


def write_run(table, path: str | Path, *, fmt: str | None = None) -> None:
    """Write a run (``qid, docid, score`` [+ ``tag``]) atomically; format from ``fmt`` or extension.

    TREC text gets ``qid Q0 docid rank score tag`` lines in input order, rank by descending score; ``json``
    (``.json``) one nested document ``{qid: {docid: score}}`` (queries in first-seen order), which pytrec_eval,
    ranx and BEIR read as it is.
    Scores are written with the shortest text that reads back to the same float64. A ``.gz`` name
    (``run.trec.gz``, ``run.jsonl.gz``) is gzip-compressed text, read back by :func:`read_run`; parquet
    compresses inside, so ``.parquet.gz`` is refused.
    """
    path = Path(path)
    compressed = path.suffix.lower() == ".gz"
    fmt = fmt.lower() if fmt else EXTENSION_FORMATS.get(strip_gz(path).suffix.lower(), "trec")
    fmt = FORMAT_ALIASES.get(fmt, fmt)
    if fmt not in FORMATS:
        raise ValueError(f"unknown run format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if compressed and fmt == "parquet":
        raise ValueError("parquet compresses inside its file and no reader opens a gzipped one: name it "
                         ".parquet, not .parquet.gz")
    source = as_arrow(table)
    run = _run_for_writing(source, path)
    if fmt == "parquet":
        write_parquet_atomic(run, path, "run")
        return
    with atomic_path(path, "run") as temporary:
        if fmt == "trec":
            tags = source["tag"].combine_chunks().cast(pa.string()) if "tag" in source.column_names else None
            write_lines(trec_run_lines(run, tags, path), temporary, compressed)
        elif fmt in ("csv", "tsv"):
            write_delimited(run, temporary, "," if fmt == "csv" else "\t", compressed)
        elif fmt == "json":
            write_nested(run, temporary, compressed)
        else:
            write_jsonl(run, temporary, compressed)
