"""The data contract's three tables as code: their columns, in order, with the SQL type the store reads each as.

docs/CONTRACTS.md § Data contract is the prose. Every writer of a table (``evalcore ingest``, the importers,
Spark) takes its column order from here, and the store classifies a parquet file by these columns
(:func:`kind_of`: the arrow type of a column must be of the same kind as its SQL type).
"""
from __future__ import annotations

QUERY_METRICS: dict[str, str] = {
    "system": "VARCHAR", "benchmark": "VARCHAR", "task": "VARCHAR", "setting": "VARCHAR", "instruction": "BOOLEAN",
    "precision": "VARCHAR", "qid": "VARCHAR", "metric": "VARCHAR", "oblivious": "DOUBLE", "expected": "DOUBLE",
    "min": "DOUBLE", "max": "DOUBLE", "tie_policy": "VARCHAR", "n_candidates": "BIGINT", "tied_at_cutoff": "BOOLEAN",
    "source": "VARCHAR",
}
"""``query_metrics``: one row per (system, condition, task, metric, qid): the tie-aware values of one query."""

TASK_SCORES: dict[str, str] = {
    "system": "VARCHAR", "benchmark": "VARCHAR", "task": "VARCHAR", "setting": "VARCHAR", "instruction": "BOOLEAN",
    "precision": "VARCHAR", "metric": "VARCHAR", "value": "DOUBLE", "expected": "DOUBLE", "min": "DOUBLE",
    "max": "DOUBLE", "n_queries": "BIGINT", "source": "VARCHAR",
}
"""``task_scores``: one row per (system, condition, task, metric): a task-level score (published results)."""
TASK_SCORES_OPTIONAL: dict[str, str] = {"tie_policy": "VARCHAR"}
"""Optional ``task_scores`` columns (a missing ``tie_policy`` is :data:`DEFAULT_TIE_POLICY`)."""

SYSTEMS: dict[str, str] = {"system": "VARCHAR", "display_name": "VARCHAR"}
"""``systems``: one row per system: its metadata (:data:`SYSTEMS_OPTIONAL` columns when known)."""
SYSTEMS_OPTIONAL: dict[str, str] = {
    "family": "VARCHAR", "n_parameters": "DOUBLE", "license": "VARCHAR", "open_weights": "BOOLEAN",
    "uses_instructions": "BOOLEAN", "release_date": "VARCHAR", "reference": "VARCHAR", "source": "VARCHAR",
    "revision": "VARCHAR",
}
ANY_ARROW_TYPE = frozenset({"release_date"})
"""Columns accepted with any arrow type (a date, a timestamp or a string), read as text."""

CONDITION_KEY = ("system", "benchmark", "task", "setting", "instruction", "precision", "tie_policy", "metric")
"""What one task-level value is of: a system, its condition, a task and a metric."""
DEFAULT_TIE_POLICY = "docid-desc"
# The settings whose task inputs ship in data/tasks/ (a candidate run is evaluated in one of them).
TASK_SETTINGS = ("mcr", "full-pooled")

DEFAULT_METRICS = {"mcr": "p@1"}
"""A board's metric when none is named, per setting: accuracy (p@1) for multiple choice, else nDCG@10 — the same
in the CLI, the dashboard and the API."""


def default_metric(setting: str | None) -> str:
    return DEFAULT_METRICS.get(setting or "", "ndcg@10")


def kind_of(sql_type: str) -> str:
    """'str' | 'bool' | 'num': the kind of arrow type a column of this SQL type may have in a file."""
    return {"VARCHAR": "str", "BOOLEAN": "bool"}.get(sql_type, "num")


def column_definitions(columns: dict[str, str]) -> str:
    """``"system" VARCHAR, ...``: the column list of a CREATE TABLE (names quoted: ``min``/``max`` are SQL
    function names)."""
    return ", ".join(f'"{name}" {sql_type}' for name, sql_type in columns.items())
