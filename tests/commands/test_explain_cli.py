"""``evalcore explain`` on the shipped data: runs re-scored from their inputs reproduce the values the shipped
per-query rows record under each tie policy; a published number from another corpus is not explained; exit
codes 0 / 1 / 2.

- The raw MiniLM fp32 runs of ``data/runs/`` (full-pooled ARCChallenge and WinoGrande: each query's top 100 plus
  ties, what the shipped rows were evaluated from) against the shipped rows' docid-desc means (pandas).
- The constant scorer on the MCR tasks, its run written here from ``data/tasks`` (every candidate 0.5, in the
  candidates' order), against the shipped rows' docid-desc and input-order means: on TempReasonL2Pure the
  correct candidate is listed first, so input-order gives p@1 = 1 and docid-desc 0, both reproduced, and the
  expected value is the chance level computed here from the candidate counts.
"""
from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from evalcore.cli import main

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"
MINILM = "tiebreak-run/all-MiniLM-L6-v2"


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def shipped_means(task: str, system: str, setting: str, precision: str = "fp32") -> pd.DataFrame:
    """Mean oblivious / expected / min / max per metric and tie policy of the shipped rows (no instruction)."""
    frame = pq.read_table(DATA / "real" / "query_metrics" / f"rar-b_{task}.parquet").to_pandas()
    for column in ("system", "setting", "precision", "metric", "tie_policy"):
        frame[column] = frame[column].astype(str)
    frame = frame[(frame["system"] == system) & (frame["setting"] == setting) & (frame["precision"] == precision)
                  & (frame["instruction"] == False)]  # noqa: E712 - a column comparison
    return frame.groupby(["metric", "tie_policy"])[["oblivious", "expected", "min", "max"]].mean().reset_index()


@pytest.mark.parametrize("task", ["ARCChallenge", "WinoGrande"])
def test_the_shipped_minilm_runs_reproduce_their_shipped_rows(task):
    means = shipped_means(task, MINILM, "full-pooled")
    assert set(means["tie_policy"]) == {"docid-desc"} and len(means) == 3
    reported = [f"{row.metric}={row.oblivious!r}" for row in means.itertuples()]
    code, stdout, stderr = cli("explain", "--run", str(DATA / "runs" / f"rar-b_{task}_full_all-MiniLM-L6-v2_fp32.parquet"),
                               "--qrels", str(DATA / "runs" / f"rar-b_{task}_full_qrels.parquet"), "--metric",
                               "ndcg@10,mrr@10,recall@100", "--format", "json",
                               *[arg for spec in reported for arg in ("--reported", spec)])
    assert code == 0, stderr
    records = json.loads(stdout)
    assert len(records) == 3
    for record, row in zip(records, means.itertuples()):
        assert record["metric"] == row.metric and record["verdict"] == "reproduced"
        assert "docid-desc" in record["policies"]
        assert record["value[docid-desc]"] == pytest.approx(row.oblivious, abs=1e-12)
        for kind in ("expected", "min", "max"):
            assert record[kind] == pytest.approx(getattr(row, kind), abs=1e-12)


@pytest.fixture(scope="module")
def constant_mcr(tmp_path_factory) -> tuple[Path, Path, float]:
    task = "TempReasonL2Pure"
    folder = tmp_path_factory.mktemp("constant")
    candidates = pd.read_parquet(DATA / "tasks" / "rar-b" / "candidates.parquet")
    candidates = candidates[candidates["task"] == task]
    candidates[["qid", "docid"]].assign(score=0.5).to_csv(folder / "run.csv", index=False)
    qrels = pd.read_parquet(DATA / "tasks" / "rar-b" / "qrels.parquet")
    qrels = qrels[(qrels["task"] == task) & (qrels["setting"] == "mcr")]
    qrels[["qid", "docid", "relevance"]].to_csv(folder / "qrels.csv", index=False)
    chance = (1 / candidates.groupby("qid").size()).mean()
    return folder / "run.csv", folder / "qrels.csv", chance


