"""Command line entry point: ``python -m evalcore <command> ...`` or ``evalcore <command> ...``.

Each subcommand lives in ``evalcore/commands/<name>.py`` and exposes ``add_arguments(parser)`` and
``run(args) -> int``. Command modules import their heavy dependencies inside ``run`` so that
``evalcore --help`` starts fast. Bad input raises :class:`evalcore.errors.InputError`, reported here as
one line on stderr with exit code 2 (never a traceback).
"""
from __future__ import annotations

import argparse
import importlib
import sys

# command name -> (module under evalcore.commands, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "evaluate": ("evaluate", "tie-aware metrics of a run against qrels"),
    "simulate": ("simulate", "rewrite a run's scores as a low-precision pipeline would have produced them"),
    "ties": ("ties", "tie statistics of a run (tie groups, ties at the cutoff)"),
    "ingest": ("ingest", "evaluate a run and append its query_metrics to the data directory"),
    "derive": ("derive", "write the derived sums of a data directory's per-query files (what the store reads)"),
    "import-mteb": ("import_mteb", "import an MTEB results tree as task_scores + systems parquet"),
    "import-r2med": ("import_r2med", "import the R2MED paper result JSONs as task_scores parquet"),
    "leaderboard": ("leaderboard", "print a benchmark leaderboard from the data directory"),
    "tasks": ("tasks", "export the shipped tasks' queries and candidates; evaluate your run against them"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evalcore",
        description="Tie-aware retrieval evaluation: oblivious / expected / min / max for every metric.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, (module_name, help_text) in COMMANDS.items():
        try:
            module = importlib.import_module(f"evalcore.commands.{module_name}")
        except ModuleNotFoundError as exc:  # command not built yet in this checkout
            if exc.name != f"evalcore.commands.{module_name}":
                raise
            continue
        command_parser = sub.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(command_parser)
        command_parser.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    from evalcore.errors import InputError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except InputError as exc:
        print(f"evalcore {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. piped into `head`
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
