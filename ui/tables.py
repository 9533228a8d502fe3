"""Tables and their exports: heat shading of score columns, number columns, CSV and LaTeX downloads of exactly
the table shown."""
from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import pandas as pd
import streamlit as st

from evalcore.cells import latex_cell
from evalcore.csv_export import to_csv_text
from ui import internals

HEAT_LEVELS = 16
"""Shades per heat-shaded column. Each distinct shade is one CSS rule sent to the browser: continuous shades
made one rule per cell (~2,400 on the default Leaderboard, 150 kB per run and a slower first paint); 17 steps
(0..16) look the same as a continuous scale."""


def heat_levels(block: pd.DataFrame) -> np.ndarray:
    """Each cell's shade step 0..HEAT_LEVELS (rows × columns, float): round(HEAT_LEVELS · (v − min) / (max −
    min)) over its column's finite values; NaN — and a whole column that is constant or empty — gets NaN,
    i.e. no shading."""
    numbers = block.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    numbers = np.where(np.isfinite(numbers), numbers, np.nan)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
        lo, hi = np.nanmin(numbers, axis=0), np.nanmax(numbers, axis=0)
        span = np.where(hi > lo, hi - lo, np.nan)
        return np.round((numbers - lo) / span * HEAT_LEVELS)


def heat_colour(level: float) -> str:
    """CSS background for a shade step: white (0, the column minimum) to teal (HEAT_LEVELS, its maximum)."""
    if level is None or not math.isfinite(level):
        return ""
    share = min(max(level / HEAT_LEVELS, 0.0), 1.0)
    r, g, b = (int(255 + (c - 255) * share * 0.85) for c in (20, 150, 140))
    return f"background-color: rgb({r},{g},{b})"


# index = level + 1; index 0 (level NaN → -1) is "no shading"
_HEAT_CSS = np.array([""] + [heat_colour(level) for level in range(HEAT_LEVELS + 1)], dtype=object)


def heat_shading(block: pd.DataFrame) -> pd.DataFrame:
    """The CSS of every cell of ``block`` (same shape): :func:`heat_colour` of its :func:`heat_levels` step."""
    levels = np.nan_to_num(heat_levels(block), nan=-1).astype(int)
    return pd.DataFrame(_HEAT_CSS[levels + 1], index=block.index, columns=block.columns)


def heat_styled(frame: pd.DataFrame, columns: Iterable[str]):
    """``frame`` with each of ``columns`` shaded from its own minimum (white) to maximum (teal): a pandas
    Styler (``Styler.apply``), which ``st.dataframe`` draws, answering Streamlit's rendering calls with the
    shading's few CSS rules (:func:`_with_precomputed_rendering`); the frame itself when no column is shaded."""
    columns = [c for c in columns if c in frame.columns]
    if not columns:
        return frame
    return _with_precomputed_rendering(frame.style.apply(heat_shading, subset=columns, axis=None), frame, columns)


def heat_rules(frame: pd.DataFrame, columns: Sequence[str]) -> list[dict]:
    """The shading of :func:`heat_styled` as pandas renders a Styler's cell styles: one entry per shade in
    use, ``{"props": [(property, value)], "selectors": ["row{i}_col{j}", ...]}`` (positions in ``frame``)."""
    positions = frame.columns.get_indexer(columns)
    levels = np.nan_to_num(heat_levels(frame[list(columns)]), nan=-1).astype(int)
    rules = []
    for level in np.unique(levels[levels >= 0]):
        rows, cols = np.nonzero(levels == level)
        prop, value = _HEAT_CSS[level + 1].split(":", 1)
        rules.append({"props": [(prop.strip(), value.strip())],
                      "selectors": [f"row{r}_col{c}" for r, c in zip(rows.tolist(), positions[cols].tolist())]})
    return rules


def _with_precomputed_rendering(styler, frame: pd.DataFrame, columns: Sequence[str]):
    """``styler`` answering Streamlit's rendering calls with the shading's rules (:func:`heat_rules`) and no
    display text, through :func:`ui.internals.answer_styler_rendering` (kept because it measurably matters).

    ``st.dataframe`` draws a Styler from pandas' ``Styler._compute()`` / ``_translate()``: the CSS and the
    display text of every cell, built cell by cell, then matched by Streamlit cell by cell. For the
    Leaderboard's 100 × 35 table that is ~0.03 s of every rerun on an idle machine and ~60% of a cached
    rerun's Python time (bench/RESULTS.md). The shading is at most HEAT_LEVELS + 1 CSS rules, built with numpy;
    the grid formats numbers with ``column_config``, not with a Styler's text."""
    return internals.answer_styler_rendering(
        styler, {"cellstyle": heat_rules(frame, columns), "table_styles": [], "body": []})


