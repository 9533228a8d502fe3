"""ui.state.screen_query_params on its own: how many values a repeatable key keeps, and the notice that names
unknown keys and counts unreadable ones."""
from __future__ import annotations

import re

import pytest

from ui import state


@pytest.mark.parametrize("count, kept", [(state.MAX_VALUES_PER_KEY, True), (state.MAX_VALUES_PER_KEY + 1, False)])
def test_a_repeatable_key_keeps_up_to_its_limit_of_values(count, kept):
    values = [f"fam{i}" for i in range(count)]
    accepted, notices = state.screen_query_params({"family": values})
    assert (accepted.get("family") == values) is kept
    assert (notices == []) is kept


def test_unknown_keys_are_named_and_unreadable_ones_counted():
    _, notices = state.screen_query_params({"zzz": ["1"], "bench": ["rar-b"]})
    assert notices == ["Ignored 1 unknown URL parameter: `zzz`."]
    _, notices = state.screen_query_params({"zzz": ["1"], "<b>": ["2"]})
    (notice,) = notices
    assert re.search(r"\b2 unknown URL parameters\b", notice) and "`zzz`" in notice, notice
    assert re.search(r"\b1 unreadable\b", notice) and "<b>" not in notice, notice


def test_many_unknown_keys_are_not_called_unreadable():
    _, notices = state.screen_query_params({f"k{i}": ["1"] for i in range(200)} | {"<b>": ["x"]})
    (notice,) = notices
    assert re.search(r"\b201 unknown URL parameters\b", notice), notice
    assert "`k0`" in notice and "`k4`" in notice and "`k5`" not in notice, notice
    assert re.search(r"\b195 more\b", notice) and re.search(r"\b1 unreadable\b", notice), notice
