"""``evalcore import-r2med PATH``: the R2MED paper's result JSONs → ``task_scores`` and ``systems`` parquet,
systems named from the pipeline (``NV-Embed-v2``, ``HyDE(qwen-7b)+BGE-Large-en-v1.5``,
``NV-Embed-v2>>bge-reranker``)."""
from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from evalcore.commands._imports import add_common_arguments

    add_common_arguments(parser, "R2MED results folder (results/{base retriever,reranker,gar}/...) or its parent",
                         "r2med-paper@62b7074")


def run(args: argparse.Namespace) -> int:
    from evalcore import importers
    from evalcore.commands._imports import read_and_write

    task_scores, systems, out = read_and_write(
        args, "import-r2med", importers.read_r2med_results, importers.R2MED_SOURCE,
        ("r2med_paper_task_scores.parquet", "r2med_paper_systems.parquet"), "R2MED paper results in this folder")
    print(f"import-r2med: {len(task_scores)} task_scores rows ({len(systems)} pipelines) → {out}")
    return 0
