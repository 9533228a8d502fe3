"""Atomic writes: every writer (``evaluate --per-query``, ``ties --per-query``, ``simulate``
to parquet and TREC text, ``ingest``, ``import-mteb``, ``import-r2med``) is SIGKILLed at random points, and
the target directory must be either unchanged or complete:

- every visible file is byte-identical to before, or is the new output and equals an uninterrupted run's
  output (parquet read in full and compared as a table; text compared byte for byte);
- nothing else visible appears (a SIGKILL can leave a hidden ``.<name>.<random>.tmp``, which no glob of
  ``*.parquet`` and no reader sees; the test counts them);
- an importer's two files (task_scores + systems) always come from the same import;
- ``Store(dir)`` loads data directories with nothing skipped.

Half of the kills fall at a uniformly random time over the whole command; the other half are aimed at the
write itself (the kill follows the temp file's appearance by 0-50 ms). ``TIEBREAK_KILL_TRIALS`` (default 4
per writer) raises the count for docs/reliability.md's figure.
"""
from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalcore import sources
from evalcore.store import Store
from needs import require_source

ROOT = Path(__file__).resolve().parents[2]
SHARED = sources.sources_root()
TRIALS = int(os.environ.get("TIEBREAK_KILL_TRIALS", "4"))
EXTRA_AIMED = 12  # at most this many more trials to see a kill land during a write
COMMAND_SECONDS = 120

pytestmark = pytest.mark.slow


def evalcore_process(argv: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "evalcore", *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})


def run_to_end(argv: list[str]) -> float:
    started = time.monotonic()
    process = evalcore_process(argv)
    _, stderr = process.communicate(timeout=COMMAND_SECONDS)
    assert process.returncode == 0, stderr.decode()
    return time.monotonic() - started


