"""The output files of ``make_real_runs.py``: zstd parquet written atomically (world-readable), a task file read
back with its category columns as text, new rows merged over the rows they recompute, and the file lock two
generator processes take around a read-merge-write."""
from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from pathlib import Path
from typing import Iterator

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

CATEGORY_COLUMNS = ["system", "benchmark", "task", "setting", "precision", "precision_kind", "qid", "metric",
                    "tie_policy", "source"]


def write_parquet_atomic(table: pa.Table, path: Path, metadata: dict[str, str] | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if metadata:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **metadata})
    with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".tmp", delete=False) as handle:
        tmp = Path(handle.name)
    try:
        pq.write_table(table, tmp, compression="zstd", compression_level=19)
        os.chmod(tmp, 0o644)  # NamedTemporaryFile creates 0600; shipped data must be world-readable
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def read_query_metrics(path: Path) -> pd.DataFrame:
    frame = pq.read_table(path).to_pandas()
    for col in CATEGORY_COLUMNS:
        if col in frame:
            frame[col] = frame[col].astype(str)
    return frame


def merge_into(path: Path, new: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Existing rows of ``path`` whose ``keys`` combination was not recomputed, plus ``new``."""
    if not path.exists():
        return new
    old = read_query_metrics(path)
    replaced = new[keys].drop_duplicates().assign(_replaced=True)
    kept = old.merge(replaced, on=keys, how="left")
    kept = kept[kept["_replaced"].isna()].drop(columns="_replaced")
    return pd.concat([kept, new], ignore_index=True)


@contextlib.contextmanager
def locked(lock_path: Path) -> Iterator[None]:
    """An exclusive advisory lock (flock) held for the block: two generator processes never interleave a
    read-merge-write of the same output file."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
