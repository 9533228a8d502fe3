"""Bad option values through every command that takes them: exit code 2 and one readable line on stderr (issue
16, items 9 and 15), the same message whichever command was given the value, and nothing written."""
from __future__ import annotations

import contextlib
import io
import json

import pyarrow.parquet as pq
import pytest

from evalcore.cli import main


def call(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)  # an exception escaping main is a failure: the CLI promised one line
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def files(tmp_path):
    (tmp_path / "run.trec").write_text("q1 Q0 a 1 0.5 s\nq1 Q0 b 2 0.5 s\n")
    (tmp_path / "qrels.txt").write_text("q1 0 a 1\n")
    return tmp_path


def evaluate_argv(files, *extra):
    return ["evaluate", "--run", str(files / "run.trec"), "--qrels", str(files / "qrels.txt"), *extra]


def ingest_argv(files, *extra):
    return ["ingest", "--run", str(files / "run.trec"), "--qrels", str(files / "qrels.txt"), "--system", "s",
            "--benchmark", "b", "--task", "t", "--setting", "full", "--instruction", "no", "--precision", "fp32",
            "--data", str(files / "data"), *extra]


BAD_OPTIONS = [
    (["--metrics", "bogus"], "unknown metric 'bogus'"),
    (["--metrics", "ndcg@0"], "cutoff k from 1"),
    (["--metrics", "ndcg@99999999999999999999"], "cutoff k from 1"),
    (["--tie-policy", "bogus"], "unknown tie policy 'bogus'"),
    (["--tie-policy", "random:²"], "random:SEED with SEED an integer"),  # '²'.isdigit(): int() failed
    (["--tie-policy", "random:"], "random:SEED with SEED an integer"),
]


@pytest.mark.parametrize("command", ["evaluate", "ingest"])
@pytest.mark.parametrize("option, says", BAD_OPTIONS)
def test_a_bad_metric_or_tie_policy_is_one_line_in_every_command(files, command, option, says):
    argv = (evaluate_argv if command == "evaluate" else ingest_argv)(files, *option)
    code, _, stderr = call(argv)
    assert code == 2, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"evalcore {command}: error: {option[0]}: "), stderr
    assert says in lines[0] and "invalid literal" not in lines[0]
    assert not (files / "data").exists()


def test_ingest_stores_the_canonical_tie_policy_and_metric_names(files):
    code, _, stderr = call(ingest_argv(files, "--tie-policy", " Random:7 ", "--metrics", "NDCG@10", "MRR@10"))
    assert code == 0, stderr
    (written,) = (files / "data" / "ingested").glob("*.parquet")
    table = pq.read_table(written)
    assert set(table["tie_policy"].to_pylist()) == {"random:7"}
    assert set(table["metric"].to_pylist()) == {"ndcg@10", "mrr@10"}


@pytest.mark.parametrize("k", ["99999999999999999999", str(2**63), str(2**62)])
def test_ties_accepts_any_positive_cutoff(files, k):
    """A cutoff past every list counts the whole list (it overflowed numpy before)."""
    code, stdout, stderr = call(["ties", "--run", str(files / "run.trec"), "--k", k, "--format", "json"])
    assert code == 0, stderr
    summary = json.loads(stdout)
    assert summary["k"] == int(k)
    assert summary["mean_topk_tied_share"] == 1.0  # both documents tie at 0.5, both are in the "top k"
    assert summary["share_tied_at_cutoff"] == 0.0  # nothing below rank k to straddle into


# -- names that must exist and labels that must be canonical ----------------------------------------------------

SHIPPED = __import__("pathlib").Path(__file__).resolve().parents[2] / "data"
MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def test_an_unknown_system_is_refused_not_silently_dropped():
    code, stdout, stderr = call(["leaderboard", "--data", str(SHIPPED), "--benchmark", "rar-b",
                                 "--format", "json", "--system", MINILM, "--system", "all-minilm-l6-v2"])
    assert code == 2 and stdout == "", stderr
    (line,) = stderr.strip().splitlines()
    assert line.startswith("evalcore leaderboard: error: --system 'all-minilm-l6-v2': no such system")
    assert MINILM in line  # among the closest valid names


