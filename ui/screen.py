"""What the server knows of the visitor's screen: only whether the browser calls itself a phone."""
from __future__ import annotations

import streamlit as st


def on_a_phone(headers=None) -> bool:
    """Whether the visitor's browser calls itself a phone: ``Mobi`` in its User-Agent, as MDN advises (the server
    knows no screen width; a narrow desktop window is treated as a screen). ``headers``: the request's headers,
    default Streamlit's ``st.context.headers`` (empty outside a browser session)."""
    if headers is None:
        headers = st.context.headers
    return "Mobi" in (headers.get("User-Agent") or "")


def short_names(names: list[str]) -> list[str]:
    """Names without their organisation (``tiebreak-run/bm25s`` → ``bm25s``) for a phone's narrow axis, unless
    two would read the same: then every name stays whole."""
    short = [str(name).rsplit("/", 1)[-1] for name in names]
    return short if len(set(short)) == len(set(map(str, names))) else [str(name) for name in names]
