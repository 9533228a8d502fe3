"""Compare with a reported number, in a browser: a first visitor opens the worked example with one click, then
uploads the shipped MiniLM fp32 runs as their own and types two reported numbers. The counts of explained
numbers the page states are computed here from the shipped per-query rows with pandas: a number is explained
exactly when it lies in the run's tie range [mean min, mean max] (every policy's value lies inside it), within
half a unit of its last decimal."""
from __future__ import annotations

import shutil

import pandas as pd
import pyarrow.parquet as pq
import pytest

import upload_data
from test_browser import (assert_no_exception, context, open_view, playwright_browser,  # noqa: F401
                          screenshot, served, wait_idle)
from test_upload import evaluate

pytestmark = pytest.mark.browser
MINILM = "tiebreak-run/all-MiniLM-L6-v2"


@pytest.fixture(scope="module")
def explain_server(tmp_path_factory):
    """Two tasks' inputs and rows, and the shipped raw runs the worked example re-scores."""
    data_dir = upload_data.write_two_tasks(tmp_path_factory.mktemp("explain-e2e-data"))
    shutil.copytree(upload_data.SHIPPED / "runs", data_dir / "runs")
    with served(data_dir, tmp_path_factory.mktemp("explain-e2e-log") / "streamlit.log") as base:
        yield base, data_dir


def shipped_means() -> pd.DataFrame:
    frames = []
    for task in upload_data.TASKS:
        frame = pq.read_table(upload_data.SHIPPED / "real" / "query_metrics" / f"rar-b_{task}.parquet").to_pandas()
        for column in ("system", "setting", "precision", "metric", "tie_policy"):
            frame[column] = frame[column].astype(str)
        frames.append(frame[(frame["system"] == MINILM) & (frame["setting"] == "full-pooled")
                            & (frame["instruction"] == False) & (frame["metric"] == "ndcg@10")  # noqa: E712
                            & (frame["tie_policy"] == "docid-desc")])
    return pd.concat(frames).groupby(["task", "precision"])[["oblivious", "min", "max"]].mean()


def explained_captions(page) -> list[str]:
    """The "N of M reported numbers explained" lines, top to bottom (the comparison's above the example's)."""
    captions = [t for t in page.get_by_test_id("stCaptionContainer").all_inner_texts() if "reported numbers" in t]
    assert captions, page.inner_text("body")[-2000:]
    return captions


def test_worked_example_then_typed_numbers_for_an_upload(explain_server, context, tmp_path):  # noqa: F811
    base, _ = explain_server
    means = shipped_means()
    page = open_view(context, f"{base}/evaluate")
    assert_no_exception(page)
    page.get_by_role("button", name="Open the worked example (a shipped run)").click()
    wait_idle(page, timeout=180_000)
    assert_no_exception(page)
    explained = sum(int(means.loc[(task, "fp32"), "min"] - 1e-9 <= means.loc[(task, precision), "oblivious"]
                        <= means.loc[(task, "fp32"), "max"] + 1e-9)
                    for task in upload_data.TASKS for precision in ("fp32", "bf16"))
    (caption,) = explained_captions(page)
    assert caption.startswith(f"{explained} of 4 reported numbers explained by ties"), caption
    assert explained < 4  # ARCChallenge's bf16 number lies outside the fp32 run's tie range
    screenshot(page, "e2e_evaluate_worked_example")

    runs = []
    for task in upload_data.TASKS:
        runs.append(tmp_path / f"{task}.parquet")
        shutil.copy(upload_data.shipped_run(task), runs[-1])
    evaluate(page, runs)
    assert_no_exception(page)
    page.get_by_label("Metric").first.wait_for()
    typed = page.get_by_label("Reported numbers")
    typed.scroll_into_view_if_needed()
    fp32 = means.loc[("WinoGrande", "fp32"), "oblivious"]
    typed.fill(f"WinoGrande={fp32:.4f}\nWinoGrande=0.9")
    typed.press("Control+Enter")
    wait_idle(page, timeout=120_000)
    assert_no_exception(page)
    assert means.loc[("WinoGrande", "fp32"), "max"] < 0.9 - 0.05  # the second number is outside
    compared, example = explained_captions(page)  # the example stays open in the session, below
    assert compared.startswith("1 of 2 reported numbers explained by ties"), compared
    assert example.startswith(f"{explained} of 4 "), example
    screenshot(page, "e2e_evaluate_compare")
