"""tiebreak dashboard: ``streamlit run app.py`` (shipped ``data/``), ``streamlit run app.py -- --data DIR``
or ``TIEBREAK_DATA=DIR streamlit run app.py``.

``streamlit run app.py`` finds ``app`` below, an ``st.App`` (Streamlit's ASGI entry point), and serves it:

- its script is ``ui/entry/dashboard.py``, which runs ``st.navigation`` over the views in ``pages/`` (the page
  table is ``ui/navigation.py``);
- its middleware tells the browser where the server is, so a deep link to a page asks no wrong address (no
  404s: ``ui/page_base.py``, which also adds the dashboard's stylesheet, ``ui/page_style.py``), and answers
  the browser's requests for Streamlit's own scripts from memory
  (``ui/static_assets.py``: the first visitor's page loads while the server is still busy preparing);
- its lifespan (``ui/warm_start.py``) prepares the default view's data once, as soon as the server is up, so
  the first visitor does not wait for imports, the store and the Leaderboard's queries;
- its routes (``ui/api.py``) are the read-only JSON API: ``/api/v1/leaderboard?<a view's URL parameters>`` and
  the like answer a view's question with the page's numbers (docs/api.md).

Each page reads top to bottom: it draws the shared sidebar (``ui/sidebar.py``), asks ``ui/data.py`` its
questions and shows the answers with ``ui/tables.py``, ``ui/charts.py`` and ``ui/hints.py``.
"""
import streamlit as st
from starlette.middleware import Middleware

from ui import api, navigation, page_base, static_assets, warm_start

app = st.App(navigation.MAIN_SCRIPT, lifespan=warm_start.lifespan, routes=api.ROUTES,
             middleware=[Middleware(static_assets.StaticFromMemory), Middleware(page_base.BackendBaseFromPage)])
