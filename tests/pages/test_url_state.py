"""The URL is the view: parameters restore every control, changes are written back, hostile values are
dropped with a notice and never reach the page, the store or the URL."""
from __future__ import annotations

import re

import pytest

from app_harness import page_path_from_main, shown, texts, widget
from ui import state

SIDEBAR = {"bench": "rar-b", "setting": "mcr", "metric": "p@1", "instr": "with", "prec": "bf16+hps",
           "ties": "docid-desc", "q": "e5", "family": ["e5"], "size_min": "10M", "size_max": "1B",
           "open": "yes", "itune": "any"}


def test_sidebar_params_restore_every_control(open_url, synthetic_dir):
    params = {**SIDEBAR, "size_min": "0"}
    at = open_url(synthetic_dir, params=params)
    assert not at.exception
    assert all("G is" in w for w in texts(at, "warning")), texts(at, "warning")
    for key, value in params.items():
        assert shown(at, key) == value, key  # a control with one option is shown as text, its value in the URL
    # only non-default filters are written back; the condition always is
    expected = {k: v for k, v in params.items() if k not in ("size_min", "itune")}
    assert at.query_params == {**expected, "family": "e5"}  # AppTest gives a single value as a str


@pytest.mark.parametrize("page, params", [
    ("leaderboard.py", {"sort": "borda", "mean": "1", "borda": "1", "chart": "size"}),
    ("leaderboard.py", {"lens": "tasks", "ranks": "simultaneous", "level": "0.9", "common": "1"}),
    ("ties-and-precision.py", {"tp_task": "PIQA", "wi_to": "fp16", "wi_scoring": "sigmoid", "instr": "without"}),
    ("rank-flips.py", {"flip_a": "bf16", "flip_b": "bf16+hps"}),
    ("mcr-vs-full.py", {"mcr_metric": "p@1", "mcr_task": "SIQA"}),
    ("compare.py", {"sys": ["gte-qwen2-7b", "bge-large"], "task": "SIQA", "diff_only": "0"}),
])
def test_page_params_restore_page_controls(open_url, synthetic_dir, page, params):
    at = open_url(synthetic_dir, page, {"bench": "rar-b", **params})
    assert not at.exception
    assert not [w for w in texts(at, "warning") if "`" in w], texts(at, "warning")
    for key, value in params.items():
        shown = widget(at, key).value
        assert (("1" if shown else "0") if isinstance(shown, bool) else shown) == value, key
        assert at.query_params[key] == value


def test_changing_a_control_updates_the_url(open_url, synthetic_dir):
    at = open_url(synthetic_dir)
    at.selectbox(key="bench").set_value("r2med").run()
    assert at.query_params["bench"] == "r2med"
    at.toggle(key="mean").set_value(True).run()
    assert at.query_params["mean"] == "1"
    share = [c.value for c in at.sidebar.code][-1]
    assert "bench=r2med" in share and "mean=1" in share


HOSTILE = {
    "sql": "rar-b'; DROP TABLE query_metrics; --",
    "script": "<script>alert(document.cookie)</script>",
    "huge": "x" * 10_000,
    "unicode": "rar\u202eb\u0000",
    "markdown": "[click](javascript:alert(1))",
}


@pytest.mark.parametrize("key", ["bench", "metric", "setting", "instr", "prec", "ties", "q", "family",
                                 "size_min", "open", "sort", "mean", "lens", "ranks", "level"])
@pytest.mark.parametrize("kind", list(HOSTILE))
def test_hostile_values_are_dropped_with_a_notice(open_url, synthetic_dir, key, kind):
    value = HOSTILE[kind]
    at = open_url(synthetic_dir, params={key: [value] if key == "family" else value})
    assert not at.exception and not texts(at, "error")
    notices = [w for w in texts(at, "warning") if f"`{key}`" in w]
    assert notices, f"no notice for {key}={kind}: {texts(at, 'warning')}"
    rendered = " ".join(texts(at, "warning") + texts(at, "markdown") + texts(at, "caption")
                        + [c.value for c in at.code])
    assert value not in rendered and "<script>" not in rendered
    assert key not in at.query_params or value not in str(at.query_params[key])
    assert at.selectbox(key="bench").value == "rar-b"


def test_unknown_and_repeated_keys_are_dropped_with_a_notice(open_url, synthetic_dir):
    at = open_url(synthetic_dir, params={"bench": ["rar-b", "r2med"], "evil": "1", "<img src=x>": "2",
                                         "prec": "bf16"})
    assert not at.exception
    warnings = " ".join(texts(at, "warning"))
    assert "`bench` was given 2 times" in warnings
    assert re.search(r"\b2 unknown\b", warnings) and "`evil`" in warnings and re.search(r"\b1 unreadable\b", warnings)
    assert "<img" not in warnings
    assert at.query_params["prec"] == "bf16"  # the valid rest still applies
    assert "evil" not in at.query_params


