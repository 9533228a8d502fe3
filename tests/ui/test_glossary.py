"""The glossary (ui/glossary.py): one entry per jargon word with its citations, tooltips built from it, and its
page reachable at /glossary from every view."""
from __future__ import annotations

import re

import pytest

from ui import glossary

JARGON = ("oblivious", "expected", "range", "bias", "tie-policy", "hps", "mcr", "full", "full-pooled", "g",
          "mean", "borda", "precision-kind", "task-level-only", "on-these-tasks", "on-new-tasks", "rank", "interval",
          "rank-range", "tier", "separable", "could-be-first")


def test_every_jargon_word_the_issue_names_has_an_entry():
    assert set(JARGON) <= set(glossary.TERMS)
    tie_policy = glossary.TERMS["tie-policy"].text
    for policy in ("docid-desc", "docid-asc", "input-order", "random:SEED"):
        assert policy in tie_policy
    for kind in ("inference", "storage", "native"):
        assert f"**{kind}**" in glossary.TERMS["precision-kind"].text


def test_each_lens_entry_says_which_question_it_answers():
    """The two lenses' entries each name their question (the words every view and export use) and each has a
    worked example; the kinds of rank sets are both defined."""
    from evalcore.uncertainty.board import QUESTIONS

    for key, lens in (("on-these-tasks", "queries"), ("on-new-tasks", "tasks")):
        text = glossary.TERMS[key].text
        assert glossary.TERMS[key].name.lower() == QUESTIONS[lens]
        assert "Worked example" in text and "?" in text, key
    assert "**Marginal**" in glossary.TERMS["rank-range"].text
    assert "**simultaneous**" in glossary.TERMS["rank-range"].text


def test_the_worked_examples_are_the_shipped_boards_numbers():
    """The lenses' worked examples (RAR-b, full, nDCG@10: F2LLM-v2-14B against gte-Qwen2-7B-instruct) quote the
    shipped board: both G values, the gap on these tasks in standard errors (recomputed here from the query
    counts and the Bhatia–Davis bound with an Agresti–Coull mean, no covariance), the range of query counts, the
    paired t over tasks and its two-sided p (scipy's, and the store's adjacent test), and both rank ranges (the
    store's)."""
    import json
    import math
    from pathlib import Path

    import numpy as np
    from scipy import stats

    from evalcore.store import Condition, Store

    root = Path(__file__).resolve().parents[2]
    these, new = glossary.TERMS["on-these-tasks"].text, glossary.TERMS["on-new-tasks"].text
    a, b = "codefuse-ai/F2LLM-v2-14B", "Alibaba-NLP/gte-Qwen2-7B-instruct"
    board = Store(root / "data").leaderboard(Condition("rar-b", "ndcg@10", "full", None, "fp32"))
    rows = board.ranked.set_index("system")
    assert "RAR-b, full retrieval, nDCG@10" in these and a in these and b in these
    assert f"(G {rows.at[a, 'G']:.4f})" in these and f"(G {rows.at[b, 'G']:.4f})" in these
    xa, xb = (rows.loc[name, board.tasks].to_numpy(dtype=float) for name in (a, b))
    counts = json.loads((root / "data" / "query_counts.json").read_text())["benchmarks"]["rar-b"]["full"]
    n = np.array([counts[task]["queries"] for task in board.task_names], dtype=float)
    assert f"means over {n.min():,.0f} to {n.max():,.0f} queries" in these

    def log_variance(x):  # Var(log x) ≈ Var(x) / x², Var(x) ≤ μ̃(1 − μ̃)/n
        mu = (n * x + 2) / (n + 4)
        return mu * (1 - mu) / n / x ** 2

    gap = np.log(xa).mean() - np.log(xb).mean()
    z = gap / (math.sqrt((log_variance(xa) + log_variance(xb)).sum()) / len(n))
    assert f"by {z:.1f} standard errors on these tasks" in these
    assert (rows.at[a, "queries_rank_lo"], rows.at[a, "queries_rank_hi"]) == (1, 1)
    assert "F2LLM-v2-14B's rank range is 1." in these
    pair = board.lens("queries").adjacent.set_index("system_1").loc[a]
    assert pair["system_2"] == b and pair["differ"], "neighbours on the board, and they differ on these tasks"
    pair = board.lens("tasks").adjacent.set_index("system_1").loc[a]
    assert pair["system_2"] == b and not pair["differ"], "not told apart on new tasks"
    t = stats.ttest_rel(np.log(xa), np.log(xb))
    assert f"{t.statistic:.1f} standard errors of a paired t over the {len(n)} tasks" in new
    assert f"two-sided p = {t.pvalue:.3f}" in new
    assert pair["p_value"] == pytest.approx(t.pvalue, abs=1e-9), "the store's test is scipy's"
    d = np.log(xa) - np.log(xb)
    assert (d > 0).any() and (d < 0).any(), "they lead each other on different tasks"
    ranges = [f"{int(rows.at[s, 'tasks_rank_lo'])}–{int(rows.at[s, 'tasks_rank_hi'])}" for s in (a, b)]
    assert f"their rank ranges are {ranges[0]} and {ranges[1]}" in new


