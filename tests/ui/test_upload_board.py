"""Which board a visitor's uploaded run is ranked on (ui/upload.py: :func:`board_condition`; ui/hints.py:
:func:`run_moved_line`) and how the "Sources:" line names it (:func:`ui.data.provenance`). The page-level checks,
with a real upload, are tests/pages/test_evaluate.py."""
from __future__ import annotations

import re

import pyarrow as pa
import pytest

from evalcore.store import Condition
from ui import notices, upload


def held(setting: str = "mcr", metrics=("p@1", "ndcg@10"), policies=("docid-desc", "input-order"),
         instruction: bool = False, precision: str = "fp32") -> upload.Candidate:
    rows = pa.table({"metric": [m for m in metrics for _ in policies],
                     "tie_policy": [p for _ in metrics for p in policies]})
    return upload.Candidate(upload.Request("overlap", "rar-b", setting, instruction, precision), rows, "d", (), 0, 0.0)


def sidebar(**fields) -> Condition:
    base = dict(benchmark="rar-b", metric="ndcg@10", setting="full", instruction=None, precision="fp32",
                tie_policy="docid-desc")
    return Condition(**{**base, **fields})


@pytest.mark.parametrize("shown, metric, ties", [
    (sidebar(), "p@1", "docid-desc"),  # the review's case: the sidebar at full retrieval; MCR's own metric
    (sidebar(setting="mcr"), "ndcg@10", "docid-desc"),  # the sidebar at MCR: its metric, which MCR runs carry
    (sidebar(metric="p@1", setting="mcr", tie_policy="input-order"), "p@1", "input-order"),
    (sidebar(metric="mrr@10", setting="mcr"), "p@1", "docid-desc"),  # not computed for MCR: its own metric
    (sidebar(setting="mcr", tie_policy="no-such-policy"), "ndcg@10", "docid-desc"),
    (None, "p@1", "docid-desc"),
])
def test_the_run_is_ranked_by_the_sidebars_metric_where_it_can_be(shown, metric, ties):
    cond = upload.board_condition(held(), shown)
    assert cond == Condition("rar-b", metric, "mcr", False, "fp32", ties)


def test_a_pooled_run_keeps_its_own_setting_precision_and_instruction():
    cond = upload.board_condition(held("full-pooled", ("ndcg@10", "mrr@10", "recall@100"), ("docid-desc",),
                                       instruction=True, precision="bf16"),
                                  sidebar(metric="mrr@10", setting="full-pooled", tie_policy="input-order"))
    assert cond == Condition("rar-b", "mrr@10", "full-pooled", True, "bf16", "docid-desc")


def test_the_moved_line_names_each_field_that_differs_from_the_sidebar():
    shown = sidebar()
    cond = upload.board_condition(held(), shown)
    line = notices.run_moved_line(cond, shown)
    # each field that differs: the candidate's value, then the sidebar's in parentheses
    pairs = re.findall(r"\s*([^:;(]+?) \(the sidebar: ([^)]+)\)", line.split(": ", 1)[1])
    assert pairs == [("MCR", "full retrieval"), ("p@1", "ndcg@10"),
                     ("without instruction", "instructions as published")], line
    assert "fp32" not in line and "ties" not in line  # what agrees is not said
    assert "\n" not in line
    assert notices.run_moved_line(cond, cond) == ""


def test_the_sources_line_calls_an_upload_your_upload(tmp_path, fresh_answers):
    """Review (c): "source dashboard upload (no provenance record)" → "your upload (no provenance record)"; any
    other source without a record is still named by its value."""
    from ui import data
    from ui.upload_eval import SOURCE

    snapshot = data.Snapshot(tmp_path, "", "")
    lines = data.provenance(snapshot).describe([SOURCE, "mine"])
    assert lines == ["your upload (no provenance record)", "source mine (no provenance record)"]
