"""The sidebar's option lists (ui.sidebar.options_for), asked ~5 times on every rerun and so computed with plain
numpy instead of pandas operations (cheaper reruns), give exactly what the pandas definition gives:
on the shipped data's conditions for every combination of earlier choices, and on a frame with missing values,
booleans and numbers."""
import itertools
import math
from pathlib import Path

import pandas as pd

from evalcore.store import Store
from ui import sidebar

ROOT = Path(__file__).resolve().parents[2]


def reference(conditions: pd.DataFrame, column: str, **equal) -> list:
    """The definition, in pandas: the values of ``column`` where every given column equals its value."""
    if conditions.empty or column not in conditions:
        return []
    mask = pd.Series(True, index=conditions.index)
    for name, value in equal.items():
        if value is not None and name in conditions:
            mask &= conditions[name] == value
    found = conditions.loc[mask, column].dropna().unique().tolist()
    if column == "precision":  # widest first, as the reader compares them; unknown names after, by name
        width = {"fp32": 0, "fp16": 1, "bf16": 2, "bf16+hps": 3, "int8": 4, "q4": 5, "binary": 6}
        return sorted(found, key=lambda v: (width.get(v, 7), str(v)))
    return sorted(found, key=str)


def test_every_choice_on_the_shipped_conditions():
    conditions = Store(ROOT / "data").facets()["conditions"]
    asked = 0
    for bench in [None, *conditions["benchmark"].unique()]:
        for setting in [None, *conditions["setting"].unique()]:
            for metric in [None, "ndcg@10", "p@1", "no-such-metric"]:
                for instruction in (None, True, False):
                    for column in ("setting", "metric", "instruction", "precision", "tie_policy", "missing"):
                        equal = dict(benchmark=bench, setting=setting, metric=metric, instruction=instruction)
                        got = sidebar.options_for(conditions, column, **equal)
                        assert got == reference(conditions, column, **equal), (column, equal)
                        asked += 1
    assert asked > 500


def test_missing_values_booleans_and_numbers():
    frame = pd.DataFrame({
        "benchmark": ["a", "a", "a", "b", None, "a"],
        "instruction": pd.Series([True, False, None, True, False, True], dtype=object),
        "precision": ["fp32", None, "bf16", "fp32", "int8", "bf16"],
        "k": [10.0, math.nan, 5.0, 10.0, 1.0, 5.0],
    })
    for column, bench, instruction in itertools.product(("precision", "k", "instruction", "benchmark"),
                                                        (None, "a", "b", "zz"), (None, True, False)):
        equal = dict(benchmark=bench, instruction=instruction)
        assert sidebar.options_for(frame, column, **equal) == reference(frame, column, **equal), (column, equal)
    assert sidebar.options_for(frame, "precision", benchmark="a") == ["fp32", "bf16"]


def test_precisions_are_offered_widest_first():
    """The precision list was alphabetical: bf16, bf16+hps, binary, fp16, fp32, int8."""
    conditions = Store(ROOT / "data").facets()["conditions"]
    offered = sidebar.options_for(conditions, "precision", benchmark="rar-b", setting="full-pooled")
    assert offered == ["fp32", "fp16", "bf16", "bf16+hps", "int8", "q4", "binary"], offered
    odd = pd.DataFrame({"precision": ["zz8", "binary", "fp4", "fp32"]})
    assert sidebar.options_for(odd, "precision") == ["fp32", "binary", "fp4", "zz8"]
    assert sidebar.options_for(pd.DataFrame(), "precision") == []


