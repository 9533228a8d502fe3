"""The views beside the Leaderboard on the shipped data, as a first visitor opens them: each one shows
its answer without a click (moving to a condition that has what it needs, and saying so), and the numbers it
shows equal an independent computation straight from the parquet files (pandas / numpy / scipy), not the
store code the page calls.
"""
from __future__ import annotations

import ast
import html
import json
import re

import numpy as np
import pandas as pd
import pytest

from app_harness import ROOT, page_path_from_main, texts

REAL = ROOT / "data" / "real" / "query_metrics"
MINILM, BM25, MPNET = "tiebreak-run/all-MiniLM-L6-v2", "tiebreak-run/bm25s", "tiebreak-run/all-mpnet-base-v2"
POOLED = "Full (pooled candidates)"


def real_rows(task: str | None = None, **equal) -> pd.DataFrame:
    """Per-query rows of data/real (every task, or one), filtered on columns while reading."""
    files = sorted(REAL.glob("rar-b_*.parquet")) if task is None else [REAL / f"rar-b_{task}.parquet"]
    if not files or not all(f.exists() for f in files):
        pytest.fail("data/real ships no per-query files")
    filters = [(name, "==", value) for name, value in equal.items()]
    frames = [pd.read_parquet(f, filters=filters or None) for f in files]
    rows = pd.concat(frames, ignore_index=True)
    for column in ("system", "task", "setting", "precision", "metric", "tie_policy", "qid", "precision_kind"):
        if column in rows:
            rows[column] = rows[column].astype(str)
    return rows


def moved(at, view: str) -> bool:
    """One info line that names the view and the condition it moved to: the pooled RAR-b board."""
    return any(line.startswith(view) and "RAR-b · full (pooled candidates)" in line for line in texts(at, "info"))


def task_means(value: str = "oblivious", **equal) -> pd.DataFrame:
    """system × task means of ``value`` (one row per system, one column per task)."""
    rows = real_rows(**equal)
    return rows.groupby(["system", "task"])[value].mean().unstack("task")


def geometric_mean(frame: pd.DataFrame) -> pd.Series:
    """G per row over the columns; 0 when a task is 0."""
    with np.errstate(divide="ignore"):
        return np.exp(np.log(frame).mean(axis=1)).where((frame > 0).all(axis=1), 0.0)


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


@pytest.fixture(scope="module")
def shipped():
    return ROOT / "data"


# ------------------------------------------------------------------------------------------------ Rank flips
def test_rank_flips_first_visit_shows_fp32_to_bf16_on_the_pooled_runs(open_url, shipped):
    from scipy.stats import kendalltau

    at = open_url(shipped, "rank-flips.py")
    assert not at.exception
    assert moved(at, "Rank flips")
    assert (at.query_params["setting"], at.query_params["flip_a"], at.query_params["flip_b"]) == (
        "full-pooled", "fp32", "bf16")
    assert at.get("plotly_chart"), "the slope chart is drawn by default"
    assert not [c for c in at.code if "evalcore ingest" in c.value]
    # independent: G per system from the parquet files (instructions as published = with), scipy's tau-b
    common = dict(setting="full-pooled", metric="ndcg@10", tie_policy="docid-desc", instruction=True)
    g = {p: geometric_mean(task_means(precision=p, **common).dropna()) for p in ("fp32", "bf16")}
    both = g["fp32"].index.intersection(g["bf16"].index)
    assert len(both) >= 7, "fp32 -> bf16 has at least 7 systems"
    shown = metrics(at)
    assert shown["Systems"] == str(len(both))
    tau = kendalltau(g["fp32"][both], g["bf16"][both], variant="b").statistic
    assert shown["Kendall τ-b"] == f"{tau:.3f}"
    caption = " ".join(texts(at, "caption"))
    assert "bf16 means different things here" in caption and "(inference)" in caption and "(storage)" in caption
    labels = at.selectbox(key="flip_b").options
    assert "bf16 (inference / scores stored)" in labels, labels
    # going back to the Leaderboard undoes the move: the visitor never chose full-pooled
    at.switch_page(page_path_from_main("leaderboard.py")).run()
    assert at.query_params["setting"] == "full"


