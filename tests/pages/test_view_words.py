"""What three views' words say about what they draw (shipped data):

- Ties & precision's grey bars are the share of queries *tied at the cutoff* (``tied_share``), and the paragraph
  says so (not the glossary's *tie-dependent*, min < max);
- its what-if Run box shows short labels, and the line below names the run's file;
- MCR vs full names each axis's setting and metric and says what the dashed diagonal is (MCR p@1 and full
  nDCG@10 are two different metrics);
- Rank flips' overlap column says whose intervals: the tie ranges under either precision."""
from __future__ import annotations

import json

import pytest

from app_harness import ROOT, texts
from ui import glossary

SHIPPED = ROOT / "data"


def figures(at) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def column_config(at, column: str) -> dict:
    """The column config of ``column`` in the first table that has it."""
    for frame in at.dataframe:
        config = json.loads(frame.proto.columns)
        if column in config:
            return config[column]
    raise AssertionError(f"no table with a column {column!r}")


# ------------------------------------------------------------------------------------------- Ties & precision
def test_the_profile_paragraph_names_what_the_grey_bars_plot(open_url):
    at = open_url(SHIPPED, "ties-and-precision.py")
    assert not at.exception
    paragraph = next(m for m in texts(at, "markdown") if "grey bars" in m)
    bars = [trace for figure in figures(at) for trace in figure["data"] if trace["type"] == "bar"]
    assert bars and {trace["name"] for trace in bars} == {"queries tied at the cutoff"}, "what the bars plot"
    assert "tied at the cutoff" in paragraph and glossary.href("tied-at-cutoff") in paragraph, paragraph
    assert "depends on tie-breaking" not in paragraph, "that is the share of tie-dependent queries, not plotted"


def test_the_what_if_run_box_shows_short_labels_and_the_line_names_the_file(open_url):
    at = open_url(SHIPPED, "ties-and-precision.py", {"instr": "without"})
    assert not at.exception
    box = at.selectbox(key="wi_run")
    files = sorted(p.name for p in (SHIPPED / "runs").glob("rar-b_*_fp32.parquet"))
    assert len(box.options) == len(files) == len(set(box.options)), box.options
    assert all(".parquet" not in label and len(label) <= 40 for label in box.options), box.options
    assert box.options[files.index(box.value)] == "all-MiniLM-L6-v2 · ARCChallenge"
    line = next(c for c in texts(at, "caption") if c.startswith("Run: "))
    assert f"(`{box.value}`)" in line, line


# ------------------------------------------------------------------------------------------------ MCR vs full
@pytest.mark.parametrize("mcr_metric, line", [
    ("p@1", "y = x (different metrics: a guide, not parity)"), ("ndcg@10", "y = x (same metric)")])
def test_mcr_vs_full_says_what_each_axis_is_and_what_the_diagonal_is(open_url, mcr_metric, line):
    at = open_url(SHIPPED, "mcr-vs-full.py", {"mcr_metric": mcr_metric})
    assert not at.exception
    assert at.query_params["setting"] == "full-pooled" and at.query_params["metric"] == "ndcg@10"
    intro = next(m for m in texts(at, "markdown") if "evaluates each task two ways" in m)
    assert glossary.href("full-pooled") in intro and glossary.href("full") in intro, intro
    caption = next(c for c in texts(at, "caption") if c.startswith("**x**"))
    accuracy = " (accuracy)" if mcr_metric == "p@1" else ""
    assert caption.startswith(f"**x**: {glossary.link('full-pooled')}, ndcg@10 · **y**: "
                              f"{glossary.link('mcr', 'MCR')}, {mcr_metric}{accuracy}."), caption
    (figure,) = figures(at)
    assert figure["layout"]["xaxis"]["title"]["text"] == "Full (pooled candidates): ndcg@10"
    assert figure["layout"]["yaxis"]["title"]["text"] == f"MCR: {mcr_metric}"
    names = [trace.get("name") for trace in figure["data"]]
    assert "MCR = full" not in names and line in names, names


# ------------------------------------------------------------------------------------------------- Rank flips
def test_the_flipped_pairs_overlap_column_says_whose_ranges(open_url):
    at = open_url(SHIPPED, "rank-flips.py")
    assert not at.exception
    assert (at.query_params["flip_a"], at.query_params["flip_b"]) == ("fp32", "bf16")
    config = column_config(at, "intervals_overlap")
    assert config["label"] == "Tie ranges overlap (fp32 or bf16)", config
    assert "under fp32, under bf16 or under both" in config["help"], config["help"]
