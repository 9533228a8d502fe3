"""ui/snapshot.py (the one-file HTML snapshot of a view) and ui/recorder.py (what a page drew): untrusted names
stay text, plotly's script is embedded once and only when needed, only the file's own scripts may run and no
request is allowed, tables show the page's columns in its formats, and the recorder passes every element
through while noting it."""
from __future__ import annotations

import base64
import hashlib
import json
import re
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from plotly.offline import get_plotlyjs

from ui import snapshot, tables

HOSTILE = "<script>alert(1)</script>"
PLOTLY_MARKER = get_plotlyjs()[-200:]  # a piece of plotly.js: it appears once per copy of the bundle


class _Document(HTMLParser):
    """Start tags, text and script bodies of a document, as a browser's parser splits them."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags, self.text, self.scripts, self._in_script = [], [], [], False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        if tag == "script":
            self.scripts.append("")

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data
        else:
            self.text.append(data)


def _view(parts, share_link="http://example.org/tiebreak/?bench=rar-b", **fields) -> snapshot.Snapshot:
    return snapshot.Snapshot(title=fields.pop("title", "Leaderboard"), condition_line="rar-b · Full retrieval",
                             settings=[("Benchmark", "rar-b")], parts=parts, share_link=share_link, **fields)


def _figure(name: str):
    return go.Figure(go.Scatter(x=[0.1, 0.2], y=[name, "b"], name=name, mode="markers"))


def test_a_hostile_system_name_stays_text_everywhere():
    frame = pd.DataFrame({"system": [HOSTILE, "b"], "G": [0.5, 0.25]})
    text = snapshot.build(_view(
        [snapshot.Heading(HOSTILE), snapshot.Metric("Top system", HOSTILE), snapshot.Table(frame, {}),
         snapshot.Figure(_figure(HOSTILE))],
        title=HOSTILE, provenance=[HOSTILE], tie_policy=HOSTILE, tie_policy_text=HOSTILE,
        share_link="http://example.org/?s=" + HOSTILE))
    assert HOSTILE not in text
    document = _Document(text)
    assert [tag for tag, _ in document.tags if tag in ("script", "iframe", "object", "embed", "img")] == ["script"] * 2
    shown = "".join(document.text)
    assert shown.count(HOSTILE) >= 6, "the name is shown, as text: title, heading, metric, cell, source, policy"
    script = document.scripts[1]
    traces, _ = json.JSONDecoder().raw_decode(script, script.index(",") + 1)
    assert traces[0]["name"] == HOSTILE and traces[0]["y"][0] == HOSTILE, "the chart shows the name, from JSON"


def test_a_javascript_share_link_is_no_link():
    text = snapshot.build(_view([], share_link="javascript:alert(1)"))
    assert 'href="javascript' not in text and "<base" not in text
    assert "javascript:alert(1)" in "".join(_Document(text).text)


def test_plotly_is_embedded_once_for_many_figures_and_not_at_all_without_one():
    two = snapshot.build(_view([snapshot.Figure(_figure("a")), snapshot.Figure(_figure("b"))]))
    assert two.count(PLOTLY_MARKER) == 1
    assert len(_Document(two).scripts) == 3 and two.count('data-tb="figure"') == 2
    forest = snapshot.build(_view([snapshot.Html('<div class="tb-forest">x</div>')]))
    assert forest.count(PLOTLY_MARKER) == 0 and "<script" not in forest
    assert len(forest) < 20_000


def test_only_the_files_own_scripts_may_run_and_nothing_may_be_fetched():
    text = snapshot.build(_view([snapshot.Figure(_figure("a")), snapshot.Html("<p>x</p>")]))
    document = _Document(text)
    policy = next(attrs["content"] for tag, attrs in document.tags
                  if tag == "meta" and attrs.get("http-equiv") == "Content-Security-Policy")
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["default-src"] == "'none'" and "connect-src" not in directives
    allowed = set(re.findall(r"'sha256-([^']+)'", directives["script-src"]))
    assert allowed == {base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() for s in document.scripts}
    assert "unsafe-inline" not in directives["script-src"] and "unsafe-eval" not in directives["script-src"]
    assert directives["base-uri"] == "http://example.org"


def test_a_table_shows_the_pages_columns_in_its_formats():
    frame = pd.DataFrame({"rank": [1, 2], "system": ["a", "b&c"], "G": [0.123456, np.nan], "hidden": [1, 2],
                          "n_parameters": [7.07e9, 110e6], "page": ["https://huggingface.co/org/m", None],
                          "open": [True, False]})
    import streamlit as st  # the column configs exactly as the pages build them

    config = {"rank": tables.number("Rank", 0), "G": tables.number("G"), "hidden": None,
              "n_parameters": st.column_config.NumberColumn("Parameters", format="compact"),
              "page": st.column_config.LinkColumn("Model page", display_text=r"^https?://(?:huggingface\.co/)?(.*)$"),
              "system": "System"}
    html = snapshot.table_html(snapshot.Table(frame, config, column_order=["system", "rank", "G", "hidden",
                                                                           "n_parameters", "page", "open"],
                                              hide_index=True))
    rows = [re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row) for row in re.findall(r"<tr>(.*?)</tr>", html)]
    assert rows[0] == ["System", "Rank", "G", "Parameters", "Model page", "open"]
    assert rows[1][:4] == ["a", "1", "0.1235", "7.1B"] and rows[2][:4] == ["b&amp;c", "2", "", "110M"]
    assert rows[1][4] == '<a href="https://huggingface.co/org/m" rel="noopener noreferrer">org/m</a>'
    assert rows[2][4] == "" and [rows[1][5], rows[2][5]] == ["yes", "no"]


@pytest.mark.parametrize("value, fmt, shown", [
    (0.5, "%.4f", "0.5000"), (3.0, "%d", "3"), (-0.01234, "%+.3f", "-0.012"), (1234, "compact", "1.2K"),
    (12345, "compact", "12K"), (7.07e9, "compact", "7.1B"), (0.25, None, "0.25"), (4.0, None, "4")])
def test_numbers_print_as_the_column_format_says(value, fmt, shown):
    assert snapshot.format_number(value, fmt) == shown


def test_the_recorder_notes_what_a_script_draws_and_passes_it_through():
    from streamlit.testing.v1 import AppTest

    def page():
        import pandas as pd
        import plotly.graph_objects as go
        import streamlit as st

        from ui import drawing, recorder, tables

        frame = pd.DataFrame({"system": ["a", "b"], "t1": [0.1, 0.9]})
        st.sidebar.title("sidebar, not recorded")
        with drawing.recording() as drawn:
            drawing.title("The view")
            left, _ = st.columns(2)
            drawing.into(left).metric("Systems", "2")
            drawing.subheader("Table")
            drawing.dataframe(tables.heat_styled(frame, ["t1"]), hide_index=True, column_config={"t1": "Task 1"})
            drawing.plotly_chart(go.Figure(go.Bar(x=["a"], y=[1])))
            drawing.html("<p>forest</p>")
            drawing.warning("The tie policy decides **2** pairs")
            st.sidebar.caption("the sidebar's words: not recorded")
        drawing.subheader("after the page: not recorded")
        parts = recorder.parts(drawn)
        st.session_state["kinds"] = [type(p).__name__ for p in parts]
        st.session_state["title"] = drawn.title()
        st.session_state["css"] = parts[3].cell_css["t1"].tolist()
        st.session_state["config"] = parts[3].column_config

    at = AppTest.from_function(page, default_timeout=60).run()
    assert not at.exception
    assert at.session_state["kinds"] == ["Heading", "Metric", "Heading", "Table", "Figure", "Html", "Text"]
    assert at.session_state["title"] == "The view"
    assert at.session_state["css"] == tables.heat_shading(pd.DataFrame({"t1": [0.1, 0.9]}))["t1"].tolist()
    assert at.session_state["config"] == {"t1": "Task 1"}
    assert [m.value for m in at.metric] == ["2"] and len(at.dataframe) == 1, "drawn as before"
    assert [h.value for h in at.subheader] == ["Table", "after the page: not recorded"]


def test_page_text_keeps_its_emphasis_and_shows_escaped_names_as_the_page_did():
    from ui.notices import safe_text

    body = f"Top system: **{safe_text(HOSTILE + ' **x_y')}** · [Glossary](glossary#hps) :material/check: `docid-desc`\nnext"
    shown = snapshot.markdown_text(body)
    assert shown == ("Top system: <b>&lt;script&gt;alert(1)&lt;/script&gt; **x_y</b> · Glossary  "
                     "<code>docid-desc</code><br>next")
    text = snapshot.build(_view([snapshot.Text("warning", body), snapshot.Text("caption", "rar-b · Full retrieval")]))
    assert HOSTILE not in text and text.split("</style>")[1].count("tb-text-warning") == 1
    assert "tb-text-caption" not in text.split("</style>")[1], "the condition caption is already under the title"

