"""Streamlit's own scripts and styles served from memory: :class:`StaticFromMemory`, an ASGI middleware for the
``st.App`` (``app.py``; ``st.App(middleware=...)`` is public API).

A first visit fetches ~130 of Streamlit's files (``/static/js/…``, ``/static/css/…``, fonts), then ~50 more as
the page's elements appear. Streamlit serves each from disk through Starlette's ``StaticFiles``: a stat and
every 64 kB chunk on a worker thread, each hop waiting for the GIL, which the warm start (``ui/warm_start.py``)
holds for most of the first second of a new server's life. The first visitor's page load took 0.8–1.1 s
against 0.65 s for a server with nothing to do, and the first visit ended ~0.2 s later than with the files
answered here (bench/HISTORY.md § Dashboard).

What is answered here: ``GET {base}/static/<path>`` where ``<path>`` names a file of Streamlit's ``static/``
folder — content-hashed names, immutable for an installed Streamlit — with the headers Streamlit sends for
them (type, length, ``Cache-Control: public, immutable``, and Starlette's ``ETag`` / ``Last-Modified``, so a
revalidation gets the same answer from either); ``If-None-Match`` with that ETag gets a 304. Each file is read
once per process, on first request, into a cache of at most :data:`CACHE_BYTES`. Everything else — other
methods, ``Range`` requests, other paths, names with anything but letters, digits, ``._-/``, ``..`` segments,
files that are not there or would not fit the cache — goes on to Streamlit unchanged, so its own checks and
answers (400, 404, the index page for unknown paths) stay the same.
"""
from __future__ import annotations

import logging
import mimetypes
import re
import weakref
from email.utils import formatdate
from pathlib import Path

from ui import internals, memo

LOG = logging.getLogger("tiebreak.app")
CACHE_BYTES = memo.STATIC_CACHE_BYTES()
"""At most this many bytes of files per process (a first visit and every view's elements: ~10 MB; Streamlit's
whole folder: 26 MB)."""
_NAME = re.compile(r"[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)*")


def static_folder() -> Path:
    """The ``static/`` folder of Streamlit's frontend build (inside the installed package):
    :func:`ui.internals.streamlit_static_folder`."""
    return internals.streamlit_static_folder()


def _base_path() -> str:
    """``/<server.baseUrlPath>`` (``""`` when the server is at the root)."""
    import streamlit as st

    base = (st.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{base}" if base else ""


class _File:
    __slots__ = ("body", "etag", "headers")

    def __init__(self, path: Path) -> None:
        info = path.stat()
        self.body = path.read_bytes()
        # Starlette's FileResponse: the same ETag and Last-Modified for the same file, so a browser revalidating
        # what Streamlit served gets the same answer here
        self.etag = internals.starlette_etag(info.st_mtime, info.st_size)
        media_type = mimetypes.guess_type(path.name)[0] or "text/plain"
        if media_type.startswith("text/"):  # as Starlette's Response adds it
            media_type += "; charset=utf-8"
        self.headers = [
            (b"content-type", media_type.encode("latin-1")),
            (b"content-length", str(len(self.body)).encode("latin-1")),
            (b"cache-control", b"public, immutable, max-age=31536000"),
            (b"etag", self.etag.encode("latin-1")),
            (b"last-modified", formatdate(info.st_mtime, usegmt=True).encode("latin-1")),
            (b"accept-ranges", b"bytes"),
        ]


_MIDDLEWARES: weakref.WeakSet = weakref.WeakSet()


def _forget_files() -> None:
    for middleware in list(_MIDDLEWARES):
        middleware.files.clear()
        middleware.cached_bytes = 0


memo.listed("Streamlit's static files", "ui/static_assets.py", "process",
            "the file's path under Streamlit's static folder (content-hashed names); at most "
            "TIEBREAK_STATIC_CACHE_MB (48 MB)",
            clear=_forget_files, size=lambda: sum(len(middleware.files) for middleware in list(_MIDDLEWARES)))


class StaticFromMemory:
    """ASGI middleware: see the module docstring."""

    def __init__(self, app, folder: Path | None = None, limit: int = CACHE_BYTES) -> None:
        self.app = app
        self.folder = (folder or static_folder()).resolve()
        self.limit = limit
        self.files: dict[str, _File] = {}
        self.cached_bytes = 0
        self._prefix: str | None = None
        _MIDDLEWARES.add(self)

    async def __call__(self, scope, receive, send) -> None:
        found = self._file(scope) if scope["type"] == "http" and scope.get("method") == "GET" else None
        if found is None:
            await self.app(scope, receive, send)
            return
        asked = dict(scope.get("headers") or [])
        if asked.get(b"if-none-match", b"").decode("latin-1").strip() == found.etag:
            await send({"type": "http.response.start", "status": 304,
                        "headers": [h for h in found.headers if h[0] in (b"etag", b"cache-control")]})
            await send({"type": "http.response.body", "body": b""})
            return
        await send({"type": "http.response.start", "status": 200, "headers": found.headers})
        await send({"type": "http.response.body", "body": found.body})

    def _file(self, scope) -> _File | None:
        """The cached file a request asks for, reading it now if it is new; None: not for this middleware."""
        if self._prefix is None:
            self._prefix = _base_path() + "/static/"
        path = scope.get("path", "")
        if not path.startswith(self._prefix):
            return None
        name = path[len(self._prefix):]
        if _wants_range(scope):
            return None
        if name in self.files:
            return self.files[name]
        if not _NAME.fullmatch(name) or any(part in (".", "..") for part in name.split("/")):
            return None
        target = (self.folder / name).resolve()
        if self.folder not in target.parents or not target.is_file():
            return None
        size = target.stat().st_size
        if self.cached_bytes + size > self.limit:
            return None
        found = _File(target)
        if not self.files:
            LOG.info("Streamlit's static files are answered from memory (first: %s)", name)
        self.files[name] = found
        self.cached_bytes += len(found.body)
        return found


def _wants_range(scope) -> bool:
    return any(key.lower() == b"range" for key, _ in scope.get("headers") or [])


__all__ = ["CACHE_BYTES", "StaticFromMemory", "static_folder"]
