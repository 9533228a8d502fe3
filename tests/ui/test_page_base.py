"""ui/page_base.py: the middleware adds the base-URL script and the stylesheet (ui/page_style.py) to HTML pages
only, with a correct length, and leaves everything else (server routes, WebSockets, other methods and statuses,
compressed bodies) byte for byte."""
from __future__ import annotations

import asyncio

from ui import page_base, page_style

PAGE = b"<!DOCTYPE html><html><head><title>x</title><script src='./static/a.js'></script></head></html>"


def _serve(body: bytes, content_type: bytes = b"text/html", status: int = 200, extra=(), chunks: int = 1):
    async def app(scope, receive, send):
        app.seen = scope
        await send({"type": "http.response.start", "status": status, "headers": [
            (b"content-type", content_type), (b"content-length", str(len(body)).encode()),
            (b"etag", b'"abc"'), *extra]})
        step = max(1, len(body) // chunks)
        parts = [body[i:i + step] for i in range(0, len(body), step)] or [b""]
        for n, part in enumerate(parts):
            await send({"type": "http.response.body", "body": part, "more_body": n < len(parts) - 1})
    return app


def _call(app, path="/rank-flips", method="GET", kind="http"):
    sent = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request"}

    scope = {"type": kind, "method": method, "path": path, "headers": [(b"accept-encoding", b"gzip")]}
    asyncio.run(page_base.BackendBaseFromPage(app)(scope, receive, send))
    headers = dict(sent[0]["headers"]) if sent and sent[0]["type"] == "http.response.start" else {}
    return headers, b"".join(m.get("body", b"") for m in sent[1:])


def test_an_html_page_gets_the_script_before_streamlits_own_with_its_new_length():
    app = _serve(PAGE, chunks=3)
    headers, body = _call(app)
    assert body == PAGE.replace(b"<script", page_base.SCRIPT + b"<script", 1).replace(
        b"</head>", page_style.STYLE + b"</head>", 1)
    assert headers[b"content-length"] == str(len(body)).encode()
    assert b"etag" not in headers, "the tag described the unedited file"
    assert dict(app.seen["headers"]).get(b"accept-encoding") is None, "asked for uncompressed"


def test_the_script_sets_both_base_urls_to_the_folder_of_the_page():
    script = page_base.SCRIPT.decode()
    assert 'new URL(".",window.location.href)' in script
    assert "BACKEND_BASE_URL:base" in script and "MAIN_PAGE_BASE_URL:base" in script
    assert page_base.inject(page_base.inject(PAGE)) == page_base.inject(PAGE), "added once"


def test_the_stylesheet_goes_last_in_the_head_once_even_where_the_script_is_there_already():
    with_script = page_base.inject(PAGE).replace(page_style.STYLE, b"")
    assert with_script.count(page_base.SCRIPT) == 1
    once = page_base.inject(with_script)
    assert once.count(page_base.SCRIPT) == 1 and once.count(page_style.STYLE) == 1
    assert once.index(page_style.STYLE) + len(page_style.STYLE) == once.index(b"</head>")
    assert page_base.inject(b"<html><body>no head</body></html>") == b"<html><body>no head</body></html>"


def test_everything_else_passes_unchanged():
    for path in ("/_stcore/health", "/static/js/x.js", "/tiebreak/_stcore/host-config", "/media/a.png"):
        headers, body = _call(_serve(PAGE), path=path)
        assert body == PAGE and b"etag" in headers, path
    assert _call(_serve(b'{"a": 1}', b"application/json"))[1] == b'{"a": 1}'
    assert _call(_serve(PAGE, status=404))[1] == PAGE
    assert _call(_serve(b"\x1f\x8b...", extra=[(b"content-encoding", b"gzip")]))[1] == b"\x1f\x8b..."
    assert _call(_serve(PAGE), method="POST")[1] == PAGE
