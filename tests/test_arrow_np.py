"""numpy <-> Arrow helpers that bypass pyarrow's pandas layer, and the CLI path that relies on them."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalcore import arrow_np

ROOT = Path(__file__).resolve().parents[1]
DTYPES = [np.int8, np.int32, np.int64, np.uint16, np.uint64, np.float32, np.float64, np.bool_]


@pytest.mark.parametrize("dtype", DTYPES)
@given(values=st.lists(st.integers(0, 100), max_size=50), cut=st.integers(0, 7))
def test_round_trip_and_slices_agree_with_pyarrow(dtype, values, cut):
    data = np.array(values, dtype=dtype)
    arrow = arrow_np.from_numpy(data)
    reference = pa.array(data)
    assert arrow.equals(reference)
    for part in (arrow, arrow.slice(min(cut, len(data)))):
        got = arrow_np.to_numpy(part)
        assert got.dtype == part.to_numpy(zero_copy_only=False).dtype
        assert np.array_equal(got, part.to_numpy(zero_copy_only=False))
    chunked = pa.chunked_array([reference, reference.slice(min(cut, len(data)))], type=reference.type)
    assert np.array_equal(arrow_np.to_numpy(chunked), chunked.to_numpy())


def test_nulls_strings_and_literals():
    with_nulls = pa.array([1, None, 3])
    assert arrow_np.to_numpy(with_nulls).tolist()[0] == 1  # falls back to pyarrow's conversion
    assert arrow_np.to_numpy_filled(with_nulls, -1).tolist() == [1, -1, 3]
    assert arrow_np.to_numpy_filled(pa.array([4, 5], pa.int32()), -1).tolist() == [4, 5]
    assert arrow_np.strings(["é", "", "ab"]).equals(pa.array(["é", "", "ab"]))
    assert arrow_np.strings([]).equals(pa.array([], pa.string()))
    assert arrow_np.scalar(-1, pa.int32()).equals(pa.scalar(-1, pa.int32()))
    assert arrow_np.indices([3, 1]).equals(pa.array([3, 1], pa.int64()))
    with pytest.raises(TypeError):
        arrow_np.from_numpy(np.array(["x"]))


def test_cli_evaluate_of_a_parquet_run_never_imports_pandas(tmp_path):
    """pyarrow imports pandas (0.3 s) on the first to_numpy / pa.array / literal; the CLI's parquet path avoids
    all of them. The run is streamed in several chunks (read-ahead thread) and ties are heavy."""
    rng = np.random.default_rng(0)
    n_queries, depth = 300, 40
    qids = np.repeat([f"q{i}" for i in range(n_queries)], depth)
    docids = np.array([f"d{j}" for _ in range(n_queries) for j in rng.permutation(depth)])
    run = pa.table({"qid": qids, "docid": docids, "score": rng.integers(0, 5, len(qids)).astype(float)})
    pq.write_table(run, tmp_path / "run.parquet", row_group_size=1000)
    qrels = pa.table({"qid": qids[::depth], "docid": docids[::depth], "relevance": np.ones(n_queries, dtype=np.int64)})
    pq.write_table(qrels, tmp_path / "qrels.parquet")
    code = ("import sys; from evalcore.cli import main; rc = main(); "
            "print('PANDAS', 'pandas' in sys.modules); sys.exit(rc)")
    argv = ["evaluate", "--run", str(tmp_path / "run.parquet"), "--qrels", str(tmp_path / "qrels.parquet"),
            "--per-query", str(tmp_path / "out.parquet")]
    done = subprocess.run([sys.executable, "-c", f"import sys; sys.argv = ['evalcore'] + {argv!r}; {code}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "PANDAS False" in done.stdout, done.stdout
    assert pq.read_table(tmp_path / "out.parquet").num_rows == 3 * n_queries
