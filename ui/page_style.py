"""The dashboard's own stylesheet: the few rules the theme (``[theme]`` in ``.streamlit/config.toml``) cannot
express, each there for a reason written beside it. :mod:`ui.page_base` puts it in the head of every HTML page
the server sends, so it holds on every view from the first paint and costs a script run nothing.

Contrast (WCAG 2 AA, 4.5:1 for text of normal size; ``tests/e2e/test_a11y.py`` runs axe-core on every view):
Streamlit fades a caption by giving its whole container ``opacity: 0.6``. That fades the text *and* everything
in it — a glossary link, a ``code`` span — and with the theme's text colour a caption read 3.9:1 on white, a
link in it 3.0:1, code in it 3.0:1. The rule below lifts the opacity and fades only the caption's own text
colour, to 72% of the text colour (5.6:1 on white, 5.4:1 on the sidebar's grey): links and code keep their
own colours at full strength. It mixes with the inherited colour rather than naming one, so it follows the
theme (a dark theme's captions are faded the same way). The selector is more specific than Streamlit's
generated class (``.stApp`` above it), so the order in which the styles load does not matter.
"""
from __future__ import annotations

CAPTION_TEXT_SHARE = 72
"""Percent of the text colour a caption's text keeps (the rest transparent): 5.6:1 on white in the light theme."""

CSS = (".stApp [data-testid=\"stCaptionContainer\"]{opacity:1;"
       f"color:color-mix(in srgb,currentColor {CAPTION_TEXT_SHARE}%,transparent)}}")
"""The rules, as one line of CSS."""

STYLE = f'<style id="tiebreak-style">{CSS}</style>'.encode()
"""The ``<style>`` element :mod:`ui.page_base` adds to each HTML page's head."""
