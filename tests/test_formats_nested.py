"""Nested JSON runs and qrels (evalcore.formats.nested): files written by the tools that write them — ranx's
``Run.save`` / ``Qrels.save``, pytrec_eval's dicts through ``json.dump``, mteb's predictions writer
(tests/fixtures/nested_json, made by mteb's own code) — read as they are and scored as pytrec_eval scores the
same dicts; malformed files are one line naming the file and the key path, exit code 2, nothing written."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from evalcore import engine
from evalcore.cli import main
from evalcore.errors import InputError
from evalcore.formats import detect_run_format, read_qrels, read_run, write_run
from formats_data import raises_at, write_text
from needs import require_module

FIXTURES = Path(__file__).parent / "fixtures" / "nested_json"
ROOT = Path(__file__).resolve().parents[1]


def random_dicts(seed: int, n_queries: int = 30) -> tuple[dict, dict]:
    """A pytrec_eval-style run (float32-representable scores with heavy ties: pytrec_eval narrows to float32)
    and graded qrels over the same queries, ids as text."""
    rng = np.random.default_rng(seed)
    run, qrels = {}, {}
    for q in range(n_queries):
        docs = [f"d{d}" for d in rng.choice(60, size=int(rng.integers(1, 40)), replace=False)]
        run[f"q{q}"] = {d: float(np.float32(rng.integers(0, 8) / 4)) for d in docs}
        judged = rng.choice(60, size=int(rng.integers(1, 6)), replace=False)
        qrels[f"q{q}"] = {f"d{d}": int(rng.integers(0, 3)) for d in judged}
    return run, qrels


def pytrec_values(run: dict, qrels: dict) -> dict[str, dict[str, float]]:
    pytrec_eval = require_module("pytrec_eval")
    measures = {"ndcg_cut_10", "P_5", "recip_rank"}
    return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)


def assert_scored_as_pytrec_eval(run_path: Path, qrels_path: Path, run: dict, qrels: dict) -> None:
    """evalcore's docid-desc oblivious values of the files equal pytrec_eval's on the dicts, query by query."""
    expected = pytrec_values(run, qrels)
    table = engine.evaluate(run_path, qrels_path, ["ndcg@10", "p@5", "mrr"], "docid-desc")
    names = {"ndcg@10": "ndcg_cut_10", "p@5": "P_5", "mrr": "recip_rank"}
    assert len(table) == 3 * len(expected)
    for row in table.itertuples():
        assert row.oblivious == pytest.approx(expected[row.qid][names[row.metric]], abs=1e-12), row


def test_pytrec_eval_dicts_dumped_by_json_read_and_score_as_pytrec_eval(tmp_path: Path) -> None:
    run, qrels = random_dicts(1)
    (tmp_path / "run.json").write_text(json.dumps(run))
    (tmp_path / "qrels.json").write_text(json.dumps(qrels, indent=4))  # pretty-printed: one entry a line
    assert detect_run_format(tmp_path / "run.json") == "json"
    assert_scored_as_pytrec_eval(tmp_path / "run.json", tmp_path / "qrels.json", run, qrels)


def test_files_written_by_ranx_read_as_they_are(tmp_path: Path) -> None:
    ranx = require_module("ranx")
    run, qrels = random_dicts(2)
    ranx.Run(run).save(str(tmp_path / "run.json"))
    ranx.Qrels({q: {d: g for d, g in judged.items() if g > 0} or {"none": 0} for q, judged in qrels.items()}
               ).save(str(tmp_path / "qrels.json"))
    saved_qrels = json.loads((tmp_path / "qrels.json").read_text())
    read = read_run(tmp_path / "run.json")
    assert read.num_rows == sum(map(len, run.values()))
    by_pair = {(q, d): s for q, d, s in zip(*(read[c].to_pylist() for c in ("qid", "docid", "score")))}
    assert by_pair == {(q, d): s for q, docs in run.items() for d, s in docs.items()}
    assert_scored_as_pytrec_eval(tmp_path / "run.json", tmp_path / "qrels.json", run, saved_qrels)


def test_mteb_predictions_written_by_mteb_read_as_the_run_inside() -> None:
    """mteb's ``{TASK}_predictions.json`` (its writer's own output): the metadata is skipped, the one subset and
    split hold the run; pytrec_eval scores the dict inside the same."""
    path = FIXTURES / "one_split" / "ARCChallenge_predictions.json"
    saved = json.loads(path.read_text())
    assert set(saved) == {"mteb_model_meta", "default"} and set(saved["default"]) == {"test"}
    run = saved["default"]["test"]
    table = read_run(path)
    assert list(zip(*(table[c].to_pylist() for c in ("qid", "docid", "score")))) == [
        (q, d, s) for q, docs in run.items() for d, s in docs.items()]
    qrels = {"q1": {"d2": 1, "d4": 2}, "q2": {"d1": 1}, "q3": {"d3": 1}}
    qrels_path = write_text(Path(os.environ.get("TMPDIR", "/tmp")) / f"mteb-qrels-{os.getpid()}.json",
                            json.dumps(qrels))
    try:
        assert_scored_as_pytrec_eval(path, qrels_path, run, qrels)
    finally:
        qrels_path.unlink()


def test_mteb_predictions_of_two_splits_are_refused_naming_them() -> None:
    path = FIXTURES / "two_splits" / "ARCChallenge_predictions.json"
    with raises_at(path, None, "default/test", "default/dev", "jq"):
        read_run(path)


def test_gzipped_nested_json_reads_as_the_plain_file(tmp_path: Path) -> None:
    run, qrels = random_dicts(3)
    with gzip.open(tmp_path / "run.json.gz", "wt") as handle:
        json.dump(run, handle)
    (tmp_path / "run.json").write_text(json.dumps(run))
    assert read_run(tmp_path / "run.json.gz").equals(read_run(tmp_path / "run.json"))


def test_written_nested_json_is_read_back_by_evalcore_pytrec_eval_and_ranx(tmp_path: Path) -> None:
    run, qrels = random_dicts(4)
    (tmp_path / "in.json").write_text(json.dumps(run))
    table = read_run(tmp_path / "in.json")
    write_run(table, tmp_path / "out.json")
    write_run(table, tmp_path / "out.json.gz")
    assert json.loads((tmp_path / "out.json").read_text()) == run  # scores as the shortest text: exact
    assert read_run(tmp_path / "out.json.gz").equals(table)
    ranx = require_module("ranx")
    assert {q: dict(docs) for q, docs in ranx.Run.from_file(str(tmp_path / "out.json")).to_dict().items()} == run


def test_a_grade_written_as_a_float_counts_as_the_integer(tmp_path: Path) -> None:
    qrels = read_qrels(write_text(tmp_path / "qrels.json", '{"q1": {"d1": 2.0, "d2": 0}}'))
    assert qrels["relevance"].to_pylist() == [2, 0]


def test_json_lines_in_a_json_file_are_still_json_lines(tmp_path: Path) -> None:
    path = write_text(tmp_path / "run.json", '{"qid": "q1", "docid": "d1", "score": 1}\n'
                                             '{"qid": "q1", "docid": "d2", "score": 0.5}\n')
    assert detect_run_format(path) == "jsonl" and read_run(path).num_rows == 2
    crumb_like = write_text(tmp_path / "crumb.json", '{"query": {"id": "q1"}, "items": []}\n'
                                                     '{"query": {"id": "q2"}, "items": []}\n')
    assert detect_run_format(crumb_like) == "jsonl"


MALFORMED = {
    "text score": ('{"q1": {"d1": 0.5},\n"q17": {"d2": 1, "d3": "abc"}}', 2, 'q17 → d3: score "abc" is not a number'),
    "bool score": ('{"q1": {"d1": true}}', 1, "q1 → d1: score true is not a number"),
    "null score": ('{"q1": {"d1": null}}', 1, "q1 → d1: score null is not a number"),
    "NaN score": ('{"q1": {"d1": NaN}}', 1, "q1 → d1: score NaN is not a finite number"),
    "overflow": ('{"q1": {"d1": 1e400}}', 1, "q1 → d1: score Infinity is not a finite number"),
    "400 digits": ('{"q1": {"d1": 1' + "0" * 400 + '}}', 1, "q1 → d1: score 1000", "beyond float64"),
    "object score": ('{"q1": {"d1": {"x": 1}}}', 1, 'q1 → d1: score {"x": 1} is not a number'),
    "docid twice": ('{"q1": {"d1": 0.5, "d1": 0.2}}', 1, "q1 → d1: document d1 appears twice in query q1"),
    "qid twice": ('{"q1": {"d1": 0.5},\n"q1": {"d2": 0.2}}', 2, "q1: query q1 appears twice (first on line 1)"),
    "query not an object": ('{"q1": {"d1": 0.5}, "q2": [1, 2]}', 1, "q2: expected an object {docid: score}"),
    "truncated": ('{"q1": {"d1": 0.5}, "q2": {"d1": 0.', 1, "q2: expected JSON"),
    "unclosed": ('{"q1": {"d1": 0.5}', 1, "q1: expected ',' or '}' after its value, found the end of the file"),
    "empty": ("{}", None, "empty file"),
    "nested too deep": ('{"q1": {"d1": ' + "[" * 100_000 + "]" * 100_000 + "}}", 1, "q1: more than 100 levels of "
                        "nesting", "TIEBREAK_MAX_JSON_DEPTH"),
    "undecodable": (b'{"q1": {"d\xff1": 0.5}}', 1, "expected UTF-8 text, found undecodable byte 0xff"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_file_is_one_line_naming_the_key_path(tmp_path: Path, case: str) -> None:
    text, line, *needles = MALFORMED[case]
    path = write_text(tmp_path / "run.json", text)
    with raises_at(path, line, *needles):
        read_run(path)


def test_malformed_qrels_name_the_grade(tmp_path: Path) -> None:
    for text, needle in (('{"q1": {"d1": 1.5}}', "q1 → d1: grade 1.5 is not a whole number"),
                         ('{"q1": {"d1": -1}}', "q1 → d1: grade -1 is negative"),
                         ('{"q1": {"d1": 1e19}}', "q1 → d1: grade 1e+19 does not fit in 64 bits"),
                         ('{"q1": {"d1": "1"}}', 'q1 → d1: grade "1" is not a number')):
        path = write_text(tmp_path / "qrels.json", text)
        with raises_at(path, 1, needle):
            read_qrels(path)


def test_cli_refuses_a_malformed_file_with_exit_2_and_writes_nothing(tmp_path: Path, capsys) -> None:
    run = write_text(tmp_path / "run.json", '{"q1": {"d1": 0.5},\n"q17": {"d2": 1, "d3": "abc"}}')
    qrels = write_text(tmp_path / "qrels.json", '{"q1": {"d1": 1}}')
    out = tmp_path / "per-query.json"
    assert main(["evaluate", "--run", str(run), "--qrels", str(qrels), "--per-query", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [f'evalcore evaluate: error: {run}:2: q17 → d3: score "abc" is not a number']
    assert sorted(p.name for p in tmp_path.iterdir()) == ["qrels.json", "run.json"]


def test_per_query_json_holds_the_values_of_the_parquet(tmp_path: Path, capsys) -> None:
    run, qrels = random_dicts(5)
    (tmp_path / "run.json").write_text(json.dumps(run))
    (tmp_path / "qrels.json").write_text(json.dumps(qrels))
    common = ["evaluate", "--run", str(tmp_path / "run.json"), "--qrels", str(tmp_path / "qrels.json"),
              "--metrics", "ndcg@10,p@5"]
    assert main([*common, "--per-query", str(tmp_path / "pq.json")]) == 0
    assert main([*common, "--per-query", str(tmp_path / "pq.parquet")]) == 0
    nested = json.loads((tmp_path / "pq.json").read_text())
    import pyarrow.parquet as pq

    flat = pq.read_table(tmp_path / "pq.parquet").to_pylist()
    assert len(flat) == sum(len(metrics) for metrics in nested.values())
    for row in flat:
        record = nested[row["qid"]][row["metric"]]
        assert record == {k: row[k] for k in ("oblivious", "expected", "min", "max", "n_candidates",
                                              "tied_at_cutoff", "tie_policy")}
    expected = pytrec_values(run, qrels)
    assert {q: m["ndcg@10"]["oblivious"] for q, m in nested.items()} == pytest.approx(
        {q: v["ndcg_cut_10"] for q, v in expected.items()}, abs=1e-12)


def test_the_line_length_limit_bounds_one_querys_object(tmp_path: Path, monkeypatch) -> None:
    """A compact file is one line: the limit applies to a query's object, so a file larger than the limit whose
    queries are small is read, and a query larger than it is refused naming it."""
    run = {f"q{q}": {f"d{d}": 0.5 for d in range(20)} for q in range(200)}
    path = write_text(tmp_path / "run.json", json.dumps(run))
    monkeypatch.setenv("TIEBREAK_MAX_LINE_BYTES", "1000")
    assert path.stat().st_size > 20 * 1000 and read_run(path).num_rows == 4000
    run["q7"] = {f"d{d}": 0.5 for d in range(200)}
    write_text(path, json.dumps(run))
    with raises_at(path, 1, "q7: more than 1,000 bytes in one JSON value", "TIEBREAK_MAX_LINE_BYTES"):
        read_run(path)


def test_a_dict_in_memory_and_the_file_give_the_same_values(tmp_path: Path) -> None:
    run, qrels = random_dicts(6)
    (tmp_path / "run.json").write_text(json.dumps(run))
    (tmp_path / "qrels.json").write_text(json.dumps(qrels))
    from_files = engine.evaluate_table(tmp_path / "run.json", tmp_path / "qrels.json", ["ndcg@10", "mrr@10"])
    from_dicts = engine.evaluate_table(run, qrels, ["ndcg@10", "mrr@10"])
    assert from_files.equals(from_dicts)


@pytest.mark.slow
def test_reading_streams_a_large_file_in_less_memory_than_json_load(tmp_path: Path) -> None:
    """2M scores (~65 MB of JSON, a document id per row): reading it costs less than half the peak memory of
    ``json.load`` (which holds the text and a Python object per id and score), each measured in a fresh process
    above the same imports (pyarrow's first string conversion costs ~45 MB once, counted in the baseline)."""
    rng = np.random.default_rng(0)
    path = tmp_path / "big.json"
    with open(path, "w") as handle:
        handle.write("{")
        for q in range(20_000):
            scores = rng.random(100)
            handle.write(("," if q else "") + json.dumps(f"q{q}") + ": "
                         + json.dumps({f"doc{100 * q + d}": float(s) for d, s in enumerate(scores)}))
        handle.write("}")

    def peak_mb(code: str) -> float:  # VmHWM: ru_maxrss would carry pytest's own peak across the exec
        script = ("import sys\n" + code + "\nprint(next(line.split()[1] for line in open('/proc/self/status') "
                  "if line.startswith('VmHWM')))")
        out = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=True,
                             cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        return int(out.stdout.split()[-1]) / 1024

    warm = "import json, pyarrow, numpy, evalcore.formats\npyarrow.array(['x'] * 1000, pyarrow.string())\n"
    baseline = peak_mb(warm)
    ours = peak_mb(warm + "from evalcore.formats.nested import read_nested\nfrom pathlib import Path\n"
                          "t, _ = read_nested(Path(sys.argv[1]), 'run')\nassert t.num_rows == 2_000_000")
    theirs = peak_mb(warm + "d = json.load(open(sys.argv[1]))")
    print(f"peak above the imports: read_nested {ours - baseline:.0f} MB, json.load {theirs - baseline:.0f} MB")
    assert ours - baseline < 0.5 * (theirs - baseline), (baseline, ours, theirs)


def test_a_wrong_value_in_memory_is_refused_too() -> None:
    with pytest.raises(InputError):
        engine.evaluate_table({"q1": {"d1": float("nan")}}, {"q1": {"d1": 1}}, ["ndcg@10"])
    assert pa is not None


def test_import_crumb_reads_a_nested_json_run_as_crumbs_own_lines(tmp_path: Path) -> None:
    """A CRUMB run written as pytrec_eval's dict ({qid: {docid: score}}) gives the rows of the same run in CRUMB's
    own JSON lines (large single-line documents are told from CRUMB's lines by their first 64 KiB)."""
    from evalcore import crumb

    crumb_dir = Path(__file__).parent / "fixtures" / "crumb"
    lines = crumb_dir / "runs" / "minilm" / "legal_qa_minilm.jsonl"
    as_dict = {}
    for text in lines.read_text().splitlines():
        record = json.loads(text)
        as_dict[record["query"]["id"]] = {item["id"]: item["score"] for item in record["items"]}
    nested = tmp_path / "legal_qa_minilm.json"
    nested.write_text(json.dumps(as_dict))
    expected = crumb.evaluate_task(lines, crumb_dir, "legal_qa")
    assert crumb.evaluate_task(nested, crumb_dir, "legal_qa").equals(expected)
