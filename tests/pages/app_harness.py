"""Shared constants and helpers of the dashboard's AppTest suite (a uniquely named module, not conftest).
The page table is the app's own (``ui.navigation.PAGES``)."""
from __future__ import annotations

import os
from pathlib import Path

from ui.navigation import MAIN_SCRIPT, PAGES

ROOT = Path(__file__).resolve().parents[2]
APP = str(MAIN_SCRIPT)
DEFAULT_PAGE = PAGES[0].file
PAGE_FILES = [spec.file for spec in PAGES]
TITLES = {spec.file: spec.title for spec in PAGES}


def page_path_from_main(page_file: str) -> str:
    """A page's path relative to the main script's folder (what ``AppTest.switch_page`` takes)."""
    return os.path.relpath(next(spec.path for spec in PAGES if spec.file == page_file), MAIN_SCRIPT.parent)


def texts(at, kind: str) -> list[str]:
    """Every rendered value of one element kind (``warning``, ``info``, ``error``, ``markdown``, …)."""
    return [str(el.value) for el in getattr(at, kind)]


WIDGET_KINDS = ("selectbox", "radio", "multiselect", "text_input", "toggle")


def widget(at, key):
    """The widget bound to URL key ``key`` (KeyError when the view draws none, e.g. a control shown as text)."""
    for kind in WIDGET_KINDS:
        try:
            return getattr(at, kind)(key=key)
        except KeyError:
            continue
    raise KeyError(key)


def shown(at, key):
    """What a control bound to ``key`` shows: its widget's value, else — a control with one option, drawn as
    text — the value the view wrote to the URL (None when neither)."""
    try:
        return widget(at, key).value
    except KeyError:
        return at.query_params.get(key)


def fixed_texts(at) -> dict[str, str]:
    """The sidebar's controls drawn as text ('**Label:** value'), label -> value."""
    found = {}
    for element in at.sidebar.markdown:
        text = str(element.value)
        if text.startswith("**") and ":** " in text:
            label, value = text[2:].split(":** ", 1)
            found[label] = value
    return found
