"""Importers (MTEB results tree, R2MED paper results) and the CLI commands around the store.

Published numbers are checked against sources the importer does not read: the R2MED website table
(``leaderboard-site.csv``) and MTEB JSON files parsed here with the plain ``json`` module.
"""
from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalcore import importers, sources
from evalcore.cli import main
from evalcore.errors import InputError
from evalcore.store import Condition, Store
from needs import require_source

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "store"
SHARED = sources.sources_root()
PUBLISHED = ROOT / "data" / "published"


@pytest.fixture
def shared_sources() -> None:
    """The upstream MTEB and R2MED sources (skip with the fetch command locally, fail in CI)."""
    for name in (sources.MTEB_RESULTS, sources.R2MED_PAPER):
        require_source(name)


needs_shared = pytest.mark.usefixtures("shared_sources")


# -- MTEB layouts (fixtures) ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fixture_import():
    return importers.read_mteb_results(FIXTURES / "mteb_layouts")


def _value(task_scores: pd.DataFrame, system: str, task: str, metric: str = "ndcg@10") -> pd.Series:
    rows = task_scores[(task_scores.system == system) & (task_scores.task == task) & (task_scores.metric == metric)]
    assert len(rows) == 1, rows
    return rows.iloc[0]


def test_newest_revision_per_task_and_subset_choice(fixture_import):
    task_scores, systems = fixture_import
    arc = _value(task_scores, "acme/new-model", "ARCChallenge")
    assert arc["value"] == 0.25 and arc["revision"] == "rev-new"  # newer mteb version wins
    piqa = _value(task_scores, "acme/new-model", "PIQA")
    assert piqa["value"] == 0.30 and piqa["revision"] == "rev-old"  # only the old revision has it
    biology = _value(task_scores, "acme/new-model", "R2MEDBiologyRetrieval")
    assert biology["value"] == 0.40 and biology["benchmark"] == "r2med"  # 'default' subset, not 'de'
    assert "Banking77Classification" not in set(task_scores.task)
    assert _value(task_scores, "acme/new-model", "ARCChallenge", "ap@10")["value"] == pytest.approx(0.24)
    assert _value(task_scores, "acme/new-model", "ARCChallenge", "p@1")["value"] == pytest.approx(0.1)
    assert bool(arc["instruction"]) and arc["precision"] == "fp32" and arc["tie_policy"] == "docid-desc"
    acme = systems.set_index("system").loc["acme/new-model"]
    assert acme["revision"] == "rev-new" and acme["family"] == "acme" and acme["n_parameters"] == 123e6
    assert bool(acme["open_weights"]) and bool(acme["uses_instructions"]) and acme["release_date"] == "2025-01-02"


def test_legacy_layout_and_missing_meta(fixture_import):
    task_scores, systems = fixture_import
    assert _value(task_scores, "legacy/old-model", "PIQA")["value"] == 0.11
    assert _value(task_scores, "legacy/old-model", "PIQA", "mrr@10")["value"] == 0.12
    assert _value(task_scores, "legacy/old-model", "SIQA")["value"] == 0.07  # 'en' subset of the test split
    legacy = systems.set_index("system").loc["legacy/old-model"]
    assert bool(legacy["open_weights"]) and not bool(legacy["uses_instructions"])  # old key spellings
    assert not _value(task_scores, "legacy/old-model", "PIQA")["instruction"]
    assert _value(task_scores, "nometa/thing", "WinoGrande")["value"] == 0.5


def test_bad_json_is_an_input_error(tmp_path: Path):
    broken = tmp_path / "results" / "x__y" / "r"
    broken.mkdir(parents=True)
    (broken / "PIQA.json").write_text("{not json")
    with pytest.raises(InputError, match="PIQA.json"):
        importers.read_mteb_results(tmp_path)
    assert main(["import-mteb", str(tmp_path), "--out", str(tmp_path / "out")]) == 2


def test_import_mteb_cli_output_loads_in_store(tmp_path: Path, capsys):
    assert main(["import-mteb", str(FIXTURES / "mteb_layouts"), "--out", str(tmp_path)]) == 0
    store = Store(tmp_path)
    assert not store.skipped
    table = store.task_table(Condition("rar-b", instruction=None))
    assert set(table.system) == {"acme/new-model", "legacy/old-model", "nometa/thing"}
    assert store.systems(search="acme")["display_name"].tolist() == ["new-model"]


