"""Every export is inert: hostile system and task names go through every format — the CLI leaderboard's table,
CSV, LaTeX and JSON, and the dashboard's CSV and LaTeX downloads — and come out as text that acts on nothing.

- CSV: opened by LibreOffice Calc itself (headless, CSV import with "evaluate formulas" on, converted to flat
  ODS whose XML says which cells are formulas), an independent spreadsheet parser: no cell is a formula, every
  system is one row (a raw CR or LF inside a name does not start a new one), every name reads back as the
  name (behind a ``'`` where it would have been a formula). Python's csv module reads the same cells.
- Terminal table and LaTeX: no control character at all besides the line ends; one line per system; a LaTeX
  row has exactly one unescaped ``&`` per column gap and ends its row once.
- JSON: the names round-trip exactly (JSON escapes control characters itself).

The hostile names come from a per-query file dropped into the data folder and from ``evalcore ingest --task``.
"""
from __future__ import annotations

import contextlib
import csv
import io
import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalcore.cli import main
from evalcore.schema import QUERY_METRICS
from needs import missing

HOSTILE = [
    '=HYPERLINK("http://x","y")',
    "+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(A1:A9)",
    "\t=1+1",
    "\r=1+1",
    " =1+1",
    "a\r=cmd|' /C calc'!A0",
    "line\nbreak & co",
    "esc\x1b[31mred\x1b[0m",
    "tab\tin",
    'quote"in,comma',
    "bidi\u202eevil",
    "back\\slash $#_{}~^%",
    "nul\x00del\x7fc1\x85",
]
TASKS = ["=1+1 task", "plain task", "cr\rtask"]
INGESTED_TASK = '=HYPERLINK("http://evil","click")'
BENCHMARK = "hostile-bench"


def _rows(system: str, task: str, rng: np.random.Generator, n: int = 3) -> pd.DataFrame:
    value = rng.uniform(0.1, 0.9, n)
    return pd.DataFrame({
        "system": system, "benchmark": BENCHMARK, "task": task, "setting": "full", "instruction": False,
        "precision": "fp32", "qid": [f"q{i}" for i in range(n)], "metric": "ndcg@10", "oblivious": value,
        "expected": value, "min": value, "max": value, "tie_policy": "docid-desc", "n_candidates": 10,
        "tied_at_cutoff": False, "source": "hostile",
    })[list(QUERY_METRICS)]


@pytest.fixture(scope="module")
def hostile_data(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    data = root / "data"
    (data / "dropped").mkdir(parents=True)
    rng = np.random.default_rng(0)
    frames = [_rows(system, task, rng) for system in HOSTILE for task in TASKS]
    pd.concat(frames, ignore_index=True).to_parquet(data / "dropped" / "hostile.parquet", index=False)
    # the vector: a task named as a formula, through ingest
    (root / "run.trec").write_text("q1 Q0 a 1 0.9 s\nq1 Q0 b 2 0.5 s\n")
    (root / "qrels.txt").write_text("q1 0 a 1\n")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["ingest", "--run", str(root / "run.trec"), "--qrels", str(root / "qrels.txt"), "--system",
                     HOSTILE[0], "--benchmark", BENCHMARK, "--task", INGESTED_TASK, "--setting", "full",
                     "--instruction", "no", "--precision", "fp32", "--data", str(data)])
    assert code == 0, err.getvalue()
    return data


def leaderboard(data: Path, fmt: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["leaderboard", "--data", str(data), "--benchmark", BENCHMARK,
                     "--format", fmt])
    assert code == 0, err.getvalue()
    assert _acting(err.getvalue()) == [], err.getvalue()
    return out.getvalue()


def _acting(text: str) -> list[str]:
    """The characters of ``text`` that act rather than show (anything unprintable but the line end)."""
    return [c for c in text if c != "\n" and not c.isprintable()]


def test_the_terminal_table_shows_every_name_on_one_line_and_no_control_character(hostile_data):
    text = leaderboard(hostile_data, "table")
    assert _acting(text) == []
    lines = text.splitlines()
    for name in HOSTILE:
        shown = name.encode("unicode_escape").decode("ascii") if not name.isprintable() else name
        holding = [line for line in lines if shown in line]
        assert holding, (name, shown)
    header = lines[0]
    assert all(task.isprintable() and task in header or repr(task)[1:-1] in header for task in TASKS[:2])
    assert "cr\\rtask" in header


def _latex_rows(tex: str) -> tuple[int, list[str]]:
    body = tex.split("\\midrule\n")[1].split("\n\\bottomrule")[0]
    columns = len(re.search(r"\\begin\{tabular\}\{([lr]+)\}", tex).group(1))
    return columns, body.split("\n")


def _check_latex(tex: str, n_systems: int) -> None:
    assert _acting(tex) == []
    columns, rows = _latex_rows(tex)
    assert len(rows) == n_systems
    for row in rows:
        assert row.endswith(" \\\\") and "\\\\" not in row[:-3], row  # the row ends once, at its end
        assert len(re.findall(r"(?<!\\)&", row)) == columns - 1, row


def test_the_latex_table_escapes_every_name(hostile_data):
    tex = leaderboard(hostile_data, "latex")
    _check_latex(tex.split("\n%")[0], len(HOSTILE))
    assert "\\textbackslash{}x1b[31mred" in tex and "\\&" in tex


def test_json_round_trips_every_name(hostile_data):
    text = leaderboard(hostile_data, "json")
    assert _acting(text) == []
    board = json.loads(text)
    names = {row["system"] for row in board["ranked"]} | {row["system"] for row in board["incomplete"]}
    assert names == set(HOSTILE)
    assert set(board["tasks"]) == {*TASKS, INGESTED_TASK}


# ------------------------------------------------------------------ CSV, read by a real spreadsheet program

OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
# CSV import: comma, double quote, UTF-8, from line 1, standard cells, language default, quoted fields not forced to
# text, detect special numbers, (export tokens), evaluate formulas ON: the setting under which a formula would run
CSV_FILTER = "CSV:44,34,76,1,,0,false,true,false,false,false,false,true"


def spreadsheet_cells(csv_text: str, folder: Path) -> list[list[tuple[str, bool]]]:
    """Rows of (cell text, is a formula) as LibreOffice Calc imports ``csv_text``."""
    office = shutil.which("soffice") or shutil.which("libreoffice")
    if office is None:
        missing("LibreOffice (apt-get install libreoffice-calc-nogui) reads the CSV as a spreadsheet does")
    source = folder / "export.csv"
    source.write_text(csv_text, encoding="utf-8", newline="")
    profile = folder / "lo-profile"
    subprocess.run([office, f"-env:UserInstallation=file://{profile}", "--headless", "--norestore",
                    f"--infilter={CSV_FILTER}", "--convert-to", "fods", "--outdir", str(folder), str(source)],
                   check=True, capture_output=True, timeout=180)
    tree = ET.parse(folder / "export.fods")
    rows = []
    for row in tree.iter(f"{{{TABLE}}}table-row"):
        repeat = int(row.get(f"{{{TABLE}}}number-rows-repeated", "1"))
        cells = []
        for cell in row.findall(f"{{{TABLE}}}table-cell"):
            text = "\n".join("".join(p.itertext()) for p in cell.findall(f"{{{TEXT}}}p"))
            count = int(cell.get(f"{{{TABLE}}}number-columns-repeated", "1"))
            cells += [(text, cell.get(f"{{{TABLE}}}formula") is not None)] * min(count, 200)
        while cells and cells[-1] == ("", False):
            cells.pop()
        if cells:
            rows += [cells] * min(repeat, 1)
    return rows


def _visible(value: str) -> str:
    """A cell's text without white space and control characters (ODS keeps tabs and line breaks as elements,
    and XML cannot hold NUL): what must match between the spreadsheet and the CSV."""
    return re.sub(r"[\s\x00-\x1f\x7f-\x9f]", "", value)


def _check_csv(csv_text: str, folder: Path, names: list[str], name_column: str) -> None:
    python_rows = list(csv.reader(io.StringIO(csv_text, newline="")))
    header = python_rows[0]
    sheet = spreadsheet_cells(csv_text, folder)
    assert not [cell for row in sheet for cell in row if cell[1]], "a cell became a formula"
    assert len(sheet) == len(python_rows) == len(names) + 1  # one row per system: no CR or LF started another
    position = header.index(name_column)
    assert sorted(row[position] for row in python_rows[1:]) == sorted(
        ("'" + n if n.lstrip().startswith(("=", "+", "-", "@")) or not n[0].isprintable() else n) for n in names)
    assert [_visible(text) for text, _ in sheet[0]] == [_visible(c) for c in header]  # the task headers too
    for python_row, sheet_row in zip(python_rows[1:], sheet[1:]):  # each name stays in its one cell
        assert _visible(sheet_row[position][0]) == _visible(python_row[position])
    for cell in header:  # task headers too
        assert not cell.lstrip().startswith(("=", "+", "-", "@")), cell


@pytest.mark.slow
def test_the_cli_csv_is_inert_in_a_spreadsheet(hostile_data, tmp_path):
    text = leaderboard(hostile_data, "csv")
    assert f"'{INGESTED_TASK}" in next(csv.reader(io.StringIO(text, newline="")))
    _check_csv(text, tmp_path, HOSTILE, "system")


class _Capture:
    """Stands in for ``streamlit`` in :func:`ui.tables.download_row`: keeps each download's data function."""

    def __init__(self):
        self.files: dict[str, object] = {}

    def columns(self, spec):
        return [self] * (len(spec) if isinstance(spec, (list, tuple)) else spec)

    def download_button(self, label, data, file_name, **_):
        self.files[file_name] = data

    def popover(self, *_, **__):
        return contextlib.nullcontext()

    def radio(self, label, options, **_):
        return None


@pytest.fixture(scope="module")
def dashboard_downloads(hostile_data):
    """The Leaderboard page's CSV and LaTeX downloads of the hostile board, built as the page builds them."""
    from ui import board as boards
    from ui import tables

    from evalcore.store import Condition, Store

    store = Store(hostile_data)
    cond = Condition(BENCHMARK, "ndcg@10", "full", None, "fp32", "docid-desc")
    board = store.leaderboard(cond)
    meta, kinds = store.systems(benchmark=BENCHMARK), boards.kinds_of(store.precision_kinds(), cond)
    capture = _Capture()
    real = tables.st
    tables.st = capture
    try:
        tables.download_row(lambda: boards.export_rows(board, meta, kinds, "g"), "board", 'caption "=1+1"\r\x1b',
                            bold_max=[board.ranked_by, *board.tasks], integers=boards.INTEGER_COLUMNS,
                            latex_frame=lambda: boards.latex_rows(board, "g"), bold_where="Rank")
    finally:
        tables.st = real
    return {name: data().decode() for name, data in capture.files.items()}


def test_the_dashboards_latex_download_is_inert(dashboard_downloads):
    tex = dashboard_downloads["board.tex"]
    _check_latex(tex, len(HOSTILE))
    assert "\\caption{caption \"=1+1\"\\textbackslash{}r\\textbackslash{}x1b}" in tex


@pytest.mark.slow
def test_the_dashboards_csv_download_is_inert_in_a_spreadsheet(dashboard_downloads, tmp_path):
    _check_csv(dashboard_downloads["board.csv"], tmp_path, HOSTILE, "system")
