"""Ties & precision: how much of each score is decided by tie-breaking, per precision, and what HPS fixes."""
from __future__ import annotations

from pathlib import Path

import plotly.express as px
import streamlit as st

from ui import charts, data, hints, sidebar, state, tables

WHAT_IF_PRECISIONS = ("bf16", "fp16")
SCORINGS = {"score": "scores are similarities (dot / cosine)", "sigmoid": "scores are logits (sigmoid reranker)"}
PRECISION_ORDER = ["fp32", "fp16", "fp16+hps", "bf16", "bf16+hps", "int8", "binary"]


def render() -> None:
    view = hints.page_top("Ties & precision", (
        "Low precision (BF16, FP16) rounds many documents to the same score, and a tie-oblivious evaluator then "
        "breaks those ties by document id — so part of the reported number is luck. Per system and precision: the "
        "reported (oblivious) score, the tie-aware expected score, the range [min, max] over tie orderings, the "
        "bias, and how often a tie straddles the cutoff; plus what High-Precision Scoring (HPS) recovers."))
    if view is None:
        return
    hints.condition_line(view, skip=("precision",), note=" · every precision")
    _tie_summary(view)
    st.divider()
    _what_if(view)


def _precision_key(name: str) -> tuple[int, str]:
    return (PRECISION_ORDER.index(name) if name in PRECISION_ORDER else len(PRECISION_ORDER), name)


def _tie_summary(view: sidebar.View) -> None:
    st.subheader("Tie statistics per system and precision")
    task = state.select("tp_task", "Task", ["all"] + view.tasks, "all", always=False,
                        format_func=lambda t: "all tasks (mean over tasks)" if t == "all" else t)
    summary = data.tie_summary(view.data, view.cond, systems=view.systems, task=None if task == "all" else task)
    if summary.empty:
        hints.explain_missing(
            "No per-query results for this benchmark and condition.",
            "Tie statistics need per-query oblivious / expected / min / max values, which published leaderboards "
            "do not contain. Evaluate a run with the tie-aware engine and add it, once per precision:",
            hints.ingest_hint(view, precision="bf16"))
        return
    summary = summary.sort_values(["system", "precision"], key=lambda s: s.map(_precision_key)
                                  if s.name == "precision" else s).reset_index(drop=True)
    precisions = sorted(summary["precision"].unique().tolist(), key=_precision_key)
    cols = st.columns(3)
    cols[0].metric("Systems with per-query data", f"{summary['system'].nunique()}")
    cols[1].metric("Precisions", f"{len(precisions)}", help="With per-query data: " + ", ".join(precisions))
    cols[2].metric("Queries per system × precision", f"{int(summary['n_queries'].max()):,}",
                   help="The largest count; rows differ when a system lacks some tasks.")
    number = tables.number
    st.dataframe(summary, hide_index=True, width="stretch", column_config={
        "system": "System", "precision": "Precision",
        "oblivious": number("Oblivious", help="Score as trec_eval / MTEB report it (ties by tie policy)."),
        "expected": number("Expected", help="Mean over every ordering of tied documents."),
        "min": number("Min"), "max": number("Max"),
        "range": number("Range", help="max − min: how much tie-breaking alone can move the score."),
        "bias": st.column_config.NumberColumn("Bias", help="oblivious − expected: what the tie policy adds or "
                                              "removes.", format="%+.4f"),
        "tied_share": st.column_config.ProgressColumn("Tied at cutoff", help="Share of queries with a tie "
                                                      "straddling the metric's cutoff.", format="percent",
                                                      min_value=0.0, max_value=1.0),
        "n_tasks": number("Tasks", 0), "n_queries": number("Queries", 0),
    })
    st.markdown("**Effect of precision and HPS.** Each bar is one system at one precision; compare `bf16` with "
                "`bf16+hps` to see what high-precision scoring recovers.")
    left, right = st.columns(2)
    for where, column, title in ((left, "range", "Range max − min (tie-breaking uncertainty)"),
                                 (right, "tied_share", "Share of queries tied at the cutoff")):
        fig = px.bar(summary, x="system", y=column, color="precision", barmode="group", title=title,
                     category_orders={"precision": precisions}, color_discrete_sequence=charts.PALETTE)
        fig.update_layout(height=380, margin=dict(l=10, r=10, t=50, b=10), xaxis_title=None,
                          yaxis_title=None, legend_title_text="precision")
        if column == "tied_share":
            fig.update_yaxes(tickformat=".0%")
        charts.draw(fig, where)


def _what_if(view: sidebar.View) -> None:
    st.subheader("What if this run were scored at lower precision?")
    st.markdown("Re-scores a shipped FP32 run as a BF16 / FP16 pipeline would have (with and without HPS) and "
                "evaluates all three tie-aware, live.")
    runs = data.runs(view.data)
    usable = runs[runs["qrels_path"].notna()] if len(runs) else runs
    if usable.empty:
        hints.explain_missing(
            "No raw FP32 run with matching qrels under the data folder.",
            f"Put a run (qid, docid, score parquet) in `{view.data_dir / 'runs'}` with a sidecar "
            "`<file>.json` naming its system, benchmark and task, and a qrels parquet (qid, docid, relevance) "
            "with a sidecar naming the same benchmark and task. For example:",
            f"python -m evalcore simulate --help    # and place the files under {view.data_dir / 'runs'}/")
        return
    labels = {Path(p).name: row for p, row in zip(usable["path"], usable.to_dict("records"))}
    left, mid, right = st.columns([2, 1, 1.4])
    run_name = state.select("wi_run", "Run", sorted(labels), None, where=left,
                            format_func=lambda n: f"{labels[n]['system']} · {labels[n]['task']} ({n})")
    to = state.select("wi_to", "Precision", list(WHAT_IF_PRECISIONS), "bf16", where=mid, widget="radio")
    scoring = state.select("wi_scoring", "Scores are", list(SCORINGS), "score", where=right, widget="radio",
                           format_func=lambda s: {"score": "similarities", "sigmoid": "logits"}[s],
                           help="How the final scoring step works: " + "; ".join(SCORINGS.values()))
    run = labels[run_name]
    try:
        result = data.what_if(run["path"], run["qrels_path"], to=to, scoring=scoring, metric=view.cond.metric,
                              tie_policy=view.cond.tie_policy)
    except Exception as exc:  # a broken run file: say which, keep the page
        data.LOG.warning("what-if failed for %s: %s", run["path"], exc)
        st.warning(f"Could not evaluate `{run_name}`: it is not a readable run / qrels pair ({type(exc).__name__}).")
        return
    st.dataframe(result, hide_index=True, width="stretch", column_config={
        "condition": "Condition", "metric": "Metric", "n_queries": tables.number("Queries", 0),
        **{c: tables.number(c.replace("_", " ").capitalize()) for c in ("oblivious", "expected", "min", "max",
                                                                          "range", "bias")},
        "tied_share": st.column_config.ProgressColumn("Tied at cutoff", format="percent", min_value=0.0, max_value=1.0),
    })
    fig = charts.interval_figure(result, "condition", "expected", [("min", "max", "range [min, max]", "#f97316")],
                                 x_title=f"{view.cond.metric} of {run['system']} on {run['task']}",
                                 point_name="expected")
    fig.add_scatter(x=result["oblivious"], y=result["condition"], mode="markers", name="oblivious",
                    marker=dict(symbol="x", size=10, color="#dc2626"))
    charts.draw(fig)


render()
