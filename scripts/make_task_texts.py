"""The texts and qrels behind the shipped real runs → ``data/tasks/rar-b/`` (what the dashboard shows and
``evalcore tasks export`` writes: the per-query drill-down and the task export).

For every RAR-b task the real runs evaluate (``make_real_runs.TASK_FILES``), from the upstream MCR CSVs (source
``rarb-mcr`` of :mod:`evalcore.sources`), with EXACTLY the ids the runs use — the id assignment is imported from
``scripts/make_real_runs.py`` (``load_task``: qids ``q00000``…, the task's pool of candidate texts deduplicated
by exact text with docids ``p00000``…; ``mcr_qrels`` / ``full_qrels``), never re-implemented:

- ``queries.parquet`` — ``benchmark, task, qid, text, instruction`` (RAR-b's instruction; a run "with
  instruction" ranked ``instruction + " " + text``);
- ``documents.parquet`` — ``benchmark, task, docid, text``: the pool, the documents of the ``full-pooled``
  setting;
- ``candidates.parquet`` — ``benchmark, task, qid, docid, pool_docid``: each query's MCR candidates in the CSV's
  order (``docid`` = the id the ``mcr`` runs use, ``c000``…; ``pool_docid`` = the same text in the pool);
- ``qrels.parquet`` — ``benchmark, task, setting, qid, docid, relevance`` for ``mcr`` and ``full-pooled``.

Each file's footer (key ``tiebreak.tasks``) records the format, the source and its commit, and the sha256 of every
CSV read. The store does not load ``data/tasks/`` as results (``evalcore.store.catalogue.TASKS_DIR``).

Usage: ``python scripts/make_task_texts.py [--sources DIR] [--out data/tasks]`` (deterministic: the same CSVs
give the same bytes).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

REPO_ROOT = Path(__file__).resolve().parents[1]
for _path in (REPO_ROOT, Path(__file__).resolve().parent):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from make_real_runs import BENCHMARK, FULL_POOLED, TASK_FILES, Task, full_qrels, load_task, mcr_qrels  # noqa: E402

FORMAT = "task-texts/1"
SOURCE = "rarb-mcr"
SOURCE_COMMIT = "c16b6faf424e5067ae657f434e10204432464066"  # github gowitheflow-1998/RAR-b, folder mcr/
METADATA_KEY = b"tiebreak.tasks"
FILES = ("queries", "documents", "candidates", "qrels")


def candidate_table(task: Task) -> pd.DataFrame:
    """Each query's MCR candidates in the CSV's order: the mcr runs' docid and the same text's pool docid.

    The mcr docid of candidate ``i`` is what ``mcr_qrels`` names the correct candidate when the label is ``i``
    (``make_real_runs`` writes the same id into the runs), so it is taken from there, not re-spelled here."""
    sizes = np.array([len(idx) for idx in task.candidate_pool_idx], dtype=np.int64)
    width = int(sizes.max()) if len(sizes) else 0
    spelled = [mcr_qrels(replace(task, labels=np.full(len(task.qids), i)))["docid"].iloc[0]
               for i in range(width)] if len(task.qids) else []
    pool = np.array(task.pool_docids, dtype=object)
    return pd.DataFrame({
        "benchmark": BENCHMARK, "task": task.name,
        "qid": np.repeat(np.array(task.qids, dtype=object), sizes),
        "docid": [spelled[i] for n in sizes for i in range(n)],
        "pool_docid": pool[np.concatenate(task.candidate_pool_idx)] if len(sizes) else [],
    })


def task_tables(task: Task) -> dict[str, pd.DataFrame]:
    """The four tables of one task."""
    queries = pd.DataFrame({"benchmark": BENCHMARK, "task": task.name, "qid": task.qids, "text": task.queries,
                            "instruction": task.instructions})
    documents = pd.DataFrame({"benchmark": BENCHMARK, "task": task.name, "docid": task.pool_docids,
                              "text": task.pool_texts})
    qrels = pd.concat([mcr_qrels(task).assign(setting="mcr"), full_qrels(task).assign(setting=FULL_POOLED)])
    qrels = qrels.assign(benchmark=BENCHMARK, task=task.name)[
        ["benchmark", "task", "setting", "qid", "docid", "relevance"]]
    return {"queries": queries, "documents": documents, "candidates": candidate_table(task), "qrels": qrels}


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write(out: Path, tables: dict[str, pd.DataFrame], provenance: dict) -> list[Path]:
    """Write the tables as zstd parquet through ``evalcore.formats.atomic_path`` (all or nothing per file)."""
    from evalcore.formats import atomic_path

    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in FILES:
        table = pa.Table.from_pandas(tables[name].reset_index(drop=True), preserve_index=False)
        table = table.replace_schema_metadata({METADATA_KEY: json.dumps({**provenance, "table": name},
                                                                         sort_keys=True).encode()})
        target = out / BENCHMARK / f"{name}.parquet"
        target.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(target, f"task texts {name}") as temporary:
            pq.write_table(table, temporary, compression="zstd", compression_level=19, use_dictionary=True)
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    from evalcore import sources

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sources", type=Path, default=None, help="folder of RAR-b MCR CSVs "
                        "(default: evalcore.sources' rarb-mcr)")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "data" / "tasks")
    args = parser.parse_args(argv)
    try:
        folder = args.sources or sources.require(SOURCE)
    except sources.SourcesMissing as exc:
        print(f"make_task_texts: {exc}", file=sys.stderr)
        return 2
    per_task = [task_tables(load_task(folder, name)) for name in TASK_FILES]
    tables = {name: pd.concat([t[name] for t in per_task], ignore_index=True) for name in FILES}
    provenance = {"format": FORMAT, "source": SOURCE, "source_commit": SOURCE_COMMIT,
                  "generator": "scripts/make_task_texts.py",
                  "csv_sha256": {TASK_FILES[name]: sha256(folder / TASK_FILES[name]) for name in TASK_FILES}}
    for path in write(args.out, tables, provenance):
        print(f"{path}: {pq.ParquetFile(path).metadata.num_rows:,} rows, {path.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
