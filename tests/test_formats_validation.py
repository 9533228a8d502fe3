"""Whole-table checks (evalcore.formats.validation): duplicate pairs, conflicting grades, CRUMB MaxP, in-memory
tables."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalcore.errors import InputError
from evalcore.formats import (
    RUN_SCHEMA,
    iter_run_chunks,
    read_qrels,
    read_run,
    validate_qrels,
    validate_run,
    validation,
    write_run,
)
from evalcore.id_keys import string_hashes
from formats_data import raises_at, run_table, write_text


def test_conflicting_qrels_grades(tmp_path: Path) -> None:
    path = write_text(tmp_path / "bad.qrels", "1 0 a 1\n1 0 b 0\n1 0 a 2\n")
    with raises_at(path, 3, "conflicting grades", "line 1"):
        read_qrels(path)


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


def test_validate_run_and_qrels_on_in_memory_tables() -> None:
    frame = pd.DataFrame({"query-id": [1, 1], "corpus-id": ["a", "b"], "score": [1, 2]})
    run = validate_run(frame)
    assert run.schema == RUN_SCHEMA and run.column("qid").to_pylist() == ["1", "1"]
    with pytest.raises(InputError) as info:
        validate_run(pd.DataFrame({"qid": ["q", "q", "q"], "docid": ["a", "b", "c"],
                                   "score": [1.0, float("nan"), 2.0]}), "frame")
    assert (info.value.path, info.value.line) == ("frame", 2)
    with pytest.raises(InputError) as info:
        validate_qrels(pd.DataFrame({"qid": ["q"], "docid": ["a"], "relevance": [-2]}), "qrels")
    assert (info.value.path, info.value.line) == ("qrels", 1)


def test_cheap_duplicate_check_sees_ids_that_differ_only_late_or_by_length() -> None:
    base = "x" * 20
    docids = [base + "a", base + "b", base, base + "\x00", "", "abcdefgh", "abcdefghi", "abcdefgh"]
    qids = ["q"] * len(docids)
    table = run_table(qids, docids, [1.0] * len(docids))
    assert validation._has_repeated_pairs(table)  # the last docid repeats the sixth
    assert not validation._has_repeated_pairs(table.slice(0, 7))
    hashes = string_hashes(pa.array(docids[:7]))
    assert len(set(hashes.tolist())) == 7
