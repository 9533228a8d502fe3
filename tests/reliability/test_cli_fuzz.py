"""End-to-end fuzzing of the CLI: random and mutated runs / qrels in every format, through
``evalcore.cli.main`` (in-process, for speed) and a few through ``python -m evalcore`` (subprocess).

Every outcome must be one of
- exit code 0 with a *correct* evaluation (per-query values equal pytrec_eval's docid-desc values, computed
  here from the rows the test generated, never from evalcore's own reader), or
- exit code 2 with one stderr line ``evalcore CMD: error: FILE[:LINE]: ...expected...`` naming the bad file
  (and the physical line / parquet row when the problem is on one),
and never a traceback, a hang (every call runs under an alarm) or a partial / stray output file.
"""
from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from evalcore.cli import main
from needs import require_module

pytrec_eval = require_module("pytrec_eval")

ROOT = Path(__file__).resolve().parents[2]
CALL_SECONDS = 30  # one in-process CLI call on a few hundred rows takes well under a second
# TIEBREAK_FUZZ_EXAMPLES raises the budget for a long hunt (docs/reliability.md's figures); CI keeps 40 per test
FUZZ = settings(max_examples=int(os.environ.get("TIEBREAK_FUZZ_EXAMPLES", "40")), deadline=None,
                suppress_health_check=list(HealthCheck))

# float32-representable scores (pytrec_eval narrows to float32), with -0.0 / 0.0 ties on purpose
SCORES = [-1.5, -0.0, 0.0, 0.25, 0.5, 1.0, 2.0, 3.75]
RUN_FORMATS = ["trec", "tsv", "csv", "jsonl", "parquet"]
QRELS_FORMATS = ["trec", "beir", "jsonl", "csv", "parquet"]
ERROR_LINE = re.compile(r"^evalcore (?P<command>[\w-]+): error: (?P<where>.+?): (?P<what>.+)$")


class CliTimeout(Exception):
    pass


def call_cli(argv: list[str], seconds: int = CALL_SECONDS) -> tuple[int, str, str]:
    """``evalcore.cli.main(argv)`` in-process under an alarm; (exit code, stdout, stderr).

    Any exception escaping ``main`` is a test failure (the CLI promised exit code 2, never a traceback)."""
    def on_alarm(signum, frame):
        raise CliTimeout(f"evalcore {' '.join(argv)} ran longer than {seconds}s")

    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return code, out.getvalue(), err.getvalue()


def listing(directory: Path) -> dict[str, int]:
    return {str(p.relative_to(directory)): p.stat().st_size for p in sorted(directory.rglob("*")) if p.is_file()}


def assert_input_error(code: int, stderr: str, files: list[Path], line: int | None = None) -> re.Match:
    """Exit code 2 and exactly one ``error: FILE[:LINE]: ...`` line naming one of ``files``."""
    assert code == 2, stderr
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    match = ERROR_LINE.match(lines[0])
    assert match, stderr
    where = match["where"]
    assert any(where == str(f) or where.startswith(f"{f}:") for f in files), (where, files)
    if line is not None:
        assert where.endswith(f":{line}"), (stderr, line)
    return match


# -- generating inputs, with the physical line of every row -------------------------------------------
@st.composite
def run_and_qrels(draw):
    """A small run + qrels: heavy ties, -0.0 next to 0.0, graded labels, unretrieved relevant documents,
    queries only in the run and only in the qrels."""
    n_queries = draw(st.integers(1, 5))
    run, qrels = [], []
    for q in range(n_queries):
        qid = f"q{q}"
        docids = draw(st.lists(st.sampled_from([f"d{i}" for i in range(12)]), min_size=1, max_size=8, unique=True))
        if draw(st.booleans()) or q == 0:  # q0 always in the run
            run += [(qid, d, draw(st.sampled_from(SCORES))) for d in docids]
        if draw(st.integers(0, 4)) > 0 or q == 0:
            judged = draw(st.lists(st.sampled_from(docids + ["unretrieved"]), max_size=5, unique=True))
            qrels += [(qid, d, draw(st.integers(0, 3))) for d in judged]
    qrels += [("only-in-qrels", "d0", 1)]
    if not any(q == "q0" for q, _, _ in qrels):
        qrels.append(("q0", run[0][1], 1))
    return run, qrels


def score_text(value: float, style: int) -> str:
    if style == 1 and value >= 0 and not math.copysign(1, value) < 0:
        return "+" + repr(value)
    if style == 2:
        return f"{value:e}"
    if style == 3 and value == int(value):
        return "-0" if math.copysign(1, value) < 0 and value == 0 else str(int(value))
    return repr(value)


@st.composite
def text_style(draw):
    return {
        "eol": draw(st.sampled_from(["\n", "\r\n"])),
        "bom": draw(st.booleans()),
        "sep": draw(st.sampled_from([" ", "\t", "  ", " \t "])),
        "blank_every": draw(st.sampled_from([0, 2, 3])),
        "trailing": draw(st.sampled_from(["", " ", "\t"])),
        "score_style": draw(st.integers(0, 3)),
        "final_eol": draw(st.booleans()),
    }


