"""bench/bench_app.py's floor copies with more elements (``--floor-elements``): the copy must be the floor
itself plus exactly N captions that do not change with the precision, or the per-element cost it measures
would measure something else."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from streamlit.testing.v1 import AppTest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _bench_app():
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("bench_app", BENCH / "bench_app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _drawn(script: Path, precision: str | None = None) -> tuple[list[str], list[str]]:
    at = AppTest.from_file(str(script), default_timeout=60)
    at.run()
    if precision is not None:
        at.selectbox(key="prec").set_value(precision).run()
    assert not at.exception
    return [str(c.value) for c in at.caption], [str(m.value) for m in at.metric]


def test_floor_copy_adds_exactly_n_unchanging_captions(tmp_path):
    bench_app = _bench_app()
    copy = bench_app.floor_with_elements(3, tmp_path)
    assert copy.name == bench_app.FLOOR_APP.name and copy.parent == tmp_path / "floor-plus-3"
    floor_captions, floor_metrics = _drawn(bench_app.FLOOR_APP)
    captions, metrics = _drawn(copy)
    assert captions[:len(floor_captions)] == floor_captions and metrics == floor_metrics
    added = captions[len(floor_captions):]
    assert len(added) == 3 and len(set(added)) == 3
    changed_captions, changed_metrics = _drawn(copy, "bf16")
    assert changed_captions == captions  # the added elements do not depend on the control
    assert changed_metrics != metrics  # while the floor's own metric does
