"""Leaderboard: systems ranked by the benchmark's own aggregate, with ranks that admit ties."""
from __future__ import annotations

import html
from functools import partial

import pandas as pd

import streamlit as st

from ui import board as boards
from ui import (charts, data, drawing, glossary, hints, navigation, notices, screen, sidebar, state, tables, upload,
                words)

INTRO = (
    "Systems ranked by each benchmark's own aggregate — **RAR-b by G**, the geometric mean of task scores, "
    "**R2MED and CRUMB by the mean** — with the ranks each row can take through two lenses: **on these tasks** "
    "(the tasks fixed, their queries a sample) and **on new tasks like these** (the tasks a sample). "
    f"{glossary.link('on-these-tasks', 'How to read it')}.")
MAX_COMPARED = 4  # Compare shows two to four systems
BANDS = {"queries": ("on these tasks", "#93c5fd", 10), "tasks": ("on new tasks like these", "#cbd5e1", 14),
         "ties": ("tie range [min, max]", "#f97316", 4)}


def render() -> None:
    view = hints.page_top("Leaderboard", INTRO)
    if view is None:
        return
    cond = view.cond
    lens_at, order_at, common_at, options_at = st.columns([2.4, 1.5, 1.5, 0.9], vertical_alignment="bottom")
    lens = state.select("lens", "Ranks and intervals", list(boards.LENSES), "queries", where=lens_at, widget="radio",
                        format_func=boards.LENSES.get, always=False,
                        help=glossary.tip("on-these-tasks", "on-new-tasks"))
    order = state.select("sort", "Rank by", list(boards.ORDERS), boards.default_order(cond.benchmark),
                         where=order_at, format_func=boards.ORDERS.get, always=False,
                         help=glossary.tip("aggregate", "borda"))
    common = state.flag("common", "Rank on common tasks", False, where=common_at, help=glossary.tip(
        "common-tasks", before="Rank the shown systems (use the sidebar filters) on the tasks all of them have."))
    other = "mean" if boards.ranking_aggregate(order, cond.benchmark) == "G" else "G"
    with options_at.popover("Options", icon=":material/tune:"):
        show_other = state.flag("mean", f"Show {other}", False)
        show_borda = state.flag("borda", "Show Borda count", False,
                                help="The Borda column: always shown when the rows are in Borda count order.") \
            or order == "borda"
        level = float(state.select("level", "Confidence level", list(boards.LEVELS), "0.95",
                                   format_func=lambda v: f"{float(v):.0%}", always=False,
                                   help="Of the intervals, rank ranges, tiers and tests."))
        ranks = state.select("ranks", "Rank ranges", list(boards.RANK_KINDS), "marginal", widget="radio",
                             format_func=boards.RANK_KINDS.get, always=False, help=glossary.tip("rank-range"))
    pins = state.pinned(PIN_KEY, data.systems(view.data, benchmark=cond.benchmark)["system"].tolist())
    board = data.leaderboard(view.data, cond, systems=boards.board_systems(view.systems, pins, common),
                             aggregate=boards.aggregate_for(order, cond.benchmark), level=level, ranks=ranks,
                             common_tasks=common)
    hints.condition_line(view)
    hints.board_line(board, cond, upload.candidate())  # the visitor's own run (Evaluate your run), if any
    if board.ranked.empty and board.incomplete.empty:
        hints.explain_missing(
            "No results for this combination.",
            "Pick another setting, metric, instruction or precision in the sidebar, or add results for it:",
            hints.ingest_hint(view))
        return
    pointer = boards.within(boards.pointer_for(view.data, cond, board), view.systems, state.current_params())
    # precision kinds live in per-query files only: published boards (the first visit's) need not read them
    kinds = boards.kinds_of(data.precision_kinds(view.data) if sidebar.has_query_data(view.conditions(), cond)
                            else None, cond)
    for line in notices.data_lines(board):
        drawing.warning(line, icon=":material/report:")
    common_line = notices.common_tasks_line(board)
    if common_line:
        drawing.info(common_line, icon=":material/join_inner:")
    if board.ranked.empty:
        drawing.warning(f"No system has results for every task of this benchmark, so none can be ranked by "
                        f"{board.ranked_by}" + ("" if common else ": rank the shown systems on the tasks all of them "
                                           "have (“Rank on common tasks” above)") + ".")
    else:
        _headline(board, lens)
        _table(board, order, show_other, show_borda, view, kinds, common, lens)
        _below_table(board, order, pointer, view, kinds, lens, g_shown=board.ranked_by == "G" or show_other)
        chart = state.select("chart", "Chart", list(boards.CHARTS), "intervals", widget="radio",
                             format_func=boards.CHARTS.get, always=False, help="Drawn below the table.")
        if chart == "intervals":
            _chart(board, order, pointer, lens)
        elif chart == "size":
            _size_chart(board, view, lens)
    _incomplete(board)


