"""Never pool what is not one task: a qrels or run file with ``task`` / ``setting`` / ``benchmark`` columns
holding several evaluations (the shipped ``data/tasks/rar-b/qrels.parquet``: 8 tasks × 2 settings, query ids
repeated in every task) is evaluated task by task when the run names its tasks, else refused with one line
saying how to select one — in ``evaluate``, ``explain``, ``ingest``, ``tasks evaluate``,
``leaderboard --candidate`` and the Python API. The right values come from pytrec_eval on the task's own
judgements, filtered here with pandas."""
from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from candidate_data import TASKS, mcr_rows, write_tasks
from evalcore import engine
from evalcore.cli import main
from evalcore.errors import InputError
from evalcore.formats import Selection
from needs import require_module

ROOT = Path(__file__).resolve().parents[2]
SHIPPED_QRELS = ROOT / "data" / "tasks" / "rar-b" / "qrels.parquet"
SHIPPED_CANDIDATES = ROOT / "data" / "tasks" / "rar-b" / "candidates.parquet"


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def random_mcr_run(tasks: tuple[str, ...], seed: int = 7) -> pd.DataFrame:
    """A random score for every MCR candidate of the shipped ``tasks`` (task, qid, docid, score)."""
    candidates = pq.read_table(SHIPPED_CANDIDATES, columns=["task", "qid", "docid"]).to_pandas()
    candidates = candidates[candidates["task"].isin(tasks)].astype(str).reset_index(drop=True)
    rng = np.random.default_rng(seed)
    return candidates.assign(score=rng.random(len(candidates)).astype(np.float32).astype(float))


def task_qrels(task: str, setting: str = "mcr") -> dict[str, dict[str, int]]:
    qrels = pq.read_table(SHIPPED_QRELS).to_pandas()
    mine = qrels[(qrels["task"] == task) & (qrels["setting"] == setting)]
    out: dict[str, dict[str, int]] = {}
    for row in mine.itertuples():
        out.setdefault(row.qid, {})[row.docid] = int(row.relevance)
    return out


def pytrec_p1(run: pd.DataFrame, qrels: dict) -> float:
    pytrec_eval = require_module("pytrec_eval")
    as_dict: dict[str, dict[str, float]] = {}
    for row in run.itertuples():
        as_dict.setdefault(row.qid, {})[row.docid] = row.score
    values = pytrec_eval.RelevanceEvaluator(qrels, {"P_1"}).evaluate(as_dict)
    return float(np.mean([v["P_1"] for v in values.values()]))


def write_trec(run: pd.DataFrame, path: Path) -> Path:
    path.write_text("".join(f"{r.qid} Q0 {r.docid} 0 {r.score!r} x\n" for r in run.itertuples()))
    return path


@pytest.fixture(scope="module")
def arc(tmp_path_factory) -> tuple[Path, pd.DataFrame]:
    run = random_mcr_run(("ARCChallenge",))
    return write_trec(run, tmp_path_factory.mktemp("arc") / "arc.trec"), run


def test_a_run_against_the_shipped_qrels_is_refused_until_one_task_is_selected(arc):
    """The shipped qrels pooled gave this random run p@1 0.73 (the other tasks' labels on the same qids); now
    the file is refused naming its tasks and settings, and with --task --setting the value is pytrec_eval's on
    ARCChallenge's own MCR judgements."""
    path, run = arc
    code, out, err = cli("evaluate", "--run", path, "--qrels", SHIPPED_QRELS, "--metrics", "p@1")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "8 tasks" in err and "2 settings" in err and "--task ARCChallenge --setting mcr" in err
    code, out, err = cli("evaluate", "--run", path, "--qrels", SHIPPED_QRELS, "--metrics", "p@1", "--task",
                         "ARCChallenge", "--setting", "mcr", "--format", "json")
    assert code == 0, err
    [row] = json.loads(out)
    expected = pytrec_p1(run, task_qrels("ARCChallenge"))
    assert row["n_queries"] == 1172 and row["oblivious"] == pytest.approx(expected, abs=1e-12)
    assert 0.2 < expected < 0.3  # chance with 3-5 candidates, not the pooled 0.73


