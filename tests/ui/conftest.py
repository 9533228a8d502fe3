"""Fixtures of the UI module tests: a small synthetic data dir (tests/pages/synthetic_data.py)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "pages"))

import synthetic_data  # noqa: E402


@pytest.fixture(scope="session")
def synthetic_dir(tmp_path_factory) -> Path:
    return synthetic_data.write_small(tmp_path_factory.mktemp("ui-synthetic"))


@pytest.fixture
def fresh_answers():
    """No answer cached from an earlier test, none left for a later one."""
    from ui import data

    data.clear_answers()
    yield
    data.clear_answers()
