"""evalcore.explain: tolerance of a reported number, the verdict rules, the task-level tie range against brute
force, and every shipped system × condition × task × metric × recorded tie policy classified correctly.

References are independent of the module: the brute force enumerates every ordering of every tie group of two
queries and computes the metric by hand; the shipped task values are means computed here with pandas, and the
expected verdict follows the rule written out in this file.
"""
from __future__ import annotations

import itertools
import math
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from evalcore import explain
from evalcore.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
SHIPPED_QUERY_METRICS = sorted((ROOT / "data" / "real" / "query_metrics").glob("*.parquet"))


@pytest.mark.parametrize("text, value, tolerance, percent", [
    ("0.4312", 0.4312, 0.00005, False),
    ("0.43", 0.43, 0.005, False),
    ("4.312e-1", 0.4312, 0.00005, False),
    ("43.12", 0.4312, 0.00005, True),  # 2 decimals of a percentage
    ("43.12%", 0.4312, 0.00005, True),
    ("4E+1", 0.40, 0.05, True),        # one significant digit at the tens: 40 ± 5 points
    ("4.0E+1", 0.40, 0.005, True),     # 40 ± 0.5 points
    ("1.0", 1.0, 0.05, False),
    ("0.0", 0.0, 0.05, False),
    ("0.00000", 0.0, 0.000005, False),
    ("1%", 0.01, 0.005, True),
    ("100", 1.0, 0.005, True),
    (".5", 0.5, 0.05, False),
])
def test_the_tolerance_is_half_a_unit_in_the_last_written_place(text, value, tolerance, percent):
    number = explain.reported_number(text)
    assert math.isclose(number.value, value, abs_tol=1e-15)
    assert math.isclose(number.tolerance, tolerance, rel_tol=1e-12)
    assert number.percent is percent


@pytest.mark.parametrize("text", ["abc", "-0.1", "+0.5", "nan", "inf", "150", "", "1_0", "0_5", "0.4_3", "0x1",
                                  "١.٥", "4E+100", "1e", "5 5", "0.5 %%", "1" * 50])
def test_a_bad_reported_number_is_an_input_error(text):
    with pytest.raises(InputError, match="expected"):
        explain.reported_number(text)


@pytest.mark.parametrize("text", ["0", "1", "00", "1.", "1e0", "0E+1", " 1 "])
def test_a_whole_number_up_to_one_is_asked_back_never_read_as_plus_minus_half(text):
    """``1`` may be the fraction 1.0 or 1 %: refused with the question, not compared with ±0.5."""
    with pytest.raises(InputError, match=r"ambiguous.*did you mean"):
        explain.reported_number(text)


# -- a published number's tolerance is its publisher's precision, never how the float prints ---------------------
@pytest.mark.parametrize("value, source, metric, computed, tolerance", [
    (0.0, "mteb-results@f4cc6c8", "ndcg@10", False, 5e-6),      # "0.0" printed, 5 decimals published
    (0.5, "mteb-results@f4cc6c8", "recall@100", False, 5e-6),
    (1.0, "mteb-results@f4cc6c8", "p@1", False, 5e-6),
    (0.0, "mteb-results@f4cc6c8", "mrr@10", False, 5e-7),       # MTEB writes MRR with 6 decimals
    (0.216743, "mteb-results@abc", "mrr@10", False, 5e-7),
    (0.21674321098765432, "mteb-results@f4cc6c8", "mrr@10", False, 0.0),  # not rounded (mteb 1.12): exact
    (0.0, "r2med-paper@62b7074", "ndcg@10", False, 5e-6),
    (0.25, "tiebreak-run", "ndcg@10", True, 0.0),              # a mean of per-query rows: exact
])
def test_published_numbers_have_their_publishers_precision(value, source, metric, computed, tolerance):
    number = explain.published_number(value, source=source, metric=metric, computed=computed)
    assert number.value == value
    assert math.isclose(number.tolerance, tolerance, rel_tol=1e-12, abs_tol=0.0)


