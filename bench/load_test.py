"""Bounded load test of the dashboard: loopback only, stops by itself.

Starts ``streamlit run app.py`` on a free 127.0.0.1 port with a data folder (default: the shipped ``data/``),
then drives N concurrent Chromium pages (Playwright, one browser context each, so N Streamlit sessions) for
D seconds. Every session repeats random actions:

- ``url``: open a random URL (random page, benchmark, metric, setting, precision, instruction; now and then a
  hostile parameter: unknown key, repeated key, markup, 10 kB value) — a fresh session each time;
- ``select``: pick another option in a random sidebar selectbox;
- ``radio``: pick another option of a sidebar radio;
- ``page``: switch page through the sidebar navigation.

Re-render time = from the action to ``[data-testid='stApp'][data-test-script-state='notRunning']`` after at
least one script run began (counted by a MutationObserver installed before any page script). Errors counted:
exception boxes (``stException``), the app's "could not be drawn" boxes, dialogs, browser page errors, actions that
did not finish within the timeout, and tracebacks in the server log. The server's RSS (process + children,
psutil) is sampled every 0.25 s. Prints a markdown table; ``--json`` also writes the figures.

    python bench/load_test.py                      # 20 sessions, 60 s, shipped data
    python bench/load_test.py --sessions 3 --duration 10 --data tests/... --json out.json

Exit status 0 when no error was counted, 1 otherwise.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("TIEBREAK_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
PAGES = ["", "ties-and-precision", "rank-flips", "instructions", "mcr-vs-full", "compare"]
HOSTILE_PARAMS = [
    {"bench": "x' OR '1'='1"}, {"metric": "<script>alert(1)</script>"}, {"unknown_key": "1"},
    {"prec": "a" * 10_000}, {"sys": ["'; DROP TABLE systems; --"] * 3}, {"setting": ["full", "mcr"]},
]
# counts every change of the app's script state (installed again by every navigation)
OBSERVER_JS = """
(() => {
  window.__tbChanges = 0;
  window.__tbDocument = Math.random();  // tells a full reload (a link followed as a navigation) apart
  // watch the whole document, not one element: a page switch may mount a new stApp
  new MutationObserver((records) => { window.__tbChanges += records.length; })
    .observe(document, {subtree: true, attributes: true, attributeFilter: ["data-test-script-state"]});
  // elements added to or removed from the main area: a page switch always replaces them. Under heavy load
  // the browser can receive a whole run in one batch and React then commits "running" and "notRunning"
  // together, so the script-state attribute never visibly changes; the new page's elements still do.
  window.__tbMain = 0;
  new MutationObserver((records) => {
    window.__tbMain += records.filter((r) => r.target.closest && r.target.closest("[data-testid='stMain']")).length;
  }).observe(document, {subtree: true, childList: true});
  // messages from the server: in the batched case above, a rerun of a sidebar widget may change neither the
  // state attribute nor (identical output) the main area; its messages still arrive. A run counts as done
  // once messages came after the action and then none for 300 ms.
  window.__tbFrames = 0;
  window.__tbLastFrame = 0;
  const NativeWebSocket = window.WebSocket;
  window.WebSocket = class extends NativeWebSocket {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", () => { window.__tbFrames += 1; window.__tbLastFrame = performance.now(); });
    }
  };
})();
"""
SETTLED_JS = """
([n, doc, main, pageSwitch, frames]) => {
  const app = document.querySelector("[data-testid='stApp']");
  const sameDocument = window.__tbDocument === doc;
  const quietAfterMessages = window.__tbFrames > frames && performance.now() - window.__tbLastFrame > 300;
  const ran = sameDocument ? (window.__tbChanges > n || (pageSwitch && window.__tbMain > main) || quietAfterMessages)
                           : window.__tbChanges > 0;
  return !!app && ran && app.getAttribute("data-test-script-state") === "notRunning";
}
"""
BEFORE_JS = "[window.__tbChanges, window.__tbDocument, window.__tbMain, false, window.__tbFrames]"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``streamlit run app.py`` on 127.0.0.1:<free port>; stopped (terminate, then kill) on exit."""

    def __init__(self, data_dir: Path, log_path: Path, start_timeout: float = 90):
        self.data_dir, self.log_path, self.start_timeout = data_dir, log_path, start_timeout
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> "Server":
        self._log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port", str(self.port),
             "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false",
             "--server.fileWatcherType", "none", "--", "--data", str(self.data_dir)],
            cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"streamlit exited with {self.process.returncode}; see {self.log_path}")
            try:
                with urllib.request.urlopen(self.base + "/_stcore/health", timeout=1) as response:
                    if response.status == 200:
                        return self
            except OSError:
                time.sleep(0.2)
        self.__exit__(None, None, None)
        raise RuntimeError(f"streamlit not healthy after {self.start_timeout:.0f} s; see {self.log_path}")

    def __exit__(self, *exc) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)
        self._log.close()


