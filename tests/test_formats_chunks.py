"""Query-aligned chunks (evalcore.formats.chunks) of runs read whole: every qid in one chunk, in input order."""
from __future__ import annotations

from pathlib import Path

import pytest

from evalcore.formats import iter_run_chunks, write_run
from formats_data import assert_query_aligned, synthetic_run


@pytest.mark.parametrize("extension", ["trec", "csv", "jsonl"])
def test_text_formats_chunk_too(tmp_path: Path, extension: str) -> None:
    run = synthetic_run(40, 7)
    path = tmp_path / f"run.{extension}"
    write_run(run, path)
    chunks = list(iter_run_chunks(path, chunk_rows=500))
    assert_query_aligned(chunks, run)
