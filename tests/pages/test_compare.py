"""Compare: (1) the per-query table puts every chosen system's value next to the query id, in columns narrow
enough that four fit a 1,400 px screen; (2) removing one of the two chosen systems stays removed, and the view
says what is missing in one line; (3) the paired tests of several pairs carry a Holm–Bonferroni adjusted
p-value and a line saying what it is. The adjusted values are checked against a brute-force reference computed
here."""
from __future__ import annotations

import itertools
import json

import pytest

from app_harness import ROOT, texts

SHIPPED = ROOT / "data"
MINILM, MPNET, WORDLLAMA, BM25 = ("tiebreak-run/all-MiniLM-L6-v2", "tiebreak-run/all-mpnet-base-v2",
                                  "tiebreak-run/wordllama-l2-supercat", "tiebreak-run/bm25s")
FOUR = [MINILM, MPNET, WORDLLAMA, BM25]
POOLED = {"setting": "full-pooled", "instr": "without", "task": "ARCChallenge"}
# The main column is ~1,000 px wide on a 1,400 px screen with the sidebar open (measured in Chromium: 940 px);
# the query id (~70 px) and the spread (~60 px) share it with the systems' values.
VALUES_BUDGET = 700
ASKS = "Pick at least two systems to compare: "


def per_query_table(at):
    """(data, shown column order, column config) of the per-query table."""
    element = next(df for df in at.dataframe if "query" in df.value.columns and "spread" in df.value.columns)
    order = list(element.proto.column_order) or list(element.value.columns)
    return element.value, order, json.loads(element.proto.columns)


def paired_table(at):
    element = at.dataframe[-1]
    assert "system_b" in element.value.columns
    return element.value, list(element.proto.column_order) or list(element.value.columns), json.loads(
        element.proto.columns)


# -- 1. every system's value on screen ----------------------------------------------------------------------
@pytest.mark.parametrize("systems", [FOUR, FOUR[:3], FOUR[:2]])
def test_every_systems_value_is_next_to_the_query_id_and_they_fit_the_screen(open_url, systems):
    at = open_url(SHIPPED, "compare.py", {**POOLED, "sys": systems, "diff_only": "0"})
    assert not at.exception
    table, order, config = per_query_table(at)
    assert order[: 1 + len(systems)] == ["qid", *systems], order
    assert order.index("query") > order.index(systems[-1]), "the query's text comes after every system's value"
    widths = [config[system].get("width") for system in systems]
    assert all(isinstance(width, int) for width in widths), widths  # not left to the (unbounded) content
    assert sum(widths) <= VALUES_BUDGET, widths
    for system in systems:  # short headers, the full name in the tooltip
        assert config[system]["label"] == system.split("/")[-1]
        assert system in config[system]["help"]
    # nothing is lost: each system's range and tie flag are still in the table, after the text
    for system in systems:
        assert order.index(f"{system} [min, max]") > order.index("query")
        assert f"{system} ties decide" in order
    assert set(order) == set(table.columns)


# -- 2. a removed system stays removed ----------------------------------------------------------------------
def test_removing_one_of_two_systems_is_kept_and_said(open_url):
    at = open_url(SHIPPED, "compare.py", {**POOLED, "sys": [MINILM, BM25]})
    assert at.multiselect(key="sys").value == [MINILM, BM25]
    at.multiselect(key="sys").set_value([MINILM]).run()
    assert not at.exception
    assert at.multiselect(key="sys").value == [MINILM], "the removed system was put back"
    assert f"{ASKS}1 is chosen." in texts(at, "info")
    assert at.query_params["sys"] in (MINILM, [MINILM])  # the link keeps the choice
    assert not any("query" in df.value.columns for df in at.dataframe), "nothing is compared with one system"
    at.run()  # any later run (another control) keeps it too
    assert at.multiselect(key="sys").value == [MINILM]
    at.multiselect(key="sys").set_value([]).run()  # clearing the box to pick others
    assert at.multiselect(key="sys").value == []
    assert f"{ASKS}none is chosen." in texts(at, "info")
    at.multiselect(key="sys").set_value([WORDLLAMA, MPNET]).run()
    assert at.multiselect(key="sys").value == [WORDLLAMA, MPNET]
    assert not any(t.startswith(ASKS) for t in texts(at, "info"))
    assert len(paired_table(at)[0]) == 1


