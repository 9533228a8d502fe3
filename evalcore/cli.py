"""Command line entry point: ``python -m evalcore <command> ...`` or ``evalcore <command> ...``.

Each subcommand lives in ``evalcore/commands/<name>.py`` and exposes ``add_arguments(parser)`` and
``run(args) -> int``. Command modules import their heavy dependencies inside ``run`` so that
``evalcore --help`` starts fast. Bad input raises :class:`evalcore.errors.InputError`, reported here as
one line on stderr with exit code 2 (never a traceback).

Every command in :data:`COMMANDS` is imported when the parser is built. A command module that is missing or
fails to import means a broken installation (a wheel without a subpackage, a syntax error): every invocation
then fails with one line naming the command, the module and the error, and exit code 1; a command is never
silently left out.
"""
from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from types import ModuleType

from evalcore.errors import InputError, one_line

# command name -> (module under evalcore.commands, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "evaluate": ("evaluate", "tie-aware metrics of a run against qrels"),
    "simulate": ("simulate", "rewrite a run's scores as a low-precision pipeline would have produced them"),
    "ties": ("ties", "tie statistics of a run (tie groups, ties at the cutoff)"),
    "ingest": ("ingest", "evaluate a run and append its query_metrics to the data directory"),
    "derive": ("derive", "write the derived sums of a data directory's per-query files (what the store reads)"),
    "import-mteb": ("import_mteb", "import an MTEB results tree as task_scores + systems parquet"),
    "import-r2med": ("import_r2med", "import the R2MED paper result JSONs as task_scores parquet"),
    "import-crumb": ("import_crumb", "evaluate a folder of CRUMB runs by CRUMB's procedure into query_metrics"),
    "leaderboard": ("leaderboard", "print a benchmark leaderboard from the data directory"),
    "explain": ("explain", "does a reported number match the run, and if not, do ties explain the difference?"),
    "tasks": ("tasks", "export the shipped tasks' queries and candidates; evaluate your run against them"),
}


class CommandUnavailable(RuntimeError):
    """A command's module is missing or failed to import: the installation is broken."""


def _failure(exc: BaseException, qualified: str) -> str:
    """What went wrong importing ``qualified``, on one line, with the file and line where it happened."""
    if isinstance(exc, ModuleNotFoundError) and exc.name == qualified:
        return "the module is missing from this installation"
    if isinstance(exc, SyntaxError):
        return f"{type(exc).__name__}: {one_line(exc.msg)} at {exc.filename}:{exc.lineno}"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith("<")]
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return f"{type(exc).__name__}: {one_line(exc)}{where}"


def load_command(name: str) -> ModuleType:
    """The module of command ``name``, or :class:`CommandUnavailable` saying why it cannot be imported."""
    qualified = f"evalcore.commands.{COMMANDS[name][0]}"
    try:
        return importlib.import_module(qualified)
    except Exception as exc:
        raise CommandUnavailable(f"command {name!r} cannot be loaded ({qualified}): {_failure(exc, qualified)}; "
                                 "the installation is broken or incomplete") from exc


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evalcore",
        description="Tie-aware retrieval evaluation: oblivious / expected / min / max for every metric.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, (_, help_text) in COMMANDS.items():
        module = load_command(name)
        command_parser = sub.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(command_parser)
        command_parser.add_argument("--quiet", "-q", action="store_true",
                                    help="no progress bar on stderr (there is none when stderr is not a terminal)")
        command_parser.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        parser = build_parser()
    except CommandUnavailable as exc:
        print(f"evalcore: error: {exc}", file=sys.stderr)
        return 1
    args = parser.parse_args(argv)
    from evalcore import progress

    progress.configure(terminal=not args.quiet)  # bars on stderr when it is a terminal, never on stdout
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
