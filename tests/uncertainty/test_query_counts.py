"""data/query_counts.json: each declared task's number of queries, checked against its sources — the mteb
package's descriptive statistics (read as files, without importing mteb), the RAR-b MCR CSVs, the shipped
per-query runs and the published scores themselves (a p@1 over n queries is a multiple of 1/n) — and the
loader's one-line errors on a malformed file."""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalcore.store import manifest
from evalcore.uncertainty import query_counts
from needs import missing, require_source

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"
MTEB_VERSION = "2.26.24"
COUNTS = query_counts.load(DATA / query_counts.FILE_NAME)


def mteb_descriptive_stats() -> Path:
    """The folder of mteb's per-task retrieval statistics, found without importing mteb (its import pulls
    torch and friends); skip locally / fail in CI when mteb is not the version the facts were read from."""
    spec = importlib.util.find_spec("mteb")
    hint = f"install with `bash scripts/install-dev.sh` (mteb=={MTEB_VERSION}, --no-deps)"
    if spec is None or not spec.submodule_search_locations:
        missing(f"optional dependency 'mteb' not installed; {hint}")
    version = importlib.metadata.version("mteb")
    if version != MTEB_VERSION:
        missing(f"mteb {version} installed, the counts cite {MTEB_VERSION}; {hint}")
    return Path(list(spec.submodule_search_locations)[0]) / "descriptive_stats" / "Retrieval"


def mteb_test_stats(task: str) -> dict:
    return json.loads((mteb_descriptive_stats() / f"{task}.json").read_text(encoding="utf-8"))["test"]


def entries(benchmark: str, setting: str) -> dict:
    document = json.loads((DATA / query_counts.FILE_NAME).read_text(encoding="utf-8"))
    return document["benchmarks"][benchmark][setting]


# -- coverage of the declared tasks ---------------------------------------------------------------------------
def test_every_declared_rarb_and_r2med_task_has_a_count():
    declared = manifest.read(DATA)
    assert declared.problem is None
    for benchmark in ("rar-b", "r2med"):
        for setting, tasks in declared.tasks[benchmark].items():
            assert set(COUNTS.counts[benchmark][setting]) == set(tasks), (benchmark, setting)
    assert len(COUNTS.counts["rar-b"]["full"]) == 17 and len(COUNTS.counts["r2med"]["full"]) == 8


def test_crumb_is_left_out_and_the_file_says_why():
    document = json.loads((DATA / query_counts.FILE_NAME).read_text(encoding="utf-8"))
    assert "crumb" not in COUNTS.counts
    assert "CRUMB" in document["about"] and "import-crumb" in document["about"]


# -- against the sources --------------------------------------------------------------------------------------
@pytest.mark.parametrize("task", sorted(COUNTS.counts["rar-b"]["full"]))
def test_rarb_full_counts_are_mtebs_num_queries(task):
    assert COUNTS.sources["rar-b"]["full"][task] == f"mteb-{MTEB_VERSION}"
    assert COUNTS.count("rar-b", "full", task) == mteb_test_stats(task)["num_queries"]


def test_the_briefs_three_figures():
    """The figures the statistics notes quote from mteb 2.26.24."""
    assert COUNTS.count("rar-b", "full", "ARCChallenge") == 1172
    assert COUNTS.count("rar-b", "full", "WinoGrande") == 1267
    assert COUNTS.count("r2med", "full", "R2MEDBiologyRetrieval") == 103


@pytest.mark.parametrize("task", sorted(COUNTS.counts["r2med"]["full"]))
def test_r2med_counts_are_the_query_texts_mteb_describes(task):
    """mteb's statistics of R2MED count the query texts (total length / mean length, and relevant documents /
    mean per query) as R2MED's README does; its ``num_queries`` disagrees for four tasks, recorded beside."""
    stats = mteb_test_stats(task)
    texts = stats["queries_text_statistics"]
    relevant = stats["relevant_docs_statistics"]
    n = COUNTS.count("r2med", "full", task)
    assert round(texts["total_text_length"] / texts["average_text_length"]) == n
    assert round(relevant["num_relevant_docs"] / relevant["average_relevant_docs_per_query"]) == n
    assert entries("r2med", "full")[task].get("mteb_num_queries", n) == stats["num_queries"]


def test_r2med_counts_add_up_to_the_papers_876():
    assert sum(COUNTS.counts["r2med"]["full"].values()) == 876


def published_p_at_1() -> pd.DataFrame:
    frames = [pd.read_parquet(DATA / "published" / name, columns=["benchmark", "task", "setting", "metric", "value"])
              for name in ("mteb_task_scores.parquet", "r2med_paper_task_scores.parquet")]
    frame = pd.concat(frames, ignore_index=True)
    return frame[frame["metric"] == "p@1"]


