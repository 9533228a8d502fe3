"""What a board's uncertainty costs: the default board (RAR-b · full · ndcg@10, 145 ranked × 17 tasks, 203
systems in all), R2MED's (97 × 8) and the per-query MCR board (8 × 8 tasks, 21k queries), with and without both
lenses (evalcore.uncertainty), in one run.

- ``Store.leaderboard``: uncertainty=False (no interval, rank range, tier or test) against the default —
  the engine's share of a first visit;
- ``evalcore leaderboard`` end to end (a new process: imports, store load, board, printing), default output;
  target: under 2 s.

    python bench/bench_board_ranges.py [--repeats 7]

Prints a markdown table of medians (seconds).
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def median_time(action, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--data", type=Path, default=ROOT / "data")
    args = parser.parse_args()
    from evalcore.store import Condition, Store

    store = Store(args.data)
    rows = ["| what | without uncertainty | with both lenses | added |", "|---|---|---|---|"]
    for label, cond in (("Store.leaderboard, RAR-b full (145 × 17)", Condition("rar-b", instruction=None)),
                        ("Store.leaderboard, R2MED (97 × 8)", Condition("r2med", instruction=None)),
                        ("Store.leaderboard, RAR-b MCR per-query (8 × 8)",
                         Condition("rar-b", "p@1", "mcr", instruction=None))):
        store.leaderboard(cond, uncertainty=False)  # warm DuckDB
        off = median_time(lambda: store.leaderboard(cond, uncertainty=False), args.repeats)
        on = median_time(lambda: store.leaderboard(cond), args.repeats)
        rows.append(f"| {label} | {off:.3f} | {on:.3f} | {on - off:+.3f} |")
    command = [sys.executable, "-m", "evalcore", "leaderboard", "--benchmark", "rar-b", "--data", str(args.data)]
    took = median_time(lambda: subprocess.run(command, check=True, capture_output=True, cwd=ROOT), args.repeats)
    rows.append(f"| `evalcore leaderboard --benchmark rar-b` (203 systems), new process | | {took:.2f} | |")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
