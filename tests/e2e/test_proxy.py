"""Hosting behind a reverse proxy (docs/hosting.md), end to end in real Chromium.

Two app processes started by ``deploy/serve.sh`` (the production profile ``deploy/production.env``: prefix
``/tiebreak``, XSRF on, …) serve a read-only copy of the shipped ``data/``, behind Debian's nginx running
``deploy/nginx/tiebreak.conf`` on loopback (``tests/e2e/proxy_stack.py``: only ports and paths replaced).
Chromium reaches nginx as ``http://tiebreak.test:PORT`` (a name mapped to 127.0.0.1 with
``--host-resolver-rules``) and as ``http://127.0.0.1:PORT``; it never sees an app port.

Checked: a deep link opens its view; a changed control lands in the share link, which names the host, port and
prefix the browser used (never ``localhost`` or an app port) and reopens the same view in a fresh browser whose
route cookie sends it to the *other* app process; every page through the sidebar; the health check, a download
and redirects through the prefix; the WebSocket upgrade (and a foreign page's WebSocket refused at the proxy);
sticky sessions (every request of a browser reaches one process); no request leaves the page's origin; nothing
is written into the data folder (the store writes nothing at run time; its derived data ships in ``data/``).
The JSON API (``ui/api.py``) under the prefix: the API URL the share box shows answers the view's numbers, the
default view and shared links give the CLI's numbers, hostile parameters and other methods JSON errors; answers
come gzipped when asked, revalidate (304), carry CORS headers, and a page of another origin reads them in
Chromium; nginx limits the API per client address (429 in JSON with Retry-After), not the pages.

Needs Debian's ``chromium`` and ``nginx`` (``scripts/install-dev.sh``): skipped locally without them, failed
when ``CI=true``. Screenshots go to ``test-artifacts/proxy_*.png``.
"""
from __future__ import annotations

