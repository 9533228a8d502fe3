"""Where the numbers of a data folder come from: ``<data>/provenance.json``, one entry per ``source``.

Every result row names its ``source`` (``mteb-results@f4cc6c8``, ``r2med-paper@62b7074``, ``tiebreak-real-runs``:
the part before ``@`` is the source's key). The provenance file, written by ``scripts/make_provenance.py`` from
the folder itself, the pinned upstream commits (``scripts/fetch_sources.py``) and the repository's history,
says for each key what it is, where it comes from (repository and commit), what wrote the shipped files and
when they were last written (the data snapshot date)::

    {"format": "provenance/1", "snapshot": "2026-12-03",
     "sources": {"mteb-results": {"title": ..., "repository": ..., "commit": ..., "url": ...,
                                  "written_by": ..., "written": "2026-12-02", "files": [...]}, ...}}

A folder without the file (a user's own data) has no provenance beyond the ``source`` column: :func:`load`
returns an empty :class:`Provenance` and :meth:`Provenance.describe` says "source X (no provenance record)".
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from evalcore.errors import InputError

FILE_NAME = "provenance.json"
FORMAT = "provenance/1"
_FIELDS = ("title", "repository", "commit", "url", "written_by", "written")


@dataclass(frozen=True)
class Source:
    """One source: ``key`` (a ``source`` value up to ``@``) and what the provenance file says about it."""

    key: str
    title: str
    repository: str
    commit: str
    url: str
    written_by: str
    written: str
    files: tuple[str, ...] = ()

    def line(self) -> str:
        """One line for a caption: title, repository @ short commit, what wrote it and when."""
        return (f"{self.title} ({self.repository} @ {self.commit[:7]}; written by {self.written_by}, "
                f"{self.written})")


@dataclass(frozen=True)
class Provenance:
    """The provenance records of a data folder (empty when it has no provenance file)."""

    snapshot: str = ""
    sources: dict[str, Source] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    """What :meth:`describe` calls a ``source`` value without a record, in place of "source VALUE" (a viewer's
    own words for its own rows, e.g. the dashboard's "your upload")."""

    def find(self, source: str | None) -> Source | None:
        """The record of a ``source`` value (``mteb-results@f4cc6c8`` → ``mteb-results``), None when unknown."""
        if not source:
            return None
        return self.sources.get(str(source).split("@", 1)[0])

    def describe(self, sources) -> list[str]:
        """One caption line per distinct ``source`` value in ``sources`` (records first, in key order)."""
        lines, unknown = {}, []
        for value in sorted({str(s) for s in sources if s is not None and str(s) not in ("", "nan", "<NA>")}):
            record = self.find(value)
            if record is None:
                unknown.append(f"{self.names.get(value) or f'source {value}'} (no provenance record)")
            else:
                lines.setdefault(record.key, record.line())
        return list(lines.values()) + unknown


def key_of(source: str) -> str:
    """A ``source`` value's key: the part before ``@``."""
    return str(source).split("@", 1)[0]


def load(data_dir: Path | str) -> Provenance:
    """``<data_dir>/provenance.json`` read and checked; an empty :class:`Provenance` when the file is absent.
    A file that is not valid JSON of :data:`FORMAT` raises :class:`InputError` (one line, the file named)."""
    path = Path(data_dir) / FILE_NAME
    if not path.is_file():
        return Provenance()
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise InputError(f"not readable as JSON ({type(exc).__name__})", path) from None
    if not isinstance(record, dict) or record.get("format") != FORMAT or not isinstance(record.get("sources"), dict):
        raise InputError(f"expected a JSON object with format {FORMAT!r} and a 'sources' object", path)
    sources = {}
    for key, entry in record["sources"].items():
        if not isinstance(entry, dict) or not all(isinstance(entry.get(f), str) for f in _FIELDS):
            raise InputError(f"source {key!r}: expected the string fields {', '.join(_FIELDS)}", path)
        sources[key] = Source(key=key, **{f: entry[f] for f in _FIELDS},
                              files=tuple(str(f) for f in entry.get("files") or ()))
    return Provenance(snapshot=str(record.get("snapshot") or ""), sources=sources)
