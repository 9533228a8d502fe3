"""A tiny shipped-tasks folder for the candidate tests: ``<data>/tasks/rar-b/`` with the four tables of
``scripts/make_task_texts.py`` (queries, documents, candidates, qrels) for two small made-up tasks, so a test
can build, break and evaluate whole candidates in milliseconds. The real shipped folder is tested elsewhere."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

TASKS = {"Alpha": 3, "Beta": 4}  # task -> number of queries
CANDIDATES = 3  # MCR candidates per query (c000..c002); the pool of a task holds every candidate text once


def write_tasks(data: Path) -> Path:
    """Write the tables under ``data/tasks/rar-b``; returns ``data``. Query ``qNNNNN``'s MCR candidates are
    ``c000``..``c002`` = pool documents ``p{3*row + i}``; the relevant one is ``c{row % 3}``."""
    queries, documents, candidates, qrels = [], [], [], []
    for task, n in TASKS.items():
        for row in range(n):
            qid = f"q{row:05d}"
            queries.append({"benchmark": "rar-b", "task": task, "qid": qid, "text": f"{task} question {row}",
                            "instruction": f"Retrieve the answer for {task}."})
            for i in range(CANDIDATES):
                pool = f"p{CANDIDATES * row + i:05d}"
                documents.append({"benchmark": "rar-b", "task": task, "docid": pool, "text": f"{task} answer {row}.{i}"})
                candidates.append({"benchmark": "rar-b", "task": task, "qid": qid, "docid": f"c{i:03d}",
                                   "pool_docid": pool})
            label = row % CANDIDATES
            qrels.append({"benchmark": "rar-b", "task": task, "setting": "mcr", "qid": qid,
                          "docid": f"c{label:03d}", "relevance": 1})
            qrels.append({"benchmark": "rar-b", "task": task, "setting": "full-pooled", "qid": qid,
                          "docid": f"p{CANDIDATES * row + label:05d}", "relevance": 1})
    folder = data / "tasks" / "rar-b"
    folder.mkdir(parents=True)
    for name, rows in (("queries", queries), ("documents", documents), ("candidates", candidates), ("qrels", qrels)):
        pd.DataFrame(rows).to_parquet(folder / f"{name}.parquet", index=False)
    return data


def mcr_rows(task: str, score=lambda row, i: float(i)) -> list[tuple[str, str, float]]:
    """A valid MCR run of ``task`` as (qid, docid, score) rows: every candidate of every query."""
    return [(f"q{row:05d}", f"c{i:03d}", score(row, i)) for row in range(TASKS[task]) for i in range(CANDIDATES)]