def test_another_sources_precision_is_the_most_decimals_its_values_have():
    rows = pd.DataFrame({"task": ["a", "b", "c"], "value": [0.0, 0.125, 0.5], "source": "lab-x",
                         "has_query_data": False, "tie_policy": "docid-desc"})
    numbers = explain.reported_from_system(rows, "S", "ndcg@10")
    assert [n.tolerance for n in numbers] == [0.0005] * 3  # 0.125: 3 decimals, for every value of lab-x
    assert [n.text for n in numbers] == ["0.000", "0.125", "0.500"]


MTEB_SCORES = ROOT / "data" / "published" / "mteb_task_scores.parquet"
R2MED_SCORES = ROOT / "data" / "published" / "r2med_paper_task_scores.parquet"


@pytest.mark.parametrize("path", [MTEB_SCORES, R2MED_SCORES], ids=lambda p: p.stem)
def test_no_shipped_published_value_gets_a_tolerance_from_how_it_prints(path):
    """Every shipped published value: at most ±5e-6 (5 decimals; MRR 6 or exact), round ones included."""
    rows = pd.read_parquet(path).dropna(subset=["value"]).assign(tie_policy="docid-desc", has_query_data=False)
    numbers = explain.reported_from_system(rows, "S", "ndcg@10") if path == R2MED_SCORES else [
        number for metric, group in rows.groupby("metric")
        for number in explain.reported_from_system(group, "S", str(metric))]
    assert len(numbers) == len(rows)
    assert max(n.tolerance for n in numbers) <= 5e-6 + 1e-18
    round_values = [n for n in numbers if n.value in (0.0, 0.5, 1.0)]
    assert round_values and all(n.tolerance <= 5e-6 + 1e-18 for n in round_values)


@pytest.mark.parametrize("spec, task, metric, value", [
    ("0.5", None, None, 0.5),
    ("ARCChallenge=0.5", "ARCChallenge", None, 0.5),
    ("nDCG@10=0.5", None, "ndcg@10", 0.5),
    ("WinoGrande/mrr@10=0.25", "WinoGrande", "mrr@10", 0.25),
])
def test_reported_specs(spec, task, metric, value):
    number = explain.reported_spec(spec)
    assert (number.task, number.metric, number.value) == (task, metric, value)


VALUES = explain.TaskValues("t", "ndcg@10", 10, 0.40, 0.30, 0.50, {"docid-desc": 0.35, "input-order": 0.45})


@pytest.mark.parametrize("text, kind, equals", [
    ("0.400", "tie-range", True),     # |0.400 - E| <= 0.0005: the expected value over tie orders
    ("0.4000", "tie-range", True),
    ("0.4010", "tie-range", False),   # 0.001 from E, more than t
    ("0.35", "reproduced", False),
    ("0.4", "reproduced", True),      # t = 0.05: both policies and E
    ("0.6", "outside", False),
])
def test_the_verdict_says_when_a_number_equals_the_expected_value(text, kind, equals):
    verdict = explain.classify(VALUES, explain.reported_number(text))
    assert verdict.kind == kind and verdict.equals_expected is equals
    assert verdict.record()["equals_expected"] is equals
    assert ("expected value over tie orders" in verdict.line) is equals


