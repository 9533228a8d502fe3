"""Why doesn't my score match the reported one? Each reported number against the tie-aware values of a run.

For each task and metric the run's per-query values (:mod:`evalcore.engine`) give, as means over the task's
queries:

- the oblivious value under each named tie policy ``docid-desc`` (trec_eval, pytrec_eval), ``docid-asc``,
  ``input-order`` (MTEB's MRR before 2.18.19, numpy ``argmax``) and ``random:SEED``;
- the tie-aware expected value E and the tie range [min, max].

**The task-level range is the mean of the per-query ranges.** Queries are independent: every query's tied
documents can be ordered against the system (its ``min``) at the same time as every other query's, so

    min_task = (1/n) Σ_q min_q,      max_task = (1/n) Σ_q max_q,

and each is reached by one ordering of all ties; any ordering gives a value inside it.

**A reported number r** (typed with d decimals, e.g. ``0.4312``: d = 4) stands for every value that rounds to it,
so it is compared with tolerance t = ½·10^-d (half a unit in its last place; a number taken from a data folder
is read as its shortest decimal form, ``repr``). With v_p the value under policy p:

- *reproduced by p* when |r − v_p| ≤ t for one or more policies p (every such p is named);
- *inside the tie range* when min − t ≤ r ≤ max + t: some ordering of the ties gives it, so the difference is
  tie-breaking; the closest named policy is given;
- *outside the tie range by x* otherwise, x = the distance to the nearer end minus t: ties do not explain it
  (another precision, prompt, corpus or metric implementation?).

A reported number above 1 for a metric bounded by 1 (all of them) is read as a percentage (43.12 → 0.4312, t
divided by 100 as well) and the verdict says so. With ``precision=True`` the run's scores are also rounded to
bf16 and fp16, with and without High-Precision Scoring (:func:`evalcore.precision.simulate_run`), and the same
verdict is given for each: whether that rounding would reach the reported number.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Iterable, Sequence

import pandas as pd

from evalcore.errors import InputError

NAMED_POLICIES = ("docid-desc", "docid-asc", "input-order")
"""The deterministic tie policies every run is evaluated under; ``random:SEED`` is added (seed 0 unless given)."""
PRECISION_CONDITIONS = (("bf16", False), ("bf16", True), ("fp16", False), ("fp16", True))
"""The roundings ``precision=True`` tries: (dtype, HPS)."""
FLOAT_SLACK = 1e-9
"""Added to every tolerance: means summed in another order differ in the last bits."""
VERDICT_KINDS = ("reproduced", "tie-range", "outside")


@dataclass(frozen=True)
class Reported:
    """One reported number: ``value`` (a fraction), ``tolerance`` (half a unit in its last written place),
    for ``task`` and ``metric`` (None: the run's only one), from ``label`` (``typed``, or a system's name)."""

    value: float
    tolerance: float
    task: str | None = None
    metric: str | None = None
    label: str = "typed"
    percent: bool = False
    text: str = ""


def reported_number(text: str, *, task: str | None = None, metric: str | None = None,
                    label: str = "typed") -> Reported:
    """``text`` (``0.4312``, ``43.12``, ``4.312e-1``) as a :class:`Reported`; InputError for anything else."""
    cleaned = str(text).strip()
    try:
        number = Decimal(cleaned)
    except InvalidOperation:
        raise InputError(f"reported number {cleaned!r}: expected a number such as 0.4312") from None
    if not number.is_finite() or number < 0:
        raise InputError(f"reported number {cleaned!r}: expected a finite number ≥ 0")
    exponent = number.as_tuple().exponent
    tolerance = 0.5 * 10.0 ** min(0, int(exponent))
    value, percent = float(number), False
    if value > 1:
        if value > 100:
            raise InputError(f"reported number {cleaned!r}: expected a value in [0, 1] (or a percentage up to 100)")
        value, tolerance, percent = value / 100, tolerance / 100, True
    return Reported(value, tolerance, task, metric, label, percent, cleaned)


def reported_spec(spec: str) -> Reported:
    """A ``--reported`` value: ``VALUE``, ``TASK=VALUE``, ``METRIC=VALUE`` or ``TASK/METRIC=VALUE`` (a key that
    parses as a metric name is a metric)."""
    from evalcore.metrics import canonical_metric

    key, sep, value = str(spec).rpartition("=")
    if not sep:
        return reported_number(value)
    task = metric = None
    if "/" in key:
        task, _, metric = key.rpartition("/")
    else:
        try:
            metric = canonical_metric(key)
        except ValueError:
            task = key
    if metric is not None:
        try:
            metric = canonical_metric(metric)
        except ValueError as exc:
            raise InputError(f"--reported {spec!r}: {exc}") from None
    if task is not None and not task.strip():
        raise InputError(f"--reported {spec!r}: expected TASK=VALUE, METRIC=VALUE or TASK/METRIC=VALUE")
    return reported_number(value, task=None if task is None else task.strip(), metric=metric)


@dataclass(frozen=True)
class TaskValues:
    """One task and metric of a run: means over ``n_queries`` queries of the expected value, min, max and of
    the oblivious value under each policy evaluated (``policies``: policy -> value)."""

    task: str
    metric: str
    n_queries: int
    expected: float
    min: float
    max: float
    policies: dict[str, float]


def task_values(per_query: pd.DataFrame) -> list[TaskValues]:
    """Task-level values of long per-query rows (columns ``task``, ``metric``, ``tie_policy``, ``qid``,
    ``oblivious``, ``expected``, ``min``, ``max``: the ``query_metrics`` contract, or :func:`evaluate_policies`'s
    output). Every policy of a (task, metric) must cover the same queries; expected/min/max come from the first
    policy's rows (they do not depend on the policy)."""
    values = ["oblivious", "expected", "min", "max"]
    missing = per_query[values].isna().any(axis=1)
    if missing.any():  # a mean over the rest would be a value no ordering of the ties gives
        row = per_query[missing].iloc[0]
        raise InputError(f"task {row['task']} {row['metric']} query {row['qid']}: expected a value for each of "
                         f"{', '.join(values)}, found none in {int(missing.sum())} row(s)")
    out = []
    for (task, metric), group in per_query.groupby(["task", "metric"], sort=False, observed=True):
        by_policy = {str(policy): rows for policy, rows in group.groupby("tie_policy", sort=False, observed=True)}
        first = next(iter(by_policy.values()))
        counts = {policy: rows["qid"].nunique() for policy, rows in by_policy.items()}
        if len(set(counts.values())) != 1 or any(len(rows) != counts[p] for p, rows in by_policy.items()):
            raise InputError(f"task {task} {metric}: the tie policies cover different queries ({counts})")
        out.append(TaskValues(str(task), str(metric), len(first), float(first["expected"].mean()),
                              float(first["min"].mean()), float(first["max"].mean()),
                              {policy: float(rows["oblivious"].mean()) for policy, rows in by_policy.items()}))
    return out


