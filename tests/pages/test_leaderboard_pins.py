"""Pinned rows on the Leaderboard (pages/leaderboard.py, ``ui/state.pinned``): the pinned set is in the URL,
screened like every URL value, the table's selection shows it, "Compare pinned" opens Compare with exactly
those systems under the same condition, and with "Rank on common tasks" the board ranks only the pins."""
from __future__ import annotations

from app_harness import ROOT, texts

from evalcore.store import Condition, Store

SHIPPED = ROOT / "data"
POOLED = {"bench": "rar-b", "setting": "full-pooled", "instr": "any", "metric": "ndcg@10", "prec": "fp32"}


def _table(at):
    return next(df for df in at.dataframe if {"rank", "system"} <= set(df.value.columns))


def _selected(at) -> list[int]:
    """Row positions the Leaderboard table shows selected (its selection widget's state)."""
    key = _table(at).proto.id.split("-", 2)[-1]  # the widget id ends in the key the page gave
    assert key.startswith("lb_rows_"), key
    return list(at.session_state[key]["selection"]["rows"])


def _all(at, key: str) -> list[str]:
    """Every value of a URL key after the run (AppTest keeps one value as a string, several as a list)."""
    value = at.query_params.get(key, [])
    return [value] if isinstance(value, str) else list(value)


def _systems_in_table(at) -> list[str]:
    return _table(at).value["system"].tolist()


def test_pins_from_a_link_are_selected_and_written_back(open_url):
    board = Store(SHIPPED).leaderboard(Condition("rar-b", "ndcg@10", "full-pooled", None, "fp32"),
                                       uncertainty=False)
    names = board.ranked["system"].tolist()
    pins = [names[4], names[0], names[2]]
    at = open_url(SHIPPED, params={**POOLED, "pin": pins})
    assert not at.exception
    assert _all(at, "pin") == pins  # order kept: the order they were pinned in
    shown = _systems_in_table(at)
    assert sorted(shown[i] for i in _selected(at)) == sorted(pins)
    line = next(t for t in texts(at, "markdown") if "Pinned (3)" in t)
    assert all(p in line for p in pins)
    compare = next(b for b in at.button if b.label.startswith("Compare pinned"))
    assert compare.label == "Compare pinned (3)" and not compare.disabled


def test_a_link_naming_unknown_systems_keeps_the_known_ones_and_says_so(open_url):
    names = Store(SHIPPED).leaderboard(Condition("rar-b", "ndcg@10", "full-pooled", None, "fp32"),
                                       uncertainty=False).ranked["system"].tolist()
    at = open_url(SHIPPED, params={**POOLED, "pin": [names[1], "<script>x</script>", "no such model"]})
    assert not at.exception
    assert _all(at, "pin") == [names[1]]
    notices = " ".join(texts(at, "warning"))
    assert "`pin`" in notices and "2 values" in notices and "<script>" not in notices


def test_more_than_eight_pins_in_a_link_are_refused_whole(open_url):
    names = Store(SHIPPED).leaderboard(Condition("rar-b", "ndcg@10", "full", None, "fp32"),
                                       uncertainty=False).ranked["system"].tolist()
    at = open_url(SHIPPED, params={"pin": names[:9]})
    assert not at.exception
    assert _all(at, "pin") == []
    assert any("`pin`" in t for t in texts(at, "warning"))


def test_compare_pinned_opens_compare_with_the_pins_under_the_same_condition(open_url):
    names = Store(SHIPPED).leaderboard(Condition("rar-b", "ndcg@10", "full-pooled", None, "fp32"),
                                       uncertainty=False).ranked["system"].tolist()
    pins = [names[3], names[1], names[0]]
    at = open_url(SHIPPED, params={**POOLED, "pin": pins})
    next(b for b in at.button if b.label.startswith("Compare pinned")).click().run()
    assert not at.exception
    assert at.multiselect(key="sys").value == pins
    for key, value in POOLED.items():
        assert at.query_params.get(key, value) == value, key  # defaults may be left out of the URL
    assert _all(at, "sys") == pins
    assert "pin" not in at.query_params  # Compare has no pins of its own


def test_one_pin_or_five_cannot_be_compared(open_url):
    names = Store(SHIPPED).leaderboard(Condition("rar-b", "ndcg@10", "full", None, "fp32"),
                                       uncertainty=False).ranked["system"].tolist()
    for pins in ([names[0]], names[:5]):
        at = open_url(SHIPPED, params={"pin": pins})
        button = next(b for b in at.button if b.label.startswith("Compare pinned"))
        assert button.label == f"Compare pinned ({len(pins)})" and button.disabled


def test_pins_with_common_tasks_rank_only_the_pins_on_the_tasks_they_share(open_url):
    store = Store(SHIPPED)
    cond = Condition("rar-b", "ndcg@10", "full", None, "fp32")
    full = store.leaderboard(cond, uncertainty=False)
    pins = [full.incomplete["system"].iloc[0], full.ranked["system"].iloc[0], full.ranked["system"].iloc[-1]]
    at = open_url(SHIPPED, params={"pin": pins, "common": "1"})
    assert not at.exception
    expected = store.leaderboard(cond, systems=tuple(pins), common_tasks=True, uncertainty=False)
    assert sorted(_systems_in_table(at)) == sorted(expected.ranked["system"])
    assert set(expected.ranked["system"]) == set(pins)
    assert len(expected.tasks) < len(full.tasks)  # the incomplete pin drops a task: the pins' common tasks
    assert _all(at, "pin") == pins


def test_unpin_all_clears_the_pins_and_the_link(open_url):
    names = Store(SHIPPED).leaderboard(Condition("rar-b", "ndcg@10", "full", None, "fp32"),
                                       uncertainty=False).ranked["system"].tolist()
    at = open_url(SHIPPED, params={"pin": names[:2]})
    next(b for b in at.button if b.label == "Unpin all").click().run()
    assert not at.exception
    assert _all(at, "pin") == []
    assert _selected(at) == []