def render_lines(header: str | None, rows: list[str], style: dict) -> tuple[bytes, list[int]]:
    """Join lines with the style's line ends / blank lines; returns bytes and each row's physical line."""
    lines, row_lines = [], []
    if header is not None:
        lines.append(header)
    for i, row in enumerate(rows):
        if style["blank_every"] and i % style["blank_every"] == 1:
            lines.append(style["sep"] if style["sep"].strip() == "" and i % 2 else "")
        lines.append(row + style["trailing"])
        row_lines.append(len(lines))
    text = style["eol"].join(lines) + (style["eol"] if style["final_eol"] else "")
    data = text.encode("utf-8")
    return (b"\xef\xbb\xbf" + data if style["bom"] else data), row_lines


def write_run_file(directory: Path, rows: list[tuple], fmt: str, style: dict, name: str = "run") -> tuple[Path, list[int]]:
    """Rows may hold a raw score text (str) to inject a bad value."""
    def text(score):
        if isinstance(score, str):
            return score
        score_style = style["score_style"]
        return score_text(score, 0 if fmt == "jsonl" and score_style == 1 else score_style)  # no "+1" in JSON

    sep = style["sep"]
    if fmt == "parquet":
        path = directory / f"{name}.parquet"
        scores = [s if not isinstance(s, str) else float(s) for _, _, s in rows]
        pq.write_table(pa.table({"qid": [r[0] for r in rows], "docid": [r[1] for r in rows],
                                 "score": pa.array(scores, pa.float64())}), path)
        return path, list(range(1, len(rows) + 1))
    if fmt == "trec":
        body = [sep.join([q, "Q0", d, str(i + 1), text(s), "tag"]) for i, (q, d, s) in enumerate(rows)]
        data, lines = render_lines(None, body, style)
    elif fmt in ("tsv", "csv"):
        delimiter = "\t" if fmt == "tsv" else ","
        body = [delimiter.join([q, d, text(s)]) for q, d, s in rows]
        data, lines = render_lines(delimiter.join(["qid", "docid", "score"]), body, style)
    else:  # jsonl
        body = ['{"qid": %s, "docid": %s, "score": %s}' % (json.dumps(q), json.dumps(d), text(s)) for q, d, s in rows]
        data, lines = render_lines(None, body, style)
    path = directory / f"{name}.{fmt}"
    path.write_bytes(data)
    return path, lines


def write_qrels_file(directory: Path, rows: list[tuple], fmt: str, style: dict) -> tuple[Path, list[int]]:
    sep = style["sep"]
    if fmt == "parquet":
        path = directory / "qrels.parquet"
        pq.write_table(pa.table({"qid": [r[0] for r in rows], "docid": [r[1] for r in rows],
                                 "relevance": pa.array([r[2] for r in rows], pa.int64())}), path)
        return path, list(range(1, len(rows) + 1))
    if fmt == "trec":
        data, lines = render_lines(None, [sep.join([q, "0", d, str(g)]) for q, d, g in rows], style)
        path = directory / "qrels.txt"
    elif fmt == "beir":
        data, lines = render_lines("query-id\tcorpus-id\tscore", ["\t".join([q, d, str(g)]) for q, d, g in rows], style)
        path = directory / "qrels.tsv"
    elif fmt == "csv":
        data, lines = render_lines("qid,docid,relevance", [",".join([q, d, str(g)]) for q, d, g in rows], style)
        path = directory / "qrels.csv"
    else:  # R2MED-style jsonl
        body = ['{"q_id": %s, "p_id": %s, "score": %s}' % (json.dumps(q), json.dumps(d), g) for q, d, g in rows]
        data, lines = render_lines(None, body, style)
        path = directory / "qrels.jsonl"
    path.write_bytes(data)
    return path, lines


METRICS = "ndcg@10,mrr,recall@100,p@5,ap@100"
TREC_NAMES = {"ndcg@10": "ndcg_cut_10", "mrr": "recip_rank", "recall@100": "recall_100", "p@5": "P_5",
              "ap@100": "map_cut_100"}


def reference_values(run: list[tuple], qrels: list[tuple]) -> dict:
    run_dict, qrels_dict = {}, {}
    for q, d, s in run:
        run_dict.setdefault(q, {})[d] = float(s)
    for q, d, g in qrels:
        qrels_dict.setdefault(q, {})[d] = int(g)
    return pytrec_eval.RelevanceEvaluator(qrels_dict, set(TREC_NAMES.values())).evaluate(run_dict)


# -- 1. valid inputs in every format and text style evaluate correctly --------------------------------
@FUZZ
@given(data=run_and_qrels(), run_fmt=st.sampled_from(RUN_FORMATS), qrels_fmt=st.sampled_from(QRELS_FORMATS),
       run_style=text_style(), qrels_style=text_style(), include_missing=st.booleans())
