"""``evalcore import-mteb PATH``: the RAR-b / R2MED tasks of an MTEB results tree → ``task_scores`` and
``systems`` parquet (see :mod:`evalcore.importers` for the choices made: split, subset, revision, metrics)."""
from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="MTEB results folder (results/<org__model>/<revision>/<Task>.json) or its parent")
    parser.add_argument("--out", default="data/published", help="output folder (default data/published)")
    parser.add_argument("--source", default=None,
                        help="source label stored with every row (default mteb-results@f4cc6c8)")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from evalcore import importers

    task_scores, systems = importers.read_mteb_results(args.path, source=args.source or importers.MTEB_SOURCE)
    out = Path(args.out)
    importers.write_compact_parquet_files({out / "mteb_task_scores.parquet": task_scores,
                                           out / "mteb_systems.parquet": systems})
    n_models = task_scores["system"].nunique()
    print(f"import-mteb: {len(task_scores)} task_scores rows ({n_models} models, "
          f"{task_scores['task'].nunique()} tasks) and {len(systems)} systems → {out}")
    return 0
