"""A small real data folder for the upload tests: the shipped RAR-b task inputs and real per-query
results of the two tasks whose MiniLM fp32 run ships in ``data/runs/`` (WinoGrande, ARCChallenge), so an
upload of those runs is a complete candidate whose every per-query value can be checked against the shipped
MiniLM rows."""
from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pyarrow.dataset as ds
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "data"
TASKS = ("ARCChallenge", "WinoGrande")
MINILM = "tiebreak-run/all-MiniLM-L6-v2"


def shipped_run(task: str) -> Path:
    """The shipped MiniLM fp32 full-pooled run of ``task`` (qid, docid, score)."""
    return SHIPPED / "runs" / f"rar-b_{task}_full_all-MiniLM-L6-v2_fp32.parquet"


def write_two_tasks(folder: Path) -> Path:
    """``folder`` with tasks/rar-b/* and real/query_metrics/* (+ derived sums) of :data:`TASKS` only, and the
    real systems table."""
    tasks = folder / "tasks" / "rar-b"
    tasks.mkdir(parents=True)
    for name in ("queries", "documents", "candidates", "qrels"):
        table = ds.dataset(SHIPPED / "tasks" / "rar-b" / f"{name}.parquet").to_table(
            filter=ds.field("task").isin(list(TASKS)))
        pq.write_table(table, tasks / f"{name}.parquet")
    metrics = folder / "real" / "query_metrics"
    (metrics / "_derived").mkdir(parents=True)
    for task in TASKS:
        shutil.copy(SHIPPED / "real" / "query_metrics" / f"rar-b_{task}.parquet", metrics)
        shutil.copy(SHIPPED / "real" / "query_metrics" / "_derived" / f"rar-b_{task}.sums.parquet", metrics / "_derived")
    shutil.copy(SHIPPED / "real" / "systems.parquet", folder / "real")
    return folder


def folder_state(folder: Path) -> dict[str, tuple[int, str]]:
    """Every file under ``folder`` (hidden ones too): relative path -> (size, sha256)."""
    return {str(p.relative_to(folder)): (p.stat().st_size, hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(folder.rglob("*")) if p.is_file() or p.is_symlink()}


class FakeUpload:
    """What ``st.file_uploader`` hands the page: a name and the bytes."""

    def __init__(self, name: str, data: bytes) -> None:
        self.name, self._data = name, data

    def getvalue(self) -> bytes:
        return self._data