def test_a_run_that_names_its_tasks_is_evaluated_task_by_task(tmp_path: Path):
    tasks = ("ARCChallenge", "PIQA", "WinoGrande")
    run = random_mcr_run(tasks)
    run.to_parquet(tmp_path / "run.parquet", index=False)
    run.to_csv(tmp_path / "run.csv", index=False)
    for name in ("run.parquet", "run.csv"):
        code, out, err = cli("evaluate", "--run", tmp_path / name, "--qrels", SHIPPED_QRELS, "--metrics", "p@1",
                             "--setting", "mcr", "--format", "json", "--per-query", tmp_path / f"{name}.pq.parquet")
        assert code == 0, err
        rows = {row["task"]: row for row in json.loads(out)}
        assert sorted(rows) == sorted(tasks)  # tasks the run lacks are not scored (no --include-missing)
        for task in tasks:
            expected = pytrec_p1(run[run["task"] == task], task_qrels(task))
            assert rows[task]["oblivious"] == pytest.approx(expected, abs=1e-12), task
        per_query = pq.read_table(tmp_path / f"{name}.pq.parquet").to_pandas()
        assert list(per_query.columns[:2]) == ["task", "qid"]
        assert per_query.groupby("task").size().to_dict() == {t: len(task_qrels(t)) for t in tasks}


def test_a_run_of_several_tasks_against_qrels_of_one_is_refused(tmp_path: Path):
    run = random_mcr_run(("ARCChallenge", "PIQA"))
    run.to_csv(tmp_path / "run.csv", index=False)
    qrels = tmp_path / "arc.json"
    qrels.write_text(json.dumps(task_qrels("ARCChallenge")))
    code, _, err = cli("evaluate", "--run", tmp_path / "run.csv", "--qrels", qrels, "--metrics", "p@1")
    assert code == 2 and "2 tasks (ARCChallenge, PIQA)" in err and "--task ARCChallenge" in err
    code, out, err = cli("evaluate", "--run", tmp_path / "run.csv", "--qrels", qrels, "--metrics", "p@1",
                         "--task", "ARCChallenge", "--format", "json")
    assert code == 0 and json.loads(out)[0]["oblivious"] == pytest.approx(
        pytrec_p1(run[run["task"] == "ARCChallenge"], task_qrels("ARCChallenge")), abs=1e-12)


def test_a_run_of_another_task_than_its_qrels_is_refused(tmp_path: Path):
    run = random_mcr_run(("PIQA",))
    run.to_csv(tmp_path / "piqa.csv", index=False)
    qrels = pq.read_table(SHIPPED_QRELS).to_pandas()
    qrels[(qrels["task"] == "ARCChallenge") & (qrels["setting"] == "mcr")].to_csv(tmp_path / "arc.csv", index=False)
    code, _, err = cli("evaluate", "--run", tmp_path / "piqa.csv", "--qrels", tmp_path / "arc.csv")
    assert code == 2 and "the run is of task 'PIQA'" in err and "'ARCChallenge'" in err


def test_selecting_a_task_the_file_lacks_names_those_it_has(arc):
    path, _ = arc
    code, _, err = cli("evaluate", "--run", path, "--qrels", SHIPPED_QRELS, "--task", "ARCChalenge")
    assert code == 2 and "no qrels row of task 'ARCChalenge'" in err and "ARCChallenge" in err


def test_explain_reads_the_selected_task_only(arc):
    path, run = arc
    code, _, err = cli("explain", "--run", path, "--qrels", SHIPPED_QRELS, "--metric", "p@1", "--reported", "0.25")
    assert code == 2 and "--task ARCChallenge --setting mcr" in err and "give a run" not in err
    code, out, err = cli("explain", "--run", path, "--qrels", SHIPPED_QRELS, "--metric", "p@1", "--reported", "0.25",
                         "--task", "ARCChallenge", "--setting", "mcr", "--format", "json")
    assert code in (0, 1), err
    [verdict] = json.loads(out)
    assert verdict["n_queries"] == 1172
    assert verdict["value[docid-desc]"] == pytest.approx(pytrec_p1(run, task_qrels("ARCChallenge")), abs=1e-12)


def test_ingest_reads_its_task_and_setting_from_the_shipped_qrels(tmp_path: Path):
    run = random_mcr_run(("ARCChallenge", "PIQA"))
    run.to_parquet(tmp_path / "run.parquet", index=False)
    code, out, err = cli("ingest", "--run", tmp_path / "run.parquet", "--qrels", SHIPPED_QRELS, "--system", "me",
                         "--benchmark", "rar-b", "--task", "PIQA", "--setting", "mcr", "--instruction", "no",
                         "--precision", "fp32", "--metrics", "p@1", "--data", tmp_path / "data")
    assert code == 0, err
    [written] = (tmp_path / "data" / "ingested").glob("*.parquet")
    rows = pq.read_table(written).to_pandas()
    assert len(rows) == len(task_qrels("PIQA"))
    assert rows["oblivious"].mean() == pytest.approx(pytrec_p1(run[run["task"] == "PIQA"], task_qrels("PIQA")),
                                                     abs=1e-12)


