"""A view as one self-contained HTML file ("a snapshot that travels"): its title, condition, tables,
charts, share link, data provenance and tie policy, readable offline without a server.

Pure: no Streamlit here. :mod:`ui.recorder` turns what a page drew during its script run (:mod:`ui.drawing`)
into the parts below and calls :func:`build` only when the visitor clicks "Download this view (HTML)".

Safety: every text from data (system names are untrusted input) is HTML-escaped; a table cell is text, never
markup. Plotly figures are written as JSON with ``<``, ``>`` and ``&`` escaped (a name cannot close the script
element), and the file carries a Content-Security-Policy that lets only its own scripts run (each named by its
sha256) and allows no request at all (``default-src 'none'``): even markup that slipped through could neither
run nor fetch. Plotly's script (~4.8 MB) is embedded once, and only when the view has a plotly figure.
"""
from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ui import words

GENERATOR = "tiebreak"


# -------------------------------------------------------------------------------------------- parts
@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2


@dataclass(frozen=True)
class Metric:
    """A headline number (``st.metric``): its label and the value as the page printed it."""

    label: str
    value: str


@dataclass(frozen=True)
class Text:
    """Words the page wrote (``st.markdown``, ``st.caption``, ``st.info`` / ``warning`` / ``error`` /
    ``success``): ``kind`` is the element, ``body`` its markdown, shown as text with bold, code and line breaks
    (links keep their words)."""

    kind: str
    body: str


@dataclass(frozen=True)
class Table:
    """A table as ``st.dataframe`` drew it: the frame, its ``column_config`` (a label, or Streamlit's config
    dict with ``label`` and ``type_config``; None hides the column), ``column_order``, ``hide_index`` and the
    CSS of each cell (``cell_css``, same shape as ``frame``; e.g. the heat shading)."""

    frame: pd.DataFrame
    column_config: Mapping = field(default_factory=dict)
    column_order: Sequence[str] | None = None
    hide_index: bool | None = None
    cell_css: pd.DataFrame | None = None


@dataclass(frozen=True)
class Figure:
    """A plotly figure (anything with ``to_plotly_json()``, or its dict)."""

    figure: object


@dataclass(frozen=True)
class Html:
    """Markup the dashboard built itself and escaped (e.g. :func:`ui.charts.forest_html`): embedded as is."""

    body: str


Part = Heading | Metric | Text | Table | Figure | Html


@dataclass(frozen=True)
class Snapshot:
    """Everything the file shows besides the parts: the view's ``title``, its ``condition_line`` (as the page
    words it), every URL ``settings`` of the view as (label, value) pairs, the ``share_link`` that reopens the view, the ``provenance`` lines (source, repository @ commit,
    write date), the data ``snapshot_date``, the ``tie_policy`` with its ``tie_policy_text``, and when the file
    was taken (``taken``, ISO)."""

    title: str
    condition_line: str
    settings: Sequence[tuple[str, str]]
    parts: Sequence[Part]
    share_link: str = ""
    provenance: Sequence[str] = ()
    snapshot_date: str = ""
    tie_policy: str = ""
    tie_policy_text: str = ""
    taken: str = ""


# -------------------------------------------------------------------------------------------- cells
def format_number(value: float, number_format: str | None) -> str:
    """A number as a Streamlit number column with ``number_format`` shows it: printf formats (``%.4f``,
    ``%d``, ``%+.3f``), ``compact`` (1.2K, 110M, 7.1B), ``percent``, ``plain``; no format: up to 4 decimals."""
    if number_format and "%" in number_format and number_format not in ("percent",):
        try:
            return number_format % (int(round(value)) if re.search(r"%[-+ 0#]*\d*[di]", number_format) else value)
        except (TypeError, ValueError):
            pass
    if number_format == "compact":  # as the browser's Intl compact notation: 1.2K, 12K, 123K, 7.1B
        for size, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K"), (1, "")):
            if abs(value) >= size or size == 1:
                scaled = value / size
                text = f"{scaled:.1f}".removesuffix(".0") if abs(round(scaled, 1)) < 10 else f"{scaled:.0f}"
                return text + suffix
    if number_format == "percent":
        return f"{value * 100:.2f}%"
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.4f}".rstrip("0").rstrip(".")


