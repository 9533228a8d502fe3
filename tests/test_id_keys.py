"""String-id hashes and the engine's duplicate check on streamed parquet chunks."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

import evalcore
from evalcore import id_keys


@given(st.lists(st.text(min_size=0, max_size=40), min_size=1, max_size=60))
def test_equal_strings_hash_equal_and_slices_agree(values):
    array = pa.array(values + values)
    hashes = id_keys.string_hashes(array)
    assert np.array_equal(hashes[: len(values)], hashes[len(values):])
    assert np.array_equal(id_keys.string_hashes(array.slice(1)), hashes[1:])
    assert np.array_equal(id_keys.string_hashes(array.cast(pa.large_string())), hashes)


@given(st.lists(st.text(alphabet=st.sampled_from("a\x00\x01\xff"), max_size=7), unique=True, min_size=1))
def test_ids_up_to_seven_bytes_never_collide(values):
    values = [v for v in values if len(v.encode()) <= 7] or [""]
    assert len(np.unique(id_keys.string_hashes(pa.array(values)))) == len(values)


def test_distinct_short_ids_get_distinct_hashes():
    values = [f"d{i}" for i in range(200_000)] + ["", "a", "ab", "doc-1", "doc-10", "doc-1\x00"]
    assert len(np.unique(id_keys.string_hashes(pa.array(values)))) == len(values)


@given(st.lists(st.text(alphabet=st.sampled_from("ab\x00\x7fé€😀"), max_size=16)
                | st.text(alphabet="\x00az\xff", min_size=7, max_size=8), min_size=1, max_size=60),
       st.integers(0, 3))
def test_byte_order_keys_follow_python_string_order(values, cut):
    """Keys sort like Python's code-point order (= UTF-8 byte order), equal exactly for equal strings,
    on a slice and on short (one-word) and long (ranked) ids alike."""
    array = pa.array(values + ["prefix"]).slice(cut % 2)
    strings = array.to_pylist()
    rows = np.arange(len(strings))[::-1]  # any row selection, here reversed
    keys = id_keys.byte_order_keys(array, rows)
    assert keys.dtype == np.uint64
    for i, a in enumerate(rows):
        for j, b in enumerate(rows):
            assert (keys[i] < keys[j]) == (strings[a] < strings[b])
            assert (keys[i] == keys[j]) == (strings[a] == strings[b])


@given(st.lists(st.binary(max_size=8), min_size=1, max_size=80), st.booleans())
def test_order_keys_are_exact_and_sort_like_bytes(values, sliced):
    """Where order_keys answers, its keys compare exactly like the byte strings; it declines (None) only
    for ids longer than 8 bytes or 8-byte ids next to NUL bytes."""
    texts = [v.decode("latin-1") for v in values] + ["zz"]  # code points < 256: byte order == text order
    array = pa.array(texts, pa.string())
    if sliced:
        array, texts = array.slice(1), texts[1:]
    keys = id_keys.order_keys(array)
    encoded = [t.encode() for t in texts]
    longest = max(map(len, encoded))
    if keys is None:
        assert longest > 8 or (longest == 8 and any(b"\x00" in e for e in encoded))
        return
    assert longest <= 8
    for i, a in enumerate(encoded):
        for j, b in enumerate(encoded):
            assert (keys[i] < keys[j]) == (a < b) and (keys[i] == keys[j]) == (a == b)


def test_byte_order_keys_leave_long_ids_to_arrow():
    array = pa.array(["x" * 65, "y"])
    assert id_keys.byte_order_keys(array, np.array([1])) is not None
    assert id_keys.byte_order_keys(array, np.array([0, 1])) is None


def _write_run(path, n_queries=40, depth=30, duplicate_at=None):
    rows = [(f"q{q:03d}", f"d{d}", float(d % 4)) for q in range(n_queries) for d in range(depth)]
    if duplicate_at is not None:
        q, d = divmod(duplicate_at, depth)
        rows[duplicate_at] = (f"q{q:03d}", f"d{(d + 1) % depth}", 0.0)
    pq.write_table(pa.Table.from_pandas(pd.DataFrame(rows, columns=["qid", "docid", "score"])), path)
    return rows


@pytest.mark.parametrize("equal_depth", [True, False])
def test_streamed_duplicate_is_reported_with_its_line(tmp_path, equal_depth):
    run = tmp_path / "run.parquet"
    _write_run(run, duplicate_at=1000)
    if not equal_depth:  # ragged queries take the general (global sort) path
        pq.write_table(pq.read_table(run).slice(5), run)
    qrels = {"q000": {"d1": 1}}
    with pytest.raises(evalcore.InputError) as error:
        evalcore.evaluate(run, qrels, ["ndcg@10"], chunk_rows=100)
    expected_line = 1002 - (0 if equal_depth else 5)  # the second occurrence: 0-based row 1001
    assert error.value.line == expected_line and "duplicate" in str(error.value)
    seen = set()  # the reported line is the first (qid, docid) pair that repeats, read back from the file
    for row, pair in enumerate(zip(*pq.read_table(run, columns=["qid", "docid"]).to_pydict().values())):
        if pair in seen:
            break
        seen.add(pair)
    assert error.value.line == row + 1


def test_hash_collisions_never_raise_a_false_duplicate(tmp_path, monkeypatch):
    run = tmp_path / "run.parquet"
    _write_run(run)
    qrels = {f"q{q:03d}": {"d3": 1, "d7": 2} for q in range(40)}
    expected = evalcore.evaluate(run, qrels, ["ndcg@10", "ap@10"])
    monkeypatch.setattr(id_keys, "string_hashes", lambda strings: np.zeros(len(strings), dtype=np.uint64))
    colliding = evalcore.evaluate(run, qrels, ["ndcg@10", "ap@10"])
    pd.testing.assert_frame_equal(expected, colliding)