@pytest.mark.parametrize("text, kind, policies, distance", [
    ("0.35", "reproduced", ("docid-desc",), 0.0),
    ("0.3504", "tie-range", (), 0.0),                  # 0.0004 from docid-desc, more than t = 0.00005
    ("0.4", "reproduced", ("docid-desc", "input-order"), 0.0),  # t = 0.05: both within
    ("0.42", "tie-range", (), 0.0),
    ("0.300", "tie-range", (), 0.0),                   # the ends of the range, t = 0.0005
    ("0.500", "tie-range", (), 0.0),
    ("0.6", "outside", (), 0.05),                      # 0.6 - 0.5 - t (0.05)
    ("0.2512", "outside", (), 0.3 - 0.2512 - 0.00005),
    ("25.12", "outside", (), 0.3 - 0.2512 - 0.00005),  # a percentage: t = 0.005 / 100
])
def test_verdict_rules_on_a_hand_written_task(text, kind, policies, distance):
    verdict = explain.classify(VALUES, explain.reported_number(text))
    assert (verdict.kind, verdict.policies) == (kind, policies)
    assert math.isclose(verdict.distance, distance, abs_tol=1e-12)
    assert verdict.explained is (kind != "outside")


# -- the task-level range is the mean of the per-query ranges (brute force over every ordering) -----------------
RUN = {"q1": {"a": 0.9, "b": 0.5, "c": 0.5, "d": 0.5, "e": 0.1},
       "q2": {"f": 0.7, "g": 0.7, "h": 0.2, "i": 0.2}}
QRELS = {"q1": {"c": 1, "e": 2}, "q2": {"g": 1, "i": 1}}


def ndcg_at(ranking: list[str], qrels: dict[str, int], k: int) -> float:
    dcg = sum(qrels.get(doc, 0) / math.log2(rank + 2) for rank, doc in enumerate(ranking[:k]))
    ideal = sorted(qrels.values(), reverse=True)
    idcg = sum(grade / math.log2(rank + 2) for rank, grade in enumerate(ideal[:k]))
    return dcg / idcg


def orderings(scores: dict[str, float]):
    """Every ranking of the documents that respects the scores (ties in any order)."""
    groups = [sorted(d for d in scores if scores[d] == s) for s in sorted(set(scores.values()), reverse=True)]
    for parts in itertools.product(*(itertools.permutations(g) for g in groups)):
        yield [doc for part in parts for doc in part]


def test_task_range_expected_and_policies_against_brute_force():
    k = 3
    per_query = {q: [ndcg_at(r, QRELS[q], k) for r in orderings(RUN[q])] for q in RUN}
    task_means = [sum(pair) / 2 for pair in itertools.product(*per_query.values())]  # queries independent
    docid_desc = {q: sorted(RUN[q], key=lambda d: (-RUN[q][d], [-ord(c) for c in d])) for q in RUN}
    docid_asc = {q: sorted(RUN[q], key=lambda d: (-RUN[q][d], d)) for q in RUN}
    input_order = {q: sorted(RUN[q], key=lambda d: -RUN[q][d]) for q in RUN}  # stable: dict order
    run = pd.DataFrame([(q, d, s) for q in RUN for d, s in RUN[q].items()], columns=["qid", "docid", "score"])
    qrels = pd.DataFrame([(q, d, g) for q in QRELS for d, g in QRELS[q].items()], columns=["qid", "docid", "relevance"])
    rows = explain.evaluate_policies(run, qrels, [f"ndcg@{k}"], policies=("docid-desc", "docid-asc", "input-order"))
    (values,) = explain.task_values(rows)
    assert math.isclose(values.min, min(task_means), abs_tol=1e-12)
    assert math.isclose(values.max, max(task_means), abs_tol=1e-12)
    assert math.isclose(values.expected, sum(task_means) / len(task_means), abs_tol=1e-12)
    for policy, rankings in (("docid-desc", docid_desc), ("docid-asc", docid_asc), ("input-order", input_order)):
        by_hand = sum(ndcg_at(rankings[q], QRELS[q], k) for q in RUN) / 2
        assert math.isclose(values.policies[policy], by_hand, abs_tol=1e-12), policy
    assert min(task_means) < max(task_means)  # the example has ties that matter


# -- every shipped system, condition, task, metric and recorded tie policy ---------------------------------------
KEY = ["system", "benchmark", "setting", "instruction", "precision", "task", "metric"]