def snapshot(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def visible(files: dict[str, bytes]) -> dict[str, bytes]:
    return {name: data for name, data in files.items() if not any(part.startswith(".") for part in Path(name).parts)}


def same_content(path: Path, reference: bytes) -> bool:
    if path.suffix == ".parquet":
        return pq.read_table(path).equals(pq.read_table(pa.BufferReader(reference)))
    return path.read_bytes() == reference


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    """A run big enough that reading, evaluating and writing each take a visible share of the time."""
    directory = tmp_path_factory.mktemp("kill_inputs")
    rng = np.random.default_rng(7)
    n_queries, n_docs = 60, 2500
    qids = np.repeat([f"q{i}" for i in range(n_queries)], n_docs)
    docids = np.tile([f"doc{j}" for j in range(n_docs)], n_queries)
    scores = np.round(rng.normal(size=n_queries * n_docs), 2)  # heavy ties
    pq.write_table(pa.table({"qid": qids, "docid": docids, "score": scores}), directory / "run.parquet")
    judged = rng.random(len(qids)) < 0.01
    pq.write_table(pa.table({"qid": qids[judged], "docid": docids[judged],
                             "relevance": rng.integers(1, 3, int(judged.sum()))}), directory / "qrels.parquet")
    (directory / "old.trec").write_text("q0 Q0 doc0 1 1.0 old\n")
    (directory / "old_qrels.txt").write_text("q0 0 doc0 1\n")
    return directory


def writers(inputs: Path) -> dict[str, dict]:
    """name -> argv builder (target dir -> argv), how to prepare the 'before' state, data dir or not."""
    run, qrels = str(inputs / "run.parquet"), str(inputs / "qrels.parquet")
    old_run, old_qrels = str(inputs / "old.trec"), str(inputs / "old_qrels.txt")
    ingest = ["ingest", "--qrels", qrels, "--benchmark", "b", "--task", "t", "--setting", "full",
              "--instruction", "no", "--precision", "fp32"]
    return {
        "evaluate --per-query": {
            "argv": lambda d: ["evaluate", "--run", run, "--qrels", qrels, "--per-query", str(d / "pq.parquet")],
            "before": lambda d: ["evaluate", "--run", old_run, "--qrels", old_qrels, "--per-query",
                                 str(d / "pq.parquet")],
        },
        "ties --per-query": {
            "argv": lambda d: ["ties", "--run", run, "--per-query", str(d / "ties.parquet")],
            "before": lambda d: ["ties", "--run", old_run, "--per-query", str(d / "ties.parquet")],
        },
        "simulate (parquet)": {
            "argv": lambda d: ["simulate", "--run", run, "--to", "bf16", "--out", str(d / "sim.parquet")],
            "before": lambda d: ["simulate", "--run", old_run, "--to", "bf16", "--out", str(d / "sim.parquet")],
        },
        "simulate (TREC text)": {
            "argv": lambda d: ["simulate", "--run", run, "--to", "fp16", "--out", str(d / "sim.trec")],
            "before": lambda d: ["simulate", "--run", old_run, "--to", "fp16", "--out", str(d / "sim.trec")],
        },
        "ingest": {
            "argv": lambda d: ingest + ["--run", run, "--system", "new", "--data", str(d)],
            "before": lambda d: ingest + ["--run", old_run, "--qrels", old_qrels, "--system", "old",
                                          "--data", str(d)],
            "data_dir": True,
        },
        "import-mteb": {
            "argv": lambda d: ["import-mteb", str(SHARED / "mteb-results"), "--out", str(d), "--source", "new"],
            "before": lambda d: ["import-mteb", str(SHARED / "mteb-results"), "--out", str(d), "--source", "old"],
            "data_dir": True, "needs": SHARED / "mteb-results",
        },
        "import-r2med": {
            "argv": lambda d: ["import-r2med", str(SHARED / "r2med-paper"), "--out", str(d), "--source", "new"],
            "before": lambda d: ["import-r2med", str(SHARED / "r2med-paper"), "--out", str(d), "--source", "old"],
            "data_dir": True, "needs": SHARED / "r2med-paper",
        },
    }


WRITERS = ["evaluate --per-query", "ties --per-query", "simulate (parquet)", "simulate (TREC text)", "ingest",
           "import-mteb", "import-r2med"]


def kill_somewhere(argv: list[str], target: Path, delay: float | None, rng: random.Random, aim: float = 0.05) -> str:
    """Start the command and SIGKILL it: after ``delay`` s, or (delay None) 0-``aim`` s after a temp file
    appears in ``target``. Returns 'killed' or 'finished' (it ended before the kill)."""
    process = evalcore_process(argv)
    deadline = time.monotonic() + COMMAND_SECONDS
    try:
        if delay is not None:
            try:
                process.wait(timeout=delay)
                return "finished"
            except subprocess.TimeoutExpired:
                pass
        else:
            while not any(p.name.endswith(".tmp") for p in target.rglob(".*")):
                if process.poll() is not None:
                    return "finished"
                if time.monotonic() > deadline:
                    raise AssertionError(f"{argv} neither wrote nor ended in {COMMAND_SECONDS}s")
                time.sleep(0.001)
            time.sleep(rng.uniform(0, aim))
        if process.poll() is not None:
            return "finished"
        process.send_signal(signal.SIGKILL)
        return "killed"
    finally:
        process.wait(timeout=30)
        process.stderr.close()


@pytest.mark.parametrize("name", WRITERS)
def test_sigkill_leaves_the_target_unchanged_or_complete(tmp_path, inputs, name):
    spec = writers(inputs)[name]
    if "needs" in spec and not spec["needs"].exists():
        require_source(spec["needs"].name)
    # the state before, and the complete output of an uninterrupted run
    template = tmp_path / "template"
    template.mkdir()
    (template / "unrelated.txt").write_text("keep me\n")
    run_to_end(spec["before"](template))
    before = snapshot(template)
    complete_dir = tmp_path / "complete"
    shutil.copytree(template, complete_dir)
    duration = run_to_end(spec["argv"](complete_dir))
    complete = visible(snapshot(complete_dir))
    new_names = set(complete) - set(before)
    changed_names = {n for n in set(complete) & set(before) if complete[n] != before[n]}
    assert new_names | changed_names, "the command wrote nothing"

    rng = random.Random(f"{name}-{TRIALS}")
    outcomes = {"killed": 0, "finished": 0, "unchanged": 0, "complete": 0, "temp_left": 0}
    trial = 0
    # after the planned trials, kills aimed at the temp file's appearance (no wait) until one lands mid-write
    while trial < TRIALS or (not outcomes["temp_left"] and trial < TRIALS + EXTRA_AIMED):
        target = tmp_path / f"trial{trial}"
        shutil.copytree(template, target)
        delay = rng.uniform(0, duration * 1.05) if trial % 2 == 0 and trial < TRIALS else None
        outcomes[kill_somewhere(spec["argv"](target), target, delay, rng, 0.05 if trial < TRIALS else 0)] += 1
        after = snapshot(target)
        shown = visible(after)
        # hidden leftovers only: temporaries, and the lock record a killed ingest leaves (the next one replaces it)
        leftovers = set(after) - set(shown) - {"ingested/.ingest-lock.json"}
        assert all(Path(n).name.startswith(".") and n.endswith(".tmp") for n in leftovers), leftovers
        outcomes["temp_left"] += bool(leftovers - set(before))
        for visible_name, data in shown.items():
            if before.get(visible_name) == data:
                continue
            if spec.get("data_dir") and visible_name.startswith("ingested/") and visible_name not in before:
                # ingest names its file with a fresh uuid (and its derived sums, in ingested/_derived/, after it)
                reference = next(complete[n] for n in new_names if ("/_derived/" in n) == ("/_derived/" in visible_name))
            else:
                assert visible_name in complete, f"stray file {visible_name} after a kill"
                reference = complete[visible_name]
            assert same_content(target / visible_name, reference), f"{visible_name} is partial after a kill"
        written = {n for n in shown if before.get(n) != shown[n]}
        if written:
            assert len(written) == len(new_names | changed_names), (written, new_names | changed_names)
            outcomes["complete"] += 1
        else:
            outcomes["unchanged"] += 1
        if name.startswith("import"):  # the two files of one import come from the same import
            sources = {n: set(pq.read_table(target / n, columns=["source"])["source"].to_pylist())
                       for n in shown if n.endswith(".parquet")}
            assert len({frozenset(s) for s in sources.values()}) == 1, sources
        if spec.get("data_dir"):
            store = Store(target)
            assert store.skipped == [], store.skipped
            assert store.facets()["benchmarks"]
        for parquet in target.rglob("*.parquet"):
            pq.read_table(parquet)  # every visible parquet reads in full
        shutil.rmtree(target)
        trial += 1
    print(f"{name}: {trial} trials, command {duration:.2f}s, {outcomes}")
    assert outcomes["killed"] + outcomes["finished"] == trial
    # a kill left the writer's temp file behind: it landed between the temp's creation and its rename
    assert outcomes["temp_left"] >= 1, f"no kill landed during a write in {trial} trials: {outcomes}"