class RssSampler(threading.Thread):
    """Samples RSS of a process and its children every ``interval`` s until stopped; keeps the peak."""

    def __init__(self, pid: int, interval: float = 0.25):
        super().__init__(daemon=True)
        import psutil

        self._process = psutil.Process(pid)
        self.interval, self.peak, self.first, self.last, self.samples = interval, 0, 0, 0, 0
        self._stop_event = threading.Event()

    def rss(self) -> int:
        import psutil

        total = 0
        try:
            for proc in [self._process, *self._process.children(recursive=True)]:
                try:
                    total += proc.memory_info().rss
                except psutil.Error:
                    pass
        except psutil.Error:
            pass
        return total

    def run(self) -> None:
        while not self._stop_event.is_set():
            value = self.rss()
            self.first = self.first or value
            self.last = value
            self.peak = max(self.peak, value)
            self.samples += 1
            self._stop_event.wait(self.interval)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=5)


@dataclass
class Figures:
    sessions: int
    duration: float
    times: dict[str, list[float]] = field(default_factory=dict)  # action kind -> re-render seconds
    exception_boxes: int = 0
    app_error_boxes: int = 0
    dialogs: int = 0
    page_errors: int = 0
    timeouts: int = 0
    failed_actions: int = 0
    server_tracebacks: int = 0
    rss_start: int = 0
    rss_peak: int = 0
    rss_end: int = 0
    rss_samples: int = 0
    error_examples: list[str] = field(default_factory=list)

    @property
    def actions(self) -> int:
        return sum(len(v) for v in self.times.values())

    @property
    def errors(self) -> int:
        return (self.exception_boxes + self.app_error_boxes + self.dialogs + self.page_errors + self.timeouts + self.failed_actions
                + self.server_tracebacks)

    def note(self, text: str) -> None:
        if len(self.error_examples) < 10:
            self.error_examples.append(text[:900])


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q * (len(ordered) - 1)))))]


def url_options(data_dir: Path) -> list[dict]:
    """Valid combinations of the shared sidebar's URL values, from the store's facets."""
    from evalcore.store import Store

    facets = Store(data_dir).facets()
    combos = []
    for bench, info in facets["by_benchmark"].items():
        for metric in info["metrics"]:
            for setting in info["settings"]:
                for prec in info["precisions"]:
                    combos.append({"bench": bench, "metric": metric, "setting": setting, "prec": prec})
    return combos or [{}]


async def settle(page, before: list | None, timeout_ms: float) -> None:
    """Wait until a script run that began after ``before`` (from BEFORE_JS; None = a new document) ended."""
    await page.wait_for_function(SETTLED_JS, arg=before or [0, None, 0, False, 0], timeout=timeout_ms, polling=50)


async def count_errors(page, figures: Figures, where: str) -> None:
    exceptions = await page.locator("[data-testid='stException']").count()
    app_errors = await page.locator("[data-testid='stAlert']", has_text="could not be drawn").count()
    dialogs = await page.locator("[role='dialog']").count()  # e.g. Streamlit's "Page not found"
    if dialogs:
        figures.dialogs += dialogs
        figures.note(f"{where}: dialog: " + (await page.locator("[role='dialog']").first.inner_text())[:200])
        await page.keyboard.press("Escape")
    if exceptions:
        figures.exception_boxes += exceptions
        figures.note(f"{where}: {exceptions} exception box(es): "
                     + (await page.locator("[data-testid='stException']").first.inner_text())[:200])
    if app_errors:
        figures.app_error_boxes += app_errors
        figures.note(f"{where}: 'could not be drawn' box")


