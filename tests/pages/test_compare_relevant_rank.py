"""Compare's "one query in full" table shows where each system put the relevant document ("Rank of the relevant
document"), read from its per-query MRR@10 rows; the expected words are computed here straight from the shipped
parquet files (1 / max is the best rank, 1 / min the worst, 0 below the top 10), not by the page's code. Where no
MRR@10 rows exist (MCR; the synthetic folder) the column is left out and the page still draws."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from app_harness import ROOT

REAL = ROOT / "data" / "real" / "query_metrics"
MINILM, WORDLLAMA, BM25 = ("tiebreak-run/all-MiniLM-L6-v2", "tiebreak-run/wordllama-l2-supercat",
                           "tiebreak-run/bm25s")
LABEL = "Rank of the relevant document"


def stored(task: str, **equal) -> pd.DataFrame:
    rows = pd.read_parquet(REAL / f"rar-b_{task}.parquet", filters=[(k, "==", v) for k, v in equal.items()])
    return rows.astype({"system": str, "qid": str})


def expected_words(low: float, high: float) -> str:
    best = None if high == 0 else int(round(1 / high))
    worst = None if low == 0 else int(round(1 / low))
    if best is None:
        return "below the top 10"
    if worst is None:
        return f"{best}–>10 (tied)"
    return f"{best}" if best == worst else f"{best}–{worst} (tied)"


def numbers_table(at):
    element = next(df for df in at.dataframe if "n_candidates" in df.value.columns)
    return element.value, json.loads(element.proto.columns)


def test_one_query_table_shows_the_rank_of_the_relevant_document(open_url):
    systems = [MINILM, WORDLLAMA]
    mrr = stored("WinoGrande", setting="full-pooled", precision="binary", instruction=False, metric="mrr@10",
                 tie_policy="docid-desc")
    mrr = mrr[mrr["system"].isin(systems)]
    wide_min = mrr.pivot(index="qid", columns="system", values="min")
    wide_max = mrr.pivot(index="qid", columns="system", values="max")
    tied_both = ((wide_max > wide_min).all(axis=1))
    qid = sorted(tied_both[tied_both].index)[0]  # a query where ties move both systems' rank
    at = open_url(ROOT / "data", "compare.py", {"setting": "full-pooled", "prec": "binary", "instr": "without",
                                                "sys": systems, "task": "WinoGrande", "diff_only": "0",
                                                "qid": qid})
    assert not at.exception
    assert at.selectbox(key="qid").value == qid
    table, config = numbers_table(at)
    assert config["relevant_rank"]["label"] == LABEL
    assert "1 / max" in config["relevant_rank"]["help"]
    shown = table.set_index("system")["relevant_rank"]
    assert shown.index.tolist() == systems
    for system in systems:
        assert shown[system] == expected_words(wide_min.at[qid, system], wide_max.at[qid, system]), system
        assert "(tied)" in shown[system]
    # more queries: one whose tie straddles the cutoff, and the table's first ones; the page's words equal the
    # words from the files
    straddles = ((wide_min == 0) & (wide_max > 0)).any(axis=1)
    assert straddles.any()
    table_qids = next(df.value for df in at.dataframe if "query" in df.value.columns)["qid"].tolist()
    for other in [sorted(straddles[straddles].index)[0]] + table_qids[:10]:
        at.selectbox(key="qid").set_value(other).run()
        shown = numbers_table(at)[0].set_index("system")["relevant_rank"]
        for system in systems:
            assert shown[system] == expected_words(wide_min.at[other, system], wide_max.at[other, system]), (
                other, system)


def test_a_document_below_the_top_10_is_said_so(open_url):
    systems = [BM25, MINILM]
    mrr = stored("WinoGrande", setting="full-pooled", precision="fp32", instruction=False, metric="mrr@10",
                 tie_policy="docid-desc")
    mine = mrr[mrr["system"] == MINILM].set_index("qid")
    qid = sorted(mine.index[mine["max"] == 0])[0]
    at = open_url(ROOT / "data", "compare.py", {"setting": "full-pooled", "instr": "without", "sys": systems,
                                                "task": "WinoGrande", "diff_only": "0", "qid": qid})
    assert not at.exception
    shown = numbers_table(at)[0].set_index("system")["relevant_rank"]
    assert shown[MINILM] == "below the top 10"
    bm25 = mrr[mrr["system"] == BM25].set_index("qid").loc[qid]
    assert shown[BM25] == expected_words(bm25["min"], bm25["max"])


@pytest.mark.parametrize("where", ["mcr", "synthetic"])
def test_without_mrr_rows_the_column_is_left_out(open_url, synthetic_dir, where):
    if where == "mcr":  # the shipped MCR runs are scored by nDCG@10 and P@1 only
        at = open_url(ROOT / "data", "compare.py", {"setting": "mcr", "instr": "without", "sys": [BM25, MINILM],
                                                    "task": "WinoGrande"})
    else:
        at = open_url(synthetic_dir, "compare.py", {"sys": ["bge-large", "e5-small"], "task": "PIQA",
                                                    "diff_only": "0"})
    assert not at.exception
    table, config = numbers_table(at)
    assert "relevant_rank" not in table.columns and "relevant_rank" not in config
    assert {"oblivious", "expected", "min", "max"} <= set(table.columns)