def test_every_published_p_at_1_is_a_multiple_of_one_over_the_count():
    """A p@1 over n queries is k/n; published to 5 decimals, |p·n − k| ≤ 5e-6·n. The published scores are
    means over the counts of the file — and not over mteb's ``num_queries`` where that disagrees."""
    rows = published_p_at_1()
    checked = 0
    for (benchmark, setting, task), group in rows.groupby(["benchmark", "setting", "task"], observed=True):
        n = COUNTS.count(benchmark, setting, task)
        assert n is not None, (benchmark, setting, task)
        scaled = group["value"].to_numpy(dtype=np.float64) * n
        assert np.abs(scaled - np.round(scaled)).max() <= 5e-6 * n + 1e-9, (task, n)
        other = entries(benchmark, setting)[task].get("mteb_num_queries")
        if other is not None:
            scaled = group["value"].to_numpy(dtype=np.float64) * other
            assert np.abs(scaled - np.round(scaled)).max() > 0.4, (task, other)
        checked += len(group)
    assert checked > 3000


@pytest.mark.parametrize("setting", ["mcr", "full-pooled"])
def test_mcr_counts_are_the_shipped_per_query_data(setting):
    for task, n in COUNTS.counts["rar-b"][setting].items():
        frame = pd.read_parquet(DATA / "real" / "query_metrics" / f"rar-b_{task}.parquet", columns=["setting", "qid"])
        assert frame.loc[frame["setting"] == setting, "qid"].nunique() == n, task


@pytest.mark.parametrize("setting", ["mcr", "full-pooled"])
def test_mcr_counts_are_the_rows_of_rarbs_csvs(setting):
    folder = require_source("rarb-mcr")
    for task, entry in entries("rar-b", setting).items():
        assert entry["source"] == "rarb-mcr"
        assert len(pd.read_csv(folder / entry["file"])) == entry["queries"], task


# -- the loader ----------------------------------------------------------------------------------------------
def test_a_folder_without_the_file_has_no_counts(tmp_path):
    found = query_counts.read(tmp_path)
    assert found.path is None and found.problem is None and found.count("rar-b", "full", "ARCChallenge") is None


def test_the_shipped_folder_reads_like_the_file():
    found = query_counts.read(DATA)
    assert found.problem is None and found.counts == COUNTS.counts
    assert found.counts_for("rar-b", "mcr", ["PIQA", "Nope"]) == [1838, None]
    assert "mteb" in found.source("rar-b", "full", "PIQA")


GOOD = {"format": 1, "sources": {"s": "somewhere"}, "benchmarks": {"b": {"full": {"t": {"queries": 3, "source": "s"}}}}}


def _with(**changes) -> dict:
    document = json.loads(json.dumps(GOOD))
    entry = document["benchmarks"]["b"]["full"]["t"]
    for key, value in changes.items():
        if key in ("format", "sources", "benchmarks"):
            document[key] = value
        else:
            entry[key] = value
    return document


@pytest.mark.parametrize("text, words", [
    ("{not json", ["line 1", "not JSON"]),
    (json.dumps([1, 2]), ["JSON object"]),
    (json.dumps(_with(format=2)), ["format", "1"]),
    (json.dumps(_with(sources={})), ["sources"]),
    (json.dumps(_with(benchmarks=[])), ["benchmarks"]),
    (json.dumps(_with(queries=0)), ["'t'", "queries", "≥ 1"]),
    (json.dumps(_with(queries=True)), ["'t'", "queries"]),
    (json.dumps(_with(queries=2.5)), ["'t'", "queries"]),
    (json.dumps(_with(queries="12")), ["'t'", "queries"]),
    (json.dumps(_with(source="elsewhere")), ["'t'", "source", "'elsewhere'"]),
    ('{"format": 1, "format": 1, "sources": {"s": "x"}, "benchmarks": {}}', ["'format'", "twice"]),
    ('{"format": 1, "sources": {"s": "x"}, "benchmarks": {"b": {"full": {"t": {"queries": 1, "source": "s"}, '
     '"t": {"queries": 2, "source": "s"}}}}}', ["'t'", "twice"]),
])
def test_a_malformed_file_is_one_line_naming_the_file(tmp_path, text, words):
    (tmp_path / query_counts.FILE_NAME).write_text(text, encoding="utf-8")
    with pytest.raises(query_counts.QueryCountsError) as caught:
        query_counts.load(tmp_path / query_counts.FILE_NAME)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(tmp_path / query_counts.FILE_NAME))
    for word in words:
        assert word in message
    found = query_counts.read(tmp_path)  # the folder reader reports it and declares nothing
    assert found.problem == message and found.counts == {}


def test_a_well_formed_small_file_loads(tmp_path):
    (tmp_path / query_counts.FILE_NAME).write_text(json.dumps(GOOD), encoding="utf-8")
    found = query_counts.read(tmp_path)
    assert found.problem is None and found.count("b", "full", "t") == 3 and found.source("b", "full", "t") == "somewhere"
