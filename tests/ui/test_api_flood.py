"""No request can take the server down: a flood of distinct expensive JSON API requests against a real
``streamlit run app.py`` on the shipped data, with the gate's shipped limits (``ui/gate.py``: one computation
at a time, eight waiting).

Thirty distinct Leaderboards of RAR-b's full-retrieval conditions over all their systems (metric × rank sets ×
level: each defeats the answer cache), then fifteen distinct per-query boards (the multiple-choice conditions
with per-query results), all asked at once, are each answered 200 or 503 with ``Retry-After`` — never a 500,
never a MemoryError in the server log; while they are being computed, the default board (kept since the warm
start) answers within twice its idle time; the process's peak resident memory stays under the bound
docs/hosting.md states for one computation slot. Reproduce: ``python -m pytest tests/ui/test_api_flood.py -q
-s`` (~2 min; slow marker; ``-s`` prints the times and the peak).
"""
from __future__ import annotations

import json
import os
import re
import statistics
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

from test_browser import start_server, stop_server  # noqa: E402

pytestmark = pytest.mark.slow
TIMINGS = 9
FLOOD_SIZES = {"task-level": 30, "per-query": 15}
LEVELS, RANKS = ("0.9", "0.95", "0.99"), ("marginal", "simultaneous")
INSTRUCTION_KEY = {True: "with", False: "without", None: "any"}


def flood_links(conditions: list[dict], kind: str) -> list[str]:
    """Distinct Leaderboard links, none the default board's: every condition of the kind × rank sets × level."""
    if kind == "task-level":
        chosen = [c for c in conditions if c["benchmark"] == "rar-b" and c["setting"] == "full"
                  and c["tie_policy"] == "docid-desc" and c["instruction"] is None]
    else:
        chosen = [c for c in conditions if c["setting"] == "mcr" and c["has_query_data"]]
    links = [f"bench={c['benchmark']}&setting={c['setting']}&metric={c['metric'].replace('@', '%40')}"
             f"&instr={INSTRUCTION_KEY[c['instruction']]}&prec={c['precision']}&ties={c['tie_policy']}"
             f"&ranks={ranks}&level={level}"
             for c in chosen for ranks in RANKS for level in LEVELS
             if not (c["metric"] == "ndcg@10" and ranks == "marginal" and level == "0.95"
                     and c["precision"] == "fp32" and c["setting"] == "full")]
    assert len(links) >= FLOOD_SIZES[kind], (kind, len(links))
    return links[:FLOOD_SIZES[kind]]


def documented_bound_mib() -> int:
    """The per-process memory bound docs/hosting.md states for the default gate (one computation slot)."""
    text = (ROOT / "docs" / "hosting.md").read_text(encoding="utf-8")
    found = re.search(r"stays under \*\*([\d,.]+) (MiB|GiB)\*\*", text)
    assert found, "docs/hosting.md states no memory bound per process (\"stays under **N MiB**\")"
    number = float(found.group(1).replace(",", ""))
    return int(number * (1024 if found.group(2) == "GiB" else 1))


def fetch(url: str, timeout: float = 180) -> tuple[int, dict, bytes, float]:
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            body = response.read()
            return response.status, {k.lower(): v for k, v in response.headers.items()}, body, \
                time.perf_counter() - started
    except urllib.error.HTTPError as refused:
        body = refused.read()
        return refused.code, {k.lower(): v for k, v in refused.headers.items()}, body, time.perf_counter() - started


def peak_rss_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) / 1024


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TIEBREAK_COMPUTE_", "TIEBREAK_CACHE", "STREAMLIT_"))}  # shipped limits, no disk cache
    log = tmp_path_factory.mktemp("flood") / "streamlit.log"
    proc, base = start_server(ROOT / "data", log, env=env)
    try:
        yield proc, base, log
    finally:
        stop_server(proc)


def timed(url: str, n: int) -> list[float]:
    times = []
    for _ in range(n):
        status, _, _, seconds = fetch(url)
        assert status == 200
        times.append(seconds)
    return times


@pytest.mark.parametrize("kind", list(FLOOD_SIZES))
def test_a_flood_of_distinct_expensive_requests_leaves_the_server_answering(server, kind):
    proc, base, log = server
    default = f"{base}/api/v1/leaderboard"
    deadline = time.monotonic() + 180
    while fetch(default)[0] != 200:  # the warm start prepares it; until then it waits for the same answer
        assert time.monotonic() < deadline
    before = timed(default, TIMINGS)

    links = flood_links(json.loads(fetch(f"{base}/api/v1/conditions")[2])["conditions"], kind)
    results: dict[int, tuple[int, dict, bytes, float]] = {}

    def ask(i: int) -> None:
        results[i] = fetch(f"{default}?{links[i]}")

    flood = [threading.Thread(target=ask, args=(i,)) for i in range(len(links))]
    for thread in flood:
        thread.start()
    time.sleep(1.0)  # every request has arrived: one computing, the queue full, the rest refused
    during = []
    for _ in range(TIMINGS):  # the default board, timed while the flood is being computed
        if not any(thread.is_alive() for thread in flood):
            break
        during += timed(default, 1)
    for thread in flood:
        thread.join(300)
    idle = statistics.median(before + timed(default, TIMINGS))  # idle before and after: the machine's own noise

    assert len(during) >= 3, f"the flood was over after {len(during)} timings: too little was measured"
    assert statistics.median(during) <= 2 * idle, (idle, during)
    statuses = sorted(status for status, *_ in results.values())
    assert len(results) == len(links) and set(statuses) <= {200, 503}, statuses
    assert statuses.count(503) > 0 and statuses.count(200) > 0, statuses
    for status, headers, body, _ in results.values():
        answer = json.loads(body)
        if status == 503:
            assert int(headers["retry-after"]) >= 1 and "busy" in answer["error"]
        else:
            assert answer["uncertainty"] and answer["ranked"]
    text = log.read_text(errors="replace")
    assert "MemoryError" not in text and "Traceback" not in text
    peak = peak_rss_mib(proc.pid)
    assert peak <= documented_bound_mib(), f"peak RSS {peak:.0f} MiB"
    print(f"{kind}: idle {idle:.3f} s, during the flood {statistics.median(during):.3f} s (median of {len(during)}); "
          f"{statuses.count(200)} answered, {statuses.count(503)} busy; peak RSS {peak:.0f} MiB")
