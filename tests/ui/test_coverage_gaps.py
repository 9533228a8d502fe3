"""ui.coverage_gaps: the systems a two-precision comparison leaves out, and the precision each one lacks."""
from __future__ import annotations


import pandas as pd

from evalcore.store import Condition
from ui import coverage_gaps


def frame(rows):
    return pd.DataFrame(rows, columns=["benchmark", "setting", "metric", "instruction", "precision", "tie_policy",
                                       "system", "n_tasks", "n_query_tasks"])


COND = Condition(benchmark="rar-b", metric="p@1", setting="mcr", instruction=False, precision="fp32",
                 tie_policy="docid-desc")


def row(system, precision, n_tasks=8, instruction=False, setting="mcr", policy="docid-desc"):
    return ("rar-b", setting, "p@1", instruction, precision, policy, system, n_tasks, n_tasks)


def test_names_each_system_left_out_with_the_precision_it_lacks():
    coverage = frame([row("run/a", "fp32"), row("run/a", "fp16"), row("run/b", "fp32"), row("run/b", "fp16"),
                      row("run/mpnet", "fp32"), row("run/mpnet", "bf16"),  # never run at fp16
                      row("run/e5", "q4"), row("run/e5", "fp16"),  # no fp32
                      row("run/partial", "fp32"), row("run/partial", "fp16", n_tasks=3),  # both, fewer tasks
                      row("run/other", "q4"),  # neither precision: not part of this comparison at all
                      row("run/x", "fp16", setting="full-pooled"), row("run/y", "fp16", policy="input-order"),
                      row("run/z", "fp16", instruction=True), row("run/w", "fp16", n_tasks=0)])
    gaps = coverage_gaps.left_out(coverage, COND, ["run/a", "run/b"], ("fp32", "fp16"))
    assert gaps == [("run/e5", ["fp32"]), ("run/mpnet", ["fp16"]), ("run/partial", [])]
    said = coverage_gaps.sentence(gaps)
    parts = said.split(": ", 1)[1].rstrip(".").split("; ")  # one part per system, short name first
    assert [part.split(" ", 1)[0] for part in parts] == ["e5", "mpnet", "partial"], said
    assert "fp32" in parts[0] and "fp16" in parts[1] and "fewer" in parts[2], said
    # the sidebar's system filter limits what is reported; "any" instruction state counts both
    assert coverage_gaps.left_out(coverage, COND, ["run/a"], ("fp32", "fp16"), systems=["run/a", "run/mpnet"]) == [
        ("run/mpnet", ["fp16"])]
    from dataclasses import replace
    anyinstr = coverage_gaps.left_out(coverage, replace(COND, instruction=None), ["run/a", "run/b"], ("fp32", "fp16"))
    assert ("run/z", ["fp32"]) in anyinstr


def test_nothing_left_out_says_nothing():
    coverage = frame([row("run/a", "fp32"), row("run/a", "bf16")])
    assert coverage_gaps.left_out(coverage, COND, ["run/a"], ("fp32", "bf16")) == []
    assert coverage_gaps.sentence([]) is None
