"""Which systems a two-condition comparison leaves out, and why — so a view says what is missing (a model never
run at a precision, e.g. all-mpnet-base-v2 at fp16, or a 4-bit model that has no fp32) instead of silently
drawing fewer systems. Pure pandas over :meth:`evalcore.store.Store.coverage` (``ui.data.coverage``).

Used by the Rank flips view (``pages/rank-flips.py``: its "Not in this comparison: …" caption, checked on the
shipped data by ``tests/pages/test_rank_flips_gaps.py``)."""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from evalcore.store import Condition


def left_out(coverage: pd.DataFrame, cond: Condition, compared: Iterable[str], precisions: Sequence[str],
             systems: Iterable[str] | None = None) -> list[tuple[str, list[str]]]:
    """``[(system, precisions it has no results at)]`` for every system with results under ``cond``'s benchmark,
    setting, metric, instruction and tie policy at any of ``precisions`` that is not among ``compared`` (an
    empty list = it has both, but not on every shared task). ``systems`` (the sidebar's filter) limits the
    systems considered; None = all."""
    rows = coverage[(coverage["benchmark"] == cond.benchmark) & (coverage["setting"] == cond.setting)
                    & (coverage["metric"] == cond.metric) & (coverage["tie_policy"] == cond.tie_policy)
                    & (coverage["n_tasks"] > 0)]
    if cond.instruction is not None:
        rows = rows[rows["instruction"] == cond.instruction]
    if systems is not None:
        rows = rows[rows["system"].isin(list(systems))]
    have = rows.groupby("system")["precision"].agg(set)
    shown = set(compared)
    gaps = []
    for system, present in sorted(have.items()):
        if system in shown or not present & set(precisions):
            continue
        gaps.append((system, [p for p in precisions if p not in present]))
    return gaps


def sentence(gaps: list[tuple[str, list[str]]]) -> str | None:
    """'Not in this comparison: all-mpnet-base-v2 (no fp16 results); …' or None when nothing is left out."""
    if not gaps:
        return None
    parts = [f"{system.split('/', 1)[-1]} (" + (f"no {' or '.join(lacks)} results" if lacks
                                                 else "results on fewer of the shared tasks") + ")"
             for system, lacks in gaps]
    return "Not in this comparison: " + "; ".join(parts) + "."
