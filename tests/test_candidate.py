"""evalcore/candidate.py: export the shipped tasks' inputs, read and check a candidate run, evaluate it,
see it on the board through Store.with_overlay.

Most tests use a tiny made-up tasks folder (tests/candidate_data.py) whose right answers are known by
construction; the last ones check the shipped data/tasks against the shipped results. The CLI, the MiniLM
reproduction and the constant-score candidate on the shipped data are in tests/commands/test_tasks_cli.py; the
fuzzed bad runs in tests/reliability/test_candidate_fuzz.py.
"""
from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

from candidate_data import CANDIDATES, TASKS, mcr_rows, write_tasks
from evalcore import candidate
from evalcore.errors import InputError, OutputError
from evalcore.schema import QUERY_METRICS
from evalcore.store import Condition, Store
from needs import require_module

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "data"


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return write_tasks(tmp_path / "data")


@pytest.fixture
def mcr(data: Path) -> candidate.TaskInputs:
    return candidate.task_inputs(data, "rar-b", "mcr")


def trec(rows) -> str:
    return "".join(f"{q} Q0 {d} {i + 1} {s!r} mine\n" for i, (q, d, s) in enumerate(rows))


def run_folder(root: Path, per_task: dict[str, str], suffix: str = ".trec") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for task, text in per_task.items():
        (root / f"{task}{suffix}").write_text(text)
    return root


def valid_folder(root: Path) -> Path:
    return run_folder(root, {task: trec(mcr_rows(task)) for task in TASKS})


