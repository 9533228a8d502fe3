"""What one input may cost (evalcore.formats.limits): each TIEBREAK_MAX_* limit stops a bomb or an endless input
while it is read, as one line naming its variable."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.errors import InputError
from evalcore.formats import limits, read_run, readers, write_run
from evalcore.formats.text import read_lines
from formats_data import raises_at, write_text


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
        patch.setattr(limits, "_READ_BLOCK", block)
        try:
            read_lines(path)
        except InputError as error:
            assert "blank lines in a row" in str(error)
            assert error.line in too_long or any(first < error.line < first + runs[first] for first in too_long), \
                (error.line, runs)
        else:
            assert not too_long, runs


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
        monkeypatch.setattr(readers, "GROUP_IN_MEMORY_MAX_ROWS", 100)  # the out-of-core regroup
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
