"""The store does not trust its folder: rows without a name, duplicate rows, values that cannot be
right, NULL instruction states and files that vanish during a reload. Every expectation is written out by hand
from the rows the test writes; each test fails on the store as it was before the fix (noted per test).
"""
from __future__ import annotations

import contextlib
import io
import os
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy import stats

from evalcore.store import catalogue
from evalcore.cli import main
from evalcore.store import Condition, Store


def task_row(system, task, value, **extra) -> dict:
    row = {"system": system, "benchmark": "b", "task": task, "setting": "full", "instruction": False,
           "precision": "fp32", "metric": "ndcg@10", "value": value, "expected": None, "min": None, "max": None,
           "n_queries": 10, "source": "test"}
    row.update(extra)
    return row


def query_rows(system, task, values, qids=None, **extra) -> list[dict]:
    qids = qids or [f"q{i}" for i in range(len(values))]
    rows = []
    for qid, value in zip(qids, values):
        row = {"system": system, "benchmark": "b", "task": task, "setting": "full", "instruction": False,
               "precision": "fp32", "qid": qid, "metric": "ndcg@10", "oblivious": value, "expected": value,
               "min": value, "max": value, "tie_policy": "docid-desc", "n_candidates": 10,
               "tied_at_cutoff": False, "source": "test"}
        row.update(extra)
        rows.append(row)
    return rows