def test_a_hostile_unknown_system_is_one_escaped_line():
    code, _, stderr = call(["leaderboard", "--data", str(SHIPPED), "--benchmark", "rar-b",
                            "--system", "\x1b[31mred\nline"])
    assert code == 2
    (line,) = stderr.strip().splitlines()
    assert "\x1b" not in stderr and "\\x1b[31mred\\nline" in line


def test_known_systems_still_rank():
    code, stdout, stderr = call(["leaderboard", "--data", str(SHIPPED), "--benchmark", "rar-b",
                                 "--format", "json", "--common-tasks", "--system", MINILM])
    assert code == 0, stderr
    assert [row["system"] for row in json.loads(stdout)["ranked"]] == [MINILM]


@pytest.mark.parametrize("spelling", ["FP32", " fp32", "fp32 ", "Float32"])
def test_the_leaderboard_reads_a_precision_in_any_spelling(spelling):
    def board(precision):
        code, stdout, stderr = call(["leaderboard", "--data", str(SHIPPED), "--benchmark", "r2med",
                                     "--format", "csv", "--precision", precision])
        assert code == 0, stderr
        return stdout
    assert board(spelling) == board("fp32")


@pytest.mark.parametrize("command", ["leaderboard", "ingest"])
def test_an_unknown_precision_is_one_line_naming_the_valid_ones(files, command):
    argv = _with_precision(ingest_argv(files), "int4") if command == "ingest" else [
        "leaderboard", "--data", str(SHIPPED), "--benchmark", "rar-b", "--precision", "int4"]
    code, _, stderr = call(argv)
    assert code == 2, stderr
    (line,) = stderr.strip().splitlines()
    assert "--precision 'int4': unknown precision (valid: fp32, fp16, bf16" in line and "binary" in line
    assert not (files / "data").exists()


def _with_precision(argv: list[str], precision: str) -> list[str]:
    at = argv.index("--precision")
    return [*argv[:at], "--precision", precision, *argv[at + 2:]]


@pytest.mark.parametrize("spelling", ["FP32", " fp32", "float32"])
def test_ingest_stores_the_canonical_precision(files, spelling):
    code, _, stderr = call(_with_precision(ingest_argv(files), spelling))
    assert code == 0, stderr
    (written,) = (files / "data" / "ingested").glob("*.parquet")
    assert set(pq.read_table(written)["precision"].to_pylist()) == {"fp32"}


def test_import_crumb_stores_the_canonical_precision_beside_fp32(tmp_path):
    crumb = SHIPPED.parent / "tests" / "fixtures" / "crumb"
    data = tmp_path / "data"
    for system, precision in (("a", "fp32"), ("b", "FP32"), ("c", " fp32")):
        code, _, stderr = call(["import-crumb", str(crumb / "runs" / "bm25"), "--crumb", str(crumb), "--data",
                                str(data), "--system", system, "--precision", precision])
        assert code == 0, stderr
    stored = {value for path in (data / "ingested").glob("*.parquet")
              for value in pq.read_table(path, columns=["precision"])["precision"].to_pylist()}
    assert stored == {"fp32"}
    code, _, stderr = call(["import-crumb", str(crumb / "runs" / "bm25"), "--crumb", str(crumb), "--data",
                            str(data), "--system", "d", "--precision", "fp 3 2x"])
    assert code == 2 and "unknown precision (valid: fp32" in stderr


def test_simulate_reads_its_target_in_any_spelling(files):
    code, _, stderr = call(["simulate", "--run", str(files / "run.trec"), "--to", " BF16", "--out",
                            str(files / "out.trec")])
    assert code == 0, stderr
    assert (files / "out.trec").exists()