def number(label: str, digits: int = 4, **options):
    """A numeric column shown with ``digits`` decimals (0: an integer)."""
    return st.column_config.NumberColumn(label, format="%d" if digits == 0 else f"%.{digits}f", **options)


def interval_words(lo: float, hi: float, digits: int = 3, between: str = "–") -> str:
    """An interval printed with ``digits`` decimals, rounded outwards (the low end down, the high end up): the
    printed interval always holds what it holds, so a point shown with more decimals never looks outside it
    (0.3155 beside "0.315–0.315" when the high end was 0.31549). Float noise below 1e-9 of a step is not
    rounded outwards (0.1 stays 0.100, not 0.101)."""
    step = 10.0 ** digits
    low = math.floor(round(lo * step, 6)) / step
    high = math.ceil(round(hi * step, 6)) / step
    return f"{low:.{digits}f}{between}{high:.{digits}f}"


def share_column(label: str, **options):
    """A 0–1 share drawn as a bar with its percentage at two decimals ("32.18%", "35.10%", "0.05%"): Streamlit's
    ``format="percent"`` drops trailing zeros, so one column read "35.1%" beside "32.18%". Its values must be
    in percent (:func:`as_percent`)."""
    return st.column_config.ProgressColumn(label, format="%.2f%%", min_value=0.0, max_value=100.0, **options)


def as_percent(shares: pd.Series) -> pd.Series:
    """0–1 shares as percentages, for :func:`share_column`."""
    return shares.astype(float) * 100.0


def signed(values: pd.Series, digits: int = 4) -> pd.Series:
    """Values rounded to the ``digits`` shown, without negative zeros: a bias of −0.00001 printed as "-0.0000"
    under ``%+.4f``, a sign on a value that rounds to nothing."""
    return values.astype(float).round(digits) + 0.0


WIDE_LATEX = 8
"""Columns above which the LaTeX table is scaled to the text width (``\\resizebox``): 21 columns of numbers
overflow a page."""


def with_integer_columns(frame: pd.DataFrame, integers: Iterable[str]) -> pd.DataFrame:
    """A copy whose ``integers`` columns are nullable integers (Int64): a rank or a count prints as ``1``, not
    ``1.0`` (CSV) or ``1.0000`` (LaTeX), and a missing one as an empty cell."""
    frame = frame.copy()
    for column in integers:
        if column in frame.columns:
            frame[column] = pd.to_numeric(frame[column], errors="coerce").round().astype("Int64")
    return frame


def latex_table(frame: pd.DataFrame, caption: str, bold_max: Iterable[str] = (), digits: int = 4,
                bold_where: str | None = None) -> str:
    """A booktabs LaTeX table of ``frame`` (floats with ``digits`` decimals, integers as integers, missing
    values as ``--``). The best value of each ``bold_max`` column is bold when the column holds at least two
    different values (one row, or a constant column, has no best); with ``bold_where``, the best among the rows
    that have a value in that column only (a leaderboard's ranked rows: a system missing a task is not "best"
    on the tasks it has). More than :data:`WIDE_LATEX` columns are scaled to the text width (needs
    ``\\usepackage{graphicx}`` besides booktabs)."""
    bold_max = [c for c in bold_max if c in frame.columns]
    among = frame[bold_where].notna().to_numpy() if bold_where in frame.columns else np.ones(len(frame), bool)
    best = {}
    for column in bold_max:
        values = pd.to_numeric(frame[column], errors="coerce").astype(float).where(among)
        finite = values[np.isfinite(values)]
        if finite.nunique() >= 2:
            best[column] = finite.max()

    def cell(column: str, value, eligible: bool = True) -> str:
        if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
            return "--"
        if isinstance(value, (bool, np.bool_)):
            return "yes" if value else "no"
        if isinstance(value, (int, np.integer)):
            return str(int(value))
        if isinstance(value, (float, np.floating)):
            if not math.isfinite(value):
                return "--"
            text = f"{value:.{digits}f}"
            return f"\\textbf{{{text}}}" if eligible and column in best and value == best[column] else text
        return latex_cell(str(value))

    header = " & ".join(latex_cell(str(c)) for c in frame.columns)
    rows = [" & ".join(cell(c, v, eligible) for c, v in zip(frame.columns, row)) + r" \\"
            for eligible, row in zip(among, frame.itertuples(index=False))]
    align = "".join("r" if pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])
                    else "l" for c in frame.columns)
    tabular = [f"\\begin{{tabular}}{{{align}}}", r"\toprule", header + r" \\", r"\midrule", *rows,
               r"\bottomrule", r"\end{tabular}"]
    if len(frame.columns) > WIDE_LATEX:
        tabular = [r"\resizebox{\linewidth}{!}{%", *tabular, "}"]
    return "\n".join([
        r"\begin{table}[t]", r"\centering", f"\\caption{{{latex_cell(caption)}}}", *tabular,
        r"\end{table}",
        "% needs \\usepackage{booktabs}" + (" and \\usepackage{graphicx}" if len(frame.columns) > WIDE_LATEX else ""),
        "",
    ])


