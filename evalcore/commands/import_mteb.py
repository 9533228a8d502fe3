"""``evalcore import-mteb PATH``: the RAR-b / R2MED tasks of an MTEB results tree → ``task_scores`` and
``systems`` parquet (see :mod:`evalcore.importers` for the choices made: split, subset, revision, metrics)."""
from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from evalcore.commands._imports import add_common_arguments

    add_common_arguments(parser, "MTEB results folder (results/<org__model>/<revision>/<Task>.json) or its parent",
                         "mteb-results@f4cc6c8")


def run(args: argparse.Namespace) -> int:
    from evalcore import importers
    from evalcore.commands._imports import read_and_write

    task_scores, systems, out = read_and_write(
        args, "import-mteb", importers.read_mteb_results, importers.MTEB_SOURCE,
        ("mteb_task_scores.parquet", "mteb_systems.parquet"), "RAR-b or R2MED task results in this MTEB results folder")
    n_models = task_scores["system"].nunique()
    print(f"import-mteb: {len(task_scores)} task_scores rows ({n_models} models, "
          f"{task_scores['task'].nunique()} tasks) and {len(systems)} systems → {out}")
    return 0
