"""Deep links without 404s: tell Streamlit's frontend where its server is, instead of letting it guess.

Opened at a page's own address (``/rank-flips``), Streamlit's frontend does not know whether ``rank-flips`` is
a page or a path prefix the server is mounted under, so it asks both ``/rank-flips/_stcore/health`` (and
``/_stcore/host-config``) and ``/_stcore/health``; the first pair answer 404 (streamlit/streamlit#7074). The
frontend reads the server's base URL from ``window.__streamlit.BACKEND_BASE_URL`` (and the main page's from
``MAIN_PAGE_BASE_URL``) when the page sets them (streamlit/streamlit#11378, #11537: the window variables
meant for this, whose PR names the 404 as what they make fixable by setting them in ``index.html``).

:class:`BackendBaseFromPage` is an ASGI middleware for the ``st.App`` (``app.py``; ``st.App(middleware=...)``
is public API). Into every HTML page the server sends it adds one inline script, before Streamlit's own, that
sets both to the folder of the page's address — ``new URL(".", location.href)``: ``/`` for ``/rank-flips``,
``/tiebreak/`` for ``/tiebreak/rank-flips`` — the same rule that resolves the page's own relative
``./static/…`` links, so it holds behind any path prefix or proxy without knowing either. Page addresses are
one segment below the app's root (``ui/navigation.py``), which is what makes that folder the root.

The same edit puts the dashboard's stylesheet (:data:`ui.page_style.STYLE`: what the theme cannot say, e.g. the
contrast of captions) at the end of the page's head, so every view has it from the first paint.
"""
from __future__ import annotations

from ui import page_style

SCRIPT = (b'<script>window.__streamlit=Object.assign({},window.__streamlit,(function(){'
          b'var base=new URL(".",window.location.href).href;'
          b'return{BACKEND_BASE_URL:base,MAIN_PAGE_BASE_URL:base};})());</script>')
"""The inline script added to each HTML page (before ``</head>``'s first script, see :func:`inject`)."""

_SERVER_PATHS = ("/_stcore/", "/static/", "/media/", "/component/", "/app/static/", "/api/")
"""Paths that are never an HTML page: passed through untouched (the JSON API, ``ui/api.py``, compresses its
answers itself when the client asks)."""


def inject(html: bytes) -> bytes:
    """``html`` with :data:`SCRIPT` before its first ``<script`` (else before ``</head>``) and
    :data:`ui.page_style.STYLE` before ``</head>``; each added once (a page that already holds it keeps it as it
    is), and nothing added to a page with neither marker."""
    if SCRIPT not in html:
        for marker in (b"<script", b"</head>"):
            at = html.find(marker)
            if at >= 0:
                html = html[:at] + SCRIPT + html[at:]
                break
    if page_style.STYLE not in html:
        at = html.find(b"</head>")
        if at >= 0:
            html = html[:at] + page_style.STYLE + html[at:]
    return html


class BackendBaseFromPage:
    """ASGI middleware: HTML pages (GET, status 200) get :data:`SCRIPT` and the stylesheet (:func:`inject`); everything
    else, WebSockets included, passes through untouched. Page requests are asked for without compression (a
    page is ~2 kB) so the body can be edited; a response that is compressed anyway is passed on as it is. The
    edited page loses its ETag / Last-Modified (they describe the file on disk), so browsers refetch it whole."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if scope["type"] != "http" or scope.get("method") != "GET" or any(part in path for part in _SERVER_PATHS):
            await self.app(scope, receive, send)
            return
        scope = dict(scope, headers=[(k, v) for k, v in scope.get("headers", []) if k.lower() != b"accept-encoding"])
        held: dict = {}
        body: list[bytes] = []

        async def edit(message) -> None:
            if message["type"] == "http.response.start":
                headers = {k.lower(): v for k, v in message.get("headers", [])}
                if message.get("status") != 200 or b"content-encoding" in headers \
                        or not headers.get(b"content-type", b"").startswith(b"text/html"):
                    held["pass"] = True
                    await send(message)
                else:
                    held["start"] = message
                return
            if held.get("pass") or message["type"] != "http.response.body":
                await send(message)
                return
            body.append(message.get("body", b""))
            if message.get("more_body"):
                return
            html = inject(b"".join(body))
            start = held["start"]
            headers = [(k, v) for k, v in start.get("headers", [])
                       if k.lower() not in (b"content-length", b"etag", b"last-modified")]
            headers.append((b"content-length", str(len(html)).encode()))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": html, "more_body": False})

        await self.app(scope, receive, edit)
