"""What ``import-mteb`` and ``import-r2med`` share: writing an import's parquet files into ``--out`` without
harming anything else (see :mod:`evalcore.outputs`), and refusing to replace an import with an empty one."""
from __future__ import annotations

import argparse
from pathlib import Path


def add_common_arguments(parser: argparse.ArgumentParser, path_help: str, default_source: str) -> None:
    parser.add_argument("path", help=path_help)
    parser.add_argument("--out", default="data/published", help="output folder (default data/published)")
    parser.add_argument("--source", default=None,
                        help=f"source label stored with every row (default {default_source})")
    parser.add_argument("--allow-empty", action="store_true",
                        help="write the import even when no result was found (it replaces an existing import "
                             "in --out with empty files)")


def warner(command: str):
    """The importers' ``warn``: one ``evalcore COMMAND: warning: ...`` line on stderr per value left out."""
    import sys

    from evalcore.errors import one_line

    def warn(message: str) -> None:
        print(f"evalcore {command}: warning: {one_line(message)}", file=sys.stderr)

    return warn


def read_and_write(args: argparse.Namespace, command: str, read, default_source: str, names: tuple[str, str],
                   what: str):
    """An import command's work: ``read(args.path, source=..., warn=...)`` -> (task_scores, systems), written
    as ``names`` into ``--out`` (:func:`write_import`); returns (task_scores, systems, the output folder)."""
    task_scores, systems = read(args.path, source=args.source or default_source, warn=warner(command))
    out = write_import(dict(zip(names, (task_scores, systems))), args, len(task_scores), what)
    return task_scores, systems, out


def write_import(frames: dict[str, "object"], args: argparse.Namespace, n_rows: int, what: str) -> Path:
    """Write ``{file name: frame}`` into ``args.out`` as one import (all files or none). Refused with one line
    when the import found no rows (unless ``--allow-empty``), when ``--out`` is a file, or when a file it would
    replace is a special file; a symlinked file is written through (the link stays)."""
    from evalcore.errors import InputError, OutputError
    from evalcore.importers import write_compact_parquet_files
    from evalcore.outputs import check_output_folder, write_target, writing

    out = Path(args.out)
    if n_rows == 0 and not args.allow_empty:
        kept = [name for name in frames if (out / name).exists()]
        raise InputError(f"found no {what}: nothing written"
                         + (f" (the import in {out} is kept)" if kept else "")
                         + "; pass --allow-empty to write an empty import anyway", args.path)
    check_output_folder(out, "import")
    with writing(out, "import"):
        targets = {}
        for name, frame in frames.items():
            target = write_target(out / name)
            if target.special:
                raise OutputError("cannot write import: expected a regular file or none, found a special file",
                                  target.path)
            targets[target.file] = frame
        write_compact_parquet_files(targets)
    from evalcore.store import derivation

    derivation.derive(out)  # the derive step: sums of any per-query file in --out, none left for a file gone
    return out
