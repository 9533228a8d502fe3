"""What a new process pays to open a data folder and draw its first Leaderboard, in wall and CPU seconds.

    python bench/bench_store_open.py DATA [DATA ...] [--runs 5] [--tree DIR] [--cache DIR]

Each run is a fresh Python process (a server start, an ``evalcore leaderboard``): ``Store(DATA)`` (imports not
counted), then ``leaderboard(cond, bootstrap=1000)`` with ``cond`` the condition with the most systems that have
per-query data. CPU seconds are those of the whole process (all threads): on a shared machine they scatter far
less than wall seconds. ``--tree`` runs another checkout's evalcore (e.g. ``git archive REV | tar -x -C DIR``)
for a before/after in one run; ``--cache`` is the ``TIEBREAK_CACHE`` the processes get (default: none; a first
run fills it, the medians are of the runs after it). Prints one markdown row per data folder.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
from evalcore.store import Condition, Store
import duckdb, pyarrow.parquet  # noqa: F401 (imported before the clock starts, in either tree)

def clock():
    return time.perf_counter(), time.process_time()

w0, c0 = clock()
store = Store(sys.argv[2])
w1, c1 = clock()
conditions = store.facets()["conditions"]
with_data = conditions[conditions["has_query_data"]].sort_values(["n_systems", "n_tasks"], kind="stable")
row = with_data.iloc[-1]
instruction = None if row["instruction"] is None or row["instruction"] != row["instruction"] else bool(row["instruction"])
cond = Condition(row["benchmark"], row["metric"], row["setting"], instruction, row["precision"], row["tie_policy"])
w2, c2 = clock()
store.leaderboard(cond)
w3, c3 = clock()
print(json.dumps({"open": [w1 - w0, c1 - c0], "board": [w3 - w2, c3 - c2]}))
"""


def run_once(tree: Path, data: Path, cache: str | None) -> dict:
    env = dict(os.environ)
    env.pop("TIEBREAK_CACHE", None)
    if cache:
        env["TIEBREAK_CACHE"] = cache
    out = subprocess.run([sys.executable, "-c", CHILD, str(tree), str(data)], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tree", type=Path, default=ROOT)
    parser.add_argument("--cache", default=None, help="TIEBREAK_CACHE for the processes (default: none)")
    args = parser.parse_args()
    print(f"tree {args.tree}, TIEBREAK_CACHE {args.cache or '(none)'}, load average {os.getloadavg()[0]:.1f}")
    print("| data | open: wall / CPU s | first Leaderboard, 1,000 resamples: wall / CPU s |")
    print("|---|---:|---:|")
    for data in args.data:
        if args.cache:
            run_once(args.tree, data, args.cache)  # fills the cache, as an earlier start would have
        runs = [run_once(args.tree, data, args.cache) for _ in range(args.runs)]
        cell = {key: [statistics.median(r[key][i] for r in runs) for i in (0, 1)] for key in ("open", "board")}
        print(f"| {data} | {cell['open'][0]:.2f} / {cell['open'][1]:.2f} | {cell['board'][0]:.3f} / "
              f"{cell['board'][1]:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
