"""The elements that carry a view's content, drawn in the main area and noted in the run's record: what the
"Download this view (HTML)" snapshot (:mod:`ui.recorder`, :mod:`ui.snapshot`) is built from.

Pages and ui modules draw a view's content through these functions — ``drawing.markdown(...)`` where they would
write ``st.markdown(...)``, ``drawing.into(column).metric(...)`` for ``column.metric(...)`` — and the sidebar
through Streamlit directly (``st.sidebar…``: not part of the view). Each function calls Streamlit's public
element function of the same name with the same arguments and, inside :func:`recording` (the frame,
``ui/navigation.py``, runs each page inside it), appends ``(element, arguments by name)`` to the run's
:class:`Drawn` — a plain list the frame owns, one per script run (a thread-local: each session's script runs on
its own thread). No Streamlit object is replaced: outside a recording these are Streamlit's functions plus a
lookup. Recording keeps references (no copy, no formatting); a recording that fails is logged and never stops
the page. tests/ui/test_public_api_only.py checks that the dashboard draws no content element on ``st``
itself, so nothing of a view escapes its snapshot.
"""
from __future__ import annotations

import contextlib
import inspect
import logging
import threading
from collections.abc import Iterator

import streamlit as st

LOG = logging.getLogger("tiebreak.app")
ELEMENTS = ("title", "header", "subheader", "markdown", "caption", "info", "warning", "error", "success", "metric",
            "dataframe", "plotly_chart", "html")
"""Streamlit's element functions that carry a view's content (what its snapshot shows)."""
_LOCAL = threading.local()
_SIGNATURES: dict[str, inspect.Signature] = {}


class Drawn:
    """The elements one script run drew in the main area, in order: (element, arguments by name)."""

    def __init__(self) -> None:
        self.elements: list[tuple[str, dict]] = []

    def title(self) -> str | None:
        return next((str(args.get("body")) for name, args in self.elements if name == "title"), None)


@contextlib.contextmanager
def recording() -> Iterator[Drawn]:
    """Note what the code inside draws through this module on this thread; yields the :class:`Drawn`."""
    drawn = Drawn()
    previous = getattr(_LOCAL, "drawn", None)
    _LOCAL.drawn = drawn
    try:
        yield drawn
    finally:
        _LOCAL.drawn = previous


def _note(name: str, args: tuple, kwargs: dict) -> None:
    drawn = getattr(_LOCAL, "drawn", None)
    if drawn is None:
        return
    try:
        if name not in _SIGNATURES:
            _SIGNATURES[name] = inspect.signature(getattr(st, name))
        drawn.elements.append((name, dict(_SIGNATURES[name].bind(*args, **kwargs).arguments)))
    except Exception:  # a snapshot with one element fewer beats a page that stops
        LOG.exception("snapshot: could not record a %s", name)


class Area:
    """A place in the main area — ``st`` itself, a column, a tab, an expander, a container, an ``st.empty``
    slot — whose content elements are drawn there and noted in the run's record."""

    def __init__(self, target=None) -> None:
        self.target = st if target is None else target

    def _draw(self, name: str, args: tuple, kwargs: dict):
        _note(name, args, kwargs)
        return getattr(self.target, name)(*args, **kwargs)

    def title(self, *args, **kwargs):
        return self._draw("title", args, kwargs)

    def header(self, *args, **kwargs):
        return self._draw("header", args, kwargs)

    def subheader(self, *args, **kwargs):
        return self._draw("subheader", args, kwargs)

    def markdown(self, *args, **kwargs):
        return self._draw("markdown", args, kwargs)

    def caption(self, *args, **kwargs):
        return self._draw("caption", args, kwargs)

    def info(self, *args, **kwargs):
        return self._draw("info", args, kwargs)

    def warning(self, *args, **kwargs):
        return self._draw("warning", args, kwargs)

    def error(self, *args, **kwargs):
        return self._draw("error", args, kwargs)

    def success(self, *args, **kwargs):
        return self._draw("success", args, kwargs)

    def metric(self, *args, **kwargs):
        return self._draw("metric", args, kwargs)

    def dataframe(self, *args, **kwargs):
        return self._draw("dataframe", args, kwargs)

    def plotly_chart(self, *args, **kwargs):
        return self._draw("plotly_chart", args, kwargs)

    def html(self, *args, **kwargs):
        return self._draw("html", args, kwargs)


def into(target=None) -> Area:
    """The content elements drawn into ``target`` (a column, tab, container, …; None: the main area)."""
    return Area(target)


_MAIN = Area()
title, header, subheader = _MAIN.title, _MAIN.header, _MAIN.subheader
markdown, caption, info, warning, error, success = (_MAIN.markdown, _MAIN.caption, _MAIN.info, _MAIN.warning,
                                                     _MAIN.error, _MAIN.success)
metric, dataframe, plotly_chart, html = _MAIN.metric, _MAIN.dataframe, _MAIN.plotly_chart, _MAIN.html