# -- R2MED layout ---------------------------------------------------------------------------------------
def test_r2med_pipeline_names(tmp_path: Path):
    results = tmp_path / "results"
    payload = {"dataset_name": "MedQA-Diag", "test": {"ndcg_at_10": 0.3, "recall_at_100": 0.6}}
    for relative, extra in [
        ("base retriever/nv", {"model_name": "nv"}),
        ("reranker/bge-reranker/nv/top_10", {"reranker_name": "bge-reranker", "retriever_name": "nv",
                                             "test": {"NDCG@10": 0.35, "Recall@100": 0.6, "MRR": 0.4}}),
        ("gar/hyde/qwen-7b/bge", {"gar_llm": "qwen-7b", "gar_method": "hyde", "retriever_name": "bge"}),
    ]:
        folder = results / relative
        folder.mkdir(parents=True)
        (folder / "MedQA-Diag.json").write_text(json.dumps({**payload, **extra}))
    task_scores, systems = importers.read_r2med_results(tmp_path)
    assert set(systems.system) == {"NV-Embed-v2", "NV-Embed-v2>>bge-reranker", "HyDE(qwen-7b)+BGE-Large-en-v1.5"}
    assert set(task_scores.task) == {"R2MEDMedQADiagRetrieval"}
    assert _value(task_scores, "NV-Embed-v2>>bge-reranker", "R2MEDMedQADiagRetrieval")["value"] == 0.35
    assert "mrr@10" not in set(task_scores.metric)  # 'MRR' without a cutoff is not mrr@10


# -- published data (real files) ------------------------------------------------------------------------
SITE_TASKS = ["Biology", "Bioinformatics", "Medical-Sciences", "MedXpertQA-Exam", "MedQA-Diag", "PMC-Treatment",
              "PMC-Clinical", "IIYi-Clinical"]
SITE_REWRITERS = {  # website name -> (method, llm folder) in results/gar
    "HuatuoGPT-o1-70B": ("HyDE", "huatuo-o1-70b"), "GPT4o": ("HyDE", "gpt4"),
    "DeepSeek-R1-Distill-Llama-70B": ("HyDE", "r1-llama-70b"), "Llama3.1-70B-Ins": ("HyDE", "llama-70b"),
    "QwQ-32B": ("HyDE", "qwq-32b"), "DeepSeek-R1-Distill-Qwen-32B": ("HyDE", "r1-qwen-32b"),
    "Qwen2.5-32B-Ins": ("HyDE", "qwen-32b"), "Qwen2.5-7B-Ins": ("HyDE", "qwen-7b"),
    "Search-O1 (QwQ-32b)": ("Search-O1", "qwq-32b"), "Search-O1 (Qwen3-32b)": ("Search-O1", "qwen3-32b"),
    "Search-R1 (Qwen2.5-7b-it-em-ppo)": ("Search-R1", "qwen-7b-ins"),
    "Search-R1 (Qwen2.5-3b-it-em-ppo)": ("Search-R1", "qwen-3b-ins"),
}


def _site_system_name(row: pd.Series) -> str | None:
    retriever = "BMRetriever-410M" if row["Retriever"] == "BMRETRIEVER-410M" else row["Retriever"]
    if row["Reranker"] != "-":
        return None  # the site's only reranker row (ReasonRank) is not in results/
    if row["Rewriter"] == "-":
        return retriever
    if row["Rewriter"] not in SITE_REWRITERS:
        return None
    method, llm = SITE_REWRITERS[row["Rewriter"]]
    return f"{method}({llm})+{retriever}"


