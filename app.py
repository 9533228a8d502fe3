"""tiebreak dashboard: ``streamlit run app.py`` (shipped ``data/``), ``streamlit run app.py -- --data DIR``
or ``TIEBREAK_DATA=DIR streamlit run app.py``.

This file plays two parts:

- ``app`` below is an ``st.App`` whose script is this same file. ``streamlit run app.py`` finds it and serves
  it with a lifespan hook that draws the default view once at start-up (``ui/warm_start.py``), so the first
  visitor does not wait for imports, the store and the Leaderboard's queries.
- Executed by the Streamlit runtime (or ``streamlit.testing``), it is the script: it draws the shared sidebar
  (bound to the URL, see ``ui/state.py``), then runs the page the URL path names (views/*.py). Views only
  present what ``evalcore.store`` returns.
"""
from __future__ import annotations

import logging
import time
import uuid
from pathlib import Path

import streamlit as st
from starlette.middleware import Middleware

from ui import warm_start  # light; the script's own imports (pandas, DuckDB, evalcore) are inside main()
from ui.prefetch import ActivityMiddleware

APP_DIR = Path(__file__).resolve().parent
LOG = logging.getLogger("tiebreak.app")

# (file, title, url path, icon). The views live in views/, not pages/: Streamlit treats a pages/ folder next
# to the entry point as a legacy multipage app until the first st.navigation call, so on a fresh server the
# first visitor of a shared link to any page but the default got a "Page not found" dialog.
PAGES = (
    ("views/leaderboard.py", "Leaderboard", "leaderboard", ":material/leaderboard:"),
    ("views/ties_precision.py", "Ties & precision", "ties-and-precision", ":material/balance:"),
    ("views/rank_flips.py", "Rank flips", "rank-flips", ":material/swap_vert:"),
    ("views/instructions.py", "Instructions", "instructions", ":material/edit_note:"),
    ("views/mcr_vs_full.py", "MCR vs full", "mcr-vs-full", ":material/scatter_plot:"),
    ("views/compare.py", "Compare", "compare", ":material/compare_arrows:"),
)


def main() -> None:
    from ui.prefetch import PREFETCHER

    with PREFETCHER.busy():  # idle-time prefetch waits while any run is drawing (ui/prefetch.py)
        _draw()


def _draw() -> None:
    from ui import components, data, state

    started = time.perf_counter()
    st.set_page_config(page_title="tiebreak — tie-aware retrieval leaderboard", page_icon=":material/balance:",
                       layout="wide")
    pages = [st.Page(str(APP_DIR / path), title=title, url_path=slug, icon=icon, default=(i == 0))
             for i, (path, title, slug, icon) in enumerate(PAGES)]
    page = st.navigation(pages)
    state.begin_run(page.url_path)
    notices_box = st.container()
    st.sidebar.caption("tiebreak · tie-aware retrieval evaluation")
    data_dir = data.data_dir_from()
    try:
        if not data_dir.is_dir():
            st.error(f"The data folder `{data_dir}` does not exist. Start the app with "
                     "`streamlit run app.py -- --data DIR` (or `TIEBREAK_DATA=DIR`) pointing at a folder of "
                     "result parquet files.")
            view = components.View(data_dir=data_dir, facets={})
        else:
            view = components.sidebar(data_dir)
        st.session_state["_view"] = view
        if data_dir.is_dir():
            page.run()
    except Exception:  # a user never sees a traceback; the server log has it
        incident = uuid.uuid4().hex[:8]
        LOG.exception("page %s failed (incident %s)", page.url_path, incident)
        st.error(f"Sorry — this view could not be drawn (incident `{incident}`; details are in the server "
                 "log). Try other settings in the sidebar, or reload the page.")
    _finish(notices_box)
    LOG.debug("drew /%s in %.3f s", page.url_path, time.perf_counter() - started)


def _finish(notices_box) -> None:
    from ui import components, state

    params = state.end_run()
    messages = state.notices()
    if len(messages) == 1:
        notices_box.warning(messages[0], icon=":material/link_off:")
    elif messages:
        notices_box.warning("Parts of the link were ignored; the view shows valid settings instead:\n"
                            + "\n".join(f"- {m}" for m in messages), icon=":material/link_off:")
    components.share_box(st.sidebar, params, _page_url())
    skipped = getattr(_current_store(), "skipped", None) or []
    if skipped:
        with st.sidebar.expander(f"{len(skipped)} data file(s) skipped"):
            for item in skipped:
                name = Path(item.path).name.replace("`", "'")  # a backtick would end the code span
                st.caption(f"`{name}`: {components.safe_text(item.reason)}")


def _current_store():
    from ui import data

    view = st.session_state.get("_view")
    if view is None or not view.data_dir.is_dir():
        return None
    try:
        return data.store(view.data_dir)
    except Exception:
        return None


def _page_url() -> str | None:
    try:
        return st.context.url
    except Exception:
        return None


# What ``streamlit run app.py`` serves (it looks for an st.App named ``app``); uvicorn imports this module as
# ``app``, so only the script runs below draw anything.
app = st.App(__file__, lifespan=warm_start.lifespan, middleware=[Middleware(ActivityMiddleware)])

if __name__ == "__main__":  # the Streamlit runtime (or streamlit.testing) running the script
    main()