PIN_KEY = "pin"
PIN_GENERATION = "_lb_pin_generation"  # bumped when a selection was cut to the link's limit: the table redraws it


def _headline(board, lens: str) -> None:
    """Both lenses side by side, the shown one first: how many adjacent pairs differ and who could be #1 (or
    why the lens says nothing here); one line under them: how many rows are ranked and not."""
    shown = [lens] + [name for name in boards.LENSES if name != lens]
    columns = st.columns(len(shown))
    for where, name in zip(columns, shown):
        line = notices.lens_headline(board, name)
        if line is None:
            continue
        mark = ":material/table_rows: " if name == lens else ""
        drawing.into(where).markdown(f"{mark}**{boards.LENSES[name]}:** {line}", help=glossary.tip(
            "on-these-tasks" if name == "queries" else "on-new-tasks", "separable"))
    not_ranked = f" · {len(board.incomplete)} not ranked (listed below)" if len(board.incomplete) else ""
    drawing.caption(f"{len(board.ranked)} systems ranked{not_ranked} · {notices.uncertainty_words(board)} · "
                    f"the table's ranges: {boards.LENSES[lens].lower()}; **{boards.DIFFERS_MARK}** marks a row "
                    "that differs from the one below it")


INFO_ICON = ('<span aria-hidden="true" style="display:inline-block;width:1.05em;height:1.05em;'
             'border:1.5px solid currentColor;border-radius:50%;font-size:0.8em;line-height:1.05em;'
             'text-align:center;font-weight:700;font-style:normal;vertical-align:0.1em">i</span>')
"""An "information" mark drawn with CSS around the letter i: the ⓘ character has no glyph in the page's font
nor in common Linux fallback fonts (Debian's Chromium drew a box), and ``st.html`` drops inline SVG."""


def _pointer_line(board, pointer: boards.Pointer, with_data: int) -> None:
    """One visible line: how many systems have per-query results, and a link to a condition that has them."""
    if pointer.here:
        drawing.markdown(f":material/check_circle: **{with_data} of {len(board.ranked)}** ranked systems have "
                         "per-query results here: their rows carry tie ranges, and on these tasks their own "
                         "variances.")
    elif pointer.cond is not None:
        n = pointer.n_systems
        if not pointer.filtered:
            who = f"<b>{n} systems</b> have per-query results"
        elif pointer.n_filtered:
            who = f"<b>{n} of the filtered systems</b> {'has' if n == 1 else 'have'} per-query results"
        else:
            who = f"None of the filtered systems has per-query results; <b>{n} other systems</b> have them"
        link = f"show {'it' if n == 1 else 'them'} — {html.escape(pointer.words)}"
        kept = " (filter kept)" if pointer.n_filtered else (" (without the filter)" if pointer.filtered else "")
        drawing.html(f'<p class="tb-pointer" style="margin:0.2rem 0 0.6rem">{INFO_ICON} {who}, with tie ranges: '
                     f'<a href="{pointer.url}" target="_self">{link}</a>{kept}.'
                     f" The rows here have {boards.TASK_LEVEL_ONLY}.</p>")
    else:
        drawing.caption(f"No system of this benchmark has per-query results: every row here has "
                        f"{boards.TASK_LEVEL_ONLY} (no tie range; on these tasks bounded by each task's query count).")


def _below_table(board, order: str, pointer: boards.Pointer, view, kinds, lens: str, g_shown: bool) -> None:
    """Under the table: what ranks and how, where per-query results are, then the board's notices."""
    with_data = int(board.ranked["has_query_data"].sum())
    drawing.caption(boards.ranking_line(board, view.cond.benchmark, order) + f" · with per-query results: "
                    f"{with_data} of {len(board.ranked)}")
    _pointer_line(board, pointer, with_data)
    _notices(board, view, kinds, lens, g_shown)