def write(path: Path, rows: list[dict]) -> Path:
    """Rows as written (pyarrow keeps a float NaN as NaN; pandas would store it as NULL)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def warnings_of(store: Store) -> dict[str, str]:
    """{file name: its warnings joined by ' | '}"""
    found: dict[str, list[str]] = {}
    for w in store.warnings:
        found.setdefault(Path(w.path).name, []).append(w.message)
    return {name: " | ".join(messages) for name, messages in found.items()}


def skipped_of(store: Store) -> dict[str, str]:
    return {Path(s.path).name: s.reason for s in store.skipped}


# -- item 2: a NULL system or task name -------------------------------------------------------------------
def test_null_system_name_in_task_scores_is_skipped_not_given_to_another_system(tmp_path: Path):
    """Before: the NULL system's 0.9 was shown as 'zz' (the last system alphabetically), and zz's own 0.01
    was lost."""
    write(tmp_path / "scores.parquet", [task_row("a", "T1", 0.5), task_row("zz", "T1", 0.01),
                                        task_row(None, "T1", 0.9)])
    store = Store(tmp_path)
    ranked = store.leaderboard(Condition("b"), uncertainty=False).ranked.set_index("system")
    assert ranked["G"].round(12).to_dict() == {"a": 0.5, "zz": 0.01}
    assert "no system" in warnings_of(store)["scores.parquet"]


def test_null_task_name_is_skipped_and_the_board_draws(tmp_path: Path):
    """Before: sorting the task names [None, 'T1'] raised TypeError in Store.leaderboard (CLI traceback)."""
    write(tmp_path / "scores.parquet", [task_row("a", "T1", 0.5), task_row("zz", "T1", 0.01),
                                        task_row("a", None, 0.9)])
    code, out, err = cli("leaderboard", "--benchmark", "b", "--data", str(tmp_path), "--format", "csv")
    assert code == 0, err
    assert pd.read_csv(io.StringIO(out)).set_index("system")["G"].round(12).to_dict() == {"a": 0.5, "zz": 0.01}
    assert "scores.parquet" in err and "warning" in err and "Traceback" not in err


def test_null_names_in_per_query_rows_are_skipped_and_never_attributed_to_the_file_system(tmp_path: Path):
    """One system per file lets the per-query read take the system from the file: rows without a system name must
    still be left out (before: they were summed as a system of their own and read as the file's system)."""
    rows = query_rows("a", "T1", [0.2, 0.4]) + query_rows(None, "T1", [1.0, 1.0], qids=["q0", "q1"])
    rows += query_rows("a", "T1", [1.0], qids=[None])  # no qid
    write(tmp_path / "a.parquet", rows)
    write(tmp_path / "b.parquet", query_rows("b", "T1", [0.1, 0.3]))
    store = Store(tmp_path)
    board = store.leaderboard(Condition("b"))
    ranked = board.ranked.set_index("system")
    assert ranked.loc["a", "G"] == pytest.approx(0.3) and ranked.loc["b", "G"] == pytest.approx(0.2)
    # the queries lens over a's own two values only: 0.3 ± z · sd(0.2, 0.4)/√2, on the log scale
    z, se = stats.norm.isf(0.025), np.std([0.2, 0.4], ddof=1) / np.sqrt(2) / 0.3
    assert ranked.loc["a", "queries_lo"] == pytest.approx(0.3 * np.exp(-z * se), rel=1e-9)
    assert ranked.loc["a", "queries_hi"] == pytest.approx(0.3 * np.exp(z * se), rel=1e-9)
    message = warnings_of(store)["a.parquet"]
    assert "2 per-query row(s) without a system name" in message and "1 per-query row(s) without a qid" in message
    assert store.query_diff(["a", "b"], Condition("b"), "T1")["qid"].nunique() == 2


# -- item 3: duplicate rows -----------------------------------------------------------------------------
def test_copied_per_query_file_is_not_counted_twice(tmp_path: Path):
    """Before: a copy of a.parquet doubled a's queries (G over 8 'queries' out of 4, interval narrower than
    the data allow, Compare failing)."""
    values = [0.1, 0.2, 0.6, 0.7]
    original = write(tmp_path / "a.parquet", query_rows("a", "T1", values))
    (tmp_path / "z_copy.parquet").write_bytes(original.read_bytes())
    write(tmp_path / "b.parquet", query_rows("b", "T1", [0.3, 0.3, 0.3, 0.3]))
    store = Store(tmp_path)
    assert "z_copy.parquet" in skipped_of(store) and "a.parquet" in skipped_of(store)["z_copy.parquet"]
    table = store.task_table(Condition("b")).set_index("system")
    assert table.loc["a", "n_queries"] == 4 and table.loc["a", "value"] == pytest.approx(np.mean(values))
    diff = store.query_diff(["a", "b"], Condition("b"), "T1")
    assert len(diff) == 8 and diff.groupby("system").size().to_dict() == {"a": 4, "b": 4}
    test = store.paired_test("a", "b", Condition("b"), n_resamples=100)
    assert test.n_queries == 4


def test_a_qid_repeated_within_one_file_makes_the_file_unusable(tmp_path: Path):
    write(tmp_path / "a.parquet", query_rows("a", "T1", [0.1, 0.9, 0.9], qids=["q0", "q1", "q1"]))
    write(tmp_path / "b.parquet", query_rows("b", "T1", [0.5, 0.5]))
    store = Store(tmp_path)
    reason = skipped_of(store)["a.parquet"]
    assert "qid repeated" in reason and "'a'" in reason and "'T1'" in reason
    assert store.task_table(Condition("b"))["system"].tolist() == ["b"]


def test_queries_split_over_two_files_without_overlap_are_both_used(tmp_path: Path):
    write(tmp_path / "part1.parquet", query_rows("a", "T1", [0.1, 0.2], qids=["q0", "q1"]))
    write(tmp_path / "part2.parquet", query_rows("a", "T1", [0.6, 0.7], qids=["q2", "q3"]))
    write(tmp_path / "part3.parquet", query_rows("a", "T1", [0.9], qids=["q4"]))
    store = Store(tmp_path)
    assert not store.skipped
    row = store.task_table(Condition("b")).iloc[0]
    assert row["n_queries"] == 5 and row["value"] == pytest.approx(0.5)
    # a fourth part repeating q1 of part1 (and adding q5) is left out whole, naming part1
    write(tmp_path / "part4.parquet", query_rows("a", "T1", [0.2, 0.1], qids=["q1", "q5"]))
    store.reload()
    assert list(skipped_of(store)) == ["part4.parquet"] and "part1.parquet" in skipped_of(store)["part4.parquet"]
    row = store.task_table(Condition("b")).iloc[0]
    assert row["n_queries"] == 5 and row["value"] == pytest.approx(0.5)


def test_repeated_task_scores_rows_are_warned_identical_kept_once_conflicting_dropped(tmp_path: Path):
    """Before: the first row in source order won silently."""
    write(tmp_path / "one.parquet", [task_row("same", "T1", 0.4), task_row("differs", "T1", 0.4),
                                     task_row("ok", "T1", 0.3)])
    write(tmp_path / "two.parquet", [task_row("same", "T1", 0.4), task_row("differs", "T1", 0.8)])
    store = Store(tmp_path)
    table = store.task_table(Condition("b")).set_index("system")
    assert table["value"].to_dict() == {"same": 0.4, "ok": 0.3}
    messages = " | ".join(w.message for w in store.warnings)
    assert "identical" in messages and "differ" in messages
    assert {Path(w.path).name for w in store.warnings} == {"one.parquet", "two.parquet"}


# -- item 5: values that cannot be right ----------------------------------------------------------------
@pytest.mark.parametrize("bad, word", [(float("nan"), "not a finite"), (float("inf"), "not a finite"),
                                       (-0.2, "negative"), (45.3, "above 1"), (None, "NULL")])
def test_bad_task_score_rows_are_skipped_and_nan_is_never_ranked(tmp_path: Path, bad, word):
    """Before: NaN got rank -9223372036854775808 (above rank 1), inf ranked first, 45.3 and -0.2 were ranked
    as they were, a NULL value was missing without a word."""
    write(tmp_path / "scores.parquet", [task_row("good", "T1", 0.5), task_row("bad", "T1", bad)])
    store = Store(tmp_path)
    board = store.leaderboard(Condition("b"), uncertainty=False)
    assert board.ranked[["rank", "system"]].values.tolist() == [[1, "good"]]
    assert word in warnings_of(store)["scores.parquet"]


def test_min_above_max_in_task_scores_is_skipped(tmp_path: Path):
    write(tmp_path / "scores.parquet", [task_row("good", "T1", 0.5, expected=0.5, min=0.4, max=0.6),
                                        task_row("bad", "T1", 0.5, expected=0.5, min=0.7, max=0.3)])
    store = Store(tmp_path)
    assert store.task_table(Condition("b"))["system"].tolist() == ["good"]
    assert "min > max" in warnings_of(store)["scores.parquet"]


@pytest.mark.parametrize("column, bad, word", [
    ("oblivious", None, "NULL"), ("oblivious", float("nan"), "NaN"), ("max", float("inf"), "infinite"),
    ("oblivious", -0.5, "negative"), ("oblivious", 3.0, "above 1"), ("min", 0.9, "outside"),
])
def test_bad_per_query_values_make_the_file_unusable(tmp_path: Path, column, bad, word):
    """Before: a NULL oblivious value counted as 0 in G and was left out of the per-query values; NaN / inf / out of
    range values were averaged into the task mean."""
    rows = query_rows("a", "T1", [0.2, 0.4, 0.6])
    rows[1][column] = bad
    write(tmp_path / "a.parquet", rows)
    write(tmp_path / "b.parquet", query_rows("b", "T1", [0.5, 0.5, 0.5]))
    store = Store(tmp_path)
    assert word in skipped_of(store)["a.parquet"]
    assert store.leaderboard(Condition("b"), uncertainty=False).ranked["system"].tolist() == ["b"]


def test_negative_parameter_count_is_dropped_with_a_warning(tmp_path: Path):
    write(tmp_path / "scores.parquet", [task_row("a", "T1", 0.5), task_row("b", "T1", 0.4)])
    pd.DataFrame({"system": ["a", "b", None], "display_name": ["A", "B", "C"],
                  "n_parameters": [-1e9, 3e8, 1.0]}).to_parquet(tmp_path / "systems.parquet")
    store = Store(tmp_path)
    sizes = store.systems().set_index("system")["n_parameters"]
    assert pd.isna(sizes["a"]) and sizes["b"] == 3e8 and store.facets()["size_range"] == (3e8, 3e8)
    message = warnings_of(store)["systems.parquet"]
    assert "n_parameters of 1 system(s)" in message and "1 systems row(s) without a system name" in message


# -- item 9: a NULL instruction state ---------------------------------------------------------------------
def test_null_instruction_is_unknown_not_dropped_and_not_a_crash(tmp_path: Path):
    """Before: facets() raised 'boolean value of NA is ambiguous' (so did `leaderboard --instruction with`
    when nothing matched), and 'as published' dropped the system whose state is unknown."""
    write(tmp_path / "a.parquet", query_rows("a", "T1", [0.2, 0.4], instruction=None))
    write(tmp_path / "c.parquet", query_rows("c", "T1", [0.1, 0.3], instruction=True))
    write(tmp_path / "scores.parquet", [task_row("p", "T1", 0.25, instruction=None)])
    store = Store(tmp_path)
    assert store.facets()["by_benchmark"]["b"]["instructions"] == [True]
    board = store.leaderboard(Condition("b", instruction=None))
    assert board.ranked.set_index("system")["G"].round(9).to_dict() == {"a": 0.3, "p": 0.25, "c": 0.2}
    # one task: nothing said of other tasks; the published row has no query count: nothing bounded, and why
    assert not board.lens("tasks").available and "T1" in board.lens("queries").reason
    per_query = store.leaderboard(Condition("b", instruction=None), systems=["a", "c"])
    assert per_query.ranked.set_index("system").loc["a", ["queries_lo", "queries_hi"]].notna().all()
    assert store.leaderboard(Condition("b", instruction=True), uncertainty=False).ranked["system"].tolist() == ["c"]
    assert store.leaderboard(Condition("b", instruction=False), uncertainty=False).ranked.empty
    assert len(store.query_diff(["a", "c"], Condition("b", instruction=None), "T1")) == 4
    code, _, err = cli("leaderboard", "--benchmark", "b", "--data", str(tmp_path), "--instruction", "without")
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err


# -- item 10: files vanishing during a reload --------------------------------------------------------------
@pytest.mark.parametrize("victim", ["scores.parquet", "systems.parquet", "a.parquet"])
def test_a_file_removed_between_listing_and_reading_is_simply_not_there(tmp_path: Path, monkeypatch, victim):
    """Before: the task_scores / systems loaders read the schema outside their try block
    (FileNotFoundError out of Store.reload); a per-query file removed after its sums were cached made
    read_parquet fail for the whole view."""
    write(tmp_path / "scores.parquet", [task_row("p", "T1", 0.25)])
    write(tmp_path / "a.parquet", query_rows("a", "T1", [0.2, 0.4]))
    pd.DataFrame({"system": ["a"], "display_name": ["A"]}).to_parquet(tmp_path / "systems.parquet")
    store = Store(tmp_path)  # caches a.parquet's sums
    real_classify = catalogue.classify

    def classify_then_remove(path):
        kind = real_classify(path)
        if path.name == victim:
            path.unlink()
        return kind

    monkeypatch.setattr(catalogue, "classify", classify_then_remove)
    store.reload()
    assert not store.skipped
    systems = set(store.task_table(Condition("b"))["system"])
    assert systems == {"a", "p"} - ({"p"} if victim == "scores.parquet" else set()) - (
        {"a"} if victim == "a.parquet" else set())


def test_reloads_under_churn_never_raise(tmp_path: Path):
    """Files created and deleted while the store reloads (before: about 1 in 4 reloads raised)."""
    write(tmp_path / "stable.parquet", [task_row("s", "T1", 0.5)])
    template_scores = tmp_path.parent / f"{tmp_path.name}-t.parquet"
    template_query = tmp_path.parent / f"{tmp_path.name}-q.parquet"
    write(template_scores, [task_row("x", "T1", 0.4)])
    write(template_query, query_rows("y", "T1", [0.1, 0.2]))
    pd.DataFrame({"system": ["x"], "display_name": ["X"]}).to_parquet(tmp_path.parent / f"{tmp_path.name}-s.parquet")
    templates = [template_scores, template_query, tmp_path.parent / f"{tmp_path.name}-s.parquet"]
    store = Store(tmp_path)
    stop = threading.Event()

    def churn():
        i = 0
        while not stop.is_set():
            target = tmp_path / f"churn{i % 3}.parquet"
            target.write_bytes(templates[i % 3].read_bytes())
            target.unlink()
            i += 1

    worker = threading.Thread(target=churn)
    worker.start()
    try:
        for _ in range(40):
            store.reload()
            assert "s" in set(store.task_table(Condition("b"))["system"])
    finally:
        stop.set()
        worker.join()


# -- item 15: an unreadable subfolder ------------------------------------------------------------------
def test_an_unreadable_subfolder_is_listed_as_skipped(tmp_path: Path, monkeypatch):
    """Before: rglob passed over a folder it could not list without a word. (Tests run as root, where
    chmod 000 does not stop reading: the listing is made to fail instead.)"""
    write(tmp_path / "ok" / "scores.parquet", [task_row("a", "T1", 0.5)])
    locked = tmp_path / "locked"
    write(locked / "scores.parquet", [task_row("hidden", "T1", 0.9)])
    real_scandir = os.scandir

    def scandir(path="."):
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    store = Store(tmp_path)
    assert skipped_of(store) == {"locked": "unreadable folder: PermissionError: Permission denied"}
    assert store.task_table(Condition("b"))["system"].tolist() == ["a"]


def test_a_task_present_only_under_another_instruction_state_is_named_in_the_reason(tmp_path: Path):
    """'any' takes one instruction state per system; a system whose tasks are split between states is not
    ranked, and the reason says where the missing task is (before: a bare 'missing 1 of 2 tasks', the
    multilingual-e5-small symptom)."""
    write(tmp_path / "split.parquet", query_rows("split", "T1", [0.2, 0.4], instruction=True)
          + query_rows("split", "T2", [0.2, 0.4], instruction=False))
    write(tmp_path / "whole.parquet", query_rows("whole", "T1", [0.5]) + query_rows("whole", "T2", [0.5]))
    board = Store(tmp_path).leaderboard(Condition("b", instruction=None), uncertainty=False)
    assert board.ranked["system"].tolist() == ["whole"]
    reason = board.incomplete.set_index("system").loc["split", "reason"]
    assert reason.startswith("missing 1 of 2 tasks: T2") and "1 of them only without instruction (T2)" in reason


def _reasons_by_row_filter(db, cond, table, incomplete, tasks) -> list[str]:
    """The reasons as first written: a pandas filter of the found states per system (the reference)."""
    from evalcore.store import queries

    found = queries.states_of_tasks(db, cond, incomplete["system"].tolist(), tasks)
    state_of = table.groupby("system")["instruction"].first()
    labels = {True: "with instruction", False: "without instruction", None: "with unknown instruction use"}
    reasons = []
    for system, missing, reason in zip(incomplete["system"], incomplete["missing_tasks"], incomplete["reason"]):
        rows = found[(found["system"] == system) & found["task"].isin(missing)]
        chosen = queries.state(state_of, system)
        elsewhere: dict[str, list[str]] = {}
        for task, state in zip(rows["task"], rows["instruction"]):
            state = None if pd.isna(state) else bool(state)
            if state != chosen:
                elsewhere.setdefault(labels[state], []).append(task)
        notes = [f"{len(names)} of them only {label} ({', '.join(sorted(names)[:3])}"
                 f"{' …' if len(names) > 3 else ''})" for label, names in elsewhere.items()]
        reasons.append(reason + ("; " + "; ".join(notes) + " — 'any' uses one instruction state per system"
                                 if notes else ""))
    return reasons


@pytest.mark.parametrize("seed", range(6))
def test_reasons_of_systems_not_ranked_against_the_row_filter_definition(tmp_path: Path, seed: int, monkeypatch):
    """Random systems with each task under some of the three instruction states: every board's reasons equal
    the per-system pandas filter they were first computed with."""
    import random

    rng = random.Random(seed)
    rows = [task_row(f"s{i}", f"T{t}", rng.choice([0.2, 0.5]), instruction=state)
            for i in range(8) for t in range(6) for state in (True, False, None) if rng.random() < 0.4]
    write(tmp_path / "scores.parquet", rows)
    compared = []
    kept = Store._other_state_reasons

    def both(db, cond, table, incomplete, tasks):
        got = kept(db, cond, table, incomplete, tasks)
        compared.append((got, _reasons_by_row_filter(db, cond, table, incomplete, tasks)))
        return got

    monkeypatch.setattr(Store, "_other_state_reasons", staticmethod(both))
    store = Store(tmp_path)
    for instruction in (True, False, None):
        store.leaderboard(Condition("b", instruction=instruction), uncertainty=False)
    assert compared and all(got == reference for got, reference in compared)
    assert any("only" in reason for got, _ in compared for reason in got), "no reason names another state"


@pytest.mark.parametrize("seed", range(8))
def test_repeated_task_scores_keys_against_a_row_by_row_reference(tmp_path: Path, seed: int):
    """The store keeps a repeated key's first row (in file, then row order) when every copy has the same values
    and drops the key when they differ, looking only at the rows whose key repeats. Reference: the rule applied
    row by row in Python, on random files whose keys repeat within and across files, with unknown instruction
    states (NULL) among them and copies that differ only in n_queries (the first copy's is kept)."""
    import random

    rng = random.Random(seed)
    files = {name: [] for name in ("a.parquet", "b.parquet", "c.parquet")}
    for name, rows in files.items():
        for _ in range(rng.randint(5, 25)):
            value = rng.choice([0.2, 0.4, 0.6])
            rows.append(task_row(rng.choice(["s1", "s2", "s3"]), rng.choice(["T1", "T2"]), value,
                                 instruction=rng.choice([True, False, None]), metric=rng.choice(["ndcg@10", "p@1"]),
                                 n_queries=rng.randint(1, 9), source=name))
    for name, rows in files.items():
        write(tmp_path / name, rows)
    groups: dict[tuple, list[dict]] = {}
    for name in sorted(files):  # the store reads files in path order
        for row in files[name]:
            key = (row["system"], row["task"], row["instruction"], row["metric"])
            groups.setdefault(key, []).append(row)
    expected = {key: (rows[0]["value"], rows[0]["n_queries"], rows[0]["source"]) for key, rows in groups.items()
                if len({row["value"] for row in rows}) == 1}
    kept = Store(tmp_path)._database().frame(
        "SELECT system, task, instruction, metric, value, n_queries, source FROM task_scores")
    got = {(r.system, r.task, None if pd.isna(r.instruction) else bool(r.instruction), r.metric):
           (r.value, r.n_queries, r.source) for r in kept.itertuples()}
    assert len(kept) == len(got), "a key kept twice"
    assert got == expected
    assert any(len(rows) > 1 for rows in groups.values()), "the draw repeated no key"


def test_a_task_with_published_and_per_query_values_is_one_task_in_coverage(tmp_path: Path):
    """task_results keeps one value per (system, condition, task, metric) — the per-query one over a published
    one, one copy of identical published repeats — so coverage, which counts its rows per system and
    condition, counts each task once."""
    write(tmp_path / "scores.parquet", [task_row("a", "T1", 0.4), task_row("a", "T1", 0.4), task_row("a", "T2", 0.3),
                                        task_row("a", "T2", 0.3, instruction=True),
                                        task_row("a", "T3", 0.9, instruction=None)])
    write(tmp_path / "a.parquet", query_rows("a", "T1", [0.2, 0.4]) + query_rows("a", "T3", [0.1], instruction=None))
    store = Store(tmp_path)
    keys = ["system", "benchmark", "task", "setting", "instruction", "precision", "tie_policy", "metric"]
    results = store._database().frame("SELECT * FROM task_results")
    assert not results.duplicated(keys).any()
    values = {(t, None if pd.isna(i) else bool(i)): round(v, 6)
              for t, i, v in zip(results["task"], results["instruction"], results["value"])}
    assert values == {("T1", False): 0.3, ("T2", False): 0.3, ("T2", True): 0.3, ("T3", None): 0.1}, values
    coverage = store.coverage()
    by_state = {(None if pd.isna(s) else bool(s)): (n, q) for s, n, q in
                zip(coverage["instruction"], coverage["n_tasks"], coverage["n_query_tasks"])}
    assert by_state == {False: (2, 1), True: (1, 0), None: (1, 1)}, by_state


def test_a_reason_names_the_other_states_in_task_order(tmp_path: Path):
    """The states found for the missing tasks come sorted (system, task, state): the notes of one reason are in
    the same order on every load (DISTINCT alone gave DuckDB's hash order)."""
    write(tmp_path / "split.parquet", query_rows("split", "T1", [0.2], instruction=True)
          + query_rows("split", "T3", [0.2], instruction=None) + query_rows("split", "T2", [0.2], instruction=False))
    write(tmp_path / "whole.parquet", query_rows("whole", "T1", [0.5], instruction=True)
          + query_rows("whole", "T2", [0.5], instruction=True) + query_rows("whole", "T3", [0.5], instruction=True))
    for _ in range(3):
        board = Store(tmp_path).leaderboard(Condition("b", instruction=None), uncertainty=False)
        reason = board.incomplete.set_index("system").loc["split", "reason"]
        assert reason.index("only without instruction (T2)") < reason.index("only with unknown instruction use (T3)")
