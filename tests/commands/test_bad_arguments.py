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
