"""Tests for evalcore.formats: round trips, validation messages and line numbers, MaxP, chunking."""
from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalcore import formats
from evalcore.errors import InputError
from evalcore.id_keys import string_hashes
from needs import require_source

from evalcore.formats import (
    atomic_path,
    atomic_paths,
    detect_qrels_format,
    detect_run_format,
    iter_run_chunks,
    read_qrels,
    read_run,
    write_parquet_atomic,
    write_run,
)

RUN_EXTENSIONS = ("trec", "csv", "tsv", "jsonl", "parquet")


def run_table(qids: list[str], docids: list[str], scores: list[float]) -> pa.Table:
    return pa.table({"qid": pa.array(qids, pa.string()), "docid": pa.array(docids, pa.string()),
                     "score": pa.array(scores, pa.float64())})


def write_text(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


@contextmanager
def raises_at(path: Path, line: int | None, *needles: str) -> Iterator[None]:
    """Assert the block raises InputError naming ``path``, ``line`` and containing each needle."""
    with pytest.raises(InputError) as info:
        yield
    error = info.value
    assert (error.path, error.line) == (str(path), line), str(error)
    text = str(error)
    assert text.startswith(f"{path}:{line}: " if line is not None else f"{path}: ")
    for needle in needles:
        assert needle in text, text


# ----------------------------------------------------------------------------- round trips

id_text = st.text(alphabet=st.sampled_from(list("abcXYZ0179_-.:/,\"'#{}é漢")), min_size=1, max_size=8)
finite_scores = st.floats(allow_nan=False, allow_infinity=False, width=64) | st.sampled_from([-0.0, 0.0, 5e-324])


@st.composite
def random_runs(draw) -> pa.Table:
    pairs = draw(st.lists(st.tuples(id_text, id_text), min_size=1, max_size=30, unique=True))
    scores = draw(st.lists(finite_scores, min_size=len(pairs), max_size=len(pairs)))
    return run_table([q for q, _ in pairs], [d for _, d in pairs], scores)


def assert_same_run(actual: pa.Table, expected: pa.Table) -> None:
    assert actual.schema == formats.RUN_SCHEMA
    assert actual.column("qid").to_pylist() == expected.column("qid").to_pylist()
    assert actual.column("docid").to_pylist() == expected.column("docid").to_pylist()
    # compare bit patterns so -0.0 vs 0.0 and the last ulp count
    assert (np.asarray(actual.column("score").to_numpy()).view(np.int64).tolist()
            == np.asarray(expected.column("score").to_numpy(), dtype=np.float64).view(np.int64).tolist())


@pytest.mark.parametrize("extension", RUN_EXTENSIONS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(run=random_runs())
def test_every_run_format_round_trips(tmp_path: Path, extension: str, run: pa.Table) -> None:
    if extension == "trec":  # TREC text cannot hold whitespace in ids; the alphabet has none
        assert not any(" " in value for value in run.column("qid").to_pylist())
    path = tmp_path / f"run.{extension}"
    write_run(run, path)
    assert detect_run_format(path) == extension
    assert_same_run(read_run(path), run)


def test_numeric_looking_ids_stay_text(tmp_path: Path) -> None:
    run = run_table(["007", "1e3", "007"], ["0001", "-0", "12.50"], [1.0, 2.0, 3.0])
    for extension in RUN_EXTENSIONS:
        path = tmp_path / f"ids.{extension}"
        write_run(run, path)
        assert_same_run(read_run(path), run)


def test_trec_writer_ranks_by_score_and_keeps_tag(tmp_path: Path) -> None:
    run = run_table(["q1", "q1", "q1", "q2"], ["a", "b", "c", "a"], [0.5, 2.0, 0.5, -1.0])
    run = run.append_column("tag", pa.array(["sys"] * 4))
    path = tmp_path / "run.trec"
    write_run(run, path)
    rows = [line.split() for line in path.read_text().splitlines()]
    assert [row[3] for row in rows] == ["2", "1", "3", "1"]
    assert {row[5] for row in rows} == {"sys"} and {row[1] for row in rows} == {"Q0"}


def test_trec_writer_rejects_whitespace_ids_and_leaves_no_file(tmp_path: Path) -> None:
    path = tmp_path / "run.trec"
    with pytest.raises(ValueError, match="whitespace"):
        write_run(run_table(["q 1"], ["d"], [1.0]), path)
    assert list(tmp_path.iterdir()) == []


def test_trec_text_quirks_are_accepted(tmp_path: Path) -> None:
    text = "\ufeffq1 Q0 d1 1 2.5 t\r\n\r\n  q1\tQ0   d2 2 -0 t \t\r\nq2 Q0 d3 1 1e3 t\nq2 Q0 d4 2 -0.0 t"
    run = read_run(write_text(tmp_path / "quirks.trec", text))
    assert run.column("qid").to_pylist() == ["q1", "q1", "q2", "q2"]
    assert run.column("docid").to_pylist() == ["d1", "d2", "d3", "d4"]
    assert run.column("score").to_pylist() == [2.5, 0.0, 1000.0, 0.0]


def test_beir_style_column_names_and_extra_columns(tmp_path: Path) -> None:
    path = write_text(tmp_path / "run.tsv", "extra\tquery-id\tcorpus-id\tscore\nx\tq1\td1\t0.5\n\ny\tq1\td2\t0.25\n")
    run = read_run(path)
    assert run.column("docid").to_pylist() == ["d1", "d2"]
    assert run.column("score").to_pylist() == [0.5, 0.25]


def test_csv_quoted_field_with_delimiter(tmp_path: Path) -> None:
    path = write_text(tmp_path / "run.csv", 'qid,docid,score\n"q,1","say ""hi""",1\nq2,d,2\n"a,b",3\n')
    with raises_at(path, 4, "expected 3 comma-separated columns", "found 2"):
        read_run(path)  # the last row has a quoted comma, so it really holds two fields
    path = write_text(tmp_path / "run.csv", 'qid,docid,score\n"q,1","say ""hi""",1\nq2,d,2\n"a,b",x,3\n')
    run = read_run(path)
    assert run.column("qid").to_pylist() == ["q,1", "q2", "a,b"]
    assert run.column("docid").to_pylist() == ['say "hi"', "d", "x"]


def test_gzipped_trec_run(tmp_path: Path) -> None:
    import gzip

    path = tmp_path / "run.trec.gz"
    path.write_bytes(gzip.compress(b"q1 Q0 d1 1 3 t\nq1 Q0 d2 2 2 t\n"))
    assert read_run(path).column("docid").to_pylist() == ["d1", "d2"]


# ----------------------------------------------------------------------------- qrels

def test_trec_qrels(tmp_path: Path) -> None:
    path = write_text(tmp_path / "q.qrels", "1 0 d1 2\n\n1 0 d2 0\r\n2 Q0 d1 1\n1 0 d1 2\n")
    qrels = read_qrels(path)
    assert qrels.schema == formats.QRELS_SCHEMA
    # the exact repeat on the last line collapses into the first judgement
    assert qrels.to_pylist() == [{"qid": "1", "docid": "d1", "relevance": 2},
                                 {"qid": "1", "docid": "d2", "relevance": 0},
                                 {"qid": "2", "docid": "d1", "relevance": 1}]


def test_beir_qrels_tsv(tmp_path: Path) -> None:
    path = write_text(tmp_path / "test.tsv", "query-id\tcorpus-id\tscore\n007\tdoc-1\t1\n007\tdoc-2\t2\n")
    assert detect_qrels_format(path) == "tsv"
    assert read_qrels(path).to_pylist() == [{"qid": "007", "docid": "doc-1", "relevance": 1},
                                            {"qid": "007", "docid": "doc-2", "relevance": 2}]


def test_r2med_qrels_jsonl_matches_a_plain_json_parse() -> None:
    R2MED_QRELS = require_source("r2med-paper") / "demo-dataset" / "Biology-demo" / "qrels.jsonl"
    records = [json.loads(line) for line in R2MED_QRELS.read_text().splitlines() if line.strip()]
    qrels = read_qrels(R2MED_QRELS)
    assert qrels.column("qid").to_pylist() == [str(r["q_id"]) for r in records]
    assert qrels.column("docid").to_pylist() == [r["p_id"] for r in records]
    assert qrels.column("relevance").to_pylist() == [int(r["score"]) for r in records]


@pytest.mark.parametrize("extension", ["parquet", "csv", "jsonl"])
def test_tabular_qrels(tmp_path: Path, extension: str) -> None:
    frame = pd.DataFrame({"qid": ["q1", "q1", "q2"], "docid": ["a", "b", "a"], "relevance": [1, 0, 3]})
    path = tmp_path / f"qrels.{extension}"
    if extension == "parquet":
        write_parquet_atomic(frame, path)
    elif extension == "csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_json(path, orient="records", lines=True)
    assert read_qrels(path).to_pandas().equals(frame)


def test_float_grades_that_are_integers_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "qrels.parquet"
    pq.write_table(pa.table({"qid": ["q"], "docid": ["d"], "relevance": [2.0]}), path)
    assert read_qrels(path).column("relevance").to_pylist() == [2]


# ----------------------------------------------------------------------------- validation

GOOD_RUN_LINE = "q1 Q0 d{} 1 1.0 t\n"


def run_with_bad_line(bad_line: str, line_number: int, blank_every: int = 4) -> str:
    """A TREC run whose physical line ``line_number`` is ``bad_line``; blank lines sprinkled before it."""
    lines = []
    for number in range(1, line_number):
        lines.append("\n" if number % blank_every == 0 else GOOD_RUN_LINE.format(number))
    lines.append(bad_line + "\n")
    lines.append(GOOD_RUN_LINE.format("last"))
    return "".join(lines)


@pytest.mark.parametrize("bad_line, needles", [
    ("q1 Q0 dx 1 1.0", ("expected 6 whitespace-separated columns (qid Q0 docid rank score tag)", "found 5")),
    ("q1 Q0 dx 1 1.0 t extra", ("expected 6", "found 7")),
    ("q1 Q0 dx 1 abc t", ("expected a number for score", "'abc'")),
    ("q1 Q0 dx 1 1,5 t", ("expected a number for score",)),
    ("q1 Q0 dx 1 nan t", ("expected a finite score", "'nan'")),
    ("q1 Q0 dx 1 -inf t", ("expected a finite score",)),
    ("q1 Q0 dx 1 1e309 t", ("expected a finite score", "overflow")),
    ("q1 Q0 d2 1 1.0 t", ("duplicate document 'd2' for query 'q1'", "first on line 2")),
])
def test_bad_trec_run_line_is_reported_with_its_physical_line(tmp_path: Path, bad_line: str, needles) -> None:
    path = write_text(tmp_path / "bad.trec", run_with_bad_line(bad_line, 17))
    with raises_at(path, 17, *needles):
        read_run(path)


def test_crlf_and_bom_do_not_shift_line_numbers(tmp_path: Path) -> None:
    text = "\ufeff" + run_with_bad_line("q1 Q0 dx 1 oops t", 9).replace("\n", "\r\n")
    path = write_text(tmp_path / "crlf.trec", text)
    with raises_at(path, 9, "oops"):
        read_run(path)


@pytest.mark.parametrize("grade, needle", [("1.5", "'1.5'"), ("abc", "'abc'"), ("-1", "-1"), ("", "found 3")])
def test_bad_trec_qrels_grade(tmp_path: Path, grade: str, needle: str) -> None:
    path = write_text(tmp_path / "bad.qrels", f"1 0 a 1\n\n1 0 b 0\n1 0 c {grade}\n2 0 a 1\n")
    with raises_at(path, 4, needle):
        read_qrels(path)


def test_conflicting_qrels_grades(tmp_path: Path) -> None:
    path = write_text(tmp_path / "bad.qrels", "1 0 a 1\n1 0 b 0\n1 0 a 2\n")
    with raises_at(path, 3, "conflicting grades", "line 1"):
        read_qrels(path)


@pytest.mark.parametrize("content", ["", "\n\n  \r\n", "\ufeff"])
def test_empty_text_files(tmp_path: Path, content: str) -> None:
    for name, reader in (("run.trec", read_run), ("qrels.qrels", read_qrels)):
        path = write_text(tmp_path / name, content)
        with raises_at(path, None, "empty file"):
            reader(path)


def test_header_only_csv_is_empty(tmp_path: Path) -> None:
    path = write_text(tmp_path / "run.csv", "qid,docid,score\n")
    with raises_at(path, None, "empty file"):
        read_run(path)


def test_missing_columns_name_what_was_found(tmp_path: Path) -> None:
    csv_path = write_text(tmp_path / "run.csv", "qid,doc_name,value\nq,d,1\n")
    with raises_at(csv_path, 1, "missing column(s) docid, score", "found qid, doc_name, value", "expected columns"):
        read_run(csv_path)
    parquet_path = tmp_path / "run.parquet"
    pq.write_table(pa.table({"qid": ["q"], "docid": ["d"]}), parquet_path)
    with raises_at(parquet_path, None, "missing column(s) score", "found qid, docid"):
        read_run(parquet_path)


def test_csv_row_with_wrong_field_count(tmp_path: Path) -> None:
    path = write_text(tmp_path / "run.csv", "qid,docid,score\nq,a,1\n\nq,b\n")
    with raises_at(path, 4, "expected 3 comma-separated columns", "found 2"):
        read_run(path)


def test_undecodable_text(tmp_path: Path) -> None:
    latin1 = "q1 Q0 café 3 1 t\n".encode("latin-1")
    path = write_text(tmp_path / "latin1.trec", b"q1 Q0 a 1 1 t\nq1 Q0 b 2 1 t\n" + latin1)
    with raises_at(path, 3, "expected UTF-8"):
        read_run(path)
    random_bytes = np.random.default_rng(1).integers(128, 256, 4096, dtype=np.uint8).tobytes()
    garbage = write_text(tmp_path / "garbage.trec", random_bytes)
    with pytest.raises(InputError, match="expected UTF-8"):
        read_run(garbage)


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


def test_jsonl_errors_name_the_line(tmp_path: Path) -> None:
    good = '{"qid": "q", "docid": "%s", "score": 1}\n'
    path = write_text(tmp_path / "run.jsonl", good % "a" + "\n" + good % "b" + '{"qid": "q", "docid": "c", "score": \n')
    with raises_at(path, 4, "expected one JSON object per line"):
        read_run(path)
    path = write_text(tmp_path / "types.jsonl", good % "a" + '{"qid": 5, "docid": "b", "score": 1}\n')
    with raises_at(path, 2, "'qid'", "line 1"):
        read_run(path)
    path = write_text(tmp_path / "nan.jsonl", good % "a" + '{"qid": "q", "docid": "b", "score": NaN}\n')
    with pytest.raises(InputError) as info:
        read_run(path)
    assert info.value.line == 2


def test_ten_megabyte_line_gives_a_clean_error(tmp_path: Path) -> None:
    long_line = "q1 Q0 " + "x" * 10_000_000 + " 1 1.0"
    path = write_text(tmp_path / "long.trec", "q1 Q0 a 1 1 t\n" + long_line + "\n")
    with raises_at(path, 2, "found 5"):
        read_run(path)
    many_fields = write_text(tmp_path / "wide.trec", "q1 Q0 a 1 1 t\n" + "a " * 5_000_000 + "\n")
    with raises_at(many_fields, 2, "expected 6", "found 5000000"):
        read_run(many_fields)


def test_missing_file_and_unknown_format(tmp_path: Path) -> None:
    with raises_at(tmp_path / "absent.trec", None, "file not found"):
        read_run(tmp_path / "absent.trec")
    path = write_text(tmp_path / "run.trec", "q Q0 d 1 1 t\n")
    with raises_at(path, None, "unknown format"):
        read_run(path, fmt="xml")


# ----------------------------------------------------------------------------- format detection

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


# ----------------------------------------------------------------------------- MaxP

def brute_force_maxp(run: pa.Table) -> pd.DataFrame:
    frame = run.to_pandas()
    frame["document"] = frame["docid"].str.rsplit(":", n=1).str[0]
    frame["position"] = np.arange(len(frame))
    best = frame.groupby(["qid", "document"], sort=False).agg(score=("score", "max"), position=("position", "min"))
    best = best.sort_values("position").reset_index()
    return best.rename(columns={"document": "docid"})[["qid", "docid", "score"]].reset_index(drop=True)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_maxp_matches_pandas_groupby(tmp_path: Path, data) -> None:
    documents = data.draw(st.lists(st.sampled_from(["a", "b", "a:b", "x:y:z", "c"]), min_size=1, max_size=5,
                                        unique=True))
    chunks = data.draw(st.lists(st.tuples(st.sampled_from(["q1", "q2"]), st.integers(0, len(documents) - 1),
                                          st.integers(0, 3)), min_size=1, max_size=25,
                                unique_by=lambda item: item))
    scores = data.draw(st.lists(st.sampled_from([0.0, -0.5, 1.0, 2.0, 3.5]),
                                min_size=len(chunks), max_size=len(chunks)))
    run = run_table([q for q, _, _ in chunks], [f"{documents[d]}:{c}" for _, d, c in chunks], scores)
    path = tmp_path / "chunks.parquet"
    write_run(run, path)
    expected = brute_force_maxp(run)
    assert read_run(path, maxp=True).to_pandas().equals(expected)
    streamed = pa.concat_tables(iter_run_chunks(path, maxp=True, chunk_rows=3)).to_pandas()
    assert sorted(map(tuple, streamed.values.tolist())) == sorted(map(tuple, expected.values.tolist()))


def test_maxp_keeps_duplicate_chunks_an_error(tmp_path: Path) -> None:
    path = write_text(tmp_path / "run.trec", "q Q0 d:1 1 1 t\nq Q0 d:2 2 1 t\nq Q0 d:1 3 0 t\n")
    with raises_at(path, 3, "duplicate"):
        read_run(path, maxp=True)


# ----------------------------------------------------------------------------- query-aligned chunks

def assert_query_aligned(chunks: list[pa.Table], reference: pa.Table) -> None:
    """Each qid in exactly one chunk, contiguous, its rows in the reference's order."""
    owner: dict[str, int] = {}
    for index, chunk in enumerate(chunks):
        qids = chunk.column("qid").to_pylist()
        runs = [qid for position, qid in enumerate(qids) if position == 0 or qids[position - 1] != qid]
        assert len(runs) == len(set(runs)), "a qid is not contiguous inside a chunk"
        for qid in runs:
            assert owner.setdefault(qid, index) == index, f"qid {qid} spans two chunks"
    expected_rows = reference.to_pandas().groupby("qid", sort=False)
    got_rows = pa.concat_tables(chunks).to_pandas().groupby("qid", sort=False)
    assert set(owner) == set(reference.column("qid").to_pylist())
    for qid, rows in expected_rows:
        assert got_rows.get_group(qid).reset_index(drop=True).equals(rows.reset_index(drop=True))


def synthetic_run(n_queries: int, sizes_seed: int) -> pa.Table:
    rng = np.random.default_rng(sizes_seed)
    sizes = rng.integers(1, 200, n_queries)
    sizes[n_queries // 2] = 3000  # one query bigger than the chunk size
    qids = np.repeat([f"q{i:04d}" for i in range(n_queries)], sizes)
    docids = np.concatenate([[f"d{j}" for j in range(size)] for size in sizes])
    scores = rng.integers(0, 50, len(qids)).astype(np.float64)  # heavy ties
    return run_table(qids.tolist(), docids.tolist(), scores.tolist())


def test_grouped_parquet_streams_in_query_aligned_chunks(tmp_path: Path, monkeypatch) -> None:
    run = synthetic_run(500, 3)
    assert 40_000 < run.num_rows < 60_000
    path = tmp_path / "grouped.parquet"
    pq.write_table(run, path, row_group_size=4096)
    expected = read_run(path)
    # the grouped path must stream, not fall back to reading the whole file
    monkeypatch.setattr(formats, "read_run", lambda *args, **kwargs: pytest.fail("grouped parquet was read whole"))
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
    monkeypatch.setattr(formats, "GROUP_IN_MEMORY_MAX_ROWS", 1000)
    monkeypatch.setattr(formats, "read_run", lambda *args, **kwargs: pytest.fail("ungrouped parquet was read whole"))
    monkeypatch.setattr(formats.tempfile, "tempdir", str(tmp_path / "tmp"))
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
    monkeypatch.setattr(formats, "GROUP_IN_MEMORY_MAX_ROWS", 10)
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


@pytest.mark.parametrize("extension", ["trec", "csv", "jsonl"])
def test_text_formats_chunk_too(tmp_path: Path, extension: str) -> None:
    run = synthetic_run(40, 7)
    path = tmp_path / f"run.{extension}"
    write_run(run, path)
    chunks = list(iter_run_chunks(path, chunk_rows=500))
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


# ----------------------------------------------------------------------------- atomic writes

@pytest.mark.parametrize("interruption", [RuntimeError, KeyboardInterrupt])
def test_atomic_path_leaves_nothing_behind(tmp_path: Path, interruption: type[BaseException]) -> None:
    target = tmp_path / "out.parquet"
    with pytest.raises(interruption):
        with atomic_path(target) as temporary:
            temporary.write_text("partial")
            raise interruption()
    assert list(tmp_path.iterdir()) == []


def test_atomic_path_keeps_the_old_file_on_failure_and_replaces_on_success(tmp_path: Path) -> None:
    target = write_text(tmp_path / "out.txt", "old")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as temporary:
            assert temporary.parent == tmp_path and not temporary.name.endswith(".txt")
            temporary.write_text("new")
            raise RuntimeError
    assert target.read_text() == "old" and list(tmp_path.iterdir()) == [target]
    with atomic_path(target) as temporary:
        temporary.write_text("new")
    assert target.read_text() == "new" and list(tmp_path.iterdir()) == [target]


def test_atomic_paths_replace_all_or_none(tmp_path: Path) -> None:
    first, second = write_text(tmp_path / "a.txt", "old a"), write_text(tmp_path / "b.txt", "old b")
    with pytest.raises(RuntimeError):
        with atomic_paths([first, second]) as (a, b):
            a.write_text("new a")
            b.write_text("new b")
            raise RuntimeError
    assert (first.read_text(), second.read_text()) == ("old a", "old b")
    assert sorted(tmp_path.iterdir()) == [first, second]
    with atomic_paths([first, second]) as (a, b):
        a.write_text("new a")
        b.write_text("new b")
    assert (first.read_text(), second.read_text()) == ("new a", "new b")
    assert sorted(tmp_path.iterdir()) == [first, second]


def test_an_imports_files_are_all_synced_before_the_first_rename(tmp_path: Path, monkeypatch) -> None:
    """An importer's task_scores and systems: a disk flush between their renames let a SIGKILL leave the new
    systems file beside the old task_scores (tests/reliability/test_kill_atomic.py caught it)."""
    from evalcore import importers

    calls = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(os, "replace", lambda a, b: (calls.append("replace"), real_replace(a, b))[1])
    frames = {tmp_path / "x_task_scores.parquet": pd.DataFrame({"v": [1.0]}),
              tmp_path / "x_systems.parquet": pd.DataFrame({"system": ["s"]})}
    importers.write_compact_parquet_files(frames)
    assert calls == ["fsync", "fsync", "replace", "replace"]
    assert all(pq.read_table(path).to_pandas().equals(frame) for path, frame in frames.items())


def test_write_parquet_atomic_accepts_pandas(tmp_path: Path) -> None:
    frame = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    write_parquet_atomic(frame, tmp_path / "sub" / "f.parquet")
    assert pq.read_table(tmp_path / "sub" / "f.parquet").to_pandas().equals(frame)


# ----------------------------------------------------------------------------- in-memory tables

def test_validate_run_and_qrels_on_in_memory_tables() -> None:
    frame = pd.DataFrame({"query-id": [1, 1], "corpus-id": ["a", "b"], "score": [1, 2]})
    run = formats.validate_run(frame)
    assert run.schema == formats.RUN_SCHEMA and run.column("qid").to_pylist() == ["1", "1"]
    with pytest.raises(InputError) as info:
        formats.validate_run(pd.DataFrame({"qid": ["q", "q", "q"], "docid": ["a", "b", "c"],
                                           "score": [1.0, float("nan"), 2.0]}), "frame")
    assert (info.value.path, info.value.line) == ("frame", 2)
    with pytest.raises(InputError) as info:
        formats.validate_qrels(pd.DataFrame({"qid": ["q"], "docid": ["a"], "relevance": [-2]}), "qrels")
    assert (info.value.path, info.value.line) == ("qrels", 1)


def test_jsonl_numeric_ids_become_text(tmp_path: Path) -> None:
    path = write_text(tmp_path / "run.jsonl", '{"qid": 7, "docid": 12, "score": 0.5}\n')
    assert read_run(path).to_pylist() == [{"qid": "7", "docid": "12", "score": 0.5}]


# ----------------------------------------------------------------------------- hostile input

trec_tokens = st.sampled_from(["q1", "Q0", "d1", "d2", "1", "-0", "1e309", "NaN", "0.5", "abc", "\t", " ", "  ",
                               "\r", "\n", "\r\n", "\ufeff", "\x00", "é", ":", '"', ",", "{", "}"])


@pytest.mark.parametrize("extension", ["trec", "qrels", "tsv", "csv", "jsonl", "parquet"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(trec_tokens, max_size=60), garbage=st.binary(max_size=16), use_garbage=st.booleans())
def test_mutated_input_gives_a_table_or_input_error(tmp_path: Path, extension: str, pieces: list[str],
                                                    garbage: bytes, use_garbage: bool) -> None:
    content = "".join(pieces).encode("utf-8") + (garbage if use_garbage else b"")
    if extension == "parquet":
        content = b"PAR1" + content
    path = write_text(tmp_path / f"fuzz.{extension}", content)
    reader = read_qrels if extension == "qrels" else read_run
    try:
        table = reader(path)
    except InputError as error:
        assert str(error).startswith(str(path))
    else:
        assert table.num_rows > 0
        assert table.schema in (formats.RUN_SCHEMA, formats.QRELS_SCHEMA)


def test_trec_writer_blocks_join_without_losing_lines(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(formats, "_WRITE_BLOCK_ROWS", 7)
    run = synthetic_run(5, 13)
    path = tmp_path / "blocks.trec"
    write_run(run, path)
    assert len(path.read_text().splitlines()) == run.num_rows
    assert_same_run(read_run(path), run)


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
            assert table.schema == formats.RUN_SCHEMA


def test_cheap_duplicate_check_sees_ids_that_differ_only_late_or_by_length() -> None:
    base = "x" * 20
    docids = [base + "a", base + "b", base, base + "\x00", "", "abcdefgh", "abcdefghi", "abcdefgh"]
    qids = ["q"] * len(docids)
    table = run_table(qids, docids, [1.0] * len(docids))
    assert formats._has_repeated_pairs(table)  # the last docid repeats the sixth
    assert not formats._has_repeated_pairs(table.slice(0, 7))
    hashes = string_hashes(pa.array(docids[:7]))
    assert len(set(hashes.tolist())) == 7


# ----------------------------------------------------------------------------- issue 16: values no reader may misread

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


@pytest.mark.parametrize("grade", ["1e30", "9.3e18", "1e19"])
def test_jsonl_grades_beyond_int64_are_an_input_error(tmp_path: Path, grade: str) -> None:
    path = write_text(tmp_path / "qrels.jsonl", '{"qid": "q", "docid": "a", "relevance": 1}\n\n'
                      f'{{"qid": "q", "docid": "b", "relevance": {grade}}}\n')
    with raises_at(path, 3, "that fits in 64 bits"):
        read_qrels(path)


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


@pytest.mark.parametrize("space", ["\u00a0", "\u2007", "\u3000", "\u2009"])
def test_unicode_spaces_around_ids_are_trimmed_alike_in_trec_and_csv(tmp_path: Path, space: str) -> None:
    """NBSP was trimmed from CSV fields but kept in TREC ids, so the same id did not match (MRR 0.0 for 1.0)."""
    from evalcore import evaluate

    trec_run = write_text(tmp_path / "run.trec", f"q1{space} Q0 {space}d1 1 1.0{space} t\nq1 Q0 d2 2 0.5 t\n")
    csv_run = write_text(tmp_path / "run.csv", f"qid,docid,score\nq1{space},{space}d1,1.0{space}\nq1,d2,0.5\n")
    assert read_run(trec_run).to_pylist() == read_run(csv_run).to_pylist()
    assert read_run(trec_run)["qid"].to_pylist() == ["q1", "q1"]
    csv_qrels = write_text(tmp_path / "qrels.csv", f"qid,docid,relevance\n{space}q1,d1{space},1\n")
    trec_qrels = write_text(tmp_path / "qrels.txt", f"{space}q1 0 d1{space} 1{space}\n")
    assert read_qrels(trec_qrels).to_pylist() == read_qrels(csv_qrels).to_pylist()
    for run in (trec_run, csv_run):
        for qrels in (trec_qrels, csv_qrels):
            result = evaluate(run, qrels, ["mrr@10"])
            assert result["oblivious"].tolist() == [1.0], (run.name, qrels.name)


def test_trec_writer_refuses_ids_that_would_not_read_back(tmp_path: Path) -> None:
    path = tmp_path / "out.trec"
    with pytest.raises(ValueError, match="no whitespace"):
        write_run(run_table(["q\u00a0"], ["d"], [1.0]), path)
    assert not path.exists()


# ----------------------------------------------------------------------------- issue 16: what one input may cost

def multi_member_gzip(member_text: bytes, copies: int) -> bytes:
    """``copies`` gzip members of ``member_text`` back to back: gunzips to ``member_text * copies`` (how a 3 MB
    file inflates to 3 GB), built in milliseconds."""
    return gzip_bytes(member_text) * copies


def gzip_bytes(data: bytes) -> bytes:
    import gzip

    return gzip.compress(data, 9)


def test_a_gzip_bomb_of_blank_lines_stops_at_the_blank_line_limit(tmp_path: Path) -> None:
    """3 MB of .gz inflating to 3 GB of blank lines grew to 22 GB before the limit; now it stops in the first
    block read (4 MiB), naming the limit and the variable that raises it."""
    import resource
    import time

    path = tmp_path / "run.trec.gz"
    path.write_bytes(gzip_bytes(b"q1 Q0 d1 1 1.0 t\n") + multi_member_gzip(b"\n" * (10 << 20), 300))
    assert path.stat().st_size < 4 << 20
    before, start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, time.monotonic()
    with raises_at(path, 2, "more than 10,000 blank lines in a row", "TIEBREAK_MAX_BLANK_LINES"):
        read_run(path)
    assert time.monotonic() - start < 10
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200 << 10  # KiB: < 200 MB more


def test_an_endless_input_stops_at_the_line_length_limit(tmp_path: Path, monkeypatch) -> None:
    """--run /dev/zero read until the kernel killed it: now the first line past 64 MiB is refused."""
    monkeypatch.setenv("TIEBREAK_MAX_LINE_BYTES", str(8 << 20))  # a smaller limit: the test reads 8 MiB, not 64
    with raises_at(Path("/dev/zero"), 1, "more than 8,388,608 bytes in one line", "TIEBREAK_MAX_LINE_BYTES"):
        read_run("/dev/zero", fmt="trec")


@pytest.mark.parametrize("variable, value, content, line, needle", [
    ("TIEBREAK_MAX_INPUT_BYTES", "100", "".join(f"q1 Q0 d{i} 1 1.0 t\n" for i in range(10)), None,
     "more than 100 bytes after decompression"),
    ("TIEBREAK_MAX_INPUT_LINES", "3", "".join(f"q1 Q0 d{i} 1 1.0 t\n" for i in range(5)), 4, "more than 3 lines"),
    ("TIEBREAK_MAX_LINE_BYTES", "20", "q1 Q0 d1 1 1.0 t\nq1 Q0 " + "d" * 30 + " 2 0.5 t\nq1 Q0 d3 3 0.1 t\n", 2,
     "more than 20 bytes in one line"),
    ("TIEBREAK_MAX_BLANK_LINES", "3", "q1 Q0 d1 1 1.0 t\n\n\n \n\t\nq1 Q0 d2 2 0.5 t\n", 2,
     "more than 3 blank lines in a row"),
    ("TIEBREAK_MAX_BLANK_LINES", "3", "q1 Q0 d1 1 1.0 t\r\n\r\n\r\n\r\n\r\nq1 Q0 d2 2 0.5 t\r\n", 2,
     "more than 3 blank lines in a row"),
])
def test_each_limit_is_one_line_naming_its_variable(tmp_path: Path, monkeypatch, variable, value, content, line,
                                                      needle) -> None:
    path = write_text(tmp_path / "run.trec", content)
    assert read_run(path).num_rows >= 1  # within the default limits
    monkeypatch.setenv(variable, value)
    with raises_at(path, line, needle, f"raise {variable}"):
        read_run(path)
    monkeypatch.setenv(variable, "0")  # 0 = no limit
    assert read_run(path).num_rows >= 1


@pytest.mark.parametrize("setting", ["abc", "-1", "1e9", "²"])
def test_a_malformed_limit_setting_is_one_line(tmp_path: Path, monkeypatch, setting: str) -> None:
    path = write_text(tmp_path / "run.trec", "q1 Q0 d1 1 1.0 t\n")
    monkeypatch.setenv("TIEBREAK_MAX_INPUT_LINES", setting)
    with pytest.raises(InputError, match="TIEBREAK_MAX_INPUT_LINES must be a whole number"):
        read_run(path)


@settings(max_examples=150, deadline=None)
@given(pieces=st.lists(st.sampled_from(["", "", "", "\r", "  ", "q1 Q0 d1 1 1.0 t"]), min_size=1, max_size=40),
       limit=st.integers(1, 4), block=st.integers(1, 16), crlf=st.booleans())
def test_blank_runs_past_the_limit_are_always_found_at_a_run_that_exceeds_it(pieces, limit, block, crlf) -> None:
    """Whatever the block boundaries (the streaming check sees a run inside one block; the exact check on the
    split lines sees the rest): an error exactly when some run of blank lines is longer than the limit, and
    the line it names starts such a run."""
    import tempfile

    text = ("\r\n" if crlf else "\n").join(pieces) + "\n"
    blank = [not line.strip() for line in text.split("\n")[:-1]]
    runs = {}  # first line of a run -> its length
    start = None
    for number, is_blank in enumerate(blank + [False], 1):
        if is_blank and start is None:
            start = number
        elif not is_blank and start is not None:
            runs[start], start = number - start, None
    too_long = {first for first, length in runs.items() if length > limit}
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as patch:
        path = Path(folder) / "lines.txt"
        path.write_text(text, newline="")
        patch.setenv("TIEBREAK_MAX_BLANK_LINES", str(limit))
        patch.setattr(formats, "_READ_BLOCK", block)
        try:
            formats._read_lines(path)
        except InputError as error:
            assert "blank lines in a row" in str(error)
            assert error.line in too_long or any(first < error.line < first + runs[first] for first in too_long), \
                (error.line, runs)
        else:
            assert not too_long, runs


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


@pytest.mark.parametrize("layout", ["grouped", "ungrouped", "text"])
def test_a_query_past_the_per_query_row_limit_is_refused_on_every_read_path(tmp_path: Path, monkeypatch, layout):
    """A streamed parquet run is not bounded as a whole, but one query is evaluated at once: a constant qid
    column of a billion rows compresses to nothing and would be read into one block."""
    from evalcore import evaluate

    n = 3_000
    qids = ["small"] * 10 + ["huge"] * n + ["after"] * 10
    if layout == "ungrouped":
        qids = ["huge", "small"] * 10 + ["huge"] * (n - 10) + ["after"] * 10
    run = pa.table({"qid": qids, "docid": [f"d{i}" for i in range(len(qids))], "score": np.ones(len(qids))})
    path = tmp_path / ("run.trec" if layout == "text" else "run.parquet")
    if layout == "text":
        write_run(run, path)
    else:
        pq.write_table(run, path, row_group_size=500)
    monkeypatch.setenv("TIEBREAK_MAX_QUERY_ROWS", "2000")
    if layout == "ungrouped":
        monkeypatch.setattr(formats, "GROUP_IN_MEMORY_MAX_ROWS", 100)  # the out-of-core regroup
    for chunk_rows in (100, 1_000_000):  # cut inside the huge query, or one chunk for the file
        with pytest.raises(InputError) as error:
            evaluate(path, {"huge": {"d0": 1}}, ["ndcg@10"], chunk_rows=chunk_rows)
        message = str(error.value)
        assert message.startswith(f"{path}") and "query 'huge': more than 2,000 rows for one query" in message
        assert "TIEBREAK_MAX_QUERY_ROWS" in message
        if layout == "grouped":
            assert error.value.line == 11  # the huge query's first row
    monkeypatch.setenv("TIEBREAK_MAX_QUERY_ROWS", "0")
    assert len(evaluate(path, {"huge": {"d0": 1}}, ["ndcg@10"])) == 1