@dataclass(frozen=True)
class Verdict:
    """A reported number against a task's values: ``kind`` (``reproduced``, ``tie-range`` or ``outside``), the
    policies that reproduce it, the closest policy, the distance outside the range (0 inside) and, with
    precision, one (condition, kind, policies) per rounding tried."""

    values: TaskValues
    reported: Reported
    kind: str
    policies: tuple[str, ...]
    closest: str
    distance: float
    precision: tuple[tuple[str, str, tuple[str, ...]], ...] = field(default=())

    @property
    def explained(self) -> bool:
        return self.kind != "outside"

    @property
    def line(self) -> str:
        """The verdict in one line."""
        r, v = self.reported, self.values
        shown = (r.text if r.text and len(r.text) <= 10 else _number(r.value)) + \
            (" (read as a percentage)" if r.percent else "")
        if self.kind == "reproduced":
            text = f"{shown}: reproduced by {', '.join(self.policies)}"
        elif self.kind == "tie-range":
            gap = r.value - v.policies[self.closest]
            text = (f"{shown}: inside the tie range [{v.min:.4f}, {v.max:.4f}]: the difference is tie-breaking "
                    f"(no named policy gives it; closest {self.closest} {v.policies[self.closest]:.4f}, "
                    f"{gap:+.4f})")
        else:
            text = (f"{shown}: outside the tie range [{v.min:.4f}, {v.max:.4f}] by {self.distance:.4f}: not "
                    "explained by ties (precision? prompt? corpus?)")
        reaching = [f"{condition} ({'reproduced by ' + ', '.join(p) if kind == 'reproduced' else 'tie range'})"
                    for condition, kind, p in self.precision if kind != "outside"]
        if self.precision and self.kind != "reproduced":
            text += ("; rounding the scores reaches it: " + "; ".join(reaching)) if reaching else \
                    "; no rounding tried (" + ", ".join(c for c, _, _ in self.precision) + ") reaches it"
        return text

    def record(self) -> dict:
        """The verdict as a flat dict (JSON output, the dashboard's table)."""
        v, r = self.values, self.reported
        return {"task": v.task, "metric": v.metric, "reported": r.value, "tolerance": r.tolerance,
                "reported_by": r.label, "verdict": self.kind, "explained": self.explained,
                "policies": list(self.policies), "closest_policy": self.closest, "distance": self.distance,
                "expected": v.expected, "min": v.min, "max": v.max, "n_queries": v.n_queries,
                **{f"value[{p}]": value for p, value in v.policies.items()},
                "precision": [{"condition": c, "verdict": k, "policies": list(p)} for c, k, p in self.precision],
                "line": self.line}


