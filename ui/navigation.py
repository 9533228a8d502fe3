"""The page table and the frame around every page.

:data:`PAGES` is the one list of the dashboard's views (the tests open the same table). :func:`run` is what
the dashboard's main script (``ui/entry/dashboard.py``, served by the ``st.App`` in ``app.py``) does on every
script run: ``st.navigation`` over :data:`PAGES`, then the frame — the URL state of the run
(``ui/state.py``), the notices about ignored URL parameters above the page, the page itself inside an error
boundary (a visitor never sees a traceback), and at the bottom of the sidebar the share link and the data
files that were skipped. The page draws the sidebar's controls itself (``ui/sidebar.py``).

Each page's URL path is its file name: ``pages/rank-flips.py`` is ``/rank-flips``; the first page is also
``/``.
"""
from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import streamlit as st

from ui import gate
from ui.glossary import GLOSSARY_PATH

LOG = logging.getLogger("tiebreak.app")
APP_ROOT = Path(__file__).resolve().parent.parent
PAGES_DIR = APP_ROOT / "pages"
MAIN_SCRIPT = APP_ROOT / "ui" / "entry" / "dashboard.py"
"""The script Streamlit runs on every rerun. It sits alone in its folder: Streamlit treats a ``pages/``
folder beside the main script as a legacy multipage app (until the first ``st.navigation``), which showed a
first visitor of a shared deep link "Page not found", and it puts the script's folder first on
``sys.path`` during every run, where modules beside it would shadow installed ones."""


@dataclass(frozen=True)
class PageSpec:
    """One view: its script under ``pages/`` (the file name is the URL path), title and icon."""

    file: str
    title: str
    icon: str

    @property
    def path(self) -> Path:
        return PAGES_DIR / self.file

    @property
    def url_path(self) -> str:
        return Path(self.file).stem


FAVICON = Path(__file__).resolve().parent / "favicon.svg"
"""A balance drawn in SVG, which Streamlit inlines in the page as a ``data:`` URL: no request at all. Not an
emoji: checking one makes Streamlit import its emoji catalogue and compile its pattern (~0.1 s of the first
visitor's first script run, on a server still preparing the default view); nor a ``:material/…:`` icon,
which is fetched from fonts.gstatic.com, outside the app's origin."""

PAGES = (
    PageSpec("leaderboard.py", "Leaderboard", ":material/leaderboard:"),
    PageSpec("ties-and-precision.py", "Ties & precision", ":material/balance:"),
    PageSpec("rank-flips.py", "Rank flips", ":material/swap_vert:"),
    PageSpec("instructions.py", "Instructions", ":material/edit_note:"),
    PageSpec("mcr-vs-full.py", "MCR vs full", ":material/scatter_plot:"),
    PageSpec("compare.py", "Compare", ":material/compare_arrows:"),
    PageSpec("evaluate.py", "Evaluate your run", ":material/upload_file:"),
)
API_ENDPOINTS = {"": "leaderboard", "leaderboard": "leaderboard", "rank-flips": "rank-flips"}
"""The views the JSON API answers (URL path -> endpoint, ``ui/api.py``): their share box shows the API URL."""
GLOSSARY = GLOSSARY_PATH
"""The Glossary's URL path: a page of the frame after :data:`PAGES` (definitions, no data of its own)."""


REDRAWS = 3
"""How many times in a row a page is drawn again because the data changed while it was drawn."""
_REDRAWN = "_tiebreak_redrawn"


def run() -> None:
    """One script run: navigation, then the chosen page inside the frame."""
    from ui import data, drawing, hints, state, upload

    started = time.perf_counter()
    st.set_page_config(page_title="tiebreak — tie-aware retrieval leaderboard", page_icon=FAVICON, layout="wide",
                       initial_sidebar_state="auto")  # collapsed on a phone, open on a wider screen
    page = st.navigation([st.Page(spec.path, title=spec.title, icon=spec.icon, default=(i == 0))
                          for i, spec in enumerate(PAGES)]
                         + [st.Page(_glossary, title="Glossary", icon=":material/menu_book:", url_path=GLOSSARY)])
    state.begin_run(page.url_path)
    notices_box = st.container()
    st.sidebar.caption("tiebreak · tie-aware retrieval evaluation")
    # a session's own uploaded run (Evaluate your run): counted in this run's questions, named in the sidebar
    upload.begin_run()
    data.begin_run(data.SessionRun(upload.session_overlay, upload.overlay_store, upload.remember))
    hints.run_box(upload.candidate(), upload.show_condition)
    try:
        with drawing.recording() as drawn:  # what the page draws, for its snapshot (ui/drawing.py)
            page.run()
        st.session_state.pop(_BUSY_TRIES, None)
        st.session_state.pop(_REDRAWN, None)
    except gate.Busy as busy:  # too many expensive computations at once in this process: wait, then again
        if _retry_when_busy(busy):
            st.rerun()
    except data.DataChanged:  # new files arrived while the page was drawn: all of it again, from them
        redrawn = st.session_state.get(_REDRAWN, 0)
        if redrawn < REDRAWS:
            st.session_state[_REDRAWN] = redrawn + 1
            LOG.info("data changed while /%s was drawn; drawing it again", page.url_path)
            st.rerun()
        st.session_state.pop(_REDRAWN, None)
        drawing.warning("The data changed while this view was drawn, several times in a row; reload the page "
                        "to see it from the current files.")
    except Exception:  # a visitor never sees a traceback; the server log has it
        incident = uuid.uuid4().hex[:8]
        LOG.exception("page /%s failed (incident %s)", page.url_path, incident)
        drawing.error(f"Sorry — this view could not be drawn (incident `{incident}`; details are in the server "
                      "log). Try other settings in the sidebar, or reload the page.")
    _finish(notices_box, drawn, page)
    LOG.debug("drew /%s in %.3f s", page.url_path, time.perf_counter() - started)


