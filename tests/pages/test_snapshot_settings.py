"""The view's snapshot (ui/recorder.py) as a page run feeds it: the sources the view names, the controls in
their own words."""
from __future__ import annotations

from ui import snapshot


def test_the_snapshot_lists_the_sources_the_view_names_and_the_controls_in_their_words(open_url):
    """A snapshot of the pooled board listed "Source MTEB results …" and "Source R2MED paper …" (every row was
    our runs') and its settings as raw URL keys ("sort mean", "chart size")."""
    from app_harness import ROOT
    from evalcore import provenance
    from ui import recorder

    shipped = ROOT / "data"
    record = provenance.load(shipped)
    lines = {key: source.line() for key, source in record.sources.items()}
    assert len(lines) >= 3, lines
    ours = next(line for key, line in lines.items() if "real runs" in line)
    parts = [snapshot.Text("caption", f"Task columns are shaded … Sources: {ours}. Data snapshot …")]
    assert recorder.used_sources(record, parts) == [ours]
    assert recorder.used_sources(record, [snapshot.Text("markdown", "no sources named")]) == list(lines.values())

    at = open_url(shipped, params={"bench": "rar-b", "setting": "full-pooled", "instr": "any", "metric": "ndcg@10",
                                   "prec": "fp32", "sort": "mean", "chart": "size"})
    assert not at.exception
    shown = at.session_state["_url_shown"]
    _, settings = recorder.condition_of({"bench": "rar-b", "setting": "full-pooled", "metric": "ndcg@10",
                                         "sort": "mean", "chart": "size", "ties": "docid-desc"}, None, shown)
    assert ("Rank by", "Mean (arithmetic)") in settings and ("Chart", "Performance vs model size") in settings
    assert ("Setting", "Full (pooled candidates)") in settings
    assert not [pair for pair in settings if pair[0] in ("sort", "chart")]
