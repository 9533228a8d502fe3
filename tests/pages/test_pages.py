"""Every page renders — with synthetic data, with an empty data dir, with published-only data — and shows
store numbers, never a traceback."""
from __future__ import annotations

import re
from dataclasses import replace

import pytest
import streamlit as st

from app_harness import PAGE_FILES, ROOT, TITLES, shown, texts
from evalcore.store import Condition, Store

INTROS = {  # a phrase of each page's one-line explanation
    "leaderboard.py": "geometric mean of task scores",
    "ties-and-precision.py": "tie-oblivious evaluator",
    "rank-flips.py": "Kendall τ summarises agreement",
    "instructions.py": "with − without",
    "mcr-vs-full.py": "multiple-choice retrieval (MCR)",
    "compare.py": "paired randomization test",
    "evaluate.py": "Where would your model land?",
}


ADJACENT = re.compile(r"\*\*(\d+) of (\d+)\*\* adjacent pairs differ")
"""The Leaderboard's headline numbers (one per lens): how many of its adjacent pairs differ."""


def headline_numbers(at) -> list[str]:
    """A page's headline numbers: its metrics' values, or the Leaderboard's "N of M adjacent pairs differ"."""
    return [m.value for m in at.metric] + [m for m in texts(at, "markdown") if ADJACENT.search(m)]