import base64
import csv
import difflib
import io
import json
import os
import re
import socket
import time
import urllib.error
import urllib.request
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import proxy_stack
from api_numbers import assert_same_board, cli_args, cli_board
from needs import missing
from test_browser import CHROMIUM, assert_no_exception, choose, metric, screenshot, selected, share_link, wait_idle

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
HOST = "tiebreak.test"  # .test is reserved: never a real host; Chromium maps it to 127.0.0.1
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", f"--host-resolver-rules=MAP {HOST} 127.0.0.1"]
ROUTE_COOKIE = "tiebreak_route"
DEEP_LINK = "rank-flips?bench=rar-b&setting=mcr&metric=p%401&instr=without&flip_a=fp32&flip_b=bf16"
BOARD_LINK = "?bench=rar-b&setting=mcr&metric=p%401&instr=without&prec=fp32"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    if proxy_stack.nginx_binary() is None:
        missing("the proxy test needs nginx (apt-get install nginx, or bash scripts/install-dev.sh)")
    tmp = tmp_path_factory.mktemp("proxy")
    running = proxy_stack.start(tmp, ROOT / "data", processes=2)
    yield running
    running.close()


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        missing(f"browser tests cannot run: {CHROMIUM} not found (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("browser tests cannot run: playwright is not installed")
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@contextmanager
def visitor(browser, origin: str, route: str | None = None):
    """A fresh browser context (no cookies, no cache) that records every request it makes; on exit, every one
    must have stayed on ``origin``. ``route`` presets the proxy's route cookie (which app process serves it)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    seen: list[str] = []
    context.on("request", lambda request: seen.append(request.url))
    context.on("page", lambda page: page.on("websocket", lambda ws: seen.append(ws.url)))
    if route is not None:
        context.add_cookies([{"name": ROUTE_COOKIE, "value": route, "url": f"{origin}/{proxy_stack.PREFIX}/"}])
    try:
        yield context
    finally:
        context.close()
    netloc = urlsplit(origin).netloc
    foreign = [url for url in seen if urlsplit(url).scheme not in ("data", "blob", "about")
               and urlsplit(url).netloc != netloc]
    assert seen and not foreign, f"requests left the origin {origin}: {foreign[:10]}"


def open_page(context, url: str):
    page = context.new_page()
    page.set_default_timeout(90_000)  # shared CI machines: generous, the test checks behaviour, not speed
    page.goto(url)
    wait_idle(page)
    return page


def view_of(page) -> dict:
    """What a visitor sees of a view: the address path, the title, every sidebar control and the main text."""
    controls = page.evaluate("""() => [...document.querySelectorAll(
        "[data-testid=stSidebar] input, [data-testid=stMain] input")].map(e => {
            const choice = e.type === "radio" || e.type === "checkbox";
            const widget = e.closest("[data-testid=stRadio], [data-testid=stCheckbox], [data-testid=stToggle]");
            const group = widget?.querySelector("[data-testid=stWidgetLabel]")?.innerText ?? "";
            const name = choice ? `${group} / ${e.closest("label")?.innerText ?? ""}` : e.getAttribute("aria-label");
            return [name ?? "", choice ? String(e.checked) : e.value];
        })""")
    return {"path": urlsplit(page.url).path, "title": page.locator("h1").first.inner_text().strip(),
            "controls": sorted(map(tuple, controls)),
            "main": page.get_by_test_id("stMainBlockContainer").inner_text()}


def settled_view(page, tries: int = 10) -> dict:
    """:func:`view_of` once two reads a second apart agree (the browser may still be replacing the previous
    run's elements when the script has finished)."""
    wait_idle(page)
    view = view_of(page)
    for _ in range(tries):
        page.wait_for_timeout(1000)
        again = view_of(page)
        if again == view:
            return view
        view = again
    raise AssertionError(f"the view at {page.url} kept changing")


def assert_same_view(fresh: dict, shown: dict) -> None:
    for key in ("path", "title"):
        assert fresh[key] == shown[key], key
    assert fresh["main"] == shown["main"], "\n".join(difflib.unified_diff(
        shown["main"].splitlines(), fresh["main"].splitlines(), "original view", "shared view", lineterm=""))
    assert fresh["controls"] == shown["controls"], (
        f"only in the shared view: {sorted(set(fresh['controls']) - set(shown['controls']))}; "
        f"only in the original: {sorted(set(shown['controls']) - set(fresh['controls']))}")


def routes_by_upstream(stack, tries: int = 24) -> dict[str, str]:
    """One route cookie value per app process (``upstream -> route``), learnt from the access log: the proxy
    hashes the cookie to a process, so the test can send a browser to a chosen one."""
    routes = [os.urandom(16).hex() for _ in range(tries)]
    for route in routes:
        request = urllib.request.Request(stack.url("_stcore/health"), headers={"Cookie": f"{ROUTE_COOKIE}={route}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200
    by_upstream = {}
    for line in stack.access_log.read_text().splitlines():
        fields = dict(re.findall(r"(upstream|route)=(\S+)", line))
        if fields.get("route") in routes:
            by_upstream.setdefault(fields["upstream"], fields["route"])
    assert len(by_upstream) == len(stack.app_ports), f"routes reached {sorted(by_upstream)} only"
    return by_upstream


def upstream_of(stack, route: str) -> set[str]:
    return {m.group(1) for m in re.finditer(rf"upstream=(\S+) route={route}$", stack.access_log.read_text(), re.M)}


def copy_share_link(page) -> str:
    """Open "Share this view", press the box's copy button as a visitor does, and read the clipboard (a secure
    context only: https, or http on a loopback address)."""
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.get_by_test_id("stSidebar").get_by_role("button", name="Share this view").click()
    box = page.get_by_test_id("stPopoverBody").get_by_test_id("stCode").first  # the share link; then the API URL
    box.hover()
    box.get_by_role("button", name="Copy to clipboard").click()
    copied = page.evaluate("() => navigator.clipboard.readText()")
    assert copied == "".join(box.inner_text().split()), "the copy button copies the link shown"
    page.keyboard.press("Escape")
    return copied


def shown_api_url(page) -> str:
    """The API URL the "Share this view" popover shows below the share link (its second code block)."""
    page.get_by_test_id("stSidebar").get_by_role("button", name="Share this view").click()
    box = page.get_by_test_id("stPopoverBody").get_by_test_id("stCode").nth(1)
    box.wait_for(timeout=30_000)
    text = "".join(box.inner_text().split())
    page.keyboard.press("Escape")
    return text


def fetch_json(url: str, method: str = "GET") -> dict:
    """``url``'s JSON answer (an HTTP error's body too), with its status under ``_status``."""
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            status, kind, body = response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as error:
        status, kind, body = error.code, error.headers["Content-Type"], error.read()
    assert kind == "application/json", (url, status, kind, body[:200])
    return {**json.loads(body), "_status": status}


def assert_sticky(stack) -> None:
    """Sticky sessions: in the access log so far, every route cookie's requests (page, WebSocket, downloads)
    went to one app process."""
    by_route = defaultdict(set)
    for line in stack.access_log.read_text().splitlines():
        fields = dict(re.findall(r"(upstream|route)=(\S+)", line))
        if fields.get("upstream", "-") != "-":
            by_route[fields["route"]].add(fields["upstream"])
    assert by_route and all(len(upstreams) == 1 for upstreams in by_route.values()), dict(by_route)


def upgraded(stack, route: str, wait: float = 15) -> bool:
    """Whether a WebSocket of this route was upgraded through the proxy (status 101 on the stream). nginx
    logs a WebSocket when it closes, a moment after its browser context did."""
    pattern = re.compile(rf'/{proxy_stack.PREFIX}/_stcore/stream HTTP/1.1" 101 .* route={route}$', re.M)
    deadline = time.monotonic() + wait
    while not pattern.search(stack.access_log.read_text()):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def assert_link_is_the_browsers(link: str, origin: str, stack) -> None:
    assert link.startswith(f"{origin}/{proxy_stack.PREFIX}/"), link
    assert "localhost" not in link, link
    assert not any(f":{port}" in link for port in stack.app_ports), f"an app port leaked into {link}"


def test_deep_link_and_share_link_through_the_proxy_by_host_name(stack, browser):
    origin = stack.origin(HOST)
    one, other = list(routes_by_upstream(stack).values())[:2]
    with visitor(browser, origin, route=one) as context:
        page = open_page(context, f"{origin}/{proxy_stack.PREFIX}/{DEEP_LINK}")
        assert_no_exception(page)
        assert page.locator("h1").first.inner_text().strip() == "Rank flips"
        # the shipped real runs label each precision with its kind: "fp32 (inference / native)"
        assert selected(page, "Condition A: precision").split(" (")[0] == "fp32"
        assert selected(page, "Condition B: precision").split(" (")[0] == "bf16"
        assert page.get_by_test_id("stAlertContentWarning").count() == 0, "the deep link was honoured whole"
        choose(page, "Condition B: precision", "fp16")
        page.wait_for_url(re.compile("flip_b=fp16"), timeout=30_000)
        wait_idle(page)
        assert_no_exception(page)
        shown = settled_view(page)
        tau = metric(page, "Kendall τ-b")
        screenshot(page, "proxy_rank_flips_changed")
        link = "".join(share_link(page).split())
        wait_idle(page)
    assert_link_is_the_browsers(link, origin, stack)
    assert link.startswith(f"{origin}/{proxy_stack.PREFIX}/rank-flips?") and "flip_b=fp16" in link, link

    with visitor(browser, origin, route=other) as fresh_context:
        fresh = open_page(fresh_context, link)
        assert_no_exception(fresh)
        assert_same_view(settled_view(fresh), shown)
        assert metric(fresh, "Kendall τ-b") == tau
        screenshot(fresh, "proxy_rank_flips_shared")
    first, second = upstream_of(stack, one), upstream_of(stack, other)
    assert len(first) == len(second) == 1 and first != second, "the shared view was drawn by the other process"
    assert upgraded(stack, one) and upgraded(stack, other), "both WebSockets went through the proxy"
    assert_sticky(stack)


def test_root_view_share_link_and_download_by_ip_address(stack, browser):
    origin = stack.origin("127.0.0.1")
    with visitor(browser, origin) as context:
        page = open_page(context, f"{origin}/{proxy_stack.PREFIX}/{BOARD_LINK}")
        assert_no_exception(page)
        assert page.locator("h1").first.inner_text().strip() == "Leaderboard"
        choose(page, "Precision", "bf16")
        page.wait_for_url(re.compile("prec=bf16"), timeout=30_000)
        wait_idle(page)
        shown = settled_view(page)
        ranked = int(re.search(r"(\d+) systems ranked", page.get_by_test_id("stMain").inner_text()).group(1))
        link = copy_share_link(page)
        wait_idle(page)
        assert_link_is_the_browsers(link, origin, stack)
        assert link.startswith(f"{origin}/{proxy_stack.PREFIX}/?") and "prec=bf16" in link, \
            "the app's root is /tiebreak/ (a proxy routing /tiebreak/ need not route /tiebreak)"
        api_link = shown_api_url(page)
        assert api_link == f"{origin}/{proxy_stack.PREFIX}/api/v1/leaderboard?{link.split('?', 1)[1]}", api_link
        answer = fetch_json(api_link)
        assert len(answer["ranked"]) == ranked and answer["condition"]["precision"] == "bf16"

        button = page.get_by_role("button", name="Download CSV")
        button.scroll_into_view_if_needed()
        with page.expect_download(timeout=60_000) as download:
            button.click()
        assert urlsplit(download.value.url).path.startswith(f"/{proxy_stack.PREFIX}/"), download.value.url
        rows = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text(encoding="utf-8"))))
        assert len(rows) >= ranked >= 2 and all(row["system"] for row in rows)
        screenshot(page, "proxy_leaderboard")

    with visitor(browser, origin) as fresh_context:
        fresh = open_page(fresh_context, link)
        assert_no_exception(fresh)
        assert_same_view(settled_view(fresh), shown)
    assert_sticky(stack)


def test_every_page_through_the_sidebar_and_the_data_folder_is_only_read(stack, browser):
    """A first-time visitor clicks through every page; each page's share link is its own address. Afterwards
    (and after every session of this module) the read-only data folder is byte-for-byte and mtime-for-mtime
    what it was."""
    from ui.navigation import PAGES

    origin = stack.origin(HOST)
    with visitor(browser, origin) as context:
        page = open_page(context, f"{origin}/{proxy_stack.PREFIX}/")
        for spec in [*PAGES[1:], PAGES[0]]:
            page.get_by_test_id("stSidebarNav").get_by_role("link").filter(has_text=spec.title).click()
            slug = "" if spec is PAGES[0] else spec.url_path
            page.wait_for_url(re.compile(rf"/{proxy_stack.PREFIX}/{re.escape(slug)}\?"), timeout=30_000)
            wait_idle(page)
            assert_no_exception(page)
            assert page.locator("h1").first.inner_text().strip() == spec.title
            link = "".join(share_link(page).split())
            assert_link_is_the_browsers(link, origin, stack)
            assert link.split("?")[0] == page.url.split("?")[0], (link, page.url)
            screenshot(page, f"proxy_page_{slug or 'leaderboard'}")
    assert_sticky(stack)
    assert proxy_stack.tree_state(stack.data_dir) == stack.data_before, "something was written into data/"


def _handshake(stack, origin: str | None) -> str:
    """The status line nginx answers a WebSocket handshake for the app's stream with."""
    host = f"127.0.0.1:{stack.port}"
    lines = [f"GET /{proxy_stack.PREFIX}/_stcore/stream HTTP/1.1", f"Host: {host}", "Upgrade: websocket",
             "Connection: Upgrade", f"Sec-WebSocket-Key: {base64.b64encode(os.urandom(16)).decode()}",
             "Sec-WebSocket-Version: 13"] + ([f"Origin: {origin}"] if origin else [])
    with socket.create_connection(("127.0.0.1", stack.port), timeout=30) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        return sock.recv(4096).split(b"\r\n")[0].decode()


def test_health_redirect_and_websocket_through_the_prefix(stack):
    with urllib.request.urlopen(stack.url("_stcore/health"), timeout=30) as response:
        assert response.status == 200 and response.read() == b"ok"

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    request = urllib.request.Request(f"{stack.origin()}/{proxy_stack.PREFIX}?{BOARD_LINK[1:]}")
    with pytest.raises(urllib.error.HTTPError) as redirect:
        urllib.request.build_opener(NoRedirect).open(request, timeout=30)
    assert redirect.value.code == 301
    assert redirect.value.headers["Location"] == f"/{proxy_stack.PREFIX}/{BOARD_LINK}", "the view's state is kept"

    assert _handshake(stack, f"http://127.0.0.1:{stack.port}").split()[1] == "101"
    assert _handshake(stack, "http://attacker.test").split()[1] == "403"


API_LINKS = ["", BOARD_LINK[1:], "bench=r2med&setting=full&metric=ndcg%4010&instr=with&prec=fp32&sort=g",
             "bench=rar-b&setting=full-pooled&metric=ndcg%4010&instr=with&prec=fp32&lens=tasks&ranks=simultaneous"
             "&level=0.9"]


@pytest.mark.parametrize("query", API_LINKS, ids=lambda q: q or "default")
def test_api_through_the_proxy_gives_the_clis_numbers(stack, query):
    """The Leaderboard's API URL under the prefix, through nginx, is ``evalcore leaderboard --format json``."""
    from urllib.parse import parse_qsl

    answer = fetch_json(stack.url(f"api/v1/leaderboard?{query}"))
    assert answer["_status"] == 200
    assert_same_board(answer, cli_board(stack.data_dir, cli_args(dict(parse_qsl(query)))))


def test_api_through_the_proxy_refuses_in_json(stack):
    flips = fetch_json(stack.url(f"api/v1/{DEEP_LINK}"))
    assert flips["_status"] == 200 and flips["precision_a"] == "fp32" and flips["precision_b"] == "bf16"
    for query in ("bench=%3Cscript%3Ealert(1)%3C%2Fscript%3E", "evil=1", f"q={'x' * 5_000}", "bench=rar%E2%80%AEb%00",
                  "bench=rar-b&bench=r2med"):
        refused = fetch_json(stack.url(f"api/v1/leaderboard?{query}"))
        assert refused["_status"] == 400 and refused["error"], query
        assert "<script>" not in json.dumps(refused) and "Traceback" not in json.dumps(refused)
    with pytest.raises(urllib.error.HTTPError) as too_long:  # nginx's own limit (8 kB lines) comes first
        urllib.request.urlopen(stack.url(f"api/v1/leaderboard?q={'x' * 10_000}"), timeout=60)
    assert too_long.value.code == 414
    for method in ("POST", "PUT", "DELETE"):
        assert fetch_json(stack.url("api/v1/leaderboard"), method)["_status"] == 405
    assert fetch_json(stack.url("api/v1/nothing-here"))["_status"] == 404
    with urllib.request.urlopen(urllib.request.Request(stack.url("api/v1/conditions"), method="HEAD"),
                                timeout=60) as head:
        assert head.status == 200 and head.read() == b"" and int(head.headers["Content-Length"]) > 0


def _raw(url: str, headers: dict | None = None, method: str = "GET", source: str | None = None):
    """(status, headers with lower-case names, body bytes as sent) of one request, from ``source`` (an address
    of this machine, e.g. 127.0.0.2: another client) when given."""
    import http.client

    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120,
                                            source_address=(source, 0) if source else None)
    try:
        connection.request(method, f"{parts.path}?{parts.query}" if parts.query else parts.path,
                           headers=headers or {})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def test_api_through_the_proxy_compresses_revalidates_and_allows_other_origins(stack):
    import gzip

    url = stack.url("api/v1/leaderboard")
    status, headers, body = _raw(url, {"Accept-Encoding": "gzip", "Origin": "https://notebooks.example.org"})
    assert status == 200 and headers["content-encoding"] == "gzip" and "Accept-Encoding" in headers["vary"]
    answer = json.loads(gzip.decompress(body))
    assert answer["ranked"] and headers["access-control-allow-origin"] == "*"
    assert headers["etag"].startswith('W/"') and headers["last-modified"]
    status, again, body = _raw(url, {"If-None-Match": headers["etag"]})
    assert status == 304 and body == b"" and again["etag"] == headers["etag"]
    status, preflight, _ = _raw(url, {"Origin": "https://notebooks.example.org", "Access-Control-Request-Method": "GET",
                                      "Access-Control-Request-Headers": "if-none-match"}, method="OPTIONS")
    assert status == 204 and preflight["access-control-allow-origin"] == "*"
    assert "if-none-match" in preflight["access-control-allow-headers"].lower()


