"""``evalcore leaderboard``: every ranked row carries both lenses' intervals, rank sets, tiers and whether it could
be #1; the JSON carries each lens' adjacent pairs with the level and the kind of rank sets; the same command
prints the same board (nothing is resampled); the flags mirror the dashboard's URL keys; a damaged file is said
on the board and by ``derive``."""
from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from evalcore.cli import main
from evalcore.store import Condition, Store

SHIPPED = Path(__file__).resolve().parents[2] / "data"


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def _csv(text: str) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(text))


LENS_COLUMNS = [f"{lens}_{c}" for lens in ("queries", "tasks") for c in ("lo", "hi", "rank_lo", "rank_hi", "tier",
                                                                             "first")]


@pytest.mark.parametrize("benchmark, setting, metric", [("rar-b", "full", "ndcg@10"), ("r2med", "full", "ndcg@10"),
                                                         ("rar-b", "mcr", "p@1")])
def test_every_ranked_row_has_both_lenses_ranks_intervals_and_tiers(benchmark, setting, metric):
    code, out, err = cli("leaderboard", "--data", str(SHIPPED), "--benchmark", benchmark, "--setting", setting,
                         "--metric", metric, "--format", "csv")
    assert code == 0, err
    rows = _csv(out)
    assert "board_notes" not in rows, "a sound board has no notes column"
    ranked = rows[rows["complete"]]
    by = "G" if benchmark == "rar-b" else "mean"
    inside = ranked[by] > 0  # G = 0 from a zero task: outside both models, no interval
    for column in LENS_COLUMNS:
        values = ranked.loc[inside, column] if column.endswith(("_lo", "_hi")) and "rank" not in column else ranked[
            column]
        assert values.notna().all(), column
    for lens in ("queries", "tasks"):
        assert ((ranked[f"{lens}_rank_lo"] <= ranked["rank"]) & (ranked["rank"] <= ranked[f"{lens}_rank_hi"])).all()
        assert ((ranked.loc[inside, f"{lens}_lo"] <= ranked.loc[inside, by])
                & (ranked.loc[inside, by] <= ranked.loc[inside, f"{lens}_hi"])).all()
    assert rows.loc[~rows["complete"], ["queries_lo", "queries_rank_lo", "tasks_lo", "tasks_tier"]].isna().all().all()
    board = Store(SHIPPED).leaderboard(Condition(benchmark, metric, setting, None))
    for column in ("queries_rank_lo", "queries_rank_hi", "queries_tier", "tasks_rank_hi", "tasks_tier"):
        assert ranked[column].tolist() == board.ranked[column].astype(int).tolist(), column
    assert ranked["queries_hi"].tolist() == pytest.approx(board.ranked["queries_hi"].tolist(), rel=1e-5,
                                                        nan_ok=True)
    assert set(rows["level"]) == {0.95} and set(rows["ranks"]) == {"marginal"}
    assert "seed" not in rows and "resamples" not in rows, "nothing is resampled"


def test_json_carries_both_lenses_with_the_level_and_the_kind_of_rank_sets():
    code, out, err = cli("leaderboard", "--data", str(SHIPPED), "--benchmark", "r2med", "--level", "0.9",
                         "--ranks", "simultaneous", "--format", "json")
    assert code == 0, err
    board = json.loads(out)
    assert "resampling" not in board and "separability" not in board
    store = Store(SHIPPED).leaderboard(Condition("r2med", instruction=None), level=0.9, ranks="simultaneous")
    uncertainty = board["uncertainty"]
    assert (uncertainty["level"], uncertainty["ranks"]) == (0.9, "simultaneous")
    assert list(uncertainty["lenses"]) == ["queries", "tasks"]
    for name, lens in uncertainty["lenses"].items():
        summary = store.lens(name)
        assert lens["available"] and lens["n_adjacent"] == len(store.ranked) - 1 == summary.n_pairs
        assert lens["n_adjacent_differ"] == summary.n_differ and lens["n_tested"] == summary.n_tested
        assert lens["could_be_first"] == store.ranked.loc[store.ranked[f"{name}_first"], "system"].tolist()
        assert lens["n_tiers"] == store.ranked[f"{name}_tier"].max()
        assert [row["system_1"] for row in lens["adjacent"]] == store.ranked["system"].head(-1).tolist()
        assert [row["p_value"] for row in lens["adjacent"]] == pytest.approx(summary.adjacent["p_value"].tolist(),
                                                                          abs=1e-6)
        assert [row[f"{name}_lo"] for row in board["ranked"]] == pytest.approx(store.ranked[f"{name}_lo"].tolist(),
                                                                            abs=1e-6)  # JSON keeps 6 digits
        if lens["n_adjacent_differ"] == 0:  # why none does: the strongest pair against Holm's first threshold
            strongest = lens["strongest_when_none_differ"]
            assert strongest["threshold"] == pytest.approx(0.1 / strongest["n_tested"], abs=1e-6)  # 6 digits
            assert strongest["p_value"] == pytest.approx(min(row["p_value"] for row in lens["adjacent"]), abs=1e-6)


