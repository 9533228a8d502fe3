"""The "Download this view (HTML)" button: what a page drew during its script run (:mod:`ui.drawing`'s record)
turned into a snapshot (:mod:`ui.snapshot`).

The frame (``ui/navigation.py``) runs the page inside :func:`ui.drawing.recording`; the page's content elements
— ``title``, ``header``, ``subheader``, the texts (``markdown``, ``caption``, ``info``, ``warning``, ``error``,
``success``), ``metric``, ``dataframe``, ``plotly_chart`` and ``html`` — are drawn through :mod:`ui.drawing`,
which notes what they were given, in order. The snapshot is built from that record only when the button is
clicked (deferred download data), so a run that is not downloaded pays a few microseconds per element.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import streamlit as st

from ui import snapshot
from ui.drawing import Drawn

LOG = logging.getLogger("tiebreak.app")
TEXTS = ("markdown", "caption", "info", "warning", "error", "success")
BUTTON = "Download this view (HTML)"


def parts(drawn: Drawn) -> list[snapshot.Part]:
    """The recorded elements as snapshot parts (an element that cannot be converted is left out, logged)."""
    found = []
    for name, arguments in drawn.elements:
        try:
            part = _part(name, arguments)
        except Exception:  # a snapshot with one element fewer beats no snapshot
            LOG.exception("snapshot: could not convert a recorded %s", name)
            continue
        if part is not None:
            found.append(part)
    return found


# -------------------------------------------------------------------------------------------- conversion
def _part(name: str, arguments: Mapping) -> snapshot.Part | None:
    if name in ("title", "header", "subheader"):
        return snapshot.Heading(_plain(arguments.get("body")), {"title": 1, "header": 2, "subheader": 3}[name])
    if name in TEXTS:
        body = arguments.get("body")
        return snapshot.Text(name, str(body)) if body is not None and str(body).strip() else None
    if name == "metric":
        return snapshot.Metric(_plain(arguments.get("label")), _plain(arguments.get("value")))
    if name == "dataframe":
        return _table(arguments)
    if name == "plotly_chart":
        return snapshot.Figure(arguments.get("figure_or_data"))
    if name == "html":
        body = arguments.get("body")
        return snapshot.Html(body) if isinstance(body, str) else None
    return None


def _plain(text) -> str:
    """A label or value as the visitor reads it: markdown escapes and ``:material/…:`` icons removed."""
    text = re.sub(r":material/[a-z_]+:", "", "" if text is None else str(text))
    return re.sub(r"\\([\\`*_{}\[\]()#+\-.!<>|])", r"\1", text).strip()


def _table(arguments: Mapping) -> snapshot.Table | None:
    data = arguments.get("data")
    css = None
    if isinstance(data, pd.io.formats.style.Styler):
        styler, data = data, data.data
        css = _styler_css(styler, data)
    if isinstance(data, pd.Series):
        data = data.to_frame()
    elif data is not None and not isinstance(data, pd.DataFrame):
        data = pd.DataFrame(data)  # a list of records, a dict of columns, an array: what st.dataframe takes
    if not isinstance(data, pd.DataFrame):
        return None
    return snapshot.Table(data, dict(arguments.get("column_config") or {}), arguments.get("column_order"),
                          arguments.get("hide_index"), css)


def _styler_css(styler, frame: pd.DataFrame) -> pd.DataFrame | None:
    """The CSS of each cell from a Styler's ``apply`` calls (``Styler.export()``): e.g. the heat shading."""
    css = pd.DataFrame("", index=frame.index, columns=frame.columns)
    for _, (function, axis, subset), kwargs in styler.export().get("apply", []):
        block = frame if subset is None else frame.loc[:, list(subset) if not isinstance(subset, str) else [subset]]
        styles = function(block, **kwargs) if axis is None else block.apply(function, axis=axis, **kwargs)
        if isinstance(styles, pd.DataFrame):
            css.loc[styles.index, styles.columns] = styles.astype(str).to_numpy()
    return css


# -------------------------------------------------------------------------------------------- the button
CONDITION_KEYS = {"bench": "Benchmark", "setting": "Setting", "metric": "Metric", "instr": "Instruction",
                  "prec": "Precision", "ties": "Tie policy"}


