"""Ties & precision: how much of each score is decided by tie-breaking, per precision, and what HPS fixes."""
from __future__ import annotations

from pathlib import Path

import plotly.graph_objects as go
import streamlit as st

from ui import charts, data, drawing, glossary, hints, sidebar, state, tables

TITLE = "Ties & precision"
NEED = sidebar.Need("per-query results", sidebar.rows_with_query_data, ignores=("precision",),
                    ignored_text={"precision": "every precision (compared on this page)"})
WHAT_IF_PRECISIONS = ("bf16", "fp16")
SCORINGS = {"score": "scores are similarities (dot / cosine)", "sigmoid": "scores are logits (sigmoid reranker)"}
KIND_LABELS = {"inference": "inference", "storage": "stored", "native": "native"}
_WHAT_IF_TASK = "_what_if_task"  # session state: the task the what-if was last drawn for


def render() -> None:
    view = hints.page_top(TITLE, (
        "Low precision (BF16, FP16) rounds many documents to the same score, and a tie-oblivious evaluator then "
        "breaks those ties by document id — so part of the reported number is luck. Per system and precision: the "
        "reported (oblivious) score, the tie-aware expected score, the range [min, max] over tie orderings, the "
        "bias, and how often a tie straddles the cutoff; plus what High-Precision Scoring (HPS) recovers."),
        need=NEED)
    if view is None:
        return
    hints.condition_line(view, skip=("precision",), note=" · every precision")
    hints.sources_line(view, skip=("precision",))
    task = _tie_summary(view)
    st.divider()
    _what_if(view, task)


def _tie_summary(view: sidebar.View) -> str:
    """The tie statistics of the chosen task ("all": every task); returns the task."""
    tasks = view.tasks_with_results(any_precision=True, query_data=True)
    task = state.select("tp_task", "Task", ["all"] + tasks, "all", always=False,
                        format_func=lambda t: "all tasks (mean over tasks)" if t == "all" else t,
                        help="The tasks with per-query results under this condition.")
    summary = data.tie_summary(view.data, view.cond, systems=view.systems, task=None if task == "all" else task)
    if summary.empty:
        hints.explain_missing(
            "No per-query results for this benchmark and condition.",
            "Tie statistics need per-query oblivious / expected / min / max values, which published leaderboards "
            "do not contain. Evaluate a run with the tie-aware engine and add it, once per precision:",
            hints.ingest_hint(view, precision="bf16"))
        return task
    kinds = data.precision_kinds(view.data)
    kinds = kinds[(kinds["benchmark"] == view.cond.benchmark) & (kinds["setting"] == view.cond.setting)]
    summary = summary.merge(kinds[["system", "precision", "precision_kind"]], on=["system", "precision"], how="left")
    summary["precision_kind"] = summary["precision_kind"].map(KIND_LABELS).fillna("")
    summary = summary.sort_values(["system", "precision"], key=lambda s: s.map(sidebar.precision_key)
                                  if s.name == "precision" else s).reset_index(drop=True)
    precisions = sorted(summary["precision"].unique().tolist(), key=sidebar.precision_key)
    cols = st.columns(3)
    drawing.into(cols[0]).metric("Systems with per-query data", f"{summary['system'].nunique()}")
    drawing.into(cols[1]).metric("Precisions", f"{len(precisions)}", help="With per-query data: " + ", ".join(precisions))
    drawing.into(cols[2]).metric("Queries per system × precision", f"{int(summary['n_queries'].max()):,}",
                                 help="The largest count; rows differ when a system lacks some tasks.")

    drawing.subheader("Precision profile per system")
    drawing.markdown("Each panel is one system across every precision it was run or stored at: the **expected** score "
                     "(dot) with its tie range **[min, max]** (bar), the **oblivious** score a tie-oblivious evaluator "
                     f"reports (✕), and the **share of queries {glossary.link('tied-at-cutoff', 'tied at the cutoff')}**"
                     f" (grey bars, right axis) — not the share of {glossary.link('tie-dependent', 'tie-dependent')} "
                     "queries. Compare `bf16` with `bf16+hps` to see what high-precision scoring recovers. Each panel's "
                     "score axis is scaled to that system (never below 0): read a panel's steps against its own ticks, "
                     "not against its neighbours'.")
    _profile(summary, precisions, view.cond.metric,
             key=None if view.data.overlay else ("ties-profile", view.data, view.cond, view.systems, task))

    drawing.subheader("Tie statistics per system and precision")
    number = tables.number
    drawing.dataframe(_printed(summary), hide_index=True, width="stretch", column_order=[
        "system", "precision", "precision_kind", "oblivious", "expected", "min", "max", "range", "bias",
        "tied_share", "n_tasks", "n_queries"], column_config={
        "system": "System", "precision": "Precision",
        "precision_kind": st.column_config.TextColumn("Kind", help=glossary.tip("precision-kind")),
        "oblivious": number("Oblivious", help=glossary.tip("oblivious", before=(
            "Score as trec_eval / MTEB report it (ties ordered by the tie policy)."))),
        "expected": number("Expected", help=glossary.tip("expected")),
        "min": number("Min", help=glossary.tip("tie-range")), "max": number("Max", help=glossary.tip("tie-range")),
        "range": number("Range", help=glossary.tip("range")),
        "bias": st.column_config.NumberColumn("Bias", help=glossary.tip("bias"), format="%+.4f"),
        "tied_share": tables.share_column("Tied at cutoff", help=glossary.tip("tied-at-cutoff", before=(
            "Share of queries with a tie straddling the metric's cutoff."))),
        "n_tasks": number("Tasks", 0), "n_queries": number("Queries", 0),
    })
    return task