def test_the_same_command_prints_the_same_board_and_lens_chooses_the_first_columns():
    args = ("leaderboard", "--data", str(SHIPPED), "--benchmark", "r2med", "--format", "csv")
    one, two = _csv(cli(*args)[1]), _csv(cli(*args)[1])
    pd.testing.assert_frame_equal(one, two)
    tasks_first = _csv(cli(*args, "--lens", "tasks")[1])
    columns = list(tasks_first.columns)
    assert columns.index("tasks_lo") < columns.index("queries_lo") and list(one.columns).index(
        "queries_lo") < list(one.columns).index("tasks_lo")
    pd.testing.assert_frame_equal(tasks_first[list(one.columns)], one)  # the same numbers, another order


@pytest.mark.parametrize("bad", [("--level", "1.5"), ("--ranks", "joint"), ("--lens", "systems"), ("--seed", "1"),
                                 ("--resamples", "300")])
def test_bad_or_retired_uncertainty_flags_are_one_line_and_exit_2(bad, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["leaderboard", "--data", str(SHIPPED), "--benchmark", "r2med", *bad])
    assert stop.value.code == 2
    assert bad[0].lstrip("-") in capsys.readouterr().err.splitlines()[-1]


def test_common_tasks_rank_the_named_systems_on_the_tasks_all_have():
    board = Store(SHIPPED).leaderboard(Condition("rar-b", instruction=None), uncertainty=False)
    missing = board.incomplete.iloc[0]
    names = [missing["system"], *board.ranked["system"].head(3)]
    code, out, err = cli("leaderboard", "--data", str(SHIPPED), "--benchmark", "rar-b", "--common-tasks",
                         "--format", "json", *[a for n in names for a in ("--system", n)])
    assert code == 0, err
    found = json.loads(out)
    assert sorted(row["system"] for row in found["ranked"]) == sorted(names) and not found["incomplete"]
    assert found["common_tasks"]["dropped"] == list(missing["missing_tasks"])
    assert found["task_names"] == found["common_tasks"]["tasks"]


def test_a_truncated_per_query_file_is_said_by_the_board_and_by_derive(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(SHIPPED, data)
    damaged = data / "real" / "query_metrics" / "rar-b_SIQA.parquet"
    with open(damaged, "r+b") as handle:
        handle.truncate(damaged.stat().st_size // 2)
    code, out, err = cli("leaderboard", "--benchmark", "rar-b", "--setting", "mcr", "--metric", "p@1", "--data",
                         str(data), "--format", "csv")
    assert code == 0, err
    rows = _csv(out)
    assert not rows["complete"].any(), "no G over 7 of the 8 tasks presented as the board's G"
    assert rows["board_notes"].str.contains("rar-b_SIQA.parquet").all() and rows["board_notes"].str.contains(
        "no results at all: SIQA").all(), "the CSV says it too"
    code, out, err = cli("leaderboard", "--benchmark", "rar-b", "--setting", "mcr", "--metric", "p@1", "--data",
                         str(data))
    assert "rar-b_SIQA.parquet" in out and "SIQA" in out.split("declared task(s) with no results at all:")[1]
    code, out, _ = cli("leaderboard", "--benchmark", "rar-b", "--setting", "mcr", "--metric", "p@1", "--data",
                       str(data), "--format", "json")
    board = json.loads(out)
    assert board["tasks_without_results"] == ["SIQA"] and "rar-b_SIQA.parquet" in board["notes"][0]
    for check in ((), ("--check",)):
        code, out, _ = cli("derive", "--data", str(data), *check)
        assert code == 1 and "1 unreadable" in out and f"unreadable: {damaged}" in out