@needs_shared
def test_r2med_site_average_is_the_arithmetic_mean_of_imported_tasks():
    site = pd.read_csv(SHARED / "r2med-paper" / "leaderboard-site.csv")
    board = Store(PUBLISHED).leaderboard(Condition("r2med", instruction=None), uncertainty=False)
    ranked = board.ranked.set_index("system")
    matched, disagreeing = 0, []
    for _, row in site.iterrows():
        name = _site_system_name(row)
        if name is None or name not in ranked.index:
            continue
        matched += 1
        site_tasks = row[SITE_TASKS].to_numpy(dtype=float)
        ours = np.array([ranked.loc[name, importers.r2med_task_name(t)] for t in SITE_TASKS]) * 100
        # site shows 2 decimals: task columns within half a unit of the last digit, Avg within one
        if np.all(np.abs(ours - site_tasks) <= 0.0051) and abs(ranked.loc[name, "mean"] * 100 - row["Avg"]) <= 0.011:
            assert abs(site_tasks.mean() - row["Avg"]) <= 0.011  # the site's Avg is their arithmetic mean
        else:
            disagreeing.append(name)
    assert matched == 47  # SOURCES.md: 47 site rows exist in results/
    assert disagreeing == ["MedCPT"]  # SOURCES.md: MedCPT 9.02 on the site vs 7.87 in the repo
    assert ranked.loc["MedCPT", "mean"] * 100 == pytest.approx(7.87, abs=0.006)


def _hand_g(model_folder: str, revision: str) -> float:
    values = []
    for task in importers.RARB_TASKS:
        with open(SHARED / "mteb-results" / "results" / model_folder / revision / f"{task}.json") as handle:
            scores = json.load(handle)["scores"]["test"]
        (default,) = [entry for entry in scores if entry["hf_subset"] == "default"]
        values.append(default["ndcg_at_10"])
    return math.prod(values) ** (1 / len(values))


@needs_shared
@pytest.mark.parametrize("model_folder, revision, system", [
    ("BAAI__bge-base-en-v1.5", "a5beb1e3e68b9ab74eb54cfd186867f64f240e1a", "BAAI/bge-base-en-v1.5"),
    ("GritLM__GritLM-7B", None, "GritLM/GritLM-7B"),
    ("nvidia__NV-Embed-v2", None, "nvidia/NV-Embed-v2"),
    ("intfloat__e5-mistral-7b-instruct", None, "intfloat/e5-mistral-7b-instruct"),
    # two revisions: RAR-b only in the older one, R2MED only in the newer one
    ("sentence-transformers__all-mpnet-base-v2", "84f2bcc00d77236f9e89c8a360a00fb1139bf47d",
     "sentence-transformers/all-mpnet-base-v2"),
])
def test_mteb_g_recomputed_by_hand(model_folder, revision, system):
    if revision is None:
        (only,) = [p.name for p in (SHARED / "mteb-results" / "results" / model_folder).iterdir()]
        revision = only
    board = Store(PUBLISHED).leaderboard(Condition("rar-b", instruction=None), uncertainty=False)
    ranked = board.ranked.set_index("system")
    assert ranked.loc[system, "G"] == pytest.approx(_hand_g(model_folder, revision), rel=1e-12)
    assert ranked.loc[system, "n_tasks"] == 17 and ranked.loc[system, "complete"]


@needs_shared
def test_shipped_published_parquet_is_a_fresh_import():
    for reader, source, stem in ((importers.read_mteb_results, SHARED / "mteb-results", "mteb"),
                                 (importers.read_r2med_results, SHARED / "r2med-paper", "r2med_paper")):
        task_scores, systems = reader(source)
        shipped_scores = pd.read_parquet(PUBLISHED / f"{stem}_task_scores.parquet")
        shipped_systems = pd.read_parquet(PUBLISHED / f"{stem}_systems.parquet")
        pd.testing.assert_frame_equal(shipped_scores, task_scores, check_dtype=False)
        pd.testing.assert_frame_equal(shipped_systems, systems, check_dtype=False)


def test_published_rar_b_covers_17_tasks_and_r2med_8():
    facets = Store(PUBLISHED).facets()
    assert facets["by_benchmark"]["rar-b"]["tasks"] == sorted(importers.RARB_TASKS)
    assert facets["by_benchmark"]["r2med"]["tasks"] == sorted(importers.R2MED_TASKS)


