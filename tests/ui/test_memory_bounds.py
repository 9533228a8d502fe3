"""ui/memo.py BOUNDS: every memo kept in memory has a stated bound with its variable, the bounds are enforced
where they are set, and docs/hosting.md § Memory lists exactly them with their sum."""
from __future__ import annotations

import importlib
import re
import tomllib
from pathlib import Path

import pytest

from evalcore.store import Store, catalogue
from ui import memo

ROOT = Path(__file__).resolve().parents[2]
UI_MODULES = sorted(f"ui.{p.stem}" for p in (ROOT / "ui").glob("*.py") if p.stem != "__init__")


def _registry() -> dict[str, memo.Memo]:
    for name in UI_MODULES:
        importlib.import_module(name)
    return memo.REGISTRY


def test_every_memo_in_memory_is_covered_by_one_bound():
    registry = _registry()
    covered = [name for bound in memo.BOUNDS for name in bound.memos]
    assert len(covered) == len(set(covered)), "a memo under two bounds"
    assert set(covered) == {name for name, m in registry.items() if m.scope != "disk"}


def test_every_bound_has_a_setting_or_says_it_is_fixed_and_a_finite_size(monkeypatch):
    for bound in memo.BOUNDS:
        assert bound.scope in ("process", "session")
        assert bound.setting == "—" or re.fullmatch(r"[A-Z][A-Z0-9_]+", bound.setting), bound.name
        assert 0 < bound.megabytes() < 10_000, bound.name


def test_the_settings_change_the_bounds(monkeypatch):
    before = memo.process_megabytes()
    monkeypatch.setenv("TIEBREAK_FIGURES", "10")
    monkeypatch.setenv("TIEBREAK_DUCKDB_MEMORY_MB", "100")
    monkeypatch.setenv("TIEBREAK_STATIC_CACHE_MB", "8")
    assert memo.FIGURES() == 10 and memo.STATIC_CACHE_BYTES() == 8 << 20
    assert catalogue.duckdb_memory_limit_bytes() == 100 << 20
    assert before - memo.process_megabytes() == pytest.approx((64 - 10) * memo.FIGURE_MB + (512 - 100) + (48 - 8))
    for bad in ("0", "-5", "lots", "1e9"):
        monkeypatch.setenv("TIEBREAK_FIGURES", bad)
        assert memo.FIGURES() == 64


def _duckdb_limit_mib(store: Store) -> float:
    text = store._db.conn.cursor().execute("SELECT current_setting('memory_limit')").fetchone()[0]
    number, unit = re.fullmatch(r"([\d.]+) (\w+)", text).groups()
    return float(number) * {"KiB": 1 / 1024, "MiB": 1, "GiB": 1024}[unit]


def test_the_store_sets_duckdbs_memory_limit(synthetic_dir, monkeypatch):
    monkeypatch.delenv("TIEBREAK_DUCKDB_MEMORY_MB", raising=False)
    assert _duckdb_limit_mib(Store(synthetic_dir)) == pytest.approx(512, rel=0.01)  # not 80 % of the machine
    monkeypatch.setenv("TIEBREAK_DUCKDB_MEMORY_MB", "96")
    assert _duckdb_limit_mib(Store(synthetic_dir)) == pytest.approx(96, rel=0.01)


def test_the_answer_budget_is_set_where_every_process_reads_it():
    from streamlit import byte_util  # Streamlit's own parser: ui.memo.byte_size must agree with it

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    profile = dict(line.split("=", 1) for line in (ROOT / "deploy" / "production.env").read_text().splitlines()
                   if line and not line.startswith("#"))
    budget = byte_util.config_max_cache_data_size_to_bytes(config["server"]["maxCacheDataSize"])
    assert budget == byte_util.config_max_cache_data_size_to_bytes(profile["STREAMLIT_SERVER_MAX_CACHE_DATA_SIZE"])
    default = next(b for b in memo.BOUNDS if b.setting == "STREAMLIT_SERVER_MAX_CACHE_DATA_SIZE").default
    assert budget == byte_util.config_max_cache_data_size_to_bytes(default) == memo.byte_size(default)
    for text in ("128mb", "1.5GiB", "512KB", "3gb"):
        assert memo.byte_size(text) == byte_util.config_max_cache_data_size_to_bytes(text), text
    for bound in memo.BOUNDS:  # the profile writes every default out, as the table says
        if bound.setting in profile:
            assert profile[bound.setting] == bound.default, bound.setting


def test_the_figure_memo_honours_its_bound():
    from ui import charts

    assert charts._figures.maxsize == memo.FIGURES()
    for i in range(memo.FIGURES() + 3):
        charts._figures.put(("bound-test", i), object())
    assert len(charts._figures) == memo.FIGURES()
    charts._figures.clear()


def _hosting_rows() -> list[list[str]]:
    text = (ROOT / "docs" / "hosting.md").read_text()
    section = text.split("## Memory", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:]
    return [[cell.strip().strip("`") for cell in row.strip("|").split(" | ")] for row in rows
            if not set(row.replace("|", "").strip()) <= {"-"}], section


def test_hosting_lists_exactly_the_bounds_and_their_sum():
    rows, section = _hosting_rows()
    assert [tuple(r[:4]) for r in rows] == [(b.name, b.scope, b.default, b.setting) for b in memo.BOUNDS]
    stated = int(re.search(r"at most \*\*(\d[\d,]*) MB per process\*\*", section).group(1).replace(",", ""))
    assert stated == round(memo.process_megabytes())
