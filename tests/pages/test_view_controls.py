"""The views' controls offer what exists and keep what the visitor chose, as AppTest sessions: a
choice survives a condition where it is not an option, a single possible value is text, MCR opens on accuracy,
and Compare keeps its systems, a count is said in words (never '(1 do…)') and no advice picks what is picked.
"""
from __future__ import annotations

import re

import pandas as pd
import pytest

from app_harness import ROOT, fixed_texts, page_path_from_main, shown, texts

SHIPPED = ROOT / "data"
MINILM, BM25 = "tiebreak-run/all-MiniLM-L6-v2", "tiebreak-run/bm25s"


def test_compare_keeps_its_systems_through_a_setting_without_them(open_url):
    """Compare lost its selected systems when the setting changed."""
    at = open_url(SHIPPED, "compare.py", {"setting": "full-pooled", "sys": [BM25, MINILM]})
    assert at.multiselect(key="sys").value == [BM25, MINILM]
    at.sidebar.radio(key="setting").set_value("full").run()  # published scores: our runs are not there
    assert not at.exception
    assert BM25 not in at.multiselect(key="sys").options
    at.sidebar.radio(key="setting").set_value("mcr").run()
    assert at.multiselect(key="sys").value == [BM25, MINILM]
    assert at.query_params["sys"] == [BM25, MINILM]


def test_a_picked_system_survives_a_setting_without_it(open_url):
    at = open_url(SHIPPED, "compare.py", {"setting": "full-pooled"})
    first = at.multiselect(key="sys").value
    at.multiselect(key="sys").set_value([BM25, first[0]]).run()
    at.sidebar.radio(key="setting").set_value("full").run()
    at.sidebar.radio(key="setting").set_value("full-pooled").run()
    assert at.multiselect(key="sys").value == [BM25, first[0]]


def test_mcr_opens_on_accuracy(open_url):
    """RAR-b's MCR metric is accuracy (p@1): the Leaderboard opens MCR on it although ndcg@10 exists too."""
    at = open_url(SHIPPED, "leaderboard.py", {"setting": "mcr"})
    assert not at.exception
    assert {"p@1", "ndcg@10"} <= set(at.sidebar.selectbox(key="metric").options)
    assert at.sidebar.selectbox(key="metric").value == "p@1"
    assert at.query_params["metric"] == "p@1"
    at.sidebar.radio(key="setting").set_value("full-pooled").run()
    assert at.sidebar.selectbox(key="metric").value == "ndcg@10"


def test_a_metric_the_new_setting_lacks_is_replaced_out_loud(open_url):
    """p@1 chosen under MCR, then Full (pooled candidates), which has no p@1: the metric becomes ndcg@10 and the
    sidebar says so (it changed silently); back under MCR the choice returns and the line goes."""
    def said(at):
        return [c.value for c in at.sidebar.caption if "is not offered here" in c.value]

    at = open_url(SHIPPED, "leaderboard.py", {"bench": "rar-b", "setting": "mcr", "metric": "p@1"})
    assert not at.exception and not said(at)
    at.sidebar.radio(key="setting").set_value("full-pooled").run()
    assert not at.exception
    assert at.sidebar.selectbox(key="metric").value == "ndcg@10"
    assert len(said(at)) == 1 and "p@1 is not offered here" in said(at)[0] and "showing ndcg@10" in said(at)[0]
    at.sidebar.radio(key="setting").set_value("mcr").run()
    assert at.sidebar.selectbox(key="metric").value == "p@1" and not said(at)


def test_a_chosen_metric_is_kept_over_the_default(open_url):
    at = open_url(SHIPPED, "leaderboard.py", {"setting": "mcr", "metric": "ndcg@10"})
    assert at.sidebar.selectbox(key="metric").value == "ndcg@10"


def test_a_control_with_one_possible_value_is_text_and_says_why(open_url):
    """Ties & precision needs per-query rows: only RAR-b has them, so the benchmark is text, not a dropdown
    offering nothing, and its help names R2MED and why."""
    at = open_url(SHIPPED, "ties-and-precision.py")
    assert fixed_texts(at)["Benchmark"] == "RAR-b"
    with pytest.raises(KeyError):
        at.sidebar.selectbox(key="bench")
    help_text = next(m.proto.help for m in at.sidebar.markdown if str(m.value).startswith("**Benchmark:**"))
    assert "R2MED" in help_text and "needs per-query results" in help_text
    assert at.query_params["bench"] == "rar-b", "a view's URL still names every field it shows"


def test_an_option_without_results_is_not_offered(open_url):
    """R2MED has published full-retrieval scores only: its Setting offers no MCR (the help says so)."""
    at = open_url(SHIPPED, "leaderboard.py", {"bench": "r2med"})
    assert fixed_texts(at)["Setting"] == "Full retrieval"
    help_text = next(m.proto.help for m in at.sidebar.markdown if str(m.value).startswith("**Setting:**"))
    assert "R2MED" in help_text and "(MCR)" in help_text, help_text