def test_rank_flips_per_task_has_at_least_seven_systems(open_url, shipped):
    at = open_url(shipped, "rank-flips.py")
    tasks = sorted(real_rows(task=None, system=BM25, setting="mcr", precision="fp32", metric="p@1",
                             tie_policy="docid-desc", instruction=False)["task"].unique())
    assert at.selectbox(key="flip_task").options[1:] == [f"{t} alone" for t in tasks]
    for task in tasks:
        at.selectbox(key="flip_task").set_value(task).run()
        assert int(metrics(at)["Systems"]) >= 7, task


# ------------------------------------------------------------------------------------------- Ties & precision
def test_ties_first_visit_profile_and_table(open_url, shipped):
    at = open_url(shipped, "ties-and-precision.py")
    assert not at.exception
    assert moved(at, "Ties & precision")
    rows = real_rows(setting="full-pooled", metric="ndcg@10", tie_policy="docid-desc")
    tasks = sorted(rows["task"].unique())
    assert at.selectbox(key="tp_task").options[1:] == tasks, "the task list holds the tasks that have data"
    layouts = [json.loads(chart.proto.spec)["layout"] for chart in at.get("plotly_chart")]
    titles = [layout["title"]["text"] for layout in layouts if layout.get("meta") == "precision-profile"]
    assert sorted(titles) == sorted(s.split("/", 1)[-1] for s in rows["system"].unique()), "one panel per system"
    table = next(df.value for df in at.dataframe if "precision_kind" in df.value.columns)
    mine = rows[(rows["system"] == MINILM) & (rows["precision"] == "bf16") & rows["instruction"]]
    expected = mine.groupby("task")["expected"].mean().mean()
    shown = table[(table["system"] == MINILM) & (table["precision"] == "bf16")].iloc[0]
    assert shown["expected"] == pytest.approx(expected, abs=1e-12)
    assert shown["precision_kind"] == "inference"
    assert set(table.loc[table["system"] == BM25, "precision_kind"]) == {"native", "stored"}


def test_what_if_follows_the_sidebars_instruction_state(open_url, shipped):
    """The what-if shows a run only in the table's own condition (never the without-instruction run, 0.7357, under
    a table of with-instruction rows, 0.5549), and offers to switch."""
    at = open_url(shipped, "ties-and-precision.py")
    assert not [df for df in at.dataframe if "condition" in df.value.columns], "no mismatched what-if numbers"
    button = next(b for b in at.button if "without instruction" in b.label)
    button.click().run()
    assert at.query_params["instr"] == "without"
    what_if = next(df.value for df in at.dataframe if "condition" in df.value.columns)
    run = at.selectbox(key="wi_run").value
    task = run.split("_")[1]
    stored = real_rows(task, system=MINILM, setting="full-pooled", metric="ndcg@10", tie_policy="docid-desc",
                       precision="fp32", instruction=False)
    fp32 = what_if[what_if["condition"] == "fp32"].iloc[0]
    assert fp32["expected"] == pytest.approx(stored["expected"].mean(), abs=1e-9)
    assert fp32["oblivious"] == pytest.approx(stored["oblivious"].mean(), abs=1e-9)
    notes = " ".join(texts(at, "info"))
    assert "equals `fp32` **by construction**" in notes
    hps = what_if[what_if["condition"] == "bf16+hps"].iloc[0]
    assert hps["expected"] == pytest.approx(fp32["expected"], abs=1e-12), "by construction, as the note says"
    at.radio(key="wi_scoring").set_value("sigmoid").run()
    assert "by construction" not in " ".join(texts(at, "info"))


