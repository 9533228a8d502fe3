"""The reliability suite's fuzzed bad runs (tests/reliability/test_cli_fuzz.py: bad scores in every format and
text style, duplicates, mutated bytes, damaged parquet), given as a candidate to
``evalcore leaderboard --candidate`` and ``evalcore tasks evaluate``: each gives exit code 2 and one line naming the
file and line, or (a mutation that leaves a valid run) a result — and nothing is ever written into the data
folder, nor a partial output. Candidates are checked against a tiny made-up tasks folder (tests/candidate_data.py)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import assume, given
from hypothesis import strategies as st

from candidate_data import TASKS, mcr_rows, write_tasks


def _fuzz_module():
    """tests/reliability/test_cli_fuzz.py's generators and checks, loaded by path (not collected again)."""
    path = Path(__file__).with_name("test_cli_fuzz.py")
    spec = importlib.util.spec_from_file_location("cli_fuzz_helpers", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


fuzz = _fuzz_module()
FORMATS = ["trec", "tsv", "csv", "jsonl", "parquet"]
BAD = sorted(fuzz.BAD_SCORES) + ["duplicate", "unknown qid", "unknown docid"]


def commands(data: Path, folder: Path, out: Path) -> dict[str, list[str]]:
    common = ["--data", str(data), "--benchmark", "rar-b", "--setting", "mcr", "--candidate", str(folder)]
    return {"leaderboard": ["leaderboard", *common, "--candidate-name", "fuzz"],
            "tasks evaluate": ["tasks", "evaluate", *common, "--out", str(out / "rows.parquet")]}


def setting_up(tmp_path_factory) -> tuple[Path, Path, Path]:
    work = tmp_path_factory.mktemp("candidate")
    data = write_tasks(work / "data")
    folder = work / "runs"
    folder.mkdir()
    out = work / "out"
    out.mkdir()
    return data, folder, out


@fuzz.FUZZ
@given(fmt=st.sampled_from(FORMATS), style=fuzz.text_style(), bad=st.sampled_from(BAD),
       position=st.floats(0, 1, exclude_max=True), command=st.sampled_from(["leaderboard", "tasks evaluate"]))
def test_one_bad_row_of_a_candidate_is_one_line_with_its_line_and_nothing_is_written(
        tmp_path_factory, fmt, style, bad, position, command):
    if fmt == "parquet":
        assume(bad in ("NaN", "inf", "-Infinity", "1e309", "-1e309", "duplicate", "unknown qid", "unknown docid"))
    if fmt == "csv":
        assume(bad != "1,5")  # a comma in a CSV field is a column-count error: its own message
    data, folder, out = setting_up(tmp_path_factory)
    rows = mcr_rows("Beta")
    row = int(position * len(rows))
    if bad == "duplicate":
        first = int(position * row) if row else 0
        rows.insert(row + 1, (rows[first][0], rows[first][1], 0.5))
        bad_row = [i for i, r in enumerate(rows) if r[:2] == rows[first][:2]][1]
    elif bad == "unknown qid":
        rows[row] = ("q99999", rows[row][1], rows[row][2])
        bad_row = row
    elif bad == "unknown docid":
        rows[row] = (rows[row][0], "c007", rows[row][2])
        bad_row = row
    else:
        rows[row] = (rows[row][0], rows[row][1], bad)
        bad_row = row
    fuzz.write_run_file(folder, mcr_rows("Alpha"), fmt, {**style, "bom": False}, name="Alpha")
    path, lines = fuzz.write_run_file(folder, rows, fmt, style, name="Beta")
    before = fuzz.listing(data.parent)
    code, _, stderr = fuzz.call_cli(commands(data, folder, out)[command])
    match = fuzz.assert_input_error(code, stderr, [path], line=lines[bad_row])
    assert "expected" in match["what"] or "unknown" in match["what"], stderr
    assert fuzz.listing(data.parent) == before  # no output, no temporary file, inputs untouched


@fuzz.FUZZ
@given(fmt=st.sampled_from(["trec", "tsv", "csv", "jsonl"]), style=fuzz.text_style(), mutation=st.data(),
       command=st.sampled_from(["leaderboard", "tasks evaluate"]))
def test_mutated_candidate_files_give_a_board_or_a_clean_error(tmp_path_factory, fmt, style, mutation, command):
    data, folder, out = setting_up(tmp_path_factory)
    fuzz.write_run_file(folder, mcr_rows("Alpha"), fmt, style, name="Alpha")
    path, _ = fuzz.write_run_file(folder, mcr_rows("Beta"), fmt, style, name="Beta")
    path.write_bytes(mutation.draw(fuzz.mutated_bytes(path.read_bytes())))
    before = fuzz.listing(data)
    code, stdout, stderr = fuzz.call_cli(commands(data, folder, out)[command])
    assert "Traceback" not in stderr
    if code == 0:
        assert command == "leaderboard" or (out / "rows.parquet").is_file()
    else:
        fuzz.assert_input_error(code, stderr, [path, folder / f"Alpha.{fmt}", folder])
        assert fuzz.listing(out) == {}
    assert fuzz.listing(data) == before


@fuzz.FUZZ
@given(mutation=st.data())
def test_a_damaged_parquet_table_with_a_task_column_gives_a_board_or_a_clean_error(tmp_path_factory, mutation):
    data, folder, out = setting_up(tmp_path_factory)
    rows = [(task, q, d, s) for task in TASKS for q, d, s in mcr_rows(task)]
    path = folder / "all.parquet"
    pq.write_table(pa.table({name: [r[i] for r in rows] for i, name in enumerate(["task", "qid", "docid", "score"])}),
                   path)
    damaged = bytearray(path.read_bytes())
    for _ in range(mutation.draw(st.integers(1, 4))):
        damaged[mutation.draw(st.integers(0, len(damaged) - 1))] = mutation.draw(st.integers(0, 255))
    if mutation.draw(st.booleans()):
        damaged = damaged[: mutation.draw(st.integers(0, len(damaged)))]
    path.write_bytes(bytes(damaged))
    before = fuzz.listing(data)
    argv = commands(data, path, out)["leaderboard"]
    code, _, stderr = fuzz.call_cli(argv)
    assert "Traceback" not in stderr
    if code != 0:
        fuzz.assert_input_error(code, stderr, [path])
    assert fuzz.listing(data) == before


def test_as_a_process_a_bad_candidate_is_one_stderr_line_and_exit_code_2(tmp_path):
    import subprocess

    data = write_tasks(tmp_path / "data")
    folder = tmp_path / "runs"
    folder.mkdir()
    fuzz.write_run_file(folder, mcr_rows("Alpha"), "trec", {"sep": " ", "score_style": 0, "eol": "\n", "bom": False,
                                                            "blank_every": 0, "trailing": "", "final_eol": True},
                        name="Alpha")
    (folder / "Beta.csv").write_text("qid,docid,score\nq00000,c000,1\nq00000,c001,inf\n")
    before = fuzz.listing(tmp_path)
    done = subprocess.run([sys.executable, "-m", "evalcore", *commands(data, folder, tmp_path / "out")["leaderboard"]],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"evalcore leaderboard: error: {folder / 'Beta.csv'}:3: expected a finite score")
    assert fuzz.listing(tmp_path) == before
