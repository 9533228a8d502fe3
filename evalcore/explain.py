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
so it is compared with tolerance t = ½·10^-d, half a unit in its last written place (``4.312e-1``: 10^-4;
``4E+1``: 10^1, as a percentage ±5 points). A number taken from a data folder has the tolerance of the precision
its source published it at (:func:`published_decimals`), never of how the float happens to print. With v_p the
value under policy p:

- *reproduced by p* when |r − v_p| ≤ t for one or more policies p (every such p is named);
- *inside the tie range* when min − t ≤ r ≤ max + t: some ordering of the ties gives it, so the difference is
  tie-breaking; the closest named policy is given;
- *outside the tie range by x* otherwise, x = the distance to the nearer end minus t: ties do not explain it
  (another precision, prompt, corpus or metric implementation?).

Either way the verdict says when |r − E| ≤ t: the number equals the expected value over tie orders (what a
tie-aware evaluator reports), not one policy's value.

A reported number above 1 for a metric bounded by 1 (all of them) is read as a percentage (43.12 → 0.4312, t
divided by 100 as well; ``43.12%`` says so explicitly) and the verdict says so. A whole number of at most 1
(``0``, ``1``, ``1e0``) is refused: ``1`` may be the fraction 1.0 or 1 %, and its written precision (±0.5)
says nothing of what was meant. Underscores, signs, non-ASCII digits and exponents of three digits are refused.

**Published precision** (:func:`published_decimals`, docs/explain.md § Published numbers): MTEB's results files
hold nDCG, MAP, recall and precision rounded to 5 decimals (its RetrievalEvaluator's ``round(…, 5)``) and MRR to
6 (or unrounded: a value with more decimals than its source rounds to was not rounded, and is exact); the R2MED
paper's JSONs hold every metric to 5 decimals (BEIR's evaluator); a value computed from per-query rows (our own
runs, ingests, CRUMB imports) is exact (t = 0). Another source's precision is the most decimals any of its
values given has.

With ``precision=True`` the run's scores are also rounded to bf16 and fp16, with and without High-Precision
Scoring (:func:`evalcore.precision.simulate_run`), and the same verdict is given for each: whether that rounding
would reach the reported number.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from decimal import Decimal
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
    """One reported number: ``value`` (a fraction), ``tolerance`` (half a unit in its last written place, or of
    the precision its source published it at; 0 for an exact value), for ``task`` and ``metric`` (None: the
    run's only one), from ``label`` (``typed``, or a system's name); ``basis`` says where the tolerance comes
    from."""

    value: float
    tolerance: float
    task: str | None = None
    metric: str | None = None
    label: str = "typed"
    percent: bool = False
    text: str = ""
    basis: str = "its last written decimal"


_NUMBER = re.compile(r"(?P<digits>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE](?P<exponent>[+-]?[0-9]{1,2}))?"
                     r"(?P<percent>[ \t]*%)?")
MAX_TEXT = 40
"""Characters of a reported number: longer text is not a number anyone reported."""


def reported_number(text: str, *, task: str | None = None, metric: str | None = None,
                    label: str = "typed") -> Reported:
    """``text`` (``0.4312``, ``43.12``, ``43.12%``, ``4.312e-1``) as a :class:`Reported`, its tolerance half a
    unit in its last written place, computed exactly; InputError for anything else, and for a whole number of
    at most 1 (``0``, ``1``: a fraction or a percentage?)."""
    cleaned = str(text).strip()
    shown = cleaned if len(cleaned) <= MAX_TEXT else cleaned[:MAX_TEXT] + "…"
    found = _NUMBER.fullmatch(cleaned) if len(cleaned) <= MAX_TEXT else None
    if found is None:
        raise InputError(f"reported number {shown!r}: expected a number ≥ 0 written in digits, such as 0.4312, "
                         "43.12 or 43.12% (no sign, underscore or other characters)")
    number = Decimal(found["digits"]).scaleb(int(found["exponent"] or 0))
    place = number.as_tuple().exponent  # the last written place: 0.4312 -> -4, 4E+1 -> 1, 43 -> 0
    tolerance = Decimal(5).scaleb(place - 1)
    percent = found["percent"] is not None
    if not percent and number > 1:
        percent = True
    elif not percent and place >= 0:  # 0, 1, 1., 1e0: a fraction (±0.5) or a percentage?
        whole = int(number)
        raise InputError(f"reported number {shown!r} is ambiguous for a metric in [0, 1]: did you mean "
                         f"{whole}.0 (a fraction) or {whole}% ({whole / 100:g})? Write it with the decimals it was "
                         f"reported with ({whole}.0, {whole}.00, …) or as {whole}%")
    if percent:
        if number > 100:
            raise InputError(f"reported number {shown!r}: expected a value in [0, 1] (or a percentage up to 100)")
        number, tolerance = number / 100, tolerance / 100
    return Reported(float(number), float(tolerance), task, metric, label, percent, cleaned)