def assert_clean(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not texts(at, "error"), texts(at, "error")


@pytest.mark.parametrize("page", PAGE_FILES)
def test_page_renders_with_per_query_data(open_url, synthetic_dir, page):
    at = open_url(synthetic_dir, page)
    assert_clean(at)
    assert [t.value for t in at.title] == [TITLES[page]]
    assert any(INTROS[page] in m for m in texts(at, "markdown"))
    assert headline_numbers(at), "each page with data shows headline numbers"
    assert at.query_params["bench"] == "rar-b"


@pytest.mark.parametrize("page", PAGE_FILES)
def test_page_renders_with_the_shipped_data(open_url, page):
    shipped = ROOT / "data"
    if not any(shipped.rglob("*.parquet")):
        pytest.fail("data/ ships no parquet results")
    at = open_url(shipped, page)
    assert_clean(at)
    assert [t.value for t in at.title] == [TITLES[page]]
    assert shown(at, "bench") in ("rar-b", "r2med")


@pytest.mark.parametrize("page", PAGE_FILES)
def test_page_explains_an_empty_data_dir(open_url, empty_dir, page):
    at = open_url(empty_dir, page)
    assert_clean(at)
    assert [t.value for t in at.title] == [TITLES[page]]
    assert any("no results in the data folder" in m for m in texts(at, "info"))
    assert any("evalcore ingest" in c.value for c in at.code)
    shown_text = " ".join(texts(at, "info") + texts(at, "markdown") + [c.value for c in at.code])
    assert str(empty_dir) not in shown_text, "a visitor is never told the server's file paths"


NEEDS = {"ties-and-precision.py": "per-query results", "rank-flips.py": "runs at two precisions",
         "instructions.py": "results with and without instruction for the same system",
         "mcr-vs-full.py": "full and multiple-choice (MCR) results for the same system"}


@pytest.mark.parametrize("page", PAGE_FILES)
def test_page_with_published_scores_only(open_url, synthetic_dir, page):
    """r2med has task scores but no per-query data, one precision, no MCR, no instruction variants: a view
    that needs them moves to rar-b and says so in one line; the others stay."""
    at = open_url(synthetic_dir, page, {"bench": "r2med"})
    assert_clean(at)
    assert not [c for c in at.code if "evalcore ingest" in c.value], "not a dead end: rar-b has what it needs"
    if page in NEEDS:
        assert at.query_params["bench"] == "rar-b"
        assert f"{TITLES[page]} needs {NEEDS[page]}: showing RAR-b" in " ".join(texts(at, "info"))
        assert "R2MED" in (widget_help(at, "bench") or ""), "the benchmark's help says why R2MED is not offered"
    else:
        assert shown(at, "bench") == "r2med"


def widget_help(at, key):
    for element in at.sidebar.markdown:
        if str(element.value).startswith("**Benchmark:**"):
            return element.proto.help
    return at.sidebar.selectbox(key=key).help


@pytest.mark.parametrize("page", sorted(NEEDS))
def test_a_folder_that_truly_lacks_it_keeps_the_ingest_hint(open_url, published_only_dir, page):
    at = open_url(published_only_dir, page)
    assert_clean(at)
    commands = [c.value for c in at.code if "evalcore ingest" in c.value]
    assert commands, "the page says how to add what it needs"
    assert str(published_only_dir) not in " ".join(commands) and "--data DATA_DIR" in commands[0]


def test_missing_data_dir_is_explained(open_url, tmp_path):
    at = open_url(tmp_path / "does-not-exist")
    assert not at.exception
    assert any("does not exist" in e for e in texts(at, "error"))


def test_rank_flip_numbers_equal_the_store(open_url, synthetic_dir):
    at = open_url(synthetic_dir, "rank-flips.py", {"flip_a": "bf16", "flip_b": "bf16+hps", "instr": "with"})
    assert_clean(at)
    cond = Condition("rar-b", "ndcg@10", "full", True, "fp32")
    flips = Store(synthetic_dir).rank_flips(replace(cond, precision="bf16"), replace(cond, precision="bf16+hps"))
    shown = {m.label: m.value for m in at.metric}
    assert shown["Kendall τ-b"] == f"{flips.kendall_tau_b:.3f}"
    assert shown["Flipped pairs"] == str(len(flips.flipped_pairs))
    assert shown["Overlapping pairs"] == str(len(flips.overlapping_pairs))


def test_filters_restrict_the_leaderboard(open_url, synthetic_dir):
    at = open_url(synthetic_dir, params={"family": ["e5"], "instr": "without"})
    assert_clean(at)
    assert set(at.dataframe[0].value["system"]) == {"e5-small", "e5-large-instruct"}
    pairs = [ADJACENT.search(m).group(2) for m in texts(at, "markdown") if ADJACENT.search(m)]
    assert pairs == ["1", "1"], "both lenses' headlines count the one adjacent pair of the two ranked systems"
    assert any("Filtered to 2 systems" in c for c in texts(at, "caption"))


def test_filters_that_exclude_everything_say_so(open_url, synthetic_dir):
    at = open_url(synthetic_dir, params={"q": "no-such-model"})
    assert_clean(at)
    assert any("No system matches the filters" in w for w in texts(at, "warning"))


def test_incomplete_and_zero_systems_are_explained(open_url, synthetic_dir):
    at = open_url(synthetic_dir, params={"instr": "without"})
    assert_clean(at)
    assert any("tiny-partial" in str(df.value["system"].tolist()) for df in at.dataframe[1:])
    assert any(w.startswith("G is **0**") and "closed-embed-3" in w for w in texts(at, "warning"))


def test_a_zero_g_is_explained_only_where_g_is_shown(open_url, synthetic_dir):
    """Ranked by the mean with the G column hidden, no notice speaks of a G nowhere on the page; showing G
    brings it back."""
    hidden = open_url(synthetic_dir, params={"instr": "without", "sort": "mean"})
    assert_clean(hidden)
    assert "G" not in hidden.dataframe[0].value.columns
    assert not any("G is **0**" in w for w in texts(hidden, "warning"))
    shown = open_url(synthetic_dir, params={"instr": "without", "sort": "mean", "mean": "1"})
    assert "G" in shown.dataframe[0].value.columns
    assert any("G is **0** for closed-embed-3" in w for w in texts(shown, "warning"))


def test_what_if_panel_rescoring_a_run(open_url, synthetic_dir):
    at = open_url(synthetic_dir, "ties-and-precision.py", {"wi_to": "fp16", "wi_scoring": "sigmoid",
                                                           "instr": "without"})
    assert_clean(at)
    what_if = at.dataframe[-1].value
    assert what_if["condition"].tolist() == ["fp32", "fp16", "fp16+hps"]


def test_a_failing_page_shows_a_friendly_message(open_url, synthetic_dir, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("boom: secret internals")

    st.cache_data.clear()
    monkeypatch.setattr(Store, "leaderboard", broken)
    at = open_url(synthetic_dir)
    assert not at.exception
    errors = texts(at, "error")
    assert errors and "could not be drawn" in errors[0]
    assert "secret internals" not in " ".join(errors + texts(at, "markdown"))
    st.cache_data.clear()


def test_compare_drill_down_and_paired_test(open_url, synthetic_dir):
    at = open_url(synthetic_dir, "compare.py",
                  {"sys": ["bge-large", "e5-small", "gte-qwen2-7b"], "task": "PIQA", "diff_only": "0"})
    assert_clean(at)
    assert at.multiselect(key="sys").value == ["bge-large", "e5-small", "gte-qwen2-7b"]
    tests = at.dataframe[-1].value
    assert len(tests) == 3  # every pair of the three
    store = Store(synthetic_dir)
    first = store.paired_test("bge-large", "e5-small", Condition("rar-b", instruction=None), task="PIQA",
                              value="expected")  # the view's default: tie-aware expected values
    assert tests.iloc[0]["mean_diff"] == pytest.approx(first.observed_diff, abs=1e-12)
    assert tests.iloc[0]["p_value"] == pytest.approx(first.p_value)


def test_dropping_a_result_file_shows_up_without_restart(open_url, synthetic_dir, tmp_path, monkeypatch):
    import shutil

    import pandas as pd

    from ui import data as ui_data

    folder = tmp_path / "live"
    shutil.copytree(synthetic_dir, folder)
    monkeypatch.setattr(ui_data, "RESCAN_SECONDS", 0.0)
    at = open_url(folder)
    assert "new-bench" not in at.selectbox(key="bench").options
    published = pd.read_parquet(folder / "task_scores_synthetic.parquet").assign(benchmark="new-bench")
    published.to_parquet(folder / "task_scores_new.parquet", index=False)
    at.run()
    assert_clean(at)
    assert "new-bench" in at.selectbox(key="bench").options


def test_the_suggested_ingest_command_is_valid(open_url, published_only_dir):
    """Empty states print an `evalcore ingest` call; the real CLI parser accepts it."""
    import shlex

    from evalcore.cli import build_parser

    at = open_url(published_only_dir, "rank-flips.py", {"bench": "r2med"})
    command = next(c.value for c in at.code if "evalcore ingest" in c.value)
    argv = shlex.split(command.replace("\\\n", " "))
    assert argv[:3] == ["python", "-m", "evalcore"]
    args = build_parser().parse_args(argv[3:])
    assert (args.benchmark, args.precision, args.instruction, args.data) == ("r2med", "bf16", "no", "DATA_DIR")
