"""Dashboard benchmark, measured in real Chromium (Playwright + Debian's chromium).

For each data dir — the shipped ``data/`` and a synthetic one with ~10M per-query rows — it measures:

- **start → Leaderboard**: ``streamlit run`` spawned → ``/_stcore/health`` answers → the Leaderboard page is
  fully rendered (script idle and the "Top G" number on screen). Target ≤ 3 s. Timed for two browsers:
  *returning* (a browser that has opened the app before: its HTTP cache holds Streamlit's content-hashed,
  immutable scripts, and the server comes back on the same port, as when a developer restarts it) and *first
  visit* (a fresh browser context: empty cache, so the page also fetches ~130 scripts from the new server).
- **open on a running server**: a fresh browser context (empty cache) opens the Leaderboard of a server that
  has been up a while — what a collaborator clicking a shared link sees.
- **control change → re-rendered**: a different precision committed in the sidebar (a click on the option in its
  already opened and filtered option list) → URL updated and the script idle again. Opening the list and
  typing are not timed. When the default view offers a single precision (the shipped data: published fp32
  scores only), the setting is first switched, untimed, to one with several. On each fresh server
  (first-visit starts) every precision is visited ``--repeats`` times, each change as soon as the previous
  one is drawn: the first visit of each value is "cold" (its store query has not run in this server), later
  ones hit ``st.cache_data``. Then ``--pause-starts`` more fresh servers visit every precision once, each
  change after ``--pause`` seconds on the page, as a reader would.
- **the Streamlit floor**: the same start and changes for bench/floor_app.py, a one-selectbox, one-table
  Streamlit app that reads no data: what Streamlit and Chromium cost on this machine before any app work.
  Every dashboard figure is also printed as a ratio to the floor's (targets: first visit ≤ 1.25×, a change
  ≤ 1.5×).
- **another version** (``--compare-app LABEL=PATH``, repeatable): the same figures for another checkout's
  ``app.py`` (e.g. the commit before a change, from ``git archive``), served from its own folder with its
  own on-disk cache folder, in the same run.

Start is measured ``--starts`` times (a fresh server each time) and reported as the median, with one
intermediate mark: health.

    python bench/bench_app.py                       # shipped data + synthetic 10M rows (generated once)
    python bench/bench_app.py --skip-large          # shipped data only
    python bench/bench_app.py --large-dir /tmp/big  # reuse / place the synthetic dir there
    python bench/bench_app.py --starts 5            # median of 5 cold starts per data dir
    python bench/bench_app.py --pause 2 --pause-starts 3   # changes after 2 s on the page, 3 more servers
    python bench/bench_app.py --no-floor            # skip the Streamlit floor row
    python bench/bench_app.py --cache-skip intervals  # servers recompute every Leaderboard interval
    python bench/bench_app.py --compare-app before=/tmp/before/app.py   # and an older checkout, same run
    python bench/bench_app.py --skip-large --first-visits 7 --compare-app before=/tmp/before/app.py
        # only "start → rendered, first visit", the apps (and the floor) alternating, 7 rounds
    python bench/bench_app.py --skip-large --changes 4 --compare-app bare=/tmp/bare/app.py
        # only the control changes (first and cached), the apps (and the floor) alternating, 4 rounds
    python bench/bench_app.py --skip-large --changes 3 --floor-elements 20,40,60
        # and copies of the floor with 20, 40, 60 more captions: what one element costs a change

The servers use the store's on-disk caches as they are (``$TIEBREAK_CACHE``, evalcore/disk_cache.py): after
one earlier start on the same files they read the per-file sums, resample counts and Leaderboard intervals
back, as a restarted dashboard does. ``--cache-skip intervals`` makes every first visit of a precision compute
its interval (what a visitor sees right after new results were ingested).

Prints a markdown table.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "pages"))
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

from test_browser import CHROMIUM, CHROMIUM_ARGS, IDLE, combobox, free_port, start_server  # noqa: E402


def count_query_rows(data_dir: Path) -> int:
    from evalcore.store import Store

    cursor = Store(data_dir).cursor()
    try:
        return int(cursor.execute("SELECT count(*) FROM query_metrics").fetchone()[0])
    except Exception:
        return 0


def precisions_of(data_dir: Path) -> tuple[str, list[str]]:
    """(setting, precisions) for the Leaderboard's precision changes: the default setting when it offers
    several precisions of nDCG@10, else the first setting that does."""
    from evalcore.store import Store

    facets = Store(data_dir).facets()
    conditions = facets["conditions"]
    bench = "rar-b" if "rar-b" in facets["benchmarks"] else facets["benchmarks"][0]
    rows = conditions[(conditions["benchmark"] == bench) & (conditions["metric"] == "ndcg@10")]
    by_setting = {setting: sorted(group["precision"].unique().tolist()) for setting, group in rows.groupby("setting")}
    candidates = ["full"] + sorted(s for s in by_setting if s != "full")
    for setting in candidates:
        if len(by_setting.get(setting, [])) >= 2:
            return setting, by_setting[setting]
    return "full", by_setting.get("full", [])


_SCRIPT_TIMES = """
import json, statistics, sys, time
from pathlib import Path
from streamlit.testing.v1 import AppTest
script = sys.argv[1]
sys.argv = [script]  # the app reads --data from argv before the env var
at = AppTest.from_file(script, default_timeout=600)
t0 = time.perf_counter(); at.run(); first = time.perf_counter() - t0
rerun = []
for _ in range(3):
    t0 = time.perf_counter(); at.run(); rerun.append(time.perf_counter() - t0)
