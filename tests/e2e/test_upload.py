"""Evaluate your run, in a browser: a visitor downloads the task inputs, uploads the shipped MiniLM
fp32 runs as their own, and sees them on the board — every per-query value equal to the shipped MiniLM rows,
its G and rank in the Leaderboard and Compare equal to MiniLM's; a bad upload is one message naming the file
and line, never a traceback; the data folder is byte-identical afterwards."""
from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import upload_data
from test_browser import (assert_no_exception, context, open_view, playwright_browser,  # noqa: F401
                          screenshot, served, wait_idle)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def upload_server(tmp_path_factory):
    data_dir = upload_data.write_two_tasks(tmp_path_factory.mktemp("upload-e2e-data"))
    with served(data_dir, tmp_path_factory.mktemp("upload-e2e-log") / "streamlit.log") as base:
        yield base, data_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list[Path]:
    """The shipped MiniLM fp32 runs, named by their task as a visitor's upload would be."""
    folder = tmp_path_factory.mktemp("runs")
    paths = []
    for task in upload_data.TASKS:
        paths.append(folder / f"{task}.parquet")
        shutil.copy(upload_data.shipped_run(task), paths[-1])
    return paths


def evaluate(page, files, name: str = "mini") -> None:
    page.get_by_test_id("stMainBlockContainer").get_by_text("Full (pooled candidates)", exact=True).click()
    wait_idle(page)
    page.get_by_label("Name of your run").fill(name)
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files([str(p) for p in files])
    page.wait_for_timeout(500)
    page.get_by_role("button", name="Evaluate").click()
    wait_idle(page, timeout=180_000)


def download(page, label: str) -> bytes:
    button = page.get_by_role("button", name=label)
    button.scroll_into_view_if_needed()
    with page.expect_download(timeout=60_000) as got:
        button.click()
    return Path(got.value.path()).read_bytes()


def test_shipped_minilm_runs_uploaded_equal_the_shipped_rows(upload_server, context, runs):  # noqa: F811
    from evalcore.store import Condition, Store

    base, data_dir = upload_server
    before = upload_data.folder_state(data_dir)
    page = open_view(context, f"{base}/evaluate")
    assert_no_exception(page)
    evaluate(page, [])  # nothing chosen: one message, not an error page
    assert "choose at least one run file" in page.get_by_test_id("stAlert").first.inner_text()

    archive = zipfile.ZipFile(io.BytesIO(download(page, "Download the Full (pooled candidates) inputs (zip)")))
    names = sorted(archive.namelist())
    assert names == sorted([f"rar-b-full-pooled/{t}/{f}" for t in upload_data.TASKS
                            for f in ("candidates.jsonl", "queries.jsonl", "qrels.json")]
                           + ["rar-b-full-pooled/README.txt"])
    queries = [json.loads(line) for line in archive.read("rar-b-full-pooled/WinoGrande/queries.jsonl").splitlines()]
    shipped_qids = set(pq.read_table(upload_data.SHIPPED / "tasks" / "rar-b" / "queries.parquet",
                                     filters=[("task", "==", "WinoGrande")]).column("qid").to_pylist())
    assert {q["qid"] for q in queries} == shipped_qids and all(q["text"] for q in queries)

    evaluate(page, runs)
    assert_no_exception(page)
    text = page.inner_text("body")
    assert "Evaluated mini (your run)" in text, text[:2000]
    assert page.get_by_test_id("stFileUploaderFile").count() == 0, "the widget lets go of the uploaded bytes"
    screenshot(page, "e2e_evaluate_result")
    rows = pq.read_table(io.BytesIO(download(page, "Per-query results (parquet)"))).to_pandas()
    reference = pq.read_table(data_dir / "real" / "query_metrics").to_pandas()
    reference = reference[(reference["system"] == upload_data.MINILM) & (reference["setting"] == "full-pooled")
                          & (reference["precision"] == "fp32") & (~reference["instruction"].astype(bool))]
    key = ["task", "qid", "metric", "tie_policy"]
    merged = rows.merge(reference, on=key, suffixes=("", "_shipped"), validate="one_to_one")
    assert len(merged) == len(rows) == len(reference) > 7000
    for column in ("oblivious", "expected", "min", "max", "n_candidates", "tied_at_cutoff"):
        assert (merged[column] == merged[f"{column}_shipped"]).all(), column

    board = Store(data_dir).leaderboard(Condition("rar-b", "ndcg@10", "full-pooled", False, "fp32", "docid-desc"),
                                        uncertainty=False)
    g_minilm = float(board.ranked.set_index("system").loc[upload_data.MINILM, "G"])
    page.get_by_role("button", name="Show in the Leaderboard").click()
    wait_idle(page)
    assert_no_exception(page)
    line = page.get_by_test_id("stAlert").filter(has_text="Your run").first.inner_text()
    assert f"G = {g_minilm:.4f}" in line, line  # the same G as the shipped MiniLM rows give
    screenshot(page, "e2e_evaluate_leaderboard")
    page.get_by_test_id("stSidebarNav").get_by_text("Evaluate your run").click()  # still this session
    wait_idle(page)
    page.get_by_role("button", name="Compare with the top system").click()
    wait_idle(page)
    assert_no_exception(page)
    labels = page.get_by_test_id("stMetricLabel").all_inner_texts()
    values = page.get_by_test_id("stMetricValue").all_inner_texts()
    shown = dict(zip(labels, values))
    assert shown.get("G (oblivious) · mini (your run)") == f"{g_minilm:.4f}", shown
    screenshot(page, "e2e_evaluate_compare")
    assert upload_data.folder_state(data_dir) == before


def test_a_bad_upload_is_one_message_in_the_browser(upload_server, context, tmp_path):  # noqa: F811
    base, data_dir = upload_server
    before = upload_data.folder_state(data_dir)
    bad = tmp_path / "WinoGrande.trec"
    bad.write_bytes(b"q1 Q0 d1 1 0.5 x\nq1 Q0 d2 1 NaN x\n")
    arc = tmp_path / "ARCChallenge.parquet"
    shutil.copy(upload_data.shipped_run("ARCChallenge"), arc)
    page = open_view(context, f"{base}/evaluate")
    evaluate(page, [bad, arc], name="bad")
    assert_no_exception(page)
    alerts = page.get_by_test_id("stAlert").all_inner_texts()
    refusals = [a for a in alerts if "Not evaluated" in a]
    assert len(refusals) == 1 and "WinoGrande.trec:" in refusals[0], alerts
    assert "Where it lands" not in page.inner_text("body")
    screenshot(page, "e2e_evaluate_bad_upload")
    assert upload_data.folder_state(data_dir) == before