def test_the_constant_scorer_reproduces_both_recorded_policies(constant_mcr):
    run, qrels, chance = constant_mcr
    means = shipped_means("TempReasonL2Pure", "tiebreak-run/constant", "mcr")
    p1 = means[means["metric"] == "p@1"].set_index("tie_policy")["oblivious"]
    assert p1["input-order"] == 1.0 and p1["docid-desc"] == 0.0  # what the shipped rows record
    code, stdout, stderr = cli("explain", "--run", str(run), "--qrels", str(qrels), "--metric", "p@1",
                               "--reported", f"{p1['input-order']:.3f}", "--reported", f"{p1['docid-desc']:.3f}",
                               "--reported", f"{chance:.4f}", "--format", "json")
    assert code == 0, stderr
    by_input, by_docid, at_chance = json.loads(stdout)
    # the correct candidate is c000, first in input order and in ascending docid order alike
    assert by_input["verdict"] == "reproduced" and by_input["policies"] == ["docid-asc", "input-order"]
    assert by_docid["verdict"] == "reproduced" and by_docid["policies"] == ["docid-desc"]
    assert at_chance["verdict"] == "tie-range" and at_chance["expected"] == pytest.approx(chance, abs=1e-12)
    assert (at_chance["min"], at_chance["max"]) == (0.0, 1.0)


def test_a_published_number_on_another_corpus_is_not_explained_exit_1():
    """MTEB's all-MiniLM-L6-v2 WinoGrande nDCG@10 is on RAR-b's full corpus, the run on the pooled candidates."""
    code, stdout, stderr = cli("explain", "--run", str(DATA / "runs" / "rar-b_WinoGrande_full_all-MiniLM-L6-v2_fp32.parquet"),
                               "--qrels", str(DATA / "runs" / "rar-b_WinoGrande_full_qrels.parquet"),
                               "--system", "sentence-transformers/all-MiniLM-L6-v2", "--benchmark", "rar-b",
                               "--task", "WinoGrande", "--format", "json")
    assert code == 1, stderr
    (record,) = json.loads(stdout)
    published = pd.read_parquet(DATA / "published" / "mteb_task_scores.parquet")
    value = published[(published["system"] == "sentence-transformers/all-MiniLM-L6-v2")
                      & (published["task"] == "WinoGrande") & (published["metric"] == "ndcg@10")]["value"].item()
    assert record["reported"] == value and record["verdict"] == "outside"
    assert record["distance"] == pytest.approx(record["min"] - value - 0.000005, abs=1e-9)  # 5 decimals stored


def test_precision_finds_the_rounding_that_reaches_a_bf16_number():
    """The fp32 run against its own bf16 value (README's worked example: 0.7347): outside at fp32, reproduced
    by docid-desc once the scores are rounded to bf16."""
    code, stdout, stderr = cli("explain", "--run", str(DATA / "runs" / "rar-b_WinoGrande_full_all-MiniLM-L6-v2_fp32.parquet"),
                               "--qrels", str(DATA / "runs" / "rar-b_WinoGrande_full_qrels.parquet"),
                               "--reported", "0.7347", "--precision", "--format", "json")
    assert code == 1, stderr
    (record,) = json.loads(stdout)
    assert record["verdict"] == "outside"
    reach = {item["condition"]: (item["verdict"], item["policies"]) for item in record["precision"]}
    assert reach["bf16"] == ("reproduced", ["docid-desc"])
    assert reach["bf16+hps"][0] == "outside"


