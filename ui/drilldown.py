"""The per-query drill-down: two to four systems on one task, query by query — the query's text, each system's
tie-aware value with its [min, max] and whether its score depends on ties (min < max) — and one query in full:
its text, its instruction, the candidates' texts with the relevant one marked, and every system's numbers on it.

Compare (``pages/compare.py``) draws it for systems of the data folder; an upload view can draw it for a
candidate run beside them: everything it needs comes in as arguments (the per-query rows of
``ui.data.query_diff`` and the task's texts of ``ui.data.task_texts``; for where each system put the relevant
document, the per-query MRR@10 rows of ``ui.data.query_diff`` under the same condition).
"""
from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from ui import drawing, glossary, notices, screen, state, tables
from ui.data import TaskTexts

VALUE_LABELS = {"expected": "expected (tie-aware)", "oblivious": "oblivious (as reported)"}
SNIPPET = 110  # characters of a query's text in the table
RANK_METRIC = "mrr@10"
"""The per-query metric the relevant document's rank is read from (rank = 1 / reciprocal rank)."""
RANK_CUTOFF = 10
RANK_COLUMN = "relevant_rank"


def snippets(flat: pd.Series, limit: int = SNIPPET) -> pd.Series:
    """Texts already on one line (``TaskTexts.queries.flat_text``) cut to ``limit`` characters, the last one an
    ellipsis when cut; missing texts give ''."""
    flat = flat.fillna("").astype(str)
    return flat.where(flat.str.len() <= limit, flat.str.slice(0, limit - 1) + "…")


def tie_dependent(rows: pd.DataFrame) -> pd.Series:
    """Whether each row's score depends on how its tied documents are ordered: ``max > min``. Not
    ``tied_at_cutoff``: a tie inside the top k moves nDCG without straddling the cutoff, and a tie straddling
    it among equally relevant documents moves nothing."""
    return rows["max"] - rows["min"] > 1e-12


def rank_of(reciprocal_rank: float, cutoff: int = RANK_CUTOFF) -> int | None:
    """The rank a reciprocal rank at ``cutoff`` stands for: ``1 / reciprocal_rank``, None for 0 (the document is
    below the top ``cutoff``). ValueError for anything else than 0 or 1/n with n in 1..cutoff (NaN included)."""
    value = float(reciprocal_rank)
    if value == 0.0:
        return None
    if not 0.0 < value <= 1.0:
        raise ValueError(f"{reciprocal_rank!r} is not a reciprocal rank")
    rank = round(1.0 / value)
    if rank > cutoff or abs(1.0 / value - rank) > 1e-4:
        raise ValueError(f"{reciprocal_rank!r} is not the reciprocal of a rank in 1..{cutoff}")
    return rank


def rank_bounds(low: float, high: float, cutoff: int = RANK_CUTOFF) -> tuple[int | None, int | None]:
    """(best, worst) rank of a query's (first) relevant document over the orderings of its tied documents, from
    the min (``low``) and max (``high``) of its reciprocal rank at ``cutoff``: best = 1 / max, worst = 1 / min;
    None for a bound below the top ``cutoff`` (reciprocal rank 0). ValueError when the values are not reciprocal
    ranks or ``low > high``."""
    best, worst = rank_of(high, cutoff), rank_of(low, cutoff)
    if (best is None and worst is not None) or (best is not None and worst is not None and best > worst):
        raise ValueError(f"min {low!r} > max {high!r}")
    return best, worst


def rank_words(low: float, high: float, cutoff: int = RANK_CUTOFF) -> str:
    """Where a system put a query's relevant document, in words, from the min and max of its reciprocal rank at
    ``cutoff`` over tie orderings: '3'; '2–5 (tied)' when ties let it be anywhere from 2 to 5; '1–>10 (tied)'
    when some ordering pushes it below the top 10; 'below the top 10' when every ordering does. '' when either
    value is missing (NaN); ValueError when they are not reciprocal ranks (:func:`rank_bounds`)."""
    if pd.isna(low) or pd.isna(high):
        return ""
    best, worst = rank_bounds(low, high, cutoff)
    if best is None:
        return f"below the top {cutoff}"
    if worst is None:
        return f"{best}–>{cutoff} (tied)"
    return str(best) if best == worst else f"{best}–{worst} (tied)"