def listing(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


# -- export -------------------------------------------------------------------------------------------------
def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_export_writes_each_tasks_queries_and_its_candidates_with_the_shipped_ids(data: Path, tmp_path: Path):
    out = tmp_path / "export"
    written = candidate.export_tasks(data, "rar-b", "mcr", out)
    assert sorted(p.relative_to(out).as_posix() for p in written) == sorted(
        ["README.txt"] + [f"{task}/{name}" for task in TASKS for name in ("queries.jsonl", "candidates.jsonl",
                                                                           "qrels.json")])
    for task, n in TASKS.items():
        queries = read_jsonl(out / task / "queries.jsonl")
        assert queries == [{"qid": f"q{row:05d}", "text": f"{task} question {row}",
                            "instruction": f"Retrieve the answer for {task}."} for row in range(n)]
        candidates = read_jsonl(out / task / "candidates.jsonl")
        assert candidates == [{"qid": f"q{row:05d}", "docid": f"c{i:03d}", "text": f"{task} answer {row}.{i}"}
                              for row in range(n) for i in range(CANDIDATES)]


@pytest.mark.parametrize("setting, relevant", [("mcr", lambda row: f"c{row % CANDIDATES:03d}"),
                                              ("full-pooled", lambda row: f"p{CANDIDATES * row + row % CANDIDATES:05d}")])
def test_export_writes_each_tasks_qrels_of_the_setting_only(data: Path, tmp_path: Path, setting, relevant):
    """The qrels a run is checked with, per task and setting (the fixture's relevant candidate of query row r is
    c{r % 3}, pool document p{3r + r % 3}): the other task's and the other setting's judgements never leak in
    (both tasks have the same qids), and pytrec_eval reads the file as it is."""
    pytrec_eval = require_module("pytrec_eval")
    candidate.export_tasks(data, "rar-b", setting, tmp_path / "x")
    for task, n in TASKS.items():
        qrels = json.loads((tmp_path / "x" / task / "qrels.json").read_text(encoding="utf-8"))
        assert qrels == {f"q{row:05d}": {relevant(row): 1} for row in range(n)}
        perfect = {qid: {doc: 1.0 for doc in judged} for qid, judged in qrels.items()}
        scores = pytrec_eval.RelevanceEvaluator(qrels, {"P_1"}).evaluate(perfect)
        assert {qid: values["P_1"] for qid, values in scores.items()} == {qid: 1.0 for qid in qrels}
    readme = (tmp_path / "x" / "README.txt").read_text()
    metric = candidate.SETTING_METRICS[setting][0]
    assert f"--setting {setting} --metric {metric} --candidate" in readme
    assert f"--qrels Alpha/qrels.json --metrics {','.join(candidate.SETTING_METRICS[setting])}" in readme


def test_export_of_the_pooled_setting_writes_the_pool_every_query_ranks(data: Path, tmp_path: Path):
    candidate.export_tasks(data, "rar-b", "full-pooled", tmp_path / "x")
    pool = read_jsonl(tmp_path / "x" / "Beta" / "candidates.jsonl")
    assert pool == [{"docid": f"p{k:05d}", "text": f"Beta answer {k // CANDIDATES}.{k % CANDIDATES}"}
                    for k in range(TASKS["Beta"] * CANDIDATES)]


def test_export_never_overwrites_and_writes_nothing_when_one_file_exists(data: Path, tmp_path: Path):
    out = tmp_path / "x"
    (out / "Beta").mkdir(parents=True)
    (out / "Beta" / "candidates.jsonl").write_text("mine\n")
    before = listing(out)
    with pytest.raises(OutputError, match=r"Beta/candidates\.jsonl: exists already"):
        candidate.export_tasks(data, "rar-b", "mcr", out)
    assert listing(out) == before and (out / "Beta" / "candidates.jsonl").read_text() == "mine\n"


def test_export_in_memory_and_as_a_zip_hold_the_bytes_written(data: Path, tmp_path: Path):
    import io
    import zipfile

    written = candidate.export_tasks(data, "rar-b", "mcr", tmp_path / "x")
    on_disk = {p.relative_to(tmp_path / "x").as_posix(): p.read_bytes() for p in written}
    assert candidate.export_files(data, "rar-b", "mcr") == on_disk
    archive = candidate.export_zip(data, "rar-b", "mcr")
    with zipfile.ZipFile(io.BytesIO(archive)) as opened:
        assert {name.split("/", 1)[1]: opened.read(name) for name in opened.namelist()} == on_disk
        assert all(name.startswith("rar-b-mcr/") for name in opened.namelist())
    assert candidate.export_zip(data, "rar-b", "mcr") == archive  # the same inputs, the same bytes


def test_task_inputs_say_what_is_missing(tmp_path: Path, data: Path):
    with pytest.raises(InputError, match=r"queries\.parquet: no shipped task inputs for benchmark 'r2med'"):
        candidate.task_inputs(data, "r2med", "mcr")
    with pytest.raises(InputError, match="setting 'full' has no shipped task inputs"):
        candidate.task_inputs(data, "rar-b", "full")


# -- reading ------------------------------------------------------------------------------------------------
def test_a_folder_a_table_with_a_task_column_and_uploads_read_the_same(mcr, tmp_path: Path):
    folder = valid_folder(tmp_path / "runs")
    rows = [(task, q, d, s) for task in TASKS for q, d, s in mcr_rows(task)]
    frame = pd.DataFrame(rows, columns=["task", "qid", "docid", "score"])
    frame.to_csv(tmp_path / "all.csv", index=False)
    frame.sample(frac=1, random_state=1).to_parquet(tmp_path / "all.parquet", index=False)  # any row order
    uploads = [(p.name, p.read_bytes()) for p in sorted(folder.iterdir())]
    gz = [("Alpha.trec.gz", gzip.compress(uploads[0][1])), uploads[1]]

    def canonical(run: candidate.CandidateRun) -> dict:
        return {task: sorted(zip(*(table[c].to_pylist() for c in ("qid", "docid", "score"))))
                for task, table in run.runs.items()}

    expected = {task: sorted(mcr_rows(task)) for task in TASKS}
    for source in (folder, tmp_path / "all.csv", tmp_path / "all.parquet", uploads, gz,
                   [("all.csv", (tmp_path / "all.csv").read_bytes())]):
        run = candidate.read_candidate(source, mcr)
        assert canonical(run) == expected, source if not isinstance(source, list) else source[0][0]
        assert run.n_rows == sum(TASKS.values()) * CANDIDATES


ALPHA = trec(mcr_rows("Alpha"))
BETA_ROWS = mcr_rows("Beta")


def beta_with(line: int, text: str) -> str:
    """Beta's valid TREC run with its ``line`` (1-based) replaced by ``text``."""
    lines = trec(BETA_ROWS).splitlines(keepends=True)
    lines[line - 1] = text + "\n"
    return "".join(lines)


BAD_BETA = {  # case -> (Beta's file text, expected line, words the message must hold)
    "wrong column count": (beta_with(4, "q00001 Q0 c000 1 0.5"), 4, "expected 6"),
    "non-finite score": (beta_with(5, "q00001 Q0 c001 2 NaN mine"), 5, "finite"),
    "duplicate pair": (beta_with(6, "q00001 Q0 c000 3 0.1 mine"), 6, "duplicate"),
    "unknown qid": (beta_with(7, "q00099 Q0 c000 1 0.5 mine"), 7, "unknown qid 'q00099'"),
    "docid not a candidate": (beta_with(8, "q00002 Q0 c003 2 0.5 mine"), 8, "unknown docid 'c003' for query 'q00002'"),
    "pool docid in mcr": (beta_with(9, "q00002 Q0 p00008 3 0.5 mine"), 9, "not one of its MCR candidates"),
}


@pytest.mark.parametrize("case", sorted(BAD_BETA))
def test_a_bad_row_is_one_line_naming_the_file_and_line(mcr, tmp_path: Path, case: str):
    text, line, words = BAD_BETA[case]
    folder = run_folder(tmp_path / "runs", {"Alpha": ALPHA, "Beta": text})
    with pytest.raises(InputError) as caught:
        candidate.read_candidate(folder, mcr)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{folder / 'Beta.trec'}:{line}: "), message
    assert words in message, message
    # the same bytes uploaded: the message names the uploaded file, never the private temporary copy
    with pytest.raises(InputError) as caught:
        candidate.read_candidate([("Alpha.trec", ALPHA.encode()), ("Beta.trec", text.encode())], mcr)
    assert str(caught.value).startswith(f"Beta.trec:{line}: ") and words in str(caught.value), str(caught.value)
    assert tempfile.gettempdir() not in str(caught.value)


def test_full_pooled_runs_rank_the_pool_and_an_mcr_docid_is_unknown_there(data: Path, tmp_path: Path):
    pooled = candidate.task_inputs(data, "rar-b", "full-pooled")
    rows = {task: [(f"q{row:05d}", f"p{k:05d}", float(k == CANDIDATES * row + 2)) for row in range(n)
                   for k in range(n * CANDIDATES)] for task, n in TASKS.items()}  # every query ranks the whole pool
    run = candidate.read_candidate(run_folder(tmp_path / "ok", {t: trec(r) for t, r in rows.items()}), pooled)
    values = candidate.evaluate_candidate(pooled, run)
    assert sorted(set(values["metric"])) == sorted(candidate.SETTING_METRICS["full-pooled"])
    recall = values[values["metric"] == "recall@100"].set_index(["task", "qid"])["oblivious"]
    assert (recall == 1.0).all()  # the pool holds every right answer
    ndcg = values[values["metric"] == "ndcg@10"]
    right = ndcg["qid"].str[1:].astype(int) % CANDIDATES == 2  # where the document scored 1 is the answer
    assert (ndcg.loc[right, "oblivious"] == 1.0).all() and (ndcg.loc[~right, "oblivious"] < 1.0).all()
    rows["Beta"][4] = ("q00000", "c001", 0.5)
    folder = run_folder(tmp_path / "bad", {t: trec(r) for t, r in rows.items()})
    with pytest.raises(InputError, match=r"Beta\.trec:5: unknown docid 'c001': not a document of the Beta pool"):
        candidate.read_candidate(folder, pooled)


def test_an_unknown_task_row_of_a_table_is_named_with_its_line(mcr, tmp_path: Path):
    rows = [("Alpha", q, d, s) for q, d, s in mcr_rows("Alpha")] + [("Gamma", "q00000", "c000", 1.0)]
    pd.DataFrame(rows, columns=["task", "qid", "docid", "score"]).to_csv(tmp_path / "all.csv", index=False)
    with pytest.raises(InputError, match=rf"all\.csv:{len(rows) + 1}: unknown task 'Gamma': expected one of Alpha, Beta"):
        candidate.read_candidate(tmp_path / "all.csv", mcr)


@pytest.mark.parametrize("case, files, words", [
    ("missing task", {"Alpha.trec": ALPHA}, "missing task(s) Beta"),
    ("file not named by a task", {"Alpha.trec": ALPHA, "Gamma.trec": ALPHA}, "Gamma.trec: not a task of rar-b"),
    ("two runs of a task", {"Alpha.trec": ALPHA, "Alpha.tsv": "qid\tdocid\tscore\nq00000\tc000\t1\n",
                            "Beta.trec": trec(BETA_ROWS)}, "a second run of task Alpha"),
    ("a TREC table without task names", {"scores.trec": ALPHA}, "not a run named by a task"),
])
def test_whole_file_problems_are_one_line(mcr, tmp_path: Path, case, files, words):
    folder = tmp_path / "runs"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    source = folder if len(files) > 1 or case == "missing task" else folder / next(iter(files))
    with pytest.raises(InputError) as caught:
        candidate.read_candidate(source, mcr)
    assert words in str(caught.value) and "\n" not in str(caught.value), str(caught.value)


def test_undecodable_bytes_are_named_with_their_line(mcr):
    bad = beta_with(3, "q00000 Q0 c002 3 0.5 mine").encode().replace(b"c002", b"c\xff02")
    with pytest.raises(InputError, match=r"^Beta\.trec:3: .*UTF-8"):
        candidate.read_candidate([("Alpha.trec", ALPHA.encode()), ("Beta.trec", bad)], mcr)


def test_limits_on_bytes_and_rows(mcr, tmp_path: Path, monkeypatch):
    uploads = [("Alpha.trec", ALPHA.encode()), ("Beta.trec", trec(BETA_ROWS).encode())]
    monkeypatch.setenv("TIEBREAK_MAX_CANDIDATE_BYTES", str(len(ALPHA) + 10))
    with pytest.raises(InputError, match=r"^Beta\.trec: too large"):
        candidate.read_candidate(uploads, mcr)
    monkeypatch.delenv("TIEBREAK_MAX_CANDIDATE_BYTES")
    monkeypatch.setenv("TIEBREAK_MAX_CANDIDATE_ROWS", str(len(mcr_rows("Alpha")) + 2))
    with pytest.raises(InputError, match=r"Beta\.trec:\d+: too many rows"):
        candidate.read_candidate(valid_folder(tmp_path / "r"), mcr)
    monkeypatch.setenv("TIEBREAK_MAX_CANDIDATE_ROWS", "-3")
    with pytest.raises(InputError, match="TIEBREAK_MAX_CANDIDATE_ROWS must be a positive number"):
        candidate.read_candidate(valid_folder(tmp_path / "s"), mcr)


def test_uploads_never_touch_the_file_system(mcr, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("an upload was written to the file system")

    for name in ("TemporaryDirectory", "mkstemp", "mkdtemp", "NamedTemporaryFile"):
        monkeypatch.setattr(tempfile, name, refuse)
    monkeypatch.setattr(Path, "write_bytes", refuse)
    uploads = [("Alpha.trec.gz", gzip.compress(ALPHA.encode())), ("Beta.trec", trec(BETA_ROWS).encode())]
    assert candidate.read_candidate(uploads, mcr).n_rows == sum(TASKS.values()) * CANDIDATES
    with pytest.raises(InputError, match=r"^Beta\.trec:2: "):
        candidate.read_candidate([uploads[0], ("Beta.trec", beta_with(2, "q00000 Q0 c001 2 inf x").encode())], mcr)


def test_gzip_uploads_are_bounded_and_a_broken_one_is_one_line(mcr, monkeypatch):
    monkeypatch.setenv("TIEBREAK_MAX_CANDIDATE_BYTES", str(1 << 20))
    bomb = gzip.compress(b"q00000 Q0 c000 1 1.0 x\n" * 200_000)  # 4.6 MB once decompressed, 20 kB sent
    with pytest.raises(InputError, match=r"^Alpha\.trec\.gz: too large: more than 1,048,576 bytes once decompressed"):
        candidate.read_candidate([("Alpha.trec.gz", bomb), ("Beta.trec", b"")], mcr)
    cut = gzip.compress(ALPHA.encode())[:-12]
    with pytest.raises(InputError, match=r"^Alpha\.trec\.gz: cannot read file"):
        candidate.read_candidate([("Alpha.trec.gz", cut), ("Beta.trec", trec(BETA_ROWS).encode())], mcr)


def test_reading_uploads_leaves_no_temporary_files(mcr, monkeypatch, tmp_path: Path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    candidate.read_candidate([("Alpha.trec", ALPHA.encode()), ("Beta.trec", trec(BETA_ROWS).encode())], mcr)
    with pytest.raises(InputError):
        candidate.read_candidate([("Alpha.trec", ALPHA.encode()), ("Beta.trec", b"q Q0 d 1 nan x\n")], mcr)
    assert list(scratch.iterdir()) == []


# -- evaluating ---------------------------------------------------------------------------------------------
def test_rows_follow_the_query_metrics_schema_and_the_known_answers(mcr, tmp_path: Path):
    # c002 scores highest: right exactly where the label is 2 (rows 2, 5, ...); Beta's q00003 left out: 0
    folder = run_folder(tmp_path / "runs", {
        "Alpha": ALPHA, "Beta": trec([r for r in BETA_ROWS if r[0] != "q00003"])})
    rows = candidate.evaluate_candidate(mcr, candidate.read_candidate(folder, mcr), name="mine", precision="int8",
                                        instruction=True)
    assert list(rows.columns) == list(QUERY_METRICS)
    assert len(rows) == sum(TASKS.values()) * 2 * 2  # queries x (p@1, ndcg@10) x (docid-desc, input-order)
    assert set(rows["system"]) == {"mine"} and set(rows["precision"]) == {"int8"} and rows["instruction"].all()
    p1 = rows[(rows["metric"] == "p@1")].set_index(["task", "qid", "tie_policy"])
    for task, n in TASKS.items():
        for row in range(n):
            for policy in ("docid-desc", "input-order"):
                value = p1.loc[(task, f"q{row:05d}", policy)]
                right = 0.0 if (task, row) == ("Beta", 3) else float(row % CANDIDATES == 2)
                assert (value["oblivious"], value["expected"], value["min"], value["max"]) == (right,) * 4


def test_tied_candidates_give_expected_one_over_n_and_the_policy_picks(mcr, tmp_path: Path):
    folder = run_folder(tmp_path / "runs", {t: trec(mcr_rows(t, score=lambda r, i: 0.5)) for t in TASKS})
    rows = candidate.evaluate_candidate(mcr, candidate.read_candidate(folder, mcr))
    p1 = rows[rows["metric"] == "p@1"]
    assert np.allclose(p1["expected"], 1 / CANDIDATES) and (p1["min"] == 0).all() and (p1["max"] == 1).all()
    labels = p1["qid"].str[1:].astype(int) % CANDIDATES
    first, last = p1["tie_policy"] == "input-order", p1["tie_policy"] == "docid-desc"
    assert (p1.loc[first, "oblivious"] == (labels[first] == 0)).all()  # the first tied candidate (c000) wins
    assert (p1.loc[last, "oblivious"] == (labels[last] == CANDIDATES - 1)).all()  # trec_eval: the last


def test_a_bad_name_or_precision_is_refused(mcr, tmp_path: Path):
    run = candidate.read_candidate(valid_folder(tmp_path / "r"), mcr)
    for name in ("", "   ", "a\nb", "x" * 101):
        with pytest.raises(InputError, match="candidate name"):
            candidate.evaluate_candidate(mcr, run, name=name)
    with pytest.raises(InputError, match="precision"):
        candidate.evaluate_candidate(mcr, run, precision=" ")


def test_the_time_bound_stops_a_slow_evaluation(mcr, tmp_path: Path, monkeypatch):
    run = candidate.read_candidate(valid_folder(tmp_path / "r"), mcr)
    clock = iter(range(0, 10_000, 100))
    monkeypatch.setattr(candidate.time, "monotonic", lambda: float(next(clock)))
    monkeypatch.setenv("TIEBREAK_MAX_CANDIDATE_SECONDS", "150")
    with pytest.raises(InputError, match=r"evaluation stopped after 150 s at task Alpha"):
        candidate.evaluate_candidate(mcr, run)


def test_on_the_board_through_an_overlay_nothing_written(data: Path, mcr, tmp_path: Path):
    folder = run_folder(tmp_path / "runs", {t: trec(mcr_rows(t, score=lambda r, i: 0.5)) for t in TASKS})
    rows = candidate.evaluate_candidate(mcr, candidate.read_candidate(folder, mcr), name="tied")
    before = listing(data)
    view = Store(data).with_overlay(rows, name="tied")
    board = view.leaderboard(Condition("rar-b", "p@1", "mcr", False, "fp32", "docid-desc"))
    row = board.ranked.set_index("system").loc["tied"]
    assert row["G_expected"] == pytest.approx(1 / CANDIDATES)  # every query: 1/3, every task: 1/3
    assert (row["G_min"], row["G_max"]) == (0.0, 1.0)
    assert listing(data) == before


# -- the shipped data ---------------------------------------------------------------------------------------
def shipped_conditions(setting: str) -> pd.DataFrame:
    return duckdb.sql(
        "SELECT DISTINCT task, metric, tie_policy FROM read_parquet(?) WHERE setting = ?",
        params=[str(SHIPPED / "real" / "query_metrics" / "*.parquet"), setting]).df()


@pytest.mark.parametrize("setting", candidate.SETTINGS)
def test_metrics_and_policies_are_those_of_the_shipped_runs(setting: str):
    found = shipped_conditions(setting)
    assert sorted(set(found["metric"])) == sorted(candidate.SETTING_METRICS[setting])
    assert sorted(set(found["tie_policy"])) == sorted(candidate.SETTING_TIE_POLICIES[setting])


@pytest.mark.parametrize("setting", candidate.SETTINGS)
def test_shipped_tasks_cover_every_task_and_query_of_the_shipped_runs(setting: str):
    inputs = candidate.task_inputs(SHIPPED, "rar-b", setting)
    shipped = duckdb.sql(
        "SELECT DISTINCT task, qid FROM read_parquet(?) WHERE setting = ?",
        params=[str(SHIPPED / "real" / "query_metrics" / "*.parquet"), setting]).df()
    assert set(inputs.tasks) == set(shipped["task"])
    pairs = set(zip(shipped["task"], shipped["qid"]))
    assert set(zip(inputs.queries["task"], inputs.queries["qid"])) == pairs
    assert set(zip(inputs.qrels["task"], inputs.qrels["qid"])) == pairs  # one judged answer per query
    judged = inputs.qrels.merge(inputs.candidates if setting == "mcr" else inputs.documents,
                                on=["task", "qid", "docid"] if setting == "mcr" else ["task", "docid"])
    assert len(judged) == len(inputs.qrels)  # every right answer is something the query ranks
    if setting == "mcr":
        assert inputs.candidates["text"].notna().all()
