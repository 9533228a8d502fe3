"""Soak benchmark: N users for a long time through the hosting layout, then the users leave.

    python bench/soak.py --users 50 --minutes 30 --processes 4 --json bench/out/soak.json   # the benchmark
    python bench/soak.py --users 50 --minutes 3 --processes 4 --after-minutes 3              # a short check
    python bench/soak.py --users 50 --minutes 30 --memory-profile bench/out/memory           # where memory goes

The stack is ``bench/load_ws.py``'s (docs/hosting.md's layout on loopback: ``--processes`` × ``deploy/serve.sh``
with ``deploy/production.env`` behind nginx with ``deploy/nginx/tiebreak.conf``, a read-only copy of the data, one
``TIEBREAK_CACHE``), and so are the users (``bench/ws_session.py``, each thinking 2–5 s and then changing a
control, switching the view or clicking, as ``load_ws.py`` describes; the client is first compared with a real
Chromium on the same server unless ``--no-validate``). The served code: this tree, ``--checkout DIR`` or
``--rev REV`` (``git archive``).

1. **warm-up**, on each process directly: one session opens every view, then makes ``--warmup-actions``
   actions of the mix; then the **loaded baseline**: each app process's RSS with the data loaded, the
   default view and the warm-up's questions answered, no session open (median of ``--settle`` seconds of
   samples);
2. **load**: ``--users`` sessions open over ``--ramp`` seconds and act for ``--minutes``; every 5 s each
   process's RSS is sampled; every action is timed (rerun sent → ``script_finished``) and kept with the time
   it was sent;
3. **the users leave**: every websocket is closed; the processes are sampled for ``--after-minutes`` (by
   default Streamlit's ``server.disconnectedSessionTTL``, 120 s, plus a minute: a closed tab's session is kept
   that long for a reconnect).

The verdict (exit status 1 if any fails):

- **errors**: 0 (an action without ``script_finished`` within ``--timeout``, a run not finished successfully, a
  closed websocket, an exception box or the app's "could not be drawn" box, a traceback in a server log);
- **latency stays**: p95 of the actions sent in the last ``--window`` minutes ≤ 1.2 × p95 of the first
  ``--window`` minutes (default 5, or a third of a shorter run);
- **memory stays**: each process's RSS grows ≤ 5 % over the last ``--growth-window`` minutes (default 15, or half
  a shorter run): median of the samples in the window's first minute against its last minute;
- **memory is given back**: after the users left, each process's RSS (median of the last minute) is within
  20 % of its loaded baseline.

With ``--memory-profile DIR`` each app process runs under ``bench/memory_probe.py`` (tracemalloc and the
caches' own counts; ~1.5–2× slower, so its latencies are not the server's): snapshots at the baseline, after
``--profile-at`` minutes of load (default 0, 5 and the end), and after the users left, in ``DIR/<port>/``;
``python bench/memory_probe.py --compare A.tracemalloc B.tracemalloc`` names what grew between two.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import load_ws  # noqa: E402
from ws_session import Session  # noqa: E402

GROWTH_LIMIT, LATENCY_LIMIT, RETURN_LIMIT = 1.05, 1.2, 1.2


@dataclass
class Action:
    sent: float  # seconds since the load started
    latency: float | None
    kind: str
    errors: list[str]


@dataclass
class Samples:
    """RSS of each app process (MB) every ``interval`` seconds, with the phase it was taken in."""

    pids: list[int]
    interval: float = 5.0
    rows: list[tuple[float, str, list[float]]] = field(default_factory=list)  # (time, phase, MB per process)
    phase: str = "baseline"

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _one(self) -> list[float]:
        return [round(load_ws.rss_bytes([pid]) / 2**20, 1) for pid in self.pids]

    def _run(self) -> None:
        while not self._stop.is_set():
            self.rows.append((time.monotonic(), self.phase, self._one()))
            self._stop.wait(self.interval)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def between(self, start: float, stop: float, phase: str | None = None) -> list[list[float]]:
        return [mb for t, p, mb in self.rows if start <= t <= stop and (phase is None or p == phase)]


def _median_per_process(rows: list[list[float]]) -> list[float | None]:
    if not rows:
        return []
    return [round(statistics.median(col), 1) for col in zip(*rows)]


def p95(values: list[float]) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[94]


async def _user(session: Session, rng: random.Random, think: tuple[float, float], start: float, stop: float,
                out: list[Action]) -> None:
    await asyncio.sleep(max(0.0, start - time.monotonic()) + rng.uniform(0, think[1]))
    while time.monotonic() < stop and session.closed_reason is None:
        sent = time.monotonic() - start
        result = await load_ws.act(session, load_ws.choose_action(session, rng))
        out.append(Action(sent, result.latency, result.kind, list(result.errors)))
        pause = rng.uniform(*think)
        if time.monotonic() + pause >= stop:
            break
        await asyncio.sleep(pause)


def request_snapshot(profile_dirs: list[Path], label: str, trim: bool = False) -> None:
    for folder in profile_dirs:
        (folder / f"take-{label}{'-trim' if trim else ''}").touch()


def wait_snapshots(profile_dirs: list[Path], label: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all((f / f"{label}.json").exists() or (f / f"{label}.error").exists() for f in profile_dirs):
            return
        time.sleep(1)
    print(f"memory snapshot {label} not written within {timeout:.0f} s", flush=True)


async def soak(target: load_ws.Target, args, samples: Samples, profile_dirs: list[Path]) -> dict:
    users, minutes = args.users, args.minutes
    think = tuple(float(x) for x in args.think.split(","))
    actions: list[Action] = []
    open_errors: list[str] = []
    tracebacks_before = load_ws.tracebacks(target)

    async def opening(i: int) -> Session:
        await asyncio.sleep(args.ramp * i / max(1, users))
        session = Session(target.url, timeout=args.timeout)
        result = await session.open()
        open_errors.extend(f"open: {e}" for e in result.errors)
        return session

    samples.phase = "load"
    opened_at = time.monotonic()
    sessions = await asyncio.gather(*(opening(i) for i in range(users)))
    start = time.monotonic()
    stop = start + 60 * minutes
    rngs = [random.Random(f"soak/{args.seed}/{i}") for i in range(users)]
    tasks = [asyncio.create_task(_user(s, rng, think, start, stop, actions)) for s, rng in zip(sessions, rngs)]
    cpu0 = load_ws.cpu_seconds(target.app_pids)
    machine0 = load_ws.machine_busy_seconds()
    marks = sorted({m for m in args.profile_at if 0 <= m < minutes})
    for mark in marks:
        await asyncio.sleep(max(0.0, start + 60 * mark - time.monotonic()))
        if profile_dirs:
            request_snapshot(profile_dirs, f"load-{mark:g}min")
        print(f"{mark:g} min: {len(actions)} actions, RSS MB {samples._one()}", flush=True)
    while time.monotonic() < stop:
        await asyncio.sleep(min(60.0, stop - time.monotonic()))
        done = [a for a in actions if a.latency is not None]
        print(f"{(time.monotonic() - start) / 60:.1f} min: {len(actions)} actions, p95 so far "
              f"{p95([a.latency for a in done]) or 0:.3f} s, errors {sum(bool(a.errors) for a in actions)}, "
              f"RSS MB {samples._one()}", flush=True)
    cpu = load_ws.cpu_seconds(target.app_pids) - cpu0
    machine = load_ws.machine_busy_seconds() - machine0
    if profile_dirs:
        request_snapshot(profile_dirs, f"load-{minutes:g}min")
    await asyncio.gather(*tasks)
    samples.phase = "after"
    left_at = time.monotonic()
    await asyncio.gather(*(s.close() for s in sessions))
    if profile_dirs:
        wait_snapshots(profile_dirs, f"load-{minutes:g}min")
    await asyncio.sleep(60 * args.after_minutes)
    after_end = time.monotonic()
    if profile_dirs:
        request_snapshot(profile_dirs, "after", trim=True)
        wait_snapshots(profile_dirs, "after")
    return {"actions": actions, "open_errors": open_errors, "start": start, "stop": stop, "opened_at": opened_at,
            "left_at": left_at, "after_end": after_end, "cpu": cpu, "machine": machine,
            "tracebacks": load_ws.tracebacks(target) - tracebacks_before}


def verdict(run: dict, baseline: list[float], samples: Samples, args) -> dict:
    window = 60 * (args.window if args.window else min(5.0, args.minutes / 3))
    growth = 60 * (args.growth_window if args.growth_window else min(15.0, args.minutes / 2))
    total = 60 * args.minutes
    actions: list[Action] = run["actions"]
    answered = [a for a in actions if a.latency is not None]
    first = [a.latency for a in answered if a.sent < window]
    last = [a.latency for a in answered if a.sent >= total - window]
    errors = [f"{a.kind}: {e}" for a in actions for e in a.errors] + run["open_errors"]
    start, stop = run["start"], run["stop"]
    growth_first = _median_per_process(samples.between(stop - growth, stop - growth + 60, "load"))
    growth_last = _median_per_process(samples.between(stop - 60, stop, "load"))
    after = _median_per_process(samples.between(run["after_end"] - 60, run["after_end"], "after"))
    peak = [max(col) for col in zip(*samples.between(start, stop, "load"))] if samples.rows else []
    p95_first, p95_last = p95(first), p95(last)
    ratio = p95_last / p95_first if p95_first and p95_last else None
    growths = [round(b / a, 3) if a and b else None for a, b in zip(growth_first, growth_last)]
    returns = [round(c / a, 3) if a and c else None for a, c in zip(baseline, after)]
    served = len(answered)
    checks = {
        "errors": {"value": len(errors) + run["tracebacks"], "limit": 0,
                   "ok": len(errors) + run["tracebacks"] == 0},
        "p95_last_over_first": {"value": round(ratio, 3) if ratio else None, "limit": LATENCY_LIMIT,
                                "ok": ratio is not None and ratio <= LATENCY_LIMIT},
        "rss_growth_last_window": {"value": growths, "limit": GROWTH_LIMIT,
                                   "ok": bool(growths) and all(g is not None and g <= GROWTH_LIMIT for g in growths)},
        "rss_after_over_baseline": {"value": returns, "limit": RETURN_LIMIT,
                                    "ok": bool(returns) and all(r is not None and r <= RETURN_LIMIT for r in returns)},
    }
    return {
        "users": args.users, "minutes": args.minutes, "processes": args.processes,
        "window_min": round(window / 60, 2), "growth_window_min": round(growth / 60, 2),
        "actions": len(actions), "answered": served, "actions_per_s": round(served / total, 2),
        "p50_s": round(statistics.median(a.latency for a in answered), 3) if answered else None,
        "p95_s": round(p95([a.latency for a in answered]), 3) if answered else None,
        "p95_first_s": round(p95_first, 3) if p95_first else None,
        "p95_last_s": round(p95_last, 3) if p95_last else None,
        "server_cpu_ms_per_action": round(1000 * run["cpu"] / served, 1) if served else None,
        "server_cores_busy": round(run["cpu"] / total, 2),
        "others_cores": round((run["machine"] - run["cpu"]) / total, 2),
        "rss_baseline_mb": baseline, "rss_peak_mb": peak,
        "rss_growth_window_start_mb": growth_first, "rss_load_end_mb": growth_last, "rss_after_mb": after,
        "error_examples": errors[:8], "server_tracebacks": run["tracebacks"],
        "checks": checks, "ok": all(c["ok"] for c in checks.values()),
        "p95_by_minute_s": per_minute(answered, args.minutes),
    }


def per_minute(answered: list[Action], minutes: float) -> list[float | None]:
    out = []
    for m in range(int(minutes + 0.999)):
        values = [a.latency for a in answered if m * 60 <= a.sent < (m + 1) * 60]
        out.append(round(p95(values), 3) if values else None)
    return out


def report(result: dict) -> str:
    c = result["checks"]
    lines = [
        f"## soak: {result['users']} users × {result['minutes']:g} min, {result['processes']} processes — "
        f"{'PASS' if result['ok'] else 'FAIL'}", "",
        "| check | value | limit | |", "|---|---|---|---|",
        f"| errors | {c['errors']['value']} | 0 | {'ok' if c['errors']['ok'] else 'FAIL'} |",
        f"| p95 last {result['window_min']:g} min / first {result['window_min']:g} min | "
        f"{result['p95_last_s']} / {result['p95_first_s']} s = {c['p95_last_over_first']['value']} | ≤ 1.2 | "
        f"{'ok' if c['p95_last_over_first']['ok'] else 'FAIL'} |",
        f"| RSS growth over the last {result['growth_window_min']:g} min, per process | "
        f"{' / '.join(map(str, c['rss_growth_last_window']['value']))} | ≤ 1.05 | "
        f"{'ok' if c['rss_growth_last_window']['ok'] else 'FAIL'} |",
        f"| RSS after the users left / loaded baseline, per process | "
        f"{' / '.join(map(str, c['rss_after_over_baseline']['value']))} | ≤ 1.2 | "
        f"{'ok' if c['rss_after_over_baseline']['ok'] else 'FAIL'} |", "",
        f"actions answered {result['answered']} ({result['actions_per_s']}/s), p50 {result['p50_s']} s, "
        f"p95 {result['p95_s']} s; server CPU {result['server_cpu_ms_per_action']} ms/action, "
        f"{result['server_cores_busy']} cores; other processes {result['others_cores']} cores; "
        f"calibration {result.get('calibration_s')} s.",
        f"RSS MB per process: baseline {result['rss_baseline_mb']}, peak {result['rss_peak_mb']}, "
        f"end of load {result['rss_load_end_mb']}, after {result['rss_after_mb']}.",
        f"p95 per minute (s): {result['p95_by_minute_s']}",
    ]
    if result["error_examples"]:
        lines.append(f"errors: {result['error_examples']}")
    return "\n".join(lines)


def start_target(args, app_dir: Path, data_dir: Path, work: Path, profile_root: Path | None) -> tuple:
    """The stack, and each app process's probe folder (empty without --memory-profile)."""
    if not profile_root:
        return load_ws.start_stack(data_dir, work, args.processes, app_dir=app_dir), []
    proxy_stack = load_ws._proxy_stack(app_dir)
    wrapper = work / "python-with-probe"
    profile_root.mkdir(parents=True, exist_ok=True)
    frames = ["--frames", str(args.frames)] if args.frames else ["--no-tracemalloc"]
    wrapper.write_text("#!/bin/sh\n"
                       f'exec "{sys.executable}" "{HERE / "memory_probe.py"}" "{profile_root}/$STREAMLIT_SERVER_PORT" '
                       f'{" ".join(frames)} -- "$@"\n')
    wrapper.chmod(0o755)
    try:
        stack = proxy_stack.start(work, data_dir, processes=args.processes, python=str(wrapper))
    except TypeError as exc:
        raise SystemExit(f"the served tree's tests/e2e/proxy_stack.py cannot start another python ({exc}); "
                         "profile this tree instead") from exc
    target = load_ws.target_of(proxy_stack, stack, args.processes)
    return target, [profile_root / str(port) for port in stack.app_ports]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--minutes", type=float, default=30.0, help="minutes of load")
    parser.add_argument("--after-minutes", type=float, default=3.0,
                        help="minutes sampled after the users left (a closed tab's session is kept 2 min)")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--think", default="2,5", help="think time between actions, uniform LO,HI seconds")
    parser.add_argument("--ramp", type=float, default=20.0, help="seconds over which the users arrive")
    parser.add_argument("--window", type=float, default=0.0, help="minutes compared at the start and the end "
                        "(default 5, or a third of a shorter run)")
    parser.add_argument("--growth-window", type=float, default=0.0, help="minutes over which RSS may grow 5%% "
                        "(default 15, or half a shorter run)")
    parser.add_argument("--settle", type=float, default=20.0, help="seconds of baseline samples after the warm-up")
    parser.add_argument("--warmup-actions", type=int, default=12)
    parser.add_argument("--rev", help="serve this commit (git archive), e.g. HEAD")
    parser.add_argument("--checkout", type=Path, help="serve the app of this folder (default: this tree)")
    parser.add_argument("--data", type=Path, help="data folder (default: the served app's data/)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=180.0)
    parser.add_argument("--no-validate", action="store_true", help="skip the comparison with Chromium")
    parser.add_argument("--memory-profile", type=Path, help="run each process under bench/memory_probe.py, "
                        "snapshots in this folder")
    parser.add_argument("--profile-at", default="0,5", help="minutes of load at which to take snapshots "
                        "(the end is always taken)")
    parser.add_argument("--frames", type=int, default=12, help="tracemalloc frames (0 = no tracemalloc, only "
                        "the caches' counts)")
    parser.add_argument("--json", type=Path, help="write the figures here as well")
    parser.add_argument("--logs", type=Path, default=ROOT / "bench" / "out" / "soak-logs",
                        help="where the app processes' logs are copied at the end")
    args = parser.parse_args(argv)
    args.profile_at = [float(x) for x in args.profile_at.split(",") if x.strip()]

    work = Path(tempfile.mkdtemp(prefix="tiebreak-soak-"))
    try:
        app_dir, source = load_ws.served_code(args.rev, args.checkout, work)
        data_dir = args.data or app_dir / "data"
        calibration = calibrate()
        print(f"serving {source}; data {data_dir}; calibration {calibration:.2f} s", flush=True)
        stack_dir = work / "stack"
        stack_dir.mkdir()
        target, profile_dirs = start_target(args, app_dir, data_dir, stack_dir,
                                            args.memory_profile.resolve() if args.memory_profile else None)
        try:
            if not args.no_validate:
                from ws_validate import validate

                validation = asyncio.run(validate(target.url, timeout=args.timeout))
                print(validation.text(), flush=True)
                if not validation.ok:
                    return 1
            for url in direct_urls(target):  # every process the same warm-up, reached directly (not by cookie)
                warm = asyncio.run(warm_up(url, args.warmup_actions, args.seed, args.timeout))
                if warm:
                    print(f"warm-up errors on {url}: {warm[:5]}", flush=True)
            samples = Samples(target.app_pids)
            samples.start()
            time.sleep(args.settle)
            baseline = _median_per_process([mb for _, p, mb in samples.rows if p == "baseline"])
            print(f"loaded baseline RSS MB per process: {baseline}", flush=True)
            if profile_dirs:
                request_snapshot(profile_dirs, "baseline")
                wait_snapshots(profile_dirs, "baseline")
            run = asyncio.run(soak(target, args, samples, profile_dirs))
            samples.stop()
            result = verdict(run, baseline, samples, args)
        finally:
            target.close()
            keep_logs(target, args.logs)
        result.update(code=source, date=time.strftime("%Y-%m-%d %H:%M"), calibration_s=round(calibration, 2),
                      calibration_end_s=round(calibrate(), 2), load_avg=os.getloadavg()[0], argv=sys.argv[1:],
                      rss_samples=[(round(t - run["start"], 1), p, mb) for t, p, mb in samples.rows])
        print(report(result), flush=True)
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(result, indent=1, default=str))
        return 0 if result["ok"] else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


