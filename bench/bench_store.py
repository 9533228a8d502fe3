"""Benchmark of opening a data folder and of every store query the dashboard pages use, over a synthetic
``query_metrics`` of 10M rows.

    python bench/bench_store.py [--systems 100] [--queries 500] [--repeat 5] [--keep DIR]

Data: 100 systems × 4 precisions × 2 instruction states × 25 tasks × 500 queries × 1 metric (ndcg@10),
one parquet file per system (zstd, 10k-row row groups, sorted by precision/instruction/task), written to
a temp dir. Opening: a store over the files without derived data (every file scanned), ``evalcore derive``
on them, and a store reading the derived sums (what every new process does: a server start, each CLI call);
the Leaderboard with and without both lenses' uncertainty. Prints a markdown table of the median wall time per
call (targets: ≤ 200 ms per store query, ≤ 1 s for a Leaderboard of 100 systems × 17 tasks with its
uncertainty from per-query rows).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalcore.store import Condition, Store, derivation, derived  # noqa: E402

PRECISIONS = ("bf16", "bf16+hps", "fp16", "fp32")
N_TASKS = 25


def write_synthetic(data_dir: Path, n_systems: int, n_queries: int, seed: int = 0) -> int:
    """One query_metrics parquet per system; returns the total row count."""
    rng = np.random.default_rng(seed)
    out = data_dir / "synthetic"
    out.mkdir(parents=True, exist_ok=True)
    tasks = np.array([f"Task{t:02d}" for t in range(N_TASKS)], dtype=object)
    qids = np.array([f"q{q}" for q in range(n_queries)], dtype=object)
    per_system = len(PRECISIONS) * 2 * N_TASKS * n_queries
    # layout: precision (slowest) > instruction > task > query (fastest)
    precision_idx = np.repeat(np.arange(len(PRECISIONS)), 2 * N_TASKS * n_queries)
    instruction = np.tile(np.repeat([False, True], N_TASKS * n_queries), len(PRECISIONS))
    task_idx = np.tile(np.repeat(np.arange(N_TASKS), n_queries), len(PRECISIONS) * 2)
    qid_idx = np.tile(np.arange(n_queries), len(PRECISIONS) * 2 * N_TASKS)
    difficulty = rng.uniform(0.2, 0.8, size=(N_TASKS, n_queries))
    total = 0
    for s in range(n_systems):
        skill = rng.uniform(-0.15, 0.15)
        expected = np.clip(difficulty[task_idx, qid_idx] + skill + rng.normal(0, 0.1, per_system), 0, 1)
        spread = rng.uniform(0, 0.05, per_system) * (rng.random(per_system) < 0.3)
        low, high = np.clip(expected - spread, 0, 1), np.clip(expected + spread, 0, 1)
        oblivious = low + (high - low) * rng.random(per_system)
        table = pa.table({
            "system": pa.array(np.full(per_system, f"system-{s:03d}", dtype=object)).dictionary_encode(),
            "benchmark": pa.array(np.full(per_system, "synth", dtype=object)).dictionary_encode(),
            "task": pa.array(tasks[task_idx]).dictionary_encode(),
            "setting": pa.array(np.full(per_system, "full", dtype=object)).dictionary_encode(),
            "instruction": instruction,
            "precision": pa.array(np.array(PRECISIONS, dtype=object)[precision_idx]).dictionary_encode(),
            "qid": pa.array(qids[qid_idx]).dictionary_encode(),
            "metric": pa.array(np.full(per_system, "ndcg@10", dtype=object)).dictionary_encode(),
            "oblivious": oblivious, "expected": expected, "min": low, "max": high,
            "tie_policy": pa.array(np.full(per_system, "docid-desc", dtype=object)).dictionary_encode(),
            "n_candidates": np.full(per_system, 100, dtype=np.int64),
            "tied_at_cutoff": spread > 0,
            "source": pa.array(np.full(per_system, "synthetic", dtype=object)).dictionary_encode(),
        })
        pq.write_table(table, out / f"system-{s:03d}.parquet", compression="zstd", row_group_size=10_000)
        total += per_system
    return total


def timed(function, repeat: int) -> tuple[float, float]:
    """Median wall and CPU time in ms over ``repeat`` calls (after one warm-up call); CPU time is the whole
    process's (all threads), which scatters far less than wall time on a shared machine."""
    function()
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        function()
        walls.append((time.perf_counter() - wall) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
    return statistics.median(walls), statistics.median(cpus)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--systems", type=int, default=100)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", default=None,
                        help="write the synthetic data here and keep it (reused when already there)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="tiebreak-bench-") as temporary:
        data_dir = Path(args.keep or temporary)
        start = time.perf_counter()
        existing = sorted((data_dir / "synthetic").glob("*.parquet"))
        if args.keep and len(existing) == args.systems:  # reuse a kept data set
            n_rows = sum(pq.read_metadata(p).num_rows for p in existing)
        else:
            n_rows = write_synthetic(data_dir, args.systems, args.queries)
        generate_s = time.perf_counter() - start

        load_before = os.getloadavg()  # the machine is shared: timings mean little without it
        for stale in data_dir.rglob(f"{derived.FOLDER}/*{derived.SUMS_SUFFIX}"):  # a kept dir: derived again
            stale.unlink()
        start = time.perf_counter()
        Store(data_dir)
        scan_s = time.perf_counter() - start
        start = time.perf_counter()
        derivation.derive(data_dir)
        derive_s = time.perf_counter() - start
        opens = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            store = Store(data_dir)  # a new Store reads every file's derived sums, as a new process does
            opens.append(time.perf_counter() - start)
        load_s = statistics.median(opens)
        assert store.derived_sums == (args.systems, []), store.derived_sums

        fp32 = Condition("synth", "ndcg@10", "full", False, "fp32")
        bf16 = Condition("synth", "ndcg@10", "full", False, "bf16")
        hps = Condition("synth", "ndcg@10", "full", False, "bf16+hps")
        any_instruction = Condition("synth", "ndcg@10", "full", None, "fp32")
        first_four = [f"system-{s:03d}" for s in range(min(4, args.systems))]
        tasks_17 = [f"Task{t:02d}" for t in range(17)]

        rows: list[tuple[str, str, tuple[float, float], float]] = []  # (what, page, (wall, CPU) ms, target ms)

        def measure(what: str, page: str, function, target: float = 200.0) -> None:
            rows.append((what, page, timed(function, args.repeat), target))

        measure("fingerprint() (staleness check)", "all", store.fingerprint)
        measure("facets()", "sidebar", store.facets)
        measure("systems(search, size, open weights)", "sidebar",
                lambda: store.systems(search="system-0", min_parameters=None, open_weights=None))
        measure("task_table(fp32)", "leaderboard", lambda: store.task_table(fp32))
        measure("leaderboard(fp32, no uncertainty)", "leaderboard",
                lambda: store.leaderboard(fp32, uncertainty=False))
        measure("leaderboard(instruction=any, no uncertainty)", "leaderboard",
                lambda: store.leaderboard(any_instruction, uncertainty=False))
        measure("leaderboard(fp32, 17 tasks, both lenses)", "leaderboard",
                lambda: store.leaderboard(fp32, tasks=tasks_17), 1000.0)
        measure("tie_summary()", "ties & precision", lambda: store.tie_summary(fp32))
        measure("rank_flips(fp32 → bf16)", "rank flips", lambda: store.rank_flips(fp32, bf16))
        measure("rank_flips(bf16 → bf16+hps)", "rank flips", lambda: store.rank_flips(bf16, hps))
        measure("instruction_gap()", "instructions", lambda: store.instruction_gap(fp32))
        measure("mcr_vs_full()", "mcr vs full", lambda: store.mcr_vs_full(fp32))
        measure("compare(4 systems)", "compare", lambda: store.compare(first_four, fp32))
        measure("query_diff(4 systems, 1 task)", "compare", lambda: store.query_diff(first_four, fp32, "Task00"))
        measure("paired_test(2 systems, all tasks, 10k flips)", "compare",
                lambda: store.paired_test(first_four[0], first_four[1], fp32), 1000.0)
        measure("paired_test(2 systems, 1 task, 10k flips)", "compare",
                lambda: store.paired_test(first_four[0], first_four[1], fp32, task="Task00"))

        start = time.perf_counter()
        store.reload()
        reload_s = time.perf_counter() - start

        load_after = os.getloadavg()
        print(f"synthetic query_metrics: {n_rows:,} rows in {args.systems} files (generated in {generate_s:.1f} s)")
        print(f"open without derived data (every file scanned) {scan_s:.2f} s; evalcore derive {derive_s:.2f} s; "
              f"open with derived sums {load_s:.2f} s (median of {args.repeat}); reload in the same process "
              f"(nothing changed) {reload_s:.2f} s")
        print("load average (1/5/15 min) before the timings: {:.2f} {:.2f} {:.2f}, after: {:.2f} {:.2f} {:.2f}\n"
              .format(*load_before, *load_after))
        print("| store call | page | median ms | CPU ms | target ms | ok |")
        print("|---|---|---:|---:|---:|:---:|")
        for what, page, (ms, cpu), target in rows:
            print(f"| {what} | {page} | {ms:.0f} | {cpu:.0f} | {target:.0f} | {'yes' if ms <= target else 'NO'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