def test_the_two_papers_are_cited_where_their_ideas_are_defined():
    cites = {key: term.cites for key, term in glossary.TERMS.items()}
    assert "mcsherry-najork-2008" in cites["expected"]
    assert "yang-2026" in cites["hps"] and "yang-2026" in cites["oblivious"]
    assert "2508.03306" in glossary.CITATIONS["yang-2026"].text
    assert glossary.CITATIONS["mcsherry-najork-2008"].text.endswith("ECIR 2008")
    for term in glossary.TERMS.values():
        assert all(key in glossary.CITATIONS for key in term.cites), term.key


def test_a_tip_holds_the_definitions_and_a_relative_link_to_the_entry():
    tip = glossary.tip("hps", "precision", before="Numeric precision.")
    assert tip.startswith("Numeric precision.")
    assert glossary.TERMS["hps"].text in tip and glossary.TERMS["precision"].text in tip
    link = re.search(r"\]\(([^)]*)\)$", tip).group(1)
    assert link == "glossary?term=hps#hps", "relative (works under a path prefix), the entry named in the query"
    with pytest.raises(KeyError):
        glossary.tip("no-such-term")


def test_the_glossary_page_lists_every_entry_under_its_anchor():
    from streamlit.testing.v1 import AppTest

    def page():
        from ui import glossary

        glossary.page()

    at = AppTest.from_function(page, default_timeout=60).run()
    assert not at.exception
    shown = [h.value for h in at.subheader]
    assert shown == [t.name for t in glossary.TERMS.values()] + ["References"]
    assert [h.proto.anchor for h in at.subheader][:3] == list(glossary.TERMS)[:3]
    text = " ".join(m.value for m in at.markdown)
    assert "2508.03306" in text and "ECIR 2008" in text


def test_navigation_offers_the_glossary_at_its_url_path():
    from ui import navigation

    source = (navigation.APP_ROOT / "ui" / "navigation.py").read_text()
    assert navigation.GLOSSARY == glossary.GLOSSARY_PATH == "glossary"
    assert "url_path=GLOSSARY" in source


def test_a_link_to_an_entry_opens_the_page_with_that_entry_first():
    """A glossary link (``glossary?term=KEY#KEY``) must land on its entry: Streamlit drops the ``#KEY`` fragment
    when the view writes its state into the URL, so the page reads ``term`` and shows that entry first, and
    keeps ``term`` in the URL (a copied link lands there too). A bad ``term`` is refused with a notice."""
    from streamlit.testing.v1 import AppTest

    def page():
        import streamlit as st

        from ui import glossary, state

        state.begin_run("glossary")
        glossary.page()
        state.end_run()
        for message in state.notices():
            st.warning(message)

    href = glossary.href("rank-range")
    query = href.split("?", 1)[1].split("#", 1)[0]
    at = AppTest.from_function(page, default_timeout=60)
    at.query_params[query.split("=")[0]] = query.split("=")[1]
    at.run()
    assert not at.exception
    assert at.selectbox(key="term").value == "rank-range"
    assert at.subheader[0].value == glossary.TERMS["rank-range"].name, "the linked entry comes first"
    assert at.query_params["term"] == "rank-range"
    assert [h.value for h in at.subheader].count(glossary.TERMS["rank-range"].name) == 2, "and stays in the list"
    at.selectbox(key="term").set_value("").run()
    assert "term" not in at.query_params
    assert [h.value for h in at.subheader][0] == next(iter(glossary.TERMS.values())).name

    bad = AppTest.from_function(page, default_timeout=60)
    bad.query_params["term"] = "<script>"
    bad.run()
    assert not bad.exception and bad.selectbox(key="term").value == ""
    assert any("`term`" in w.value for w in bad.warning)
