"""Format detection (evalcore.formats.detection): parquet magic, extension, then the first line; a missing file and
an unknown format."""
from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from evalcore.formats import detect_qrels_format, detect_run_format, read_qrels, read_run
from formats_data import raises_at, run_table, write_text


@pytest.mark.parametrize("first_line, expected", [
    ("q1 Q0 d1 1 0.5 run", "trec"),
    ("qid\tdocid\tscore", "tsv"),
    ("query-id,corpus-id,score", "csv"),
    ('{"qid": "1", "docid": "a", "score": 1}', "jsonl"),
])
def test_sniffing_without_a_known_extension(tmp_path: Path, first_line: str, expected: str) -> None:
    path = write_text(tmp_path / "results.out", first_line + "\n")
    assert detect_run_format(path) == expected


def test_parquet_magic_wins_and_headerless_tsv_is_trec(tmp_path: Path) -> None:
    path = tmp_path / "run.bin"
    pq.write_table(run_table(["q"], ["d"], [1.0]), path)
    assert detect_run_format(path) == "parquet"
    headerless = write_text(tmp_path / "qrels.tsv", "1\t0\tdoc\t1\n")
    assert detect_qrels_format(headerless) == "trec"
    assert read_qrels(headerless).column("docid").to_pylist() == ["doc"]


def test_missing_file_and_unknown_format(tmp_path: Path) -> None:
    with raises_at(tmp_path / "absent.trec", None, "file not found"):
        read_run(tmp_path / "absent.trec")
    path = write_text(tmp_path / "run.trec", "q Q0 d 1 1 t\n")
    with raises_at(path, None, "unknown format"):
        read_run(path, fmt="xml")
