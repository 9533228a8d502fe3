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

What a web client expects of it:

- **Methods**: GET and HEAD; OPTIONS (a CORS preflight, or a question about the methods) is answered 204;
  anything else 405.
- **Compression**: gzip when the request's ``Accept-Encoding`` accepts it (answers of :data:`GZIP_MIN_BYTES`
  or more); ``Vary: Accept-Encoding`` always.
- **Revalidation**: a 200 carries a weak ``ETag`` — a digest of the code, the data folder's fingerprint, the
  endpoint and the query — and ``Last-Modified`` (``ui.api_answers.last_modified``); ``If-None-Match`` (or,
  without it, ``If-Modified-Since``) that still holds is answered 304 before anything is computed.
- **CORS**: every answer under ``/api/`` carries ``Access-Control-Allow-Origin: *`` (public, read-only data; never
  credentials) unless the operator turns it off or names the origins allowed (:data:`CORS_VARIABLE`).
- **Errors** are JSON, ``{"error": "...", "notices": [...]}``: 400 a refused request (``refused`` names every bad
  key), 404 no such endpoint, system or data, 405, 501 a key of the view's link this API does not answer yet,
  503 busy (too many expensive computations at once in this process, ``ui/gate.py``; ``Retry-After`` says when to
  try again), and for a failure of the server itself 500 naming an incident id that the server log has with
  the traceback (never the traceback).

Nothing here is imported by the data API: the first API request imports it, so the server starts as fast as
without the API.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import logging
import os
import uuid
from email.utils import formatdate, parsedate_to_datetime

import streamlit as st
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match, Route

from ui import gate

LOG = logging.getLogger("tiebreak.app")
VERSION = 1
ROOT = f"/api/v{VERSION}/"
ENDPOINTS = ("conditions", "leaderboard", "system", "rank-flips")
METHODS = ("GET", "HEAD")
ALLOW = "GET, HEAD, OPTIONS"
MAX_QUERY_BYTES = 16_384
"""Longest query string answered: a view's link with every key at its longest value fits (the first gate caps
values at 200 characters and keys at 40)."""
MAX_ANSWER_BYTES = 32 * 2**20
"""Largest answer sent; a larger one is refused (the rows per list are also capped, ``ui/api_answers.py``)."""
CACHE_CONTROL = "public, max-age=60"
"""Answers are recomputed when the data folder changes (checked at most every 2 s); a client may keep one a
minute, then revalidate it (ETag / Last-Modified)."""
GZIP_MIN_BYTES = 1024
GZIP_LEVEL = 6
"""Compression of an answer (~0.2 s of CPU per MB at level 6; the default board's 173 kB become ~25 kB)."""
CORS_VARIABLE = "TIEBREAK_API_CORS"
"""The operator's switch: unset, ``*`` or ``on`` — any origin may read the API (the default); ``off`` — no CORS
header at all (only pages of the app's own origin, and clients that are not browsers, read it); or a
comma-separated list of origins (``https://lab.example.org,https://notebooks.example.org``) — those only."""
CORS_EXPOSED = "ETag, Retry-After"
"""Response headers a page of another origin may read besides the safelisted ones (Last-Modified is one)."""
CORS_REQUEST_HEADERS = "Accept, Accept-Language, Cache-Control, If-Modified-Since, If-None-Match"
"""Request headers a cross-origin page may send (a preflight asks)."""
CORS_MAX_AGE = "7200"
"""Seconds a browser may keep a preflight's answer (Chromium caps it at 7200)."""
OFF = ("off", "0", "no", "false", "none")


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


# -------------------------------------------------------------------------------------------- headers
def cors(request: Request) -> dict[str, str]:
    """The CORS headers of an answer to ``request`` under :data:`CORS_VARIABLE`'s setting (read per request).
    Never ``Access-Control-Allow-Credentials``: the API reads no cookie and the data are public."""
    setting = os.environ.get(CORS_VARIABLE, "").strip()
    if setting.lower() in OFF:
        return {}
    if setting.lower() in ("", "*", "on", "1", "yes", "true"):
        return {"Access-Control-Allow-Origin": "*", "Access-Control-Expose-Headers": CORS_EXPOSED}
    allowed = {origin.strip().rstrip("/") for origin in setting.split(",") if origin.strip()}
    origin = request.headers.get("origin", "")
    headers = {"Vary": "Origin"}  # the answer differs by the asking origin: a shared cache must key on it
    if origin in allowed:
        headers |= {"Access-Control-Allow-Origin": origin, "Access-Control-Expose-Headers": CORS_EXPOSED}
    return headers


