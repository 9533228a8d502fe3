"""``evalcore derive``: make the derived files of a data folder match their sources (:mod:`evalcore.store.derived`
holds what a derived file is: its table, footer record, reading and writing).

It finds the per-query files as the store does (:func:`evalcore.store.catalogue.walk_parquet`,
:func:`~evalcore.store.catalogue.classify`), so it sits above the catalogue, which itself reads derived files.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from evalcore.errors import one_line
from evalcore.store import catalogue
from evalcore.store.derived import (FOLDER, SUMS_SUFFIX, FileStat, SourceVersion, footer, scan_sums, source_version,
                                    sums_path, write_sums)


@dataclass
class DeriveReport:
    """What :func:`derive` did: sums files written, found up to date, removed (their source is gone), and
    per-query files that could not be read (no sums written: the store skips them too)."""

    written: list[Path]
    fresh: list[Path]
    removed: list[Path]
    unreadable: list[tuple[Path, str]]


def derive(folder: Path, only: list[Path] | None = None, check: bool = False) -> DeriveReport:
    """Make the derived files under ``folder`` match their sources: a sums file for every ``query_metrics``
    file whose sums file is missing or stale, and none whose source is gone. ``only``: just these per-query
    files (what a writer has just written). ``check``: report, write and remove nothing.

    A file that changes while it is summed (another writer replaced it) is summed again, so the sha256 in a
    sums file is always that of the bytes its sums come from."""
    import duckdb

    folder = Path(folder)
    files = sorted(Path(p) for p in only) if only is not None else catalogue.walk_parquet(folder, runs=False)[0]
    report = DeriveReport([], [], [], [])
    sources = []
    for path in files:
        kind, reason, _ = catalogue.classify(path)
        if kind == catalogue.QUERY_METRICS:
            sources.append(path)
        elif kind is None and reason.startswith("unreadable"):  # it may have held per-query rows: say so
            report.unreadable.append((path, reason))
    from evalcore.progress import iterate

    stale: list[tuple[Path, SourceVersion, FileStat]] = []
    for source in iterate(sources, "derive", unit="file"):  # sha256 of each file; a bar only for the CLI
        try:
            version, stat = source_version(source)
        except OSError as exc:
            report.unreadable.append((source, f"unreadable: {exc.strerror or exc}"))
            continue
        target = sums_path(source)
        try:
            info = footer(target) if target.is_file() else None
        except Exception:  # a damaged sums file: written again
            info = None
        if info is not None and info.matches(version) and info.source == source.name:
            report.fresh.append(target)
        else:
            stale.append((source, version, stat))
    if only is None:  # sums files whose source is gone
        for root, _, names in os.walk(folder):
            if Path(root).name != FOLDER:
                continue
            for name in names:
                if name.endswith(SUMS_SUFFIX) and not (Path(root).parent / (name[: -len(SUMS_SUFFIX)] + ".parquet")
                                                       ).exists():
                    report.removed.append(Path(root) / name)
    if check:
        report.written = [sums_path(source) for source, _, _ in stale]
        return report
    for path in report.removed:
        path.unlink(missing_ok=True)
    conn = duckdb.connect(":memory:")
    conn.execute("SET enable_progress_bar = false")
    for _ in range(3):
        if not stale:
            break
        scanned = scan_sums(conn, [source for source, _, _ in stale])
        again = []
        for source, version, stat in stale:
            result = scanned[source]
            try:
                changed = FileStat.of(source) != stat
            except OSError:
                changed = True
            if changed:  # replaced while it was summed: its new bytes are summed again
                try:
                    version, stat = source_version(source)
                    again.append((source, version, stat))
                except OSError as exc:
                    report.unreadable.append((source, f"unreadable: {exc.strerror or exc}"))
                continue
            if isinstance(result, Exception):
                report.unreadable.append((source, f"unreadable query_metrics data: {one_line(result)}"))
                continue
            report.written.append(write_sums(source, result, version))
        stale = again
    for source, _, _ in stale:
        report.unreadable.append((source, "kept changing while it was summed"))
    return report
