"""The CRUMB board in the dashboard (AppTest): the Leaderboard ranks by CRUMB's mean and says its rows' source is
not recorded (imported runs carry no systems table), and the Instructions view gives the gap in the mean, not
in G."""
from __future__ import annotations

import pytest
from app_harness import ROOT, texts

from evalcore.cli import main
from evalcore.store import Condition, Store

FIXTURES = ROOT / "tests" / "fixtures" / "crumb"
CRUMB = {"bench": "crumb", "setting": "passage", "metric": "ndcg@10"}


@pytest.fixture(scope="module")
def crumb_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("crumb-views")
    for runs, extra in (("minilm", []), ("minilm-instructed", ["--system", "minilm", "--instruction", "yes"]),
                        ("bm25", [])):
        assert main(["import-crumb", str(FIXTURES / "runs" / runs), "--crumb", str(FIXTURES), "--data", str(folder),
                     *extra]) == 0
    return folder


def test_the_crumb_board_ranks_by_the_mean_and_says_its_source_is_not_recorded(open_url, crumb_dir):
    at = open_url(crumb_dir, params={**CRUMB, "instr": "without"})
    assert not at.exception
    board = Store(crumb_dir).leaderboard(Condition("crumb", "ndcg@10", "passage", False, "fp32"))
    assert board.ranked_by == "mean"
    table = at.dataframe[0].value
    assert table["system"].tolist() == board.ranked["system"].tolist()
    assert table["mean"].tolist() == pytest.approx(board.ranked["mean"].tolist(), abs=1e-12)
    assert table["mean"].iloc[0] == board.ranked["mean"].max() and "G" not in table, "ranked by the mean"
    assert any("Ranked by **mean**" in c and "CRUMB's own aggregate" in c for c in texts(at, "caption"))
    assert any(t.startswith("Task columns") and "Sources: not recorded" in t for t in texts(at, "caption"))
    assert not any("Sources: ." in t for t in texts(at, "caption"))


def test_the_instruction_gap_of_crumb_is_in_its_mean(open_url, crumb_dir):
    at = open_url(crumb_dir, page="instructions.py", params=CRUMB)
    assert not at.exception
    gap = Store(crumb_dir).instruction_gap(Condition("crumb", "ndcg@10", "passage", None, "fp32"))
    row = gap.per_system.set_index("system").loc["minilm"]
    assert gap.aggregate == "mean"
    assert "Gap in mean" in [str(h.value) for h in at.subheader]
    table = next(df.value for df in at.dataframe if "mean_a" in df.value.columns).set_index("system")
    assert table.loc["minilm", "gap"] == pytest.approx(row["mean_b"] - row["mean_a"])
