"""The read-only JSON API, served by the dashboard's own server: routes of the ``st.App`` (``app.py``).

``GET /api/v1/<endpoint>?<a view's URL parameters>`` answers the question that view's page asks, with the page's
numbers (``ui/api_answers.py``; guide: docs/api.md):

- ``conditions``: every condition the data has results under;
- ``leaderboard``: the Leaderboard of a link (``/?bench=…``: the same keys);
- ``system``: one system's row and task scores, the Leaderboard's keys plus ``system=NAME``;
- ``rank-flips``: the Rank flips view of a link (``/rank-flips?…``).

Behind a proxy the server's path prefix (``server.baseUrlPath``, e.g. ``/tiebreak``) comes first, as for every
Streamlit route: ``/tiebreak/api/v1/leaderboard``. A route matches under the prefix the server runs with, read
per request (Streamlit's own routes are built with it; user routes are matched as given).

Only GET and HEAD; anything else is 405. Every answer is JSON: a record (200), or ``{"error": "...",
"notices": [...]}`` with 400 (a parameter the view would drop), 404 (no such endpoint, system or data) or 405,
and for a failure of the server itself 500 naming an incident id that the server log has with the traceback
(never the traceback). Nothing here is imported by the data API: the first API request imports it, so the
server starts as fast as without the API.
"""
from __future__ import annotations

import json
import logging
import uuid

import streamlit as st
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match, Route

LOG = logging.getLogger("tiebreak.app")
VERSION = 1
ROOT = f"/api/v{VERSION}/"
ENDPOINTS = ("conditions", "leaderboard", "system", "rank-flips")
METHODS = ("GET", "HEAD")
MAX_QUERY_BYTES = 16_384
"""Longest query string answered: a view's link with every key at its longest value fits (the first gate caps
values at 200 characters and keys at 40)."""
MAX_ANSWER_BYTES = 32 * 2**20
"""Largest answer sent; a larger one is refused (the rows per list are also capped, ``ui/api_answers.py``)."""
CACHE_CONTROL = "public, max-age=60"
"""Answers are recomputed when the data folder changes (checked at most every 2 s); a client may keep one a
minute."""


def base_path() -> str:
    """The server's path prefix as a path (``/tiebreak``), '' when it has none."""
    base = (st.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{base}" if base else ""


class UnderBase(Route):
    """A route whose path is taken under the server's path prefix (``server.baseUrlPath``), as Streamlit's own
    routes are; every method reaches the endpoint (which answers 405 in JSON)."""

    def __init__(self, path: str, endpoint) -> None:
        super().__init__(path, endpoint)
        self.methods = None  # Starlette answers a function's other methods 405 in plain text; the endpoint does

    def matches(self, scope):
        if scope["type"] != "http":
            return Match.NONE, {}
        base, path = base_path(), scope.get("path", "")
        if base:
            if not path.startswith(base + "/"):
                return Match.NONE, {}
            scope = {**scope, "path": path[len(base):], "root_path": ""}
        return super().matches(scope)


def _json(status: int, record: dict, headers: dict | None = None, head: bool = False) -> Response:
    body = json.dumps(record, allow_nan=False, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    headers = {"Cache-Control": CACHE_CONTROL if status == 200 else "no-store", "X-Content-Type-Options": "nosniff",
               **(headers or {})}
    if head:  # the headers of the GET answer, without its body
        headers["Content-Length"] = str(len(body))
        body = b""
    return Response(body, status, headers=headers, media_type="application/json")


def error(status: int, notices: list[str], head: bool = False, headers: dict | None = None) -> Response:
    """``{"error": all notices in one line, "notices": [...]}`` with ``status``."""
    return _json(status, {"error": " ".join(notices), "notices": notices}, headers, head)


def _method_not_allowed(request: Request) -> Response | None:
    if request.method in METHODS:
        return None
    return error(405, [f"{request.method} is not allowed: the API only reads (GET, HEAD)."],
                 headers={"Allow": ", ".join(METHODS)})


def answer(request: Request) -> Response:
    """One endpoint's answer (run in Starlette's thread pool: the questions are computed, or read from the
    dashboard's answer cache)."""
    refused = _method_not_allowed(request)
    if refused is not None:
        return refused
    head = request.method == "HEAD"
    if len(request.scope.get("query_string", b"")) > MAX_QUERY_BYTES:
        return error(400, [f"The query is longer than {MAX_QUERY_BYTES:,} bytes."], head)
    from ui import api_answers  # on the first request: the server starts without the data API

    name = request.path_params["endpoint"]
    try:
        record = api_answers.answer(name, request.query_params.multi_items())
        response = _json(200, record, head=head)
    except api_answers.ApiError as refusal:
        return error(refusal.status, refusal.notices, head)
    except Exception:  # the server's own failure: logged with its traceback, never shown
        incident = uuid.uuid4().hex[:8]
        LOG.exception("API %s failed (incident %s)", request.url.path, incident)
        return error(500, [f"The server could not answer (incident {incident}; details are in the server log)."],
                     head)
    if int(response.headers["content-length"]) > MAX_ANSWER_BYTES:
        return error(400, [f"The answer is larger than {MAX_ANSWER_BYTES:,} bytes: narrow it with the filters."],
                     head)
    return response


def not_found(request: Request) -> Response:
    """Any other path under ``/api/``: 404 in JSON naming the endpoints (not the dashboard's HTML page)."""
    refused = _method_not_allowed(request)
    if refused is not None:
        return refused
    return error(404, [f"No such endpoint; endpoints: {', '.join(ROOT + e for e in ENDPOINTS)}."],
                 request.method == "HEAD")


ROUTES = [
    UnderBase(ROOT + "{endpoint:str}", answer),
    UnderBase("/api", not_found),
    UnderBase("/api/{rest:path}", not_found),
]
"""What ``app.py`` hands to ``st.App(routes=...)``."""


def api_url(page_url: str | None, params: dict, endpoint: str) -> str:
    """The API URL answering the view at ``page_url`` (the share link's address) with ``params``: the app's
    root (the page's folder, as ``ui/page_base.py`` finds it) + ``api/v1/<endpoint>`` + the same query."""
    from urllib.parse import urlsplit, urlunsplit

    from ui.state import share_url

    parts = urlsplit(page_url or "")
    folder = parts.path[: parts.path.rfind("/") + 1] if parts.path else "/"
    base = urlunsplit((parts.scheme, parts.netloc, f"{folder}api/v{VERSION}/{endpoint}", "", ""))
    return share_url(params, base)
