"""Parquet (evalcore.formats.parquet): rows as lines, damaged files, the decoded-size limit, and runs streamed in
query-aligned chunks (grouped, regrouped out of core, the engine's dictionary-encoded path)."""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalcore.errors import InputError
from evalcore.formats import RUN_SCHEMA, iter_run_chunks, read_qrels, read_run, readers, write_run
from formats_data import assert_query_aligned, raises_at, run_table, synthetic_run, write_text


def test_corrupt_parquet(tmp_path: Path) -> None:
    good = tmp_path / "good.parquet"
    write_run(run_table(["q"] * 1000, [f"d{i}" for i in range(1000)], list(np.linspace(0, 1, 1000))), good)
    truncated = write_text(tmp_path / "truncated.parquet", good.read_bytes()[: good.stat().st_size // 2])
    with raises_at(truncated, None, "parquet"):
        read_run(truncated)
    with raises_at(truncated, None, "parquet"):
        iter_run_chunks(truncated)  # raised at call time, before the first chunk is asked for
    not_parquet = write_text(tmp_path / "text.parquet", "q1 Q0 d 1 1 t\n")
    with raises_at(not_parquet, None, "expected a parquet file"):
        read_run(not_parquet)


def test_parquet_lines_are_row_numbers(tmp_path: Path) -> None:
    path = tmp_path / "run.parquet"
    scores = np.arange(50, dtype=np.float64)
    scores[36] = np.inf
    pq.write_table(run_table(["q"] * 50, [f"d{i}" for i in range(50)], scores.tolist()), path, row_group_size=7)
    with raises_at(path, 37, "expected a finite score"):
        read_run(path)
    with raises_at(path, 37, "expected a finite score"):
        list(iter_run_chunks(path, chunk_rows=5))


def test_parquet_null_and_text_scores(tmp_path: Path) -> None:
    path = tmp_path / "run.parquet"
    pq.write_table(pa.table({"qid": ["q", "q", "q"], "docid": ["a", "b", "c"], "score": [1.0, None, 2.0]}), path)
    with raises_at(path, 2, "null"):
        read_run(path)
    pq.write_table(pa.table({"qid": ["q", "q"], "docid": ["a", "b"], "score": ["1.5", "x"]}), path)
    with raises_at(path, 2, "expected a number for score", "'x'"):
        read_run(path)


def test_float_grades_that_are_integers_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "qrels.parquet"
    pq.write_table(pa.table({"qid": ["q"], "docid": ["d"], "relevance": [2.0]}), path)
    assert read_qrels(path).column("relevance").to_pylist() == [2]


@pytest.mark.parametrize("grade, arrow_type", [
    (1e30, pa.float64()), (9.3e18, pa.float64()), (1e19, pa.float64()), (2.0**63, pa.float64()),
    (-1e30, pa.float64()), (2**64 - 1, pa.uint64()), (2**63, pa.uint64()),
])
def test_parquet_grades_beyond_int64_are_an_input_error(tmp_path: Path, grade, arrow_type) -> None:
    """They crashed in Arrow's cast (ArrowInvalid ... truncated converting to int64)."""
    path = tmp_path / "qrels.parquet"
    pq.write_table(pa.table({"qid": ["q", "q"], "docid": ["a", "b"],
                             "relevance": pa.array([1, grade], arrow_type)}), path)
    with raises_at(path, 2, "expected a non-negative integer relevance grade"):
        read_qrels(path)


def test_the_largest_int64_grade_is_still_read(tmp_path: Path) -> None:
    path = tmp_path / "qrels.parquet"
    pq.write_table(pa.table({"qid": ["q"], "docid": ["a"], "relevance": pa.array([2**63 - 1], pa.uint64())}), path)
    assert read_qrels(path)["relevance"].to_pylist() == [2**63 - 1]


@pytest.mark.parametrize("seed", range(6))
def test_parquet_with_damaged_pages_gives_a_table_or_input_error(tmp_path: Path, seed: int) -> None:
    path = tmp_path / "damaged.parquet"
    pq.write_table(synthetic_run(30, seed), path, row_group_size=500, compression="snappy" if seed % 2 else "none")
    content = bytearray(path.read_bytes())
    rng = np.random.default_rng(seed)
    start = int(rng.integers(4, len(content) // 2))
    content[start:start + 200] = rng.integers(0, 256, 200, dtype=np.uint8).tobytes()
    path.write_bytes(bytes(content))
    for read in (read_run, lambda p: pa.concat_tables(list(iter_run_chunks(p, chunk_rows=300)))):
        try:
            table = read(path)
        except InputError as error:
            assert error.path == str(path)
        else:
            assert table.schema == RUN_SCHEMA


@pytest.mark.parametrize("what", ["run", "qrels"])
def test_a_parquet_file_that_decodes_past_the_input_limit_is_refused(tmp_path: Path, monkeypatch, what) -> None:
    """Compressed, dictionary-encoded pages decode to far more than the file's size (a constant column of
    20M rows is a few kB): the rows are counted before reading, the decoded batches while reading."""
    value = ("score", pa.array(np.ones(1_000_000))) if what == "run" else \
        ("relevance", pa.array(np.ones(1_000_000, np.int64)))
    block = pa.table({"qid": pa.array(["q"] * 1_000_000), "docid": pa.array(["d"] * 1_000_000), value[0]: value[1]})
    bomb = tmp_path / f"{what}.parquet"
    with pq.ParquetWriter(bomb, block.schema, compression="zstd") as writer:
        for _ in range(20):
            writer.write_table(block)
    assert bomb.stat().st_size < 1 << 20
    long_strings = tmp_path / f"long_{what}.parquet"  # 200 rows decoding to 1 MB each: the batch count sees it
    pq.write_table(pa.table({"qid": ["q"] * 200, "docid": [f"{i}" + "x" * (1 << 20) for i in range(200)],
                             value[0]: value[1][:200]}), long_strings, compression="zstd")
    read = read_run if what == "run" else read_qrels
    monkeypatch.setenv("TIEBREAK_MAX_INPUT_BYTES", str(100 << 20))  # 20M rows are at least 320 MB decoded
    for path in (bomb, long_strings):
        with raises_at(path, None, "more than 104,857,600 bytes after decompression", "TIEBREAK_MAX_INPUT_BYTES"):
            read(path)


def test_grouped_parquet_streams_in_query_aligned_chunks(tmp_path: Path, monkeypatch) -> None:
    run = synthetic_run(500, 3)
    assert 40_000 < run.num_rows < 60_000
    path = tmp_path / "grouped.parquet"
    pq.write_table(run, path, row_group_size=4096)
    expected = read_run(path)
    # the grouped path must stream, not fall back to reading the whole file
    monkeypatch.setattr(readers, "read_run", lambda *args, **kwargs: pytest.fail("grouped parquet was read whole"))
    chunks = list(iter_run_chunks(path, chunk_rows=1000))
    assert len(chunks) > 20
    assert max(chunk.num_rows for chunk in chunks) >= 3000  # the big query stays whole
    assert sorted(chunk.num_rows for chunk in chunks)[-2] <= 1000
    assert pa.concat_tables(chunks).equals(expected)
    assert_query_aligned(chunks, expected)


def test_engine_stream_keeps_qids_dictionary_encoded(tmp_path: Path) -> None:
    """The engine's path (check_duplicates=False): qids arrive as one duplicate-free dictionary per
    chunk, unified across row groups (each has its own dictionary), with the same rows as read_run."""
    run = synthetic_run(500, 3)
    path = tmp_path / "grouped.parquet"
    pq.write_table(run, path, row_group_size=777)  # queries cross row groups
    chunks = list(iter_run_chunks(path, chunk_rows=1000, check_duplicates=False))
    assert len(chunks) > 20
    for chunk in chunks:
        qids = chunk.column("qid").combine_chunks()
        assert pa.types.is_dictionary(qids.type)
        assert len(set(qids.dictionary.to_pylist())) == len(qids.dictionary)
    decoded = [chunk.set_column(0, "qid", chunk["qid"].cast(pa.string())).replace_schema_metadata(None)
               for chunk in chunks]
    assert pa.concat_tables(decoded).equals(read_run(path))
    assert_query_aligned(decoded, run)


def test_engine_stream_rejects_a_missing_qid_with_its_line(tmp_path: Path) -> None:
    run = synthetic_run(60, 4)
    qids = run.column("qid").to_pylist()
    row = run.num_rows - 3
    qids[row] = None
    path = tmp_path / "null-qid.parquet"
    pq.write_table(run.set_column(0, "qid", pa.array(qids, pa.string())), path, row_group_size=500)
    with raises_at(path, row + 1, "expected a value for qid"):
        list(iter_run_chunks(path, chunk_rows=400, check_duplicates=False))


def test_engine_stream_keeps_a_query_longer_than_a_chunk_whole(tmp_path: Path) -> None:
    run = run_table(["a"] * 3 + ["b"] * 40 + ["c"] * 3, [f"d{i}" for i in range(46)], [1.0] * 46)
    path = tmp_path / "long.parquet"
    pq.write_table(run, path, row_group_size=4)
    chunks = list(iter_run_chunks(path, chunk_rows=5, check_duplicates=False))
    decoded = [chunk.set_column(0, "qid", chunk["qid"].cast(pa.string())) for chunk in chunks]
    assert_query_aligned(decoded, run)


def test_ungrouped_parquet_still_gives_query_aligned_chunks(tmp_path: Path) -> None:
    grouped = synthetic_run(300, 5)
    shuffled = grouped.take(pa.array(np.random.default_rng(2).permutation(grouped.num_rows)))
    path = tmp_path / "shuffled.parquet"
    pq.write_table(shuffled, path, row_group_size=5000)
    chunks = list(iter_run_chunks(path, chunk_rows=700))
    assert sum(chunk.num_rows for chunk in chunks) == shuffled.num_rows
    assert_query_aligned(chunks, shuffled)


@pytest.mark.parametrize("check_duplicates", [True, False])
def test_large_ungrouped_parquet_is_regrouped_out_of_core(tmp_path: Path, monkeypatch, check_duplicates) -> None:
    """Above GROUP_IN_MEMORY_MAX_ROWS an ungrouped file is grouped by DuckDB, not read whole: same
    query-aligned rows (first-seen query order, file order inside a query) and no temp file left."""
    grouped = synthetic_run(300, 5)
    shuffled = grouped.take(pa.array(np.random.default_rng(2).permutation(grouped.num_rows)))
    path = tmp_path / "shuffled.parquet"
    pq.write_table(shuffled, path, row_group_size=5000)
    monkeypatch.setattr(readers, "GROUP_IN_MEMORY_MAX_ROWS", 1000)
    monkeypatch.setattr(readers, "read_run", lambda *args, **kwargs: pytest.fail("ungrouped parquet was read whole"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    chunks = list(iter_run_chunks(path, chunk_rows=700, check_duplicates=check_duplicates))
    decoded = [chunk.set_column(0, "qid", chunk["qid"].cast(pa.string())).replace_schema_metadata(None)
               for chunk in chunks]
    assert_query_aligned(decoded, shuffled)
    first_seen = list(dict.fromkeys(shuffled.column("qid").to_pylist()))
    assert list(dict.fromkeys(pa.concat_tables(decoded).column("qid").to_pylist())) == first_seen
    assert list((tmp_path / "tmp").iterdir()) == []


@pytest.mark.parametrize("problem", ["duplicate", "score", "null"])
def test_regrouped_parquet_errors_name_the_original_line(tmp_path: Path, monkeypatch, problem) -> None:
    run = synthetic_run(80, 6)
    qids, docids = run.column("qid").to_pylist(), run.column("docid").to_pylist()
    scores = run.column("score").to_pylist()
    order = np.random.default_rng(4).permutation(run.num_rows)
    qids, docids, scores = [qids[i] for i in order], [docids[i] for i in order], [scores[i] for i in order]
    row = run.num_rows // 2
    if problem == "duplicate":
        earlier = next(i for i in range(row) if qids[i] == qids[row])
        docids[row] = docids[earlier]
    elif problem == "score":
        scores[row] = float("nan")
    else:
        qids[row] = None
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"qid": pa.array(qids, pa.string()), "docid": docids, "score": scores}), path)
    monkeypatch.setattr(readers, "GROUP_IN_MEMORY_MAX_ROWS", 10)
    needle = {"duplicate": f"first on line {earlier + 1}" if problem == "duplicate" else "",
              "score": "finite", "null": "expected a value for qid"}[problem]
    with raises_at(path, row + 1, needle):
        list(iter_run_chunks(path, chunk_rows=300))


def test_qid_reappearing_only_in_the_last_row_group(tmp_path: Path) -> None:
    run = run_table(["a"] * 5 + ["b"] * 5 + ["a"], [f"d{i}" for i in range(11)], [1.0] * 11)
    path = tmp_path / "late.parquet"
    pq.write_table(run, path, row_group_size=2)
    chunks = list(iter_run_chunks(path, chunk_rows=2))
    assert_query_aligned(chunks, run)


def test_streaming_path_finds_a_duplicate_in_a_late_chunk(tmp_path: Path) -> None:
    run = synthetic_run(100, 11)
    docids = run.column("docid").to_pylist()
    qids = run.column("qid").to_pylist()
    row = run.num_rows - 2  # make the second-to-last row repeat the previous docid of the same query
    assert qids[row] == qids[row - 1]
    docids[row] = docids[row - 1]
    path = tmp_path / "dup.parquet"
    pq.write_table(run_table(qids, docids, run.column("score").to_pylist()), path, row_group_size=1000)
    with raises_at(path, row + 1, "duplicate", f"first on line {row}"):
        list(iter_run_chunks(path, chunk_rows=500))
