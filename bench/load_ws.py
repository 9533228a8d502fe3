"""Protocol-level load benchmark of the dashboard: N simulated users, no browser per user.

Each simulated user is a :class:`ws_session.Session` — one browser tab speaking Streamlit's websocket protocol
(``BackMsg`` / ``ForwardMsg`` protobufs from the installed ``streamlit.proto``; how, in ``bench/ws_session.py``)
— so the clients cost the shared 2 cores little and the figures are the server's. Before any load the client is
checked against a real Chromium on the same server (``bench/ws_validate.py``: same rerun messages, same
elements and table values for the default view, a control change, a page switch and a change there); the run
stops if they differ.

Per number of users N, on a fresh server stack (so no step inherits the previous one's sessions):

1. **start** the target: by default the hosting layout of docs/hosting.md — ``--processes P`` app processes
   (``deploy/serve.sh`` with ``deploy/production.env``) behind Debian's nginx with ``deploy/nginx/tiebreak.conf``
   (sticky by the ``tiebreak_route`` cookie), from ``tests/e2e/proxy_stack.py``, on a read-only copy of the data;
   ``--direct``: one ``streamlit run app.py`` on loopback (no nginx);
2. **warm up** (not measured): 2 sessions per process make 6 actions each, so every process has read the store
   and filled its caches, as a server that has been up for a while has;
3. **open** N sessions (a fresh tab each: page GET, websocket, first run), spread over ``--ramp`` seconds;
4. **measure** for ``--duration`` seconds: every user thinks ``--think`` (uniform 2–5 s, seeded per user), then
   acts — a page switch (25 %), a click on a button (if the page has one, 5 %), or a change of a control on the
   page (a selectbox / radio to another option, a toggle flipped, a multiselect set; 10 % of them in the
   "Filter systems" popover, opened first) — waits for the run to finish, thinks again. Actions sent in the
   window are timed (rerun sent → ``script_finished``) and drained after it;
5. **report**: actions served in the window and per second, p50 / p95 / max latency, errors (an action with no
   ``script_finished`` within ``--timeout``, a run not finished successfully, a closed websocket, an exception
   box or the app's "could not be drawn" box on the page, a traceback in a server log), server RSS (app
   processes, sampled every 0.5 s: before the sessions opened, once they are open, at the end, peak; per
   session = growth / N — at open it is the sessions themselves, at the end it also holds what the actions put
   in the process-wide caches), server CPU in the window (app processes; per action = CPU seconds / actions
   served; the main thread's share apart), nginx CPU, the client's own CPU, the cores every other process on
   the machine kept busy meanwhile (other users' work: the server may have waited for a core), sessions per
   process (Streamlit's ``/_stcore/metrics``), the 1-minute load average at the window's start and end, and
   the machine's calibration (bench/bench_app.py's 10M-step loop) taken before the step, with the server CPU
   per action divided by it (comparable across machines).

The served code is this working tree (say so: other work in it is measured too), ``--checkout DIR`` another
one, or ``--rev REV`` a commit exported with ``git archive`` (what the figures in bench/RESULTS.md use), each
with its own shipped ``data/`` unless ``--data`` says otherwise.

``--profile`` instead runs one session of typical actions against a server started by ``bench/rerun_probe.py``
and writes where a rerun's CPU goes (script thread CPU per run, the main thread's share, cProfile top
functions) to ``--profile-dir`` (default ``bench/out/profile``).

    python bench/load_ws.py --rev HEAD --sessions 1,10,20,50,100 --duration 75 --processes 1 --json out-p1.json
    python bench/load_ws.py --rev HEAD --sessions 1,10,20,50,100 --duration 75 --processes 2 --json out-p2.json
    python bench/load_ws.py --direct --sessions 2 --duration 5            # one process, no nginx (the smoke test)
    python bench/load_ws.py --url http://host/tiebreak/ --pids 123,456     # a running server (not restarted)
    python bench/load_ws.py --validate-only                                # the Chromium comparison alone
    python bench/load_ws.py --profile --profile-actions 40                 # where a rerun's CPU goes

Exit status 0 when the validation passed and no error was counted, 1 otherwise.
"""
from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import random
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from ws_session import RunResult, Session  # noqa: E402

PAGE_SHARE, CLICK_SHARE, POPOVER_SHARE = 0.25, 0.05, 0.10
SEARCHES = ["", "e5", "bge", "mini", "7b", "bm25"]
TRACEBACK = "Traceback (most recent call last)"