def classify(values: TaskValues, reported: Reported) -> Verdict:
    """The verdict on ``reported`` for ``values`` (rules in the module docstring)."""
    r, tolerance = reported.value, reported.tolerance + FLOAT_SLACK
    reproducing = tuple(p for p, v in values.policies.items() if abs(r - v) <= tolerance)
    closest = min(values.policies, key=lambda p: abs(r - values.policies[p]))
    if reproducing:
        return Verdict(values, reported, "reproduced", reproducing, closest, 0.0)
    if values.min - tolerance <= r <= values.max + tolerance:
        return Verdict(values, reported, "tie-range", (), closest, 0.0)
    distance = (values.min - r if r < values.min else r - values.max) - reported.tolerance
    return Verdict(values, reported, "outside", (), closest, max(distance, 0.0))


def match_reported(values: Sequence[TaskValues], reported: Iterable[Reported]) -> list[tuple[TaskValues, Reported]]:
    """Each reported number with the task values it is about; InputError for one that names no task or metric
    of the run, or that is ambiguous (the run has several tasks or metrics and the number names none)."""
    pairs = []
    tasks = sorted({v.task for v in values})
    metrics = list(dict.fromkeys(v.metric for v in values))
    for number in reported:
        found = [v for v in values if (number.task is None or v.task == number.task)
                 and (number.metric is None or v.metric == number.metric)]
        if not found:
            raise InputError(f"reported {number.text or number.value}: no task {number.task!r} / metric "
                             f"{number.metric!r} in the run (tasks: {', '.join(tasks)}; metrics: {', '.join(metrics)})")
        if len(found) > 1:
            raise InputError(f"reported {number.text or number.value}: say which task and metric it is about "
                             f"(TASK/METRIC=VALUE; tasks: {', '.join(tasks)}; metrics: {', '.join(metrics)})")
        pairs.append((found[0], number))
    return pairs


def explain_rows(per_query: pd.DataFrame, reported: Iterable[Reported]) -> list[Verdict]:
    """Verdicts for per-query rows already evaluated (the ``query_metrics`` contract: a shipped system's rows,
    an uploaded run's rows): only the tie policies the rows record are named."""
    return [classify(values, number) for values, number in match_reported(task_values(per_query), reported)]


def policies_with_seed(seed: int = 0) -> tuple[str, ...]:
    return (*NAMED_POLICIES, f"random:{int(seed)}")


