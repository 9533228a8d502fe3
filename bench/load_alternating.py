"""Capacity of two or more trees in alternating runs: ``bench/load_ws.py`` for each revision in turn, ``--rounds``
times, each round starting with the next revision, so that the machine's drift hits them alike.

    python bench/load_alternating.py --revs a6485c4,HEAD --sessions 50 --rounds 3 --processes 4
    python bench/load_alternating.py --revs main,HEAD --sessions 50,100 --rounds 2 --duration 75

Every run is a whole ``load_ws.py --rev REV --no-validate`` (a fresh stack per number of users, the same seed),
preceded by the calibration of ``bench/bench_app.py`` (a 10M-step Python loop: the machine's speed at that
moment). The table gives, per revision and number of users, each run's p95 and the server's CPU per action with
the calibration beside it, and CPU per action divided by the calibration (comparable across machines: a slower
machine has both larger). Raw JSON per run in ``--out`` (default ``bench/out/alternating``). The client is
validated against Chromium once, on the first run (``--validate``) — it is the same for every tree.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from soak import calibrate  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--revs", required=True, help="comma list of revisions (git archive of each)")
    parser.add_argument("--sessions", default="50")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--validate", action="store_true", help="compare the client with Chromium on run 1")
    parser.add_argument("--out", type=Path, default=HERE / "out" / "alternating")
    args = parser.parse_args(argv)
    revs = [r.strip() for r in args.revs.split(",") if r.strip()]
    args.out.mkdir(parents=True, exist_ok=True)
    rows: dict[tuple[str, int], list[dict]] = {}
    failed = False
    run = 0
    for round_number in range(args.rounds):
        order = revs[round_number % len(revs):] + revs[:round_number % len(revs)]
        for rev in order:
            run += 1
            out = args.out / f"run{run:02d}-{rev.replace('/', '_')}.json"
            calibration = calibrate()
            command = [sys.executable, str(HERE / "load_ws.py"), "--rev", rev, "--sessions", args.sessions,
                       "--processes", str(args.processes), "--duration", str(args.duration), "--json", str(out)]
            if not (args.validate and run == 1):
                command.append("--no-validate")
            print(f"run {run}: {rev}, calibration {calibration:.2f} s", flush=True)
            done = subprocess.run(command)
            failed |= done.returncode != 0
            if not out.exists():
                continue
            for step in json.loads(out.read_text())["steps"]:
                step["calibration_s"] = round(calibration, 2)
                rows.setdefault((rev, step["sessions"]), []).append(step)
    lines = ["| tree | users | p95 per run, s | server CPU ms/action per run | calibration per run, s | "
             "CPU per action / calibration (median) | errors |", "|---|---:|---|---|---|---:|---:|"]
    for (rev, users), steps in sorted(rows.items(), key=lambda kv: (kv[0][1], revs.index(kv[0][0]))):
        ratios = [s["server_cpu_ms_per_action"] / 1000 / s["calibration_s"] for s in steps
                  if s.get("server_cpu_ms_per_action")]
        lines.append(f"| {rev} | {users} | {', '.join(str(s['p95_s']) for s in steps)} | "
                     f"{', '.join(str(s['server_cpu_ms_per_action']) for s in steps)} | "
                     f"{', '.join(str(s['calibration_s']) for s in steps)} | "
                     f"{statistics.median(ratios):.3f} | {sum(s['errors'] for s in steps)} |" if ratios else
                     f"| {rev} | {users} | — | — | — | — | — |")
    table = "\n".join(lines)
    print(f"\n{time.strftime('%Y-%m-%d %H:%M')}\n{table}")
    (args.out / "table.md").write_text(table + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