def test_what_if_follows_the_tables_task_and_says_when_it_differs(open_url, shipped):
    """With the table on WinoGrande, the what-if ran the ARCChallenge run and said "the same condition as the
    table above"; its bias printed unsigned (0.0001) under a signed table (+0.0002)."""
    at = open_url(shipped, "ties-and-precision.py", {"instr": "without", "tp_task": "WinoGrande"})
    assert not at.exception and not texts(at, "error")
    assert "WinoGrande" in at.selectbox(key="wi_run").value
    line = next(c for c in texts(at, "caption") if c.startswith("Run: "))
    assert "· WinoGrande ·" in line and "same condition" in line.rsplit("—", 1)[1], line
    stored = real_rows("WinoGrande", system=MINILM, setting="full-pooled", metric="ndcg@10",
                       tie_policy="docid-desc", precision="fp32", instruction=False)
    what_if = next(df for df in at.dataframe if "condition" in df.value.columns)
    fp32 = what_if.value[what_if.value["condition"] == "fp32"].iloc[0]
    assert fp32["expected"] == pytest.approx(stored["expected"].mean(), abs=1e-9)
    config = json.loads(what_if.proto.columns)
    assert config["bias"]["type_config"]["format"] == "%+.4f", config["bias"]
    chosen = open_url(shipped, "ties-and-precision.py", {"instr": "without", "tp_task": "WinoGrande",
                                                         "wi_run": "rar-b_ARCChallenge_full_all-MiniLM-L6-v2_fp32.parquet"})
    line = next(c for c in texts(chosen, "caption") if c.startswith("Run: "))
    assert "the same condition" not in line, line
    # the table's task, the run's task, and that the table's task has a run of its own
    assert re.findall("WinoGrande|ARCChallenge", line.rsplit("—", 1)[1]) == ["WinoGrande", "ARCChallenge", "WinoGrande"]


# ---------------------------------------------------------------------------------------------- MCR vs full
def test_mcr_vs_full_first_visit_names_its_zero_factors(open_url, shipped):
    at = open_url(shipped, "mcr-vs-full.py")
    assert not at.exception
    assert at.query_params["mcr_metric"] == "p@1"
    mcr = task_means(setting="mcr", metric="p@1", tie_policy="docid-desc", precision="fp32", instruction=True)
    full = task_means(setting="full-pooled", metric="ndcg@10", tie_policy="docid-desc", precision="fp32",
                      instruction=True)
    zero = mcr.stack()
    zero = zero[zero == 0]
    assert len(zero), "the shipped data has MCR tasks scoring 0"
    warning = " ".join(texts(at, "warning"))
    assert "zero factor of the geometric mean" in warning
    assert "G (MCR: p@1) is **0**" in warning, warning  # the aggregate, its metric and its value
    for (system, task) in zero.index:
        assert f"**{system.replace('_', chr(92) + '_')}** (" in warning and task in warning
    table = at.dataframe[-1].value.set_index("system")
    shared = mcr.columns.intersection(full.columns)
    g_mcr = geometric_mean(mcr.loc[[MINILM], shared])[MINILM]
    assert table.loc[MINILM, "G_b"] == pytest.approx(g_mcr, abs=1e-12)
    assert table.loc[MINILM, "G_a"] == pytest.approx(geometric_mean(full.loc[[MINILM], shared])[MINILM], abs=1e-12)


# ---------------------------------------------------------------------------------------------- Instructions
def test_instructions_first_visit_gap_in_g(open_url, shipped):
    at = open_url(shipped, "instructions.py")
    assert not at.exception
    assert any(t.startswith("Instructions needs") for t in texts(at, "info"))
    common = dict(setting="full-pooled", metric="ndcg@10", tie_policy="docid-desc", precision="fp32")
    with_ = task_means(instruction=True, **common)
    without = task_means(instruction=False, **common)
    tasks = with_.loc[MPNET].dropna().index.intersection(without.loc[MPNET].dropna().index)
    gap = geometric_mean(with_.loc[[MPNET], tasks])[MPNET] - geometric_mean(without.loc[[MPNET], tasks])[MPNET]
    table = at.dataframe[-1].value.set_index("system")
    assert table.loc[MPNET, "gap"] == pytest.approx(gap, abs=1e-12)
    assert len(at.get("plotly_chart")) == 2
    heat, bars = (json.loads(chart.proto.spec)["data"][0] for chart in at.get("plotly_chart"))
    # the bars draw the table's gaps, in its order; the heat map has one row per system, in the same order
    assert bars["y"] == table.index.tolist() and bars["x"] == pytest.approx(table["gap"].tolist(), abs=1e-12)
    assert heat["type"] == "heatmap" and heat["y"] == table.index.tolist()
    column = heat["x"].index(tasks[0])
    assert heat["z"][heat["y"].index(MPNET)][column] == pytest.approx(
        with_.loc[MPNET, tasks[0]] - without.loc[MPNET, tasks[0]], abs=1e-12)