PUBLISHED_DECIMALS: dict[str, tuple[int, dict[str, int]]] = {
    "mteb-results": (5, {"mrr": 6}),
    "r2med-paper": (5, {}),
}
"""Source label prefix -> (decimals of every metric, exceptions by metric name): the precision each publisher
writes its numbers at (docs/explain.md § Published numbers)."""
EXACT_DIGITS = 15
"""A value with this many decimals or more was not rounded by its publisher: it is compared as exact."""


def _decimals(value: float) -> int:
    """Decimals of the shortest decimal form of ``value`` (``0.04130`` -> 4, ``1e-05`` -> 5)."""
    return max(0, -Decimal(repr(float(value))).normalize().as_tuple().exponent)


def published_decimals(source: str | None, metric: str) -> int | None:
    """The decimals ``source`` publishes ``metric`` at (:data:`PUBLISHED_DECIMALS`, matched by the label's
    prefix before ``@``), None when the source is not one of them."""
    from evalcore.metrics import parse_metric

    name = str(source or "").split("@")[0].strip().lower()
    if name not in PUBLISHED_DECIMALS:
        return None
    default, by_metric = PUBLISHED_DECIMALS[name]
    try:
        family = parse_metric(metric).name
    except ValueError:
        family = str(metric)
    return by_metric.get(family, default)


