"""The drill-down's query snippets, cut column-wise from the task texts' one-line ``flat_text`` (a
split/join per query on every rerun was a fifth of Compare's rerun), are the snippets of the original texts:
whitespace runs as one space, cut at the limit with an ellipsis."""
from pathlib import Path

import pandas as pd
import pytest

from ui import data, drilldown

ROOT = Path(__file__).resolve().parents[2]


def snippet(text: str, limit: int = drilldown.SNIPPET) -> str:
    """The reference: one text at a time, whitespace runs as one space, cut with an ellipsis."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def test_column_wise_snippets_equal_the_scalar_definition():
    texts = ["short", "  spaced \n\t out  text ", "x" * 109, "y" * 110, "z" * 111, "w " * 80, "", None]
    flat = pd.Series([" ".join(t.split()) if isinstance(t, str) else None for t in texts])
    for limit in (70, drilldown.SNIPPET):
        got = drilldown.snippets(flat, limit).tolist()
        assert got == [snippet(t, limit) if isinstance(t, str) else "" for t in texts]
        assert all(len(s) <= limit for s in got)


@pytest.mark.parametrize("task", ["WinoGrande", "TempReasonL3Pure"])
def test_shipped_task_texts_carry_the_one_line_text(task):
    snap = data.snapshot(ROOT / "data")
    texts = data.task_texts(snap, "rar-b", task)
    assert texts is not None and len(texts.queries)
    for text, flat in zip(texts.queries["text"], texts.queries["flat_text"]):
        assert flat == " ".join(text.split())
    assert drilldown.snippets(texts.queries["flat_text"]).tolist() == [
        snippet(t) for t in texts.queries["text"]]