print(json.dumps([first, statistics.median(rerun)]))
"""


def script_times(data_dir: Path, app: Path) -> tuple[float, float]:
    """Python-side cost alone (no browser): the app's script, first run and a cached rerun, via AppTest in a
    new process started in the app's folder (so each version imports its own modules)."""
    import json
    import subprocess

    script = _main_script(app)
    env = dict(os.environ, TIEBREAK_DATA=str(data_dir))
    out = subprocess.run([sys.executable, "-c", _SCRIPT_TIMES, str(script)], cwd=app.parent, env=env,
                         capture_output=True, text=True, check=True).stdout
    return tuple(json.loads(out.strip().splitlines()[-1]))


def _main_script(app: Path) -> Path:
    """The script Streamlit runs for ``app``: its ``st.App``'s script (imported in a new process started in
    the app's folder)."""
    import subprocess

    out = subprocess.run([sys.executable, "-c", "import app; print(app.app.script_path)"], cwd=app.parent,
                         capture_output=True, text=True, check=True).stdout
    return (app.parent / out.strip().splitlines()[-1]).resolve()


IDLE_JS = f"document.querySelector({IDLE!r}) !== null"
RENDERED_JS = ("(() => { const m = document.querySelector(\"[data-testid='stDataFrame']\"); "
               f"return m !== null && m.getClientRects().length > 0 && {IDLE_JS}; }})()")
"""The first table is on screen and the script is idle (every page measured draws one: the Leaderboard's
ranking, the floor's ten rows). Checked on every animation frame (``polling="raf"``):
Playwright's own waits for a selector retry after 0, 20, 50, 100 and 100 ms and then only every 500 ms, which
rounded every figure of a page that takes longer than ~0.3 s up to the next half-second step."""


def _idle_after(page, url_fragment: str) -> None:
    """Wait until the URL holds ``url_fragment`` (written at the end of the rerun) and the script is idle,
    checked on every animation frame. The page's own ``location`` is read: Playwright's ``page.url`` can miss
    a query-string-only ``history`` update until the next one (seen with bench/floor_app.py)."""
    page.wait_for_function(f"fragment => (location.href + '&').includes(fragment) && {IDLE_JS}",
                           arg=url_fragment, polling="raf", timeout=300_000)