# --------------------------------------------------------------------------------------------------- Compare
def _sign_flip_p(differences: np.ndarray, n: int = 20000, seed: int = 3) -> float:
    rng = np.random.default_rng(seed)
    signs = rng.choice([-1.0, 1.0], size=(n, differences.size))
    extreme = np.abs((signs * differences).mean(axis=1)) >= abs(differences.mean()) - 1e-12
    return (1 + extreme.sum()) / (1 + n)


def test_compare_first_visit_tests_expected_values(open_url, shipped):
    at = open_url(shipped, "compare.py")
    assert not at.exception
    assert moved(at, "Compare")
    assert at.radio(key="values").value == "expected"
    systems, task = at.multiselect(key="sys").value, at.selectbox(key="task").value
    tests = at.dataframe[-1].value
    config = json.loads(at.dataframe[-1].proto.columns)  # the column_config: the choice is shown
    assert config["mean_diff"]["label"] == "Mean A − B (expected)"
    rows = real_rows(task, setting="full-pooled", metric="ndcg@10", tie_policy="docid-desc", precision="fp32",
                     instruction=True)
    wide = rows[rows["system"].isin(systems)].pivot(index="qid", columns="system", values="expected")
    differences = (wide[systems[0]] - wide[systems[1]]).to_numpy()
    assert tests.iloc[0]["mean_diff"] == pytest.approx(differences.mean(), abs=1e-12)
    assert tests.iloc[0]["p_value"] == pytest.approx(_sign_flip_p(differences), abs=0.02)
    at.radio(key="values").set_value("oblivious").run()
    wide = rows[rows["system"].isin(systems)].pivot(index="qid", columns="system", values="oblivious")
    assert at.dataframe[-1].value.iloc[0]["mean_diff"] == pytest.approx(
        (wide[systems[0]] - wide[systems[1]]).mean(), abs=1e-12)


def test_compare_drill_down_shows_the_texts_of_the_source_csv(open_url, shipped):
    """The query and the candidates' texts in the drill-down are RAR-b's own (the upstream CSV, read here)."""
    from needs import require_source

    folder = require_source("rarb-mcr")
    at = open_url(shipped, "compare.py", {"setting": "mcr", "sys": [BM25, MINILM], "task": "WinoGrande",
                                          "instr": "without"})
    assert not at.exception
    csv = pd.read_csv(folder / "winogrande-test.csv", keep_default_na=False)
    table = next(df.value for df in at.dataframe if "query" in df.value.columns)
    first = table.iloc[0]
    row = int(first["qid"][1:])
    assert csv["queries"][row].startswith(first["query"].rstrip("…")[:60])
    qid = at.selectbox(key="qid").value
    row = int(qid[1:])
    shown = [html.unescape(m).replace("\\", "") for m in texts(at, "markdown")]  # markdown-escaped text
    assert any(csv["queries"][row] in m for m in shown)
    candidates = next(df.value for df in at.dataframe if "relevant" in df.value.columns)
    assert candidates["text"].tolist() == [str(t) for t in ast.literal_eval(csv["documents"][row])]
    assert candidates["relevant"].tolist() == [i == int(csv["labels"][row]) for i in range(len(candidates))]
    numbers = next(df.value for df in at.dataframe if "tied_at_cutoff" in df.value.columns
                   and "n_candidates" in df.value.columns)
    stored = real_rows("WinoGrande", setting="mcr", metric="p@1", tie_policy="docid-desc", precision="fp32",
                       instruction=False, qid=qid)
    for system in (BM25, MINILM):
        mine = stored[stored["system"] == system].iloc[0]
        shown = numbers[numbers["system"] == system].iloc[0]
        assert (shown["expected"], shown["min"], shown["max"], bool(shown["tied_at_cutoff"])) == pytest.approx(
            (mine["expected"], mine["min"], mine["max"], bool(mine["tied_at_cutoff"])))


def test_compare_condition_line_names_the_precision_kind(open_url, shipped):
    """A precision is shown with its kind wherever it is shown — also in the condition line of the
    views (Compare, Instructions, MCR vs full) — read here straight from the files' precision_kind column."""
    import re

    at = open_url(shipped, "compare.py")
    assert not at.exception
    rows = real_rows(setting="full-pooled", precision="fp32", metric="ndcg@10", tie_policy="docid-desc")
    kinds = set(rows["precision_kind"])
    assert kinds, "the shipped fp32 rows carry a precision kind"
    lines = [t for t in texts(at, "caption") if "ties:" in t]
    assert lines, texts(at, "caption")
    shown = re.search(r"· fp32 \(([^)]*)\) ·", lines[0])
    assert shown, lines[0]
    assert set(shown.group(1).split(" / ")) == kinds