def test_valid_inputs_in_any_format_and_text_style_evaluate_correctly(
        tmp_path_factory, data, run_fmt, qrels_fmt, run_style, qrels_style, include_missing):
    run, qrels = data
    work = tmp_path_factory.mktemp("valid")
    out_dir = work / "out"
    out_dir.mkdir()
    run_path, _ = write_run_file(work, run, run_fmt, run_style)
    qrels_path, _ = write_qrels_file(work, qrels, qrels_fmt, qrels_style)
    out = out_dir / "per_query.parquet"
    argv = ["evaluate", "--run", str(run_path), "--qrels", str(qrels_path), "--metrics", METRICS,
            "--per-query", str(out), "--format", "json"]
    code, stdout, stderr = call_cli(argv + (["--include-missing"] if include_missing else []))
    assert code == 0, stderr
    assert list(listing(out_dir)) == ["per_query.parquet"]
    per_query = pq.read_table(out).to_pandas()
    reference = reference_values(run, qrels)
    run_qids, qrels_qids = {q for q, _, _ in run}, {q for q, _, _ in qrels}
    expected_qids = qrels_qids if include_missing else run_qids & qrels_qids
    assert set(per_query["qid"]) == expected_qids
    for row in per_query.itertuples():
        assert row.min - 1e-12 <= row.expected <= row.max + 1e-12
        assert row.min - 1e-12 <= row.oblivious <= row.max + 1e-12
        if row.qid in reference:
            assert row.oblivious == pytest.approx(reference[row.qid][TREC_NAMES[row.metric]], abs=1e-12), row
        else:  # only in the qrels, added by --include-missing as zeros
            assert (row.oblivious, row.expected, row.min, row.max) == (0, 0, 0, 0)
    assert json.loads(stdout)  # the summary printed is valid JSON