def _notices(board, view, kinds, lens: str, g_shown: bool = True) -> None:
    swaps = notices.swaps_line(board)
    if swaps:
        drawing.warning(swaps, icon=":material/swap_vert:")
    lifted = notices.lifted_line(boards.lifted_by_ties(board), board.ranked_by,
                                 column=boards.ranks_header("queries", lens))  # the ranges that count ties
    if lifted:
        drawing.warning(lifted, icon=":material/unfold_more:")
    line = notices.kinds_line(kinds, view.cond, board.ranked["system"])
    if line:
        drawing.info(line, icon=":material/memory:")
    if view.cond.setting == "mcr" and view.cond.metric == "p@1":
        chance = notices.chance_line(board, data.chance(view.data, view.cond, tasks=tuple(board.tasks)))
        if chance:
            drawing.info(chance, icon=":material/casino:")
    same = notices.same_model_line(board)
    if same:
        drawing.info(same, icon=":material/content_copy:")
    if board.zero_task_systems and g_shown:  # ranked by the mean with G hidden, a G of 0 is nowhere on the page
        names = [notices.safe_text(s) for s in board.zero_task_systems]
        shown = words.listed(names, 5)
        whose = "its" if len(names) == 1 else "each one's"
        drawing.warning(f"G is **0** for {shown}: {whose} score on at least one task is 0, and a geometric mean with "
                        "a zero factor is zero.")
    left_out = data.load_warnings(view.data)
    if left_out:
        drawing.caption(f":material/warning: {words.counted(len(left_out), 'group')} of rows "
                        f"{'was' if len(left_out) == 1 else 'were'} left out when the data was loaded "
                        "(bad or repeated values): see “rows left out” at the bottom of the sidebar.")


def _table(board, order: str, show_other: bool, show_borda: bool, view, kinds, common: bool, lens: str) -> None:
    """The ranked rows (a row's selection pins it), the pinned ones, their sources and the downloads."""
    meta = data.systems(view.data, benchmark=view.cond.benchmark)
    table = boards.table(board, meta, kinds, order, show_other, show_borda, lens)
    names = table["system"].tolist()
    pins = state.pinned(PIN_KEY, names, label="Pinned rows")
    # the widget's key names the rows it shows: another board (condition, filter, order) starts from the pins,
    # not from row positions that meant other systems
    key = f"lb_rows_{boards.rows_key(names)}_{st.session_state.get(PIN_GENERATION, 0)}"
    drawing.dataframe(tables.heat_styled(table, board.tasks),
                      column_config=boards.column_config(board, screen.on_a_phone(), lens),
                      hide_index=True, width="stretch", height=min(560, 35 * len(table) + 40), placeholder="—",
                      key=key, on_select=partial(_pins_changed, key, names), selection_mode="multi-row",
                      selection_default={"selection": {"rows": [names.index(s) for s in pins]}})
    _pinned_row(view, names, pins, common)
    sources = data.provenance(view.data).describe(table["source"] if "source" in table else [])
    snapshot = data.provenance(view.data).snapshot
    provenance = ("Sources: " + "; ".join(sources) if sources else  # e.g. runs ingested or imported from CRUMB
                  "Sources: not recorded (no systems table in the data folder names these rows' source)") + (
        f". Data snapshot {snapshot}." if snapshot else ".")
    drawing.caption("Task columns are shaded from their lowest (white) to highest (teal) value. " + provenance)
    ranked = "in Borda count order" if order == "borda" else f"ranked by {board.ranked_by}"
    title = (f"{boards.benchmark_name(view.cond.benchmark)} leaderboard, {view.cond.metric}, {ranked} "
             f"({hints.describe_condition(view)}); intervals and rank ranges on these tasks and on new tasks like "
             f"these: {notices.uncertainty_words(board)}. {provenance}")
    cond = view.cond  # the file name tells two views' downloads apart (the pooled board's overwrote the full one)
    tables.download_row(lambda: boards.export_rows(board, meta, kinds, order),  # built on a click, not every run
                        f"leaderboard_{cond.benchmark}_{cond.setting}_{cond.metric}_{cond.precision}", title,
                        bold_max=[board.ranked_by, "Borda", *board.tasks], integers=boards.INTEGER_COLUMNS,
                        latex_frame=lambda: boards.latex_rows(board, order), bold_where="#",
                        latex_tops=[n for n in boards.LATEX_TOPS if n < len(board.ranked)],
                        latex_top_frame=lambda n: boards.latex_rows(board, order, top=n),
                        top_caption=lambda n: boards.top_words(board, n))


