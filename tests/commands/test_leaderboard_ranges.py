"""``evalcore leaderboard``: every ranked row carries its shared rank, rank range, interval (with its kind) and
tier; the JSON carries the separability headline; the flags mirror the dashboard's URL keys; a damaged file is
said on the board and by ``derive``."""
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


@pytest.mark.parametrize("benchmark, setting, metric", [("rar-b", "full", "ndcg@10"), ("r2med", "full", "ndcg@10"),
                                                         ("rar-b", "mcr", "p@1")])
def test_every_ranked_row_has_ranks_an_interval_and_a_tier(benchmark, setting, metric):
    code, out, err = cli("leaderboard", "--data", str(SHIPPED), "--benchmark", benchmark, "--setting", setting,
                         "--metric", metric, "--resamples", "300", "--format", "csv")
    assert code == 0, err
    rows = _csv(out)
    assert "board_notes" not in rows, "a sound board has no notes column"
    ranked = rows[rows["complete"]]
    for column in ("shared_rank", "rank_lo", "rank_hi", "interval_lo", "interval_hi", "interval_kind", "tier"):
        assert ranked[column].notna().all(), column
    assert set(ranked["interval_kind"]) == {"tasks"}
    assert (ranked["rank_lo"] <= ranked["rank"]).all() and (ranked["rank"] <= ranked["rank_hi"]).all()
    assert rows.loc[~rows["complete"], ["shared_rank", "rank_lo", "interval_lo", "tier"]].isna().all().all()
    board = Store(SHIPPED).leaderboard(Condition(benchmark, metric, setting, None), bootstrap=300)
    assert ranked["rank_hi"].tolist() == board.ranked["rank_hi"].astype(int).tolist()
    assert ranked["tier"].tolist() == board.ranked["tier"].tolist()
    assert set(rows["resamples"]) == {300} and set(rows["seed"]) == {0} and set(rows["level"]) == {0.95}


def test_json_carries_the_separability_headline_and_the_resampling():
    code, out, err = cli("leaderboard", "--data", str(SHIPPED), "--benchmark", "r2med", "--resamples", "200",
                         "--seed", "4", "--level", "0.9", "--format", "json")
    assert code == 0, err
    board = json.loads(out)
    assert board["resampling"] == {"seed": 4, "resamples": 200, "level": 0.9}
    store = Store(SHIPPED).leaderboard(Condition("r2med", instruction=None), bootstrap=200, seed=4, level=0.9)
    headline = board["separability"]
    assert headline["n_adjacent"] == len(store.ranked) - 1 and headline["n_adjacent_differ"] == store.n_adjacent_differ
    assert headline["could_be_first"] == store.ranked.loc[store.ranked["could_be_first"], "system"].tolist()
    assert [row["system_1"] for row in headline["adjacent"]] == store.ranked["system"].head(-1).tolist()
    assert [row["interval_lo"] for row in board["ranked"]] == pytest.approx(store.ranked["mean_task_lo"].tolist(),
                                                                      abs=1e-6)  # JSON keeps 6 digits


def test_the_seed_reproduces_and_resamples_zero_turns_the_ranges_off():
    args = ("leaderboard", "--data", str(SHIPPED), "--benchmark", "r2med", "--resamples", "200", "--format", "csv")
    one, two, other = _csv(cli(*args)[1]), _csv(cli(*args)[1]), _csv(cli(*args, "--seed", "9")[1])
    pd.testing.assert_frame_equal(one, two)
    assert not one["interval_lo"].equals(other["interval_lo"])
    off = _csv(cli("leaderboard", "--data", str(SHIPPED), "--benchmark", "r2med", "--resamples", "0",
                   "--format", "csv")[1])
    assert off["interval_lo"].isna().all() and (off.loc[off["complete"], "shared_rank"] == off.loc[off["complete"],
                                                                                                  "rank"]).all()


@pytest.mark.parametrize("bad", [("--level", "1.5"), ("--resamples", "-1"), ("--seed", "x")])
def test_bad_resampling_flags_are_one_line_and_exit_2(bad, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["leaderboard", "--data", str(SHIPPED), "--benchmark", "r2med", *bad])
    assert stop.value.code == 2
    assert bad[0].lstrip("-") in capsys.readouterr().err.splitlines()[-1]


def test_common_tasks_rank_the_named_systems_on_the_tasks_all_have():
    board = Store(SHIPPED).leaderboard(Condition("rar-b", instruction=None), bootstrap=0)
    missing = board.incomplete.iloc[0]
    names = [missing["system"], *board.ranked["system"].head(3)]
    code, out, err = cli("leaderboard", "--data", str(SHIPPED), "--benchmark", "rar-b", "--common-tasks",
                         "--resamples", "200", "--format", "json", *[a for n in names for a in ("--system", n)])
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