# -- leaderboard and ingest CLI ------------------------------------------------------------------------
def _write_results(tmp_path: Path) -> Path:
    rows = [
        {"system": name, "benchmark": "tiny", "task": task, "setting": "full", "instruction": False,
         "precision": "fp32", "metric": "ndcg@10", "value": value, "expected": None, "min": None, "max": None,
         "n_queries": 10, "source": "test"}
        for name, values in {"a_b&c": (0.4, 0.9), "plain": (0.5, 0.6), "half": (0.3, None)}.items()
        for task, value in zip(("T1", "T2"), values) if value is not None
    ]
    pd.DataFrame(rows).to_parquet(tmp_path / "tiny.parquet")
    return tmp_path


def test_leaderboard_cli_formats(tmp_path: Path, capsys):
    data = _write_results(tmp_path)
    assert main(["leaderboard", "--benchmark", "tiny", "--data", str(data), "--format", "csv"]) == 0
    csv_out = capsys.readouterr().out.splitlines()
    header = csv_out[0].split(",")
    assert header[:5] == ["rank", "system", "G", "queries_lo", "queries_hi"] and header[-4:-2] == ["T1", "T2"]
    first = dict(zip(header, csv_out[1].split(",")))
    assert first["system"] == "a_b&c" and first["G"] == "0.6" and first["rank"] == "1"  # sqrt(0.4·0.9) = 0.6
    assert main(["leaderboard", "--benchmark", "tiny", "--data", str(data), "--format", "latex"]) == 0
    latex = capsys.readouterr().out
    assert "\\toprule" in latex and "\\midrule" in latex and "\\bottomrule" in latex
    assert "a\\_b\\&c" in latex
    assert "\\textbf{0.6000}" in latex and "\\textbf{0.9000}" in latex and "\\textbf{0.5000}" in latex
    assert main(["leaderboard", "--benchmark", "tiny", "--data", str(data), "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert [r["system"] for r in payload["ranked"]] == ["a_b&c", "plain"]
    assert payload["ranked"][0]["G"] == pytest.approx(0.6)
    assert payload["incomplete"][0]["system"] == "half"
    assert main(["leaderboard", "--benchmark", "tiny", "--data", str(data)]) == 0
    table = capsys.readouterr().out
    assert "not ranked" in table and "half" in table
    assert main(["leaderboard", "--benchmark", "nope", "--data", str(data)]) == 2


def _ingest_args(tmp_path: Path, run_text: str, system: str) -> tuple[list[str], Path]:
    """``evalcore ingest`` arguments for a TREC run (``run_text``) against qrels with d1 relevant to q1 and d3
    to q2, into ``tmp_path/data`` (returned too)."""
    run = tmp_path / "run.tsv"
    run.write_text(run_text)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq2 0 d3 1\n")
    data = tmp_path / "data"
    return ["ingest", "--run", str(run), "--qrels", str(qrels), "--system", system, "--benchmark", "tiny",
            "--task", "T1", "--setting", "full", "--instruction", "no", "--precision", "fp32",
            "--metrics", "ndcg@10", "--data", str(data)], data


def test_ingest_hand_computed_and_refuses_duplicates(tmp_path: Path, capsys):
    # q1: d1 (relevant) and d2 tie at the top; docid-desc puts d2 first -> oblivious = 1/log2(3)
    # q2: the relevant document is alone at rank 1 -> 1.0 everywhere
    args, data = _ingest_args(
        tmp_path, "q1\tQ0\td1\t1\t1.0\tx\nq1\tQ0\td2\t2\t1.0\tx\nq2\tQ0\td3\t1\t2.0\tx\nq2\tQ0\td4\t2\t1.0\tx\n",
        "tiny-model")
    assert main(args) == 0
    written = list((data / "ingested").glob("*.parquet"))
    assert len(written) == 1
    table = Store(data).task_table(Condition("tiny")).iloc[0]
    low = 1 / math.log2(3)
    assert table["value"] == pytest.approx((low + 1) / 2)
    assert table["min"] == pytest.approx((low + 1) / 2) and table["max"] == pytest.approx(1.0)
    assert table["expected"] == pytest.approx(((low + 1) / 2 + 1) / 2)
    # the q1 tie covers ranks 1-2 only: it does not straddle the cutoff 10 (contract of tied_at_cutoff)
    assert table["tied_share"] == 0.0 and table["n_queries"] == 2
    before = written[0].read_bytes()
    assert main(args) == 2  # already there: refused, nothing rewritten
    assert list((data / "ingested").glob("*.parquet")) == written and written[0].read_bytes() == before
    assert "already" in capsys.readouterr().err


def test_two_ingests_of_the_same_results_started_together_land_once(tmp_path: Path, monkeypatch, capsys):
    """B passes the early duplicate check while A is still writing; the re-check under the ingest lock must
    refuse B (without the lock, or without the re-check, both files land and task means double count)."""
    import threading

    from evalcore import importers
    from evalcore.commands import ingest

    args, data = _ingest_args(tmp_path, "q1\tQ0\td1\t1\t1.0\tx\nq2\tQ0\td3\t1\t2.0\tx\n", "m")
    a_writing, b_at_lock, release = threading.Event(), threading.Event(), threading.Event()
    real_write, real_lock = importers.write_compact_table, ingest.ingest_lock

    def slow_write(frame, path):
        if not a_writing.is_set():  # A: hold the lock until B has got past its early check
            a_writing.set()
            assert release.wait(60)
        real_write(frame, path)

    def lock(folder):
        if a_writing.is_set():
            b_at_lock.set()
        return real_lock(folder)

    monkeypatch.setattr(importers, "write_compact_table", slow_write)
    monkeypatch.setattr(ingest, "ingest_lock", lock)
    codes: dict[str, int] = {}
    a = threading.Thread(target=lambda: codes.setdefault("a", main(args)))
    a.start()
    assert a_writing.wait(60)
    b = threading.Thread(target=lambda: codes.setdefault("b", main(args)))
    b.start()
    assert b_at_lock.wait(60)  # B found nothing yet: A's file is not written
    time.sleep(0.3)  # let B block on the lock (if it is not blocked yet, it takes the lock after A all the same)
    release.set()
    a.join(60)
    b.join(60)
    assert codes == {"a": 0, "b": 2}
    assert len(list((data / "ingested").glob("*.parquet"))) == 1
    assert "already" in capsys.readouterr().err


def test_a_write_sweeps_temporaries_that_killed_writers_left_long_ago(tmp_path: Path):
    import os

    from evalcore.outputs import STALE_TEMPORARY_SECONDS

    out = tmp_path / "published"
    out.mkdir()
    stale, live = out / ".task_scores.parquet.k1ll3d.tmp", out / ".systems.parquet.wr1t1ng.tmp"
    for path, age in ((stale, STALE_TEMPORARY_SECONDS + 60), (live, 1)):
        path.write_bytes(b"half a parquet file")
        os.utime(path, (time.time() - age, time.time() - age))
    keep = out / ".notes.txt"  # hidden, not a temporary: never touched
    keep.write_text("mine")
    os.utime(keep, (0, 0))
    importers.write_compact_parquet(pd.DataFrame({"a": [1]}), out / "x.parquet")
    assert not stale.exists() and live.exists() and keep.exists()
    assert pd.read_parquet(out / "x.parquet")["a"].tolist() == [1]


# -- instruction use per model, tie policy per metric, values checked on import ----------------
def _write_mteb(root: Path, folder: str, revision: str, meta: dict | None, tasks: dict[str, dict],
                mteb_version: str = "1.12.75") -> None:
    """One revision folder of an MTEB results tree: ``tasks`` maps a task name to its test-split scores."""
    path = root / "results" / folder / revision
    path.mkdir(parents=True)
    if meta is not None:
        (path / "model_meta.json").write_text(json.dumps(meta))
    for task, scores in tasks.items():
        (path / f"{task}.json").write_text(json.dumps({
            "task_name": task, "mteb_version": mteb_version,
            "scores": {"test": [{"hf_subset": "default", **scores}]}}))


def test_instruction_use_is_decided_once_per_model_null_meaning_unknown(tmp_path: Path):
    """multilingual-e5-small's case: RAR-b tasks spread over two revisions whose model_meta say null and true.
    Every row of the model gets one state (true), so 'as published' sees all its tasks together."""
    ndcg = {"ndcg_at_10": 0.2}
    _write_mteb(tmp_path, "org__split", "old", {"name": "org/split", "use_instructions": None},
                {"PIQA": ndcg, "SIQA": ndcg}, "1.12.75")
    _write_mteb(tmp_path, "org__split", "new", {"name": "org/split", "use_instructions": True},
                {"WinoGrande": ndcg}, "2.1.17")
    _write_mteb(tmp_path, "org__unknown", "r", {"name": "org/unknown"}, {"PIQA": ndcg})
    _write_mteb(tmp_path, "org__flip", "a", {"name": "org/flip", "use_instructions": True},
                {"PIQA": ndcg, "SIQA": ndcg}, "1.1.0")
    _write_mteb(tmp_path, "org__flip", "b", {"name": "org/flip", "use_instructions": False},
                {"WinoGrande": ndcg}, "1.2.0")
    task_scores, systems = importers.read_mteb_results(tmp_path)
    states = task_scores.groupby("system")["instruction"].agg(lambda v: set(v.astype(object)))
    assert states["org/split"] == {True}  # null in one revision does not outvote true in the other
    assert states["org/flip"] == {False}  # disagreeing revisions: the newest that says
    assert task_scores.loc[task_scores.system == "org/unknown", "instruction"].isna().all()  # unknown, not false
    meta = systems.set_index("system")["uses_instructions"]
    assert bool(meta["org/split"]) and not bool(meta["org/flip"]) and pd.isna(meta["org/unknown"])
    out = tmp_path / "out"
    importers.write_compact_parquet_files({out / "ts.parquet": task_scores, out / "sys.parquet": systems})
    board = Store(out).leaderboard(Condition("rar-b", instruction=None), uncertainty=False)
    assert set(board.ranked.system) == {"org/split", "org/flip"} and board.ranked.n_tasks.tolist() == [3, 3]
    assert set(board.incomplete.system) == {"org/unknown"}  # one task of three: missing, not hidden


@pytest.fixture(scope="module")
def shipped_rar_b_board():
    return Store(PUBLISHED).leaderboard(Condition("rar-b", instruction=None), uncertainty=False)


def test_every_model_with_all_17_rar_b_tasks_in_the_tree_is_ranked(shipped_rar_b_board):
    """From the JSON files directly: a model (model_meta name, else folder) with each RAR-b task in some
    revision must be on the board, whatever revision each task came from."""
    results = require_source("mteb-results") / "results"
    tasks_of: dict[str, set[str]] = {}
    for model_folder in results.iterdir():
        for revision in model_folder.iterdir():
            meta_path = revision / "model_meta.json"
            meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
            name = meta.get("name") or model_folder.name.replace("__", "/", 1)
            for path in revision.glob("*.json"):
                if path.name == "model_meta.json":
                    continue
                loaded = json.loads(path.read_text())
                task = loaded.get("task_name") or loaded.get("mteb_dataset_name") or path.stem
                if task in importers.RARB_TASKS:
                    tasks_of.setdefault(name, set()).add(task)
    complete = {name for name, tasks in tasks_of.items() if len(tasks) == len(importers.RARB_TASKS)}
    assert len(complete) == 145
    assert set(shipped_rar_b_board.ranked.system) == complete


def test_multilingual_e5_small_ranked_with_its_hand_computed_g(shipped_rar_b_board):
    """G (ndcg@10) over the 17 tasks read from both revisions' JSON files is 0.106832; rank 54."""
    results = require_source("mteb-results") / "results" / "intfloat__multilingual-e5-small"
    values = {}
    for path in results.glob("*/*.json"):
        if path.stem in importers.RARB_TASKS:
            (entry,) = json.loads(path.read_text())["scores"]["test"]
            values[path.stem] = entry["ndcg_at_10"]
    assert len(values) == 17
    hand_g = math.prod(values.values()) ** (1 / 17)
    assert round(hand_g, 6) == 0.106832
    ranked = shipped_rar_b_board.ranked.set_index("system")
    assert ranked.loc["intfloat/multilingual-e5-small", "G"] == pytest.approx(hand_g, rel=1e-12)
    assert ranked.loc["intfloat/multilingual-e5-small", "rank"] == 54


@pytest.mark.parametrize("version, policy", [("1.12.75", "input-order"), ("2.18.18", "input-order"),
                                             ("2.18.19", "docid-desc"), ("2.20.0", "docid-desc")])
def test_mrr_tie_policy_follows_the_mteb_version_of_the_file(tmp_path: Path, version, policy):
    """MTEB's mrr_at_k kept tied documents in insertion order before 2.18.19 (PR #5136); nDCG and the rest
    always came from pytrec_eval (docid-desc)."""
    _write_mteb(tmp_path, "org__m", "r", {"name": "org/m"}, {"PIQA": {"ndcg_at_10": 0.3, "mrr_at_10": 0.4}},
                version)
    task_scores, _ = importers.read_mteb_results(tmp_path)
    policies = dict(zip(task_scores.metric, task_scores.tie_policy))
    assert policies == {"ndcg@10": "docid-desc", "mrr@10": policy}


def test_shipped_mrr_rows_are_labelled_with_the_stable_sort_policy():
    scores = pd.read_parquet(PUBLISHED / "mteb_task_scores.parquet")
    mrr = scores.metric == "mrr@10"
    assert mrr.sum() == 2907 and set(scores.loc[mrr, "tie_policy"]) == {"input-order"}  # every file < 2.18.19
    assert set(scores.loc[~mrr, "tie_policy"]) == {"docid-desc"}


@pytest.mark.parametrize("bad", [45.3, -0.1, 1.5, float("nan"), float("inf"), "0.5", True])
def test_import_leaves_out_values_that_are_not_scores_and_names_the_file(tmp_path: Path, bad):
    folder = tmp_path / "results" / "org__m" / "r"
    folder.mkdir(parents=True)
    # json.dumps writes NaN / Infinity, which json.load (and MTEB) read back as floats
    (folder / "PIQA.json").write_text(json.dumps({"task_name": "PIQA", "mteb_version": "1.0.0", "scores": {
        "test": [{"hf_subset": "default", "ndcg_at_10": bad, "recall_at_10": 0.5}]}}))
    (folder / "model_meta.json").write_text(json.dumps({"name": "org/m", "n_parameters": -5}))
    warnings: list[str] = []
    task_scores, systems = importers.read_mteb_results(tmp_path, warn=warnings.append)
    assert dict(zip(task_scores.metric, task_scores.value)) == {"recall@10": 0.5}
    assert pd.isna(systems["n_parameters"].iloc[0])  # a negative parameter count is not a size
    assert any("PIQA.json" in w and "ndcg_at_10" in w for w in warnings), warnings
    assert any("model_meta.json" in w and "n_parameters" in w for w in warnings), warnings
    results = tmp_path / "r2med" / "results" / "base retriever" / "bm25"
    results.mkdir(parents=True)
    (results / "Biology.json").write_text(json.dumps({"dataset_name": "Biology",
                                                      "test": {"ndcg_at_10": bad, "recall_at_10": 0.25}}))
    warnings.clear()
    task_scores, _ = importers.read_r2med_results(tmp_path / "r2med", warn=warnings.append)
    assert dict(zip(task_scores.metric, task_scores.value)) == {"recall@10": 0.25}
    assert task_scores.instruction.isna().all()  # the paper's files do not say: unknown
    assert any("Biology.json" in w and "ndcg_at_10" in w for w in warnings), warnings


def test_published_mrr_is_shown_under_the_tie_policy_it_was_computed_with():
    """The shipped MTEB mrr@10 rows are input-order (mteb < 2.18.19); the default tie policy finds them and
    says which policy the numbers use."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["leaderboard", "--benchmark", "rar-b", "--data", str(PUBLISHED), "--metric", "MRR@10"])
    out = out.getvalue()
    assert code == 0, err.getvalue()
    said = next(line for line in out.splitlines() if line.startswith("tie policy"))
    assert "input-order" in said and "only" in said, said
    scores = pd.read_parquet(PUBLISHED / "mteb_task_scores.parquet")
    assert importers.MTEB_MRR_TIES_FIXED == (2, 18, 19) and (scores.metric == "mrr@10").any()