PROFILE_COLUMNS = 3  # panels per row on a wide screen; Streamlit stacks columns on a phone


def _profile(summary, precisions: list[str], metric: str, key: tuple | None = None) -> None:
    """Small multiples, one chart per system, in rows of :data:`PROFILE_COLUMNS` columns (a phone stacks them
    one under the other, each readable at full width). ``key`` names the question the summary answers: each
    system's figure is built once per key and system (:func:`ui.charts.draw_remembered`)."""
    systems = sorted(summary["system"].unique().tolist())
    for start in range(0, len(systems), PROFILE_COLUMNS):
        columns = st.columns(PROFILE_COLUMNS)
        for column, system in zip(columns, systems[start:start + PROFILE_COLUMNS]):
            charts.draw_remembered(None if key is None else (*key, system), lambda system=system: _profile_figure(
                summary[summary["system"] == system], system, precisions, metric), where=column)


def _profile_figure(rows, system: str, precisions: list[str], metric: str) -> go.Figure:
    """One system across its precisions in a fixed order: the share of queries tied at the cutoff as grey bars
    (right axis, drawn behind), and on the left axis the expected value with its [min, max] range and the oblivious
    value (drawn on top). The legend is the paragraph above the panels. Built as one figure description (the
    layout ``make_subplots(secondary_y=True)`` makes, written out): a third of the CPU of building it call by
    call, paid by every new question on this view once per system."""
    own = [p for p in precisions if p in set(rows["precision"])]
    rows = rows.set_index("precision").reindex(own).reset_index()
    x = rows["precision"].tolist()
    bars = dict(type="bar", x=x, y=rows["tied_share"].to_numpy(), name="queries tied at the cutoff",
                marker=dict(color="#e2e8f0"), xaxis="x", yaxis="y",
                hovertemplate="%{x}: %{y:.1%} of queries tied at the cutoff<extra></extra>")
    expected = dict(
        type="scatter", x=x, y=rows["expected"].to_numpy(), mode="lines+markers", xaxis="x", yaxis="y2",
        name=f"expected {metric} with [min, max]", line=dict(color="#334155", width=1.5),
        marker=dict(size=7, color="#334155"),
        error_y=dict(type="data", symmetric=False, array=(rows["max"] - rows["expected"]).to_numpy(),
                     arrayminus=(rows["expected"] - rows["min"]).to_numpy(), color="#f97316", thickness=3, width=0),
        customdata=rows[["min", "max", "precision_kind"]].to_numpy(),
        hovertemplate="%{x} (%{customdata[2]}): expected %{y:.4f}, [min, max] [%{customdata[0]:.4f}, "
                      "%{customdata[1]:.4f}]<extra></extra>")
    oblivious = dict(type="scatter", x=x, y=rows["oblivious"].to_numpy(), mode="markers", name="oblivious",
                     xaxis="x", yaxis="y2", marker=dict(symbol="x", size=8, color="#dc2626"),
                     hovertemplate="%{x}: oblivious %{y:.4f}<extra></extra>")
    layout = dict(
        xaxis=dict(anchor="y", domain=[0.0, 0.94], type="category", categoryorder="array", categoryarray=own),
        yaxis=dict(anchor="x", domain=[0.0, 1.0], range=[0, 1], tickformat=".0%", showgrid=False, side="right"),
        # no score below 0; ticks of its own (Streamlit's theme syncs an overlaying axis to the bars' 0–100 %
        # grid: 0.7429, 0.7248, … instead of round values)
        yaxis2=dict(anchor="x", overlaying="y", side="left", rangemode="nonnegative", tickmode="auto", nticks=6),
        title=dict(text=system.split("/", 1)[-1], font=dict(size=13), x=0, xanchor="left"),  # toolbar: right
        height=260, margin=dict(l=10, r=10, t=36, b=10), bargap=0.3, showlegend=False, meta="precision-profile")
    return go.Figure(data=[bars, expected, oblivious], layout=layout)


