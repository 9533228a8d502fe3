"""The views are plain page scripts in pages/, listed once in ui.navigation.PAGES: each one runs from its own
file (it draws the sidebar and asks for its data itself; nothing is handed over through the session), and
every file in pages/ is a page of the table."""
from __future__ import annotations

import re

import pytest

from app_harness import ROOT, TITLES, fixed_texts, texts
from ui.navigation import PAGES, PAGES_DIR


def test_the_page_table_lists_every_page_file_once():
    files = [spec.file for spec in PAGES]
    assert len(set(files)) == len(files)
    assert sorted(files) == sorted(p.name for p in PAGES_DIR.glob("*.py"))
    assert PAGES_DIR == ROOT / "pages"
    assert len({spec.url_path for spec in PAGES}) == len(PAGES)


@pytest.mark.parametrize("spec", PAGES, ids=[spec.url_path for spec in PAGES])
def test_each_page_runs_from_its_own_file(spec, synthetic_dir, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("TIEBREAK_DATA", str(synthetic_dir))
    at = AppTest.from_file(str(spec.path), default_timeout=120)
    at.query_params["bench"] = "rar-b"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not texts(at, "error"), texts(at, "error")
    assert [t.value for t in at.title] == [TITLES[spec.file]]
    drawn = fixed_texts(at).get("Benchmark") or at.sidebar.selectbox(key="bench").value
    assert drawn in ("rar-b", "RAR-b"), "the page drew the shared sidebar itself"
    assert at.metric or any(re.search(r"\*\*\d+ of \d+\*\* adjacent pairs differ", m) for m in texts(at, "markdown")), \
        "and shows numbers (the Leaderboard: its headline)"
