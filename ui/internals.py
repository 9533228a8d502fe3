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
- :func:`wrap_element_functions` — Streamlit's element functions wrapped for the whole process (ui/recorder.py:
  what a page draws, for the "Download this view (HTML)" snapshot). No public API reports what a running script
  drew; ``streamlit.testing.v1.AppTest`` runs a page apart from the browser session (its URL, controls and
  uploaded run), so the recorder wraps the methods of the class of ``st.sidebar`` and rebinds the ``st.*``
  functions to the wrapped main-area methods.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from hashlib import md5
from pathlib import Path

WRITTEN_FOR = {"answer_styler_rendering": ("pandas 3.1", "streamlit 1.67"),
               "streamlit_static_folder": ("streamlit 1.67",),
               "starlette_etag": ("starlette 1.10",),
               "wrap_element_functions": ("streamlit 1.67",)}
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


# -------------------------------------------------------------------------------------------- element functions
_WRAP_LOCK = threading.Lock()
WRAPPED = "tiebreak_wrapped"
"""The attribute a wrapped element function carries (so wrapping twice does nothing)."""


def wrap_element_functions(names: Iterable[str], wrap: Callable[[str, Callable], Callable]) -> None:
    """Replace, for the whole process, each of Streamlit's element methods ``names`` (``markdown``,
    ``dataframe``, ...) of the class of ``st.sidebar`` and ``st.*`` (bound to the main area) by
    ``wrap(name, original)``: a function of ``(self, *args, **kwargs)`` that must call ``original`` with them.
    Once per process; later calls do nothing."""
    import streamlit as st

    with _WRAP_LOCK:
        generator = type(st.sidebar)
        main = st.title.__self__  # the main area, which st.title / st.dataframe / … draw into
        for name in names:
            original = getattr(generator, name)
            if getattr(original, WRAPPED, False):
                continue
            wrapped = wrap(name, original)
            setattr(wrapped, WRAPPED, True)
            setattr(generator, name, wrapped)
            setattr(st, name, getattr(main, name))


__all__ = ["WRAPPED", "WRITTEN_FOR", "answer_styler_rendering", "starlette_etag", "streamlit_static_folder",
           "wrap_element_functions"]
