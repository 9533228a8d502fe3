"""Instructions on a phone (390 px): the heat map's cells were ~15 px wide beside full system names, with unreadable
numbers in them and the colour bar taking a third of the width (review, 2026-12-04). A phone gets short names,
no numbers in the cells, the task names on top and the colour bar below; a screen keeps the full figure."""
from __future__ import annotations

import json

import pytest

from app_harness import ROOT

SHIPPED = ROOT / "data"


def _figures(open_url, monkeypatch, phone: bool):
    from ui import screen

    monkeypatch.setattr(screen, "on_a_phone", lambda headers=None: phone)
    at = open_url(SHIPPED, "instructions.py")
    assert not at.exception
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


@pytest.mark.parametrize("phone", [True, False])
def test_the_heat_map_fits_the_screen_it_is_drawn_on(open_url, monkeypatch, phone):
    heat, bars = _figures(open_url, monkeypatch, phone)
    cells, bar = heat["data"][0], bars["data"][0]
    full = [row[0] for row in cells["customdata"]]
    assert "tiebreak-run/bm25s" in full and set(bar["customdata"]) == set(full)
    if phone:
        assert "bm25s" in cells["y"] and not any("/" in name for name in cells["y"])
        assert not any("/" in name for name in bar["y"])
        assert cells["texttemplate"] == "" and cells["colorbar"]["orientation"] == "h"
        assert heat["layout"]["xaxis"]["side"] == "top"
    else:
        assert cells["y"] == full and "tiebreak-run/bm25s" in bar["y"]
        assert cells["texttemplate"] == "%{z:.3f}" and cells["colorbar"].get("orientation", "v") == "v"
    assert "%{customdata}" in cells["hovertemplate"], "hovering names the system in full"


def test_short_names_stay_whole_when_two_would_read_the_same():
    from ui import screen

    assert screen.short_names(["org/a", "b"]) == ["a", "b"]
    assert screen.short_names(["x/gte-base", "y/gte-base"]) == ["x/gte-base", "y/gte-base"]
