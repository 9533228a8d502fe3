"""What a rerun costs when nothing changed, per view (bench/RESULTS.md § Capacity).

Starts one ``streamlit run app.py`` of the served code under ``bench/rerun_probe.py``, optionally connects
``--idle`` other sessions (open tabs that do nothing), then one session opens every view of the navigation
and reruns it ``--reruns`` times with the same widget states (what a browser sends for "Rerun"). Prints the
script thread's CPU per rerun (median, min) and the garbage collector's share per view: the floor every action
on that view pays before it computes anything new. ``--cprofile`` also writes one merged profile per view
(``OUT/<view>.prof``; times include the profiler's overhead).

    python bench/rerun_floor.py --rev HEAD                 # this commit (git archive), shipped data
    python bench/rerun_floor.py --rev HEAD --idle 100      # with 100 other sessions connected
    python bench/rerun_floor.py --checkout /tmp/old --cprofile --out bench/out/floor-old
"""
from __future__ import annotations

import argparse
import asyncio
import json
import pstats
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import load_ws  # noqa: E402
from ws_session import Session  # noqa: E402


async def _rerun_views(url: str, probe: Path, reruns: int, idle: int) -> dict[str, tuple[int, int]]:
    others = [Session(url, timeout=120) for _ in range(idle)]
    for other in others:
        await other.open()
    session = Session(url, timeout=120)
    await session.open()
    marks = {}
    for page in session.tree.pages:
        name = page["url_pathname"] or "leaderboard"
        for _ in range(2):  # the view's first run computes its answers; the second is already a cached one
            await session.switch_page(page["page_script_hash"])
        first = len((probe / "runs.jsonl").read_text().splitlines())
        for _ in range(reruns):
            run = await session._rerun("same", query=session.tree.query_string, page_hash=session.tree.page_hash)
            if run.latency is None or run.errors:
                raise RuntimeError(f"{name}: {run.errors}")
        marks[name] = (first, first + reruns)
    await asyncio.gather(session.close(), *(other.close() for other in others))
    return marks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", help="serve this commit (git archive into a temp dir)")
    parser.add_argument("--checkout", type=Path, help="serve the app of this folder (default: this repository)")
    parser.add_argument("--data", type=Path, help="data folder (default: the served app's data/)")
    parser.add_argument("--reruns", type=int, default=6)
    parser.add_argument("--idle", type=int, default=0, help="other sessions connected meanwhile")
    parser.add_argument("--cprofile", action="store_true", help="write OUT/<view>.prof")
    parser.add_argument("--out", type=Path, default=HERE / "out" / "rerun-floor")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="tiebreak-floor-"))
    try:
        app_dir, source = load_ws.served_code(args.rev, args.checkout, work)
        probe = work / "probe"
        target = load_ws.start_direct(args.data or app_dir / "data", work, app_dir=app_dir,
                                      probe=[str(probe), *(["--cprofile"] if args.cprofile else [])])
        try:
            marks = asyncio.run(_rerun_views(target.url, probe, args.reruns, args.idle))
        finally:
            target.close()
        runs = [json.loads(line) for line in (probe / "runs.jsonl").read_text().splitlines()]
        print(f"{source}; {args.reruns} reruns per view with nothing changed, {args.idle} other sessions connected"
              + (" (cProfile on: CPU includes its overhead)" if args.cprofile else ""))
        print("| view | script CPU median ms | min ms | GC ms per run | of it full GC ms |")
        print("|---|---:|---:|---:|---:|")
        args.out.mkdir(parents=True, exist_ok=True)
        for name, (first, last) in marks.items():
            chosen = runs[first:last]
            cpu = [1000 * r["cpu"] for r in chosen]
            print(f"| {name} | {statistics.median(cpu):.1f} | {min(cpu):.1f} | "
                  f"{1000 * statistics.mean(r['gc'] for r in chosen):.1f} | "
                  f"{1000 * statistics.mean(r['gc_full'] for r in chosen):.1f} |")
            if args.cprofile:
                pstats.Stats(*[str(probe / f"run-{r['run']}.prof") for r in chosen]).dump_stats(
                    str(args.out / f"{name}.prof"))
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