# ---------------------------------------------------------------------------------------- targets
@dataclass
class Target:
    """A running dashboard: the URL a browser opens and the processes to measure."""

    url: str
    label: str
    app_pids: list[int]
    metrics_urls: list[str] = field(default_factory=list)  # each app process's /_stcore/metrics
    nginx_pid: int | None = None
    logs: list[Path] = field(default_factory=list)
    closer: object = None

    def close(self) -> None:
        if self.closer is not None:
            self.closer()
            self.closer = None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_health(url: str, proc: subprocess.Popen | None, log: Path | None, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:] if log else ""
            raise RuntimeError(f"the server exited with {proc.returncode}:\n{tail}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {timeout:.0f} s")


def start_direct(data_dir: Path, work: Path, python: str = sys.executable, probe: list[str] | None = None,
                 app_dir: Path = ROOT) -> Target:
    """``streamlit run app.py`` of ``app_dir`` on a free loopback port (caches in ``work``), or under
    ``rerun_probe.py``."""
    port = free_port()
    log = work / f"streamlit-{port}.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLIT_")}
    env.update(TIEBREAK_DATA=str(data_dir), TIEBREAK_CACHE=str(work / "cache"))
    args = ["run", "app.py", "--server.port", str(port), "--server.address", "127.0.0.1",
            "--server.headless", "true", "--browser.gatherUsageStats", "false"]
    if probe:
        command = [python, str(HERE / "rerun_probe.py"), *probe, "--", *args]
    else:
        command = [python, "-m", "streamlit", *args]
    handle = open(log, "w")
    proc = subprocess.Popen(command, cwd=app_dir, env=env, stdout=handle, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/"

    def close() -> None:
        _stop(proc)
        handle.close()

    try:
        wait_health(base + "_stcore/health", proc, log)
    except BaseException:
        close()
        raise
    return Target(url=base, label="1 process, direct", app_pids=[proc.pid], metrics_urls=[base + "_stcore/metrics"],
                  logs=[log], closer=close)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _proxy_stack(app_dir: Path = ROOT):
    spec = importlib.util.spec_from_file_location("tiebreak_proxy_stack", app_dir / "tests" / "e2e" / "proxy_stack.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def start_stack(data_dir: Path, work: Path, processes: int, app_dir: Path = ROOT) -> Target:
    """docs/hosting.md's layout on loopback: ``processes`` × deploy/serve.sh behind nginx (tests/e2e/proxy_stack),
    all from ``app_dir``."""
    proxy_stack = _proxy_stack(app_dir)
    if proxy_stack.nginx_binary() is None:
        raise RuntimeError("nginx not found (apt-get install nginx, or bash scripts/install-dev.sh); or use --direct")
    return target_of(proxy_stack, proxy_stack.start(work, data_dir, processes=processes), processes)


def target_of(proxy_stack, stack, processes: int) -> Target:
    """The :class:`Target` of a running ``proxy_stack`` stack (closing it lets its read-only data copy go)."""

    def close() -> None:
        stack.close()
        for path in [stack.data_dir, *stack.data_dir.rglob("*")]:  # read-only copy: let the temp dir go
            path.chmod(path.stat().st_mode | 0o200)

    app_procs = [p for p in stack.procs if not p.args[0].endswith("nginx")]
    nginx = [p for p in stack.procs if p.args[0].endswith("nginx")]
    prefix = proxy_stack.PREFIX
    return Target(url=stack.url(""), label=f"{processes} process{'es' if processes > 1 else ''} behind nginx",
                  app_pids=[p.pid for p in app_procs], nginx_pid=nginx[0].pid if nginx else None,
                  metrics_urls=[f"http://127.0.0.1:{port}/{prefix}/_stcore/metrics" for port in stack.app_ports],
                  logs=list(stack.app_logs), closer=close)


def served_code(rev: str | None, checkout: Path | None, work: Path) -> tuple[Path, str]:
    """The folder whose app is served, and a description of that code (commit, clean or not)."""
    def git(*args: str, cwd: Path = ROOT) -> str:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()

    if rev:
        commit = git("rev-parse", rev)
        folder = work / "checkout"
        folder.mkdir()
        archive = subprocess.Popen(["git", "archive", commit], cwd=ROOT, stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", str(folder)], stdin=archive.stdout, check=True)
        archive.stdout.close()
        if archive.wait() != 0:
            raise RuntimeError(f"git archive {commit} failed")
        return folder, f"commit {commit[:12]} (git archive)"
    folder = (checkout or ROOT).resolve()
    try:
        commit = git("rev-parse", "HEAD", cwd=folder)
        dirty = git("status", "--porcelain", "--", "app.py", "ui", "pages", "evalcore", "data", cwd=folder)
        return folder, f"{folder} at {commit[:12]}" + (" with uncommitted changes" if dirty else "")
    except (subprocess.CalledProcessError, FileNotFoundError):
        return folder, str(folder)


# ---------------------------------------------------------------------------------------- measuring the server
def _processes(pids: list[int]):
    import psutil

    procs = []
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            procs.append(proc)
            procs.extend(proc.children(recursive=True))
        except psutil.Error:
            pass
    return procs


def cpu_seconds(pids: list[int]) -> float:
    import psutil

    total = 0.0
    for proc in _processes(pids):
        try:
            times = proc.cpu_times()
            total += times.user + times.system
        except psutil.Error:
            pass
    return total


def main_thread_cpu(pids: list[int]) -> float:
    """CPU seconds of each app process's main thread (Streamlit's event loop: serialising, compressing and
    sending ForwardMsgs, reading BackMsgs); script runs happen on other threads."""
    import psutil

    total = 0.0
    for pid in pids:
        try:
            for thread in psutil.Process(pid).threads():
                if thread.id == pid:
                    total += thread.user_time + thread.system_time
        except psutil.Error:
            pass
    return total


def machine_busy_seconds() -> float:
    """CPU seconds every core of the machine spent busy so far (all processes: ours, other users', niced ones)."""
    import psutil

    times = psutil.cpu_times()
    return sum(times) - times.idle - getattr(times, "iowait", 0.0)


def rss_bytes(pids: list[int]) -> int:
    import psutil

    total = 0
    for proc in _processes(pids):
        try:
            total += proc.memory_info().rss
        except psutil.Error:
            pass
    return total


class RssSampler(threading.Thread):
    def __init__(self, pids: list[int], interval: float = 0.5):
        super().__init__(daemon=True)
        self.pids, self.interval, self.peak = pids, interval, 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            self.peak = max(self.peak, rss_bytes(self.pids))
            self._stop_event.wait(self.interval)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=5)


def active_sessions(target: Target) -> list[int | None]:
    """Streamlit's own count of connected sessions, per app process (``/_stcore/metrics``)."""
    counts = []
    for url in target.metrics_urls:
        try:
            with urllib.request.urlopen(url + "?families=active_sessions", timeout=5) as response:
                text = response.read().decode()
            match = re.search(r"^active_sessions\S*\s+(\d+)", text, re.M)
            counts.append(int(match.group(1)) if match else None)
        except OSError:
            counts.append(None)
    return counts


def tracebacks(target: Target) -> int:
    return sum(path.read_text(errors="replace").count(TRACEBACK) for path in target.logs if path.exists())


# ---------------------------------------------------------------------------------------- simulated users
def choose_action(session: Session, rng: random.Random):
    """The next thing this user does: ("page", hash) | ("click", id) | ("change", id, value)."""
    tree = session.tree
    pages = [p for p in tree.pages if p["page_script_hash"] != tree.page_hash]
    if pages and rng.random() < PAGE_SHARE:
        return ("page", rng.choice(pages)["page_script_hash"])
    widgets = [(wid, node) for wid, node in tree.widgets(mounted_only=False).items()
               if not getattr(node.proto, "disabled", False)]
    buttons = [wid for wid, node in widgets if node.kind == "button" and tree.mounted(node.path)]
    if buttons and rng.random() < CLICK_SHARE:
        return ("click", rng.choice(buttons))
    in_popover = [(wid, node) for wid, node in widgets if tree.popover_of(node.path) is not None]
    on_page = [(wid, node) for wid, node in widgets if tree.popover_of(node.path) is None]
    pool = in_popover if in_popover and rng.random() < POPOVER_SHARE else on_page
    pool = [(wid, node) for wid, node in pool if node.kind != "button"]
    while pool:
        wid, node = pool.pop(rng.randrange(len(pool)))
        value = _another_value(node, tree.widget_values.get(wid, (None, None))[1], rng)
        if value is not None:
            popover = tree.popover_of(node.path)
            if popover is not None:
                session.open_popover(popover)
            return ("change", wid, value)
    return ("page", rng.choice(pages)["page_script_hash"]) if pages else None


def _another_value(node, current, rng: random.Random):
    kind, proto = node.kind, node.proto
    if kind in ("selectbox", "radio"):
        options = [o for o in proto.options if o != current]
        return rng.choice(options) if options else None
    if kind == "checkbox":
        return not bool(current)
    if kind == "multiselect":
        options = list(proto.options)
        if not options:
            return None
        limit = proto.max_selections or 2
        value = rng.sample(options, k=min(len(options), rng.randint(0, min(2, limit))))
        return value if value != current else ([] if current else [options[0]])
    if kind == "text_input":
        choices = [s for s in SEARCHES if s != current]
        return rng.choice(choices)
    return None


async def act(session: Session, action) -> RunResult:
    if action is None:
        return RunResult(kind="none", sent_at=time.perf_counter(), errors=["no action possible on this page"])
    if action[0] == "page":
        return await session.switch_page(action[1])
    if action[0] == "click":
        return await session.click(action[1])
    return await session.change(action[1], action[2])


@dataclass
class Step:
    """The figures of one number of users."""

    sessions: int
    target: str
    duration: float
    opens: list[float] = field(default_factory=list)
    open_errors: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)  # actions sent in the window, with an answer
    by_kind: dict[str, list[float]] = field(default_factory=dict)
    kinds: dict[str, int] = field(default_factory=dict)
    served_in_window: int = 0
    errors: list[str] = field(default_factory=list)
    server_tracebacks: int = 0
    cpu_seconds: float = 0.0
    main_thread_cpu_seconds: float = 0.0
    nginx_cpu_seconds: float = 0.0
    client_cpu_seconds: float = 0.0
    machine_busy_seconds: float = 0.0
    rss_before: int = 0
    rss_after_open: int = 0
    rss_end: int = 0
    rss_peak: int = 0
    bytes_received: int = 0
    sessions_per_process: list = field(default_factory=list)
    load_start: float = 0.0
    load_end: float = 0.0
    processes: int = 1

    @property
    def actions(self) -> int:
        return len(self.latencies)

    @property
    def error_count(self) -> int:
        return len(self.errors) + len(self.open_errors) + self.server_tracebacks

    def pct(self, q: float) -> float | None:
        if not self.latencies:
            return None
        if len(self.latencies) == 1:
            return self.latencies[0]
        return statistics.quantiles(self.latencies, n=100, method="inclusive")[int(q) - 1]

    def summary(self) -> dict:
        served = self.served_in_window
        return {
            "sessions": self.sessions, "target": self.target, "processes": self.processes,
            "window_s": round(self.duration, 1), "actions_served": served,
            "actions_per_s": round(served / self.duration, 2) if self.duration else None,
            "p50_s": _r(self.pct(50)), "p95_s": _r(self.pct(95)),
            "max_s": _r(max(self.latencies)) if self.latencies else None,
            "errors": self.error_count, "timed_actions": self.actions,
            "open_p50_s": _r(statistics.median(self.opens)) if self.opens else None,
            "open_max_s": _r(max(self.opens)) if self.opens else None,
            "server_cpu_s": round(self.cpu_seconds, 2),
            "server_cpu_ms_per_action": round(1000 * self.cpu_seconds / served, 1) if served else None,
            "main_thread_cpu_ms_per_action": round(1000 * self.main_thread_cpu_seconds / served, 1) if served else None,
            "server_cores_busy": round(self.cpu_seconds / self.duration, 2) if self.duration else None,
            "nginx_cpu_s": round(self.nginx_cpu_seconds, 2),
            "client_cpu_s": round(self.client_cpu_seconds, 2),
            "machine_busy_cores": round(self.machine_busy_seconds / self.duration, 2) if self.duration else None,
            "others_cores": round((self.machine_busy_seconds - self.cpu_seconds - self.nginx_cpu_seconds
                                   - self.client_cpu_seconds) / self.duration, 2) if self.duration else None,
            "rss_before_mb": _mb(self.rss_before), "rss_after_open_mb": _mb(self.rss_after_open),
            "rss_end_mb": _mb(self.rss_end), "rss_peak_mb": _mb(self.rss_peak),
            "rss_open_per_session_mb": round((self.rss_after_open - self.rss_before) / self.sessions / 2**20, 2),
            "rss_per_session_mb": round((self.rss_end - self.rss_before) / self.sessions / 2**20, 2),
            "kb_received_per_action": round(self.bytes_received / max(1, self.actions) / 1024, 1),
            "sessions_per_process": self.sessions_per_process,
            "load_avg_1min": f"{self.load_start:.1f}→{self.load_end:.1f}",
            "action_kinds": self.kinds,
            "p50_by_kind_s": {k: _r(statistics.median(v)) for k, v in sorted(self.by_kind.items())},
            "error_examples": (self.open_errors + self.errors)[:8],
        }


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def _mb(x: int) -> float:
    return round(x / 2**20, 1)


async def _open(url: str, delay: float, timeout: float, step: Step) -> Session:
    await asyncio.sleep(delay)
    session = Session(url, timeout=timeout)
    result = await session.open()
    if result.errors:
        step.open_errors.extend(f"open: {e}" for e in result.errors)
    elif result.latency is not None:
        step.opens.append(result.latency)
    return session


async def _user(session: Session, rng: random.Random, think: tuple[float, float], window: tuple[float, float],
                step: Step) -> None:
    start, stop = window
    await asyncio.sleep(max(0.0, start - time.perf_counter()) + rng.uniform(0, think[1]))
    while time.perf_counter() < stop and session.closed_reason is None:
        result = await act(session, choose_action(session, rng))
        step.kinds[result.kind] = step.kinds.get(result.kind, 0) + 1
        step.bytes_received += result.bytes
        if result.errors:
            step.errors.extend(f"{result.kind}: {e}" for e in result.errors)
        if result.latency is not None:
            step.latencies.append(result.latency)
            step.by_kind.setdefault(result.kind, []).append(result.latency)
            if result.sent_at + result.latency <= stop:
                step.served_in_window += 1
        pause = rng.uniform(*think)
        if time.perf_counter() + pause >= stop:
            break
        await asyncio.sleep(pause)


async def run_step(target: Target, sessions: int, duration: float, think: tuple[float, float], seed: int,
                   timeout: float, ramp: float) -> Step:
    step = Step(sessions=sessions, target=target.label, duration=duration, processes=len(target.app_pids))
    tracebacks_before = tracebacks(target)
    step.rss_before = rss_bytes(target.app_pids)
    sampler = RssSampler(target.app_pids)
    sampler.start()
    spread = min(ramp, 0.2 * sessions) if sessions > 1 else 0.0
    opened = await asyncio.gather(*(_open(target.url, spread * i / sessions, timeout, step) for i in range(sessions)))
    step.rss_after_open = rss_bytes(target.app_pids)
    start = time.perf_counter() + 0.5
    stop = start + duration
    rngs = [random.Random(f"{seed}/{sessions}/{i}") for i in range(sessions)]
    users = [asyncio.create_task(_user(s, rng, think, (start, stop), step)) for s, rng in zip(opened, rngs)]
    await asyncio.sleep(max(0.0, start - time.perf_counter()))
    cpu0, main0 = cpu_seconds(target.app_pids), main_thread_cpu(target.app_pids)
    nginx0 = cpu_seconds([target.nginx_pid]) if target.nginx_pid else 0.0
    client0 = resource.getrusage(resource.RUSAGE_SELF)
    machine0 = machine_busy_seconds()
    step.load_start = os.getloadavg()[0]
    await asyncio.sleep(max(0.0, stop - time.perf_counter()))
    step.cpu_seconds = cpu_seconds(target.app_pids) - cpu0
    step.main_thread_cpu_seconds = main_thread_cpu(target.app_pids) - main0
    step.nginx_cpu_seconds = (cpu_seconds([target.nginx_pid]) - nginx0) if target.nginx_pid else 0.0
    step.machine_busy_seconds = machine_busy_seconds() - machine0
    client1 = resource.getrusage(resource.RUSAGE_SELF)
    step.client_cpu_seconds = (client1.ru_utime - client0.ru_utime) + (client1.ru_stime - client0.ru_stime)
    step.load_end = os.getloadavg()[0]
    step.rss_end = rss_bytes(target.app_pids)
    step.sessions_per_process = active_sessions(target)
    await asyncio.gather(*users)  # drain: actions sent in the window finish
    sampler.stop()
    step.rss_peak = max(sampler.peak, step.rss_end)
    await asyncio.gather(*(s.close() for s in opened))
    await asyncio.sleep(1.0)
    step.server_tracebacks = tracebacks(target) - tracebacks_before
    return step


async def warm_up(target: Target, sessions: int, actions: int, seed: int, timeout: float) -> list[str]:
    """Unmeasured: each session opens and makes ``actions`` actions without thinking."""
    errors: list[str] = []

    async def one(i: int) -> None:
        rng = random.Random(f"warm/{seed}/{i}")
        session = Session(target.url, timeout=timeout)
        result = await session.open()
        errors.extend(result.errors)
        for _ in range(actions):
            if session.closed_reason is not None:
                break
            result = await act(session, choose_action(session, rng))
            errors.extend(result.errors)
        await session.close()

    await asyncio.gather(*(one(i) for i in range(sessions)))
    return errors


# ---------------------------------------------------------------------------------------- profile of a rerun
def profile_reruns(data_dir: Path, work: Path, out: Path, actions: int, seed: int, timeout: float,
                   idle: int = 0, app_dir: Path = ROOT, source: str = "") -> str:
    """Where a typical rerun's CPU goes: one session of ``actions`` typical actions, twice (plain probe for CPU
    per run, then cProfile), against ``streamlit run`` under ``bench/rerun_probe.py``; ``idle`` other sessions
    stay connected meanwhile (their state is in the heap every post-run garbage collection walks)."""
    import io
    import pstats

    out.mkdir(parents=True, exist_ok=True)
    lines = []
    figures = {}
    for mode in ("cpu", "cprofile"):
        probe_dir = work / f"probe-{mode}"
        # object counts cost CPU on the script thread: only in the profiled pass, whose CPU is not the figure
        flags = ["--cprofile", "--count-objects"] if mode == "cprofile" else []
        target = start_direct(data_dir, work, probe=[str(probe_dir), *flags], app_dir=app_dir)
        try:
            asyncio.run(warm_up(target, 2, 6, seed, timeout))
            runs_file = probe_dir / "runs.jsonl"
            skip = 0

            async def session_run() -> tuple[list[RunResult], float, float]:
                nonlocal skip
                others = [Session(target.url, timeout=timeout) for _ in range(idle)]
                for other in others:
                    await other.open()
                await asyncio.sleep(1.0)
                skip = len(runs_file.read_text().splitlines()) if runs_file.exists() else 0
                for prof in probe_dir.glob("run-*.prof"):
                    prof.unlink()
                cpu0, main0 = cpu_seconds(target.app_pids), main_thread_cpu(target.app_pids)
                rng = random.Random(f"profile/{seed}")
                session = Session(target.url, timeout=timeout)
                results = [await session.open()]
                for _ in range(actions):
                    results.append(await act(session, choose_action(session, rng)))
                cpu, main = cpu_seconds(target.app_pids) - cpu0, main_thread_cpu(target.app_pids) - main0
                await asyncio.gather(session.close(), *(other.close() for other in others))
                return results, cpu, main

            results, cpu, main = asyncio.run(session_run())
        finally:
            target.close()
        runs = [json.loads(line) for line in runs_file.read_text().splitlines()[skip:]]
        (out / f"runs-{mode}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
        if mode == "cpu":  # script-thread CPU by the view drawn (the open is the first run)
            views: dict[str, list[float]] = {}
            for r in runs[1:]:
                views.setdefault(r.get("view") or "leaderboard", []).append(1000 * r["cpu"])
            lines.append("==== script-thread CPU per run by view (ms, runs without the profiler): "
                         + "; ".join(f"{v or 'leaderboard'}: n={len(c)} median {statistics.median(c):.1f} "
                                     f"mean {statistics.mean(c):.1f} max {max(c):.1f}"
                                     for v, c in sorted(views.items())) + "\n")
        if any(r.latency is None for r in results):
            raise RuntimeError(f"profile run failed: {[e for r in results for e in r.errors][:5]}")
        figures[mode] = {"process_cpu_ms_per_run": 1000 * cpu / len(results),
                         "main_thread_cpu_ms_per_run": 1000 * main / len(results),
                         "script_thread_cpu_ms_median": 1000 * statistics.median(r["cpu"] for r in runs[1:]),
                         "script_thread_cpu_ms_mean": 1000 * statistics.mean(r["cpu"] for r in runs[1:]),
                         "script_wall_ms_median": 1000 * statistics.median(r["wall"] for r in runs[1:]),
                         "gc_ms_mean": 1000 * statistics.mean(r.get("gc", 0.0) for r in runs[1:]),
                         "gc_full_ms_mean": 1000 * statistics.mean(r.get("gc_full", 0.0) for r in runs[1:]),
                         "gc_collections_mean": statistics.mean(r.get("gc_collections", 0) for r in runs[1:]),
                         "gc_tracked_objects_median": statistics.median(r.get("gc_tracked_objects") or 0
                                                                        for r in runs[1:]),
                         "latency_ms_median": 1000 * statistics.median(r.latency for r in results[1:] if r.latency),
                         "runs": len(runs), "kinds": sorted({r.kind for r in results})}
        if mode == "cprofile":
            profs = sorted(probe_dir.glob("run-*.prof"), key=lambda p: int(p.stem.split("-")[1]))[1:]  # not the open
            profs = [p for p in profs if _readable_profile(p)]  # a run still being dumped (or cut short) is left out
            stats = pstats.Stats(*map(str, profs))
            stats.dump_stats(str(out / "rerun.prof"))
            # one typical rerun: the run of median script-thread CPU among them
            by_number = {r["run"]: r for r in runs}
            ranked = sorted((p for p in profs if int(p.stem.split("-")[1]) in by_number),
                            key=lambda p: by_number[int(p.stem.split("-")[1])]["cpu"])
            typical = ranked[len(ranked) // 2]
            shutil.copy(typical, out / "typical-rerun.prof")
            if (probe_dir / "tracked-types.json").exists():
                shutil.copy(probe_dir / "tracked-types.json", out / "tracked-types.json")
            info = by_number[int(typical.stem.split("-")[1])]
            buffer = io.StringIO()
            pstats.Stats(str(typical), stream=buffer).sort_stats("cumulative").print_stats(30)
            lines.append(f"==== one typical rerun (median CPU of the {len(ranked)}): {json.dumps(info)}\n")
            lines.append(buffer.getvalue())
            for order in ("tottime", "cumulative"):
                buffer = io.StringIO()
                pstats.Stats(str(out / "rerun.prof"), stream=buffer).sort_stats(order).print_stats(45)
                lines.append(f"==== {len(profs)} reruns, sorted by {order} (cProfile on the script thread's CPU clock; "
                             "times include its overhead)\n")
                lines.append(buffer.getvalue())
    head = ["# Where a rerun's CPU goes (bench/load_ws.py --profile)", "",
            f"date {time.strftime('%Y-%m-%d %H:%M')}, load average {os.getloadavg()[0]:.1f}, "
            f"{actions} actions of the load mix after a warm-up, one session, no think time, "
            f"{idle} other sessions connected; code: {source}", ""]
    for mode, fig in figures.items():
        head.append(f"{mode}: " + json.dumps({k: (round(v, 1) if isinstance(v, float) else v) for k, v in fig.items()}))
    text = "\n".join(head) + "\n\n" + "\n".join(lines)
    (out / "rerun-profile.txt").write_text(text)
    return "\n".join(head)


def _readable_profile(path: Path) -> bool:
    import pstats

    try:
        pstats.Stats(str(path))
        return True
    except (EOFError, ValueError, TypeError, OSError):
        return False


def calibrate() -> float:
    """bench/bench_app.py's calibration: seconds of a 10M-step Python loop (this machine's speed now; ~0.25 s on
    the fast 2-core machine). CPU per action is comparable across machines divided by it."""
    started = time.perf_counter()
    total = 0
    for i in range(10_000_000):
        total += i
    return time.perf_counter() - started


# ---------------------------------------------------------------------------------------- report
COLUMNS = [("N", "sessions"), ("target", "target"), ("actions served", "actions_served"),
           ("actions/s", "actions_per_s"),
           ("p50 s", "p50_s"), ("p95 s", "p95_s"), ("max s", "max_s"), ("errors", "errors"),
           ("open p50 s", "open_p50_s"), ("server CPU ms/action", "server_cpu_ms_per_action"),
           ("of it main thread", "main_thread_cpu_ms_per_action"), ("cores busy", "server_cores_busy"),
           ("RSS before → end MB", None), ("MB/session at open", "rss_open_per_session_mb"),
           ("MB/session at end", "rss_per_session_mb"), ("client CPU s", "client_cpu_s"),
           ("other processes' cores", "others_cores"), ("sessions/process", "sessions_per_process"),
           ("load avg", "load_avg_1min"), ("calibration s", "calibration_s"),
           ("CPU/action ÷ calibration", "cpu_per_action_over_calibration")]


def markdown(rows: list[dict]) -> str:
    lines = ["| " + " | ".join(name for name, _ in COLUMNS) + " |",
             "|" + "|".join("---:" if key not in ("target",) else "---" for _, key in COLUMNS) + "|"]
    for row in rows:
        cells = []
        for name, key in COLUMNS:
            if key is None:
                cells.append(f"{row['rss_before_mb']:.0f} → {row['rss_end_mb']:.0f}")
            else:
                value = row.get(key)
                if isinstance(value, list):
                    value = " / ".join(map(str, value))
                cells.append("—" if value is None else str(value))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", default="1,10,20,50,100", help="comma list of simulated users per step")
    parser.add_argument("--duration", type=float, default=75.0, help="measured seconds per step")
    parser.add_argument("--think", default="2,5", help="think time between actions, uniform LO,HI seconds")
    parser.add_argument("--processes", type=int, default=1, help="app processes behind nginx")
    parser.add_argument("--direct", action="store_true", help="one `streamlit run app.py`, no nginx")
    parser.add_argument("--url", help="a running dashboard to load (not restarted); with --pids to measure it")
    parser.add_argument("--pids", default="", help="comma list of the running dashboard's process ids")
    parser.add_argument("--rev", help="serve this commit of the repository (exported to a temp dir with git archive, "
                        "so other work in the tree does not leak in), e.g. HEAD")
    parser.add_argument("--checkout", type=Path, help="serve the app of this folder (default: this repository)")
    parser.add_argument("--data", type=Path, help="data folder (default: the served app's shipped data/)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=180.0,
                        help="seconds one action may take before it counts as an error")
    parser.add_argument("--ramp", type=float, default=10.0, help="seconds over which the sessions of a step open")
    parser.add_argument("--warmup-actions", type=int, default=6, help="actions per warm-up session (0 = none)")
    parser.add_argument("--no-validate", action="store_true", help="skip the Chromium comparison")
    parser.add_argument("--validate-only", action="store_true", help="only the Chromium comparison")
    parser.add_argument("--profile", action="store_true", help="profile a typical rerun instead of the load")
    parser.add_argument("--profile-actions", type=int, default=40)
    parser.add_argument("--profile-dir", type=Path, default=ROOT / "bench" / "out" / "profile")
    parser.add_argument("--profile-idle", type=int, default=0, help="idle sessions connected while profiling")
    parser.add_argument("--json", type=Path, help="write the figures here as well")
    args = parser.parse_args(argv)
    think = tuple(float(x) for x in args.think.split(","))
    counts = [int(x) for x in args.sessions.split(",") if x.strip()]

    work = Path(tempfile.mkdtemp(prefix="tiebreak-load-"))
    try:
        app_dir, source = served_code(args.rev, args.checkout, work)
        data_dir = args.data or app_dir / "data"
        print(f"serving {source}; data {data_dir}", flush=True)
        if args.profile:
            print(profile_reruns(data_dir, work, args.profile_dir, args.profile_actions, args.seed, args.timeout,
                                 args.profile_idle, app_dir, source))
            print(f"profile written to {args.profile_dir}/rerun-profile.txt and rerun.prof")
            return 0

        def start(i: int) -> Target:
            if args.url:
                return Target(url=args.url, label="external", app_pids=[int(p) for p in args.pids.split(",") if p])
            step_dir = work / f"step-{i}"
            step_dir.mkdir()
            if args.direct:
                return start_direct(data_dir, step_dir, app_dir=app_dir)
            return start_stack(data_dir, step_dir, args.processes, app_dir=app_dir)

        rows, validation = [], None
        for i, count in enumerate(counts or [0]):
            target = start(i)
            try:
                if i == 0 and not args.no_validate:
                    from ws_validate import validate

                    validation = asyncio.run(validate(target.url, timeout=args.timeout))
                    print(validation.text(), flush=True)
                    if not validation.ok or args.validate_only:
                        break
                if args.warmup_actions:
                    warm_errors = asyncio.run(warm_up(target, 2 * max(1, len(target.app_pids)),
                                                      args.warmup_actions, args.seed, args.timeout))
                    if warm_errors:
                        print(f"warm-up errors: {warm_errors[:5]}", flush=True)
                calibration = calibrate()
                step = asyncio.run(run_step(target, count, args.duration, think, args.seed, args.timeout, args.ramp))
                row = step.summary()
                row["calibration_s"] = round(calibration, 2)
                row["cpu_per_action_over_calibration"] = (round(row["server_cpu_ms_per_action"] / 1000 / calibration, 3)
                                                          if row["server_cpu_ms_per_action"] else None)
                rows.append(row)
                print(json.dumps(row), flush=True)
            finally:
                target.close()
        if rows:
            print()
            print(markdown(rows))
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps({"code": source, "date": time.strftime("%Y-%m-%d %H:%M"),
                                             "validation": asdict(validation) if validation else None,
                                             "validation_ok": validation.ok if validation else None,
                                             "steps": rows, "argv": sys.argv[1:]}, indent=1, default=str))
        failed = (validation is not None and not validation.ok) or any(row["errors"] for row in rows)
        return 1 if failed else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