async def act(page, rng: random.Random, base: str, combos: list[dict], timeout_ms: float, doing: dict) -> str | None:
    """Do one random action; returns its kind, or None when nothing to do (no such control here).
    ``doing`` says what is being done (for the error report when it times out)."""
    kind = rng.choices(["url", "select", "radio", "page"], weights=[3, 4, 2, 2])[0]
    doing.clear()
    doing["kind"] = kind
    if kind == "url":
        params = dict(rng.choice(combos))
        params["instr"] = rng.choice(["any", "with", "without"])
        if rng.random() < 0.15:
            params.update(rng.choice(HOSTILE_PARAMS))
        doing["url"] = f"/{rng.choice(PAGES)}?{urlencode(params, doseq=True)}"[:200]
        await page.goto(base + doing["url"], wait_until="commit")
        await settle(page, None, timeout_ms)
        return kind
    sidebar = page.locator("[data-testid='stSidebar']")
    if kind == "select":
        boxes = sidebar.locator("[data-testid='stSelectbox'] input[role='combobox']:visible")
        n = await boxes.count()
        if not n:
            return None
        before = await page.evaluate(BEFORE_JS)
        await boxes.nth(rng.randrange(n)).click(timeout=timeout_ms)
        options = page.locator("[role='option']:not([aria-selected='true'])")
        try:  # a selectbox with a single option opens no list
            await page.locator("[role='option']").first.wait_for(timeout=3000)
        except Exception:
            await page.keyboard.press("Escape")
            return None
        k = await options.count()
        if not k:
            await page.keyboard.press("Escape")
            return None
        option = options.nth(rng.randrange(k))
        doing["option"] = (await option.inner_text())[:80]
        await option.click(timeout=timeout_ms)
    elif kind == "radio":
        labels = sidebar.locator("[data-testid='stRadioOption']:not([data-selected='true']):visible")
        n = await labels.count()
        if not n:
            return None
        before = await page.evaluate(BEFORE_JS)
        label = labels.nth(rng.randrange(n))
        doing["option"] = (await label.inner_text())[:80]
        await label.click(timeout=timeout_ms)
    else:
        others = await page.evaluate(  # nav links to the other pages (the current one would not rerun)
            "[...document.querySelectorAll(\"[data-testid='stSidebarNav'] a\")]"
            ".map(a => a.getAttribute('href')).filter(h => h && new URL(h, location.href).pathname !== location.pathname)")
        if not others:
            return None
        href = rng.choice(others)
        doing["option"] = href.rsplit("/", 1)[-1] or "/"
        before = await page.evaluate(BEFORE_JS)
        before[3] = True  # a page switch: new main elements also count
        await page.locator(f"[data-testid='stSidebarNav'] a[href='{href}']").first.click(timeout=timeout_ms)
    await settle(page, before, timeout_ms)
    return kind


class Start:
    """Every session opens its first page, then the timed load starts for all at once."""

    def __init__(self, sessions: int, duration: float):
        self.waiting, self.duration = sessions, duration
        self.ready = asyncio.Event()
        self.deadline = 0.0

    async def arrive(self) -> float:
        self.waiting -= 1
        if self.waiting == 0:
            self.deadline = time.monotonic() + self.duration
            self.ready.set()
        await self.ready.wait()
        return self.deadline


async def session(browser, index: int, base: str, combos: list[dict], start: Start, figures: Figures,
                  seed: int, timeout_ms: float) -> None:
    from playwright.async_api import Error as PlaywrightError
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    rng = random.Random(seed * 1000 + index)
    context = await browser.new_context(viewport={"width": 1300, "height": 900})
    await context.add_init_script(OBSERVER_JS)
    page = await context.new_page()

    def on_page_error(error) -> None:
        figures.page_errors += 1
        figures.note(f"session {index}: page error {error}")

    page.on("pageerror", on_page_error)
    arrived = False
    try:
        started = time.monotonic()
        try:
            await page.goto(f"{base}/{PAGES[index % len(PAGES)]}", wait_until="commit")
            await settle(page, None, timeout_ms)
            figures.times.setdefault("first load", []).append(time.monotonic() - started)
            await count_errors(page, figures, f"session {index} first load")
        except PlaywrightError as error:  # TimeoutError included
            figures.timeouts += 1
            figures.note(f"session {index}: first load: {str(error).splitlines()[0]}")
        arrived = True
        deadline = await start.arrive()
        while time.monotonic() < deadline:
            started, doing = time.monotonic(), {}
            try:
                kind = await act(page, rng, base, combos, timeout_ms, doing)
            except PlaywrightTimeout as error:
                figures.timeouts += 1
                try:
                    doing["state"] = await page.evaluate(
                        "[window.__tbChanges, document.querySelector(\"[data-testid='stApp']\")"
                        "?.getAttribute('data-test-script-state'), location.pathname]")
                except PlaywrightError:
                    pass
                figures.note(f"session {index}: timeout while {doing}: " + " | ".join(line.strip()[:100] for line in str(error).splitlines()[2:9]))
                await page.keyboard.press("Escape")
                continue
            except PlaywrightError as error:
                figures.failed_actions += 1
                figures.note(f"session {index}: failed while {doing}: {str(error).splitlines()[0]}")
                continue
            if kind is None:
                continue
            figures.times.setdefault(kind, []).append(time.monotonic() - started)
            await count_errors(page, figures, f"session {index} after {kind}")
    finally:
        if not arrived:  # let the others start anyway
            await start.arrive()
        await context.close()


