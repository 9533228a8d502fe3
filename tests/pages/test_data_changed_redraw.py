"""The frame draws the whole page again when the data changed while it was drawn (ui.data.DataChanged), at most
ui.navigation.REDRAWS times in a row, then says so: never an error box, never a loop."""
from __future__ import annotations

import pytest

from ui import data


@pytest.fixture
def folder(synthetic_dir, tmp_path):
    import shutil

    copy = tmp_path / "data"
    shutil.copytree(synthetic_dir, copy)
    data.clear_answers()
    yield copy
    data.clear_answers()


def test_the_frame_draws_the_page_again_when_the_data_changed(folder, open_url, monkeypatch):
    from ui import navigation

    calls = {"n": 0}
    original = data.leaderboard

    def changed_once(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise data.DataChanged("test")
        return original(*args, **kwargs)

    monkeypatch.setattr(data, "leaderboard", changed_once)
    at = open_url(folder)
    assert calls["n"] >= 2
    assert not at.exception
    texts = " ".join(e.value for e in [*at.error, *at.warning])
    assert "could not be drawn" not in texts and "changed while" not in texts
    assert len(at.dataframe) >= 1
    assert navigation.REDRAWS >= 1


def test_data_changing_at_every_draw_ends_in_a_notice_not_a_loop(folder, open_url, monkeypatch):
    calls = {"n": 0}

    def always_changed(*args, **kwargs):
        calls["n"] += 1
        raise data.DataChanged("test")

    monkeypatch.setattr(data, "leaderboard", always_changed)
    at = open_url(folder)
    from ui import navigation

    assert calls["n"] == navigation.REDRAWS + 1
    assert not at.exception
    assert any("changed while" in w.value for w in at.warning)
