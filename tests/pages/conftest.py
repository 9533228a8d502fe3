"""Fixtures for the dashboard's AppTest suite: synthetic / empty data dirs and a helper that opens a URL."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import synthetic_data  # noqa: E402
from app_harness import APP, DEFAULT_PAGE, page_path_from_main  # noqa: E402


@pytest.fixture(scope="session")
def synthetic_dir(tmp_path_factory) -> Path:
    return synthetic_data.write_small(tmp_path_factory.mktemp("synthetic"))


@pytest.fixture(scope="session")
def empty_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("empty")


@pytest.fixture(scope="session")
def published_only_dir(tmp_path_factory, synthetic_dir) -> Path:
    """Task-level (published) scores only: no per-query rows, one precision, no MCR, one instruction state."""
    import shutil

    folder = tmp_path_factory.mktemp("published-only")
    for name in ("task_scores_synthetic.parquet", "systems_synthetic.parquet"):
        shutil.copy(synthetic_dir / name, folder / name)
    return folder


@pytest.fixture
def open_url(monkeypatch):
    """``open_url(data_dir, page_file, params)`` -> AppTest after its first run, like a browser opening
    ``/<page url path>?<params>`` in a new session. (A page's URL path is its file name, so
    ``AppTest.switch_page`` finds it before the first run, as a browser's first request does.)"""
    from streamlit.testing.v1 import AppTest

    def _open(data_dir: Path, page: str = DEFAULT_PAGE, params: dict | None = None) -> AppTest:
        monkeypatch.setenv("TIEBREAK_DATA", str(data_dir))
        at = AppTest.from_file(APP, default_timeout=120)
        if page != DEFAULT_PAGE:
            at.switch_page(page_path_from_main(page))
        at.query_params.update(params or {})
        return at.run()

    return _open
