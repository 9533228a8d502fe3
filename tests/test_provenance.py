"""evalcore/provenance.py and scripts/make_provenance.py: every source the shipped data names has a record
whose upstream commit is the pin the data was fetched at; bad files fail with one line; captions."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from evalcore import provenance
from evalcore.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "data"


def _shipped_sources() -> set[str]:
    values = set()
    for path in SHIPPED.rglob("*.parquet"):
        parts = path.relative_to(SHIPPED).parts
        if {"runs", "tasks", "_derived"} & set(parts) or "source" not in pq.read_schema(path).names:
            continue
        values.update(v for v in pq.read_table(path, columns=["source"]).column("source").unique().to_pylist() if v)
    return values


def test_every_shipped_source_has_a_record_with_its_pinned_commit():
    import sys

    sys.path.insert(0, str(ROOT / "scripts"))
    from fetch_sources import UPSTREAMS

    record = provenance.load(SHIPPED)
    values = _shipped_sources()
    assert values, "the shipped data names its sources"
    for value in values:
        found = record.find(value)
        assert found is not None, value
        if "@" in value:  # a published source: the short commit in the rows is the pinned upstream commit
            assert found.commit.startswith(value.split("@", 1)[1])
            assert found.commit in {u.commit for u in UPSTREAMS}
            assert found.url.endswith(found.commit)
        assert found.written and found.written <= record.snapshot
    assert record.snapshot


def test_the_generator_finds_the_same_sources_as_the_rows(tmp_path):
    import sys

    sys.path.insert(0, str(ROOT / "scripts"))
    import make_provenance

    written = make_provenance.provenance(SHIPPED)
    assert set(written["sources"]) == {provenance.key_of(v) for v in _shipped_sources()}
    assert written["format"] == provenance.FORMAT


def test_caption_lines_name_repository_commit_and_date():
    record = provenance.Provenance("2026-01-02", {"mteb-results": provenance.Source(
        "mteb-results", "MTEB results", "embeddings-benchmark/results", "f4cc6c8b365a", "u", "import-mteb",
        "2026-01-01")})
    lines = record.describe(["mteb-results@f4cc6c8", "mteb-results@f4cc6c8", "mine", None])
    assert len(lines) == 2, lines  # one line per distinct source
    for fact in ("MTEB results", "embeddings-benchmark/results @ f4cc6c8", "import-mteb", "2026-01-01"):
        assert fact in lines[0], (fact, lines[0])
    assert "f4cc6c8b" not in lines[0] and "mine" in lines[1] and "no provenance" in lines[1], lines


def test_a_folder_without_the_file_has_no_records(tmp_path):
    assert provenance.load(tmp_path) == provenance.Provenance()


@pytest.mark.parametrize("content", ["{not json", "[]", json.dumps({"format": "other", "sources": {}}),
                                     json.dumps({"format": provenance.FORMAT, "sources": {"x": {"title": 1}}})])
def test_a_bad_file_is_one_line_naming_it(tmp_path, content):
    (tmp_path / provenance.FILE_NAME).write_text(content)
    with pytest.raises(InputError) as error:
        provenance.load(tmp_path)
    assert provenance.FILE_NAME in str(error.value) and "\n" not in str(error.value)
