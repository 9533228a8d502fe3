"""The Leaderboard's notice of systems that ties alone lift past others (ui.board.lifted_by_ties / ui.notices.lifted_line):
a degenerate run whose tie range spans [0, 1] has a rank range starting at 1 beside the best systems, and a
first-time visitor must read why, not a bare "1–8" beside a constant scorer."""
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalcore.store import Leaderboard
from ui import board as boards
from ui import notices

NAN = math.nan


def _line(board: Leaderboard) -> str | None:
    return notices.lifted_line(boards.lifted_by_ties(board), board.ranked_by)


def _board(points, tops) -> Leaderboard:
    ranked = pd.DataFrame({"system": [f"s{i}" for i in range(len(points))], "G": points, "G_max": tops})
    return Leaderboard(ranked=ranked, incomplete=pd.DataFrame(), tasks=[], tie_policy="docid-desc")


def _brute_force(points, tops):
    """Per system: its competition rank among the point values, and its rank when it alone takes its max —
    by sorting, one system at a time (no shared code with the closed form)."""
    out = []
    for i, (p, t) in enumerate(zip(points, tops)):
        rank = 1 + sum(1 for j, q in enumerate(points) if j != i and q > p)
        if math.isnan(t):
            continue
        values = sorted([(q, j) for j, q in enumerate(points) if j != i] + [(t, i)], key=lambda v: -v[0])
        best = 1 + next(k for k, (v, j) in enumerate(values) if v == t)  # ties with t: t takes their first place
        if best < rank:
            out.append((f"s{i}", p, t, rank, best))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_lifted_systems_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 7))
    points = rng.choice([0.1, 0.2, 0.3, 0.4, 0.5], size=n).tolist()  # repeats: equal points on purpose
    tops = [NAN if rng.random() < 0.3 else p + float(rng.choice([0.0, 0.05, 0.1, 0.25, 0.6])) for p in points]
    got = boards.lifted_by_ties(_board(points, tops))
    expected = _brute_force(points, tops)
    assert got["system"].tolist() == [e[0] for e in expected]
    assert got["point"].tolist() == pytest.approx([e[1] for e in expected])
    assert got["top"].tolist() == pytest.approx([e[2] for e in expected])
    assert got[["rank", "best"]].to_numpy().tolist() == [[e[3], e[4]] for e in expected]


def test_no_tie_range_no_notice():
    assert _line(_board([0.5, 0.4], [NAN, NAN])) is None
    assert _line(_board([0.5, 0.4], [0.5, 0.45])) is None  # ties move 0.4, not past 0.5
    ranked = pd.DataFrame({"system": ["a", "b"], "G": [0.5, 0.4]})  # published rows: no G_max column at all
    assert _line(Leaderboard(ranked=ranked, incomplete=pd.DataFrame(), tasks=[])) is None


def test_the_notice_words_agree_with_the_count():
    one = _line(_board([0.5, 0.4, 0.001], [0.5, 0.4, 1.0]))
    assert one.startswith("Ties alone can lift 1 system ") and "its favour" in one and "(s)" not in one
    assert re.search(r"\*\*s2\*\*\D*0\.0010 \(3rd\)\D*1\.0000 \([^)]*1st\)", one), one  # name, from, to
    ranges = boards.column_config(_board([0.5, 0.4, 0.001], [0.5, 0.4, 1.0]), lens="queries")["queries_ranks"]
    assert f"**{ranges['label']}**" in one, "the notice names the table's rank-range column by its header"
    two = _line(_board([0.5, 0.4, 0.3, 0.001], [0.5, 0.4, 0.45, 1.0]))
    assert "2 systems" in two and "their favour" in two and "(would be 2nd)" in two


def test_the_pooled_board_names_bm25_and_the_constant_scorer(fresh_answers):
    """On the shipped pooled RAR-b board the constant scorer (G 0.0007, tie range 0–1) and BM25 (tie range up to
    0.159, above MiniLM's 0.102) can be #1 on these tasks only through ties; the notice names both, and no system
    without such a tie range."""
    from evalcore.store import Condition
    from ui import data

    snap = data.snapshot(Path(__file__).resolve().parents[2] / "data")
    board = data.leaderboard(snap, Condition("rar-b", setting="full-pooled", instruction=None))
    lifted = boards.lifted_by_ties(board)
    assert set(lifted["system"]) == {"tiebreak-run/bm25s", "tiebreak-run/constant"}
    rows = board.ranked.set_index("system")
    # the very rows whose ranks on these tasks start at 1 (every tie broken in their favour) needed the words ...
    assert (rows.loc[lifted["system"], "queries_rank_lo"] == 1).all()
    assert rows.loc[lifted["system"], "queries_first"].all()
    # ... although their point values are far from the top, and no tie range lifts the rows in between
    assert (lifted["rank"] >= 5).all() and (lifted["best"] == 1).all()
    # a row's ranks on these tasks start no higher than its tie range's best place allows (nothing whose point is
    # below the row's max can be surely above it)
    best = dict(zip(lifted["system"], lifted["best"]))
    assert all(rows.at[name, "queries_rank_lo"] <= place for name, place in best.items())
    line = _line(board)
    assert re.search(r"\*\*tiebreak-run/constant\*\*\D*0\.0007 \(8th\)\D*1\.0000 \([^)]*1st\)", line), line
