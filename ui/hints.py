"""What a page draws besides its numbers: a view's title and one-paragraph explanation, the line saying the
view moved to another condition, the line naming the condition, the filter note, the sources line, the empty
states (what is missing, why the view needs it, and the command that adds it), and what the pages show about a
visitor's own run (``ui/upload.py``): the sidebar box and its line on a board. The sentences that are functions
of facts alone (a board's notices, the run's condition and limits) are :mod:`ui.notices`'s."""
from __future__ import annotations

import logging
import zlib
from collections.abc import Sequence
from pathlib import Path

import streamlit as st

from evalcore.sources import FETCH_COMMAND, MTEB_RESULTS
from ui import data, drawing, notices, sidebar
from ui.sidebar import BENCHMARK_LABELS, SETTING_LABELS, Need, View

LOG = logging.getLogger("tiebreak.app")


def page_top(title: str, explanation: str, need: sidebar.Need | None = None) -> View | None:
    """The top of every view: its title and one-paragraph explanation, then the shared sidebar (``need``: what
    the view needs from the condition, :class:`ui.sidebar.Need`; when the sidebar moved to another condition
    for it, one line says so). Returns what the sidebar selected, or None (after saying why) when there is
    nothing to show: no data folder, no results, or every system filtered out."""
    drawing.title(title)
    drawing.markdown(explanation)
    view = sidebar.view(need, title)
    if not has_results_to_show(view):
        return None
    if need is not None and view.moved:
        drawing.info(moved_line(view, title, need), icon=":material/alt_route:")
    return view


def moved_line(view: View, title: str, need: Need) -> str:
    """The one line saying a view moved to another condition: 'Rank flips needs runs at two precisions:
    showing RAR-b · full (pooled candidates)'."""
    cond = view.cond
    parts = [BENCHMARK_LABELS.get(cond.benchmark, cond.benchmark),
             SETTING_LABELS.get(cond.setting, cond.setting).lower() if cond.setting != "mcr" else "MCR"]
    shown = {"metric": cond.metric, "instruction": notices.INSTRUCTION_WORDS[cond.instruction],
             "precision": cond.precision, "tie_policy": f"ties: {cond.tie_policy}"}
    parts += [text for name, text in shown.items() if name in view.moved]
    return notices.view_moved_line(title, need.what, parts)


def condition_line(view: View, skip: Sequence[str] = (), note: str = "") -> None:
    """The caption naming the shown condition (fields in ``skip`` left out, ``note`` appended) and, when the
    sidebar filters systems, what they keep."""
    drawing.caption(describe_condition(view, skip) + note)
    if view.filter_summary:
        drawing.caption(notices.filter_note(view.filter_summary, _with_results(view), len(view.systems or ())))


def _with_results(view: View) -> int | None:
    """How many of the filtered systems have results under the condition (the filter counts the benchmark's
    systems: "16 systems" above a board of 15); None without a filter. An instruction state of "as published"
    (None) matches either."""
    if view.systems is None or view.data is None:
        return None
    rows = data.coverage(view.data)
    for name in ("benchmark", "setting", "metric", "instruction", "precision", "tie_policy"):
        wanted = getattr(view.cond, name, None)
        if wanted is not None and name in rows:
            rows = rows[rows[name].eq(wanted).fillna(False).astype(bool)]  # an unknown instruction (NA): no
    return len(set(view.systems) & set(rows["system"]))


def sources_line(view: View, skip: Sequence[str] = ()) -> None:
    """The caption naming where the view's numbers come from: each source's repository @ commit, what wrote it
    and when, and the data snapshot (``data/provenance.json``), for the shown condition (``skip``: fields the
    view spans, e.g. every precision)."""
    from dataclasses import replace

    from ui import data

    cond = replace(view.cond, **{name: None for name in ("precision", "instruction") if name in skip})
    provenance = data.provenance(view.data)
    lines = provenance.describe(data.sources(view.data, cond, systems=view.systems))
    if lines:
        drawing.caption(notices.sources_line(lines, provenance.snapshot))


def describe_condition(view: View, skip: Sequence[str] = ()) -> str:
    """One line naming the selected condition (fields in ``skip`` are left out)."""
    cond = view.cond
    instr = {None: "instructions as published", False: "without instructions", True: "with instructions"}
    parts = {"benchmark": sidebar.BENCHMARK_LABELS.get(cond.benchmark, cond.benchmark),
             "setting": SETTING_LABELS.get(cond.setting, cond.setting), "metric": cond.metric,
             "instruction": instr[cond.instruction], "precision": _precision(view),
             "tie_policy": f"ties: {cond.tie_policy}"}
    return " · ".join(text for name, text in parts.items() if name not in skip)


def _precision(view: View) -> str:
    """The condition's precision with its kind, as the sidebar shows it ('bf16 (inference / scores stored)')."""
    cond = view.cond
    if getattr(view, "data", None) is None or cond.precision is None:
        return str(cond.precision)
    return sidebar.precision_label(view.data, view.conditions(),
                                   {"benchmark": cond.benchmark, "setting": cond.setting}, cond.precision)


