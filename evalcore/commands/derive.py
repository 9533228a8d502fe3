"""``evalcore derive [--data DIR] [--check]``: write the derived data of a data folder — for every per-query
(``query_metrics``) parquet file ``F.parquet``, ``F.sums.parquet`` beside it, keyed by F's sha256 and size and
a format version (see :mod:`evalcore.store.derived`) — so that a store opening the folder reads a few small
files instead of scanning every per-query row. Only missing or stale sums files are written; sums files whose
source is gone are removed. The import commands and the real-runs generator run this step after they write
(``evalcore ingest`` writes its file's sums with it); run it yourself after copying per-query files into a
data folder by hand.

``--check`` writes nothing and exits 1 when a sums file is missing, stale or orphaned (for CI). Either way a
parquet file that cannot be read (truncated, not parquet) is named and the exit code is 1: it may have held
per-query rows the boards now miss.
"""
from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", default=None, help="data directory (default $TIEBREAK_DATA or data)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when a derived file is missing, stale or orphaned (or a "
                             "parquet file is unreadable)")


def run(args: argparse.Namespace) -> int:
    import sys

    from evalcore.errors import InputError
    from evalcore.store import data_dir, derivation

    folder = data_dir(args.data)
    if not folder.is_dir():
        raise InputError("data directory not found (expected a folder of result parquet files)", folder)
    if not args.check:
        from evalcore.outputs import check_output_folder

        check_output_folder(folder, "data folder")
    report = derivation.derive(folder, check=args.check)
    for path, reason in report.unreadable:
        print(f"evalcore derive: warning: {path}: {reason} (no sums written; the store skips it)", file=sys.stderr)
    verb = ("would write", "would remove") if args.check else ("wrote", "removed")
    print(f"derive: {len(report.fresh)} up to date, {verb[0]} {len(report.written)}, {verb[1]} "
          f"{len(report.removed)}, {len(report.unreadable)} unreadable under {folder}")
    for path, _ in report.unreadable:
        print(f"  unreadable: {path}")
    if args.check:
        for path in report.written:
            print(f"  missing or stale: {path}")
        for path in report.removed:
            print(f"  orphaned: {path}")
        return 1 if report.written or report.removed or report.unreadable else 0
    return 1 if report.unreadable else 0