@pytest.mark.parametrize("extra, says", [
    (["--reported", "abc"], "expected a number"),
    (["--reported", "150"], "percentage up to 100"),
    ([], "nothing to compare with"),
    (["--reported", "Other=0.5"], "no --run of that task"),
    (["--reported", "0.5", "--metric", "bogus"], "unknown metric"),
    (["--system", "nobody", "--benchmark", "rar-b", "--task", "WinoGrande"], "no such system"),
    (["--system", "Jaume/gemma-2b-embedding", "--benchmark", "rar-b", "--task", "WinoGrande"],
     "closest: Jaume/gemma-2b-embeddings"),
    (["--system", MINILM, "--benchmark", "rar-b", "--task", "WinoGrande", "--system-precision", "int4"],
     "unknown precision (valid: fp32, fp16, bf16"),
    (["--reported", "1"], "did you mean 1.0 (a fraction) or 1%"),
    (["--reported", "0"], "did you mean 0.0 (a fraction) or 0%"),
    (["--reported", "1_0"], "no sign, underscore"),
    (["--reported", "\x1b[31m0.5"], "no sign, underscore"),
])
def test_bad_input_is_one_line_and_exit_2(extra, says):
    code, stdout, stderr = cli("explain", "--run", str(DATA / "runs" / "rar-b_WinoGrande_full_all-MiniLM-L6-v2_fp32.parquet"),
                               "--qrels", str(DATA / "runs" / "rar-b_WinoGrande_full_qrels.parquet"), *extra)
    assert code == 2 and stdout == "", stderr
    (line,) = stderr.strip().splitlines()
    assert line.startswith("evalcore explain: error: ") and says in line, line
    assert "\x1b" not in stderr


def test_an_integer_never_reproduces_a_fraction_with_plus_minus_half():
    """``--reported 1`` against an nDCG of 0.7357 was "reproduced" (1 ± 0.5); ``1.0`` is a fraction, not it."""
    code, stdout, stderr = cli("explain", *WINO, "--reported", "1.0", "--format", "json")
    assert code == 1, stderr
    (record,) = json.loads(stdout)
    assert record["verdict"] == "outside" and record["tolerance"] == pytest.approx(0.05)


def test_the_expected_value_over_tie_orders_is_named():
    code, stdout, stderr = cli("explain", *WINO, "--reported", "0.7357", "--format", "json")
    assert code == 0, stderr
    (record,) = json.loads(stdout)
    assert abs(record["expected"] - 0.7357) <= 0.00005 and record["equals_expected"] is True
    code, stdout, _ = cli("explain", *WINO, "--reported", "0.7360", "--format", "json")
    (record,) = json.loads(stdout)
    assert abs(record["expected"] - 0.7360) > 0.00005 and record["equals_expected"] is False


@pytest.fixture(scope="module")
def random_wino_run(tmp_path_factory) -> Path:
    """WinoGrande's pooled candidates scored at random (seed 0): mrr@10 0.0315, far from 0 at 5e-7, near it
    at the ±0.05 "0.0" prints with."""
    import numpy as np
    import pyarrow as pa

    table = pq.read_table(DATA / "runs" / "rar-b_WinoGrande_full_all-MiniLM-L6-v2_fp32.parquet",
                          columns=["qid", "docid", "score"])
    path = tmp_path_factory.mktemp("random") / "wino_random.parquet"
    pq.write_table(table.set_column(2, "score", pa.array(np.random.default_rng(0).random(table.num_rows))), path)
    return path


def test_a_round_published_value_is_compared_at_its_published_precision(random_wino_run):
    """MTEB publishes Jaume/gemma-2b-embeddings' WinoGrande mrr@10 as 0.0 (6 decimals: 0.000000): a run with
    mrr@10 = 0.0315 does not reproduce it (it did with the ±0.05 of how "0.0" prints)."""
    published = pd.read_parquet(DATA / "published" / "mteb_task_scores.parquet")
    row = published[(published["system"] == "Jaume/gemma-2b-embeddings") & (published["task"] == "WinoGrande")
                    & (published["metric"] == "mrr@10")]
    assert row["value"].tolist() == [0.0]
    code, stdout, stderr = cli("explain", "--run", str(random_wino_run), "--qrels",
                               str(DATA / "runs" / "rar-b_WinoGrande_full_qrels.parquet"), "--metric", "mrr@10",
                               "--task", "WinoGrande", "--system", "Jaume/gemma-2b-embeddings", "--benchmark",
                               "rar-b", "--format", "json")
    assert code == 1, stderr
    (record,) = json.loads(stdout)
    assert 0.02 < record["value[docid-desc]"] < 0.05 and record["verdict"] == "outside"
    assert record["tolerance"] == pytest.approx(5e-7) and record["reported"] == 0.0