def test_compare_marks_a_query_as_decided_by_ties_exactly_when_its_range_is_open(open_url, shipped):
    """The drill-down's flag says the score depends on how ties were ordered, as its sentence says. It showed
    ``tied_at_cutoff`` under that sentence: BM25 on TempReasonL2Pure (MCR, nDCG@10) has rows with [0.387, 1.0]
    left unmarked (ties inside the top 10) and rows with [1.0, 1.0] marked (ties at the cutoff that move
    nothing)."""
    systems = [MINILM, MPNET, BM25]
    at = open_url(shipped, "compare.py", {"setting": "mcr", "metric": "ndcg@10", "sys": systems,
                                          "task": "TempReasonL2Pure", "instr": "without", "diff_only": "0"})
    assert not at.exception
    table = next(df.value for df in at.dataframe if "query" in df.value.columns)
    published = real_rows("TempReasonL2Pure", setting="mcr", metric="ndcg@10", tie_policy="docid-desc",
                          precision="fp32", instruction=False)
    for system in systems:
        mine = published[published["system"] == system].set_index("qid")
        shown = table.set_index("qid")[f"{system} ties decide"]
        want = (mine["max"] > mine["min"]).reindex(shown.index)
        assert shown.tolist() == want.tolist(), system
    bm25 = published[published["system"] == BM25]
    assert ((bm25["max"] > bm25["min"]) & ~bm25["tied_at_cutoff"].astype(bool)).any(), "the case that was wrong"
    assert any("*Ties decide*" in m and "(min < max)" in m for m in texts(at, "markdown"))


def test_compare_drill_down_on_the_pool_says_how_many_documents_a_run_ranked(open_url, shipped):
    """Under "ranked against the task's pool of 4,408 candidate answers" the table said "Documents ranked 100"
    with no word on why: the sentence now names the cut, and the counts bear it out (100, or more with ties)."""
    at = open_url(shipped, "compare.py", {"setting": "full-pooled", "sys": [BM25, MINILM], "task": "WinoGrande",
                                          "instr": "without"})
    assert not at.exception
    line = next(m for m in texts(at, "markdown") if m.startswith("**Relevant document** (ranked against"))
    assert "top 100" in line and "100th" in line, line  # the cut-off and its ties
    pool = int(line.split("pool of ")[1].split(" ")[0].replace(",", ""))
    numbers = next(df.value for df in at.dataframe if "n_candidates" in df.value.columns)
    assert (numbers["n_candidates"] >= min(100, pool)).all() and (numbers["n_candidates"] <= pool).all()


def test_rank_flips_by_one_task_speaks_of_that_tasks_score(open_url, shipped):
    """Ranked by WinoGrande alone, fp32 → binary, the page said "No two systems have overlapping [G_min, G_max]
    intervals (published scores carry no interval)": neither G nor published scores were on it."""
    params = {"setting": "full-pooled", "flip_a": "fp32", "flip_b": "binary", "flip_task": "WinoGrande"}
    at = open_url(shipped, "rank-flips.py", params)
    assert not at.exception and not texts(at, "error"), texts(at, "error")
    assert "Pairs ties cannot separate (0)" in texts(at, "subheader")
    said = " ".join(texts(at, "caption"))
    assert "[WinoGrande score min, WinoGrande score max]" in said, said
    assert "published scores" not in said and "G_min" not in said
    # every line is dashed (binary is stored embeddings for all three): the key is on the page, not only in a
    # notice that appears when kinds differ
    key = next(c for c in texts(at, "caption") if c.startswith("binary "))
    assert "(storage)" in key and "dashed" in key, key
    overall = open_url(shipped, "rank-flips.py", {**params, "flip_task": "G", "flip_b": "bf16"})
    assert not texts(overall, "error"), texts(overall, "error")
    labels = [m.help or "" for m in overall.metric if m.label == "Overlapping pairs"]
    assert labels and "[G min, G max]" in labels[0], labels