def test_minus_zero_and_zero_are_one_tie_group(tmp_path):
    """-0.0 == 0.0 (IEEE): the two documents tie, exactly as two 0.0 scores do."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q 0 a 1\nq 0 b 0\n")
    results = []
    for scores in (("-0", "0"), ("0", "-0"), ("0", "0"), ("-0.0", "+0.0")):
        run = tmp_path / "run.trec"
        run.write_text(f"q Q0 a 1 {scores[0]} t\nq Q0 b 2 {scores[1]} t\n")
        out = tmp_path / "pq.parquet"
        code, _, stderr = call_cli(["evaluate", "--run", str(run), "--qrels", str(qrels), "--metrics", "ndcg@10",
                                    "--per-query", str(out)])
        assert code == 0, stderr
        row = pq.read_table(out).to_pylist()[0]
        results.append((row["oblivious"], row["expected"], row["min"], row["max"], row["tied_at_cutoff"]))
    assert len(set(results)) == 1
    assert results[0][2] < results[0][3]  # a real tie: min < max


# -- 2. one bad row anywhere: exit 2 naming the file and the physical line ----------------------------
BAD_SCORES = {"NaN": "finite", "nan": "finite", "inf": "finite", "-Infinity": "finite", "1e309": "finite",
              "-1e309": "finite", "abc": "number", "0x1p3": "number", "1,5": None}


@FUZZ
@given(data=run_and_qrels(), run_fmt=st.sampled_from(RUN_FORMATS), style=text_style(),
       bad=st.sampled_from(sorted(BAD_SCORES) + ["duplicate"]), position=st.floats(0, 1, exclude_max=True),
       command=st.sampled_from(["evaluate", "simulate", "ties", "ingest"]))
def test_one_bad_run_row_is_reported_with_its_line_and_nothing_is_written(
        tmp_path_factory, data, run_fmt, style, bad, position, command):
    run, qrels = data
    if run_fmt == "parquet":
        assume(bad in ("NaN", "inf", "-Infinity", "1e309", "-1e309", "duplicate"))
    if run_fmt == "csv":
        assume(bad != "1,5")  # a comma in a CSV field is a column-count error, tested elsewhere
    row = int(position * len(run))
    rows = list(run)
    if bad == "duplicate":
        first = int(position * row) if row else 0
        rows.insert(row + 1, (rows[first][0], rows[first][1], 0.5))
        bad_row = row + 1
    else:
        rows[row] = (rows[row][0], rows[row][1], bad)
        bad_row = row
    work = tmp_path_factory.mktemp("bad")
    run_path, lines = write_run_file(work, rows, run_fmt, style)
    if bad == "duplicate":  # the error is at the second occurrence (in its query's rows)
        key = rows[bad_row][:2]
        bad_row = [i for i, r in enumerate(rows) if r[:2] == key][1]
    qrels_path, _ = write_qrels_file(work, qrels, "trec", {**style, "bom": False})
    out_dir = work / "out"
    out_dir.mkdir()
    before = listing(work)
    argv = {
        "evaluate": ["evaluate", "--run", str(run_path), "--qrels", str(qrels_path),
                     "--per-query", str(out_dir / "pq.parquet")],
        "simulate": ["simulate", "--run", str(run_path), "--to", "bf16", "--out", str(out_dir / "sim.parquet")],
        "ties": ["ties", "--run", str(run_path), "--per-query", str(out_dir / "ties.parquet")],
        "ingest": ["ingest", "--run", str(run_path), "--qrels", str(qrels_path), "--system", "s", "--benchmark", "b",
                   "--task", "t", "--setting", "full", "--instruction", "no", "--precision", "fp32",
                   "--data", str(out_dir)],
    }[command]
    code, _, stderr = call_cli(argv)
    match = assert_input_error(code, stderr, [run_path], line=lines[bad_row])
    expectation = BAD_SCORES.get(bad) or ("duplicate" if bad == "duplicate" else "expected")
    assert expectation in match["what"] or "expected" in match["what"], stderr
    assert "expected" in match["what"], stderr
    assert listing(work) == before  # no output, no temp file, input untouched


@FUZZ
@given(data=run_and_qrels(), qrels_fmt=st.sampled_from(QRELS_FORMATS), style=text_style(),
       bad=st.sampled_from(["-1", "1.5", "x", "conflict"]), position=st.floats(0, 1, exclude_max=True))
def test_one_bad_qrels_row_is_reported_with_its_line(tmp_path_factory, data, qrels_fmt, style, bad, position):
    run, qrels = data
    if qrels_fmt in ("parquet", "jsonl"):
        assume(bad in ("-1", "conflict"))
    row = int(position * len(qrels))
    rows = list(qrels)
    if bad == "conflict":
        q, d, g = rows[row]
        rows.insert(row + 1, (q, d, g + 1))
        bad_row = row + 1
    else:
        rows[row] = (rows[row][0], rows[row][1], int(bad) if qrels_fmt in ("parquet", "jsonl") else bad)
        bad_row = row
    work = tmp_path_factory.mktemp("badq")
    run_path, _ = write_run_file(work, run, "trec", {**style, "bom": False})
    qrels_path, lines = write_qrels_file(work, rows, qrels_fmt, style)
    before = listing(work)
    code, _, stderr = call_cli(["evaluate", "--run", str(run_path), "--qrels", str(qrels_path),
                                "--per-query", str(work / "pq.parquet")])
    match = assert_input_error(code, stderr, [qrels_path], line=lines[bad_row])
    assert "expected" in match["what"]
    assert listing(work) == before


# -- 3. random mutations of valid files through every command ------------------------------------------
HOSTILE_PIECES = ["\r", "\n", "\r\n", "\t", " ", "\ufeff", "\x00", "\x0b", "\u00a0", "\u2028", "é", "🙂", '"', "'",
                  ",", "{", "}", "[", "]", ":", "NaN", "1e309", "-0", "Infinity", "null", "true", "Q0", "q0", "d1",
                  "\\", "\\u0000", "%s", "'; DROP TABLE x; --", "<script>alert(1)</script>"]


@st.composite
def mutated_bytes(draw, original: bytes) -> bytes:
    data = bytearray(original)
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["flip", "delete", "insert", "truncate", "duplicate_line", "swap_case"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "flip" and data:
            data[at] = draw(st.integers(0, 255))
        elif kind == "delete" and data:
            del data[at:at + draw(st.integers(1, 8))]
        elif kind == "insert":
            data[at:at] = draw(st.sampled_from(HOSTILE_PIECES)).encode("utf-8")
        elif kind == "truncate":
            del data[at:]
        elif kind == "duplicate_line":
            lines = bytes(data).split(b"\n")
            pick = draw(st.integers(0, len(lines) - 1))
            lines.insert(pick, lines[pick])
            data = bytearray(b"\n".join(lines))
        elif kind == "swap_case" and data:
            data[at:at + 1] = bytes(data[at:at + 1]).swapcase()
    return bytes(data)


def check_outcome(code: int, stderr: str, inputs: list[Path], out_dir: Path, before: dict, outputs: list[str]):
    after = listing(out_dir)
    assert "Traceback" not in stderr
    if code == 0:
        added = sorted(set(after) - set(before))
        assert added and all(not Path(name).name.startswith(".") for name in added), added
        for name in added:
            if name.endswith(".parquet"):
                pq.read_table(out_dir / name)  # complete and readable
        assert any(name.endswith(tuple(outputs)) for name in added), (added, outputs)
    else:
        assert_input_error(code, stderr, inputs)
        assert after == before, "a failed command left files behind"


@FUZZ
@given(data=run_and_qrels(), run_fmt=st.sampled_from(["trec", "tsv", "csv", "jsonl"]), style=text_style(),
       qrels_fmt=st.sampled_from(["trec", "beir", "jsonl", "csv"]), which=st.sampled_from(["run", "qrels"]),
       command=st.sampled_from(["evaluate", "simulate", "ties", "ingest"]), mutation=st.data())
def test_mutated_text_inputs_give_a_result_or_a_clean_error(
        tmp_path_factory, data, run_fmt, style, qrels_fmt, which, command, mutation):
    run, qrels = data
    work = tmp_path_factory.mktemp("mutated")
    run_path, _ = write_run_file(work, run, run_fmt, style)
    qrels_path, _ = write_qrels_file(work, qrels, qrels_fmt, style)
    target = run_path if which == "run" or command in ("simulate", "ties") else qrels_path
    target.write_bytes(mutation.draw(mutated_bytes(target.read_bytes())))
    out_dir = work / "out"
    out_dir.mkdir()
    if command == "ingest":
        (out_dir / "existing").mkdir()
        pq.write_table(pa.table({"system": ["x"], "display_name": ["X"]}), out_dir / "existing" / "systems.parquet")
    before = listing(out_dir)
    argv, outputs = {
        "evaluate": (["evaluate", "--run", str(run_path), "--qrels", str(qrels_path), "--metrics", METRICS,
                      "--per-query", str(out_dir / "pq.parquet")], ["pq.parquet"]),
        "simulate": (["simulate", "--run", str(run_path), "--to", "fp16", "--scoring", "sigmoid",
                      "--out", str(out_dir / f"sim.{run_fmt}")], [f"sim.{run_fmt}"]),
        "ties": (["ties", "--run", str(run_path), "--k", "3", "--per-query", str(out_dir / "ties.parquet")],
                 ["ties.parquet"]),
        "ingest": (["ingest", "--run", str(run_path), "--qrels", str(qrels_path), "--system", "s", "--benchmark",
                    "b", "--task", "t", "--setting", "full", "--instruction", "no", "--precision", "fp32",
                    "--data", str(out_dir)], [".parquet"]),
    }[command]
    code, _, stderr = call_cli(argv)
    check_outcome(code, stderr, [run_path, qrels_path], out_dir, before, outputs)
    if command == "ingest":
        from evalcore.store import Store

        store = Store(out_dir)
        assert store.skipped == []
    if command == "simulate" and code == 0:  # the written run reads back (same format) and evaluates
        code, _, stderr = call_cli(["ties", "--run", str(out_dir / f"sim.{run_fmt}")])
        assert code == 0, stderr


@FUZZ
@given(data=run_and_qrels(), mutation=st.data(), which=st.sampled_from(["run", "qrels"]))
def test_mutated_parquet_inputs_give_a_result_or_a_clean_error(tmp_path_factory, data, mutation, which):
    run, qrels = data
    work = tmp_path_factory.mktemp("mutpq")
    style = {"sep": " ", "score_style": 0}
    run_path, _ = write_run_file(work, run, "parquet", style)
    qrels_path, _ = write_qrels_file(work, qrels, "parquet", style)
    target = run_path if which == "run" else qrels_path
    original = target.read_bytes()
    damaged = bytearray(original)
    for _ in range(mutation.draw(st.integers(1, 4))):
        at = mutation.draw(st.integers(0, len(damaged) - 1))
        damaged[at] = mutation.draw(st.integers(0, 255))
    if mutation.draw(st.booleans()):
        damaged = damaged[: mutation.draw(st.integers(0, len(damaged)))]
    target.write_bytes(bytes(damaged))
    out_dir = work / "out"
    out_dir.mkdir()
    code, _, stderr = call_cli(["evaluate", "--run", str(run_path), "--qrels", str(qrels_path),
                                "--per-query", str(out_dir / "pq.parquet")])
    check_outcome(code, stderr, [run_path, qrels_path], out_dir, {}, ["pq.parquet"])


def test_qids_only_in_the_run_or_only_in_the_qrels(tmp_path):
    run = tmp_path / "run.trec"
    run.write_text("a Q0 d1 1 1 t\nb Q0 d1 1 1 t\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("b 0 d1 1\nc 0 d1 1\n")
    out = tmp_path / "pq.parquet"
    code, _, stderr = call_cli(["evaluate", "--run", str(run), "--qrels", str(qrels), "--per-query", str(out)])
    assert code == 0, stderr
    assert set(pq.read_table(out)["qid"].to_pylist()) == {"b"}
    code, _, stderr = call_cli(["evaluate", "--run", str(run), "--qrels", str(qrels), "--per-query", str(out),
                                "--include-missing"])
    assert code == 0, stderr
    assert set(pq.read_table(out)["qid"].to_pylist()) == {"b", "c"}
    qrels.write_text("c 0 d1 1\n")  # no query in common
    out.unlink()
    code, _, stderr = call_cli(["evaluate", "--run", str(run), "--qrels", str(qrels), "--per-query", str(out)])
    assert_input_error(code, stderr, [run])
    assert not out.exists()


# -- 4. values no reader may misread, outputs that must not harm anything ---------------------
UNICODE_SPACES = ["\u00a0", "\u2007", "\u2009", "\u200a", "\u3000", "\u202f", "\u1680"]


@FUZZ
@given(data=run_and_qrels(), run_fmt=st.sampled_from(["trec", "tsv", "csv"]),
       qrels_fmt=st.sampled_from(["trec", "beir", "csv"]), spaces=st.data())
def test_unicode_spaces_around_ids_match_in_every_text_format(tmp_path_factory, data, run_fmt, qrels_fmt, spaces):
    """Ids padded with Unicode spaces (NBSP...) in TREC, TSV or CSV evaluate like the bare ids (pytrec_eval's
    values on the bare rows): NBSP was trimmed in CSV but kept in TREC, so the same id did not match."""
    run, qrels = data

    def padded(rows):
        out = []
        for q, d, value in rows:
            left, right = (spaces.draw(st.sampled_from(["", *UNICODE_SPACES])) for _ in range(2))
            out.append((left + q + right, spaces.draw(st.sampled_from(["", *UNICODE_SPACES])) + d, value))
        return out

    work = tmp_path_factory.mktemp("spaces")
    plain = {"eol": "\n", "bom": False, "sep": " ", "blank_every": 0, "trailing": "", "score_style": 0,
             "final_eol": True}
    run_path, _ = write_run_file(work, padded(run), run_fmt, plain)
    qrels_path, _ = write_qrels_file(work, padded(qrels), qrels_fmt, plain)
    out = work / "pq.parquet"
    code, _, stderr = call_cli(["evaluate", "--run", str(run_path), "--qrels", str(qrels_path), "--metrics", METRICS,
                                "--per-query", str(out)])
    assert code == 0, stderr
    reference = reference_values(run, qrels)
    per_query = pq.read_table(out).to_pandas()
    assert set(per_query["qid"]) == set(reference)
    for row in per_query.itertuples():
        assert row.oblivious == pytest.approx(reference[row.qid][TREC_NAMES[row.metric]], abs=1e-12), row


HOSTILE_VALUES = {
    "float qid 1e20": ("run", {"qid": pa.array([1e20, 2e20]), "docid": ["a", "a"], "score": [1.0, 1.0]}),
    "float qid nan": ("run", {"qid": pa.array([1.0, float("nan")]), "docid": ["a", "a"], "score": [1.0, 1.0]}),
    "list qid": ("run", {"qid": [["q"], ["r"]], "docid": ["a", "a"], "score": [1.0, 1.0]}),
    "grade 1e30": ("qrels", {"qid": ["q0"], "docid": ["d0"], "relevance": [1e30]}),
    "grade 9.3e18": ("qrels", {"qid": ["q0"], "docid": ["d0"], "relevance": [9.3e18]}),
    "grade 1e19": ("qrels", {"qid": ["q0"], "docid": ["d0"], "relevance": [1e19]}),
    "grade 2^64-1": ("qrels", {"qid": ["q0"], "docid": ["d0"], "relevance": pa.array([2**64 - 1], pa.uint64())}),
}


@pytest.mark.parametrize("case, fmt, command", [
    (case, fmt, command) for case in sorted(HOSTILE_VALUES) for fmt in ("parquet", "jsonl")
    for command in ("evaluate", "ingest", "simulate", "ties")
    if not (command in ("simulate", "ties") and HOSTILE_VALUES[case][0] == "qrels")  # they read no qrels
    # JSON lines cannot say these: NaN is no JSON, 2^64-1 reads as the float 1.8e19 (the 1e19 case)
    and not (fmt == "jsonl" and case in ("float qid nan", "grade 2^64-1"))])
def test_values_beyond_what_ids_and_grades_hold_are_one_line_in_every_command(tmp_path, case, fmt, command):
    """They crashed in Arrow's casts (1e30, 2^64-1, a list qid) or merged queries silently (1e20 and 2e20)."""
    which, columns = HOSTILE_VALUES[case]
    hostile = tmp_path / f"{which}.{fmt}"
    if fmt == "parquet":
        pq.write_table(pa.table(columns), hostile)
    else:
        rows = pa.table(columns).to_pylist()
        hostile.write_text("".join(json.dumps(row) + "\n" for row in rows))
    run = hostile if which == "run" else write_run_file(tmp_path, [("q0", "d0", 1.0)], "trec", {
        "eol": "\n", "bom": False, "sep": " ", "blank_every": 0, "trailing": "", "score_style": 0,
        "final_eol": True})[0]
    qrels = hostile if which == "qrels" else tmp_path / "qrels.txt"
    if which == "run":
        qrels.write_text("q0 0 d0 1\n")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    argv = {
        "evaluate": ["evaluate", "--run", str(run), "--qrels", str(qrels), "--per-query", str(out_dir / "pq.parquet")],
        "ingest": ["ingest", "--run", str(run), "--qrels", str(qrels), "--system", "s", "--benchmark", "b", "--task",
                   "t", "--setting", "full", "--instruction", "no", "--precision", "fp32", "--data", str(out_dir)],
        "simulate": ["simulate", "--run", str(run), "--to", "bf16", "--out", str(out_dir / "sim.parquet")],
        "ties": ["ties", "--run", str(run), "--per-query", str(out_dir / "ties.parquet")],
    }[command]
    before = listing(tmp_path)
    code, _, stderr = call_cli(argv)
    match = assert_input_error(code, stderr, [hostile])
    assert "expected" in match["what"]
    assert listing(tmp_path) == before