def test_a_move_for_one_view_does_not_change_the_others(open_url):
    """Rank flips moves R2MED (one precision) to RAR-b for itself; the Leaderboard shows R2MED again."""
    at = open_url(SHIPPED, "leaderboard.py", {"bench": "r2med"})
    at.switch_page(page_path_from_main("rank-flips.py")).run()
    assert at.query_params["bench"] == "rar-b"
    assert any(t.startswith("Rank flips") and "RAR-b" in t for t in texts(at, "info"))
    at.switch_page(page_path_from_main("leaderboard.py")).run()
    assert at.query_params["bench"] == "r2med"
    assert shown(at, "bench") == "r2med"


def test_fewer_than_two_systems_is_said_in_words(open_url, synthetic_dir):
    """'Fewer than two systems… (1 do…)'."""
    at = open_url(synthetic_dir, "rank-flips.py", {"q": "e5-small"})
    assert not at.exception
    infos = " ".join(texts(at, "info"))
    assert re.search(r"\bOnly one system\b.*\bfp32\b.*\bbf16\b", infos), infos
    assert "(1 do" not in infos


@pytest.fixture(scope="module")
def mcr_gaps(tmp_path_factory, synthetic_dir):
    """The synthetic folder with holes in MCR: no system has MCR results for SIQA, e5-small has none at all."""
    import shutil

    folder = tmp_path_factory.mktemp("mcr-gaps")
    for path in synthetic_dir.glob("*.parquet"):
        frame = pd.read_parquet(path)
        if "setting" in frame and "task" in frame:
            mcr = frame["setting"] == "mcr"
            frame = frame[~(mcr & ((frame["task"] == "SIQA") | (frame["system"] == "e5-small")))]
        frame.to_parquet(folder / path.name, index=False)
    shutil.copytree(synthetic_dir / "runs", folder / "runs")
    return folder


def test_mcr_vs_full_offers_the_tasks_with_both_settings(open_url, mcr_gaps):
    at = open_url(mcr_gaps, "mcr-vs-full.py")
    assert not at.exception
    assert at.selectbox(key="mcr_task").options == ["all tasks", "ARCChallenge", "AlphaNLI", "PIQA"]


def test_mcr_vs_full_never_advises_the_choice_already_made(open_url, mcr_gaps):
    """MCR vs full advised "as published" while "as published" was selected."""
    at = open_url(mcr_gaps, "mcr-vs-full.py", {"q": "e5-small"})
    assert not at.exception
    said = " ".join(texts(at, "info"))
    assert re.search(r"\bNo system\b.*\bfull\b.*\bMCR\b", said), said
    assert "as published" not in said
    at = open_url(mcr_gaps, "mcr-vs-full.py", {"q": "e5-small", "instr": "without"})
    assert "'as published' instructions" in " ".join(texts(at, "info"))


def test_jargon_labels_of_the_views_link_to_the_glossary(open_url):
    """A glossary reachable from every jargon label — the sidebar's setting, instruction, precision
    and tie policy, the Ties table's headers, Compare's value choice."""
    import json

    at = open_url(SHIPPED, "ties-and-precision.py")
    assert "glossary?term=full#full" in at.sidebar.radio(key="setting").help
    assert "glossary?term=instruction#instruction" in at.sidebar.radio(key="instr").help
    assert "glossary?term=precision#precision" in next(m.proto.help for m in at.sidebar.markdown
                                        if str(m.value).startswith("**Precision:**"))
    assert "glossary?term=tie-policy#tie-policy" in next(m.proto.help for m in at.sidebar.markdown
                                         if str(m.value).startswith("**Tie policy"))
    table = next(df for df in at.dataframe if "precision_kind" in df.value.columns)
    config = json.loads(table.proto.columns)
    for column, key in (("oblivious", "oblivious"), ("expected", "expected"), ("min", "tie-range"),
                        ("range", "range"), ("bias", "bias"), ("tied_share", "tied-at-cutoff"),
                        ("precision_kind", "precision-kind")):
        assert f"glossary?term={key}#{key}" in config[column]["help"], column
    at = open_url(SHIPPED, "compare.py")
    assert "glossary?term=expected#expected" in at.radio(key="values").help


@pytest.mark.parametrize("page", ["ties-and-precision.py", "rank-flips.py", "instructions.py", "mcr-vs-full.py",
                                  "compare.py"])
def test_each_view_names_the_provenance_of_its_numbers(open_url, page):
    """Source and commit of every number, and the data snapshot date, visible in the view (read here
    from data/provenance.json itself)."""
    import json

    record = json.loads((SHIPPED / "provenance.json").read_text())
    ours = record["sources"]["tiebreak-real-runs"]
    at = open_url(SHIPPED, page)
    line = next((t for t in texts(at, "caption") if t.startswith("Sources:")), "")
    assert ours["commit"][:7] in line and ours["written"] in line, line
    assert f"Data snapshot {record['snapshot']}" in line


