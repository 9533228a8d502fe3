"""tests/needs.py: a missing source or optional dependency skips with a reason naming how to get it, and
fails under CI; no test skips any other way (a bare importorskip would turn a broken project module into a
skip, and a skip in CI would hide a broken set-up)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import needs
from evalcore import sources

TESTS = Path(__file__).resolve().parent


@pytest.mark.parametrize("value, expected", [("true", True), ("TRUE", True), ("1", True), ("yes", True),
                                             (" True ", True), ("", False), ("false", False), ("0", False)])
def test_in_ci_reads_the_ci_variable(value, expected):
    assert needs.in_ci({"CI": value}) is expected
    assert needs.in_ci({}) is False


def test_missing_source_skips_locally_naming_the_fetch_command(tmp_path, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv(sources.SOURCES_ENV, str(tmp_path))
    with pytest.raises(pytest.skip.Exception) as skipped:
        needs.require_source(sources.RARB_MCR)
    assert sources.FETCH_COMMAND in str(skipped.value) and str(tmp_path / "rarb-mcr") in str(skipped.value)


def test_missing_source_fails_in_ci(tmp_path, monkeypatch):
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv(sources.SOURCES_ENV, str(tmp_path))
    with pytest.raises(pytest.fail.Exception, match="needed in CI but missing.*mteb-results"):
        needs.require_source(sources.MTEB_RESULTS)


def test_present_source_is_returned(tmp_path, monkeypatch):
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv(sources.SOURCES_ENV, str(tmp_path))
    (tmp_path / "r2med-paper").mkdir()
    assert needs.require_source(sources.R2MED_PAPER) == tmp_path / "r2med-paper"


def test_missing_module_skips_locally_and_fails_in_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no_such_module_xyz.*install-dev.sh"):
        needs.require_module("no_such_module_xyz")
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match="no_such_module_xyz"):
        needs.require_module("no_such_module_xyz")
    assert needs.require_module("json").dumps([1]) == "[1]"


def test_no_test_skips_except_through_needs():
    offenders = []
    pattern = re.compile(r"importorskip|pytest\.skip\(|mark\.skip(if)?\b|pytest\.xfail|mark\.xfail")
    for path in sorted(TESTS.rglob("*.py")):
        if path.name in ("needs.py", Path(__file__).name):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                offenders.append(f"{path.relative_to(TESTS)}:{number}: {line.strip()}")
    assert not offenders, "skip through tests/needs.py (require_source / require_module / missing):\n" + \
        "\n".join(offenders)