OUTPUT_KINDS = ["the run", "a symlink to the run", "a hard link to the run", "a symlink to a new file", "a fifo",
                "a directory", "a path under a file", "a 300-character name", "/dev/full"]


@FUZZ
@given(data=run_and_qrels(), kind=st.sampled_from(OUTPUT_KINDS),
       command=st.sampled_from(["evaluate", "ties", "simulate"]), run_fmt=st.sampled_from(RUN_FORMATS))
def test_an_output_never_changes_an_input_nor_replaces_a_link_or_special_file(
        tmp_path_factory, data, kind, command, run_fmt):
    """Every outcome is the output written where it should be (through a symlink, into a FIFO) or one line
    naming the output; the inputs are byte-for-byte intact, links stay links, /dev/full stays a device."""
    import stat
    import threading

    run, qrels = data
    work = tmp_path_factory.mktemp("outputs")
    style = {"eol": "\n", "bom": False, "sep": " ", "blank_every": 0, "trailing": "", "score_style": 0,
             "final_eol": True}
    run_path, _ = write_run_file(work, run, run_fmt, style)
    qrels_path, _ = write_qrels_file(work, qrels, "trec", style)
    inputs = {p: p.read_bytes() for p in (run_path, qrels_path)}
    new_target = work / "elsewhere" / "target.out"
    out = {"the run": run_path, "a symlink to the run": work / "link.out", "a hard link to the run": work / "hard.out",
           "a symlink to a new file": work / "newlink.out", "a fifo": work / "fifo.out",
           "a directory": work / "folder.out", "a path under a file": qrels_path / "x.out",
           "a 300-character name": work / ("n" * 300), "/dev/full": Path("/dev/full")}[kind]
    received: list[bytes] = []
    reader = None
    if kind == "a symlink to the run":
        out.symlink_to(run_path)
    elif kind == "a hard link to the run":
        os.link(run_path, out)
    elif kind == "a symlink to a new file":
        new_target.parent.mkdir()
        out.symlink_to(new_target)
    elif kind == "a fifo":
        os.mkfifo(out)
        reader = threading.Thread(target=lambda: received.append(open(out, "rb").read()), daemon=True)
        reader.start()
    elif kind == "a directory":
        out.mkdir()
    argv = {"evaluate": ["evaluate", "--run", str(run_path), "--qrels", str(qrels_path), "--per-query", str(out)],
            "ties": ["ties", "--run", str(run_path), "--per-query", str(out)],
            "simulate": ["simulate", "--run", str(run_path), "--to", "bf16", "--out", str(out)]}[command]
    code, _, stderr = call_cli(argv)
    if reader is not None:
        if code != 0:  # nothing was written: let the reader see an end of file
            open(out, "wb").close()
        reader.join(30)
    assert all(path.read_bytes() == data for path, data in inputs.items()), "an input changed"
    assert "Traceback" not in stderr
    if kind in ("the run", "a symlink to the run", "a hard link to the run", "a directory", "a path under a file",
                "a 300-character name", "/dev/full"):
        assert_input_error(code, stderr, [out])
    elif code != 0:  # what was written is refused for its content (a TREC id with a space...): one line
        assert_input_error(code, stderr, [run_path, out])
    elif kind == "a symlink to a new file":
        assert out.is_symlink() and new_target.stat().st_size > 0
    else:
        assert stat.S_ISFIFO(os.lstat(out).st_mode) and received and received[0]
    assert stat.S_ISCHR(os.lstat("/dev/full").st_mode)
    assert kind not in ("a symlink to the run", "a symlink to a new file") or out.is_symlink()


