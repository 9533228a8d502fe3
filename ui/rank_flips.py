"""What the Rank flips view offers: the precisions a flip can compare, the default pair and what it can rank
by (the benchmark's own aggregate or one task) — asked by the page (``pages/rank-flips.py``) and by the JSON
API (``ui/api_answers.py``), so a link and its API URL resolve to the same question."""
from __future__ import annotations

from dataclasses import replace

from evalcore.aggregate import official_aggregate
from ui import data, sidebar

PRESETS = (("fp32", "bf16"), ("bf16", "bf16+hps"), ("fp32", "bf16+hps"), ("fp32", "int8"), ("fp32", "binary"))
"""The quick picks, in order; the first one both of whose precisions are offered is the default pair."""
NEED = sidebar.Need("runs at two precisions", sidebar.rows_with_two_precisions, ignores=("precision",),
                    ignored_text={"precision": "the two compared below"})


def paired_precisions(view: sidebar.View) -> tuple[list[str], list[str]]:
    """(offered, left out): the precisions of the shown condition, offered when at least two systems have
    complete results at it and at another precision (what a rank flip compares), in the sidebar's order."""
    exist = sidebar.options_for(view.conditions(), "precision", benchmark=view.cond.benchmark,
                                setting=view.cond.setting, metric=view.cond.metric)
    good = sidebar.need_rows(view.data, sidebar.rows_with_two_precisions)
    good = good[(good["benchmark"] == view.cond.benchmark) & (good["setting"] == view.cond.setting)
                & (good["metric"] == view.cond.metric) & (good["tie_policy"] == view.cond.tie_policy)]
    if view.cond.instruction is not None:
        good = good[good["instruction"].eq(view.cond.instruction).fillna(False).astype(bool)]
    paired = set(good["precision"])
    if len(paired & set(exist)) < 2:
        return exist, []
    return [p for p in exist if p in paired], [p for p in exist if p not in paired]


def presets(precisions: list[str]) -> list[tuple[str, str]]:
    """The quick picks whose two precisions are both offered."""
    return [p for p in PRESETS if p[0] in precisions and p[1] in precisions]


def default_pair(precisions: list[str]) -> tuple[str, str]:
    """Condition A's and B's precision on a first visit: the first quick pick offered, else the first two."""
    offered = presets(precisions)
    return offered[0] if offered else (precisions[0], precisions[1])


def aggregate(view: sidebar.View) -> str:
    """What ranks the systems over their shared tasks: the benchmark's own aggregate, as on the Leaderboard
    (``G`` for RAR-b, ``mean`` for R2MED and CRUMB; :func:`evalcore.aggregate.official_aggregate`)."""
    return official_aggregate(view.cond.benchmark)


def scopes(view: sidebar.View, prec_a: str, prec_b: str) -> list[str]:
    """The "Ranked by" choices (the URL key ``flip_task``): the aggregate over the shared tasks (the default, by
    its name: ``G`` or ``mean``), then each task :func:`rankable_tasks` offers."""
    return [aggregate(view)] + [t for t in rankable_tasks(view, prec_a, prec_b) if t != aggregate(view)]


def rankable_tasks(view: sidebar.View, prec_a: str, prec_b: str) -> list[str]:
    """The tasks on which at least two systems (within the filters) have results under both precisions."""
    both = [data.task_table(view.data, replace(view.cond, precision=p), systems=view.systems)[["system", "task"]]
            for p in (prec_a, prec_b)]
    counts = both[0].merge(both[1]).groupby("task")["system"].nunique()
    return sorted(counts[counts >= 2].index.tolist())