def _pins_changed(key: str, names: list[str]) -> None:
    """The table's row selection changed: the selected rows are the pinned ones (a link carries at most 8)."""
    rows = st.session_state[key]["selection"]["rows"]
    if not state.set_pinned(PIN_KEY, names, [names[i] for i in rows if 0 <= i < len(names)]):
        st.session_state[PIN_GENERATION] = st.session_state.get(PIN_GENERATION, 0) + 1
        st.toast(f"At most {state.MAX_VALUES_PER_KEY} rows can be pinned (what a link carries): the first "
                 f"{state.MAX_VALUES_PER_KEY} are kept.", icon=":material/push_pin:")


def _pinned_row(view, names: list[str], pins: list[str], common: bool) -> None:
    """The ``pins`` among the table's rows (``names``) named, and the buttons that use them: compare them, rank
    them on their common tasks, unpin them all."""
    if not pins:
        drawing.caption(":material/push_pin: Tick rows (left of a row; by keyboard: arrow keys in the table, then "
                        "Shift+Space) to pin them: **Compare pinned** opens them side by side, and with **Rank on "
                        "common tasks** the board ranks only them. Pins are in the link.")
        return
    left, mid, right = st.columns([3, 1.2, 0.8], vertical_alignment="center")
    left.markdown(f":material/push_pin: **Pinned ({len(pins)}):** " + ", ".join(notices.safe_text(s) for s in pins)
                  + (" — ranked on the tasks all of them have." if common and len(pins) >= 2 else ""))
    fits = 2 <= len(pins) <= MAX_COMPARED
    if mid.button(f"Compare pinned ({len(pins)})", icon=":material/compare_arrows:", disabled=not fits,
                  help=None if fits else f"Compare takes 2 to {MAX_COMPARED} systems; {len(pins)} are pinned."):
        for key, value in {**sidebar.url_values(view.cond), "sys": pins}.items():
            state.set_wish(key, value)
        st.switch_page(navigation.PAGES_DIR / "compare.py")
    if right.button("Unpin all", icon=":material/close:"):
        state.set_pinned(PIN_KEY, names, [])
        st.session_state[PIN_GENERATION] = st.session_state.get(PIN_GENERATION, 0) + 1
        st.rerun()


def _chart(board, order: str, pointer: boards.Pointer, lens: str) -> None:
    agg = board.ranked_by
    rows = boards.ordered(board, order)
    shown = rows.head(boards.CHART_ROWS)
    second = "tasks" if lens == "queries" else "queries"
    drawing.subheader(f"Top {len(shown)}: {agg} with its intervals" if order != "borda"
                      else f"First {len(shown)} by Borda count: {agg} with its intervals")
    bands = [charts.Band(f"{second}_lo", f"{second}_hi", *BANDS[second]),
             charts.Band(f"{lens}_lo", f"{lens}_hi", *BANDS[lens]),
             charts.Band(f"{agg}_min", f"{agg}_max", *BANDS["ties"])]
    lens_ranks = boards.ranks_texts(shown, lens)
    notes = pd.Series([f"#{int(r)}, ranks {boards.LENSES[lens].lower()} {text}"
                       for r, text in zip(shown["rank"], lens_ranks)], index=shown.index)
    drawing.html(charts.forest_html(shown, "system", agg, bands, agg, notes=notes,
                                    groups=boards.tier_labels(shown, lens),
                                    aria_label=f"{agg} of the top {len(shown)} systems with their intervals"))
    cut = charts.cut_at_edge(shown, "system", agg, bands)
    first = (f"The first {len(shown)} of {len(rows)} systems in the current order, grouped by tier "
             f"{boards.LENSES[lens].lower()}; narrow the list with the sidebar filters to see others."
             if len(rows) > len(shown) else "")
    cuts = (f"{'A bar' if len(cut) == 1 else 'Bars'} cut at the right edge {'ends' if len(cut) == 1 else 'end'} in "
            f"▸, where the axis stops: {words.listed([f'{notices.safe_text(s)} reaches {r:.4f}' for s, r in cut], 4)} "
            "(hover a row for its values)." if cut else "")
    if first or cuts:
        drawing.caption(" ".join(part for part in (first, cuts) if part))