# -- 5. the same through a real process: exit status, one stderr line, bounded memory -----------------
def high_water_rss(pid: int) -> int:
    """VmHWM of a live process in bytes (0 once it is gone). ``wait4``'s ru_maxrss is no use here: Linux
    carries the parent's (pytest's) high-water mark across fork + exec into the child's figure."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def run_process(argv: list[str], cwd: Path, timeout: float = 60) -> tuple[int, str, str, int]:
    """``python -m evalcore ARGV``; (exit code, stdout, stderr, peak RSS in bytes sampled every 5 ms)."""
    process = subprocess.Popen([sys.executable, "-m", "evalcore", *argv], cwd=cwd, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    peak, deadline = 0, time.monotonic() + timeout
    try:
        while process.poll() is None:
            peak = max(peak, high_water_rss(process.pid))
            if time.monotonic() > deadline:
                raise AssertionError(f"evalcore {argv} hung for {timeout}s")
            time.sleep(0.005)
        stdout, stderr = process.communicate(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return process.returncode, stdout.decode(), stderr.decode(), peak


@pytest.mark.slow
def test_subprocess_errors_are_one_line_and_ten_megabyte_lines_use_bounded_memory(tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\n")
    small = tmp_path / "small.trec"
    small.write_text("q1 Q0 d1 1 1.0 t\n")
    code, _, stderr, baseline = run_process(["evaluate", "--run", str(small), "--qrels", str(qrels)], tmp_path)
    assert code == 0, stderr
    ten_mb = 10 * 1024 * 1024
    cases = {
        "long_docid.trec": b"q1 Q0 d1 1 1.0 t\nq1 Q0 " + b"x" * ten_mb + b" 2 0.5 t\n",  # valid
        "long_garbage.trec": b"q1 Q0 d1 1 1.0 t\n" + b"y" * ten_mb + b"\n",
        "long_score.tsv": b"qid\tdocid\tscore\nq1\td1\t" + b"9" * ten_mb + b"\n",
        "long_json.jsonl": b'{"qid": "q1", "docid": "' + b"z" * ten_mb + b'", "score": NaN}\n',
        "nan_crlf_bom.trec": b"\xef\xbb\xbfq1 Q0 d1 1 1.0 t\r\nq1 Q0 d2 2 NaN t\r\n",
        "binary.trec": bytes(range(256)) * 64,
    }
    figures = {}
    for name, content in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        out = tmp_path / "out" / "pq.parquet"
        code, _, stderr, peak = run_process(["evaluate", "--run", str(path), "--qrels", str(qrels),
                                             "--per-query", str(out)], tmp_path)
        figures[name] = (code, peak)
        if name == "long_docid.trec":
            assert code == 0, stderr
            assert pq.read_table(out).num_rows == 3
            out.unlink()
        else:
            assert_input_error(code, stderr, [path], line=None)
            assert ":" in stderr.split("error: ", 1)[1]
            assert not out.parent.exists() or not any(out.parent.iterdir())
        # a 10 MB line costs a small multiple of its size, not of the file's line count
        assert peak - baseline < 25 * len(content) + 64 * 1024 * 1024, (name, peak, baseline)
    print("peak RSS (MiB) baseline", baseline >> 20, {k: (c, p >> 20) for k, (c, p) in figures.items()})


# -- typed numbers and seeds: a verdict at the written precision, or one line ---------------------------------

REPORTED_ALPHABET = "0123456789" * 3 + ".eE+-_% \t\x1b\n١٥²"


def written_precision(text: str) -> tuple[float, float] | None:
    """(value, tolerance) of a reported number by counting its written digits (independent of Decimal's
    exponent arithmetic): None when it is not digits[.digits][e±dd][%] or is a bare whole number up to 1."""
    found = re.fullmatch(r"([0-9]+)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]{1,2}))?( *%)?|\.([0-9]+)(?:[eE]([+-]?[0-9]{1,2}))?( *%)?",
                         text.strip())
    if not found:
        return None
    whole, decimals, exponent, percent = (found[1] or "0", found[2] if found[1] else found[5], found[3] or found[6],
                                          found[4] or found[7])
    decimals = decimals or ""
    shift = int(exponent or 0)
    value = int(whole + decimals) * 10.0 ** (shift - len(decimals))
    last_place = shift - len(decimals)  # 10^last_place is the unit of the last written digit
    tolerance = 0.5 * 10.0 ** last_place
    if percent or value > 1:
        if value > 100:
            return None
        return value / 100, tolerance / 100
    if last_place >= 0:
        return None  # 0, 1, 1e0: a fraction or a percentage? asked back
    return value, tolerance


@FUZZ
@given(text=st.one_of(st.text(alphabet=REPORTED_ALPHABET, min_size=1, max_size=12),
                     st.from_regex(r"[0-9]{1,3}(\.[0-9]{0,5})?([eE][+-]?[0-9]{1,2})? ?%?", fullmatch=True)))
def test_a_typed_number_gets_its_written_precision_or_one_line(tmp_path_factory, text):
    assume("\x00" not in text)
    folder = tmp_path_factory.mktemp("reported")
    (folder / "run.trec").write_text("q1 Q0 a 1 0.5 s\nq1 Q0 b 2 0.5 s\n")
    (folder / "qrels.txt").write_text("q1 0 a 1\n")
    code, stdout, stderr = call_cli(["explain", "--run", str(folder / "run.trec"), "--qrels",
                                     str(folder / "qrels.txt"), f"--reported={text}", "--format", "json"])
    expected = written_precision(text)
    if expected is None:
        assert code == 2 and stdout == "", (text, stderr)
        (line,) = stderr.strip().splitlines()
        assert line.startswith("evalcore explain: error: reported number ") and "\x1b" not in line, line
        return
    assert code in (0, 1), (text, stderr)
    (record,) = json.loads(stdout)
    assert math.isclose(record["reported"], expected[0], rel_tol=1e-12, abs_tol=1e-15), text
    assert math.isclose(record["tolerance"], expected[1], rel_tol=1e-9), text
    assert record["tolerance"] < 0.5  # never the ±0.5 of a bare integer


@FUZZ
@given(seed=st.one_of(st.integers(-2**40, 2**40), st.sampled_from([0, 2**31 - 1, 2**31, -1, 10**30])))
def test_every_seed_is_taken_in_its_bounds_and_refused_outside_them(tmp_path_factory, seed):
    from evalcore.commands._options import SEED_BOUNDS

    folder = tmp_path_factory.mktemp("seed")
    (folder / "run.trec").write_text("q1 Q0 a 1 0.5 s\nq1 Q0 b 2 0.5 s\n")
    (folder / "qrels.txt").write_text("q1 0 a 1\n")
    inside = SEED_BOUNDS[0] <= seed <= SEED_BOUNDS[1]
    argv = ["explain", "--run", str(folder / "run.trec"), "--qrels", str(folder / "qrels.txt"), "--reported", "0.5",
            f"--seed={seed}", "--format", "json"]
    try:
        code, stdout, stderr = call_cli(argv)
    except SystemExit as stop:  # argparse: usage and one error line naming the option, exit 2
        assert not inside and stop.code == 2, seed
        return
    assert inside and code in (0, 1), (seed, stderr)
    assert f"random:{seed}" in json.loads(stdout)[0]["policies"] or f"value[random:{seed}]" in json.loads(stdout)[0]