async def warm_up(url: str, actions: int, seed: int, timeout: float) -> list[str]:
    """One session that opens every view, then ``actions`` actions of the mix: each process has imported what
    its pages need, loaded the store and answered each view's first questions (the *loaded* baseline)."""
    errors: list[str] = []
    session = Session(url, timeout=timeout)
    result = await session.open()
    errors.extend(result.errors)
    for page in list(session.tree.pages):
        if session.closed_reason is None and page["page_script_hash"] != session.tree.page_hash:
            errors.extend((await session.switch_page(page["page_script_hash"])).errors)
    rng = random.Random(f"warm/{seed}")
    for _ in range(actions):
        if session.closed_reason is not None:
            break
        errors.extend((await load_ws.act(session, load_ws.choose_action(session, rng))).errors)
    await session.close()
    return errors


def keep_logs(target: load_ws.Target, folder: Path) -> None:
    """Copy the app processes' logs (tracebacks of errors, incident ids) to ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for log in target.logs:
        if log.exists():
            shutil.copy(log, folder / log.name)
    print(f"server logs in {folder}", flush=True)


def direct_urls(target: load_ws.Target) -> list[str]:
    """Each app process's own address (behind nginx: its port, under the same prefix)."""
    if not target.metrics_urls:
        return [target.url]
    return [url.rsplit("_stcore/", 1)[0] for url in target.metrics_urls]


def calibrate() -> float:
    """bench/bench_app.py's calibration (a 10M-step Python loop, seconds): :func:`load_ws.calibrate`."""
    return load_ws.calibrate()


if __name__ == "__main__":
    raise SystemExit(main())