def _commit_precision(page, precision: str) -> float:
    """Open the Precision list and filter it (untimed), then time the click on the option → URL updated →
    script idle."""
    box = combobox(page, "Precision")
    box.scroll_into_view_if_needed()
    box.click()
    box.fill(precision)
    # the dashboard's labels carry the precision's kind on real runs: "bf16 (inference / scores stored)"
    option = page.get_by_role("option", name=re.compile(rf"^{re.escape(precision)}( \(.*\))?$")).first
    option.wait_for(timeout=60_000)
    t0 = time.perf_counter()
    # a click on the option, not Enter: typing "bf16" also lists "bf16+hps …", and Enter takes whichever the
    # list highlights first (the run timed out waiting for prec=bf16 after Enter had chosen bf16+hps)
    option.click()
    _idle_after(page, f"prec={precision.replace('+', '%2B')}&")
    return time.perf_counter() - t0


VIEWPORT = {"width": 1400, "height": 1000}


DASHBOARD_APP = ROOT / "app.py"
FLOOR_APP = ROOT / "bench" / "floor_app.py"


def floor_precisions() -> list[str]:
    """The floor app's PRECISIONS (read from its source: importing it would run a Streamlit script)."""
    import ast

    for node in ast.parse(FLOOR_APP.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "PRECISIONS":
            return list(ast.literal_eval(node.value))
    raise RuntimeError(f"no PRECISIONS in {FLOOR_APP}")


def _cold_start(context, data_dir: Path, log_path: Path, port: int | None = None, app: Path = DASHBOARD_APP,
                env: dict | None = None):
    """Spawn ``streamlit run`` and open the Leaderboard in a new tab of ``context``; returns (proc, base URL,
    page, health s, rendered s), times from the spawn. The tab is opened before the spawn, as a user's browser
    is already running; creating it is Playwright's cost, not the app's."""
    page = context.new_page()
    started = time.perf_counter()
    proc, base = start_server(data_dir, log_path, port, app=app, env=env,
                              cwd=ROOT if app.name == FLOOR_APP.name else app.parent)
    healthy = time.perf_counter() - started
    try:
        page.goto(base + "/")
        _rendered(page)
        rendered = time.perf_counter() - started
    except BaseException:
        _stop(proc)
        raise
    return proc, base, page, healthy, rendered


def _rendered(page) -> None:
    page.wait_for_function(RENDERED_JS, polling="raf", timeout=300_000)


def _open_running(browser, base: str) -> float:
    """A fresh context (empty cache) opens the Leaderboard of an already running server; seconds to rendered."""
    context = browser.new_context(viewport=VIEWPORT)
    try:
        page = context.new_page()
        t0 = time.perf_counter()
        page.goto(base + "/")
        _rendered(page)
        return time.perf_counter() - t0
    finally:
        context.close()


def _stop(proc) -> None:
    proc.terminate()
    proc.wait(timeout=20)


def measure(data_dir: Path, repeats: int, starts: int, log_dir: Path, pause: float = 0.0, pause_starts: int = 0,
            app: Path = DASHBOARD_APP, setting: str | None = None, precisions: list[str] | None = None,
            name: str | None = None, label: str = "dashboard", env: dict | None = None) -> dict:
    from playwright.sync_api import sync_playwright

    if setting is None:
        setting, precisions = precisions_of(data_dir)
    name = name or f"{label}, `{data_dir.name}/`"
    log_path = log_dir / f"bench_{label}_{app.stem}_{data_dir.name}.log"
    healths, rendered, returning, running = [], [], [], []
    cold, warm, paused = [], [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for start in range(starts + pause_starts):  # first visits: a fresh context (empty cache) per start
            context = browser.new_context(viewport=VIEWPORT)
            proc, base, page, health, done = _cold_start(context, data_dir, log_path, app=app, env=env)
            try:
                if start >= starts:  # a reader: every precision once, after `pause` s on the page
                    paused += _precision_changes(page, setting, precisions, 1, pause=pause)[0]
                    continue
                healths.append(health)
                rendered.append(done)
                start_cold, start_warm = _precision_changes(page, setting, precisions, repeats)
                cold += start_cold
                warm += start_warm
                running.append(_open_running(browser, base))
            finally:
                context.close()
                _stop(proc)
        # Returning browser: one context kept across restarts on one port; the first start fills its cache.
        context = browser.new_context(viewport=VIEWPORT)
        port = free_port()
        for start in range(starts + 1):
            proc, _, page, _, done = _cold_start(context, data_dir, log_path, port, app=app, env=env)
            page.close()
            _stop(proc)
            if start:
                returning.append(done)
        context.close()
        browser.close()
    return {
        "name": name, "app": app, "data_dir": data_dir,
        "data": str(data_dir), "rows": count_query_rows(data_dir) if app != FLOOR_APP else 0, "setting": setting,
        "paused": statistics.median(paused) if paused else float("nan"),
        "paused_max": max(paused) if paused else float("nan"), "paused_all": paused,
        "health": statistics.median(healths),
        "first": statistics.median(rendered), "first_all": rendered,
        "returning": statistics.median(returning), "returning_all": returning,
        "running": statistics.median(running), "running_all": running,
        "cold": statistics.median(cold) if cold else float("nan"),
        "cold_max": max(cold) if cold else float("nan"), "cold_all": cold,
        "warm": statistics.median(warm) if warm else float("nan"),
        "warm_max": max(warm) if warm else float("nan"), "n_changes": len(cold) + len(warm),
    }


def _offered_precisions(page) -> set[str]:
    """The precisions the Precision list offers now (labels may carry a kind: "bf16 (inference / storage)")."""
    box = combobox(page, "Precision")
    box.scroll_into_view_if_needed()
    box.click()
    page.get_by_role("option").first.wait_for(timeout=60_000)
    names = page.get_by_role("option").all_inner_texts()
    page.keyboard.press("Escape")
    return {name.split(" (")[0].strip() for name in names}


def _precision_changes(page, setting: str, precisions: list[str], repeats: int,
                       pause: float = 0.0) -> tuple[list[float], list[float]]:
    """Cycle through every precision ``repeats`` times, ``pause`` s after each render; returns (cold, cached)
    seconds per change."""
    cycle = [p for p in precisions if p != "fp32"] + ["fp32"]
    if len(precisions) < 2:
        return [], []
    if setting != "full":  # untimed: the default setting offers a single precision
        from ui.sidebar import SETTING_LABELS

        page.get_by_test_id("stSidebar").get_by_text(SETTING_LABELS.get(setting, setting), exact=True).click()
        _idle_after(page, f"setting={setting}&")
    offered = _offered_precisions(page)  # the sidebar offers only precisions with data under its other controls
    cycle = [p for p in cycle if p in offered]
    cold, warm = [], []
    seen: set[str] = {"fp32"}
    for _ in range(repeats):
        for precision in cycle:
            time.sleep(pause)  # reading the page (untimed)
            elapsed = _commit_precision(page, precision)
            (warm if precision in seen else cold).append(elapsed)
            seen.add(precision)
    return cold, warm


def _alternating_starts(apps: list[tuple[str, Path]], data_dir: Path, rounds: int, log_dir: Path, kind: str):
    """Every app once per round on a new server, opened by a fresh browser context (empty cache), the apps
    alternating so that the machine's drift hits them alike, and each round starting with the next app: the
    first start of a round measured ~0.03–0.09 s slower than the same code later in the round. Yields (label,
    app, page, start → rendered s); the server stops when the caller asks for the next start."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for round_ in range(rounds):
            for label, app in apps[round_ % len(apps):] + apps[:round_ % len(apps)]:
                env = dict(os.environ, TIEBREAK_CACHE=str(log_dir / f"cache-{label}"))
                context = browser.new_context(viewport=VIEWPORT)
                proc, _, page, _, done = _cold_start(context, data_dir, log_dir / f"{kind}_{label}.log", app=app,
                                                     env=env)
                try:
                    yield label, app, page, done
                finally:
                    context.close()
                    _stop(proc)
        browser.close()


def _load_line(rounds: int, data_dir: Path, note: str = "") -> str:
    load = os.getloadavg()
    return (f"\n{rounds} rounds on `{data_dir}`{note}; load average at the end {load[0]:.1f} / {load[1]:.1f} / "
            f"{load[2]:.1f}.")


def alternate_first_visits(apps: list[tuple[str, Path]], data_dir: Path, rounds: int, log_dir: Path) -> int:
    """``start → rendered, first visit`` for every app once per round (:func:`_alternating_starts`). Prints
    medians and ratios to the floor."""
    times: dict[str, list[float]] = {label: [] for label, _ in apps}
    for label, _, _, done in _alternating_starts(apps, data_dir, rounds, log_dir, "first"):
        times[label].append(done)
    floor = statistics.median(times["floor"])
    print(f"| app | start → rendered, first visit: median (all) (s) | ratio to the floor |\n|---|---:|---:|")
    for label, values in times.items():
        print(f"| {label} | {statistics.median(values):.2f} ({', '.join(f'{t:.2f}' for t in values)}) | "
              f"{statistics.median(values) / floor:.2f}× |")
    print(_load_line(rounds, data_dir))
    return 0


def alternate_changes(apps: list[tuple[str, Path]], data_dir: Path, rounds: int, log_dir: Path) -> int:
    """The control change, as :func:`measure` times it (a precision chosen in the sidebar → URL updated →
    script idle; every precision 3 times per server), for every app once per round on a new server
    (:func:`_alternating_starts`). Prints the medians of the first (cold) and the later (cached) changes and
    their ratios to the floor's."""
    setting, precisions = precisions_of(data_dir)
    times: dict[str, tuple[list[float], list[float]]] = {label: ([], []) for label, _ in apps}
    for label, app, page, _ in _alternating_starts(apps, data_dir, rounds, log_dir, "changes"):
        cold, cached = (_precision_changes(page, "full", floor_precisions(), 3) if app.name == FLOOR_APP.name
                        else _precision_changes(page, setting, precisions, 3))
        times[label][0].extend(cold)
        times[label][1].extend(cached)
    floor_cold, floor_cached = (statistics.median(values) for values in times["floor"])
    print("| app | control change, first time: median (s) | ratio to the floor | control change, cached: median "
          "(n) (s) | ratio to the floor |\n|---|---:|---:|---:|---:|")
    for label, (cold, cached) in times.items():
        print(f"| {label} | {statistics.median(cold):.3f} | {statistics.median(cold) / floor_cold:.2f}× | "
              f"{statistics.median(cached):.3f} ({len(cached)}) | {statistics.median(cached) / floor_cached:.2f}× |")
    print(_load_line(rounds, data_dir, f" (setting {setting})"))
    return 0


def floor_with_elements(count: int, folder: Path) -> Path:
    """A copy of the floor app (in ``folder``/floor-plus-COUNT/) that draws ``count`` more elements below its
    table: captions of a typical length whose text does not change with the precision, as most of a page's
    elements do not. Timed beside the floor, its changes show what one more element costs a change on this
    machine, whatever the app computes."""
    target = folder / f"floor-plus-{count}" / FLOOR_APP.name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(FLOOR_APP.read_text() + (
        f"for line in range({count}):  # added by bench_app.floor_with_elements\n"
        "    st.caption(f\"Line {line + 1}: an unchanged caption of about the length of a dashboard's notes.\")\n"))
    return target


def _labelled(spec: str) -> tuple[str, Path]:
    """``LABEL=PATH`` of ``--compare-app`` → (label, absolute path of that checkout's app.py)."""
    label, _, path = spec.partition("=")
    app = Path(path).expanduser().resolve()
    if not label or not app.is_file():
        raise SystemExit(f"--compare-app {spec!r}: expected LABEL=PATH to an app.py")
    return label, app


def compile_app_modules(roots: list[Path]) -> bool:
    """Write the ``.pyc`` files of the app's own modules, as the first start of a normal Python does; False if
    there was nothing to do. Where ``PYTHONDONTWRITEBYTECODE`` is set (this sandbox sets it), every server
    start would otherwise compile evalcore/ and ui/ from source (~0.1 s of the warm start) — a cost no
    second start of a real installation pays. Stale ``.pyc`` files are only ever ignored by Python."""
    import compileall

    if not sys.flags.dont_write_bytecode:
        return False
    for root in roots:
        for folder in ("evalcore", "ui", "pages", "views"):
            if (root / folder).is_dir():
                compileall.compile_dir(str(root / folder), quiet=1)
        compileall.compile_file(str(root / "app.py"), quiet=1)
    return True


def cpu_calibration() -> float:
    """Seconds for a fixed pure-Python loop (10M additions): this machine's speed at the moment, printed
    with the results. The same code measured 0.9–1.7 s here within one afternoon, and every figure above
    moved with it, so two runs compare only next to this number (and the Streamlit floor)."""
    started = time.perf_counter()
    total = 0
    for i in range(10_000_000):
        total += i
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT / "data")
    parser.add_argument("--large-dir", type=Path, default=Path("/tmp/tiebreak-bench-10M"))
    parser.add_argument("--large-rows", type=int, default=10_000_000)
    parser.add_argument("--skip-large", action="store_true")
    parser.add_argument("--repeats", type=int, default=3, help="precision cycles per data dir")
    parser.add_argument("--starts", type=int, default=3, help="cold starts per data dir (median reported)")
    parser.add_argument("--pause", type=float, default=2.0, help="seconds on the page before each paused change")
    parser.add_argument("--pause-starts", type=int, default=2, help="fresh servers for the paused changes (0: skip)")
    parser.add_argument("--no-floor", action="store_true", help="skip the Streamlit floor (bench/floor_app.py)")
    parser.add_argument("--cache-skip", default="", metavar="KINDS",
                        help="on-disk cache kinds the servers neither read nor write (TIEBREAK_CACHE_SKIP), "
                             "e.g. intervals")
    parser.add_argument("--first-visits", type=int, default=0, metavar="ROUNDS",
                        help="only time start → rendered for a first visit, every app once per round, alternating")
    parser.add_argument("--changes", type=int, default=0, metavar="ROUNDS",
                        help="only time control changes (first and cached), every app on a new server once per "
                             "round, alternating")
    parser.add_argument("--floor-elements", default="", metavar="N,N,...",
                        help="with --changes or --first-visits: also time copies of the floor drawing N more "
                             "(unchanging) captions each, e.g. 20,40,60: what each element of a page costs")
    parser.add_argument("--compare-app", action="append", default=[], metavar="LABEL=PATH",
                        help="also measure another checkout's app.py (repeatable), e.g. before=/tmp/before/app.py")
    args = parser.parse_args(argv)
    apps = [("dashboard", DASHBOARD_APP)] + [_labelled(spec) for spec in args.compare_app]
    if args.cache_skip:
        os.environ["TIEBREAK_CACHE_SKIP"] = args.cache_skip  # inherited by every server
    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} not found: apt-get install chromium", file=sys.stderr)
        return 2
    dirs = [args.data]
    if not args.skip_large:
        if not any(args.large_dir.glob("*.parquet")):
            import synthetic_data

            t0 = time.perf_counter()
            synthetic_data.write_large(args.large_dir, args.large_rows)
            print(f"generated {args.large_dir} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        dirs.append(args.large_dir)
    log_dir = ROOT / "bench" / "out"
    log_dir.mkdir(parents=True, exist_ok=True)
    compiled = compile_app_modules([app.parent for _, app in apps])
    if args.floor_elements and (args.first_visits or args.changes):
        apps += [(f"floor+{n}", floor_with_elements(int(n), log_dir)) for n in args.floor_elements.split(",")]
    if args.first_visits:
        return alternate_first_visits(apps + [("floor", FLOOR_APP)], dirs[0], args.first_visits, log_dir)
    if args.changes:
        return alternate_changes(apps + [("floor", FLOOR_APP)], dirs[0], args.changes, log_dir)
    load_before = os.getloadavg()
    calibration_before = cpu_calibration()
    results = []
    for data_dir in dirs:
        for label, app in apps:  # each version with its own on-disk cache folder, as its earlier starts left it
            env = dict(os.environ, TIEBREAK_CACHE=str(log_dir / f"cache-{label}"))
            result = measure(data_dir, args.repeats, args.starts, log_dir, args.pause, args.pause_starts, app=app,
                             label=label, env=env)
            result["script_first"], result["script_rerun"] = script_times(data_dir, app)
            results.append(result)
    floor = None
    if not args.no_floor:
        floor = measure(dirs[0], args.repeats, args.starts, log_dir, args.pause, args.pause_starts, app=FLOOR_APP,
                        setting="full", precisions=floor_precisions(), name="Streamlit floor (`bench/floor_app.py`)",
                        label="floor")
        floor["script_first"] = floor["script_rerun"] = float("nan")
        results.append(floor)
    print("| data | per-query rows | start → health (s) | start → Leaderboard rendered, returning browser: "
          "median (all) (s) | start → Leaderboard rendered, first visit: median (all) (s) | open on a running "
          "server, first visit (s) | control change, first visit, no pause: median / max (s) | control change, "
          f"first visit after {args.pause:g} s on the page: median / max (s) | control change, cached: median / max (s) | "
          "Python only: first run / rerun (s) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        def every(key):
            return ", ".join(f"{t:.2f}" for t in r[key])
        setting = "" if r["setting"] == "full" else f" (setting {r['setting']})"
        python_only = "—" if r["script_first"] != r["script_first"] else f"{r['script_first']:.2f} / {r['script_rerun']:.2f}"
        print(f"| {r['name']}{setting} | {r['rows']:,} | {r['health']:.2f} | "
              f"{r['returning']:.2f} ({every('returning_all')}) | {r['first']:.2f} ({every('first_all')}) | "
              f"{r['running']:.2f} | {r['cold']:.2f} / {r['cold_max']:.2f} | {r['paused']:.2f} / {r['paused_max']:.2f} | "
              f"{r['warm']:.2f} / {r['warm_max']:.2f} | {python_only} |")
    if floor is not None:
        print("\nRatios to the Streamlit floor of this run (targets: first visit ≤ 1.25×, a change ≤ 1.5×):\n")
        print("| app | start → rendered, returning | start → rendered, first visit | open on a running server | "
              "change, first visit, no pause | change, first visit after a pause | change, cached |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for r in results[:-1]:
            cells = [r[key] / floor[key] for key in ("returning", "first", "running", "cold", "paused", "warm")]
            print(f"| {r['name']} | " + " | ".join(f"{c:.2f}×" for c in cells) + " |")
    for r in results:
        def every(key):
            return ", ".join(f"{t:.2f}" for t in r[key])
        print(f"\nFirst-visit changes, {r['name']} (s): no pause {every('cold_all')}; after a pause {every('paused_all')}")
    load = os.getloadavg()
    print(f"\nMachine: {os.cpu_count()} CPUs, load average {load_before[0]:.1f} / {load_before[1]:.1f} / "
          f"{load_before[2]:.1f} (1/5/15 min) at the start of the run, {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} "
          f"at the end; CPU calibration (10M-step Python loop) {calibration_before:.2f} s at the start, "
          f"{cpu_calibration():.2f} s at the end. On-disk caches: "
          + (f"{args.cache_skip} skipped (TIEBREAK_CACHE_SKIP), the rest as left by earlier starts."
             if args.cache_skip else "as left by earlier starts (sums, resample counts, Leaderboard intervals).")
          + (" PYTHONDONTWRITEBYTECODE is set: the app's modules were byte-compiled once before the run, as "
             "a normal first start would have written them." if compiled else ""))
    print(f"Targets: start → Leaderboard ≤ 3 s; control change ≤ 0.5 s. Start = median of {args.starts} fresh "
          "servers (the server draws the default view once while the browser loads, ui/warm_start.py). "
          "Returning browser = one browser context kept across restarts on one port (its HTTP cache holds "
          "Streamlit's immutable scripts); first visit = a new context with an empty cache. Control change = a click on the option in the opened Precision list → URL updated and script idle (opening "
          "and typing untimed). First visit = a precision not yet shown by this server (its store query runs); "
          "cached = revisits "
          f"(st.cache_data). {results[0]['n_changes']} changes per dir without pause. Python only = the app script timed "
          "in-process with streamlit.testing (store load + queries + element building, in a process that has "
          "already imported streamlit); the rest of each browser figure is server start-up, websocket and "
          "Chromium rendering.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
