"""Hostile values against every public ``Store`` method: SQL fragments, script tags, huge
strings, control characters, LIKE wildcards, as every string argument (condition fields, system / task lists,
search text, families, task, metric, system_a/b) and as file and directory names. They must be inert:

- the result is what an unknown name gives (empty, or the same as without the hostile value);
- the data are intact afterwards (no statement was injected);
- **the SQL text of every statement the store sends to DuckDB never contains them**: ``duckdb.connect`` is
  wrapped so the load-time statements (``reload``) are recorded as well as every query's.

``tests/test_store.py::test_hostile_filter_values_are_inert`` covers query methods through ``Store.cursor``;
this file covers every method and argument, the load path, numbers (NaN / inf sizes) and hostile names in
the data directory itself.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
from dataclasses import replace
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalcore.cli import main
from evalcore.store import Condition, Store

HOSTILE = [
    "x' OR '1'='1", "'; DROP TABLE task_results; --", "\"; DROP TABLE systems; --", "') OR TRUE --",
    "1; SELECT * FROM read_csv('/etc/passwd')", "read_parquet('/etc/passwd')", "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>", "javascript:alert(1)", "${jndi:ldap://x}", "{{7*7}}", "%' OR 1=1 --",
    "%%%%", "____", "\\x27\\x00", "\u202eevil\u202c", "名前🙂", "nul\x00byte", "line\nbreak", "tab\tchar",
    "$1 $2 ?", "/* comment */", "-- comment", "a" * 100_000, "x" * 1_000_000,
]
SQL_WORDS = ["NULL", "TRUE", "*", "?", "'", '"', ""]  # also in the store's own SQL: results checked, not text
# every public method x every string argument for these (about 3 s each); the rest through a cheaper subset
# unless TIEBREAK_HOSTILE_FULL=1
FULL_MATRIX = {"'; DROP TABLE task_results; --", "<script>alert(1)</script>", "%' OR 1=1 --", "nul\x00byte",
               "x" * 1_000_000, "'"}
CONDITION_FIELDS = ("benchmark", "metric", "setting", "precision", "tie_policy")


class RecordingConnection:
    """Wraps a DuckDB connection (or cursor): records the SQL text of every statement, and cursors too."""

    def __init__(self, connection, log: list[str]):
        self._connection, self._log = connection, log

    def execute(self, sql, *args, **kwargs):
        self._log.append(str(sql))
        return self._connection.execute(sql, *args, **kwargs)

    def sql(self, sql, *args, **kwargs):
        self._log.append(str(sql))
        return self._connection.sql(sql, *args, **kwargs)

    query = sql

    def cursor(self):
        return RecordingConnection(self._connection.cursor(), self._log)

    def read_parquet(self, files, *args, **kwargs):
        return self._connection.read_parquet(files, *args, **kwargs)  # paths as a Python list, not SQL text

    def __getattr__(self, name):
        return getattr(self._connection, name)


@pytest.fixture()
def recorded(monkeypatch) -> list[str]:
    log: list[str] = []
    real_connect = duckdb.connect
    monkeypatch.setattr(duckdb, "connect", lambda *a, **k: RecordingConnection(real_connect(*a, **k), log))
    return log


def query_metrics(systems=("alpha", "beta"), benchmark="bench", tasks=("T1", "T2")) -> pd.DataFrame:
    rows = []
    for s, system in enumerate(systems):
        for precision in ("fp32", "bf16"):
            for instruction in (False, True):
                for task in tasks:
                    for q in range(6):
                        value = 0.1 + 0.1 * q + 0.05 * s + (0.02 if instruction else 0)
                        rows.append({"system": system, "benchmark": benchmark, "task": task, "setting": "full",
                                     "instruction": instruction, "precision": precision, "qid": f"q{q}",
                                     "metric": "ndcg@10", "oblivious": value, "expected": value - 0.01,
                                     "min": value - 0.03, "max": value + 0.03, "tie_policy": "docid-desc",
                                     "n_candidates": 50, "tied_at_cutoff": q % 2 == 0, "source": "test"})
    frame = pd.DataFrame(rows)
    mcr = frame.assign(setting="mcr", metric="p@1")
    return pd.concat([frame, mcr], ignore_index=True)


def make_data_dir(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    query_metrics().to_parquet(root / "qm.parquet")
    pd.DataFrame({"system": ["alpha", "beta"], "display_name": ["Alpha", "Beta"], "family": ["f", "g"],
                  "n_parameters": [1e8, 3e9], "open_weights": [True, False]}).to_parquet(root / "systems.parquet")
    pd.DataFrame([{"system": "pub", "benchmark": "bench", "task": t, "setting": "full", "instruction": False,
                   "precision": "fp32", "metric": "ndcg@10", "value": 0.4, "expected": None, "min": None,
                   "max": None, "n_queries": 10, "source": "paper"} for t in ("T1", "T2")]
                 ).to_parquet(root / "published.parquet")
    return root


def every_call(store: Store, value: str, full: bool = True) -> list[tuple[str, object]]:
    """(description, result) of every public method with ``value`` as each string argument in turn
    (``full=False``: task_table per condition field, the list arguments of leaderboard / query_diff, search)."""
    good = Condition("bench")
    results = []
    if not full:
        for field in CONDITION_FIELDS:
            results.append((f"task_table({field})", store.task_table(replace(good, **{field: value}))))
        results.append(("leaderboard(systems)", store.leaderboard(good, systems=["alpha", value]).ranked))
        results.append(("query_diff(task)", store.query_diff(["alpha", value], good, value)))
        results.append(("systems(search)", store.systems(search=value, families=[value])))
        return results

    def call(description, function, *args, **kwargs):
        results.append((description, function(*args, **kwargs)))

    for field in CONDITION_FIELDS:
        cond = replace(good, **{field: value})
        call(f"task_table({field})", store.task_table, cond)
        call(f"leaderboard({field})", lambda c=cond: store.leaderboard(c).ranked)
        call(f"tie_summary({field})", store.tie_summary, cond)
        call(f"rank_flips(a.{field})", lambda c=cond: store.rank_flips(c, good).ranks)
        call(f"rank_flips(b.{field})", lambda c=cond: store.rank_flips(good, c).ranks)
        call(f"instruction_gap({field})", lambda c=cond: store.instruction_gap(c).per_task)
        call(f"mcr_vs_full({field})", lambda c=cond: store.mcr_vs_full(c).per_task)
        call(f"compare({field})", store.compare, ["alpha", "beta"], cond)
        call(f"query_diff({field})", store.query_diff, ["alpha", "beta"], cond, "T1")
        call(f"task_table({field}, instruction=None)", store.task_table, replace(cond, instruction=None))
    for systems in ([value], ["alpha", value], value):
        call(f"task_table(systems={type(systems).__name__})", store.task_table, good, systems)
        call("leaderboard(systems)", lambda s=systems: store.leaderboard(good, systems=s).ranked)
        call("leaderboard(tasks)", lambda s=systems: store.leaderboard(good, tasks=s).incomplete)
        call("tie_summary(systems)", store.tie_summary, good, systems)
        call("rank_flips(systems)", lambda s=systems: store.rank_flips(good, replace(good, precision="bf16"),
                                                                         systems=s).ranks)
        call("rank_flips(tasks)", lambda s=systems: store.rank_flips(good, replace(good, precision="bf16"),
                                                                       tasks=s).ranks)
        call("instruction_gap(systems)", lambda s=systems: store.instruction_gap(good, s).per_task)
        call("mcr_vs_full(systems)", lambda s=systems: store.mcr_vs_full(good, s).per_task)
        call("compare(systems)", store.compare, systems, good)
        call("query_diff(systems)", store.query_diff, systems, good, "T1")
        call("query_diff(systems, instruction=None)", store.query_diff, systems, replace(good, instruction=None), "T1")
        call("systems(families)", store.systems, families=systems)
    call("tie_summary(task)", store.tie_summary, good, None, value)
    call("mcr_vs_full(mcr_metric)", lambda: store.mcr_vs_full(good, mcr_metric=value).per_task)
    call("query_diff(task)", store.query_diff, ["alpha", "beta"], good, value)
    call("systems(search)", store.systems, search=value)
    call("systems(benchmark)", store.systems, benchmark=value)
    for description, args in (("paired_test(system_a)", (value, "beta", good)),
                              ("paired_test(system_b)", ("alpha", value, good)),
                              ("paired_test(task)", ("alpha", "beta", good, value))):
        try:
            store.paired_test(*args, n_resamples=50)
        except ValueError as error:  # documented: no shared per-query data
            results.append((description, str(error)))
        else:
            raise AssertionError(f"{description} with a hostile value found data")
    return results


def same_result(result, reference) -> bool:
    """A hostile value gives exactly what an unknown, harmless name gives (paired-test errors: both raise)."""
    if isinstance(reference, str):
        return isinstance(result, str)
    if len(reference) == 0:
        return len(result) == 0
    try:
        pd.testing.assert_frame_equal(result.reset_index(drop=True), reference.reset_index(drop=True))
    except AssertionError:
        return False
    return True


def test_every_public_method_treats_hostile_strings_as_unknown_names(tmp_path, recorded):
    store = Store(make_data_dir(tmp_path / "data"))
    baseline_sql = len(recorded)
    before = store.task_table(Condition("bench"))
    leaderboard_before = store.leaderboard(Condition("bench")).ranked
    assert len(before) > 0 and recorded
    references = {full: every_call(store, "no-such-name", full) for full in (True, False)}
    everything = os.environ.get("TIEBREAK_HOSTILE_FULL") == "1"
    calls = 0
    for value in HOSTILE + SQL_WORDS:
        full = everything or value in FULL_MATRIX
        for (description, result), (_, expected) in zip(every_call(store, value, full), references[full],
                                                        strict=True):
            calls += 1
            assert same_result(result, expected), (description, value[:40], result)
    store.reload()  # the load path sees the same (unchanged) files again
    checked = [v for v in HOSTILE if not any(v in sql for sql in recorded[:baseline_sql])]
    assert len(checked) == len(HOSTILE), "a hostile value is part of the store's own SQL: pick another"
    for sql in recorded:
        for value in HOSTILE:
            assert value not in sql, (value[:40], sql[:200])
    pd.testing.assert_frame_equal(store.task_table(Condition("bench")), before)
    pd.testing.assert_frame_equal(store.leaderboard(Condition("bench")).ranked, leaderboard_before)
    print(f"{len(HOSTILE) + len(SQL_WORDS)} hostile values, {calls} calls, {len(recorded)} SQL statements checked")


@pytest.mark.parametrize("bound", [float("nan"), float("inf"), float("-inf"), 1e308, -1e308, 0.0])
def test_hostile_size_bounds_are_inert(tmp_path, recorded, bound):
    store = Store(make_data_dir(tmp_path / "data"))
    for kwargs in ({"min_parameters": bound}, {"max_parameters": bound},
                   {"min_parameters": bound, "max_parameters": bound}):
        result = store.systems(**kwargs)
        assert set(result["system"]) <= {"alpha", "beta", "pub"}
    for sql in recorded:
        assert repr(bound) not in sql


def test_hostile_file_and_directory_names_load_as_data(tmp_path, recorded):
    """A data dir whose own path and file names look like SQL / HTML: loaded, and never spliced into SQL."""
    name = "x'); DROP TABLE task_results; --"
    root = make_data_dir(tmp_path / f"data {name}")
    # (a copy of qm.parquet would be skipped as duplicate rows: the hostile name holds a system of its own)
    query_metrics(systems=["gamma"]).to_parquet(root / f"{name}.parquet")
    (root / "<b onmouseover=alert(1)>.parquet").write_bytes(b"not parquet")
    hostile_qm = query_metrics(systems=["<script>alert('s')</script>", "'; DROP TABLE systems; --"],
                               benchmark="b' OR '1'='1")
    hostile_qm.to_parquet(root / "hostile_values.parquet")
    store = Store(root)
    assert [Path(s.path).name for s in store.skipped] == ["<b onmouseover=alert(1)>.parquet"]
    board = store.leaderboard(Condition("b' OR '1'='1"))
    assert set(board.ranked["system"]) == {"<script>alert('s')</script>", "'; DROP TABLE systems; --"}
    assert {"alpha", "gamma"} <= set(store.task_table(Condition("bench"))["system"])
    for sql in recorded:
        assert name not in sql and "<b onmouseover" not in sql and str(root) not in sql


def test_run_sidecars_with_hostile_unknown_and_repeated_keys(tmp_path):
    """runs(): sidecar JSON with unknown keys, repeated keys and markup; key-value metadata likewise."""
    root = make_data_dir(tmp_path / "data")
    runs = root / "runs"
    runs.mkdir()
    table = pa.table({"qid": ["q1"], "docid": ["d1"], "score": [1.0]})
    pq.write_table(table, runs / "a.parquet")
    (runs / "a.parquet.json").write_text(
        '{"system": "first", "system": "<script>alert(1)</script>", "benchmark": "b\'; --", '
        '"__proto__": {"x": 1}, "unknown": "' + "u" * 100_000 + '", "instruction": "yes"}')
    pq.write_table(table.replace_schema_metadata({"tiebreak": json.dumps({"system": "'; DROP TABLE x; --",
                                                                           "evil": "<b>x</b>"})}),
                   runs / "b.parquet")
    (runs / "c.parquet").write_bytes(b"garbage")
    (runs / "d.parquet").write_bytes((runs / "a.parquet").read_bytes())
    (runs / "d.parquet.json").write_text("[1, 2, 3]")  # not an object: ignored
    listed = Store(root).runs().set_index("path")
    assert set(listed.columns) == {"system", "benchmark", "task", "setting", "instruction", "precision",
                                   "qrels_path", "n_rows"}
    assert listed.loc[str(runs / "a.parquet"), "system"] == "<script>alert(1)</script>"  # last repeated key
    instruction = listed.loc[str(runs / "a.parquet"), "instruction"]
    assert instruction is True or instruction == True  # noqa: E712 (numpy's True is not `True`)
    assert listed.loc[str(runs / "b.parquet"), "system"] == "'; DROP TABLE x; --"
    assert str(runs / "c.parquet") not in listed.index


def cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_cli_with_hostile_names(tmp_path):
    """Hostile names through the CLI: ingested as data, filtered on exactly, escaped in LaTeX."""
    root = make_data_dir(tmp_path / "data")
    run, qrels = tmp_path / "run.trec", tmp_path / "qrels.txt"
    run.write_text("q1 Q0 d1 1 2 t\nq1 Q0 d2 2 1 t\n")
    qrels.write_text("q1 0 d1 1\n")
    system = "\\input{/etc/passwd} & <script>alert(1)</script> $x$ 100% #1 _a ~^"
    code, _, stderr = cli(["ingest", "--run", str(run), "--qrels", str(qrels), "--system", system,
                           "--benchmark", "b'; DROP TABLE task_results; --", "--task", "T1", "--setting", "full",
                           "--instruction", "no", "--precision", "fp32", "--metrics", "ndcg@10",
                           "--data", str(root)])
    assert code == 0, stderr
    code, out, stderr = cli(["leaderboard", "--benchmark", "b'; DROP TABLE task_results; --", "--data", str(root),
                             "--instruction", "without", "--format", "latex"])
    assert code == 0, stderr
    assert "\\input" not in out and "\\textbackslash{}input\\{/etc/passwd\\}" in out
    assert " & <script>" not in out and "\\&" in out and "\\$x\\$" in out and "100\\%" in out
    code, out, stderr = cli(["leaderboard", "--benchmark", "x' OR '1'='1", "--data", str(root)])
    assert code == 2 and "no results" in stderr and "Traceback" not in stderr
    code, out, _ = cli(["leaderboard", "--benchmark", "bench", "--data", str(root), "--format", "json"])
    assert code == 0 and json.loads(out)["ranked"]  # the original data are intact