def test_a_link_with_one_system_opens_on_it(open_url):
    """The URL the view writes after a removal (``sys`` once) reopens the same view, not the default pair."""
    at = open_url(SHIPPED, "compare.py", {**POOLED, "sys": [BM25]})
    assert not at.exception
    assert at.multiselect(key="sys").value == [BM25]
    assert f"{ASKS}1 is chosen." in texts(at, "info")
    at.run()
    assert at.multiselect(key="sys").value == [BM25]


def test_a_link_naming_no_system_here_still_opens_on_the_default_pair(open_url):
    at = open_url(SHIPPED, "compare.py", {**POOLED, "sys": ["no-such/system"]})
    assert not at.exception
    default = at.multiselect(key="sys").value
    assert len(default) == 2
    assert any("`sys`" in w for w in texts(at, "warning"))
    at.run()
    assert at.multiselect(key="sys").value == default


def test_a_condition_without_one_of_the_pair_still_shows_a_pair_and_keeps_the_choice(open_url):
    """The fallback the choice's ``min_kept`` is for: the condition (not the visitor) left one of the two."""
    at = open_url(SHIPPED, "compare.py", {"setting": "full-pooled", "sys": [BM25, MINILM]})
    at.sidebar.radio(key="setting").set_value("full").run()
    assert not at.exception
    assert len(at.multiselect(key="sys").value) == 2
    assert not any(t.startswith(ASKS) for t in texts(at, "info"))
    at.sidebar.radio(key="setting").set_value("full-pooled").run()
    assert at.multiselect(key="sys").value == [BM25, MINILM]


# -- 3. the pairs' p-values adjusted for each other ---------------------------------------------------------
def closed_testing_holm(p: list[float]) -> list[float]:
    """Holm's adjusted p-values by brute force: for each pair the largest |S| · min_{j∈S} p_j over the sets S of
    pairs containing it (the closed test of Bonferroni tests), capped at 1."""
    m = len(p)
    return [min(1.0, max(len(s) * min(p[j] for j in s) for size in range(1, m + 1)
                         for s in itertools.combinations(range(m), size) if i in s)) for i in range(m)]


def test_four_systems_six_pairs_carry_holm_adjusted_p_values(open_url):
    at = open_url(SHIPPED, "compare.py", {**POOLED, "sys": FOUR})
    assert not at.exception
    table, order, config = paired_table(at)
    assert len(table) == 6
    assert order.index("p_holm") == order.index("p_value") + 1
    assert config["p_holm"]["label"] == "Holm-adjusted p"
    assert table["p_holm"].tolist() == pytest.approx(closed_testing_holm(table["p_value"].tolist()), abs=1e-12)
    assert (table["p_holm"] >= table["p_value"]).all()
    said = [c for c in texts(at, "caption") if c.startswith("Holm-adjusted p")]
    assert len(said) == 1, said  # the number of pairs, the method, the level and what it bounds
    assert "6 pairs" in said[0] and "Holm–Bonferroni" in said[0] and "0.05" in said[0] and "5%" in said[0], said


def test_one_pair_needs_no_adjustment(open_url):
    at = open_url(SHIPPED, "compare.py", {**POOLED, "sys": [MINILM, BM25]})
    table, order, _ = paired_table(at)
    assert len(table) == 1 and "p_holm" not in order and "p_holm" not in table.columns
    assert not [c for c in texts(at, "caption") if c.startswith("Holm-adjusted p")]


def test_each_range_holds_the_value_printed_beside_it(open_url):
    """[min, max] is printed with 3 decimals beside a 4-decimal value; rounded outwards it always holds it (a row
    read 0.3155 beside [0.315, 0.315])."""
    at = open_url(SHIPPED, "compare.py", {**POOLED, "sys": FOUR[:2], "diff_only": "0"})
    table, _, _ = per_query_table(at)
    checked = 0
    for system in FOUR[:2]:
        for value, words in zip(table[system], table[f"{system} [min, max]"]):
            if words == "—":
                continue
            lo, hi = map(float, words.strip("[]").split(", "))
            assert lo <= round(value, 4) <= hi, (value, words)
            checked += 1
    assert checked > 100
