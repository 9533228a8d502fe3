"""The glossary (ui/glossary.py): one entry per jargon word with its citations, tooltips built from it, and its
page reachable at /glossary from every view."""
from __future__ import annotations

import re

import pytest

from ui import glossary

JARGON = ("oblivious", "expected", "range", "bias", "tie-policy", "hps", "mcr", "full", "full-pooled", "g",
          "mean", "borda", "rank-interval", "shared-rank", "precision-kind", "task-level-only")


def test_every_jargon_word_the_issue_names_has_an_entry():
    assert set(JARGON) <= set(glossary.TERMS)
    tie_policy = glossary.TERMS["tie-policy"].text
    for policy in ("docid-desc", "docid-asc", "input-order", "random:SEED"):
        assert policy in tie_policy
    for kind in ("inference", "storage", "native"):
        assert f"**{kind}**" in glossary.TERMS["precision-kind"].text


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

    href = glossary.href("shared-rank")
    query = href.split("?", 1)[1].split("#", 1)[0]
    at = AppTest.from_function(page, default_timeout=60)
    at.query_params[query.split("=")[0]] = query.split("=")[1]
    at.run()
    assert not at.exception
    assert at.selectbox(key="term").value == "shared-rank"
    assert at.subheader[0].value == glossary.TERMS["shared-rank"].name, "the linked entry comes first"
    assert at.query_params["term"] == "shared-rank"
    assert [h.value for h in at.subheader].count(glossary.TERMS["shared-rank"].name) == 2, "and stays in the list"
    at.selectbox(key="term").set_value("").run()
    assert "term" not in at.query_params
    assert [h.value for h in at.subheader][0] == next(iter(glossary.TERMS.values())).name

    bad = AppTest.from_function(page, default_timeout=60)
    bad.query_params["term"] = "<script>"
    bad.run()
    assert not bad.exception and bad.selectbox(key="term").value == ""
    assert any("`term`" in w.value for w in bad.warning)