def _missing(value) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    try:
        return bool(isinstance(value, (float, np.floating)) and math.isnan(value))
    except TypeError:
        return False


def _config(entry) -> tuple[str | None, dict]:
    """(label, type_config) of one ``column_config`` entry."""
    if isinstance(entry, str):
        return entry, {}
    if isinstance(entry, Mapping):
        return entry.get("label"), dict(entry.get("type_config") or {})
    return None, {}


def cell_html(value, type_config: Mapping) -> str:
    """One cell's content, escaped: numbers in the column's format, links with their display text, booleans
    as yes/no, a missing value empty."""
    if _missing(value):
        return ""
    kind = type_config.get("type")
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, float, np.integer, np.floating)) and kind in (None, "number", "progress"):
        return html.escape(format_number(float(value), type_config.get("format")))
    if isinstance(value, (list, tuple, np.ndarray)):
        value = ", ".join(str(v) for v in value)
    text = str(value)
    if kind == "link" and re.match(r"https?://", text):
        shown, pattern = text, type_config.get("display_text")
        if pattern:
            try:
                match = re.search(pattern, text)
            except re.error:
                match = None
            shown = match.group(1) if match and match.groups() else (text if "(" in pattern else pattern)
        return (f'<a href="{html.escape(text, quote=True)}" rel="noopener noreferrer">'
                f"{html.escape(str(shown))}</a>")
    return html.escape(text)


def table_html(table: Table) -> str:
    """A table as an HTML ``<table>``: the columns the page showed, in its order, under their labels."""
    config = dict(table.column_config or {})
    columns = _shown_columns(table, config)
    index_config = _config(config.get("_index"))[1]
    types = {column: _config(config.get(column))[1] for column in columns}
    positions = [table.frame.columns.get_loc(c) for c in columns]
    rows = [_row_html(table, i, columns, positions, types, index_config) for i in range(len(table.frame))]
    return ('<div class="tb-table"><table><thead><tr>' + "".join(_header_cells(table, config, columns))
            + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>")


def _shown_columns(table: Table, config: Mapping) -> list:
    """The frame's columns the page showed: in ``column_order`` when it has one, less those configured None."""
    frame = table.frame
    columns = [c for c in (table.column_order or frame.columns) if c in frame.columns]
    return [c for c in columns if not (c in config and config[c] is None)]


def _header_cells(table: Table, config: Mapping, columns: list) -> list[str]:
    """The header row's cells: the index's label (unless hidden), then each column's label; number columns are
    marked ``num`` (right-aligned)."""
    frame = table.frame
    index_label = _config(config.get("_index"))[0]
    head = [f'<th scope="col">{html.escape(index_label or "")}</th>'] if not table.hide_index else []
    for column in columns:
        label, type_config = _config(config.get(column))
        numeric = type_config.get("type") == "number" or (not type_config and pd.api.types.is_numeric_dtype(
            frame[column]) and not pd.api.types.is_bool_dtype(frame[column]))
        head.append(f'<th scope="col"{" class=num" if numeric else ""}>'
                    f"{html.escape(str(label if label is not None else column))}</th>")
    return head


def _row_html(table: Table, i: int, columns: list, positions: list[int], types: Mapping,
              index_config: Mapping) -> str:
    """Row ``i``: its index (unless hidden), then each shown column's cell with its CSS."""
    frame = table.frame
    cells = [f"<th scope=\"row\">{cell_html(frame.index[i], index_config)}</th>"] if not table.hide_index else []
    for column, position in zip(columns, positions):
        value = frame.iat[i, position]
        numeric = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))
        cls = ' class="num"' if numeric else ""
        cells.append(f"<td{cls}{_cell_style(table.cell_css, column, i)}>{cell_html(value, types[column])}</td>")
    return "<tr>" + "".join(cells) + "</tr>"


def _cell_style(css: pd.DataFrame | None, column, i: int) -> str:
    """The ``style`` attribute of a cell from ``cell_css``: one plain declaration (``background-color: #fff``)
    or nothing; anything else is dropped, never written."""
    if css is None or column not in css.columns or i >= len(css):
        return ""
    rule = css[column].iat[i]
    if isinstance(rule, str) and re.fullmatch(r"[a-z-]+:\s*[#(),.\w\s%-]+;?", rule):
        return f' style="{html.escape(rule, quote=True)}"'
    return ""


