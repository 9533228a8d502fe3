"""Rank flips names the systems a comparison leaves out ('the views say it is missing rather than
showing nothing'), on the shipped data: all-mpnet-base-v2 was not run at fp16 this round, and the 4-bit e5 has no
fp32. Which systems are missing is read from the parquet files themselves, not from the code under test."""
from __future__ import annotations

import duckdb

from app_harness import ROOT, texts

SHIPPED = ROOT / "data"


def systems_at(precision: str) -> set[str]:
    files = str(SHIPPED / "real" / "query_metrics" / "rar-b_*.parquet")
    rows = duckdb.sql(f"SELECT DISTINCT system FROM read_parquet('{files}', union_by_name = true) "
                      "WHERE setting = 'mcr' AND metric = 'p@1' AND precision = ?", params=[precision]).fetchall()
    return {row[0] for row in rows}


def test_fp32_to_fp16_names_the_systems_without_one_of_the_two(open_url):
    fp32, fp16 = systems_at("fp32"), systems_at("fp16")
    only_one = sorted((fp32 | fp16) - (fp32 & fp16))
    assert only_one, "the shipped data has every system at both fp32 and fp16: nothing to name"
    at = open_url(SHIPPED, "rank-flips.py", {"bench": "rar-b", "setting": "mcr", "metric": "p@1",
                                              "instr": "without", "flip_a": "fp32", "flip_b": "fp16"})
    assert not at.exception
    line = next((c for c in texts(at, "caption") if c.startswith("Not in this comparison:")), None)
    assert line is not None, texts(at, "caption")
    for system in only_one:
        lacks = "fp16" if system in fp32 else "fp32"
        assert f"{system.split('/', 1)[-1]} (no {lacks} results)" in line, (system, line)
    shown = {m.label: m.value for m in at.metric}
    assert shown["Systems"] == str(len(fp32 & fp16))