def _what_if(view: sidebar.View, task: str = "all") -> None:
    """The what-if of a shipped FP32 run; by default a run of the table's ``task`` when one is shipped."""
    drawing.subheader("What if this run were scored at lower precision?")
    drawing.markdown("Re-scores a shipped FP32 run as a BF16 / FP16 pipeline would have (with and without HPS) and "
                     "evaluates all three tie-aware, live, under the sidebar's metric and tie policy.")
    runs = data.runs(view.data)
    usable = runs[runs["qrels_path"].notna()] if len(runs) else runs
    if usable.empty:
        hints.explain_missing(
            "No raw FP32 run with matching qrels under the data folder.",
            "Put a run (qid, docid, score parquet) in the data folder's `runs/` with a sidecar `<file>.json` "
            "naming its system, benchmark and task, and a qrels parquet (qid, docid, relevance) with a sidecar "
            "naming the same benchmark and task. For example:",
            "python -m evalcore simulate --help    # and place the files under DATA_DIR/runs/")
        return
    here = usable[(usable["benchmark"] == view.cond.benchmark) & (usable["setting"] == view.cond.setting)]
    matching = here[[_same_instruction(view, row) for row in here.to_dict("records")]] if len(here) else here
    if matching.empty:
        _no_matching_run(view, here if len(here) else usable)
        return
    labels = {Path(p).name: row for p, row in zip(matching["path"], matching.to_dict("records"))}
    left, mid, right = st.columns([2, 1, 1.4])
    names = sorted(labels)
    of_task = [name for name in names if labels[name]["task"] == task]
    _follow_task(task, bool(of_task))
    # the default (the task's run, else the first) stays out of the URL: a copied link or a reload then holds a
    # run only when the visitor chose one, and a later Task choice still moves the what-if to that task's run
    run_labels = _run_labels(labels)
    run_name = state.select("wi_run", "Run", names, of_task[0] if of_task else names[0], where=left, always=False,
                            format_func=lambda n: run_labels.get(n, n),
                            help="A shipped FP32 run: its model and task (the line below names its file).")
    to = state.select("wi_to", "Precision", list(WHAT_IF_PRECISIONS), "bf16", where=mid, widget="radio")
    scoring = state.select("wi_scoring", "Scores are", list(SCORINGS), "score", where=right, widget="radio",
                           format_func=lambda s: {"score": "similarities", "sigmoid": "logits"}[s],
                           help="How the final scoring step works: " + "; ".join(SCORINGS.values()))
    run = labels[run_name]
    if task in ("all", run["task"]):
        relation = "the same condition as the table above" + (" (one of its tasks)" if task == "all" else "")
    else:
        relation = (f"the table above shows {task}; this run is on {run['task']}"
                    + (f" (a {task} run is in the list)" if of_task else f" (no {task} run is shipped)"))
    drawing.caption(f"Run: {run['system']} · {run['task']} · {sidebar.SETTING_LABELS.get(run['setting'], run['setting'])}"
                    f" · {'with' if run['instruction'] else 'without'} instruction · {run['precision']} (`{run_name}`)"
                    f" — {relation}.")
    try:
        result = data.what_if(run["path"], run["qrels_path"], to=to, scoring=scoring, metric=view.cond.metric,
                              tie_policy=view.cond.tie_policy)
    except Exception as exc:  # a broken run file: say which, keep the page
        data.LOG.warning("what-if failed for %s: %s", run["path"], exc)
        drawing.warning(f"Could not evaluate `{run_name}`: it is not a readable run / qrels pair ({type(exc).__name__}).")
        return
    if scoring == "score":
        drawing.info(f"With similarity scores, `{to}+hps` equals `fp32` **by construction**: HPS keeps the final "
                     "score in FP32, and from a score file alone that is the FP32 score itself — an upper bound on what "
                     "HPS recovers (the model's own low-precision activations are not in a score file; the profile above "
                     "shows real `bf16+hps` runs). Choose **logits** to see HPS undo the rounding of a sigmoid reranker's "
                     "output.", icon=":material/info:")
    drawing.dataframe(_printed(result), hide_index=True, width="stretch", column_config={
        "condition": "Condition", "metric": "Metric", "n_queries": tables.number("Queries", 0),
        **{c: tables.number(c.replace("_", " ").capitalize()) for c in ("oblivious", "expected", "min", "max",
                                                                          "range")},
        "bias": st.column_config.NumberColumn("Bias", help=glossary.tip("bias"), format="%+.4f"),  # signed, as above
        "tied_share": tables.share_column("Tied at cutoff", help=glossary.tip("tied-at-cutoff")),
    })
    fig = charts.interval_figure(result, "condition", "expected", [("min", "max", "range [min, max]", "#f97316")],
                                 x_title=f"{view.cond.metric} of {run['system']} on {run['task']}",
                                 point_name="expected")
    fig.add_scatter(x=result["oblivious"], y=result["condition"], mode="markers", name="oblivious",
                    marker=dict(symbol="x", size=10, color="#dc2626"))
    charts.draw(fig)


