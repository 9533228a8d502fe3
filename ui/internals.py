"""Every use the dashboard makes of Streamlit's, pandas' and Starlette's internals, and nothing else: the rest of
``app.py``, ``ui/`` and ``pages/`` reaches these libraries through their public API only
(tests/ui/test_public_api_only.py reads the source for private names, ``import streamlit.x`` and ``setattr`` or
attribute assignment on a third-party object outside this module).

Each use names the library version it was written for (:data:`WRITTEN_FOR`) and has a test in
tests/ui/test_internals.py that checks the behaviour it relies on, so an upgrade that changes it fails there
(requirements.txt pins Streamlit to the tested minor for the same reason):

- :func:`answer_styler_rendering` — pandas' ``Styler._compute`` / ``_translate``, which Streamlit's
  ``st.dataframe`` calls to draw a Styler (ui/tables.py: the heat shading's few CSS rules without pandas' per-cell
  work);
- :func:`streamlit_static_folder` and :func:`starlette_etag` — where the installed Streamlit keeps its frontend
  build, and the ETag Starlette's ``FileResponse`` gives a file (ui/static_assets.py answers the same);
- :func:`drop_expired_sessions` — Streamlit's store of sessions whose tab closed (kept for a reconnect), which
  forgets an expired one only when asked its length or written to (ui/heap.py asks).

The snapshot's record of what a page drew replaces nothing of Streamlit's: pages draw through :mod:`ui.drawing`.
"""
from __future__ import annotations

from hashlib import md5
from pathlib import Path

WRITTEN_FOR = {"answer_styler_rendering": ("pandas 3.1", "streamlit 1.67"),
               "streamlit_static_folder": ("streamlit 1.67",),
               "starlette_etag": ("starlette 1.10",),
               "drop_expired_sessions": ("streamlit 1.67",)}
"""Each use -> the library versions it was written and tested for."""


# -------------------------------------------------------------------------------------------- pandas' Styler
def answer_styler_rendering(styler, rendered: dict):
    """Make ``styler`` answer pandas' private rendering calls, ``Styler._compute()`` and ``_translate()`` —
    what Streamlit's ``st.dataframe`` asks a Styler for (the CSS and display text of every cell, built cell by
    cell) — with ``rendered`` as it is (``{"cellstyle": [...], "table_styles": [...], "body": [...]}``); returns
    ``styler``. ``Styler.apply`` stays registered, so a Streamlit that stopped calling ``_translate`` would still
    draw the right styles, only slower."""
    styler._compute = lambda: styler  # type: ignore[method-assign]
    styler._translate = lambda *args, **kwargs: rendered  # type: ignore[method-assign]
    return styler


# -------------------------------------------------------------------------------------------- static files
def streamlit_static_folder() -> Path:
    """The ``static/`` folder of Streamlit's frontend build (inside the installed package), whose files
    Streamlit serves under ``/static/``."""
    import streamlit

    return Path(streamlit.__file__).resolve().parent / "static" / "static"


def starlette_etag(mtime: float, size: int) -> str:
    """The ``ETag`` header Starlette's ``FileResponse`` sends for a file of this modification time and size."""
    return f'"{md5(f"{mtime}-{size}".encode(), usedforsecurity=False).hexdigest()}"'


# -------------------------------------------------------------------------------------------- sessions
def drop_expired_sessions(storage=None) -> int | None:
    """Make Streamlit forget the sessions whose tab closed more than ``server.disconnectedSessionTTL`` seconds ago;
    returns how many it forgot (None without a running server).

    Its ``MemorySessionStorage`` is a ``TTLCache`` that drops an expired entry only on a write or a length
    query: after the last visitor left, nothing writes, and every session of the last minutes — its widgets,
    state and page — stayed in memory for good (measured: 11–13 per process after 50 users,
    docs/performance.md § Memory). ``storage``: that store (default: the running server's, asked under its
    manager's lock)."""
    lock = None
    if storage is None:
        import streamlit

        if not streamlit.runtime.exists():
            return None
        manager = streamlit.runtime.get_instance()._session_mgr
        storage, lock = getattr(manager, "_session_storage", None), getattr(manager, "_storage_lock", None)
    cache = getattr(storage, "_cache", None)
    held = getattr(cache, "_data", None)  # every entry, expired or not
    if cache is None or held is None:
        return None
    if lock is None:
        before = len(held)
        return before - len(cache)  # the length query drops the expired entries
    with lock:
        before = len(held)
        return before - len(cache)


__all__ = ["WRITTEN_FOR", "answer_styler_rendering", "drop_expired_sessions", "starlette_etag",
           "streamlit_static_folder"]