def test_the_python_api_refuses_pooled_tables_and_takes_a_selection():
    run = random_mcr_run(("ARCChallenge",))
    qrels = pq.read_table(SHIPPED_QRELS).to_pandas()
    with pytest.raises(InputError, match="8 tasks"):
        engine.evaluate(run[["qid", "docid", "score"]], qrels, ["p@1"])
    chosen = engine.evaluate(run[["qid", "docid", "score"]], qrels, ["p@1"],
                             select=Selection(task="ARCChallenge", setting="mcr"))
    assert chosen["oblivious"].mean() == pytest.approx(pytrec_p1(run, task_qrels("ARCChallenge")), abs=1e-12)


# -- candidates: tasks evaluate, leaderboard --candidate, the upload ---------------------------------------------
def candidate_table(settings: tuple[str, ...]) -> pd.DataFrame:
    """The fixture's MCR candidate as one table with task and setting columns; the full-pooled copy of each row
    scores the reverse (so pooling the settings would change the values)."""
    rows = []
    for setting in settings:
        for task in TASKS:
            for qid, docid, score in mcr_rows(task):
                rows.append({"task": task, "setting": setting, "qid": qid, "docid": docid,
                             "score": score if setting == "mcr" else -score})
    return pd.DataFrame(rows)


def test_a_candidate_table_of_two_settings_is_read_for_the_chosen_one(tmp_path: Path):
    data = write_tasks(tmp_path / "data")
    candidate_table(("mcr",)).to_parquet(tmp_path / "mcr.parquet", index=False)
    candidate_table(("mcr", "full-pooled")).to_parquet(tmp_path / "both.parquet", index=False)
    outs = []
    for name in ("mcr", "both"):
        out = tmp_path / f"{name}.rows.parquet"
        code, _, err = cli("tasks", "evaluate", "--benchmark", "rar-b", "--setting", "mcr", "--candidate",
                           tmp_path / f"{name}.parquet", "--out", out, "--data", data)
        assert code == 0, err
        outs.append(pq.read_table(out).to_pandas())
    pd.testing.assert_frame_equal(outs[0], outs[1])
    candidate_table(("full-pooled",)).to_parquet(tmp_path / "pooled.parquet", index=False)
    code, _, err = cli("tasks", "evaluate", "--benchmark", "rar-b", "--setting", "mcr", "--candidate",
                       tmp_path / "pooled.parquet", "--out", tmp_path / "x.parquet", "--data", data)
    assert code == 2 and "no run row of setting 'mcr'" in err and not (tmp_path / "x.parquet").exists()


def test_a_per_task_file_holding_another_task_is_refused(tmp_path: Path):
    data = write_tasks(tmp_path / "data")
    runs = tmp_path / "runs"
    runs.mkdir()
    table = candidate_table(("mcr",))
    table[table["task"] == "Alpha"].to_csv(runs / "Alpha.csv", index=False)
    table[table["task"] == "Alpha"].to_csv(runs / "Beta.csv", index=False)  # Alpha's rows under Beta's name
    code, _, err = cli("leaderboard", "--benchmark", "rar-b", "--setting", "mcr", "--candidate", runs, "--data", data)
    assert code == 2 and "Beta.csv: no run row of task 'Beta'" in err


def test_summarize_keeps_the_tasks_apart(tmp_path: Path):
    from evalcore import summarize

    run = random_mcr_run(("ARCChallenge", "PIQA"))
    per_query = engine.evaluate(run, pq.read_table(SHIPPED_QRELS).to_pandas(), ["p@1"], select=Selection(setting="mcr"))
    summary = summarize(per_query).set_index("task")
    for task in ("ARCChallenge", "PIQA"):
        assert summary.loc[task, "oblivious"] == pytest.approx(pytrec_p1(run[run["task"] == task], task_qrels(task)),
                                                                abs=1e-12)
        assert summary.loc[task, "n_queries"] == len(task_qrels(task))
