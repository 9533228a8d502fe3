"""The Leaderboard (pages/leaderboard.py, ui/board.py): numbers equal the store's, ranks admit ties, the landing
says per row whether a rank is robust and points to the per-query results, each benchmark ranks by its own
aggregate, policy swaps and precision kinds are said, a chart is drawn by default, and the exports carry
every row."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from app_harness import ROOT, texts
from evalcore.store import Condition, Store
from ui import board as boards
from ui import screen, tables

SHIPPED = ROOT / "data"
POOLED = {"bench": "rar-b", "setting": "full-pooled", "instr": "any", "metric": "ndcg@10", "prec": "fp32"}


def assert_clean(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not texts(at, "error"), texts(at, "error")


def _html(at) -> str:
    return " ".join(str(el.proto.body) for el in at.get("html"))


def test_numbers_and_tie_aware_ranks_equal_the_store(open_url, synthetic_dir):
    at = open_url(synthetic_dir, params={"bench": "rar-b", "metric": "ndcg@10", "instr": "without", "prec": "bf16"})
    assert_clean(at)
    board = Store(synthetic_dir).leaderboard(Condition("rar-b", "ndcg@10", "full", False, "bf16"), bootstrap=1000)
    top = board.ranked.iloc[0]
    shown = {m.label: m.value for m in at.metric}
    assert shown["Systems ranked"] == str(len(board.ranked))
    assert shown["Top G"] == f"{top['G']:.4f}"
    assert shown["Adjacent pairs that differ"] == f"{board.n_adjacent_differ} of {len(board.ranked) - 1}"
    assert shown["Could be #1"] == str(int(board.ranked["could_be_first"].sum()))
    assert f"Top system: **{top['system']}**" in texts(at, "markdown")
    table = at.dataframe[0].value
    assert table["system"].tolist() == board.ranked["system"].tolist()
    assert table["G"].round(12).tolist() == board.ranked["G"].round(12).tolist()
    assert table["shared_rank"].tolist() == board.ranked["shared_rank"].astype(int).tolist()
    assert table["tier"].tolist() == board.ranked["tier"].tolist()
    for (_, row), (_, want) in zip(table.iterrows(), board.ranked.iterrows()):
        lo, hi = map(float, row["interval"].split("–"))  # rounded outwards to 3 decimals: holds the interval
        assert lo <= want["G_task_lo"] < lo + 0.001 and hi - 0.001 < want["G_task_hi"] <= hi, row["interval"]
        lo, hi = map(float, row["combined"].split("–"))
        assert lo <= want["combined_lo"] < lo + 0.001 and hi - 0.001 < want["combined_hi"] <= hi, row["combined"]
        for column, prefix in (("ranks", ""), ("combined_ranks", "combined_")):
            lo, hi = int(want[f"{prefix}rank_lo"]), int(want[f"{prefix}rank_hi"])
            assert row[column] == (f"{lo} (robust)" if lo == hi else f"{lo}–{hi}")


def test_the_landing_gives_every_row_an_interval_and_points_to_the_per_query_results(open_url):
    at = open_url(SHIPPED)
    assert_clean(at)
    table = at.dataframe[0].value
    assert table["interval"].str.fullmatch(r"\d\.\d{3}–\d\.\d{3}").all(), "every published row has an interval"
    assert table["ranks"].str.fullmatch(r"\d+(–\d+| \(robust\))").all(), "and a rank range"
    assert (table["tier"] >= 1).all() and "combined" not in table, "no empty queries + ties column"
    shown = {m.label: m.value for m in at.metric}
    n_ranked = int(shown["Systems ranked"])
    differ, pairs = map(int, shown["Adjacent pairs that differ"].split(" of "))
    assert pairs == n_ranked - 1 and 0 <= differ <= pairs
    assert any("adjacent pairs differ at 95%" in m for m in texts(at, "markdown"))
    coverage = Store(SHIPPED).coverage()
    with_rows = coverage[(coverage["benchmark"] == "rar-b") & (coverage["n_query_tasks"] > 0)
                         & (coverage["setting"] == "full-pooled") & (coverage["metric"] == "ndcg@10")
                         & (coverage["precision"] == "fp32") & (coverage["tie_policy"] == "docid-desc")]
    promised = with_rows["system"].nunique()
    page = _html(at)
    assert f"<b>{promised} systems</b> have per-query results" in page
    href = re.search(r'href="([^"]+)"', page).group(1)
    assert href == "?bench=rar-b&setting=full-pooled&metric=ndcg@10&instr=any&prec=fp32&ties=docid-desc"
    # the link is a real view: opened as a URL it shows the per-query board, BM25 able to be first over queries
    # and ties
    params = dict(pair.split("=") for pair in href[1:].split("&"))
    there = open_url(SHIPPED, params=params)
    assert_clean(there)
    pooled = there.dataframe[0].value.set_index("system")
    assert pooled.loc["tiebreak-run/bm25s", "combined_ranks"].startswith("1–")
    assert any("ranked systems have per-query results here" in m for m in texts(there, "markdown"))
    # the link shows as many systems with per-query results as it promised
    assert any(f"**{promised} of " in m for m in texts(there, "markdown") if "have per-query results here" in m)


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
    board = Store(synthetic_dir).leaderboard(Condition("rar-b", instruction=False))  # the page's resampling
    assert page.count('class="tb-row" title=') == min(boards.CHART_ROWS, len(board.ranked))
    assert "interval over tasks" in page and "bootstrap interval over queries" in page and "tie range" in page, \
        "the legend, below the rows"
    tiers = sorted(set(board.ranked["tier"].head(boards.CHART_ROWS)))
    assert re.findall(r'class="tb-row tb-group"><span class="tb-name"[^>]*>(Tier \d+)</span>', page) == \
        [f"Tier {t}" for t in tiers], "the rows grouped by tier"
    assert not at.get("plotly_chart"), "the default chart loads no plotting library"
    at.radio(key="chart").set_value("none").run()
    assert "tb-forest" not in _html(at) and at.query_params["chart"] == "none"
    at = open_url(synthetic_dir, params={"chart": "size"})
    assert len(at.get("plotly_chart")) == 1
    assert "Performance vs model size" in [h.value for h in at.subheader]


def test_each_benchmark_ranks_by_its_own_aggregate_and_says_so(open_url, synthetic_dir):
    at = open_url(synthetic_dir, params={"bench": "r2med"})
    assert_clean(at)
    assert at.radio(key="sort").value == "mean" and "sort" not in at.query_params
    assert any("Ranked by **mean**" in c and "R2MED's own aggregate" in c for c in texts(at, "caption"))
    board = Store(synthetic_dir).leaderboard(Condition("r2med", instruction=None), bootstrap=0)
    assert board.ranked_by == "mean"
    assert at.dataframe[0].value["system"].tolist() == board.ranked["system"].tolist()
    at.radio(key="sort").set_value("g").run()
    assert at.query_params["sort"] == "g"
    assert any("Ranked by **G**" in c and "not R2MED's own, which is mean" in c for c in texts(at, "caption"))
    intro = " ".join(texts(at, "markdown"))
    assert "RAR-b by G" in intro and "R2MED by the mean" in intro


def test_policy_swaps_and_precision_kinds_are_said_on_the_shipped_pooled_board(open_url):
    at = open_url(SHIPPED, params=POOLED)
    assert_clean(at)
    board = Store(SHIPPED).leaderboard(Condition("rar-b", "ndcg@10", "full-pooled", None, "fp32"), bootstrap=0)
    assert len(board.policy_swaps), "the shipped case: uniform-random and constant swap under docid-desc"
    warnings = " ".join(texts(at, "warning"))
    for pair in board.policy_swaps.itertuples():
        assert f"**{pair.system_1}** ahead of **{pair.system_2}**" in warnings
    kinds = " ".join(texts(at, "info"))
    assert "(inference)" in kinds and "(native)" in kinds and "tiebreak-run/bm25s" in kinds
    assert set(at.dataframe[0].value["precision_kind"].dropna()) == {"inference", "native"}


def test_provenance_names_repository_commit_and_snapshot(open_url):
    at = open_url(SHIPPED)
    caption = " ".join(texts(at, "caption"))
    assert "embeddings-benchmark/results @ f4cc6c8" in caption and "Data snapshot 20" in caption
    assert set(at.dataframe[0].value["source"]) == {"mteb-results@f4cc6c8"}


def test_exports_carry_every_row_with_integer_ranks():
    from evalcore.csv_export import to_csv_text

    board = Store(SHIPPED).leaderboard(Condition("rar-b", instruction=None), bootstrap=0)
    meta = Store(SHIPPED).systems(benchmark="rar-b")
    rows = boards.export_rows(board, meta, pd.Series(dtype=object))
    assert len(rows) == len(board.ranked) + len(board.incomplete)
    assert rows["system"].tolist() == board.rows()["system"].tolist()
    assert rows["complete"].tolist() == [True] * len(board.ranked) + [False] * len(board.incomplete)
    assert rows["reference"].notna().any() and rows["source"].eq("mteb-results@f4cc6c8").all()
    csv = to_csv_text(rows).splitlines()
    assert re.match(r"^1,,,", csv[1]), "shared rank 1, no rank interval without per-query data"
    header = csv[0].split(",")
    first = dict(zip(header, csv[1].split(",")))
    assert first["G"] and first["combined_lo"] == "" and first["combined_hi"] == "", \
        "task-level scores only: no interval, not a zero-width one at the point"
    pooled = Store(SHIPPED).leaderboard(Condition("rar-b", setting="full-pooled", instruction=None), bootstrap=0)
    tied = boards.export_rows(pooled, meta, pd.Series(dtype=object)).set_index("system")
    assert tied.at["tiebreak-run/constant", "combined_hi"] == 1.0, "a tie range alone is an interval"
    latex = tables.latex_table(boards.latex_rows(board), "caption", [board.ranked_by])
    assert "1.0000" not in latex.split("\\midrule")[1].split(" & ")[0]
    assert "\\resizebox{\\linewidth}" in latex, "21 columns are scaled to the page"
    assert latex.count("not ranked") == len(board.incomplete)


def test_the_first_four_columns_fit_a_phone():
    assert sum(boards.PHONE_WIDTHS) <= 350
    board = Store(SHIPPED).leaderboard(Condition("rar-b", instruction=None), bootstrap=0)
    table = boards.table(board, None, pd.Series(dtype=object), "g", False, False)
    assert table.columns[:4].tolist() == ["shared_rank", "system", "G", "interval"]


def test_every_jargon_header_links_to_the_glossary():
    board = Store(SHIPPED).leaderboard(Condition("rar-b", instruction=None), bootstrap=0)
    config = boards.column_config(board)
    for column in ("shared_rank", "G", "interval", "ranks", "G_min", "G_expected", "G_lo", "precision_kind"):
        assert "glossary?term=" in config[column]["help"], column


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
    """Rank by "Borda count" orders the rows only (ranks stay G's): the Borda column is shown without the
    "Show Borda count" toggle, the rows follow it, and no label says the order is G's."""
    at = open_url(SHIPPED, params={**POOLED, "sort": "borda"})
    assert_clean(at)
    table = at.dataframe[0].value
    assert "borda" in table.columns
    assert table["borda"].tolist() == sorted(table["borda"].tolist(), reverse=True)
    assert table["G"].tolist() != sorted(table["G"].tolist(), reverse=True), "the fixture must tell the orders apart"
    assert any("rows in **Borda count** order" in c and "Rank column stays G's" in c for c in texts(at, "caption"))
    labels = [m.label for m in at.metric]
    assert "G of the Borda leader" in labels and "Top G" not in labels
    assert f"Borda leader: **{table['system'].iloc[0]}**" in texts(at, "markdown")
    r2med = open_url(SHIPPED, params={"bench": "r2med", "sort": "borda"})
    assert "Mean of the Borda leader" in [m.label for m in r2med.metric], "a label starts with a capital"
    assert any(c.startswith("R2MED · ") for c in texts(r2med, "caption")), "the condition line names R2MED so"
    assert any(h.value.startswith("First ") and "by Borda count" in h.value for h in at.subheader)
    at.radio(key="sort").set_value("g").run()
    assert "borda" not in at.dataframe[0].value.columns
    assert "Top G" in [m.label for m in at.metric]


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


def test_exports_list_the_rows_in_the_pages_order(open_url):
    """Under 'Borda count' order the page's rows are in Borda order; the CSV and LaTeX were in mean order and
    the LaTeX had no Borda column (R2MED, reported from a browser)."""
    from evalcore.csv_export import to_csv_text

    at = open_url(SHIPPED, params={"bench": "r2med", "sort": "borda"})
    assert_clean(at)
    shown = at.dataframe[0].value["system"].tolist()
    board = Store(SHIPPED).leaderboard(Condition("r2med", instruction=None), bootstrap=0)
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
    board = store.leaderboard(Condition("rar-b", instruction=None), systems=matching, bootstrap=0)
    shown = len(board.ranked) + len(board.incomplete)
    assert 0 < shown < len(matching), "the case: some matching systems have no result here"
    line = next(c for c in texts(at, "caption") if c.startswith("Filtered to"))
    assert line.startswith(f"Filtered to {len(matching)} systems")
    assert re.search(rf"\b{shown} of them\b", line), line
    # under one instruction state, the systems with results in that state (the board's count)
    with_instr = open_url(SHIPPED, params={"bench": "rar-b", "q": "e5", "instr": "with"})
    board = store.leaderboard(Condition("rar-b", instruction=True), systems=matching, bootstrap=0)
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


def test_the_chart_draws_an_interval_over_tasks_for_every_row(open_url):
    """The landing's published rows have task-level scores only; their chart was once a column of dots."""
    for params in ({}, POOLED):
        at = open_url(SHIPPED, params=params)
        assert_clean(at)
        titles = [h.value for h in at.subheader if h.value.startswith("Top ")]
        assert len(titles) == 1 and titles[0].endswith(": G with its intervals"), titles
        page = _html(at)
        rows = page.count('class="tb-row" title=')
        assert rows == 15 or params == POOLED
        assert page.count("interval over tasks: ") == rows, "one task-level bar (in each row's tooltip) per row"


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
    shipped = Store(SHIPPED).leaderboard(Condition("r2med", instruction=None), bootstrap=0)
    assert (shipped.ranked["borda"] % 1 != 0).any() and \
        dict(boards.column_config(shipped)["borda"])["type_config"]["format"] == "%.1f", "R2MED has a tie"


def test_one_model_under_two_names_is_said_with_both_scores(open_url):
    """R2MED's board held GritLM-7B (R2MED paper, mean 0.3112, rank 32) and GritLM/GritLM-7B (MTEB, 0.2802,
    rank 51) — one model at two ranks — and nothing on the page said so."""
    at = open_url(SHIPPED, params={"bench": "r2med"})
    assert_clean(at)
    board = Store(SHIPPED).leaderboard(Condition("r2med", instruction=None))  # the page's resamples and seed
    by_name = board.ranked.set_index("system")
    notes = [t for t in texts(at, "info") if "under the names of different sources" in t]
    assert len(notes) == 1, texts(at, "info")
    note = notes[0]
    for name in ("GritLM-7B", "GritLM/GritLM-7B"):
        assert f"**{name}** {by_name.at[name, 'mean']:.4f} (rank {int(by_name.at[name, 'shared_rank'])})" in note
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


def test_shared_ranks_are_explained_where_they_differ_from_the_point_ranks(open_url):
    """A Rank column reading 1, 1, 2, 1 beside "Rank by G" 1–4 needs a word near the table: said exactly where
    the shared ranks differ from the point ranks."""
    for params in ({}, POOLED, {"bench": "r2med"}):
        at = open_url(SHIPPED, params=params)
        assert_clean(at)
        table = at.dataframe[0].value
        differ = bool((table["shared_rank"] != table["rank"]).any())
        said = any("**Rank** is shared" in c and "1 +" in c for c in texts(at, "caption"))
        assert said == differ, params
        assert differ, "every shipped board has systems not told apart"


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
    board = Store(SHIPPED).leaderboard(Condition("rar-b", instruction=None), bootstrap=0)
    widths = {phone: boards.column_config(board, phone)["system"]["width"] for phone in (True, False)}
    assert widths[True] == boards.PHONE_WIDTHS[1] and widths[False] >= 7 * len("Alibaba-NLP/gte-Qwen2-7B-instruct")


def test_the_latex_download_offers_the_top_of_the_board():
    """A paper's table holds the top of a board, not 145 systems: the LaTeX download offers top 10 / 20 / 50, each
    the ranked systems whose shared rank is that or better — more rows when the rank is shared at the cut, as on
    the pooled board, where overlapping intervals share ranks."""
    board = Store(SHIPPED).leaderboard(Condition("rar-b", setting="full-pooled", instruction=False), bootstrap=200)
    ranked = board.ranked
    surely_better = (board.surely_above.sum(axis=1)).tolist()  # the shared rank is 1 + this
    cut = next(n for n in range(1, len(ranked)) if sum(1 + b <= n for b in surely_better) > n)
    rows = boards.latex_rows(board, top=cut)
    assert sorted(rows["System"]) == sorted(s for s, b in zip(ranked["system"], surely_better) if 1 + b <= cut)
    assert len(rows) > cut and (rows["Rank"] <= cut).all()
    assert "not ranked" not in rows["Rank range (tasks)"].tolist()
    words = boards.top_words(board, cut)
    assert f"Top {cut} of {len(ranked)} ranked systems" in words and f"{len(rows)} rows" in words
    latex = tables.latex_table(rows, words)
    assert latex.split("\\midrule")[1].count("\\\\") == len(rows)
    published = Store(SHIPPED).leaderboard(Condition("rar-b", instruction=None), bootstrap=0)  # no resampling:
    top10 = boards.latex_rows(published, top=10)  # the point ranks, ten rows
    assert top10["System"].tolist() == published.ranked["system"].head(10).tolist()
    assert "ranks shared" not in boards.top_words(published, 10)


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