def test_remembered_precision_labels_and_need_rows_equal_the_computed_ones(fresh_answers):
    """The precision labels and a view's needed rows are remembered per data snapshot; they must be
    what the functions compute from that snapshot's tables, for every benchmark, setting and precision."""
    from ui import data

    snap = data.snapshot(ROOT / "data")
    conditions = data.facets(snap)["conditions"]
    labels = set()
    for (bench, setting), rows in conditions.groupby(["benchmark", "setting"]):
        for precision in rows["precision"].unique():
            chosen = {"benchmark": bench, "setting": setting}
            got = sidebar.precision_label(snap, conditions, chosen, precision)
            assert got == sidebar._precision_label(snap, conditions, chosen, precision)
            labels.add(got)
    assert any("(" in label for label in labels)
    coverage = data.coverage(snap)
    for rows in (sidebar.rows_with_query_data, sidebar.rows_with_two_precisions, sidebar.rows_with_both_settings,
                 sidebar.rows_with_both_instructions, sidebar.rows_with_two_systems_with_query_data):
        pd.testing.assert_frame_equal(sidebar.need_rows(snap, rows), rows(coverage))


def test_a_precision_nobody_recorded_is_labelled_so(fresh_answers):
    """Published rows (MTEB, the R2MED paper) do not record the precision they were run at: their precision's label
    says so, while one with per-query files names their kinds (the conditions table says which is which)."""
    from ui import data

    snap = data.snapshot(ROOT / "data")
    conditions = data.facets(snap)["conditions"]
    seen = set()
    for (bench, setting, precision), rows in conditions.groupby(["benchmark", "setting", "precision"]):
        label = sidebar.precision_label(snap, conditions, {"benchmark": bench, "setting": setting}, precision)
        published = not rows["has_query_data"].astype(bool).any()
        assert label.startswith(precision) and ("not recorded" in label) == published, (bench, setting, label)
        seen.add(published)
    assert seen == {True, False}, "the shipped data have both"


def test_matching_rows_equal_the_pandas_definition():
    """sidebar._Rows (numpy and sets) keeps the rows a pandas mask keeps, 'any' instruction
    matching every state and a missing instruction matching no flag, and lists a field's values as the pandas
    definition does ('any' first for the instruction, then the flags present; else sorted, missing left out)."""
    conditions = Store(ROOT / "data").facets()["conditions"]
    conditions = pd.concat([conditions, conditions.head(2).assign(instruction=None)], ignore_index=True)

    def reference(frame, chosen, skip=()):
        mask = pd.Series(True, index=frame.index)
        for name, value in chosen.items():
            if name in skip or (name == "instruction" and value == "any"):
                continue
            if name == "instruction":
                mask &= frame["instruction"].eq(sidebar.INSTRUCTION_CHOICES[value]).fillna(False).astype(bool)
            else:
                mask &= frame[name] == value
        return frame[mask]

    def reference_values(frame, name):
        if name == "instruction":
            present = set(frame["instruction"].dropna().astype(bool))
            flags = [label for label, flag in (("without", False), ("with", True)) if flag in present]
            return (["any"] if len(frame) else []) + flags
        order = {p: i for i, p in enumerate(("fp32", "fp16", "fp16+hps", "bf16", "bf16+hps", "int8", "q4", "binary"))}
        key = (lambda v: (order.get(v, len(order)), str(v))) if name == "precision" else str  # widest first
        return sorted(frame[name].dropna().unique().tolist(), key=key)

    rows = sidebar._Rows.of(conditions)
    checked = 0
    for bench in conditions["benchmark"].unique():
        for setting in [*conditions["setting"].unique(), "nothing"]:
            for instruction in ("any", "with", "without"):
                for skip in ((), ("setting",)):
                    chosen = {"benchmark": bench, "setting": setting, "instruction": instruction}
                    got, expected = rows.matching(chosen, skip), reference(conditions, chosen, skip)
                    assert got.size == len(expected)
                    for name in sidebar.FIELDS:
                        assert list(got.columns[name]) == expected[name].astype(object).where(
                            expected[name].notna(), None).tolist(), (chosen, skip, name)
                        assert got.values(name) == reference_values(expected, name), (chosen, skip, name)
                    checked += len(expected)
    assert checked > 0