async def drive(base: str, combos: list[dict], sessions: int, duration: float, figures: Figures, seed: int,
                timeout_ms: float) -> None:
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            start = Start(sessions, duration)
            tasks = [session(browser, i, base, combos, start, figures, seed, timeout_ms) for i in range(sessions)]
            # hard stop: the run ends even if a page hangs (first loads + load + one last action)
            await asyncio.wait_for(asyncio.gather(*tasks), timeout=duration + 3 * timeout_ms / 1000 + 30)
        finally:
            await browser.close()


def run_load(sessions: int = 20, duration: float = 60, data_dir: Path | str = ROOT / "data", seed: int = 0,
             timeout_s: float = 60, log_path: Path | None = None) -> Figures:
    """Start the server, drive the sessions, stop everything; returns the figures."""
    data_dir = Path(data_dir).resolve()
    if log_path is None:
        log_path = Path(tempfile.mkdtemp(prefix="tiebreak-load-")) / "streamlit.log"
    figures = Figures(sessions=sessions, duration=duration)
    combos = url_options(data_dir)
    with Server(data_dir, log_path) as server:
        sampler = RssSampler(server.process.pid)
        sampler.start()
        try:
            asyncio.run(drive(server.base, combos, sessions, duration, figures, seed, timeout_s * 1000))
        finally:
            sampler.stop()
        figures.rss_start, figures.rss_peak, figures.rss_end = sampler.first, sampler.peak, sampler.last
        figures.rss_samples = sampler.samples
    log_text = log_path.read_text(errors="replace")
    figures.server_tracebacks = log_text.count("Traceback (most recent call last)")
    if figures.server_tracebacks:
        figures.note(f"server log {log_path}: {figures.server_tracebacks} traceback(s)")
    return figures


def markdown(figures: Figures) -> str:
    mib = 1024 * 1024
    lines = [
        f"**Load test**: {figures.sessions} concurrent Chromium sessions changing the view for "
        f"{figures.duration:.0f} s after their first page load ({figures.actions} timed actions)",
        "",
        "| action | count | p50 (s) | p95 (s) | max (s) |",
        "|---|---:|---:|---:|---:|",
    ]
    every = []
    for kind, values in sorted(figures.times.items()):
        every += values if kind != "first load" else []
        lines.append(f"| {kind} | {len(values)} | {percentile(values, 0.5):.2f} | {percentile(values, 0.95):.2f} | "
                     f"{max(values):.2f} |")
    lines.append(f"| **all changes** (not first load) | {len(every)} | {percentile(every, 0.5):.2f} | "
                 f"**{percentile(every, 0.95):.2f}** | {max(every) if every else float('nan'):.2f} |")
    lines += [
        "",
        "| errors | count |",
        "|---|---:|",
        f"| exception boxes (`stException`) | {figures.exception_boxes} |",
        f"| 'could not be drawn' boxes | {figures.app_error_boxes} |",
        f"| unexpected dialogs | {figures.dialogs} |",
        f"| browser page errors | {figures.page_errors} |",
        f"| actions timed out | {figures.timeouts} |",
        f"| actions failed | {figures.failed_actions} |",
        f"| tracebacks in the server log | {figures.server_tracebacks} |",
        f"| **total** | **{figures.errors}** |",
        "",
        "| server memory (RSS, process + children) | MiB |",
        "|---|---:|",
        f"| at start | {figures.rss_start / mib:.0f} |",
        f"| **peak** ({figures.rss_samples} samples) | **{figures.rss_peak / mib:.0f}** |",
        f"| at end | {figures.rss_end / mib:.0f} |",
    ]
    if figures.error_examples:
        lines += ["", "Examples of errors:", *[f"- {e}" for e in figures.error_examples]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--duration", type=float, default=60, help="seconds of load (default 60)")
    parser.add_argument("--data", default=str(ROOT / "data"), help="data folder (default: the shipped data/)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=60, help="seconds one action may take (default 60)")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} not found: apt-get install -y chromium", file=sys.stderr)
        return 2
    figures = run_load(args.sessions, args.duration, args.data, args.seed, args.timeout)
    print(markdown(figures))
    if args.json:
        payload = {**figures.__dict__, "actions": figures.actions, "errors": figures.errors,
                   "p95_change_s": percentile([v for k, vs in figures.times.items() if k != "first load" for v in vs],
                                              0.95)}
        Path(args.json).write_text(json.dumps(payload, indent=2))
    return 0 if figures.errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
