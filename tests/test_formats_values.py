"""Column values (evalcore.formats.values): ids stay text as written, float ids only where float64 keeps them apart,
nested id columns refused on every read path."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalcore.formats import iter_run_chunks, read_qrels, read_run, write_run
from formats_data import RUN_EXTENSIONS, assert_same_run, raises_at, run_table, write_text


def test_numeric_looking_ids_stay_text(tmp_path: Path) -> None:
    run = run_table(["007", "1e3", "007"], ["0001", "-0", "12.50"], [1.0, 2.0, 3.0])
    for extension in RUN_EXTENSIONS:
        path = tmp_path / f"ids.{extension}"
        write_run(run, path)
        assert_same_run(read_run(path), run)


@pytest.mark.parametrize("ids", [[1e20, 2e20], [2.0**53, 2.0**53 + 2], [-1e300, 1e300]])
def test_float_ids_beyond_two_to_the_53_are_refused_not_merged(tmp_path: Path, ids) -> None:
    """1e20 and 2e20 both became int64's minimum and were one query (MRR 1.0 instead of 0.75)."""
    path = tmp_path / "run.parquet"
    pq.write_table(pa.table({"qid": pa.array(ids, pa.float64()), "docid": ["a", "a"], "score": [1.0, 1.0]}), path)
    for read in (read_run, lambda p: pa.concat_tables(iter_run_chunks(p, check_duplicates=False))):
        with raises_at(path, 1, "expected qids stored as text or integers", "beyond 2^53"):
            read(path)
    qrels = write_text(tmp_path / "qrels.jsonl", "".join(f'{{"qid": {q!r}, "docid": "a", "relevance": 1}}\n'
                                                           for q in ids))
    with raises_at(qrels, 1, "beyond 2^53"):
        read_qrels(qrels)


def test_float_ids_below_two_to_the_53_stay_distinct_text(tmp_path: Path) -> None:
    path = tmp_path / "run.parquet"
    ids = [1.0, 2.5, 2.0**53 - 1, -3.0, 0.1 + 0.2]
    pq.write_table(pa.table({"qid": pa.array(ids), "docid": ["a"] * 5, "score": [1.0] * 5}), path)
    assert read_run(path)["qid"].to_pylist() == ["1", "2.5", str(2**53 - 1), "-3", "0.30000000000000004"]


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_nan_and_infinite_float_ids_are_refused(tmp_path: Path, bad: float) -> None:
    path = tmp_path / "run.parquet"
    pq.write_table(pa.table({"qid": [1.0, bad], "docid": ["a", "b"], "score": [1.0, 1.0]}), path)
    with raises_at(path, 2, "expected a qid"):
        read_run(path)


@pytest.mark.parametrize("column", ["qid", "docid"])
@pytest.mark.parametrize("values", [[["q"], ["r"]], [{"x": 1}, {"x": 2}]])
def test_a_list_or_struct_id_column_is_refused_on_every_read_path(tmp_path: Path, column: str, values) -> None:
    """A list qid column crashed the engine's stream (a dictionary read of a nested column: KeyError)."""
    path = tmp_path / "run.parquet"
    columns = {"qid": ["q", "r"], "docid": ["a", "b"], "score": [1.0, 2.0]}
    columns[column] = values
    pq.write_table(pa.table(columns), path)
    for read in (read_run, lambda p: list(iter_run_chunks(p, check_duplicates=False)), lambda p: list(iter_run_chunks(p))):
        with raises_at(path, 1, f"expected column {column} to hold strings or integers"):
            read(path)