def evaluate_policies(run, qrels, metrics: Sequence[str], *, task: str = "run",
                      policies: Sequence[str] = policies_with_seed(0)) -> pd.DataFrame:
    """The run's per-query values under every policy, long (``task`` and ``tie_policy`` columns added)."""
    from evalcore.engine import evaluate

    frames = [evaluate(run, qrels, list(metrics), policy).assign(task=task, tie_policy=policy) for policy in policies]
    rows = pd.concat(frames, ignore_index=True)
    if rows.empty:
        raise InputError("no query is in both the run and the qrels: check that the qids match")
    return rows


def explain_run(run, qrels, metrics: Sequence[str], reported: Iterable[Reported], *, task: str = "run",
                seed: int = 0, precision: bool = False, scoring: str = "score") -> list[Verdict]:
    """Verdicts for a run and its qrels (paths, Arrow tables or DataFrames), under every named policy and ``random:SEED``; with
    ``precision`` also for its scores rounded to bf16 / fp16 with and without HPS."""
    from evalcore import formats

    policies = policies_with_seed(seed)
    run_table = formats.read_run(run) if isinstance(run, (str, Path)) else run  # a path is read once
    qrels_table = formats.read_qrels(qrels) if isinstance(qrels, (str, Path)) else qrels
    values = task_values(evaluate_policies(run_table, qrels_table, metrics, task=task, policies=policies))
    verdicts = [classify(v, r) for v, r in match_reported(values, reported)]
    if not precision:
        return verdicts
    from evalcore.precision import simulate_run

    rounded: list[tuple[str, dict]] = []
    for dtype, hps in PRECISION_CONDITIONS:
        simulated = simulate_run(run_table, dtype, scoring, hps=hps)
        by_key = {(v.task, v.metric): v for v in task_values(
            evaluate_policies(simulated, qrels_table, metrics, task=task, policies=policies))}
        rounded.append((dtype + ("+hps" if hps else ""), by_key))
    out = []
    for verdict in verdicts:
        key = (verdict.values.task, verdict.values.metric)
        tried = tuple((condition, (c := classify(by_key[key], verdict.reported)).kind, c.policies)
                      for condition, by_key in rounded)
        out.append(Verdict(verdict.values, verdict.reported, verdict.kind, verdict.policies, verdict.closest,
                           verdict.distance, tried))
    return out


def reported_from_system(task_rows: pd.DataFrame, system: str, metric: str) -> list[Reported]:
    """Reported numbers from a system's task-level rows (``Store.task_table`` under each tie policy, with a
    ``tie_policy`` column): one per task and policy, labelled ``SYSTEM (POLICY)``; its tolerance from the stored
    value's shortest decimal form."""
    out = []
    for row in task_rows.itertuples(index=False):
        if row.value is None or (isinstance(row.value, float) and math.isnan(row.value)):
            continue
        number = reported_number(repr(float(row.value)), task=str(row.task), metric=metric,
                                 label=f"{system} ({row.tie_policy})")
        out.append(number)
    return out


VERDICT_WORDS = {"reproduced": "reproduced", "tie-range": "inside the tie range", "outside": "not explained by ties"}


def verdict_frame(verdicts: Sequence[Verdict]) -> pd.DataFrame:
    """One row per verdict, for a table: task, metric, reported, reported_by, expected, min, max, one column per
    policy evaluated, verdict (``VERDICT_WORDS``), explained and the one-line explanation."""
    policies = list(dict.fromkeys(p for v in verdicts for p in v.values.policies))
    rows = [{"task": v.values.task, "metric": v.values.metric, "reported": v.reported.value,
             "reported_by": v.reported.label, "expected": v.values.expected, "min": v.values.min,
             "max": v.values.max, **{p: v.values.policies.get(p, math.nan) for p in policies},
             "verdict": VERDICT_WORDS[v.kind], "explained": v.explained, "line": v.line} for v in verdicts]
    columns = ["task", "metric", "reported", "reported_by", "expected", "min", "max", *policies, "verdict",
               "explained", "line"]
    return pd.DataFrame(rows, columns=columns)


def _number(value: float) -> str:
    return f"{value:.6g}"
