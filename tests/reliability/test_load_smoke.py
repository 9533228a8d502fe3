"""A light run of ``bench/load_test.py``: the same code with 3 concurrent Chromium sessions
for 10 s against ``streamlit run app.py`` on the shipped data, loopback only. No exception box, no
'could not be drawn' box, no dialog, no page error, no timed-out action, no traceback in the server log;
the server's RSS was sampled. The full figure (20 sessions, 60 s) is ``python bench/load_test.py``.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from needs import missing, require_module

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]


def load_module():
    spec = importlib.util.spec_from_file_location("tiebreak_load_test", ROOT / "bench" / "load_test.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def unavailable(reason: str):
    missing(f"the load smoke test cannot run: {reason}")


def test_three_sessions_for_ten_seconds_without_errors(tmp_path):
    load_test = load_module()
    if not Path(load_test.CHROMIUM).exists():
        unavailable(f"{load_test.CHROMIUM} not found (apt-get install chromium)")
    require_module("playwright")
    require_module("psutil")
    figures = load_test.run_load(sessions=3, duration=10, data_dir=ROOT / "data", seed=1, timeout_s=60,
                                 log_path=tmp_path / "streamlit.log")
    report = load_test.markdown(figures)
    print(report)
    assert figures.errors == 0, report
    assert len(figures.times.get("first load", [])) == 3, report
    assert figures.actions > 3, report
    assert figures.rss_samples > 0 and figures.rss_peak > 0