def relevant_ranks(rank_rows: pd.DataFrame | None, qid: str, systems: Sequence[str],
                   cutoff: int = RANK_CUTOFF) -> pd.Series | None:
    """Each of ``systems``' rank of the relevant document of query ``qid`` in words (:func:`rank_words`), from
    reciprocal-rank rows (columns system, qid, min, max: e.g. ``ui.data.query_diff`` under MRR@10), indexed by
    system; '' for a system without a row for ``qid``, '?' for values that are not reciprocal ranks. None when
    there are no rows at all (the column is left out)."""
    if rank_rows is None or rank_rows.empty or not {"system", "qid", "min", "max"} <= set(rank_rows.columns):
        return None
    mine = rank_rows[rank_rows["qid"].astype(str) == str(qid)].drop_duplicates("system").set_index("system")
    words = {}
    for system in systems:
        if system not in mine.index:
            words[system] = ""
            continue
        try:
            words[system] = rank_words(mine.at[system, "min"], mine.at[system, "max"], cutoff)
        except ValueError:
            words[system] = "?"
    return pd.Series(words, dtype=object).reindex(list(systems))


SYSTEM_COLUMNS_WIDTH = 640
"""Pixels the systems' value columns of the per-query table share (at most ``SYSTEM_COLUMN_MAX`` each): with the
query id they stay inside the page's ~1,000 px main column on a 1,400 px screen (sidebar open), so four systems'
values show without scrolling sideways."""
SYSTEM_COLUMN_MAX = 200


def query_table(rows: pd.DataFrame, systems: Sequence[str], texts: TaskTexts | None, value: str,
                diff_only: bool, task: str) -> pd.DataFrame:
    """One row per query: its text, each system's ``value`` with its [min, max] and whether ties decide it,
    the spread across the systems; only queries where they differ when ``diff_only``. Returns the table
    shown.

    Shown left to right: the query id (pinned), every system's value (headed by its short name,
    ``ui.screen.short_names``, within ``SYSTEM_COLUMNS_WIDTH`` px together), the spread, the query's first words
    (its full text is in :func:`query_detail` below), then each system's [min, max] and *ties decide*: the values to
    compare are on screen without scrolling sideways whatever the number of systems (the wide text column
    pushed a third system's value off a 1,400 px screen)."""
    wide = rows.pivot(index="qid", columns="system", values=value).reindex(columns=list(systems))
    low = rows.pivot(index="qid", columns="system", values="min").reindex(columns=list(systems))
    high = rows.pivot(index="qid", columns="system", values="max").reindex(columns=list(systems))
    tied = rows.assign(_dependent=tie_dependent(rows)).pivot(index="qid", columns="system", values="_dependent") \
        .reindex(columns=list(systems))
    per_qid = rows.groupby("qid")[["spread", "differs"]].first()
    table = pd.DataFrame(index=wide.index)
    if texts is not None:
        table["query"] = snippets(texts.queries.set_index("qid")["flat_text"].reindex(table.index)).to_numpy()
    for system in systems:
        table[system] = wide[system]
        table[f"{system} [min, max]"] = [  # rounded outwards: it holds the value printed beside it (0.3155)
            f"[{tables.interval_words(lo, hi, between=', ')}]" if pd.notna(lo) and pd.notna(hi) else "—"
            for lo, hi in zip(low[system], high[system])]
        table[f"{system} ties decide"] = tied[system].fillna(False).astype(bool)
    table = table.join(per_qid).reset_index()
    differing = int(per_qid["differs"].sum())
    drawing.markdown(f"**{differing} of {len(per_qid)}** queries of {notices.safe_text(task)} score differently across these "
                     f"systems ({VALUE_LABELS[value]} values). *Ties decide* means the system's score on that query "
                     "depends on how its tied documents are ordered (min < max): a tie-oblivious evaluator reports one "
                     "value of [min, max], picked by its tie policy.")
    if diff_only:
        table = table[table["differs"]]
    table = table.sort_values("spread", ascending=False, kind="stable").drop(columns="differs")
    drawing.dataframe(table, hide_index=True, width="stretch", column_config=_query_table_config(systems, value),
                      column_order=_query_table_order(systems, texts is not None),
                      height=min(420, 36 * len(table) + 40))
    return table