def _vary(*names: str) -> str:
    return ", ".join(dict.fromkeys(name.strip() for part in names for name in part.split(",") if name.strip()))


def wants_gzip(request: Request) -> bool:
    """Whether the request's ``Accept-Encoding`` accepts gzip (``gzip`` or ``*`` with a weight above 0)."""
    weights = {}
    for part in request.headers.get("accept-encoding", "").lower().split(","):
        name, _, params = part.strip().partition(";")
        weight = 1.0
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        if name:
            weights[name] = weight
    return weights.get("gzip", weights.get("x-gzip", weights.get("*", 0.0))) > 0


def _send(request: Request, status: int, record: dict | None, headers: dict | None = None) -> Response:
    """``record`` as JSON with ``status``, compressed when the client accepts gzip, without its body for HEAD
    (its headers are the GET answer's), with the CORS headers."""
    head = request.method == "HEAD"
    headers = {"Cache-Control": CACHE_CONTROL if status in (200, 304) else "no-store",
               "X-Content-Type-Options": "nosniff", **(headers or {})}
    allowed = cors(request)
    headers["Vary"] = _vary("Accept-Encoding", allowed.pop("Vary", ""), headers.get("Vary", ""))
    headers |= allowed
    if record is None:  # 304 / 204: no body
        return Response(status_code=status, headers=headers)
    body = json.dumps(record, allow_nan=False, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if len(body) >= GZIP_MIN_BYTES and wants_gzip(request):
        body = gzip.compress(body, compresslevel=GZIP_LEVEL, mtime=0)
        headers["Content-Encoding"] = "gzip"
    if head:
        headers["Content-Length"] = str(len(body))
        body = b""
    return Response(body, status, headers=headers, media_type="application/json")


def error(request: Request, status: int, notices: list[str], refused: list[str] | None = None,
          headers: dict | None = None) -> Response:
    """``{"error": one line, "notices": [...]}`` with ``status``; a refusal (400) says so, and names the keys
    refused (``refused``, also for a 501: keys this API does not answer yet)."""
    record: dict = {"error": " ".join(notices), "notices": notices}
    if status == 400:
        keys = ", ".join(f"`{key}`" for key in refused or [])
        record["error"] = f"Refused{f' ({keys})' if keys else ''}; nothing was computed. {record['error']}"
    if status == 400 or refused:
        record["refused"] = list(refused or [])
    return _send(request, status, record, headers)


# -------------------------------------------------------------------------------------------- revalidation
def etag(question) -> str:
    """The weak ETag of an answer: what it is computed from — the code, the data folder's snapshot, the endpoint
    and the query as given (``ui.api_answers.Question``)."""
    from ui import api_answers

    digest = hashlib.blake2b(digest_size=16)
    for part in (api_answers.CODE_DIGEST, str(question.data_dir), question.snapshot.fingerprint,
                 question.endpoint.name, json.dumps(question.items, ensure_ascii=False)):
        digest.update(part.encode("utf-8") + b"\0")
    return f'W/"{digest.hexdigest()}"'


def _same_tag(a: str, b: str) -> bool:
    """Weak comparison (RFC 9110 § 8.8.3.2): the opaque tags are equal, ``W/`` or not."""
    return a.strip().removeprefix("W/") == b.strip().removeprefix("W/")


def not_modified(request: Request, tag: str, modified: float) -> bool:
    """Whether ``request``'s preconditions say the client's copy is current (RFC 9110 § 13.2.2:
    ``If-None-Match`` decides when present, else ``If-Modified-Since``)."""
    match = request.headers.get("if-none-match")
    if match is not None:
        return any(candidate.strip() == "*" or _same_tag(candidate, tag) for candidate in match.split(","))
    since = request.headers.get("if-modified-since")
    if since:
        try:
            return int(modified) <= parsedate_to_datetime(since).timestamp()
        except (TypeError, ValueError, OverflowError):
            return False
    return False


# -------------------------------------------------------------------------------------------- endpoints
def _refused_method(request: Request) -> Response | None:
    if request.method in METHODS:
        return None
    if request.method == "OPTIONS":
        return preflight(request)
    return error(request, 405, [f"{request.method} is not allowed: the API only reads (GET, HEAD)."],
                 headers={"Allow": ALLOW})


def preflight(request: Request) -> Response:
    """OPTIONS: 204 with ``Allow``; a CORS preflight (``Access-Control-Request-Method``) also gets what a page of
    another origin may do — GET and HEAD, the conditional headers — when CORS is on."""
    headers = {"Allow": ALLOW}
    if request.headers.get("access-control-request-method") and cors(request).get("Access-Control-Allow-Origin"):
        headers |= {"Access-Control-Allow-Methods": ", ".join(METHODS),
                    "Access-Control-Allow-Headers": CORS_REQUEST_HEADERS, "Access-Control-Max-Age": CORS_MAX_AGE}
    response = _send(request, 204, None, headers)
    response.headers["Cache-Control"] = "no-store"
    return response


def busy(request: Request, refusal: gate.Busy) -> Response:
    """503 with ``Retry-After``: the process runs as many expensive computations as it may (``ui/gate.py``)."""
    return error(request, 503, [f"The server is busy computing other answers ({refusal.running} running, "
                                f"{refusal.waiting} waiting); try again in {refusal.retry_after} s."],
                 headers={"Retry-After": str(refusal.retry_after)})


def answer(request: Request) -> Response:
    """One endpoint's answer (run in Starlette's thread pool: the questions are computed, or read from the
    dashboard's answer cache)."""
    refused = _refused_method(request)
    if refused is not None:
        return refused
    if len(request.scope.get("query_string", b"")) > MAX_QUERY_BYTES:
        return error(request, 400, [f"The query is longer than {MAX_QUERY_BYTES:,} bytes."])
    from ui import api_answers  # on the first request: the server starts without the data API
    from ui.data import DataChanged

    try:
        question = api_answers.question(request.path_params["endpoint"], request.query_params.multi_items())
        tag, modified = etag(question), api_answers.last_modified(question)
        validators = {"ETag": tag, "Last-Modified": formatdate(modified, usegmt=True)}
        if not_modified(request, tag, modified):
            return _send(request, 304, None, validators)
        response = _send(request, 200, api_answers.answer(question), validators)
    except api_answers.ApiError as refusal:
        return error(request, refusal.status, refusal.notices, refusal.refused)
    except gate.Busy as refusal:
        return busy(request, refusal)
    except DataChanged:  # new files arrived mid-answer: asked again in a moment, it is answered from them
        return busy(request, gate.Busy(request.url.path, "the data changed while answering", 1,
                                       gate.GATE.running, gate.GATE.waiting))
    except MemoryError:  # outside the gate's computations: as busy, never a 500
        LOG.warning("API %s: out of memory", request.url.path)
        return busy(request, gate.Busy(request.url.path, "out of memory", gate.GATE.retry_after(),
                                       gate.GATE.running, gate.GATE.waiting))
    except Exception:  # the server's own failure: logged with its traceback, never shown
        incident = uuid.uuid4().hex[:8]
        LOG.exception("API %s failed (incident %s)", request.url.path, incident)
        return error(request, 500, [f"The server could not answer (incident {incident}; details are in the server "
                                    "log)."])
    if int(response.headers["content-length"]) > MAX_ANSWER_BYTES:
        return error(request, 400, [f"The answer is larger than {MAX_ANSWER_BYTES:,} bytes: narrow it with the "
                                    "filters."])
    return response


def not_found(request: Request) -> Response:
    """Any other path under ``/api/``: 404 in JSON naming the endpoints (not the dashboard's HTML page)."""
    refused = _refused_method(request)
    if refused is not None:
        return refused
    return error(request, 404, [f"No such endpoint; endpoints: {', '.join(ROOT + e for e in ENDPOINTS)}."])


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
