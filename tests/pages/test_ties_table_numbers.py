"""Ties & precision's table prints its numbers one way (review, 2026-12-04): "Tied at cutoff" read "35.1%" beside
"32.18%" (Streamlit's percent format drops trailing zeros) and a bias of −0.00001 read "-0.0000"."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from app_harness import ROOT
from ui import tables

SHIPPED = ROOT / "data"


def test_the_tie_table_shows_percent_at_two_decimals_and_no_negative_zero(open_url):
    at = open_url(SHIPPED, "ties-and-precision.py")
    assert not at.exception
    table = next(df for df in at.dataframe if "tied_share" in df.value.columns)
    config = json.loads(table.proto.columns)["tied_share"]
    assert config["type_config"]["format"] == "%.2f%%" and config["type_config"]["max_value"] == 100.0
    shown = table.value
    assert shown["tied_share"].between(0, 100).all() and shown["tied_share"].max() > 1, "percent, not a 0–1 share"
    assert not np.signbit(shown["bias"].to_numpy()[shown["bias"].to_numpy() == 0]).any(), "no −0 to print as -0.0000"


def test_signed_rounds_away_negative_zeros_and_keeps_signs():
    values = tables.signed(pd.Series([-0.00001, 0.00004, -0.00006, 0.0, -0.0, 0.25]))
    assert values.tolist() == [0.0, 0.0, -0.0001, 0.0, 0.0, 0.25]
    assert not np.signbit(values.to_numpy()[values.to_numpy() == 0]).any()
    assert tables.as_percent(pd.Series([0.3218, 0.351])).round(2).tolist() == [32.18, 35.1]