def published_number(value: float, *, source: str | None, metric: str, computed: bool, task: str | None = None,
                     label: str = "published", source_decimals: int | None = None) -> Reported:
    """A number taken from a data folder as a :class:`Reported`, with the tolerance of the precision it was
    published at: exact (0) when ``computed`` from per-query rows or when it has more decimals than its source
    rounds to (it was not rounded); else half a unit in the source's last decimal (:func:`published_decimals`,
    or ``source_decimals``, the most decimals among the source's values, for another source)."""
    value = float(value)
    own = _decimals(value)
    decimals = published_decimals(source, metric)
    if decimals is None:
        decimals = max(source_decimals or 0, own)
        basis = f"{source or 'unknown source'}: {decimals} decimals (the most its values have)"
    else:
        basis = f"{str(source).split('@')[0]}: {decimals} decimals"
    if computed or own > decimals or decimals >= EXACT_DIGITS:
        basis = "computed from per-query rows: exact" if computed else f"{source}: not rounded, exact"
        return Reported(value, 0.0, task, metric, label, False, repr(value), basis)
    return Reported(value, 0.5 * 10.0 ** -decimals, task, metric, label, False, f"{value:.{decimals}f}", basis)


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
    policies that reproduce it, the closest policy, the distance outside the range (0 inside), with precision
    one (condition, kind, policies) per rounding tried, and whether it equals the expected value over tie
    orders (within its tolerance)."""

    values: TaskValues
    reported: Reported
    kind: str
    policies: tuple[str, ...]
    closest: str
    distance: float
    precision: tuple[tuple[str, str, tuple[str, ...]], ...] = field(default=())
    equals_expected: bool = False

    @property
    def explained(self) -> bool:
        return self.kind != "outside"

    @property
    def line(self) -> str:
        """The verdict in one line."""
        r, v = self.reported, self.values
        shown = (r.text if r.text and len(r.text) <= 10 else _number(r.value)) + \
            (" (read as a percentage)" if r.percent else "")
        expected = f"the expected value over tie orders ({_number(v.expected)}, what a tie-aware evaluator reports)"
        if self.kind == "reproduced":
            text = f"{shown}: reproduced by {', '.join(self.policies)}"
            if self.equals_expected:
                text += f"; it also equals {expected}"
        elif self.equals_expected:
            text = (f"{shown}: equals {expected}, not one tie policy's value; inside the tie range "
                    f"[{v.min:.4f}, {v.max:.4f}] (closest policy {self.closest} {v.policies[self.closest]:.4f})")
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
                "tolerance_basis": r.basis, "reported_by": r.label, "verdict": self.kind,
                "explained": self.explained, "equals_expected": self.equals_expected,
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
    expected = abs(r - values.expected) <= tolerance
    if reproducing:
        return Verdict(values, reported, "reproduced", reproducing, closest, 0.0, equals_expected=expected)
    if values.min - tolerance <= r <= values.max + tolerance:
        return Verdict(values, reported, "tie-range", (), closest, 0.0, equals_expected=expected)
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
                           verdict.distance, tried, verdict.equals_expected))
    return out


def reported_from_system(task_rows: pd.DataFrame, system: str, metric: str) -> list[Reported]:
    """Reported numbers from a system's task-level rows (``Store.task_table`` under each tie policy, with a
    ``tie_policy`` column; ``source`` and ``has_query_data`` when the store gives them): one per task and
    policy, labelled ``SYSTEM (POLICY)``, each with the tolerance of the precision it was published at
    (:func:`published_number`)."""
    rows = task_rows[task_rows["value"].notna()] if len(task_rows) else task_rows
    sources = rows["source"].astype(object).where(rows["source"].notna(), None) if "source" in rows else \
        pd.Series([None] * len(rows), index=rows.index, dtype=object)
    computed = rows["has_query_data"].fillna(False).astype(bool) if "has_query_data" in rows else \
        pd.Series(False, index=rows.index)
    most: dict = {}
    for source, value, exact in zip(sources, rows["value"], computed):
        if not exact:
            most[source] = max(most.get(source, 0), _decimals(value))
    out = []
    for row, source, exact in zip(rows.itertuples(index=False), sources, computed):
        value = float(row.value)
        if math.isnan(value):
            continue
        out.append(published_number(value, source=source, metric=metric, computed=bool(exact), task=str(row.task),
                                    label=f"{system} ({row.tie_policy})", source_decimals=most.get(source)))
    return out


VERDICT_WORDS = {"reproduced": "reproduced", "tie-range": "inside the tie range", "outside": "not explained by ties"}


def verdict_frame(verdicts: Sequence[Verdict]) -> pd.DataFrame:
    """One row per verdict, for a table: task, metric, reported, reported_by, expected, min, max, one column per
    policy evaluated, verdict (``VERDICT_WORDS``), explained, equals_expected and the one-line explanation."""
    policies = list(dict.fromkeys(p for v in verdicts for p in v.values.policies))
    rows = [{"task": v.values.task, "metric": v.values.metric, "reported": v.reported.value,
             "reported_by": v.reported.label, "expected": v.values.expected, "min": v.values.min,
             "max": v.values.max, **{p: v.values.policies.get(p, math.nan) for p in policies},
             "verdict": VERDICT_WORDS[v.kind], "explained": v.explained, "equals_expected": v.equals_expected,
             "line": v.line} for v in verdicts]
    columns = ["task", "metric", "reported", "reported_by", "expected", "min", "max", *policies, "verdict",
               "explained", "equals_expected", "line"]
    return pd.DataFrame(rows, columns=columns)


def _number(value: float) -> str:
    return f"{value:.6g}"
