"""CLI tests of ``evalcore simulate`` and ``evalcore ties``: round trips, references computed here."""
from __future__ import annotations

import csv
import io
import itertools
import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalcore.cli import main


def bf16_round(values: np.ndarray) -> np.ndarray:
    """Round-to-nearest-even float32 -> bfloat16 via the bit trick (finite inputs), returned as float32."""
    bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32).view(np.float32)


def make_rows(seed: int, n_queries: int = 6, n_docs: int = 25) -> list[tuple[str, str, float]]:
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 3, (n_queries, n_docs))
    return [(f"q{i}", f"doc{i}_{j}", float(logits[i, j])) for i in range(n_queries) for j in range(n_docs)]


def write_trec(path, rows: list[tuple[str, str, float]]) -> None:
    lines = []
    for qid, group in itertools.groupby(rows, key=lambda row: row[0]):
        ranked = sorted(group, key=lambda row: -row[2])
        lines += [
            f"{qid} Q0 {docid} {rank} {score!r} testsys" for rank, (_, docid, score) in enumerate(ranked, 1)
        ]
    path.write_text("\n".join(lines) + "\n")


def parse_trec_scores(path) -> dict[tuple[str, str], float]:
    """Read a TREC run by hand: qid Q0 docid rank score tag."""
    scores = {}
    for line in path.read_text().splitlines():
        if line.strip():
            qid, _, docid, _, score, _ = line.split()
            scores[qid, docid] = float(score)
    return scores


def test_simulate_trec_round_trip(tmp_path, capsys):
    rows = make_rows(1)
    source, target = tmp_path / "run.trec", tmp_path / "run.bf16.trec"
    write_trec(source, rows)
    assert main(["simulate", "--run", str(source), "--to", "bf16", "--out", str(target)]) == 0
    assert "wrote 150 rows" in capsys.readouterr().out
    written = parse_trec_scores(target)
    assert set(written) == {(qid, docid) for qid, docid, _ in rows}
    expected = bf16_round(np.array([score for *_, score in rows]))
    actual = np.array([written[qid, docid] for qid, docid, _ in rows])
    np.testing.assert_array_equal(actual, expected.astype(np.float64))


def test_simulate_parquet_sigmoid_hps_round_trip(tmp_path):
    rows = make_rows(2)
    source, target = tmp_path / "run.parquet", tmp_path / "out.parquet"
    pq.write_table(pa.table({
        "qid": [r[0] for r in rows], "docid": [r[1] for r in rows], "score": [r[2] for r in rows],
    }), source)
    code = main(["simulate", "--run", str(source), "--to", "bf16", "--scoring", "sigmoid", "--hps",
                 "--out", str(target)])
    assert code == 0
    table = pq.read_table(target)
    assert table.column_names[:3] == ["qid", "docid", "score"]
    assert table.schema.field("score").type == pa.float64()
    by_key = dict(zip(zip(table.column("qid").to_pylist(), table.column("docid").to_pylist()),
                      table.column("score").to_pylist()))
    logits = np.array([r[2] for r in rows])
    expected = 1 / (1 + np.exp(-bf16_round(logits).astype(np.float64)))
    actual = np.array([by_key[qid, docid] for qid, docid, _ in rows])
    np.testing.assert_allclose(actual, expected, rtol=1e-6)
    assert (actual.astype(np.float32).astype(np.float64) == actual).all()  # exactly FP32 values


def test_simulate_fp16_sigmoid_without_hps(tmp_path):
    rows = make_rows(3)
    source, target = tmp_path / "run.parquet", tmp_path / "out.parquet"
    pq.write_table(pa.table({
        "qid": [r[0] for r in rows], "docid": [r[1] for r in rows], "score": [r[2] for r in rows],
    }), source)
    argv = ["simulate", "--run", str(source), "--to", "fp16", "--scoring", "sigmoid", "--out", str(target)]
    assert main(argv) == 0
    table = pq.read_table(target)
    by_key = dict(zip(zip(table.column("qid").to_pylist(), table.column("docid").to_pylist()),
                      table.column("score").to_pylist()))
    half_logits = np.array([r[2] for r in rows]).astype(np.float16).astype(np.float64)
    expected = (1 / (1 + np.exp(-half_logits))).astype(np.float16).astype(np.float64)
    actual = np.array([by_key[qid, docid] for qid, docid, _ in rows])
    # float64 sigmoid vs the FP32 one can land on the other side of an fp16 midpoint: allow one fp16 ulp
    np.testing.assert_allclose(actual, expected, atol=2.0**-11)
    assert np.mean(actual == expected) > 0.97


def test_simulate_bad_run_exits_2_without_output(tmp_path, capsys):
    source, target = tmp_path / "bad.trec", tmp_path / "out.trec"
    source.write_text("q1 Q0 d1 1 2.5 sys\nq1 Q0 d2 2 not-a-number sys\n")
    assert main(["simulate", "--run", str(source), "--to", "bf16", "--out", str(target)]) == 2
    err = capsys.readouterr().err
    assert "error" in err and "bad.trec:2" in err and "Traceback" not in err
    assert not target.exists()
    missing = tmp_path / "missing.trec"
    assert main(["simulate", "--run", str(missing), "--to", "bf16", "--out", str(target)]) == 2
    assert "missing.trec" in capsys.readouterr().err
    assert not target.exists()