Frame = pd.DataFrame | Callable[[], pd.DataFrame]
"""A frame, or a function that builds it (called only when a download is clicked)."""


def _built(frame: Frame) -> pd.DataFrame:
    return frame() if callable(frame) else frame


def download_row(frame: Frame, stem: str, caption: str, bold_max: Iterable[str] = (),
                 integers: Iterable[str] = (), latex_frame: Frame | None = None, bold_where: str | None = None,
                 latex_tops: Sequence[int] = (), latex_top_frame: Callable[[int], pd.DataFrame] | None = None,
                 top_caption: Callable[[int], str] | None = None) -> None:
    """CSV and LaTeX downloads: the CSV holds ``frame`` (every row and column of the table), the LaTeX table
    ``latex_frame`` (default the same) under ``caption``; ``integers`` columns print as integers. With
    ``latex_tops`` (e.g. 10, 20, 50) the LaTeX button opens a choice of rows first — a paper's table holds the
    top of a board, not 145 systems: ``latex_top_frame(n)`` the rows, ``top_caption(n)`` the words appended to the
    caption. The files — and the frames, when given as functions — are built when a button is clicked (deferred
    ``data``), not on every run: most runs are never downloaded, and building them cost ~0.05 s per run for a
    100-system table (the export frames alone ~0.02 s of the Leaderboard's ~0.08 s rerun: bench/RESULTS.md
    § Capacity)."""
    integers = list(integers)
    bold_max = list(bold_max)

    def csv_bytes() -> bytes:
        return to_csv_text(with_integer_columns(_built(frame), integers)).encode()

    def latex_bytes(top: int | None = None) -> bytes:
        if top is None:
            tex_frame, words = _built(frame if latex_frame is None else latex_frame), caption
        else:
            tex_frame, words = latex_top_frame(top), f"{caption} {top_caption(top)}" if top_caption else caption
        return latex_table(with_integer_columns(tex_frame, integers), words, bold_max, bold_where=bold_where).encode()

    left, right, _ = st.columns([1.3, 1.3, 3])
    left.download_button("Download CSV", csv_bytes, file_name=f"{stem}.csv",
                         mime="text/csv", icon=":material/download:", on_click="ignore")
    if not latex_tops:
        right.download_button("Download LaTeX", latex_bytes, file_name=f"{stem}.tex", mime="text/x-tex",
                              icon=":material/description:", on_click="ignore")
        return
    with right.popover("Download LaTeX", icon=":material/description:"):
        top = st.radio("Rows", [*latex_tops, None], format_func=lambda n: f"top {n}" if n else "every system",
                       index=len(latex_tops), horizontal=True, key=f"latex-rows-{stem}",
                       help="Top n: the systems whose rank (#) is n or better (more than n rows when points tie at "
                       "the cut). Every system: the ranked ones, then those not ranked.")
        st.download_button("Download", functools.partial(latex_bytes, top),
                           file_name=f"{stem}{f'_top{top}' if top else ''}.tex", mime="text/x-tex",
                           icon=":material/download:", on_click="ignore")
