"""Fixtures for the dashboard's AppTest suite: synthetic / empty data dirs and a helper that opens a URL."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import synthetic_data  # noqa: E402
from app_harness import APP  # noqa: E402


@pytest.fixture(scope="session")
def synthetic_dir(tmp_path_factory) -> Path:
    return synthetic_data.write_small(tmp_path_factory.mktemp("synthetic"))


@pytest.fixture(scope="session")
def empty_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("empty")


@pytest.fixture(scope="session")
def registered_pages(synthetic_dir):
    """The page registry st.navigation builds (needed to open a page other than the default)."""
    from streamlit.testing.v1 import AppTest

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TIEBREAK_DATA", str(synthetic_dir))
        at = AppTest.from_file(APP, default_timeout=120)
        at.run()
    return dict(at._registered_pages)


@pytest.fixture
def open_url(monkeypatch, registered_pages):
    """``open_url(data_dir, page_file, params)`` -> AppTest after its first run, like a browser opening
    ``/<page url path>?<params>`` in a new session."""
    from streamlit.testing.v1 import AppTest

    def _open(data_dir: Path, page: str = "views/leaderboard.py", params: dict | None = None) -> AppTest:
        monkeypatch.setenv("TIEBREAK_DATA", str(data_dir))
        at = AppTest.from_file(APP, default_timeout=120)
        if page != "views/leaderboard.py":
            at._registered_pages = dict(registered_pages)
            at.switch_page(page)
        at.query_params.update(params or {})
        return at.run()

    return _open


@pytest.fixture(autouse=True)
def _no_prefetch(monkeypatch):
    """No idle-time prefetch in these AppTests: its thread would run store queries in the background of
    unrelated tests (tests/ui/test_prefetch.py turns it on; the browser tests run with it)."""
    monkeypatch.setenv("TIEBREAK_PREFETCH", "off")
