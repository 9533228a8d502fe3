"""Where the upstream sources live: the one resolver the importers, the real-runs generator and the tests use.

The sources are public data the shipped ``data/`` is derived from (RAR-b's MCR CSVs, a subset of the MTEB
results repository, the R2MED paper's results). They are not part of the repository; ``scripts/fetch_sources.py``
downloads them at pinned commits and checks their sha256.

Resolution order: ``$TIEBREAK_SOURCES`` when set, else ``../shared/data`` next to the repository when that
folder exists, else ``<repo>/sources`` (where ``scripts/fetch_sources.py`` writes by default).
"""
from __future__ import annotations

import os
from pathlib import Path

SOURCES_ENV = "TIEBREAK_SOURCES"
REPO_ROOT = Path(__file__).resolve().parent.parent
FETCH_COMMAND = "python scripts/fetch_sources.py"

# the source folders, by name (each a folder under the sources root)
RARB_MCR = "rarb-mcr"
MTEB_RESULTS = "mteb-results"
R2MED_PAPER = "r2med-paper"
KNOWN = (RARB_MCR, MTEB_RESULTS, R2MED_PAPER)


class SourcesMissing(FileNotFoundError):
    """A source folder is not present; the message names the folder looked at and the fetch command."""


def sources_root(environ: dict | None = None) -> Path:
    """The folder holding the source folders (it may not exist)."""
    environ = os.environ if environ is None else environ
    chosen = environ.get(SOURCES_ENV)
    if chosen:
        return Path(chosen).expanduser()
    shared = REPO_ROOT.parent / "shared" / "data"
    if shared.is_dir():
        return shared
    return REPO_ROOT / "sources"


def source_dir(name: str, environ: dict | None = None) -> Path:
    """The folder of one source (``rarb-mcr``, ``mteb-results``, ``r2med-paper``); may not exist."""
    if name not in KNOWN:
        raise ValueError(f"unknown source {name!r}; expected one of {', '.join(KNOWN)}")
    return sources_root(environ) / name


def require(name: str, environ: dict | None = None) -> Path:
    """:func:`source_dir`, or :class:`SourcesMissing` with a one-line message saying how to get it."""
    path = source_dir(name, environ)
    if not path.is_dir():
        raise SourcesMissing(
            f"source {name!r} not found at {path}; fetch it with `{FETCH_COMMAND}` "
            f"(or set {SOURCES_ENV} to a folder that holds {name}/)"
        )
    return path


def missing_reason(name: str, environ: dict | None = None) -> str | None:
    """None when the source is present, else the one-line reason a test that needs it is skipped."""
    try:
        require(name, environ)
    except SourcesMissing as exc:
        return str(exc)
    return None