# -------------------------------------------------------------------------------------------- figures
def script_json(value) -> str:
    """JSON safe inside a ``<script>`` element: ``<``, ``>`` and ``&`` as unicode escapes (no ``</script>``,
    no ``<!--``), and the line separators JavaScript once rejected."""
    text = json.dumps(value, separators=(",", ":"), allow_nan=False, default=_json_default)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                          ("\u2029", "\\u2029")):
        text = text.replace(char, escaped)
    return text


def _json_default(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return None if not np.isfinite(value) else float(value)
    if isinstance(value, (pd.Timestamp,)):
        return value.isoformat()
    if value is pd.NA or value is None:
        return None
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def figure_json(figure) -> dict:
    """A plotly figure as plain JSON data (NaN → null), through plotly's own encoder."""
    if isinstance(figure, Mapping):
        return json.loads(json.dumps(figure, default=_json_default))
    import plotly.io

    return json.loads(plotly.io.to_json(figure, validate=False))


def _with_room_for_labels(layout: dict) -> dict:
    """The layout with every axis's margin grown to fit its tick labels (``automargin``, which Streamlit's
    theme turns on in the live view: a page's narrow margins would cut long system names off)."""
    layout = dict(layout)
    axes = [k for k in layout if re.fullmatch(r"[xy]axis\d*", k)] or ["xaxis", "yaxis"]
    for key in axes:
        axis = dict(layout.get(key) or {})
        axis.setdefault("automargin", True)
        layout[key] = axis
    return layout


def plotly_script() -> str:
    """plotly.js as shipped with the installed plotly package (its version matches the figures' schema)."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


# -------------------------------------------------------------------------------------------- the file
_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2937;margin:0;background:#fff}
main{max-width:1200px;margin:0 auto;padding:1.5rem 1.25rem 3rem}
h1{font-size:1.9rem;margin:0 0 0.4rem}h2{font-size:1.3rem;margin:1.6rem 0 0.5rem}h3{font-size:1.1rem}
.tb-meta{border:1px solid #e2e8f0;border-radius:6px;padding:0.6rem 0.9rem;background:#f8fafc;margin:0.6rem 0 1rem}
.tb-meta dl{display:grid;grid-template-columns:max-content 1fr;gap:0.15rem 1rem;margin:0}
.tb-meta dt{color:#475569}.tb-meta dd{margin:0}
.tb-condition{font-size:0.95rem;color:#334155;margin:0.2rem 0 0.6rem}
.tb-metrics{display:flex;flex-wrap:wrap;gap:0.6rem 2rem;margin:0.8rem 0}
.tb-metric .tb-label{font-size:0.85rem;color:#475569}.tb-metric .tb-value{font-size:1.6rem}
.tb-table{overflow:auto;max-height:36rem;width:fit-content;max-width:100%;margin:0.4rem 0 1rem;border:1px solid #e2e8f0}
table{border-collapse:collapse;font-size:0.85rem}
th,td{border:1px solid #e2e8f0;padding:0.2rem 0.5rem;text-align:left;white-space:nowrap}
thead th{background:#f1f5f9;position:sticky;top:0}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.tb-figure{margin:0.4rem 0 1rem}
.tb-text{margin:0.4rem 0;line-height:1.5}.tb-text-caption{font-size:0.85rem;color:#64748b}
.tb-text-info,.tb-text-warning,.tb-text-error,.tb-text-success{padding:0.5rem 0.8rem;border-radius:6px}
.tb-text-info{background:#eff6ff}.tb-text-warning{background:#fffbeb}.tb-text-error{background:#fef2f2}
.tb-text-success{background:#f0fdf4}
code{font-family:ui-monospace,monospace;font-size:0.85em;background:#f1f5f9;padding:0 0.2em;border-radius:3px}
.tb-share{word-break:break-all;font-family:ui-monospace,monospace;font-size:0.85rem}
footer{margin-top:2rem;font-size:0.8rem;color:#64748b}
"""


def markdown_text(text: str) -> str:
    """A markdown body as escaped HTML text: ``**bold**``, `` `code` `` and line breaks kept, a link's words
    kept (not the link: it pointed into the live dashboard), ``:material/…:`` icons and backslash escapes
    removed. Text from data arrives HTML-escaped and backslash-escaped (:func:`ui.notices.safe_text`) and is
    shown as the page showed it, as text."""
    held: list[str] = []

    def hold(match: re.Match) -> str:
        held.append(match.group(1))
        return f"\x00{len(held) - 1}\x00"

    text = re.sub(r":material/[a-z_]+:", "", str(text).replace("\x00", ""))
    text = re.sub(r"\\([\\`*_{}\[\]()#+\-.!<>|~])", hold, text)
    text = html.escape(html.unescape(text))
    text = re.sub(r"\[([^\]\n]+)\]\([^)\s]*\)", r"\1", text)
    text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
    text = re.sub(r"`([^`\n]+)`", r"<code>\1</code>", text)
    text = re.sub(r"\x00(\d+)\x00", lambda m: html.escape(held[int(m.group(1))]), text)
    return "<br>".join(line for line in text.strip().split("\n"))


def _markdown_bold(text: str) -> str:
    """Escaped text with ``**bold**`` kept (glossary definitions are written in markdown)."""
    return re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", html.escape(text))


def build(snapshot: Snapshot) -> str:
    """The view as one HTML document (UTF-8 text) that needs no server and makes no request."""
    parts, scripts = _parts_html(snapshot)
    inline = ([plotly_script()] if scripts else []) + scripts
    body = _title_html(snapshot) + _meta_html(snapshot) + "".join(parts) + _footer_html(len(scripts))
    return (_head_html(snapshot, inline) + "<body><main>" + body + "</main>"
            + "".join(f"<script>{s}</script>" for s in inline) + "</body></html>\n")


def _title_html(snapshot: Snapshot) -> str:
    """The view's title, and its condition line under it."""
    title = f"<h1>{html.escape(snapshot.title)}</h1>"
    if not snapshot.condition_line:
        return title
    return title + f'<p class="tb-condition" data-tb="condition">{html.escape(snapshot.condition_line)}</p>'


def _meta_html(snapshot: Snapshot) -> str:
    """The view's settings, tie policy, live link, data snapshot, sources and when it was taken, as a list."""
    return ('<section class="tb-meta"><dl>'
            + "".join(f"<dt>{html.escape(k)}</dt><dd>{v}</dd>" for k, v in _meta_rows(snapshot))
            + "</dl></section>")


def _meta_rows(snapshot: Snapshot) -> list[tuple[str, str]]:
    """(label, HTML) of each line of the list :func:`_meta_html` prints, in its order."""
    rows = [(label, f'<span data-tb="setting">{html.escape(value)}</span>') for label, value in snapshot.settings]
    if snapshot.tie_policy:
        rows.append(("Tie policy", f'<span data-tb="tie-policy">{html.escape(snapshot.tie_policy)}</span>'
                     + (f" — {_markdown_bold(snapshot.tie_policy_text)}" if snapshot.tie_policy_text else "")))
    if snapshot.share_link:
        rows.append(("Live view", f'<span class="tb-share" data-tb="share-link">{_share_link_html(snapshot.share_link)}'
                     "</span>"))
    if snapshot.snapshot_date:
        rows.append(("Data snapshot", f'<span data-tb="data-snapshot">{html.escape(snapshot.snapshot_date)}</span>'))
    rows += [("Source", f'<span data-tb="source">{html.escape(line)}</span>') for line in snapshot.provenance]
    if snapshot.taken:
        rows.append(("Snapshot taken", html.escape(snapshot.taken)))
    return rows


def _share_link_html(share_link: str) -> str:
    """The live view's link: a link when it is an http(s) address, else text (a ``javascript:`` URL stays text)."""
    if not re.match(r"https?://", share_link):
        return html.escape(share_link)
    return f'<a href="{html.escape(share_link, quote=True)}" rel="noopener noreferrer">{html.escape(share_link)}</a>'


def _parts_html(snapshot: Snapshot) -> tuple[list[str], list[str]]:
    """The HTML of the view's parts in order (headline numbers in a row next to each other), and the script that
    draws each figure. The page's own title and condition line, already at the top, are left out."""
    body: list[str] = []
    scripts: list[str] = []
    metrics: list[str] = []
    for part in snapshot.parts:
        if isinstance(part, Metric):
            metrics.append(_metric_html(part))
            continue
        if metrics:
            body.append(_metrics_row(metrics))
            metrics = []
        if _repeats_the_top(part, snapshot):
            continue
        if isinstance(part, Figure):
            div, script = _figure_html(part, len(scripts) + 1)
            body.append(div)
            scripts.append(script)
        else:
            body.append(_part_html(part))
    if metrics:
        body.append(_metrics_row(metrics))
    return body, scripts


def _repeats_the_top(part: Part, snapshot: Snapshot) -> bool:
    """Whether ``part`` is the page's title (a level-1 heading) or its condition line (a caption), which the
    file already shows at the top."""
    if isinstance(part, Heading):
        return part.level == 1 and part.text == snapshot.title
    return isinstance(part, Text) and part.kind == "caption" and part.body.strip() == snapshot.condition_line


def _metric_html(part: Metric) -> str:
    return (f'<div class="tb-metric" data-tb="metric"><div class="tb-label">{html.escape(part.label)}'
            f'</div><div class="tb-value">{html.escape(part.value)}</div></div>')


def _metrics_row(metrics: list[str]) -> str:
    return '<div class="tb-metrics">' + "".join(metrics) + "</div>"


def _part_html(part: Part) -> str:
    """A heading (levels 2 to 4), text, table or the dashboard's own markup; nothing for another part."""
    if isinstance(part, Heading):
        level = min(max(int(part.level), 2), 4)
        return f"<h{level}>{html.escape(part.text)}</h{level}>"
    if isinstance(part, Text):
        kind = re.sub(r"[^a-z]", "", part.kind)
        return f'<div class="tb-text tb-text-{kind}">{markdown_text(part.body)}</div>'
    if isinstance(part, Table):
        return table_html(part)
    if isinstance(part, Html):
        return f'<div class="tb-html">{part.body}</div>'
    return ""


def _figure_html(part: Figure, number: int) -> tuple[str, str]:
    """The ``number``-th figure's element (as tall as its layout asks, 450 px without) and the script that draws
    it there."""
    div = f"tb-figure-{number}"
    spec = figure_json(part.figure)
    layout = _with_room_for_labels(spec.get("layout") or {})
    height = layout.get("height") if isinstance(layout.get("height"), (int, float)) else 450
    script = (f"Plotly.newPlot({json.dumps(div)},{script_json(spec.get('data') or [])},"
              f"{script_json(layout)},{{\"responsive\":true,\"displaylogo\":false}});")
    return f'<div class="tb-figure" id="{div}" data-tb="figure" style="height:{int(height)}px"></div>', script


def _footer_html(figures: int) -> str:
    return (f"<footer>Snapshot of a tiebreak dashboard view: a static copy, it does not update. "
            f"{words.counted(figures, 'interactive chart')}.</footer>")


def _head_html(snapshot: Snapshot, inline: list[str]) -> str:
    """The document's head: its Content-Security-Policy (only the ``inline`` scripts, each by its sha256, may
    run; no request), a base address when the live view has an http(s) origin, and the title."""
    hashes = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'" for s in inline)
    policy = ("default-src 'none'; img-src data:; font-src data:; style-src 'unsafe-inline'; "
              f"script-src {hashes or chr(39) + 'none' + chr(39)}; base-uri 'none'; form-action 'none'")
    origin = re.match(r"(https?://[^/?#\s'\";]+)", snapshot.share_link or "")
    if origin:  # relative links in the view's markup (e.g. "?bench=…") lead to the live dashboard
        policy = policy.replace("base-uri 'none'", f"base-uri {origin.group(1)}")
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{html.escape(policy, quote=True)}">'
            + (f'<base href="{html.escape(snapshot.share_link, quote=True)}">' if origin else "")
            + '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta name="generator" content="{GENERATOR}">'
            f"<title>{html.escape(snapshot.title)} — tiebreak snapshot</title><style>{_CSS}</style></head>")