BUSY_RETRIES = 5
"""Runs of a view refused as busy in a row before the frame stops retrying on its own."""
BUSY_SLEEP_SECONDS = 10
"""Longest wait before a retry (a refusal suggests its own wait, ``ui/gate.py``)."""
_BUSY_TRIES = "_busy_tries"


def _retry_when_busy(busy: gate.Busy) -> bool:
    """Say the server is busy; wait as the gate suggests and return True (the caller runs the view again), or,
    after :data:`BUSY_RETRIES` refusals in a row, say to try later and return False."""
    from ui import drawing

    tries = st.session_state.get(_BUSY_TRIES, 0) + 1
    st.session_state[_BUSY_TRIES] = tries
    if tries > BUSY_RETRIES:
        st.session_state.pop(_BUSY_TRIES, None)
        drawing.warning("The server is still busy computing other leaderboards. Reload the page in a minute, or "
                        "pick the settings of a view already shown.", icon=":material/hourglass_bottom:")
        return False
    wait = max(1, min(busy.retry_after, BUSY_SLEEP_SECONDS))
    drawing.info(f"The server is busy computing other leaderboards ({busy.running} running, {busy.waiting} "
                 f"waiting); retrying in {wait} s (try {tries} of {BUSY_RETRIES}).", icon=":material/hourglass_top:")
    _pause(wait)
    return True


def _pause(seconds: float) -> None:
    time.sleep(seconds)


def _glossary() -> None:
    """The Glossary page; it draws the shared sidebar too, so the view's controls keep their values while a
    visitor reads (a widget not drawn in a run loses its value)."""
    from ui import glossary, sidebar

    glossary.page()
    sidebar.view()


def _finish(notices_box, drawn, page) -> None:
    """Write the view's state back to the URL; show the notices, the share link, the snapshot download and the
    skipped files."""
    from ui import api, data, notices, recorder, sidebar, state, words

    params = state.end_run()
    messages = state.notices()
    if len(messages) == 1:
        notices_box.warning(messages[0], icon=":material/link_off:")
    elif messages:
        notices_box.warning("Parts of the link were ignored; the view shows valid settings instead:\n"
                            + "\n".join(f"- {m}" for m in messages), icon=":material/link_off:")
    url = _page_url()
    endpoint = API_ENDPOINTS.get(page.url_path)
    sidebar.share_box(params, url, api.api_url(url, params, endpoint) if endpoint and url else None)
    data_dir = None
    try:
        data_dir = data.data_dir_from()
        snapshot = data.snapshot(data_dir) if data_dir.is_dir() else None
        skipped = data.skipped_files(snapshot) if snapshot else []
        left_out = data.load_warnings(snapshot) if snapshot else []
    except Exception:  # the store could not open the folder: the page has said so
        skipped, left_out = [], []
    recorder.download_button(drawn, page.title, page.url_path, params, state.share_url(params, url), data_dir,
                             state.shown_params())
    for items, title, text in ((skipped, f"{words.counted(len(skipped), 'data file')} skipped", "reason"),
                               (left_out, f"{words.counted(len(left_out), 'group')} of rows left out", "message")):
        if items:
            listed = st.sidebar.expander(title)
            with listed:
                for item in items:
                    name = Path(item.path).name.replace("`", "'")  # a backtick would end the code span
                    listed.caption(f"`{name}`: {notices.safe_text(getattr(item, text))}")


def _page_url() -> str | None:
    """This page's address as the visitor's browser has it — scheme, host name and port as seen through any
    proxy, the ``server.baseUrlPath`` prefix and the page path (``st.context.url`` comes from the browser), no
    query. The app's root keeps its trailing slash (``/tiebreak/``): ``/tiebreak?…`` costs a redirect, and a
    proxy that routes ``/tiebreak/`` need not route ``/tiebreak`` at all (docs/hosting.md)."""
    try:
        url = st.context.url
    except Exception:
        return None
    if url and urlsplit(url).path.strip("/") == (st.get_option("server.baseUrlPath") or "").strip("/"):
        url = url.rstrip("/") + "/"
    return url