def condition_of(params: Mapping, data_dir: Path | None = None,
                 shown: Mapping[str, tuple[str, str]] | None = None) -> tuple[str, list[tuple[str, str]]]:
    """The condition line as the pages word it (:func:`ui.hints.describe_condition`; with ``data_dir``, the
    precision carries its kind as on the page) and the (label, value) pairs of every URL setting of the view:
    the condition's in the sidebar's words, the others as their controls showed them (``shown``:
    :func:`ui.state.shown_params`; a key without a control's words stays as it is); an empty line when the view
    has no condition."""
    from evalcore.store import Condition
    from ui import data, hints, sidebar

    def one(key):
        value = params.get(key)
        return value[0] if isinstance(value, list) and value else value

    words = {"bench": sidebar.BENCHMARK_LABELS, "setting": sidebar.SETTING_LABELS,
             "instr": sidebar.INSTRUCTION_LABELS}
    shown = shown or {}
    settings = [(CONDITION_KEYS[key], str(words.get(key, {}).get(value, value))) if key in CONDITION_KEYS
                else shown.get(key, (key, ", ".join(value) if isinstance(value, list) else str(value)))
                for key, value in params.items() if key != "ties"]  # the tie policy has its own line
    if not all(one(key) for key in ("bench", "setting", "metric", "ties")):
        return "", settings
    cond = Condition(one("bench"), one("metric"), one("setting"), sidebar.INSTRUCTION_CHOICES.get(one("instr")),
                     one("prec"), one("ties"))
    skip = () if one("prec") else ("precision",)  # views over several precisions (Rank flips, Ties & precision)

    class _View:  # what describe_condition reads: .cond, .data and .conditions()
        data = None

        def conditions(self) -> pd.DataFrame:
            return data.facets(self.data)["conditions"] if self.data is not None else pd.DataFrame()

    view = _View()
    view.cond = cond
    if data_dir is not None and data_dir.is_dir():
        view.data = data.snapshot(data_dir)
    return hints.describe_condition(view, skip), settings


def used_sources(record, shown) -> list[str]:
    """The provenance lines of the sources the view names (its "Sources: …" caption quotes each line), else —
    a view that names none — every source of the data folder: a snapshot of the pooled board listed MTEB and
    the R2MED paper although every row was our own runs'."""
    every = [source.line() for source in record.sources.values()]
    said = " ".join(part.body for part in shown if isinstance(part, snapshot.Text))
    return [line for line in every if line in said] or every


def file_name(url_path: str, params: Mapping) -> str:
    """``tiebreak_<page>_<benchmark>_<metric>.html``, safe on every file system."""
    words = [url_path or "leaderboard"] + [str(params.get(k)) for k in ("bench", "metric") if params.get(k)]
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", "tiebreak_" + "_".join(words)).strip("-") + ".html"


def download_button(drawn: Drawn, page_title: str, url_path: str, params: Mapping, share_link: str,
                    data_dir: Path | None, shown: Mapping[str, tuple[str, str]] | None = None) -> None:
    """The sidebar button that downloads this view as one HTML file, built only when clicked; ``shown``: the
    controls' labels and words for the URL settings (:func:`ui.state.shown_params`)."""
    params, shown = dict(params), dict(shown or {})

    def build() -> bytes:
        from evalcore import provenance as provenance_module
        from ui import glossary

        line, settings = condition_of(params, data_dir, shown)
        record = provenance_module.Provenance()
        if data_dir is not None:
            try:
                record = provenance_module.load(data_dir)
            except Exception:  # a broken provenance file: the snapshot says nothing about sources
                LOG.exception("snapshot: provenance of %s not readable", data_dir)
        ties = params.get("ties")
        shown_parts = parts(drawn)
        term = glossary.TERMS.get("tie-policy")
        view = snapshot.Snapshot(
            title=drawn.title() or page_title, condition_line=line, settings=settings, parts=shown_parts,
            share_link=share_link, provenance=used_sources(record, shown_parts),
            snapshot_date=record.snapshot, tie_policy=str(ties) if ties else "",
            tie_policy_text=term.text if term and ties else "",
            taken=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
        return snapshot.build(view).encode("utf-8")

    st.sidebar.download_button(BUTTON, build, file_name=file_name(url_path, params), mime="text/html",
                               icon=":material/download:", on_click="ignore", width="stretch",
                               help="One HTML file with this view's tables and charts, its condition, share "
                                    "link and data sources; it opens in any browser without a server.")