def test_rank_flips_offers_the_tasks_two_systems_share_at_both_precisions(open_url, synthetic_dir):
    """A task offered under 'Ranked by' ranks at least two systems (never an empty state). In the synthetic
    folder tiny-partial lacks SIQA: with the filter keeping it and one other system, SIQA is not offered."""
    at = open_url(synthetic_dir, "rank-flips.py", {"family": ["tiny", "bge"]})
    assert not at.exception
    options = at.selectbox(key="flip_task").options
    assert options == ["G over the shared tasks", "ARCChallenge alone", "AlphaNLI alone", "PIQA alone"], options
    for task in ("ARCChallenge", "AlphaNLI", "PIQA"):
        at.selectbox(key="flip_task").set_value(task).run()
        assert at.metric[0].value == "2", task


def test_compare_per_task_scores_are_tie_aware(open_url):
    """Compare's per-task bars and table show the expected score with its tie range where per-query results
    exist (the mean over the task's queries in the parquet file), not the oblivious one."""
    import json

    at = open_url(SHIPPED, "compare.py", {"setting": "mcr", "instr": "without", "sys": [BM25, MINILM]})
    wide = next(df.value for df in at.dataframe if "task" in df.value.columns and BM25 in df.value.columns)
    rows = pd.read_parquet(SHIPPED / "real" / "query_metrics" / "rar-b_WinoGrande.parquet",
                           filters=[("system", "==", BM25), ("setting", "==", "mcr"), ("metric", "==", "p@1"),
                                    ("precision", "==", "fp32"), ("tie_policy", "==", "docid-desc"),
                                    ("instruction", "==", False)])
    shown = wide.set_index("task").loc["WinoGrande", BM25]
    assert shown == pytest.approx(rows["expected"].mean(), abs=1e-12)
    assert abs(rows["expected"].mean() - rows["oblivious"].mean()) > 1e-3, "the two differ here (BM25 is tied)"
    bars = json.loads(at.get("plotly_chart")[0].proto.spec)["data"]
    assert all("array" in trace["error_y"] for trace in bars), "each bar carries its tie range"
    table = next(df for df in at.dataframe if "task" in df.value.columns and BM25 in df.value.columns)
    labels = {name: spec.get("label") for name, spec in json.loads(table.proto.columns).items()}
    assert labels[BM25] == f"{BM25} (expected)", "the header says which value the column holds"
    assert any(m.label.startswith("G (oblivious) · ") and "oblivious" in (m.help or "") for m in at.metric)
    # the headline's oblivious G and the expected G of the bars below, both on the page (only a tooltip said so)
    from evalcore.store import Condition, Store
    board = Store(SHIPPED).leaderboard(Condition("rar-b", "p@1", "mcr", False, "fp32"), uncertainty=False)
    want = board.ranked.set_index("system")["G_expected"]
    line = next(c for c in texts(at, "caption") if c.startswith("Tie-aware expected G"))
    for name in (BM25, MINILM):
        assert f"{name.replace('_', chr(92) + '_')} {want[name]:.4f}" in line, line
    same = open_url(SHIPPED, "compare.py")  # MiniLM and mpnet pooled: expected G equals the headline's, no line
    assert not [c for c in texts(same, "caption") if c.startswith("Tie-aware expected G")]


def test_rank_flips_offers_only_precisions_two_systems_share(open_url):
    """q4 has one system in the shipped pooled runs (the 4-bit e5, read from the parquet files here): a rank
    flip to or from it cannot rank two systems, so it is not offered, and the help says why."""
    import glob

    frames = [pd.read_parquet(f, columns=["system", "setting", "precision", "metric"])
              for f in glob.glob(str(SHIPPED / "real" / "query_metrics" / "rar-b_*.parquet"))]
    rows = pd.concat(frames)
    rows = rows[(rows["setting"] == "full-pooled") & (rows["metric"] == "ndcg@10")]
    alone = [p for p, systems in rows.groupby("precision")["system"] if systems.nunique() == 1]
    assert "q4" in alone
    at = open_url(SHIPPED, "rank-flips.py")
    box = at.selectbox(key="flip_a")
    assert not [o for o in box.options if o.split(" ")[0] in alone], box.options
    assert "Not offered: q4" in box.help
    at = open_url(SHIPPED, "rank-flips.py", {"flip_a": "q4"})  # a link naming it: no refusal notice, a default
    assert at.selectbox(key="flip_a").value.startswith("fp32")


def test_evaluate_says_when_the_sidebars_setting_is_not_offered(open_url):
    """Uploads are scored over MCR or pooled candidates: opened under the sidebar's Full retrieval, the page's
    own Setting shows MCR and one line says why it differs from the sidebar."""
    at = open_url(SHIPPED, "evaluate.py", {"setting": "full"})
    assert not at.exception
    assert at.radio(key="ev_setting").value == "mcr"
    assert any(c.startswith("The sidebar's setting") and "Full retrieval" in c for c in texts(at, "caption"))
    at = open_url(SHIPPED, "evaluate.py", {"setting": "full-pooled"})
    assert at.radio(key="ev_setting").value == "full-pooled"
    assert not any(c.startswith("The sidebar's setting") for c in texts(at, "caption"))