def _printed(table):
    """A tie table as it is printed: the share tied at the cutoff in percent (``tables.share_column``) and the
    bias rounded to its four shown decimals without negative zeros."""
    return table.assign(tied_share=tables.as_percent(table["tied_share"]), bias=tables.signed(table["bias"]))


def _run_labels(runs: dict[str, dict]) -> dict[str, str]:
    """Each run file's option label, short enough for the Run box (the file name, ~50 characters, cut the label
    off mid-word): "MODEL · TASK", the model without its source prefix; the file name is added only where two
    runs would share a label."""
    short = {name: f"{run['system'].split('/', 1)[-1]} · {run['task']}" for name, run in runs.items()}
    shared = {label for label in short.values() if list(short.values()).count(label) > 1}
    return {name: f"{label} ({name})" if label in shared else label for name, label in short.items()}


def _follow_task(task: str, shipped: bool) -> None:
    """A new Task choice moves the what-if to that task's run when one is ``shipped``: a run chosen earlier
    (in the URL or the list) belonged to the task shown then. The first time the what-if is drawn in a session,
    a run named by the URL is kept."""
    before = st.session_state.get(_WHAT_IF_TASK)
    st.session_state[_WHAT_IF_TASK] = task
    if before is not None and before != task and shipped:
        state.set_wish("wi_run", None)


def _same_instruction(view: sidebar.View, run: dict) -> bool:
    """Whether the run is in the instruction state the table above shows for its system: the sidebar's state,
    or with 'as published' the state the store uses for that system (with instruction when it has any)."""
    if view.cond.instruction is not None:
        return bool(run["instruction"]) == view.cond.instruction
    table = data.task_table(view.data, view.cond, systems=[run["system"]])
    states = table.loc[table["task"] == run["task"], "instruction"].dropna()
    return bool(len(states)) and bool(states.iloc[0]) == bool(run["instruction"])


def _no_matching_run(view: sidebar.View, runs) -> None:
    """No shipped run is in the shown condition: say which runs exist, and offer the condition they are in."""
    first = runs.iloc[0]
    state_text = "with" if first["instruction"] else "without"
    where = f"{sidebar.SETTING_LABELS.get(first['setting'], first['setting'])} · {state_text} instruction"
    names = ", ".join(sorted({f"{r['system'].split('/', 1)[-1]} on {r['task']}" for r in runs.to_dict("records")}))
    drawing.markdown(f"The shipped raw runs ({names}) are {where}, not the condition shown above, so their what-if "
                     "would not match the table's numbers.")
    if first["setting"] == view.cond.setting and first["benchmark"] == view.cond.benchmark:
        st.button(f"Show {state_text} instruction", on_click=state.set_wish, args=("instr", state_text),
                  icon=":material/swap_horiz:")


render()
