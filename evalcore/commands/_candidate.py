"""Options and steps shared by the commands that evaluate a candidate run: ``evalcore tasks
evaluate`` and ``evalcore leaderboard --candidate`` (see :mod:`evalcore.candidate`)."""
from __future__ import annotations

import argparse

YES_NO = {"yes": True, "no": False}


def add_candidate_arguments(parser: argparse.ArgumentParser, *, required: bool) -> None:
    """``--candidate RUN``, ``--candidate-name``, ``--candidate-instruction`` (``--precision`` is the command's
    own: the candidate is labelled with the precision the board shows)."""
    parser.add_argument("--candidate", required=required, metavar="RUN",
                        help="your run: a folder with one run file per task named by the task (ARCChallenge.trec, "
                             "any run format), or one parquet/CSV/TSV/JSON-lines file with a task column")
    parser.add_argument("--candidate-name", default="candidate", metavar="NAME",
                        help="the candidate's system name (default candidate)")
    parser.add_argument("--candidate-instruction", default="no", choices=tuple(YES_NO),
                        help="did your run use the queries' instructions (default no)")


def candidate_rows(args: argparse.Namespace, data_dir):
    """(per-query rows of ``args.candidate`` in the query_metrics schema, its checked name)."""
    from evalcore import candidate

    name = candidate.check_name(args.candidate_name)
    inputs = candidate.task_inputs(data_dir, args.benchmark, args.setting)
    run = candidate.read_candidate(args.candidate, inputs)
    rows = candidate.evaluate_candidate(inputs, run, name=name, precision=args.precision,
                                        instruction=YES_NO[args.candidate_instruction])
    return rows, name