def test_the_system_precision_is_canonicalised():
    code, stdout, stderr = cli("explain", *WINO, "--task", "WinoGrande", "--system", MINILM, "--benchmark", "rar-b",
                               "--setting", "full-pooled", "--instruction", "no", "--system-precision", " FP32",
                               "--format", "json")
    assert code == 0, stderr
    (record,) = json.loads(stdout)
    assert record["reported_by"] == f"{MINILM} fp32 (docid-desc)" and record["tolerance"] == 0.0


@pytest.mark.parametrize("seed", ["-1", str(10**30), "2147483648", "1.5", "x"])
def test_a_seed_out_of_bounds_is_refused_by_argparse_not_a_traceback(seed, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["explain", *WINO, "--reported", "0.7357", "--seed", seed])
    assert stop.value.code == 2
    assert "--seed" in capsys.readouterr().err.splitlines()[-1]


def test_the_largest_seed_works():
    code, stdout, stderr = cli("explain", *WINO, "--reported", "0.7357", "--seed", "2147483647")
    assert code == 0 and "random:2147483647" in stdout, stderr


def test_the_table_names_every_policy_and_the_tolerance():
    code, stdout, stderr = cli("explain", "--run", str(DATA / "runs" / "rar-b_WinoGrande_full_all-MiniLM-L6-v2_fp32.parquet"),
                               "--qrels", str(DATA / "runs" / "rar-b_WinoGrande_full_qrels.parquet"),
                               "--reported", "0.7357", "--seed", "7")
    assert code == 0, stderr
    header = stdout.splitlines()[0].split()
    assert header[-5:] == ["docid-desc", "docid-asc", "input-order", "random:7", "verdict"]
    assert "reproduced by docid-desc" in stdout and "(run 1267;" in stdout


WINO = ("--run", str(DATA / "runs" / "rar-b_WinoGrande_full_all-MiniLM-L6-v2_fp32.parquet"),
        "--qrels", str(DATA / "runs" / "rar-b_WinoGrande_full_qrels.parquet"))
ARC = ("--run", str(DATA / "runs" / "rar-b_ARCChallenge_full_all-MiniLM-L6-v2_fp32.parquet"),
       "--qrels", str(DATA / "runs" / "rar-b_ARCChallenge_full_qrels.parquet"))


def test_several_runs_one_value_per_task_and_a_system_for_both():
    """Two tasks in one call: a typed number for one, the shipped MiniLM fp32 rows (pandas means) for both."""
    code, stdout, stderr = cli("explain", *WINO, "--task", "WinoGrande", *ARC, "--task", "ARCChallenge",
                               "--reported", "WinoGrande=0.9", "--system", MINILM, "--benchmark", "rar-b",
                               "--setting", "full-pooled", "--instruction", "no", "--format", "json")
    assert code == 1, stderr  # the typed 0.9 is outside
    records = json.loads(stdout)
    typed = [r for r in records if r["reported_by"] == "typed"]
    assert len(typed) == 1 and typed[0]["task"] == "WinoGrande" and typed[0]["verdict"] == "outside"
    from_system = [r for r in records if r["reported_by"] != "typed"]
    assert {r["task"] for r in from_system} == {"WinoGrande", "ARCChallenge"}
    for record in from_system:
        mean = shipped_means(record["task"], MINILM, "full-pooled").set_index("metric").loc["ndcg@10", "oblivious"]
        assert record["reported"] == pytest.approx(mean, abs=1e-12) and record["verdict"] == "reproduced"
        assert record["reported_by"] == f"{MINILM} fp32 (docid-desc)"


@pytest.mark.parametrize("extra, says", [
    ((*ARC, "--reported", "0.5"), "say which task"),
    ((*ARC, "--reported", "Other=0.5"), "no --run of that task"),
    (("--run", "x.trec", "--reported", "0.5"), "give one qrels per run"),
    ((*ARC, "--task", "A", "--reported", "0.5"), "give one task per run"),
])
def test_several_runs_need_matching_qrels_tasks_and_named_numbers(extra, says):
    code, stdout, stderr = cli("explain", *WINO, *extra)
    assert code == 2 and stdout == "", stderr
    (line,) = stderr.strip().splitlines()
    assert says in line, line
