"""Uploads ("Bad and hostile uploads"): the "Evaluate your run" view takes untrusted
files. Every bad or hostile upload — a wrong column count, a non-finite score, a duplicate (qid, docid), an
unknown qid or docid, a missing task, undecodable, oversized, inflating or mangled bytes, too many rows, too
slow — must come back as ONE line naming the file (as uploaded) and the line where there is one, shown as a
message (never a traceback), and leave the data folder byte-identical, with no scratch file left behind.
Uploads live in the session only: another session never sees them, and nothing is written unless the
operator opted in (``TIEBREAK_ALLOW_INGEST``).

The checks go through :func:`ui.upload.evaluate` — the function the view's form calls, with its real child
process — and through the page itself (AppTest, the file widget handing over the bytes).
"""
from __future__ import annotations

import gzip
import os
import re
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

import upload_data
from test_cli_fuzz import BAD_SCORES, mutated_bytes
from ui import notices, upload

ROOT = Path(__file__).resolve().parents[2]
FUZZ = settings(max_examples=int(os.environ.get("TIEBREAK_UPLOAD_FUZZ_EXAMPLES", "6")), deadline=None,
                suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return upload_data.write_two_tasks(tmp_path_factory.mktemp("upload-data"))


@pytest.fixture(scope="module")
def ids(folder):
    """(qids, docids) of WinoGrande in the folder's task inputs."""
    queries = pq.read_table(folder / "tasks" / "rar-b" / "queries.parquet").to_pandas()
    documents = pq.read_table(folder / "tasks" / "rar-b" / "documents.parquet").to_pandas()
    return (queries.loc[queries["task"] == "WinoGrande", "qid"].tolist(),
            documents.loc[documents["task"] == "WinoGrande", "docid"].tolist())


@pytest.fixture(scope="module")
def base(folder):
    from evalcore.store import Store

    return Store(folder)


def request(name: str = "probe") -> upload.Request:
    return upload.Request(name, "rar-b", "full-pooled", False, "fp32")


def good(task: str) -> tuple[str, bytes]:
    return f"{task}.parquet", upload_data.shipped_run(task).read_bytes()


def trec(lines: list[str]) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


def scratch_left() -> list[str]:
    parent = upload._scratch_parent()
    import tempfile

    parent = parent or tempfile.gettempdir()
    return sorted(p.name for p in Path(parent).glob("tiebreak-upload-*"))


def refused(uploads, folder, base, **limits) -> str:
    """The one-line message of an upload that must be refused; asserts nothing was written anywhere."""
    before, scratch = upload_data.folder_state(folder), scratch_left()
    saved = upload.LIMITS
    upload.LIMITS = replace(saved, **limits) if limits else saved
    try:
        with pytest.raises(upload.UploadError) as caught:
            upload.evaluate(request(), uploads, folder, base)
    finally:
        upload.LIMITS = saved
    message = str(caught.value)
    assert message and "\n" not in message and "Traceback" not in message, message
    assert str(folder) not in message  # the server's paths are not shown to a visitor
    assert upload_data.folder_state(folder) == before
    assert scratch_left() == scratch
    return message


def test_shipped_runs_uploaded_reproduce_the_shipped_minilm_rows(folder, base):
    """The control: a good upload is evaluated (so a refusal below is about the bad file, not the harness), and
    its rows equal the shipped MiniLM fp32 rows value for value; still nothing is written."""
    before = upload_data.folder_state(folder)
    held = upload.evaluate(request("mini"), [good("WinoGrande"), good("ARCChallenge")], folder, base)
    assert upload_data.folder_state(folder) == before
    rows = held.frame()
    shipped = pa.concat_tables([pq.read_table(folder / "real" / "query_metrics" / f"rar-b_{t}.parquet")
                                for t in upload_data.TASKS]).to_pandas()
    shipped = shipped[(shipped["system"] == upload_data.MINILM) & (shipped["setting"] == "full-pooled")
                      & (shipped["precision"] == "fp32") & (shipped["instruction"] == False)]  # noqa: E712
    key = ["task", "qid", "metric", "tie_policy"]
    merged = rows.merge(shipped, on=key, suffixes=("", "_shipped"), validate="one_to_one")
    assert len(merged) == len(rows) == len(shipped) > 7000
    for column in ("oblivious", "expected", "min", "max", "n_candidates", "tied_at_cutoff"):
        assert (merged[column] == merged[f"{column}_shipped"]).all(), column
    assert set(rows["system"]) == {"mini (your run)"}


def test_bad_rows_are_one_line_naming_file_and_line(folder, base, ids):
    qids, docids = ids
    ok = [f"{qids[0]} Q0 {docids[0]} 1 0.5 x", f"{qids[0]} Q0 {docids[1]} 2 0.25 x"]
    cases = {
        "wrong column count": (ok + [f"{qids[1]} Q0 {docids[0]} 0.5"], 3, "column"),
        "duplicate pair": (ok + [f"{qids[0]} Q0 {docids[0]} 3 0.1 x"], 3, "duplicate"),
        "unknown qid": (ok + [f"no-such-query Q0 {docids[0]} 1 0.5 x"], 3, "unknown qid"),
        "unknown docid": (ok + [f"{qids[1]} Q0 no-such-doc 1 0.5 x"], 3, "unknown docid"),
    }
    cases.update({f"score {text}": (ok + [f"{qids[1]} Q0 {docids[0]} 1 {text} x"], 3, expected)
                  for text, expected in list(BAD_SCORES.items())[:3]})
    for what, (lines, line, expected) in cases.items():
        message = refused([("WinoGrande.trec", trec(lines)), good("ARCChallenge")], folder, base)
        assert message.startswith(f"WinoGrande.trec:{line}:"), (what, message)
        assert expected in message.lower(), (what, message)


def test_missing_unknown_and_undecodable_files(folder, base, ids):
    qids, docids = ids
    message = refused([good("WinoGrande")], folder, base)
    assert "missing task" in message and "ARCChallenge" in message
    message = refused([good("WinoGrande"), good("ARCChallenge"), ("Unheard.trec", b"q Q0 d 1 1 x\n")], folder, base)
    assert message.startswith("Unheard.trec") and "not a task" in message
    bad_bytes = trec([f"{qids[0]} Q0 {docids[0]} 1 0.5 x"]) + b"\xff\xfe\x00 Q0 d 1 1 x\n"
    message = refused([("WinoGrande.trec", bad_bytes), good("ARCChallenge")], folder, base)
    assert message.startswith("WinoGrande.trec:2:"), message
    message = refused([("WinoGrande.trec", b""), good("ARCChallenge")], folder, base)
    assert message.startswith("WinoGrande.trec"), message
    message = refused([], folder, base)
    assert "at least one" in message


def test_a_table_with_a_task_column_names_the_line_of_an_unknown_task(folder, base, ids):
    qids, docids = ids
    body = "task,qid,docid,score\n" + f"WinoGrande,{qids[0]},{docids[0]},0.5\n" + f"Atlantis,{qids[0]},{docids[1]},0.2\n"
    message = refused([("run.csv", body.encode())], folder, base)
    assert message.startswith("run.csv:3:") and "unknown task" in message, message


def test_mangled_parquet_and_inflating_gzip(folder, base):
    data = bytearray(upload_data.shipped_run("WinoGrande").read_bytes())
    data[-200:-8] = bytes(192)  # the footer
    message = refused([("WinoGrande.parquet", bytes(data)), good("ARCChallenge")], folder, base)
    assert message.startswith("WinoGrande.parquet"), message
    bomb = gzip.compress(b"\n" * (300 << 20), compresslevel=9)  # 300 MB of line ends in ~300 kB
    message = refused([("WinoGrande.trec.gz", bomb), good("ARCChallenge")], folder, base)
    assert message.startswith("WinoGrande.trec.gz"), message


def test_size_rows_files_and_time_are_bounded(folder, base):
    message = refused([good("WinoGrande"), good("ARCChallenge")], folder, base, rows=1000)
    assert "too many rows" in message and "1,000" in message, message
    assert "TIEBREAK_" not in message  # a visitor cannot raise the server's limits
    message = refused([good("WinoGrande")] * 3, folder, base, files=2)
    assert "at most 2" in message
    cap = upload.LIMITS.upload_mb << 20
    message = refused([("WinoGrande.trec", b" " * (cap + 1)), good("ARCChallenge")], folder, base)
    assert message.startswith("WinoGrande.trec") and f"{upload.LIMITS.upload_mb} MB" in message
    saved = upload.STARTUP_SECONDS
    upload.STARTUP_SECONDS = 0
    try:
        message = refused([good("WinoGrande"), good("ARCChallenge")], folder, base, seconds=0.2)  # < start-up
    finally:
        upload.STARTUP_SECONDS = saved
    assert "longer than 0.2 s" in message


def test_hostile_file_names_are_shown_as_given_and_write_nothing(folder, base):
    for name in ("../../WinoGrande.trec", "WinoGrande.trec\n; rm -rf /", "/etc/passwd"):
        message = refused([(name, b"q Q0 d 1 1 x\n"), good("ARCChallenge")], folder, base)
        assert "\n" not in message


@FUZZ
@given(data=hs.data())
def test_fuzzed_runs_give_a_result_or_one_line(folder, base, ids, data):
    """test_cli_fuzz's byte mutations of a valid TREC run, uploaded: either evaluated, or one line naming the
    file; never a traceback, never a write."""
    qids, docids = ids
    original = trec([f"{q} Q0 {d} {r} {s} x" for r, (q, d, s) in enumerate(
        [(qids[0], docids[0], 0.5), (qids[0], docids[1], 0.25), (qids[1], docids[2], 1.0)], 1)])
    mutated = data.draw(mutated_bytes(original))
    before, scratch = upload_data.folder_state(folder), scratch_left()
    try:
        upload.evaluate(request(), [("WinoGrande.trec", mutated), good("ARCChallenge")], folder, base)
    except upload.UploadError as exc:
        message = str(exc)
        assert message.startswith("WinoGrande.trec") and "\n" not in message, message
    assert upload_data.folder_state(folder) == before
    assert scratch_left() == scratch


# -------------------------------------------------------------------------------------------- the page
@pytest.fixture
def page(monkeypatch, folder):
    """``page(files)`` -> an AppTest session on the Evaluate view whose file widget holds ``files``."""
    import streamlit
    from streamlit.testing.v1 import AppTest

    from ui.navigation import MAIN_SCRIPT, PAGES_DIR

    monkeypatch.setenv("TIEBREAK_DATA", str(folder))
    held: list = []
    real = streamlit.file_uploader

    def file_uploader(*args, **kwargs):
        real(*args, **kwargs)
        return list(held)

    monkeypatch.setattr(streamlit, "file_uploader", file_uploader)

    def _open(files=(), name="mini", data_dir=None, setting="full-pooled"):
        if data_dir is not None:
            monkeypatch.setenv("TIEBREAK_DATA", str(data_dir))
        held[:] = [upload_data.FakeUpload(n, d) for n, d in files]
        at = AppTest.from_file(str(MAIN_SCRIPT), default_timeout=120)
        at.switch_page(os.path.relpath(PAGES_DIR / "evaluate.py", MAIN_SCRIPT.parent))
        at.run()
        at.radio(key="ev_setting").set_value(setting).run()
        at.text_input(key="ev_name").input(name)
        next(b for b in at.button if "FormSubmitter" in (b.key or "")).click().run()
        return at

    return _open


def test_a_bad_upload_in_the_page_is_one_message_and_nothing_else(page, folder):
    before = upload_data.folder_state(folder)
    at = page([("WinoGrande.trec", b"q1 Q0 d1 1 nan x\n"), good("ARCChallenge")])
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "WinoGrande.trec:1:" in errors[0], errors
    assert not at.success and "3 · Where it lands" not in [s.value for s in at.subheader]
    assert upload_data.folder_state(folder) == before


def test_a_good_upload_joins_this_sessions_views_only(page, folder):
    from streamlit.testing.v1 import AppTest

    from ui.navigation import MAIN_SCRIPT, PAGES_DIR

    before = upload_data.folder_state(folder)
    at = page([good("WinoGrande"), good("ARCChallenge")])
    assert not at.exception and not at.error, [e.value for e in at.error]
    lines = [s.value for s in at.success]
    assert any("on these tasks ranks" in line and "Your run **mini** " in line for line in lines), lines  # named once
    assert "Add to the leaderboard" not in [b.label for b in at.button]  # no opt-in: no way to keep it
    at.button(key="ev_go_board").click().run()  # "Show in the Leaderboard": its condition, this session
    assert [t.value for t in at.title] == ["Leaderboard"] and not at.exception
    assert any("Your run" in line and "on these tasks ranks" in line for line in [s.value for s in at.success])
    shown = [str(cell) for frame in at.dataframe for cell in frame.value.values.ravel()]
    assert any("mini (your run)" in cell for cell in shown)
    at.switch_page(os.path.relpath(PAGES_DIR / "ties-and-precision.py", MAIN_SCRIPT.parent)).run()
    shown = [str(cell) for frame in at.dataframe for cell in frame.value.values.ravel()]
    assert any("mini (your run)" in cell for cell in shown), "its tie statistics"
    at.switch_page(os.path.relpath(PAGES_DIR / "evaluate.py", MAIN_SCRIPT.parent)).run()
    at.button(key="ev_go_compare").click().run()  # "Compare with the top system"
    assert [t.value for t in at.title] == ["Compare"] and not at.exception
    assert "mini (your run)" in at.multiselect(key="sys").value
    assert any("mini (your run)" in m.label for m in at.metric)
    at.switch_page(os.path.relpath(PAGES_DIR / "leaderboard.py", MAIN_SCRIPT.parent)).run()
    at.sidebar.radio(key="setting").set_value("mcr").run()  # the visitor looks elsewhere ...
    assert not any("on these tasks ranks" in s.value for s in at.success)
    assert any("Show its condition" in i.value for i in at.info)
    at.sidebar.button(key="tb_candidate_condition").click().run()  # ... and the sidebar box brings them back
    assert any("Your run" in s.value and "on these tasks ranks" in s.value for s in at.success)
    other = AppTest.from_file(str(MAIN_SCRIPT), default_timeout=120).run()  # another visitor
    cells = [str(cell) for frame in other.dataframe for cell in frame.value.values.ravel()]
    assert cells and not any("(your run)" in cell for cell in cells)
    assert upload_data.folder_state(folder) == before


def test_the_view_states_its_limits_and_the_upload_cap_is_configured():
    import tomllib

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    cap = config["server"]["maxUploadSize"]
    assert 1 <= cap <= 200
    env = dict(line.split("=", 1) for line in (ROOT / "deploy" / "production.env").read_text().splitlines()
               if line and not line.startswith("#"))
    deployed = int(env["STREAMLIT_SERVER_MAX_UPLOAD_SIZE"])
    nginx = re.search(r"client_max_body_size\s+(\d+)m;", (ROOT / "deploy" / "nginx" / "tiebreak.conf").read_text())
    assert nginx and int(nginx.group(1)) == deployed  # the proxy lets through what the server accepts
    sentence = notices.limits_sentence(upload.LIMITS)
    for number in (f"{upload.LIMITS.rows:,}", f"{upload.LIMITS.seconds} s", f"{upload.LIMITS.files} files"):
        assert number in sentence


def test_keeping_a_run_needs_the_operators_opt_in_and_goes_through_ingest(page, monkeypatch, tmp_path):
    """Without TIEBREAK_ALLOW_INGEST the view offers no way to keep an upload and upload.ingest refuses with
    nothing written; with it, "Add to the leaderboard" writes one ingested file (+ its derived sums) holding the
    rows under the visitor's name, and the same run again is refused as a duplicate, writing nothing."""
    import pandas as pd

    from evalcore.store import Store

    folder = upload_data.write_two_tasks(tmp_path / "data")  # this test writes: a folder of its own
    monkeypatch.delenv("TIEBREAK_ALLOW_INGEST", raising=False)
    before = upload_data.folder_state(folder)
    held = upload.evaluate(request("kept"), [good("WinoGrande"), good("ARCChallenge")], folder, Store(folder))
    with pytest.raises(upload.UploadError):
        upload.ingest(held, folder)
    assert upload_data.folder_state(folder) == before

    monkeypatch.setenv("TIEBREAK_ALLOW_INGEST", "1")
    at = page([good("WinoGrande"), good("ARCChallenge")], name="kept", data_dir=folder)
    at.button(key="ev_ingest").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("Added as" in s.value for s in at.success)
    after = upload_data.folder_state(folder)
    added = sorted(set(after) - set(before))
    assert len(added) == 2 and added[0].startswith("ingested/_derived/") and added[1].startswith("ingested/")
    assert all(after[name] == before[name] for name in before)  # nothing else changed
    written = pd.read_parquet(folder / added[1])
    assert set(written["system"]) == {"kept"} and len(written) == held.rows.num_rows
    key = ["task", "qid", "metric", "tie_policy"]
    merged = written.merge(held.frame(), on=key, suffixes=("", "_held"), validate="one_to_one")
    assert (merged["expected"] == merged["expected_held"]).all() and (merged["min"] == merged["min_held"]).all()

    at = page([good("WinoGrande"), good("ARCChallenge")], name="kept", data_dir=folder)  # the same run, again
    at.button(key="ev_ingest").click().run()
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "already in the data folder" in errors[0] and str(folder) not in errors[0], errors
    assert upload_data.folder_state(folder) == after


def test_a_constant_run_on_the_shipped_data_is_expected_to_score_one_over_the_candidates(page):
    """The check, through the page on the shipped data: a constant-score MCR run (one CSV with a task
    column, every candidate 0.5) has G_expected = the geometric mean over tasks of the mean of 1 / (number of
    candidates) — computed here from the shipped candidates — and its oblivious G moves with the tie policy."""
    import numpy as np

    from ui.navigation import MAIN_SCRIPT, PAGES_DIR

    candidates = pq.read_table(ROOT / "data" / "tasks" / "rar-b" / "candidates.parquet").to_pandas()
    per_query = candidates.groupby(["task", "qid"]).size()
    expected = float(np.exp(np.log((1.0 / per_query).groupby(level="task").mean()).mean()))
    body = "task,qid,docid,score\n" + "".join(f"{t},{q},{d},0.5\n" for t, q, d in
                                               candidates[["task", "qid", "docid"]].itertuples(index=False))
    at = page([("constant.csv", body.encode())], name="flat", data_dir=ROOT / "data", setting="mcr")
    assert not at.exception and not at.error, [e.value for e in at.error]
    at.button(key="ev_go_board").click().run()  # the Leaderboard under the run's condition
    at.switch_page(os.path.relpath(PAGES_DIR / "leaderboard.py", MAIN_SCRIPT.parent)).run()  # (AppTest stays there)
    line = next(s.value for s in at.success if "Your run" in s.value)
    assert f"expected {expected:.4f}" in line, (expected, line)
    at.selectbox(key="sort").set_value("mean").run()  # G is 0 under both policies (a task at 0): compare means
    means = {}
    for policy in ("docid-desc", "input-order"):
        at.sidebar.selectbox(key="ties").set_value(policy).run()
        line = next(s.value for s in at.success if "Your run" in s.value)
        found = re.search(r"by mean = \*\*([0-9.]+)\*\* \(expected ([0-9.]+)", line)
        assert found, line
        means[policy] = found.groups()
    assert means["docid-desc"][1] == means["input-order"][1]  # the expected value ignores the tie policy
    assert means["docid-desc"][0] != means["input-order"][0], means  # the oblivious one does not


def test_the_upload_reports_its_progress_while_it_runs(folder, base):
    """The worker's progress lines reach the caller as (fraction, words), on the caller's thread, rising to the
    last task; the rows are the same as without a listener, and no progress line is left in what is logged."""
    import threading

    seen: list[tuple[float, str, bool]] = []

    def listen(words):
        seen.append((words[0], words[1], threading.current_thread() is threading.main_thread()))

    held = upload.evaluate(request("mini"), [good("WinoGrande"), good("ARCChallenge")], folder, base,
                           on_progress=listen)
    assert held.rows.num_rows > 7000
    assert seen and all(0.0 <= fraction <= 1.0 and main for fraction, _, main in seen)
    assert [fraction for fraction, _, _ in seen] == sorted(fraction for fraction, _, _ in seen)
    assert any("task 2 of 2" in words for _, words, _ in seen) and any("queries" in words for _, words, _ in seen)


@pytest.mark.parametrize("states, fraction, words", [
    ({}, None, None),
    ({"candidate": {"done": 0, "total": 4}}, 0.0, "task 1 of 4"),
    ({"candidate": {"done": 1, "total": 4}, "evaluate": {"done": 50, "total": 100}}, 0.375,
     "task 2 of 4 · 50 of 100 queries"),
    ({"candidate": {"done": 4, "total": 4}, "evaluate": {"done": 100, "total": 100}}, 1.0, "task 4 of 4"),
    ({"evaluate": {"done": 1267, "total": 1267}}, 1.0, "1,267 of 1,267 queries"),
])
def test_progress_words(states, fraction, words):
    found = upload.progress_words(states)
    if fraction is None:
        assert found is None
    else:
        assert found[0] == pytest.approx(fraction) and words in found[1]
