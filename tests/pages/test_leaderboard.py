"""The Leaderboard (pages/leaderboard.py, ui/board.py): numbers equal the store's and the CLI's, both lenses'
headlines and ranges are on the page (the lens control picks the table's), # is the point order and lies in
every rank range, the landing points to the per-query results, each benchmark ranks by its own aggregate, policy
swaps and precision kinds are said, a chart is drawn by default, and the exports carry every row."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from api_numbers import cli_board
from app_harness import ROOT, texts
from evalcore.store import Condition, Store
from ui import board as boards
from evalcore.uncertainty.board import QUESTIONS
from ui import glossary, screen, tables

SHIPPED = ROOT / "data"
POOLED = {"bench": "rar-b", "setting": "full-pooled", "instr": "any", "metric": "ndcg@10", "prec": "fp32"}
HEADLINE = re.compile(r"\*\*(\d+) of (\d+)\*\* adjacent pairs differ · \*\*(\d+)\*\* could be #1")


def assert_clean(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not texts(at, "error"), texts(at, "error")


def _html(at) -> str:
    return " ".join(str(el.proto.body) for el in at.get("html"))


def _headlines(at) -> dict[str, str]:
    """Each lens' headline on the page (the markdown block that starts with the lens' name), by lens."""
    found = {}
    for text in texts(at, "markdown"):
        for lens, label in boards.LENSES.items():
            if f"**{label}:**" in text:
                assert lens not in found, f"two headlines for {lens}"
                found[lens] = text
    return found


def _counts(headline: str) -> tuple[int, int, int]:
    """(N differ, M adjacent pairs, K could be #1) of a lens' headline."""
    match = HEADLINE.search(headline)
    assert match, headline
    return tuple(int(g) for g in match.groups())


def _range_words(lo, hi) -> str:
    return "—" if pd.isna(lo) or pd.isna(hi) else (f"{int(lo)}" if lo == hi else f"{int(lo)}–{int(hi)}")


def _holds(words: str, lo: float, hi: float) -> bool:
    """A printed interval (3 decimals, rounded outwards) holds [lo, hi] and is no wider than the rounding."""
    if pd.isna(lo) or pd.isna(hi):
        return words == "—"
    low, high = map(float, words.split("–"))
    return low <= lo < low + 0.001 + 1e-12 and high - 0.001 - 1e-12 < hi <= high


def test_numbers_and_tie_aware_ranks_equal_the_store(open_url, synthetic_dir):
    at = open_url(synthetic_dir, params={"bench": "rar-b", "metric": "ndcg@10", "instr": "without", "prec": "bf16"})
    assert_clean(at)
    board = Store(synthetic_dir).leaderboard(Condition("rar-b", "ndcg@10", "full", False, "bf16"))
    ranked = board.ranked
    heads = _headlines(at)
    assert set(heads) == {"queries", "tasks"}, "both lenses' headlines, side by side"
    for lens in ("queries", "tasks"):
        summary = board.lens(lens)
        assert _counts(heads[lens]) == (summary.n_differ, summary.n_pairs, int(ranked[f"{lens}_first"].sum()))
    table = at.dataframe[0].value
    assert table.columns[:7].tolist() == ["rank", "queries_ranks", "system", "G", "queries_interval", "queries_tier",
                                          "differs"], "the shown lens first; # before its ranges"
    assert table["system"].tolist() == ranked["system"].tolist()
    assert table["G"].round(12).tolist() == ranked["G"].round(12).tolist()
    assert table["rank"].tolist() == ranked["rank"].astype(int).tolist()
    assert table["queries_tier"].tolist() == ranked["queries_tier"].tolist()
    for (_, row), (_, want) in zip(table.iterrows(), ranked.iterrows()):
        for lens in ("queries", "tasks"):
            assert _holds(row[f"{lens}_interval"], want[f"{lens}_lo"], want[f"{lens}_hi"]), (lens, row)
            assert row[f"{lens}_ranks"] == _range_words(want[f"{lens}_rank_lo"], want[f"{lens}_rank_hi"])
    # could be #1 ⟺ tier 1 in the table (the tiers and the rank ranges come from the same decisions)
    assert set(table.loc[table["queries_tier"] == 1, "system"]) == set(ranked.loc[ranked["queries_first"], "system"])
    assert set(table.loc[table["queries_ranks"].str.match(r"1(–|$)"), "system"]) == \
        set(table.loc[table["queries_tier"] == 1, "system"])
    # the rows marked "differs" are exactly the upper systems of the lens' adjacent pairs that differ, each above
    # the system it differs from
    adjacent = board.lens("queries").adjacent
    marked = table.index[table["differs"] == boards.DIFFERS_MARK].tolist()
    differ = adjacent[adjacent["differ"]]
    assert 0 < len(differ) < len(adjacent), "the case: some pairs differ, some do not"
    assert [table.at[i, "system"] for i in marked] == differ["system_1"].tolist()
    assert [table.at[i + 1, "system"] for i in marked] == differ["system_2"].tolist()
    assert set(table["differs"]) == {boards.DIFFERS_MARK, ""}


def test_the_landing_gives_every_row_an_interval_and_points_to_the_per_query_results(open_url):
    at = open_url(SHIPPED)
    assert_clean(at)
    table = at.dataframe[0].value
    cli = cli_board(SHIPPED, ["--benchmark", "rar-b"])  # the CLI's numbers, in a process of its own
    zero = set(cli["zero_task_systems"])
    assert zero and table["system"].tolist() == [r["system"] for r in cli["ranked"]]
    for lens in ("queries", "tasks"):
        has = ~table["system"].isin(zero)
        assert table.loc[has, f"{lens}_interval"].str.fullmatch(r"\d\.\d{3}–\d\.\d{3}").all(), \
            "every published row with G > 0 has an interval through both lenses"
        assert table.loc[~has, f"{lens}_interval"].eq(boards.NO_VALUE).all(), "G = 0 is not an estimate"
        assert table[f"{lens}_ranks"].str.fullmatch(r"\d+(–\d+)?").all(), "and every row a rank range"
        for shown, row in zip(table[f"{lens}_ranks"], cli["ranked"]):
            assert shown == _range_words(row[f"{lens}_rank_lo"], row[f"{lens}_rank_hi"])
    assert (table["queries_tier"] >= 1).all() and "G_min" not in table, "no empty tie-range column"
    # both headlines: N of M and K could be #1 are the CLI's counts
    heads = _headlines(at)
    for lens, record in cli["uncertainty"]["lenses"].items():
        assert _counts(heads[lens]) == (record["n_adjacent_differ"], record["n_adjacent"],
                                        len(record["could_be_first"])), lens
        assert record["n_adjacent"] == len(table) - 1
        untested = record["n_adjacent"] - record["n_tested"]
        assert untested > 1 and f"{untested} pairs with G = 0 not tested" in heads[lens], heads[lens]
    coverage = Store(SHIPPED).coverage()
    with_rows = coverage[(coverage["benchmark"] == "rar-b") & (coverage["n_query_tasks"] > 0)
                         & (coverage["setting"] == "full-pooled") & (coverage["metric"] == "ndcg@10")
                         & (coverage["precision"] == "fp32") & (coverage["tie_policy"] == "docid-desc")]
    promised = with_rows["system"].nunique()
    page = _html(at)
    assert f"<b>{promised} systems</b> have per-query results" in page
    href = re.search(r'href="([^"]+)"', page).group(1)
    assert href == "?bench=rar-b&setting=full-pooled&metric=ndcg@10&instr=any&prec=fp32&ties=docid-desc"
    # the link is a real view: opened as a URL it shows the per-query board, BM25 able to be first on these tasks
    # through its ties
    params = dict(pair.split("=") for pair in href[1:].split("&"))
    there = open_url(SHIPPED, params=params)
    assert_clean(there)
    pooled = there.dataframe[0].value.set_index("system")
    assert pooled.loc["tiebreak-run/bm25s", "queries_ranks"].startswith("1–")
    assert pooled.loc["tiebreak-run/bm25s", "queries_tier"] == 1
    assert any("ranked systems have per-query results here" in m for m in texts(there, "markdown"))
    # the link shows as many systems with per-query results as it promised
    assert any(f"**{promised} of " in m for m in texts(there, "markdown") if "have per-query results here" in m)


def test_the_table_comes_before_the_notices(open_url):
    """At 1440×900 not one row showed on a first visit: the notices (G = 0, …) now follow the table."""
    at = open_url(SHIPPED)
    assert_clean(at)
    kinds = [type(node).__name__ for node in at.main]  # the page's elements, top to bottom
    assert "Dataframe" in kinds and "Warning" in kinds, kinds  # the shipped board warns of G = 0
    above = set(kinds[:kinds.index("Dataframe")])
    assert not above & {"Warning", "Info", "Error", "Metric"}, kinds
    assert not at.metric, "no row of big numbers above the table"


def test_a_board_where_no_pair_differs_says_why(open_url, synthetic_dir):
    """None of RAR-b's 144 adjacent pairs differs on new tasks like these: the headline names the strongest pair's
    one-sided p against Holm's first threshold (the CLI's), and so does a small board."""
    at = open_url(SHIPPED)
    cli = cli_board(SHIPPED, ["--benchmark", "rar-b"])["uncertainty"]["lenses"]["tasks"]
    assert cli["n_adjacent_differ"] == 0
    strongest = cli["strongest_when_none_differ"]
    assert strongest["p_value"] > strongest["threshold"]
    words = f"p = {strongest['p_value']:.2g}, Holm's first threshold {strongest['threshold']:.2g}"
    assert words in _headlines(at)["tasks"], _headlines(at)
    assert "none differs" not in _headlines(at)["queries"], "a lens where pairs differ says nothing of the kind"
    small = open_url(synthetic_dir, params={"instr": "without"})
    board = Store(synthetic_dir).leaderboard(Condition("rar-b", instruction=False))
    summary = board.lens("tasks")
    assert summary.n_differ == 0 and summary.strongest is not None
    # Holm's first threshold over the tested pairs, and the smallest one-sided p of them: recomputed here
    tested = summary.adjacent.dropna(subset=["p_value"])
    assert summary.strongest["threshold"] == (1 - board.level) / len(tested)
    assert summary.strongest["p_value"] == tested["p_value"].min()
    words = f"p = {summary.strongest['p_value']:.2g}, Holm's first threshold {summary.strongest['threshold']:.2g}"
    assert words in _headlines(small)["tasks"]


def test_a_lens_that_cannot_speak_of_a_board_says_why(open_url, synthetic_dir):
    """The synthetic R2MED tasks have no recorded query counts: the queries lens says so in its headline and its
    columns hold no number, while the tasks lens fills them."""
    at = open_url(synthetic_dir, params={"bench": "r2med"})
    assert_clean(at)
    board = Store(synthetic_dir).leaderboard(Condition("r2med", instruction=None))
    assert not board.lens("queries").available and board.lens("tasks").available
    heads = _headlines(at)
    assert "not available here" in heads["queries"] and "query count" in heads["queries"], heads
    assert not HEADLINE.search(heads["queries"]) and HEADLINE.search(heads["tasks"])
    table = at.dataframe[0].value
    assert table["queries_ranks"].eq(boards.NO_VALUE).all() and table["queries_interval"].eq(boards.NO_VALUE).all()
    assert table["tasks_ranks"].ne(boards.NO_VALUE).all()


def test_the_lens_control_is_in_the_url_and_switches_the_range_columns(open_url, synthetic_dir):
    at = open_url(synthetic_dir, params={"instr": "without"})
    assert_clean(at)
    assert at.radio(key="lens").value == "queries" and "lens" not in at.query_params
    board = Store(synthetic_dir).leaderboard(Condition("rar-b", instruction=False))
    first = at.dataframe[0].value
    assert first.columns[1] == "queries_ranks" and "queries_tier" in first
    at.radio(key="lens").set_value("tasks").run()
    assert_clean(at)
    assert at.query_params["lens"] == "tasks"
    table = at.dataframe[0].value
    assert table.columns[:6].tolist() == ["rank", "tasks_ranks", "system", "G", "tasks_interval", "tasks_tier"]
    assert "queries_tier" not in table and "queries_ranks" in table, "the other lens' ranges stay, further right"
    assert table["tasks_ranks"].tolist() == [_range_words(lo, hi) for lo, hi in
                                             zip(board.ranked["tasks_rank_lo"], board.ranked["tasks_rank_hi"])]
    assert table["tasks_tier"].tolist() == board.ranked["tasks_tier"].tolist()
    marked = set(table.loc[table.get("differs", pd.Series("", index=table.index)) == boards.DIFFERS_MARK, "system"])
    adjacent = board.lens("tasks").adjacent
    assert marked == set(adjacent.loc[adjacent["differ"], "system_1"]), "the marks follow the lens"
    heads = list(_headlines(at))
    assert heads == ["tasks", "queries"], "the shown lens' headline first"
    page = _html(at)
    tiers = sorted(set(board.ranked["tasks_tier"].head(boards.CHART_ROWS)))
    assert re.findall(r'class="tb-row tb-group"><span class="tb-name"[^>]*>(Tier \d+)</span>', page) == \
        [f"Tier {t}" for t in tiers], "the chart grouped by the lens' tiers"
    # a link with the lens opens it
    again = open_url(synthetic_dir, params={"instr": "without", "lens": "tasks"})
    assert again.radio(key="lens").value == "tasks" and again.dataframe[0].value.columns[1] == "tasks_ranks"


def test_simultaneous_ranks_contain_the_marginal_ones(open_url, synthetic_dir):
    """ranks=simultaneous (in the URL) covers every row at once: each row's range holds its marginal range, on
    the page as in the store, and the page says which kind it shows."""
    params = {"bench": "rar-b", "metric": "ndcg@10", "instr": "without", "prec": "bf16"}
    marginal = open_url(synthetic_dir, params=params)
    joint = open_url(synthetic_dir, params={**params, "ranks": "simultaneous"})
    assert_clean(joint)
    assert joint.radio(key="ranks").value == "simultaneous" and joint.query_params["ranks"] == "simultaneous"
    assert any("simultaneous rank sets" in c for c in texts(joint, "caption"))
    assert any("marginal rank sets" in c for c in texts(marginal, "caption"))

    def bounds(words):
        lo, _, hi = words.partition("–")
        return int(lo), int(hi or lo)

    widened = 0
    for lens in ("queries", "tasks"):
        for narrow, wide in zip(marginal.dataframe[0].value[f"{lens}_ranks"], joint.dataframe[0].value[f"{lens}_ranks"]):
            (a, b), (c, d) = bounds(narrow), bounds(wide)
            assert c <= a and b <= d, (lens, narrow, wide)
            widened += (c, d) != (a, b)
    assert widened, "the case: some range is wider at once than on its own"
    store = Store(synthetic_dir)
    cond = Condition("rar-b", "ndcg@10", "full", False, "bf16")
    one, every = store.leaderboard(cond), store.leaderboard(cond, ranks="simultaneous")
    for lens in ("queries", "tasks"):
        assert (every.ranked[f"{lens}_rank_lo"] <= one.ranked[f"{lens}_rank_lo"]).all()
        assert (every.ranked[f"{lens}_rank_hi"] >= one.ranked[f"{lens}_rank_hi"]).all()
    # on the shipped board too: 145 rows, ranges on their own and at once
    shipped = Store(SHIPPED)
    cond = Condition("rar-b", instruction=None)
    one, every = shipped.leaderboard(cond), shipped.leaderboard(cond, ranks="simultaneous")
    for lens in ("queries", "tasks"):
        assert (every.ranked[f"{lens}_rank_lo"] <= one.ranked[f"{lens}_rank_lo"]).all()
        assert (every.ranked[f"{lens}_rank_hi"] >= one.ranked[f"{lens}_rank_hi"]).all()
        assert ((every.ranked[f"{lens}_rank_hi"] - every.ranked[f"{lens}_rank_lo"])
                > (one.ranked[f"{lens}_rank_hi"] - one.ranked[f"{lens}_rank_lo"])).any()


def test_the_pointer_counts_the_filtered_systems_and_its_link_keeps_the_filter(open_url):
    """Filtered to one system ("e5", 1B and up, open weights), the landing still said "8 systems have per-query
    results … show them", and the link dropped the filter."""
    base = {"bench": "rar-b", "setting": "full", "metric": "ndcg@10", "instr": "any", "prec": "fp32"}
    some = open_url(SHIPPED, params={**base, "q": "mini"})  # the MiniLM models; our run has per-query rows
    assert_clean(some)
    page = _html(some)
    assert re.search(r"<b>1 of the filtered systems</b>", page), page
    href = re.search(r'href="([^"]+)"', page).group(1)
    assert "q=mini" in href and "setting=full-pooled" in href
    there = open_url(SHIPPED, params=dict(pair.split("=") for pair in href[1:].split("&")))
    assert_clean(there)
    assert there.dataframe[0].value["system"].tolist() == ["tiebreak-run/all-MiniLM-L6-v2"]
    none = open_url(SHIPPED, params={**base, "q": "e5", "size_min": "1B", "open": "yes"})
    assert_clean(none)
    page = _html(none)
    assert re.findall(r"<b>(.*?)</b>", page) == ["8 other systems"], page
    assert "(without the filter)" in page and "q=" not in re.search(r'href="([^"]+)"', page).group(1)


def test_a_chart_with_intervals_is_drawn_by_default_and_can_be_switched(open_url, synthetic_dir):
    at = open_url(synthetic_dir, params={"instr": "without"})
    assert_clean(at)
    assert at.radio(key="chart").value == "intervals" and "chart" not in at.query_params
    page = _html(at)
    board = Store(synthetic_dir).leaderboard(Condition("rar-b", instruction=False))
    assert page.count('class="tb-row" title=') == min(boards.CHART_ROWS, len(board.ranked))
    legend = page.split('class="tb-legend"', 1)[1]
    assert "on these tasks" in legend and "on new tasks like these" in legend and "tie range" in legend, \
        "the legend, below the rows"
    tiers = sorted(set(board.ranked["queries_tier"].head(boards.CHART_ROWS)))
    assert re.findall(r'class="tb-row tb-group"><span class="tb-name"[^>]*>(Tier \d+)</span>', page) == \
        [f"Tier {t}" for t in tiers], "the rows grouped by the shown lens' tier"
    assert not at.get("plotly_chart"), "the default chart loads no plotting library"
    at.radio(key="chart").set_value("none").run()
    assert "tb-forest" not in _html(at) and at.query_params["chart"] == "none"
    at = open_url(synthetic_dir, params={"chart": "size"})
    assert len(at.get("plotly_chart")) == 1
    assert "Performance vs model size" in [h.value for h in at.subheader]


def test_each_benchmark_ranks_by_its_own_aggregate_and_says_so(open_url, synthetic_dir):
    at = open_url(synthetic_dir, params={"bench": "r2med"})
    assert_clean(at)
    assert at.selectbox(key="sort").value == "mean" and "sort" not in at.query_params
    assert any("Ranked by **mean**" in c and "R2MED's own aggregate" in c for c in texts(at, "caption"))
    board = Store(synthetic_dir).leaderboard(Condition("r2med", instruction=None), uncertainty=False)
    assert board.ranked_by == "mean"
    assert at.dataframe[0].value["system"].tolist() == board.ranked["system"].tolist()
    at.selectbox(key="sort").set_value("g").run()
    assert at.query_params["sort"] == "g"
    assert any("Ranked by **G**" in c and "not R2MED's own, which is mean" in c for c in texts(at, "caption"))
    intro = " ".join(texts(at, "markdown"))
    assert "RAR-b by G" in intro and "R2MED and CRUMB by the mean" in intro


def test_policy_swaps_and_precision_kinds_are_said_on_the_shipped_pooled_board(open_url):
    at = open_url(SHIPPED, params=POOLED)
    assert_clean(at)
    board = Store(SHIPPED).leaderboard(Condition("rar-b", "ndcg@10", "full-pooled", None, "fp32"),
                                       uncertainty=False)
    assert len(board.policy_swaps), "the shipped case: uniform-random and constant swap under docid-desc"
    warnings = " ".join(texts(at, "warning"))
    for pair in board.policy_swaps.itertuples():
        assert f"**{pair.system_1}** ahead of **{pair.system_2}**" in warnings
    kinds = " ".join(texts(at, "info"))
    assert "(inference)" in kinds and "(native)" in kinds and "tiebreak-run/bm25s" in kinds
    assert set(at.dataframe[0].value["precision_kind"].dropna()) == {"inference", "native"}


def test_the_ties_notice_names_the_column_whose_ranges_start_that_high(open_url):
    """Ties alone lift BM25 and the constant scorer to #1 on these tasks: the notice names the table's column of
    those ranges by its header — "Ranks" when the lens control shows these tasks, the other header when it shows
    new tasks like these (whose "Ranks" for the constant scorer read 7–8)."""
    import json

    for lens in ("queries", "tasks"):
        at = open_url(SHIPPED, params={**POOLED, "lens": lens})
        assert_clean(at)
        notice = next(w for w in texts(at, "warning") if w.startswith("Ties alone"))
        named = re.search(r"\*\*([^*]+)\*\* start that high", notice).group(1)
        grid = at.dataframe[0]
        labels = {spec.get("label"): name for name, spec in json.loads(grid.proto.columns).items()}
        column = labels[named]
        table = grid.value.set_index("system")
        for system in ("tiebreak-run/bm25s", "tiebreak-run/constant"):
            assert system in notice and re.match(r"1(–|$)", table.at[system, column]), (lens, column, system)
        assert column == "queries_ranks", "the ranges that count ties against a claim"


def test_provenance_names_repository_commit_and_snapshot(open_url):
    at = open_url(SHIPPED)
    caption = " ".join(texts(at, "caption"))
    assert "embeddings-benchmark/results @ f4cc6c8" in caption and "Data snapshot 20" in caption
    assert set(at.dataframe[0].value["source"]) == {"mteb-results@f4cc6c8"}


def test_exports_carry_every_row_with_integer_ranks():
    from evalcore.csv_export import to_csv_text

    board = Store(SHIPPED).leaderboard(Condition("rar-b", instruction=None))
    meta = Store(SHIPPED).systems(benchmark="rar-b")
    rows = boards.export_rows(board, meta, pd.Series(dtype=object))
    assert len(rows) == len(board.ranked) + len(board.incomplete)
    assert rows["system"].tolist() == board.rows()["system"].tolist()
    assert rows["complete"].tolist() == [True] * len(board.ranked) + [False] * len(board.incomplete)
    assert rows["reference"].notna().any() and rows["source"].eq("mteb-results@f4cc6c8").all()
    assert rows["level"].eq(0.95).all() and rows["ranks"].eq("marginal").all(), "each row names its level and kind"
    csv = list(__import__("csv").DictReader(to_csv_text(rows).splitlines()))
    integers = [c for c in boards.INTEGER_COLUMNS if c in csv[0]]
    assert {"rank", "queries_rank_lo", "queries_rank_hi", "queries_tier", "tasks_rank_lo", "tasks_rank_hi",
            "tasks_tier"} <= set(integers)
    for column in integers:  # "1", never "1.0"; empty where a row is not ranked
        ranked = [row[column] for row in csv[:len(board.ranked)]]
        assert all(re.fullmatch(r"\d+", value) for value in ranked), (column, ranked[:5])
        assert all(row[column] in ("", "0") or column == "n_tasks" for row in csv[len(board.ranked):]), column
    first = csv[0]
    assert first["rank"] == "1" and first["queries_rank_lo"] == "1"
    assert first["G"] and first["G_min"] == "" and first["G_max"] == "", \
        "task-level scores only: no tie range, not a zero-width one at the point"
    assert float(first["queries_lo"]) < float(first["G"]) < float(first["queries_hi"]), "but an interval"
    pooled = Store(SHIPPED).leaderboard(Condition("rar-b", setting="full-pooled", instruction=None))
    tied = boards.export_rows(pooled, meta, pd.Series(dtype=object)).set_index("system")
    assert tied.at["tiebreak-run/constant", "queries_hi"] == 1.0, "a tie range to 1 reaches the interval's end"
    latex = tables.latex_table(boards.latex_rows(board), "caption", [board.ranked_by])
    assert latex.split("\\midrule")[1].split(" & ")[0].strip() == "1", "# printed as an integer"
    assert "\\resizebox{\\linewidth}" in latex, "wide tables are scaled to the page"
    assert latex.count("not ranked") == 2 * len(board.incomplete), "both lenses' ranks say so"


def test_the_first_columns_fit_a_phone():
    """On a phone the first five columns take :data:`PHONE_WIDTHS`: #, the rank range, the name and the score
    fit the screen's 390 px (less the page's margins) without scrolling sideways."""
    assert sum(boards.PHONE_WIDTHS[:4]) <= 350
    board = Store(SHIPPED).leaderboard(Condition("rar-b", instruction=None))
    for lens in ("queries", "tasks"):
        table = boards.table(board, None, pd.Series(dtype=object), "g", False, False, lens)
        first = table.columns[:5].tolist()
        assert first == ["rank", f"{lens}_ranks", "system", "G", f"{lens}_interval"]
        for phone, widths in ((True, boards.PHONE_WIDTHS), (False, boards.SCREEN_WIDTHS)):
            config = boards.column_config(board, phone, lens)
            assert [config[column]["width"] for column in first] == list(widths), (lens, phone)
        pinned = [c for c in table.columns if boards.column_config(board, True, lens).get(c, {}).get("pinned")]
        assert pinned == ["rank", f"{lens}_ranks", "system"], "what stays in view when the table scrolls"


def test_every_jargon_header_links_to_the_glossary():
    board = Store(SHIPPED).leaderboard(Condition("rar-b", setting="full-pooled", instruction=None))
    for lens in ("queries", "tasks"):
        other = "tasks" if lens == "queries" else "queries"
        config = boards.column_config(board, lens=lens)
        jargon = ("rank", "G", f"{lens}_ranks", f"{lens}_interval", f"{lens}_tier", "differs", f"{other}_ranks",
                  f"{other}_interval", "G_min", "G_max", "G_expected", "mean", "borda", "precision_kind")
        for column in jargon:
            links = re.findall(r"\]\(glossary\?term=([\w-]+)#\1\)", config[column]["help"])
            assert links and all(key in glossary.TERMS for key in links), column
        lens_entry = "on-these-tasks" if lens == "queries" else "on-new-tasks"
        for column in (f"{lens}_ranks", f"{lens}_interval"):
            assert glossary.TERMS[lens_entry].text in config[column]["help"], (column, "it says which question")
            assert f"{board.level:.0%}" in config[column]["help"]
        assert "marginal" in config[f"{lens}_ranks"]["help"], "the kind of the rank sets is named"
        assert glossary.TERMS["oblivious"].text in config["G"]["help"], "the score is the oblivious value"


def test_rows_left_out_at_load_are_visible(open_url, synthetic_dir, tmp_path):
    import shutil

    folder = tmp_path / "with-warnings"
    shutil.copytree(synthetic_dir, folder)
    published = pd.read_parquet(folder / "task_scores_synthetic.parquet")
    bad = published.head(2).assign(system=[None, "x"], value=[0.5, float("nan")])
    bad.to_parquet(folder / "task_scores_bad.parquet", index=False)
    warnings = Store(folder).warnings
    assert warnings, "the store left rows out"
    at = open_url(folder)
    assert_clean(at)
    n = len(warnings)
    said = "1 group of rows was" if n == 1 else f"{n} groups of rows were"
    assert any(f"{said} left out" in c for c in texts(at, "caption"))
    expanders = [e.label for e in at.sidebar.expander]
    assert ("1 group of rows left out" if n == 1 else f"{n} groups of rows left out") in expanders
    shown = " ".join(c.value for c in at.sidebar.caption)
    assert "task\\_scores\\_bad.parquet" in shown or "task_scores_bad.parquet" in shown


def test_borda_order_says_so_and_shows_the_points_it_orders_by(open_url):
    """Rank by "Borda count" orders the rows only (# stays G's): the Borda column is shown without the "Show
    Borda count" toggle, the rows follow it, and # still gives each row's place by G."""
    at = open_url(SHIPPED, params={**POOLED, "sort": "borda"})
    assert_clean(at)
    table = at.dataframe[0].value
    assert "borda" in table.columns
    assert table["borda"].tolist() == sorted(table["borda"].tolist(), reverse=True)
    assert table["G"].tolist() != sorted(table["G"].tolist(), reverse=True), "the fixture must tell the orders apart"
    assert any("rows in **Borda count** order" in c for c in texts(at, "caption"))
    board = Store(SHIPPED).leaderboard(Condition("rar-b", "ndcg@10", "full-pooled", None, "fp32"),
                                       uncertainty=False)
    by_g = board.ranked.set_index("system")["rank"]
    assert table["rank"].tolist() == table["system"].map(by_g).astype(int).tolist(), "# is G's place, not Borda's"
    assert "differs" not in table, "adjacent pairs are G's neighbours: no mark between rows in another order"
    r2med = open_url(SHIPPED, params={"bench": "r2med", "sort": "borda"})
    assert_clean(r2med)
    assert any(c.startswith("R2MED · ") for c in texts(r2med, "caption")), "the condition line names R2MED so"
    assert any(h.value.startswith("First ") and "by Borda count" in h.value for h in at.subheader)
    at.selectbox(key="sort").set_value("g").run()
    assert "borda" not in at.dataframe[0].value.columns
    assert at.dataframe[0].value["rank"].is_monotonic_increasing


def test_the_size_chart_accounts_for_every_ranked_system(open_url):
    """Each ranked system is either a point of "Performance vs model size" or named under it: the shipped pooled
    board has baselines with 0 parameters (no place on a log axis) and systems of unknown size."""
    import json

    at = open_url(SHIPPED, params={**POOLED, "chart": "size"})
    assert_clean(at)
    figure = json.loads(at.get("plotly_chart")[0].proto.spec)
    plotted = set(figure["data"][0]["text"])
    said = " ".join(c for c in texts(at, "caption") if c.startswith("Not plotted"))
    ranked = at.dataframe[0].value["system"].tolist()
    missing = [s for s in ranked if s not in plotted and s not in said]
    assert not missing, missing
    assert "no parameters (a log axis has no 0): " in said and "tiebreak-run/constant" in said
    assert "tiebreak-run/bm25s" in said.split("no parameters")[1], "lexical scorers learn no weights, as baselines"
    assert "size unknown" not in said and "tiebreak-run/wordllama-l2-supercat" in plotted  # its size is published
    r2med = open_url(SHIPPED, params={"bench": "r2med", "chart": "size"})  # the paper's rows carry no size
    assert any(c.startswith("Not plotted: size unknown: ") for c in texts(r2med, "caption"))
    # the front's points carry numbers, the caption names them: names overlapped (two 1.5B models on R2MED) and
    # were cut at the plot's left edge on a phone
    front = figure["data"][1]
    assert front["text"] == [str(i) for i in range(1, len(front["customdata"]) + 1)]
    key = next(c for c in texts(at, "caption") if c.startswith("Pareto front"))
    assert all(f"**{i}** {name}" in key.replace("\\", "") for i, name in enumerate(front["customdata"], start=1))


def test_the_size_charts_front_is_what_the_lens_tells_apart(open_url):
    """The Pareto front of "Performance vs model size" holds the sized systems that no system of no larger size is
    surely above through the shown lens (the store's decisions, checked pair by pair here): on these tasks fewer
    systems survive than on new tasks like these, where little is told apart."""
    import json

    board = Store(SHIPPED).leaderboard(Condition("rar-b", instruction=None))
    sizes = Store(SHIPPED).systems(benchmark="rar-b").drop_duplicates("system").set_index("system")["n_parameters"]
    names = board.ranked["system"].tolist()
    sized = [s for s in names if pd.notna(sizes.get(s)) and sizes.get(s) > 0]
    fronts = {}
    for lens in ("queries", "tasks"):
        at = open_url(SHIPPED, params={"chart": "size", "lens": lens})
        assert_clean(at)
        figure = json.loads(at.get("plotly_chart")[0].proto.spec)
        shown = set(figure["data"][1]["customdata"])
        above = board.lens(lens).surely_above
        expected = {s for s in sized if not any(
            above[names.index(s), names.index(t)] for t in sized if t != s and sizes[t] <= sizes[s])}
        assert shown == expected, (lens, sorted(shown ^ expected))
        fronts[lens] = shown
    assert len(fronts["queries"]) < len(fronts["tasks"])


def test_exports_list_the_rows_in_the_pages_order(open_url):
    """Under 'Borda count' order the page's rows are in Borda order; the CSV and LaTeX were in mean order and
    the LaTeX had no Borda column (R2MED, reported from a browser)."""
    from evalcore.csv_export import to_csv_text

    at = open_url(SHIPPED, params={"bench": "r2med", "sort": "borda"})
    assert_clean(at)
    shown = at.dataframe[0].value["system"].tolist()
    board = Store(SHIPPED).leaderboard(Condition("r2med", instruction=None), uncertainty=False)
    by_points = board.ranked.sort_values("borda", ascending=False, kind="stable")
    assert shown[0] == by_points["system"].iloc[0] and shown != board.ranked["system"].tolist(), "Borda order here"
    meta = Store(SHIPPED).systems(benchmark="r2med")
    rows = boards.export_rows(board, meta, pd.Series(dtype=object), "borda")
    assert rows["system"].tolist()[:len(shown)] == shown
    assert rows["system"].tolist()[len(shown):] == board.incomplete["system"].tolist()
    assert len(to_csv_text(rows).splitlines()) == len(rows) + 1
    latex = boards.latex_rows(board, "borda")
    assert latex["System"].tolist()[:len(shown)] == shown and "Borda" in latex.columns
    assert boards.export_rows(board, meta, pd.Series(dtype=object))["system"].tolist()[:len(shown)] == \
        board.ranked["system"].tolist(), "the other orders keep the board's"


def test_a_filter_says_how_many_of_its_systems_have_results_here(open_url):
    """"Filtered to 16 systems" above a board of 15: the 4-bit e5 matches "e5" but has no full-retrieval result
    (a browser review); the line now says how many of them the board can show."""
    at = open_url(SHIPPED, params={"bench": "rar-b", "q": "e5"})
    assert_clean(at)
    store = Store(SHIPPED)
    matching = store.systems(search="e5", benchmark="rar-b")["system"].tolist()
    board = store.leaderboard(Condition("rar-b", instruction=None), systems=matching, uncertainty=False)
    shown = len(board.ranked) + len(board.incomplete)
    assert 0 < shown < len(matching), "the case: some matching systems have no result here"
    line = next(c for c in texts(at, "caption") if c.startswith("Filtered to"))
    assert line.startswith(f"Filtered to {len(matching)} systems")
    assert re.search(rf"\b{shown} of them\b", line), line
    # under one instruction state, the systems with results in that state (the board's count)
    with_instr = open_url(SHIPPED, params={"bench": "rar-b", "q": "e5", "instr": "with"})
    board = store.leaderboard(Condition("rar-b", instruction=True), systems=matching, uncertainty=False)
    line = next(c for c in texts(with_instr, "caption") if c.startswith("Filtered to"))
    assert re.search(rf"\b{len(board.ranked) + len(board.incomplete)} of them\b", line), line
    plain = open_url(SHIPPED, params={"bench": "rar-b", "q": "gte"})
    assert "of them" not in next(c for c in texts(plain, "caption") if c.startswith("Filtered to"))


def test_an_unknown_licence_says_unknown_as_its_neighbours_do(open_url):
    """R2MED's board showed a grey "None" in Licence beside "unknown" in Open weights."""
    at = open_url(SHIPPED, params={"bench": "r2med"})
    assert_clean(at)
    table = at.dataframe[0].value
    meta = Store(SHIPPED).systems(benchmark="r2med").drop_duplicates("system").set_index("system")
    missing = table["system"].map(meta["license"]).isna()
    assert missing.any() and (~missing).any(), "the case: some licences known, some not"
    assert table.loc[missing, "license"].eq("unknown").all()
    assert table.loc[~missing, "license"].tolist() == table.loc[~missing, "system"].map(meta["license"]).tolist()


def test_the_chart_draws_both_lenses_intervals_for_every_row(open_url):
    """The landing's published rows have task-level scores only; their chart was once a column of dots. Each row
    of the chart carries both lenses' intervals (in its tooltip: the store's numbers)."""
    for params, cond in (({}, Condition("rar-b", instruction=None)),
                         (POOLED, Condition("rar-b", setting="full-pooled", instruction=None))):
        at = open_url(SHIPPED, params=params)
        assert_clean(at)
        titles = [h.value for h in at.subheader if h.value.startswith("Top ")]
        assert len(titles) == 1 and titles[0].endswith(": G with its intervals"), titles
        page = _html(at)
        rows = page.count('class="tb-row" title=')
        board = Store(SHIPPED).leaderboard(cond)
        assert rows == min(15, len(board.ranked))
        for (lens, label), band in zip(boards.LENSES.items(), ("on these tasks", "on new tasks like these")):
            said = re.findall(rf"\n{band}: (\d\.\d{{4}}) – (\d\.\d{{4}})", page.replace("&#10;", "\n"))
            want = [(f"{lo:.4f}", f"{hi:.4f}") for lo, hi in board.ranked[[f"{lens}_lo", f"{lens}_hi"]].head(rows)
                    .itertuples(index=False)]
            assert said == want, (params, lens)


def test_borda_points_print_halves_only_where_there_are_some():
    """Borda points are whole unless a task has tied scores (half points): "723", not "723.0". (Both shipped
    boards have a tie somewhere, so the boards here are written by hand.)"""
    from evalcore.store import Leaderboard

    def borda_format(points):
        board = Leaderboard(ranked=pd.DataFrame({"system": list("abc"), "borda": points}),
                            incomplete=pd.DataFrame(), tasks=[])
        return dict(boards.column_config(board)["borda"])["type_config"]["format"]

    assert borda_format([4.0, 2.0, 0.0]) == "%d"
    assert borda_format([3.5, 2.5, 0.0]) == "%.1f"
    shipped = Store(SHIPPED).leaderboard(Condition("r2med", instruction=None), uncertainty=False)
    assert (shipped.ranked["borda"] % 1 != 0).any() and \
        dict(boards.column_config(shipped)["borda"])["type_config"]["format"] == "%.1f", "R2MED has a tie"


def test_one_model_under_two_names_is_said_with_both_scores(open_url):
    """R2MED's board held GritLM-7B (R2MED paper, mean 0.3112) and GritLM/GritLM-7B (MTEB, 0.2802) — one model at
    two places — and nothing on the page said so."""
    at = open_url(SHIPPED, params={"bench": "r2med"})
    assert_clean(at)
    board = Store(SHIPPED).leaderboard(Condition("r2med", instruction=None))
    by_name = board.ranked.set_index("system")
    notes = [t for t in texts(at, "info") if "under the names of different sources" in t]
    assert len(notes) == 1, texts(at, "info")
    note = notes[0]
    for name in ("GritLM-7B", "GritLM/GritLM-7B"):
        assert f"**{name}** {by_name.at[name, 'mean']:.4f} (#{int(by_name.at[name, 'rank'])})" in note
    assert note.startswith("4 models appear twice"), note  # GritLM, SFR-Embedding-Mistral, e5-mistral, bge-large
    assert "; and " not in note and "BM25" not in note  # four shown; BM25 and bm25s are two implementations
    pooled = open_url(SHIPPED, params=POOLED)  # one source, no repeated model: no line
    assert not [t for t in texts(pooled, "info") if "under the names of different sources" in t]


def test_an_mcr_board_says_where_chance_lies(open_url):
    """MCR accuracy without instructions is topped by the uniform random baseline and the constant scorer's
    expected G beats every model: without chance on the page it reads as broken runs."""
    at = open_url(SHIPPED, params={"bench": "rar-b", "setting": "mcr", "metric": "p@1", "instr": "without",
                                   "prec": "fp32"})
    assert_clean(at)
    rows = pd.read_parquet(SHIPPED / "real" / "query_metrics", filters=[
        ("setting", "==", "mcr"), ("metric", "==", "p@1"), ("precision", "==", "fp32"),
        ("system", "==", "tiebreak-run/constant")])
    per_task = rows.groupby("task")["expected"].mean()
    level = float(np.exp(np.log(per_task.to_numpy()).mean()))
    table = at.dataframe[0].value
    below = int((table["G"] < level).sum())
    line = next(t for t in texts(at, "info") if t.startswith("**Chance: G = "))
    assert line.startswith(f"**Chance: G = {level:.4f}**"), line
    said = (f"All {below} ranked systems score below it." if below == len(table)
            else f"{below} of {len(table)} ranked systems score below it.")
    assert said in line, line
    assert below > 0  # even the uniform random baseline, by sampling: 0.30766 vs 0.30768
    full = open_url(SHIPPED, params=POOLED)  # nDCG of full retrieval: no chance line
    assert not [t for t in texts(full, "info") if t.startswith("**Chance")]


def test_the_first_column_reads_top_to_bottom_and_lies_in_every_rank_range(open_url):
    """# is the competition rank of the point values (1, 2, 2, 4), read top to bottom without surprises, and each
    row's # lies in its rank range through both lenses: nothing can be surely above a row without a higher point
    value, nor surely below it without a lower one. The caption under the table says what # orders."""
    for params in ({}, POOLED, {"bench": "r2med"}):
        at = open_url(SHIPPED, params=params)
        assert_clean(at)
        table = at.dataframe[0].value
        agg = "mean" if params.get("bench") == "r2med" else "G"
        points = table[agg].to_numpy()
        competition = [1 + int((points > p).sum()) for p in points]  # brute force, from the shown points
        assert table["rank"].tolist() == competition, params
        assert table["rank"].is_monotonic_increasing
        board = Store(SHIPPED).leaderboard(Condition(params.get("bench", "rar-b"), setting=params.get(
            "setting", "full"), instruction=None))
        for lens in ("queries", "tasks"):
            if not board.lens(lens).available:
                continue
            lo, hi = board.ranked[f"{lens}_rank_lo"], board.ranked[f"{lens}_rank_hi"]
            assert ((lo <= board.ranked["rank"]) & (board.ranked["rank"] <= hi)).all(), (params, lens)
        assert any(f"**#** orders the point values of {agg}" in c for c in texts(at, "caption")), params


IPHONE = ("Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
          "Version/17.0 Mobile/15E148 Safari/604.1")
ANDROID = ("Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 "
           "Mobile Safari/537.36")
DESKTOP = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36"


def test_a_wide_screen_shows_system_names_a_phone_cuts():
    """At a phone's 150 px four in five names were cut on a 1400 px screen too ("Alibaba-NLP/gte-Qwen2-…"): a
    screen gets a System column that holds a typical name, a phone keeps the widths that fit it."""
    assert screen.on_a_phone({"User-Agent": IPHONE}) and screen.on_a_phone({"User-Agent": ANDROID})
    assert not screen.on_a_phone({"User-Agent": DESKTOP}) and not screen.on_a_phone({})
    board = Store(SHIPPED).leaderboard(Condition("rar-b", instruction=None), uncertainty=False)
    widths = {phone: boards.column_config(board, phone)["system"]["width"] for phone in (True, False)}
    assert widths[True] == boards.PHONE_WIDTHS[2] and widths[False] >= 7 * len("Alibaba-NLP/gte-Qwen2-7B-instruct")


def test_the_latex_download_offers_the_top_of_the_board():
    """A paper's table holds the top of a board, not 145 systems: the LaTeX download offers top 10 / 20 / 50, each
    the ranked systems whose # (the point order) is that or better — more rows when points tie at the cut, as the
    eight systems with G = 0 do at the bottom of RAR-b's board."""
    board = Store(SHIPPED).leaderboard(Condition("rar-b", instruction=None))
    ranked = board.ranked
    points = ranked["G"].to_numpy()
    place = {s: 1 + int((points > p).sum()) for s, p in zip(ranked["system"], points)}  # brute force
    cut = place[board.zero_task_systems[0]]
    assert len(board.zero_task_systems) > 1 and cut < len(ranked), "the case: points tied at the cut"
    rows = boards.latex_rows(board, top=cut)
    assert sorted(rows["System"]) == sorted(s for s, p in place.items() if p <= cut)
    assert len(rows) > cut and (rows["#"] <= cut).all()
    for words in QUESTIONS.values():
        assert "not ranked" not in rows[f"Ranks ({words})"].tolist()
    words = boards.top_words(board, cut)
    assert f"Top {cut} of {len(ranked)} ranked systems" in words and f"{len(rows)} rows" in words
    latex = tables.latex_table(rows, words)
    assert latex.split("\\midrule")[1].count("\\\\") == len(rows)
    top10 = boards.latex_rows(board, top=10)  # no tie at 10: ten rows
    assert top10["System"].tolist() == ranked["system"].head(10).tolist()
    assert "tied at the cut" not in boards.top_words(board, 10)


def test_the_latex_rows_choice_is_offered_beside_the_download(open_url):
    at = open_url(SHIPPED, params={})
    assert_clean(at)
    choice = next(r for r in at.radio if r.label == "Rows")
    assert choice.options == ["top 10", "top 20", "top 50", "every system"] and choice.value is None


def test_the_sidebar_lists_precisions_widest_first(open_url):
    """The sidebar's Precision list was alphabetical (bf16, bf16+hps, binary, fp16, fp32, ...) while every panel
    used the widest-first order: one order everywhere."""
    at = open_url(SHIPPED, params={"setting": "full-pooled"})
    assert_clean(at)
    offered = [option.split(" (")[0] for option in at.sidebar.selectbox(key="prec").options]
    assert offered == ["fp32", "fp16", "bf16", "bf16+hps", "int8", "q4", "binary"], offered


def test_a_linked_metric_the_setting_lacks_is_not_switched_silently(open_url):
    """``?setting=full-pooled&metric=p@1`` (accuracy exists for MCR only) showed nDCG@10 without a word."""
    at = open_url(SHIPPED, params={"setting": "full-pooled", "metric": "p@1"})
    assert_clean(at)
    said = " ".join(texts(at, "caption") + texts(at, "warning") + [m.value for m in at.sidebar.markdown])
    assert "p@1" in said and "ndcg@10" in said, said