def _size_chart(board, view, lens: str) -> None:
    agg = board.ranked_by
    drawing.subheader("Performance vs model size")
    meta = data.systems(view.data, benchmark=view.cond.benchmark)
    merged = board.ranked[["system", agg]].merge(meta[["system", "n_parameters"]], on="system", how="left")
    sized = merged.dropna(subset=["n_parameters", agg])
    sized = sized[sized["n_parameters"] > 0].sort_values("n_parameters")
    unknown = merged.loc[merged["n_parameters"].isna(), "system"].tolist()
    sizeless = merged.loc[merged["n_parameters"] <= 0, "system"].tolist()  # baselines: a log axis has no 0
    if sized.empty:
        drawing.info("No ranked system has a known parameter count, so there is nothing to plot. Sizes come from "
                     "the `systems` table (`n_parameters`), e.g. via `python -m evalcore import-mteb`.")
        return
    import plotly.graph_objects as go

    front = sized[boards.real_front(board, sized, lens)]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=sized["n_parameters"], y=sized[agg], mode="markers", name="system",
                             text=sized["system"], marker=dict(size=9, color="#64748b"),
                             hovertemplate=f"%{{text}}<br>%{{x:.3s}} parameters<br>{agg} %{{y:.4f}}<extra></extra>"))
    # numbers, not names, beside the front's points: names of close models overlapped and a phone cut them at the
    # plot's edge; the caption below says which number is which system
    labels = [str(i) for i in range(1, len(front) + 1)]
    places = charts.apart_labels(front["n_parameters"].tolist())
    fig.add_trace(go.Scatter(x=front["n_parameters"], y=front[agg], mode="markers+text", name="Pareto front",
                             text=labels, customdata=front["system"], textposition=places,
                             marker=dict(size=10, color="#0d9488"),
                             hovertemplate=f"%{{customdata}}<br>%{{x:.3s}} parameters<br>{agg} %{{y:.4f}}"
                                           "<extra></extra>"))
    fig.update_layout(xaxis=dict(type="log", title="parameters (log scale)"), yaxis_title=agg, height=420,
                      margin=dict(l=10, r=10, t=40, b=40))
    charts.draw(fig)
    drawing.caption("Pareto front (smallest to largest): " + ", ".join(
        f"**{i}** {notices.safe_text(s)}" for i, s in enumerate(front["system"], start=1))
        + f". No system of no larger size is surely better on {agg} {boards.LENSES[lens].lower()} (the rank "
        "ranges' decisions); a system only a little below a smaller one stays on the front.")
    if unknown or sizeless:
        drawing.caption("Not plotted: " + "; ".join(
            f"{why}: {', '.join(notices.safe_text(s) for s in names)}"
            for why, names in (("size unknown", unknown), ("no parameters (a log axis has no 0)", sizeless)) if names)
            + ".")


def _incomplete(board) -> None:
    if board.incomplete.empty:
        return
    drawing.subheader(f"Not ranked ({len(board.incomplete)})")
    drawing.markdown(f"These systems lack a result for at least one task of this benchmark. {board.ranked_by} over a "
                     "different set of tasks is not comparable, so they are listed apart (the downloads include them). "
                     "To rank some of them, filter the board to them and tick **Rank on common tasks**: every shown "
                     "system is then ranked on the tasks all of them have.")
    n_board = len(board.declared_tasks or board.tasks)
    table = board.incomplete.assign(missing_tasks=board.incomplete["missing_tasks"].map(lambda v: ", ".join(map(str, v))),
                                    n_tasks=boards.coverage_texts(board.incomplete, n_board))
    drawing.dataframe(table, hide_index=True, width="stretch", column_config={
        "system": "System", "n_tasks": st.column_config.TextColumn("Tasks with results"),
        "missing_tasks": "Missing tasks", "reason": "Reason"})


render()