def test_a_page_of_another_origin_reads_the_api(stack, browser):
    """CORS in a real browser: a page at http://127.0.0.1:PORT fetches http://tiebreak.test:PORT/…/api — another
    origin — reads the JSON and the ETag, and revalidates with If-None-Match (a preflighted request)."""
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(stack.url("_stcore/health"))
        result = page.evaluate("""async (url) => {
            const first = await fetch(url);
            const board = await first.json();
            const tag = first.headers.get("ETag");
            const again = await fetch(url, {headers: {"If-None-Match": tag}});
            return {status: first.status, systems: board.ranked.length, tag, revalidated: again.status};
        }""", stack.url("api/v1/leaderboard", host=HOST))
    finally:
        context.close()
    assert result["status"] == 200 and result["systems"] > 100
    assert result["tag"] and result["tag"].startswith('W/"')  # exposed to the other origin
    assert result["revalidated"] == 304


def test_the_api_is_rate_limited_per_client_at_the_proxy(stack):
    """nginx's second line: one address asking the API 40 times at once gets 429s in JSON with Retry-After
    (at most 8 at a time, 10 a second with bursts of 20), never a 5xx; another address is served meanwhile;
    the pages are not counted. Last in this module: the limit needs ~2 s to forget the burst."""
    from concurrent.futures import ThreadPoolExecutor

    url = stack.url("api/v1/conditions")
    with ThreadPoolExecutor(40) as pool:
        answers = list(pool.map(lambda _: _raw(url), range(40)))
        other = pool.submit(_raw, url, None, "GET", "127.0.0.2").result()
        pages = list(pool.map(lambda _: _raw(stack.url("_stcore/health"))[0], range(40)))
    statuses = sorted(status for status, _, _ in answers)
    assert set(statuses) <= {200, 429} and statuses.count(429) >= 10 and statuses.count(200) >= 8, statuses
    for status, headers, body in answers:
        if status == 429:
            assert headers["retry-after"] == "1" and headers["content-type"] == "application/json"
            assert "Too many requests" in json.loads(body)["error"]
    assert other[0] == 200, "another client address is not limited by this one's requests"
    assert pages == [200] * 40, "the pages are not limited by the API's zone"
    time.sleep(3)  # the bucket empties (10 a second)
    assert _raw(url)[0] == 200