def _query_table_order(systems: Sequence[str], with_text: bool) -> list[str]:
    """The per-query table's columns left to right: the values to compare first, the text and details after."""
    return (["qid", *systems, "spread"] + (["query"] if with_text else [])
            + [f"{system} {part}" for system in systems for part in ("[min, max]", "ties decide")])


def _query_table_config(systems: Sequence[str], value: str) -> dict:
    """Headers, tooltips and widths of the per-query table: a system's columns are headed by its short name
    (its full name in the tooltip); its value column is ``SYSTEM_COLUMNS_WIDTH / n`` px wide (at most
    ``SYSTEM_COLUMN_MAX``). The query id is pinned: it stays when the details are scrolled into view. (The values
    are not: Streamlit greys a pinned column's text like an index's.)"""
    width = min(SYSTEM_COLUMN_MAX, SYSTEM_COLUMNS_WIDTH // max(1, len(systems)))
    config = {"qid": st.column_config.TextColumn("Query id", pinned=True),
              "query": st.column_config.TextColumn("Query", width="medium", help=(
                  f"The query's first {SNIPPET} characters: pick it under “Show one query in full” below for its "
                  "whole text.")),
              "spread": tables.number("Spread", help=f"max − min of the {value} values across the systems")}
    for system, short in zip(systems, screen.short_names(list(systems))):
        config[system] = tables.number(short, width=width,
                                       help=f"{system}: its {VALUE_LABELS[value]} value on the query")
        config[f"{system} [min, max]"] = st.column_config.TextColumn(
            f"{short} [min, max]", help=glossary.tip("tie-range", before=system))
        config[f"{system} ties decide"] = st.column_config.CheckboxColumn(
            f"{short} ties decide", help=glossary.tip("tie-dependent", before=system))
    return config


def query_detail(rows: pd.DataFrame, systems: Sequence[str], texts: TaskTexts | None, setting: str,
                 choices: Sequence[str], key: str = "qid", rank_rows: pd.DataFrame | None = None) -> None:
    """One query in full: pick it (URL key ``key``; default the first of ``choices``, e.g. the largest
    spread), then its text and instruction, its candidates' texts with the relevant one marked, and each
    system's oblivious / expected / min / max, tie status and the number of documents ranked — and, given
    ``rank_rows`` (the same systems' per-query MRR@10 rows under the same condition), the rank each put the
    relevant document at (:func:`relevant_ranks`; the column is left out without such rows)."""
    if not choices:
        return
    flat = texts.queries.set_index("qid")["flat_text"] if texts is not None else pd.Series(dtype=object)
    shown = flat.reindex(list(choices)).dropna()
    labels = dict(zip(shown.index, shown.index.astype(str) + " · " + snippets(shown, 70)))
    qid = state.select(key, "Show one query in full", list(choices), choices[0], always=False,
                       format_func=lambda q: labels.get(q, q),
                       help="Queries in the order of the table above (largest spread first).")
    if texts is not None and qid in flat.index:
        record = texts.queries.set_index("qid").loc[qid]
        drawing.markdown(f"**Query** — {notices.safe_text(record['text'])}")
        if record.get("instruction"):
            drawing.caption(f"Instruction (prefixed in runs “with instruction”): {notices.safe_text(record['instruction'])}")
    numbers = rows[rows["qid"] == qid].set_index("system").reindex(list(systems)).reset_index()
    numbers["tie_dependent"] = tie_dependent(numbers)
    columns = ["system", "oblivious", "expected", "min", "max", "tie_dependent", "tied_at_cutoff",
               "n_candidates"]
    ranks = relevant_ranks(rank_rows, qid, systems)
    rank_config = {}
    if ranks is not None:
        numbers[RANK_COLUMN] = ranks.to_numpy()
        columns.insert(1, RANK_COLUMN)
        rank_config[RANK_COLUMN] = st.column_config.TextColumn(
            "Rank of the relevant document", help=_rank_help(texts, setting, qid))
    drawing.dataframe(numbers[columns],
                      hide_index=True, width="stretch", column_config={
                     **rank_config,
                     "system": "System", "oblivious": tables.number("Oblivious"),
                     "expected": tables.number("Expected"), "min": tables.number("Min"), "max": tables.number("Max"),
                     "tie_dependent": st.column_config.CheckboxColumn("Ties decide", help=glossary.tip(
                         "tie-dependent")),
                     "tied_at_cutoff": st.column_config.CheckboxColumn("Tied at cutoff", help=glossary.tip(
                         "tied-at-cutoff")),
                     "n_candidates": tables.number("Documents ranked", 0, help=(
                         "Candidates of this query (MCR), or the documents evaluated from the pool: the top 100 "
                         "and every document tied with the 100th."))})
    if texts is None:
        drawing.caption("The data folder ships no texts for this task (`tasks/` beside the results), so only ids are "
                        "shown.")
        return
    relevant = texts.qrels[(texts.qrels["setting"] == setting) & (texts.qrels["qid"] == qid)
                           & (texts.qrels["relevance"] > 0)]
    documents = texts.documents.set_index("docid")["text"]
    if setting == "mcr":
        candidates = texts.candidates[texts.candidates["qid"] == qid]
        shown = pd.DataFrame({
            "docid": candidates["docid"].to_numpy(),
            "text": [documents.get(d, "") for d in candidates["pool_docid"]],
            "relevant": candidates["docid"].isin(relevant["docid"]).to_numpy(),
        })
        drawing.markdown(f"**Candidates** ({len(shown)}, in the order the runs saw them; ✓ = the correct answer)")
        drawing.dataframe(shown, hide_index=True, width="stretch", column_config={
            "docid": "Doc id", "text": st.column_config.TextColumn("Candidate", width="large"),
            "relevant": st.column_config.CheckboxColumn("Relevant")})
    else:
        drawing.markdown(f"**Relevant document** (ranked against the task's pool of {len(documents):,} candidate "
                         "answers; a run keeps its top 100 and every document tied with the 100th: “Documents "
                         "ranked” above)")
        for docid in relevant["docid"]:
            drawing.markdown(f"`{notices.safe_text(docid)}` — {notices.safe_text(documents.get(docid, ''))}")


def _rank_help(texts: TaskTexts | None, setting: str, qid: str) -> str:
    """The rank column's tooltip: how the rank is read from MRR@10, and — when the query has several relevant
    documents (or the texts do not say) — that it is the first relevant one's."""
    words = (f"Where the system ranked the relevant document: 1 / its MRR@{RANK_CUTOFF}. With tied scores, the "
             f"range over all orderings of the tied documents: best 1 / max, worst 1 / min; “>{RANK_CUTOFF}” when "
             f"some ordering puts it below the top {RANK_CUTOFF}, “below the top {RANK_CUTOFF}” when every one "
             "does.")
    if texts is None:
        return words + " With several relevant documents: the first (highest-ranked) relevant one."
    relevant = texts.qrels[(texts.qrels["setting"] == setting) & (texts.qrels["qid"] == qid)
                           & (texts.qrels["relevance"] > 0)]
    if len(relevant) > 1:
        return words + (f" This query has {len(relevant)} relevant documents: the rank is the first "
                        "(highest-ranked) relevant one's, as MRR counts it.")
    return words
