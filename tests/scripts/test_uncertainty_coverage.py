"""scripts/uncertainty_coverage.py at a hundredth of its boards: every simulation section prints its whole table
(one row per scenario of its grid) with coverages and rates that are proportions. The numbers themselves are
checked by tests/uncertainty (the same harness, more boards); the bound section reads every shipped per-query row
and is left to tests/uncertainty/test_bound_contains_bootstrap.py."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROWS = {"rows": 12, "tasks": 12, "queries": 18, "null": 20, "near-zero": 32}


@pytest.fixture(scope="module")
def printed() -> str:
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import uncertainty_coverage
    finally:
        sys.path.remove(str(REPO / "scripts"))
    from contextlib import redirect_stdout
    from io import StringIO

    out = StringIO()
    with redirect_stdout(out):
        assert uncertainty_coverage.main(["--scale", "0.01", "--only", *ROWS]) == 0
    return out.getvalue()


def tables(text: str) -> dict[str, list[list[str]]]:
    """{section: its table's body rows as cells}."""
    found = {}
    for block in re.split(r"^## ", text, flags=re.M)[1:]:
        name = block.split(":", 1)[0]
        lines = [line for line in block.splitlines() if line.startswith("|")]
        found[name] = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]
    return found


def test_every_section_prints_its_whole_grid(printed):
    found = tables(printed)
    assert {name: len(rows) for name, rows in found.items()} == ROWS


def test_coverages_and_rates_are_proportions(printed):
    found = tables(printed)
    cells = ([cell for row in found["rows"] for cell in row[3:]]          # coverages and widths within [0, 1]
             + [row[3] for row in found["null"]] + [cell for row in found["near-zero"] for cell in row[4:]]
             + [cell for row in found["tasks"] for cell in (row[3], row[4], row[7])])
    numbers = [float(value) for cell in cells for value in re.findall(r"(?<![=\d.])\d\.\d{3}(?!\d)", cell)]
    assert len(numbers) > 200 and all(0.0 <= value <= 1.0 for value in numbers)


def test_a_scale_that_is_not_positive_is_refused():
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import uncertainty_coverage
    finally:
        sys.path.remove(str(REPO / "scripts"))
    with pytest.raises(SystemExit) as exit_info:
        uncertainty_coverage.main(["--scale", "0"])
    assert exit_info.value.code == 2