def test_params_of_another_page_are_dropped_with_a_notice(open_url, synthetic_dir):
    at = open_url(synthetic_dir, params={"sys": ["e5-small", "bge-large"]})
    assert [w for w in texts(at, "warning") if w.startswith("`sys`")], texts(at, "warning")
    assert "sys" not in at.query_params


def test_too_many_compare_systems_are_capped(open_url, synthetic_dir):
    names = ["e5-small", "bge-large", "gte-qwen2-7b", "e5-large-instruct", "closed-embed-3"]
    at = open_url(synthetic_dir, "compare.py", {"sys": names})
    assert at.multiselect(key="sys").value == names[:4]
    assert any("at most 4" in w for w in texts(at, "warning"))


def test_choosing_systems_in_the_multiselect_updates_the_url(open_url, synthetic_dir):
    names = ["e5-small", "bge-large", "gte-qwen2-7b"]
    at = open_url(synthetic_dir, "compare.py", {"sys": names[:2]})
    at.multiselect(key="sys").set_value(names).run()
    assert not at.exception
    assert at.query_params["sys"] == names


def test_controls_at_their_defaults_stay_out_of_the_url(open_url, synthetic_dir):
    """An empty search box, no family and the size bounds at their ends add nothing to the link."""
    at = open_url(synthetic_dir)
    assert not at.exception
    assert not {"q", "family", "size_min", "size_max", "open", "itune"} & set(at.query_params)


def test_notices_go_away_on_another_page(open_url, synthetic_dir):
    at = open_url(synthetic_dir, params={"bogus": "1"})
    assert texts(at, "warning")
    at.switch_page(page_path_from_main("instructions.py")).run()
    assert not [w for w in texts(at, "warning") if "URL parameter" in w]


# ------------------------------------------------------------------------------------ pure functions
def test_screen_query_params_gate():
    accepted, notices = state.screen_query_params({
        "bench": ["rar-b"], "prec": ["a", "b"], "family": ["e5", "bge"], "q": ["x" * 201],
        "metric": ["nd\x00cg"], "zzz": ["1"],
    })
    assert accepted == {"bench": ["rar-b"], "family": ["e5", "bge"]}
    assert len(notices) == 4


def test_screen_caps_keys_and_values():
    accepted, notices = state.screen_query_params({"family": ["a"] * 9} | {f"k{i}": ["1"] for i in range(100)})
    assert accepted == {}
    assert any("at most 8" in n for n in notices)
    assert any("Ignored 100 unknown" in n for n in notices)


def test_share_url_encodes_every_value():
    url = state.share_url({"bench": "rar-b", "prec": "bf16+hps", "sys": ["a b", "c&d"]}, "http://host/rank-flips")
    assert url == "http://host/rank-flips?bench=rar-b&prec=bf16%2Bhps&sys=a+b&sys=c%26d"
    assert state.share_url({}, None) == "?"


def test_hostile_values_never_reach_the_store(open_url, synthetic_dir, monkeypatch):
    """Every SQL text and bound parameter the store runs while drawing a hostile URL is free of it."""
    import streamlit as st

    from evalcore.store.queries import Database

    seen: list[str] = []
    original = Database.run  # every statement of every question goes through it

    def recording(self, sql, params=None, **kwargs):
        seen.append(sql + " " + repr(params))
        return original(self, sql, params, **kwargs)

    monkeypatch.setattr(Database, "run", recording)
    st.cache_data.clear()
    params = {key: HOSTILE["sql"] for key in ("bench", "metric", "setting", "instr", "prec", "ties", "q", "open")}
    params |= {"family": [HOSTILE["script"]], "sys": [HOSTILE["sql"]]}
    at = open_url(synthetic_dir, "compare.py", params)
    assert not at.exception
    assert seen, "the store was queried"
    for fragment in ("DROP TABLE", "<script>", "javascript:"):
        assert not [s for s in seen if fragment in s]
    st.cache_data.clear()


def test_the_sidebar_keeps_its_values_across_pages(open_url, synthetic_dir):
    """The sidebar's widgets are drawn by each page, so a page switch makes new widgets under the same keys;
    each must start from the value the last page had (a new widget would otherwise show its first option)."""
    at = open_url(synthetic_dir, params={"instr": "with"})
    at.selectbox(key="prec").set_value("bf16").run()
    at.text_input(key="q").set_value("e5").run()
    expected = {"bench": "rar-b", "instr": "with", "prec": "bf16", "q": "e5", "size_max": "no limit"}
    not_used = {"ties-and-precision.py": "prec", "rank-flips.py": "prec", "instructions.py": "instr"}
    for page in ("ties-and-precision.py", "rank-flips.py", "instructions.py", "compare.py", "leaderboard.py"):
        at.switch_page(page_path_from_main(page)).run()
        assert not at.exception, page
        drawn = {key: shown(at, key) for key in expected if key != not_used.get(page)}
        assert drawn == {k: v for k, v in expected.items() if k != not_used.get(page)}, page
        assert at.query_params["q"] == "e5", page
        assert at.query_params.get("prec") == (None if not_used.get(page) == "prec" else "bf16"), page