def test_simulate_fp8_overflow_exits_2_without_output(tmp_path, capsys):
    source, target = tmp_path / "run.trec", tmp_path / "out.trec"
    write_trec(source, [("q1", "d1", 1000.0), ("q1", "d2", 1.5)])
    assert main(["simulate", "--run", str(source), "--to", "fp8-e4m3", "--out", str(target)]) == 2
    assert "fp8-e4m3" in capsys.readouterr().err
    assert not target.exists()


def test_simulate_fp16_overflow_exits_2_without_output(tmp_path, capsys):
    source, target = tmp_path / "run.parquet", tmp_path / "out.parquet"
    pq.write_table(pa.table({"qid": ["q1", "q1"], "docid": ["a", "b"], "score": [7e4, 1.0]}), source)
    assert main(["simulate", "--run", str(source), "--to", "fp16", "--out", str(target)]) == 2
    assert "overflow fp16" in capsys.readouterr().err
    assert not target.exists()


def test_simulate_output_format_follows_extension_else_input(tmp_path):
    rows = make_rows(6, n_queries=2, n_docs=5)
    source = tmp_path / "run.trec"
    write_trec(source, rows)
    as_parquet, no_extension = tmp_path / "bf16.parquet", tmp_path / "bf16_run"
    assert main(["simulate", "--run", str(source), "--to", "bf16", "--out", str(as_parquet)]) == 0
    assert as_parquet.read_bytes()[:4] == b"PAR1"
    assert pq.read_table(as_parquet).num_rows == 10
    assert main(["simulate", "--run", str(source), "--to", "bf16", "--out", str(no_extension)]) == 0
    assert set(parse_trec_scores(no_extension)) == {(qid, docid) for qid, docid, _ in rows}


def test_simulate_rejects_unknown_precision(tmp_path):
    with pytest.raises(SystemExit) as info:
        main(["simulate", "--run", "x.trec", "--to", "int4", "--out", str(tmp_path / "o.trec")])
    assert info.value.code == 2


# ------------------------------------------------------------------------------------------- ties
def brute_force_summary(rows: list[tuple[str, str, float]], k: int) -> dict[str, float]:
    shares, tied, largest = [], [], []
    for _, group in itertools.groupby(sorted(rows), key=lambda row: row[0]):
        ranked = sorted((score for *_, score in group), reverse=True)
        sizes = [ranked.count(score) for score in ranked]
        top = min(k, len(ranked))
        shares.append(sum(size >= 2 for size in sizes[:top]) / top)
        tied.append(len(ranked) > k and ranked[k - 1] == ranked[k])
        largest.append(max(sizes))
    return {"n_queries": len(shares), "mean_topk_tied_share": float(np.mean(shares)),
            "share_tied_at_cutoff": float(np.mean(tied)), "max_largest_group": max(largest)}


def tied_rows(seed: int) -> list[tuple[str, str, float]]:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 20, size=12)
    return [(f"q{i}", f"d{i}_{j}", float(rng.integers(0, 6) / 4)) for i in range(12) for j in range(sizes[i])]


def test_ties_json_and_per_query(tmp_path, capsys):
    rows = tied_rows(4)
    source, per_query = tmp_path / "run.trec", tmp_path / "ties.parquet"
    write_trec(source, rows)
    argv = ["ties", "--run", str(source), "--k", "5", "--format", "json", "--per-query", str(per_query)]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    expected = brute_force_summary(rows, 5)
    assert summary["n_queries"] == expected["n_queries"] and summary["k"] == 5
    assert summary["max_largest_group"] == expected["max_largest_group"]
    assert math.isclose(summary["mean_topk_tied_share"], expected["mean_topk_tied_share"])
    assert math.isclose(summary["share_tied_at_cutoff"], expected["share_tied_at_cutoff"])
    table = pq.read_table(per_query).to_pandas()
    assert len(table) == 12 and math.isclose(table["tied_at_cutoff"].mean(), expected["share_tied_at_cutoff"])


def test_ties_csv_and_table_formats(tmp_path, capsys):
    rows = tied_rows(5)
    source = tmp_path / "run.trec"
    write_trec(source, rows)
    expected = brute_force_summary(rows, 10)
    assert main(["ties", "--run", str(source), "--format", "csv"]) == 0
    header, values = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    record = dict(zip(header, values))
    assert math.isclose(float(record["share_tied_at_cutoff"]), expected["share_tied_at_cutoff"], rel_tol=1e-5)
    assert main(["ties", "--run", str(source)]) == 0
    lines = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines())
    assert int(lines["n_queries"]) == 12
    assert math.isclose(float(lines["mean_topk_tied_share"]), expected["mean_topk_tied_share"], rel_tol=1e-5)


def test_ties_bad_input_exits_2(tmp_path, capsys):
    source = tmp_path / "bad.trec"
    source.write_text("q1 Q0 d1\n")
    assert main(["ties", "--run", str(source)]) == 2
    assert "bad.trec" in capsys.readouterr().err
    good = tmp_path / "good.trec"
    write_trec(good, [("q1", "d1", 1.0)])
    assert main(["ties", "--run", str(good), "--k", "0"]) == 2