def expected_verdict(value: float, tolerance: float, policy_values: dict[str, float], lo: float, hi: float):
    """The rule, written out: (kind, policies within tolerance)."""
    slack = tolerance + explain.FLOAT_SLACK
    within = tuple(p for p, v in policy_values.items() if abs(value - v) <= slack)
    if within:
        return "reproduced", within
    return ("tie-range" if lo - slack <= value <= hi + slack else "outside"), ()


@pytest.mark.parametrize("path", SHIPPED_QUERY_METRICS, ids=lambda p: p.stem)
def test_every_shipped_policy_value_is_reproduced_and_a_planted_value_is_not(path: Path):
    frame = pq.read_table(path, columns=[*KEY, "tie_policy", "qid", "oblivious", "expected", "min", "max"]).to_pandas()
    for column in frame.columns:
        if isinstance(frame[column].dtype, pd.CategoricalDtype):
            frame[column] = frame[column].astype(str)
    frame["instruction"] = frame["instruction"].astype(str)
    means = frame.groupby([*KEY, "tie_policy"], sort=False).agg(
        oblivious=("oblivious", "mean"), expected=("expected", "mean"), lo=("min", "mean"), hi=("max", "mean"),
        n=("qid", "size")).reset_index()
    assert len(means) > 0
    def label(table: pd.DataFrame) -> pd.Series:
        return (table["system"] + "|" + table["setting"] + "|" + table["instruction"] + "|" + table["precision"]
                + "|" + table["task"])

    rows = frame.assign(task=label(frame))
    means["label"] = label(means)
    policy_values = means.groupby(["label", "metric"])[["tie_policy", "oblivious"]].apply(
        lambda g: dict(zip(g["tie_policy"], g["oblivious"]))).to_dict()
    reported, wanted = [], []
    for row in means.itertuples(index=False):
        number = explain.reported_number(repr(float(row.oblivious)), task=row.label, metric=row.metric)
        reported.append(number)
        wanted.append(expected_verdict(number.value, number.tolerance, policy_values[(row.label, row.metric)],
                                       row.lo, row.hi))
        assert wanted[-1][0] == "reproduced" and row.tie_policy in wanted[-1][1]
        if row.hi > 0.99 and row.lo < 0.01:
            continue  # ties span [0, 1] (the constant scorer): no value is outside
        planted = row.hi + 0.01 if row.hi <= 0.99 else row.lo - 0.01  # outside the tie range by 0.01
        reported.append(explain.reported_number(f"{planted:.6f}", task=row.label, metric=row.metric))
        wanted.append(("outside", ()))
    verdicts = explain.explain_rows(rows, reported)
    assert len(verdicts) == len(wanted) and wanted.count(("outside", ())) > len(means) / 2
    for verdict, (kind, policies) in zip(verdicts, wanted):
        assert (verdict.kind, verdict.policies) == (kind, policies), verdict.line
        if kind == "outside":
            assert math.isclose(verdict.distance, 0.01 - 0.0000005, abs_tol=2e-6), verdict.line
        key = (verdict.values.task, verdict.values.metric)
        lo, hi = means.loc[(means["label"] == key[0]) & (means["metric"] == key[1]), ["lo", "hi"]].iloc[0]
        assert math.isclose(verdict.values.min, lo, abs_tol=1e-12) and math.isclose(verdict.values.max, hi,
                                                                                     abs_tol=1e-12)


def test_a_missing_per_query_value_is_an_input_error_not_a_mean_over_the_rest():
    rows = pd.DataFrame({"task": "T", "metric": "ndcg@10", "tie_policy": "docid-desc", "qid": ["q1", "q2"],
                         "oblivious": [0.5, 1.0], "expected": [0.5, float("nan")], "min": [0.5, 1.0],
                         "max": [0.5, 1.0]})
    with pytest.raises(InputError, match="query q2"):
        explain.task_values(rows)
    assert explain.task_values(rows.fillna(1.0))[0].expected == 0.75