def has_results_to_show(view: View) -> bool:
    """False (after explaining why) when the data folder is missing or empty, or the sidebar filters exclude
    every system: the guard every view starts with."""
    if view.data is None:
        LOG.error("the data folder %s does not exist", view.data_dir)  # the path for the operator, not visitors
        drawing.error(notices.no_data_folder(view.data_dir.name))
        return False
    if not view.has_data:
        explain_no_data(view.data_dir)
        return False
    if view.systems is not None and len(view.systems) == 0:
        drawing.warning(notices.NO_SYSTEM_MATCHES)
        return False
    return True


def explain_no_data(data_dir: Path) -> None:
    """The empty state of a data folder without results (its path stays on the server: a hosted dashboard's
    visitors are not told the server's file system)."""
    with _empty_state("no results"):
        drawing.info(notices.NO_RESULTS_YET)
        drawing.markdown(notices.ADD_RESULTS)
        st.code(f"{FETCH_COMMAND}   # the upstream sources, into sources/\n"
                f"python -m evalcore import-mteb sources/{MTEB_RESULTS} --out DATA_DIR/published"
                "   # published MTEB scores\n"
                + ingest_command("rar-b", data_dir=data_dir) + "   # your own run, per query", language="bash")
        drawing.caption(notices.ANOTHER_FOLDER)


EMPTY_STATE_KEY = "empty-state"
"""Every empty state sits in a container whose key starts with this (CSS class ``st-key-empty-state…``): the
browser test of a first visit looks for none."""


def _empty_state(what: str):
    """The container of one empty state (keys are unique within a page: one per distinct message)."""
    return st.container(key=f"{EMPTY_STATE_KEY}-{zlib.crc32(what.encode()):08x}")


def explain_missing(what: str, why: str, command: str | None = None) -> None:
    """An empty state: what is missing, why this view needs it, and the command that adds it."""
    with _empty_state(what):
        drawing.info(f"**{what}** {why}")
        if command:
            st.code(command, language="bash")


def ingest_command(benchmark: str = "BENCHMARK", precision: str = "fp32", setting: str = "full",
                   instruction: str = "no", data_dir: Path | None = None) -> str:
    """The ``evalcore ingest`` call that adds one run's per-query results (``instruction``: yes | no)."""
    target = " --data DATA_DIR" if data_dir else ""  # never the server's own path (a hosted dashboard's visitors)
    return (f"python -m evalcore ingest --run RUN.trec --qrels QRELS.tsv --system NAME \\\n"
            f"    --benchmark {benchmark} --task TASK --setting {setting} --instruction {instruction} "
            f"--precision {precision}{target}")


def ingest_hint(view: View, **overrides: str) -> str:
    """:func:`ingest_command` for the selected condition and data dir, with some fields overridden."""
    cond = view.cond
    fields = {"benchmark": cond.benchmark, "precision": cond.precision, "setting": cond.setting,
              "instruction": "yes" if cond.instruction else "no", **overrides}
    return ingest_command(**fields, data_dir=view.data_dir)


# -------------------------------------------------------------------------------------------- a visitor's run
def run_box(held, show_condition) -> None:
    """On every view, while the session holds a run (``held``, None for none): its name and condition, and a
    button that moves the sidebar there (``show_condition(held)``); the frame draws it."""
    if held is None:
        return
    box = st.sidebar.container(border=True)
    box.markdown(notices.run_box_text(held.system, notices.run_condition_words(held)))
    box.button("Show its condition", key="tb_candidate_condition", icon=":material/my_location:", width="stretch",
               on_click=show_condition, args=(held,),
               help="Set the sidebar to the condition your run was evaluated under (it is one more system there).")


def board_line(board, cond, held, *, name_setting: bool = False) -> None:
    """One line about a visitor's run (``held``, None for none) on a board of ``cond``: the metric (and, with
    ``name_setting``, the setting) it is ranked by, its place (#), its aggregate with the tie range and
    interval — or where it was evaluated when that is another condition. The run is named once, by the
    visitor's name. Nothing without one."""
    if held is None:
        return
    req = held.request
    same = (cond.benchmark, cond.setting, cond.precision) == (req.benchmark, req.setting, req.precision) \
        and cond.instruction in (None, req.instruction)
    if not same:
        drawing.info(notices.run_elsewhere_line(req.name, notices.run_condition_words(held)), icon=":material/person:")
        return
    mine = board.ranked[board.ranked["system"] == held.system]
    if mine.empty:
        unranked = board.incomplete[board.incomplete["system"] == held.system]
        drawing.info(notices.run_not_ranked_line(req.name, misses_a_task=len(unranked) > 0), icon=":material/person:")
        return
    where = cond.metric + (f" · {notices.SETTING_WORDS.get(cond.setting, cond.setting)}" if name_setting else "")
    drawing.success(notices.run_ranked_line(req.name, where, mine.iloc[0], len(board.ranked), board.ranked_by),
                    icon=":material/person:")
